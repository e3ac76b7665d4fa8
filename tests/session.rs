//! Session outcomes against the real engine: the completion marker, the
//! engine's exit state, unknown outcomes, restart recovery and artifacts.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::{
    Controller, Home, condition, docker, ensure_busybox, eventually, instance_yaml_with,
};

/// An instance whose agent is a shell script (`sh -c SCRIPT`).
fn launch(home: &Home, name: &str, script: &str) {
    let yaml = instance_yaml_with(
        name,
        &format!(
            "  command: [sh, -c, {}]\n",
            serde_json::to_string(script).unwrap()
        ),
    );
    home.apply(name, &yaml);
}

/// The unit's `state/` directory on the host (`/jackin/state` inside).
fn state_dir(home: &Home, name: &str) -> PathBuf {
    home.path()
        .join("data")
        .join(home.container(name))
        .join("state")
}

fn running(container: &str) -> bool {
    Command::new("docker")
        .args(["inspect", "-f", "{{.State.Running}}", container])
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "true")
}

fn session(home: &Home, name: &str) -> serde_json::Value {
    home.object(name)["status"]["session"].clone()
}

/// An agent that runs until the host creates `state/go`, then exits.
const WAIT_THEN_EXIT: &str = "while [ ! -f /jackin/state/go ]; do sleep 0.2; done; exit";

#[test]
fn a_normal_exit_is_recorded_from_the_marker_and_not_restarted() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "three", &format!("{WAIT_THEN_EXIT} 3"));
    let container = home.container("three");
    std::fs::write(state_dir(&home, "three").join("go"), "").unwrap();
    eventually(Duration::from_secs(60), "the agent to exit", || {
        !running(&container)
    });
    home.ok(&["controller", "--once"]);

    let s = session(&home, "three");
    assert_eq!(s["exitCode"], 3);
    assert_eq!(s["source"], "marker");
    assert_eq!(s["reason"], "exited");
    assert!(s["finishedAt"].is_string());
    assert_eq!(home.object("three")["status"]["phase"], "Crashed");
    // Another pass leaves the ended session alone.
    home.ok(&["controller", "--once"]);
    assert!(!running(&container));
    let describe = home.ok(&["describe", "three"]);
    assert!(describe.contains("exit 3 (marker)"), "{describe}");
    assert!(describe.contains("SessionEnded"), "{describe}");
    let wide = home.ok(&["get", "-o", "wide"]);
    assert!(wide.contains("exit 3 (marker)"), "{wide}");

    // Resuming starts a new session in the same unit (one that does not
    // find its exit signal waiting).
    std::fs::remove_file(state_dir(&home, "three").join("go")).unwrap();
    let out = home.ok(&["set-phase", "three", "running"]);
    assert!(out.contains("instance/three Running"), "{out}");
    assert!(running(&container));
}

/// SK-S4: each ending stays in `status.sessionEndings`, oldest first, and
/// `describe` shows the earlier ones under the last.
#[test]
fn each_ending_of_a_resumed_session_is_kept_in_order() {
    ensure_busybox();
    let home = Home::new();
    // Exits with the code the host writes into `state/go`.
    let script =
        "while [ ! -f /jackin/state/go ]; do sleep 0.2; done; exit $(cat /jackin/state/go)";
    launch(&home, "twice", script);
    let container = home.container("twice");
    for code in ["3", "4"] {
        std::fs::write(state_dir(&home, "twice").join("go"), code).unwrap();
        eventually(Duration::from_secs(60), "the agent to exit", || {
            !running(&container)
        });
        home.ok(&["controller", "--once"]);
        std::fs::remove_file(state_dir(&home, "twice").join("go")).unwrap();
        if code == "3" {
            home.ok(&["set-phase", "twice", "running"]);
            assert!(running(&container));
        }
    }
    let endings = home.object("twice")["status"]["sessionEndings"].clone();
    let codes: Vec<_> = endings
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["exitCode"].clone())
        .collect();
    assert_eq!(codes, [3, 4], "{endings}");
    let at = |i: usize| -> jiff::Timestamp { endings[i]["at"].as_str().unwrap().parse().unwrap() };
    assert!(at(0) <= at(1), "{endings}");
    assert_eq!(endings[1]["source"], "marker");
    assert_eq!(session(&home, "twice")["exitCode"], 4);
    let describe = home.ok(&["describe", "twice"]);
    let earlier = describe
        .split("Earlier sessions:")
        .nth(1)
        .unwrap_or_default();
    assert!(earlier.contains("exit 3 (marker)"), "{describe}");
}

#[test]
fn a_restarted_controller_records_an_exit_that_happens_later() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "later", &format!("{WAIT_THEN_EXIT} 5"));
    let container = home.container("later");
    let mut first = Controller::start(&home, &[]);
    std::thread::sleep(Duration::from_millis(500));
    first.stop();
    let _second = Controller::start(&home, &[]);
    std::thread::sleep(Duration::from_millis(500));
    assert!(running(&container), "the running session was left alone");
    std::fs::write(state_dir(&home, "later").join("go"), "").unwrap();
    eventually(Duration::from_secs(60), "the exit to be recorded", || {
        session(&home, "later")["exitCode"] == 5
    });
    assert_eq!(session(&home, "later")["source"], "marker");
}

/// A Workspace policy file named `name` with `exitPolicy: policy`.
fn workspace(home: &Home, name: &str, policy: &str) {
    let yaml = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec: {{exitPolicy: {policy}}}\n"
    );
    let path = home.write_input(&format!("ws-{name}.yaml"), &yaml);
    home.ok(&["apply", path.to_str().unwrap()]);
}

/// An instance in workspace `ws` whose agent waits for `go` then exits 0,
/// with an optional isolated mount of `repo`.
fn launch_in(home: &Home, name: &str, ws: &str, repo: Option<&Path>) {
    let mut spec = format!(
        "  workspace: {ws}\n  command: [sh, -c, {}]\n",
        serde_json::to_string(&format!("{WAIT_THEN_EXIT} 0")).unwrap()
    );
    if let Some(repo) = repo {
        spec.push_str(&format!(
            "  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
            repo.display()
        ));
    }
    home.apply(name, &instance_yaml_with(name, &spec));
}

/// Lets the agent of `name` exit 0, then runs one controller pass; what
/// the pass said (its standard error).
fn exit_and_pass(home: &Home, name: &str) -> String {
    let container = home.container(name);
    std::fs::write(state_dir(home, name).join("go"), "").unwrap();
    eventually(Duration::from_secs(60), "the agent to exit", || {
        !running(&container)
    });
    let pass = home.jackin(&["controller", "--once"]);
    assert!(pass.status.success(), "{pass:?}");
    String::from_utf8_lossy(&pass.stderr).into_owned()
}

/// Launches `name` in workspace `ws` with a worktree of `repo`, and leaves
/// a new file in its checkout: unfinished work. The checkout's host path.
fn launch_with_unfinished_work(home: &Home, name: &str, ws: &str, repo: &Path) -> String {
    launch_in(home, name, ws, Some(repo));
    let checkout = home.object(name)["status"]["mounts"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(Path::new(&checkout).join("draft.md"), "x").unwrap();
    checkout
}

#[test]
fn a_clean_exit_under_ask_with_nothing_unfinished_leaves_nothing() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "done", &format!("{WAIT_THEN_EXIT} 0"));
    let container = home.container("done");
    exit_and_pass(&home, "done");
    assert!(
        !home.jackin(&["get", "done"]).status.success(),
        "the instance is gone"
    );
    assert!(!home.path().join("data").join(&container).exists());
    assert!(docker(&["ps", "-aq", "--filter", &format!("name=^{container}$")]).is_empty());
}

#[test]
fn the_clean_policy_discards_unfinished_work_and_keep_keeps() {
    ensure_busybox();
    let home = Home::new();
    let repo = support::RoleRepo::new("host-work");
    workspace(&home, "tidy", "clean");
    let checkout = launch_with_unfinished_work(&home, "discarded", "tidy", repo.path());
    exit_and_pass(&home, "discarded");
    let left = home.jackin(&["describe", "discarded"]);
    assert!(
        !left.status.success(),
        "{}",
        String::from_utf8_lossy(&left.stdout)
    );
    assert!(!Path::new(&checkout).exists());

    workspace(&home, "hoard", "keep");
    launch_in(&home, "hoarded", "hoard", None);
    exit_and_pass(&home, "hoarded");
    let obj = home.object("hoarded");
    // The policy's decision is jackin's: status, never the operator's spec.
    assert_eq!(obj["spec"]["phase"], "Running");
    assert_eq!(obj["metadata"]["generation"], 1);
    assert_eq!(obj["status"]["settled"]["phase"], "Kept");
    assert_eq!(obj["status"]["settled"]["by"], "exitPolicy");
    assert_eq!(obj["status"]["phase"], "Kept");
    // Kept by the policy, resumed by the operator: a new session starts.
    std::fs::remove_file(state_dir(&home, "hoarded").join("go")).unwrap();
    let out = home.ok(&["set-phase", "hoarded", "running"]);
    assert!(out.contains("instance/hoarded Running"), "{out}");
    assert!(running(&home.container("hoarded")));
}

#[test]
fn ask_with_unfinished_work_and_nobody_to_ask_keeps_it() {
    ensure_busybox();
    let home = Home::new();
    let repo = support::RoleRepo::new("host-work");
    let checkout = launch_with_unfinished_work(&home, "unfinished", "asked", repo.path());
    exit_and_pass(&home, "unfinished");
    let obj = home.object("unfinished");
    assert_eq!(obj["status"]["phase"], "Kept");
    let reason = condition(&obj, "ExitPolicy").map(|c| c["reason"].clone());
    assert_eq!(reason, Some(serde_json::json!("NonInteractive")));
    assert!(Path::new(&checkout).join("draft.md").exists());
    // The event says it in words, not in Rust's debug text.
    let described = home.ok(&["describe", "unfinished"]);
    assert!(
        described.contains(
            "exit policy ask: keep the session (unfinished work, and nobody attached to ask)"
        ),
        "{described}"
    );
    assert!(
        !described.contains("Keep {") && !described.contains("non_interactive"),
        "{described}"
    );
}

/// A-FN7: kept because nobody was attached to ask, the session is not
/// left to be found: the command that settled it (here the controller's
/// pass) and the event name each checkout's path on the host, what it
/// holds, and the commands to return to it, inspect it and discard it.
#[test]
fn a_session_kept_unasked_says_where_its_work_is_and_what_to_do() {
    ensure_busybox();
    let home = Home::new();
    let repo = support::RoleRepo::new("host-work");
    let checkout = launch_with_unfinished_work(&home, "unasked", "asked", repo.path());
    let said = exit_and_pass(&home, "unasked");
    assert_eq!(home.object("unasked")["status"]["phase"], "Kept");
    let described = home.ok(&["describe", "unasked"]);
    for text in [&said, &described] {
        for what in [
            format!("{checkout} (/workspace/app: 1 changed files)"),
            "`jackin attach unasked` returns to it".to_owned(),
            "`jackin describe unasked` (or the checkout) shows the work".to_owned(),
            "`jackin set-phase unasked purged` discards it".to_owned(),
        ] {
            assert!(text.contains(&what), "{what:?} in:\n{text}");
        }
    }
}

#[test]
fn an_exit_while_no_jackin_runs_is_recorded_from_the_marker_after_removal() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "alone", &format!("{WAIT_THEN_EXIT} 4"));
    let container = home.container("alone");
    std::fs::write(state_dir(&home, "alone").join("go"), "").unwrap();
    eventually(Duration::from_secs(60), "the agent to exit", || {
        !running(&container)
    });
    docker(&["rm", &container]);

    home.ok(&["controller", "--once"]);
    let s = session(&home, "alone");
    assert_eq!(
        (s["exitCode"].as_i64(), s["source"].as_str()),
        (Some(4), Some("marker"))
    );
    assert_eq!(home.object("alone")["status"]["phase"], "Crashed");
    // Ended by the agent: not recreated.
    assert!(docker(&["ps", "-aq", "--filter", &format!("name=^{container}$")]).is_empty());
}

#[test]
fn sigkill_is_recorded_as_137_from_the_engine_and_restored() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "killed", "sleep 3600");
    let container = home.container("killed");
    docker(&["kill", "-s", "KILL", &container]);
    let out = home.ok(&["controller", "--once"]);
    assert!(out.starts_with("pass complete"), "{out}");
    let s = session(&home, "killed");
    assert_eq!(s["exitCode"], 137);
    assert_eq!(s["source"], "engine");
    assert_eq!(s["reason"], "killed");
    assert!(running(&container), "a killed session is restored (tier 1)");
}

/// The unit's directories jackin owns are made again at the next start,
/// each with an event: a killed session whose `state/` and `bin/` were
/// deleted meanwhile is restored (tier 1), and one removed with them is
/// made anew (tier 2). Defect SA1: a unit whose `state/` was deleted never
/// started again.
#[test]
fn a_deleted_unit_directory_is_made_again_at_the_next_start() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "unmade", "sleep 3600");
    let container = home.container("unmade");
    let unit = home.unit("unmade");
    for engine_step in [&["kill", "-s", "KILL"][..], &["rm", "-f"][..]] {
        docker(&[engine_step, &[container.as_str()]].concat());
        for dir in ["state", "bin"] {
            std::fs::remove_dir_all(unit.join(dir)).unwrap();
        }
        home.ok(&["controller", "--once"]);
        assert!(running(&container), "not restored after {engine_step:?}");
        assert!(state_dir(&home, "unmade").is_dir());
        assert!(unit.join("bin/entry").is_file());
    }
    let described = home.ok(&["describe", "unmade"]);
    for dir in ["state", "bin"] {
        let line = format!("the unit's {dir}/ was missing: made again");
        assert_eq!(described.matches(&line).count(), 2, "{line}:\n{described}");
    }
}

#[test]
fn rm_f_without_a_marker_is_recorded_as_unknown() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "vanished", "sleep 3600");
    let container = home.container("vanished");
    docker(&["rm", "-f", &container]);
    home.ok(&["controller", "--once"]);
    let obj = home.object("vanished");
    assert_eq!(obj["status"]["session"]["source"], "unknown");
    assert!(obj["status"]["session"]["exitCode"].is_null());
    let condition =
        condition(&obj, "SessionOutcome").expect("a condition explains the unknown outcome");
    assert_eq!(condition["status"], "Unknown");
    assert!(running(&container), "restored by tier 2");
}

#[test]
fn a_malformed_marker_is_reported_and_the_engine_code_used() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "garbled", "sleep 3600");
    let container = home.container("garbled");
    docker(&["kill", "-s", "KILL", &container]);
    std::fs::write(
        state_dir(&home, "garbled").join("exit.json"),
        "{ not a marker",
    )
    .unwrap();
    home.ok(&["controller", "--once"]);
    let obj = home.object("garbled");
    assert_eq!(obj["status"]["session"]["exitCode"], 137);
    assert_eq!(obj["status"]["session"]["source"], "engine");
    let malformed = obj["status"]["conditions"]
        .as_array()
        .unwrap()
        .iter()
        .any(|c| c["type"] == "MarkerMalformed" && c["status"] == "True");
    assert!(malformed, "{obj}");
    assert!(
        home.ok(&["describe", "garbled"])
            .contains("MarkerMalformed")
    );
}

/// Runs a session of `name` that leaves a report in `state/artifacts/`
/// and exits 0; returns where the report's collection went.
fn collect_a_report(home: &Home, name: &str) -> PathBuf {
    launch(
        home,
        name,
        &format!(
            "mkdir -p /jackin/state/artifacts && echo findings > /jackin/state/artifacts/report.txt; {WAIT_THEN_EXIT} 0"
        ),
    );
    let container = home.container(name);
    std::fs::write(state_dir(home, name).join("go"), "").unwrap();
    eventually(Duration::from_secs(60), "the agent to exit", || {
        !running(&container)
    });
    // A clean exit under the default policy (ask, nothing unfinished)
    // purges the instance; what the agent left is kept outside the unit.
    home.ok(&["controller", "--once"]);
    assert!(!home.jackin(&["get", name]).status.success());
    assert!(!home.path().join("data").join(&container).exists());
    let runs: Vec<_> = std::fs::read_dir(home.path().join("artifacts").join(name))
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    assert_eq!(runs.len(), 1, "{runs:?}");
    runs[0].clone()
}

#[test]
fn artifacts_survive_a_purge() {
    ensure_busybox();
    let home = Home::new();
    let run = collect_a_report(&home, "reporter");
    assert_eq!(
        std::fs::read_to_string(run.join("report.txt")).unwrap(),
        "findings\n"
    );
}

/// IT-26: collected artifacts are kept for the home's `artifactRetention`,
/// then swept as discarded work is: a collection older than it goes (by
/// when its session finished, which its name says), a younger one stays,
/// and an instance's directory goes with its last collection.
#[test]
fn collected_artifacts_go_once_the_artifact_retention_passes() {
    ensure_busybox();
    let home = Home::new();
    let young = collect_a_report(&home, "recent");
    let artifacts = home.path().join("artifacts");
    // Collections of sessions that finished in 2020, made as jackin makes
    // them (the directories themselves are new).
    let old = artifacts.join("recent/2020-01-01T00-00-00Z");
    let gone = artifacts.join("long-gone/2020-01-02T03-04-05-678Z");
    for dir in [&old, &gone] {
        std::fs::create_dir_all(dir).unwrap();
        std::fs::write(dir.join("report.txt"), "old findings\n").unwrap();
    }
    std::fs::write(home.path().join("config.yaml"), "artifactRetention: 30d\n").unwrap();

    let dry = home.ok(&["prune", "--dry-run"]);
    for expired in [
        "artifacts/recent/2020-01-01T00-00-00Z",
        "artifacts/long-gone/2020-01-02T03-04-05-678Z",
    ] {
        assert!(
            dry.contains(&format!("would remove the artifacts {expired} ")),
            "{dry}"
        );
    }
    assert!(dry.contains("(artifactRetention)"), "{dry}");
    assert!(old.exists() && gone.exists(), "a dry run removes nothing");

    let pruned = home.ok(&["prune"]);
    assert!(
        pruned.contains("removed the artifacts artifacts/recent/2020-01-01T00-00-00Z"),
        "{pruned}"
    );
    assert!(!old.exists() && !gone.exists(), "{pruned}");
    assert!(
        !artifacts.join("long-gone").exists(),
        "its last collection went"
    );
    assert_eq!(
        std::fs::read_to_string(young.join("report.txt")).unwrap(),
        "findings\n",
        "a collection younger than the retention stays"
    );
    let again = home.ok(&["prune", "--dry-run"]);
    assert!(!again.contains("artifacts/"), "{again}");
}

/// An agent that, like many real ones, traps SIGTERM and exits 0. It notes
/// in its home that it ran, so a test can see the home survive.
const TRAPS_TERM: &str =
    "echo hello > $HOME/conversation; trap 'exit 0' TERM; while true; do sleep 1; done";

/// The marker of the last session, as the wrapper wrote it.
fn marker(home: &Home, name: &str) -> serde_json::Value {
    let text = std::fs::read_to_string(state_dir(home, name).join("exit.json")).unwrap();
    serde_json::from_str(&text).unwrap()
}

#[test]
fn keeping_an_agent_that_exits_0_on_sigterm_keeps_it() {
    ensure_busybox();
    let home = Home::new();
    launch(&home, "trapper", TRAPS_TERM);
    let container = home.container("trapper");
    let out = home.ok(&["set-phase", "trapper", "kept"]);
    assert!(out.contains("instance/trapper Kept"), "{out}");
    let obj = home.object("trapper");
    assert_eq!(obj["status"]["phase"], "Kept");
    assert_eq!(obj["spec"]["phase"], "Kept");
    let unit = home.path().join("data").join(&container);
    assert_eq!(
        std::fs::read_to_string(unit.join("home/conversation")).unwrap(),
        "hello\n"
    );
    // The marker says who ended it: a stop from outside, whatever the code.
    assert_eq!(marker(&home, "trapper")["reason"], "signal:TERM");
    assert_eq!(marker(&home, "trapper")["exitCode"], 0);
}

#[test]
fn docker_stop_of_an_agent_that_exits_0_restores_it_even_under_clean() {
    ensure_busybox();
    let home = Home::new();
    let repo = support::RoleRepo::new("host-work");
    workspace(&home, "strict", "clean");
    let spec = format!(
        "  workspace: strict\n  command: [sh, -c, {}]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: clone}}]\n",
        serde_json::to_string(TRAPS_TERM).unwrap(),
        repo.path().display()
    );
    home.apply("stopped", &instance_yaml_with("stopped", &spec));
    let container = home.container("stopped");
    let checkout = home.object("stopped")["status"]["mounts"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    let draft = Path::new(&checkout).join("draft.md");
    std::fs::write(&draft, "unfinished").unwrap();
    docker(&["stop", "-t", "5", &container]);
    home.ok(&["controller", "--once"]);
    let obj = home.object("stopped");
    assert_eq!(obj["spec"]["phase"], "Running", "{obj}");
    assert_eq!(obj["status"]["phase"], "Running", "{obj}");
    assert_eq!(obj["status"]["session"]["reason"], "signal:TERM");
    assert!(
        running(&container),
        "a stop from outside is restored (tier 1)"
    );
    assert!(draft.exists(), "the unfinished work is still there");
}

#[test]
fn a_container_that_never_started_has_no_session_outcome() {
    ensure_busybox();
    let home = Home::new();
    let path = home.write_input("fresh.yaml", &instance_yaml_with("fresh", ""));
    let out = home
        .command(&["apply", path.to_str().unwrap()])
        .env("JACKIN_CRASH_AFTER", "create-container")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(86), "the crash was injected");
    let container = home.container("fresh");
    assert!(!running(&container), "created, never started");
    home.ok(&["controller", "--once"]);
    let obj = home.object("fresh");
    assert!(obj["status"]["session"].is_null(), "{obj}");
    assert_eq!(obj["status"]["phase"], "Running");
    assert!(running(&container));
}

#[test]
fn re_applying_the_file_after_the_policy_kept_the_session_changes_nothing() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home, "keeper", "keep");
    let spec = format!(
        "  workspace: keeper\n  command: [sh, -c, {}]\n",
        serde_json::to_string(&format!("{WAIT_THEN_EXIT} 0")).unwrap()
    );
    let file = instance_yaml_with("settled", &spec);
    home.apply("settled", &file);
    exit_and_pass(&home, "settled");
    assert_eq!(home.object("settled")["status"]["phase"], "Kept");
    let container = home.container("settled");
    std::fs::remove_file(state_dir(&home, "settled").join("go")).unwrap();

    // The operator's file is as it was: so is the outcome.
    let out = home.apply("settled", &file);
    assert!(out.contains("instance/settled unchanged"), "{out}");
    assert!(out.contains("instance/settled Kept"), "{out}");
    home.ok(&["controller", "--once"]);
    assert!(!running(&container), "nothing was restarted");
    // `get -o yaml | apply -f -` is a no-op too.
    let yaml = home.ok(&["get", "settled", "-o", "yaml"]);
    let out = home.apply("roundtrip", &yaml);
    assert!(out.contains("instance/settled unchanged"), "{out}");
    assert!(!running(&container));

    // A resume is the operator's own action: it starts a new session.
    let out = home.ok(&["set-phase", "settled", "running"]);
    assert!(out.contains("instance/settled Running"), "{out}");
    assert!(running(&container));
    // ... and re-applying the file afterwards does not undo it.
    home.apply("settled", &file);
    assert!(running(&container));
}

#[test]
fn a_session_the_policy_cleaned_up_is_not_relaunched_by_its_unchanged_file() {
    ensure_busybox();
    let home = Home::new();
    let file = instance_yaml_with(
        "done",
        &format!(
            "  command: [sh, -c, {}]\n",
            serde_json::to_string(&format!("{WAIT_THEN_EXIT} 0")).unwrap()
        ),
    );
    home.apply("done", &file);
    exit_and_pass(&home, "done");
    assert!(
        !home.jackin(&["get", "done"]).status.success(),
        "cleaned up"
    );

    let path = home.write_input("done.yaml", &file);
    let out = home.jackin(&["apply", path.to_str().unwrap()]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stderr}");
    assert!(
        stdout.contains("instance/done unchanged (ended and cleaned up)"),
        "{stdout}"
    );
    assert!(stderr.contains("jackin delete done"), "{stderr}");
    assert!(
        !home.jackin(&["get", "done"]).status.success(),
        "not relaunched"
    );

    // Forgetting the ended session lets the same file start a new one.
    let out = home.ok(&["delete", "done"]);
    assert!(out.contains("forgot its ended session"), "{out}");
    let out = home.apply("done", &file);
    assert!(out.contains("instance/done created"), "{out}");
    assert!(out.contains("instance/done Running"), "{out}");
}

#[test]
fn logs_print_what_the_agent_printed_and_say_when_a_restore_lost_it() {
    ensure_busybox();
    let home = Home::new();
    let spec = "  command: [sh, -c, 'echo first; echo second; exec sleep 3600']\n";
    home.apply("talky", &instance_yaml_with("talky", spec));
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut out = String::new();
    while Instant::now() < deadline && !out.contains("second") {
        out = home.ok(&["logs", "talky"]);
        std::thread::sleep(Duration::from_millis(200));
    }
    assert!(out.contains("first") && out.contains("second"), "{out}");
    let tail = home.ok(&["logs", "talky", "--tail", "1"]);
    assert!(tail.contains("second") && !tail.contains("first"), "{tail}");
    let since = home.ok(&["logs", "talky", "--since", "1h"]);
    assert!(
        since.contains("first") && since.contains("second"),
        "{since}"
    );
    // Tier 2: a new container, a new log, and the command says so.
    docker(&["rm", "-f", &home.container("talky")]);
    home.ok(&["controller", "--once"]);
    let out = home.jackin(&["logs", "talky"]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("made anew by a restore (tier 2)"),
        "{stderr}"
    );
}

/// What `get -o wide` says of `name`'s last session, and `describe`.
fn shown(home: &Home, name: &str) -> (String, String) {
    let wide = home.ok(&["get", name, "-o", "wide"]);
    let described = home.ok(&["describe", name]);
    (wide, described)
}

/// No `SessionOutcome` condition: nothing says the session was lost.
fn not_lost(obj: &serde_json::Value) {
    assert!(
        condition(obj, "SessionOutcome").is_none(),
        "the ending was rewritten as unknown: {obj}"
    );
    assert_ne!(obj["status"]["session"]["source"], "unknown", "{obj}");
}

/// L3: the exit policy `keep` removes the container of a session it has
/// recorded; that removal is jackin's own, not a lost outcome.
#[test]
fn l3_a_clean_exit_kept_by_the_policy_shows_the_agents_exit_code() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home, "hoard", "keep");
    launch_in(&home, "tidy", "hoard", None);
    exit_and_pass(&home, "tidy");
    // Passes after the keep leave the recorded outcome as it is.
    home.ok(&["controller", "--once"]);
    let obj = home.object("tidy");
    assert_eq!(obj["status"]["phase"], "Kept", "{obj}");
    let s = &obj["status"]["session"];
    assert_eq!(
        (
            s["exitCode"].as_i64(),
            s["source"].as_str(),
            s["reason"].as_str()
        ),
        (Some(0), Some("marker"), Some("exited")),
        "{obj}"
    );
    not_lost(&obj);
    let (wide, described) = shown(&home, "tidy");
    assert!(wide.contains("exit 0 (marker)"), "{wide}");
    assert!(
        described.contains("Last session:     exit 0 (marker)"),
        "{described}"
    );
    assert!(!described.contains("unknown"), "{described}");
}

/// L3: `set-phase kept` stops the agent gracefully; its own exit code on
/// SIGTERM is what the session shows.
#[test]
fn l3_set_phase_kept_shows_the_exit_code_the_agent_stopped_with() {
    kept_by_set_phase(
        "obliging",
        "trap 'exit 3' TERM; while true; do sleep 1; done",
        (3, "marker", "signal:TERM"),
        "stopped by jackin to keep (SIGTERM, exit 3)",
    );
}

/// L3: a shell that ignores SIGTERM is killed when the grace period ends:
/// no marker, so the engine's exit code is recorded before the container
/// goes, and never read as unknown afterwards.
#[test]
fn l3_set_phase_kept_of_a_shell_that_ignores_sigterm_shows_the_engines_exit_code() {
    kept_by_set_phase(
        "stubborn",
        "trap '' TERM; while true; do sleep 1; done",
        (137, "engine", "killed"),
        "stopped by jackin to keep (killed, exit 137)",
    );
}

/// Defect R14: codex exits 1 on SIGTERM. After a keep, which stops the
/// container, that exit is jackin's stop, not the agent's ending: `get`
/// and `describe` say "stopped by jackin", the session is kept (never
/// `Crashed`), and it resumes; after the resume the last session still
/// says who stopped it.
#[test]
fn r14_an_exit_1_on_jackins_own_sigterm_reads_as_stopped_by_jackin_and_resumes() {
    ensure_busybox();
    let home = Home::new();
    let name = "codexlike";
    launch(
        &home,
        name,
        "echo up >> $HOME/starts; trap 'exit 1' TERM; while true; do sleep 1; done",
    );
    home.ok(&["set-phase", name, "kept"]);
    home.ok(&["controller", "--once"]);
    let obj = home.object(name);
    assert_eq!(obj["status"]["phase"], "Kept", "{obj}");
    let session = &obj["status"]["session"];
    assert_eq!(session["exitCode"], 1, "{obj}");
    assert_eq!(session["stoppedByJackin"], true, "{obj}");
    not_lost(&obj);
    let (wide, described) = shown(&home, name);
    for shown in [&wide, &described] {
        assert!(
            shown.contains("stopped by jackin to keep (SIGTERM, exit 1)"),
            "{shown}"
        );
        assert!(!shown.contains("Crashed"), "{shown}");
    }

    home.ok(&["set-phase", name, "running"]);
    let container = home.container(name);
    eventually(Duration::from_secs(60), "the session resumed", || {
        running(&container)
    });
    home.ok(&["controller", "--once"]);
    let obj = home.object(name);
    assert_eq!(obj["status"]["phase"], "Running", "{obj}");
    let starts = std::fs::read_to_string(home.unit(name).join("home/starts")).unwrap();
    assert_eq!(starts, "up\nup\n", "started again in the same unit");
    let (wide, described) = shown(&home, name);
    for shown in [&wide, &described] {
        assert!(
            shown.contains("stopped by jackin (SIGTERM, exit 1)"),
            "{shown}"
        );
    }
}

/// Launches `script` as `name`, keeps it with `set-phase kept`, and checks
/// the session recorded (exit code, source, reason) and how `get -o wide`
/// and `describe` show it.
fn kept_by_set_phase(name: &str, script: &str, recorded: (i64, &str, &str), said: &str) {
    ensure_busybox();
    let home = Home::new();
    launch(&home, name, script);
    home.ok(&["set-phase", name, "kept"]);
    home.ok(&["controller", "--once"]);
    let obj = home.object(name);
    assert_eq!(obj["status"]["phase"], "Kept", "{obj}");
    let s = &obj["status"]["session"];
    assert_eq!(
        (
            s["exitCode"].as_i64(),
            s["source"].as_str(),
            s["reason"].as_str()
        ),
        (Some(recorded.0), Some(recorded.1), Some(recorded.2)),
        "{obj}"
    );
    not_lost(&obj);
    let (wide, described) = shown(&home, name);
    assert!(wide.contains(said), "{wide}");
    assert!(described.contains(said), "{described}");
}

/// L3: a sweep that finds the exited agent's container stopped first (and
/// notes the row `Exited`, `ContainerMissing`) does not turn the policy's
/// own removal of it into a lost outcome either.
#[test]
fn l3_a_clean_exit_a_sweep_noted_first_is_kept_with_its_exit_code() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home, "hoard", "keep");
    launch_in(&home, "swept", "hoard", None);
    let container = home.container("swept");
    std::fs::write(state_dir(&home, "swept").join("go"), "").unwrap();
    eventually(Duration::from_secs(60), "the agent to exit", || {
        !running(&container)
    });
    home.ok(&["prune"]);
    let noted = home.object("swept");
    assert_eq!(
        condition(&noted, "Ready").map(|c| c["reason"].clone()),
        Some(serde_json::json!("ContainerMissing")),
        "{noted}"
    );
    home.ok(&["controller", "--once"]);
    home.ok(&["controller", "--once"]);
    let obj = home.object("swept");
    assert_eq!(obj["status"]["phase"], "Kept", "{obj}");
    assert_eq!(obj["status"]["session"]["exitCode"], 0, "{obj}");
    assert_eq!(obj["status"]["session"]["source"], "marker", "{obj}");
    not_lost(&obj);
}

/// The session edge is decided with the rest of the plan (issue 26): after
/// the agent ended its session, the dry run of the unchanged file shows
/// what the apply then does, step for step, and once the ending is
/// recorded both do nothing. A crash stays `Crashed` (where a dry run once
/// said "tier 1 starts it" and the apply took no step); an ending the
/// policy keeps is recorded, settled and its container removed.
#[test]
fn the_dry_run_of_an_ended_session_is_what_the_apply_then_does() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home, "keeps", "keep");
    launch(&home, "crashes", &format!("{WAIT_THEN_EXIT} 3"));
    launch_in(&home, "kept", "keeps", None);
    let cases = [
        (
            "crashes",
            "Crashed",
            &[
                "recording that the session ended with exit code 3 (from the completion marker)",
                "settling the ended session: exit policy",
            ][..],
        ),
        (
            "kept",
            "Kept",
            &[
                "recording that the session ended with exit code 0 (from the completion marker)",
                "settling the ended session: exit policy keep",
                "setting the handled completion marker aside",
                "removing the container",
            ][..],
        ),
    ];
    for (name, phase, steps) in cases {
        let container = home.container(name);
        std::fs::write(state_dir(&home, name).join("go"), "").unwrap();
        eventually(Duration::from_secs(60), "the agent to exit", || {
            !running(&container)
        });
        let file = home.path().join("input").join(format!("{name}.yaml"));
        let file = file.to_str().unwrap();
        let dry = home.ok(&["apply", "--dry-run", file]);
        for step in steps {
            assert!(dry.contains(step), "{name}: {step:?} missing from\n{dry}");
        }
        assert!(!dry.contains("starting the container"), "{name}: {dry}");
        // The dry run changed nothing: the ending is still unrecorded.
        assert!(session(&home, name).is_null(), "{name}");

        home.ok(&["apply", file]);
        let obj = home.object(name);
        assert_eq!(obj["status"]["phase"], phase, "{name}: {obj}");
        assert_eq!(
            obj["status"]["session"]["source"], "marker",
            "{name}: {obj}"
        );
        assert!(!running(&container), "{name}: nothing was restarted");

        // Recorded: now the dry run and the apply both do nothing.
        let again = home.ok(&["apply", "--dry-run", file]);
        assert!(again.contains("  - nothing"), "{name}: {again}");
        home.ok(&["apply", file]);
        assert_eq!(home.object(name)["status"]["phase"], phase, "{name}");
        assert!(!running(&container), "{name}");
    }
}
