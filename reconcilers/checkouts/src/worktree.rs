//! A worktree checkout: a repository of the unit's own that borrows the
//! operator's objects, read-only.
//!
//! `isolation: worktree` is a cheap checkout of a branch of the operator's
//! repository whose work shows up there as a branch. The boundary between
//! the agent and the operator's repository is a repository boundary, as a
//! fork's is: nothing of the host repository's `.git` is writable from the
//! container, and the host repository never holds a file the agent wrote
//! (git's own `git worktree` would: its entry under `.git/worktrees/`, with
//! the agent's `HEAD`, index, reflog and links, read by every host command).
//!
//! On the host, for the checkout named `<name>` of a unit:
//! - `git/worktree/<name>`: the checkout, bound at the mount's destination.
//!   Its `.git` is a file naming the repository;
//! - `git/repo/<name>`: the unit's repository, bound writable in the
//!   container at the same path as on the host, so that the checkout's
//!   `.git` names it for git on both sides. Its refs, index, config, hooks,
//!   reflog and objects are the agent's: it can make branches, tags and
//!   stash entries as in a clone of its own. It starts with one branch,
//!   `jackin/scratch/<unit>`, at the base commit;
//! - `git/repo/<name>.host-objects`: jackin's link to the host repository's
//!   `objects`; in the container, the host's objects are bound read-only at
//!   that path. The unit's `objects/info/alternates` names it by its
//!   absolute path (what every git, and GitPython's own object reader,
//!   follows), so one line serves git on the host and in the container, and
//!   jackin writes it at every start;
//! - `git/repo/<name>.published`: the tip jackin last published;
//! - `git/repo/<name>.publishing`: while a publication runs, the tip it is
//!   about to give the host's branch, written before the branch moves: a
//!   host branch found at that value after a crash is jackin's own move.
//!
//! In the host repository, jackin keeps two refs of its own:
//! - `refs/jackin/base/<unit>` pins the base commit, all the unit borrows,
//!   for as long as the unit exists (a save of discarded work pins it
//!   again for as long as the save needs it). Every start checks that it
//!   is there and names the base, and refuses to start otherwise;
//! - `refs/heads/jackin/scratch/<unit>`, the published branch: jackin moves
//!   it to the unit's branch ([`publish`]) at every start, stop and before
//!   a removal, after a checked copy of the objects it needs, with a
//!   compare-and-swap from the value it last published. The agent never
//!   writes it. Reading a checkout (an assessment, a look, a dry run) never
//!   publishes: it reads the unit's own repository.
//!
//! The agent sees none of the host's other refs: only its own branch and
//! the history behind it. The host's objects, all of them, are readable
//! (as in any checkout that borrows them): an object of another branch is
//! there to read for whoever knows its name.

use std::path::{Path, PathBuf};

use crate::checkout::{
    GitBind, IsolationError, IsolationRecord, alternates_of, branch_exists, git_dir_of,
    held_elsewhere, in_host, io, path_str, quoted, real_dir_below,
};
use crate::git::{self, GitError};
use crate::gitdir::{self, ViewError};
use jackin_files::fsutil::{self, read_untrusted, remove_if_exists, write_atomic};

/// The prefix of the refs that pin each unit's base commit in the host
/// repository.
pub const BASE_PIN_PREFIX: &str = "refs/jackin/base/";

/// The most a one-line file jackin reads from the unit's repository holds.
const MAX_REF_FILE: u64 = 4096;

/// The host paths of one worktree's repository.
#[derive(Debug, Clone)]
pub struct UnitRepo {
    /// The repository (its git directory), bound writable.
    pub git_dir: PathBuf,
    /// jackin's link to the host repository's objects.
    host_objects_link: PathBuf,
    /// The tip jackin last published.
    published: PathBuf,
    /// The tip a publication is about to give the host's branch.
    publishing: PathBuf,
    /// The checkout's name, shared by the paths above.
    name: String,
}

impl UnitRepo {
    /// The repository of `record`'s checkout (`<unit>/git/worktree/<name>`):
    /// `<unit>/git/repo/<name>`.
    pub fn of(record: &IsolationRecord) -> Self {
        let git_dir = record.repository_dir();
        let name = git_dir
            .file_name()
            .and_then(|name| name.to_str())
            .expect("a checkout has a UTF-8 name")
            .to_owned();
        let repo = git_dir.parent().expect("the repository has a parent");
        Self {
            host_objects_link: repo.join(format!("{name}.host-objects")),
            published: repo.join(format!("{name}.published")),
            publishing: repo.join(format!("{name}.publishing")),
            git_dir,
            name,
        }
    }

    /// The line of `objects/info/alternates`: jackin's link beside the
    /// repository on the host, where the container has the host's objects
    /// bound.
    fn alternates_line(&self) -> String {
        format!("{}\n", self.host_objects_link.display())
    }

    fn git_dir_str(&self) -> &str {
        path_str(&self.git_dir)
    }
}

/// The ref that pins `record`'s base commit in the host repository.
fn pin_of(record: &IsolationRecord) -> Result<&str, IsolationError> {
    record
        .base_pin
        .as_deref()
        .ok_or_else(|| IsolationError::NotPrepared {
            dst: record.dst.clone(),
        })
}

/// The scratch branch's full ref name.
fn scratch_ref(record: &IsolationRecord) -> String {
    format!(
        "refs/heads/{}",
        record.scratch_branch.as_deref().unwrap_or_default()
    )
}

/// What a confined git over the unit's repository reads besides it: the
/// host's objects (through jackin's link, to their real place) and the
/// objects they borrow in turn. Nothing the agent names.
pub fn objects_reads(record: &IsolationRecord) -> Result<Vec<PathBuf>, IsolationError> {
    let objects = host_objects(record)?;
    let mut reads = alternates_of(&objects);
    reads.push(objects);
    Ok(reads)
}

/// The host repository's objects directory, as a real directory.
fn host_objects(record: &IsolationRecord) -> Result<PathBuf, IsolationError> {
    real_dir_below(&git_dir_of(record)?, Path::new("objects"))
        .map_err(|detail| record.link_conflict(detail))
}

/// The tip of a ref of the host repository; `None` when it does not exist.
fn host_tip(src: &str, full: &str) -> Result<Option<String>, GitError> {
    if !branch_exists(src, full)? {
        return Ok(None);
    }
    let out = in_host(src, &["rev-parse", "--verify", "--quiet", full])?;
    Ok(Some(String::from_utf8_lossy(&out).trim().to_owned()))
}

/// Pins the base commit in the host repository (a ref of jackin's), or
/// checks the pin made earlier. A pin that is gone, or names another
/// commit, means the operator's repository may no longer hold what the
/// unit borrows: the start is refused, with what to do.
pub fn pin_base(record: &IsolationRecord, create: bool) -> Result<(), IsolationError> {
    let pin = pin_of(record)?;
    let found = host_tip(&record.src, pin)?;
    match found {
        Some(tip) if tip == record.base_commit => Ok(()),
        None if create => {
            git::run(&[
                "-C",
                &record.src,
                "update-ref",
                "-m",
                "jackin: the base a checkout borrows",
                pin,
                &record.base_commit,
                "",
            ])?;
            Ok(())
        }
        found => {
            let (src, base) = (&record.src, &record.base_commit);
            let found = found.unwrap_or_else(|| "nothing".into());
            Err(IsolationError::BasePinMoved {
                dst: record.dst.clone(),
                message: format!(
                    "the ref {pin} in {src}, which pins the checkout's base commit {base}, \
                     names {found}: the operator's repository may no longer hold what the \
                     checkout borrows, so it is not started. Put it back (`git -C {src} \
                     update-ref {pin} {base}`) if {base} is still there; otherwise purge the \
                     instance"
                ),
            })
        }
    }
}

/// Removes the pin of `record`'s base, if it still names the base.
fn release_pin(record: &IsolationRecord) -> Result<(), GitError> {
    let Some(pin) = record.base_pin.as_deref() else {
        return Ok(());
    };
    if host_tip(&record.src, pin)?.as_deref() == Some(&record.base_commit) {
        git::run(&[
            "-C",
            &record.src,
            "update-ref",
            "-d",
            pin,
            &record.base_commit,
        ])?;
    }
    Ok(())
}

/// Makes the unit's repository and its checkout for `record`, whose
/// checkout does not exist. The branch starts at the host's scratch branch
/// when it exists (the agent's commits, published before the checkout went
/// missing), else at the base commit, where the host's scratch branch is
/// made too.
pub fn make(record: &IsolationRecord) -> Result<(), IsolationError> {
    let repo = UnitRepo::of(record);
    let start = build_repository(record, &repo, |_| Ok(()))?;
    let checkout = Path::new(&record.path);
    fsutil::ensure_private_dir(checkout).map_err(io(checkout))?;
    write_dot_git(record, &repo)?;
    let work_tree = format!("--work-tree={}", record.path);
    let git_dir = format!("--git-dir={}", repo.git_dir.display());
    let args = [
        git_dir.as_str(),
        work_tree.as_str(),
        "reset",
        "--hard",
        "--quiet",
    ];
    if start == record.base_commit {
        // The operator's own tree, checked out as the operator's git would.
        git::run(&[&["-C", repo.git_dir_str()][..], &args[..]].concat())?;
    } else {
        // The agent's commits: their attributes name filter drivers, so
        // git checks them out confined, writing only the checkout and the
        // unit's repository.
        let reads = objects_reads(record)?;
        let reads: Vec<&Path> = reads.iter().map(PathBuf::as_path).collect();
        git::run_untrusted_writing(
            repo.git_dir_str(),
            &args,
            &reads,
            &[checkout, &repo.git_dir],
        )?;
    }
    Ok(())
}

/// Makes the unit's repository for a checkout whose files are there
/// already (a worktree an earlier jackin made), at the host's scratch
/// branch, which holds its published work. The agent's objects from
/// `objects_from` (a git directory: what its index names besides its
/// commits) and its `index` come along; neither is needed, so what cannot
/// be copied is only logged. The checkout's files are not touched.
pub fn adopt(
    record: &IsolationRecord,
    objects_from: &Path,
    index: Option<&Path>,
) -> Result<(), IsolationError> {
    let repo = UnitRepo::of(record);
    build_repository(record, &repo, |staged| {
        if let Err(e) = gitdir::copy_agent_objects(objects_from, &staged.join("objects")) {
            tracing::warn!(
                "mount {}: the agent's staged objects were not kept: {e}",
                record.dst
            );
        }
        if let Some(index) = index {
            match read_untrusted(index, MAX_INDEX_BYTES) {
                Ok(bytes) => {
                    let to = staged.join("index");
                    write_atomic(&to, &bytes).map_err(io(&to))?;
                }
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                Err(e) => tracing::warn!(
                    "mount {}: the staged state ({}) was not kept: {e}",
                    record.dst,
                    index.display()
                ),
            }
        }
        Ok(())
    })?;
    write_dot_git(record, &repo)
}

/// The most jackin copies of an earlier worktree's index.
const MAX_INDEX_BYTES: u64 = 512 << 20;

/// Pins the base, then makes the unit's repository aside (with `extra`
/// done in it) and renames it into place, so that a half-made repository is
/// never one a start reuses. Returns the commit its branch starts at.
fn build_repository(
    record: &IsolationRecord,
    repo: &UnitRepo,
    extra: impl FnOnce(&Path) -> Result<(), IsolationError>,
) -> Result<String, IsolationError> {
    pin_base(record, true)?;
    let full = scratch_ref(record);
    let start = match host_tip(&record.src, &full)? {
        Some(tip) => tip,
        None => {
            git::run(&[
                "-C",
                &record.src,
                "update-ref",
                "-m",
                "jackin: a new checkout's branch",
                &full,
                &record.base_commit,
                "",
            ])?;
            record.base_commit.clone()
        }
    };
    let parent = repo.git_dir.parent().expect("the repository has a parent");
    fsutil::ensure_private_dir(parent).map_err(io(parent))?;
    remove_if_exists(&repo.git_dir).map_err(io(&repo.git_dir))?;
    let staging = tempfile::Builder::new()
        .prefix(&format!(".new-{}-", repo.name))
        .tempdir_in(parent)
        .map_err(io(parent))?;
    // Beside the repository's place, so that the alternates line (relative
    // to its objects) finds the host's objects already.
    let staged = staging.path().to_owned();
    init_repository(record, repo, &staged, &start)?;
    extra(&staged)?;
    std::fs::rename(&staged, &repo.git_dir).map_err(io(&repo.git_dir))?;
    // Renamed: nothing is left for the guard to remove.
    let _ = staging.keep();
    write_atomic(&repo.published, start.as_bytes()).map_err(io(&repo.published))?;
    Ok(start)
}

/// A new repository at `dir` with one branch, the scratch branch, at
/// `start`, borrowing the host's objects; the commits `start` has beyond
/// the base are copied into its own objects.
fn init_repository(
    record: &IsolationRecord,
    repo: &UnitRepo,
    dir: &Path,
    start: &str,
) -> Result<(), IsolationError> {
    let dir_str = path_str(dir);
    let branch = record.scratch_branch.as_deref().unwrap_or_default();
    let initial = format!("--initial-branch={branch}");
    let format = if record.base_commit.len() == 64 {
        "--object-format=sha256"
    } else {
        "--object-format=sha1"
    };
    git::run(&["init", "--quiet", "--bare", format, &initial, "--", dir_str])?;
    git::run(&["-C", dir_str, "config", "core.bare", "false"])?;
    link_host_objects(record, repo)?;
    let alternates = dir.join("objects/info/alternates");
    write_atomic(&alternates, repo.alternates_line().as_bytes()).map_err(io(&alternates))?;
    if start != record.base_commit {
        let revs = dir.join("revs");
        write_atomic(
            &revs,
            format!("{start}\n^{}\n", record.base_commit).as_bytes(),
        )
        .map_err(io(&revs))?;
        let pack_dir = dir.join("objects/pack");
        let base = pack_dir.join("pack");
        // Packed in the new repository, which sees the host's objects as
        // its alternate: without `--local`, they come into its own pack.
        let reads = objects_reads(record)?;
        let reads: Vec<&Path> = reads.iter().map(PathBuf::as_path).collect();
        let packed = git::run_untrusted_fed(
            dir_str,
            &["pack-objects", "--revs", "-q", path_str(&base)],
            &reads,
            &[&pack_dir],
            Some(&revs),
        );
        remove_if_exists(&revs).map_err(io(&revs))?;
        packed?;
    }
    git::run(&[
        "-C",
        dir_str,
        "update-ref",
        "-m",
        "jackin: the checkout's start",
        &scratch_ref(record),
        start,
        "",
    ])?;
    Ok(())
}

/// Points jackin's link beside the repository at the host's objects.
fn link_host_objects(record: &IsolationRecord, repo: &UnitRepo) -> Result<(), IsolationError> {
    let objects = host_objects(record)?;
    let link = &repo.host_objects_link;
    let current = std::fs::read_link(link).ok();
    if current.as_deref() != Some(objects.as_path()) {
        remove_if_exists(link).map_err(io(link))?;
        std::os::unix::fs::symlink(&objects, link).map_err(io(link))?;
    }
    Ok(())
}

/// Writes the checkout's `.git` file, naming the repository (at the same
/// path on the host and in the container). Whatever the agent left there instead is replaced,
/// but a directory: that may hold work of its own, and the start is refused.
fn write_dot_git(record: &IsolationRecord, repo: &UnitRepo) -> Result<(), IsolationError> {
    let dot_git = Path::new(&record.path).join(".git");
    if std::fs::symlink_metadata(&dot_git).is_ok_and(|m| m.is_dir()) {
        return Err(record.link_conflict(format!(
            "{} is a directory, where jackin's .git file names the unit's repository; move it \
             away and start again",
            dot_git.display()
        )));
    }
    let line = format!("gitdir: {}\n", repo.git_dir.display());
    write_atomic(&dot_git, line.as_bytes()).map_err(io(&dot_git))
}

/// Before each start of a container: the pin still holds the base, and
/// what jackin wrote for git (the link to the host's objects, the
/// alternates line, the checkout's `.git`) is as jackin wrote it, whatever
/// the agent left. What the agent committed was published just before, by
/// a step of its own (`Step::PublishCheckouts`, the start's publication).
pub fn refresh(record: &IsolationRecord) -> Result<(), IsolationError> {
    let repo = UnitRepo::of(record);
    check_repository(record)?;
    pin_base(record, false)?;
    link_host_objects(record, &repo)?;
    gitdir::reset_to_dir(&repo.git_dir, "objects/info")?;
    let alternates = repo.git_dir.join("objects/info/alternates");
    write_atomic(&alternates, repo.alternates_line().as_bytes()).map_err(io(&alternates))?;
    write_dot_git(record, &repo)
}

/// The binds a worktree's container needs besides its checkout: the unit's
/// repository, writable, and the host's objects beside it, read-only.
/// Nothing else of the host repository.
pub fn binds(record: &IsolationRecord) -> Result<Vec<GitBind>, IsolationError> {
    let repo = UnitRepo::of(record);
    Ok(vec![
        GitBind {
            source: path_str(&repo.git_dir).to_owned(),
            target: path_str(&repo.git_dir).to_owned(),
            read_only: false,
        },
        GitBind {
            source: path_str(&host_objects(record)?).to_owned(),
            target: path_str(&repo.host_objects_link).to_owned(),
            read_only: true,
        },
    ])
}

/// Checks that the unit's repository is one git reads as itself: a real
/// directory with no `commondir` (which would make git, jackin's confined
/// git included, read another repository's refs, config and objects as
/// this one's). Run before any git of jackin's reads it.
pub fn check_repository(record: &IsolationRecord) -> Result<(), IsolationError> {
    let repo = UnitRepo::of(record);
    if !std::fs::symlink_metadata(&repo.git_dir).is_ok_and(|m| m.is_dir()) {
        return Err(record.link_conflict(format!(
            "the unit's repository {} is not a directory",
            repo.git_dir.display()
        )));
    }
    let commondir = repo.git_dir.join("commondir");
    if std::fs::symlink_metadata(&commondir).is_ok() {
        return Err(record.link_conflict(format!(
            "the unit's repository has a {} that names another repository as its own; \
             remove it if it is yours",
            commondir.display()
        )));
    }
    Ok(())
}

/// The tip of the unit's scratch branch, read confined; `None` when the
/// agent deleted it.
fn unit_tip(record: &IsolationRecord, repo: &UnitRepo) -> Result<Option<String>, IsolationError> {
    let full = scratch_ref(record);
    let reads = objects_reads(record)?;
    let reads: Vec<&Path> = reads.iter().map(PathBuf::as_path).collect();
    let git_dir = format!("--git-dir={}", repo.git_dir.display());
    let tip = match git::run_untrusted_reading(
        repo.git_dir_str(),
        &[&git_dir, "rev-parse", "--verify", "--quiet", &full],
        &reads,
    ) {
        Ok(out) => String::from_utf8_lossy(&out).trim().to_owned(),
        Err(GitError::Failed { .. }) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let is_object_name = matches!(tip.len(), 40 | 64)
        && tip
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    if !is_object_name {
        return Err(record.link_conflict(format!("the unit's branch {full} says {}", quoted(&tip))));
    }
    Ok(Some(tip))
}

/// The tip of the unit's scratch branch and how many commits it has since
/// the base, read confined from the unit's own repository (never the
/// host's branch); `None` when the repository or the branch is gone.
pub fn unit_branch_ahead(
    record: &IsolationRecord,
) -> Result<Option<(String, u64)>, IsolationError> {
    let repo = UnitRepo::of(record);
    if std::fs::symlink_metadata(&repo.git_dir).is_err() {
        return Ok(None);
    }
    check_repository(record)?;
    let Some(tip) = unit_tip(record, &repo)? else {
        return Ok(None);
    };
    let reads = objects_reads(record)?;
    let reads: Vec<&Path> = reads.iter().map(PathBuf::as_path).collect();
    let git_dir = format!("--git-dir={}", repo.git_dir.display());
    let range = format!("{}..{tip}", record.base_commit);
    let out = git::run_untrusted_reading(
        repo.git_dir_str(),
        &[&git_dir, "rev-list", "--count", &range, "--"],
        &reads,
    )?;
    let ahead = String::from_utf8_lossy(&out)
        .trim()
        .parse()
        .map_err(|e| record.link_conflict(format!("rev-list {range}: {e}")))?;
    Ok(Some((tip, ahead)))
}

/// Publishes the unit's scratch branch into the host repository, when it
/// moved since jackin last published it: the objects its new commits need
/// are copied from the unit's repository and checked
/// ([`gitdir::import_objects`]), then the host's branch moves by
/// compare-and-swap from the value jackin last published (or is made again
/// where the operator deleted it), the value it is about to get recorded
/// first (see `last_published`). A branch the operator moved meanwhile
/// is never overwritten: that is [`IsolationError::BranchMoved`], and the
/// agent's work stays in its repository. A unit whose repository is gone
/// has nothing to publish.
pub fn publish(record: &IsolationRecord) -> Result<(), IsolationError> {
    let Some((repo, tip)) = checked_tip(record)? else {
        return Ok(());
    };
    let given = last_published(record, &repo)?;
    if given == tip {
        return Ok(());
    }
    if tip.len() != record.base_commit.len() {
        return Err(record.link_conflict(format!(
            "the unit's branch names {tip}, an object name of another hash than its base's"
        )));
    }
    let full = scratch_ref(record);
    // Deleted on the host: made again, from nothing, and the objects it
    // needs are counted from the pinned base (what was published before may
    // be gone with the branch).
    let (from, known) = match host_tip(&record.src, &full)? {
        None => (String::new(), record.base_commit.clone()),
        // Already where the agent's branch is (however it got there):
        // nothing moves, and that is what was published.
        Some(at) if at == tip => return record_published(&repo, &tip),
        Some(_) => (given.clone(), given),
    };
    let scratch = repo.git_dir.parent().expect("the repository has a parent");
    // The intent first: a crash once the host's branch moved leaves it,
    // and the next publication knows that move for jackin's own.
    write_atomic(&repo.publishing, tip.as_bytes()).map_err(io(&repo.publishing))?;
    let moved = move_published_branch(record, &repo.git_dir, scratch, &tip, &known, &from);
    if moved.is_ok() {
        jackin_files::fault::crash_point("publish:host-ref-moved");
    } else {
        remove_if_exists(&repo.publishing).map_err(io(&repo.publishing))?;
    }
    moved?;
    record_published(&repo, &tip)
}

/// The unit's repository, checked, and the tip of its branch; `None` when
/// either is gone (nothing to publish).
fn checked_tip(record: &IsolationRecord) -> Result<Option<(UnitRepo, String)>, IsolationError> {
    let repo = UnitRepo::of(record);
    if std::fs::symlink_metadata(&repo.git_dir).is_err() {
        return Ok(None);
    }
    check_repository(record)?;
    Ok(unit_tip(record, &repo)?.map(|tip| (repo, tip)))
}

/// Records `tip` as what the host's branch was given, and drops the
/// intent that led there.
fn record_published(repo: &UnitRepo, tip: &str) -> Result<(), IsolationError> {
    write_atomic(&repo.published, tip.as_bytes()).map_err(io(&repo.published))?;
    remove_if_exists(&repo.publishing).map_err(io(&repo.publishing))
}

/// The tip jackin last published. A publication a crash cut short between
/// moving the host's branch and recording it left its intent: a host
/// branch at the intended tip is jackin's own move (nobody else writes
/// that file), recorded now as published; at any other value the move
/// never happened, or someone moved the branch since, and the intent goes.
fn last_published(record: &IsolationRecord, repo: &UnitRepo) -> Result<String, IsolationError> {
    let read = |path: &Path| {
        read_untrusted(path, MAX_REF_FILE)
            .map(|bytes| String::from_utf8_lossy(&bytes).trim().to_owned())
    };
    let intended = match read(&repo.publishing) {
        Ok(intended) => intended,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return read(&repo.published).map_err(io(&repo.published));
        }
        Err(e) => return Err(io(&repo.publishing)(e)),
    };
    if host_tip(&record.src, &scratch_ref(record))?.as_deref() == Some(intended.as_str()) {
        record_published(repo, &intended)?;
        return Ok(intended);
    }
    remove_if_exists(&repo.publishing).map_err(io(&repo.publishing))?;
    read(&repo.published).map_err(io(&repo.published))
}

/// Moves the host's scratch branch to `tip`, from `from` (empty: it must
/// not exist), once the host has the commit: what it needs beyond `known`
/// is brought from the agent's git directory `objects_from`, checked
/// ([`gitdir::import_objects`], working under `scratch`). A commit the host
/// has but no host ref holds is brought as if the host lacked it, so that
/// only the agent's own commits pass (N7); either way the tip must descend
/// from the base. A ref that names no commit then is a link conflict, a
/// branch that moved meanwhile on the host is
/// [`IsolationError::BranchMoved`], and nothing moves either way.
pub(crate) fn move_published_branch(
    record: &IsolationRecord,
    objects_from: &Path,
    scratch: &Path,
    tip: &str,
    known: &str,
    from: &str,
) -> Result<(), IsolationError> {
    let conflict = |detail| record.link_conflict(detail);
    let base = record.base_commit.as_str();
    if host_has_commit(&record.src, tip)? && held_by_a_host_ref(&record.src, tip)? {
        // Already the operator's: nothing comes over, but the branch moves
        // only to work on the base.
        let descends = ["merge-base", "--is-ancestor", base, tip];
        if let Err(GitError::Failed { .. }) = in_host(&record.src, &descends) {
            return Err(conflict(format!(
                "the agent's branch names {tip}, which does not descend from the checkout's \
                 base {base}: jackin publishes only work on the base"
            )));
        }
    } else {
        // A commit the host has but no ref of it holds is brought as if
        // it had not: only the agent's own commits pass.
        let host_objects = host_objects(record)?;
        let held = host_ref_commits(&record.src)?;
        let wanted = gitdir::Wanted {
            tip,
            base,
            known,
            held: &held,
        };
        match gitdir::import_objects(objects_from, &host_objects, scratch, &wanted) {
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
        if !host_has_commit(&record.src, tip)? {
            return Err(conflict(format!(
                "the agent's branch names {tip}, which is no commit of the host repository \
                 or of the agent's"
            )));
        }
    }
    let full = scratch_ref(record);
    let moved = git::run(&[
        "-C",
        &record.src,
        "update-ref",
        "-m",
        "jackin: the agent's commits",
        &full,
        tip,
        from,
    ]);
    if let Err(GitError::Failed { stderr, .. }) = &moved {
        return Err(branch_moved(record, objects_from, tip, from, stderr));
    }
    moved?;
    Ok(())
}

/// The host's scratch branch moved since jackin last published `from`
/// (someone other than jackin moved it, as `stderr`, git's word, says):
/// the operator's move stands, and the message says how to let jackin
/// publish again. Never the agent's doing: it cannot write the host's refs.
fn branch_moved(
    record: &IsolationRecord,
    agents: &Path,
    tip: &str,
    from: &str,
    stderr: &str,
) -> IsolationError {
    let (src, full) = (&record.src, scratch_ref(record));
    let back = match from {
        "" => String::new(),
        from => format!("move it back (`git -C {src} update-ref {full} {from}`) or "),
    };
    IsolationError::BranchMoved {
        dst: record.dst.clone(),
        message: format!(
            "the agent's branch is at {tip}, and {full} moved in the host repository {src} \
             since jackin last published it ({}). jackin never overwrites a move made there: the \
             agent's work stays in its repository {}; {back}delete it (`git -C {src} \
             update-ref -d {full}`), and jackin publishes again at the next start or stop",
            stderr.trim(),
            agents.display()
        ),
    }
}

/// Whether the agent's latest commit is on the host's scratch branch, read
/// only: the removal's publication is a step of its own, run before
/// (`Step::PublishCheckouts`). A unit without its repository or branch has
/// nothing left to publish.
fn published_in_full(record: &IsolationRecord) -> Result<(), IsolationError> {
    let Some((_, tip)) = checked_tip(record)? else {
        return Ok(());
    };
    match host_tip(&record.src, &scratch_ref(record))? {
        Some(host) if host == tip => Ok(()),
        _ => Err(IsolationError::Unpublished {
            dst: record.dst.clone(),
            tip,
        }),
    }
}

/// Deletes the host's scratch branch of a removed worktree once the
/// agent's latest commits reached it (`published`) and every commit on it
/// is held by another ref; otherwise keeps it as it is and returns it, so
/// that nothing committed is ever lost.
pub(crate) fn retire_scratch_branch(
    record: &IsolationRecord,
    published: Result<(), IsolationError>,
) -> Result<Option<String>, IsolationError> {
    if let Err(e) = &published {
        tracing::warn!("{e}");
    }
    let (src, branch) = (
        record.src.as_str(),
        record.scratch_branch.as_deref().unwrap_or_default(),
    );
    if published.is_ok() && held_elsewhere(src, branch)? {
        let _ = git::run(&["-C", src, "branch", "-D", "--", branch]);
        Ok(None)
    } else {
        Ok(Some(format!("{branch} in {src}")))
    }
}

/// Whether a ref of the host repository holds the commit `tip`.
fn held_by_a_host_ref(src: &str, tip: &str) -> Result<bool, GitError> {
    let out = in_host(
        src,
        &[
            "for-each-ref",
            "--count=1",
            "--format=%(refname)",
            "--contains",
            tip,
        ],
    )?;
    Ok(!out.trim_ascii().is_empty())
}

/// The commits the host repository's refs name (a tag's, peeled).
fn host_ref_commits(src: &str) -> Result<Vec<String>, GitError> {
    let out = in_host(
        src,
        &[
            "for-each-ref",
            "--format=%(objecttype) %(objectname) %(*objecttype) %(*objectname)",
        ],
    )?;
    let mut commits: Vec<String> = String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|line| match line.split(' ').collect::<Vec<_>>()[..] {
            ["commit", name, ..] | [_, _, "commit", name] => Some(name.to_owned()),
            _ => None,
        })
        .collect();
    commits.sort();
    commits.dedup();
    Ok(commits)
}

/// Whether the host repository has the commit `tip`. Only git's own "no"
/// is an answer.
pub(crate) fn host_has_commit(src: &str, tip: &str) -> Result<bool, GitError> {
    match in_host(src, &["cat-file", "-e", &format!("{tip}^{{commit}}")]) {
        Ok(_) => Ok(true),
        Err(GitError::Failed { .. }) => Ok(false),
        Err(e) => Err(e),
    }
}

/// Removes a worktree checkout and its repository, after a last publish.
/// The host's scratch branch is deleted only when every commit on it is
/// held elsewhere; otherwise it stays and is returned (with the pin, which
/// its history needs no longer: the branch holds it). The pin goes.
pub fn remove(record: &IsolationRecord) -> Result<Option<String>, IsolationError> {
    let repo = UnitRepo::of(record);
    let src = record.src.as_str();
    let mut kept = None;
    if Path::new(src).exists() {
        kept = retire_scratch_branch(record, published_in_full(record))?;
        release_pin(record)?;
    }
    for path in [
        Path::new(&record.path),
        &repo.git_dir,
        &repo.host_objects_link,
        &repo.published,
        &repo.publishing,
    ] {
        remove_if_exists(path).map_err(io(path))?;
    }
    Ok(kept)
}

/// The unit's repository beside a worktree checkout at `dir` on the host,
/// when the checkout's `.git` names it, or `None` for any other directory:
/// for whoever holds only a checkout's path (`git --git-dir=<this>
/// --work-tree=<dir>` names it without reading the agent's `.git`).
pub fn repository_beside(dir: &Path) -> Option<PathBuf> {
    let repo = dir.parent()?.parent()?.join("repo").join(dir.file_name()?);
    let names = read_untrusted(&dir.join(".git"), MAX_REF_FILE).ok()?;
    let named = std::str::from_utf8(&names)
        .ok()?
        .trim_end()
        .strip_prefix("gitdir: ")?;
    (Path::new(named) == repo && std::fs::symlink_metadata(&repo).is_ok_and(|m| m.is_dir()))
        .then_some(repo)
}

#[cfg(test)]
pub(crate) mod testing {
    use std::path::Path;

    use super::repository_beside;

    /// `git -C DIR ARGS…` as the agent's git runs it in the container: in a
    /// worktree checkout, over the unit's repository beside it.
    pub(crate) fn git_argv(dir: &Path) -> Vec<String> {
        let mut argv = vec!["-C".to_owned(), dir.display().to_string()];
        if let Some(repo) = repository_beside(dir) {
            argv.extend([
                format!("--git-dir={}", repo.display()),
                format!("--work-tree={}", dir.display()),
            ]);
        }
        argv
    }
}
