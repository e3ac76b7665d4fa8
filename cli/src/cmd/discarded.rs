//! `jackin get discarded` and `jackin restore-discarded`: the unfinished
//! work jackin saved before it discarded isolated checkouts (see
//! `jackin_reconcilers::discard`).

use std::path::Path;

use anyhow::Result;
use jackin_controller::Store;
use jackin_reconcilers::discard::{self, Save};
use jiff::Timestamp;
use serde::Serialize;

use crate::args::Format;
use crate::args::UsageError;
use crate::cmd::select::{Kind, split_kind};
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
pub fn get(store: &Store, name: Option<&str>, format: Format) -> Result<String> {
    let retention =
        jackin_reconcilers::addresses::read_config(store.layout().root())?.discard_retention();
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
        "NAME", "INSTANCE", "CHECKOUT", "SAVED", "FILES", "BRANCHES", "STASH", "EXPIRES",
    ];
    if wide {
        header.extend(["DELETED", "TAGS", "SIZE", "NOT-SAVED", "REPOSITORY"]);
    }
    let mut rows = Vec::new();
    for entry in listed {
        let save = entry.save;
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
                in_words(entry.expires_at, now),
            ];
            if wide {
                row.extend([
                    files.deleted.to_string(),
                    checkout.tags.len().to_string(),
                    size(files.bytes),
                    files.skipped.to_string(),
                    checkout.src.clone(),
                ]);
            }
            rows.push(row);
        }
    }
    output::table(&header, &rows)
}

/// `in 6d`, or `due` once past (the next sweep removes it).
fn in_words(at: Timestamp, now: Timestamp) -> String {
    if at <= now {
        return "due".into();
    }
    format!("in {}", output::age(Some(now), at))
}

fn size(bytes: u64) -> String {
    match bytes {
        b if b < 1 << 10 => format!("{b}B"),
        b if b < 1 << 20 => format!("{}KiB", b >> 10),
        b => format!("{}MiB", b >> 20),
    }
}

fn retention_words(retention: std::time::Duration) -> String {
    let secs = retention.as_secs();
    match secs {
        s if s % 86_400 == 0 => format!("{} days", s / 86_400),
        s if s % 3600 == 0 => format!("{}h", s / 3600),
        s => format!("{s}s"),
    }
}

/// `jackin restore-discarded NAME [--to DIR] [--mount DST]`: NAME is a
/// save's name (`discarded/NAME`, as `get discarded -o name` prints it) or
/// its instance's (`instance/NAME`).
pub fn restore(store: &Store, arg: &str, to: Option<&Path>, mount: Option<&str>) -> Result<()> {
    let name = match split_kind(arg)? {
        (None | Some(Kind::Discarded | Kind::Instance), name) => name,
        (Some(kind), _) => {
            return Err(UsageError(format!(
                "{arg:?} is a {}: restore-discarded takes a save's or an instance's name",
                kind.word()
            ))
            .into());
        }
    };
    let to = to.map(std::path::absolute).transpose()?;
    let lines = discard::restore(store.layout(), name, to.as_deref(), mount)?;
    for line in lines {
        println!("{}", output::terminal_safe(&line));
    }
    Ok(())
}

/// How many saves of the instance `name` there are, for `describe`.
pub fn count_of(store: &Store, name: &str) -> usize {
    discard::list(store.layout())
        .0
        .iter()
        .filter(|s| s.instance == name)
        .count()
}
