//! The session's files in the unit: the entry wrapper and the idle-hook
//! runner it installs into `bin/`, the completion marker it reads from
//! `state/` (what the marker means is `jackin_plan::marker`'s), the
//! attached lock, the remembered terminal size, and the artifacts collected
//! when a session ends.
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

use jackin_files::fsutil::{ensure_private_dir, read_untrusted, remove_if_exists, write_atomic};
use jackin_files::layout::Layout;
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

/// Writes the wrapper and the idle-hook runner into the unit's `bin/`
/// unless they are already there, as they are; returns the wrapper's path.
pub fn install_entry(layout: &Layout, container: &str) -> std::io::Result<PathBuf> {
    let path = entry_file(layout, container);
    let dir = path.parent().expect("the entry has a parent");
    for (file, script) in [
        (path.clone(), ENTRY_SCRIPT),
        (dir.join("hook"), HOOK_SCRIPT),
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
    let stamp: String = finished_at
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect();
    let to = layout.artifacts_dir(instance).join(stamp);
    ensure_private_dir(to.parent().expect("artifacts have a parent"))?;
    remove_if_exists(&to)?;
    std::fs::rename(&from, &to)?;
    Ok(Some(to))
}

#[cfg(test)]
mod tests {
    use super::*;

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
