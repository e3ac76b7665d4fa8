//! The `jackin` binary: parses the command line, dispatches to the command,
//! and prints what went wrong with the exit status it calls for.

mod agent_output;
mod args;
mod cmd;
mod completion;
mod context;
mod deadline;
mod hints;
mod operator_setup;
mod output;
mod progress;
mod provider_output;
mod run_log;
mod screens;
mod terminal;
mod workspace_policy;

use std::process::ExitCode;

use anyhow::Result;
use clap::Parser;

use crate::args::UsageError;
use crate::args::{Cli, Command};
use crate::cmd::select::Targets;
use crate::context::{CommandExited, open_store, open_store_to_change};

fn main() -> ExitCode {
    // The controller runs `jackin` again as the notify command's reaper.
    if let Some(code) = jackin_controller::notify_reaper::reaper_if_asked() {
        return code;
    }
    let cli = Cli::parse();
    let this_run = run_log::Run::mint(context::verb());
    context::init_logging(cli.verbose, cli.log_format, cli.debug, &this_run);
    context::name_this_process();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    // `diff` exits as `kubectl diff` does: 1 means "differs", so an error
    // is 2.
    let failure = match cli.command {
        Command::Diff(_) => ExitCode::from(2),
        _ => ExitCode::FAILURE,
    };
    let result = runtime.block_on(run(cli));
    this_run.finished(&result);
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`jackin get -o yaml | head -1`): it has all
        // it wanted, which is success.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) if err.is::<cmd::apply::Differs>() => ExitCode::from(1),
        // `jackin exec`: the command's own exit status, as `docker exec`.
        Err(err) if err.is::<CommandExited>() => {
            let code = err.downcast_ref::<CommandExited>().expect("checked").0;
            ExitCode::from(u8::try_from(code).ok().filter(|c| *c != 0).unwrap_or(1))
        }
        // Like clap's own: the command line itself is wrong.
        Err(err) if err.is::<UsageError>() => {
            eprintln!("error: {}", output::terminal_safe_lines(&err.to_string()));
            eprintln!("hint: `jackin help` lists the commands; `jackin COMMAND --help` shows one");
            ExitCode::from(2)
        }
        Err(err) => {
            if let Some(invalid) = cmd::apply::invalid(&err) {
                for line in &invalid.0 {
                    eprintln!("error: {}", output::terminal_safe(line));
                }
            } else {
                eprintln!("error: {}", output::terminal_safe_lines(&causes(&err)));
                if let Some(hint) = hints::for_error(err.as_ref()) {
                    eprintln!("hint: {}", output::terminal_safe_lines(&hint));
                }
            }
            if let Some(handle) = this_run.handle() {
                eprintln!("{}", output::terminal_safe(&handle));
            }
            failure
        }
    }
}

/// The cause chain on one line, each cause once: an error whose message
/// already quotes its source (`{path}: {source}`) does not repeat it.
fn causes(err: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in err.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

/// Whether writing to a closed pipe is anywhere in the cause chain.
fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

async fn run(cli: Cli) -> Result<()> {
    let verbose = cli.verbose > 0;
    if let Some(wait) = cli.command.wait() {
        deadline::start(wait.timeout);
    }
    match cli.command {
        // Neither ever waits for the operator: the clock bounds all of it.
        Command::Apply(args) => {
            deadline::bounded(Box::pin(cmd::apply::run(
                open_store_to_change,
                &args,
                verbose,
            )))
            .await
        }
        Command::Diff(args) => cmd::apply::diff(&open_store()?, &args),
        Command::Get(args) => cmd::get::run(&open_store()?, &args).await,
        Command::Describe { first, name } => cmd::describe::run(&first, name.as_deref()).await,
        Command::SetPhase {
            mut targets,
            select,
            dry_run,
            force,
            wait,
        } => {
            let phase = args::PhaseArg::take_last(&mut targets)?;
            let targets = Targets::new(&targets, &select);
            cmd::set_phase::run(&targets, phase, dry_run, force, &wait, verbose).await
        }
        Command::Rollout {
            names,
            select,
            dry_run,
            moving,
            new_conversation,
            wait,
        } => {
            let allowed = jackin_plan::rollout::Allowed {
                moving,
                new_conversation,
            };
            // Boxed: a dry run's preview is a large future.
            deadline::bounded(Box::pin(cmd::rollout::run(
                &Targets::new(&names, &select),
                dry_run,
                allowed,
                &wait,
                verbose,
            )))
            .await
        }
        Command::Delete {
            targets,
            select,
            dry_run,
            force,
            wait,
        } => cmd::delete::dispatch(&targets, &select, dry_run, force, &wait, verbose).await,
        Command::Controller(args) => cmd::controller::run(&args, verbose).await,
        Command::Launch(args) => cmd::launch::start(&args).await,
        Command::Attach { name, wait } => cmd::attach::start(&name, &wait).await,
        Command::Prune {
            dry_run,
            images,
            failed_after,
            force,
        } => cmd::prune::run(dry_run, images, failed_after, force).await,
        Command::RestoreDiscarded {
            name,
            session: true,
            new_name,
            ..
        } => cmd::discarded::restore_session(&open_store()?, &name, new_name.as_deref()),
        Command::RestoreDiscarded {
            name, to, mount, ..
        } => cmd::discarded::restore(&open_store()?, &name, to.as_deref(), mount.as_deref()),
        Command::Crds { out } => cmd::crds::run(out.as_deref()),
        Command::Top(args) => Box::pin(cmd::top::run(&args)).await,
        Command::Logs(args) => cmd::logs::run(&args).await,
        Command::Exec(args) => cmd::exec::run(&args).await,
        Command::Completions { shell } => completion::print_script(shell),
        Command::CompleteNames { words } => completion::print_names(&words),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error whose message quotes its source, as many do.
    #[derive(Debug)]
    struct Quoting {
        path: &'static str,
        source: std::io::Error,
    }

    impl std::fmt::Display for Quoting {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "{}: {}", self.path, self.source)
        }
    }

    impl std::error::Error for Quoting {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            Some(&self.source)
        }
    }

    #[test]
    fn each_cause_is_printed_once() {
        let inner = std::io::Error::other("disk on fire");
        let err = anyhow::Error::new(Quoting {
            path: "/x",
            source: inner,
        })
        .context("saving the status");
        assert_eq!(causes(&err), "saving the status: /x: disk on fire");
    }
}
