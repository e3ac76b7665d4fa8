//! One module per command, and the dispatcher that runs the one the
//! command line names. A command parses what it was given and prints what
//! happened; what several commands do alike lives below them, in
//! [`crate::ops`]. No command imports another (`scripts/check-command-imports`).

pub mod apply;
pub mod attach;
pub mod controller;
pub mod crds;
pub mod delete;
pub mod describe;
pub mod doctor;
pub mod exec;
pub mod get;
pub mod launch;
pub mod logs;
pub mod port;
pub mod prune;
pub mod restore_discarded;
pub mod role;
pub mod rollout;
pub mod set_phase;
pub mod top;

use anyhow::Result;

use crate::args::{self, Cli, Command};
use crate::context::{open_store, open_store_to_change};
use crate::select::Targets;
use crate::{completion, deadline};

/// Runs the command `cli` names, its deadline started first.
pub async fn run(cli: Cli) -> Result<()> {
    let verbose = cli.verbose > 0;
    if let Some(wait) = cli.command.wait() {
        deadline::start(wait.timeout);
    }
    match cli.command {
        // Neither ever waits for the operator: the clock bounds all of it.
        Command::Apply(args) => {
            deadline::bounded(Box::pin(apply::run(open_store_to_change, &args, verbose))).await
        }
        Command::Diff(args) => apply::diff(&open_store()?, &args),
        Command::Get(args) => get::run(&open_store()?, &args).await,
        Command::Describe { first, name } => describe::run(&first, name.as_deref()).await,
        Command::SetPhase {
            mut targets,
            select,
            dry_run,
            force,
            wait,
        } => {
            let phase = args::PhaseArg::take_last(&mut targets)?;
            let targets = Targets::new(&targets, &select);
            set_phase::run(&targets, phase, dry_run, force, &wait, verbose).await
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
            deadline::bounded(Box::pin(rollout::run(
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
        } => delete::dispatch(&targets, &select, dry_run, force, &wait, verbose).await,
        Command::Controller(args) => controller::run(&args, verbose).await,
        Command::Launch(args) => launch::start(&args).await,
        Command::Attach { name, wait } => attach::start(&name, &wait).await,
        Command::Prune {
            dry_run,
            images,
            discarded,
            failed_after,
            force,
        } => {
            let also = prune::Also {
                images,
                discarded,
                failed_after,
            };
            prune::run(dry_run, also, force).await
        }
        Command::RestoreDiscarded {
            name,
            session: true,
            new_name,
            wait,
            ..
        } => {
            let store = open_store()?;
            restore_discarded::restore_session(store, &name, new_name.as_deref(), &wait, verbose)
                .await
        }
        Command::RestoreDiscarded {
            name, to, mount, ..
        } => restore_discarded::restore(&open_store()?, &name, to.as_deref(), mount.as_deref()),
        Command::Crds { out } => crds::run(out.as_deref()),
        Command::Doctor { output } => doctor::run(output).await,
        Command::Top(args) => Box::pin(top::run(&args)).await,
        Command::Logs(args) => logs::run(&args).await,
        Command::Port { name, port } => port::run(&name, port.as_deref()),
        Command::Exec(args) => exec::run(&args).await,
        Command::Role { command } => role::run(command),
        Command::Completions { shell } => completion::print_script(shell),
        Command::CompleteNames { words } => completion::print_names(&words),
    }
}
