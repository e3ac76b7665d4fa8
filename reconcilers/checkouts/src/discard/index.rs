//! The saves index: each save is a directory under `discarded/` holding its
//! record (`record.json`), which says what was saved of each checkout and
//! of the session. This part names saves, reads and writes their records,
//! lists, finds, expires and removes them; it never reads a checkout.

use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jackin_api::instance::Isolation;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use super::error::{DiscardError, io_at};
use super::pins::release_pin;
use crate::saved_files::SavedFiles;
use crate::saved_session::SavedSession;
use jackin_files::fsutil::{read_untrusted, remove_if_exists, write_atomic};
use jackin_files::layout::{Layout, cap};

/// The record in a save's directory.
const RECORD_FILE: &str = "record.json";

/// One discarded unit's saved work: `discarded/<name>/record.json`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Save {
    /// The directory's name, `<instance>-<unit id>`: what `jackin
    /// restore-discarded` takes.
    pub name: String,
    pub instance: String,
    /// The unit the checkouts were in.
    pub unit: String,
    /// When, to the second (RFC 3339).
    pub saved_at: Timestamp,
    #[serde(default)]
    pub checkouts: Vec<SavedCheckout>,
    /// The session, saved when its unit was removed: its spec, its
    /// conversation's record and files (see [`crate::saved_session`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SavedSession>,
    /// The last time `restore-discarded` brought it back, and where to:
    /// none while it is untouched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restored: Option<Restored>,
}

/// A save brought back: when, and where to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Restored {
    pub at: Timestamp,
    #[serde(flatten)]
    pub into: RestoredInto,
}

/// Where a save was brought back to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "into", rename_all = "camelCase")]
pub enum RestoredInto {
    /// Branches under `jackin/restored/<save>/` in the host repositories.
    Branches,
    /// A new checkout directory (`--to`).
    Directory { path: String },
    /// A new session (`--session`): its instance, and its checkouts.
    Session { instance: String },
}

impl RestoredInto {
    /// In one word, for a table: `branches`, `directory`, `instance/NAME`.
    pub fn word(&self) -> String {
        match self {
            Self::Branches => "branches".into(),
            Self::Directory { .. } => "directory".into(),
            Self::Session { instance } => format!("instance/{instance}"),
        }
    }
}

/// What was saved of one checkout.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedCheckout {
    /// The mount's destination in the container.
    pub dst: String,
    pub isolation: Isolation,
    /// The host repository the checkout was made from.
    pub src: String,
    /// The host's commit the checkout was made from; the bundle needs it.
    pub base_commit: String,
    /// The commit `HEAD` was at; none on a branch with no commit yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
    /// The branch `HEAD` was on; none when detached.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_branch: Option<String>,
    /// The files as they were: `HEAD`'s tree with the uncommitted ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub work: Option<String>,
    /// What was staged, as a commit on `HEAD`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub index: Option<String>,
    pub files: SavedFiles,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub branches: Vec<SavedRef>,
    /// Newest first, as `git stash list` shows them; `name` is the
    /// entry's message.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stash: Vec<SavedRef>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tags: Vec<SavedRef>,
    /// Other refs (notes, anything under `refs/`), by full name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_refs: Vec<SavedRef>,
    /// The bundle's file name in the save's directory; none when every
    /// commit the work needs is in the host repository already.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bundle: Option<String>,
    /// For a worktree's bundle: the ref of the host repository that pins
    /// the base commit the bundle needs, for as long as the save exists
    /// (`refs/jackin/saved/<save>/<checkout>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_pin: Option<String>,
}

/// A ref as saved: its name and the object it named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SavedRef {
    pub name: String,
    pub commit: String,
}

impl SavedCheckout {
    /// The commits and refs, counted: branches, stash entries, tags and
    /// other refs.
    pub fn ref_count(&self) -> usize {
        self.branches.len() + self.stash.len() + self.tags.len() + self.other_refs.len()
    }

    /// What was saved, in one line of names and counts (never contents),
    /// for the discard's event.
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        let files = &self.files;
        if files.saved > 0 {
            parts.push(format!(
                "{} {} ({})",
                files.saved,
                plural(files.saved, "file", "files"),
                listed(&files.listed, files.saved)
            ));
        }
        if files.deleted > 0 {
            parts.push(format!("{} deleted", files.deleted));
        }
        let names = |refs: &[SavedRef]| {
            let shown: Vec<String> = refs.iter().map(|r| r.name.clone()).collect();
            listed(&shown, refs.len())
        };
        if !self.branches.is_empty() {
            parts.push(format!(
                "{} {} ({})",
                self.branches.len(),
                plural(self.branches.len(), "branch", "branches"),
                names(&self.branches)
            ));
        }
        if !self.stash.is_empty() {
            parts.push(format!(
                "{} stash {}",
                self.stash.len(),
                plural(self.stash.len(), "entry", "entries")
            ));
        }
        if !self.tags.is_empty() {
            parts.push(format!(
                "{} {} ({})",
                self.tags.len(),
                plural(self.tags.len(), "tag", "tags"),
                names(&self.tags)
            ));
        }
        if !self.other_refs.is_empty() {
            parts.push(format!(
                "{} other {} ({})",
                self.other_refs.len(),
                plural(self.other_refs.len(), "ref", "refs"),
                names(&self.other_refs)
            ));
        }
        if self.head_branch.is_none()
            && let Some(head) = &self.head
        {
            parts.push(format!("HEAD detached at {}", short(head)));
        }
        if parts.is_empty() {
            parts.push("nothing but HEAD".into());
        }
        let mut line = parts.join(", ");
        if files.skipped > 0 {
            line.push_str(&format!(
                "; not saved: {} ({})",
                files.skipped,
                listed(&files.skipped_listed, files.skipped)
            ));
        }
        line
    }
}

fn plural(n: usize, one: &'static str, many: &'static str) -> &'static str {
    if n == 1 { one } else { many }
}

/// The first names, and how many more there are.
pub(super) fn listed(names: &[String], total: usize) -> String {
    let shown: Vec<&str> = names.iter().take(5).map(String::as_str).collect();
    let mut text = shown.join(", ");
    if total > shown.len() {
        text.push_str(&format!(", … {} more", total - shown.len()));
    }
    text
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// The save of the unit `container`, of the instance `instance`.
pub fn save_name(instance: &str, container: &str) -> String {
    let id = container
        .strip_prefix("jk-")
        .and_then(|rest| rest.split('-').next())
        .filter(|id| !id.is_empty())
        .unwrap_or(container);
    format!("{instance}-{id}")
}

/// Whether `name` can be a save's directory name: one plain component.
fn plain_name(name: &str) -> bool {
    !name.is_empty()
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
}

pub fn save_dir(layout: &Layout, name: &str) -> PathBuf {
    layout.discarded_dir().join(name)
}

/// The save being made, read from its directory (an earlier attempt's) or
/// begun now.
pub(super) fn loaded<'a>(
    save: &'a mut Option<Save>,
    dir: &Path,
    name: &str,
    instance: &str,
    container: &str,
) -> Result<&'a mut Save, DiscardError> {
    if save.is_none() {
        let begun = read_save(dir)?.unwrap_or_else(|| Save {
            name: name.to_owned(),
            instance: instance.to_owned(),
            unit: container.to_owned(),
            saved_at: Timestamp::from_second(Timestamp::now().as_second())
                .expect("now is a valid time"),
            checkouts: Vec::new(),
            session: None,
            restored: None,
        });
        *save = Some(begun);
    }
    Ok(save.as_mut().expect("set just now"))
}

pub(super) fn read_save(dir: &Path) -> Result<Option<Save>, DiscardError> {
    let path = dir.join(RECORD_FILE);
    match read_untrusted(&path, cap::DISCARD_RECORD) {
        Ok(bytes) => serde_json::from_slice(&bytes).map(Some).map_err(|e| {
            DiscardError::Refused(format!(
                "{}: not a record of saved work ({})",
                path.display(),
                jackin_api::redact::json_error(&e)
            ))
        }),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_at(&path)(e)),
    }
}

pub(super) fn write_save(dir: &Path, save: &Save) -> Result<(), DiscardError> {
    let path = dir.join(RECORD_FILE);
    let mut bytes = serde_json::to_vec_pretty(save).expect("a save serializes");
    bytes.push(b'\n');
    write_atomic(&path, &bytes).map_err(io_at(&path))
}

/// Records that the save `name` was brought back `into`, now.
pub fn mark_restored(layout: &Layout, name: &str, into: RestoredInto) -> Result<(), DiscardError> {
    let dir = save_dir(layout, name);
    let Some(mut save) = read_save(&dir)? else {
        return Err(DiscardError::Refused(format!("{name}: its record is gone")));
    };
    save.restored = Some(Restored {
        at: Timestamp::from_second(Timestamp::now().as_second()).expect("now is a valid time"),
        into,
    });
    write_save(&dir, &save)
}

/// The saves under this home, oldest first, and a line for each directory
/// that holds no readable record.
pub fn list(layout: &Layout) -> (Vec<Save>, Vec<String>) {
    let root = layout.discarded_dir();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return (Vec::new(), Vec::new());
    };
    let mut saves = Vec::new();
    let mut problems = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if name.starts_with('.') {
            continue;
        }
        let dir = entry.path();
        if !std::fs::symlink_metadata(&dir).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        match read_save(&dir) {
            Ok(Some(save)) if save.name == name => saves.push(save),
            Ok(Some(_)) => {
                problems.push(format!("{}: its record names another save", dir.display()));
            }
            // A save whose first checkout is still being written.
            Ok(None) => {}
            Err(e) => problems.push(e.to_string()),
        }
    }
    saves.sort_by(|a, b| (a.saved_at, &a.name).cmp(&(b.saved_at, &b.name)));
    (saves, problems)
}

/// When a save made at `saved_at` expires under `retention`.
pub fn expires_at(saved_at: Timestamp, retention: Duration) -> Timestamp {
    let span = jiff::SignedDuration::try_from(retention).unwrap_or(jiff::SignedDuration::MAX);
    saved_at.checked_add(span).unwrap_or(Timestamp::MAX)
}

/// The names and times of the saves (and of directories without a record
/// that are as old) past `retention` at `now`: what the sweeps remove.
pub fn expired(layout: &Layout, retention: Duration, now: Timestamp) -> Vec<(String, Timestamp)> {
    let root = layout.discarded_dir();
    let Ok(entries) = std::fs::read_dir(&root) else {
        return Vec::new();
    };
    let mut out = Vec::new();
    for entry in entries.filter_map(Result::ok) {
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !plain_name(&name) {
            continue;
        }
        let dir = entry.path();
        let Ok(meta) = std::fs::symlink_metadata(&dir) else {
            continue;
        };
        if !meta.is_dir() {
            continue;
        }
        // A directory whose record cannot be read goes by its own age: a
        // save that never finished is no one's.
        let saved_at = match read_save(&dir) {
            Ok(Some(save)) => save.saved_at,
            _ => meta
                .modified()
                .ok()
                .and_then(|t| Timestamp::try_from(t).ok())
                .unwrap_or(now),
        };
        if expires_at(saved_at, retention) <= now {
            out.push((name, saved_at));
        }
    }
    out.sort();
    out
}

/// Removes the save `name` (a sweep's finding); whether it was there.
pub fn remove(layout: &Layout, name: &str) -> Result<bool, DiscardError> {
    if !plain_name(name) {
        return Err(DiscardError::Refused(format!(
            "{name:?} is not the name of a save"
        )));
    }
    let dir = save_dir(layout, name);
    if std::fs::symlink_metadata(&dir).is_err() {
        return Ok(false);
    }
    // A record that cannot be read pins nothing jackin could name.
    if let Ok(Some(save)) = read_save(&dir) {
        for checkout in &save.checkouts {
            if let Some(pin) = &checkout.base_pin {
                release_pin(&save.name, &checkout.src, pin, &checkout.base_commit);
            }
        }
    }
    remove_if_exists(&dir).map_err(io_at(&dir))?;
    Ok(true)
}

/// Finds a save by its name, or by its instance's name when that instance
/// has exactly one.
pub fn find(layout: &Layout, name: &str) -> Result<Save, DiscardError> {
    let (saves, _) = list(layout);
    if let Some(save) = saves.iter().find(|s| s.name == name) {
        return Ok(save.clone());
    }
    let of_instance: Vec<&Save> = saves.iter().filter(|s| s.instance == name).collect();
    match of_instance.as_slice() {
        [one] => Ok((*one).clone()),
        [] => Err(DiscardError::Refused(format!(
            "no saved work is named {name:?}: `jackin get discarded` lists what is saved"
        ))),
        many => Err(DiscardError::Refused(format!(
            "instance {name} has {} saves ({}): name one",
            many.len(),
            many.iter()
                .map(|s| s.name.as_str())
                .collect::<Vec<_>>()
                .join(", ")
        ))),
    }
}
