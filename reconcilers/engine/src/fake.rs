//! An engine in memory, for unit tests of everything above the engine seam
//! (reconcile, the session edge, sweeps, the controller's loop) with no
//! Docker at all. It answers as a Docker 20.10 engine does where jackin
//! depends on it: label filters, 404 for what is not there, 409 for a name
//! that is taken, "No such image", duplicate network names, an event per
//! change. The integration tests in `tests/` cover the real engine.
//!
//! Built with the `fake` feature (and in this crate's own tests).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bollard::errors::Error as BollardError;
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use tokio::sync::broadcast;

use crate::models::{
    ContainerConfig, ContainerCreateBody, ContainerInspectResponse, ContainerState,
    ContainerSummary, ContainerSummaryStateEnum, EventActor, EventMessage, ImageInspect,
    ImageSummary, Ipam, IpamConfig, Network, Volume,
};
use crate::{AttachedExec, Engine, EngineCalls, EngineError, ExecOutcome, ExecRequest, Usage};
use jackin_api::home::Subnet;

/// The time the engine reports for "never".
const NEVER: &str = "0001-01-01T00:00:00Z";

#[derive(Debug, Clone)]
struct FakeContainer {
    id: String,
    name: String,
    labels: HashMap<String, String>,
    image: String,
    running: bool,
    exit_code: i64,
    oom_killed: bool,
    started_at: String,
    finished_at: String,
    /// The environment it was created with (`NAME=value`).
    env: Vec<String>,
    /// Its binds: where in the container, from which host path.
    binds: Vec<(String, String)>,
}

#[derive(Debug, Clone)]
struct FakeNetwork {
    id: String,
    name: String,
    labels: HashMap<String, String>,
    created: String,
    subnet: Option<String>,
}

#[derive(Debug, Clone)]
struct FakeImage {
    id: String,
    tags: Vec<String>,
    command: Vec<String>,
}

#[derive(Debug, Default)]
struct State {
    containers: Vec<FakeContainer>,
    networks: Vec<FakeNetwork>,
    volumes: Vec<Volume>,
    images: Vec<FakeImage>,
    next_id: u64,
    unreachable: bool,
    /// What every start of a container is refused with, when set: the
    /// status and the engine's message.
    refused_starts: Option<(u16, String)>,
    /// Every command run with `exec`: the container and the argv.
    execs: Vec<(String, Vec<String>)>,
    /// The engine runs on another machine whose paths are the controller's
    /// but hold none of its files: binds are made, and show nothing.
    files_elsewhere: bool,
}

impl State {
    fn id(&mut self, prefix: &str) -> String {
        self.next_id += 1;
        format!("{prefix}{:012x}", self.next_id)
    }

    fn container(&mut self, name_or_id: &str) -> Option<&mut FakeContainer> {
        self.containers
            .iter_mut()
            .find(|c| c.name == name_or_id || c.id == name_or_id)
    }

    fn image(&self, reference: &str) -> Option<&FakeImage> {
        self.images
            .iter()
            .find(|i| i.id == reference || i.tags.iter().any(|t| t == reference))
    }
}

/// The in-memory engine. Cheap to clone: clones share one state.
#[derive(Debug, Clone)]
pub struct FakeEngine {
    state: Arc<Mutex<State>>,
    events: broadcast::Sender<EventMessage>,
    before_change: Arc<Mutex<BeforeChange>>,
}

/// What [`FakeEngine::before_change`] calls: the action and the object's
/// name or id.
type ChangeHook = Box<dyn Fn(&str, &str) + Send>;

#[derive(Default)]
struct BeforeChange(Option<ChangeHook>);

impl std::fmt::Debug for BeforeChange {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "BeforeChange(set)"
        } else {
            "BeforeChange(none)"
        })
    }
}

impl Default for FakeEngine {
    fn default() -> Self {
        Self {
            state: Arc::default(),
            events: broadcast::channel(1024).0,
            before_change: Arc::default(),
        }
    }
}

fn matches(labels: &HashMap<String, String>, wanted: &[(&str, &str)]) -> bool {
    wanted
        .iter()
        .all(|(k, v)| labels.get(*k).map(String::as_str) == Some(*v))
}

fn now() -> String {
    jiff::Timestamp::now().to_string()
}

fn refused(action: &str, status: u16, message: impl Into<String>) -> EngineError {
    EngineError::Refused {
        action: action.to_owned(),
        status,
        message: message.into(),
    }
}

/// The binds of a container to be created: (target, source).
fn binds_of(body: &ContainerCreateBody) -> Vec<(String, String)> {
    let mounts = body.host_config.as_ref().and_then(|h| h.mounts.as_ref());
    mounts
        .into_iter()
        .flatten()
        .filter_map(|m| Some((m.target.clone()?, m.source.clone()?)))
        .collect()
}

fn ready<T: Send + 'static>(value: T) -> BoxFuture<'static, T> {
    Box::pin(std::future::ready(value))
}

impl FakeEngine {
    /// An [`Engine`] whose every call this fake answers.
    pub fn engine(&self) -> Engine {
        Engine::with(Arc::new(self.clone()), "fake://engine")
    }

    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().expect("fake engine lock")
    }

    fn emit(&self, kind: &str, action: &str, id: &str, labels: &HashMap<String, String>) {
        let _ = self.events.send(EventMessage {
            typ: kind.parse().ok(),
            action: Some(action.to_owned()),
            actor: Some(EventActor {
                id: Some(id.to_owned()),
                attributes: Some(labels.clone()),
            }),
            ..Default::default()
        });
    }

    /// Calls `hook` with the action (`stop-container`, `remove-container`,
    /// `remove-network`, `remove-volume`, `remove-image`) and the object's
    /// name or id before each stop or removal takes effect, so that a test
    /// can look at what holds at that moment (who holds a lock, say).
    pub fn before_change(&self, hook: impl Fn(&str, &str) + Send + 'static) {
        self.before_change.lock().expect("fake engine hook").0 = Some(Box::new(hook));
    }

    fn changing(&self, action: &str, target: &str) {
        if let Some(hook) = &self.before_change.lock().expect("fake engine hook").0 {
            hook(action, target);
        }
    }

    /// Fails every call as an engine that cannot be reached would, while
    /// `unreachable` is true.
    pub fn set_unreachable(&self, unreachable: bool) {
        self.state().unreachable = unreachable;
    }

    /// Puts the engine on another machine (`true`): its containers' binds
    /// show none of the controller's files, as an engine whose machine has
    /// the same paths, empty, would.
    pub fn set_files_elsewhere(&self, elsewhere: bool) {
        self.state().files_elsewhere = elsewhere;
    }

    /// Refuses every start of a container with `status` and `message`, as
    /// an engine whose runtime will not start it does (a user the image
    /// lacks: 500; a program that does not exist: 400); `None` starts them.
    pub fn refuse_starts(&self, refusal: Option<(u16, &str)>) {
        self.state().refused_starts = refusal.map(|(status, m)| (status, m.to_owned()));
    }

    fn check(&self) -> Result<(), EngineError> {
        if self.state().unreachable {
            return Err(EngineError::Unreachable {
                endpoint: "fake://engine".into(),
                source: BollardError::RequestTimeoutError,
            });
        }
        Ok(())
    }

    /// Adds a local image tagged `tag` whose default command is `command`;
    /// returns its id.
    pub fn add_image(&self, tag: &str, command: &[&str]) -> String {
        let mut state = self.state();
        let id = format!("sha256:{}", state.id("img"));
        state.images.push(FakeImage {
            id: id.clone(),
            tags: vec![tag.to_owned()],
            command: command.iter().map(|s| (*s).to_owned()).collect(),
        });
        id
    }

    /// Removes an image behind jackin's back (`docker rmi`).
    pub fn forget_image(&self, reference: &str) {
        self.state()
            .images
            .retain(|i| i.id != reference && !i.tags.iter().any(|t| t == reference));
    }

    /// Adds a volume with `labels`, as a sidecar would have made it.
    pub fn add_volume(&self, name: &str, labels: &[(&str, &str)]) {
        self.state().volumes.push(Volume {
            name: name.to_owned(),
            labels: labels
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..Default::default()
        });
    }

    /// The container's process ends with `exit_code` (`docker kill`, an
    /// OOM kill when `oom`, the agent exiting), and the engine says so.
    pub fn end(&self, name: &str, exit_code: i64, oom: bool) {
        let mut state = self.state();
        if let Some(c) = state.container(name) {
            c.running = false;
            c.exit_code = exit_code;
            c.oom_killed = oom;
            c.finished_at = now();
            let (id, labels) = (c.id.clone(), c.labels.clone());
            drop(state);
            self.emit("container", "die", &id, &labels);
        }
    }

    /// `docker rm -f` behind jackin's back.
    pub fn remove_behind_our_back(&self, name: &str) {
        let removed: Vec<FakeContainer> = {
            let mut state = self.state();
            let (gone, kept) = state
                .containers
                .drain(..)
                .partition(|c| c.name == name || c.id == name);
            state.containers = kept;
            gone
        };
        for c in removed {
            self.emit("container", "destroy", &c.id, &c.labels);
        }
    }

    /// Every command run with `exec`, in order: the container and the argv.
    pub fn execs(&self) -> Vec<(String, Vec<String>)> {
        self.state().execs.clone()
    }

    /// The environment a container was created with, as the engine got it.
    pub fn env(&self, name: &str) -> Vec<String> {
        self.state()
            .container(name)
            .map(|c| c.env.clone())
            .unwrap_or_default()
    }

    /// Whether a container of that name exists, and whether it runs.
    pub fn container_running(&self, name: &str) -> Option<bool> {
        self.state().container(name).map(|c| c.running)
    }

    /// The names of the containers and networks carrying `labels`.
    pub fn objects(&self, labels: &[(&str, &str)]) -> (Vec<String>, Vec<String>) {
        let state = self.state();
        (
            state
                .containers
                .iter()
                .filter(|c| matches(&c.labels, labels))
                .map(|c| c.name.clone())
                .collect(),
            state
                .networks
                .iter()
                .filter(|n| matches(&n.labels, labels))
                .map(|n| n.name.clone())
                .collect(),
        )
    }

    /// Creates a network directly (as a racing process would).
    pub fn add_network(&self, name: &str, labels: HashMap<String, String>) -> String {
        let mut state = self.state();
        let id = state.id("net");
        let created = format!("{:020}", state.next_id);
        state.networks.push(FakeNetwork {
            id: id.clone(),
            name: name.to_owned(),
            labels,
            created,
            subnet: None,
        });
        id
    }
}

impl EngineCalls for FakeEngine {
    fn api_version(&self) -> String {
        "1.41".into()
    }

    fn list_containers<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<ContainerSummary>, EngineError>> {
        let result = self.check().map(|()| {
            self.state()
                .containers
                .iter()
                .filter(|c| matches(&c.labels, labels))
                .map(|c| ContainerSummary {
                    id: Some(c.id.clone()),
                    names: Some(vec![format!("/{}", c.name)]),
                    labels: Some(c.labels.clone()),
                    image_id: Some(c.image.clone()),
                    state: Some(if c.running {
                        ContainerSummaryStateEnum::RUNNING
                    } else {
                        ContainerSummaryStateEnum::EXITED
                    }),
                    ..Default::default()
                })
                .collect()
        });
        ready(result)
    }

    fn list_networks<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<Network>, EngineError>> {
        let result = self.check().map(|()| {
            self.state()
                .networks
                .iter()
                .filter(|n| matches(&n.labels, labels))
                .map(|n| Network {
                    id: Some(n.id.clone()),
                    name: Some(n.name.clone()),
                    labels: Some(n.labels.clone()),
                    created: Some(n.created.clone()),
                    ipam: n.subnet.as_ref().map(|subnet| Ipam {
                        config: Some(vec![IpamConfig {
                            subnet: Some(subnet.clone()),
                            ..Default::default()
                        }]),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
                .collect()
        });
        ready(result)
    }

    fn list_volumes<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<Volume>, EngineError>> {
        let result = self.check().map(|()| {
            self.state()
                .volumes
                .iter()
                .filter(|v| matches(&v.labels, labels))
                .cloned()
                .collect()
        });
        ready(result)
    }

    fn create_volume<'a>(
        &'a self,
        name: &'a str,
        labels: HashMap<String, String>,
    ) -> BoxFuture<'a, Result<HashMap<String, String>, EngineError>> {
        let result = self.check().map(|()| {
            let mut state = self.state();
            match state.volumes.iter().find(|v| v.name == name) {
                Some(existing) => existing.labels.clone(),
                None => {
                    state.volumes.push(Volume {
                        name: name.to_owned(),
                        labels: labels.clone(),
                        ..Default::default()
                    });
                    labels
                }
            }
        });
        ready(result)
    }

    fn remove_volume<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        let result = self.check().map(|()| {
            self.changing("remove-volume", name);
            let mut state = self.state();
            let before = state.volumes.len();
            state.volumes.retain(|v| v.name != name);
            state.volumes.len() != before
        });
        ready(result)
    }

    fn list_images(&self) -> BoxFuture<'_, Result<Vec<ImageSummary>, EngineError>> {
        let result = self.check().map(|()| {
            self.state()
                .images
                .iter()
                .map(|i| ImageSummary {
                    id: i.id.clone(),
                    repo_tags: i.tags.clone(),
                    ..Default::default()
                })
                .collect()
        });
        ready(result)
    }

    fn create_network<'a>(
        &'a self,
        name: &'a str,
        labels: HashMap<String, String>,
        subnet: Option<String>,
    ) -> BoxFuture<'a, Result<String, EngineError>> {
        let result = self.check().and_then(|()| {
            // As the engine does: one address space, no two pools overlap.
            if let Some(subnet) = &subnet {
                let wanted: Subnet = subnet.parse().expect("jackin asks for valid subnets");
                let overlapping = self.state().networks.iter().any(|n| {
                    n.subnet
                        .as_ref()
                        .is_some_and(|s| s.parse::<Subnet>().is_ok_and(|s| s.overlaps(wanted)))
                });
                if overlapping {
                    return Err(refused(
                        &format!("create network {name}"),
                        403,
                        "Pool overlaps with other one on this address space",
                    ));
                }
            }
            let id = self.add_network(name, labels.clone());
            self.state().networks.last_mut().expect("just added").subnet = subnet;
            self.emit("network", "create", &id, &labels);
            Ok(id)
        });
        ready(result)
    }

    fn remove_network<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        let result = self.check().and_then(|()| {
            self.changing("remove-network", name);
            let mut state = self.state();
            let found: Vec<usize> = (0..state.networks.len())
                .filter(|&i| state.networks[i].id == name || state.networks[i].name == name)
                .collect();
            match found.as_slice() {
                [] => Ok(false),
                [i] => {
                    state.networks.remove(*i);
                    Ok(true)
                }
                _ => Err(refused(
                    &format!("remove network {name}"),
                    400,
                    format!(
                        "network {name} is ambiguous ({} matches found)",
                        found.len()
                    ),
                )),
            }
        });
        ready(result)
    }

    fn start_container<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), EngineError>> {
        let result = self.check().and_then(|()| {
            let mut state = self.state();
            if let Some((status, message)) = state.refused_starts.clone() {
                return Err(refused(&format!("start container {name}"), status, message));
            }
            let Some(c) = state.container(name) else {
                return Err(refused(
                    &format!("start container {name}"),
                    404,
                    format!("No such container: {name}"),
                ));
            };
            c.running = true;
            c.started_at = now();
            let (id, labels) = (c.id.clone(), c.labels.clone());
            drop(state);
            self.emit("container", "start", &id, &labels);
            Ok(())
        });
        ready(result)
    }

    fn stop_container<'a>(
        &'a self,
        name: &'a str,
        _grace_secs: i32,
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        let result = self.check().map(|()| {
            self.changing("stop-container", name);
            let running = self.container_running(name);
            if running == Some(true) {
                // SIGTERM: the process ends with 143.
                self.end(name, 143, false);
            }
        });
        ready(result)
    }

    fn events(
        &self,
        labels: &[(&str, &str)],
    ) -> BoxStream<'static, Result<EventMessage, EngineError>> {
        let wanted: Vec<(String, String)> = labels
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        let receiver = self.events.subscribe();
        tokio_stream_of(receiver)
            .filter(move |event| {
                let attributes = event
                    .actor
                    .as_ref()
                    .and_then(|a| a.attributes.clone())
                    .unwrap_or_default();
                let keep = wanted
                    .iter()
                    .all(|(k, v)| attributes.get(k).is_some_and(|a| a == v));
                std::future::ready(keep)
            })
            .map(Ok)
            .boxed()
    }

    fn attach<'a>(
        &'a self,
        id: &'a str,
        _input: bool,
    ) -> BoxFuture<'a, Result<bollard::container::AttachContainerResults, EngineError>> {
        ready(Err(EngineError::Failed {
            action: format!("attach to {id}"),
            message: "the fake engine has no terminals".into(),
        }))
    }

    fn resize<'a>(
        &'a self,
        id: &'a str,
        _width: u16,
        _height: u16,
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        ready(Err(EngineError::Failed {
            action: format!("resize {id}"),
            message: "the fake engine has no terminals".into(),
        }))
    }

    fn create_container<'a>(
        &'a self,
        name: &'a str,
        body: ContainerCreateBody,
    ) -> BoxFuture<'a, Result<String, EngineError>> {
        let action = format!("create container {name}");
        let result = self.check().and_then(|()| {
            let mut state = self.state();
            if state.container(name).is_some() {
                return Err(refused(
                    &action,
                    409,
                    format!("Conflict. The container name \"/{name}\" is already in use"),
                ));
            }
            let image = body.image.clone().unwrap_or_default();
            let Some(image_id) = state.image(&image).map(|i| i.id.clone()) else {
                return Err(refused(&action, 404, format!("No such image: {image}")));
            };
            let network = body
                .host_config
                .as_ref()
                .and_then(|h| h.network_mode.clone())
                .unwrap_or_default();
            let networks = state
                .networks
                .iter()
                .filter(|n| n.name == network || n.id == network)
                .count();
            // The engine's own networks are always there.
            let builtin = matches!(network.as_str(), "none" | "host" | "bridge");
            match networks {
                0 if builtin => {}
                0 => {
                    return Err(refused(
                        &action,
                        404,
                        format!("network {network} not found"),
                    ));
                }
                1 => {}
                _ => {
                    return Err(refused(
                        &action,
                        400,
                        format!("network {network} is ambiguous"),
                    ));
                }
            }
            let id = state.id("ctr");
            let labels = body.labels.clone().unwrap_or_default();
            state.containers.push(FakeContainer {
                id: id.clone(),
                name: name.to_owned(),
                labels: labels.clone(),
                image: image_id,
                running: false,
                exit_code: 0,
                oom_killed: false,
                started_at: NEVER.into(),
                finished_at: NEVER.into(),
                env: body.env.clone().unwrap_or_default(),
                binds: binds_of(&body),
            });
            drop(state);
            self.emit("container", "create", &id, &labels);
            Ok(id)
        });
        ready(result)
    }

    fn inspect_container<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ContainerInspectResponse>, EngineError>> {
        let result = self.check().map(|()| {
            self.state()
                .container(name)
                .map(|c| ContainerInspectResponse {
                    id: Some(c.id.clone()),
                    name: Some(format!("/{}", c.name)),
                    state: Some(ContainerState {
                        running: Some(c.running),
                        exit_code: Some(c.exit_code),
                        oom_killed: Some(c.oom_killed),
                        started_at: Some(c.started_at.clone()),
                        finished_at: Some(c.finished_at.clone()),
                        ..Default::default()
                    }),
                    config: Some(ContainerConfig {
                        labels: Some(c.labels.clone()),
                        ..Default::default()
                    }),
                    ..Default::default()
                })
        });
        ready(result)
    }

    fn remove_container<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        let result = self.check().map(|()| {
            self.changing("remove-container", name);
            let exists = self.container_running(name).is_some();
            self.remove_behind_our_back(name);
            exists
        });
        ready(result)
    }

    fn build_image<'a>(
        &'a self,
        _context_tar: Vec<u8>,
        tag: &'a str,
        _labels: &'a HashMap<String, String>,
        progress: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        let result = self.check().map(|()| {
            progress("built by the fake engine");
            self.add_image(tag, &["sleep", "3600"]);
        });
        ready(result)
    }

    fn inspect_image<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Option<ImageInspect>, EngineError>> {
        let result = self.check().map(|()| {
            self.state().image(reference).map(|i| ImageInspect {
                id: Some(i.id.clone()),
                repo_tags: Some(i.tags.clone()),
                config: Some(crate::models::ImageConfig {
                    cmd: Some(i.command.clone()),
                    ..Default::default()
                }),
                ..Default::default()
            })
        });
        ready(result)
    }

    fn remove_image<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        let result = self.check().map(|()| {
            self.changing("remove-image", reference);
            let exists = self.state().image(reference).is_some();
            self.forget_image(reference);
            exists
        });
        ready(result)
    }

    /// Fake containers are silent.
    fn output_since<'a>(
        &'a self,
        _id: &'a str,
        _since_unix: i64,
    ) -> BoxFuture<'a, Result<bool, EngineError>> {
        ready(self.check().map(|()| false))
    }

    /// Fake containers write nothing.
    fn logs(
        &self,
        _id: &str,
        _request: crate::LogsRequest,
    ) -> BoxStream<'static, Result<Vec<u8>, EngineError>> {
        futures::stream::empty().boxed()
    }

    /// Reads through the container's binds on this machine's files (the
    /// engine shares them), unless they are elsewhere.
    fn read_file<'a>(
        &'a self,
        id: &'a str,
        path: &'a str,
        cap: u64,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, EngineError>> {
        let action = format!("read {path} in container {id}");
        let result = self.check().and_then(|()| {
            let mut state = self.state();
            let elsewhere = state.files_elsewhere;
            let Some(container) = state.container(id) else {
                return Err(refused(&action, 404, format!("No such container: {id}")));
            };
            let binds = container.binds.clone();
            if elsewhere {
                return Ok(None);
            }
            let read = || {
                let (target, source) = binds
                    .iter()
                    .find(|(target, _)| path.starts_with(&format!("{target}/")))?;
                let host = std::path::Path::new(source).join(&path[target.len() + 1..]);
                let bytes = std::fs::read(host).ok()?;
                let cap = usize::try_from(cap).unwrap_or(usize::MAX);
                Some(bytes[..bytes.len().min(cap)].to_vec())
            };
            Ok(read())
        });
        ready(result)
    }

    /// Fake containers do nothing: their counters stand still while they
    /// run, and there are none once they stop.
    fn usage<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Usage>, EngineError>> {
        let result = self.check().map(|()| {
            self.state()
                .container(id)
                .filter(|c| c.running)
                .map(|_| Usage {
                    cpu_nanos: 1_000_000,
                    disk_written: 4096,
                    net_bytes: 1024,
                    memory: 1 << 20,
                })
        });
        ready(result)
    }

    /// Attached commands are the real engine's business: `jackin exec` is
    /// tested against it.
    fn exec_attached<'a>(
        &'a self,
        _id: &'a str,
        _request: ExecRequest,
    ) -> BoxFuture<'a, Result<AttachedExec, EngineError>> {
        ready(Err(refused("exec", 501, "not in the fake engine")))
    }

    fn exec_exit_code<'a>(
        &'a self,
        _exec_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<i64>, EngineError>> {
        ready(Err(refused("inspect exec", 501, "not in the fake engine")))
    }

    fn resize_exec<'a>(
        &'a self,
        _exec_id: &'a str,
        _width: u16,
        _height: u16,
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        ready(Ok(()))
    }

    /// Every probe finds what it looks for, and prints nothing.
    fn probe<'a>(
        &'a self,
        image: &'a str,
        _argv: Vec<String>,
        _labels: HashMap<String, String>,
    ) -> BoxFuture<'a, Result<ExecOutcome, EngineError>> {
        let result = self.check().and_then(|()| match self.state().image(image) {
            Some(_) => Ok(ExecOutcome {
                exit_code: Some(0),
                output: String::new(),
            }),
            None => Err(refused("probe", 404, format!("No such image: {image}"))),
        });
        ready(result)
    }

    /// Records the command; it succeeds at once.
    fn exec<'a>(
        &'a self,
        id: &'a str,
        argv: Vec<String>,
    ) -> BoxFuture<'a, Result<ExecOutcome, EngineError>> {
        let result = self.check().and_then(|()| {
            let mut state = self.state();
            if !state.container(id).is_some_and(|c| c.running) {
                return Err(refused(
                    "exec",
                    409,
                    format!("container {id} is not running"),
                ));
            }
            state.execs.push((id.to_owned(), argv));
            Ok(ExecOutcome {
                exit_code: Some(0),
                output: String::new(),
            })
        });
        ready(result)
    }
}

/// The events a broadcast receiver gets, as a stream; a receiver that lags
/// skips what it missed, as the engine's stream drops events under load.
fn tokio_stream_of(
    receiver: broadcast::Receiver<EventMessage>,
) -> BoxStream<'static, EventMessage> {
    futures::stream::unfold(receiver, |mut receiver| async move {
        loop {
            match receiver.recv().await {
                Ok(event) => return Some((event, receiver)),
                Err(broadcast::error::RecvError::Lagged(_)) => {}
                Err(broadcast::error::RecvError::Closed) => return None,
            }
        }
    })
    .boxed()
}
