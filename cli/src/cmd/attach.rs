//! `jackin attach NAME`: converge the instance to running, connect the
//! operator's terminal to its agent, and when the agent ends the session,
//! settle it by the exit policy, asking when there is unfinished work.

use anyhow::Result;

use crate::args::WaitArgs;
use crate::context::{connect, open_store_to_change, sweep_files_quietly};
use crate::ops::attach;
use crate::select::instance_name;
use crate::terminal::Keyboard;

/// `jackin attach NAME`: the store opened and the engine connected before
/// anything is written, then the cheap sweeps (as `apply` runs them), and
/// the keyboard read for the whole command.
pub async fn start(name: &str, wait: &WaitArgs) -> Result<()> {
    let name = instance_name(name)?;
    let (store, engines) = (open_store_to_change()?, connect().await?);
    sweep_files_quietly(&store)?;
    let keyboard = &mut Keyboard::start();
    attach::run(store, engines, name, wait, keyboard, false, None).await
}
