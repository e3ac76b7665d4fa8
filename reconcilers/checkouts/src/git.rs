//! The `git` command line, always with an argv (never a shell string), and
//! `--` before anything that came from a user.
//!
//! Two ways to run it:
//! - [`run`], for repositories the operator controls (a mount's host
//!   repository, a role's cached checkout), with paths and refs from jackin's records;
//! - [`run_untrusted`], for any tree the agent can write: it runs confined
//!   (see [`crate::sandbox`]), bounded in time and output, and with the
//!   settings that name programs turned off besides.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use crate::sandbox::{self, Reads, SandboxError};

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("git {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
    #[error(transparent)]
    Confine(#[from] SandboxError),
    #[error("git {args} did not finish within {}s and was stopped", .limit.as_secs())]
    TimedOut { args: String, limit: Duration },
    #[error("git {args} printed more than {} MiB and was stopped", MAX_UNTRUSTED_OUTPUT >> 20)]
    TooMuchOutput { args: String },
    #[error(
        "the role's cached checkout {} has changes jackin did not make ({changes}): keep them \
         elsewhere if they matter, then discard them (`git -C {0} reset --hard && git -C {0} \
         clean -fd`) or remove the directory, which the next build clones again",
        .path.display()
    )]
    CacheChanged { path: PathBuf, changes: String },
    #[error(
        "cannot use the role's cached checkout {}: {error}; check that jackin may write there, \
         or remove it and the next build clones it again",
        .path.display()
    )]
    Cache {
        path: PathBuf,
        #[source]
        error: std::io::Error,
    },
}

impl GitError {
    /// Whether git said the repository or path is not there (or not a
    /// repository, or a transport it will not use): asking again unchanged
    /// gets the same answer. A network failure is not permanent.
    pub fn is_permanent(&self) -> bool {
        const PERMANENT: [&str; 7] = [
            "does not exist",
            "not a git repository",
            "does not appear to be a git repository",
            "No such file or directory",
            "Repository not found",
            "not allowed",
            "unable to find remote helper",
        ];
        match self {
            Self::Spawn(_) | Self::TimedOut { .. } => false,
            Self::Confine(_) | Self::TooMuchOutput { .. } | Self::CacheChanged { .. } => true,
            Self::Cache { .. } => false,
            Self::Failed { stderr, .. } => PERMANENT.iter().any(|p| stderr.contains(p)),
        }
    }
}

/// Runs `git ARGS…` and returns its stdout: for repositories the operator
/// controls, with paths and refs from jackin's records. Not confined, but
/// bounded by [`TRUSTED_GIT_LIMIT`]: the host repository holds worktree
/// entries agents wrote (and, from before their git directory was a view
/// of their own, objects and scratch refs), and a link loop there would
/// otherwise hold jackin (and its `--timeout`) forever.
pub fn run(args: &[&str]) -> Result<Vec<u8>, GitError> {
    run_bounded(args, TRUSTED_GIT_LIMIT, Confinement::None, None)
}

/// How long one git in an operator's repository may take: far above a
/// local clone or checkout of a large repository.
pub const TRUSTED_GIT_LIMIT: Duration = Duration::from_secs(600);

/// How long one git over an agent's tree may take: a FIFO named as an
/// include, or a work tree pointed at `/`, would otherwise hold a pass
/// forever. Far above what `status` of a large checkout takes.
pub const UNTRUSTED_GIT_LIMIT: Duration = Duration::from_secs(60);

/// How much one git over an agent's tree may print before it is stopped.
const MAX_UNTRUSTED_OUTPUT: usize = 64 << 20;

/// How much of its standard error is kept for the message.
const MAX_STDERR: usize = 4 << 10;

/// Settings that name a program, turned off for every repository git reads
/// (`-c` settings reach the git processes of submodules too). The sandbox
/// already stops any such program from starting; these keep git from
/// trying, so that its answer does not depend on a failed start.
const DEFUSED: [&str; 15] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "log.showSignature=false",
    "gpg.program=false",
    "diff.external=",
    "core.pager=cat",
    "core.sshCommand=false",
    "submodule.recurse=false",
    // `protocol.<name>.allow` in the repository's config wins over
    // `protocol.allow`: each transport is refused by name as well.
    "protocol.allow=never",
    "protocol.file.allow=never",
    "protocol.git.allow=never",
    "protocol.ssh.allow=never",
    "protocol.http.allow=never",
    "protocol.https.allow=never",
    "protocol.ext.allow=never",
];

/// Runs `git -C DIR ARGS…` over a tree the agent can write, and returns its
/// stdout:
/// - confined, so that no program the tree names can run (at any depth:
///   submodules, includes, worktree config, attributes), nothing is written
///   and no connection is made; a machine that cannot confine it gets an
///   error, never an unconfined git;
/// - reading only `DIR`, the paths its arguments name (`--git-dir=`,
///   `--work-tree=`) and git's installation: an alternates line, a linked
///   ref or a `commondir` the tree holds cannot lead it into another
///   repository of the host (see [`run_untrusted_reading`] for more);
/// - with no system or global config or attributes of the operator's;
/// - without writing the index (`--no-optional-locks`);
/// - with the settings above and every filter driver the configs it sees at
///   the top define set empty, so a filter that cannot start does not fail
///   the command;
/// - stopped after [`UNTRUSTED_GIT_LIMIT`], or once it has printed 64 MiB.
pub fn run_untrusted(dir: &str, args: &[&str]) -> Result<Vec<u8>, GitError> {
    run_untrusted_fed(dir, args, &[], &[], None)
}

/// As [`run_untrusted`], but git may also read beneath each of `reads`
/// (the host repository a checkout borrows objects from, say).
pub fn run_untrusted_reading(
    dir: &str,
    args: &[&str],
    reads: &[&Path],
) -> Result<Vec<u8>, GitError> {
    run_untrusted_fed(dir, args, reads, &[], None)
}

/// As [`run_untrusted_reading`], but git may also write beneath each of
/// `writable` (and still execute nothing there): to check out a tree the
/// agent wrote.
pub fn run_untrusted_writing(
    dir: &str,
    args: &[&str],
    reads: &[&Path],
    writable: &[&Path],
) -> Result<Vec<u8>, GitError> {
    run_untrusted_fed(dir, args, reads, writable, None)
}

/// As [`run_untrusted_writing`], with the file `input` (one of jackin's
/// own) as git's standard input: for the commands that read what to do
/// from it (`pack-objects --revs`, `unpack-objects`).
pub fn run_untrusted_fed(
    dir: &str,
    args: &[&str],
    reads: &[&Path],
    writable: &[&Path],
    input: Option<&Path>,
) -> Result<Vec<u8>, GitError> {
    let named = named_paths(args);
    let mut readable: Vec<&Path> = vec![Path::new(dir)];
    readable.extend(named.iter().map(Path::new));
    readable.extend(reads);
    readable.extend(writable);
    run_defused(dir, args, Reads::Beneath(&readable), writable, input)
}

/// As [`run_untrusted`], but reading any file: for a repository the
/// operator controls that jackin reads confined only so that nothing runs
/// (a policy directory, which may be a subdirectory of a repository
/// anywhere).
pub fn run_untrusted_anywhere(dir: &str, args: &[&str]) -> Result<Vec<u8>, GitError> {
    run_defused(dir, args, Reads::Anything, &[], None)
}

/// The paths a git argument list names itself (`--git-dir=`, `--work-tree=`):
/// jackin's own choices, readable as `-C`'s directory is.
fn named_paths<'a>(args: &[&'a str]) -> Vec<&'a str> {
    args.iter()
        .filter_map(|arg| {
            arg.strip_prefix("--git-dir=")
                .or_else(|| arg.strip_prefix("--work-tree="))
        })
        .collect()
}

/// Runs git confined, with every setting that names a program turned off,
/// and every filter driver the repository's configs define set empty.
fn run_defused(
    dir: &str,
    args: &[&str],
    reads: Reads<'_>,
    writable: &[&Path],
    input: Option<&Path>,
) -> Result<Vec<u8>, GitError> {
    // The repository git is pointed at, if the arguments name it: the
    // config listed is that one's, never one a `.git` in `dir` would name.
    let mut listing = vec!["-C", dir];
    listing.extend(
        args.iter()
            .copied()
            .filter(|arg| arg.starts_with("--git-dir=")),
    );
    listing.extend(["config", "--name-only", "--get-regexp", r"^filter\."]);
    let listed = match run_bounded(
        &listing,
        UNTRUSTED_GIT_LIMIT,
        Confinement::Sandbox {
            reads,
            writable: &[],
        },
        None,
    ) {
        Ok(out) => String::from_utf8_lossy(&out).into_owned(),
        // No filter is configured (git exits 1 when nothing matches).
        Err(GitError::Failed { stderr, .. }) if stderr.is_empty() => String::new(),
        Err(e) => return Err(e),
    };
    let mut drivers: Vec<&str> = listed
        .lines()
        .filter_map(|key| key.strip_prefix("filter.")?.rsplit_once('.'))
        .map(|(driver, _)| driver)
        .collect();
    drivers.sort_unstable();
    drivers.dedup();
    let mut overrides: Vec<String> = DEFUSED.iter().map(|s| (*s).to_owned()).collect();
    for driver in drivers {
        for key in ["clean", "smudge", "process"] {
            overrides.push(format!("filter.{driver}.{key}="));
        }
    }
    let mut argv: Vec<&str> = Vec::with_capacity(overrides.len() * 2 + args.len() + 3);
    for setting in &overrides {
        argv.extend(["-c", setting]);
    }
    // Looking is not touching: `status` would otherwise refresh the index.
    argv.extend(["--no-optional-locks", "-C", dir]);
    argv.extend_from_slice(args);
    run_bounded(
        &argv,
        UNTRUSTED_GIT_LIMIT,
        Confinement::Sandbox { reads, writable },
        input,
    )
}

/// What a bounded git runs inside.
enum Confinement<'a> {
    /// Nothing: a repository the operator controls. Its output is not capped
    /// (a role's build context may be large).
    None,
    /// The sandbox: execute only git, read what `reads` allows, write only
    /// beneath `writable`.
    Sandbox {
        reads: Reads<'a>,
        writable: &'a [&'a Path],
    },
}

/// Runs git bounded by `limit` on the wall clock and, confined, by
/// [`MAX_UNTRUSTED_OUTPUT`] on what it prints. The whole process group goes
/// when either is passed. Its standard input is `input`, or nothing.
fn run_bounded(
    args: &[&str],
    limit: Duration,
    confinement: Confinement<'_>,
    input: Option<&Path>,
) -> Result<Vec<u8>, GitError> {
    let describe = || args.join(" ");
    let stdin = match input {
        Some(path) => Stdio::from(
            jackin_files::fsutil::open_regular_file(path, jackin_files::fsutil::Links::Refuse)
                .map_err(GitError::Spawn)?,
        ),
        None => Stdio::null(),
    };
    let mut command = Command::new("git");
    command
        .args(args)
        .env("GIT_TERMINAL_PROMPT", "0")
        .stdin(stdin)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0);
    let max_output = match confinement {
        Confinement::None => u64::MAX,
        Confinement::Sandbox { .. } => MAX_UNTRUSTED_OUTPUT as u64,
    };
    let rules = match confinement {
        Confinement::None => None,
        Confinement::Sandbox { reads, writable } => {
            // A partial clone's missing object is fetched on demand from
            // the remote its config names, with the operator's credentials:
            // git over an agent's tree never does that (git 2.45 and later;
            // older ones cannot start the remote helper in the sandbox).
            command.env("GIT_NO_LAZY_FETCH", "1");
            // None of the operator's own config or attributes: git needs no
            // file of theirs, and reads none (their global excludes and
            // attributes are under `XDG_CONFIG_HOME`, pointed nowhere).
            command
                .env("GIT_CONFIG_NOSYSTEM", "1")
                .env("GIT_CONFIG_GLOBAL", "/dev/null")
                .env("GIT_ATTR_NOSYSTEM", "1")
                .env("XDG_CONFIG_HOME", "/dev/null/jackin");
            Some(sandbox::confine(&mut command, reads, writable)?)
        }
    };
    let mut child = command.spawn().map_err(GitError::Spawn)?;
    drop(rules);
    let leader = child.id();
    // The group is the child's own until the child is reaped, below.
    let kill_group = move || sandbox::kill_process_group(leader);
    let (finished, watch) = mpsc::channel::<()>();
    let watchdog = std::thread::spawn(move || {
        let expired = watch.recv_timeout(limit) == Err(mpsc::RecvTimeoutError::Timeout);
        if expired {
            kill_group();
        }
        expired
    });
    let mut stderr = child.stderr.take().expect("piped");
    let stderr_reader = std::thread::spawn(move || {
        let mut kept = Vec::new();
        let _ = (&mut stderr).take(MAX_STDERR as u64).read_to_end(&mut kept);
        // Drain the rest, so git never blocks on a full pipe.
        let _ = std::io::copy(&mut stderr, &mut std::io::sink());
        kept
    });
    let mut stdout = Vec::new();
    let stdout_pipe = child.stdout.take().expect("piped");
    let read = stdout_pipe
        .take(max_output.saturating_add(1))
        .read_to_end(&mut stdout);
    let too_much = stdout.len() as u64 > max_output;
    if too_much {
        kill_group();
    }
    let stderr = stderr_reader.join().unwrap_or_default();
    drop(finished);
    let timed_out = watchdog.join().unwrap_or(false);
    let status = child.wait().map_err(GitError::Spawn)?;
    read.map_err(GitError::Spawn)?;
    if timed_out {
        return Err(GitError::TimedOut {
            args: describe(),
            limit,
        });
    }
    if too_much {
        return Err(GitError::TooMuchOutput { args: describe() });
    }
    if status.success() {
        Ok(stdout)
    } else {
        Err(GitError::Failed {
            args: describe(),
            stderr: String::from_utf8_lossy(&stderr).trim().to_owned(),
        })
    }
}

/// A role source's checkout in the `roles/` cache under `JACKIN_HOME`:
/// cloned the first time a build asks for the source, fetched at later
/// ones, and read at the commit the build pins. Its branches and tags
/// mirror the source's, and its work tree is left at the commit last
/// built, so the operator can look at what the image was built from.
///
/// Held under the lock beside it (`DIR.lock`) for as long as the value
/// lives: two builds of one source take turns.
pub struct RoleCheckout {
    dir: PathBuf,
    _lock: jackin_files::fsutil::FileLock,
    /// Whether this opening cloned it (else it was there already).
    pub cloned: bool,
}

/// No hook of the operator's (a global `core.hooksPath`) runs at each
/// build's checkout of a role: the checkout is jackin's.
const NO_HOOKS: &str = "core.hooksPath=/dev/null";

/// A role's tree is often a third party's: its `.gitmodules` is never
/// followed, whatever the operator's global `submodule.recurse` says.
const NO_SUBMODULES: &str = "submodule.recurse=false";

/// The ref the source's `HEAD` is fetched into: what a role without a
/// `ref` builds.
const SOURCE_HEAD: &str = "refs/jackin/source-head";

impl RoleCheckout {
    /// The checkout of `source` at `dir`, cloned when it is not there yet.
    /// A checkout someone changed (an edit, a new file) is refused: a
    /// build would silently not include the change, and a fetch or checkout
    /// could lose it.
    pub fn open(dir: &Path, source: &str) -> Result<Self, GitError> {
        let cache = |error| GitError::Cache {
            path: dir.to_owned(),
            error,
        };
        let lock =
            jackin_files::fsutil::FileLock::acquire(&dir.with_extension("lock")).map_err(cache)?;
        let cloned = !dir.exists();
        if cloned {
            // Cloned aside and moved in whole: an interrupted clone never
            // looks like a checkout.
            let partial = dir.with_extension("partial");
            jackin_files::fsutil::remove_if_exists(&partial).map_err(cache)?;
            let target = partial.to_str().expect("JACKIN_HOME paths are UTF-8");
            // No hard links into the source's objects: the cache stands on
            // its own, whatever happens to the operator's repository.
            run(&[
                "-c",
                NO_HOOKS,
                "-c",
                NO_SUBMODULES,
                "clone",
                "--quiet",
                "--no-hardlinks",
                "--",
                source,
                target,
            ])?;
            // Detached, so that every branch can be fetched over.
            run(&[
                "-c",
                NO_HOOKS,
                "-c",
                NO_SUBMODULES,
                "-C",
                target,
                "checkout",
                "--quiet",
                "--detach",
            ])?;
            std::fs::rename(&partial, dir).map_err(cache)?;
        }
        let checkout = Self {
            dir: dir.to_owned(),
            _lock: lock,
            cloned,
        };
        checkout.refuse_if_changed()?;
        Ok(checkout)
    }

    fn dir_arg(&self) -> &str {
        self.dir.to_str().expect("JACKIN_HOME paths are UTF-8")
    }

    fn refuse_if_changed(&self) -> Result<(), GitError> {
        let status = run(&[
            "-C",
            self.dir_arg(),
            "status",
            "--porcelain",
            "--untracked-files=all",
        ])?;
        if status.is_empty() {
            return Ok(());
        }
        Err(GitError::CacheChanged {
            path: self.dir.clone(),
            changes: String::from_utf8_lossy(&status)
                .lines()
                .take(5)
                .collect::<Vec<_>>()
                .join("; "),
        })
    }

    /// Brings the source's branches and tags (moved ones too) and, with
    /// `head`, its `HEAD`. An error is the source's: it could not be read.
    pub fn fetch(&self, head: bool) -> Result<(), GitError> {
        let mut args = vec![
            "-c",
            NO_SUBMODULES,
            "-C",
            self.dir_arg(),
            "fetch",
            "--quiet",
            "--recurse-submodules=no",
            "--prune",
            "--force",
            "--",
            "origin",
            "+refs/heads/*:refs/heads/*",
            "+refs/tags/*:refs/tags/*",
        ];
        let head_spec = format!("+HEAD:{SOURCE_HEAD}");
        if head {
            args.push(&head_spec);
        }
        run(&args).map(drop)
    }

    /// The commit `rev` names, or `None` when it names nothing; `None`
    /// for `rev` is the source's `HEAD`.
    pub fn resolve(&self, rev: Option<&str>) -> Result<Option<String>, GitError> {
        let spec = format!("{}^{{commit}}", rev.unwrap_or(SOURCE_HEAD));
        let dir = self.dir_arg();
        let args = [
            "-C",
            dir,
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ];
        match run(&args) {
            Ok(out) => Ok(Some(String::from_utf8_lossy(&out).trim().to_owned())),
            Err(GitError::Failed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// Leaves the work tree at `commit` (a full id `resolve` gave).
    pub fn check_out(&self, commit: &str) -> Result<(), GitError> {
        let dir = self.dir_arg();
        run(&[
            "-c",
            NO_HOOKS,
            "-c",
            NO_SUBMODULES,
            "-C",
            dir,
            "checkout",
            "--quiet",
            "--detach",
            commit,
            "--",
        ])
        .map(drop)
    }

    /// The tree of `commit` as a tar archive: a build context.
    pub fn archive(&self, commit: &str) -> Result<Vec<u8>, GitError> {
        let dir = self.dir_arg();
        run(&[
            "-C",
            dir,
            "archive",
            "--format=tar",
            "--end-of-options",
            commit,
        ])
    }

    /// The contents of `path` at `commit`.
    pub fn show(&self, commit: &str, path: &str) -> Result<Vec<u8>, GitError> {
        let spec = format!("{commit}:{path}");
        run(&["-C", self.dir_arg(), "show", "--end-of-options", &spec])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The tests' own git, unconfined, in `repo`: with an identity, and the
    /// file transport allowed for submodules.
    fn test_git(repo: &str, args: &[&str]) {
        let mut argv = vec![
            "-C",
            repo,
            "-c",
            "user.email=t@jackin.dev",
            "-c",
            "user.name=t",
            "-c",
            "protocol.file.allow=always",
        ];
        argv.extend_from_slice(args);
        run(&argv).unwrap();
    }

    /// A checkout whose config would run programs on the host: `status`
    /// through `run_untrusted` runs none of them, and still answers.
    #[test]
    fn an_agents_git_config_runs_nothing_on_the_host() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("checkout");
        let repo_str = repo.to_str().unwrap();
        let git = |args: &[&str]| {
            let mut argv = vec!["-C", repo_str];
            argv.extend_from_slice(args);
            run(&argv).unwrap();
        };
        run(&["init", "--quiet", repo_str]).unwrap();
        git(&["config", "user.email", "t@jackin.dev"]);
        git(&["config", "user.name", "t"]);
        std::fs::write(repo.join(".gitattributes"), "* filter=evil\n").unwrap();
        std::fs::write(repo.join("a"), "a\n").unwrap();
        git(&["add", "."]);
        git(&[
            "-c",
            "filter.evil.clean=cat",
            "commit",
            "--quiet",
            "-m",
            "a",
        ]);
        let proof = dir.path().join("ran");
        let touch = format!("touch {}; cat", proof.display());
        git(&["config", "core.fsmonitor", &touch]);
        git(&["config", "filter.evil.clean", &touch]);
        // Same size, new time: status must look at the contents again.
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(repo.join("a"), "a\n").unwrap();

        let status = run_untrusted(repo_str, &["status", "--porcelain"]).unwrap();
        assert!(!proof.exists(), "the agent's config ran a program");
        assert!(
            String::from_utf8_lossy(&status).is_empty(),
            "the file is unchanged"
        );
        // The same, unguarded, does run it: the test would see a hole.
        let _ = run(&["-C", repo_str, "status", "--porcelain"]);
        assert!(proof.exists(), "the probe itself works");
    }

    /// A submodule whose own config (which no override names, because the
    /// agent chose the driver's name) defines a filter: `status` through
    /// `run_untrusted` recurses into it, runs nothing, and still sees the
    /// change inside it.
    #[test]
    fn a_submodules_own_filter_runs_nothing_and_its_change_is_seen() {
        let dir = tempfile::tempdir().unwrap();
        let path = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();
        let git = |repo: &str, args: &[&str]| {
            test_git(repo, args);
        };
        let (top, upstream) = (path("top"), path("sub-upstream"));
        for repo in [&top, &upstream] {
            run(&["init", "--quiet", repo]).unwrap();
            for file in ["f", "g"] {
                std::fs::write(Path::new(repo).join(file), "f\n").unwrap();
            }
            git(repo, &["add", "."]);
            git(repo, &["commit", "--quiet", "-m", "f"]);
        }
        git(&top, &["submodule", "--quiet", "add", &upstream, "sub"]);
        git(&top, &["commit", "--quiet", "-m", "sub"]);
        let sub = format!("{top}/sub");
        std::fs::write(Path::new(&sub).join(".gitattributes"), "* filter=subevil\n").unwrap();
        let proof = dir.path().join("ran");
        let touch = format!("sh -c \"touch {}; cat\"", proof.display());
        git(&sub, &["config", "filter.subevil.clean", &touch]);
        std::fs::write(Path::new(&sub).join("g"), "changed by the agent\n").unwrap();
        // Same size, new time: status must run the filter over `f` to compare.
        std::thread::sleep(Duration::from_millis(1100));
        std::fs::write(Path::new(&sub).join("f"), "f\n").unwrap();

        let status = run_untrusted(
            &top,
            &["status", "--porcelain=v1", "--ignore-submodules=none"],
        )
        .unwrap();
        assert!(!proof.exists(), "the submodule's filter ran on the host");
        assert_eq!(String::from_utf8_lossy(&status), " M sub\n");
        // Unconfined, the same status runs it: the probe works.
        let _ = run(&["-C", &top, "status", "--porcelain"]);
        assert!(proof.exists(), "the probe itself works");
    }

    /// Drivers that only `diff` would run: even asked to use them, and with
    /// nothing defused, a confined git starts none.
    #[test]
    fn diff_time_drivers_do_not_start_either() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let repo = repo.to_str().unwrap();
        let git = |args: &[&str]| {
            test_git(repo, args);
        };
        run(&["init", "--quiet", repo]).unwrap();
        std::fs::write(Path::new(repo).join("a.txt"), "one\n").unwrap();
        git(&["add", "."]);
        git(&["commit", "--quiet", "-m", "one"]);
        std::fs::write(Path::new(repo).join("a.txt"), "two\n").unwrap();
        std::fs::write(Path::new(repo).join(".gitattributes"), "*.txt diff=evil\n").unwrap();
        let canary = |name: &str| dir.path().join(name);
        let touch = |name: &str| format!("sh -c \"touch {}\"", canary(name).display());
        let (textconv, external) = (touch("textconv"), touch("external"));
        git(&["config", "diff.evil.textconv", &textconv]);
        let external = format!("diff.external={external}");
        let asks: [&[&str]; 2] = [
            &["-C", repo, "diff", "HEAD"],
            &["-C", repo, "-c", &external, "diff", "--ext-diff", "HEAD"],
        ];
        for ask in asks {
            let _ = run_bounded(
                ask,
                UNTRUSTED_GIT_LIMIT,
                Confinement::Sandbox {
                    reads: Reads::Anything,
                    writable: &[],
                },
                None,
            );
        }
        for name in ["textconv", "external"] {
            assert!(!canary(name).exists(), "{name} ran");
        }
        // Unconfined, each is a real vector.
        for ask in asks {
            let _ = run(ask);
        }
        for name in ["textconv", "external"] {
            assert!(canary(name).exists(), "{name}: the probe itself works");
        }
    }

    /// A partial clone whose tree object is missing, its remote behind a
    /// proxy on a path socket the agent listens on: reading the checkout
    /// must fetch nothing (git would send the operator's credentials), even
    /// with every transport allowed by the repository's own config.
    #[test]
    fn reading_a_checkout_fetches_nothing_through_any_proxy() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let repo = repo.to_str().unwrap();
        run(&["init", "--quiet", repo]).unwrap();
        std::fs::write(Path::new(repo).join("f"), "f\n").unwrap();
        test_git(repo, &["add", "."]);
        test_git(repo, &["commit", "--quiet", "-m", "f"]);
        let tree =
            String::from_utf8(run(&["-C", repo, "rev-parse", "HEAD^{tree}"]).unwrap()).unwrap();
        let tree = tree.trim();
        std::fs::remove_file(Path::new(repo).join(format!(
            ".git/objects/{}/{}",
            &tree[..2],
            &tree[2..]
        )))
        .unwrap();
        let socket = dir.path().join("proxy.sock");
        let listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        listener.set_nonblocking(true).unwrap();
        let proxy = format!("socks5h://localhost{}", socket.display());
        for (key, value) in [
            ("core.repositoryformatversion", "1"),
            ("extensions.partialClone", "origin"),
            ("remote.origin.url", "https://example.invalid/private.git"),
            ("remote.origin.promisor", "true"),
            ("remote.origin.partialclonefilter", "blob:none"),
            ("protocol.https.allow", "always"),
            ("http.proxy", proxy.as_str()),
        ] {
            test_git(repo, &["config", key, value]);
        }
        let connected = || match listener.accept() {
            Ok(_) => true,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => false,
            Err(e) => panic!("{e}"),
        };
        let _ = run_untrusted(repo, &["status", "--porcelain"]);
        let _ = run_untrusted(repo, &["cat-file", "-p", tree]);
        assert!(
            !connected(),
            "the confined git fetched through the agent's proxy"
        );
        // Unconfined, the same read does fetch: the probe works. Nothing
        // answers on the socket, so the probe is stopped once it connects.
        let mut probe = Command::new("git")
            .args(["-C", repo, "cat-file", "-p", tree])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        let mut seen = false;
        while !seen && std::time::Instant::now() < deadline {
            seen = connected();
            std::thread::sleep(Duration::from_millis(50));
        }
        let _ = probe.kill();
        let _ = probe.wait();
        assert!(seen, "the probe itself works");
    }

    #[test]
    fn a_fifo_named_as_an_include_is_stopped_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let repo = dir.path().join("repo");
        let repo = repo.to_str().unwrap();
        run(&["init", "--quiet", repo]).unwrap();
        let fifo = dir.path().join("fifo");
        assert!(
            Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        run(&["-C", repo, "config", "include.path", fifo.to_str().unwrap()]).unwrap();
        let err = run_bounded(
            &["-C", repo, "status", "--porcelain"],
            Duration::from_secs(2),
            Confinement::Sandbox {
                reads: Reads::Anything,
                writable: &[],
            },
            None,
        )
        .unwrap_err();
        assert!(matches!(err, GitError::TimedOut { .. }), "{err}");
    }

    #[test]
    fn a_repository_that_is_not_there_is_a_permanent_failure() {
        let roles = tempfile::tempdir().unwrap();
        let open = |source| RoleCheckout::open(&roles.path().join("role"), source);
        let missing = open("/nonexistent/role/repository").err().unwrap();
        assert!(missing.is_permanent(), "{missing}");
        let refused = open("ext::sh -c true").err().unwrap();
        assert!(refused.is_permanent(), "{refused}");
        let network = GitError::Failed {
            args: "clone".into(),
            stderr: "fatal: unable to access: Could not resolve host: example.org".into(),
        };
        assert!(!network.is_permanent());
    }

    /// A role without a ref follows the source's HEAD, branches and moved
    /// tags are followed, and a checkout someone changed is refused with
    /// its path, whatever the change.
    #[test]
    fn a_role_checkout_follows_the_source_and_refuses_changes() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("source");
        let source_str = source.to_str().unwrap();
        run(&["init", "--quiet", "--initial-branch=main", source_str]).unwrap();
        let commit = |text: &str| {
            std::fs::write(source.join("Dockerfile"), text).unwrap();
            test_git(source_str, &["add", "."]);
            test_git(source_str, &["commit", "--quiet", "-m", text]);
            String::from_utf8(run(&["-C", source_str, "rev-parse", "HEAD"]).unwrap())
                .unwrap()
                .trim()
                .to_owned()
        };
        let first = commit("FROM a\n");
        test_git(source_str, &["tag", "v1"]);
        let cached = dir.path().join("roles/key");
        let checkout = RoleCheckout::open(&cached, source_str).unwrap();
        assert!(checkout.cloned);
        assert_eq!(checkout.resolve(Some("v1")).unwrap(), Some(first.clone()));
        drop(checkout);

        let second = commit("FROM b\n");
        test_git(source_str, &["tag", "--force", "v1"]);
        let checkout = RoleCheckout::open(&cached, source_str).unwrap();
        assert!(!checkout.cloned);
        checkout.fetch(true).unwrap();
        assert_eq!(checkout.resolve(None).unwrap(), Some(second.clone()));
        assert_eq!(
            checkout.resolve(Some("main")).unwrap(),
            Some(second.clone())
        );
        assert_eq!(checkout.resolve(Some("v1")).unwrap(), Some(second.clone()));
        assert_eq!(checkout.resolve(Some("nothing")).unwrap(), None);
        checkout.check_out(&first).unwrap();
        assert_eq!(
            std::fs::read_to_string(cached.join("Dockerfile")).unwrap(),
            "FROM a\n"
        );
        drop(checkout);

        for change in ["Dockerfile", "new-file"] {
            std::fs::write(cached.join(change), "edited").unwrap();
            let refused = RoleCheckout::open(&cached, source_str).err().unwrap();
            assert!(
                matches!(refused, GitError::CacheChanged { .. }),
                "{refused}"
            );
            assert!(
                refused.to_string().contains(cached.to_str().unwrap()),
                "{refused}"
            );
            test_git(
                cached.to_str().unwrap(),
                &["checkout", "--quiet", "--", "."],
            );
            test_git(cached.to_str().unwrap(), &["clean", "--quiet", "-fd"]);
        }
        assert!(RoleCheckout::open(&cached, source_str).is_ok());
    }
}
