//! The pinned launch recipe: what a session was launched with, captured once
//! and replayed by every restore. It is never resolved again against
//! today's configuration or the role's current head: that would bring back
//! a different session than the one that was left.
//!
//! What the recipe pins that the spec only names: the agent's entry as the
//! registry resolved it, with its strategy; the provider picked (the instance's
//! `provider`, else its workspace's), and with a key the agent's own credential
//! sets cut to their non-secret files, so that a provider's endpoint never gets
//! the operator's login; `dind` as an ordinary sidecar named `dind` plus the
//! instance's certificates volume; the security widenings of the role and the
//! workspace. A recipe records the generation it was pinned from and when a
//! container first ran from it (see `decide`).
//!
//! [`drift`] says which fields the current spec would pin otherwise; it
//! explains, it changes nothing (a rollout does). The agent's entry is compared
//! without what is applied at every start from the registry as it is then
//! ([`compared_entry`]: its settings, the places of its `operatorConfig`; its
//! credentials and its other providers are compared apart or not at all), so a
//! jackin that ships a new setting gives it to sessions pinned before it with
//! no drift. Of the security widenings only the workspace's is compared
//! ([`workspace_security`]): the role's moves with its commit.

use std::path::Path;

use jackin_api::agent::{AgentSpec, Strategy};
use jackin_api::credentials::{CredentialSet, PinnedCredentials};
use jackin_api::instance::{
    Instance, InstanceSpec, MountSpec, PinnedAgent, PinnedDind, Recipe, Sidecar,
};
use jackin_api::names::owner_labels;
use jackin_api::operator_config::OperatorConfigMode;
use jackin_api::provider::{self, AgentProvider};
use jackin_api::role::RoleConfig;
use jackin_api::security::{PinnedSecurity, SecuritySpec};
use jackin_api::setup::{DEFAULT_TIMEOUT, PinnedSetup, SetupSpec};
use jackin_api::workspace::WorkspaceSpec;

/// An instance picks a provider its agent's entry does not define.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "agent {agent:?} has no provider {provider:?}: its entry has {known}; `jackin get \
     providers` lists them, and an applied Agent entry adds one"
)]
pub struct UnknownProvider {
    pub agent: String,
    pub provider: String,
    pub known: String,
}

/// A role's `jackin.role.yaml` widens the container beyond what the
/// instance's workspace allows (`spec.security.allowRole`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "role {role:?} widens the container with {}, which {} does not allow; if you trust the \
     role, {}, or take the widening out of the role's jackin.role.yaml",
    unallowed.join(", "),
    workspace.as_ref().map_or("no workspace".to_owned(), |w| format!("workspace {w:?}")),
    match workspace {
        Some(_) => format!("add `{allowance}` to the workspace's spec.security and apply it"),
        None => format!("give the instance a workspace whose spec.security says `{allowance}`"),
    }
)]
pub struct RoleWideningRefused {
    pub role: String,
    /// The instance's workspace; `None` when it names none.
    pub workspace: Option<String>,
    /// What is widened without the allowance (`capAdd SYS_ADMIN`).
    pub unallowed: Vec<String>,
    /// The `allowRole` block that would allow it all.
    pub allowance: String,
}

/// `~/x` and `~` against the operator's home; anything else as written.
pub fn expand_home(src: &str, home: Option<&Path>) -> String {
    match (src.strip_prefix('~'), home) {
        (Some(rest), Some(home)) if rest.is_empty() || rest.starts_with('/') => {
            format!("{}{rest}", home.display())
        }
        _ => src.to_owned(),
    }
}

/// An agent entry as the registry resolves an instance's `spec.agent`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResolvedAgent {
    pub name: String,
    /// `builtin`, or `applied` for an `Agent` object in the store.
    pub source: &'static str,
    pub spec: AgentSpec,
}

/// Whether `command` runs the agent's own program: the file name of the
/// agent entry's `launch` program. Another program (`sleep`, a shell) is
/// not the agent, whatever the entry says.
pub fn runs_agent_program(command: &[String], launch: &[String]) -> bool {
    let program = |argv: &[String]| {
        argv.first()
            .map(|p| Path::new(p).file_name().map(ToOwned::to_owned))
    };
    !launch.is_empty() && program(command) == program(launch)
}

/// The argv the agent is launched with, and the agent entry as pinned. A
/// `spec.command` wins over the entry's launch argv; the entry's resume
/// arguments still apply when the command runs the agent's own program
/// (the same file name), and not otherwise: they would mean nothing to
/// another program.
fn pin_agent(
    spec: &InstanceSpec,
    workspace: Option<&WorkspaceSpec>,
    entry: Option<&ResolvedAgent>,
    provider: Option<&AgentProvider>,
) -> (Vec<String>, Option<PinnedAgent>) {
    let Some(entry) = entry else {
        return (spec.command.clone().unwrap_or_default(), None);
    };
    let launch = &entry.spec.launch;
    let (mut command, resumable) = match &spec.command {
        Some(command) => (command.clone(), runs_agent_program(command, launch)),
        None => (launch.clone(), !launch.is_empty()),
    };
    // The provider's arguments are the agent's program's, as its resume
    // arguments are.
    if resumable && let Some(provider) = provider {
        command.extend(provider.args.iter().cloned());
    }
    // The workspace's switch turns resume off for all its sessions.
    let resume = spec.resume && workspace.is_none_or(WorkspaceSpec::resumes_conversations);
    let strategy = match resume && resumable {
        true => entry.spec.strategy(),
        false => Strategy::None,
    };
    let pinned = PinnedAgent {
        name: entry.name.clone(),
        source: entry.source.to_owned(),
        spec: entry.spec.clone(),
        strategy,
        // Probed with the image, when the recipe is pinned.
        version: None,
    };
    (command, Some(pinned))
}

/// The recipe the spec asks for now, except for the image, which pinning
/// fills in. Workspace mounts come first; an instance mount with the same
/// destination replaces the workspace's. `agent` is the registry's entry
/// for `spec.agent`, if there is one.
pub fn wanted(
    obj: &Instance,
    workspace: Option<&WorkspaceSpec>,
    agent: Option<&ResolvedAgent>,
    container: &str,
    home: Option<&Path>,
    home_id: &str,
) -> Recipe {
    let mut mounts: Vec<MountSpec> = Vec::new();
    let spec = &obj.spec;
    let workspace_mounts = workspace.map(|w| w.mounts.as_slice()).unwrap_or_default();
    for m in workspace_mounts.iter().chain(&spec.mounts) {
        let mut m = m.clone();
        m.src = expand_home(&m.src, home);
        match mounts.iter_mut().find(|e| e.dst == m.dst) {
            Some(existing) => *existing = m,
            None => mounts.push(m),
        }
    }
    let uid = obj.metadata.uid.as_deref().unwrap_or_default();
    // An unknown pick pins none: it shows as drift, and a launch refuses
    // it (`wanted_provider`).
    let provider = wanted_provider(obj, workspace, agent).ok().flatten();
    let credentials = wanted_credentials(obj, workspace, agent, provider.as_ref());
    let (command, agent) = pin_agent(spec, workspace, agent, provider.as_ref());
    let provider = provider.map(Box::new);
    // A Docker daemon of the agent's own: the sidecar `dind`, and a volume
    // for the client certificates it shares with the agent.
    let mut sidecars = spec.sidecars.clone();
    let dind = spec
        .dind
        .clone()
        .or_else(|| workspace.and_then(|w| w.dind.clone()))
        .map(|dind| {
            sidecars.retain(|s| s.name != DIND);
            sidecars.push(Sidecar {
                name: DIND.to_owned(),
                image: dind.image,
                privileged: dind.privileged,
                command: dind.command,
            });
            PinnedDind {
                certs_volume: format!("{container}-dind-certs"),
            }
        });
    Recipe {
        image: spec.image.clone().unwrap_or_default(),
        image_id: String::new(),
        role_commit: None,
        role_source: spec.role.source.as_ref().map(|s| s.git.clone()),
        role_ref: spec.role.source.as_ref().and_then(|s| s.git_ref.clone()),
        derived_from: None,
        base_image: None,
        command,
        user: None,
        dind,
        engine: wanted_engine(obj, workspace),
        working_dir: spec
            .working_dir
            .clone()
            .or_else(|| workspace.and_then(|w| w.working_dir.clone())),
        idle_commands: Vec::new(),
        mounts,
        env: spec.env.clone(),
        network: container.to_owned(),
        sidecars,
        ports: jackin_api::ports::merged(
            workspace.map(|w| w.ports.as_slice()).unwrap_or_default(),
            &spec.ports,
        ),
        setup: workspace.and_then(|w| w.setup.as_ref()).map(pinned_setup),
        labels: owner_labels(&obj.metadata.name, uid, home_id)
            .into_iter()
            .collect(),
        generation: obj.metadata.generation,
        agent,
        credentials: Some(credentials),
        provider,
        // The operator's own agent setup goes only where the workspace asks
        // for it.
        operator_config: workspace
            .and_then(|w| w.operator_config)
            .filter(|mode| *mode == OperatorConfigMode::Sync),
        // The role's widening is read with its commit, when the recipe is
        // pinned; the workspace's is the spec's now.
        security: wanted_security(workspace),
        first_run_at: None,
        replaces: None,
        // Proven through the engine before the first container is made.
        storage: None,
    }
}

/// The setup as the recipe pins it: its timeout in seconds (a value that
/// does not parse was refused at apply; the default stands in), and the
/// digest that tells it from another.
fn pinned_setup(setup: &SetupSpec) -> PinnedSetup {
    let timeout = setup.timeout.as_deref().unwrap_or(DEFAULT_TIMEOUT);
    let timeout_seconds = jackin_api::validate::duration(timeout)
        .or_else(|_| jackin_api::validate::duration(DEFAULT_TIMEOUT))
        .map_or(600, |d| d.as_secs());
    let what = serde_json::json!({"command": setup.command, "timeout": timeout_seconds});
    PinnedSetup {
        command: setup.command.clone(),
        timeout_seconds,
        digest: crate::digest::sha256_hex(what.to_string().as_bytes(), 8),
    }
}

/// The credential hand-off the spec asks for: the instance's mode, else its
/// workspace's, else `sync`; the agent's own set (named after it), then the
/// workspace's sets, a name alone resolved to the built-in set.
fn wanted_credentials(
    obj: &Instance,
    workspace: Option<&WorkspaceSpec>,
    agent: Option<&ResolvedAgent>,
    provider: Option<&AgentProvider>,
) -> PinnedCredentials {
    let mode = obj
        .spec
        .auth_forward
        .or_else(|| workspace.and_then(|w| w.auth_forward))
        .unwrap_or_default();
    let own = agent.and_then(|a| {
        a.spec
            .credentials
            .as_ref()
            .filter(|c| !c.is_empty())
            .map(|c| c.named(&a.name))
    });
    // With a provider's key, the agent's own login stays on the host: the
    // provider's endpoint must never get it. Its account metadata (no
    // secret) still goes, so that the agent knows it has been set up.
    let own = match provider.is_some_and(AgentProvider::replaces_login) {
        true => own.map(without_login).filter(|set| !set.files.is_empty()),
        false => own,
    };
    let shared = workspace
        .map(|w| w.credentials.as_slice())
        .unwrap_or_default()
        .iter()
        // Validation refuses a name that is no built-in set.
        .filter_map(CredentialSet::resolved);
    PinnedCredentials {
        mode,
        sets: own.into_iter().chain(shared).collect(),
    }
}

/// `set` without what logs in: its secret files, its variables and its
/// login step.
fn without_login(mut set: CredentialSet) -> CredentialSet {
    set.files.retain(|file| !file.secret);
    set.env.clear();
    set.login_step = None;
    set
}

/// The provider the instance picks (its `provider`, else its
/// workspace's), as the agent's entry defines it; `None` when none is
/// picked, an error naming what the entry has when it has no such one.
pub fn wanted_provider(
    obj: &Instance,
    workspace: Option<&WorkspaceSpec>,
    agent: Option<&ResolvedAgent>,
) -> Result<Option<AgentProvider>, UnknownProvider> {
    let Some(name) = provider::picked(
        obj.spec.provider.as_deref(),
        workspace.and_then(|w| w.provider.as_deref()),
    ) else {
        return Ok(None);
    };
    let providers = agent
        .map(|a| a.spec.providers.as_slice())
        .unwrap_or_default();
    match providers.iter().find(|p| p.name == name) {
        Some(found) => Ok(Some(found.clone())),
        None => Err(UnknownProvider {
            agent: obj.spec.agent.clone(),
            provider: name.to_owned(),
            known: provider::names(providers),
        }),
    }
}

/// The workspace's widening of the container's restrictions, as a recipe
/// pins it; `None` when it widens nothing.
fn wanted_security(workspace: Option<&WorkspaceSpec>) -> Option<PinnedSecurity> {
    let widened = workspace
        .and_then(|w| w.security.clone())
        .filter(|s| !s.is_empty())?;
    Some(PinnedSecurity {
        role: None,
        workspace: Some(widened),
    })
}

/// Pins what the role's `jackin.role.yaml` says at the built commit: its
/// idle commands and its widening of the container's restrictions, which
/// is refused unless the workspace's pinned allowance covers all of it.
pub fn pin_role_config(
    obj: &Instance,
    recipe: &mut Recipe,
    config: RoleConfig,
) -> Result<(), RoleWideningRefused> {
    if let Some(widened) = config.security.filter(|s| !s.is_empty()) {
        let allowed = workspace_security(recipe).and_then(|s| s.allow_role.as_ref());
        let unallowed = jackin_api::security::unallowed(&widened, allowed);
        if !unallowed.is_empty() {
            return Err(RoleWideningRefused {
                role: obj.spec.role.name.clone(),
                workspace: obj.spec.workspace.clone(),
                unallowed,
                allowance: jackin_api::security::allowance_for(&widened),
            });
        }
        recipe.security.get_or_insert_default().role = Some(widened);
    }
    recipe.idle_commands = config.idle.commands;
    Ok(())
}

/// The workspace's part of a pinned widening: what a spec can change.
pub fn workspace_security(recipe: &Recipe) -> Option<&SecuritySpec> {
    recipe.security.as_ref().and_then(|s| s.workspace.as_ref())
}

/// The name of the Docker daemon sidecar, and how the agent reaches it.
pub const DIND: &str = "dind";

/// The engine the spec asks for: the instance's `engine`, else its
/// workspace's; `None` for the one the environment selects.
pub fn wanted_engine(obj: &Instance, workspace: Option<&WorkspaceSpec>) -> Option<String> {
    obj.spec
        .engine
        .clone()
        .or_else(|| workspace.and_then(|w| w.engine.clone()))
}

/// Whether the agent runs as the operator's uid and gid: the instance's
/// `hostUser`, else its workspace's, else yes.
pub fn runs_as_host_user(obj: &Instance, workspace: Option<&WorkspaceSpec>) -> bool {
    obj.spec
        .host_user
        .or_else(|| workspace.and_then(|w| w.host_user))
        .unwrap_or(true)
}

/// The recipe fields on which the current spec disagrees with the pinned
/// recipe. The pinned session keeps running as pinned; this only explains.
pub fn drift(pinned: &Recipe, wanted: &Recipe) -> Vec<&'static str> {
    let mut fields = Vec::new();
    // An explicit image is compared by reference; a built one by its source.
    if !wanted.image.is_empty() && wanted.image != pinned.image {
        fields.push("image");
    }
    if wanted.role_source != pinned.role_source && wanted.image.is_empty() {
        fields.push("role.source.git");
    }
    if wanted.role_ref != pinned.role_ref && wanted.image.is_empty() {
        fields.push("role.source.ref");
    }
    // Without spec.command the image's default was pinned: nothing to compare.
    if !wanted.command.is_empty() && wanted.command != pinned.command {
        fields.push("command");
    }
    if wanted.mounts != pinned.mounts {
        fields.push("mounts");
    }
    // Without spec.workingDir the default was pinned: nothing to compare.
    if wanted.working_dir.is_some() && wanted.working_dir != pinned.working_dir {
        fields.push("workingDir");
    }
    if wanted.env != pinned.env {
        fields.push("env");
    }
    if wanted.sidecars != pinned.sidecars {
        fields.push("sidecars");
    }
    if wanted.ports != pinned.ports {
        fields.push("ports");
    }
    if wanted.setup != pinned.setup {
        fields.push("setup (the workspace's)");
    }
    // The role's part moves only with its commit (role.source above).
    if workspace_security(wanted) != workspace_security(pinned) {
        fields.push("security (the workspace's)");
    }
    // A session never moves between engines: its container, network and
    // volumes are where it was pinned.
    if wanted.engine != pinned.engine {
        fields.push("engine");
    }
    // Recipes pinned before the hand-off existed have none to compare.
    if pinned.credentials.is_some() && wanted.credentials != pinned.credentials {
        fields.push("credentials (authForward or a credential set)");
    }
    if wanted.provider != pinned.provider {
        fields.push("provider");
    }
    if wanted.operator_config != pinned.operator_config {
        fields.push("operatorConfig (the workspace's)");
    }
    // Recipes pinned before agents were data have no entry to compare.
    if pinned.agent.is_some() && compared_entry(wanted) != compared_entry(pinned) {
        fields.push("agent (its registry entry)");
    }
    fields
}

/// The part of a recipe's agent entry that a change of is a change of the
/// session: its credentials are compared apart, with the mode (so that a
/// session pinned before the hand-off existed reports no change of its
/// entry for them), `conversationsByDirectory` only tells a rollout what a
/// changed directory costs, nothing the session runs, and its `settings`
/// are applied at every start from the registry as it is then (a session
/// pinned before a setting existed gets it at its next start, with no
/// drift), as are the places of its `operatorConfig` (whether they are
/// copied at all is the recipe's `operatorConfig`, compared apart).
pub fn compared_entry(recipe: &Recipe) -> Option<(&str, AgentSpec, Strategy)> {
    recipe.agent.as_ref().map(|a| {
        let mut spec = a.spec.clone();
        spec.credentials = None;
        spec.conversations_by_directory = false;
        spec.settings = Vec::new();
        spec.operator_config = Vec::new();
        // The picked one is compared apart; the others are not the session's.
        spec.providers = Vec::new();
        (a.name.as_str(), spec, a.strategy)
    })
}

/// The directory the agent starts in, as far as the recipe decides it: its
/// `workingDir` (the spec's, else the workspace's), else the first mount's
/// destination (a checkout, usually: the agent starts where its work is).
/// `None`: the image's own, else the agent's home, known once the image is.
pub fn chosen_working_dir(recipe: &Recipe) -> Option<&str> {
    recipe
        .working_dir
        .as_deref()
        .or_else(|| recipe.mounts.first().map(|m| m.dst.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credential_changes_are_drift_said_once() {
        use jackin_api::credentials::{AuthForward, Credentials, PinnedCredentials};
        let agent = |credentials: Option<Credentials>| PinnedAgent {
            name: "claude".into(),
            source: "builtin".into(),
            spec: AgentSpec {
                launch: vec!["claude".into()],
                credentials,
                ..Default::default()
            },
            strategy: Strategy::None,
            version: None,
        };
        let creds = Credentials {
            login: Some("log in".into()),
            ..Default::default()
        };
        let wanted = Recipe {
            agent: Some(agent(Some(creds.clone()))),
            credentials: Some(PinnedCredentials {
                mode: AuthForward::Token,
                sets: vec![creds.named("claude")],
            }),
            ..Default::default()
        };
        let before = Recipe {
            agent: Some(agent(None)),
            credentials: None,
            ..Default::default()
        };
        assert_eq!(drift(&before, &wanted), Vec::<&str>::new());
        let synced = Recipe {
            credentials: Some(PinnedCredentials {
                mode: AuthForward::Sync,
                ..wanted.credentials.clone().unwrap()
            }),
            ..wanted.clone()
        };
        assert_eq!(
            drift(&synced, &wanted),
            ["credentials (authForward or a credential set)"]
        );
        assert_eq!(drift(&wanted, &wanted), Vec::<&str>::new());
    }

    /// An entry pinned before agents had settings (ce8d2f9's) is no
    /// different from the built-in that has them now: settings are applied
    /// at every start, never drift.
    #[test]
    fn settings_added_to_an_entry_are_no_drift() {
        let claude = || {
            jackin_api::agent::builtin()
                .into_iter()
                .find(|a| a.metadata.name == "claude")
                .unwrap()
                .spec
        };
        let pin = |spec: AgentSpec| Recipe {
            agent: Some(PinnedAgent {
                name: "claude".into(),
                source: "builtin".into(),
                spec,
                strategy: Strategy::Id,
                version: None,
            }),
            ..Default::default()
        };
        let wanted = pin(claude());
        assert!(!wanted.agent.as_ref().unwrap().spec.settings.is_empty());
        let before = pin(AgentSpec {
            settings: Vec::new(),
            ..claude()
        });
        assert_eq!(drift(&before, &wanted), Vec::<&str>::new());
        let relaunched = pin(AgentSpec {
            launch: vec!["claude2".into()],
            ..claude()
        });
        assert_eq!(drift(&before, &relaunched), ["agent (its registry entry)"]);
    }

    /// The built-in claude entry, as the recipe resolves it.
    fn builtin_claude() -> ResolvedAgent {
        let claude = jackin_api::agent::builtin()
            .into_iter()
            .find(|a| a.metadata.name == "claude")
            .unwrap();
        ResolvedAgent {
            name: "claude".into(),
            source: "builtin",
            spec: claude.spec,
        }
    }

    /// An instance with the built-in claude, picking `provider`, in a
    /// workspace that picks `workspace_pick`: what `wanted` pins.
    fn pinned_with(provider: Option<&str>, workspace_pick: Option<&str>) -> Recipe {
        let entry = builtin_claude();
        let obj = Instance {
            api_version: jackin_api::API_VERSION.into(),
            kind: "Instance".into(),
            metadata: Default::default(),
            spec: InstanceSpec {
                agent: "claude".into(),
                image: Some("jackin/test:1".into()),
                provider: provider.map(Into::into),
                ..Default::default()
            },
            status: None,
        };
        let workspace = WorkspaceSpec {
            provider: workspace_pick.map(Into::into),
            ..Default::default()
        };
        wanted(&obj, Some(&workspace), Some(&entry), "jk-x", None, "h")
    }

    /// The pick (the instance's, else its workspace's) is pinned as the
    /// entry defines it; with a key, claude's own login stays home (its
    /// account metadata, no secret, still goes); another pick is drift.
    #[test]
    fn a_provider_is_pinned_without_the_agents_login_and_a_change_is_drift() {
        let plain = pinned_with(None, None);
        assert_eq!(plain.provider, None);
        let own = &plain.credentials.as_ref().unwrap().sets[0];
        assert!(own.files.iter().any(|f| f.secret) && !own.env.is_empty());

        let zai = pinned_with(None, Some("zai"));
        let provider = zai.provider.as_ref().expect("the workspace's pick");
        assert_eq!(provider.name, "zai");
        assert_eq!(
            provider.key_reference().as_deref(),
            Some("hostEnv ZAI_API_KEY")
        );
        let sets = &zai.credentials.as_ref().unwrap().sets;
        assert_eq!(sets.len(), 1);
        assert!(sets[0].files.iter().all(|f| !f.secret), "{sets:?}");
        assert!(sets[0].env.is_empty(), "no login variable either");
        assert_eq!(
            pinned_with(Some("zai"), Some("kimi")).provider,
            zai.provider
        );

        // The vendor's own provider keeps claude's login.
        let anthropic = pinned_with(Some("anthropic"), None);
        assert_eq!(anthropic.credentials, plain.credentials);

        assert_eq!(drift(&zai, &zai), Vec::<&str>::new());
        let kimi = pinned_with(Some("kimi"), None);
        assert_eq!(drift(&zai, &kimi), ["provider"]);
        // Picked or dropped, the login's hand-off changes with it.
        let picked = ["credentials (authForward or a credential set)", "provider"];
        assert_eq!(drift(&plain, &zai), picked);
        assert_eq!(drift(&zai, &plain), picked);
        // A recipe pinned before providers existed, with none picked: none.
        let before = Recipe {
            provider: None,
            ..plain.clone()
        };
        assert_eq!(drift(&before, &plain), Vec::<&str>::new());
    }

    /// A pick the entry lacks pins none (drift shows it) and is refused at
    /// launch with what the entry has.
    #[test]
    fn an_unknown_provider_is_refused_with_the_entrys_names() {
        assert_eq!(pinned_with(Some("nope"), None).provider, None);
        let entry = builtin_claude();
        let mut obj: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": jackin_api::API_VERSION, "kind": "Instance",
            "metadata": {"name": "a"},
            "spec": {"agent": "claude", "image": "x", "role": {"name": "r"}, "provider": "nope"}
        }))
        .unwrap();
        let err = wanted_provider(&obj, None, Some(&entry)).unwrap_err();
        assert_eq!(
            err.to_string(),
            "agent \"claude\" has no provider \"nope\": its entry has anthropic, zai, minimax, \
             kimi; `jackin get providers` lists them, and an applied Agent entry adds one"
        );
        obj.spec.provider = None;
        assert_eq!(wanted_provider(&obj, None, Some(&entry)).unwrap(), None);
    }

    /// A provider's arguments follow the agent's program, not another one.
    #[test]
    fn a_providers_arguments_go_to_the_agents_program_only() {
        let entry = ResolvedAgent {
            name: "opencode".into(),
            source: "builtin",
            spec: AgentSpec {
                launch: vec!["opencode".into()],
                ..Default::default()
            },
        };
        let zai = provider::builtin_for("opencode").remove(1);
        let spec = InstanceSpec::default();
        let (command, _) = pin_agent(&spec, None, Some(&entry), Some(&zai));
        assert_eq!(command, ["opencode", "-m", "zai-coding-plan/glm-4.6"]);
        let other = InstanceSpec {
            command: Some(vec!["sh".into()]),
            ..Default::default()
        };
        assert_eq!(pin_agent(&other, None, Some(&entry), Some(&zai)).0, ["sh"]);
    }

    /// The workspace's `operatorConfig` is pinned: turning it on or off is
    /// drift; a recipe pinned before it (none) and `none` are the same.
    #[test]
    fn a_changed_operator_config_is_drift() {
        let none = Recipe::default();
        let sync = Recipe {
            operator_config: Some(OperatorConfigMode::Sync),
            ..Default::default()
        };
        assert_eq!(drift(&none, &none), Vec::<&str>::new());
        assert_eq!(drift(&none, &sync), ["operatorConfig (the workspace's)"]);
        assert_eq!(drift(&sync, &none), ["operatorConfig (the workspace's)"]);
    }

    /// A workspace that widens the container, or widens it otherwise, is
    /// drift; the role's widening, pinned with its commit, is not compared.
    #[test]
    fn a_changed_workspace_widening_is_drift_and_the_roles_is_not() {
        let widening = |pids: i64| SecuritySpec {
            pids_limit: Some(pids),
            ..Default::default()
        };
        let workspace = |pids: Option<i64>| WorkspaceSpec {
            security: pids.map(widening),
            ..Default::default()
        };
        let recipe = |ws: &WorkspaceSpec| Recipe {
            security: wanted_security(Some(ws)),
            ..Default::default()
        };
        let pinned = recipe(&workspace(None));
        assert_eq!(drift(&pinned, &pinned), Vec::<&str>::new());
        let widened = recipe(&workspace(Some(64)));
        assert_eq!(drift(&pinned, &widened), ["security (the workspace's)"]);
        assert_eq!(
            drift(&widened, &recipe(&workspace(Some(128)))),
            ["security (the workspace's)"]
        );
        // An empty block widens nothing: no drift against none.
        let empty = WorkspaceSpec {
            security: Some(SecuritySpec::default()),
            ..Default::default()
        };
        assert_eq!(drift(&pinned, &recipe(&empty)), Vec::<&str>::new());
        let role_widened = Recipe {
            security: Some(PinnedSecurity {
                role: Some(widening(64)),
                workspace: None,
            }),
            ..Default::default()
        };
        assert_eq!(drift(&role_widened, &pinned), Vec::<&str>::new());
    }

    #[test]
    fn home_expansion() {
        let home = Some(Path::new("/home/op"));
        assert_eq!(expand_home("~/src/app", home), "/home/op/src/app");
        assert_eq!(expand_home("~", home), "/home/op");
        assert_eq!(expand_home("~other/x", home), "~other/x");
        assert_eq!(expand_home("/abs", home), "/abs");
    }
}
