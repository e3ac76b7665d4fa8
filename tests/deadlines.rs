//! Every command keeps its deadline against an engine that takes the
//! connection and never answers, and says what it waits on; `get` shows what
//! the engines list now, not only what the loop last recorded (issue 39,
//! item 1 and SA5). The hung engine is a listener in this process that
//! accepts every connection and answers none.

mod support;

use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{Home, condition, docker, ensure_busybox, instance_yaml};

/// A bound for a command that must not hang: a hang fails the test rather
/// than stalling the suite.
const LIMIT: Duration = Duration::from_secs(300);

/// An engine address that accepts connections and never answers. The
/// connections are held (not closed) for as long as it lives.
struct HungEngine {
    address: String,
    held: Arc<Mutex<Vec<TcpStream>>>,
}

impl HungEngine {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let address = format!("tcp://{}", listener.local_addr().expect("bound"));
        let held = Arc::new(Mutex::new(Vec::new()));
        let keep = Arc::clone(&held);
        // Detached: it lives as long as the test process, accepting.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                keep.lock().expect("never poisoned").push(stream);
            }
        });
        Self { address, held }
    }

    fn connections(&self) -> usize {
        self.held.lock().expect("never poisoned").len()
    }
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// Item 1: `apply --timeout 20s` against an engine that never answers
/// ends at its timeout (the engine's own 60 s answer deadline would be
/// later), having said after 5 s what it waits on, with an error that
/// names the engine and what it did not answer; nothing is written.
#[test]
fn a_hung_engine_ends_apply_at_its_timeout_naming_the_engine() {
    let home = Home::new();
    let engine = HungEngine::start();
    let input = home.write_input("hung.yaml", &instance_yaml("hung"));
    let before = home.snapshot();
    let mut apply = home.command(&["apply", input.to_str().unwrap(), "--timeout", "20s"]);
    apply.env("DOCKER_HOST", &engine.address);
    let started = Instant::now();
    let out = support::run_within(apply, LIMIT);
    let took = started.elapsed();
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(engine.connections() >= 1, "the engine was asked");
    assert!(
        stderr.contains(&format!(
            "waiting for the engine at {}: no answer for 5 s",
            engine.address
        )),
        "said while it waited: {stderr}"
    );
    assert!(
        stderr.contains(&format!(
            "gave up after 20 s (--timeout): the Docker engine at {} has not answered (connect",
            engine.address
        )),
        "{stderr}"
    );
    assert!(
        stderr.contains("hint: `docker info` asks that engine"),
        "{stderr}"
    );
    // Order, not speed: it waited out its own timeout, and ended before the
    // call's 60 s deadline could have ended it.
    assert!(took >= Duration::from_secs(20), "ended early: {took:?}");
    assert!(
        took < Duration::from_secs(55),
        "the timeout ended it: {took:?}"
    );
    home.assert_unchanged(&before, "an apply that could not reach the engine");
}

/// Item 1: without `--timeout`, a command still ends at the engine's answer
/// deadline, saying which engine did not answer what.
#[test]
fn a_hung_engine_ends_a_command_at_the_answer_deadline() {
    let home = Home::new();
    let engine = HungEngine::start();
    home.record("held", &instance_yaml("held"));
    let mut rollout = home.command(&["rollout", "held"]);
    rollout.env("DOCKER_HOST", &engine.address);
    let started = Instant::now();
    let out = support::run_within(rollout, LIMIT);
    let stderr = text(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!(
            "the Docker engine at {} did not answer within 60 s (connect",
            engine.address
        )),
        "{stderr}"
    );
    assert!(started.elapsed() >= Duration::from_secs(60), "its deadline");
}

/// Item 1: `get` marks the rows of an engine that does not answer
/// `EngineUnreachable` and warns, instead of printing what was last
/// recorded as if it held; its YAML still applies back.
#[test]
fn get_marks_the_instances_of_an_engine_that_does_not_answer() {
    let home = Home::new();
    ensure_busybox();
    home.apply("up", &instance_yaml("up"));
    let engine = HungEngine::start();
    let mut get = home.command(&["get", "-o", "wide"]);
    get.env("DOCKER_HOST", &engine.address);
    let out = support::run_within(get, LIMIT);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(out.status.success(), "{stderr}");
    let row = stdout
        .lines()
        .find(|line| line.starts_with("up "))
        .unwrap_or_else(|| panic!("a row for up: {stdout}"));
    assert_eq!(
        row.split_whitespace().nth(2),
        Some("EngineUnreachable"),
        "PHASE: {stdout}"
    );
    assert!(
        stderr.contains("warning: engine default: no answer within 4 s"),
        "{stderr}"
    );
    let mut get = home.command(&["get", "up", "-o", "yaml"]);
    get.env("DOCKER_HOST", &engine.address);
    let yaml = text(&support::run_within(get, LIMIT).stdout);
    assert!(yaml.contains("reason: EngineUnreachable"), "{yaml}");
    let again = home.write_input("again.yaml", &yaml);
    let applied = home.ok(&["apply", "--no-wait", again.to_str().unwrap()]);
    assert!(applied.contains("instance/up unchanged"), "{applied}");
    home.ok(&["delete", "up"]);
}

/// SA5: a container removed behind jackin's back shows at once in `get`
/// (no controller pass in between): the listing, not the record, says
/// what runs.
#[test]
fn sa5_get_shows_a_removed_container_at_once() {
    let home = Home::new();
    ensure_busybox();
    home.apply("gone", &instance_yaml("gone"));
    let listed = home.ok(&["get"]);
    assert!(
        listed
            .lines()
            .any(|l| l.split_whitespace().nth(2) == Some("Running")),
        "{listed}"
    );
    docker(&["rm", "-f", &home.container("gone")]);
    let listed = home.ok(&["get"]);
    let row = listed
        .lines()
        .find(|l| l.starts_with("gone "))
        .expect("a row");
    assert_eq!(
        row.split_whitespace().nth(2),
        Some("ContainerMissing"),
        "{listed}"
    );
    let obj = home.object("gone");
    let ready = condition(&obj, "Ready").expect("a Ready condition");
    assert_eq!(ready["reason"], "ContainerMissing", "{obj}");
    assert_eq!(ready["status"], "False", "{obj}");
    // The record is the loop's: one pass restores it, and get agrees.
    home.ok(&["controller", "--once"]);
    let listed = home.ok(&["get"]);
    let row = listed
        .lines()
        .find(|l| l.starts_with("gone "))
        .expect("a row");
    assert_eq!(row.split_whitespace().nth(2), Some("Running"), "{listed}");
    home.ok(&["delete", "gone"]);
}
