//! The keep cap as a use-case: once sessions are settled as kept, each
//! workspace's `keep.max` bounds its kept sessions per (role, agent), the
//! least recently running beyond it settled as purged. The controller's
//! sweep applies it on every pass; a one-shot command that settles a
//! session as kept (`apply`, `set-phase`, `attach`, `launch`) applies it
//! the same way at once, through [`enforce`].

use crate::engines::Engines;
use crate::store::Store;
use crate::sweep::{self, Finding, SweepError};

/// What enforcing the cap did.
#[derive(Debug, Default)]
pub struct Enforced {
    /// Every finding carried out, to report: purges and spared sessions.
    pub findings: Vec<Finding>,
    /// The instances settled as purged, for the caller to converge (the
    /// controller's loop converges them on its own).
    pub purged: Vec<String>,
}

/// Plans the keep caps over the store as it is now and carries the plan
/// out, as the controller's sweep does.
pub async fn enforce(store: &Store, engines: &Engines) -> Result<Enforced, SweepError> {
    let planned = store.blocking(sweep::plan_keep_caps).await?;
    let findings = sweep::execute(store, engines, planned).await?;
    let purged = findings
        .iter()
        .filter_map(|finding| match finding {
            Finding::KeepCapPurge { name, .. } => Some(name.clone()),
            _ => None,
        })
        .collect();
    Ok(Enforced { findings, purged })
}
