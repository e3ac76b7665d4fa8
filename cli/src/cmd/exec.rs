//! `jackin exec NAME [-i] [-t] -- CMD…`: a command in the agent's
//! container, on the instance's engine, as the agent's user and in its
//! working directory. The command's exit status is jackin's.

use anyhow::Result;

use crate::args::ExecArgs;
use crate::ops::exec::run_with;
use crate::terminal::Keyboard;

pub async fn run(args: &ExecArgs) -> Result<()> {
    let mut keyboard = args.interactive.then(Keyboard::start);
    run_with(args, keyboard.as_mut()).await
}
