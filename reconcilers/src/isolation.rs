//! Isolated mounts: the agent works in its own checkout of the operator's
//! repository, never in the repository itself.
//!
//! - `worktree`: a `git worktree` on a scratch branch `jackin/scratch/<unit>`
//!   from the host's `HEAD`.
//! - `clone`: a local clone of the host's current branch.
//!
//! Both are made once under the unit's `git/` directory, recorded with their
//! base commit in `.jackin/isolation.json`, and reused as they are afterwards:
//! no reset, no rebase, no pull. Before a kept checkout is reused, the host
//! repository must still hold its base commit. A worktree whose directory
//! went missing is made again from its scratch branch, commits and all.
//!
//! The checkout is the agent's: its `.git` file, and the worktree's entry in
//! the host repository (bound writable so that it can commit), say whatever
//! the agent wrote last. So jackin never asks them where anything is. When
//! it makes a worktree it records the host repository's git directory and
//! the worktree's entry in it (`<git dir>/worktrees/<id>`), read back before
//! any agent ran; every host path it binds, repairs or removes comes from
//! that record, and before any of that it checks that the entry and the
//! checkout still name each other. If they do not, that is a
//! [`IsolationError::LinkConflict`] and nothing is touched. jackin runs no
//! `git worktree repair`, `remove` or `prune`: they would follow the tree.
//!
//! The operator's repository is touched only where jackin's own parts are:
//! its worktree entry, and its scratch branch, deleted only when every
//! commit on it is held elsewhere. Its config is never changed (jackin used
//! to enable `extensions.worktreeConfig`, which made a `config.worktree` in
//! an agent-writable entry config for the operator's own git).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jackin_api::instance::{Isolation, MountSpec};
use serde::{Deserialize, Serialize};

use crate::digest::sha256_hex;
use crate::fsutil::{self, ensure_private_dir, read_untrusted, remove_if_exists, write_atomic};
use crate::git::{self, GitError};
use crate::gitdir::{self, ViewError};
use crate::layout::Layout;

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
    /// For a worktree: its entry in the host repository,
    /// `<common_dir>/worktrees/<id>`, read from the new checkout right after
    /// git made it, before any agent ran. The one entry jackin binds,
    /// repairs and removes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin_dir: Option<String>,
    /// Where the record put the checkout when that is not where the layout
    /// puts it now: the home was moved. Not stored.
    #[serde(skip)]
    pub moved_from: Option<String>,
}

impl IsolationRecord {
    /// The checkout and its entry no longer name each other, as `detail` says.
    fn link_conflict(&self, detail: String) -> IsolationError {
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
        "mount {dst}: the worktree {path} and its entry in the host repository no longer name \
         each other ({detail}); jackin neither binds, repairs nor removes an entry the tree \
         points at"
    )]
    LinkConflict {
        dst: String,
        path: String,
        detail: String,
    },
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IsolationError + '_ {
    move |source| IsolationError::Io {
        path: path.to_owned(),
        source,
    }
}

fn records_file(layout: &Layout, container: &str) -> PathBuf {
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
        match read_untrusted(&path, crate::layout::cap::ISOLATION_RECORDS) {
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
fn checkout_path(layout: &Layout, container: &str, isolation: Isolation, dst: &str) -> PathBuf {
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

fn write_records(
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
pub(crate) fn slug(dst: &str) -> String {
    let readable: String = dst
        .trim_matches('/')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let hash = sha256_hex(dst.as_bytes(), 4);
    format!("{readable}-{hash}")
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("jackin's paths are UTF-8")
}

fn head_commit(repo: &str, dst: &str) -> Result<String, IsolationError> {
    git::run(&["-C", repo, "rev-parse", "--verify", "HEAD^{commit}"])
        .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
        .map_err(|e| IsolationError::NotARepository {
            dst: dst.to_owned(),
            src: repo.to_owned(),
            detail: e.to_string(),
        })
}

/// The prefix of every scratch branch jackin makes.
const SCRATCH_PREFIX: &str = "jackin/scratch/";

/// The host's own branches and their tips; scratch branches (of this or
/// any other unit) are jackin's, never the operator's.
fn branch_tips(repo: &str) -> Result<BTreeMap<String, String>, GitError> {
    // Its scratch refs were agent-writable before each unit had its own
    // (a link loop may be left there): read confined.
    let out = git::run_untrusted(
        repo,
        &[
            "for-each-ref",
            "--format=%(refname:short)%00%(objectname)",
            "refs/heads/",
        ],
    )?;
    Ok(String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|line| {
            let (name, tip) = line.split_once('\0')?;
            (!name.starts_with(SCRATCH_PREFIX)).then(|| (name.to_owned(), tip.to_owned()))
        })
        .collect())
}

/// Makes (or finds) the checkout of every isolated mount; `shared` mounts
/// are not touched. A kept checkout is verified against its host repository
/// (and a worktree against its entry there) before it is reused.
pub fn prepare(
    layout: &Layout,
    container: &str,
    mounts: &[MountSpec],
) -> Result<(), IsolationError> {
    let mut records = read_records(layout, container)?;
    for mount in mounts.iter().filter(|m| m.isolation != Isolation::Shared) {
        let existing = records.iter().position(|r| r.dst == mount.dst);
        match existing {
            Some(at) if Path::new(&records[at].path).exists() => {
                verify(&records[at])?;
                publish(&records[at])?;
                if records[at].isolation == Isolation::Worktree {
                    let link = worktree_link(&records[at])?;
                    if link.names_old_path {
                        // The home moved: the entry is pointed here, by
                        // jackin, from its record (never `git worktree
                        // repair`, which would follow the checkout's `.git`).
                        let gitdir = link.admin.join("gitdir");
                        let target = format!("{}/.git\n", records[at].path);
                        write_atomic(&gitdir, target.as_bytes()).map_err(io(&gitdir))?;
                    }
                    let adopted = records[at].admin_dir.is_none();
                    records[at].common_dir = Some(path_str(&link.common).to_owned());
                    records[at].admin_dir = Some(path_str(&link.admin).to_owned());
                    if adopted || records[at].moved_from.take().is_some() {
                        write_records(layout, container, &records)?;
                    }
                }
            }
            // A worktree whose directory is gone: its branch still holds the
            // agent's commits. Made again from it, never from scratch.
            Some(at) if records[at].isolation == Isolation::Worktree => {
                verify(&records[at])?;
                publish(&records[at])?;
                remove_entries_naming(&records[at])?;
                make_checkout(&mut records[at])?;
                records[at].moved_from = None;
                write_records(layout, container, &records)?;
            }
            // A clone is nothing without its directory: a new one, recorded
            // before anything is made, so that a failure or a crash half-way
            // leaves a record a purge can clean up from.
            _ => {
                let record = plan_record(layout, container, mount)?;
                records.retain(|r| r.dst != mount.dst);
                records.push(record);
                write_records(layout, container, &records)?;
                let last = records.len() - 1;
                make_checkout(&mut records[last])?;
                write_records(layout, container, &records)?;
            }
        }
    }
    Ok(())
}

/// The mounts as the container binds them: an isolated mount's source is
/// its recorded checkout. An isolated mount without one is an error, never
/// a fallback to the host directory (that would hand the agent the
/// operator's repository).
pub fn bind_sources(
    layout: &Layout,
    container: &str,
    mounts: &[MountSpec],
) -> Result<Vec<MountSpec>, IsolationError> {
    let records = read_records(layout, container)?;
    mounts
        .iter()
        .map(|m| {
            let mut bound = m.clone();
            if m.isolation != Isolation::Shared {
                let record = records
                    .iter()
                    .find(|r| r.dst == m.dst && Path::new(&r.path).exists())
                    .ok_or_else(|| IsolationError::NotPrepared { dst: m.dst.clone() })?;
                bound.src = record.path.clone();
            }
            Ok(bound)
        })
        .collect()
}

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

/// What a worktree's git needs inside the container. Its `.git` file names
/// the host repository's git directory by its host path, so a git directory
/// is bound there: the unit's view of it ([`gitdir::View`]), writable, in
/// which the agent's git writes its config, objects and logs, none of which
/// the operator's git ever reads. Over the view:
/// - the host's refs and `packed-refs`, read-only, so the agent sees the
///   operator's branches as they are;
/// - over the scratch branches among them, a directory of the unit with the
///   agent's own scratch ref: the agent's branch moves there, and jackin
///   [`publish`]es it into the host repository with a checked value (and
///   the objects it needs, checked too). Other units' scratch branches, and
///   whatever the agent leaves beside its own (a link, a loop), never reach
///   the host repository;
/// - the host's objects, read-only, where the view's `alternates` names
///   them;
/// - the worktree's own entry (its HEAD, index and reflog), writable.
///
/// Every path comes from the unit's records, and only after the entry and
/// the checkout are seen to name each other.
pub fn git_binds(layout: &Layout, container: &str) -> Result<Vec<GitBind>, IsolationError> {
    let mut binds = Vec::new();
    for record in read_records(layout, container)? {
        let Some(branch) = &record.scratch_branch else {
            continue;
        };
        let link = worktree_link(&record)?;
        if link.names_old_path {
            return Err(IsolationError::NotPrepared { dst: record.dst });
        }
        let conflict = |detail| record.link_conflict(detail);
        let refs_dir = Path::new(branch).parent().unwrap_or(Path::new(""));
        let real = |relative: &Path| real_dir_below(&link.common, relative).map_err(&conflict);
        let bind = |source: &Path, target: &Path, read_only: bool| GitBind {
            source: path_str(source).to_owned(),
            target: path_str(target).to_owned(),
            read_only,
        };
        let common = &link.common;
        let entry = link
            .admin
            .file_name()
            .and_then(|name| name.to_str())
            .expect("an entry of worktrees/ has a name");
        let view = view_of(&record);
        view.refresh(common, entry)?;
        binds.push(bind(&view.dir, common, false));
        binds.push(bind(&real(Path::new("refs"))?, &common.join("refs"), true));
        if let Some(packed) = view.host_packed_refs(common) {
            binds.push(bind(&packed, &packed, true));
        }
        let seed = seed_unit_ref(&record)?;
        let scratch_refs = real(&Path::new("refs/heads").join(refs_dir))?;
        binds.push(bind(&seed, &scratch_refs, false));
        let host_objects = real(Path::new("objects"))?;
        binds.push(bind(
            &host_objects,
            Path::new(&view.host_objects_target),
            true,
        ));
        binds.push(bind(&link.admin, &link.admin, false));
    }
    binds.dedup();
    Ok(binds)
}

/// The unit's view of the git directory of a worktree's host repository.
fn view_of(record: &IsolationRecord) -> gitdir::View {
    let (git, name) = unit_git_root(record);
    gitdir::View::new(&git, name)
}

/// The objects directory of the unit's view of a worktree's host
/// repository: where the agent's own commits are until jackin publishes
/// them. Agent-written.
pub(crate) fn view_objects(record: &IsolationRecord) -> PathBuf {
    view_of(record).dir.join("objects")
}

/// The unit's directory that stands in for the host repository's scratch
/// refs in the container.
const UNIT_REFS: &str = "refs";

/// The unit's `git/` directory and the checkout's name in it: jackin's
/// directories for the checkout live beside it, out of the agent's reach
/// but for the binds.
fn unit_git_root(record: &IsolationRecord) -> (PathBuf, &str) {
    let checkout = Path::new(&record.path);
    let git = checkout
        .parent()
        .and_then(Path::parent)
        .expect("a checkout lives under the unit's git/");
    let name = checkout
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a checkout has a UTF-8 name");
    (git.to_owned(), name)
}

/// `<unit>/git/<kind>/<the checkout's name>`.
fn unit_git_dir(record: &IsolationRecord, kind: &str) -> PathBuf {
    let (git, name) = unit_git_root(record);
    git.join(kind).join(name)
}

/// The file of the agent's own scratch ref, in the unit.
fn unit_ref_file(record: &IsolationRecord, branch: &str) -> PathBuf {
    let leaf = Path::new(branch)
        .file_name()
        .expect("a scratch branch has a name");
    unit_git_dir(record, UNIT_REFS).join(leaf)
}

/// Where jackin keeps the value it last gave the unit's scratch ref: beside
/// the bound directory, out of the agent's reach. The agent moved its
/// branch exactly when its ref differs from this.
fn seeded_file(record: &IsolationRecord) -> PathBuf {
    let mut dir = unit_git_dir(record, UNIT_REFS).into_os_string();
    dir.push(".seeded");
    PathBuf::from(dir)
}

/// Before a container starts, the unit's scratch ref is where the host
/// repository's branch is (published already, or moved by the operator).
/// Returns the unit's refs directory.
fn seed_unit_ref(record: &IsolationRecord) -> Result<PathBuf, IsolationError> {
    // What the agent moved since the last start reaches the host first: the
    // seed never overwrites it.
    publish(record)?;
    let branch = record.scratch_branch.as_deref().unwrap_or_default();
    let dir = unit_git_dir(record, UNIT_REFS);
    ensure_private_dir(&dir).map_err(io(&dir))?;
    let full = format!("refs/heads/{branch}");
    let tip = git::run_untrusted(&record.src, &["rev-parse", "--verify", "--quiet", &full])?;
    let seeded = seeded_file(record);
    write_atomic(&seeded, &tip).map_err(io(&seeded))?;
    let file = unit_ref_file(record, branch);
    write_atomic(&file, &tip).map_err(io(&file))?;
    Ok(dir)
}

/// Moves the scratch branch in the host repository to where the agent's own
/// ref (in the unit) says, when the agent moved it since jackin last set it,
/// and once it names a commit the repository has: the agent's commits land
/// in its view's objects, its ref in the unit, and the objects the commit
/// needs are brought over checked ([`gitdir::import_objects`]) when the
/// host lacks the commit. The host's branch moves only
/// from the value jackin gave the unit, so a move made meanwhile on the
/// host (by the operator, or by jackin) is never undone. A ref that is no
/// object name, names no commit there, or races a move on the host, is a
/// link conflict and moves nothing. A worktree made before jackin kept the
/// ref in the unit has none there yet: nothing to publish.
pub fn publish(record: &IsolationRecord) -> Result<(), IsolationError> {
    let Some(branch) = &record.scratch_branch else {
        return Ok(());
    };
    let conflict = |detail| record.link_conflict(detail);
    let file = unit_ref_file(record, branch);
    let tip = match read_untrusted(&file, MAX_LINK_FILE) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => return Err(conflict(format!("{}: {e}", file.display()))),
    };
    let is_object_name = matches!(tip.len(), 40 | 64)
        && tip
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !is_object_name {
        return Err(conflict(format!(
            "the scratch branch's ref {} says {}",
            file.display(),
            quoted(&tip)
        )));
    }
    let seeded = seeded_file(record);
    let given = read_untrusted(&seeded, MAX_LINK_FILE)
        .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
        .map_err(io(&seeded))?;
    if given == tip {
        return Ok(());
    }
    let full = format!("refs/heads/{branch}");
    if !host_has_commit(record, &tip)? {
        // The agent's new objects are in its view: they come over checked.
        let common = git_dir_of(record)?;
        let host_objects = real_dir_below(&common, Path::new("objects")).map_err(&conflict)?;
        let (scratch, _) = unit_git_root(record);
        match gitdir::import_objects(
            &view_of(record),
            &record.src,
            &host_objects,
            &scratch,
            &tip,
            &given,
        ) {
            Ok(()) => {}
            Err(ViewError::Refused(detail)) => return Err(conflict(detail)),
            Err(ViewError::Git(GitError::Failed { stderr, .. })) => {
                return Err(conflict(format!(
                    "the objects of the agent's commit {tip} cannot be brought into the host \
                     repository: {stderr}"
                )));
            }
            Err(e) => return Err(e.into()),
        }
        if !host_has_commit(record, &tip)? {
            return Err(conflict(format!(
                "the scratch branch names {tip}, which is no commit of the host repository \
                 or of the agent's"
            )));
        }
    }
    // From the value the unit was given, or not at all.
    let moved = git::run(&[
        "-C",
        &record.src,
        "update-ref",
        "-m",
        "jackin: the agent's commits",
        &full,
        &tip,
        &given,
    ]);
    if let Err(GitError::Failed { stderr, .. }) = &moved {
        return Err(conflict(format!(
            "the agent moved the scratch branch to {tip}, and it moved in the host repository \
             too ({stderr})"
        )));
    }
    moved?;
    write_atomic(&seeded, tip.as_bytes()).map_err(io(&seeded))?;
    Ok(())
}

/// Whether the host repository has the commit `tip`. Only git's own "no"
/// is an answer (see [`branch_exists`]).
fn host_has_commit(record: &IsolationRecord, tip: &str) -> Result<bool, GitError> {
    match git::run_untrusted(
        &record.src,
        &["cat-file", "-e", &format!("{tip}^{{commit}}")],
    ) {
        Ok(_) => Ok(true),
        Err(GitError::Failed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// `base/relative` as a real directory (see
/// [`fsutil::ensure_real_dir_below`]): an agent that could once write below
/// `base` may have left a link, and the engine would bind where it points.
fn real_dir_below(base: &Path, relative: &Path) -> Result<PathBuf, String> {
    fsutil::ensure_real_dir_below(base, relative).map_err(|e| format!("{}: {e}", base.display()))
}

/// A worktree's entry in its host repository, as jackin recorded it (or,
/// for a record made before jackin recorded entries, as found once).
struct WorktreeLink {
    common: PathBuf,
    admin: PathBuf,
    /// The entry names where the checkout was before the home moved.
    names_old_path: bool,
}

/// The most a `.git` file or an entry's `gitdir` holds: one path.
const MAX_LINK_FILE: u64 = 4096;

/// Reads a one-line link file of a worktree (the checkout's `.git`, the
/// entry's `gitdir`), which the agent can write: no link followed, no FIFO
/// waited on, nothing large read. What it says is shown escaped.
fn read_link_file(path: &Path) -> Result<String, String> {
    read_untrusted(path, MAX_LINK_FILE)
        .map(|bytes| String::from_utf8_lossy(&bytes).trim_end().to_owned())
        .map_err(|e| format!("{}: {e}", path.display()))
}

/// Shows what a tree says, escaped and short, in a message.
fn quoted(text: &str) -> String {
    let short: String = text.chars().take(200).collect();
    format!("{short:?}")
}

/// Finds the worktree's entry from the record and checks that it and the
/// checkout still name each other: the entry's `gitdir` names the checkout
/// (here, or where it was before the home moved) and the checkout's `.git`
/// names the entry. Anything else is a [`IsolationError::LinkConflict`].
fn worktree_link(record: &IsolationRecord) -> Result<WorktreeLink, IsolationError> {
    let conflict = |detail| record.link_conflict(detail);
    let common = git_dir_of(record)?;
    let worktrees = common.join("worktrees");
    let admin = match &record.admin_dir {
        Some(dir) => PathBuf::from(dir),
        None => adopt_entry(record, &worktrees).map_err(&conflict)?,
    };
    if admin.parent() != Some(worktrees.as_path())
        || !std::fs::symlink_metadata(&admin).is_ok_and(|m| m.is_dir())
    {
        return Err(conflict(format!(
            "jackin's entry {} is not a directory of {}",
            admin.display(),
            worktrees.display()
        )));
    }
    let names = read_link_file(&admin.join("gitdir")).map_err(&conflict)?;
    let here = format!("{}/.git", record.path);
    let before = record.moved_from.as_ref().map(|p| format!("{p}/.git"));
    let names_old_path = if names == here {
        false
    } else if Some(&names) == before.as_ref() {
        true
    } else {
        return Err(conflict(format!(
            "the entry {} names {} as its checkout",
            admin.display(),
            quoted(&names)
        )));
    };
    // git writes `../..` (the git directory the entry is in); anything else
    // would make git in the checkout, jackin's confined git included, read
    // another repository as this one.
    let commondir = read_link_file(&admin.join("commondir")).map_err(&conflict)?;
    if commondir != "../.." {
        return Err(conflict(format!(
            "the entry {} names {} as its repository",
            admin.display(),
            quoted(&commondir)
        )));
    }
    let dot_git = read_link_file(&Path::new(&record.path).join(".git")).map_err(&conflict)?;
    if dot_git.strip_prefix("gitdir: ") != Some(path_str(&admin)) {
        return Err(conflict(format!(
            "the checkout's .git says {}, not {}",
            quoted(&dot_git),
            admin.display()
        )));
    }
    Ok(WorktreeLink {
        common,
        admin,
        names_old_path,
    })
}

/// Checks, for a worktree, that its checkout and its recorded entry in the
/// host repository still name each other (see [`IsolationError::LinkConflict`]);
/// a clone has no such link. The assessment runs this first: git in a
/// checkout whose `.git` points elsewhere would report on another tree.
pub fn check_link(record: &IsolationRecord) -> Result<(), IsolationError> {
    if record.scratch_branch.is_some() {
        worktree_link(record)?;
    }
    Ok(())
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

/// The entries of the host repository whose `gitdir` names the checkout
/// (here, or where it was before the home moved).
fn entries_naming(record: &IsolationRecord, worktrees: &Path) -> Vec<PathBuf> {
    let mut names = vec![format!("{}/.git", record.path)];
    names.extend(record.moved_from.as_ref().map(|p| format!("{p}/.git")));
    let Ok(entries) = std::fs::read_dir(worktrees) else {
        return Vec::new();
    };
    let mut found: Vec<PathBuf> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|entry| std::fs::symlink_metadata(entry).is_ok_and(|m| m.is_dir()))
        .filter(|entry| {
            read_link_file(&entry.join("gitdir")).is_ok_and(|gitdir| names.contains(&gitdir))
        })
        .collect();
    found.sort();
    found
}

/// For a worktree recorded before jackin recorded entries: the one entry
/// that names the checkout. None, or more than one, is a conflict.
fn adopt_entry(record: &IsolationRecord, worktrees: &Path) -> Result<PathBuf, String> {
    match entries_naming(record, worktrees).as_slice() {
        [one] => Ok(one.clone()),
        [] => Err(format!(
            "no entry in {} names the checkout",
            worktrees.display()
        )),
        many => Err(format!(
            "{} entries in {} name the checkout",
            many.len(),
            worktrees.display()
        )),
    }
}

/// Removes every entry of the host repository that names this checkout:
/// the recorded one, and any an interrupted attempt left (before a worktree
/// whose directory is gone is made again, they would refuse its path). An
/// entry that names anything else may be someone's now and stays. Returns
/// what was removed.
fn remove_entries_naming(record: &IsolationRecord) -> Result<Vec<PathBuf>, IsolationError> {
    let entries = entries_naming(record, &git_dir_of(record)?.join("worktrees"));
    for entry in &entries {
        remove_if_exists(entry).map_err(io(entry))?;
    }
    Ok(entries)
}

/// The reuse check: the host must still contain the base commit.
fn verify(record: &IsolationRecord) -> Result<(), IsolationError> {
    let spec = format!("{}^{{commit}}", record.base_commit);
    match git::run_untrusted(&record.src, &["cat-file", "-e", &spec]) {
        Ok(_) => Ok(()),
        Err(e @ (GitError::TimedOut { .. } | GitError::Confine(_))) => Err(e.into()),
        Err(_) => Err(IsolationError::ResumeConflict {
            dst: record.dst.clone(),
            src: record.src.clone(),
            base: record.base_commit.clone(),
            path: record.path.clone(),
        }),
    }
}

/// Where and from what a mount's checkout is made; nothing is made yet.
fn plan_record(
    layout: &Layout,
    container: &str,
    mount: &MountSpec,
) -> Result<IsolationRecord, IsolationError> {
    let src = mount.src.as_str();
    let base = head_commit(src, &mount.dst)?;
    let worktree = mount.isolation == Isolation::Worktree;
    let path = checkout_path(layout, container, mount.isolation, &mount.dst);
    let parent = path.parent().expect("a checkout has a parent");
    ensure_private_dir(parent).map_err(io(parent))?;
    Ok(IsolationRecord {
        dst: mount.dst.clone(),
        src: src.to_owned(),
        isolation: mount.isolation,
        path: path_str(&path).to_owned(),
        scratch_branch: worktree.then(|| format!("{SCRATCH_PREFIX}{container}")),
        base_commit: base,
        host_branches: if worktree {
            branch_tips(src)?
        } else {
            BTreeMap::new()
        },
        common_dir: if worktree {
            Some(path_str(&common_dir(src)?).to_owned())
        } else {
            None
        },
        admin_dir: None,
        moved_from: None,
    })
}

/// Makes the checkout a record describes; for a worktree, records the entry
/// git made for it, read back from the new checkout before any agent ran.
fn make_checkout(record: &mut IsolationRecord) -> Result<(), IsolationError> {
    let src = record.src.as_str();
    let path = Path::new(&record.path);
    // A directory there that no record vouched for may hold someone's work:
    // never overwrite it.
    if path.exists() {
        return Err(IsolationError::Unrecorded {
            path: record.path.clone(),
        });
    }
    let Some(branch) = &record.scratch_branch else {
        git::run(&[
            "clone",
            "--quiet",
            "--no-hardlinks",
            "--",
            src,
            &record.path,
        ])?;
        return Ok(());
    };
    let full = format!("refs/heads/{branch}");
    let has_branch = branch_exists(src, &full)?;
    let common = git_dir_of(record)?;
    record.common_dir = Some(path_str(&common).to_owned());
    record.admin_dir = None;
    // A new branch at the base commit is the operator's own tree, checked
    // out as the operator's git would. An existing branch holds the agent's
    // commits: its tree (and the attributes in it, which name filter
    // drivers) is the agent's, so git makes only the entry (no hook or
    // filter runs) and the files are checked out confined below.
    let mut argv = vec!["-C", src, "worktree", "add", "--quiet"];
    if has_branch {
        argv.push("--no-checkout");
    } else {
        argv.extend(["-b", branch]);
    }
    argv.extend(["--", &record.path]);
    argv.push(if has_branch {
        branch
    } else {
        &record.base_commit
    });
    git::run(&argv)?;
    let link = worktree_link(record)?;
    record.admin_dir = Some(path_str(&link.admin).to_owned());
    if !has_branch {
        return Ok(());
    }
    // Writing only the new checkout, its entry and the scratch branch's ref
    // and reflog.
    let refs_dir = Path::new(branch).parent().unwrap_or(Path::new(""));
    let conflict = |detail| record.link_conflict(detail);
    let refs =
        real_dir_below(&common, &Path::new("refs/heads").join(refs_dir)).map_err(&conflict)?;
    let logs =
        real_dir_below(&common, &Path::new("logs/refs/heads").join(refs_dir)).map_err(&conflict)?;
    git::run_untrusted_writing(
        &record.path,
        &["reset", "--hard", "--quiet"],
        &[Path::new(&record.path), &link.admin, &refs, &logs],
    )?;
    Ok(())
}

/// Removes every isolated checkout of the unit: a worktree's directory and
/// its entry in the host repository (the recorded entry, and only if it
/// still names this checkout), a clone's directory. A scratch branch is
/// deleted only when every commit on it is held by another ref; otherwise it
/// stays in the host repository and is returned, so that nothing committed
/// is ever lost. The host repository's own branches and files stay.
pub fn remove_all(layout: &Layout, container: &str) -> Result<Vec<String>, IsolationError> {
    remove_where(layout, container, |_| true)
}

/// Removes the isolated checkouts of the unit that `which` selects, as
/// [`remove_all`] removes them all (a rollout retires those its new spec
/// binds otherwise); the others stay recorded.
pub fn remove_where(
    layout: &Layout,
    container: &str,
    which: impl Fn(&IsolationRecord) -> bool,
) -> Result<Vec<String>, IsolationError> {
    let (records, staying): (Vec<_>, Vec<_>) = read_records(layout, container)?
        .into_iter()
        .partition(|record| which(record));
    let mut kept_branches = Vec::new();
    for record in &records {
        let src = record.src.as_str();
        if record.isolation == Isolation::Worktree && Path::new(src).exists() {
            let ours = remove_entries_naming(record)?;
            if let Some(admin) = &record.admin_dir
                && !ours.iter().any(|e| e == Path::new(admin))
                && Path::new(admin).exists()
            {
                tracing::warn!(
                    "left the worktree entry {admin} in {src}: it no longer names the checkout \
                     {}, so it is not jackin's to remove",
                    record.path
                );
            }
            // The agent's latest commits reach the branch first; if they
            // cannot, the branch is kept as it is, never deleted.
            let published = publish(record);
            if let Err(e) = &published {
                tracing::warn!("{e}");
            }
            if let Some(branch) = &record.scratch_branch {
                if published.is_ok() && held_elsewhere(src, branch)? {
                    let _ = git::run(&["-C", src, "branch", "-D", "--", branch]);
                } else {
                    kept_branches.push(format!("{branch} in {src}"));
                }
            }
        }
        remove_if_exists(Path::new(&record.path)).map_err(io(Path::new(&record.path)))?;
    }
    if !records.is_empty() {
        write_records(layout, container, &staying)?;
    }
    Ok(kept_branches)
}

/// Whether every commit on `branch` is reachable from some other ref of the
/// repository (so deleting the branch loses nothing). A branch that does
/// not exist holds nothing.
fn held_elsewhere(src: &str, branch: &str) -> Result<bool, GitError> {
    let full = format!("refs/heads/{branch}");
    if !branch_exists(src, &full)? {
        return Ok(true);
    }
    let exclude = format!("--exclude={full}");
    let out = git::run_untrusted(
        src,
        &[
            "rev-list", "--count", &full, "--not", &exclude, "--all", "--",
        ],
    )?;
    Ok(String::from_utf8_lossy(&out).trim() == "0")
}

/// Whether the ref `full` exists in the host repository. Only git's own
/// "no" is an answer: a git that could not finish (a link loop the agent
/// made among the scratch refs) is an error, never "absent".
fn branch_exists(src: &str, full: &str) -> Result<bool, GitError> {
    match git::run_untrusted(src, &["rev-parse", "--verify", "--quiet", full]) {
        Ok(_) => Ok(true),
        Err(GitError::Failed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    fn host_repository(dir: &Path) -> String {
        let host = dir.join("host");
        let host = host.to_str().unwrap();
        git::run(&["init", "--quiet", host]).unwrap();
        std::fs::write(dir.join("host/README"), "host\n").unwrap();
        for args in [
            &["add", "."][..],
            &[
                "-c",
                "user.email=t@jackin.dev",
                "-c",
                "user.name=t",
                "commit",
                "--quiet",
                "-m",
                "base",
            ],
        ] {
            let mut argv = vec!["-C", host];
            argv.extend_from_slice(args);
            git::run(&argv).unwrap();
        }
        host.to_owned()
    }

    /// A worktree mount of `host`.
    fn worktree_mount(host: &str) -> MountSpec {
        MountSpec {
            src: host.to_owned(),
            dst: "/workspace/app".into(),
            readonly: false,
            isolation: Isolation::Worktree,
        }
    }

    /// A commit of `parent`'s tree on `parent`, written as git in a
    /// container writes it: into the unit's view of the git directory, with
    /// the host's objects behind it, moving no ref; its name.
    pub(crate) fn agent_commit(host: &str, view: &str, parent: &str, message: &str) -> String {
        let out = std::process::Command::new("git")
            .args([
                "-C",
                host,
                "-c",
                "user.email=t@jackin.dev",
                "-c",
                "user.name=t",
            ])
            .args(["commit-tree", "-p", parent, "-m", message])
            .arg(format!("{parent}^{{tree}}"))
            .env("GIT_OBJECT_DIRECTORY", format!("{view}/objects"))
            .env(
                "GIT_ALTERNATE_OBJECT_DIRECTORIES",
                format!("{host}/.git/objects"),
            )
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    /// A moved home: the record keeps the path its entry names until jackin
    /// points the entry at the new place (itself, from the record), and the
    /// binds then come from the record.
    #[test]
    fn a_moved_home_repoints_its_own_entry_from_the_record() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let mount = worktree_mount(&host);
        let before = Layout::new(dir.path().join("home"));
        prepare(&before, "jk-1-t", std::slice::from_ref(&mount)).unwrap();
        let old_path = read_records(&before, "jk-1-t").unwrap()[0].path.clone();
        std::fs::rename(dir.path().join("home"), dir.path().join("moved")).unwrap();

        let after = Layout::new(dir.path().join("moved"));
        let records = read_records(&after, "jk-1-t").unwrap();
        assert_eq!(records[0].moved_from.as_deref(), Some(old_path.as_str()));
        // Written back before the repair, a record still says the old path.
        write_records(&after, "jk-1-t", &records).unwrap();
        assert_eq!(
            read_records(&after, "jk-1-t").unwrap()[0].moved_from,
            records[0].moved_from
        );
        assert!(matches!(
            git_binds(&after, "jk-1-t"),
            Err(IsolationError::NotPrepared { .. })
        ));

        prepare(&after, "jk-1-t", std::slice::from_ref(&mount)).unwrap();
        let record = read_records(&after, "jk-1-t").unwrap().remove(0);
        assert_eq!(
            record.moved_from, None,
            "the record follows the repaired entry"
        );
        let admin = PathBuf::from(record.admin_dir.clone().unwrap());
        assert_eq!(
            std::fs::read_to_string(admin.join("gitdir"))
                .unwrap()
                .trim(),
            format!("{}/.git", record.path)
        );
        let binds = git_binds(&after, "jk-1-t").unwrap();
        assert!(
            binds
                .iter()
                .any(|b| Path::new(&b.target) == admin && !b.read_only),
            "{binds:?}"
        );
        assert!(
            binds.iter().any(
                |b| Path::new(&b.source) == Path::new(&host).join(".git/objects")
                    && b.target.starts_with(gitdir::HOST_OBJECTS_IN_CONTAINER)
                    && b.read_only
            ),
            "{binds:?}"
        );
        let listed = git::run(&["-C", &host, "worktree", "list", "--porcelain"]).unwrap();
        assert!(String::from_utf8_lossy(&listed).contains(&record.path));
    }

    /// The container moves the scratch branch in the unit; jackin publishes
    /// it into the host repository only as a commit the repository has.
    #[test]
    fn the_agents_branch_moves_in_the_unit_and_is_published_checked() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let mount = worktree_mount(&host);
        let layout = Layout::new(dir.path().join("home"));
        prepare(&layout, "jk-1-t", std::slice::from_ref(&mount)).unwrap();
        let binds = git_binds(&layout, "jk-1-t").unwrap();
        let scratch = binds
            .iter()
            .find(|b| b.target.ends_with("refs/heads/jackin/scratch"))
            .expect("the scratch refs are bound");
        assert!(
            scratch
                .source
                .starts_with(dir.path().join("home").to_str().unwrap())
                && !scratch.read_only,
            "{scratch:?}"
        );
        let record = read_records(&layout, "jk-1-t").unwrap().remove(0);
        let branch = record.scratch_branch.clone().unwrap();
        let full = format!("refs/heads/{branch}");
        let tip = |repo: &str| {
            String::from_utf8(git::run(&["-C", repo, "rev-parse", &full]).unwrap())
                .unwrap()
                .trim()
                .to_owned()
        };
        let unit_ref = Path::new(&scratch.source).join("jk-1-t");
        assert_eq!(
            std::fs::read_to_string(&unit_ref).unwrap().trim(),
            tip(&host)
        );

        // The agent commits: the objects land in its view, the ref in the
        // unit; the host has neither until jackin publishes.
        let common = format!("{host}/.git");
        let view = binds
            .iter()
            .find(|b| b.target == common)
            .expect("the view is bound over the git directory");
        assert!(
            !view.read_only
                && view
                    .source
                    .starts_with(dir.path().join("home").to_str().unwrap())
        );
        let base = tip(&host);
        let commit = agent_commit(&host, &view.source, &base, "agent");
        std::fs::write(&unit_ref, format!("{commit}\n")).unwrap();
        // A link the agent leaves beside its ref stays in the unit.
        std::os::unix::fs::symlink("/", Path::new(&scratch.source).join("evil")).unwrap();
        assert_eq!(tip(&host), base, "nothing moves before jackin publishes");
        assert!(git::run(&["-C", &host, "cat-file", "-e", &commit]).is_err());
        publish(&record).unwrap();
        assert_eq!(tip(&host), commit);
        git::run(&["-C", &host, "fsck", "--connectivity-only", "--no-dangling"]).unwrap();
        let refs_dir = Path::new(&host).join(".git/refs/heads/jackin/scratch");
        assert!(!refs_dir.join("evil").exists());

        for bad in ["not a commit", &"a".repeat(40)] {
            std::fs::write(&unit_ref, bad).unwrap();
            assert!(
                matches!(publish(&record), Err(IsolationError::LinkConflict { .. })),
                "{bad}"
            );
            assert_eq!(tip(&host), commit, "{bad}: the host's branch stays");
        }

        // A move on the host (here back to the base) is never undone by a
        // unit ref the agent did not move...
        std::fs::write(&unit_ref, format!("{commit}\n")).unwrap();
        git::run(&["-C", &host, "update-ref", &full, &base]).unwrap();
        publish(&record).unwrap();
        assert_eq!(tip(&host), base);
        // ...and when both moved, nothing moves.
        let later = agent_commit(&host, &view.source, &commit, "later");
        std::fs::write(&unit_ref, format!("{later}\n")).unwrap();
        assert!(matches!(
            publish(&record),
            Err(IsolationError::LinkConflict { .. })
        ));
        assert_eq!(tip(&host), base, "the operator's move stands");
    }

    /// What the agent leaves in its view reaches the host repository only
    /// as regular files below the view's objects: a link to an object file
    /// elsewhere (anywhere on the path), or a FIFO, publishes nothing and
    /// does not hang; the object itself then does.
    #[test]
    fn the_agents_objects_are_published_only_from_regular_files_in_its_view() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let layout = Layout::new(dir.path().join("home"));
        prepare(&layout, "jk-1-t", &[worktree_mount(&host)]).unwrap();
        let binds = git_binds(&layout, "jk-1-t").unwrap();
        let common = format!("{host}/.git");
        let view = &binds.iter().find(|b| b.target == common).unwrap().source;
        let record = read_records(&layout, "jk-1-t").unwrap().remove(0);
        let base = String::from_utf8(git::run(&["-C", &host, "rev-parse", "HEAD"]).unwrap())
            .unwrap()
            .trim()
            .to_owned();
        let commit = agent_commit(&host, view, &base, "agent");
        let unit_ref = unit_ref_file(&record, record.scratch_branch.as_deref().unwrap());
        std::fs::write(&unit_ref, format!("{commit}\n")).unwrap();

        let objects = Path::new(view).join("objects");
        let (fanout, rest) = commit.split_at(2);
        let object = objects.join(fanout).join(rest);
        let elsewhere = dir.path().join("elsewhere");
        std::fs::create_dir_all(elsewhere.join(fanout)).unwrap();
        std::fs::rename(&object, elsewhere.join(fanout).join(rest)).unwrap();
        let refused = |what: &str| {
            let err = publish(&record).unwrap_err();
            assert!(
                matches!(err, IsolationError::LinkConflict { .. }),
                "{what}: {err}"
            );
            assert!(
                git::run(&["-C", &host, "cat-file", "-e", &commit]).is_err(),
                "{what}: the commit reached the host"
            );
        };
        std::os::unix::fs::symlink(elsewhere.join(fanout).join(rest), &object).unwrap();
        refused("a link as the object file");
        std::fs::remove_file(&object).unwrap();
        std::fs::remove_dir(objects.join(fanout)).unwrap();
        std::os::unix::fs::symlink(elsewhere.join(fanout), objects.join(fanout)).unwrap();
        refused("a link as the fan-out directory");
        std::fs::remove_file(objects.join(fanout)).unwrap();
        std::fs::create_dir(objects.join(fanout)).unwrap();
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&object)
                .status()
                .unwrap()
                .success()
        );
        refused("a FIFO as the object file");

        std::fs::remove_file(&object).unwrap();
        std::fs::rename(elsewhere.join(fanout).join(rest), &object).unwrap();
        publish(&record).unwrap();
        git::run(&["-C", &host, "cat-file", "-e", &commit]).unwrap();
    }

    /// The view is the agent's to write (its config persists, the host's is
    /// never touched), and jackin's to lay out: what the agent put where a
    /// bind lands is replaced at the next start.
    #[test]
    fn the_view_keeps_the_agents_config_and_resets_where_binds_land() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let layout = Layout::new(dir.path().join("home"));
        prepare(&layout, "jk-1-t", &[worktree_mount(&host)]).unwrap();
        let host_config = std::fs::read(format!("{host}/.git/config")).unwrap();
        let binds = git_binds(&layout, "jk-1-t").unwrap();
        let common = format!("{host}/.git");
        let view = PathBuf::from(&binds.iter().find(|b| b.target == common).unwrap().source);
        assert_eq!(std::fs::read(view.join("config")).unwrap(), host_config);
        let mut agents = host_config.clone();
        agents.extend_from_slice(b"[user]\n\tname = agent\n");
        std::fs::write(view.join("config"), &agents).unwrap();
        std::fs::remove_dir_all(view.join("objects/info")).unwrap();
        std::os::unix::fs::symlink(dir.path(), view.join("objects/info")).unwrap();
        assert!(!dir.path().join("alternates").exists());
        std::fs::remove_dir_all(view.join("refs")).unwrap();
        std::fs::write(view.join("refs"), "not a directory").unwrap();
        std::fs::remove_file(view.join("HEAD")).unwrap();
        std::os::unix::fs::symlink("/etc/hostname", view.join("HEAD")).unwrap();

        git_binds(&layout, "jk-1-t").unwrap();
        assert_eq!(std::fs::read(view.join("config")).unwrap(), agents);
        assert_eq!(
            std::fs::read(format!("{host}/.git/config")).unwrap(),
            host_config
        );
        for place in ["objects/info", "refs"] {
            let meta = std::fs::symlink_metadata(view.join(place)).unwrap();
            assert!(meta.is_dir(), "{place}: {meta:?}");
        }
        assert_eq!(
            std::fs::read(view.join("HEAD")).unwrap(),
            std::fs::read(format!("{host}/.git/HEAD")).unwrap()
        );
        assert!(std::fs::symlink_metadata(dir.path().join("alternates")).is_err());
    }

    #[test]
    fn slugs_are_readable_and_distinct() {
        let a = slug("/workspace/app");
        assert!(a.starts_with("workspace-app-"), "{a}");
        assert_ne!(slug("/a/b"), slug("/a-b"));
    }
}
