//! This invocation's run: its id, minted at start, and its run log
//! (`data/diagnostics/runs/<id>.jsonl`, see
//! [`jackin_controller::run_logs`]), opened on the first line written to
//! it, so that a command that did nothing leaves no file. The file's first
//! line says which run it is: the id, the command, jackin's version.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use jackin_controller::run_logs;
use jackin_files::layout::Layout;
use tracing_subscriber::fmt::MakeWriter;

/// This invocation's run id and where its log goes.
#[derive(Clone)]
pub struct Run {
    id: String,
    /// The command run (`apply`), if any.
    command: Option<String>,
    /// `None` when the home cannot be found (its error is the command's).
    path: Option<PathBuf>,
    file: Arc<OnceLock<Option<File>>>,
}

impl Run {
    pub fn mint(command: Option<String>) -> Self {
        let id = run_logs::mint();
        let path = Layout::from_env().ok().map(|layout| layout.run_log(&id));
        if let Some(path) = &path {
            run_logs::claim(path.clone());
        }
        Self {
            id,
            command,
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

    /// How an error names this run: `run: ID (log: PATH)`, when it has a
    /// log.
    pub fn handle(&self) -> Option<String> {
        let path = self.log()?;
        Some(format!("run: {} (log: {})", self.id, path.display()))
    }

    /// The command is done: its last breadcrumb (without the error's text,
    /// which may quote what it read), and when it wrote a run log, the logs
    /// past the home's bounds go (but this one).
    pub fn finished(&self, result: &anyhow::Result<()>) {
        match result {
            // A command that did nothing, or failed before it did anything
            // (bad input), leaves no log: its error says it all.
            _ if self.log().is_none() => {}
            Ok(()) => tracing::info!(target: run_logs::TARGET, "finished"),
            Err(_) => tracing::warn!(target: run_logs::TARGET, "failed"),
        }
        if let (Some(_), Ok(layout)) = (self.log(), Layout::from_env()) {
            run_logs::sweep(&layout);
        }
    }

    /// The file, opened on first use, with its first line. A log that
    /// cannot be opened is done without: diagnostics never fail the
    /// command. (Nothing here may log: it runs inside the subscriber.)
    fn file(&self) -> Option<&File> {
        self.file
            .get_or_init(|| {
                let path = self.path.as_ref()?;
                let mut file = jackin_files::fsutil::open_private_append(path).ok()?;
                let first = serde_json::json!({
                    "timestamp": jiff::Timestamp::now().to_string(),
                    "message": "started",
                    "run": self.id,
                    "command": self.command,
                    "version": env!("CARGO_PKG_VERSION"),
                    "pid": std::process::id(),
                    "target": run_logs::TARGET,
                });
                writeln!(file, "{first}").ok()?;
                Some(file)
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
