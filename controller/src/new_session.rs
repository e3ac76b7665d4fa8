//! A new session of a (workspace, role, agent), as `jackin launch` starts
//! one: the spec it starts from and its name.
//!
//! The spec comes from, in order: a template the operator gave (`--from`);
//! the workspace's `spec.roles` entry for the role with the agent from the
//! registry, whenever the workspace declares the role; else the spec of the
//! most recently used healthy session of the trio. A `Failed` session's spec
//! is never copied: a new session would only fail the same way.

use jackin_api::instance::RoleRef;
use jackin_api::names::is_jackin_key;
use jackin_api::{DesiredPhase, Instance, InstancePhase, InstanceSpec, ObjectMeta};
use jiff::Timestamp;

use crate::store::{Store, StoreError};

/// What a new session is a session of.
#[derive(Debug, Clone, Copy)]
pub struct Trio<'a> {
    pub workspace: &'a str,
    pub role: &'a str,
    pub agent: &'a str,
}

impl Trio<'_> {
    /// Whether `obj` is a session of this trio that is not being purged.
    pub fn holds(&self, obj: &Instance) -> bool {
        obj.spec.workspace.as_deref() == Some(self.workspace)
            && obj.spec.role.name == self.role
            && obj.spec.agent == self.agent
            && obj.desired_phase() != DesiredPhase::Purged
    }
}

impl std::fmt::Display for Trio<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({}) · workspace {}",
            self.role, self.agent, self.workspace
        )
    }
}

/// Where a new session's spec came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Basis {
    /// The operator's template (`--from FILE`).
    Template,
    /// The workspace's `spec.roles` entry, with the agent from the registry.
    WorkspaceRole,
    /// The spec of this session of the trio: the workspace does not declare
    /// the role.
    Session(String),
}

impl std::fmt::Display for Basis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Template => f.write_str("the --from file"),
            Self::WorkspaceRole => f.write_str("the workspace's role"),
            Self::Session(name) => write!(
                f,
                "instance/{name}'s spec (the workspace does not declare the role)"
            ),
        }
    }
}

/// A new session before it is created: its spec, with the name its
/// template gave (empty when none did), and where the spec came from.
#[derive(Debug, Clone)]
pub struct NewSession {
    pub instance: Instance,
    pub basis: Basis,
}

#[derive(Debug, thiserror::Error)]
pub enum NewSessionError {
    #[error("workspace {0:?} not found")]
    WorkspaceNotFound(String),
    #[error(transparent)]
    NoBasis(Box<NoBasis>),
    #[error("no agent is named {agent:?}{suggestion}")]
    UnknownAgent {
        agent: String,
        /// `; did you mean "X"?`, or empty.
        suggestion: String,
    },
    #[error("{why}")]
    InvalidName { why: String },
    #[error(
        "an instance named {name:?} already exists, so a new session cannot take the name; \
         nothing was created"
    )]
    NameTaken { name: String },
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// Nothing to start a new session from: the workspace does not declare
/// the role, and the trio has no healthy session.
#[derive(Debug, thiserror::Error)]
#[error(
    "workspace {workspace} names no role {role:?}{suggestion} (it names {declared}), and \
     {role} ({agent}) has no healthy session there to start from{failed}"
)]
pub struct NoBasis {
    pub workspace: String,
    pub role: String,
    pub agent: String,
    /// `; did you mean "X"?`, or empty.
    pub suggestion: String,
    /// The declared roles, or `none`.
    pub declared: String,
    /// Which failed sessions were passed over, or empty.
    pub failed: String,
}

/// The spec a new session of `trio` starts from (see the module's
/// documentation), with the workspace, role and agent set to the trio's
/// and the desired phase `Running`. A template keeps its name; otherwise
/// the name is left empty for the caller to choose.
pub fn prepare(
    store: &Store,
    trio: Trio<'_>,
    template: Option<Instance>,
) -> Result<NewSession, NewSessionError> {
    let (mut instance, basis) = match template {
        Some(template) => (template, Basis::Template),
        None => from_workspace_or_session(store, trio)?,
    };
    check_agent(store, trio.agent)?;
    // Only the operator's labels: a copied session's could otherwise carry
    // a source's ownership over to a session no source wrote.
    let labels = std::mem::take(&mut instance.metadata.labels)
        .into_iter()
        .filter(|(key, _)| !is_jackin_key(key))
        .collect();
    instance.metadata = ObjectMeta {
        name: std::mem::take(&mut instance.metadata.name),
        labels,
        ..Default::default()
    };
    instance.status = None;
    instance.spec.phase = DesiredPhase::Running;
    instance.spec.workspace = Some(trio.workspace.to_owned());
    instance.spec.role.name = trio.role.to_owned();
    instance.spec.agent = trio.agent.to_owned();
    Ok(NewSession { instance, basis })
}

/// The workspace's role, else the latest healthy session's spec.
fn from_workspace_or_session(
    store: &Store,
    trio: Trio<'_>,
) -> Result<(Instance, Basis), NewSessionError> {
    let workspace = store
        .get_workspace(trio.workspace)?
        .ok_or_else(|| NewSessionError::WorkspaceNotFound(trio.workspace.to_owned()))?;
    let roles = &workspace.spec.roles;
    if let Some(role) = roles.iter().find(|r| r.name == trio.role) {
        let instance = Instance {
            api_version: jackin_api::API_VERSION.into(),
            kind: Instance::KIND.into(),
            metadata: ObjectMeta::default(),
            // Everything else (mounts, the exit policy, the engine, a Docker
            // daemon) is the workspace's, taken in when the recipe is pinned.
            spec: InstanceSpec {
                role: RoleRef {
                    name: role.name.clone(),
                    source: role.source.clone(),
                },
                image: role.image.clone(),
                ..Default::default()
            },
            status: None,
        };
        return Ok((instance, Basis::WorkspaceRole));
    }
    let (healthy, failed): (Vec<Instance>, Vec<Instance>) = store
        .list_instances()?
        .instances
        .into_iter()
        .filter(|obj| trio.holds(obj))
        .partition(is_healthy);
    if let Some(latest) = healthy.into_iter().max_by_key(last_used) {
        let name = latest.metadata.name.clone();
        let mut instance = latest;
        // A new session has a conversation of its own.
        instance.spec.conversation_id = None;
        return Ok((instance, Basis::Session(name)));
    }
    let declared: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
    Err(NewSessionError::NoBasis(Box::new(NoBasis {
        workspace: trio.workspace.to_owned(),
        role: trio.role.to_owned(),
        agent: trio.agent.to_owned(),
        suggestion: did_you_mean(trio.role, declared.iter().copied()),
        declared: match declared.is_empty() {
            true => "none".to_owned(),
            false => declared.join(", "),
        },
        failed: match failed.is_empty() {
            true => String::new(),
            false => format!(
                " (a failed session's spec is never copied: {})",
                failed
                    .iter()
                    .map(|obj| format!("instance/{}", obj.metadata.name))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        },
    })))
}

/// The agent is in the registry, applied or built in.
fn check_agent(store: &Store, agent: &str) -> Result<(), NewSessionError> {
    if store.resolve_agent(agent)?.is_some() {
        return Ok(());
    }
    let agents = store.agents()?;
    let known = agents.iter().map(|(a, _)| a.metadata.name.as_str());
    Err(NewSessionError::UnknownAgent {
        agent: agent.to_owned(),
        suggestion: did_you_mean(agent, known),
    })
}

/// Whether a session's spec may start another: it has not failed for a
/// reason retrying cannot fix (`Failed`, or failures still counting).
pub fn is_healthy(obj: &Instance) -> bool {
    let failed = obj.phase() == Some(InstancePhase::Failed);
    !failed && obj.failures().is_none()
}

/// When a session was last in use: when its last session ended, it was
/// settled or restored, else when it was created.
pub fn last_used(obj: &Instance) -> Option<Timestamp> {
    let status = obj.status.as_ref();
    [
        status
            .and_then(|s| s.session.as_ref())
            .and_then(|s| s.finished_at),
        status.and_then(|s| s.settled.as_ref()).map(|s| s.at),
        status.and_then(|s| s.restore.as_ref()).map(|r| r.at),
        obj.metadata.creation_timestamp,
    ]
    .into_iter()
    .flatten()
    .max()
}

/// A name the operator chose for a new session: a valid instance name that
/// no instance has now.
pub fn check_name(store: &Store, name: &str) -> Result<(), NewSessionError> {
    jackin_api::validate::dns_label(name).map_err(|why| NewSessionError::InvalidName { why })?;
    match store.get_instance(name) {
        Ok(_) => Err(NewSessionError::NameTaken {
            name: name.to_owned(),
        }),
        Err(StoreError::InstanceNotFound(_)) => Ok(()),
        Err(e) => Err(e.into()),
    }
}

/// `<role>-<n>` with the smallest `n` no instance has now.
pub fn free_name(store: &Store, role: &str) -> Result<String, StoreError> {
    let taken: Vec<String> = store.rows()?.into_iter().map(|r| r.name).collect();
    // Room for `-<n>` within the 63 characters of a name.
    let base: String = role.chars().take(56).collect();
    Ok((1..)
        .map(|n| format!("{base}-{n}"))
        .find(|name| !taken.contains(name))
        .expect("some n is free"))
}

/// `; did you mean "X"?` when one of `known` is close to `name`.
fn did_you_mean<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> String {
    jackin_api::suggest::closest(name, known)
        .map_or_else(String::new, |k| format!("; did you mean {k:?}?"))
}
