//! The one assessment of an isolated checkout, used on every edge (purge,
//! exit, resume): what would be lost if it were discarded.
//!
//! Unfinished work is any uncommitted file, and any local branch that is not
//! safe. A branch is safe when its tip is the base commit, when its upstream
//! exists and it has no commits ahead of it, or when its upstream is gone
//! (merged and pruned). A detached `HEAD` with commits no branch holds is
//! unsafe. Any git error is unsafe: the assessment fails closed. In a
//! worktree the host's own branches, as they were when the worktree was made,
//! are the operator's and are left out.

use std::path::Path;

use jackin_api::instance::MountStatus;
use sha2::{Digest, Sha256};

use crate::git;
use crate::isolation::IsolationRecord;

/// At most this many files are listed in the status; the rest are counted.
pub const MAX_LISTED_FILES: usize = 20;

/// The evidence for one checkout.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Assessment {
    /// `git status --porcelain` entries, e.g. ` M src/lib.rs`, `?? notes.md`.
    pub dirty_files: Vec<String>,
    /// Unsafe branches with why, e.g. `feature/x (2 commits ahead of origin/feature/x)`.
    pub unsafe_branches: Vec<String>,
    /// A git failure, which makes the checkout unsafe.
    pub error: Option<String>,
}

impl Assessment {
    pub fn is_safe(&self) -> bool {
        self.dirty_files.is_empty() && self.unsafe_branches.is_empty() && self.error.is_none()
    }
}

fn git_in(dir: &str, args: &[&str]) -> Result<String, String> {
    let mut argv = vec!["-C", dir];
    argv.extend_from_slice(args);
    git::run(&argv)
        .map(|out| String::from_utf8_lossy(&out).into_owned())
        .map_err(|e| e.to_string())
}

/// Assesses one recorded checkout.
pub fn assess(record: &IsolationRecord) -> Assessment {
    if !Path::new(&record.path).exists() {
        return Assessment {
            error: Some(format!("the checkout {} is missing", record.path)),
            ..Default::default()
        };
    }
    match assess_inner(record) {
        Ok(assessment) => assessment,
        Err(error) => Assessment {
            error: Some(error),
            ..Default::default()
        },
    }
}

fn assess_inner(record: &IsolationRecord) -> Result<Assessment, String> {
    let dir = record.path.as_str();
    let mut assessment = Assessment::default();
    let status = git_in(
        dir,
        &["status", "--porcelain=v1", "-z", "--untracked-files=all"],
    )?;
    let mut entries = status.split('\0').filter(|e| !e.is_empty());
    while let Some(entry) = entries.next() {
        // A rename or copy is followed by its original path.
        if entry.starts_with('R') || entry.starts_with('C') {
            entries.next();
        }
        assessment.dirty_files.push(entry.to_owned());
    }

    let refs = git_in(
        dir,
        &[
            "for-each-ref",
            "--format=%(refname:short)%00%(objectname)%00%(upstream:short)%00%(upstream:track)",
            "refs/heads/",
        ],
    )?;
    for line in refs.lines() {
        let fields: Vec<&str> = line.split('\0').collect();
        let [name, tip, upstream, track] = fields.as_slice() else {
            return Err(format!("unexpected for-each-ref output: {line:?}"));
        };
        let untouched_host_branch =
            record.host_branches.get(*name).map(String::as_str) == Some(*tip);
        if untouched_host_branch || *tip == record.base_commit || track.contains("gone") {
            continue;
        }
        if upstream.is_empty() {
            let ahead = count(dir, &format!("{}..{name}", record.base_commit))?;
            assessment.unsafe_branches.push(format!(
                "{name} ({ahead} commits since the base, no upstream)"
            ));
            continue;
        }
        let ahead = count(dir, &format!("{upstream}..{name}"))?;
        if ahead > 0 {
            assessment
                .unsafe_branches
                .push(format!("{name} ({ahead} commits ahead of {upstream})"));
        }
    }

    // Commits on a detached HEAD that no branch or remote holds.
    if git_in(dir, &["symbolic-ref", "-q", "HEAD"]).is_err() {
        let loose = git_in(
            dir,
            &[
                "rev-list",
                "--count",
                "HEAD",
                "--not",
                "--branches",
                "--remotes",
            ],
        )?;
        let loose: u64 = loose.trim().parse().map_err(|e| format!("rev-list: {e}"))?;
        let head = git_in(dir, &["rev-parse", "HEAD"])?;
        if loose > 0 && head.trim() != record.base_commit {
            assessment
                .unsafe_branches
                .push(format!("HEAD (detached, {loose} commits on no branch)"));
        }
    }
    Ok(assessment)
}

fn count(dir: &str, range: &str) -> Result<u64, String> {
    git_in(dir, &["rev-list", "--count", range, "--"])?
        .trim()
        .parse()
        .map_err(|e| format!("rev-list {range}: {e}"))
}

/// The status entry for a checkout: the evidence (files capped, with a count
/// of the rest) and a digest of the full evidence.
pub fn mount_status(record: &IsolationRecord, assessment: &Assessment) -> MountStatus {
    let mut hasher = Sha256::new();
    for part in [&record.dst, &record.path] {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    for part in assessment
        .dirty_files
        .iter()
        .chain(&assessment.unsafe_branches)
        .chain(&assessment.error)
    {
        hasher.update(part.as_bytes());
        hasher.update([0]);
    }
    let digest: String = hasher.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let mut dirty_files: Vec<String> = assessment
        .dirty_files
        .iter()
        .take(MAX_LISTED_FILES)
        .cloned()
        .collect();
    if assessment.dirty_files.len() > MAX_LISTED_FILES {
        dirty_files.push(format!(
            "… and {} more",
            assessment.dirty_files.len() - MAX_LISTED_FILES
        ));
    }
    let mut unpushed_branches = assessment.unsafe_branches.clone();
    if let Some(error) = &assessment.error {
        unpushed_branches.push(format!("unknown: {error}"));
    }
    MountStatus {
        dst: record.dst.clone(),
        isolation: record.isolation,
        path: record.path.clone(),
        dirty_files,
        unpushed_branches,
        digest,
    }
}

/// Whether a mount status shows unfinished work.
pub fn has_unfinished_work(status: &MountStatus) -> bool {
    !status.dirty_files.is_empty() || !status.unpushed_branches.is_empty()
}

/// The digest an acknowledgement must quote: of every mount's evidence.
/// `None` when no mount has unfinished work (nothing to acknowledge).
pub fn acknowledgement_digest(mounts: &[MountStatus]) -> Option<String> {
    if !mounts.iter().any(has_unfinished_work) {
        return None;
    }
    let mut hasher = Sha256::new();
    for mount in mounts {
        hasher.update(mount.digest.as_bytes());
        hasher.update([0]);
    }
    Some(
        hasher.finalize()[..8]
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect(),
    )
}
