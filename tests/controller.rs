//! `jackin controller` against the real engine: it repairs what happens to
//! instances while no other command runs, and stops cleanly.

mod support;

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use support::{Home, docker, ensure_busybox, instance_yaml};

/// The controller as a child process, stopped (SIGTERM) on drop.
struct Controller {
    child: Child,
}

impl Controller {
    fn start(home: &Home) -> Self {
        let log = std::fs::File::create(home.path().join("controller.log")).unwrap();
        let child = home
            .command(&["controller", "-vv"])
            .stdout(Stdio::null())
            .stderr(log)
            .spawn()
            .unwrap();
        Self { child }
    }

    /// Sends SIGTERM and waits; returns the exit code.
    fn stop(&mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Polls `check` every 200 ms for up to 60 s.
fn eventually(what: &str, home: &Home, check: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while Instant::now() < deadline {
        if check() {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    let log = std::fs::read_to_string(home.path().join("controller.log")).unwrap_or_default();
    panic!("timed out waiting for {what}; controller log:\n{log}");
}

#[test]
fn the_controller_repairs_rm_with_tier_2_and_stop_with_tier_1() {
    ensure_busybox();
    let home = Home::new();
    let path = home.write_input("w.yaml", &instance_yaml("watched"));
    home.ok(&["apply", path.to_str().unwrap()]);
    let container = home.container("watched");
    let mut controller = Controller::start(&home);
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
    eventually("a tier 2 restore after docker rm -f", &home, || {
        restore().0 == Some(2) && running()
    });
    assert_ne!(docker(&["inspect", "-f", "{{.Id}}", &container]), old_id);

    let (_, tier_2_at) = restore();
    let id = docker(&["inspect", "-f", "{{.Id}}", &container]);
    docker(&["stop", "-t", "1", &container]);
    eventually("a tier 1 restore after docker stop", &home, || {
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
    eventually("the instance kept", &home, || {
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
    // Converged: a no-op pass lists containers, networks, volumes and images once
    // each, and writes nothing.
    let before = home.snapshot();
    let second = home.ok(&["controller", "--once"]);
    assert_eq!(
        second,
        "pass complete: 5 instance(s), 5 converged, 4 engine call(s)\n"
    );
    home.assert_unchanged(&before, "a no-op pass");
}
