//! The scratch repository a save is built in: jackin's own, in a work
//! directory of the save, whose config is jackin's, whose attributes turn
//! every filter off, and whose objects borrow the checkout's and the
//! host's as alternates. Every git run in it is confined.

use std::path::{Path, PathBuf};

use super::error::{DiscardError, NEUTRAL_ATTRIBUTES, io_at};
use crate::git::{self, GitError};
use jackin_files::fsutil::{ensure_private_dir, write_atomic};

/// jackin's own repository for one save, in a work directory of the save:
/// its config is jackin's, its attributes neutral, its objects its own with
/// the checkout's as alternates.
pub(super) struct Scratch {
    pub(super) work: tempfile::TempDir,
    pub(super) git_dir: PathBuf,
    pub(super) staging: PathBuf,
    /// What its git may read besides it: its alternates, and the objects
    /// the host's borrow in turn (never what the agent's name).
    reads: Vec<PathBuf>,
}

impl Scratch {
    pub(super) fn new(
        save_dir: &Path,
        object_format: &str,
        alternates: &[PathBuf],
        reads: Vec<PathBuf>,
        head: Option<&str>,
    ) -> Result<Self, DiscardError> {
        let work = tempfile::Builder::new()
            .prefix(".work-")
            .tempdir_in(save_dir)
            .map_err(io_at(save_dir))?;
        let git_dir = work.path().join("repo.git");
        let staging = work.path().join("files");
        let alternates: String = alternates
            .iter()
            .map(|p| format!("{}\n", p.display()))
            .collect();
        let files: [(&str, String); 5] = [
            // Detached at the checkout's `HEAD`: what status compares with.
            (
                "HEAD",
                head.map_or_else(
                    || "ref: refs/heads/jackin-unborn\n".to_owned(),
                    |h| format!("{h}\n"),
                ),
            ),
            (
                "config",
                format!(
                    "[core]\n\trepositoryformatversion = 1\n\tbare = true\n\tautocrlf = false\n\
                     \tsafecrlf = false\n\tsymlinks = true\n\tfilemode = true\n\
                     \tignorecase = false\n\tuntrackedCache = false\n\tsplitIndex = false\n\
                     [extensions]\n\tobjectFormat = {object_format}\n\
                     [gc]\n\tauto = 0\n[user]\n\tname = jackin\n\temail = jackin@localhost\n"
                ),
            ),
            ("objects/info/alternates", alternates),
            ("info/attributes", NEUTRAL_ATTRIBUTES.into()),
            ("info/exclude", String::new()),
        ];
        for (name, text) in files {
            let path = git_dir.join(name);
            write_atomic(&path, text.as_bytes()).map_err(io_at(&path))?;
        }
        for dir in ["refs/heads", "refs/saved", "objects/pack"] {
            let path = git_dir.join(dir);
            ensure_private_dir(&path).map_err(io_at(&path))?;
        }
        ensure_private_dir(&staging).map_err(io_at(&staging))?;
        Ok(Self {
            work,
            git_dir,
            staging,
            reads,
        })
    }

    fn dir(&self) -> &str {
        self.git_dir.to_str().expect("jackin's paths are UTF-8")
    }

    /// A confined git in this repository, writing only the work
    /// directory; `work_tree` is the checkout, or the staged copies.
    pub(super) fn git(&self, work_tree: Option<&Path>, args: &[&str]) -> Result<String, GitError> {
        self.git_fed(work_tree, args, None)
    }

    pub(super) fn git_fed(
        &self,
        work_tree: Option<&Path>,
        args: &[&str],
        input: Option<&Path>,
    ) -> Result<String, GitError> {
        let git_dir = format!("--git-dir={}", self.dir());
        let work_tree = work_tree.map(|w| format!("--work-tree={}", w.display()));
        let mut argv = vec!["--literal-pathspecs", git_dir.as_str()];
        argv.extend(work_tree.as_deref());
        argv.extend_from_slice(args);
        let reads: Vec<&Path> = self.reads.iter().map(PathBuf::as_path).collect();
        git::run_untrusted_fed(self.dir(), &argv, &reads, &[self.work.path()], input)
            .map(|out| String::from_utf8_lossy(&out).into_owned())
    }

    /// A file of jackin's in the work directory, for git's standard input.
    pub(super) fn input(&self, name: &str, bytes: &[u8]) -> Result<PathBuf, DiscardError> {
        let path = self.work.path().join(name);
        write_atomic(&path, bytes).map_err(io_at(&path))?;
        Ok(path)
    }

    /// Writes a ref of this repository (jackin's own file).
    pub(super) fn set_ref(&self, name: &str, commit: &str) -> Result<(), DiscardError> {
        let path = self.git_dir.join(name);
        write_atomic(&path, format!("{commit}\n").as_bytes()).map_err(io_at(&path))
    }
}
