//! The footer: what the last action did first (until the next key), then
//! the keys that fit, the most needed first; a hint that does not fit is
//! dropped whole (and every hint after it), and only a message wider than
//! the screen is cut.

use super::state::{Overview, View};
use crate::output;

/// The keys of the table, the most needed first.
const TABLE_HINTS: [&str; 14] = [
    "Enter attach",
    "? help",
    "q quit",
    "Tab preview",
    "D diff",
    "x shell",
    "p purge",
    "k keep",
    "r resume",
    "l log",
    "d describe",
    "n launch",
    "/ filter",
    "s sort",
];

/// The footer for `state`, at most `width` columns.
pub fn footer(state: &Overview, width: usize) -> String {
    match (&state.view, state.filtering) {
        (View::Pager { .. }, _) => fit(
            "",
            &["q back", "↑/↓ scroll", "space/b page", "g/G top/end"],
            width,
        ),
        (View::Help, _) => fit("", &["any key: back"], width),
        (View::ConfirmPurge { .. }, _) => fit("", &["y purge", "n/Esc cancel"], width),
        (View::Table, true) => fit(
            &format!("filter: {}▏", state.filter),
            &["Enter keep", "Esc clear"],
            width,
        ),
        (View::Table, false) => {
            let mut message = state.message.clone();
            if !state.filter.is_empty() {
                let filter = format!("filter: {}", state.filter);
                message = match message.is_empty() {
                    true => filter,
                    false => format!("{message} · {filter}"),
                };
            }
            fit(&message, &TABLE_HINTS, width)
        }
    }
}

/// ` MESSAGE · HINT · HINT…` in at most `width` columns: the message
/// whole if it fits (else cut, ending with `…`), then as many hints, in
/// their order, as fit whole.
pub fn fit(message: &str, hints: &[&str], width: usize) -> String {
    if width < 2 {
        return String::new();
    }
    let message = output::terminal_safe(message);
    let mut line = String::new();
    let mut used = 0;
    if !message.is_empty() {
        let room = width.saturating_sub(1);
        let length = message.chars().count();
        let shown: String = match length <= room {
            true => message,
            false => message
                .chars()
                .take(room.saturating_sub(1))
                .chain(std::iter::once('…'))
                .collect(),
        };
        line.push(' ');
        line.push_str(&shown);
        used = line.chars().count();
    }
    for hint in hints {
        let piece = match line.is_empty() {
            true => format!(" {hint}"),
            false => format!(" · {hint}"),
        };
        let length = piece.chars().count();
        if used + length > width {
            break;
        }
        line.push_str(&piece);
        used += length;
    }
    line
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_message_comes_first_and_hints_that_do_not_fit_are_dropped_whole() {
        let hints = ["Enter attach", "? help", "q quit"];
        assert_eq!(fit("", &hints, 80), " Enter attach · ? help · q quit");
        // Room for the message and one hint: the rest go, none is cut.
        let line = fit("detached from a", &hints, 34);
        assert_eq!(line, " detached from a · Enter attach");
        // A hint never shows in part.
        let line = fit("detached from a", &hints, 40);
        assert_eq!(line, " detached from a · Enter attach · ? help");
        // Only a message wider than the screen is cut.
        let line = fit(&"m".repeat(50), &hints, 20);
        assert_eq!(line.chars().count(), 20, "{line:?}");
        assert!(line.ends_with('…'), "{line:?}");
        for width in 0..120 {
            let line = fit("purge of x cancelled: nothing changed", &TABLE_HINTS, width);
            assert!(line.chars().count() <= width, "{width}: {line:?}");
        }
    }

    #[test]
    fn the_message_is_made_safe() {
        let line = fit("error: \u{1b}]0;t\u{7}", &[], 80);
        assert!(!line.chars().any(char::is_control), "{line:?}");
    }
}
