//! git and the isolated checkouts. Every git process that reads a tree the
//! agent writes runs confined ([`sandbox`]) through one argv-only wrapper
//! ([`git`]); a unit's checkouts are made and repaired by [`checkout`],
//! [`isolation`] and [`worktree`] (with [`gitdir`] and the older layout in
//! [`legacy_worktree`]), and get the untracked files [`include`](mod@include) names;
//! [`assess`] says what a checkout holds that would be lost, [`work_diff`]
//! shows it, and [`discard`] saves it before a checkout goes
//! ([`saved_files`], [`saved_session`]).
//!
//! Architecture invariant: nothing an agent wrote chooses a host path or
//! runs a program on the host; every path into a checkout is resolved
//! beneath it, and git never runs a hook, filter or helper it configured.

pub mod assess;
pub mod checkout;
pub mod discard;
pub mod git;
pub mod gitdir;
pub mod include;
pub mod isolation;
pub mod legacy_worktree;
pub mod sandbox;
pub mod saved_files;
pub mod saved_session;
pub mod work_diff;
pub mod worktree;
