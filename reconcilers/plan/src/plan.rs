//! A plan as data: the [`Step`]s that [`crate::decide`] (with the session
//! edge, [`crate::ending`]) chooses and `jackin_act` carries out, one at a
//! time, and the [`Leftover`]s a sweep removes. Nothing here decides or
//! acts; it is what deciding and acting share, so that neither imports the
//! other's workings.

use jackin_api::instance::{InstancePhase, OutcomeSource, SessionOutcome};
use jackin_api::workspace::ExitPolicy;

use crate::policy::ExitAction;

/// One step of a plan: one idempotent change, of an engine object (one
/// engine call; `CreateContainer` and `StartContainer` prepare the unit's
/// files first), a part of the unit, or the status; a pin resolves, builds
/// and probes. A step
/// on an engine object that was observed names it by the id the engine gave
/// it, never by a name someone else may have taken since; an object this
/// plan creates is addressed by the name it is given (`id: None`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// Resolve the image (build the role or look up `spec.image`) and pin
    /// the launch recipe into the status.
    PinRecipe,
    /// A rollout: pin the recipe again from the current spec, keeping the
    /// unit, its conversation (unless `new_conversation`: it starts anew)
    /// and its checkouts, and record the request handled. The container
    /// then goes and is made anew from the new recipe (see
    /// [`Step::RetireCheckouts`]).
    RolloutRecipe {
        requested: String,
        moving: bool,
        new_conversation: bool,
    },
    /// Before a move (`rollout --move`) takes anything from the engine the
    /// session leaves: check that the engine it moves to sees the unit. A
    /// failure leaves the session as it is, the request handled.
    CheckMoveTarget {
        requested: String,
    },
    /// Before the first container of a recipe is made: prove that the
    /// engine sees the unit, and pin the answer (`jackin_api::storage`).
    /// Nothing that binds the unit is made on an engine that does not.
    ProveUnitStorage,
    /// Record a rollout request as refused, and why; nothing else changes.
    RefuseRollout {
        requested: String,
        why: String,
    },
    /// The session edge (see [`crate::ending`]): record how the last
    /// session ended, and collect what it left in `state/artifacts/`.
    RecordSession(SessionOutcome),
    /// Say that the completion marker cannot be read (the engine's exit
    /// state stands in for it).
    NoteMalformedMarker(String),
    /// Settle the ended session as the exit policy decided.
    Settle {
        action: ExitAction,
        policy: ExitPolicy,
    },
    /// Set the handled marker aside, so that a later resume does not take
    /// the session for ended again.
    RetireMarker,
    /// A session runs again: the exit policy's question about the last one
    /// is moot.
    ClearExitQuestion,
    /// Rebuild the pinned image at the pinned role commit and base (tier 3).
    RebuildImage,
    /// Make or verify the isolated checkouts the container binds.
    PrepareMounts,
    /// Publish the worktree checkouts' branches into the operator's
    /// repositories, at three points, whenever nothing writes them: once
    /// the session that wrote them has ended (jackin's stop, or the
    /// session's own end), before a start ([`Step::PrepareMounts`]), and
    /// before the checkouts go ([`Step::RemoveCheckouts`],
    /// [`Step::RetireCheckouts`]). A plan holds one at most: the first
    /// serves what follows. A publication refused is an event, and the
    /// work stays in the unit. Nothing that only reads a checkout
    /// publishes.
    PublishCheckouts,
    CreateNetwork,
    /// Create one of the instance's named volumes (labelled as its own).
    CreateVolume(String),
    CreateSidecar(String),
    StartSidecar {
        name: String,
        id: Option<String>,
    },
    /// Create the main container from the pinned recipe, secrets resolved now.
    CreateContainer,
    /// Copy the operator's own agent setup into the unit's home before it
    /// starts (`operatorConfig: sync`), and say what went and what was
    /// refused, by name.
    CopyOperatorConfig,
    /// Hand the operator's logins to the session before it starts: copy the
    /// credential files into the unit's home (`authForward: sync`), and say
    /// what reached it and what did not.
    ForwardCredentials,
    StartContainer {
        id: Option<String>,
    },
    StopContainer {
        id: String,
    },
    RemoveContainer {
        id: String,
    },
    RemoveSidecar {
        name: String,
        id: String,
    },
    RemoveNetwork {
        id: String,
    },
    /// Remove a further network of the instance, by id (see
    /// [`crate::view::InstanceView::extra_networks`]).
    RemoveExtraNetwork(String),
    RemoveVolume(String),
    /// Record `Purging` in the object and the index before anything goes.
    StampPurging,
    /// Save the agent's conversation (its state path, the spec and the
    /// conversation's record) under `discarded/` before the unit goes.
    SaveConversation,
    /// Remove the isolated checkouts (worktrees through git).
    RemoveCheckouts,
    /// After a rollout, once the container that bound them is gone: retire
    /// the isolated checkouts the new recipe binds otherwise (another
    /// source or isolation mode, or no such mount), their unfinished work
    /// saved first; the ladder's `PrepareMounts` makes the new ones.
    RetireCheckouts,
    /// Write the phase the instance is in now: `Launching` before a plan
    /// that makes the session (anew), or, before jackin removes the
    /// container, the phase the plan leads to, so that no later look reads
    /// the container's absence as a session lost (a crash between the two
    /// cannot leave that doubt).
    SetPhase(InstancePhase),
    /// Record in the status the restore the start before carried out: its
    /// tier, and the rollout request it carried out when a rollout (not a
    /// loss) made the container anew.
    RecordRestore {
        tier: Tier,
        rollout: Option<String>,
    },
    /// Stop running this plan and look again: what follows depends on what
    /// the step before changed. The steps after it are what the next look
    /// is expected to plan; a dry run shows them, nothing runs them from
    /// this plan.
    LookAgain(Again),
    /// The purge tail, one step because it is one change of state: the
    /// unit directory, the sockets directory and the unit lock go, then the
    /// index row, last, so that a crash anywhere before leaves a row that
    /// says `Purging` and the next pass finishes the job.
    FinishPurge,
}

/// Why a plan stops to look again.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Again {
    /// How the session ended is read from the stopped container (its
    /// marker, else the engine's exit state) before anything removes it.
    SessionStopped,
    /// A rollout pinned the recipe again, perhaps for another engine: the
    /// rest is planned from the new recipe, on its engine.
    RecipePinned,
}

/// An engine object that no instance owns any longer (its instance was
/// purged or vanished), or an image jackin built that no recipe pins: what
/// a sweep removes, by the id the engine listed it under. The sweep decides
/// these (it reads the state directory and every engine); `act` removes
/// them, as it carries out every step.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Leftover {
    Container(String),
    Network(String),
    /// A volume, by name (a volume's name is its id).
    Volume(String),
    Image(String),
}

impl Leftover {
    /// The kind of object, as people read it: `container`, `network`, ….
    pub fn kind(&self) -> &'static str {
        match self {
            Leftover::Container(_) => "container",
            Leftover::Network(_) => "network",
            Leftover::Volume(_) => "volume",
            Leftover::Image(_) => "image",
        }
    }

    /// The engine's id of the object.
    pub fn id(&self) -> &str {
        match self {
            Leftover::Container(id)
            | Leftover::Network(id)
            | Leftover::Volume(id)
            | Leftover::Image(id) => id,
        }
    }
}

impl Step {
    /// A stable name of the kind of step, e.g. `remove-container`.
    pub fn kind(&self) -> &'static str {
        match self {
            Step::PinRecipe => "pin-recipe",
            Step::RolloutRecipe { .. } => "rollout-recipe",
            Step::RefuseRollout { .. } => "refuse-rollout",
            Step::CheckMoveTarget { .. } => "check-move-target",
            Step::ProveUnitStorage => "prove-unit-storage",
            Step::RecordSession(_) => "record-session",
            Step::NoteMalformedMarker(_) => "note-malformed-marker",
            Step::Settle { .. } => "settle",
            Step::RetireMarker => "retire-marker",
            Step::ClearExitQuestion => "clear-exit-question",
            Step::RebuildImage => "rebuild-image",
            Step::PrepareMounts => "prepare-mounts",
            Step::PublishCheckouts => "publish-checkouts",
            Step::SaveConversation => "save-conversation",
            Step::RemoveCheckouts => "remove-checkouts",
            Step::RetireCheckouts => "retire-checkouts",
            Step::CreateNetwork => "create-network",
            Step::CreateVolume(_) => "create-volume",
            Step::CreateSidecar(_) => "create-sidecar",
            Step::StartSidecar { .. } => "start-sidecar",
            Step::CreateContainer => "create-container",
            Step::CopyOperatorConfig => "copy-operator-config",
            Step::ForwardCredentials => "forward-credentials",
            Step::StartContainer { .. } => "start-container",
            Step::StopContainer { .. } => "stop-container",
            Step::RemoveContainer { .. } => "remove-container",
            Step::RemoveSidecar { .. } => "remove-sidecar",
            Step::RemoveNetwork { .. } => "remove-network",
            Step::RemoveExtraNetwork(_) => "remove-extra-network",
            Step::RemoveVolume(_) => "remove-volume",
            Step::StampPurging => "stamp-purging",
            Step::FinishPurge => "finish-purge",
            Step::SetPhase(_) => "set-phase",
            Step::RecordRestore { .. } => "record-restore",
            Step::LookAgain(_) => "look-again",
        }
    }

    /// The launch stage the step belongs to, as operators know the stages:
    /// `role` (resolving and building the role's image), `derived image`
    /// (rebuilding it at the pinned commit), `workspace` (the checkouts),
    /// `network`, `sidecar` (sidecars and their volumes), `credentials`
    /// (the operator's logins and agent setup), `container` (the agent's own), `cleanup`
    /// (what a purge removes last).
    pub fn stage(&self) -> &'static str {
        match self {
            Step::PinRecipe | Step::RolloutRecipe { .. } | Step::RefuseRollout { .. } => "role",
            Step::RebuildImage => "derived image",
            Step::PrepareMounts
            | Step::PublishCheckouts
            | Step::SaveConversation
            | Step::RemoveCheckouts
            | Step::RetireCheckouts => "workspace",
            Step::CreateNetwork | Step::RemoveNetwork { .. } | Step::RemoveExtraNetwork(_) => {
                "network"
            }
            Step::CreateVolume(_)
            | Step::CreateSidecar(_)
            | Step::StartSidecar { .. }
            | Step::RemoveSidecar { .. }
            | Step::RemoveVolume(_) => "sidecar",
            Step::CheckMoveTarget { .. }
            | Step::ProveUnitStorage
            | Step::CreateContainer
            | Step::StartContainer { .. }
            | Step::StopContainer { .. }
            | Step::RemoveContainer { .. } => "container",
            Step::CopyOperatorConfig | Step::ForwardCredentials => "credentials",
            Step::StampPurging | Step::FinishPurge => "cleanup",
            Step::RecordSession(_)
            | Step::NoteMalformedMarker(_)
            | Step::Settle { .. }
            | Step::RetireMarker
            | Step::ClearExitQuestion
            | Step::SetPhase(_)
            | Step::RecordRestore { .. }
            | Step::LookAgain(_) => "session",
        }
    }

    /// A short description for progress lines and events.
    pub fn describe(&self) -> String {
        match self {
            Step::PinRecipe => "pinning the launch recipe".into(),
            Step::RolloutRecipe {
                moving,
                new_conversation,
                ..
            } => describe_rollout(*moving, *new_conversation),
            Step::RefuseRollout { why, .. } => format!("refusing the rollout: {why}"),
            Step::CheckMoveTarget { .. } => {
                "checking that the engine the session moves to sees its unit (rollout --move)"
                    .into()
            }
            Step::ProveUnitStorage => "proving that the engine sees the session's unit".into(),
            Step::RecordSession(outcome) => match (outcome.source, outcome.exit_code) {
                (OutcomeSource::Unknown, _) | (_, None) => {
                    "recording that the session ended, how not known (no marker)".into()
                }
                (source, Some(code)) => format!(
                    "recording that the session ended with exit code {code} (from the {})",
                    match source {
                        OutcomeSource::Marker => "completion marker",
                        _ => "engine",
                    }
                ),
            },
            Step::NoteMalformedMarker(_) => "noting that the completion marker is not valid".into(),
            Step::Settle { action, policy } => {
                format!(
                    "settling the ended session: exit policy {}: {action}",
                    policy.as_str()
                )
            }
            Step::RetireMarker => "setting the handled completion marker aside".into(),
            Step::ClearExitQuestion => {
                "clearing the exit policy's question (a session runs)".into()
            }
            Step::RebuildImage => "rebuilding the image at the pinned commit".into(),
            Step::PrepareMounts => "preparing the isolated checkouts".into(),
            Step::PublishCheckouts => {
                "publishing the worktrees' branches into the host repositories".into()
            }
            Step::SaveConversation => "saving the agent's conversation".into(),
            Step::RemoveCheckouts => {
                "removing the isolated checkouts (their unfinished work saved first)".into()
            }
            Step::RetireCheckouts => {
                "retiring the isolated checkouts the new spec binds otherwise".into()
            }
            Step::CreateNetwork => "creating the network".into(),
            Step::CreateVolume(n) => format!("creating volume {n}"),
            Step::CreateSidecar(n) => format!("creating sidecar {n}"),
            Step::StartSidecar { name, id: None } => format!("starting sidecar {name}"),
            Step::StartSidecar { name, id: Some(id) } => {
                format!("starting sidecar {name} ({})", short_id(id))
            }
            Step::CreateContainer => "creating the container".into(),
            Step::CopyOperatorConfig => "copying the operator's agent setup to the session".into(),
            Step::ForwardCredentials => "handing the operator's logins to the session".into(),
            Step::StartContainer { id: None } => "starting the container".into(),
            Step::StartContainer { id: Some(id) } => {
                format!("starting the container {}", short_id(id))
            }
            Step::StopContainer { id } => format!("stopping the container {}", short_id(id)),
            Step::RemoveContainer { id } => format!("removing the container {}", short_id(id)),
            Step::RemoveSidecar { name, id } => {
                format!("removing sidecar {name} ({})", short_id(id))
            }
            Step::RemoveNetwork { id } => format!("removing the network {}", short_id(id)),
            Step::RemoveExtraNetwork(id) => {
                format!("removing the duplicate network {}", short_id(id))
            }
            Step::RemoveVolume(n) => format!("removing volume {n}"),
            Step::StampPurging => "marking the instance Purging".into(),
            Step::FinishPurge => {
                "removing the unit directory, sockets and lock, then the index row".into()
            }
            Step::SetPhase(phase) => format!("setting the phase to {phase}"),
            Step::RecordRestore { tier, .. } => format!("recording the restore (tier {tier})"),
            Step::LookAgain(Again::SessionStopped) => {
                "recording how the session ended, from the stopped container".into()
            }
            Step::LookAgain(Again::RecipePinned) => {
                "looking again, to plan from the recipe pinned".into()
            }
        }
    }

    /// Whether a run of the step is announced as progress: not the
    /// bookkeeping of a plan (its phase writes, its restore record, its
    /// looks again), which a
    /// dry run shows and the operator need not follow.
    pub fn announced(&self) -> bool {
        !matches!(
            self,
            Step::SetPhase(_) | Step::RecordRestore { .. } | Step::LookAgain(_)
        )
    }
}

/// What a rollout's pin does, in words.
fn describe_rollout(moving: bool, new_conversation: bool) -> String {
    let mut text = match moving {
        false => "pinning the recipe again from the current spec (rollout)",
        true => "pinning the recipe again from the current spec, on its engine (rollout --move)",
    }
    .to_owned();
    if new_conversation {
        text.push_str("; the agent's conversation starts anew (rollout --new-conversation)");
    }
    text
}

/// An engine id as `docker ps` shows it: 12 characters.
fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// A rung of the restore ladder: how much of the session comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Tier {
    /// The container runs: nothing to do.
    Running,
    /// The container exists, stopped: started, its writable layer intact.
    Started,
    /// The container is gone, its image is there: made anew from the recipe.
    Recreated,
    /// The container and its image are gone: the image rebuilt at the
    /// pinned commit, then the container made anew.
    Rebuilt,
}

impl Tier {
    /// The tier's number, as operators know the ladder (0 to 3) and as
    /// `status.restore.tier` records it.
    pub fn number(self) -> u8 {
        match self {
            Self::Running => 0,
            Self::Started => 1,
            Self::Recreated => 2,
            Self::Rebuilt => 3,
        }
    }
}

impl std::fmt::Display for Tier {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.number())
    }
}

/// What to do next, and what the status should say once it is done.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Plan {
    pub steps: Vec<Step>,
    /// The restore tier these steps perform, when they restore a session
    /// (tier 0 is the empty plan of a running container, not recorded).
    pub tier: Option<Tier>,
    /// The phase the instance is in once the steps have run.
    pub target: InstancePhase,
    /// Why nothing may be done yet: a purge that would discard unfinished
    /// work nobody acknowledged. The steps are then empty.
    pub blocked: Option<String>,
    /// Why these steps: what was asked and what was seen, in words.
    pub cause: String,
}

impl Plan {
    pub fn is_empty(&self) -> bool {
        self.steps.is_empty()
    }

    /// The plan for people and for golden tests: where it leads and why,
    /// then a line per step.
    pub fn render(&self) -> String {
        let mut out = format!("to {}: {}\n", self.target, self.cause);
        if self.steps.is_empty() {
            out.push_str("  - nothing\n");
        }
        for step in &self.steps {
            out.push_str(&format!("  - {}\n", step.describe()));
        }
        out
    }
}
