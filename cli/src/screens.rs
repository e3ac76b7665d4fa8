//! The decision screens: a rich surface (ratatui) with a plain-text degrade.
//!
//! Rich: the brand line with the screen's label, the context, then either a
//! forced-choice list (`▸` marks the selection, the first row is the
//! default; a filter row above it where typing filters) or nothing to
//! choose (a screen to read and acknowledge with Enter, and to leave with
//! Esc where going back makes sense), and the screen's own key hints in the
//! footer only. Plain, when stdin or stdout is not a terminal, `TERM=dumb`,
//! or the terminal is smaller than 80×24: numbered choices, or a line to
//! press Enter on, read from stdin. A rich screen that fails to draw says
//! so, is logged, and the same question is asked in plain text.

use std::io::{IsTerminal, Write};

use anyhow::Result;
use ratatui::Terminal;
use ratatui::backend::CrosstermBackend;
use ratatui::layout::{Constraint, Layout};
use ratatui::style::{Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::Paragraph;

use crate::terminal::{Keyboard, Surface};

/// One decision to put to the operator.
pub struct Screen {
    /// After the brand: `session ended`, `resume or start new`.
    pub label: String,
    /// Lines above the list: who, where, the evidence.
    pub context: Vec<String>,
    /// `(title, description)`; the first is the default. Unused by the
    /// screens to acknowledge.
    pub choices: Vec<(String, String)>,
    pub kind: Kind,
}

/// What the operator does on a screen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Pick one of the choices; `filter` lets typing narrow them.
    Choose { filter: bool },
    /// Read, then Enter to go on (the unfinished work at a session's end).
    Acknowledge,
    /// Read, then Enter to resume or Esc to go back (the preserved state
    /// of a session about to be resumed).
    ResumeOrBack,
    /// Read, then Esc to go back: the preserved state of a session whose
    /// resume would fail (its conflict, stated). Enter is not an answer.
    OnlyBack,
}

impl Kind {
    /// The key hints of the footer.
    fn footer(self) -> &'static str {
        match self {
            Self::Choose { filter: true } => {
                " ↑/↓ navigate · type to filter · Enter select · Ctrl-C abort"
            }
            Self::Choose { filter: false } => " ↑/↓ navigate · Enter select · Ctrl-C abort",
            Self::Acknowledge => " Enter continue · Ctrl-C abort",
            Self::ResumeOrBack => " Enter resume · Esc back · Ctrl-C abort",
            Self::OnlyBack => " Esc back · Ctrl-C abort",
        }
    }
}

/// What the operator answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// The choice's index (0 on a screen to acknowledge).
    Chose(usize),
    /// Esc on a screen that can go back.
    Back,
    /// Ctrl-C, or the end of input.
    Abort,
}

/// Whether the rich surface can be used here and now.
pub fn rich_available() -> bool {
    let terminals = std::io::stdin().is_terminal() && std::io::stdout().is_terminal();
    let dumb = std::env::var("TERM").map_or(true, |t| t == "dumb" || t.is_empty());
    let big_enough = crossterm::terminal::size().is_ok_and(|(w, h)| w >= 80 && h >= 24);
    terminals && !dumb && big_enough
}

/// Asks, and waits for the answer.
pub async fn choose(screen: &Screen, keyboard: &mut Keyboard) -> Result<Answer> {
    let _turn = crate::deadline::operators_turn();
    if rich_available() {
        match rich(screen, keyboard).await {
            Ok(choice) => return Ok(choice),
            Err(e) => {
                tracing::error!("the rich screen failed: {e:#}");
                eprintln!("the rich screen failed ({e:#}); asking in plain text");
            }
        }
    }
    plain(screen, keyboard).await
}

async fn plain(screen: &Screen, keyboard: &mut Keyboard) -> Result<Answer> {
    let mut err = std::io::stderr();
    writeln!(err, "\njackin' · {}\n", screen.label)?;
    for line in &screen.context {
        writeln!(err, "{line}")?;
    }
    writeln!(err)?;
    match screen.kind {
        Kind::Choose { .. } => {}
        Kind::Acknowledge => {
            write!(err, "Press Enter to continue (Ctrl-C aborts): ")?;
            err.flush()?;
            return Ok(match keyboard.line().await {
                Some(_) => Answer::Chose(0),
                None => Answer::Abort,
            });
        }
        Kind::ResumeOrBack => loop {
            write!(
                err,
                "Press Enter to resume, or type b and Enter to go back: "
            )?;
            err.flush()?;
            match keyboard.line().await.as_deref() {
                None => return Ok(Answer::Abort),
                Some("") => return Ok(Answer::Chose(0)),
                Some("b" | "back" | "\u{1b}") => return Ok(Answer::Back),
                Some(other) => writeln!(err, "{other:?}: press Enter, or type b")?,
            }
        },
        Kind::OnlyBack => loop {
            write!(err, "Type b and Enter to go back (Ctrl-C aborts): ")?;
            err.flush()?;
            match keyboard.line().await.as_deref() {
                None => return Ok(Answer::Abort),
                Some("b" | "back" | "\u{1b}") => return Ok(Answer::Back),
                Some(_) => writeln!(err, "resuming would fail: type b to go back")?,
            }
        },
    }
    for (i, (title, detail)) in screen.choices.iter().enumerate() {
        writeln!(err, "  {}) {title} — {detail}", i + 1)?;
    }
    loop {
        write!(err, "Choice [1]: ")?;
        err.flush()?;
        let Some(answer) = keyboard.line().await else {
            return Ok(Answer::Abort);
        };
        match answer.parse::<usize>() {
            _ if answer.is_empty() => return Ok(Answer::Chose(0)),
            Ok(n) if (1..=screen.choices.len()).contains(&n) => return Ok(Answer::Chose(n - 1)),
            _ => writeln!(
                err,
                "{answer:?} is not a choice: type 1 to {}",
                screen.choices.len()
            )?,
        }
    }
}

/// A key, decoded from the bytes a terminal sends in raw mode.
#[derive(Debug, PartialEq, Eq)]
pub enum Key {
    Up,
    Down,
    Enter,
    Escape,
    Abort,
    Backspace,
    Tab,
    Char(char),
}

/// Splits raw terminal input into keys (arrows in both the normal and the
/// application cursor form).
pub fn keys(bytes: &[u8]) -> Vec<Key> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            0x1b if matches!(bytes.get(i + 1), Some(b'[' | b'O')) => {
                match bytes.get(i + 2) {
                    Some(b'A') => out.push(Key::Up),
                    Some(b'B') => out.push(Key::Down),
                    _ => {}
                }
                i += 3;
                continue;
            }
            0x1b => out.push(Key::Escape),
            b'\r' | b'\n' => out.push(Key::Enter),
            0x03 | 0x04 => out.push(Key::Abort),
            0x7f | 0x08 => out.push(Key::Backspace),
            b'\t' => out.push(Key::Tab),
            b if b.is_ascii_graphic() || b == b' ' => out.push(Key::Char(b as char)),
            _ => {}
        }
        i += 1;
    }
    out
}

async fn rich(screen: &Screen, keyboard: &mut Keyboard) -> Result<Answer> {
    let choosing = matches!(screen.kind, Kind::Choose { .. });
    let filtering = screen.kind == Kind::Choose { filter: true };
    let _surface = Surface::enter()?;
    let mut terminal = Terminal::new(CrosstermBackend::new(std::io::stdout()))?;
    let mut filter = String::new();
    let mut selected = 0usize;
    loop {
        let visible: Vec<usize> = (0..screen.choices.len())
            .filter(|&i| {
                let (title, detail) = &screen.choices[i];
                let needle = filter.to_lowercase();
                title.to_lowercase().contains(&needle) || detail.to_lowercase().contains(&needle)
            })
            .collect();
        selected = selected.min(visible.len().saturating_sub(1));
        terminal.draw(|frame| {
            let context_height = screen.context.len() as u16 + 2;
            let [brand, context, filter_row, list, footer] = Layout::vertical([
                Constraint::Length(2),
                Constraint::Length(context_height),
                Constraint::Length(1),
                Constraint::Min(1),
                Constraint::Length(1),
            ])
            .areas(frame.area());
            frame.render_widget(
                Paragraph::new(Line::from(vec![
                    Span::styled(
                        " jackin' ",
                        Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
                    ),
                    Span::raw(format!("  · {}", screen.label)),
                ])),
                brand,
            );
            let lines: Vec<Line> = screen
                .context
                .iter()
                .map(|l| Line::raw(l.as_str()))
                .collect();
            frame.render_widget(Paragraph::new(lines), context);
            if filtering {
                frame.render_widget(Paragraph::new(format!(" Filter: {filter}")), filter_row);
            }
            let rows: Vec<Line> = visible
                .iter()
                .enumerate()
                .map(|(row, &i)| {
                    let (title, detail) = &screen.choices[i];
                    let marker = if row == selected { " ▸ " } else { "   " };
                    let style = if row == selected {
                        Style::new().add_modifier(Modifier::BOLD)
                    } else {
                        Style::new()
                    };
                    Line::from(vec![
                        Span::styled(format!("{marker}{title}"), style),
                        Span::raw(format!(" — {detail}")),
                    ])
                })
                .collect();
            if choosing {
                frame.render_widget(Paragraph::new(rows), list);
            }
            frame.render_widget(Paragraph::new(screen.kind.footer()), footer);
        })?;
        let Some(chunk) = keyboard.chunk().await else {
            return Ok(Answer::Abort);
        };
        for key in keys(&chunk) {
            match key {
                Key::Abort => return Ok(Answer::Abort),
                Key::Escape if matches!(screen.kind, Kind::ResumeOrBack | Kind::OnlyBack) => {
                    return Ok(Answer::Back);
                }
                Key::Enter if screen.kind == Kind::OnlyBack => {}
                Key::Enter if !choosing => return Ok(Answer::Chose(0)),
                _ if !choosing => {}
                Key::Up => selected = selected.saturating_sub(1),
                Key::Down => selected = (selected + 1).min(visible.len().saturating_sub(1)),
                Key::Enter if !visible.is_empty() => return Ok(Answer::Chose(visible[selected])),
                Key::Enter | Key::Escape => {}
                Key::Backspace if filtering => {
                    filter.pop();
                }
                Key::Char(c) if filtering => {
                    filter.push(c);
                    selected = 0;
                }
                Key::Backspace | Key::Tab | Key::Char(_) => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_input_decodes_into_keys() {
        assert_eq!(
            keys(b"\x1b[B\x1bOA\rk\x7f\t\x03\x1b"),
            [
                Key::Down,
                Key::Up,
                Key::Enter,
                Key::Char('k'),
                Key::Backspace,
                Key::Tab,
                Key::Abort,
                Key::Escape
            ]
        );
    }
}
