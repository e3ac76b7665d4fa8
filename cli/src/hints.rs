//! What to do next, for the failures jackin knows. The libraries' errors say
//! what happened, and name a `jackin` command themselves when the way
//! forward is known where they arise (so that a status condition or an
//! event reads well too); the binary adds here, once, what only it knows,
//! and never repeats what the error said.
//!
//! Wrappers declared `#[error(transparent)]` hide their inner error from
//! `source()`, so each wrapper is unwrapped by hand rather than found in the
//! cause chain.

use std::error::Error;

use jackin_act::ActError;
use jackin_act::credentials::CredentialError;
use jackin_act::image::RecipeError;
use jackin_act::secrets::SecretError;
use jackin_checkouts::git::GitError;
use jackin_checkouts::isolation::IsolationError;
use jackin_controller::new_session::NewSessionError;
use jackin_controller::sweep::SweepError;
use jackin_controller::{ReconcileError, StoreError};
use jackin_engine::EngineError;
use jackin_engine::addresses::AddressError;
use jackin_engine::endpoint::EndpointError;

/// The hint for the first cause in `err`'s chain that has one.
pub fn for_error(err: &(dyn Error + 'static)) -> Option<String> {
    let mut cause = Some(err);
    while let Some(error) = cause {
        if let Some(hint) = known(error) {
            return Some(hint);
        }
        cause = error.source();
    }
    None
}

fn known(error: &(dyn Error + 'static)) -> Option<String> {
    if let Some(e) = error.downcast_ref::<crate::deadline::GaveUp>() {
        return Some(gave_up(e));
    }
    if let Some(e) = error.downcast_ref::<ReconcileError>() {
        return reconcile(e);
    }
    if let Some(e) = error.downcast_ref::<SweepError>() {
        return match e {
            SweepError::Store(e) => store(e),
            SweepError::Engine(e) => engine(e),
            SweepError::Act(e) => act(e),
            SweepError::NotSwept(_) => Some(
                "everything else was pruned (with --dry-run, shown); `docker info` asks that \
                 engine (`jackin describe NAME` shows which engine an instance runs on): start or \
                 mend it, then prune again"
                    .into(),
            ),
        };
    }
    if let Some(e) = error.downcast_ref::<ActError>() {
        return act(e);
    }
    if let Some(e) = error.downcast_ref::<StoreError>() {
        return store(e);
    }
    if let Some(e) = error.downcast_ref::<NewSessionError>() {
        return new_session(e);
    }
    if let Some(e) = error.downcast_ref::<EngineError>() {
        return engine(e);
    }
    if let Some(e) = error.downcast_ref::<RecipeError>() {
        return recipe(e);
    }
    if let Some(e) = error.downcast_ref::<IsolationError>() {
        return isolation(e);
    }
    if let Some(e) = error.downcast_ref::<SecretError>() {
        return secret(e);
    }
    if let Some(e) = error.downcast_ref::<GitError>() {
        return git(e);
    }
    error.downcast_ref::<EndpointError>().and_then(endpoint)
}

fn new_session(e: &NewSessionError) -> Option<String> {
    match e {
        NewSessionError::WorkspaceNotFound(_) => Some("`jackin get workspaces` lists them".into()),
        NewSessionError::NoBasis(e) => Some(format!(
            "add the role to the workspace's spec.roles ({{name: {role}, image: IMAGE}} or \
             {{name: {role}, source: {{git: URL}}}}) and apply the workspace again, or pass \
             --from FILE with an Instance manifest",
            role = e.role
        )),
        NewSessionError::UnknownAgent { .. } => Some("`jackin get agents` lists them".into()),
        NewSessionError::InvalidName { .. } => {
            Some("name the new session otherwise with --name NAME".into())
        }
        NewSessionError::NameTaken { name } => Some(format!(
            "pass another --name, or resume it with `jackin attach {name}`"
        )),
        NewSessionError::Store(e) => store(e),
    }
}

fn reconcile(e: &ReconcileError) -> Option<String> {
    match e {
        ReconcileError::Store(e) => store(e),
        ReconcileError::Engine(e) => engine(e),
        ReconcileError::Step { error, .. } => act(error),
        ReconcileError::GaveUp { .. } => Some(
            "fix the cause, then `jackin set-phase NAME running` tries again (so does a changed \
             spec); `jackin describe NAME` shows the failure"
                .into(),
        ),
        ReconcileError::NotConverging => Some(
            "something else changes this instance's engine objects: `docker ps -a --filter \
             label=jackin.dev/instance=NAME` shows them"
                .into(),
        ),
    }
}

fn act(e: &ActError) -> Option<String> {
    match e {
        ActError::Engine(e) => engine(e),
        ActError::Recipe(e) => recipe(e),
        ActError::RoleBuild { log, source, .. } => recipe(source).or_else(|| {
            Some(match source.as_ref() {
                RecipeError::Engine(EngineError::Build(message))
                    if unreachable_registry(message) =>
                {
                    format!(
                        "the engine could not fetch an image the role's Dockerfile names (its \
                         FROM), from a registry it cannot reach: load that image into the engine \
                         (`docker save` where it is, `docker load` there), then `jackin set-phase \
                         NAME running`; {log} holds the build's output"
                    )
                }
                _ => format!(
                    "{log} holds the build's output: fix the role's Dockerfile, commit it, then \
                     `jackin set-phase NAME running`"
                ),
            })
        }),
        ActError::Secret(e) => secret(e),
        ActError::Isolation(e) => isolation(e),
        ActError::NoCommand(_) => Some("set spec.command".into()),
        ActError::UnknownAgent(_) => {
            Some("`jackin get agents` lists the agents; apply an Agent to add one".into())
        }
        ActError::AgentMissing { program, .. } => Some(format!(
            "install `{program}` in the role's Dockerfile, give the agent's entry an install \
             block (spec.install), or set spec.command to a program the image has"
        )),
        ActError::AgentInstall { agent, .. } => Some(format!(
            "the role image must have what the install block uses (npm, pip): fix the role's \
             Dockerfile or the block (`jackin get agent {agent} -o yaml` shows it), then \
             `jackin set-phase NAME running`"
        )),
        ActError::ForeignVolume(volume) => Some(format!(
            "`docker volume inspect {volume}` shows whose it is; remove it if it is stale"
        )),
        ActError::Credentials(e) => match e.as_ref() {
            CredentialError::Refused { at, .. } => Some(format!(
                "the agent can write its home and may have planted it: look at {}, remove \
                 it, and `jackin set-phase NAME running`; or purge the instance",
                at.display()
            )),
        },
        ActError::Discard(_) => Some(
            "`jackin describe NAME` shows the checkouts and their unfinished work; \
             `jackin get discarded` lists what is saved"
                .into(),
        ),
        ActError::UnitNotOnEngine { .. } => Some(
            "set spec.engine (or the workspace's) to an engine on this machine and `jackin \
             rollout NAME --move`, or `jackin set-phase NAME running` once the engine sees \
             this machine's files; the unit is kept as it was"
                .into(),
        ),
        ActError::Addresses(AddressError::Engine(e)) => engine(e),
        // The message says how to widen the pool, or which setting is wrong.
        ActError::Addresses(_)
        | ActError::PortsExhausted { .. }
        | ActError::Io { .. }
        | ActError::State(_) => None,
    }
}

fn store(e: &StoreError) -> Option<String> {
    match e {
        StoreError::InstanceNotFound(_) => Some("`jackin get instances` lists them".into()),
        StoreError::UidMismatch { .. } => {
            Some("remove metadata.uid from the file, or delete the stored object first".into())
        }
        StoreError::Unreadable { .. } => {
            Some("`jackin prune` moves an unreadable unit aside, deleting nothing".into())
        }
        // The path and the system's error say it; the message of a
        // vanished instance already says to apply again.
        StoreError::Io { .. } | StoreError::Vanished(_) => None,
    }
}

fn gave_up(e: &crate::deadline::GaveUp) -> String {
    match &e.waiting {
        Some(_) => "`docker info` asks that engine; restart it if it hangs, or point DOCKER_HOST \
                    (or the docker context) at the engine you mean. What was done before the \
                    deadline stays done; run the command again to carry on"
            .into(),
        None => "what was done before the deadline stays done: `jackin get -o wide` shows where \
                 each instance stands; run the command again, with a longer --timeout, to carry \
                 on (a running controller carries on by itself)"
            .into(),
    }
}

fn engine(e: &EngineError) -> Option<String> {
    match e {
        EngineError::Unreachable { endpoint, .. } if endpoint.starts_with("ssh://") => {
            Some(format!(
                "jackin logs in as `ssh` does here, with your ssh config and agent, and the \
                 host's key already known: `ssh {} docker version` must work from this shell \
                 (the host needs the docker CLI)",
                ssh_destination(endpoint)
            ))
        }
        EngineError::Unreachable { .. } => {
            Some("start dockerd, or point DOCKER_HOST at a running engine".into())
        }
        EngineError::NoAnswer { .. } => Some(
            "the engine took the connection but did not answer: `docker info` asks it; restart \
             it if it hangs, or point DOCKER_HOST (or the docker context) at the engine you mean"
                .into(),
        ),
        EngineError::Endpoint(e) => endpoint(e),
        EngineError::Offline { .. } => Some(
            "start that engine or mend the way to it, then run the command again; `jackin \
             describe NAME` shows which engine an instance runs on"
                .into(),
        ),
        // The engine's own words are the best guide.
        EngineError::Refused { .. } | EngineError::Build(_) | EngineError::Failed { .. } => None,
    }
}

/// `ssh://me@box:2222` as `ssh` takes it on its command line.
fn ssh_destination(endpoint: &str) -> String {
    let rest = endpoint.trim_start_matches("ssh://").trim_end_matches('/');
    match rest.rsplit_once(':') {
        Some((host, port)) if !rest.ends_with(']') => format!("-p {port} {host}"),
        _ => rest.to_owned(),
    }
}

fn endpoint(e: &EndpointError) -> Option<String> {
    match e {
        EndpointError::UnknownContext { .. } => Some("`docker context ls` lists them".into()),
        EndpointError::NotASocket { .. } | EndpointError::Invalid { .. } => Some(
            "name the engine's socket (unix:///var/run/docker.sock) or address \
             (tcp://HOST:2376), or a context (`docker context ls`)"
                .into(),
        ),
        // The message names the forms expected, or the file and what is wrong.
        EndpointError::Unsupported { .. } | EndpointError::BadContext { .. } => None,
    }
}

/// Whether a build failed fetching an image from a registry (the network,
/// the name, the access), as the engine's builders say it: nothing in the
/// Dockerfile to fix.
fn unreachable_registry(message: &str) -> bool {
    [
        "pull access denied",
        "failed to resolve",
        "dial tcp",
        "no such host",
        "registry-1.docker.io",
        "i/o timeout",
        "TLS handshake",
        "manifest unknown",
    ]
    .iter()
    .any(|sign| message.contains(sign))
}

fn recipe(e: &RecipeError) -> Option<String> {
    match e {
        RecipeError::ImageNotFound {
            buildable: true, ..
        } => Some("build or load it, or drop spec.image to build the role".into()),
        RecipeError::ImageNotFound { .. } => Some(
            "build it or load it into the engine (`docker load`), or name one the engine has \
             (`docker images`)"
                .into(),
        ),
        RecipeError::CommitUnavailable { .. } => {
            Some("restore the commit in the repository, or purge the instance".into())
        }
        RecipeError::Git(e) => git(e),
        RecipeError::Engine(e) => engine(e),
        RecipeError::RefNotFound { .. } => Some(
            "push that ref to the role's repository, or name one it has in the role's \
             source.ref"
                .into(),
        ),
        RecipeError::UnknownProvider { .. } => Some(
            "pick one the agent's entry has (spec.provider, or the workspace's), or apply an \
             Agent entry that defines it"
                .into(),
        ),
        // The message says what is missing or wrong in the role, or what
        // the workspace would have to allow.
        RecipeError::NothingToRebuild
        | RecipeError::RoleWideningRefused(_)
        | RecipeError::RoleConfig(_)
        | RecipeError::NoDockerfile { .. }
        | RecipeError::Context(_) => None,
    }
}

fn isolation(e: &IsolationError) -> Option<String> {
    match e {
        IsolationError::Unrecorded { .. } => {
            Some("move it away once you have checked it, then converge again".into())
        }
        IsolationError::ResumeConflict { src, .. } => Some(format!(
            "restore the commit in {src}, or inspect the checkout and purge the instance"
        )),
        IsolationError::LinkConflict { path, .. } => Some(format!(
            "something in the container rewrote what git needs of the checkout: look at the \
             files in {path} with file tools (git run there on the host would read the agent's \
             config), save what you need, then purge the instance with --force; jackin removes \
             only its own checkout, repository and refs"
        )),
        IsolationError::Git(e) => git(e),
        // The message says how to put the pin (or the branch) back, and
        // when to purge.
        IsolationError::BasePinMoved { .. }
        | IsolationError::BranchMoved { .. }
        | IsolationError::Unpublished { .. }
        | IsolationError::SharedOverIsolated { .. }
        | IsolationError::WorktreeTwice { .. }
        // The path and what is wrong with it say it.
        | IsolationError::View(_)
        | IsolationError::Io { .. }
        | IsolationError::Records { .. }
        | IsolationError::NotARepository { .. }
        | IsolationError::NotPrepared { .. } => None,
    }
}

fn secret(e: &SecretError) -> Option<String> {
    match e {
        SecretError::OnePassword { .. } => Some("sign in with `op signin`".into()),
        SecretError::HostEnvUnset { source_var, .. } => Some(format!(
            "hostEnv secrets are read from the environment of the jackin process that starts \
             the container: export {source_var} in the shell that runs that command, or \
             restart the controller with it set"
        )),
        SecretError::File { .. } => None,
    }
}

fn git(e: &GitError) -> Option<String> {
    match e {
        GitError::Spawn(_) => Some("install git".into()),
        GitError::Confine(_) => Some(
            "run jackin on a kernel with Landlock enabled (Linux 5.13 or later; see \
             docs/SECURITY.md), or discard the checkout unassessed with --force"
                .into(),
        ),
        GitError::TimedOut { .. } | GitError::TooMuchOutput { .. } => Some(
            "inspect the checkout with `jackin exec`: something in it (a FIFO, a huge tree) \
             keeps git from finishing"
                .into(),
        ),
        // Their messages say what to do.
        GitError::Failed { .. } | GitError::CacheChanged { .. } | GitError::Cache { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_are_found_through_transparent_wrappers() {
        let missing = ActError::Recipe(RecipeError::ImageNotFound {
            image: "x:1".into(),
            buildable: true,
        });
        let reconcile = ReconcileError::Step {
            step: "pinning the launch recipe".into(),
            error: missing,
        };
        let err = anyhow::Error::new(reconcile).context("converging");
        assert_eq!(
            for_error(err.as_ref()).as_deref(),
            Some("build or load it, or drop spec.image to build the role")
        );
    }

    /// A hint suggests only what can work: building the role where the
    /// instance names no role source cannot, nor fixing a Dockerfile that
    /// only names an image the engine could not fetch.
    #[test]
    fn hints_suggest_only_what_can_work() {
        let missing = ActError::Recipe(RecipeError::ImageNotFound {
            image: "x:1".into(),
            buildable: false,
        });
        let hint = act(&missing).unwrap();
        assert!(!hint.contains("build the role"), "{hint}");
        assert!(hint.contains("docker load"), "{hint}");
        let build = |message: &str| ActError::RoleBuild {
            role: "r".into(),
            log: "build.log".into(),
            source: Box::new(RecipeError::Engine(EngineError::Build(message.into()))),
        };
        let offline = "Get \"https://registry-1.docker.io/v2/\": dial tcp: lookup \
                       registry-1.docker.io: no such host";
        let hint = act(&build(offline)).unwrap();
        assert!(hint.contains("could not fetch"), "{hint}");
        assert!(!hint.contains("fix the role's Dockerfile"), "{hint}");
        let broken = "The command '/bin/sh -c make' returned a non-zero code: 2";
        let hint = act(&build(broken)).unwrap();
        assert!(hint.contains("fix the role's Dockerfile"), "{hint}");
    }

    #[test]
    fn an_unreachable_ssh_engine_is_answered_with_the_ssh_that_must_work() {
        let unreachable = |endpoint: &str| EngineError::Unreachable {
            endpoint: endpoint.into(),
            source: bollard::errors::Error::IOError {
                err: std::io::Error::other("ssh: Connection refused"),
            },
        };
        let hint = for_error(&unreachable("ssh://me@box:2222")).unwrap();
        assert!(
            hint.contains("`ssh -p 2222 me@box docker version`"),
            "{hint}"
        );
        // No forwarded socket: that is an engine elsewhere all the same.
        assert!(!hint.contains("DOCKER_HOST"), "{hint}");
        let hint = for_error(&unreachable("ssh://box")).unwrap();
        assert!(hint.contains("`ssh box docker version`"), "{hint}");
    }

    #[test]
    fn errors_without_a_way_forward_get_no_hint() {
        let err = GitError::Failed {
            args: "status".into(),
            stderr: "fatal".into(),
        };
        assert_eq!(for_error(&err), None);
    }
}
