//! Sessions that ended in failure and were left so: `Crashed` (the agent
//! ended non-zero) or `Failed` (jackin gave up, or cannot go on). Nothing
//! restarts them and no exit policy settles them, so without the operator
//! they stay for good, with their unit, home and checkouts. `jackin prune
//! --failed-after AGE` reaps those whose ending is older than AGE, by the
//! same purge as `set-phase purged`.

use jackin_api::names::condition;
use jackin_api::{ConditionStatus, DesiredPhase, Instance, InstancePhase};
use jiff::Timestamp;

/// When `obj`'s session ended in failure, if it is `Crashed` or `Failed`
/// (and not being purged already): the agent's exit for a crash (the
/// engine's time, else when jackin recorded it), and for a failure when it
/// last stopped being ready. A phase jackin wrote without saying when is
/// taken as ended now, so that an age never reaps it.
pub fn failed_since(obj: &Instance) -> Option<Timestamp> {
    if obj.desired_phase() == DesiredPhase::Purged {
        return None;
    }
    let status = obj.status.as_ref()?;
    let not_ready_since = || {
        status
            .conditions
            .iter()
            .find(|c| c.type_ == condition::READY && c.status == ConditionStatus::False)
            .map(|c| c.last_transition_time)
    };
    let since = match status.phase? {
        InstancePhase::Crashed => status
            .session
            .as_ref()
            .and_then(|s| s.finished_at)
            .or_else(not_ready_since),
        InstancePhase::Failed => not_ready_since(),
        _ => return None,
    };
    Some(since.unwrap_or_else(Timestamp::now))
}

/// The instances of `instances` that ended in failure before `cutoff`,
/// each with when it did, the longest ended first.
pub fn ended_before(instances: &[Instance], cutoff: Timestamp) -> Vec<(&Instance, Timestamp)> {
    let mut found: Vec<_> = instances
        .iter()
        .filter_map(|obj| failed_since(obj).map(|since| (obj, since)))
        .filter(|(_, since)| *since < cutoff)
        .collect();
    found.sort_by_key(|(_, since)| *since);
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::instance::{InstanceStatus, OutcomeSource, SessionOutcome};
    use jackin_api::meta::set_condition;
    use jackin_api::{API_VERSION, ObjectMeta};

    fn at(second: i64) -> Timestamp {
        Timestamp::from_second(second).unwrap()
    }

    fn instance(name: &str, phase: InstancePhase, ended: Option<i64>, ready: i64) -> Instance {
        let mut status = InstanceStatus {
            phase: Some(phase),
            session: ended.map(|second| SessionOutcome {
                exit_code: Some(3),
                finished_at: Some(at(second)),
                source: OutcomeSource::Marker,
                reason: None,
                stopped_by_jackin: false,
            }),
            ..Default::default()
        };
        set_condition(
            &mut status.conditions,
            condition::READY,
            ConditionStatus::False,
            "Crashed",
            "ended",
            at(ready),
        );
        Instance {
            api_version: API_VERSION.into(),
            kind: "Instance".into(),
            metadata: ObjectMeta {
                name: name.into(),
                ..Default::default()
            },
            spec: Default::default(),
            status: Some(status),
        }
    }

    /// SA3: Crashed and Failed sessions older than the cutoff are found,
    /// by when they ended, the oldest first; newer ones, other phases and
    /// purges under way are not.
    #[test]
    fn crashed_and_failed_sessions_older_than_the_cutoff_are_found_oldest_first() {
        let mut purging = instance("purging", InstancePhase::Crashed, Some(10), 10);
        purging.spec.phase = DesiredPhase::Purged;
        let instances = [
            instance("crashed", InstancePhase::Crashed, Some(50), 90),
            instance("failed", InstancePhase::Failed, Some(5), 20),
            instance("new", InstancePhase::Crashed, Some(150), 150),
            instance("kept", InstancePhase::Kept, Some(10), 10),
            instance("exited", InstancePhase::Exited, Some(10), 10),
            purging,
        ];
        let found: Vec<_> = ended_before(&instances, at(100))
            .into_iter()
            .map(|(obj, since)| (obj.metadata.name.as_str(), since.as_second()))
            .collect();
        // The crash by its exit; the failure by when it stopped being ready.
        assert_eq!(found, [("failed", 20), ("crashed", 50)]);
    }

    #[test]
    fn a_failure_jackin_did_not_date_is_never_old_enough() {
        let mut undated = instance("undated", InstancePhase::Failed, None, 0);
        undated.status.as_mut().unwrap().conditions.clear();
        assert!(ended_before(std::slice::from_ref(&undated), Timestamp::now()).is_empty());
        assert!(failed_since(&undated).is_some());
    }
}
