//! The per-instance event log, `.jackin/events.jsonl`: what happened to an
//! instance, newest last, bounded so it never grows without end. `jackin
//! describe` shows the tail. Events carry names and reasons, never a secret.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::PathBuf;

use jackin_files::fsutil::read_untrusted;
use jackin_files::layout::Layout;
use jackin_files::layout::cap;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

/// The log is cut back to [`KEEP`] events once it holds more than this.
const MAX: usize = 600;
const KEEP: usize = 500;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Event {
    #[serde(with = "jiff::fmt::serde::timestamp::second::required")]
    pub at: Timestamp,
    pub reason: String,
    pub message: String,
}

fn file(layout: &Layout, container: &str) -> PathBuf {
    layout.events_file(container)
}

/// Appends an event. The log is a convenience: failing to write it is
/// logged, never fatal.
pub fn record(layout: &Layout, container: &str, reason: &str, message: &str) {
    let event = Event {
        at: Timestamp::now(),
        reason: reason.to_owned(),
        message: message.to_owned(),
    };
    let path = file(layout, container);
    let line = serde_json::to_string(&event).expect("an event serializes");
    // Only a regular file (or none yet) is appended to: opening a FIFO to
    // write would wait for a reader, and a link may lead anywhere.
    if let Ok(meta) = std::fs::symlink_metadata(&path)
        && !meta.is_file()
    {
        tracing::warn!(
            "{}: the event log is not a regular file; no event is recorded",
            path.display()
        );
        return;
    }
    let appended = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .open(&path)
        .and_then(|mut f| writeln!(f, "{line}"));
    if let Err(e) = appended {
        tracing::warn!("cannot record an event in {}: {e}", path.display());
        return;
    }
    let events = read(layout, container);
    if events.len() > MAX {
        let kept: String = events[events.len() - KEEP..]
            .iter()
            .map(|e| serde_json::to_string(e).expect("an event serializes") + "\n")
            .collect();
        if let Err(e) = jackin_files::fsutil::write_atomic(&path, kept.as_bytes()) {
            tracing::warn!("cannot trim {}: {e}", path.display());
        }
    }
}

/// Every event in the log, oldest first; unreadable lines are skipped. A
/// log that is not a regular file within [`cap::EVENTS`] (a FIFO, a link)
/// reads as empty, with a warning naming it: the log is a convenience.
pub fn read(layout: &Layout, container: &str) -> Vec<Event> {
    let path = file(layout, container);
    let bytes = match read_untrusted(&path, cap::EVENTS) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            tracing::warn!("{}: the event log is passed over: {e}", path.display());
            return Vec::new();
        }
    };
    String::from_utf8_lossy(&bytes)
        .lines()
        .filter_map(|line| serde_json::from_str(line).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_is_bounded_and_keeps_the_newest() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        std::fs::create_dir_all(layout.unit_meta_dir("jk-1-a")).unwrap();
        for i in 0..=MAX {
            record(&layout, "jk-1-a", "Test", &i.to_string());
        }
        let events = read(&layout, "jk-1-a");
        assert_eq!(events.len(), KEEP);
        assert_eq!(events.last().unwrap().message, MAX.to_string());
    }
}
