//! Notifications: the operator's `Workspace.spec.notify` command, run on
//! the host when one of the workspace's instances starts to need them,
//! ends, fails or is discarded. Part of the continuous controller.
//!
//! Only instances of workspaces that set `notify` are looked at, with
//! `attention::look` (each running one's output stream, opened once and
//! kept, counters every few looks), often enough to see a quiet agent within a third of its
//! workspace's threshold; with no such workspace the watch makes no engine
//! call at all. Transitions are what changed between two looks; at the
//! first look after the controller starts, an agent that already needs
//! the operator is told, and how earlier sessions ended is not.
//!
//! What the command gets is jackin's own observation and nothing the
//! agent wrote: its argv is the operator's, as written in the workspace
//! (run as it is, never through a shell), and the event is in three
//! variables, `JACKIN_INSTANCE` and `JACKIN_WORKSPACE` (names the operator
//! chose, validated as DNS labels) and `JACKIN_EVENT` (one of
//! [`Event::as_str`]). Of the controller's environment it gets only what a
//! desktop notifier needs (`PASSED_ON`: never the agents' secrets the
//! controller may hold), and it runs in `/`, with no input, its output
//! discarded, under a reaper of its own (`notify_reaper`) that kills it
//! and every process it started, `setsid` ones and orphans included, at
//! its timeout. One event of one instance runs it at most once per
//! `minInterval`, never while its last run goes on, and at most
//! `RUNNING_AT_ONCE` run at once. A store that cannot be read tells
//! nothing (an instance missing from a partial listing is not taken for
//! discarded).

use std::collections::{HashMap, HashSet};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jackin_api::instance::{Instance, InstancePhase};
use jackin_api::names::reason;
use jackin_api::validate;
use jackin_api::workspace::NotifyPolicy;
use jackin_plan::attention::{self as decide, Attention};
use jiff::Timestamp;
use tokio::sync::Semaphore;
use tokio::time::Instant;

use crate::Reconciler;
use crate::attention::{self, Look};
use crate::events;
use crate::notify_reaper;

/// How often the workspaces are read again when none sets `notify`.
const RESCAN: Duration = Duration::from_secs(30);

/// Every this many looks, the counters are read too.
const STATS_EVERY_LOOKS: u32 = 5;

/// The controller's variables the command gets (a desktop notifier needs
/// its session's), besides the event's own.
const PASSED_ON: &[&str] = &[
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "LANG",
    "DISPLAY",
    "WAYLAND_DISPLAY",
    "DBUS_SESSION_BUS_ADDRESS",
    "XDG_RUNTIME_DIR",
];

/// How long the reaper may take past the command's timeout to kill what is
/// left and say so.
const REAPER_GRACE: Duration = Duration::from_secs(10);

/// Commands running at once, over every instance: more events wait.
const RUNNING_AT_ONCE: usize = 8;

/// What the command is told happened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    /// It printed, went quiet, and nobody is attached.
    NeedsYou,
    /// The agent ended on its own, with exit code 0.
    Ended,
    /// The agent exited non-zero, ran out of memory or was killed, or jackin
    /// could not bring the session up.
    Failed,
    /// The instance is gone (cleaned up by its exit policy, or purged).
    Discarded,
}

impl Event {
    /// `JACKIN_EVENT`.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NeedsYou => Attention::NeedsYou.event(),
            Self::Ended => "ended",
            Self::Failed => "failed",
            Self::Discarded => "discarded",
        }
    }
}

/// The reason the watch remembers of a session jackin stopped.
const STOPPED_BY_JACKIN: &str = "stopped-by-jackin";

/// What the watch remembers of an instance between looks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    pub workspace: String,
    pub phase: Option<InstancePhase>,
    pub attention: Option<Attention>,
    /// The last recorded session end: when, why and with what code.
    pub session: Option<(Option<Timestamp>, Option<String>, Option<i64>)>,
}

impl Seen {
    fn of(obj: &Instance, workspace: &str, look: Option<&Look>) -> Self {
        let session = obj.status.as_ref().and_then(|s| s.session.as_ref());
        Self {
            workspace: workspace.to_owned(),
            phase: obj.phase(),
            attention: look.and_then(|l| l.attention),
            // A session jackin stopped is neither an ending nor a failure,
            // whatever its code and whatever the wrapper saw (defect R14).
            session: session.map(|s| {
                let why = match s.stopped_by_jackin {
                    true => Some(STOPPED_BY_JACKIN.to_owned()),
                    false => s.reason.clone(),
                };
                (s.finished_at, why, s.exit_code)
            }),
        }
    }
}

/// The events between two looks at one instance; `after` is `None` when it
/// is gone.
pub fn events(before: &Seen, after: Option<&Seen>) -> Vec<Event> {
    let Some(after) = after else {
        return vec![Event::Discarded];
    };
    let mut found = Vec::new();
    if after.attention == Some(Attention::NeedsYou) && before.attention != Some(Attention::NeedsYou)
    {
        found.push(Event::NeedsYou);
    }
    let failed_phase = |p: Option<InstancePhase>| {
        matches!(p, Some(InstancePhase::Failed | InstancePhase::Crashed))
    };
    let mut failed = failed_phase(after.phase) && !failed_phase(before.phase);
    // A new session end: how the agent ended, unless jackin stopped it
    // (a keep, a purge, a restart: `signal:…`), which the operator asked.
    if let Some((Some(at), why, code)) = &after.session
        && before.session.as_ref().and_then(|s| s.0) != Some(*at)
    {
        match (why.as_deref(), code) {
            (Some("exited"), Some(0)) => found.push(Event::Ended),
            (Some("exited" | "oom"), _) => failed = true,
            (Some("killed"), _) if after.phase != Some(InstancePhase::Kept) => failed = true,
            _ => {}
        }
    }
    if failed {
        found.push(Event::Failed);
    }
    found
}

/// The workspaces that set `notify` (each with its policy and its
/// attention threshold), the instances of those, and whether the listing
/// was partial (a unit that did not read).
type Watched = (
    HashMap<String, (NotifyPolicy, Duration)>,
    Vec<Instance>,
    bool,
);

/// Runs until the task is dropped.
pub async fn watch(reconciler: Reconciler) {
    // What the last look saw. The first look compares with nothing: every
    // instance is new to it (see below).
    let mut seen: HashMap<String, Seen> = HashMap::new();
    let mut looks: HashMap<String, Look> = HashMap::new();
    let live = crate::live_output::LiveOutputs::default();
    let mut runs = Runs::default();
    let mut round = 0u32;
    loop {
        // A store that cannot be read now says nothing about the instances:
        // nothing is told, and what was seen stands until it can be.
        let (policies, objects, partial) = match read_watched(&reconciler).await {
            Ok(read) => read,
            Err(e) => {
                tracing::warn!("notify: cannot read the store: {e}");
                tokio::time::sleep(RESCAN).await;
                continue;
            }
        };
        if policies.is_empty() {
            seen.clear();
            looks.clear();
            live.retain(&HashSet::new());
            tokio::time::sleep(RESCAN).await;
            continue;
        }
        let stats = round.is_multiple_of(STATS_EVERY_LOOKS);
        round = round.wrapping_add(1);
        looks = attention::look(&reconciler, &objects, stats, &looks, Some(&live)).await;
        let mut now: HashMap<String, Seen> = objects
            .iter()
            .map(|obj| {
                let name = obj.metadata.name.clone();
                let workspace = obj.spec.workspace.clone().unwrap_or_default();
                let found = Seen::of(obj, &workspace, looks.get(&name));
                (name, found)
            })
            .collect();
        // With a unit that did not read, an instance missing from the
        // listing may be that one: it is not taken for gone.
        if partial {
            for (name, was) in &seen {
                now.entry(name.clone()).or_insert_with(|| was.clone());
            }
        }
        for (name, seen_as, event) in transitions(&seen, &now) {
            let Some((policy, _)) = policies.get(&seen_as.workspace) else {
                continue;
            };
            let unit = objects
                .iter()
                .find(|o| &o.metadata.name == name)
                .and_then(|o| o.container_name().map(str::to_owned));
            runs.start(&reconciler, policy, name, &seen_as.workspace, event, unit);
        }
        runs.last_run.retain(|(name, _), _| now.contains_key(name));
        seen = now;
        // Often enough to see a quiet agent within a third of the shortest
        // threshold.
        let every = policies
            .values()
            .map(|(_, threshold)| *threshold / 3)
            .min()
            .unwrap_or(RESCAN)
            .clamp(Duration::from_secs(1), Duration::from_secs(10));
        tokio::time::sleep(every).await;
    }
}

/// Reads the workspaces that set `notify`, and when there are any, the
/// instances of those (off the async runtime).
async fn read_watched(reconciler: &Reconciler) -> Result<Watched, crate::StoreError> {
    let store = reconciler.store.clone();
    jackin_files::offload::blocking(move || {
        let policies: HashMap<String, (NotifyPolicy, Duration)> = store
            .list_workspaces()?
            .into_iter()
            .filter_map(|ws| {
                let threshold = decide::needs_you_after(Some(&ws.spec));
                Some((ws.metadata.name, (ws.spec.notify?, threshold)))
            })
            .collect();
        if policies.is_empty() {
            return Ok((policies, Vec::new(), false));
        }
        let listing = store.list_instances()?;
        let partial = !listing.unreadable.is_empty();
        let objects: Vec<Instance> = listing
            .instances
            .into_iter()
            .filter(|o| {
                o.spec
                    .workspace
                    .as_deref()
                    .is_some_and(|ws| policies.contains_key(ws))
            })
            .collect();
        Ok((policies, objects, partial))
    })
    .await
}

/// What happened between the last look (`seen`) and this one (`now`):
/// each instance's events, with what it was seen as.
fn transitions<'a>(
    seen: &'a HashMap<String, Seen>,
    now: &'a HashMap<String, Seen>,
) -> Vec<(&'a String, &'a Seen, Event)> {
    let mut told: Vec<(&String, &Seen, Event)> = Vec::new();
    for (name, was) in seen {
        told.extend(
            events(was, now.get(name))
                .into_iter()
                .map(|e| (name, was, e)),
        );
    }
    // A new instance (each one, at the first look) is compared with
    // itself needing nothing: one that already needs you is told at
    // once; how earlier sessions ended is not told again.
    for (name, is) in now.iter().filter(|(name, _)| !seen.contains_key(*name)) {
        let blank = Seen {
            attention: None,
            ..is.clone()
        };
        told.extend(events(&blank, Some(is)).into_iter().map(|e| (name, is, e)));
    }
    told
}

/// The command's runs: when each (instance, event) last ran, the runs not
/// finished yet, and the slots that bound how many run at once.
struct Runs {
    last_run: HashMap<(String, Event), Instant>,
    // Runs not finished yet, by (instance, event): another of the same
    // waits for the next transition instead of piling up.
    in_flight: Arc<Mutex<HashSet<(String, Event)>>>,
    slots: Arc<Semaphore>,
}

impl Default for Runs {
    fn default() -> Self {
        Self {
            last_run: HashMap::new(),
            in_flight: Arc::default(),
            slots: Arc::new(Semaphore::new(RUNNING_AT_ONCE)),
        }
    }
}

impl Runs {
    /// Starts the command for `event` of the instance `name` (of
    /// `workspace`, its unit `unit`), unless it ran within the policy's
    /// `minInterval` or its last run for this event goes on.
    fn start(
        &mut self,
        reconciler: &Reconciler,
        policy: &NotifyPolicy,
        name: &str,
        workspace: &str,
        event: Event,
        unit: Option<String>,
    ) {
        let interval = validate::duration(&policy.min_interval).unwrap_or_default();
        let key = (name.to_owned(), event);
        if self
            .last_run
            .get(&key)
            .is_some_and(|at| at.elapsed() < interval)
        {
            tracing::debug!(
                instance = name,
                event = event.as_str(),
                "notify: rate-limited"
            );
            return;
        }
        if !self
            .in_flight
            .lock()
            .expect("notify runs")
            .insert(key.clone())
        {
            tracing::debug!(
                instance = name,
                event = event.as_str(),
                "notify: the last run for this event has not ended"
            );
            return;
        }
        self.last_run.insert(key.clone(), Instant::now());
        let (reconciler, policy, workspace) =
            (reconciler.clone(), policy.clone(), workspace.to_owned());
        let (in_flight, slots) = (self.in_flight.clone(), self.slots.clone());
        tokio::spawn(async move {
            // Closed never: the semaphore lives as long as the watch.
            if let Ok(_slot) = slots.acquire().await {
                run(reconciler, policy, key.0.clone(), workspace, event, unit).await;
            }
            in_flight.lock().expect("notify runs").remove(&key);
        });
    }
}

/// Runs the operator's command for one event, and records how it went in
/// the instance's events (when it still has a unit) and the log.
async fn run(
    reconciler: Reconciler,
    policy: NotifyPolicy,
    instance: String,
    workspace: String,
    event: Event,
    unit: Option<String>,
) {
    let Some((program, args)) = policy.command.split_first() else {
        return;
    };
    let timeout = validate::duration(&policy.timeout).unwrap_or(Duration::from_secs(10));
    // Through the reaper, which ends the program and everything it started
    // at the timeout, and says what happened on its standard output.
    let mut command = notify_reaper::command(timeout, program, args);
    command
        // Only what a desktop notifier needs of the controller's
        // environment: the controller's may hold the agents' secrets
        // (`hostEnv`), which are none of this command's business.
        .env_clear()
        .envs(
            PASSED_ON
                .iter()
                .filter_map(|name| Some((name, std::env::var_os(name)?))),
        )
        .env("JACKIN_INSTANCE", &instance)
        .env("JACKIN_EVENT", event.as_str())
        .env("JACKIN_WORKSPACE", &workspace)
        // Not wherever the controller was started (a directory an agent
        // may write): relative arguments mean nothing here.
        .current_dir("/")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        // Should the reaper itself not end, its group goes at once.
        .process_group(0)
        .kill_on_drop(true);
    let outcome = match command.spawn() {
        Err(e) => format!("could not run: {e}"),
        Ok(child) => {
            let reaper = child.id();
            let given = timeout + REAPER_GRACE;
            match tokio::time::timeout(given, child.wait_with_output()).await {
                Ok(Ok(out)) => match String::from_utf8_lossy(&out.stdout).trim() {
                    "" => format!("ended without saying how: {}", out.status),
                    said => said.to_owned(),
                },
                Ok(Err(e)) => format!("could not be waited for: {e}"),
                Err(_) => {
                    if let Some(leader) = reaper {
                        jackin_checkouts::sandbox::kill_process_group(leader);
                    }
                    format!(
                        "did not end within {}s, nor its reaper {}s later; its process group \
                         was killed",
                        timeout.as_secs(),
                        REAPER_GRACE.as_secs()
                    )
                }
            }
        }
    };
    let message = format!("notify `{program}` of {}: {outcome}", event.as_str());
    tracing::info!(instance, "{message}");
    if let Some(unit) = unit {
        events::record(reconciler.store.layout(), &unit, reason::NOTIFY, &message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(
        phase: InstancePhase,
        attention: Option<Attention>,
        session: Option<(i64, &str, i64)>,
    ) -> Seen {
        Seen {
            workspace: "desk".into(),
            phase: Some(phase),
            attention,
            session: session.map(|(at, why, code)| {
                (
                    Some(Timestamp::from_second(1_700_000_000 + at).unwrap()),
                    Some(why.to_owned()),
                    Some(code),
                )
            }),
        }
    }

    #[test]
    fn transitions_are_the_events() {
        use InstancePhase::{Crashed, Kept, Running};
        let working = seen(Running, Some(Attention::Working), None);
        // Quiet long enough: once, on entering.
        let asking = seen(Running, Some(Attention::NeedsYou), None);
        assert_eq!(events(&working, Some(&asking)), [Event::NeedsYou]);
        assert_eq!(events(&asking, Some(&asking)), []);
        // The agent exits 0 and the session is kept by the policy.
        let ended = seen(Kept, Some(Attention::Kept), Some((10, "exited", 0)));
        assert_eq!(events(&asking, Some(&ended)), [Event::Ended]);
        assert_eq!(events(&ended, Some(&ended)), []);
        // Non-zero, or out of memory: failed.
        let crashed = seen(Crashed, Some(Attention::Failed), Some((10, "exited", 3)));
        assert_eq!(events(&working, Some(&crashed)), [Event::Failed]);
        let oom = seen(Kept, Some(Attention::Kept), Some((10, "oom", 137)));
        assert_eq!(events(&working, Some(&oom)), [Event::Failed]);
        // jackin could not bring it up.
        let failed = seen(InstancePhase::Failed, Some(Attention::Failed), None);
        assert_eq!(events(&working, Some(&failed)), [Event::Failed]);
        // Kept by the operator: stopped by a signal, nothing to tell.
        let kept = seen(Kept, Some(Attention::Kept), Some((10, "signal:TERM", 143)));
        assert_eq!(events(&working, Some(&kept)), []);
        let killed_to_keep = seen(Kept, Some(Attention::Kept), Some((10, "killed", 137)));
        assert_eq!(events(&working, Some(&killed_to_keep)), []);
        // Gone.
        assert_eq!(events(&ended, None), [Event::Discarded]);
        assert_eq!(Event::NeedsYou.as_str(), "needs-you");
    }
}
