//! One controller per home: two loops over the same store would race each
//! other's reconciles and sweeps, and the operator would not know which one
//! printed what. The controller holds `controller.lock` under the home for
//! its whole life; the file says whose it is.

use std::path::PathBuf;

use jackin_reconcilers::Layout;
use jackin_reconcilers::fsutil::{self, FileLock};

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

/// The most of the lock file read to name its holder: a pid and a word.
const HOLDER_CAP: u64 = 4 << 10;

impl ControllerLock {
    /// Takes the home's controller lock, or says which process holds it.
    pub fn take(layout: &Layout) -> Result<Self, NotTheOnly> {
        let path = layout.controller_lock_file();
        let io = |source| NotTheOnly::Io {
            path: path.clone(),
            source,
        };
        match FileLock::try_acquire(&path).map_err(io)? {
            Some(lock) => {
                lock.record_holder(&format!("pid {}\n", std::process::id()))
                    .map_err(io)?;
                Ok(Self { _lock: lock })
            }
            None => Err(NotTheOnly::Running {
                holder: holder(&path),
                home: layout.root().to_owned(),
            }),
        }
    }
}

/// Who the lock file says holds it (`pid 1234`), shown escaped of anything
/// but the digits and the word; a file that says nothing useful (the
/// holder is between taking the lock and writing its pid) is "pid unknown".
fn holder(path: &std::path::Path) -> String {
    let text = fsutil::read_untrusted(path, HOLDER_CAP)
        .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
        .unwrap_or_default();
    match text.trim().strip_prefix("pid ") {
        Some(pid) if !pid.is_empty() && pid.bytes().all(|b| b.is_ascii_digit()) => {
            format!("pid {pid}")
        }
        _ => "pid unknown".to_owned(),
    }
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
