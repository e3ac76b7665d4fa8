//! A build's output, kept in the unit when the build fails: the role's
//! image (`.jackin/role-build.log`) and the agent installed on it
//! (`.jackin/agent-install.log`). The error names the file, so the operator
//! reads the whole output, not only the line the engine failed on; the next
//! build that succeeds removes it.

use std::path::{Path, PathBuf};

use jackin_files::fsutil;

/// The output kept of one build, at most: its end, where the failure is.
const MAX_LOG_BYTES: usize = 1 << 20;

/// Collects a build's output lines for [`BuildLog::failed`].
pub(crate) struct BuildLog {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl BuildLog {
    /// A log that a failure writes to `file` in the unit's `meta_dir`.
    pub(crate) fn new(meta_dir: &Path, file: &str) -> Self {
        Self {
            path: meta_dir.join(file),
            bytes: Vec::new(),
        }
    }

    /// One line of the build's output; only the last [`MAX_LOG_BYTES`] are
    /// kept.
    pub(crate) fn line(&mut self, line: &str) {
        self.bytes.extend_from_slice(line.as_bytes());
        if !line.ends_with('\n') {
            self.bytes.push(b'\n');
        }
        if self.bytes.len() > 2 * MAX_LOG_BYTES {
            self.bytes.drain(..self.bytes.len() - MAX_LOG_BYTES);
        }
    }

    /// The build failed: writes what it printed, and says where, for the
    /// error. `None` when it printed nothing (it failed before it ran) or
    /// the file could not be written.
    pub(crate) fn failed(&self) -> Option<String> {
        if self.bytes.is_empty() {
            return None;
        }
        let start = self.bytes.len().saturating_sub(MAX_LOG_BYTES);
        fsutil::write_atomic(&self.path, &self.bytes[start..])
            .is_ok()
            .then(|| self.path.display().to_string())
    }

    /// The build succeeded: an earlier failure's log no longer says
    /// anything true.
    pub(crate) fn succeeded(&self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failure_keeps_the_output_and_a_success_removes_it() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = BuildLog::new(dir.path(), "role-build.log");
        assert_eq!(log.failed(), None, "nothing printed, nothing kept");
        log.line("Step 1/2 : FROM base");
        log.line("boom\n");
        let kept = log.failed().unwrap();
        assert_eq!(
            std::fs::read_to_string(&kept).unwrap(),
            "Step 1/2 : FROM base\nboom\n"
        );
        BuildLog::new(dir.path(), "role-build.log").succeeded();
        assert!(!Path::new(&kept).exists());
    }

    #[test]
    fn a_huge_output_keeps_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let mut log = BuildLog::new(dir.path(), "agent-install.log");
        let filler = "x".repeat(1023);
        for _ in 0..3 * 1024 {
            log.line(&filler);
        }
        log.line("the failing line");
        let kept = std::fs::read(log.failed().unwrap()).unwrap();
        assert!(kept.len() <= MAX_LOG_BYTES);
        assert!(kept.ends_with(b"the failing line\n"));
    }
}
