//! Idle hooks, decided: when an agent counts as idle, when its hooks are
//! due, and what they run. Pure; the controller's idle watch observes and
//! acts (`controller/src/idle.rs`).
//!
//! An agent is idle while nobody is attached, it writes no output and its
//! container uses next to no CPU. Any of those is activity, and activity
//! ends the idle stretch. The hooks are due `after` into a stretch, and
//! again every `every` while it lasts. The stretch's start and the last
//! run are kept in `status.idle`, so a restarted controller runs the next
//! one on time, and only once.

use std::time::Duration;

use jackin_api::instance::{IdleStatus, Recipe};
use jackin_api::validate;
use jackin_api::workspace::{IdlePolicy, RoleCommands};
use jiff::{SignedDuration, Timestamp};

use crate::session::HOOK_PATH;

/// The share of one core below which a container counts as idle.
pub const BUSY_CPU_SHARE: f64 = 0.05;

/// An idle policy's durations, parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    pub after: Duration,
    pub every: Duration,
    pub timeout: Duration,
}

impl Timing {
    /// The policy's durations; validation has checked them already.
    pub fn of(policy: &IdlePolicy) -> Result<Self, String> {
        let after = validate::duration(&policy.after)?;
        Ok(Self {
            after,
            every: match &policy.every {
                Some(every) => validate::duration(every)?,
                None => after,
            },
            timeout: validate::duration(&policy.timeout)?,
        })
    }

    /// How often the agent is looked at: often enough to see a stretch
    /// start within a third of the delay, never more than once a second,
    /// at least every five minutes. Output and CPU are measured over the
    /// whole time between looks, so a long interval misses neither; a run
    /// that falls due between looks is woken for on time.
    pub fn check_every(&self) -> Duration {
        (self.after.min(self.every) / 3).clamp(Duration::from_secs(1), Duration::from_secs(300))
    }
}

/// What a look at the agent found.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Seen {
    /// A terminal is attached (an operator who may type at any moment, or
    /// a prompt waiting for one).
    pub attached: bool,
    /// The agent wrote output since the last look.
    pub output: bool,
    /// The container used more than [`BUSY_CPU_SHARE`] of a core since the
    /// last look.
    pub busy: bool,
}

impl Seen {
    pub fn active(&self) -> bool {
        self.attached || self.output || self.busy
    }
}

/// Where the idle timer stands after a look.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    /// The agent is active: no stretch, nothing pending.
    Active,
    /// Idle since `since`; the hooks are due at `due`.
    Waiting { since: Timestamp, due: Timestamp },
    /// Idle since `since`, and the hooks are due now.
    Due { since: Timestamp },
}

/// The timer at `now`, from the stretch and runs in `status` and what a
/// look found.
pub fn next(timing: Timing, status: Option<&IdleStatus>, seen: Seen, now: Timestamp) -> Next {
    if seen.active() {
        return Next::Active;
    }
    let since = status.and_then(|s| s.since).unwrap_or(now);
    let later = |at: Timestamp, by: Duration| {
        at.checked_add(SignedDuration::try_from(by).unwrap_or(SignedDuration::MAX))
            .unwrap_or(Timestamp::MAX)
    };
    let due = match status.and_then(|s| s.last_run) {
        // Ran during this stretch: again `every` after that run.
        Some(ran) if ran >= since => later(ran, timing.every),
        _ => later(since, timing.after),
    };
    if now >= due {
        Next::Due { since }
    } else {
        Next::Waiting { since, due }
    }
}

/// Whether CPU use between two samples (nanoseconds of CPU time, and when
/// each was taken) is more than [`BUSY_CPU_SHARE`] of a core.
pub fn busy(before: (u64, Timestamp), after: (u64, Timestamp)) -> bool {
    let used = after.0.saturating_sub(before.0) as f64;
    let elapsed = after.1.duration_since(before.1).as_nanos() as f64;
    elapsed > 0.0 && used / elapsed > BUSY_CPU_SHARE
}

/// The commands to run, in order: the role's (pinned with the recipe),
/// unless the workspace skips them, then the workspace's.
pub fn commands(policy: &IdlePolicy, recipe: &Recipe) -> Vec<Vec<String>> {
    let role = match policy.role_commands {
        RoleCommands::Run => recipe.idle_commands.as_slice(),
        RoleCommands::Skip => &[],
    };
    role.iter().chain(&policy.commands).cloned().collect()
}

/// The argv that runs `command` in the container under the idle-hook
/// runner, which kills it (and all it started) after `timeout`.
pub fn hook_argv(timeout: Duration, command: &[String]) -> Vec<String> {
    let mut argv = vec![
        "/bin/sh".to_owned(),
        HOOK_PATH.to_owned(),
        timeout.as_secs().max(1).to_string(),
    ];
    argv.extend_from_slice(command);
    argv
}

#[cfg(test)]
mod tests {
    use super::*;

    fn timing() -> Timing {
        Timing {
            after: Duration::from_secs(300),
            every: Duration::from_secs(900),
            timeout: Duration::from_secs(60),
        }
    }

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    fn status(since: Option<i64>, last_run: Option<i64>) -> IdleStatus {
        IdleStatus {
            since: since.map(at),
            last_run: last_run.map(at),
            ..Default::default()
        }
    }

    const QUIET: Seen = Seen {
        attached: false,
        output: false,
        busy: false,
    };

    #[test]
    fn a_stretch_starts_runs_after_the_delay_then_every_interval() {
        // The first quiet look starts the stretch.
        assert_eq!(
            next(timing(), None, QUIET, at(0)),
            Next::Waiting {
                since: at(0),
                due: at(300)
            }
        );
        let idle = status(Some(0), None);
        assert_eq!(
            next(timing(), Some(&idle), QUIET, at(299)),
            Next::Waiting {
                since: at(0),
                due: at(300)
            }
        );
        assert_eq!(
            next(timing(), Some(&idle), QUIET, at(300)),
            Next::Due { since: at(0) }
        );
        // Ran at 301: again at 1201, not before.
        let ran = status(Some(0), Some(301));
        assert_eq!(
            next(timing(), Some(&ran), QUIET, at(1200)),
            Next::Waiting {
                since: at(0),
                due: at(1201)
            }
        );
        assert_eq!(
            next(timing(), Some(&ran), QUIET, at(1201)),
            Next::Due { since: at(0) }
        );
    }

    #[test]
    fn any_activity_ends_the_stretch() {
        let idle = status(Some(0), None);
        for seen in [
            Seen {
                attached: true,
                ..QUIET
            },
            Seen {
                output: true,
                ..QUIET
            },
            Seen {
                busy: true,
                ..QUIET
            },
        ] {
            assert_eq!(next(timing(), Some(&idle), seen, at(10_000)), Next::Active);
        }
        // A run of an earlier stretch does not count in a new one.
        let earlier = status(Some(5_000), Some(100));
        assert_eq!(
            next(timing(), Some(&earlier), QUIET, at(5_100)),
            Next::Waiting {
                since: at(5_000),
                due: at(5_300)
            }
        );
    }

    #[test]
    fn cpu_use_is_a_share_of_one_core() {
        // 10 ms of CPU over 1 s: 1 %, idle. 100 ms: 10 %, busy.
        assert!(!busy((0, at(0)), (10_000_000, at(1))));
        assert!(busy((0, at(0)), (100_000_000, at(1))));
        // A counter that went back (a new container) is not busy.
        assert!(!busy((500, at(0)), (10, at(1))));
    }

    #[test]
    fn the_roles_commands_run_first_unless_skipped() {
        let recipe = Recipe {
            idle_commands: vec![vec!["gradle".into(), "--stop".into()]],
            ..Default::default()
        };
        let mut policy = IdlePolicy {
            enabled: true,
            after: "5m".into(),
            every: None,
            timeout: "60s".into(),
            commands: vec![vec!["sync".into()]],
            role_commands: RoleCommands::Run,
            then: Default::default(),
        };
        assert_eq!(
            commands(&policy, &recipe),
            [vec!["gradle", "--stop"], vec!["sync"]]
        );
        policy.role_commands = RoleCommands::Skip;
        assert_eq!(commands(&policy, &recipe), [vec!["sync"]]);
        assert_eq!(
            hook_argv(Duration::from_secs(60), &policy.commands[0]),
            ["/bin/sh", "/jackin/bin/hook", "60", "sync"]
        );
        assert_eq!(
            Timing::of(&policy).unwrap().check_every(),
            Duration::from_secs(100)
        );
    }
}
