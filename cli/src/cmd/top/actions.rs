//! The actions a key runs outside the overview's screen (attach, keep,
//! resume, purge, a shell, launch), each through the use-case its command
//! runs (`crate::ops`), with top's keyboard; and the log the pager reads.

use std::time::Duration;

use anyhow::Result;
use futures::StreamExt;
use jackin_api::DesiredPhase;
use jackin_api::agent::Strategy;
use jackin_controller::Store;
use jackin_engine::LogsRequest;

use super::purge;
use crate::args::{ExecArgs, LaunchArgs, WaitArgs};
use crate::context::{CommandExited, connect};
use crate::ops::container::agent_container;
use crate::ops::set_phases::{NotPurged, PhaseChange, set_phases};
use crate::ops::{attach, exec, launch};
use crate::output;
use crate::screens::{self, Answer, Kind, Screen};
use crate::terminal::Keyboard;

/// An action a key asks for, run outside the overview's screen.
pub enum Action {
    Attach(String),
    Phase(String, DesiredPhase),
    /// A purge the operator confirmed (its checkouts were clean).
    Purge(String),
    /// A purge of unfinished work: these lines say what goes, then the
    /// work is shown and the purge's own question asked.
    PurgeUnfinished(String, Vec<String>),
    /// `jackin exec -it NAME -- sh`.
    Shell(String),
    Launch,
}

/// The log lines `l` pages through: the end of the log.
const LOG_LINES: u64 = 2000;

/// The most of the log `l` reads: 2000 honest lines fit many times over.
const LOG_BYTES: usize = 4 << 20;

/// How long `l` waits for the engine to send the log.
const LOG_WAIT: Duration = Duration::from_secs(10);

/// Runs an action's command with this keyboard; what it did, for the footer.
pub async fn act(store: &Store, action: Action, keyboard: &mut Keyboard) -> Result<String> {
    let wait = WaitArgs {
        timeout: Duration::from_secs(300),
        no_wait: false,
        concurrency: jackin_controller::converge::DEFAULT_CONCURRENCY,
    };
    match action {
        Action::Attach(name) => {
            attach::run(
                store.clone(),
                connect().await?,
                &name,
                &wait,
                keyboard,
                false,
                None,
            )
            .await?;
            Ok(format!("detached from {name}"))
        }
        Action::Phase(name, phase) => {
            set_phase_of(store, &name, phase, &wait, keyboard).await?;
            Ok(format!("instance/{name}: desired phase {phase}"))
        }
        Action::Purge(name) => purge(store, &name, &wait, keyboard).await,
        Action::PurgeUnfinished(name, lines) => {
            // What goes, then the unfinished work and the question.
            for line in lines {
                eprintln!("{line}");
            }
            eprintln!();
            purge(store, &name, &wait, keyboard).await
        }
        Action::Shell(name) => shell(&name, keyboard).await,
        Action::Launch => Box::pin(launch(store, wait, keyboard)).await,
    }
}

async fn set_phase_of(
    store: &Store,
    name: &str,
    phase: DesiredPhase,
    wait: &WaitArgs,
    keyboard: &mut Keyboard,
) -> Result<()> {
    let obj = store.get_instance(name)?;
    set_phases(PhaseChange {
        store: store.clone(),
        instances: &[obj],
        phase,
        dry_run: false,
        force: false,
        wait,
        verbose: false,
        keyboard: Some(keyboard),
    })
    .await
}

/// Purges `name`; a "no" to the question about its unfinished work is a
/// cancel, said in the footer, not an error.
async fn purge(
    store: &Store,
    name: &str,
    wait: &WaitArgs,
    keyboard: &mut Keyboard,
) -> Result<String> {
    match set_phase_of(store, name, DesiredPhase::Purged, wait, keyboard).await {
        Ok(()) => Ok(format!("instance/{name} purged")),
        Err(e) if e.downcast_ref::<NotPurged>().is_some() => Ok(purge::cancelled(name)),
        Err(e) => Err(e),
    }
}

/// `jackin exec -it NAME -- sh`, on this terminal, until the shell ends.
async fn shell(name: &str, keyboard: &mut Keyboard) -> Result<String> {
    eprintln!("jackin exec -it {name} -- sh (exit the shell to come back to the overview)");
    let args = ExecArgs {
        name: name.to_owned(),
        interactive: true,
        tty: true,
        command: vec!["sh".to_owned()],
    };
    match exec::run_with(&args, Some(keyboard)).await {
        Ok(()) => Ok(format!("the shell in {name} ended")),
        Err(e) => match e.downcast_ref::<CommandExited>() {
            Some(CommandExited(code)) => Ok(format!("the shell in {name} exited with {code}")),
            None => Err(e),
        },
    }
}

async fn launch(store: &Store, wait: WaitArgs, keyboard: &mut Keyboard) -> Result<String> {
    let Some((workspace, role, agent)) = pick_trio(store, keyboard).await? else {
        return Ok(String::new());
    };
    let args = LaunchArgs {
        workspace,
        role,
        agent,
        from: None,
        name: None,
        keep: false,
        clean: false,
        skip_setup: false,
        wait,
    };
    launch::run(store.clone(), connect().await?, &args, keyboard).await?;
    Ok(format!(
        "launched {}/{}/{}",
        args.workspace, args.role, args.agent
    ))
}

/// The launch picker: every (workspace, role, agent) a workspace declares
/// a role for, with every agent; ↻ marks the agents whose conversation a
/// session of that workspace resumes at its every start (the seed's
/// picker), as the entry's resume arguments and the workspace's
/// `resumeConversations` say.
async fn pick_trio(
    store: &Store,
    keyboard: &mut Keyboard,
) -> Result<Option<(String, String, String)>> {
    let agents: Vec<(String, bool)> = store
        .agents()?
        .into_iter()
        .map(|(agent, _)| (agent.metadata.name, agent.spec.strategy() != Strategy::None))
        .collect();
    let mut trios = Vec::new();
    let mut marks = Vec::new();
    for ws in store.list_workspaces()? {
        for role in &ws.spec.roles {
            for (agent, resumable) in &agents {
                trios.push((ws.metadata.name.clone(), role.name.clone(), agent.clone()));
                let resumes = *resumable && ws.spec.resumes_conversations();
                marks.push(if resumes { " ↻" } else { "" });
            }
        }
    }
    if trios.is_empty() {
        anyhow::bail!(
            "no workspace declares a role (spec.roles) to launch from\nhint: `jackin launch -w \
             WORKSPACE -r ROLE -a AGENT` launches one from a template or an earlier session"
        );
    }
    let screen = Screen {
        label: "launch".into(),
        context: vec![
            "A workspace's role, run by an agent (↻: it resumes its conversation at every start)."
                .into(),
        ],
        choices: trios
            .iter()
            .zip(marks)
            .map(|((ws, role, agent), mark)| {
                (
                    output::terminal_safe(&format!("{role} ({agent}{mark})")),
                    output::terminal_safe(&format!("workspace {ws}")),
                )
            })
            .collect(),
        kind: Kind::Choose { filter: true },
    };
    Ok(match screens::choose(&screen, keyboard).await? {
        Answer::Chose(i) => trios.into_iter().nth(i),
        Answer::Back | Answer::Abort => None,
    })
}

/// The end of the agent's log, made safe, a line each.
pub async fn log_lines(store: &Store, name: &str) -> Result<Vec<String>> {
    let found = agent_container(store, name).await?;
    let Some(id) = found.id else {
        anyhow::bail!("instance/{name} has no container now: its output went with the last one");
    };
    let request = LogsRequest {
        tail: Some(LOG_LINES),
        ..LogsRequest::default()
    };
    // The agent writes this log: however long its lines, the pager reads
    // at most LOG_BYTES, and a slow engine gets LOG_WAIT before the
    // overview takes its keys back.
    let mut log = Vec::new();
    let mut chunks = found.engine.logs(&id, request);
    let read = tokio::time::timeout(LOG_WAIT, async {
        while let Some(chunk) = chunks.next().await {
            log.extend(chunk?);
            if log.len() >= LOG_BYTES {
                log.truncate(LOG_BYTES);
                break;
            }
        }
        Ok::<_, jackin_engine::EngineError>(())
    });
    match read.await {
        Ok(result) => result?,
        Err(_) => anyhow::bail!(
            "the engine did not send instance/{name}'s log within {}s",
            LOG_WAIT.as_secs()
        ),
    }
    let mut lines = crate::agent_output::plain_lines(&log);
    // The log ends with a line's end: no empty last line.
    while lines.last().is_some_and(|l| l.is_empty()) {
        lines.pop();
    }
    Ok(lines)
}
