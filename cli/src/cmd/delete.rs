//! `jackin delete NAME`: a purge, as `set-phase NAME purged`; for a name
//! jackin ended and cleaned up (only its record is left), forgetting that.

use anyhow::Result;
use jackin_api::DesiredPhase;
use jackin_controller::StoreError;

use crate::args::WaitArgs;
use crate::cmd::set_phase;
use crate::{check_name, open_store};

pub async fn run(
    name: &str,
    dry_run: bool,
    force: bool,
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    check_name(name)?;
    // No instance, only the record of one jackin ended: deleting it is
    // forgetting that, so the same manifest starts anew.
    let store = open_store()?;
    if matches!(
        store.get_instance(name),
        Err(StoreError::InstanceNotFound(_))
    ) && !dry_run
        && store.forget_ended(name)?
    {
        println!("instance/{name}: forgot its ended session; applying it starts a new one");
        return Ok(());
    }
    set_phase::run(name, DesiredPhase::Purged, dry_run, force, wait, verbose).await
}
