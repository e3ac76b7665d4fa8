//! The real kimi-cli (the legacy Python one, from PyPI) under jackin,
//! holding a conversation with the scripted model
//! (`tests/fixtures/model-server`, the session's sidecar). Each restore is
//! proven as a user sees it: the next message reaches the model with every
//! earlier one still in the conversation.
//!
//! The built-in `kimi` entry follows the current Kimi Code CLI, which
//! cannot be installed here; the legacy CLI differs where it matters for a
//! restore. The current CLI's `--continue` takes the most recent session
//! of the directory from its session listing (MoonshotAI/kimi-code,
//! apps/kimi-code/src/tui/kimi-tui.ts), and its `--session ID` refuses an
//! id it does not have ("Session … not found"), so the entry continues the
//! latest. The legacy CLI's `--continue` takes the session it recorded as
//! the directory's last when it exited by itself (kimi_cli/cli, `_post_run`):
//! after a stopped or removed container there is none, and it fails. Its
//! `--session ID` starts a session under an id it does not have
//! (`Session.create(work_dir, session_id)`) and resumes one it has.
//!
//! So one test runs the legacy CLI under the built-in entry: the login
//! forwarded into `KIMI_CODE_HOME` reaches the model (a restore is not
//! tried there: the legacy `--continue` would find nothing to continue).
//! The other runs it under an entry of its own (an applied `Agent`, as an
//! operator with the legacy CLI would write one), with ids:
//! it keeps its conversation through every tier of the restore ladder, the
//! container stopped (tier 1), removed (tier 2), its image removed too
//! (tier 3), and the session kept then resumed.
//!
//! The image is made by `scripts/kimi-image` (Debian 13, kimi-cli 1.51.0 in
//! a virtual environment; the engine can pull nothing), whose tag
//! `scripts/test` hands over in `JACKIN_KIMI_IMAGE`. kimi logs in by its
//! `config.toml`, forwarded from the operator's home (`authForward: sync`):
//! a provider at the sidecar whose key is the session's canary.

use support::docker;
use support::real_agent::{AgentSession, Cli, Interruption, Login, interrupt};

/// An entry for the legacy kimi-cli, as its operator would apply one:
/// jackin mints the session id (`--session ID` starts a session under an id
/// kimi does not have yet) and resumes it; its home is `KIMI_SHARE_DIR`.
const LEGACY_KIMI: &str = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: kimi}\n\
    spec:\n  launch: [kimi]\n  mintArgs: [--session, '{id}']\n  resumeArgs: [--session, '{id}']\n  \
    continueArgs: [--continue]\n  stateEnv: {name: KIMI_SHARE_DIR, path: .kimi-code}\n  \
    conversationsByDirectory: true\n  credentials:\n    files:\n    \
    - {src: .kimi-code/config.toml, dst: .kimi-code/config.toml}\n";

#[test]
fn the_legacy_kimi_under_an_entry_of_its_own_keeps_its_conversation_at_every_tier() {
    let session = AgentSession::new(Cli::Kimi, Login::Sync, "kimi", "");
    session.home.apply("legacy-kimi.yaml", LEGACY_KIMI);
    session.apply("");
    let name = session.name.clone();
    let mut term = session.first_attach();
    let mut said = vec!["first-kimi-message".to_owned()];
    let request = session.say(&term, &said[0]);
    assert_eq!(request.login, "match", "{request:?}");
    assert_eq!(request.api, "chat", "{request:?}");
    let id = session.home.object(&name)["status"]["conversation"]["id"]
        .as_str()
        .expect("a minted id")
        .to_owned();

    for interruption in [
        Interruption::Stopped,
        Interruption::Removed,
        Interruption::ImageRemoved,
        Interruption::KeptThenResumed,
    ] {
        term = interrupt(&session, term, interruption);
        let words = format!("after-{interruption:?}-kimi-message").to_lowercase();
        let request = session.say(&term, &words);
        for earlier in &said {
            assert!(
                request.holds(earlier),
                "{interruption:?}: kimi lost {earlier:?}: the model got {:?}\n{}",
                request.texts,
                session.ok(&["describe", &name])
            );
        }
        assert_eq!(request.login, "match", "{request:?}");
        said.push(words);
        session.home.wait_for_the_start_to_settle(&name);
        session.pass();
        let conversation = &session.home.object(&name)["status"]["conversation"];
        assert_eq!(conversation["id"], id.as_str(), "{conversation}");
        assert_eq!(
            conversation["lastStart"], "resumed-by-id",
            "{interruption:?}: {conversation}"
        );
    }
    drop(term);

    // The session is where the entry's state variable puts it, in the
    // unit's home; the login's value shows in nothing jackin reports.
    let sessions = session.unit_home().join(".kimi-code/sessions");
    assert!(sessions.is_dir(), "{}", sessions.display());
    support::assert_never_shown(&session.home, &name, &session.secret);
    session.assert_host_untouched();
}

#[test]
fn the_builtin_kimi_entry_logs_the_legacy_cli_in_and_keeps_its_sessions_in_the_unit() {
    let session = AgentSession::start(Cli::Kimi, Login::Sync, "kimi-builtin", "");
    let name = session.name.clone();
    let term = session.first_attach();
    let request = session.say(&term, "first-builtin-kimi-message");
    assert_eq!(request.login, "match", "{request:?}");
    drop(term);
    // The login went where the entry puts kimi's home (KIMI_CODE_HOME),
    // which the legacy CLI reads as its KIMI_SHARE_DIR here, and so did
    // the session.
    let environment = docker(&["exec", &session.container(), "env"]);
    assert!(
        environment
            .lines()
            .any(|l| l == "KIMI_CODE_HOME=/home/agent/.kimi-code"),
        "{environment}"
    );
    assert!(session.unit_home().join(".kimi-code/sessions").is_dir());
    session.pass();
    let conversation = &session.home.object(&name)["status"]["conversation"];
    assert_eq!(conversation["strategy"], "latest", "{conversation}");
    assert_eq!(conversation["lastStart"], "fresh", "{conversation}");
    support::assert_never_shown(&session.home, &name, &session.secret);
}
