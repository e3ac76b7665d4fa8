//! The `Workspace` resource: a GitOps-style policy file for a workspace's instances.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::instance::MountSpec;
use crate::meta::ObjectMeta;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workspace {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: WorkspaceSpec,
}

impl Workspace {
    pub const KIND: &'static str = "Workspace";
}

/// What happens when a session in this workspace ends cleanly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExitPolicy {
    /// Clean up automatically unless an isolated mount has unfinished work; then ask.
    #[default]
    Ask,
    /// Always keep the instance, resumable later.
    Keep,
    /// Always clean up, without asking.
    #[serde(alias = "discard")]
    Clean,
}

impl ExitPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Keep => "keep",
            Self::Clean => "clean",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceSpec {
    #[serde(default)]
    pub exit_policy: ExitPolicy,
    #[serde(default, skip_serializing_if = "KeepPolicy::is_unbounded")]
    pub keep: KeepPolicy,
    /// Mounts every instance of this workspace gets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<MountSpec>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeepPolicy {
    /// Most `Kept` instances per (workspace, role, agent); unbounded when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
}

impl KeepPolicy {
    fn is_unbounded(&self) -> bool {
        self.max.is_none()
    }
}
