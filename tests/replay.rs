//! What the operator's terminal is shown of a session it did not watch:
//! the screen a reattach replays from the container's log, and `jackin logs`
//! on a terminal. The replay is history, so nothing in it may make the
//! terminal answer into the agent's input. Against the real engine, attached
//! in tmux as a person would.

use std::time::Duration;

use support::terminal::Terminal;
use support::{Home, ensure_busybox, eventually, instance_yaml_with};

#[test]
fn a_reattach_shows_what_the_agent_printed_before() {
    ensure_busybox();
    let home = Home::new();
    let spec = "  command: [sh, -c, 'echo printed-while-nobody-watched; exec sleep 3600']\n";
    home.apply("earlier", &instance_yaml_with("earlier", spec));
    eventually(Duration::from_secs(20), "the agent's first line", || {
        home.ok(&["logs", "earlier"])
            .contains("printed-while-nobody-watched")
    });
    let terminal = Terminal::start(&home, "attach earlier");
    terminal.wait_for("attached to instance/earlier", 1);
    terminal.wait_for("printed-while-nobody-watched", 1);
}

/// The replay is history: queries the agent printed earlier (a cursor
/// position report, device status, device attributes) are not replayed, so
/// the operator's terminal types no answers into the agent's input.
#[test]
fn a_reattach_replays_no_query_that_makes_the_terminal_answer() {
    ensure_busybox();
    let home = Home::new();
    let agent = "printf 'before-\\033[6n\\033[5n\\033[c-replay-marker\\n'; \
                 while read line; do echo \"$line\" >> $HOME/typed; done";
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(agent).unwrap()
    );
    home.apply("asker", &instance_yaml_with("asker", &spec));
    eventually(Duration::from_secs(20), "the agent's first line", || {
        home.ok(&["logs", "asker"]).contains("-replay-marker")
    });
    let typed = home
        .path()
        .join("data")
        .join(home.container("asker"))
        .join("home/typed");
    let terminal = Terminal::start(&home, "attach asker");
    terminal.wait_for("before--replay-marker", 1);
    // Anything the terminal answered is ahead of this line in the agent's input.
    terminal.type_line("done");
    eventually(Duration::from_secs(30), "the agent's line", || {
        std::fs::read_to_string(&typed).is_ok_and(|text| text.ends_with('\n'))
    });
    let text = std::fs::read_to_string(&typed).unwrap();
    assert_eq!(text, "done\n", "the terminal answered the replay: {text:?}");
}

/// Defect R5: claude places its words with column moves (`CSI n G`), and
/// the replay used to drop them, and the spaces with them
/// (`markcolumnskept`). The replay is the screen as it was drawn: a move
/// is the blank it leaves. The agent here prints once and never redraws,
/// so what the attach shows can only be the replay.
#[test]
fn r5_a_reattach_replays_column_moves_as_the_spaces_they_leave() {
    ensure_busybox();
    let home = Home::new();
    let agent = "printf 'mark\\033[10Gcolumns\\033[20Gkept\\n'; exec sleep 3600";
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(agent).unwrap()
    );
    home.apply("mover", &instance_yaml_with("mover", &spec));
    eventually(Duration::from_secs(20), "the agent's line", || {
        home.ok(&["logs", "mover"]).contains("kept")
    });
    let terminal = Terminal::start(&home, "attach mover");
    terminal.wait_for("attached to instance/mover", 1);
    terminal.wait_for("mark     columns   kept", 1);
}

/// `jackin logs` on a terminal shows the log as text and colours only, as
/// the replay does: a query in it would make the terminal type its answer
/// into the operator's shell. Piped, the bytes go on as the agent wrote them.
#[test]
fn logs_on_a_terminal_show_no_query_that_makes_the_terminal_answer() {
    ensure_busybox();
    let home = Home::new();
    let agent = "printf 'before-\\033[6n\\033[5n\\033[c-logs-marker\\n'; sleep 3600";
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(agent).unwrap()
    );
    home.apply("asker", &instance_yaml_with("asker", &spec));
    eventually(Duration::from_secs(20), "the agent's first line", || {
        home.ok(&["logs", "asker"]).contains("-logs-marker")
    });
    let piped = home.ok(&["logs", "asker"]);
    assert!(
        piped.contains("before-\u{1b}[6n"),
        "piped output is as written: {piped:?}"
    );

    // What the shell reads after `jackin logs` is whatever the terminal
    // typed in answer: nothing, unless a query reached it.
    let scratch = tempfile::tempdir().unwrap();
    let typed = scratch.path().join("typed");
    let terminal = Terminal::start(
        &home,
        &format!(
            "logs asker; bash -c 'read -t 3 -r -n 64 line; printf %q \"$line\" > {}'",
            typed.display()
        ),
    );
    terminal.wait_for("before--logs-marker", 1);
    eventually(Duration::from_secs(30), "the shell's read", || {
        typed.exists()
    });
    eventually(Duration::from_secs(5), "the read's result", || {
        std::fs::read_to_string(&typed).is_ok_and(|text| !text.is_empty())
    });
    let text = std::fs::read_to_string(&typed).unwrap();
    assert_eq!(text, "''", "the terminal answered the log: {text:?}");
}
