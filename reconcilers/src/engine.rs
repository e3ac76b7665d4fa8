//! The Docker engine adapter: the only code that talks to the engine.
//!
//! Every call maps the engine's answer into three cases a reconciler can act
//! on safely: the object exists, the engine says it does not (404), or the
//! engine could not be asked. The last is never read as "missing", so an
//! engine that does not answer can never trigger a destructive step.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bollard::Docker;
pub use bollard::container::LogOutput;
use bollard::errors::Error as BollardError;
pub use bollard::models;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerSummary, EventMessage, ImageInspect,
    ImageSummary, Ipam, IpamConfig, Network, NetworkCreateRequest, Volume,
};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, BuildImageOptionsBuilder, CreateContainerOptionsBuilder,
    EventsOptionsBuilder, ListContainersOptionsBuilder, ListImagesOptionsBuilder,
    ListNetworksOptionsBuilder, ListVolumesOptionsBuilder, LogsOptionsBuilder,
    RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder, RemoveVolumeOptionsBuilder,
    ResizeContainerTTYOptionsBuilder, StatsOptionsBuilder, StopContainerOptionsBuilder,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use jackin_api::names::label;
use jiff::Timestamp;

use crate::answer;
use crate::endpoint::{self, EndpointError, Inputs};

/// How long one call may wait for the engine (see [`answer`]).
#[derive(Debug, Clone, Copy)]
enum Wait {
    /// A call the engine answers at once: [`answer::ANSWER`], and said on
    /// the log once it has waited [`answer::NOTICE_AFTER`].
    Answer,
    /// A call whose work takes time (a stop's grace, a build): its own
    /// deadline, and no notice while the work goes on.
    Work(Duration),
    /// A call that runs something to its end (a command, a probe): the
    /// caller bounds it; each request it makes has the engine's answer
    /// deadline.
    Caller,
}

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error("cannot reach the Docker engine at {endpoint}: {source}")]
    Unreachable {
        endpoint: String,
        #[source]
        source: BollardError,
    },
    #[error("the Docker engine refused to {action}: {message} (HTTP {status})")]
    Refused {
        action: String,
        status: u16,
        message: String,
    },
    #[error("image build failed: {0}")]
    Build(String),
    /// The engine answered, but with something jackin could not use (a
    /// stream that reported an error, a reply it could not read).
    #[error("the Docker engine failed to {action}: {message}")]
    Failed { action: String, message: String },
    /// The engine took the connection and did not answer in time: it may
    /// be stopped, stuck or overloaded; nothing is known of the call.
    #[error(
        "the Docker engine at {endpoint} did not answer within {} s ({action})",
        after.as_secs()
    )]
    NoAnswer {
        endpoint: String,
        action: String,
        after: Duration,
    },
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
    /// A call made while the loop carries on without the engine (see
    /// `offline`): nothing was asked of it.
    #[error("the engine {endpoint} cannot be reached ({why}); nothing was asked of it")]
    Offline { endpoint: String, why: String },
}

impl EngineError {
    /// Whether asking again unchanged gets the same answer: the engine found
    /// the request invalid (400), named an image it does not have (404
    /// `No such image`: nothing here can pull it), or a build failed; or the
    /// engine is named so that it can never be reached (a context that does
    /// not exist, an address no engine can have): that takes the operator.
    pub fn is_permanent(&self) -> bool {
        match self {
            Self::Endpoint(_) => true,
            // Two networks of one name: the next pass removes the extra one.
            Self::Refused {
                status: 400,
                message,
                ..
            } => !message.contains("ambiguous"),
            Self::Build(_) => true,
            Self::Refused {
                status: 404,
                message,
                ..
            } => message.contains("No such image"),
            _ => false,
        }
    }
}

impl EngineError {
    /// Whether the engine could not be asked at all: no connection, or no
    /// answer in time. Nothing is known of the call, so nothing may be read
    /// from it (least of all "missing").
    pub fn is_unreachable(&self) -> bool {
        matches!(self, Self::Unreachable { .. } | Self::NoAnswer { .. })
    }

    /// Whether the engine refused to start a container with a server error
    /// (5xx). That is how Docker reports most of its runtime's refusals of
    /// the container itself (a user the image does not have, a mount the
    /// runtime will not make), which asking again does not cure; but also
    /// passing troubles of its own, which it may. So such a refusal is
    /// tried a few times, and the instance fails once it keeps coming back
    /// (`jackin_api::instance::MAX_FAILED_ATTEMPTS`). A refusal the engine
    /// calls an invalid request (400: a program that does not exist) is
    /// [`EngineError::is_permanent`] at once.
    pub fn is_refused_start(&self) -> bool {
        matches!(
            self,
            Self::Refused { action, status: 500..=599, .. } if action.starts_with("start container")
        )
    }
}

/// The engine calls jackin makes, one method each: the seam between the
/// loop and a Docker engine. [`Engine`] wraps one implementation: the real
/// engine ([`Engine::connect`]), or an in-memory one in tests (`fake`).
/// Every answer falls in the three cases above: `Ok`, "the engine says it is
/// not there" (`Ok(None)`, `Ok(false)`), or an error.
pub trait EngineCalls: Send + Sync {
    fn api_version(&self) -> String;
    fn list_containers<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<ContainerSummary>, EngineError>>;
    fn list_networks<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<Network>, EngineError>>;
    fn list_volumes<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<Volume>, EngineError>>;
    fn remove_volume<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>>;
    fn create_volume<'a>(
        &'a self,
        name: &'a str,
        labels: HashMap<String, String>,
    ) -> BoxFuture<'a, Result<HashMap<String, String>, EngineError>>;
    fn list_images(&self) -> BoxFuture<'_, Result<Vec<ImageSummary>, EngineError>>;
    fn create_network<'a>(
        &'a self,
        name: &'a str,
        labels: HashMap<String, String>,
        subnet: Option<String>,
    ) -> BoxFuture<'a, Result<String, EngineError>>;
    fn remove_network<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>>;
    fn start_container<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), EngineError>>;
    fn stop_container<'a>(
        &'a self,
        name: &'a str,
        grace_secs: i32,
    ) -> BoxFuture<'a, Result<(), EngineError>>;
    fn events(
        &self,
        labels: &[(&str, &str)],
    ) -> BoxStream<'static, Result<EventMessage, EngineError>>;
    /// With `input`, the operator's keys go to the container; without, its
    /// output is only read.
    fn attach<'a>(
        &'a self,
        id: &'a str,
        input: bool,
    ) -> BoxFuture<'a, Result<bollard::container::AttachContainerResults, EngineError>>;
    fn resize<'a>(
        &'a self,
        id: &'a str,
        width: u16,
        height: u16,
    ) -> BoxFuture<'a, Result<(), EngineError>>;
    fn create_container<'a>(
        &'a self,
        name: &'a str,
        body: ContainerCreateBody,
    ) -> BoxFuture<'a, Result<String, EngineError>>;
    fn inspect_container<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ContainerInspectResponse>, EngineError>>;
    fn remove_container<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>>;
    fn build_image<'a>(
        &'a self,
        context_tar: Vec<u8>,
        tag: &'a str,
        labels: &'a HashMap<String, String>,
        progress: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<(), EngineError>>;
    fn inspect_image<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Option<ImageInspect>, EngineError>>;
    fn remove_image<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, Result<bool, EngineError>>;
    fn output_since<'a>(
        &'a self,
        id: &'a str,
        since_unix: i64,
    ) -> BoxFuture<'a, Result<bool, EngineError>>;
    fn usage<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Usage>, EngineError>>;
    fn logs(
        &self,
        id: &str,
        options: LogsRequest,
    ) -> BoxStream<'static, Result<Vec<u8>, EngineError>>;
    fn exec<'a>(
        &'a self,
        id: &'a str,
        argv: Vec<String>,
    ) -> BoxFuture<'a, Result<ExecOutcome, EngineError>>;
    fn probe<'a>(
        &'a self,
        image: &'a str,
        argv: Vec<String>,
        labels: HashMap<String, String>,
    ) -> BoxFuture<'a, Result<ExecOutcome, EngineError>>;
    fn exec_attached<'a>(
        &'a self,
        id: &'a str,
        request: ExecRequest,
    ) -> BoxFuture<'a, Result<AttachedExec, EngineError>>;
    fn exec_exit_code<'a>(
        &'a self,
        exec_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<i64>, EngineError>>;
    fn resize_exec<'a>(
        &'a self,
        exec_id: &'a str,
        width: u16,
        height: u16,
    ) -> BoxFuture<'a, Result<(), EngineError>>;
}

/// A command to run in a container with its streams attached (`jackin
/// exec`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecRequest {
    pub argv: Vec<String>,
    /// `uid:gid` or a name; the container's user when absent.
    pub user: Option<String>,
    pub working_dir: Option<String>,
    /// `NAME=value` pairs added to the container's environment.
    pub env: Vec<String>,
    /// Attach standard input.
    pub stdin: bool,
    /// Give the command a terminal.
    pub tty: bool,
}

/// A command started by [`Engine::exec_attached`]: its id, and its streams.
pub struct AttachedExec {
    pub exec_id: String,
    pub streams: bollard::container::AttachContainerResults,
}

/// Which of a container's output to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LogsRequest {
    /// Keep streaming what it writes next.
    pub follow: bool,
    /// Only output since this time (seconds since the epoch).
    pub since_unix: Option<i64>,
    /// Only output before this time (seconds since the epoch).
    pub until_unix: Option<i64>,
    /// Only the last lines.
    pub tail: Option<u64>,
    /// Put the time each entry was written before it (RFC 3339 and a
    /// space).
    pub timestamps: bool,
}

/// How a command run with `docker exec` ended.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExecOutcome {
    /// `None` when the engine did not report one.
    pub exit_code: Option<i64>,
    /// The end of what it wrote (standard output and error together),
    /// at most [`EXEC_OUTPUT_BYTES`].
    pub output: String,
}

/// What a running container has used since it started, from its own
/// counters, as one stats call reports them. Each only grows while the
/// container runs; a new container starts from zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU time, in nanoseconds.
    pub cpu_nanos: u64,
    /// Bytes written to block devices, as the block I/O controller counts
    /// them: where the kernel charges the writes to the container (cgroup
    /// v2 at writeback). Zero where it does not (cgroup v1, FUSE storage).
    pub disk_written: u64,
    /// Bytes received and sent on all its networks.
    pub net_bytes: u64,
    /// Memory in use now, in bytes (not a counter).
    pub memory: u64,
}

/// How much of a container's last log entry [`Engine::last_output`] keeps.
pub const LAST_OUTPUT_BYTES: usize = 4096;

/// How much of an exec's output is kept: its end.
pub const EXEC_OUTPUT_BYTES: usize = 4096;

/// Adds `chunk` to `output`, keeping (about) the last [`EXEC_OUTPUT_BYTES`].
fn keep_tail(output: &mut Vec<u8>, chunk: &[u8]) {
    output.extend_from_slice(chunk);
    if output.len() > 2 * EXEC_OUTPUT_BYTES {
        output.drain(..output.len() - EXEC_OUTPUT_BYTES);
    }
}

/// The last [`EXEC_OUTPUT_BYTES`] of `output`, as text.
fn tail_text(output: &[u8]) -> String {
    let start = output.len().saturating_sub(EXEC_OUTPUT_BYTES);
    String::from_utf8_lossy(&output[start..]).into_owned()
}

/// A connection to one engine. Every call goes through here, so
/// [`Engine::calls`] counts them all: the measure of what a pass costs.
#[derive(Clone)]
pub struct Engine {
    api: Arc<dyn EngineCalls>,
    endpoint: String,
    calls: Arc<AtomicU64>,
}

impl std::fmt::Debug for Engine {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("endpoint", &self.endpoint)
            .field("calls", &self.calls())
            .finish()
    }
}

/// The labels that mark an engine object as owned by one instance of one home.
pub fn owner_labels(instance: &str, uid: &str, home_id: &str) -> HashMap<String, String> {
    HashMap::from([
        (label::MANAGED.to_owned(), "true".to_owned()),
        (label::HOME.to_owned(), home_id.to_owned()),
        (label::INSTANCE.to_owned(), instance.to_owned()),
        (label::UID.to_owned(), uid.to_owned()),
    ])
}

fn label_filter(labels: &[(&str, &str)]) -> HashMap<String, Vec<String>> {
    HashMap::from([(
        "label".to_owned(),
        labels.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    )])
}

impl Engine {
    /// Connects to the engine the environment selects (see
    /// [`endpoint::resolve`]) and negotiates the API version, which also
    /// proves the engine answers.
    pub async fn connect() -> Result<Self, EngineError> {
        Self::connect_named(None).await
    }

    /// Connects to the engine an instance names (see
    /// [`endpoint::resolve_named`]); `None` is [`Engine::connect`]'s.
    pub async fn connect_named(engine: Option<&str>) -> Result<Self, EngineError> {
        let endpoint = endpoint::resolve_named(&Inputs::from_env(), engine)?;
        let unreachable = |source| EngineError::Unreachable {
            endpoint: endpoint.host.clone(),
            source,
        };
        // Every request waits for the engine's answer this long at most
        // (the headers of a stream: not what follows them).
        let docker = match &endpoint.tls {
            Some(tls) => Docker::connect_with_ssl(
                &endpoint.host,
                &tls.key,
                &tls.cert,
                &tls.ca,
                answer::ANSWER.as_secs(),
                bollard::API_DEFAULT_VERSION,
            ),
            None => {
                Docker::connect_with_host(&endpoint.host).map(|d| d.with_timeout(answer::ANSWER))
            }
        }
        .map_err(unreachable)?;
        let action = "connect (agree on the API version)";
        let no_answer = || EngineError::NoAnswer {
            endpoint: endpoint.host.clone(),
            action: action.to_owned(),
            after: answer::ANSWER,
        };
        let negotiated = answer::awaited(&endpoint.host, action, false, docker.negotiate_version());
        let docker = match tokio::time::timeout(answer::ANSWER, negotiated).await {
            Ok(Ok(docker)) => docker,
            Ok(Err(BollardError::RequestTimeoutError)) | Err(_) => return Err(no_answer()),
            Ok(Err(e)) => return Err(unreachable(e)),
        };
        tracing::debug!(
            host = endpoint.host,
            source = endpoint.source,
            "engine selected"
        );
        let api = DockerCalls {
            docker,
            endpoint: endpoint.host.clone(),
        };
        Ok(Self::with(Arc::new(api), endpoint.host))
    }

    /// An engine made of `api`, reached at `endpoint` (for messages).
    pub fn with(api: Arc<dyn EngineCalls>, endpoint: impl Into<String>) -> Self {
        Self {
            api,
            endpoint: endpoint.into(),
            calls: Arc::default(),
        }
    }

    /// Where the engine is reached, for messages.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// How many requests this connection has made so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// Asks the engine: `call` is what was asked (`action`, for messages),
    /// answered within `wait`'s deadline (see [`answer`]).
    async fn ask<T>(
        &self,
        action: &str,
        wait: Wait,
        call: BoxFuture<'_, Result<T, EngineError>>,
    ) -> Result<T, EngineError> {
        let (deadline, quiet) = match wait {
            Wait::Answer => (Some(answer::ANSWER), false),
            Wait::Work(deadline) => (Some(deadline), true),
            Wait::Caller => (None, true),
        };
        // Boxed: every engine call goes through here, and the timers would
        // otherwise grow every future that awaits one.
        let call = Box::pin(answer::awaited(&self.endpoint, action, quiet, call));
        let Some(deadline) = deadline else {
            return call.await;
        };
        Box::pin(tokio::time::timeout(deadline, call))
            .await
            .unwrap_or_else(|_| {
                Err(EngineError::NoAnswer {
                    endpoint: self.endpoint.clone(),
                    action: action.to_owned(),
                    after: deadline,
                })
            })
    }

    fn count(&self) -> &dyn EngineCalls {
        self.calls.fetch_add(1, Ordering::Relaxed);
        self.api.as_ref()
    }

    /// The negotiated API version, e.g. `1.41`.
    pub fn api_version(&self) -> String {
        self.count().api_version()
    }

    /// Containers, running or not, that carry every label in `labels`.
    pub async fn list_containers(
        &self,
        labels: &[(&str, &str)],
    ) -> Result<Vec<ContainerSummary>, EngineError> {
        self.ask(
            "list containers",
            Wait::Answer,
            self.count().list_containers(labels),
        )
        .await
    }

    /// Networks that carry every label in `labels`.
    pub async fn list_networks(
        &self,
        labels: &[(&str, &str)],
    ) -> Result<Vec<Network>, EngineError> {
        self.ask(
            "list networks",
            Wait::Answer,
            self.count().list_networks(labels),
        )
        .await
    }

    /// Volumes that carry every label in `labels`.
    pub async fn list_volumes(&self, labels: &[(&str, &str)]) -> Result<Vec<Volume>, EngineError> {
        self.ask(
            "list volumes",
            Wait::Answer,
            self.count().list_volumes(labels),
        )
        .await
    }

    /// Removes a volume; `false` when it was already gone.
    pub async fn remove_volume(&self, name: &str) -> Result<bool, EngineError> {
        self.ask(
            &format!("remove volume {name}"),
            Wait::Answer,
            self.count().remove_volume(name),
        )
        .await
    }

    /// Creates a labelled volume. The engine answers as created for a
    /// volume of that name that exists already, with that volume's labels,
    /// which are returned.
    pub async fn create_volume(
        &self,
        name: &str,
        labels: HashMap<String, String>,
    ) -> Result<HashMap<String, String>, EngineError> {
        self.ask(
            &format!("create volume {name}"),
            Wait::Answer,
            self.count().create_volume(name, labels),
        )
        .await
    }

    /// Every local image, with its id and tags.
    pub async fn list_images(&self) -> Result<Vec<ImageSummary>, EngineError> {
        self.ask("list images", Wait::Answer, self.count().list_images())
            .await
    }

    /// Creates a bridge network, on `subnet` when one is given (else the
    /// engine picks from its default pools); returns its id.
    pub async fn create_network(
        &self,
        name: &str,
        labels: HashMap<String, String>,
        subnet: Option<String>,
    ) -> Result<String, EngineError> {
        self.ask(
            &format!("create network {name}"),
            Wait::Answer,
            self.count().create_network(name, labels, subnet),
        )
        .await
    }

    /// Removes a network; `false` when it was already gone.
    pub async fn remove_network(&self, name: &str) -> Result<bool, EngineError> {
        self.ask(
            &format!("remove network {name}"),
            Wait::Answer,
            self.count().remove_network(name),
        )
        .await
    }

    pub async fn start_container(&self, name: &str) -> Result<(), EngineError> {
        self.ask(
            &format!("start container {name}"),
            Wait::Answer,
            self.count().start_container(name),
        )
        .await
    }

    /// Stops a container, giving its process `grace_secs` before SIGKILL.
    pub async fn stop_container(&self, name: &str, grace_secs: i32) -> Result<(), EngineError> {
        self.ask(
            &format!("stop container {name}"),
            Wait::Work(answer::stop(grace_secs)),
            self.count().stop_container(name, grace_secs),
        )
        .await
    }

    /// The engine's event stream, filtered by label. Events are hints that
    /// something changed, not a log: the stream may drop them under load.
    pub fn events(
        &self,
        labels: &[(&str, &str)],
    ) -> BoxStream<'static, Result<EventMessage, EngineError>> {
        self.count().events(labels)
    }

    /// Attaches to a container's terminal: its output, and a writer to its
    /// input. `Ctrl-P Ctrl-Q` detaches, leaving it running.
    pub async fn attach(
        &self,
        id: &str,
    ) -> Result<bollard::container::AttachContainerResults, EngineError> {
        self.ask(
            &format!("attach to {id}"),
            Wait::Answer,
            self.count().attach(id, true),
        )
        .await
    }

    /// The container's output as it writes it, from now on: an attach that
    /// only reads, so that output with no newline counts too (the log holds
    /// an unfinished line back). Nothing goes to its input.
    pub async fn watch_output(
        &self,
        id: &str,
    ) -> Result<bollard::container::AttachContainerResults, EngineError> {
        self.ask(
            &format!("watch the output of {id}"),
            Wait::Answer,
            self.count().attach(id, false),
        )
        .await
    }

    /// Sets a container's terminal size.
    pub async fn resize(&self, id: &str, width: u16, height: u16) -> Result<(), EngineError> {
        self.ask(
            &format!("resize {id}"),
            Wait::Answer,
            self.count().resize(id, width, height),
        )
        .await
    }

    /// Creates a container named `name`; returns its id.
    pub async fn create_container(
        &self,
        name: &str,
        body: ContainerCreateBody,
    ) -> Result<String, EngineError> {
        self.ask(
            &format!("create container {name}"),
            Wait::Answer,
            self.count().create_container(name, body),
        )
        .await
    }

    /// `None` when the engine has no such container.
    pub async fn inspect_container(
        &self,
        name: &str,
    ) -> Result<Option<ContainerInspectResponse>, EngineError> {
        self.ask(
            &format!("inspect container {name}"),
            Wait::Answer,
            self.count().inspect_container(name),
        )
        .await
    }

    /// Removes a container, killing it first, with its anonymous volumes
    /// (which nothing else could ever reuse); `false` when it was already gone.
    pub async fn remove_container(&self, name: &str) -> Result<bool, EngineError> {
        self.ask(
            &format!("remove container {name}"),
            Wait::Answer,
            self.count().remove_container(name),
        )
        .await
    }

    /// Builds an image from a tar build context, reporting each line of the
    /// builder's output to `progress`; returns the image id.
    pub async fn build_image(
        &self,
        context_tar: Vec<u8>,
        tag: &str,
        labels: &HashMap<String, String>,
        mut progress: impl FnMut(&str) + Send,
    ) -> Result<String, EngineError> {
        let build = self
            .count()
            .build_image(context_tar, tag, labels, &mut progress);
        self.ask(&format!("build {tag}"), Wait::Work(answer::BUILD), build)
            .await?;
        self.image_id(tag)
            .await?
            .ok_or_else(|| EngineError::Build(format!("the build finished but {tag} is missing")))
    }

    /// The id of a local image, `None` when the engine has no such image.
    pub async fn image_id(&self, reference: &str) -> Result<Option<String>, EngineError> {
        let inspect = self.count().inspect_image(reference);
        Ok(self
            .ask(&format!("inspect image {reference}"), Wait::Answer, inspect)
            .await?
            .and_then(|image| image.id))
    }

    /// An image's id and what it runs by default, from one inspection;
    /// `None` when the engine has no such image.
    pub async fn image_defaults(
        &self,
        reference: &str,
    ) -> Result<Option<ImageDefaults>, EngineError> {
        let Some(image) = self
            .ask(
                &format!("inspect image {reference}"),
                Wait::Answer,
                self.count().inspect_image(reference),
            )
            .await?
        else {
            return Ok(None);
        };
        let config = image.config.unwrap_or_default();
        Ok(Some(ImageDefaults {
            id: image.id.unwrap_or_default(),
            command: config
                .entrypoint
                .unwrap_or_default()
                .into_iter()
                .chain(config.cmd.unwrap_or_default())
                .collect(),
            working_dir: config.working_dir.filter(|dir| !dir.is_empty()),
            user: config.user.filter(|user| !user.is_empty()),
        }))
    }

    /// Starts a command in a container with its streams attached.
    pub async fn exec_attached(
        &self,
        id: &str,
        request: ExecRequest,
    ) -> Result<AttachedExec, EngineError> {
        self.ask(
            &format!("exec in {id}"),
            Wait::Answer,
            self.count().exec_attached(id, request),
        )
        .await
    }

    /// How a command started by [`Engine::exec_attached`] ended; `None`
    /// while it runs.
    pub async fn exec_exit_code(&self, exec_id: &str) -> Result<Option<i64>, EngineError> {
        self.ask(
            &format!("inspect exec {exec_id}"),
            Wait::Answer,
            self.count().exec_exit_code(exec_id),
        )
        .await
    }

    /// Tells a command's terminal its size.
    pub async fn resize_exec(
        &self,
        exec_id: &str,
        width: u16,
        height: u16,
    ) -> Result<(), EngineError> {
        self.ask(
            &format!("resize exec {exec_id}"),
            Wait::Answer,
            self.count().resize_exec(exec_id, width, height),
        )
        .await
    }

    /// Removes an image; `false` when it was already gone.
    pub async fn remove_image(&self, reference: &str) -> Result<bool, EngineError> {
        self.ask(
            &format!("remove image {reference}"),
            Wait::Answer,
            self.count().remove_image(reference),
        )
        .await
    }

    /// The container's output (standard output and error, as written), from
    /// its start or as `request` narrows it.
    pub fn logs(
        &self,
        id: &str,
        request: LogsRequest,
    ) -> BoxStream<'static, Result<Vec<u8>, EngineError>> {
        self.count().logs(id, request)
    }

    /// Whether the container wrote anything to its output since the given
    /// time (whole seconds since the epoch).
    pub async fn output_since(&self, id: &str, since_unix: i64) -> Result<bool, EngineError> {
        self.ask(
            &format!("read the log of {id}"),
            Wait::Answer,
            self.count().output_since(id, since_unix),
        )
        .await
    }

    /// When the container last wrote output, and that last entry of its
    /// log (a line, or the end of one), as written: the agent's, so only
    /// to be shown once made safe. `None` when it wrote nothing.
    pub async fn last_output(&self, id: &str) -> Result<Option<(Timestamp, Vec<u8>)>, EngineError> {
        let request = LogsRequest {
            tail: Some(1),
            timestamps: true,
            ..LogsRequest::default()
        };
        let mut entry = Vec::new();
        let mut logs = self.logs(id, request);
        while let Some(chunk) = logs.next().await {
            entry.extend(chunk?);
            // One entry: a runaway line is cut, not read whole.
            if entry.len() > LAST_OUTPUT_BYTES {
                break;
            }
        }
        Ok(crate::attention::parse_last_output(&entry)
            .map(|(at, text)| (at, text[..text.len().min(LAST_OUTPUT_BYTES)].to_vec())))
    }

    /// What the container has used so far (CPU, block I/O, network), from
    /// its own counters in one stats call; `None` when the engine reports no
    /// CPU time (it is not running).
    pub async fn usage(&self, id: &str) -> Result<Option<Usage>, EngineError> {
        self.ask(
            &format!("read the counters of {id}"),
            Wait::Answer,
            self.count().usage(id),
        )
        .await
    }

    /// Runs `argv` in the container and waits for it to end.
    pub async fn exec(&self, id: &str, argv: Vec<String>) -> Result<ExecOutcome, EngineError> {
        self.ask(
            &format!("exec in {id}"),
            Wait::Caller,
            self.count().exec(id, argv),
        )
        .await
    }

    /// Runs `argv` in a throwaway container of `image` to its end, and
    /// removes it; returns its exit code and the end of its output. `labels`
    /// mark the container so that a sweep removes it should jackin die
    /// meanwhile.
    pub async fn probe(
        &self,
        image: &str,
        argv: Vec<String>,
        labels: HashMap<String, String>,
    ) -> Result<ExecOutcome, EngineError> {
        self.ask(
            &format!("probe image {image}"),
            Wait::Caller,
            self.count().probe(image, argv, labels),
        )
        .await
    }
}

/// An image's id and what it runs by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageDefaults {
    pub id: String,
    pub command: Vec<String>,
    pub working_dir: Option<String>,
    /// The user it runs as; root when absent.
    pub user: Option<String>,
}

/// The real engine, through bollard.
struct DockerCalls {
    docker: Docker,
    endpoint: String,
}

impl DockerCalls {
    /// Creates a command in container `id` and starts it; its id, and its
    /// streams when attached.
    async fn start_exec(
        &self,
        id: &str,
        config: bollard::exec::CreateExecOptions<String>,
        tty: bool,
        what: &str,
    ) -> Result<(String, bollard::exec::StartExecResults), EngineError> {
        let exec = self
            .docker
            .create_exec(id, config)
            .await
            .map_err(|e| self.classify(what, e))?;
        let options = bollard::exec::StartExecOptions {
            tty,
            ..Default::default()
        };
        let started = self
            .docker
            .start_exec(&exec.id, Some(options))
            .await
            .map_err(|e| self.classify(what, e))?;
        Ok((exec.id, started))
    }

    /// Only a failure to talk to the engine at all is "unreachable"; an
    /// engine that answered with an error says what went wrong, and that is
    /// what the operator is told (a failed build is not a dead engine).
    fn classify(&self, action: &str, err: BollardError) -> EngineError {
        match err {
            BollardError::DockerResponseServerError {
                status_code,
                message,
            } => EngineError::Refused {
                action: action.to_owned(),
                status: status_code,
                message,
            },
            BollardError::DockerStreamError { error } if action.starts_with("build") => {
                EngineError::Build(error)
            }
            BollardError::DockerStreamError { error } => EngineError::Failed {
                action: action.to_owned(),
                message: error,
            },
            BollardError::DockerContainerWaitError { error, code } => EngineError::Failed {
                action: action.to_owned(),
                message: format!("{error} (exit code {code})"),
            },
            BollardError::JsonDataError { .. }
            | BollardError::JsonSerdeError { .. }
            | BollardError::StrParseError { .. }
            | BollardError::APIVersionParseError {}
            | BollardError::MissingSessionBuildkitError {}
            | BollardError::MissingVersionBuildkitError {} => EngineError::Failed {
                action: action.to_owned(),
                message: err.to_string(),
            },
            BollardError::RequestTimeoutError => EngineError::NoAnswer {
                endpoint: self.endpoint.clone(),
                action: action.to_owned(),
                after: answer::ANSWER,
            },
            other => EngineError::Unreachable {
                endpoint: self.endpoint.clone(),
                source: other,
            },
        }
    }

    /// `Ok(None)` only when the engine answered 404.
    fn absent_on_404<T>(
        &self,
        action: &str,
        result: Result<T, BollardError>,
    ) -> Result<Option<T>, EngineError> {
        match result {
            Ok(value) => Ok(Some(value)),
            Err(BollardError::DockerResponseServerError {
                status_code: 404, ..
            }) => Ok(None),
            Err(err) => Err(self.classify(action, err)),
        }
    }
}

impl EngineCalls for DockerCalls {
    fn api_version(&self) -> String {
        self.docker.client_version().to_string()
    }

    fn list_containers<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<ContainerSummary>, EngineError>> {
        Box::pin(async move {
            let filters = label_filter(labels);
            let options = ListContainersOptionsBuilder::default()
                .all(true)
                .filters(&filters)
                .build();
            self.docker
                .list_containers(Some(options))
                .await
                .map_err(|e| self.classify("list containers", e))
        })
    }

    fn list_networks<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<Network>, EngineError>> {
        Box::pin(async move {
            let filters = label_filter(labels);
            let options = ListNetworksOptionsBuilder::default()
                .filters(&filters)
                .build();
            self.docker
                .list_networks(Some(options))
                .await
                .map_err(|e| self.classify("list networks", e))
        })
    }

    fn list_volumes<'a>(
        &'a self,
        labels: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<Volume>, EngineError>> {
        Box::pin(async move {
            let filters = label_filter(labels);
            let options = ListVolumesOptionsBuilder::default()
                .filters(&filters)
                .build();
            self.docker
                .list_volumes(Some(options))
                .await
                .map(|r| r.volumes.unwrap_or_default())
                .map_err(|e| self.classify("list volumes", e))
        })
    }

    fn create_volume<'a>(
        &'a self,
        name: &'a str,
        labels: HashMap<String, String>,
    ) -> BoxFuture<'a, Result<HashMap<String, String>, EngineError>> {
        Box::pin(async move {
            let request = models::VolumeCreateRequest {
                name: Some(name.to_owned()),
                labels: Some(labels),
                ..Default::default()
            };
            self.docker
                .create_volume(request)
                .await
                .map(|volume| volume.labels)
                .map_err(|e| self.classify(&format!("create volume {name}"), e))
        })
    }

    fn remove_volume<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        Box::pin(async move {
            let options = RemoveVolumeOptionsBuilder::default().force(true).build();
            let result = self.docker.remove_volume(name, Some(options)).await;
            Ok(self
                .absent_on_404(&format!("remove volume {name}"), result)?
                .is_some())
        })
    }

    fn list_images(&self) -> BoxFuture<'_, Result<Vec<ImageSummary>, EngineError>> {
        Box::pin(async move {
            let options = ListImagesOptionsBuilder::default().all(false).build();
            self.docker
                .list_images(Some(options))
                .await
                .map_err(|e| self.classify("list images", e))
        })
    }

    fn create_network<'a>(
        &'a self,
        name: &'a str,
        labels: HashMap<String, String>,
        subnet: Option<String>,
    ) -> BoxFuture<'a, Result<String, EngineError>> {
        Box::pin(async move {
            let ipam = subnet.map(|subnet| Ipam {
                config: Some(vec![IpamConfig {
                    subnet: Some(subnet),
                    ..Default::default()
                }]),
                ..Default::default()
            });
            let request = NetworkCreateRequest {
                name: name.to_owned(),
                driver: Some("bridge".into()),
                labels: Some(labels),
                ipam,
                ..Default::default()
            };
            self.docker
                .create_network(request)
                .await
                .map(|r| r.id)
                .map_err(|e| self.classify(&format!("create network {name}"), e))
        })
    }

    fn remove_network<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        Box::pin(async move {
            let result = self.docker.remove_network(name).await;
            Ok(self
                .absent_on_404(&format!("remove network {name}"), result)?
                .is_some())
        })
    }

    fn start_container<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<(), EngineError>> {
        Box::pin(async move {
            self.docker
                .start_container(name, None)
                .await
                .map_err(|e| self.classify(&format!("start container {name}"), e))
        })
    }

    fn stop_container<'a>(
        &'a self,
        name: &'a str,
        grace_secs: i32,
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        Box::pin(async move {
            let options = StopContainerOptionsBuilder::default().t(grace_secs).build();
            // The engine answers once the container stopped: after the
            // grace period at most, then its own answer.
            let docker = self.docker.clone().with_timeout(answer::stop(grace_secs));
            let action = format!("stop container {name}");
            match docker.stop_container(name, Some(options)).await {
                Err(BollardError::RequestTimeoutError) => Err(EngineError::NoAnswer {
                    endpoint: self.endpoint.clone(),
                    action,
                    after: answer::stop(grace_secs),
                }),
                result => self.absent_on_404(&action, result).map(drop),
            }
        })
    }

    fn events(
        &self,
        labels: &[(&str, &str)],
    ) -> BoxStream<'static, Result<EventMessage, EngineError>> {
        let filters = label_filter(labels);
        let options = EventsOptionsBuilder::default().filters(&filters).build();
        let this = DockerCalls {
            docker: self.docker.clone(),
            endpoint: self.endpoint.clone(),
        };
        self.docker
            .events(Some(options))
            .map(move |item| item.map_err(|e| this.classify("stream events", e)))
            .boxed()
    }

    fn attach<'a>(
        &'a self,
        id: &'a str,
        input: bool,
    ) -> BoxFuture<'a, Result<bollard::container::AttachContainerResults, EngineError>> {
        Box::pin(async move {
            let options = AttachContainerOptionsBuilder::default()
                .stdin(input)
                .stdout(true)
                .stderr(true)
                .stream(true)
                .detach_keys("ctrl-p,ctrl-q")
                .build();
            self.docker
                .attach_container(id, Some(options))
                .await
                .map_err(|e| self.classify(&format!("attach to {id}"), e))
        })
    }

    fn resize<'a>(
        &'a self,
        id: &'a str,
        width: u16,
        height: u16,
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        Box::pin(async move {
            let options = ResizeContainerTTYOptionsBuilder::default()
                .w(i32::from(width))
                .h(i32::from(height))
                .build();
            self.docker
                .resize_container_tty(id, options)
                .await
                .map_err(|e| self.classify(&format!("resize {id}"), e))
        })
    }

    fn create_container<'a>(
        &'a self,
        name: &'a str,
        body: ContainerCreateBody,
    ) -> BoxFuture<'a, Result<String, EngineError>> {
        Box::pin(async move {
            let options = CreateContainerOptionsBuilder::default().name(name).build();
            self.docker
                .create_container(Some(options), body)
                .await
                .map(|r| r.id)
                .map_err(|e| self.classify(&format!("create container {name}"), e))
        })
    }

    fn inspect_container<'a>(
        &'a self,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Option<ContainerInspectResponse>, EngineError>> {
        Box::pin(async move {
            let result = self.docker.inspect_container(name, None).await;
            self.absent_on_404(&format!("inspect container {name}"), result)
        })
    }

    fn remove_container<'a>(&'a self, name: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        Box::pin(async move {
            let options = RemoveContainerOptionsBuilder::default()
                .force(true)
                .v(true)
                .build();
            let result = self.docker.remove_container(name, Some(options)).await;
            Ok(self
                .absent_on_404(&format!("remove container {name}"), result)?
                .is_some())
        })
    }

    fn build_image<'a>(
        &'a self,
        context_tar: Vec<u8>,
        tag: &'a str,
        labels: &'a HashMap<String, String>,
        progress: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        Box::pin(async move {
            let options = BuildImageOptionsBuilder::default()
                .t(tag)
                .rm(true)
                .forcerm(true)
                .labels(labels)
                .build();
            // The engine answers a build once it has the context and
            // starts on it; a large context on a busy engine may take
            // longer than a plain call's answer.
            let docker = self.docker.clone().with_timeout(answer::BUILD);
            let mut stream =
                docker.build_image(options, None, Some(bollard::body_full(context_tar.into())));
            while let Some(item) = stream.next().await {
                let info = item.map_err(|e| self.classify(&format!("build {tag}"), e))?;
                if let Some(detail) = info.error_detail {
                    return Err(EngineError::Build(detail.message.unwrap_or_default()));
                }
                if let Some(line) = info.stream.as_deref().map(str::trim_end)
                    && !line.is_empty()
                {
                    progress(line);
                }
            }
            Ok(())
        })
    }

    fn inspect_image<'a>(
        &'a self,
        reference: &'a str,
    ) -> BoxFuture<'a, Result<Option<ImageInspect>, EngineError>> {
        Box::pin(async move {
            let result = self.docker.inspect_image(reference).await;
            self.absent_on_404(&format!("inspect image {reference}"), result)
        })
    }

    fn remove_image<'a>(&'a self, reference: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        Box::pin(async move {
            let options = RemoveImageOptionsBuilder::default().force(true).build();
            let result = self
                .docker
                .remove_image(reference, Some(options), None)
                .await;
            Ok(self
                .absent_on_404(&format!("remove image {reference}"), result)?
                .is_some())
        })
    }

    fn output_since<'a>(
        &'a self,
        id: &'a str,
        since_unix: i64,
    ) -> BoxFuture<'a, Result<bool, EngineError>> {
        Box::pin(async move {
            let options = LogsOptionsBuilder::default()
                .stdout(true)
                .stderr(true)
                .since(i32::try_from(since_unix).unwrap_or(i32::MAX))
                .tail("1")
                .build();
            let mut logs = self.docker.logs(id, Some(options));
            match logs.next().await {
                None => Ok(false),
                Some(Ok(_)) => Ok(true),
                Some(Err(e)) => Err(self.classify(&format!("read the logs of {id}"), e)),
            }
        })
    }

    fn logs(
        &self,
        id: &str,
        request: LogsRequest,
    ) -> BoxStream<'static, Result<Vec<u8>, EngineError>> {
        let mut options = LogsOptionsBuilder::default()
            .stdout(true)
            .stderr(true)
            .follow(request.follow)
            .timestamps(request.timestamps);
        if let Some(since) = request.since_unix {
            options = options.since(i32::try_from(since).unwrap_or(i32::MAX));
        }
        if let Some(until) = request.until_unix {
            options = options.until(i32::try_from(until).unwrap_or(i32::MAX));
        }
        let tail = request
            .tail
            .map_or_else(|| "all".to_owned(), |n| n.to_string());
        let options = options.tail(&tail).build();
        let this = DockerCalls {
            docker: self.docker.clone(),
            endpoint: self.endpoint.clone(),
        };
        let what = format!("read the logs of {id}");
        self.docker
            .logs(id, Some(options))
            .map(move |item| {
                item.map(|chunk| chunk.into_bytes().to_vec())
                    .map_err(|e| this.classify(&what, e))
            })
            .boxed()
    }

    fn usage<'a>(&'a self, id: &'a str) -> BoxFuture<'a, Result<Option<Usage>, EngineError>> {
        Box::pin(async move {
            let options = StatsOptionsBuilder::default()
                .stream(false)
                .one_shot(true)
                .build();
            let mut stats = self.docker.stats(id, Some(options));
            let stats = match stats.next().await {
                None => return Ok(None),
                Some(Ok(stats)) => stats,
                Some(Err(e)) => return Err(self.classify(&format!("read the stats of {id}"), e)),
            };
            let Some(cpu_nanos) = stats
                .cpu_stats
                .and_then(|cpu| cpu.cpu_usage)
                .and_then(|usage| usage.total_usage)
                .filter(|nanos| *nanos > 0)
            else {
                return Ok(None);
            };
            // cgroup v1 says `Write`, v2 `write`.
            let disk_written = stats
                .blkio_stats
                .and_then(|blkio| blkio.io_service_bytes_recursive)
                .unwrap_or_default()
                .iter()
                .filter(|entry| {
                    entry
                        .op
                        .as_deref()
                        .is_some_and(|op| op.eq_ignore_ascii_case("write"))
                })
                .filter_map(|entry| entry.value)
                .fold(0u64, u64::saturating_add);
            let net_bytes = stats
                .networks
                .unwrap_or_default()
                .values()
                .flat_map(|n| [n.rx_bytes, n.tx_bytes])
                .flatten()
                .fold(0u64, u64::saturating_add);
            let memory = stats.memory_stats.and_then(|m| m.usage).unwrap_or_default();
            Ok(Some(Usage {
                cpu_nanos,
                disk_written,
                net_bytes,
                memory,
            }))
        })
    }

    fn exec<'a>(
        &'a self,
        id: &'a str,
        argv: Vec<String>,
    ) -> BoxFuture<'a, Result<ExecOutcome, EngineError>> {
        Box::pin(async move {
            let what = format!("run {:?} in {id}", argv.first().map_or("", String::as_str));
            let config = bollard::exec::CreateExecOptions {
                cmd: Some(argv),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                ..Default::default()
            };
            let (exec_id, started) = self.start_exec(id, config, false, &what).await?;
            let mut output = Vec::new();
            if let bollard::exec::StartExecResults::Attached {
                output: mut stream, ..
            } = started
            {
                while let Some(chunk) = stream.next().await {
                    let chunk = chunk.map_err(|e| self.classify(&what, e))?;
                    keep_tail(&mut output, &chunk.into_bytes());
                }
            }
            let inspected = self
                .docker
                .inspect_exec(&exec_id)
                .await
                .map_err(|e| self.classify(&what, e))?;
            Ok(ExecOutcome {
                exit_code: inspected.exit_code,
                output: tail_text(&output),
            })
        })
    }

    fn exec_attached<'a>(
        &'a self,
        id: &'a str,
        request: ExecRequest,
    ) -> BoxFuture<'a, Result<AttachedExec, EngineError>> {
        Box::pin(async move {
            let what = format!(
                "run {:?} in {id}",
                request.argv.first().map_or("", String::as_str)
            );
            let config = bollard::exec::CreateExecOptions {
                cmd: Some(request.argv),
                user: request.user,
                working_dir: request.working_dir,
                env: Some(request.env),
                attach_stdin: Some(request.stdin),
                attach_stdout: Some(true),
                attach_stderr: Some(true),
                tty: Some(request.tty),
                ..Default::default()
            };
            match self.start_exec(id, config, request.tty, &what).await? {
                (exec_id, bollard::exec::StartExecResults::Attached { output, input }) => {
                    Ok(AttachedExec {
                        exec_id,
                        streams: bollard::container::AttachContainerResults { output, input },
                    })
                }
                (_, bollard::exec::StartExecResults::Detached) => Err(EngineError::Failed {
                    action: what,
                    message: "the engine started it detached".into(),
                }),
            }
        })
    }

    fn exec_exit_code<'a>(
        &'a self,
        exec_id: &'a str,
    ) -> BoxFuture<'a, Result<Option<i64>, EngineError>> {
        Box::pin(async move {
            let inspected = self
                .docker
                .inspect_exec(exec_id)
                .await
                .map_err(|e| self.classify(&format!("inspect exec {exec_id}"), e))?;
            Ok(match inspected.running {
                Some(true) => None,
                _ => inspected.exit_code,
            })
        })
    }

    fn resize_exec<'a>(
        &'a self,
        exec_id: &'a str,
        width: u16,
        height: u16,
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        Box::pin(async move {
            let options = bollard::exec::ResizeExecOptions { height, width };
            self.docker
                .resize_exec(exec_id, options)
                .await
                .map_err(|e| self.classify(&format!("resize exec {exec_id}"), e))
        })
    }

    fn probe<'a>(
        &'a self,
        image: &'a str,
        argv: Vec<String>,
        labels: HashMap<String, String>,
    ) -> BoxFuture<'a, Result<ExecOutcome, EngineError>> {
        Box::pin(async move {
            let name = format!("jackin-probe-{}", uuid::Uuid::new_v4().simple());
            let body = ContainerCreateBody {
                image: Some(image.to_owned()),
                entrypoint: Some(argv),
                cmd: Some(Vec::new()),
                labels: Some(labels),
                network_disabled: Some(true),
                host_config: Some(crate::restricted::probe()),
                ..Default::default()
            };
            self.create_container(&name, body).await?;
            let result = async {
                self.start_container(&name).await?;
                // A probe is a quick look; one that does not end is cut off.
                for _ in 0..300 {
                    let state = self.inspect_container(&name).await?.and_then(|c| c.state);
                    if let Some(state) = state.filter(|s| s.running != Some(true)) {
                        let mut output = Vec::new();
                        let mut logs = self.logs(&name, LogsRequest::default());
                        while let Some(chunk) = logs.next().await {
                            keep_tail(&mut output, &chunk?);
                        }
                        return Ok(ExecOutcome {
                            exit_code: Some(state.exit_code.unwrap_or(-1)),
                            output: tail_text(&output),
                        });
                    }
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
                Err(EngineError::Refused {
                    action: format!("probe image {image}"),
                    status: 0,
                    message: "the probe did not end within 30s".into(),
                })
            }
            .await;
            self.remove_container(&name).await?;
            result
        })
    }
}
