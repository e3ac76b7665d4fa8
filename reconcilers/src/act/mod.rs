//! Carrying out one step of a plan. Every plan the loop decides (a
//! reconcile's, the session edge's, the idle watch's recycling) changes the
//! engine and a unit's working files (its home, state, `bin/` and
//! checkouts) here, and so does the sweep's removal of what no instance
//! owns ([`remove_leftover`]); the operator's own answers at the end of a
//! session (a resume or a keep sets the marker aside) and the restore of
//! discarded work change them outside any plan. [`act`] dispatches each
//! step, in one line, to a function of its own, in a module by what it
//! changes: `pin`, `container` (the engine's objects), `checkouts`, `home`
//! (what goes into the unit's home before a start) and `edge` (the session
//! edge and the phase writes).
//! What a step changes in the object is written to its status, which the
//! caller saves after each step; records the state directory shares (the
//! index, ended sessions) change through [`StateOwner`]. Each step is
//! idempotent, so a pass interrupted anywhere is finished by the next one.

use std::path::{Path, PathBuf};

use jackin_api::instance::{Instance, Recipe};
use jackin_api::names::reason;
use jackin_api::workspace::WorkspaceSpec;

use crate::addresses::{AddressBook, AddressError};
use crate::credentials::CredentialError;
use crate::discard::DiscardError;
use crate::engine::{Engine, EngineError};
use crate::isolation::IsolationError;
use crate::layout::Layout;
use crate::plan::{Leftover, Step};
use crate::recipe::{RecipeError, ResolvedAgent};
use crate::secrets::SecretError;
use crate::{ending, rollout};

mod checkouts;
mod container;
mod edge;
mod home;
mod pin;

pub use pin::ProgramsFound;

/// Where the agent's home is mounted inside the container.
pub const AGENT_HOME: &str = "/home/agent";
/// Where the unit's `state/` directory is mounted inside the container.
pub const STATE_DIR: &str = "/jackin/state";
/// Where the Docker daemon sidecar's client certificates are, in it and
/// (read-only) in the agent's container.
pub const DIND_CLIENT_CERTS: &str = "/certs/client";
/// Seconds a container gets to stop before it is killed.
pub const STOP_GRACE_SECS: i32 = 10;

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Recipe(#[from] RecipeError),
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    /// The unfinished work of a checkout could not be saved before its
    /// discard: nothing was deleted. Boxed: it is one of the largest.
    #[error(transparent)]
    Discard(Box<DiscardError>),
    #[error("image {0} names no command (no ENTRYPOINT or CMD)")]
    NoCommand(String),
    #[error("no agent is named {0:?}")]
    UnknownAgent(String),
    #[error("a volume named {0} exists and is not this instance's: it is left alone")]
    ForeignVolume(String),
    #[error(
        "the image {image} has no `{program}` (the agent's command) on its PATH: the role's \
         Dockerfile must install it"
    )]
    AgentMissing { program: String, image: String },
    #[error(
        "installing the agent {agent} into a derived image failed{}: {source}",
        log.as_ref().map(|l| format!(" (its build output is kept in {l})")).unwrap_or_default()
    )]
    AgentInstall {
        agent: String,
        log: Option<String>,
        #[source]
        source: Box<RecipeError>,
    },
    /// The role's Dockerfile failed to build; what it printed is kept.
    #[error(
        "building the role {role}'s image failed (its build output is kept in {log}): {source}"
    )]
    RoleBuild {
        role: String,
        log: String,
        #[source]
        source: Box<RecipeError>,
    },
    #[error(transparent)]
    Addresses(#[from] AddressError),
    /// Boxed: its places make it the largest error of a step.
    #[error(transparent)]
    Credentials(Box<CredentialError>),
    /// The owner of the state directory could not record a change.
    #[error(transparent)]
    State(Box<dyn std::error::Error + Send + Sync>),
}

impl ActError {
    /// Whether trying again without a change elsewhere cannot help; the
    /// instance is then `Failed` until its spec or the world changes.
    pub fn is_permanent(&self) -> bool {
        match self {
            Self::Recipe(e) => e.is_permanent(),
            Self::AgentInstall { source, .. } | Self::RoleBuild { source, .. } => {
                source.is_permanent()
            }
            Self::Engine(e) => e.is_permanent(),
            Self::Addresses(e) => e.is_permanent(),
            // A secret that cannot be resolved needs the operator (a variable
            // to export, a file to write, `op signin`); so does a checkout
            // that no longer fits its host repository.
            Self::Secret(_)
            // A destination the agent made a link stays one until the
            // operator removes it.
            | Self::Credentials(_)
            | Self::NoCommand(_)
            | Self::UnknownAgent(_)
            | Self::ForeignVolume(_)
            | Self::AgentMissing { .. }
            // A save that failed needs the operator to look (the error
            // says what to do); retrying would fail the same way.
            | Self::Discard(_) => true,
            // A mount that is not a repository, a checkout that no longer
            // fits, or one nobody recorded: the operator has to look.
            Self::Isolation(e) => !matches!(e, IsolationError::Git(_) | IsolationError::Io { .. }),
            _ => false,
        }
    }

    /// Whether the failure is a refusal that may well be permanent though
    /// the engine does not say so for certain ([`EngineError::is_refused_start`]):
    /// the loop tries it again a few times, then gives up.
    pub fn is_refused_start(&self) -> bool {
        match self {
            Self::Engine(e) | Self::Recipe(RecipeError::Engine(e)) => e.is_refused_start(),
            _ => false,
        }
    }

    /// The condition reason that names this kind of failure.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Engine(e) if e.is_unreachable() => reason::ENGINE_UNREACHABLE,
            Self::Engine(EngineError::Build(_)) => reason::BUILD_FAILED,
            Self::Engine(_) => reason::ENGINE_ERROR,
            Self::Recipe(e) => recipe_reason(e),
            Self::RoleBuild { source, .. } => recipe_reason(source),
            Self::Secret(_) => reason::SECRET_UNAVAILABLE,
            Self::Credentials(_) => reason::CREDENTIALS_REFUSED,
            Self::Io { .. } | Self::State(_) => reason::FILESYSTEM_ERROR,
            Self::Isolation(
                IsolationError::ResumeConflict { .. } | IsolationError::LinkConflict { .. },
            ) => reason::RESUME_CONFLICT,
            Self::Isolation(_) => reason::CHECKOUT_FAILED,
            Self::Discard(_) => reason::DISCARD_NOT_SAVED,
            Self::NoCommand(_) => reason::NO_COMMAND,
            Self::UnknownAgent(_) => reason::UNKNOWN_AGENT,
            Self::AgentMissing { .. } => reason::AGENT_MISSING,
            Self::AgentInstall { .. } => reason::AGENT_INSTALL_FAILED,
            Self::ForeignVolume(_) => reason::ENGINE_ERROR,
            Self::Addresses(AddressError::Exhausted { .. }) => reason::ADDRESS_POOL_EXHAUSTED,
            Self::Addresses(AddressError::Config(_)) => reason::INVALID_CONFIG,
            Self::Addresses(AddressError::Engine(e)) => match e {
                e if e.is_unreachable() => reason::ENGINE_UNREACHABLE,
                _ => reason::ENGINE_ERROR,
            },
        }
    }
}

/// The condition reason of a recipe that could not be resolved.
fn recipe_reason(e: &RecipeError) -> &'static str {
    match e {
        RecipeError::CommitUnavailable { .. } | RecipeError::NothingToRebuild => {
            reason::RECIPE_UNAVAILABLE
        }
        RecipeError::ImageNotFound(_) => reason::IMAGE_NOT_FOUND,
        RecipeError::UnknownProvider { .. } => reason::UNKNOWN_PROVIDER,
        _ => reason::BUILD_FAILED,
    }
}

impl From<DiscardError> for ActError {
    fn from(error: DiscardError) -> Self {
        Self::Discard(Box::new(error))
    }
}

impl From<CredentialError> for ActError {
    fn from(error: CredentialError) -> Self {
        Self::Credentials(Box::new(error))
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ActError + '_ {
    move |source| ActError::Io {
        path: path.to_owned(),
        source,
    }
}

/// The owner of the state directory's shared records (the index of
/// instances, the record of ended sessions). Steps that change those records
/// go through it, so that one place writes them.
pub trait StateOwner: Send + Sync {
    /// Finishes the purge of `obj`, whose engine objects and checkouts are
    /// gone: removes its unit directory, sockets directory and unit lock,
    /// then its index row, last. Called with the unit lock held.
    fn finish_purge(&self, obj: &Instance) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// What a step needs besides the instance itself.
pub struct Context<'a> {
    pub engine: &'a Engine,
    pub layout: &'a Layout,
    pub state: &'a dyn StateOwner,
    /// The instance's Workspace policy, when it names one that exists.
    pub workspace: Option<&'a WorkspaceSpec>,
    /// The registry's entry for the instance's agent; `None` when no agent
    /// has that name.
    pub agent: Option<&'a ResolvedAgent>,
    /// The programs already found in images.
    pub found: &'a ProgramsFound,
    /// The subnets in use on the engine.
    pub addresses: &'a AddressBook,
    /// The operator's home, for `~` in mount sources.
    pub home: Option<PathBuf>,
    /// Where credential files are read from (see
    /// [`crate::credentials::host_home`]), or why that is not known.
    pub credentials_home: Result<PathBuf, String>,
    /// This `JACKIN_HOME`'s id, labelled on everything created.
    pub home_id: String,
}

/// What a step reports as it goes, besides its own start.
#[derive(Debug, Clone, Copy)]
pub enum Report<'a> {
    /// A line of build output.
    Build(&'a str),
    /// What the step did, or could not do, for the operator: `reason`
    /// names it as an event does. Never a secret's value. `stage` names a
    /// stage within the step (the agent binaries, within pinning), else
    /// the line is under the step's own.
    Note {
        stage: Option<&'static str>,
        reason: &'static str,
        message: &'a str,
    },
    /// What the step did, for the instance's event log only (the session
    /// edge's records: how it ended, what the exit policy decided).
    Event {
        reason: &'static str,
        message: &'a str,
    },
}

/// The name of a sidecar's container.
pub fn sidecar_name(container: &str, sidecar: &str) -> String {
    format!("{container}-{sidecar}")
}

/// Removes an engine object that no instance owns (see [`Leftover`]), by
/// its id. Returns whether it was there to remove: `false` when someone
/// else removed it first. The caller has checked that no instance claims it
/// now (for an instance's object, under the index lock).
pub async fn remove_leftover(engine: &Engine, leftover: &Leftover) -> Result<bool, ActError> {
    let id = leftover.id();
    Ok(match leftover {
        Leftover::Container(_) => engine.remove_container(id).await?,
        Leftover::Network(_) => engine.remove_network(id).await?,
        Leftover::Volume(_) => engine.remove_volume(id).await?,
        Leftover::Image(_) => engine.remove_image(id).await?,
    })
}

/// Runs `step` for `obj`, recording in its status what the step changed:
/// one line per step, each carried out by a function of its own (the pin,
/// the container and its support, the checkouts, the unit's home, the
/// session edge). Steps on existing engine objects act on the ids they
/// carry (observed by label, never looked up by name); only an object this
/// plan creates is addressed by the name it was given.
pub async fn act(
    ctx: &Context<'_>,
    step: &Step,
    obj: &mut Instance,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let container = obj
        .container_name()
        .map(str::to_owned)
        .expect("a stored instance has an identity");
    let unit = container.as_str();
    match step {
        Step::PinRecipe => pin::pin(ctx, obj, unit, progress).await,
        Step::RolloutRecipe {
            requested,
            moving,
            new_conversation,
        } => {
            let allowed = rollout::Allowed {
                moving: *moving,
                new_conversation: *new_conversation,
            };
            pin::rollout_pin(ctx, obj, unit, requested, allowed, progress).await
        }
        Step::RefuseRollout { requested, why } => {
            pin::refuse_rollout(obj, requested, why, progress);
            Ok(())
        }
        Step::RebuildImage => pin::rebuild(ctx, obj, unit, progress).await,
        Step::PrepareMounts => checkouts::prepare(ctx, obj, unit, progress).await,
        Step::RetireCheckouts => checkouts::retire(ctx, obj, unit, progress).await,
        Step::SaveConversation => checkouts::save_conversation(ctx, obj, unit, progress).await,
        Step::RemoveCheckouts => checkouts::remove(ctx, obj, unit, progress).await,
        Step::CreateNetwork => container::create_network(ctx, obj).await,
        Step::CreateVolume(volume) => container::ensure_volume(ctx, obj, volume).await,
        Step::CreateSidecar(name) => container::create_sidecar(ctx, obj, unit, name).await,
        Step::StartSidecar { name, id } => container::start_sidecar(ctx, unit, name, id).await,
        Step::CreateContainer => container::create(ctx, obj, unit, progress).await,
        Step::CopyOperatorConfig => home::copy_operator_config(ctx, obj, unit, progress).await,
        Step::ForwardCredentials => home::forward_credentials(ctx, obj, unit, progress).await,
        Step::StartContainer { id } => container::start(ctx, obj, unit, id, progress).await,
        Step::StopContainer { id } => container::stop(ctx, obj, unit, id).await,
        Step::RemoveContainer { id } | Step::RemoveSidecar { id, .. } => {
            container::remove(ctx, id).await
        }
        Step::RemoveNetwork { id } | Step::RemoveExtraNetwork(id) => {
            container::remove_network(ctx, id).await
        }
        Step::RemoveVolume(name) => container::remove_volume(ctx, name).await,
        Step::RecordRestore { tier, rollout } => {
            edge::record_restore(obj, *tier, rollout.clone());
            Ok(())
        }
        Step::StampPurging | Step::SetPhase(_) => {
            edge::set_phase(obj, step);
            Ok(())
        }
        Step::FinishPurge => ctx.state.finish_purge(obj).map_err(ActError::State),
        Step::RecordSession(outcome) => edge::record(ctx, obj, unit, outcome, progress).await,
        Step::NoteMalformedMarker(why) => {
            edge::note_malformed_marker(obj, why, progress);
            Ok(())
        }
        Step::Settle { action, policy } => {
            edge::settle(obj, step, action, *policy, progress);
            Ok(())
        }
        Step::RetireMarker => edge::retire_marker(ctx, unit).await,
        Step::ClearExitQuestion => {
            ending::apply(obj, step, &[], jiff::Timestamp::now());
            Ok(())
        }
        // The caller stops running the plan here: nothing to change.
        Step::LookAgain(_) => Ok(()),
    }
}

fn recipe_of(obj: &Instance) -> &Recipe {
    obj.recipe()
        .expect("decide plans engine objects only after pinning")
}
