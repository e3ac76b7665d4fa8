//! One module per command; `main` parses the arguments and dispatches here.

pub mod apply;
pub mod attach;
pub mod controller;
pub mod crds;
pub mod delete;
pub mod describe;
pub mod get;
pub mod launch;
pub mod logs;
pub mod prune;
pub mod set_phase;
