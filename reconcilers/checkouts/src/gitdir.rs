//! The agent's objects, brought into the operator's repository checked.
//!
//! A worktree's commits are made in the unit's own repository (see
//! `worktree`), and reach the host repository only through
//! [`import_objects`]: jackin copies the agent's object files into a
//! directory of its own (reading only regular files with the names git
//! gives them, never following a link, capped), a confined git packs just
//! what the new tip needs, and a confined git checks every object of that
//! pack in a quarantine that borrows nothing but the host's objects. Only
//! a pack that passed lands in the host's `objects/pack`, whole: a refused
//! publication leaves nothing in the host repository.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::git::{self, GitError};
use jackin_files::fsutil::{self, BeneathDir, EntryKind, FileLock, remove_if_exists, write_atomic};

/// The most jackin copies of the agent's objects for one publication: far
/// above what a session commits, low enough that a runaway agent cannot fill
/// the host's disk through jackin.
const MAX_IMPORTED_BYTES: u64 = 4 << 30;

/// The most files jackin looks at in the view's objects for one publication.
const MAX_IMPORTED_FILES: usize = 1 << 20;

/// How the name of a publication's quarantine (its working directory, see
/// [`import_objects`]) begins.
const QUARANTINE_PREFIX: &str = ".import-";

/// The lock every publication holds shared, beside its quarantine, for as
/// long as the quarantine exists: whoever takes it exclusively knows that
/// no quarantine there is in use, and that one found is a killed
/// publication's.
const QUARANTINE_LOCK: &str = ".import.lock";

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    /// What the agent left in its view cannot be published as it is.
    #[error("{0}")]
    Refused(String),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> ViewError + '_ {
    move |source| ViewError::Io {
        path: path.to_owned(),
        source,
    }
}

/// `base/relative` as a real directory of jackin's, in a tree the agent
/// writes: whatever else the agent left at any step of the way (a link, a
/// file) is removed first.
pub(crate) fn reset_to_dir(base: &Path, relative: &str) -> Result<(), ViewError> {
    let mut dir = base.to_owned();
    for part in relative.split('/') {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => remove_if_exists(&dir).map_err(io_at(&dir))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_at(&dir)(e)),
        }
        fsutil::ensure_private_dir(&dir).map_err(io_at(&dir))?;
    }
    Ok(())
}

/// Brings the objects `tip` needs from the agent's repository `agent_git_dir`
/// (a git directory the agent writes) into the host repository whose
/// objects are `host_objects`, given that the host has everything `known`
/// needs. The agent's files are copied into a directory of jackin's under
/// `scratch` first, reading nothing but regular files below its `objects`;
/// git then runs confined on the copies: one packs what `tip` needs beyond
/// `known`, the other indexes that pack with `--strict` in a repository that
/// borrows only the host's objects, refusing any object that is malformed
/// or points at one neither has. Only then does the pack (and its index,
/// last) land in the host's `objects/pack`. Before anything is packed, the
/// commits are checked to be the agent's (`only_the_agents_commits`).
pub fn import_objects(
    agent_git_dir: &Path,
    host_objects: &Path,
    scratch: &Path,
    wanted: &Wanted<'_>,
) -> Result<(), ViewError> {
    let Wanted {
        tip, known, held, ..
    } = *wanted;
    // Taken before the quarantine is made and let go after it is removed
    // (the locals drop in reverse): a sweep never takes a live one.
    let lock = scratch.join(QUARANTINE_LOCK);
    let _publishing = FileLock::acquire_shared(&lock).map_err(io_at(&lock))?;
    let quarantine = tempfile::Builder::new()
        .prefix(QUARANTINE_PREFIX)
        .tempdir_in(scratch)
        .map_err(io_at(scratch))?;
    let format = if tip.len() == 64 { "sha256" } else { "sha1" };
    let repo = quarantine.path().join("repo.git");
    bare_repository(&repo, format, host_objects)?;
    copy_agent_objects(agent_git_dir, &repo.join("objects"))?;

    let revs = quarantine.path().join("revs");
    let mut lines = format!("{tip}\n^{known}\n");
    for commit in held {
        lines.push_str(&format!("^{commit}\n"));
    }
    write_atomic(&revs, lines.as_bytes()).map_err(io_at(&revs))?;
    only_the_agents_commits(&repo, quarantine.path(), host_objects, &revs, wanted)?;
    let out = quarantine.path().join("out");
    fsutil::ensure_private_dir(&out).map_err(io_at(&out))?;
    let base = out.join("pack");
    // `--local`: what the host has already (its objects are the alternate)
    // stays out of the pack. git writes its temporary pack in the
    // repository's `objects/pack`.
    let name = git::run_untrusted_fed(
        path_str(&repo),
        &["pack-objects", "--revs", "--local", "-q", path_str(&base)],
        &[host_objects],
        &[&out, &repo.join("objects/pack")],
        Some(&revs),
    )?;
    let name = String::from_utf8_lossy(&name).trim().to_owned();
    let pack = out.join(format!("pack-{name}.pack"));
    let index = out.join(format!("pack-{name}.idx"));
    // The index pack-objects wrote is its own word: made again below, by a
    // git that sees only the pack and the host's objects.
    for own in [index.clone(), out.join(format!("pack-{name}.rev"))] {
        remove_if_exists(&own).map_err(io_at(&own))?;
    }
    let check = quarantine.path().join("check.git");
    bare_repository(&check, format, host_objects)?;
    git::run_untrusted_fed(
        path_str(&check),
        &[
            "index-pack",
            "--strict",
            "-o",
            path_str(&index),
            path_str(&pack),
        ],
        &[host_objects],
        &[&out, &check.join("objects")],
        None,
    )?;
    land_pack(&pack, &index, host_objects, &name)
}

/// What a publication brings into the host repository.
#[derive(Debug, Clone, Copy)]
pub struct Wanted<'a> {
    /// The agent's tip.
    pub tip: &'a str,
    /// The unit's base commit, which the tip must descend from.
    pub base: &'a str,
    /// A commit the host has with everything it needs (what jackin last
    /// published, or the base).
    pub known: &'a str,
    /// The commits the host's refs name: what they hold is the operator's
    /// already, and needs bringing by no one.
    pub held: &'a [String],
}

/// N7: the tip descends from the unit's base, and every commit it brings
/// that no ref of the host holds is the agent's own, in the unit's
/// repository (its copy in the quarantine `repo`), never one found only
/// among the host's objects, which the agent reads too (an operator's
/// commit a reset left for `gc`). `revs` lists the tip and what the host
/// holds; `work` is the quarantine.
fn only_the_agents_commits(
    repo: &Path,
    work: &Path,
    host_objects: &Path,
    revs: &Path,
    wanted: &Wanted<'_>,
) -> Result<(), ViewError> {
    let (tip, base) = (wanted.tip, wanted.base);
    let at = path_str(repo);
    let descends = ["merge-base", "--is-ancestor", base, tip];
    match git::run_untrusted_fed(at, &descends, &[host_objects], &[], None) {
        Ok(_) => {}
        Err(GitError::Failed { .. }) => {
            return Err(ViewError::Refused(format!(
                "the agent's branch names {tip}, which does not descend from the checkout's \
                 base {base}: jackin publishes only work on the base"
            )));
        }
        Err(e) => return Err(e.into()),
    }
    let listed = git::run_untrusted_fed(
        at,
        &["rev-list", "--stdin"],
        &[host_objects],
        &[],
        Some(revs),
    )?;
    let commits = work.join("commits");
    write_atomic(&commits, &listed).map_err(io_at(&commits))?;
    // Asked without the host's objects (the quarantine's alternates, a
    // file of jackin's, set aside): what is found is the agent's.
    let alternates = repo.join("objects/info/alternates");
    let aside = work.join("alternates");
    std::fs::rename(&alternates, &aside).map_err(io_at(&alternates))?;
    let found = git::run_untrusted_fed(
        at,
        &["cat-file", "--batch-check=%(objectname)"],
        &[],
        &[],
        Some(&commits),
    );
    std::fs::rename(&aside, &alternates).map_err(io_at(&alternates))?;
    let found = String::from_utf8_lossy(&found?).into_owned();
    if let Some(missing) = found.lines().find_map(|l| l.strip_suffix(" missing")) {
        return Err(ViewError::Refused(format!(
            "the agent's branch holds the commit {missing}, which is not in the unit's \
             repository but only among the host's objects, where no ref holds it (such as a \
             commit a reset left for gc): jackin publishes only the agent's own commits"
        )));
    }
    Ok(())
}

/// The quarantines of the unit whose directory is `unit` that killed
/// publications left ([`import_objects`], a `kill -9` or a power-off
/// mid-way, can leave up to its whole copy of the agent's objects): those
/// in a place where no publication runs now. The places are those its
/// callers work in: beside a worktree's repositories (`git/repo/`, see
/// `worktree`), and `git/` for a worktree an earlier jackin made.
pub fn quarantine_leftovers(unit: &Path) -> Vec<PathBuf> {
    let git = unit.join("git");
    let mut found = Vec::new();
    for place in [git.join("repo"), git] {
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        let mut here: Vec<PathBuf> = entries
            .filter_map(Result::ok)
            .filter(|e| {
                e.file_type().is_ok_and(|t| t.is_dir())
                    && e.file_name()
                        .to_str()
                        .is_some_and(|n| n.starts_with(QUARANTINE_PREFIX))
            })
            .map(|e| e.path())
            .collect();
        if here.is_empty() || FileLock::is_in_use(&place.join(QUARANTINE_LOCK)).unwrap_or(true) {
            continue;
        }
        here.sort();
        found.append(&mut here);
    }
    found
}

/// Removes `path`, a quarantine a killed publication left (see
/// [`quarantine_leftovers`]), once the lock beside it, taken exclusively
/// and not waited for, proves that no publication there runs; whether it
/// did. The caller holds the unit's lock: the unit is not being removed.
pub fn remove_quarantine_leftover(path: &Path) -> io::Result<bool> {
    let named = path
        .file_name()
        .and_then(|n| n.to_str())
        .is_some_and(|n| n.starts_with(QUARANTINE_PREFIX));
    let Some(place) = path.parent().filter(|_| named) else {
        return Ok(false);
    };
    if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
        return Ok(false);
    }
    let Some(_nobody_publishes) = FileLock::try_acquire(&place.join(QUARANTINE_LOCK))? else {
        return Ok(false);
    };
    remove_if_exists(path)?;
    Ok(true)
}

/// A bare repository of jackin's at `dir` that borrows `host_objects`.
fn bare_repository(dir: &Path, format: &str, host_objects: &Path) -> Result<(), ViewError> {
    let files: [(&str, String); 3] = [
        ("HEAD", "ref: refs/heads/main\n".into()),
        (
            "config",
            format!(
                "[core]\n\trepositoryformatversion = 1\n\tbare = true\n\
                 [extensions]\n\tobjectFormat = {format}\n"
            ),
        ),
        (
            "objects/info/alternates",
            format!("{}\n", host_objects.display()),
        ),
    ];
    for (name, text) in files {
        let path = dir.join(name);
        write_atomic(&path, text.as_bytes()).map_err(io_at(&path))?;
    }
    for sub in ["refs", "objects/pack"] {
        let path = dir.join(sub);
        fsutil::ensure_private_dir(&path).map_err(io_at(&path))?;
    }
    Ok(())
}

/// Moves a checked pack into the host's `objects/pack`: each file copied
/// under a temporary name there, then renamed, the index last (git finds a
/// pack by its index, so it sees the pack whole or not at all).
fn land_pack(pack: &Path, index: &Path, host_objects: &Path, name: &str) -> Result<(), ViewError> {
    let pack_dir = host_objects.join("pack");
    fsutil::ensure_private_dir(&pack_dir).map_err(io_at(&pack_dir))?;
    for (from, suffix) in [(pack, "pack"), (index, "idx")] {
        let to = pack_dir.join(format!("pack-{name}.{suffix}"));
        if to.exists() {
            continue;
        }
        let mut tmp = tempfile::Builder::new()
            .prefix("tmp_jackin_")
            .tempfile_in(&pack_dir)
            .map_err(io_at(&pack_dir))?;
        let mut source = std::fs::File::open(from).map_err(io_at(from))?;
        io::copy(&mut source, tmp.as_file_mut()).map_err(io_at(tmp.path()))?;
        tmp.as_file().sync_all().map_err(io_at(tmp.path()))?;
        let file = tmp.persist(&to).map_err(|e| io_at(&to)(e.error))?;
        // As git leaves its packs: read-only.
        use std::os::unix::fs::PermissionsExt;
        file.set_permissions(std::fs::Permissions::from_mode(0o444))
            .map_err(io_at(&to))?;
    }
    Ok(())
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("jackin's paths are UTF-8")
}

/// Copies the loose objects and packs below `git_dir/objects` into `into`:
/// only files with the names git gives them, only regular files, nothing
/// through a link, at most [`MAX_IMPORTED_BYTES`] in all. What git itself
/// would never read as an object is left where it is: an empty loose file
/// (no object is empty) and a pack without its index, or an index without
/// its pack (N5: junk copied again at every publication). What is left is
/// counted and sized before a byte is copied, and refused whole when it
/// passes the budget.
pub(crate) fn copy_agent_objects(git_dir: &Path, into: &Path) -> Result<(), ViewError> {
    let tree = BeneathDir::open(git_dir).map_err(io_at(git_dir))?;
    let refused = |what: String| ViewError::Refused(format!("{}: {what}", git_dir.display()));
    let wanted = object_files(&tree).map_err(&refused)?;
    let total: u64 = wanted.iter().map(|(_, size)| size).sum();
    if total > MAX_IMPORTED_BYTES {
        return Err(refused(too_large()));
    }
    let mut budget = Budget {
        bytes: MAX_IMPORTED_BYTES,
        files: MAX_IMPORTED_FILES,
    };
    for (relative, _) in wanted {
        budget.take_file().map_err(&refused)?;
        let mut file = tree
            .open_regular(&format!("objects/{relative}"))
            .map_err(|e| refused(format!("objects/{relative}: {e}")))?;
        let to = into.join(&relative);
        copy_object(&mut file, &to, &mut budget).map_err(|e| match e {
            CopyError::Io(e) => io_at(&to)(e),
            CopyError::TooLarge => refused(too_large()),
        })?;
    }
    Ok(())
}

fn too_large() -> String {
    format!(
        "the agent's objects are larger than {} GiB; jackin does not publish them (use clone \
         isolation for such work)",
        MAX_IMPORTED_BYTES >> 30
    )
}

/// The object files git would read below `objects` of `tree`, relative to
/// it, with their sizes (as `lstat` gives them, nothing opened): loose
/// objects that are not empty, and packs with their index. A link, FIFO or
/// device with such a name is refused, and so are more than
/// [`MAX_IMPORTED_FILES`] names.
fn object_files(tree: &BeneathDir) -> Result<Vec<(String, u64)>, String> {
    let is_hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    let mut named = Vec::new();
    for (name, is_dir) in tree
        .entries("objects")
        .map_err(|e| format!("objects: {e}"))?
    {
        if is_dir && name.len() == 2 && is_hex(&name) {
            let leaves = tree
                .entries(&format!("objects/{name}"))
                .map_err(|e| format!("objects/{name}: {e}"))?;
            named.extend(
                leaves
                    .into_iter()
                    .filter(|(leaf, is_dir)| {
                        !is_dir && matches!(leaf.len(), 38 | 62) && is_hex(leaf)
                    })
                    .map(|(leaf, _)| format!("{name}/{leaf}")),
            );
        } else if is_dir && name == "pack" {
            let leaves: Vec<String> = tree
                .entries("objects/pack")
                .map_err(|e| format!("objects/pack: {e}"))?
                .into_iter()
                .filter(|(_, is_dir)| !is_dir)
                .map(|(leaf, _)| leaf)
                .collect();
            let has = |leaf: &str| leaves.iter().any(|l| l == leaf);
            for leaf in &leaves {
                let Some(rest) = leaf.strip_prefix("pack-") else {
                    continue;
                };
                let (stem, other) = match (rest.strip_suffix(".pack"), rest.strip_suffix(".idx")) {
                    (Some(stem), _) => (stem, format!("pack-{stem}.idx")),
                    (_, Some(stem)) => (stem, format!("pack-{stem}.pack")),
                    _ => continue,
                };
                if is_hex(stem) && has(&other) {
                    named.push(format!("pack/{leaf}"));
                }
            }
        }
        if named.len() > MAX_IMPORTED_FILES {
            return Err(format!(
                "more than {MAX_IMPORTED_FILES} object files; jackin does not publish them"
            ));
        }
    }
    let mut sized = Vec::with_capacity(named.len());
    for relative in named {
        match tree.kind(&format!("objects/{relative}")) {
            Ok(EntryKind::File { size: 0, .. }) if !relative.starts_with("pack/") => {}
            Ok(EntryKind::File { size, .. }) => sized.push((relative, size)),
            Ok(other) => return Err(format!("objects/{relative}: {other:?}, not a file")),
            Err(e) => return Err(format!("objects/{relative}: {e}")),
        }
    }
    Ok(sized)
}

struct Budget {
    bytes: u64,
    files: usize,
}

impl Budget {
    fn take_file(&mut self) -> Result<(), String> {
        self.files = self.files.checked_sub(1).ok_or_else(|| {
            format!("more than {MAX_IMPORTED_FILES} object files; jackin does not publish them")
        })?;
        Ok(())
    }
}

enum CopyError {
    Io(io::Error),
    TooLarge,
}

/// Copies one object file into `to`, within what is left of the budget:
/// a file whose size is past it is refused before anything is read or
/// made (a sparse file may claim far more than it holds).
fn copy_object(from: &mut std::fs::File, to: &Path, budget: &mut Budget) -> Result<(), CopyError> {
    if from.metadata().map_err(CopyError::Io)?.len() > budget.bytes {
        return Err(CopyError::TooLarge);
    }
    if let Some(parent) = to.parent() {
        fsutil::ensure_private_dir(parent).map_err(CopyError::Io)?;
    }
    let mut out = std::fs::File::create(to).map_err(CopyError::Io)?;
    match fsutil::copy_capped(from, &mut out, budget.bytes).map_err(CopyError::Io)? {
        fsutil::CappedCopy::Copied(copied) => budget.bytes -= copied,
        fsutil::CappedCopy::TooLarge => return Err(CopyError::TooLarge),
    }
    out.flush().map_err(CopyError::Io)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A sparse pack that claims 5 GiB is refused before a byte of it is
    /// copied or a file made for it (L1: it cost a 4 GiB copy at every
    /// publication).
    #[test]
    fn l1_a_sparse_object_file_is_refused_before_anything_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let pack = dir.path().join("pack-0.pack");
        std::fs::File::create(&pack)
            .unwrap()
            .set_len(5 << 30)
            .unwrap();
        let to = dir.path().join("copy/pack-0.pack");
        let mut budget = Budget {
            bytes: 1 << 20,
            files: 1,
        };
        let mut from = std::fs::File::open(&pack).unwrap();
        assert!(matches!(
            copy_object(&mut from, &to, &mut budget),
            Err(CopyError::TooLarge)
        ));
        assert!(!to.exists(), "a copy was begun");
        assert_eq!(
            io::Seek::stream_position(&mut from).unwrap(),
            0,
            "the file was read"
        );
        assert_eq!(budget.bytes, 1 << 20);
    }

    /// Every file below `dir`, and their bytes.
    fn files_and_bytes(dir: &Path) -> (usize, u64) {
        let (mut files, mut bytes) = (0, 0);
        for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
            let meta = entry.metadata().unwrap();
            if meta.is_dir() {
                let (f, b) = files_and_bytes(&entry.path());
                (files, bytes) = (files + f, bytes + b);
            } else {
                (files, bytes) = (files + 1, bytes + meta.len());
            }
        }
        (files, bytes)
    }

    /// N5: what git itself never reads as an object (a pack no index
    /// names, empty files named as loose objects) is not copied at a
    /// publication, however much of it the agent left: only the objects.
    #[test]
    fn n5_junk_beside_the_agents_objects_is_never_copied() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent.git");
        let agent_str = agent.to_str().unwrap();
        git::run(&["init", "--quiet", "--bare", agent_str]).unwrap();
        let blob = dir.path().join("blob");
        std::fs::write(&blob, "the agent's work\n").unwrap();
        git::run(&["-C", agent_str, "hash-object", "-w", blob.to_str().unwrap()]).unwrap();
        let objects = agent.join("objects");
        let junk_pack = objects.join(format!("pack/pack-{}.pack", "2".repeat(40)));
        std::fs::File::create(&junk_pack)
            .unwrap()
            .set_len(50 << 20)
            .unwrap();
        for i in 0..5000u32 {
            let fanout = objects.join(format!("{:02x}", i % 256));
            std::fs::create_dir_all(&fanout).unwrap();
            std::fs::File::create(fanout.join(format!("{:038x}", u64::from(i) + 1))).unwrap();
        }
        let into = dir.path().join("copy");
        copy_agent_objects(&agent, &into).unwrap();
        let (files, bytes) = files_and_bytes(&into);
        assert_eq!(files, 1, "only the one object is copied");
        assert!(bytes < 1 << 10, "{bytes} bytes copied");
    }

    /// What passes the budget is refused before a byte of it is copied,
    /// though no one file does: two sparse packs (with their indexes) that
    /// claim 5 GiB together.
    #[test]
    fn n5_objects_past_the_budget_are_refused_before_anything_is_copied() {
        let dir = tempfile::tempdir().unwrap();
        let agent = dir.path().join("agent.git");
        git::run(&["init", "--quiet", "--bare", agent.to_str().unwrap()]).unwrap();
        for name in ["3", "4"] {
            let stem = agent.join(format!("objects/pack/pack-{}", name.repeat(40)));
            std::fs::File::create(stem.with_extension("pack"))
                .unwrap()
                .set_len(5 << 29)
                .unwrap();
            std::fs::write(stem.with_extension("idx"), "idx").unwrap();
        }
        let into = dir.path().join("copy");
        let err = copy_agent_objects(&agent, &into).unwrap_err();
        assert!(matches!(err, ViewError::Refused(_)), "{err}");
        assert_eq!(files_and_bytes(&into), (0, 0), "a copy was begun");
    }

    /// N6: what killed publications left, in both places publications
    /// work in, is found and removed, but not while a publication holds
    /// the lock beside it.
    #[test]
    fn n6_a_quarantine_is_swept_only_when_no_publication_runs_beside_it() {
        let dir = tempfile::tempdir().unwrap();
        let unit = dir.path().join("jk-1-t");
        let repo = unit.join("git/repo");
        let (left, legacy) = (repo.join(".import-a1"), unit.join("git/.import-b2"));
        for quarantine in [&left, &legacy] {
            std::fs::create_dir_all(quarantine.join("repo.git")).unwrap();
            std::fs::write(quarantine.join("revs"), "x\n").unwrap();
        }
        std::fs::create_dir_all(repo.join("checkout")).unwrap();

        let publishing = FileLock::acquire_shared(&repo.join(QUARANTINE_LOCK)).unwrap();
        assert_eq!(quarantine_leftovers(&unit), std::slice::from_ref(&legacy));
        assert!(!remove_quarantine_leftover(&left).unwrap());
        assert!(left.exists());
        drop(publishing);

        // A child forked by a parallel test may hold a copy of the lock's
        // descriptor until it execs (it is close-on-exec): allow a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while quarantine_leftovers(&unit).len() < 2 {
            assert!(
                std::time::Instant::now() < deadline,
                "the lock was never let go"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        assert_eq!(quarantine_leftovers(&unit), [left.clone(), legacy.clone()]);
        for quarantine in [&left, &legacy] {
            assert!(remove_quarantine_leftover(quarantine).unwrap());
            assert!(!quarantine.exists());
        }
        assert!(!remove_quarantine_leftover(&repo.join("checkout")).unwrap());
        assert!(repo.join("checkout").exists());
    }
}
