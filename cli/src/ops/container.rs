//! An instance's container (or one of its sidecars') as the engine it runs
//! on has it now: found by the instance's uid, never by its name alone.
//! `exec`, `logs` and `top`'s log pager read it.

use anyhow::{Result, bail};
use jackin_act::sidecar_name;
use jackin_api::Instance;
use jackin_api::names::label;
use jackin_controller::engines::Engines;
use jackin_controller::{Reconciler, Store};
use jackin_engine::Engine;

/// An instance's container as the engine it runs on has it now.
pub struct AgentContainer {
    pub obj: Instance,
    pub engine: Engine,
    /// The container's id, when there is one that carries the instance's
    /// uid (a container merely named like it is not its).
    pub id: Option<String>,
    pub running: bool,
}

/// Finds the container of instance `name` on its engine.
pub async fn agent_container(store: &Store, name: &str) -> Result<AgentContainer> {
    container_of(store, name, None).await
}

/// Finds the container of instance `name` on its engine, or with `sidecar`
/// that sidecar's container.
pub async fn container_of(
    store: &Store,
    name: &str,
    sidecar: Option<&str>,
) -> Result<AgentContainer> {
    let obj = store.get_instance(name)?;
    if obj.metadata.uid.is_none()
        || obj
            .status
            .as_ref()
            .is_none_or(|s| s.container_name.is_none())
    {
        bail!("instance/{name} has not been launched yet");
    }
    // The sidecars the session runs: the pinned recipe's (a drifted spec
    // changes nothing until it is rolled out).
    let sidecars = match obj.recipe() {
        Some(recipe) => &recipe.sidecars,
        None => &obj.spec.sidecars,
    };
    if let Some(sidecar) = sidecar
        && !sidecars.iter().any(|s| s.name == sidecar)
    {
        let names: Vec<&str> = sidecars.iter().map(|s| s.name.as_str()).collect();
        bail!(
            "instance/{name} has no sidecar {sidecar:?}; its sidecars: {}",
            match names.is_empty() {
                true => "none".to_owned(),
                false => names.join(", "),
            }
        );
    }
    let engine = Reconciler::new(store.clone(), Engines::new(None))
        .engine_of(&obj)
        .await?
        .engine;
    let found = find_container(&engine, &obj, sidecar).await?;
    Ok(AgentContainer {
        running: found.as_ref().is_some_and(|(_, running)| *running),
        id: found.map(|(id, _)| id),
        obj,
        engine,
    })
}

/// The container of `obj` (or of its sidecar `sidecar`) on `engine` now:
/// its id and whether it runs. A container merely named like it, without
/// the instance's uid and the sidecar's label, is not its.
pub async fn find_container(
    engine: &Engine,
    obj: &Instance,
    sidecar: Option<&str>,
) -> Result<Option<(String, bool)>> {
    let status = obj.status.clone().unwrap_or_default();
    let (Some(unit), Some(uid)) = (status.container_name, obj.metadata.uid.as_deref()) else {
        return Ok(None);
    };
    let container_name = match sidecar {
        Some(sidecar) => sidecar_name(&unit, sidecar),
        None => unit,
    };
    let container = engine
        .inspect_container(&container_name)
        .await?
        .filter(|c| {
            let labels = c.config.as_ref().and_then(|c| c.labels.as_ref());
            labels.and_then(|l| l.get(label::UID)).map(String::as_str) == Some(uid)
                && labels
                    .and_then(|l| l.get(label::SIDECAR))
                    .map(String::as_str)
                    == sidecar
        });
    let Some(container) = container else {
        return Ok(None);
    };
    let running = container
        .state
        .as_ref()
        .and_then(|s| s.running)
        .unwrap_or(false);
    Ok(container.id.map(|id| (id, running)))
}
