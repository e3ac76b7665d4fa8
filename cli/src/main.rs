//! The `jackin` binary.

mod args;
mod cmd;
mod hints;
mod output;
mod progress;
mod screens;

use std::process::ExitCode;

use anyhow::{Context, Result, anyhow, bail};
use clap::{CommandFactory, Parser};
use jackin_api::validate;
use jackin_controller::engines::Engines;
use jackin_controller::{IndexRepair, Outcome, Reconciler, Store, converge, sweep};
use jackin_reconcilers::{Engine, Layout};

use crate::args::{Cli, Command, LogFormat, WaitArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.log_format);
    name_this_process();
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
    match runtime.block_on(run(cli)) {
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
            failure
        }
    }
}

/// Names this process for the errors that say whose environment a
/// `hostEnv` secret was looked up in: the process that starts a container
/// resolves its secrets, and a controller started without a variable does
/// not see it, whatever the operator's shell holds now.
fn name_this_process() {
    let command = Cli::command();
    let verb = std::env::args()
        .skip(1)
        .find(|arg| command.get_subcommands().any(|c| c.get_name() == arg));
    jackin_reconcilers::secrets::set_process(match verb.as_deref() {
        Some("controller") => "the jackin controller".to_owned(),
        Some(verb) => format!("this `jackin {verb}`"),
        None => "this jackin process".to_owned(),
    });
}

/// A command line that does not say what to do (a missing or contradictory
/// argument clap cannot tell): exit status 2, as clap's own usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// A command run by `jackin exec` exited with this non-zero status.
#[derive(Debug)]
pub struct CommandExited(pub i64);

impl std::fmt::Display for CommandExited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the command exited {}", self.0)
    }
}

impl std::error::Error for CommandExited {}

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

fn init_logging(verbose: u8, format: LogFormat) {
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    use std::io::IsTerminal;
    let builder = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    match format {
        LogFormat::Text => builder.init(),
        LogFormat::Json => builder.json().init(),
    }
}

fn open_store() -> Result<Store> {
    let layout = Layout::from_env().map_err(|message| anyhow!("{message}"))?;
    let (store, repair) = Store::open(layout)?;
    match repair {
        Some(IndexRepair::Rebuilt { units }) => {
            eprintln!("note: the instance index was missing; rebuilt it from {units} unit(s)");
        }
        Some(IndexRepair::Corrupt { kept_as, units }) => eprintln!(
            "note: the instance index was unreadable; kept it as {kept_as} and rebuilt it from {units} unit(s)"
        ),
        None => {}
    }
    Ok(store)
}

/// The store, for a command that may create engine objects: the home's
/// settings are checked first, so a bad `config.yaml` stops the command
/// before anything is written.
fn open_store_to_change() -> Result<Store> {
    let store = open_store()?;
    jackin_reconcilers::addresses::read_config(store.layout().root())?;
    Ok(store)
}

/// Connects to the default engine before anything is written, so that a
/// command that cannot converge changes nothing. Engines that instances
/// name (`spec.engine`) are connected when they are first needed.
async fn connect() -> Result<Engines> {
    Ok(Engines::new(Some(Engine::connect().await?)))
}

async fn run(cli: Cli) -> Result<()> {
    let verbose = cli.verbose > 0;
    match cli.command {
        Command::Apply(args) => cmd::apply::run(open_store_to_change, &args, verbose).await,
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
            let word = targets.pop().expect("clap requires one");
            let phase = args::PhaseArg::parse(&word).ok_or_else(|| {
                UsageError(format!(
                    "{word:?} is not a phase: expected `set-phase NAME… running|kept|purged`"
                ))
            })?;
            let targets = cmd::select::Targets {
                names: &targets,
                selector: select.selector.as_deref(),
                files: &select.files,
            };
            cmd::set_phase::run(&targets, phase.into(), dry_run, force, &wait, verbose).await
        }
        Command::Rollout {
            names,
            select,
            dry_run,
            moving,
            wait,
        } => {
            let targets = cmd::select::Targets {
                names: &names,
                selector: select.selector.as_deref(),
                files: &select.files,
            };
            cmd::rollout::run(&targets, dry_run, moving, &wait, verbose).await
        }
        Command::Delete {
            targets,
            select,
            dry_run,
            force,
            wait,
        } => match targets.as_slice() {
            [kind, name] if matches!(kind.as_str(), "workspace" | "ws") => {
                cmd::delete::workspace(name, dry_run)
            }
            [kind, name] if matches!(kind.as_str(), "agent" | "ag") => {
                cmd::delete::agent(name, dry_run)
            }
            [kind, ..] if matches!(kind.as_str(), "workspace" | "ws" | "agent" | "ag") => {
                Err(UsageError(format!(
                    "`delete {kind}` takes one name: delete {kind} NAME"
                ))
                .into())
            }
            names => {
                let targets = cmd::select::Targets {
                    names,
                    selector: select.selector.as_deref(),
                    files: &select.files,
                };
                cmd::delete::run(&targets, dry_run, force, &wait, verbose).await
            }
        },
        Command::Controller(args) => cmd::controller::run(&args, verbose).await,
        Command::Launch(args) => {
            for name in [&args.workspace, &args.role, &args.agent] {
                check_name(name)?;
            }
            let store = open_store_to_change()?;
            let engine = connect().await?;
            cmd::launch::run(store, engine, &args).await
        }
        Command::Attach { name, wait } => {
            let name = cmd::select::instance_name(&name)?;
            let store = open_store_to_change()?;
            let engine = connect().await?;
            let mut keyboard = cmd::attach::Keyboard::start();
            cmd::attach::run(store, engine, name, &wait, &mut keyboard, false).await
        }
        Command::Prune { dry_run, images } => cmd::prune::run(dry_run, images).await,
        Command::RestoreDiscarded { name, to, mount } => {
            cmd::discarded::restore(&open_store()?, &name, to.as_deref(), mount.as_deref())
        }
        Command::Crds { out } => cmd::crds::run(out.as_deref()),
        Command::Logs(args) => cmd::logs::run(&args).await,
        Command::Exec(args) => cmd::exec::run(&args).await,
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "jackin", &mut std::io::stdout());
            Ok(())
        }
    }
}

/// Fault injection for tests: with `JACKIN_PAUSE_AT=<point>:<seconds>`, a
/// debug build sleeps at that point, so that a test can interleave another
/// command deterministically. Release builds do not read the variable.
pub fn pause_here_if_asked(point: &str) {
    if !cfg!(debug_assertions) {
        return;
    }
    let Ok(asked) = std::env::var("JACKIN_PAUSE_AT") else {
        return;
    };
    if let Some((at, seconds)) = asked.split_once(':')
        && at == point
        && let Ok(seconds) = seconds.parse::<u64>()
    {
        eprintln!("JACKIN_PAUSE_AT: pausing {seconds}s at {point}");
        std::thread::sleep(std::time::Duration::from_secs(seconds.min(60)));
    }
}

fn check_name(name: &str) -> Result<()> {
    validate::dns_label(name).map_err(|message| anyhow!("{message}"))
}

/// Converges one instance, reporting only failures: for commands that own
/// the terminal afterwards.
pub async fn converge_quietly(
    store: &Store,
    engines: &Engines,
    name: &str,
    wait: &WaitArgs,
) -> Result<()> {
    // The same live progress as `apply`: a role build can take minutes.
    let reporter = progress::Reporter::new(false);
    let mut reconciler = Reconciler::new(store.clone(), engines.clone());
    reconciler.progress = reporter.sink();
    let names = [name.to_owned()];
    let results = converge::converge(&reconciler, &names, wait.timeout, wait.concurrency).await;
    reporter.finish();
    for (name, result) in results {
        if let Outcome::Blocked { digest } = result.with_context(|| format!("instance/{name}"))? {
            bail!(
                "instance/{name}: the purge is blocked: the checkouts changed since the work \
                 was shown (digest now {digest})\nhint: `jackin describe {name}` shows it"
            );
        }
    }
    Ok(())
}

/// Converges `names` unless told not to wait, reporting progress and results.
pub async fn converge_and_report(
    store: Store,
    engines: Engines,
    names: &[String],
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    if wait.no_wait || names.is_empty() {
        return Ok(());
    }
    let reporter = progress::Reporter::new(verbose);
    let mut reconciler = Reconciler::new(store, engines);
    reconciler.progress = reporter.sink();
    let results = converge::converge(&reconciler, names, wait.timeout, wait.concurrency).await;
    reporter.finish();
    let mut failed = 0;
    for (name, result) in results {
        match result {
            Ok(Outcome::Converged { phase, tier }) => {
                let how = match tier {
                    Some(tier) => format!(" (restored, tier {tier})"),
                    None => String::new(),
                };
                println!("instance/{name} {phase}{how}");
            }
            Ok(Outcome::Gone) => println!("instance/{name} purged"),
            Ok(Outcome::PurgedWithoutEngine {
                engine,
                left_behind,
                ..
            }) => match left_behind.as_slice() {
                [] => println!(
                    "instance/{name} purged without engine {engine}, which cannot be reached: it \
                     never made anything there"
                ),
                left => {
                    println!(
                        "instance/{name} purged without engine {engine}, which cannot be reached; \
                         left behind there: {}",
                        left.join(", ")
                    );
                    eprintln!(
                        "hint: once engine {engine} answers, remove them there (`docker rm -f`, \
                         `docker network rm`, `docker volume rm`)"
                    );
                }
            },
            // Purged meanwhile by another process (or a controller).
            Ok(Outcome::Absent) => println!("instance/{name} gone"),
            Ok(Outcome::Blocked { digest }) => {
                failed += 1;
                eprintln!(
                    "error: instance/{name}: the purge is blocked: its isolated checkouts hold \
                     unfinished work (digest {digest})\nhint: `jackin describe {name}` shows it; \
                     `jackin set-phase {name} purged --force` discards it"
                );
            }
            Err(e) => {
                failed += 1;
                eprintln!(
                    "error: instance/{name}: {}",
                    output::terminal_safe_lines(&e.to_string())
                );
                if let Some(hint) = hints::for_error(&e) {
                    eprintln!("hint: {}", output::terminal_safe_lines(&hint));
                }
            }
        }
    }
    if failed > 0 {
        bail!(
            "{failed} instance(s) did not converge\nhint: `jackin describe NAME` shows the conditions"
        );
    }
    // A newly kept session may push its workspace over `keep.max`.
    let mut purges = Vec::new();
    let caps = sweep::plan_keep_caps(&reconciler.store)?;
    for finding in sweep::execute(&reconciler.store, &reconciler.engines, caps).await? {
        println!("{}", finding.describe(false));
        if let sweep::Finding::KeepCapPurge { name, .. } = finding {
            purges.push(name);
        }
    }
    if !purges.is_empty() {
        Box::pin(converge_and_report(
            reconciler.store,
            reconciler.engines,
            &purges,
            wait,
            verbose,
        ))
        .await?;
    }
    Ok(())
}

/// The cheap, local sweeps, run before a one-shot command does its work.
fn sweep_files_quietly(store: &Store) -> Result<()> {
    for finding in sweep::sweep_files(store)? {
        eprintln!("note: {}", finding.describe(false));
    }
    Ok(())
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
