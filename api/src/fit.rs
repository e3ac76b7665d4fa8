//! What an instance asks of its agent's entry, checked when it is applied
//! so that a mistake is refused with nothing written, instead of failing
//! the launch after the apply took it: a conversation id in the format the
//! agent takes, and a provider the entry defines. Pure: the caller finds
//! the entry (in the same input, applied before, or built in).

use crate::agent::AgentSpec;
use crate::instance::Instance;
use crate::provider;

/// Each way `instance` does not fit `agent` (the entry its `spec.agent`
/// names), one line each, as an apply refuses it; empty when it fits. A
/// provider its workspace picks is checked at launch, where the workspace
/// is known.
pub fn refusals(instance: &Instance, agent: &AgentSpec) -> Vec<String> {
    let name = &instance.metadata.name;
    let agent_name = &instance.spec.agent;
    let mut refusals = Vec::new();
    // The agent would refuse the id at its first start.
    if let Some(id) = &instance.spec.conversation_id
        && !agent.id_format.fits(id)
    {
        refusals.push(format!(
            "instance/{name}: spec.conversationId: {agent_name} takes {}, not {id:?} \
             (omit conversationId and jackin chooses one)",
            agent.id_format.describe()
        ));
    }
    if let Some(picked) = &instance.spec.provider
        && !agent.providers.iter().any(|p| &p.name == picked)
    {
        refusals.push(format!(
            "instance/{name}: spec.provider: agent {agent_name:?} has no provider {picked:?}: its \
             entry has {} (`jackin get providers` lists them; an applied Agent entry adds one)",
            provider::names(&agent.providers)
        ));
    }
    refusals
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::builtin;

    fn instance(lines: &str) -> Instance {
        let yaml = format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: q}}\nspec:\n  \
             role: {{name: r}}\n  agent: claude\n{lines}"
        );
        serde_saphyr::from_str(&yaml).unwrap()
    }

    #[test]
    fn an_instance_fits_its_agent_or_each_misfit_is_named() {
        let claude = builtin()
            .into_iter()
            .find(|a| a.metadata.name == "claude")
            .unwrap()
            .spec;
        assert_eq!(refusals(&instance(""), &claude), Vec::<String>::new());
        assert_eq!(
            refusals(&instance("  provider: zai\n"), &claude),
            Vec::<String>::new()
        );
        let misfits = refusals(
            &instance("  provider: nope\n  conversationId: not-a-uuid\n"),
            &claude,
        );
        assert_eq!(misfits.len(), 2, "{misfits:?}");
        assert!(
            misfits[0].starts_with("instance/q: spec.conversationId: claude takes"),
            "{}",
            misfits[0]
        );
        assert_eq!(
            misfits[1],
            "instance/q: spec.provider: agent \"claude\" has no provider \"nope\": its entry has \
             anthropic, zai, minimax, kimi (`jackin get providers` lists them; an applied Agent \
             entry adds one)"
        );
        let mut bare = claude.clone();
        bare.providers.clear();
        assert!(
            refusals(&instance("  provider: zai\n"), &bare)[0].contains("its entry has none"),
            "an entry with no providers says so"
        );
    }
}
