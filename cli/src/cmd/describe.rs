//! `jackin describe NAME`: an instance in detail, with its recent events;
//! `jackin describe workspace NAME`: a workspace policy and its instances.

use anyhow::Result;
use jackin_controller::reconcile::assess_checkouts;
use jiff::Timestamp;

use crate::cmd::discarded;
use crate::{check_name, open_store, output};

pub async fn run(name: &str) -> Result<()> {
    check_name(name)?;
    let store = open_store()?;
    let mut obj = match store.get_instance(name) {
        Ok(obj) => obj,
        // Gone, but what it discarded is saved: say where it is.
        Err(e) if discarded::count_of(&store, name) > 0 => anyhow::bail!(
            "{e}; the work its isolated checkouts held when it was discarded is saved: \
             `jackin get discarded {name}` lists it, `jackin restore-discarded {name}` \
             brings it back"
        ),
        Err(e) => return Err(e.into()),
    };
    let container = obj.status.as_ref().and_then(|s| s.container_name.clone());
    // The isolated checkouts as they are now (the status holds what the
    // last full reconcile saw; a pass with nothing to do does not look).
    if let Some(container) = &container {
        let mounts = assess_checkouts(store.layout(), container).await?;
        obj.status.get_or_insert_default().mounts = mounts;
    }
    let events = container
        .map(|c| jackin_controller::events::read(store.layout(), &c))
        .unwrap_or_default();
    print!("{}", output::describe(&obj, &events, Timestamp::now()));
    // Earlier instances of this name whose discarded work is still saved.
    let saves = discarded::count_of(&store, name);
    if saves > 0 {
        println!(
            "Discarded:    {saves} {} of earlier sessions named {name} (`jackin get discarded \
             {name}`)",
            output::plural(saves, "save", "saves")
        );
    }
    Ok(())
}

pub fn workspace(name: &str) -> Result<()> {
    check_name(name)?;
    let store = open_store()?;
    let ws = store.get_workspace(name)?.ok_or_else(|| {
        anyhow::anyhow!("workspace {name:?} not found\nhint: `jackin get workspaces` lists them")
    })?;
    let members: Vec<_> = store
        .list_instances()?
        .instances
        .into_iter()
        .filter(|obj| obj.spec.workspace.as_deref() == Some(name))
        .collect();
    print!(
        "{}",
        output::describe_workspace(&ws, &members, Timestamp::now())
    );
    Ok(())
}
