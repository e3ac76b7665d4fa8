//! The `git` command line, always with an argv (never a shell string), and
//! `--` before anything that came from a user.

use std::process::Command;

#[derive(Debug, thiserror::Error)]
pub enum GitError {
    #[error("cannot run git: {0}\nhint: install git")]
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
