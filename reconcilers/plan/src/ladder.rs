//! The resume ladder: which argv each start of the agent runs, so that every
//! restore brings back the agent's own conversation, not only its container.
//!
//! A container's argv is fixed when it is created and `docker start` runs it
//! again, so the choice cannot be made at creation. jackin writes a start
//! plan into the unit before every start (`bin/plan`, mounted read-only at
//! `/jackin/bin/plan`), and the entry wrapper walks it at each start of the
//! container: it runs the first rung, and when that exits non-zero within
//! the plan's grace period it reports a fallback and runs the next. The
//! rungs, best first:
//!
//! 1. the first start of a conversation jackin names: `minted` (launch +
//!    `mintArgs`), then `resumed-by-id`;
//! 2. later starts: `resumed-by-id` (launch + `resumeArgs`), then `minted`
//!    again (the first conversation may have left nothing to resume);
//! 3. for an agent that takes ids, `minted-anew`: a new conversation under
//!    a new id jackin minted before the start ([`mint_next_id`]) and
//!    records when the wrapper reports this rung (an id claude refuses both
//!    to resume and to mint again: defect R8). Such an agent is never asked
//!    to continue "its latest": that would run it under an id jackin does
//!    not know;
//! 4. for the others (and an id agent whose installed version lacks the
//!    mint arguments): `continue-requested` (launch + `continueArgs`), the
//!    agent continues its latest conversation if it has one, and decides
//!    that itself; then `fresh`: the launch argv alone, or the command as
//!    given.
//!
//! A rung the installed agent's version lacks (the entry's `version`
//! rule, probed once per image) is left out.
//!
//! The wrapper reports what it did in `state/agent-start` (the agent can
//! write `state/`, so the report is read like the completion marker: small,
//! regular, every line checked): each failed rung with its exit code and
//! the seconds it ran (its window in the engine's log, whose last line the
//! loop reports: `last_line`), and the last lines of its standard error in
//! `state/agent-start.<rung>.err`.
//!
//! The report of a start is awaited, not guessed from times: before a start the
//! last start's report is folded into the status and removed, and the status
//! marks a report as awaited ([`await_report`]), so the first report written is
//! this start's however its time compares with the object's. With each rung the
//! wrapper writes the second from which it can no longer fall back (`try RUNG
//! SECOND`); the status keeps it (`conversation.startSettlesAt`, also in the
//! index row), the no-op fast path looks at the instance once it has passed
//! ([`report_due`]), and the controller enqueues the instance for just after
//! it.
//!
//! Each reconcile folds the report into `status.conversation`, each new
//! fallback an `AgentFallback` event, told as refused or crashed ([`told`]:
//! whether its line names the conversation). A report whose rung is
//! `minted-anew` makes the id minted before the start the conversation's, first
//! of its ids (a `ConversationRenewed` event): the report names only the rung,
//! so the agent, which can write it, chooses no id. An event's line is what the
//! agent showed last on its terminal in that rung's window (the wrapper reports
//! the seconds each rung ran and waits for a fresh second before the next, so
//! that two windows never share one), read from the engine's log
//! ([`last_line`]); the tail of its standard error stands in when the log gives
//! nothing. The wrapper never takes the agent's standard output off its
//! terminal. A plan of one rung (strategy `none`) needs no report.

use jackin_api::agent::{Strategy, at_least, fill};
use jackin_api::instance::{Conversation, FallbackEnding, PinnedAgent, Recipe, StartKind};
use jiff::Timestamp;
use unicode_width::UnicodeWidthChar;

/// Seconds within which a rung that exits non-zero counts as not having
/// started (an unknown id, no conversation to continue), not as a session
/// that ran and failed.
pub const GRACE_SECS: u32 = 15;

/// The rungs of the next start, best first; the last always runs. A rung
/// the installed agent is too old for (see [`skipped_rungs`]) is left out.
pub fn ladder(
    recipe: &Recipe,
    conversation: Option<&Conversation>,
) -> Vec<(StartKind, Vec<String>)> {
    let launch = recipe.command.clone();
    let fresh = (StartKind::Fresh, launch.clone());
    let Some(agent) = &recipe.agent else {
        return vec![fresh];
    };
    let with = |args: &[String], id: &str| {
        let mut argv = launch.clone();
        argv.extend(fill(args, id));
        argv
    };
    let skipped: Vec<StartKind> = skipped_rungs(agent).into_iter().map(|(k, _)| k).collect();
    let started_before = conversation.is_some_and(|c| c.last_start.is_some());
    let mut rungs = Vec::new();
    if let (Strategy::Id, Some(id)) = (agent.strategy, conversation.and_then(|c| c.id.as_deref())) {
        let mint = (StartKind::Minted, with(&agent.spec.mint_args, id));
        let resume = (StartKind::ResumedById, with(&agent.spec.resume_args, id));
        // Both orders are safe: the agents refuse to mint an id that exists
        // (so a first start whose report never reached jackin resumes), and
        // to resume one that does not (so an id whose first conversation
        // left no transcript is minted again, not given up).
        if started_before {
            rungs.extend([resume, mint]);
        } else {
            rungs.extend([mint, resume]);
        }
    }
    // The last rung of an agent that takes ids: a new conversation under a
    // new id jackin minted (defect R8), so that the session never runs
    // under an id jackin does not know. Asking such an agent to continue
    // "its latest" would do just that (claude 2.1.332 starts a new
    // conversation when it finds none to continue), so that rung goes.
    // Without the mint arguments in the installed version, the ladder ends
    // as before: the latest conversation, then the launch alone.
    let renewal = conversation
        .filter(|_| agent.strategy == Strategy::Id && !skipped.contains(&StartKind::Minted))
        .and_then(|c| c.next_id.as_deref());
    let can_continue = agent.strategy != Strategy::None && !agent.spec.continue_args.is_empty();
    if renewal.is_none() && can_continue && (started_before || agent.strategy == Strategy::Id) {
        rungs.push((
            StartKind::ContinueRequested,
            with(&agent.spec.continue_args, ""),
        ));
    }
    rungs.retain(|(kind, _)| !skipped.contains(kind));
    match renewal {
        Some(new_id) => rungs.push((StartKind::MintedAnew, with(&agent.spec.mint_args, new_id))),
        None => rungs.push(fresh),
    }
    rungs
}

/// Records the id the next start's last rung gives a new conversation
/// (`minted-anew`), for an agent that takes ids: `fresh` makes it, a new
/// one at every start (the caller draws it at random: the planner does no
/// I/O), so that none an earlier start may have used unseen is offered
/// again. Made before the start, so that it is recorded whatever the agent
/// prints.
pub fn mint_next_id(conversation: &mut Conversation, fresh: impl FnOnce() -> String) {
    conversation.next_id =
        (conversation.strategy == Strategy::Id && conversation.id.is_some()).then(fresh);
}

/// The rungs the pinned agent's version is too old for, each with the
/// version it needs. Without a version found, none: the agent is tried.
pub fn skipped_rungs(agent: &PinnedAgent) -> Vec<(StartKind, String)> {
    let (Some(rule), Some(installed)) = (&agent.spec.version, &agent.version) else {
        return Vec::new();
    };
    let minimum = &rule.minimum;
    [
        (StartKind::Minted, &minimum.mint),
        (StartKind::ResumedById, &minimum.resume),
        (StartKind::ContinueRequested, &minimum.r#continue),
    ]
    .into_iter()
    .filter_map(|(kind, needs)| {
        let needs = needs.as_ref()?;
        (!at_least(installed, needs)).then(|| (kind, needs.clone()))
    })
    .collect()
}

/// The plan as the wrapper reads it: `grace N`, `waits` when the agent's
/// first prompt waits unreported (the wrapper reports `needs-input` as it
/// starts each rung), then per rung a `rung KIND` line followed by one
/// `arg VALUE` line per argv element. Validation keeps line breaks out of
/// every element, so each line is one element, read with `read -r` and
/// never evaluated by a shell.
pub fn render_plan(rungs: &[(StartKind, Vec<String>)], waits: bool) -> String {
    let mut out = format!(
        "# written by jackin before each start; read by the entry wrapper\ngrace {GRACE_SECS}\n"
    );
    if waits {
        out.push_str("waits\n");
    }
    for (kind, argv) in rungs {
        out.push_str(&format!("rung {kind}\n"));
        for arg in argv {
            debug_assert!(!arg.contains('\n'), "validation keeps line breaks out");
            out.push_str("arg ");
            out.push_str(arg);
            out.push('\n');
        }
    }
    out
}

/// What the wrapper reported of the last start.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartReport {
    /// The wrapper's stamp of the start (its clock, whole seconds, and its
    /// process id), unique enough to count each start once.
    pub stamp: String,
    /// Rungs that exited non-zero within the grace period, in order, with
    /// their exit code and the last line of their standard error.
    pub fallbacks: Vec<Fallback>,
    /// The rung that was started last (and runs, or ran).
    pub started: Option<StartKind>,
    /// The second (the wrapper's clock) from which `started` can no longer
    /// fall back: its grace period over, or its start for the last rung.
    /// `None` from a wrapper before it.
    pub settles_at: Option<i64>,
    /// When the report file was last changed, as read.
    pub modified: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fallback {
    pub rung: StartKind,
    pub exit_code: i64,
    /// The last line of its standard error.
    pub error: String,
    /// When it ran, in whole seconds since the epoch, first and last (the
    /// wrapper's clock, the host's): what it printed on its terminal is
    /// the engine's log in that window. `None` from a wrapper before it.
    pub window: Option<(i64, i64)>,
}

/// Reads the wrapper's start report from its text, if it holds a start.
/// Lines that do not parse are skipped: the agent may have written anything
/// there. `modified` is how the file looked when read (kept in the
/// report); `error_line` gives the last line of a failed rung's standard
/// error, which the wrapper keeps in a file of its own.
pub fn parse_report(
    text: &str,
    modified: Option<String>,
    mut error_line: impl FnMut(StartKind) -> String,
) -> Option<StartReport> {
    let mut report = StartReport::default();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        match words.as_slice() {
            ["start", stamp] if is_stamp(stamp) => {
                report = StartReport {
                    stamp: (*stamp).to_owned(),
                    modified: modified.clone(),
                    ..Default::default()
                };
            }
            ["try", rung, settles @ ..] => {
                report.started = StartKind::parse(rung);
                report.settles_at = match settles {
                    [at] => at.parse().ok(),
                    _ => None,
                };
            }
            ["fallback", rung, code, window @ ..] => {
                let window = match window {
                    [from, to] => from.parse().ok().zip(to.parse().ok()),
                    _ => None,
                };
                if let (Some(rung), Ok(exit_code)) = (StartKind::parse(rung), code.parse()) {
                    report.fallbacks.push(Fallback {
                        rung,
                        exit_code,
                        error: error_line(rung),
                        window,
                    });
                }
            }
            _ => {}
        }
    }
    (!report.stamp.is_empty()).then_some(report)
}

fn is_stamp(word: &str) -> bool {
    !word.is_empty()
        && word.len() <= 64
        && word.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
}

/// The longest error line kept, in characters.
const MAX_ERROR_CHARS: usize = 200;

/// The last line of a terminal's output that shows anything, made
/// printable and short: the agent's terminal sequences (claude colours its
/// errors: defect R10) go whole, not only their escape byte, and what other
/// control characters remain go too. Of a line redrawn in place (carriage
/// returns), the last drawing.
pub fn last_line(output: &[u8]) -> String {
    let text = String::from_utf8_lossy(output);
    let shown = |line: &str| -> String {
        let line = line
            .split('\r')
            .rfind(|part| !part.trim().is_empty())
            .unwrap_or_default();
        without_sequences(line)
            .chars()
            .filter(|c| !c.is_control())
            .take(MAX_ERROR_CHARS)
            .collect::<String>()
            .trim()
            .to_owned()
    };
    text.lines()
        .map(shown)
        .rfind(|line| !line.is_empty())
        .unwrap_or_default()
}

/// `text` without its terminal sequences (ECMA-48): a control sequence
/// (`ESC [` or the one-character CSI, parameters, then one final byte), an
/// operating system command or string (`ESC ]`, `ESC P`, `ESC _`, `ESC ^`,
/// up to BEL or `ESC \`), an escape with intermediate bytes (`ESC ( B`),
/// and any other two-byte escape.
fn without_sequences(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    // The column the cursor is at, counted as the terminal does from the
    // line's start (a wide character takes two): where a move to a column
    // lands.
    let mut column = 0usize;
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        let introducer = match c {
            '\u{1b}' => chars.next(),
            '\u{9b}' => Some('['),
            c => {
                out.push(c);
                column += c.width().unwrap_or(0);
                continue;
            }
        };
        match introducer {
            // A move of the cursor to the right stands for the blanks it
            // skips: agents that draw a line word by word move over the
            // spaces instead of printing them, by a count (`CSI n C`) or
            // to a column (`CSI n G`, `CSI n \``: claude 2.1.332).
            Some('[') => {
                let mut parameters = String::new();
                for c in chars.by_ref() {
                    if ('@'..='~').contains(&c) {
                        let n = parameters.parse().unwrap_or(1).clamp(1, MAX_ERROR_CHARS);
                        let blanks = match c {
                            'C' => n,
                            'G' | '`' => (n - 1).saturating_sub(column),
                            _ => 0,
                        };
                        out.extend(std::iter::repeat_n(' ', blanks));
                        column += blanks;
                        break;
                    }
                    parameters.push(c);
                }
            }
            Some(']' | 'P' | '_' | '^') => {
                while let Some(c) = chars.next() {
                    if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                        break;
                    }
                }
            }
            // An escape with intermediate bytes (`ESC ( B`): up to its
            // final byte.
            Some(' '..='/') => {
                for c in chars.by_ref() {
                    if ('0'..='~').contains(&c) {
                        break;
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// How a rung that ended within its grace period is told (defect SA4):
/// refused when its error line names the conversation (the id jackin gave
/// it, or the word conversation or session: claude's "No conversation
/// found with session ID …" and "Session ID … is already in use", codex's
/// "No saved session"), else crashed, an empty line included: an agent
/// that says nothing of the conversation did not refuse it.
pub fn told(error: &str, id: Option<&str>) -> FallbackEnding {
    let lower = error.to_lowercase();
    let names_id = id.is_some_and(|id| !id.is_empty() && error.contains(id));
    match names_id || lower.contains("conversation") || lower.contains("session") {
        true => FallbackEnding::Refused,
        false => FallbackEnding::Crashed,
    }
}

/// Folds a report into the conversation's status, as read at `now`.
/// Returns the fallbacks not seen before, for events: a start is read while
/// it runs, so its fallbacks may arrive over several reads. A rung still in
/// its grace period is recorded as the start so far, and when it settles
/// is kept ([`Conversation::start_settles_at`]), for the pass after it to
/// read the report again.
pub fn fold_report(
    conversation: &mut Conversation,
    report: &StartReport,
    now: Timestamp,
) -> Vec<Fallback> {
    let seen = match conversation.start_stamp.as_deref() == Some(report.stamp.as_str()) {
        true => conversation.start_fallbacks as usize,
        false => 0,
    };
    let new: Vec<Fallback> = report.fallbacks.iter().skip(seen).cloned().collect();
    conversation.start_stamp = Some(report.stamp.clone());
    conversation.start_fallbacks = report.fallbacks.len() as u32;
    conversation.report_modified = report.modified.clone();
    conversation.fallbacks += new.len() as u32;
    conversation.last_start = report.started.or(conversation.last_start);
    // The last rung ran: the conversation lives on under the id jackin
    // minted for it before the start. The report only names the rung; the
    // id is jackin's own, so the agent cannot choose one.
    if report.started == Some(StartKind::MintedAnew)
        && let Some(new_id) = conversation.next_id.take()
    {
        conversation.adopt_id(new_id);
    }
    conversation.start_settles_at = match report.started {
        // The rung the wrapper runs now: settled once its second is past.
        Some(_) => report
            .settles_at
            .and_then(|at| Timestamp::from_second(at).ok())
            .filter(|at| *at >= now),
        // Read between the wrapper's `start` and its `try`: what jackin
        // awaits since the start is still awaited.
        None => conversation.start_settles_at,
    };
    new
}

/// What the status knows of a start about to be made with `rungs`: with
/// one way to start, how it starts (no report comes); with more, that its
/// report is awaited, to be read in the first pass after the grace period,
/// whenever the wrapper writes it.
pub fn note_start(
    conversation: &mut Conversation,
    rungs: &[(StartKind, Vec<String>)],
    now: Timestamp,
) {
    match rungs {
        [(only, _)] => {
            conversation.last_start = Some(*only);
            conversation.start_settles_at = None;
        }
        _ if conversation.strategy != Strategy::None => await_report(conversation, now),
        _ => {}
    }
}

/// When jackin awaits a start's report before the start is made: the first
/// pass after the grace period reads it, even if no report is written
/// before this pass saves the status (then the report looks older than the
/// object: defect R13). The wrapper's own time, once it reports, replaces
/// it.
pub fn await_report(conversation: &mut Conversation, now: Timestamp) {
    conversation.start_settles_at = now
        .checked_add(jiff::SignedDuration::from_secs(i64::from(GRACE_SECS)))
        .ok();
    // Whatever report is there is an earlier start's, taken in already:
    // any report from now on is this start's, not seen yet.
    conversation.report_modified = Some(AWAITED.to_owned());
}

/// `report_modified` of a start whose report jackin has not read yet: it
/// matches no report's look, so the first one written is unseen.
const AWAITED: &str = "awaited";

/// Whether a pass at `now` must read the start report again: the rung that
/// runs was still in its grace period when the status last took it in.
pub fn report_due(conversation_settles_at: Option<Timestamp>, now: Timestamp) -> bool {
    conversation_settles_at.is_some_and(|at| now > at)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::agent::{AgentSpec, builtin};
    use jackin_api::instance::PinnedAgent;

    fn recipe(agent: &str, strategy: Strategy) -> Recipe {
        let spec: AgentSpec = builtin()
            .into_iter()
            .find(|a| a.metadata.name == agent)
            .unwrap()
            .spec;
        Recipe {
            command: spec.launch.clone(),
            agent: Some(PinnedAgent {
                name: agent.into(),
                source: "builtin".into(),
                spec,
                strategy,
                version: None,
            }),
            ..Default::default()
        }
    }

    fn conversation(id: Option<&str>, started: Option<StartKind>) -> Conversation {
        Conversation {
            last_start: started,
            ..Conversation::first("claude".into(), Strategy::Id, id.map(str::to_owned))
        }
    }

    fn argvs(rungs: &[(StartKind, Vec<String>)]) -> Vec<String> {
        rungs
            .iter()
            .map(|(kind, argv)| format!("{kind}: {}", argv.join(" ")))
            .collect()
    }

    /// A first start mints (and resumes, if the first report never reached
    /// jackin); a later one resumes, and mints the same id again when the
    /// first conversation left nothing to resume (defect A3).
    #[test]
    fn claude_mints_first_resumes_later_and_mints_again_an_id_never_used() {
        let r = recipe("claude", Strategy::Id);
        let first = ladder(&r, Some(&conversation(Some("u1"), None)));
        assert_eq!(
            argvs(&first),
            [
                "minted: claude --session-id u1",
                "resumed-by-id: claude --resume u1",
                "continue-requested: claude --continue",
                "fresh: claude",
            ]
        );
        let later = ladder(&r, Some(&conversation(Some("u1"), Some(StartKind::Minted))));
        assert_eq!(
            argvs(&later),
            [
                "resumed-by-id: claude --resume u1",
                "minted: claude --session-id u1",
                "continue-requested: claude --continue",
                "fresh: claude",
            ]
        );
    }

    /// Defect R8: an id that can neither be resumed nor minted again ends
    /// the ladder at a new conversation under the id jackin minted for it
    /// before the start, never at a plain claude whose id jackin does not
    /// know; a status without a minted id (from before) ends at `fresh`.
    #[test]
    fn the_last_rung_of_an_id_agent_starts_anew_under_a_minted_id() {
        let r = recipe("claude", Strategy::Id);
        let mut conv = conversation(Some("u1"), Some(StartKind::Minted));
        mint_next_id(&mut conv, || "n1".into());
        let new_id = conv.next_id.clone().expect("minted for an id agent");
        assert_eq!(new_id, "n1");
        assert_eq!(
            argvs(&ladder(&r, Some(&conv))),
            [
                "resumed-by-id: claude --resume u1".to_owned(),
                "minted: claude --session-id u1".to_owned(),
                format!("minted-anew: claude --session-id {new_id}"),
            ]
        );
        // Each start mints its own: one an earlier start may have used
        // unseen is never offered again.
        mint_next_id(&mut conv, || "n2".into());
        assert_eq!(conv.next_id.as_deref(), Some("n2"));
        // An agent without ids has no id to renew.
        let mut codex = Conversation {
            strategy: Strategy::Latest,
            ..conversation(None, Some(StartKind::Fresh))
        };
        mint_next_id(&mut codex, || {
            unreachable!("an agent without ids mints none")
        });
        assert_eq!(codex.next_id, None);
    }

    /// The renewal needs the mint arguments: a version without them ends
    /// at `fresh`, as before.
    #[test]
    fn without_the_mint_rung_the_last_rung_is_fresh() {
        let mut r = recipe("gemini", Strategy::Id);
        r.agent.as_mut().unwrap().version = Some("0.40.1".into());
        let mut conv = conversation(Some("g1"), Some(StartKind::Minted));
        mint_next_id(&mut conv, || "n1".into());
        assert_eq!(
            argvs(&ladder(&r, Some(&conv))),
            [
                "continue-requested: gemini --resume latest",
                "fresh: gemini"
            ]
        );
    }

    /// The report names the rung, never the id: the id adopted is the one
    /// jackin minted, once, first in the ids; a report read again changes
    /// nothing.
    #[test]
    fn a_start_reported_at_the_last_rung_adopts_the_minted_id() {
        let mut conv = conversation(Some("u1"), Some(StartKind::Minted));
        conv.next_id = Some("u2".into());
        let report = StartReport {
            stamp: "1700000000-7".into(),
            started: Some(StartKind::MintedAnew),
            ..Default::default()
        };
        fold_report(&mut conv, &report, Timestamp::now());
        assert_eq!(conv.id.as_deref(), Some("u2"));
        assert_eq!(conv.ids, ["u2", "u1"]);
        assert_eq!(conv.next_id, None);
        assert_eq!(conv.last_start, Some(StartKind::MintedAnew));
        fold_report(&mut conv, &report, Timestamp::now());
        assert_eq!(conv.ids, ["u2", "u1"]);
        // Another rung that won keeps the id, and the minted one waits for
        // the next start to be replaced.
        let mut resumed = conversation(Some("u1"), Some(StartKind::Minted));
        resumed.next_id = Some("u9".into());
        let report = StartReport {
            started: Some(StartKind::ResumedById),
            ..report
        };
        fold_report(&mut resumed, &report, Timestamp::now());
        assert_eq!(resumed.id.as_deref(), Some("u1"));
        assert_eq!(resumed.ids, ["u1"]);
    }

    /// Gemini before 0.41 has no `--session-id`: the id rungs are left out
    /// (and said so, by [`skipped_rungs`]), not failed at every start.
    #[test]
    fn rungs_the_installed_version_lacks_are_skipped() {
        let mut r = recipe("gemini", Strategy::Id);
        let conv = conversation(Some("g1"), Some(StartKind::Minted));
        assert_eq!(
            ladder(&r, Some(&conv)).len(),
            4,
            "a version not found skips nothing"
        );
        r.agent.as_mut().unwrap().version = Some("0.40.1".into());
        assert_eq!(
            argvs(&ladder(&r, Some(&conv))),
            [
                "continue-requested: gemini --resume latest",
                "fresh: gemini"
            ]
        );
        assert_eq!(
            skipped_rungs(r.agent.as_ref().unwrap()),
            [
                (StartKind::Minted, "0.41.0".to_owned()),
                (StartKind::ResumedById, "0.41.0".to_owned())
            ]
        );
        r.agent.as_mut().unwrap().version = Some("0.41.0".into());
        assert!(skipped_rungs(r.agent.as_ref().unwrap()).is_empty());
        assert_eq!(ladder(&r, Some(&conv)).len(), 4);
    }

    #[test]
    fn codex_continues_the_latest_once_it_has_started() {
        let r = recipe("codex", Strategy::Latest);
        let conv = Conversation {
            strategy: Strategy::Latest,
            ..conversation(None, None)
        };
        assert_eq!(argvs(&ladder(&r, Some(&conv))), ["fresh: codex"]);
        let started = Conversation {
            last_start: Some(StartKind::Fresh),
            ..conv
        };
        assert_eq!(
            argvs(&ladder(&r, Some(&started))),
            ["continue-requested: codex resume --last", "fresh: codex"]
        );
    }

    #[test]
    fn no_strategy_runs_the_command_as_given() {
        let mut r = recipe("claude", Strategy::None);
        r.command = vec!["sleep".into(), "3600".into()];
        let later = conversation(Some("u1"), Some(StartKind::Fresh));
        assert_eq!(argvs(&ladder(&r, Some(&later))), ["fresh: sleep 3600"]);
        r.agent = None;
        assert_eq!(argvs(&ladder(&r, None)), ["fresh: sleep 3600"]);
    }

    #[test]
    fn an_id_with_shell_metacharacters_is_one_plan_line() {
        let r = recipe("claude", Strategy::Id);
        let id = "a b;$(touch /x)'\"`*";
        let plan = render_plan(&ladder(&r, Some(&conversation(Some(id), None))), false);
        assert!(
            plan.contains(&format!("\narg --session-id\narg {id}\n")),
            "{plan}"
        );
    }

    /// A report the status took in is seen whatever the object's time (a
    /// report written just before the object once looked seen without being
    /// read); one changed since is not.
    #[test]
    fn reports_are_folded_once_per_start() {
        let mut conv = conversation(Some("u1"), None);
        let report = StartReport {
            stamp: "1700000000-7".into(),
            fallbacks: vec![Fallback {
                rung: StartKind::ResumedById,
                exit_code: 1,
                error: "no such session".into(),
                window: Some((1_700_000_000, 1_700_000_001)),
            }],
            started: Some(StartKind::ContinueRequested),
            settles_at: None,
            modified: Some("1700000000000000001".into()),
        };
        assert_eq!(fold_report(&mut conv, &report, Timestamp::now()).len(), 1);
        assert_eq!(conv.report_modified.as_deref(), Some("1700000000000000001"));
        assert_eq!(fold_report(&mut conv, &report, Timestamp::now()).len(), 0);
        assert_eq!(conv.fallbacks, 1);
        assert_eq!(conv.last_start, Some(StartKind::ContinueRequested));
        // The same start, read again after one more rung failed.
        let mut later = report.clone();
        later.fallbacks.push(Fallback {
            rung: StartKind::ContinueRequested,
            exit_code: 1,
            error: String::new(),
            window: None,
        });
        later.started = Some(StartKind::Fresh);
        assert_eq!(fold_report(&mut conv, &later, Timestamp::now()).len(), 1);
        assert_eq!(conv.fallbacks, 2);
        // A new start counts its own.
        later.stamp = "1700000001-8".into();
        assert_eq!(fold_report(&mut conv, &later, Timestamp::now()).len(), 2);
        assert_eq!(conv.fallbacks, 4);
    }

    /// Defect R13: a rung read while in its grace period is the start so
    /// far, and the status keeps when it settles, for the pass after it to
    /// read the report again; read after that second, it is settled. A
    /// start made and not reported yet is awaited, and the first report
    /// written is unseen whatever its time.
    /// Defect SA4: a rung that ended within its grace period is refused
    /// when its error names the conversation, and crashed otherwise.
    #[test]
    fn a_quick_ending_is_told_as_refused_only_when_it_names_the_conversation() {
        for (line, expected) in [
            (
                "No conversation found with session ID: 6f1c",
                FallbackEnding::Refused,
            ),
            (
                "Error: Session ID 6f1c is already in use.",
                FallbackEnding::Refused,
            ),
            ("Error: No saved session found", FallbackEnding::Refused),
            ("cannot resume 6f1c", FallbackEnding::Refused),
            ("Segmentation fault (core dumped)", FallbackEnding::Crashed),
            ("panic: out of memory", FallbackEnding::Crashed),
            ("", FallbackEnding::Crashed),
        ] {
            assert_eq!(told(line, Some("6f1c")), expected, "{line:?}");
        }
        assert_eq!(told("cannot resume 6f1c", None), FallbackEnding::Crashed);
    }

    /// An agent that moves the cursor over the blanks between its words
    /// (claude) keeps its spaces, so that its line is read, and told, as
    /// it showed (issue 55: `ClaudeCodemightnotbeavailable…`).
    #[test]
    fn a_cursor_moved_over_blanks_keeps_the_spaces() {
        let drawn = "\x1b[31mNo\x1b[1Cconversation\x1b[Cfound\x1b[1Cwith\x1b[1Csession\x1b[1CID:\
                     \x1b[1C6f1c\x1b[39m\r\n";
        let line = last_line(drawn.as_bytes());
        assert_eq!(line, "No conversation found with session ID: 6f1c");
        assert_eq!(told(&line, Some("6f1c")), FallbackEnding::Refused);
        // A count is spaces too, within the line's length.
        assert_eq!(last_line(b"a\x1b[3Cb"), "a   b");
        assert!(last_line(b"a\x1b[99999Cb").len() <= MAX_ERROR_CHARS);
        // A move to a column (claude 2.1.332 draws each word at its
        // column), as the terminal shows it; one back leaves no blank.
        let drawn = "\x1b[2GNo\x1b[5Gconversation\x1b[18Gfound\x1b[24Gwith\x1b[29Gsession\
                     \x1b[37GID:\x1b[41G6f1c\r\r\n";
        let line = last_line(drawn.as_bytes());
        assert_eq!(line, "No conversation found with session ID: 6f1c");
        assert_eq!(last_line(b"abc\x1b[2Gd"), "abcd");
        // A wide character takes two columns: a move to the one after it
        // skips nothing (found by sequences_go_whole_and_the_text_stays).
        assert_eq!(last_line("漢\x1b[3G0à".as_bytes()), "漢0à");
        assert_eq!(last_line("漢\x1b[5Gx".as_bytes()), "漢  x");
        assert!(last_line(b"a\x1b[99999Gb").len() <= MAX_ERROR_CHARS);
    }

    #[test]
    fn the_last_line_is_the_last_drawn_and_only_what_shows() {
        let terminal = "Welcome\r\n\x1b[2K\x1b[1G\x1b[31mNo conversation found\x1b[39m with \
                        session ID: 42\r\n\x1b[?25h\x1b]0;claude\x07\r\n  \r\n";
        assert_eq!(
            last_line(terminal.as_bytes()),
            "No conversation found with session ID: 42"
        );
        // A line drawn again in place: its last drawing.
        assert_eq!(
            last_line(b"loading 10%\rloading 90%\rfailed: no id\r\n"),
            "failed: no id"
        );
        assert_eq!(last_line(b""), "");
        assert_eq!(last_line(&[b'x'; 1000]).len(), MAX_ERROR_CHARS);
    }
}

/// Properties of the start report's reading ([`parse_report`]) and of
/// [`last_line`]: what the wrapper writes reads back, and what the agent
/// may have written instead is never taken for more than it is.
#[cfg(test)]
mod properties {
    use super::{
        Fallback, MAX_ERROR_CHARS, StartKind, StartReport, is_stamp, last_line, parse_report,
    };
    use proptest::prelude::*;

    /// One start as the wrapper reports it (`entry.sh`): each rung that
    /// fell back, then the rung tried last, if it had got that far.
    #[derive(Debug, Clone)]
    struct Start {
        stamp: String,
        fallbacks: Vec<FellBack>,
        last_try: Option<Try>,
        /// Written by a wrapper from before `settles` and the windows.
        older: bool,
    }

    /// A rung tried: its kind, the word the plan names it by, the second
    /// from which it settles.
    #[derive(Debug, Clone, Copy)]
    struct Try {
        rung: StartKind,
        word: &'static str,
        settles: i64,
    }

    /// A rung tried that exited non-zero in its grace period, with the
    /// seconds it ran.
    #[derive(Debug, Clone, Copy)]
    struct FellBack {
        tried: Try,
        code: u8,
        window: (i64, i64),
    }

    impl Start {
        /// The report's lines, as the wrapper's `printf`s write them.
        fn lines(&self) -> Vec<String> {
            let mut lines = vec![format!("start {}", self.stamp)];
            for fell in &self.fallbacks {
                let (word, code, (t0, t1)) = (fell.tried.word, fell.code, fell.window);
                lines.push(self.try_line(fell.tried));
                lines.push(match self.older {
                    true => format!("fallback {word} {code}"),
                    false => format!("fallback {word} {code} {t0} {t1}"),
                });
            }
            if let Some(tried) = self.last_try {
                lines.push(self.try_line(tried));
            }
            lines
        }

        fn try_line(&self, tried: Try) -> String {
            match self.older {
                true => format!("try {}", tried.word),
                false => format!("try {} {}", tried.word, tried.settles),
            }
        }

        /// What jackin must read of it.
        fn report(&self, modified: Option<String>) -> StartReport {
            let tried = self.last_try.or(self.fallbacks.last().map(|f| f.tried));
            StartReport {
                stamp: self.stamp.clone(),
                fallbacks: self
                    .fallbacks
                    .iter()
                    .map(|fell| Fallback {
                        rung: fell.tried.rung,
                        exit_code: i64::from(fell.code),
                        error: error_of(fell.tried.rung),
                        window: (!self.older).then_some(fell.window),
                    })
                    .collect(),
                started: tried.map(|t| t.rung),
                settles_at: tried.filter(|_| !self.older).map(|t| t.settles),
                modified,
            }
        }
    }

    /// The last line of a rung's standard error, as the test's reader of
    /// the wrapper's files has it.
    fn error_of(rung: StartKind) -> String {
        format!("the last words of {rung}")
    }

    fn read(text: &str, modified: Option<String>) -> Option<StartReport> {
        parse_report(text, modified, error_of)
    }

    /// A rung, by the word a plan names it: the one jackin writes now, or
    /// the one an older jackin wrote (`continued-latest`).
    fn rung() -> impl Strategy<Value = (StartKind, &'static str)> {
        let mut words: Vec<(StartKind, &'static str)> =
            StartKind::ALL.iter().map(|&k| (k, k.as_str())).collect();
        words.push((StartKind::ContinueRequested, "continued-latest"));
        proptest::sample::select(words)
    }

    fn second() -> impl Strategy<Value = i64> {
        0i64..4_102_444_800
    }

    fn start() -> impl Strategy<Value = Start> {
        // `$(date +%s)-` and the kernel's uuid, or the shell's pid.
        let stamp =
            "[0-9]{1,11}-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}|[0-9]{1,7})";
        let tried = || {
            (rung(), second()).prop_map(|((rung, word), settles)| Try {
                rung,
                word,
                settles,
            })
        };
        let fallback =
            (tried(), 1u8..=255, second(), 0i64..30).prop_map(|(tried, code, t0, ran)| FellBack {
                tried,
                code,
                window: (t0, t0 + ran),
            });
        let last_try = proptest::option::of(tried());
        (
            stamp,
            proptest::collection::vec(fallback, 0..5),
            last_try,
            any::<bool>(),
        )
            .prop_map(|(stamp, fallbacks, last_try, older)| Start {
                stamp,
                fallbacks,
                last_try,
                older,
            })
    }

    /// A word the wrapper never writes as a rung.
    fn unknown_rung() -> impl Strategy<Value = String> {
        "[a-zA-Z:-]{0,20}".prop_filter("a rung", |w| StartKind::parse(w).is_none())
    }

    /// A line the wrapper never writes, and that says nothing: another
    /// first word, a start without a stamp, a fallback of no rung or
    /// without a number for its code.
    fn junk_line() -> impl Strategy<Value = String> {
        let tail = "( [^\r\n]{0,30})?";
        prop_oneof![
            ("[^ \r\n]{0,12}", tail)
                .prop_filter("a word the wrapper writes", |(word, _)| {
                    !["start", "try", "fallback"].contains(&word.as_str())
                })
                .prop_map(|(word, tail)| word + &tail),
            "start( ([^ \r\n]*[^a-zA-Z0-9 \r\n-][^ \r\n]*|[a-z0-9-]{65,80}|)|( [a-z0-9-]{1,9}){2,3})",
            (unknown_rung(), tail).prop_map(|(rung, tail)| format!("fallback {rung} 1{tail}")),
            (rung(), "([a-z.+]{0,5}|[0-9]+\\.[0-9])", tail)
                .prop_map(|((_, word), code, tail)| format!("fallback {word} {code}{tail}")),
            rung().prop_map(|(_, word)| format!("fallback {word}")),
            Just("fallback".to_owned()),
        ]
    }

    /// Text made of the report's own words, so that lines come close to
    /// the ones the reader takes.
    fn report_like_text() -> impl Strategy<Value = String> {
        let word = prop_oneof![
            proptest::sample::select(vec![
                "start",
                "try",
                "fallback",
                "",
                "-1",
                "9223372036854775808"
            ])
            .prop_map(str::to_owned),
            rung().prop_map(|(_, word)| word.to_owned()),
            "[0-9]{1,20}",
            "[a-z0-9-]{1,70}",
            "[^\n]{0,8}",
        ];
        let line = proptest::collection::vec(word, 0..6).prop_map(|words| words.join(" "));
        proptest::collection::vec(line, 0..12).prop_map(|lines| lines.join("\n"))
    }

    /// A terminal sequence, as agents print them: colours and cursor moves
    /// (`ESC [`, or the one-character CSI), window titles and links (`ESC ]`
    /// to BEL or `ESC \`), character sets (`ESC ( B`), two-byte escapes.
    fn sequence() -> impl Strategy<Value = String> {
        prop_oneof![
            // Any final byte but the moves over blanks, which stand for
            // them: `C`, `G` and `` ` `` (a_cursor_moved_over_blanks_keeps_the_spaces).
            "(\u{1b}\\[|\u{9b})[0-9;?<=>]{0,8}[ -/]{0,2}[@-BD-FH-_a-~]",
            "\u{1b}[\\]P_^][ -~]{0,20}(\u{7}|\u{1b}\\\\)",
            "\u{1b}[ -/]{1,2}[0-~]",
            "\u{1b}[0-9=>78DEHMZc]",
        ]
    }

    /// Printable text, wide characters and accents included, shorter than
    /// the cap.
    fn printable(max: usize) -> impl Strategy<Value = String> {
        proptest::string::string_regex(&format!("[ -~àé漢字🙂\u{a0}]{{0,{max}}}")).unwrap()
    }

    /// `text` with each of `sequences` put in before the character its
    /// index picks.
    fn interleaved(text: &str, sequences: &[(prop::sample::Index, String)]) -> String {
        let mut chars: Vec<String> = text.chars().map(String::from).collect();
        for (at, sequence) in sequences {
            let at = at.index(chars.len() + 1);
            chars.insert(at, sequence.clone());
        }
        chars.concat()
    }

    proptest! {
        // A failing case is not saved to a file beside the source: the
        // shrunk input it prints is made a named example test instead,
        // which says why it matters (and CI's clean clone would lose the
        // file anyway).
        #![proptest_config(ProptestConfig { failure_persistence: None, ..ProptestConfig::default() })]

        /// A report as the wrapper writes it reads back as the start it
        /// tells, each failed rung's error asked for once; of a report
        /// holding two starts (the container started again), the last.
        #[test]
        fn a_report_the_wrapper_writes_reads_back(
            earlier in proptest::option::of(start()),
            start in start(),
            modified in proptest::option::of("[0-9]{1,20}"),
        ) {
            let mut lines = earlier.map(|e| e.lines()).unwrap_or_default();
            lines.extend(start.lines());
            let text = lines.join("\n") + "\n";
            let mut asked = Vec::new();
            let read = parse_report(&text, modified.clone(), |rung| {
                asked.push(rung);
                error_of(rung)
            });
            let expected = start.report(modified);
            prop_assert_eq!(read.as_ref(), Some(&expected), "{}", text);
            let fell_back: Vec<StartKind> = expected.fallbacks.iter().map(|f| f.rung).collect();
            prop_assert!(asked.ends_with(&fell_back), "asked {:?}", asked);
        }

        /// A line the wrapper never writes changes nothing, wherever the
        /// agent put it, and line ends of either kind read alike.
        #[test]
        fn lines_the_wrapper_never_writes_are_skipped(
            start in start(),
            junk in proptest::collection::vec((any::<prop::sample::Index>(), junk_line()), 1..6),
            crlf in any::<bool>(),
        ) {
            let mut lines = start.lines();
            for (at, line) in junk {
                let at = at.index(lines.len() + 1);
                lines.insert(at, line);
            }
            let text = lines.join(if crlf { "\r\n" } else { "\n" });
            prop_assert_eq!(read(&text, None), Some(start.report(None)), "{}", text);
        }

        /// A `try` naming no rung jackin knows leaves the rung started
        /// unknown: never one the line did not name.
        #[test]
        fn a_try_of_no_known_rung_leaves_the_start_unknown(
            start in start(),
            rung in unknown_rung(),
            settles in second(),
        ) {
            let text = format!("{}\ntry {rung} {settles}\n", start.lines().join("\n"));
            let read = read(&text, None).expect("the start is there");
            prop_assert_eq!(read.started, None, "{}", text);
            prop_assert_eq!(read.fallbacks, start.report(None).fallbacks);
        }

        /// Any text is read without a panic: a report exactly when a line
        /// starts one with a stamp, that stamp the last such, and no more
        /// fallbacks than lines that say one.
        #[test]
        fn any_text_is_read_without_a_panic(
            text in prop_oneof![any::<String>(), report_like_text()],
        ) {
            let starts: Vec<&str> = text
                .lines()
                .filter_map(|line| line.strip_prefix("start "))
                .filter(|stamp| is_stamp(stamp))
                .collect();
            let read = read(&text, Some("m".into()));
            prop_assert_eq!(read.is_some(), !starts.is_empty());
            if let Some(report) = read {
                prop_assert_eq!(Some(&report.stamp.as_str()), starts.last());
                prop_assert_eq!(report.modified.as_deref(), Some("m"));
                let said = text.lines().filter(|l| l.starts_with("fallback ")).count();
                prop_assert!(report.fallbacks.len() <= said);
                for fallback in &report.fallbacks {
                    prop_assert_eq!(&fallback.error, &error_of(fallback.rung));
                }
            }
        }

        /// Whatever a rung printed, the line kept is printable, short and
        /// trimmed: no control character, so no escape sequence, survives.
        #[test]
        fn the_last_line_is_printable_and_short(
            output in prop_oneof![
                proptest::collection::vec(any::<u8>(), 0..2048),
                any::<String>().prop_map(String::into_bytes),
                proptest::collection::vec(prop_oneof![sequence(), printable(40), "[\r\n\t\u{7f}\u{85}]"], 0..30)
                    .prop_map(|parts| parts.concat().into_bytes()),
            ],
        ) {
            let line = last_line(&output);
            prop_assert!(!line.chars().any(char::is_control), "{:?}", line);
            prop_assert!(line.chars().count() <= MAX_ERROR_CHARS, "{:?}", line);
            prop_assert_eq!(line.trim(), line.as_str());
        }

        /// A terminal's sequences go whole, wherever they stand in the
        /// line, and what they coloured or moved is what is kept; lines
        /// after it that show nothing are passed over.
        #[test]
        fn sequences_go_whole_and_the_text_stays(
            text in printable(150).prop_filter("shows nothing", |t| !t.trim().is_empty()),
            sequences in proptest::collection::vec((any::<prop::sample::Index>(), sequence()), 0..8),
            before in proptest::collection::vec(printable(60), 0..3),
            after in proptest::collection::vec(prop_oneof![sequence(), "[ \t]{0,4}"], 0..3),
        ) {
            let mut lines = before;
            lines.push(interleaved(&text, &sequences));
            lines.extend(after);
            let output = lines.join("\r\n");
            prop_assert_eq!(last_line(output.as_bytes()), text.trim(), "{:?}", output);
        }

        /// Of a line drawn again in place (a carriage return, then the
        /// new drawing), the last drawing is kept.
        #[test]
        fn of_a_line_drawn_again_the_last_drawing_is_kept(
            drawings in proptest::collection::vec(printable(60), 0..4),
            last in printable(150).prop_filter("shows nothing", |t| !t.trim().is_empty()),
        ) {
            let mut parts = drawings;
            parts.push(last.clone());
            let output = parts.join("\r") + "\r\n";
            prop_assert_eq!(last_line(output.as_bytes()), last.trim());
        }
    }
}
