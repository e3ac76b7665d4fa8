//! Discarded work, saved. Before jackin deletes an isolated checkout that
//! holds unfinished work (what [`assess`] calls unfinished), it saves that
//! work under `$JACKIN_HOME/discarded/<save>/`, where the operator can get
//! it back until the retention passes (`discardRetention` in `config.yaml`,
//! 7 days by default; the sweeps remove it after that). Every discard goes
//! through here: the purge's `RemoveCheckouts` step saves first and deletes
//! only what was saved; if the save fails, nothing is deleted.
//!
//! A save is one directory per discarded unit, named `<instance>-<unit id>`:
//! - `record.json`: the instance, when, and for each checkout what was
//!   saved (names and counts, commits by id);
//! - `<checkout>.bundle`: a git bundle of the commits the checkout's work
//!   needs beyond its base commit (which the host repository holds).
//!
//! For each checkout the work is kept as commits:
//! - the files: a commit `work` whose tree is the checkout's `HEAD` with
//!   every uncommitted, untracked and ignored file as it was (and deleted
//!   ones gone); its parents are `HEAD` and `index`, a commit of what was
//!   staged, as `git stash` makes them;
//! - its branches, stash entries, tags and other refs that the host
//!   repository does not hold as they are, and `HEAD`.
//!
//! The checkout is the agent's, and so is its `.git`. jackin reads its refs
//! and stash only through confined git (as the assessment does), and builds
//! the save in a repository of its own: `git --git-dir=<jackin's>
//! --work-tree=<the checkout>`, whose config is jackin's, whose
//! `info/attributes` turns every filter and conversion off, whose objects
//! borrow (as alternates, read-only) the checkout's objects, and where
//! every git is confined: it executes nothing but git and writes nothing but
//! the save. The files themselves are copied by jackin, not git: every path
//! is opened beneath the checkout with no link followed anywhere on the
//! way (`openat2`), a symbolic link is saved as a link (what it says, never
//! what it points at), a FIFO, socket or device is not saved, and the sizes
//! are capped ([`MAX_FILE_BYTES`], [`MAX_SAVED_BYTES`],
//! [`MAX_SAVED_FILES`]). What is not saved is listed with why. When git
//! cannot read the checkout at all (its `.git` is not one jackin made, a
//! config git cannot parse), every file of the checkout is saved as it is,
//! without history.
//!
//! [`restore`] brings a save back: into the host repository as branches
//! under `jackin/restored/<save>/`, or as a new checkout directory that is
//! the discarded one again (files, staged state, branches, stash, `HEAD`).
//! It never writes into an existing directory, and the saved objects reach
//! a repository only through a confined `git index-pack --strict`.

use std::io::{self, BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use jackin_api::instance::Isolation;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::assess;
use crate::fsutil::{
    BeneathDir, Links, ensure_private_dir, ensure_real_dir_below, open_regular_file,
    read_untrusted, remove_if_exists, write_atomic,
};
use crate::git::{self, GitError};
use crate::isolation::{self, IsolationError, IsolationRecord};
use crate::layout::{Layout, cap};
use crate::legacy_worktree;
use crate::saved_files::{Collector, Origin, StagingError, refused_by_git};
pub use crate::saved_files::{
    MAX_FILE_BYTES, MAX_LISTED, MAX_SAVED_BYTES, MAX_SAVED_FILES, SavedFiles,
};
use crate::saved_session::{self, SavedSession};

/// The most jackin reads of a checkout's index file.
const MAX_INDEX_BYTES: u64 = 512 << 20;
/// The most refs, and stash entries, a save takes of one checkout.
const MAX_REFS: usize = 10_000;
/// The record in a save's directory.
const RECORD_FILE: &str = "record.json";
/// jackin's own attributes in the repositories it builds and restores
/// with: every file's bytes as they are, no filter, conversion or driver
/// named by the agent's `.gitattributes`.
const NEUTRAL_ATTRIBUTES: &str =
    "* -text -eol -crlf -filter -ident -working-tree-encoding -diff -merge\n";

#[derive(Debug, thiserror::Error)]
pub enum DiscardError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    /// A save could not be made: nothing of the checkout was deleted.
    #[error(
        "mount {dst}: the unfinished work in {path} could not be saved before its discard \
         ({cause}), so nothing was deleted: fix that and purge again, or remove {path} \
         yourself to discard the work unsaved"
    )]
    NotSaved {
        dst: String,
        path: String,
        cause: String,
    },
    #[error("{0}")]
    Refused(String),
}

impl From<StagingError> for DiscardError {
    fn from(e: StagingError) -> Self {
        Self::Io {
            path: e.path,
            source: e.source,
        }
    }
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> DiscardError + '_ {
    move |source| DiscardError::Io {
        path: path.to_owned(),
        source,
    }
}

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
fn listed(names: &[String], total: usize) -> String {
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

/// What [`save_before_discard`] saved just now, for the discard's event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub save: String,
    pub checkouts: Vec<SavedCheckout>,
}

/// Saves the unfinished work of every isolated checkout of the unit
/// `container` before its discard. A checkout with nothing unfinished is
/// not saved; one an earlier attempt saved before its directory went is not
/// saved again (its save stands). Any failure is
/// [`DiscardError::NotSaved`], and then nothing may be deleted.
pub fn save_before_discard(
    layout: &Layout,
    container: &str,
    instance: &str,
) -> Result<Saved, DiscardError> {
    save_where(layout, container, instance, |_| true)
}

/// [`save_before_discard`] of the checkouts that `which` selects (those a
/// rollout retires).
pub fn save_where(
    layout: &Layout,
    container: &str,
    instance: &str,
    which: impl Fn(&IsolationRecord) -> bool,
) -> Result<Saved, DiscardError> {
    let records: Vec<_> = isolation::read_records(layout, container)?
        .into_iter()
        .filter(|record| which(record))
        .collect();
    let name = save_name(instance, container);
    let dir = save_dir(layout, &name);
    // Read when first needed: a home with nothing to save never has one.
    let mut save: Option<Save> = None;
    let mut saved = Vec::new();
    for record in &records {
        let not_saved = |cause: String| DiscardError::NotSaved {
            dst: record.dst.clone(),
            path: record.path.clone(),
            cause,
        };
        let present = std::fs::symlink_metadata(&record.path).is_ok();
        if !present {
            let earlier = loaded(&mut save, &dir, &name, instance, container)
                .map_err(|e| not_saved(e.to_string()))?;
            if earlier.checkouts.iter().any(|c| c.dst == record.dst) {
                continue;
            }
        }
        if assess::assess(record).is_safe() {
            continue;
        }
        let this = loaded(&mut save, &dir, &name, instance, container)
            .map_err(|e| not_saved(e.to_string()))?;
        ensure_private_dir(&dir).map_err(|e| not_saved(format!("{}: {e}", dir.display())))?;
        clear_stale_work(&dir).map_err(|e| not_saved(e.to_string()))?;
        let checkout =
            save_checkout(record, &dir, instance).map_err(|e| not_saved(e.to_string()))?;
        this.checkouts.retain(|c| c.dst != checkout.dst);
        this.checkouts.push(checkout.clone());
        write_save(&dir, this).map_err(|e| not_saved(e.to_string()))?;
        saved.push(checkout);
    }
    Ok(Saved {
        save: name,
        checkouts: saved,
    })
}

/// Saves the conversation of `obj`'s unit `container` before the unit is
/// removed, into the unit's save (beside any saved work). Returns what was
/// saved, in words for the event; none for a unit that never ran an
/// agent. A failure means the unit must stay.
pub fn save_session(
    layout: &Layout,
    container: &str,
    obj: &jackin_api::Instance,
) -> Result<Option<String>, DiscardError> {
    let instance = &obj.metadata.name;
    let name = save_name(instance, container);
    let dir = save_dir(layout, &name);
    let Some(session) = saved_session::save(layout, container, obj, &dir)
        .map_err(|e| DiscardError::Refused(e.to_string()))?
    else {
        return Ok(None);
    };
    let mut save = None;
    let record = loaded(&mut save, &dir, &name, instance, container)?;
    let told = format!(
        "saved the conversation before removing the unit: {}; `jackin restore-discarded {name} \
         --session` makes the session again",
        session.summary()
    );
    record.session = Some(session);
    write_save(&dir, record)?;
    Ok(Some(told))
}

/// The save being made, read from its directory (an earlier attempt's) or
/// begun now.
fn loaded<'a>(
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
        });
        *save = Some(begun);
    }
    Ok(save.as_mut().expect("set just now"))
}

/// Removes what an attempt that was killed left in a save's directory.
fn clear_stale_work(dir: &Path) -> Result<(), DiscardError> {
    for entry in std::fs::read_dir(dir).map_err(io_at(dir))? {
        let path = entry.map_err(io_at(dir))?.path();
        let stale = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(".work-"));
        if stale {
            remove_if_exists(&path).map_err(io_at(&path))?;
        }
    }
    Ok(())
}

fn read_save(dir: &Path) -> Result<Option<Save>, DiscardError> {
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

fn write_save(dir: &Path, save: &Save) -> Result<(), DiscardError> {
    let path = dir.join(RECORD_FILE);
    let mut bytes = serde_json::to_vec_pretty(save).expect("a save serializes");
    bytes.push(b'\n');
    write_atomic(&path, &bytes).map_err(io_at(&path))
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
        release_save_pins(&save);
    }
    remove_if_exists(&dir).map_err(io_at(&dir))?;
    Ok(true)
}

// ---------------------------------------------------------------------
// Saving one checkout.

/// What git says of the checkout, read confined.
#[derive(Debug, Default)]
struct GitState {
    head: Option<String>,
    head_branch: Option<String>,
    /// Refs worth saving, by full name.
    refs: Vec<(String, String)>,
    /// `(message, commit)`, newest first.
    stash: Vec<(String, String)>,
    /// The checkout's index file, when it is a regular file.
    index_file: Option<PathBuf>,
    /// Where the checkout's objects are (the alternates of jackin's own
    /// repository).
    objects: Vec<PathBuf>,
}

/// Runs a confined git over the checkout itself, as the assessment does:
/// the checkout is the work tree, whatever its config says.
fn in_checkout(record: &IsolationRecord, args: &[&str]) -> Result<String, GitError> {
    let work_tree = format!("--work-tree={}", record.path);
    // A worktree's repository is named, never found (see `assess`).
    let place = record.git_place();
    let git_dir = format!("--git-dir={place}");
    let mut argv = vec![work_tree.as_str()];
    if place != record.path {
        argv.insert(0, git_dir.as_str());
    }
    argv.extend_from_slice(args);
    let reads = isolation::repository_reads(record)
        .map_err(|e| GitError::Spawn(io::Error::other(e.to_string())))?;
    let reads: Vec<&Path> = reads.iter().map(PathBuf::as_path).collect();
    git::run_untrusted_reading(&record.git_place(), &argv, &reads)
        .map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// `Ok(None)` when git said no (exit status not zero, nothing else wrong).
fn answer(result: Result<String, GitError>) -> Result<Option<String>, GitError> {
    match result {
        Ok(out) => Ok(Some(out.trim().to_owned())),
        Err(GitError::Failed { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn is_object_name(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A ref name as jackin passes it to git: no option, no control or space.
fn plain_ref(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('-') && name.bytes().all(|b| b > b' ' && b != 0x7f)
}

/// The refs of the host repository, by full name.
fn host_refs(src: &str) -> std::collections::BTreeMap<String, String> {
    let Ok(out) = crate::checkout::in_host(
        src,
        &["for-each-ref", "--format=%(refname)%00%(objectname)"],
    ) else {
        return Default::default();
    };
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|line| {
            let (name, tip) = line.split_once('\0')?;
            Some((name.to_owned(), tip.to_owned()))
        })
        .collect()
}

/// What git says of a repository of the checkout's own: a clone's `.git`,
/// or a worktree's repository beside it.
fn read_repository_state(record: &IsolationRecord) -> Result<GitState, String> {
    let dir = record.path.as_str();
    let dot_git = match record.isolation {
        Isolation::Worktree => {
            crate::worktree::check_repository(record).map_err(|e| e.to_string())?;
            PathBuf::from(record.git_place())
        }
        _ => Path::new(dir).join(".git"),
    };
    let objects = dot_git.join("objects");
    for (path, what) in [(&dot_git, "repository"), (&objects, "repository's objects")] {
        if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(format!("its {what} is not a directory"));
        }
    }
    let fail = |e: GitError| e.to_string();
    let head = answer(in_checkout(
        record,
        &["rev-parse", "--verify", "-q", "HEAD^{commit}"],
    ))
    .map_err(fail)?
    .filter(|h| is_object_name(h));
    let head_branch = answer(in_checkout(record, &["symbolic-ref", "-q", "HEAD"]))
        .map_err(fail)?
        .and_then(|r| r.strip_prefix("refs/heads/").map(str::to_owned))
        .filter(|b| plain_ref(b));
    let listed = in_checkout(
        record,
        &["for-each-ref", "--format=%(refname)%00%(objectname)"],
    )
    .map_err(fail)?;
    let mut refs = Vec::new();
    let mut has_stash = false;
    for line in listed.lines() {
        let Some((name, tip)) = line.split_once('\0') else {
            continue;
        };
        if name == "refs/stash" {
            has_stash = true;
            continue;
        }
        if name.starts_with("refs/remotes/") || !plain_ref(name) || !is_object_name(tip) {
            continue;
        }
        refs.push((name.to_owned(), tip.to_owned()));
    }
    let mut stash = Vec::new();
    if has_stash {
        let entries = in_checkout(
            record,
            &["log", "-g", "--format=%H%x00%gs", "refs/stash", "--"],
        )
        .map_err(fail)?;
        for line in entries.lines().take(MAX_REFS) {
            if let Some((commit, message)) = line.split_once('\0')
                && is_object_name(commit)
            {
                stash.push((message.to_owned(), commit.to_owned()));
            }
        }
    }
    let index = dot_git.join("index");
    Ok(GitState {
        head,
        head_branch,
        refs,
        stash,
        index_file: std::fs::symlink_metadata(&index)
            .is_ok_and(|m| m.is_file())
            .then_some(index),
        objects: vec![objects],
    })
}

/// What git says of a worktree an earlier jackin made: its refs are the
/// host repository's, its `HEAD` and index in its entry there.
fn read_legacy_worktree_state(record: &IsolationRecord) -> Result<GitState, String> {
    let branch = record.scratch_branch.clone().unwrap_or_default();
    let tip_of = |name: &str| -> Result<Option<String>, String> {
        let full = format!("refs/heads/{name}");
        answer(
            crate::checkout::in_host(&record.src, &["rev-parse", "--verify", "-q", &full])
                .map(|out| String::from_utf8_lossy(&out).into_owned()),
        )
        .map(|tip| tip.filter(|t| is_object_name(t)))
        .map_err(|e| e.to_string())
    };
    let scratch_tip = tip_of(&branch)?;
    let common = crate::checkout::git_dir_of(record).map_err(|e| e.to_string())?;
    let mut objects = vec![common.join("objects")];
    let view = legacy_worktree::view_objects(record);
    if std::fs::symlink_metadata(&view).is_ok_and(|m| m.is_dir()) {
        objects.push(view);
    }
    let mut state = GitState {
        objects,
        ..Default::default()
    };
    if let Some(tip) = &scratch_tip
        && *tip != record.base_commit
    {
        state
            .refs
            .push((format!("refs/heads/{branch}"), tip.clone()));
    }
    if std::fs::symlink_metadata(&record.path).is_err() {
        // Gone: its scratch branch is all there is.
        state.head = scratch_tip;
        state.head_branch = Some(branch);
        return Ok(state);
    }
    legacy_worktree::check_link(record).map_err(|e| e.to_string())?;
    let admin = PathBuf::from(record.admin_dir.clone().unwrap_or_default());
    let head = read_untrusted(&admin.join("HEAD"), 4096)
        .map_err(|e| format!("{}: {e}", admin.join("HEAD").display()))?;
    let head = String::from_utf8_lossy(&head).trim().to_owned();
    match head.strip_prefix("ref: refs/heads/") {
        Some(name) if plain_ref(name) => {
            state.head = if name == branch {
                scratch_tip
            } else {
                tip_of(name)?
            };
            state.head_branch = Some(name.to_owned());
        }
        Some(_) => {
            return Err(format!(
                "its HEAD names {:?}",
                head.chars().take(80).collect::<String>()
            ));
        }
        None if is_object_name(&head) => state.head = Some(head),
        None => return Err("its HEAD names no commit".into()),
    }
    let index = admin.join("index");
    state.index_file = std::fs::symlink_metadata(&index)
        .is_ok_and(|m| m.is_file())
        .then_some(index);
    Ok(state)
}

/// jackin's own repository for one save, in a work directory of the save:
/// its config is jackin's, its attributes neutral, its objects its own with
/// the checkout's as alternates.
struct Scratch {
    work: tempfile::TempDir,
    git_dir: PathBuf,
    staging: PathBuf,
    /// What its git may read besides it: its alternates, and the objects
    /// the host's borrow in turn (never what the agent's name).
    reads: Vec<PathBuf>,
}

impl Scratch {
    fn new(
        save_dir: &Path,
        object_format: &str,
        alternates: &[PathBuf],
        reads: Vec<PathBuf>,
        head: Option<&str>,
    ) -> Result<Self, DiscardError> {
        let work = tempfile::Builder::new()
            .prefix(".work-")
            .tempdir_in(save_dir)
            .map_err(io_at(save_dir))?;
        let git_dir = work.path().join("repo.git");
        let staging = work.path().join("files");
        let alternates: String = alternates
            .iter()
            .map(|p| format!("{}\n", p.display()))
            .collect();
        let files: [(&str, String); 5] = [
            // Detached at the checkout's `HEAD`: what status compares with.
            (
                "HEAD",
                head.map_or_else(
                    || "ref: refs/heads/jackin-unborn\n".to_owned(),
                    |h| format!("{h}\n"),
                ),
            ),
            (
                "config",
                format!(
                    "[core]\n\trepositoryformatversion = 1\n\tbare = true\n\tautocrlf = false\n\
                     \tsafecrlf = false\n\tsymlinks = true\n\tfilemode = true\n\
                     \tignorecase = false\n\tuntrackedCache = false\n\tsplitIndex = false\n\
                     [extensions]\n\tobjectFormat = {object_format}\n\
                     [gc]\n\tauto = 0\n[user]\n\tname = jackin\n\temail = jackin@localhost\n"
                ),
            ),
            ("objects/info/alternates", alternates),
            ("info/attributes", NEUTRAL_ATTRIBUTES.into()),
            ("info/exclude", String::new()),
        ];
        for (name, text) in files {
            let path = git_dir.join(name);
            write_atomic(&path, text.as_bytes()).map_err(io_at(&path))?;
        }
        for dir in ["refs/heads", "refs/saved", "objects/pack"] {
            let path = git_dir.join(dir);
            ensure_private_dir(&path).map_err(io_at(&path))?;
        }
        ensure_private_dir(&staging).map_err(io_at(&staging))?;
        Ok(Self {
            work,
            git_dir,
            staging,
            reads,
        })
    }

    fn dir(&self) -> &str {
        self.git_dir.to_str().expect("jackin's paths are UTF-8")
    }

    /// A confined git in this repository, writing only the work
    /// directory; `work_tree` is the checkout, or the staged copies.
    fn git(&self, work_tree: Option<&Path>, args: &[&str]) -> Result<String, GitError> {
        self.git_fed(work_tree, args, None)
    }

    fn git_fed(
        &self,
        work_tree: Option<&Path>,
        args: &[&str],
        input: Option<&Path>,
    ) -> Result<String, GitError> {
        let git_dir = format!("--git-dir={}", self.dir());
        let work_tree = work_tree.map(|w| format!("--work-tree={}", w.display()));
        let mut argv = vec!["--literal-pathspecs", git_dir.as_str()];
        argv.extend(work_tree.as_deref());
        argv.extend_from_slice(args);
        let reads: Vec<&Path> = self.reads.iter().map(PathBuf::as_path).collect();
        git::run_untrusted_fed(self.dir(), &argv, &reads, &[self.work.path()], input)
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    /// A file of jackin's in the work directory, for git's standard input.
    fn input(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, DiscardError> {
        let path = self.work.path().join(name);
        write_atomic(&path, bytes).map_err(io_at(&path))?;
        Ok(path)
    }

    /// Writes a ref of this repository (jackin's own file).
    fn set_ref(&self, name: &str, commit: &str) -> Result<(), DiscardError> {
        let path = self.git_dir.join(name);
        write_atomic(&path, format!("{commit}\n").as_bytes()).map_err(io_at(&path))
    }
}

/// Saves one checkout into `save_dir`.
#[expect(clippy::too_many_lines, reason = "issue 42: to be split")]
fn save_checkout(
    record: &IsolationRecord,
    save_dir: &Path,
    instance: &str,
) -> Result<SavedCheckout, DiscardError> {
    let format = if record.base_commit.len() == 64 {
        "sha256"
    } else {
        "sha1"
    };
    let state = if record.is_legacy_worktree() {
        read_legacy_worktree_state(record)
    } else {
        read_repository_state(record)
    };
    let present = std::fs::symlink_metadata(&record.path).is_ok_and(|m| m.is_dir());
    let mut saved = SavedCheckout {
        dst: record.dst.clone(),
        isolation: record.isolation,
        src: record.src.clone(),
        base_commit: record.base_commit.clone(),
        ..Default::default()
    };
    let mut collector = Collector::default();
    let (state, history) = match state {
        Ok(state) => (state, true),
        Err(why) => {
            collector.skip(
                ".git",
                &format!(
                    "git cannot read the checkout ({why}): its files are saved without history"
                ),
            );
            (GitState::default(), false)
        }
    };
    // The host repository's objects too (the operator's, read-only): what
    // the bundle may leave out is what the host has.
    let mut alternates = state.objects.clone();
    if let Ok(common) = crate::checkout::common_dir(&record.src) {
        let objects = common.join("objects");
        if std::fs::symlink_metadata(&objects).is_ok_and(|m| m.is_dir())
            && !alternates.contains(&objects)
        {
            alternates.push(objects);
        }
    }
    let mut reads = alternates.clone();
    for objects in &alternates {
        // The host's objects borrow what their operator wrote; a
        // checkout's alternates are the agent's, and stay unread.
        if !state.objects.contains(objects) {
            reads.extend(crate::checkout::alternates_of(objects));
        }
    }
    let scratch = Scratch::new(save_dir, format, &alternates, reads, state.head.as_deref())?;
    saved.head = state.head.clone();
    saved.head_branch = state.head_branch.clone();

    // What was staged: the checkout's own index, copied (never used in
    // place: the agent wrote it), written as a tree of jackin's.
    let index_copied = match &state.index_file {
        Some(file) => match read_untrusted(file, MAX_INDEX_BYTES) {
            Ok(bytes) => {
                let path = scratch.git_dir.join("index");
                write_atomic(&path, &bytes).map_err(io_at(&path))?;
                true
            }
            Err(e) => {
                collector.skip("index", &format!("the staged state is not saved ({e})"));
                false
            }
        },
        None => false,
    };
    if index_copied {
        drop_refused_entries(&scratch, &mut collector)?;
        match scratch.git(None, &["write-tree"]) {
            Ok(tree) => {
                let tree = tree.trim().to_owned();
                let message = format!("jackin: what was staged in {} ({instance})", record.dst);
                let mut args = vec!["commit-tree", "--no-gpg-sign", "-m", &message];
                if let Some(head) = &state.head {
                    args.extend(["-p", head]);
                }
                args.push(&tree);
                saved.index = Some(scratch.git(None, &args)?.trim().to_owned());
            }
            Err(GitError::Failed { stderr, .. }) => {
                collector.skip(
                    "index",
                    &format!(
                        "the staged state is not saved (git: {})",
                        first_line(&stderr)
                    ),
                );
            }
            Err(e) => return Err(e.into()),
        }
    }

    // What to save of the files: what git status calls changed,
    // untracked or ignored, against the copied index (else `HEAD`).
    let tree = BeneathDir::open(Path::new(&record.path));
    if present {
        let tree = tree.map_err(io_at(Path::new(&record.path)))?;
        let paths = if history {
            changed_paths(&scratch, record, &state, index_copied)?
        } else {
            vec![(String::new(), Origin::Untracked)]
        };
        for (path, origin) in paths {
            collector.take(&tree, &scratch.staging, &path, origin)?;
        }
    }

    // The files as a commit: `HEAD`'s tree with the saved files over it.
    match &state.head {
        Some(head) => scratch.git(None, &["read-tree", head])?,
        None => scratch.git(None, &["read-tree", "--empty"])?,
    };
    if !collector.deleted.is_empty() {
        let list = scratch.input("deleted", &nul_list(&collector.deleted))?;
        scratch.git_fed(
            Some(&scratch.staging),
            &["update-index", "--force-remove", "-z", "--stdin"],
            Some(&list),
        )?;
    }
    if !collector.saved.is_empty() {
        let list = scratch.input("saved", &nul_list(&collector.saved))?;
        scratch.git_fed(
            Some(&scratch.staging),
            &["update-index", "--add", "--replace", "-z", "--stdin"],
            Some(&list),
        )?;
    }
    let tree = scratch.git(None, &["write-tree"])?.trim().to_owned();
    let head_tree = match &state.head {
        Some(head) => Some(
            scratch
                .git(None, &["rev-parse", &format!("{head}^{{tree}}")])?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    if head_tree.as_deref() != Some(tree.as_str()) || saved.index.is_some() {
        let message = format!(
            "jackin: the uncommitted files of {} as {instance} left them",
            record.dst
        );
        let mut args = vec!["commit-tree", "--no-gpg-sign", "-m", &message];
        if let Some(head) = &state.head {
            args.extend(["-p", head]);
        }
        if let Some(index) = &saved.index {
            args.extend(["-p", index]);
        }
        args.push(&tree);
        saved.work = Some(scratch.git(None, &args)?.trim().to_owned());
    }

    // The refs the host does not hold as they are.
    let host = host_refs(&record.src);
    let mut wanted: Vec<(String, String)> = Vec::new();
    for (name, tip) in state.refs.iter().take(MAX_REFS) {
        let same_on_host = host.get(name) == Some(tip);
        let at_base = name.starts_with("refs/heads/") && *tip == record.base_commit;
        if !same_on_host && !at_base {
            wanted.push((name.clone(), tip.clone()));
        }
    }
    let commits: Vec<&str> = wanted
        .iter()
        .map(|(_, tip)| tip.as_str())
        .chain(state.stash.iter().map(|(_, c)| c.as_str()))
        .chain(state.head.as_deref())
        .collect();
    let present_commits = present_objects(&scratch, &commits)?;
    let mut refs_in_bundle: Vec<String> = Vec::new();
    let mut keep = |scratch: &Scratch, commit: &str| -> Result<(), DiscardError> {
        let name = format!("refs/saved/{}", refs_in_bundle.len());
        scratch.set_ref(&name, commit)?;
        refs_in_bundle.push(name);
        Ok(())
    };
    for (name, tip) in &wanted {
        if !present_commits.contains(tip.as_str()) {
            collector.skip(name, "its commits are not in the checkout");
            continue;
        }
        keep(&scratch, tip)?;
        let entry = SavedRef {
            name: name.clone(),
            commit: tip.clone(),
        };
        if let Some(branch) = name.strip_prefix("refs/heads/") {
            saved.branches.push(SavedRef {
                name: branch.to_owned(),
                ..entry
            });
        } else if let Some(tag) = name.strip_prefix("refs/tags/") {
            saved.tags.push(SavedRef {
                name: tag.to_owned(),
                ..entry
            });
        } else {
            saved.other_refs.push(entry);
        }
    }
    for (message, commit) in &state.stash {
        if !present_commits.contains(commit.as_str()) {
            collector.skip("refs/stash", "an entry's commits are not in the checkout");
            continue;
        }
        keep(&scratch, commit)?;
        saved.stash.push(SavedRef {
            name: message.clone(),
            commit: commit.clone(),
        });
    }
    if let Some(head) = &state.head
        && present_commits.contains(head.as_str())
    {
        keep(&scratch, head)?;
    }
    for commit in [&saved.work, &saved.index].into_iter().flatten() {
        keep(&scratch, commit)?;
    }

    // The bundle: what those refs need beyond the base, when the host
    // repository still has the base; everything, when it does not.
    let base_on_host = crate::checkout::in_host(
        &record.src,
        &[
            "cat-file",
            "-e",
            &format!("{}^{{commit}}", record.base_commit),
        ],
    )
    .is_ok();
    let mut revs = vec!["--all"];
    if base_on_host {
        revs.extend(["--not", record.base_commit.as_str()]);
    }
    let mut count = vec!["rev-list", "--count", "--objects"];
    count.extend(&revs);
    let needed: u64 = scratch.git(None, &count)?.trim().parse().unwrap_or(1);
    if needed > 0 {
        let file = format!("{}.bundle", isolation::slug(&record.dst));
        let out = scratch.work.path().join("out.bundle");
        let out_str = out.to_str().expect("jackin's paths are UTF-8");
        let mut args = vec!["bundle", "create", "-q", out_str];
        args.extend(&revs);
        scratch.git(None, &args)?;
        let to = save_dir.join(&file);
        std::fs::rename(&out, &to).map_err(io_at(&to))?;
        saved.bundle = Some(file);
        if base_on_host && record.isolation == Isolation::Worktree {
            saved.base_pin = Some(pin_base_for_save(record, save_dir)?);
        }
    } else {
        // An earlier attempt's bundle, which this save no longer needs.
        let stale = save_dir.join(format!("{}.bundle", isolation::slug(&record.dst)));
        remove_if_exists(&stale).map_err(io_at(&stale))?;
    }
    saved.files = collector.finish();
    Ok(saved)
}

/// Pins a worktree's base commit in its host repository for a save whose
/// bundle needs it: the unit's own pin goes with the unit. Returns the ref.
fn pin_base_for_save(record: &IsolationRecord, save_dir: &Path) -> Result<String, DiscardError> {
    let save = save_dir
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a save's directory has a plain name");
    let pin = format!("{SAVED_BASE_PREFIX}{save}/{}", isolation::slug(&record.dst));
    git::run(&[
        "-C",
        &record.src,
        "update-ref",
        "-m",
        "jackin: the base a saved discard needs",
        &pin,
        &record.base_commit,
    ])?;
    Ok(pin)
}

/// Where the pins of saves' bases live in a host repository.
const SAVED_BASE_PREFIX: &str = "refs/jackin/saved/";

/// Removes the pins a save holds in host repositories, each only if it
/// still names the base it pinned; what cannot be removed is logged.
fn release_save_pins(save: &Save) {
    for checkout in &save.checkouts {
        let Some(pin) = &checkout.base_pin else {
            continue;
        };
        if !pin.starts_with(SAVED_BASE_PREFIX) || !Path::new(&checkout.src).exists() {
            continue;
        }
        if let Err(e) = git::run(&[
            "-C",
            &checkout.src,
            "update-ref",
            "-d",
            pin,
            &checkout.base_commit,
        ]) {
            tracing::warn!("the save {} left {pin} in {}: {e}", save.name, checkout.src);
        }
    }
}

fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect()
}

fn nul_list(paths: &[String]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for path in paths {
        bytes.extend_from_slice(path.as_bytes());
        bytes.push(0);
    }
    bytes
}

/// Which of `commits` the scratch repository (with its alternates) has as
/// commits or tags.
fn present_objects<'a>(
    scratch: &Scratch,
    commits: &[&'a str],
) -> Result<std::collections::BTreeSet<&'a str>, DiscardError> {
    if commits.is_empty() {
        return Ok(Default::default());
    }
    let lines: String = commits.iter().map(|c| format!("{c}\n")).collect();
    let input = scratch.input("commits", lines.as_bytes())?;
    let out = scratch.git_fed(None, &["cat-file", "--batch-check"], Some(&input))?;
    let found: std::collections::BTreeSet<&str> = out
        .lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let (name, kind) = (words.next()?, words.next()?);
            matches!(kind, "commit" | "tag").then_some(name)
        })
        .collect();
    Ok(commits
        .iter()
        .copied()
        .filter(|c| found.contains(c))
        .collect())
}

/// Takes out of the copied index every entry whose path git refuses (a
/// `..`, a `.git`: see [`refused_by_git`]), listing each as not saved, so
/// that the rest of what was staged is saved and can come back: one such
/// path would make the whole save unrestorable (`fsck` refuses its tree).
/// An index git cannot list is left for `write-tree` to judge.
fn drop_refused_entries(scratch: &Scratch, collector: &mut Collector) -> Result<(), DiscardError> {
    let listed = match scratch.git(None, &["ls-files", "--stage", "-z"]) {
        Ok(listed) => listed,
        Err(GitError::Failed { .. }) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut kept = Vec::new();
    let mut refused = false;
    for entry in listed.split('\0').filter(|e| !e.is_empty()) {
        let Some((info, path)) = entry.split_once('\t') else {
            continue;
        };
        if refused_by_git(path, info.starts_with("120000")) {
            collector.skip(path, "staged under a path git refuses; not saved");
            refused = true;
        } else {
            kept.extend_from_slice(entry.as_bytes());
            kept.push(0);
        }
    }
    if refused {
        let input = scratch.input("index-info", &kept)?;
        scratch.git(None, &["read-tree", "--empty"])?;
        scratch.git_fed(None, &["update-index", "-z", "--index-info"], Some(&input))?;
    }
    Ok(())
}

/// The paths git status lists in the checkout, read through jackin's
/// repository with the copied index (the checkout's own config, hooks and
/// attributes play no part). An untracked or ignored directory is listed
/// whole (with a trailing `/`).
fn changed_paths(
    scratch: &Scratch,
    record: &IsolationRecord,
    state: &GitState,
    index_copied: bool,
) -> Result<Vec<(String, Origin)>, DiscardError> {
    let checkout = Path::new(&record.path);
    if !index_copied {
        match &state.head {
            Some(head) => scratch.git(None, &["read-tree", head])?,
            None => scratch.git(None, &["read-tree", "--empty"])?,
        };
    }
    let status = |extra: &[&str]| -> Result<String, GitError> {
        let mut args = vec![
            "status",
            "--porcelain=v1",
            "-z",
            // Submodules keep their own work in their own repositories,
            // which are the agent's: not looked into.
            "--ignore-submodules=all",
        ];
        args.extend_from_slice(extra);
        scratch.git(Some(checkout), &args)
    };
    let changed = match status(&["--untracked-files=all"]) {
        Ok(out) => out,
        // An index git cannot read: compared with `HEAD` instead.
        Err(GitError::Failed { .. }) if index_copied => {
            return changed_paths(scratch, record, state, false);
        }
        Err(e) => return Err(e.into()),
    };
    let ignored = status(&["--ignored=traditional", "--untracked-files=normal"])?;
    let mut paths = Vec::new();
    let mut entries = changed.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        let (code, path) = (
            entry.get(..2).unwrap_or_default(),
            entry.get(3..).unwrap_or_default(),
        );
        let origin = if code == "??" {
            Origin::Untracked
        } else {
            Origin::Tracked
        };
        paths.push((path.to_owned(), origin));
        if (code.starts_with('R') || code.starts_with('C'))
            && let Some(original) = entries.next()
        {
            paths.push((original.to_owned(), Origin::Tracked));
        }
    }
    for entry in ignored.split('\0') {
        if let Some(path) = entry.strip_prefix("!! ") {
            paths.push((path.to_owned(), Origin::Ignored));
        }
    }
    // Files the index tells status not to look at (assume-unchanged,
    // skip-worktree): the agent wrote the index, so they count.
    if index_copied {
        let tagged = scratch.git(Some(checkout), &["ls-files", "-v", "-z"])?;
        for entry in tagged.split('\0') {
            if let Some((tag, file)) = entry.split_once(' ')
                && (tag == "S" || tag.chars().all(|c| c.is_ascii_lowercase()))
            {
                paths.push((file.to_owned(), Origin::Tracked));
            }
        }
    }
    // Each path once, from where it counts most.
    paths.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    paths.dedup_by(|later, first| later.0 == first.0);
    paths.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    Ok(paths)
}

// ---------------------------------------------------------------------
// Restoring.

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

/// Brings back the save `name` (or the one save of the instance `name`):
/// with `to`, as a new checkout directory there; without, as branches in
/// each checkout's host repository under `jackin/restored/<save>/`.
/// `mount` picks one checkout by its destination. Returns what was done,
/// line by line.
pub fn restore(
    layout: &Layout,
    name: &str,
    to: Option<&Path>,
    mount: Option<&str>,
) -> Result<Vec<String>, DiscardError> {
    let save = find(layout, name)?;
    let dir = save_dir(layout, &save.name);
    let chosen: Vec<&SavedCheckout> = save
        .checkouts
        .iter()
        .filter(|c| mount.is_none_or(|m| c.dst == m))
        .collect();
    let mounts = || {
        save.checkouts
            .iter()
            .map(|c| c.dst.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    };
    if save.checkouts.is_empty() {
        return Err(DiscardError::Refused(format!(
            "{} saved no checkout, only the session: `jackin restore-discarded {0} --session` \
             makes it again",
            save.name
        )));
    }
    if chosen.is_empty() {
        return Err(DiscardError::Refused(format!(
            "{} saved no checkout at {}: it saved {}",
            save.name,
            mount.unwrap_or_default(),
            mounts()
        )));
    }
    let mut lines = Vec::new();
    match to {
        Some(_) if chosen.len() > 1 => {
            return Err(DiscardError::Refused(format!(
                "{} saved {} checkouts ({}): choose one with --mount DST",
                save.name,
                chosen.len(),
                mounts()
            )));
        }
        Some(to) => lines.extend(restore_into_dir(&dir, chosen[0], to)?),
        None => {
            let several = chosen.len() > 1;
            for checkout in chosen {
                lines.extend(restore_into_host(&dir, &save.name, checkout, several)?);
            }
        }
    }
    Ok(lines)
}

/// Lands a save's objects in a repository (`repo`, whose objects are
/// `objects`): the pack of its bundle, checked by a confined `git
/// index-pack --strict` that may write only `objects`.
fn land_objects(
    bundle: &Path,
    repo: &str,
    objects: &Path,
    scratch: &Path,
) -> Result<(), DiscardError> {
    let opened = open_regular_file(bundle, Links::Refuse).map_err(io_at(bundle))?;
    let mut reader = io::BufReader::new(opened);
    let mut header = 0u64;
    loop {
        let mut line = Vec::new();
        let read = (&mut reader)
            .take(64 << 10)
            .read_until(b'\n', &mut line)
            .map_err(io_at(bundle))?;
        header += read as u64;
        if read == 0 || header > cap::DISCARD_RECORD {
            return Err(DiscardError::Refused(format!(
                "{}: not a git bundle jackin wrote",
                bundle.display()
            )));
        }
        if line == b"\n" {
            break;
        }
    }
    let pack = scratch.join("objects.pack");
    let mut out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(&pack)
        .map_err(io_at(&pack))?;
    io::copy(&mut reader, &mut out).map_err(io_at(&pack))?;
    out.flush().map_err(io_at(&pack))?;
    let reads = crate::checkout::host_reads(repo);
    let reads: Vec<&Path> = reads.iter().map(PathBuf::as_path).collect();
    let landed = git::run_untrusted_fed(
        repo,
        &["index-pack", "--stdin", "--fix-thin", "--strict"],
        &reads,
        &[objects],
        Some(&pack),
    );
    match landed {
        Ok(_) => Ok(()),
        Err(GitError::Failed { stderr, .. }) => Err(DiscardError::Refused(format!(
            "the saved commits cannot be brought into {repo}: {} (the bundle {} still holds \
             them; `git bundle list-heads` names them)",
            first_line(&stderr),
            bundle.display()
        ))),
        Err(e) => Err(e.into()),
    }
}

/// A new checkout at `to` that is the discarded one again: a clone of its
/// host repository with the saved commits, its branches, tags and stash,
/// `HEAD` where it was, the files as they were and the index as staged.
#[expect(clippy::too_many_lines, reason = "issue 42: to be split")]
fn restore_into_dir(
    save_dir: &Path,
    checkout: &SavedCheckout,
    to: &Path,
) -> Result<Vec<String>, DiscardError> {
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(DiscardError::Refused(format!(
            "{} exists: restore-discarded never writes into an existing path; name a new \
             directory with --to",
            to.display()
        )));
    }
    if !Path::new(&checkout.src).is_dir() {
        return Err(DiscardError::Refused(format!(
            "the host repository {} is gone, and the saved work builds on it",
            checkout.src
        )));
    }
    let to_str = to
        .to_str()
        .ok_or_else(|| DiscardError::Refused(format!("{} is not UTF-8", to.display())))?;
    // The operator's own repository, cloned as the operator's git would.
    git::run(&[
        "clone",
        "--quiet",
        "--no-checkout",
        "--no-hardlinks",
        "--",
        &checkout.src,
        to_str,
    ])?;
    let made = (|| -> Result<Vec<String>, DiscardError> {
        let to = std::fs::canonicalize(to).map_err(io_at(to))?;
        let to_str = to.to_str().expect("it was UTF-8");
        let git = |args: &[&str]| -> Result<String, GitError> {
            git::run_untrusted_writing(to_str, args, &[], &[&to])
                .map(|out| String::from_utf8_lossy(&out).into_owned())
        };
        let git_fed = |args: &[&str], input: &Path| -> Result<String, GitError> {
            git::run_untrusted_fed(to_str, args, &[], &[&to], Some(input))
                .map(|out| String::from_utf8_lossy(&out).into_owned())
        };
        let work = tempfile::Builder::new()
            .prefix("jackin-restore-")
            .tempdir_in(to.join(".git"))
            .map_err(io_at(&to))?;
        if let Some(bundle) = &checkout.bundle {
            land_objects(&save_dir.join(bundle), to_str, &to, work.path())?;
        }
        let mut refs: std::collections::BTreeMap<String, &str> = Default::default();
        // The branch `HEAD` was on, where it was (the clone's branch of
        // that name is the host's, which may have moved on since).
        if let (Some(branch), Some(head)) = (&checkout.head_branch, &checkout.head) {
            refs.insert(format!("refs/heads/{branch}"), head);
        }
        for branch in &checkout.branches {
            refs.insert(format!("refs/heads/{}", branch.name), &branch.commit);
        }
        for tag in &checkout.tags {
            refs.insert(format!("refs/tags/{}", tag.name), &tag.commit);
        }
        for other in &checkout.other_refs {
            refs.insert(other.name.clone(), &other.commit);
        }
        let mut updates = Vec::new();
        for (name, commit) in &refs {
            updates.extend_from_slice(format!("update {name}").as_bytes());
            updates.push(0);
            updates.extend_from_slice(commit.as_bytes());
            updates.extend_from_slice(b"\0\0");
        }
        if !updates.is_empty() {
            let input = work.path().join("updates");
            write_atomic(&input, &updates).map_err(io_at(&input))?;
            git_fed(
                &["update-ref", "-m", "jackin: restored", "-z", "--stdin"],
                &input,
            )?;
        }
        for entry in checkout.stash.iter().rev() {
            git(&["stash", "store", "-q", "-m", &entry.name, &entry.commit])?;
        }
        match (&checkout.head_branch, &checkout.head) {
            (Some(branch), _) => {
                git(&["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")])?;
            }
            (None, Some(head)) => {
                git(&["update-ref", "--no-deref", "HEAD", head])?;
            }
            (None, None) => {}
        }
        // The files as they were, byte for byte: no filter or conversion
        // the tree's attributes name, then the index as it was staged.
        let attributes = to.join(".git/info/attributes");
        write_atomic(&attributes, NEUTRAL_ATTRIBUTES.as_bytes()).map_err(io_at(&attributes))?;
        if let Some(files) = checkout.work.as_ref().or(checkout.head.as_ref()) {
            git(&["read-tree", "--reset", "-u", files])?;
        }
        if let Some(staged) = checkout.index.as_ref().or(checkout.head.as_ref()) {
            git(&["read-tree", staged])?;
        }
        remove_if_exists(&attributes).map_err(io_at(&attributes))?;
        let mut lines = vec![format!(
            "{}: restored into {} from {}",
            checkout.dst,
            to.display(),
            checkout.src
        )];
        lines.push(format!("  {}", checkout.summary()));
        if let Some(branch) = &checkout.head_branch {
            lines.push(format!("  HEAD is on {branch}"));
        }
        Ok(lines)
    })();
    if made.is_err() {
        // The directory is the clone made just now, and nothing else.
        let _ = remove_if_exists(to);
    }
    made
}

/// The saved commits as branches of the host repository, under
/// `jackin/restored/<save>/` (with the checkout's name after it when the
/// save holds several): its branches, `stash-N`, `uncommitted` (the files
/// on top of `HEAD`) and `HEAD` when it was detached. Refuses when any of
/// them exists.
#[expect(clippy::too_many_lines, reason = "issue 42: to be split")]
fn restore_into_host(
    save_dir: &Path,
    save: &str,
    checkout: &SavedCheckout,
    several: bool,
) -> Result<Vec<String>, DiscardError> {
    let src = checkout.src.as_str();
    if !Path::new(src).is_dir() {
        return Err(DiscardError::Refused(format!(
            "the host repository {src} is gone: restore the save with --to DIR, or fetch from \
             its bundle"
        )));
    }
    let mut prefix = format!("jackin/restored/{save}");
    if several {
        prefix.push('/');
        prefix.push_str(&isolation::slug(&checkout.dst));
    }
    let mut wanted: Vec<(String, String, String)> = Vec::new();
    for branch in &checkout.branches {
        let leaf = match branch.name.strip_prefix("jackin/scratch/") {
            Some(_) => "scratch".to_owned(),
            None => branch.name.clone(),
        };
        wanted.push((
            format!("refs/heads/{prefix}/{leaf}"),
            branch.commit.clone(),
            format!("branch {}", branch.name),
        ));
    }
    for (n, entry) in checkout.stash.iter().enumerate() {
        wanted.push((
            format!("refs/heads/{prefix}/stash-{n}"),
            entry.commit.clone(),
            format!("stash@{{{n}}} ({})", entry.name),
        ));
    }
    for tag in &checkout.tags {
        wanted.push((
            format!("refs/tags/{prefix}/{}", tag.name),
            tag.commit.clone(),
            format!("tag {}", tag.name),
        ));
    }
    for other in &checkout.other_refs {
        let leaf = other.name.strip_prefix("refs/").unwrap_or(&other.name);
        wanted.push((
            format!("refs/heads/{prefix}/{leaf}"),
            other.commit.clone(),
            other.name.clone(),
        ));
    }
    if let Some(work) = &checkout.work {
        wanted.push((
            format!("refs/heads/{prefix}/uncommitted"),
            work.clone(),
            "the uncommitted files, on top of HEAD".into(),
        ));
    }
    if checkout.head_branch.is_none()
        && let Some(head) = &checkout.head
    {
        wanted.push((
            format!("refs/heads/{prefix}/detached-HEAD"),
            head.clone(),
            "the detached HEAD".into(),
        ));
    }
    let mut refused = Vec::new();
    wanted.retain(|(full, _, what)| {
        let valid = git::run(&["check-ref-format", full]).is_ok();
        if !valid {
            refused.push(format!(
                "  not restored: {what}: its name is not a valid ref name"
            ));
        }
        valid
    });
    for (full, _, _) in &wanted {
        let exists = git::run_untrusted(src, &["rev-parse", "--verify", "-q", full]).is_ok();
        if exists {
            return Err(DiscardError::Refused(format!(
                "{full} exists in {src}: this save was restored there already; delete the \
                 branches under {prefix}/ first, or restore into a new directory with --to DIR"
            )));
        }
    }
    if let Some(bundle) = &checkout.bundle {
        let common = crate::checkout::common_dir(src)?;
        let objects = ensure_real_dir_below(&common, Path::new("objects"))
            .map_err(io_at(&common.join("objects")))?;
        let work = tempfile::Builder::new()
            .prefix(".work-restore-")
            .tempdir_in(save_dir)
            .map_err(io_at(save_dir))?;
        land_objects(&save_dir.join(bundle), src, &objects, work.path())?;
    }
    let mut lines = vec![format!("{}: restored into {src}", checkout.dst)];
    for (full, commit, what) in &wanted {
        // Created, never moved: an empty old value means "must not exist".
        git::run(&[
            "-C",
            src,
            "update-ref",
            "-m",
            "jackin: restored discarded work",
            full,
            commit,
            "",
        ])?;
        let short_name = full
            .strip_prefix("refs/heads/")
            .or_else(|| full.strip_prefix("refs/"))
            .unwrap_or(full);
        lines.push(format!("  {short_name}  ({what})"));
    }
    lines.extend(refused);
    if checkout.files.skipped > 0 {
        lines.push(format!(
            "  not saved at the discard: {}",
            listed(&checkout.files.skipped_listed, checkout.files.skipped)
        ));
    }
    Ok(lines)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::instance::MountSpec;
    use std::os::unix::ffi::OsStrExt;
    use std::os::unix::fs::PermissionsExt;

    fn git(dir: &Path, args: &[&str]) -> String {
        let prefix = crate::worktree::testing::git_argv(dir);
        let mut argv: Vec<&str> = prefix.iter().map(String::as_str).collect();
        argv.extend(["-c", "user.email=t@jackin.dev", "-c", "user.name=t"]);
        argv.extend_from_slice(args);
        String::from_utf8(git::run(&argv).unwrap())
            .unwrap()
            .trim()
            .to_owned()
    }

    /// A host repository with one commit on `main`, and a unit in a
    /// scratch home with a checkout of it.
    struct Fixture {
        dir: tempfile::TempDir,
        layout: Layout,
        host: PathBuf,
        record: IsolationRecord,
    }

    const UNIT: &str = "jk-abc123-t";

    impl Fixture {
        fn new(isolation: Isolation) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let host = dir.path().join("host");
            git::run(&[
                "init",
                "--quiet",
                "--initial-branch=main",
                host.to_str().unwrap(),
            ])
            .unwrap();
            std::fs::write(host.join("a.txt"), "one\n").unwrap();
            std::fs::write(host.join(".gitignore"), "build/\n").unwrap();
            git(&host, &["add", "."]);
            git(&host, &["commit", "--quiet", "-m", "base"]);
            let layout = Layout::new(dir.path().join("home"));
            let mount = MountSpec {
                src: host.to_str().unwrap().to_owned(),
                dst: "/workspace/app".into(),
                readonly: false,
                isolation,
            };
            isolation::prepare(&layout, UNIT, std::slice::from_ref(&mount)).unwrap();
            let record = isolation::read_records(&layout, UNIT).unwrap().remove(0);
            Self {
                dir,
                layout,
                host,
                record,
            }
        }

        fn checkout(&self) -> PathBuf {
            PathBuf::from(&self.record.path)
        }
    }

    /// A clone where the agent left every kind of unfinished work: saved,
    /// listed, removed with the checkout, and brought back whole.
    /// An index the agent wrote with entries git refuses (`../escape.txt`,
    /// `.git/hooks/pre-commit`): the save leaves those out and lists them,
    /// and the rest (the good commit, the other staged file) comes back,
    /// into the host and into a directory of its own (L3).
    #[test]
    fn l3_a_save_with_a_refused_index_entry_saves_the_rest() {
        let f = Fixture::new(Isolation::Clone);
        let c = f.checkout();
        std::fs::write(c.join("good.txt"), "good\n").unwrap();
        git(&c, &["add", "good.txt"]);
        git(&c, &["commit", "--quiet", "-m", "good work"]);
        let good = git(&c, &["rev-parse", "HEAD"]);
        std::fs::create_dir_all(c.join("aa")).unwrap();
        std::fs::create_dir_all(c.join(".gix/hooks")).unwrap();
        std::fs::create_dir_all(c.join(".gABCit")).unwrap();
        std::fs::write(c.join(".gABCit/config"), "[core]\n").unwrap();
        std::fs::write(c.join("aa/escape.txt"), "escape\n").unwrap();
        std::fs::write(c.join(".gix/hooks/pre-commit"), "touch /tmp/x\n").unwrap();
        std::fs::write(c.join("staged.txt"), "staged\n").unwrap();
        git(
            &c,
            &[
                "add",
                "aa/escape.txt",
                ".gix/hooks/pre-commit",
                ".gABCit/config",
                "staged.txt",
            ],
        );
        // The same index with two paths no git would write, its checksum
        // made again.
        let index = c.join(".git/index");
        let mut bytes = std::fs::read(&index).unwrap();
        for (from, to) in [
            (&b"aa/escape.txt"[..], &b"../escape.txt"[..]),
            (b".gix/", b".git/"),
            (b".gABCit/", ".g\u{200c}it/".as_bytes()),
        ] {
            let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
            bytes[at..at + from.len()].copy_from_slice(to);
        }
        let body = bytes.len() - 20;
        let scratch = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(scratch.path(), &bytes[..body]).unwrap();
        let sum = std::process::Command::new("sha1sum")
            .arg(scratch.path())
            .output()
            .unwrap();
        let sum = String::from_utf8(sum.stdout).unwrap();
        let sum: Vec<u8> = (0..40)
            .step_by(2)
            .map(|i| u8::from_str_radix(&sum[i..i + 2], 16).unwrap())
            .collect();
        bytes[body..].copy_from_slice(&sum);
        std::fs::write(&index, &bytes).unwrap();
        std::fs::remove_dir_all(c.join("aa")).unwrap();
        std::fs::remove_dir_all(c.join(".gix")).unwrap();
        std::fs::remove_dir_all(c.join(".gABCit")).unwrap();

        let saved = save_before_discard(&f.layout, UNIT, "l3").unwrap();
        let checkout = &saved.checkouts[0];
        assert!(checkout.index.is_some(), "{checkout:?}");
        isolation::remove_all(&f.layout, UNIT).unwrap();

        let to = f.dir.path().join("l3-restored");
        restore(&f.layout, "l3", Some(&to), None).unwrap();
        assert_eq!(git(&to, &["rev-parse", "HEAD"]), good);
        assert_eq!(
            std::fs::read_to_string(to.join("staged.txt")).unwrap(),
            "staged\n"
        );
        let staged = git(&to, &["diff", "--cached", "--name-only"]);
        assert_eq!(staged, "staged.txt");
        assert!(!f.dir.path().join("escape.txt").exists());
        restore(&f.layout, "l3", None, None).unwrap();
        let restored = git(
            &f.host,
            &[
                "for-each-ref",
                "--format=%(refname)",
                "refs/heads/jackin/restored/",
            ],
        );
        assert!(!restored.is_empty(), "nothing restored into the host");
        let skipped = checkout.files.skipped_listed.join("\n");
        for path in [
            "../escape.txt",
            ".git/hooks/pre-commit",
            ".g\u{200c}it/config",
        ] {
            assert!(skipped.contains(path), "{path} not listed: {skipped}");
        }
    }

    #[test]
    #[expect(clippy::too_many_lines, reason = "issue 42: to be split")]
    fn a_clones_work_is_saved_and_comes_back_whole() {
        let f = Fixture::new(Isolation::Clone);
        let c = f.checkout();
        // A stash, a commit on a new branch, then files left as they are.
        std::fs::write(c.join("a.txt"), "stashed\n").unwrap();
        git(&c, &["stash", "push", "--quiet", "-m", "an idea"]);
        git(&c, &["checkout", "--quiet", "-b", "feature"]);
        std::fs::write(c.join("feature.txt"), "feature\n").unwrap();
        git(&c, &["add", "feature.txt"]);
        git(&c, &["commit", "--quiet", "-m", "feature work"]);
        let feature = git(&c, &["rev-parse", "HEAD"]);
        std::fs::write(c.join("a.txt"), "modified\n").unwrap();
        std::fs::write(c.join("staged.txt"), "staged\n").unwrap();
        git(&c, &["add", "staged.txt"]);
        std::fs::write(c.join("new.txt"), "untracked\n").unwrap();
        std::fs::create_dir_all(c.join("build")).unwrap();
        std::fs::write(c.join("build/out.bin"), [0u8, 1, 2, 255]).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", c.join("link")).unwrap();

        let saved = save_before_discard(&f.layout, UNIT, "inst").unwrap();
        assert_eq!(saved.save, "inst-abc123");
        let checkout = &saved.checkouts[0];
        assert_eq!(checkout.head_branch.as_deref(), Some("feature"));
        assert_eq!(
            checkout.branches,
            vec![SavedRef {
                name: "feature".into(),
                commit: feature.clone()
            }]
        );
        assert_eq!(checkout.stash.len(), 1);
        assert_eq!(checkout.files.saved, 5, "{checkout:?}");
        let summary = checkout.summary();
        assert!(
            summary.contains("5 files")
                && summary.contains("1 branch (feature)")
                && summary.contains("1 stash entry"),
            "{summary}"
        );
        assert!(checkout.bundle.is_some());
        let (saves, problems) = list(&f.layout);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(saves.len(), 1);
        isolation::remove_all(&f.layout, UNIT).unwrap();
        assert!(!c.exists());

        // A checkout directory again.
        let to = f.dir.path().join("restored");
        let lines = restore(&f.layout, "inst", Some(&to), None).unwrap();
        assert!(lines[0].contains("restored into"), "{lines:?}");
        assert_eq!(git(&to, &["rev-parse", "HEAD"]), feature);
        assert_eq!(git(&to, &["symbolic-ref", "HEAD"]), "refs/heads/feature");
        assert_eq!(
            std::fs::read_to_string(to.join("a.txt")).unwrap(),
            "modified\n"
        );
        assert_eq!(
            std::fs::read_to_string(to.join("new.txt")).unwrap(),
            "untracked\n"
        );
        assert_eq!(
            std::fs::read(to.join("build/out.bin")).unwrap(),
            [0u8, 1, 2, 255]
        );
        assert_eq!(
            std::fs::read_link(to.join("link")).unwrap(),
            Path::new("/etc/hostname")
        );
        let status = git(&to, &["status", "--porcelain", "--ignored"]);
        assert!(status.contains("M a.txt"), "{status}");
        assert!(status.contains("A  staged.txt"), "{status}");
        assert!(status.contains("?? new.txt"), "{status}");
        assert!(status.contains("!! build/"), "{status}");
        let stash = git(&to, &["stash", "list"]);
        assert!(stash.contains("an idea"), "{stash}");
        assert_eq!(git(&to, &["show", "stash@{0}:a.txt"]), "stashed");
        // Never into an existing directory.
        let err = restore(&f.layout, "inst", Some(&to), None).unwrap_err();
        assert!(err.to_string().contains("exists"), "{err}");

        // Branches in the host repository.
        let lines = restore(&f.layout, "inst-abc123", None, None).unwrap();
        assert!(
            lines
                .iter()
                .any(|l| l.contains("jackin/restored/inst-abc123/feature")),
            "{lines:?}"
        );
        let host = &f.host;
        assert_eq!(
            git(host, &["rev-parse", "jackin/restored/inst-abc123/feature"]),
            feature
        );
        assert_eq!(
            git(
                host,
                &["show", "jackin/restored/inst-abc123/uncommitted:new.txt"]
            ),
            "untracked"
        );
        assert_eq!(
            git(host, &["show", "jackin/restored/inst-abc123/stash-0:a.txt"]),
            "stashed"
        );
        git::run(&["-C", host.to_str().unwrap(), "fsck", "--no-dangling"]).unwrap();
        let again = restore(&f.layout, "inst-abc123", None, None).unwrap_err();
        assert!(
            again.to_string().contains("restored there already"),
            "{again}"
        );

        // Past the retention, the sweep's view of it.
        let later = Timestamp::now() + jiff::SignedDuration::from_hours(24 * 8);
        let gone = expired(
            &f.layout,
            jackin_api::home::DEFAULT_DISCARD_RETENTION,
            later,
        );
        assert_eq!(gone.len(), 1);
        assert!(
            expired(
                &f.layout,
                jackin_api::home::DEFAULT_DISCARD_RETENTION,
                Timestamp::now()
            )
            .is_empty()
        );
        assert!(remove(&f.layout, &gone[0].0).unwrap());
        assert!(list(&f.layout).0.is_empty());
    }

    /// A worktree's repository with the agent's commit (in its own objects
    /// only), and its files: saved, with a pin of the base the bundle needs
    /// for as long as the save exists, and restored.
    #[test]
    fn a_worktrees_work_is_saved_with_the_commits_only_its_repository_holds() {
        let f = Fixture::new(Isolation::Worktree);
        let c = f.checkout();
        // The agent's commit (on a detached HEAD) lands in its repository's
        // objects only.
        let repo = f.record.git_place();
        let base = f.record.base_commit.clone();
        let host = f.host.to_str().unwrap();
        let commit = isolation::tests::agent_commit(host, &repo, &base, "agent");
        std::fs::write(Path::new(&repo).join("HEAD"), format!("{commit}\n")).unwrap();
        assert!(git::run(&["-C", host, "cat-file", "-e", &commit]).is_err());
        std::fs::write(c.join("a.txt"), "changed in the worktree\n").unwrap();
        std::fs::write(c.join("notes.md"), "idea\n").unwrap();

        let saved = save_before_discard(&f.layout, UNIT, "wt").unwrap();
        let checkout = &saved.checkouts[0];
        assert_eq!(checkout.files.saved, 2, "{checkout:?}");
        assert_eq!(checkout.head.as_deref(), Some(commit.as_str()));
        assert_eq!(checkout.head_branch, None);
        assert!(
            checkout.summary().contains("HEAD detached at"),
            "{checkout:?}"
        );
        let pin = checkout
            .base_pin
            .clone()
            .expect("the bundle's base is pinned");
        isolation::remove_all(&f.layout, UNIT).unwrap();
        assert_eq!(
            git(&f.host, &["rev-parse", &pin]),
            base,
            "the save's pin stays"
        );
        let to = f.dir.path().join("wt-restored");
        restore(&f.layout, "wt", Some(&to), None).unwrap();
        assert_eq!(git(&to, &["rev-parse", "HEAD"]), commit);
        assert_eq!(
            std::fs::read_to_string(to.join("notes.md")).unwrap(),
            "idea\n"
        );
        let status = git(&to, &["status", "--porcelain"]);
        assert!(
            status.starts_with("M a.txt") && status.contains("?? notes.md"),
            "{status}"
        );
        assert!(remove(&f.layout, &saved.save).unwrap());
        assert!(
            git::run(&["-C", host, "rev-parse", "--verify", "-q", &pin]).is_err(),
            "the pin went with the save"
        );
    }

    /// A checkout whose `.git` would run programs, with a FIFO and a link
    /// to a host file among its untracked files: the save runs nothing,
    /// follows nothing, waits on nothing, and says what it left.
    #[test]
    fn a_hostile_checkout_is_saved_without_running_or_following_anything() {
        let f = Fixture::new(Isolation::Clone);
        let c = f.checkout();
        let proof = f.dir.path().join("ran");
        let touch = format!("sh -c 'touch {}; cat'", proof.display());
        git(&c, &["config", "core.fsmonitor", &touch]);
        git(&c, &["config", "filter.evil.clean", &touch]);
        git(&c, &["config", "filter.evil.smudge", &touch]);
        std::fs::write(c.join(".gitattributes"), "* filter=evil\n").unwrap();
        std::fs::create_dir_all(c.join(".git/hooks")).unwrap();
        std::fs::write(
            c.join(".git/hooks/post-checkout"),
            format!("#!/bin/sh\ntouch {}\n", proof.display()),
        )
        .unwrap();
        std::fs::set_permissions(
            c.join(".git/hooks/post-checkout"),
            std::fs::Permissions::from_mode(0o755),
        )
        .unwrap();
        let secret = f.dir.path().join("operator-secret");
        std::fs::write(&secret, "the operator's\n").unwrap();
        std::os::unix::fs::symlink(&secret, c.join("secret-link")).unwrap();
        std::fs::create_dir(c.join("dir")).unwrap();
        std::os::unix::fs::symlink(f.dir.path(), c.join("linked-dir")).unwrap();
        std::fs::create_dir(c.join("build")).unwrap();
        std::fs::write(c.join("build/out.o"), "built\n").unwrap();
        for fifo in ["pipe", "build/pipe"] {
            let made = std::process::Command::new("mkfifo")
                .arg(c.join(fifo))
                .status()
                .unwrap();
            assert!(made.success());
        }
        std::fs::write(c.join("dir/kept.txt"), "kept\n").unwrap();
        std::fs::write(c.join(std::ffi::OsStr::from_bytes(b"bad\xffname")), "x\n").unwrap();

        let saved = save_before_discard(&f.layout, UNIT, "evil").unwrap();
        let checkout = &saved.checkouts[0];
        assert_eq!(checkout.files.deleted, 0, "{checkout:?}");
        assert!(
            checkout
                .files
                .skipped_listed
                .iter()
                .any(|s| s.ends_with("a name that is not UTF-8")),
            "{checkout:?}"
        );
        assert!(!proof.exists(), "the checkout's config ran a program");
        // git status passes over a FIFO; one in an ignored directory,
        // which jackin walks itself, is named as not saved.
        assert!(
            checkout
                .files
                .skipped_listed
                .contains(&"build/pipe: a FIFO, socket or device".to_owned()),
            "{checkout:?}"
        );
        let to = f.dir.path().join("evil-restored");
        restore(&f.layout, "evil", Some(&to), None).unwrap();
        assert!(!proof.exists(), "the restore ran a program");
        assert_eq!(std::fs::read_link(to.join("secret-link")).unwrap(), secret);
        assert_eq!(
            std::fs::read_link(to.join("linked-dir")).unwrap(),
            f.dir.path()
        );
        assert_eq!(
            std::fs::read_to_string(to.join("dir/kept.txt")).unwrap(),
            "kept\n"
        );
        assert_eq!(
            std::fs::read_to_string(to.join(".gitattributes")).unwrap(),
            "* filter=evil\n"
        );
        // Nothing of the link's target was read into the save.
        let bundle =
            std::fs::read(save_dir(&f.layout, &saved.save).join(checkout.bundle.as_ref().unwrap()))
                .unwrap();
        assert!(!bundle.windows(14).any(|w| w == b"the operator's"));
        assert!(!to.join("pipe").exists() && !to.join("build/pipe").exists());
    }

    /// A clone whose `.git` the agent replaced with a file pointing
    /// elsewhere: git cannot be trusted to say what changed, so every file
    /// is saved as it is, without history, and the record says why.
    #[test]
    fn a_checkout_git_cannot_read_is_saved_whole_without_history() {
        let f = Fixture::new(Isolation::Clone);
        let c = f.checkout();
        std::fs::remove_dir_all(c.join(".git")).unwrap();
        std::fs::write(
            c.join(".git"),
            format!("gitdir: {}\n", f.host.join(".git").display()),
        )
        .unwrap();
        std::fs::write(c.join("notes.md"), "idea\n").unwrap();
        let saved = save_before_discard(&f.layout, UNIT, "lost").unwrap();
        let checkout = &saved.checkouts[0];
        assert_eq!(checkout.head, None);
        assert!(
            checkout.files.skipped_listed[0].starts_with(".git: git cannot read the checkout"),
            "{checkout:?}"
        );
        // a.txt, .gitignore and notes.md; the `.git` file is not one of them.
        assert_eq!(checkout.files.saved, 3, "{checkout:?}");
        isolation::remove_all(&f.layout, UNIT).unwrap();
        let lines = restore(&f.layout, "lost", None, None).unwrap();
        assert!(lines.iter().any(|l| l.contains("uncommitted")), "{lines:?}");
        assert_eq!(
            git(
                &f.host,
                &["show", "jackin/restored/lost-abc123/uncommitted:notes.md"]
            ),
            "idea"
        );
    }
}
