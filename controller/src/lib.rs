//! The control plane: the state store and index, and (growing here) the
//! convergence loop that drives each instance toward its desired phase.

pub mod index;
pub mod store;

pub use index::{IndexRepair, IndexRow};
pub use reconcile::{DryRun, Outcome, Progress, ReconcileError, Reconciler};
pub use store::{ApplyOutcome, Listing, Store, StoreError};
pub mod backoff;
pub mod converge;
pub mod events;
pub mod queue;
pub mod reconcile;
pub mod run;
pub mod session;
pub mod sweep;
