//! `jackin get discarded [NAME]`: the unfinished work jackin saved before
//! it discarded isolated checkouts, one row per saved checkout or session,
//! with when the sweeps remove it.

use anyhow::Result;
use jackin_checkouts::discard::{self, Save};
use jackin_controller::Store;
use jiff::Timestamp;
use serde::Serialize;

use crate::args::Format;
use crate::ops::discarded::retention_words;
use crate::output;

/// A save as `-o yaml|json` prints it: the record, and when the sweeps
/// remove it under the home's retention.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct Listed<'a> {
    #[serde(flatten)]
    save: &'a Save,
    expires_at: Timestamp,
}

/// The saves, one row per saved checkout; `name` keeps one save (or the
/// saves of one instance).
pub fn text(store: &Store, name: Option<&str>, format: Format) -> Result<String> {
    let retention =
        jackin_engine::addresses::read_config(store.layout().root())?.discard_retention();
    let (mut saves, problems) = discard::list(store.layout());
    for problem in problems {
        eprintln!("warning: {}", output::terminal_safe_lines(&problem));
    }
    if let Some(name) = name {
        saves.retain(|s| s.name == name || s.instance == name);
        if saves.is_empty() {
            anyhow::bail!(
                "no saved work is named {name:?}\nhint: `jackin get discarded` lists what is saved"
            );
        }
    }
    let table = matches!(format, Format::Table | Format::Wide);
    if saves.is_empty() && table {
        eprintln!(
            "No discarded work is saved (it is kept for {} after a discard).",
            retention_words(retention)
        );
        return Ok(String::new());
    }
    let now = Timestamp::now();
    let listed: Vec<Listed<'_>> = saves
        .iter()
        .map(|save| Listed {
            save,
            expires_at: discard::expires_at(save.saved_at, retention),
        })
        .collect();
    Ok(match format {
        Format::Table | Format::Wide => discarded_table(&listed, format == Format::Wide, now),
        Format::Yaml => output::yaml_stream(&listed)?,
        Format::Json => output::json(&listed, name.is_some())?,
        Format::Name => saves
            .iter()
            .map(|s| format!("discarded/{}\n", s.name))
            .collect(),
    })
}

fn discarded_table(listed: &[Listed<'_>], wide: bool, now: Timestamp) -> String {
    let mut header = vec![
        "NAME", "INSTANCE", "HOLDS", "SAVED", "FILES", "BRANCHES", "STASH", "SIZE", "EXPIRES",
        "RESTORED",
    ];
    if wide {
        header.extend(["DELETED", "TAGS", "NOT-SAVED", "REPOSITORY"]);
    }
    let mut rows = Vec::new();
    for entry in listed {
        let save = entry.save;
        if let Some(session) = &save.session {
            let files = &session.files;
            let holds = match &session.path {
                Some(path) => format!("conversation ({path})"),
                None => "session (no state path)".to_owned(),
            };
            let mut row = vec![
                save.name.clone(),
                save.instance.clone(),
                holds,
                format!("{} ago", output::age(Some(save.saved_at), now)),
                files.saved.to_string(),
                "-".into(),
                "-".into(),
                output::bytes_in_words(files.bytes),
                in_words(entry.expires_at, now),
                restored_word(save),
            ];
            if wide {
                row.extend([
                    "-".into(),
                    "-".into(),
                    files.skipped.to_string(),
                    "-".into(),
                ]);
            }
            rows.push(row);
        }
        for checkout in &save.checkouts {
            let files = &checkout.files;
            let mut row = vec![
                save.name.clone(),
                save.instance.clone(),
                checkout.dst.clone(),
                format!("{} ago", output::age(Some(save.saved_at), now)),
                files.saved.to_string(),
                checkout.branches.len().to_string(),
                checkout.stash.len().to_string(),
                output::bytes_in_words(files.bytes),
                in_words(entry.expires_at, now),
                restored_word(save),
            ];
            if wide {
                row.extend([
                    files.deleted.to_string(),
                    checkout.tags.len().to_string(),
                    files.skipped.to_string(),
                    checkout.src.clone(),
                ]);
            }
            rows.push(row);
        }
    }
    output::table(&header, &rows)
}

/// Where the save was brought back to (`branches`, `directory`,
/// `instance/NAME`), or `-` while it is untouched.
fn restored_word(save: &Save) -> String {
    save.restored
        .as_ref()
        .map_or_else(|| "-".into(), |r| r.into.word())
}

/// `in 6d`, or `due` once past (the next sweep removes it).
fn in_words(at: Timestamp, now: Timestamp) -> String {
    if at <= now {
        return "due".into();
    }
    format!("in {}", output::age(Some(now), at))
}
