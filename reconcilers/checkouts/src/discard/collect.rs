//! Collecting: what git says of a checkout (its `HEAD`, refs and stash,
//! where its index and objects are), read through confined git, and which
//! of its paths hold work to save (what status calls changed, untracked or
//! ignored, judged against the copied index in jackin's [`Scratch`]
//! repository). It reads the checkout and writes nothing of it.

use std::collections::BTreeMap;
use std::io;
use std::path::{Path, PathBuf};

use jackin_api::instance::Isolation;

use super::error::DiscardError;
use super::scratch::Scratch;
use crate::git::{self, GitError};
use crate::isolation::{self, IsolationRecord};
use crate::legacy_worktree;
use crate::saved_files::{Collector, Origin, refused_by_git};
use jackin_files::fsutil::read_untrusted;

/// The most refs, and stash entries, a save takes of one checkout.
pub(super) const MAX_REFS: usize = 10_000;

/// What git says of the checkout, read confined.
#[derive(Debug, Default)]
pub(super) struct GitState {
    pub(super) head: Option<String>,
    pub(super) head_branch: Option<String>,
    /// Refs worth saving, by full name.
    pub(super) refs: Vec<(String, String)>,
    /// `(message, commit)`, newest first.
    pub(super) stash: Vec<(String, String)>,
    /// The checkout's index file, when it is a regular file.
    pub(super) index_file: Option<PathBuf>,
    /// Where the checkout's objects are (the alternates of jackin's own
    /// repository).
    pub(super) objects: Vec<PathBuf>,
}

/// Runs a confined git over the checkout itself, as the assessment does:
/// the checkout is the work tree, whatever its config says.
fn in_checkout(record: &IsolationRecord, args: &[&str]) -> Result<String, GitError> {
    let work_tree = format!("--work-tree={}", record.path);
    // A worktree's repository is named, never found (see `assess`).
    let place = record.git_place();
    let git_dir = format!("--git-dir={place}");
    let mut argv = vec![work_tree.as_str()];
    if place != record.path {
        argv.insert(0, git_dir.as_str());
    }
    argv.extend_from_slice(args);
    let reads = isolation::repository_reads(record)
        .map_err(|e| GitError::Spawn(io::Error::other(e.to_string())))?;
    let reads: Vec<&Path> = reads.iter().map(PathBuf::as_path).collect();
    git::run_untrusted_reading(&record.git_place(), &argv, &reads)
        .map(|out| String::from_utf8_lossy(&out).into_owned())
}

/// `Ok(None)` when git said no (exit status not zero, nothing else wrong).
fn answer(result: Result<String, GitError>) -> Result<Option<String>, GitError> {
    match result {
        Ok(out) => Ok(Some(out.trim().to_owned())),
        Err(GitError::Failed { .. }) => Ok(None),
        Err(e) => Err(e),
    }
}

fn is_object_name(text: &str) -> bool {
    matches!(text.len(), 40 | 64)
        && text
            .bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// A ref name as jackin passes it to git: no option, no control or space.
fn plain_ref(name: &str) -> bool {
    !name.is_empty() && !name.starts_with('-') && name.bytes().all(|b| b > b' ' && b != 0x7f)
}

/// The refs of the host repository, by full name.
pub(super) fn host_refs(src: &str) -> BTreeMap<String, String> {
    let Ok(out) = crate::checkout::in_host(
        src,
        &["for-each-ref", "--format=%(refname)%00%(objectname)"],
    ) else {
        return Default::default();
    };
    String::from_utf8_lossy(&out)
        .lines()
        .filter_map(|line| {
            let (name, tip) = line.split_once('\0')?;
            Some((name.to_owned(), tip.to_owned()))
        })
        .collect()
}

/// What git says of the checkout; why git cannot read it, when it cannot
/// (then its files are saved without history).
pub(super) fn read_state(record: &IsolationRecord) -> Result<GitState, String> {
    if record.is_legacy_worktree() {
        read_legacy_worktree_state(record)
    } else {
        read_repository_state(record)
    }
}

/// What git says of a repository of the checkout's own: a clone's `.git`,
/// or a worktree's repository beside it.
fn read_repository_state(record: &IsolationRecord) -> Result<GitState, String> {
    let dir = record.path.as_str();
    let dot_git = match record.isolation {
        Isolation::Worktree => {
            crate::worktree::check_repository(record).map_err(|e| e.to_string())?;
            PathBuf::from(record.git_place())
        }
        _ => Path::new(dir).join(".git"),
    };
    let objects = dot_git.join("objects");
    for (path, what) in [(&dot_git, "repository"), (&objects, "repository's objects")] {
        if !std::fs::symlink_metadata(path).is_ok_and(|m| m.is_dir()) {
            return Err(format!("its {what} is not a directory"));
        }
    }
    let fail = |e: GitError| e.to_string();
    let head = answer(in_checkout(
        record,
        &["rev-parse", "--verify", "-q", "HEAD^{commit}"],
    ))
    .map_err(fail)?
    .filter(|h| is_object_name(h));
    let head_branch = answer(in_checkout(record, &["symbolic-ref", "-q", "HEAD"]))
        .map_err(fail)?
        .and_then(|r| r.strip_prefix("refs/heads/").map(str::to_owned))
        .filter(|b| plain_ref(b));
    let listed = in_checkout(
        record,
        &["for-each-ref", "--format=%(refname)%00%(objectname)"],
    )
    .map_err(fail)?;
    let mut refs = Vec::new();
    let mut has_stash = false;
    for line in listed.lines() {
        let Some((name, tip)) = line.split_once('\0') else {
            continue;
        };
        if name == "refs/stash" {
            has_stash = true;
            continue;
        }
        if name.starts_with("refs/remotes/") || !plain_ref(name) || !is_object_name(tip) {
            continue;
        }
        refs.push((name.to_owned(), tip.to_owned()));
    }
    let mut stash = Vec::new();
    if has_stash {
        let entries = in_checkout(
            record,
            &["log", "-g", "--format=%H%x00%gs", "refs/stash", "--"],
        )
        .map_err(fail)?;
        for line in entries.lines().take(MAX_REFS) {
            if let Some((commit, message)) = line.split_once('\0')
                && is_object_name(commit)
            {
                stash.push((message.to_owned(), commit.to_owned()));
            }
        }
    }
    let index = dot_git.join("index");
    Ok(GitState {
        head,
        head_branch,
        refs,
        stash,
        index_file: std::fs::symlink_metadata(&index)
            .is_ok_and(|m| m.is_file())
            .then_some(index),
        objects: vec![objects],
    })
}

/// What git says of a worktree an earlier jackin made: its refs are the
/// host repository's, its `HEAD` and index in its entry there.
fn read_legacy_worktree_state(record: &IsolationRecord) -> Result<GitState, String> {
    let branch = record.scratch_branch.clone().unwrap_or_default();
    let tip_of = |name: &str| -> Result<Option<String>, String> {
        let full = format!("refs/heads/{name}");
        answer(
            crate::checkout::in_host(&record.src, &["rev-parse", "--verify", "-q", &full])
                .map(|out| String::from_utf8_lossy(&out).into_owned()),
        )
        .map(|tip| tip.filter(|t| is_object_name(t)))
        .map_err(|e| e.to_string())
    };
    let scratch_tip = tip_of(&branch)?;
    let common = crate::checkout::git_dir_of(record).map_err(|e| e.to_string())?;
    let mut objects = vec![common.join("objects")];
    let view = legacy_worktree::view_objects(record);
    if std::fs::symlink_metadata(&view).is_ok_and(|m| m.is_dir()) {
        objects.push(view);
    }
    let mut state = GitState {
        objects,
        ..Default::default()
    };
    if let Some(tip) = &scratch_tip
        && *tip != record.base_commit
    {
        state
            .refs
            .push((format!("refs/heads/{branch}"), tip.clone()));
    }
    if std::fs::symlink_metadata(&record.path).is_err() {
        // Gone: its scratch branch is all there is.
        state.head = scratch_tip;
        state.head_branch = Some(branch);
        return Ok(state);
    }
    legacy_worktree::check_link(record).map_err(|e| e.to_string())?;
    let admin = PathBuf::from(record.admin_dir.clone().unwrap_or_default());
    let head = read_untrusted(&admin.join("HEAD"), 4096)
        .map_err(|e| format!("{}: {e}", admin.join("HEAD").display()))?;
    let head = String::from_utf8_lossy(&head).trim().to_owned();
    match head.strip_prefix("ref: refs/heads/") {
        Some(name) if plain_ref(name) => {
            state.head = if name == branch {
                scratch_tip
            } else {
                tip_of(name)?
            };
            state.head_branch = Some(name.to_owned());
        }
        Some(_) => {
            return Err(format!(
                "its HEAD names {:?}",
                head.chars().take(80).collect::<String>()
            ));
        }
        None if is_object_name(&head) => state.head = Some(head),
        None => return Err("its HEAD names no commit".into()),
    }
    let index = admin.join("index");
    state.index_file = std::fs::symlink_metadata(&index)
        .is_ok_and(|m| m.is_file())
        .then_some(index);
    Ok(state)
}

/// Takes out of the copied index every entry whose path git refuses (a
/// `..`, a `.git`: see [`refused_by_git`]), listing each as not saved, so
/// that the rest of what was staged is saved and can come back: one such
/// path would make the whole save unrestorable (`fsck` refuses its tree).
/// An index git cannot list is left for `write-tree` to judge.
pub(super) fn drop_refused_entries(
    scratch: &Scratch,
    collector: &mut Collector,
) -> Result<(), DiscardError> {
    let listed = match scratch.git(None, &["ls-files", "--stage", "-z"]) {
        Ok(listed) => listed,
        Err(GitError::Failed { .. }) => return Ok(()),
        Err(e) => return Err(e.into()),
    };
    let mut kept = Vec::new();
    let mut refused = false;
    for entry in listed.split('\0').filter(|e| !e.is_empty()) {
        let Some((info, path)) = entry.split_once('\t') else {
            continue;
        };
        if refused_by_git(path, info.starts_with("120000")) {
            collector.skip(path, "staged under a path git refuses; not saved");
            refused = true;
        } else {
            kept.extend_from_slice(entry.as_bytes());
            kept.push(0);
        }
    }
    if refused {
        let input = scratch.input("index-info", &kept)?;
        scratch.git(None, &["read-tree", "--empty"])?;
        scratch.git_fed(None, &["update-index", "-z", "--index-info"], Some(&input))?;
    }
    Ok(())
}

/// The paths git status lists in the checkout, read through jackin's
/// repository with the copied index (the checkout's own config, hooks and
/// attributes play no part). An untracked or ignored directory is listed
/// whole (with a trailing `/`).
pub(super) fn changed_paths(
    scratch: &Scratch,
    record: &IsolationRecord,
    state: &GitState,
    index_copied: bool,
) -> Result<Vec<(String, Origin)>, DiscardError> {
    let checkout = Path::new(&record.path);
    if !index_copied {
        match &state.head {
            Some(head) => scratch.git(None, &["read-tree", head])?,
            None => scratch.git(None, &["read-tree", "--empty"])?,
        };
    }
    let status = |extra: &[&str]| -> Result<String, GitError> {
        let mut args = vec![
            "status",
            "--porcelain=v1",
            "-z",
            // Submodules keep their own work in their own repositories,
            // which are the agent's: not looked into.
            "--ignore-submodules=all",
        ];
        args.extend_from_slice(extra);
        scratch.git(Some(checkout), &args)
    };
    let changed = match status(&["--untracked-files=all"]) {
        Ok(out) => out,
        // An index git cannot read: compared with `HEAD` instead.
        Err(GitError::Failed { .. }) if index_copied => {
            return changed_paths(scratch, record, state, false);
        }
        Err(e) => return Err(e.into()),
    };
    let ignored = status(&["--ignored=traditional", "--untracked-files=normal"])?;
    let mut paths = Vec::new();
    let mut entries = changed.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        let (code, path) = (
            entry.get(..2).unwrap_or_default(),
            entry.get(3..).unwrap_or_default(),
        );
        let origin = if code == "??" {
            Origin::Untracked
        } else {
            Origin::Tracked
        };
        paths.push((path.to_owned(), origin));
        if (code.starts_with('R') || code.starts_with('C'))
            && let Some(original) = entries.next()
        {
            paths.push((original.to_owned(), Origin::Tracked));
        }
    }
    for entry in ignored.split('\0') {
        if let Some(path) = entry.strip_prefix("!! ") {
            paths.push((path.to_owned(), Origin::Ignored));
        }
    }
    // Files the index tells status not to look at (assume-unchanged,
    // skip-worktree): the agent wrote the index, so they count.
    if index_copied {
        let tagged = scratch.git(Some(checkout), &["ls-files", "-v", "-z"])?;
        for entry in tagged.split('\0') {
            if let Some((tag, file)) = entry.split_once(' ')
                && (tag == "S" || tag.chars().all(|c| c.is_ascii_lowercase()))
            {
                paths.push((file.to_owned(), Origin::Tracked));
            }
        }
    }
    // Each path once, from where it counts most.
    paths.sort_by(|a, b| (&a.0, a.1).cmp(&(&b.0, b.1)));
    paths.dedup_by(|later, first| later.0 == first.0);
    paths.sort_by(|a, b| (a.1, &a.0).cmp(&(b.1, &b.0)));
    Ok(paths)
}
