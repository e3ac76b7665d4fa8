//! What goes wrong in a discard's save or restore, and the small helpers
//! its parts share to say so. Below every other part of `discard`, so that
//! none of them imports the module that re-exports it.

use std::io;
use std::path::{Path, PathBuf};

use crate::git::GitError;
use crate::isolation::IsolationError;
use crate::saved_files::StagingError;

/// jackin's own attributes in the repositories it builds and restores
/// with: every file's bytes as they are, no filter, conversion or driver
/// named by the agent's `.gitattributes`.
pub(super) const NEUTRAL_ATTRIBUTES: &str =
    "* -text -eol -crlf -filter -ident -working-tree-encoding -diff -merge\n";

#[derive(Debug, thiserror::Error)]
pub enum DiscardError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    /// A save could not be made: nothing of the checkout was deleted.
    #[error(
        "mount {dst}: the unfinished work in {path} could not be saved before its discard \
         ({cause}), so nothing was deleted: fix that and purge again, or remove {path} \
         yourself to discard the work unsaved"
    )]
    NotSaved {
        dst: String,
        path: String,
        cause: String,
    },
    #[error("{0}")]
    Refused(String),
}

impl From<StagingError> for DiscardError {
    fn from(e: StagingError) -> Self {
        Self::Io {
            path: e.path,
            source: e.source,
        }
    }
}

pub(super) fn io_at(path: &Path) -> impl FnOnce(io::Error) -> DiscardError + '_ {
    move |source| DiscardError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The first line of git's complaint, cut short, for an error.
pub(super) fn first_line(text: &str) -> String {
    text.lines()
        .next()
        .unwrap_or_default()
        .chars()
        .take(200)
        .collect()
}
