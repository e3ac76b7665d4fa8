//! Isolated mounts: the agent works in its own checkout of the operator's
//! repository, never in the repository itself.
//!
//! - `worktree`: a repository of the unit's own on a scratch branch
//!   `jackin/scratch/<unit>` from the host's `HEAD`, borrowing the host's
//!   objects read-only and published into the host as that branch by jackin
//!   (see [`crate::worktree`]);
//! - `clone`: a local clone of the host's current branch.
//!
//! Both are made once under the unit's `git/` directory, recorded with their
//! base commit in `.jackin/isolation.json`, and reused as they are afterwards:
//! no reset, no rebase, no pull. Before a kept checkout is reused, the host
//! repository must still hold its base commit. A worktree whose directory
//! went missing is made again from its scratch branch, commits and all.
//!
//! The operator's repository is touched only where jackin's own parts are:
//! a worktree's scratch branch (deleted only when every commit on it is held
//! elsewhere) and the ref pinning its base. Its config, index, hooks and
//! `worktrees/` are never written. Worktrees an earlier jackin made as
//! `git worktree`s (with an entry in the host's `.git/worktrees/`) move to
//! the new form at their next start (see [`crate::legacy_worktree`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jackin_api::instance::{Isolation, MountSpec};

pub use crate::checkout::{GitBind, IsolationError, IsolationRecord, read_records, slug};
use crate::checkout::{
    SCRATCH_PREFIX, checkout_path, common_dir, in_host, io, path_str, write_records,
};
use crate::git::{self, GitError};
use crate::include::{self, Included};
use crate::legacy_worktree;
use crate::worktree;
use jackin_files::fsutil::{ensure_private_dir, remove_if_exists};
use jackin_files::layout::Layout;

fn head_commit(repo: &str, dst: &str) -> Result<String, IsolationError> {
    git::run(&["-C", repo, "rev-parse", "--verify", "HEAD^{commit}"])
        .map(|out| String::from_utf8_lossy(&out).trim().to_owned())
        .map_err(|e| IsolationError::NotARepository {
            dst: dst.to_owned(),
            src: repo.to_owned(),
            detail: e.to_string(),
        })
}

/// What [`prepare`] did that the operator is told of.
#[derive(Debug, Default)]
pub struct Prepared {
    /// A worktree of an earlier jackin moved to a repository of its own (a
    /// container made before binds what is gone).
    pub moved: bool,
    /// For each checkout made just now, by its destination: the untracked
    /// files its mount's `include` brought in, and what it left out.
    pub included: Vec<(String, Included)>,
}

/// Makes (or finds) the checkout of every isolated mount; `shared` mounts
/// are not touched. A kept checkout is verified against its host repository
/// (and a worktree's pin and repository refreshed) before it is reused; a
/// worktree an earlier jackin made moves to a repository of its own first.
/// A checkout made now gets the untracked files its mount includes.
pub fn prepare(
    layout: &Layout,
    container: &str,
    mounts: &[MountSpec],
) -> Result<Prepared, IsolationError> {
    let mut prepared = Prepared::default();
    // Checked when the files are applied; here again for the mounts a
    // workspace and an instance give together.
    if let Some((_, _, why)) = jackin_api::validate::shared_over_isolated(mounts) {
        return Err(IsolationError::SharedOverIsolated { why });
    }
    one_worktree_per_repository(mounts)?;
    let mut records = read_records(layout, container)?;
    for mount in mounts.iter().filter(|m| m.isolation != Isolation::Shared) {
        let existing = records.iter().position(|r| r.dst == mount.dst);
        if let Some(at) = existing {
            check_reuse(&records[at])?;
        }
        match existing {
            Some(at) if records[at].is_legacy_worktree() => {
                prepared.moved = true;
                legacy_worktree::migrate(&mut records[at])?;
                legacy_worktree::clear_entry(&mut records[at])?;
                records[at].moved_from = None;
                write_records(layout, container, &records)?;
                legacy_worktree::remove_unit_parts(&records[at])?;
                worktree::refresh(&records[at])?;
            }
            Some(at) if Path::new(&records[at].path).exists() => {
                if records[at].scratch_branch.is_some() {
                    worktree::refresh(&records[at])?;
                }
                // Nothing outside the unit names a checkout's path: a moved
                // home needs no repair.
                if records[at].moved_from.take().is_some() {
                    write_records(layout, container, &records)?;
                }
            }
            // A worktree whose directory is gone: its branch still holds the
            // agent's commits. Made again from it, never from scratch.
            Some(at) if records[at].isolation == Isolation::Worktree => {
                worktree::publish(&records[at])?;
                worktree::make(&records[at])?;
                records[at].moved_from = None;
                write_records(layout, container, &records)?;
                let included = include_files(layout, container, &mut records, at, mount)?;
                prepared.included.extend(included);
            }
            // A clone is nothing without its directory: a new one, from the
            // host's `HEAD`.
            _ => {
                let base = head_commit(&mount.src, &mount.dst)?;
                let record = plan_record(layout, container, mount, base)?;
                let included = record_and_make(layout, container, &mut records, record, mount)?;
                prepared.included.extend(included);
            }
        }
    }
    Ok(prepared)
}

/// Makes the checkout of `mount` for the unit `container`, which has none
/// there, from the host's commit `base` rather than its `HEAD`: a
/// discarded checkout made again on the base its saved work builds on (the
/// host's branch may have moved on since, and a worktree publishes only
/// work on its base), which the host must hold. Recorded first, as
/// [`prepare`] records a new checkout. Returns the record.
pub fn prepare_at_base(
    layout: &Layout,
    container: &str,
    mount: &MountSpec,
    base: &str,
) -> Result<IsolationRecord, IsolationError> {
    let mut records = read_records(layout, container)?;
    let record = plan_record(layout, container, mount, base.to_owned())?;
    record_and_make(layout, container, &mut records, record, mount)?;
    Ok(records[records.len() - 1].clone())
}

/// Records a new checkout among the unit's `records`, then makes it and
/// copies in the untracked files `mount` includes: recorded before
/// anything is made, so that a failure or a crash half-way leaves a record
/// a purge can clean up from (and files copied before their digests were
/// recorded count as work, never as the operator's).
fn record_and_make(
    layout: &Layout,
    container: &str,
    records: &mut Vec<IsolationRecord>,
    record: IsolationRecord,
    mount: &MountSpec,
) -> Result<Option<(String, Included)>, IsolationError> {
    records.retain(|r| r.dst != record.dst);
    records.push(record);
    write_records(layout, container, records)?;
    let at = records.len() - 1;
    make_checkout(&records[at])?;
    include_files(layout, container, records, at, mount)
}

/// Copies into the checkout `records[at]`, made just now before any agent
/// ran, the untracked files of its source that `mount` and the source's
/// `.worktreeinclude` name, and records their digests (see
/// [`crate::include`]). Returns what was copied and left out, if anything.
fn include_files(
    layout: &Layout,
    container: &str,
    records: &mut [IsolationRecord],
    at: usize,
    mount: &MountSpec,
) -> Result<Option<(String, Included)>, IsolationError> {
    let record = &mut records[at];
    let included = include::copy_into(&record.src, Path::new(&record.path), &mount.include);
    record.included = included.copied.clone();
    record.not_included = included.left_out.clone();
    let told = included.summary(&record.dst).is_some();
    let dst = record.dst.clone();
    write_records(layout, container, records)?;
    Ok(told.then_some((dst, included)))
}

/// Refuses two `worktree` mounts of one repository (by its git directory,
/// however its paths are spelled or linked): the unit has one scratch
/// branch and one base pin there.
fn one_worktree_per_repository(mounts: &[MountSpec]) -> Result<(), IsolationError> {
    let mut seen: Vec<(PathBuf, &str)> = Vec::new();
    for mount in mounts.iter().filter(|m| m.isolation == Isolation::Worktree) {
        let Ok(common) = common_dir(&mount.src) else {
            continue;
        };
        let common = std::fs::canonicalize(&common).unwrap_or(common);
        if let Some((_, first)) = seen.iter().find(|(dir, _)| *dir == common) {
            return Err(IsolationError::WorktreeTwice {
                first: (*first).to_owned(),
                second: mount.src.clone(),
                common: path_str(&common).to_owned(),
            });
        }
        seen.push((common, &mount.src));
    }
    Ok(())
}

/// Publishes a worktree's branch into the host repository (see
/// [`worktree::publish`], and for a worktree an earlier jackin made,
/// [`legacy_worktree::publish`]); a clone publishes nothing.
pub fn publish(record: &IsolationRecord) -> Result<(), IsolationError> {
    if record.is_legacy_worktree() {
        legacy_worktree::publish(record)
    } else if record.scratch_branch.is_some() {
        worktree::publish(record)
    } else {
        Ok(())
    }
}

/// What a confined git over a checkout's repository reads besides the
/// checkout and the repository themselves (see [`IsolationRecord::git_place`]):
/// for a worktree, the host's objects it borrows (and theirs); for an
/// earlier jackin's worktree, the host's git directory its entry is in; for
/// a clone, which holds all it needs, nothing. Never a path the agent wrote.
pub fn repository_reads(record: &IsolationRecord) -> Result<Vec<PathBuf>, IsolationError> {
    if record.is_legacy_worktree() {
        let common = crate::checkout::git_dir_of(record)?;
        let mut reads = crate::checkout::alternates_of(&common.join("objects"));
        reads.push(common);
        Ok(reads)
    } else if record.scratch_branch.is_some() {
        worktree::objects_reads(record)
    } else {
        Ok(Vec::new())
    }
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

/// What a worktree's git needs inside the container besides its checkout:
/// the unit's repository and the host's objects, read-only (see
/// [`worktree::binds`]). Every path comes from the unit's records; a
/// worktree an earlier jackin made is not bound until [`prepare`] moved it
/// to a repository of its own.
pub fn git_binds(layout: &Layout, container: &str) -> Result<Vec<GitBind>, IsolationError> {
    let mut binds = Vec::new();
    for record in read_records(layout, container)? {
        if record.scratch_branch.is_none() {
            continue;
        }
        if record.is_legacy_worktree() {
            return Err(IsolationError::NotPrepared { dst: record.dst });
        }
        binds.extend(worktree::binds(&record)?);
    }
    binds.dedup();
    Ok(binds)
}

/// The checkouts of `mounts` that a resume would refuse to reuse, each as
/// the [`IsolationError::ResumeConflict`] it would fail with: the check
/// [`prepare`] makes, asked before the resume (Screens C and D), so that
/// what the operator is offered is what the resume will do.
pub fn resume_conflicts(
    layout: &Layout,
    container: &str,
    mounts: &[MountSpec],
) -> Result<Vec<IsolationError>, IsolationError> {
    let records = read_records(layout, container)?;
    let mut conflicts = Vec::new();
    for mount in mounts.iter().filter(|m| m.isolation != Isolation::Shared) {
        let Some(record) = records.iter().find(|r| r.dst == mount.dst) else {
            continue;
        };
        match check_reuse(record) {
            Ok(()) => {}
            Err(conflict @ IsolationError::ResumeConflict { .. }) => conflicts.push(conflict),
            Err(other) => return Err(other),
        }
    }
    Ok(conflicts)
}

/// The check before a recorded checkout is used again: every one but a
/// clone whose directory is gone (which is made anew, from scratch) is
/// reused, or made again from its branch, so its host repository must
/// still hold its base ([`verify`]).
fn check_reuse(record: &IsolationRecord) -> Result<(), IsolationError> {
    let reused = record.is_legacy_worktree()
        || Path::new(&record.path).exists()
        || record.isolation == Isolation::Worktree;
    match reused {
        true => verify(record),
        false => Ok(()),
    }
}

/// The reuse check: the host must still contain the base commit.
fn verify(record: &IsolationRecord) -> Result<(), IsolationError> {
    let spec = format!("{}^{{commit}}", record.base_commit);
    match in_host(&record.src, &["cat-file", "-e", &spec]) {
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

/// Where a mount's checkout is made, from the host's commit `base`;
/// nothing is made yet.
fn plan_record(
    layout: &Layout,
    container: &str,
    mount: &MountSpec,
    base: String,
) -> Result<IsolationRecord, IsolationError> {
    let src = mount.src.as_str();
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
        host_branches: BTreeMap::new(),
        common_dir: if worktree {
            Some(path_str(&common_dir(src)?).to_owned())
        } else {
            None
        },
        admin_dir: None,
        base_pin: worktree.then(|| format!("{}{container}", worktree::BASE_PIN_PREFIX)),
        left_entry: None,
        included: BTreeMap::new(),
        not_included: Vec::new(),
        moved_from: None,
    })
}

/// Makes the checkout a record describes.
fn make_checkout(record: &IsolationRecord) -> Result<(), IsolationError> {
    // A directory there that no record vouched for may hold someone's work:
    // never overwrite it.
    if Path::new(&record.path).exists() {
        return Err(IsolationError::Unrecorded {
            path: record.path.clone(),
        });
    }
    if record.scratch_branch.is_some() {
        return worktree::make(record);
    }
    git::run(&[
        "clone",
        "--quiet",
        "--no-hardlinks",
        "--",
        &record.src,
        &record.path,
    ])?;
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
        let kept = if record.is_legacy_worktree() {
            legacy_worktree::remove(record)?
        } else if record.scratch_branch.is_some() {
            worktree::remove(record)?
        } else {
            None
        };
        kept_branches.extend(kept);
        remove_if_exists(Path::new(&record.path)).map_err(io(Path::new(&record.path)))?;
    }
    if !records.is_empty() {
        write_records(layout, container, &staying)?;
    }
    Ok(kept_branches)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn host_repository(dir: &Path) -> String {
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
    pub(crate) fn worktree_mount(host: &str) -> MountSpec {
        MountSpec {
            src: host.to_owned(),
            dst: "/workspace/app".into(),
            readonly: false,
            isolation: Isolation::Worktree,
            include: Vec::new(),
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

    pub(crate) fn tip_of(repo: &str, full: &str) -> String {
        String::from_utf8(git::run(&["-C", repo, "rev-parse", full]).unwrap())
            .unwrap()
            .trim()
            .to_owned()
    }

    /// The host repository holds nothing of the unit's but its two refs:
    /// no worktree entry, no config or index written; the container gets
    /// the unit's own repository writable and the host's objects read-only,
    /// and nothing else of the host's `.git`.
    #[test]
    fn a_worktree_is_a_repository_of_its_own_borrowing_the_hosts_objects() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let layout = Layout::new(dir.path().join("home"));
        let config_before = std::fs::read(format!("{host}/.git/config")).unwrap();
        prepare(&layout, "jk-1-t", &[worktree_mount(&host)]).unwrap();
        let record = read_records(&layout, "jk-1-t").unwrap().remove(0);
        assert!(!Path::new(&host).join(".git/worktrees").exists());
        assert_eq!(
            std::fs::read(format!("{host}/.git/config")).unwrap(),
            config_before
        );
        let base = tip_of(&host, "HEAD");
        assert_eq!(tip_of(&host, "refs/jackin/base/jk-1-t"), base);
        assert_eq!(tip_of(&host, "refs/heads/jackin/scratch/jk-1-t"), base);

        let repo = record.git_place();
        let binds = git_binds(&layout, "jk-1-t").unwrap();
        assert_eq!(binds.len(), 2, "{binds:?}");
        let own = binds.iter().find(|b| b.source == repo).unwrap();
        let name = Path::new(&record.path)
            .file_name()
            .unwrap()
            .to_str()
            .unwrap();
        assert!(!own.read_only, "{own:?}");
        assert_eq!(own.target, own.source, "{name}: at the same path");
        let objects = binds.iter().find(|b| b.read_only).unwrap();
        assert_eq!(
            Path::new(&objects.source),
            Path::new(&host).join(".git/objects")
        );
        assert_eq!(objects.target, format!("{}.host-objects", own.target));
        assert_eq!(
            std::fs::read_to_string(Path::new(&repo).join("objects/info/alternates")).unwrap(),
            format!("{}\n", objects.target)
        );
        let host_git = Path::new(&host).join(".git");
        for bind in &binds {
            assert!(
                bind.read_only || !Path::new(&bind.source).starts_with(&host_git),
                "{bind:?}"
            );
        }
        // One branch, the scratch branch; the checkout's `.git` names the
        // repository where the container sees it.
        let branches = git::run(&["-C", &repo, "for-each-ref", "--format=%(refname)"]).unwrap();
        assert_eq!(
            String::from_utf8_lossy(&branches).trim(),
            "refs/heads/jackin/scratch/jk-1-t"
        );
        assert_eq!(
            std::fs::read_to_string(Path::new(&record.path).join(".git")).unwrap(),
            format!("gitdir: {}\n", own.target)
        );
        assert_eq!(
            std::fs::read_to_string(format!("{}/README", record.path)).unwrap(),
            "host\n"
        );
    }

    /// A moved home needs no repair: nothing outside the unit names the
    /// checkout's path.
    #[test]
    fn a_moved_home_keeps_its_worktree_as_it_is() {
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
        prepare(&after, "jk-1-t", std::slice::from_ref(&mount)).unwrap();
        let record = read_records(&after, "jk-1-t").unwrap().remove(0);
        assert_eq!(record.moved_from, None);
        let binds = git_binds(&after, "jk-1-t").unwrap();
        assert!(
            binds
                .iter()
                .any(|b| b.source == record.git_place() && !b.read_only),
            "{binds:?}"
        );
        let status = git::run(&[
            "-C",
            &record.git_place(),
            "--work-tree",
            &record.path,
            "status",
            "--porcelain",
        ])
        .unwrap();
        assert!(status.is_empty(), "{}", String::from_utf8_lossy(&status));
    }

    /// A unit `jk-1-t` with a worktree of a new host repository in `dir`:
    /// the host, the checkout's record, the unit's repository and the
    /// scratch branch's full name.
    fn prepared_worktree(dir: &Path) -> (String, IsolationRecord, String, String) {
        let host = host_repository(dir);
        let layout = Layout::new(dir.join("home"));
        prepare(&layout, "jk-1-t", &[worktree_mount(&host)]).unwrap();
        let record = read_records(&layout, "jk-1-t").unwrap().remove(0);
        let repo = record.git_place();
        let full = format!("refs/heads/{}", record.scratch_branch.clone().unwrap());
        (host, record, repo, full)
    }

    /// A publication over a move of the operator's is refused, saying how
    /// to let jackin publish again, and the host's branch stays `at`.
    fn assert_the_operators_move_stands(
        record: &IsolationRecord,
        host: &str,
        full: &str,
        at: &str,
    ) {
        let err = publish(record).unwrap_err();
        assert!(matches!(err, IsolationError::BranchMoved { .. }), "{err}");
        assert!(
            err.to_string().contains(&format!("update-ref -d {full}")),
            "{err}"
        );
        assert_eq!(tip_of(host, full), at, "the operator's move stands");
    }

    /// The agent's branch moves in its own repository; jackin publishes it
    /// into the host repository with a checked copy of its objects, by
    /// compare-and-swap from what it last published.
    #[test]
    fn the_agents_branch_is_published_checked_and_never_over_the_operators_move() {
        let dir = tempfile::tempdir().unwrap();
        let (host, record, repo, full) = prepared_worktree(dir.path());
        let base = tip_of(&host, &full);
        let commit = agent_commit(&host, &repo, &base, "agent");
        git::run(&["-C", &repo, "update-ref", &full, &commit]).unwrap();
        assert_eq!(
            tip_of(&host, &full),
            base,
            "nothing moves before jackin publishes"
        );
        assert!(git::run(&["-C", &host, "cat-file", "-e", &commit]).is_err());
        publish(&record).unwrap();
        assert_eq!(tip_of(&host, &full), commit);
        git::run(&["-C", &host, "fsck", "--strict", "--no-dangling"]).unwrap();

        // A branch the operator deleted is published again...
        git::run(&["-C", &host, "branch", "-D", "jackin/scratch/jk-1-t"]).unwrap();
        let later = agent_commit(&host, &repo, &commit, "later");
        git::run(&["-C", &repo, "update-ref", &full, &later]).unwrap();
        publish(&record).unwrap();
        assert_eq!(tip_of(&host, &full), later);
        // ...and one the operator moved is never overwritten.
        git::run(&["-C", &host, "update-ref", &full, &base]).unwrap();
        let last = agent_commit(&host, &repo, &later, "last");
        git::run(&["-C", &repo, "update-ref", &full, &last]).unwrap();
        assert_the_operators_move_stands(&record, &host, &full, &base);
    }

    /// N3: a crash between the host's `update-ref` and the record of what
    /// was published. Without a record of the intent (an earlier jackin),
    /// a host branch already at the agent's tip is taken as published; with
    /// one, a host branch at the intended tip is jackin's own move, and the
    /// agent's later commits are published over it. A branch the operator
    /// moved elsewhere meanwhile still stands.
    #[test]
    fn a_publication_cut_short_after_the_host_ref_moved_is_finished_by_the_next() {
        let dir = tempfile::tempdir().unwrap();
        let (host, record, repo, full) = prepared_worktree(dir.path());
        let base = tip_of(&host, &full);
        let published = format!("{repo}.published");
        let publishing = format!("{repo}.publishing");
        let read = |path: &str| std::fs::read_to_string(path).unwrap();

        // The host's branch moved to the agent's commit; nothing recorded.
        let first = agent_commit(&host, &repo, &base, "first");
        git::run(&["-C", &repo, "update-ref", &full, &first]).unwrap();
        git::run(&["-C", &repo, "repack", "-q"]).unwrap();
        git::run(&["-C", &host, "fetch", "-q", &repo, &full]).unwrap();
        git::run(&["-C", &host, "update-ref", &full, &first, &base]).unwrap();
        publish(&record).unwrap();
        assert_eq!(read(&published), first);

        // The same crash with the intent recorded; the agent commits again.
        let second = agent_commit(&host, &repo, &first, "second");
        git::run(&["-C", &repo, "update-ref", &full, &second]).unwrap();
        git::run(&["-C", &repo, "repack", "-q"]).unwrap();
        git::run(&["-C", &host, "fetch", "-q", &repo, &full]).unwrap();
        git::run(&["-C", &host, "update-ref", &full, &second, &first]).unwrap();
        std::fs::write(&publishing, &second).unwrap();
        let third = agent_commit(&host, &repo, &second, "third");
        git::run(&["-C", &repo, "update-ref", &full, &third]).unwrap();
        publish(&record).unwrap();
        assert_eq!(tip_of(&host, &full), third);
        assert_eq!(read(&published), third);
        assert!(!Path::new(&publishing).exists(), "the intent stayed");

        // An intent the operator's move overtook is no licence.
        std::fs::write(&publishing, &third).unwrap();
        git::run(&["-C", &host, "update-ref", &full, &base]).unwrap();
        let fourth = agent_commit(&host, &repo, &third, "fourth");
        git::run(&["-C", &repo, "update-ref", &full, &fourth]).unwrap();
        assert_the_operators_move_stands(&record, &host, &full, &base);
    }

    /// N7: an operator's commit that no ref holds (a reset left it for
    /// `gc`), which the agent finds among the host's objects, is never
    /// published as the agent's branch; nor is a history of the agent's
    /// own that does not descend from the base. A commit a host ref holds
    /// is the operator's already, and the branch may move to it.
    #[test]
    fn only_the_agents_own_commits_on_its_base_are_published() {
        let dir = tempfile::tempdir().unwrap();
        let (host, record, repo, full) = prepared_worktree(dir.path());
        let base = tip_of(&host, "HEAD");
        let host_git = format!("{host}/.git");
        let dropped = agent_commit(&host, &host_git, &base, "OPERATOR-DROPPED-SECRET");
        // What holds `commit` in the host (nothing, too, when the host
        // lacks it).
        let holders =
            |commit: &str| match git::run(&["-C", &host, "for-each-ref", "--contains", commit]) {
                Ok(out) => String::from_utf8(out).unwrap(),
                Err(_) => String::new(),
            };
        let refused = |commit: &str, why: &str| {
            git::run(&["-C", &repo, "update-ref", &full, commit]).unwrap();
            let err = publish(&record).unwrap_err();
            assert!(
                matches!(&err, IsolationError::LinkConflict { detail, .. } if detail.contains(why)),
                "{err}"
            );
            assert_eq!(tip_of(&host, &full), base);
            assert_eq!(holders(commit), "", "a host ref holds {commit}");
        };
        refused(&dropped, "jackin publishes only the agent's own commits");
        let empty_tree = "4b825dc642cb6eb9a060e54bf8d69288fbee4904";
        let out = std::process::Command::new("git")
            .args(["-C", &repo, "-c", "user.email=a@b", "-c", "user.name=a"])
            .args(["commit-tree", "-m", "a root of its own", empty_tree])
            .output()
            .unwrap();
        let root = String::from_utf8(out.stdout).unwrap().trim().to_owned();
        refused(&root, "does not descend from the checkout's base");

        // The operator's own branch moved on: held by a ref, it may be the
        // agent's too.
        let operators = agent_commit(&host, &host_git, &base, "the operator's");
        git::run(&["-C", &host, "update-ref", "refs/heads/main", &operators]).unwrap();
        git::run(&["-C", &repo, "update-ref", &full, &operators]).unwrap();
        publish(&record).unwrap();
        assert_eq!(tip_of(&host, &full), operators);
    }

    /// What the agent leaves in its repository reaches the host repository
    /// only as regular files below its objects: a link to an object file
    /// elsewhere (anywhere on the path), or a FIFO, publishes nothing and
    /// does not hang; the object itself then does. A commit that names an
    /// object nobody has publishes nothing either, not even its other
    /// objects.
    #[test]
    fn the_agents_objects_are_published_only_from_regular_files_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (host, record, repo, full) = prepared_worktree(dir.path());
        let base = tip_of(&host, "HEAD");
        let commit = agent_commit(&host, &repo, &base, "agent");
        git::run(&["-C", &repo, "update-ref", &full, &commit]).unwrap();

        let objects = Path::new(&repo).join("objects");
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
        // The unit's own git would fail on these too: the branch is read
        // from the ref file, and the object found by jackin's copy only.
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

        // A blob of the agent's and a commit whose tree nobody has.
        let count =
            || String::from_utf8(git::run(&["-C", &host, "count-objects", "-v"]).unwrap()).unwrap();
        let before = count();
        let blob = write_object(&repo, "blob", b"the agent's secret\n");
        let mut entry = b"100644 f\0".to_vec();
        entry.extend(hex_bytes(&blob));
        let tree = write_object(&repo, "tree", &entry);
        // No author: git's fsck refuses it, whatever packed it.
        let bad = write_object(
            &repo,
            "commit",
            format!("tree {tree}\nparent {commit}\ncommitter a <a@b> 1 +0000\n\nno author\n")
                .as_bytes(),
        );
        git::run(&["-C", &repo, "update-ref", &full, &bad]).unwrap();
        assert!(matches!(
            publish(&record),
            Err(IsolationError::LinkConflict { .. })
        ));
        assert_eq!(
            count(),
            before,
            "a refused publication left objects in the host"
        );
        assert!(git::run(&["-C", &host, "cat-file", "-e", &blob]).is_err());

        git::run(&["-C", &repo, "update-ref", &full, &commit]).unwrap();
        publish(&record).unwrap();
        git::run(&["-C", &host, "cat-file", "-e", &commit]).unwrap();
        git::run(&["-C", &host, "fsck", "--strict", "--no-dangling"]).unwrap();
    }

    /// Writes an object into a repository's own objects, as the agent's git
    /// would (however malformed); its name.
    fn write_object(repo: &str, kind: &str, bytes: &[u8]) -> String {
        let file = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(file.path(), bytes).unwrap();
        let out = std::process::Command::new("git")
            .args(["-C", repo, "hash-object", "--literally", "-w", "-t", kind])
            .arg(file.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    }

    fn hex_bytes(hex: &str) -> Vec<u8> {
        (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
            .collect()
    }

    /// One repository, however its path is spelled or linked, is isolated
    /// as a worktree once per unit: the unit has one scratch branch and one
    /// pin there.
    #[test]
    fn a_repository_is_a_worktree_once_per_unit() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let linked = dir.path().join("linked");
        std::os::unix::fs::symlink(&host, &linked).unwrap();
        let layout = Layout::new(dir.path().join("home"));
        let again = MountSpec {
            src: linked.to_str().unwrap().to_owned(),
            dst: "/workspace/again".into(),
            ..worktree_mount(&host)
        };
        let err = prepare(&layout, "jk-1-t", &[worktree_mount(&host), again]).unwrap_err();
        assert!(matches!(err, IsolationError::WorktreeTwice { .. }), "{err}");
        assert!(read_records(&layout, "jk-1-t").unwrap().is_empty());
    }

    /// The base pin is checked at every start: gone, or moved, the start is
    /// refused and says how to put it back; put back, the start goes on.
    #[test]
    fn a_start_is_refused_while_the_base_pin_is_not_the_base() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let layout = Layout::new(dir.path().join("home"));
        let mount = worktree_mount(&host);
        prepare(&layout, "jk-1-t", std::slice::from_ref(&mount)).unwrap();
        let base = tip_of(&host, "HEAD");
        let pin = "refs/jackin/base/jk-1-t";
        git::run(&["-C", &host, "update-ref", "-d", pin]).unwrap();
        let err = prepare(&layout, "jk-1-t", std::slice::from_ref(&mount)).unwrap_err();
        assert!(matches!(err, IsolationError::BasePinMoved { .. }), "{err}");
        assert!(
            err.to_string()
                .contains(&format!("update-ref {pin} {base}")),
            "{err}"
        );
        git::run(&["-C", &host, "update-ref", pin, &base]).unwrap();
        prepare(&layout, "jk-1-t", std::slice::from_ref(&mount)).unwrap();
        // The purge takes the pin and the scratch branch at the base.
        remove_all(&layout, "jk-1-t").unwrap();
        let refs = git::run(&["-C", &host, "for-each-ref", "--format=%(refname)"]).unwrap();
        let refs = String::from_utf8_lossy(&refs);
        assert!(!refs.contains("jackin"), "{refs}");
    }

    /// SA2: the host repository made anew (the same path, a new `git init`
    /// with other history): the check asked before a resume finds the
    /// conflict the resume then fails with, and finds none before.
    #[test]
    fn the_check_before_a_resume_is_the_one_the_resume_makes() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let layout = Layout::new(dir.path().join("home"));
        let mounts = [worktree_mount(&host)];
        prepare(&layout, "jk-1-t", &mounts).unwrap();
        assert!(
            resume_conflicts(&layout, "jk-1-t", &mounts)
                .unwrap()
                .is_empty()
        );
        // Another history: its own first commit, whatever the second.
        std::fs::remove_dir_all(&host).unwrap();
        git::run(&["init", "--quiet", &host]).unwrap();
        std::fs::write(Path::new(&host).join("OTHER"), "other\n").unwrap();
        git::run(&["-C", &host, "add", "."]).unwrap();
        let commit = ["-c", "user.email=t@jackin.dev", "-c", "user.name=t"];
        git::run(
            &[
                &["-C", host.as_str()][..],
                &commit,
                &["commit", "--quiet", "-m", "anew"],
            ]
            .concat(),
        )
        .unwrap();
        let conflicts = resume_conflicts(&layout, "jk-1-t", &mounts).unwrap();
        assert!(
            matches!(conflicts.as_slice(), [IsolationError::ResumeConflict { dst, .. }] if dst == "/workspace/app"),
            "{conflicts:?}"
        );
        let err = prepare(&layout, "jk-1-t", &mounts).unwrap_err();
        assert_eq!(err.to_string(), conflicts[0].to_string());
    }

    #[test]
    fn slugs_are_readable_and_distinct() {
        let a = slug("/workspace/app");
        assert!(a.starts_with("workspace-app-"), "{a}");
        assert_ne!(slug("/a/b"), slug("/a-b"));
    }
}
