//! The operator's own agent setup, copied into a session before every start
//! under `operatorConfig: sync`: the files and directories the agent's entry
//! lists (`Agent.spec.operatorConfig`), from the operator's home into the
//! unit's home.
//!
//! They are copies, made fresh at every start: the agent may change its
//! copy, and the host's files are only ever read. They are handled as the
//! logins are (`credentials`), since they often hold secrets (an `env`
//! block, an MCP server's token):
//!
//! - On the host, everything is read beneath the operator's home with no
//!   link followed ([`BeneathDir`]): a link, which could lead out of the
//!   agent's directory (to `~/.ssh`, to `/etc`), is refused, not copied;
//!   a FIFO or device is refused unopened, and every file is read under a
//!   cap.
//! - In the unit's home, which is the agent's to write, every directory on
//!   the way must be a real one, and a link, FIFO or directory in a file's
//!   place is refused: nothing is written through it or over it. Files are
//!   replaced by a rename, mode 0600.
//! - What is reported names places, never contents; a file that does not
//!   parse is refused with its line and column only. What went and what
//!   was refused, by place, is kept in `status.operatorConfig` for
//!   `describe`.
//!
//! This runs second in the one writing order (docs/ARCHITECTURE.md): over
//! the agent's own files, before the credential keys and jackin's settings.

use std::io;
use std::path::Path;

use jackin_api::instance::{Instance, OperatorConfigStatus};
use jackin_api::names::reason;
use jackin_api::operator_config::{ConfigEntry, ConfigMerge, OperatorConfigMode};

use crate::credentials::{self, MAX_FILE_BYTES, Note};
use jackin_files::fsutil::{self, BeneathDir, EntryKind, read_untrusted, read_within};
use jackin_files::layout::Layout;
use jackin_files::offload::blocking;
use jackin_plan::recipe::ResolvedAgent;

/// The most files one directory entry copies (commands, skills): an
/// operator's setup has tens; a tree of thousands is not one.
const MAX_TREE_FILES: usize = 2_000;

/// How deep a copied directory may go.
const MAX_TREE_DEPTH: usize = 12;

/// Copies the operator's setup into the unit of `obj` before a start, when
/// its recipe says `operatorConfig: sync`, and records what went in its
/// status (for `describe`). The entries are the registry's entry's as it
/// is now (`registry`), else the pinned entry's, as agent settings are.
/// Returns the lines to report, names only.
pub async fn before_start(
    layout: &Layout,
    host: Result<std::path::PathBuf, String>,
    container: &str,
    obj: &mut Instance,
    registry: Option<&ResolvedAgent>,
) -> Vec<Note> {
    let Some(recipe) = obj.recipe() else {
        return Vec::new();
    };
    let Some(pinned) = recipe.agent.as_ref() else {
        return Vec::new();
    };
    if recipe.operator_config != Some(OperatorConfigMode::Sync) {
        // A session rolled out to `none` shows no copy of an earlier start.
        if let Some(status) = obj.status.as_mut() {
            status.operator_config = None;
        }
        return Vec::new();
    }
    let entries = registry
        .filter(|entry| entry.name == pinned.name)
        .map_or(&pinned.spec, |entry| &entry.spec)
        .operator_config
        .clone();
    let home = layout.unit_home_dir(container);
    let status =
        blocking(move || copy_all(&entries, host.as_deref().map_err(String::as_str), &home)).await;
    let notes = notes(&status);
    obj.status.get_or_insert_default().operator_config = Some(status);
    notes
}

/// The lines a start reports: what was copied, then what was refused.
pub fn notes(status: &OperatorConfigStatus) -> Vec<Note> {
    let copied = status.copied.iter().map(|line| Note {
        reason: reason::OPERATOR_CONFIG_COPIED,
        message: format!("operator config: {line}"),
    });
    let refused = status.refused.iter().map(|line| Note {
        reason: reason::OPERATOR_CONFIG_REFUSED,
        message: format!("operator config: {line}"),
    });
    copied.chain(refused).collect()
}

/// Copies each of `entries` from `host` (the operator's home, or why it is
/// not known) into `home` (the unit's home). An entry the host lacks is
/// skipped in silence (not every operator has every file); one refused is
/// reported, and the others still go. Blocking I/O.
pub fn copy_all(
    entries: &[ConfigEntry],
    host: Result<&Path, &str>,
    home: &Path,
) -> OperatorConfigStatus {
    let mut status = OperatorConfigStatus::default();
    let source = match host
        .map_err(str::to_owned)
        .and_then(|host| BeneathDir::open(host).map_err(|e| format!("{}: {e}", host.display())))
    {
        Ok(source) => source,
        Err(why) => {
            status
                .refused
                .push(format!("the operator's home cannot be read: {why}"));
            return status;
        }
    };
    for entry in entries {
        let mut copy = EntryCopy {
            source: &source,
            home,
            status: &mut status,
            files: 0,
        };
        copy.entry(entry);
    }
    status
}

/// One entry's copy, and where it reports.
struct EntryCopy<'a> {
    source: &'a BeneathDir,
    home: &'a Path,
    status: &'a mut OperatorConfigStatus,
    /// Files copied of a directory so far.
    files: usize,
}

impl EntryCopy<'_> {
    fn entry(&mut self, entry: &ConfigEntry) {
        let shown = format!("~/{}", entry.src);
        let kind = match self.source.kind(&entry.src) {
            Ok(kind) => kind,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return,
            Err(e) => return self.refuse(&shown, &host_error(&e)),
        };
        let arrow = format!("{shown} → ~/{}", entry.dst);
        match kind {
            EntryKind::File { .. } => match self.file(&entry.src, &entry.dst, entry) {
                Ok(how) => self.status.copied.push(format!("{arrow}{how}")),
                Err(why) => self.refuse(&shown, &why),
            },
            EntryKind::Dir => {
                let dst = Path::new(&entry.dst);
                if let Err(e) = fsutil::ensure_real_dir_below(self.home, dst) {
                    return self.refuse(&shown, &destination_error(&entry.dst, &e));
                }
                self.tree(&entry.src, &entry.dst, 0);
                let files = self.files;
                self.status
                    .copied
                    .push(format!("{arrow}/ ({files} file{})", plural(files)));
            }
            EntryKind::Symlink => self.refuse(&shown, LINK_REFUSED),
            EntryKind::Special => self.refuse(&shown, SPECIAL_REFUSED),
        }
    }

    fn refuse(&mut self, shown: &str, why: &str) {
        self.status
            .refused
            .push(format!("{shown} was not copied: {why}"));
    }

    /// The directory `src` into `dst` (made already), file by file; what is
    /// refused in it is reported by its own name.
    fn tree(&mut self, src: &str, dst: &str, depth: usize) {
        let shown = format!("~/{src}");
        if depth >= MAX_TREE_DEPTH {
            return self.refuse(&shown, &format!("deeper than {MAX_TREE_DEPTH} directories"));
        }
        let names = match self.source.entries(src) {
            Ok(names) => names,
            Err(e) => return self.refuse(&shown, &host_error(&e)),
        };
        for (name, _) in names {
            let (src, dst) = (format!("{src}/{name}"), format!("{dst}/{name}"));
            let shown = format!("~/{src}");
            match self.source.kind(&src) {
                Ok(EntryKind::File { .. }) if self.files >= MAX_TREE_FILES => {
                    return self.refuse(&shown, &format!("more than {MAX_TREE_FILES} files"));
                }
                Ok(EntryKind::File { .. }) => {
                    match self.file(&src, &dst, &ConfigEntry::default()) {
                        Ok(_) => self.files += 1,
                        Err(why) => self.refuse(&shown, &why),
                    }
                }
                Ok(EntryKind::Dir) => {
                    match fsutil::ensure_real_dir_below(self.home, Path::new(&dst)) {
                        Ok(_) => self.tree(&src, &dst, depth + 1),
                        Err(e) => self.refuse(&shown, &destination_error(&dst, &e)),
                    }
                }
                Ok(EntryKind::Symlink) => self.refuse(&shown, LINK_REFUSED),
                Ok(EntryKind::Special) => self.refuse(&shown, SPECIAL_REFUSED),
                Err(e) => self.refuse(&shown, &host_error(&e)),
            }
        }
    }

    /// One file, as `entry` merges it; `Ok(how it went, for the report)`,
    /// `Err(why nothing was written)`.
    fn file(&self, src: &str, dst: &str, entry: &ConfigEntry) -> Result<String, String> {
        let bytes = self
            .source
            .open_regular(src)
            .and_then(|file| read_within(file, MAX_FILE_BYTES))
            .map_err(|e| host_error(&e))?;
        let target = writable_place(self.home, dst)?;
        let written = match entry.merge {
            ConfigMerge::Replace => {
                fsutil::replace_below(self.home, Path::new(dst), &bytes).map(|_| String::new())
            }
            ConfigMerge::Json => {
                let found = json_keys(&bytes, &entry.keys)?;
                let keys: Vec<String> = found.iter().map(|(k, _)| k.clone()).collect();
                credentials::set_json_keys(&target, found)
                    .map(|()| format!(" (keys {})", keys.join(", ")))
            }
            ConfigMerge::Toml => {
                let merged = merge_toml(&bytes, &target)?;
                fsutil::replace_below(self.home, Path::new(dst), merged.as_bytes())
                    .map(|_| " (merged)".to_owned())
            }
        };
        written.map_err(|e| destination_error(dst, &e))
    }
}

const LINK_REFUSED: &str = "it is a symbolic link on the host, and jackin copies no link of \
                            the operator's config (it could lead out of it): put the file itself \
                            there";

const SPECIAL_REFUSED: &str = "it is not a regular file or directory on the host (a FIFO, socket \
                               or device)";

fn plural(count: usize) -> &'static str {
    if count == 1 { "" } else { "s" }
}

/// Why a host path could not be read, without its contents: a link on the
/// way is said as such.
fn host_error(error: &io::Error) -> String {
    match error.raw_os_error() {
        // openat2 refuses a link on the way (ELOOP, EXDEV), and a directory
        // opened without following one finds a link (ENOTDIR).
        Some(libc::ELOOP | libc::EXDEV | libc::ENOTDIR) => {
            format!("a symbolic link or a file is on its way: {LINK_REFUSED}")
        }
        _ => format!("it cannot be read on the host: {error}"),
    }
}

fn destination_error(dst: &str, error: &io::Error) -> String {
    format!(
        "~/{dst} in the agent's home: {error}; jackin writes nothing of the operator's config \
         through a link or over anything but a file"
    )
}

/// Where `dst` goes in `home`: the directories on the way real ones (made
/// if need be), and in the file's own place nothing or a regular file. A
/// link, FIFO or directory there is refused, never replaced or followed.
fn writable_place(home: &Path, dst: &str) -> Result<std::path::PathBuf, String> {
    let relative = Path::new(dst);
    let parent = relative.parent().unwrap_or(Path::new(""));
    let dir =
        fsutil::ensure_real_dir_below(home, parent).map_err(|e| destination_error(dst, &e))?;
    let target = dir.join(relative.file_name().unwrap_or_default());
    match std::fs::symlink_metadata(&target) {
        Ok(meta) if !meta.is_file() => Err(format!(
            "~/{dst} in the agent's home is a {} and was left as it is: jackin writes nothing of \
             the operator's config through it or over it",
            match meta.file_type().is_symlink() {
                true => "symbolic link",
                false => "FIFO, socket, device or directory",
            }
        )),
        Ok(_) => Ok(target),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(target),
        Err(e) => Err(destination_error(dst, &e)),
    }
}

/// The top-level keys of the host's JSON object that go: `keys`, else all.
fn json_keys(bytes: &[u8], keys: &[String]) -> Result<Vec<(String, serde_json::Value)>, String> {
    let host: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(bytes).map_err(|e| {
            format!(
                "it is not a JSON object on the host ({})",
                jackin_api::redact::json_error(&e)
            )
        })?;
    Ok(match keys.is_empty() {
        true => host.into_iter().collect(),
        false => host.into_iter().filter(|(k, _)| keys.contains(k)).collect(),
    })
}

/// The session's TOML document at `target` with the host's top-level items
/// set in it, the session's other items and comments kept; a session file
/// that is not TOML (or none) gives way to the host's.
fn merge_toml(host_bytes: &[u8], target: &Path) -> Result<String, String> {
    let host: toml_edit::DocumentMut = std::str::from_utf8(host_bytes)
        .map_err(|_| "it is not UTF-8 text on the host, so not TOML".to_owned())?
        .parse()
        .map_err(|e: toml_edit::TomlError| {
            format!("it is not TOML on the host ({})", e.message())
        })?;
    let own = read_untrusted(target, MAX_FILE_BYTES)
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .and_then(|text| text.parse::<toml_edit::DocumentMut>().ok());
    let Some(mut own) = own else {
        return Ok(host.to_string());
    };
    for (key, item) in host.iter() {
        own.insert(key, item.clone());
    }
    Ok(own.to_string())
}

#[cfg(test)]
#[path = "operator_config_tests.rs"]
mod tests;
