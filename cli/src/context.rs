//! What the commands share: the process's setup (its name for secrets,
//! logging), opening the store, connecting to the engine, converging and
//! reporting, the keep cap once sessions are kept, and the errors that
//! choose an exit status.

use std::io::Write;

use anyhow::{Context, Result, anyhow, bail};
use clap::CommandFactory;
use jackin_api::validate;
use jackin_controller::engines::Engines;
use jackin_controller::{
    DryRun, IndexRepair, Outcome, ReconcileError, Reconciler, Store, converge, keep_cap, run_logs,
    sweep,
};
use jackin_engine::Engine;
use jackin_files::layout::Layout;

use crate::args::{Cli, LogFormat, WaitArgs};
use crate::run_log::Run;
use crate::{hints, output, progress};

/// Names this process for the errors that say whose environment a
/// `hostEnv` secret was looked up in: the process that starts a container
/// resolves its secrets, and a controller started without a variable does
/// not see it, whatever the operator's shell holds now.
pub fn name_this_process() {
    jackin_act::secrets::set_process(match verb().as_deref() {
        Some("controller") => "the jackin controller".to_owned(),
        Some(verb) => format!("this `jackin {verb}`"),
        None => "this jackin process".to_owned(),
    });
}

/// The command this process runs (`apply`, `controller`), if any.
pub fn verb() -> Option<String> {
    let command = Cli::command();
    std::env::args()
        .skip(1)
        .find(|arg| command.get_subcommands().any(|c| c.get_name() == arg))
}

/// The commands that act (on the engine, the store or a terminal's
/// session): their runs leave breadcrumbs in a run log.
const ACTING: [&str; 9] = [
    "apply",
    "launch",
    "attach",
    "rollout",
    "controller",
    "set-phase",
    "delete",
    "prune",
    "restore-discarded",
];

/// A command run by `jackin exec` exited with this non-zero status.
#[derive(Debug)]
pub struct CommandExited(pub i64);

impl std::fmt::Display for CommandExited {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the command exited {}", self.0)
    }
}

impl std::error::Error for CommandExited {}

/// The operator cancelled at a question (Ctrl-C, or the end of input):
/// what is unchanged, said as `cancelled: …`, and the exit status 130, as
/// for an interrupt.
#[derive(Debug)]
pub struct Cancelled(pub String);

impl std::fmt::Display for Cancelled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "cancelled: {}", self.0)
    }
}

impl std::error::Error for Cancelled {}

/// Log lines go to stderr (by `-v`, in `format`), and to the run log: the
/// breadcrumbs of a command that acts, and with `--debug` jackin's own
/// traces (never another crate's: they may dump request bodies).
pub fn init_logging(verbose: u8, format: LogFormat, traces: bool, run: &Run) {
    use tracing_subscriber::prelude::*;
    use tracing_subscriber::{filter, fmt};
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    use std::io::IsTerminal;
    let stderr = fmt::layer()
        .with_writer(|| progress::LogWriter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_target(false);
    let stderr = match format {
        LogFormat::Text => stderr.boxed(),
        LogFormat::Json => stderr.json().boxed(),
    }
    .with_filter(filter::filter_fn(move |meta| {
        meta.target() != run_logs::TARGET && *meta.level() <= level
    }));
    let acting = verb().is_some_and(|verb| ACTING.contains(&verb.as_str()));
    let to_run_log = fmt::layer()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_span_list(false)
        .with_writer(run.clone())
        .with_filter(filter::filter_fn(move |meta| match meta.target() {
            run_logs::TARGET => acting,
            target => {
                traces && target.starts_with("jackin") && *meta.level() <= tracing::Level::DEBUG
            }
        }));
    tracing_subscriber::registry()
        .with(stderr)
        .with(to_run_log)
        .init();
}

pub fn open_store() -> Result<Store> {
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
pub fn open_store_to_change() -> Result<Store> {
    let store = open_store()?;
    jackin_engine::addresses::read_config(store.layout().root())?;
    Ok(store)
}

/// Connects to the default engine before anything is written, so that a
/// command that cannot converge changes nothing. Engines that instances
/// name (`spec.engine`) are connected when they are first needed.
pub async fn connect() -> Result<Engines> {
    let engine = crate::deadline::bounded(async { Ok(Engine::connect().await?) }).await?;
    Ok(Engines::new(Some(engine)))
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

pub fn check_name(name: &str) -> Result<()> {
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
    let converging = converge::converge(&reconciler, &names, wait.timeout, wait.concurrency);
    let results = crate::deadline::bounded(async { Ok(converging.await) }).await;
    reporter.finish(|name| failed(&results, name));
    let results = results?;
    for (name, result) in results {
        run_logs::reconciled(&name, &result, reporter.stepped(&name));
        if let Outcome::Blocked { digest } = result.with_context(|| format!("instance/{name}"))? {
            bail!(
                "instance/{name}: the purge is blocked: the checkouts changed since the work \
                 was shown (digest now {digest})\nhint: `jackin describe {name}` shows it"
            );
        }
    }
    Ok(())
}

/// Whether the reconcile of `name` failed, or did not finish (the command's
/// deadline passed).
fn failed(results: &Result<Vec<(String, Result<Outcome, ReconcileError>)>>, name: &str) -> bool {
    results.as_ref().map_or(true, |results| {
        results
            .iter()
            .any(|(n, result)| n == name && result.is_err())
    })
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
    let converging = converge::converge(&reconciler, names, wait.timeout, wait.concurrency);
    let results = crate::deadline::bounded(async { Ok(converging.await) }).await;
    reporter.finish(|name| failed(&results, name));
    let results = results?;
    let mut failed = 0;
    for (name, result) in results {
        run_logs::reconciled(&name, &result, reporter.stepped(&name));
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
    let enforced = keep_cap::enforce(&reconciler.store).await?;
    for line in keep_cap_lines(&enforced.capped) {
        println!("{line}");
    }
    if !enforced.purged.is_empty() {
        Box::pin(converge_and_report(
            reconciler.store,
            reconciler.engines,
            &enforced.purged,
            wait,
            verbose,
        ))
        .await?;
    }
    Ok(())
}

/// The keep cap, for a command that owns the terminal (`attach`,
/// `launch`) once it settled a session: what it does is said on stderr,
/// and the sessions it purges are converged before the command returns.
pub async fn enforce_keep_cap_quietly(
    store: &Store,
    engines: &Engines,
    wait: &WaitArgs,
) -> Result<()> {
    let enforced = keep_cap::enforce(store).await?;
    // Said where the operator may no longer be (a closed terminal): a
    // failed write is no reason to stop.
    for line in keep_cap_lines(&enforced.capped) {
        let _ = writeln!(std::io::stderr(), "{line}");
    }
    for name in &enforced.purged {
        converge_quietly(store, engines, name, wait).await?;
        let _ = writeln!(std::io::stderr(), "instance/{name} purged");
    }
    Ok(())
}

/// What the keep cap did, as a command says it: once per workspace it
/// trims, the count and its `keep.max`; then each session it purges or
/// spares.
fn keep_cap_lines(capped: &[keep_cap::Capped]) -> impl Iterator<Item = String> {
    keep_cap::summary(capped, false)
        .into_iter()
        .chain(capped.iter().map(|c| c.describe(false)))
}

/// What the keep cap would then do, when a dry run leaves `obj` kept.
pub fn keep_cap_preview(
    store: &Store,
    dry: &DryRun,
    obj: &jackin_api::Instance,
) -> Result<Vec<keep_cap::Capped>> {
    if dry.plan.target != jackin_api::instance::InstancePhase::Kept || dry.blocked.is_some() {
        return Ok(Vec::new());
    }
    Ok(keep_cap::once_kept(store, obj)?)
}

/// The cheap, local sweeps, run before a one-shot command does its work.
pub fn sweep_files_quietly(store: &Store) -> Result<()> {
    for finding in sweep::sweep_files(store)? {
        eprintln!("note: {}", finding.describe(false));
    }
    Ok(())
}
