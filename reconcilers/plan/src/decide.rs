//! Deciding what to do: a pure function of (desired phase, status, observed)
//! that returns a plan. Nothing here touches the engine or the disk, so every
//! row of the table below is a unit test.
//!
//! For desired `Running` the decision over the observed container *is* the
//! restore ladder. It reuses before it recreates, because the further down it
//! goes the less of the original session comes back:
//!
//! | observed container            | steps                                  | tier |
//! |-------------------------------|----------------------------------------|------|
//! | running                       | none                                   | 0    |
//! | exists, stopped               | start it (same writable layer)         | 1    |
//! | missing, pinned image present | create from the pinned recipe, start   | 2    |
//! | missing, pinned image missing | rebuild at the pinned commit, then 2   | 3    |
//! | no recipe pinned yet          | pin (build or resolve), create, start  | launch |
//!
//! Isolated checkouts are prepared (made, or verified before reuse) before a
//! container that binds them is created or started. A purge that would
//! discard unfinished work in them is blocked until the annotation
//! `jackin.dev/acknowledge-discard` quotes the digest of that evidence.
//!
//! `Kept` stops the container gracefully, removes the container, sidecars and
//! network, and keeps the unit and volumes. `Purged` stamps
//! `Purging` first (so a crash mid-way leaves an honest record), tears down,
//! then finishes in one step: the unit, the sockets directory and the sibling
//! lock go, and the index row last.
//!
//! A recipe that no container has run from yet, pinned from an older
//! generation of the spec, counts as not pinned: a launch that failed on a
//! typo is pinned again from the corrected spec. Once a container has run
//! from it, the recipe is the session's. The session edge is decided first
//! ([`ending::steps`]) and the rest from the status as those steps leave
//! it. Beside the main table: [`recycle`], the idle hooks' restart, and
//! [`corrected_phase`], a sweep's correction of a record that says
//! `Running` of a container that is gone.

use jackin_api::DesiredPhase;
use jackin_api::instance::{Instance, InstancePhase, Isolation, Recipe, SettledBy};
use jackin_api::names::annotation;
use jiff::Timestamp;

use crate::ending;
use crate::plan::{Again, Plan, Step, Tier};
use crate::rollout;
use crate::view::{ContainerView, InstanceView, Rollout, acknowledgement_digest};

/// Why the instance is wanted in `phase`: the spec, or a settlement.
fn asked(obj: &Instance, phase: DesiredPhase) -> String {
    match obj.settlement() {
        Some(settled) if settled.phase == phase && obj.spec.phase != phase => {
            let by = match settled.by {
                SettledBy::ExitPolicy => "the exit policy",
                SettledBy::Operator => "the operator at the end of the session",
                SettledBy::KeepCap => "the keep cap",
                SettledBy::IdleHooks => "the idle hooks",
            };
            format!("{phase} as settled by {by}")
        }
        _ => format!("{phase} as the spec asks"),
    }
}

/// Whether unfinished work with this digest may be discarded: the operator
/// acknowledged it (annotation), or the settlement that purges the instance
/// did (the `clean` policy, the operator's "clean up" answer).
fn acknowledged(obj: &Instance, digest: &str) -> bool {
    let by_annotation = obj
        .metadata
        .annotations
        .get(annotation::ACKNOWLEDGE_DISCARD)
        .is_some_and(|a| a == digest);
    let by_settlement = obj
        .settlement()
        .and_then(|s| s.acknowledged.as_deref())
        .is_some_and(|a| a == digest);
    by_annotation || by_settlement
}

/// The next steps for `obj`, given what the engine holds of it. The phase
/// is the effective one ([`Instance::desired_phase`]): the spec, carried on
/// by a settlement of the last session where there is one; `now`, the time
/// a settlement the session edge makes is stamped with.
pub fn decide(obj: &Instance, view: &InstanceView, now: Timestamp) -> Plan {
    let (edge, after) = session_edge(obj, view, now);
    // The rest of the plan is decided from the status as the session
    // edge's steps leave it (a settlement changes the phase wanted).
    let mut plan = decide_phase(&after, view, edge.ended);
    plan.steps.splice(0..0, edge.steps);
    // Nothing writes the unit's repositories between a publication and the
    // next one a plan holds (the session's end, a removal, a start): the
    // first serves them all.
    let mut published = false;
    plan.steps.retain(|step| {
        !(matches!(step, Step::PublishCheckouts) && std::mem::replace(&mut published, true))
    });
    bookkept(obj, plan)
}

/// The idle hooks' restart of the container `id`, the way a keep ends a
/// session: while it runs, a graceful stop (the agent may save its state,
/// and the wrapper writes its marker), then a look again; once stopped,
/// the session edge is recorded and the container goes, the unit kept, for
/// the ladder to make it anew (tier 2). An agent that ended its session
/// itself meanwhile is an ending the loop settles, never a restart: the
/// container stays.
pub fn recycle(obj: &Instance, view: &InstanceView, id: &str, now: Timestamp) -> Plan {
    let cause = "the idle hooks recycle the container";
    if view
        .container
        .as_ref()
        .is_some_and(|c| c.id == id && c.running)
    {
        let plan = Plan {
            steps: vec![Step::StopContainer { id: id.to_owned() }],
            tier: None,
            target: InstancePhase::Running,
            blocked: None,
            cause: format!("{cause}: it stops gracefully first"),
        };
        return bookkept(obj, plan);
    }
    let (edge, after) = session_edge(obj, view, now);
    let mut steps = edge.steps;
    if edge.ended.is_none() && after.desired_phase() == DesiredPhase::Running {
        steps.push(Step::RemoveContainer { id: id.to_owned() });
    }
    let plan = Plan {
        steps,
        tier: None,
        // As a keep does: the phase stops saying it runs before jackin
        // removes the container, so its absence is never read as a
        // session lost.
        target: InstancePhase::Launching,
        blocked: None,
        cause: format!("{cause}: the session is recorded, then it goes"),
    };
    bookkept(obj, plan)
}

/// The phase to correct an instance's record to when it says `Running`
/// and the engine runs no container of it (a crash, a power-off, `docker
/// rm`), as a sweep finds between reconciles: `Exited`, the unit intact,
/// for the next reconcile to restore. `None`: the record stands.
pub fn corrected_phase(
    recorded: Option<InstancePhase>,
    container_runs: bool,
) -> Option<InstancePhase> {
    (recorded == Some(InstancePhase::Running) && !container_runs).then_some(InstancePhase::Exited)
}

/// The session edge's steps ([`ending::steps`]) and the instance as they
/// leave it.
fn session_edge(obj: &Instance, view: &InstanceView, now: Timestamp) -> (ending::Ending, Instance) {
    let running = view.container.as_ref().is_some_and(|c| c.running);
    let mut edge = ending::steps(
        obj,
        running,
        view.container.is_some(),
        &view.session,
        view.exit_policy,
        &view.mounts,
    );
    // The session that wrote its worktrees' repositories has ended: their
    // branches are published once its end is recorded (the stop's
    // publication, whoever stopped it).
    if let Some(at) = edge
        .steps
        .iter()
        .position(|step| matches!(step, Step::RecordSession(_)))
        && has_worktrees(view)
    {
        edge.steps.insert(at + 1, Step::PublishCheckouts);
    }
    let mut after = obj.clone();
    for step in &edge.steps {
        ending::apply(&mut after, step, &view.mounts, now);
    }
    (edge, after)
}

/// The plan with its bookkeeping in place: the phase writes and the looks
/// again its steps need.
///
/// - A plan that makes the session (anew) says `Launching` first, unless
///   it only records a rollout's pin or refusal or a note about the last
///   session (the session then runs on as pinned).
/// - Before jackin removes the container toward any phase but `Running`
///   (or `Purging`, stamped first), the phase it leads to is written.
/// - A start that restores the session (the plan's tier) is recorded as
///   such, with the rollout it carries out when the recipe is a rollout's
///   that no container ran from yet.
/// - A stop, and a rollout's pin, end what runs of the plan: the rest is
///   decided from a look again.
fn bookkept(obj: &Instance, plan: Plan) -> Plan {
    let bookkeeping = plan.steps.iter().all(|step| {
        matches!(
            step,
            Step::RolloutRecipe { moving: false, .. }
                | Step::RefuseRollout { .. }
                | Step::ClearExitQuestion
                | Step::NoteMalformedMarker(_)
        )
    });
    let mut steps = Vec::with_capacity(plan.steps.len() + 2);
    let mut plan_steps = plan.steps.into_iter().peekable();
    // A move's check changes nothing: the session runs on where it is
    // until the check holds, and only then is it launching elsewhere.
    if let Some(check) = plan_steps.next_if(|s| matches!(s, Step::CheckMoveTarget { .. })) {
        steps.push(check);
    }
    if plan.target == InstancePhase::Running
        && !bookkeeping
        && obj.phase() != Some(InstancePhase::Launching)
    {
        steps.push(Step::SetPhase(InstancePhase::Launching));
    }
    let removal_phase = !matches!(plan.target, InstancePhase::Running | InstancePhase::Purging);
    let restore = plan.tier.map(|tier| Step::RecordRestore {
        tier,
        rollout: rollout_carried_out(obj),
    });
    for step in plan_steps {
        let after = match &step {
            Step::StopContainer { .. } => Some(Step::LookAgain(Again::SessionStopped)),
            Step::RolloutRecipe { .. } => Some(Step::LookAgain(Again::RecipePinned)),
            Step::StartContainer { .. } => restore.clone(),
            _ => None,
        };
        if removal_phase && matches!(step, Step::RemoveContainer { .. }) {
            steps.push(Step::SetPhase(plan.target));
        }
        steps.push(step);
        steps.extend(after);
    }
    Plan { steps, ..plan }
}

/// The plan for the phase wanted, once the session edge is decided:
/// `ended`, the exit code of a session the agent ended on its own and
/// nothing settled.
fn decide_phase(obj: &Instance, view: &InstanceView, ended: Option<i64>) -> Plan {
    match obj.desired_phase() {
        DesiredPhase::Running => running(obj, view, ended),
        DesiredPhase::Kept => Plan {
            steps: kept_teardown(obj, view),
            tier: None,
            target: InstancePhase::Kept,
            blocked: None,
            cause: format!(
                "{}: the engine's objects go, the unit stays",
                asked(obj, DesiredPhase::Kept)
            ),
        },
        DesiredPhase::Purged => {
            if let Some(digest) = acknowledgement_digest(&view.mounts)
                && !acknowledged(obj, &digest)
            {
                return Plan {
                    steps: Vec::new(),
                    tier: None,
                    target: obj.phase().unwrap_or(InstancePhase::Pending),
                    cause: format!(
                        "{}, but the isolated checkouts hold unfinished work (digest {digest}) \
                         nobody acknowledged: nothing happens",
                        asked(obj, DesiredPhase::Purged)
                    ),
                    blocked: Some(digest),
                };
            }
            let stamped = obj.phase() == Some(InstancePhase::Purging);
            let mut steps = Vec::new();
            if !stamped {
                steps.push(Step::StampPurging);
            }
            // Nothing of the session survives a purge: no graceful stop.
            steps.extend(teardown(view, false));
            steps.extend(view.volumes.iter().cloned().map(Step::RemoveVolume));
            // Once nothing runs in the unit, before anything of it goes.
            if obj.recipe().is_some() {
                steps.push(Step::SaveConversation);
            }
            if !view.mounts.is_empty() {
                // The removal's publication: their branches reach the
                // host before the checkouts go.
                steps.extend(has_worktrees(view).then_some(Step::PublishCheckouts));
                steps.push(Step::RemoveCheckouts);
            }
            steps.push(Step::FinishPurge);
            Plan {
                steps,
                tier: None,
                target: InstancePhase::Purging,
                blocked: None,
                cause: format!(
                    "{}: everything of the instance goes, its index row last",
                    asked(obj, DesiredPhase::Purged)
                ),
            }
        }
    }
}

/// The rollout request a start from `obj`'s recipe carries out: the one
/// handled last, when a rollout pinned the recipe and no container ran from
/// it yet.
fn rollout_carried_out(obj: &Instance) -> Option<String> {
    let status = obj.status.as_ref()?;
    status
        .recipe
        .as_ref()
        .filter(|r| rollout::replacing(r))
        .and(status.rollout.as_ref())
        .map(|r| r.requested.clone())
}

/// The recipe the instance runs from, and whether a pinned one was
/// superseded: no container ever ran from it, and the spec moved on since.
/// A running container has run, so its recipe stands whatever it says.
fn pinned_recipe<'a>(obj: &'a Instance, view: &InstanceView) -> (Option<&'a Recipe>, bool) {
    let recipe = obj.recipe();
    let running = view.container.as_ref().is_some_and(|c| c.running);
    match recipe {
        Some(r) if !running && r.superseded(obj.metadata.generation) => (None, true),
        recipe => (recipe, false),
    }
}

/// The plan for a session the agent ended itself with `code`: nothing.
fn ended_by_the_agent(code: i64) -> Plan {
    Plan {
        steps: Vec::new(),
        tier: None,
        target: if code == 0 {
            InstancePhase::Exited
        } else {
            InstancePhase::Crashed
        },
        blocked: None,
        cause: format!(
            "the agent ended its session (exit {code}): nothing restarts it until the operator \
             resumes it"
        ),
    }
}

/// The restore ladder.
fn running(obj: &Instance, view: &InstanceView, ended: Option<i64>) -> Plan {
    let (recipe, superseded) = pinned_recipe(obj, view);
    let pinned = recipe.is_some();
    // A session the agent ended itself is over, not lost: nothing restarts
    // it until the operator resumes it.
    let runs = view.container.as_ref().is_some_and(|c| c.running);
    if let (Some(code), false, true) = (ended, runs, pinned) {
        return ended_by_the_agent(code);
    }
    let mut steps = Vec::new();
    if let Some(recipe) = recipe {
        match &view.rollout {
            Some(Rollout::Go {
                requested,
                moving,
                new_conversation,
            }) => {
                return rollout(obj, view, requested, *moving, *new_conversation);
            }
            Some(Rollout::Refuse { requested, why }) => {
                steps.push(Step::RefuseRollout {
                    requested: requested.clone(),
                    why: why.clone(),
                });
            }
            Some(Rollout::Wait) | None => {}
        }
        if rollout::replacing(recipe)
            && let Some(c) = &view.container
        {
            // A rollout pinned the recipe: the container is the one it
            // replaces.
            return replacement(obj, view, recipe, c, steps, ended);
        }
    }
    let tier = if !pinned {
        // A container created from a superseded recipe never ran: it goes
        // with its recipe.
        if superseded && let Some(c) = &view.container {
            steps.push(Step::RemoveContainer { id: c.id.clone() });
        }
        steps.push(Step::PinRecipe);
        None
    } else {
        Some(match &view.container {
            Some(c) if c.running => Tier::Running,
            Some(_) => Tier::Started,
            None if view.image_present => Tier::Recreated,
            None => Tier::Rebuilt,
        })
    };
    if tier == Some(Tier::Rebuilt) {
        steps.push(Step::RebuildImage);
    }
    if tier != Some(Tier::Running) && has_isolated_mounts(recipe) {
        // The start's publication: what the agent committed in an earlier
        // session reaches the host before its checkouts are checked.
        steps.extend(has_worktrees(view).then_some(Step::PublishCheckouts));
        steps.push(Step::PrepareMounts);
    }
    steps.extend(support(obj, recipe, view));
    match (tier, &view.container) {
        (Some(Tier::Running), _) => {}
        (Some(Tier::Started), Some(c)) => {
            steps.extend(home_writers(recipe));
            steps.push(Step::StartContainer {
                id: Some(c.id.clone()),
            });
        }
        _ => {
            if recipe.is_none_or(|r| r.storage.is_none()) {
                steps.push(Step::ProveUnitStorage);
            }
            steps.push(Step::CreateContainer);
            steps.extend(home_writers(recipe));
            steps.push(Step::StartContainer { id: None });
        }
    }
    let cause = ladder_cause(tier, superseded);
    Plan {
        steps,
        // Tier 0 needs nothing; a launch is not a restore.
        tier: tier.filter(|t| *t != Tier::Running),
        target: InstancePhase::Running,
        blocked: None,
        cause: format!("{}; {cause}", asked(obj, DesiredPhase::Running)),
    }
}

/// Why the ladder takes the rung `tier` (`None`: a pin), in words.
fn ladder_cause(tier: Option<Tier>, superseded: bool) -> &'static str {
    match tier {
        None if superseded => {
            "the spec changed before any container ran from the recipe: it is pinned again"
        }
        None => "a first launch: the recipe is pinned",
        Some(Tier::Running) => "the container runs",
        Some(Tier::Started) => {
            "the container exists, stopped: tier 1 starts it, its writable layer intact"
        }
        Some(Tier::Recreated) => {
            "no container, the pinned image is there: tier 2 creates it from the recipe"
        }
        Some(Tier::Rebuilt) => {
            "no container and no image: tier 3 rebuilds at the pinned commit, then creates it"
        }
    }
}

/// The container a rollout's recipe replaces (see [`rollout::replacing`]):
/// it stops gracefully (the rest of the plan waits for the next look, which
/// records how its session ended), then goes with its sidecars, and the
/// ladder makes the new one from the recipe. `steps`, what the plan does
/// first.
fn replacement(
    obj: &Instance,
    view: &InstanceView,
    recipe: &Recipe,
    c: &ContainerView,
    mut steps: Vec<Step>,
    ended: Option<i64>,
) -> Plan {
    if c.running {
        return Plan {
            steps: vec![Step::StopContainer { id: c.id.clone() }],
            tier: None,
            target: InstancePhase::Running,
            blocked: None,
            cause: format!(
                "{}; a rollout pinned a new recipe: the container it replaces stops first",
                asked(obj, DesiredPhase::Running)
            ),
        };
    }
    steps.push(Step::RemoveContainer { id: c.id.clone() });
    steps.extend(view.sidecars.iter().map(|(name, c)| Step::RemoveSidecar {
        name: name.clone(),
        id: c.id.clone(),
    }));
    if rollout::retires_checkouts(recipe, &view.mounts) {
        steps.extend(has_worktrees(view).then_some(Step::PublishCheckouts));
        steps.push(Step::RetireCheckouts);
    }
    let replaced = InstanceView {
        container: None,
        sidecars: Default::default(),
        ..view.clone()
    };
    let mut plan = running(obj, &replaced, ended);
    steps.append(&mut plan.steps);
    plan.steps = steps;
    // A new image is a rebuild: tier 3; the same image, tier 2.
    plan.tier = Some(if recipe.replaces.as_deref() == Some(&recipe.image_id) {
        Tier::Recreated
    } else {
        Tier::Rebuilt
    });
    plan.cause = format!(
        "{}; a rollout pinned a new recipe: the container is made anew from it, the \
         unit kept (tier {})",
        asked(obj, DesiredPhase::Running),
        plan.tier.map_or(0, Tier::number)
    );
    plan
}

/// A rollout: the recipe pinned again from the current spec. On the same
/// engine that is all this plan does; the next look replaces the container
/// (see [`rollout::replacing`]). A move to another engine first takes away
/// everything the session has on the one it leaves (gracefully, and in a
/// plan of its own), since the objects of a recipe pinned elsewhere are
/// never looked for here again; the unit stays.
fn rollout(
    obj: &Instance,
    view: &InstanceView,
    requested: &str,
    moving: bool,
    new_conversation: bool,
) -> Plan {
    let pin = Step::RolloutRecipe {
        requested: requested.to_owned(),
        moving,
        new_conversation,
    };
    let cause = |what: &str| {
        format!(
            "{}; a rollout was asked for ({requested}): {what}",
            asked(obj, DesiredPhase::Running)
        )
    };
    let mut steps = Vec::new();
    let what = if moving {
        let running = view.container.as_ref().is_some_and(|c| c.running);
        steps = teardown(view, true);
        if running {
            // The stop comes alone: its session is recorded before the rest.
            steps.truncate(1);
        }
        // Nothing goes from the engine the session leaves before the one
        // it moves to is known to see the unit.
        let check = Step::CheckMoveTarget {
            requested: requested.to_owned(),
        };
        steps.insert(0, check);
        if running {
            "the session stops on the engine it leaves"
        } else {
            steps.extend(view.volumes.iter().cloned().map(Step::RemoveVolume));
            steps.push(pin);
            "its objects go from the engine it leaves, and the recipe is pinned for the new one"
        }
    } else {
        steps.push(pin);
        "the recipe is pinned again from the current spec, then the container is replaced"
    };
    Plan {
        steps,
        tier: None,
        target: InstancePhase::Running,
        blocked: None,
        cause: cause(what),
    }
}

/// Whether the unit holds a worktree checkout, whose branch is published.
fn has_worktrees(view: &InstanceView) -> bool {
    view.mounts
        .iter()
        .any(|m| m.isolation == Isolation::Worktree)
}

/// Whether the container binds an isolated checkout. Before pinning the
/// answer is not known here (the workspace's mounts join the recipe when it
/// is pinned), so a launch always prepares: with nothing isolated that step
/// does nothing.
fn has_isolated_mounts(recipe: Option<&Recipe>) -> bool {
    recipe.is_none_or(|recipe| {
        recipe
            .mounts
            .iter()
            .any(|m| m.isolation != Isolation::Shared)
    })
}

/// What writes the agent's files in the unit's home before a start, in
/// the one writing order (docs/ARCHITECTURE.md), each writer changing only
/// its own keys in what the one before left:
///
/// 1. the agent's own file, as the agent last wrote it: the base, which
///    nothing here writes;
/// 2. the operator's config (`CopyOperatorConfig`, under `operatorConfig:
///    sync`);
/// 3. the credential keys (`ForwardCredentials`);
/// 4. jackin's settings, by the start itself (`StartContainer`), last.
///
/// Both run before every start: the host's setup may have changed, its
/// logins been renewed.
fn home_writers(recipe: Option<&Recipe>) -> Vec<Step> {
    let operator_config = copies_operator_config(recipe).then_some(Step::CopyOperatorConfig);
    let credentials = forwards_credentials(recipe).then_some(Step::ForwardCredentials);
    operator_config.into_iter().chain(credentials).collect()
}

/// Whether the recipe copies the operator's setup: `sync`, and an agent
/// entry that lists some. Before a first pin, the step is planned and
/// looks at the recipe the pin made (as the credentials' is).
fn copies_operator_config(recipe: Option<&Recipe>) -> bool {
    recipe.is_none_or(|recipe| {
        recipe.operator_config == Some(jackin_api::operator_config::OperatorConfigMode::Sync)
            && recipe
                .agent
                .as_ref()
                .is_some_and(|a| !a.spec.operator_config.is_empty())
    })
}

/// Whether a start hands logins over. Before pinning the answer is not
/// known here (the agent's entry and the workspace join the recipe when it
/// is pinned), so a launch always does: with nothing to forward that step
/// does nothing. A recipe pinned before the hand-off existed forwards
/// nothing.
fn forwards_credentials(recipe: Option<&Recipe>) -> bool {
    recipe.is_none_or(|recipe| {
        recipe
            .credentials
            .as_ref()
            .is_some_and(jackin_api::credentials::PinnedCredentials::forwards_anything)
    })
}

/// The network and sidecars the container needs, created or started as
/// needed; sidecars the recipe no longer names are removed.
fn support(obj: &Instance, recipe: Option<&Recipe>, view: &InstanceView) -> Vec<Step> {
    let mut steps = extra_networks(view);
    if view.network.is_none() {
        steps.push(Step::CreateNetwork);
    }
    if let Some(dind) = recipe.and_then(|r| r.dind.as_ref())
        && !view.volumes.contains(&dind.certs_volume)
    {
        steps.push(Step::CreateVolume(dind.certs_volume.clone()));
    }
    let wanted: Vec<String> = match recipe {
        Some(recipe) => recipe.sidecars.iter().map(|s| s.name.clone()).collect(),
        // Not pinned yet: the recipe will carry the spec's sidecars.
        None => obj.spec.sidecars.iter().map(|s| s.name.clone()).collect(),
    };
    for name in &wanted {
        match view.sidecars.get(name) {
            Some(c) if c.running => {}
            Some(c) => steps.push(Step::StartSidecar {
                name: name.clone(),
                id: Some(c.id.clone()),
            }),
            None => steps.extend([
                Step::CreateSidecar(name.clone()),
                Step::StartSidecar {
                    name: name.clone(),
                    id: None,
                },
            ]),
        }
    }
    for (name, c) in &view.sidecars {
        if !wanted.contains(name) {
            steps.push(Step::RemoveSidecar {
                name: name.clone(),
                id: c.id.clone(),
            });
        }
    }
    steps
}

/// Everything the engine holds of the instance, removed; the unit stays.
/// A graceful stop first gives the agent time to write its state.
fn teardown(view: &InstanceView, graceful: bool) -> Vec<Step> {
    let mut steps = Vec::new();
    if let Some(c) = &view.container {
        if c.running && graceful {
            steps.push(Step::StopContainer { id: c.id.clone() });
        }
        steps.push(Step::RemoveContainer { id: c.id.clone() });
    }
    steps.extend(view.sidecars.iter().map(|(name, c)| Step::RemoveSidecar {
        name: name.clone(),
        id: c.id.clone(),
    }));
    steps.extend(extra_networks(view));
    if let Some(id) = &view.network {
        steps.push(Step::RemoveNetwork { id: id.clone() });
    }
    steps
}

/// What a keep takes from the engine: the session's objects, and the
/// Docker daemon's certificates volume, which holds nothing of the session
/// (the daemon makes its certificates anew when it starts, and a resume
/// makes the volume again); the instance's other volumes stay.
fn kept_teardown(obj: &Instance, view: &InstanceView) -> Vec<Step> {
    let mut steps = teardown(view, true);
    let certs = obj
        .recipe()
        .and_then(|r| r.dind.as_ref())
        .map(|d| &d.certs_volume);
    steps.extend(
        view.volumes
            .iter()
            .filter(|v| Some(*v) == certs)
            .cloned()
            .map(Step::RemoveVolume),
    );
    steps
}

/// The removal of every network of the instance but its own.
fn extra_networks(view: &InstanceView) -> Vec<Step> {
    view.extra_networks
        .iter()
        .cloned()
        .map(Step::RemoveExtraNetwork)
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::view::ContainerView;
    use Step::*;
    use jackin_api::instance::{InstanceStatus, OutcomeSource, Recipe, SessionOutcome, Sidecar};
    use jackin_api::workspace::ExitPolicy;
    use jackin_api::{API_VERSION, ObjectMeta};

    fn instance(phase: DesiredPhase, pinned: bool, status_phase: InstancePhase) -> Instance {
        let mut obj = Instance {
            api_version: API_VERSION.into(),
            kind: "Instance".into(),
            metadata: ObjectMeta {
                name: "a".into(),
                ..Default::default()
            },
            spec: Default::default(),
            status: Some(InstanceStatus {
                phase: Some(status_phase),
                ..Default::default()
            }),
        };
        obj.spec.phase = phase;
        if pinned {
            obj.status.as_mut().unwrap().recipe = Some(Recipe {
                image: "img".into(),
                image_id: "sha256:1".into(),
                network: "jk-1-a".into(),
                storage: Some(proven()),
                ..Default::default()
            });
        }
        obj
    }

    /// A unit proven to be seen by the engine (most tests' recipe).
    fn proven() -> jackin_api::storage::PinnedStorage {
        jackin_api::storage::PinnedStorage {
            kind: jackin_api::storage::UnitStorage::HostPaths,
            engine: "unix:///var/run/docker.sock".into(),
            proven_at: "2026-11-26T00:00:00Z".parse().unwrap(),
        }
    }

    /// Where the unit lives is proven before the first container of a
    /// recipe is made (a launch, and a restore of a recipe pinned before
    /// the proof existed), and only then: a restore of a proven recipe
    /// (tier 2, tier 3) and a start of a container (tier 1) make none.
    #[test]
    fn the_unit_is_proven_once_before_a_recipes_first_container() {
        let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Pending);
        obj.status
            .as_mut()
            .unwrap()
            .recipe
            .as_mut()
            .unwrap()
            .storage = None;
        let plan = ladder(&obj, &view(None, true, true));
        assert_eq!(
            plan.steps,
            vec![ProveUnitStorage, CreateContainer, start_new()]
        );
        let unpinned = instance(DesiredPhase::Running, false, InstancePhase::Pending);
        let plan = ladder(&unpinned, &view(None, false, false));
        let prove = plan.steps.iter().position(|s| *s == ProveUnitStorage);
        let create = plan.steps.iter().position(|s| *s == CreateContainer);
        assert!(prove.is_some() && prove < create, "{:?}", plan.steps);
        assert_eq!(plan.steps[0], PinRecipe, "{:?}", plan.steps);
        // A container of the unit is there: it was made after a proof (or
        // before the proof existed, when it ran); its start checks the
        // identity anyway.
        let plan = ladder(&obj, &view(Some(false), true, true));
        assert_eq!(plan.steps, vec![start_observed()]);
        let proven = instance(DesiredPhase::Running, true, InstancePhase::Running);
        for observed in [view(None, true, true), view(None, true, false)] {
            let plan = ladder(&proven, &observed);
            assert!(!plan.steps.contains(&ProveUnitStorage), "{:?}", plan.steps);
        }
    }

    const ID: &str = "c0ffee";

    /// The plan without its bookkeeping (phase writes, looks again: see
    /// [`bookkept`], tested on its own), as most tests read it.
    fn decided(obj: &Instance, observed: &InstanceView, now: Timestamp) -> Plan {
        let plan = decide(obj, observed, now);
        let steps = plan.steps.into_iter().filter(Step::announced).collect();
        Plan { steps, ..plan }
    }

    /// The clock as the tests' plans read it.
    const NOW: Timestamp = Timestamp::UNIX_EPOCH;

    /// The plan past the session edge: the ladder and the teardowns as the
    /// status stands (the edge's own steps are tested apart).
    fn ladder(obj: &Instance, observed: &InstanceView) -> Plan {
        decide_phase(obj, observed, None)
    }

    fn start_new() -> Step {
        StartContainer { id: None }
    }

    fn start_observed() -> Step {
        StartContainer {
            id: Some(ID.into()),
        }
    }

    fn stop() -> Step {
        StopContainer { id: ID.into() }
    }

    fn remove() -> Step {
        RemoveContainer { id: ID.into() }
    }

    fn remove_network() -> Step {
        RemoveNetwork {
            id: "jk-1-a".into(),
        }
    }

    fn container(running: bool) -> Option<ContainerView> {
        Some(ContainerView {
            id: ID.into(),
            name: "jk-1-a".into(),
            running,
        })
    }

    /// The observed states of the main container and its support.
    fn view(container_state: Option<bool>, network: bool, image: bool) -> InstanceView {
        InstanceView {
            container: container_state.and_then(container),
            sidecars: Default::default(),
            network: network.then(|| "jk-1-a".into()),
            image_present: image,
            ..Default::default()
        }
    }

    #[test]
    fn running_is_the_restore_ladder() {
        let obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let cases: Vec<(InstanceView, Vec<Step>, Option<Tier>)> = vec![
            // Tier 0: running, nothing to do.
            (view(Some(true), true, true), vec![], None),
            // Tier 1: stopped, start it.
            (
                view(Some(false), true, true),
                vec![start_observed()],
                Some(Tier::Started),
            ),
            // Tier 2: gone, image present.
            (
                view(None, true, true),
                vec![CreateContainer, start_new()],
                Some(Tier::Recreated),
            ),
            // Tier 3: gone with its image.
            (
                view(None, true, false),
                vec![RebuildImage, CreateContainer, start_new()],
                Some(Tier::Rebuilt),
            ),
            // Tier 2 with the network gone too.
            (
                view(None, false, true),
                vec![CreateNetwork, CreateContainer, start_new()],
                Some(Tier::Recreated),
            ),
        ];
        for (observed, steps, tier) in cases {
            let plan = ladder(&obj, &observed);
            assert_eq!(plan.steps, steps, "{observed:?}");
            assert_eq!(plan.tier, tier, "{observed:?}");
            assert_eq!(plan.target, InstancePhase::Running);
        }
    }

    /// The agent ended its session with `code`, and that ending is
    /// recorded: its marker and the status agree.
    fn recorded_ending(obj: &mut Instance, observed: &mut InstanceView, code: i64) {
        let at = "2026-11-26T00:01:00Z";
        observed.session.marker = crate::marker::MarkerState::Present(crate::marker::Marker {
            exit_code: code,
            started_at: String::new(),
            finished_at: at.into(),
            reason: "exited".into(),
            written: None,
        });
        obj.status.as_mut().unwrap().session = Some(SessionOutcome {
            exit_code: Some(code),
            finished_at: Some(at.parse().unwrap()),
            source: OutcomeSource::Marker,
            reason: Some("exited".into()),
            stopped_by_jackin: false,
        });
    }

    #[test]
    fn a_session_that_ended_by_itself_is_not_restarted() {
        for (code, phase) in [(0, InstancePhase::Exited), (3, InstancePhase::Crashed)] {
            for state in [None, Some(false)] {
                let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
                let mut observed = view(state, true, true);
                recorded_ending(&mut obj, &mut observed, code);
                let plan = decided(&obj, &observed, NOW);
                assert_eq!(plan.steps, [], "{state:?}");
                assert_eq!(plan.target, phase);
            }
        }
        // Still running (a resumed session): nothing ended.
        let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let mut observed = view(Some(true), true, true);
        recorded_ending(&mut obj, &mut observed, 0);
        assert_eq!(decided(&obj, &observed, NOW).target, InstancePhase::Running);
    }

    /// The session edge comes first in the plan, and the rest is decided
    /// from the status it leaves: a new ending the policy keeps is
    /// recorded, settled, its marker set aside, then the container goes.
    #[test]
    fn a_new_ending_is_recorded_and_settled_before_the_rest() {
        let obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let mut observed = view(Some(false), true, true);
        let mut scratch = obj.clone();
        recorded_ending(&mut scratch, &mut observed, 0);
        observed.exit_policy = ExitPolicy::Keep;
        let plan = decided(&obj, &observed, NOW);
        let kinds: Vec<&str> = plan.steps.iter().map(Step::kind).collect();
        assert_eq!(
            kinds,
            [
                "record-session",
                "settle",
                "retire-marker",
                "remove-container",
                "remove-network"
            ]
        );
        assert_eq!(plan.target, InstancePhase::Kept);
        // A container removed behind jackin's back, no marker: the session
        // is recorded as lost, and tier 2 brings it back.
        let lost = decided(&obj, &view(None, true, true), NOW);
        assert_eq!(lost.steps[0].kind(), "record-session");
        assert_eq!(lost.tier, Some(Tier::Recreated));
    }

    /// Issue 52: a session that ended (jackin's stop or its own end) has
    /// its worktrees' branches published right after its end is recorded,
    /// as a step of its own; a unit without a worktree has none, and a
    /// session that runs publishes nothing.
    #[test]
    fn an_ended_sessions_worktrees_are_published_after_its_record() {
        let obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let mut observed = view(Some(false), true, true);
        recorded_ending(&mut obj.clone(), &mut observed, 0);
        observed.exit_policy = ExitPolicy::Keep;
        let mount = |isolation| jackin_api::instance::MountStatus {
            dst: "/w".into(),
            isolation,
            ..Default::default()
        };
        let kinds = |observed: &InstanceView| -> Vec<&'static str> {
            let plan = decided(&obj, observed, NOW);
            plan.steps.iter().map(Step::kind).take(2).collect()
        };
        observed.mounts = vec![mount(Isolation::Clone)];
        assert_eq!(kinds(&observed), ["record-session", "settle"]);
        observed.mounts.push(mount(Isolation::Worktree));
        assert_eq!(kinds(&observed), ["record-session", "publish-checkouts"]);
        let running = InstanceView {
            container: container(true),
            ..observed.clone()
        };
        assert!(
            !decided(&obj, &running, NOW)
                .steps
                .contains(&PublishCheckouts)
        );
    }

    /// A worktree's branch is published by a step of its own before a
    /// start (before its checkout is checked) and before the checkouts go,
    /// as at a session's end; a plan that holds several of these points
    /// publishes once, at the first.
    #[test]
    fn worktrees_are_published_before_a_start_and_before_they_go_once_a_plan() {
        let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Kept);
        obj.status.as_mut().unwrap().recipe.as_mut().unwrap().mounts =
            vec![jackin_api::instance::MountSpec {
                src: "/src".into(),
                dst: "/w".into(),
                isolation: Isolation::Worktree,
                ..Default::default()
            }];
        let mut observed = view(None, true, true);
        observed.mounts = vec![jackin_api::instance::MountStatus {
            dst: "/w".into(),
            isolation: Isolation::Worktree,
            ..Default::default()
        }];
        let kinds = |obj: &Instance, observed: &InstanceView| -> Vec<&'static str> {
            let plan = decided(obj, observed, NOW);
            plan.steps.iter().map(Step::kind).collect()
        };
        let start = kinds(&obj, &observed);
        assert_eq!(
            start[..2],
            ["publish-checkouts", "prepare-mounts"],
            "{start:?}"
        );
        obj.spec.phase = DesiredPhase::Purged;
        let purge = kinds(&obj, &observed);
        let at = purge.iter().position(|k| *k == "remove-checkouts");
        assert_eq!(
            at.map(|at| purge[at - 1]),
            Some("publish-checkouts"),
            "{purge:?}"
        );
        // The session ended and is recorded, then the unit starts again:
        // the end's publication serves the start.
        obj.spec.phase = DesiredPhase::Running;
        obj.status.as_mut().unwrap().phase = Some(InstancePhase::Running);
        let restart = kinds(&obj, &observed);
        let publications = restart.iter().filter(|k| **k == "publish-checkouts");
        assert_eq!(publications.count(), 1, "{restart:?}");
        let first = restart.iter().position(|k| *k == "publish-checkouts");
        let record = restart.iter().position(|k| *k == "record-session");
        assert!(record.is_some() && first > record, "{restart:?}");
        // Without a worktree, nothing is published.
        observed.mounts[0].isolation = Isolation::Clone;
        assert!(!kinds(&obj, &observed).contains(&"publish-checkouts"));
    }

    /// A rollout pins first (the running session untouched, so that a
    /// build that fails leaves it as it was), then stops the container it
    /// replaces gracefully, then replaces it and its sidecars: tier 3 for a
    /// new image, tier 2 for the same.
    #[test]
    fn a_rollout_pins_then_stops_then_replaces() {
        let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let go = Rollout::Go {
            requested: "t1".into(),
            moving: false,
            new_conversation: false,
        };
        let mut observed = view(Some(true), true, true);
        observed.rollout = Some(go);
        assert_eq!(
            decided(&obj, &observed, NOW).steps,
            [RolloutRecipe {
                requested: "t1".into(),
                moving: false,
                new_conversation: false
            }]
        );
        // Pinned by the rollout: the running container is the old one.
        let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
        recipe.replaces = Some("sha256:0".into());
        let mut running = view(Some(true), true, true);
        running
            .sidecars
            .insert("cache".into(), container(true).unwrap());
        assert_eq!(decided(&obj, &running, NOW).steps, [stop()]);
        let mut stopped = running.clone();
        stopped.container = container(false);
        let plan = decided(&obj, &stopped, NOW);
        assert_eq!(
            plan.steps,
            [
                remove(),
                RemoveSidecar {
                    name: "cache".into(),
                    id: ID.into()
                },
                CreateContainer,
                start_new()
            ]
        );
        assert_eq!(plan.tier, Some(Tier::Rebuilt));
        // The start that replaces it is recorded as the rollout's.
        let mut rolled = obj.clone();
        let record = jackin_api::instance::RolloutRecord::handled(&rolled, "t1", NOW, None);
        rolled.status.as_mut().unwrap().rollout = Some(record);
        let steps = decide(&rolled, &stopped, NOW).steps;
        let restored = RecordRestore {
            tier: Tier::Rebuilt,
            rollout: Some("t1".into()),
        };
        assert!(steps.contains(&restored), "{steps:?}");
        // The same image: tier 2. Once a container ran from it, the
        // recipe is the session's like any other.
        let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
        recipe.replaces = Some(recipe.image_id.clone());
        assert_eq!(decided(&obj, &stopped, NOW).tier, Some(Tier::Recreated));
        let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
        recipe.first_run_at = Some(Timestamp::UNIX_EPOCH);
        assert_eq!(decided(&obj, &view(Some(true), true, true), NOW).steps, []);
    }

    #[test]
    fn a_refused_rollout_is_recorded_and_the_session_left_as_it_is() {
        let obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let mut observed = view(Some(true), true, true);
        observed.rollout = Some(Rollout::Refuse {
            requested: "t1".into(),
            why: "no".into(),
        });
        assert_eq!(
            decided(&obj, &observed, NOW).steps,
            [RefuseRollout {
                requested: "t1".into(),
                why: "no".into()
            }]
        );
        observed.rollout = Some(Rollout::Wait);
        assert_eq!(decided(&obj, &observed, NOW).steps, []);
    }

    /// A move takes the session's objects off the engine it leaves before
    /// the recipe is pinned for the other: the stop alone first. Each plan
    /// of it checks first that the engine it goes to sees the unit.
    #[test]
    fn a_move_clears_the_engine_it_leaves_first() {
        let obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let go = Some(Rollout::Go {
            requested: "t1".into(),
            moving: true,
            new_conversation: false,
        });
        let mut running = view(Some(true), true, true);
        running.rollout = go.clone();
        running.volumes = vec!["jk-1-a-dind-certs".into()];
        let check = CheckMoveTarget {
            requested: "t1".into(),
        };
        assert_eq!(decided(&obj, &running, NOW).steps, [check.clone(), stop()]);
        // The session is launching elsewhere only once the check holds.
        assert_eq!(
            decide(&obj, &running, NOW).steps[..2],
            [check.clone(), SetPhase(InstancePhase::Launching)]
        );
        let mut stopped = running.clone();
        stopped.container = container(false);
        assert_eq!(
            decided(&obj, &stopped, NOW).steps,
            [
                check,
                remove(),
                remove_network(),
                RemoveVolume("jk-1-a-dind-certs".into()),
                RolloutRecipe {
                    requested: "t1".into(),
                    moving: true,
                    new_conversation: false
                }
            ]
        );
    }

    #[test]
    fn a_first_launch_pins_then_creates() {
        let obj = instance(DesiredPhase::Running, false, InstancePhase::Pending);
        let plan = decided(&obj, &view(None, false, false), NOW);
        assert_eq!(
            plan.steps,
            [
                PinRecipe,
                PrepareMounts,
                CreateNetwork,
                ProveUnitStorage,
                CreateContainer,
                CopyOperatorConfig,
                ForwardCredentials,
                start_new()
            ]
        );
        assert_eq!(plan.tier, None);
    }

    /// Every start of a session whose recipe forwards logins hands them
    /// over first, after its container is made; none of `none`, or of a
    /// recipe with no credential set.
    #[test]
    fn logins_are_handed_over_before_every_start() {
        use jackin_api::credentials::{AuthForward, PinnedCredentials, builtin_sets};
        let with = |mode: AuthForward, sets| {
            let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
            let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
            recipe.credentials = Some(PinnedCredentials { mode, sets });
            obj
        };
        for mode in [AuthForward::Sync, AuthForward::Token] {
            let obj = with(mode, builtin_sets());
            assert_eq!(
                ladder(&obj, &view(Some(false), true, true)).steps,
                [ForwardCredentials, start_observed()],
                "{mode}"
            );
            assert_eq!(
                ladder(&obj, &view(None, true, true)).steps,
                [CreateContainer, ForwardCredentials, start_new()],
                "{mode}"
            );
            assert_eq!(
                ladder(&obj, &view(None, true, false)).steps,
                [
                    RebuildImage,
                    CreateContainer,
                    ForwardCredentials,
                    start_new()
                ],
                "{mode}"
            );
            assert_eq!(ladder(&obj, &view(Some(true), true, true)).steps, []);
        }
        for obj in [
            with(AuthForward::None, builtin_sets()),
            with(AuthForward::Sync, Vec::new()),
        ] {
            assert_eq!(
                ladder(&obj, &view(Some(false), true, true)).steps,
                [start_observed()]
            );
        }
    }

    /// Under `operatorConfig: sync`, the operator's setup goes in before
    /// the logins and the start, in the one writing order; under `none`, or
    /// for an agent that lists none, it is not planned.
    #[test]
    fn the_operators_setup_goes_in_before_the_logins_in_the_writing_order() {
        use jackin_api::credentials::{AuthForward, PinnedCredentials, builtin_sets};
        use jackin_api::operator_config::OperatorConfigMode;
        let with = |mode: Option<OperatorConfigMode>, agent: &str| {
            let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
            let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
            recipe.credentials = Some(PinnedCredentials {
                mode: AuthForward::Sync,
                sets: builtin_sets(),
            });
            recipe.operator_config = mode;
            recipe.agent = Some(jackin_api::instance::PinnedAgent {
                name: agent.into(),
                source: "builtin".into(),
                spec: jackin_api::agent::builtin()
                    .into_iter()
                    .find(|a| a.metadata.name == agent)
                    .unwrap()
                    .spec,
                strategy: jackin_api::agent::Strategy::None,
                version: None,
            });
            obj
        };
        let synced = with(Some(OperatorConfigMode::Sync), "claude");
        assert_eq!(
            ladder(&synced, &view(Some(false), true, true)).steps,
            [CopyOperatorConfig, ForwardCredentials, start_observed()]
        );
        assert_eq!(
            ladder(&synced, &view(None, true, true)).steps,
            [
                CreateContainer,
                CopyOperatorConfig,
                ForwardCredentials,
                start_new()
            ]
        );
        for obj in [
            with(None, "claude"),
            with(Some(OperatorConfigMode::Sync), "shell"),
        ] {
            assert_eq!(
                ladder(&obj, &view(Some(false), true, true)).steps,
                [ForwardCredentials, start_observed()]
            );
        }
    }

    #[test]
    fn sidecars_are_created_started_and_pruned() {
        let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
        recipe.sidecars = vec![
            Sidecar {
                name: "dind".into(),
                image: "x".into(),
                ..Default::default()
            },
            Sidecar {
                name: "cache".into(),
                image: "x".into(),
                ..Default::default()
            },
        ];
        let mut observed = view(Some(true), true, true);
        observed
            .sidecars
            .insert("cache".into(), container(false).unwrap());
        observed
            .sidecars
            .insert("stale".into(), container(true).unwrap());
        let plan = decided(&obj, &observed, NOW);
        assert_eq!(
            plan.steps,
            [
                CreateSidecar("dind".into()),
                StartSidecar {
                    name: "dind".into(),
                    id: None
                },
                StartSidecar {
                    name: "cache".into(),
                    id: Some(ID.into())
                },
                RemoveSidecar {
                    name: "stale".into(),
                    id: ID.into()
                },
            ]
        );
    }

    #[test]
    fn kept_tears_down_the_engine_objects_only() {
        let obj = instance(DesiredPhase::Kept, true, InstancePhase::Running);
        let cases = [
            (
                view(Some(true), true, true),
                vec![stop(), remove(), remove_network()],
            ),
            (
                view(Some(false), true, true),
                vec![remove(), remove_network()],
            ),
            (view(None, false, true), vec![]),
        ];
        for (observed, steps) in cases {
            let plan = ladder(&obj, &observed);
            assert_eq!(plan.steps, steps, "{observed:?}");
            assert_eq!(plan.target, InstancePhase::Kept);
        }
    }

    /// A keep frees the Docker daemon's certificates volume (a resume makes
    /// it again), and only that of the instance's volumes.
    #[test]
    fn kept_frees_the_dind_certificates_volume_only() {
        let mut obj = instance(DesiredPhase::Kept, true, InstancePhase::Running);
        let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
        recipe.dind = Some(jackin_api::instance::PinnedDind {
            certs_volume: "jk-1-a-dind-certs".into(),
        });
        let mut observed = view(Some(false), true, true);
        observed.volumes = vec!["jk-1-a-dind-certs".into(), "jk-1-a-cache".into()];
        assert_eq!(
            ladder(&obj, &observed).steps,
            [
                remove(),
                remove_network(),
                RemoveVolume("jk-1-a-dind-certs".into())
            ]
        );
        // Gone already: nothing more to do.
        observed.container = None;
        observed.network = None;
        observed.volumes.remove(0);
        assert_eq!(ladder(&obj, &observed).steps, []);
    }

    #[test]
    fn purged_stamps_first_and_drops_the_row_last() {
        let obj = instance(DesiredPhase::Purged, true, InstancePhase::Running);
        let plan = decided(&obj, &view(Some(true), true, true), NOW);
        assert_eq!(
            plan.steps,
            [
                StampPurging,
                remove(),
                remove_network(),
                SaveConversation,
                FinishPurge
            ]
        );
        // Interrupted after the stamp and the container: the rest remains;
        // the instance's volumes go too (a kept instance keeps them).
        let obj = instance(DesiredPhase::Purged, true, InstancePhase::Purging);
        let mut observed = view(None, true, true);
        observed.volumes = vec!["certs".into()];
        let plan = decided(&obj, &observed, NOW);
        assert_eq!(
            plan.steps,
            [
                remove_network(),
                RemoveVolume("certs".into()),
                SaveConversation,
                FinishPurge
            ]
        );
    }

    /// A first launch that failed pinned a recipe no container ran from:
    /// once the spec changes, it is pinned again (and a container created
    /// from it, never started, goes first). Once a container ran, never.
    #[test]
    fn a_recipe_no_container_ran_from_follows_the_spec() {
        let mut obj = instance(DesiredPhase::Running, true, InstancePhase::Failed);
        obj.metadata.generation = Some(2);
        let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
        recipe.generation = Some(1);
        let plan = decided(&obj, &view(None, true, true), NOW);
        assert_eq!(plan.steps[0], PinRecipe, "{:?}", plan.steps);
        let plan = decided(&obj, &view(Some(false), true, true), NOW);
        assert_eq!(plan.steps[..2], [remove(), PinRecipe]);

        let recipe = obj.status.as_mut().unwrap().recipe.as_mut().unwrap();
        recipe.first_run_at = Some(Timestamp::UNIX_EPOCH);
        let plan = decided(&obj, &view(Some(false), true, true), NOW);
        assert_eq!(plan.steps, [start_observed()], "a recipe that ran is kept");
    }

    /// Two networks of one instance (a create left in flight by a killed
    /// process landed after another's): the extra one goes, in every phase.
    #[test]
    fn duplicate_networks_are_removed() {
        for desired in DesiredPhase::ALL {
            let obj = instance(desired, true, InstancePhase::Running);
            let mut observed = view(Some(true), true, true);
            observed.extra_networks = vec!["n2".into()];
            let plan = decided(&obj, &observed, NOW);
            assert!(
                plan.steps.contains(&RemoveExtraNetwork("n2".into())),
                "{desired:?}: {:?}",
                plan.steps
            );
        }
    }

    /// The main situations a plan is decided in: a first launch, the
    /// ladder's rungs, an ended session, a keep a settlement asked for, a
    /// purge, and a purge of unfinished work.
    fn main_situations() -> Vec<(Instance, InstanceView)> {
        use jackin_api::instance::{SettledBy, Settlement};
        let running = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let mut kept_by_policy = running.clone();
        kept_by_policy.status.as_mut().unwrap().settled = Some(Settlement {
            phase: DesiredPhase::Kept,
            by: SettledBy::ExitPolicy,
            at: Timestamp::UNIX_EPOCH,
            generation: None,
            acknowledged: None,
        });
        let mut ended = view(Some(false), true, true);
        let mut ended_running = running.clone();
        recorded_ending(&mut ended_running, &mut ended, 3);
        let mut unfinished = view(Some(true), true, true);
        unfinished.mounts = vec![jackin_api::instance::MountStatus {
            dst: "/w".into(),
            src: "/src".into(),
            isolation: Isolation::Clone,
            path: "/x".into(),
            dirty_files: vec!["?? draft.md".into()],
            unpushed_branches: vec![],
            digest: "d1".into(),
            left_entry: None,
            included: Vec::new(),
            not_included: Vec::new(),
        }];
        vec![
            (
                instance(DesiredPhase::Running, false, InstancePhase::Pending),
                view(None, false, false),
            ),
            (running.clone(), view(Some(true), true, true)),
            (running.clone(), view(Some(false), true, true)),
            (running.clone(), view(None, true, true)),
            (running.clone(), view(None, true, false)),
            (ended_running, ended),
            (kept_by_policy, view(Some(true), true, true)),
            (
                instance(DesiredPhase::Purged, true, InstancePhase::Running),
                view(Some(true), true, true),
            ),
            (
                instance(DesiredPhase::Purged, true, InstancePhase::Running),
                unfinished,
            ),
        ]
    }

    /// The plans of the main situations, as text: a change in what is
    /// decided, or in how it reads, shows here as a diff.
    #[test]
    fn plans_read_as_expected() {
        let cases = main_situations();
        let rendered: String = cases
            .iter()
            .map(|(obj, observed)| decide(obj, observed, NOW).render())
            .collect();
        let expected = "\
to Running: Running as the spec asks; a first launch: the recipe is pinned
  - setting the phase to Launching
  - pinning the launch recipe
  - preparing the isolated checkouts
  - creating the network
  - proving that the engine sees the session's unit
  - creating the container
  - copying the operator's agent setup to the session
  - handing the operator's logins to the session
  - starting the container
to Running: Running as the spec asks; the container runs
  - nothing
to Running: Running as the spec asks; the container exists, stopped: tier 1 starts it, its writable layer intact
  - setting the phase to Launching
  - starting the container c0ffee
  - recording the restore (tier 1)
to Running: Running as the spec asks; no container, the pinned image is there: tier 2 creates it from the recipe
  - setting the phase to Launching
  - recording that the session ended, how not known (no marker)
  - creating the container
  - starting the container
  - recording the restore (tier 2)
to Running: Running as the spec asks; no container and no image: tier 3 rebuilds at the pinned commit, then creates it
  - setting the phase to Launching
  - recording that the session ended, how not known (no marker)
  - rebuilding the image at the pinned commit
  - creating the container
  - starting the container
  - recording the restore (tier 3)
to Crashed: the agent ended its session (exit 3): nothing restarts it until the operator resumes it
  - nothing
to Kept: Kept as settled by the exit policy: the engine's objects go, the unit stays
  - stopping the container c0ffee
  - recording how the session ended, from the stopped container
  - setting the phase to Kept
  - removing the container c0ffee
  - removing the network jk-1-a
to Purging: Purged as the spec asks: everything of the instance goes, its index row last
  - marking the instance Purging
  - removing the container c0ffee
  - removing the network jk-1-a
  - saving the agent's conversation
  - removing the unit directory, sockets and lock, then the index row
";
        let blocked = decide(&cases[8].0, &cases[8].1, NOW).render();
        assert_eq!(
            rendered.strip_suffix(&blocked).unwrap_or(&rendered),
            expected
        );
        assert!(
            blocked.starts_with(
                "to Running: Purged as the spec asks, but the isolated checkouts \
                 hold unfinished work (digest "
            ),
            "{blocked}"
        );
        assert!(
            blocked.ends_with("nobody acknowledged: nothing happens\n  - nothing\n"),
            "{blocked}"
        );
    }

    /// The bookkeeping a plan carries: `Launching` written before a plan
    /// that makes the session (not before one that only records a
    /// rollout's pin, nor when it already says so), a restore recorded
    /// after the start that performs it, the phase led to written before a
    /// removal toward it, and a look again after a stop and after a
    /// rollout's pin.
    #[test]
    fn plans_carry_their_phase_writes_and_looks_again() {
        let launching = instance(DesiredPhase::Running, true, InstancePhase::Launching);
        let restored = RecordRestore {
            tier: Tier::Started,
            rollout: None,
        };
        assert_eq!(
            decide(&launching, &view(Some(false), true, true), NOW).steps,
            [start_observed(), restored.clone()]
        );
        let running = instance(DesiredPhase::Running, true, InstancePhase::Running);
        assert_eq!(
            decide(&running, &view(Some(false), true, true), NOW).steps,
            [
                SetPhase(InstancePhase::Launching),
                start_observed(),
                restored
            ]
        );
        let mut pinning = view(Some(true), true, true);
        pinning.rollout = Some(Rollout::Go {
            requested: "t1".into(),
            moving: false,
            new_conversation: false,
        });
        assert_eq!(
            decide(&running, &pinning, NOW).steps,
            [
                RolloutRecipe {
                    requested: "t1".into(),
                    moving: false,
                    new_conversation: false
                },
                LookAgain(Again::RecipePinned)
            ]
        );
        let kept = instance(DesiredPhase::Kept, true, InstancePhase::Running);
        assert_eq!(
            decide(&kept, &view(Some(true), true, true), NOW).steps,
            [
                stop(),
                LookAgain(Again::SessionStopped),
                SetPhase(InstancePhase::Kept),
                remove(),
                remove_network()
            ]
        );
    }

    /// The idle hooks' restart: a graceful stop and a look again while the
    /// container runs; then the session edge and the removal, the phase
    /// saying `Launching` first; none when the agent ended it meanwhile.
    #[test]
    fn the_idle_restart_stops_then_records_then_removes() {
        let obj = instance(DesiredPhase::Running, true, InstancePhase::Running);
        let plan = recycle(&obj, &view(Some(true), true, true), ID, NOW);
        assert_eq!(
            plan.steps,
            [
                SetPhase(InstancePhase::Launching),
                stop(),
                LookAgain(Again::SessionStopped)
            ]
        );
        let mut launching = obj.clone();
        launching.status.as_mut().unwrap().phase = Some(InstancePhase::Launching);
        let plan = recycle(&launching, &view(Some(false), true, true), ID, NOW);
        assert_eq!(plan.steps.last(), Some(&remove()), "{:?}", plan.steps);
        assert_eq!(
            plan.steps[plan.steps.len() - 2],
            SetPhase(InstancePhase::Launching)
        );
        let mut stopped = view(Some(false), true, true);
        let mut ended = launching.clone();
        recorded_ending(&mut ended, &mut stopped, 0);
        let plan = recycle(&ended, &stopped, ID, NOW);
        assert!(!plan.steps.contains(&remove()), "{:?}", plan.steps);
    }

    /// Only a record that says `Running` of a container that does not run
    /// is corrected, to `Exited`.
    #[test]
    fn a_record_of_a_container_gone_is_corrected_to_exited() {
        use InstancePhase::*;
        assert_eq!(corrected_phase(Some(Running), false), Some(Exited));
        assert_eq!(corrected_phase(Some(Running), true), None);
        for recorded in [None, Some(Kept), Some(Launching), Some(Failed)] {
            assert_eq!(corrected_phase(recorded, false), None, "{recorded:?}");
        }
    }

    /// Every desired phase over every observed state yields a plan whose
    /// steps never both create and remove the same object.
    #[test]
    fn the_whole_table_is_consistent() {
        for desired in DesiredPhase::ALL {
            for pinned in [false, true] {
                for state in [None, Some(false), Some(true)] {
                    for network in [false, true] {
                        for image in [false, true] {
                            let obj = instance(desired, pinned, InstancePhase::Running);
                            let plan = decided(&obj, &view(state, network, image), NOW);
                            let creates = plan.steps.contains(&CreateContainer);
                            let removes = plan
                                .steps
                                .iter()
                                .any(|s| matches!(s, RemoveContainer { .. }));
                            assert!(!(creates && removes), "{desired:?} {state:?}");
                            if desired != DesiredPhase::Running {
                                assert!(!creates && !plan.steps.contains(&PinRecipe));
                            }
                            if desired == DesiredPhase::Running && state == Some(true) && pinned {
                                assert!(
                                    !plan
                                        .steps
                                        .iter()
                                        .any(|s| matches!(s, StartContainer { .. }))
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}
