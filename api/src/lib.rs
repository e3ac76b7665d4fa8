//! jackin's resource model: the `Instance`, `Workspace` and `Agent` types, their
//! validation, YAML reading and the generated schemas. No I/O happens here;
//! everything is a pure function of its input, so every other crate can rely
//! on these types without pulling in an engine or a filesystem.

pub mod agent;
pub mod agent_settings;
pub mod conversation;
pub mod crd;
pub mod credentials;
pub mod env;
pub mod fit;
pub mod home;
pub mod identity;
pub mod include;
pub mod instance;
pub mod manifest;
pub mod meta;
pub mod names;
pub mod operator_config;
pub mod ports;
pub mod provider;
pub mod redact;
pub mod role;
pub mod security;
pub mod selector;
pub mod setup;
pub mod storage;
pub mod suggest;
pub mod validate;
pub mod workspace;

pub use agent::{Agent, AgentSpec};
pub use instance::{DesiredPhase, Instance, InstancePhase, InstanceSpec, InstanceStatus};
pub use manifest::{ManifestError, Object};
pub use meta::{API_VERSION, Condition, ConditionStatus, ObjectMeta};
pub use workspace::{ExitPolicy, Workspace, WorkspaceSpec};
