//! [`Engine`], the one way to the engine: it picks the engine the
//! environment or an instance names, puts the real engine (or a test's)
//! behind the [`EngineCalls`] seam, counts every call in one place (so the
//! "calls per no-op pass" figure cannot drift) and gives each call its
//! deadline (see [`answer`]).

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerSummary, EventMessage, ImageSummary,
    Network, Volume,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use jiff::Timestamp;

use super::calls::{AttachedExec, EngineCalls, ExecOutcome, ExecRequest, LogsRequest, Usage};
use super::docker::DockerCalls;
use super::error::EngineError;
use crate::answer;
use crate::endpoint::{self, Inputs};

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

/// How much of a container's last log entry [`Engine::last_output`] keeps.
pub const LAST_OUTPUT_BYTES: usize = 4096;

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
        let api = DockerCalls::connect(&endpoint).await?;
        tracing::debug!(
            host = endpoint.host,
            source = endpoint.source,
            "engine selected"
        );
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
        Ok(jackin_plan::attention::parse_last_output(&entry)
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

    /// The regular file at `path` in container `id` (which need not have
    /// started), at most `cap` bytes; `None` when it has no such path. See
    /// [`EngineCalls::read_file`].
    pub async fn read_file(
        &self,
        id: &str,
        path: &str,
        cap: u64,
    ) -> Result<Option<Vec<u8>>, EngineError> {
        self.ask(
            &format!("read {path} in container {id}"),
            Wait::Answer,
            self.count().read_file(id, path, cap),
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
