//! One module per command; `main` parses the arguments and dispatches here.

pub mod apply;
pub mod attach;
pub mod controller;
pub mod crds;
pub mod delete;
pub mod describe;
pub mod discarded;
pub mod exec;
pub mod get;
pub mod launch;
pub mod logs;
pub mod prune;
pub mod rollout;
pub mod select;
pub mod set_phase;

use anyhow::{Result, bail};
use jackin_api::Instance;
use jackin_api::names::label;
use jackin_controller::engines::Engines;
use jackin_controller::{Reconciler, Store};
use jackin_reconcilers::Engine;

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
    let obj = store.get_instance(name)?;
    let status = obj.status.clone().unwrap_or_default();
    let (Some(unit), Some(uid)) = (status.container_name.clone(), obj.metadata.uid.clone()) else {
        bail!("instance/{name} has not been launched yet");
    };
    let engine = Reconciler::new(store.clone(), Engines::new(None))
        .engine_of(&obj)
        .await?
        .engine;
    let container = engine.inspect_container(&unit).await?.filter(|c| {
        let labels = c.config.as_ref().and_then(|c| c.labels.as_ref());
        labels.and_then(|l| l.get(label::UID)) == Some(&uid)
    });
    let running = container
        .as_ref()
        .and_then(|c| c.state.as_ref())
        .and_then(|s| s.running)
        .unwrap_or(false);
    Ok(AgentContainer {
        id: container.and_then(|c| c.id),
        obj,
        engine,
        running,
    })
}
