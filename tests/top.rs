//! `jackin top` in a real terminal (tmux), and its plain lines when stdout
//! is not one, against the real engine: three agents (one printing, one
//! silent after printing, one kept) show `working`, `needs you` and `kept`;
//! `/` filters, `k` keeps, Enter attaches and detaching comes back, and a
//! new agent that asks rings the bell. And the
//! controller's notifications: a workspace's `notify` command is told
//! `needs-you` and `ended` once each, in its environment only.
//!
//! The workspace's threshold is short (3 s); every wait is generous, and
//! nothing asserts how soon a thing happens (S1).

use std::io::{BufRead, BufReader};
use std::process::Stdio;
use std::time::{Duration, Instant};

use support::terminal::Terminal;
use support::{Controller, Home, busybox_image, ensure_busybox, eventually};

/// A workspace whose quiet agents need you after 3 s.
fn workspace(home: &Home) {
    home.apply(
        "desk",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\nspec:\n  \
         needsYouAfter: 3s\n",
    );
}

/// An instance of the workspace (`desk`) running `script`.
pub(crate) fn agent(home: &Home, name: &str, script: &str) {
    agent_of_role(home, name, "tester", script);
}

/// An instance of the workspace and `role` running `script`.
fn agent_of_role(home: &Home, name: &str, role: &str, script: &str) {
    home.apply(
        name,
        &format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec:\n  \
             workspace: desk\n  role: {{name: {role}}}\n  agent: shell\n  image: {}\n  \
             command: [sh, -c, {}]\n",
            busybox_image(),
            serde_json::to_string(script).unwrap()
        ),
    );
}

/// The three agents: `chatty` prints every second, `asker` printed a
/// question and waits, `parked` is kept.
fn three_agents(home: &Home) {
    ensure_busybox();
    workspace(home);
    agent(home, "chatty", "while true; do echo tick; sleep 1; done");
    agent(
        home,
        "asker",
        "echo 'Proceed? [y/n]'; read answer; sleep 3600",
    );
    agent(home, "parked", "echo parked; sleep 3600");
    home.ok(&["set-phase", "parked", "kept"]);
}

/// The screen's line for instance `name` (its row starts with it, after
/// the selection mark).
fn row(screen: &str, name: &str) -> Option<String> {
    screen
        .lines()
        .find(|l| {
            l.trim_start_matches(['▸', ' '])
                .starts_with(&format!("{name} "))
        })
        .map(str::to_owned)
}

/// Waits until `name`'s row holds `text` (other areas' tests watch `top`
/// with it too).
pub(crate) fn wait_row(term: &Terminal, name: &str, text: &str) {
    let deadline = Instant::now() + Duration::from_secs(90);
    while Instant::now() < deadline {
        if row(&term.screen(), name).is_some_and(|r| r.contains(text)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!(
        "the row of {name} never showed {text:?}; the screen:\n{}",
        term.screen()
    );
}

/// Filters the overview (`/`) by `name`: its row stays, `other`'s goes.
fn filter_to(term: &Terminal, name: &str, other: &str) {
    term.keys(&["/"]);
    term.keys(&["-l", name]);
    term.keys(&["Enter"]);
    eventually(
        Duration::from_secs(30),
        &format!("only {name} shown"),
        || {
            let screen = term.screen();
            row(&screen, name).is_some() && row(&screen, other).is_none()
        },
    );
}

#[test]
fn the_overview_shows_attention_filters_keeps_and_attaches() {
    let home = Home::new();
    three_agents(&home);
    let term = Terminal::start_as(&home, "top", "xterm");
    // Wide enough for every column and the agent's line.
    term.resize(200, 40);
    term.wait_for("ATTENTION", 1);
    wait_row(&term, "chatty", "working");
    wait_row(&term, "asker", "needs you");
    wait_row(&term, "parked", "kept");
    // The last line the agent printed, and its workspace, role and agent.
    wait_row(&term, "asker", "Proceed? [y/n]");
    let screen = term.screen();
    assert!(
        row(&screen, "chatty")
            .unwrap()
            .contains("desk/tester/shell"),
        "{screen}"
    );
    // Filter down to chatty: the others are not shown.
    filter_to(&term, "chatty", "asker");
    // k keeps the selected one: the only one shown.
    term.keys(&["k"]);
    wait_row(&term, "chatty", "Kept");
    wait_row(&term, "chatty", "kept");
    assert_eq!(home.object("chatty")["status"]["phase"], "Kept");
    // Esc clears the filter; then pick asker and attach.
    term.keys(&["Escape"]);
    wait_row(&term, "asker", "needs you");
    filter_to(&term, "asker", "parked");
    term.keys(&["Enter"]);
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    term.keys(&["C-p", "C-q"]);
    // Back in the overview, the instance still running.
    eventually(Duration::from_secs(30), "the overview again", || {
        let screen = term.screen();
        screen.contains("ATTENTION") && row(&screen, "asker").is_some()
    });
    assert_eq!(home.object("asker")["status"]["phase"], "Running");
    // Once asker needs you again (nobody attached), nothing else is due to
    // ring; then a new agent asks: the bell rings.
    wait_row(&term, "asker", "needs you");
    term.forget_bell();
    assert!(!term.rang());
    agent(&home, "late", "echo 'Shall I go on?'; sleep 3600");
    eventually(Duration::from_secs(90), "the bell for late", || term.rang());
}

/// Where `name`'s row is among the rows on the screen.
fn place(screen: &str, name: &str) -> Option<usize> {
    let wanted = row(screen, name)?;
    screen.lines().position(|l| l == wanted)
}

/// The columns use the screen's width: at 170 a long workspace/role/agent
/// shows whole, at 80 it is cut as before. USED moves while an operator is
/// attached: sorted by last use, the older instance comes first once it is
/// attached to (in another terminal), and stays first when they leave.
#[test]
fn columns_fit_the_screen_and_used_moves_while_attached() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home);
    // zeta is made first: by its age alone, alpha was used last (and a
    // tie keeps alpha first too, by name).
    let role = "the-architect-of-long-names";
    let echo = "echo ready; while read l; do echo \"got $l\"; done; sleep 3600";
    agent_of_role(&home, "zeta", role, echo);
    agent(&home, "alpha", "echo hello; sleep 3600");
    let term = Terminal::start_as(&home, "top", "xterm");
    term.resize(170, 40);
    term.wait_for("ATTENTION", 1);
    let whole = format!("desk/{role}/shell");
    wait_row(&term, "zeta", &whole);
    wait_row(&term, "alpha", "desk/tester/shell");
    // s four times: attention, name, age, cpu, last use.
    term.keys(&["s", "s", "s", "s"]);
    term.wait_for("sorted by last use", 1);
    let screen = term.screen();
    assert!(place(&screen, "alpha") < place(&screen, "zeta"), "{screen}");
    // Attached in another terminal, and talking: zeta was used last.
    let attach = Terminal::start_as(&home, "attach zeta", "xterm");
    attach.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    attach.type_until("hello", "got hello");
    eventually(Duration::from_secs(60), "zeta sorted first", || {
        let screen = term.screen();
        place(&screen, "zeta").is_some() && place(&screen, "zeta") < place(&screen, "alpha")
    });
    // Detached: a look that knows it (nobody to answer, then quiet) still
    // sorts zeta first.
    attach.keys(&["C-p", "C-q"]);
    attach.wait_for("detached;", 1);
    wait_row(&term, "zeta", "needs you");
    let screen = term.screen();
    assert!(place(&screen, "zeta") < place(&screen, "alpha"), "{screen}");
    // At 80 columns the column is cut, as ever, and the row still fits.
    term.resize(80, 24);
    let deadline = Instant::now() + Duration::from_secs(30);
    while !row(&term.screen(), "zeta")
        .is_some_and(|r| r.contains("desk/the") && !r.contains(&whole))
    {
        assert!(
            Instant::now() < deadline,
            "not cut at 80:\n{}",
            term.screen()
        );
        std::thread::sleep(Duration::from_millis(250));
    }
}

#[test]
fn with_no_terminal_the_same_rows_come_out_as_plain_lines() {
    let home = Home::new();
    three_agents(&home);
    let mut child = home
        .command(&["top"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    let deadline = Instant::now() + Duration::from_secs(90);
    let wanted = [
        ("chatty", "working"),
        ("asker", "needs you"),
        ("parked", "kept"),
    ];
    for line in lines {
        let line = line.unwrap();
        seen.push(line.clone());
        let shown = |name: &str, attention: &str| {
            seen.iter()
                .any(|l| l.starts_with(&format!("{name} ")) && l.ends_with(attention))
        };
        if wanted
            .iter()
            .all(|(name, attention)| shown(name, attention))
            || Instant::now() > deadline
        {
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    // The header of `get -o wide`, with ATTENTION last; plain text.
    let header = &seen[0];
    assert!(header.starts_with("NAME "), "{seen:#?}");
    assert!(header.contains(" IDLE-CLEANUP "), "{seen:#?}");
    assert!(header.ends_with(" ATTENTION"), "{seen:#?}");
    for (name, attention) in wanted {
        assert!(
            seen.iter()
                .any(|l| l.starts_with(&format!("{name} ")) && l.ends_with(attention)),
            "{name} never showed {attention}: {seen:#?}"
        );
    }
    assert!(
        !seen.iter().any(|l| l.contains('\u{1b}')),
        "escape sequences in plain output: {seen:#?}"
    );
    // `get -o wide` shows the same column.
    let wide = home.ok(&["get", "-o", "wide"]);
    assert!(
        wide.lines().next().unwrap().ends_with("ATTENTION"),
        "{wide}"
    );
}

/// The notify command: appends the event to `told`, and everything it was
/// given (argv and environment) to `given`.
const NOTIFY_SCRIPT: &str = "#!/bin/sh\n\
    { printf 'argv:'; printf ' %s' \"$@\"; printf '\\n'; echo \"cwd: $(pwd)\"; env; echo ---; } >> \"$0.given\"\n\
    echo \"$JACKIN_EVENT $JACKIN_INSTANCE $JACKIN_WORKSPACE\" >> \"$0.told\"\n";

#[test]
fn notify_is_told_needs_you_and_ended_once_each_and_nothing_the_agent_printed() {
    ensure_busybox();
    let home = Home::new();
    let script = home.path().join("notify");
    std::fs::write(&script, NOTIFY_SCRIPT).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let told = home.path().join("notify.told");
    let given = home.path().join("notify.given");
    let pwned = home.path().join("pwned");
    home.apply(
        "desk",
        &format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: desk}}\nspec:\n  \
             exitPolicy: keep\n  needsYouAfter: 3s\n  notify: {{command: [{}, operator-arg], minInterval: 1h}}\n",
            script.display()
        ),
    );
    // A hostile last line: a title escape, a command substitution aimed at
    // the host, then quiet; then the agent ends on its own.
    let hostile = format!(
        "printf 'Proceed? \\033]0;owned\\007 $(touch {})\\n'; sleep 15; exit 0",
        pwned.display()
    );
    agent(&home, "hostile", &hostile);
    let _controller = Controller::start(&home, &[]);
    eventually(
        Duration::from_secs(120),
        "notify told needs-you, then ended",
        || std::fs::read_to_string(&told).is_ok_and(|t| t.lines().count() >= 2),
    );
    eventually(Duration::from_secs(60), "the session kept", || {
        home.object("hostile")["status"]["phase"] == "Kept"
    });
    // Two more looks at least (every second at this threshold): nothing more.
    std::thread::sleep(Duration::from_secs(3));
    let lines: Vec<String> = std::fs::read_to_string(&told)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect();
    assert_eq!(lines, ["needs-you hostile desk", "ended hostile desk"]);
    let given = std::fs::read_to_string(&given).unwrap();
    assert!(given.contains("argv: operator-arg\n"), "{given}");
    // It runs in `/`, and of the controller's environment it gets only
    // what a notifier needs: not JACKIN_HOME, nor any secret beside it.
    assert!(given.contains("cwd: /\n"), "{given}");
    assert!(given.contains("PATH="), "{given}");
    assert!(!given.contains("JACKIN_HOME="), "{given}");
    for printed in ["Proceed", "owned", "touch", "\u{1b}", "\u{7}"] {
        assert!(
            !given.contains(printed),
            "{printed:?} reached notify:\n{given}"
        );
    }
    assert!(!pwned.exists(), "the agent's text ran on the host");
    let described = home.ok(&["describe", "hostile"]);
    assert!(described.contains("Notify"), "{described}");
}

/// A notify command that starts a child in a session of its own (out of
/// its process group), writes the child's pid beside itself, then ignores
/// TERM and waits.
const NOTIFY_STARTS_A_SESSION: &str = "#!/bin/sh\n\
    setsid sh -c 'echo $$ > \"$1\"; exec sleep 299' sh \"$0.child\" &\n\
    trap '' TERM\n\
    sleep 299\n";

/// Whether `pid` runs (a zombie has ended).
fn alive(pid: i32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .ok()
        .and_then(|stat| {
            let rest = &stat[stat.rfind(')')? + 1..];
            rest.split_whitespace().next().map(|state| state != "Z")
        })
        .unwrap_or(false)
}

/// Kills the test's `sleep 299` should it outlive the test.
struct KillAtEnd(std::path::PathBuf);

impl Drop for KillAtEnd {
    fn drop(&mut self) {
        let Some(pid) = std::fs::read_to_string(&self.0)
            .ok()
            .and_then(|p| p.trim().parse::<i32>().ok())
        else {
            return;
        };
        let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
        if cmdline == b"sleep\x00299\x00" {
            let _ = std::process::Command::new("kill")
                .args(["-9", &pid.to_string()])
                .status();
        }
    }
}

/// L4: at its timeout the notify command ends with everything it started,
/// a child that left its process group with `setsid` included.
#[test]
fn notify_ends_at_its_timeout_with_what_it_started_in_a_session_of_its_own() {
    ensure_busybox();
    let home = Home::new();
    let script = home.path().join("notify");
    std::fs::write(&script, NOTIFY_STARTS_A_SESSION).unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let child_pid = home.path().join("notify.child");
    let _cleanup = KillAtEnd(child_pid.clone());
    home.apply(
        "desk",
        &format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: desk}}\nspec:\n  \
             needsYouAfter: 3s\n  notify: {{command: [{}], timeout: 3s, minInterval: 1h}}\n",
            script.display()
        ),
    );
    agent(&home, "asks", "printf 'Proceed?\\n'; exec sleep 3600");
    let _controller = Controller::start(&home, &[]);
    let events = home.unit("asks").join(".jackin/events.jsonl");
    eventually(
        Duration::from_secs(120),
        "notify ran and was killed",
        || {
            std::fs::read_to_string(&events)
                .is_ok_and(|e| e.contains("did not end within 3s and was killed"))
        },
    );
    let pid: i32 = std::fs::read_to_string(&child_pid)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    // Killed before the reaper said so; a little time for the kernel.
    eventually(Duration::from_secs(30), "the setsid child ended", || {
        !alive(pid)
    });
    // Its own `sleep` and the `setsid` child.
    let said = std::fs::read_to_string(&events).unwrap();
    assert!(
        said.contains("with 2 other process(es) it started"),
        "{said}"
    );
}

/// Defect R4: a question with no newline after it (a prompt) never reaches
/// the engine's log, so a look at the log saw an agent that never printed.
/// `jackin top` reads the output stream: the prompt counts, and the agent
/// that waits at it needs you. A one-shot `get -o wide` reads the log (the
/// README says so): there it never printed, until a controller runs with
/// `--watch-output`, whose watchers read the stream and publish what they
/// saw for `get -o wide`.
#[test]
fn r4_a_prompt_with_no_newline_needs_you_in_top_and_in_wide_under_a_controller() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home);
    // Asked again when the terminal's size changes, as a TUI redraws.
    agent(
        &home,
        "prompt",
        "trap 'printf \"\\rShall I go on? \"' WINCH; printf 'Shall I go on? '; \
         until read answer; do :; done; sleep 3600",
    );
    if let Err(seen) = home.wait_in_top("prompt", "needs you", Duration::from_secs(90)) {
        panic!("the prompt never needed you in top:\n{}", seen.join("\n"));
    }
    let wide = home.ok(&["get", "prompt", "-o", "wide"]);
    assert!(
        wide.lines()
            .nth(1)
            .is_some_and(|row| row.ends_with(" idle")),
        "{wide}"
    );
    let controller = Controller::start(&home, &["--watch-output"]);
    let served = |wide: &str| {
        wide.lines()
            .nth(1)
            .is_some_and(|row| row.ends_with(" needs you"))
    };
    let deadline = Instant::now() + Duration::from_secs(90);
    let seen = loop {
        let wide = home.ok(&["get", "prompt", "-o", "wide"]);
        if served(&wide) {
            break wide;
        }
        assert!(
            Instant::now() < deadline,
            "get -o wide never showed the prompt from the controller's look:\n{wide}\n\
             controller log:\n{}",
            controller.log()
        );
        std::thread::sleep(Duration::from_millis(500));
    };
    assert!(
        home.path().join("looks.json").is_file(),
        "the look is published under the home"
    );
    drop(controller);
    // With no controller on the home, its last look is not taken: the log
    // again, where the prompt was never printed.
    let wide = home.ok(&["get", "prompt", "-o", "wide"]);
    assert!(
        wide.lines()
            .nth(1)
            .is_some_and(|row| row.ends_with(" idle")),
        "{wide}\n(with the controller: {seen})"
    );
}

/// Whether `styled` (a `capture-pane -e`) sets any colour: an SGR
/// parameter for a foreground or background colour.
fn has_colour(styled: &str) -> bool {
    styled.split("\u{1b}[").skip(1).any(|sequence| {
        let Some(end) = sequence.find('m') else {
            return false;
        };
        sequence[..end].split(';').any(|param| {
            matches!(
                param.parse::<u16>(),
                Ok(30..=37 | 40..=47 | 90..=97 | 100..=107 | 38 | 48)
            )
        })
    })
}

/// An instance of the workspace running `script`, with `mounts` (YAML
/// flow list) as its mounts.
fn agent_with_mounts(home: &Home, name: &str, script: &str, mounts: &str) {
    home.apply(
        name,
        &format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec:\n  \
             workspace: desk\n  role: {{name: tester}}\n  agent: shell\n  image: {}\n  \
             command: [sh, -c, {}]\n  mounts: {mounts}\n",
            busybox_image(),
            serde_json::to_string(script).unwrap()
        ),
    );
}

/// The preview pane (`Tab`) shows the agent's screen with its colours;
/// the diff view (`D`) its tracked and untracked changes, the agent's text
/// escaped; `p` with unfinished work asks the purge's question after what
/// goes, and a "no" is a cancel: the footer says so and nothing changes.
#[test]
fn the_preview_shows_the_agents_screen_and_the_diff_its_unfinished_work() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home);
    let repos = tempfile::tempdir().unwrap();
    let host = support::host_repo(repos.path());
    agent_with_mounts(
        &home,
        "worker",
        "printf '\\033[32mpreview first line\\033[0m\\nSecond line asks? '; read a; sleep 3600",
        &format!(
            "[{{src: {}, dst: /workspace/app, isolation: worktree}}]",
            host.display()
        ),
    );
    let checkout = home.checkout("worker");
    std::fs::write(checkout.join("README"), "changed by the agent\n").unwrap();
    std::fs::write(
        checkout.join("notes\u{1b}[2J.md"),
        "a new idea \u{1b}]0;owned\u{7}\n",
    )
    .unwrap();
    let term = Terminal::start_as(&home, "top", "xterm");
    term.resize(200, 50);
    term.wait_for("ATTENTION", 1);
    wait_row(&term, "worker", "Running");
    assert!(
        term.screen().contains("· top · 1 instance ·"),
        "{}",
        term.screen()
    );
    // Colours: the phase, at least.
    assert!(
        has_colour(&term.screen_with_styles()),
        "{:?}",
        term.screen_with_styles()
    );
    // Tab: the agent's screen below the table, its first line in green
    // (tmux writes the palette's green as `38;5;2`).
    term.keys(&["Tab"]);
    term.wait_for("preview of worker: its screen, live", 1);
    eventually(Duration::from_secs(30), "the agent's screen", || {
        term.screen()
            .lines()
            .any(|l| l.trim() == "preview first line")
    });
    let styled = term.screen_with_styles();
    let line = styled
        .lines()
        .find(|l| l.contains("preview first line") && !l.contains("worker"))
        .unwrap_or_default();
    assert!(
        line.contains("\u{1b}[32m") || line.contains("\u{1b}[38;5;2m"),
        "{line:?}"
    );
    term.keys(&["Tab"]);
    // D: the tracked change against the base and the untracked file, the
    // agent's escapes shown as text.
    term.keys(&["D"]);
    term.wait_for("tracked changes against the base:", 1);
    let screen = term.screen();
    for wanted in [
        "-host",
        "+changed by the agent",
        "untracked files: 1",
        "+++ notes\\u{1b}[2J.md (untracked, 1 lines)",
        "+a new idea \\u{1b}]0;owned\\u{7}",
    ] {
        assert!(screen.contains(wanted), "{wanted:?} not shown:\n{screen}");
    }
    term.keys(&["q"]);
    term.wait_for("ATTENTION", 1);
    // p: what goes, the unfinished work and the purge's question; no.
    term.keys(&["p"]);
    term.wait_for("Discard this work and purge?", 1);
    term.wait_for("[y/N]", 1);
    let screen = term.screen();
    assert!(screen.contains("What goes:"), "{screen}");
    assert!(screen.contains("discarded/"), "{screen}");
    term.type_line("n");
    term.wait_for("purge of worker cancelled: nothing changed", 1);
    assert!(!term.screen().contains("error"), "{}", term.screen());
    let obj = home.object("worker");
    assert_eq!(obj["status"]["phase"], "Running", "{obj}");
    assert_ne!(obj["spec"]["desiredPhase"], "Purged", "{obj}");
    assert!(checkout.join("README").exists());
    // `get -o wide`: the WORK column, from the assessment the keep
    // recorded, as top shows it.
    wait_row(&term, "worker", "2 files dirty");
    home.ok(&["set-phase", "worker", "kept"]);
    let wide = home.ok(&["get", "worker", "-o", "wide"]);
    let lines: Vec<Vec<char>> = wide.lines().map(|l| l.chars().collect()).collect();
    assert_eq!(lines.len(), 2, "{wide}");
    let header: String = lines[0].iter().collect();
    let at = header
        .find(" WORK ")
        .unwrap_or_else(|| panic!("no WORK:\n{wide}"))
        + 1;
    let work: String = lines[1][at..].iter().collect();
    assert!(work.starts_with("2 files dirty "), "{wide}");
}

/// Under `NO_COLOR` no colour is drawn; the header counts in words that
/// agree with the count; `x` opens a shell in the container and comes back;
/// `p` on clean checkouts asks once, `n` and Esc cancel (no error, nothing
/// purged), `y` purges.
#[test]
fn no_color_a_shell_and_the_question_before_a_purge() {
    ensure_busybox();
    let home = Home::new();
    workspace(&home);
    agent(&home, "solo", "echo hello; sleep 3600");
    agent(&home, "other", "echo hello; sleep 3600");
    let term = Terminal::start_with_env(&home, "top", "TERM=xterm NO_COLOR=1");
    term.resize(200, 50);
    term.wait_for("ATTENTION", 1);
    wait_row(&term, "solo", "Running");
    wait_row(&term, "other", "Running");
    assert!(
        term.screen().contains("· top · 2 instances ·"),
        "{}",
        term.screen()
    );
    let styled = term.screen_with_styles();
    assert!(!has_colour(&styled), "a colour under NO_COLOR: {styled:?}");
    filter_to(&term, "solo", "other");
    assert!(
        term.screen().contains("· top · 1 instance ·"),
        "{}",
        term.screen()
    );
    // x: a shell in the container, then back.
    term.keys(&["x"]);
    term.wait_for("exit the shell to come back", 1);
    term.type_until("echo shell-$((40+2))", "shell-42");
    term.type_line("exit");
    term.wait_for("the shell in solo ended", 1);
    // The next key clears the footer's message: `s` sorts by name, and the
    // frame that says so no longer says what the shell did.
    term.keys(&["s"]);
    term.wait_for("sorted by name", 1);
    assert!(
        !term.screen().contains("the shell in solo ended"),
        "{}",
        term.screen()
    );
    // p: what goes; n cancels, then Esc does.
    for cancel in ["n", "Escape"] {
        term.keys(&["p"]);
        term.wait_for("Purge instance/solo?", 1);
        let screen = term.screen();
        assert!(screen.contains("discarded/ for"), "{screen}");
        assert!(screen.contains("no isolated checkouts"), "{screen}");
        term.keys(&[cancel]);
        term.wait_for("purge of solo cancelled: nothing changed", 1);
        assert_eq!(home.object("solo")["status"]["phase"], "Running");
    }
    term.keys(&["p"]);
    term.wait_for("Purge instance/solo?", 1);
    term.keys(&["y"]);
    term.wait_for("instance/solo purged", 1);
    eventually(Duration::from_secs(60), "solo gone", || {
        !home.jackin(&["get", "solo"]).status.success()
    });
}

/// The launch picker (`n`) marks with ↻ the agents whose conversation a
/// session resumes at its every start, and not in a workspace that turned
/// resume off (issue 57, AR-16).
#[test]
fn the_launch_picker_marks_the_agents_that_resume() {
    ensure_busybox();
    let home = Home::new();
    for (name, extra) in [("desk", ""), ("anew", "  resumeConversations: false\n")] {
        home.apply(
            name,
            &format!(
                "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\n\
                 spec:\n  roles: [{{name: tester, image: {}}}]\n{extra}",
                busybox_image()
            ),
        );
    }
    let term = Terminal::start_as(&home, "top", "xterm");
    term.resize(200, 50);
    term.wait_for("ATTENTION", 1);
    term.keys(&["n"]);
    term.wait_for("resumes its conversation at every start", 1);
    let screen = term.screen();
    let line = |role: &str, ws: &str| {
        screen
            .lines()
            .find(|l| l.contains(role) && l.contains(&format!("workspace {ws}")))
            .map(str::to_owned)
    };
    assert!(line("tester (claude ↻)", "desk").is_some(), "{screen}");
    assert!(line("tester (codex ↻)", "desk").is_some(), "{screen}");
    assert!(line("tester (claude)", "anew").is_some(), "{screen}");
    assert!(line("tester (shell)", "desk").is_some(), "{screen}");
    assert!(!screen.contains("shell ↻"), "{screen}");
    term.keys(&["Escape"]);
}
