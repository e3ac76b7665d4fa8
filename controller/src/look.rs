//! One look at an instance: the view `decide` plans from, built in one
//! place for every caller (a reconcile's rounds, a dry run, a rollout's
//! preview, the idle hooks' recycle), so that what a dry run shows is what
//! a reconcile runs. A look reads what the engine holds (cut from an
//! observation), the checkouts' assessment, the last session's end, the
//! exit policy in force and the rollout pending; what a reconcile writes
//! from it (the assessment into `status.mounts`) it writes itself.
//!
//! One write stands: assessing a worktree publishes its scratch branch
//! first (the agent's new objects copied into the operator's repository,
//! the branch moved there, the tip recorded in the unit), so that the
//! branch judged is the agent's latest. So a look and a dry run, like
//! every other assessment (`describe`, `top`'s timer), can move that host
//! ref.

use jackin_act::observe::Observation;
use jackin_act::session;
use jackin_api::instance::Instance;
use jackin_api::workspace::{ExitPolicy, WorkspaceSpec};
use jackin_engine::Engine;
use jackin_plan::ending;
use jackin_plan::recipe;
use jackin_plan::rollout;
use jackin_plan::view::{EngineExit, InstanceView, Rollout, SessionSeen};
use jiff::Timestamp;

use crate::failure::ReconcileError;
use crate::reconcile::{Parts, Reconciler, assess_checkouts};
use crate::store::StoreError;

impl Reconciler {
    /// The view of `obj` that `decide` plans from, built once. `observed`:
    /// the engine the instance runs on, and what it holds (of this
    /// instance, or of the whole engine for a pass); `None` for an instance
    /// that has no identity yet, of which the engine can hold nothing.
    /// `interrupt`: whether a running session an `OnDrift` rollout waits
    /// for is looked at to tell whether it may be interrupted (a reconcile,
    /// which may interrupt it); a preview shows it waiting.
    pub(crate) async fn look(
        &self,
        obj: &Instance,
        observed: Option<(&Engine, &Observation)>,
        parts: &Parts<'_>,
        interrupt: bool,
    ) -> Result<InstanceView, ReconcileError> {
        let mut view = match (observed, &obj.metadata.uid) {
            (Some((_, observation)), Some(uid)) => observation.view(uid, obj.recipe()),
            _ => InstanceView::default(),
        };
        if let (Some((engine, _)), Some(container)) = (observed, obj.container_name()) {
            view.mounts = assess_checkouts(self.layout(), container).await?;
            view.session = self.observe_session(engine, obj, container, &view).await?;
        }
        view.exit_policy = exit_policy(obj, parts.workspace);
        view.rollout = match (interrupt, observed) {
            (true, Some((engine, _))) => self.rollout_now(obj, engine, parts, &view).await?,
            _ => pending_rollout(obj, &view, parts, false),
        };
        #[cfg(test)]
        self.looked.lock().expect("not poisoned").push(view.clone());
        Ok(view)
    }

    /// A look at `obj`, an instance as a change would leave it, from a
    /// fresh observation of its engine (`image`, the pinned image to look
    /// for), as a dry run takes it: a session an `OnDrift` rollout waits
    /// for is shown waiting, never looked at to interrupt it.
    pub(crate) async fn look_unlocked(
        &self,
        obj: &Instance,
        parts: &Parts<'_>,
        image: Option<&str>,
    ) -> Result<InstanceView, ReconcileError> {
        let Some(uid) = &obj.metadata.uid else {
            return self.look(obj, None, parts, false).await;
        };
        let engine = self.engine_of(obj).await?.engine;
        let observation = Observation::of_instance(&engine, uid, image).await?;
        self.look(obj, Some((&engine, &observation)), parts, false)
            .await
    }

    /// The spec of the workspace `obj` names, when it exists.
    pub(crate) fn workspace_of(&self, obj: &Instance) -> Result<Option<WorkspaceSpec>, StoreError> {
        Ok(match &obj.spec.workspace {
            Some(ws) => self.store.get_workspace(ws)?.map(|w| w.spec),
            None => None,
        })
    }

    /// What is seen of the last session's end, read only: the unit's
    /// completion marker, whether an operator is attached, and (when the
    /// marker cannot say it all) the stopped container's state as the
    /// engine reports it. Nothing when the container runs. What follows
    /// from it is decided with the rest of the plan (`ending::steps`, called
    /// by `decide`) and carried out by `act`.
    async fn observe_session(
        &self,
        engine: &Engine,
        obj: &Instance,
        container: &str,
        view: &InstanceView,
    ) -> Result<SessionSeen, ReconcileError> {
        if view.container.as_ref().is_some_and(|c| c.running) {
            return Ok(SessionSeen::default());
        }
        let layout = self.layout().clone();
        let unit = container.to_owned();
        let marker =
            jackin_files::offload::blocking(move || session::read_marker(&layout, &unit)).await;
        let engine_exit = match view.container.is_some() && ending::engine_needed(obj, &marker) {
            true => engine.inspect_container(container).await?.map(|inspected| {
                let state = inspected.state.unwrap_or_default();
                EngineExit {
                    exit_code: state.exit_code.unwrap_or_default(),
                    started: engine_time(state.started_at.as_deref()),
                    finished: engine_time(state.finished_at.as_deref()),
                    oom_killed: state.oom_killed.unwrap_or(false),
                }
            }),
            false => None,
        };
        Ok(SessionSeen {
            marker,
            engine: engine_exit,
            attached: session::attached(self.layout(), container),
        })
    }

    /// The rollout to handle now, when the session may be interrupted for
    /// it. Under `OnDrift` a running session whose spec drifted is looked at first
    /// (one attached-lock check, a log query, two stats calls a second
    /// apart): it is interrupted only when nobody is attached, it printed
    /// nothing for [`ROLLOUT_QUIET`], and its CPU use is an idle one's.
    async fn rollout_now(
        &self,
        obj: &Instance,
        engine: &Engine,
        parts: &Parts<'_>,
        view: &InstanceView,
    ) -> Result<Option<Rollout>, ReconcileError> {
        let pending = pending_rollout(obj, view, parts, false);
        let (Some(Rollout::Wait), Some(container), Some(unit)) =
            (&pending, &view.container, obj.container_name())
        else {
            return Ok(pending);
        };
        if session::attached(self.layout(), unit) {
            return Ok(pending);
        }
        let since = Timestamp::now().as_second() - ROLLOUT_QUIET.as_secs() as i64;
        if engine.output_since(&container.id, since).await? {
            return Ok(pending);
        }
        let Some(before) = engine.usage(&container.id).await? else {
            return Ok(pending);
        };
        let started = Timestamp::now();
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let Some(after) = engine.usage(&container.id).await? else {
            return Ok(pending);
        };
        let busy = jackin_plan::idle::busy(
            (before.cpu_nanos, started),
            (after.cpu_nanos, Timestamp::now()),
        );
        Ok(match busy {
            true => pending,
            false => pending_rollout(obj, view, parts, true),
        })
    }
}

/// How long an agent must have printed nothing, with nobody attached, for
/// an `OnDrift` rollout to interrupt it.
const ROLLOUT_QUIET: std::time::Duration = std::time::Duration::from_secs(30);

/// The rollout to handle for `obj` now ([`rollout::pending`]), from the
/// recipe its spec asks for today; `quiet`, whether the session may be
/// interrupted. `None` before a recipe is pinned: a launch pins the spec.
fn pending_rollout(
    obj: &Instance,
    view: &InstanceView,
    parts: &Parts<'_>,
    quiet: bool,
) -> Option<Rollout> {
    let status = obj.status.as_ref()?;
    let (pinned, container) = (status.recipe.as_ref()?, status.container_name.as_ref()?);
    let wanted = recipe::wanted(
        obj,
        parts.workspace,
        parts.agent,
        container,
        std::env::home_dir().as_deref(),
        &parts.home_id,
    );
    rollout::pending(
        obj,
        rollout::Inputs {
            pinned,
            wanted: &wanted,
            policy: rollout::policy(obj, parts.workspace),
            running: view.container.as_ref().is_some_and(|c| c.running),
            quiet,
            mounts: &view.mounts,
        },
    )
}

/// The exit policy in force: the instance's override (a launch's for its
/// session, else the operator's), else its workspace's, else `ask`.
fn exit_policy(obj: &Instance, workspace: Option<&WorkspaceSpec>) -> ExitPolicy {
    ExitPolicy::overridden(obj)
        .or(workspace.map(|w| w.exit_policy))
        .unwrap_or_default()
}

/// A time the engine reports; it says "never" with the zero time
/// (`0001-01-01T00:00:00Z`), which is no time at all.
fn engine_time(text: Option<&str>) -> Option<Timestamp> {
    text.and_then(|t| t.parse::<Timestamp>().ok())
        .filter(|t| t.as_second() > 0)
}
