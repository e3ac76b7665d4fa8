//! `jackin controller`: the convergence loop, running continuously.
//!
//! Work arrives from three watches, each of which only enqueues names (the
//! engine's event stream drops events under load, so an event is a hint to
//! look, never a fact to act on):
//!
//! - the event stream of each engine the instances run on, filtered by our
//!   labels and this home's (the events of another home sharing the engine
//!   are not ours); a watch starts when an instance first names its engine
//!   and stops when none does. After a reconnect, every instance of that
//!   engine is looked at again, since events may have been missed. A
//!   container's ending (`die`, `stop`, `kill`, `oom`) is looked at again a
//!   moment later too: the engine may still list it as running when the
//!   event arrives. Events that change nothing a reconcile looks at (an
//!   `exec` in the container, such as the idle watch's probe, an attach, a
//!   resize) hint nothing;
//! - the store: a new instance, or one whose operator-owned parts (the
//!   generation, which moves with the spec, labels and annotations) changed.
//!   jackin's own status writes are not changes;
//! - a periodic resync pass over every instance from one engine snapshot.
//!
//! The sweeps (`sweep.rs`) run at start and then on a slower cadence. Each
//! synced directory (`--sync DIR`) is checked on the store's cadence and
//! applied with prune when its files or its git revision change
//! (`source.rs`); the instances that changes concern are looked at at once.
//! The idle watch (`idle.rs`) runs the idle hooks of workspaces that opted
//! in.
//!
//! Workers take names from the queue (never two reconciles of one instance at
//! once; the unit lock also keeps a second process out), bounded by the
//! concurrency limit. A failed reconcile is retried with exponential backoff
//! and jitter, reset by success. While an instance backs off, hints (events,
//! resyncs) wait for its retry time; only a change by the operator looks at
//! it at once, and resets its backoff.

use std::collections::{BTreeSet, HashMap};
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime};

use futures::StreamExt;
use jackin_api::instance::InstancePhase;
use jackin_api::names::label;
use jackin_engine::models::EventMessage;
use jackin_files::fsutil::read_untrusted;
use jackin_files::layout::cap;
use tokio::sync::Semaphore;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::backoff;
use crate::engines::{EngineName, display_name};
use crate::failure::{ReconcileError, Retry};
use crate::index::IndexRow;
use crate::metrics::Metrics;
use crate::queue::Queue;
use crate::reconcile::{Outcome, Reconciler};
use crate::source::Source;
use crate::sweep;

#[derive(Debug, Clone)]
pub struct Options {
    /// Reconciles running at once.
    pub concurrency: usize,
    /// How often every instance is looked at regardless of events.
    pub resync: Duration,
    /// How often the store is checked for changed objects.
    pub store_poll: Duration,
    /// The longest wait between retries of a failing instance.
    pub max_backoff: Duration,
    /// How often the sweeps run (the first time at start).
    pub sweep: Duration,
    /// Directories kept applied, with prune.
    pub sync: Vec<std::path::PathBuf>,
    /// How often the controller's looks sample every running container's
    /// counters for the metrics (`jackin_instances_by_attention`); `None`
    /// when nobody serves them, and then the looks read output only.
    pub attention_every: Option<Duration>,
    /// Look at every running container's output through live watchers and
    /// publish each look for `get -o wide` (`published_looks`), whether or
    /// not the metrics are served (with them, the looks run anyway).
    pub watch_output: bool,
}

impl Default for Options {
    fn default() -> Self {
        Self {
            concurrency: crate::converge::DEFAULT_CONCURRENCY,
            resync: Duration::from_secs(300),
            store_poll: Duration::from_secs(2),
            max_backoff: Duration::from_secs(300),
            sweep: Duration::from_secs(600),
            sync: Vec::new(),
            attention_every: None,
            watch_output: false,
        }
    }
}

type Delays = Box<dyn Iterator<Item = Duration> + Send>;

/// A failing instance's retry schedule.
struct Backoff {
    delays: Delays,
    /// Not looked at again before this, unless the operator changes it.
    retry_at: Instant,
}

/// Shared by the watches and the workers.
struct Shared {
    reconciler: Reconciler,
    queue: Queue,
    options: Options,
    backoffs: Mutex<HashMap<String, Backoff>>,
    metrics: Metrics,
}

/// The index rows, read again only when the index file changed: a watch
/// that polls every few seconds over hundreds of instances should not parse
/// them each time.
#[derive(Default)]
struct CachedRows {
    /// The index file's modification time and length when last read.
    seen: Option<(SystemTime, u64)>,
    rows: Vec<IndexRow>,
}

impl CachedRows {
    /// The rows, and whether the index changed since the last call.
    fn get(&mut self, store: &crate::Store) -> Result<(&[IndexRow], bool), crate::StoreError> {
        let stamp = std::fs::metadata(store.layout().index_file())
            .ok()
            .and_then(|m| Some((m.modified().ok()?, m.len())));
        let changed = stamp.is_none() || stamp != self.seen;
        if changed {
            self.rows = store.rows()?;
            self.seen = stamp;
        }
        Ok((&self.rows, changed))
    }
}

/// The engine actions that end a container's run.
const ENDINGS: [&str; 4] = ["die", "stop", "kill", "oom"];

/// How long after a start's grace period the loop looks at it: the
/// wrapper's clock counts whole seconds.
const AFTER_THE_GRACE_PERIOD: Duration = Duration::from_secs(1);

/// When a container's ending is looked at again, after the event.
const LOOK_AGAIN: [Duration; 2] = [Duration::from_secs(1), Duration::from_secs(4)];

/// Container events that change nothing a reconcile looks at (beside
/// `exec_*`): the engine's names for attaching, resizing, listing
/// processes and copying files.
const UNCHANGING: [&str; 9] = [
    "attach",
    "detach",
    "resize",
    "top",
    "copy",
    "archive-path",
    "extract-to-dir",
    "export",
    "commit",
];

impl Shared {
    /// An engine event: the instance it concerns is looked at now, and a
    /// container's ending again a moment later (the engine may still list
    /// it as running when the event arrives).
    fn on_event(self: &Arc<Self>, event: EventMessage) {
        let attributes = event.actor.and_then(|a| a.attributes);
        let Some(name) = attributes.as_ref().and_then(|a| a.get(label::INSTANCE)) else {
            return;
        };
        let action = event.action.unwrap_or_default();
        // A command run in the container (`exec_create: sh -c …`: the idle
        // watch's probe at each look, the idle hooks, `jackin exec`), a
        // terminal attached, detached or resized (a person, or a watcher's
        // stream and its redraw nudge: two resizes per container it opens),
        // and a look at its processes or files change nothing a reconcile
        // looks at.
        if action.starts_with("exec_") || UNCHANGING.contains(&action.as_str()) {
            return;
        }
        tracing::debug!(instance = %name, action, "engine event");
        self.hint(name);
        if ENDINGS.contains(&action.as_str()) {
            for after in LOOK_AGAIN {
                let (shared, name) = (self.clone(), name.clone());
                tokio::spawn(async move {
                    tokio::time::sleep(after).await;
                    shared.hint(&name);
                });
            }
        }
    }

    /// A start still in its grace period may yet fall back: the instance
    /// is looked at again just after it, so that its status says how the
    /// agent started then, not a pass later (defect R13).
    async fn look_when_the_start_settles(&self, name: &str) {
        let store = self.reconciler.store.clone();
        let owned = name.to_owned();
        let settles = jackin_files::offload::blocking(move || store.get_instance(&owned))
            .await
            .ok()
            .and_then(|obj| obj.status?.conversation?.start_settles_at);
        let Some(settles) = settles else {
            return;
        };
        let wait = jiff::Timestamp::now().duration_until(settles);
        let Ok(wait) = Duration::try_from(wait) else {
            // Past already: a pass with nothing else to do looks at it.
            return;
        };
        self.queue
            .enqueue(name, Instant::now() + wait + AFTER_THE_GRACE_PERIOD);
    }

    /// Every instance of one engine.
    fn enqueue_engine(&self, engine: &EngineName) {
        match self.reconciler.store.rows() {
            Ok(rows) => {
                for row in rows.iter().filter(|r| &r.engine == engine) {
                    self.hint(&row.name);
                }
            }
            Err(e) => tracing::error!("cannot read the index: {e}"),
        }
    }

    fn enqueue_all(&self) {
        match self.reconciler.store.rows() {
            Ok(rows) => {
                for row in rows {
                    self.hint(&row.name);
                }
            }
            Err(e) => tracing::error!("cannot read the index: {e}"),
        }
    }

    /// Something may have happened to `name`: look at it now, or when its
    /// backoff allows.
    fn hint(&self, name: &str) {
        let now = Instant::now();
        let at = match self.backoffs.lock().expect("backoff lock").get(name) {
            Some(backoff) => backoff.retry_at.max(now),
            None => now,
        };
        self.queue.enqueue(name, at);
    }

    /// The operator changed `name`: whatever failed before may work now.
    fn changed(&self, name: &str) {
        self.backoffs.lock().expect("backoff lock").remove(name);
        self.queue.enqueue(name, Instant::now());
    }

    /// Records a reconcile's result: success resets the instance's backoff,
    /// failure schedules the next attempt, unless the loop gave up on it.
    fn record(&self, name: &str, result: &Result<Outcome, ReconcileError>) {
        let stepped = self.metrics.reconciled(name, result);
        crate::run_logs::reconciled(name, result, stepped);
        let mut backoffs = self.backoffs.lock().expect("backoff lock");
        match result {
            Ok(outcome) => {
                backoffs.remove(name);
                match outcome {
                    Outcome::Converged {
                        tier: Some(tier), ..
                    } => tracing::info!(instance = name, tier = tier.number(), "restored"),
                    Outcome::Gone => tracing::info!(instance = name, "purged"),
                    Outcome::PurgedWithoutEngine { .. } => {
                        tracing::info!(instance = name, "{outcome}");
                    }
                    Outcome::Absent => tracing::debug!(instance = name, "no such instance"),
                    _ => tracing::debug!(instance = name, ?outcome, "reconciled"),
                }
            }
            // Given up on: not tried again until the operator changes the
            // spec or resumes it (the store watch sees that), whatever the
            // engine's events or the resync say meanwhile.
            Err(e) if e.retry() == Retry::OnChange => {
                backoffs.remove(name);
                match e {
                    ReconcileError::GaveUp { now: false, .. } => {
                        tracing::debug!(instance = name, "given up on, not tried: {e}");
                    }
                    _ => tracing::warn!(instance = name, "reconcile failed, the last try: {e}"),
                }
            }
            Err(e) => {
                let now = Instant::now();
                let backoff = backoffs.entry(name.to_owned()).or_insert_with(|| Backoff {
                    delays: Box::new(backoff::delays(self.options.max_backoff)),
                    retry_at: now,
                });
                let delay = backoff.delays.next().unwrap_or(self.options.max_backoff);
                backoff.retry_at = now + delay;
                tracing::warn!(instance = name, retry_in = ?delay, "reconcile failed: {e}");
                self.queue.reschedule(name, backoff.retry_at);
            }
        }
    }
}

/// Runs until `shutdown` completes, then lets in-flight reconciles finish.
/// What it does is told to `metrics`.
pub async fn run(
    reconciler: Reconciler,
    options: Options,
    metrics: Metrics,
    shutdown: impl Future<Output = ()>,
) {
    let shared = Arc::new(Shared {
        reconciler,
        queue: Queue::default(),
        options,
        backoffs: Mutex::default(),
        metrics,
    });
    let rows = shared.reconciler.store.rows().unwrap_or_default();
    shared
        .metrics
        .first_pass_of(rows.into_iter().map(|r| r.name));
    shared.enqueue_all();
    let mut watches = vec![
        tokio::spawn(tick(shared.clone())),
        tokio::spawn(watch_engines(shared.clone())),
        tokio::spawn(watch_store(shared.clone())),
        tokio::spawn(resync(shared.clone())),
        tokio::spawn(sweeps(shared.clone())),
    ];
    for dir in shared.options.sync.clone() {
        watches.push(tokio::spawn(sync(shared.clone(), dir)));
    }
    if shared.options.attention_every.is_some() || shared.options.watch_output {
        watches.push(tokio::spawn(looks(shared.clone())));
    }
    let idle_shared = shared.clone();
    watches.push(tokio::spawn(crate::idle::watch(
        shared.reconciler.clone(),
        shared.metrics.clone(),
        move |name| idle_shared.changed(name),
    )));
    watches.push(tokio::spawn(crate::notify::watch(
        shared.reconciler.clone(),
    )));
    let workers = tokio::spawn(work(shared.clone()));
    shutdown.await;
    tracing::info!("shutting down: waiting for running reconciles");
    for watch in &watches {
        watch.abort();
    }
    shared.queue.close();
    let _ = workers.await;
    tracing::info!("stopped");
}

async fn work(shared: Arc<Shared>) {
    let permits = Arc::new(Semaphore::new(shared.options.concurrency.max(1)));
    let mut running = JoinSet::new();
    while let Some(name) = shared.queue.next().await {
        let permit = permits.clone().acquire_owned().await.expect("never closed");
        let shared = shared.clone();
        running.spawn(async move {
            let result = shared.reconciler.reconcile(&name, None).await;
            // Recorded while still running, so that a failure's retry time
            // replaces what arrived meanwhile before the name is handed out.
            shared.record(&name, &result);
            if let Ok(Outcome::Converged {
                phase: InstancePhase::Running,
                ..
            }) = result
            {
                shared.look_when_the_start_settles(&name).await;
            }
            shared.queue.done(&name);
            drop(permit);
        });
        // Reap finished tasks as we go.
        while running.try_join_next().is_some() {}
    }
    while running.join_next().await.is_some() {}
}

/// Keeps one event watch per engine that instances run on: one starts when
/// an instance first names an engine, and stops (its connection dropped)
/// when no instance names it any more.
async fn watch_engines(shared: Arc<Shared>) {
    let mut watching: HashMap<EngineName, tokio::task::JoinHandle<()>> = HashMap::new();
    let mut rows = CachedRows::default();
    loop {
        match rows.get(&shared.reconciler.store) {
            Ok((rows, _)) => {
                let in_use: BTreeSet<EngineName> = rows.iter().map(|r| r.engine.clone()).collect();
                watching.retain(|name, watch| {
                    let keep = in_use.contains(name);
                    if !keep {
                        tracing::info!(
                            engine = display_name(name.as_deref()),
                            "no instance runs on the engine any more; its watch stops"
                        );
                        watch.abort();
                        shared.reconciler.engines.forget(name);
                        shared.metrics.engine_gone(display_name(name.as_deref()));
                    }
                    keep
                });
                for name in in_use {
                    if let std::collections::hash_map::Entry::Vacant(entry) = watching.entry(name) {
                        let name = entry.key().clone();
                        // Not ready until its watch's first look answers.
                        shared.metrics.engine(display_name(name.as_deref()), false);
                        entry.insert(tokio::spawn(watch_events(shared.clone(), name)));
                    }
                }
            }
            Err(e) => tracing::error!("cannot read the index: {e}"),
        }
        tokio::time::sleep(shared.options.store_poll).await;
    }
}

/// Enqueues the instances of one engine as its events arrive; reconnects
/// with backoff when the stream ends or the engine cannot be reached, and
/// then looks at every instance of that engine, since events may have been
/// missed meanwhile.
async fn watch_events(shared: Arc<Shared>, engine_name: EngineName) {
    let shown = display_name(engine_name.as_deref()).to_owned();
    let layout = shared.reconciler.store.layout();
    let home_id = match layout.home_id_or_create(&uuid::Uuid::new_v4().simple().to_string()) {
        Ok(id) => id,
        Err(e) => {
            tracing::error!("cannot read this home's id, so engine events are not watched: {e}");
            return;
        }
    };
    let filter = [(label::MANAGED, "true"), (label::HOME, home_id.as_str())];
    let mut delays = backoff::delays(Duration::from_secs(30));
    let mut first = true;
    loop {
        let answered = match shared.reconciler.engines.get(engine_name.as_deref()).await {
            // A connection made before says nothing of the engine now: a
            // look at this home's containers does.
            Ok(connected) => match connected.engine.list_containers(&filter).await {
                Ok(_) => Ok(connected),
                Err(e) => Err(e),
            },
            Err(e) => Err(e),
        };
        shared.metrics.engine(&shown, answered.is_ok());
        match answered {
            Ok(connected) => {
                if !first {
                    // Events may have been missed while disconnected.
                    tracing::info!(
                        engine = shown,
                        "event stream reconnecting; looking at its instances again"
                    );
                    shared.enqueue_engine(&engine_name);
                }
                let mut events = connected.engine.events(&filter);
                while let Some(event) = events.next().await {
                    match event {
                        Ok(event) => {
                            delays = backoff::delays(Duration::from_secs(30));
                            shared.on_event(event);
                        }
                        Err(e) => {
                            shared.metrics.engine(&shown, false);
                            tracing::warn!(engine = shown, "engine event stream failed: {e}");
                            break;
                        }
                    }
                }
            }
            Err(e) => tracing::warn!(engine = shown, "cannot connect to the engine: {e}"),
        }
        first = false;
        let delay = delays.next().unwrap_or(Duration::from_secs(30));
        tokio::time::sleep(delay).await;
    }
}

/// What of an object the operator owns: a change in it is a change to act
/// on at once. The status (jackin's) is left out, so a status write never
/// wakes the loop.
fn operator_fingerprint(path: &std::path::Path) -> Option<String> {
    let bytes = read_untrusted(path, cap::OBJECT).ok()?;
    let obj: serde_json::Value = serde_json::from_slice(&bytes).ok()?;
    let meta = &obj["metadata"];
    Some(format!(
        "{}|{}|{}",
        meta["generation"], meta["labels"], meta["annotations"]
    ))
}

/// Polls the index for new instances, and the object files for changes by
/// the operator (checked only when a file's mtime moved).
async fn watch_store(shared: Arc<Shared>) {
    let layout = shared.reconciler.store.layout();
    let modified = |path: &std::path::Path| std::fs::metadata(path).and_then(|m| m.modified()).ok();
    // What is there at start was looked at by the first pass already: only
    // what changes from now on is a change.
    let mut seen: HashMap<String, (Option<SystemTime>, Option<String>)> = shared
        .reconciler
        .store
        .rows()
        .unwrap_or_default()
        .into_iter()
        .map(|row| {
            let path = layout.object_file(&row.container_name);
            (row.name, (modified(&path), operator_fingerprint(&path)))
        })
        .collect();
    let mut cached = CachedRows::default();
    loop {
        tokio::time::sleep(shared.options.store_poll).await;
        // Every change of the operator's moves the index (its revision):
        // while it stands still there is nothing to look for.
        let Ok((rows, true)) = cached.get(&shared.reconciler.store) else {
            continue;
        };
        let mut current = HashMap::with_capacity(rows.len());
        for row in rows.iter().cloned() {
            let path = layout.object_file(&row.container_name);
            let mtime = modified(&path);
            let entry = match seen.remove(&row.name) {
                Some((before, fingerprint)) if before == mtime => (mtime, fingerprint),
                Some((_, before)) => {
                    let fingerprint = operator_fingerprint(&path);
                    if fingerprint != before {
                        shared.changed(&row.name);
                    }
                    (mtime, fingerprint)
                }
                None => {
                    shared.changed(&row.name);
                    (mtime, operator_fingerprint(&path))
                }
            };
            current.insert(row.name, entry);
        }
        seen = current;
    }
}

/// The sweeps, at start and then on their slower cadence. Instances whose
/// rows were corrected are reconciled right away.
async fn sweeps(shared: Arc<Shared>) {
    loop {
        let store = &shared.reconciler.store;
        match sweep::sweep(store, &shared.reconciler.engines, sweep::Options::default()).await {
            Ok(findings) => {
                for finding in findings {
                    tracing::warn!("sweep: {}", finding.describe(false));
                    if let Some(name) = finding.instance_to_reconcile() {
                        shared.hint(name);
                    }
                }
            }
            Err(e) => tracing::warn!("sweep failed: {e}"),
        }
        tokio::time::sleep(shared.options.sweep).await;
    }
}

/// Keeps `dir` applied with prune. An attempt that fails (an invalid file,
/// a refused object) applies nothing and is recorded; the next change of
/// the files tries again.
async fn sync(shared: Arc<Shared>, dir: std::path::PathBuf) {
    let mut seen = None;
    loop {
        let store = shared.reconciler.store.clone();
        let (path, mut last) = (dir.clone(), seen.take());
        let (result, last, revision) = jackin_files::offload::blocking(move || {
            let result = match Source::of(std::slice::from_ref(&path)) {
                Ok(source) => store.sync_source(&source, &mut last),
                Err(e) => Some(Err(e)),
            };
            let revision = match &result {
                Some(Ok(_)) => crate::source::revision(&path),
                _ => None,
            };
            (result, last, revision)
        })
        .await;
        seen = last;
        match result {
            None => {}
            Some(Ok(applied)) => {
                let shown = dir.display().to_string();
                shared.metrics.source_applied(&shown, revision.as_deref());
                tracing::info!(
                    target: crate::run_logs::TARGET,
                    source = shown,
                    revision,
                    objects = applied.outcomes.len(),
                    pruned = applied.pruned.len(),
                    "synced"
                );
                tracing::info!(
                    dir = %dir.display(),
                    objects = applied.outcomes.len(),
                    pruned = applied.pruned.len(),
                    "synced"
                );
                for name in applied.changed_instances() {
                    shared.changed(&name);
                }
            }
            Some(Err(e)) => {
                // Its text quotes the files: it stays out of the run log.
                tracing::warn!(
                    target: crate::run_logs::TARGET,
                    source = %dir.display(),
                    "sync applied nothing"
                );
                tracing::warn!(dir = %dir.display(), "sync applied nothing: {e}");
            }
        }
        tokio::time::sleep(shared.options.store_poll).await;
    }
}

/// The loop's heartbeat: the instances by phase and the queue's depth,
/// told to the metrics on the store's cadence. `/healthz` fails when it
/// stops.
async fn tick(shared: Arc<Shared>) {
    let mut rows = CachedRows::default();
    loop {
        match rows.get(&shared.reconciler.store) {
            Ok((rows, _)) => shared.metrics.set_instances(rows),
            Err(e) => tracing::error!("cannot read the index: {e}"),
        }
        shared.metrics.tick(shared.queue.depth());
        tokio::time::sleep(shared.options.store_poll).await;
    }
}

/// The controller's looks at every instance (`attention::look`): each
/// running one's output stream, opened once and kept, so that a look makes
/// one listing call per engine and none per container. Each look is
/// published for one-shot readers (`published_looks`: `get -o wide` then
/// reads it instead of one log call per running instance) and, when the
/// metrics are served (`metrics_every`), counted for them, with one stats
/// call per running instance at most every `metrics_every` (the counters
/// compare with the previous sample's, so CPU or writes since then make an
/// agent `working`). A look comes every 2 s, or less often with many
/// running (`attention::look_every`).
async fn looks(shared: Arc<Shared>) {
    let metrics_every = shared.options.attention_every;
    let mut looks = HashMap::new();
    let mut sampled: Option<Instant> = None;
    let live = crate::live_output::LiveOutputs::default();
    let layout = shared.reconciler.store.layout().clone();
    // Held while this loop lives: readers trust the published look only
    // then. Without it the look is not published at all.
    let publisher =
        jackin_files::offload::blocking(move || crate::published_looks::Publisher::take(&layout))
            .await
            .map_err(|e| {
                tracing::warn!("cannot publish the controller's look for `get -o wide`: {e}");
            })
            .ok();
    loop {
        let store = shared.reconciler.store.clone();
        let objects = jackin_files::offload::blocking(move || {
            store
                .list_instances()
                .map(|l| l.instances)
                .unwrap_or_default()
        })
        .await;
        let stats =
            metrics_every.is_some_and(|every| sampled.is_none_or(|at| at.elapsed() >= every));
        looks =
            crate::attention::look(&shared.reconciler, &objects, stats, &looks, Some(&live)).await;
        if stats {
            sampled = Some(Instant::now());
        }
        if metrics_every.is_some() {
            shared
                .metrics
                .set_attention(&crate::metrics::attention_counts(looks.values()));
        }
        let running = objects
            .iter()
            .filter(|o| o.phase() == Some(InstancePhase::Running))
            .count();
        let every = crate::attention::look_every(running);
        if publisher.is_some() {
            publish(&shared, &looks, every).await;
        }
        tokio::time::sleep(every).await;
    }
}

/// Publishes `looks` for one-shot readers (`published_looks`).
async fn publish(
    shared: &Shared,
    looks: &HashMap<String, crate::attention::Look>,
    every: Duration,
) {
    let published = crate::published_looks::from_looks(looks, every, jiff::Timestamp::now());
    let layout = shared.reconciler.store.layout().clone();
    let written = jackin_files::offload::blocking(move || {
        crate::published_looks::publish(&layout, &published)
    })
    .await;
    if let Err(e) = written {
        tracing::warn!("cannot publish the controller's look for `get -o wide`: {e}");
    }
}

async fn resync(shared: Arc<Shared>) {
    loop {
        tokio::time::sleep(shared.options.resync).await;
        let rows = match shared.reconciler.store.rows() {
            Ok(rows) => rows,
            Err(e) => {
                tracing::error!("resync: cannot read the index: {e}");
                continue;
            }
        };
        let before = shared.reconciler.engines.calls();
        let started = Instant::now();
        let results = shared
            .reconciler
            .pass(
                &rows,
                shared.options.concurrency,
                |n| shared.queue.try_claim(n),
                |n| shared.queue.done(n),
            )
            .await;
        shared.metrics.pass(started.elapsed());
        for (name, result) in &results {
            shared.record(name, result);
        }
        tracing::info!(
            instances = results.len(),
            engine_calls = shared.reconciler.engines.calls().saturating_sub(before),
            "resync pass complete"
        );
    }
}
