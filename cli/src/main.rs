//! The `jackin` binary.

mod apply;
mod args;
mod attach;
mod launch;
mod output;
mod progress;
mod screens;

use std::io::Write;
use std::process::ExitCode;

use std::sync::Arc;

use anyhow::{Context, Result, anyhow, bail};
use clap::{CommandFactory, Parser};
use jackin_api::names::annotation;
use jackin_api::{DesiredPhase, Instance, validate};
use jackin_controller::reconcile::assess_checkouts;
use jackin_controller::{
    IndexRepair, Outcome, Progress, Reconciler, Store, StoreError, converge, run, sweep,
};
use jackin_reconcilers::assess::acknowledgement_digest;
use jackin_reconcilers::{Engine, Layout};
use jiff::Timestamp;

use crate::args::{Cli, Command, ControllerArgs, Format, GetArgs, LogFormat, WaitArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose, cli.log_format);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("a tokio runtime starts");
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        // The reader went away (`jackin get -o yaml | head -1`): it has all
        // it wanted, which is success.
        Err(err) if is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) => {
            if let Some(invalid) = err.downcast_ref::<apply::InvalidInput>() {
                for line in &invalid.0 {
                    eprintln!("error: {}", output::terminal_safe(line));
                }
            } else {
                eprintln!(
                    "error: {}",
                    output::terminal_safe_lines(&format!("{err:#}"))
                );
            }
            ExitCode::FAILURE
        }
    }
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
    let layout = Layout::from_env()
        .ok_or_else(|| anyhow!("cannot find a home directory; set JACKIN_HOME"))?;
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

/// Connects to the engine before anything is written, so that a command
/// that cannot converge changes nothing.
async fn connect() -> Result<Engine> {
    Ok(Engine::connect().await?)
}

async fn run(cli: Cli) -> Result<()> {
    let verbose = cli.verbose > 0;
    match cli.command {
        Command::Apply(args) => apply::run(open_store, &args, verbose).await,
        Command::Get(args) => get(&open_store()?, &args),
        Command::Describe { name } => {
            check_name(&name)?;
            let store = open_store()?;
            let obj = store.get_instance(&name)?;
            let container = obj.status.as_ref().and_then(|s| s.container_name.clone());
            let events = container
                .map(|c| jackin_controller::events::read(store.layout(), &c))
                .unwrap_or_default();
            print!("{}", output::describe(&obj, &events, Timestamp::now()));
            Ok(())
        }
        Command::SetPhase {
            name,
            phase,
            dry_run,
            force,
            wait,
        } => set_phase(&name, phase.into(), dry_run, force, &wait, verbose).await,
        Command::Delete {
            name,
            dry_run,
            force,
            wait,
        } => {
            check_name(&name)?;
            // No instance, only the record of one jackin ended: deleting
            // it is forgetting that, so the same manifest starts anew.
            let store = open_store()?;
            if matches!(
                store.get_instance(&name),
                Err(StoreError::InstanceNotFound(_))
            ) && !dry_run
                && store.forget_ended(&name)?
            {
                println!("instance/{name}: forgot its ended session; applying it starts a new one");
                return Ok(());
            }
            set_phase(&name, DesiredPhase::Purged, dry_run, force, &wait, verbose).await
        }
        Command::Controller(args) => controller(&args).await,
        Command::Launch(args) => {
            for name in [&args.workspace, &args.role, &args.agent] {
                check_name(name)?;
            }
            let store = open_store()?;
            let engine = connect().await?;
            launch::run(store, engine, &args).await
        }
        Command::Attach { name, wait } => {
            check_name(&name)?;
            let store = open_store()?;
            let engine = connect().await?;
            attach::run(store, engine, &name, &wait, &mut attach::Keyboard::start()).await
        }
        Command::Prune { dry_run, images } => prune(dry_run, images).await,
        Command::Crds { out } => crds(out.as_deref()),
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
    engine: &Engine,
    name: &str,
    wait: &WaitArgs,
) -> Result<()> {
    let reconciler = Reconciler::new(store.clone(), engine.clone());
    let names = [name.to_owned()];
    for (name, result) in converge::converge(&reconciler, &names, wait.timeout).await {
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
    engine: Engine,
    names: &[String],
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    if wait.no_wait || names.is_empty() {
        return Ok(());
    }
    let reporter = progress::Reporter::new(verbose);
    let mut reconciler = Reconciler::new(store, engine);
    reconciler.progress = reporter.sink();
    let results = converge::converge(&reconciler, names, wait.timeout).await;
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
                eprintln!("error: instance/{name}: {e}");
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
    for finding in sweep::enforce_keep_caps(&reconciler.store, false)? {
        println!("{}", finding.describe(false));
        if let sweep::Finding::KeepCapPurge { name, .. } = finding {
            purges.push(name);
        }
    }
    if !purges.is_empty() {
        Box::pin(converge_and_report(
            reconciler.store,
            reconciler.engine,
            &purges,
            wait,
            verbose,
        ))
        .await?;
    }
    Ok(())
}

/// Shows the unfinished work a purge would discard and, when the operator
/// agrees (`--force`, or yes at the prompt on a terminal), acknowledges it by
/// its digest. Without agreement the purge stays blocked.
async fn acknowledge_discard(store: &Store, obj: &Instance, force: bool) -> Result<()> {
    let container = obj
        .status
        .as_ref()
        .and_then(|s| s.container_name.clone())
        .unwrap_or_default();
    let mounts = assess_checkouts(store.layout(), &container).await?;
    let Some(digest) = acknowledgement_digest(&mounts) else {
        return Ok(());
    };
    let name = &obj.metadata.name;
    eprintln!("instance/{name} has unfinished work in its isolated checkouts:");
    eprint!("{}", output::mounts_evidence(&mounts));
    use std::io::IsTerminal;
    if force {
        store.set_annotation(name, annotation::ACKNOWLEDGE_DISCARD, Some(&digest))?;
        eprintln!("acknowledged (digest {digest})");
        return Ok(());
    }
    if !std::io::stdin().is_terminal() {
        // Nobody to ask: the purge is recorded and stays blocked until
        // acknowledged, which the caller reports.
        return Ok(());
    }
    eprint!("Discard this work and purge? [y/N] ");
    let mut answer = String::new();
    std::io::stdin().read_line(&mut answer)?;
    if !matches!(answer.trim(), "y" | "Y" | "yes") {
        // The operator said no: nothing changes, not even the desired phase.
        bail!("not purged: instance/{name} is unchanged");
    }
    store.set_annotation(name, annotation::ACKNOWLEDGE_DISCARD, Some(&digest))?;
    eprintln!("acknowledged (digest {digest})");
    Ok(())
}

async fn set_phase(
    name: &str,
    phase: DesiredPhase,
    dry_run: bool,
    force: bool,
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    check_name(name)?;
    let store = open_store()?;
    let current = store.get_instance(name)?;
    // Converging needs the engine: connect before writing anything, so a
    // command that cannot converge leaves the store as it was.
    let engine = match wait.no_wait && !dry_run {
        true => None,
        false => Some(connect().await?),
    };
    if !dry_run {
        sweep_files_quietly(&store)?;
    }
    if phase == DesiredPhase::Purged && !dry_run {
        acknowledge_discard(&store, &current, force).await?;
    }
    let change = |store: &Store| match phase {
        DesiredPhase::Running => jackin_controller::session::resume(store, name),
        _ => store.set_phase(name, phase),
    };
    if wait.no_wait && !dry_run {
        let outcome = change(&store)?;
        println!(
            "instance/{name} {} (desired phase {phase})",
            outcome.as_str()
        );
        return Ok(());
    }
    let engine = engine.expect("connected unless --no-wait");
    if dry_run {
        let reconciler = Reconciler::new(store, engine);
        let dry = reconciler.dry_run(name, phase).await?;
        print!("{}", output::dry_run(name, phase, &dry, force));
        return Ok(());
    }
    let outcome = change(&store)?;
    println!(
        "instance/{name} {} (desired phase {phase}, was {})",
        outcome.as_str(),
        current.desired_phase()
    );
    converge_and_report(store, engine, &[name.to_owned()], wait, verbose).await
}

async fn controller(args: &ControllerArgs) -> Result<()> {
    let store = open_store()?;
    let engine = connect().await?;
    let mut reconciler = Reconciler::new(store, engine);
    reconciler.progress = Arc::new(|name: &str, event: Progress<'_>| match event {
        Progress::Step(step) => tracing::info!(instance = name, "{}", step.describe()),
        Progress::Build(line) => tracing::debug!(instance = name, "build: {line}"),
    });
    if args.once {
        let names: Vec<String> = reconciler
            .store
            .rows()?
            .into_iter()
            .map(|r| r.name)
            .collect();
        let before = reconciler.engine.calls();
        let results = reconciler
            .pass(&names, args.concurrency, |_| true, |_| {})
            .await?;
        let calls = reconciler.engine.calls() - before;
        // A blocked purge has not converged: it waits for the operator.
        let failed: Vec<String> = results
            .iter()
            .filter_map(|(name, r)| match r {
                Err(e) => Some(format!("instance/{name}: {e}")),
                Ok(Outcome::Blocked { digest }) => Some(format!(
                    "instance/{name}: the purge is blocked: its isolated checkouts hold \
                     unfinished work (digest {digest})\nhint: `jackin describe {name}` shows \
                     it; `jackin set-phase {name} purged --force` discards it"
                )),
                Ok(_) => None,
            })
            .collect();
        let blocked = results
            .iter()
            .filter(|(_, r)| matches!(r, Ok(Outcome::Blocked { .. })))
            .count();
        println!(
            "pass complete: {} instance(s), {} converged, {blocked} blocked, {calls} engine call(s)",
            results.len(),
            results.len() - failed.len()
        );
        if !failed.is_empty() {
            bail!("{}", failed.join("\n"));
        }
        return Ok(());
    }
    let options = run::Options {
        concurrency: args.concurrency,
        resync: args.resync,
        sweep: args.sweep,
        ..Default::default()
    };
    tracing::info!(
        engine = reconciler.engine.endpoint(),
        concurrency = options.concurrency,
        "controller started"
    );
    run::run(reconciler, options, shutdown_signal()).await;
    Ok(())
}

async fn prune(dry_run: bool, images: bool) -> Result<()> {
    let store = open_store()?;
    let engine = connect().await?;
    let findings = sweep::sweep(&store, &engine, sweep::Options { dry_run, images }).await?;
    if findings.is_empty() {
        println!("nothing to prune");
    }
    for finding in &findings {
        println!("{}", finding.describe(dry_run));
    }
    let purges: Vec<String> = findings
        .into_iter()
        .filter_map(|f| match f {
            sweep::Finding::KeepCapPurge { name, .. } if !dry_run => Some(name),
            _ => None,
        })
        .collect();
    let wait = WaitArgs {
        timeout: std::time::Duration::from_secs(300),
        no_wait: false,
    };
    converge_and_report(store, engine, &purges, &wait, false).await
}

/// The cheap, local sweeps, run before a one-shot command does its work.
fn sweep_files_quietly(store: &Store) -> Result<()> {
    for finding in sweep::sweep_files(store, false)? {
        eprintln!("note: {}", finding.describe(false));
    }
    Ok(())
}

/// Resolves on SIGINT or SIGTERM.
async fn shutdown_signal() {
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
        .expect("SIGTERM can be handled");
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
}

fn get(store: &Store, args: &GetArgs) -> Result<()> {
    enum Kind {
        Instances,
        Workspaces,
    }
    let (kind, name) = match (args.first.as_deref(), args.name.as_deref()) {
        (None, _) => (Kind::Instances, None),
        (Some("instances" | "instance" | "inst"), name) => (Kind::Instances, name),
        (Some("workspaces" | "workspace" | "ws"), name) => (Kind::Workspaces, name),
        (Some(name), None) => (Kind::Instances, Some(name)),
        (Some(kind), Some(_)) => {
            return Err(anyhow!(
                "unknown kind {kind:?}: expected instances or workspaces"
            ));
        }
    };
    if let Some(name) = name {
        check_name(name)?;
    }
    let now = Timestamp::now();
    let table = matches!(args.output, Format::Table | Format::Wide);
    let text = match kind {
        Kind::Instances => {
            let objects = match name {
                Some(name) => vec![store.get_instance(name)?],
                None => {
                    let listing = store.list_instances()?;
                    for unreadable in &listing.unreadable {
                        eprintln!(
                            "warning: {}\nhint: `jackin prune` sets the unit aside",
                            output::terminal_safe_lines(&unreadable.to_string())
                        );
                    }
                    listing.instances
                }
            };
            if objects.is_empty() && table {
                eprintln!("No instances found.");
                return Ok(());
            }
            match args.output {
                Format::Table => output::instance_table(&objects, false, now),
                Format::Wide => output::instance_table(&objects, true, now),
                Format::Yaml => output::yaml_stream(&objects)?,
                Format::Json => output::json(&objects, name.is_some())?,
            }
        }
        Kind::Workspaces => {
            let objects = match name {
                Some(name) => vec![
                    store
                        .get_workspace(name)?
                        .ok_or_else(|| anyhow!("workspace {name:?} not found"))?,
                ],
                None => store.list_workspaces()?,
            };
            if objects.is_empty() && table {
                eprintln!("No workspaces found.");
                return Ok(());
            }
            match args.output {
                Format::Table | Format::Wide => output::workspace_table(&objects, now),
                Format::Yaml => output::yaml_stream(&objects)?,
                Format::Json => output::json(&objects, name.is_some())?,
            }
        }
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

fn crds(out: Option<&std::path::Path>) -> Result<()> {
    let mut stdout = String::new();
    for (file, crd) in jackin_api::crd::all() {
        let text = render_crd(&crd)?;
        match out {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let path = dir.join(file);
                std::fs::write(&path, text.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?;
                println!("wrote {}", path.display());
            }
            None => {
                if !stdout.is_empty() {
                    stdout.push_str("---\n");
                }
                stdout.push_str(&text);
            }
        }
    }
    std::io::stdout().write_all(stdout.as_bytes())?;
    Ok(())
}

/// The committed form of a CRD; `crds_match_the_types` compares against it.
pub fn render_crd(crd: &serde_json::Value) -> Result<String> {
    Ok(format!(
        "# Generated from the Rust types by `jackin crds --out crds`; do not edit.\n{}",
        output::yaml_stream(std::slice::from_ref(crd))?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed CRDs must be exactly what the types generate.
    #[test]
    fn crds_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds");
        for (file, crd) in jackin_api::crd::all() {
            let committed = std::fs::read_to_string(dir.join(file))
                .unwrap_or_else(|e| panic!("crds/{file}: {e}; run `jackin crds --out crds`"));
            assert!(
                committed == render_crd(&crd).unwrap(),
                "crds/{file} is stale: run `cargo run -p jackin-cli -- crds --out crds`"
            );
        }
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
