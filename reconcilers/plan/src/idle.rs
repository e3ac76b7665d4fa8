//! Idle hooks, decided: when an agent counts as idle, when its hooks are
//! due, and what they run. Pure; the controller's idle watch observes and
//! acts (`controller/src/idle.rs`).
//!
//! An agent is idle while nobody is attached, it writes no output, its
//! container uses next to no CPU, its processes write nothing (to files or
//! anywhere else), and its network traffic stays under a small floor. Any
//! of those is activity, and activity ends the idle stretch. The hooks are
//! due `after` into a stretch, and again every `every` while it lasts. The
//! stretch's start and the last run are kept in `status.idle`, so a
//! restarted controller runs the next one on time, and only once.
//!
//! Writes are counted twice over, because neither count sees them all: the
//! engine's block I/O counter (one stats call, with the CPU time and the
//! network bytes) sees only what the kernel charges to the container, at
//! writeback (seconds to half a minute after the write) and not at all
//! under cgroup v1 or FUSE storage; the bytes the container's own processes
//! passed to `write` (`wchar` in `/proc/<pid>/io`, read by [`PROBE_SCRIPT`]
//! run in the container) see every write at once. The probe also sums the
//! CPU time of the container's own processes, which, unlike the engine's
//! counter, leaves out the idle commands (run with `docker exec`, they are
//! not the agent's processes): after the hooks, only that is read.

use std::time::Duration;

use jackin_api::instance::{IdleStatus, Recipe};
use jackin_api::validate;
use jackin_api::workspace::{IdlePolicy, RoleCommands};
use jiff::{SignedDuration, Timestamp};

use crate::marker::HOOK_PATH;

/// What a running container has used since it started, from its own
/// counters, as one stats call reports them. Each only grows while the
/// container runs; a new container starts from zero.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Usage {
    /// CPU time, in nanoseconds.
    pub cpu_nanos: u64,
    /// Bytes written to block devices, as the block I/O controller counts
    /// them: where the kernel charges the writes to the container (cgroup
    /// v2 at writeback). Zero where it does not (cgroup v1, FUSE storage).
    pub disk_written: u64,
    /// Bytes received and sent on all its networks.
    pub net_bytes: u64,
    /// Memory in use now, in bytes (not a counter).
    pub memory: u64,
}

/// The share of one core below which a container counts as idle.
pub const BUSY_CPU_SHARE: f64 = 0.05;

/// Network traffic between two looks at or below this many bytes, sent and
/// received, is the network's own chatter (neighbour discovery, ARP), not
/// the agent at work; a model's streamed reply is more within seconds.
pub const NET_FLOOR_BYTES: u64 = 4096;

/// Clock ticks per second in `/proc/<pid>/stat` (`USER_HZ`): 100 on Linux.
const TICKS_PER_SECOND: u64 = 100;

/// Sums, over the container's processes but the probe itself, the bytes
/// passed to `write` (`wchar`: files, pipes, terminals, at the call, not at
/// writeback) and the CPU ticks (user and system, own and of reaped
/// children, so a process that ends is not lost: its parent counts it).
/// Run with `sh -c` in the agent's container as its user; processes it may
/// not read are left out. Shell builtins only, one process.
pub const PROBE_SCRIPT: &str = r#"w=0 t=0
for p in /proc/[0-9]*; do
  [ "$p" = "/proc/$$" ] && continue
  while read -r k v; do
    [ "$k" = wchar: ] && w=$((w + v))
  done 2>/dev/null <"$p/io"
  read -r s 2>/dev/null <"$p/stat" || continue
  set -- ${s##*") "}
  [ $# -ge 15 ] && t=$((t + ${12} + ${13} + ${14} + ${15}))
done
echo "jackin-activity $w $t"
"#;

/// The argv that runs [`PROBE_SCRIPT`] in the container.
pub fn probe_argv() -> Vec<String> {
    vec!["/bin/sh".into(), "-c".into(), PROBE_SCRIPT.into()]
}

/// What the probe counted of the container's own processes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AgentCounters {
    /// Bytes passed to `write`.
    pub written: u64,
    /// CPU time, in clock ticks.
    pub cpu_ticks: u64,
}

/// The probe's report, from the last line of its output. The agent can
/// change what runs as `/bin/sh` in its container, so anything but the
/// probe's own line is no report (and costs the agent only its own idle
/// hooks).
pub fn parse_probe(output: &str) -> Option<AgentCounters> {
    let line = output.lines().rev().find(|l| !l.trim().is_empty())?;
    let mut words = line.split_whitespace();
    if words.next()? != "jackin-activity" {
        return None;
    }
    let written = words.next()?.parse().ok()?;
    let cpu_ticks = words.next()?.parse().ok()?;
    words
        .next()
        .is_none()
        .then_some(AgentCounters { written, cpu_ticks })
}

/// One look's counters, and when they were read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sample {
    pub at: Timestamp,
    /// The engine's counters; `None` when it reported none.
    pub usage: Option<Usage>,
    /// The probe's; `None` when it could not run or said something else.
    pub agent: Option<AgentCounters>,
}

/// What two samples are compared over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Window {
    /// Between two looks: every counter is the agent's.
    Looks,
    /// Over the idle commands' run: the engine's CPU time and block I/O
    /// count the commands' own work, so CPU and writes are read from the
    /// agent's own processes only. The network counts the commands' traffic
    /// too; traffic is still read, since a wrong "active" only postpones a
    /// restart, while a wrong "idle" ends live work.
    Hooks,
}

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
    /// The agent wrote (files or anything else) since the last look.
    pub wrote: bool,
    /// More than [`NET_FLOOR_BYTES`] crossed its networks since the last
    /// look.
    pub network: bool,
}

impl Seen {
    pub fn active(&self) -> bool {
        self.attached || self.output || self.busy || self.wrote || self.network
    }

    /// The kinds of activity found, in words, for events.
    pub fn what(&self) -> String {
        [
            (self.output, "output"),
            (self.attached, "an attached terminal"),
            (self.busy, "CPU"),
            (self.wrote, "writes"),
            (self.network, "network traffic"),
        ]
        .iter()
        .filter(|(found, _)| *found)
        .map(|(_, word)| *word)
        .collect::<Vec<_>>()
        .join(", ")
    }
}

/// What moved between two samples of one container, over `window`: CPU,
/// writes and network traffic (attachment and output are looked at
/// apart). Counters that went back (a new container) moved nothing.
pub fn moved(before: &Sample, after: &Sample, window: Window) -> Seen {
    let grew = |of: fn(&Usage) -> u64| match (before.usage, after.usage) {
        (Some(b), Some(a)) => of(&a).saturating_sub(of(&b)),
        _ => 0,
    };
    let agent = match (before.agent, after.agent) {
        (Some(b), Some(a)) => Some((
            a.written.saturating_sub(b.written),
            a.cpu_ticks.saturating_sub(b.cpu_ticks),
        )),
        _ => None,
    };
    let written_by_agent = agent.is_some_and(|(written, _)| written > 0);
    let span = (before.at, after.at);
    let (busy, wrote) = match window {
        Window::Looks => {
            let cpu = match (before.usage, after.usage) {
                (Some(b), Some(a)) => busy((b.cpu_nanos, span.0), (a.cpu_nanos, span.1)),
                _ => false,
            };
            (cpu, grew(|u| u.disk_written) > 0 || written_by_agent)
        }
        Window::Hooks => {
            let cpu = agent.is_some_and(|(_, ticks)| {
                let nanos = ticks.saturating_mul(1_000_000_000 / TICKS_PER_SECOND);
                busy((0, span.0), (nanos, span.1))
            });
            (cpu, written_by_agent)
        }
    };
    Seen {
        busy,
        wrote,
        network: grew(|u| u.net_bytes) > NET_FLOOR_BYTES,
        ..Seen::default()
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
        wrote: false,
        network: false,
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
            Seen {
                wrote: true,
                ..QUIET
            },
            Seen {
                network: true,
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

    fn sample(seconds: i64, usage: Usage, agent: Option<AgentCounters>) -> Sample {
        Sample {
            at: at(seconds),
            usage: Some(usage),
            agent,
        }
    }

    const STILL: Usage = Usage {
        cpu_nanos: 1_000_000_000,
        disk_written: 1 << 20,
        net_bytes: 1 << 20,
        memory: 1 << 20,
    };

    #[test]
    fn writes_traffic_and_cpu_are_activity_and_background_chatter_is_not() {
        let before = sample(0, STILL, Some(AgentCounters::default()));
        // Nothing moved; 2 KiB of chatter over 10 s is under the floor.
        let chatter = Usage {
            net_bytes: STILL.net_bytes + 2048,
            cpu_nanos: STILL.cpu_nanos + 1_000_000,
            ..STILL
        };
        let after = sample(10, chatter, Some(AgentCounters::default()));
        assert_eq!(moved(&before, &after, Window::Looks), QUIET);
        // One line appended to a file: the agent's own write count sees it
        // at once, where the block I/O counter may not.
        let one_line = Some(AgentCounters {
            written: 8,
            cpu_ticks: 0,
        });
        let after = sample(10, STILL, one_line);
        assert!(moved(&before, &after, Window::Looks).wrote);
        // Block I/O charged to the container, without a probe.
        let flushed = Usage {
            disk_written: STILL.disk_written + 4096,
            ..STILL
        };
        let (b, a) = (sample(0, STILL, None), sample(10, flushed, None));
        assert!(moved(&b, &a, Window::Looks).wrote);
        // A streamed reply.
        let streamed = Usage {
            net_bytes: STILL.net_bytes + 64 * 1024,
            ..STILL
        };
        assert!(moved(&b, &sample(10, streamed, None), Window::Looks).network);
        // Half a core.
        let working = Usage {
            cpu_nanos: STILL.cpu_nanos + 5_000_000_000,
            ..STILL
        };
        assert!(moved(&b, &sample(10, working, None), Window::Looks).busy);
        // A new container's counters start again: nothing moved.
        let fresh = Usage::default();
        assert_eq!(moved(&b, &sample(10, fresh, None), Window::Looks), QUIET);
    }

    #[test]
    fn over_the_hooks_only_the_agents_own_processes_count_for_cpu_and_writes() {
        let before = sample(0, STILL, Some(AgentCounters::default()));
        // The hooks used 5 s of CPU and wrote to disk; the agent's own
        // processes did nothing.
        let hooks_worked = Usage {
            cpu_nanos: STILL.cpu_nanos + 5_000_000_000,
            disk_written: STILL.disk_written + (1 << 20),
            ..STILL
        };
        let after = sample(8, hooks_worked, Some(AgentCounters::default()));
        assert_eq!(moved(&before, &after, Window::Hooks), QUIET);
        assert!(moved(&before, &after, Window::Looks).busy);
        // The agent's processes used 1 s of CPU over 8 s: busy.
        let agent_worked = Some(AgentCounters {
            written: 0,
            cpu_ticks: 100,
        });
        let after = sample(8, STILL, agent_worked);
        assert!(moved(&before, &after, Window::Hooks).busy);
        // ... or wrote.
        let agent_wrote = Some(AgentCounters {
            written: 1,
            cpu_ticks: 0,
        });
        assert!(moved(&before, &sample(8, STILL, agent_wrote), Window::Hooks).wrote);
    }

    #[test]
    fn only_the_probes_own_line_is_a_report() {
        assert_eq!(
            parse_probe("jackin-activity 120 37\n"),
            Some(AgentCounters {
                written: 120,
                cpu_ticks: 37
            })
        );
        for text in [
            "",
            "jackin-activity 1\n",
            "jackin-activity 1 2 3\n",
            "jackin-activity -1 2\n",
            "something else 1 2\n",
            "jackin-activity 1 2\nsh: noise\n",
        ] {
            assert_eq!(parse_probe(text), None, "{text:?}");
        }
        let seen = Seen {
            output: true,
            wrote: true,
            ..QUIET
        };
        assert_eq!(seen.what(), "output, writes");
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
