//! How a session ended, as the entry wrapper recorded it: the completion
//! marker (`state/exit.json`) and the places inside the container that the
//! wrapper and the idle-hook runner are mounted at.
//!
//! Every container runs its agent under an entry wrapper (`entry.sh`,
//! bind-mounted from the unit) that writes the marker when the agent exits.
//! The marker survives `docker run --rm`, `docker rm` and the absence of any
//! jackin process, and carries the times; the engine's exit state (SIGKILL,
//! OOM) is the fallback; with neither, the outcome is unknown and says so.
//! The agent can write the file, so [`parse`] takes any bytes and never
//! trusts a word it does not know. Reading the file is `jackin_act::session`'s.
//!
//! The wrapper notes a stop signal it receives (jackin's `Kept` teardown,
//! `docker stop` and an engine shutdown reach it through the init, which
//! signals the whole process group) and then writes `signal:TERM` (or
//! `signal:HUP`) whatever the agent's exit code: many agents trap SIGTERM and
//! exit 0. Only a marker that says `exited` is the agent ending its session
//! (what follows is [`crate::ending`]'s).

use jiff::Timestamp;
use serde::Deserialize;

/// Where the wrapper's directory (the wrapper and the start plan) is
/// mounted in the container, read-only.
pub const BIN_DIR: &str = "/jackin/bin";
/// Where the wrapper is in the container.
pub const ENTRY_PATH: &str = "/jackin/bin/entry";
/// Where the idle-hook runner is in the container.
pub const HOOK_PATH: &str = "/jackin/bin/hook";

/// A completion marker, as the wrapper writes it.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Marker {
    pub exit_code: i64,
    #[serde(default)]
    pub started_at: String,
    #[serde(default)]
    pub finished_at: String,
    /// `exited`, or `signal:TERM` (`HUP`) when a stop from outside ended it.
    /// Written by a file the agent can change: read through [`Marker::reason`].
    pub reason: String,
    /// When the file was written.
    #[serde(skip)]
    pub written: Option<Timestamp>,
}

impl Marker {
    /// Whether the agent ended on its own, rather than being stopped.
    pub fn ended_by_itself(&self) -> bool {
        self.reason == "exited"
    }

    /// Who ended the session, as one of the words the wrapper writes; any
    /// other text (the agent can write the file) is `unrecognized`.
    pub fn reason(&self) -> &'static str {
        match self.reason.as_str() {
            "exited" => "exited",
            "signal:TERM" => "signal:TERM",
            "signal:HUP" => "signal:HUP",
            _ => "unrecognized",
        }
    }

    /// When the session ended: when the marker was written (to the
    /// nanosecond, so two quick sessions never look like one), else the
    /// wrapper's own whole-second time.
    pub fn finished(&self) -> Option<Timestamp> {
        self.written.or_else(|| self.finished_at.parse().ok())
    }
}

/// What the unit's marker says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MarkerState {
    Absent,
    Present(Marker),
    /// There, but not a marker: the engine's code is used instead.
    Malformed(String),
}

/// Reads a marker's bytes, as found in the unit, with the time the file was
/// written (`None` when unknown). Anything but a marker is
/// [`MarkerState::Malformed`], with the parser's reason prefixed by `source`.
pub fn parse(bytes: &[u8], written: Option<Timestamp>, source: &str) -> MarkerState {
    match serde_json::from_slice::<Marker>(bytes) {
        Ok(mut marker) => {
            marker.written = written;
            MarkerState::Present(marker)
        }
        Err(e) => MarkerState::Malformed(format!("{source}: {e}")),
    }
}
