//! How a run ends: the exit status each outcome calls for, and what went
//! wrong printed once on standard error, with its hint and the handle of
//! the run's log.

use std::process::ExitCode;

use anyhow::Result;

use crate::args::UsageError;
use crate::cmd::apply::{self, Differs};
use crate::context::{Cancelled, CommandExited};
use crate::{hints, output, run_log};

/// The exit status of a run that ended with `result`, having printed what
/// went wrong. `failure` is the command's status for an error (`diff`'s
/// is 2, as `kubectl diff`'s: its 1 means "differs").
pub fn status(result: &Result<()>, failure: ExitCode, this_run: &run_log::Run) -> ExitCode {
    let Err(err) = result else {
        return ExitCode::SUCCESS;
    };
    // The reader went away (`jackin get -o yaml | head -1`): it has all
    // it wanted, which is success.
    if is_broken_pipe(err) {
        return ExitCode::SUCCESS;
    }
    if err.is::<Differs>() {
        return ExitCode::from(1);
    }
    // `jackin exec`: the command's own exit status, as `docker exec`.
    if let Some(CommandExited(code)) = err.downcast_ref::<CommandExited>() {
        return ExitCode::from(u8::try_from(*code).ok().filter(|c| *c != 0).unwrap_or(1));
    }
    // As an interrupt ends a program: 128 + SIGINT.
    if let Some(cancelled) = err.downcast_ref::<Cancelled>() {
        eprintln!("{}", output::terminal_safe_lines(&cancelled.to_string()));
        return ExitCode::from(130);
    }
    // Like clap's own: the command line itself is wrong.
    if err.is::<UsageError>() {
        eprintln!("error: {}", output::terminal_safe_lines(&err.to_string()));
        eprintln!("hint: `jackin help` lists the commands; `jackin COMMAND --help` shows one");
        return ExitCode::from(2);
    }
    if let Some(invalid) = apply::invalid(err) {
        for line in &invalid.0 {
            eprintln!("error: {}", output::terminal_safe(line));
        }
    } else {
        eprintln!("error: {}", output::terminal_safe_lines(&causes(err)));
        if let Some(hint) = hints::for_error(err.as_ref()) {
            eprintln!("hint: {}", output::terminal_safe_lines(&hint));
        }
    }
    if let Some(handle) = this_run.handle() {
        eprintln!("{}", output::terminal_safe(&handle));
    }
    failure
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
