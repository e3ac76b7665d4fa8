//! The agent's output shown to the operator: as a terminal shows it
//! (`jackin_act::screen`, a terminal emulator, rebuilds text and
//! colours from the cells it drew), and, where it goes in a table, on one
//! line with every control and invisible format character escaped
//! ([`output::terminal_safe`]).

use jackin_act::screen::{self, Lines};

use crate::output;

/// The screen the agent's output left, for a terminal of `size` (columns,
/// rows: the size it was drawn at), parsed from the newest full redraw in
/// `log`: its rows with their colours and nothing else. So a replay can
/// never ask the terminal something (a cursor position or device report, a
/// title, the clipboard), whose answer the terminal would type into the
/// agent's input, nor set anything on it or move its cursor but down the
/// rows it shows.
pub fn replay(log: &[u8], size: (u16, u16)) -> Vec<u8> {
    screen::screen_of(log, size).replay()
}

/// The last line the agent printed, from its output's end, as one line of
/// plain text for a table: drawn as a terminal draws it (a column move is a
/// space, a line redrawn with carriage returns its last state), controls
/// and invisible format characters escaped, at most `width` characters.
pub fn last_line(output: &[u8], width: usize) -> String {
    plain_lines(output)
        .into_iter()
        .rfind(|line| !line.trim().is_empty())
        .unwrap_or_default()
        .trim()
        .chars()
        .take(width)
        .collect()
}

/// The agent's log as plain lines, each drawn on its own and made safe as
/// [`last_line`] makes its line.
pub fn plain_lines(log: &[u8]) -> Vec<String> {
    let mut lines = Lines::default();
    let mut shown = lines.feed(log, false);
    shown.extend(lines.finish(false));
    shown
        .iter()
        .map(|line| output::terminal_safe(line))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_last_line_is_plain_text_with_every_invisible_character_escaped() {
        let log = b"first\n\x1b[1;31mred\x1b[0m $(rm -rf ~) \x1b]0;title\x07\x1b[6n\ttab\r\n\n";
        assert_eq!(last_line(log, 80), "red $(rm -rf ~)         tab");
        // A progress line redrawn in place: its last state.
        assert_eq!(last_line(b"10%\r50%\r100%", 80), "100%");
        // Claude's words placed by column (defect R5).
        assert_eq!(
            last_line(b"\xe2\x97\x8f\x1b[3GAPI\x1b[7GError", 80),
            "\u{25cf} API Error"
        );
        assert_eq!(last_line(b"abcdef", 3), "abc");
        assert_eq!(last_line(b"", 3), "");
        for hidden in [
            '\u{202e}',
            '\u{00ad}',
            '\u{200b}',
            '\u{2066}',
            '\u{feff}',
            '\u{e0041}',
        ] {
            let line = last_line(format!("a{hidden}b").as_bytes(), 80);
            assert_eq!(line, format!("a{}b", hidden.escape_default()), "{hidden:?}");
        }
        for control in ["\u{85}", "\u{9b}6n", "\u{7}", "\u{7f}"] {
            let line = last_line(format!("a{control}b").as_bytes(), 80);
            assert!(!line.chars().any(char::is_control), "{control:?}: {line:?}");
        }
    }

    #[test]
    fn a_replay_is_the_screen_with_its_colours_and_nothing_else() {
        let log = b"old frame\x1b[2J\x1b[H\x1b[32mok\x1b[0m\x1b]52;c;?\x07 \x1b[6nnow\x1b[999A";
        assert_eq!(replay(log, (80, 24)), b"\x1b[0;32mok\x1b[0m now\r\n");
    }
}
