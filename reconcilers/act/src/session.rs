//! The session's files in the unit: the entry wrapper and the idle-hook
//! runner it installs into `bin/`, the completion marker it reads from
//! `state/` (what the marker means is `jackin_plan::marker`'s), the
//! attached lock, the remembered terminal size, and the artifacts collected
//! when a session ends; the workspace's setup as the wrapper runs it
//! ([`write_setup`]) and its report ([`take_setup_result`]).
//!
//! The marker is read (off the runtime, as a file the agent can write) at every
//! look at a container that is not running; the engine is asked (one inspect)
//! only when the marker cannot say it all, so a converged pass stays at one
//! engine call. Each start sets the last run's marker aside
//! ([`retire_marker`]), so the marker present is always the latest run's.
//!
//! Before each create and start, [`restore_unit_dirs`] makes again any of the
//! unit's bound directories (`home/`, `state/`, `bin/`) someone deleted:
//! pinning makes all three, so one missing later was deleted, and the engine
//! would refuse its bind.
//!
//! The terminal's size: the engine's API (1.41) takes no console size at
//! creation, so the start step sizes the new terminal itself, to the size the
//! operator last attached with (`.jackin/terminal-size`, which every attach
//! records at each size it sees), else [`DEFAULT_TERMINAL`]. An agent redraws
//! on a change of size only, so an attach (and a live watcher with nobody
//! attached) first sets one column less, then the true size
//! [`REDRAW_NUDGE_GAP`] later.

use std::path::PathBuf;

use jackin_api::setup::{PinnedSetup, SetupOutcome, SetupStatus};
use jackin_files::fsutil::{
    Links, ensure_private_dir, open_regular_file, read_untrusted, remove_if_exists, write_atomic,
};
use jackin_files::layout::Layout;
use jackin_plan::attention;
use jackin_plan::marker;
use jackin_plan::marker::MarkerState;
use jiff::Timestamp;

/// The wrapper, as shipped with this version of jackin.
pub const ENTRY_SCRIPT: &str = include_str!("entry.sh");

/// The wrapper's path in the unit (mounted read-only at [`ENTRY_PATH`](jackin_plan::marker::ENTRY_PATH)).
pub fn entry_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_bin_dir(container).join("entry")
}

/// The idle-hook runner, as shipped with this version of jackin.
pub const HOOK_SCRIPT: &str = include_str!("hook.sh");

/// The report program an agent's hooks run, as shipped with this version.
pub const REPORT_SCRIPT: &str = include_str!("report.sh");

/// Writes the wrapper, the idle-hook runner and the report program into
/// the unit's `bin/` unless they are already there, as they are; returns
/// the wrapper's path.
pub fn install_entry(layout: &Layout, container: &str) -> std::io::Result<PathBuf> {
    let path = entry_file(layout, container);
    let dir = path.parent().expect("the entry has a parent");
    for (file, script) in [
        (path.clone(), ENTRY_SCRIPT),
        (dir.join("hook"), HOOK_SCRIPT),
        (dir.join("report"), REPORT_SCRIPT),
    ] {
        // Read as any file of the unit is (a longer one is not the script).
        let found = read_untrusted(&file, script.len() as u64).ok();
        if found.as_deref() != Some(script.as_bytes()) {
            ensure_private_dir(dir)?;
            write_atomic(&file, script.as_bytes())?;
        }
    }
    Ok(path)
}

/// Makes again each directory of the unit that jackin owns and the
/// container binds (`home/`, `state/`, `bin/` with the wrapper) which is
/// gone: someone deleted it, and the engine would refuse to bind what is
/// not there, so the session could never start again. Returns the ones
/// made, for the operator to hear of: what they held is lost.
pub fn restore_unit_dirs(layout: &Layout, container: &str) -> std::io::Result<Vec<&'static str>> {
    let mut made = Vec::new();
    for (name, dir) in [
        ("home", layout.unit_home_dir(container)),
        ("state", layout.unit_state_dir(container)),
        ("bin", layout.unit_bin_dir(container)),
    ] {
        if std::fs::symlink_metadata(&dir).is_err_and(|e| e.kind() == std::io::ErrorKind::NotFound)
        {
            ensure_private_dir(&dir)?;
            made.push(name);
        }
    }
    if made.contains(&"bin") {
        install_entry(layout, container)?;
    }
    Ok(made)
}

fn marker_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_state_dir(container).join("exit.json")
}

/// The largest marker read; the wrapper writes about 300 bytes.
const MAX_MARKER_BYTES: u64 = 64 * 1024;

/// Reads the unit's marker. The agent can write `state/`, so the file may be
/// a link, a FIFO or huge: it is read with [`read_untrusted`], and anything
/// but a small regular file is malformed. Blocking: call it off the runtime.
pub fn read_marker(layout: &Layout, container: &str) -> MarkerState {
    let path = marker_file(layout, container);
    let bytes = match read_untrusted(&path, MAX_MARKER_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return MarkerState::Absent,
        Err(e) => return MarkerState::Malformed(format!("{}: {e}", path.display())),
    };
    let written = std::fs::symlink_metadata(&path)
        .and_then(|m| m.modified())
        .ok()
        .and_then(|t| Timestamp::try_from(t).ok());
    marker::parse(&bytes, written, &path.display().to_string())
}

/// Whether an operator is attached: `jackin attach` holds the unit's
/// attached lock while they are. A missing lock file means nobody (and
/// creates nothing).
pub fn attached(layout: &Layout, container: &str) -> bool {
    jackin_files::fsutil::FileLock::is_held(&layout.attached_lock_file(container)).unwrap_or(false)
}

/// When an operator was last attached to the unit: now while one is, else
/// when the last one left (`jackin attach` touches the attached lock as it
/// returns; the lock file is made at the first attach). `None` when nobody
/// ever attached.
pub fn last_attached(layout: &Layout, container: &str) -> Option<Timestamp> {
    if attached(layout, container) {
        return Some(Timestamp::now());
    }
    let path = layout.attached_lock_file(container);
    let modified = std::fs::symlink_metadata(path).ok()?.modified().ok()?;
    Timestamp::try_from(modified).ok()
}

/// The terminal size a start gives the agent when no operator has attached
/// yet: the engine's API (1.41) cannot set one at creation, and until it is
/// set the terminal is 0×0, at which a full-screen agent draws nothing.
pub const DEFAULT_TERMINAL: (u16, u16) = (120, 40);

/// The size (columns, rows) the operator last attached to the unit with,
/// else [`DEFAULT_TERMINAL`]. The file is jackin's own (the container never
/// sees `.jackin/`), read capped all the same.
pub fn terminal_size(layout: &Layout, container: &str) -> (u16, u16) {
    let path = layout.terminal_size_file(container);
    read_untrusted(&path, 32)
        .ok()
        .and_then(|bytes| parse_size(std::str::from_utf8(&bytes).ok()?))
        .unwrap_or(DEFAULT_TERMINAL)
}

/// The agent's report of its state in this container's run (its hooks run
/// [`REPORT_SCRIPT`]), if it made one. The agent can write the file: it is
/// read as every file of `state/` is (no link followed, nothing but a
/// regular file opened, a few bytes at most), and only the program's own
/// form is taken.
pub fn agent_report(layout: &Layout, container: &str) -> Option<attention::Report> {
    let path = layout.unit_state_dir(container).join(REPORT_FILE);
    let bytes = read_untrusted(&path, attention::MAX_REPORT_BYTES).ok()?;
    attention::parse_report(&bytes)
}

/// The report's file in the unit's `state/`, as [`REPORT_SCRIPT`] names it.
const REPORT_FILE: &str = "report";

/// Remembers the size an operator attached with, for the unit's next starts.
pub fn remember_terminal_size(
    layout: &Layout,
    container: &str,
    (columns, rows): (u16, u16),
) -> std::io::Result<()> {
    let path = layout.terminal_size_file(container);
    if read_untrusted(&path, 32).is_ok_and(|held| held == format!("{columns}x{rows}\n").as_bytes())
    {
        return Ok(());
    }
    write_atomic(&path, format!("{columns}x{rows}\n").as_bytes())
}

/// How long a redraw nudge holds the narrower size before the true one
/// comes back: long enough for a full-screen agent to take the first
/// change on its own (claude folds two changes that come together into
/// one, and then draws only what changed, which is nothing).
pub const REDRAW_NUDGE_GAP: std::time::Duration = std::time::Duration::from_millis(300);

/// The size a redraw nudge narrows the terminal to: one column less, as a
/// person dragging the window's edge does. A change of rows alone makes
/// claude draw only what changed; a change of width makes it lay its
/// whole screen out again.
pub fn redraw_nudge((columns, rows): (u16, u16)) -> (u16, u16) {
    (columns.saturating_sub(1).max(1), rows)
}

/// `COLSxROWS`, each from 1 to 1000 (larger is no terminal).
fn parse_size(text: &str) -> Option<(u16, u16)> {
    let (columns, rows) = text.trim().split_once('x')?;
    let size = |n: &str| n.parse::<u16>().ok().filter(|n| (1..=1000).contains(n));
    Some((size(columns)?, size(rows)?))
}

/// Sets the marker of a recorded session aside before the container runs
/// again, so that a marker is always the latest run's.
pub fn retire_marker(layout: &Layout, container: &str) -> std::io::Result<()> {
    let path = marker_file(layout, container);
    if path.exists() {
        std::fs::rename(&path, path.with_file_name("exit.prev.json"))?;
    }
    Ok(())
}

/// Moves what the agent left in `state/artifacts/` to
/// `JACKIN_HOME/artifacts/<instance>/<finished-at>/`, outside the unit, so
/// a purge does not take it. Returns where it went, if there was anything.
pub fn collect_artifacts(
    layout: &Layout,
    container: &str,
    instance: &str,
    finished_at: &str,
) -> std::io::Result<Option<PathBuf>> {
    let from = layout.unit_state_dir(container).join("artifacts");
    // The agent made it: a link (to anywhere on the host) is not collected.
    let is_dir = std::fs::symlink_metadata(&from).is_ok_and(|m| m.is_dir());
    let has_any = is_dir && std::fs::read_dir(&from).is_ok_and(|mut d| d.next().is_some());
    if !has_any {
        return Ok(None);
    }
    let to = layout
        .artifacts_dir(instance)
        .join(collection_name(finished_at));
    let parent = to.parent().expect("artifacts have a parent");
    ensure_private_dir(parent)?;
    remove_if_exists(&to)?;
    if let Err(e) = std::fs::rename(&from, &to) {
        // The sweeps remove an instance's directory once its last
        // collection expired: one removed since it was made is made again.
        if e.kind() != std::io::ErrorKind::NotFound || parent.exists() {
            return Err(e);
        }
        ensure_private_dir(parent)?;
        std::fs::rename(&from, &to)?;
    }
    Ok(Some(to))
}

/// The name of a session's collection: when the session finished, in RFC
/// 3339, with every character but a letter or a digit made `-`.
fn collection_name(finished_at: &str) -> String {
    finished_at
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

/// When the session of the collection `name` finished, read back from the
/// name ([`collection_name`]); none for a name jackin did not give.
fn collected_at(name: &str) -> Option<Timestamp> {
    let (date, time) = name.split_once('T')?;
    let mut parts = time.splitn(4, '-');
    let (hour, minute, second) = (parts.next()?, parts.next()?, parts.next()?);
    let text = match parts.next() {
        Some(fraction) => format!("{date}T{hour}:{minute}:{second}.{fraction}"),
        None => format!("{date}T{hour}:{minute}:{second}"),
    };
    text.parse().ok()
}

/// A session's collected artifacts: `artifacts/<instance>/<name>/`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Collection {
    pub instance: String,
    pub name: String,
    /// When its session finished (by its name; else the directory's time).
    pub collected_at: Timestamp,
}

/// Whether `name` may be a directory of `artifacts/`: no `.`, `/` or
/// anything else that could climb out of it.
fn plain_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The real directories of `dir` with plain names, and their metadata.
fn plain_dirs(dir: &std::path::Path) -> Vec<(String, std::fs::Metadata)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let meta = std::fs::symlink_metadata(entry.path()).ok()?;
            (plain_name(&name) && meta.is_dir()).then_some((name, meta))
        })
        .collect()
}

/// The collections past `retention` at `now`, oldest first: what the
/// sweeps remove.
pub fn expired_artifacts(
    layout: &Layout,
    retention: std::time::Duration,
    now: Timestamp,
) -> Vec<Collection> {
    let mut out = Vec::new();
    for (instance, _) in plain_dirs(&layout.artifacts_root()) {
        for (name, meta) in plain_dirs(&layout.artifacts_dir(&instance)) {
            // A directory jackin did not name goes by its own age.
            let at = collected_at(&name).unwrap_or_else(|| {
                meta.modified()
                    .ok()
                    .and_then(|t| Timestamp::try_from(t).ok())
                    .unwrap_or(now)
            });
            if jackin_checkouts::discard::expires_at(at, retention) <= now {
                out.push(Collection {
                    instance: instance.clone(),
                    name,
                    collected_at: at,
                });
            }
        }
    }
    out.sort_by_key(|c| c.collected_at);
    out
}

/// Removes a collection (a sweep's finding), and its instance's directory
/// once nothing else is in it; whether the collection was there.
pub fn remove_artifacts(layout: &Layout, collection: &Collection) -> std::io::Result<bool> {
    if !plain_name(&collection.instance) || !plain_name(&collection.name) {
        return Err(std::io::Error::other(format!(
            "artifacts/{}/{} is not the name of a collection",
            collection.instance, collection.name
        )));
    }
    let parent = layout.artifacts_dir(&collection.instance);
    let dir = parent.join(&collection.name);
    let there = std::fs::symlink_metadata(&dir).is_ok();
    remove_if_exists(&dir)?;
    match std::fs::remove_dir(&parent) {
        Err(e)
            if !matches!(
                e.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::DirectoryNotEmpty
            ) =>
        {
            Err(e)
        }
        _ => Ok(there),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_collections_time_is_read_back_from_its_name() {
        for finished in ["2026-12-08T00:20:08Z", "2026-12-08T00:20:08.123456789Z"] {
            let at: Timestamp = finished.parse().unwrap();
            let name = collection_name(&at.to_string());
            assert!(plain_name(&name), "{name}");
            assert_eq!(collected_at(&name), Some(at), "{name}");
        }
        for other in ["notes", "2026-12-08", "2026-12-08Tsoon", ""] {
            assert_eq!(collected_at(other), None, "{other:?}");
        }
    }

    #[test]
    fn a_start_uses_the_size_the_operator_last_attached_with_else_the_default() {
        let root = tempfile::tempdir().unwrap();
        let layout = Layout::new(root.path());
        let unit = "jk-unit";
        ensure_private_dir(&layout.unit_meta_dir(unit)).unwrap();
        assert_eq!(terminal_size(&layout, unit), DEFAULT_TERMINAL);
        remember_terminal_size(&layout, unit, (101, 33)).unwrap();
        assert_eq!(terminal_size(&layout, unit), (101, 33));
        for bad in ["0x40", "120x", "99999x40", "a link's text", ""] {
            std::fs::write(layout.terminal_size_file(unit), bad).unwrap();
            assert_eq!(terminal_size(&layout, unit), DEFAULT_TERMINAL, "{bad:?}");
        }
    }
}

/// The setup the wrapper runs before the agent, in the unit (mounted
/// read-only at `/jackin/bin/setup`).
pub fn setup_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_bin_dir(container).join("setup")
}

/// What the wrapper reports of the setup it ran, in `state/`.
fn setup_result_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_state_dir(container).join("setup.result")
}

/// The setup's output as the wrapper wrote it, in `state/`.
fn setup_output_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_state_dir(container).join("setup.log")
}

/// The end of the setup's output, kept by jackin beside the object.
pub fn setup_log_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_meta_dir(container).join("setup.log")
}

/// The most of the setup's output kept: its end.
const SETUP_LOG_KEPT: u64 = 64 * 1024;

/// Writes the setup the wrapper runs before the agent at this start, as it
/// reads it: the digest that says whether it ran already (the wrapper runs
/// it once per digest), the timeout, `skip` when the operator skipped it,
/// and one argv element a line, never evaluated. No setup: no file.
pub fn write_setup(
    layout: &Layout,
    container: &str,
    setup: Option<&PinnedSetup>,
    skip: bool,
) -> std::io::Result<()> {
    let path = setup_file(layout, container);
    let Some(setup) = setup else {
        return remove_if_exists(&path);
    };
    let mut text = format!(
        "digest {}\ntimeout {}\n",
        setup.digest, setup.timeout_seconds
    );
    if skip {
        text.push_str("skip\n");
    }
    for arg in &setup.command {
        text.push_str(&format!("arg {arg}\n"));
    }
    write_atomic(&path, text.as_bytes())
}

/// Whether the wrapper reported a setup jackin has not taken in (a `stat`,
/// for the no-op fast path).
pub fn setup_reported(layout: &Layout, container: &str) -> bool {
    std::fs::symlink_metadata(setup_result_file(layout, container)).is_ok()
}

/// The setup's result the wrapper reported and jackin has not taken in
/// yet, taken in now: parsed (the agent can write `state/`: a file that
/// does not parse reports nothing), the end of its output kept in
/// `.jackin/setup.log`, and the report removed, so that the next report is
/// a new run's. Blocking: call it off the runtime.
pub fn take_setup_result(layout: &Layout, container: &str) -> Option<SetupStatus> {
    let path = setup_result_file(layout, container);
    if !setup_reported(layout, container) {
        return None;
    }
    let parsed = read_untrusted(&path, 1024)
        .ok()
        .and_then(|bytes| parse_setup_result(&String::from_utf8_lossy(&bytes)));
    if parsed.is_some() {
        let output = setup_output_file(layout, container);
        let kept = tail_untrusted(&output, SETUP_LOG_KEPT).unwrap_or_default();
        if let Err(e) = write_atomic(&setup_log_file(layout, container), &kept) {
            tracing::warn!(container, "the setup's output was not kept: {e}");
        }
    }
    if let Err(e) = remove_if_exists(&path) {
        tracing::warn!(container, "the setup's report stays: {e}");
    }
    parsed
}

/// A setup report: `digest HEX`, `outcome done|failed|timed-out|skipped`
/// and, when it exited, `code N`.
fn parse_setup_result(text: &str) -> Option<SetupStatus> {
    let (mut digest, mut outcome, mut code) = (None, None, None);
    for line in text.lines() {
        match line.split_once(' ') {
            Some(("digest", d)) if !d.is_empty() && d.bytes().all(|b| b.is_ascii_hexdigit()) => {
                digest = Some(d.to_owned());
            }
            Some(("outcome", "done")) => outcome = Some(SetupOutcome::Done),
            Some(("outcome", "failed")) => outcome = Some(SetupOutcome::Failed),
            Some(("outcome", "timed-out")) => outcome = Some(SetupOutcome::TimedOut),
            Some(("outcome", "skipped")) => outcome = Some(SetupOutcome::Skipped),
            Some(("code", n)) => code = n.parse().ok(),
            _ => {}
        }
    }
    Some(SetupStatus {
        digest: digest?,
        outcome: outcome?,
        exit_code: code,
    })
}

/// The last `max_bytes` of a file the agent can write: a regular file
/// only, no link followed.
fn tail_untrusted(path: &std::path::Path, max_bytes: u64) -> std::io::Result<Vec<u8>> {
    use std::io::{Read, Seek, SeekFrom};
    let mut file = open_regular_file(path, Links::Refuse)?;
    let len = file.metadata()?.len();
    file.seek(SeekFrom::Start(len.saturating_sub(max_bytes)))?;
    let mut out = Vec::new();
    file.take(max_bytes).read_to_end(&mut out)?;
    Ok(out)
}

#[cfg(test)]
mod setup_tests {
    use super::*;

    #[test]
    fn a_setup_report_parses_only_as_the_wrapper_writes_it() {
        let done = parse_setup_result("digest 0a1b\noutcome done\ncode 0\n").unwrap();
        assert_eq!(done.outcome, SetupOutcome::Done);
        assert_eq!(done.exit_code, Some(0));
        let timed = parse_setup_result("digest ff\noutcome timed-out\n").unwrap();
        assert_eq!(
            (timed.outcome, timed.exit_code),
            (SetupOutcome::TimedOut, None)
        );
        assert!(parse_setup_result("digest x/../y\noutcome done\n").is_none());
        assert!(parse_setup_result("outcome done\n").is_none());
        assert!(parse_setup_result("digest ab\noutcome maybe\n").is_none());
    }

    /// The report is taken in once: the end of the output is kept, and a
    /// report that is a link is not followed.
    #[test]
    fn a_setup_report_is_taken_in_once_with_the_end_of_its_output() {
        let home = tempfile::tempdir().unwrap();
        let layout = Layout::new(home.path());
        let state = layout.unit_state_dir("u");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::create_dir_all(layout.unit_meta_dir("u")).unwrap();
        let long = format!("{}the end\n", "x".repeat(100_000));
        std::fs::write(state.join("setup.log"), &long).unwrap();
        std::fs::write(
            state.join("setup.result"),
            "digest 0a\noutcome failed\ncode 3\n",
        )
        .unwrap();
        let taken = take_setup_result(&layout, "u").unwrap();
        assert_eq!(
            (taken.outcome, taken.exit_code),
            (SetupOutcome::Failed, Some(3))
        );
        let kept = std::fs::read(setup_log_file(&layout, "u")).unwrap();
        assert_eq!(kept.len() as u64, SETUP_LOG_KEPT);
        assert!(kept.ends_with(b"the end\n"));
        assert!(take_setup_result(&layout, "u").is_none(), "taken once");
        let secret = home.path().join("secret");
        std::fs::write(&secret, "digest 0a\noutcome done\n").unwrap();
        std::os::unix::fs::symlink(&secret, state.join("setup.result")).unwrap();
        assert!(take_setup_result(&layout, "u").is_none());
        assert!(secret.exists(), "the link goes, not what it names");
    }
}
