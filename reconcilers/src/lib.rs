//! Observing and changing the world. Each pass of the convergence loop is
//! `observe` (one snapshot of the engine), `decide` (a pure plan from a
//! [`view::InstanceView`]; the restore ladder lives there), then `act` (one
//! idempotent change per step: an engine object, a part of the unit, or the
//! status). Around them: the launch recipe, secret resolution, git, the
//! on-disk layout, durable file operations and the Docker engine adapter.

pub mod act;
pub mod addresses;
pub mod agent_settings;
pub mod answer;
pub mod assess;
pub mod attention;
mod build_log;
pub mod checkout;
pub mod credentials;
pub mod decide;
pub mod digest;
pub mod discard;
pub mod ending;
pub mod endpoint;
pub mod engine;
#[cfg(any(test, feature = "fake"))]
pub mod fake;
pub mod fsutil;
pub mod git;
pub mod gitdir;
pub mod idle;
pub mod isolation;
pub mod layout;
pub mod legacy_worktree;
pub mod observe;
pub mod offline;
pub mod offload;
pub mod operator_config;
pub mod plan;
pub mod policy;
pub mod probes;
pub mod provider;
pub mod recipe;
pub mod restricted;
pub mod resume;
pub mod rollout;
pub mod sandbox;
pub mod saved_files;
pub mod saved_session;
pub mod screen;
pub mod secrets;
pub mod session;
pub mod token_login;
pub mod view;
pub mod work_diff;
pub mod worktree;

pub use engine::{Engine, EngineError};
pub use layout::Layout;
pub use offload::blocking;
