//! The `git` command line, always with an argv (never a shell string), and
//! `--` before anything that came from a user.

use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}")]
    Spawn(#[source] std::io::Error),
    #[error("git {args} failed: {stderr}")]
    Failed { args: String, stderr: String },
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
            Self::Spawn(_) => false,
            Self::Failed { stderr, .. } => PERMANENT.iter().any(|p| stderr.contains(p)),
        }
    }
}

/// Runs `git ARGS…` and returns its stdout.
pub fn run(args: &[&str]) -> Result<Vec<u8>, GitError> {
    let out = Command::new("git")
        .args(args)
        // Never prompt: jackin may run with no terminal.
        .env("GIT_TERMINAL_PROMPT", "0")
        .output()
        .map_err(GitError::Spawn)?;
    if out.status.success() {
        Ok(out.stdout)
    } else {
        Err(GitError::Failed {
            args: args.join(" "),
            stderr: String::from_utf8_lossy(&out.stderr).trim().to_owned(),
        })
    }
}

/// Settings that make git run a program, overridden for a repository whose
/// config someone else controls: the agent writes its checkout's
/// `.git/config` (and a worktree's `config.worktree`), and git would run
/// `core.fsmonitor` on `status`, `gpg.program` for `log.showSignature`, a
/// hook or an external diff on the host, as jackin.
const DEFUSED: [&str; 6] = [
    "core.fsmonitor=false",
    "core.hooksPath=/dev/null",
    "log.showSignature=false",
    "gpg.program=false",
    "diff.external=",
    "core.pager=cat",
];

/// Runs `git -C DIR ARGS…` in a repository whose config and attributes the
/// agent controls, without writing to it (`--no-optional-locks`) and with
/// every setting that would run a program defused:
/// the fixed ones above, and every filter driver any config defines (a
/// `.gitattributes` may name one for `status` to run on a file), set empty.
/// Reading the config to find those runs nothing.
pub fn run_untrusted(dir: &str, args: &[&str]) -> Result<Vec<u8>, GitError> {
    let listed = match run(&[
        "-C",
        dir,
        "config",
        "--name-only",
        "--get-regexp",
        r"^filter\.",
    ]) {
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
    run(&argv)
}

/// A bare mirror of a role repository in a temporary directory, removed on drop.
pub struct Mirror {
    dir: tempfile::TempDir,
}

impl Mirror {
    /// Mirrors `source` (a URL or a local path): every branch and tag.
    pub fn clone(source: &str) -> Result<Self, GitError> {
        let dir = tempfile::Builder::new()
            .prefix("jackin-role-")
            .tempdir()
            .map_err(GitError::Spawn)?;
        let target = dir.path().join("repo.git");
        let target = target.to_str().expect("temporary paths are UTF-8");
        run(&["clone", "--quiet", "--mirror", "--", source, target])?;
        Ok(Self { dir })
    }

    fn git_dir(&self) -> String {
        format!("--git-dir={}", self.dir.path().join("repo.git").display())
    }

    /// The commit `rev` names, or `None` when it names nothing.
    pub fn resolve(&self, rev: &str) -> Result<Option<String>, GitError> {
        let spec = format!("{rev}^{{commit}}");
        match run(&[
            &self.git_dir(),
            "rev-parse",
            "--verify",
            "--quiet",
            "--end-of-options",
            &spec,
        ]) {
            Ok(out) => Ok(Some(String::from_utf8_lossy(&out).trim().to_owned())),
            Err(GitError::Failed { .. }) => Ok(None),
            Err(e) => Err(e),
        }
    }

    /// The tree of `commit` as a tar archive: a build context.
    pub fn archive(&self, commit: &str) -> Result<Vec<u8>, GitError> {
        run(&[
            &self.git_dir(),
            "archive",
            "--format=tar",
            "--end-of-options",
            commit,
        ])
    }

    /// The contents of `path` at `commit`.
    pub fn show(&self, commit: &str, path: &str) -> Result<Vec<u8>, GitError> {
        run(&[
            &self.git_dir(),
            "show",
            "--end-of-options",
            &format!("{commit}:{path}"),
        ])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        std::thread::sleep(std::time::Duration::from_millis(1100));
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

    #[test]
    fn a_repository_that_is_not_there_is_a_permanent_failure() {
        let missing = Mirror::clone("/nonexistent/role/repository").err().unwrap();
        assert!(missing.is_permanent(), "{missing}");
        let refused = Mirror::clone("ext::sh -c true").err().unwrap();
        assert!(refused.is_permanent(), "{refused}");
        let network = GitError::Failed {
            args: "clone".into(),
            stderr: "fatal: unable to access: Could not resolve host: example.org".into(),
        };
        assert!(!network.is_permanent());
    }
}
