//! Where a session's unit (its home, state, `bin/` and isolated checkouts)
//! lives for the engine it runs on, as a recipe pins it. jackin never
//! assumes that an engine sees the controller's files: before the first
//! container of a recipe is made, it proves it through the engine (a fresh
//! identity written into the unit and read back from a container that
//! binds it), and the answer is pinned here, so that the proof is made
//! once per recipe and engine, never at each restore.

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The proven answer: how the unit reaches the session's containers, and
/// through which engine that was proven.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinnedStorage {
    pub kind: UnitStorage,
    /// The engine's address the proof went through (as connected, so the
    /// environment's engine is named too).
    pub engine: String,
    #[schemars(with = "String")]
    pub proven_at: Timestamp,
}

/// How a unit reaches the session's containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum UnitStorage {
    /// The unit's directories on the controller's machine, bound by their
    /// paths: the engine shares the controller's files. An engine that does
    /// not is refused (`UnitNotOnEngine`), for now: its own storage for
    /// the unit is not built yet.
    HostPaths,
}

impl UnitStorage {
    /// The name `describe` shows.
    pub fn as_str(self) -> &'static str {
        match self {
            UnitStorage::HostPaths => "host paths",
        }
    }
}
