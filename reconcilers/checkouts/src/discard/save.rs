//! Saving: the unfinished work of a unit's checkouts before their discard,
//! and its conversation before the unit goes, into the unit's save. One
//! checkout is saved as commits built in a [`Scratch`] repository of
//! jackin's: what was staged, the files as they were, the refs the host
//! does not hold, and a bundle of what those need beyond the base.

use std::collections::BTreeSet;
use std::path::Path;

use jackin_api::instance::Isolation;

use super::collect::{
    GitState, MAX_REFS, changed_paths, drop_refused_entries, host_refs, read_state,
};
use super::error::{DiscardError, first_line, io_at};
use super::index::{
    Save, SavedCheckout, SavedRef, loaded, read_save, save_dir, save_name, write_save,
};
use super::pins::pin_base_for_save;
use super::scratch::Scratch;
use crate::assess;
use crate::git::GitError;
use crate::isolation::{self, IsolationRecord};
use crate::saved_files::{Collector, Origin};
use crate::saved_session;
use jackin_files::fsutil::{
    BeneathDir, ensure_private_dir, read_untrusted, remove_if_exists, write_atomic,
};
use jackin_files::layout::Layout;

/// The most jackin reads of a checkout's index file.
const MAX_INDEX_BYTES: u64 = 512 << 20;

/// What [`save_before_discard`] saved just now, for the discard's event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Saved {
    pub save: String,
    pub checkouts: Vec<SavedCheckout>,
}

/// Saves the unfinished work of every isolated checkout of the unit
/// `container` before its discard. A checkout with nothing unfinished is
/// not saved; one an earlier attempt saved before its directory went is not
/// saved again (its save stands). Any failure is
/// [`DiscardError::NotSaved`], and then nothing may be deleted.
pub fn save_before_discard(
    layout: &Layout,
    container: &str,
    instance: &str,
) -> Result<Saved, DiscardError> {
    save_where(layout, container, instance, |_| true)
}

/// [`save_before_discard`] of the checkouts that `which` selects (those a
/// rollout retires).
pub fn save_where(
    layout: &Layout,
    container: &str,
    instance: &str,
    which: impl Fn(&IsolationRecord) -> bool,
) -> Result<Saved, DiscardError> {
    let records: Vec<_> = isolation::read_records(layout, container)?
        .into_iter()
        .filter(|record| which(record))
        .collect();
    let name = save_name(instance, container);
    let dir = save_dir(layout, &name);
    // Read when first needed: a home with nothing to save never has one.
    let mut save: Option<Save> = None;
    let mut saved = Vec::new();
    for record in &records {
        let not_saved = |cause: String| DiscardError::NotSaved {
            dst: record.dst.clone(),
            path: record.path.clone(),
            cause,
        };
        let present = std::fs::symlink_metadata(&record.path).is_ok();
        if !present {
            let earlier = loaded(&mut save, &dir, &name, instance, container)
                .map_err(|e| not_saved(e.to_string()))?;
            if earlier.checkouts.iter().any(|c| c.dst == record.dst) {
                continue;
            }
        }
        if assess::assess(record).is_safe() {
            continue;
        }
        let this = loaded(&mut save, &dir, &name, instance, container)
            .map_err(|e| not_saved(e.to_string()))?;
        ensure_private_dir(&dir).map_err(|e| not_saved(format!("{}: {e}", dir.display())))?;
        clear_stale_work(&dir).map_err(|e| not_saved(e.to_string()))?;
        let checkout =
            save_checkout(record, &dir, instance).map_err(|e| not_saved(e.to_string()))?;
        this.checkouts.retain(|c| c.dst != checkout.dst);
        this.checkouts.push(checkout.clone());
        write_save(&dir, this).map_err(|e| not_saved(e.to_string()))?;
        saved.push(checkout);
    }
    Ok(Saved {
        save: name,
        checkouts: saved,
    })
}

/// Saves the conversation of `obj`'s unit `container` before the unit is
/// removed, into the unit's save (beside any saved work). Returns what was
/// saved, in words for the event; none for a unit that never ran an
/// agent, or whose agent left nothing (no file in its state path, no
/// unfinished work in its checkouts, no earlier save): an empty save would
/// only be listed for the retention. A failure means the unit must stay.
pub fn save_session(
    layout: &Layout,
    container: &str,
    obj: &jackin_api::Instance,
) -> Result<Option<String>, DiscardError> {
    let instance = &obj.metadata.name;
    let name = save_name(instance, container);
    let dir = save_dir(layout, &name);
    // Clean must mean nothing would be lost: a save that holds something
    // already, or that the checkouts' work is saved into next, keeps the
    // session (its spec is what `restore-discarded --session` makes again).
    let keep_empty =
        || !matches!(read_save(&dir), Ok(None)) || holds_unfinished_work(layout, container);
    let Some(session) = saved_session::save(layout, container, obj, &dir, keep_empty)
        .map_err(|e| DiscardError::Refused(e.to_string()))?
    else {
        return Ok(None);
    };
    let mut save = None;
    let record = loaded(&mut save, &dir, &name, instance, container)?;
    let told = format!(
        "saved the conversation before removing the unit: {}; `jackin restore-discarded {name} \
         --session` makes the session again",
        session.summary()
    );
    record.session = Some(session);
    write_save(&dir, record)?;
    Ok(Some(told))
}

/// Whether any isolated checkout of the unit holds unfinished work, or may:
/// one that cannot be read or assessed counts as holding some.
fn holds_unfinished_work(layout: &Layout, container: &str) -> bool {
    isolation::read_records(layout, container).map_or(true, |records| {
        records.iter().any(|r| !assess::assess(r).is_safe())
    })
}

/// Removes what an attempt that was killed left in a save's directory.
fn clear_stale_work(dir: &Path) -> Result<(), DiscardError> {
    for entry in std::fs::read_dir(dir).map_err(io_at(dir))? {
        let path = entry.map_err(io_at(dir))?.path();
        let stale = path
            .file_name()
            .and_then(|n| n.to_str())
            .is_some_and(|n| n.starts_with(".work-"));
        if stale {
            remove_if_exists(&path).map_err(io_at(&path))?;
        }
    }
    Ok(())
}

/// Saves one checkout into `save_dir`: what was staged, the files as they
/// were, the refs the host does not hold, and the bundle they need.
fn save_checkout(
    record: &IsolationRecord,
    save_dir: &Path,
    instance: &str,
) -> Result<SavedCheckout, DiscardError> {
    let mut collector = Collector::leaving_included(record.included.clone());
    let (state, history) = match read_state(record) {
        Ok(state) => (state, true),
        Err(why) => {
            collector.skip(
                ".git",
                &format!(
                    "git cannot read the checkout ({why}): its files are saved without history"
                ),
            );
            (GitState::default(), false)
        }
    };
    let scratch = scratch_for(record, save_dir, &state)?;
    let mut saved = SavedCheckout {
        dst: record.dst.clone(),
        isolation: record.isolation,
        src: record.src.clone(),
        base_commit: record.base_commit.clone(),
        head: state.head.clone(),
        head_branch: state.head_branch.clone(),
        ..Default::default()
    };
    let index_copied = copy_index(&scratch, &state, &mut collector)?;
    if index_copied {
        saved.index = save_staged(&scratch, record, &state, instance, &mut collector)?;
    }
    // What to save of the files: what git status calls changed,
    // untracked or ignored, against the copied index (else `HEAD`).
    if std::fs::symlink_metadata(&record.path).is_ok_and(|m| m.is_dir()) {
        let tree =
            BeneathDir::open(Path::new(&record.path)).map_err(io_at(Path::new(&record.path)))?;
        let paths = if history {
            changed_paths(&scratch, record, &state, index_copied)?
        } else {
            vec![(String::new(), Origin::Untracked)]
        };
        for (path, origin) in paths {
            collector.take(&tree, &scratch.staging, &path, origin)?;
        }
    }
    saved.work = commit_files(&scratch, record, &state, &collector, &saved, instance)?;
    save_refs(&scratch, record, &state, &mut saved, &mut collector)?;
    write_bundle(&scratch, record, save_dir, &mut saved)?;
    saved.files = collector.finish();
    Ok(saved)
}

/// jackin's repository for saving `record`, its objects borrowing the
/// checkout's and the host repository's (the operator's, read-only): what
/// the bundle may leave out is what the host has.
fn scratch_for(
    record: &IsolationRecord,
    save_dir: &Path,
    state: &GitState,
) -> Result<Scratch, DiscardError> {
    let format = if record.base_commit.len() == 64 {
        "sha256"
    } else {
        "sha1"
    };
    let mut alternates = state.objects.clone();
    if let Ok(common) = crate::checkout::common_dir(&record.src) {
        let objects = common.join("objects");
        if std::fs::symlink_metadata(&objects).is_ok_and(|m| m.is_dir())
            && !alternates.contains(&objects)
        {
            alternates.push(objects);
        }
    }
    let mut reads = alternates.clone();
    for objects in &alternates {
        // The host's objects borrow what their operator wrote; a
        // checkout's alternates are the agent's, and stay unread.
        if !state.objects.contains(objects) {
            reads.extend(crate::checkout::alternates_of(objects));
        }
    }
    Scratch::new(save_dir, format, &alternates, reads, state.head.as_deref())
}

/// Copies the checkout's own index into the scratch repository (never used
/// in place: the agent wrote it); whether there is one to judge by.
fn copy_index(
    scratch: &Scratch,
    state: &GitState,
    collector: &mut Collector,
) -> Result<bool, DiscardError> {
    let Some(file) = &state.index_file else {
        return Ok(false);
    };
    match read_untrusted(file, MAX_INDEX_BYTES) {
        Ok(bytes) => {
            let path = scratch.git_dir.join("index");
            write_atomic(&path, &bytes).map_err(io_at(&path))?;
            Ok(true)
        }
        Err(e) => {
            collector.skip("index", &format!("the staged state is not saved ({e})"));
            Ok(false)
        }
    }
}

/// What was staged, as a commit on `HEAD` of the copied index's tree;
/// none when git cannot write that tree (listed as not saved).
fn save_staged(
    scratch: &Scratch,
    record: &IsolationRecord,
    state: &GitState,
    instance: &str,
    collector: &mut Collector,
) -> Result<Option<String>, DiscardError> {
    drop_refused_entries(scratch, collector)?;
    match scratch.git(None, &["write-tree"]) {
        Ok(tree) => {
            let tree = tree.trim().to_owned();
            let message = format!("jackin: what was staged in {} ({instance})", record.dst);
            let mut args = vec!["commit-tree", "--no-gpg-sign", "-m", &message];
            if let Some(head) = &state.head {
                args.extend(["-p", head]);
            }
            args.push(&tree);
            Ok(Some(scratch.git(None, &args)?.trim().to_owned()))
        }
        Err(GitError::Failed { stderr, .. }) => {
            collector.skip(
                "index",
                &format!(
                    "the staged state is not saved (git: {})",
                    first_line(&stderr)
                ),
            );
            Ok(None)
        }
        Err(e) => Err(e.into()),
    }
}

/// The files as a commit: `HEAD`'s tree with the collected files over it
/// (and the deleted ones gone), its parents `HEAD` and what was staged;
/// none when that is `HEAD` itself with nothing staged.
fn commit_files(
    scratch: &Scratch,
    record: &IsolationRecord,
    state: &GitState,
    collector: &Collector,
    saved: &SavedCheckout,
    instance: &str,
) -> Result<Option<String>, DiscardError> {
    match &state.head {
        Some(head) => scratch.git(None, &["read-tree", head])?,
        None => scratch.git(None, &["read-tree", "--empty"])?,
    };
    if !collector.deleted.is_empty() {
        let list = scratch.input("deleted", &nul_list(&collector.deleted))?;
        scratch.git_fed(
            Some(&scratch.staging),
            &["update-index", "--force-remove", "-z", "--stdin"],
            Some(&list),
        )?;
    }
    if !collector.saved.is_empty() {
        let list = scratch.input("saved", &nul_list(&collector.saved))?;
        scratch.git_fed(
            Some(&scratch.staging),
            &["update-index", "--add", "--replace", "-z", "--stdin"],
            Some(&list),
        )?;
    }
    let tree = scratch.git(None, &["write-tree"])?.trim().to_owned();
    let head_tree = match &state.head {
        Some(head) => Some(
            scratch
                .git(None, &["rev-parse", &format!("{head}^{{tree}}")])?
                .trim()
                .to_owned(),
        ),
        None => None,
    };
    if head_tree.as_deref() == Some(tree.as_str()) && saved.index.is_none() {
        return Ok(None);
    }
    let message = format!(
        "jackin: the uncommitted files of {} as {instance} left them",
        record.dst
    );
    let mut args = vec!["commit-tree", "--no-gpg-sign", "-m", &message];
    if let Some(head) = &state.head {
        args.extend(["-p", head]);
    }
    if let Some(index) = &saved.index {
        args.extend(["-p", index]);
    }
    args.push(&tree);
    Ok(Some(scratch.git(None, &args)?.trim().to_owned()))
}

/// The refs the host does not hold as they are, the stash and `HEAD`,
/// noted in `saved` and kept as refs of the scratch repository (what the
/// bundle takes), with the work and index commits; a ref whose commits
/// the checkout lacks is listed as not saved.
fn save_refs(
    scratch: &Scratch,
    record: &IsolationRecord,
    state: &GitState,
    saved: &mut SavedCheckout,
    collector: &mut Collector,
) -> Result<(), DiscardError> {
    let host = host_refs(&record.src);
    let mut wanted: Vec<(String, String)> = Vec::new();
    for (name, tip) in state.refs.iter().take(MAX_REFS) {
        let same_on_host = host.get(name) == Some(tip);
        let at_base = name.starts_with("refs/heads/") && *tip == record.base_commit;
        if !same_on_host && !at_base {
            wanted.push((name.clone(), tip.clone()));
        }
    }
    let commits: Vec<&str> = wanted
        .iter()
        .map(|(_, tip)| tip.as_str())
        .chain(state.stash.iter().map(|(_, c)| c.as_str()))
        .chain(state.head.as_deref())
        .collect();
    let present_commits = present_objects(scratch, &commits)?;
    let mut refs_in_bundle = 0;
    let mut keep = |commit: &str| -> Result<(), DiscardError> {
        scratch.set_ref(&format!("refs/saved/{refs_in_bundle}"), commit)?;
        refs_in_bundle += 1;
        Ok(())
    };
    for (name, tip) in &wanted {
        if !present_commits.contains(tip.as_str()) {
            collector.skip(name, "its commits are not in the checkout");
            continue;
        }
        keep(tip)?;
        note_ref(saved, name, tip);
    }
    for (message, commit) in &state.stash {
        if !present_commits.contains(commit.as_str()) {
            collector.skip("refs/stash", "an entry's commits are not in the checkout");
            continue;
        }
        keep(commit)?;
        saved.stash.push(SavedRef {
            name: message.clone(),
            commit: commit.clone(),
        });
    }
    if let Some(head) = &state.head
        && present_commits.contains(head.as_str())
    {
        keep(head)?;
    }
    for commit in [&saved.work, &saved.index].into_iter().flatten() {
        keep(commit)?;
    }
    Ok(())
}

/// Notes the saved ref `name` as a branch, a tag or another ref.
fn note_ref(saved: &mut SavedCheckout, name: &str, tip: &str) {
    let entry = SavedRef {
        name: name.to_owned(),
        commit: tip.to_owned(),
    };
    if let Some(branch) = name.strip_prefix("refs/heads/") {
        saved.branches.push(SavedRef {
            name: branch.to_owned(),
            ..entry
        });
    } else if let Some(tag) = name.strip_prefix("refs/tags/") {
        saved.tags.push(SavedRef {
            name: tag.to_owned(),
            ..entry
        });
    } else {
        saved.other_refs.push(entry);
    }
}

/// The bundle: what the scratch repository's refs need beyond the base,
/// when the host repository still has the base (a worktree's base then
/// pinned for the save); everything, when it does not. No bundle when the
/// host holds all of it.
fn write_bundle(
    scratch: &Scratch,
    record: &IsolationRecord,
    save_dir: &Path,
    saved: &mut SavedCheckout,
) -> Result<(), DiscardError> {
    let base_on_host = crate::checkout::in_host(
        &record.src,
        &[
            "cat-file",
            "-e",
            &format!("{}^{{commit}}", record.base_commit),
        ],
    )
    .is_ok();
    let mut revs = vec!["--all"];
    if base_on_host {
        revs.extend(["--not", record.base_commit.as_str()]);
    }
    let mut count = vec!["rev-list", "--count", "--objects"];
    count.extend(&revs);
    let needed: u64 = scratch.git(None, &count)?.trim().parse().unwrap_or(1);
    let file = format!("{}.bundle", isolation::slug(&record.dst));
    if needed == 0 {
        // An earlier attempt's bundle, which this save no longer needs.
        let stale = save_dir.join(&file);
        return remove_if_exists(&stale).map_err(io_at(&stale));
    }
    let out = scratch.work.path().join("out.bundle");
    let out_str = out.to_str().expect("jackin's paths are UTF-8");
    let mut args = vec!["bundle", "create", "-q", out_str];
    args.extend(&revs);
    scratch.git(None, &args)?;
    let to = save_dir.join(&file);
    std::fs::rename(&out, &to).map_err(io_at(&to))?;
    saved.bundle = Some(file);
    if base_on_host && record.isolation == Isolation::Worktree {
        saved.base_pin = Some(pin_base_for_save(record, save_dir)?);
    }
    Ok(())
}

/// `paths` as git reads them with `-z`: each ended by a NUL.
fn nul_list(paths: &[String]) -> Vec<u8> {
    let mut bytes = Vec::new();
    for path in paths {
        bytes.extend_from_slice(path.as_bytes());
        bytes.push(0);
    }
    bytes
}

/// Which of `commits` the scratch repository (with its alternates) has as
/// commits or tags.
fn present_objects<'a>(
    scratch: &Scratch,
    commits: &[&'a str],
) -> Result<BTreeSet<&'a str>, DiscardError> {
    if commits.is_empty() {
        return Ok(Default::default());
    }
    let lines: String = commits.iter().map(|c| format!("{c}\n")).collect();
    let input = scratch.input("commits", lines.as_bytes())?;
    let out = scratch.git_fed(None, &["cat-file", "--batch-check"], Some(&input))?;
    let found: BTreeSet<&str> = out
        .lines()
        .filter_map(|line| {
            let mut words = line.split(' ');
            let (name, kind) = (words.next()?, words.next()?);
            matches!(kind, "commit" | "tag").then_some(name)
        })
        .collect();
    Ok(commits
        .iter()
        .copied()
        .filter(|c| found.contains(c))
        .collect())
}
