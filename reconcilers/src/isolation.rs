//! Isolated mounts: the agent works in its own checkout of the operator's
//! repository, never in the repository itself.
//!
//! - `worktree`: a `git worktree` on a scratch branch `jackin/scratch/<unit>`
//!   from the host's `HEAD`. `extensions.worktreeConfig` is enabled first so
//!   per-worktree config stays out of the host's `.git/config`.
//! - `clone`: a local clone of the host's current branch.
//!
//! Both are made once under the unit's `git/` directory, recorded with their
//! base commit in `.jackin/isolation.json`, and reused as they are afterwards:
//! no reset, no rebase, no pull. Before a kept checkout is reused, the host
//! repository must still hold its base commit. A worktree whose directory
//! went missing is made again from its scratch branch, commits and all.
//!
//! The operator's repository is touched only where jackin's own parts are:
//! its worktree entry, removed by path (never a repository-wide `git
//! worktree prune`, which would also drop the entry of an operator's
//! worktree on a disk that is not mounted), and its scratch branch, deleted
//! only when every commit on it is held elsewhere.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use jackin_api::instance::{Isolation, MountSpec};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fsutil::{ensure_private_dir, remove_if_exists, write_atomic};
use crate::git::{self, GitError};
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
}

#[derive(Debug, thiserror::Error)]
pub enum IsolationError {
    #[error(transparent)]
    Git(#[from] GitError),
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
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> IsolationError + '_ {
    move |source| IsolationError::Io {
        path: path.to_owned(),
        source,
    }
}

fn records_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_meta_dir(container).join("isolation.json")
}

/// The unit's isolation records; none when the file does not exist. Each
/// record's path is where the layout puts that checkout now, so a moved
/// `JACKIN_HOME` still finds its checkouts.
pub fn read_records(
    layout: &Layout,
    container: &str,
) -> Result<Vec<IsolationRecord>, IsolationError> {
    let path = records_file(layout, container);
    let mut records: Vec<IsolationRecord> = match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes).map_err(|e| IsolationError::Records {
            path,
            message: e.to_string(),
        })?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io(&path)(e)),
    };
    for record in &mut records {
        let here = checkout_path(layout, container, record.isolation, &record.dst);
        record.path = path_str(&here).to_owned();
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
    let mut bytes = serde_json::to_vec_pretty(records).expect("records serialize");
    bytes.push(b'\n');
    write_atomic(&path, &bytes).map_err(io(&path))
}

/// A directory name for a mount destination: readable, and unique through a
/// short hash (`/a/b` and `/a-b` must not collide).
fn slug(dst: &str) -> String {
    let readable: String = dst
        .trim_matches('/')
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let hash: String = Sha256::digest(dst.as_bytes())[..4]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
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
    let out = git::run(&[
        "-C",
        repo,
        "for-each-ref",
        "--format=%(refname:short)%00%(objectname)",
        "refs/heads/",
    ])?;
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
/// before it is reused.
pub fn prepare(
    layout: &Layout,
    container: &str,
    mounts: &[MountSpec],
) -> Result<(), IsolationError> {
    let mut records = read_records(layout, container)?;
    for mount in mounts.iter().filter(|m| m.isolation != Isolation::Shared) {
        let existing = records.iter().find(|r| r.dst == mount.dst).cloned();
        match existing {
            Some(record) if Path::new(&record.path).exists() => {
                verify(&record)?;
                if record.isolation == Isolation::Worktree {
                    // The home may have moved: point the host's entry here.
                    git::run(&["-C", &record.src, "worktree", "repair", "--", &record.path])?;
                }
            }
            // A worktree whose directory is gone: its branch still holds the
            // agent's commits. Made again from it, never from scratch.
            Some(record) if record.isolation == Isolation::Worktree => {
                verify(&record)?;
                make_checkout(&record)?;
            }
            // A clone is nothing without its directory: a new one, recorded
            // before anything is made, so that a failure or a crash half-way
            // leaves a record a purge can clean up from.
            _ => {
                let record = plan_record(layout, container, mount)?;
                records.retain(|r| r.dst != mount.dst);
                records.push(record.clone());
                write_records(layout, container, &records)?;
                make_checkout(&record)?;
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
    /// The host path, bound at the same path in the container.
    pub path: String,
    pub read_only: bool,
}

/// What a worktree's git needs inside the container. Its `.git` file names
/// the host repository's git directory by its host path, so that directory
/// is bound at the same path: read-only, so that the agent can plant no hook
/// or config that would run on the operator's next `git` command, with
/// writable binds over just what committing on the scratch branch writes
/// (the objects, the scratch branches' refs, the reflogs, and the
/// worktree's own directory: its HEAD, index and config).
pub fn git_binds(layout: &Layout, container: &str) -> Result<Vec<GitBind>, IsolationError> {
    let mut binds = Vec::new();
    for record in read_records(layout, container)? {
        let Some(branch) = &record.scratch_branch else {
            continue;
        };
        let out = git::run_untrusted(
            &record.path,
            &[
                "rev-parse",
                "--path-format=absolute",
                "--git-dir",
                "--git-common-dir",
            ],
        )?;
        let out = String::from_utf8_lossy(&out);
        let mut lines = out.lines();
        let (Some(own), Some(common)) = (lines.next(), lines.next()) else {
            return Err(IsolationError::NotPrepared { dst: record.dst });
        };
        let common = Path::new(common);
        let refs_dir = Path::new(branch).parent().unwrap_or(Path::new(""));
        let writable = [
            common.join("objects"),
            common.join("refs/heads").join(refs_dir),
            common.join("logs"),
            PathBuf::from(own),
        ];
        binds.push(GitBind {
            path: path_str(common).to_owned(),
            read_only: true,
        });
        for dir in writable {
            ensure_dir(&dir)?;
            binds.push(GitBind {
                path: path_str(&dir).to_owned(),
                read_only: false,
            });
        }
    }
    binds.dedup();
    Ok(binds)
}

/// Creates a directory git would create on its own (it cannot once the
/// parent is bound read-only).
fn ensure_dir(dir: &Path) -> Result<(), IsolationError> {
    std::fs::create_dir_all(dir).map_err(io(dir))
}

/// The reuse check: the host must still contain the base commit.
fn verify(record: &IsolationRecord) -> Result<(), IsolationError> {
    let spec = format!("{}^{{commit}}", record.base_commit);
    match git::run(&["-C", &record.src, "cat-file", "-e", &spec]) {
        Ok(_) => Ok(()),
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
    })
}

/// Makes the checkout a record describes.
fn make_checkout(record: &IsolationRecord) -> Result<(), IsolationError> {
    let src = record.src.as_str();
    let path = Path::new(&record.path);
    // A directory there that no record vouched for may hold someone's work:
    // never overwrite it.
    if path.exists() {
        return Err(IsolationError::Unrecorded {
            path: record.path.clone(),
        });
    }
    match &record.scratch_branch {
        Some(branch) => {
            git::run(&["-C", src, "config", "extensions.worktreeConfig", "true"])?;
            let version = git::run(&["-C", src, "config", "core.repositoryformatversion"])
                .map(|v| String::from_utf8_lossy(&v).trim().to_owned())
                .unwrap_or_default();
            if version != "1" {
                git::run(&["-C", src, "config", "core.repositoryformatversion", "1"])?;
            }
            // An entry of ours whose directory is gone (or an interrupted
            // attempt's) would refuse the path: remove it, by path only.
            remove_worktree_entry(src, &record.path);
            let full = format!("refs/heads/{branch}");
            let branch_exists =
                git::run(&["-C", src, "rev-parse", "--verify", "--quiet", &full]).is_ok();
            // With the branch there, the agent's commits are on it: check it
            // out as it is. Otherwise make it at the base commit.
            let mut argv = vec!["-C", src, "worktree", "add", "--quiet"];
            if !branch_exists {
                argv.extend(["-b", branch.as_str()]);
            }
            argv.extend(["--", record.path.as_str()]);
            argv.push(if branch_exists {
                branch
            } else {
                &record.base_commit
            });
            git::run(&argv)?;
        }
        None => {
            git::run(&[
                "clone",
                "--quiet",
                "--no-hardlinks",
                "--",
                src,
                &record.path,
            ])?;
        }
    }
    Ok(())
}

/// Removes the host repository's entry for the worktree at `path`, if it
/// has one, and no other (a missing directory is no obstacle). What is not
/// there is not an error.
fn remove_worktree_entry(src: &str, path: &str) {
    let _ = git::run(&["-C", src, "worktree", "remove", "--force", "--", path]);
}

/// Removes every isolated checkout of the unit: a worktree through git (its
/// entry removed by path), a clone as a directory. A scratch branch is
/// deleted only when every commit on it is held by another ref; otherwise it
/// stays in the host repository and is returned, so that nothing committed
/// is ever lost. The host repository's own branches and files stay.
pub fn remove_all(layout: &Layout, container: &str) -> Result<Vec<String>, IsolationError> {
    let records = read_records(layout, container)?;
    let mut kept_branches = Vec::new();
    for record in &records {
        let src = record.src.as_str();
        if record.isolation == Isolation::Worktree && Path::new(src).exists() {
            if Path::new(&record.path).exists() {
                // A moved home: the host's entry must point here first.
                let _ = git::run(&["-C", src, "worktree", "repair", "--", &record.path]);
            }
            remove_worktree_entry(src, &record.path);
            if let Some(branch) = &record.scratch_branch {
                if held_elsewhere(src, branch)? {
                    let _ = git::run(&["-C", src, "branch", "-D", "--", branch]);
                } else {
                    kept_branches.push(format!("{branch} in {src}"));
                }
            }
        }
        remove_if_exists(Path::new(&record.path)).map_err(io(Path::new(&record.path)))?;
    }
    if !records.is_empty() {
        write_records(layout, container, &[])?;
    }
    Ok(kept_branches)
}

/// Whether every commit on `branch` is reachable from some other ref of the
/// repository (so deleting the branch loses nothing). A branch that does
/// not exist holds nothing.
fn held_elsewhere(src: &str, branch: &str) -> Result<bool, GitError> {
    let full = format!("refs/heads/{branch}");
    if git::run(&["-C", src, "rev-parse", "--verify", "--quiet", &full]).is_err() {
        return Ok(true);
    }
    let exclude = format!("--exclude={full}");
    let out = git::run(&[
        "-C", src, "rev-list", "--count", &full, "--not", &exclude, "--all", "--",
    ])?;
    Ok(String::from_utf8_lossy(&out).trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_readable_and_distinct() {
        let a = slug("/workspace/app");
        assert!(a.starts_with("workspace-app-"), "{a}");
        assert_ne!(slug("/a/b"), slug("/a-b"));
    }
}
