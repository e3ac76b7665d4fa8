//! `jackin attach` driven through a real terminal (tmux): the agent is a
//! small script that reads a line and exits, and the plain end-of-session
//! screens are answered with keystrokes, against the real engine.

use std::path::Path;
use std::time::{Duration, Instant};

use support::terminal::Terminal;
use support::{
    Home, RoleRepo, applied_workspace, condition, ensure_busybox, eventually, git,
    instance_yaml_with,
};

/// A workspace that declares the role `tester` (the busybox image), so
/// that a new session starts from it.
fn workspace_with_the_tester_role(home: &Home, name: &str) {
    let yaml = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec:\n  \
         roles: [{{name: tester, image: {}}}]\n",
        support::busybox_image()
    );
    home.apply(&format!("ws-{name}"), &yaml);
}

/// The discarded work of `instance` is listed, and comes back with the
/// draft the fake agent left in its checkout.
fn restores_the_draft(home: &Home, instance: &str, scratch: &Path) {
    let listed = home.ok(&["get", "discarded"]);
    assert!(
        listed.contains(instance) && listed.contains("/workspace/app"),
        "{listed}"
    );
    let to = scratch.join(format!("restored-{instance}"));
    home.ok(&["restore-discarded", instance, "--to", to.to_str().unwrap()]);
    assert_eq!(
        std::fs::read_to_string(to.join("draft.md")).unwrap(),
        "draft\n"
    );
}

/// `launch --clean` cleans the session up when it ends, whatever the
/// workspace's policy: its unfinished work is saved first (issue 24), and
/// comes back. The session is named as its `--from` file names it.
#[test]
fn launch_clean_saves_what_it_discards() {
    ensure_busybox();
    let home = Home::new();
    applied_workspace(&home, "desk");
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let template = instance_yaml_with(
        "drafting",
        &format!(
            "  command: [sh, -c, {}]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
            serde_json::to_string(AGENT).unwrap(),
            host.display()
        ),
    );
    let template = home.write_input("template.yaml", &template);
    let term = Terminal::start(
        &home,
        &format!(
            "launch -w desk -r tester -a shell --clean --from {}",
            template.display()
        ),
    );
    term.wait_for(
        "new session instance/drafting: tester (shell) · workspace desk",
        1,
    );
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_until("done", "cleaned up");
    drop(term);
    assert!(!home.jackin(&["get", "drafting"]).status.success());
    restores_the_draft(&home, "drafting", scratch.path());
}

/// Records (without converging) an instance running the fake agent on an
/// isolated worktree of `host`.
fn record_talker(home: &Home, name: &str, host: &Path) {
    record_script(home, name, AGENT, host);
}

/// The fake agent: reads a line, remembers it in its home, leaves
/// unfinished work in the worktree, and exits 0.
const AGENT: &str = "echo ready; read line; echo \"$line\" >> $HOME/notes; \
                     echo draft > /workspace/app/draft.md; exit 0";

#[test]
fn return_keep_resume_and_clean_up_through_the_plain_screens() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let host_branches = git(
        &host,
        &["for-each-ref", "--format=%(refname)", "refs/heads/"],
    );
    let yaml = instance_yaml_with(
        "talker",
        &format!(
            "  command: [sh, -c, {}]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
            serde_json::to_string(AGENT).unwrap(),
            host.display()
        ),
    );
    home.record("talker", &yaml);

    let term = Terminal::start(&home, "attach talker");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_line("first");
    term.pass_screen_a(1);
    term.wait_for("Choice [1]:", 1);
    let screen = term.screen();
    assert!(
        screen.contains("This session has unfinished work"),
        "{screen}"
    );
    assert!(screen.contains("uncommitted   1 file"), "{screen}");
    assert!(screen.contains("?? draft.md"), "{screen}");
    assert!(
        screen.contains("1 isolated mount has unfinished work."),
        "{screen}"
    );
    assert!(screen.contains("1) Return to agent"), "{screen}");

    // Return to agent: a new session in the same unit.
    term.type_line("1");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 2);
    term.type_line("second");
    term.pass_screen_a(2);
    term.wait_for("Choice [1]:", 2);
    // Exit and keep.
    term.type_line("2");
    term.wait_for("kept;", 1);
    let obj = home.object("talker");
    assert_eq!(obj["status"]["phase"], "Kept");
    let container = home.container("talker");
    let unit = home.path().join("data").join(&container);
    assert_eq!(
        std::fs::read_to_string(unit.join("home/notes")).unwrap(),
        "first\nsecond\n"
    );
    drop(term);

    // Resume: Screen D shows the preserved work, named, and waits for a
    // key; then the same identity and unit, the home as it was.
    let term = Terminal::start(&home, "attach talker");
    term.wait_for("Press Enter to resume", 1);
    let screen = term.screen();
    assert!(screen.contains("jackin' · resume talker"), "{screen}");
    assert!(screen.contains("Restoring instance/talker"), "{screen}");
    assert!(screen.contains("?? draft.md"), "{screen}");
    assert!(
        !screen.contains("Ctrl-P Ctrl-Q detaches"),
        "passed without a key: {screen}"
    );
    term.keys(&["Enter"]);
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    assert_eq!(home.container("talker"), container, "a new identity");
    term.type_line("third");
    term.pass_screen_a(1);
    term.wait_for("Choice [1]:", 1);
    assert_eq!(
        std::fs::read_to_string(unit.join("home/notes")).unwrap(),
        "first\nsecond\nthird\n"
    );
    // Exit and clean up: nothing is left, the host repository untouched,
    // and the draft the session left was saved first (issue 24).
    term.type_line("3");
    term.wait_for("cleaned up", 1);
    assert!(!home.jackin(&["get", "talker"]).status.success());
    assert!(!unit.exists());
    restores_the_draft(&home, "talker", scratch.path());
    assert_eq!(
        git(
            &host,
            &["for-each-ref", "--format=%(refname)", "refs/heads/"]
        ),
        host_branches
    );
    assert_eq!(git(&host, &["status", "--porcelain"]), "");
}

/// "Return to agent" brings back the agent's own conversation, not a new
/// one: the fake claude is resumed by the id it was started with.
#[test]
fn return_to_agent_resumes_the_agents_conversation() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let role = RoleRepo::with_fake_agents();
    let mount = format!(
        "  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
        host.display()
    );
    home.record("talk", &role.agent_instance_yaml("talk", "claude", &mount));
    let term = Terminal::start(&home, "attach talk");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    let unit = home.path().join("data").join(home.container("talk"));
    let log = unit.join("home/agent-starts.log");
    let starts = |count: usize| {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            if text.lines().count() >= count || Instant::now() > deadline {
                return text;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    };
    starts(1);
    let obj = home.object("talk");
    let id = obj["status"]["conversation"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    // Unfinished work in the checkout, so that the end of the session asks.
    let checkout = obj["status"]["mounts"][0]["path"].as_str().unwrap();
    std::fs::write(Path::new(checkout).join("draft.md"), "draft\n").unwrap();
    term.type_line("hello");
    term.type_line("exit 0");
    term.pass_screen_a(1);
    term.wait_for("Choice [1]:", 1);
    term.type_line("1");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 2);
    assert_eq!(
        starts(2),
        format!("claude minted {id}\nclaude resumed {id}\n")
    );
    // Neither start asked whether the checkout is trusted (defect R1 of
    // shared/defects/2026-11-27.md): jackin's `trust` setting answered.
    assert!(
        !term.screen().contains("Quick safety check"),
        "{}",
        term.screen()
    );
    let account = std::fs::read_to_string(unit.join("home/.claude/.claude.json")).unwrap();
    assert!(account.contains("\"/workspace/app\""), "{account}");
    // The agent works in its checkout, where claude keys its transcripts.
    let transcript = std::fs::read_to_string(
        unit.join(format!("home/.claude/projects/-workspace-app/{id}.jsonl")),
    )
    .unwrap();
    assert_eq!(transcript, "started minted\nhello\nstarted resumed\n");
}

/// A role build shows live progress during `launch`, stage by stage, with
/// the builder's output.
#[test]
fn launch_shows_the_stages_and_the_build_as_they_happen() {
    ensure_busybox();
    let home = Home::new();
    applied_workspace(&home, "desk");
    let role = RoleRepo::new("slow");
    // A build step that takes a moment, so the screen can show it.
    let dockerfile = std::fs::read_to_string(role.path().join("Dockerfile")).unwrap();
    std::fs::write(
        role.path().join("Dockerfile"),
        dockerfile.replace(
            "COPY marker /marker\n",
            "COPY marker /marker\nRUN [\"/bin/sleep\", \"4\"]\n",
        ),
    )
    .unwrap();
    role.commit_marker("slow build");
    let template = home.write_input("template.yaml", &role.instance_yaml("template"));
    let launch = format!(
        "launch -w desk -r {} -a shell --from {}",
        role.role,
        template.display()
    );
    let term = Terminal::start_as(&home, &launch, "xterm-256color");
    term.wait_for("[role] pinning the launch recipe", 1);
    // The builder's latest line follows the step while it runs.
    term.wait_for("[role] pinning the launch recipe · ", 1);
    term.wait_for("✓ instance/", 1);
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    let screen = term.screen();
    assert!(
        screen.contains("[container] starting the container"),
        "{screen}"
    );
}

#[test]
fn launch_offers_resume_or_new_and_resume_reuses_the_identity() {
    ensure_busybox();
    let home = Home::new();
    applied_workspace(&home, "desk");
    let agent = "echo ready; read line; echo \"$line\" >> $HOME/notes; exit 0";
    let template = instance_yaml_with(
        "first",
        &format!(
            "  command: [sh, -c, {}]\n",
            serde_json::to_string(agent).unwrap()
        ),
    );
    let template = home.write_input("template.yaml", &template);
    let launch = "launch -w desk -r tester -a shell";

    // Nothing to resume: a new session, kept when it ends (--keep).
    let term = Terminal::start(
        &home,
        &format!("{launch} --keep --from {}", template.display()),
    );
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_line("one");
    term.wait_for("ended: Kept", 1);
    drop(term);
    let container = home.container("first");

    // Screen C: start new first, with the name it would get, then the kept
    // session; resume it.
    // (--keep counts for one launch's session: this resume says it again.)
    let term = Terminal::start(&home, &format!("{launch} --keep"));
    term.wait_for("Choice [1]:", 1);
    let screen = term.screen();
    assert!(
        screen.contains("1) Start new session — a fresh instance, tester-1"),
        "{screen}"
    );
    assert!(screen.contains("2) Resume first"), "{screen}");
    assert!(screen.contains("clean"), "{screen}");
    term.type_line("2");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_line("two");
    term.wait_for("ended: Kept", 1);
    drop(term);
    assert_eq!(home.container("first"), container, "the same identity");
    let notes = home.path().join("data").join(&container).join("home/notes");
    assert_eq!(std::fs::read_to_string(&notes).unwrap(), "one\ntwo\n");

    // Start new: the workspace declares no role, so from the most recent
    // healthy session's spec; under the default policy a clean exit leaves
    // nothing of it.
    let term = Terminal::start(&home, launch);
    term.wait_for("Choice [1]:", 1);
    term.type_line("1");
    term.wait_for(
        "new session instance/tester-1: tester (shell) · workspace desk, from instance/first's spec",
        1,
    );
    term.wait_for("instance/tester-1 created", 1);
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_line("three");
    term.wait_for("cleaned up", 1);
    assert!(!home.jackin(&["get", "tester-1"]).status.success());
    assert_eq!(home.object("first")["status"]["phase"], "Kept");
}

/// `launch --keep` counts for the session that launch starts or resumes,
/// never for a later one (SK-P5): a later `launch` that resumes it, or an
/// `attach`, without the flag, leaves its end to the workspace's policy
/// (here `clean`), whether that launch's session was settled (kept) or
/// ended unsettled (a crash).
#[test]
fn launch_keep_counts_for_that_launchs_session_only() {
    ensure_busybox();
    let home = Home::new();
    let workspace = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: tidy}}\nspec:\n  \
         exitPolicy: clean\n  roles: [{{name: tester, image: {}}}]\n",
        support::busybox_image()
    );
    home.apply("ws-tidy", &workspace);
    let agent =
        "  command: [sh, -c, \"echo ready; read line; [ $line = crash ] && exit 3; exit 0\"]\n";
    let launch = "launch -w tidy -r tester -a shell";
    for (name, ending) in [("first", "Kept"), ("second", "Crashed")] {
        let template = home.write_input(&format!("{name}.yaml"), &instance_yaml_with(name, agent));
        let term = Terminal::start(
            &home,
            &format!(
                "{launch} --keep --name {name} --from {}",
                template.display()
            ),
        );
        term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
        let line = if ending == "Crashed" { "crash" } else { "done" };
        term.type_until(line, &format!("instance/{name} ended: {ending}"));
        drop(term);
        assert_eq!(home.object(name)["status"]["phase"], ending);
    }

    // A launch that resumes the kept session, without --keep.
    let term = Terminal::start(&home, launch);
    term.wait_for("Choice [1]:", 1);
    assert!(term.screen().contains("Resume first"), "{}", term.screen());
    let pick = if term.screen().contains("2) Resume first") {
        "2"
    } else {
        "3"
    };
    term.type_line(pick);
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_until("done", "instance/first ended cleanly and was cleaned up");
    drop(term);
    assert!(!home.jackin(&["get", "first"]).status.success());

    // An attach that resumes the crashed one.
    let term = Terminal::start(&home, "attach second");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_until("done", "instance/second ended cleanly and was cleaned up");
    drop(term);
    assert!(!home.jackin(&["get", "second"]).status.success());
}

#[test]
fn the_rich_screens_show_the_work_and_take_arrow_keys() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    record_talker(&home, "fancy", &host);

    let term = Terminal::start_as(&home, "attach fancy", "xterm-256color");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_line("hello");
    // Screen A: the evidence, with footer-only hints.
    term.wait_for("Review the above before choosing", 1);
    let screen = term.screen();
    assert!(
        screen.contains("jackin'") && screen.contains("· session ended"),
        "{screen}"
    );
    assert!(screen.contains("?? draft.md"), "{screen}");
    assert!(screen.contains("Enter continue · Ctrl-C abort"), "{screen}");
    assert!(!screen.contains("Enter select"), "{screen}");
    term.keys(&["Enter"]);
    // Screen B: the forced choice, Return to agent selected first.
    term.wait_for("Exit and clean up", 1);
    let screen = term.screen();
    assert!(screen.contains("▸ Return to agent"), "{screen}");
    assert!(
        screen.contains("↑/↓ navigate · Enter select · Ctrl-C abort"),
        "{screen}"
    );
    term.keys(&["Down", "Down"]);
    term.wait_for("▸ Exit and clean up", 1);
    term.keys(&["Enter"]);
    term.wait_for("cleaned up", 1);
    assert!(!home.jackin(&["get", "fancy"]).status.success());
}

#[test]
fn a_small_terminal_gets_the_plain_screens() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    record_talker(&home, "small", &host);
    let term = Terminal::start_as(&home, "attach small", "xterm-256color");
    term.resize(70, 20);
    term.wait_for("Ctrl-P Ctrl-Q", 1);
    term.type_line("hi");
    term.pass_screen_a(1);
    term.wait_for("Choice [1]:", 1);
    assert!(!term.screen().contains("Filter:"), "{}", term.screen());
    term.type_line("2");
    term.wait_for("kept;", 1);
    assert_eq!(home.object("small")["status"]["phase"], "Kept");
}

#[test]
fn resuming_a_checkout_with_unfinished_work_shows_it_first() {
    ensure_busybox();
    let home = Home::new();
    applied_workspace(&home, "desk");
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let yaml = instance_yaml_with(
        "paused",
        &format!(
            "  workspace: desk\n  command: [sh, -c, {}]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
            serde_json::to_string(AGENT).unwrap(),
            host.display()
        ),
    );
    home.apply("paused", &yaml);
    let checkout = home.object("paused")["status"]["mounts"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(Path::new(&checkout).join("extra.md"), "x").unwrap();
    home.ok(&["set-phase", "paused", "kept"]);

    let term = Terminal::start(&home, "launch -w desk -r tester -a shell");
    term.wait_for("Choice [1]:", 1);
    assert!(
        term.screen().contains("2) Resume paused"),
        "{}",
        term.screen()
    );
    assert!(term.screen().contains("1 file dirty"), "{}", term.screen());
    // Screen D; Esc (b) goes back to Screen C, which asks again.
    term.type_line("2");
    term.wait_for("Press Enter to resume", 1);
    let screen = term.screen();
    assert!(screen.contains("jackin' · resume paused"), "{screen}");
    assert!(screen.contains("uncommitted   1 file"), "{screen}");
    assert!(screen.contains("?? extra.md"), "{screen}");
    term.type_line("b");
    term.wait_for("Choice [1]:", 2);
    term.type_line("2");
    term.pass_screen_d(2);
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    assert!(Path::new(&checkout).join("extra.md").exists());
}

#[test]
fn the_rich_launch_screen_resumes_with_arrow_keys() {
    ensure_busybox();
    let home = Home::new();
    applied_workspace(&home, "desk");
    let yaml = instance_yaml_with(
        "roomy",
        &format!(
            "  workspace: desk\n  command: [sh, -c, {}]\n",
            serde_json::to_string("read line; exit 0").unwrap()
        ),
    );
    home.apply("roomy", &yaml);
    let container = home.container("roomy");
    home.ok(&["set-phase", "roomy", "kept"]);

    let term = Terminal::start_as(&home, "launch -w desk -r tester -a shell", "xterm-256color");
    term.wait_for("▸ Start new session", 1);
    let screen = term.screen();
    assert!(
        screen.contains("· resume or start new") && screen.contains("Resume roomy"),
        "{screen}"
    );
    assert!(
        screen.contains("↑/↓ navigate · type to filter · Enter select · Ctrl-C abort"),
        "{screen}"
    );
    term.keys(&["Down"]);
    term.wait_for("▸ Resume roomy", 1);
    term.keys(&["Enter"]);
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    assert_eq!(home.container("roomy"), container, "the same identity");
    assert_eq!(home.object("roomy")["status"]["phase"], "Running");
}

/// Ctrl-C at the launch screen is a cancel, as an interrupt is: it says
/// so, exits 130, and nothing is launched or resumed.
#[test]
fn ctrl_c_at_the_launch_screen_cancels_and_exits_130() {
    ensure_busybox();
    let home = Home::new();
    applied_workspace(&home, "desk");
    let yaml = instance_yaml_with("idle", "  workspace: desk\n  command: [sleep, \"600\"]\n");
    home.apply("idle", &yaml);
    home.ok(&["set-phase", "idle", "kept"]);
    // The rich screen, and the plain one a dumb terminal gets, where the
    // terminal turns Ctrl-C into an interrupt.
    for (term_kind, asked) in [
        ("xterm-256color", "▸ Start new session"),
        ("dumb", "Choice [1]:"),
    ] {
        let term = Terminal::start_as(
            &home,
            "launch -w desk -r tester -a shell; echo exit=$?",
            term_kind,
        );
        term.wait_for(asked, 1);
        term.keys(&["C-c"]);
        term.wait_for("exit=130", 1);
        let screen = term.screen();
        assert!(
            screen.contains("cancelled: nothing was launched"),
            "{term_kind}: {screen}"
        );
        assert!(!screen.contains("error"), "{term_kind}: {screen}");
        assert_eq!(home.object("idle")["status"]["phase"], "Kept");
        let names = home.ok(&["get", "-o", "name"]);
        assert_eq!(names.trim(), "instance/idle", "nothing new: {names}");
    }
}

/// An instance running `script` (as `sh -c`) on an isolated worktree of a
/// fresh host repository, recorded without converging.
fn record_script(home: &Home, name: &str, script: &str, host: &Path) {
    let yaml = instance_yaml_with(
        name,
        &format!(
            "  command: [sh, -c, {}]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
            serde_json::to_string(script).unwrap(),
            host.display()
        ),
    );
    home.record(name, &yaml);
}

#[test]
fn a_crash_after_returning_to_the_agent_is_preserved_not_asked_about() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let script = "echo x > /workspace/app/draft.md; read code; exit $code";
    record_script(&home, "twice", script, &host);
    let term = Terminal::start(&home, "attach twice");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_line("0");
    term.pass_screen_a(1);
    term.wait_for("Choice [1]:", 1);
    term.type_line("1");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 2);
    term.type_line("3");
    term.wait_for("ended: Crashed", 1);
    assert_eq!(
        term.screen().matches("Choice [1]:").count(),
        1,
        "{}",
        term.screen()
    );
    let obj = home.object("twice");
    assert_eq!(obj["status"]["phase"], "Crashed");
    assert_eq!(obj["status"]["session"]["exitCode"], 3);
}

#[test]
fn an_operator_who_leaves_mid_question_gets_the_session_kept() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    record_talker(&home, "left", &host);
    let term = Terminal::start(&home, "attach left");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_line("bye");
    term.pass_screen_a(1);
    term.wait_for("Choice [1]:", 1);
    drop(term);
    // The attach that asked goes with its terminal; until it is gone (a
    // moment, or longer on a loaded machine) the question is still its to
    // answer, and a pass leaves the session to it.
    eventually(
        Duration::from_secs(60),
        "a pass keeps the session once the operator has left",
        || {
            home.ok(&["controller", "--once"]);
            home.object("left")["status"]["phase"] == "Kept"
        },
    );
    let obj = home.object("left");
    let reason = condition(&obj, "ExitPolicy").map(|c| c["reason"].clone());
    assert_eq!(reason, Some(serde_json::json!("NonInteractive")));
}

/// The end of input at the question (Ctrl-D, or a terminal that closed
/// before the attach was killed with it) is nobody answering, not the
/// operator choosing: the attach itself settles the end as for nobody
/// attached, with no pass of the loop, and the same as a hangup gives.
#[test]
fn the_end_of_input_at_the_question_is_left_to_the_policy() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    record_talker(&home, "unanswered", &host);
    let term = Terminal::start(&home, "attach unanswered");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_line("bye");
    term.pass_screen_a(1);
    term.wait_for("Choice [1]:", 1);
    term.keys(&["C-d"]);
    term.wait_for("no answer came (the input ended)", 1);
    term.wait_for("instance/unanswered ended: Kept", 1);
    let obj = home.object("unanswered");
    assert_eq!(obj["status"]["phase"], "Kept");
    // It says where the work is and what to do with it (A-FN7); the
    // screen's lines joined, as a long line wraps.
    let said = term.screen().replace('\n', "");
    let checkout = obj["status"]["mounts"][0]["path"].as_str().unwrap();
    for what in [
        checkout,
        "`jackin attach unanswered` returns to it",
        "`jackin describe unanswered` (or the checkout) shows the work",
        "`jackin set-phase unanswered purged` discards it",
    ] {
        assert!(said.contains(what), "{what:?} in:\n{said}");
    }
    let reason = condition(&obj, "ExitPolicy").map(|c| c["reason"].clone());
    assert_eq!(reason, Some(serde_json::json!("NonInteractive")));
    assert_eq!(
        obj["status"]["settled"]["by"], "exitPolicy",
        "no operator chose to keep it: {obj}"
    );
}

#[test]
fn ctrl_c_that_the_agent_survives_does_not_make_its_exit_a_stop() {
    ensure_busybox();
    let home = Home::new();
    let yaml = instance_yaml_with(
        "tough",
        &format!(
            "  command: [sh, -c, {}]\n",
            serde_json::to_string("trap 'echo interrupted' INT; read a; read b; exit 0").unwrap()
        ),
    );
    home.record("tough", &yaml);
    let term = Terminal::start(&home, "attach tough");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.keys(&["C-c"]);
    term.wait_for("interrupted", 1);
    term.type_line("one");
    term.type_line("two");
    // A clean exit under ask with nothing unfinished: cleaned up, not restarted.
    term.wait_for("cleaned up", 1);
    assert!(!home.jackin(&["get", "tough"]).status.success());
}

#[test]
fn no_at_the_discard_prompt_changes_nothing() {
    answered_at_the_discard_question(&["n", "Enter"], "is unchanged");
}

/// Issue 55: Ctrl-C at a yes/no question cancels it, says so and exits 130
/// (as an interrupt does), with the instance as it was.
#[test]
fn ctrl_c_at_the_discard_question_cancels_it() {
    let screen = answered_at_the_discard_question(&["C-c"], "exit=130");
    assert!(
        screen.contains("cancelled: instance/keepme is unchanged"),
        "{screen}"
    );
    assert!(!screen.contains("error"), "{screen}");
}

/// `delete` on a terminal of an instance whose clone holds a draft: the
/// purge question says what is kept and for how long, `keys` answer it,
/// and once `said` shows, the instance is as it was. Returns the screen.
fn answered_at_the_discard_question(keys: &[&str], said: &str) -> String {
    ensure_busybox();
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    let repo = support::host_repo(dir.path());
    let spec = format!(
        "  mounts: [{{src: {}, dst: /w, isolation: clone}}]\n",
        repo.display()
    );
    home.apply("keepme", &instance_yaml_with("keepme", &spec));
    let checkout = home.checkout("keepme");
    std::fs::write(checkout.join("draft.md"), "work").unwrap();
    let before = home.object("keepme");

    let terminal = Terminal::start(&home, "delete keepme; echo exit=$?");
    terminal.wait_for("Discard this work and purge?", 1);
    terminal.wait_for("It is saved first and kept for 7 days", 1);
    terminal.wait_for("[y/N]", 1);
    terminal.keys(keys);
    terminal.wait_for(said, 1);
    let after = home.object("keepme");
    assert_eq!(after["spec"]["phase"], "Running");
    assert_eq!(
        after["metadata"]["generation"],
        before["metadata"]["generation"]
    );
    assert!(after["metadata"]["annotations"].is_null(), "{after}");
    assert!(checkout.join("draft.md").exists());
    terminal.screen()
}

/// A new session's name is shown before anything is created; a name taken
/// meanwhile is never the new session's.
#[test]
fn a_new_session_never_takes_over_an_instance_created_meanwhile() {
    ensure_busybox();
    let home = Home::new();
    workspace_with_the_tester_role(&home, "shared");
    let launch = "launch -w shared -r tester -a shell";
    // The launch picks the free name `tester-1` and says so, then waits a
    // moment, with nothing created yet ...
    let terminal =
        Terminal::start_with_env(&home, launch, "TERM=dumb JACKIN_PAUSE_AT=launch-create:5");
    terminal.wait_for("pausing 5s at launch-create", 1);
    assert!(
        terminal.screen().contains(
            "new session instance/tester-1: tester (shell) · workspace shared, from the \
             workspace's role"
        ),
        "{}",
        terminal.screen()
    );
    assert_eq!(home.ok(&["get", "-o", "name"]), "", "nothing created yet");
    // ... in which another command creates `tester-1`.
    let other = instance_yaml_with("tester-1", "  command: [sleep, \"7\"]\n");
    home.record("tester-1", &other);
    terminal.wait_for("instance/tester-2 created", 1);
    let screen = terminal.screen();
    assert!(
        screen.contains("instance/tester-1 was created meanwhile by someone else")
            && screen.contains("new session instance/tester-2"),
        "{screen}"
    );
    assert!(!screen.contains("instance/tester-1 created"), "{screen}");
    let theirs = home.object("tester-1");
    assert_eq!(theirs["spec"]["command"], serde_json::json!(["sleep", "7"]));
    assert_eq!(theirs["metadata"]["generation"], 1, "left as it was");
    // The launch converges on to the end before the test ends, so that
    // nothing it creates comes after the home's cleanup.
    terminal.wait_for("Ctrl-P Ctrl-Q detaches", 1);
}

#[test]
fn launch_refuses_a_workspace_that_does_not_exist_and_suggests_one() {
    let home = Home::new();
    applied_workspace(&home, "desk");
    let err = home.fails(&["launch", "-w", "dsek", "-r", "tester", "-a", "shell"]);
    assert!(
        err.contains("workspace \"dsek\" not found; did you mean \"desk\"?"),
        "{err}"
    );
    let err = home.fails(&["launch", "-w", "elsewhere", "-r", "tester", "-a", "shell"]);
    assert!(
        err.contains("not found") && !err.contains("did you mean"),
        "{err}"
    );
    assert_eq!(home.ok(&["get", "-o", "name"]), "");
}

#[test]
fn screen_d_guards_every_resume_on_a_terminal_and_esc_leaves_the_session_as_it_is() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    record_talker(&home, "guarded", &host);
    home.ok(&["set-phase", "guarded", "running"]);
    let checkout = home.object("guarded")["status"]["mounts"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    std::fs::write(Path::new(&checkout).join("wip.md"), "x").unwrap();
    home.ok(&["set-phase", "guarded", "kept"]);

    // attach: back out with b; nothing changes.
    let term = Terminal::start(&home, "attach guarded");
    term.wait_for("Press Enter to resume", 1);
    term.type_line("b");
    term.wait_for("instance/guarded not resumed: it is unchanged", 1);
    assert_eq!(home.object("guarded")["status"]["phase"], "Kept");
    drop(term);

    // set-phase running on a terminal: the same screen, then the resume.
    let term = Terminal::start(&home, "set-phase guarded running");
    term.wait_for("Press Enter to resume", 1);
    let screen = term.screen();
    assert!(
        screen.contains("resume guarded") && screen.contains("?? wip.md"),
        "{screen}"
    );
    assert_eq!(
        home.object("guarded")["status"]["phase"],
        "Kept",
        "not before the key"
    );
    term.keys(&["Enter"]);
    term.wait_for("instance/guarded Running", 1);
    // Without a terminal (scripts) nothing is asked.
    home.ok(&["set-phase", "guarded", "kept"]);
    let out = home.ok(&["set-phase", "guarded", "running"]);
    assert!(out.contains("instance/guarded Running"), "{out}");
}

#[test]
fn a_first_session_starts_from_the_workspaces_roles_without_a_template() {
    ensure_busybox();
    let home = Home::new();
    workspace_with_the_tester_role(&home, "desk");
    // Mistakes first: nothing is created.
    let err = home.fails(&["launch", "-w", "desk", "-r", "testr", "-a", "shell"]);
    assert!(
        err.contains("workspace desk names no role \"testr\"; did you mean \"tester\"?"),
        "{err}"
    );
    let err = home.fails(&["launch", "-w", "desk", "-r", "tester", "-a", "shel"]);
    assert!(
        err.contains("no agent is named \"shel\"; did you mean \"shell\"?"),
        "{err}"
    );
    assert_eq!(home.ok(&["get", "-o", "name"]), "");

    let term = Terminal::start(&home, "launch -w desk -r tester -a shell");
    term.wait_for("attached to instance/tester-1", 1);
    let obj = home.object("tester-1");
    assert_eq!(obj["spec"]["workspace"], "desk");
    assert_eq!(obj["spec"]["image"], support::busybox_image());
    assert_eq!(obj["status"]["phase"], "Running");
}

/// `launch --name` starts a new session by that name at once, offering
/// none to resume, and wins over the name of a `--from` file. A name that
/// is no instance name, or that an instance has (given by --name or by the
/// file), is refused before anything is created.
#[test]
fn launch_name_names_the_new_session_and_refuses_a_taken_or_invalid_one() {
    ensure_busybox();
    let home = Home::new();
    workspace_with_the_tester_role(&home, "desk");
    let launch = "launch -w desk -r tester -a shell";
    let args = |extra: &str| format!("{launch} {extra}");
    let fails = |extra: &str| home.fails(&args(extra).split(' ').collect::<Vec<_>>());

    let err = fails("--name Not_A_Name");
    assert!(
        err.contains("invalid name \"Not_A_Name\": expected a DNS-1123 label")
            && err.contains("hint: name the new session otherwise with --name NAME"),
        "{err}"
    );
    assert_eq!(home.ok(&["get", "-o", "name"]), "", "nothing created");

    let term = Terminal::start(&home, &args("--name feature-x"));
    term.wait_for("attached to instance/feature-x", 1);
    assert!(
        term.screen()
            .contains("new session instance/feature-x: tester (shell) · workspace desk"),
        "{}",
        term.screen()
    );
    assert_eq!(
        home.object("feature-x")["spec"]["image"],
        support::busybox_image()
    );
    drop(term);

    // feature-x could be resumed, but --name asks for a new session.
    let template = home.write_input(
        "template.yaml",
        &instance_yaml_with("from-file", "  command: [sleep, \"3600\"]\n"),
    );
    let term = Terminal::start(
        &home,
        &args(&format!("--from {} --name feature-y", template.display())),
    );
    term.wait_for("attached to instance/feature-y", 1);
    assert!(!term.screen().contains("Choice [1]:"), "{}", term.screen());
    drop(term);
    assert_eq!(
        home.object("feature-y")["spec"]["command"],
        serde_json::json!(["sleep", "3600"])
    );
    let names = "instance/feature-x\ninstance/feature-y\n";
    assert_eq!(home.ok(&["get", "-o", "name"]), names);

    // Taken, by --name or by the file's own name: refused, nothing created.
    let err = fails("--name feature-x");
    assert!(
        err.contains("an instance named \"feature-x\" already exists")
            && err.contains("nothing was created")
            && err
                .contains("hint: pass another --name, or resume it with `jackin attach feature-x`"),
        "{err}"
    );
    let taken = home.write_input(
        "taken.yaml",
        &instance_yaml_with("feature-y", "  command: [sleep, \"1\"]\n"),
    );
    let err = fails(&format!("--from {}", taken.display()));
    assert!(
        err.contains("an instance named \"feature-y\" already exists"),
        "{err}"
    );
    assert_eq!(home.ok(&["get", "-o", "name"]), names);
    assert_eq!(
        home.object("feature-y")["spec"]["command"],
        serde_json::json!(["sleep", "3600"]),
        "left as it was"
    );
}

/// Applies `name` in `workspace` with an image the engine does not have:
/// the apply fails and the instance is `Failed`.
fn failed_session(home: &Home, name: &str, workspace: &str) {
    let yaml = instance_yaml_with(
        name,
        &format!("  workspace: {workspace}\n  command: [sh, -c, 'exit 7']\n"),
    )
    .replace(support::busybox_image(), "jackin-test/absent:none");
    let file = home.write_input(&format!("{name}.yaml"), &yaml);
    home.fails(&["apply", file.to_str().unwrap()]);
    assert_eq!(home.object(name)["status"]["phase"], "Failed");
}

/// "Start new session" after a failed session starts from the workspace's
/// role, not from the failed session's spec.
#[test]
fn start_new_after_a_failed_session_uses_the_workspaces_role() {
    ensure_busybox();
    let home = Home::new();
    workspace_with_the_tester_role(&home, "desk");
    failed_session(&home, "broken", "desk");

    let term = Terminal::start(&home, "launch -w desk -r tester -a shell");
    term.wait_for("Choice [1]:", 1);
    let screen = term.screen();
    assert!(
        screen.contains("1) Start new session — a fresh instance, tester-1")
            && screen.contains("2) Resume broken"),
        "{screen}"
    );
    term.type_line("1");
    term.wait_for("attached to instance/tester-1", 1);
    assert!(
        term.screen().contains(
            "new session instance/tester-1: tester (shell) · workspace desk, from the \
             workspace's role"
        ),
        "{}",
        term.screen()
    );
    let obj = home.object("tester-1");
    assert_eq!(obj["spec"]["image"], support::busybox_image());
    assert!(obj["spec"]["command"].is_null(), "{obj}");
    assert_eq!(obj["status"]["phase"], "Running");
    assert_eq!(home.object("broken")["status"]["phase"], "Failed");
}

/// A workspace that does not declare the role: a failed session's spec is
/// never the new session's, and with no healthy one the launch says how to
/// declare the role, creating nothing.
#[test]
fn an_undeclared_role_never_starts_from_a_failed_session() {
    let home = Home::new();
    applied_workspace(&home, "bare");
    failed_session(&home, "broken", "bare");
    let err = home.fails(&[
        "launch", "-w", "bare", "-r", "tester", "-a", "shell", "--name", "fresh",
    ]);
    assert!(
        err.contains("workspace bare names no role \"tester\" (it names none)")
            && err.contains("a failed session's spec is never copied: instance/broken")
            && err.contains("hint: add the role to the workspace's spec.roles")
            && err.contains("--from FILE"),
        "{err}"
    );
    assert_eq!(home.ok(&["get", "-o", "name"]), "instance/broken\n");
}

#[test]
fn several_instances_converging_show_a_live_line_each() {
    ensure_busybox();
    let home = Home::new();
    let file = home.write_input(
        "three.yaml",
        &["p1", "p2", "p3"]
            .map(|name| instance_yaml_with(name, "  command: [sleep, \"3600\"]\n"))
            .join("---\n"),
    );
    let term = Terminal::start_as(
        &home,
        &format!("apply {}", file.display()),
        "xterm-256color",
    );
    for name in ["p1", "p2", "p3"] {
        term.wait_for(&format!("instance/{name} Running"), 1);
    }
    let screen = term.screen();
    for name in ["p1", "p2", "p3"] {
        assert!(
            screen.contains(&format!(
                "✓ instance/{name}: [container] starting the container"
            )),
            "{screen}"
        );
    }
    // Every live line was cleared: no spinner is left on the screen.
    assert!(!screen.contains(SPINNER), "{screen}");
}

/// The glyphs of a live line's spinner.
const SPINNER: &[char] = &['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// Log lines written while a step runs (`-vv`: the engine's debug lines,
/// as a warning would be) go above the live line, which they pushed aside:
/// the step's line was left on the screen with its spinner.
#[test]
fn a_log_line_during_a_step_leaves_no_spinner_behind() {
    ensure_busybox();
    let home = Home::new();
    let file = home.write_input(
        "logged.yaml",
        &instance_yaml_with("logged", "  command: [sleep, \"3600\"]\n"),
    );
    let apply = format!("-vv apply {}", file.display());
    let term = Terminal::start_as(&home, &apply, "xterm-256color");
    term.wait_for("instance/logged Running", 1);
    let screen = term.screen();
    assert!(screen.contains("DEBUG network created"), "{screen}");
    assert!(
        screen.contains("✓ instance/logged: [network] creating the network"),
        "{screen}"
    );
    assert!(!screen.contains(SPINNER), "{screen}");
}

/// A step whose reconcile failed is not marked done.
#[test]
fn a_failed_step_is_marked_as_such() {
    let home = Home::new();
    let yaml = support::instance_yaml("missing")
        .replace(support::busybox_image(), "jackin-test/none:missing");
    let file = home.write_input("missing.yaml", &yaml);
    let apply = format!("apply {}", file.display());
    let term = Terminal::start_as(&home, &apply, "xterm-256color");
    term.wait_for("did not converge", 1);
    let screen = term.screen();
    assert!(
        screen.contains("✗ instance/missing: [role] pinning the launch recipe"),
        "{screen}"
    );
    assert!(
        !screen.contains('✓') && !screen.contains(SPINNER),
        "{screen}"
    );
}

#[test]
fn exec_it_gives_the_command_this_terminal() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "shellbox",
        &instance_yaml_with("shellbox", "  command: [sleep, \"3600\"]\n"),
    );
    let term = Terminal::start_as(&home, "exec -it shellbox -- sh", "xterm-256color");
    // A terminal of its own: the command sees one, sized like this one.
    term.type_line("tty; stty size; echo marker-$((6*7))");
    term.wait_for("marker-42", 1);
    let screen = term.screen();
    assert!(screen.contains("/dev/pts/"), "{screen}");
    assert!(screen.contains("40 120"), "{screen}");
    term.type_line("exit 7");
    term.wait_for("marker-42", 1);
}

/// A session that `attach` or `launch` settles as kept counts against its
/// workspace's `keep.max` at once, as it does under the controller: the
/// least recently running kept session beyond the cap is purged before the
/// command returns (seed row SK-Q1).
#[test]
fn attach_and_launch_apply_the_keep_cap_to_the_session_they_keep() {
    ensure_busybox();
    let home = Home::new();
    let workspace = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: capped}\n\
                     spec: {keep: {max: 1}}\n";
    home.apply("ws.yaml", workspace);
    // Reads a line and exits 0, leaving nothing unfinished: the exit
    // policy decides, without a question.
    let agent = "  workspace: capped\n  command: [sh, -c, \"echo ready; read line; exit 0\"]\n";
    let older = instance_yaml_with("older", agent).replace(
        "metadata:\n",
        "metadata:\n  annotations: {jackin.dev/exit-policy: keep}\n",
    );
    home.record("older", &older);
    let term = Terminal::start(&home, "attach older");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_until("done", "instance/older ended: Kept");
    drop(term);
    assert_eq!(home.object("older")["status"]["phase"], "Kept");

    // --name: a new session, not the kept one offered to resume.
    let newer = home.write_input("newer.yaml", &instance_yaml_with("newer", agent));
    let term = Terminal::start(
        &home,
        &format!(
            "launch -w capped -r tester -a shell --keep --name newer --from {}",
            newer.display()
        ),
    );
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_until("done", "instance/newer ended: Kept");
    term.wait_for(
        "purging instance/older: workspace capped keeps fewer kept sessions (keep.max)",
        1,
    );
    term.wait_for("instance/older purged", 1);
    drop(term);
    assert_eq!(home.object("newer")["status"]["phase"], "Kept");
    let gone = home.fails(&["get", "older"]);
    assert!(gone.contains("older"), "{gone}");
}

/// An agent that logs its start in its home, then exits 3 once the test
/// touches `go` there (taking it away for its next start).
const CRASH_ON_GO: &str = "echo started >> $HOME/starts; until [ -e $HOME/go ]; do sleep 0.2; \
                           done; rm $HOME/go; exit 3";

/// Attach to a session whose agent exited while nobody watched (the store
/// still said Running): the attach records the end, says so and returns;
/// it used to attach to the stopped container and wait for good, deaf to
/// Enter, Ctrl-P Ctrl-Q and Ctrl-C (R6). The next attach resumes it.
#[test]
fn attach_to_a_session_that_ended_unseen_reports_the_end_and_returns() {
    ensure_busybox();
    let home = Home::new();
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(CRASH_ON_GO).unwrap()
    );
    home.apply("unseen", &instance_yaml_with("unseen", &spec));
    let container = home.container("unseen");
    let unit_home = home.unit("unseen").join("home");
    std::fs::write(unit_home.join("go"), "").unwrap();
    eventually(Duration::from_secs(60), "the agent exited", || {
        support::docker(&["inspect", "-f", "{{.State.Running}}", &container]) == "false"
    });
    assert_eq!(home.object("unseen")["status"]["phase"], "Running");
    // The shell prints the line once the command has returned: the 60 s of
    // `wait_for` fail only a hang.
    let term = Terminal::start(&home, "attach unseen; echo attach-returned-$?");
    term.wait_for("attach-returned-0", 1);
    let screen = term.screen();
    assert!(
        screen.contains("instance/unseen ended: Crashed"),
        "{screen}"
    );
    assert!(!screen.contains("attached to"), "{screen}");
    let obj = home.object("unseen");
    assert_eq!(obj["status"]["phase"], "Crashed");
    assert_eq!(obj["status"]["session"]["exitCode"], 3);
    // The ended session is resumed by the next attach, in the same unit
    // (with no checkout to show, Screen D is passed over).
    let again = Terminal::start(&home, "attach unseen; echo attach-returned-$?");
    again.wait_for("attached to instance/unseen", 1);
    let starts = std::fs::read_to_string(unit_home.join("starts")).unwrap();
    assert_eq!(starts, "started\nstarted\n");
    std::fs::write(unit_home.join("go"), "").unwrap();
    again.wait_for("attach-returned-0", 1);
    assert!(again.screen().contains("instance/unseen ended: Crashed"));
}

/// A `docker rm -f` of the attached container: the attach's converge
/// restores the session in a new container and attaches to that one; it
/// used to return after the restore (R15).
#[test]
fn attach_attaches_again_to_the_container_restored_after_a_docker_rm() {
    ensure_busybox();
    let home = Home::new();
    let agent = "echo agent-up; while read line; do echo \"heard-$line\"; done";
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(agent).unwrap()
    );
    home.apply("removed", &instance_yaml_with("removed", &spec));
    let container = home.container("removed");
    let first = support::docker(&["inspect", "-f", "{{.Id}}", &container]);
    let term = Terminal::start(&home, "attach removed; echo attach-returned-$?");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    support::docker(&["rm", "-f", &container]);
    term.wait_for("Ctrl-P Ctrl-Q detaches", 2);
    let screen = term.screen();
    assert!(screen.contains("the session runs on"), "{screen}");
    assert!(!screen.contains("attach-returned"), "{screen}");
    let second = support::docker(&["inspect", "-f", "{{.Id}}", &container]);
    assert_ne!(first, second, "a new container");
    // This terminal drives the new container's agent ...
    term.type_until("ping", "heard-ping");
    // ... until the operator detaches.
    term.keys(&["C-p", "C-q"]);
    term.wait_for("attach-returned-0", 1);
    assert!(term.screen().contains("detached;"), "{}", term.screen());
    assert_eq!(home.object("removed")["status"]["phase"], "Running");
}
