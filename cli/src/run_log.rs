//! This invocation's run: its id, minted at start, and its run log
//! (`data/diagnostics/runs/<id>.jsonl`, see
//! [`jackin_controller::run_logs`]), opened on the first line written to
//! it, so that a command that writes no breadcrumb leaves no file.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use jackin_controller::run_logs;
use jackin_reconcilers::Layout;
use tracing_subscriber::fmt::MakeWriter;

/// This invocation's run id and where its log goes.
#[derive(Clone)]
pub struct Run {
    pub id: String,
    /// `None` when the home cannot be found (its error is the command's).
    path: Option<PathBuf>,
    file: Arc<OnceLock<Option<File>>>,
}

impl Run {
    pub fn mint() -> Self {
        let id = run_logs::mint();
        let path = Layout::from_env().ok().map(|layout| layout.run_log(&id));
        Self {
            id,
            path,
            file: Arc::default(),
        }
    }

    /// The run log, if anything was written to it.
    pub fn log(&self) -> Option<&Path> {
        match self.file.get() {
            Some(Some(_)) => self.path.as_deref(),
            _ => None,
        }
    }

    /// How an error names this run: `run: ID (log: PATH)`.
    pub fn handle(&self) -> String {
        match self.log() {
            Some(path) => format!("run: {} (log: {})", self.id, path.display()),
            None => format!("run: {}", self.id),
        }
    }

    /// The command is done: its last breadcrumb (without the error's text,
    /// which may quote what it read), and when it wrote a run log, the logs
    /// past the home's bounds go (but this one).
    pub fn finished(&self, result: &anyhow::Result<()>) {
        match result {
            Ok(()) => tracing::info!(target: run_logs::TARGET, "finished"),
            Err(_) => tracing::warn!(target: run_logs::TARGET, "failed"),
        }
        if let (Some(path), Ok(layout)) = (self.log(), Layout::from_env()) {
            run_logs::sweep(&layout, Some(path));
        }
    }

    /// The file, opened on first use. A log that cannot be opened is done
    /// without: diagnostics never fail the command. (Nothing here may log:
    /// it runs inside the subscriber.)
    fn file(&self) -> Option<&File> {
        self.file
            .get_or_init(|| {
                let path = self.path.as_ref()?;
                jackin_reconcilers::fsutil::open_private_append(path).ok()
            })
            .as_ref()
    }
}

/// Writes to the run log, or nowhere when it cannot be opened.
pub struct Appender<'a>(Option<&'a File>);

impl Write for Appender<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        match &mut self.0 {
            Some(file) => file.write(buf),
            None => Ok(buf.len()),
        }
    }

    fn flush(&mut self) -> std::io::Result<()> {
        match &mut self.0 {
            Some(file) => file.flush(),
            None => Ok(()),
        }
    }
}

impl<'a> MakeWriter<'a> for Run {
    type Writer = Appender<'a>;

    fn make_writer(&'a self) -> Self::Writer {
        Appender(self.file())
    }
}
