//! The `Workspace` resource: a GitOps-style policy file for a workspace's instances.

use std::collections::BTreeMap;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::credentials::{AuthForward, CredentialSet};
use crate::instance::{Instance, MountSpec};
use crate::meta::ObjectMeta;
use crate::names::annotation;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Workspace {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: WorkspaceSpec,
}

impl Workspace {
    pub const KIND: &'static str = "Workspace";
}

/// What happens when a session in this workspace ends cleanly.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ExitPolicy {
    /// Clean up automatically unless an isolated mount has unfinished work; then ask.
    #[default]
    Ask,
    /// Always keep the instance, resumable later.
    Keep,
    /// Always clean up, without asking.
    #[serde(alias = "discard")]
    Clean,
}

impl ExitPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Ask => "ask",
            Self::Keep => "keep",
            Self::Clean => "clean",
        }
    }

    /// The value of the annotation `jackin.dev/launch-exit-policy` for a
    /// launch that asks for this policy at `at` (see [`ExitPolicy::launched`]).
    pub fn for_launch_at(self, at: jiff::Timestamp) -> String {
        format!("{}@{at}", self.as_str())
    }

    /// The exit policy `obj`'s own annotations set, before its workspace's:
    /// a launch's for the session it started ([`ExitPolicy::launched`]),
    /// else the operator's lasting `jackin.dev/exit-policy`.
    pub fn overridden(obj: &Instance) -> Option<Self> {
        let lasting = obj
            .metadata
            .annotations
            .get(annotation::EXIT_POLICY)
            .and_then(|word| word.parse().ok());
        Self::launched(obj).or(lasting)
    }

    /// The exit policy `jackin launch --keep` / `--clean` chose (annotation
    /// `jackin.dev/launch-exit-policy`, `POLICY@TIME`), while it is still
    /// that launch's session: it no longer counts once a settlement is
    /// recorded at or after its time (that session ended and was settled,
    /// whoever settled it, so any later session is another one), and the
    /// next resume without the flag removes it (for a session that ended
    /// unsettled, `Crashed`, and is resumed).
    pub fn launched(obj: &Instance) -> Option<Self> {
        let value = obj
            .metadata
            .annotations
            .get(annotation::LAUNCH_EXIT_POLICY)?;
        let (policy, at) = value.split_once('@')?;
        let at: jiff::Timestamp = at.parse().ok()?;
        let settled = obj.status.as_ref().and_then(|s| s.settled.as_ref());
        if settled.is_some_and(|settled| settled.at >= at) {
            return None;
        }
        policy.parse().ok()
    }
}

/// The words a manifest's `exitPolicy` and the `jackin.dev/exit-policy`
/// annotation take: `ask`, `keep`, `clean`, and `discard` for `clean`.
impl std::str::FromStr for ExitPolicy {
    type Err = String;

    fn from_str(word: &str) -> Result<Self, Self::Err> {
        match word {
            "ask" => Ok(Self::Ask),
            "keep" => Ok(Self::Keep),
            "clean" | "discard" => Ok(Self::Clean),
            other => Err(format!(
                "{other:?} is not an exit policy: expected ask, keep or clean"
            )),
        }
    }
}

/// A role a workspace's sessions run: its repository (built at launch), or
/// a local image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceRole {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<crate::instance::RoleSource>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct WorkspaceSpec {
    #[serde(default)]
    pub exit_policy: ExitPolicy,
    #[serde(default, skip_serializing_if = "KeepPolicy::is_unbounded")]
    pub keep: KeepPolicy,
    /// Mounts every instance of this workspace gets.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<MountSpec>,
    /// The roles its sessions run: where each one's image comes from, so
    /// that `jackin launch -w W -r ROLE -a AGENT` starts a new session of a
    /// declared role from it, with no template.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub roles: Vec<WorkspaceRole>,
    /// The default of `spec.hostUser` for the workspace's instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_user: Option<bool>,
    /// The default of `spec.dind` for the workspace's instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dind: Option<crate::instance::DindSpec>,
    /// The default of `spec.engine` for the workspace's instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The default of `spec.workingDir` for the workspace's instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// Idle hooks: what to run in an agent's container once it has been
    /// idle for a while. Off unless `enabled`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdlePolicy>,
    /// The default of `spec.authForward` for the workspace's instances:
    /// how the operator's logins reach them (`sync` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_forward: Option<AuthForward>,
    /// The default of `spec.provider` for the workspace's instances.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// Whether the operator's own agent setup (the files each `Agent`
    /// entry lists in `operatorConfig`) is copied into the workspace's
    /// sessions before every start: `sync`, or `none` (when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_config: Option<crate::operator_config::OperatorConfigMode>,
    /// The default of `spec.updatePolicy` for the workspace's instances
    /// (`Manual` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_policy: Option<crate::instance::UpdatePolicy>,
    /// Credential sets forwarded to every session, whatever its agent, as
    /// the agent's own are: a name alone for a built-in set (`{name: gh}`),
    /// or a set of files and variables.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub credentials: Vec<CredentialSet>,
    /// How long an agent that printed and then went quiet, with nobody
    /// attached, waits before it shows `needs you` (`30s` when omitted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub needs_you_after: Option<String>,
    /// A command run on the host when one of the workspace's instances
    /// needs you, ends, fails or is discarded. Off when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub notify: Option<NotifyPolicy>,
    /// Widens the containers' restrictions for the workspace's sessions
    /// (capabilities, new privileges, processes, log size).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<crate::security::SecuritySpec>,
    /// The agents' settings jackin sets before every start (an `Agent`
    /// entry's `settings`, and `retention`), by name: `false` turns one
    /// off for the workspace's sessions (`{trust: false}` brings the
    /// agent's trust question back). A name no agent has changes nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub agent_settings: BTreeMap<String, bool>,
    /// Whether removing one of the workspace's sessions saves its agent's
    /// conversation under `discarded/` first, as discarded work is saved
    /// (on when omitted; `false` lets the conversation go with the unit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub save_conversations: Option<bool>,
    /// Whether the workspace's sessions resume their agent's conversation
    /// at each start (on when omitted). `false` starts every agent anew, at
    /// every restore, whatever an instance's own `resume` says: a switch
    /// for the whole workspace, as the seed's master switch is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume_conversations: Option<bool>,
    /// Ports of each session's container published on the host, each on
    /// a host port of the session's own (an instance's entry of the same
    /// name replaces one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<crate::ports::PortSpec>,
    /// A command each session runs once, at its first start, before the
    /// agent (see [`crate::setup`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<crate::setup::SetupSpec>,
}

impl WorkspaceSpec {
    /// Whether a removal saves the session's conversation first.
    pub fn saves_conversations(&self) -> bool {
        self.save_conversations != Some(false)
    }

    /// Whether its sessions may resume their conversations.
    pub fn resumes_conversations(&self) -> bool {
        self.resume_conversations != Some(false)
    }

    /// Whether the workspace turned off the agent setting `name`.
    pub fn turns_off(&self, name: &str) -> bool {
        self.agent_settings.get(name) == Some(&false)
    }
}

/// `spec.needsYouAfter` when omitted.
pub const DEFAULT_NEEDS_YOU_AFTER: &str = "30s";

/// The operator's command, told of an instance's transitions. It is an
/// argv run as it is (never through a shell); the event reaches it only in
/// its environment (`JACKIN_INSTANCE`, `JACKIN_EVENT`, `JACKIN_WORKSPACE`),
/// and nothing in it comes from the agent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NotifyPolicy {
    /// The argv: the program, then its arguments.
    pub command: Vec<String>,
    /// How long it may run before it is killed.
    #[serde(default = "default_notify_timeout")]
    pub timeout: String,
    /// The least time between two runs for one instance and one event:
    /// an agent that flaps between working and quiet notifies once.
    #[serde(default = "default_notify_interval")]
    pub min_interval: String,
}

fn default_notify_timeout() -> String {
    "10s".to_owned()
}

fn default_notify_interval() -> String {
    "60s".to_owned()
}

/// When and what to run in an idle agent's container.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdlePolicy {
    /// Whether the hooks run at all; the operator opts in.
    #[serde(default)]
    pub enabled: bool,
    /// How long the agent must have been idle (no terminal attached, no
    /// output, next to no CPU) before the first run: `90s`, `5m`, `1h`.
    pub after: String,
    /// How often they run again while it stays idle; `after` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub every: Option<String>,
    /// How long each command may take before it is killed.
    #[serde(default = "default_idle_timeout")]
    pub timeout: String,
    /// Commands (argv lists) run in sequence with `docker exec`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub commands: Vec<Vec<String>>,
    /// Whether the role's own idle commands (its `jackin.role.yaml`) run
    /// first (`run`), or only these (`skip`).
    #[serde(default, skip_serializing_if = "RoleCommands::is_run")]
    pub role_commands: RoleCommands,
    /// What happens after the commands.
    #[serde(default, skip_serializing_if = "IdleThen::is_none")]
    pub then: IdleThen,
}

fn default_idle_timeout() -> String {
    "60s".to_owned()
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RoleCommands {
    /// The role's commands run, then the workspace's.
    #[default]
    Run,
    /// Only the workspace's commands run.
    Skip,
}

impl RoleCommands {
    fn is_run(&self) -> bool {
        *self == Self::Run
    }
}

/// What happens to an idle agent after its idle commands.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum IdleThen {
    /// It keeps running.
    #[default]
    None,
    /// Its container is recycled: a new one in the same unit, as a tier-2
    /// restore makes, resuming the agent's conversation.
    Restart,
    /// It moves to `Kept`, resumable later.
    Keep,
}

impl IdleThen {
    fn is_none(&self) -> bool {
        *self == Self::None
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::None => "none",
            Self::Restart => "restart",
            Self::Keep => "keep",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct KeepPolicy {
    /// Most `Kept` instances per (workspace, role, agent); unbounded when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max: Option<u32>,
}

impl KeepPolicy {
    fn is_unbounded(&self) -> bool {
        self.max.is_none()
    }
}

#[cfg(test)]
mod tests {
    use jiff::Timestamp;

    use super::ExitPolicy;
    use crate::instance::{Instance, SettledBy};
    use crate::names::annotation;

    /// A launch's `--keep` counts for its session only: a settlement at or
    /// after it ends it, and the instance's lasting annotation (or, with
    /// none, the workspace's policy) governs the next session.
    #[test]
    fn a_launchs_exit_policy_ends_with_the_settlement_of_its_session() {
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        let mut obj: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": crate::API_VERSION,
            "kind": "Instance",
            "metadata": {"name": "a", "annotations": {annotation::EXIT_POLICY: "ask"}},
            "spec": {"role": {"name": "r"}, "agent": "claude", "image": "i"},
        }))
        .unwrap();
        assert_eq!(ExitPolicy::overridden(&obj), Some(ExitPolicy::Ask));
        // An earlier session's settlement does not end it.
        obj.settle(crate::DesiredPhase::Kept, SettledBy::ExitPolicy, None, t(1));
        obj.metadata.annotations.insert(
            annotation::LAUNCH_EXIT_POLICY.to_owned(),
            ExitPolicy::Keep.for_launch_at(t(2)),
        );
        assert_eq!(ExitPolicy::launched(&obj), Some(ExitPolicy::Keep));
        assert_eq!(ExitPolicy::overridden(&obj), Some(ExitPolicy::Keep));
        obj.settle(crate::DesiredPhase::Kept, SettledBy::ExitPolicy, None, t(3));
        assert_eq!(ExitPolicy::launched(&obj), None);
        assert_eq!(ExitPolicy::overridden(&obj), Some(ExitPolicy::Ask));
        obj.metadata.annotations.remove(annotation::EXIT_POLICY);
        assert_eq!(ExitPolicy::overridden(&obj), None);
    }

    #[test]
    fn an_exit_policy_reads_back_what_it_writes_and_the_discard_alias() {
        for policy in [ExitPolicy::Ask, ExitPolicy::Keep, ExitPolicy::Clean] {
            assert_eq!(policy.as_str().parse(), Ok(policy));
        }
        assert_eq!("discard".parse(), Ok(ExitPolicy::Clean));
        assert!(
            "Keep"
                .parse::<ExitPolicy>()
                .unwrap_err()
                .contains("expected ask, keep or clean")
        );
    }
}
