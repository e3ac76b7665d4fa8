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

mod support;

use support::docker;
use support::real_agent::{AgentSession, Cli, Login, stop};
use support::terminal::Terminal;

/// What interrupts the session between the two messages.
#[derive(Debug, Clone, Copy)]
enum Interruption {
    /// `docker stop`, then a controller pass: tier 1.
    Stopped,
    /// `docker rm -f`, then a controller pass: tier 2.
    Removed,
    /// The container and its image removed, then a controller pass: the
    /// role is built again at its pinned commit (tier 3).
    ImageRemoved,
    /// `set-phase kept`, then `attach` resumes it (Screen D).
    KeptThenResumed,
    /// A variable added to the spec, then `jackin rollout`.
    RolledOut,
    /// The agent's own exit, with unfinished work, then "Return to agent".
    ReturnedTo,
}

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

/// Interrupts the session as `interruption` says, and returns a terminal
/// attached to the agent again, at its prompt.
fn interrupt(session: &AgentSession, term: Terminal, interruption: Interruption) -> Terminal {
    let name = session.name.as_str();
    let tier_after_a_pass = |tier: u64| {
        session.pass();
        assert_eq!(
            session.home.object(name)["status"]["restore"]["tier"],
            tier,
            "{interruption:?}"
        );
        session.reattach()
    };
    match interruption {
        Interruption::ReturnedTo => {
            // Unfinished work in the checkout, so that the end asks.
            std::fs::write(session.checkout().join("draft.md"), "draft\n").unwrap();
            term.type_message(session.cli.exit_command());
            term.wait_long("Review the above before choosing");
            term.keys(&["Enter"]);
            term.wait_long("▸ Return to agent");
            term.forget_screen();
            term.keys(&["Enter"]);
            session.settle_at_prompt(&term);
            return term;
        }
        _ => term.detach(),
    }
    drop(term);
    match interruption {
        Interruption::Stopped => {
            stop(&session.container());
            tier_after_a_pass(1)
        }
        Interruption::Removed => {
            docker(&["rm", "-f", &session.container()]);
            tier_after_a_pass(2)
        }
        Interruption::ImageRemoved => {
            let recipe = session.home.object(name)["status"]["recipe"].clone();
            docker(&["rm", "-f", &session.container()]);
            docker(&["rmi", "-f", recipe["imageId"].as_str().unwrap()]);
            tier_after_a_pass(3)
        }
        Interruption::KeptThenResumed => {
            session.ok(&["set-phase", name, "kept"]);
            assert_eq!(session.home.object(name)["status"]["phase"], "Kept");
            let term = session.attach();
            term.wait_long("Enter resume · Esc back");
            term.forget_screen();
            term.keys(&["Enter"]);
            session.settle_at_prompt(&term);
            term
        }
        Interruption::RolledOut => {
            session.apply("    - {name: JACKIN_TEST_ROLLOUT, value: two}\n");
            let out = session.ok(&["rollout", name]);
            assert!(out.contains("conversation kept"), "{out}");
            let environment = docker(&["exec", &session.container(), "env"]);
            assert!(
                environment.lines().any(|l| l == "JACKIN_TEST_ROLLOUT=two"),
                "the rollout did not reach the container"
            );
            session.reattach()
        }
        Interruption::ReturnedTo => unreachable!("handled above"),
    }
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
