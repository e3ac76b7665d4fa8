//! What probes found in images, kept between processes in
//! `$JACKIN_HOME/probes.json`.
//!
//! An image id (`sha256:…`) names the image's content, so a program found
//! in it, or the version its agent printed, holds for good: an apply that
//! launches an image a command of this home probed before need not run a
//! throwaway container to ask again (two probes, about 0.4 s each on an
//! idle engine, before the first instance of an apply could start). Only
//! what was found is kept: a program missing, or no version printed, is
//! asked again next time. The file is a cache: unreadable, it reads as
//! empty, and a lost write (two processes writing at once) only costs a
//! probe.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

use crate::fsutil::{read_untrusted, write_atomic};
use crate::layout::{Layout, cap};

/// The most answers kept: past it the file starts again.
const MAX_ANSWERS: usize = 1024;

#[derive(Debug, Default, Serialize, Deserialize)]
struct Probes {
    /// (image id, program) found in it.
    #[serde(default)]
    programs: BTreeSet<(String, String)>,
    /// The version each probe printed, by `[image id, probe argv]` as JSON.
    #[serde(default)]
    versions: BTreeMap<String, String>,
}

/// Only content-addressed ids are kept: a tag names different images over
/// time.
fn kept(image_id: &str) -> bool {
    image_id.starts_with("sha256:")
}

fn read(path: &Path) -> Probes {
    read_untrusted(path, cap::PROBES)
        .ok()
        .and_then(|bytes| serde_json::from_slice(&bytes).ok())
        .unwrap_or_default()
}

/// Serializes this process's writes of the file.
static WRITING: Mutex<()> = Mutex::new(());

fn remember(layout: &Layout, add: impl FnOnce(&mut Probes)) {
    let _writing = WRITING.lock().unwrap_or_else(|e| e.into_inner());
    let path = layout.probes_file();
    let mut probes = read(&path);
    if probes.programs.len() + probes.versions.len() >= MAX_ANSWERS {
        probes = Probes::default();
    }
    add(&mut probes);
    let bytes = serde_json::to_vec(&probes).expect("answers serialize");
    if let Err(e) = write_atomic(&path, &bytes) {
        tracing::debug!("{}: probe answers not kept: {e}", path.display());
    }
}

fn version_key(image_id: &str, argv: &[String]) -> String {
    serde_json::to_string(&(image_id, argv)).expect("strings serialize")
}

/// Whether a probe of this home found `program` in `image_id`.
pub fn program_found(layout: &Layout, image_id: &str, program: &str) -> bool {
    kept(image_id)
        && read(&layout.probes_file())
            .programs
            .contains(&(image_id.to_owned(), program.to_owned()))
}

pub fn remember_program(layout: &Layout, image_id: &str, program: &str) {
    if kept(image_id) {
        remember(layout, |p| {
            p.programs.insert((image_id.to_owned(), program.to_owned()));
        });
    }
}

/// The version the probe `argv` printed in `image_id`, if one of this
/// home's did.
pub fn version_found(layout: &Layout, image_id: &str, argv: &[String]) -> Option<String> {
    if !kept(image_id) {
        return None;
    }
    read(&layout.probes_file())
        .versions
        .remove(&version_key(image_id, argv))
}

pub fn remember_version(layout: &Layout, image_id: &str, argv: &[String], version: &str) {
    if kept(image_id) {
        remember(layout, |p| {
            p.versions
                .insert(version_key(image_id, argv), version.to_owned());
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_was_found_in_an_image_id_is_recalled_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let id = "sha256:0123";
        let argv = vec!["claude".to_owned(), "--version".to_owned()];
        assert!(!program_found(&layout, id, "claude"));
        assert_eq!(version_found(&layout, id, &argv), None);
        remember_program(&layout, id, "claude");
        remember_version(&layout, id, &argv, "2.1.0");
        assert!(program_found(&layout, id, "claude"));
        assert!(!program_found(&layout, id, "codex"));
        assert!(!program_found(&layout, "sha256:4567", "claude"));
        assert_eq!(version_found(&layout, id, &argv).as_deref(), Some("2.1.0"));
        // A tag is not an image's content: never kept.
        remember_program(&layout, "busybox:latest", "sh");
        assert!(!program_found(&layout, "busybox:latest", "sh"));
        // A file that is not jackin's reads as nothing found.
        std::fs::write(layout.probes_file(), "not json").unwrap();
        assert!(!program_found(&layout, id, "claude"));
    }
}
