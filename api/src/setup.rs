//! A workspace's setup command: what a new checkout needs before the agent
//! works in it (`npm ci`, `uv sync`, a migration), run once per session.
//!
//! ```yaml
//! setup: {command: [npm, ci], timeout: 10m}
//! ```
//!
//! It runs in the container, as the agent's user, in the agent's working
//! directory, at the session's first start and before the agent starts;
//! never again on a restore (tiers 1 to 3, a resume), and again after a
//! rollout only when the setup itself changed. It prepares the checkout and
//! the home, which outlive the container: what it writes anywhere else in
//! the container is gone with it.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// How long a setup may run when its spec says nothing.
pub const DEFAULT_TIMEOUT: &str = "10m";

/// The setup as a workspace asks for it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetupSpec {
    /// The argv, run as it is (no shell: `[sh, -c, "…"]` for one).
    pub command: Vec<String>,
    /// How long it may run (`90s`, `10m`); 10 minutes when omitted. Past
    /// it, it is stopped and the session starts without it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<String>,
}

/// The setup as the recipe pins it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinnedSetup {
    pub command: Vec<String>,
    pub timeout_seconds: u64,
    /// What tells this setup from another: a rollout that changes it runs
    /// it again; one that does not, never.
    pub digest: String,
}

/// What the session's setup did, as the entry wrapper reported it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SetupStatus {
    /// The digest of the setup that ran.
    pub digest: String,
    /// How it ended.
    pub outcome: SetupOutcome,
    /// Its exit code, when it exited.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i32>,
}

/// How a setup ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SetupOutcome {
    /// It exited 0.
    Done,
    /// It exited non-zero.
    Failed,
    /// It ran past its timeout and was stopped.
    TimedOut,
    /// The operator skipped it (`launch --skip-setup`).
    Skipped,
}

impl SetupOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Done => "done",
            Self::Failed => "failed",
            Self::TimedOut => "timed-out",
            Self::Skipped => "skipped",
        }
    }
}
