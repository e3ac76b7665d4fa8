//! The real claude and the real codex (and aider, where it applies) keep
//! their conversation through
//! every way a session is interrupted and brought back (issue 36): the
//! container stopped (tier 1), removed (tier 2), its image removed too
//! (tier 3), the session kept and resumed, a rollout of a changed spec, and
//! "Return to agent" from the exit screen. Each is proven the way a user
//! sees it: the next message the person types reaches the model with the
//! first one still in the conversation.
//!
//! The agent is driven in a terminal as a person would (tmux); the model is
//! the scripted one of `tests/fixtures/model-server`, the session's sidecar
//! (see `support::real_agent`).

use support::docker;
use support::real_agent::{AgentSession, Cli, Interruption, Login, PATIENCE, interrupt};

/// The whole test: a first message, the interruption, a second message
/// that must reach the model with the first.
fn keeps_the_conversation(cli: Cli, interruption: Interruption) {
    // aider has no login of its own: its model's key, by token.
    let login = if cli == Cli::Aider {
        Login::Token
    } else {
        Login::Sync
    };
    let session = AgentSession::start(cli, login, "cont", "");
    let term = session.first_attach();
    let first = format!("first-{}-message", cli.name());
    let request = session.say(&term, &first);
    assert_eq!(request.login, "match", "{request:?}");

    let term = interrupt(&session, term, interruption);

    let second = format!("second-{}-message", cli.name());
    let request = session.say(&term, &second);
    assert!(
        request.holds(&first),
        "{interruption:?}: {} lost its conversation: the model got {:?}\n\
         what jackin says of the session (its starts, fallbacks and events):\n{}",
        cli.name(),
        request.texts,
        session.ok(&["describe", &session.name])
    );
    assert_eq!(request.login, "match", "{request:?}");
    session.assert_host_untouched();
}

#[test]
fn claude_keeps_its_conversation_when_its_container_is_stopped() {
    keeps_the_conversation(Cli::Claude, Interruption::Stopped);
}

#[test]
fn codex_keeps_its_conversation_when_its_container_is_stopped() {
    keeps_the_conversation(Cli::Codex, Interruption::Stopped);
}

#[test]
fn claude_keeps_its_conversation_when_its_container_is_removed() {
    keeps_the_conversation(Cli::Claude, Interruption::Removed);
}

#[test]
fn codex_keeps_its_conversation_when_its_container_is_removed() {
    keeps_the_conversation(Cli::Codex, Interruption::Removed);
}

#[test]
fn claude_keeps_its_conversation_when_its_image_is_removed() {
    keeps_the_conversation(Cli::Claude, Interruption::ImageRemoved);
}

#[test]
fn codex_keeps_its_conversation_when_its_image_is_removed() {
    keeps_the_conversation(Cli::Codex, Interruption::ImageRemoved);
}

#[test]
fn claude_keeps_its_conversation_when_kept_then_resumed() {
    keeps_the_conversation(Cli::Claude, Interruption::KeptThenResumed);
}

#[test]
fn codex_keeps_its_conversation_when_kept_then_resumed() {
    keeps_the_conversation(Cli::Codex, Interruption::KeptThenResumed);
}

#[test]
fn claude_keeps_its_conversation_through_a_rollout() {
    keeps_the_conversation(Cli::Claude, Interruption::RolledOut);
}

#[test]
fn codex_keeps_its_conversation_through_a_rollout() {
    keeps_the_conversation(Cli::Codex, Interruption::RolledOut);
}

#[test]
fn claude_keeps_its_conversation_when_returned_to_from_the_exit_screen() {
    keeps_the_conversation(Cli::Claude, Interruption::ReturnedTo);
}

#[test]
fn codex_keeps_its_conversation_when_returned_to_from_the_exit_screen() {
    keeps_the_conversation(Cli::Codex, Interruption::ReturnedTo);
}

#[test]
fn aider_keeps_its_conversation_when_its_container_is_removed() {
    keeps_the_conversation(Cli::Aider, Interruption::Removed);
}

#[test]
fn aider_keeps_its_conversation_when_kept_then_resumed() {
    keeps_the_conversation(Cli::Aider, Interruption::KeptThenResumed);
}

/// Defect R8: claude's `/exit` in a session that got no message leaves a
/// stub transcript, after which neither `--resume ID` nor `--session-id ID`
/// starts. The next start (here: kept, then resumed) walks the failing
/// rungs and ends at a new conversation under a new id jackin minted and
/// records, newest first beside the old one; a message sent then reaches
/// the model, and a restore after it resumes that new id: the model gets
/// the message again.
///
/// claude 2.1.332 in the test image writes no transcript at such an exit,
/// so the test leaves one claude refuses both ways
/// ([`leave_a_transcript_claude_refuses`]) and checks the two refusals.
/// Before, the ladder then asked claude to continue its latest, and claude
/// started a new conversation under an id jackin did not know.
#[test]
fn r8_claude_exited_before_any_message_runs_on_under_a_new_recorded_id() {
    let (session, first_id) = claude_kept_after_an_exit_before_any_message("r8");
    let name = session.name.as_str();
    let conversation = || session.home.object(name)["status"]["conversation"].clone();
    leave_a_transcript_claude_refuses(&session, &first_id);

    let term = session.attach();
    term.wait_long("Enter resume · Esc back");
    term.forget_screen();
    term.keys(&["Enter"]);
    session.settle_at_prompt(&term);
    let words = "after-the-id-was-renewed";
    session.say(&term, words);
    term.detach();
    drop(term);
    session.pass();
    let renewed = conversation();
    let new_id = renewed["id"].as_str().unwrap().to_owned();
    assert_ne!(new_id, first_id, "{renewed}");
    assert_eq!(renewed["lastStart"], "minted-anew", "{renewed}");
    assert_eq!(
        renewed["ids"],
        serde_json::json!([new_id, first_id]),
        "{renewed}"
    );
    let described = session.ok(&["describe", name]);
    for said in [
        format!("Conversation ids: {new_id}, {first_id} (newest first)"),
        "starting the agent resumed-by-id exited 1 at once".to_owned(),
        "starting the agent minted exited 1 at once".to_owned(),
        format!("the agent could neither resume conversation {first_id}"),
    ] {
        assert!(described.contains(&said), "{said:?} in:\n{described}");
    }

    docker(&["rm", "-f", &session.container()]);
    session.pass();
    assert_eq!(session.home.object(name)["status"]["restore"]["tier"], 2);
    let term = session.reattach();
    let request = session.say(&term, "after-the-restore");
    assert!(
        request.holds(words),
        "the restore lost the renewed conversation: the model got {:?}\n{}",
        request.texts,
        session.ok(&["describe", name])
    );
    term.detach();
    session.pass();
    let resumed = conversation();
    assert_eq!(resumed["lastStart"], "resumed-by-id", "{resumed}");
    assert_eq!(resumed["id"], new_id.as_str(), "{resumed}");
}

/// Issue 55: the start after one that left no conversation asks claude to
/// resume an id it never created. claude says so, naming the session ("No
/// conversation found with session ID …"), and that is told as its refusal
/// of the conversation, with the line as it showed; the next rung makes the
/// conversation under the same id. (A start that fails before claude looks
/// at the id, as its onboarding's network check did, is a crash, and told
/// as one.)
#[test]
fn a_resume_of_an_id_claude_never_created_is_told_as_its_refusal() {
    let (session, id) = claude_kept_after_an_exit_before_any_message("never");
    let name = session.name.as_str();
    let conversation = || session.home.object(name)["status"]["conversation"].clone();

    let term = session.attach();
    term.wait_long("Enter resume · Esc back");
    term.keys(&["Enter"]);
    session.settle_at_prompt(&term);
    term.detach();
    drop(term);
    session.pass();
    let now = conversation();
    assert_eq!(now["id"], id.as_str(), "{now}");
    assert_eq!(now["lastStart"], "minted", "{now}");
    assert_eq!(now["lastFallback"]["rung"], "resumed-by-id", "{now}");
    assert_eq!(now["lastFallback"]["ended"], "refused", "{now}");
    let error = now["lastFallback"]["error"].as_str().unwrap_or_default();
    assert!(
        error.contains(&format!("No conversation found with session ID: {id}")),
        "{now}"
    );
    let described = session.ok(&["describe", name]);
    assert!(
        described.contains(&format!(
            "starting the agent resumed-by-id exited 1 at once: No conversation found with \
             session ID: {id} (refused: the agent named the conversation)"
        )),
        "{described}"
    );
}

/// A claude session of a workspace that keeps ended sessions, attached,
/// ended with its exit command before any message (claude 2.1.332 then
/// leaves no transcript), and kept; with its conversation's id.
fn claude_kept_after_an_exit_before_any_message(prefix: &str) -> (AgentSession, String) {
    let session = AgentSession::new(Cli::Claude, Login::Sync, prefix, "  workspace: keeps\n");
    session.home.apply(
        "keeps",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: keeps}\nspec:\n  \
         exitPolicy: keep\n",
    );
    session.apply("");
    let name = session.name.clone();
    let term = session.first_attach();
    let id = session.home.object(&name)["status"]["conversation"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    term.type_message(session.cli.exit_command());
    support::eventually(PATIENCE, "the session is kept", || {
        session.pass();
        session.home.object(&name)["status"]["phase"] == "Kept"
    });
    drop(term);
    (session, id)
}

/// Leaves claude's transcript of `id` as one it refuses both to resume
/// ("No conversation found") and to mint again ("already in use"), as R8
/// found after an `/exit` before any message: claude 2.1.332 here writes no
/// transcript at such an exit (the id is minted again), and resumes the
/// three lines R8 recorded; an empty transcript it refuses both ways.
fn leave_a_transcript_claude_refuses(session: &AgentSession, id: &str) {
    let projects = session.unit_home().join(".claude/projects/-workspace-app");
    std::fs::create_dir_all(&projects).unwrap();
    std::fs::write(projects.join(format!("{id}.jsonl")), "").unwrap();
}
