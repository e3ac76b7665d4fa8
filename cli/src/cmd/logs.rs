//! `jackin logs NAME [-f] [--since D] [--tail N]`: what the agent printed,
//! from its container's log, whether or not anyone was attached.

use std::io::Write;

use anyhow::{Result, bail};
use futures::StreamExt;
use jackin_reconcilers::engine::LogsRequest;

use crate::args::LogsArgs;
use crate::{check_name, open_store};

pub async fn run(args: &LogsArgs) -> Result<()> {
    check_name(&args.name)?;
    let store = open_store()?;
    let found = super::agent_container(&store, &args.name).await?;
    let status = found.obj.status.clone().unwrap_or_default();
    let Some(id) = found.id else {
        bail!(
            "instance/{} has no container now (phase {}): its output went with the last one\n\
             hint: `jackin describe {}` shows how its last session ended",
            args.name,
            status.phase.map_or("-".into(), |p| p.to_string()),
            args.name
        );
    };
    let engine = found.engine;
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
    // Piped, the agent's output goes on as it wrote it, as `docker logs`
    // prints it. On a terminal it is history, shown as text and colours
    // only, as `attach` replays it: a query in it would make the terminal
    // type its answer into the operator's shell. Each chunk is filtered on
    // its own; a sequence split between two is dropped or shown as plain
    // text, never passed on.
    let on_terminal = std::io::IsTerminal::is_terminal(&stdout);
    while let Some(chunk) = logs.next().await {
        let chunk = chunk?;
        if on_terminal {
            stdout.write_all(&crate::output::terminal_safe_replay(&chunk))?;
        } else {
            stdout.write_all(&chunk)?;
        }
        stdout.flush()?;
    }
    Ok(())
}
