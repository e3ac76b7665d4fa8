//! Attaching the operator's terminal to a session (`jackin attach`, the end
//! of `jackin launch`, and `jackin top`'s Enter): converge the instance to
//! running, connect the terminal to its agent, and when the agent ends the
//! session, settle it by the exit policy, asking when there is unfinished
//! work.
//!
//! The attach holds the attached lock (`sockets/<unit>/attached.lock`) for as
//! long as the terminal is connected: while it is held, the exit policy sees an
//! operator who can answer (`ask` with unfinished work waits, `AskOperator`,
//! and the attach puts screens A and B). One thread reads the keyboard for the
//! whole command, feeding the attached session and then the screens, so no
//! keystroke is lost to a stale reader. Before attaching it prints the last
//! screen the agent drew, from the container's log (`screen`), so a reattach
//! never starts blank, and it sets the terminal one column less, then the true
//! size, so that the agent draws anew.
//!
//! The attach stream is opened only to a container that runs, and the container
//! is looked at again once the stream holds it: the engine's attach to a
//! stopped container waits for its next start, which nothing may bring. A
//! container found stopped (the agent ended before the attach, or at once on
//! its resume) is settled as an end during the attach is: the loop converges,
//! the exit policy settles it (screens A and B when it asks), and the end is
//! reported; when that leaves the instance running (a `docker rm -f` restored,
//! a rollout replaced), the attach says so and attaches to the container the
//! converge left.

use std::io::{IsTerminal, Write};

use anyhow::{Context, Result};
use futures::StreamExt;
use jackin_api::instance::InstancePhase;
use jackin_api::meta::find_condition;
use jackin_api::names::{condition, reason};
use jackin_api::{DesiredPhase, ExitPolicy, Instance};
use jackin_checkouts::assess::acknowledgement_digest;
use jackin_controller::engines::Engines;
use jackin_controller::{Reconciler, Store, StoreError, live_output, session};
use jackin_engine::Engine;
use jackin_files::fsutil::FileLock;
use jackin_files::layout::Layout;
use tokio::io::AsyncWriteExt;

use crate::agent_output;
use crate::args::WaitArgs;
use crate::context::{Cancelled, converge_quietly, enforce_keep_cap_quietly};
use crate::deadline;
use crate::ops::discarded::{conversation_kept, retention_of};
use crate::ops::logins;
use crate::ops::preserved::verify_preserved_state;
use crate::output;
use crate::screens::{self, Answer, Kind, Screen};
use crate::terminal::{AgentModes, Keyboard, RawMode, Resizes};

/// Connects the terminal to the container until the agent exits or the
/// operator detaches (Ctrl-P Ctrl-Q).
async fn attach_once(
    engine: &Engine,
    layout: &Layout,
    container: &str,
    keyboard: &mut Keyboard,
) -> Result<()> {
    // The session is the operator's time, not the command's `--timeout`.
    let _turn = deadline::operators_turn();
    let tty = std::io::stdin().is_terminal();
    show_recent_output(engine, layout, container).await;
    let mut attached = engine.attach(container).await?;
    // The engine's attach to a stopped container waits for its next start,
    // which may never come: an agent that ended just before the attach
    // took hold is settled by the caller, not waited on.
    if !running(engine, container).await? {
        return Ok(());
    }
    let _raw = if tty { RawMode::enable() } else { None };
    // The agent lays its screen out for this terminal, and redraws only on
    // a change of size: a column less first, and the true size a moment
    // later, so that an attach at the size it already has still makes it
    // draw its screen anew. A failure only costs looks.
    let mut size = None;
    if tty && let Ok(now) = crossterm::terminal::size() {
        let (narrower, rows) = jackin_act::session::redraw_nudge(now);
        let _ = engine.resize(container, narrower, rows).await;
        remember_size(layout, container, now);
        size = Some(now);
    }
    // Runs out once: then the true size is given back.
    let nudged = tokio::time::sleep(jackin_act::session::REDRAW_NUDGE_GAP);
    tokio::pin!(nudged);
    let mut nudge_pending = size.is_some();
    let mut resizes = Resizes::watch(tty);
    let mut stdout = std::io::stdout();
    let mut modes = AgentModes::default();
    // Reset by each output: a quiet stream makes jackin ask the engine.
    let quiet = tokio::time::sleep(deadline::QUIET_CHECK);
    tokio::pin!(quiet);
    loop {
        tokio::select! {
            item = attached.output.next() => match item {
                Some(Ok(output)) => {
                    let bytes = output.into_bytes();
                    modes.saw(&bytes);
                    stdout.write_all(&bytes)?;
                    stdout.flush()?;
                    quiet.as_mut().reset(tokio::time::Instant::now() + deadline::QUIET_CHECK);
                }
                _ => break,
            },
            () = &mut quiet => {
                if !deadline::still_running(engine, container).await? {
                    break;
                }
                quiet.as_mut().reset(tokio::time::Instant::now() + deadline::QUIET_CHECK);
            }
            () = &mut nudged, if nudge_pending => {
                nudge_pending = false;
                if let Some((width, height)) = size {
                    let _ = engine.resize(container, width, height).await;
                }
            }
            // A full-screen agent redraws at the size it is told (which
            // also ends a nudge still pending: this size is the true one).
            (width, height) = resizes.next() => {
                nudge_pending = false;
                size = Some((width, height));
                let _ = engine.resize(container, width, height).await;
                remember_size(layout, container, (width, height));
            }
            chunk = keyboard.chunk() => match chunk {
                Some(bytes) => {
                    if attached.input.write_all(&bytes).await.is_err() {
                        break;
                    }
                    let _ = attached.input.flush().await;
                }
                None => break,
            },
        }
    }
    // Whether detached or ended, the terminal goes back to the shell, or to
    // the screen that follows, as it expects it.
    if tty {
        stdout.write_all(&modes.restore())?;
        stdout.flush()?;
    }
    Ok(())
}

/// The operator's size, for the unit's next starts (see
/// `session::terminal_size`); not kept costs only that.
fn remember_size(layout: &Layout, container: &str, size: (u16, u16)) {
    // The container is named as its unit.
    if let Err(e) = jackin_act::session::remember_terminal_size(layout, container, size) {
        tracing::debug!("the terminal size is not kept for the next start: {e}");
    }
}

/// The last screen the agent drew, from the container's log, so that a
/// reattach never starts on a blank screen. A log that cannot be read costs
/// only that.
///
/// The replay is history, not the session: the log's end is parsed by a
/// terminal emulator at the size the agent drew at (the operator's last,
/// `session::terminal_size`), from its newest full redraw, and the screen
/// is written out as text and colours only ([`agent_output::replay`]): a
/// query replayed from the log (a cursor position report, a clipboard read)
/// would make the terminal type its answer into the agent's input. The live
/// stream that follows in [`attach_once`] stays raw: there the agent drives
/// the operator's terminal by design, as any program run in it does. At
/// most [`live_output::REPLAY_BYTES`] of the log's end are kept, however
/// long it is.
async fn show_recent_output(engine: &Engine, layout: &Layout, container: &str) {
    let recent = live_output::log_end(engine, container).await;
    let size = jackin_act::session::terminal_size(layout, container);
    let mut stdout = std::io::stdout();
    let _ = stdout.write_all(&agent_output::replay(&recent, size));
    let _ = stdout.flush();
}

/// What the operator chose at the end of a session with unfinished work.
enum Choice {
    ReturnToAgent,
    Keep,
    CleanUp,
    /// The input ended before an answer (the terminal closed): nobody is
    /// there to choose, and the exit policy decides as for nobody attached.
    Unanswered,
}

/// Screens A and B: the unfinished work, then the forced choice with
/// "Return to agent" first and the default, since it never loses work.
/// `saved_for`: how long a clean-up's save is kept, in words.
async fn ask(obj: &Instance, saved_for: &str, keyboard: &mut Keyboard) -> Result<Choice> {
    let status = obj.status.clone().unwrap_or_default();
    let who = format!(
        "{} ({}) · workspace {} · {}",
        obj.spec.role.name,
        obj.spec.agent,
        obj.spec.workspace.as_deref().unwrap_or("-"),
        status.container_name.as_deref().unwrap_or("-")
    );
    let unfinished = status
        .mounts
        .iter()
        .filter(|m| jackin_checkouts::assess::has_unfinished_work(m))
        .count();
    let mounts_word = output::plural(unfinished, "isolated mount", "isolated mounts");
    let mut evidence = vec![
        who.clone(),
        String::new(),
        format!("This session has unfinished work in {unfinished} {mounts_word}."),
        String::new(),
    ];
    evidence.extend(
        output::mounts_evidence(&status.mounts)
            .lines()
            .map(str::to_owned),
    );
    evidence.push(String::new());
    evidence.push("Review the above before choosing how to end the session.".to_owned());
    let screen_a = Screen {
        label: "session ended".into(),
        context: evidence,
        choices: Vec::new(),
        kind: Kind::Acknowledge,
    };
    if screens::choose(&screen_a, keyboard).await? == Answer::Abort {
        // Aborted: keep, which loses nothing.
        return Ok(unanswered_or(Choice::Keep, keyboard));
    }
    let verb = output::plural(unfinished, "has", "have");
    let screen_b = Screen {
        label: "session ended".into(),
        context: vec![
            who,
            format!("{unfinished} {mounts_word} {verb} unfinished work."),
        ],
        choices: vec![
            (
                "Return to agent".into(),
                "keep working in this session now".into(),
            ),
            (
                "Exit and keep".into(),
                "preserve everything, resume later to finish the work".into(),
            ),
            (
                "Exit and clean up".into(),
                format!(
                    "discard the checkouts and the instance; the work and the agent's \
                     conversation are saved for {saved_for} (`jackin get discarded`)"
                ),
            ),
        ],
        kind: Kind::Choose { filter: false },
    };
    Ok(match screens::choose(&screen_b, keyboard).await? {
        Answer::Chose(0) => Choice::ReturnToAgent,
        Answer::Chose(2) => Choice::CleanUp,
        Answer::Abort => unanswered_or(Choice::Keep, keyboard),
        // "Exit and keep": keep loses nothing.
        _ => Choice::Keep,
    })
}

/// `aborted`, unless the abort was the end of input: then nobody answered.
fn unanswered_or(aborted: Choice, keyboard: &Keyboard) -> Choice {
    if keyboard.input_ended() {
        Choice::Unanswered
    } else {
        aborted
    }
}

fn container_of(obj: &Instance) -> String {
    obj.container_name().map(str::to_owned).unwrap_or_default()
}

/// Whether the loop is waiting for the attached operator's answer.
fn asking(obj: &Instance) -> bool {
    obj.status.as_ref().is_some_and(|s| {
        find_condition(&s.conditions, condition::EXIT_POLICY)
            .is_some_and(|c| c.reason == reason::ASK_OPERATOR)
    })
}

/// Whether attaching to `obj` resumes a session that is kept or ended.
pub fn resumes(obj: &Instance) -> bool {
    let phase = obj.phase();
    obj.desired_phase() == DesiredPhase::Kept
        || matches!(
            phase,
            Some(InstancePhase::Kept | InstancePhase::Exited | InstancePhase::Crashed)
        )
}

/// Attaches to `name`, resuming it first when it is kept or ended (after
/// Screen D, unless `verified` says the caller showed it already).
/// `launch_policy`: a launch's `--keep` / `--clean`, for the session it
/// resumes or joins (`session::resume`).
pub async fn run(
    store: Store,
    engines: Engines,
    name: &str,
    wait: &WaitArgs,
    keyboard: &mut Keyboard,
    verified: bool,
    mut launch_policy: Option<ExitPolicy>,
) -> Result<()> {
    let current = store.get_instance(name)?;
    if resumes(&current) {
        logins::check_token_keys(&current)?;
    }
    if !verified && resumes(&current) {
        match verify_preserved_state(&store, &current, keyboard).await? {
            Answer::Chose(_) => {}
            Answer::Back => {
                eprintln!("instance/{name} not resumed: it is unchanged");
                return Ok(());
            }
            Answer::Abort => {
                return Err(Cancelled(format!("instance/{name} is unchanged")).into());
            }
        }
    }
    let lock_path = store.layout().attached_lock_file(&container_of(&current));
    let attached = hold_attached_lock(&lock_path)
        .with_context(|| format!("locking {}", lock_path.display()))?
        .ok_or_else(|| anyhow::anyhow!("instance/{name} is attached in another terminal"))?;
    let mut resume = true;
    loop {
        if resume {
            // Only the session the launch resumed: one started again after
            // "Return to agent" is another.
            session::resume(&store, name, launch_policy.take())?;
            converge_quietly(&store, &engines, name, wait).await?;
        }
        // The engine and the container it runs on, as the converge left
        // them: a restore or a rollout may have made the container anew.
        let obj = store.get_instance(name)?;
        let container = container_of(&obj);
        let engine = Reconciler::new(store.clone(), engines.clone())
            .engine_of(&obj)
            .await?
            .engine;
        // A session that ended before the attach (unseen, or at once on
        // its start) has nothing to attach to: it is settled below.
        if running(&engine, &container).await? {
            eprintln!("attached to instance/{name} ({container}); Ctrl-P Ctrl-Q detaches");
            attach_once(&engine, store.layout(), &container, keyboard).await?;
            // When the operator was last here: `top`'s USED (see
            // `session::last_attached`); not kept costs only that.
            if let Err(e) = attached.touch() {
                tracing::debug!("the attached lock keeps no time of this attach: {e}");
            }
            if running(&engine, &container).await? {
                eprintln!("\ndetached; `jackin attach {name}` reconnects");
                return Ok(());
            }
        }
        match settle_the_end(&store, &engines, name, wait, keyboard).await? {
            Next::Resume => resume = true,
            Next::AttachAgain => resume = false,
            Next::Done => return Ok(()),
            Next::Unanswered => {
                drop(attached);
                return leave_to_the_policy(&store, &engines, name, wait).await;
            }
        }
    }
}

/// The question went unanswered because the input ended: with the attached
/// lock released, a converge settles the end as for nobody attached (kept,
/// `NonInteractive`), the same as the next pass would after a hangup. The
/// terminal may be gone, so what is said may go nowhere.
async fn leave_to_the_policy(
    store: &Store,
    engines: &Engines,
    name: &str,
    wait: &WaitArgs,
) -> Result<()> {
    converge_quietly(store, engines, name, wait).await?;
    let obj = store.get_instance(name)?;
    let _ = writeln!(
        std::io::stderr(),
        "\nno answer came (the input ended); {}",
        after_the_container_stopped(name, &obj)
    );
    if obj.phase() == Some(InstancePhase::Kept) {
        enforce_keep_cap_quietly(store, engines, wait).await?;
    }
    Ok(())
}

/// Whether `container` runs now (a container that is gone does not).
async fn running(engine: &Engine, container: &str) -> Result<bool> {
    let state = engine
        .inspect_container(container)
        .await
        .with_context(|| format!("inspecting container {container}"))?
        .and_then(|c| c.state);
    Ok(state.and_then(|s| s.running).unwrap_or(false))
}

/// What the attach does once the session's container stopped.
enum Next {
    /// Resume the session in the same unit and attach to it.
    Resume,
    /// The session runs on in a container started or made anew: attach.
    AttachAgain,
    /// The session ended and is settled: return.
    Done,
    /// The question at its end went unanswered: leave it to the policy.
    Unanswered,
}

/// The session's container stopped (the agent ended the session, or the
/// container went): the loop records it and applies the exit policy,
/// which asks here when there is unfinished work.
async fn settle_the_end(
    store: &Store,
    engines: &Engines,
    name: &str,
    wait: &WaitArgs,
    keyboard: &mut Keyboard,
) -> Result<Next> {
    converge_quietly(store, engines, name, wait).await?;
    let obj = match store.get_instance(name) {
        Ok(obj) => obj,
        Err(StoreError::InstanceNotFound(_)) => {
            eprintln!("\ninstance/{name} ended cleanly and was cleaned up");
            if let Some(kept) = conversation_kept(store, name) {
                eprintln!("{kept}");
            }
            return Ok(Next::Done);
        }
        Err(e) => return Err(e.into()),
    };
    if !asking(&obj) {
        let phase = obj.phase();
        eprintln!("\n{}", after_the_container_stopped(name, &obj));
        if phase == Some(InstancePhase::Running) {
            return Ok(Next::AttachAgain);
        }
        // Kept by the policy: one more kept session in its workspace.
        if phase == Some(InstancePhase::Kept) {
            enforce_keep_cap_quietly(store, engines, wait).await?;
        }
        return Ok(Next::Done);
    }
    let saved_for = retention_of(store);
    match ask(&obj, &saved_for, keyboard).await? {
        Choice::ReturnToAgent => Ok(Next::Resume),
        Choice::Keep => {
            session::keep_ended(store, name).with_context(|| format!("keeping instance/{name}"))?;
            converge_quietly(store, engines, name, wait).await?;
            eprintln!("instance/{name} kept; `jackin attach {name}` resumes it");
            enforce_keep_cap_quietly(store, engines, wait).await?;
            Ok(Next::Done)
        }
        Choice::Unanswered => Ok(Next::Unanswered),
        Choice::CleanUp => {
            // The operator saw the work and insists.
            let shown = acknowledgement_digest(&obj.status.clone().unwrap_or_default().mounts);
            session::clean_up_ended(store, name, shown)?;
            converge_quietly(store, engines, name, wait).await?;
            eprintln!("instance/{name} cleaned up");
            Ok(Next::Done)
        }
    }
}

/// What happened once the attached container stopped and the loop
/// converged: the session ended, or (a rollout or a restore replaced the
/// container, or the loop started it again) it runs on, and the attach
/// attaches to it again.
fn after_the_container_stopped(name: &str, obj: &Instance) -> String {
    let phase = obj.phase();
    if phase != Some(InstancePhase::Running) {
        return format!(
            "instance/{name} ended: {}",
            phase.map_or("-".into(), |p| p.to_string())
        );
    }
    let rollout = obj
        .status
        .as_ref()
        .and_then(|s| s.restore.as_ref())
        .and_then(|r| r.rollout.as_deref());
    let what = match rollout {
        Some(requested) => format!("its container was replaced by rollout {requested}"),
        None => "its container stopped and was started again".to_owned(),
    };
    format!(
        "instance/{name}: {}; the session runs on: attaching to it again",
        output::terminal_safe(&what)
    )
}

/// Takes the attached lock. The loop probes it by taking it for an instant,
/// so a miss is retried briefly before it counts as another terminal.
fn hold_attached_lock(path: &std::path::Path) -> std::io::Result<Option<FileLock>> {
    for _ in 0..40 {
        if let Some(lock) = FileLock::try_acquire(path)? {
            return Ok(Some(lock));
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    Ok(None)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::instance::{InstanceStatus, RestoreRecord};

    fn in_phase(phase: InstancePhase, rollout: Option<&str>) -> Instance {
        let mut obj: Instance = serde_json::from_value(serde_json::json!({
            "apiVersion": jackin_api::API_VERSION,
            "kind": "Instance",
            "metadata": {"name": "a"},
            "spec": {"role": {"name": "r"}, "agent": "claude", "image": "i"},
        }))
        .unwrap();
        obj.status = Some(InstanceStatus {
            phase: Some(phase),
            restore: Some(RestoreRecord {
                tier: 2,
                at: jiff::Timestamp::UNIX_EPOCH,
                rollout: rollout.map(str::to_owned),
            }),
            ..Default::default()
        });
        obj
    }

    /// An attach interrupted by a rollout said "ended: Running".
    #[test]
    fn a_replaced_container_is_not_called_an_end() {
        let replaced =
            after_the_container_stopped("a", &in_phase(InstancePhase::Running, Some("t1")));
        assert_eq!(
            replaced,
            "instance/a: its container was replaced by rollout t1; the session runs on: \
             attaching to it again"
        );
        let restarted = after_the_container_stopped("a", &in_phase(InstancePhase::Running, None));
        assert!(restarted.contains("started again"), "{restarted}");
        let kept = after_the_container_stopped("a", &in_phase(InstancePhase::Kept, None));
        assert_eq!(kept, "instance/a ended: Kept");
    }
}
