//! The Docker engines instances run on, by the name `spec.engine` gives
//! them (`None`: the one the environment selects). Each is connected on
//! first use and kept with what this process knows of it (the subnets in
//! use there), so one controller drives several engines; an engine that
//! cannot be reached fails only the work that needs it.
//!
//! The name is pinned with the recipe, so a session stays on the engine it
//! started on unless a rollout moves it (`--move`). Every piece of work
//! carries its engine, as multicluster controllers do: a pass takes one
//! snapshot of each engine and never decides an instance from another
//! engine's, the controller keeps one event watch per engine in use, and
//! a sweep lists each engine on its own. An instance whose engine cannot be
//! reached is recorded so (`Ready` false, `EngineUnreachable`) and nothing
//! of it is acted on, but a purge that may go on without the engine (see
//! `reconcile`).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use futures::future::BoxFuture;
use jackin_engine::Engine;
use jackin_engine::EngineError;
use jackin_engine::addresses::AddressBook;

/// An engine's name as instances give it; `None` for the default.
pub type EngineName = Option<String>;

/// How an engine is named in messages and listings.
pub fn display_name(name: Option<&str>) -> &str {
    name.unwrap_or("default")
}

/// One connected engine and what this process knows of it.
#[derive(Debug, Clone)]
pub struct Connected {
    pub engine: Engine,
    pub addresses: Arc<AddressBook>,
}

type Connector =
    dyn Fn(EngineName) -> BoxFuture<'static, Result<Engine, EngineError>> + Send + Sync;

/// The engines in use, cheap to clone (clones share the connections).
#[derive(Clone)]
pub struct Engines {
    connected: Arc<Mutex<HashMap<EngineName, Connected>>>,
    connect: Arc<Connector>,
}

impl std::fmt::Debug for Engines {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engines")
            .field("connected", &self.names())
            .finish()
    }
}

impl Engines {
    /// Engines connected as the docker CLI would ([`Engine::connect_named`]),
    /// with `default` (when given) already connected.
    pub fn new(default: Option<Engine>) -> Self {
        Self::with_connector(default, |name| {
            Box::pin(async move { Engine::connect_named(name.as_deref()).await })
        })
    }

    /// Engines made by `connect`; tests use it for in-memory ones.
    pub fn with_connector(
        default: Option<Engine>,
        connect: impl Fn(EngineName) -> BoxFuture<'static, Result<Engine, EngineError>>
        + Send
        + Sync
        + 'static,
    ) -> Self {
        let engines = Self {
            connected: Arc::default(),
            connect: Arc::new(connect),
        };
        if let Some(engine) = default {
            engines.insert(None, engine);
        }
        engines
    }

    /// Only `engine`, as the default: what a test with one fake engine uses.
    pub fn single(engine: Engine) -> Self {
        Self::with_connector(Some(engine), |name| {
            Box::pin(async move {
                Err(EngineError::Endpoint(
                    jackin_engine::endpoint::EndpointError::UnknownContext {
                        name: display_name(name.as_deref()).to_owned(),
                        dir: "(a single-engine test)".into(),
                    },
                ))
            })
        })
    }

    fn insert(&self, name: EngineName, engine: Engine) -> Connected {
        let connected = Connected {
            engine,
            addresses: Arc::default(),
        };
        self.connected
            .lock()
            .expect("never poisoned")
            .entry(name)
            .or_insert(connected)
            .clone()
    }

    /// The engine `name`, connected now if it is not yet. A failed
    /// connection is not remembered: the next call tries again.
    pub async fn get(&self, name: Option<&str>) -> Result<Connected, EngineError> {
        let key = name.map(str::to_owned);
        if let Some(found) = self.connected.lock().expect("never poisoned").get(&key) {
            return Ok(found.clone());
        }
        let engine = (self.connect)(key.clone()).await?;
        Ok(self.insert(key, engine))
    }

    /// The default engine, connected now if it is not yet.
    pub async fn default_engine(&self) -> Result<Engine, EngineError> {
        Ok(self.get(None).await?.engine)
    }

    /// The engines connected so far.
    pub fn names(&self) -> Vec<EngineName> {
        let mut names: Vec<EngineName> = self
            .connected
            .lock()
            .expect("never poisoned")
            .keys()
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// Forgets an engine no instance uses any more; it is connected again
    /// if one does.
    pub fn forget(&self, name: &EngineName) {
        self.connected.lock().expect("never poisoned").remove(name);
    }

    /// Requests made so far, over every engine.
    pub fn calls(&self) -> u64 {
        self.connected
            .lock()
            .expect("never poisoned")
            .values()
            .map(|c| c.engine.calls())
            .sum()
    }
}
