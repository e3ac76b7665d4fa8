//! What `apply` of a changed spec did to each session that already runs
//! on an older one. A session runs its pinned recipe until a rollout pins
//! it again, so `configured` alone says nothing of when the change takes
//! effect: under `updatePolicy: OnDrift` the session moves at once when it
//! is idle, or later when it becomes idle; under `Manual` it waits for
//! `jackin rollout NAME`. Each configured session with a pinned recipe is
//! told apart by those three, with the recipe's fields that differ.

use anyhow::Result;
use jackin_api::instance::{InstancePhase, UpdatePolicy};
use jackin_api::{Instance, Object};
use jackin_controller::engines::Engines;
use jackin_controller::source::Applied;
use jackin_controller::{ApplyOutcome, Reconciler, Store};
use jackin_plan::recipe;
use jackin_plan::rollout;

/// A configured session whose spec asks for what its pinned recipe lacks.
pub struct Drifted {
    name: String,
    /// The recipe fields that differ (`command`, `env`, …), as
    /// `recipe::drift` names them.
    fields: Vec<&'static str>,
}

/// Reads the recipe only; no engine is asked (the registry and
/// workspaces are in the store).
fn reader(store: &Store) -> Reconciler {
    Reconciler::new(store.clone(), Engines::new(None))
}

/// The drift of `obj`: the fields its spec asks for that its pinned recipe
/// lacks; empty for a session with no recipe pinned yet.
fn drift_of(reader: &Reconciler, obj: &Instance) -> Result<Vec<&'static str>> {
    let (Some(pinned), Some(wanted)) = (obj.recipe(), reader.wanted_recipe(obj)?) else {
        return Ok(Vec::new());
    };
    Ok(recipe::drift(pinned, &wanted))
}

/// The sessions this apply configured onto a spec their pinned recipe
/// does not match, read before the loop acts on them.
pub fn drifted(store: &Store, applied: &Applied) -> Result<Vec<Drifted>> {
    let reader = reader(store);
    let mut drifted = Vec::new();
    for (obj, outcome) in &applied.outcomes {
        let (Object::Instance(applied_obj), ApplyOutcome::Configured) = (obj, outcome) else {
            continue;
        };
        let name = &applied_obj.metadata.name;
        let fields = drift_of(&reader, &store.get_instance(name)?)?;
        if !fields.is_empty() {
            drifted.push(Drifted {
                name: name.clone(),
                fields,
            });
        }
    }
    Ok(drifted)
}

/// Says, per drifted session, which of the three happened, as the store
/// has it now (after the loop's convergence, unless the apply did not
/// wait for it).
pub fn report(store: &Store, drifted: &[Drifted]) -> Result<()> {
    let reader = reader(store);
    for Drifted { name, fields } in drifted {
        let obj = store.get_instance(name)?;
        let changed = fields.join(", ");
        let still = drift_of(&reader, &obj)?;
        let workspace = match &obj.spec.workspace {
            Some(ws) => store.get_workspace(ws)?.map(|w| w.spec),
            None => None,
        };
        let line = match rollout::policy(&obj, workspace.as_ref()) {
            _ if still.is_empty() => format!(
                "instance/{name} moved onto the new spec (changed: {changed}); its home, \
                 conversation and checkouts are kept"
            ),
            UpdatePolicy::OnDrift => match refusal(&reader, &obj)? {
                Some(why) => format!(
                    "instance/{name} stays on its old spec (changed: {changed}): its rollout \
                     was refused: {why}"
                ),
                None if obj.phase() == Some(InstancePhase::Running) => format!(
                    "instance/{name} will move onto the new spec when nobody is attached and \
                     the agent is idle (updatePolicy: OnDrift; changed: {changed})"
                ),
                None => format!(
                    "instance/{name} will move onto the new spec at its next start \
                     (updatePolicy: OnDrift; changed: {changed})"
                ),
            },
            UpdatePolicy::Manual => format!(
                "instance/{name} stays on its old spec until `jackin rollout {name}` \
                 (updatePolicy: Manual; changed: {changed})"
            ),
        };
        println!("{}", crate::output::terminal_safe(&line));
    }
    Ok(())
}

/// Why the rollout of the spec as it is now was refused, when it was
/// (an older refusal was of another spec).
fn refusal<'a>(reader: &Reconciler, obj: &'a Instance) -> Result<Option<&'a str>> {
    let (Some(pinned), Some(wanted)) = (obj.recipe(), reader.wanted_recipe(obj)?) else {
        return Ok(None);
    };
    let token = rollout::drift_token(pinned, &wanted);
    let record = obj.status.as_ref().and_then(|s| s.rollout.as_ref());
    Ok(record
        .filter(|r| Some(&r.requested) == token.as_ref())
        .and_then(|r| r.refused.as_deref()))
}
