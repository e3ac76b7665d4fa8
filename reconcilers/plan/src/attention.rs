//! Attention, decided: whether an instance is at work, waits for its
//! operator, or has nothing to ask. Pure; `jackin top`, `get -o wide` and
//! the controller's notifications observe and show it.
//!
//! It reads what the idle watch reads (`idle.rs`): the attached lock, the
//! agent's output, and the container's counters compared with
//! [`crate::idle::moved`]. A running agent that wrote output within the
//! threshold, or used CPU or wrote since the last look, is `working`. One
//! that printed and then went quiet for longer than the threshold, with
//! nobody attached, `needs you`: the usual sign of an agent that asked a
//! question and waits for the answer. Quiet with a terminal attached (the
//! operator is there), or quiet without ever having printed, it is `idle`.

use std::time::Duration;

use jackin_api::instance::InstancePhase;
use jackin_api::validate;
use jackin_api::workspace::{DEFAULT_NEEDS_YOU_AFTER, WorkspaceSpec};
use jiff::Timestamp;

/// What an instance asks of its operator now.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Attention {
    /// Printed and went quiet, nobody attached: waiting for an answer.
    NeedsYou,
    /// Output, CPU or writes recently.
    Working,
    /// Running, quiet, and not waiting on anyone.
    Idle,
    /// Its session failed (crashed, or jackin could not bring it up).
    Failed,
    /// Its session ended.
    Ended,
    /// Kept: stopped, resumable.
    Kept,
}

impl Attention {
    /// As shown: `needs you`, `working`, …
    pub fn as_str(self) -> &'static str {
        match self {
            Self::NeedsYou => "needs you",
            Self::Working => "working",
            Self::Idle => "idle",
            Self::Failed => "failed",
            Self::Ended => "ended",
            Self::Kept => "kept",
        }
    }

    /// As a notification names it (`JACKIN_EVENT`): one word.
    pub fn event(self) -> &'static str {
        match self {
            Self::NeedsYou => "needs-you",
            other => other.as_str(),
        }
    }
}

impl std::fmt::Display for Attention {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One look at an instance.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Observed {
    pub phase: Option<InstancePhase>,
    /// A terminal is attached (the attached lock).
    pub attached: bool,
    /// When its running container last wrote output; `None` when it never
    /// did (or its log could not be read).
    pub last_output: Option<Timestamp>,
    /// CPU, writes or network traffic since the previous look
    /// ([`crate::idle::Seen::active`] of what [`crate::idle::moved`]
    /// found); `false` at a first look, which has nothing to compare.
    pub moved: bool,
}

/// What `observed` asks of the operator at `now`, given the workspace's
/// threshold. `None` while jackin itself is bringing the instance up or
/// down (`Pending`, `Launching`, `Purging`, or no phase yet).
pub fn decide(observed: &Observed, now: Timestamp, needs_you_after: Duration) -> Option<Attention> {
    match observed.phase? {
        InstancePhase::Running => {}
        InstancePhase::Kept => return Some(Attention::Kept),
        InstancePhase::Exited => return Some(Attention::Ended),
        InstancePhase::Crashed | InstancePhase::Failed => return Some(Attention::Failed),
        InstancePhase::Pending | InstancePhase::Launching | InstancePhase::Purging => return None,
    }
    if observed.moved {
        return Some(Attention::Working);
    }
    let Some(printed) = observed.last_output else {
        return Some(Attention::Idle);
    };
    let quiet = Duration::try_from(now.duration_since(printed)).unwrap_or_default();
    Some(match quiet <= needs_you_after {
        true => Attention::Working,
        false if observed.attached => Attention::Idle,
        false => Attention::NeedsYou,
    })
}

/// The workspace's threshold (`spec.needsYouAfter`), 30 s without one.
/// Validation has checked it; an unreadable one falls back to the default.
pub fn needs_you_after(workspace: Option<&WorkspaceSpec>) -> Duration {
    workspace
        .and_then(|ws| ws.needs_you_after.as_deref())
        .and_then(|after| validate::duration(after).ok())
        .unwrap_or_else(|| {
            validate::duration(DEFAULT_NEEDS_YOU_AFTER).expect("the default is a duration")
        })
}

/// Splits the last entry of a container's log, read with timestamps, into
/// when it was written and what it said. The engine puts an RFC 3339 time
/// and a space before each entry; anything else is no entry.
pub fn parse_last_output(log: &[u8]) -> Option<(Timestamp, &[u8])> {
    let space = log.iter().position(|b| *b == b' ')?;
    let at = std::str::from_utf8(&log[..space]).ok()?.parse().ok()?;
    Some((at, &log[space + 1..]))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(seconds: i64) -> Timestamp {
        Timestamp::from_second(1_700_000_000 + seconds).unwrap()
    }

    const THRESHOLD: Duration = Duration::from_secs(30);

    fn running(attached: bool, last_output: Option<i64>, moved: bool) -> Observed {
        Observed {
            phase: Some(InstancePhase::Running),
            attached,
            last_output: last_output.map(at),
            moved,
        }
    }

    #[test]
    fn the_decision_table() {
        use Attention::*;
        let now = at(100);
        for (observed, expected) in [
            // Printed 10 s ago: at work, attached or not.
            (running(false, Some(90), false), Some(Working)),
            (running(true, Some(90), false), Some(Working)),
            // Exactly at the threshold: still at work.
            (running(false, Some(70), false), Some(Working)),
            // Quiet for longer, nobody there: it waits for you.
            (running(false, Some(69), false), Some(NeedsYou)),
            // ... unless you are attached.
            (running(true, Some(69), false), Some(Idle)),
            // Quiet in its output but busy on CPU or disk: at work.
            (running(false, Some(0), true), Some(Working)),
            // Never printed: nothing to answer.
            (running(false, None, false), Some(Idle)),
            (running(false, None, true), Some(Working)),
        ] {
            assert_eq!(decide(&observed, now, THRESHOLD), expected, "{observed:?}");
        }
        for (phase, expected) in [
            (InstancePhase::Kept, Some(Kept)),
            (InstancePhase::Exited, Some(Ended)),
            (InstancePhase::Crashed, Some(Failed)),
            (InstancePhase::Failed, Some(Failed)),
            (InstancePhase::Pending, None),
            (InstancePhase::Launching, None),
            (InstancePhase::Purging, None),
        ] {
            // What a stopped container last printed changes nothing.
            let observed = Observed {
                phase: Some(phase),
                ..running(false, Some(0), true)
            };
            assert_eq!(decide(&observed, now, THRESHOLD), expected, "{phase:?}");
        }
        assert_eq!(decide(&Observed::default(), now, THRESHOLD), None);
    }

    #[test]
    fn the_threshold_is_the_workspaces_or_thirty_seconds() {
        let mut spec = WorkspaceSpec::default();
        assert_eq!(needs_you_after(None), THRESHOLD);
        assert_eq!(needs_you_after(Some(&spec)), THRESHOLD);
        spec.needs_you_after = Some("2m".into());
        assert_eq!(needs_you_after(Some(&spec)), Duration::from_secs(120));
    }

    #[test]
    fn an_event_is_one_word() {
        assert_eq!(Attention::NeedsYou.as_str(), "needs you");
        assert_eq!(Attention::NeedsYou.event(), "needs-you");
        assert_eq!(Attention::Ended.event(), "ended");
    }

    #[test]
    fn a_log_entry_splits_into_its_time_and_text() {
        let (when, text) =
            parse_last_output(b"2026-11-26T20:00:01.123456789Z waiting for you\r\n").unwrap();
        assert_eq!(when.as_second(), 1_795_723_201);
        assert_eq!(text, b"waiting for you\r\n");
        assert_eq!(parse_last_output(b"no time here"), None);
        assert_eq!(parse_last_output(b""), None);
    }
}
