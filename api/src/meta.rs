//! Object metadata and status conditions, shaped after Kubernetes' conventions so
//! that the same YAML reads naturally to anyone who has used `kubectl`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The group and version every jackin object carries in `apiVersion`.
pub const API_VERSION: &str = "jackin.dev/v1alpha1";

/// Label set on every engine object jackin creates; ownership is decided by it.
pub const LABEL_MANAGED: &str = "jackin.dev/managed";
/// Label naming the instance an engine object belongs to.
pub const LABEL_INSTANCE: &str = "jackin.dev/instance";
/// Label naming the `JACKIN_HOME` an engine object belongs to, so that
/// homes sharing one engine never sweep each other's objects.
pub const LABEL_HOME: &str = "jackin.dev/home";
/// Label carrying the instance's uid, so a re-created namesake never adopts
/// another incarnation's leftovers.
pub const LABEL_UID: &str = "jackin.dev/uid";

/// Metadata common to every object.
///
/// `uid`, `generation` and `creationTimestamp` are owned by jackin: they are
/// assigned when an object is first stored and ignored when a file is applied.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ObjectMeta {
    /// DNS-1123 label, at most 63 characters; unique per kind.
    pub name: String,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uid: Option<String>,
    /// Bumped each time the spec changes, never for metadata or status.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generation: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(with = "Option<String>")]
    pub creation_timestamp: Option<Timestamp>,
}

/// Whether a condition holds; a string, as Kubernetes spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

/// One observation about an object, e.g. `Ready`, `SpecDrift`, `PurgeBlocked`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Condition {
    #[serde(rename = "type")]
    pub type_: String,
    pub status: ConditionStatus,
    pub reason: String,
    #[serde(default)]
    pub message: String,
    #[schemars(with = "String")]
    pub last_transition_time: Timestamp,
}

/// Sets a condition in `conditions`, adding it when absent.
///
/// `lastTransitionTime` moves only when the status flips: a changed reason or
/// message alone is an update of the same state, not a transition. Returns
/// whether anything changed, so callers can skip a write.
pub fn set_condition(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: ConditionStatus,
    reason: &str,
    message: &str,
    now: Timestamp,
) -> bool {
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            let changed = existing.status != status
                || existing.reason != reason
                || existing.message != message;
            if existing.status != status {
                existing.last_transition_time = now;
            }
            existing.status = status;
            existing.reason = reason.to_owned();
            existing.message = message.to_owned();
            changed
        }
        None => {
            conditions.push(Condition {
                type_: type_.to_owned(),
                status,
                reason: reason.to_owned(),
                message: message.to_owned(),
                last_transition_time: now,
            });
            true
        }
    }
}

/// Removes a condition; returns whether it was present.
pub fn remove_condition(conditions: &mut Vec<Condition>, type_: &str) -> bool {
    let before = conditions.len();
    conditions.retain(|c| c.type_ != type_);
    conditions.len() != before
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(secs: i64) -> Timestamp {
        Timestamp::from_second(secs).unwrap()
    }

    #[test]
    fn transition_time_moves_only_when_status_flips() {
        let mut conds = Vec::new();
        assert!(set_condition(
            &mut conds,
            "Ready",
            ConditionStatus::False,
            "Pending",
            "",
            at(10)
        ));
        assert_eq!(conds[0].last_transition_time, at(10));

        // Same status, new reason: updated, but no transition.
        assert!(set_condition(
            &mut conds,
            "Ready",
            ConditionStatus::False,
            "Launching",
            "building",
            at(20)
        ));
        assert_eq!(conds[0].reason, "Launching");
        assert_eq!(conds[0].last_transition_time, at(10));

        // Identical: nothing changes at all.
        assert!(!set_condition(
            &mut conds,
            "Ready",
            ConditionStatus::False,
            "Launching",
            "building",
            at(30)
        ));
        assert_eq!(conds[0].last_transition_time, at(10));

        // Flip: the transition time moves.
        assert!(set_condition(
            &mut conds,
            "Ready",
            ConditionStatus::True,
            "Running",
            "",
            at(40)
        ));
        assert_eq!(conds[0].last_transition_time, at(40));
        assert_eq!(conds.len(), 1);
    }

    #[test]
    fn remove_condition_reports_presence() {
        let mut conds = Vec::new();
        set_condition(
            &mut conds,
            "SpecDrift",
            ConditionStatus::True,
            "Drift",
            "",
            at(1),
        );
        assert!(remove_condition(&mut conds, "SpecDrift"));
        assert!(!remove_condition(&mut conds, "SpecDrift"));
        assert!(conds.is_empty());
    }
}
