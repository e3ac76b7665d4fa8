//! `jackin set-phase NAME running|kept|purged`: the desired phase, set and
//! converged, or a dry run of the loop's decision.

use std::io::IsTerminal;

use anyhow::Result;
use jackin_api::DesiredPhase;

use crate::args::WaitArgs;
use crate::context::open_store_to_change;
use crate::ops::set_phases::{PhaseChange, set_phases};
use crate::select::Targets;
use crate::terminal::Keyboard;

pub async fn run(
    targets: &Targets<'_>,
    phase: DesiredPhase,
    dry_run: bool,
    force: bool,
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    let store = open_store_to_change()?;
    let current = targets.existing(&store)?;
    if current.is_empty() {
        return Ok(());
    }
    // Resuming on a terminal shows each session's preserved state first
    // (Screen D); a purge asks before discarding unfinished work.
    let mut keyboard = std::io::stdin().is_terminal().then(Keyboard::start);
    set_phases(PhaseChange {
        store,
        instances: &current,
        phase,
        dry_run,
        force,
        wait,
        verbose,
        keyboard: keyboard.as_mut(),
    })
    .await
}
