//! Carrying out one step of a plan: the only place where a decision changes
//! the engine or a unit's working files (its home, state, `bin/` and
//! checkouts). The loop's plans, the session edge, the idle watch's
//! recycling and the sweep's removal of what no instance owns
//! ([`remove_leftover`]) all run here. What a step changes in the object is
//! written to its status, which the caller saves after each step; records
//! the state directory shares (the index, ended sessions) change through
//! [`StateOwner`]. Each step is idempotent, so a pass interrupted anywhere is
//! finished by the next one.

use std::path::{Path, PathBuf};

use jackin_api::ConditionStatus;
use jackin_api::agent::{StateKind, Strategy};
use jackin_api::credentials::AuthForward;
use jackin_api::instance::{
    Conversation, CredentialsStatus, Instance, InstancePhase, OutcomeSource, Recipe, RoleSource,
    RolloutRecord,
};
use jackin_api::meta::set_condition;
use jackin_api::names::{condition, label, reason};
use jackin_api::workspace::WorkspaceSpec;

use crate::addresses::{AddressBook, AddressError};
use crate::build_log::BuildLog;
use crate::credentials::{self, CredentialError};
use crate::discard::{self, DiscardError};
use crate::engine::models::{
    ContainerCreateBody, EndpointSettings, HostConfig, Mount, MountType, NetworkingConfig,
};
use crate::engine::{Engine, EngineError};
use crate::fsutil::{self, ensure_private_dir};
use crate::isolation::{self, IsolationError};
use crate::layout::Layout;
use crate::offload::blocking;
use crate::plan::{Leftover, Step};
use crate::recipe::{self, RecipeError, ResolvedAgent};
use crate::secrets::{self, SecretError};
use crate::{ending, operator_config, restricted, resume, rollout, session, token_login};

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
    /// [`credentials::host_home`]), or why that is not known.
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

/// Runs `step` for `obj`, recording in its status what the step changed.
/// Steps on existing engine objects act on the ids they carry (observed by
/// label, never looked up by name); only an object this plan creates is
/// addressed by the name it was given.
#[expect(clippy::too_many_lines, reason = "issue 42: to be split")]
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
    let engine = ctx.engine;
    match step {
        Step::PinRecipe => pin(ctx, obj, &container, progress).await?,
        Step::RolloutRecipe {
            requested,
            moving,
            new_conversation,
        } => {
            let allowed = rollout::Allowed {
                moving: *moving,
                new_conversation: *new_conversation,
            };
            rollout_pin(ctx, obj, &container, requested, allowed, progress).await?;
        }
        Step::RefuseRollout { requested, why } => {
            let message =
                format!("rollout {requested} refused, and the session runs on as pinned: {why}");
            let record =
                RolloutRecord::handled(obj, requested, jiff::Timestamp::now(), Some(why.clone()));
            let status = obj.status.get_or_insert_default();
            status.rollout = Some(record);
            set_condition(
                &mut status.conditions,
                condition::ROLLOUT,
                ConditionStatus::False,
                reason::ROLLOUT_REFUSED,
                &message,
                jiff::Timestamp::now(),
            );
            progress(Report::Note {
                stage: None,
                reason: reason::ROLLOUT_REFUSED,
                message: &message,
            });
        }
        Step::RebuildImage => rebuild(ctx, obj, &container, progress).await?,
        Step::PrepareMounts => {
            let mounts = recipe_of(obj).mounts.clone();
            let (layout, unit) = (ctx.layout.clone(), container.clone());
            let moved = blocking(move || isolation::prepare(&layout, &unit, &mounts)).await?;
            if moved && ctx.engine.inspect_container(&container).await?.is_some() {
                // A stopped container of the unit binds the earlier form's
                // git directory and entry, which are gone: it is made anew
                // (tier 2 in all but name), never started as it was.
                progress(Report::Note {
                    stage: None,
                    reason: reason::CHECKOUTS_MOVED,
                    message: "the unit's worktree checkouts moved to repositories of their own: \
                              its container, which bound their earlier form, is made anew",
                });
                engine.remove_container(&container).await?;
                create_and_record(ctx, obj, &container).await?;
            }
        }
        Step::RetireCheckouts => {
            // The container that bound them is gone: nothing writes them
            // now. What they hold unfinished is saved first, as for any
            // discard, though a rollout refuses to retire unfinished work.
            let mounts = recipe_of(obj).mounts.clone();
            let layout = ctx.layout.clone();
            let instance = obj.metadata.name.clone();
            let (saved, retired) = blocking(move || {
                let stale = |record: &isolation::IsolationRecord| {
                    !mounts.iter().any(|m| {
                        m.dst == record.dst
                            && m.src == record.src
                            && m.isolation == record.isolation
                    })
                };
                let retired: Vec<String> = isolation::read_records(&layout, &container)?
                    .iter()
                    .filter(|record| stale(record))
                    .map(|record| record.dst.clone())
                    .collect();
                let saved = discard::save_where(&layout, &container, &instance, stale)
                    .map_err(|e| ActError::Discard(Box::new(e)))?;
                isolation::remove_where(&layout, &container, stale)?;
                Ok::<_, ActError>((saved, retired))
            })
            .await?;
            for dst in &retired {
                let message = match saved.checkouts.iter().find(|c| &c.dst == dst) {
                    Some(checkout) => format!(
                        "retired the isolated checkout of {dst}, which the new spec binds \
                         otherwise; its unfinished work was saved first: {}; `jackin \
                         restore-discarded {}` brings it back",
                        checkout.summary(),
                        saved.save
                    ),
                    None => format!(
                        "retired the clean isolated checkout of {dst}, which the new spec binds \
                         otherwise"
                    ),
                };
                progress(Report::Note {
                    stage: None,
                    reason: reason::ROLLED_OUT,
                    message: &message,
                });
            }
        }
        // The conversation stays recoverable, unless the workspace said no.
        Step::SaveConversation if ctx.workspace.is_none_or(WorkspaceSpec::saves_conversations) => {
            let (layout, snapshot) = (ctx.layout.clone(), obj.clone());
            let told =
                blocking(move || discard::save_session(&layout, &container, &snapshot)).await?;
            if let Some(message) = told {
                let reason = reason::CONVERSATION_SAVED;
                progress(Report::Note {
                    stage: None,
                    reason,
                    message: &message,
                });
            }
        }
        Step::SaveConversation => {}
        Step::RemoveCheckouts => {
            // Every discard comes here: the unfinished work is saved first,
            // and nothing is deleted unless the save succeeded.
            let layout = ctx.layout.clone();
            let name = obj.metadata.name.clone();
            let instance = name.clone();
            let (saved, kept) = blocking(move || {
                let saved = discard::save_before_discard(&layout, &container, &instance)?;
                let kept = isolation::remove_all(&layout, &container)?;
                Ok::<_, ActError>((saved, kept))
            })
            .await?;
            for checkout in &saved.checkouts {
                let message = format!(
                    "saved the unfinished work of {} before discarding it: {}; `jackin \
                     restore-discarded {}` brings it back",
                    checkout.dst,
                    checkout.summary(),
                    saved.save
                );
                progress(Report::Note {
                    stage: None,
                    reason: reason::DISCARD_SAVED,
                    message: &message,
                });
            }
            for branch in kept {
                tracing::warn!(
                    instance = name,
                    "kept the scratch branch {branch}: it holds commits no other ref has; \
                     delete it with `git branch -D` once you no longer need them"
                );
            }
        }
        Step::CreateNetwork => {
            let labels = recipe_of(obj).labels.clone().into_iter().collect();
            let network = &recipe_of(obj).network;
            let subnet = ctx
                .addresses
                .create_network(engine, ctx.layout.root(), network, labels)
                .await?;
            tracing::debug!(network, %subnet, "network created");
        }
        Step::CreateVolume(volume) => ensure_volume(ctx, obj, volume).await?,
        Step::CreateSidecar(name) => {
            let recipe = recipe_of(obj);
            let sidecar = recipe
                .sidecars
                .iter()
                .find(|s| &s.name == name)
                .expect("decide only names pinned sidecars");
            let mut labels: std::collections::HashMap<String, String> =
                recipe.labels.clone().into_iter().collect();
            labels.insert(label::SIDECAR.into(), name.clone());
            // The agent reaches a sidecar by its spec name (`dind`), an
            // alias on the instance's own network, so names never clash
            // across instances.
            let endpoint = EndpointSettings {
                aliases: Some(vec![name.clone()]),
                ..Default::default()
            };
            // The Docker daemon writes its client certificates where the
            // agent reads them.
            let (mounts, env) = match (&recipe.dind, name.as_str()) {
                (Some(dind), recipe::DIND) => (
                    Some(vec![volume_mount(
                        &dind.certs_volume,
                        DIND_CLIENT_CERTS,
                        false,
                    )]),
                    Some(vec!["DOCKER_TLS_CERTDIR=/certs".to_owned()]),
                ),
                _ => (None, None),
            };
            let body = ContainerCreateBody {
                image: Some(sidecar.image.clone()),
                cmd: sidecar.command.clone(),
                labels: Some(labels),
                env,
                host_config: Some(HostConfig {
                    privileged: Some(sidecar.privileged),
                    network_mode: Some(recipe.network.clone()),
                    mounts,
                    ..restricted::sidecar(recipe)
                }),
                networking_config: Some(NetworkingConfig {
                    endpoints_config: Some([(recipe.network.clone(), endpoint)].into()),
                }),
                ..Default::default()
            };
            engine
                .create_container(&sidecar_name(&container, name), body)
                .await?;
        }
        Step::StartSidecar { name, id } => {
            let target = id.clone().unwrap_or_else(|| sidecar_name(&container, name));
            engine.start_container(&target).await?;
        }
        Step::CreateContainer => {
            restore_unit_dirs(ctx.layout, &container, progress)?;
            create_and_record(ctx, obj, &container).await?;
        }
        Step::CopyOperatorConfig => {
            let host = ctx.credentials_home.clone();
            let notes =
                operator_config::before_start(ctx.layout, host, &container, obj, ctx.agent).await;
            for note in notes {
                progress(Report::Note {
                    stage: None,
                    reason: note.reason,
                    message: &note.message,
                });
            }
        }
        Step::ForwardCredentials => forward_credentials(ctx, obj, &container, progress).await?,
        Step::StartContainer { id } => {
            restore_unit_dirs(ctx.layout, &container, progress)?;
            // The last run's marker was recorded; this run writes its own.
            session::retire_marker(ctx.layout, &container)
                .map_err(io(&ctx.layout.unit_dir(&container)))?;
            write_start_plan(ctx.layout, &container, obj).await?;
            apply_agent_settings(ctx, obj, &container, progress).await;
            let started = match engine
                .start_container(id.as_deref().unwrap_or(&container))
                .await
            {
                // The container observed was made anew since (see
                // `PrepareMounts`): the unit's container, by its name.
                Err(EngineError::Refused { status: 404, .. }) if id.is_some() => {
                    engine.start_container(&container).await?;
                    container.as_str()
                }
                started => {
                    started?;
                    id.as_deref().unwrap_or(&container)
                }
            };
            // The terminal exists before anyone attaches, at the size the
            // operator last used, so that a full-screen agent draws at once
            // (and its prompt reaches the log the overview reads). An agent
            // that already ended has no terminal to size: no matter.
            let (columns, rows) = session::terminal_size(ctx.layout, &container);
            if let Err(e) = engine.resize(started, columns, rows).await {
                tracing::debug!(container, "the new terminal keeps its size: {e}");
            }
            // From now on the recipe is the session's, never re-pinned.
            if let Some(recipe) = obj.status.as_mut().and_then(|s| s.recipe.as_mut()) {
                recipe.first_run_at.get_or_insert_with(jiff::Timestamp::now);
            }
        }
        Step::StopContainer { id } => {
            // Noted before the stop: however the agent answers SIGTERM, the
            // session that ends after it is jackin's stop (defect R14).
            obj.status.get_or_insert_default().stop_requested_at = Some(jiff::Timestamp::now());
            engine.stop_container(id, STOP_GRACE_SECS).await?;
            publish_checkouts(ctx.layout, &container).await;
        }
        Step::RemoveContainer { id } | Step::RemoveSidecar { id, .. } => {
            engine.remove_container(id).await?;
        }
        Step::RemoveNetwork { id } | Step::RemoveExtraNetwork(id) => {
            engine.remove_network(id).await?;
        }
        Step::RemoveVolume(name) => {
            engine.remove_volume(name).await?;
        }
        Step::StampPurging => {
            obj.status.get_or_insert_default().phase = Some(InstancePhase::Purging);
        }
        Step::FinishPurge => ctx.state.finish_purge(obj).map_err(ActError::State)?,
        Step::RecordSession(outcome) => {
            ending::apply(obj, step, &[], jiff::Timestamp::now());
            let message = match outcome.exit_code {
                Some(code) if outcome.source != OutcomeSource::Unknown => {
                    format!("the session ended with exit code {code}")
                }
                _ => "the session ended; its outcome is unknown".to_owned(),
            };
            progress(Report::Event {
                reason: reason::SESSION_ENDED,
                message: &message,
            });
            // What the agent left in `state/artifacts/` is kept outside the
            // unit, which a purge may take next.
            let finished = outcome
                .finished_at
                .unwrap_or_else(jiff::Timestamp::now)
                .to_string();
            let (layout, name) = (ctx.layout.clone(), obj.metadata.name.clone());
            let unit = container.clone();
            let collected = blocking(move || {
                Ok::<_, ActError>(session::collect_artifacts(&layout, &unit, &name, &finished))
            })
            .await?;
            match collected {
                Ok(Some(to)) => progress(Report::Event {
                    reason: reason::ARTIFACTS_COLLECTED,
                    message: &format!("moved to {}", to.display()),
                }),
                Ok(None) => {}
                Err(e) => tracing::warn!(
                    instance = obj.metadata.name,
                    "cannot collect artifacts: {e}"
                ),
            }
        }
        Step::NoteMalformedMarker(why) => {
            ending::apply(obj, step, &[], jiff::Timestamp::now());
            progress(Report::Event {
                reason: condition::MARKER_MALFORMED,
                message: why,
            });
        }
        Step::Settle { action, policy } => {
            let mounts = obj
                .status
                .as_ref()
                .map(|s| s.mounts.clone())
                .unwrap_or_default();
            ending::apply(obj, step, &mounts, jiff::Timestamp::now());
            progress(Report::Event {
                reason: condition::EXIT_POLICY,
                message: &format!("exit policy {}: {action}", policy.as_str()),
            });
        }
        Step::RetireMarker => {
            let layout = ctx.layout.clone();
            let path = ctx.layout.unit_dir(&container);
            blocking(move || {
                session::retire_marker(&layout, &container)
                    .map_err(|source| ActError::Io { path, source })
            })
            .await?;
        }
        Step::ClearExitQuestion => ending::apply(obj, step, &[], jiff::Timestamp::now()),
        Step::SetPhase(phase) => obj.status.get_or_insert_default().phase = Some(*phase),
        // The caller stops running the plan here: nothing to change.
        Step::LookAgain(_) => {}
    }
    Ok(())
}

/// The status's record of the credential hand-off, made for `mode` if the
/// session has none yet.
fn credentials_record(obj: &mut Instance, mode: AuthForward) -> &mut CredentialsStatus {
    let record = obj
        .status
        .get_or_insert_default()
        .credentials
        .get_or_insert_with(|| CredentialsStatus {
            mode,
            ..Default::default()
        });
    record.mode = mode;
    record
}

/// Copies the logins the recipe forwards into the unit's home, before the
/// container starts (nothing of the agent runs then), records what went
/// and what did not, and reports it line by line: the names, never a value.
async fn forward_credentials(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let Some(pinned) = recipe_of(obj)
        .credentials
        .clone()
        .filter(jackin_api::credentials::PinnedCredentials::forwards_anything)
    else {
        return Ok(());
    };
    let home = ctx.layout.unit_home_dir(container);
    let host = ctx.credentials_home.clone();
    let mode = pinned.mode;
    let files = blocking(move || {
        credentials::forward_files(&pinned, host.as_deref().map_err(String::as_str), &home)
    })
    .await?;
    let record = credentials_record(obj, mode);
    record.files = files.files;
    record.files_missing = files.missing;
    for note in credentials::notes(record) {
        progress(Report::Note {
            stage: None,
            reason: note.reason,
            message: &note.message,
        });
    }
    Ok(())
}

fn recipe_of(obj: &Instance) -> &Recipe {
    obj.recipe()
        .expect("decide plans engine objects only after pinning")
}

async fn pin(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let mut pinned = resolve_recipe(ctx, obj, container, progress).await?;
    // Pinned again before a first run: the engine stays the one pinned
    // first, where this instance's objects may already be.
    // A rollout's recipe pinned again (the spec changed once more before
    // its container ran) is still a rollout: the unit's conversation goes on.
    if let Some(earlier) = obj.recipe() {
        pinned.engine = earlier.engine.clone();
        pinned.replaces = earlier.replaces.clone();
    }
    // So does one that has started before: a session made again from its
    // save (`restore-discarded --session`).
    let conversation = match obj.status.as_ref().and_then(|s| s.conversation.clone()) {
        Some(c) if pinned.replaces.is_some() || c.last_start.is_some() => Some(c),
        _ => new_conversation(obj, &pinned),
    };
    let status = obj.status.get_or_insert_default();
    status.conversation = conversation;
    status.recipe = Some(pinned);
    Ok(())
}

/// A rollout's pin: the recipe from the current spec, and the unit as it
/// is. The conversation goes on when the agent is the same (its id, its
/// history of starts) and the operator did not ask for a new one; the
/// checkouts the new recipe binds otherwise are retired (the rollout was
/// refused if any of them held unfinished work).
async fn rollout_pin(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    requested: &str,
    allowed: rollout::Allowed,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let earlier = recipe_of(obj).clone();
    let mut pinned = resolve_recipe(ctx, obj, container, progress).await?;
    if !allowed.moving {
        pinned.engine = earlier.engine.clone();
    }
    pinned.replaces = Some(earlier.image_id.clone());
    let same_agent = |c: &Conversation| {
        pinned
            .agent
            .as_ref()
            .is_some_and(|a| a.name == c.agent && a.strategy == c.strategy)
            // The spec's id goes on when the session has had it (renewed
            // since: the conversation under its newest id goes on).
            && (c.strategy != Strategy::Id
                || obj.spec.conversation_id.as_deref().is_none_or(|id| c.has_had(id)))
    };
    let status = obj.status.get_or_insert_default();
    let kept = status
        .conversation
        .take()
        .filter(|c| !allowed.new_conversation && same_agent(c));
    let anew = kept.is_none();
    let conversation = match kept {
        Some(conversation) => Some(conversation),
        None => new_conversation(obj, &pinned),
    };
    let changed = rollout::diff(&earlier, &pinned);
    let mut message = match changed.as_slice() {
        [] => format!("rollout {requested}: pinned again from the unchanged spec"),
        lines => format!("rollout {requested}: {}", lines.join("; ")),
    };
    if anew {
        message.push_str("; the agent's conversation starts anew");
    }
    let mut record = RolloutRecord::handled(obj, requested, jiff::Timestamp::now(), None);
    record.new_conversation = anew;
    let status = obj.status.get_or_insert_default();
    status.conversation = conversation;
    status.recipe = Some(pinned);
    status.rollout = Some(record);
    set_condition(
        &mut status.conditions,
        condition::ROLLOUT,
        ConditionStatus::True,
        reason::ROLLED_OUT,
        &message,
        jiff::Timestamp::now(),
    );
    progress(Report::Note {
        stage: None,
        reason: reason::ROLLED_OUT,
        message: &message,
    });
    Ok(())
}

/// A first conversation for a session pinned to `pinned`: the spec's id,
/// else a new one, for an agent that takes ids.
fn new_conversation(obj: &Instance, pinned: &Recipe) -> Option<Conversation> {
    let agent = pinned.agent.as_ref()?;
    let id = (agent.strategy == Strategy::Id).then(|| {
        obj.spec
            .conversation_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
    });
    Some(Conversation {
        agent: agent.name.clone(),
        strategy: agent.strategy,
        id: id.clone(),
        ids: id.into_iter().collect(),
        next_id: None,
        last_start: None,
        fallbacks: 0,
        start_stamp: None,
        start_fallbacks: 0,
        report_modified: None,
        start_settles_at: None,
        last_fallback: None,
    })
}

/// The recipe the spec asks for now, resolved: the role built (or the
/// image looked up), the agent's program found (or installed), its
/// version probed, the command, working directory and user filled in.
async fn resolve_recipe(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<Recipe, ActError> {
    for dir in [
        ctx.layout.unit_home_dir(container),
        ctx.layout.unit_state_dir(container),
    ] {
        ensure_private_dir(&dir).map_err(io(&dir))?;
    }
    // The unit is whole from here on: a directory of it missing at a start
    // was deleted, and is reported when it is made again.
    session::install_entry(ctx.layout, container).map_err(io(&ctx.layout.unit_dir(container)))?;
    if ctx.agent.is_none() {
        return Err(ActError::UnknownAgent(obj.spec.agent.clone()));
    }
    let mut pinned = recipe::wanted(
        obj,
        ctx.workspace,
        ctx.agent,
        container,
        ctx.home.as_deref(),
        &ctx.home_id,
    );
    let defaults = match (&obj.spec.image, &obj.spec.role.source) {
        (Some(image), _) => {
            let found = ctx
                .engine
                .image_defaults(image)
                .await?
                .ok_or_else(|| RecipeError::ImageNotFound(image.clone()))?;
            pinned.image_id = found.id.clone();
            found
        }
        (None, Some(source)) => {
            let built =
                build_role(ctx, container, &obj.spec.role.name, source, None, progress).await?;
            pinned.image = built.tag;
            pinned.image_id = built.id;
            pinned.role_commit = Some(built.commit);
            pinned.base_image = built.base;
            recipe::pin_role_config(&mut pinned, built.config);
            ctx.engine
                .image_defaults(&pinned.image_id)
                .await?
                .ok_or_else(|| RecipeError::ImageNotFound(pinned.image_id.clone()))?
        }
        (None, None) => unreachable!("validation requires an image or a role source"),
    };
    // The wrapper runs the argv itself, so the image's default is pinned
    // too; so is its working directory, which agents that continue "the
    // latest conversation here" key their conversations by.
    // The agent's program (the registry's launch argv, or spec.command)
    // must be in the image: without it every start would fail.
    // An agent the image lacks is installed into a derived image, when its
    // entry says how.
    if let Some(program) = pinned.command.first().cloned() {
        match check_program(ctx, &pinned.image, &pinned.image_id, &program).await {
            Err(ActError::AgentMissing { .. })
                if pinned
                    .agent
                    .as_ref()
                    .is_some_and(|a| !a.spec.install.is_empty()) =>
            {
                let role_image = pinned.image_id.clone();
                install_agent(
                    ctx,
                    container,
                    &obj.spec.role.name,
                    &mut pinned,
                    &role_image,
                    defaults.user.as_deref(),
                    progress,
                )
                .await?;
                check_program(ctx, &pinned.image, &pinned.image_id, &program).await?;
            }
            checked => checked?,
        }
    }
    // The rungs the installed agent knows depend on its version.
    if let Some(agent) = pinned.agent.as_mut()
        && let Some(rule) = &agent.spec.version
    {
        agent.version = agent_version(ctx, &pinned.image_id, &rule.probe).await?;
    }
    if pinned.command.is_empty() {
        pinned.command = defaults.command;
        if pinned.command.is_empty() {
            return Err(ActError::NoCommand(pinned.image.clone()));
        }
    }
    // The agent starts where its work is: the spec's directory, else the
    // first mount (a checkout, usually), else the image's, else its home.
    pinned.working_dir = recipe::chosen_working_dir(&pinned)
        .map(str::to_owned)
        .or(defaults.working_dir.filter(|dir| !dir.is_empty()))
        .or_else(|| Some(AGENT_HOME.to_owned()));
    // The operator's uid and gid: the owner of the unit this process made.
    if recipe::runs_as_host_user(obj, ctx.workspace) {
        use std::os::unix::fs::MetadataExt;
        let unit = ctx.layout.unit_dir(container);
        let meta = std::fs::metadata(&unit).map_err(io(&unit))?;
        pinned.user = Some(format!("{}:{}", meta.uid(), meta.gid()));
    }
    Ok(pinned)
}

/// Makes one of the instance's named volumes, labelled as its own; a
/// volume of that name that is not the instance's is refused, never used.
async fn ensure_volume(ctx: &Context<'_>, obj: &Instance, volume: &str) -> Result<(), ActError> {
    let recipe = recipe_of(obj);
    let labels: std::collections::HashMap<String, String> =
        recipe.labels.clone().into_iter().collect();
    let found = ctx.engine.create_volume(volume, labels.clone()).await?;
    if found.get(label::UID) != labels.get(label::UID) {
        return Err(ActError::ForeignVolume(volume.to_owned()));
    }
    Ok(())
}

/// A mount of one of the instance's named volumes.
fn volume_mount(volume: &str, target: &str, read_only: bool) -> Mount {
    Mount {
        target: Some(target.to_owned()),
        source: Some(volume.to_owned()),
        typ: Some(MountType::VOLUME),
        read_only: Some(read_only),
        ..Default::default()
    }
}

/// What probes found in images, by image id: an image is immutable, so a
/// program found once is there for good (and its version stays what it
/// was), and launching many instances of one image probes it once:
/// instances launched together wait for the one probe under way rather
/// than each starting its own.
#[derive(Debug, Default)]
pub struct ProgramsFound {
    /// By (image id, program): whether it is there.
    programs: Answers<String, ()>,
    /// By (image id, version probe): the version it printed.
    versions: Answers<Vec<String>, Option<String>>,
}

/// Set once found; probed by the first who asks.
type Answer<T> = std::sync::Arc<tokio::sync::OnceCell<T>>;

/// The answers of one kind of probe, by image id and what was asked.
type Answers<Q, T> = std::sync::Mutex<std::collections::HashMap<(String, Q), Answer<T>>>;

impl ProgramsFound {
    /// The answer for `program` in `image_id`, shared by every caller.
    fn program(&self, image_id: &str, program: &str) -> Answer<()> {
        self.programs
            .lock()
            .expect("the map is never poisoned")
            .entry((image_id.to_owned(), program.to_owned()))
            .or_default()
            .clone()
    }

    /// The answer of the version probe `argv` in `image_id`.
    fn version(&self, image_id: &str, argv: &[String]) -> Answer<Option<String>> {
        self.versions
            .lock()
            .expect("the map is never poisoned")
            .entry((image_id.to_owned(), argv.to_vec()))
            .or_default()
            .clone()
    }
}

/// Looks for `program` in the image, as the image's shell finds commands,
/// in a throwaway container (once per image and program).
async fn check_program(
    ctx: &Context<'_>,
    image: &str,
    image_id: &str,
    program: &str,
) -> Result<(), ActError> {
    let answer = ctx.found.program(image_id, program);
    // A missing program is not remembered: the next launch looks again.
    answer
        .get_or_try_init(|| async {
            if !crate::probes::program_found(ctx.layout, image_id, program) {
                probe_program(ctx, image, image_id, program).await?;
                crate::probes::remember_program(ctx.layout, image_id, program);
            }
            Ok::<_, ActError>(())
        })
        .await?;
    Ok(())
}

/// The agent's version in the image, as `probe` prints it (once per image
/// and probe): `None` when it printed no version or did not run.
async fn agent_version(
    ctx: &Context<'_>,
    image_id: &str,
    probe: &[String],
) -> Result<Option<String>, ActError> {
    let answer = ctx.found.version(image_id, probe);
    let found = answer
        .get_or_try_init(|| async {
            if let Some(version) = crate::probes::version_found(ctx.layout, image_id, probe) {
                return Ok(Some(version));
            }
            let ran = ctx
                .engine
                .probe(image_id, probe.to_vec(), probe_labels(ctx))
                .await?;
            let version = match ran.exit_code {
                Some(0) => jackin_api::agent::find_version(&ran.output),
                _ => None,
            };
            if let Some(version) = &version {
                crate::probes::remember_version(ctx.layout, image_id, probe, version);
            }
            Ok::<_, ActError>(version)
        })
        .await?;
    Ok(found.clone())
}

/// A probe container is labelled as this home's and no instance's: a sweep
/// removes one that a crash left behind.
fn probe_labels(ctx: &Context<'_>) -> std::collections::HashMap<String, String> {
    [
        (label::MANAGED.to_owned(), "true".to_owned()),
        (label::HOME.to_owned(), ctx.home_id.clone()),
    ]
    .into()
}

/// Runs `command -v PROGRAM` in a throwaway container of the image.
async fn probe_program(
    ctx: &Context<'_>,
    image: &str,
    image_id: &str,
    program: &str,
) -> Result<(), ActError> {
    let argv = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        r#"command -v "$1" >/dev/null 2>&1"#.to_owned(),
        "probe".to_owned(),
        program.to_owned(),
    ];
    match ctx
        .engine
        .probe(image_id, argv, probe_labels(ctx))
        .await?
        .exit_code
    {
        Some(0) => Ok(()),
        _ => Err(ActError::AgentMissing {
            program: program.to_owned(),
            image: image.to_owned(),
        }),
    }
}

async fn rebuild(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let recipe = recipe_of(obj);
    let (Some(git), Some(commit)) = (&recipe.role_source, &recipe.role_commit) else {
        // An image given by name cannot be rebuilt; the agent installed on
        // it can, while that image is still there.
        if let Some(base) = recipe.derived_from.clone()
            && let Some(defaults) = ctx.engine.image_defaults(&base).await?
        {
            let mut recipe = recipe.clone();
            install_agent(
                ctx,
                container,
                &obj.spec.role.name,
                &mut recipe,
                &base,
                defaults.user.as_deref(),
                progress,
            )
            .await?;
            obj.status.get_or_insert_default().recipe = Some(recipe);
            return Ok(());
        }
        return Err(RecipeError::NothingToRebuild.into());
    };
    let source = RoleSource {
        git: git.clone(),
        git_ref: None,
    };
    let base = recipe.base_image.clone();
    let role = obj.spec.role.name.clone();
    let pinned = Some((commit.as_str(), base.as_deref()));
    let built = build_role(ctx, container, &role, &source, pinned, progress).await?;
    let recipe = obj
        .status
        .as_mut()
        .and_then(|s| s.recipe.as_mut())
        .expect("checked above");
    recipe.image = built.tag;
    recipe.image_id = built.id;
    // The session ran the agent installed on the role image: so it does
    // again, on the role image rebuilt.
    if recipe.derived_from.is_some() {
        let role_image = recipe.image_id.clone();
        let user = ctx
            .engine
            .image_defaults(&role_image)
            .await?
            .and_then(|d| d.user);
        install_agent(
            ctx,
            container,
            &role,
            recipe,
            &role_image,
            user.as_deref(),
            progress,
        )
        .await?;
    }
    Ok(())
}

/// The role's image, built from `source` (at `pinned`, the commit and base
/// image of a rebuild): a failed build's output is kept in the unit
/// (`role-build.log`) and the error says where; a later success removes it.
async fn build_role(
    ctx: &Context<'_>,
    container: &str,
    role: &str,
    source: &RoleSource,
    pinned: Option<(&str, Option<&str>)>,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<recipe::BuiltImage, ActError> {
    let mut log = BuildLog::new(&ctx.layout.unit_meta_dir(container), "role-build.log");
    let built = recipe::build_role(
        ctx.engine,
        &ctx.home_id,
        role,
        source,
        pinned,
        &mut |line| {
            log.line(line);
            progress(Report::Build(line));
        },
    )
    .await;
    match built {
        Ok(built) => {
            log.succeeded();
            Ok(built)
        }
        // Before the build ran (a ref that names nothing, no Dockerfile)
        // there is no output to keep: the error says it all.
        Err(error) => Err(match log.failed() {
            Some(log) => ActError::RoleBuild {
                role: role.to_owned(),
                log,
                source: Box::new(error),
            },
            None => error.into(),
        }),
    }
}

/// The agent's install block on top of `base` (the role image, running as
/// `user`): the recipe then pins the derived image, and the image it was
/// derived from. Shown as the `agent binaries` and `derived image` stages.
/// A failed build's output is kept in the unit (`agent-install.log`) and
/// the error says where; a later success removes it.
async fn install_agent(
    ctx: &Context<'_>,
    container: &str,
    role: &str,
    recipe: &mut Recipe,
    base: &str,
    user: Option<&str>,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let agent = recipe.agent.as_ref().expect("only an agent entry installs");
    let program = recipe.command.first().cloned().unwrap_or_default();
    progress(Report::Note {
        stage: Some("agent binaries"),
        reason: reason::AGENT_INSTALL,
        message: &format!(
            "{program} is not in {}: installing {} from its entry's install block ({})",
            recipe.image,
            agent.name,
            plural_instructions(agent.spec.install.len())
        ),
    });
    let mut log = BuildLog::new(&ctx.layout.unit_meta_dir(container), "agent-install.log");
    let built = recipe::derive_agent_image(
        ctx.engine,
        &ctx.home_id,
        role,
        &agent.name,
        base,
        user,
        &agent.spec.install,
        &mut |line| {
            log.line(line);
            progress(Report::Build(line));
        },
    )
    .await;
    let derived = match built {
        Ok(derived) => derived,
        Err(error) => {
            return Err(ActError::AgentInstall {
                agent: agent.name.clone(),
                log: log.failed(),
                source: Box::new(error),
            });
        }
    };
    log.succeeded();
    progress(Report::Note {
        stage: Some("derived image"),
        reason: reason::AGENT_INSTALL,
        message: &format!(
            "{} {} ({} with {} installed)",
            if derived.cached { "using" } else { "built" },
            derived.tag,
            recipe.image,
            agent.name
        ),
    });
    recipe.derived_from = Some(base.to_owned());
    recipe.image = derived.tag;
    recipe.image_id = derived.id;
    Ok(())
}

fn plural_instructions(n: usize) -> String {
    match n {
        1 => "1 instruction".to_owned(),
        n => format!("{n} instructions"),
    }
}

/// Writes the plan the entry wrapper walks at this start, from the latest
/// report of how the agent last started.
async fn write_start_plan(
    layout: &Layout,
    container: &str,
    obj: &mut Instance,
) -> Result<(), ActError> {
    let (reading, unit) = (layout.clone(), container.to_owned());
    let report = blocking(move || Ok::<_, ActError>(resume::read_report(&reading, &unit))).await?;
    let status = obj.status.get_or_insert_default();
    let now = jiff::Timestamp::now();
    // A new session starts: a stop asked of an earlier one is not its.
    status.stop_requested_at = None;
    if let (Some(conversation), Some(report)) = (status.conversation.as_mut(), &report)
        && conversation.strategy != Strategy::None
    {
        resume::fold_report(conversation, report, now);
    }
    if let Some(conversation) = status.conversation.as_mut() {
        resume::mint_next_id(conversation);
    }
    let rungs = resume::ladder(
        status
            .recipe
            .as_ref()
            .expect("a started instance has its recipe"),
        status.conversation.as_ref(),
    );
    if let Some(conversation) = status.conversation.as_mut() {
        resume::note_start(conversation, &rungs, now);
    }
    let (writing, unit) = (layout.clone(), container.to_owned());
    let credentials = status.recipe.as_ref().and_then(|r| r.credentials.clone());
    blocking(move || {
        // The last start's report, taken in above, goes: a report found
        // from now on is this start's.
        resume::forget_report(&writing, &unit)
            .map_err(io(&resume::report_file(&writing, &unit)))?;
        // The wrapper runs the token login steps before the plan's rungs.
        token_login::write_before_start(&writing, &unit, credentials.as_ref(), AGENT_HOME)
            .map_err(io(&token_login::login_file(&writing, &unit)))?;
        resume::write_plan(&writing, &unit, &rungs).map_err(io(&resume::plan_file(&writing, &unit)))
    })
    .await?;
    Ok(())
}

/// Sets the agent's settings in the unit, last of what writes the agent's
/// files before it starts; a file left alone is a note (and an event).
async fn apply_agent_settings(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) {
    let left_alone =
        crate::agent_settings::before_start(ctx.layout, container, obj, ctx.agent, ctx.workspace)
            .await;
    for why in left_alone {
        progress(Report::Note {
            stage: None,
            reason: reason::AGENT_SETTING_LEFT_ALONE,
            message: &why,
        });
    }
}

/// Once a container has stopped, nothing writes the unit's worktree
/// repositories: their branches reach the host repository as they are. A
/// publication that cannot be made (the operator moved the branch) stops
/// nothing: it is logged, and the work stays in the unit.
async fn publish_checkouts(layout: &Layout, container: &str) {
    let (layout, unit) = (layout.clone(), container.to_owned());
    blocking(move || {
        let records = match isolation::read_records(&layout, &unit) {
            Ok(records) => records,
            Err(e) => return tracing::warn!(container = unit, "{e}"),
        };
        for record in records.iter().filter(|r| r.scratch_branch.is_some()) {
            if let Err(e) = isolation::publish(record) {
                tracing::warn!(container = unit, "{e}");
            }
        }
    })
    .await;
}

/// Makes again the unit's directories the container binds that someone
/// deleted, each with a note (an event): the engine would refuse the bind.
fn restore_unit_dirs(
    layout: &Layout,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let made =
        session::restore_unit_dirs(layout, container).map_err(io(&layout.unit_dir(container)))?;
    for dir in made {
        progress(Report::Note {
            stage: None,
            reason: reason::UNIT_DIRECTORY_MADE,
            message: &format!(
                "the unit's {dir}/ was missing: made again, empty (what it held is lost)"
            ),
        });
    }
    Ok(())
}

/// Creates the agent's container and records what its credential
/// variables gave it.
async fn create_and_record(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
) -> Result<(), ActError> {
    let (env, env_missing) = create_container(ctx, obj, container).await?;
    let mode = recipe_of(obj).credentials.as_ref().map(|c| c.mode);
    if let Some(mode) = mode {
        let record = credentials_record(obj, mode);
        record.env = env;
        record.env_missing = env_missing;
    }
    Ok(())
}

/// Creates the agent's container. Returns what the credential variables
/// gave it (`token`): the names set, and why a set got none.
#[expect(clippy::too_many_lines, reason = "issue 42: to be split")]
async fn create_container(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
) -> Result<(Vec<String>, Vec<String>), ActError> {
    let recipe = recipe_of(obj);
    let unit = ctx.layout.unit_dir(container);
    let bind = |src: String, dst: &str, read_only: bool| Mount {
        target: Some(dst.to_owned()),
        source: Some(src),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        ..Default::default()
    };
    let entry = session::install_entry(ctx.layout, container).map_err(io(&unit))?;
    // The wrapper's directory, not the file alone: the start plan beside it
    // is replaced before each start, and a bind of one file would keep
    // showing the replaced one.
    let bin = entry.parent().expect("the entry has a directory");
    let mut mounts = vec![
        bind(
            ctx.layout.unit_home_dir(container).display().to_string(),
            AGENT_HOME,
            false,
        ),
        bind(
            ctx.layout.unit_state_dir(container).display().to_string(),
            STATE_DIR,
            false,
        ),
        bind(bin.display().to_string(), session::BIN_DIR, true),
    ];
    if let Some(dind) = &recipe.dind {
        // Made here too: the engine would make a missing one itself,
        // unlabelled, and then it would be nobody's.
        ensure_volume(ctx, obj, &dind.certs_volume).await?;
        mounts.push(volume_mount(&dind.certs_volume, DIND_CLIENT_CERTS, true));
    }
    let bound = isolation::bind_sources(ctx.layout, container, &recipe.mounts)?;
    mounts.extend(
        bound
            .iter()
            .map(|m| bind(m.src.clone(), &m.dst, m.readonly)),
    );
    let (layout, unit_name) = (ctx.layout.clone(), container.to_owned());
    let git = blocking(move || isolation::git_binds(&layout, &unit_name)).await?;
    mounts.extend(
        git.into_iter()
            .map(|g| bind(g.source, &g.target, g.read_only)),
    );
    // Resolved here, handed to the engine, kept nowhere. Reading files and
    // running `op` block: off the runtime.
    let vars = recipe.env.clone();
    let mut env = blocking(move || secrets::resolve(&vars)).await?;
    // The logins' variables (`token`), likewise resolved here and kept
    // nowhere; one the spec sets is the operator's.
    let (mut credential_names, mut credential_missing) = (Vec::new(), Vec::new());
    if let Some(pinned) = recipe.credentials.clone() {
        let set_by_spec: Vec<String> = recipe.env.iter().map(|v| v.name.clone()).collect();
        let resolved = blocking(move || credentials::resolve_env(&pinned, &set_by_spec)).await;
        env.extend(resolved.env);
        credential_names = resolved.names;
        credential_missing = resolved.missing;
    }
    if !recipe.env.iter().any(|v| v.name == "HOME") {
        env.push(format!("HOME={AGENT_HOME}"));
    }
    // The agent's state goes in the unit's home, unless the operator put it
    // elsewhere.
    if let Some(state) = recipe
        .agent
        .as_ref()
        .and_then(|a| a.spec.state_env.as_ref())
        && !recipe.env.iter().any(|v| v.name == state.name)
    {
        let relative = state.path.trim_matches('/');
        let path = match relative {
            "" | "." => AGENT_HOME.to_owned(),
            path => format!("{AGENT_HOME}/{path}"),
        };
        // The agent's own home is agent-writable: made without following
        // any link in it. A directory it names exists before it starts.
        let made = match state.kind {
            StateKind::Directory => Path::new(relative),
            StateKind::File => Path::new(relative).parent().unwrap_or(Path::new("")),
        };
        let home = ctx.layout.unit_home_dir(container);
        // A recipe pinned before entries said their kind says nothing: a
        // file already there (an aider history) is taken as it is.
        let existing_file = std::fs::symlink_metadata(home.join(made)).is_ok_and(|m| m.is_file());
        if !existing_file {
            fsutil::ensure_real_dir_below(&home, made).map_err(io(&home.join(made)))?;
        }
        env.push(format!("{}={path}", state.name));
    }
    // The agent's Docker daemon, unless the operator points it elsewhere.
    if recipe.dind.is_some() {
        for (name, value) in [
            ("DOCKER_HOST", format!("tcp://{}:2376", recipe::DIND)),
            ("DOCKER_TLS_VERIFY", "1".to_owned()),
            ("DOCKER_CERT_PATH", DIND_CLIENT_CERTS.to_owned()),
        ] {
            if !recipe.env.iter().any(|v| v.name == name) {
                env.push(format!("{name}={value}"));
            }
        }
    }
    // A terminal the agent can draw on, unless the recipe says otherwise.
    for (name, value) in [("TERM", "xterm-256color"), ("COLORTERM", "truecolor")] {
        if !recipe.env.iter().any(|v| v.name == name) {
            env.push(format!("{name}={value}"));
        }
    }
    env.extend([
        format!("JACKIN_INSTANCE={}", obj.metadata.name),
        format!("JACKIN_AGENT={}", obj.spec.agent),
        format!(
            "JACKIN_WORKSPACE={}",
            obj.spec.workspace.as_deref().unwrap_or_default()
        ),
        format!("JACKIN_CONTAINER={container}"),
        // The init forwards signals to the whole process group, so a stop
        // reaches the agent under the wrapper.
        "TINI_KILL_PROCESS_GROUP=1".to_owned(),
    ]);
    let body = ContainerCreateBody {
        image: Some(recipe.image_id.clone()),
        entrypoint: Some(vec!["/bin/sh".into(), session::ENTRY_PATH.into()]),
        cmd: Some(recipe.command.clone()),
        env: Some(env),
        labels: Some(recipe.labels.clone().into_iter().collect()),
        hostname: Some(container.to_owned()),
        user: recipe.user.clone(),
        working_dir: recipe.working_dir.clone(),
        tty: Some(true),
        open_stdin: Some(true),
        host_config: Some(HostConfig {
            // An init process forwards signals to the agent and reaps the
            // processes it leaves behind.
            init: Some(true),
            network_mode: Some(recipe.network.clone()),
            mounts: Some(mounts),
            // Where a token login step keeps its login: not in the unit.
            tmpfs: token_login::tmpfs(recipe.credentials.as_ref()),
            ..restricted::agent(recipe)
        }),
        ..Default::default()
    };
    ctx.engine.create_container(container, body).await?;
    Ok((credential_names, credential_missing))
}
