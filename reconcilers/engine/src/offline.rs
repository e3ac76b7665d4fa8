//! An engine that cannot be reached, as the loop holds it when it carries
//! on without it: every call fails at once, saying why, and nothing is
//! asked of any engine. A purge of an instance whose engine cannot be
//! reached runs its own steps (stamping it, removing its checkouts, the
//! purge tail) with this in place of the engine; a step that needed the
//! engine would fail here rather than act.

use std::collections::HashMap;
use std::sync::Arc;

use futures::future::BoxFuture;
use futures::stream::BoxStream;

use crate::models::{
    ContainerCreateBody, ContainerInspectResponse, ContainerSummary, EventMessage, ImageInspect,
    ImageSummary, Network, Volume,
};
use crate::{
    AttachedExec, Engine, EngineCalls, EngineError, ExecOutcome, ExecRequest, LogsRequest, Usage,
};

/// The engine `endpoint`, which cannot be reached because of `why`.
#[derive(Debug, Clone)]
struct Offline {
    endpoint: String,
    why: String,
}

impl Offline {
    fn error(&self) -> EngineError {
        EngineError::Offline {
            endpoint: self.endpoint.clone(),
            why: self.why.clone(),
        }
    }

    fn fail<'a, T: Send + 'a>(&self) -> BoxFuture<'a, Result<T, EngineError>> {
        Box::pin(std::future::ready(Err(self.error())))
    }

    fn fail_stream<T: Send + 'static>(&self) -> BoxStream<'static, Result<T, EngineError>> {
        Box::pin(futures::stream::once(std::future::ready(Err(self.error()))))
    }
}

/// An [`Engine`] for `endpoint` that makes no call: each fails, saying
/// `why` the engine cannot be reached.
pub fn engine(endpoint: &str, why: &str) -> Engine {
    let offline = Offline {
        endpoint: endpoint.to_owned(),
        why: why.to_owned(),
    };
    Engine::with(Arc::new(offline), endpoint)
}

impl EngineCalls for Offline {
    fn api_version(&self) -> String {
        String::new()
    }
    fn list_containers<'a>(
        &'a self,
        _: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<ContainerSummary>, EngineError>> {
        self.fail()
    }
    fn list_networks<'a>(
        &'a self,
        _: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<Network>, EngineError>> {
        self.fail()
    }
    fn list_volumes<'a>(
        &'a self,
        _: &'a [(&'a str, &'a str)],
    ) -> BoxFuture<'a, Result<Vec<Volume>, EngineError>> {
        self.fail()
    }
    fn remove_volume<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        self.fail()
    }
    fn create_volume<'a>(
        &'a self,
        _: &'a str,
        _: HashMap<String, String>,
    ) -> BoxFuture<'a, Result<HashMap<String, String>, EngineError>> {
        self.fail()
    }
    fn list_images(&self) -> BoxFuture<'_, Result<Vec<ImageSummary>, EngineError>> {
        self.fail()
    }
    fn create_network<'a>(
        &'a self,
        _: &'a str,
        _: HashMap<String, String>,
        _: Option<String>,
    ) -> BoxFuture<'a, Result<String, EngineError>> {
        self.fail()
    }
    fn remove_network<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        self.fail()
    }
    fn start_container<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<(), EngineError>> {
        self.fail()
    }
    fn stop_container<'a>(&'a self, _: &'a str, _: i32) -> BoxFuture<'a, Result<(), EngineError>> {
        self.fail()
    }
    fn events(&self, _: &[(&str, &str)]) -> BoxStream<'static, Result<EventMessage, EngineError>> {
        self.fail_stream()
    }
    fn attach<'a>(
        &'a self,
        _: &'a str,
        _: bool,
    ) -> BoxFuture<'a, Result<bollard::container::AttachContainerResults, EngineError>> {
        self.fail()
    }
    fn resize<'a>(&'a self, _: &'a str, _: u16, _: u16) -> BoxFuture<'a, Result<(), EngineError>> {
        self.fail()
    }
    fn create_container<'a>(
        &'a self,
        _: &'a str,
        _: ContainerCreateBody,
    ) -> BoxFuture<'a, Result<String, EngineError>> {
        self.fail()
    }
    fn inspect_container<'a>(
        &'a self,
        _: &'a str,
    ) -> BoxFuture<'a, Result<Option<ContainerInspectResponse>, EngineError>> {
        self.fail()
    }
    fn remove_container<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        self.fail()
    }
    fn build_image<'a>(
        &'a self,
        _: Vec<u8>,
        _: &'a str,
        _: &'a HashMap<String, String>,
        _: &'a mut (dyn FnMut(&str) + Send),
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        self.fail()
    }
    fn inspect_image<'a>(
        &'a self,
        _: &'a str,
    ) -> BoxFuture<'a, Result<Option<ImageInspect>, EngineError>> {
        self.fail()
    }
    fn remove_image<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<bool, EngineError>> {
        self.fail()
    }
    fn output_since<'a>(&'a self, _: &'a str, _: i64) -> BoxFuture<'a, Result<bool, EngineError>> {
        self.fail()
    }
    fn usage<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<Usage>, EngineError>> {
        self.fail()
    }
    fn read_file<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: u64,
    ) -> BoxFuture<'a, Result<Option<Vec<u8>>, EngineError>> {
        self.fail()
    }
    fn logs(&self, _: &str, _: LogsRequest) -> BoxStream<'static, Result<Vec<u8>, EngineError>> {
        self.fail_stream()
    }
    fn exec<'a>(
        &'a self,
        _: &'a str,
        _: Vec<String>,
    ) -> BoxFuture<'a, Result<ExecOutcome, EngineError>> {
        self.fail()
    }
    fn probe<'a>(
        &'a self,
        _: &'a str,
        _: Vec<String>,
        _: HashMap<String, String>,
    ) -> BoxFuture<'a, Result<ExecOutcome, EngineError>> {
        self.fail()
    }
    fn exec_attached<'a>(
        &'a self,
        _: &'a str,
        _: ExecRequest,
    ) -> BoxFuture<'a, Result<AttachedExec, EngineError>> {
        self.fail()
    }
    fn exec_exit_code<'a>(&'a self, _: &'a str) -> BoxFuture<'a, Result<Option<i64>, EngineError>> {
        self.fail()
    }
    fn resize_exec<'a>(
        &'a self,
        _: &'a str,
        _: u16,
        _: u16,
    ) -> BoxFuture<'a, Result<(), EngineError>> {
        self.fail()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn every_call_fails_saying_why_and_asks_nothing() {
        let engine = engine("no-such-context", "docker context not found");
        let err = engine.list_images().await.unwrap_err();
        assert!(matches!(err, EngineError::Offline { .. }), "{err}");
        assert!(
            err.to_string().contains("docker context not found"),
            "{err}"
        );
        assert!(!err.is_permanent(), "the engine may answer later");
    }
}
