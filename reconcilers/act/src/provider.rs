//! The provider a session was pinned with (see [`jackin_api::provider`]),
//! at the container's creation: its variables, the key resolved from its
//! reference then and handed to the engine, kept nowhere; and what a
//! launch says of it, which names the key's reference, never its value.

use jackin_api::instance::Recipe;
use jackin_api::provider::AgentProvider;

use crate::secrets::{self, SecretError};

/// `NAME=value` for the provider's variables: the redirect, the models and
/// the key, resolved now (the same resolution as `spec.env`'s). A variable
/// `spec.env` sets (`set_by_spec`) is the operator's and stays theirs.
/// Blocking (a file, `op read`): call it off the async runtime.
pub fn container_env(
    provider: Option<&AgentProvider>,
    set_by_spec: &[String],
) -> Result<Vec<String>, SecretError> {
    let Some(provider) = provider else {
        return Ok(Vec::new());
    };
    provider
        .plain_env()
        .chain(&provider.key)
        .filter(|var| !set_by_spec.contains(&var.name))
        .map(|var| Ok(format!("{}={}", var.name, secrets::value_of(var)?)))
        .collect()
}

/// What a launch's `provider` stage says of the recipe's provider: its
/// name, the key's reference and the variable it goes in, and that the
/// agent's own login stays home; `None` when none is picked.
pub fn stage_note(recipe: &Recipe) -> Option<String> {
    let provider = recipe.provider.as_ref()?;
    let agent = recipe
        .agent
        .as_ref()
        .map_or("the agent", |a| a.name.as_str());
    Some(match (&provider.key, provider.key_reference()) {
        (Some(key), Some(reference)) => format!(
            "{}: {agent} is sent to the provider with its key ({reference}) in {}; {agent}'s own \
             login is not forwarded",
            provider.name, key.name
        ),
        _ => format!(
            "{}: {agent} uses its own endpoint and login (authForward)",
            provider.name
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::instance::{EnvSource, EnvVar};

    fn provider(key_file: &std::path::Path) -> AgentProvider {
        AgentProvider {
            name: "zai".into(),
            key: Some(EnvVar {
                name: "ANTHROPIC_AUTH_TOKEN".into(),
                value: None,
                value_from: Some(EnvSource {
                    file: Some(key_file.display().to_string()),
                    ..Default::default()
                }),
            }),
            env: vec![EnvVar {
                name: "ANTHROPIC_BASE_URL".into(),
                value: Some("https://api.z.ai/api/anthropic".into()),
                value_from: None,
            }],
            args: Vec::new(),
            models: vec![EnvVar {
                name: "ANTHROPIC_MODEL".into(),
                value: Some("glm-4.6".into()),
                value_from: None,
            }],
        }
    }

    #[test]
    fn the_key_is_resolved_for_the_engine_and_the_spec_keeps_its_variables() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, "canary-provider-key\n").unwrap();
        let zai = provider(&key);
        assert_eq!(
            container_env(Some(&zai), &[]).unwrap(),
            [
                "ANTHROPIC_BASE_URL=https://api.z.ai/api/anthropic",
                "ANTHROPIC_MODEL=glm-4.6",
                "ANTHROPIC_AUTH_TOKEN=canary-provider-key"
            ]
        );
        assert_eq!(
            container_env(Some(&zai), &["ANTHROPIC_BASE_URL".into()]).unwrap(),
            [
                "ANTHROPIC_MODEL=glm-4.6",
                "ANTHROPIC_AUTH_TOKEN=canary-provider-key"
            ]
        );
        assert_eq!(container_env(None, &[]).unwrap(), Vec::<String>::new());
        std::fs::remove_file(&key).unwrap();
        let err = container_env(Some(&zai), &[]).unwrap_err().to_string();
        assert!(
            err.starts_with("ANTHROPIC_AUTH_TOKEN: cannot read"),
            "{err}"
        );
    }

    #[test]
    fn the_stage_names_the_reference_never_the_value() {
        let dir = tempfile::tempdir().unwrap();
        let key = dir.path().join("key");
        std::fs::write(&key, "canary-provider-key").unwrap();
        let recipe = Recipe {
            provider: Some(Box::new(provider(&key))),
            ..Default::default()
        };
        let note = stage_note(&recipe).unwrap();
        assert_eq!(
            note,
            format!(
                "zai: the agent is sent to the provider with its key (file {}) in \
                 ANTHROPIC_AUTH_TOKEN; the agent's own login is not forwarded",
                key.display()
            )
        );
        assert!(!note.contains("canary"));
        assert_eq!(stage_note(&Recipe::default()), None);
    }
}
