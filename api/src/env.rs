//! Environment variables as specs write them: a plain value, or a secret
//! reference resolved only when a container is created. Below every kind
//! that uses them (`Instance`'s `env`, credential sets, providers' keys),
//! so that none of those needs another's module for them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The longest `NAME=value` one environment variable may be: the kernel's
/// limit for a single string handed to a program (`MAX_ARG_STRLEN`).
pub const MAX_VALUE_BYTES: usize = 128 * 1024;

/// An environment variable: a plain `value` (never a secret) or a reference
/// in `valueFrom` that is resolved only when a container is created.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct EnvVar {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvSource>,
}

/// Where a secret comes from. Exactly one field is set.
///
/// A struct of optional fields (rather than an enum) keeps the published
/// schema structural, so the CRD installs into a cluster unchanged.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(extend("minProperties" = 1, "maxProperties" = 1))]
pub struct EnvSource {
    /// Name of a variable in jackin's own environment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_env: Option<String>,
    /// Path of a file whose contents (trailing newline trimmed) are the value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file: Option<String>,
    /// A 1Password secret reference, `op://vault/item/field`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub one_password: Option<String>,
}
