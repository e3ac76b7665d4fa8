//! The idle watch: looks at the running agents of workspaces that opted in
//! to idle hooks, and runs the hooks when `jackin_plan::idle` says they are
//! due. Part of the continuous controller.
//!
//! Each opted-in agent is looked at on its own cadence ([`Timing::check_every`]):
//! whether a terminal is attached (the attached lock), whether it wrote
//! output since the last look (the engine's log stream), and its counters
//! ([`Sample`]: CPU time, block I/O and network bytes from one stats call,
//! and what the container's own processes wrote and used, from one run of
//! the probe in the container). The idle stretch's start and the runs are
//! written to `status.idle` only when they change; the previous sample is
//! the one thing kept in memory, and after a restart the first look only
//! takes one. The commands run with `docker exec`, under the idle-hook
//! runner that kills each at its timeout, without the unit lock (they may
//! take minutes); each one's exit code and last output line go to the
//! event log. A failed command is reported and changes nothing else.
//!
//! Before `then: restart` or `then: keep` acts, the agent is looked at
//! again over the hooks' run (output since they started, a terminal
//! attached now, its own processes' CPU and writes, network traffic): if
//! anything moved, the action is skipped and the timer starts again. Both
//! actions stop the agent gracefully, as a keep does, so its marker says
//! how the session ended. The watch sleeps until the next look is due, so
//! timers cost no busy polling.

use std::collections::HashMap;
use std::time::Duration;

use jackin_api::ConditionStatus;
use jackin_api::DesiredPhase;
use jackin_api::instance::{IdleStatus, Instance, InstancePhase, SettledBy};
use jackin_api::meta::{remove_condition, set_condition};
use jackin_api::names::{condition, label, reason};
use jackin_api::workspace::{IdlePolicy, IdleThen};
use jackin_engine::Engine;
use jackin_engine::EngineError;
use jackin_plan::idle::{self, Next, Sample, Seen, Timing, Window};
use jiff::Timestamp;
use tokio::time::Instant;

use crate::events;
use crate::failure::ReconcileError;
use crate::metrics::Metrics;
use crate::reconcile::{Outcome, Reconciler};
use crate::store::StoreError;

/// How often the instances are listed again, to find agents that opted in
/// (or stopped) since.
const RESCAN: Duration = Duration::from_secs(30);

/// What the watch remembers of one agent between looks.
struct Watched {
    next_look: Instant,
    /// The counters at the last look.
    last: Option<Sample>,
}

/// How long the probe may take before the look goes on without it.
const PROBE_TIMEOUT: Duration = Duration::from_secs(10);

/// Runs until the task is dropped. `changed` tells the loop an instance
/// needs a reconcile now (kept, or its container recycled).
pub async fn watch(
    reconciler: Reconciler,
    metrics: Metrics,
    changed: impl Fn(&str) + Send + Sync + 'static,
) {
    let mut watched: HashMap<String, Watched> = HashMap::new();
    let mut next_scan = Instant::now();
    loop {
        let now = Instant::now();
        if now >= next_scan {
            let candidates = opted_in(&reconciler).await;
            watched.retain(|name, _| candidates.contains_key(name));
            for name in candidates.keys() {
                watched.entry(name.clone()).or_insert(Watched {
                    next_look: now,
                    last: None,
                });
            }
            next_scan = now + RESCAN;
        }
        let due: Vec<String> = watched
            .iter()
            .filter(|(_, w)| w.next_look <= now)
            .map(|(name, _)| name.clone())
            .collect();
        for name in due {
            let last = watched.get(&name).and_then(|w| w.last);
            let (every, last) =
                match Box::pin(look(&reconciler, &metrics, &name, last, &changed)).await {
                    Ok(Some(found)) => found,
                    Ok(None) => {
                        watched.remove(&name);
                        continue;
                    }
                    Err(e) => {
                        tracing::warn!(instance = name, "idle watch: {e}");
                        (Duration::from_secs(30), None)
                    }
                };
            if let Some(w) = watched.get_mut(&name) {
                w.next_look = Instant::now() + every;
                w.last = last;
            }
        }
        let wake = watched
            .values()
            .map(|w| w.next_look)
            .chain([next_scan])
            .min()
            .unwrap_or(next_scan);
        tokio::time::sleep_until(wake).await;
    }
}

/// The running instances whose workspace opted in to idle hooks, with the
/// policy.
async fn opted_in(reconciler: &Reconciler) -> HashMap<String, IdlePolicy> {
    let store = reconciler.store.clone();
    jackin_files::offload::blocking(move || {
        let policies: HashMap<String, IdlePolicy> = store
            .list_workspaces()
            .unwrap_or_default()
            .into_iter()
            .filter_map(|ws| Some((ws.metadata.name, ws.spec.idle.filter(|i| i.enabled)?)))
            .collect();
        if policies.is_empty() {
            return HashMap::new();
        }
        // From the index: no object is opened to find them.
        store
            .rows()
            .unwrap_or_default()
            .into_iter()
            .filter(|row| {
                row.desired == DesiredPhase::Running && row.phase == Some(InstancePhase::Running)
            })
            .filter_map(|row| {
                let policy = policies.get(row.workspace.as_deref()?)?.clone();
                Some((row.name, policy))
            })
            .collect()
    })
    .await
}

fn running(obj: &Instance) -> bool {
    obj.desired_phase() == DesiredPhase::Running && obj.phase() == Some(InstancePhase::Running)
}

#[derive(Debug, thiserror::Error)]
enum LookError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Reconcile(#[from] ReconcileError),
    #[error("{0}")]
    Policy(String),
}

/// One running agent whose workspace's idle policy is on, as a look finds
/// it: what it needs to sample the container and run the hooks.
struct Looked {
    policy: IdlePolicy,
    timing: Timing,
    engine: Engine,
    status: jackin_api::InstanceStatus,
    /// The unit's container name, and the container's id.
    unit: String,
    id: String,
}

/// The agent `name`, when it is one to watch: its workspace's idle policy
/// is on, and its container (this instance's, by its uid) is running.
async fn looked_at(reconciler: &Reconciler, name: &str) -> Result<Option<Looked>, LookError> {
    let store = &reconciler.store;
    let obj = match store.get_instance(name) {
        Ok(obj) => obj,
        Err(StoreError::InstanceNotFound(_)) => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    let policy = match obj.spec.workspace.as_deref() {
        Some(ws) => store.get_workspace(ws)?.and_then(|w| w.spec.idle),
        None => None,
    };
    let (Some(policy), true) = (policy.filter(|p| p.enabled), running(&obj)) else {
        return Ok(None);
    };
    let timing = Timing::of(&policy).map_err(LookError::Policy)?;
    let engine = reconciler.engine_of(&obj).await?.engine;
    let status = obj.status.clone().unwrap_or_default();
    let (Some(unit), Some(uid)) = (status.container_name.clone(), obj.metadata.uid.clone()) else {
        return Ok(None);
    };
    // The container by its name, but only if it is this instance's.
    let container = engine.inspect_container(&unit).await?.filter(|c| {
        let labels = c.config.as_ref().and_then(|c| c.labels.as_ref());
        labels.and_then(|l| l.get(label::UID)) == Some(&uid)
            && c.state.as_ref().and_then(|s| s.running) == Some(true)
    });
    let Some(id) = container.and_then(|c| c.id) else {
        return Ok(None);
    };
    Ok(Some(Looked {
        policy,
        timing,
        engine,
        status,
        unit,
        id,
    }))
}

/// Looks at one agent, and runs its hooks when they are due. Returns when
/// to look again and the sample to compare the next look with; `None`
/// when the agent is no longer one to watch.
async fn look(
    reconciler: &Reconciler,
    metrics: &Metrics,
    name: &str,
    last: Option<Sample>,
    changed: &(impl Fn(&str) + Send + Sync),
) -> Result<Option<(Duration, Option<Sample>)>, LookError> {
    let Some(looked) = looked_at(reconciler, name).await? else {
        return Ok(None);
    };
    let (timing, engine, id) = (looked.timing, &looked.engine, looked.id.as_str());
    let now = Timestamp::now();
    let since_look = last.map_or_else(
        || now.as_second() - timing.check_every().as_secs() as i64,
        |before| before.at.as_second(),
    );
    let sample = take_sample(engine, id).await?;
    let moved = last.map(|before| idle::moved(&before, &sample, Window::Looks));
    let seen = Seen {
        attached: jackin_act::session::attached(reconciler.store.layout(), &looked.unit),
        output: engine.output_since(id, since_look).await?,
        ..moved.unwrap_or_default()
    };
    let next = idle::next(timing, looked.status.idle.as_ref(), seen, now);
    blocking(reconciler, name, move |store, name| {
        record_stretch(store, name, next)
    })
    .await?;
    let (since, due) = match next {
        Next::Active => return Ok(Some((timing.check_every(), Some(sample)))),
        Next::Waiting { since, due } => (since, due),
        Next::Due { since } => (since, now),
    };
    if due > now {
        // Look at it again by the time it is due.
        let until_due = Duration::try_from(due.duration_since(now)).unwrap_or_default();
        return Ok(Some((
            timing
                .check_every()
                .min(until_due.max(Duration::from_millis(200))),
            Some(sample),
        )));
    }
    hooks_due(reconciler, metrics, name, &looked, since, sample, changed).await
}

/// Runs the hooks that are due (idle since `since`), then the policy's
/// action, unless the agent moved while they ran (`sample` is the look's);
/// returns what [`look`] does.
async fn hooks_due(
    reconciler: &Reconciler,
    metrics: &Metrics,
    name: &str,
    looked: &Looked,
    since: Timestamp,
    sample: Sample,
    changed: &(impl Fn(&str) + Send + Sync),
) -> Result<Option<(Duration, Option<Sample>)>, LookError> {
    let store = &reconciler.store;
    let Looked {
        policy,
        timing,
        engine,
        status,
        unit,
        id,
    } = looked;
    let started = Timestamp::now();
    let (ok, result) = run_hooks(reconciler, engine, unit, id, policy, status, *timing).await;
    metrics.idle_hooks_ran(ok);
    let finished = Timestamp::now();
    // The hooks' own work is not the agent's: the next look compares with
    // a sample taken after them.
    let after = take_sample(engine, id).await?;
    // Right before the action: did the agent move while the hooks ran?
    let during = match policy.then {
        IdleThen::None => Seen::default(),
        IdleThen::Keep | IdleThen::Restart => Seen {
            attached: jackin_act::session::attached(store.layout(), unit),
            output: engine.output_since(id, started.as_second()).await?,
            ..idle::moved(&sample, &after, Window::Hooks)
        },
    };
    let ran = result.clone();
    let rearm = during.active();
    blocking(reconciler, name, move |store, name| {
        record_run(store, name, since, finished, &ran, rearm)
    })
    .await?;
    if rearm {
        let action = match policy.then {
            IdleThen::Keep => "keep",
            _ => "restart",
        };
        events::record(
            store.layout(),
            unit,
            reason::IDLE_HOOKS,
            &format!(
                "the agent was active while the idle hooks ran ({}): the {action} was skipped, \
                 and the idle timer starts again",
                during.what()
            ),
        );
        return Ok(Some((timing.check_every(), Some(after))));
    }
    match policy.then {
        IdleThen::None => {}
        IdleThen::Keep => {
            // The loop's keep stops the agent gracefully.
            blocking(reconciler, name, |store, name| {
                store.settle(name, DesiredPhase::Kept, SettledBy::IdleHooks, None)
            })
            .await?;
            events::record(
                store.layout(),
                unit,
                reason::IDLE_HOOKS,
                "the idle hooks ran; the instance is kept (`jackin set-phase NAME running` resumes it)",
            );
            changed(name);
            return Ok(None);
        }
        IdleThen::Restart => {
            restart(reconciler, name, unit, id).await?;
            return Ok(Some((timing.check_every(), None)));
        }
    }
    Ok(Some((timing.check_every(), Some(after))))
}

/// The container's counters now: the engine's (one stats call) and its
/// own processes' (one run of the probe). A probe that fails or hangs (an
/// image whose `/bin/sh` cannot run it) leaves the latter out, not the look.
async fn take_sample(engine: &Engine, id: &str) -> Result<Sample, EngineError> {
    let usage = engine.usage(id).await?;
    let agent = match tokio::time::timeout(PROBE_TIMEOUT, engine.exec(id, idle::probe_argv())).await
    {
        Ok(Ok(done)) => idle::parse_probe(&done.output),
        Ok(Err(e)) => {
            tracing::debug!(container = id, "idle watch: the probe could not run: {e}");
            None
        }
        Err(_) => None,
    };
    Ok(Sample {
        at: Timestamp::now(),
        usage,
        agent,
    })
}

/// Writes the start or end of an idle stretch, when it changed.
/// Runs store work that may wait for a unit lock off the async runtime, so
/// that the watch never stalls the reconciles beside it.
async fn blocking<T: Send + 'static>(
    reconciler: &Reconciler,
    name: &str,
    work: impl FnOnce(&crate::Store, &str) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let name = name.to_owned();
    reconciler
        .store
        .blocking(move |store| work(store, &name))
        .await
}

fn record_stretch(store: &crate::Store, name: &str, next: Next) -> Result<(), StoreError> {
    let since = match next {
        Next::Active => None,
        Next::Waiting { since, .. } | Next::Due { since } => Some(since),
    };
    let Some(mut guard) = store.try_lock_instance(name)? else {
        // Being reconciled: the next look records it.
        return Ok(());
    };
    let status = guard.obj.status.get_or_insert_default();
    let idle = status.idle.get_or_insert_default();
    if idle.since != since {
        idle.since = since;
        guard.save()?;
    }
    Ok(())
}

/// Records a run's end in `status.idle`; `rearm` ends the idle stretch
/// (the agent moved while the hooks ran), so the next one starts anew.
fn record_run(
    store: &crate::Store,
    name: &str,
    since: Timestamp,
    at: Timestamp,
    result: &str,
    rearm: bool,
) -> Result<(), StoreError> {
    // A reconcile may hold the lock for a while (a build): wait for it.
    let Some(mut guard) = store.lock_instance(name)? else {
        return Ok(());
    };
    let idle = guard
        .obj
        .status
        .get_or_insert_default()
        .idle
        .get_or_insert_with(IdleStatus::default);
    idle.since = match rearm {
        true => None,
        false => Some(idle.since.unwrap_or(since)),
    };
    idle.last_run = Some(at);
    idle.runs += 1;
    idle.last_result = Some(result.to_owned());
    guard.save()
}

/// Runs the commands in sequence; returns whether every one succeeded, and
/// how it went, in a line: `ok`, or the failures.
async fn run_hooks(
    reconciler: &Reconciler,
    engine: &Engine,
    unit: &str,
    id: &str,
    policy: &IdlePolicy,
    status: &jackin_api::InstanceStatus,
    timing: Timing,
) -> (bool, String) {
    let layout = reconciler.store.layout();
    let recipe = status.recipe.clone().unwrap_or_default();
    let commands = idle::commands(policy, &recipe);
    // The commands' output is kept (events, status): the values the
    // container was handed are scrubbed from it, and when they cannot be
    // read back no output is kept at all.
    let names = jackin_plan::redact::secret_names(&recipe);
    let secrets = jackin_act::secrets::handed_over(engine, id, &names)
        .await
        .ok();
    let mut failures = Vec::new();
    for (i, command) in commands.iter().enumerate() {
        let shown = command.join(" ");
        let argv = idle::hook_argv(timing.timeout, command);
        // The runner kills the command at its timeout; this is the
        // backstop should the engine not answer.
        let backstop = timing.timeout + Duration::from_secs(30);
        let outcome = tokio::time::timeout(backstop, engine.exec(id, argv)).await;
        let (ok, message) = match outcome {
            Ok(Ok(done)) => {
                let last_line = done
                    .output
                    .lines()
                    .map(str::trim)
                    .rfind(|l| !l.is_empty())
                    .unwrap_or_default()
                    .chars()
                    .filter(|c| !c.is_control())
                    .take(200)
                    .collect::<String>();
                let code = done.exit_code.unwrap_or(-1);
                let said = match (last_line.as_str(), &secrets) {
                    ("", _) | (_, None) => String::new(),
                    (line, Some(secrets)) => format!(": {}", secrets.scrub_str(line)),
                };
                (code == 0, format!("`{shown}` exited {code}{said}"))
            }
            Ok(Err(e)) => (false, format!("`{shown}` could not run: {e}")),
            Err(_) => (
                false,
                format!("`{shown}` did not end within {}s", backstop.as_secs()),
            ),
        };
        events::record(layout, unit, reason::IDLE_HOOK, &message);
        if !ok {
            failures.push(format!("command {} {message}", i + 1));
        }
    }
    match failures.is_empty() {
        true if commands.is_empty() => (true, "ok (no commands)".to_owned()),
        true => (true, "ok".to_owned()),
        false => (false, failures.join("; ")),
    }
}

/// Recycles the container: the agent stopped gracefully and its session
/// recorded ([`Reconciler::recycle`]), the container removed, and made
/// again in the same unit by a reconcile (tier 2). A reconcile that fails
/// is tried once more; then the instance is marked `Failed` with the
/// condition `IdleRestart`.
async fn restart(
    reconciler: &Reconciler,
    name: &str,
    unit: &str,
    id: &str,
) -> Result<(), LookError> {
    let layout = reconciler.store.layout();
    if !reconciler.recycle(name, id).await? {
        // The instance changed meanwhile (kept, resumed, ended by the
        // agent): the loop converges it as it now is.
        return Ok(());
    }
    events::record(
        layout,
        unit,
        reason::IDLE_HOOKS,
        "the idle hooks ran; the agent was stopped gracefully and its container is made anew",
    );
    let mut error = String::new();
    for _ in 0..2 {
        match reconciler.reconcile(name, None).await {
            Ok(Outcome::Converged { .. }) => {
                blocking(reconciler, name, |store, name| {
                    if let Some(mut guard) = store.lock_instance(name)? {
                        let conditions = &mut guard.obj.status.get_or_insert_default().conditions;
                        remove_condition(conditions, condition::IDLE_RESTART);
                        guard.save()?;
                    }
                    Ok(())
                })
                .await?;
                return Ok(());
            }
            Ok(other) => error = format!("it was left {other}"),
            Err(e) => error = e.to_string(),
        }
    }
    blocking(reconciler, name, move |store, name| {
        let Some(mut guard) = store.lock_instance(name)? else {
            return Ok(());
        };
        let status = guard.obj.status.get_or_insert_default();
        status.phase = Some(InstancePhase::Failed);
        set_condition(
            &mut status.conditions,
            condition::IDLE_RESTART,
            ConditionStatus::False,
            reason::RESTART_FAILED,
            &format!(
                "the idle hooks recycled the container and it did not come back, twice: {error}"
            ),
            Timestamp::now(),
        );
        guard.save()
    })
    .await?;
    Ok(())
}
