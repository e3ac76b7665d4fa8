//! A removed session's conversation is saved with its work, and comes back
//! (issue 38, R7): whatever removes a unit saves the agent's state path
//! under `discarded/` first, by the checkout save's rules, with no login in
//! it; `restore-discarded NAME --session` makes the session again, and its
//! next start resumes the conversation.

use std::path::Path;
use std::process::Command;

use support::real_agent::{AgentSession, Cli, Login};
use support::terminal::Terminal;
use support::{Home, OpenWatch, ensure_busybox, files_holding, mknod_dev_null, unique};

/// The saves' directory of `home`.
fn discarded(home: &Home) -> std::path::PathBuf {
    home.path().join("discarded")
}

/// R7: the agent's own clean exit under the default `ask`, with a clean
/// checkout, cleans up; the conversation is saved, listed, made again by
/// `restore-discarded --session`, and the next message reaches the model
/// with the first one.
fn comes_back_after_a_clean_exit(cli: Cli, exit: impl FnOnce(&Terminal)) {
    let session = AgentSession::start(cli, Login::Sync, "saved", "");
    let term = session.first_attach();
    let first = format!("first-{}-message", cli.name());
    let request = session.say(&term, &first);
    assert_eq!(request.login, "match", "{request:?}");
    exit(&term);
    term.wait_long("was cleaned up");
    drop(term);

    let listed = session.ok(&["get", "discarded"]);
    let row = listed
        .lines()
        .find(|l| l.contains(&session.name) && l.contains("conversation ("))
        .unwrap_or_else(|| panic!("no saved conversation listed:\n{listed}"));
    assert!(!row.contains(" 0B "), "{listed}");
    assert!(
        session
            .files_holding_secret(&discarded(&session.home))
            .is_empty(),
        "a save holds the login"
    );

    let out = session.ok(&["restore-discarded", &session.name, "--session"]);
    assert!(
        out.contains(&format!("instance/{} created", session.name)),
        "{out}"
    );
    let term = session.reattach();
    let second = format!("second-{}-message", cli.name());
    let request = session.say(&term, &second);
    assert!(
        request.holds(&first),
        "{} came back without its conversation: the model got {:?}\n{}",
        cli.name(),
        request.texts,
        session.ok(&["describe", &session.name])
    );
    assert_eq!(request.login, "match", "{request:?}");
}

#[test]
fn r7_claude_exit_under_ask_saves_the_conversation_and_restore_session_resumes_it() {
    comes_back_after_a_clean_exit(Cli::Claude, |term| {
        term.type_message(Cli::Claude.exit_command());
    });
}

#[test]
fn r7_codex_ctrl_c_under_ask_saves_the_conversation_and_restore_session_resumes_it() {
    comes_back_after_a_clean_exit(Cli::Codex, |term| {
        // One Ctrl-C in an empty composer quits codex, exit 0.
        term.keys(&["C-c"]);
    });
}

/// An agent entry whose state is `.notes/` and whose login file is
/// `.notes/login.json`, run as `sleep` in busybox.
pub(crate) fn notes_agent(home: &Home) {
    let agent = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: notes}\nspec:\n  \
                 launch: [sleep, '3600']\n  stateEnv: {name: NOTES_HOME, path: .notes}\n  \
                 credentials:\n    files: [{src: .notes-login.json, dst: .notes/login.json}]\n";
    home.apply("agent-notes.yaml", agent);
}

pub(crate) fn notes_instance(name: &str, workspace: Option<&str>) -> String {
    let workspace = workspace
        .map(|w| format!("  workspace: {w}\n"))
        .unwrap_or_default();
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata:\n  name: {name}\nspec:\n  \
         role: {{name: tester}}\n  agent: notes\n  image: {}\n  authForward: none\n{workspace}",
        support::busybox_image()
    )
}

/// The unit's `.notes/` as the agent left it, made from the host (the
/// tests run as root, as the agent is in its container).
fn write_notes(home: &Home, name: &str, canary: &str) -> std::path::PathBuf {
    let notes = home.unit(name).join("home/.notes");
    std::fs::create_dir_all(notes.join("chats")).unwrap();
    std::fs::write(notes.join("chats/one.jsonl"), "{\"said\": \"hello\"}\n").unwrap();
    std::fs::write(notes.join("login.json"), canary).unwrap();
    std::os::unix::fs::symlink("/etc/passwd", notes.join("passwd-link")).unwrap();
    let fifo = Command::new("mkfifo")
        .arg(notes.join("fifo"))
        .status()
        .unwrap();
    assert!(fifo.success());
    mknod_dev_null(&notes.join("device"));
    let sparse = std::fs::File::create(notes.join("sparse.img")).unwrap();
    sparse.set_len(2 << 30).unwrap();
    notes
}

/// The save of a unit whose state path holds a FIFO, a device node, a link
/// out of the unit, a 2 GiB sparse file and a login file: the link saved as
/// a link, nothing else of them saved or opened, each listed as left out.
#[test]
fn a_removed_units_state_is_saved_by_the_checkout_rules_and_holds_no_login() {
    ensure_busybox();
    let home = Home::new();
    notes_agent(&home);
    let name = unique("notes");
    home.apply(&format!("{name}.yaml"), &notes_instance(&name, None));
    let canary = unique("canary-notes-login-never-saved");
    let notes = write_notes(&home, &name, &canary);
    let fifo = OpenWatch::on(&notes.join("fifo"));
    let device = OpenWatch::on(&notes.join("device"));
    let sparse = OpenWatch::on(&notes.join("sparse.img"));

    let unit = home.unit(&name);
    home.ok(&["set-phase", &name, "purged"]);
    assert!(!unit.exists(), "the unit stayed");
    assert!(!fifo.opened() && !device.opened() && !sparse.opened());

    let saves: Vec<_> = std::fs::read_dir(discarded(&home))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.file_name().unwrap().to_string_lossy().starts_with(&name))
        .collect();
    assert_eq!(saves.len(), 1, "{saves:?}");
    let saved = saves[0].join("conversation/.notes");
    assert_eq!(
        std::fs::read_to_string(saved.join("chats/one.jsonl")).unwrap(),
        "{\"said\": \"hello\"}\n"
    );
    assert_eq!(
        std::fs::read_link(saved.join("passwd-link")).unwrap(),
        Path::new("/etc/passwd")
    );
    for gone in ["fifo", "device", "sparse.img", "login.json"] {
        assert!(
            std::fs::symlink_metadata(saved.join(gone)).is_err(),
            "{gone} was saved"
        );
    }
    assert!(files_holding(&discarded(&home), &canary).is_empty());
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(saves[0].join("record.json")).unwrap())
            .unwrap();
    let session = &record["session"];
    assert_eq!(session["path"], ".notes", "{record:#}");
    assert_eq!(session["spec"]["agent"], "notes", "{record:#}");
    let left_out = session["files"]["skippedListed"].to_string();
    for why in [
        ".notes/fifo: a FIFO, socket or device",
        ".notes/device: a FIFO, socket or device",
        ".notes/sparse.img: larger than",
        ".notes/login.json: it holds a login",
    ] {
        assert!(left_out.contains(why), "{why} not listed: {left_out}");
    }
    let listed = home.ok(&["get", "discarded"]);
    assert!(listed.contains("conversation (.notes)"), "{listed}");

    // Made again: the state back in the new unit's home, the link a link.
    let again = unique("again");
    let out = home.ok(&["restore-discarded", &name, "--session", "--name", &again]);
    assert!(out.contains(&format!("instance/{again} created")), "{out}");
    // Made again and running, as after an apply.
    assert!(out.contains(&format!("`jackin attach {again}`")), "{out}");
    assert_eq!(home.object(&again)["status"]["phase"], "Running", "{out}");
    let restored = home.unit(&again).join("home/.notes");
    assert!(restored.join("chats/one.jsonl").is_file());
    assert!(restored.join("passwd-link").is_symlink());
    assert_eq!(home.object(&again)["spec"]["agent"], "notes");
    home.ok(&["set-phase", &again, "purged"]);
}

/// Issue 57: a session whose agent left nothing in its state path (an empty
/// directory and a login's file, as one that never started has), with no
/// unfinished work, leaves no save to be listed for the retention. One
/// with a conversation is still saved (above), and so is one whose
/// checkouts hold work (`discard::restore_session_puts_the_saved_work_in_the_new_sessions_checkout`).
#[test]
fn a_session_that_left_nothing_leaves_no_save() {
    ensure_busybox();
    let home = Home::new();
    notes_agent(&home);
    let name = unique("untouched");
    home.apply(&format!("{name}.yaml"), &notes_instance(&name, None));
    let unit = home.unit(&name);
    let notes = unit.join("home/.notes");
    std::fs::create_dir_all(notes.join("chats")).unwrap();
    std::fs::write(notes.join("login.json"), "a login").unwrap();

    let out = home.jackin(&["set-phase", &name, "purged"]);
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.status.success(), "{said}");
    assert!(!unit.exists(), "the unit stayed: {said}");
    assert!(!said.contains("saved the conversation"), "{said}");
    let saves: Vec<_> = std::fs::read_dir(discarded(&home))
        .map(|dir| dir.map(|e| e.unwrap().file_name()).collect())
        .unwrap_or_default();
    assert!(saves.is_empty(), "{saves:?}");
    let listed = home.ok(&["get", "discarded"]);
    assert!(!listed.contains(&name), "{listed}");
}

/// `saveConversations: false`: a workspace's removed sessions leave no
/// save of their conversation.
#[test]
fn save_conversations_false_saves_none() {
    ensure_busybox();
    let home = Home::new();
    notes_agent(&home);
    home.apply(
        "ws.yaml",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: nosave}\nspec:\n  \
         saveConversations: false\n",
    );
    let name = unique("nosave");
    home.apply(
        &format!("{name}.yaml"),
        &notes_instance(&name, Some("nosave")),
    );
    write_notes(&home, &name, "no-canary");
    home.ok(&["set-phase", &name, "purged"]);
    let saves = std::fs::read_dir(discarded(&home))
        .map(|dir| dir.count())
        .unwrap_or(0);
    assert_eq!(saves, 0);
}
