//! One controller per home: two loops over the same store would race each
//! other's reconciles and sweeps, and the operator would not know which one
//! printed what. The controller holds `controller.lock` under the home for
//! its whole life. Nothing is written into it (a no-op `--once` pass writes
//! nothing): the kernel's table of locks (`/proc/locks`) says whose it is.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use jackin_files::fsutil::FileLock;
use jackin_files::layout::Layout;

/// The lock of the one controller of a home, released when dropped (or
/// when the process ends, however it ends).
#[derive(Debug)]
pub struct ControllerLock {
    _lock: FileLock,
}

/// Why this controller may not run.
#[derive(Debug, thiserror::Error)]
pub enum NotTheOnly {
    #[error(
        "another jackin controller ({holder}) runs on this home ({home}); one home has one \
         controller: stop that one first, or use another JACKIN_HOME"
    )]
    Running { holder: String, home: PathBuf },
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
}

impl ControllerLock {
    /// Takes the home's controller lock, or says which process holds it.
    pub fn take(layout: &Layout) -> Result<Self, NotTheOnly> {
        let path = layout.controller_lock_file();
        match FileLock::try_acquire(&path) {
            Ok(Some(lock)) => Ok(Self { _lock: lock }),
            Ok(None) => Err(NotTheOnly::Running {
                holder: holder(&path).map_or("pid unknown".to_owned(), |pid| format!("pid {pid}")),
                home: layout.root().to_owned(),
            }),
            Err(source) => Err(NotTheOnly::Io { path, source }),
        }
    }
}

/// The process that holds the lock on `path`, from `/proc/locks`, whose
/// lines name each lock's holder and file (`1: FLOCK ADVISORY WRITE PID
/// MAJOR:MINOR:INODE 0 EOF`, the device numbers in hex).
fn holder(path: &Path) -> Option<u32> {
    let meta = std::fs::metadata(path).ok()?;
    let file = file_id(meta.dev(), meta.ino());
    let locks = std::fs::read_to_string("/proc/locks").ok()?;
    locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        match fields.as_slice() {
            [_, "FLOCK", _, _, pid, id, ..] if *id == file => pid.parse().ok(),
            _ => None,
        }
    })
}

/// A file as `/proc/locks` names it: `MAJOR:MINOR:INODE`, the device's
/// numbers in two-digit hex (Linux's encoding of `st_dev`).
fn file_id(dev: u64, inode: u64) -> String {
    let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & !0xfff);
    let minor = (dev & 0xff) | ((dev >> 12) & !0xff);
    format!("{major:02x}:{minor:02x}:{inode}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_the_same_home_names_the_first_holder() {
        let home = tempfile::tempdir().unwrap();
        let layout = Layout::new(home.path());
        let first = ControllerLock::take(&layout).unwrap();
        let err = ControllerLock::take(&layout).unwrap_err().to_string();
        assert!(
            err.contains(&format!("pid {}", std::process::id())),
            "{err}"
        );
        drop(first);
        ControllerLock::take(&layout).expect("free again once the first is gone");
    }
}
