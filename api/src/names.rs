//! Every well-known name in one place: the labels on engine objects, the
//! annotations an operator (or a command acting for one) sets, and the
//! condition types and reasons of `status.conditions`. Scripts and tests
//! match on these strings, so each is written once, here.

/// Labels on the engine objects jackin creates. Ownership is decided by
/// them (and by home), never by a name someone else may have taken.
pub mod label {
    /// On every engine object jackin creates.
    pub const MANAGED: &str = "jackin.dev/managed";
    /// The instance an engine object belongs to.
    pub const INSTANCE: &str = "jackin.dev/instance";
    /// The `JACKIN_HOME` an engine object belongs to, so that homes sharing
    /// one engine never sweep each other's objects.
    pub const HOME: &str = "jackin.dev/home";
    /// The instance's uid, so a re-created namesake never adopts another
    /// incarnation's leftovers.
    pub const UID: &str = "jackin.dev/uid";
    /// On a sidecar container: its name in the spec.
    pub const SIDECAR: &str = "jackin.dev/sidecar";
    /// On an image jackin built: the role it was built from.
    pub const ROLE: &str = "jackin.dev/role";
    /// On an image jackin built: the role commit it was built from.
    pub const ROLE_COMMIT: &str = "jackin.dev/role-commit";
    /// On objects an apply with `--prune` (or `controller --sync`) wrote:
    /// the id of the source that owns them.
    pub const SOURCE: &str = "jackin.dev/source";
}

/// Annotations on an instance.
pub mod annotation {
    /// Acknowledges discarding unfinished work: its value must equal the
    /// digest of the evidence shown, so a later edit (a new digest) closes
    /// the gate again.
    pub const ACKNOWLEDGE_DISCARD: &str = "jackin.dev/acknowledge-discard";
    /// Overrides the workspace's exit policy for one instance (`keep`,
    /// `clean`, `ask`), as `jackin launch --keep` / `--clean` set it.
    pub const EXIT_POLICY: &str = "jackin.dev/exit-policy";
    /// The time the operator last asked to resume the instance (`set-phase
    /// running`, `attach`, `launch`), like `kubectl rollout restart`: a
    /// settlement older than it no longer stands.
    pub const RESUME: &str = "jackin.dev/resume";
}

/// Condition types of `status.conditions`.
pub mod condition {
    /// Whether the instance is in its desired phase, and why not.
    pub const READY: &str = "Ready";
    /// A purge waits for an acknowledgement of unfinished work.
    pub const PURGE_BLOCKED: &str = "PurgeBlocked";
    /// What the exit policy decided, or that it waits for the operator.
    pub const EXIT_POLICY: &str = "ExitPolicy";
    /// The spec changed after the recipe was pinned.
    pub const SPEC_DRIFT: &str = "SpecDrift";
    /// The completion marker could not be read.
    pub const MARKER_MALFORMED: &str = "MarkerMalformed";
    /// How the last session ended is not known.
    pub const SESSION_OUTCOME: &str = "SessionOutcome";
    /// The workspace the instance names does not exist: the defaults apply.
    pub const WORKSPACE_MISSING: &str = "WorkspaceMissing";
    /// The idle hooks recycled the container and it did not come back.
    pub const IDLE_RESTART: &str = "IdleRestart";
}

/// Condition reasons.
pub mod reason {
    // Ready, while things are as they should be.
    pub const PENDING: &str = "Pending";
    pub const LAUNCHING: &str = "Launching";
    pub const RUNNING: &str = "Running";
    pub const KEPT: &str = "Kept";
    pub const SESSION_ENDED: &str = "SessionEnded";
    // Ready, when the container went missing without jackin.
    pub const CONTAINER_MISSING: &str = "ContainerMissing";
    pub const ENGINE_RESTARTED: &str = "EngineRestarted";
    // Ready, when a step failed.
    pub const ENGINE_UNREACHABLE: &str = "EngineUnreachable";
    pub const ENGINE_ERROR: &str = "EngineError";
    pub const RECIPE_UNAVAILABLE: &str = "RecipeUnavailable";
    pub const IMAGE_NOT_FOUND: &str = "ImageNotFound";
    pub const BUILD_FAILED: &str = "BuildFailed";
    pub const SECRET_UNAVAILABLE: &str = "SecretUnavailable";
    pub const FILESYSTEM_ERROR: &str = "FilesystemError";
    pub const RESUME_CONFLICT: &str = "ResumeConflict";
    pub const CHECKOUT_FAILED: &str = "CheckoutFailed";
    pub const NO_COMMAND: &str = "NoCommand";
    pub const UNKNOWN_AGENT: &str = "UnknownAgent";
    pub const AGENT_MISSING: &str = "AgentMissing";
    pub const ADDRESS_POOL_EXHAUSTED: &str = "AddressPoolExhausted";
    /// The home's `config.yaml` cannot be used.
    pub const INVALID_CONFIG: &str = "InvalidConfig";
    // PurgeBlocked.
    pub const UNFINISHED_WORK: &str = "UnfinishedWork";
    // ExitPolicy.
    pub const ASK_OPERATOR: &str = "AskOperator";
    pub const NON_INTERACTIVE: &str = "NonInteractive";
    // SpecDrift, MarkerMalformed, SessionOutcome.
    pub const SPEC_CHANGED: &str = "SpecChanged";
    pub const UNPARSABLE: &str = "Unparsable";
    pub const UNKNOWN: &str = "Unknown";
    // WorkspaceMissing.
    pub const NOT_FOUND: &str = "NotFound";
    // Events of the agent's start.
    pub const AGENT_FALLBACK: &str = "AgentFallback";
    // Idle hooks: one command's outcome, what followed the commands, and
    // the IdleRestart condition's reason.
    pub const IDLE_HOOK: &str = "IdleHook";
    pub const IDLE_HOOKS: &str = "IdleHooks";
    pub const RESTART_FAILED: &str = "RestartFailed";
}
