//! Restoring: a save brought back, into its host repository as branches
//! under `jackin/restored/<save>/`, or as a new checkout directory that is
//! the discarded one again (a new one of its own, or a new unit's clone
//! checkout made just then). It never writes into a directory it did not
//! make just then, and the saved objects reach a repository only through
//! a confined `git index-pack --strict`.

use std::collections::BTreeMap;
use std::io::{self, BufRead, Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

use super::error::{DiscardError, NEUTRAL_ATTRIBUTES, first_line, io_at};
use super::index::{RestoredInto, SavedCheckout, find, listed, mark_restored, save_dir};
use crate::git::{self, GitError};
use crate::isolation;
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

/// The save `name`'s clone checkouts brought back into the unit
/// `container`'s own checkouts, for a session made again whose spec mounts
/// them (`mounts`): each checkout is made now, as a start makes it, and
/// the saved work is rebuilt in it as `--to` rebuilds it, before any
/// container binds it. Refuses a unit that has a checkout there already:
/// nothing the agent or the operator made is written over. A worktree's
/// work stays in the host repository's branches only. Returns what was
/// done, line by line.
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
        let mount = mounts
            .iter()
            .find(|m| m.dst == checkout.dst && m.isolation == Isolation::Clone);
        let Some(mount) = mount.filter(|_| checkout.isolation == Isolation::Clone) else {
            lines.push(format!(
                "{}: not restored into the new session's checkout (it is not a clone its \
                 spec mounts there); its work is in the host repository's branches",
                checkout.dst
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
        isolation::prepare(layout, container, std::slice::from_ref(&mount))?;
        let records = isolation::read_records(layout, container)?;
        let record = records
            .iter()
            .find(|r| r.dst == checkout.dst)
            .expect("prepare recorded the checkout it made");
        lines.extend(rebuild_in_clone(&dir, checkout, Path::new(&record.path))?);
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
    let made = rebuild_in_clone(save_dir, checkout, to);
    if made.is_err() {
        // The directory is the clone made just now, and nothing else.
        let _ = remove_if_exists(to);
    }
    made
}

/// A clone of the host repository, made just now for a restore: every git
/// in it is confined to writing it.
struct RestoredClone {
    dir: PathBuf,
    work: tempfile::TempDir,
}

impl RestoredClone {
    fn git(&self, args: &[&str]) -> Result<String, GitError> {
        git::run_untrusted_writing(self.dir_str(), args, &[], &[&self.dir])
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    fn git_fed(&self, args: &[&str], input: &Path) -> Result<String, GitError> {
        git::run_untrusted_fed(self.dir_str(), args, &[], &[&self.dir], Some(input))
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    fn dir_str(&self) -> &str {
        self.dir.to_str().expect("it was UTF-8")
    }
}

/// Makes the clone at `to` the discarded checkout: the saved objects, its
/// refs, stash and `HEAD`, then its files and index.
fn rebuild_in_clone(
    save_dir: &Path,
    checkout: &SavedCheckout,
    to: &Path,
) -> Result<Vec<String>, DiscardError> {
    let dir = std::fs::canonicalize(to).map_err(io_at(to))?;
    let work = tempfile::Builder::new()
        .prefix("jackin-restore-")
        .tempdir_in(dir.join(".git"))
        .map_err(io_at(&dir))?;
    let clone = RestoredClone { dir, work };
    if let Some(bundle) = &checkout.bundle {
        land_objects(
            &save_dir.join(bundle),
            clone.dir_str(),
            &clone.dir,
            clone.work.path(),
        )?;
    }
    restore_refs(&clone, checkout)?;
    for entry in checkout.stash.iter().rev() {
        clone.git(&["stash", "store", "-q", "-m", &entry.name, &entry.commit])?;
    }
    match (&checkout.head_branch, &checkout.head) {
        (Some(branch), _) => {
            clone.git(&["symbolic-ref", "HEAD", &format!("refs/heads/{branch}")])?;
        }
        (None, Some(head)) => {
            clone.git(&["update-ref", "--no-deref", "HEAD", head])?;
        }
        (None, None) => {}
    }
    // The files as they were, byte for byte: no filter or conversion
    // the tree's attributes name, then the index as it was staged.
    let attributes = clone.dir.join(".git/info/attributes");
    write_atomic(&attributes, NEUTRAL_ATTRIBUTES.as_bytes()).map_err(io_at(&attributes))?;
    if let Some(files) = checkout.work.as_ref().or(checkout.head.as_ref()) {
        clone.git(&["read-tree", "--reset", "-u", files])?;
    }
    if let Some(staged) = checkout.index.as_ref().or(checkout.head.as_ref()) {
        clone.git(&["read-tree", staged])?;
    }
    remove_if_exists(&attributes).map_err(io_at(&attributes))?;
    let mut lines = vec![format!(
        "{}: restored into {} from {}",
        checkout.dst,
        clone.dir.display(),
        checkout.src
    )];
    lines.push(format!("  {}", checkout.summary()));
    if let Some(branch) = &checkout.head_branch {
        lines.push(format!("  HEAD is on {branch}"));
    }
    Ok(lines)
}

/// The checkout's branches, tags and other refs in the clone, and the
/// branch `HEAD` was on where it was (the clone's branch of that name is
/// the host's, which may have moved on since), in one update.
fn restore_refs(clone: &RestoredClone, checkout: &SavedCheckout) -> Result<(), DiscardError> {
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
    let input = clone.work.path().join("updates");
    write_atomic(&input, &updates).map_err(io_at(&input))?;
    clone.git_fed(
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
