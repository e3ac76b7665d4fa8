//! What goes wrong in a step, how the loop classifies it (permanent or
//! not, its condition reason), and the helper that says which file an I/O
//! error was about. Below every other part of `act`, so that none of them
//! imports the module that re-exports it.
//!
//! A permanent failure is one that asking again cannot cure and that needs
//! the operator: a pinned commit or image that is gone, a role repository
//! or ref that does not exist, a failed build, a secret that cannot be
//! resolved, a request the engine calls invalid, an engine named so that it
//! can never be reached, a save of discarded work that failed. The rest are
//! worth another try; a start the engine refuses with a server error is
//! tried again, but counted ([`ActError::is_refused_start`]).

use std::path::{Path, PathBuf};

use jackin_api::names::reason;

use crate::credentials::CredentialError;
use crate::image::RecipeError;
use crate::secrets::SecretError;
use jackin_checkouts::discard::DiscardError;
use jackin_checkouts::isolation::IsolationError;
use jackin_engine::EngineError;
use jackin_engine::addresses::AddressError;

#[derive(Debug, thiserror::Error)]
pub enum ActError {
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Recipe(#[from] RecipeError),
    #[error(transparent)]
    Secret(#[from] SecretError),
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(transparent)]
    Isolation(#[from] IsolationError),
    /// The unfinished work of a checkout could not be saved before its
    /// discard: nothing was deleted. Boxed: it is one of the largest.
    #[error(transparent)]
    Discard(Box<DiscardError>),
    #[error("image {0} names no command (no ENTRYPOINT or CMD)")]
    NoCommand(String),
    #[error("no agent is named {0:?}")]
    UnknownAgent(String),
    #[error("a volume named {0} exists and is not this instance's: it is left alone")]
    ForeignVolume(String),
    #[error(
        "the image {image} has no `{program}` (the agent's command) on its PATH: the role's \
         Dockerfile must install it"
    )]
    AgentMissing { program: String, image: String },
    #[error(
        "installing the agent {agent} into a derived image failed{}: {source}",
        log.as_ref().map(|l| format!(" (its build output is kept in {l})")).unwrap_or_default()
    )]
    AgentInstall {
        agent: String,
        log: Option<String>,
        #[source]
        source: Box<RecipeError>,
    },
    /// The role's Dockerfile failed to build; what it printed is kept.
    #[error(
        "building the role {role}'s image failed (its build output is kept in {log}): {source}"
    )]
    RoleBuild {
        role: String,
        log: String,
        #[source]
        source: Box<RecipeError>,
    },
    #[error(transparent)]
    Addresses(#[from] AddressError),
    /// Boxed: its places make it the largest error of a step.
    #[error(transparent)]
    Credentials(Box<CredentialError>),
    /// The engine does not see the unit's files on the controller's
    /// machine (see `unit_identity`): nothing was started.
    #[error(
        "engine {engine} does not see this session's unit on the controller's machine ({why}). \
         jackin keeps a session's home, state and checkouts there and binds them into the \
         container, so it runs a session only on an engine that shares the controller's files: \
         an engine on this machine, or jackin (with its JACKIN_HOME) on the engine's machine; \
         nothing was started"
    )]
    UnitNotOnEngine { engine: String, why: String },
    /// Every host port of the home's pool is given to another session, or
    /// used by a program of this host.
    #[error(
        "no free host port is left in jackin's port pool {from} to {to} for the port {port}: \
         widen it in config.yaml (for example `portPool: {{from: 40000, to: 41999}}`), or purge \
         sessions you no longer need"
    )]
    PortsExhausted { port: String, from: u16, to: u16 },
    /// The owner of the state directory could not record a change.
    #[error(transparent)]
    State(Box<dyn std::error::Error + Send + Sync>),
}

impl ActError {
    /// Whether trying again without a change elsewhere cannot help; the
    /// instance is then `Failed` until its spec or the world changes.
    pub fn is_permanent(&self) -> bool {
        match self {
            Self::Recipe(e) => e.is_permanent(),
            Self::AgentInstall { source, .. } | Self::RoleBuild { source, .. } => {
                source.is_permanent()
            }
            Self::Engine(e) => e.is_permanent(),
            Self::Addresses(e) => e.is_permanent(),
            // A secret that cannot be resolved needs the operator (a variable
            // to export, a file to write, `op signin`); so does a checkout
            // that no longer fits its host repository.
            Self::Secret(_)
            // A destination the agent made a link stays one until the
            // operator removes it.
            | Self::Credentials(_)
            | Self::NoCommand(_)
            | Self::UnknownAgent(_)
            | Self::ForeignVolume(_)
            | Self::AgentMissing { .. }
            // The engine's machine stays what it is until the operator
            // picks another engine.
            | Self::UnitNotOnEngine { .. }
            // The pool stays full until the operator widens it or purges.
            | Self::PortsExhausted { .. }
            // A save that failed needs the operator to look (the error
            // says what to do); retrying would fail the same way.
            | Self::Discard(_) => true,
            // A mount that is not a repository, a checkout that no longer
            // fits, or one nobody recorded: the operator has to look.
            Self::Isolation(e) => !matches!(e, IsolationError::Git(_) | IsolationError::Io { .. }),
            _ => false,
        }
    }

    /// Whether the failure is a refusal that may well be permanent though
    /// the engine does not say so for certain ([`EngineError::is_refused_start`]):
    /// the loop tries it again a few times, then gives up.
    pub fn is_refused_start(&self) -> bool {
        match self {
            Self::Engine(e) | Self::Recipe(RecipeError::Engine(e)) => e.is_refused_start(),
            _ => false,
        }
    }

    /// The condition reason that names this kind of failure.
    pub fn reason(&self) -> &'static str {
        match self {
            Self::Engine(e) if e.is_unreachable() => reason::ENGINE_UNREACHABLE,
            Self::Engine(EngineError::Build(_)) => reason::BUILD_FAILED,
            Self::Engine(_) => reason::ENGINE_ERROR,
            Self::Recipe(e) => recipe_reason(e),
            Self::RoleBuild { source, .. } => recipe_reason(source),
            Self::Secret(_) => reason::SECRET_UNAVAILABLE,
            Self::Credentials(_) => reason::CREDENTIALS_REFUSED,
            Self::Io { .. } | Self::State(_) => reason::FILESYSTEM_ERROR,
            Self::Isolation(
                IsolationError::ResumeConflict { .. }
                | IsolationError::LinkConflict { .. }
                | IsolationError::BranchMoved { .. },
            ) => reason::RESUME_CONFLICT,
            Self::Isolation(_) => reason::CHECKOUT_FAILED,
            Self::Discard(_) => reason::DISCARD_NOT_SAVED,
            Self::NoCommand(_) => reason::NO_COMMAND,
            Self::UnknownAgent(_) => reason::UNKNOWN_AGENT,
            Self::AgentMissing { .. } => reason::AGENT_MISSING,
            Self::AgentInstall { .. } => reason::AGENT_INSTALL_FAILED,
            Self::ForeignVolume(_) => reason::ENGINE_ERROR,
            Self::UnitNotOnEngine { .. } => reason::UNIT_NOT_ON_ENGINE,
            Self::Addresses(AddressError::Exhausted { .. }) => reason::ADDRESS_POOL_EXHAUSTED,
            Self::PortsExhausted { .. } => reason::PORT_POOL_EXHAUSTED,
            Self::Addresses(AddressError::Config(_)) => reason::INVALID_CONFIG,
            Self::Addresses(AddressError::Engine(e)) => match e {
                e if e.is_unreachable() => reason::ENGINE_UNREACHABLE,
                _ => reason::ENGINE_ERROR,
            },
        }
    }
}

/// The condition reason of a recipe that could not be resolved.
fn recipe_reason(e: &RecipeError) -> &'static str {
    match e {
        RecipeError::CommitUnavailable { .. } | RecipeError::NothingToRebuild => {
            reason::RECIPE_UNAVAILABLE
        }
        RecipeError::ImageNotFound { .. } => reason::IMAGE_NOT_FOUND,
        RecipeError::UnknownProvider(_) => reason::UNKNOWN_PROVIDER,
        RecipeError::RoleWideningRefused(_) => reason::ROLE_WIDENING_REFUSED,
        _ => reason::BUILD_FAILED,
    }
}

impl From<DiscardError> for ActError {
    fn from(error: DiscardError) -> Self {
        Self::Discard(Box::new(error))
    }
}

impl From<CredentialError> for ActError {
    fn from(error: CredentialError) -> Self {
        Self::Credentials(Box::new(error))
    }
}

pub(super) fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ActError + '_ {
    move |source| ActError::Io {
        path: path.to_owned(),
        source,
    }
}
