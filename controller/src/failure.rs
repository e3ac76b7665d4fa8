//! The failure policy: what a failed reconcile means, decided in one place.
//! As kube-runtime's `applier(reconciler, error_policy, …)` hands every
//! error of a reconcile to one function, a reconcile here hands every
//! failure, as it met it (`Failure`), to `policy`, which records on the
//! locked instance what the failure means and returns the error the
//! reconcile ends with:
//!
//! - the status: `Ready` false with the failure's reason and cause; the
//!   phase `Failed` when retrying without a change cannot help; one more
//!   attempt counted toward giving up ([`MAX_FAILED_ATTEMPTS`]) when
//!   retrying cannot help, or the engine refused a start in a way that may
//!   keep coming back; after the last of them the loop gives up
//!   ([`ReconcileError::GaveUp`]);
//! - a rollout: a rollout's pin that failed leaves the request handled and
//!   said failed (`status.rollout`, `Rollout`), counted toward nothing: the
//!   session runs on as pinned;
//! - when the controller tries again ([`ReconcileError::retry`]): after the
//!   instance's backoff, or, once the loop gave up, not before the operator
//!   changes the spec or asks to resume.
//!
//! Why one place: the status, the count, the rollout record and the retry
//! must agree, and a new way to fail is then one arm here rather than one
//! more path that records its own. `policy` is called where a locked
//! instance's work ends in a failure: by [`Reconciler::reconcile`] for
//! every failure of a reconcile, and by `Reconciler::run_plan` for a step
//! of the idle hooks' restart, which runs outside a reconcile.
//!
//! [`Reconciler::reconcile`]: crate::reconcile::Reconciler::reconcile

use jackin_act::ActError;
use jackin_api::ConditionStatus;
use jackin_api::instance::{
    Failures, Instance, InstancePhase, MAX_FAILED_ATTEMPTS, RolloutNotMade,
};
use jackin_api::meta::set_condition;
use jackin_api::names::{condition, reason};
use jackin_engine::EngineError;
use jackin_files::layout::Layout;
use jackin_plan::plan::Step;
use jiff::Timestamp;

use crate::engines::{EngineName, display_name};
use crate::store::{InstanceGuard, StoreError};

/// How many observe-decide-act rounds one reconcile may take. A healthy
/// instance converges in two (act, then confirm), a keep of a running one
/// in three (stop, then record the session and remove, then confirm), one
/// more after a shared snapshot; more means something keeps undoing the
/// work, which is reported rather than fought forever.
pub(crate) const MAX_ROUNDS: usize = 5;

#[derive(Debug, thiserror::Error)]
pub enum ReconcileError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error("{step}: {error}")]
    Step {
        step: String,
        #[source]
        error: ActError,
    },
    #[error("did not converge after {MAX_ROUNDS} rounds: something keeps changing its objects")]
    NotConverging,
    /// The loop stopped trying: attempts in a row failed for a reason
    /// retrying cannot fix (see [`Instance::gave_up`]). `now` says whether
    /// this reconcile made the last of them, or found them made before.
    #[error("failed {attempts} times in a row, and jackin stopped trying; the last time: {cause}")]
    GaveUp {
        attempts: u32,
        cause: String,
        now: bool,
    },
}

/// When the controller looks at a failed instance again, as the policy
/// decided it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Retry {
    /// After the instance's next backoff delay (see [`crate::backoff`]),
    /// or at once when the operator changes it.
    AfterBackoff,
    /// Not before the operator changes its spec or asks to resume: the
    /// loop gave up on it, whatever the engine's events or the resync say.
    OnChange,
}

impl ReconcileError {
    /// Whether retrying without a change elsewhere cannot help.
    pub fn is_permanent(&self) -> bool {
        match self {
            Self::Step { error, .. } => error.is_permanent(),
            Self::Engine(error) => error.is_permanent(),
            Self::GaveUp { .. } => true,
            _ => false,
        }
    }

    /// When the controller tries the instance again.
    pub fn retry(&self) -> Retry {
        match self {
            Self::GaveUp { .. } => Retry::OnChange,
            _ => Retry::AfterBackoff,
        }
    }
}

/// A failure of the work on a locked instance, as the work met it: what it
/// means is for [`policy`] to say.
#[derive(Debug)]
pub(crate) enum Failure {
    /// The loop gave up on the instance before (`failures`): nothing was
    /// tried, nor the engine asked.
    GivenUp(Failures),
    /// The instance's engine, `engine` by name, could not be connected to
    /// or observed.
    Engine {
        engine: EngineName,
        error: EngineError,
    },
    /// A step of the plan failed.
    Step { step: Step, error: ActError },
    /// Anything else (the store, a look at the checkouts or the session,
    /// the engine a rollout moves to, rounds that do not converge): the
    /// reconcile ends with it as it is, and nothing is recorded.
    Other(ReconcileError),
}

impl From<ReconcileError> for Failure {
    fn from(error: ReconcileError) -> Self {
        Self::Other(error)
    }
}

impl From<StoreError> for Failure {
    fn from(error: StoreError) -> Self {
        Self::Other(error.into())
    }
}

/// The failure policy: records on the locked instance what `failure` means
/// (see the module's doc), saves it, and returns the error the work ends
/// with, which says when it is tried again ([`ReconcileError::retry`]).
pub(crate) fn policy(
    guard: &mut InstanceGuard,
    layout: &Layout,
    failure: Failure,
) -> ReconcileError {
    let object_left = layout.object_file(&guard.container).exists();
    let verdict = verdict(&mut guard.obj, failure, object_left, Timestamp::now());
    if verdict.save
        && let Err(error) = guard.save()
    {
        return error.into();
    }
    verdict.error
}

/// What a failure comes to: the error the work ends with, and whether the
/// instance was changed to say it (and is to be saved).
#[derive(Debug)]
struct Verdict {
    error: ReconcileError,
    save: bool,
}

/// The decision of [`policy`], on the instance alone: `object_left` says
/// whether its object file is still there (a purge tail that failed
/// part-way may have taken it, and saving would write the object back).
fn verdict(obj: &mut Instance, failure: Failure, object_left: bool, at: Timestamp) -> Verdict {
    match failure {
        Failure::GivenUp(failures) => Verdict {
            error: ReconcileError::GaveUp {
                attempts: failures.attempts,
                cause: failures.cause,
                now: false,
            },
            save: false,
        },
        Failure::Other(error) => Verdict { error, save: false },
        Failure::Engine { engine, error } => engine_failed(obj, engine.as_deref(), error, at),
        Failure::Step { step, error } => step_failed(obj, &step, error, object_left, at),
    }
}

/// The engine could not be connected to or observed: `Ready` false with
/// `EngineUnreachable` (or `EngineError`), so that `get` shows which
/// instances wait for which engine. An engine named so that it can never
/// be reached (a context that does not exist) takes the operator: counted
/// toward giving up, and `Failed`.
fn engine_failed(
    obj: &mut Instance,
    engine: Option<&str>,
    error: EngineError,
    at: Timestamp,
) -> Verdict {
    let reason = match &error {
        e if e.is_unreachable() => reason::ENGINE_UNREACHABLE,
        EngineError::Endpoint(_) => reason::ENGINE_UNREACHABLE,
        _ => reason::ENGINE_ERROR,
    };
    let permanent = error.is_permanent();
    let cause = format!("engine {}: {error}", display_name(engine));
    let cause = match permanent {
        true => cause,
        false => format!("{cause}; its objects are left as they are until it answers"),
    };
    let error = match record_failure(obj, reason, &cause, permanent, permanent, at) {
        Some(attempts) => ReconcileError::GaveUp {
            attempts,
            cause,
            now: true,
        },
        None => error.into(),
    };
    Verdict { error, save: true }
}

/// A step failed. A rollout's pin, or a move's check of the engine it goes
/// to, that failed is handled (the session runs on as pinned, no failure
/// counted); any other is recorded toward giving
/// up, unless the object is gone with a purge tail that failed part-way.
fn step_failed(
    obj: &mut Instance,
    step: &Step,
    error: ActError,
    object_left: bool,
    at: Timestamp,
) -> Verdict {
    let described = step.describe();
    let save = match step {
        Step::RolloutRecipe { requested, .. } | Step::CheckMoveTarget { requested } => {
            let failed = RolloutNotMade::Failed(&error.to_string());
            obj.rollout_not_made(requested, failed, at);
            true
        }
        _ if !object_left => false,
        _ => {
            let cause = format!("{described}: {error}");
            let permanent = error.is_permanent();
            let counted = permanent || error.is_refused_start();
            let gave_up = record_failure(obj, error.reason(), &cause, permanent, counted, at);
            if let Some(attempts) = gave_up {
                let error = ReconcileError::GaveUp {
                    attempts,
                    cause,
                    now: true,
                };
                return Verdict { error, save: true };
            }
            true
        }
    };
    let error = ReconcileError::Step {
        step: described,
        error,
    };
    Verdict { error, save }
}

/// Records a failed attempt on the instance: its cause in `Ready`, and,
/// when it is `counted` (retrying cannot fix it, or it is a refusal of the
/// engine that may keep coming back), one more toward giving up. The
/// instance is `Failed` when the failure is `permanent` or the count is
/// full. Returns the count when the loop now gives up.
fn record_failure(
    obj: &mut Instance,
    reason: &str,
    cause: &str,
    permanent: bool,
    counted: bool,
    at: Timestamp,
) -> Option<u32> {
    let name = obj.metadata.name.clone();
    let attempts = counted.then(|| obj.count_failure(cause, at));
    let gave_up = attempts.filter(|a| *a >= MAX_FAILED_ATTEMPTS);
    let status = obj.status.get_or_insert_default();
    if permanent || gave_up.is_some() {
        status.phase = Some(InstancePhase::Failed);
    }
    let message = match (attempts, gave_up) {
        (_, Some(attempts)) => format!(
            "{cause} (failed {attempts} times in a row, so jackin stopped trying: fix the \
             cause, then `jackin set-phase {name} running` tries again, as does a changed spec)"
        ),
        (Some(attempts), None) => format!(
            "{cause} (attempt {attempts} of {MAX_FAILED_ATTEMPTS}: jackin stops trying after \
             {MAX_FAILED_ATTEMPTS} in a row)"
        ),
        (None, None) => cause.to_owned(),
    };
    set_condition(
        &mut status.conditions,
        condition::READY,
        ConditionStatus::False,
        reason,
        &message,
        at,
    );
    gave_up
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use jackin_api::meta::find_condition;

    use super::*;

    const AT: Timestamp = Timestamp::UNIX_EPOCH;

    /// An instance that runs, as a reconcile found it.
    fn running() -> Instance {
        let mut obj: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": jackin_api::API_VERSION,
            "kind": "Instance",
            "metadata": {"name": "a", "generation": 1},
            "spec": {"role": {"name": "r"}, "agent": "claude", "image": "i"},
        }))
        .unwrap();
        obj.status.get_or_insert_default().phase = Some(InstancePhase::Running);
        obj
    }

    fn ready(obj: &Instance) -> (String, String) {
        let status = obj.status.as_ref().unwrap();
        let ready = find_condition(&status.conditions, condition::READY).expect("Ready is said");
        assert_eq!(ready.status, ConditionStatus::False);
        (ready.reason.clone(), ready.message.clone())
    }

    /// A rollout's pin that failed, even for a reason retrying cannot fix,
    /// handles the request and says so in `Rollout`; the session runs on:
    /// not `Failed`, nothing counted, `Ready` untouched, retried as ever.
    #[test]
    fn a_rollout_whose_pin_failed_is_handled_and_counts_toward_nothing() {
        let mut obj = running();
        let step = Step::RolloutRecipe {
            requested: "t1".into(),
            moving: false,
            new_conversation: false,
        };
        let error = ActError::NoCommand("img".into());
        assert!(error.is_permanent(), "the case this test is about");
        let failure = Failure::Step { step, error };
        let decided = verdict(&mut obj, failure, true, AT);
        assert!(decided.save);
        assert!(
            matches!(&decided.error, ReconcileError::Step { step, .. } if step.contains("rollout")),
            "{}",
            decided.error
        );
        assert_eq!(decided.error.retry(), Retry::AfterBackoff);
        let status = obj.status.unwrap();
        assert_eq!(status.phase, Some(InstancePhase::Running));
        assert_eq!(status.failures, None);
        assert_eq!(find_condition(&status.conditions, condition::READY), None);
        let record = status.rollout.unwrap();
        assert_eq!(
            record.refused.as_deref(),
            Some("failed: image img names no command (no ENTRYPOINT or CMD)")
        );
        let rollout = find_condition(&status.conditions, condition::ROLLOUT).unwrap();
        assert_eq!(rollout.reason, reason::ROLLOUT_FAILED);
    }

    /// A step that retrying cannot fix makes the instance `Failed` at once
    /// and counts; the last attempt gives up, and the controller then waits
    /// for the operator, finding it given up on without trying.
    #[test]
    fn a_step_that_cannot_succeed_fails_at_once_and_the_last_attempt_gives_up() {
        let mut obj = running();
        let fail = |obj: &mut Instance| {
            let step = Step::CreateContainer;
            let error = ActError::NoCommand("img".into());
            verdict(obj, Failure::Step { step, error }, true, AT)
        };
        for attempt in 1..MAX_FAILED_ATTEMPTS {
            let decided = fail(&mut obj);
            assert!(
                matches!(decided.error, ReconcileError::Step { .. }),
                "{}",
                decided.error
            );
            assert_eq!(decided.error.retry(), Retry::AfterBackoff);
            assert_eq!(
                obj.status.as_ref().unwrap().phase,
                Some(InstancePhase::Failed)
            );
            let (reason, message) = ready(&obj);
            assert_eq!(reason, reason::NO_COMMAND);
            let counted = format!("attempt {attempt} of {MAX_FAILED_ATTEMPTS}");
            assert!(message.contains(&counted), "{message}");
        }
        let last = fail(&mut obj);
        assert!(last.save);
        assert!(
            matches!(last.error, ReconcileError::GaveUp { attempts, now: true, .. } if attempts == MAX_FAILED_ATTEMPTS),
            "{}",
            last.error
        );
        assert_eq!(last.error.retry(), Retry::OnChange);
        assert!(ready(&obj).1.contains("`jackin set-phase a running`"));

        let before = obj.clone();
        let failures = obj.gave_up().expect("given up").clone();
        let found = verdict(&mut obj, Failure::GivenUp(failures), true, AT);
        assert!(!found.save && obj == before, "nothing is recorded");
        assert!(matches!(
            found.error,
            ReconcileError::GaveUp { now: false, .. }
        ));
        assert_eq!(found.error.retry(), Retry::OnChange);
    }

    /// A step that failed after a purge tail took the object's directory
    /// records nothing: saving would write the object back.
    #[test]
    fn a_step_failing_once_the_object_is_gone_records_nothing() {
        let mut obj = running();
        let before = obj.clone();
        let error = ActError::Io {
            path: "/unit".into(),
            source: std::io::Error::other("gone"),
        };
        let failure = Failure::Step {
            step: Step::FinishPurge,
            error,
        };
        let decided = verdict(&mut obj, failure, false, AT);
        assert!(!decided.save && obj == before);
        assert!(matches!(decided.error, ReconcileError::Step { .. }));
    }

    /// An engine that does not answer is said on the instance and not
    /// counted (it may answer later); one that refuses for good is counted,
    /// and the instance `Failed`.
    #[test]
    fn an_engine_that_does_not_answer_is_said_and_one_that_refuses_for_good_counts() {
        let mut obj = running();
        let error = EngineError::NoAnswer {
            endpoint: "unix:///d.sock".into(),
            action: "ping".into(),
            after: Duration::from_secs(5),
        };
        let failure = Failure::Engine {
            engine: Some("far".into()),
            error,
        };
        let decided = verdict(&mut obj, failure, true, AT);
        assert!(decided.save);
        assert!(matches!(decided.error, ReconcileError::Engine(_)));
        let (reason, message) = ready(&obj);
        assert_eq!(reason, reason::ENGINE_UNREACHABLE);
        assert!(message.starts_with("engine far: "), "{message}");
        assert!(message.ends_with("until it answers"), "{message}");
        let status = obj.status.as_ref().unwrap();
        assert_eq!(
            (status.phase, &status.failures),
            (Some(InstancePhase::Running), &None)
        );

        let error = EngineError::Refused {
            action: "create container".into(),
            status: 400,
            message: "invalid".into(),
        };
        let failure = Failure::Engine {
            engine: None,
            error,
        };
        verdict(&mut obj, failure, true, AT);
        let (reason, message) = ready(&obj);
        assert_eq!(reason, reason::ENGINE_ERROR);
        assert!(message.starts_with("engine default: "), "{message}");
        let status = obj.status.unwrap();
        assert_eq!(status.phase, Some(InstancePhase::Failed));
        assert_eq!(status.failures.map(|f| f.attempts), Some(1));
    }
}
