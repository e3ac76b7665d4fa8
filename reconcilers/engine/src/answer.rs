//! How long an engine may keep jackin waiting, and what jackin says while it
//! waits.
//!
//! An engine that accepts a connection and never answers would otherwise
//! hold every command forever (or for the client's default two minutes,
//! silently). So each call has a deadline for the engine's answer
//! ([`ANSWER`], longer for calls whose work takes time: a stop waits out
//! its grace period, a build runs its Dockerfile), after which the call
//! fails with [`crate::EngineError::NoAnswer`]; a call still unanswered
//! after [`NOTICE_AFTER`] is said on the log once ("waiting for the engine
//! at …"), so a command never sits silent; and the calls in flight are
//! known process-wide ([`oldest_waiting`]), so a command that gives up at
//! its own `--timeout` can name the engine it was waiting on.
//!
//! The deadline bounds the engine's answer, not the work that follows it:
//! a followed log or an attached terminal that is merely quiet is the
//! agent's quiet, not the engine's. A call that runs something to its end
//! (an exec, a probe) has none here: its caller bounds it. A call past its
//! deadline counts as an engine that cannot be reached, never as an object
//! that is not there.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How long the engine may take to answer one call before jackin calls it
/// unanswering. Generous: a loaded engine creating hundreds of containers
/// answers within seconds, a hung one never does.
pub const ANSWER: Duration = Duration::from_secs(60);

/// How long a call waits before jackin says it is waiting.
pub const NOTICE_AFTER: Duration = Duration::from_secs(5);

/// How long a build (a role's Dockerfile, an agent's install) may run.
pub const BUILD: Duration = Duration::from_secs(30 * 60);

/// How long a stop may take: the agent's grace period, then the engine's
/// own answer.
pub fn stop(grace_secs: i32) -> Duration {
    Duration::from_secs(u64::try_from(grace_secs).unwrap_or(0)) + ANSWER
}

/// One call in flight.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Waiting {
    /// The engine's address.
    pub endpoint: String,
    /// What was asked of it (`list containers`).
    pub action: String,
    /// How long it has been waiting.
    pub for_: Duration,
}

impl std::fmt::Display for Waiting {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "the Docker engine at {} has not answered ({}) for {} s",
            self.endpoint,
            self.action,
            self.for_.as_secs()
        )
    }
}

struct Call {
    endpoint: String,
    action: String,
    since: Instant,
}

/// The calls in flight, by a number of their own; and the engines already
/// said to be slow, so that many calls waiting on one engine say it once.
#[derive(Default)]
struct Board {
    calls: BTreeMap<u64, Call>,
    noticed: BTreeSet<String>,
}

static BOARD: Mutex<Board> = Mutex::new(Board {
    calls: BTreeMap::new(),
    noticed: BTreeSet::new(),
});
static NEXT: AtomicU64 = AtomicU64::new(0);

fn board() -> std::sync::MutexGuard<'static, Board> {
    // A panic while holding it leaves nothing half-written worth refusing.
    BOARD
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// The call that has waited longest, if any is in flight.
pub fn oldest_waiting() -> Option<Waiting> {
    let board = board();
    let call = board.calls.values().min_by_key(|call| call.since)?;
    Some(Waiting {
        endpoint: call.endpoint.clone(),
        action: call.action.clone(),
        for_: call.since.elapsed(),
    })
}

/// A call on the board until it is dropped (answered, failed, or given up
/// with the command that made it).
struct OnBoard(u64);

impl OnBoard {
    fn new(endpoint: &str, action: &str) -> Self {
        let id = NEXT.fetch_add(1, Ordering::Relaxed);
        board().calls.insert(
            id,
            Call {
                endpoint: endpoint.to_owned(),
                action: action.to_owned(),
                since: Instant::now(),
            },
        );
        Self(id)
    }
}

impl Drop for OnBoard {
    fn drop(&mut self) {
        board().calls.remove(&self.0);
    }
}

/// Awaits `call`, an answer from the engine at `endpoint` to `action`: on
/// the board while it waits, said on the log once it has waited
/// [`NOTICE_AFTER`] (once per engine until that engine answers again).
/// With `quiet`, a call whose work itself takes time (a stop's grace, a
/// build) is on the board but not said to be slow.
pub async fn awaited<T>(
    endpoint: &str,
    action: &str,
    quiet: bool,
    call: impl Future<Output = T>,
) -> T {
    let _on_board = OnBoard::new(endpoint, action);
    let mut call = std::pin::pin!(call);
    if !quiet {
        tokio::select! {
            biased;
            answer = &mut call => {
                board().noticed.remove(endpoint);
                return answer;
            }
            () = tokio::time::sleep(NOTICE_AFTER) => {}
        }
        if board().noticed.insert(endpoint.to_owned()) {
            tracing::warn!(
                "waiting for the engine at {endpoint}: no answer for {} s ({action}); it may be \
                 stopped, stuck or overloaded (`docker info` asks it)",
                NOTICE_AFTER.as_secs(),
            );
        }
    }
    let answer = call.await;
    board().noticed.remove(endpoint);
    answer
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_call_is_on_the_board_while_it_waits_and_gone_after() {
        let (tx, rx) = tokio::sync::oneshot::channel::<()>();
        let call = tokio::spawn(awaited("unix:///hung.sock", "list containers", false, rx));
        tokio::time::sleep(Duration::from_secs(7)).await;
        // Other tests' calls share the board: look for this one.
        assert!(
            board()
                .calls
                .values()
                .any(|c| c.endpoint == "unix:///hung.sock" && c.action == "list containers"),
            "the call is on the board while it waits"
        );
        assert!(oldest_waiting().is_some());
        assert!(board().noticed.contains("unix:///hung.sock"), "said once");
        tx.send(()).expect("the call still waits");
        call.await.expect("no panic").expect("answered");
        assert!(
            board()
                .calls
                .values()
                .all(|c| c.endpoint != "unix:///hung.sock"),
            "an answered call leaves the board"
        );
    }

    #[tokio::test]
    async fn a_call_dropped_unanswered_leaves_the_board() {
        let pending = awaited(
            "unix:///dropped.sock",
            "inspect x",
            true,
            std::future::pending::<()>(),
        );
        let _ = tokio::time::timeout(Duration::from_millis(10), pending).await;
        assert!(
            board()
                .calls
                .values()
                .all(|c| c.endpoint != "unix:///dropped.sock")
        );
    }

    #[test]
    fn what_is_waited_on_names_the_engine_and_the_call() {
        let waiting = Waiting {
            endpoint: "tcp://10.0.0.9:2375".into(),
            action: "list containers".into(),
            for_: Duration::from_secs(19),
        };
        assert_eq!(
            waiting.to_string(),
            "the Docker engine at tcp://10.0.0.9:2375 has not answered (list containers) for 19 s"
        );
    }

    #[test]
    fn a_stop_may_take_its_grace_and_an_answer() {
        assert_eq!(stop(10), Duration::from_secs(70));
        assert_eq!(stop(-1), ANSWER);
    }
}
