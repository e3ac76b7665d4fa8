//! Providers: another model endpoint an agent is sent to, with that
//! provider's key instead of the operator's login (Z.ai, MiniMax, Kimi; or
//! Anthropic, the vendor's own).
//!
//! A provider is data in the Agent registry, a `providers` list in each
//! entry, rather than a kind of its own. What redirects an agent is the
//! agent's business: claude takes `ANTHROPIC_BASE_URL` and
//! `ANTHROPIC_AUTH_TOKEN`, codex wants a provider in its config (`-c
//! model_providers.…`), opencode a `-m provider/model` argument. An entry
//! already says how its CLI is launched and logged in, and a session's
//! recipe already pins the entry it resolved, so the pick is resolved with
//! the agent and pinned with it, with no second lookup, no second kind to
//! store, sync, prune and keep in step with the agents it names (a
//! provider for an agent that does not exist cannot be written down). The
//! price: adding a provider to a built-in agent means applying its entry
//! whole (`jackin get agent claude -o yaml` is the start).
//!
//! A provider decides where the agent's requests, and its key, go. So only
//! data the operator applies defines one, as with every Agent entry (see
//! `docs/SECURITY.md`); the built-in ones are below, each from its vendor's
//! documentation.
//!
//! The key is a secret reference (`valueFrom`, as `spec.env` takes it),
//! resolved when the container is created and kept nowhere; with a key, the
//! agent's own login is not forwarded, so a provider's endpoint never gets
//! the operator's Anthropic or OpenAI login.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::env::{EnvSource, EnvVar};

/// One provider an agent can be sent to (`Agent.spec.providers[]`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentProvider {
    /// What an instance or workspace picks it by (`provider: zai`).
    pub name: String,
    /// The provider's key: `name` is the variable the agent reads it from
    /// (`ANTHROPIC_AUTH_TOKEN`), `valueFrom` where jackin reads it
    /// (`{hostEnv: ZAI_API_KEY}`), at every container creation. Without a
    /// key the provider is the agent's own vendor: its login is forwarded
    /// as `authForward` says, and the entry may redirect nothing.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub key: Option<EnvVar>,
    /// Variables that send the agent to the provider (`ANTHROPIC_BASE_URL`),
    /// plain values: the key is the only secret.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// Arguments appended to the agent's launch argv (opencode's `-m
    /// zai/glm-4.6`, codex's `-c model_provider=…`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// The variables that choose the provider's models
    /// (`ANTHROPIC_DEFAULT_SONNET_MODEL`), plain values.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub models: Vec<EnvVar>,
}

impl AgentProvider {
    /// Whether the session gets the provider's key instead of the agent's
    /// own login.
    pub fn replaces_login(&self) -> bool {
        self.key.is_some()
    }

    /// The key's reference as a report shows it (`hostEnv ZAI_API_KEY`),
    /// never its value; `None` without a key.
    pub fn key_reference(&self) -> Option<String> {
        let from = self.key.as_ref()?.value_from.as_ref()?;
        Some(match (&from.host_env, &from.file, &from.one_password) {
            (Some(name), _, _) => format!("hostEnv {name}"),
            (_, Some(path), _) => format!("file {path}"),
            (_, _, Some(reference)) => format!("onePassword {reference}"),
            _ => "no reference".to_owned(),
        })
    }

    /// What is wrong with the entry beyond its names and references (which
    /// `validate` checks as everywhere): each as the field (under the
    /// entry) and what is expected there.
    pub fn problems(&self) -> Vec<(String, String)> {
        let mut found = Vec::new();
        let mut push = |field: String, message: &str| found.push((field, message.to_owned()));
        match &self.key {
            Some(key) if key.value.is_some() || key.value_from.is_none() => push(
                "key".into(),
                "expected valueFrom (hostEnv, file or onePassword): a key is a secret, never a \
                 plain value",
            ),
            Some(_) => {}
            None if !self.env.is_empty() || !self.args.is_empty() => push(
                "key".into(),
                "expected a key: a provider that redirects the agent (env or args) must give its \
                 own key, or the agent's login would go to the provider's endpoint",
            ),
            None => {}
        }
        for (list, vars) in [("env", &self.env), ("models", &self.models)] {
            for (i, var) in vars.iter().enumerate() {
                if var.value_from.is_some() {
                    push(
                        format!("{list}[{i}]"),
                        "expected a plain value: the provider's key is its only secret",
                    );
                }
                if self.key.as_ref().is_some_and(|k| k.name == var.name) {
                    push(
                        format!("{list}[{i}].name"),
                        "names the key's variable: the key sets it",
                    );
                }
            }
        }
        for (i, arg) in self.args.iter().enumerate() {
            if arg.chars().any(char::is_control) {
                push(format!("args[{i}]"), "must not contain control characters");
            }
        }
        found
    }

    /// The variables it sets in the container besides the key, the
    /// redirect first, then the models.
    pub fn plain_env(&self) -> impl Iterator<Item = &EnvVar> {
        self.env.iter().chain(&self.models)
    }
}

/// What is wrong with an entry's `providers` list: each entry's problems,
/// and a name given twice; fields under `spec.providers[i]`.
pub fn list_problems(providers: &[AgentProvider]) -> Vec<(String, String)> {
    let mut found = Vec::new();
    for (i, provider) in providers.iter().enumerate() {
        let at = format!("spec.providers[{i}]");
        found.extend(
            provider
                .problems()
                .into_iter()
                .map(|(field, message)| (format!("{at}.{field}"), message)),
        );
        if providers[..i].iter().any(|p| p.name == provider.name) {
            found.push((
                format!("{at}.name"),
                format!("duplicate provider {:?}", provider.name),
            ));
        }
    }
    found
}

/// A plain variable.
fn plain(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.to_owned()),
        value_from: None,
    }
}

/// The key: the agent reads `variable`, jackin the host variable `host`.
fn key_from_host(variable: &str, host: &str) -> Option<EnvVar> {
    Some(EnvVar {
        name: variable.to_owned(),
        value: None,
        value_from: Some(EnvSource {
            host_env: Some(host.to_owned()),
            ..Default::default()
        }),
    })
}

/// A provider that sends claude to an Anthropic-compatible `endpoint` with
/// the key of `host_key`: claude takes `ANTHROPIC_AUTH_TOKEN` as a bearer
/// token without asking (unlike `ANTHROPIC_API_KEY`, which it asks about
/// first), from the Claude Code settings' environment variables
/// (docs.claude.com/en/docs/claude-code/settings).
fn for_claude(
    name: &str,
    endpoint: &str,
    host_key: &str,
    models: &[(&str, &str)],
) -> AgentProvider {
    AgentProvider {
        name: name.to_owned(),
        key: key_from_host("ANTHROPIC_AUTH_TOKEN", host_key),
        env: vec![plain("ANTHROPIC_BASE_URL", endpoint)],
        args: Vec::new(),
        models: models.iter().map(|(n, v)| plain(n, v)).collect(),
    }
}

/// A provider that opencode reaches by its own provider id: `-m
/// provider/model` (opencode.ai/docs/models), the key in the variable
/// opencode's provider reads (opencode.ai/docs/providers; provider ids and
/// variables as models.dev lists them). opencode is not installable here,
/// so these entries are not run by the suite: check them against the
/// opencode you install.
fn for_opencode(name: &str, model: &str, variable: &str, host_key: &str) -> AgentProvider {
    AgentProvider {
        name: name.to_owned(),
        key: key_from_host(variable, host_key),
        env: Vec::new(),
        args: vec!["-m".to_owned(), model.to_owned()],
        models: Vec::new(),
    }
}

/// The providers the built-in entry `agent` ships with, each from its
/// vendor's documentation of that CLI; none for an agent no vendor
/// documents (codex: none of them documents a Responses endpoint, which
/// codex 0.147 needs; an applied entry gives it one with `args`).
pub fn builtin_for(agent: &str) -> Vec<AgentProvider> {
    match agent {
        "claude" => vec![
            // The vendor itself: claude's own login, nothing redirected.
            AgentProvider {
                name: "anthropic".into(),
                ..Default::default()
            },
            // docs.z.ai/devpack/tool/claude: ANTHROPIC_BASE_URL and
            // ANTHROPIC_AUTH_TOKEN, the GLM models behind claude's names.
            for_claude(
                "zai",
                "https://api.z.ai/api/anthropic",
                "ZAI_API_KEY",
                &[
                    ("ANTHROPIC_DEFAULT_OPUS_MODEL", "glm-4.6"),
                    ("ANTHROPIC_DEFAULT_SONNET_MODEL", "glm-4.6"),
                    ("ANTHROPIC_DEFAULT_HAIKU_MODEL", "glm-4.5-air"),
                ],
            ),
            // platform.minimax.io/docs/guides/text-ai-coding-tools (Claude
            // Code): the international endpoint and MiniMax-M2.
            for_claude(
                "minimax",
                "https://api.minimax.io/anthropic",
                "MINIMAX_API_KEY",
                &[
                    ("ANTHROPIC_MODEL", "MiniMax-M2"),
                    ("ANTHROPIC_SMALL_FAST_MODEL", "MiniMax-M2"),
                ],
            ),
            // Kimi Code (kimi.com/coding/docs, "Claude Code"): the coding
            // plan's Anthropic-compatible endpoint and its model.
            for_claude(
                "kimi",
                "https://api.kimi.com/coding/",
                "KIMI_CODE_API_KEY",
                &[
                    ("ANTHROPIC_MODEL", "kimi-for-coding"),
                    ("ANTHROPIC_SMALL_FAST_MODEL", "kimi-for-coding"),
                ],
            ),
        ],
        "opencode" => vec![
            for_opencode(
                "anthropic",
                "anthropic/claude-sonnet-4-5",
                "ANTHROPIC_API_KEY",
                "ANTHROPIC_API_KEY",
            ),
            // opencode's `zai-coding-plan` provider (models.dev).
            for_opencode(
                "zai",
                "zai-coding-plan/glm-4.6",
                "ZHIPU_API_KEY",
                "ZAI_API_KEY",
            ),
            for_opencode(
                "minimax",
                "minimax/MiniMax-M2",
                "MINIMAX_API_KEY",
                "MINIMAX_API_KEY",
            ),
            for_opencode(
                "kimi",
                "kimi-for-coding/kimi-for-coding",
                "KIMI_API_KEY",
                "KIMI_CODE_API_KEY",
            ),
        ],
        _ => Vec::new(),
    }
}

/// The provider an instance picks: its own `provider`, else its
/// workspace's; `None` for none.
pub fn picked<'a>(instance: Option<&'a str>, workspace: Option<&'a str>) -> Option<&'a str> {
    instance.or(workspace)
}

/// The names of `providers` as an error lists them (`anthropic, zai`), or
/// `none`.
pub fn names(providers: &[AgentProvider]) -> String {
    match providers.is_empty() {
        true => "none".to_owned(),
        false => providers
            .iter()
            .map(|p| p.name.as_str())
            .collect::<Vec<_>>()
            .join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_builtins_are_valid_and_every_key_is_a_reference() {
        for agent in ["claude", "opencode"] {
            let providers = builtin_for(agent);
            assert_eq!(list_problems(&providers), Vec::new(), "{agent}");
            let names: Vec<&str> = providers.iter().map(|p| p.name.as_str()).collect();
            assert_eq!(names, ["anthropic", "zai", "minimax", "kimi"], "{agent}");
        }
        let claude = builtin_for("claude");
        assert!(
            !claude[0].replaces_login(),
            "anthropic is claude's own login"
        );
        for (provider, host) in
            claude[1..]
                .iter()
                .zip(["ZAI_API_KEY", "MINIMAX_API_KEY", "KIMI_CODE_API_KEY"])
        {
            let key = provider.key.as_ref().unwrap();
            assert_eq!(key.name, "ANTHROPIC_AUTH_TOKEN");
            assert_eq!(key.value, None);
            assert_eq!(provider.key_reference(), Some(format!("hostEnv {host}")));
            assert_eq!(provider.env[0].name, "ANTHROPIC_BASE_URL");
        }
        assert_eq!(builtin_for("codex"), Vec::new());
    }

    #[test]
    fn a_key_is_a_reference_and_a_redirect_needs_one() {
        let mut provider = for_claude("zai", "https://x", "ZAI_API_KEY", &[("M", "m")]);
        provider.key.as_mut().unwrap().value = Some("sk-plain".into());
        let fields = |p: &AgentProvider| p.problems().into_iter().map(|f| f.0).collect::<Vec<_>>();
        assert_eq!(fields(&provider), ["key"]);
        provider.key = None;
        assert_eq!(fields(&provider), ["key"], "a redirect without a key");
        let said = provider.problems()[0].1.clone();
        assert!(said.contains("the agent's login would go"), "{said}");
        provider.env.clear();
        assert_eq!(fields(&provider), Vec::<String>::new(), "the vendor's own");
        provider.args = vec!["-m\nx".into()];
        assert_eq!(fields(&provider), ["key", "args[0]"]);
        let secret_model = AgentProvider {
            name: "Bad_Name".into(),
            key: key_from_host("K", "K"),
            models: vec![
                EnvVar {
                    name: "M".into(),
                    value: None,
                    value_from: key_from_host("M", "M").unwrap().value_from,
                },
                plain("K", "x"),
            ],
            ..Default::default()
        };
        // Its name is `validate`'s to check, as every name.
        assert_eq!(fields(&secret_model), ["models[0]", "models[1].name"]);
    }

    #[test]
    fn a_name_is_given_once_and_fields_are_placed_under_the_list() {
        let twice = vec![
            for_claude("zai", "https://x", "Z", &[]),
            for_claude("zai", "https://y", "Z", &[]),
        ];
        assert_eq!(
            list_problems(&twice),
            [(
                "spec.providers[1].name".to_owned(),
                "duplicate provider \"zai\"".to_owned()
            )]
        );
        let read: AgentProvider = serde_json::from_str(
            r#"{"name": "p", "key": {"name": "K", "valueFrom": {"file": "/k"}}}"#,
        )
        .unwrap();
        assert_eq!(read.key_reference().as_deref(), Some("file /k"));
        let err =
            serde_json::from_str::<AgentProvider>(r#"{"name": "p", "url": "x"}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    /// An applied entry's providers, and a pick, are checked where they are
    /// written: each error at its field.
    #[test]
    fn manifests_are_checked_at_each_providers_field() {
        let agent = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: claude}\n\
                     spec:\n  launch: [claude]\n  providers:\n  - name: zai\n    \
                     key: {name: ANTHROPIC_AUTH_TOKEN, value: sk-plain}\n  - name: zai\n    \
                     env: [{name: ANTHROPIC_BASE_URL, value: 'https://x'}]\n";
        let errors = crate::manifest::parse("agent.yaml", agent).unwrap_err();
        let fields: Vec<&str> = errors.iter().filter_map(|e| e.field.as_deref()).collect();
        assert_eq!(
            fields,
            [
                "spec.providers[0].key",
                "spec.providers[1].key",
                "spec.providers[1].name"
            ],
            "{errors:?}"
        );
        let empty_reference = agent.replace(
            "key: {name: ANTHROPIC_AUTH_TOKEN, value: sk-plain}",
            "key: {name: ANTHROPIC_AUTH_TOKEN, valueFrom: {file: ''}}",
        );
        let errors = crate::manifest::parse("agent.yaml", &empty_reference).unwrap_err();
        assert_eq!(
            errors[0].field.as_deref(),
            Some("spec.providers[0].key.valueFrom.file"),
            "{errors:?}"
        );
        let instance = "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {name: a}\n\
                        spec: {agent: claude, image: x, role: {name: r}, provider: Not_One}\n";
        let errors = crate::manifest::parse("i.yaml", instance).unwrap_err();
        assert_eq!(
            errors[0].field.as_deref(),
            Some("spec.provider"),
            "{errors:?}"
        );
        let workspace = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: w}\n\
                         spec: {provider: zai}\n";
        assert!(crate::manifest::parse("w.yaml", workspace).is_ok());
    }

    #[test]
    fn the_instance_picks_before_its_workspace() {
        assert_eq!(picked(Some("zai"), Some("kimi")), Some("zai"));
        assert_eq!(picked(None, Some("kimi")), Some("kimi"));
        assert_eq!(picked(None, None), None);
    }
}
