//! Attention, observed: one look at many instances, for `jackin top`,
//! `get -o wide` and the notifications. The decision is
//! `jackin_plan::attention`'s; this finds its inputs as the idle watch does
//! (the attached lock, the container's output, its counters compared with
//! `idle::moved`).
//!
//! The cost of a look: one container listing per engine ([`listing`]), then, for each
//! running instance only, its output and, when counters are asked for, one
//! stats call; at most [`CONCURRENCY`] calls are in flight at once.
//! Instances that are not running are decided from their phase with no call
//! at all. A long-lived look (`jackin top`, `get -w`, the controller) passes
//! its [`LiveOutputs`]: each running container's output stream, opened at
//! its first look and kept, so that output with no newline counts and a
//! look makes no log call. A one-shot look (`get -o wide`) reads the log's
//! last entry, one call each, which the engine writes only at a newline: an
//! agent quiet at an unfinished line (a prompt) looks as if it never
//! printed it.

use std::collections::{BTreeSet, HashMap};
use std::time::Duration;

use futures::StreamExt;
use jackin_api::instance::{Instance, InstancePhase};
use jackin_api::workspace::WorkspaceSpec;
use jackin_engine::Engine;
use jackin_engine::EngineError;
use jackin_engine::Usage;
use jackin_plan::attention::{self, Attention, Observed, Source};
use jackin_plan::idle::{self, Sample, Window};
use jiff::Timestamp;

use crate::Reconciler;
use crate::listing::{self, Listing, Seen};
use crate::live_output::LiveOutputs;

/// How often a live view (`jackin top`, its plain lines) looks again with
/// `running` instances running: every 2 s, or with many, 10 ms for each, so
/// that the engine answers at most about 100 log calls a second for it
/// (500 running: a look every 5 s).
pub fn look_every(running: usize) -> Duration {
    let each = Duration::from_millis(10) * u32::try_from(running).unwrap_or(u32::MAX);
    each.max(Duration::from_secs(2))
}

/// How long a look waits for an engine's listing, and for one container's
/// calls.
pub const ENGINE_WAIT: Duration = Duration::from_secs(5);

/// Engine calls in flight at once during a look.
pub const CONCURRENCY: usize = 32;

/// What a look found of one instance.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Look {
    /// `None` while jackin brings it up or down, or when its engine did
    /// not answer.
    pub attention: Option<Attention>,
    /// When its container last wrote output (from a stream: last changed
    /// what its screen shows).
    pub last_output: Option<Timestamp>,
    /// Its last line: the lowest row with text on the screen its stream
    /// drew, or the last entry of its log as the agent wrote it. Untrusted,
    /// to be made safe before it is shown anywhere.
    pub last_line: Vec<u8>,
    /// Its counters now, when they were asked for; the next look compares
    /// with them.
    pub sample: Option<Sample>,
    /// The share of one core it used between the last two samples.
    pub cpu_share: Option<f64>,
    /// The id of its running container, as the look found it: what a
    /// live watcher (`LiveOutputs`) knows its screen by.
    pub container: Option<String>,
    /// Whether its CPU, writes or traffic moved between the last two
    /// samples.
    pub moved: bool,
    /// What decided its attention: the agent's report, or its screen.
    pub source: Option<Source>,
}

impl Look {
    /// Memory in use, in bytes, from the last sample.
    pub fn memory(&self) -> Option<u64> {
        self.sample.and_then(|s| s.usage).map(|u| u.memory)
    }
}

/// Looks at `objects`. With `stats`, each running container's counters are
/// read too and compared with its sample in `previous` (the last look's),
/// so that CPU or writes make it `working`; without, the last samples and
/// what moved between them are carried over from `previous`, and only new
/// output adds to them. With `live`, the output comes from its streams,
/// else from each container's log.
pub async fn look(
    reconciler: &Reconciler,
    objects: &[Instance],
    stats: bool,
    previous: &HashMap<String, Look>,
    live: Option<&LiveOutputs>,
) -> HashMap<String, Look> {
    let workspaces = workspaces(reconciler);
    let running: Vec<&Instance> = objects
        .iter()
        .filter(|obj| obj.phase() == Some(InstancePhase::Running))
        .collect();
    let listing = listing::list(reconciler, &running, &workspaces).await;
    look_listed(reconciler, objects, stats, previous, &listing, live).await
}

/// The workspaces by name, for each instance's engine and thresholds.
pub fn workspaces(reconciler: &Reconciler) -> HashMap<String, WorkspaceSpec> {
    reconciler
        .store
        .list_workspaces()
        .unwrap_or_default()
        .into_iter()
        .map(|ws| (ws.metadata.name, ws.spec))
        .collect()
}

/// [`look`], with the engines already listed (each running instance's
/// engine at least).
pub async fn look_listed(
    reconciler: &Reconciler,
    objects: &[Instance],
    stats: bool,
    previous: &HashMap<String, Look>,
    listing: &Listing,
    live: Option<&LiveOutputs>,
) -> HashMap<String, Look> {
    let store = &reconciler.store;
    let (mut looks, work) = sort_out(&workspaces(reconciler), objects, listing);
    if let Some(live) = live {
        let running = work
            .iter()
            .filter_map(|(_, running, _)| running.as_ref().map(|(_, id)| id.clone()))
            .collect();
        live.retain(&running);
    }
    let layout = store.layout();
    let found: Vec<(String, Look)> = futures::stream::iter(work)
        .map(|(obj, running, threshold)| async move {
            let unit = obj
                .status
                .as_ref()
                .and_then(|s| s.container_name.clone())
                .unwrap_or_default();
            let name = obj.metadata.name.clone();
            let before = previous.get(&name);
            let attached = !unit.is_empty() && jackin_act::session::attached(layout, &unit);
            let secrets = obj
                .recipe()
                .map(jackin_plan::redact::secret_names)
                .unwrap_or_default();
            let output = Output {
                live,
                size: jackin_act::session::terminal_size(layout, &unit),
                attached,
                secrets: &secrets,
            };
            let look = match running {
                Some((engine, id)) => {
                    tokio::time::timeout(ENGINE_WAIT, one(&engine, &id, stats, before, output))
                        .await
                        .map_err(|_| ())
                        .and_then(|found| found.map_err(drop))
                        .map(|mut look| {
                            let observed = Observed {
                                phase: obj.phase(),
                                attached,
                                last_output: look.last_output,
                                moved: look.moved,
                                report: (!unit.is_empty())
                                    .then(|| jackin_act::session::agent_report(layout, &unit))
                                    .flatten(),
                            };
                            let decided = attention::decide_with_source(
                                &observed,
                                Timestamp::now(),
                                threshold,
                            );
                            look.attention = decided.map(|(attention, _)| attention);
                            look.source = decided.map(|(_, source)| source);
                            look
                        })
                        .unwrap_or_default()
                }
                // Running by its record, with no running container: the
                // loop has not seen it end yet; nothing to say.
                None => Look::default(),
            };
            (name, look)
        })
        .buffer_unordered(CONCURRENCY)
        .collect()
        .await;
    looks.extend(found);
    looks
}

/// A running instance to look at: the instance, its running container
/// (engine and id; `None` when the engine holds no running one), and its
/// workspace's `needs you` threshold.
type ToLook = (Instance, Option<(Engine, String)>, Duration);

/// The looks of `objects` decided from their phase alone (no call), and the
/// running instances left to look at, by what `listing` shows of them.
fn sort_out(
    workspaces: &HashMap<String, WorkspaceSpec>,
    objects: &[Instance],
    listing: &Listing,
) -> (HashMap<String, Look>, Vec<ToLook>) {
    let now = Timestamp::now();
    let mut looks = HashMap::new();
    let mut work = Vec::new();
    for obj in objects {
        let phase = obj.phase();
        if phase != Some(InstancePhase::Running) {
            let observed = Observed {
                phase,
                ..Observed::default()
            };
            let attention = attention::decide(&observed, now, Default::default());
            looks.insert(
                obj.metadata.name.clone(),
                Look {
                    attention,
                    ..Look::default()
                },
            );
            continue;
        }
        let workspace = obj
            .spec
            .workspace
            .as_deref()
            .and_then(|ws| workspaces.get(ws));
        let threshold = attention::needs_you_after(workspace);
        // Owned: a stream of borrowed items cannot run in a spawned task.
        match listing.seen(obj) {
            Some(Seen::Running { engine, id }) => {
                work.push((
                    obj.clone(),
                    Some((engine.clone(), id.to_owned())),
                    threshold,
                ));
            }
            // An engine that does not answer costs its instances their
            // attention, and the look no more than the listing's wait.
            Some(Seen::EngineUnreachable) | None => {}
            Some(Seen::Missing | Seen::Stopped) => work.push((obj.clone(), None, threshold)),
        }
    }
    (looks, work)
}

/// Where a look reads a container's output from.
#[derive(Clone, Copy)]
struct Output<'a> {
    /// The watcher's streams; `None`, the log.
    live: Option<&'a LiveOutputs>,
    /// The size the agent draws at.
    size: (u16, u16),
    /// An operator is attached.
    attached: bool,
    /// The variables whose values are scrubbed from the last line.
    secrets: &'a BTreeSet<String>,
}

impl Output<'_> {
    /// When container `id` last wrote output, and its last line: from its
    /// stream, or from its log when there is no watcher or the engine
    /// offers no stream (then this look reads the log).
    async fn last(
        self,
        engine: &Engine,
        id: &str,
    ) -> Result<(Option<Timestamp>, Vec<u8>), EngineError> {
        if let Some(live) = self.live {
            let view = (self.size, self.attached);
            match live.observe(engine, id, view, self.secrets).await {
                Ok(found) => return Ok(found),
                Err(e) => tracing::debug!("no output stream of {id}, reading its log: {e}"),
            }
        }
        let Some((at, line)) = engine.last_output(id).await? else {
            return Ok((None, Vec::new()));
        };
        let secrets = jackin_act::secrets::handed_over(engine, id, self.secrets).await?;
        Ok((Some(at), secrets.scrub(&line)))
    }
}

/// One running container: its last output and, with `stats`, its counters
/// and whether they moved since `before`'s sample.
async fn one(
    engine: &Engine,
    id: &str,
    stats: bool,
    before: Option<&Look>,
    output: Output<'_>,
) -> Result<Look, EngineError> {
    let (last_output, last_line) = output.last(engine, id).await?;
    let carried = Look {
        last_output,
        last_line,
        container: Some(id.to_owned()),
        ..before.cloned().unwrap_or_default()
    };
    if !stats {
        return Ok(carried);
    }
    let sample = Sample {
        at: Timestamp::now(),
        usage: engine.usage(id).await?,
        agent: None,
    };
    let (moved, cpu_share) = match before.and_then(|b| b.sample) {
        Some(before) => (
            idle::moved(&before, &sample, Window::Looks).active(),
            cpu_share(before.usage, sample.usage, before.at, sample.at),
        ),
        None => (false, None),
    };
    Ok(Look {
        sample: Some(sample),
        cpu_share,
        moved,
        ..carried
    })
}

/// CPU time used between two samples, as a share of one core.
fn cpu_share(
    before: Option<Usage>,
    after: Option<Usage>,
    from: Timestamp,
    to: Timestamp,
) -> Option<f64> {
    let (before, after) = (before?, after?);
    let elapsed = to.duration_since(from).as_secs_f64();
    (elapsed > 0.0).then(|| after.cpu_nanos.saturating_sub(before.cpu_nanos) as f64 / 1e9 / elapsed)
}
