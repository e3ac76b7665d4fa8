//! The control plane: the state store and its index, one reconcile of one
//! instance, the one-shot converge, and the continuous controller (queue,
//! backoff, watches), which drive each instance toward its desired phase.

pub mod index;
pub mod store;

pub use failure::ReconcileError;
pub use index::{IndexRepair, IndexRow};
pub use reconcile::{DryRun, Outcome, Progress, Reconciler};
pub use store::{ApplyOutcome, Listing, Store, StoreError};
pub mod attention;
pub mod backoff;
pub mod converge;
pub mod ended;
pub mod engines;
pub mod events;
pub mod failed_sessions;
pub mod failure;
pub mod idle;
pub mod keep_cap;
pub mod listing;
pub mod live_output;
mod look;
pub mod metrics;
pub mod new_session;
pub mod notify;
pub mod notify_reaper;
pub mod objects;
pub mod published_looks;
pub mod queue;
pub mod reconcile;
mod repair;
pub mod run;
pub mod run_logs;
pub mod session;
pub mod single;
pub mod source;
pub mod sweep;
mod unit_object;

#[cfg(test)]
mod fake_engine_tests;
