//! Every command keeps its deadline against an engine that takes the
//! connection and never answers, and says what it waits on; `get` shows what
//! the engines list now, not only what the loop last recorded (issue 39,
//! item 1 and SA5). The hung engine is a listener in this process that
//! accepts every connection and answers none.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use support::{Home, condition, docker, ensure_busybox, instance_yaml, instance_yaml_with};

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
    // YAML is the record, as the loop keeps it, warned of all the same.
    let mut get = home.command(&["get", "up", "-o", "yaml"]);
    get.env("DOCKER_HOST", &engine.address);
    let out = support::run_within(get, LIMIT);
    let (yaml, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(yaml.contains("reason: Running"), "{yaml}");
    assert!(
        stderr.contains("(a table marks them EngineUnreachable)"),
        "{stderr}"
    );
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
    let wide = home.ok(&["get", "-o", "wide"]);
    let row = wide
        .lines()
        .find(|l| l.starts_with("gone "))
        .expect("a row");
    assert!(row.contains(" ContainerMissing "), "READY too: {wide}");
    // The record is the loop's, unchanged by a look.
    let obj = home.object("gone");
    assert_eq!(
        condition(&obj, "Ready").expect("Ready")["reason"],
        "Running"
    );
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

/// The real engine behind a TCP address that can be made to hang: until
/// frozen, each connection is passed through to the engine's socket; once
/// frozen, nothing more passes either way (the connections stay open), as
/// an engine that stopped answering. It notes when a followed log was asked
/// for, so the test freezes it only once the log stream is under way.
struct FreezingEngine {
    address: String,
    frozen: Arc<AtomicBool>,
    log_followed: Arc<AtomicBool>,
}

impl FreezingEngine {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a free port");
        let address = format!("tcp://{}", listener.local_addr().expect("bound"));
        let frozen = Arc::new(AtomicBool::new(false));
        let log_followed = Arc::new(AtomicBool::new(false));
        let (f, l) = (Arc::clone(&frozen), Arc::clone(&log_followed));
        std::thread::spawn(move || {
            for client in listener.incoming().flatten() {
                let engine = UnixStream::connect("/var/run/docker.sock").expect("the engine");
                let (client_in, engine_out) =
                    (client.try_clone().unwrap(), engine.try_clone().unwrap());
                let (f1, f2, l1) = (Arc::clone(&f), Arc::clone(&f), Arc::clone(&l));
                std::thread::spawn(move || pass(client_in, engine_out, &f1, Some(&l1)));
                std::thread::spawn(move || pass(engine, client, &f2, None));
            }
        });
        Self {
            address,
            frozen,
            log_followed,
        }
    }
}

/// Copies `from` to `to` until either ends or the engine is frozen; then
/// holds both open, passing nothing.
fn pass(mut from: impl Read, mut to: impl Write, frozen: &AtomicBool, logs: Option<&AtomicBool>) {
    let mut buf = [0u8; 8192];
    loop {
        let Ok(n) = from.read(&mut buf) else { return };
        if n == 0 {
            return;
        }
        if frozen.load(Ordering::SeqCst) {
            // Hung: hold the connection, answer nothing.
            loop {
                std::thread::sleep(Duration::from_secs(3600));
            }
        }
        let request = &buf[..n];
        if let Some(logs) = logs
            && request.starts_with(b"GET ")
            && request
                .windows(b"follow=true".len())
                .any(|w| w == b"follow=true")
        {
            logs.store(true, Ordering::SeqCst);
        }
        if to.write_all(request).is_err() {
            return;
        }
    }
}

/// Item 1: `logs -f` has no deadline on a quiet agent, but an engine that
/// stops answering under it ends it: after 30 s of quiet jackin asks the
/// engine whether the container still runs, and gives up, naming the
/// engine, when no answer comes within 20 s. `attach` asks the same way.
#[test]
fn a_followed_log_ends_when_its_engine_stops_answering() {
    let home = Home::new();
    ensure_busybox();
    home.apply(
        "quiet",
        &instance_yaml_with("quiet", "  command: [sh, -c, \"echo up; sleep 3600\"]\n"),
    );
    let engine = FreezingEngine::start();
    let (followed, frozen) = (Arc::clone(&engine.log_followed), Arc::clone(&engine.frozen));
    std::thread::spawn(move || {
        while !followed.load(Ordering::SeqCst) {
            std::thread::sleep(Duration::from_millis(100));
        }
        // The stream's start has passed by now; then the engine hangs.
        std::thread::sleep(Duration::from_secs(2));
        frozen.store(true, Ordering::SeqCst);
    });
    let mut logs = home.command(&["logs", "-f", "quiet"]);
    logs.env("DOCKER_HOST", &engine.address);
    let started = Instant::now();
    let out = support::run_within(logs, LIMIT);
    let (stdout, stderr) = (text(&out.stdout), text(&out.stderr));
    assert!(
        engine.frozen.load(Ordering::SeqCst),
        "frozen under the stream"
    );
    assert_eq!(out.status.code(), Some(1), "{stdout}{stderr}");
    assert!(stdout.contains("up"), "the log before the hang: {stdout}");
    assert!(
        stderr.contains(&format!(
            "the Docker engine at {} stopped answering",
            engine.address
        )),
        "{stderr}"
    );
    // Order, not speed: 30 s of quiet, then 20 s for the answer.
    assert!(
        started.elapsed() >= Duration::from_secs(50),
        "{:?}",
        started.elapsed()
    );
    home.ok(&["delete", "quiet"]);
}
