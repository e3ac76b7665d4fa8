//! The use-cases the commands share, below them (as cargo's `ops/` sits
//! under its `commands/`): each is run by more than one command, or by a
//! command and `jackin top`'s keys. A use-case never calls a command, and
//! no command calls another: what two need is here.

pub mod attach;
pub mod container;
pub mod describe;
pub mod discarded;
pub mod exec;
pub mod launch;
pub mod logins;
pub mod preserved;
pub mod set_phases;
pub mod watch;
