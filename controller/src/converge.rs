//! Converging from a one-shot command: reconcile the named instances until
//! each is converged, fails permanently, or the deadline passes.

use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use crate::backoff;
use crate::reconcile::{Outcome, ReconcileError, Reconciler};

/// How many instances one command converges at once.
const PARALLEL: usize = 4;

/// Converges every name; the results come back in the order given.
pub async fn converge(
    reconciler: &Reconciler,
    names: &[String],
    timeout: Duration,
) -> Vec<(String, Result<Outcome, ReconcileError>)> {
    let deadline = Instant::now() + timeout;
    let mut results: Vec<_> = futures::stream::iter(names.iter().enumerate())
        .map(|(i, name)| async move { (i, name.clone(), one(reconciler, name, deadline).await) })
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    results.sort_by_key(|(i, _, _)| *i);
    results.into_iter().map(|(_, n, r)| (n, r)).collect()
}

async fn one(
    reconciler: &Reconciler,
    name: &str,
    deadline: Instant,
) -> Result<Outcome, ReconcileError> {
    let mut delays = backoff::delays(Duration::from_secs(10));
    loop {
        match reconciler.reconcile(name, None).await {
            Ok(outcome) => return Ok(outcome),
            Err(e) if e.is_permanent() => return Err(e),
            Err(e) => {
                let delay = delays.next().unwrap_or(Duration::from_secs(10));
                if Instant::now() + delay >= deadline {
                    return Err(e);
                }
                tracing::warn!(instance = name, "retrying in {delay:.1?}: {e}");
                tokio::time::sleep(delay).await;
            }
        }
    }
}
