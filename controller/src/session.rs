//! The session edge of a reconcile: how the last session ended (the
//! completion marker first, then the engine, else unknown), the post-session
//! step, and the exit policy's decision turned into desired state.

use jackin_api::agent::Strategy;
use jackin_api::instance::{
    Instance, InstancePhase, MountStatus, OutcomeSource, SessionOutcome, SettledBy, Settlement,
};
use jackin_api::meta::{find_condition, remove_condition, set_condition};
use jackin_api::names::{condition, reason};
use jackin_api::workspace::ExitPolicy;
use jackin_api::{ConditionStatus, DesiredPhase};
use jackin_reconcilers::Engine;
use jackin_reconcilers::Layout;
use jackin_reconcilers::act;
use jackin_reconcilers::assess::acknowledgement_digest;
use jackin_reconcilers::fsutil::FileLock;
use jackin_reconcilers::observe::{InstanceView, Observation};
use jackin_reconcilers::policy::{self, ExitAction};
use jackin_reconcilers::resume;
use jackin_reconcilers::session::{self, MarkerState};
use jiff::Timestamp;

use crate::events;
use crate::reconcile::{ReconcileError, Reconciler};
use crate::store::{ApplyOutcome, InstanceGuard, Store, StoreError};

impl Reconciler {
    /// Records how the last session ended, from the best source available,
    /// and runs the post-session step. Returns the exit code when the agent
    /// ended the session on its own (its marker says so), which `decide`
    /// does not undo.
    pub(crate) async fn observe_session(
        &self,
        engine: &Engine,
        guard: &mut InstanceGuard,
        view: &InstanceView,
        policy: ExitPolicy,
    ) -> Result<Option<i64>, ReconcileError> {
        if view.container.as_ref().is_some_and(|c| c.running) {
            // A session runs: a question about an earlier one is moot.
            if let Some(status) = guard.obj.status.as_mut() {
                remove_condition(&mut status.conditions, condition::EXIT_POLICY);
            }
            return Ok(None);
        }
        let layout = self.layout();
        let container = guard.container.clone();
        let name = guard.obj.metadata.name.clone();
        let desired = guard.obj.desired_phase();
        let status = guard.obj.status.get_or_insert_default();
        let recorded = status.session.as_ref().and_then(|s| s.finished_at);
        let now = Timestamp::now();
        let marker = {
            let (layout, container) = (layout.clone(), container.clone());
            tokio::task::spawn_blocking(move || session::read_marker(&layout, &container))
                .await
                .expect("reading the marker does not panic")
        };
        match marker {
            MarkerState::Present(marker) => {
                let finished = marker.finished();
                let new = finished.is_some() && finished != recorded;
                // The kernel's OOM killer is not the agent ending its
                // session, whatever the wrapper saw; only the engine knows.
                let oom = if new {
                    oom_killed(engine, view, &container).await?
                } else {
                    status.session.as_ref().and_then(|s| s.reason.as_deref()) == Some(REASON_OOM)
                };
                if new {
                    for stale in [
                        condition::MARKER_MALFORMED,
                        condition::SESSION_OUTCOME,
                        condition::EXIT_POLICY,
                    ] {
                        remove_condition(&mut status.conditions, stale);
                    }
                    status.session = Some(SessionOutcome {
                        exit_code: Some(marker.exit_code),
                        finished_at: finished,
                        source: OutcomeSource::Marker,
                        reason: Some(if oom { REASON_OOM } else { marker.reason() }.to_owned()),
                    });
                    let at = finished.map(|f| f.to_string()).unwrap_or_default();
                    self.after_session(&container, &name, &at, marker.exit_code);
                }
                if oom {
                    // Preserved as it is; a restart would meet the same limit.
                    return Ok(Some(marker.exit_code));
                }
                // Only a session the agent ended itself, while it was meant
                // to run, goes to the exit policy. A stop that jackin (a
                // `Kept` teardown), the operator or the engine caused is not
                // an ending: `Kept` and `Purged` say what to do, and `Running`
                // restores it.
                let agent_ended = marker.ended_by_itself() && desired == DesiredPhase::Running;
                // The policy decides a new ending, and again one that waits
                // for an operator who is no longer attached to answer.
                let waiting = status
                    .conditions
                    .iter()
                    .any(|c| c.reason == reason::ASK_OPERATOR);
                let attached = attached(layout, &container);
                if agent_ended && (new || (waiting && !attached)) {
                    let action = policy::on_exit(policy, marker.exit_code, &view.mounts, attached);
                    events::record(
                        layout,
                        &container,
                        condition::EXIT_POLICY,
                        &format!("exit policy {}: {action}", policy.as_str()),
                    );
                    apply_exit_action(&mut guard.obj, action, policy, &view.mounts);
                    if matches!(action, ExitAction::Purge { .. } | ExitAction::Keep { .. }) {
                        // Handled: a later resume must not find it and take
                        // the session for ended again.
                        session::retire_marker(layout, &container)
                            .map_err(|e| StoreError::io(&layout.unit_dir(&container), e))?;
                        return Ok(None);
                    }
                }
                // A kept instance was settled after its session ended; the
                // marker no longer speaks for what to do with it.
                let kept = guard.obj.phase() == Some(InstancePhase::Kept);
                return Ok((agent_ended && !kept).then_some(marker.exit_code));
            }
            MarkerState::Malformed(why) => {
                if set_condition(
                    &mut status.conditions,
                    condition::MARKER_MALFORMED,
                    ConditionStatus::True,
                    reason::UNPARSABLE,
                    &format!(
                        "the completion marker is not valid; the engine's exit state is used: {why}"
                    ),
                    now,
                ) {
                    events::record(layout, &container, condition::MARKER_MALFORMED, &why);
                }
            }
            MarkerState::Absent => {}
        }
        match &view.container {
            Some(_) => {
                // Stopped without a marker of this run: ask the engine.
                let Some(inspected) = engine.inspect_container(&container).await? else {
                    return Ok(None);
                };
                let state = inspected.state.unwrap_or_default();
                let started = engine_time(state.started_at.as_deref());
                let finished = engine_time(state.finished_at.as_deref());
                if started.is_none() {
                    // Created but never started: no session has ended.
                    return Ok(None);
                }
                // The marker's times have whole seconds.
                let already = recorded
                    .is_some_and(|r| started.is_none_or(|s| r.as_second() >= s.as_second()));
                if finished.is_some() && !already {
                    let code = state.exit_code.unwrap_or_default();
                    let reason = match (state.oom_killed, code) {
                        (Some(true), _) => REASON_OOM,
                        (_, 137) => "killed",
                        _ => "exited",
                    };
                    remove_condition(&mut status.conditions, condition::SESSION_OUTCOME);
                    status.session = Some(SessionOutcome {
                        exit_code: Some(code),
                        finished_at: finished,
                        source: OutcomeSource::Engine,
                        reason: Some(reason.to_owned()),
                    });
                    let at = finished.map(|f| f.to_string()).unwrap_or_default();
                    self.after_session(&container, &name, &at, code);
                }
            }
            // Gone while we believed it ran (or a sweep already noted it
            // gone: it turns a `Running` row `Exited`, with the reason).
            // jackin's own removals leave the phase at neither (`Kept`,
            // `Purging`, `Launching`): their sessions were recorded first.
            None if status.phase == Some(InstancePhase::Running)
                || (status.phase == Some(InstancePhase::Exited)
                    && find_condition(&status.conditions, condition::READY).is_some_and(|c| {
                        matches!(
                            c.reason.as_str(),
                            reason::CONTAINER_MISSING | reason::ENGINE_RESTARTED
                        )
                    })) =>
            {
                status.session = Some(SessionOutcome {
                    exit_code: None,
                    finished_at: None,
                    source: OutcomeSource::Unknown,
                    reason: Some("the container was removed and left no marker".into()),
                });
                status.phase = Some(InstancePhase::Crashed);
                set_condition(
                    &mut status.conditions,
                    condition::SESSION_OUTCOME,
                    ConditionStatus::Unknown,
                    reason::UNKNOWN,
                    "the container was removed before its session was recorded, and no \
                     completion marker was left",
                    now,
                );
                self.after_session(&container, &name, &now.to_string(), -1);
            }
            None => {}
        }
        Ok(None)
    }

    /// The post-session step, which never needs the container: keep what
    /// the agent left in `state/artifacts/` outside the unit, and record the
    /// event. (The exit policy plugs in here.)
    fn after_session(&self, container: &str, name: &str, finished_at: &str, code: i64) {
        let layout = self.layout();
        let message = match code {
            -1 => "the session ended; its outcome is unknown".to_owned(),
            code => format!("the session ended with exit code {code}"),
        };
        events::record(layout, container, reason::SESSION_ENDED, &message);
        match session::collect_artifacts(layout, container, name, finished_at) {
            Ok(Some(to)) => events::record(
                layout,
                container,
                "ArtifactsCollected",
                &format!("moved to {}", to.display()),
            ),
            Ok(None) => {}
            Err(e) => tracing::warn!(instance = name, "cannot collect artifacts: {e}"),
        }
    }
}

impl Reconciler {
    /// Ends the session running in the container `id` the way a keep does
    /// (a graceful stop: the agent may save its state, and the wrapper
    /// writes its marker), records how it ended, and removes the container;
    /// the unit stays, for a reconcile to make the container anew (tier 2).
    /// The idle hooks' `then: restart`. Returns whether it did: not when the
    /// instance is no longer to run, `id` is no longer its running
    /// container, or the agent ended its session itself meanwhile (an
    /// ending the loop settles, never a restart).
    pub async fn recycle(&self, name: &str, id: &str) -> Result<bool, ReconcileError> {
        let store = self.store.clone();
        let owned = name.to_owned();
        let locked = tokio::task::spawn_blocking(move || store.lock_instance(&owned))
            .await
            .expect("locking does not panic")?;
        let Some(mut guard) = locked else {
            return Ok(false);
        };
        if guard.obj.desired_phase() != DesiredPhase::Running {
            return Ok(false);
        }
        let engine = self.engine_of(&guard.obj).await?.engine;
        let uid = guard.obj.metadata.uid.clone().unwrap_or_default();
        let image = crate::reconcile::pinned_image(&guard.obj);
        let observed = Observation::of_instance(&engine, &uid, image).await?;
        let runs = observed
            .view(&uid, None)
            .container
            .is_some_and(|c| c.id == id && c.running);
        if !runs {
            return Ok(false);
        }
        engine.stop_container(id, act::STOP_GRACE_SECS).await?;
        // The stopped container, looked at as a reconcile does: its marker,
        // else the engine's exit state, is recorded before it goes.
        let image = crate::reconcile::pinned_image(&guard.obj);
        let observed = Observation::of_instance(&engine, &uid, image).await?;
        let recipe = guard.obj.recipe();
        let mut view = observed.view(&uid, recipe);
        view.mounts = crate::reconcile::assess_checkouts(self.layout(), &guard.container).await?;
        let workspace = match &guard.obj.spec.workspace {
            Some(ws) => self.store.get_workspace(ws)?.map(|w| w.spec),
            None => None,
        };
        let policy = crate::reconcile::exit_policy(&guard.obj, workspace.as_ref());
        let ended = self
            .observe_session(&engine, &mut guard, &view, policy)
            .await?;
        if ended.is_some() || guard.obj.desired_phase() != DesiredPhase::Running {
            guard.save()?;
            return Ok(false);
        }
        // As a keep does: the phase stops saying it runs before jackin
        // removes the container, so its absence is never read as a session
        // lost.
        guard.obj.status.get_or_insert_default().phase = Some(InstancePhase::Launching);
        guard.save()?;
        engine.remove_container(id).await?;
        Ok(true)
    }

    /// Folds what the entry wrapper reported of the agent's last start into
    /// `status.conversation`; each fallback of a start not seen before is
    /// an event with the agent's own error line.
    pub(crate) async fn observe_conversation(&self, guard: &mut InstanceGuard) {
        let Some(conversation) = guard
            .obj
            .status
            .as_mut()
            .and_then(|s| s.conversation.as_mut())
            .filter(|c| c.strategy != Strategy::None)
        else {
            // Without a way to resume, every start is the one way there is,
            // recorded when the start was made.
            return;
        };
        let (layout, container) = (self.layout().clone(), guard.container.clone());
        let report = tokio::task::spawn_blocking(move || resume::read_report(&layout, &container))
            .await
            .expect("reading the report does not panic");
        let Some(report) = report else {
            return;
        };
        for fallback in resume::fold_report(conversation, &report) {
            let error = match fallback.error.as_str() {
                "" => String::new(),
                line => format!(": {line}"),
            };
            events::record(
                self.layout(),
                &guard.container,
                reason::AGENT_FALLBACK,
                &format!(
                    "starting the agent {} exited {} at once{error}; the next way was tried",
                    fallback.rung, fallback.exit_code
                ),
            );
        }
    }
}

/// Whether the engine says the kernel killed the stopped container's
/// process for want of memory. Asked only when a new marker appears (a
/// pass that acts anyway), and only of a container that is still there.
async fn oom_killed(
    engine: &Engine,
    view: &InstanceView,
    container: &str,
) -> Result<bool, ReconcileError> {
    if view.container.is_none() {
        return Ok(false);
    }
    let inspected = engine.inspect_container(container).await?;
    Ok(inspected
        .and_then(|c| c.state)
        .and_then(|s| s.oom_killed)
        .unwrap_or(false))
}

/// A time the engine reports; it says "never" with the zero time
/// (`0001-01-01T00:00:00Z`), which is no time at all.
fn engine_time(text: Option<&str>) -> Option<Timestamp> {
    text.and_then(|t| t.parse::<Timestamp>().ok())
        .filter(|t| t.as_second() > 0)
}

/// `status.session.reason` of a session the kernel's OOM killer ended.
pub const REASON_OOM: &str = "oom";

/// Whether an operator is attached: `jackin attach` holds the lock while
/// they are. A missing lock file means nobody (and creates nothing).
pub(crate) fn attached(layout: &Layout, container: &str) -> bool {
    let path = layout.attached_lock_file(container);
    path.exists() && matches!(FileLock::try_acquire(&path), Ok(None))
}

/// Records the exit policy's decision as a settlement in the status (never
/// in the operator's spec), which the same reconcile then converges: a purge
/// (acknowledging the unfinished work when the policy says so), or keeping
/// the instance. `Preserve` and `Ask` settle nothing.
fn apply_exit_action(
    obj: &mut Instance,
    action: ExitAction,
    policy: ExitPolicy,
    mounts: &[MountStatus],
) {
    let phase = match action {
        ExitAction::Purge { .. } => DesiredPhase::Purged,
        ExitAction::Keep { .. } => DesiredPhase::Kept,
        ExitAction::Ask => {
            // The attached operator answers; until then the session waits.
            set_condition(
                &mut obj.status.get_or_insert_default().conditions,
                condition::EXIT_POLICY,
                ConditionStatus::Unknown,
                reason::ASK_OPERATOR,
                "the isolated checkouts hold unfinished work; the attached operator decides",
                Timestamp::now(),
            );
            return;
        }
        ExitAction::Preserve => return,
    };
    let acknowledged = match action {
        ExitAction::Purge { acknowledge: true } => acknowledgement_digest(mounts),
        _ => None,
    };
    if let ExitAction::Keep {
        non_interactive: true,
    } = action
    {
        set_condition(
            &mut obj.status.get_or_insert_default().conditions,
            condition::EXIT_POLICY,
            ConditionStatus::True,
            reason::NON_INTERACTIVE,
            &format!(
                "exit policy {}: the isolated checkouts hold unfinished work and nobody was \
                 attached to ask, so the instance is kept",
                policy.as_str()
            ),
            Timestamp::now(),
        );
    }
    settle(obj, phase, SettledBy::ExitPolicy, acknowledged);
}

/// The operator's resume (`set-phase running`, `attach`, a `launch` that
/// resumes): the desired phase becomes `Running`, a settlement of the last
/// session stops standing (a resume request, never a rewrite of what jackin
/// decided), and a session the agent ended has its marker set aside, so the
/// loop starts it again instead of leaving it ended.
pub fn resume(store: &Store, name: &str) -> Result<ApplyOutcome, StoreError> {
    let current = store.get_instance(name)?;
    let mut outcome = store.set_phase(name, DesiredPhase::Running)?;
    // A settlement no longer stands, and failures no longer count (the
    // loop tries again one that it gave up on).
    if current.settlement().is_some() || current.failures().is_some() {
        outcome = store.request_resume(name)?;
    }
    let ended = matches!(
        current.phase(),
        Some(InstancePhase::Exited | InstancePhase::Crashed)
    );
    if let (true, Some(container)) = (ended, current.container_name()) {
        let layout = store.layout();
        session::retire_marker(layout, container)
            .map_err(|e| StoreError::io(&layout.unit_dir(container), e))?;
        outcome = ApplyOutcome::Configured;
    }
    Ok(outcome)
}

/// The operator's answer "keep it" at the end of a session: the session is
/// settled as kept, and its marker set aside, so that a later resume does
/// not take it for ended again.
pub fn keep_ended(store: &Store, name: &str) -> Result<(), StoreError> {
    let obj = store.get_instance(name)?;
    if let Some(container) = obj.container_name() {
        let layout = store.layout();
        session::retire_marker(layout, container)
            .map_err(|e| StoreError::io(&layout.unit_dir(container), e))?;
    }
    store.settle(name, DesiredPhase::Kept, SettledBy::Operator, None)?;
    Ok(())
}

/// The operator's answer "clean up" at the end of a session, having been
/// shown the unfinished work: the settlement acknowledges exactly that
/// evidence (its digest), so the purge discards nothing else.
pub fn clean_up_ended(store: &Store, name: &str, shown: Option<String>) -> Result<(), StoreError> {
    store.settle(name, DesiredPhase::Purged, SettledBy::Operator, shown)?;
    Ok(())
}

/// Records how an ended session is settled: `phase` stands in for the
/// spec's until the spec changes or the operator resumes the instance.
pub fn settle(
    obj: &mut Instance,
    phase: DesiredPhase,
    by: SettledBy,
    acknowledged: Option<String>,
) {
    let generation = obj.metadata.generation;
    obj.status.get_or_insert_default().settled = Some(Settlement {
        phase,
        by,
        at: Timestamp::now(),
        generation,
        acknowledged,
    });
}
