//! The Docker engine adapter: the only code that talks to the engine.
//!
//! Every call maps the engine's answer into three cases a reconciler can act
//! on safely: the object exists, the engine says it does not (404), or the
//! engine could not be asked. The last is never read as "missing", so an
//! engine that does not answer can never trigger a destructive step.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bollard::Docker;
use bollard::errors::Error as BollardError;
pub use bollard::models;
use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerSummary, EventMessage, ImageSummary,
    Network, NetworkCreateRequest, Volume,
};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, BuildImageOptionsBuilder, CreateContainerOptionsBuilder,
    EventsOptionsBuilder, ListContainersOptionsBuilder, ListImagesOptionsBuilder,
    ListNetworksOptionsBuilder, ListVolumesOptionsBuilder, RemoveContainerOptionsBuilder,
    RemoveImageOptionsBuilder, RemoveVolumeOptionsBuilder, ResizeContainerTTYOptionsBuilder,
    StopContainerOptionsBuilder,
};
use futures::{Stream, StreamExt};
use jackin_api::names::label;

use crate::endpoint::{self, EndpointError, Inputs};

#[derive(Debug, thiserror::Error)]
pub enum EngineError {
    #[error(
        "cannot reach the Docker engine at {endpoint}: {source}\n\
         hint: start dockerd, or point DOCKER_HOST at a running engine"
    )]
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
    #[error(transparent)]
    Endpoint(#[from] EndpointError),
}

impl EngineError {
    /// Whether asking again unchanged gets the same answer: the engine found
    /// the request invalid (400), named an image it does not have (404
    /// `No such image`: nothing here can pull it), or a build failed.
    pub fn is_permanent(&self) -> bool {
        match self {
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

/// A connection to one Docker engine, at a negotiated API version.
#[derive(Debug, Clone)]
pub struct Engine {
    docker: Docker,
    endpoint: String,
    /// Requests made through this connection (and its clones); the measure
    /// of what a reconcile pass costs.
    calls: Arc<AtomicU64>,
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
        let endpoint = endpoint::resolve(&Inputs::from_env())?;
        let unreachable = |source| EngineError::Unreachable {
            endpoint: endpoint.host.clone(),
            source,
        };
        const TIMEOUT_SECS: u64 = 120;
        let docker = match &endpoint.tls {
            Some(tls) => Docker::connect_with_ssl(
                &endpoint.host,
                &tls.key,
                &tls.cert,
                &tls.ca,
                TIMEOUT_SECS,
                bollard::API_DEFAULT_VERSION,
            ),
            None => Docker::connect_with_host(&endpoint.host),
        }
        .map_err(unreachable)?;
        let docker = docker.negotiate_version().await.map_err(unreachable)?;
        tracing::debug!(
            host = endpoint.host,
            source = endpoint.source,
            "engine selected"
        );
        Ok(Self {
            docker,
            endpoint: endpoint.host,
            calls: Arc::default(),
        })
    }

    /// Where the engine is reached, for messages.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// How many requests this connection has made so far.
    pub fn calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn count(&self) -> &Docker {
        self.calls.fetch_add(1, Ordering::Relaxed);
        &self.docker
    }

    /// The negotiated API version, e.g. `1.41`.
    pub fn api_version(&self) -> String {
        self.count().client_version().to_string()
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

    /// Containers, running or not, that carry every label in `labels`.
    pub async fn list_containers(
        &self,
        labels: &[(&str, &str)],
    ) -> Result<Vec<ContainerSummary>, EngineError> {
        let filters = label_filter(labels);
        let options = ListContainersOptionsBuilder::default()
            .all(true)
            .filters(&filters)
            .build();
        self.count()
            .list_containers(Some(options))
            .await
            .map_err(|e| self.classify("list containers", e))
    }

    /// Networks that carry every label in `labels`.
    pub async fn list_networks(
        &self,
        labels: &[(&str, &str)],
    ) -> Result<Vec<Network>, EngineError> {
        let filters = label_filter(labels);
        let options = ListNetworksOptionsBuilder::default()
            .filters(&filters)
            .build();
        self.count()
            .list_networks(Some(options))
            .await
            .map_err(|e| self.classify("list networks", e))
    }

    /// Volumes that carry every label in `labels`.
    pub async fn list_volumes(&self, labels: &[(&str, &str)]) -> Result<Vec<Volume>, EngineError> {
        let filters = label_filter(labels);
        let options = ListVolumesOptionsBuilder::default()
            .filters(&filters)
            .build();
        self.count()
            .list_volumes(Some(options))
            .await
            .map(|r| r.volumes.unwrap_or_default())
            .map_err(|e| self.classify("list volumes", e))
    }

    /// Removes a volume; `false` when it was already gone.
    pub async fn remove_volume(&self, name: &str) -> Result<bool, EngineError> {
        let options = RemoveVolumeOptionsBuilder::default().force(true).build();
        let result = self.count().remove_volume(name, Some(options)).await;
        Ok(self
            .absent_on_404(&format!("remove volume {name}"), result)?
            .is_some())
    }

    /// Every local image, with its id and tags.
    pub async fn list_images(&self) -> Result<Vec<ImageSummary>, EngineError> {
        let options = ListImagesOptionsBuilder::default().all(false).build();
        self.count()
            .list_images(Some(options))
            .await
            .map_err(|e| self.classify("list images", e))
    }

    /// Creates a bridge network; returns its id.
    pub async fn create_network(
        &self,
        name: &str,
        labels: HashMap<String, String>,
    ) -> Result<String, EngineError> {
        let request = NetworkCreateRequest {
            name: name.to_owned(),
            driver: Some("bridge".into()),
            labels: Some(labels),
            ..Default::default()
        };
        self.count()
            .create_network(request)
            .await
            .map(|r| r.id)
            .map_err(|e| self.classify(&format!("create network {name}"), e))
    }

    /// Removes a network; `false` when it was already gone.
    pub async fn remove_network(&self, name: &str) -> Result<bool, EngineError> {
        let result = self.count().remove_network(name).await;
        Ok(self
            .absent_on_404(&format!("remove network {name}"), result)?
            .is_some())
    }

    pub async fn start_container(&self, name: &str) -> Result<(), EngineError> {
        self.count()
            .start_container(name, None)
            .await
            .map_err(|e| self.classify(&format!("start container {name}"), e))
    }

    /// Stops a container, giving its process `grace_secs` before SIGKILL.
    pub async fn stop_container(&self, name: &str, grace_secs: i32) -> Result<(), EngineError> {
        let options = StopContainerOptionsBuilder::default().t(grace_secs).build();
        let result = self.count().stop_container(name, Some(options)).await;
        self.absent_on_404(&format!("stop container {name}"), result)
            .map(drop)
    }

    /// The engine's event stream, filtered by label. Events are hints that
    /// something changed, not a log: the stream may drop them under load.
    pub fn events(
        &self,
        labels: &[(&str, &str)],
    ) -> impl Stream<Item = Result<EventMessage, EngineError>> + use<> {
        let filters = label_filter(labels);
        let options = EventsOptionsBuilder::default().filters(&filters).build();
        let this = self.clone();
        self.count()
            .events(Some(options))
            .map(move |item| item.map_err(|e| this.classify("stream events", e)))
    }

    /// Attaches to a container's terminal: its output, and a writer to its
    /// input. `Ctrl-P Ctrl-Q` detaches, leaving it running.
    pub async fn attach(
        &self,
        id: &str,
    ) -> Result<bollard::container::AttachContainerResults, EngineError> {
        let options = AttachContainerOptionsBuilder::default()
            .stdin(true)
            .stdout(true)
            .stderr(true)
            .stream(true)
            .detach_keys("ctrl-p,ctrl-q")
            .build();
        self.count()
            .attach_container(id, Some(options))
            .await
            .map_err(|e| self.classify(&format!("attach to {id}"), e))
    }

    /// Sets a container's terminal size.
    pub async fn resize(&self, id: &str, width: u16, height: u16) -> Result<(), EngineError> {
        let options = ResizeContainerTTYOptionsBuilder::default()
            .w(i32::from(width))
            .h(i32::from(height))
            .build();
        self.count()
            .resize_container_tty(id, options)
            .await
            .map_err(|e| self.classify(&format!("resize {id}"), e))
    }

    /// Creates a container named `name`; returns its id.
    pub async fn create_container(
        &self,
        name: &str,
        body: ContainerCreateBody,
    ) -> Result<String, EngineError> {
        let options = CreateContainerOptionsBuilder::default().name(name).build();
        self.count()
            .create_container(Some(options), body)
            .await
            .map(|r| r.id)
            .map_err(|e| self.classify(&format!("create container {name}"), e))
    }

    /// `None` when the engine has no such container.
    pub async fn inspect_container(
        &self,
        name: &str,
    ) -> Result<Option<ContainerInspectResponse>, EngineError> {
        let result = self.count().inspect_container(name, None).await;
        self.absent_on_404(&format!("inspect container {name}"), result)
    }

    /// Removes a container, killing it first, with its anonymous volumes
    /// (which nothing else could ever reuse); `false` when it was already gone.
    pub async fn remove_container(&self, name: &str) -> Result<bool, EngineError> {
        let options = RemoveContainerOptionsBuilder::default()
            .force(true)
            .v(true)
            .build();
        let result = self.count().remove_container(name, Some(options)).await;
        Ok(self
            .absent_on_404(&format!("remove container {name}"), result)?
            .is_some())
    }

    /// Builds an image from a tar build context, reporting each line of the
    /// builder's output to `progress`; returns the image id.
    pub async fn build_image(
        &self,
        context_tar: Vec<u8>,
        tag: &str,
        labels: &HashMap<String, String>,
        mut progress: impl FnMut(&str),
    ) -> Result<String, EngineError> {
        let options = BuildImageOptionsBuilder::default()
            .t(tag)
            .rm(true)
            .forcerm(true)
            .labels(labels)
            .build();
        let mut stream =
            self.docker
                .build_image(options, None, Some(bollard::body_full(context_tar.into())));
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
        self.image_id(tag)
            .await?
            .ok_or_else(|| EngineError::Build(format!("the build finished but {tag} is missing")))
    }

    /// The id of a local image, `None` when the engine has no such image.
    pub async fn image_id(&self, reference: &str) -> Result<Option<String>, EngineError> {
        let result = self.count().inspect_image(reference).await;
        Ok(self
            .absent_on_404(&format!("inspect image {reference}"), result)?
            .and_then(|image| image.id))
    }

    /// The argv an image runs by default: its entrypoint, then its command.
    pub async fn image_command(&self, reference: &str) -> Result<Vec<String>, EngineError> {
        let image = self
            .count()
            .inspect_image(reference)
            .await
            .map_err(|e| self.classify(&format!("inspect image {reference}"), e))?;
        let config = image.config.unwrap_or_default();
        Ok(config
            .entrypoint
            .unwrap_or_default()
            .into_iter()
            .chain(config.cmd.unwrap_or_default())
            .collect())
    }

    /// Removes an image; `false` when it was already gone.
    pub async fn remove_image(&self, reference: &str) -> Result<bool, EngineError> {
        let options = RemoveImageOptionsBuilder::default().force(true).build();
        let result = self
            .docker
            .remove_image(reference, Some(options), None)
            .await;
        Ok(self
            .absent_on_404(&format!("remove image {reference}"), result)?
            .is_some())
    }
}
