//! Several engines from one home: instances placed by `spec.engine`, one
//! controller driving both, an engine that dies holding up only its own
//! instances (and marked so by `get -w` and `top` as by `get`), and an
//! engine that cannot change under a running session.
//! The second engine is a private dockerd of the test's own; an isolated
//! one (its own mount and network namespaces) stands for a remote engine.

use std::process::Stdio;
use std::time::Duration;

use support::private_engine::PrivateEngine;
use support::terminal::Terminal;
use support::{Controller, Home, condition, docker, ensure_busybox, eventually};

use crate::top::wait_row;
use crate::verbs::collect_lines;

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

/// A running `jackin` command, ended however the test ends.
struct KilledAtEnd(std::process::Child);

impl Drop for KilledAtEnd {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The PHASE column of each row `get -w` printed for `name`, in order.
fn phases_of(lines: &[String], name: &str) -> Vec<String> {
    lines
        .iter()
        .filter(|l| l.starts_with(&format!("{name} ")))
        .filter_map(|l| l.split_whitespace().nth(2).map(str::to_owned))
        .collect()
}

/// Issue 55, item 3: the watching views mark the instances of an engine
/// that stops answering as `get` does, never `Running`: `get -w` prints a
/// row `EngineUnreachable` once (and warns once), `top`'s row says it in
/// PHASE; once the engine is back and the instance restored, both show
/// `Running` again.
#[test]
fn get_w_and_top_mark_the_instances_of_an_engine_that_stops_answering() {
    ensure_busybox();
    let far = PrivateEngine::start();
    far.ensure_busybox();
    let home = Home::new();
    home.apply("far", &instance_on("far", Some(far.url())));
    let mut watch = KilledAtEnd(
        home.command(&["get", "-w"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap(),
    );
    let lines = collect_lines(watch.0.stdout.take().unwrap());
    let errors = collect_lines(watch.0.stderr.take().unwrap());
    let phases = || phases_of(&lines.lock().unwrap(), "far");
    let term = Terminal::start_as(&home, "top", "xterm");
    term.resize(200, 40);
    wait_row(&term, "far", "Running");
    eventually(Duration::from_secs(60), "get -w's first row", || {
        !phases().is_empty()
    });
    assert_eq!(phases(), ["Running"]);

    far.kill();
    eventually(
        Duration::from_secs(60),
        "get -w's row for the lost engine",
        || phases().len() > 1,
    );
    wait_row(&term, "far", "EngineUnreachable");
    assert_eq!(phases(), ["Running", "EngineUnreachable"]);
    let screen = term.screen();
    let row = screen
        .lines()
        .find(|l| l.contains("far ") && l.contains("EngineUnreachable"))
        .unwrap();
    assert!(!row.contains("Running"), "{screen}");

    // Back: the engine stopped the container as it came up, and a
    // controller starts it again.
    far.restart();
    let controller = Controller::start(&home, &["--resync", "2s"]);
    eventually(
        Duration::from_secs(120),
        "get -w's row for Running again",
        || phases().last().is_some_and(|p| p == "Running") && phases().len() > 2,
    );
    wait_row(&term, "far", "Running");
    drop(controller);
    drop(watch);
    let phases = phases();
    assert_eq!(
        phases.iter().filter(|p| *p == "EngineUnreachable").count(),
        1,
        "{phases:?}"
    );
    let errors = errors.lock().unwrap().clone();
    let warned = format!("warning: engine {}: ", far.url());
    assert_eq!(
        errors.iter().filter(|l| l.starts_with(&warned)).count(),
        1,
        "warned once while it did not answer: {errors:?}"
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

/// The host's docker0 as `ip` shows it (its addresses), or nothing.
fn host_docker0() -> String {
    let out = std::process::Command::new("ip")
        .args(["-o", "-4", "addr", "show", "dev", "docker0"])
        .output()
        .expect("ip runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The command lines of this host's processes that name `needle`.
fn processes_naming(needle: &str) -> Vec<String> {
    std::fs::read_dir("/proc")
        .unwrap()
        .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
        .map(|cmdline| String::from_utf8_lossy(&cmdline).replace('\0', " "))
        .filter(|cmdline| cmdline.contains(needle))
        .collect()
}

/// `--mount` binding `source` (a path on the engine's machine) at `/x`:
/// unlike `-v`, which makes a missing source, it refuses one.
fn bind_at_x(source: &std::path::Path) -> String {
    format!("type=bind,source={},target=/x", source.display())
}

/// The "remote" engine of issue 52's tests: an isolated private engine runs
/// containers, cannot bind a controller's directory (it has no such path),
/// binds what was planted on its side (the host has no such path), and
/// leaves nothing behind, the host's docker0 as it was.
#[test]
fn an_isolated_engine_sees_none_of_the_controllers_files() {
    let docker0 = host_docker0();
    let far = PrivateEngine::start_isolated();
    let image = far.ensure_busybox();
    assert_eq!(far.docker(&["run", "--rm", &image, "echo", "ran"]), "ran");

    // A controller's directory, under the host's temporary directory, as a
    // test's JACKIN_HOME or repository is.
    let mine = tempfile::tempdir().unwrap();
    std::fs::write(mine.path().join("f"), "the controller's\n").unwrap();
    let out = far
        .command(&["run", "--rm", "--mount", &bind_at_x(mine.path())])
        .args([image.as_str(), "cat", "/x/f"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && stderr.contains("bind source path does not exist"),
        "the engine bound a controller's directory ({}): {}{stderr}",
        out.status,
        String::from_utf8_lossy(&out.stdout)
    );

    // The same layout on the engine's side, holding what the controller's
    // does not.
    let planted = mine.path().join("engine-side");
    let planted_str = planted.to_str().unwrap();
    far.inside(&["mkdir", "-p", planted_str]);
    far.inside(&["sh", "-c", "echo planted >\"$1/f\"", "sh", planted_str]);
    assert!(!planted.exists(), "planted on the engine's side only");
    let seen = far.docker(&[
        "run",
        "--rm",
        "--mount",
        &bind_at_x(&planted),
        &image,
        "cat",
        "/x/f",
    ]);
    assert_eq!(seen, "planted");

    // Torn down: nothing of it is left on the host.
    let dir = far.dir().to_owned();
    let netns = far.netns().expect("an isolated engine's netns").to_owned();
    let port: u16 = far.url().rsplit(':').next().unwrap().parse().unwrap();
    drop(far);
    assert!(!dir.exists(), "{} is left", dir.display());
    let dir_str = dir.to_str().unwrap();
    assert_eq!(processes_naming(dir_str), Vec::<String>::new());
    let mounts = std::fs::read_to_string("/proc/self/mounts").unwrap();
    assert!(
        !mounts.contains(dir_str) && !mounts.contains(&netns),
        "{mounts}"
    );
    let namespaces = std::process::Command::new("ip")
        .args(["netns", "list"])
        .output()
        .expect("ip runs");
    let namespaces = String::from_utf8_lossy(&namespaces.stdout);
    assert!(!namespaces.contains(&netns), "{namespaces}");
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "something still listens on the engine's port {port}"
    );
    assert_eq!(host_docker0(), docker0, "the host's docker0 changed");
}

/// An isolated engine (busybox built there), and a home whose instance
/// `name` was applied on it: the apply's error.
fn applied_far_away(name: &str) -> (PrivateEngine, Home, String) {
    ensure_busybox();
    let far = PrivateEngine::start_isolated();
    far.ensure_busybox();
    let home = Home::new();
    let path = home.write_input("far.yaml", &instance_on(name, Some(far.url())));
    let err = home.fails(&["apply", path.to_str().unwrap()]);
    (far, home, err)
}

/// The unit's bound directories at their paths on the engine's machine,
/// empty: a shared path layout, or a stale copy.
fn plant_unit_paths(far: &PrivateEngine, unit: &std::path::Path) {
    for dir in ["home", "state", "bin"] {
        far.inside(&["mkdir", "-p", unit.join(dir).to_str().unwrap()]);
    }
}

/// An engine on another machine (a dockerd in mount and network namespaces
/// of its own, which sees none of this machine's files) never runs a
/// session: the proof before the first create is refused at once, for
/// good, as `UnitNotOnEngine`. Where that machine has the unit's paths,
/// empty (a shared layout, a stale copy), the identity jackin writes is not
/// there, and the proof fails the same way: no container that binds the
/// unit is made there (the look's is removed at once), the agent never runs
/// on an empty home, and the unit here stays as it was.
#[test]
fn a_session_never_starts_on_an_engine_that_does_not_see_its_unit() {
    let (far, home, err) = applied_far_away("faraway");
    assert!(err.contains("does not see this session's unit"), "{err}");
    assert!(err.contains("none of the unit's paths"), "{err}");
    assert_eq!(ready_reason(&home, "faraway"), "UnitNotOnEngine");
    assert_eq!(home.object("faraway")["status"]["phase"], "Failed");
    let id = uid(&home, "faraway");
    assert!(containers(Some(&far), &id).is_empty(), "no container made");
    let unit = home.path().join("data").join(home.container("faraway"));
    std::fs::write(unit.join("home/keep.txt"), "mine\n").unwrap();

    // The far machine has the unit's paths, empty.
    plant_unit_paths(&far, &unit);
    let err = home.fails(&["set-phase", "faraway", "running"]);
    assert!(err.contains("does not see this session's unit"), "{err}");
    assert!(
        err.contains("is missing, where jackin just wrote it"),
        "{err}"
    );
    assert_eq!(ready_reason(&home, "faraway"), "UnitNotOnEngine");
    assert!(containers(Some(&far), &id).is_empty(), "no container made");
    assert_eq!(
        far.docker(&["ps", "-aq", "--filter", "label=jackin.dev/managed=true"]),
        "",
        "the look's container went"
    );
    assert!(
        home.object("faraway")["status"]["recipe"]
            .get("storage")
            .is_none(),
        "nothing proven"
    );
    assert_eq!(
        std::fs::read_to_string(unit.join("home/keep.txt")).unwrap(),
        "mine\n"
    );
    home.ok(&["set-phase", "faraway", "purged"]);
}

/// On an engine that sees the unit, where it lives is proven once, before
/// the first container, and pinned: `describe` shows it, and a restore
/// after `docker rm -f` (tier 2) makes the container from the pin without
/// proving it again.
#[test]
fn the_unit_is_proven_before_the_first_container_and_pinned() {
    ensure_busybox();
    let home = Home::new();
    home.apply("near", &instance_on("near", None));
    let storage = home.object("near")["status"]["recipe"]["storage"].clone();
    assert_eq!(storage["kind"], "hostPaths", "{storage}");
    assert!(storage["engine"].as_str().is_some_and(|e| !e.is_empty()));
    let shown = home.ok(&["describe", "near"]);
    assert!(
        shown.contains("unit:        host paths (proven through"),
        "{shown}"
    );
    docker(&["rm", "-f", &home.container("near")]);
    home.one_pass();
    let obj = home.object("near");
    assert_eq!(obj["status"]["restore"]["tier"], 2, "{obj}");
    // A proof again would have pinned a later `provenAt`.
    assert_eq!(
        obj["status"]["recipe"]["storage"], storage,
        "not proven again"
    );
}

/// A move to an engine that does not see the unit is checked before
/// anything is taken from the engine the session runs on: the session runs
/// on where it was, the same container, and the rollout says why it failed.
#[test]
fn a_move_to_an_engine_that_does_not_see_the_unit_leaves_the_session_running() {
    ensure_busybox();
    let far = PrivateEngine::start_isolated();
    far.ensure_busybox();
    let home = Home::new();
    home.apply("staying", &instance_on("staying", None));
    let id = uid(&home, "staying");
    let before = docker(&[
        "inspect",
        "-f",
        "{{.Id}} {{.State.StartedAt}}",
        &home.container("staying"),
    ]);
    home.apply("staying", &instance_on("staying", Some(far.url())));
    let out = home.jackin(&["rollout", "staying", "--move"]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(said.contains("does not see this session's unit"), "{said}");
    let obj = home.object("staying");
    let rollout = condition(&obj, "Rollout").expect("a Rollout condition");
    assert_eq!(rollout["reason"], "RolloutFailed", "{rollout}");
    assert_eq!(obj["status"]["phase"], "Running");
    assert!(
        obj["status"]["recipe"].get("engine").is_none(),
        "the pin unchanged: {obj}"
    );
    let after = docker(&[
        "inspect",
        "-f",
        "{{.Id}} {{.State.StartedAt}}",
        &home.container("staying"),
    ]);
    assert_eq!(after, before, "the same container, never stopped");
    assert!(
        containers(Some(&far), &id).is_empty(),
        "nothing left on the far engine"
    );
    assert_eq!(
        far.docker(&["ps", "-aq", "--filter", "label=jackin.dev/managed=true"]),
        ""
    );
}

/// What the engine hands back of the unit is read as untrusted: where the
/// engine's machine holds a link, a FIFO or a huge file at the identity's
/// place, the start is refused naming what it found, no link is followed,
/// no more than a few blocks are read, and nothing runs there.
#[test]
fn a_hostile_identity_on_the_engines_side_is_refused_and_never_followed() {
    let (far, home, _) = applied_far_away("hostile");
    let unit = home.path().join("data").join(home.container("hostile"));
    plant_unit_paths(&far, &unit);
    let planted = unit.join("bin/unit.id");
    let planted = planted.to_str().unwrap();
    let plants: [(&[&str], &str); 3] = [
        (&["ln", "-s", "/etc/hostname", planted], "a symbolic link"),
        (&["mkfifo", planted], "a FIFO"),
        (
            &[
                "dd",
                "if=/dev/zero",
                &format!("of={planted}"),
                "bs=1M",
                "count=10",
            ],
            "more than 256 bytes",
        ),
    ];
    let id = uid(&home, "hostile");
    for (plant, said) in plants {
        far.inside(&["rm", "-f", planted]);
        far.inside(plant);
        let err = home.fails(&["set-phase", "hostile", "running"]);
        assert!(err.contains("does not see this session's unit"), "{err}");
        assert!(err.contains(said), "{said}: {err}");
        let filter = format!("label=jackin.dev/uid={id}");
        assert_eq!(far.docker(&["ps", "-q", "--filter", &filter]), "");
        // What jackin wrote here is its own identity, untouched.
        let mine = std::fs::symlink_metadata(unit.join("bin/unit.id")).unwrap();
        assert!(mine.is_file() && mine.len() < 100, "{mine:?}");
    }
    home.ok(&["set-phase", "hostile", "purged"]);
}
