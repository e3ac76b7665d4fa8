//! Drawing the overview: the brand line with the counts, the table (its
//! phase and attention in colour unless `NO_COLOR` is set), the preview
//! pane, the pager, the help, the question before a purge, and the footer.

use jackin_api::instance::InstancePhase;
use jackin_plan::attention::Attention;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::text::{Line, Span};
use ratatui::widgets::{Cell, Paragraph, Row, Table, TableState};

use super::footer;
use super::keys::HELP;
use super::state::{ATTENTION_CELL, HEADER, Overview, PHASE_CELL, View};

/// Whether colours may be drawn: not when `NO_COLOR` is set to anything
/// but the empty string (no-color.org).
pub fn colour_allowed() -> bool {
    std::env::var_os("NO_COLOR").is_none_or(|value| value.is_empty())
}

/// `1 instance`, `2 instances`.
pub fn counted(count: usize, one: &str, many: &str) -> String {
    match count {
        1 => format!("1 {one}"),
        n => format!("{n} {many}"),
    }
}

/// The style of an attention: what needs you stands out most.
pub fn attention_style(attention: Option<Attention>, colour: bool) -> Style {
    let style = Style::new();
    let (colour_of, bold) = match attention {
        Some(Attention::NeedsYou) => (Some(Color::Yellow), true),
        Some(Attention::Working) => (Some(Color::Green), false),
        Some(Attention::Failed) => (Some(Color::Red), true),
        Some(Attention::Kept) => (Some(Color::Blue), false),
        Some(Attention::Ended) => (Some(Color::DarkGray), false),
        Some(Attention::Idle) | None => (None, false),
    };
    let style = match bold {
        true => style.add_modifier(Modifier::BOLD),
        false => style,
    };
    match (colour, colour_of) {
        (true, Some(c)) => style.fg(c),
        _ => style,
    }
}

/// The style of a phase: up green, on its way yellow, failed red, and so
/// is a `Running` one whose container is `not_running` now (its cell says
/// why).
pub fn phase_style(phase: Option<InstancePhase>, not_running: bool, colour: bool) -> Style {
    let colour_of = match phase {
        Some(InstancePhase::Running) if not_running => Color::Red,
        Some(InstancePhase::Running) => Color::Green,
        Some(InstancePhase::Pending | InstancePhase::Launching | InstancePhase::Purging) => {
            Color::Yellow
        }
        Some(InstancePhase::Crashed | InstancePhase::Failed) => Color::Red,
        Some(InstancePhase::Kept) => Color::Blue,
        Some(InstancePhase::Exited) => Color::DarkGray,
        None => return Style::new(),
    };
    match colour {
        true => Style::new().fg(colour_of),
        false => Style::new(),
    }
}

/// The whole screen. `preview` is the selected session's screen, drawn when
/// the preview pane is open.
pub fn draw(frame: &mut ratatui::Frame, state: &Overview, preview: Option<&[Line<'static>]>) {
    let [brand, body, footer_row] = Layout::vertical([
        Constraint::Length(1),
        Constraint::Min(1),
        Constraint::Length(1),
    ])
    .areas(frame.area());
    frame.render_widget(Paragraph::new(brand_line(state)), brand);
    match &state.view {
        View::Help => frame.render_widget(Paragraph::new(HELP), body),
        View::Pager { title, lines, top } => pager(frame, body, title, lines, *top),
        View::ConfirmPurge { lines, .. } => {
            let shown: Vec<Line> = lines.iter().map(|l| Line::raw(l.as_str())).collect();
            frame.render_widget(Paragraph::new(shown), body);
        }
        View::Table => match (state.preview, preview) {
            (true, Some(screen)) => {
                let [table, pane] =
                    Layout::vertical([Constraint::Percentage(45), Constraint::Percentage(55)])
                        .areas(body);
                draw_table(frame, table, state);
                draw_preview(frame, pane, state, screen);
            }
            _ => draw_table(frame, body, state),
        },
    }
    let hint = footer::footer(state, usize::from(footer_row.width));
    frame.render_widget(Paragraph::new(hint), footer_row);
}

fn brand_line(state: &Overview) -> Line<'static> {
    let needing = state
        .rows
        .iter()
        .filter(|r| r.attention == Some(Attention::NeedsYou))
        .count();
    let need = match needing {
        1 => "1 needs you".to_owned(),
        n => format!("{n} need you"),
    };
    Line::from(vec![
        Span::styled(
            " jackin' ",
            Style::new().add_modifier(Modifier::REVERSED | Modifier::BOLD),
        ),
        Span::raw(format!(
            "  · top · {} · ",
            counted(state.rows.len(), "instance", "instances")
        )),
        Span::styled(
            need,
            match needing {
                0 => Style::new(),
                _ => attention_style(Some(Attention::NeedsYou), state.colour),
            },
        ),
        Span::raw(format!(" · sorted by {}", state.sort.as_str())),
    ])
}

fn pager(frame: &mut ratatui::Frame, body: Rect, title: &str, lines: &[String], top: usize) {
    let [head, text] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(body);
    frame.render_widget(
        Paragraph::new(Span::styled(
            format!(" {title} ({})", counted(lines.len(), "line", "lines")),
            Style::new().add_modifier(Modifier::BOLD),
        )),
        head,
    );
    let shown: Vec<Line> = lines
        .iter()
        .skip(top)
        .take(usize::from(text.height))
        .map(|l| Line::raw(l.as_str()))
        .collect();
    frame.render_widget(Paragraph::new(shown), text);
}

fn draw_table(frame: &mut ratatui::Frame, area: Rect, state: &Overview) {
    let header = Row::new(HEADER.map(Cell::from)).style(Style::new().add_modifier(Modifier::BOLD));
    let rows = state.rows.iter().map(|row| {
        let cells = row.cells.clone().map(Cell::from);
        let cells = cells.into_iter().enumerate().map(|(i, cell)| match i {
            PHASE_CELL => cell.style(phase_style(row.phase, row.not_running, state.colour)),
            ATTENTION_CELL => cell.style(attention_style(row.attention, state.colour)),
            _ => cell,
        });
        let style = match row.attention {
            Some(Attention::NeedsYou) => Style::new().add_modifier(Modifier::BOLD),
            _ => Style::new(),
        };
        Row::new(cells).style(style)
    });
    let widths = widths(state, area.width);
    let table = Table::new(rows, widths)
        .header(header)
        .row_highlight_style(Style::new().add_modifier(Modifier::REVERSED))
        .highlight_symbol("▸ ");
    let mut table_state = TableState::default().with_selected(state.index());
    frame.render_stateful_widget(table, area, &mut table_state);
}

/// The columns that are cut at a width of their own on a narrow screen,
/// with it, in the order a wider screen gives them room back: the
/// workspace/role/agent, the name, the work.
const CUT: [(usize, usize); 3] = [(1, 24), (0, 24), (4, 20)];

/// The columns' widths on a screen `width` wide: as on an 80-column one
/// (the name and the workspace/role/agent 24 at most, the work 20), and
/// what room is left beyond the last line's least (10) goes to the cut
/// columns whose text is longer, so a wide screen shows them whole.
fn widths(state: &Overview, width: u16) -> [Constraint; 10] {
    let widest = |cell: usize| {
        state
            .rows
            .iter()
            .map(|row| row.cells[cell].chars().count())
            .fold(HEADER[cell].chars().count(), usize::max)
    };
    // A phase's width, or a reason's when one is shown (`EngineUnreachable`).
    let phase_width = widest(PHASE_CELL).max(9);
    let mut shown = [0; 10];
    for (cell, at_most) in CUT {
        shown[cell] = at_most;
    }
    let [attention, cpu, mem, age, used, last_line] = [9, 5, 6, 4, 4, 10];
    // The selection mark (2) and a space between each two columns (9).
    let taken = shown.iter().sum::<usize>()
        + phase_width
        + attention
        + cpu
        + mem
        + age
        + used
        + last_line
        + 2
        + 9;
    let mut room = usize::from(width).saturating_sub(taken);
    for (cell, at_most) in CUT {
        let more = widest(cell).saturating_sub(at_most).min(room);
        shown[cell] += more;
        room -= more;
    }
    let length = |n: usize| u16::try_from(n).unwrap_or(u16::MAX);
    [
        Constraint::Max(length(shown[0])),
        Constraint::Max(length(shown[1])),
        Constraint::Length(length(phase_width)),
        Constraint::Length(length(attention)),
        Constraint::Max(length(shown[4])),
        Constraint::Length(length(cpu)),
        Constraint::Length(length(mem)),
        Constraint::Length(length(age)),
        Constraint::Length(length(used)),
        Constraint::Min(length(last_line)),
    ]
}

/// The preview pane: a title line, then the bottom of the agent's screen
/// (where its prompt is) that fits.
fn draw_preview(
    frame: &mut ratatui::Frame,
    area: Rect,
    state: &Overview,
    screen: &[Line<'static>],
) {
    let [title, text] = Layout::vertical([Constraint::Length(1), Constraint::Min(1)]).areas(area);
    let name = state.selected.as_deref().unwrap_or("-");
    let ports = match state.selected_row().map(|row| row.ports.as_str()) {
        None | Some("-") => String::new(),
        Some(ports) => format!(" (ports {ports})"),
    };
    frame.render_widget(
        Paragraph::new(Span::styled(
            format!(" preview of {name}{ports}: its screen, live (Tab closes)"),
            Style::new().add_modifier(Modifier::BOLD | Modifier::UNDERLINED),
        )),
        title,
    );
    let skip = screen.len().saturating_sub(usize::from(text.height));
    frame.render_widget(Paragraph::new(screen[skip..].to_vec()), text);
}
