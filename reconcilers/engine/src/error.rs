//! The engine's errors, sorted into what a reconciler can act on: the
//! engine could not be asked (never read as "missing"), it refused, or the
//! work it was given failed; and which of them are worth a retry.

use std::time::Duration;

use bollard::errors::Error as BollardError;

use crate::endpoint::EndpointError;

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
