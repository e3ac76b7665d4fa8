//! `jackin launch`: for a (workspace, role, agent), resume a previous session
//! or start a new one, then attach to it.

use anyhow::Result;

use crate::args::LaunchArgs;
use crate::context::{check_name, connect, open_store_to_change, sweep_files_quietly};
use crate::ops::launch;
use crate::terminal::Keyboard;

/// `jackin launch`: the names checked, then the store opened and the
/// engine connected before anything is written, then the cheap sweeps (as
/// `apply` runs them).
pub async fn start(args: &LaunchArgs) -> Result<()> {
    for name in [&args.workspace, &args.role, &args.agent] {
        check_name(name)?;
    }
    let mut keyboard = Keyboard::start();
    let (store, engines) = (open_store_to_change()?, connect().await?);
    sweep_files_quietly(&store)?;
    launch::run(store, engines, args, &mut keyboard).await
}
