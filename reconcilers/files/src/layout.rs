//! Where everything lives under `JACKIN_HOME`.
//!
//! ```text
//! $JACKIN_HOME (default ~/.jackin)
//!   config.yaml                    the operator's settings (optional; may be a link)
//!   home-id                        this home's id, labelled on its engine objects
//!   controller.lock                held by the running `jackin controller` (its pid: /proc/locks)
//!   data/instances.json            index, one row per instance; rebuildable
//!   data/instances.json.lock       the index lock (also guards ended.json)
//!   data/instances.json.corrupt-<timestamp>   an unreadable index, kept aside
//!   data/ended.json                instances jackin ended and cleaned up, with their
//!                                  manifests (the newest 256)
//!   data/<container>/              the per-instance unit
//!     .jackin/instance.json        the object (spec + status)
//!     .jackin/isolation.json       isolated mount records
//!     .jackin/events.jsonl         bounded event log
//!     home/                        the agent's home
//!     state/                       the session's: exit.json (the marker), agent-start,
//!                                  artifacts/ (collected when the session ends)
//!     bin/                         entry (the wrapper), hook (the idle-hook runner),
//!                                  plan (the next start's rungs); mounted read-only
//!     git/worktree/<slug>/  git/clone/<slug>/   isolated checkouts
//!   data/<container>.lock          per-instance lock (sibling of the unit)
//!   data/diagnostics/runs/<run id>.jsonl   one command's breadcrumbs (and with --debug,
//!                                  its traces), bounded by config.yaml's runLogs
//!   data/.orphaned/<container>-<timestamp>/   unreadable units, moved aside
//!   sockets/<container>/attached.lock   held while a terminal is attached
//!   workspaces/<name>.yaml  .lock  Workspace policies, as applied
//!   agents/<name>.yaml  .lock      Agent entries, as applied (built-ins are not stored)
//!   sources/<id>.json              what each source last applied, or why not
//!   roles/<digest>/  <digest>.lock  a role source's checkout (the digest is its URL's),
//!                                  cloned once, fetched at each build, left at the commit
//!                                  last built; the lock is held while a build reads it
//!   probes.json                    what probes found in which image id (a cache)
//!   artifacts/<instance>/<finished-at>/   a session's state/artifacts/, moved out when it
//!                                  ended, so that a purge does not take it, until the
//!                                  retention passes
//!   discarded/<instance>-<unit id>/   the unfinished work of discarded checkouts
//!                                  (record.json, one git bundle per checkout), until the
//!                                  retention passes
//! ```
//!
//! Only names that passed DNS-1123 validation are joined onto these paths, so
//! no user input can climb out of the root.
//!
//! Every file here is read with [`crate::fsutil::read_untrusted`] (a regular
//! file, no link followed, at most its [`cap`]), except `config.yaml`, which
//! the operator writes and may link elsewhere: [`crate::fsutil::read_regular`]
//! follows the link, and still reads only a regular file within its cap.

use std::io::{ErrorKind, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// The most jackin reads of each file it keeps under `$JACKIN_HOME`. Each is
/// far above what an honest file reaches, so only a file that is not what
/// jackin wrote (a link to `/dev/zero`, something else copied over it)
/// meets its cap, and the command fails at once, naming it, instead of
/// filling memory. Measured: 100 instances make an index of 33 KB and a
/// unit's object is 2 KB; `tests/scale.rs` and `scripts/bench` go to 500.
pub mod cap {
    /// `data/instances.json`: about 450 bytes a row (with the record of
    /// the applied document), so 500 instances take some 225 KB; the cap
    /// leaves room for over a hundred thousand.
    pub const INDEX: u64 = 64 << 20;
    /// `data/ended.json`: at most 256 records, each an instance's spec
    /// (names and references, a few KiB).
    pub const ENDED: u64 = 64 << 20;
    /// A unit's `.jackin/instance.json`: one spec and its status (whose
    /// lists of files are cut short); env values are at most 128 KiB each.
    pub const OBJECT: u64 = 16 << 20;
    /// A unit's `.jackin/events.jsonl`: at most 600 one-line events.
    pub const EVENTS: u64 = 8 << 20;
    /// `workspaces/NAME.yaml` and `agents/NAME.yaml`: one applied object.
    pub const STORED_OBJECT: u64 = 16 << 20;
    /// `sources/ID.json`: paths, a revision and the last error's lines.
    pub const SOURCE_RECORD: u64 = 4 << 20;
    /// `probes.json`: at most 1024 answers of an image id and a program
    /// or version each.
    pub const PROBES: u64 = 4 << 20;
    /// `home-id`: one short id.
    pub const HOME_ID: u64 = 4 << 10;
    /// `config.yaml`: a handful of settings.
    pub const CONFIG: u64 = 1 << 20;
    /// A unit's `.jackin/isolation.json`: a few hundred bytes a mount.
    pub const ISOLATION_RECORDS: u64 = 1 << 20;
    /// `discarded/<save>/record.json`: per checkout, names and commits,
    /// with lists of files cut short.
    pub const DISCARD_RECORD: u64 = 16 << 20;
}

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

    /// `$JACKIN_HOME`, else `~/.jackin`; why neither can be used, otherwise.
    /// A relative `JACKIN_HOME` is refused: it would name another home in
    /// every directory jackin is run from, and the engine objects and the
    /// controller of one would not find the others.
    pub fn from_env() -> Result<Self, String> {
        match std::env::var_os(HOME_ENV) {
            Some(root) if !root.is_empty() => match Path::new(&root).is_absolute() {
                true => Ok(Self::new(root)),
                false => Err(format!(
                    "{HOME_ENV}={} is not an absolute path: set it to one (such as \
                     \"$PWD/{0}\"), or unset it for ~/.jackin",
                    Path::new(&root).display()
                )),
            },
            _ => std::env::home_dir()
                .map(|home| Self::new(home.join(".jackin")))
                .ok_or_else(|| format!("cannot find a home directory; set {HOME_ENV}")),
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
        match crate::fsutil::read_untrusted(&self.home_id_file(), cap::HOME_ID) {
            Ok(id) => String::from_utf8(id)
                .map(|id| Some(id.trim().to_owned()))
                .map_err(|_| std::io::Error::new(ErrorKind::InvalidData, "it is not UTF-8 text")),
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

    /// Held by `jackin controller` for its whole life, so that one home has
    /// one controller.
    pub fn controller_lock_file(&self) -> PathBuf {
        self.root.join("controller.lock")
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

    /// The unit's isolated-mount records.
    pub fn isolation_file(&self, container: &str) -> PathBuf {
        self.unit_meta_dir(container).join("isolation.json")
    }

    /// The terminal size the operator last attached with, `COLSxROWS`: a
    /// start tells the agent's terminal this size before anyone attaches.
    pub fn terminal_size_file(&self, container: &str) -> PathBuf {
        self.unit_meta_dir(container).join("terminal-size")
    }

    /// The unit's bounded event log.
    pub fn events_file(&self, container: &str) -> PathBuf {
        self.unit_meta_dir(container).join("events.jsonl")
    }

    /// The agent's home, mounted at `/home/agent`.
    pub fn unit_home_dir(&self, container: &str) -> PathBuf {
        self.unit_dir(container).join("home")
    }

    /// The session's own directory, mounted at `/jackin/state`: the agent
    /// writes here, so everything read from it is untrusted.
    pub fn unit_state_dir(&self, container: &str) -> PathBuf {
        self.unit_dir(container).join("state")
    }

    /// What jackin runs in the container (the entry wrapper, the idle-hook
    /// runner, the next start's plan), mounted read-only.
    pub fn unit_bin_dir(&self, container: &str) -> PathBuf {
        self.unit_dir(container).join("bin")
    }

    /// Where a session's `state/artifacts/` is moved when it ended, out of
    /// reach of a purge: `artifacts/<instance>/<finished-at>/`.
    pub fn artifacts_dir(&self, instance: &str) -> PathBuf {
        self.artifacts_root().join(instance)
    }

    /// Where every instance's collected artifacts are.
    pub fn artifacts_root(&self) -> PathBuf {
        self.root.join("artifacts")
    }

    pub fn unit_lock_file(&self, container: &str) -> PathBuf {
        self.data_dir().join(format!("{container}.lock"))
    }

    /// Where the unfinished work of discarded checkouts is saved, one
    /// directory per discard (see `jackin_checkouts::discard`).
    /// Whether `data/` holds anything but run logs: a home whose commands
    /// only ever failed before making anything has no store to repair.
    pub fn holds_data(&self) -> bool {
        let diagnostics = std::ffi::OsStr::new("diagnostics");
        std::fs::read_dir(self.data_dir())
            .is_ok_and(|mut entries| entries.any(|e| e.is_ok_and(|e| e.file_name() != diagnostics)))
    }

    /// What is kept to diagnose jackin itself; not a unit, though under
    /// `data/`.
    pub fn diagnostics_dir(&self) -> PathBuf {
        self.data_dir().join("diagnostics")
    }

    /// The run logs, one per command that wrote any.
    pub fn run_logs_dir(&self) -> PathBuf {
        self.diagnostics_dir().join("runs")
    }

    /// The run log of the run `id` (a run id is jackin's own, never input).
    pub fn run_log(&self, id: &str) -> PathBuf {
        self.run_logs_dir().join(format!("{id}.jsonl"))
    }

    pub fn discarded_dir(&self) -> PathBuf {
        self.root.join("discarded")
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

    /// The checkout of the role source whose URL's digest is `digest`
    /// (hex), in the `roles/` cache.
    pub fn role_checkout_dir(&self, digest: &str) -> PathBuf {
        self.root.join("roles").join(digest)
    }

    /// What probes found in images (see [`crate::probes`]).
    pub fn probes_file(&self) -> PathBuf {
        self.root.join("probes.json")
    }

    pub fn objects_lock_file(&self, plural: &str) -> PathBuf {
        self.objects_dir(plural).join(".lock")
    }
}
