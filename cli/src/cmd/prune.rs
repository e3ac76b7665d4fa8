//! `jackin prune`: the sweeps, now.

use anyhow::Result;
use jackin_controller::sweep;

use crate::args::WaitArgs;
use crate::context::{connect, converge_and_report, open_store};

pub async fn run(dry_run: bool, images: bool) -> Result<()> {
    let store = open_store()?;
    let engine = connect().await?;
    let findings = sweep::sweep(&store, &engine, sweep::Options { dry_run, images }).await?;
    if findings.is_empty() {
        println!("nothing to prune");
    }
    for finding in &findings {
        println!("{}", finding.describe(dry_run));
    }
    if dry_run {
        return Ok(());
    }
    let purges: Vec<String> = findings
        .into_iter()
        .filter_map(|f| match f {
            sweep::Finding::KeepCap(jackin_controller::keep_cap::Capped::Purge {
                name, ..
            }) => Some(name),
            _ => None,
        })
        .collect();
    let wait = WaitArgs {
        timeout: std::time::Duration::from_secs(300),
        no_wait: false,
        concurrency: jackin_controller::converge::DEFAULT_CONCURRENCY,
    };
    converge_and_report(store, engine, &purges, &wait, false).await
}
