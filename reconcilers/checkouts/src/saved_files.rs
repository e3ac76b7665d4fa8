//! The files of a save, taken beneath a directory the agent writes: every
//! path opened with no link followed anywhere on the way (`openat2`), a
//! symbolic link saved as a link (what it says, never what it points at), a
//! FIFO, socket or device never opened, the sizes capped ([`MAX_FILE_BYTES`],
//! [`MAX_SAVED_BYTES`], [`MAX_SAVED_FILES`]), and what is not saved listed
//! with why. A discarded checkout's files are taken so (see
//! [`crate::discard`]), and so is a removed session's conversation (see
//! [`crate::saved_session`]).

use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use jackin_files::fsutil::{
    BeneathDir, CappedCopy, EntryKind, copy_capped, ensure_real_dir_below, remove_if_exists,
};

/// The largest file a save takes: far above source files, below the build
/// outputs and disk images a save should not fill the disk with.
pub const MAX_FILE_BYTES: u64 = 256 << 20;
/// The most a save of one checkout takes of its files, in all.
pub const MAX_SAVED_BYTES: u64 = 1 << 30;
/// The most files a save of one checkout takes.
pub const MAX_SAVED_FILES: usize = 200_000;
/// How many names of each kind the record lists; the rest are counted.
pub const MAX_LISTED: usize = 20;
/// The longest path the kernel takes: `PATH_MAX` counts the NUL that ends
/// it. A longer one fails with `ENAMETOOLONG`.
const MAX_PATH_BYTES: usize = libc::PATH_MAX as usize - 1;

/// The files of a saved checkout, counted, with the first few named.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedFiles {
    /// Uncommitted, untracked and ignored files saved (links included).
    pub saved: usize,
    pub bytes: u64,
    /// Tracked files the checkout had deleted.
    pub deleted: usize,
    /// Files and directories not saved, and why.
    pub skipped: usize,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub listed: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub skipped_listed: Vec<String>,
}

/// Writing a save's copy failed: the save cannot be made.
#[derive(Debug, thiserror::Error)]
#[error("{path}: {source}")]
pub struct StagingError {
    pub path: PathBuf,
    #[source]
    pub source: io::Error,
}

fn staging_at(path: &Path) -> impl FnOnce(io::Error) -> StagingError + '_ {
    move |source| StagingError {
        path: path.to_owned(),
        source,
    }
}

/// Where a path to save came from, in the order they are taken: changes to
/// tracked files first, ignored files (build output) last, so that the caps
/// cut the least valuable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Origin {
    Tracked,
    Untracked,
    Ignored,
}

/// The files taken so far: copied into the staging directory, counted and
/// capped.
#[derive(Debug, Default)]
pub(crate) struct Collector {
    pub(crate) saved: Vec<String>,
    pub(crate) deleted: Vec<String>,
    bytes: u64,
    skipped: usize,
    skipped_listed: Vec<String>,
    /// Paths never taken, nor anything below them (a login's files, the
    /// operator's own setup), each with why, in words.
    left_out: Vec<(String, &'static str)>,
    /// How many of the skipped were left out (a login's, the setup's).
    logins: usize,
    /// The files a checkout's `include` copied in, with the digest of each
    /// copy: one still so is the operator's, not work, and is not taken.
    included: std::collections::BTreeMap<String, String>,
}

/// Whether git, or `git fsck` on the way back, would refuse `path`: a
/// component that is empty, `.` or `..`, or names a git directory (`.git`
/// in any case, with trailing dots or spaces, or its short name).
pub(crate) fn refused_by_git(path: &str, is_link: bool) -> bool {
    path.split('/').any(|part| {
        part.is_empty() || part == "." || part == ".." || part.split('\\').any(names_a_git_dir)
    }) || (is_link
        && path.rsplit('/').next().is_some_and(|leaf| {
            let lower = leaf.to_ascii_lowercase();
            lower.starts_with(".gitmodules") || lower.starts_with("gitmod~")
        }))
}

/// Whether a path component is one `fsck` reads as `.git` on some file
/// system, which it refuses everywhere: any case, the code points HFS+
/// ignores (zero-width joiners, bidirectional marks, U+FEFF) anywhere,
/// trailing dots and spaces or an NTFS stream (`.git::$INDEX_ALLOCATION`),
/// and the short name `git~1`.
fn names_a_git_dir(part: &str) -> bool {
    let ignorable = |c: &char| matches!(*c as u32, 0x200C..=0x200F | 0x202A..=0x202E | 0x206A..=0x206F | 0xFEFF);
    let seen: String = part
        .chars()
        .filter(|c| !ignorable(c))
        .collect::<String>()
        .to_lowercase();
    let stream = seen.split(':').next().unwrap_or_default();
    stream.trim_end_matches(['.', ' ']) == ".git" || seen.starts_with("git~")
}

impl Collector {
    /// A collector that never takes `paths` (relative to the tree it
    /// walks), nor anything below them, and lists each it meets as left
    /// out, with its reason: the files that hold a login.
    pub(crate) fn leaving_out(paths: Vec<(String, &'static str)>) -> Self {
        Self {
            left_out: paths,
            ..Self::default()
        }
    }

    /// A collector that does not take the files `include` copied into a
    /// checkout (by path, with the digest of each copy) that are as they
    /// were copied.
    pub(crate) fn leaving_included(included: std::collections::BTreeMap<String, String>) -> Self {
        Self {
            included,
            ..Self::default()
        }
    }

    /// Whether `path` is a file `include` copied in, still as it was.
    fn is_unchanged_included(&self, tree: &BeneathDir, path: &str) -> bool {
        self.included.get(path).is_some_and(|digest| {
            crate::include::digest_of(tree, path).as_deref() == Some(digest.as_str())
        })
    }

    /// Why `path` is never taken, when it is one of the left out or below
    /// one.
    fn left_out_for(&self, path: &str) -> Option<&'static str> {
        self.left_out.iter().find_map(|(out, why)| {
            let below = path
                .strip_prefix(out.as_str())
                .is_some_and(|rest| rest.starts_with('/'));
            (path == out || below).then_some(*why)
        })
    }

    /// Whether nothing was met that a save would keep, or would tell of:
    /// no file taken, and none skipped but a login's (which no save keeps).
    pub(crate) fn holds_nothing(&self) -> bool {
        self.saved.is_empty() && self.skipped == self.logins
    }

    pub(crate) fn skip(&mut self, path: &str, why: &str) {
        self.skipped += 1;
        if self.skipped_listed.len() < MAX_LISTED {
            self.skipped_listed.push(format!("{path}: {why}"));
        }
    }

    /// Copies the regular file `path` into `staging` (mode 0700 if
    /// `executable`), within what the save may still take; what cannot be
    /// opened or has grown past that since it was listed is skipped.
    fn copy_file(
        &mut self,
        tree: &BeneathDir,
        staging: &Path,
        path: &str,
        executable: bool,
    ) -> Result<(), StagingError> {
        let mut file = match tree.open_regular(path) {
            Ok(file) => file,
            Err(e) => {
                self.skip(path, &e.to_string());
                return Ok(());
            }
        };
        let Some(to) = self.place(staging, path)? else {
            return Ok(());
        };
        let mut out = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&to)
            .map_err(staging_at(&to))?;
        let budget = (MAX_SAVED_BYTES - self.bytes).min(MAX_FILE_BYTES);
        let copied = match copy_capped(&mut file, &mut out, budget).map_err(staging_at(&to))? {
            CappedCopy::Copied(copied) => copied,
            CappedCopy::TooLarge => {
                drop(out);
                remove_if_exists(&to).map_err(staging_at(&to))?;
                self.skip(path, "it grew past the save's limit after it was listed");
                return Ok(());
            }
        };
        let mode = if executable { 0o700 } else { 0o600 };
        out.set_permissions(std::fs::Permissions::from_mode(mode))
            .map_err(staging_at(&to))?;
        self.bytes += copied;
        self.saved.push(path.to_owned());
        Ok(())
    }

    /// Takes `path` (a directory is walked): copies what can be saved into
    /// `staging`, notes a tracked file that is gone as deleted, and what
    /// cannot be saved as skipped. Only writing the staging copy can fail.
    pub(crate) fn take(
        &mut self,
        tree: &BeneathDir,
        staging: &Path,
        path: &str,
        origin: Origin,
    ) -> Result<(), StagingError> {
        let mut pending = vec![(path.trim_end_matches('/').to_owned(), origin)];
        while let Some((path, origin)) = pending.pop() {
            let Some(kind) = self.kind_to_take(tree, &path, origin) else {
                continue;
            };
            match kind {
                EntryKind::Dir if origin == Origin::Tracked && !path.is_empty() => {
                    self.skip(&path, "a submodule: its own work is in its own repository");
                }
                EntryKind::Dir => self.walk_dir(tree, &path, origin, &mut pending),
                EntryKind::Special => self.skip(&path, "a FIFO, socket or device"),
                EntryKind::File { .. } if self.is_unchanged_included(tree, &path) => {}
                EntryKind::File { size, .. } if size > MAX_FILE_BYTES => {
                    self.skip(&path, &format!("larger than {} MiB", MAX_FILE_BYTES >> 20));
                }
                _ if self.saved.len() >= MAX_SAVED_FILES => {
                    self.skip(&path, &format!("past the save's {MAX_SAVED_FILES} files"));
                }
                EntryKind::File { size, .. } if self.bytes + size > MAX_SAVED_BYTES => {
                    self.skip(
                        &path,
                        &format!("past the save's {} MiB", MAX_SAVED_BYTES >> 20),
                    );
                }
                EntryKind::File { executable, .. } => {
                    self.copy_file(tree, staging, &path, executable)?;
                }
                EntryKind::Symlink => self.copy_link(tree, staging, path)?,
            }
        }
        Ok(())
    }

    /// What `path` is, when it is to be taken at all: a name that is not
    /// UTF-8, a login's file, one that cannot be looked at or that git
    /// refuses is skipped (and listed), a tracked file that is gone is
    /// noted as deleted, and each gives none.
    fn kind_to_take(&mut self, tree: &BeneathDir, path: &str, origin: Origin) -> Option<EntryKind> {
        // git printed a name that is not UTF-8, read here as text: it
        // names no file jackin can open, and is neither saved nor
        // taken for deleted.
        if path.contains(char::REPLACEMENT_CHARACTER) {
            self.skip(path, "a name that is not UTF-8");
            return None;
        }
        if let Some(why) = self.left_out_for(path) {
            self.logins += 1;
            self.skip(path, &format!("{why}, which a save never keeps"));
            return None;
        }
        let kind = if path.is_empty() {
            Ok(EntryKind::Dir)
        } else {
            tree.kind(path)
        };
        let kind = match kind {
            Ok(kind) => kind,
            Err(e) if e.kind() == io::ErrorKind::NotFound && origin == Origin::Tracked => {
                if !refused_by_git(path, false) {
                    self.deleted.push(path.to_owned());
                }
                return None;
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => return None,
            Err(e) => {
                let why = match e.raw_os_error() {
                    Some(libc::ELOOP | libc::EXDEV) => "a link on the way".to_owned(),
                    _ => e.to_string(),
                };
                self.skip(path, &why);
                return None;
            }
        };
        if !path.is_empty() && refused_by_git(path, kind == EntryKind::Symlink) {
            self.skip(path, "a name git refuses");
            return None;
        }
        Some(kind)
    }

    /// Puts the entries of the directory `path` on `pending`, each as
    /// `origin` (a nested repository's git directory left out), so that
    /// they are taken in name order.
    fn walk_dir(
        &mut self,
        tree: &BeneathDir,
        path: &str,
        origin: Origin,
        pending: &mut Vec<(String, Origin)>,
    ) {
        let listed = if path.is_empty() { "." } else { path };
        let (entries, not_utf8) = match tree.entries_counted(listed) {
            Ok(found) => found,
            Err(e) => {
                self.skip(path, &e.to_string());
                return;
            }
        };
        if not_utf8 > 0 {
            self.skip(path, &format!("{not_utf8} names in it are not UTF-8"));
        }
        let mut names: Vec<String> = entries.into_iter().map(|(n, _)| n).collect();
        names.sort_unstable_by(|a, b| b.cmp(a));
        for name in names {
            let child = if path.is_empty() {
                name
            } else {
                format!("{path}/{name}")
            };
            if child.rsplit('/').next() == Some(".git") {
                if !path.is_empty() {
                    self.skip(&child, "a nested repository's git directory");
                }
                continue;
            }
            pending.push((child, origin));
        }
    }

    /// Saves the symbolic link `path` as a link: what it says, never what
    /// it points at.
    fn copy_link(
        &mut self,
        tree: &BeneathDir,
        staging: &Path,
        path: String,
    ) -> Result<(), StagingError> {
        let target = match tree.read_link(&path) {
            Ok(target) => target,
            Err(e) => {
                self.skip(&path, &e.to_string());
                return Ok(());
            }
        };
        let Some(to) = self.place(staging, &path)? else {
            return Ok(());
        };
        std::os::unix::fs::symlink(std::ffi::OsStr::from_bytes(&target), &to)
            .map_err(staging_at(&to))?;
        self.saved.push(path);
        Ok(())
    }

    /// Where the copy of `path` goes in `staging` ([`staged_path`]); none,
    /// with `path` skipped and listed, when that is longer than the kernel
    /// takes a path. The agent's path fits below its own directory, which
    /// is all it sees, but the save's directory is deeper: the agent must
    /// not be able to make its save fail, and so block its unit's removal.
    /// Nothing of such a path is made in `staging`.
    fn place(&mut self, staging: &Path, path: &str) -> Result<Option<PathBuf>, StagingError> {
        let length = staging.join(path).as_os_str().len();
        if length > MAX_PATH_BYTES {
            self.skip(
                path,
                &format!(
                    "its path is too long to save ({length} bytes in the save, past the \
                     {MAX_PATH_BYTES} a path may have)"
                ),
            );
            return Ok(None);
        }
        staged_path(staging, path).map(Some)
    }

    pub(crate) fn finish(self) -> SavedFiles {
        let mut listed = self.saved.clone();
        listed.sort();
        listed.truncate(MAX_LISTED);
        SavedFiles {
            saved: self.saved.len(),
            bytes: self.bytes,
            deleted: self.deleted.len(),
            skipped: self.skipped,
            listed,
            skipped_listed: self.skipped_listed,
        }
    }
}

/// Where the copy of `path` goes in the staging directory: its parents made
/// as real directories of jackin's (never through a link).
pub(crate) fn staged_path(staging: &Path, path: &str) -> Result<PathBuf, StagingError> {
    let relative = Path::new(path);
    if let Some(parent) = relative.parent()
        && !parent.as_os_str().is_empty()
    {
        ensure_real_dir_below(staging, parent).map_err(staging_at(&staging.join(parent)))?;
    }
    Ok(staging.join(relative))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_git_would_refuse_are_not_saved() {
        assert!(refused_by_git(".git/config", false));
        assert!(refused_by_git("a/.GIT./x", false));
        assert!(refused_by_git("git~1/x", false));
        assert!(refused_by_git(".gitmodules", true));
        assert!(!refused_by_git(".gitmodules", false));
        assert!(!refused_by_git("src/x.git/y", false));
        assert!(refused_by_git("a//b", false));
        // What fsck refuses on every platform (hasDotgit): HFS+'s ignorable
        // code points, NTFS's streams and separators.
        for hidden in [
            ".g\u{200c}it/config",
            "\u{feff}.git/x",
            ".git::$INDEX_ALLOCATION/x",
            "a\\.git\\x",
        ] {
            assert!(refused_by_git(hidden, false), "{hidden:?}");
        }
        assert!(!refused_by_git(".gitignore", false));
        assert!(!refused_by_git("a/.github/x", false));
    }

    /// `depth` directories of 250 `d`s below `base`, made one at a time
    /// from the one above (as an agent does: from most places the whole
    /// path is too long to name), with a file `f` at the bottom.
    /// Returns the file's path relative to `base`.
    fn deep_file(base: &Path, depth: usize) -> String {
        use rustix::fs::{Mode, OFlags};
        let name = "d".repeat(250);
        let mut dir = rustix::fs::open(base, OFlags::DIRECTORY, Mode::empty()).unwrap();
        for _ in 0..depth {
            rustix::fs::mkdirat(&dir, name.as_str(), Mode::RWXU).unwrap();
            dir =
                rustix::fs::openat(&dir, name.as_str(), OFlags::DIRECTORY, Mode::empty()).unwrap();
        }
        let file =
            rustix::fs::openat(&dir, "f", OFlags::CREATE | OFlags::WRONLY, Mode::RUSR).unwrap();
        rustix::io::write(&file, b"deep\n").unwrap();
        vec![name; depth].join("/") + "/f"
    }

    /// N1: a path the agent's directory holds but the save's cannot (the
    /// staging directory is deeper) is skipped and listed, nothing of it is
    /// made, and the rest is saved.
    #[test]
    fn a_path_too_long_to_save_is_skipped_and_listed() {
        let dir = tempfile::tempdir().unwrap();
        let tree = dir.path().join("tree");
        std::fs::create_dir(&tree).unwrap();
        let deep = deep_file(&tree, 16);
        assert!(
            deep.len() < MAX_PATH_BYTES,
            "the source path is one a path may be"
        );
        std::fs::write(tree.join("shallow"), "kept\n").unwrap();
        // Deeper than the tree, as a save's directory is.
        let staging = dir.path().join("s".repeat(100));
        std::fs::create_dir(&staging).unwrap();

        let mut collector = Collector::default();
        let beneath = BeneathDir::open(&tree).unwrap();
        collector
            .take(&beneath, &staging, "", Origin::Untracked)
            .unwrap();
        let files = collector.finish();
        assert_eq!(files.listed, ["shallow"], "{files:?}");
        assert_eq!(files.skipped, 1, "{files:?}");
        assert!(
            files.skipped_listed[0].starts_with(&format!("{deep}: its path is too long to save")),
            "{files:?}"
        );
        let made: Vec<_> = std::fs::read_dir(&staging)
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(
            made,
            ["shallow"],
            "the deep path was begun in the staging directory"
        );
    }
}
