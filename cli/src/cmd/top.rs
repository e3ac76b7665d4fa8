//! `jackin top`: every instance on one screen, live, with what each asks
//! of the operator (its attention), and the commands to act on one a key
//! away.
//!
//! A task of its own keeps the picture: it lists the instances from the
//! store and looks at the running ones (`controller::attention`), again
//! at once when an engine event or an action says something changed (at
//! most once a [`LOOK_GAP`]) and regardless as often as
//! [`attention::look_every`] says; every [`STATS_EVERY_LOOKS`]th look also
//! reads the containers' counters (CPU, memory) and assesses the isolated
//! checkouts. The screen only draws the last picture, so no engine call
//! ever holds up a key. An action (attach, keep, resume, purge, launch)
//! leaves the overview for the normal screen, runs the command's own
//! function with this keyboard, and comes back when it is done.
//!
//! With stdout not a terminal it prints what `get -o wide -w` prints, plus
//! the attention column.

use std::collections::HashMap;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use futures::StreamExt;
use jackin_api::names::label;
use jackin_api::{DesiredPhase, Instance};
use jackin_controller::Store;
use jackin_controller::attention::{self, Look};
use jackin_controller::engines::Engines;
use jackin_controller::new_session::last_used;
use jackin_controller::reconcile::assess_checkouts;
use jackin_reconcilers::attention::Attention;
use jackin_reconcilers::engine::LogsRequest;
use jiff::Timestamp;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};
use tokio::sync::{Notify, watch};

use crate::args::{Format, LaunchArgs, TopArgs, WaitArgs};
use crate::cmd::{describe, get, launch, set_phase};
use crate::context::{connect, open_store};
use crate::output;
use crate::screens::{self, Answer, Key, Kind, Screen};
use crate::terminal::{Keyboard, Surface};

/// The least time between two looks, whatever asks for them (a burst of
/// engine events is one look).
const LOOK_GAP: Duration = Duration::from_secs(1);

/// Every this many looks, the counters are read and the checkouts assessed.
const STATS_EVERY_LOOKS: u32 = 5;

/// Checkouts assessed at once (each runs git).
const ASSESS_CONCURRENCY: usize = 4;

/// The log lines `l` pages through: the end of the log.
const LOG_LINES: u64 = 2000;

/// The most of the log `l` reads: 2000 honest lines fit many times over.
const LOG_BYTES: usize = 4 << 20;

/// How long `l` waits for the engine to send the log.
const LOG_WAIT: Duration = Duration::from_secs(10);

/// The widest a last line is shown.
const LAST_LINE_WIDTH: usize = 200;

pub async fn run(args: &TopArgs) -> Result<()> {
    let store = open_store()?;
    if !std::io::stdout().is_terminal() || !screens::rich_available() {
        return get::watch(&store, Format::Wide, None, None, true).await;
    }
    let (tx, pictures) = watch::channel(Arc::new(Picture::default()));
    let nudge = Arc::new(Notify::new());
    let keeper = tokio::spawn(keep_picture(store.clone(), tx, nudge.clone()));
    let result = overview(store, pictures, nudge, args).await;
    keeper.abort();
    result
}

/// What the screen shows: the instances and what the last look found.
#[derive(Default)]
struct Picture {
    objects: Vec<Instance>,
    looks: HashMap<String, Look>,
    /// The unfinished work of each instance with isolated checkouts.
    work: HashMap<String, String>,
}

/// Keeps the picture current until the task is aborted.
async fn keep_picture(store: Store, tx: watch::Sender<Arc<Picture>>, nudge: Arc<Notify>) {
    let reconciler = jackin_controller::Reconciler::new(store.clone(), Engines::new(None));
    // The default engine's events about jackin's containers: a start or an
    // end is shown at once, not at the next look.
    let mut events = match reconciler.engines.default_engine().await {
        Ok(engine) => engine.events(&[(label::MANAGED, "true")]),
        Err(_) => futures::stream::pending().boxed(),
    };
    let mut looks = HashMap::new();
    let live = jackin_controller::live_output::LiveOutputs::default();
    let mut work = HashMap::new();
    let mut round = 0u32;
    loop {
        let started = tokio::time::Instant::now();
        let listed = {
            let store = store.clone();
            jackin_reconcilers::blocking(move || store.list_instances()).await
        };
        let objects = listed.map(|l| l.instances).unwrap_or_default();
        let stats = round.is_multiple_of(STATS_EVERY_LOOKS);
        looks = attention::look(&reconciler, &objects, stats, &looks, Some(&live)).await;
        if stats {
            work = assess(&store, &objects).await;
        }
        round = round.wrapping_add(1);
        let running = objects
            .iter()
            .filter(|o| o.phase() == Some(jackin_api::instance::InstancePhase::Running))
            .count();
        let every = attention::look_every(running);
        let picture = Picture {
            objects,
            looks: looks.clone(),
            work: work.clone(),
        };
        if tx.send(Arc::new(picture)).is_err() {
            return;
        }
        tokio::time::sleep_until(started + LOOK_GAP).await;
        tokio::select! {
            () = tokio::time::sleep_until(started + every) => {}
            () = nudge.notified() => {}
            event = events.next() => {
                if event.is_none() {
                    events = futures::stream::pending().boxed();
                }
            }
        }
    }
}

/// The unfinished work in each instance's isolated checkouts, assessed now,
/// for those that have any.
async fn assess(store: &Store, objects: &[Instance]) -> HashMap<String, String> {
    let isolated: Vec<Instance> = objects
        .iter()
        .filter(|o| {
            o.status.as_ref().is_some_and(|s| !s.mounts.is_empty()) && o.container_name().is_some()
        })
        .cloned()
        .collect();
    // Owned: a stream of borrowed items cannot run in a spawned task.
    futures::stream::iter(isolated)
        .map(|obj| async move {
            let container = obj.container_name().unwrap_or_default();
            let mounts = assess_checkouts(store.layout(), container).await.ok()?;
            let mut assessed = obj;
            assessed.status.get_or_insert_default().mounts = mounts;
            Some((assessed.metadata.name.clone(), launch::summary(&assessed)))
        })
        .buffer_unordered(ASSESS_CONCURRENCY)
        .filter_map(|found| async move { found })
        .collect()
        .await
}

/// The orders rows can be sorted in, `s` going to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Sort {
    /// Needs you first, then working, idle, failed, ended, kept.
    Attention,
    Name,
    /// The newest first.
    Age,
    /// The busiest first.
    Cpu,
    /// The most recently used first.
    LastUse,
}

impl Sort {
    fn next(self) -> Self {
        match self {
            Self::Attention => Self::Name,
            Self::Name => Self::Age,
            Self::Age => Self::Cpu,
            Self::Cpu => Self::LastUse,
            Self::LastUse => Self::Attention,
        }
    }

    fn as_str(self) -> &'static str {
        match self {
            Self::Attention => "attention",
            Self::Name => "name",
            Self::Age => "age",
            Self::Cpu => "cpu",
            Self::LastUse => "last use",
        }
    }
}

/// One instance's row, as shown.
struct Shown {
    name: String,
    cells: [String; 10],
    attention: Option<Attention>,
    created: Option<Timestamp>,
    used: Option<Timestamp>,
    cpu: f64,
}

const HEADER: [&str; 10] = [
    "NAME",
    "WORKSPACE/ROLE/AGENT",
    "PHASE",
    "ATTENTION",
    "WORK",
    "CPU",
    "MEM",
    "AGE",
    "USED",
    "LAST LINE",
];

fn shown(obj: &Instance, picture: &Picture, now: Timestamp) -> Shown {
    let name = obj.metadata.name.clone();
    let look = picture.looks.get(&name).cloned().unwrap_or_default();
    let used = last_used(obj);
    let cells = [
        name.clone(),
        format!(
            "{}/{}/{}",
            obj.spec.workspace.as_deref().unwrap_or("-"),
            obj.spec.role.name,
            obj.spec.agent
        ),
        obj.phase().map_or("-".into(), |p| p.to_string()),
        look.attention.map_or("-".into(), |a| a.to_string()),
        picture
            .work
            .get(&name)
            .cloned()
            .unwrap_or_else(|| "-".into()),
        look.cpu_share
            .map_or("-".into(), |share| format!("{:.0}%", share * 100.0)),
        look.memory()
            .map_or("-".into(), |bytes| format!("{}M", bytes / (1 << 20))),
        output::age(obj.metadata.creation_timestamp, now),
        output::age(used, now),
        crate::agent_output::last_line(&look.last_line, LAST_LINE_WIDTH),
    ]
    .map(|cell| output::terminal_safe(&cell));
    Shown {
        name,
        cells,
        attention: look.attention,
        created: obj.metadata.creation_timestamp,
        used,
        cpu: look.cpu_share.unwrap_or(0.0),
    }
}

/// What fills the screen besides the table.
enum View {
    Table,
    Help,
    /// A text to page through (`l`, `d`), from line `top`.
    Pager {
        title: String,
        lines: Vec<String>,
        top: usize,
    },
}

/// The overview's state between keys.
struct Overview {
    rows: Vec<Shown>,
    /// The selected instance, by name, so that a new picture keeps it.
    selected: Option<String>,
    filter: String,
    filtering: bool,
    sort: Sort,
    view: View,
    /// A line for the footer: what the last action did.
    message: String,
    /// Each instance's attention in the last picture, to ring on a change
    /// to `needs you`; `None` before the first.
    attention: Option<HashMap<String, Option<Attention>>>,
}

impl Overview {
    fn update(&mut self, picture: &Picture, bell: bool) {
        let now = Timestamp::now();
        let needle = self.filter.to_lowercase();
        let mut rows: Vec<Shown> = picture
            .objects
            .iter()
            .map(|obj| shown(obj, picture, now))
            .filter(|row| {
                needle.is_empty()
                    || row.cells[..5]
                        .iter()
                        .any(|cell| cell.to_lowercase().contains(&needle))
            })
            .collect();
        match self.sort {
            Sort::Attention => rows.sort_by(|a, b| {
                (a.attention.is_none(), a.attention, &a.name).cmp(&(
                    b.attention.is_none(),
                    b.attention,
                    &b.name,
                ))
            }),
            Sort::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
            Sort::Age => rows.sort_by_key(|r| std::cmp::Reverse(r.created)),
            Sort::Cpu => rows.sort_by(|a, b| b.cpu.total_cmp(&a.cpu)),
            Sort::LastUse => rows.sort_by_key(|r| std::cmp::Reverse(r.used)),
        }
        let now_attention: HashMap<String, Option<Attention>> = picture
            .objects
            .iter()
            .map(|obj| {
                let name = obj.metadata.name.clone();
                let attention = picture.looks.get(&name).and_then(|l| l.attention);
                (name, attention)
            })
            .collect();
        if bell
            && let Some(before) = &self.attention
            && starts_to_need_you(before, &now_attention)
        {
            let mut stdout = std::io::stdout();
            let _ = stdout.write_all(b"\x07");
            let _ = stdout.flush();
        }
        // The first picture with looks is the baseline: what already
        // needs you when the overview opens rings nothing.
        if !picture.looks.is_empty() || !picture.objects.is_empty() {
            self.attention = Some(now_attention);
        }
        if self
            .selected
            .as_ref()
            .is_none_or(|name| !rows.iter().any(|r| &r.name == name))
        {
            self.selected = rows.first().map(|r| r.name.clone());
        }
        self.rows = rows;
    }

    fn index(&self) -> Option<usize> {
        let name = self.selected.as_ref()?;
        self.rows.iter().position(|r| &r.name == name)
    }

    fn move_by(&mut self, by: isize) {
        if self.rows.is_empty() {
            return;
        }
        let at = self.index().unwrap_or(0) as isize + by;
        let at = at.clamp(0, self.rows.len() as isize - 1) as usize;
        self.selected = Some(self.rows[at].name.clone());
    }
}

/// Whether an instance needs you now that did not in the picture before
/// (a new one that needs you at once included): what rings the bell.
fn starts_to_need_you(
    before: &HashMap<String, Option<Attention>>,
    now: &HashMap<String, Option<Attention>>,
) -> bool {
    now.iter().any(|(name, now)| {
        *now == Some(Attention::NeedsYou)
            && before.get(name).copied().flatten() != Some(Attention::NeedsYou)
    })
}

const HELP: &str = "\
↑/↓       select an instance
Enter     attach (Ctrl-P Ctrl-Q detaches and comes back here)
k         keep it (stop, resumable)
r         resume it (Screen D first when it has isolated checkouts)
p         purge it (asks before discarding unfinished work)
l         page through its log
d         describe it
n         launch: pick a workspace, role and agent
/         filter (Enter keeps the filter, Esc clears it)
s         sort: attention, name, age, cpu, last use
?         this help
q         quit

ATTENTION: working (output, CPU or writes recently), needs you (printed,
then quiet longer than the workspace's needsYouAfter, nobody attached),
idle, failed, ended, kept.";

/// An action a key asks for, run outside the overview's screen.
enum Action {
    Attach(String),
    Phase(String, DesiredPhase),
    Launch,
}

async fn overview(
    store: Store,
    mut pictures: watch::Receiver<Arc<Picture>>,
    nudge: Arc<Notify>,
    args: &TopArgs,
) -> Result<()> {
    let mut keyboard = Keyboard::start();
    let mut surface = Some(Surface::enter()?);
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut state = Overview {
        rows: Vec::new(),
        selected: None,
        filter: String::new(),
        filtering: false,
        sort: Sort::Attention,
        view: View::Table,
        message: String::new(),
        attention: None,
    };
    let mut ticks = tokio::time::interval(Duration::from_secs(1));
    loop {
        terminal.draw(|frame| draw(frame, &state))?;
        let mut action = None;
        tokio::select! {
            changed = pictures.changed() => {
                if changed.is_err() {
                    anyhow::bail!("the overview stopped looking at the instances");
                }
                let picture = pictures.borrow_and_update().clone();
                state.update(&picture, !args.no_bell);
            }
            // Ages move on between pictures.
            _ = ticks.tick() => {}
            chunk = keyboard.chunk() => {
                let Some(chunk) = chunk else { return Ok(()) };
                for key in screens::keys(&chunk) {
                    match on_key(&mut state, key, &store).await? {
                        Some(Step::Quit) => return Ok(()),
                        Some(Step::Act(wanted)) => action = Some(wanted),
                        None => {}
                    }
                }
                let picture = pictures.borrow().clone();
                state.update(&picture, false);
            }
        }
        if let Some(action) = action {
            // The command runs on the normal screen, as it would alone.
            drop(surface.take());
            let done = act(&store, action, &mut keyboard).await;
            if let Err(e) = &done {
                eprintln!(
                    "error: {}\nPress Enter to return to the overview.",
                    output::terminal_safe_lines(&format!("{e:#}"))
                );
                let _ = keyboard.line().await;
            }
            state.message = done.unwrap_or_default();
            surface = Some(Surface::enter()?);
            // A new terminal draws everything anew. (`Terminal::clear` would
            // ask the terminal where its cursor is, and the answer would go
            // to the keyboard's reader instead.)
            terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
            nudge.notify_one();
        }
    }
}

/// What a key asks of the loop.
enum Step {
    Quit,
    Act(Action),
}

async fn on_key(state: &mut Overview, key: Key, store: &Store) -> Result<Option<Step>> {
    if let View::Pager { lines, top, .. } = &mut state.view {
        let page = crossterm::terminal::size().map_or(20, |(_, h)| h.saturating_sub(4) as usize);
        let last = lines.len().saturating_sub(page);
        match key {
            Key::Up | Key::Char('k') => *top = top.saturating_sub(1),
            Key::Down | Key::Char('j') | Key::Enter => *top = (*top + 1).min(last),
            Key::Char(' ') => *top = (*top + page).min(last),
            Key::Char('b') => *top = top.saturating_sub(page),
            Key::Char('g') => *top = 0,
            Key::Char('G') => *top = last,
            Key::Char('q') | Key::Escape => state.view = View::Table,
            Key::Abort => return Ok(Some(Step::Quit)),
            _ => {}
        }
        return Ok(None);
    }
    if matches!(state.view, View::Help) {
        state.view = View::Table;
        return Ok(match key {
            Key::Abort => Some(Step::Quit),
            _ => None,
        });
    }
    if state.filtering {
        match key {
            Key::Enter => state.filtering = false,
            Key::Escape => {
                state.filtering = false;
                state.filter.clear();
            }
            Key::Backspace => {
                state.filter.pop();
            }
            Key::Char(c) => state.filter.push(c),
            Key::Abort => return Ok(Some(Step::Quit)),
            Key::Up => state.move_by(-1),
            Key::Down => state.move_by(1),
        }
        return Ok(None);
    }
    let selected = state.selected.clone();
    let step = match (key, selected) {
        (Key::Abort | Key::Char('q'), _) => Some(Step::Quit),
        (Key::Up, _) => {
            state.move_by(-1);
            None
        }
        (Key::Down, _) => {
            state.move_by(1);
            None
        }
        (Key::Char('/'), _) => {
            state.filtering = true;
            None
        }
        (Key::Escape, _) => {
            state.filter.clear();
            None
        }
        (Key::Char('s'), _) => {
            state.sort = state.sort.next();
            None
        }
        (Key::Char('?'), _) => {
            state.view = View::Help;
            None
        }
        (Key::Char('n'), _) => Some(Step::Act(Action::Launch)),
        (Key::Enter, Some(name)) => Some(Step::Act(Action::Attach(name))),
        (Key::Char('k'), Some(name)) => Some(Step::Act(Action::Phase(name, DesiredPhase::Kept))),
        (Key::Char('r'), Some(name)) => Some(Step::Act(Action::Phase(name, DesiredPhase::Running))),
        (Key::Char('p'), Some(name)) => Some(Step::Act(Action::Phase(name, DesiredPhase::Purged))),
        (Key::Char('d'), Some(name)) => {
            let text = match describe::instance_text(store, &name).await {
                Ok(text) => text,
                Err(e) => format!("error: {e:#}"),
            };
            state.view = View::Pager {
                title: format!("describe {name}"),
                lines: output::terminal_safe_lines(&text)
                    .lines()
                    .map(str::to_owned)
                    .collect(),
                top: 0,
            };
            None
        }
        (Key::Char('l'), Some(name)) => {
            let lines = log_lines(store, &name)
                .await
                .unwrap_or_else(|e| vec![output::terminal_safe(&format!("error: {e:#}"))]);
            let page = crossterm::terminal::size().map_or(20, |(_, h)| h.saturating_sub(4));
            state.view = View::Pager {
                title: format!("log of {name}"),
                top: lines.len().saturating_sub(usize::from(page)),
                lines,
            };
            None
        }
        _ => None,
    };
    Ok(step)
}

/// The end of the agent's log, made safe, a line each.
async fn log_lines(store: &Store, name: &str) -> Result<Vec<String>> {
    let found = super::agent_container(store, name).await?;
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
        Ok::<_, jackin_reconcilers::EngineError>(())
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

/// Runs an action's command with this keyboard; what it did, for the footer.
async fn act(store: &Store, action: Action, keyboard: &mut Keyboard) -> Result<String> {
    let wait = WaitArgs {
        timeout: Duration::from_secs(300),
        no_wait: false,
        concurrency: jackin_controller::converge::DEFAULT_CONCURRENCY,
    };
    match action {
        Action::Attach(name) => {
            crate::cmd::attach::run(
                store.clone(),
                connect().await?,
                &name,
                &wait,
                keyboard,
                false,
            )
            .await?;
            Ok(format!("detached from {name}"))
        }
        Action::Phase(name, phase) => {
            let obj = store.get_instance(&name)?;
            set_phase::set_phases(
                store.clone(),
                &[obj],
                phase,
                false,
                false,
                &wait,
                false,
                Some(keyboard),
            )
            .await?;
            Ok(format!("instance/{name}: desired phase {phase}"))
        }
        Action::Launch => {
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
                wait,
            };
            launch::run(store.clone(), connect().await?, &args, keyboard).await?;
            Ok(format!(
                "launched {}/{}/{}",
                args.workspace, args.role, args.agent
            ))
        }
    }
}

/// The launch picker: every (workspace, role, agent) a workspace declares
/// a role for, with every agent.
async fn pick_trio(
    store: &Store,
    keyboard: &mut Keyboard,
) -> Result<Option<(String, String, String)>> {
    let agents: Vec<String> = store
        .agents()?
        .into_iter()
        .map(|(agent, _)| agent.metadata.name)
        .collect();
    let mut trios = Vec::new();
    for ws in store.list_workspaces()? {
        for role in &ws.spec.roles {
            for agent in &agents {
                trios.push((ws.metadata.name.clone(), role.name.clone(), agent.clone()));
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
        context: vec!["A workspace's role, run by an agent.".into()],
        choices: trios
            .iter()
            .map(|(ws, role, agent)| {
                (
                    output::terminal_safe(&format!("{role} ({agent})")),
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

fn draw(frame: &mut ratatui::Frame, state: &Overview) {
    let [brand, body, footer] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    let needing = state
        .rows
        .iter()
        .filter(|r| r.attention == Some(Attention::NeedsYou))
        .count();
    frame.render_widget(
        Paragraph::new(Line::from(vec![
            Span::styled(
                " jackin' ",
                Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
            ),
            Span::raw(format!(
                "  · top · {} instances · {needing} need you · sorted by {}",
                state.rows.len(),
                state.sort.as_str()
            )),
        ])),
        brand,
    );
    match &state.view {
        View::Help => frame.render_widget(Paragraph::new(HELP), body),
        View::Pager { title, lines, top } => {
            let [head, text] =
                Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(body);
            frame.render_widget(
                Paragraph::new(Span::styled(
                    format!(" {title} ({} lines)", lines.len()),
                    Style::new().add_modifier(Modifier::BOLD),
                )),
                head,
            );
            let shown: Vec<Line> = lines
                .iter()
                .skip(*top)
                .take(usize::from(text.height))
                .map(|l| Line::raw(l.as_str()))
                .collect();
            frame.render_widget(Paragraph::new(shown), text);
        }
        View::Table => {
            let header =
                Row::new(HEADER.map(Cell::from)).style(Style::new().add_modifier(Modifier::BOLD));
            let rows = state.rows.iter().map(|row| {
                let style = match row.attention {
                    Some(Attention::NeedsYou) => Style::new().add_modifier(Modifier::BOLD),
                    _ => Style::new(),
                };
                Row::new(row.cells.clone().map(Cell::from)).style(style)
            });
            let widths = [
                Constraint::Max(24),
                Constraint::Max(24),
                Constraint::Length(9),
                Constraint::Length(9),
                Constraint::Max(20),
                Constraint::Length(5),
                Constraint::Length(6),
                Constraint::Length(4),
                Constraint::Length(4),
                Constraint::Min(10),
            ];
            let table = Table::new(rows, widths)
                .header(header)
                .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
                .highlight_symbol("▸ ");
            let mut table_state = TableState::default().with_selected(state.index());
            frame.render_stateful_widget(table, body, &mut table_state);
        }
    }
    let hint = match (&state.view, state.filtering) {
        (View::Pager { .. }, _) => " ↑/↓ scroll · space/b page · g/G top/end · q back".to_owned(),
        (View::Help, _) => " any key: back".to_owned(),
        (View::Table, true) => format!(" filter: {}▏ (Enter keep · Esc clear)", state.filter),
        (View::Table, false) => {
            let filter = match state.filter.is_empty() {
                true => String::new(),
                false => format!(" · filter: {}", state.filter),
            };
            format!(
                " Enter attach · k keep · r resume · p purge · l log · d describe · n launch · \
                 / filter · s sort · ? help · q quit{filter}{}",
                match state.message.is_empty() {
                    true => String::new(),
                    false => format!(" · {}", state.message),
                }
            )
        }
    };
    frame.render_widget(Paragraph::new(output::terminal_safe(&hint)), footer);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bell_rings_when_an_instance_starts_to_need_you_and_only_then() {
        let picture = |rows: &[(&str, Option<Attention>)]| -> HashMap<String, Option<Attention>> {
            rows.iter().map(|(n, a)| ((*n).to_owned(), *a)).collect()
        };
        let working = picture(&[("a", Some(Attention::Working)), ("b", None)]);
        let asking = picture(&[("a", Some(Attention::NeedsYou)), ("b", None)]);
        assert!(starts_to_need_you(&working, &asking));
        // Still needing you: no second ring.
        assert!(!starts_to_need_you(&asking, &asking));
        assert!(!starts_to_need_you(&asking, &working));
        // A new instance that needs you at once.
        let more = picture(&[
            ("a", Some(Attention::NeedsYou)),
            ("c", Some(Attention::NeedsYou)),
        ]);
        assert!(starts_to_need_you(&asking, &more));
    }
}
