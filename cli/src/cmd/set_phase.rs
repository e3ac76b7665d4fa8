//! `jackin set-phase NAME running|kept|purged` (and `delete`): the desired
//! phase, set and converged, or a dry run of the loop's decision.

use anyhow::{Result, bail};
use jackin_api::names::annotation;
use jackin_api::{DesiredPhase, Instance};
use jackin_controller::reconcile::assess_checkouts;
use jackin_controller::{Reconciler, Store};
use jackin_reconcilers::assess::acknowledgement_digest;

use crate::args::WaitArgs;
use crate::{
    check_name, connect, converge_and_report, open_store_to_change, output, sweep_files_quietly,
};

pub async fn run(
    name: &str,
    phase: DesiredPhase,
    dry_run: bool,
    force: bool,
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    check_name(name)?;
    let store = open_store_to_change()?;
    let current = store.get_instance(name)?;
    // Converging needs the engine: connect before writing anything, so a
    // command that cannot converge leaves the store as it was.
    let engine = match wait.no_wait && !dry_run {
        true => None,
        false => Some(connect().await?),
    };
    if !dry_run {
        sweep_files_quietly(&store)?;
    }
    if phase == DesiredPhase::Purged && !dry_run {
        acknowledge_discard(&store, &current, force).await?;
    }
    let change = |store: &Store| match phase {
        DesiredPhase::Running => jackin_controller::session::resume(store, name),
        _ => store.set_phase(name, phase),
    };
    if wait.no_wait && !dry_run {
        let outcome = change(&store)?;
        println!(
            "instance/{name} {} (desired phase {phase})",
            outcome.as_str()
        );
        return Ok(());
    }
    let engine = engine.expect("connected unless --no-wait");
    if dry_run {
        let reconciler = Reconciler::new(store, engine);
        let dry = reconciler.dry_run(name, phase).await?;
        print!("{}", output::dry_run(name, phase, &dry, force));
        return Ok(());
    }
    let outcome = change(&store)?;
    println!(
        "instance/{name} {} (desired phase {phase}, was {})",
        outcome.as_str(),
        current.desired_phase()
    );
    converge_and_report(store, engine, &[name.to_owned()], wait, verbose).await
}

/// Shows the unfinished work a purge would discard and, when the operator
/// agrees (`--force`, or yes at the prompt on a terminal), acknowledges it by
/// its digest. Without agreement the purge stays blocked.
async fn acknowledge_discard(store: &Store, obj: &Instance, force: bool) -> Result<()> {
    let container = obj
        .status
        .as_ref()
        .and_then(|s| s.container_name.clone())
        .unwrap_or_default();
    let mounts = assess_checkouts(store.layout(), &container).await?;
    let Some(digest) = acknowledgement_digest(&mounts) else {
        return Ok(());
    };
    let name = &obj.metadata.name;
    eprintln!("instance/{name} has unfinished work in its isolated checkouts:");
    eprint!("{}", output::mounts_evidence(&mounts));
    use std::io::IsTerminal;
    if force {
        store.set_annotation(name, annotation::ACKNOWLEDGE_DISCARD, Some(&digest))?;
        eprintln!("acknowledged (digest {digest})");
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        // Nobody to ask: the purge is recorded and stays blocked until
        // acknowledged, which the caller reports.
        return Ok(());
    }
    eprint!("Discard this work and purge? [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        // The operator said no: nothing changes, not even the desired phase.
        bail!("not purged: instance/{name} is unchanged");
    }
    store.set_annotation(name, annotation::ACKNOWLEDGE_DISCARD, Some(&digest))?;
    eprintln!("acknowledged (digest {digest})");
    Ok(())
}
