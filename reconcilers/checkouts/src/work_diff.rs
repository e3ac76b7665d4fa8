//! An isolated checkout's unfinished work as text to read (`jackin top`'s
//! diff view): its tracked changes against the base commit, and its
//! untracked files with what they hold.
//!
//! The checkout is the agent's: git runs as the assessment runs it
//! ([`crate::assess`]: confined, the repository named, never found), with
//! `--no-textconv --no-ext-diff --no-color`, so no driver, pager or colour
//! its config names applies; an untracked file is opened beneath the
//! checkout with a link anywhere on the way refused, and only a regular
//! file, of at most [`MAX_UNTRACKED_BYTES`], is read. Everything returned
//! is the agent's text, to be escaped before it is shown.

use std::path::Path;

use crate::assess::{checked_checkout, git_in};
use crate::isolation::IsolationRecord;
use jackin_files::fsutil::{BeneathDir, read_within};

/// The most of the tracked changes kept; the rest is cut, and said so.
pub const MAX_DIFF_BYTES: usize = 1 << 20;

/// The most untracked files whose contents are read; the rest are named.
pub const MAX_UNTRACKED_READ: usize = 20;

/// The largest untracked file whose contents are shown.
pub const MAX_UNTRACKED_BYTES: u64 = 64 << 10;

/// One checkout's unfinished work.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WorkDiff {
    /// `git diff BASE` of the work tree: every tracked change since the
    /// base commit, committed or not.
    pub tracked: String,
    /// The tracked changes were longer than [`MAX_DIFF_BYTES`] and cut.
    pub tracked_cut: bool,
    pub untracked: Vec<Untracked>,
}

/// An untracked file: its path in the checkout and its contents, or why
/// they are not shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Untracked {
    pub path: String,
    pub contents: Result<String, String>,
}

/// The unfinished work of the checkout `record` names, or why it cannot be
/// read.
pub fn work_diff(record: &IsolationRecord) -> Result<WorkDiff, String> {
    if !Path::new(&record.path).is_dir() {
        return Err(format!("its checkout {} is missing", record.path));
    }
    let at = checked_checkout(record)?;
    let mut tracked = git_in(
        &at,
        &[
            "diff",
            "--no-textconv",
            "--no-ext-diff",
            "--no-color",
            "--no-relative",
            "--ignore-submodules=none",
            &record.base_commit,
            "--",
        ],
    )?;
    let tracked_cut = tracked.len() > MAX_DIFF_BYTES;
    if tracked_cut {
        let mut end = MAX_DIFF_BYTES;
        while !tracked.is_char_boundary(end) {
            end -= 1;
        }
        tracked.truncate(end);
    }
    let listed = git_in(
        &at,
        &["ls-files", "--others", "--exclude-standard", "-z", "--"],
    )?;
    let dir = BeneathDir::open(Path::new(&record.path))
        .map_err(|e| format!("cannot open the checkout {}: {e}", record.path))?;
    let untracked = listed
        .split('\0')
        .filter(|path| !path.is_empty())
        .enumerate()
        .map(|(i, path)| Untracked {
            path: path.to_owned(),
            contents: match i < MAX_UNTRACKED_READ {
                true => contents(&dir, path),
                false => Err(format!(
                    "not read: only the first {MAX_UNTRACKED_READ} untracked files are"
                )),
            },
        })
        .collect();
    Ok(WorkDiff {
        tracked,
        tracked_cut,
        untracked,
    })
}

/// What the untracked file `path` holds, as text, or why it is not shown.
fn contents(dir: &BeneathDir, path: &str) -> Result<String, String> {
    let file = dir
        .open_regular(path)
        .map_err(|e| format!("not read: {e}"))?;
    let bytes = read_within(file, MAX_UNTRACKED_BYTES)
        .map_err(|_| format!("not read: larger than {} KiB", MAX_UNTRACKED_BYTES >> 10))?;
    if bytes.contains(&0) {
        return Err(format!("binary, {} bytes", bytes.len()));
    }
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}
