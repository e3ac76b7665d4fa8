//! Object metadata and status conditions, shaped after Kubernetes' conventions so
//! that the same YAML reads naturally to anyone who has used `kubectl`.

use std::collections::BTreeMap;

use jiff::Timestamp;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The group and version every jackin object carries in `apiVersion`.
pub const API_VERSION: &str = "jackin.dev/v1alpha1";

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

impl ObjectMeta {
    /// Leaves out the labels and annotations jackin keeps for itself (see
    /// [`crate::names::reserved_label`]): what `get -o yaml|json` prints,
    /// so that its output applies back as it is. jackin still knows them;
    /// `get sources`, `describe` and `-l` show and select by them.
    pub fn hide_reserved_names(&mut self) {
        self.labels
            .retain(|key, _| crate::names::reserved_label(key).is_none());
        self.annotations
            .retain(|key, _| crate::names::reserved_annotation(key).is_none());
    }
}

/// Whether a condition holds; a string, as Kubernetes spells it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ConditionStatus {
    True,
    False,
    Unknown,
}

impl std::fmt::Display for ConditionStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::True => "True",
            Self::False => "False",
            Self::Unknown => "Unknown",
        })
    }
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

/// The condition of type `type_`, if there is one.
pub fn find_condition<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Whether the condition of type `type_` is there with status `True`.
pub fn is_condition_true(conditions: &[Condition], type_: &str) -> bool {
    find_condition(conditions, type_).is_some_and(|c| c.status == ConditionStatus::True)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_are_found_by_type_and_true_only_when_true() {
        let mut conds = Vec::new();
        set_condition(
            &mut conds,
            "Ready",
            ConditionStatus::False,
            "Pending",
            "",
            at(1),
        );
        set_condition(
            &mut conds,
            "SpecDrift",
            ConditionStatus::True,
            "Changed",
            "",
            at(1),
        );
        assert_eq!(find_condition(&conds, "Ready").unwrap().reason, "Pending");
        assert!(find_condition(&conds, "Missing").is_none());
        assert!(!is_condition_true(&conds, "Ready"));
        assert!(is_condition_true(&conds, "SpecDrift"));
        assert!(!is_condition_true(&conds, "Missing"));
    }

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
