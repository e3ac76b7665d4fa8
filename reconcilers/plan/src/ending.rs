//! The session edge, decided: how the last session ended (the completion
//! marker first, then the engine, else unknown), and what follows from it
//! (its record, the exit policy's settlement, the marker set aside). Pure:
//! the caller reads the marker and asks the engine ([`SessionSeen`]);
//! [`steps`] turns that into steps that `act` runs, and [`apply`] is what
//! each of them changes in the status, used alike by `act` and by `decide`
//! to decide the rest of the plan from the status as they leave it. So a
//! dry run decides exactly what a reconcile then does.
//!
//! Who ended it is recorded, not guessed. Only a marker that says the
//! agent exited, read while the desired phase is `Running`, is the agent
//! ending its session, and only that goes to the exit policy
//! ([`crate::policy`]). An OOM kill (the engine's flag) is preserved as
//! `Crashed`, never handed to the policy. A session that ended after jackin
//! asked the engine to stop it (`status.stopRequestedAt`: a keep, a
//! rollout, a restart) is recorded as stopped by jackin, whatever its exit
//! code, and never reads as a crash or a failure.

use jackin_api::instance::{
    Instance, InstancePhase, InstanceStatus, MountStatus, OutcomeSource, SessionOutcome, SettledBy,
};
use jackin_api::meta::{find_condition, remove_condition, set_condition};
use jackin_api::names::{condition, reason};
use jackin_api::workspace::ExitPolicy;
use jackin_api::{ConditionStatus, DesiredPhase};
use jiff::Timestamp;

use crate::marker::{Marker, MarkerState};
use crate::plan::Step;
use crate::policy::{self, ExitAction};
use crate::view::SessionSeen;
use crate::view::{acknowledgement_digest, work_summary};

/// `status.session.reason` of a session the kernel's OOM killer ended.
pub const REASON_OOM: &str = "oom";

/// Whether the engine must be asked about the stopped container: not when
/// a marker already recorded says it all.
pub fn engine_needed(obj: &Instance, marker: &MarkerState) -> bool {
    match marker {
        MarkerState::Present(marker) => {
            let finished = marker.finished();
            finished.is_some() && finished != recorded(obj)
        }
        MarkerState::Absent | MarkerState::Malformed(_) => true,
    }
}

/// When the session recorded last ended.
fn recorded(obj: &Instance) -> Option<Timestamp> {
    obj.status
        .as_ref()
        .and_then(|s| s.session.as_ref())
        .and_then(|s| s.finished_at)
}

/// What the session edge does, and the exit code of a session the agent
/// ended on its own that nothing settled (the instance stays ended: its
/// `decide` does not undo it).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Ending {
    pub steps: Vec<Step>,
    pub ended: Option<i64>,
}

/// The session edge's steps for `obj`: `running`, whether its container
/// runs; `seen`, what was seen of the last session's end; `policy`, the
/// exit policy in force; `mounts`, the checkouts' evidence.
pub fn steps(
    obj: &Instance,
    running: bool,
    container_present: bool,
    seen: &SessionSeen,
    policy: ExitPolicy,
    mounts: &[MountStatus],
) -> Ending {
    let status = obj.status.clone().unwrap_or_default();
    let mut steps = Vec::new();
    if running {
        // A session runs: a question about an earlier one is moot.
        if find_condition(&status.conditions, condition::EXIT_POLICY).is_some() {
            steps.push(Step::ClearExitQuestion);
        }
        return Ending { steps, ended: None };
    }
    match &seen.marker {
        MarkerState::Present(marker) => {
            return from_marker(obj, &status, marker, seen, policy, mounts);
        }
        MarkerState::Malformed(why) => {
            let message = malformed_message(why);
            let noted = find_condition(&status.conditions, condition::MARKER_MALFORMED)
                .is_some_and(|c| c.message == message);
            if !noted {
                steps.push(Step::NoteMalformedMarker(why.clone()));
            }
        }
        MarkerState::Absent => {}
    }
    if container_present {
        // Stopped without a marker of this run: the engine's state.
        if let Some(exit) = seen.engine.filter(|e| e.started.is_some()) {
            // The marker's times have whole seconds.
            let already = recorded(obj)
                .is_some_and(|r| exit.started.is_none_or(|s| r.as_second() >= s.as_second()));
            if exit.finished.is_some() && !already {
                let reason = match (exit.oom_killed, exit.exit_code) {
                    (true, _) => REASON_OOM,
                    (_, 137) => "killed",
                    _ => "exited",
                };
                steps.push(Step::RecordSession(SessionOutcome {
                    exit_code: Some(exit.exit_code),
                    finished_at: exit.finished,
                    source: OutcomeSource::Engine,
                    reason: Some(reason.to_owned()),
                    stopped_by_jackin: stopped_by_jackin(&status, exit.finished),
                }));
            }
        }
        return Ending { steps, ended: None };
    }
    // Gone while we believed it ran (or a sweep already noted it gone: it
    // turns a `Running` row `Exited`, with the reason). jackin's own
    // removals leave the phase at neither (`Kept`, `Purging`, `Launching`):
    // their sessions were recorded first.
    let lost = status.phase == Some(InstancePhase::Running)
        || (status.phase == Some(InstancePhase::Exited)
            && find_condition(&status.conditions, condition::READY).is_some_and(|c| {
                matches!(
                    c.reason.as_str(),
                    reason::CONTAINER_MISSING | reason::ENGINE_RESTARTED
                )
            }));
    if lost {
        steps.push(Step::RecordSession(SessionOutcome {
            exit_code: None,
            finished_at: None,
            source: OutcomeSource::Unknown,
            reason: Some("the container was removed and left no marker".into()),
            stopped_by_jackin: false,
        }));
    }
    Ending { steps, ended: None }
}

/// The session edge when the unit's completion marker is there: a new
/// ending recorded (the OOM killer's and jackin's own stops told apart),
/// and one the agent ended itself, while it was meant to run, handed to
/// the exit policy.
fn from_marker(
    obj: &Instance,
    status: &InstanceStatus,
    marker: &Marker,
    seen: &SessionSeen,
    policy: ExitPolicy,
    mounts: &[MountStatus],
) -> Ending {
    let mut steps = Vec::new();
    let finished = marker.finished();
    let new = finished.is_some() && finished != recorded(obj);
    // The kernel's OOM killer is not the agent ending its session,
    // whatever the wrapper saw; only the engine knows.
    let oom = match new {
        true => seen.engine.is_some_and(|e| e.oom_killed),
        false => status.session.as_ref().and_then(|s| s.reason.as_deref()) == Some(REASON_OOM),
    };
    // jackin's own stop (a keep, a rollout, a restart) ended it,
    // whatever the agent answered SIGTERM with (codex exits 1:
    // defect R14), and whatever the wrapper saw.
    let by_jackin = match new {
        true => stopped_by_jackin(status, finished),
        false => status.session.as_ref().is_some_and(|s| s.stopped_by_jackin),
    };
    if new {
        steps.push(Step::RecordSession(SessionOutcome {
            exit_code: Some(marker.exit_code),
            finished_at: finished,
            source: OutcomeSource::Marker,
            reason: Some(if oom { REASON_OOM } else { marker.reason() }.to_owned()),
            stopped_by_jackin: by_jackin,
        }));
    }
    if oom {
        // Preserved as it is; a restart would meet the same limit.
        return Ending {
            steps,
            ended: Some(marker.exit_code),
        };
    }
    // Only a session the agent ended itself, while it was meant to
    // run, goes to the exit policy. A stop that jackin (a `Kept`
    // teardown), the operator or the engine caused is not an
    // ending: `Kept` and `Purged` say what to do, and `Running`
    // restores it.
    let agent_ended =
        marker.ended_by_itself() && !by_jackin && obj.desired_phase() == DesiredPhase::Running;
    // The policy decides a new ending, and again one that waits for
    // an operator who is no longer attached to answer.
    let waiting = !new
        && status
            .conditions
            .iter()
            .any(|c| c.reason == reason::ASK_OPERATOR);
    if agent_ended && (new || (waiting && !seen.attached)) {
        let action = policy::on_exit(policy, marker.exit_code, mounts, seen.attached);
        steps.push(Step::Settle { action, policy });
        if matches!(action, ExitAction::Purge { .. } | ExitAction::Keep { .. }) {
            // Handled: a later resume must not find it and take
            // the session for ended again.
            steps.push(Step::RetireMarker);
            return Ending { steps, ended: None };
        }
    }
    // A kept instance was settled after its session ended; the
    // marker no longer speaks for what to do with it.
    let kept = status.phase == Some(InstancePhase::Kept);
    Ending {
        steps,
        ended: (agent_ended && !kept).then_some(marker.exit_code),
    }
}

/// Whether the session that ended at `finished` ended after jackin asked
/// the engine to stop it: then jackin stopped it. A session that left no
/// time of its end, with a stop asked, is taken as the stop's.
fn stopped_by_jackin(status: &InstanceStatus, finished: Option<Timestamp>) -> bool {
    status
        .stop_requested_at
        .is_some_and(|asked| finished.is_none_or(|at| at >= asked))
}

fn malformed_message(why: &str) -> String {
    format!("the completion marker is not valid; the engine's exit state is used: {why}")
}

/// What `step` changes in the status, if it is a step of the session edge
/// (others change nothing here). `now` stamps conditions and settlements,
/// and an ending that left no time of its own.
pub fn apply(obj: &mut Instance, step: &Step, mounts: &[MountStatus], now: Timestamp) {
    let status = obj.status.get_or_insert_default();
    match step {
        Step::ClearExitQuestion => {
            remove_condition(&mut status.conditions, condition::EXIT_POLICY);
        }
        Step::RecordSession(outcome) => {
            match outcome.source {
                OutcomeSource::Marker => {
                    for stale in [
                        condition::MARKER_MALFORMED,
                        condition::SESSION_OUTCOME,
                        condition::EXIT_POLICY,
                    ] {
                        remove_condition(&mut status.conditions, stale);
                    }
                }
                OutcomeSource::Engine => {
                    remove_condition(&mut status.conditions, condition::SESSION_OUTCOME);
                }
                OutcomeSource::Unknown => {
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
                }
            }
            status.record_ending(outcome, now);
            // Its ending is recorded: a stop asked before it says nothing
            // of the next session.
            status.stop_requested_at = None;
        }
        Step::NoteMalformedMarker(why) => {
            set_condition(
                &mut status.conditions,
                condition::MARKER_MALFORMED,
                ConditionStatus::True,
                reason::UNPARSABLE,
                &malformed_message(why),
                now,
            );
        }
        Step::Settle { action, policy } => apply_exit_action(obj, *action, *policy, mounts, now),
        _ => {}
    }
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
    now: Timestamp,
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
                now,
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
            &kept_unasked(&obj.metadata.name, policy, mounts),
            now,
        );
    }
    obj.settle(phase, SettledBy::ExitPolicy, acknowledged, now);
}

/// What jackin says of a session kept because nobody was attached to
/// answer the exit policy's question (the condition, the event, and so the
/// line of the command that settled it): where each isolated checkout is
/// on the host and what it holds, and how to return to the session,
/// inspect the work or discard it. One line.
pub fn kept_unasked(name: &str, policy: ExitPolicy, mounts: &[MountStatus]) -> String {
    let checkouts = mounts
        .iter()
        .map(|m| match work_summary(m) {
            work if work.is_empty() => format!("{} ({}: nothing unfinished)", m.path, m.dst),
            work => format!("{} ({}: {work})", m.path, m.dst),
        })
        .collect::<Vec<_>>()
        .join("; ");
    format!(
        "exit policy {}: {}; kept with its isolated checkouts, on the host at {checkouts}. \
         `jackin attach {name}` returns to it, `jackin describe {name}` (or the checkout) \
         shows the work, `jackin set-phase {name} purged` discards it",
        policy.as_str(),
        ExitAction::Keep {
            non_interactive: true
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::marker::Marker;

    fn ended_at(second: i64, reason: &str, code: i64) -> SessionSeen {
        SessionSeen {
            marker: MarkerState::Present(Marker {
                exit_code: code,
                started_at: String::new(),
                finished_at: String::new(),
                reason: reason.into(),
                written: Some(Timestamp::from_second(second).unwrap()),
            }),
            ..Default::default()
        }
    }

    fn running_instance(stop_requested_at: Option<i64>) -> Instance {
        Instance {
            api_version: jackin_api::API_VERSION.into(),
            kind: Instance::KIND.into(),
            metadata: jackin_api::ObjectMeta {
                name: "a".into(),
                ..Default::default()
            },
            spec: Default::default(),
            status: Some(InstanceStatus {
                phase: Some(InstancePhase::Running),
                stop_requested_at: stop_requested_at.map(|s| Timestamp::from_second(s).unwrap()),
                ..Default::default()
            }),
        }
    }

    /// The session edge of a stopped container, under the default policy.
    fn edge(obj: &Instance, seen: &SessionSeen) -> Ending {
        steps(obj, false, true, seen, ExitPolicy::Ask, &[])
    }

    fn recorded(ending: &Ending) -> &SessionOutcome {
        match ending.steps.first() {
            Some(Step::RecordSession(outcome)) => outcome,
            steps => panic!("the session is recorded first: {steps:?}"),
        }
    }

    /// Defect R14: codex exits 1 on SIGTERM. A session that ends after
    /// jackin asked the engine to stop it is jackin's stop, whatever the
    /// code and whatever the wrapper saw: never the agent's own ending,
    /// so no exit policy and no `Crashed`. Before any stop jackin asked,
    /// the same marker is the agent's own ending.
    #[test]
    fn an_exit_after_jackins_own_stop_is_jackins_whatever_the_code() {
        for reason in ["signal:TERM", "exited"] {
            let obj = running_instance(Some(100));
            let seen = ended_at(101, reason, 1);
            let ending = edge(&obj, &seen);
            assert!(recorded(&ending).stopped_by_jackin, "{reason}");
            assert_eq!(ending.ended, None, "{reason}: not the agent's ending");
            assert!(
                !ending
                    .steps
                    .iter()
                    .any(|s| matches!(s, Step::Settle { .. })),
                "{reason}: {:?}",
                ending.steps
            );
        }
        let crashed = edge(&running_instance(Some(100)), &ended_at(99, "exited", 1));
        assert!(!recorded(&crashed).stopped_by_jackin);
        assert_eq!(crashed.ended, Some(1), "ended before the stop: its own");
        // A stop jackin did not ask (`docker stop`): not jackin's, and not
        // the agent ending its session either.
        let outside = edge(&running_instance(None), &ended_at(101, "signal:TERM", 1));
        assert!(!recorded(&outside).stopped_by_jackin);
        assert_eq!(outside.ended, None);
    }

    #[test]
    fn recording_the_ending_forgets_the_stop_asked() {
        let mut obj = running_instance(Some(100));
        let ending = edge(&obj, &ended_at(101, "signal:TERM", 143));
        for step in &ending.steps {
            apply(&mut obj, step, &[], Timestamp::from_second(102).unwrap());
        }
        let status = obj.status.unwrap();
        assert_eq!(status.stop_requested_at, None);
        assert!(status.session.unwrap().stopped_by_jackin);
    }

    /// A-FN7: each checkout's path and what it holds, and the three ways
    /// on, by the instance's name.
    #[test]
    fn a_session_kept_unasked_names_its_checkouts_and_the_ways_on() {
        let mount = |path: &str, dirty: bool| MountStatus {
            dst: "/w".into(),
            path: path.into(),
            dirty_files: if dirty { vec!["?? a".into()] } else { vec![] },
            ..Default::default()
        };
        let said = kept_unasked(
            "n",
            ExitPolicy::Ask,
            &[mount("/a", true), mount("/b", false)],
        );
        assert!(
            said.starts_with("exit policy ask: keep the session"),
            "{said}"
        );
        assert!(
            said.contains("/a (/w: 1 changed files); /b (/w: nothing unfinished)"),
            "{said}"
        );
        for command in [
            "jackin attach n",
            "jackin describe n",
            "jackin set-phase n purged",
        ] {
            assert!(said.contains(&format!("`{command}`")), "{said}");
        }
    }
}
