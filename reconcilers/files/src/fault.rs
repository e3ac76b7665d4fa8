//! Fault injection for tests: with `JACKIN_CRASH_AFTER=<point>`, a debug
//! build exits at once, without cleaning up, right after that point, as a
//! crash or SIGKILL would. The points are the kinds of plan steps (see
//! `Step::kind` in jackin-plan), passed after the
//! step and its status save, and the parts of the purge tail
//! (`finish-purge:unit-dir`, `…:sockets-dir`, `…:unit-lock`,
//! `…:index-row`), and in a publication of a worktree's branch,
//! `publish:host-ref-moved` (the host's branch moved, not yet recorded).
//! Release builds do not read the variable.

/// Exits with status 86 when `JACKIN_CRASH_AFTER` names `point`.
pub fn crash_point(point: &str) {
    if cfg!(debug_assertions) && std::env::var("JACKIN_CRASH_AFTER").is_ok_and(|p| p == point) {
        eprintln!("JACKIN_CRASH_AFTER: exiting after {point}");
        std::process::exit(86);
    }
}
