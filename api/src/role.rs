//! A role repository's manifest: `jackin.role.yaml` at its root, read at
//! the pinned commit when the recipe is pinned. Every field is optional.
//!
//! ```yaml
//! dockerfile: docker/Dockerfile   # the Dockerfile's path (default: Dockerfile)
//! agents: [claude, codex]         # the agents the role supports (default: any)
//! env:                            # variables a session of the role takes
//!   - name: JIRA_URL
//!     description: the tracker the agent files issues in
//!     prompt: true                # asked for at launch when unset; never stored
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

use crate::manifest::ManifestError;
use crate::validate::{self, Errors, FieldError};

/// The file's name, at the repository's root.
pub const ROLE_CONFIG_FILE: &str = "jackin.role.yaml";

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleConfig {
    /// The Dockerfile's path within the repository; `Dockerfile` when unset.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dockerfile: Option<String>,
    /// The agents (their registry names) the role's image is made for;
    /// empty: any.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agents: Vec<String>,
    /// The environment variables a session of the role takes.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<RoleEnv>,
    #[serde(default)]
    pub idle: RoleIdle,
    /// Widens the container's restrictions for every session of the role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<crate::security::SecuritySpec>,
}

/// The Dockerfile's path when the manifest names none.
pub const DEFAULT_DOCKERFILE: &str = "Dockerfile";

/// An environment variable a role's sessions take. Only its name and what
/// it is for are declared: its value is the operator's, never stored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleEnv {
    pub name: String,
    /// What the variable is for, shown when it is asked for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// Whether a launch asks for it when it is unset.
    #[serde(default)]
    pub prompt: bool,
}

impl RoleConfig {
    /// The Dockerfile's path within the repository.
    pub fn dockerfile(&self) -> &str {
        self.dockerfile.as_deref().unwrap_or(DEFAULT_DOCKERFILE)
    }

    /// Checks what the file's shape cannot: idle commands that name their
    /// program, and a widening of the restrictions the session still works
    /// within.
    pub fn validate(&self) -> Result<(), Vec<FieldError>> {
        let mut errors = Errors::default();
        if let Some(path) = &self.dockerfile
            && let Err(why) = repository_path(path)
        {
            errors.push("dockerfile", why);
        }
        for (i, agent) in self.agents.iter().enumerate() {
            if let Err(why) = validate::dns_label(agent) {
                errors.push(format!("agents[{i}]"), why);
            }
        }
        for (i, var) in self.env.iter().enumerate() {
            if let Err(why) = validate::env_name(&var.name) {
                errors.push(format!("env[{i}].name"), why);
            } else if self.env[..i].iter().any(|v| v.name == var.name) {
                errors.push(
                    format!("env[{i}].name"),
                    format!("{} is declared twice", var.name),
                );
            }
        }
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

/// A path within the repository: relative, and never climbing out of it.
fn repository_path(path: &str) -> Result<(), String> {
    let climbs = path.split('/').any(|part| part == "..");
    if path.is_empty() || path.starts_with('/') || climbs || path.contains('\\') {
        Err(format!(
            "{path:?} is not a path within the repository: name the file relative to its root, \
             without `..` (such as docker/Dockerfile)"
        ))
    } else {
        Ok(())
    }
}

/// Reads a role's manifest; every error names `source`, the line and
/// column, and the field at fault.
pub fn parse_located(source: &str, text: &str) -> Result<RoleConfig, Vec<ManifestError>> {
    crate::manifest::parse_plain(source, text, RoleConfig::validate)
}

/// [`parse_located`], its errors one to a line.
pub fn parse(source: &str, text: &str) -> Result<RoleConfig, String> {
    parse_located(source, text).map_err(|errors| {
        errors
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    })
}

/// The instructions a Dockerfile may hold.
const INSTRUCTIONS: [&str; 18] = [
    "ADD",
    "ARG",
    "CMD",
    "COPY",
    "ENTRYPOINT",
    "ENV",
    "EXPOSE",
    "FROM",
    "HEALTHCHECK",
    "LABEL",
    "MAINTAINER",
    "ONBUILD",
    "RUN",
    "SHELL",
    "STOPSIGNAL",
    "USER",
    "VOLUME",
    "WORKDIR",
];

/// Checks a role's Dockerfile as far as it can be without building it:
/// every instruction is one Docker knows, the first is `FROM` (or `ARG`
/// before it), and there is a `FROM`. Each error names `source`, the line
/// and the column. Continued lines and heredocs are passed over.
pub fn check_dockerfile(source: &str, text: &str) -> Vec<ManifestError> {
    let error = |line: usize, column: usize, message: String| ManifestError {
        source: source.to_owned(),
        line,
        column,
        field: None,
        message,
    };
    let mut errors = Vec::new();
    let mut seen_from = false;
    let mut continued = false;
    let mut heredoc: Option<String> = None;
    for (i, line) in text.lines().enumerate() {
        let number = i + 1;
        if let Some(end) = &heredoc {
            if line.trim() == end {
                heredoc = None;
            }
            continue;
        }
        let trimmed = line.trim_start();
        let was_continued = std::mem::replace(&mut continued, line.trim_end().ends_with('\\'));
        if was_continued || trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        heredoc = heredoc_end(trimmed);
        let word = trimmed.split_whitespace().next().unwrap_or_default();
        let column = line.len() - trimmed.len() + 1;
        let upper = word.to_ascii_uppercase();
        if !INSTRUCTIONS.contains(&upper.as_str()) {
            errors.push(error(
                number,
                column,
                format!(
                    "unknown instruction {word:?}: expected one of {}",
                    INSTRUCTIONS.join(", ")
                ),
            ));
        } else if !seen_from && upper != "FROM" && upper != "ARG" {
            errors.push(error(
                number,
                column,
                format!("{upper} before any FROM: a Dockerfile starts with FROM IMAGE (ARG may come first)"),
            ));
            seen_from = true;
        }
        seen_from |= upper == "FROM";
    }
    if !seen_from {
        errors.push(error(
            1,
            1,
            "no FROM instruction: a Dockerfile starts with FROM IMAGE".into(),
        ));
    }
    errors
}

/// The word that ends a heredoc the instruction starts (`<<EOF`, `<<-EOF`,
/// `<<"EOF"`), if it starts one.
fn heredoc_end(instruction: &str) -> Option<String> {
    let (_, rest) = instruction.split_once("<<")?;
    let rest = rest.strip_prefix('-').unwrap_or(rest);
    let word: String = rest
        .trim_start_matches(['"', '\''])
        .chars()
        .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
        .collect();
    (!word.is_empty()).then_some(word)
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
        assert!(err.starts_with("jackin.role.yaml:2:3: "), "{err}");
        assert!(err.contains("comands"), "{err}");
        let err = parse("r.yaml", "idle:\n  commands:\n    - []\n").unwrap_err();
        assert!(err.contains("idle.commands[0]"), "{err}");
        let err = parse("r.yaml", "security:\n  allowRole: {capAdd: [SYS_ADMIN]}\n").unwrap_err();
        assert!(err.contains("security.allowRole"), "{err}");
        assert!(err.contains("cannot allow its own widening"), "{err}");
    }

    #[test]
    fn the_manifest_declares_the_dockerfile_agents_and_env() {
        let text = "dockerfile: docker/Dockerfile\nagents: [claude, codex]\nenv:\n  \
                    - {name: JIRA_URL, description: the tracker, prompt: true}\n";
        let config = parse("m", text).unwrap();
        assert_eq!(config.dockerfile(), "docker/Dockerfile");
        assert_eq!(config.agents, ["claude", "codex"]);
        assert_eq!(
            config.env,
            [RoleEnv {
                name: "JIRA_URL".into(),
                description: "the tracker".into(),
                prompt: true,
            }]
        );
        assert_eq!(
            parse("m", "# nothing\n").unwrap().dockerfile(),
            "Dockerfile"
        );
    }

    /// Each fault at its own line and column, all of them in one reading.
    #[test]
    fn a_bad_manifest_is_refused_at_each_place() {
        let text = "dockerfile: ../Dockerfile\nagents:\n  - Claude\nenv:\n  - name: A\n  \
                    - name: 1B\n  - name: A\n";
        let errors = parse_located("jackin.role.yaml", text).unwrap_err();
        let placed: Vec<String> = errors.iter().map(ToString::to_string).collect();
        let at = |prefix: &str| placed.iter().any(|e| e.starts_with(prefix));
        assert!(
            at("jackin.role.yaml:1:13: field `dockerfile`: "),
            "{placed:?}"
        );
        assert!(
            at("jackin.role.yaml:3:5: field `agents[0]`: "),
            "{placed:?}"
        );
        assert!(
            at("jackin.role.yaml:6:11: field `env[1].name`: "),
            "{placed:?}"
        );
        assert!(
            at("jackin.role.yaml:7:11: field `env[2].name`: "),
            "{placed:?}"
        );
        // A field of the wrong shape, and a bad value beside it.
        let err = parse("m", "env: x\nagents: [A]\n").unwrap_err();
        assert!(err.contains("m:1:6: field `env`: "), "{err}");
        assert!(err.contains("m:2:10: field `agents[0]`: "), "{err}");
        let err = parse("m", "agents: claude\n").unwrap_err();
        assert!(err.starts_with("m:1:9: field `agents`: "), "{err}");
    }

    #[test]
    fn a_dockerfile_is_checked_at_each_line() {
        let good = "# a role\nARG V=1\nFROM busybox:${V}\nRUN echo a \\\n    b\nRUN <<EOF\nnot an instruction\nEOF\nCMD [x]\n";
        assert_eq!(check_dockerfile("D", good), []);
        let bad = "RUN x\nFROM a\n  CP x y\n";
        let placed: Vec<String> = check_dockerfile("D", bad)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(placed.len(), 2, "{placed:?}");
        assert!(
            placed[0].starts_with("D:1:1: RUN before any FROM"),
            "{placed:?}"
        );
        assert!(
            placed[1].starts_with("D:3:3: unknown instruction \"CP\""),
            "{placed:?}"
        );
        let none = check_dockerfile("D", "# empty\n");
        assert!(
            none[0].to_string().starts_with("D:1:1: no FROM"),
            "{none:?}"
        );
    }
}
