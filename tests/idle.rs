//! Idle hooks, against the real engine with short delays: a workspace that
//! opted in runs its (and its role's) commands in an idle agent's
//! container, re-arms while it stays idle, and never touches an agent that
//! is active, attached, or in a workspace that did not opt in.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use support::{Controller, Home, RoleRepo, busybox_image, docker, ensure_busybox, eventually};

/// A workspace whose idle hooks run `commands` (YAML argv lists) and then
/// `then`, after 3 s of idleness and every 4 s after that.
fn workspace(name: &str, enabled: bool, commands: &str, then: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  \
         idle: {{enabled: {enabled}, after: 3s, every: 4s, timeout: 2s, commands: {commands}, then: {then}}}\n"
    )
}

/// Appends `word` to the unit's `state/hooks`: what the tests count.
fn note(word: &str) -> String {
    format!("[sh, -c, 'echo {word} >> /jackin/state/hooks']")
}

fn instance(name: &str, workspace: &str, spec_lines: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec:\n  \
         workspace: {workspace}\n  role: {{name: tester}}\n  agent: shell\n  image: {}\n{spec_lines}",
        busybox_image()
    )
}

fn unit(home: &Home, name: &str) -> PathBuf {
    home.path().join("data").join(home.container(name))
}

/// The lines the hooks wrote in the instance's unit.
fn hooks(home: &Home, name: &str) -> Vec<String> {
    std::fs::read_to_string(unit(home, name).join("state/hooks"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn idle(home: &Home, name: &str) -> serde_json::Value {
    home.object(name)["status"]["idle"].clone()
}

#[test]
fn only_idle_unattached_agents_of_opted_in_workspaces_run_the_hooks_and_they_re_arm() {
    ensure_busybox();
    let home = Home::new();
    // A role that recommends a command of its own.
    let role = RoleRepo::new("idle");
    std::fs::write(
        role.path().join("jackin.role.yaml"),
        format!("idle:\n  commands:\n    - {}\n", note("role")),
    )
    .unwrap();
    role.commit_marker("with idle commands");
    home.apply(
        "on",
        &workspace("on", true, &format!("[{}]", note("ws")), "none"),
    );
    home.apply(
        "off",
        &workspace("off", false, &format!("[{}]", note("ws")), "none"),
    );
    home.apply(
        "silent",
        &role
            .instance_yaml("silent")
            .replace("  agent: shell\n", "  agent: shell\n  workspace: on\n"),
    );
    home.apply(
        "chatty",
        &instance(
            "chatty",
            "on",
            "  command: [sh, -c, 'while true; do echo tick; sleep 1; done']\n",
        ),
    );
    home.apply("optout", &instance("optout", "off", ""));
    home.apply("watched", &instance("watched", "on", ""));
    // An operator attached to `watched`: its attached lock is held.
    let sockets = home.path().join("sockets").join(home.container("watched"));
    std::fs::create_dir_all(&sockets).unwrap();
    let attached = std::fs::File::create(sockets.join("attached.lock")).unwrap();
    attached.lock().unwrap();

    let started = Instant::now();
    let _controller = Controller::start(&home, &[]);
    // Generous: four controllers share two cores in this test binary.
    eventually(
        Duration::from_secs(60),
        "the hooks ran twice in the silent agent",
        || idle(&home, "silent")["runs"].as_u64() >= Some(2),
    );
    // Not before the delay, the role's commands first, then the
    // workspace's, again after the interval.
    assert!(started.elapsed() >= Duration::from_secs(3 + 4));
    assert_eq!(hooks(&home, "silent")[..4], ["role", "ws", "role", "ws"]);
    let status = idle(&home, "silent");
    assert!(status["runs"].as_u64().unwrap() >= 2, "{status}");
    assert_eq!(status["lastResult"], "ok");
    let described = home.ok(&["describe", "silent"]);
    assert!(described.contains("IdleHook"), "{described}");
    assert!(described.contains("exited 0"), "{described}");
    let wide = home.ok(&["get", "-o", "wide"]);
    assert!(wide.contains("IDLE-CLEANUP"), "{wide}");

    // Printing, opted out, attached: never.
    for name in ["chatty", "optout", "watched"] {
        assert_eq!(hooks(&home, name), Vec::<String>::new(), "{name}");
        assert!(idle(&home, name)["runs"].is_null(), "{name}");
    }
    // Detached: its turn comes.
    drop(attached);
    eventually(
        Duration::from_secs(20),
        "the hooks ran once detached",
        || hooks(&home, "watched") == ["ws"],
    );
}

#[test]
fn a_hanging_command_is_cut_off_at_its_timeout_and_the_agent_runs_on() {
    ensure_busybox();
    let home = Home::new();
    let commands = format!("[[sh, -c, 'sleep 3600'], {}]", note("after"));
    home.apply("ws", &workspace("ws", true, &commands, "none"));
    home.apply("hang", &instance("hang", "ws", ""));
    let container = home.container("hang");
    let _controller = Controller::start(&home, &[]);
    eventually(Duration::from_secs(30), "the run ended", || {
        !idle(&home, "hang")["lastResult"].is_null()
    });
    let result = idle(&home, "hang")["lastResult"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        result.starts_with("command 1 `sh -c sleep 3600` exited 137: timed out after 2s: killed"),
        "{result}"
    );
    // The next command still ran, and the agent runs on.
    assert_eq!(hooks(&home, "hang"), ["after"]);
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true"
    );
    // Nothing of it lingers: neither the runner nor the command.
    let processes = docker(&["exec", &container, "ps", "-o", "args"]);
    assert!(
        !processes.contains("/jackin/bin/hook")
            && !processes.lines().any(|l| l.trim() == "sh -c sleep 3600"),
        "the cut-off command lingers:\n{processes}"
    );
}

#[test]
fn then_restart_recycles_the_container_and_then_keep_keeps_the_instance() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "recycle",
        &workspace("recycle", true, &format!("[{}]", note("ran")), "restart"),
    );
    home.apply("rest", &workspace("rest", true, "[]", "keep"));
    home.apply("cycled", &instance("cycled", "recycle", ""));
    home.apply("parked", &instance("parked", "rest", ""));
    let container = home.container("cycled");
    let first_id = docker(&["inspect", "-f", "{{.Id}}", &container]);
    let unit_before = unit(&home, "cycled");
    let _controller = Controller::start(&home, &[]);

    eventually(
        Duration::from_secs(30),
        "the container was recycled",
        || {
            let id = docker(&["inspect", "-f", "{{.Id}}", &container]);
            !id.is_empty() && id != first_id
        },
    );
    eventually(Duration::from_secs(10), "the new container runs", || {
        home.object("cycled")["status"]["phase"] == "Running"
    });
    let obj = home.object("cycled");
    assert_eq!(obj["status"]["restore"]["tier"], 2, "{obj}");
    assert_eq!(unit(&home, "cycled"), unit_before, "the same unit");
    assert_eq!(
        hooks(&home, "cycled")[0],
        "ran",
        "the unit's state survived"
    );

    eventually(Duration::from_secs(30), "parked is kept", || {
        home.object("parked")["status"]["phase"] == "Kept"
    });
    let obj = home.object("parked");
    assert_eq!(
        obj["spec"]["phase"], "Running",
        "the spec is the operator's"
    );
    assert_eq!(obj["status"]["settled"]["by"], "idleHooks");
}

#[test]
fn a_controller_killed_between_two_runs_runs_the_next_on_time_exactly_once() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "ws",
        &workspace("ws", true, &format!("[{}]", note("ran")), "none"),
    );
    // (Not named `agent`: `jackin get agent` lists the agents.)
    home.apply("worker", &instance("worker", "ws", ""));
    let mut controller = Controller::start(&home, &[]);
    eventually(Duration::from_secs(30), "the first run", || {
        idle(&home, "worker")["runs"] == 1
    });
    let first: jiff::Timestamp = idle(&home, "worker")["lastRun"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    controller.kill();
    let _controller = Controller::start(&home, &[]);
    eventually(Duration::from_secs(30), "the second run", || {
        idle(&home, "worker")["runs"] == 2
    });
    let status = idle(&home, "worker");
    let second: jiff::Timestamp = status["lastRun"].as_str().unwrap().parse().unwrap();
    let gap = second.duration_since(first).as_secs_f64();
    // Due 4 s after the first; looked at at least every second.
    assert!(
        (4.0..7.0).contains(&gap),
        "the second run came {gap} s after the first"
    );
    assert_eq!(
        hooks(&home, "worker"),
        ["ran", "ran"],
        "a run was lost or doubled"
    );
}
