//! `jackin controller` against the real engine: it repairs what happens to
//! instances while no other command runs, and stops cleanly.

use std::process::Command;
use std::time::Duration;

use support::{Controller, Home, docker, ensure_busybox, instance_yaml};

#[test]
fn the_controller_repairs_rm_with_tier_2_and_stop_with_tier_1() {
    ensure_busybox();
    let home = Home::new();
    let path = home.write_input("w.yaml", &instance_yaml("watched"));
    home.ok(&["apply", path.to_str().unwrap()]);
    let container = home.container("watched");
    let mut controller = Controller::start(&home, &[]);
    let running = || {
        Command::new("docker")
            .args(["inspect", "-f", "{{.State.Running}}", &container])
            .output()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "true")
    };
    let restore = || {
        let obj = home.object("watched");
        (
            obj["status"]["restore"]["tier"].as_i64(),
            obj["status"]["restore"]["at"].as_str().map(str::to_owned),
        )
    };

    let old_id = docker(&["inspect", "-f", "{{.Id}}", &container]);
    docker(&["rm", "-f", &container]);
    controller.eventually("a tier 2 restore after docker rm -f", || {
        restore().0 == Some(2) && running()
    });
    assert_ne!(docker(&["inspect", "-f", "{{.Id}}", &container]), old_id);

    let (_, tier_2_at) = restore();
    let id = docker(&["inspect", "-f", "{{.Id}}", &container]);
    docker(&["stop", "-t", "1", &container]);
    controller.eventually("a tier 1 restore after docker stop", || {
        let (tier, at) = restore();
        tier == Some(1) && at != tier_2_at && running()
    });
    assert_eq!(
        docker(&["inspect", "-f", "{{.Id}}", &container]),
        id,
        "the same container"
    );

    // A change in the store alone is picked up too.
    home.ok(&["set-phase", "watched", "kept", "--no-wait"]);
    controller.eventually("the instance kept", || {
        home.object("watched")["status"]["phase"] == "Kept"
    });
    assert!(!running());

    assert_eq!(controller.stop(), Some(0), "a clean shutdown on SIGTERM");
}

#[test]
fn controller_once_is_one_pass_whose_cost_does_not_grow_with_instances() {
    ensure_busybox();
    let home = Home::new();
    let mut yaml = String::new();
    for i in 0..5 {
        yaml.push_str(&instance_yaml(&format!("many-{i}")));
        yaml.push_str("---\n");
    }
    let path = home.write_input("many.yaml", &yaml);
    home.ok(&["apply", "--no-wait", path.to_str().unwrap()]);
    let first = home.ok(&["controller", "--once"]);
    assert!(
        first.starts_with("pass complete: 5 instance(s), 5 converged"),
        "{first}"
    );
    // Converged and running: a no-op pass lists the containers once, opens
    // no object and writes nothing.
    let before = home.snapshot();
    let second = home.ok(&["controller", "--once"]);
    assert_eq!(
        second,
        "pass complete: 5 instance(s), 5 converged, 0 blocked, 1 engine call(s)\n"
    );
    home.assert_unchanged(&before, "a no-op pass");
}

fn container_running(container: &str) -> bool {
    Command::new("docker")
        .args(["inspect", "-f", "{{.State.Running}}", container])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "true")
}

#[test]
fn docker_kill_and_an_agents_own_exit_are_noticed_within_seconds() {
    ensure_busybox();
    let home = Home::new();
    home.apply("killed", &instance_yaml("killed"));
    // An agent that exits 3 when the host says so (a crash: kept as it is).
    let spec =
        "  command: [sh, -c, 'while [ ! -f /jackin/state/go ]; do sleep 0.2; done; exit 3']\n";
    home.apply("quits", &support::instance_yaml_with("quits", spec));
    let (killed, quits) = (home.container("killed"), home.container("quits"));
    let controller = Controller::start(&home, &[]);
    std::thread::sleep(Duration::from_secs(1));

    let before = docker(&["inspect", "-f", "{{.State.StartedAt}}", &killed]);
    docker(&["kill", &killed]);
    // The resync is minutes away: only the event can bring it back this soon.
    controller.eventually("docker kill restored", || {
        container_running(&killed)
            && docker(&["inspect", "-f", "{{.State.StartedAt}}", &killed]) != before
    });
    assert_eq!(home.object("killed")["status"]["restore"]["tier"], 1);

    let state = home.path().join("data").join(&quits).join("state");
    std::fs::write(state.join("go"), "").unwrap();
    controller.eventually("the agent's own exit recorded", || {
        home.object("quits")["status"]["phase"] == "Crashed"
    });
    assert_eq!(home.object("quits")["status"]["session"]["exitCode"], 3);
}

#[test]
fn another_homes_events_are_not_this_controllers_business() {
    ensure_busybox();
    let ours = Home::new();
    ours.apply("mine", &instance_yaml("mine"));
    let mut controller = Controller::start(&ours, &[]);
    std::thread::sleep(Duration::from_secs(1));
    // A neighbour on the same engine creates and purges its own instance.
    let neighbour = Home::new();
    neighbour.apply("neighbours", &instance_yaml("neighbours"));
    neighbour.ok(&["delete", "neighbours"]);
    std::thread::sleep(Duration::from_secs(3));
    controller.kill();
    let log = controller.log();
    assert!(log.contains("controller started"), "{log}");
    assert!(
        !log.contains("neighbours"),
        "reacted to another home:\n{log}"
    );
}

#[test]
fn a_failing_instance_backs_off_despite_its_own_status_writes() {
    ensure_busybox();
    let home = Home::new();
    let spec = "  env: [{name: TOKEN, valueFrom: {hostEnv: JACKIN_TEST_SURELY_UNSET}}]\n";
    home.record("failing", &support::instance_yaml_with("failing", spec));
    let mut controller = Controller::start(&home, &[]);
    std::thread::sleep(Duration::from_secs(20));
    controller.kill();
    let log = controller.log();
    let attempts = log.matches("reconcile failed").count();
    // Backing off from 1 s (doubling, jittered) allows at most 5 attempts in
    // 20 s; waking on every status write retried every poll (2 s): 10.
    assert!((2..=6).contains(&attempts), "{attempts} attempts:\n{log}");
    assert_eq!(home.object("failing")["status"]["phase"], "Failed");
}

#[test]
fn controller_once_does_not_count_a_blocked_purge_as_converged() {
    ensure_busybox();
    let home = Home::new();
    let repo = support::RoleRepo::new("host");
    let spec = format!(
        "  mounts: [{{src: {}, dst: /w, isolation: clone}}]\n",
        repo.path().display()
    );
    home.apply("held", &support::instance_yaml_with("held", &spec));
    let checkout = home.object("held")["status"]["mounts"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(std::path::Path::new(&checkout).join("draft"), "x").unwrap();
    home.ok(&["set-phase", "held", "purged", "--no-wait"]);
    let out = home.jackin(&["controller", "--once"]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("0 converged, 1 blocked"), "{stdout}");
    assert!(stderr.contains("the purge is blocked"), "{stderr}");
}

#[test]
fn an_unset_host_env_secret_names_the_process_that_looked_for_it() {
    ensure_busybox();
    let home = Home::new();
    let spec = "  env: [{name: TOKEN, valueFrom: {hostEnv: JACKIN_TEST_SURELY_UNSET}}]\n";
    // A one-shot command resolves it itself.
    let path = home.write_input("s.yaml", &support::instance_yaml_with("secret", spec));
    let out = home.jackin(&["apply", path.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(
            "TOKEN: host variable JACKIN_TEST_SURELY_UNSET is not set in the environment of \
             this `jackin apply` (pid "
        ) && stderr.contains("restart the controller with it set"),
        "{stderr}"
    );
    // A controller resolves it in its own environment, and says so.
    home.ok(&["set-phase", "secret", "running", "--no-wait"]);
    let controller = Controller::start(&home, &[]);
    let looked = format!(
        "is not set in the environment of the jackin controller (pid {})",
        controller.pid()
    );
    controller.eventually("the controller's try", || {
        let obj = home.object("secret");
        support::condition(&obj, "Ready")
            .and_then(|c| c["message"].as_str())
            .is_some_and(|message| message.contains(&looked))
    });
}

#[test]
fn a_second_controller_on_the_same_home_refuses_and_names_the_first() {
    let home = Home::new();
    let mut first = Controller::start(&home, &[]);
    first.eventually("the first controller started", || {
        first.log().contains("controller started")
    });
    let holder = format!("another jackin controller (pid {})", first.pid());
    // Bounded: a second loop that failed to refuse would run forever.
    for args in [&["controller"][..], &["controller", "--once"]] {
        let out = home.within(Duration::from_secs(60), args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "jackin {args:?}: {stderr}");
        assert!(stderr.contains(&holder), "jackin {args:?}: {stderr}");
    }
    assert_eq!(
        first.stop(),
        Some(0),
        "the first runs on, and stops cleanly"
    );
    let pass = home.ok(&["controller", "--once"]);
    assert!(pass.starts_with("pass complete"), "{pass}");
}
