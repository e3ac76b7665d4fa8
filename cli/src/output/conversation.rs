//! How `describe` shows the agent's conversation: how it comes back, how
//! it last started, and the ids it has had.

use jackin_api::agent::Strategy;
use jackin_api::instance::{Conversation, StartKind};

use super::terminal_filter::terminal_safe;

/// How the agent's conversation comes back, and how it last started.
pub fn summary(conversation: &Conversation) -> String {
    let how = match conversation.strategy {
        Strategy::Id => format!(
            "resumed by id {}",
            terminal_safe(conversation.id.as_deref().unwrap_or("-"))
        ),
        Strategy::Latest => "continues the latest conversation".to_owned(),
        Strategy::None => "not resumed: every start is new".to_owned(),
    };
    let last = match conversation.last_start {
        // The agents that continue "the latest conversation here" start a
        // new one, and succeed, when there is none: jackin asked, and does
        // not know what the agent found.
        Some(kind @ StartKind::ContinueRequested) => format!(
            "; last started {kind} (asked to continue its latest conversation here; whether \
             there was one is the agent's to say)"
        ),
        Some(kind @ StartKind::MintedAnew) => format!(
            "; last started {kind} (the id before could neither be resumed nor started again: \
             a new conversation under a new id)"
        ),
        Some(kind) => format!("; last started {kind}"),
        None => "; not started yet".to_owned(),
    };
    let fallbacks = match conversation.fallbacks {
        0 => String::new(),
        n => format!(" ({n} fallback(s) so far, see Events)"),
    };
    format!("{how}{last}{fallbacks}")
}

/// The ids the session has had, newest first, when it has had more than
/// one (the one id is in [`summary`]).
pub fn ids_line(conversation: &Conversation) -> Option<String> {
    let ids = conversation.ids_newest_first();
    (ids.len() > 1).then(|| {
        let listed: Vec<String> = ids.iter().map(|id| terminal_safe(id)).collect();
        format!("{} (newest first)", listed.join(", "))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn claude(json: &str) -> Conversation {
        serde_json::from_str(json).unwrap()
    }

    #[test]
    fn a_renewed_conversation_shows_its_ids_newest_first() {
        let renewed = claude(
            r#"{"agent": "claude", "strategy": "id", "id": "u2", "ids": ["u2", "u1"],
                "lastStart": "minted-anew"}"#,
        );
        assert_eq!(ids_line(&renewed).as_deref(), Some("u2, u1 (newest first)"));
        assert!(
            summary(&renewed).starts_with("resumed by id u2; last started minted-anew (the id"),
            "{}",
            summary(&renewed)
        );
        // One id, from before the list was kept or not renewed: no line.
        let older = claude(r#"{"agent": "claude", "strategy": "id", "id": "u1"}"#);
        assert_eq!(ids_line(&older), None);
    }
}
