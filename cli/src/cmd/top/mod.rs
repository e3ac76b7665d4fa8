//! `jackin top`: every instance on one screen, live, with what each asks
//! of the operator (its attention), and the commands to act on one a key
//! away.
//!
//! A task of its own keeps the picture (`picture`): it lists the instances
//! from the store and looks at the running ones (`controller::attention`),
//! again at once when an engine event or an action says something changed
//! (at most once a second) and regardless as often as
//! [`attention::look_every`] says; every fifth look also reads the
//! containers' counters (CPU, memory) and assesses the isolated checkouts.
//! Its live watchers keep each running container's screen, which the
//! preview pane (`preview`) draws. The screen only draws the last picture,
//! so no engine call ever holds up a key. An action (attach, keep, resume,
//! purge, a shell, launch) leaves the overview for the normal screen, runs
//! the command's own function with this keyboard (`actions`), and comes
//! back when it is done.
//!
//! With stdout not a terminal it prints what `get -o wide -w` prints, plus
//! the attention column.
//!
//! [`attention::look_every`]: jackin_controller::attention::look_every

mod actions;
mod diff;
mod draw;
mod footer;
mod keys;
mod picture;
mod preview;
mod purge;
mod state;

use std::io::IsTerminal;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Result;
use jackin_controller::Store;
use jackin_controller::live_output::LiveOutputs;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use tokio::sync::{Notify, watch};

use crate::args::{Format, TopArgs};
use crate::context::open_store;
use crate::ops::watch::watch;
use crate::output;
use crate::screens;
use crate::terminal::{Keyboard, Surface};
use keys::Step;
use picture::Picture;
use state::{Overview, View};

/// How often the screen is drawn again with no new picture: ages move on,
/// and an open preview shows the agent's screen as it is now.
const REDRAW_EVERY: Duration = Duration::from_millis(500);

pub async fn run(args: &TopArgs) -> Result<()> {
    let store = open_store()?;
    if !std::io::stdout().is_terminal() || !screens::rich_available() {
        return watch(&store, Format::Wide, None, None, true).await;
    }
    let (tx, pictures) = watch::channel(Arc::new(Picture::default()));
    let nudge = Arc::new(Notify::new());
    let live = Arc::new(LiveOutputs::seeded());
    let keeper = tokio::spawn(picture::keep_picture(
        store.clone(),
        tx,
        nudge.clone(),
        live.clone(),
    ));
    let result = Box::pin(overview(store, pictures, nudge, &live, args)).await;
    keeper.abort();
    result
}

async fn overview(
    store: Store,
    mut pictures: watch::Receiver<Arc<Picture>>,
    nudge: Arc<Notify>,
    live: &LiveOutputs,
    args: &TopArgs,
) -> Result<()> {
    let mut keyboard = Keyboard::start();
    let mut surface = Some(Surface::enter()?);
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut state = Overview::new(draw::colour_allowed());
    let mut redraws = tokio::time::interval(REDRAW_EVERY);
    loop {
        let preview = (state.preview && matches!(state.view, View::Table))
            .then(|| preview::screen_of(live, state.selected_row(), state.colour));
        terminal.draw(|frame| draw::draw(frame, &state, preview.as_deref()))?;
        let mut action = None;
        tokio::select! {
            changed = pictures.changed() => {
                if changed.is_err() {
                    anyhow::bail!("the overview stopped looking at the instances");
                }
                let picture = pictures.borrow_and_update().clone();
                state.update(&picture, !args.no_bell);
            }
            _ = redraws.tick() => {}
            chunk = keyboard.chunk() => {
                let Some(chunk) = chunk else { return Ok(()) };
                for key in screens::keys(&chunk) {
                    match keys::on_key(&mut state, key, &store).await? {
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
            let done = Box::pin(actions::act(&store, action, &mut keyboard)).await;
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
