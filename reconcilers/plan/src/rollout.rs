//! Rollouts, decided: when a session moves onto the current spec, and what
//! stops it. Pure; `decide` turns a rollout into steps, `act` runs them.
//!
//! Restores replay the pinned recipe, so that a session comes back as it
//! was left, whatever the spec says today. A rollout is the deliberate
//! opposite: the recipe is pinned again from the current spec (the role
//! rebuilt at its ref, the agent's entry and the engine resolved again),
//! and the container is replaced from it. Everything of the unit stays:
//! its identity, the agent's home and conversation (the next start resumes
//! it), the isolated checkouts and the kept volumes.
//!
//! A rollout is asked for by the operator (`jackin rollout NAME` stamps the
//! annotation `jackin.dev/rollout` with the time, as `kubectl rollout
//! restart` stamps `restartedAt`), or by the spec itself under
//! `updatePolicy: OnDrift`, once the session may be interrupted: nobody is
//! attached and the agent is idle, or its container does not run anyway.
//! Each request is handled once (`status.rollout`): rolled out, or refused
//! with the reason, never retried as it is. The record keeps the last
//! request of each kind, the operator's and the `OnDrift` one, so that
//! handling one does not make the other look new.
//!
//! Some changes cannot be made in place, and are refused with the reason:
//! a move to another engine (unless asked for with `--move`), a change of
//! the working directory of an agent that finds its conversations by it
//! (unless asked for with `--new-conversation`: the conversation starts
//! anew), and a change of an isolated checkout (its source, its isolation
//! mode, or the mount dropped) while the checkout holds unfinished work.
//!
//! How one runs (`decide` plans it): the recipe is pinned again while the
//! old container still runs, so a pin that fails leaves the session as it
//! was; the new recipe names the image it replaces until a container first
//! runs from it ([`replacing`]). Until then the container there is the old
//! one: the next look stops it gracefully, the one after removes it and its
//! sidecars, and the ladder makes the new one (tier 2 for the same image, 3
//! for a new one). A move to another engine first takes the session's
//! objects away from the engine it leaves; the pin then runs on the engine
//! it moves to.

use jackin_api::agent::Strategy;
use jackin_api::instance::{Instance, Isolation, MountStatus, Recipe, UpdatePolicy};
use jackin_api::names::annotation;

use crate::digest::sha256_hex;
use crate::recipe;
use crate::view::{Rollout, has_unfinished_work, work_summary};

/// What a rollout is decided from.
#[derive(Debug, Clone, Copy)]
pub struct Inputs<'a> {
    pub pinned: &'a Recipe,
    /// The recipe the spec asks for now ([`recipe::wanted`]).
    pub wanted: &'a Recipe,
    /// The update policy in force (the instance's, else its workspace's).
    pub policy: UpdatePolicy,
    /// Whether the container runs.
    pub running: bool,
    /// Whether the session may be interrupted now: nobody attached, and
    /// the agent idle. Only asked when a running session's spec drifted
    /// under `OnDrift`.
    pub quiet: bool,
    /// The isolated checkouts, as assessed now.
    pub mounts: &'a [MountStatus],
}

/// The update policy in force for `obj`: its own, else its workspace's,
/// else `Manual`.
pub fn policy(obj: &Instance, workspace: Option<&jackin_api::WorkspaceSpec>) -> UpdatePolicy {
    obj.spec
        .update_policy
        .or_else(|| workspace.and_then(|w| w.update_policy))
        .unwrap_or_default()
}

/// What an operator's request allows beyond a rollout in place, each
/// stamped with the request's own time (an older stamp allows nothing).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Allowed {
    /// `--move`: the engine may change.
    pub moving: bool,
    /// `--new-conversation`: the working directory may change for an agent
    /// that finds its conversations by it; the conversation starts anew.
    pub new_conversation: bool,
}

/// The operator's rollout request not handled yet, and what it allows.
pub fn operator_request(obj: &Instance) -> Option<(&str, Allowed)> {
    let annotations = &obj.metadata.annotations;
    let requested = annotations.get(annotation::ROLLOUT)?;
    if handled(obj, requested) {
        return None;
    }
    let stamped = |key: &str| annotations.get(key) == Some(requested);
    let allowed = Allowed {
        moving: stamped(annotation::ROLLOUT_MOVE),
        new_conversation: stamped(annotation::ROLLOUT_NEW_CONVERSATION),
    };
    Some((requested, allowed))
}

/// Whether the loop handled `request` (see [`RolloutRecord::has_handled`]).
fn handled(obj: &Instance, request: &str) -> bool {
    obj.status
        .as_ref()
        .and_then(|s| s.rollout.as_ref())
        .is_some_and(|r| r.has_handled(request))
}

/// The rollout to handle for `obj` now, if any. `None`: nothing asks for
/// one (or the request was handled).
pub fn pending(obj: &Instance, inputs: Inputs<'_>) -> Option<Rollout> {
    let (requested, allowed) = match operator_request(obj) {
        Some((requested, allowed)) => (requested.to_owned(), allowed),
        None if inputs.policy == UpdatePolicy::OnDrift => {
            let token = drift_token(inputs.pinned, inputs.wanted)?;
            if handled(obj, &token) {
                return None;
            }
            if inputs.running && !inputs.quiet {
                return Some(Rollout::Wait);
            }
            (token, Allowed::default())
        }
        None => return None,
    };
    match refusal(inputs.pinned, inputs.wanted, inputs.mounts, allowed) {
        Some(why) => Some(Rollout::Refuse { requested, why }),
        None => Some(Rollout::Go {
            requested,
            moving: allowed.moving,
            new_conversation: allowed.new_conversation,
        }),
    }
}

/// The request an `OnDrift` rollout answers: `drift-` and a digest of the
/// spec it moves to, so that each change is rolled out (or refused) once.
/// `None` when the spec asks for nothing the pinned recipe lacks.
pub fn drift_token(pinned: &Recipe, wanted: &Recipe) -> Option<String> {
    if recipe::drift(pinned, wanted).is_empty() {
        return None;
    }
    // The generation moves with every change of the spec, the phase's too:
    // it is not what the session runs.
    let compared = Recipe {
        generation: None,
        ..wanted.clone()
    };
    let json = serde_json::to_vec(&compared).expect("a recipe serializes");
    let digest = sha256_hex(&json, 8);
    Some(format!("drift-{digest}"))
}

/// Why the session cannot be moved onto `wanted` in place, if it cannot.
pub fn refusal(
    pinned: &Recipe,
    wanted: &Recipe,
    mounts: &[MountStatus],
    allowed: Allowed,
) -> Option<String> {
    let mut why = Vec::new();
    if pinned.engine != wanted.engine && !allowed.moving {
        why.push(format!(
            "spec.engine changed ({} to {}): the rollout would move the session to another \
             engine; `jackin rollout NAME --move` moves it (its home and checkouts stay on this \
             host, its container, network and volumes are made anew on the other engine)",
            engine_name(pinned.engine.as_deref()),
            engine_name(wanted.engine.as_deref())
        ));
    }
    if !allowed.new_conversation
        && let Some(lost) = conversation_left_behind(pinned, wanted)
    {
        why.push(lost);
    }
    for (dst, change) in changed_checkouts(pinned, wanted) {
        let Some(status) = mounts.iter().find(|m| m.dst == dst) else {
            continue;
        };
        if has_unfinished_work(status) {
            why.push(format!(
                "the isolated checkout of {dst} holds unfinished work ({}), and the rollout \
                 would {change}: commit and push it (or copy it out), then roll out again",
                work_summary(status)
            ));
        }
    }
    (!why.is_empty()).then(|| why.join("; "))
}

/// Why the agent would not find its conversation after the rollout, if it
/// would not: the working directory changes, and the agent (as the spec
/// names it now, the one that will look) finds its conversations by it.
/// A directory the image decides is not known before the image is, and is
/// taken as unchanged.
fn conversation_left_behind(pinned: &Recipe, wanted: &Recipe) -> Option<String> {
    let agent = wanted.agent.as_ref()?;
    let keeps_one = agent.strategy != Strategy::None;
    if !(keeps_one && agent.spec.conversations_by_directory) {
        return None;
    }
    let (before, after) = (
        pinned.working_dir.as_deref()?,
        recipe::chosen_working_dir(wanted)?,
    );
    (before != after).then(|| {
        format!(
            "the working directory changes ({before} to {after}) and {agent} finds its \
             conversations by directory: in {after} it would find none and start anew, the \
             conversation left behind; `jackin rollout NAME --new-conversation` rolls out with \
             a new conversation (the old one stays in the unit's home), or keep workingDir \
             {before}",
            agent = agent.name
        )
    })
}

/// The isolated checkouts of `pinned` that `wanted` no longer binds as they
/// are (another source or isolation mode, or no such mount), with what
/// would happen to each. A rollout retires them (when they are clean) and
/// makes what `wanted` asks for.
pub fn changed_checkouts(pinned: &Recipe, wanted: &Recipe) -> Vec<(String, String)> {
    pinned
        .mounts
        .iter()
        .filter(|m| m.isolation != Isolation::Shared)
        .filter_map(|old| {
            let change = match wanted.mounts.iter().find(|m| m.dst == old.dst) {
                None => "no longer mount it".to_owned(),
                Some(new) if new.isolation != old.isolation => format!(
                    "switch it from {} to {}",
                    old.isolation.as_str(),
                    new.isolation.as_str()
                ),
                Some(new) if new.src != old.src => {
                    format!("make it from {} instead of {}", new.src, old.src)
                }
                Some(_) => return None,
            };
            Some((old.dst.clone(), change))
        })
        .collect()
}

/// Whether `recipe` binds any of the isolated checkouts `mounts` otherwise
/// (another source or isolation mode, or no such mount): a rollout that
/// pinned it retires them ([`crate::plan::Step::RetireCheckouts`]); one that
/// changed only the command, say, retires nothing.
pub fn retires_checkouts(recipe: &Recipe, mounts: &[MountStatus]) -> bool {
    mounts.iter().any(|checkout| {
        !recipe.mounts.iter().any(|m| {
            m.dst == checkout.dst && m.src == checkout.src && m.isolation == checkout.isolation
        })
    })
}

fn engine_name(engine: Option<&str>) -> &str {
    engine.unwrap_or("the default engine")
}

/// The lines of a rollout's dry run: each recipe field the rollout would
/// change, as it is pinned and as the spec asks now. The image is only
/// known once built: a role-built recipe says it is rebuilt at its ref.
pub fn diff(pinned: &Recipe, wanted: &Recipe) -> Vec<String> {
    let mut lines = Vec::new();
    let mut field = |name: &str, before: String, after: String| {
        if before != after {
            lines.push(format!("{name}: {before} -> {after}"));
        }
    };
    if wanted.image.is_empty() {
        lines_for_role(pinned, wanted, &mut field);
    } else {
        field("image", pinned.image.clone(), wanted.image.clone());
    }
    if !wanted.command.is_empty() {
        field("command", show(&pinned.command), show(&wanted.command));
    }
    if wanted.working_dir.is_some() {
        field(
            "workingDir",
            show(&pinned.working_dir),
            show(&wanted.working_dir),
        );
    }
    field("mounts", show(&pinned.mounts), show(&wanted.mounts));
    field("env", show(&pinned.env), show(&wanted.env));
    field("sidecars", show(&pinned.sidecars), show(&wanted.sidecars));
    field(
        "security (the workspace's)",
        show(&recipe::workspace_security(pinned)),
        show(&recipe::workspace_security(wanted)),
    );
    field(
        "engine",
        engine_name(pinned.engine.as_deref()).to_owned(),
        engine_name(wanted.engine.as_deref()).to_owned(),
    );
    if pinned.credentials.is_some() {
        field(
            "credentials",
            show(&pinned.credentials),
            show(&wanted.credentials),
        );
    }
    let operator_config = |r: &Recipe| r.operator_config.unwrap_or_default().as_str().to_owned();
    field(
        "operatorConfig",
        operator_config(pinned),
        operator_config(wanted),
    );
    let entry = |r: &Recipe| recipe::compared_entry(r).map(|entry| show(&entry));
    if entry(pinned) != entry(wanted) {
        field(
            "agent",
            entry(pinned).unwrap_or_default(),
            entry(wanted).unwrap_or_default(),
        );
    }
    lines
}

fn lines_for_role(pinned: &Recipe, wanted: &Recipe, field: &mut impl FnMut(&str, String, String)) {
    field(
        "role.source.git",
        show(&pinned.role_source),
        show(&wanted.role_source),
    );
    field(
        "role.source.ref",
        show(&pinned.role_ref),
        show(&wanted.role_ref),
    );
    // Always said: the role is built again at its ref, which may have
    // moved since (a new commit is a new image, and a tier 3 rollout).
    let at = pinned.role_commit.as_deref().map_or("?", |c| short(c));
    field(
        "image",
        format!("{} (built from commit {at})", pinned.image),
        format!(
            "built again from {} at {}",
            wanted.role_source.as_deref().unwrap_or("?"),
            wanted.role_ref.as_deref().unwrap_or("HEAD")
        ),
    );
}

fn short(commit: &str) -> &str {
    commit.get(..12).unwrap_or(commit)
}

/// A value as one line of JSON (what a diff line shows).
fn show<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).unwrap_or_default()
}

/// Whether `obj` waits for a rollout's container to be replaced: its
/// recipe was pinned by a rollout and no container has run from it yet.
pub fn replacing(recipe: &Recipe) -> bool {
    recipe.replaces.is_some() && recipe.first_run_at.is_none()
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::agent::AgentSpec;
    use jackin_api::instance::RolloutRecord;
    use jackin_api::instance::{MountSpec, PinnedAgent};
    use jackin_api::{API_VERSION, ObjectMeta};
    use jiff::Timestamp;

    fn recipe() -> Recipe {
        Recipe {
            image: "img".into(),
            command: vec!["agent".into()],
            mounts: vec![MountSpec {
                src: "/src/app".into(),
                dst: "/workspace/app".into(),
                readonly: false,
                isolation: Isolation::Worktree,
                include: Vec::new(),
            }],
            ..Default::default()
        }
    }

    fn instance(annotations: &[(&str, &str)], handled: Option<&str>) -> Instance {
        let mut obj = Instance {
            api_version: API_VERSION.into(),
            kind: "Instance".into(),
            metadata: ObjectMeta {
                name: "a".into(),
                annotations: annotations
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                    .collect(),
                ..Default::default()
            },
            spec: Default::default(),
            status: Some(Default::default()),
        };
        obj.status.as_mut().unwrap().rollout = handled
            .map(|requested| RolloutRecord::handled(&obj, requested, Timestamp::UNIX_EPOCH, None));
        obj
    }

    fn inputs<'a>(pinned: &'a Recipe, wanted: &'a Recipe, policy: UpdatePolicy) -> Inputs<'a> {
        Inputs {
            pinned,
            wanted,
            policy,
            running: true,
            quiet: false,
            mounts: &[],
        }
    }

    fn moving() -> Allowed {
        Allowed {
            moving: true,
            ..Allowed::default()
        }
    }

    fn dirty(dst: &str) -> MountStatus {
        MountStatus {
            dst: dst.into(),
            isolation: Isolation::Worktree,
            dirty_files: vec!["M a.txt".into()],
            ..Default::default()
        }
    }

    #[test]
    fn an_operator_request_is_handled_once() {
        let (pinned, wanted) = (recipe(), recipe());
        let asked = [(annotation::ROLLOUT, "t1")];
        let go = pending(
            &instance(&asked, None),
            inputs(&pinned, &wanted, UpdatePolicy::Manual),
        );
        assert_eq!(
            go,
            Some(Rollout::Go {
                requested: "t1".into(),
                moving: false,
                new_conversation: false
            })
        );
        let done = instance(&asked, Some("t1"));
        assert_eq!(
            pending(&done, inputs(&pinned, &wanted, UpdatePolicy::Manual)),
            None
        );
        // With --move stamped alongside the same request.
        let moving = instance(&[asked[0], (annotation::ROLLOUT_MOVE, "t1")], None);
        assert!(matches!(
            pending(&moving, inputs(&pinned, &wanted, UpdatePolicy::Manual)),
            Some(Rollout::Go { moving: true, .. })
        ));
        // --new-conversation counts for the request it was stamped with
        // only, not for a later one.
        let anew = (annotation::ROLLOUT_NEW_CONVERSATION, "t1");
        assert!(matches!(
            pending(
                &instance(&[asked[0], anew], None),
                inputs(&pinned, &wanted, UpdatePolicy::Manual)
            ),
            Some(Rollout::Go {
                new_conversation: true,
                moving: false,
                ..
            })
        ));
        assert!(matches!(
            pending(
                &instance(&[(annotation::ROLLOUT, "t2"), anew], None),
                inputs(&pinned, &wanted, UpdatePolicy::Manual)
            ),
            Some(Rollout::Go {
                new_conversation: false,
                ..
            })
        ));
    }

    #[test]
    fn on_drift_waits_for_a_quiet_session_and_rolls_each_change_once() {
        let pinned = recipe();
        let mut wanted = recipe();
        // Without a change, nothing, whatever the policy.
        assert_eq!(
            pending(
                &instance(&[], None),
                inputs(&pinned, &wanted, UpdatePolicy::OnDrift)
            ),
            None
        );
        wanted.command = vec!["agent".into(), "--new".into()];
        // Manual: the change only shows as drift.
        assert_eq!(
            pending(
                &instance(&[], None),
                inputs(&pinned, &wanted, UpdatePolicy::Manual)
            ),
            None
        );
        let busy = inputs(&pinned, &wanted, UpdatePolicy::OnDrift);
        assert_eq!(pending(&instance(&[], None), busy), Some(Rollout::Wait));
        let quiet = Inputs {
            quiet: true,
            ..busy
        };
        let Some(Rollout::Go { requested, .. }) = pending(&instance(&[], None), quiet) else {
            panic!("a quiet session rolls out");
        };
        assert!(requested.starts_with("drift-"), "{requested}");
        // The container does not run: the next start rolls out.
        let stopped = Inputs {
            running: false,
            ..busy
        };
        assert!(matches!(
            pending(&instance(&[], None), stopped),
            Some(Rollout::Go { .. })
        ));
        // Handled: not again, until the spec changes once more.
        assert_eq!(pending(&instance(&[], Some(&requested)), quiet), None);
        wanted.command.push("--newer".into());
        let again = inputs(&pinned, &wanted, UpdatePolicy::OnDrift);
        assert!(matches!(
            pending(
                &instance(&[], Some(&requested)),
                Inputs {
                    quiet: true,
                    ..again
                }
            ),
            Some(Rollout::Go { .. })
        ));
        // A change of the generation alone (a phase change) is no drift.
        let same = Recipe {
            generation: Some(9),
            ..wanted.clone()
        };
        assert_eq!(drift_token(&pinned, &same), drift_token(&pinned, &wanted));
    }

    /// L2: an operator's request handled, then an `OnDrift` change refused:
    /// each is handled once, and neither comes back while nothing new is
    /// asked (the operator's request was taken for new once the drift's
    /// record replaced its own, and the two were refused in turn).
    #[test]
    fn an_on_drift_refusal_after_an_operator_rollout_is_handled_once() {
        let pinned = recipe();
        let mut obj = instance(&[(annotation::ROLLOUT, "t1")], Some("t1"));
        let handle = |obj: &mut Instance, wanted: &Recipe| {
            let dirty = [dirty("/workspace/app")];
            let inputs = Inputs {
                quiet: true,
                mounts: &dirty,
                ..inputs(&pinned, wanted, UpdatePolicy::OnDrift)
            };
            let decided = pending(obj, inputs);
            if let Some(Rollout::Refuse { requested, why }) = &decided {
                let record =
                    RolloutRecord::handled(obj, requested, Timestamp::now(), Some(why.clone()));
                obj.status.as_mut().unwrap().rollout = Some(record);
            }
            decided
        };
        let mut cloned = recipe();
        cloned.mounts[0].isolation = Isolation::Clone;
        let Some(Rollout::Refuse { requested, .. }) = handle(&mut obj, &cloned) else {
            panic!("the drift to a clone is refused while the worktree holds work");
        };
        assert!(requested.starts_with("drift-"), "{requested}");
        assert_eq!(handle(&mut obj, &cloned), None);
        assert_eq!(handle(&mut obj, &cloned), None);
        // A new request of the operator's is one.
        obj.metadata
            .annotations
            .insert(annotation::ROLLOUT.into(), "t2".into());
        assert!(matches!(
            handle(&mut obj, &cloned),
            Some(Rollout::Refuse { requested, .. }) if requested == "t2"
        ));
        assert_eq!(handle(&mut obj, &cloned), None);
    }

    #[test]
    fn what_cannot_change_in_place_is_refused_with_the_reason() {
        let pinned = recipe();
        // Another engine: only with --move.
        let elsewhere = Recipe {
            engine: Some("build-box".into()),
            ..recipe()
        };
        let why = refusal(&pinned, &elsewhere, &[], Allowed::default()).expect("refused");
        assert!(why.contains("--move"), "{why}");
        assert_eq!(refusal(&pinned, &elsewhere, &[], moving()), None);
        // A worktree switched to a clone: refused while it holds work,
        // retired when it is clean.
        let mut cloned = recipe();
        cloned.mounts[0].isolation = Isolation::Clone;
        let why = refusal(
            &pinned,
            &cloned,
            &[dirty("/workspace/app")],
            Allowed::default(),
        )
        .expect("refused");
        assert!(
            why.contains("/workspace/app") && why.contains("switch it from worktree to clone"),
            "{why}"
        );
        let clean = MountStatus {
            dirty_files: Vec::new(),
            ..dirty("/workspace/app")
        };
        assert_eq!(
            refusal(&pinned, &cloned, &[clean], Allowed::default()),
            None
        );
        assert_eq!(changed_checkouts(&pinned, &cloned).len(), 1);
        // Dropped with work in it: refused too.
        let dropped = Recipe {
            mounts: Vec::new(),
            ..recipe()
        };
        let why = refusal(
            &pinned,
            &dropped,
            &[dirty("/workspace/app")],
            Allowed::default(),
        )
        .expect("refused");
        assert!(why.contains("no longer mount it"), "{why}");
        // An unchanged checkout with work in it moves along as it is.
        assert_eq!(
            refusal(
                &pinned,
                &recipe(),
                &[dirty("/workspace/app")],
                Allowed::default()
            ),
            None
        );
    }

    /// The agent's entry as the fake and the built-ins have it, pinned.
    fn agent(name: &str, by_directory: bool, strategy: Strategy) -> PinnedAgent {
        PinnedAgent {
            name: name.into(),
            source: "builtin".into(),
            spec: AgentSpec {
                continue_args: vec!["--continue".into()],
                conversations_by_directory: by_directory,
                ..Default::default()
            },
            strategy,
            version: None,
        }
    }

    /// R11: a changed working directory loses the conversation of an agent
    /// that finds its conversations by it (codex's `resume --last`); the
    /// rollout is refused, naming `--new-conversation`, which lets it go
    /// on. An agent whose history is a fixed file (aider), one that
    /// resumes nothing, or an unchanged directory is not refused.
    #[test]
    fn a_changed_working_directory_is_refused_for_an_agent_that_finds_conversations_by_it() {
        let at = |dir: Option<&str>, agent: PinnedAgent| Recipe {
            working_dir: dir.map(str::to_owned),
            agent: Some(agent),
            ..recipe()
        };
        let codex = || agent("codex", true, Strategy::Latest);
        let pinned = at(Some("/work"), codex());
        let moved = at(Some("/elsewhere"), codex());
        let why = refusal(&pinned, &moved, &[], Allowed::default()).expect("refused");
        assert!(
            why.contains("/work to /elsewhere")
                && why.contains("codex finds its conversations by directory")
                && why.contains("--new-conversation"),
            "{why}"
        );
        let anew = Allowed {
            new_conversation: true,
            ..Allowed::default()
        };
        assert_eq!(refusal(&pinned, &moved, &[], anew), None);
        // Without workingDir, the agent starts in the first mount.
        let by_mount = at(None, codex());
        let why = refusal(&pinned, &by_mount, &[], Allowed::default()).expect("refused");
        assert!(why.contains("/work to /workspace/app"), "{why}");
        // Not refused: the same directory, a fixed history file, nothing
        // resumed.
        for (wanted, what) in [
            (at(Some("/work"), codex()), "the same directory"),
            (
                at(Some("/elsewhere"), agent("aider", false, Strategy::Latest)),
                "aider",
            ),
            (
                at(Some("/elsewhere"), agent("codex", true, Strategy::None)),
                "no resume",
            ),
        ] {
            assert_eq!(
                refusal(&pinned, &wanted, &[], Allowed::default()),
                None,
                "{what}"
            );
        }
    }

    /// Only a changed checkout is retired: a rollout of the command alone
    /// plans no retirement (nor says it retires anything).
    #[test]
    fn only_a_changed_checkout_is_retired() {
        let pinned = recipe();
        let bound = MountStatus {
            src: "/src/app".into(),
            ..dirty("/workspace/app")
        };
        let new_command = Recipe {
            command: vec!["agent".into(), "--new".into()],
            ..recipe()
        };
        assert!(!retires_checkouts(
            &new_command,
            std::slice::from_ref(&bound)
        ));
        let mut cloned = recipe();
        cloned.mounts[0].isolation = Isolation::Clone;
        assert!(retires_checkouts(&cloned, std::slice::from_ref(&bound)));
        let mut moved = recipe();
        moved.mounts[0].src = "/src/other".into();
        assert!(retires_checkouts(&moved, std::slice::from_ref(&bound)));
        let dropped = Recipe {
            mounts: Vec::new(),
            ..pinned
        };
        assert!(retires_checkouts(&dropped, &[bound]));
    }

    #[test]
    fn the_diff_names_what_changes() {
        let pinned = recipe();
        let mut wanted = recipe();
        wanted.command = vec!["agent".into(), "--new".into()];
        wanted.env.push(jackin_api::instance::EnvVar {
            name: "MODE".into(),
            value: Some("dev".into()),
            value_from: None,
        });
        let lines = diff(&pinned, &wanted);
        assert_eq!(lines.len(), 2, "{lines:?}");
        assert!(
            lines[0].starts_with("command: [\"agent\"] -> "),
            "{lines:?}"
        );
        assert!(lines[1].starts_with("env: [] -> "), "{lines:?}");
    }

    /// A session pinned before entries said how they find conversations
    /// shows no change of its entry for that alone: it runs nothing
    /// differently (as drift does not count it).
    #[test]
    fn the_diff_leaves_out_what_only_tells_a_rollout_its_cost() {
        let with = |by_directory| Recipe {
            agent: Some(agent("codex", by_directory, Strategy::Latest)),
            ..recipe()
        };
        assert_eq!(diff(&with(false), &with(true)), Vec::<String>::new());
        assert!(recipe::drift(&with(false), &with(true)).is_empty());
    }
}
