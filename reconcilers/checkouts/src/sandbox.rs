//! A Landlock domain for the git processes jackin runs over trees the agent
//! wrote (its checkout, a submodule in it, the repository objects it can
//! write). Inside the domain a process, and every process it starts, at any
//! depth:
//!
//! - may execute only git itself: its binary (on `PATH`, and the `git` of
//!   its exec path, which it runs for submodules) and the ELF loader it
//!   needs. Any other program a tree names (a filter, textconv or merge
//!   driver, `core.fsmonitor`, `core.sshCommand`, a pager, a hook,
//!   `gpg.program`, `sh -c …`), and every helper in git's exec path (remote
//!   helpers that would fetch included), fails to start with `EACCES`;
//! - may read only what it was given to read (the repositories the command
//!   concerns: [`Reads`]) besides git's installation and the system's
//!   libraries, so that an alternates line, a linked ref or a `commondir`
//!   the agent wrote cannot lead it into another repository of the host;
//!   and write none but `/dev/null` (git opens it for the standard streams
//!   of its children);
//! - may open no TCP connection and bind no TCP port (Landlock ABI 4), and
//!   may not signal, or connect to the abstract sockets of, processes outside
//!   the domain (ABI 6).
//!
//! A domain is inherited across `fork` and `execve` and can never be left,
//! so this holds for submodules and nested submodules as git recurses into
//! them, whatever names their configs choose. See `docs/SECURITY.md`.
//!
//! The rule set is built once per process, in the parent; the child only
//! makes two system calls before `execve` (`prctl(PR_SET_NO_NEW_PRIVS)` and
//! `landlock_restrict_self`), which is all that is safe to do after `fork`
//! in a multi-threaded program. The crate `landlock` offers no such
//! allocation-free child side, and the policy here is one fixed rule set, so
//! the few system calls are written out. This is the one module of jackin
//! that uses `unsafe`; each block says why it holds.
#![allow(unsafe_code)]

use std::ffi::CString;
use std::io::{self, Read};
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

// From the kernel's `include/uapi/linux/landlock.h`.
const CREATE_RULESET_VERSION: u32 = 1;
const RULE_PATH_BENEATH: libc::c_int = 1;

const FS_EXECUTE: u64 = 1 << 0;
const FS_WRITE_FILE: u64 = 1 << 1;
const FS_READ_FILE: u64 = 1 << 2;
const FS_READ_DIR: u64 = 1 << 3;
/// Every right of ABI 1 (execute … make symbolic link).
const FS_ABI1: u64 = (1 << 13) - 1;
const FS_REFER: u64 = 1 << 13;
const FS_TRUNCATE: u64 = 1 << 14;
const FS_IOCTL_DEV: u64 = 1 << 15;

const NET_BIND_TCP: u64 = 1 << 0;
const NET_CONNECT_TCP: u64 = 1 << 1;

const SCOPE_ABSTRACT_UNIX_SOCKET: u64 = 1 << 0;
const SCOPE_SIGNAL: u64 = 1 << 1;

#[repr(C)]
struct RulesetAttr {
    handled_access_fs: u64,
    handled_access_net: u64,
    scoped: u64,
}

#[repr(C, packed)]
struct PathBeneathAttr {
    allowed_access: u64,
    parent_fd: i32,
}

/// Why git over an agent's tree cannot be confined here.
#[derive(Debug, Clone, thiserror::Error)]
#[error(
    "cannot confine git to run no program from the agent's tree: {0}; jackin does not run git \
     over an agent's checkout unconfined (Landlock needs Linux 5.13 or later with `landlock` \
     in the kernel's lsm= list)"
)]
pub struct SandboxError(String);

/// A rule set, kept open until the command it confines has started.
pub struct Ruleset {
    fd: OwnedFd,
}

/// What a confined command may read.
#[derive(Debug, Clone, Copy)]
pub enum Reads<'a> {
    /// Any file: for a repository the operator controls, confined only so
    /// that nothing runs (a policy directory).
    Anything,
    /// Only beneath these, besides git's installation and the system's
    /// libraries (see `SYSTEM_READS` in this module).
    Beneath(&'a [&'a Path]),
}

/// What any git needs to read to start and work, whatever it is given:
/// the shared libraries (the library directories, never all of `/usr`, so
/// that a repository kept under `/usr/local/src` or `/usr/share` is not
/// readable through an alternates line), its own data, locales and time
/// zones, the loader's cache, the few files of `/etc` the C library reads
/// (users and groups for a default identity), and a source of random
/// bytes. Its binary and exec path are added where they are. git must also
/// be told to read no system or global config (`GIT_CONFIG_NOSYSTEM`,
/// `GIT_CONFIG_GLOBAL`), which it would otherwise refuse to go without.
/// Those that do not exist here are left out.
const SYSTEM_READS: [&str; 20] = [
    // For the names of temporary files, where git has no `getrandom`.
    "/dev/urandom",
    "/lib",
    "/lib64",
    "/lib32",
    "/libx32",
    "/usr/lib",
    "/usr/lib64",
    "/usr/lib32",
    "/usr/libx32",
    "/usr/local/lib",
    "/usr/share/git-core",
    "/usr/share/locale",
    "/usr/share/zoneinfo",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/passwd",
    "/etc/group",
    "/etc/nsswitch.conf",
];

/// What git itself is, found once per process: its binary, the `git` of
/// its exec path, and the loader they name.
struct GitInstall {
    git: PathBuf,
    /// `git --exec-path`: read, for what git keeps there beside programs.
    exec_path: PathBuf,
    exec_path_git: Option<PathBuf>,
    loader: Option<PathBuf>,
}

fn git_install() -> Result<&'static GitInstall, SandboxError> {
    static INSTALL: OnceLock<Result<GitInstall, SandboxError>> = OnceLock::new();
    INSTALL
        .get_or_init(|| {
            let git = git_binary().map_err(SandboxError)?;
            // git starts git for submodules through its exec path: that one
            // file, never the helpers beside it (a remote helper such as
            // git-remote-https would fetch, and could be pointed at a proxy
            // on a path socket, which Landlock does not cover).
            let exec_path = exec_path().map_err(SandboxError)?;
            let exec_path_git = exec_path.join("git");
            let loader = elf_interpreter(&git).map_err(SandboxError)?;
            Ok(GitInstall {
                exec_path,
                exec_path_git: exec_path_git.is_file().then_some(exec_path_git),
                loader,
                git,
            })
        })
        .as_ref()
        .map_err(Clone::clone)
}

fn abi_version() -> io::Result<i64> {
    // SAFETY: the version query takes no attribute pointer.
    let version = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            std::ptr::null::<RulesetAttr>(),
            0usize,
            CREATE_RULESET_VERSION,
        )
    };
    if version < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(version)
    }
}

/// What may be done beneath a writable directory: everything but executing
/// and making device nodes, FIFOs or sockets.
const FS_WRITE_BENEATH: u64 = !(FS_EXECUTE
    | FS_IOCTL_DEV
    | (1 << 6) // make a character device
    | (1 << 9) // make a socket
    | (1 << 10) // make a FIFO
    | (1 << 11)); // make a block device

fn build(reads: Reads<'_>, writable: &[&Path]) -> Result<Ruleset, SandboxError> {
    let abi =
        abi_version().map_err(|e| SandboxError(format!("Landlock is not available ({e})")))?;
    let mut handled_fs = FS_ABI1;
    if abi >= 2 {
        handled_fs |= FS_REFER;
    }
    if abi >= 3 {
        handled_fs |= FS_TRUNCATE;
    }
    if abi >= 5 {
        handled_fs |= FS_IOCTL_DEV;
    }
    let attr = RulesetAttr {
        handled_access_fs: handled_fs,
        handled_access_net: if abi >= 4 {
            NET_BIND_TCP | NET_CONNECT_TCP
        } else {
            0
        },
        scoped: if abi >= 6 {
            SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        } else {
            0
        },
    };
    // SAFETY: `attr` is a valid, initialized attribute of the given size.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_landlock_create_ruleset,
            &attr as *const RulesetAttr,
            size_of::<RulesetAttr>(),
            0u32,
        )
    };
    if fd < 0 {
        return Err(SandboxError(format!(
            "creating a Landlock rule set failed ({})",
            io::Error::last_os_error()
        )));
    }
    // SAFETY: the kernel returned a new file descriptor that nothing else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };

    let install = git_install()?;
    let read = FS_READ_FILE | FS_READ_DIR;
    let mut rules = vec![(PathBuf::from("/dev/null"), FS_READ_FILE | FS_WRITE_FILE)];
    match reads {
        Reads::Anything => rules.push((PathBuf::from("/"), read)),
        Reads::Beneath(paths) => {
            let system = SYSTEM_READS
                .iter()
                .map(Path::new)
                .chain([install.exec_path.as_path()]);
            // What does not exist cannot be read: no rule is needed. A
            // file's rule may hold only a file's rights.
            rules.extend(system.chain(paths.iter().copied()).filter_map(|path| {
                let meta = std::fs::metadata(path).ok()?;
                let access = if meta.is_dir() { read } else { FS_READ_FILE };
                Some((path.to_path_buf(), access))
            }));
        }
    }
    for program in [&install.exec_path_git, &install.loader]
        .into_iter()
        .flatten()
        .chain([&install.git])
    {
        rules.push((program.clone(), FS_EXECUTE | FS_READ_FILE));
    }
    rules.extend(
        writable
            .iter()
            .map(|dir| (dir.to_path_buf(), FS_WRITE_BENEATH)),
    );
    for (path, access) in rules {
        add_rule(&fd, &path, access & handled_fs).map_err(|e| {
            SandboxError(format!(
                "a Landlock rule for {} failed ({e})",
                path.display()
            ))
        })?;
    }
    Ok(Ruleset { fd })
}

fn add_rule(ruleset: &OwnedFd, path: &Path, access: u64) -> io::Result<()> {
    let c_path = CString::new(path.as_os_str().as_bytes())?;
    // SAFETY: a valid NUL-terminated path; the result is checked.
    let raw = unsafe { libc::open(c_path.as_ptr(), libc::O_PATH | libc::O_CLOEXEC) };
    if raw < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `open` returned a new descriptor that nothing else owns.
    let parent = unsafe { OwnedFd::from_raw_fd(raw) };
    let rule = PathBeneathAttr {
        allowed_access: access,
        parent_fd: parent.as_raw_fd(),
    };
    // SAFETY: both descriptors are open and `rule` is a valid attribute.
    let done = unsafe {
        libc::syscall(
            libc::SYS_landlock_add_rule,
            ruleset.as_raw_fd(),
            RULE_PATH_BENEATH,
            &rule as *const PathBeneathAttr,
            0u32,
        )
    };
    if done < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// The git binary `Command::new("git")` runs: the first `git` on `PATH`.
fn git_binary() -> Result<PathBuf, String> {
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .map(|dir| dir.join("git"))
        .find(|candidate| candidate.is_file())
        .and_then(|found| found.canonicalize().ok())
        .ok_or_else(|| "no git on PATH".to_owned())
}

/// Where git keeps the programs it runs for itself (`git --exec-path`).
/// Asking runs the trusted git in no repository.
fn exec_path() -> Result<PathBuf, String> {
    let out = Command::new("git")
        .arg("--exec-path")
        .env_remove("GIT_EXEC_PATH")
        .current_dir("/")
        .output()
        .map_err(|e| format!("cannot run git --exec-path: {e}"))?;
    let text = String::from_utf8_lossy(&out.stdout);
    let dir = PathBuf::from(text.trim());
    if !out.status.success() || !dir.is_absolute() {
        return Err(format!("git --exec-path said {:?}", text.trim()));
    }
    Ok(dir)
}

/// The program interpreter (`PT_INTERP`) a 64-bit little-endian ELF binary
/// names: the dynamic loader the kernel executes alongside it. `None` for a
/// static binary.
fn elf_interpreter(binary: &Path) -> Result<Option<PathBuf>, String> {
    // The headers and the interpreter's name sit at the start of the file.
    let mut bytes = Vec::new();
    std::fs::File::open(binary)
        .and_then(|file| file.take(64 << 10).read_to_end(&mut bytes))
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let unsupported = || format!("{}: not a 64-bit little-endian ELF file", binary.display());
    if bytes.get(..6) != Some(b"\x7fELF\x02\x01") {
        return Err(unsupported());
    }
    let u16_at = |at: usize| -> Option<u16> {
        Some(u16::from_le_bytes(bytes.get(at..at + 2)?.try_into().ok()?))
    };
    let u32_at = |at: usize| -> Option<u32> {
        Some(u32::from_le_bytes(bytes.get(at..at + 4)?.try_into().ok()?))
    };
    let u64_at = |at: usize| -> Option<usize> {
        usize::try_from(u64::from_le_bytes(bytes.get(at..at + 8)?.try_into().ok()?)).ok()
    };
    const PT_INTERP: u32 = 3;
    let (Some(table), Some(entry_size), Some(entries)) = (u64_at(0x20), u16_at(0x36), u16_at(0x38))
    else {
        return Err(unsupported());
    };
    for index in 0..usize::from(entries) {
        let header = table + index * usize::from(entry_size);
        if u32_at(header) != Some(PT_INTERP) {
            continue;
        }
        let (Some(offset), Some(size)) = (u64_at(header + 8), u64_at(header + 32)) else {
            return Err(unsupported());
        };
        let name = bytes.get(offset..offset + size).ok_or_else(unsupported)?;
        let name = name.strip_suffix(b"\0").unwrap_or(name);
        return Ok(Some(PathBuf::from(std::ffi::OsStr::from_bytes(name))));
    }
    Ok(None)
}

/// Makes `command` start inside the domain, reading what `reads` allows
/// and writing beneath each of `writable` (never executing there). Fails
/// (and `command` is left as it was) when this machine cannot confine it.
/// The returned rule set must be kept until the command has been spawned.
pub fn confine(
    command: &mut Command,
    reads: Reads<'_>,
    writable: &[&Path],
) -> Result<Ruleset, SandboxError> {
    let ruleset = build(reads, writable)?;
    apply(command, &ruleset);
    Ok(ruleset)
}

fn apply(command: &mut Command, ruleset: &Ruleset) {
    let fd = ruleset.fd.as_raw_fd();
    // SAFETY: the closure runs in the child between `fork` and `execve` and
    // makes only two system calls: no allocation, no lock. The rule set's
    // descriptor is open in the child until `execve` (it is close-on-exec).
    unsafe {
        command.pre_exec(move || {
            if libc::prctl(libc::PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 {
                return Err(io::Error::last_os_error());
            }
            if libc::syscall(libc::SYS_landlock_restrict_self, fd, 0u32) != 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(())
        });
    }
}

/// Kills every process of the group `leader` leads (a child started with
/// `process_group(0)`). The caller has not reaped `leader` yet, so the group
/// is still its own and no other.
pub fn kill_process_group(leader: u32) {
    let Ok(group) = libc::pid_t::try_from(leader) else {
        return;
    };
    // SAFETY: a plain signal; no memory is shared.
    unsafe { libc::kill(-group, libc::SIGKILL) };
}

#[cfg(test)]
mod tests {
    use super::*;

    fn confined_sh(script: &str) -> std::process::Output {
        let mut command = Command::new("git");
        command.args(["-c", &format!("alias.probe=!{script}"), "probe"]);
        let _rules = confine(&mut command, Reads::Anything, &[]).unwrap();
        command.output().unwrap()
    }

    /// git runs inside; what git would run for a tree does not.
    #[test]
    fn git_runs_and_no_other_program_does() {
        let mut version = Command::new("git");
        version.arg("--version");
        let _rules = confine(&mut version, Reads::Beneath(&[]), &[]).unwrap();
        let out = version.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(String::from_utf8_lossy(&out.stdout).starts_with("git version"));

        let dir = tempfile::tempdir().unwrap();
        let proof = dir.path().join("ran");
        let out = confined_sh(&format!("touch {}", proof.display()));
        assert!(
            !out.status.success(),
            "a shell alias must not start: {out:?}"
        );
        assert!(!proof.exists(), "the shell ran");
        // The same unconfined does run: the probe works.
        let ran = Command::new("git")
            .args([
                "-c",
                &format!("alias.probe=!touch {}", proof.display()),
                "probe",
            ])
            .status()
            .unwrap();
        assert!(ran.success() && proof.exists());
    }

    #[test]
    fn a_confined_git_writes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let target = dir.path().join("repo");
        let mut init = Command::new("git");
        init.args(["init", "--quiet"]).arg(&target);
        let _rules = confine(&mut init, Reads::Anything, &[]).unwrap();
        let out = init.output().unwrap();
        assert!(!out.status.success(), "{out:?}");
        assert!(!target.join(".git").exists());
    }

    #[test]
    fn a_writable_directory_takes_writes_and_runs_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let allowed = dir.path().join("allowed");
        std::fs::create_dir(&allowed).unwrap();
        let mut init = Command::new("git");
        init.args(["init", "--quiet"]).arg(allowed.join("repo"));
        let _rules = confine(&mut init, Reads::Anything, &[&allowed]).unwrap();
        let out = init.output().unwrap();
        assert!(out.status.success(), "{out:?}");
        assert!(allowed.join("repo/.git/HEAD").exists());
        // Beside it, still nothing.
        let mut elsewhere = Command::new("git");
        elsewhere
            .args(["init", "--quiet"])
            .arg(dir.path().join("other"));
        let _rules = confine(&mut elsewhere, Reads::Anything, &[&allowed]).unwrap();
        assert!(!elsewhere.output().unwrap().status.success());
        // A program written there cannot be run.
        let script = allowed.join("run-me");
        std::fs::write(&script, "#!/bin/sh\ntouch \"$0.ran\"\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .unwrap();
        let mut run = Command::new(&script);
        let _rules = confine(&mut run, Reads::Anything, &[&allowed]).unwrap();
        assert!(run.status().is_err(), "the script started");
        assert!(!allowed.join("run-me.ran").exists());
    }

    /// Given a repository to read, git reads it and nothing beside it: a
    /// file elsewhere, named by the repository's own config, is not read.
    #[test]
    fn a_confined_git_reads_only_what_it_is_given() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let secret = dir.path().join("secret.txt");
        std::fs::write(&secret, "the operator's secret\n").unwrap();
        let made = Command::new("git")
            .args(["init", "--quiet"])
            .arg(&repo)
            .status();
        assert!(made.unwrap().success());
        let cat = |reads: Reads<'_>, path: &Path| {
            let mut command = Command::new("git");
            command
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .arg("-C")
                .arg(&repo)
                .args(["hash-object", "--no-filters"])
                .arg(path);
            let _rules = confine(&mut command, reads, &[]).unwrap();
            command.output().unwrap()
        };
        let inside = repo.join(".git/HEAD");
        assert!(cat(Reads::Beneath(&[&repo]), &inside).status.success());
        let out = cat(Reads::Beneath(&[&repo]), &secret);
        assert!(!out.status.success(), "read beside the repository: {out:?}");
        assert!(cat(Reads::Anything, &secret).status.success());
        // Nor what lies beside git's libraries on the system.
        let elsewhere = Path::new("/usr/share/common-licenses/GPL-3");
        if elsewhere.exists() {
            assert!(!cat(Reads::Beneath(&[&repo]), elsewhere).status.success());
        }
    }

    #[test]
    fn the_loader_of_this_git_is_found() {
        let git = git_binary().unwrap();
        // A dynamically linked git names its loader; a static one none.
        if let Some(loader) = elf_interpreter(&git).unwrap() {
            assert!(loader.is_absolute() && loader.exists(), "{loader:?}");
        }
    }
}
