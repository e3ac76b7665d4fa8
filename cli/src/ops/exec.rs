//! A command in an instance's agent container (`jackin exec`, and `jackin
//! top`'s shell key): on the instance's engine, as the agent's user and in
//! its working directory, its exit status returned as [`CommandExited`].

use std::io::{IsTerminal, Write};

use anyhow::{Result, bail};
use futures::StreamExt;
use jackin_engine::ExecRequest;
use jackin_engine::LogOutput;
use tokio::io::AsyncWriteExt;

use crate::args::ExecArgs;
use crate::context::{CommandExited, open_store};
use crate::ops::container::agent_container;
use crate::select::instance_name;
use crate::terminal::{Keyboard, RawMode, Resizes};

/// Runs `args.command` in the agent's container, reading standard input
/// (with `-i`) from `keyboard`: the command's own, or the caller's
/// (`jackin top`'s shell key), so that one reader has the terminal.
pub async fn run_with(args: &ExecArgs, keyboard: Option<&mut Keyboard>) -> Result<()> {
    let name = instance_name(&args.name)?;
    if args.tty && !std::io::stdin().is_terminal() {
        bail!("-t needs a terminal here, and standard input is not one\nhint: drop -t");
    }
    let store = open_store()?;
    let found = agent_container(&store, name).await?;
    let (Some(id), true) = (&found.id, found.running) else {
        let phase = found.obj.phase().map_or("-".into(), |p| p.to_string());
        bail!(
            "instance/{name} has no running container (phase {phase})\nhint: `jackin set-phase \
             {name} running` starts it"
        );
    };
    let recipe = found
        .obj
        .status
        .as_ref()
        .and_then(|s| s.recipe.clone())
        .unwrap_or_default();
    let mut env = Vec::new();
    if args.tty {
        env.push(format!(
            "TERM={}",
            std::env::var("TERM").unwrap_or_else(|_| "xterm-256color".into())
        ));
    }
    let request = ExecRequest {
        argv: args.command.clone(),
        user: recipe.user.clone(),
        working_dir: recipe.working_dir.clone(),
        env,
        stdin: args.interactive,
        tty: args.tty,
    };
    let engine = found.engine;
    let mut exec = engine.exec_attached(id, request).await?;
    let _raw = if args.tty { RawMode::enable() } else { None };
    if args.tty
        && let Ok((width, height)) = crossterm::terminal::size()
    {
        // The command lays its screen out for this terminal; a failure only costs looks.
        let _ = engine.resize_exec(&exec.exec_id, width, height).await;
    }
    let mut resizes = Resizes::watch(args.tty);
    let mut keyboard = keyboard.filter(|_| args.interactive);
    let (mut stdout, mut stderr) = (std::io::stdout(), std::io::stderr());
    loop {
        tokio::select! {
            item = exec.streams.output.next() => match item {
                Some(Ok(LogOutput::StdErr { message })) => {
                    stderr.write_all(&message)?;
                    stderr.flush()?;
                }
                Some(Ok(output)) => {
                    stdout.write_all(&output.into_bytes())?;
                    stdout.flush()?;
                }
                Some(Err(e)) => return Err(e.into()),
                None => break,
            },
            (width, height) = resizes.next() => {
                let _ = engine.resize_exec(&exec.exec_id, width, height).await;
            }
            chunk = next_input(&mut keyboard) => match chunk {
                Some(bytes) => {
                    exec.streams.input.write_all(&bytes).await?;
                    exec.streams.input.flush().await?;
                }
                // End of input: the command reads its end too.
                None => {
                    let _ = exec.streams.input.shutdown().await;
                    keyboard = None;
                }
            },
        }
    }
    drop(_raw);
    // The stream ends a moment before the engine records the exit code.
    for _ in 0..50 {
        if let Some(code) = engine.exec_exit_code(&exec.exec_id).await? {
            return match code {
                0 => Ok(()),
                code => Err(CommandExited(code).into()),
            };
        }
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    bail!("the engine did not say how the command ended")
}

/// The next chunk typed, or never when standard input is not attached.
async fn next_input(keyboard: &mut Option<&mut Keyboard>) -> Option<Vec<u8>> {
    match keyboard {
        Some(keyboard) => keyboard.chunk().await,
        None => std::future::pending().await,
    }
}
