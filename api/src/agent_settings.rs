//! Agent settings as data: the keys jackin sets in the unit's copy of an
//! agent's own files before every start, leaving the rest of each file as
//! it is. An `Agent` entry lists them (`spec.settings`); its retention
//! setting is one of them (named `retention`). A workspace turns one off by
//! its name (`agentSettings: {trust: false}`).
//!
//! They are applied at every start from the registry's entry as it is then,
//! and are no part of what a pinned entry is compared by: a jackin that
//! ships a new one gives it to existing sessions at their next start,
//! without a drift or a rollout.

use std::borrow::Cow;

use schemars::{JsonSchema, Schema, SchemaGenerator, json_schema};
use serde::{Deserialize, Serialize};

/// A key part that stands for the session's pinned working directory.
pub const WORKING_DIR_PLACEHOLDER: &str = "{workingDir}";

/// One setting in one of the agent's files.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSetting {
    /// What a workspace turns it off by (`agentSettings: {NAME: false}`),
    /// and what `describe` lists it as.
    pub name: String,
    /// The file, relative to the `stateEnv` path (the agent's home when the
    /// entry has none, or when it names a file).
    pub file: String,
    /// How the file is written.
    #[serde(default)]
    pub format: SettingFormat,
    /// The key, outermost first, one element per nested key: an element is
    /// one key whole, dots and slashes included. An element that is exactly
    /// `{workingDir}` stands for the session's pinned working directory.
    pub key: Vec<String>,
    /// The value set (a boolean, number, string, list or map).
    pub value: SettingValue,
    /// How the value goes in: `set` (the default) replaces what is there;
    /// `append` adds each item of a list value that the list there lacks,
    /// and of a map value, so for each of its keys, beside what the agent
    /// or the operator put there (claude's `hooks`, a list per event);
    /// `prepend` puts a list value before the list there, once (codex's
    /// `notify` argv: jackin's program first, which runs the operator's).
    #[serde(default, skip_serializing_if = "SettingMerge::is_set")]
    pub merge: SettingMerge,
}

/// How a setting's value goes into its file.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SettingMerge {
    /// The value replaces what is at the key.
    #[default]
    Set,
    /// Each item of a list is added to the list there, once; a map's
    /// keys each so.
    Append,
    /// The list goes before the list there, unless that begins with it.
    Prepend,
}

impl SettingMerge {
    pub fn is_set(&self) -> bool {
        *self == Self::Set
    }
}

/// How a settings file is written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum SettingFormat {
    /// A JSON object.
    #[default]
    Json,
    /// A TOML document; its comments and order are kept.
    Toml,
}

impl SettingFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Json => "JSON",
            Self::Toml => "TOML",
        }
    }
}

/// A setting's value, any JSON value but `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct SettingValue(pub serde_json::Value);

impl std::hash::Hash for SettingValue {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        // serde_json's Value has no Hash; its text is a faithful stand-in.
        self.0.to_string().hash(state);
    }
}

/// Any value: a structural schema says so with
/// `x-kubernetes-preserve-unknown-fields` and no type.
impl JsonSchema for SettingValue {
    fn schema_name() -> Cow<'static, str> {
        "SettingValue".into()
    }

    fn json_schema(_: &mut SchemaGenerator) -> Schema {
        json_schema!({
            "description": "The value set: a boolean, number, string, list or map.",
            "x-kubernetes-preserve-unknown-fields": true
        })
    }
}

impl AgentSetting {
    /// The key as `describe` shows it: parts joined by `.`, a part that is
    /// not a plain word quoted (`projects."/work".hasTrustDialogAccepted`).
    pub fn shown_key(parts: &[String]) -> String {
        parts
            .iter()
            .map(|part| {
                let plain = !part.is_empty()
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-');
                match plain {
                    true => part.clone(),
                    false => serde_json::Value::from(part.as_str()).to_string(),
                }
            })
            .collect::<Vec<_>>()
            .join(".")
    }

    /// The key with `{workingDir}` replaced by `working_dir`; `None` when
    /// the key names it and the directory is not known.
    pub fn resolved_key(&self, working_dir: Option<&str>) -> Option<Vec<String>> {
        self.key
            .iter()
            .map(|part| match part.as_str() {
                WORKING_DIR_PLACEHOLDER => working_dir.map(str::to_owned),
                _ => Some(part.clone()),
            })
            .collect()
    }
}

/// What is wrong with an entry's settings, as `(field, message)` pairs;
/// `at` is the field of `settings`, `taken` the names other settings of the
/// entry have (`retention`).
pub fn problems(settings: &[AgentSetting], at: &str, taken: &[&str]) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut seen: std::collections::HashSet<&str> = taken.iter().copied().collect();
    for (i, setting) in settings.iter().enumerate() {
        let here = format!("{at}[{i}]");
        let mut problem = |field: &str, message: &str| {
            out.push((format!("{here}.{field}"), message.to_owned()));
        };
        let name = &setting.name;
        if name.is_empty()
            || !name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        {
            problem("name", "expected a name of letters, digits, '-' and '_'");
        } else if !seen.insert(name.as_str()) {
            problem("name", &format!("duplicate setting {name:?}"));
        }
        let file = &setting.file;
        if file.is_empty()
            || file.starts_with('/')
            || file.split('/').any(|part| part == ".." || part.is_empty())
            || file.chars().any(char::is_control)
        {
            problem(
                "file",
                "expected a file path relative to the stateEnv path, without '..'",
            );
        }
        if setting.key.is_empty()
            || setting
                .key
                .iter()
                .any(|part| part.is_empty() || part.chars().any(char::is_control))
        {
            problem(
                "key",
                "expected the key's parts, outermost first, none empty: [projects, '{workingDir}', trust_level]",
            );
        }
        if holds_null(&setting.value.0) {
            problem("value", "expected a value: null sets nothing");
        }
        let list = matches!(setting.value.0, serde_json::Value::Array(_));
        if setting.merge == SettingMerge::Prepend && !list {
            problem("merge", "expected a list value to prepend");
        }
    }
    out
}

fn holds_null(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Null => true,
        serde_json::Value::Array(items) => items.iter().any(holds_null),
        serde_json::Value::Object(map) => map.values().any(holds_null),
        _ => false,
    }
}

/// What became of one setting at a start, as the instance's status keeps
/// it for `describe`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AppliedSetting {
    pub name: String,
    /// The file, relative to the agent's home.
    pub file: String,
    /// The key as shown, its working directory filled in.
    pub key: String,
    /// The value, as JSON.
    pub value: String,
    pub outcome: SettingOutcome,
    /// Why it was not set, for `off` and `leftAlone`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// What became of a setting at a start.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SettingOutcome {
    /// The file holds it (written now, or already so).
    Set,
    /// The workspace turned it off (`agentSettings`).
    Off,
    /// The file could not be read as its format, or the key's place in it
    /// is not a table: the file was left as it is.
    LeftAlone,
}

impl SettingOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Set => "set",
            Self::Off => "off",
            Self::LeftAlone => "left alone",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(parts: &[&str]) -> Vec<String> {
        parts.iter().map(|p| (*p).to_owned()).collect()
    }

    /// Every built-in entry's settings pass; a setting that could not work
    /// is refused at its field.
    #[test]
    fn settings_that_could_not_work_are_refused_at_their_field() {
        for entry in crate::agent::builtin() {
            let spec = &entry.spec;
            assert_eq!(
                problems(&spec.settings, "s", &["retention"]),
                [],
                "{}",
                entry.metadata.name
            );
        }
        let good = AgentSetting {
            name: "trust".into(),
            file: "config.toml".into(),
            format: SettingFormat::Toml,
            key: key(&["sandbox_mode"]),
            value: SettingValue("x".into()),
            merge: SettingMerge::Set,
        };
        let bad = AgentSetting {
            name: "retention".into(),
            file: "../outside.toml".into(),
            format: SettingFormat::Toml,
            key: key(&["projects", ""]),
            value: SettingValue(serde_json::json!({"a": null})),
            merge: SettingMerge::Set,
        };
        let fields: Vec<String> =
            problems(&[good.clone(), good, bad], "spec.settings", &["retention"])
                .into_iter()
                .map(|(field, _)| field)
                .collect();
        assert_eq!(
            fields,
            [
                "spec.settings[1].name",
                "spec.settings[2].name",
                "spec.settings[2].file",
                "spec.settings[2].key",
                "spec.settings[2].value",
            ]
        );
    }

    #[test]
    fn a_key_part_names_the_working_directory_whole_and_shows_quoted() {
        let setting = AgentSetting {
            name: "trust".into(),
            file: ".claude.json".into(),
            format: SettingFormat::Json,
            key: key(&[
                "projects",
                WORKING_DIR_PLACEHOLDER,
                "hasTrustDialogAccepted",
            ]),
            value: SettingValue(true.into()),
            merge: SettingMerge::Set,
        };
        let resolved = setting.resolved_key(Some("/work/a.b")).unwrap();
        assert_eq!(
            resolved,
            key(&["projects", "/work/a.b", "hasTrustDialogAccepted"])
        );
        assert_eq!(
            AgentSetting::shown_key(&resolved),
            r#"projects."/work/a.b".hasTrustDialogAccepted"#
        );
        assert_eq!(setting.resolved_key(None), None);
    }
}
