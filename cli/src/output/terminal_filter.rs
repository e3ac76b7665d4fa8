//! What reaches the operator's terminal of text jackin did not write: every
//! character that could move the cursor, hide or reorder what is around it
//! is shown escaped.

use unicode_properties::{GeneralCategory, UnicodeGeneralCategory};

/// `text` made safe to print on a terminal: control characters (a carriage
/// return, an escape sequence, a newline inside a value) and the invisible
/// characters that hide or reorder text (every format character: soft
/// hyphens, bidirectional overrides, zero-width marks, tags) are shown
/// escaped, as `\r` or `\u{1b}`. Much of what jackin prints comes from the
/// agent's side (file and branch names in a checkout, messages): it must
/// never move the cursor or hide the lines around it.
pub fn terminal_safe(text: &str) -> String {
    // By general category, from the Unicode tables: a list of our own
    // would miss some (it did: U+00AD, U+FFF9). Besides controls (Cc) and
    // format characters (Cf), the line and paragraph separators (a viewer
    // may break the line there) and unassigned code points (what a newer
    // Unicode makes of them is not known here: the tag block's holes
    // among them).
    let hidden = |c: char| {
        matches!(
            c.general_category(),
            GeneralCategory::Control
                | GeneralCategory::Format
                | GeneralCategory::LineSeparator
                | GeneralCategory::ParagraphSeparator
                | GeneralCategory::Unassigned
        )
    };
    if !text.chars().any(hidden) {
        return text.to_owned();
    }
    text.chars()
        .map(|c| {
            if hidden(c) {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// [`terminal_safe`] for each line of a text made of several lines.
pub fn terminal_safe_lines(text: &str) -> String {
    let mut out: String = text
        .split('\n')
        .map(terminal_safe)
        .collect::<Vec<_>>()
        .join("\n");
    if text.is_empty() {
        out.clear();
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn agent_text_cannot_move_the_cursor() {
        let name = "notes\r\u{1b}[2K\u{1b}[1Aclean\u{202e}txt";
        let safe = terminal_safe(name);
        assert!(!safe.chars().any(|c| c.is_control()), "{safe:?}");
        assert_eq!(safe, "notes\\r\\u{1b}[2K\\u{1b}[1Aclean\\u{202e}txt");
        assert_eq!(terminal_safe("plain/path.rs"), "plain/path.rs");
        // Visible text of every script stays as it is.
        let visible = "naïve café – 日本語 ✓ 🙂 עברית";
        assert_eq!(terminal_safe(visible), visible);
        assert_eq!(terminal_safe_lines("a\rb\nc\n"), "a\\rb\nc\n");
        // Every invisible or reordering format character is shown: L6,
        // the soft hyphen and the interlinear annotation marks among them.
        for hidden in [
            '\u{00ad}',
            '\u{061c}',
            '\u{180e}',
            '\u{2060}',
            '\u{2064}',
            '\u{fff9}',
            '\u{fffb}',
            '\u{feff}',
            '\u{e0041}',
            '\u{e0002}',
            '\u{2028}',
        ] {
            let safe = terminal_safe(&format!("a{hidden}b"));
            assert_eq!(safe, format!("a{}b", hidden.escape_default()), "{hidden:?}");
        }
    }
}
