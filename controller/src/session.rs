//! The session edge of a reconcile, observed: what is seen of the last
//! session's end (the completion marker, the engine's state of the stopped
//! container, whether an operator is attached), read only. What follows
//! from it is decided in `jackin_plan::ending` and carried out by `act`.
//! Also the operator's answers at the end of a session (keep, clean up,
//! resume), the idle hooks' restart, and what the entry wrapper reports:
//! the conversation, and the workspace's setup.

use jackin_act::observe::Observation;
use jackin_act::resume;
use jackin_act::session;
use jackin_api::DesiredPhase;
use jackin_api::Instance;
use jackin_api::agent::Strategy;
use jackin_api::instance::{FallbackEnding, FallbackRecord, InstancePhase, SettledBy};
use jackin_api::meta::{ConditionStatus, set_condition};
use jackin_api::names::{annotation, condition, reason};
use jackin_api::setup::SetupOutcome;
use jackin_api::workspace::ExitPolicy;
use jackin_engine::Engine;
use jackin_plan::decide;
use jackin_plan::ladder;
use jackin_plan::plan::Step;
use jiff::Timestamp;

use crate::events;
use crate::failure::ReconcileError;
use crate::reconcile::{Parts, Reconciler};
use crate::store::{ApplyOutcome, InstanceGuard, Store, StoreError};

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
        let locked = jackin_files::offload::blocking(move || store.lock_instance(&owned)).await?;
        let Some(mut guard) = locked else {
            return Ok(false);
        };
        if guard.obj.desired_phase() != DesiredPhase::Running {
            return Ok(false);
        }
        let (workspace, agent, home_id) = self.resolved(&guard.obj)?;
        let parts = Parts {
            workspace: workspace.as_ref(),
            agent: agent.as_ref(),
            home_id,
        };
        let engine = self.engine_of(&guard.obj).await?.engine;
        let uid = guard.obj.metadata.uid.clone().unwrap_or_default();
        // Every change goes through `act`, as a reconcile's, planned by
        // `decide::recycle`: the graceful stop, then (looked at again, as a
        // reconcile does: how the session ended is read from the stopped
        // container) the session edge and the removal.
        let mut restart = false;
        for first in [true, false] {
            let image = crate::reconcile::pinned_image(&guard.obj);
            let observed = Observation::of_instance(&engine, &uid, image).await?;
            let observed = Some((&engine, &observed));
            let view = self.look(&guard.obj, observed, &parts, false).await?;
            let runs = view
                .container
                .as_ref()
                .is_some_and(|c| c.id == id && c.running);
            if first && !runs {
                return Ok(false);
            }
            let plan = decide::recycle(&guard.obj, &view, id, Timestamp::now());
            self.run_plan(&mut guard, &plan).await?;
            // Not when the agent ended its session meanwhile: an ending
            // the loop settles, never a restart.
            restart = plan
                .steps
                .iter()
                .any(|step| matches!(step, Step::RemoveContainer { .. }));
        }
        Ok(restart)
    }

    /// Takes in what the entry wrapper reported of the session's setup:
    /// `status.setup`, the `Setup` condition (`SetupFailed` names the log
    /// and the end of the output is kept there), an event. The session
    /// runs whatever the setup did.
    pub(crate) async fn observe_setup(&self, guard: &mut InstanceGuard) {
        let (layout, container) = (self.layout().clone(), guard.container.clone());
        let taken = jackin_files::offload::blocking(move || {
            session::take_setup_result(&layout, &container)
        })
        .await;
        let Some(setup) = taken else {
            return;
        };
        let log = session::setup_log_file(self.layout(), &guard.container);
        let code = setup
            .exit_code
            .map_or_else(String::new, |c| format!(" (exit {c})"));
        let (status, why, message) = match setup.outcome {
            SetupOutcome::Done | SetupOutcome::Skipped => (
                ConditionStatus::True,
                reason::SETUP_DONE,
                format!("the setup {}{code}", setup.outcome.as_str()),
            ),
            SetupOutcome::Failed | SetupOutcome::TimedOut => (
                ConditionStatus::False,
                reason::SETUP_FAILED,
                format!(
                    "the setup {}{code}; the agent runs without it; its output ends in {} \
                     (`jackin describe` shows its last lines)",
                    setup.outcome.as_str(),
                    log.display()
                ),
            ),
        };
        events::record(self.layout(), &guard.container, why, &message);
        let status_now = guard.obj.status.get_or_insert_default();
        set_condition(
            &mut status_now.conditions,
            condition::SETUP,
            status,
            why,
            &message,
            Timestamp::now(),
        );
        status_now.setup = Some(setup);
    }

    /// Folds what the entry wrapper reported of the agent's last start into
    /// `status.conversation`; each fallback of a start not seen before is
    /// an event with the agent's own error line: the last it printed on its
    /// terminal in the rung's window (claude says why on standard output:
    /// defect R10), else the last of its standard error. Each is told as
    /// refused or crashed (defect SA4), there and in `lastFallback`.
    pub(crate) async fn observe_conversation(&self, engine: &Engine, guard: &mut InstanceGuard) {
        let secret_names = guard
            .obj
            .recipe()
            .map(jackin_plan::redact::secret_names)
            .unwrap_or_default();
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
        let report =
            jackin_files::offload::blocking(move || resume::read_report(&layout, &container)).await;
        let Some(report) = report else {
            return;
        };
        let id_before = conversation.id.clone();
        let fallbacks = ladder::fold_report(conversation, &report, Timestamp::now());
        // The agent's lines are kept (events, status): the values the
        // container was handed are scrubbed from them, and when they cannot
        // be read back no line is kept.
        let secrets = match fallbacks.is_empty() {
            true => None,
            false => jackin_act::secrets::handed_over(engine, &guard.container, &secret_names)
                .await
                .ok(),
        };
        for fallback in fallbacks {
            let printed = match fallback.window {
                Some(window) => printed_in(engine, &guard.container, window).await,
                None => String::new(),
            };
            let line = match printed.is_empty() {
                true => fallback.error.clone(),
                false => printed,
            };
            let line = secrets
                .as_ref()
                .map_or_else(String::new, |s| s.scrub_str(&line));
            let ended = ladder::told(&line, conversation.id.as_deref());
            events::record(
                self.layout(),
                &guard.container,
                reason::AGENT_FALLBACK,
                &fallback_message(&fallback, ended, &line),
            );
            conversation.last_fallback = Some(FallbackRecord {
                rung: fallback.rung,
                exit_code: fallback.exit_code,
                ended,
                error: line,
            });
        }
        if let (Some(before), Some(now)) = (&id_before, &conversation.id)
            && before != now
        {
            events::record(
                self.layout(),
                &guard.container,
                reason::CONVERSATION_RENEWED,
                &format!(
                    "the agent could neither resume conversation {before} nor start it again: \
                     it runs a new conversation under {now}, which jackin minted and records \
                     (status.conversation.ids)"
                ),
            );
        }
    }
}

/// The `AgentFallback` event of a rung that ended within its grace period:
/// what it printed, and whether that was the agent refusing the
/// conversation or failing otherwise.
fn fallback_message(fallback: &ladder::Fallback, ended: FallbackEnding, line: &str) -> String {
    let error = match line {
        "" => String::new(),
        line => format!(": {line}"),
    };
    let told = match ended {
        FallbackEnding::Refused => "refused: the agent named the conversation",
        FallbackEnding::Crashed => "crashed: not a refusal of the conversation",
    };
    format!(
        "starting the agent {} exited {} at once{error} ({told}); the next way was tried",
        fallback.rung, fallback.exit_code
    )
}

/// The most of a rung's output read back from the engine's log.
const RUNG_OUTPUT_BYTES: usize = 64 * 1024;
/// How long the engine may take to give a rung's output back.
const RUNG_OUTPUT_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

/// The last line the agent showed on its terminal in a rung's window, as
/// the engine's log holds it: the seconds from `from` to `to` and the one
/// after (output the engine took in late; the wrapper starts the next rung
/// only after it, so no second holds two rungs' output). Empty when the
/// engine gives nothing back in time.
async fn printed_in(engine: &Engine, container: &str, (from, to): (i64, i64)) -> String {
    use futures::StreamExt;
    let request = jackin_engine::LogsRequest {
        since_unix: Some(from),
        until_unix: Some(to + 2),
        ..Default::default()
    };
    let mut logs = engine.logs(container, request);
    let mut output = Vec::new();
    let read = async {
        while let Some(Ok(chunk)) = logs.next().await {
            output.extend_from_slice(&chunk);
            // The end is what counts: keep the last RUNG_OUTPUT_BYTES.
            let over = output.len().saturating_sub(RUNG_OUTPUT_BYTES);
            output.drain(..over);
        }
    };
    match tokio::time::timeout(RUNG_OUTPUT_WAIT, read).await {
        Ok(()) => ladder::last_line(&output),
        Err(_) => String::new(),
    }
}

/// A launch's exit policy is its session's alone (the seed's one-shot
/// `--keep` / `--clean`): `policy` is recorded with the time, for the session
/// this resume starts, or joins when it runs; without one, a resume that
/// starts a session anew (the last one ended, or was settled to) removes an
/// earlier launch's. A settlement after it ends it too
/// ([`ExitPolicy::launched`]), so neither a session settled by the loop nor
/// one ended unsettled and resumed later inherits it.
fn record_launch_policy(
    store: &Store,
    current: &Instance,
    policy: Option<ExitPolicy>,
) -> Result<ApplyOutcome, StoreError> {
    let anew = current.desired_phase() != DesiredPhase::Running
        || !matches!(
            current.phase(),
            None | Some(InstancePhase::Pending | InstancePhase::Launching | InstancePhase::Running)
        );
    let recorded = current
        .metadata
        .annotations
        .contains_key(annotation::LAUNCH_EXIT_POLICY);
    let value = match policy {
        Some(policy) => Some(policy.for_launch_at(Timestamp::now())),
        None if anew && recorded => None,
        None => return Ok(ApplyOutcome::Unchanged),
    };
    let name = &current.metadata.name;
    store.set_annotation(name, annotation::LAUNCH_EXIT_POLICY, value.as_deref())
}

/// `status.session.reason` of a session the kernel's OOM killer ended.
pub use jackin_plan::ending::REASON_OOM;

/// The operator's resume (`set-phase running`, `attach`, a `launch` that
/// resumes): the desired phase becomes `Running`, a settlement of the last
/// session stops standing (a resume request, never a rewrite of what jackin
/// decided), and a session the agent ended has its marker set aside, so the
/// loop starts it again instead of leaving it ended. `launch_policy`: the
/// exit policy a launch's `--keep` / `--clean` chose for this session: it
/// counts for the session this resume starts or joins, and a resume without
/// one that starts a session anew removes an earlier launch's.
pub fn resume(
    store: &Store,
    name: &str,
    launch_policy: Option<ExitPolicy>,
) -> Result<ApplyOutcome, StoreError> {
    let current = store.get_instance(name)?;
    // Before the phase: a loop that starts the session already knows it.
    let recorded = record_launch_policy(store, &current, launch_policy)?;
    let mut outcome = store.set_phase(name, DesiredPhase::Running)?;
    if recorded != ApplyOutcome::Unchanged {
        outcome = recorded;
    }
    // A settlement no longer stands, and failures no longer count (the
    // loop tries again one that it gave up on).
    if current.settlement().is_some() || current.failures().is_some() {
        outcome = store.request_resume(name)?;
    }
    let ended = matches!(
        current.status.as_ref().and_then(|s| s.phase),
        Some(InstancePhase::Exited | InstancePhase::Crashed)
    );
    if let (true, Some(container)) = (
        ended,
        current
            .status
            .as_ref()
            .and_then(|s| s.container_name.as_deref()),
    ) {
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
    if let Some(container) = obj
        .status
        .as_ref()
        .and_then(|s| s.container_name.as_deref())
    {
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
