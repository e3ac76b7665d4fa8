//! Discarded work, saved. Before jackin deletes an isolated checkout that
//! holds unfinished work (what [`assess`](crate::assess) calls unfinished), it saves that
//! work under `$JACKIN_HOME/discarded/<save>/`, where the operator can get
//! it back until the retention passes (`discardRetention` in `config.yaml`,
//! 7 days by default; the sweeps remove it after that). Every discard goes
//! through here: the purge's `RemoveCheckouts` step saves first and deletes
//! only what was saved; if the save fails, nothing is deleted.
//!
//! A save is one directory per discarded unit, named `<instance>-<unit id>`:
//! - `record.json`: the instance, when, and for each checkout what was
//!   saved (names and counts, commits by id);
//! - `<checkout>.bundle`: a git bundle of the commits the checkout's work
//!   needs beyond its base commit (which the host repository holds).
//!
//! For each checkout the work is kept as commits:
//! - the files: a commit `work` whose tree is the checkout's `HEAD` with
//!   every uncommitted, untracked and ignored file as it was (and deleted
//!   ones gone); its parents are `HEAD` and `index`, a commit of what was
//!   staged, as `git stash` makes them;
//! - its branches, stash entries, tags and other refs that the host
//!   repository does not hold as they are, and `HEAD`.
//!
//! The checkout is the agent's, and so is its `.git`. jackin reads its refs
//! and stash only through confined git (as the assessment does), and builds
//! the save in a repository of its own: `git --git-dir=<jackin's>
//! --work-tree=<the checkout>`, whose config is jackin's, whose
//! `info/attributes` turns every filter and conversion off, whose objects
//! borrow (as alternates, read-only) the checkout's objects, and where
//! every git is confined: it executes nothing but git and writes nothing but
//! the save. The files themselves are copied by jackin, not git: every path
//! is opened beneath the checkout with no link followed anywhere on the
//! way (`openat2`), a symbolic link is saved as a link (what it says, never
//! what it points at), a FIFO, socket or device is not saved, and the sizes
//! are capped ([`MAX_FILE_BYTES`], [`MAX_SAVED_BYTES`],
//! [`MAX_SAVED_FILES`]). What is not saved is listed with why. When git
//! cannot read the checkout at all (its `.git` is not one jackin made, a
//! config git cannot parse), every file of the checkout is saved as it is,
//! without history.
//!
//! [`restore`] brings a save back: into the host repository as branches
//! under `jackin/restored/<save>/`, or as a new checkout directory that is
//! the discarded one again (files, staged state, branches, stash, `HEAD`),
//! or ([`restore_into_unit`]) in a session made again, in its unit's clone
//! and worktree checkouts. It never writes into a directory it did not make just then,
//! and the saved objects reach a repository only through a confined `git
//! index-pack --strict`.
//!
//! The parts, each with one job:
//! - `index`: the saves as records on disk: [`Save`] and what it says of
//!   each checkout, the saves' names and directories, listing, finding,
//!   expiring and removing them;
//! - `save`: saving a unit's checkouts ([`save_before_discard`],
//!   [`save_where`]) and its conversation ([`save_session`]);
//! - `collect`: what git says of a checkout, read confined, and which of
//!   its paths hold work to save;
//! - `scratch`: jackin's own repository that a save is built in;
//! - `pins`: the refs a save holds in host repositories for its bundles;
//! - `restore`: bringing a save back ([`restore`]).
//!
//! Errors say what happened and, where the way forward is a `jackin`
//! command, name it (a refusal names the command that lists the saves, or
//! the flag that picks one checkout), so the operator can act on the same
//! text in a status condition, an event or a terminal.

pub use crate::saved_files::{
    MAX_FILE_BYTES, MAX_LISTED, MAX_SAVED_BYTES, MAX_SAVED_FILES, SavedFiles,
};

mod collect;
mod error;
mod index;
mod pins;
mod restore;
mod save;
mod scratch;
#[cfg(test)]
mod tests;

pub use error::DiscardError;
pub use index::{
    Restored, RestoredInto, Save, SavedCheckout, SavedRef, expired, expires_at, find, list,
    mark_restored, remove, save_dir, save_name,
};
pub use restore::{restore, restore_into_unit};
pub use save::{Saved, save_before_discard, save_session, save_where};
