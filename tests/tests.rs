//! The integration tests, one binary of modules (after ripgrep's
//! `tests/tests.rs`): one module per area, each its own file beside this
//! one (`idle` is `tests/idle.rs`), and the helpers in `support`, a library
//! of its own (`tests/support`). The real agents' slow tier is the other
//! binary, `tests/agent_tier.rs`.
//!
//! One area, or one test: `cargo test --test tests -- idle::` runs
//! `tests/idle.rs`, `-- idle::l4_` its tests whose names start with `l4_`.
//!
//! The tests of all the areas run in one process, on libtest's threads (as
//! many as there are cores, as each of the old per-file binaries had):
//! nothing in them is process-wide but what is made to be shared (the
//! counter of `support::unique`, the busybox image's tag), none sets an
//! environment variable or the working directory, and each test's engine
//! objects carry its own home's labels, as they must where two runs share
//! one engine. libtest starts them in the order of their names, so an
//! area's tests still mostly run beside one another.

mod agents;
mod amp;
mod attach;
mod boundary;
mod changes;
mod cleanup;
mod completion;
mod controller;
mod converge;
mod credentials;
mod deadlines;
mod diagnostics;
mod discard;
mod engine;
mod engines;
mod failures;
mod files;
mod gitops;
mod hostile;
mod idle;
mod image;
mod include;
mod isolation;
mod metrics;
mod ports;
mod publication;
mod replay;
mod reports;
mod reserved;
mod restricted;
mod roles;
mod rollout;
mod saved_sessions;
mod scale;
mod session;
mod setup;
mod soak;
mod ssh_engine;
mod store;
mod suite;
mod terminal_size;
mod top;
mod verbs;
