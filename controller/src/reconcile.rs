//! One reconcile of one instance: lock it, observe, decide, act step by step
//! (persisting the status after each), and observe again until the plan is
//! empty. Used alike by the one-shot commands and the controller.
//!
//! Each round looks at the instance (`look`), decides, and runs the plan
//! through `act` up to its first `LookAgain`, then observes afresh. A plan
//! decided from a snapshot shared by a pass over many instances is never
//! run, since the snapshot may predate the unit lock: the instance is
//! observed on its own first. Such a pass takes a lean snapshot of each
//! engine (its containers, and its networks when an instance there is
//! kept) and asks [`already_converged`] of each row, which answers from
//! the row and the snapshot alone, so a pass over instances that need
//! nothing costs one or two listings per engine, whatever their number.
//! An instance given up on (`Instance::gave_up`) is refused before any
//! engine is asked. One to purge whose engine cannot be reached is purged
//! without it when it never made anything there or the engine can never
//! be reached as named (against `offline`, what it may have left there
//! said); otherwise the purge waits for the engine.

use std::borrow::Cow;
use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use futures::StreamExt;
use futures::stream::FuturesUnordered;

use jackin_act::observe::Observation;
use jackin_act::resume;
use jackin_act::{ActError, Context};
use jackin_api::ConditionStatus;
use jackin_api::DesiredPhase;
use jackin_api::instance::{Instance, InstancePhase, MountStatus, Recipe, RolloutRecord};
use jackin_api::meta::{remove_condition, set_condition};
use jackin_api::names::{annotation, condition, reason};
use jackin_api::workspace::WorkspaceSpec;
use jackin_checkouts::assess;
use jackin_checkouts::isolation;
use jackin_engine::EngineError;
use jackin_files::layout::Layout;
use jackin_plan::decide::decide;
use jackin_plan::ladder;
use jackin_plan::plan::{Plan, Step, Tier};
use jackin_plan::recipe;
use jackin_plan::recipe::ResolvedAgent;
use jackin_plan::view::InstanceView;
use jackin_plan::view::Rollout;
use jiff::Timestamp;

use crate::engines::{Connected, EngineName, Engines, display_name};
use crate::events;
use crate::failure::{self, Failure, MAX_ROUNDS, ReconcileError};
use crate::index::IndexRow;
use crate::store::{InstanceGuard, Store, StoreError};

/// Where a reconcile left the instance.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// The instance is in its desired phase.
    Converged {
        phase: InstancePhase,
        /// The restore tier performed by this reconcile, if any.
        tier: Option<Tier>,
    },
    /// This reconcile purged the instance: it no longer exists.
    Gone,
    /// There was no such instance to reconcile.
    Absent,
    /// A purge waits for an acknowledgement of the unfinished work in its
    /// isolated checkouts; `digest` is what the acknowledgement must quote.
    Blocked { digest: String },
    /// This reconcile purged the instance without its engine, which cannot
    /// be reached (`why`): what the instance may have made there is
    /// `left_behind`, empty when it never made anything there.
    PurgedWithoutEngine {
        engine: String,
        why: String,
        left_behind: Vec<String>,
    },
}

impl std::fmt::Display for Outcome {
    /// Where the instance was left, in words, for messages and logs.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Converged { phase, tier: None } => write!(f, "{phase}"),
            Self::Converged {
                phase,
                tier: Some(tier),
            } => write!(f, "{phase} (restored, tier {tier})"),
            Self::Gone => f.write_str("purged"),
            Self::Absent => f.write_str("no such instance"),
            Self::Blocked { digest } => write!(
                f,
                "the purge waits for unfinished work to be acknowledged (digest {digest})"
            ),
            Self::PurgedWithoutEngine {
                engine,
                left_behind,
                ..
            } => match left_behind.as_slice() {
                [] => write!(f, "purged (it never made anything on engine {engine})"),
                left => write!(
                    f,
                    "purged without engine {engine}, leaving there: {}",
                    left.join(", ")
                ),
            },
        }
    }
}

/// How a reconcile's work under the instance's lock ended, short of a
/// failure.
enum Locked {
    Ended(Outcome),
    /// A rollout moved the session to another engine: the reconcile goes
    /// on there, the lock released and taken again.
    Moved,
}

/// A reconcile decided but not run: see [`Reconciler::dry_run`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DryRun {
    /// The instance's unit; empty for an instance not created yet.
    pub container: String,
    /// The steps, as acknowledged when `blocked` says a purge waits.
    pub plan: Plan,
    /// The digest of the unfinished work a purge would discard, which an
    /// acknowledgement must quote before anything happens.
    pub blocked: Option<String>,
}

/// What a reconcile reports as it goes.
#[derive(Debug)]
pub enum Progress<'a> {
    Step(&'a Step),
    /// A line of build output.
    Build(&'a str),
    /// What a step did, or could not do, that the operator should read
    /// (what credentials reached the session, and what is missing; the
    /// agent installed into a derived image): the stage it belongs to (its
    /// step's, or one within it) and the line. Also kept as an event.
    Note {
        stage: &'a str,
        message: &'a str,
    },
}

/// Receives progress as `(instance name, event)`.
pub type ProgressSink = Arc<dyn Fn(&str, Progress<'_>) + Send + Sync>;

/// A snapshot of one engine, taken for a pass over many instances.
#[derive(Debug, Clone, Copy)]
pub struct Snapshot<'a> {
    /// The engine it is of.
    pub engine: Option<&'a str>,
    pub observation: &'a Observation,
}

/// Everything a reconcile needs, cheap to clone into tasks.
#[derive(Clone)]
pub struct Reconciler {
    pub store: Store,
    pub engines: Engines,
    pub progress: ProgressSink,
    /// What this process already found in which image (see
    /// [`jackin_act::ProgramsFound`]): many instances of one image probe it once.
    /// Image ids name their content, so this holds across engines.
    found: Arc<jackin_act::ProgramsFound>,
    /// Where credential files are read from: the operator's home, or
    /// `$JACKIN_CREDENTIALS_HOME` (see [`credentials::host_home`]).
    ///
    /// [`credentials::host_home`]: jackin_act::credentials::host_home
    pub credentials_home: Result<std::path::PathBuf, String>,
    /// Every view a look built, in order: what the tests read to show that
    /// a dry run and a reconcile plan from the one look.
    #[cfg(test)]
    pub(crate) looked: Arc<std::sync::Mutex<Vec<InstanceView>>>,
}

impl Reconciler {
    pub fn new(store: Store, engines: Engines) -> Self {
        Self {
            store,
            engines,
            progress: Arc::new(|_, _| {}),
            found: Arc::default(),
            credentials_home: jackin_act::credentials::host_home(),
            #[cfg(test)]
            looked: Arc::default(),
        }
    }

    /// The engine `obj` runs on, connected.
    pub async fn engine_of(&self, obj: &Instance) -> Result<Connected, ReconcileError> {
        let workspace = match engine_pinned(obj) {
            false => self.workspace_of(obj)?,
            true => None,
        };
        let name = engine_name(obj, workspace.as_ref());
        Ok(self.engines.get(name.as_deref()).await?)
    }

    /// One snapshot per engine that `rows` run on, as lean as telling the
    /// converged ones from the rest allows ([`Observation::for_no_op`]).
    /// An engine that cannot be observed has none: its instances are
    /// observed one by one, and each records that its engine does not
    /// answer.
    pub async fn snapshots<'r>(
        &self,
        rows: impl IntoIterator<Item = &'r IndexRow>,
    ) -> HashMap<EngineName, Observation> {
        // Per engine: whether any of its instances is kept (its networks
        // must then be listed too).
        let mut engines: HashMap<EngineName, bool> = HashMap::new();
        for row in rows {
            *engines.entry(row.engine.clone()).or_default() |=
                row.phase == Some(InstancePhase::Kept);
        }
        let engines: BTreeSet<(EngineName, bool)> = engines.into_iter().collect();
        let taken = engines.into_iter().map(|(name, kept)| async move {
            let observed = match self.engines.get(name.as_deref()).await {
                Ok(connected) => Observation::for_no_op(&connected.engine, kept).await,
                Err(e) => Err(e),
            };
            (name, observed)
        });
        let mut snapshots = HashMap::new();
        for (name, observed) in futures::future::join_all(taken).await {
            match observed {
                Ok(observation) => {
                    snapshots.insert(name, observation);
                }
                Err(e) => tracing::warn!(
                    engine = display_name(name.as_deref()),
                    "no snapshot of the engine, observing its instances one by one: {e}"
                ),
            }
        }
        snapshots
    }

    pub(crate) fn layout(&self) -> &Layout {
        self.store.layout()
    }

    /// Reconciles `name`. `snapshot` is an observation of the whole engine
    /// taken for a pass over many instances; without it (or after acting)
    /// the instance is observed on its own. Whatever fails in it goes
    /// through the failure policy (`failure::policy`) once, here.
    pub async fn reconcile(
        &self,
        name: &str,
        snapshot: Option<Snapshot<'_>>,
    ) -> Result<Outcome, ReconcileError> {
        let mut guard = match self.lock(name).await? {
            Ok(guard) => guard,
            Err(outcome) => return Ok(outcome),
        };
        match self.reconcile_locked(&mut guard, name, snapshot).await {
            Ok(Locked::Ended(outcome)) => Ok(outcome),
            Ok(Locked::Moved) => {
                drop(guard);
                Box::pin(self.reconcile(name, None)).await
            }
            Err(failure) => Err(failure::policy(&mut guard, self.layout(), failure)),
        }
    }

    /// The rounds of a reconcile of the locked instance: observe, decide,
    /// act, until the plan is empty.
    async fn reconcile_locked(
        &self,
        guard: &mut InstanceGuard,
        name: &str,
        snapshot: Option<Snapshot<'_>>,
    ) -> Result<Locked, Failure> {
        // Given up on: nothing is tried (nor the engine asked) until the
        // operator changes the spec or asks to resume.
        if let Some(failures) = guard.obj.gave_up() {
            return Err(Failure::GivenUp(failures.clone()));
        }
        let (workspace, agent, home_id) = self.resolved(&guard.obj)?;
        let parts = Parts {
            workspace: workspace.as_ref(),
            agent: agent.as_ref(),
            home_id,
        };
        let engine_name = engine_name(&guard.obj, workspace.as_ref());
        let shown = engine_name.as_deref();
        let engine_failed = |error| Failure::Engine {
            engine: engine_name.clone(),
            error,
        };
        let connected = match self.engines.get(shown).await {
            Err(error) if purgeable_without_engine(&guard.obj, &error) => {
                return self.purge_without_engine(guard, shown, &error, parts).await;
            }
            connected => connected.map_err(engine_failed)?,
        };
        let ctx = self.context(&connected, parts.clone());
        let engine = &connected.engine;
        let uid = guard.obj.metadata.uid.clone().unwrap_or_default();
        let mut tier = None;
        // A snapshot of another engine says nothing of this instance, and
        // a partial one is never decided on.
        let snapshot = snapshot.filter(|s| s.engine == shown && s.observation.partial().is_none());
        let mut observation = match snapshot {
            Some(snapshot) => Cow::Borrowed(snapshot.observation),
            None => match Observation::of_instance(engine, &uid, pinned_image(&guard.obj)).await {
                // An engine connected before that no longer answers.
                Err(error) if purgeable_without_engine(&guard.obj, &error) => {
                    return self.purge_without_engine(guard, shown, &error, parts).await;
                }
                observed => Cow::Owned(observed.map_err(engine_failed)?),
            },
        };
        for _ in 0..MAX_ROUNDS {
            self.observe_conversation(engine, guard).await;
            self.observe_setup(guard).await;
            let observed = Some((engine, observation.as_ref()));
            let view = self.look(&guard.obj, observed, &parts, true).await?;
            guard.obj.status.get_or_insert_default().mounts = view.mounts.clone();
            let plan = decide(&guard.obj, &view, Timestamp::now());
            note_drift(&mut guard.obj, &ctx, view.rollout == Some(Rollout::Wait));
            note_missing_workspace(&mut guard.obj, workspace.is_some());
            if let Some(digest) = &plan.blocked {
                return Ok(Locked::Ended(block(guard, name, digest)?));
            }
            let conditions = &mut guard.obj.status.get_or_insert_default().conditions;
            remove_condition(conditions, condition::PURGE_BLOCKED);
            if plan.is_empty() {
                settle(&mut guard.obj, &plan);
                guard.save()?;
                guard.refresh_row()?;
                let phase = plan.target;
                return Ok(Locked::Ended(Outcome::Converged { phase, tier }));
            }
            // A shared snapshot may predate this instance's lock: never act
            // on it, look again first.
            if let Cow::Owned(_) = observation {
                tier = plan.tier.or(tier);
                if self.execute(&ctx, guard, &plan, name).await? {
                    return Ok(Locked::Ended(Outcome::Gone));
                }
                if self::engine_name(&guard.obj, workspace.as_ref()) != engine_name {
                    return Ok(Locked::Moved);
                }
            }
            let observed = Observation::of_instance(engine, &uid, pinned_image(&guard.obj)).await;
            observation = Cow::Owned(observed.map_err(engine_failed)?);
        }
        Err(ReconcileError::NotConverging.into())
    }

    /// The unit lock of `name`, taken (it may be held by another process:
    /// waited for off the runtime); else what a reconcile of an instance
    /// that is not there comes to: `Gone` when a purge interrupted after
    /// its object went was finished now, `Absent` otherwise.
    async fn lock(
        &self,
        name: &str,
    ) -> Result<Result<Box<InstanceGuard>, Outcome>, ReconcileError> {
        let store = self.store.clone();
        let owned_name = name.to_owned();
        let locked =
            jackin_files::offload::blocking(move || store.lock_instance(&owned_name)).await?;
        if let Some(guard) = locked {
            return Ok(Ok(guard));
        }
        let store = self.store.clone();
        let owned_name = name.to_owned();
        let finished =
            jackin_files::offload::blocking(move || store.finish_interrupted_purge(&owned_name))
                .await?;
        Ok(Err(match finished {
            true => Outcome::Gone,
            false => Outcome::Absent,
        }))
    }

    /// Runs a plan's steps through `act` up to a look again, saving the
    /// status after each. Returns whether the instance is gone (a purge
    /// completed); a step that fails ends the run with its failure.
    async fn execute(
        &self,
        ctx: &Context<'_>,
        guard: &mut InstanceGuard,
        plan: &Plan,
        name: &str,
    ) -> Result<bool, Failure> {
        for step in &plan.steps {
            if let Step::LookAgain(_) = step {
                break;
            }
            if step.announced() {
                (self.progress)(name, Progress::Step(step));
            }
            // A move checks and pins (builds, probes) on the engine it
            // moves to.
            let moving_to = match step {
                Step::CheckMoveTarget { .. } | Step::RolloutRecipe { moving: true, .. } => {
                    let target = recipe::wanted_engine(&guard.obj, ctx.workspace);
                    let connected = self.engines.get(target.as_deref()).await;
                    Some(connected.map_err(ReconcileError::from)?)
                }
                _ => None,
            };
            if let Err(error) = self.act(ctx, moving_to.as_ref(), guard, step, name).await {
                let step = step.clone();
                return Err(Failure::Step { step, error });
            }
            // The instance is gone: saving would write the object back.
            if *step == Step::FinishPurge {
                jackin_files::fault::crash_point(step.kind());
                return Ok(true);
            }
            guard.save()?;
            jackin_files::fault::crash_point(step.kind());
        }
        Ok(false)
    }

    /// Runs one step through `act`, its reports made events and progress;
    /// on `moving_to`, the engine a move goes to, when it is one.
    async fn act(
        &self,
        ctx: &Context<'_>,
        moving_to: Option<&Connected>,
        guard: &mut InstanceGuard,
        step: &Step,
        name: &str,
    ) -> Result<(), ActError> {
        let sink = self.progress.clone();
        let (layout, container) = (self.layout(), guard.container.clone());
        let mut report = |report: jackin_act::Report<'_>| match report {
            jackin_act::Report::Build(line) => sink(name, Progress::Build(line)),
            jackin_act::Report::Event { reason, message } => {
                events::record(layout, &container, reason, message);
            }
            jackin_act::Report::Note {
                stage,
                reason,
                message,
            } => {
                events::record(layout, &container, reason, message);
                let stage = stage.unwrap_or(step.stage());
                sink(name, Progress::Note { stage, message });
            }
        };
        let Some(target) = moving_to else {
            return jackin_act::act(ctx, step, &mut guard.obj, &mut report).await;
        };
        let moved = Context {
            engine: &target.engine,
            addresses: &target.addresses,
            home: ctx.home.clone(),
            credentials_home: ctx.credentials_home.clone(),
            home_id: ctx.home_id.clone(),
            ..*ctx
        };
        jackin_act::act(&moved, step, &mut guard.obj, &mut report).await
    }

    /// What a reconcile toward `phase` would do now, as `set-phase` would
    /// leave the instance. See [`Reconciler::preview`].
    pub async fn dry_run(&self, name: &str, phase: DesiredPhase) -> Result<DryRun, ReconcileError> {
        let mut obj = self.store.get_instance(name)?;
        if obj.spec.phase != phase {
            obj.spec.phase = phase;
            obj.metadata.generation = Some(obj.metadata.generation.unwrap_or(0) + 1);
        }
        if phase == DesiredPhase::Running {
            // As `set-phase running` would: a resume request.
            obj.metadata
                .annotations
                .insert(annotation::RESUME.to_owned(), Timestamp::now().to_string());
        }
        self.preview(obj).await
    }

    /// What the loop would do for `obj`, an instance as a change would
    /// leave it (a new one has no identity yet), decided as the loop
    /// decides, from a fresh observation of the engine and of the isolated
    /// checkouts. Nothing is changed. A purge blocked by unfinished work
    /// comes with the steps it would take once acknowledged, so that a dry
    /// run shows both what would go and why it does not yet. What the keep
    /// cap would then do to an instance kept is [`crate::keep_cap::once_kept`].
    pub async fn preview(&self, mut obj: Instance) -> Result<DryRun, ReconcileError> {
        let container = obj.container_name().map(str::to_owned).unwrap_or_default();
        let (workspace, agent, home_id) = self.resolved_unlocked(&obj)?;
        let parts = Parts {
            workspace: workspace.as_ref(),
            agent: agent.as_ref(),
            home_id,
        };
        let view = self.look_unlocked(&obj, &parts, pinned_image(&obj)).await?;
        let mut plan = decide(&obj, &view, Timestamp::now());
        let blocked = plan.blocked.clone();
        if let Some(digest) = &blocked {
            obj.metadata
                .annotations
                .insert(annotation::ACKNOWLEDGE_DISCARD.to_owned(), digest.clone());
            plan = decide(&obj, &view, Timestamp::now());
        }
        Ok(DryRun {
            container,
            plan,
            blocked,
        })
    }

    /// The recipe `obj`'s spec asks for today (its image filled in only
    /// once pinned), and the parts it was resolved from.
    pub fn wanted_recipe(&self, obj: &Instance) -> Result<Option<Recipe>, ReconcileError> {
        let Some(container) = obj.container_name() else {
            return Ok(None);
        };
        let workspace = self.workspace_of(obj)?;
        let agent = self.store.resolve_agent(&obj.spec.agent)?;
        Ok(Some(recipe::wanted(
            obj,
            workspace.as_ref(),
            agent.as_ref(),
            container,
            std::env::home_dir().as_deref(),
            &self.layout().home_id().ok().flatten().unwrap_or_default(),
        )))
    }

    /// What a rollout of `obj` (its request stamped in its annotations)
    /// would do, round by round, decided as the loop decides: the pin,
    /// then (from a recipe as the pin would leave it) the stop of a running
    /// container, then its replacement. Nothing is changed.
    pub async fn preview_rollout(&self, obj: Instance) -> Result<Vec<Plan>, ReconcileError> {
        let first = self.preview(obj.clone()).await?;
        let mut plans = vec![first.plan.clone()];
        let pinning = first.plan.steps.iter().find_map(|step| match step {
            Step::RolloutRecipe { requested, .. } => Some(requested.clone()),
            _ => None,
        });
        let (Some(requested), Some(wanted)) = (pinning, self.wanted_recipe(&obj)?) else {
            return Ok(plans);
        };
        let mut after = obj;
        let record = RolloutRecord::handled(&after, &requested, Timestamp::now(), None);
        let status = after.status.get_or_insert_default();
        let pinned = status.recipe.clone().unwrap_or_default();
        status.rollout = Some(record);
        // The image is known once built: an image of its own says "new".
        status.recipe = Some(Recipe {
            image_id: match after.spec.image {
                Some(_) => pinned.image_id.clone(),
                None => String::new(),
            },
            replaces: Some(pinned.image_id.clone()),
            first_run_at: None,
            storage: (pinned.engine == wanted.engine)
                .then(|| pinned.storage.clone())
                .flatten(),
            ..wanted
        });
        let (workspace, agent, home_id) = self.resolved_unlocked(&after)?;
        let parts = Parts {
            workspace: workspace.as_ref(),
            agent: agent.as_ref(),
            home_id,
        };
        let mut view = self.look_unlocked(&after, &parts, None).await?;
        // The image the pin builds is there once it is built.
        view.image_present = true;
        for _ in 0..2 {
            let plan = decide(&after, &view, Timestamp::now());
            let stopped = plan
                .steps
                .iter()
                .any(|step| matches!(step, Step::StopContainer { .. }));
            plans.push(plan);
            match (stopped, view.container.as_mut()) {
                (true, Some(container)) => container.running = false,
                _ => break,
            }
        }
        Ok(plans)
    }

    /// One pass over `rows` from a single snapshot of each engine they run
    /// on: an instance that needs nothing costs no further engine call, so
    /// a no-op pass makes one list call per object kind and engine whatever
    /// the number of instances. `claim` and `release` let a caller keep
    /// names that are already being reconciled out of the pass.
    pub async fn pass(
        &self,
        rows: &[IndexRow],
        concurrency: usize,
        claim: impl Fn(&str) -> bool,
        release: impl Fn(&str),
    ) -> Vec<(String, Result<Outcome, ReconcileError>)> {
        let snapshots = self.snapshots(rows).await;
        let mut waiting = rows.iter().filter(|row| claim(&row.name));
        let mut running = FuturesUnordered::new();
        let mut results = Vec::with_capacity(rows.len());
        loop {
            while running.len() < concurrency.max(1) {
                let Some(row) = waiting.next() else { break };
                let snapshot = snapshots.get(&row.engine).map(|observation| Snapshot {
                    engine: row.engine.as_deref(),
                    observation,
                });
                running.push(async move {
                    let settled = snapshot.and_then(|s| already_converged(self.layout(), row, s));
                    let result = match settled {
                        Some(outcome) => Ok(outcome),
                        None => self.reconcile(&row.name, snapshot).await,
                    };
                    (row.name.clone(), result)
                });
            }
            let Some((name, result)) = running.next().await else {
                break;
            };
            release(&name);
            results.push((name, result));
        }
        results
    }
}

impl Reconciler {
    /// What `obj`'s steps are resolved against: its workspace's spec (when
    /// it names one that exists), its agent's registry entry, and this
    /// home's id (created on first use).
    pub(crate) fn resolved(
        &self,
        obj: &Instance,
    ) -> Result<(Option<WorkspaceSpec>, Option<ResolvedAgent>, String), ReconcileError> {
        let workspace = self.workspace_of(obj)?;
        let agent = self.store.resolve_agent(&obj.spec.agent)?;
        let home_id = self
            .layout()
            .home_id_or_create(&uuid::Uuid::new_v4().simple().to_string())
            .map_err(|e| StoreError::io(&self.layout().home_id_file(), e))?;
        Ok((workspace, agent, home_id))
    }

    /// The same, as a dry run reads them: this home's id is not created.
    fn resolved_unlocked(
        &self,
        obj: &Instance,
    ) -> Result<(Option<WorkspaceSpec>, Option<ResolvedAgent>, String), ReconcileError> {
        let workspace = self.workspace_of(obj)?;
        let agent = self.store.resolve_agent(&obj.spec.agent)?;
        let home_id = self.layout().home_id().ok().flatten().unwrap_or_default();
        Ok((workspace, agent, home_id))
    }

    /// Runs `plan` for the locked instance through `act`, as a reconcile
    /// runs its plans (the status saved after each step). For changes made
    /// outside a reconcile (the idle hooks' restart). Returns whether the
    /// instance is gone.
    pub(crate) async fn run_plan(
        &self,
        guard: &mut InstanceGuard,
        plan: &Plan,
    ) -> Result<bool, ReconcileError> {
        let (workspace, agent, home_id) = self.resolved(&guard.obj)?;
        let connected = self.engine_of(&guard.obj).await?;
        let parts = Parts {
            workspace: workspace.as_ref(),
            agent: agent.as_ref(),
            home_id,
        };
        let ctx = self.context(&connected, parts);
        let name = guard.obj.metadata.name.clone();
        let executed = self.execute(&ctx, guard, plan, &name).await;
        executed.map_err(|failure| failure::policy(guard, self.layout(), failure))
    }
}

/// What a reconcile's steps need besides the engine.
#[derive(Clone)]
pub(crate) struct Parts<'a> {
    pub(crate) workspace: Option<&'a WorkspaceSpec>,
    pub(crate) agent: Option<&'a ResolvedAgent>,
    pub(crate) home_id: String,
}

impl Reconciler {
    fn context<'a>(&'a self, connected: &'a Connected, parts: Parts<'a>) -> Context<'a> {
        Context {
            engine: &connected.engine,
            layout: self.layout(),
            state: &self.store,
            workspace: parts.workspace,
            agent: parts.agent,
            found: &self.found,
            addresses: &connected.addresses,
            home: std::env::home_dir(),
            credentials_home: self.credentials_home.clone(),
            home_id: parts.home_id,
        }
    }

    /// Purges the instance although its engine cannot be reached (see
    /// [`purgeable_without_engine`]): the discard gate holds as ever, the
    /// checkouts and the unit go, and what the instance may have made on
    /// the engine is said to be left behind (an event, a progress note, the
    /// outcome), so the operator can remove it there. No engine call is
    /// made: the steps run against an engine that fails every call.
    async fn purge_without_engine(
        &self,
        guard: &mut InstanceGuard,
        engine: Option<&str>,
        error: &EngineError,
        parts: Parts<'_>,
    ) -> Result<Locked, Failure> {
        let name = guard.obj.metadata.name.clone();
        let shown = display_name(engine).to_owned();
        let view = InstanceView {
            mounts: assess_checkouts(self.layout(), &guard.container).await?,
            ..Default::default()
        };
        guard.obj.status.get_or_insert_default().mounts = view.mounts.clone();
        let plan = decide(&guard.obj, &view, Timestamp::now());
        if let Some(digest) = &plan.blocked {
            return Ok(Locked::Ended(block(guard, &name, digest)?));
        }
        let conditions = &mut guard.obj.status.get_or_insert_default().conditions;
        remove_condition(conditions, condition::PURGE_BLOCKED);
        let left_behind = left_behind(&guard.obj, &guard.container);
        let message = match left_behind.as_slice() {
            [] => format!(
                "engine {shown} cannot be reached ({error}); the instance never made anything \
                 there, so it is purged without it"
            ),
            left => format!(
                "engine {shown} cannot be reached ({error}), and cannot be as it is named; the \
                 instance is purged without it, leaving there what it may have made: {}. \
                 Remove them there once it answers",
                left.join(", ")
            ),
        };
        events::record(
            self.layout(),
            &guard.container,
            reason::PURGED_WITHOUT_ENGINE,
            &message,
        );
        // The controller's record; a command shows the note.
        tracing::info!(instance = name, "{message}");
        (self.progress)(
            &name,
            Progress::Note {
                stage: "cleanup",
                message: &message,
            },
        );
        let offline = Connected {
            engine: jackin_engine::offline::engine(&shown, &error.to_string()),
            addresses: Arc::default(),
        };
        let ctx = self.context(&offline, parts);
        if !self.execute(&ctx, guard, &plan, &name).await? {
            // A purge's plan ends with its tail, whatever was observed.
            return Err(ReconcileError::NotConverging.into());
        }
        Ok(Locked::Ended(Outcome::PurgedWithoutEngine {
            engine: shown,
            why: error.to_string(),
            left_behind,
        }))
    }
}

/// Whether `obj`, to be purged, can be purged although its engine cannot be
/// reached (`error`): when it never made anything there (no recipe pinned:
/// pinning comes before anything is made on the engine, and an engine that
/// cannot be reached pins nothing), or when the engine is named so that it
/// can never be reached (a context that does not exist): what it made there
/// is then left behind, and said so. An engine that does not answer now
/// may answer later: the purge waits for it, so that what the instance
/// made there goes first.
fn purgeable_without_engine(obj: &Instance, error: &EngineError) -> bool {
    obj.desired_phase() == DesiredPhase::Purged && (!made_on_engine(obj) || error.is_permanent())
}

/// Whether `obj` may have made anything on its engine: it has a pinned
/// recipe (pinning comes before anything is made there).
pub fn made_on_engine(obj: &Instance) -> bool {
    obj.status.as_ref().is_some_and(|s| s.recipe.is_some())
}

/// What `obj` may have made on its engine, from its pinned recipe: its
/// container, its sidecars', its network and its volumes, by name.
fn left_behind(obj: &Instance, container: &str) -> Vec<String> {
    let Some(recipe) = obj.recipe() else {
        return Vec::new();
    };
    let mut left = vec![format!("container {container}")];
    left.extend(
        recipe
            .sidecars
            .iter()
            .map(|s| format!("container {}", jackin_act::sidecar_name(container, &s.name))),
    );
    left.push(format!("network {}", recipe.network));
    left.extend(
        recipe
            .dind
            .iter()
            .map(|dind| format!("volume {}", dind.certs_volume)),
    );
    left
}

/// The assessment of every isolated checkout of a unit (git work, off the
/// runtime). A checkout whose records cannot be read is reported as such.
pub async fn assess_checkouts(
    layout: &Layout,
    container: &str,
) -> Result<Vec<MountStatus>, StoreError> {
    let layout = layout.clone();
    let container = container.to_owned();
    jackin_files::offload::blocking(move || {
        let records =
            isolation::read_records(&layout, &container).map_err(|e| StoreError::Unreadable {
                path: layout.isolation_file(&container),
                message: e.to_string(),
            })?;
        Ok(records
            .iter()
            .map(|record| assess::mount_status(record, &assess::assess(record)))
            .collect())
    })
    .await
}

/// The status of a converged instance: its phase, the generation it
/// reflects, and a `Ready` condition that says so.
fn settle(obj: &mut Instance, plan: &Plan) {
    let generation = obj.metadata.generation;
    let name = obj.metadata.name.clone();
    let status = obj.status.get_or_insert_default();
    status.phase = Some(plan.target);
    status.observed_generation = generation;
    // Converged: earlier failures no longer count toward giving up.
    status.failures = None;
    let (ready, reason, message) = match plan.target {
        InstancePhase::Running => (
            ConditionStatus::True,
            reason::RUNNING,
            "the container is running".into(),
        ),
        InstancePhase::Exited | InstancePhase::Crashed => (
            ConditionStatus::False,
            reason::SESSION_ENDED,
            format!(
                "the agent ended its session; `jackin set-phase {name} running` starts a new \
                 session in the same unit"
            ),
        ),
        _ => (
            ConditionStatus::False,
            reason::KEPT,
            format!(
                "no container; the session is kept; `jackin set-phase {name} running` resumes it"
            ),
        ),
    };
    set_condition(
        &mut status.conditions,
        condition::READY,
        ready,
        reason,
        &message,
        Timestamp::now(),
    );
}

/// The purge waits for the unfinished work of its checkouts to be
/// acknowledged: `PurgeBlocked` says so, with the digest to quote.
fn block(guard: &mut InstanceGuard, name: &str, digest: &str) -> Result<Outcome, StoreError> {
    set_condition(
        &mut guard.obj.status.get_or_insert_default().conditions,
        condition::PURGE_BLOCKED,
        ConditionStatus::True,
        reason::UNFINISHED_WORK,
        &format!(
            "isolated checkouts hold unfinished work (see status.mounts); \
             `jackin set-phase {name} purged --force` acknowledges digest {digest} \
             and discards it"
        ),
        Timestamp::now(),
    );
    guard.save()?;
    Ok(Outcome::Blocked {
        digest: digest.to_owned(),
    })
}

/// `WorkspaceMissing` says that the workspace the instance names does not
/// exist (deleted, or not applied yet), so the defaults apply.
fn note_missing_workspace(obj: &mut Instance, found: bool) {
    let name = obj.spec.workspace.clone();
    let conditions = &mut obj.status.get_or_insert_default().conditions;
    match name {
        Some(name) if !found => {
            set_condition(
                conditions,
                condition::WORKSPACE_MISSING,
                ConditionStatus::True,
                reason::NOT_FOUND,
                &format!(
                    "workspace {name} does not exist: the defaults apply (exit policy ask, no \
                     keep cap, no workspace mounts)"
                ),
                Timestamp::now(),
            );
        }
        _ => {
            remove_condition(conditions, condition::WORKSPACE_MISSING);
        }
    }
}

/// `SpecDrift` says which spec fields no longer match the pinned recipe,
/// and how they reach the session: `waiting`, an `OnDrift` rollout waits
/// for the session to be left alone; else `jackin rollout` moves it.
fn note_drift(obj: &mut Instance, ctx: &Context<'_>, waiting: bool) {
    let Some(status) = obj.status.as_ref() else {
        return;
    };
    let (Some(pinned), Some(container)) = (&status.recipe, &status.container_name) else {
        return;
    };
    let wanted = recipe::wanted(
        obj,
        ctx.workspace,
        ctx.agent,
        container,
        ctx.home.as_deref(),
        &ctx.home_id,
    );
    let fields = recipe::drift(pinned, &wanted);
    let name = obj.metadata.name.clone();
    let status = obj.status.get_or_insert_default();
    if fields.is_empty() {
        remove_condition(&mut status.conditions, condition::SPEC_DRIFT);
    } else {
        let (reason, how) = match waiting {
            true => (
                reason::ROLLOUT_WAITING,
                format!(
                    "updatePolicy OnDrift rolls it out once nobody is attached and the agent \
                     is idle, or at its next start; `jackin rollout {name}` does it now"
                ),
            ),
            false => (
                reason::SPEC_CHANGED,
                format!(
                    "`jackin rollout {name}` moves it onto the new spec, keeping its home, \
                     conversation and checkouts (`--dry-run` shows the change first)"
                ),
            ),
        };
        set_condition(
            &mut status.conditions,
            condition::SPEC_DRIFT,
            ConditionStatus::True,
            reason,
            &format!(
                "spec.{} changed after the recipe was pinned; the session keeps running as \
                 pinned: {how}",
                fields.join(", spec.")
            ),
            Timestamp::now(),
        );
    }
}

/// Whether `obj`'s engine is fixed: once its recipe is pinned, its objects
/// may be on the engine pinned.
fn engine_pinned(obj: &Instance) -> bool {
    obj.status.as_ref().is_some_and(|s| s.recipe.is_some())
}

/// The engine `obj` runs on: the pinned one, else the one its spec asks for.
pub fn engine_name(obj: &Instance, workspace: Option<&WorkspaceSpec>) -> EngineName {
    match obj.recipe() {
        Some(recipe) => recipe.engine.clone(),
        None => recipe::wanted_engine(obj, workspace),
    }
}

/// What a reconcile of `row`'s instance would come to when `snapshot` shows
/// it as its last reconcile left it, converged: nothing to do, told from
/// the row without locking or opening its object (but for a `stat` of the
/// agent's start report, which a new start writes, and the end of the
/// start's grace period, after which its report is read again). `None`
/// means "look".
pub fn already_converged(
    layout: &Layout,
    row: &IndexRow,
    snapshot: Snapshot<'_>,
) -> Option<Outcome> {
    if !row.converged || snapshot.engine != row.engine.as_deref() {
        return None;
    }
    if resume::report_unseen(layout, &row.container_name, row.report_modified.as_deref())
        || ladder::report_due(row.start_settles_at, Timestamp::now())
        || jackin_act::session::setup_reported(layout, &row.container_name)
    {
        return None;
    }
    let view = snapshot.observation.view(&row.uid, None);
    // What a partial snapshot did not list it cannot vouch for.
    let partial = snapshot.observation.partial();
    let networks_listed = partial.is_none_or(|p| p.networks);
    let volumes_listed = partial.is_none();
    let shaped = match row.phase? {
        InstancePhase::Running => {
            // A running container holds its network and its sidecars'
            // volumes: the engine refuses to remove them from under it.
            view.container.as_ref().is_some_and(|c| c.running)
                && (!networks_listed || (view.network.is_some() && view.extra_networks.is_empty()))
                && view.sidecars.len() == row.sidecars.len()
                && row
                    .sidecars
                    .iter()
                    .all(|name| view.sidecars.get(name).is_some_and(|c| c.running))
                && (!volumes_listed || row.volumes.iter().all(|v| view.volumes.contains(v)))
        }
        InstancePhase::Kept => {
            networks_listed
                && view.container.is_none()
                && view.network.is_none()
                && view.extra_networks.is_empty()
                && view.sidecars.is_empty()
        }
        _ => false,
    };
    shaped.then_some(Outcome::Converged {
        phase: row.phase?,
        tier: None,
    })
}

/// The id of the image `obj`'s pinned recipe runs, if it has one.
pub(crate) fn pinned_image(obj: &Instance) -> Option<&str> {
    let recipe = obj.status.as_ref()?.recipe.as_ref()?;
    Some(recipe.image_id.as_str()).filter(|id| !id.is_empty())
}
