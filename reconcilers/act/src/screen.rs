//! The agent's output as a terminal shows it: parsed by a terminal emulator
//! (`vt100`), never by a parser of our own, so that a column move is the
//! space it leaves, a line redrawn in place is its last state, and a frame
//! drawn over another shows as the later one. One filter stands in front
//! of it, `RepClip`, so that what parsing costs is bounded by the screen
//! (the count of a repeat is clipped to the width). Pure: the replay on
//! `attach`, `jackin logs` on a terminal, `top`'s LAST LINE and the live
//! output watchers (`controller::live_output`) use it.
//!
//! What comes out is rebuilt from the parsed cells: text, and colours and
//! styles as SGR sequences jackin writes itself. Nothing the agent wrote as
//! an escape sequence passes through, so no cursor move, title, clipboard
//! write or terminal query in its output can reach the operator's terminal.
//! The text of a cell is never a control character (the emulator does not
//! draw them, and [`Screen::replay`] drops any all the same); format
//! characters (bidirectional marks, zero-width ones) stay in the text, for
//! the caller that shows a line in a table to escape.
//!
//! Where the emulator starts decides what it shows:
//! - the replay before an attach (and a watcher that starts from the log,
//!   `top`'s preview) reads the end of the container's log, which may have
//!   been rotated and start mid-frame, so it parses from the newest full
//!   redraw in it ([`newest_redraw`]: a clear of the screen, a reset,
//!   entering the alternate screen), at the size the agent drew at (the
//!   size the operator last attached with). Rows scrolled off are gone,
//!   as a terminal's are, and a frame drawn before a resize may wrap
//!   otherwise;
//! - a live watcher starts where its stream opens;
//! - `jackin logs` on a terminal and `top`'s pager draw each log line on
//!   its own, on a fresh line wide enough for any ([`Lines`]), where a
//!   move off the line goes nowhere.

use std::fmt::Write;
use std::num::NonZeroU16;

/// The largest screen emulated: a terminal reported larger keeps its
/// bottom rows and left columns (its state costs about 40 bytes a cell).
pub const MAX_COLUMNS: u16 = 1000;
/// See [`MAX_COLUMNS`].
pub const MAX_ROWS: u16 = 200;

/// The columns a log line is drawn in by [`line_as_shown`]; longer text
/// wraps onto more rows, up to [`LINE_ROWS`] of them.
const LINE_COLUMNS: u16 = 512;
/// See [`LINE_COLUMNS`]: text past this many rows of one line is cut.
const LINE_ROWS: u16 = 64;

/// The sequences after which a terminal shows only what follows: a clear
/// of the whole screen (the form claude's and most TUIs' full redraws
/// use), a full reset, and entering the alternate screen.
const FULL_REDRAWS: [&[u8]; 5] = [
    b"\x1b[2J",
    b"\x1bc",
    b"\x1b[?1049h",
    b"\x1b[?1047h",
    b"\x1b[?47h",
];

/// An emulated terminal of a fixed size, fed the agent's output. Every
/// byte reaches the emulator through the `RepClip` in front of it.
pub struct Screen {
    parser: vt100::Parser,
    clip: RepClip,
}

impl std::fmt::Debug for Screen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (rows, columns) = self.parser.screen().size();
        write!(f, "Screen({columns}x{rows})")
    }
}

impl Screen {
    /// A blank screen of `columns` × `rows` (each at least 1, at most
    /// [`MAX_COLUMNS`] and [`MAX_ROWS`]), with no scrollback.
    pub fn new((columns, rows): (u16, u16)) -> Self {
        let bounded = |n: u16, max: u16| NonZeroU16::new(n.clamp(1, max)).expect("at least 1");
        let columns = bounded(columns, MAX_COLUMNS);
        Self {
            parser: vt100::Parser::new(bounded(rows, MAX_ROWS), columns, 0),
            clip: RepClip::new(columns),
        }
    }

    /// Draws `output` on the screen, as the terminal would, but for a
    /// repeat longer than a row (`RepClip`). A sequence split between
    /// two calls is one sequence.
    pub fn feed(&mut self, output: &[u8]) {
        let Self { parser, clip } = self;
        clip.feed(output, |bytes| parser.process(bytes));
    }

    /// The text of each row, a column left blank by a cursor move shown as
    /// a space, trailing blanks trimmed.
    pub fn rows(&self) -> Vec<String> {
        let screen = self.parser.screen();
        let (_, columns) = screen.size();
        screen
            .rows(0, columns.get())
            .map(|row| row.trim_end().to_owned())
            .collect()
    }

    /// A digest of the text the screen shows (not its colours nor its
    /// cursor): equal digests, the same text, but for a collision.
    pub fn digest(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.parser.screen().contents().hash(&mut hasher);
        hasher.finish()
    }

    /// The lowest row with any text on it, trimmed; empty for a blank
    /// screen. What a person glancing at the terminal reads last.
    pub fn last_line(&self) -> String {
        self.rows()
            .into_iter()
            .rfind(|row| !row.trim().is_empty())
            .map(|row| row.trim().to_owned())
            .unwrap_or_default()
    }

    /// The screen as text with its colours, to be written on the operator's
    /// terminal from where its cursor is: each row, then `\r\n`, down to the
    /// last row with text. The only escape sequences in it are SGR ones
    /// jackin wrote from each cell's colours and styles, and it ends with
    /// the style reset.
    pub fn replay(&self) -> Vec<u8> {
        let screen = self.parser.screen();
        let (rows, columns) = screen.size();
        let mut lines: Vec<String> = (0..rows.get())
            .map(|row| formatted_row(screen, row, columns.get()))
            .collect();
        while lines.last().is_some_and(String::is_empty) {
            lines.pop();
        }
        let mut out = String::new();
        for line in lines {
            out.push_str(&line);
            out.push_str("\r\n");
        }
        out.into_bytes()
    }
}

/// ESC, which starts every sequence.
const ESC: u8 = 0x1b;

/// The filter in front of the emulator: it clips the count of REP (`CSI n
/// b`, print the last character again n times) to the screen's width.
/// vt100 0.18 prints a repeat one character at a time, whatever its count
/// (up to 65,535), so that eight bytes cost as much as 65,535 characters:
/// a megabyte of them kept `attach`, `top` and `logs` busy for minutes
/// (issue 53, N2). Every other sequence with a count is bounded by the
/// screen already: vt100 clamps the count of ICH, DCH, ECH and the cursor
/// moves to the row, and of IL, DL, SU and SD to the rows.
///
/// A repeat that fits in a row is drawn as it is: that is how programs use
/// it (ncurses, for one, repeats a run of one character within a line). A
/// longer one, which with autowrap would go on over further rows, stops
/// after a row's worth, so that one sequence costs at most a row of
/// characters. Clipping to the whole screen (width × rows) would keep even
/// those as drawn, but then a sequence could cost 200,000 characters on
/// the largest screen, and a megabyte of them minutes again.
///
/// The bytes go on as they came, each as soon as it came (a sequence split
/// between two calls needs nothing kept but its count so far); a repeat to
/// clip ends at its final byte, which is replaced by CAN (which ends any
/// sequence, and which vt100 draws nothing for) and a repeat of the width.
#[derive(Debug)]
struct RepClip {
    parse: Parse,
    most: u16,
    /// What a repeat to clip ends with instead of its final byte: CAN,
    /// then a repeat of `most`.
    clipped: Vec<u8>,
}

/// Where the emulator's parser (vte's state machine, cut down to what
/// decides whether a byte ends a repeat) is in the output. Only an ESC
/// leaves `Ground`, which is text, the strings of OSC, DCS, SOS, PM and
/// APC, an escape with an intermediate byte (where a `[` ends it) and a
/// CSI that is no repeat: in each, an ESC starts a new sequence, CAN and
/// SUB go back to text, and so does its end.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Parse {
    Ground,
    /// After ESC.
    Escape,
    /// In a CSI with no private marker or intermediate byte so far, so a
    /// repeat if it ends with `b`: `count` is its first parameter so far
    /// (saturating, as vte's does), `first` whether digits still add to it.
    Csi {
        count: u16,
        first: bool,
    },
}

impl RepClip {
    fn new(most: NonZeroU16) -> Self {
        Self {
            parse: Parse::Ground,
            most: most.get(),
            clipped: format!("\x18\x1b[{most}b").into_bytes(),
        }
    }

    /// Hands `output` to `process` as it is, in slices of it, but for each
    /// repeat whose count passes the width.
    fn feed(&mut self, output: &[u8], mut process: impl FnMut(&[u8])) {
        let mut passed = 0;
        let mut at = 0;
        while at < output.len() {
            if self.parse == Parse::Ground {
                // Only an ESC leaves the ground: on to the next one.
                match output[at..].iter().position(|b| *b == ESC) {
                    Some(offset) => at += offset,
                    None => break,
                }
            }
            if self.step(output[at]) {
                process(&output[passed..at]);
                process(&self.clipped);
                passed = at + 1;
            }
            at += 1;
        }
        process(&output[passed..]);
    }

    /// Moves on by `byte`; whether it is the final byte of a repeat to
    /// clip. vte's transitions, for the states that matter here.
    fn step(&mut self, byte: u8) -> bool {
        self.parse = match (self.parse, byte) {
            // Anywhere: CAN and SUB end a sequence, ESC starts anew.
            (_, 0x18 | 0x1a) => Parse::Ground,
            (_, ESC) => Parse::Escape,
            (Parse::Ground, _) => Parse::Ground,
            (Parse::Escape, b'[') => Parse::Csi {
                count: 0,
                first: true,
            },
            // A final byte, a string's start or an intermediate byte.
            (Parse::Escape, 0x20..=0x7e) => Parse::Ground,
            (Parse::Csi { count, first: true }, b'0'..=b'9') => Parse::Csi {
                count: count
                    .saturating_mul(10)
                    .saturating_add(u16::from(byte - b'0')),
                first: true,
            },
            // A subparameter or the next parameter: the count is complete.
            (Parse::Csi { count, .. }, b':' | b';') => Parse::Csi {
                count,
                first: false,
            },
            // An intermediate byte, or a private marker (`?`, `>`…): no
            // repeat.
            (Parse::Csi { .. }, 0x20..=0x2f | 0x3c..=0x3f) => Parse::Ground,
            (Parse::Csi { count, .. }, 0x40..=0x7e) => {
                self.parse = Parse::Ground;
                // A count of 0 is 1, never past the width.
                return byte == b'b' && count > self.most;
            }
            // C0 controls are carried out inside a sequence without ending
            // it; DEL and the bytes past ASCII are ignored there.
            (parse, _) => parse,
        };
        false
    }
}

/// Where in `output` the emulator starts: at the newest full redraw (a
/// clear of the screen, a reset, entering the alternate screen), after
/// which nothing before shows; at its start when there is none.
pub fn newest_redraw(output: &[u8]) -> usize {
    FULL_REDRAWS
        .iter()
        .filter_map(|redraw| {
            output
                .windows(redraw.len())
                .rposition(|window| window == *redraw)
        })
        .max()
        .unwrap_or(0)
}

/// The screen `output` leaves on a terminal of `size` (columns, rows),
/// parsed from its newest full redraw on ([`newest_redraw`]).
pub fn screen_of(output: &[u8], size: (u16, u16)) -> Screen {
    let mut screen = Screen::new(size);
    screen.feed(&output[newest_redraw(output)..]);
    screen
}

/// One line of a log (its newline excluded) as a terminal shows it drawn
/// on a fresh line: column moves are spaces, a carriage return redraws it,
/// moves off the line go nowhere. With `colours`, its colours and styles as
/// SGR sequences jackin wrote; without, plain text, trailing blanks
/// trimmed.
pub fn line_as_shown(line: &[u8], colours: bool) -> String {
    let wraps = u16::try_from(line.len() / usize::from(LINE_COLUMNS)).unwrap_or(u16::MAX);
    let rows = wraps.saturating_add(1).min(LINE_ROWS);
    let mut screen = Screen::new((LINE_COLUMNS, rows));
    screen.feed(line);
    let vt = screen.parser.screen();
    let mut shown = String::new();
    for row in 0..rows {
        let text = match colours {
            true => formatted_row(vt, row, LINE_COLUMNS),
            false => vt
                .rows(0, LINE_COLUMNS)
                .nth(usize::from(row))
                .unwrap_or_default(),
        };
        shown.push_str(&text);
    }
    match colours {
        true => shown,
        false => shown.trim_end().to_owned(),
    }
}

/// A log read in chunks, cut into lines as [`line_as_shown`] draws them.
/// An unfinished line is held until its newline, or until it is as long as
/// one line can be drawn; [`Lines::finish`] gives what is left.
#[derive(Debug, Default)]
pub struct Lines {
    pending: Vec<u8>,
}

impl Lines {
    /// The most of an unfinished line held: a line's drawable cells, at
    /// four bytes a character.
    const MAX_PENDING: usize = LINE_COLUMNS as usize * LINE_ROWS as usize * 4;

    /// The lines `chunk` finishes, as shown.
    pub fn feed(&mut self, chunk: &[u8], colours: bool) -> Vec<String> {
        let mut shown = Vec::new();
        for mut piece in chunk.split_inclusive(|b| *b == b'\n') {
            while !piece.is_empty() {
                let room = Self::MAX_PENDING - self.pending.len();
                let (taken, rest) = piece.split_at(piece.len().min(room));
                self.pending.extend_from_slice(taken);
                piece = rest;
                let ended = self.pending.ends_with(b"\n");
                if ended || self.pending.len() >= Self::MAX_PENDING {
                    if ended {
                        self.pending.pop();
                    }
                    shown.push(line_as_shown(&self.pending, colours));
                    self.pending.clear();
                }
            }
        }
        shown
    }

    /// The unfinished line at the end, if any.
    pub fn finish(&mut self, colours: bool) -> Option<String> {
        let rest = std::mem::take(&mut self.pending);
        (!rest.is_empty()).then(|| line_as_shown(&rest, colours))
    }
}

/// A colour a cell was drawn in, as the agent set it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Colour {
    /// The terminal's own.
    #[default]
    Default,
    /// One of the 256 of the palette (0-7 the basic eight, 8-15 their
    /// bright twins).
    Indexed(u8),
    Rgb(u8, u8, u8),
}

/// The colours and styles of a cell: all a cell carries besides its text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CellStyle {
    pub foreground: Colour,
    pub background: Colour,
    pub bold: bool,
    pub dim: bool,
    pub italic: bool,
    pub underline: bool,
    pub inverse: bool,
}

/// Cells side by side in one style: their text (never a control
/// character; a blank cell is a space) and that style.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    pub text: String,
    pub style: CellStyle,
}

impl Screen {
    /// Each row as runs of one style, trailing blank cells left out, down
    /// to the last row with text: for a caller that draws the screen with
    /// styles of its own making (`jackin top`'s preview).
    pub fn styled_rows(&self) -> Vec<Vec<Run>> {
        let screen = self.parser.screen();
        let (rows, columns) = screen.size();
        let mut styled: Vec<Vec<Run>> = (0..rows.get())
            .map(|row| runs(screen, row, columns.get()))
            .collect();
        while styled.last().is_some_and(Vec::is_empty) {
            styled.pop();
        }
        styled
    }
}

/// Row `row` as runs of one style: a blank cell as a space, control
/// characters dropped, trailing blank cells left out.
fn runs(screen: &vt100::Screen, row: u16, columns: u16) -> Vec<Run> {
    let cells: Vec<&vt100::Cell> = (0..columns)
        .filter_map(|col| screen.cell(row, col))
        .collect();
    let Some(last) = cells.iter().rposition(|cell| cell.has_contents()) else {
        return Vec::new();
    };
    let mut runs: Vec<Run> = Vec::new();
    for cell in &cells[..=last] {
        if cell.is_wide_continuation() {
            continue;
        }
        let style = style_of(cell);
        let mut text: String = cell
            .contents()
            .chars()
            .filter(|c| !c.is_control())
            .collect();
        if text.is_empty() {
            text.push(' ');
        }
        match runs.last_mut() {
            Some(run) if run.style == style => run.text.push_str(&text),
            _ => runs.push(Run { text, style }),
        }
    }
    runs
}

/// Row `row` with its colours: SGR sequences written from the cells'
/// attributes (never copied from the agent's output), a blank cell as a
/// space, trailing blank cells left out, ending with the reset when any
/// style was set.
fn formatted_row(screen: &vt100::Screen, row: u16, columns: u16) -> String {
    let mut out = String::new();
    let mut style = String::new();
    for run in runs(screen, row, columns) {
        let wanted = sgr(&run.style);
        if wanted != style {
            out.push_str(if wanted.is_empty() {
                "\x1b[0m"
            } else {
                &wanted
            });
            style = wanted;
        }
        out.push_str(&run.text);
    }
    if !style.is_empty() {
        out.push_str("\x1b[0m");
    }
    out
}

fn colour_of(colour: vt100::Color) -> Colour {
    match colour {
        vt100::Color::Default => Colour::Default,
        vt100::Color::Idx(n) => Colour::Indexed(n),
        vt100::Color::Rgb(r, g, b) => Colour::Rgb(r, g, b),
    }
}

fn style_of(cell: &vt100::Cell) -> CellStyle {
    CellStyle {
        foreground: colour_of(cell.fgcolor()),
        background: colour_of(cell.bgcolor()),
        bold: cell.bold(),
        dim: cell.dim(),
        italic: cell.italic(),
        underline: cell.underline(),
        inverse: cell.inverse(),
    }
}

/// The SGR sequence that sets `style` from the default, empty for the
/// default style.
fn sgr(style: &CellStyle) -> String {
    let mut params = Vec::new();
    for (on, code) in [
        (style.bold, "1"),
        (style.dim, "2"),
        (style.italic, "3"),
        (style.underline, "4"),
        (style.inverse, "7"),
    ] {
        if on {
            params.push(code.to_owned());
        }
    }
    for (colour, base) in [(style.foreground, 30), (style.background, 40)] {
        let param = match colour {
            Colour::Default => continue,
            Colour::Indexed(n) if n < 8 => (base + u16::from(n)).to_string(),
            // The bright eight: 90-97 and 100-107.
            Colour::Indexed(n) if n < 16 => (base + 52 + u16::from(n)).to_string(),
            Colour::Indexed(n) => format!("{};5;{n}", base + 8),
            Colour::Rgb(r, g, b) => format!("{};2;{r};{g};{b}", base + 8),
        };
        params.push(param);
    }
    if params.is_empty() {
        return String::new();
    }
    let mut out = String::from("\x1b[0;");
    let _ = write!(out, "{}m", params.join(";"));
    out
}

#[cfg(test)]
#[path = "screen_tests.rs"]
mod tests;
