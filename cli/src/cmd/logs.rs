//! `jackin logs NAME [-c SIDECAR] [-f] [--since D] [--tail N]`: what the
//! agent (or a sidecar) printed, from its container's log, whether or not
//! anyone was attached. `-f` follows the instance, not one container: when
//! a restore or a rollout replaces the container, it says so and follows
//! the new one, until the session is kept, purged or ends.

use std::io::Write;
use std::time::Duration;

use anyhow::{Result, bail};
use futures::StreamExt;
use jackin_api::instance::{InstancePhase, RestoreRecord};
use jackin_api::meta::find_condition;
use jackin_api::names::condition;
use jackin_api::{DesiredPhase, Instance};
use jackin_controller::{Store, StoreError};
use jackin_engine::Engine;
use jackin_engine::LogsRequest;

use crate::args::LogsArgs;
use crate::context::open_store;
use crate::ops::container::{container_of, find_container};
use crate::select::instance_name;

/// How often `-f` looks at the instance once its container's log ended.
const LOOK_EVERY: Duration = Duration::from_millis(500);

/// How long `-f` waits for a replacement's restore record before it
/// reports the replacement without its tier.
const RESTORE_RECORD_WAIT: Duration = Duration::from_secs(5);

pub async fn run(args: &LogsArgs) -> Result<()> {
    let name = instance_name(&args.name)?;
    let sidecar = args.container.as_deref();
    let store = open_store()?;
    let found = container_of(&store, name, sidecar).await?;
    let status = found.obj.status_or_default();
    let Some(mut id) = found.id else {
        let whose = match sidecar {
            Some(sidecar) => format!("instance/{name} has no container for its sidecar {sidecar}"),
            None => format!("instance/{name} has no container"),
        };
        bail!(
            "{whose} now (phase {}): its output went with the last one\n\
             hint: `jackin describe {name}` shows how its last session ended",
            status.phase.map_or("-".into(), |p| p.to_string()),
        );
    };
    let engine = found.engine;
    // A recreated container starts a new log: say so, rather than pretend.
    if let Some(restore) = status.restore.as_ref().filter(|r| r.tier >= 2) {
        let by = match &restore.rollout {
            Some(_) => "a rollout",
            None => "a restore",
        };
        eprintln!(
            "note: the container was made anew by {by} (tier {}) at {}: what it printed \
             before that went with the previous container",
            restore.tier, restore.at
        );
    }
    let mut restore = status.restore.clone();
    let mut request = LogsRequest {
        follow: args.follow,
        since_unix: args
            .since
            .map(|since| jiff::Timestamp::now().as_second() - since.as_secs() as i64),
        tail: args.tail,
        timestamps: false,
        until_unix: None,
    };
    loop {
        print_log(&engine, &id, request).await?;
        if !args.follow {
            return Ok(());
        }
        let ended_at = jiff::Timestamp::now().as_second();
        let follower = Follower {
            store: &store,
            engine: &engine,
            name,
            sidecar,
        };
        match follower.next(&id, restore.as_ref()).await? {
            Next::Same => {
                // Restarted in place: its log goes on. The engine counts
                // `since` in whole seconds, so a line the container wrote
                // in the second its output stopped may show twice.
                request = LogsRequest {
                    follow: true,
                    since_unix: Some(ended_at),
                    ..LogsRequest::default()
                };
            }
            Next::Replaced { id: new, record } => {
                id = new;
                restore = record.or(restore);
                // A new container's log is new: all of it.
                request = LogsRequest {
                    follow: true,
                    ..LogsRequest::default()
                };
            }
            Next::End(why) => {
                eprintln!("note: {why}: no more output to follow");
                return Ok(());
            }
        }
    }
}

/// Prints the log of container `id` as `request` asks, until it ends.
async fn print_log(engine: &Engine, id: &str, request: LogsRequest) -> Result<()> {
    let mut logs = engine.logs(id, request);
    let mut stdout = std::io::stdout().lock();
    // Piped, the agent's output goes on as it wrote it, as `docker logs`
    // prints it. On a terminal it is history: each line as a terminal
    // draws it on its own (a column move is a space, a line redrawn in
    // place its last state), rebuilt as text and colours only, as `attach`
    // replays the screen: a query in it would make the terminal type its
    // answer into the operator's shell. A sequence split between two
    // chunks is one.
    let on_terminal = std::io::IsTerminal::is_terminal(&stdout);
    let mut lines = jackin_act::screen::Lines::default();
    loop {
        // A followed log may be quiet for long: then the engine is asked
        // whether it still answers, and the container still runs.
        let next = tokio::time::timeout(crate::deadline::QUIET_CHECK, logs.next()).await;
        let chunk = match next {
            Ok(Some(chunk)) => chunk?,
            Ok(None) => break,
            Err(_) if crate::deadline::still_running(engine, id).await? => continue,
            Err(_) => break,
        };
        if on_terminal {
            for line in lines.feed(&chunk, true) {
                writeln!(stdout, "{line}")?;
            }
        } else {
            stdout.write_all(&chunk)?;
        }
        stdout.flush()?;
    }
    if let Some(rest) = lines.finish(true) {
        writeln!(stdout, "{rest}")?;
    }
    Ok(())
}

/// What `-f` follows next, once a container's log ended.
enum Next {
    /// The same container, running again.
    Same,
    /// A new container of the instance, with the restore record that
    /// made it when there is one.
    Replaced {
        id: String,
        record: Option<RestoreRecord>,
    },
    /// Nothing more will come, and why.
    End(String),
}

/// The instance (or its sidecar) `-f` follows.
struct Follower<'a> {
    store: &'a Store,
    engine: &'a Engine,
    name: &'a str,
    sidecar: Option<&'a str>,
}

impl Follower<'_> {
    /// Waits until the instance runs a container again, or will not.
    async fn next(&self, followed: &str, restore: Option<&RestoreRecord>) -> Result<Next> {
        let name = self.name;
        let mut said_waiting = false;
        loop {
            tokio::time::sleep(LOOK_EVERY).await;
            let obj = match self.store.get_instance(name) {
                Ok(obj) => obj,
                Err(StoreError::InstanceNotFound(_)) => {
                    return Ok(Next::End(format!("instance/{name} was purged")));
                }
                Err(e) => return Err(e.into()),
            };
            if let Some(why) = Self::over(&obj) {
                return Ok(Next::End(why));
            }
            let status = obj.status_or_default();
            match find_container(self.engine, &obj, self.sidecar).await? {
                Some((id, true)) if id != followed => {
                    let record = self.restore_record(restore).await;
                    let how = record
                        .as_ref()
                        .filter(|r| r.tier >= 2)
                        .map(|r| match &r.rollout {
                            Some(_) => format!(" (rollout, tier {})", r.tier),
                            None => format!(" (tier {} restore)", r.tier),
                        })
                        .unwrap_or_default();
                    eprintln!("note: the container was replaced{how}; following the new one");
                    return Ok(Next::Replaced { id, record });
                }
                Some((_, true)) => return Ok(Next::Same),
                // Stopped, and jackin has recorded how the session ended:
                // an ended session stays ended until the operator resumes
                // it.
                Some((id, false))
                    if id == followed
                        && matches!(
                            status.phase,
                            Some(InstancePhase::Exited | InstancePhase::Crashed)
                        ) =>
                {
                    let phase = status.phase.expect("matched");
                    return Ok(Next::End(format!(
                        "the session of instance/{name} ended ({phase}; `jackin describe {name}` \
                         shows how)"
                    )));
                }
                Some(_) if !said_waiting => {
                    said_waiting = true;
                    eprintln!(
                        "note: the container stopped; waiting until jackin records how the \
                         session ended, or restarts it (a running `jackin controller` looks \
                         within seconds)"
                    );
                }
                None if !said_waiting => {
                    said_waiting = true;
                    eprintln!(
                        "note: the container went away; waiting for its replacement (a running \
                         `jackin controller`, or `jackin set-phase {name} running`, restores it)"
                    );
                }
                _ => {}
            }
        }
    }

    /// Why no container of `obj` will run again without the operator, if
    /// none will.
    fn over(obj: &Instance) -> Option<String> {
        let name = &obj.metadata.name;
        match obj.desired_phase() {
            DesiredPhase::Kept => return Some(format!("instance/{name} was kept")),
            DesiredPhase::Purged => return Some(format!("instance/{name} is being purged")),
            DesiredPhase::Running => {}
        }
        let status = obj.status_or_default();
        match status.phase {
            Some(InstancePhase::Kept) => Some(format!("instance/{name} was kept")),
            Some(InstancePhase::Failed) => {
                let why = find_condition(&status.conditions, condition::READY)
                    .map(|c| format!(": {}: {}", c.reason, c.message))
                    .unwrap_or_default();
                Some(crate::output::terminal_safe(&format!(
                    "instance/{name} failed{why}"
                )))
            }
            _ => None,
        }
    }

    /// The restore record newer than `before`, once the loop has written
    /// it (it records the restore after starting the container); `None`
    /// when none comes soon (a replacement that is not a restore).
    async fn restore_record(&self, before: Option<&RestoreRecord>) -> Option<RestoreRecord> {
        let deadline = tokio::time::Instant::now() + RESTORE_RECORD_WAIT;
        loop {
            let record = self
                .store
                .get_instance(self.name)
                .ok()
                .and_then(|obj| obj.status?.restore);
            if record.is_some() && record.as_ref() != before {
                return record;
            }
            if tokio::time::Instant::now() >= deadline {
                return None;
            }
            tokio::time::sleep(LOOK_EVERY).await;
        }
    }
}
