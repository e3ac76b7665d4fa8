//! The agent's own report of its state (issue 54): jackin's report
//! program, run by the agent's hooks, decides attention at once in a
//! one-shot `get -o wide` (no controller, no watcher), and `describe` names
//! it as the source; a report goes with the container's start; whatever
//! the agent leaves at the report's place is read as untrusted.

use std::time::Duration;

use super::top::agent;
use support::{Home, docker, ensure_busybox, eventually};

/// A workspace whose screen judgement would wait an hour: whatever says
/// `needs you` sooner is the report.
fn patient_workspace(home: &Home) {
    home.apply(
        "desk",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\nspec:\n  \
         needsYouAfter: 1h\n",
    );
}

/// The ATTENTION column of the instance's row in a one-shot `get -o wide`.
fn attention(home: &Home, name: &str) -> String {
    let wide = home.ok(&["get", name, "-o", "wide"]);
    let row = wide.lines().nth(1).unwrap_or_default().to_owned();
    ["needs you", "working", "idle"]
        .into_iter()
        .find(|a| row.ends_with(&format!(" {a}")))
        .map_or(row, str::to_owned)
}

fn attention_line(home: &Home, name: &str) -> String {
    let described = home.ok(&["describe", name]);
    described
        .lines()
        .find(|l| l.starts_with("Attention:"))
        .unwrap_or_else(|| panic!("no Attention line:\n{described}"))
        .to_owned()
}

/// Reports once in the unit's life (a marker in its home), then waits for
/// `go` to say it works.
const REPORTS_ONCE: &str = "echo ready; if [ ! -e $HOME/reported ]; then touch $HOME/reported; \
    /bin/sh /jackin/bin/report needs-input; until [ -e $HOME/go ]; do sleep 0.2; done; \
    /bin/sh /jackin/bin/report working; fi; exec sleep 3600";

#[test]
fn a_report_decides_attention_at_once_and_goes_with_the_containers_start() {
    ensure_busybox();
    let home = Home::new();
    patient_workspace(&home);
    agent(&home, "asks", REPORTS_ONCE);
    eventually(
        Duration::from_secs(60),
        "the report makes it need you",
        || attention(&home, "asks") == "needs you",
    );
    let line = attention_line(&home, "asks");
    assert_eq!(
        line,
        "Attention:        needs you (from the agent's own report: needs-input)"
    );
    std::fs::write(home.unit("asks").join("home/go"), "").unwrap();
    eventually(Duration::from_secs(60), "the report says it works", || {
        attention_line(&home, "asks").contains("report: working")
    });
    assert_eq!(attention(&home, "asks"), "working");
    // A new start of the container: the report of the last one goes, and
    // the screen decides until the agent reports again (it does not).
    docker(&["stop", "-t", "1", &home.container("asks")]);
    home.ok(&["controller", "--once"]);
    eventually(Duration::from_secs(60), "the restored agent runs", || {
        attention_line(&home, "asks").contains("from its screen")
    });
    assert!(!home.unit("asks").join("state/report").exists());
}

/// What the agent leaves where the report goes, as it can: a FIFO, a link
/// to a file that holds a good report, a huge file, a file of escapes; and
/// the program given a word it does not know. None is read as a report,
/// nothing hangs, and the screen decides.
#[test]
fn a_hostile_report_changes_nothing() {
    ensure_busybox();
    let home = Home::new();
    patient_workspace(&home);
    agent(&home, "host", "echo ready; exec sleep 3600");
    let report = home.unit("host").join("state/report");
    eventually(Duration::from_secs(60), "it runs", || {
        attention_line(&home, "host").contains("from its screen")
    });
    let scratch = tempfile::tempdir().unwrap();
    let good = scratch.path().join("good");
    let now = jiff::Timestamp::now().as_second();
    std::fs::write(&good, format!("needs-input {now}\n")).unwrap();
    for what in ["a FIFO", "a link", "a huge file", "escapes"] {
        let _ = std::fs::remove_file(&report);
        let good_report = format!("needs-input {now}\n");
        match what {
            "a FIFO" => {
                let made = std::process::Command::new("mkfifo").arg(&report).status();
                assert!(made.unwrap().success());
            }
            "a link" => std::os::unix::fs::symlink(&good, &report).unwrap(),
            "a huge file" => {
                let mut big = good_report.into_bytes();
                big.resize(10 << 20, b' ');
                std::fs::write(&report, big).unwrap();
            }
            _ => std::fs::write(&report, format!("\x1b[2J{good_report}")).unwrap(),
        }
        assert_eq!(attention(&home, "host"), "working", "{what}");
        let line = attention_line(&home, "host");
        assert!(line.contains("from its screen"), "{what}: {line}");
        assert!(!line.contains('\x1b'), "{what}: {line:?}");
    }
    let _ = std::fs::remove_file(&report);
    // The program writes only its own words.
    let said = docker(&[
        "exec",
        &home.container("host"),
        "sh",
        "-c",
        "/bin/sh /jackin/bin/report 'needs-input 1\nworking' </dev/null; \
         /bin/sh /jackin/bin/report rm </dev/null; ls /jackin/state",
    ]);
    assert!(!said.lines().any(|l| l == "report"), "{said}");
    assert!(!report.exists());
}

/// codex's one `notify` program is jackin's report program, which runs the
/// operator's own after `--` with codex's argument, once the report is
/// written; with nothing of the operator's, only the report.
#[test]
fn the_report_program_runs_the_operators_notify_after_it() {
    ensure_busybox();
    let home = Home::new();
    patient_workspace(&home);
    agent(&home, "chain", "echo ready; exec sleep 3600");
    eventually(Duration::from_secs(60), "it runs", || {
        attention_line(&home, "chain").contains("from its screen")
    });
    let ran = docker(&[
        "exec",
        &home.container("chain"),
        "sh",
        "-c",
        "/bin/sh /jackin/bin/report turn-done -- sh -c 'printf %s \"$1\" > $HOME/chained' sh \
         '{\"type\":\"agent-turn-complete\"}' </dev/null; cat $HOME/chained; echo; \
         /bin/sh /jackin/bin/report working -- '{\"only\":\"codex\"}' </dev/null; echo code-$?",
    ]);
    assert_eq!(ran, "{\"type\":\"agent-turn-complete\"}\ncode-0", "{ran}");
    let report = std::fs::read_to_string(home.unit("chain").join("state/report")).unwrap();
    assert!(report.starts_with("working "), "{report}");
}
