//! The records of isolated checkouts and what every kind of them shares:
//! the record file of a unit, the errors, the binds, and the few reads of
//! the host repository that making, publishing and removing all need. The
//! kinds themselves are `isolation` (preparing and removing every kind),
//! `worktree` and `legacy_worktree`. A checkout's path is not taken from
//! its record: it is where the layout puts that checkout now, so a moved
//! `JACKIN_HOME` still finds its checkouts.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jackin_api::instance::Isolation;
use serde::{Deserialize, Serialize};

use crate::git::{self, GitError};
use crate::gitdir::ViewError;
use jackin_files::fsutil::{self, read_untrusted, write_atomic};
use jackin_files::layout::Layout;
use jackin_plan::digest::sha256_hex;

/// One materialized isolated mount.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IsolationRecord {
    /// The container destination; the mount's identity.
    pub dst: String,
    /// The host repository the checkout was made from.
    pub src: String,
    pub isolation: Isolation,
    /// The checkout on the host.
    pub path: String,
    /// The worktree's scratch branch; `None` for a clone.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scratch_branch: Option<String>,
    /// The host's `HEAD` when the checkout was made.
    pub base_commit: String,
    /// For a worktree: the host's branches and their tips when it was made,
    /// which the assessment leaves out (they are the operator's, not the
    /// agent's, and worktrees share the host's branches).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub host_branches: BTreeMap<String, String>,
    /// For a worktree: the host repository's git directory, which all its
    /// worktrees share (`git rev-parse --git-common-dir` in the host
    /// repository when the worktree was made).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub common_dir: Option<String>,
    /// For a worktree an earlier jackin made as a `git worktree`: its entry
    /// in the host repository, `<common_dir>/worktrees/<id>`, read from the
    /// new checkout right after git made it, before any agent ran. The one
    /// entry jackin removes (see [`crate::legacy_worktree`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_dir: Option<String>,
    /// For a worktree with a repository of its own: the ref of the host
    /// repository that pins its base commit (`refs/jackin/base/<unit>`).
    /// None for a clone, and for a worktree an earlier jackin made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_pin: Option<String>,
    /// An entry an earlier jackin's worktree left in the host repository
    /// that no longer names the checkout, so jackin did not remove it: the
    /// operator's to delete (`describe` and the sweep say so).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_entry: Option<String>,
    /// The untracked files the mount's `include` copied in when the
    /// checkout was made, by path relative to it, with the SHA-256 of each
    /// copy: one still so is no unfinished work (see [`crate::include`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub included: BTreeMap<String, String>,
    /// What the `include` named that was left out then, each `path: why`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_included: Vec<String>,
    /// Where the record put the checkout when that is not where the layout
    /// puts it now: the home was moved. Not stored.
    #[serde(skip)]
    pub moved_from: Option<String>,
}

impl IsolationRecord {
    /// A worktree an earlier jackin made as a `git worktree` of the host
    /// repository, not yet moved to a repository of its own.
    pub fn is_legacy_worktree(&self) -> bool {
        self.scratch_branch.is_some() && self.base_pin.is_none()
    }

    /// Where a confined git on the host finds the checkout's repository:
    /// `git -C <this> --work-tree=<path>`. A worktree's own repository lives
    /// beside the checkout (its `.git` names it where the container sees
    /// it); a clone's, and an earlier jackin's worktree's, through the
    /// checkout.
    pub fn git_place(&self) -> String {
        if self.scratch_branch.is_some() && !self.is_legacy_worktree() {
            path_str(&self.repository_dir()).to_owned()
        } else {
            self.path.clone()
        }
    }

    /// For a worktree, where its own repository lives on the host: beside
    /// the checkout (`<unit>/git/worktree/<name>`), at
    /// `<unit>/git/repo/<name>`.
    pub fn repository_dir(&self) -> PathBuf {
        let checkout = Path::new(&self.path);
        let git = checkout
            .parent()
            .and_then(Path::parent)
            .expect("a checkout lives under the unit's git/");
        let name = checkout.file_name().expect("a checkout has a name");
        git.join("repo").join(name)
    }

    /// The checkout and what git needs of it no longer agree, as `detail`
    /// says.
    pub(crate) fn link_conflict(&self, detail: String) -> IsolationError {
        IsolationError::LinkConflict {
            dst: self.dst.clone(),
            path: self.path.clone(),
            detail,
        }
    }
}

#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    View(#[from] ViewError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot read the isolation records: {message}")]
    Records { path: PathBuf, message: String },
    #[error("mount {dst}: {src} is not a git repository with a commit: {detail}")]
    NotARepository {
        dst: String,
        src: String,
        detail: String,
    },
    #[error("{path} exists but no isolation record describes it; it is left alone")]
    Unrecorded { path: String },
    #[error(
        "mount {dst}: its isolated checkout has not been prepared; refusing to bind the host directory"
    )]
    NotPrepared { dst: String },
    #[error(
        "mount {dst}: the host repository {src} no longer contains the checkout's base commit \
         {base}, so the kept checkout {path} does not fit it; it is neither reused nor deleted"
    )]
    ResumeConflict {
        dst: String,
        src: String,
        base: String,
        path: String,
    },
    #[error(
        "mount {dst}: the worktree {path} cannot be used as it is ({detail}); jackin neither \
         binds, repairs nor removes what the tree points at"
    )]
    LinkConflict {
        dst: String,
        path: String,
        detail: String,
    },
    #[error(
        "{why}: shared, it would let the agent write that repository; share a directory \
         beside it instead, or isolate that mount too"
    )]
    SharedOverIsolated { why: String },
    #[error(
        "{first} and {second} are one repository ({common}), mounted with isolation: worktree \
         twice; an instance has one scratch branch in a repository: use clone isolation for \
         one of them"
    )]
    WorktreeTwice {
        first: String,
        second: String,
        common: String,
    },
    /// The ref pinning a worktree's base is gone or moved (the message
    /// says which, and how to put it back).
    #[error("mount {dst}: {message}")]
    BasePinMoved { dst: String, message: String },
    /// The host's scratch branch moved since jackin last published it, by
    /// someone other than jackin (the message says how to let jackin
    /// publish again).
    #[error("mount {dst}: {message}")]
    BranchMoved { dst: String, message: String },
    /// The agent's latest commit is not on the host's scratch branch: its
    /// publication was refused or never ran, so the branch stays.
    #[error(
        "mount {dst}: the agent's commit {tip} has not reached the host's branch (its \
         publication was refused or never ran): the scratch branch stays"
    )]
    Unpublished { dst: String, tip: String },
}

pub(crate) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IsolationError + '_ {
    move |source| IsolationError::Io {
        path: path.to_owned(),
        source,
    }
}

pub(crate) fn records_file(layout: &Layout, container: &str) -> PathBuf {
    layout.isolation_file(container)
}

/// The unit's isolation records; none when the file does not exist. Each
/// record's path is where the layout puts that checkout now, so a moved
/// `JACKIN_HOME` still finds its checkouts.
pub fn read_records(
    layout: &Layout,
    container: &str,
) -> Result<Vec<IsolationRecord>, IsolationError> {
    let path = records_file(layout, container);
    let mut records: Vec<IsolationRecord> =
        match read_untrusted(&path, jackin_files::layout::cap::ISOLATION_RECORDS) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| IsolationError::Records {
                path,
                message: e.to_string(),
            })?,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(io(&path)(e)),
        };
    for record in &mut records {
        let here = path_str(&checkout_path(
            layout,
            container,
            record.isolation,
            &record.dst,
        ))
        .to_owned();
        if record.path != here {
            record.moved_from = Some(std::mem::replace(&mut record.path, here));
        }
    }
    Ok(records)
}

/// Where the checkout of the mount at `dst` lives in the unit.
pub(crate) fn checkout_path(
    layout: &Layout,
    container: &str,
    isolation: Isolation,
    dst: &str,
) -> PathBuf {
    let kind = if isolation == Isolation::Worktree {
        "worktree"
    } else {
        "clone"
    };
    layout
        .unit_dir(container)
        .join("git")
        .join(kind)
        .join(slug(dst))
}

pub(crate) fn write_records(
    layout: &Layout,
    container: &str,
    records: &[IsolationRecord],
) -> Result<(), IsolationError> {
    let path = records_file(layout, container);
    // A record keeps the path its worktree's entry names until jackin has
    // pointed the entry at the new one (after a move of the home).
    let stored: Vec<IsolationRecord> = records
        .iter()
        .map(|record| IsolationRecord {
            path: record
                .moved_from
                .clone()
                .unwrap_or_else(|| record.path.clone()),
            ..record.clone()
        })
        .collect();
    let mut bytes = serde_json::to_vec_pretty(&stored).expect("records serialize");
    bytes.push(b'\n');
    write_atomic(&path, &bytes).map_err(io(&path))
}

/// A directory name for a mount destination: readable, and unique through a
/// short hash (`/a/b` and `/a-b` must not collide).
pub fn slug(dst: &str) -> String {
    let readable: String = dst
        .trim_matches('/')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let hash = sha256_hex(dst.as_bytes(), 4);
    format!("{readable}-{hash}")
}

pub(crate) fn path_str(path: &Path) -> &str {
    path.to_str().expect("jackin's paths are UTF-8")
}

/// The prefix of every scratch branch jackin makes.
pub(crate) const SCRATCH_PREFIX: &str = "jackin/scratch/";

/// A bind mount a worktree needs besides its own directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GitBind {
    /// The host path bound.
    pub source: String,
    /// Where the container sees it: a path of the host repository's git
    /// directory, as the checkout's `.git` names it.
    pub target: String,
    pub read_only: bool,
}

/// `base/relative` as a real directory (see
/// [`fsutil::ensure_real_dir_below`]): an agent that could once write below
/// `base` may have left a link, and the engine would bind where it points.
pub(crate) fn real_dir_below(base: &Path, relative: &Path) -> Result<PathBuf, String> {
    fsutil::ensure_real_dir_below(base, relative).map_err(|e| format!("{}: {e}", base.display()))
}

/// Shows what a tree says, escaped and short, in a message.
pub(crate) fn quoted(text: &str) -> String {
    let short: String = text.chars().take(200).collect();
    format!("{short:?}")
}

/// The host repository's git directory as recorded, or (for a record made
/// before jackin recorded it) as the host repository says.
pub(crate) fn git_dir_of(record: &IsolationRecord) -> Result<PathBuf, IsolationError> {
    match &record.common_dir {
        Some(dir) => Ok(PathBuf::from(dir)),
        None => common_dir(&record.src),
    }
}

/// The host repository's git directory, which its worktrees share. The host
/// repository is the operator's; its own `.git` is not agent-writable.
pub(crate) fn common_dir(src: &str) -> Result<PathBuf, IsolationError> {
    let out = git::run(&[
        "-C",
        src,
        "rev-parse",
        "--path-format=absolute",
        "--git-common-dir",
    ])?;
    Ok(PathBuf::from(String::from_utf8_lossy(&out).trim()))
}

/// The most jackin reads of a host repository's small files (`.git`,
/// `commondir`, `objects/info/alternates`).
const MAX_HOST_LINK_FILE: u64 = 64 << 10;

/// What a confined git needs to read of the host repository `src` beside
/// `src` itself: its git directory and common directory when they are
/// elsewhere (the repository is a worktree of another), and the objects
/// its alternates name. The operator's files, taken as they say.
pub fn host_reads(src: &str) -> Vec<PathBuf> {
    let mut reads = Vec::new();
    let mut git_dir = Path::new(src).join(".git");
    // A `.git` that is a link to the operator's git directory elsewhere.
    if std::fs::symlink_metadata(&git_dir).is_ok_and(|m| m.is_symlink())
        && let Ok(target) = std::fs::canonicalize(&git_dir)
    {
        git_dir = target;
        reads.push(git_dir.clone());
    }
    if let Ok(text) = fsutil::read_regular(&git_dir, MAX_HOST_LINK_FILE) {
        let text = String::from_utf8_lossy(&text);
        if let Some(named) = text.trim_end().strip_prefix("gitdir: ") {
            git_dir = Path::new(src).join(named);
            reads.push(git_dir.clone());
        }
    }
    let mut common = git_dir.clone();
    if let Ok(text) = fsutil::read_regular(&git_dir.join("commondir"), MAX_HOST_LINK_FILE) {
        common = git_dir.join(String::from_utf8_lossy(&text).trim_end());
        reads.push(common.clone());
    }
    reads.extend(alternates_of(&common.join("objects")));
    reads
}

/// The object directories an objects directory's alternates name, one
/// level deep (absolute, or relative to it), as their operator wrote them.
pub fn alternates_of(objects: &Path) -> Vec<PathBuf> {
    let Ok(text) = fsutil::read_regular(&objects.join("info/alternates"), MAX_HOST_LINK_FILE)
    else {
        return Vec::new();
    };
    String::from_utf8_lossy(&text)
        .lines()
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .map(|line| objects.join(line))
        .collect()
}

/// Runs a confined git in the host repository `src` (see
/// [`git::run_untrusted`]), reading it and what it needs ([`host_reads`]).
/// Its refs are read through git as in any repository an agent's work
/// lands in.
pub fn in_host(src: &str, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let reads = host_reads(src);
    let reads: Vec<&Path> = reads.iter().map(PathBuf::as_path).collect();
    git::run_untrusted_reading(src, args, &reads)
}

/// Whether every commit on `branch` is reachable from some other ref of the
/// repository (so deleting the branch loses nothing). A branch that does
/// not exist holds nothing.
pub(crate) fn held_elsewhere(src: &str, branch: &str) -> Result<bool, GitError> {
    let full = format!("refs/heads/{branch}");
    if !branch_exists(src, &full)? {
        return Ok(true);
    }
    let exclude = format!("--exclude={full}");
    // `--single-worktree`: the `HEAD`s of the repository's worktrees (an
    // earlier jackin's, which an agent wrote) are not asked; one that names
    // no object would fail every purge of the repository.
    let out = in_host(
        src,
        &[
            "rev-list",
            "--count",
            "--single-worktree",
            &full,
            "--not",
            &exclude,
            "--all",
            "--",
        ],
    )?;
    Ok(String::from_utf8_lossy(&out).trim() == "0")
}

/// Whether the ref `full` exists in the host repository. Only git's own
/// "no" is an answer (`--quiet` says it with no word on stderr): a git that
/// could not read the repository, or could not finish (a link loop), is an
/// error, never "absent", so no branch is ever deleted on its say.
pub(crate) fn branch_exists(src: &str, full: &str) -> Result<bool, GitError> {
    match in_host(src, &["rev-parse", "--verify", "--quiet", full]) {
        Ok(_) => Ok(true),
        Err(GitError::Failed { stderr, .. }) if stderr.is_empty() => Ok(false),
        Err(e) => Err(e),
    }
}
