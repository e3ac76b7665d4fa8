//! Restoring: a save brought back, into its host repository as branches
//! under `jackin/restored/<save>/`, or as a new checkout directory that is
//! the discarded one again (a new one of its own, or a new unit's clone or
//! worktree checkout made just then; a worktree's objects land in the
//! unit's own repository, never the host's). It never writes into a
//! directory it did not make just then, and the saved objects reach a
//! repository only through a confined `git index-pack --strict`.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::{DiscardError, NEUTRAL_ATTRIBUTES, first_line, io_at};
use super::index::{RestoredInto, Save, SavedCheckout, find, listed, mark_restored, save_dir};
use crate::checkout::{SCRATCH_PREFIX, path_str};
use crate::git::{self, GitError};
use crate::{isolation, worktree};
use jackin_api::instance::{Isolation, MountSpec};
use jackin_files::fsutil::{
    Links, ensure_real_dir_below, open_regular_file, remove_if_exists, write_atomic,
};
use jackin_files::layout::{Layout, cap};

/// Brings back the save `name` (or the one save of the instance `name`):
/// with `to`, as a new checkout directory there; without, as branches in
/// each checkout's host repository under `jackin/restored/<save>/`.
/// `mount` picks one checkout by its destination. The save is marked
/// restored. Returns what was done, line by line.
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
    let into = match to {
        Some(to) => RestoredInto::Directory {
            path: to.display().to_string(),
        },
        None => RestoredInto::Branches,
    };
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
    if let Err(e) = mark_restored(layout, &save.name, into) {
        lines.push(format!("warning: the save was not marked restored: {e}"));
    }
    Ok(lines)
}

/// The save `name`'s checkouts brought back into the unit `container`'s
/// own checkouts, for a session made again whose spec mounts them
/// (`mounts`) at the same place with the same isolation: each checkout is
/// made now, as a start makes it (a worktree on the saved base, not the
/// host's `HEAD`), and the saved work is rebuilt in it as `--to` rebuilds
/// it, before any container binds it. Refuses a unit that has a checkout
/// there already: nothing the agent or the operator made is written over.
/// Returns what was done, line by line.
pub fn restore_into_unit(
    layout: &Layout,
    name: &str,
    container: &str,
    mounts: &[MountSpec],
) -> Result<Vec<String>, DiscardError> {
    let save = find(layout, name)?;
    let dir = save_dir(layout, &save.name);
    let mut lines = Vec::new();
    for checkout in &save.checkouts {
        let mount = mounts.iter().find(|m| {
            m.dst == checkout.dst
                && m.isolation == checkout.isolation
                && m.isolation != Isolation::Shared
        });
        let Some(mount) = mount else {
            lines.push(format!(
                "{}: not restored into the new session's checkout (its spec mounts no {} \
                 there); its work is in the host repository's branches",
                checkout.dst,
                checkout.isolation.as_str()
            ));
            continue;
        };
        let records = isolation::read_records(layout, container)?;
        if let Some(record) = records.iter().find(|r| r.dst == checkout.dst) {
            return Err(DiscardError::Refused(format!(
                "{}: the unit has a checkout there already ({}): the saved work is never \
                 restored over it",
                checkout.dst, record.path
            )));
        }
        // The saved repository, as the save names it (a spec's `~/` is
        // expanded there).
        let mount = MountSpec {
            src: checkout.src.clone(),
            ..mount.clone()
        };
        if checkout.isolation == Isolation::Worktree {
            lines.extend(restore_into_worktree(
                layout, &dir, &save, checkout, container, &mount,
            )?);
            continue;
        }
        let prepared = isolation::prepare(layout, container, std::slice::from_ref(&mount))?;
        let included = prepared.included.iter();
        lines.extend(included.filter_map(|(dst, files)| files.summary(dst)));
        let records = isolation::read_records(layout, container)?;
        let record = records
            .iter()
            .find(|r| r.dst == checkout.dst)
            .expect("prepare recorded the checkout it made");
        let target = RestoredCheckout::clone_at(Path::new(&record.path))?;
        lines.extend(rebuild(&dir, checkout, &target)?);
    }
    Ok(lines)
}

/// A saved worktree's work in the unit `container`'s own worktree,
/// made now on the saved base (which the save pins in the host
/// repository): the saved objects land in the unit's repository, never in
/// the host's, and the branch the agent was on, the old unit's scratch
/// branch, is the new unit's, which jackin publishes as it publishes any.
/// What a failure half-way leaves is removed with jackin's refs for it.
fn restore_into_worktree(
    layout: &Layout,
    save_dir: &Path,
    save: &Save,
    checkout: &SavedCheckout,
    container: &str,
    mount: &MountSpec,
) -> Result<Vec<String>, DiscardError> {
    let base = checkout.base_commit.as_str();
    if !worktree::host_has_commit(&checkout.src, base)? {
        return Ok(vec![format!(
            "{}: not restored into the new session's checkout: the host repository {} no \
             longer holds the base commit {base} its saved work builds on",
            checkout.dst, checkout.src
        )]);
    }
    let made = isolation::prepare_at_base(layout, container, mount, base)
        .map_err(DiscardError::from)
        .and_then(|record| {
            let old = format!("{SCRATCH_PREFIX}{}", save.unit);
            let new = record.scratch_branch.clone().unwrap_or_default();
            let target = RestoredCheckout::worktree(&record)?;
            let included = crate::include::Included {
                copied: record.included.clone(),
                left_out: record.not_included.clone(),
            };
            let mut lines: Vec<String> = included.summary(&record.dst).into_iter().collect();
            lines.extend(rebuild(
                save_dir,
                &onto_branch(checkout, &old, &new),
                &target,
            )?);
            let mut made_on = format!("  made on the saved base {base}");
            let had_old = checkout.head_branch.as_deref() == Some(old.as_str())
                || checkout.branches.iter().any(|b| b.name == old);
            if had_old {
                made_on.push_str(&format!(
                    "; {old}'s commits are on {new}, published as the new session's branch"
                ));
            }
            lines.push(made_on);
            Ok(lines)
        });
    if made.is_err() {
        // The checkout made just now, and jackin's refs for it: nothing
        // of the operator's, nor of the agent's but the save's copy.
        let removed = isolation::remove_where(layout, container, |r| r.dst == checkout.dst);
        if let Err(e) = removed {
            tracing::warn!(
                "{}: the checkout made for the restore stays: {e}",
                checkout.dst
            );
        }
    }
    made
}

/// The saved checkout with the branch `old` named `new`: where it was
/// `HEAD`'s branch, or a saved branch.
fn onto_branch(checkout: &SavedCheckout, old: &str, new: &str) -> SavedCheckout {
    let rename = |name: &mut String| {
        if name == old {
            *name = new.to_owned();
        }
    };
    let mut renamed = checkout.clone();
    if let Some(branch) = renamed.head_branch.as_mut() {
        rename(branch);
    }
    for branch in &mut renamed.branches {
        rename(&mut branch.name);
    }
    renamed
}

/// Lands a save's objects in a repository (`repo`, whose objects are
/// `objects`): the pack of its bundle, checked by a confined `git
/// index-pack --strict` that may write only `objects`, and read besides
/// the repository only `reads` (what it borrows).
fn land_objects(
    bundle: &Path,
    repo: &str,
    objects: &Path,
    scratch: &Path,
    reads: &[PathBuf],
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
    let made =
        RestoredCheckout::clone_at(to).and_then(|target| rebuild(save_dir, checkout, &target));
    if made.is_err() {
        // The directory is the clone made just now, and nothing else.
        let _ = remove_if_exists(to);
    }
    made
}

/// A checkout made just now for a restore, and its repository: every git
/// over them is confined to writing them.
struct RestoredCheckout {
    /// Where git runs: the clone, or the worktree's repository.
    dir: PathBuf,
    /// The repository: the clone's `.git`, or the worktree's own.
    git_dir: PathBuf,
    /// The checkout's files.
    work_tree: PathBuf,
    /// What git reads besides them: the host's objects a worktree borrows.
    reads: Vec<PathBuf>,
    /// jackin's files for the restore, inside the repository.
    work: tempfile::TempDir,
}

impl RestoredCheckout {
    /// A clone at `to`, with its `.git` inside.
    fn clone_at(to: &Path) -> Result<Self, DiscardError> {
        let dir = std::fs::canonicalize(to).map_err(io_at(to))?;
        let git_dir = dir.join(".git");
        Ok(Self {
            reads: crate::checkout::host_reads(path_str(&dir)),
            work: work_dir_in(&git_dir)?,
            work_tree: dir.clone(),
            git_dir,
            dir,
        })
    }

    /// A worktree that `record` describes, with its repository beside it
    /// and the host's objects that repository borrows.
    fn worktree(record: &isolation::IsolationRecord) -> Result<Self, DiscardError> {
        let git_dir = PathBuf::from(record.git_place());
        Ok(Self {
            reads: worktree::objects_reads(record)?,
            work: work_dir_in(&git_dir)?,
            work_tree: PathBuf::from(&record.path),
            dir: git_dir.clone(),
            git_dir,
        })
    }

    fn git(&self, args: &[&str]) -> Result<String, GitError> {
        self.git_fed_maybe(args, None)
    }

    fn git_fed(&self, args: &[&str], input: &Path) -> Result<String, GitError> {
        self.git_fed_maybe(args, Some(input))
    }

    fn git_fed_maybe(&self, args: &[&str], input: Option<&Path>) -> Result<String, GitError> {
        let git_dir = format!("--git-dir={}", self.git_dir.display());
        let work_tree = format!("--work-tree={}", self.work_tree.display());
        let mut argv = vec![git_dir.as_str(), work_tree.as_str()];
        argv.extend_from_slice(args);
        let reads: Vec<&Path> = self.reads.iter().map(PathBuf::as_path).collect();
        let writes = [self.git_dir.as_path(), self.work_tree.as_path()];
        git::run_untrusted_fed(self.dir_str(), &argv, &reads, &writes, input)
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    fn dir_str(&self) -> &str {
        path_str(&self.dir)
    }
}

/// A directory of jackin's for a restore's files, in the repository
/// `git_dir` made just now.
fn work_dir_in(git_dir: &Path) -> Result<tempfile::TempDir, DiscardError> {
    tempfile::Builder::new()
        .prefix("jackin-restore-")
        .tempdir_in(git_dir)
        .map_err(io_at(git_dir))
}

/// Makes the checkout made just now (`target`) the discarded one: the
/// saved objects, its refs, stash and `HEAD`, then its files and index.
fn rebuild(
    save_dir: &Path,
    checkout: &SavedCheckout,
    target: &RestoredCheckout,
) -> Result<Vec<String>, DiscardError> {
    if let Some(bundle) = &checkout.bundle {
        land_objects(
            &save_dir.join(bundle),
            target.dir_str(),
            &target.git_dir.join("objects"),
            target.work.path(),
            &target.reads,
        )?;
    }
    restore_refs(target, checkout)?;
    for entry in checkout.stash.iter().rev() {
        target.git(&["stash", "store", "-q", "-m", &entry.name, &entry.commit])?;
    }
    match (&checkout.head_branch, &checkout.head) {
        (Some(branch), _) => {
            target.git(&["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")])?;
        }
        (None, Some(head)) => {
            target.git(&["update-ref", "--no-deref", "HEAD", head])?;
        }
        (None, None) => {}
    }
    // The files as they were, byte for byte: no filter or conversion
    // the tree's attributes name, then the index as it was staged.
    let attributes = target.git_dir.join("info/attributes");
    write_atomic(&attributes, NEUTRAL_ATTRIBUTES.as_bytes()).map_err(io_at(&attributes))?;
    if let Some(files) = checkout.work.as_ref().or(checkout.head.as_ref()) {
        target.git(&["read-tree", "--reset", "-u", files])?;
    }
    if let Some(staged) = checkout.index.as_ref().or(checkout.head.as_ref()) {
        target.git(&["read-tree", staged])?;
    }
    remove_if_exists(&attributes).map_err(io_at(&attributes))?;
    let mut lines = vec![format!(
        "{}: restored into {} from {}",
        checkout.dst,
        target.work_tree.display(),
        checkout.src
    )];
    lines.push(format!("  {}", checkout.summary()));
    if let Some(branch) = &checkout.head_branch {
        lines.push(format!("  HEAD is on {branch}"));
    }
    Ok(lines)
}

/// The checkout's branches, tags and other refs in the checkout made just
/// now, and the branch `HEAD` was on where it was (a clone's branch of that
/// name is the host's, and a worktree's scratch branch its base, either of
/// which may have moved on since), in one update.
fn restore_refs(target: &RestoredCheckout, checkout: &SavedCheckout) -> Result<(), DiscardError> {
    let mut refs: BTreeMap<String, &str> = BTreeMap::default();
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
    if refs.is_empty() {
        return Ok(());
    }
    let mut updates = Vec::new();
    for (name, commit) in &refs {
        updates.extend_from_slice(format!("update {name}").as_bytes());
        updates.push(0);
        updates.extend_from_slice(commit.as_bytes());
        updates.extend_from_slice(b"\0\0");
    }
    let input = target.work.path().join("updates");
    write_atomic(&input, &updates).map_err(io_at(&input))?;
    target.git_fed(
        &["update-ref", "-m", "jackin: restored", "-z", "--stdin"],
        &input,
    )?;
    Ok(())
}

/// The saved commits as branches of the host repository, under
/// `jackin/restored/<save>/` (with the checkout's name after it when the
/// save holds several): its branches, `stash-N`, `uncommitted` (the files
/// on top of `HEAD`) and `HEAD` when it was detached. Refuses when any of
/// them exists.
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
    let mut wanted = refs_for_host(checkout, &prefix);
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
        let reads = crate::checkout::host_reads(src);
        land_objects(&save_dir.join(bundle), src, &objects, work.path(), &reads)?;
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

/// The refs a restore into the host makes under `prefix`: each as its full
/// name, the commit, and what it was, in words.
fn refs_for_host(checkout: &SavedCheckout, prefix: &str) -> Vec<(String, String, String)> {
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
    wanted
}
