//! What the planner decides from: one instance as a look saw it (the
//! engine's objects, the checkouts' assessment, the last session's end, the
//! exit policy and the rollout pending), and the digests read from it.
//! Plain data and pure functions: [`crate::decide`] imports this, never the
//! modules that talk to the engine or run git.

use std::collections::BTreeMap;

use jackin_api::instance::MountStatus;
use jackin_api::workspace::ExitPolicy;
use jiff::Timestamp;
use sha2::{Digest, Sha256};

use crate::digest::hex;
use crate::marker::MarkerState;

/// One container as a reconciler needs to see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerView {
    /// The engine's id: steps act on it, never on a name someone else may
    /// have taken since.
    pub id: String,
    pub name: String,
    pub running: bool,
}

/// Everything of one instance the engine holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceView {
    pub container: Option<ContainerView>,
    pub sidecars: BTreeMap<String, ContainerView>,
    /// The id of the instance's network (the oldest, if there are several).
    pub network: Option<String>,
    /// The ids of further networks of the instance: a network create that a
    /// killed process left in flight can land after another process made
    /// one. They make the name ambiguous, so they go.
    pub extra_networks: Vec<String>,
    /// Volumes labelled as the instance's, by name.
    pub volumes: Vec<String>,
    /// Whether the pinned image (by id) is present.
    pub image_present: bool,
    /// The assessment of each isolated checkout (a filesystem observation,
    /// filled in by the caller from the unit's records).
    pub mounts: Vec<MountStatus>,
    /// What was seen of the last session's end (filled in by the caller:
    /// the marker, the engine's state of the stopped container).
    pub session: SessionSeen,
    /// The exit policy in force (filled in by the caller from the
    /// instance's override and its workspace).
    pub exit_policy: ExitPolicy,
    /// A rollout to handle, decided by the caller from the spec as it
    /// resolves now ([`crate::rollout::pending`]).
    pub rollout: Option<Rollout>,
}

/// What was seen of the last session's end, read by the caller: only when
/// the container does not run (a running session has not ended).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SessionSeen {
    /// The unit's completion marker, as the wrapper (or the agent) left it.
    pub marker: MarkerState,
    /// The stopped container's state as the engine reports it, asked only
    /// when the marker cannot say it all (no new marker: its exit code;
    /// a new one: whether the OOM killer ended it). `None`: not asked, or
    /// the container went meanwhile.
    pub engine: Option<EngineExit>,
    /// Whether an operator is attached (who answers the exit policy's
    /// question).
    pub attached: bool,
}

impl Default for SessionSeen {
    fn default() -> Self {
        Self {
            marker: MarkerState::Absent,
            engine: None,
            attached: false,
        }
    }
}

/// A stopped container's end, as the engine reports it.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct EngineExit {
    pub exit_code: i64,
    /// When it started; `None` for a container created and never started.
    pub started: Option<Timestamp>,
    pub finished: Option<Timestamp>,
    pub oom_killed: bool,
}

/// A rollout the loop is to handle now, or one that waits.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Rollout {
    /// Pin the recipe again from the current spec and replace the
    /// container. `moving`: the engine may change. `new_conversation`: the
    /// agent's conversation starts anew.
    Go {
        requested: String,
        moving: bool,
        new_conversation: bool,
    },
    /// Record the request as refused, and why: nothing else changes.
    Refuse { requested: String, why: String },
    /// `OnDrift`: the spec changed, and the rollout waits until nobody is
    /// attached and the agent is idle (or the container stops).
    Wait,
}

/// Whether a mount status shows unfinished work.
pub fn has_unfinished_work(status: &MountStatus) -> bool {
    !status.dirty_files.is_empty() || !status.unpushed_branches.is_empty()
}

/// The unfinished work a mount status shows, in words ("2 changed files,
/// unpushed commits on b (1 ahead)"); empty when there is none.
pub fn work_summary(status: &MountStatus) -> String {
    let mut parts = Vec::new();
    if !status.dirty_files.is_empty() {
        parts.push(format!("{} changed files", status.dirty_files.len()));
    }
    if !status.unpushed_branches.is_empty() {
        parts.push(format!(
            "unpushed commits on {}",
            status.unpushed_branches.join(", ")
        ));
    }
    parts.join(", ")
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
    Some(hex(&hasher.finalize()[..8]))
}
