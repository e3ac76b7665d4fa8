use super::*;

/// Whether `bytes` is only text, `\r`, `\n` and SGR sequences (`ESC [`,
/// digits and `;`, `m`): nothing that moves the cursor but to the next
/// line, sets, asks or writes anything on the terminal.
fn only_text_and_colours(bytes: &[u8]) -> bool {
    let text = String::from_utf8(bytes.to_vec()).expect("UTF-8");
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\r' | '\n' => {}
            '\u{1b}' => {
                if chars.next() != Some('[') {
                    return false;
                }
                loop {
                    match chars.next() {
                        Some('0'..='9' | ';') => {}
                        Some('m') => break,
                        _ => return false,
                    }
                }
            }
            c if c.is_control() => return false,
            _ => {}
        }
    }
    true
}

fn replayed(output: &str) -> String {
    String::from_utf8(screen_of(output.as_bytes(), (80, 24)).replay()).unwrap()
}

#[test]
fn r5_claudes_column_moves_are_spaces() {
    // Claude places words with CSI n G (defect R5).
    let drawn = "\u{25cf}\u{1b}[3GAPI\u{1b}[7GError:\u{1b}[14GCan't";
    assert_eq!(
        screen_of(drawn.as_bytes(), (80, 24)).last_line(),
        "● API Error: Can't"
    );
    assert_eq!(line_as_shown(drawn.as_bytes(), false), "● API Error: Can't");
    assert_eq!(replayed(drawn), "● API Error: Can't\r\n");
}

#[test]
fn the_replay_is_the_last_screen_not_the_frames_that_drew_it() {
    // A frame, then the next drawn over it from one row up.
    let frames = "one\r\ntwo\r\x1b[1A\x1b[Jthree\r\nfour";
    assert_eq!(replayed(frames), "three\r\nfour\r\n");
    // Rows that scrolled off the top are not on the screen.
    let mut small = Screen::new((10, 2));
    small.feed(b"a\r\nb\r\nc");
    assert_eq!(small.rows(), ["b", "c"]);
    // The newest full redraw is where parsing starts: what came before,
    // half a sequence included, is gone from the screen anyway.
    let log = b"\x1b]0;half a title... old\r\n\x1b[2J\x1b[Hnew";
    assert_eq!(newest_redraw(log), 25);
    assert_eq!(screen_of(log, (80, 24)).rows()[0], "new");
    assert_eq!(newest_redraw(b"no redraw"), 0);
}

#[test]
fn a_replay_asks_sets_and_moves_nothing_on_the_operators_terminal() {
    let sequences = [
        "\u{1b}[6n",                     // cursor position report
        "\u{1b}[?6n",                    // the DEC form of it
        "\u{1b}[5n",                     // device status
        "\u{1b}[c",                      // primary device attributes
        "\u{1b}[>c",                     // secondary device attributes
        "\u{1b}[21t",                    // window title report
        "\u{1b}[18t",                    // text area size report
        "\u{1b}[$p",                     // DECRQM-like: an intermediate byte
        "\u{1b}P$qm\u{1b}\\",            // DECRQSS, a DCS query
        "\u{1b}P+q544e\u{1b}\\",         // XTGETTCAP
        "\u{1b}]10;?\u{7}",              // OSC colour query, BEL-ended
        "\u{1b}]11;?\u{1b}\\",           // OSC colour query, ST-ended
        "\u{1b}]52;c;?\u{7}",            // clipboard read
        "\u{1b}]52;c;cGF5bG9hZA==\u{7}", // clipboard write
        "\u{1b}]0;pwned title\u{7}",     // title set
        "\u{1b}]8;;http://x\u{7}",       // hyperlink
        "\u{1b}X sos \u{1b}\\",          // SOS
        "\u{1b}^ pm \u{1b}\\",           // PM
        "\u{1b}_ apc \u{1b}\\",          // APC
        "\u{1b}Z",                       // DECID: identify
        "\u{1b}(0",                      // a character set
        "\u{1b}[?1049h",                 // the alternate screen
        "\u{1b}[?1000h",                 // mouse reporting
        "\u{1b}[?2004h",                 // bracketed paste
        "\u{1b}[999A\u{1b}[999D",        // far up and left
        "\u{1b}[999;999H",               // far down and right
        "\u{1b}[5;10r",                  // a scroll region
        "\u{1b}7\u{1b}[1;1H\u{1b}8",     // save, move, restore
        "\u{9b}6n",                      // 8-bit CSI
        "\u{9d}52;c;?\u{7}",             // 8-bit OSC
        "\u{90}$qm\u{9c}",               // 8-bit DCS
        "\u{1b}",                        // unterminated
        "\u{1b}]52;c;?",                 // unterminated string
    ];
    for sequence in sequences {
        let output = format!("before {sequence}after");
        let replay = screen_of(output.as_bytes(), (80, 24)).replay();
        assert!(only_text_and_colours(&replay), "{sequence:?}: {replay:?}");
        let shown = String::from_utf8(replay).unwrap();
        assert!(
            !shown.contains("pwned") && !shown.contains("cGF5"),
            "{sequence:?}: {shown:?}"
        );
    }
    // The replay never reaches past the rows it replays: as many line ends
    // as rows with text, at most the screen's.
    let tall = "x\r\n".repeat(100) + "\u{1b}[999B\u{1b}[999Cend";
    let replay = screen_of(tall.as_bytes(), (80, 24)).replay();
    assert_eq!(replay.iter().filter(|b| **b == b'\n').count(), 24);
}

#[test]
fn a_replay_keeps_text_and_colours() {
    let output = "\u{1b}[1;31mred\u{1b}[0m plain \u{1b}[38;5;208mé✓\u{1b}[m \u{1b}[38;2;1;2;3mrgb";
    assert_eq!(
        replayed(output),
        "\u{1b}[0;1;31mred\u{1b}[0m plain \u{1b}[0;38;5;208mé✓\u{1b}[0m \
         \u{1b}[0;38;2;1;2;3mrgb\u{1b}[0m\r\n"
    );
    assert_eq!(
        replayed("\u{1b}[91;104mbright"),
        "\u{1b}[0;91;104mbright\u{1b}[0m\r\n"
    );
    // Wide characters take their two columns once.
    assert_eq!(replayed("日本 ok"), "日本 ok\r\n");
    // Invalid UTF-8 is no text: it shows as nothing, or as U+FFFD.
    let mended = screen_of(b"ok \xff\xfe end", (80, 24)).last_line();
    assert!(
        mended.starts_with("ok ") && mended.ends_with(" end"),
        "{mended:?}"
    );
}

#[test]
fn no_control_character_is_ever_in_the_text() {
    let output = "a\u{7}b\u{0}c\u{7f}d\u{85}e\u{9c}f\u{9b}g";
    let screen = screen_of(output.as_bytes(), (80, 24));
    let line = screen.last_line();
    assert!(!line.chars().any(char::is_control), "{line:?}");
    assert!(line.starts_with("abcd"), "{line:?}");
    // Format characters stay, for the caller to escape where it shows a
    // line (a table, a name).
    assert_eq!(
        screen_of("a\u{202e}b".as_bytes(), (80, 24)).last_line(),
        "a\u{202e}b"
    );
}

#[test]
fn the_digest_changes_with_the_text_only() {
    let mut screen = Screen::new((80, 24));
    screen.feed(b"\x1b[2J\x1b[HAsk me");
    let asked = screen.digest();
    // The same frame again, the cursor hidden and shown: no change.
    screen.feed(b"\x1b[?25l\x1b[2J\x1b[HAsk me\x1b[?25h\x1b[1;1H");
    assert_eq!(screen.digest(), asked);
    screen.feed(b"\x1b[1;1H\x1b[1;31mAsk me");
    assert_eq!(screen.digest(), asked);
    screen.feed(b" now");
    assert_ne!(screen.digest(), asked);
}

#[test]
fn a_sequence_split_between_chunks_is_one() {
    let mut screen = Screen::new((80, 24));
    for chunk in [
        &b"one \x1b"[..],
        b"[6",
        b"n two \x1b]52;c",
        b";?\x07three caf\xc3",
        b"\xa9",
    ] {
        screen.feed(chunk);
    }
    assert_eq!(screen.last_line(), "one  two three café");
}

#[test]
fn huge_output_leaves_a_screen_of_its_size() {
    let mut screen = Screen::new((80, 24));
    let line = "0123456789".repeat(50) + "\r\n";
    for _ in 0..2000 {
        screen.feed(line.as_bytes());
    }
    let long_osc = format!("\u{1b}]52;c;{}\u{7}end", "QUFB".repeat(250_000));
    screen.feed(long_osc.as_bytes());
    assert_eq!(screen.last_line(), "end");
    assert!(screen.replay().len() < 24 * (80 * 4 + 16));
    // A size beyond any terminal is bounded.
    let big = Screen::new((u16::MAX, u16::MAX));
    assert_eq!(big.rows().len(), usize::from(MAX_ROWS));
}

#[test]
fn a_log_line_is_drawn_on_its_own() {
    // A progress line redrawn in place: its last state.
    assert_eq!(line_as_shown(b"10%\r50%\r100%", false), "100%");
    assert_eq!(line_as_shown(b"a\tb", false), "a       b");
    // Moves off the line go nowhere.
    assert_eq!(line_as_shown(b"\x1b[5Aup\x1b[3Bdown", false), "updown");
    assert_eq!(
        line_as_shown(b"\x1b[32mok\x1b[0m \x1b]0;t\x07\x1b[6ndone\r", true),
        "\u{1b}[0;32mok\u{1b}[0m done"
    );
    let long = "x".repeat(2000);
    assert_eq!(line_as_shown(long.as_bytes(), false), long);
    let mut lines = Lines::default();
    assert_eq!(lines.feed(b"first\r\nsec", false), ["first"]);
    assert_eq!(lines.feed(b"\x1b[1Gond\r\nthird", false), ["ond"]);
    assert_eq!(lines.finish(false).as_deref(), Some("third"));
    assert_eq!(lines.finish(false), None);
    // An endless line is cut, not held whole.
    let endless = vec![b'y'; 10 * Lines::MAX_PENDING];
    assert_eq!(lines.feed(&endless, false).len(), 10);
}

#[test]
fn a_malformed_or_endless_sequence_reaches_nothing() {
    for output in [
        "a\u{1b}[6\nn",
        "a\u{1b}[1é",
        "a\u{1b}\u{1b}[6nb",
        "a\u{1b}(\nb",
        "a\u{1b}]0;t\u{1b}[6nb\u{1b}[1mc",
    ] {
        let replay = screen_of(output.as_bytes(), (80, 24)).replay();
        assert!(only_text_and_colours(&replay), "{output:?}: {replay:?}");
    }
    // Many unfinished strings in a row are read without recursion.
    let replay = screen_of("\u{1b}]".repeat(100_000).as_bytes(), (80, 24)).replay();
    assert!(only_text_and_colours(&replay), "{replay:?}");
}

#[test]
fn styled_rows_are_the_cells_colours_in_runs_and_no_control_character() {
    let output = b"\x1b[1;31mred\x1b[0m plain\x1b]0;title\x07\r\n\x1b[38;5;200mpink\x1b[48;2;1;2;3mbg\x1b[0m\r\n\r\n";
    let rows = screen_of(output, (40, 5)).styled_rows();
    assert_eq!(rows.len(), 2, "{rows:?}");
    let red = CellStyle {
        foreground: Colour::Indexed(1),
        bold: true,
        ..CellStyle::default()
    };
    assert_eq!(
        rows[0],
        [
            Run {
                text: "red".into(),
                style: red
            },
            Run {
                text: " plain".into(),
                style: CellStyle::default()
            },
        ]
    );
    let pink = CellStyle {
        foreground: Colour::Indexed(200),
        ..CellStyle::default()
    };
    assert_eq!(rows[1][0].text, "pink");
    assert_eq!(rows[1][0].style, pink);
    assert_eq!(rows[1][1].style.background, Colour::Rgb(1, 2, 3));
    for run in rows.iter().flatten() {
        assert!(!run.text.chars().any(char::is_control), "{run:?}");
    }
}

/// The rows a bare vt100 parser of `columns` × `rows` draws from `output`:
/// what the screen showed before the filter.
fn unfiltered(output: &[u8], (columns, rows): (u16, u16)) -> Vec<String> {
    let size = |n: u16| NonZeroU16::new(n).unwrap();
    let mut parser = vt100::Parser::new(size(rows), size(columns), 0);
    parser.process(output);
    parser
        .screen()
        .rows(0, columns)
        .map(|row| row.trim_end().to_owned())
        .collect()
}

/// What `RepClip` of `most` makes of `output` fed in `chunks` (the
/// lengths of the first pieces; the rest is the last one).
fn clipped(output: &[u8], most: u16, chunks: &[usize]) -> Vec<u8> {
    let mut clip = RepClip::new(NonZeroU16::new(most).unwrap());
    let mut out = Vec::new();
    let mut rest = output;
    for len in chunks {
        let (piece, after) = rest.split_at((*len).min(rest.len()));
        clip.feed(piece, |bytes| out.extend_from_slice(bytes));
        rest = after;
    }
    clip.feed(rest, |bytes| out.extend_from_slice(bytes));
    out
}

/// Issue 53, N2: a repeat's count is clipped to the width; one that fits
/// is drawn as it is, and so is every sequence that is no repeat (a
/// private marker or an intermediate byte makes one something else).
#[test]
fn n2_a_repeat_is_clipped_to_the_width_and_nothing_else_changes() {
    let mut screen = Screen::new((10, 4));
    screen.feed(b"x\x1b[65535b");
    // A row's worth after the x, wrapped: not a screen full of them.
    assert_eq!(screen.rows(), ["xxxxxxxxxx", "x", "", ""]);
    assert_eq!(
        clipped(b"x\x1b[65535by", 10, &[]),
        b"x\x1b[65535\x18\x1b[10by"
    );
    for fits in [
        &b"ab\x1b[5bc"[..],
        b"x\x1b[10b",
        b"x\x1b[0b\x1b[b\x1b[;70b\x1b[:70b",
        b"x\x1b[?65535b\x1b[65535 b\x1b[>65535b\x1b#[65535b",
        b"x\x1b[65535A\x1b[65535@\x1b[65535X\x1b]0;[65535b\x07\x1bP[65535b\x1b\\",
    ] {
        assert_eq!(clipped(fits, 10, &[]), fits, "{fits:?}");
        let mut screen = Screen::new((10, 4));
        screen.feed(fits);
        assert_eq!(screen.rows(), unfiltered(fits, (10, 4)), "{fits:?}");
    }
    // The count is the first parameter's first part, as vt100 reads it
    // (saturating: never wrapped round to a small one).
    assert_eq!(clipped(b"\x1b[65536b", 10, &[]), b"\x1b[65536\x18\x1b[10b");
    assert_eq!(clipped(b"\x1b[11;2b", 10, &[]), b"\x1b[11;2\x18\x1b[10b");
    assert_eq!(clipped(b"\x1b[11:2b", 10, &[]), b"\x1b[11:2\x18\x1b[10b");
    // Controls inside the sequence are carried out, and do not end it;
    // DEL and bytes past ASCII are ignored there, after ESC too.
    assert_eq!(clipped(b"\x1b[1\n1b", 10, &[]), b"\x1b[1\n1\x18\x1b[10b");
    assert_eq!(
        clipped(b"\x1b\x7f\xc3[1\x7f\x9b1b", 10, &[]),
        b"\x1b\x7f\xc3[1\x7f\x9b1\x18\x1b[10b"
    );
}

/// Split anywhere between calls, twice, the screen is the one the whole
/// output draws unfiltered while every repeat fits, and the clipped one
/// when some do not.
#[test]
fn n2_a_repeat_split_anywhere_is_one() {
    let fitting: &[u8] = b"ab\x1b[3bc\x1b[;7b\x1b[2:5b\x1b]0;t\x07d\x1b[?5b\x1b[1 b\
        \xe2\x97\x8f\x1b[4b\r\n\x1b[12b\x1b[1;31mz\x1b[0b";
    let huge: &[u8] = b"x\x1b[65535by\r\n\x1b[70000bz\x1b[13b";
    let huge_as_clipped: &[u8] = b"x\x1b[12by\r\n\x1b[12bz\x1b[12b";
    for (output, drawn) in [(fitting, fitting), (huge, huge_as_clipped)] {
        let expected = unfiltered(drawn, (12, 6));
        for first in 0..=output.len() {
            for second in first..=output.len() {
                let mut screen = Screen::new((12, 6));
                screen.feed(&output[..first]);
                screen.feed(&output[first..second]);
                screen.feed(&output[second..]);
                assert_eq!(screen.rows(), expected, "split at {first} and {second}");
            }
        }
    }
}

/// What vte, the parser inside vt100, hands vt100: the oracle the filter
/// is checked against. A repeat is its count as vt100 reads it.
#[derive(Debug, Default)]
struct Parsed(Vec<Event>);

#[derive(Debug, Clone, PartialEq, Eq)]
enum Event {
    Print(char),
    Execute(u8),
    Repeat(u16),
    Csi(Vec<Vec<u16>>, Vec<u8>, bool, char),
    Esc(Vec<u8>, bool, u8),
    Osc(Vec<Vec<u8>>, bool),
    Hook(Vec<Vec<u16>>, Vec<u8>, bool, char),
    Put(u8),
    Unhook,
}

impl vte::Perform for Parsed {
    fn print(&mut self, c: char) {
        self.0.push(Event::Print(c));
    }

    fn execute(&mut self, byte: u8) {
        self.0.push(Event::Execute(byte));
    }

    fn csi_dispatch(&mut self, params: &vte::Params, intermediates: &[u8], ignore: bool, c: char) {
        let params: Vec<Vec<u16>> = params.iter().map(<[u16]>::to_vec).collect();
        self.0.push(match (intermediates, c) {
            ([], 'b') => Event::Repeat(params[0][0].max(1)),
            _ => Event::Csi(params, intermediates.to_vec(), ignore, c),
        });
    }

    fn esc_dispatch(&mut self, intermediates: &[u8], ignore: bool, byte: u8) {
        self.0
            .push(Event::Esc(intermediates.to_vec(), ignore, byte));
    }

    fn osc_dispatch(&mut self, params: &[&[u8]], bell_terminated: bool) {
        let params = params.iter().map(|p| p.to_vec()).collect();
        self.0.push(Event::Osc(params, bell_terminated));
    }

    fn hook(&mut self, params: &vte::Params, intermediates: &[u8], ignore: bool, c: char) {
        let params = params.iter().map(<[u16]>::to_vec).collect();
        self.0
            .push(Event::Hook(params, intermediates.to_vec(), ignore, c));
    }

    fn put(&mut self, byte: u8) {
        self.0.push(Event::Put(byte));
    }

    fn unhook(&mut self) {
        self.0.push(Event::Unhook);
    }
}

fn parsed(output: &[u8]) -> Vec<Event> {
    let mut parsed = Parsed::default();
    vte::Parser::new().advance(&mut parsed, output);
    parsed.0
}

/// Output made of what sequences are made of: runs of an opening (ESC,
/// `ESC [`, a string's), pieces that change or end one (intermediates,
/// private markers, counts small and huge, separators, CAN, SUB, DEL,
/// controls, text, bytes past ASCII) and a final byte (mostly `b`).
fn sequence_soup() -> impl proptest::strategy::Strategy<Value = Vec<u8>> {
    use proptest::sample::select;
    use proptest::strategy::Strategy;
    let openings: Vec<&[u8]> = vec![
        b"\x1b[", b"\x1b[", b"\x1b[", b"\x1b", b"\x1b]", b"\x1bP", b"\x1b#", b"x", b"",
    ];
    let pieces: Vec<&[u8]> = vec![
        b"\x1b",
        b"[",
        b"]",
        b"P",
        b"X",
        b"^",
        b"_",
        b"\\",
        b" ",
        b"!",
        b"#",
        b"0",
        b"7",
        b"12",
        b"29",
        b"65535",
        b"65536",
        b"99999",
        b":",
        b";",
        b"<",
        b"?",
        b"=",
        b">",
        b"m",
        b"x",
        b"\x18",
        b"\x1a",
        b"\x07",
        b"\n",
        b"\x7f",
        b"\x80",
        b"\x9b",
        b"\x9c",
        b"\xc3",
        b"\xa9",
        b"\xe2\x97",
        b"\x8f",
    ];
    let finals: Vec<&[u8]> = vec![b"b", b"b", b"b", b"b", b"@", b"~", b"A", b"m", b"\\"];
    let run = (
        select(openings),
        proptest::collection::vec(select(pieces), 0..5),
        select(finals),
    )
        .prop_map(|(opening, pieces, last)| [opening, &pieces.concat(), last].concat());
    proptest::collection::vec(run, 0..10).prop_map(|runs| runs.concat())
}

/// Whatever the output and however it is cut into calls, the parser sees
/// through the filter exactly what it sees without, but for each repeat
/// past the width: CAN, then a repeat of the width.
#[test]
fn n2_the_parser_sees_through_the_filter_what_it_sees_without_but_clipped_repeats() {
    use proptest::prelude::*;
    let config = ProptestConfig {
        cases: 5000,
        failure_persistence: None,
        ..ProptestConfig::default()
    };
    let cuts = proptest::collection::vec(0usize..20, 0..6);
    proptest!(config, |(output in sequence_soup(), most in 1u16..30, cuts in cuts)| {
        let through = clipped(&output, most, &cuts);
        prop_assert_eq!(&through, &clipped(&output, most, &[]), "the cuts changed it");
        let expected: Vec<Event> = parsed(&output)
            .into_iter()
            .flat_map(|event| match event {
                Event::Repeat(count) if count > most => {
                    vec![Event::Execute(0x18), Event::Repeat(most)]
                }
                other => vec![other],
            })
            .collect();
        prop_assert_eq!(parsed(&through), expected);
    });
}
