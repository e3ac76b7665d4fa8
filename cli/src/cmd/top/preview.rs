//! The preview pane (`Tab`): the selected session's screen as the agent
//! drew it, from the terminal model its live watcher keeps
//! (`controller::live_output`, the emulator the attach replay uses too).
//! Each cell's text and colours are rebuilt into ratatui spans: nothing the
//! agent wrote as an escape sequence reaches the operator's terminal, its
//! text holds no control character (the emulator draws none), and the
//! invisible format characters that hide or reorder text are shown escaped,
//! as everywhere else. Under `NO_COLOR` the colours go; bold, underline and
//! the like stay.

use jackin_act::screen::{CellStyle, Colour, Run};
use jackin_controller::live_output::LiveOutputs;
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};

use super::state::{PHASE_CELL, Shown};
use crate::output;

/// The screen of `row`'s running container, as lines to draw; a line that
/// says why there is none otherwise.
pub fn screen_of(live: &LiveOutputs, row: Option<&Shown>, colour: bool) -> Vec<Line<'static>> {
    let Some(row) = row else {
        return vec![Line::raw(" no instance selected")];
    };
    let rows = row.container.as_deref().and_then(|id| live.styled_rows(id));
    match rows {
        Some(rows) if !rows.is_empty() => lines(&rows, colour),
        Some(_) => vec![Line::raw(" its screen is blank so far")],
        None => vec![Line::raw(format!(
            " {} has no running container to preview (phase {})",
            row.name, row.cells[PHASE_CELL]
        ))],
    }
}

/// Rows of styled runs as ratatui lines: each run's text made safe, its
/// style rebuilt.
pub fn lines(rows: &[Vec<Run>], colour: bool) -> Vec<Line<'static>> {
    rows.iter()
        .map(|runs| {
            Line::from(
                runs.iter()
                    .map(|run| {
                        Span::styled(output::terminal_safe(&run.text), style(&run.style, colour))
                    })
                    .collect::<Vec<_>>(),
            )
        })
        .collect()
}

/// A cell's style as ratatui's; its colours only with `colour`.
pub fn style(cell: &CellStyle, colour: bool) -> Style {
    let mut style = Style::new();
    for (on, modifier) in [
        (cell.bold, Modifier::BOLD),
        (cell.dim, Modifier::DIM),
        (cell.italic, Modifier::ITALIC),
        (cell.underline, Modifier::UNDERLINED),
        (cell.inverse, Modifier::REVERSED),
    ] {
        if on {
            style = style.add_modifier(modifier);
        }
    }
    if colour {
        if let Some(fg) = colour_of(cell.foreground) {
            style = style.fg(fg);
        }
        if let Some(bg) = colour_of(cell.background) {
            style = style.bg(bg);
        }
    }
    style
}

fn colour_of(colour: Colour) -> Option<Color> {
    match colour {
        Colour::Default => None,
        Colour::Indexed(n) => Some(Color::Indexed(n)),
        Colour::Rgb(r, g, b) => Some(Color::Rgb(r, g, b)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(text: &str, style: CellStyle) -> Run {
        Run {
            text: text.into(),
            style,
        }
    }

    #[test]
    fn a_cells_colours_and_styles_become_ratatuis_and_its_text_is_escaped() {
        let red_bold = CellStyle {
            foreground: Colour::Indexed(1),
            background: Colour::Rgb(1, 2, 3),
            bold: true,
            underline: true,
            ..CellStyle::default()
        };
        let rows = vec![vec![
            run("ok", red_bold),
            run(" a\u{202e}b", CellStyle::default()),
        ]];
        let shown = lines(&rows, true);
        let spans = &shown[0].spans;
        assert_eq!(spans[0].content, "ok");
        assert_eq!(spans[0].style.fg, Some(Color::Indexed(1)));
        assert_eq!(spans[0].style.bg, Some(Color::Rgb(1, 2, 3)));
        assert!(
            spans[0]
                .style
                .add_modifier
                .contains(Modifier::BOLD | Modifier::UNDERLINED)
        );
        // The invisible override that would reorder the text, escaped.
        assert_eq!(spans[1].content, " a\\u{202e}b");
        assert_eq!(spans[1].style, Style::new());
        // NO_COLOR: the styles stay, the colours go.
        let plain = lines(&rows, false);
        assert_eq!(plain[0].spans[0].style.fg, None);
        assert_eq!(plain[0].spans[0].style.bg, None);
        assert!(
            plain[0].spans[0]
                .style
                .add_modifier
                .contains(Modifier::BOLD)
        );
    }
}
