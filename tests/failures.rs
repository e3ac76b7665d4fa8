//! Failures that stay failures, and ways out that always work: the gate
//! counts only an instance's own work (L6), a permanent failure stops the
//! retries (F7), an address no engine can have is refused at apply (F4), an
//! instance on an engine that cannot be reached can be deleted (F5), a
//! prune killed half-way is finished by the same command (F3), a prune
//! that could not ask an engine fails (N9), and every label can be
//! selected (F6). Against the real engine and real git
//! repositories; each test is named for the defect it covers.

use std::path::Path;
use std::time::Duration;

use support::{
    Controller, Home, RoleRepo, condition, engine_objects, ensure_busybox, eventually, git,
    instance_yaml, instance_yaml_with, run_within, sidecar_line,
};

/// A generous bound for a command that must not hang: a hang fails the
/// test rather than stalling the suite.
const LIMIT: Duration = Duration::from_secs(300);

/// An instance with a worktree of `repo` at `/workspace/app`.
fn worktree_instance(name: &str, repo: &Path) -> String {
    instance_yaml_with(
        name,
        &format!(
            "  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
            repo.display()
        ),
    )
}

/// Commits a new file in `checkout`, as the agent would.
fn commit_in(checkout: &Path, file: &str) {
    std::fs::write(checkout.join(file), file).unwrap();
    git(checkout, &["add", file]);
    git(
        checkout,
        &[
            "-c",
            "user.email=agent@jackin.dev",
            "-c",
            "user.name=agent",
            "commit",
            "--quiet",
            "-m",
            file,
        ],
    );
}

/// L6: two instances on one repository. The first has committed work, and
/// is cleaned up with it acknowledged: its scratch branch stays in the
/// repository, holding the commit. The second, which did nothing, is then
/// purged without a question: another instance's branch is not its work.
#[test]
fn l6_cleaning_one_instance_up_never_makes_anothers_purge_need_force() {
    ensure_busybox();
    let home = Home::new();
    let repo = RoleRepo::new("shared-repo");
    home.apply("first", &worktree_instance("first", repo.path()));
    home.apply("second", &worktree_instance("second", repo.path()));
    let first_container = home.container("first");
    commit_in(&home.checkout("first"), "firsts-work");

    let out = home.ok(&["delete", "first", "--force"]);
    assert!(out.ends_with("instance/first purged\n"), "{out}");
    let kept = format!("jackin/scratch/{first_container}");
    assert!(
        !repo.git(&["branch", "--list", &kept]).is_empty(),
        "the first instance's branch, with its commit, is kept"
    );

    // Refreshes the second's status, then purges it without --force.
    home.ok(&["controller", "--once"]);
    let describe = home.ok(&["describe", "second"]);
    assert!(!describe.contains(&kept), "{describe}");
    let out = home.within(LIMIT, &["delete", "second"]);
    assert!(
        out.status.success(),
        "the purge needed --force: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stdout).ends_with("instance/second purged\n"),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(
        !repo.git(&["branch", "--list", &kept]).is_empty(),
        "nobody's purge took the first's branch"
    );
}

/// F7: a start the engine keeps refusing (the image's user is not in its
/// `/etc/passwd`: the runtime refuses every start, which Docker reports as a
/// server error) ends `Failed` within a bounded number of attempts, with the
/// cause in the condition, however long the command would wait; a second
/// apply of the same file tries nothing; `set-phase running` tries again.
#[test]
fn f7_a_start_the_engine_keeps_refusing_ends_failed_after_bounded_attempts() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("no-such-user");
    let dockerfile = role.path().join("Dockerfile");
    let mut text = std::fs::read_to_string(&dockerfile).unwrap();
    text.push_str("USER nosuchuser\n");
    std::fs::write(&dockerfile, text).unwrap();
    role.commit_marker("no-such-user, as the image's user");
    let yaml = role
        .instance_yaml("refused")
        .replace("  agent: shell\n", "  agent: shell\n  hostUser: false\n");
    let input = home.write_input("refused.yaml", &yaml);
    let input = input.to_str().unwrap();

    let out = home.within(LIMIT, &["apply", "--timeout", "10m", input]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("stopped trying"), "{stderr}");
    assert!(
        stderr.contains("unable to find user nosuchuser"),
        "{stderr}"
    );
    // Three attempts: two retries, however long the command would wait.
    assert_eq!(stderr.matches("retrying in").count(), 2, "{stderr}");
    let obj = home.object("refused");
    assert_eq!(obj["status"]["phase"], "Failed", "{obj}");
    assert_eq!(obj["status"]["failures"]["attempts"], 3, "{obj}");
    let ready = condition(&obj, "Ready").unwrap();
    let message = ready["message"].as_str().unwrap();
    assert!(message.contains("unable to find user"), "{message}");
    assert!(message.contains("set-phase refused running"), "{message}");

    // Given up on: the same file again tries nothing.
    let again = home.within(LIMIT, &["apply", "--timeout", "10m", input]);
    let stderr = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{stderr}");
    assert!(
        !stderr.contains("instance/refused: ["),
        "a step ran: {stderr}"
    );
    assert!(stderr.contains("stopped trying"), "{stderr}");

    // The operator asks again: the loop tries again, as many times.
    let resumed = home.within(
        LIMIT,
        &["set-phase", "refused", "running", "--timeout", "10m"],
    );
    let stderr = String::from_utf8_lossy(&resumed.stderr);
    assert_eq!(resumed.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.matches("retrying in").count(), 2, "{stderr}");
    assert!(stderr.contains("stopped trying"), "{stderr}");
    let obj = home.object("refused");
    assert_eq!(obj["status"]["failures"]["attempts"], 3, "{obj}");
}

/// F7: under the controller, a start runc refuses (a sidecar whose command
/// does not exist in its image) is tried a bounded number of times, not for
/// as long as anyone waits; `set-phase running` makes it try again.
#[test]
fn f7_the_controller_stops_retrying_a_start_runc_refuses_until_resumed() {
    ensure_busybox();
    let home = Home::new();
    let spec = sidecar_line("helper").replace("command: [sleep, \"3600\"]", "command: [/nope]");
    home.record("refused", &instance_yaml_with("refused", &spec));
    let mut controller = Controller::start(&home, &[]);
    let tries = |controller: &Controller| controller.log().matches("reconcile failed").count();
    eventually(Duration::from_secs(120), "the controller gives up", || {
        controller.log().contains("the last try")
    });
    let given_up = tries(&controller);
    assert_eq!(given_up, 3, "{}", controller.log());
    let obj = home.object("refused");
    assert_eq!(obj["status"]["phase"], "Failed", "{obj}");
    let message = condition(&obj, "Ready").unwrap()["message"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(message.contains("/nope"), "{message}");
    assert!(message.contains("stopped trying"), "{message}");
    // Backing off from 1 s would have tried several more times by now.
    std::thread::sleep(Duration::from_secs(20));
    assert_eq!(tries(&controller), given_up, "{}", controller.log());

    home.ok(&["set-phase", "refused", "running", "--no-wait"]);
    eventually(
        Duration::from_secs(120),
        "the controller tries again",
        || tries(&controller) > given_up,
    );
    controller.kill();
}

/// F7: a docker context that does not exist can never be reached: the
/// instance is `Failed` at once, with the cause; after three attempts in a
/// row an apply of the same file tries nothing more.
#[test]
fn f7_a_missing_context_fails_the_instance_at_once_and_is_given_up_on() {
    let home = Home::new();
    let yaml = instance_yaml_with("nowhere", "  engine: no-such-context\n");
    let input = home.write_input("nowhere.yaml", &yaml);
    for attempt in 1..=3 {
        let out = home.within(
            LIMIT,
            &["apply", "--timeout", "10m", input.to_str().unwrap()],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{stderr}");
        assert!(stderr.contains("no-such-context"), "{stderr}");
        assert!(!stderr.contains("retrying in"), "retried: {stderr}");
        let obj = home.object("nowhere");
        assert_eq!(obj["status"]["phase"], "Failed", "{obj}");
        assert_eq!(obj["status"]["failures"]["attempts"], attempt, "{obj}");
    }
    let out = home.within(
        LIMIT,
        &["apply", "--timeout", "10m", input.to_str().unwrap()],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("stopped trying"), "{stderr}");
    assert_eq!(home.object("nowhere")["status"]["failures"]["attempts"], 3);
}

/// F5: an instance on a docker context that does not exist never made
/// anything on an engine: its delete purges it at once, saying so; and so
/// for an instance that never launched when the engine does not answer.
#[test]
fn f5_an_instance_on_a_missing_context_deletes_at_once() {
    let home = Home::new();
    home.record(
        "nowhere",
        &instance_yaml_with("nowhere", "  engine: no-such-context\n"),
    );
    let out = home.within(LIMIT, &["delete", "nowhere", "--timeout", "10m"]);
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(
        stdout.contains("instance/nowhere purged without engine no-such-context"),
        "{stdout}"
    );
    assert!(stdout.contains("never made anything there"), "{stdout}");
    let gone = home.jackin(&["get", "nowhere"]);
    assert_eq!(gone.status.code(), Some(1), "the instance is gone");

    // The same when the engine it would run on does not answer at all.
    home.record("unlaunched", &instance_yaml("unlaunched"));
    let mut delete = home.command(&["delete", "unlaunched", "--timeout", "10m"]);
    delete.env("DOCKER_HOST", "unix:///nonexistent/docker.sock");
    let out = run_within(delete, LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("instance/unlaunched purged without engine default"),
        "{stdout}"
    );
    assert_eq!(home.jackin(&["get", "unlaunched"]).status.code(), Some(1));
}

/// F4: an engine address that no engine can have is refused at apply,
/// saying why, and nothing is written.
#[test]
fn f4_an_engine_address_no_engine_can_have_is_refused_at_apply() {
    let home = Home::new();
    for (engine, says) in [
        ("tcp://127.0.0.1:99999", "invalid port \"99999\""),
        ("unix:///dev/zero", "/dev/zero is not a socket"),
    ] {
        let yaml = instance_yaml_with("bad", &format!("  engine: {engine}\n"));
        let input = home.write_input("bad.yaml", &yaml);
        let before = home.snapshot();
        let out = home.within(LIMIT, &["apply", "--no-wait", input.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(1), "{engine}: {stderr}");
        assert!(stderr.contains(says), "{engine}: {stderr}");
        assert!(stderr.contains("spec.engine"), "{engine}: {stderr}");
        home.assert_unchanged(&before, engine);
        // Only the run log that names the failure.
        assert!(
            !home.path().join("data/instances.json").exists(),
            "{engine}: no store was made"
        );
    }
}

/// F6: a label value with a terminal escape is refused at apply (it could
/// never be selected with `-l`), shown escaped, and nothing is written.
#[test]
fn f6_a_label_value_with_an_escape_is_refused_at_apply() {
    let home = Home::new();
    let yaml = instance_yaml("painted").replace(
        "metadata:\n  name: painted\n",
        "metadata:\n  name: painted\n  labels:\n    team: \"\\e[31m\"\n",
    );
    let input = home.write_input("painted.yaml", &yaml);
    let before = home.snapshot();
    let out = home.within(LIMIT, &["apply", "--no-wait", input.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("metadata.labels.team"), "{stderr}");
    assert!(stderr.contains("not a label value"), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "the escape reached the terminal"
    );
    home.assert_unchanged(&before, "a refused apply");
    // What is applied can be selected.
    let fine = instance_yaml("plain").replace(
        "metadata:\n  name: plain\n",
        "metadata:\n  name: plain\n  labels:\n    team: a.b-c_d\n",
    );
    home.record("plain", &fine);
    let listed = home.ok(&["get", "-l", "team=a.b-c_d"]);
    assert!(listed.contains("plain"), "{listed}");
}

/// F3: `apply --prune` killed mid-prune (right after it marked the pruned
/// instance `Purging`, as a SIGKILL there would), then the same command:
/// it finishes the prune, leaving nothing of the instance.
#[test]
fn f3_the_same_apply_prune_finishes_a_prune_killed_half_way() {
    ensure_busybox();
    let home = Home::new();
    let dir = tempfile::Builder::new()
        .prefix("jackin-policy-")
        .tempdir()
        .unwrap();
    for name in ["stays", "goes"] {
        std::fs::write(
            dir.path().join(format!("{name}.yaml")),
            instance_yaml_with(name, "  command: [sleep, \"3600\"]\n"),
        )
        .unwrap();
    }
    let dir_arg = dir.path().to_str().unwrap();
    home.ok(&["apply", "--prune", "-f", dir_arg]);
    let uid = home.object("goes")["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::remove_file(dir.path().join("goes.yaml")).unwrap();

    let killed = home
        .command(&["apply", "--prune", "-f", dir_arg])
        .env("JACKIN_CRASH_AFTER", "stamp-purging")
        .output()
        .unwrap();
    assert_eq!(
        killed.status.code(),
        Some(86),
        "the crash was injected: {}",
        String::from_utf8_lossy(&killed.stderr)
    );
    assert_eq!(home.object("goes")["status"]["phase"], "Purging");

    let out = home.within(LIMIT, &["apply", "--prune", "-f", dir_arg]);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("instance/goes pruned earlier"), "{stdout}");
    assert!(stdout.contains("instance/goes purged"), "{stdout}");
    assert_eq!(home.jackin(&["get", "goes"]).status.code(), Some(1));
    assert_eq!(engine_objects(&uid), (vec![], vec![]), "nothing is left");
    assert_eq!(home.object("stays")["status"]["phase"], "Running");
}

/// N9 (issue 53): `prune` against an engine that takes the connection and
/// never answers fails, naming it, as `logs` and `exec` do; before, it
/// said "nothing to prune" and succeeded. The engine is an instance's
/// (`spec.engine`): a socket this test listens on, holding every
/// connection it takes. The rest is still swept (here an orphan lock).
#[test]
fn n9_prune_against_an_engine_that_never_answers_fails_naming_it() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("hung.sock");
    let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
    // Detached: it lives as long as the test process, taking and holding.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming().flatten() {
            held.push(stream);
        }
    });
    let address = format!("unix://{}", socket.display());
    home.record(
        "far",
        &instance_yaml_with("far", &format!("  engine: {address}\n")),
    );
    // Engines are swept for a home that made engine objects: this one has.
    home.home_id();
    let data = home.path().join("data");
    std::fs::write(data.join("jk-22222222-gone.lock"), "").unwrap();
    let out = run_within(home.command(&["prune", "--dry-run"]), LIMIT);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stderr.contains(&format!(
            "error: engine {address} could not be asked, so nothing on it was swept: the Docker \
             engine at {address} did not answer within 60 s"
        )),
        "{stderr}"
    );
    assert!(stdout.contains("would remove orphan lock"), "{stdout}");
    assert!(!stdout.contains("nothing to prune"), "{stdout}");
}
