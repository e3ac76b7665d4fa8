//! Converging from a one-shot command: reconcile the named instances until
//! each is converged, fails permanently, or the deadline passes.

use std::collections::HashMap;
use std::time::Duration;

use futures::StreamExt;
use tokio::time::Instant;

use crate::backoff;
use crate::failure::ReconcileError;
use crate::index::IndexRow;
use crate::reconcile::{Outcome, Reconciler, Snapshot, already_converged};

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
    // One snapshot per engine serves every instance's first look, so
    // instances that are already converged cost no engine call of their own.
    let rows: HashMap<String, IndexRow> = match reconciler.store.rows() {
        Ok(rows) => rows.into_iter().map(|r| (r.name.clone(), r)).collect(),
        Err(e) => {
            tracing::warn!("no index, observing one by one: {e}");
            HashMap::new()
        }
    };
    let snapshots = reconciler
        .snapshots(names.iter().filter_map(|n| rows.get(n)))
        .await;
    let (rows, snapshots) = (&rows, &snapshots);
    let mut results: Vec<_> = futures::stream::iter(names.iter().enumerate())
        .map(|(i, name)| async move {
            let snapshot = rows.get(name).and_then(|row| {
                Some(Snapshot {
                    engine: row.engine.as_deref(),
                    observation: snapshots.get(&row.engine)?,
                })
            });
            let settled = rows.get(name).zip(snapshot).and_then(|(row, snapshot)| {
                already_converged(reconciler.store.layout(), row, snapshot)
            });
            let result = match settled {
                Some(outcome) => Ok(outcome),
                None => one(reconciler, name, snapshot, deadline).await,
            };
            (i, name.clone(), result)
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
    mut snapshot: Option<Snapshot<'_>>,
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
