//! The seam between the loop and a Docker engine: [`EngineCalls`], one
//! method per engine call (boxed futures, so that it can be a trait
//! object), and the requests and answers those calls speak in beyond
//! bollard's own models.

pub use jackin_plan::idle::Usage;
use std::collections::HashMap;

use bollard::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerSummary, EventMessage, ImageInspect,
    ImageSummary, Network, Volume,
};
use futures::future::BoxFuture;
use futures::stream::BoxStream;

use super::EngineError;

/// The engine calls jackin makes, one method each: the seam between the
/// loop and a Docker engine. [`Engine`](super::Engine) wraps one implementation: the real
/// engine ([`Engine::connect`](super::Engine::connect)), or an in-memory one in tests (`fake`).
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
    /// The bytes of the regular file at `path` in container `id`, at most
    /// `cap` (through the archive API, which works on a container that
    /// never started; read as untrusted, see [`crate::archive`]); `None`
    /// when the container has no such path (no such container is an
    /// error, 404).
    fn read_file<'a>(
        &'a self,
        id: &'a str,
        path: &'a str,
        cap: u64,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, EngineError>>;
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

/// A command started by [`Engine::exec_attached`](super::Engine::exec_attached): its id, and its streams.
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

/// How much of an exec's output is kept: its end.
pub const EXEC_OUTPUT_BYTES: usize = 4096;
