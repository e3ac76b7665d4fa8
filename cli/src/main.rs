//! The `jackin` binary: parses the command line, runs the command
//! ([`cmd::run`]) on a runtime, and ends with the exit status it calls for
//! ([`exit::status`]).

mod agent_output;
mod args;
mod cmd;
mod completion;
mod context;
mod deadline;
mod exit;
mod hints;
mod inputs;
mod operator_setup;
mod ops;
mod output;
mod progress;
mod provider_output;
mod run_log;
mod screens;
mod select;
mod terminal;
mod workspace_policy;

use std::process::ExitCode;

use clap::Parser;

use crate::args::{Cli, Command};

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
    let result = runtime.block_on(cmd::run(cli));
    this_run.finished(&result);
    exit::status(&result, failure, &this_run)
}
