//! What each key does in the overview: in the pager, the help, the question
//! before a purge, the filter, and the table.

use anyhow::Result;
use jackin_api::DesiredPhase;
use jackin_controller::Store;

use super::actions::{self, Action};
use super::purge::{self, PurgeQuestion};
use super::state::{Overview, View};
use crate::ops::describe;
use crate::output;
use crate::screens::Key;

pub const HELP: &str = "\
↑/↓       select an instance
Enter     attach (Ctrl-P Ctrl-Q detaches and comes back here)
Tab       preview: the selected session's screen, live, below the table
D         diff: the unfinished work in its isolated checkouts
x         shell: `jackin exec -it NAME -- sh`; exit it to come back
k         keep it (stop, resumable)
r         resume it (its \"resume NAME\" screen first when it has isolated checkouts)
p         purge it (asks first: y when its checkouts are clean, the question
          after its unfinished work when they are not)
l         page through its log
d         describe it
n         launch: pick a workspace, role and agent
/         filter (Enter keeps the filter, Esc clears it)
s         sort: attention, name, age, cpu, last use
?         this help
q         quit

ATTENTION: working (output, CPU or writes recently), needs you (printed,
then quiet longer than the workspace's needsYouAfter, nobody attached),
idle, failed, ended, kept. Colours: none when NO_COLOR is set.";

/// What a key asks of the loop.
pub enum Step {
    Quit,
    Act(Action),
}

pub async fn on_key(state: &mut Overview, key: Key, store: &Store) -> Result<Option<Step>> {
    // A key moves on from the last action: its message goes (a key that
    // has something to say says it anew).
    state.message.clear();
    if let View::Pager { lines, top, .. } = &mut state.view {
        return Ok(match pager_key(key, lines.len(), top) {
            Paging::Stay => None,
            Paging::Back => {
                state.view = View::Table;
                None
            }
            Paging::Quit => Some(Step::Quit),
        });
    }
    if matches!(state.view, View::Help) {
        state.view = View::Table;
        return Ok(matches!(key, Key::Abort).then_some(Step::Quit));
    }
    if let View::ConfirmPurge { name, .. } = &state.view {
        let name = name.clone();
        return Ok(confirm_key(state, key, name));
    }
    if state.filtering {
        return Ok(filter_key(state, key));
    }
    table_key(state, key, store).await
}

/// What a key in the pager leaves.
enum Paging {
    Stay,
    Back,
    Quit,
}

fn pager_key(key: Key, lines: usize, top: &mut usize) -> Paging {
    let page = crossterm::terminal::size().map_or(20, |(_, h)| h.saturating_sub(4) as usize);
    let last = lines.saturating_sub(page);
    match key {
        Key::Up | Key::Char('k') => *top = top.saturating_sub(1),
        Key::Down | Key::Char('j') | Key::Enter => *top = (*top + 1).min(last),
        Key::Char(' ') => *top = (*top + page).min(last),
        Key::Char('b') => *top = top.saturating_sub(page),
        Key::Char('g') => *top = 0,
        Key::Char('G') => *top = last,
        Key::Char('q') | Key::Escape => return Paging::Back,
        Key::Abort => return Paging::Quit,
        _ => {}
    }
    Paging::Stay
}

/// The question before a purge of clean checkouts: `y` purges, `n`, `q`
/// or Esc cancels (no error), anything else waits.
fn confirm_key(state: &mut Overview, key: Key, name: String) -> Option<Step> {
    match key {
        Key::Char('y' | 'Y') => {
            state.view = View::Table;
            Some(Step::Act(Action::Purge(name)))
        }
        Key::Char('n' | 'N' | 'q') | Key::Escape => {
            state.view = View::Table;
            state.message = purge::cancelled(&name);
            None
        }
        Key::Abort => Some(Step::Quit),
        _ => None,
    }
}

fn filter_key(state: &mut Overview, key: Key) -> Option<Step> {
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
        Key::Abort => return Some(Step::Quit),
        Key::Up => state.move_by(-1),
        Key::Down => state.move_by(1),
        Key::Tab => {}
    }
    None
}

/// A key on the table: the keys that need no instance first.
async fn table_key(state: &mut Overview, key: Key, store: &Store) -> Result<Option<Step>> {
    match key {
        Key::Abort | Key::Char('q') => return Ok(Some(Step::Quit)),
        Key::Up => state.move_by(-1),
        Key::Down => state.move_by(1),
        Key::Char('/') => state.filtering = true,
        Key::Escape => state.filter.clear(),
        Key::Char('s') => state.sort = state.sort.next(),
        Key::Char('?') => state.view = View::Help,
        Key::Tab => state.preview = !state.preview,
        Key::Char('n') => return Ok(Some(Step::Act(Action::Launch))),
        _ => {
            let Some(name) = state.selected.clone() else {
                return Ok(None);
            };
            return instance_key(state, key, store, name).await;
        }
    }
    Ok(None)
}

/// A key that acts on the selected instance, `name`.
async fn instance_key(
    state: &mut Overview,
    key: Key,
    store: &Store,
    name: String,
) -> Result<Option<Step>> {
    let action = match key {
        Key::Enter => Action::Attach(name),
        Key::Char('k') => Action::Phase(name, DesiredPhase::Kept),
        Key::Char('r') => Action::Phase(name, DesiredPhase::Running),
        Key::Char('x') => Action::Shell(name),
        Key::Char('p') => match purge::question(store, &name).await {
            Ok(PurgeQuestion::Clean(lines)) => {
                state.view = View::ConfirmPurge { name, lines };
                return Ok(None);
            }
            Ok(PurgeQuestion::Unfinished(lines)) => Action::PurgeUnfinished(name, lines),
            Err(e) => {
                state.message = format!("cannot assess {name}'s checkouts: {e:#}");
                return Ok(None);
            }
        },
        Key::Char('d') => {
            let text = match describe::instance_text(store, &name).await {
                Ok(text) => text,
                Err(e) => format!("error: {e:#}"),
            };
            let lines = output::terminal_safe_lines(&text)
                .lines()
                .map(str::to_owned)
                .collect();
            state.view = pager(format!("describe {name}"), lines, false);
            return Ok(None);
        }
        Key::Char('D') => {
            let lines = super::diff::diff_lines(store, &name).await;
            state.view = pager(
                format!("diff of {name}'s checkouts"),
                or_error(lines),
                false,
            );
            return Ok(None);
        }
        Key::Char('l') => {
            let lines = actions::log_lines(store, &name).await;
            state.view = pager(format!("log of {name}"), or_error(lines), true);
            return Ok(None);
        }
        _ => return Ok(None),
    };
    Ok(Some(Step::Act(action)))
}

/// The lines to page through, or the error that stood in their way.
fn or_error(lines: Result<Vec<String>>) -> Vec<String> {
    lines.unwrap_or_else(|e| vec![output::terminal_safe(&format!("error: {e:#}"))])
}

/// The pager over `lines`, from the top or (`at_end`) showing the end.
fn pager(title: String, lines: Vec<String>, at_end: bool) -> View {
    let page = crossterm::terminal::size().map_or(20, |(_, h)| h.saturating_sub(4));
    let top = match at_end {
        true => lines.len().saturating_sub(usize::from(page)),
        false => 0,
    };
    View::Pager { title, lines, top }
}
