//! What jackin decides, and nothing else: given a view of one instance
//! (its object, the engine's containers, what the unit's files say), the
//! plan that drives it toward its desired phase. The restore ladder is
//! [`decide`]; the end of a session is [`ending`]; a rollout's drift and
//! its refusal are [`rollout`]; the idle watch and attention read the
//! engine's counters and the agent's output ([`idle`], [`attention`]).
//!
//! Architecture invariant: this crate does no I/O. It reads no file, calls
//! no engine, runs no process and has no runtime; its dependencies are the
//! API types and pure helpers, and `scripts/check-plan-purity` fails the
//! suite if that changes. Observing is `jackin_act::observe`'s, and
//! carrying a plan out is `jackin_act`'s.

pub mod attention;
pub mod decide;
pub mod digest;
pub mod ending;
pub mod idle;
pub mod ladder;
pub mod marker;
pub mod plan;
pub mod policy;
pub mod recipe;
pub mod redact;
pub mod rollout;
pub mod view;
