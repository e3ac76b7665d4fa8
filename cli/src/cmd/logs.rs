//! `jackin logs NAME [-f] [--since D] [--tail N]`: what the agent printed,
//! from its container's log, whether or not anyone was attached.

use std::io::Write;

use anyhow::{Result, bail};
use futures::StreamExt;
use jackin_api::names::label;
use jackin_reconcilers::engine::LogsRequest;

use crate::args::LogsArgs;
use jackin_controller::Reconciler;
use jackin_controller::engines::Engines;

use crate::{check_name, open_store};

pub async fn run(args: &LogsArgs) -> Result<()> {
    check_name(&args.name)?;
    let store = open_store()?;
    let obj = store.get_instance(&args.name)?;
    let status = obj.status.clone().unwrap_or_default();
    let (Some(unit), Some(uid)) = (status.container_name.clone(), obj.metadata.uid.clone()) else {
        bail!("instance/{} has not been launched yet", args.name);
    };
    let engines = Engines::new(None);
    let engine = Reconciler::new(store, engines)
        .engine_of(&obj)
        .await?
        .engine;
    // The container by its name, only if it is this instance's.
    let container = engine.inspect_container(&unit).await?.filter(|c| {
        let labels = c.config.as_ref().and_then(|c| c.labels.as_ref());
        labels.and_then(|l| l.get(label::UID)) == Some(&uid)
    });
    let Some(id) = container.and_then(|c| c.id) else {
        bail!(
            "instance/{} has no container now (phase {}): its output went with the last one\n\
             hint: `jackin describe {}` shows how its last session ended",
            args.name,
            status.phase.map_or("-".into(), |p| p.to_string()),
            args.name
        );
    };
    // A recreated container starts a new log: say so, rather than pretend.
    if let Some(restore) = status.restore.as_ref().filter(|r| r.tier >= 2) {
        eprintln!(
            "note: the container was made anew by a tier {} restore at {}: what the agent \
             printed before that went with the previous container",
            restore.tier, restore.at
        );
    }
    let since_unix = args
        .since
        .map(|since| jiff::Timestamp::now().as_second() - since.as_secs() as i64);
    let request = LogsRequest {
        follow: args.follow,
        since_unix,
        tail: args.tail,
    };
    let mut logs = engine.logs(&id, request);
    let mut stdout = std::io::stdout().lock();
    // The agent's output as it wrote it, as `docker logs` prints it: it was
    // meant for a terminal, like what `attach` shows.
    while let Some(chunk) = logs.next().await {
        stdout.write_all(&chunk?)?;
        stdout.flush()?;
    }
    Ok(())
}
