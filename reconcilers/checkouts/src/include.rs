//! Files beyond git: the untracked files of the operator's checkout that a
//! mount's `include` (and the source's `.worktreeinclude`) names, copied
//! once into each new isolated checkout, and the digest of each copy, by
//! which an included file the agent left as it was is no unfinished work.
//!
//! The source is read beneath its root with no link followed anywhere on
//! the way ([`BeneathDir`]): only regular files within [`MAX_FILE_BYTES`]
//! are copied (a sparse file that claims gigabytes is left out by its size,
//! unread), never a link, FIFO, device or directory, and never over a file
//! the checkout has of its own. What is left out is listed with why. The
//! checkout's copy is read back the same way: the agent writes it, so it
//! may be anything by then, and anything but the same regular file counts
//! as changed.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{self, Read, Write};
use std::os::unix::fs::{OpenOptionsExt, PermissionsExt};
use std::path::Path;

use jackin_api::include::{MAX_PATTERNS, parse_file, segment_matches};
use jackin_files::fsutil::{
    BeneathDir, CappedCopy, EntryKind, copy_capped, ensure_real_dir_below, read_within,
    remove_if_exists,
};
use jackin_plan::digest::hex;
use sha2::{Digest, Sha256};

/// The largest file copied: far above a `.env` or a certificate.
pub const MAX_FILE_BYTES: u64 = 16 << 20;
/// The most files one checkout gets.
pub const MAX_FILES: usize = 1000;
/// The source's own list of patterns, read when it is there.
pub const WORKTREEINCLUDE: &str = ".worktreeinclude";
const MAX_WORKTREEINCLUDE_BYTES: u64 = 64 << 10;

/// What a new checkout got: each copied file by its path relative to the
/// checkout, with the SHA-256 of what was copied; and what was left out,
/// each as `path: why`.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Included {
    pub copied: BTreeMap<String, String>,
    pub left_out: Vec<String>,
}

impl Included {
    /// One line for the operator: what was copied and what left out (the
    /// first `MAX_LISTED` of each named, the rest counted).
    pub fn summary(&self, dst: &str) -> Option<String> {
        if self.copied.is_empty() && self.left_out.is_empty() {
            return None;
        }
        let count = self.copied.len();
        let mut line = format!(
            "{dst}: {count} untracked {} copied into the new checkout from its source",
            if count == 1 { "file" } else { "files" },
        );
        if count > 0 {
            line.push_str(&format!(" ({})", listed(self.copied.keys(), ", ")));
        }
        if !self.left_out.is_empty() {
            line.push_str(&format!(
                "; left out: {}",
                listed(self.left_out.iter(), "; ")
            ));
        }
        Some(line)
    }
}

/// How many names of each kind a summary lists.
const MAX_LISTED: usize = 20;

fn listed<'a>(names: impl ExactSizeIterator<Item = &'a String>, separator: &str) -> String {
    let total = names.len();
    let mut shown: Vec<&str> = names.take(MAX_LISTED).map(String::as_str).collect();
    let more = format!("and {} more", total.saturating_sub(MAX_LISTED));
    if total > MAX_LISTED {
        shown.push(&more);
    }
    shown.join(separator)
}

/// Copies into `checkout` (made just now, before any agent ran) the files
/// of the source `src` that `patterns` and the source's `.worktreeinclude`
/// name. Never fails: what cannot be copied is listed as left out.
pub fn copy_into(src: &str, checkout: &Path, patterns: &[String]) -> Included {
    let mut included = Included::default();
    // The source is the operator's own path: a link they made to it is
    // theirs to follow; beneath it, none is.
    let tree = match std::fs::canonicalize(src).and_then(|root| BeneathDir::open(&root)) {
        Ok(tree) => tree,
        Err(e) => {
            if !patterns.is_empty() {
                included.left_out.push(format!("{src}: {e}"));
            }
            return included;
        }
    };
    let mut all = patterns.to_vec();
    all.extend(from_file(&tree, &mut included.left_out));
    let mut matched = BTreeSet::new();
    for pattern in &all {
        expand(&tree, pattern, &mut matched, &mut included.left_out);
    }
    for (n, path) in matched.into_iter().enumerate() {
        if n >= MAX_FILES {
            included
                .left_out
                .push(format!("{path}: past the first {MAX_FILES} files"));
            continue;
        }
        match copy_one(&tree, checkout, &path) {
            Ok(digest) => {
                included.copied.insert(path, digest);
            }
            Err(why) => included.left_out.push(format!("{path}: {why}")),
        }
    }
    // A name two patterns met is told once.
    let mut seen = BTreeSet::new();
    included.left_out.retain(|line| seen.insert(line.clone()));
    included
}

/// The patterns of the source's `.worktreeinclude`, read as a file someone
/// may have made anything: a regular file only, within its cap.
fn from_file(tree: &BeneathDir, left_out: &mut Vec<String>) -> Vec<String> {
    let read = tree
        .open_regular(WORKTREEINCLUDE)
        .and_then(|file| read_within(file, MAX_WORKTREEINCLUDE_BYTES));
    let bytes = match read {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Vec::new(),
        Err(e) => {
            left_out.push(format!("{WORKTREEINCLUDE}: not read: {}", why_not(&e)));
            return Vec::new();
        }
    };
    let (mut patterns, refused) = parse_file(&String::from_utf8_lossy(&bytes));
    patterns.truncate(MAX_PATTERNS);
    left_out.extend(
        refused
            .into_iter()
            .map(|why| format!("{WORKTREEINCLUDE}: {why}")),
    );
    patterns
}

/// Adds to `matched` the regular files of the source that `pattern` names,
/// segment by segment; a name that is there but cannot be copied (a link, a
/// directory, a FIFO, too large) is listed as left out, and so is a pattern
/// without wildcards that names nothing.
fn expand(
    tree: &BeneathDir,
    pattern: &str,
    matched: &mut BTreeSet<String>,
    left_out: &mut Vec<String>,
) {
    let segments: Vec<&str> = pattern.split('/').collect();
    let mut dirs = vec![String::new()];
    for (i, segment) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        let mut next = Vec::new();
        for dir in &dirs {
            for name in names_matching(tree, dir, segment) {
                let path = if dir.is_empty() {
                    name
                } else {
                    format!("{dir}/{name}")
                };
                match (tree.kind(&path), last) {
                    (Ok(EntryKind::Dir), false) => next.push(path),
                    (Ok(EntryKind::File { size, .. }), true) if size > MAX_FILE_BYTES => {
                        left_out.push(format!("{path}: larger than {} MiB", MAX_FILE_BYTES >> 20));
                    }
                    (Ok(EntryKind::File { .. }), true) => {
                        matched.insert(path);
                    }
                    (Ok(kind), true) => left_out.push(format!("{path}: {}", what_is(kind))),
                    (Ok(EntryKind::Symlink), false) => {
                        left_out.push(format!("{path}: a symbolic link, never followed"));
                    }
                    (Ok(_), false) => {}
                    (Err(e), _) if e.kind() == io::ErrorKind::NotFound => {
                        if !pattern.contains(['*', '?']) {
                            left_out.push(format!("{pattern}: not in the source"));
                        }
                    }
                    (Err(e), _) => left_out.push(format!("{path}: {}", why_not(&e))),
                }
            }
        }
        dirs = next;
    }
}

/// The names in the source's directory `dir` that `segment` matches: the
/// segment itself when it has no wildcard, else the entries it matches
/// (never `.git`, which is git's, nor the source's `.worktreeinclude`).
fn names_matching(tree: &BeneathDir, dir: &str, segment: &str) -> Vec<String> {
    if !segment.contains(['*', '?']) {
        return vec![segment.to_owned()];
    }
    let listed = if dir.is_empty() { "." } else { dir };
    let Ok(entries) = tree.entries(listed) else {
        return Vec::new();
    };
    entries
        .into_iter()
        .map(|(name, _)| name)
        .filter(|name| !name.eq_ignore_ascii_case(".git") && name != WORKTREEINCLUDE)
        .filter(|name| segment_matches(segment, name))
        .collect()
}

fn what_is(kind: EntryKind) -> &'static str {
    match kind {
        EntryKind::Symlink => "a symbolic link, never followed",
        EntryKind::Dir => "a directory: name its files (dir/*)",
        EntryKind::Special => "a FIFO, socket or device",
        EntryKind::File { .. } => "a file",
    }
}

fn why_not(e: &io::Error) -> String {
    match e.raw_os_error() {
        Some(libc::ELOOP | libc::EXDEV) => "a symbolic link on the way, never followed".into(),
        _ => e.to_string(),
    }
}

/// A writer that hashes what it writes.
struct Hashing<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> Write for Hashing<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Copies the source's regular file `path` to the same place in the
/// checkout, with its permission bits (no set-id bit), unless the checkout
/// has something there already (a tracked file, left as checked out).
/// Returns the copy's SHA-256, or why it was left out.
fn copy_one(tree: &BeneathDir, checkout: &Path, path: &str) -> Result<String, String> {
    let mut from = tree.open_regular(path).map_err(|e| why_not(&e))?;
    let relative = Path::new(path);
    let parent = relative.parent().unwrap_or(Path::new(""));
    let dir = ensure_real_dir_below(checkout, parent)
        .map_err(|e| format!("no place for it in the checkout: {e}"))?;
    let to = dir.join(relative.file_name().unwrap_or_default());
    if std::fs::symlink_metadata(&to).is_ok() {
        return Err("the checkout has its own (tracked), left as checked out".into());
    }
    let mode = from
        .metadata()
        .map_err(|e| e.to_string())?
        .permissions()
        .mode()
        & 0o777;
    let out = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .open(&to)
        .map_err(|e| format!("{}: {e}", to.display()))?;
    let mut out = Hashing {
        inner: out,
        hasher: Sha256::new(),
    };
    let copied = copy_capped(&mut from, &mut out, MAX_FILE_BYTES);
    let done = match copied {
        Ok(CappedCopy::Copied(_)) => out.flush().map_err(|e| e.to_string()),
        Ok(CappedCopy::TooLarge) => Err(format!(
            "it grew past {} MiB while it was copied",
            MAX_FILE_BYTES >> 20
        )),
        Err(e) => Err(e.to_string()),
    };
    if let Err(why) = done {
        let _ = remove_if_exists(&to);
        return Err(why);
    }
    // The mode asked at the open passed through the umask.
    let _ = out
        .inner
        .set_permissions(std::fs::Permissions::from_mode(mode));
    Ok(hex(&out.hasher.finalize()))
}

/// The SHA-256 of the checkout's regular file `path`, read beneath the
/// checkout with no link followed and a FIFO never opened; none when it is
/// not a regular file within [`MAX_FILE_BYTES`] (then it counts as changed).
pub(crate) fn digest_of(tree: &BeneathDir, path: &str) -> Option<String> {
    let file = tree.open_regular(path).ok()?;
    if file.metadata().ok()?.len() > MAX_FILE_BYTES {
        return None;
    }
    let mut hasher = Sha256::new();
    let mut buffer = vec![0; 64 << 10];
    let mut file = file.take(MAX_FILE_BYTES + 1);
    let mut read = 0u64;
    loop {
        match file.read(&mut buffer) {
            Ok(0) => break,
            Ok(n) => {
                read += n as u64;
                hasher.update(&buffer[..n]);
            }
            Err(_) => return None,
        }
    }
    (read <= MAX_FILE_BYTES).then(|| hex(&hasher.finalize()))
}

/// The included files of the checkout at `checkout` that are as they were
/// copied (`included`, by path with their digests): no unfinished work.
pub fn unchanged(checkout: &Path, included: &BTreeMap<String, String>) -> BTreeSet<String> {
    if included.is_empty() {
        return BTreeSet::new();
    }
    let Ok(tree) = BeneathDir::open(checkout) else {
        return BTreeSet::new();
    };
    included
        .iter()
        .filter(|(path, digest)| digest_of(&tree, path).as_deref() == Some(digest.as_str()))
        .map(|(path, _)| path.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use jackin_api::instance::{Isolation, MountSpec};
    use jackin_files::layout::Layout;

    use super::*;
    use crate::{assess, discard, git, isolation};

    fn mkfifo(path: &Path) {
        let made = std::process::Command::new("mkfifo")
            .arg(path)
            .status()
            .unwrap();
        assert!(made.success());
    }

    fn sha(text: &str) -> String {
        hex(&Sha256::digest(text.as_bytes()))
    }

    /// The operator's checkout: `.env`, `secrets/a`, and beside them what
    /// must never be copied: a link out of the source, a FIFO, a 2 GiB
    /// sparse file, a directory linked out of the source.
    fn source(dir: &Path) -> PathBuf {
        let src = dir.join("src");
        let outside = dir.join("outside");
        std::fs::create_dir_all(src.join("secrets")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("x"), "OUTSIDE\n").unwrap();
        std::fs::write(src.join(".env"), "TOKEN=1\n").unwrap();
        std::fs::write(src.join("secrets/a"), "a\n").unwrap();
        std::os::unix::fs::symlink(outside.join("x"), src.join("secrets/link")).unwrap();
        mkfifo(&src.join("secrets/fifo"));
        let big = std::fs::File::create(src.join("secrets/big")).unwrap();
        big.set_len(2 << 30).unwrap();
        std::os::unix::fs::symlink(&outside, src.join("linked")).unwrap();
        std::fs::write(src.join("README"), "the source's\n").unwrap();
        src
    }

    #[test]
    fn only_regular_files_within_the_source_and_the_cap_are_copied() {
        let dir = tempfile::tempdir().unwrap();
        let src = source(dir.path());
        std::fs::create_dir_all(src.join("config")).unwrap();
        std::fs::write(src.join("config/local.yml"), "local\n").unwrap();
        std::fs::write(
            src.join(WORKTREEINCLUDE),
            "# the operator's\n\n/config/*.yml\n",
        )
        .unwrap();
        let checkout = dir.path().join("checkout");
        std::fs::create_dir_all(&checkout).unwrap();
        std::fs::write(checkout.join("README"), "tracked\n").unwrap();
        let patterns: Vec<String> = [".env", "secrets/*", "linked/x", "README", "absent"]
            .map(String::from)
            .to_vec();

        let included = copy_into(src.to_str().unwrap(), &checkout, &patterns);

        let copied: Vec<&str> = included.copied.keys().map(String::as_str).collect();
        assert_eq!(copied, [".env", "config/local.yml", "secrets/a"]);
        assert_eq!(included.copied[".env"], sha("TOKEN=1\n"));
        assert_eq!(
            std::fs::read_to_string(checkout.join(".env")).unwrap(),
            "TOKEN=1\n"
        );
        let left = included.left_out.join("\n");
        for expected in [
            "secrets/big: larger than 16 MiB",
            "secrets/link: a symbolic link, never followed",
            "secrets/fifo: a FIFO, socket or device",
            "linked: a symbolic link, never followed",
            "README: the checkout has its own (tracked), left as checked out",
            "absent: not in the source",
        ] {
            assert!(left.contains(expected), "{expected} not in:\n{left}");
        }
        for absent in ["secrets/link", "secrets/fifo", "secrets/big", "linked"] {
            assert!(
                std::fs::symlink_metadata(checkout.join(absent)).is_err(),
                "{absent}"
            );
        }
        assert_eq!(
            std::fs::read_to_string(checkout.join("README")).unwrap(),
            "tracked\n"
        );
        // The sparse file was never read: it is still all hole.
        use std::os::unix::fs::MetadataExt;
        assert_eq!(
            std::fs::metadata(src.join("secrets/big")).unwrap().blocks(),
            0
        );
    }

    /// The checkout's copy is read back as the agent may have left it: a
    /// changed file, a FIFO (never waited on), a link to the very same
    /// bytes, a directory, a huge file: each changed.
    #[test]
    fn a_copy_is_unchanged_only_as_the_same_regular_file() {
        let dir = tempfile::tempdir().unwrap();
        let src = source(dir.path());
        let checkout = dir.path().join("checkout");
        std::fs::create_dir_all(&checkout).unwrap();
        let patterns = [".env", "secrets/a"].map(String::from).to_vec();
        let included = copy_into(src.to_str().unwrap(), &checkout, &patterns);
        assert_eq!(unchanged(&checkout, &included.copied).len(), 2);

        std::fs::write(checkout.join(".env"), "TOKEN=2\n").unwrap();
        let now = unchanged(&checkout, &included.copied);
        assert_eq!(now.into_iter().collect::<Vec<_>>(), ["secrets/a"]);
        let a = checkout.join("secrets/a");
        let mut agent_made = Vec::new();
        std::fs::remove_file(&a).unwrap();
        mkfifo(&a);
        agent_made.push(unchanged(&checkout, &included.copied));
        std::fs::remove_file(&a).unwrap();
        std::os::unix::fs::symlink(src.join("secrets/a"), &a).unwrap();
        agent_made.push(unchanged(&checkout, &included.copied));
        std::fs::remove_file(&a).unwrap();
        std::fs::create_dir(&a).unwrap();
        agent_made.push(unchanged(&checkout, &included.copied));
        std::fs::remove_dir(&a).unwrap();
        std::fs::File::create(&a).unwrap().set_len(2 << 30).unwrap();
        agent_made.push(unchanged(&checkout, &included.copied));
        assert!(agent_made.iter().all(BTreeSet::is_empty), "{agent_made:?}");
    }

    /// A host repository whose `.env` and `secrets/` are ignored, holding
    /// both, and a unit with a checkout of it that includes them.
    fn prepared(dir: &Path, isolation: Isolation) -> (Layout, isolation::IsolationRecord) {
        let host = dir.join("host");
        git::run(&["init", "--quiet", host.to_str().unwrap()]).unwrap();
        std::fs::write(host.join(".gitignore"), ".env\nsecrets/\n").unwrap();
        let commit = ["-c", "user.email=t@jackin.dev", "-c", "user.name=t"];
        let host_str = host.to_str().unwrap();
        git::run(&["-C", host_str, "add", "."]).unwrap();
        git::run(&[&["-C", host_str][..], &commit, &["commit", "-qm", "base"]].concat()).unwrap();
        std::fs::write(host.join(".env"), "TOKEN=1\n").unwrap();
        std::fs::create_dir(host.join("secrets")).unwrap();
        std::fs::write(host.join("secrets/a"), "a\n").unwrap();
        let layout = Layout::new(dir.join("home"));
        let mount = MountSpec {
            src: host_str.to_owned(),
            dst: "/workspace/app".into(),
            isolation,
            include: vec![".env".into(), "secrets/*".into()],
            ..Default::default()
        };
        let prepared = isolation::prepare(&layout, "jk-1-t", &[mount]).unwrap();
        assert_eq!(prepared.included.len(), 1, "{prepared:?}");
        let record = isolation::read_records(&layout, "jk-1-t")
            .unwrap()
            .remove(0);
        (layout, record)
    }

    /// Included files the agent left as they were are no unfinished work
    /// (the ignored directory they are in neither) and no save takes
    /// them; one it changed is, and the save takes it.
    #[test]
    fn an_unchanged_included_file_is_no_work_and_a_changed_one_is_saved() {
        for isolation in [Isolation::Clone, Isolation::Worktree] {
            let dir = tempfile::tempdir().unwrap();
            let (layout, record) = prepared(dir.path(), isolation);
            let checkout = PathBuf::from(&record.path);
            assert_eq!(record.included.len(), 2, "{record:?}");
            let assessment = assess::assess(&record);
            assert!(assessment.is_safe(), "{isolation:?}: {assessment:?}");
            let saved = discard::save_before_discard(&layout, "jk-1-t", "t").unwrap();
            assert!(saved.checkouts.is_empty(), "{saved:?}");

            // A file of the agent's beside them is work, listed by itself.
            std::fs::write(checkout.join("secrets/b"), "b\n").unwrap();
            let assessment = assess::assess(&record);
            assert_eq!(assessment.dirty_files, ["!! secrets/"], "{isolation:?}");
            std::fs::remove_file(checkout.join("secrets/b")).unwrap();

            std::fs::write(checkout.join(".env"), "TOKEN=2\n").unwrap();
            let assessment = assess::assess(&record);
            assert_eq!(assessment.dirty_files, ["!! .env"], "{isolation:?}");
            let saved = discard::save_before_discard(&layout, "jk-1-t", "t").unwrap();
            assert_eq!(saved.checkouts[0].files.listed, [".env"], "{saved:?}");
            // The host's own stays as it was.
            let host_env = dir.path().join("host/.env");
            assert_eq!(std::fs::read_to_string(host_env).unwrap(), "TOKEN=1\n");
        }
    }

    /// A session made again from a save: its new checkout gets the
    /// included files afresh, and the changed one the save holds comes
    /// back over its fresh copy, still unfinished work; the unchanged one,
    /// never saved, is there as the source has it.
    #[test]
    fn a_restored_session_gets_its_included_files_and_its_changed_one_back() {
        for isolation in [Isolation::Clone, Isolation::Worktree] {
            let dir = tempfile::tempdir().unwrap();
            let (layout, record) = prepared(dir.path(), isolation);
            let checkout = PathBuf::from(&record.path);
            std::fs::write(checkout.join(".env"), "TOKEN=agent\n").unwrap();
            isolation::publish(&record).unwrap();
            discard::save_before_discard(&layout, "jk-1-t", "t").unwrap();
            isolation::remove_all(&layout, "jk-1-t").unwrap();

            let mount = MountSpec {
                src: record.src.clone(),
                dst: record.dst.clone(),
                isolation,
                include: vec![".env".into(), "secrets/*".into()],
                ..Default::default()
            };
            let lines = discard::restore_into_unit(&layout, "t", "jk-2-u", &[mount]).unwrap();
            let told = lines.join("\n");
            assert!(told.contains("2 untracked files copied"), "{told}");
            let again = isolation::read_records(&layout, "jk-2-u")
                .unwrap()
                .remove(0);
            let read = |path: &str| std::fs::read_to_string(Path::new(&again.path).join(path));
            assert_eq!(read(".env").unwrap(), "TOKEN=agent\n", "{isolation:?}");
            assert_eq!(read("secrets/a").unwrap(), "a\n", "{isolation:?}");
            let assessment = assess::assess(&again);
            assert_eq!(assessment.dirty_files, ["!! .env"], "{isolation:?}");
        }
    }
}
