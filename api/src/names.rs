//! Every well-known name in one place: the labels on engine objects, the
//! annotations an operator (or a command acting for one) sets, which names
//! are reserved to jackin, and the condition types and reasons of
//! `status.conditions`. Scripts and tests match on these strings, so each
//! is written once, here.

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
    /// Every label above. Each is jackin's alone: no operator's manifest
    /// may set one (see [`super::reserved_label`]).
    pub const ALL: [&str; 8] = [
        MANAGED,
        INSTANCE,
        HOME,
        UID,
        SIDECAR,
        ROLE,
        ROLE_COMMIT,
        SOURCE,
    ];
}

/// The DNS prefix of the names jackin keeps for itself. Every label and
/// annotation key under it, or under a subdomain of it (`*.jackin.dev/`), is
/// jackin's, as Kubernetes keeps `kubernetes.io/` and `k8s.io/`: an
/// operator's manifest may set none of them but the annotations of
/// [`annotation::OPERATOR_SET`], so that jackin can give a new name a
/// meaning in any release without meeting an operator's value there.
pub const PREFIX: &str = "jackin.dev";

/// Where jackin's report program is in every session's container (its
/// `bin/`, read-only): an agent's hooks run it with a state word, and
/// attention reads what it wrote (`jackin_plan::attention`).
pub const REPORT_PROGRAM: &str = "/jackin/bin/report";

/// The labels that mark an engine object as owned by one instance of one home.
pub fn owner_labels(
    instance: &str,
    uid: &str,
    home_id: &str,
) -> std::collections::HashMap<String, String> {
    std::collections::HashMap::from([
        (label::MANAGED.to_owned(), "true".to_owned()),
        (label::HOME.to_owned(), home_id.to_owned()),
        (label::INSTANCE.to_owned(), instance.to_owned()),
        (label::UID.to_owned(), uid.to_owned()),
    ])
}

/// Whether `key` is under [`PREFIX`] or one of its subdomains (compared
/// without regard to case, as DNS names are).
pub fn is_jackin_key(key: &str) -> bool {
    let Some((prefix, _)) = key.split_once('/') else {
        return false;
    };
    let prefix = prefix.to_ascii_lowercase();
    prefix == PREFIX
        || prefix
            .strip_suffix(PREFIX)
            .is_some_and(|sub| sub.ends_with('.'))
}

/// Why an operator's manifest may not set the label `key`; `None` when it
/// may. Every label under [`PREFIX`] is jackin's.
pub fn reserved_label(key: &str) -> Option<String> {
    if !is_jackin_key(key) {
        return None;
    }
    Some(if key == label::SOURCE {
        format!(
            "label {key:?} is reserved: jackin sets it on what an `apply --prune` or \
             `controller --sync` applies, to know what that source owns; remove it from the file"
        )
    } else if label::ALL.contains(&key) {
        format!(
            "label {key:?} is reserved: jackin sets it on the engine objects it creates, and \
             ownership is decided by it; remove it from the file"
        )
    } else {
        format!(
            "label {key:?} is reserved: names under {PREFIX}/ are jackin's; use a prefix of \
             your own (example.com/NAME)"
        )
    })
}

/// Why an operator's manifest may not set the annotation `key`; `None` when
/// it may: any name outside [`PREFIX`], and those of
/// [`annotation::OPERATOR_SET`].
pub fn reserved_annotation(key: &str) -> Option<String> {
    if !is_jackin_key(key) || annotation::OPERATOR_SET.contains(&key) {
        return None;
    }
    Some(format!(
        "annotation {key:?} is reserved: of the names under {PREFIX}/ an operator sets only \
         the annotations {}; use a prefix of your own (example.com/NAME)",
        annotation::OPERATOR_SET.join(", ")
    ))
}

/// Annotations on an instance.
pub mod annotation {
    /// Acknowledges discarding unfinished work: its value must equal the
    /// digest of the evidence shown, so a later edit (a new digest) closes
    /// the gate again.
    pub const ACKNOWLEDGE_DISCARD: &str = "jackin.dev/acknowledge-discard";
    /// Overrides the workspace's exit policy for one instance (`keep`,
    /// `clean`, `ask`) for good: the operator sets it in the manifest.
    pub const EXIT_POLICY: &str = "jackin.dev/exit-policy";
    /// The exit policy `jackin launch --keep` / `--clean` chose for the
    /// session that launch starts or resumes, as `POLICY@TIME` (when it was
    /// asked): see `Instance::launch_exit_policy`. jackin's own: a manifest
    /// may not set it.
    pub const LAUNCH_EXIT_POLICY: &str = "jackin.dev/launch-exit-policy";
    /// The time the operator last asked to resume the instance (`set-phase
    /// running`, `attach`, `launch`), like `kubectl rollout restart`: a
    /// settlement older than it no longer stands.
    pub const RESUME: &str = "jackin.dev/resume";
    /// The session's setup is not run (`launch --skip-setup`).
    pub const SKIP_SETUP: &str = "jackin.dev/skip-setup";
    /// The time the operator last asked to move the session onto the
    /// current spec (`jackin rollout`), as `kubectl rollout restart` stamps
    /// `restartedAt`: a value the loop has not handled is a request.
    pub const ROLLOUT: &str = "jackin.dev/rollout";
    /// With [`ROLLOUT`], when its value equals it: the rollout may move the
    /// session to another engine (`jackin rollout --move`).
    pub const ROLLOUT_MOVE: &str = "jackin.dev/rollout-move";
    /// With [`ROLLOUT`], when its value equals it: the rollout may change
    /// the working directory of an agent that finds its conversations by it,
    /// the conversation starting anew (`jackin rollout --new-conversation`).
    pub const ROLLOUT_NEW_CONVERSATION: &str = "jackin.dev/rollout-new-conversation";
    /// The only names under [`super::PREFIX`] an operator's manifest may
    /// set: each says what the operator wants.
    pub const OPERATOR_SET: [&str; 6] = [
        ACKNOWLEDGE_DISCARD,
        EXIT_POLICY,
        RESUME,
        ROLLOUT,
        ROLLOUT_MOVE,
        ROLLOUT_NEW_CONVERSATION,
    ];
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
    /// How the last rollout request went (rolled out, refused, failed).
    pub const ROLLOUT: &str = "Rollout";
    /// Whether the workspace's setup ran as it should (`SetupFailed`).
    pub const SETUP: &str = "Setup";
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
    /// The picked provider is none of the agent entry's.
    pub const UNKNOWN_PROVIDER: &str = "UnknownProvider";
    /// The role widens the container beyond the workspace's allowance.
    pub const ROLE_WIDENING_REFUSED: &str = "RoleWideningRefused";
    pub const AGENT_MISSING: &str = "AgentMissing";
    /// The agent's install block failed to build on the role image.
    pub const AGENT_INSTALL_FAILED: &str = "AgentInstallFailed";
    pub const ADDRESS_POOL_EXHAUSTED: &str = "AddressPoolExhausted";
    /// No host port of the home's port pool is free for a published port.
    pub const PORT_POOL_EXHAUSTED: &str = "PortPoolExhausted";
    /// The setup exited non-zero or ran past its timeout; the session runs.
    pub const SETUP_FAILED: &str = "SetupFailed";
    /// The setup ran and exited 0, or the operator skipped it.
    pub const SETUP_DONE: &str = "SetupDone";
    /// The engine does not see the unit's files on the controller's
    /// machine: a session runs only on an engine that shares them.
    pub const UNIT_NOT_ON_ENGINE: &str = "UnitNotOnEngine";
    /// The home's `config.yaml` cannot be used.
    pub const INVALID_CONFIG: &str = "InvalidConfig";
    // PurgeBlocked.
    pub const UNFINISHED_WORK: &str = "UnfinishedWork";
    // ExitPolicy.
    pub const ASK_OPERATOR: &str = "AskOperator";
    pub const NON_INTERACTIVE: &str = "NonInteractive";
    // SpecDrift, MarkerMalformed, SessionOutcome.
    pub const SPEC_CHANGED: &str = "SpecChanged";
    /// SpecDrift under `updatePolicy: OnDrift`: the rollout waits for the
    /// operator to detach and the agent to go idle.
    pub const ROLLOUT_WAITING: &str = "RolloutWaiting";
    // Rollout.
    pub const ROLLED_OUT: &str = "RolledOut";
    /// The recipe is pinned again; the session runs from it once a
    /// container is made from it (then `RolledOut`).
    pub const ROLLING_OUT: &str = "RollingOut";
    pub const ROLLOUT_REFUSED: &str = "RolloutRefused";
    pub const ROLLOUT_FAILED: &str = "RolloutFailed";
    pub const UNPARSABLE: &str = "Unparsable";
    pub const UNKNOWN: &str = "Unknown";
    // WorkspaceMissing.
    pub const NOT_FOUND: &str = "NotFound";
    /// A unit's worktree checkouts moved from an earlier jackin's form to
    /// repositories of their own.
    pub const CHECKOUTS_MOVED: &str = "CheckoutsMoved";
    /// A worktree's branch was not published into the operator's
    /// repository at a session's end (the message says why); the agent's
    /// work stays in the unit.
    pub const PUBLICATION_REFUSED: &str = "PublicationRefused";
    /// A new isolated checkout got untracked files of its source (a
    /// mount's `include`); the message lists them, and what was left out.
    pub const FILES_INCLUDED: &str = "FilesIncluded";
    /// A directory of the unit that jackin owns (`home/`, `state/`,
    /// `bin/`) was gone at a start and was made again, empty.
    pub const UNIT_DIRECTORY_MADE: &str = "UnitDirectoryMade";
    // Events of the agent's start.
    pub const AGENT_FALLBACK: &str = "AgentFallback";
    /// The conversation's id could neither be resumed nor started again:
    /// the agent runs a new conversation under a new id jackin minted.
    pub const CONVERSATION_RENEWED: &str = "ConversationRenewed";
    /// A role's git source could not be reached: its image was built from
    /// the `roles/` cache's checkout (the message names the commit).
    pub const ROLE_SOURCE_UNREACHABLE: &str = "RoleSourceUnreachable";
    /// The agent was installed into a derived image (or one was found).
    pub const AGENT_INSTALL: &str = "AgentInstall";
    /// The provider a session was sent to, and its key's reference.
    pub const PROVIDER: &str = "Provider";
    /// What the role and the workspace widen of the container's
    /// restrictions, said at the pin.
    pub const WIDENED: &str = "Widened";
    /// The installed agent is too old for some ways of starting it; they
    /// are skipped.
    pub const AGENT_RUNGS_SKIPPED: &str = "AgentRungsSkipped";
    /// An agent setting's file could not be read as its format (or its
    /// key's place is no table): the file was left as it is.
    pub const AGENT_SETTING_LEFT_ALONE: &str = "AgentSettingLeftAlone";
    // The credential hand-off: what reached the session, what did not, and
    // (Ready) a destination jackin refused to write through.
    pub const CREDENTIALS_FORWARDED: &str = "CredentialsForwarded";
    pub const CREDENTIALS_MISSING: &str = "CredentialsMissing";
    pub const CREDENTIALS_REFUSED: &str = "CredentialsRefused";
    // The operator's own agent setup (`operatorConfig: sync`): what a start
    // copied, and what it refused or could not read (nothing of it written).
    pub const OPERATOR_CONFIG_COPIED: &str = "OperatorConfigCopied";
    pub const OPERATOR_CONFIG_REFUSED: &str = "OperatorConfigRefused";
    // Idle hooks: one command's outcome, what followed the commands, and
    // the IdleRestart condition's reason.
    pub const IDLE_HOOK: &str = "IdleHook";
    pub const IDLE_HOOKS: &str = "IdleHooks";
    pub const RESTART_FAILED: &str = "RestartFailed";
    /// The workspace's notify command ran for an event (an event).
    pub const NOTIFY: &str = "Notify";
    // A discard: what of the checkouts' unfinished work was saved (an
    // event), and (Ready) a save that failed, so nothing was deleted.
    pub const DISCARD_SAVED: &str = "DiscardSaved";
    /// A removed unit's conversation was saved first (an event).
    pub const CONVERSATION_SAVED: &str = "ConversationSaved";
    /// What an ended session left in `state/artifacts/` was moved out of
    /// the unit (an event).
    pub const ARTIFACTS_COLLECTED: &str = "ArtifactsCollected";
    pub const DISCARD_NOT_SAVED: &str = "DiscardNotSaved";
    /// An instance purged while its engine could not be reached: what it
    /// may have made there is left behind.
    pub const PURGED_WITHOUT_ENGINE: &str = "PurgedWithoutEngine";
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_under_jackins_prefix_are_reserved_but_the_operators_annotations() {
        for key in label::ALL {
            assert!(reserved_label(key).is_some(), "{key}");
        }
        for key in [
            "jackin.dev/anything",
            "sub.jackin.dev/x",
            "Jackin.Dev/source",
        ] {
            assert!(reserved_label(key).is_some(), "{key}");
            assert!(reserved_annotation(key).is_some(), "{key}");
        }
        for key in annotation::OPERATOR_SET {
            assert!(reserved_annotation(key).is_none(), "{key}");
        }
        for key in [
            "team",
            "example.com/team",
            "notjackin.dev/x",
            "jackin.dev.example/x",
        ] {
            assert!(reserved_label(key).is_none(), "{key}");
            assert!(reserved_annotation(key).is_none(), "{key}");
        }
        let why = reserved_label(label::SOURCE).unwrap();
        assert!(why.contains("jackin sets it"), "{why}");
    }
}
