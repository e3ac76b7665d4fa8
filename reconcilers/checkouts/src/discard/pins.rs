//! The pins a save holds in host repositories: a worktree's bundle needs
//! its base commit, which the unit's own pin kept until the unit went, so
//! the save pins it under `refs/jackin/saved/<save>/<checkout>` and lets it
//! go when the save is removed.

use std::path::Path;

use super::error::DiscardError;
use crate::git;
use crate::isolation::{self, IsolationRecord};

/// Pins a worktree's base commit in its host repository for a save whose
/// bundle needs it: the unit's own pin goes with the unit. Returns the ref.
pub(super) fn pin_base_for_save(
    record: &IsolationRecord,
    save_dir: &Path,
) -> Result<String, DiscardError> {
    let save = save_dir
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a save's directory has a plain name");
    let pin = format!("{SAVED_BASE_PREFIX}{save}/{}", isolation::slug(&record.dst));
    git::run(&[
        "-C",
        &record.src,
        "update-ref",
        "-m",
        "jackin: the base a saved discard needs",
        &pin,
        &record.base_commit,
    ])?;
    Ok(pin)
}

/// Where the pins of saves' bases live in a host repository.
const SAVED_BASE_PREFIX: &str = "refs/jackin/saved/";

/// Removes the pin `pin` of the save `save` from the host repository
/// `src`, only if it still names the base `base_commit` it pinned; what
/// cannot be removed is logged.
pub(super) fn release_pin(save: &str, src: &str, pin: &str, base_commit: &str) {
    if !pin.starts_with(SAVED_BASE_PREFIX) || !Path::new(src).exists() {
        return;
    }
    if let Err(e) = git::run(&["-C", src, "update-ref", "-d", pin, base_commit]) {
        tracing::warn!("the save {save} left {pin} in {src}: {e}");
    }
}
