//! The resume ladder's files in the unit: the start plan jackin writes
//! before every start (`bin/plan`, mounted read-only at `/jackin/bin/plan`)
//! and the wrapper's start report (`state/agent-start`, with each failed
//! rung's error tail in `state/agent-start.<rung>.err`). Which rungs a start
//! has, the plan's text and what a report means are `jackin_plan::ladder`'s;
//! this module only reads and writes, under the limits a file the agent can
//! write needs: small, regular, every line checked.

use std::path::{Path, PathBuf};

use jackin_api::instance::StartKind;
use jackin_files::fsutil::{read_untrusted, remove_if_exists, write_atomic};
use jackin_files::layout::Layout;
use jackin_plan::ladder::{self, StartReport, last_line, render_plan};

/// The plan's path in the unit; its directory is mounted at `/jackin/bin`.
pub fn plan_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_bin_dir(container).join("plan")
}

/// The wrapper's start report in the unit.
pub fn report_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_state_dir(container).join("agent-start")
}

/// Removes the last start's report before a new start (whatever the agent
/// left there: a link goes, not what it points to).
pub fn forget_report(layout: &Layout, container: &str) -> std::io::Result<()> {
    remove_if_exists(&report_file(layout, container))
}

/// A file's modification time, in nanoseconds since the epoch.
fn modified(path: &Path) -> Option<u128> {
    let time = std::fs::symlink_metadata(path)
        .and_then(|m| m.modified())
        .ok()?;
    let since = time.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(since.as_nanos())
}

/// What the report looked like: its modification time and its size
/// (`<nanoseconds>+<bytes>`). The time alone misses a write: the kernel
/// stamps files from a clock that ticks every few milliseconds, and the
/// wrapper appends `try RUNG` within the tick of its `start` line (the
/// suite caught a status that never saw the rung). The report only grows
/// within a start, so the size tells.
fn report_look(path: &Path) -> Option<String> {
    let meta = std::fs::symlink_metadata(path).ok()?;
    Some(format!("{}+{}", modified(path)?, meta.len()))
}

/// Whether the wrapper's start report changed since the status last took it
/// in (`seen`: [`Conversation::report_modified`](jackin_api::instance::Conversation::report_modified)): a start the status does
/// not show yet. One `stat`, no read (the report is the agent's to write,
/// so it is read only by [`read_report`], with its limits). Without `seen`
/// (a status from before jackin recorded it), a report newer than the
/// object counts.
pub fn report_unseen(layout: &Layout, container: &str, seen: Option<&str>) -> bool {
    let path = report_file(layout, container);
    let Some(report) = report_look(&path) else {
        return false;
    };
    match seen {
        Some(seen) => report != seen,
        None => modified(&layout.object_file(container))
            .is_none_or(|object| modified(&path).is_some_and(|report| report > object)),
    }
}

/// Writes the next start's plan into the unit.
pub fn write_plan(
    layout: &Layout,
    container: &str,
    rungs: &[(StartKind, Vec<String>)],
    waits: bool,
) -> std::io::Result<()> {
    write_atomic(
        &plan_file(layout, container),
        render_plan(rungs, waits).as_bytes(),
    )
}

/// The largest report read; a start writes a few hundred bytes.
const MAX_REPORT_BYTES: u64 = 16 * 1024;
/// The largest error tail read of a failed rung.
const MAX_ERROR_BYTES: u64 = 4 * 1024;

/// Reads the last start's report, if there is a sound one. Lines that do
/// not parse are skipped: the agent may have written anything there.
/// Blocking: call it off the runtime.
pub fn read_report(layout: &Layout, container: &str) -> Option<StartReport> {
    let path = report_file(layout, container);
    // Taken before the read: a write after it shows as a change.
    let modified = report_look(&path);
    let bytes = read_untrusted(&path, MAX_REPORT_BYTES).ok()?;
    let text = String::from_utf8_lossy(&bytes);
    ladder::parse_report(&text, modified, |rung| error_line(layout, container, rung))
}

/// The last non-empty line a failed rung wrote to standard error, as
/// [`last_line`] makes it.
fn error_line(layout: &Layout, container: &str, rung: StartKind) -> String {
    let path = layout
        .unit_state_dir(container)
        .join(format!("agent-start.{rung}.err"));
    read_untrusted(&path, MAX_ERROR_BYTES)
        .map(|bytes| last_line(&bytes))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::agent::Strategy;
    use jackin_api::instance::Conversation;
    use jackin_plan::ladder::{Fallback, await_report, fold_report, report_due};
    use jiff::Timestamp;

    /// A home with the unit `jk-1-a` and its `state/` directory.
    fn unit_state() -> (tempfile::TempDir, Layout, PathBuf) {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let state = layout.unit_dir("jk-1-a").join("state");
        std::fs::create_dir_all(&state).unwrap();
        (dir, layout, state)
    }

    #[test]
    fn a_report_is_unseen_until_the_status_took_it_in() {
        let (_dir, layout, state) = unit_state();
        assert!(
            !report_unseen(&layout, "jk-1-a", None),
            "no report, nothing to see"
        );
        std::fs::write(state.join("agent-start"), "start 1-1\ntry minted\n").unwrap();
        // Written after the report, the object says nothing of whether the
        // report was read: only what the status recorded does.
        let object = layout.object_file("jk-1-a");
        std::fs::create_dir_all(object.parent().unwrap()).unwrap();
        std::fs::write(&object, "{}").unwrap();
        let taken = read_report(&layout, "jk-1-a").unwrap().modified;
        assert!(report_unseen(&layout, "jk-1-a", Some("0")), "an older read");
        assert!(!report_unseen(&layout, "jk-1-a", taken.as_deref()));
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(
            state.join("agent-start"),
            "start 1-1\ntry minted\nfallback minted 1\n",
        )
        .unwrap();
        assert!(
            report_unseen(&layout, "jk-1-a", taken.as_deref()),
            "changed since"
        );

        // The rung appended within the same tick of the kernel's clock: the
        // time says nothing new, the size does.
        let report = state.join("agent-start");
        std::fs::write(&report, "start 2-2\n").unwrap();
        let stamp = std::fs::metadata(&report).unwrap().modified().unwrap();
        let taken = read_report(&layout, "jk-1-a").unwrap().modified;
        let mut file = std::fs::OpenOptions::new()
            .append(true)
            .open(&report)
            .unwrap();
        std::io::Write::write_all(&mut file, b"try continue-requested\n").unwrap();
        file.set_modified(stamp).unwrap();
        assert!(
            report_unseen(&layout, "jk-1-a", taken.as_deref()),
            "appended"
        );
    }

    #[test]
    fn a_start_read_within_its_grace_period_is_read_again_after_it() {
        let (_dir, layout, state) = unit_state();
        let at = |second: i64| Timestamp::from_second(second).unwrap();
        let mut conv = Conversation {
            last_start: Some(StartKind::Minted),
            ..Conversation::first("claude".into(), Strategy::Id, Some("u1".into()))
        };
        await_report(&mut conv, at(1_700_000_000));
        assert_eq!(conv.start_settles_at, Some(at(1_700_000_015)));
        assert!(!report_due(conv.start_settles_at, at(1_700_000_015)));
        assert!(report_due(conv.start_settles_at, at(1_700_000_016)));
        std::fs::write(
            state.join("agent-start"),
            "start 9-9
",
        )
        .unwrap();
        assert!(
            report_unseen(&layout, "jk-1-a", conv.report_modified.as_deref()),
            "the first report of an awaited start is unseen"
        );
        // Read between `start` and `try`: still awaited.
        let report = read_report(&layout, "jk-1-a").unwrap();
        fold_report(&mut conv, &report, at(1_700_000_001));
        assert_eq!(conv.start_settles_at, Some(at(1_700_000_015)));
        // The wrapper started its rung late (a loaded machine): its own
        // time replaces jackin's guess.
        std::fs::write(
            state.join("agent-start"),
            "start 9-9\ntry resumed-by-id 1700000020\n",
        )
        .unwrap();
        let report = read_report(&layout, "jk-1-a").unwrap();
        assert_eq!(report.settles_at, Some(1_700_000_020));
        fold_report(&mut conv, &report, at(1_700_000_016));
        assert_eq!(conv.last_start, Some(StartKind::ResumedById));
        assert_eq!(conv.start_settles_at, Some(at(1_700_000_020)));
        // The pass after it: settled, nothing more awaited.
        fold_report(&mut conv, &report, at(1_700_000_021));
        assert_eq!(conv.last_start, Some(StartKind::ResumedById));
        assert_eq!(conv.start_settles_at, None);
        // A wrapper before the time says nothing of it: nothing awaited.
        std::fs::write(state.join("agent-start"), "start 8-8\ntry fresh\n").unwrap();
        let report = read_report(&layout, "jk-1-a").unwrap();
        assert_eq!(report.settles_at, None);
    }

    #[test]
    fn a_hostile_report_is_read_safely() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let state = layout.unit_dir("jk-1-a").join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(
            state.join("agent-start"),
            "start 17-3\ntry minted\nfallback minted 1\nfallback bogus 2\ntry \x1b[31mfresh\n\
             fallback continue-requested 1 1700000000 1700000002\n\
             fallback fresh 1 17000000x0 1700000002\ngarbage\n",
        )
        .unwrap();
        std::fs::write(
            state.join("agent-start.minted.err"),
            "first\n\x1b]0;title\x07\x1b[31mError:\x1b[39m session \x1b[1;31mexists\x1b(B\x07\n\n",
        )
        .unwrap();
        let report = read_report(&layout, "jk-1-a").unwrap();
        assert_eq!(report.stamp, "17-3");
        assert_eq!(report.started, None, "an unknown rung word is not trusted");
        assert_eq!(
            report.fallbacks,
            [
                // A wrapper before the window: none.
                Fallback {
                    rung: StartKind::Minted,
                    exit_code: 1,
                    error: "Error: session exists".into(),
                    window: None,
                },
                Fallback {
                    rung: StartKind::ContinueRequested,
                    exit_code: 1,
                    error: String::new(),
                    window: Some((1_700_000_000, 1_700_000_002)),
                },
                // A window that is not two numbers is none.
                Fallback {
                    rung: StartKind::Fresh,
                    exit_code: 1,
                    error: String::new(),
                    window: None,
                },
            ]
        );
        // A FIFO where the report goes is not waited on.
        let fifo = state.join("agent-start");
        std::fs::remove_file(&fifo).unwrap();
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        assert_eq!(read_report(&layout, "jk-1-a"), None);
    }
}
