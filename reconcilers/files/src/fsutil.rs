//! Durable file operations: atomic replacement, private permissions, locks,
//! and the careful reads of files someone else may have written.
//!
//! - A write replaces its file whole ([`write_atomic`]): a reader sees the
//!   old file or the new one, even across a crash. Where the agent can
//!   write the directory, the directories on the way must be real ones and
//!   the file is replaced by a rename, never written through a link
//!   ([`replace_below`]).
//! - A file is read as what it is: [`read_untrusted`] (every file under
//!   `$JACKIN_HOME`, and whatever the agent writes) follows no link, opens
//!   only a regular file, and refuses one over its cap before reading a
//!   byte; [`read_regular`] is the same for a file the operator may link
//!   elsewhere (`config.yaml`, Docker's own config). Both open through
//!   [`open_regular_file`], so a FIFO or device is never opened, and
//!   [`BeneathDir`] does the same for every path beneath a directory the
//!   agent writes (openat2, no link anywhere on the way).
//! - A lock ([`FileLock`]) is an advisory lock on a file opened without
//!   following a link and kept only if regular; [`FileLock::is_held`] tells
//!   a held lock without turning its holder away.
//!
//! Errors say which file, never what it holds.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::Path;

/// Creates `dir` and its missing parents with mode 0700.
pub fn ensure_private_dir(dir: &Path) -> io::Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
}

/// Opens `path` to append to, creating it (0600, its directory 0700) if
/// need be; a link or anything but a regular file in its place is refused.
pub fn open_private_append(path: &Path) -> io::Result<File> {
    if let Some(dir) = path.parent() {
        ensure_private_dir(dir)?;
    }
    let file = OpenOptions::new()
        .create(true)
        .append(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(io::Error::other(format!(
            "{}: not a regular file",
            path.display()
        )));
    }
    Ok(file)
}

/// How [`write_atomic`]'s temporary files begin: one that outlives its
/// writer (killed mid-write) is removed by a sweep where writers lock.
pub const TEMPORARY_PREFIX: &str = ".tmp-";

/// Replaces `path` with `contents` so that a reader sees either the old or the
/// new file, never a torn one, even across a crash: write a temporary file in
/// the same directory (mode 0600), fsync it, rename it over `path`, fsync the
/// directory.
pub fn write_atomic(path: &Path, contents: &[u8]) -> io::Result<()> {
    let dir = path
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no parent", path.display())))?;
    ensure_private_dir(dir)?;
    let mut tmp = tempfile::Builder::new()
        .prefix(TEMPORARY_PREFIX)
        .tempfile_in(dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    tmp.persist(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()
}

/// Reads a file that someone else controls (the agent writes the unit's
/// `state/`; a secret reference names any path), and every file jackin keeps
/// under `$JACKIN_HOME`, without letting it hang or exhaust jackin: a
/// symbolic link is not followed, only a regular file is opened (a FIFO or
/// device is refused without being opened, see [`open_regular_file`]), and
/// a file larger than `max_bytes` is refused before a byte of it is read.
/// Blocking I/O: call it off the async runtime. The error says what the
/// file is, never what it holds.
pub fn read_untrusted(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    read_within(open_regular_file(path, Links::Refuse)?, max_bytes)
}

/// As [`read_untrusted`], but a symbolic link is followed: for a file the
/// operator names or keeps where they like (`$JACKIN_HOME/config.yaml`
/// linked into a dotfiles repository, a policy file they named, Docker's
/// own config). What the link leads to must still be a regular file no
/// larger than `max_bytes`: a link to `/dev/zero` or a FIFO is refused like
/// the thing itself. Where a link may lead is the caller's rule (a policy
/// directory keeps its links inside itself).
pub fn read_regular(path: &Path, max_bytes: u64) -> io::Result<Vec<u8>> {
    read_within(open_regular_file(path, Links::Follow)?, max_bytes)
}

/// Whether [`open_regular_file`] follows a symbolic link at the end of the
/// path (links on the way are followed either way).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// A link is refused: for what someone else can write (a unit's files,
    /// a secret reference) and for jackin's own files.
    Refuse,
    /// A link is followed, to a regular file only: for a file the operator
    /// names or keeps where they like.
    Follow,
}

/// Opens the regular file `path` for reading, having checked what it is
/// before opening it: `path` is first opened with `O_PATH`, which reads
/// nothing and runs no driver (a FIFO does not wait for a writer, a
/// device's open has none of its effects), `fstat` says what it is, and
/// only a regular file is then opened for reading, through
/// `/proc/self/fd`, so that the file read is the very one checked even if
/// another was put in its place meanwhile. A device node, FIFO, socket or
/// directory is refused and never opened for reading; so is a symbolic
/// link unless `links` follows it. The file's size is its `metadata()`:
/// cap a read or copy by it before reading ([`read_within`],
/// [`copy_capped`]). Every reader of a file in a unit goes through this (or
/// [`BeneathDir::open_regular`]). Blocking I/O.
pub fn open_regular_file(path: &Path, links: Links) -> io::Result<File> {
    use rustix::fs::{Mode, OFlags};
    let nofollow = match links {
        Links::Refuse => OFlags::NOFOLLOW,
        Links::Follow => OFlags::empty(),
    };
    let handle = rustix::fs::open(
        path,
        OFlags::PATH | OFlags::CLOEXEC | nofollow,
        Mode::empty(),
    )?;
    reopen_if_regular(&handle)
}

/// Opens for reading the file an `O_PATH` handle names, if `fstat` says it
/// is a regular file; anything else is refused unopened.
fn reopen_if_regular(handle: &rustix::fd::OwnedFd) -> io::Result<File> {
    use rustix::fd::AsRawFd;
    use rustix::fs::{FileType, Mode, OFlags};
    match FileType::from_raw_mode(rustix::fs::fstat(handle)?.st_mode) {
        FileType::RegularFile => {}
        FileType::Symlink => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is a symbolic link, which jackin does not follow here: \
                 put the file itself in its place",
            ));
        }
        _ => {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "it is not a regular file (a FIFO, socket, device or directory): \
                 jackin reads only regular files here; put one in its place or remove it",
            ));
        }
    }
    // The handle's magic link reaches the checked inode itself, not
    // whatever the path names now.
    let checked = format!("/proc/self/fd/{}", handle.as_raw_fd());
    let fd = rustix::fs::open(
        checked.as_str(),
        OFlags::RDONLY | OFlags::NOCTTY | OFlags::NONBLOCK | OFlags::CLOEXEC,
        Mode::empty(),
    )
    .map_err(|e| {
        io::Error::new(
            io::Error::from(e).kind(),
            format!("it was checked, then could not be opened through {checked}: {e} (is /proc mounted?)"),
        )
    })?;
    Ok(File::from(fd))
}

fn larger_than(max_bytes: u64) -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidData,
        format!(
            "it is larger than {max_bytes} bytes, more than jackin reads from such a file: \
             no file it expects here is that large; replace or remove it"
        ),
    )
}

/// The bytes of `file` (opened by [`open_regular_file`]), unless it is
/// larger than `max_bytes`: its size is looked at first, so a sparse file
/// that claims gigabytes is refused before a byte of it is read, and one
/// that grows past the cap while it is read is refused too.
pub fn read_within(file: File, max_bytes: u64) -> io::Result<Vec<u8>> {
    let size = file.metadata()?.len();
    if size > max_bytes {
        return Err(larger_than(max_bytes));
    }
    let mut bytes = Vec::with_capacity(usize::try_from(size).unwrap_or(0));
    file.take(max_bytes + 1).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > max_bytes {
        return Err(larger_than(max_bytes));
    }
    Ok(bytes)
}

/// What [`copy_capped`] did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CappedCopy {
    /// All of it, this many bytes.
    Copied(u64),
    /// Nothing or part of it: it is, or grew while it was copied, larger
    /// than the cap. What was written must be thrown away.
    TooLarge,
}

/// Copies `from` (a regular file opened by [`open_regular_file`] or
/// [`BeneathDir::open_regular`]) into `to`, unless it is larger than
/// `max_bytes`: its size (`st_size`) is looked at first, so a sparse file
/// that claims gigabytes is refused at once, before a byte of it is read;
/// one that grows past the cap while it is copied is refused once the cap
/// is passed.
pub fn copy_capped(from: &mut File, to: &mut impl Write, max_bytes: u64) -> io::Result<CappedCopy> {
    if from.metadata()?.len() > max_bytes {
        return Ok(CappedCopy::TooLarge);
    }
    let copied = io::copy(&mut from.take(max_bytes + 1), to)?;
    Ok(if copied > max_bytes {
        CappedCopy::TooLarge
    } else {
        CappedCopy::Copied(copied)
    })
}

/// `base/relative` as a real directory (mode 0700 where it is made), in a
/// tree someone else can write: no component below `base` may be a
/// symbolic link or anything but a directory, so no link planted there can
/// make jackin create, or hand on, a directory elsewhere on the host.
/// `relative` must not climb (`..`).
pub fn ensure_real_dir_below(base: &Path, relative: &Path) -> io::Result<std::path::PathBuf> {
    let mut dir = base.to_owned();
    for part in relative.components() {
        if part == std::path::Component::CurDir {
            continue;
        }
        if !matches!(part, std::path::Component::Normal(_)) {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{} is not a plain relative path", relative.display()),
            ));
        }
        dir.push(part);
        match fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            Ok(_) => {
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    format!("{} is not a plain directory", dir.display()),
                ));
            }
            Err(e) if e.kind() == io::ErrorKind::NotFound => {
                fs::DirBuilder::new().mode(0o700).create(&dir)?;
            }
            Err(e) => return Err(e),
        }
    }
    Ok(dir)
}

/// A directory someone else can write, read so that nothing in it can lead
/// jackin elsewhere: every path below it is resolved by the kernel with
/// `RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS` (openat2), so a symbolic link
/// planted anywhere in the path, even one swapped in while jackin reads, is
/// refused rather than followed, and `..` cannot climb out.
#[derive(Debug)]
pub struct BeneathDir {
    fd: rustix::fd::OwnedFd,
}

impl BeneathDir {
    const RESOLVE: rustix::fs::ResolveFlags = rustix::fs::ResolveFlags::BENEATH
        .union(rustix::fs::ResolveFlags::NO_SYMLINKS)
        .union(rustix::fs::ResolveFlags::NO_MAGICLINKS);

    /// Opens `path`, whose parents are jackin's; `path` itself must be a
    /// directory, not a link to one.
    pub fn open(path: &Path) -> io::Result<Self> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::open(
            path,
            OFlags::RDONLY | OFlags::DIRECTORY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
        )?;
        Ok(Self { fd })
    }

    fn open_below(&self, relative: &str, flags: rustix::fs::OFlags) -> io::Result<File> {
        use rustix::fs::{Mode, OFlags};
        let fd = rustix::fs::openat2(
            &self.fd,
            relative,
            flags | OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            Self::RESOLVE,
        )?;
        Ok(File::from(fd))
    }

    /// The names in the directory `relative` below this one (`.` for this
    /// one), each with whether it is a directory, as the directory says.
    /// What a name is must still be checked when it is opened: it can change.
    pub fn entries(&self, relative: &str) -> io::Result<Vec<(String, bool)>> {
        Ok(self.entries_counted(relative)?.0)
    }

    /// As [`BeneathDir::entries`], with how many names were left out
    /// because they are not UTF-8.
    pub fn entries_counted(&self, relative: &str) -> io::Result<(Vec<(String, bool)>, usize)> {
        let dir = self.open_below(relative, rustix::fs::OFlags::DIRECTORY)?;
        let mut out = Vec::new();
        let mut not_utf8 = 0;
        for entry in rustix::fs::Dir::read_from(&dir)? {
            let entry = entry?;
            let Ok(name) = entry.file_name().to_str() else {
                not_utf8 += 1;
                continue;
            };
            if name == "." || name == ".." {
                continue;
            }
            out.push((
                name.to_owned(),
                entry.file_type() == rustix::fs::FileType::Directory,
            ));
        }
        Ok((out, not_utf8))
    }

    /// Opens the regular file `relative` below this directory for reading:
    /// a link anywhere on the way is refused, and so is a FIFO, device or
    /// directory, checked before it is opened, as [`open_regular_file`]
    /// does. Cap what is read by its size ([`copy_capped`]).
    pub fn open_regular(&self, relative: &str) -> io::Result<File> {
        use rustix::fs::{Mode, OFlags};
        let handle = rustix::fs::openat2(
            &self.fd,
            relative,
            OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC,
            Mode::empty(),
            Self::RESOLVE,
        )?;
        reopen_if_regular(&handle)
    }
}

/// What a name below a [`BeneathDir`] is, as `lstat` sees it (a link is a
/// link, never what it points at).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EntryKind {
    /// A regular file of this many bytes; `executable` when any execute
    /// bit is set (git records that, and nothing else of the mode).
    File {
        size: u64,
        executable: bool,
    },
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Special,
}

impl BeneathDir {
    /// The directory that holds `relative` (opened beneath, no link on the
    /// way), and the last component's name.
    fn parent_of<'a>(&self, relative: &'a str) -> io::Result<(File, &'a str)> {
        let (parent, name) = match relative.rsplit_once('/') {
            Some((parent, name)) => (parent, name),
            None => (".", relative),
        };
        if name.is_empty() || name == "." || name == ".." {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("{relative} names no entry"),
            ));
        }
        let dir = self.open_below(parent, rustix::fs::OFlags::DIRECTORY)?;
        Ok((dir, name))
    }

    /// What `relative` is, without following a link at its end (and with
    /// none allowed on the way).
    pub fn kind(&self, relative: &str) -> io::Result<EntryKind> {
        use rustix::fs::{AtFlags, FileType};
        let (dir, name) = self.parent_of(relative)?;
        let stat = rustix::fs::statat(&dir, name, AtFlags::SYMLINK_NOFOLLOW)?;
        Ok(match FileType::from_raw_mode(stat.st_mode) {
            FileType::RegularFile => EntryKind::File {
                size: u64::try_from(stat.st_size).unwrap_or(0),
                executable: stat.st_mode & 0o111 != 0,
            },
            FileType::Directory => EntryKind::Dir,
            FileType::Symlink => EntryKind::Symlink,
            _ => EntryKind::Special,
        })
    }

    /// What the symbolic link `relative` says, as bytes: read, never
    /// followed.
    pub fn read_link(&self, relative: &str) -> io::Result<Vec<u8>> {
        let (dir, name) = self.parent_of(relative)?;
        Ok(rustix::fs::readlinkat(&dir, name, Vec::new())?.into_bytes())
    }
}

/// Replaces the file `base/relative` with `contents` (mode 0600), in a tree
/// someone else can write: the directories on the way are real ones below
/// `base` ([`ensure_real_dir_below`]), and the file is replaced by a rename,
/// which puts a new file where a link (or anything else) was instead of
/// writing through it. A reader sees the old file or the new one, never a
/// torn one. Returns the file's path.
pub fn replace_below(
    base: &Path,
    relative: &Path,
    contents: &[u8],
) -> io::Result<std::path::PathBuf> {
    let Some(std::path::Component::Normal(name)) = relative.components().next_back() else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("{} names no file", relative.display()),
        ));
    };
    let dir = ensure_real_dir_below(base, relative.parent().unwrap_or(Path::new("")))?;
    // Made with O_EXCL and mode 0600: never an existing file, never a link.
    let mut tmp = tempfile::Builder::new()
        .prefix(".jackin-")
        .tempfile_in(&dir)?;
    tmp.write_all(contents)?;
    tmp.as_file().sync_all()?;
    let path = dir.join(name);
    tmp.persist(&path).map_err(|e| e.error)?;
    File::open(&dir)?.sync_all()?;
    Ok(path)
}

/// Removes a file, or a directory with everything in it; what is already
/// gone is not an error, so a removal interrupted anywhere can be re-run.
pub fn remove_if_exists(path: &Path) -> io::Result<()> {
    let result = match fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => fs::remove_dir_all(path),
        Ok(_) => fs::remove_file(path),
        Err(e) => Err(e),
    };
    match result {
        Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
        _ => Ok(()),
    }
}

/// An advisory lock on a file, exclusive unless taken shared, released
/// when dropped.
#[derive(Debug)]
pub struct FileLock {
    file: File,
}

fn not_a_lock() -> io::Error {
    io::Error::new(
        io::ErrorKind::InvalidInput,
        "a lock file must be a regular file, not a link, FIFO or device: \
         remove it and jackin makes a new one",
    )
}

impl FileLock {
    fn open(path: &Path) -> io::Result<File> {
        if let Some(dir) = path.parent() {
            ensure_private_dir(dir)?;
        }
        // Like a read of jackin's own files: no link is followed, and a
        // FIFO or device in the lock's place is refused instead of waited on.
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ELOOP | libc::ENXIO) => not_a_lock(),
                _ => e,
            })?;
        if !file.metadata()?.is_file() {
            return Err(not_a_lock());
        }
        Ok(file)
    }

    /// Sets the lock file's modification time to now, with the lock held:
    /// the file keeps when its holder last did what the lock guards (for
    /// the attached lock, when an operator was last attached).
    pub fn touch(&self) -> io::Result<()> {
        self.file.set_modified(std::time::SystemTime::now())
    }

    /// Creates the lock file (0600) without taking the lock.
    pub fn create(path: &Path) -> io::Result<()> {
        Self::open(path).map(drop)
    }

    /// Waits for the lock.
    pub fn acquire(path: &Path) -> io::Result<Self> {
        let file = Self::open(path)?;
        file.lock()?;
        Ok(Self { file })
    }

    /// Waits for the lock shared: any number of holders may share it, and
    /// none holds it while someone holds it exclusively.
    pub fn acquire_shared(path: &Path) -> io::Result<Self> {
        let file = Self::open(path)?;
        file.lock_shared()?;
        Ok(Self { file })
    }

    /// Whether some process holds the lock on `path` now. Asks for a shared
    /// lock and lets it go at once, which costs a holder nothing; a
    /// missing file is nobody's lock, and is not made. (The kernel's table
    /// of locks, `/proc/locks`, would say as much without the ask, but
    /// reading it waits for a grace period of every CPU, ten milliseconds
    /// and more, and stalls every lock taken meanwhile.)
    pub fn is_held(path: &Path) -> io::Result<bool> {
        let Some(file) = Self::open_to_ask(path)? else {
            return Ok(false);
        };
        match file.try_lock_shared() {
            Ok(()) => Ok(false),
            Err(fs::TryLockError::WouldBlock) => Ok(true),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// Whether some process holds the lock on `path` now, shared or not
    /// ([`FileLock::is_held`] sees only one who holds it exclusively).
    /// Asks for it exclusively and lets it go at once: whoever asks for it
    /// meanwhile waits that moment, or, not waiting, is told it is held. A
    /// missing file is nobody's lock, and is not made.
    pub fn is_in_use(path: &Path) -> io::Result<bool> {
        let Some(file) = Self::open_to_ask(path)? else {
            return Ok(false);
        };
        match file.try_lock() {
            Ok(()) => Ok(false),
            Err(fs::TryLockError::WouldBlock) => Ok(true),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }

    /// The lock file at `path`, opened to ask whether it is held (never
    /// made, no link followed, nothing but a regular file); none when
    /// there is no file.
    fn open_to_ask(path: &Path) -> io::Result<Option<File>> {
        let file = match OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
            .open(path)
        {
            Ok(file) => file,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(e) => {
                return Err(match e.raw_os_error() {
                    Some(libc::ELOOP | libc::ENXIO) => not_a_lock(),
                    _ => e,
                });
            }
        };
        if !file.metadata()?.is_file() {
            return Err(not_a_lock());
        }
        Ok(Some(file))
    }

    /// Takes the lock only if nobody holds it.
    pub fn try_acquire(path: &Path) -> io::Result<Option<Self>> {
        let file = Self::open(path)?;
        match file.try_lock() {
            Ok(()) => Ok(Some(Self { file })),
            Err(fs::TryLockError::WouldBlock) => Ok(None),
            Err(fs::TryLockError::Error(e)) => Err(e),
        }
    }
}

/// The bytes free for an unprivileged user on the file system that holds
/// `path`.
pub fn free_bytes(path: &Path) -> io::Result<u64> {
    let stat = rustix::fs::statvfs(path)?;
    Ok(stat.f_bavail.saturating_mul(stat.f_frsize))
}

/// The bytes of the regular files beneath `dir` (links not followed, so a
/// link out of it counts nothing), and whether `max_entries` cut the count
/// short: an estimate for the operator, never a limit.
pub fn bytes_under(dir: &Path, max_entries: usize) -> (u64, bool) {
    let (mut bytes, mut seen) = (0u64, 0usize);
    let mut pending = vec![dir.to_path_buf()];
    while let Some(at) = pending.pop() {
        let Ok(entries) = fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.flatten() {
            seen += 1;
            if seen > max_entries {
                return (bytes, true);
            }
            match entry.metadata() {
                Ok(meta) if meta.is_dir() => pending.push(entry.path()),
                Ok(meta) if meta.is_file() => bytes = bytes.saturating_add(meta.len()),
                _ => {}
            }
        }
    }
    (bytes, false)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt;

    #[test]
    fn a_real_dir_below_refuses_links_and_climbing() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("home");
        fs::create_dir(&base).unwrap();
        let made = ensure_real_dir_below(&base, Path::new("a/b")).unwrap();
        assert!(made.is_dir() && made == base.join("a/b"));
        let elsewhere = dir.path().join("elsewhere");
        fs::create_dir(&elsewhere).unwrap();
        std::os::unix::fs::symlink(&elsewhere, base.join("link")).unwrap();
        assert!(ensure_real_dir_below(&base, Path::new("link/c")).is_err());
        assert!(
            !elsewhere.join("c").exists(),
            "nothing made through the link"
        );
        assert!(ensure_real_dir_below(&base, Path::new("../c")).is_err());
        assert!(!dir.path().join("c").exists());
    }

    #[test]
    fn a_replacement_below_never_writes_through_a_link() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("home");
        fs::create_dir(&base).unwrap();
        let outside = dir.path().join("outside");
        fs::create_dir(&outside).unwrap();
        fs::write(outside.join("file"), "the operator's").unwrap();

        // A link in the file's place is replaced, not followed.
        fs::create_dir(base.join("a")).unwrap();
        std::os::unix::fs::symlink(outside.join("file"), base.join("a/file")).unwrap();
        let made = replace_below(&base, Path::new("a/file"), b"new").unwrap();
        assert_eq!(made, base.join("a/file"));
        assert!(fs::symlink_metadata(&made).unwrap().is_file());
        assert_eq!(fs::read(&made).unwrap(), b"new");
        assert_eq!(fs::read(outside.join("file")).unwrap(), b"the operator's");
        let mode = fs::metadata(&made).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);

        // A link on the way is refused, and nothing is made through it.
        std::os::unix::fs::symlink(&outside, base.join("b")).unwrap();
        let err = replace_below(&base, Path::new("b/file"), b"new").unwrap_err();
        assert!(err.to_string().contains("not a plain directory"), "{err}");
        assert_eq!(fs::read(outside.join("file")).unwrap(), b"the operator's");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 1);

        // Missing directories are made; climbing is refused.
        replace_below(&base, Path::new("c/d/file"), b"x").unwrap();
        assert_eq!(fs::read(base.join("c/d/file")).unwrap(), b"x");
        assert!(replace_below(&base, Path::new("../file"), b"x").is_err());
        assert!(!dir.path().join("file").exists());
        // No temporary file is left beside a replaced one.
        assert_eq!(fs::read_dir(base.join("a")).unwrap().count(), 1);
    }

    #[test]
    fn atomic_write_is_private_and_replaces() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("a/b/file.json");
        write_atomic(&path, b"one").unwrap();
        write_atomic(&path, b"two").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"two");
        let mode = |p: &Path| fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&path), 0o600);
        assert_eq!(mode(&dir.path().join("a/b")), 0o700);
        // No temporary file is left beside it.
        assert_eq!(fs::read_dir(dir.path().join("a/b")).unwrap().count(), 1);
    }

    #[test]
    fn untrusted_reads_refuse_links_fifos_and_large_files() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("marker");
        fs::write(&file, b"{}").unwrap();
        assert_eq!(read_untrusted(&file, 16).unwrap(), b"{}");

        let link = dir.path().join("link");
        std::os::unix::fs::symlink("/dev/zero", &link).unwrap();
        let err = read_untrusted(&link, 16).unwrap_err();
        assert!(err.to_string().contains("symbolic link"), "{err}");

        // A FIFO with no writer: opening must not wait for one.
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let err = read_untrusted(&fifo, 16).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");

        fs::write(&file, vec![b'x'; 17]).unwrap();
        let err = read_untrusted(&file, 16).unwrap_err();
        assert!(err.to_string().contains("larger than 16 bytes"), "{err}");
    }

    #[test]
    fn regular_reads_follow_a_link_only_to_a_regular_file_and_locks_refuse_fifos() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("config.yaml");
        fs::write(&file, b"a: 1\n").unwrap();
        let link = dir.path().join("linked.yaml");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert_eq!(read_regular(&link, 16).unwrap(), b"a: 1\n");

        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        let err = read_regular(&zero, 16).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");

        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        let to_fifo = dir.path().join("to-fifo");
        std::os::unix::fs::symlink(&fifo, &to_fifo).unwrap();
        let err = read_regular(&to_fifo, 16).unwrap_err();
        assert!(err.to_string().contains("not a regular file"), "{err}");

        // A FIFO or a link in a lock's place is refused, not waited on.
        let err = FileLock::acquire(&fifo).unwrap_err();
        assert!(err.to_string().contains("lock file"), "{err}");
        let err = FileLock::acquire(&zero).unwrap_err();
        assert!(err.to_string().contains("lock file"), "{err}");
        let err = FileLock::is_held(&fifo).unwrap_err();
        assert!(err.to_string().contains("lock file"), "{err}");
        let err = FileLock::is_held(&zero).unwrap_err();
        assert!(err.to_string().contains("lock file"), "{err}");
    }

    /// What was done to one file, as inotify tells it: an `O_PATH` open
    /// neither opens nor reads a file, so only a real open shows.
    struct Watch {
        inotify: rustix::fd::OwnedFd,
    }

    impl Watch {
        fn on(path: &Path) -> Self {
            use rustix::fs::inotify;
            let flags = inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC;
            let inotify = inotify::init(flags).unwrap();
            let what = inotify::WatchFlags::OPEN | inotify::WatchFlags::ACCESS;
            inotify::add_watch(&inotify, path, what).unwrap();
            Self { inotify }
        }

        /// Whether the file was opened, and read, since the last look
        /// (inotify folds repeated events into one, so they are not
        /// counted).
        fn opened_and_read(&self) -> (bool, bool) {
            use rustix::fs::inotify::{ReadFlags, Reader};
            let mut buffer = [std::mem::MaybeUninit::uninit(); 4096];
            let mut events = Reader::new(&self.inotify, &mut buffer);
            let (mut opened, mut read) = (false, false);
            loop {
                match events.next() {
                    Ok(event) => {
                        opened |= event.events().contains(ReadFlags::OPEN);
                        read |= event.events().contains(ReadFlags::ACCESS);
                    }
                    Err(rustix::io::Errno::AGAIN) => return (opened, read),
                    Err(e) => panic!("reading inotify events: {e}"),
                }
            }
        }
    }

    #[test]
    fn a_device_or_fifo_is_refused_without_being_opened() {
        let dir = tempfile::tempdir().unwrap();
        let tree = BeneathDir::open(dir.path()).unwrap();
        let file = dir.path().join("file");
        fs::write(&file, b"{}").unwrap();
        let watch = Watch::on(&file);
        assert_eq!(read_untrusted(&file, 16).unwrap(), b"{}");
        assert_eq!(
            watch.opened_and_read(),
            (true, true),
            "the watch sees a regular file opened and read"
        );

        // What the agent's `mknod exit.json c 1 3` makes: `/dev/null`'s
        // numbers. The tests run as root, as jackin does.
        let device = dir.path().join("device");
        let made = std::process::Command::new("mknod")
            .arg(&device)
            .args(["c", "1", "3"])
            .status();
        assert!(made.unwrap().success(), "mknod needs CAP_MKNOD (root)");
        let fifo = dir.path().join("fifo");
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        assert!(made.unwrap().success());
        for name in ["device", "fifo"] {
            let path = dir.path().join(name);
            let link = dir.path().join(format!("to-{name}"));
            std::os::unix::fs::symlink(&path, &link).unwrap();
            let watch = Watch::on(&path);
            let refusals = [
                read_untrusted(&path, 16).unwrap_err(),
                read_regular(&link, 16).unwrap_err(),
                open_regular_file(&path, Links::Refuse).unwrap_err(),
                tree.open_regular(name).unwrap_err(),
            ];
            for err in refusals {
                assert!(
                    err.to_string().contains("not a regular file"),
                    "{name}: {err}"
                );
            }
            assert_eq!(
                watch.opened_and_read(),
                (false, false),
                "the {name} was opened"
            );
        }
    }

    #[test]
    fn a_sparse_file_past_the_cap_is_refused_before_a_byte_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("pack");
        File::create(&path).unwrap().set_len(5 << 30).unwrap();
        let watch = Watch::on(&path);

        let err = read_untrusted(&path, 1 << 20).unwrap_err();
        assert!(
            err.to_string().contains("larger than 1048576 bytes"),
            "{err}"
        );
        let mut from = open_regular_file(&path, Links::Refuse).unwrap();
        let mut to = Vec::new();
        let copied = copy_capped(&mut from, &mut to, 1 << 20).unwrap();
        assert_eq!(copied, CappedCopy::TooLarge);
        assert!(to.is_empty());
        assert_eq!(io::Seek::stream_position(&mut from).unwrap(), 0);
        assert_eq!(watch.opened_and_read(), (true, false), "opened, never read");

        // Within the cap, the whole file is copied.
        File::options()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(5)
            .unwrap();
        let mut from = open_regular_file(&path, Links::Refuse).unwrap();
        let copied = copy_capped(&mut from, &mut to, 5).unwrap();
        assert_eq!((copied, to.len()), (CappedCopy::Copied(5), 5));
    }

    #[test]
    fn a_probe_tells_a_held_lock_takes_nothing_and_makes_no_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        assert!(!FileLock::is_held(&path).unwrap());
        assert!(!path.exists(), "a probe makes no lock file");
        FileLock::create(&path).unwrap();
        assert!(!FileLock::is_held(&path).unwrap());
        let held = FileLock::acquire(&path).unwrap();
        assert!(FileLock::is_held(&path).unwrap());
        assert!(FileLock::is_held(&path).unwrap(), "a probe leaves it held");
        drop(held);
        // As below: a forked child may hold the descriptor for a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while FileLock::is_held(&path).unwrap() {
            assert!(std::time::Instant::now() < deadline, "never released");
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // The probe held nothing: the lock is there to take.
        assert!(FileLock::try_acquire(&path).unwrap().is_some());
    }

    /// A lock held shared is in use, though not held exclusively; asking
    /// makes no file.
    #[test]
    fn a_lock_held_shared_is_in_use() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        assert!(!FileLock::is_in_use(&path).unwrap());
        assert!(!path.exists(), "asking made the file");
        let first = FileLock::acquire_shared(&path).unwrap();
        let second = FileLock::acquire_shared(&path).unwrap();
        assert!(FileLock::is_in_use(&path).unwrap());
        assert!(!FileLock::is_held(&path).unwrap());
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        drop((first, second));
    }

    #[test]
    fn a_held_lock_is_not_granted_twice() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.lock");
        let held = FileLock::acquire(&path).unwrap();
        assert!(FileLock::try_acquire(&path).unwrap().is_none());
        drop(held);
        // A child forked by a parallel test may hold a copy of the
        // descriptor until it execs (it is close-on-exec): allow a moment.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while FileLock::try_acquire(&path).unwrap().is_none() {
            assert!(
                std::time::Instant::now() < deadline,
                "the lock was never released"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
    }
}
