//! Converging from a one-shot command: reconcile the named instances until
//! each is converged, fails permanently, or the deadline passes.

use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use jackin_reconcilers::observe::Observation;

use crate::backoff;
use crate::reconcile::{Outcome, ReconcileError, Reconciler};

/// How many instances are converged at once unless the operator says
/// otherwise. The engine serialises much of its work (network setup, its
/// store), so beyond this more workers mostly queue inside it.
pub const DEFAULT_CONCURRENCY: usize = 8;

/// Converges every name; the results come back in the order given.
pub async fn converge(
    reconciler: &Reconciler,
    names: &[String],
    timeout: Duration,
    concurrency: usize,
) -> Vec<(String, Result<Outcome, ReconcileError>)> {
    let deadline = Instant::now() + timeout;
    // One snapshot serves every instance's first look, so instances that are
    // already converged cost no engine call of their own.
    let snapshot = match Observation::all(&reconciler.engine).await {
        Ok(snapshot) => Some(snapshot),
        Err(e) => {
            tracing::warn!("no shared snapshot, observing one by one: {e}");
            None
        }
    };
    let snapshot = snapshot.as_ref();
    let mut results: Vec<_> = futures::stream::iter(names.iter().enumerate())
        .map(|(i, name)| async move {
            (
                i,
                name.clone(),
                one(reconciler, name, snapshot, deadline).await,
            )
        })
        .buffer_unordered(concurrency.max(1))
        .collect()
        .await;
    results.sort_by_key(|(i, _, _)| *i);
    results.into_iter().map(|(_, n, r)| (n, r)).collect()
}

async fn one(
    reconciler: &Reconciler,
    name: &str,
    mut snapshot: Option<&Observation>,
    deadline: Instant,
) -> Result<Outcome, ReconcileError> {
    let mut delays = backoff::delays(Duration::from_secs(10));
    loop {
        match reconciler.reconcile(name, snapshot.take()).await {
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
