//! `jackin get discarded` and `jackin restore-discarded`: the unfinished
//! work jackin saved before it discarded isolated checkouts (see
//! `jackin_checkouts::discard`).

use std::path::Path;

use anyhow::Result;
use jackin_api::instance::Conversation;
use jackin_api::{DesiredPhase, Instance, ObjectMeta};
use jackin_checkouts::discard::{self, Save};
use jackin_checkouts::saved_session;
use jackin_controller::{Store, StoreError};
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
                size(files.bytes),
                in_words(entry.expires_at, now),
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
                size(files.bytes),
                in_words(entry.expires_at, now),
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
    let name = save_name_of(arg)?;
    let to = to.map(std::path::absolute).transpose()?;
    let lines = discard::restore(store.layout(), name, to.as_deref(), mount)?;
    for line in lines {
        println!("{}", output::terminal_safe(&line));
    }
    Ok(())
}

/// `jackin restore-discarded NAME --session [--name NEW]`: the removed
/// session made again, as a new instance (named NEW, else as it was) with
/// the saved spec, its agent's saved state in the new unit's home and its
/// conversation's record, so that its first start resumes the
/// conversation. Saved checkout work comes back as branches in the host
/// repositories, as without `--session`.
pub fn restore_session(store: &Store, arg: &str, new_name: Option<&str>) -> Result<()> {
    let name = save_name_of(arg)?;
    let layout = store.layout();
    let save = discard::find(layout, name)?;
    let Some(session) = save.session.clone() else {
        anyhow::bail!(
            "{} saved no session, only checkout work (saved before conversations were, or its \
             workspace has saveConversations: false)\nhint: `jackin restore-discarded {0}` \
             brings the work back",
            save.name
        );
    };
    let name = new_name.unwrap_or(&save.instance);
    crate::context::check_name(name)?;
    let mut spec = session.spec.clone();
    spec.phase = DesiredPhase::Running;
    let obj = Instance {
        api_version: jackin_api::API_VERSION.into(),
        kind: Instance::KIND.into(),
        metadata: ObjectMeta {
            name: name.to_owned(),
            ..Default::default()
        },
        spec,
        status: None,
    };
    // The record of starts goes on; what was read of the old unit's start
    // report does not apply to the new unit's.
    let conversation = session.conversation.clone().map(|c| Conversation {
        report_modified: None,
        start_settles_at: None,
        ..c
    });
    let dir = discard::save_dir(layout, &save.name);
    let mut restored = 0;
    let created = store.create_instance_with(&obj, |obj, container| {
        obj.status.get_or_insert_default().conversation = conversation;
        let home = layout.unit_home_dir(container);
        restored =
            saved_session::restore_into(&dir, &home).map_err(|e| StoreError::io(&home, e))?;
        Ok(())
    })?;
    if !created {
        anyhow::bail!("instance/{name} exists\nhint: name the session made again with --name NEW");
    }
    let what = session.path.as_deref().unwrap_or("no state path");
    println!(
        "instance/{name} created from {}: {what} ({restored} files and links) and its \
         conversation's record; its next start resumes the conversation (`jackin attach {name}`)",
        save.name
    );
    if !save.checkouts.is_empty() {
        for line in discard::restore(layout, &save.name, None, None)? {
            println!("{}", output::terminal_safe(&line));
        }
    }
    Ok(())
}

/// The save's (or instance's) name in `arg`: `discarded/NAME`,
/// `instance/NAME` or `NAME`.
fn save_name_of(arg: &str) -> Result<&str> {
    match split_kind(arg)? {
        (None | Some(Kind::Discarded | Kind::Instance), name) => Ok(name),
        (Some(kind), _) => Err(UsageError(format!(
            "{arg:?} is a {}: restore-discarded takes a save's or an instance's name",
            kind.word()
        ))
        .into()),
    }
}

/// How many saves of the instance `name` there are, for `describe`.
pub fn count_of(store: &Store, name: &str) -> usize {
    discard::list(store.layout())
        .0
        .iter()
        .filter(|s| s.instance == name)
        .count()
}
