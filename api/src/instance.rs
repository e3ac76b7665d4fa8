//! The `Instance` resource: one agent session environment.
//!
//! The spec is the operator's intent; the status is jackin's observation
//! and its own decisions: the pinned recipe, how the last session ended,
//! a settlement of an ended session (which [`Instance::desired_phase`]
//! carries on until the spec changes or the operator resumes), and the
//! failures that count toward giving up ([`Instance::gave_up`]: at
//! [`MAX_FAILED_ATTEMPTS`] in a row under one spec, never toward
//! `Purged`).

use std::collections::BTreeMap;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent::{AgentSpec, Strategy};
use crate::credentials::{AuthForward, PinnedCredentials};
// The environment's types live below both this and `credentials`; their
// old paths (`instance::EnvVar`) stay valid for the crates above.
pub use crate::env::{EnvSource, EnvVar, MAX_VALUE_BYTES};
use crate::meta::{Condition, ObjectMeta};

/// One agent session: what should run (spec) and what jackin last saw (status).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Instance {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    pub spec: InstanceSpec,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<InstanceStatus>,
}

impl Instance {
    pub const KIND: &'static str = "Instance";

    /// A warning when this kept session ended longer ago than its agent
    /// keeps a conversation, and jackin has no setting to keep it longer:
    /// the agent may have deleted the conversation, and the next start
    /// would then begin anew.
    pub fn retention_warning(&self, now: Timestamp) -> Option<String> {
        let status = self.status.as_ref()?;
        if status.phase != Some(InstancePhase::Kept) {
            return None;
        }
        let agent = status.recipe.as_ref()?.agent.as_ref()?;
        let retention = agent.spec.retention.as_ref()?;
        if retention.setting.is_some() || agent.strategy == Strategy::None {
            return None;
        }
        let ended = status.session.as_ref()?.finished_at?;
        let days = now.duration_since(ended).as_secs() / 86_400;
        (days >= i64::from(retention.days)).then(|| {
            format!(
                "{} deletes a conversation {} days after its last activity, and this session \
                 ended {days} days ago: its conversation may be gone, and the next start may \
                 begin anew",
                agent.name, retention.days
            )
        })
    }

    /// The instance's container name (its unit's name), once jackin has
    /// given it one.
    pub fn container_name(&self) -> Option<&str> {
        self.status.as_ref()?.container_name.as_deref()
    }

    /// The phase jackin last observed; `None` before the first observation.
    pub fn phase(&self) -> Option<InstancePhase> {
        self.status.as_ref()?.phase
    }

    /// The launch recipe pinned for the instance, once pinned.
    pub fn recipe(&self) -> Option<&Recipe> {
        self.status.as_ref()?.recipe.as_ref()
    }

    /// The status, defaulted when the object has never been observed;
    /// borrowed, not copied (a pinned recipe makes it the bulk of the
    /// object, and a table of hundreds reads each once).
    pub fn status_or_default(&self) -> std::borrow::Cow<'_, InstanceStatus> {
        self.status
            .as_ref()
            .map_or_else(Default::default, std::borrow::Cow::Borrowed)
    }

    /// The phase the loop drives the instance toward. The spec says what
    /// the operator wants; a settlement in the status (how an ended session
    /// was settled: by the exit policy, the operator's answer, the keep cap)
    /// can only carry it further along `Running → Kept → Purged`, and only
    /// while the spec is the one it was settled under and the operator has
    /// not asked to resume since (annotation [`annotation::RESUME`]).
    ///
    /// [`annotation::RESUME`]: crate::names::annotation::RESUME
    pub fn desired_phase(&self) -> DesiredPhase {
        match self.settlement() {
            Some(settled) => self.spec.phase.max(settled.phase),
            None => self.spec.phase,
        }
    }

    /// Records how an ended session is settled (a status write: the
    /// operator's spec stays as it is): `phase` stands in for the spec's
    /// until the spec changes or the operator resumes the instance.
    pub fn settle(
        &mut self,
        phase: DesiredPhase,
        by: SettledBy,
        acknowledged: Option<String>,
        at: Timestamp,
    ) {
        let generation = self.metadata.generation;
        self.status.get_or_insert_default().settled = Some(Settlement {
            phase,
            by,
            at,
            generation,
            acknowledged,
        });
    }

    /// The operator-owned part of the manifest (spec, labels, and the
    /// annotations not under `jackin.dev/`), as an apply compares it.
    pub fn operator_manifest(&self) -> serde_json::Value {
        let annotations: BTreeMap<&String, &String> = self
            .metadata
            .annotations
            .iter()
            .filter(|(key, _)| !key.starts_with("jackin.dev/"))
            .collect();
        serde_json::json!({
            "spec": self.spec,
            "labels": self.metadata.labels,
            "annotations": annotations,
        })
    }

    /// The settlement that stands, if any (see [`Instance::desired_phase`]).
    pub fn settlement(&self) -> Option<&Settlement> {
        let settled = self.status.as_ref()?.settled.as_ref()?;
        let same_spec = settled.generation == self.metadata.generation;
        (same_spec && !self.resumed_since(settled.at)).then_some(settled)
    }

    /// Whether the operator asked to resume (annotation
    /// [`annotation::RESUME`]) after `at`.
    ///
    /// [`annotation::RESUME`]: crate::names::annotation::RESUME
    fn resumed_since(&self, at: Timestamp) -> bool {
        self.metadata
            .annotations
            .get(crate::names::annotation::RESUME)
            .and_then(|resumed| resumed.parse::<Timestamp>().ok())
            .is_some_and(|resumed| resumed > at)
    }

    /// The failed attempts that still count: made under this spec, and not
    /// followed by a request to resume (`set-phase running`). A changed spec
    /// or a resume starts the count again.
    pub fn failures(&self) -> Option<&Failures> {
        let failures = self.status.as_ref()?.failures.as_ref()?;
        let same_spec = failures.generation == self.metadata.generation;
        (same_spec && !self.resumed_since(failures.since)).then_some(failures)
    }

    /// The failures after which the loop stopped trying, if it did: at
    /// least [`MAX_FAILED_ATTEMPTS`] that still count, toward a phase other
    /// than `Purged` (a purge is always tried: it may need no engine).
    pub fn gave_up(&self) -> Option<&Failures> {
        self.failures().filter(|failures| {
            failures.attempts >= MAX_FAILED_ATTEMPTS && self.desired_phase() != DesiredPhase::Purged
        })
    }

    /// Counts one more failed attempt, saying `cause`; the first of a new
    /// count (after a changed spec or a resume) starts at one. Returns the
    /// attempts that count now.
    pub fn count_failure(&mut self, cause: &str, now: Timestamp) -> u32 {
        let attempts = self.failures().map_or(0, |f| f.attempts) + 1;
        let since = match self.failures() {
            Some(failures) => failures.since,
            None => now,
        };
        let generation = self.metadata.generation;
        self.status.get_or_insert_default().failures = Some(Failures {
            attempts,
            generation,
            since,
            cause: cause.to_owned(),
        });
        attempts
    }
}

/// The phase an operator asks for. Ordered as a session moves on:
/// `Running < Kept < Purged`.
#[derive(
    Debug,
    Clone,
    Copy,
    Default,
    PartialEq,
    Eq,
    PartialOrd,
    Ord,
    Hash,
    Serialize,
    Deserialize,
    JsonSchema,
)]
pub enum DesiredPhase {
    /// A container runs the agent; restored through the ladder when it is gone.
    #[default]
    Running,
    /// No container; the unit directory and checkouts stay, restorable.
    Kept,
    /// Everything of the instance is removed, then the object itself.
    Purged,
}

impl DesiredPhase {
    pub const ALL: [DesiredPhase; 3] = [Self::Running, Self::Kept, Self::Purged];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Running => "Running",
            Self::Kept => "Kept",
            Self::Purged => "Purged",
        }
    }
}

impl std::fmt::Display for DesiredPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceSpec {
    /// Desired phase; `Running` when omitted.
    #[serde(default)]
    pub phase: DesiredPhase,
    /// Name of the Workspace policy this instance belongs to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    pub role: RoleRef,
    /// The agent to run: claude, codex, aider, …
    pub agent: String,
    /// A local image to run instead of building the role.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Overrides the agent's launch argv. When it runs the agent's own
    /// program (the same file name as the entry's launch argv), the agent's
    /// resume arguments are appended to it; otherwise it runs as given and
    /// nothing is resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Whether each start resumes the agent's conversation; `false` starts
    /// it anew every time.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub resume: bool,
    /// The conversation id to start or resume, for an agent that takes
    /// ids; jackin mints one when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// Whether the agent runs as the uid and gid of the operator running
    /// jackin (the default, also settable on the workspace), so that what
    /// it writes on the host is the operator's; `false` keeps the image's
    /// user.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host_user: Option<bool>,
    /// A Docker daemon of the agent's own, as a sidecar reachable as `dind`
    /// (also settable as a workspace default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dind: Option<DindSpec>,
    /// The Docker engine the instance runs on: a `docker context` name, or
    /// an address as `DOCKER_HOST` takes it (`unix:///…`, `tcp://…`). The
    /// workspace's when omitted, else the one the environment selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The directory the agent starts in (absolute, in the container). The
    /// workspace's when omitted, else the first mount's destination, else
    /// the image's working directory, else the agent's home. Pinned with
    /// the recipe: every tier starts in the same place, where agents look
    /// for "the latest conversation here" and for the repository.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// How the operator's login reaches the agent: `sync` (the host's
    /// credential files copied in at every start), `token` (the credential
    /// variables passed from their references) or `none`. The workspace's
    /// when omitted, else `sync`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_forward: Option<AuthForward>,
    /// The provider, one of the agent entry's `providers`, that the agent
    /// is sent to with that provider's key instead of the operator's login
    /// (`zai`); the workspace's when omitted, else none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub provider: Option<String>,
    /// How a changed spec reaches the running session: `Manual` (only
    /// `jackin rollout`) or `OnDrift` (the loop rolls it out by itself
    /// when nobody is attached and the agent is idle, or at the next
    /// start). The workspace's when omitted, else `Manual`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub update_policy: Option<UpdatePolicy>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<MountSpec>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sidecars: Vec<Sidecar>,
    /// Ports of the agent's container published on the host, each on a
    /// host port of the instance's own from the home's pool; an entry
    /// replaces the workspace's of the same name.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<crate::ports::PortSpec>,
}

impl Default for InstanceSpec {
    fn default() -> Self {
        Self {
            phase: DesiredPhase::default(),
            workspace: None,
            role: RoleRef::default(),
            agent: String::new(),
            image: None,
            command: None,
            resume: true,
            conversation_id: None,
            host_user: None,
            dind: None,
            engine: None,
            working_dir: None,
            auth_forward: None,
            provider: None,
            update_policy: None,
            mounts: Vec::new(),
            env: Vec::new(),
            sidecars: Vec::new(),
            ports: Vec::new(),
        }
    }
}

fn yes() -> bool {
    true
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_yes(value: &bool) -> bool {
    *value
}

/// How a spec changed after the recipe was pinned reaches the session.
/// Restores always replay the pinned recipe; a rollout moves the session
/// (its unit, home, conversation and checkouts kept) onto the current spec.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum UpdatePolicy {
    /// Only when the operator asks (`jackin rollout NAME`); until then the
    /// change shows as `SpecDrift`.
    #[default]
    Manual,
    /// By itself: once nobody is attached and the agent is idle, or at the
    /// session's next start, whichever comes first.
    OnDrift,
}

/// The role whose repository's Dockerfile builds the image.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleRef {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<RoleSource>,
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleSource {
    /// A git URL or a local repository path.
    pub git: String,
    /// Branch, tag or commit; the repository's `HEAD` when omitted.
    #[serde(default, rename = "ref", skip_serializing_if = "Option::is_none")]
    pub git_ref: Option<String>,
}

/// How a host directory reaches the container.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Isolation {
    /// The host directory itself; never assessed, never touched.
    #[default]
    Shared,
    /// A `git worktree` on a scratch branch, under the unit's `git/`.
    Worktree,
    /// A local clone of the host's current branch, under the unit's `git/`.
    Clone,
}

impl Isolation {
    /// The name as written in a manifest.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Shared => "shared",
            Self::Worktree => "worktree",
            Self::Clone => "clone",
        }
    }
}

#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MountSpec {
    /// Host path; `~/` expands to the operator's home.
    pub src: String,
    /// Absolute path inside the container.
    pub dst: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub readonly: bool,
    #[serde(default)]
    pub isolation: Isolation,
    /// Untracked files of the source (patterns relative to it, `*` and `?`
    /// within a segment) copied once into each new isolated checkout.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
}

/// A Docker daemon sidecar for the agent: TLS certificates in a volume the
/// agent reads, and `DOCKER_HOST` pointing at it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DindSpec {
    #[serde(default = "default_dind_image")]
    pub image: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// A real Docker daemon needs it; a stand-in may not.
    #[serde(default = "yes")]
    pub privileged: bool,
}

impl Default for DindSpec {
    fn default() -> Self {
        Self {
            image: default_dind_image(),
            command: None,
            privileged: true,
        }
    }
}

fn default_dind_image() -> String {
    "docker:dind".to_owned()
}

/// A helper container that shares the instance's network.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Sidecar {
    pub name: String,
    pub image: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub privileged: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
}

/// The phase jackin observed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum InstancePhase {
    Pending,
    Launching,
    Running,
    Exited,
    Crashed,
    Kept,
    Purging,
    Failed,
}

impl InstancePhase {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Launching => "Launching",
            Self::Running => "Running",
            Self::Exited => "Exited",
            Self::Crashed => "Crashed",
            Self::Kept => "Kept",
            Self::Purging => "Purging",
            Self::Failed => "Failed",
        }
    }
}

impl std::fmt::Display for InstancePhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct InstanceStatus {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<InstancePhase>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The instance's unique identity: container name and unit directory name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub container_name: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipe: Option<Recipe>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub restore: Option<RestoreRecord>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionOutcome>,
    /// The latest sessions' endings, oldest first: `session` is the last of
    /// them. Kept to [`SESSION_ENDINGS_KEPT`] (see
    /// [`InstanceStatus::record_ending`]).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub session_endings: Vec<SessionEnding>,
    /// When jackin asked the engine to stop the running session (a keep, a
    /// rollout's replacement, the idle hooks' restart). A session that ends
    /// after it was stopped by jackin, whatever the agent's exit code (codex
    /// exits 1 on SIGTERM: defect R14). Cleared once that ending is recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub stop_requested_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<MountStatus>,
    /// How the last session was settled once it ended, when jackin (not the
    /// operator's spec) decided: see [`Instance::desired_phase`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub settled: Option<Settlement>,
    /// The agent's conversation: how it resumes and how it last started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation: Option<Conversation>,
    /// The idle hooks' timer and history (workspaces that opted in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle: Option<IdleStatus>,
    /// What the credential hand-off gave the session, by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<CredentialsStatus>,
    /// The agent's settings as the last start left them: set, turned off
    /// by the workspace, or left alone in a file jackin could not read.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub agent_settings: Vec<crate::agent_settings::AppliedSetting>,
    /// What the last start copied of the operator's own agent setup
    /// (`operatorConfig: sync`), by name, never by content.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_config: Option<OperatorConfigStatus>,
    /// Attempts in a row that failed for a reason retrying cannot fix (or a
    /// refusal of the engine that keeps coming back): see
    /// [`Instance::gave_up`]. Cleared when the instance converges.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failures: Option<Failures>,
    /// The last rollout request handled: rolled out, or refused and why.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<RolloutRecord>,
    /// The host port each of the recipe's ports was given, chosen once
    /// and kept until the purge.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<crate::ports::PublishedPort>,
    /// What the session's setup did, as last reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<crate::setup::SetupStatus>,
}

/// A rollout request as the loop handled it. A request is handled once:
/// a refused one waits for a new request (or, under `OnDrift`, a new
/// change of the spec), never retried as it is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RolloutRecord {
    /// The request: the operator's (annotation `jackin.dev/rollout`), or
    /// `drift-<digest>` of the spec an `OnDrift` rollout moved to.
    pub requested: String,
    #[schemars(with = "String")]
    pub at: Timestamp,
    /// Why the request was not rolled out; absent when it was.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refused: Option<String>,
    /// The operator's request (annotation `jackin.dev/rollout`) as it stood
    /// when this record was written, handled by then: the loop handles an
    /// operator's request before any `OnDrift` one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_request: Option<String>,
    /// The last `OnDrift` request handled, this one or an earlier one.
    /// With `operatorRequest`, each kind's last request stays handled when
    /// the other kind's is recorded: neither is taken for new again (and
    /// handled again, and again, in turn with the other).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub drift_request: Option<String>,
    /// The rollout started the agent's conversation anew rather than
    /// keeping it: the operator asked (`--new-conversation`), or the agent
    /// or its way of resuming changed.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub new_conversation: bool,
}

impl RolloutRecord {
    /// `requested` handled on `obj` at `at`: rolled out (`refused: None`)
    /// or not, and why. A request that is not the operator's annotation is
    /// an `OnDrift` one.
    pub fn handled(
        obj: &Instance,
        requested: &str,
        at: Timestamp,
        refused: Option<String>,
    ) -> Self {
        let operator_request = obj
            .metadata
            .annotations
            .get(crate::names::annotation::ROLLOUT)
            .cloned();
        let previous = obj.status.as_ref().and_then(|s| s.rollout.as_ref());
        let drift_request = match operator_request.as_deref() == Some(requested) {
            false => Some(requested.to_owned()),
            true => previous.and_then(|p| {
                match p.operator_request.as_deref() == Some(p.requested.as_str()) {
                    true => p.drift_request.clone(),
                    // Not the operator's then (or written before records
                    // said): an `OnDrift` request.
                    false => Some(p.requested.clone()),
                }
            }),
        };
        Self {
            requested: requested.to_owned(),
            at,
            refused,
            operator_request,
            drift_request,
            new_conversation: false,
        }
    }

    /// Whether `request` (the operator's or an `OnDrift` one) was handled:
    /// it is the last one handled, or the last of its kind.
    pub fn has_handled(&self, request: &str) -> bool {
        [
            Some(self.requested.as_str()),
            self.operator_request.as_deref(),
            self.drift_request.as_deref(),
        ]
        .contains(&Some(request))
    }
}

/// Why a rollout request was not made. Either way the session runs on as
/// pinned, and the request is handled: it is not tried again as it is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RolloutNotMade<'a> {
    /// Refused before anything changed (what cannot change in place, a
    /// checkout holding unfinished work that the new recipe would retire).
    Refused(&'a str),
    /// Its pin failed (a build that failed, an image that is not there).
    Failed(&'a str),
}

impl Instance {
    /// Records that rollout `requested` was not made, and why: the request
    /// handled in `status.rollout`, and the `Rollout` condition false with
    /// the reason and what to do. Returns the condition's message. The one
    /// writer of this record, for `act`'s refusal and the controller's
    /// failure policy alike.
    pub fn rollout_not_made(
        &mut self,
        requested: &str,
        not_made: RolloutNotMade<'_>,
        now: Timestamp,
    ) -> String {
        use crate::names::{condition, reason};
        let name = &self.metadata.name;
        let (refused, reason, message) = match not_made {
            RolloutNotMade::Refused(why) => (
                why.to_owned(),
                reason::ROLLOUT_REFUSED,
                format!("rollout {requested} refused, and the session runs on as pinned: {why}"),
            ),
            RolloutNotMade::Failed(cause) => (
                format!("failed: {cause}"),
                reason::ROLLOUT_FAILED,
                format!(
                    "rollout {requested} failed, and the session runs on as pinned: {cause}; fix \
                     the cause, then `jackin rollout {name}` again"
                ),
            ),
        };
        let record = RolloutRecord::handled(self, requested, now, Some(refused));
        let status = self.status.get_or_insert_default();
        status.rollout = Some(record);
        crate::meta::set_condition(
            &mut status.conditions,
            condition::ROLLOUT,
            crate::ConditionStatus::False,
            reason,
            &message,
            now,
        );
        message
    }
}

/// How many failed attempts in a row, each for a reason retrying cannot fix,
/// make the loop stop trying until the operator changes the spec or asks to
/// resume (`jackin set-phase NAME running`).
pub const MAX_FAILED_ATTEMPTS: u32 = 3;

/// Failed attempts that count toward giving up (see [`Instance::gave_up`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Failures {
    pub attempts: u32,
    /// The spec generation they were made under.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// When the first of them failed.
    #[schemars(with = "String")]
    pub since: Timestamp,
    /// What the last one said.
    pub cause: String,
}

/// What the credential hand-off did, by name: a variable's name and its
/// reference, a file's place. Never a value.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialsStatus {
    /// The mode the session was launched with.
    pub mode: AuthForward,
    /// The variables the container was created with (`token`), each as
    /// `NAME (from REFERENCE)`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<String>,
    /// Why a set got no variable when the container was created, with what
    /// to do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env_missing: Vec<String>,
    /// The files the last start forwarded into the unit's home (`~/…` on
    /// the host).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<String>,
    /// The files the last start could not forward, with what to do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files_missing: Vec<String>,
}

/// What a start copied of the operator's own agent setup: places, never
/// contents.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct OperatorConfigStatus {
    /// Each entry copied, `~/SRC → ~/DST` and how (merged keys, the number
    /// of files of a directory).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub copied: Vec<String>,
    /// What was refused or could not be read, with why: nothing of it was
    /// written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub refused: Vec<String>,
}

/// The idle hooks' timer, kept in the status so that a restarted
/// controller neither loses nor repeats a run.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct IdleStatus {
    /// Since when the agent has been idle; absent while it is active.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub since: Option<Timestamp>,
    /// When the hooks last ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub last_run: Option<Timestamp>,
    /// How many times they ran, over the instance's life.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub runs: u32,
    /// How the last run went: `ok`, or which command failed and how.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_result: Option<String>,
}

/// The agent's conversation across the instance's starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Conversation {
    pub agent: String,
    pub strategy: Strategy,
    /// The id jackin chose (strategy `id`), kept across every restore
    /// until the agent can neither resume it nor start it again: then the
    /// last rung starts a new conversation under a new id (see `ids`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Every id the session has had, newest first (`id` first), at most
    /// [`Conversation::MAX_IDS`]. Empty in a status from before jackin kept
    /// the list: [`Conversation::ids_newest_first`] reads such a one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ids: Vec<String>,
    /// The id the start under way gives a new conversation if its last
    /// rung (`minted-anew`) runs: minted by jackin before the start, so
    /// that it is recorded whatever the agent prints, and made `id` when
    /// the wrapper reports that rung.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_id: Option<String>,
    /// How the agent was last started, as the entry wrapper reported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_start: Option<StartKind>,
    /// How many starts fell back to a lower rung, over the instance's life.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub fallbacks: u32,
    /// The wrapper's stamp of the start `lastStart` describes, and how many
    /// of its fallbacks are counted, so that each is counted once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_stamp: Option<String>,
    #[serde(default, skip_serializing_if = "is_zero")]
    pub start_fallbacks: u32,
    /// When the start report was last changed, as it was when jackin last
    /// read it (nanoseconds since the epoch): a report changed since then
    /// has not been taken in yet.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_modified: Option<String>,
    /// When the rung `lastStart` names is past its grace period, so that it
    /// can no longer fall back (the wrapper's clock): until then the start
    /// may still move down the ladder, and the first pass after it reads
    /// the report again (defect R13). Absent once read after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub start_settles_at: Option<Timestamp>,
    /// The last rung that ended within its grace period, and how it is
    /// told: refused (its error names the conversation) or crashed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_fallback: Option<FallbackRecord>,
}

/// A rung of the resume ladder that ended within the grace period.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct FallbackRecord {
    pub rung: StartKind,
    pub exit_code: i64,
    pub ended: FallbackEnding,
    /// The agent's last line in that rung's window, as the event has it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub error: String,
}

/// How a rung that ended within the grace period is told (defect SA4).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum FallbackEnding {
    /// The agent refused the conversation: its error names the id, the
    /// conversation or the session (no such conversation, already in use).
    Refused,
    /// Anything else: the agent failed for another reason.
    Crashed,
}

impl FallbackEnding {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Refused => "refused",
            Self::Crashed => "crashed",
        }
    }
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_zero(value: &u32) -> bool {
    *value == 0
}

/// How the agent was started: the rungs of the resume ladder.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum StartKind {
    /// A new conversation with the id jackin chose.
    Minted,
    /// The conversation jackin chose, resumed by its id.
    ResumedById,
    /// The agent was asked to continue its latest conversation in the
    /// working directory. Whether there was one is the agent's to decide:
    /// codex, gemini, opencode and aider start a new conversation, and
    /// succeed, when there is none. (Reports and statuses written before
    /// this name said `continued-latest`.)
    #[serde(rename = "continue-requested", alias = "continued-latest")]
    ContinueRequested,
    /// The id could neither be resumed nor minted again (claude after an
    /// `/exit` with no message leaves a stub that refuses both): a new
    /// conversation under a new id jackin minted and recorded.
    MintedAnew,
    /// A new conversation (the agent's own launch, or the command as given);
    /// for an agent that takes ids, under one jackin does not know.
    Fresh,
}

impl StartKind {
    pub const ALL: [StartKind; 5] = [
        Self::Minted,
        Self::ResumedById,
        Self::ContinueRequested,
        Self::MintedAnew,
        Self::Fresh,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Minted => "minted",
            Self::ResumedById => "resumed-by-id",
            Self::ContinueRequested => "continue-requested",
            Self::MintedAnew => "minted-anew",
            Self::Fresh => "fresh",
        }
    }

    pub fn parse(word: &str) -> Option<Self> {
        match word {
            "continued-latest" => Some(Self::ContinueRequested),
            _ => Self::ALL.into_iter().find(|k| k.as_str() == word),
        }
    }
}

impl std::fmt::Display for StartKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A decision about an ended session that jackin records instead of
/// rewriting the operator's spec.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Settlement {
    /// `Kept` or `Purged`.
    pub phase: DesiredPhase,
    /// Who decided.
    pub by: SettledBy,
    #[schemars(with = "String")]
    pub at: Timestamp,
    /// The spec generation it was decided under; a new spec supersedes it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The digest of the unfinished work the decision agreed to discard
    /// (the `clean` policy, the operator's "clean up").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acknowledged: Option<String>,
}

/// Who settled an ended session.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum SettledBy {
    /// The workspace's exit policy.
    ExitPolicy,
    /// The operator, answering at the end of the session.
    Operator,
    /// The workspace's `keep.max`.
    KeepCap,
    /// The workspace's idle hooks (`then: keep`).
    IdleHooks,
}

/// The launch recipe, pinned at first launch and replayed by every restore.
/// Holds references to secrets, never their values.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Recipe {
    /// The image tag the container runs.
    pub image: String,
    /// The exact image the tag pointed at when pinned.
    pub image_id: String,
    /// The role commit the image was built from, when jackin built it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_commit: Option<String>,
    /// The role repository the image was built from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_source: Option<String>,
    /// The ref the spec named when the recipe was pinned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role_ref: Option<String>,
    /// When the agent's program was not in the role image: the role image
    /// (its id) that `image`, a derived image, adds the agent's install
    /// block to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub derived_from: Option<String>,
    /// The base image named by the Dockerfile's `FROM`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub base_image: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub command: Vec<String>,
    /// The user the agent runs as (`uid:gid`); the image's when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
    /// The Docker daemon sidecar's wiring, when the session has one (its
    /// container is the sidecar named `dind`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dind: Option<PinnedDind>,
    /// The engine the session runs on (`spec.engine`, else the
    /// workspace's); absent for the one the environment selects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// The working directory the agent starts in, the same at every tier:
    /// agents that resume "the latest conversation here" key it by this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub working_dir: Option<String>,
    /// Mounts with their sources resolved to absolute host paths.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mounts: Vec<MountSpec>,
    /// Variable names with their plain values or source references.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    pub network: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sidecars: Vec<Sidecar>,
    /// The ports published on the host (the workspace's and the
    /// instance's); the host port each was given is in the status.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ports: Vec<crate::ports::PortSpec>,
    /// The workspace's setup, run once per session before the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setup: Option<crate::setup::PinnedSetup>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// The spec generation the recipe was pinned from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    /// The role's recommended idle commands (its `jackin.role.yaml`) at
    /// the pinned commit.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub idle_commands: Vec<Vec<String>>,
    /// The agent entry the session runs with, as resolved when pinned: a
    /// later change of the registry shows as drift, never silently.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<PinnedAgent>,
    /// The credential hand-off: the mode and the sets (references and
    /// host paths, never a value). Absent in recipes pinned before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<PinnedCredentials>,
    /// The provider picked, its entry as resolved when pinned: references,
    /// never the key's value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    /// Boxed: a recipe is carried in many futures.
    pub provider: Option<Box<crate::provider::AgentProvider>>,
    /// `sync` when the operator's own agent setup is copied into the
    /// session before every start (the workspace's `operatorConfig`);
    /// absent under `none`, the default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operator_config: Option<crate::operator_config::OperatorConfigMode>,
    /// What the role and the workspace widen of the container's
    /// restrictions; absent when neither does (jackin's defaults apply,
    /// to recipes pinned before this field too).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security: Option<crate::security::PinnedSecurity>,
    /// When a container first ran from this recipe. Until then the recipe
    /// follows the spec: a first launch that failed (a wrong secret file, a
    /// mount path) is pinned again from the corrected spec.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub first_run_at: Option<Timestamp>,
    /// Set when a rollout pinned this recipe: the image the session ran
    /// before it. Until a container first runs from this recipe, a
    /// container of the instance is the replaced recipe's, and goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replaces: Option<String>,
    /// Where the unit lives for the pinned engine, once proven (see
    /// [`crate::storage`]); absent until the first container is made.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<crate::storage::PinnedStorage>,
}

impl Recipe {
    /// Whether this recipe must be pinned again before use: no container
    /// ever ran from it and the spec has moved on since it was pinned.
    /// Recipes pinned before these fields existed are never pinned again.
    pub fn superseded(&self, generation: Option<i64>) -> bool {
        self.first_run_at.is_none() && self.generation.is_some() && self.generation != generation
    }
}

/// How the `dind` sidecar and the agent share the daemon's client
/// certificates: a named volume of the instance's own.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinnedDind {
    pub certs_volume: String,
}

/// An agent entry as a recipe pins it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinnedAgent {
    pub name: String,
    /// `builtin`, or `applied` for an `Agent` object in the store.
    pub source: String,
    pub spec: AgentSpec,
    /// The strategy this session resumes with: the entry's, or `none` when
    /// the instance opted out or its command is not the agent's program.
    pub strategy: Strategy,
    /// The agent's version, as the entry's probe found it in the pinned
    /// image; absent when the entry has no probe, or the probe printed no
    /// version (then no rung is skipped for its version).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
}

/// Which rung of the restore ladder brought the container back, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RestoreRecord {
    /// 0 running, 1 started, 2 recreated from the pinned image, 3 rebuilt.
    pub tier: u8,
    #[schemars(with = "String")]
    pub at: Timestamp,
    /// The rollout request this start carried out, when a rollout (not a
    /// loss) made the container anew.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rollout: Option<String>,
}

/// Where a session's outcome was learned from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum OutcomeSource {
    Marker,
    Engine,
    Unknown,
}

/// How the last session ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionOutcome {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub finished_at: Option<Timestamp>,
    pub source: OutcomeSource,
    /// `exited`, `signal:TERM`, `oom`, `killed`, or why it is unknown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Whether jackin stopped the session (it asked the engine to stop the
    /// container before the session ended): then the exit code, whatever it
    /// is, is the agent's answer to jackin's SIGTERM, never its own ending.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_by_jackin: bool,
}

/// How many session endings the status keeps. Enough to show a pattern
/// (the same crash at each resume, the idle hooks' restarts over a day)
/// without the status, which every change rewrites whole and `get -o
/// yaml` prints, growing with the instance's age: about 3 KB at most.
pub const SESSION_ENDINGS_KEPT: usize = 20;

/// One session's ending, as [`InstanceStatus::session_endings`] keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SessionEnding {
    /// When the session ended; when that is unknown (its container was
    /// removed without a marker), when jackin recorded the ending.
    #[schemars(with = "String")]
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exit_code: Option<i64>,
    pub source: OutcomeSource,
    /// As [`SessionOutcome::reason`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub stopped_by_jackin: bool,
}

impl SessionEnding {
    /// The ending of `outcome`, recorded at `now`.
    pub fn of(outcome: &SessionOutcome, now: Timestamp) -> Self {
        Self {
            at: outcome.finished_at.unwrap_or(now),
            exit_code: outcome.exit_code,
            source: outcome.source,
            reason: outcome.reason.clone(),
            stopped_by_jackin: outcome.stopped_by_jackin,
        }
    }

    /// The ending as an outcome, for what words an outcome.
    pub fn outcome(&self) -> SessionOutcome {
        SessionOutcome {
            exit_code: self.exit_code,
            finished_at: Some(self.at),
            source: self.source,
            reason: self.reason.clone(),
            stopped_by_jackin: self.stopped_by_jackin,
        }
    }
}

impl InstanceStatus {
    /// Records `outcome` as the last session's, and adds it to the
    /// endings kept, the oldest beyond [`SESSION_ENDINGS_KEPT`] dropped.
    pub fn record_ending(&mut self, outcome: &SessionOutcome, now: Timestamp) {
        self.session_endings.push(SessionEnding::of(outcome, now));
        let over = self
            .session_endings
            .len()
            .saturating_sub(SESSION_ENDINGS_KEPT);
        self.session_endings.drain(..over);
        self.session = Some(outcome.clone());
    }
}

/// The git assessment of one isolated mount.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct MountStatus {
    pub dst: String,
    /// The host repository the checkout was made from.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub src: String,
    pub isolation: Isolation,
    /// Where the checkout lives on the host.
    pub path: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub dirty_files: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub unpushed_branches: Vec<String>,
    /// Digest of the assessment; an acknowledgement must quote it.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub digest: String,
    /// For a worktree an earlier jackin made as a `git worktree`: its entry
    /// in the host repository, left there because it no longer names the
    /// checkout. Not jackin's to remove: the operator deletes it by hand.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub left_entry: Option<String>,
    /// The untracked files the mount's `include` copied in when the
    /// checkout was made (the first few), and what it left out, with why.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub included: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub not_included: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn instance(generation: i64) -> Instance {
        let mut obj: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": crate::API_VERSION,
            "kind": "Instance",
            "metadata": {"name": "a"},
            "spec": {"role": {"name": "r"}, "agent": "claude", "image": "i"},
        }))
        .unwrap();
        obj.metadata.generation = Some(generation);
        obj
    }

    /// SK-S4: each ending is added after the ones before it, the last is
    /// also `session`, and past the bound the oldest go first. An ending
    /// with no time of its own is kept at the time it was recorded.
    #[test]
    fn session_endings_are_kept_in_order_and_bounded() {
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        let ended = |code: i64, at: Option<Timestamp>| SessionOutcome {
            exit_code: Some(code),
            finished_at: at,
            source: OutcomeSource::Marker,
            reason: Some("exited".into()),
            stopped_by_jackin: false,
        };
        let mut status = InstanceStatus::default();
        status.record_ending(&ended(3, Some(t(1))), t(2));
        status.record_ending(&ended(4, None), t(5));
        let codes = |s: &InstanceStatus| -> Vec<i64> {
            s.session_endings
                .iter()
                .filter_map(|e| e.exit_code)
                .collect()
        };
        assert_eq!(codes(&status), [3, 4]);
        assert_eq!(status.session_endings[0].at, t(1));
        assert_eq!(status.session_endings[1].at, t(5), "recorded at");
        assert_eq!(status.session, Some(ended(4, None)));

        for code in 5..(5 + SESSION_ENDINGS_KEPT as i64) {
            status.record_ending(&ended(code, Some(t(code))), t(code));
        }
        let kept = codes(&status);
        assert_eq!(kept.len(), SESSION_ENDINGS_KEPT);
        let newest = 4 + SESSION_ENDINGS_KEPT as i64;
        assert_eq!(
            kept.first(),
            Some(&(newest - SESSION_ENDINGS_KEPT as i64 + 1))
        );
        assert_eq!(kept.last(), Some(&newest));
        assert_eq!(
            status.session_endings[0].outcome().exit_code,
            kept.first().copied()
        );
    }

    /// F7: failures that retrying cannot fix count up to the limit, then the
    /// loop gives up; a changed spec or a resume starts the count again,
    /// and a purge is never given up on.
    #[test]
    fn f7_failures_count_until_the_operator_changes_something() {
        let t = |s: i64| Timestamp::from_second(1_800_000_000 + s).unwrap();
        let mut obj = instance(1);
        for attempt in 1..=MAX_FAILED_ATTEMPTS {
            assert!(obj.gave_up().is_none(), "attempt {attempt}");
            assert_eq!(obj.count_failure("refused", t(attempt.into())), attempt);
        }
        let gave_up = obj.gave_up().expect("given up after the last attempt");
        assert_eq!((gave_up.cause.as_str(), gave_up.since), ("refused", t(1)));

        obj.spec.phase = DesiredPhase::Purged;
        assert!(obj.gave_up().is_none(), "a purge is always tried");
        obj.spec.phase = DesiredPhase::Running;

        obj.metadata.annotations.insert(
            crate::names::annotation::RESUME.to_owned(),
            t(10).to_string(),
        );
        assert!(
            obj.gave_up().is_none() && obj.failures().is_none(),
            "resumed"
        );
        assert_eq!(obj.count_failure("again", t(11)), 1, "a new count");

        for s in 12..=13 {
            obj.count_failure("again", t(s));
        }
        assert!(obj.gave_up().is_some());
        obj.metadata.generation = Some(2);
        assert!(obj.gave_up().is_none(), "a changed spec tries again");
        assert_eq!(obj.count_failure("new spec", t(14)), 1);
    }

    /// A rollout refused and one whose pin failed are both handled, each
    /// said with its own reason in `Rollout`; the failed one says to try
    /// again once the cause is fixed.
    #[test]
    fn a_rollout_not_made_is_handled_and_said_with_its_reason() {
        use crate::meta::find_condition;
        use crate::names::{condition, reason};
        let now = Timestamp::from_second(1_800_000_000).unwrap();
        let cases = [
            (
                RolloutNotMade::Refused("the engine differs"),
                "the engine differs",
                reason::ROLLOUT_REFUSED,
                "rollout t1 refused, and the session runs on as pinned: the engine differs",
            ),
            (
                RolloutNotMade::Failed("no such image"),
                "failed: no such image",
                reason::ROLLOUT_FAILED,
                "rollout t1 failed, and the session runs on as pinned: no such image; fix the \
                 cause, then `jackin rollout a` again",
            ),
        ];
        for (not_made, refused, why, said) in cases {
            let mut obj = instance(1);
            let message = obj.rollout_not_made("t1", not_made, now);
            assert_eq!(message, said);
            let status = obj.status.unwrap();
            let record = status.rollout.unwrap();
            assert!(record.has_handled("t1"), "{record:?}");
            assert_eq!((record.refused.as_deref(), record.at), (Some(refused), now));
            let rollout = find_condition(&status.conditions, condition::ROLLOUT).unwrap();
            assert_eq!(rollout.status, crate::ConditionStatus::False);
            assert_eq!(
                (rollout.reason.as_str(), rollout.message.as_str()),
                (why, said)
            );
        }
    }
}
