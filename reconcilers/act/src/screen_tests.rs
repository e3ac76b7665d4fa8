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
