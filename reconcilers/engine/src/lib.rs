//! The Docker engine adapter: the only code that talks to the engine.
//!
//! Every call maps the engine's answer into three cases a reconciler can act
//! on safely: the object exists, the engine says it does not (404), or the
//! engine could not be asked. The last is never read as "missing", so an
//! engine that does not answer can never trigger a destructive step.
//!
//! The parts, each with one job:
//! - `calls`: the seam, [`EngineCalls`] (one method per engine call) and
//!   the requests and answers it speaks in;
//! - `connection`: [`Engine`], the one way to the engine: it picks the
//!   engine, counts every call and gives each its deadline;
//! - `docker`: the real engine behind the seam, through bollard, whose
//!   errors it sorts into the three cases;
//! - `ssh`: the way to an engine over ssh (the system `ssh`, and `docker
//!   system dial-stdio` on the other side), with its deadlines;
//! - `ping`: the API version a local engine speaks, from its ping, which
//!   costs it far less than the `/version` that bollard asks;
//! - `archive`: one file out of a container's archive, read as untrusted
//!   data (one regular file, capped, or refused);
//! - `error`: [`EngineError`], and which errors are permanent, mean the
//!   engine is gone, or refused a start.
//!
//! Tests of everything above the seam put an engine in memory behind it
//! (`fake`, feature `fake`); a loop that carries on without an engine it
//! cannot reach puts [`offline`] there, which fails every call at once.

pub use bollard::container::LogOutput;
pub use bollard::models;

pub mod addresses;
pub mod answer;
pub mod archive;
mod calls;
mod connection;
mod docker;
pub mod endpoint;
mod error;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod offline;
mod ping;
pub mod restricted;
mod ssh;

pub use calls::{
    AttachedExec, EXEC_OUTPUT_BYTES, EngineCalls, ExecOutcome, ExecRequest, LogsRequest, Usage,
};
pub use connection::{Engine, ImageDefaults, LAST_OUTPUT_BYTES};
pub use error::EngineError;
pub use jackin_api::names::owner_labels;
