//! The controller's metrics, health and readiness, served over HTTP when
//! `jackin controller --metrics-addr` asks: `/metrics` in the Prometheus
//! text format (0.0.4), `/healthz` and `/readyz`.
//!
//! The loop holds a [`Metrics`] handle (cheap to clone, shared by its
//! watches and workers) and tells it what happened; nothing here reads the
//! store or the engines itself. The exposition is `prometheus-client`'s.
//!
//! `/healthz` answers while the loop ticks (a task of the loop sets the
//! phase gauges and the queue depth from the cached index at every store
//! poll); `/readyz` once the first pass is done and every engine in use
//! answered its last look. The server is hyper's HTTP/1, one task per
//! connection and a bounded number at once, each with a deadline for its
//! headers and for its whole request, so that connections that say
//! nothing cannot hold up a probe. Nothing of a request is read but its
//! path.
//!
//! | Metric | Type | What it counts |
//! |---|---|---|
//! | `jackin_instances{phase}` | gauge | instances by observed phase (`Pending` before the first look) |
//! | `jackin_instances_by_attention{attention}` | gauge | instances by attention |
//! | `jackin_reconciles_total{result}` | counter | reconciles by how they ended |
//! | `jackin_reconcile_errors_total{reason}` | counter | failed reconciles by condition reason |
//! | `jackin_queue_depth` | gauge | instances waiting in the queue (due now or later) |
//! | `jackin_pass_duration_seconds` | histogram | resync passes over every instance |
//! | `jackin_step_duration_seconds{step}` | histogram | plan steps, by kind |
//! | `jackin_engine_up{engine}` | gauge | 1 when the engine answered its last look, else 0 |
//! | `jackin_idle_hook_runs_total{result}` | counter | idle hook runs, `ok` or `failed` |
//! | `jackin_source_info{source,revision}` | gauge | 1 for each synced directory's applied revision |
//! | `jackin_first_pass_done` | gauge | 1 once every instance present at start was reconciled |

use std::collections::{BTreeMap, HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use http_body_util::Full;
use hyper::body::{Bytes, Incoming};
use hyper::{Request, Response, StatusCode};
use jackin_api::InstancePhase;
use jackin_api::names::reason;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

use crate::attention::Look;
use crate::failure::ReconcileError;
use crate::index::IndexRow;
use crate::reconcile::Outcome;
use jackin_plan::attention::Attention;

/// Every phase, so that each has a sample (0 included) from the start.
const PHASES: [InstancePhase; 8] = [
    InstancePhase::Pending,
    InstancePhase::Launching,
    InstancePhase::Running,
    InstancePhase::Exited,
    InstancePhase::Crashed,
    InstancePhase::Kept,
    InstancePhase::Purging,
    InstancePhase::Failed,
];

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct PhaseLabel {
    phase: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct AttentionLabel {
    attention: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ResultLabel {
    result: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabel {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StepLabel {
    step: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct EngineLabel {
    engine: String,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct SourceLabel {
    source: String,
    revision: String,
}

/// The metrics and the loop's liveness; clones share them.
#[derive(Clone)]
pub struct Metrics {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    started: Instant,
    instances: Family<PhaseLabel, Gauge>,
    attention: Family<AttentionLabel, Gauge>,
    reconciles: Family<ResultLabel, Counter>,
    errors: Family<ReasonLabel, Counter>,
    queue_depth: Gauge,
    pass_duration: Histogram,
    step_duration: Family<StepLabel, Histogram, fn() -> Histogram>,
    engine_up: Family<EngineLabel, Gauge>,
    idle_hooks: Family<ResultLabel, Counter>,
    source: Family<SourceLabel, Gauge>,
    first_pass: Gauge,
    /// Milliseconds since `started` at the loop's last tick.
    last_tick: AtomicU64,
    /// The instances present at start not yet reconciled: the first pass
    /// is done when none is left.
    first_pass_left: Mutex<Option<HashSet<String>>>,
    /// Each engine in use, and whether it answered its last look.
    engines: Mutex<BTreeMap<String, bool>>,
    /// The step each instance is in, and since when.
    steps: Mutex<HashMap<String, (&'static str, Instant)>>,
    /// The revision last seen of each synced directory.
    sources: Mutex<HashMap<String, String>>,
}

/// Seconds from a few milliseconds (a no-op step) to some twenty minutes
/// (a role's first build).
fn duration_buckets() -> impl Iterator<Item = f64> {
    exponential_buckets(0.005, 4.0, 10)
}

impl Default for Metrics {
    fn default() -> Self {
        Self::new()
    }
}

impl Metrics {
    pub fn new() -> Self {
        let mut registry = Registry::with_prefix("jackin");
        let instances = Family::<PhaseLabel, Gauge>::default();
        registry.register(
            "instances",
            "Instances by observed phase (Pending before the first look)",
            instances.clone(),
        );
        let attention = Family::<AttentionLabel, Gauge>::default();
        registry.register(
            "instances_by_attention",
            "Instances by attention (working, needs-you, idle, ended, failed, kept)",
            attention.clone(),
        );
        let reconciles = Family::<ResultLabel, Counter>::default();
        registry.register(
            "reconciles",
            "Reconciles by how they ended",
            reconciles.clone(),
        );
        let errors = Family::<ReasonLabel, Counter>::default();
        registry.register(
            "reconcile_errors",
            "Failed reconciles by the reason their condition gives",
            errors.clone(),
        );
        let queue_depth = Gauge::default();
        registry.register(
            "queue_depth",
            "Instances waiting in the work queue, due now or later",
            queue_depth.clone(),
        );
        let pass_duration = Histogram::new(duration_buckets());
        registry.register(
            "pass_duration_seconds",
            "Resync passes over every instance",
            pass_duration.clone(),
        );
        let step_duration: Family<StepLabel, Histogram, fn() -> Histogram> =
            Family::new_with_constructor(|| Histogram::new(duration_buckets()));
        registry.register(
            "step_duration_seconds",
            "Plan steps by kind, from their start to the next step or the end",
            step_duration.clone(),
        );
        let engine_up = Family::<EngineLabel, Gauge>::default();
        registry.register(
            "engine_up",
            "1 when the engine answered its last look, 0 when it did not",
            engine_up.clone(),
        );
        let idle_hooks = Family::<ResultLabel, Counter>::default();
        registry.register(
            "idle_hook_runs",
            "Idle hook runs by result (ok or failed)",
            idle_hooks.clone(),
        );
        let source = Family::<SourceLabel, Gauge>::default();
        registry.register(
            "source_info",
            "1 for the revision each synced directory last applied",
            source.clone(),
        );
        let first_pass = Gauge::default();
        registry.register(
            "first_pass_done",
            "1 once every instance present at start was reconciled",
            first_pass.clone(),
        );
        let metrics = Self {
            inner: Arc::new(Inner {
                registry,
                started: Instant::now(),
                instances,
                attention,
                reconciles,
                errors,
                queue_depth,
                pass_duration,
                step_duration,
                engine_up,
                idle_hooks,
                source,
                first_pass,
                last_tick: AtomicU64::new(0),
                first_pass_left: Mutex::new(None),
                engines: Mutex::default(),
                steps: Mutex::default(),
                sources: Mutex::default(),
            }),
        };
        metrics.set_instances(&[]);
        metrics
    }

    /// The loop is alive: called on each of its ticks, with the queue's depth.
    pub fn tick(&self, queue_depth: usize) {
        let inner = &self.inner;
        let now = u64::try_from(inner.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        inner.last_tick.store(now, Ordering::Relaxed);
        inner
            .queue_depth
            .set(i64::try_from(queue_depth).unwrap_or(i64::MAX));
    }

    /// How long ago the loop last ticked.
    fn since_tick(&self) -> Duration {
        let at = Duration::from_millis(self.inner.last_tick.load(Ordering::Relaxed));
        self.inner.started.elapsed().saturating_sub(at)
    }

    /// The instances by phase, from the index.
    pub fn set_instances(&self, rows: &[IndexRow]) {
        let mut counts: HashMap<InstancePhase, i64> = HashMap::new();
        for row in rows {
            *counts
                .entry(row.phase.unwrap_or(InstancePhase::Pending))
                .or_default() += 1;
        }
        for phase in PHASES {
            let label = PhaseLabel {
                phase: phase.as_str(),
            };
            let count = counts.get(&phase).copied().unwrap_or(0);
            self.inner.instances.get_or_create(&label).set(count);
        }
    }

    /// The instances by attention, as the loop counts them: each value
    /// present gets its count, and values no longer present are dropped.
    pub fn set_attention(&self, counts: &BTreeMap<String, i64>) {
        self.inner.attention.clear();
        for (attention, count) in counts {
            let label = AttentionLabel {
                attention: attention.clone(),
            };
            self.inner.attention.get_or_create(&label).set(*count);
        }
    }

    /// The instances the first pass must reconcile; none makes it done.
    pub fn first_pass_of(&self, names: impl IntoIterator<Item = String>) {
        let names: HashSet<String> = names.into_iter().collect();
        let done = names.is_empty();
        *self.inner.first_pass_left.lock().expect("never poisoned") = Some(names);
        if done {
            self.inner.first_pass.set(1);
        }
    }

    /// A reconcile of `name` ended so; returns whether it took a step.
    pub fn reconciled(&self, name: &str, result: &Result<Outcome, ReconcileError>) -> bool {
        let acted = self.step_ended(name);
        let label = ResultLabel {
            result: match result {
                Ok(Outcome::Converged { .. }) => "converged",
                Ok(Outcome::Gone | Outcome::PurgedWithoutEngine { .. }) => "purged",
                Ok(Outcome::Absent) => "absent",
                Ok(Outcome::Blocked { .. }) => "blocked",
                Err(ReconcileError::GaveUp { now: false, .. }) => "given-up",
                Err(_) => "failed",
            },
        };
        self.inner.reconciles.get_or_create(&label).inc();
        if let Err(e) = result
            && !matches!(e, ReconcileError::GaveUp { now: false, .. })
        {
            let label = ReasonLabel {
                reason: error_reason(e),
            };
            self.inner.errors.get_or_create(&label).inc();
        }
        let mut left = self.inner.first_pass_left.lock().expect("never poisoned");
        if let Some(names) = left.as_mut()
            && names.remove(name)
            && names.is_empty()
        {
            self.inner.first_pass.set(1);
        }
        acted
    }

    /// `name` starts a step of `kind`: the step it was in (if any) ends.
    pub fn step_started(&self, name: &str, kind: &'static str) {
        let previous = self
            .inner
            .steps
            .lock()
            .expect("never poisoned")
            .insert(name.to_owned(), (kind, Instant::now()));
        if let Some((kind, since)) = previous {
            self.observe_step(kind, since);
        }
    }

    /// `name`'s reconcile ended: the step it was in (if any) ends too.
    fn step_ended(&self, name: &str) -> bool {
        let ended = self
            .inner
            .steps
            .lock()
            .expect("never poisoned")
            .remove(name);
        if let Some((kind, since)) = ended {
            self.observe_step(kind, since);
        }
        ended.is_some()
    }

    fn observe_step(&self, kind: &'static str, since: Instant) {
        self.inner
            .step_duration
            .get_or_create(&StepLabel { step: kind })
            .observe(since.elapsed().as_secs_f64());
    }

    /// A resync pass took `took`.
    pub fn pass(&self, took: Duration) {
        self.inner.pass_duration.observe(took.as_secs_f64());
    }

    /// Whether the engine `name` answered its last look.
    pub fn engine(&self, name: &str, up: bool) {
        let label = EngineLabel {
            engine: name.to_owned(),
        };
        self.inner
            .engine_up
            .get_or_create(&label)
            .set(i64::from(up));
        self.inner
            .engines
            .lock()
            .expect("never poisoned")
            .insert(name.to_owned(), up);
    }

    /// No instance uses the engine `name` any more.
    pub fn engine_gone(&self, name: &str) {
        let label = EngineLabel {
            engine: name.to_owned(),
        };
        self.inner.engine_up.remove(&label);
        self.inner
            .engines
            .lock()
            .expect("never poisoned")
            .remove(name);
    }

    /// An instance's idle hooks ran, all of them well or not.
    pub fn idle_hooks_ran(&self, ok: bool) {
        let label = ResultLabel {
            result: if ok { "ok" } else { "failed" },
        };
        self.inner.idle_hooks.get_or_create(&label).inc();
    }

    /// The synced directory `source` applied `revision` (none: it is not
    /// in a git work tree).
    pub fn source_applied(&self, source: &str, revision: Option<&str>) {
        let revision = revision.unwrap_or("none").to_owned();
        let mut sources = self.inner.sources.lock().expect("never poisoned");
        if let Some(before) = sources.insert(source.to_owned(), revision.clone()) {
            self.inner.source.remove(&SourceLabel {
                source: source.to_owned(),
                revision: before,
            });
        }
        let label = SourceLabel {
            source: source.to_owned(),
            revision,
        };
        self.inner.source.get_or_create(&label).set(1);
    }

    /// The metrics in the Prometheus text format.
    pub fn encode(&self) -> String {
        let mut text = String::new();
        prometheus_client::encoding::prometheus_text::encode(&mut text, &self.inner.registry)
            .expect("writing to a String cannot fail");
        text
    }

    /// Whether the loop ticked within `limit`; the answer's text says so.
    pub fn health(&self, limit: Duration) -> Result<String, String> {
        let since = self.since_tick();
        match since <= limit {
            true => Ok(format!("ok: the loop ticked {}ms ago\n", since.as_millis())),
            false => Err(format!(
                "the loop has not ticked for {}s (limit {}s)\n",
                since.as_secs(),
                limit.as_secs()
            )),
        }
    }

    /// Ready: the first pass is done and every engine in use answered its
    /// last look; else what is missing.
    pub fn readiness(&self) -> Result<String, String> {
        let mut missing = Vec::new();
        if self.inner.first_pass.get() == 0 {
            missing.push("the first pass is not done".to_owned());
        }
        let down: Vec<String> = self
            .inner
            .engines
            .lock()
            .expect("never poisoned")
            .iter()
            .filter(|(_, up)| !**up)
            .map(|(name, _)| name.clone())
            .collect();
        if !down.is_empty() {
            missing.push(format!("engine(s) not answering: {}", down.join(", ")));
        }
        match missing.is_empty() {
            true => Ok("ok\n".to_owned()),
            false => Err(format!("not ready: {}\n", missing.join("; "))),
        }
    }
}

/// The instances by attention, for `jackin_instances_by_attention`, from
/// one look at them (`crate::attention::look`), labelled as notifications
/// name it (`needs-you`). An instance jackin is bringing up or down has no
/// attention and is not counted.
/// Every attention has a sample, 0 included, as every phase has: a
/// dashboard or alert on `needs-you` sees 0, not a missing series.
pub fn attention_counts<'a>(looks: impl IntoIterator<Item = &'a Look>) -> BTreeMap<String, i64> {
    let mut counts: BTreeMap<String, i64> = every_attention()
        .iter()
        .map(|attention| (attention.event().to_owned(), 0))
        .collect();
    for attention in looks.into_iter().filter_map(|look| look.attention) {
        *counts.entry(attention.event().to_owned()).or_default() += 1;
    }
    counts
}

/// Each attention an instance can have.
fn every_attention() -> [Attention; 6] {
    // A new attention does not compile here until it is listed below too.
    let listed = |attention: Attention| match attention {
        Attention::NeedsYou
        | Attention::Working
        | Attention::Idle
        | Attention::Failed
        | Attention::Ended
        | Attention::Kept => attention,
    };
    [
        Attention::NeedsYou,
        Attention::Working,
        Attention::Idle,
        Attention::Failed,
        Attention::Ended,
        Attention::Kept,
    ]
    .map(listed)
}

/// The reason a failed reconcile's condition gives, as the errors counter
/// labels it.
pub fn error_reason(error: &ReconcileError) -> &'static str {
    match error {
        ReconcileError::Step { error, .. } => error.reason(),
        ReconcileError::Engine(e) if e.is_unreachable() => reason::ENGINE_UNREACHABLE,
        ReconcileError::Engine(_) => reason::ENGINE_ERROR,
        ReconcileError::Store(_) => reason::FILESYSTEM_ERROR,
        ReconcileError::NotConverging => "NotConverging",
        ReconcileError::GaveUp { .. } => "GaveUp",
    }
}

/// How much the server gives its clients.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Connections open at once; more wait in the listener's backlog. Far
    /// more than a scraper and a probe need, so that connections that say
    /// nothing do not keep `/healthz` waiting; each costs a descriptor and
    /// a small task.
    connections: usize,
    /// How long a connection may take to send its request's headers: a
    /// probe or a scraper sends them at once.
    headers: Duration,
    /// How long a connection may take in all, its answer included.
    request: Duration,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            connections: 256,
            headers: Duration::from_secs(2),
            request: Duration::from_secs(10),
        }
    }
}

/// Serves `/metrics`, `/healthz` and `/readyz` on `listener` until the
/// task is dropped, one request per connection: up to 256 connections at
/// once, each given 2 s to send its headers and 10 s in all, so that a
/// hundred connections that never finish their headers leave a probe
/// answered at once, and more only delay it by the 2 s they are given.
/// `/healthz` fails once the loop has not ticked for `stale`.
pub async fn serve(listener: tokio::net::TcpListener, metrics: Metrics, stale: Duration) {
    serve_within(listener, metrics, stale, Limits::default()).await;
}

async fn serve_within(
    listener: tokio::net::TcpListener,
    metrics: Metrics,
    stale: Duration,
    limits: Limits,
) {
    let slots = Arc::new(tokio::sync::Semaphore::new(limits.connections));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let (stream, peer) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(e) => {
                tracing::warn!("metrics: cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let metrics = metrics.clone();
        tokio::spawn(async move {
            let _slot = slot;
            let service = hyper::service::service_fn(move |request: Request<Incoming>| {
                let response = answer(&metrics, stale, request.uri().path());
                async move { Ok::<_, std::convert::Infallible>(response) }
            });
            let io = hyper_util::rt::TokioIo::new(stream);
            let connection = hyper::server::conn::http1::Builder::new()
                .timer(hyper_util::rt::TokioTimer::new())
                .header_read_timeout(limits.headers)
                .keep_alive(false)
                .serve_connection(io, service);
            match tokio::time::timeout(limits.request, connection).await {
                Ok(Ok(())) => {}
                Ok(Err(e)) => tracing::debug!(%peer, "metrics: connection ended: {e}"),
                Err(_) => tracing::debug!(%peer, "metrics: connection took too long"),
            }
        });
    }
}

/// Binds `addr` for [`serve`]: a port alone is on 127.0.0.1.
pub async fn bind(addr: &str) -> std::io::Result<tokio::net::TcpListener> {
    let addr: SocketAddr = match addr.parse::<u16>() {
        Ok(port) => SocketAddr::from(([127, 0, 0, 1], port)),
        Err(_) => addr.parse().map_err(|_| {
            std::io::Error::new(
                std::io::ErrorKind::InvalidInput,
                format!(
                    "{addr:?} is not an address: give HOST:PORT (such as 127.0.0.1:9464) or a port"
                ),
            )
        })?,
    };
    tokio::net::TcpListener::bind(addr).await
}

fn answer(metrics: &Metrics, stale: Duration, path: &str) -> Response<Full<Bytes>> {
    let (status, content_type, body) = match path {
        "/metrics" => (
            StatusCode::OK,
            prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
            metrics.encode(),
        ),
        "/healthz" => match metrics.health(stale) {
            Ok(text) => (StatusCode::OK, "text/plain", text),
            Err(text) => (StatusCode::SERVICE_UNAVAILABLE, "text/plain", text),
        },
        "/readyz" => match metrics.readiness() {
            Ok(text) => (StatusCode::OK, "text/plain", text),
            Err(text) => (StatusCode::SERVICE_UNAVAILABLE, "text/plain", text),
        },
        _ => (
            StatusCode::NOT_FOUND,
            "text/plain",
            "not found: /metrics, /healthz and /readyz are served\n".to_owned(),
        ),
    };
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    response.headers_mut().insert(
        hyper::header::CONTENT_TYPE,
        hyper::header::HeaderValue::from_static(content_type),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_attention_is_counted_at_zero_too() {
        let counts = attention_counts(&[]);
        assert_eq!(
            counts.keys().map(String::as_str).collect::<Vec<_>>(),
            ["ended", "failed", "idle", "kept", "needs-you", "working"]
        );
        assert!(counts.values().all(|n| *n == 0), "{counts:?}");
        let metrics = Metrics::new();
        metrics.set_attention(&counts);
        let text = metrics.encode();
        assert!(
            text.contains("jackin_instances_by_attention{attention=\"needs-you\"} 0"),
            "{text}"
        );
    }

    #[test]
    fn readiness_waits_for_the_first_pass_and_every_engine() {
        let metrics = Metrics::new();
        metrics.first_pass_of(["a".to_owned()]);
        assert!(metrics.readiness().is_err());
        metrics.reconciled("a", &Err(ReconcileError::NotConverging));
        metrics.engine("default", true);
        metrics.engine("far", false);
        let why = metrics.readiness().unwrap_err();
        assert!(why.contains("far") && !why.contains("first pass"), "{why}");
        metrics.engine_gone("far");
        assert!(metrics.readiness().is_ok());
        let text = metrics.encode();
        assert!(
            text.contains("jackin_reconcile_errors_total{reason=\"NotConverging\"} 1"),
            "{text}"
        );
    }

    /// L5: a hundred connections that never finish their headers do not
    /// keep `/healthz` waiting: it is answered while every one of them is
    /// still open (none closed, by a timeout or otherwise, to make room).
    /// The header time is long here, so that a slow machine cannot time
    /// them out first; the number of connections is the server's own.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn health_is_answered_beside_a_hundred_idle_connections() {
        use std::io::{Read, Write};
        let listener = bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let metrics = Metrics::new();
        metrics.tick(0);
        let patient = Limits {
            headers: Duration::from_secs(600),
            request: Duration::from_secs(600),
            ..Limits::default()
        };
        let server = tokio::spawn(serve_within(
            listener,
            metrics,
            Duration::from_secs(3600),
            patient,
        ));
        let (answer, open) = tokio::task::spawn_blocking(move || {
            let idle: Vec<std::net::TcpStream> = (0..100)
                .map(|_| {
                    let mut stream = std::net::TcpStream::connect(addr).unwrap();
                    stream.write_all(b"GET /healthz HTTP/1.1\r\n").unwrap();
                    stream
                })
                .collect();
            let mut probe = std::net::TcpStream::connect(addr).unwrap();
            probe
                .set_read_timeout(Some(Duration::from_secs(300)))
                .unwrap();
            probe
                .write_all(b"GET /healthz HTTP/1.1\r\nHost: probe\r\n\r\n")
                .unwrap();
            let mut answer = String::new();
            let _ = probe.read_to_string(&mut answer);
            // Open: nothing to read yet, not the end of the stream.
            let open = idle
                .iter()
                .filter(|stream| {
                    stream.set_nonblocking(true).unwrap();
                    let peeked = stream.peek(&mut [0u8; 1]);
                    matches!(peeked, Err(e) if e.kind() == std::io::ErrorKind::WouldBlock)
                })
                .count();
            (answer, open)
        })
        .await
        .unwrap();
        server.abort();
        assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
        assert!(answer.contains("ok: the loop ticked"), "{answer}");
        assert_eq!(
            open, 100,
            "idle connections were closed before the probe was answered"
        );
    }

    #[test]
    fn a_source_shows_only_its_last_revision() {
        let metrics = Metrics::new();
        metrics.source_applied("/policy", Some("abc"));
        metrics.source_applied("/policy", Some("def"));
        let text = metrics.encode();
        assert!(!text.contains("revision=\"abc\""), "{text}");
        assert!(text.contains("revision=\"def\""), "{text}");
    }
}
