//! `jackin controller`: the loop, continuously or for one pass.

use std::sync::Arc;

use anyhow::{Context, Result, bail};
use jackin_controller::metrics::{self, Metrics};
use jackin_controller::reconcile::ProgressSink;
use jackin_controller::run_logs;
use jackin_controller::single::ControllerLock;
use jackin_controller::source::Source;
use jackin_controller::{Outcome, Progress, Reconciler, run};

use crate::args::ControllerArgs;
use jackin_controller::engines::{Engines, display_name};

use crate::context::open_store_to_change;

pub async fn run(args: &ControllerArgs, verbose: bool) -> Result<()> {
    let store = open_store_to_change()?;
    // Held until this returns: the life of the loop (or of the one pass).
    let _only_controller = ControllerLock::take(store.layout())?;
    // Engines connect when their instances first need them, so one that
    // is down holds up only its own instances.
    let mut reconciler = Reconciler::new(store, Engines::new(None));
    let metrics = Metrics::new();
    reconciler.progress = progress_lines(metrics.clone(), verbose);
    if args.once {
        return one_pass(&reconciler, args, &metrics).await;
    }
    continuously(reconciler, args, metrics, verbose).await
}

/// What the controller says as it goes. Without -v it still says what it
/// does: a line per action, on stderr. With -v the log says it, in the
/// log's format.
fn progress_lines(timer: Metrics, verbose: bool) -> ProgressSink {
    Arc::new(move |name: &str, event: Progress<'_>| {
        if let Progress::Step(step) = &event {
            timer.step_started(name, step.kind());
            run_logs::step(name, step);
        }
        match event {
            Progress::Step(step) if verbose => {
                tracing::info!(instance = name, "{}", step.describe());
            }
            Progress::Step(step) => eprintln!(
                "{} instance/{name}: {}",
                jiff::Timestamp::now().strftime("%H:%M:%S"),
                step.describe()
            ),
            // A note may name the agent's files (what a discard saved):
            // shown escaped.
            Progress::Note { message, .. } if verbose => {
                tracing::info!(instance = name, "{}", crate::output::terminal_safe(message));
            }
            Progress::Note { stage, message } => eprintln!(
                "{} instance/{name}: [{stage}] {}",
                jiff::Timestamp::now().strftime("%H:%M:%S"),
                crate::output::terminal_safe(message)
            ),
            Progress::Build(line) => tracing::debug!(instance = name, "build: {line}"),
        }
    })
}

/// `--once`: the synced directories, then one pass over every instance,
/// and what it came to; an error when any did not converge.
async fn one_pass(reconciler: &Reconciler, args: &ControllerArgs, metrics: &Metrics) -> Result<()> {
    // The synced directories first, as the continuous loop starts.
    for dir in &args.sync {
        let source = Source::of(std::slice::from_ref(dir))?;
        match reconciler.store.sync_source(&source, &mut None) {
            Some(Ok(applied)) => println!(
                "synced {}: {} object(s), {} pruned",
                dir.display(),
                applied.outcomes.len(),
                applied.pruned.len()
            ),
            Some(Err(e)) => eprintln!(
                "warning: {} applied nothing: {}",
                dir.display(),
                crate::output::terminal_safe_lines(&e.to_string())
            ),
            None => {}
        }
    }
    let rows = reconciler.store.rows()?;
    let before = reconciler.engines.calls();
    let results = reconciler
        .pass(&rows, args.concurrency, |_| true, |_| {})
        .await;
    let calls = reconciler.engines.calls() - before;
    for (name, result) in &results {
        let stepped = metrics.reconciled(name, result);
        run_logs::reconciled(name, result, stepped);
    }
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
    Ok(())
}

/// The continuous loop, with its metrics server when asked for one, until
/// SIGINT or SIGTERM.
async fn continuously(
    reconciler: Reconciler,
    args: &ControllerArgs,
    metrics: Metrics,
    verbose: bool,
) -> Result<()> {
    let options = run::Options {
        concurrency: args.concurrency,
        resync: args.resync,
        sweep: args.sweep,
        sync: args.sync.clone(),
        // A usual scrape interval: the gauge is at most one scrape old.
        attention_every: args
            .metrics_addr
            .as_ref()
            .map(|_| std::time::Duration::from_secs(15)),
        watch_output: args.watch_output,
        ..Default::default()
    };
    let engines = engines_in_use(&reconciler)?;
    let instances = reconciler.store.rows()?.len();
    if verbose {
        tracing::info!(
            ?engines,
            instances,
            concurrency = options.concurrency,
            "controller started"
        );
    } else {
        let engines = match engines.is_empty() {
            true => "default".to_owned(),
            false => engines.join(", "),
        };
        eprintln!(
            "jackin controller: watching {instances} instance(s) on engine(s) {engines}; resync \
             every {}s, {} at once; a line per action follows (-v logs more)",
            options.resync.as_secs(),
            options.concurrency
        );
    }
    // Bound before the loop starts, so that a taken port stops the command.
    let server = match &args.metrics_addr {
        Some(addr) => {
            let listener = metrics::bind(addr)
                .await
                .with_context(|| format!("--metrics-addr {addr}"))?;
            let bound = listener.local_addr()?;
            eprintln!("jackin controller: serving http://{bound}/metrics, /healthz and /readyz");
            // Ticks come every store poll: many missed in a row is a loop
            // that is stuck.
            let stale = (options.store_poll * 15).max(std::time::Duration::from_secs(30));
            Some(tokio::spawn(metrics::serve(
                listener,
                metrics.clone(),
                stale,
            )))
        }
        None => None,
    };
    run::run(reconciler, options, metrics, shutdown_signal()).await;
    if let Some(server) = server {
        server.abort();
    }
    Ok(())
}

/// The engines the instances run on, as names.
fn engines_in_use(reconciler: &Reconciler) -> Result<Vec<String>> {
    let mut names: Vec<String> = reconciler
        .store
        .rows()?
        .iter()
        .map(|r| display_name(r.engine.as_deref()).to_owned())
        .collect();
    names.sort();
    names.dedup();
    Ok(names)
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
