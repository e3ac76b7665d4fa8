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
//!
//! An agent that reports its own state (claude's hooks run jackin's
//! `report` program, which writes one word and a time into the unit's
//! state) is judged by that report first: it says at once what a screen
//! says only after the threshold, and tells a question from a quiet build.
//! A report goes with the container's start (the entry wrapper removes it),
//! and output well after it hands the judgement back to the screen: an
//! agent that did not report its latest turn is not held to an old word.

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

/// What an agent reported of itself, by jackin's `report` program.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reported {
    /// A turn is under way (a prompt was submitted).
    Working,
    /// It waits at its prompt.
    NeedsInput,
    /// It asks to be allowed a tool call.
    NeedsPermission,
    /// A turn ended: the answer is there, and the prompt waits.
    TurnDone,
    /// Its session ended (the container may still be closing).
    Ended,
}

impl Reported {
    /// The word the report is written with.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Working => "working",
            Self::NeedsInput => "needs-input",
            Self::NeedsPermission => "needs-permission",
            Self::TurnDone => "turn-done",
            Self::Ended => "ended",
        }
    }

    fn from_word(word: &str) -> Option<Self> {
        [
            Self::Working,
            Self::NeedsInput,
            Self::NeedsPermission,
            Self::TurnDone,
            Self::Ended,
        ]
        .into_iter()
        .find(|r| r.as_str() == word)
    }
}

/// A report and when it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Report {
    pub state: Reported,
    pub at: Timestamp,
}

/// The most a report file holds: one word, a space, seconds, a newline.
pub const MAX_REPORT_BYTES: u64 = 64;

/// Output this long after a report is the agent finishing what the report
/// announced (claude draws its prompt after its Stop hook); later output
/// is news the report does not cover.
pub const REPORT_GRACE: Duration = Duration::from_secs(5);

/// Reads a report as the `report` program writes it (`WORD SECONDS\n`).
/// The agent can write the file: anything else is no report.
pub fn parse_report(bytes: &[u8]) -> Option<Report> {
    let text = std::str::from_utf8(bytes).ok()?;
    let (word, seconds) = text.strip_suffix('\n')?.split_once(' ')?;
    if seconds.is_empty() || !seconds.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let at = Timestamp::from_second(seconds.parse().ok()?).ok()?;
    Some(Report {
        state: Reported::from_word(word)?,
        at,
    })
}

/// What decided an instance's attention.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// Its phase alone: it does not run.
    Phase,
    /// The agent's own report.
    Report(Reported),
    /// Its screen: output, counters and the threshold.
    Screen,
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
    /// The agent's report of its state in this container's run, if any.
    pub report: Option<Report>,
}

/// What `observed` asks of the operator at `now`, given the workspace's
/// threshold. `None` while jackin itself is bringing the instance up or
/// down (`Pending`, `Launching`, `Purging`, or no phase yet).
pub fn decide(observed: &Observed, now: Timestamp, needs_you_after: Duration) -> Option<Attention> {
    decide_with_source(observed, now, needs_you_after).map(|(attention, _)| attention)
}

/// [`decide`], with what decided it.
pub fn decide_with_source(
    observed: &Observed,
    now: Timestamp,
    needs_you_after: Duration,
) -> Option<(Attention, Source)> {
    let by_phase = match observed.phase? {
        InstancePhase::Running => None,
        InstancePhase::Kept => Some(Attention::Kept),
        InstancePhase::Exited => Some(Attention::Ended),
        InstancePhase::Crashed | InstancePhase::Failed => Some(Attention::Failed),
        InstancePhase::Pending | InstancePhase::Launching | InstancePhase::Purging => return None,
    };
    if let Some(attention) = by_phase {
        return Some((attention, Source::Phase));
    }
    if let Some(report) = observed
        .report
        .filter(|r| still_holds(r, observed.last_output))
    {
        let attention = match report.state {
            Reported::Working => Attention::Working,
            Reported::Ended => Attention::Idle,
            _ if observed.attached => Attention::Idle,
            _ => Attention::NeedsYou,
        };
        return Some((attention, Source::Report(report.state)));
    }
    Some((by_screen(observed, now, needs_you_after), Source::Screen))
}

/// Whether a report still says what the agent does: no output came well
/// after it.
fn still_holds(report: &Report, last_output: Option<Timestamp>) -> bool {
    let grace = jiff::SignedDuration::try_from(REPORT_GRACE).unwrap_or_default();
    last_output.is_none_or(|printed| printed <= report.at + grace)
}

/// The screen's judgement of a running agent: output, counters, threshold.
fn by_screen(observed: &Observed, now: Timestamp, needs_you_after: Duration) -> Attention {
    if observed.moved {
        return Attention::Working;
    }
    let Some(printed) = observed.last_output else {
        return Attention::Idle;
    };
    let quiet = Duration::try_from(now.duration_since(printed)).unwrap_or_default();
    match quiet <= needs_you_after {
        true => Attention::Working,
        false if observed.attached => Attention::Idle,
        false => Attention::NeedsYou,
    }
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
            report: None,
        }
    }

    /// A report wins over the screen while no output came well after it;
    /// the operator attached makes a waiting agent idle, as on the screen.
    #[test]
    fn a_fresh_report_decides_and_later_output_hands_back_to_the_screen() {
        use Attention::*;
        use Reported as R;
        let now = at(100);
        let reported = |state, when, attached, printed: Option<i64>, moved| Observed {
            report: Some(Report {
                state,
                at: at(when),
            }),
            ..running(attached, printed, moved)
        };
        let by = Source::Report;
        for (observed, expected) in [
            // At its prompt a second ago: needs you at once, however busy.
            (
                reported(R::NeedsInput, 99, false, None, true),
                (NeedsYou, by(R::NeedsInput)),
            ),
            (
                reported(R::TurnDone, 90, false, Some(93), true),
                (NeedsYou, by(R::TurnDone)),
            ),
            (
                reported(R::NeedsPermission, 90, true, None, false),
                (Idle, by(R::NeedsPermission)),
            ),
            // A turn under way though quiet for longer than the threshold.
            (
                reported(R::Working, 10, false, Some(10), false),
                (Working, by(R::Working)),
            ),
            // Output well after the report: the screen decides.
            (
                reported(R::TurnDone, 50, false, Some(90), false),
                (Working, Source::Screen),
            ),
            (
                reported(R::Working, 10, false, Some(60), false),
                (NeedsYou, Source::Screen),
            ),
        ] {
            let decided = decide_with_source(&observed, now, THRESHOLD);
            assert_eq!(decided, Some(expected), "{observed:?}");
        }
        // Not running: the phase, whatever was reported.
        let kept = Observed {
            phase: Some(InstancePhase::Kept),
            ..reported(R::Working, 99, false, None, false)
        };
        let decided = decide_with_source(&kept, now, THRESHOLD);
        assert_eq!(decided, Some((Kept, Source::Phase)));
    }

    /// The report file is the agent's to write: only the program's own
    /// form reads as a report.
    #[test]
    fn only_a_report_as_the_program_writes_it_is_read() {
        assert_eq!(
            parse_report(b"needs-permission 1700000000\n"),
            Some(Report {
                state: Reported::NeedsPermission,
                at: at(0)
            })
        );
        for bad in [
            &b"needs-permission 1700000000"[..],
            b"NEEDS-INPUT 1700000000\n",
            b"working  1700000000\n",
            b"working +1700000000\n",
            b"working 1700000000 extra\n",
            b"\x1b[31mworking 1700000000\n",
            b"working 99999999999999999999\n",
            b"\xff\xfe 1\n",
            b"",
        ] {
            assert_eq!(parse_report(bad), None, "{bad:?}");
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
