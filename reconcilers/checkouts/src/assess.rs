//! The one assessment of an isolated checkout, used on every edge (purge,
//! exit, resume): what would be lost if it were discarded. "Clean" means
//! nothing would be.
//!
//! Unfinished work is:
//! - any uncommitted or untracked file, and any ignored one (`!!`): a
//!   discarded checkout takes them all;
//! - any local branch that is not safe. A branch is safe when its tip is the
//!   base commit, when its upstream exists and it has no commits ahead of it,
//!   or when its upstream is gone (merged and pruned);
//! - a detached `HEAD` with commits no branch holds;
//! - in a clone, and in a worktree's own repository, both of which go
//!   whole: every other ref (a stash, a tag, a note) that holds commits
//!   neither a remote nor the host repository has;
//! - a worktree whose directory is missing while its scratch branch still
//!   holds commits: a purge would delete the branch.
//!
//! Any git error is unsafe: the assessment fails closed.
//!
//! A worktree an earlier jackin made as a `git worktree` (until it moves to
//! a repository of its own, at its next start) shared its branches with the
//! host repository and with every other worktree of it, so only the
//! branches that are its own are judged there: its scratch branch, the
//! branch it holds (its `HEAD`), and a branch it checked out since it was
//! made (its `HEAD` reflog says so), never another instance's scratch
//! branch. The host's own branches, as they were when it was made, are the
//! operator's and are left out unless it moved them.

use std::collections::BTreeSet;
use std::path::Path;

use jackin_api::instance::MountStatus;
use sha2::{Digest, Sha256};

use jackin_plan::digest::hex;
// The digest helpers the cli reads the status with live with the view.
use crate::git;
use crate::isolation::{self, IsolationRecord};
use crate::legacy_worktree;
use crate::worktree;
use jackin_files::fsutil::{Links, open_regular_file};
pub use jackin_plan::view::{acknowledgement_digest, has_unfinished_work};

/// The largest file whose bytes the digest reads; a larger one is known
/// by its size and time, unread.
const MAX_HASHED_BYTES: u64 = 64 << 20;

/// At most this many files are listed in the status; the rest are counted.
pub const MAX_LISTED_FILES: usize = 20;

/// The evidence for one checkout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assessment {
    /// `git status --porcelain` entries, e.g. ` M src/lib.rs`, `?? notes.md`.
    pub dirty_files: Vec<String>,
    /// Unsafe branches with why, e.g. `feature/x (2 commits ahead of origin/feature/x)`.
    pub unsafe_branches: Vec<String>,
    /// A git failure, which makes the checkout unsafe.
    pub error: Option<String>,
    /// What the evidence stands for, beyond its wording: the contents of
    /// every uncommitted file and the tip of every local branch. Hashed into
    /// the digest, so an acknowledgement covers exactly what was there.
    pub fingerprint: Vec<String>,
}

impl Assessment {
    pub fn is_safe(&self) -> bool {
        self.dirty_files.is_empty() && self.unsafe_branches.is_empty() && self.error.is_none()
    }
}

/// A repository as the assessment runs git in it: `git -C <place>
/// --work-tree=<work_tree>`. For a checkout, the work tree is always the
/// checkout itself (a clone's `core.worktree` could point status at a clean
/// tree elsewhere), and the place its repository (see
/// [`IsolationRecord::git_place`]).
pub(crate) struct InRepo {
    place: String,
    work_tree: String,
    /// What git may read besides the two: see [`isolation::repository_reads`].
    reads: Vec<std::path::PathBuf>,
}

impl InRepo {
    fn checkout(record: &IsolationRecord) -> Result<Self, String> {
        Ok(Self {
            place: record.git_place(),
            work_tree: record.path.clone(),
            reads: isolation::repository_reads(record).map_err(|e| e.to_string())?,
        })
    }

    /// The host repository `src`, with what it needs read beside it.
    fn host(src: &str) -> Self {
        Self {
            place: src.to_owned(),
            work_tree: src.to_owned(),
            reads: crate::checkout::host_reads(src),
        }
    }
}

/// Runs git in a repository the agent may have rigged: confined, so that
/// no program the tree names runs, at any submodule depth, and nothing
/// beyond what [`InRepo`] names is read (see [`git::run_untrusted`]), over
/// the work tree [`InRepo`] names.
pub(crate) fn git_in(at: &InRepo, args: &[&str]) -> Result<String, String> {
    let work_tree = format!("--work-tree={}", at.work_tree);
    // A repository beside its work tree is named, never found: a `.git`
    // the agent made inside it would be found first.
    let git_dir = format!("--git-dir={}", at.place);
    let mut argv = vec![work_tree.as_str()];
    if at.place != at.work_tree {
        argv.insert(0, git_dir.as_str());
    }
    argv.extend_from_slice(args);
    let reads: Vec<&Path> = at.reads.iter().map(|p| p.as_path()).collect();
    git::run_untrusted_reading(&at.place, &argv, &reads)
        .map(|out| String::from_utf8_lossy(&out).into_owned())
        .map_err(|e| e.to_string())
}

/// Assesses one recorded checkout.
///
/// Read-only: nothing of the operator's repository is written. A
/// worktree's branch is judged where the agent moves it, in the unit's own
/// repository; the host's scratch branch catches up only when jackin
/// publishes (at a start, a stop and before a removal), never because
/// someone looked.
pub fn assess(record: &IsolationRecord) -> Assessment {
    let result = if Path::new(&record.path).exists() {
        assess_inner(record)
    } else {
        assess_missing(record)
    };
    match result {
        Ok(assessment) => assessment,
        Err(error) => Assessment {
            error: Some(error),
            ..Default::default()
        },
    }
}

/// A checkout whose directory is gone (deleted, or on a disk that is not
/// mounted). A clone took its work with it; a worktree's scratch branch
/// lives on in the unit's repository (while it is there) and in the host
/// repository, and a purge would delete it.
fn assess_missing(record: &IsolationRecord) -> Result<Assessment, String> {
    let mut assessment = Assessment::default();
    let Some(branch) = &record.scratch_branch else {
        return Ok(assessment);
    };
    if !record.is_legacy_worktree()
        && let Some((tip, ahead)) =
            worktree::unit_branch_ahead(record).map_err(|e| e.to_string())?
    {
        assessment.fingerprint.push(format!("{branch}\0{tip}"));
        if ahead > 0 {
            assessment.unsafe_branches.push(format!(
                "{branch} ({ahead} commits since the base; its checkout {} is missing)",
                record.path
            ));
        }
        return Ok(assessment);
    }
    let src = InRepo::host(&record.src);
    let full = format!("refs/heads/{branch}");
    let Ok(tip) = git_in(&src, &["rev-parse", "--verify", "--quiet", &full]) else {
        return Ok(assessment);
    };
    let tip = tip.trim();
    assessment.fingerprint.push(format!("{branch}\0{tip}"));
    let ahead = count(&src, &format!("{}..{full}", record.base_commit))?;
    if ahead > 0 {
        assessment.unsafe_branches.push(format!(
            "{branch} ({ahead} commits since the base; its checkout {} is missing)",
            record.path
        ));
    }
    Ok(assessment)
}

/// The checkout's repository, once what links it to its work tree is
/// checked to be jackin's (a legacy worktree's link, a worktree's
/// repository beside it).
pub(crate) fn checked_checkout(record: &IsolationRecord) -> Result<InRepo, String> {
    if record.is_legacy_worktree() {
        legacy_worktree::check_link(record).map_err(|e| e.to_string())?;
    } else if record.scratch_branch.is_some() {
        worktree::check_repository(record).map_err(|e| e.to_string())?;
    }
    InRepo::checkout(record)
}

fn assess_inner(record: &IsolationRecord) -> Result<Assessment, String> {
    let at = checked_checkout(record)?;
    let mut assessment = Assessment::default();
    assess_files(record, &at, &mut assessment)?;
    assess_branches(record, &at, &mut assessment)?;
    if record.is_legacy_worktree() {
        legacy_unpublished(record, &mut assessment)?;
    } else {
        other_refs_of_a_repository(record, &mut assessment)?;
    }
    assess_detached_head(record, &at, &mut assessment)?;
    Ok(assessment)
}

/// The checkout's files that a discard would take: uncommitted, untracked
/// and ignored ones, and those the index hides from status.
fn assess_files(
    record: &IsolationRecord,
    at: &InRepo,
    assessment: &mut Assessment,
) -> Result<(), String> {
    let dir = record.path.as_str();
    let status = git_in(
        at,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--untracked-files=all",
            // A `.gitmodules` or config the agent wrote may say `ignore =
            // all` for a submodule: the gate does not go blind on its say.
            "--ignore-submodules=none",
        ],
    )?;
    // Ignored files go with the checkout too. Listed by directory, so a
    // large ignored tree (a build's output) is one entry.
    let ignored = git_in(
        at,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--ignored=traditional",
            "--untracked-files=normal",
            "--ignore-submodules=none",
        ],
    )?;
    // The files `include` copied in and the agent left as they were are
    // the operator's, not work (see `crate::include`).
    let unchanged = crate::include::unchanged(Path::new(dir), &record.included);
    let mut ignored_entries = Vec::new();
    for entry in ignored.split('\0').filter(|e| e.starts_with("!! ")) {
        if !only_unchanged_included(at, &entry[3..], &unchanged)? {
            ignored_entries.push(entry.to_owned());
        }
    }
    let ignored = ignored_entries;
    // The index can tell status not to look at a file (assume-unchanged,
    // skip-worktree): the agent writes the index, so such a file counts as
    // unfinished work, whatever is in it.
    let tagged = git_in(at, &["ls-files", "-v", "-z"])?;
    for entry in tagged.split('\0') {
        let Some((tag, file)) = entry.split_once(' ') else {
            continue;
        };
        let hidden = match tag {
            "S" => "skip-worktree",
            tag if tag.chars().all(|c| c.is_ascii_lowercase()) => "assume-unchanged",
            _ => continue,
        };
        let file_path = Path::new(dir).join(file);
        assessment
            .fingerprint
            .push(format!("{hidden}\0{file}\0{}", content_hash(&file_path)));
        assessment
            .dirty_files
            .push(format!("{file} (hidden from status: {hidden})"));
    }
    let mut entries = status.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        // A rename or copy is followed by its original path.
        if entry.starts_with('R') || entry.starts_with('C') {
            entries.next();
        }
        if entry
            .strip_prefix("?? ")
            .is_some_and(|p| unchanged.contains(p))
        {
            continue;
        }
        assessment.dirty_files.push(entry.to_owned());
        let file = Path::new(dir).join(entry.get(3..).unwrap_or_default());
        assessment
            .fingerprint
            .push(format!("{entry}\0{}", content_hash(&file)));
    }
    for entry in ignored {
        let file = Path::new(dir).join(entry.get(3..).unwrap_or_default());
        assessment
            .fingerprint
            .push(format!("{entry}\0{}", content_hash(&file)));
        assessment.dirty_files.push(entry);
    }
    Ok(())
}

/// Whether the ignored `path` git status lists (a directory whole, with a
/// trailing `/`) is only included files the agent left unchanged: a file
/// among `unchanged`, or a directory whose every ignored file is.
fn only_unchanged_included(
    at: &InRepo,
    path: &str,
    unchanged: &BTreeSet<String>,
) -> Result<bool, String> {
    let Some(dir) = path.strip_suffix('/') else {
        return Ok(unchanged.contains(path));
    };
    if !unchanged.iter().any(|u| u.starts_with(path)) {
        return Ok(false);
    }
    // The directory's files one by one; its name passed back to git as
    // itself from the top of the tree, never as a pattern.
    let spec = format!(":(top,literal){dir}");
    let listed = git_in(
        at,
        &[
            "status",
            "--porcelain=v1",
            "-z",
            "--ignored=traditional",
            "--untracked-files=all",
            "--ignore-submodules=none",
            "--",
            &spec,
        ],
    )?;
    Ok(listed
        .split('\0')
        .filter_map(|e| e.strip_prefix("!! "))
        .all(|file| unchanged.contains(file)))
}

/// The checkout's local branches that are not safe (see the module's
/// doc); of an earlier jackin's worktree, only its own.
fn assess_branches(
    record: &IsolationRecord,
    at: &InRepo,
    assessment: &mut Assessment,
) -> Result<(), String> {
    let legacy = record.is_legacy_worktree();
    let refs = git_in(
        at,
        &[
            "for-each-ref",
            "--format=%(refname:short)%00%(objectname)%00%(upstream:short)%00%(upstream:track)",
            "refs/heads/",
        ],
    )?;
    // A repository's branches are all its own; the worktree of an earlier
    // jackin shared the host's.
    let ours = match &record.scratch_branch {
        Some(scratch) if legacy => Some(worktree_branches(at, scratch)?),
        _ => None,
    };
    for line in refs.lines() {
        let fields: Vec<&str> = line.split('\0').collect();
        let [name, tip, upstream, track] = fields.as_slice() else {
            return Err(format!("unexpected for-each-ref output: {line:?}"));
        };
        if ours.as_ref().is_some_and(|ours| !ours.contains(*name)) {
            continue;
        }
        assessment.fingerprint.push(format!("{name}\0{tip}"));
        let untouched_host_branch = record.scratch_branch.as_deref() != Some(*name)
            && record.host_branches.get(*name).map(String::as_str) == Some(*tip);
        if untouched_host_branch || *tip == record.base_commit || track.contains("gone") {
            continue;
        }
        if upstream.is_empty() {
            let ahead = count(at, &format!("{}..{name}", record.base_commit))?;
            assessment.unsafe_branches.push(format!(
                "{name} ({ahead} commits since the base, no upstream)"
            ));
            continue;
        }
        let ahead = count(at, &format!("{upstream}..{name}"))?;
        if ahead > 0 {
            assessment
                .unsafe_branches
                .push(format!("{name} ({ahead} commits ahead of {upstream})"));
        }
    }
    Ok(())
}

/// A worktree of an earlier jackin keeps the agent's scratch ref in the
/// unit, where the host's branches do not show it: a ref the agent moved
/// since jackin last published it is unfinished work until a publication
/// (its next start, which moves it to a repository of its own, or its
/// removal) brings it over.
fn legacy_unpublished(record: &IsolationRecord, assessment: &mut Assessment) -> Result<(), String> {
    let Some(branch) = &record.scratch_branch else {
        return Ok(());
    };
    if let Some(tip) = legacy_worktree::unpublished_tip(record).map_err(|e| e.to_string())? {
        assessment.fingerprint.push(format!("{branch}\0{tip}"));
        assessment.unsafe_branches.push(format!(
            "{branch} (moved in the unit to {tip}, not yet published)"
        ));
    }
    Ok(())
}

/// Commits on a detached `HEAD` that no branch or remote holds.
fn assess_detached_head(
    record: &IsolationRecord,
    at: &InRepo,
    assessment: &mut Assessment,
) -> Result<(), String> {
    if git_in(at, &["symbolic-ref", "-q", "HEAD"]).is_err() {
        let loose = git_in(
            at,
            &[
                "rev-list",
                "--count",
                "HEAD",
                "--not",
                "--branches",
                "--remotes",
            ],
        )?;
        let loose: u64 = loose.trim().parse().map_err(|e| format!("rev-list: {e}"))?;
        let head = git_in(at, &["rev-parse", "HEAD"])?;
        assessment
            .fingerprint
            .push(format!("HEAD\0{}", head.trim()));
        if loose > 0 && head.trim() != record.base_commit {
            assessment
                .unsafe_branches
                .push(format!("HEAD (detached, {loose} commits on no branch)"));
        }
    }
    Ok(())
}

/// The branches of the host repository that are a worktree's own: its
/// scratch branch, the branch its `HEAD` holds, and every branch its `HEAD`
/// reflog shows it moving to or from (a `checkout -b` made there, a branch
/// renamed while held), but never another instance's scratch branch. The
/// reflog is the worktree's own (`worktrees/<id>/logs/HEAD`, which the
/// agent's git writes too): what it names can only add branches to judge,
/// and another instance's are left out by name whatever it says. A worktree
/// whose reflog is gone (or off, `core.logAllRefUpdates=false`) is judged by
/// the branches it holds; any other branch stays in the host repository
/// after a purge, which removes only the scratch branch.
fn worktree_branches(at: &InRepo, scratch: &str) -> Result<BTreeSet<String>, String> {
    let mut ours = BTreeSet::from([scratch.to_owned()]);
    if let Ok(held) = git_in(at, &["symbolic-ref", "-q", "--short", "HEAD"]) {
        ours.insert(held.trim().to_owned());
    }
    let moves = git_in(at, &["log", "--walk-reflogs", "--format=%gs", "HEAD", "--"])?;
    for subject in moves.lines() {
        let named = if let Some(rest) = subject.strip_prefix("checkout: moving from ") {
            rest.split_once(" to ")
        } else if let Some(rest) = subject.strip_prefix("Branch: renamed ") {
            rest.split_once(" to ").map(|(from, to)| {
                (
                    from.strip_prefix("refs/heads/").unwrap_or(from),
                    to.strip_prefix("refs/heads/").unwrap_or(to),
                )
            })
        } else {
            None
        };
        if let Some((from, to)) = named {
            ours.extend([from.to_owned(), to.to_owned()]);
        }
    }
    // Every unit's scratch branch is `jackin/scratch/<its container>`.
    let units = scratch.rsplit_once('/').map_or("", |(dir, _)| dir);
    ours.retain(|name| {
        name == scratch
            || !name
                .strip_prefix(units)
                .is_some_and(|rest| rest.starts_with('/'))
    });
    Ok(ours)
}

/// The refs of a clone, or of a worktree's own repository, other than its
/// branches and remotes (a stash, tags, notes, anything under `refs/`) that
/// hold commits no remote of it and not the host repository has: deleting
/// the checkout would lose them.
fn other_refs_of_a_repository(
    record: &IsolationRecord,
    assessment: &mut Assessment,
) -> Result<(), String> {
    let at = InRepo::checkout(record)?;
    let refs = git_in(
        &at,
        &["for-each-ref", "--format=%(refname)%00%(objectname)"],
    )?;
    for line in refs.lines() {
        let Some((name, tip)) = line.split_once('\0') else {
            return Err(format!("unexpected for-each-ref output: {line:?}"));
        };
        if name.starts_with("refs/heads/") || name.starts_with("refs/remotes/") {
            continue;
        }
        assessment.fingerprint.push(format!("{name}\0{tip}"));
        let lonely = git_in(
            &at,
            &[
                "rev-list",
                "--count",
                name,
                "--not",
                "--remotes",
                &record.base_commit,
                "--",
            ],
        )?;
        let lonely: u64 = lonely
            .trim()
            .parse()
            .map_err(|e| format!("rev-list {name}: {e}"))?;
        let host_has_it = crate::checkout::in_host(
            &record.src,
            &["cat-file", "-e", &format!("{tip}^{{commit}}")],
        )
        .is_ok();
        if lonely == 0 || host_has_it {
            continue;
        }
        let what = match name {
            "refs/stash" => {
                let entries = git_in(&at, &["stash", "list"])?.lines().count();
                let plural = if entries == 1 { "entry" } else { "entries" };
                format!("stash ({entries} {plural})")
            }
            _ => match name.strip_prefix("refs/tags/") {
                Some(tag) => format!("tag {tag} ({lonely} commits on no branch or remote)"),
                None => format!("{name} ({lonely} commits on no branch or remote)"),
            },
        };
        assessment.unsafe_branches.push(what);
    }
    Ok(())
}

/// The SHA-256 of a file's bytes (of a directory's listing, for an
/// untracked directory), or a word for what is not there.
fn content_hash(path: &Path) -> String {
    let Ok(meta) = std::fs::symlink_metadata(path) else {
        return "absent".into();
    };
    let mut hasher = Sha256::new();
    if meta.is_symlink() {
        let target = std::fs::read_link(path).unwrap_or_default();
        hasher.update(target.display().to_string().as_bytes());
    } else if meta.is_file() {
        // The agent writes these files: never follow a link or open a FIFO
        // or device swapped in meanwhile.
        let file = match open_regular_file(path, Links::Refuse) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::InvalidInput => return "other".into(),
            Err(_) => return "unreadable".into(),
        };
        if !hash_contents(file, &mut hasher) {
            return "unreadable".into();
        }
    } else {
        return "other".into();
    }
    hex(&hasher.finalize())
}

/// Feeds a file's size and bytes to `hasher`; false if it could not be
/// read. A file past [`MAX_HASHED_BYTES`] (a sparse one may claim
/// terabytes) is not read at all: its size and time stand in for its
/// contents.
fn hash_contents(file: std::fs::File, hasher: &mut Sha256) -> bool {
    use std::io::Read;
    use std::os::unix::fs::MetadataExt;
    let Ok(meta) = file.metadata() else {
        return false;
    };
    hasher.update(meta.len().to_le_bytes());
    if meta.len() > MAX_HASHED_BYTES {
        hasher.update(meta.mtime().to_le_bytes());
        hasher.update(meta.mtime_nsec().to_le_bytes());
        return true;
    }
    let mut buffer = vec![0; 64 * 1024];
    let mut file = file.take(MAX_HASHED_BYTES);
    loop {
        match file.read(&mut buffer) {
            Ok(0) => return true,
            Ok(n) => hasher.update(&buffer[..n]),
            Err(_) => return false,
        }
    }
}

fn count(at: &InRepo, range: &str) -> Result<u64, String> {
    git_in(at, &["rev-list", "--count", range, "--"])?
        .trim()
        .parse()
        .map_err(|e| format!("rev-list {range}: {e}"))
}

/// The status entry for a checkout: the evidence (files capped, with a count
/// of the rest) and a digest of the full evidence.
pub fn mount_status(record: &IsolationRecord, assessment: &Assessment) -> MountStatus {
    let mut hasher = Sha256::new();
    for part in [&record.dst, &record.path] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    for part in assessment
        .dirty_files
        .iter()
        .chain(&assessment.unsafe_branches)
        .chain(&assessment.error)
        .chain(&assessment.fingerprint)
    {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest = hex(&hasher.finalize()[..8]);
    let mut dirty_files: Vec<String> = assessment
        .dirty_files
        .iter()
        .take(MAX_LISTED_FILES)
        .cloned()
        .collect();
    if assessment.dirty_files.len() > MAX_LISTED_FILES {
        dirty_files.push(format!(
            "… and {} more",
            assessment.dirty_files.len() - MAX_LISTED_FILES
        ));
    }
    let mut unpushed_branches = assessment.unsafe_branches.clone();
    if let Some(error) = &assessment.error {
        unpushed_branches.push(format!("unknown: {error}"));
    }
    MountStatus {
        dst: record.dst.clone(),
        src: record.src.clone(),
        isolation: record.isolation,
        path: record.path.clone(),
        dirty_files,
        unpushed_branches,
        digest,
        left_entry: record.left_entry.clone(),
        included: record
            .included
            .keys()
            .take(MAX_LISTED_FILES)
            .cloned()
            .collect(),
        not_included: record
            .not_included
            .iter()
            .take(MAX_LISTED_FILES)
            .cloned()
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    //! The assessment against real git repositories: each case in worktree
    //! mode and in clone mode, the two specified on their own.

    use std::path::{Path, PathBuf};

    use jackin_api::instance::{Isolation, MountSpec};

    use super::*;
    use jackin_files::layout::Layout;

    fn git(dir: &Path, args: &[&str]) -> String {
        let prefix = worktree::testing::git_argv(dir);
        let mut argv: Vec<&str> = prefix.iter().map(String::as_str).collect();
        argv.extend_from_slice(args);
        String::from_utf8(git::run(&argv).unwrap())
            .unwrap()
            .trim()
            .to_owned()
    }

    /// A host repository cloned from a bare `origin`, one commit on `main`,
    /// and a unit in a scratch `JACKIN_HOME` with the mount materialized.
    struct Fixture {
        _dir: tempfile::TempDir,
        host: PathBuf,
        record: IsolationRecord,
    }

    impl Fixture {
        fn new(isolation: Isolation) -> Self {
            let dir = tempfile::tempdir().unwrap();
            let origin = dir.path().join("origin.git");
            let host = dir.path().join("host");
            git::run(&[
                "init",
                "--quiet",
                "--bare",
                "--initial-branch=main",
                origin.to_str().unwrap(),
            ])
            .unwrap();
            git::run(&[
                "clone",
                "--quiet",
                origin.to_str().unwrap(),
                host.to_str().unwrap(),
            ])
            .unwrap();
            for (k, v) in [
                ("user.email", "t@jackin.dev"),
                ("user.name", "t"),
                ("init.defaultBranch", "main"),
            ] {
                git(&host, &["config", k, v]);
            }
            git(&host, &["checkout", "--quiet", "-b", "main"]);
            std::fs::write(host.join("README"), "host\n").unwrap();
            git(&host, &["add", "."]);
            git(&host, &["commit", "--quiet", "-m", "base"]);
            git(&host, &["push", "--quiet", "-u", "origin", "main"]);
            let layout = Layout::new(dir.path().join("home"));
            let mount = MountSpec {
                src: host.display().to_string(),
                dst: "/workspace/app".into(),
                readonly: false,
                isolation,
                include: Vec::new(),
            };
            isolation::prepare(&layout, "jk-1-t", &[mount]).unwrap();
            let record = isolation::read_records(&layout, "jk-1-t")
                .unwrap()
                .remove(0);
            let checkout = Path::new(&record.path);
            for (k, v) in [("user.email", "t@jackin.dev"), ("user.name", "t")] {
                git(checkout, &["config", k, v]);
            }
            Fixture {
                _dir: dir,
                host,
                record,
            }
        }

        fn checkout(&self) -> &Path {
            Path::new(&self.record.path)
        }

        fn commit(&self, file: &str) {
            std::fs::write(self.checkout().join(file), file).unwrap();
            git(self.checkout(), &["add", "."]);
            git(self.checkout(), &["commit", "--quiet", "-m", file]);
        }

        fn assess(&self) -> Assessment {
            assess(&self.record)
        }
    }

    const MODES: [Isolation; 2] = [Isolation::Worktree, Isolation::Clone];

    #[test]
    fn a_fresh_checkout_is_safe() {
        for mode in MODES {
            let f = Fixture::new(mode);
            let a = f.assess();
            assert!(a.is_safe(), "{mode:?}: {a:?}");
            assert!(a.dirty_files.is_empty() && a.unsafe_branches.is_empty());
        }
    }

    #[test]
    fn uncommitted_files_are_listed() {
        for mode in MODES {
            let f = Fixture::new(mode);
            std::fs::write(f.checkout().join("notes.md"), "x").unwrap();
            std::fs::write(f.checkout().join("README"), "changed").unwrap();
            let a = f.assess();
            assert_eq!(a.dirty_files, [" M README", "?? notes.md"], "{mode:?}");
            assert!(!a.is_safe());
        }
    }

    #[test]
    fn new_commits_without_an_upstream_are_unpushed() {
        let f = Fixture::new(Isolation::Worktree);
        f.commit("work");
        let a = f.assess();
        assert_eq!(
            a.unsafe_branches,
            ["jackin/scratch/jk-1-t (1 commits since the base, no upstream)"]
        );
        // In a clone the branch tracks origin (the host): ahead of it.
        let f = Fixture::new(Isolation::Clone);
        f.commit("work");
        assert_eq!(
            f.assess().unsafe_branches,
            ["main (1 commits ahead of origin/main)"]
        );
    }

    /// Issue 52: an assessment reads the unit's own repository and writes
    /// nothing into the host's, whether the checkout is there or its
    /// directory went missing.
    #[test]
    fn an_assessment_never_writes_into_the_host_repository() {
        let f = Fixture::new(Isolation::Worktree);
        f.commit("work");
        let host_state = || {
            let refs = git(
                &f.host,
                &["for-each-ref", "--format=%(refname) %(objectname)"],
            );
            format!("{refs}\n{}", git(&f.host, &["count-objects", "-v"]))
        };
        let before = host_state();
        assert_eq!(
            f.assess().unsafe_branches,
            ["jackin/scratch/jk-1-t (1 commits since the base, no upstream)"]
        );
        assert_eq!(host_state(), before, "the assessment published");
        std::fs::remove_dir_all(f.checkout()).unwrap();
        let missing = f.assess();
        assert_eq!(
            missing.unsafe_branches,
            [format!(
                "jackin/scratch/jk-1-t (1 commits since the base; its checkout {} is missing)",
                f.record.path
            )],
            "{missing:?}"
        );
        assert_eq!(host_state(), before, "the assessment published");
    }

    /// A publication takes the lock the sweep looks at (N6) and leaves no
    /// quarantine behind.
    #[test]
    fn a_publication_leaves_its_lock_and_no_quarantine() {
        let f = Fixture::new(Isolation::Worktree);
        f.commit("work");
        isolation::publish(&f.record).unwrap();
        let repo = f.record.repository_dir();
        let scratch = repo.parent().unwrap();
        let mut names: Vec<String> = std::fs::read_dir(scratch)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.starts_with(".import"))
            .collect();
        names.sort();
        assert_eq!(names, [".import.lock"]);
    }

    #[test]
    fn a_renamed_branch_is_still_found() {
        for mode in MODES {
            let f = Fixture::new(mode);
            git(
                f.checkout(),
                &["checkout", "--quiet", "-b", "feature/renamed"],
            );
            f.commit("feature");
            let a = f.assess();
            assert!(
                a.unsafe_branches
                    .iter()
                    .any(|b| b.starts_with("feature/renamed (1 commits")),
                "{mode:?}: {a:?}"
            );
        }
    }

    /// In a clone, whose origin is the host (a worktree's repository has
    /// no remote: its branches have no upstream).
    #[test]
    fn a_branch_whose_upstream_is_gone_is_safe() {
        {
            let mode = Isolation::Clone;
            let f = Fixture::new(mode);
            git(
                f.checkout(),
                &["checkout", "--quiet", "-b", "feature/merged"],
            );
            f.commit("merged");
            git(
                f.checkout(),
                &["push", "--quiet", "-u", "origin", "feature/merged"],
            );
            assert!(
                f.assess().is_safe(),
                "{mode:?}: pushed is safe: {:?}",
                f.assess()
            );
            // Merged and deleted upstream, then pruned locally.
            git(&f.host, &["branch", "-D", "feature/merged"]);
            git(f.checkout(), &["fetch", "--quiet", "--prune", "origin"]);
            let a = f.assess();
            assert!(a.is_safe(), "{mode:?}: upstream gone is safe: {a:?}");
        }
    }

    /// L6: two instances on one repository. The other's scratch branch,
    /// with commits of its own and kept in the host repository after its
    /// checkout went, is never this one's unfinished work; nor is a branch
    /// the operator made elsewhere. A branch this checkout made and left
    /// still is.
    #[test]
    fn l6_another_instances_branch_is_not_this_ones_work() {
        let f = Fixture::new(Isolation::Worktree);
        let layout = Layout::new(f._dir.path().join("home"));
        let mount = MountSpec {
            src: f.host.display().to_string(),
            dst: "/workspace/app".into(),
            readonly: false,
            isolation: Isolation::Worktree,
            include: Vec::new(),
        };
        isolation::prepare(&layout, "jk-2-u", &[mount]).unwrap();
        let other = isolation::read_records(&layout, "jk-2-u")
            .unwrap()
            .remove(0);
        let other_checkout = Path::new(&other.path);
        for (k, v) in [("user.email", "t@jackin.dev"), ("user.name", "t")] {
            git(other_checkout, &["config", k, v]);
        }
        std::fs::write(other_checkout.join("theirs"), "theirs").unwrap();
        git(other_checkout, &["add", "."]);
        git(other_checkout, &["commit", "--quiet", "-m", "theirs"]);
        assert!(!assess(&other).is_safe(), "the other's work is the other's");
        assert!(f.assess().is_safe(), "{:?}", f.assess());

        // The other instance cleaned up: its checkout gone, its branch kept.
        std::fs::remove_dir_all(other_checkout).unwrap();
        git(&f.host, &["worktree", "prune"]);
        assert!(
            !git(&f.host, &["branch", "--list", "jackin/scratch/jk-2-u"]).is_empty(),
            "the branch is kept"
        );
        assert!(f.assess().is_safe(), "{:?}", f.assess());

        // The operator's own branch, made and committed to in the host.
        git(&f.host, &["checkout", "--quiet", "-b", "op"]);
        std::fs::write(f.host.join("op"), "op").unwrap();
        git(&f.host, &["add", "."]);
        git(&f.host, &["commit", "--quiet", "-m", "op"]);
        git(&f.host, &["checkout", "--quiet", "main"]);
        assert!(f.assess().is_safe(), "{:?}", f.assess());

        // A branch this checkout made, committed to and left is its work.
        git(f.checkout(), &["checkout", "--quiet", "-b", "feature/mine"]);
        f.commit("mine");
        git(
            f.checkout(),
            &["checkout", "--quiet", "jackin/scratch/jk-1-t"],
        );
        assert_eq!(
            f.assess().unsafe_branches,
            ["feature/mine (1 commits since the base, no upstream)"]
        );
    }

    #[test]
    fn commits_on_a_detached_head_are_unsafe() {
        for mode in MODES {
            let f = Fixture::new(mode);
            git(f.checkout(), &["checkout", "--quiet", "--detach"]);
            f.commit("loose");
            let a = f.assess();
            assert_eq!(
                a.unsafe_branches,
                ["HEAD (detached, 1 commits on no branch)"],
                "{mode:?}"
            );
        }
    }

    #[test]
    fn git_failures_fail_closed() {
        let f = Fixture::new(Isolation::Clone);
        std::fs::remove_dir_all(f.checkout().join(".git")).unwrap();
        std::fs::create_dir(f.checkout().join(".git")).unwrap();
        assert!(f.assess().error.is_some());
        assert!(!f.assess().is_safe());
    }

    #[test]
    fn ignored_files_are_unfinished_work() {
        for mode in MODES {
            let f = Fixture::new(mode);
            let exclude = git(f.checkout(), &["rev-parse", "--git-path", "info/exclude"]);
            let exclude = f.checkout().join(exclude);
            std::fs::create_dir_all(exclude.parent().unwrap()).unwrap();
            std::fs::write(&exclude, "notes.txt\ntarget/\n").unwrap();
            std::fs::write(f.checkout().join("notes.txt"), "idea").unwrap();
            std::fs::create_dir_all(f.checkout().join("target/debug")).unwrap();
            std::fs::write(f.checkout().join("target/debug/big"), "x").unwrap();
            let a = f.assess();
            assert_eq!(a.dirty_files, ["!! notes.txt", "!! target/"], "{mode:?}");
        }
    }

    /// A clone goes whole, and so does a worktree's own repository: their
    /// stash and their tags are evidence.
    #[test]
    fn stashes_and_tag_only_commits_count_where_they_would_be_lost() {
        for mode in MODES {
            let f = Fixture::new(mode);
            std::fs::write(f.checkout().join("README"), "edited\n").unwrap();
            git(f.checkout(), &["stash", "--quiet"]);
            git(f.checkout(), &["checkout", "--quiet", "--detach"]);
            f.commit("tagged");
            git(f.checkout(), &["tag", "keep-me"]);
            git(f.checkout(), &["checkout", "--quiet", "-"]);
            let a = f.assess();
            assert_eq!(
                a.unsafe_branches,
                [
                    "stash (1 entry)",
                    "tag keep-me (1 commits on no branch or remote)",
                ],
                "{mode:?}"
            );
        }
    }

    #[test]
    fn a_missing_checkout_is_judged_by_what_survives_it() {
        // A clone took its work with it: nothing is left to lose.
        let mut f = Fixture::new(Isolation::Clone);
        f.record.path = "/nonexistent/checkout".into();
        assert!(f.assess().is_safe());

        // A worktree's scratch branch survives it in the host repository.
        let f = Fixture::new(Isolation::Worktree);
        std::fs::remove_dir_all(f.checkout()).unwrap();
        assert!(f.assess().is_safe(), "no commits on the branch yet");
        let f = Fixture::new(Isolation::Worktree);
        f.commit("work");
        std::fs::remove_dir_all(f.checkout()).unwrap();
        let a = f.assess();
        assert_eq!(a.unsafe_branches.len(), 1, "{a:?}");
        assert!(a.unsafe_branches[0].contains("is missing"), "{a:?}");
    }

    #[test]
    fn the_digest_follows_the_evidence() {
        let f = Fixture::new(Isolation::Worktree);
        let clean = mount_status(&f.record, &f.assess());
        assert_eq!(acknowledgement_digest(std::slice::from_ref(&clean)), None);
        std::fs::write(f.checkout().join("a"), "1").unwrap();
        let first = mount_status(&f.record, &f.assess());
        let first_ack = acknowledgement_digest(std::slice::from_ref(&first)).unwrap();
        assert_eq!(
            acknowledgement_digest(&[mount_status(&f.record, &f.assess())]),
            Some(first_ack.clone()),
            "stable while nothing changes"
        );
        std::fs::write(f.checkout().join("b"), "2").unwrap();
        let second = acknowledgement_digest(&[mount_status(&f.record, &f.assess())]).unwrap();
        assert_ne!(first_ack, second, "a new file changes the digest");
        // The same files, one with more in it: still a new digest.
        std::fs::write(f.checkout().join("a"), "1 and hours of new work").unwrap();
        let third = acknowledgement_digest(&[mount_status(&f.record, &f.assess())]).unwrap();
        assert_ne!(second, third, "a changed file changes the digest");
        // A commit amended to the same count of commits ahead: new digest.
        f.commit("c");
        let committed = acknowledgement_digest(&[mount_status(&f.record, &f.assess())]).unwrap();
        git(
            f.checkout(),
            &["commit", "--quiet", "--amend", "-m", "amended"],
        );
        let amended = acknowledgement_digest(&[mount_status(&f.record, &f.assess())]).unwrap();
        assert_ne!(committed, amended, "a rewritten commit changes the digest");
    }

    /// The index is the agent's: a file it tells status to skip is still
    /// unfinished work, in either mode.
    #[test]
    fn files_the_index_hides_from_status_are_unfinished_work() {
        for (mode, flag, word) in [
            (
                Isolation::Worktree,
                "--assume-unchanged",
                "assume-unchanged",
            ),
            (Isolation::Clone, "--skip-worktree", "skip-worktree"),
        ] {
            let f = Fixture::new(mode);
            std::fs::write(f.checkout().join("README"), "edited and hidden\n").unwrap();
            git(f.checkout(), &["update-index", flag, "README"]);
            let a = f.assess();
            assert_eq!(
                a.dirty_files,
                [format!("README (hidden from status: {word})")],
                "{mode:?}"
            );
            assert!(!a.is_safe());
        }
    }

    /// A clone's config may point status at another work tree: the
    /// assessment looks at the checkout itself.
    #[test]
    fn a_work_tree_set_elsewhere_is_not_looked_at() {
        let f = Fixture::new(Isolation::Clone);
        let clean = tempfile::tempdir().unwrap();
        git(
            f.checkout(),
            &[
                "--work-tree",
                clean.path().to_str().unwrap(),
                "checkout",
                "--quiet",
                "--",
                ".",
            ],
        );
        git(
            f.checkout(),
            &["config", "core.worktree", clean.path().to_str().unwrap()],
        );
        std::fs::write(f.checkout().join("notes.md"), "work").unwrap();
        assert_eq!(f.assess().dirty_files, ["?? notes.md"]);
    }

    /// A sparse file that claims a terabyte is assessed by its size and time.
    #[test]
    fn a_huge_sparse_file_is_assessed_without_reading_it_all() {
        let f = Fixture::new(Isolation::Clone);
        let big = std::fs::File::create(f.checkout().join("big")).unwrap();
        big.set_len(1 << 40).unwrap();
        let a = f.assess();
        assert_eq!(a.dirty_files, ["?? big"]);
    }

    #[test]
    fn many_files_are_capped_with_a_count() {
        let f = Fixture::new(Isolation::Clone);
        for i in 0..25 {
            std::fs::write(f.checkout().join(format!("f{i:02}")), "x").unwrap();
        }
        let status = mount_status(&f.record, &f.assess());
        assert_eq!(status.dirty_files.len(), MAX_LISTED_FILES + 1);
        assert_eq!(status.dirty_files.last().unwrap(), "… and 5 more");
    }

    /// A `.git` the agent makes inside its repository is not where jackin's
    /// git looks: the repository is named, never found.
    #[test]
    fn a_git_directory_planted_inside_the_units_repository_is_not_read() {
        let dir = tempfile::tempdir().unwrap();
        let host = isolation::tests::host_repository(dir.path());
        let layout = Layout::new(dir.path().join("home"));
        isolation::prepare(
            &layout,
            "jk-1-t",
            &[isolation::tests::worktree_mount(&host)],
        )
        .unwrap();
        let record = isolation::read_records(&layout, "jk-1-t")
            .unwrap()
            .remove(0);
        let repo = record.git_place();
        let planted = format!("{repo}/.git");
        git::run(&["init", "--quiet", "--bare", &planted]).unwrap();
        let base = isolation::tests::tip_of(&host, "HEAD");
        let decoy = isolation::tests::agent_commit(&host, &planted, &base, "decoy");
        let full = format!("refs/heads/{}", record.scratch_branch.clone().unwrap());
        git::run(&["--git-dir", &planted, "update-ref", &full, &decoy]).unwrap();
        isolation::publish(&record).unwrap();
        assert_eq!(
            isolation::tests::tip_of(&host, &full),
            base,
            "the planted repository was read"
        );
        assert!(assess(&record).is_safe(), "{:?}", assess(&record));
    }
}
