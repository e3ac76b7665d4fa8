//! Worktrees an earlier jackin made as `git worktree`s of the operator's
//! repository, and their move to a repository of the unit's own.
//!
//! Such a worktree has an entry in the host repository
//! (`<git dir>/worktrees/<id>`) that the agent wrote (its `HEAD`, index,
//! reflog, `gitdir` and `commondir`), a view of the host's git directory
//! in the unit with the agent's objects, and the agent's scratch ref in the
//! unit. jackin recorded the entry when it made it, before any agent ran.
//!
//! At its next start ([`migrate`]) its work is published first (from the
//! unit's ref and view, as that jackin did); then the unit gets a
//! repository of its own at the published branch, with the view's objects
//! and the entry's index, and the checkout's files stay as they are.
//! jackin then removes the entry itself ([`clear_entry`]), and only if its
//! files still name this checkout: it never runs `git worktree remove` or
//! `repair`, which follow what the agent wrote. An entry that names
//! anything else is left and reported, with its path. Until it starts, such
//! a worktree is assessed, saved and purged as that jackin did.

use std::path::{Path, PathBuf};

use crate::checkout::{
    IsolationError, IsolationRecord, SCRATCH_PREFIX, common_dir, git_dir_of, io, path_str, quoted,
};
use crate::worktree::{self, BASE_PIN_PREFIX};
use jackin_api::instance::Isolation;
use jackin_files::fsutil::{read_untrusted, remove_if_exists, write_atomic};
use jackin_files::layout::Layout;

/// The objects directory of the unit's view of a worktree's host
/// repository: where the agent's own commits are until jackin publishes
/// them. Agent-written.
pub(crate) fn view_objects(record: &IsolationRecord) -> PathBuf {
    view_dir(record).join("objects")
}

/// The unit's view of the host repository's git directory, which the
/// container saw bound over it.
fn view_dir(record: &IsolationRecord) -> PathBuf {
    unit_git_dir(record, "view")
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

/// Moves the scratch branch in the host repository to where the agent's own
/// ref (in the unit) says, when the agent moved it since jackin last set it,
/// and once it names a commit the repository has: the agent's commits land
/// in its view's objects, its ref in the unit, and the objects the commit
/// needs are brought over checked ([`crate::gitdir::import_objects`]) when the
/// host lacks the commit. The host's branch moves only
/// from the value jackin gave the unit, so a move made meanwhile on the
/// host (by the operator, or by jackin) is never undone. A ref that is no
/// object name, names no commit there, or races a move on the host, is a
/// link conflict and moves nothing. A worktree made before jackin kept the
/// ref in the unit has none there yet: nothing to publish.
pub fn publish(record: &IsolationRecord) -> Result<(), IsolationError> {
    let Some((tip, given)) = unit_ref_moved(record)? else {
        return Ok(());
    };
    // The agent's new objects are in its view: they come over checked, and
    // the branch moves from the value the unit was given, or not at all.
    let (scratch, _) = unit_git_root(record);
    worktree::move_published_branch(record, &view_dir(record), &scratch, &tip, &given, &given)?;
    let seeded = seeded_file(record);
    write_atomic(&seeded, tip.as_bytes()).map_err(io(&seeded))?;
    Ok(())
}

/// The tip of the agent's scratch ref in the unit, when the agent moved it
/// since jackin last published it: what [`publish`] would bring over. Reads
/// only the unit's files.
pub fn unpublished_tip(record: &IsolationRecord) -> Result<Option<String>, IsolationError> {
    Ok(unit_ref_moved(record)?.map(|(tip, _)| tip))
}

/// The agent's scratch ref in the unit and the value jackin last gave it,
/// when the two differ.
fn unit_ref_moved(record: &IsolationRecord) -> Result<Option<(String, String)>, IsolationError> {
    let Some(branch) = &record.scratch_branch else {
        return Ok(None);
    };
    let conflict = |detail| record.link_conflict(detail);
    let file = unit_ref_file(record, branch);
    let tip = match read_untrusted(&file, MAX_LINK_FILE) {
        Ok(bytes) => String::from_utf8_lossy(&bytes).trim().to_owned(),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
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
    Ok((given != tip).then_some((tip, given)))
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

/// Finds the worktree's entry from the record and checks that it and the
/// checkout still name each other: the entry names the checkout (see
/// [`entry_names_checkout`]) and the checkout's `.git` names the entry.
/// Anything else is a [`IsolationError::LinkConflict`].
fn worktree_link(record: &IsolationRecord) -> Result<(), IsolationError> {
    let conflict = |detail| record.link_conflict(detail);
    let admin = match &record.admin_dir {
        Some(dir) => PathBuf::from(dir),
        None => adopt_entry(record, &git_dir_of(record)?.join("worktrees")).map_err(&conflict)?,
    };
    entry_names_checkout(record, &admin)
        .map_err(|why| conflict(format!("the entry {}: {why}", admin.display())))?;
    let dot_git = read_link_file(&Path::new(&record.path).join(".git")).map_err(&conflict)?;
    if dot_git.strip_prefix("gitdir: ") != Some(path_str(&admin)) {
        return Err(conflict(format!(
            "the checkout's .git says {}, not {}",
            quoted(&dot_git),
            admin.display()
        )));
    }
    Ok(())
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

/// Moves a worktree an earlier jackin made to a repository of the unit's
/// own (see the module's documentation). Its work is published first: if
/// that fails, nothing moves. The record then names the pin of its base.
/// The entry is left for [`clear_entry`], the view for [`remove_unit_parts`].
pub fn migrate(record: &mut IsolationRecord) -> Result<(), IsolationError> {
    publish(record)?;
    if record.common_dir.is_none() {
        record.common_dir = Some(path_str(&common_dir(&record.src)?).to_owned());
    }
    if record.admin_dir.is_none() {
        // Recorded before jackin recorded entries: the one entry that
        // names the checkout, if there is exactly one.
        let worktrees = git_dir_of(record)?.join("worktrees");
        record.admin_dir = adopt_entry(record, &worktrees)
            .ok()
            .map(|entry| path_str(&entry).to_owned());
    }
    let unit = record
        .scratch_branch
        .as_deref()
        .and_then(|branch| branch.strip_prefix(SCRATCH_PREFIX))
        .unwrap_or_default()
        .to_owned();
    record.base_pin = Some(format!("{BASE_PIN_PREFIX}{unit}"));
    record.host_branches.clear();
    if Path::new(&record.path).exists() {
        let index = record
            .admin_dir
            .as_ref()
            .map(|admin| Path::new(admin).join("index"));
        worktree::adopt(record, &view_dir(record), index.as_deref())
    } else {
        worktree::make(record)
    }
}

/// Removes the host repository's entry of a worktree an earlier jackin
/// made, when its files still name this checkout (here, or where it was
/// before the home moved) and this repository; otherwise leaves it, records
/// it as left, and says so with the path to delete by hand.
pub fn clear_entry(record: &mut IsolationRecord) -> Result<(), IsolationError> {
    let Some(admin) = record.admin_dir.take() else {
        return Ok(());
    };
    let admin = PathBuf::from(admin);
    match entry_names_checkout(record, &admin) {
        Ok(()) => {
            remove_if_exists(&admin).map_err(io(&admin))?;
        }
        Err(why) if std::fs::symlink_metadata(&admin).is_ok() => {
            tracing::warn!(
                "mount {}: left the worktree entry {} in {}, which an earlier jackin made: {why}, \
                 so it is not jackin's to remove. Delete it by hand: rm -rf -- {}",
                record.dst,
                admin.display(),
                record.src,
                admin.display()
            );
            record.left_entry = Some(path_str(&admin).to_owned());
        }
        Err(_) => {}
    }
    Ok(())
}

/// Whether `admin` is a directory of the host repository's `worktrees/`
/// whose `gitdir` names this checkout and whose `commondir` is git's own.
fn entry_names_checkout(record: &IsolationRecord, admin: &Path) -> Result<(), String> {
    let worktrees = git_dir_of(record)
        .map_err(|e| e.to_string())?
        .join("worktrees");
    if admin.parent() != Some(worktrees.as_path())
        || !std::fs::symlink_metadata(admin).is_ok_and(|m| m.is_dir())
    {
        return Err(format!("it is not a directory of {}", worktrees.display()));
    }
    let names = read_link_file(&admin.join("gitdir"))?;
    let here = format!("{}/.git", record.path);
    let before = record.moved_from.as_ref().map(|p| format!("{p}/.git"));
    if names != here && Some(&names) != before.as_ref() {
        return Err(format!("it names {} as its checkout", quoted(&names)));
    }
    let commondir = read_link_file(&admin.join("commondir"))?;
    if commondir != "../.." {
        return Err(format!("it names {} as its repository", quoted(&commondir)));
    }
    Ok(())
}

/// Removes what such a worktree kept in the unit (its view and its ref),
/// once its record names its own repository.
pub fn remove_unit_parts(record: &IsolationRecord) -> Result<(), IsolationError> {
    for path in [
        view_dir(record),
        unit_git_dir(record, UNIT_REFS),
        seeded_file(record),
    ] {
        remove_if_exists(&path).map_err(io(&path))?;
    }
    Ok(())
}

/// Removes such a worktree's parts as the jackin that made it did: its
/// entry in the host repository (the recorded one, and only if it still
/// names this checkout), and its scratch branch when every commit on it is
/// held elsewhere; otherwise the branch stays and is returned. The
/// checkout itself is the caller's.
pub fn remove(record: &IsolationRecord) -> Result<Option<String>, IsolationError> {
    let src = record.src.as_str();
    let mut kept = None;
    if Path::new(src).exists() {
        let ours = remove_entries_naming(record)?;
        if let Some(admin) = &record.admin_dir
            && !ours.iter().any(|e| e == Path::new(admin))
            && Path::new(admin).exists()
        {
            tracing::warn!(
                "left the worktree entry {admin} in {src}: it no longer names the checkout {}, \
                 so it is not jackin's to remove. Delete it by hand: rm -rf -- {admin}",
                record.path
            );
        }
        // The agent's latest commits reach the branch first; if they
        // cannot, the branch is kept as it is, never deleted.
        kept = worktree::retire_scratch_branch(record, publish(record))?;
    }
    remove_unit_parts(record)?;
    Ok(kept)
}

/// What earlier jackins left in the host repositories this home's units
/// were made from: every entry of their `worktrees/` that names a checkout
/// under this home, and every entry a unit recorded as left. One line for
/// each, saying what becomes of it. Reads only.
pub fn left_entries(layout: &Layout) -> Vec<String> {
    let Ok(units) = std::fs::read_dir(layout.data_dir()) else {
        return Vec::new();
    };
    let mut records = Vec::new();
    for unit in units.filter_map(Result::ok) {
        let Some(container) = unit.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if let Ok(found) = crate::checkout::read_records(layout, &container) {
            records.extend(
                found
                    .into_iter()
                    .filter(|r| r.isolation == Isolation::Worktree),
            );
        }
    }
    let mut lines = Vec::new();
    let mut repositories: Vec<PathBuf> =
        records.iter().filter_map(|r| git_dir_of(r).ok()).collect();
    repositories.sort();
    repositories.dedup();
    for common in &repositories {
        for (entry, names) in entries_left_in(layout, common) {
            let pending = records
                .iter()
                .any(|r| r.is_legacy_worktree() && r.admin_dir.as_deref() == entry.to_str());
            let what = if pending {
                "moves to a repository of its own at its unit's next start".to_owned()
            } else {
                format!(
                    "no unit uses it; delete it by hand: rm -rf -- {}",
                    entry.display()
                )
            };
            lines.push(format!(
                "worktree entry {} (naming {}) left by an earlier jackin: {what}",
                entry.display(),
                quoted(&names)
            ));
        }
    }
    for record in &records {
        if let Some(entry) = record
            .left_entry
            .as_deref()
            .filter(|e| Path::new(e).exists())
        {
            lines.push(format!(
                "worktree entry {entry} in {} left by an earlier jackin names another checkout \
                 than {}: delete it by hand: rm -rf -- {entry}",
                record.src, record.path
            ));
        }
    }
    lines
}

/// The entries of a host repository's `worktrees/` whose `gitdir` names a
/// checkout under this home's units: left by an earlier jackin. Each with
/// what it names. A repository without `worktrees/` has none.
pub fn entries_left_in(layout: &Layout, common: &Path) -> Vec<(PathBuf, String)> {
    let units = layout.data_dir();
    let Ok(entries) = std::fs::read_dir(common.join("worktrees")) else {
        return Vec::new();
    };
    let mut found: Vec<(PathBuf, String)> = entries
        .filter_map(Result::ok)
        .map(|entry| entry.path())
        .filter(|entry| std::fs::symlink_metadata(entry).is_ok_and(|m| m.is_dir()))
        .filter_map(|entry| {
            let names = read_link_file(&entry.join("gitdir")).ok()?;
            Path::new(&names)
                .starts_with(&units)
                .then_some((entry, names))
        })
        .collect();
    found.sort();
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git;
    use crate::isolation::tests::{agent_commit, host_repository, worktree_mount};
    use crate::isolation::{prepare, read_records};

    fn git(args: &[&str]) -> String {
        String::from_utf8(git::run(args).unwrap())
            .unwrap()
            .trim()
            .to_owned()
    }

    /// A unit as an earlier jackin left it: a `git worktree` of the host
    /// with its entry, the agent's commit in the unit's view and its ref in
    /// the unit, a staged file and an untracked one. Returns the entry.
    fn earlier_unit(layout: &Layout, host: &str) -> PathBuf {
        let unit = "jk-1-t";
        let mount = worktree_mount(host);
        let name = crate::isolation::slug(&mount.dst);
        let git_root = layout.unit_dir(unit).join("git");
        let checkout = git_root.join("worktree").join(&name);
        let checkout_str = checkout.to_str().unwrap();
        std::fs::create_dir_all(checkout.parent().unwrap()).unwrap();
        let base = git(&["-C", host, "rev-parse", "HEAD"]);
        let branch = format!("jackin/scratch/{unit}");
        git(&[
            "-C",
            host,
            "worktree",
            "add",
            "--quiet",
            "-b",
            &branch,
            checkout_str,
            &base,
        ]);
        let admin = PathBuf::from(git(&[
            "-C",
            checkout_str,
            "rev-parse",
            "--path-format=absolute",
            "--git-dir",
        ]));
        let view = git_root.join("view").join(&name);
        std::fs::create_dir_all(view.join("objects")).unwrap();
        let commit = agent_commit(host, view.to_str().unwrap(), &base, "agent");
        let refs = git_root.join("refs").join(&name);
        std::fs::create_dir_all(&refs).unwrap();
        std::fs::write(refs.join(unit), format!("{commit}\n")).unwrap();
        std::fs::write(git_root.join("refs").join(format!("{name}.seeded")), &base).unwrap();
        std::fs::write(checkout.join("staged.txt"), "staged\n").unwrap();
        git(&["-C", checkout_str, "add", "staged.txt"]);
        std::fs::write(checkout.join("draft.txt"), "untracked\n").unwrap();
        let record = serde_json::json!([{
            "dst": mount.dst,
            "src": host,
            "isolation": "worktree",
            "path": checkout_str,
            "scratchBranch": branch,
            "baseCommit": base,
            "commonDir": format!("{host}/.git"),
            "adminDir": admin.to_str().unwrap(),
        }]);
        let file = layout.isolation_file(unit);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(file, serde_json::to_vec(&record).unwrap()).unwrap();
        admin
    }

    /// The next start publishes the agent's commit, gives the unit a
    /// repository of its own with the checkout's files and staged state as
    /// they were, and removes the entry, which named the checkout.
    #[test]
    fn an_earlier_worktree_moves_to_a_repository_of_its_own_with_its_work() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let layout = Layout::new(dir.path().join("home"));
        let admin = earlier_unit(&layout, &host);
        let unit_ref = git(&["-C", &host, "rev-parse", "jackin/scratch/jk-1-t"]);

        prepare(&layout, "jk-1-t", &[worktree_mount(&host)]).unwrap();
        let record = read_records(&layout, "jk-1-t").unwrap().remove(0);
        assert!(!record.is_legacy_worktree(), "{record:?}");
        assert_eq!(record.admin_dir, None);
        assert_eq!(record.left_entry, None);
        assert!(!admin.exists(), "the entry is gone");
        let scratch = git(&["-C", &host, "rev-parse", "jackin/scratch/jk-1-t"]);
        assert_ne!(scratch, unit_ref, "the agent's commit was published");
        assert_eq!(
            git(&[
                "-C",
                &host,
                "log",
                "-1",
                "--format=%s",
                "jackin/scratch/jk-1-t"
            ]),
            "agent"
        );
        let repo = record.git_place();
        let status = git(&[
            "-C",
            &repo,
            "--work-tree",
            &record.path,
            "status",
            "--porcelain",
        ]);
        assert!(
            status.contains("A  staged.txt") && status.contains("?? draft.txt"),
            "{status}"
        );
        assert_eq!(git(&["-C", &repo, "rev-parse", "HEAD"]), scratch);
        for leftover in ["view", "refs"] {
            let path = Path::new(&record.path)
                .parent()
                .and_then(Path::parent)
                .unwrap()
                .join(leftover);
            let entries = std::fs::read_dir(&path).map(|d| d.count()).unwrap_or(0);
            assert_eq!(entries, 0, "{} still holds something", path.display());
        }
        for check in [
            &["worktree", "list", "--porcelain"][..],
            &["fsck", "--strict"],
            &["gc", "--prune=now", "--quiet"],
        ] {
            let mut argv = vec!["-C", host.as_str()];
            argv.extend_from_slice(check);
            git::run(&argv).unwrap();
        }
        let listed = git(&["-C", &host, "worktree", "list", "--porcelain"]);
        assert!(!listed.contains(&record.path), "{listed}");
    }

    /// An entry the agent pointed elsewhere is not jackin's to remove: it
    /// is left, recorded and named, and the work still moves.
    #[test]
    fn an_entry_that_names_elsewhere_is_left_and_recorded() {
        let dir = tempfile::tempdir().unwrap();
        let host = host_repository(dir.path());
        let layout = Layout::new(dir.path().join("home"));
        let admin = earlier_unit(&layout, &host);
        let elsewhere = dir.path().join("elsewhere/.git");
        std::fs::write(admin.join("gitdir"), format!("{}\n", elsewhere.display())).unwrap();

        prepare(&layout, "jk-1-t", &[worktree_mount(&host)]).unwrap();
        let record = read_records(&layout, "jk-1-t").unwrap().remove(0);
        assert_eq!(record.left_entry.as_deref(), admin.to_str());
        assert!(admin.join("gitdir").exists(), "the entry was left");
        assert!(!elsewhere.exists(), "nothing was written where it points");
        assert_eq!(
            git(&[
                "-C",
                &host,
                "log",
                "-1",
                "--format=%s",
                "jackin/scratch/jk-1-t"
            ]),
            "agent"
        );
        assert_eq!(
            entries_left_in(&layout, &Path::new(&host).join(".git")),
            Vec::<(PathBuf, String)>::new(),
            "it names no unit of this home now"
        );
    }
}
