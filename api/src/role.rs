//! A role repository's own settings: `jackin.role.yaml` beside its
//! Dockerfile, read at the pinned commit when the recipe is pinned.
//!
//! ```yaml
//! idle:
//!   commands:                 # recommended while the agent is idle
//!     - [gradle, --stop]
//!     - [sh, -c, "rm -rf ~/.cache/tmp"]
//! ```
//!
//! They are the role's recommendation; they run only in a workspace whose
//! operator opted in (`spec.idle.enabled`).
//!
//! A role may also widen its container's restrictions (`security`, see
//! [`crate::security`]): what its tools need beyond jackin's defaults.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::validate::{self, Errors, FieldError};

/// The file's name, at the repository's root.
pub const ROLE_CONFIG_FILE: &str = "jackin.role.yaml";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleConfig {
    #[serde(default)]
    pub idle: RoleIdle,
    /// Widens the container's restrictions for every session of the role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<crate::security::SecuritySpec>,
}

impl RoleConfig {
    /// Checks what the file's shape cannot: idle commands that name their
    /// program, and a widening of the restrictions the session still works
    /// within.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errors = Errors::default();
        validate::idle_commands(&mut errors, "idle.commands", &self.idle.commands);
        validate::security(&mut errors, "security", self.security.as_ref());
        if self
            .security
            .as_ref()
            .is_some_and(|s| s.allow_role.is_some())
        {
            errors.push(
                "security.allowRole",
                "a role cannot allow its own widening: the operator's workspace says what a role \
                 may widen (its spec.security.allowRole)",
            );
        }
        errors.into_result()
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleIdle {
    /// Argv lists, run in sequence with `docker exec`.
    #[serde(default)]
    pub commands: Vec<Vec<String>>,
}

/// Reads a role's settings; the error names `source`, and the line, column
/// or field at fault.
pub fn parse(source: &str, text: &str) -> Result<RoleConfig, String> {
    let config: Option<RoleConfig> =
        serde_saphyr::from_str(text).map_err(|e| format!("{source}: {}", e.without_snippet()))?;
    let config = config.unwrap_or_default();
    config.validate().map_err(|errors| {
        errors
            .iter()
            .map(|e| format!("{source}: {e}"))
            .collect::<Vec<_>>()
            .join("\n")
    })?;
    Ok(config)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_role_recommends_idle_commands() {
        let config = parse(
            "jackin.role.yaml",
            "idle:\n  commands:\n    - [gradle, --stop]\n",
        )
        .unwrap();
        assert_eq!(config.idle.commands, [["gradle", "--stop"]]);
        assert_eq!(parse("x", "").unwrap(), RoleConfig::default());
    }

    #[test]
    fn bad_settings_are_refused_with_their_place() {
        let err = parse("jackin.role.yaml", "idle:\n  comands: []\n").unwrap_err();
        assert!(err.starts_with("jackin.role.yaml: "), "{err}");
        assert!(err.contains("comands"), "{err}");
        let err = parse("r.yaml", "idle:\n  commands:\n    - []\n").unwrap_err();
        assert!(err.contains("idle.commands[0]"), "{err}");
        let err = parse("r.yaml", "security:\n  allowRole: {capAdd: [SYS_ADMIN]}\n").unwrap_err();
        assert!(err.contains("security.allowRole"), "{err}");
        assert!(err.contains("cannot allow its own widening"), "{err}");
    }
}
