//! What other commands say of the work jackin saved before it discarded
//! isolated checkouts (see `jackin_checkouts::discard`): how long a save
//! is kept, whether a cleaned-up session's conversation was saved, how many
//! saves an instance's name has. `get discarded` lists the saves, and
//! `restore-discarded` brings them back.

use jackin_checkouts::discard;
use jackin_controller::Store;

/// How long this home keeps a save, in words (`7 days`).
pub fn retention_of(store: &Store) -> String {
    let config = jackin_engine::addresses::read_config(store.layout().root());
    retention_words(
        config.map_or(jackin_api::home::DEFAULT_DISCARD_RETENTION, |c| {
            c.discard_retention()
        }),
    )
}

/// What was kept of the removed instance `name`'s conversation, for the
/// line after its clean-up; none when nothing was saved of it.
pub fn conversation_kept(store: &Store, name: &str) -> Option<String> {
    let (saves, _) = discard::list(store.layout());
    let save = saves
        .iter()
        .rev()
        .find(|s| s.instance == name && s.session.is_some())?;
    Some(format!(
        "its conversation is saved (discarded/{}) for {}: `jackin restore-discarded {0} \
         --session` brings the session back",
        save.name,
        retention_of(store)
    ))
}

/// A retention in words: `7 days`, `12h`, `90s`.
pub fn retention_words(retention: std::time::Duration) -> String {
    let secs = retention.as_secs();
    match secs {
        s if s % 86_400 == 0 => format!("{} days", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s => format!("{s}s"),
    }
}

/// How many saves of the instance `name` there are.
pub fn count_of(store: &Store, name: &str) -> usize {
    discard::list(store.layout())
        .0
        .iter()
        .filter(|s| s.instance == name)
        .count()
}

/// What a save holds, in a few words.
pub fn saved_what(save: &discard::Save) -> String {
    let mut parts: Vec<String> = save
        .checkouts
        .iter()
        .map(|c| format!("{}: {}", c.dst, c.summary()))
        .collect();
    if let Some(session) = &save.session {
        let path = session.path.as_deref().unwrap_or("no state path");
        parts.push(format!("the conversation ({path})"));
    }
    match parts.is_empty() {
        true => "nothing but its record".to_owned(),
        false => crate::output::terminal_safe(&parts.join("; ")),
    }
}
