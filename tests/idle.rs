//! Idle hooks, against the real engine with short delays: a workspace that
//! opted in runs its (and its role's) commands in an idle agent's
//! container, re-arms while it stays idle, and never touches an agent that
//! is active (output, writes, an attached terminal, also while the hooks
//! run), or in a workspace that did not opt in.
//!
//! No test here bounds how soon something happens tighter than a loaded
//! two-core machine meets: they assert order and counts, and wait with
//! generous limits (S1).

use std::time::{Duration, Instant};

use support::{
    Controller, Home, RoleRepo, busybox_image, condition, docker, ensure_busybox, eventually,
};

/// A workspace whose idle hooks run `commands` (YAML argv lists) and then
/// `then`, after 3 s of idleness and every 4 s after that.
fn workspace(name: &str, enabled: bool, commands: &str, then: &str) -> String {
    workspace_timed(name, enabled, commands, then, "2s")
}

/// [`workspace`], each command cut off after `timeout`.
fn workspace_timed(name: &str, enabled: bool, commands: &str, then: &str, timeout: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  \
         idle: {{enabled: {enabled}, after: 3s, every: 4s, timeout: {timeout}, commands: {commands}, then: {then}}}\n"
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

/// The lines the hooks wrote in the instance's unit.
fn hooks(home: &Home, name: &str) -> Vec<String> {
    std::fs::read_to_string(home.unit(name).join("state/hooks"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn idle(home: &Home, name: &str) -> serde_json::Value {
    home.object(name)["status"]["idle"].clone()
}

/// How many times the hooks ran in `name`, as its status counts them.
fn runs(home: &Home, name: &str) -> u64 {
    idle(home, name)["runs"].as_u64().unwrap_or(0)
}

fn container_id(container: &str) -> String {
    docker(&["inspect", "-f", "{{.Id}}", container])
}

/// The processes in `container`, one `args` line each.
fn processes(container: &str) -> Vec<String> {
    docker(&["exec", container, "ps", "-o", "args"])
        .lines()
        .map(|l| l.trim().to_owned())
        .collect()
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
        Duration::from_secs(60),
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
    let controller = Controller::start(&home, &["--metrics-addr", "127.0.0.1:0"]);
    eventually(Duration::from_secs(60), "the run ended", || {
        !idle(&home, "hang")["lastResult"].is_null()
    });
    // Counted as a failed run.
    let (_, metrics) = support::http_get(&controller.metrics_addr(), "/metrics");
    assert!(
        metrics.contains("jackin_idle_hook_runs_total{result=\"failed\"} 1\n"),
        "{metrics}"
    );
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

/// L3, L5: `then: restart` stops the agent gracefully, as a keep does, so
/// its marker records the ending, which the session then shows with the
/// agent's exit code; `then: keep` keeps it.
#[test]
fn l3_l5_then_restart_stops_the_agent_gracefully_and_recycles_it_and_then_keep_keeps_it() {
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
    let unit_before = home.unit("cycled");
    let _controller = Controller::start(&home, &[]);

    eventually(
        Duration::from_secs(90),
        "the container was recycled",
        || {
            let id = docker(&["inspect", "-f", "{{.Id}}", &container]);
            !id.is_empty() && id != first_id
        },
    );
    eventually(Duration::from_secs(60), "the new container runs", || {
        home.object("cycled")["status"]["phase"] == "Running"
    });
    let obj = home.object("cycled");
    assert_eq!(obj["status"]["restore"]["tier"], 2, "{obj}");
    assert_eq!(home.unit("cycled"), unit_before, "the same unit");
    assert_eq!(
        hooks(&home, "cycled")[0],
        "ran",
        "the unit's state survived"
    );
    // Stopped gracefully: the wrapper wrote its marker (set aside when the
    // new container started), and the session shows the agent's code
    // (`sleep` ended by SIGTERM: 143), never `unknown`.
    let session = &obj["status"]["session"];
    assert_eq!(
        (
            session["source"].as_str(),
            session["reason"].as_str(),
            session["exitCode"].as_i64()
        ),
        (Some("marker"), Some("signal:TERM"), Some(143)),
        "{obj}"
    );
    assert!(condition(&obj, "SessionOutcome").is_none(), "{obj}");
    let marker: serde_json::Value = serde_json::from_slice(
        &std::fs::read(home.unit("cycled").join("state/exit.prev.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(marker["reason"], "signal:TERM", "{marker}");
    let wide = home.ok(&["get", "cycled", "-o", "wide"]);
    assert!(
        wide.contains("stopped by jackin (SIGTERM, exit 143)"),
        "{wide}"
    );
    let described = home.ok(&["describe", "cycled"]);
    assert!(
        described.contains("the agent was stopped gracefully"),
        "{described}"
    );

    eventually(Duration::from_secs(90), "parked is kept", || {
        home.object("parked")["status"]["phase"] == "Kept"
    });
    let obj = home.object("parked");
    assert_eq!(
        obj["spec"]["phase"], "Running",
        "the spec is the operator's"
    );
    assert_eq!(obj["status"]["settled"]["by"], "idleHooks");
    // Kept as a keep does: stopped gracefully, its exit code shown.
    assert_eq!(obj["status"]["session"]["reason"], "signal:TERM", "{obj}");
    let wide = home.ok(&["get", "parked", "-o", "wide"]);
    assert!(
        wide.contains("stopped by jackin to keep (SIGTERM, exit 143)"),
        "{wide}"
    );
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
    eventually(Duration::from_secs(60), "the first run", || {
        idle(&home, "worker")["runs"] == 1
    });
    let first: jiff::Timestamp = idle(&home, "worker")["lastRun"]
        .as_str()
        .unwrap()
        .parse()
        .unwrap();
    controller.kill();
    let _controller = Controller::start(&home, &[]);
    eventually(Duration::from_secs(90), "the second run", || {
        idle(&home, "worker")["runs"] == 2
    });
    let status = idle(&home, "worker");
    let second: jiff::Timestamp = status["lastRun"].as_str().unwrap().parse().unwrap();
    // Due 4 s after the first, and not before (a restarted controller that
    // forgot the timer would start a new 3 s stretch). How late it may come
    // on a loaded machine is not asserted (S1): only that it came.
    let gap = second.duration_since(first).as_secs_f64();
    assert!(gap >= 4.0, "the second run came {gap} s after the first");
    assert_eq!(
        hooks(&home, "worker"),
        ["ran", "ran"],
        "a run was lost or doubled"
    );
}

/// L4: an agent that writes a file every second and prints nothing is at
/// work: it is never idle, while a quiet agent beside it in the same
/// workspace is recycled again and again.
#[test]
fn l4_an_agent_that_writes_a_file_every_second_and_prints_nothing_is_never_idle() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "ws",
        &workspace("ws", true, &format!("[{}]", note("ran")), "restart"),
    );
    home.apply(
        "writer",
        &instance(
            "writer",
            "ws",
            "  command: [sh, -c, 'mkdir -p /var; i=0; while true; do i=$((i+1)); echo $i >> /var/work; sleep 1; done']\n",
        ),
    );
    home.apply("quiet", &instance("quiet", "ws", ""));
    let writer = home.container("writer");
    let first = container_id(&writer);
    let _controller = Controller::start(&home, &[]);
    // The quiet one is looked at on the same cadence: by its second run
    // the writer was looked at over two idle delays and more.
    eventually(
        Duration::from_secs(180),
        "the quiet agent's second run",
        || runs(&home, "quiet") >= 2,
    );
    assert_eq!(runs(&home, "writer"), 0, "{}", idle(&home, "writer"));
    assert_eq!(hooks(&home, "writer"), Vec::<String>::new());
    assert_eq!(container_id(&writer), first, "the writer was recycled");
    assert!(home.object("writer")["status"]["restore"].is_null());
    // It wrote all along, in its container's own layer (nothing restarted
    // its count), and printed nothing.
    let written = docker(&["exec", &writer, "wc", "-l", "/var/work"]);
    let lines: u64 = written.split_whitespace().next().unwrap().parse().unwrap();
    assert!(lines >= 3, "{written}");
    let printed = std::process::Command::new("docker")
        .args(["logs", &writer])
        .output()
        .unwrap();
    assert!(
        printed.stdout.is_empty() && printed.stderr.is_empty(),
        "{printed:?}"
    );
}

/// L5: an agent that starts printing while an 8-second hook runs is at
/// work when the hook ends: the restart is skipped and the timer starts
/// again. So for an operator who attaches while the hook runs.
#[test]
fn l5_an_agent_that_becomes_active_during_an_8_second_hook_is_not_restarted() {
    ensure_busybox();
    let home = Home::new();
    let commands = "[[sh, -c, 'touch /jackin/state/hook-started; sleep 8']]";
    home.apply(
        "ws",
        &workspace_timed("ws", true, commands, "restart", "60s"),
    );
    // Quiet until the hook starts, then printing.
    home.apply(
        "wakes",
        &instance(
            "wakes",
            "ws",
            "  command: [sh, -c, 'while [ ! -f /jackin/state/hook-started ]; do sleep 1; done; \
             while true; do echo working; sleep 1; done']\n",
        ),
    );
    // Quiet throughout; an operator attaches while its hook runs.
    home.apply("joined", &instance("joined", "ws", ""));
    let before: Vec<(String, String)> = ["wakes", "joined"]
        .iter()
        .map(|name| {
            let container = home.container(name);
            let id = container_id(&container);
            (container, id)
        })
        .collect();
    let _controller = Controller::start(&home, &[]);
    let started = home.unit("joined").join("state/hook-started");
    eventually(Duration::from_secs(120), "joined's hook started", || {
        started.exists()
    });
    let sockets = home.path().join("sockets").join(home.container("joined"));
    std::fs::create_dir_all(&sockets).unwrap();
    let attached = std::fs::File::create(sockets.join("attached.lock")).unwrap();
    attached.lock().unwrap();

    for name in ["wakes", "joined"] {
        eventually(Duration::from_secs(120), "the hook's run ended", || {
            runs(&home, name) >= 1
        });
    }
    for (name, (container, id)) in ["wakes", "joined"].iter().zip(&before) {
        assert_eq!(&container_id(container), id, "{name} was restarted");
        let described = home.ok(&["describe", name]);
        assert!(
            described.contains("the restart was skipped"),
            "{name}: {described}"
        );
        let obj = home.object(name);
        assert!(obj["status"]["restore"].is_null(), "{obj}");
        assert_eq!(obj["status"]["phase"], "Running", "{obj}");
        // Re-armed: the stretch ended.
        assert!(obj["status"]["idle"]["since"].is_null(), "{obj}");
    }
    let wakes = home.ok(&["describe", "wakes"]);
    assert!(
        wakes.contains("while the idle hooks ran (output"),
        "{wakes}"
    );
    let joined = home.ok(&["describe", "joined"]);
    assert!(
        joined.contains("while the idle hooks ran (an attached terminal"),
        "{joined}"
    );
    // Still at work: no further run while it prints, or stays attached,
    // for longer than an idle delay and an interval.
    std::thread::sleep(Duration::from_secs(10));
    for (name, (container, id)) in ["wakes", "joined"].iter().zip(&before) {
        assert_eq!(runs(&home, name), 1, "{name}");
        assert_eq!(&container_id(container), id, "{name} was restarted");
    }
}

/// L7: a hook's result is its command's own last line (not the runner's
/// "Terminated"), and the runner's watchdog leaves no `sleep` behind.
#[test]
fn l7_the_hook_reports_its_commands_last_line_and_its_watchdog_leaves_nothing() {
    ensure_busybox();
    let home = Home::new();
    // Once: a second run's watchdog must not be mistaken for a lingering one.
    let commands = "[[sh, -c, 'echo first; echo own-last-line']]";
    let ws = workspace_timed("ws", true, commands, "none", "45s").replace("every: 4s", "every: 1h");
    home.apply("ws", &ws);
    home.apply("tidy", &instance("tidy", "ws", ""));
    let container = home.container("tidy");
    let _controller = Controller::start(&home, &[]);
    eventually(Duration::from_secs(120), "the first run", || {
        runs(&home, "tidy") >= 1
    });
    assert_eq!(idle(&home, "tidy")["lastResult"], "ok");
    let described = home.ok(&["describe", "tidy"]);
    assert!(
        described.contains("`sh -c echo first; echo own-last-line` exited 0: own-last-line"),
        "{described}"
    );
    assert!(!described.contains("Terminated"), "{described}");
    // The runner waits for its watchdog, which ends within a second of the
    // command: nothing of either is left.
    let left = processes(&container);
    assert!(
        !left
            .iter()
            .any(|p| p == "sleep 45" || p == "sleep 1" || p.contains("/jackin/bin/hook")),
        "the watchdog lingers: {left:?}"
    );
}
