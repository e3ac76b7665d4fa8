//! The operator's own agent setup: the config files and directories an
//! operator keeps for an agent on the host (claude's `CLAUDE.md`, commands
//! and MCP servers, codex's `config.toml`), copied into a session's home
//! when the workspace opts in (`operatorConfig: sync`).
//!
//! An `Agent` entry lists them (`spec.operatorConfig`), each a place in the
//! operator's home and a place in the agent's; the mode is the workspace's
//! (`none` by default). They are copies, made fresh before every start: the
//! agent may change its copy, the host's files are never written, and a
//! change on the host reaches the next start. They are treated as
//! credentials (an operator's config often holds an `env` block or an MCP
//! server's token): mode 0600, never printed, left out of a discarded
//! session's save.
//!
//! This is not `agentSettings`, the keys jackin itself sets; those are
//! written after the operator's config, over it (docs/ARCHITECTURE.md, "One
//! writing order").

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Whether the operator's agent setup reaches a workspace's sessions
/// (`Workspace.spec.operatorConfig`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OperatorConfigMode {
    /// The entries the agent lists are copied from the operator's home into
    /// the unit's home before every start.
    Sync,
    /// Nothing of the operator's setup goes: the session starts with the
    /// agent's defaults and jackin's settings.
    #[default]
    None,
}

impl OperatorConfigMode {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::None => "none",
        }
    }
}

/// One file or directory of the operator's setup (`Agent.spec.operatorConfig[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ConfigEntry {
    /// Where it is, relative to the operator's home on the host
    /// (`.claude/CLAUDE.md`). A directory is copied with everything in it.
    pub src: String,
    /// Where it goes, relative to the agent's home (the unit's `home/`).
    pub dst: String,
    /// How a file meets the session's own file at `dst`.
    #[serde(default, skip_serializing_if = "ConfigMerge::is_replace")]
    pub merge: ConfigMerge,
    /// With `merge: json`, only these top-level keys of the host's file go
    /// (`.claude.json`'s `mcpServers`: the rest of that file is other
    /// projects' state); every key when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
}

/// How a copied file meets the session's own file in its place.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ConfigMerge {
    /// The host's file replaces the session's.
    #[default]
    Replace,
    /// Both are JSON objects: the host's top-level keys are set in the
    /// session's object, its other keys kept.
    Json,
    /// Both are TOML documents: the host's top-level items are set in the
    /// session's document (`toml_edit`), its other items and comments kept.
    Toml,
}

impl ConfigMerge {
    pub fn is_replace(&self) -> bool {
        *self == Self::Replace
    }
}

/// What is wrong with an entry's `operatorConfig`, as `(field, message)`
/// pairs under `at`; `place` checks a path relative to a home (the
/// operator's or the agent's, named by its second argument).
pub fn problems(
    entries: &[ConfigEntry],
    at: &str,
    place: impl Fn(&str, &str) -> Result<(), String>,
) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut destinations = std::collections::HashSet::new();
    for (i, entry) in entries.iter().enumerate() {
        let here = format!("{at}[{i}]");
        if let Err(why) = place(&entry.src, "the operator's home") {
            out.push((format!("{here}.src"), why));
        }
        if let Err(why) = place(&entry.dst, "the agent's home") {
            out.push((format!("{here}.dst"), why));
        }
        if !destinations.insert(entry.dst.as_str()) {
            out.push((
                format!("{here}.dst"),
                format!(
                    "duplicate destination {:?}: each entry goes to its own place",
                    entry.dst
                ),
            ));
        }
        for (k, key) in entry.keys.iter().enumerate() {
            if entry.merge != ConfigMerge::Json {
                out.push((
                    format!("{here}.keys"),
                    "keys are taken from a JSON file: set merge: json".to_owned(),
                ));
                break;
            }
            if key.is_empty() || key.chars().any(char::is_control) {
                out.push((
                    format!("{here}.keys[{k}]"),
                    "expected a top-level key of the JSON file, without control characters"
                        .to_owned(),
                ));
            }
        }
    }
    out
}

/// The setup each built-in agent copies under `operatorConfig: sync`, each
/// place from the vendor's own docs. Destinations are where the agent looks
/// inside the unit, under the `stateEnv` jackin sets.
pub fn builtin(agent: &str) -> Vec<ConfigEntry> {
    let at = |src: &str, dst: &str, merge: ConfigMerge, keys: &[&str]| ConfigEntry {
        src: src.into(),
        dst: dst.into(),
        merge,
        keys: keys.iter().map(|k| (*k).to_owned()).collect(),
    };
    let same = |path: &str| at(path, path, ConfigMerge::Replace, &[]);
    match agent {
        // Claude Code, all under ~/.claude (CLAUDE_CONFIG_DIR in the unit):
        // - CLAUDE.md, the user's memory (docs.anthropic.com/en/docs/claude-code/memory);
        // - commands/, personal slash commands (…/claude-code/slash-commands);
        // - agents/, user subagents (…/claude-code/sub-agents);
        // - skills/, personal skills (…/claude-code/skills);
        // - settings.json, user settings: permissions, model, hooks, env
        //   (…/claude-code/settings); jackin's settings go over it;
        // - user-scope MCP servers, the `mcpServers` key of ~/.claude.json
        //   (…/claude-code/mcp, "MCP installation scopes"), which claude
        //   reads from `.claude.json` inside CLAUDE_CONFIG_DIR.
        "claude" => vec![
            same(".claude/CLAUDE.md"),
            same(".claude/commands"),
            same(".claude/agents"),
            same(".claude/skills"),
            at(
                ".claude/settings.json",
                ".claude/settings.json",
                ConfigMerge::Json,
                &[],
            ),
            at(
                ".claude.json",
                ".claude/.claude.json",
                ConfigMerge::Json,
                &["mcpServers"],
            ),
        ],
        // Codex, under ~/.codex (CODEX_HOME in the unit): config.toml with
        // model, profiles, model providers and MCP servers
        // (developers.openai.com/codex/config-basic, config-reference), and
        // the global AGENTS.md (developers.openai.com/codex/guides/agents-md).
        "codex" => vec![
            at(
                ".codex/config.toml",
                ".codex/config.toml",
                ConfigMerge::Toml,
                &[],
            ),
            same(".codex/AGENTS.md"),
        ],
        // Gemini CLI, under ~/.gemini (GEMINI_CLI_HOME is the unit's home):
        // user settings (geminicli.com/docs/get-started/configuration) and
        // the global context file (geminicli.com/docs/cli/gemini-md).
        "gemini" => vec![
            at(
                ".gemini/settings.json",
                ".gemini/settings.json",
                ConfigMerge::Json,
                &[],
            ),
            same(".gemini/GEMINI.md"),
        ],
        // OpenCode's global config and rules in ~/.config/opencode
        // (opencode.ai/docs/config, opencode.ai/docs/rules).
        "opencode" => vec![
            at(
                ".config/opencode/opencode.json",
                ".config/opencode/opencode.json",
                ConfigMerge::Json,
                &[],
            ),
            same(".config/opencode/AGENTS.md"),
        ],
        _ => Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn relative(path: &str, _home: &str) -> Result<(), String> {
        match path.starts_with('/') || path.split('/').any(|p| p == "..") {
            true => Err("not relative".to_owned()),
            false => Ok(()),
        }
    }

    #[test]
    fn the_mode_is_none_unless_asked_and_reads_as_documented() {
        assert_eq!(OperatorConfigMode::default(), OperatorConfigMode::None);
        let read: OperatorConfigMode = serde_json::from_str("\"sync\"").unwrap();
        assert_eq!(read, OperatorConfigMode::Sync);
        assert!(serde_json::from_str::<OperatorConfigMode>("\"Sync\"").is_err());
    }

    #[test]
    fn every_builtin_entry_passes_and_bad_ones_are_refused_at_their_field() {
        for agent in ["claude", "codex", "gemini", "opencode"] {
            assert!(!builtin(agent).is_empty(), "{agent}");
            assert_eq!(problems(&builtin(agent), "c", relative), [], "{agent}");
        }
        let bad = [
            ConfigEntry {
                src: "/etc/passwd".into(),
                dst: "x".into(),
                merge: ConfigMerge::Replace,
                keys: vec!["a".into()],
            },
            ConfigEntry {
                src: "a".into(),
                dst: "x".into(),
                merge: ConfigMerge::Json,
                keys: vec![String::new()],
            },
        ];
        let fields: Vec<String> = problems(&bad, "spec.operatorConfig", relative)
            .into_iter()
            .map(|(field, _)| field)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.operatorConfig[0].src",
                "spec.operatorConfig[0].keys",
                "spec.operatorConfig[1].dst",
                "spec.operatorConfig[1].keys[0]",
            ]
        );
        let err =
            serde_json::from_str::<ConfigEntry>(r#"{"src": "a", "dst": "a", "x": 1}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }
}
