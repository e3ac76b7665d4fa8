//! A command's own deadline, `--timeout`: it bounds the whole command,
//! including the connection to the engine and any engine call that never
//! answers, but not the time the command waits for the operator (a screen's
//! answer, an attached session), which is added back to it.
//!
//! Each engine call has a deadline of its own as well
//! ([`jackin_engine::answer`]); this one is the operator's bound on
//! all of them together. When it passes, the work in flight is dropped as a
//! killed process would leave it: every step is safe to interrupt, and the
//! next command or pass carries on from what is on disk.

use std::future::Future;
use std::sync::Mutex;
use std::time::Duration;

use jackin_engine::Engine;
use jackin_engine::answer::{self, Waiting};
use tokio::time::Instant;

/// The command's deadline, when it has one.
struct Clock {
    limit: Duration,
    ends: Instant,
}

static CLOCK: Mutex<Option<Clock>> = Mutex::new(None);

fn clock() -> std::sync::MutexGuard<'static, Option<Clock>> {
    CLOCK
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts the command's clock: `limit` from now.
pub fn start(limit: Duration) {
    *clock() = Some(Clock {
        limit,
        ends: Instant::now() + limit,
    });
}

/// The command gave up at its `--timeout`.
#[derive(Debug)]
pub struct GaveUp {
    pub limit: Duration,
    /// The engine call that had waited longest, when one was in flight.
    pub waiting: Option<Waiting>,
}

impl std::fmt::Display for GaveUp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let limit = self.limit.as_secs();
        match &self.waiting {
            Some(waiting) => write!(f, "gave up after {limit} s (--timeout): {waiting}"),
            None => write!(
                f,
                "gave up after {limit} s (--timeout) before the command finished"
            ),
        }
    }
}

impl std::error::Error for GaveUp {}

/// Runs `work` within what is left of the command's clock; without a
/// clock, as it is.
pub async fn bounded<T>(work: impl Future<Output = anyhow::Result<T>>) -> anyhow::Result<T> {
    let Some((limit, ends)) = clock().as_ref().map(|c| (c.limit, c.ends)) else {
        return work.await;
    };
    let work = std::pin::pin!(work);
    tokio::select! {
        result = work => result,
        // Read while the work is still in flight: dropping it takes its
        // calls off the board.
        () = tokio::time::sleep_until(ends) => Err(GaveUp {
            limit,
            waiting: answer::oldest_waiting(),
        }
        .into()),
    }
}

/// The operator's turn: while the guard lives, the command waits for them,
/// and that time is not the command's.
pub struct OperatorsTurn {
    since: Instant,
}

/// Stops the command's clock until the guard is dropped.
pub fn operators_turn() -> OperatorsTurn {
    OperatorsTurn {
        since: Instant::now(),
    }
}

impl Drop for OperatorsTurn {
    fn drop(&mut self) {
        if let Some(clock) = clock().as_mut() {
            clock.ends += self.since.elapsed();
        }
    }
}

/// How long a stream from the engine (an attached terminal, a followed
/// log) may be quiet before jackin asks the engine whether it still
/// answers. A quiet agent is no fault; a quiet engine may be a hung one,
/// which would otherwise hold the command forever.
pub const QUIET_CHECK: Duration = Duration::from_secs(30);

/// How long the engine has to answer that question.
pub const QUIET_ANSWER: Duration = Duration::from_secs(20);

/// Whether `container` still runs, asked of `engine` after its stream was
/// quiet for [`QUIET_CHECK`]; an error when the engine does not answer
/// within [`QUIET_ANSWER`]. Never a deadline on the operator: only the
/// engine's answer is timed.
pub async fn still_running(engine: &Engine, container: &str) -> anyhow::Result<bool> {
    let asked = tokio::time::timeout(QUIET_ANSWER, engine.inspect_container(container)).await;
    let Ok(answer) = asked else {
        anyhow::bail!(
            "the Docker engine at {} stopped answering: the stream from {container} was quiet for \
             {} s and the engine did not answer within {} s whether it still runs",
            engine.endpoint(),
            QUIET_CHECK.as_secs(),
            QUIET_ANSWER.as_secs()
        );
    };
    Ok(answer?
        .and_then(|c| c.state)
        .and_then(|s| s.running)
        .unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;

    // One test: the clock is the process's, so tests of it must not
    // interleave.
    #[tokio::test(start_paused = true)]
    async fn the_clock_bounds_the_work_and_the_operators_turn_is_not_counted() {
        assert_eq!(
            bounded(async { Ok(7) }).await.expect("no clock: as it is"),
            7
        );
        start(Duration::from_secs(20));
        {
            let _turn = operators_turn();
            tokio::time::sleep(Duration::from_secs(300)).await;
        }
        let slow = bounded(async {
            tokio::time::sleep(Duration::from_secs(15)).await;
            Ok("done")
        })
        .await;
        assert_eq!(slow.expect("the operator's 300 s are not counted"), "done");
        let hung = bounded(std::future::pending::<anyhow::Result<()>>()).await;
        let gave_up = hung.expect_err("5 s were left").downcast::<GaveUp>();
        let gave_up = gave_up.expect("a GaveUp");
        assert_eq!(gave_up.limit, Duration::from_secs(20));
        assert_eq!(
            gave_up.to_string(),
            "gave up after 20 s (--timeout) before the command finished"
        );
        *clock() = None;
    }
}
