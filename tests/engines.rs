//! Several engines from one home: instances placed by `spec.engine`, one
//! controller driving both, an engine that dies holding up only its own
//! instances, and an engine that cannot change under a running session.
//! The second engine is a private dockerd of the test's own.

use std::time::Duration;

use support::private_engine::PrivateEngine;
use support::{Controller, Home, condition, docker, ensure_busybox, eventually};

/// An instance running `sleep` on `engine` (none: the default one).
fn instance_on(name: &str, engine: Option<&str>) -> String {
    let engine = engine.map_or(String::new(), |url| format!("  engine: {url}\n"));
    support::instance_yaml_with(name, &format!("  command: [sleep, \"3600\"]\n{engine}"))
}

/// The names of the containers labelled with `uid`, on the default engine
/// (`docker`) or a private one.
fn containers(private: Option<&PrivateEngine>, uid: &str) -> Vec<String> {
    let filter = format!("label=jackin.dev/uid={uid}");
    let args = ["ps", "-a", "--filter", &filter, "--format", "{{.Names}}"];
    let out = match private {
        Some(engine) => engine.docker(&args),
        None => docker(&args),
    };
    out.lines().map(str::to_owned).collect()
}

/// `near` on the default engine and `far` on the engine at `url`.
fn near_and_far(url: &str) -> String {
    format!(
        "{}---\n{}",
        instance_on("near", None),
        instance_on("far", Some(url))
    )
}

fn uid(home: &Home, name: &str) -> String {
    home.object(name)["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn ready_reason(home: &Home, name: &str) -> String {
    condition(&home.object(name), "Ready")
        .and_then(|c| c["reason"].as_str())
        .unwrap_or_default()
        .to_owned()
}

#[test]
fn instances_run_where_they_say_and_a_dead_engine_holds_up_only_its_own() {
    ensure_busybox();
    let far = PrivateEngine::start();
    far.ensure_busybox();
    let home = Home::new();
    let out = home.apply("two", &near_and_far(far.url()));
    assert!(
        out.contains("instance/near Running") && out.contains("instance/far Running"),
        "{out}"
    );
    let (near_uid, far_uid) = (uid(&home, "near"), uid(&home, "far"));
    assert_eq!(containers(None, &near_uid).len(), 1);
    assert!(containers(Some(&far), &near_uid).is_empty());
    assert_eq!(containers(Some(&far), &far_uid).len(), 1);
    assert!(containers(None, &far_uid).is_empty());
    let wide = home.ok(&["get", "-o", "wide"]);
    let line = |name: &str| {
        wide.lines()
            .find(|l| l.starts_with(&format!("{name} ")))
            .unwrap_or_default()
            .to_owned()
    };
    assert!(line("far").contains(far.url()), "{wide}");
    assert!(line("near").contains(" default "), "{wide}");

    // One controller drives both. The far engine dies; the near instance's
    // container is removed behind jackin's back and comes back all the
    // same, while the far one says what it waits for.
    let controller = Controller::start(&home, &["--resync", "2s"]);
    std::thread::sleep(Duration::from_secs(2));
    far.kill();
    docker(&["rm", "-f", &home.container("near")]);
    eventually(
        Duration::from_secs(60),
        "the near instance restored",
        || {
            home.object("near")["status"]["restore"]["tier"] == 2
                && ready_reason(&home, "near") == "Running"
        },
    );
    eventually(
        Duration::from_secs(60),
        "the far instance marked EngineUnreachable",
        || ready_reason(&home, "far") == "EngineUnreachable",
    );
    let far_ready = condition(&home.object("far"), "Ready").unwrap().clone();
    assert!(
        far_ready["message"].as_str().unwrap().contains(far.url()),
        "{far_ready}"
    );
    assert_eq!(home.object("far")["status"]["phase"], "Running");

    // Back again: the engine stopped the container as it came up, and the
    // controller starts it again (tier 1).
    far.restart();
    eventually(Duration::from_secs(90), "the far instance restored", || {
        ready_reason(&home, "far") == "Running"
            && far.docker(&[
                "inspect",
                "-f",
                "{{.State.Running}}",
                &home.container("far"),
            ]) == "true"
    });
    assert_eq!(home.object("far")["status"]["restore"]["tier"], 1);
    let log = controller.log();
    assert!(
        log.contains("engine event stream failed") || log.contains("cannot connect"),
        "{log}"
    );
}

#[test]
fn a_one_shot_apply_fails_only_the_instances_of_an_engine_that_is_down() {
    ensure_busybox();
    let far = PrivateEngine::start();
    far.ensure_busybox();
    let home = Home::new();
    home.apply("far", &instance_on("far", Some(far.url())));
    far.kill();
    let file = home.write_input("both.yaml", &near_and_far(far.url()));
    let out = home.within(
        Duration::from_secs(120),
        &["apply", "--timeout", "20s", file.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(stdout.contains("instance/near Running"), "{stdout}{stderr}");
    assert!(stderr.contains("error: instance/far"), "{stderr}");
    assert!(!stderr.contains("error: instance/near"), "{stderr}");
    assert_eq!(ready_reason(&home, "far"), "EngineUnreachable");
}

/// A changed `spec.engine` only reports drift; a rollout refuses it, and
/// `rollout --move` moves the session: its objects go from the engine it
/// leaves and are made on the other, its unit stays.
#[test]
fn a_running_instance_moves_to_another_engine_only_when_told() {
    ensure_busybox();
    let far = PrivateEngine::start();
    far.ensure_busybox();
    let home = Home::new();
    home.apply("moving", &instance_on("moving", Some(far.url())));
    let id = uid(&home, "moving");
    let unit = home.path().join("data").join(home.container("moving"));
    std::fs::write(unit.join("home/keep.txt"), "mine\n").unwrap();
    // The spec now names the default engine.
    home.apply("moving", &instance_on("moving", None));
    let obj = home.object("moving");
    let drift = condition(&obj, "SpecDrift").expect("a SpecDrift condition");
    assert!(
        drift["message"].as_str().unwrap().contains("spec.engine"),
        "{drift}"
    );
    assert_eq!(containers(Some(&far), &id).len(), 1);
    assert!(containers(None, &id).is_empty());
    assert_eq!(obj["status"]["recipe"]["engine"], far.url());
    // A rollout does not move it unless told.
    let err = home.fails(&["rollout", "moving"]);
    assert!(err.contains("--move"), "{err}");
    assert_eq!(containers(Some(&far), &id).len(), 1);
    let out = home.ok(&["rollout", "moving", "--move"]);
    assert!(out.contains("instance/moving rolled out"), "{out}");
    assert!(containers(Some(&far), &id).is_empty(), "gone from far");
    assert_eq!(containers(None, &id).len(), 1);
    let obj = home.object("moving");
    assert_eq!(obj["status"]["phase"], "Running");
    assert!(obj["status"]["recipe"].get("engine").is_none(), "{obj}");
    assert_eq!(uid(&home, "moving"), id, "the same instance");
    assert_eq!(
        std::fs::read_to_string(unit.join("home/keep.txt")).unwrap(),
        "mine\n"
    );
    // Purged, it goes from where it runs now.
    home.ok(&["set-phase", "moving", "purged"]);
    assert!(containers(None, &id).is_empty());
    assert!(containers(Some(&far), &id).is_empty());
}
