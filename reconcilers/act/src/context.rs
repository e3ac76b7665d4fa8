//! What every step shares: the context it runs in, what it reports as it
//! goes, the places inside the container, and the probes' answers by image.
//! Below every other part of `act` (with `error`), so that none of them
//! imports the module that re-exports it.

use std::path::PathBuf;

use jackin_api::instance::{Instance, Recipe};
use jackin_api::workspace::WorkspaceSpec;

use jackin_engine::Engine;
use jackin_engine::addresses::AddressBook;
use jackin_files::layout::Layout;
use jackin_plan::recipe::ResolvedAgent;

/// Where the agent's home is mounted inside the container.
pub const AGENT_HOME: &str = "/home/agent";
/// Where the unit's `state/` directory is mounted inside the container.
pub const STATE_DIR: &str = "/jackin/state";
/// Where the Docker daemon sidecar's client certificates are, in it and
/// (read-only) in the agent's container.
pub const DIND_CLIENT_CERTS: &str = "/certs/client";
/// Seconds a container gets to stop before it is killed.
pub const STOP_GRACE_SECS: i32 = 10;

/// The owner of the state directory's shared records (the index of
/// instances, the record of ended sessions). Steps that change those records
/// go through it, so that one place writes them.
pub trait StateOwner: Send + Sync {
    /// Finishes the purge of `obj`, whose engine objects and checkouts are
    /// gone: removes its unit directory, sockets directory and unit lock,
    /// then its index row, last. Called with the unit lock held.
    fn finish_purge(&self, obj: &Instance) -> Result<(), Box<dyn std::error::Error + Send + Sync>>;
}

/// What a step needs besides the instance itself.
pub struct Context<'a> {
    pub engine: &'a Engine,
    pub layout: &'a Layout,
    pub state: &'a dyn StateOwner,
    /// The instance's Workspace policy, when it names one that exists.
    pub workspace: Option<&'a WorkspaceSpec>,
    /// The registry's entry for the instance's agent; `None` when no agent
    /// has that name.
    pub agent: Option<&'a ResolvedAgent>,
    /// The programs already found in images.
    pub found: &'a ProgramsFound,
    /// The subnets in use on the engine.
    pub addresses: &'a AddressBook,
    /// The operator's home, for `~` in mount sources.
    pub home: Option<PathBuf>,
    /// Where credential files are read from (see
    /// [`crate::credentials::host_home`]), or why that is not known.
    pub credentials_home: Result<PathBuf, String>,
    /// This `JACKIN_HOME`'s id, labelled on everything created.
    pub home_id: String,
}

/// What a step reports as it goes, besides its own start.
#[derive(Debug, Clone, Copy)]
pub enum Report<'a> {
    /// A line of build output.
    Build(&'a str),
    /// What the step did, or could not do, for the operator: `reason`
    /// names it as an event does. Never a secret's value. `stage` names a
    /// stage within the step (the agent binaries, within pinning), else
    /// the line is under the step's own.
    Note {
        stage: Option<&'static str>,
        reason: &'static str,
        message: &'a str,
    },
    /// What the step did, for the instance's event log only (the session
    /// edge's records: how it ended, what the exit policy decided).
    Event {
        reason: &'static str,
        message: &'a str,
    },
}

/// The name of a sidecar's container.
pub fn sidecar_name(container: &str, sidecar: &str) -> String {
    format!("{container}-{sidecar}")
}

/// What probes found in images, by image id: an image is immutable, so a
/// program found once is there for good (and its version stays what it
/// was), and launching many instances of one image probes it once:
/// instances launched together wait for the one probe under way rather
/// than each starting its own.
#[derive(Debug, Default)]
pub struct ProgramsFound {
    /// By (image id, program): whether it is there.
    programs: Answers<String, ()>,
    /// By (image id, version probe): the version it printed.
    versions: Answers<Vec<String>, Option<String>>,
}

/// Set once found; probed by the first who asks.
pub(super) type Answer<T> = std::sync::Arc<tokio::sync::OnceCell<T>>;

/// The answers of one kind of probe, by image id and what was asked.
type Answers<Q, T> = std::sync::Mutex<std::collections::HashMap<(String, Q), Answer<T>>>;

impl ProgramsFound {
    /// The answer for `program` in `image_id`, shared by every caller.
    pub(super) fn program(&self, image_id: &str, program: &str) -> Answer<()> {
        self.programs
            .lock()
            .expect("the map is never poisoned")
            .entry((image_id.to_owned(), program.to_owned()))
            .or_default()
            .clone()
    }

    /// The answer of the version probe `argv` in `image_id`.
    pub(super) fn version(&self, image_id: &str, argv: &[String]) -> Answer<Option<String>> {
        self.versions
            .lock()
            .expect("the map is never poisoned")
            .entry((image_id.to_owned(), argv.to_vec()))
            .or_default()
            .clone()
    }
}

/// The launch recipe a step acts on.
pub(super) fn recipe_of(obj: &Instance) -> &Recipe {
    obj.recipe()
        .expect("decide plans engine objects only after pinning")
}
