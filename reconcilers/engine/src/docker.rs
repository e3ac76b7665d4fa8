//! The real engine behind the [`EngineCalls`] seam, through bollard: each
//! call as the Docker API asks it, and each bollard error sorted into
//! "unreachable", "no answer", "refused" or "failed" (a 404 is the
//! engine's "not there", never an error).

use std::collections::HashMap;
use std::time::Duration;

use bollard::Docker;
use bollard::errors::Error as BollardError;
use bollard::models::{
    self, ContainerCreateBody, ContainerInspectResponse, ContainerSummary, EventMessage,
    ImageInspect, ImageSummary, Ipam, IpamConfig, Network, NetworkCreateRequest, Volume,
};
use bollard::query_parameters::{
    AttachContainerOptionsBuilder, BuildImageOptionsBuilder, CreateContainerOptionsBuilder,
    DownloadFromContainerOptionsBuilder, EventsOptionsBuilder, ListContainersOptionsBuilder,
    ListImagesOptionsBuilder, ListNetworksOptionsBuilder, ListVolumesOptionsBuilder,
    LogsOptionsBuilder, RemoveContainerOptionsBuilder, RemoveImageOptionsBuilder,
    RemoveVolumeOptionsBuilder, ResizeContainerTTYOptionsBuilder, StatsOptionsBuilder,
    StopContainerOptionsBuilder,
};
use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::calls::{
    AttachedExec, EXEC_OUTPUT_BYTES, EngineCalls, ExecOutcome, ExecRequest, LogsRequest, Usage,
};
use super::error::EngineError;
use crate::answer;
use crate::archive::{self, ArchiveRefused};
use crate::endpoint::Endpoint;

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

fn label_filter(labels: &[(&str, &str)]) -> HashMap<String, Vec<String>> {
    HashMap::from([(
        "label".to_owned(),
        labels.iter().map(|(k, v)| format!("{k}={v}")).collect(),
    )])
}

/// The real engine, through bollard.
pub(super) struct DockerCalls {
    docker: Docker,
    endpoint: String,
}

impl DockerCalls {
    /// Connects to `endpoint` and negotiates the API version, which also
    /// proves the engine answers.
    pub(super) async fn connect(endpoint: &Endpoint) -> Result<Self, EngineError> {
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
            None if endpoint.host.starts_with("ssh://") => super::ssh::docker(&endpoint.host),
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
        match tokio::time::timeout(answer::ANSWER, Self::pinged(endpoint, action)).await {
            Err(_) => return Err(no_answer()),
            Ok(Some(docker)) => {
                return Ok(Self {
                    docker,
                    endpoint: endpoint.host.clone(),
                });
            }
            Ok(None) => {}
        }
        let negotiated = answer::awaited(&endpoint.host, action, false, docker.negotiate_version());
        let docker = match tokio::time::timeout(answer::ANSWER, negotiated).await {
            Ok(Ok(docker)) => docker,
            Ok(Err(BollardError::RequestTimeoutError)) | Err(_) => return Err(no_answer()),
            Ok(Err(e)) => return Err(unreachable(e)),
        };
        Ok(Self {
            docker,
            endpoint: endpoint.host.clone(),
        })
    }

    /// The API version this client speaks, as agreed on connecting.
    #[cfg(test)]
    pub(super) fn client_version(&self) -> bollard::ClientVersion {
        self.docker.client_version()
    }

    /// A client for a plain Unix socket's engine, at the API version its
    /// ping names (`ping`); `None` when that is not how to ask it, or its
    /// ping names no version: then `/version` is asked.
    async fn pinged(endpoint: &Endpoint, action: &str) -> Option<Docker> {
        let socket = match (&endpoint.tls, endpoint.host.strip_prefix("unix://")) {
            (None, Some(socket)) => std::path::Path::new(socket),
            _ => return None,
        };
        let version = answer::awaited(
            &endpoint.host,
            action,
            false,
            super::ping::api_version(socket),
        )
        .await?;
        Docker::connect_with_unix(&endpoint.host, answer::ANSWER.as_secs(), &version)
            .map(|d| d.with_timeout(answer::ANSWER))
            .ok()
    }

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

    fn read_file<'a>(
        &'a self,
        id: &'a str,
        path: &'a str,
        cap: u64,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, EngineError>> {
        Box::pin(async move {
            let action = format!("read {path} in container {id}");
            let refused = |refused: ArchiveRefused| EngineError::Failed {
                action: action.clone(),
                message: refused.to_string(),
            };
            let options = DownloadFromContainerOptionsBuilder::default()
                .path(path)
                .build();
            let mut stream = self.docker.download_from_container(id, Some(options));
            let mut bytes = Vec::new();
            while let Some(chunk) = stream.next().await {
                match chunk {
                    Ok(chunk) => bytes.extend_from_slice(&chunk),
                    // "Could not find the file": a container that is not
                    // there is the engine's error, not a missing file.
                    Err(BollardError::DockerResponseServerError {
                        status_code: 404,
                        message,
                    }) if !message.contains("No such container") => return Ok(None),
                    Err(e) => return Err(self.classify(&action, e)),
                }
                // Never more than the one small file can take.
                if bytes.len() as u64 > archive::archive_cap(cap) {
                    return Err(refused(ArchiveRefused::TooLarge { cap }));
                }
            }
            let name = path.rsplit('/').next().unwrap_or(path);
            archive::single_regular_file(&bytes, name, cap)
                .map(Some)
                .map_err(refused)
        })
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
