//! What happens when an agent ends its session: the workspace's exit policy
//! applied to how the session ended and what its isolated checkouts hold.
//! A pure function, so the whole matrix is a unit test.
//!
//! Only a session the agent ended itself comes here. A stop that jackin, the
//! operator or the engine caused (a `Kept` teardown, `docker stop` or
//! `kill`, an engine shutdown, the OOM killer) never does: the caller tells
//! them apart from the completion marker and the engine's state.
//!
//! | how it ended        | policy | checkouts        | operator | outcome                         |
//! |---------------------|--------|------------------|----------|---------------------------------|
//! | non-zero exit       | any    | any              | any      | preserved as `Crashed`, resumable |
//! | exit 0              | clean  | any              | any      | purged (the policy acknowledges) |
//! | exit 0              | keep   | any              | any      | kept                            |
//! | exit 0              | ask    | all safe         | any      | purged, without a question      |
//! | exit 0              | ask    | unfinished work  | attached | ask (screens A and B)           |
//! | exit 0              | ask    | unfinished work  | nobody   | kept, reason `NonInteractive`   |

use jackin_api::instance::MountStatus;
use jackin_api::workspace::ExitPolicy;

use crate::view::has_unfinished_work;

/// What to do with an instance whose agent ended its session.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ExitAction {
    /// Purge it; `acknowledge` when the policy itself agrees to discard the
    /// unfinished work the checkouts hold.
    Purge { acknowledge: bool },
    /// Keep it, resumable; `non_interactive` when jackin would have asked
    /// but nobody was there to answer.
    Keep { non_interactive: bool },
    /// Ask the operator (unfinished work, someone attached).
    Ask,
    /// A failed session: keep the container and its state as they are.
    Preserve,
}

impl std::fmt::Display for ExitAction {
    /// What was decided, in words, for events and messages.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Purge { acknowledge: false } => "clean up (nothing unfinished)",
            Self::Purge { acknowledge: true } => "clean up, discarding the unfinished work",
            Self::Keep {
                non_interactive: false,
            } => "keep the session",
            Self::Keep {
                non_interactive: true,
            } => "keep the session (unfinished work, and nobody attached to ask)",
            Self::Ask => "ask the operator (unfinished work)",
            Self::Preserve => "preserve the failed session as it is",
        })
    }
}

/// The exit policy's decision for a session the agent ended with
/// `exit_code`.
pub fn on_exit(
    policy: ExitPolicy,
    exit_code: i64,
    mounts: &[MountStatus],
    interactive: bool,
) -> ExitAction {
    if exit_code != 0 {
        return ExitAction::Preserve;
    }
    let unfinished = mounts.iter().any(has_unfinished_work);
    match policy {
        ExitPolicy::Clean => ExitAction::Purge {
            acknowledge: unfinished,
        },
        ExitPolicy::Keep => ExitAction::Keep {
            non_interactive: false,
        },
        ExitPolicy::Ask if !unfinished => ExitAction::Purge { acknowledge: false },
        ExitPolicy::Ask if interactive => ExitAction::Ask,
        ExitPolicy::Ask => ExitAction::Keep {
            non_interactive: true,
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::instance::Isolation;

    fn mount(dirty: bool, unpushed: bool) -> MountStatus {
        MountStatus {
            dst: "/w".into(),
            src: "/src".into(),
            isolation: Isolation::Worktree,
            path: "/x".into(),
            dirty_files: if dirty { vec!["?? a".into()] } else { vec![] },
            unpushed_branches: if unpushed {
                vec!["b (1 ahead)".into()]
            } else {
                vec![]
            },
            digest: "d".into(),
            left_entry: None,
            included: Vec::new(),
            not_included: Vec::new(),
        }
    }

    /// Every combination of policy × checkouts × exit × operator.
    #[test]
    fn the_whole_matrix() {
        use ExitAction::*;
        let checkouts = [
            ("clean", vec![mount(false, false)]),
            ("dirty", vec![mount(true, false)]),
            ("unpushed", vec![mount(false, true)]),
        ];
        for policy in [ExitPolicy::Ask, ExitPolicy::Keep, ExitPolicy::Clean] {
            for (state, mounts) in &checkouts {
                for code in [0, 1] {
                    for interactive in [false, true] {
                        let got = on_exit(policy, code, mounts, interactive);
                        let clean = *state == "clean";
                        let expected = match (code, policy, clean, interactive) {
                            (1, ..) => Preserve,
                            (_, ExitPolicy::Clean, clean, _) => Purge {
                                acknowledge: !clean,
                            },
                            (_, ExitPolicy::Keep, ..) => Keep {
                                non_interactive: false,
                            },
                            (_, ExitPolicy::Ask, true, _) => Purge { acknowledge: false },
                            (_, ExitPolicy::Ask, false, true) => Ask,
                            (_, ExitPolicy::Ask, false, false) => Keep {
                                non_interactive: true,
                            },
                        };
                        assert_eq!(
                            got, expected,
                            "{policy:?} {state} exit {code} interactive {interactive}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn no_isolated_mounts_count_as_clean() {
        let got = on_exit(ExitPolicy::Ask, 0, &[], false);
        assert_eq!(got, ExitAction::Purge { acknowledge: false });
    }
}
