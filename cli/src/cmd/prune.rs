//! `jackin prune`: the sweeps, now; with `--failed-after AGE`, also the
//! sessions that ended Crashed or Failed longer ago than AGE; with
//! `--discarded`, every save of discarded work. An engine it could not ask
//! is an error, once the rest is pruned.

use std::io::IsTerminal;
use std::time::Duration;

use anyhow::{Context, Result};
use jackin_api::{DesiredPhase, Instance};
use jackin_checkouts::discard;
use jackin_controller::{failed_sessions, keep_cap, sweep};
use jiff::Timestamp;

use crate::args::WaitArgs;
use crate::context::{connect, converge_and_report, open_store};
use crate::ops::discarded;
use crate::ops::set_phases::{PhaseChange, set_phases};
use crate::output;
use crate::terminal::Keyboard;

/// What a prune removes besides what the sweeps find.
pub struct Also {
    /// Images jackin built that no instance pins.
    pub images: bool,
    /// Every save of discarded work, now.
    pub discarded: bool,
    /// The sessions that ended Crashed or Failed longer ago than this.
    pub failed_after: Option<Duration>,
}

pub async fn run(dry_run: bool, also: Also, force: bool) -> Result<()> {
    let store = open_store()?;
    let engine = connect().await?;
    let images = also.images;
    let findings = sweep::sweep(&store, &engine, sweep::Options { dry_run, images }).await?;
    // Said last, after all that could be done: a command that could not
    // ask an engine fails, as `logs` and `exec` do (issue 53, N9).
    let not_swept = sweep::not_swept(&findings);
    let failed = match also.failed_after {
        Some(age) => failed_before(&store.list_instances()?.instances, age)?,
        None => Vec::new(),
    };
    let saves = match also.discarded {
        true => discard::list(store.layout()).0,
        false => Vec::new(),
    };
    if findings.is_empty() && failed.is_empty() && saves.is_empty() {
        println!("nothing to prune");
    }
    remove_saves(&store, &saves, dry_run)?;
    let capped: Vec<keep_cap::Capped> = findings
        .iter()
        .filter_map(|f| match f {
            sweep::Finding::KeepCap(capped) => Some(capped.clone()),
            _ => None,
        })
        .collect();
    for line in keep_cap::summary(&capped, dry_run) {
        println!("{line}");
    }
    for finding in &findings {
        println!("{}", finding.describe(dry_run));
    }
    let now = Timestamp::now();
    for (obj, since) in &failed {
        let verb = if dry_run { "would purge" } else { "purging" };
        println!(
            "{verb} instance/{}: {} {} ago ({since})",
            obj.metadata.name,
            obj.phase().map_or("-".into(), |p| p.to_string()),
            output::age(Some(*since), now)
        );
    }
    if dry_run {
        return not_swept.map_or(Ok(()), |e| Err(e.into()));
    }
    let purges: Vec<String> = findings
        .into_iter()
        .filter_map(|f| match f {
            sweep::Finding::KeepCap(keep_cap::Capped::Purge { name, .. }) => Some(name),
            _ => None,
        })
        .collect();
    let wait = WaitArgs {
        timeout: Duration::from_secs(300),
        no_wait: false,
        concurrency: jackin_controller::converge::DEFAULT_CONCURRENCY,
    };
    converge_and_report(store.clone(), engine, &purges, &wait, false).await?;
    if !failed.is_empty() {
        purge_failed(store, failed, force, &wait).await?;
    }
    not_swept.map_or(Ok(()), |e| Err(e.into()))
}

/// Removes the saves `--discarded` found (`delete discarded/NAME` for
/// each), each said with what it held.
fn remove_saves(
    store: &jackin_controller::Store,
    saves: &[discard::Save],
    dry_run: bool,
) -> Result<()> {
    for save in saves {
        let what = discarded::saved_what(save);
        if dry_run {
            println!("would remove discarded/{}: {what}", save.name);
            continue;
        }
        discard::remove(store.layout(), &save.name)?;
        println!("removed discarded/{}: {what}", save.name);
    }
    Ok(())
}

/// Purges the sessions `--failed-after` found.
async fn purge_failed(
    store: jackin_controller::Store,
    failed: Vec<(Instance, Timestamp)>,
    force: bool,
    wait: &WaitArgs,
) -> Result<()> {
    // The purge `set-phase purged` makes, so the same acknowledgement (the
    // unfinished work shown, and asked about on a terminal or allowed by
    // --force) and the same save of that work before it goes.
    let reaped: Vec<Instance> = failed.into_iter().map(|(obj, _)| obj).collect();
    let mut keyboard = std::io::stdin().is_terminal().then(Keyboard::start);
    set_phases(PhaseChange {
        store,
        instances: &reaped,
        phase: DesiredPhase::Purged,
        dry_run: false,
        force,
        wait,
        verbose: false,
        keyboard: keyboard.as_mut(),
    })
    .await
}

/// The sessions that ended Crashed or Failed longer than `age` ago, each
/// with when it did.
fn failed_before(instances: &[Instance], age: Duration) -> Result<Vec<(Instance, Timestamp)>> {
    let cutoff = jiff::SignedDuration::try_from(age)
        .ok()
        .and_then(|age| Timestamp::now().checked_sub(age).ok())
        .with_context(|| format!("--failed-after {age:?} reaches before the clock's start"))?;
    Ok(failed_sessions::ended_before(instances, cutoff)
        .into_iter()
        .map(|(obj, since)| (obj.clone(), since))
        .collect())
}
