//! Where everything lives under `JACKIN_HOME`.
//!
//! ```text
//! $JACKIN_HOME (default ~/.jackin)
//!   home-id                        this home's id, labelled on its engine objects
//!   data/instances.json            index, one row per instance; rebuildable
//!   data/instances.json.lock
//!   data/<container>/              the per-instance unit
//!     .jackin/instance.json        the object (spec + status)
//!     .jackin/isolation.json       isolated mount records
//!     .jackin/events.jsonl         bounded event log
//!     home/  state/  git/
//!   data/<container>.lock          per-instance lock (sibling of the unit)
//!   data/.orphaned/<container>-<timestamp>/   unreadable units, moved aside
//!   sockets/<container>/
//!   workspaces/<name>.yaml         Workspace policies, as applied
//!   agents/<name>.yaml             Agent entries, as applied (built-ins are not stored)
//!   sources/<id>.json              what each source last applied, or why not
//! ```
//!
//! Only names that passed DNS-1123 validation are joined onto these paths, so
//! no user input can climb out of the root.

use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
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

    /// The file holding this home's id (see [`Layout::home_id`]).
    pub fn home_id_file(&self) -> PathBuf {
        self.root.join("home-id")
    }

    /// This home's id, labelled on every engine object it creates; `None`
    /// before the home has created any.
    pub fn home_id(&self) -> std::io::Result<Option<String>> {
        match std::fs::read_to_string(self.home_id_file()) {
            Ok(id) => Ok(Some(id.trim().to_owned())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// This home's id, created on first use. Exactly one of several
    /// processes racing to create it wins; the others read its id.
    pub fn home_id_or_create(&self, fresh: &str) -> std::io::Result<String> {
        if let Some(id) = self.home_id()? {
            return Ok(id);
        }
        crate::fsutil::ensure_private_dir(&self.root)?;
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(self.home_id_file());
        match created {
            Ok(mut file) => {
                file.write_all(fresh.as_bytes())?;
                file.sync_all()?;
                Ok(fresh.to_owned())
            }
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                // The winner may not have written its id yet.
                for _ in 0..50 {
                    if let Some(id) = self.home_id()?.filter(|id| !id.is_empty()) {
                        return Ok(id);
                    }
                    std::thread::sleep(std::time::Duration::from_millis(10));
                }
                Err(std::io::Error::other("home-id exists but stays empty"))
            }
            Err(e) => Err(e),
        }
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

    /// Where units that cannot be read are moved aside, never deleted.
    pub fn orphaned_dir(&self) -> PathBuf {
        self.data_dir().join(".orphaned")
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

    /// Held by `jackin attach` while an operator is attached, so the loop
    /// knows there is someone to ask.
    pub fn attached_lock_file(&self, container: &str) -> PathBuf {
        self.sockets_dir(container).join("attached.lock")
    }

    /// The directory of the objects of one kind kept as a file each
    /// (`workspaces`, `agents`).
    pub fn objects_dir(&self, plural: &str) -> PathBuf {
        self.root.join(plural)
    }

    pub fn object_of_kind_file(&self, plural: &str, name: &str) -> PathBuf {
        self.objects_dir(plural).join(format!("{name}.yaml"))
    }

    pub fn objects_lock_file(&self, plural: &str) -> PathBuf {
        self.objects_dir(plural).join(".lock")
    }
}
