//! The ids a session's conversation has had. An agent that takes ids
//! (strategy `id`) keeps one conversation under the id jackin chose; when
//! that id can neither be resumed nor started again, the resume ladder's
//! last rung starts a new conversation under a new id jackin minted
//! (`minted-anew`), and the status keeps the ids, newest first, so that
//! what came before can still be named.

use crate::agent::Strategy;
use crate::instance::Conversation;

impl Conversation {
    /// A session's first conversation with `agent`: under `id` (the first
    /// of its ids) for an agent that takes ids, not started yet.
    pub fn first(agent: String, strategy: Strategy, id: Option<String>) -> Self {
        Self {
            agent,
            strategy,
            ids: id.iter().cloned().collect(),
            id,
            next_id: None,
            last_start: None,
            fallbacks: 0,
            start_stamp: None,
            start_fallbacks: 0,
            report_modified: None,
            start_settles_at: None,
            last_fallback: None,
        }
    }

    /// The most ids kept: every renewal adds one, and a session that loses
    /// its id at every start (an `/exit` with no message, again and again)
    /// must not grow its status without end. The oldest goes first.
    pub const MAX_IDS: usize = 10;

    /// The ids the session has had, newest first: `ids`, or, in a status
    /// from before jackin kept the list, its one `id`.
    pub fn ids_newest_first(&self) -> Vec<String> {
        match (self.ids.as_slice(), &self.id) {
            ([], Some(id)) => vec![id.clone()],
            (ids, _) => ids.to_vec(),
        }
    }

    /// Makes `id` the conversation's id, first in `ids`, keeping at most
    /// [`Conversation::MAX_IDS`].
    pub fn adopt_id(&mut self, id: String) {
        let mut ids = self.ids_newest_first();
        ids.retain(|known| *known != id);
        ids.insert(0, id.clone());
        ids.truncate(Self::MAX_IDS);
        self.ids = ids;
        self.id = Some(id);
    }

    /// Whether `id` is one the session has had.
    pub fn has_had(&self, id: &str) -> bool {
        self.ids_newest_first().iter().any(|known| known == id)
    }
}

#[cfg(test)]
mod tests {
    use crate::agent::Strategy;
    use crate::instance::Conversation;

    fn stored(json: &str) -> Conversation {
        serde_json::from_str(json).unwrap()
    }

    /// A status written before the list was kept has its one id, and the
    /// first renewal puts the new one before it.
    #[test]
    fn an_older_status_reads_its_one_id_and_renews_before_it() {
        let mut conversation = stored(r#"{"agent": "claude", "strategy": "id", "id": "u1"}"#);
        assert_eq!(conversation.strategy, Strategy::Id);
        assert!(conversation.ids.is_empty());
        assert_eq!(conversation.ids_newest_first(), ["u1"]);
        conversation.adopt_id("u2".into());
        assert_eq!(conversation.id.as_deref(), Some("u2"));
        assert_eq!(conversation.ids, ["u2", "u1"]);
        assert!(conversation.has_had("u1") && conversation.has_had("u2"));
        assert!(!conversation.has_had("u3"));
    }

    #[test]
    fn the_ids_are_bounded_and_the_oldest_goes_first() {
        let mut conversation =
            stored(r#"{"agent": "claude", "strategy": "id", "id": "u0", "ids": ["u0"]}"#);
        for n in 1..=Conversation::MAX_IDS + 2 {
            conversation.adopt_id(format!("u{n}"));
        }
        assert_eq!(conversation.ids.len(), Conversation::MAX_IDS);
        assert_eq!(conversation.ids.first().map(String::as_str), Some("u12"));
        assert_eq!(conversation.ids.last().map(String::as_str), Some("u3"));
        // Adopting an id it had moves it first, not twice in the list.
        conversation.adopt_id("u5".into());
        assert_eq!(conversation.ids.len(), Conversation::MAX_IDS);
        assert_eq!(&conversation.ids[..2], ["u5", "u12"]);
    }
}
