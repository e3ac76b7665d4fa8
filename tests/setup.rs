//! The workspace's setup (issue 56): run once per session, at its first
//! start and before the agent, never again on a restore or a resume, again
//! after a rollout that changes it; a setup that fails or runs too long
//! leaves a `SetupFailed` condition and a running agent.

use std::time::Duration;

use support::terminal::Terminal;
use support::{Home, condition, docker, ensure_busybox, eventually, instance_yaml_with};

/// An "agent" that logs each start in its home (see
/// [`Home::wait_for_starts`]), then waits.
const AGENT: &str = "echo started >> /home/agent/agent-starts.log; exec sleep 3600";

/// A workspace named `name` whose setup is `script` (as `sh -c`), with the
/// role `tester` for `launch`.
fn workspace(home: &Home, name: &str, script: &str, timeout: &str) {
    home.apply(
        &format!("ws-{name}"),
        &format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  \
             roles: [{{name: tester, image: {}}}]\n  \
             setup: {{command: [sh, -c, {}], timeout: {timeout}}}\n",
            support::busybox_image(),
            serde_json::to_string(script).unwrap()
        ),
    );
}

/// An instance of workspace `ws` running [`AGENT`].
fn instance(name: &str, ws: &str) -> String {
    instance_yaml_with(
        name,
        &format!(
            "  workspace: {ws}\n  command: [sh, -c, {}]\n",
            serde_json::to_string(AGENT).unwrap()
        ),
    )
}

/// The lines the setup appended to the counter in `name`'s home.
fn setup_runs(home: &Home, name: &str) -> Vec<String> {
    std::fs::read_to_string(home.unit(name).join("home/setup-count"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// What the status says the setup did, once a pass took the report in.
fn setup_outcome(home: &Home, name: &str) -> serde_json::Value {
    let mut setup = serde_json::Value::Null;
    eventually(
        Duration::from_secs(60),
        "the setup's report is taken in",
        || {
            home.one_pass();
            setup = home.object(name)["status"]["setup"].clone();
            !setup.is_null()
        },
    );
    setup
}

/// Once across a start, a tier 1 and a tier 2 restore and a keep and
/// resume (the agent started each time after it); again after a rollout
/// that changes it.
#[test]
fn the_setup_runs_once_per_session_and_again_when_a_rollout_changes_it() {
    ensure_busybox();
    let home = Home::new();
    let count = "echo ran >> /home/agent/setup-count; echo set-up-output";
    workspace(&home, "ws", count, "1m");
    home.apply("s", &instance("s", "ws"));
    home.wait_for_starts("s", 1);
    assert_eq!(setup_runs(&home, "s"), ["ran"]);
    let setup = setup_outcome(&home, "s");
    assert_eq!(setup["outcome"], "done", "{setup}");
    assert_eq!(setup["exitCode"], 0, "{setup}");
    let obj = home.object("s");
    assert_eq!(condition(&obj, "Setup").unwrap()["reason"], "SetupDone");
    let log = std::fs::read_to_string(home.unit("s").join(".jackin/setup.log")).unwrap();
    assert_eq!(log, "set-up-output\n");

    // Tier 1, tier 2, keep and resume: the agent starts again, the setup
    // does not run again.
    docker(&["stop", "-t", "1", &home.container("s")]);
    home.one_pass();
    home.wait_for_starts("s", 2);
    docker(&["rm", "-f", &home.container("s")]);
    home.one_pass();
    home.wait_for_starts("s", 3);
    home.ok(&["set-phase", "s", "kept"]);
    home.ok(&["set-phase", "s", "running"]);
    home.wait_for_starts("s", 4);
    assert_eq!(setup_runs(&home, "s"), ["ran"], "it ran once");

    // A changed setup is drift; its rollout runs the new one.
    let again = "echo ran-again >> /home/agent/setup-count";
    workspace(&home, "ws", again, "1m");
    home.one_pass();
    let described = home.ok(&["describe", "s"]);
    assert!(described.contains("setup (the workspace's)"), "{described}");
    home.ok(&["rollout", "s"]);
    home.wait_for_starts("s", 5);
    eventually(Duration::from_secs(60), "the new setup ran", || {
        setup_runs(&home, "s") == ["ran", "ran-again"]
    });
}

/// A setup that exits non-zero, and one that runs past its timeout: the
/// agent starts all the same, and the instance says `SetupFailed`, with
/// the end of the setup's output in `describe`.
#[test]
fn a_setup_that_fails_or_hangs_leaves_setup_failed_and_a_running_agent() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home, "fails", "echo about-to-fail; exit 3", "1m");
    workspace(&home, "hangs", "echo waiting-forever; sleep 600", "2s");
    home.apply("f", &instance("f", "fails"));
    home.apply("h", &instance("h", "hangs"));
    home.wait_for_starts("f", 1);
    home.wait_for_starts("h", 1);
    for (name, outcome, code, said) in [
        ("f", "failed", Some(3), "about-to-fail"),
        ("h", "timed-out", None, "waiting-forever"),
    ] {
        let setup = setup_outcome(&home, name);
        assert_eq!(setup["outcome"], outcome, "{setup}");
        assert_eq!(setup["exitCode"].as_i64(), code, "{setup}");
        let obj = home.object(name);
        assert_eq!(obj["status"]["phase"], "Running");
        let cond = condition(&obj, "Setup").unwrap();
        assert_eq!(cond["reason"], "SetupFailed", "{cond}");
        assert!(
            cond["message"].as_str().unwrap().contains("setup.log"),
            "{cond}"
        );
        let described = home.ok(&["describe", name]);
        assert!(
            described.contains(&format!("Setup:            {outcome}")),
            "{described}"
        );
        assert!(described.contains(&format!("  | {said}")), "{described}");
    }
}

/// `launch --skip-setup`: the new session's agent starts without its setup,
/// recorded as skipped.
#[test]
fn launch_skip_setup_starts_the_agent_without_it() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home, "desk", "echo ran >> /home/agent/setup-count", "1m");
    let term = Terminal::start(&home, "launch -w desk -r tester -a shell --skip-setup");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.keys(&["C-p", "C-q"]);
    term.wait_for("detached", 1);
    let name = home.ok(&["get", "-o", "name"]);
    let name = name.trim().trim_start_matches("instance/").to_owned();
    let setup = setup_outcome(&home, &name);
    assert_eq!(setup["outcome"], "skipped", "{setup}");
    assert!(setup_runs(&home, &name).is_empty(), "it did not run");
}
