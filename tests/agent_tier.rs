//! The real agents' tier, the second test binary: the real claude, codex,
//! aider and kimi-cli under jackin, each from an image a script builds
//! (`scripts/agent-image`, `scripts/aider-image`, `scripts/kimi-image`),
//! about ten minutes on 2 cores. `scripts/test --agents` runs it alone,
//! `scripts/test` with everything else. Laid out as `tests/tests.rs` is: one
//! module per area, each its own file beside this one, and `support`.
//!
//! One area: `cargo test --test agent_tier -- kimi::`.

mod aider;
mod continuity;
mod kimi;
mod operator_config;
mod providers;
mod real_agents;
