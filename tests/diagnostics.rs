//! Run logs: a command that fails prints its run handle, and the run log
//! it names says which step failed and why, without a secret's value.

use support::{Home, ensure_busybox, instance_yaml_with};

#[test]
fn a_failing_apply_names_its_run_log_which_names_the_step_and_holds_no_secret() {
    ensure_busybox();
    let home = Home::new();
    let env_canary = "canary-env-R5t8";
    let file_canary = "canary-file-K2m6";
    let secret_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret_file.path(), format!("{file_canary}\n")).unwrap();
    // Two secrets resolve; the third is not set, so the container cannot be
    // made.
    let yaml = instance_yaml_with(
        "leaky",
        &format!(
            "  command: [sleep, \"3600\"]\n  env:\n  \
             - {{name: FROM_ENV, valueFrom: {{hostEnv: JACKIN_TEST_CANARY}}}}\n  \
             - {{name: FROM_FILE, valueFrom: {{file: {}}}}}\n  \
             - {{name: MISSING, valueFrom: {{hostEnv: JACKIN_TEST_SURELY_UNSET}}}}\n",
            secret_file.path().display()
        ),
    );
    let path = home.write_input("leaky.yaml", &yaml);
    // With every trace: --debug and -vvv.
    let out = home
        .command(&["--debug", "-vvv", "apply", path.to_str().unwrap()])
        .env("JACKIN_TEST_CANARY", env_canary)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");

    let handle = stderr
        .lines()
        .find_map(|line| line.strip_prefix("run: "))
        .unwrap_or_else(|| panic!("no run handle:\n{stderr}"));
    let (id, log) = handle
        .split_once(" (log: ")
        .unwrap_or_else(|| panic!("no log in the handle: {handle}"));
    let log = std::path::Path::new(log.strip_suffix(')').unwrap());
    assert_eq!(
        log,
        home.path()
            .join("data/diagnostics/runs")
            .join(format!("{id}.jsonl"))
    );
    let text = std::fs::read_to_string(log).unwrap();
    let lines: Vec<serde_json::Value> = text
        .lines()
        .map(|line| serde_json::from_str(line).expect("one JSON object a line"))
        .collect();
    let failed = lines
        .iter()
        .find(|l| l["message"] == "failed" && l["instance"] == "leaky")
        .unwrap_or_else(|| panic!("no failure breadcrumb:\n{text}"));
    assert_eq!(failed["reason"], "SecretUnavailable", "{text}");
    assert!(
        failed["failed_step"]
            .as_str()
            .is_some_and(|step| !step.is_empty()),
        "{text}"
    );
    // The steps it took are there, the last one the step that failed.
    let last_step = lines
        .iter()
        .rfind(|l| l["message"] == "step" && l["instance"] == "leaky")
        .unwrap_or_else(|| panic!("no step breadcrumb:\n{text}"));
    assert_eq!(last_step["step"], "create-container", "{text}");
    assert!(
        lines
            .iter()
            .any(|l| l["message"] == "started" && l["command"] == "apply")
    );
    // --debug added jackin's own traces.
    assert!(lines.iter().any(|l| l["target"] != "jackin::run"), "{text}");

    // The sweeps leave the run logs where they are: they are no unit.
    home.ok(&["prune"]);
    assert!(log.exists());
    assert!(!home.path().join("data/.orphaned").exists());

    // No secret value anywhere in the run logs.
    for entry in std::fs::read_dir(log.parent().unwrap()).unwrap() {
        let text = std::fs::read_to_string(entry.unwrap().path()).unwrap();
        assert!(!text.contains(env_canary), "{text}");
        assert!(!text.contains(file_canary), "{text}");
    }
}

#[test]
fn run_logs_are_kept_to_the_count_the_home_sets() {
    let home = Home::new();
    std::fs::write(home.path().join("config.yaml"), "runLogs: {keep: 2}\n").unwrap();
    // With --debug each writes a run log (the engine it connected to).
    for _ in 0..4 {
        home.ok(&["--debug", "prune"]);
    }
    let runs = home.path().join("data/diagnostics/runs");
    let left: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(left.len(), 2, "{left:?}");
    for name in &left {
        let text = std::fs::read_to_string(runs.join(name)).unwrap();
        assert!(text.contains("\"command\":\"prune\""), "{text}");
    }
}

#[test]
fn a_command_that_reads_or_changes_nothing_leaves_no_run_log() {
    let home = Home::new();
    home.ok(&["get", "instances"]);
    home.ok(&["prune"]);
    home.ok(&["controller", "--once"]);
    // Failed before it did anything: its error says it all.
    let stderr = home.fails(&["delete", "nothing-here"]);
    assert!(!stderr.contains("run: "), "{stderr}");
    assert!(!home.path().join("data/diagnostics").exists());
}

/// `jackin doctor` checks what sessions need, as a start would, and says
/// what to do: every engine answers (one an instance names does not: it
/// fails, naming who names it), git can be confined, the home has room,
/// and the logins are here: under `token`, the variable missing from this
/// shell is named, and once it is set it is found, its value never shown.
/// It writes nothing.
#[test]
fn doctor_checks_engines_confinement_room_and_logins_and_writes_nothing() {
    let home = Home::new();
    let yaml = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: tok}\n\
                spec: {authForward: token}\n---\n\
                apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {name: keyed}\n\
                spec: {workspace: tok, role: {name: r}, agent: claude, image: busybox, \
                phase: Kept}\n---\n\
                apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {name: far}\n\
                spec: {role: {name: r}, agent: shell, image: busybox, phase: Kept, \
                engine: 'tcp://127.0.0.1:1'}\n";
    let input = home.write_input("doctor.yaml", yaml);
    home.ok(&["apply", "--no-wait", input.to_str().unwrap()]);
    let before = home.snapshot();
    let out = home
        .command(&["doctor"])
        .env_remove("ANTHROPIC_API_KEY")
        .env_remove("CLAUDE_CODE_OAUTH_TOKEN")
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(1), "{said}");
    for expected in [
        "ok    engine ",
        "FAIL  engine tcp://127.0.0.1:1: ",
        "change the spec.engine that names it (instance/far)",
        "ok    landlock: ",
        "free",
        "warn  login claude (keyed): no token",
        "export CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_API_KEY",
    ] {
        assert!(said.contains(expected), "{expected:?} in:\n{said}");
    }
    let key = "sk-doctor-canary-7Qx";
    let out = home
        .command(&["doctor", "-o", "json"])
        .env("ANTHROPIC_API_KEY", key)
        .output()
        .unwrap();
    let said = String::from_utf8_lossy(&out.stdout);
    let findings: serde_json::Value = serde_json::from_str(&said).expect("doctor prints JSON");
    let found =
        findings.as_array().unwrap().iter().any(|f| {
            f["level"] == "ok" && f["said"].as_str().unwrap().contains("ANTHROPIC_API_KEY")
        });
    assert!(found, "{said}");
    assert!(!said.contains(key), "the key's value was shown");
    home.assert_unchanged(&before, "doctor");
}
