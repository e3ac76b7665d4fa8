//! The git directory a worktree's container sees: the unit's own, laid over
//! the host repository's.
//!
//! A worktree's `.git` names the host repository's git directory by its host
//! path, so the container must see a git directory there. It is not the
//! host's: it is the unit's **view** (`<unit>/git/view/<checkout>`), bound
//! writable at that path. The agent's git can write anything in it, as in a
//! clone of its own (config, objects, logs, hooks), and none of it is ever
//! read by the operator's git, which reads the host's directory:
//! - `config`: a copy of the host's, made when the view is made and the
//!   agent's after that (aider writes it at every start);
//! - `objects`: the agent's new objects. The host's objects are bound
//!   read-only elsewhere ([`HOST_OBJECTS_IN_CONTAINER`]) and named by
//!   `objects/info/alternates`, which jackin writes at every start;
//! - `refs` and `packed-refs`: the host's, read-only, with the unit's own
//!   scratch ref over the scratch branches (see `isolation`);
//! - `worktrees/<id>`: the worktree's entry, the host's, writable;
//! - `HEAD`, `shallow` and `info/exclude`: copies of the host's, renewed at
//!   every start.
//!
//! The agent's commits reach the host repository only through
//! [`import_objects`]: jackin copies the view's object files into a
//! directory of its own (never following a link the agent left), has a
//! confined git pack just what the scratch branch's new tip needs, and a
//! confined git check every object of it before it lands in the host's
//! objects.

use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use crate::fsutil::{self, BeneathDir, read_regular, remove_if_exists, write_atomic};
use crate::git::{self, GitError};

/// Where the container sees the host repository's objects (read-only),
/// below this, by checkout: out of the way of anything an image has.
pub const HOST_OBJECTS_IN_CONTAINER: &str = "/.jackin/host-objects";

/// The most jackin copies of the agent's objects for one publication: far
/// above what a session commits, low enough that a runaway agent cannot fill
/// the host's disk through jackin.
const MAX_IMPORTED_BYTES: u64 = 4 << 30;

/// The most files jackin looks at in the view's objects for one publication.
const MAX_IMPORTED_FILES: usize = 1 << 20;

/// The most jackin reads of the host's small files it copies into the view.
const MAX_COPIED_FILE: u64 = 16 << 20;

#[derive(Debug, thiserror::Error)]
pub enum ViewError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error(transparent)]
    Git(#[from] GitError),
    /// What the agent left in its view cannot be published as it is.
    #[error("{0}")]
    Refused(String),
}

fn io_at(path: &Path) -> impl FnOnce(io::Error) -> ViewError + '_ {
    move |source| ViewError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The paths of one worktree's view.
#[derive(Debug, Clone)]
pub struct View {
    /// The unit's git directory for the container, bound over the host's.
    pub dir: PathBuf,
    /// Where the container sees the host's objects.
    pub host_objects_target: String,
}

impl View {
    /// The view of the checkout `name` under the unit's `git_dir`.
    pub fn new(git_dir: &Path, name: &str) -> Self {
        Self {
            dir: git_dir.join("view").join(name),
            host_objects_target: format!("{HOST_OBJECTS_IN_CONTAINER}/{name}"),
        }
    }

    /// Makes the view ready for a container: every place a bind lands is a
    /// real directory (or, for `packed-refs`, a file) of the view, whatever
    /// the agent left there last time; the host's `HEAD`, `shallow` and
    /// `info/exclude` are copied in, and `objects/info/alternates` names the
    /// host's objects as the container sees them. `entry` is the worktree's entry's name
    /// under `worktrees/`. The view's `config` is copied from the host's
    /// once, and the agent's afterwards.
    pub fn refresh(&self, common: &Path, entry: &str) -> Result<(), ViewError> {
        fsutil::ensure_private_dir(&self.dir).map_err(io_at(&self.dir))?;
        for dir in ["refs", "objects/info", "logs", "info"] {
            reset_to_dir(&self.dir, dir)?;
        }
        reset_to_dir(&self.dir, &format!("worktrees/{entry}"))?;

        let config = self.dir.join("config");
        if !is_regular(&config) {
            copy_host_file(&common.join("config"), &config)?;
        }
        let head = read_regular(&common.join("HEAD"), MAX_COPIED_FILE)
            .map_err(io_at(&common.join("HEAD")))?;
        let head_path = self.dir.join("HEAD");
        write_atomic(&head_path, &head).map_err(io_at(&head_path))?;
        for copied in ["shallow", "info/exclude"] {
            let from = common.join(copied);
            let to = self.dir.join(copied);
            if is_regular(&from) {
                copy_host_file(&from, &to)?;
            } else {
                remove_if_exists(&to).map_err(io_at(&to))?;
            }
        }
        // The host's packed-refs is bound over a file of the view; without
        // one on the host, the view has none either (one the agent packed
        // would hide the host's refs as they move).
        let packed = self.dir.join("packed-refs");
        if !is_regular(&packed) || self.host_packed_refs(common).is_none() {
            remove_if_exists(&packed).map_err(io_at(&packed))?;
        }
        if self.host_packed_refs(common).is_some() {
            write_atomic(&packed, b"").map_err(io_at(&packed))?;
        }

        let alternates = self.dir.join("objects/info/alternates");
        let line = format!("{}\n", self.host_objects_target);
        write_atomic(&alternates, line.as_bytes()).map_err(io_at(&alternates))?;
        Ok(())
    }

    /// The host's `packed-refs`, when it is a regular file to bind.
    pub fn host_packed_refs(&self, common: &Path) -> Option<PathBuf> {
        let path = common.join("packed-refs");
        is_regular(&path).then_some(path)
    }
}

fn is_regular(path: &Path) -> bool {
    std::fs::symlink_metadata(path).is_ok_and(|m| m.is_file())
}

/// `base/relative` as a real directory of jackin's view: whatever else the
/// agent left at any step of the way (a link, a file) is removed first.
fn reset_to_dir(base: &Path, relative: &str) -> Result<(), ViewError> {
    let mut dir = base.to_owned();
    for part in relative.split('/') {
        dir.push(part);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => continue,
            Ok(_) => remove_if_exists(&dir).map_err(io_at(&dir))?,
            Err(e) if e.kind() == io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_at(&dir)(e)),
        }
        fsutil::ensure_private_dir(&dir).map_err(io_at(&dir))?;
    }
    Ok(())
}

/// Copies one of the host repository's own files (the operator's, so a link
/// is followed) into the view, replacing whatever is there.
fn copy_host_file(from: &Path, to: &Path) -> Result<(), ViewError> {
    let bytes = read_regular(from, MAX_COPIED_FILE).map_err(io_at(from))?;
    write_atomic(to, &bytes).map_err(io_at(to))
}

/// Brings the objects `tip` needs from the agent's view into the host
/// repository `src` (whose objects are `host_objects`), given that the host
/// has everything `known` needs. The agent's files are copied into a
/// directory of jackin's under `scratch` first, reading nothing but regular
/// files below the view's `objects`; git then runs confined on the copies:
/// one packs what `tip` needs beyond `known`, the other unpacks that into
/// the host repository, refusing any object that is malformed or points at
/// one neither has.
pub fn import_objects(
    view: &View,
    src: &str,
    host_objects: &Path,
    scratch: &Path,
    tip: &str,
    known: &str,
) -> Result<(), ViewError> {
    let quarantine = tempfile::Builder::new()
        .prefix(".import-")
        .tempdir_in(scratch)
        .map_err(io_at(scratch))?;
    let repo = quarantine.path().join("repo.git");
    let format = if tip.len() == 64 { "sha256" } else { "sha1" };
    let skeleton: [(&str, String); 3] = [
        ("HEAD", "ref: refs/heads/main\n".into()),
        (
            "config",
            format!(
                "[core]\n\trepositoryformatversion = 1\n\tbare = true\n\
                 [extensions]\n\tobjectFormat = {format}\n"
            ),
        ),
        (
            "objects/info/alternates",
            format!("{}\n", host_objects.display()),
        ),
    ];
    for (name, text) in skeleton {
        let path = repo.join(name);
        write_atomic(&path, text.as_bytes()).map_err(io_at(&path))?;
    }
    for dir in ["refs", "objects/pack"] {
        let path = repo.join(dir);
        fsutil::ensure_private_dir(&path).map_err(io_at(&path))?;
    }
    copy_agent_objects(&view.dir, &repo.join("objects"), host_objects)?;

    let revs = quarantine.path().join("revs");
    write_atomic(&revs, format!("{tip}\n^{known}\n").as_bytes()).map_err(io_at(&revs))?;
    let out = quarantine.path().join("out");
    fsutil::ensure_private_dir(&out).map_err(io_at(&out))?;
    let repo_str = repo.to_str().expect("jackin's paths are UTF-8");
    let base = out.join("pack");
    // `--local`: what the host has already (its objects are the alternate)
    // stays out of the pack. git writes its temporary pack in the
    // repository's `objects/pack`.
    let name = git::run_untrusted_fed(
        repo_str,
        &[
            "pack-objects",
            "--revs",
            "--local",
            "-q",
            base.to_str().expect("UTF-8"),
        ],
        &[&out, &repo.join("objects/pack")],
        Some(&revs),
    )?;
    let name = String::from_utf8_lossy(&name).trim().to_owned();
    let pack = out.join(format!("pack-{name}.pack"));
    git::run_untrusted_fed(
        src,
        &["unpack-objects", "-q", "--strict"],
        &[host_objects],
        Some(&pack),
    )?;
    Ok(())
}

/// Copies the loose objects and packs below `view/objects` into `into`:
/// only files with the names git gives them, only regular files, nothing
/// through a link, at most [`MAX_IMPORTED_BYTES`] in all. A loose object
/// the host already has is not copied.
fn copy_agent_objects(view: &Path, into: &Path, host_objects: &Path) -> Result<(), ViewError> {
    let tree = BeneathDir::open(view).map_err(io_at(view))?;
    let refused = |what: String| ViewError::Refused(format!("{}: {what}", view.display()));
    let is_hex = |s: &str| {
        s.bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
    };
    let mut budget = Budget {
        bytes: MAX_IMPORTED_BYTES,
        files: MAX_IMPORTED_FILES,
    };
    let entries = tree
        .entries("objects")
        .map_err(|e| refused(format!("objects: {e}")))?;
    for (name, is_dir) in entries {
        let wanted: Vec<String> = if is_dir && name.len() == 2 && is_hex(&name) {
            tree.entries(&format!("objects/{name}"))
                .map_err(|e| refused(format!("objects/{name}: {e}")))?
                .into_iter()
                .filter(|(leaf, is_dir)| {
                    !is_dir
                        && matches!(leaf.len(), 38 | 62)
                        && is_hex(leaf)
                        && !host_objects.join(&name).join(leaf).exists()
                })
                .map(|(leaf, _)| format!("{name}/{leaf}"))
                .collect()
        } else if is_dir && name == "pack" {
            tree.entries("objects/pack")
                .map_err(|e| refused(format!("objects/pack: {e}")))?
                .into_iter()
                .filter(|(leaf, is_dir)| {
                    !is_dir
                        && leaf.strip_prefix("pack-").is_some_and(|rest| {
                            rest.strip_suffix(".pack")
                                .or_else(|| rest.strip_suffix(".idx"))
                                .is_some_and(is_hex)
                        })
                })
                .map(|(leaf, _)| format!("pack/{leaf}"))
                .collect()
        } else {
            continue;
        };
        for relative in wanted {
            budget.take_file().map_err(&refused)?;
            let mut file = tree
                .open_regular(&format!("objects/{relative}"))
                .map_err(|e| refused(format!("objects/{relative}: {e}")))?;
            let to = into.join(&relative);
            copy_capped(&mut file, &to, &mut budget).map_err(|e| match e {
                CopyError::Io(e) => io_at(&to)(e),
                CopyError::TooLarge => refused(format!(
                    "the agent's objects are larger than {} GiB; jackin does not publish \
                     them (use clone isolation for such work)",
                    MAX_IMPORTED_BYTES >> 30
                )),
            })?;
        }
    }
    Ok(())
}

struct Budget {
    bytes: u64,
    files: usize,
}

impl Budget {
    fn take_file(&mut self) -> Result<(), String> {
        self.files = self.files.checked_sub(1).ok_or_else(|| {
            format!("more than {MAX_IMPORTED_FILES} object files; jackin does not publish them")
        })?;
        Ok(())
    }
}

enum CopyError {
    Io(io::Error),
    TooLarge,
}

fn copy_capped(from: &mut std::fs::File, to: &Path, budget: &mut Budget) -> Result<(), CopyError> {
    if let Some(parent) = to.parent() {
        fsutil::ensure_private_dir(parent).map_err(CopyError::Io)?;
    }
    let mut out = std::fs::File::create(to).map_err(CopyError::Io)?;
    let copied = io::copy(&mut from.take(budget.bytes + 1), &mut out).map_err(CopyError::Io)?;
    if copied > budget.bytes {
        return Err(CopyError::TooLarge);
    }
    budget.bytes -= copied;
    out.flush().map_err(CopyError::Io)
}
