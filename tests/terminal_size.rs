//! The agent's terminal, as the agent sees it: its size before anyone
//! attaches, and at every attach. Against the real engine, with busybox's
//! `stty` as the agent, attached in tmux as a person would.

use std::time::Duration;

use support::terminal::Terminal;
use support::{Home, ensure_busybox, eventually, instance_yaml_with};

/// The agent's terminal has a size before anyone attaches (the engine's
/// API cannot give one at creation, and at 0×0 a full-screen agent draws
/// nothing, R4 of issue 37): 120×40 at the first start, and at every later
/// start the size the operator last attached with. An attach at the size
/// the terminal already has still tells the agent a size change, so that
/// it draws its screen anew (R5).
#[test]
fn the_terminal_has_a_size_before_anyone_attaches_and_keeps_the_operators() {
    ensure_busybox();
    let home = Home::new();
    // Says its terminal's size once it has one, then at each change of it
    // (SIGWINCH) and each line typed. (busybox's `stty size` on a 0×0
    // terminal prints an error, not `0 0`: the wait is for two numbers.)
    let agent = "trap 'echo \"winch $(stty size)\"' WINCH; \
                 until stty size 2>/dev/null | grep -q '^[1-9][0-9]* [1-9]'; do sleep 0.1; done; \
                 echo \"size $(stty size)\"; \
                 while true; do read line && echo \"size $(stty size)\"; done";
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(agent).unwrap()
    );
    home.apply("sized", &instance_yaml_with("sized", &spec));
    let logs = || home.ok(&["logs", "sized"]);
    eventually(Duration::from_secs(60), "the first start's size", || {
        logs().contains("size 40 120")
    });
    // An attach at the size the terminal has (tmux's window is 120×40)
    // still tells the agent a change, so that it draws anew.
    let winches = || logs().matches("winch ").count();
    let term = Terminal::start(&home, "attach sized; echo attach-returned-$?");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    eventually(Duration::from_secs(30), "a redraw on attach", || {
        winches() > 0
    });
    term.keys(&["C-p", "C-q"]);
    term.wait_for("attach-returned-0", 1);
    // The operator attaches at another size ...
    let again = Terminal::start(&home, "attach sized; echo attach-returned-$?");
    again.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    again.resize(100, 30);
    again.type_until("x", "size 30 100");
    again.keys(&["C-p", "C-q"]);
    again.wait_for("attach-returned-0", 1);
    // ... and the next start, with nobody attached, is at that size.
    support::docker(&["kill", &home.container("sized")]);
    home.ok(&["controller", "--once"]);
    eventually(Duration::from_secs(60), "the restart's size", || {
        logs().matches("size 30 100").count() >= 2
    });
}

/// A resize while attached reaches the agent's terminal at once (T1), and
/// so does one during `exec -t`: each prints its terminal's size per line.
#[test]
fn a_resized_terminal_is_passed_on_to_attach_and_exec() {
    ensure_busybox();
    let home = Home::new();
    let agent = "while read line; do echo \"agent-size $(stty size)\"; done";
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(agent).unwrap()
    );
    home.apply("sized", &instance_yaml_with("sized", &spec));
    let terminal = Terminal::start_as(&home, "attach sized", "xterm");
    // Sizes as `stty size` prints them: rows, then columns.
    terminal.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    terminal.type_until("one", "agent-size 40 120");
    terminal.resize(100, 30);
    terminal.type_until("two", "agent-size 30 100");
    drop(terminal);

    let terminal = Terminal::start_as(
        &home,
        "exec -it sized -- sh -c 'while read line; do echo \"exec-size $(stty size)\"; done'",
        "xterm",
    );
    terminal.type_until("one", "exec-size 40 120");
    terminal.resize(90, 25);
    terminal.type_until("two", "exec-size 25 90");
}

/// What the agent leaves the terminal in (the alternate screen, a hidden
/// cursor, insert mode, mouse reporting, application keys) is undone when
/// the operator detaches, so that the shell's prompt, or the screen of
/// jackin's that follows, is not drawn into it (issue 55, item 4).
#[test]
fn a_detach_gives_the_terminal_back_as_the_shell_had_it() {
    ensure_busybox();
    let home = Home::new();
    let agent = "while read line; do \
                 printf '\\033[?1049h\\033[?25l\\033[4h\\033[?1000h\\033[?1h\\033[7mfull screen'; \
                 echo ' in-alt'; done";
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(agent).unwrap()
    );
    home.apply("modes", &instance_yaml_with("modes", &spec));
    let term = Terminal::start(&home, "attach modes; echo attach-returned-$?");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.type_until("go", "in-alt");
    let flags = "#{alternate_on} #{cursor_flag} #{insert_flag} #{mouse_any_flag} \
                 #{keypad_cursor_flag}";
    // The agent did change them all ...
    assert_eq!(term.pane(flags), "1 0 1 1 1");
    term.keys(&["C-p", "C-q"]);
    term.wait_for("attach-returned-0", 1);
    // ... and the shell has them back.
    assert_eq!(term.pane(flags), "0 1 0 0 0", "{}", term.screen());
    assert!(!term.screen().contains("full screen"), "{}", term.screen());
}
