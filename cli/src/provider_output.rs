//! `jackin get providers` and `jackin describe provider NAME`: the
//! providers of the Agent registry (each entry's `providers`, see
//! [`jackin_api::provider`]), gathered by name, with the agents each one
//! serves. What is shown of a key is its reference, never a value: no
//! value is ever at hand here.

use std::fmt::Write as _;

use anyhow::{Result, anyhow};
use jackin_api::instance::EnvVar;
use jackin_api::provider::AgentProvider;
use jackin_api::{Agent, Instance};
use jackin_controller::Store;
use jackin_controller::objects::AgentSource;
use serde::Serialize;

use crate::args::Format;
use crate::output::{self, terminal_safe};

/// A provider and the agents whose entries define it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ProviderView {
    pub name: String,
    pub agents: Vec<Offer>,
}

/// One agent's entry for a provider.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Offer {
    pub agent: String,
    /// `builtin`, or `applied` for an applied Agent entry.
    pub source: &'static str,
    pub entry: AgentProvider,
}

/// The registry's providers, by name, each with its agents in the
/// registry's order.
pub fn gather(agents: &[(Agent, AgentSource)]) -> Vec<ProviderView> {
    let mut views: Vec<ProviderView> = Vec::new();
    for (agent, source) in agents {
        for entry in &agent.spec.providers {
            let offer = Offer {
                agent: agent.metadata.name.clone(),
                source: source.as_str(),
                entry: entry.clone(),
            };
            match views.iter_mut().find(|v| v.name == entry.name) {
                Some(view) => view.agents.push(offer),
                None => views.push(ProviderView {
                    name: entry.name.clone(),
                    agents: vec![offer],
                }),
            }
        }
    }
    views.sort_by(|a, b| a.name.cmp(&b.name));
    views
}

/// The provider names, for completion.
pub fn names(store: &Store) -> Result<Vec<String>> {
    Ok(gather(&store.agents()?)
        .into_iter()
        .map(|v| v.name)
        .collect())
}

/// The providers `name` selects (all without one), or the error that
/// says none is called so.
fn selected(store: &Store, name: Option<&str>) -> Result<Vec<ProviderView>> {
    let mut views = gather(&store.agents()?);
    if let Some(name) = name {
        views.retain(|v| v.name == name);
        if views.is_empty() {
            return Err(anyhow!(
                "provider {name:?} not found\nhint: `jackin get providers` lists them; an \
                 applied Agent entry's `providers` adds one"
            ));
        }
    }
    Ok(views)
}

/// What `jackin get providers [NAME] [-o …]` prints.
pub fn text(store: &Store, name: Option<&str>, format: Format) -> Result<String> {
    let views = selected(store, name)?;
    Ok(match format {
        Format::Table | Format::Wide => table(&views),
        Format::Yaml => output::yaml_stream(&views)?,
        Format::Json => output::json(&views, name.is_some())?,
        Format::Name => views.iter().fold(String::new(), |mut out, v| {
            let _ = writeln!(out, "provider/{}", v.name);
            out
        }),
    })
}

/// The key's reference and the variable it goes in, or what stands for
/// the login when there is no key.
fn key_text(entry: &AgentProvider) -> String {
    match (&entry.key, entry.key_reference()) {
        (Some(key), Some(reference)) => format!("{reference} as {}", key.name),
        _ => "the agent's own login".to_owned(),
    }
}

/// One row per provider: the agents it serves and where its keys come
/// from.
pub fn table(views: &[ProviderView]) -> String {
    let rows: Vec<Vec<String>> = views
        .iter()
        .map(|view| {
            let agents: Vec<String> = view
                .agents
                .iter()
                .map(|o| format!("{} ({})", o.agent, o.source))
                .collect();
            let mut keys: Vec<String> = view
                .agents
                .iter()
                .map(|o| match o.entry.key_reference() {
                    Some(reference) => reference,
                    None => "own login".to_owned(),
                })
                .collect();
            keys.dedup();
            vec![
                terminal_safe(&view.name),
                terminal_safe(&agents.join(", ")),
                terminal_safe(&keys.join(", ")),
            ]
        })
        .collect();
    output::table(&["NAME", "AGENTS", "KEY"], &rows)
}

/// `NAME=value, …` of plain variables, `-` for none.
fn variables(vars: &[EnvVar]) -> String {
    match vars.is_empty() {
        true => "-".to_owned(),
        false => vars
            .iter()
            .map(|v| format!("{}={}", v.name, v.value.as_deref().unwrap_or_default()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// `jackin describe provider NAME`: each agent's entry for it, and the
/// instances that pick it or were pinned with it.
pub fn describe(store: &Store, name: &str) -> Result<String> {
    let view = selected(store, Some(name))?.remove(0);
    let users: Vec<Instance> = store
        .list_instances()?
        .instances
        .into_iter()
        .filter(|obj| {
            obj.spec.provider.as_deref() == Some(name)
                || obj
                    .recipe()
                    .and_then(|r| r.provider.as_ref())
                    .is_some_and(|p| p.name == name)
        })
        .collect();
    Ok(describe_text(&view, &users))
}

fn describe_text(view: &ProviderView, users: &[Instance]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Name:       {}", terminal_safe(&view.name));
    let _ = writeln!(out, "Agents:");
    for offer in &view.agents {
        let entry = &offer.entry;
        let args = match entry.args.is_empty() {
            true => "-".to_owned(),
            false => entry.args.join(" "),
        };
        for line in [
            format!("  {} ({})", offer.agent, offer.source),
            format!("    Key:      {}", key_text(entry)),
            format!("    Env:      {}", variables(&entry.env)),
            format!("    Args:     {args}"),
            format!("    Models:   {}", variables(&entry.models)),
        ] {
            let _ = writeln!(out, "{}", terminal_safe(&line));
        }
    }
    let names: Vec<&str> = users.iter().map(|o| o.metadata.name.as_str()).collect();
    let _ = writeln!(
        out,
        "Instances:  {}",
        match names.is_empty() {
            true => "<none>".to_owned(),
            false => names.join(", "),
        }
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn providers_are_gathered_by_name_and_shown_by_reference() {
        let agents: Vec<(Agent, AgentSource)> = jackin_api::agent::builtin()
            .into_iter()
            .map(|a| (a, AgentSource::Builtin))
            .collect();
        let views = gather(&agents);
        let names: Vec<&str> = views.iter().map(|v| v.name.as_str()).collect();
        assert_eq!(names, ["anthropic", "kimi", "minimax", "zai"]);
        let zai = &views[3];
        let served: Vec<&str> = zai.agents.iter().map(|o| o.agent.as_str()).collect();
        assert_eq!(served, ["claude", "opencode"]);
        let listed = table(&views);
        assert!(
            listed.contains("zai") && listed.contains("hostEnv ZAI_API_KEY"),
            "{listed}"
        );
        let text = describe_text(zai, &[]);
        assert!(
            text.contains("Key:      hostEnv ZAI_API_KEY as ANTHROPIC_AUTH_TOKEN"),
            "{text}"
        );
        assert!(
            text.contains("Env:      ANTHROPIC_BASE_URL=https://api.z.ai/api/anthropic"),
            "{text}"
        );
        assert!(text.ends_with("Instances:  <none>\n"), "{text}");
        let own = describe_text(&views[0], &[]);
        assert!(own.contains("Key:      the agent's own login"), "{own}");
    }
}
