//! The keep cap as a use-case: once sessions are settled as kept, each
//! workspace's `keep.max` bounds its kept sessions per (role, agent), the
//! least recently running beyond it settled as purged. The controller's
//! sweep applies it on every pass; a one-shot command that settles a
//! session as kept (`apply`, `set-phase`, `attach`, `launch`) applies it
//! the same way at once, through [`enforce`]; a dry run shows what it would
//! do through [`once_kept`].
//!
//! Deciding is pure ([`decide`]); carrying a decision out is a settlement
//! of the instance's status under its unit lock, re-checked there
//! ([`carry_out`]). Converging the purge is the loop's, through `act`, as
//! for any purge.

use std::collections::BTreeMap;

use jackin_api::instance::{Instance, InstancePhase, SettledBy};
use jackin_api::meta::{find_condition, set_condition};
use jackin_api::names::{annotation, condition, reason};
use jackin_api::{ConditionStatus, DesiredPhase};
use jackin_checkouts::assess::acknowledgement_digest;
use jiff::Timestamp;

use crate::store::{Store, StoreError};

/// What the cap decided for one kept instance over it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Capped {
    /// Over its workspace's `keep.max`: settled as `Purged`.
    Purge {
        name: String,
        workspace: String,
        max: u32,
    },
    /// Over the cap, but with unfinished work in a mount that nobody
    /// acknowledged: never purged automatically, only reported.
    Spared {
        name: String,
        workspace: String,
        max: u32,
    },
}

impl Capped {
    /// The instance it is about.
    pub fn name(&self) -> &str {
        match self {
            Capped::Purge { name, .. } | Capped::Spared { name, .. } => name,
        }
    }

    /// The line a command prints; `dry_run` words it as a proposal.
    pub fn describe(&self, dry_run: bool) -> String {
        match (self, dry_run) {
            (
                Capped::Purge {
                    name, workspace, ..
                },
                dry_run,
            ) => format!(
                "{} instance/{name}: workspace {workspace} keeps fewer kept sessions (keep.max)",
                if dry_run { "would purge" } else { "purging" }
            ),
            (
                Capped::Spared {
                    name, workspace, ..
                },
                dry_run,
            ) => format!(
                "{} instance/{name} over workspace {workspace}'s keep.max: it has unfinished work",
                if dry_run { "would keep" } else { "kept" }
            ),
        }
    }
}

/// The line said once before the cap purges anything, per workspace it
/// trims: how many sessions go and the `keep.max` that sends them, so that
/// a long run of purges starts with its reason. `dry_run` words it as a
/// proposal. Spared sessions are said each on their own line.
pub fn summary(capped: &[Capped], dry_run: bool) -> Vec<String> {
    let mut purged: BTreeMap<(&str, u32), usize> = BTreeMap::new();
    for decision in capped {
        if let Capped::Purge { workspace, max, .. } = decision {
            *purged.entry((workspace, *max)).or_default() += 1;
        }
    }
    purged
        .into_iter()
        .map(|((workspace, max), count)| {
            format!(
                "workspace {workspace} keeps at most {max} kept session(s) per role and agent \
                 (keep.max: {max}): {} {count} kept session(s) over it, the least recently \
                 running",
                if dry_run { "would purge" } else { "purging" }
            )
        })
        .collect()
}

/// What enforcing the cap did.
#[derive(Debug, Default)]
pub struct Enforced {
    /// Every decision carried out, to report: purges and spared sessions.
    pub capped: Vec<Capped>,
    /// The instances settled as purged, for the caller to converge (the
    /// controller's loop converges them on its own).
    pub purged: Vec<String>,
}

/// Decides the keep caps over the store as it is now and carries the
/// decisions out, as the controller's sweep does.
pub async fn enforce(store: &Store) -> Result<Enforced, StoreError> {
    store
        .blocking(|store| {
            let mut enforced = Enforced::default();
            for capped in plan(store)? {
                if !carry_out(store, &capped)? {
                    continue;
                }
                if let Capped::Purge { name, .. } = &capped {
                    enforced.purged.push(name.clone());
                }
                enforced.capped.push(capped);
            }
            Ok(enforced)
        })
        .await
}

/// What bounding the `Kept` instances of each (workspace, role, agent) by
/// the workspace's `keep.max` would do now. Reads only.
pub fn plan(store: &Store) -> Result<Vec<Capped>, StoreError> {
    let workspaces = store.list_workspaces()?;
    if workspaces.iter().all(|ws| ws.spec.keep.max.is_none()) {
        return Ok(Vec::new());
    }
    Ok(decide(
        &workspaces
            .into_iter()
            .filter_map(|ws| Some((ws.metadata.name, ws.spec.keep.max?)))
            .collect(),
        &store.list_instances()?.instances,
    ))
}

/// What the keep cap would do once `obj` is kept: its workspace's kept
/// instances with `obj` among them, as the most recently running. Reads
/// only; for dry runs.
pub fn once_kept(store: &Store, obj: &Instance) -> Result<Vec<Capped>, StoreError> {
    let Some(workspace) = obj.spec.workspace.as_deref() else {
        return Ok(Vec::new());
    };
    let Some(max) = store
        .get_workspace(workspace)?
        .and_then(|ws| ws.spec.keep.max)
    else {
        return Ok(Vec::new());
    };
    let mut kept = obj.clone();
    kept.spec.phase = DesiredPhase::Kept;
    let status = kept.status.get_or_insert_default();
    status.phase = Some(InstancePhase::Kept);
    set_condition(
        &mut status.conditions,
        condition::READY,
        ConditionStatus::False,
        reason::KEPT,
        "kept",
        Timestamp::now(),
    );
    let mut instances = store.list_instances()?.instances;
    instances.retain(|other| other.metadata.name != obj.metadata.name);
    instances.push(kept);
    let caps = BTreeMap::from([(workspace.to_owned(), max)]);
    Ok(decide(&caps, &instances))
}

/// The keep caps over `instances`, decided: beyond `keep.max` the least
/// recently running are purged, except those whose mounts hold unfinished
/// work nobody acknowledged, which are only reported.
pub fn decide(caps: &BTreeMap<String, u32>, instances: &[Instance]) -> Vec<Capped> {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&Instance>> = BTreeMap::new();
    for obj in instances {
        if let (true, Some(ws)) = (kept(obj), obj.spec.workspace.as_deref())
            && caps.contains_key(ws)
        {
            let key = (ws, obj.spec.role.name.as_str(), obj.spec.agent.as_str());
            groups.entry(key).or_default().push(obj);
        }
    }
    let mut decided = Vec::new();
    for ((workspace, _, _), mut kept) in groups {
        let cap = caps[workspace];
        let max = cap as usize;
        if kept.len() <= max {
            continue;
        }
        // Most recently running first; the tail is over the cap.
        kept.sort_by_key(|obj| std::cmp::Reverse(last_running(obj)));
        for obj in kept.into_iter().skip(max) {
            let name = obj.metadata.name.clone();
            let workspace = workspace.to_owned();
            decided.push(match unacknowledged_work(obj) {
                true => Capped::Spared {
                    name,
                    workspace,
                    max: cap,
                },
                false => Capped::Purge {
                    name,
                    workspace,
                    max: cap,
                },
            });
        }
    }
    decided
}

/// Carries out one decision; `false` when it no longer holds and nothing
/// was done. A purge settles the instance under its unit lock, and only
/// if it is still kept there with no unfinished work nobody acknowledged:
/// a session resumed since the plan was made is never purged by it.
pub fn carry_out(store: &Store, capped: &Capped) -> Result<bool, StoreError> {
    match capped {
        Capped::Spared { .. } => Ok(true),
        Capped::Purge { name, .. } => store.settle_if(
            name,
            |obj| kept(obj) && !unacknowledged_work(obj),
            DesiredPhase::Purged,
            SettledBy::KeepCap,
        ),
    }
}

/// Kept as asked and as observed: the sessions the cap counts.
fn kept(obj: &Instance) -> bool {
    obj.desired_phase() == DesiredPhase::Kept && obj.phase() == Some(InstancePhase::Kept)
}

/// Unfinished work in a mount whose digest nobody acknowledged (in the
/// annotation, as the discard gate reads it). Acknowledged work may go: it
/// is saved first, as every discard's is.
fn unacknowledged_work(obj: &Instance) -> bool {
    obj.status.as_ref().is_some_and(|s| {
        acknowledgement_digest(&s.mounts).is_some_and(|digest| {
            obj.metadata
                .annotations
                .get(annotation::ACKNOWLEDGE_DISCARD)
                != Some(&digest)
        })
    })
}

/// When the instance last stopped running (its `Ready` condition's last
/// transition), else when it was created.
fn last_running(obj: &Instance) -> Option<Timestamp> {
    obj.status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, condition::READY))
        .map(|c| c.last_transition_time)
        .or(obj.metadata.creation_timestamp)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept instance of workspace `ws` (role `r`, agent `shell`) that was
    /// last running at `second`, with unfinished work in one checkout and,
    /// maybe, its acknowledgement.
    fn kept(name: &str, second: i64, acknowledged: Option<&str>) -> Instance {
        let mut annotations = serde_json::Map::new();
        if let Some(digest) = acknowledged {
            annotations.insert(annotation::ACKNOWLEDGE_DISCARD.into(), digest.into());
        }
        serde_json::from_value(serde_json::json!({
            "apiVersion": "jackin.dev/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"phase": "Kept", "workspace": "ws", "role": {"name": "r"}, "agent": "shell"},
            "status": {
                "phase": "Kept",
                "conditions": [{
                    "type": "Ready", "status": "False", "reason": "Kept", "message": "kept",
                    "lastTransitionTime": Timestamp::from_second(second).unwrap().to_string(),
                }],
                "mounts": [{
                    "dst": "/w", "isolation": "clone", "path": "/x",
                    "dirtyFiles": ["?? notes.md"], "digest": "0123456789abcdef",
                }],
            },
        }))
        .unwrap()
    }

    /// Over the cap, unfinished work stays unless its digest was
    /// acknowledged: then it goes, as any acknowledged discard (saved
    /// first by the purge).
    #[test]
    fn the_keep_cap_purges_unfinished_work_only_when_acknowledged() {
        let caps = BTreeMap::from([("ws".to_owned(), 1)]);
        let digest = {
            let obj = kept("x", 1, None);
            acknowledgement_digest(&obj.status.unwrap().mounts).unwrap()
        };
        let spared = decide(&caps, &[kept("old", 1, None), kept("new", 2, None)]);
        assert!(
            matches!(spared.as_slice(), [Capped::Spared { name, .. }] if name == "old"),
            "{spared:?}"
        );
        let wrong = decide(
            &caps,
            &[kept("old", 1, Some("not-the-digest")), kept("new", 2, None)],
        );
        assert!(
            matches!(wrong.as_slice(), [Capped::Spared { .. }]),
            "{wrong:?}"
        );
        let purged = decide(
            &caps,
            &[kept("old", 1, Some(&digest)), kept("new", 2, None)],
        );
        assert!(
            matches!(purged.as_slice(), [Capped::Purge { name, .. }] if name == "old"),
            "{purged:?}"
        );
    }

    #[test]
    fn the_summary_counts_the_purges_of_each_workspace_with_its_keep_max() {
        let caps = BTreeMap::from([("ws".to_owned(), 1)]);
        let decided = decide(
            &caps,
            &[
                kept("a", 1, Some("none")),
                kept("b", 2, Some("none")),
                kept("c", 3, Some("none")),
            ],
        );
        let digest = {
            let obj = kept("x", 1, None);
            acknowledgement_digest(&obj.status.unwrap().mounts).unwrap()
        };
        let acknowledged: Vec<Instance> = ["a", "b", "c"]
            .iter()
            .zip(1..)
            .map(|(name, second)| kept(name, second, Some(&digest)))
            .collect();
        let purges = decide(&caps, &acknowledged);
        assert_eq!(
            summary(&purges, false),
            [
                "workspace ws keeps at most 1 kept session(s) per role and agent (keep.max: 1): \
              purging 2 kept session(s) over it, the least recently running"
            ]
        );
        // Sessions spared for their unfinished work are not counted.
        assert!(summary(&decided, true).is_empty(), "{decided:?}");
    }
}
