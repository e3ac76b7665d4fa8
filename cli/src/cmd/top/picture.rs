//! The picture the overview draws, kept by a task of its own: the
//! instances from the store and what the last look found (see the module
//! above), so that no engine call ever holds up a key.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use jackin_api::Instance;
use jackin_api::names::label;
use jackin_controller::Store;
use jackin_controller::attention::{self, Look};
use jackin_controller::engines::Engines;
use jackin_controller::listing::Begun;
use jackin_controller::live_output::LiveOutputs;
use jackin_controller::reconcile::assess_checkouts;
use jiff::Timestamp;
use tokio::sync::{Notify, watch};

use crate::ops::watch::as_listed;
use crate::output;

/// The least time between two looks, whatever asks for them (a burst of
/// engine events is one look).
const LOOK_GAP: Duration = Duration::from_secs(1);

/// Every this many looks, the counters are read and the checkouts assessed.
const STATS_EVERY_LOOKS: u32 = 5;

/// Checkouts assessed at once (each runs git).
const ASSESS_CONCURRENCY: usize = 4;

/// What the screen shows: the instances (as `get` shows them: marked where
/// their engines list something else now) and what the last look found.
#[derive(Default)]
pub struct Picture {
    pub objects: Vec<Instance>,
    pub looks: HashMap<String, Look>,
    /// The unfinished work of each instance with isolated checkouts.
    pub work: HashMap<String, String>,
    /// When an operator was last attached to each instance that had one:
    /// now while one is (see `session::last_attached`).
    pub attached: HashMap<String, Timestamp>,
}

/// Keeps the picture current until the task is aborted. `live` holds each
/// running container's screen, which the preview reads as well.
pub async fn keep_picture(
    store: Store,
    tx: watch::Sender<Arc<Picture>>,
    nudge: Arc<Notify>,
    live: Arc<LiveOutputs>,
) {
    let reconciler = jackin_controller::Reconciler::new(store.clone(), Engines::new(None));
    // The default engine's events about jackin's containers: a start or an
    // end is shown at once, not at the next look.
    let mut events = match reconciler.engines.default_engine().await {
        Ok(engine) => engine.events(&[(label::MANAGED, "true")]),
        Err(_) => futures::stream::pending().boxed(),
    };
    let mut looks = HashMap::new();
    let mut work = HashMap::new();
    let mut round = 0u32;
    loop {
        let started = tokio::time::Instant::now();
        let listed = {
            let store = store.clone();
            jackin_files::offload::blocking(move || store.list_instances()).await
        };
        let objects = listed.map(|l| l.instances).unwrap_or_default();
        // As `get` shows them: an engine that does not answer marks its
        // instances, which its rows show.
        let (objects, listing) = as_listed(&reconciler, objects, true, Begun::default()).await;
        let stats = round.is_multiple_of(STATS_EVERY_LOOKS);
        looks = attention::look_listed(&reconciler, &objects, stats, &looks, &listing, Some(&live))
            .await;
        if stats {
            work = assess(&store, &objects).await;
        }
        round = round.wrapping_add(1);
        let running = objects
            .iter()
            .filter(|o| o.phase() == Some(jackin_api::instance::InstancePhase::Running))
            .count();
        let every = attention::look_every(running);
        let picture = Picture {
            attached: last_attached(&store, &objects),
            objects,
            looks: looks.clone(),
            work: work.clone(),
        };
        if tx.send(Arc::new(picture)).is_err() {
            return;
        }
        tokio::time::sleep_until(started + LOOK_GAP).await;
        tokio::select! {
            () = tokio::time::sleep_until(started + every) => {}
            () = nudge.notified() => {}
            event = events.next() => {
                if event.is_none() {
                    events = futures::stream::pending().boxed();
                }
            }
        }
    }
}

/// When an operator was last attached to each of `objects`, for those one
/// ever was.
fn last_attached(store: &Store, objects: &[Instance]) -> HashMap<String, Timestamp> {
    objects
        .iter()
        .filter_map(|obj| {
            let unit = obj.container_name()?;
            let at = jackin_act::session::last_attached(store.layout(), unit)?;
            Some((obj.metadata.name.clone(), at))
        })
        .collect()
}

/// The unfinished work in each instance's isolated checkouts, assessed now,
/// for those that have any.
async fn assess(store: &Store, objects: &[Instance]) -> HashMap<String, String> {
    let isolated: Vec<Instance> = objects
        .iter()
        .filter(|o| {
            o.status.as_ref().is_some_and(|s| !s.mounts.is_empty()) && o.container_name().is_some()
        })
        .cloned()
        .collect();
    // Owned: a stream of borrowed items cannot run in a spawned task.
    futures::stream::iter(isolated)
        .map(|obj| async move {
            let container = obj.container_name().unwrap_or_default();
            let mounts = assess_checkouts(store.layout(), container).await.ok()?;
            let mut assessed = obj;
            assessed.status.get_or_insert_default().mounts = mounts;
            Some((
                assessed.metadata.name.clone(),
                output::work_summary(&assessed),
            ))
        })
        .buffer_unordered(ASSESS_CONCURRENCY)
        .filter_map(|found| async move { found })
        .collect()
        .await
}
