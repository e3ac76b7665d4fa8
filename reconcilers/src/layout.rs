//! Where everything lives under `JACKIN_HOME`.
//!
//! ```text
//! $JACKIN_HOME (default ~/.jackin)
//!   data/instances.json            index, one row per instance; rebuildable
//!   data/instances.json.lock
//!   data/<container>/              the per-instance unit
//!     .jackin/instance.json        the object (spec + status)
//!     .jackin/isolation.json       isolated mount records
//!     .jackin/events.jsonl         bounded event log
//!     home/  state/  git/
//!   data/<container>.lock          per-instance lock (sibling of the unit)
//!   sockets/<container>/
//!   workspaces/<name>.yaml
//! ```
//!
//! Only names that passed DNS-1123 validation are joined onto these paths, so
//! no user input can climb out of the root.

use std::path::{Path, PathBuf};

/// The environment variable that overrides the state root.
pub const HOME_ENV: &str = "JACKIN_HOME";

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Layout {
    root: PathBuf,
}

impl Layout {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        Self { root: root.into() }
    }

    /// `$JACKIN_HOME`, else `~/.jackin`; `None` when neither can be found.
    pub fn from_env() -> Option<Self> {
        match std::env::var_os(HOME_ENV) {
            Some(root) if !root.is_empty() => Some(Self::new(root)),
            _ => std::env::home_dir().map(|home| Self::new(home.join(".jackin"))),
        }
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn data_dir(&self) -> PathBuf {
        self.root.join("data")
    }

    pub fn index_file(&self) -> PathBuf {
        self.data_dir().join("instances.json")
    }

    pub fn index_lock_file(&self) -> PathBuf {
        self.data_dir().join("instances.json.lock")
    }

    /// Where a corrupt index is moved aside, stamped so none is overwritten.
    pub fn corrupt_index_file(&self, stamp: &str) -> PathBuf {
        self.data_dir()
            .join(format!("instances.json.corrupt-{stamp}"))
    }

    pub fn unit_dir(&self, container: &str) -> PathBuf {
        self.data_dir().join(container)
    }

    pub fn unit_meta_dir(&self, container: &str) -> PathBuf {
        self.unit_dir(container).join(".jackin")
    }

    pub fn object_file(&self, container: &str) -> PathBuf {
        self.unit_meta_dir(container).join("instance.json")
    }

    pub fn unit_lock_file(&self, container: &str) -> PathBuf {
        self.data_dir().join(format!("{container}.lock"))
    }

    pub fn sockets_dir(&self, container: &str) -> PathBuf {
        self.root.join("sockets").join(container)
    }

    pub fn workspaces_dir(&self) -> PathBuf {
        self.root.join("workspaces")
    }

    pub fn workspace_file(&self, name: &str) -> PathBuf {
        self.workspaces_dir().join(format!("{name}.yaml"))
    }

    pub fn workspaces_lock_file(&self) -> PathBuf {
        self.workspaces_dir().join(".lock")
    }
}
