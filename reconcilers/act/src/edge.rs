//! The session edge's steps, and the phase writes a plan carries: what they
//! change is the instance's status (through [`ending::apply`], the one
//! place that rules on it), the unit's marker, and what the agent left in
//! `state/artifacts/`.

use jackin_api::instance::{Instance, InstancePhase, OutcomeSource, RestoreRecord, SessionOutcome};
use jackin_api::meta::{ConditionStatus, find_condition, set_condition};
use jackin_api::names::{condition, reason};
use jackin_api::workspace::ExitPolicy;

use super::context::{Context, Report};
use super::error::ActError;
use crate::session;
use jackin_files::offload::blocking;
use jackin_plan::ending;
use jackin_plan::plan::{Step, Tier};
use jackin_plan::policy::ExitAction;

/// `StampPurging` and `SetPhase`: the phase, written to the status.
pub(super) fn set_phase(obj: &mut Instance, step: &Step) {
    let phase = match step {
        Step::SetPhase(phase) => *phase,
        _ => InstancePhase::Purging,
    };
    obj.status.get_or_insert_default().phase = Some(phase);
}

/// Records the restore the start before carried out.
/// A restore that carries out a rollout is when the rollout is done: its
/// condition turns `RolledOut`.
pub(super) fn record_restore(obj: &mut Instance, tier: Tier, rollout: Option<String>) {
    let status = obj.status.get_or_insert_default();
    let now = jiff::Timestamp::now();
    let pinned = find_condition(&status.conditions, condition::ROLLOUT)
        .filter(|c| rollout.is_some() && c.reason == reason::ROLLING_OUT)
        .map(|c| c.message.clone());
    if let Some(pinned) = pinned {
        let message = format!(
            "{pinned}; the session runs from it (tier {})",
            tier.number()
        );
        let conditions = &mut status.conditions;
        let rolled = reason::ROLLED_OUT;
        set_condition(
            conditions,
            condition::ROLLOUT,
            ConditionStatus::True,
            rolled,
            &message,
            now,
        );
    }
    status.restore = Some(RestoreRecord {
        tier: tier.number(),
        at: now,
        rollout,
    });
}

/// Records how the last session ended, and collects what the agent left
/// in `state/artifacts/` outside the unit, which a purge may take next.
pub(super) async fn record(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    outcome: &SessionOutcome,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    ending::apply(
        obj,
        &Step::RecordSession(outcome.clone()),
        &[],
        jiff::Timestamp::now(),
    );
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
    let finished = outcome
        .finished_at
        .unwrap_or_else(jiff::Timestamp::now)
        .to_string();
    let (layout, name) = (ctx.layout.clone(), obj.metadata.name.clone());
    let unit = container.to_owned();
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
    Ok(())
}

/// Says that the completion marker cannot be read.
pub(super) fn note_malformed_marker(
    obj: &mut Instance,
    why: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) {
    ending::apply(
        obj,
        &Step::NoteMalformedMarker(why.to_owned()),
        &[],
        jiff::Timestamp::now(),
    );
    progress(Report::Event {
        reason: condition::MARKER_MALFORMED,
        message: why,
    });
}

/// Settles the ended session as the exit policy decided (`step`, the
/// `Settle` that says so).
pub(super) fn settle(
    obj: &mut Instance,
    step: &Step,
    action: &ExitAction,
    policy: ExitPolicy,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) {
    let mounts = obj
        .status
        .as_ref()
        .map(|s| s.mounts.clone())
        .unwrap_or_default();
    ending::apply(obj, step, &mounts, jiff::Timestamp::now());
    let reason = condition::EXIT_POLICY;
    match action {
        // Nobody was there to be asked: the command that settled it says
        // where the work is and what to do with it (a note), not only the
        // event log.
        ExitAction::Keep {
            non_interactive: true,
        } => progress(Report::Note {
            stage: None,
            reason,
            message: &ending::kept_unasked(&obj.metadata.name, policy, &mounts),
        }),
        _ => progress(Report::Event {
            reason,
            message: &format!("exit policy {}: {action}", policy.as_str()),
        }),
    }
}

/// Sets the handled marker aside.
pub(super) async fn retire_marker(ctx: &Context<'_>, container: &str) -> Result<(), ActError> {
    let layout = ctx.layout.clone();
    let path = ctx.layout.unit_dir(container);
    let unit = container.to_owned();
    blocking(move || {
        session::retire_marker(&layout, &unit).map_err(|source| ActError::Io { path, source })
    })
    .await
}
