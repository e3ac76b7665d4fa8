//! What the engines hold now, from one container listing per engine: for
//! the views that must not wait for the loop's next pass (`jackin get`, the
//! looks of `jackin top` and `get -o wide`). The record says what the loop
//! last saw; the listing says what is there, so a container removed behind
//! jackin's back, or an engine that stopped answering, shows at once.
//!
//! Each engine is listed once, all of them at once, and each for at most
//! [`LIST_WAIT`]: an engine that does not answer costs its instances their
//! listing (they are [`Seen::EngineUnreachable`]), and the view no more
//! than that.
//!
//! A `get` of every instance begins the listings ([`begin`], for the
//! engines the index names) before it reads the objects, and
//! [`list_begun`] takes them up (listing any engine an object shows that
//! the index did not name), so the command waits for the slower of the
//! two, not both.

use std::collections::HashMap;
use std::time::Duration;

use jackin_api::instance::{Instance, InstancePhase};
use jackin_api::names::{label, reason};
use jackin_api::workspace::WorkspaceSpec;
use jackin_engine::Engine;
use tokio::task::JoinHandle;

use crate::Reconciler;
use crate::engines::EngineName;
use crate::reconcile::engine_name;

/// How long a view waits for one engine's listing: less than the wait
/// after which a call is said to be slow, since the view says it itself.
pub const LIST_WAIT: Duration = Duration::from_secs(4);

/// One engine's listing: its running agent containers by instance uid, and
/// every uid it holds a container of, running or not.
#[derive(Debug)]
struct Held {
    engine: Engine,
    running: HashMap<String, String>,
    stopped: Vec<String>,
}

/// The engines' listings, for the instances they were made for.
#[derive(Debug, Default)]
pub struct Listing {
    engines: HashMap<EngineName, Result<Held, String>>,
    /// Each instance's engine, by instance name.
    engine_of: HashMap<String, EngineName>,
}

/// What the listing shows of one instance.
#[derive(Debug, Clone, Copy)]
pub enum Seen<'a> {
    /// Its agent's container runs: the engine, and the container's id.
    Running { engine: &'a Engine, id: &'a str },
    /// Its container is there and stopped.
    Stopped,
    /// The engine holds no container of it.
    Missing,
    /// Its engine did not answer in time, or cannot be reached.
    EngineUnreachable,
}

/// Engine listings already under way, begun before the instances they are
/// for were read: a view of many instances then waits for the slower of
/// reading them and the engines' answers, not for both in turn. Any not
/// taken up by [`list_begun`] are abandoned when this is dropped.
#[derive(Default)]
pub struct Begun(HashMap<EngineName, JoinHandle<Result<Held, String>>>);

impl Drop for Begun {
    fn drop(&mut self) {
        for task in self.0.values() {
            task.abort();
        }
    }
}

/// Begins listing each of `engines` (as the index names them, which may
/// miss an engine the objects show: [`list_begun`] lists that one then).
pub fn begin(reconciler: &Reconciler, engines: impl IntoIterator<Item = EngineName>) -> Begun {
    Begun(
        engines
            .into_iter()
            .map(|name| {
                let reconciler = reconciler.clone();
                let task_name = name.clone();
                let task = tokio::spawn(async move {
                    held_within_wait(&reconciler, task_name.as_deref()).await
                });
                (name, task)
            })
            .collect(),
    )
}

/// Lists each engine `objects` run on (their workspaces in `workspaces`),
/// all at once.
pub async fn list(
    reconciler: &Reconciler,
    objects: &[&Instance],
    workspaces: &HashMap<String, WorkspaceSpec>,
) -> Listing {
    list_begun(reconciler, objects, workspaces, Begun::default()).await
}

/// [`list`], taking up the listings `begun` already holds for the engines
/// `objects` run on.
pub async fn list_begun(
    reconciler: &Reconciler,
    objects: &[&Instance],
    workspaces: &HashMap<String, WorkspaceSpec>,
    mut begun: Begun,
) -> Listing {
    let engine_of: HashMap<String, EngineName> = objects
        .iter()
        .map(|obj| {
            let workspace = obj
                .spec
                .workspace
                .as_deref()
                .and_then(|w| workspaces.get(w));
            (obj.metadata.name.clone(), engine_name(obj, workspace))
        })
        .collect();
    let mut names: Vec<&EngineName> = engine_of.values().collect();
    names.sort();
    names.dedup();
    let listed = futures::future::join_all(names.into_iter().map(|name| {
        let task = begun.0.remove(name);
        async move {
            let held = match task {
                Some(task) => task
                    .await
                    .unwrap_or_else(|e| Err(format!("the listing did not finish: {e}"))),
                None => held_within_wait(reconciler, name.as_deref()).await,
            };
            (name.clone(), held)
        }
    }))
    .await;
    Listing {
        engines: listed.into_iter().collect(),
        engine_of,
    }
}

/// [`held`], for at most [`LIST_WAIT`].
async fn held_within_wait(reconciler: &Reconciler, name: Option<&str>) -> Result<Held, String> {
    tokio::time::timeout(LIST_WAIT, held(reconciler, name))
        .await
        .unwrap_or_else(|_| Err(format!("no answer within {} s", LIST_WAIT.as_secs())))
}

async fn held(reconciler: &Reconciler, name: Option<&str>) -> Result<Held, String> {
    let engine = reconciler
        .engines
        .get(name)
        .await
        .map_err(|e| e.to_string())?
        .engine;
    let containers = engine
        .list_containers(&[(label::MANAGED, "true")])
        .await
        .map_err(|e| e.to_string())?;
    let mut running = HashMap::new();
    let mut stopped = Vec::new();
    for c in &containers {
        let labels = c.labels.as_ref();
        // An instance's own container, by its uid: a sidecar is not the
        // agent, and a container merely named like the unit is not its.
        let Some(uid) = labels.and_then(|l| l.get(label::UID)) else {
            continue;
        };
        if labels.is_some_and(|l| l.contains_key(label::SIDECAR)) {
            continue;
        }
        match (c.state.is_some_and(|s| s.to_string() == "running"), &c.id) {
            (true, Some(id)) => {
                running.insert(uid.clone(), id.clone());
            }
            _ => stopped.push(uid.clone()),
        }
    }
    Ok(Held {
        engine,
        running,
        stopped,
    })
}

impl Listing {
    /// What the listing shows of `obj`; `None` when it was not listed for.
    pub fn seen(&self, obj: &Instance) -> Option<Seen<'_>> {
        let engine = self.engine_of.get(&obj.metadata.name)?;
        let Ok(held) = self.engines.get(engine)? else {
            return Some(Seen::EngineUnreachable);
        };
        let uid = obj.metadata.uid.as_deref().unwrap_or_default();
        Some(match held.running.get(uid) {
            Some(id) => Seen::Running {
                engine: &held.engine,
                id,
            },
            None if held.stopped.iter().any(|s| s == uid) => Seen::Stopped,
            None => Seen::Missing,
        })
    }

    /// The engines that did not answer, each with why.
    pub fn unanswered(&self) -> impl Iterator<Item = (Option<&str>, &str)> {
        self.engines.iter().filter_map(|(name, held)| match held {
            Ok(_) => None,
            Err(why) => Some((name.as_deref(), why.as_str())),
        })
    }

    /// Where the listing and `obj`'s record disagree, the `Ready` reason
    /// the loop's next look will record, and what the listing showed;
    /// `None` when they agree. Only `Running` claims a running container
    /// (a launching one may not have it yet); any instance of an engine
    /// that did not answer is unknown now.
    pub fn disagreement(&self, obj: &Instance) -> Option<(&'static str, &'static str)> {
        let live = obj.phase() == Some(InstancePhase::Running);
        match self.seen(obj)? {
            Seen::EngineUnreachable => Some((
                reason::ENGINE_UNREACHABLE,
                "its engine did not answer the listing",
            )),
            Seen::Missing if live => Some((
                reason::CONTAINER_MISSING,
                "the engine lists no container of it",
            )),
            Seen::Stopped if live => Some((
                reason::SESSION_ENDED,
                "the engine lists its container as stopped",
            )),
            Seen::Running { .. } | Seen::Missing | Seen::Stopped => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, Ordering};

    use jackin_api::{API_VERSION, ObjectMeta};
    use jackin_engine::fake::FakeEngine;
    use jackin_files::layout::Layout;

    use super::*;
    use crate::Store;
    use crate::engines::Engines;

    /// Sets its flag when dropped: the engine's connection was given up.
    struct GivenUp(Arc<AtomicBool>);

    impl Drop for GivenUp {
        fn drop(&mut self) {
            self.0.store(true, Ordering::SeqCst);
        }
    }

    /// Waits until `flag` is set (for at most a minute of the test's clock).
    async fn until(flag: &AtomicBool, what: &str) {
        for _ in 0..6000 {
            if flag.load(Ordering::SeqCst) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        panic!("{what} never happened");
    }

    /// On the test's clock, which only moves when every task waits: the
    /// far engine's listing would end at [`LIST_WAIT`] if left to run.
    #[tokio::test(start_paused = true)]
    async fn a_begun_listing_is_taken_up_once_and_one_no_object_needs_is_abandoned() {
        let home = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(Layout::new(home.path())).unwrap();
        let near = FakeEngine::default().engine();
        let (asked, given_up) = (Arc::new(AtomicBool::new(false)), Arc::default());
        let engines = Engines::with_connector(Some(near.clone()), {
            let (asked, given_up) = (asked.clone(), Arc::clone(&given_up));
            move |_| {
                asked.store(true, Ordering::SeqCst);
                let guard = GivenUp(Arc::clone(&given_up));
                // An engine that never answers.
                Box::pin(async move {
                    let _guard = guard;
                    futures::future::pending().await
                })
            }
        });
        let reconciler = Reconciler::new(store, engines);
        // The index's word: the default engine and "far"; the one object
        // read runs on the default engine only.
        let begun_at = tokio::time::Instant::now();
        let begun = begin(&reconciler, [None, Some("far".to_owned())]);
        until(&asked, "the far engine's listing beginning").await;
        let obj = Instance {
            api_version: API_VERSION.into(),
            kind: "Instance".into(),
            metadata: ObjectMeta {
                name: "here".into(),
                uid: Some("u-here".into()),
                ..Default::default()
            },
            spec: Default::default(),
            status: None,
        };
        let listing = list_begun(&reconciler, &[&obj], &HashMap::new(), begun).await;
        assert!(matches!(listing.seen(&obj), Some(Seen::Missing)));
        assert_eq!(listing.unanswered().count(), 0, "far was not waited for");
        assert_eq!(
            near.calls(),
            1,
            "the default engine was listed once: by the listing begun early"
        );
        until(&given_up, "giving up the far engine").await;
        assert!(
            begun_at.elapsed() < LIST_WAIT,
            "the far engine's listing was abandoned, not left to time out"
        );
    }
}
