//! What the agent controls, or a careless manifest names, cannot hang,
//! exhaust or fool jackin: markers and secret files that are FIFOs, links
//! or huge; file names full of terminal escapes; mount paths spelled to
//! slip past the checks.

mod support;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::{Home, condition, docker, ensure_busybox, instance_yaml_with};

/// Long enough for a real run on a busy machine, short enough to catch a
/// hang well before the suite's own limits.
const LIMIT: Duration = Duration::from_secs(30);

fn state_dir(home: &Home, name: &str) -> PathBuf {
    home.path()
        .join("data")
        .join(home.container(name))
        .join("state")
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_fifo_as_the_marker_does_not_hang_a_purge() {
    ensure_busybox();
    let home = Home::new();
    home.apply("piped", &instance_yaml_with("piped", ""));
    let container = home.container("piped");
    docker(&["kill", "-s", "KILL", &container]);
    mkfifo(&state_dir(&home, "piped").join("exit.json"));
    let out = home.within(LIMIT, &["delete", "piped", "--force", "--timeout", "10s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!home.jackin(&["get", "piped"]).status.success(), "purged");
}

#[test]
fn a_link_to_dev_zero_as_the_marker_is_malformed_not_read() {
    ensure_busybox();
    let home = Home::new();
    home.apply("linked", &instance_yaml_with("linked", ""));
    let container = home.container("linked");
    docker(&["kill", "-s", "KILL", &container]);
    std::os::unix::fs::symlink("/dev/zero", state_dir(&home, "linked").join("exit.json")).unwrap();
    let out = home.within(LIMIT, &["controller", "--once"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let obj = home.object("linked");
    let malformed = condition(&obj, "MarkerMalformed").expect("the marker is reported");
    assert!(
        malformed["message"]
            .as_str()
            .unwrap()
            .contains("symbolic link"),
        "{malformed}"
    );
    // The engine's exit state stands in: a SIGKILL, restored.
    assert_eq!(obj["status"]["session"]["exitCode"], 137);
    assert_eq!(obj["status"]["phase"], "Running");
}

#[test]
fn a_fifo_as_a_secret_file_fails_apply_at_once() {
    ensure_busybox();
    let home = Home::new();
    let fifo = home.path().join("token.fifo");
    mkfifo(&fifo);
    let spec = format!(
        "  env: [{{name: TOKEN, valueFrom: {{file: {}}}}}]\n",
        fifo.display()
    );
    let path = home.write_input("fifo.yaml", &instance_yaml_with("fifo", &spec));
    let out = home.within(
        LIMIT,
        &["apply", path.to_str().unwrap(), "--timeout", "20s"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
    let obj = home.object("fifo");
    assert_eq!(obj["status"]["phase"], "Failed");
    assert_eq!(
        condition(&obj, "Ready").unwrap()["reason"],
        "SecretUnavailable"
    );
}

#[test]
fn mount_paths_spelled_to_slip_past_the_checks_are_refused() {
    let home = Home::new();
    let spec = "  mounts:\n    \
                - {src: /tmp, dst: //jackin}\n    \
                - {src: /tmp, dst: //jackin/state}\n    \
                - {src: /tmp, dst: /home/agent}\n    \
                - {src: /tmp, dst: /w}\n    \
                - {src: /tmp, dst: //w}\n    \
                - {src: relative/dir, dst: /r}\n    \
                - {src: -rf, dst: /o}\n";
    let path = home.write_input("sly.yaml", &instance_yaml_with("sly", spec));
    let err = home.fails(&["apply", path.to_str().unwrap()]);
    let file = path.display().to_string();
    for (line, field, expected) in [
        (9, "spec.mounts[0].dst", "reserved"),
        (10, "spec.mounts[1].dst", "reserved"),
        (11, "spec.mounts[2].dst", "reserved"),
        (13, "spec.mounts[4].dst", "normal form"),
        (14, "spec.mounts[5].src", "relative"),
        (15, "spec.mounts[6].src", "relative"),
    ] {
        let found = err.lines().any(|l| {
            l.starts_with(&format!("error: {file}:{line}:"))
                && l.contains(field)
                && l.contains(expected)
        });
        assert!(found, "no {field} ({expected}) at line {line} in:\n{err}");
    }
    assert!(
        !home.path().join("data").exists(),
        "nothing was written for invalid input"
    );
}

#[test]
fn file_names_full_of_escapes_reach_the_terminal_escaped() {
    ensure_busybox();
    let home = Home::new();
    let repo = support::RoleRepo::new("host");
    let spec = format!(
        "  mounts: [{{src: {}, dst: /workspace/app, isolation: clone}}]\n",
        repo.path().display()
    );
    home.apply("sly", &instance_yaml_with("sly", &spec));
    let checkout = home.object("sly")["status"]["mounts"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    // A name that, printed raw, erases its line and the one above it.
    let name = "draft\r\u{1b}[2K\u{1b}[1A\u{1b}[2Kall clean";
    std::fs::write(Path::new(&checkout).join(name), "work").unwrap();
    home.ok(&["controller", "--once"]);
    let describe = home.ok(&["describe", "sly"]);
    assert!(
        !describe.contains('\u{1b}') && !describe.contains('\r'),
        "{describe:?}"
    );
    assert!(describe.contains("draft\\r\\u{1b}[2K"), "{describe}");
    // The purge prompt's evidence, without a terminal: refused, escaped.
    let out = home.jackin(&["delete", "sly"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
    assert!(err.contains("draft\\r"), "{err}");
}
