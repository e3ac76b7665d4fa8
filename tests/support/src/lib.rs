//! Shared by the integration tests: a private `JACKIN_HOME` per test, a way
//! to run the real `jackin` binary in it, and engine fixtures.
//!
//! A library of its own (package `jackin-test-support`, a dev-dependency of
//! `jackin-cli` under the name `support`), built once for both test
//! binaries, `tests/tests.rs` and `tests/agent_tier.rs`. Its items are public,
//! so an unused one does not warn: a helper no test calls any more is
//! deleted, not kept.

pub mod cpu;
pub mod private_engine;
pub mod real_agent;
pub mod terminal;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, SystemTime};

use jackin_engine::Engine;

/// Every file of a home with its modification time and contents.
pub type Snapshot = BTreeMap<PathBuf, (SystemTime, Vec<u8>)>;

/// What breaks a session: its name, the `docker` commands that do it, and
/// the restore tier that repairs it (`None`: kept, then resumed).
pub type Breakage<'a> = (&'a str, &'a [&'a [&'a str]], Option<u64>);

/// The `jackin` binary cargo built for the test that runs. This crate is a
/// library, for which cargo sets no `CARGO_BIN_EXE_jackin` at build time;
/// it sets it at run time for a test of the package that has the binary
/// (since Cargo 1.94; the workspace's `rust-version` is 1.95).
pub(crate) fn jackin_binary() -> PathBuf {
    std::env::var_os("CARGO_BIN_EXE_jackin")
        .map(PathBuf::from)
        .expect("CARGO_BIN_EXE_jackin is set: run the tests with `cargo test -p jackin-cli`")
}

/// `relative`, a path from the repository's root: this crate is
/// `tests/support`, two folders down.
fn in_repo(relative: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(relative)
}

/// A private, throw-away `JACKIN_HOME`.
pub struct Home {
    dir: tempfile::TempDir,
    /// The operator's home that logins are forwarded from
    /// (`JACKIN_CREDENTIALS_HOME`): empty unless a test writes one, and
    /// apart from `JACKIN_HOME`, as a real one is. No test reads the logins
    /// of whoever runs it.
    operator: tempfile::TempDir,
    /// Uids to clean up that the home's units may no longer name (a test
    /// that breaks an object on purpose).
    also: std::cell::RefCell<Vec<String>>,
    /// Variables every command of this home runs with (see
    /// [`Home::set_env`]).
    env: std::cell::RefCell<Vec<(String, std::ffi::OsString)>>,
}

/// A fresh home, as [`Home::new`] makes one (clippy's `new_without_default`,
/// for a library's public type).
impl Default for Home {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for Home {
    /// Removes every engine object of every instance this home still holds,
    /// by uid label, so a failed test leaves nothing running.
    fn drop(&mut self) {
        let mut uids = self.uids();
        uids.extend(self.also.borrow().iter().cloned());
        if !uids.is_empty() {
            remove_by_uid(&uids);
        }
    }
}

/// Removes the containers, networks and volumes whose `jackin.dev/uid` is
/// in `uids`.
pub fn remove_by_uid(uids: &[String]) {
    let format = "{{.ID}} {{.Label \"jackin.dev/uid\"}}";
    let by_name = "{{.Name}} {{.Label \"jackin.dev/uid\"}}";
    let managed = "label=jackin.dev/managed=true";
    let kinds: [(&[&str], &[&str]); 3] = [
        (
            &["ps", "-a", "--filter", managed, "--format", format],
            &["rm", "-f"],
        ),
        (
            &["network", "ls", "--filter", managed, "--format", format],
            &["network", "rm"],
        ),
        (
            &["volume", "ls", "--filter", managed, "--format", by_name],
            &["volume", "rm", "-f"],
        ),
    ];
    for (list, remove) in kinds {
        let Ok(out) = Command::new("docker").args(list).output() else {
            return;
        };
        let ids: Vec<String> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| {
                let (id, uid) = line.split_once(' ')?;
                uids.iter().any(|u| u == uid).then(|| id.to_owned())
            })
            .collect();
        if !ids.is_empty() {
            let _ = Command::new("docker").args(remove).args(&ids).output();
        }
    }
}

impl Home {
    /// Cleans up the engine objects of `uid` when the home is dropped, even
    /// if its unit no longer says it is this home's.
    pub fn clean_up_also(&self, uid: &str) {
        self.also.borrow_mut().push(uid.to_owned());
    }

    /// The uids of the instances whose units are under this home.
    pub fn uids(&self) -> Vec<String> {
        let Ok(entries) = std::fs::read_dir(self.path().join("data")) else {
            return Vec::new();
        };
        entries
            .filter_map(|e| {
                let object = e.ok()?.path().join(".jackin/instance.json");
                let json: serde_json::Value =
                    serde_json::from_slice(&std::fs::read(object).ok()?).ok()?;
                Some(json["metadata"]["uid"].as_str()?.to_owned())
            })
            .collect()
    }

    /// This home's id (the `jackin.dev/home` label of its engine objects),
    /// made now if no command has made it yet.
    pub fn home_id(&self) -> String {
        let path = self.path().join("home-id");
        if !path.exists() {
            std::fs::write(&path, unique("home")).unwrap();
        }
        std::fs::read_to_string(path).unwrap().trim().to_owned()
    }

    /// Applies `yaml` (written as `file`, `.yaml` added when missing) and
    /// converges; insists on success and returns stdout.
    pub fn apply(&self, file: &str, yaml: &str) -> String {
        let path = self.write_input(&Self::yaml_name(file), yaml);
        self.ok(&["apply", path.to_str().unwrap()])
    }

    /// Applies `yaml` without converging: the desired state only.
    pub fn record(&self, file: &str, yaml: &str) -> String {
        let path = self.write_input(&Self::yaml_name(file), yaml);
        self.ok(&["apply", "--no-wait", path.to_str().unwrap()])
    }

    fn yaml_name(file: &str) -> String {
        if file.ends_with(".yaml") {
            file.to_owned()
        } else {
            format!("{file}.yaml")
        }
    }

    /// `jackin get instance NAME -o json`, parsed (with the kind named, so
    /// an instance called `discarded` or `sources` is still an instance).
    pub fn object(&self, name: &str) -> serde_json::Value {
        serde_json::from_str(&self.ok(&["get", "instance", name, "-o", "json"]))
            .expect("get prints JSON")
    }

    /// Where an instance's first isolated checkout is on the host.
    pub fn checkout(&self, name: &str) -> PathBuf {
        let mounts = &self.object(name)["status"]["mounts"];
        PathBuf::from(mounts[0]["path"].as_str().expect("a recorded checkout"))
    }

    /// An instance's unit directory on the host.
    pub fn unit(&self, name: &str) -> PathBuf {
        self.path().join("data").join(self.container(name))
    }

    /// The agent's starts, as the fake CLI logged them in the unit's home:
    /// `<agent> <how> <id>`.
    pub fn agent_starts(&self, name: &str) -> Vec<String> {
        std::fs::read_to_string(self.unit(name).join("home/agent-starts.log"))
            .unwrap_or_default()
            .lines()
            .map(str::to_owned)
            .collect()
    }

    /// Waits until the fake agent in `name`'s unit has started `count`
    /// times (up to 60 s); returns its starts ([`Home::agent_starts`]).
    pub fn wait_for_starts(&self, name: &str, count: usize) -> Vec<String> {
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let log = self.agent_starts(name);
            if log.len() >= count {
                return log;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{name}: {count} start(s) expected, the log has {log:?}"
            );
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// One controller pass (`controller --once`), which must complete: it
    /// repairs what the test broke and folds the agent's report of its
    /// last start into the status.
    pub fn one_pass(&self) {
        let out = self.ok(&["controller", "--once"]);
        assert!(out.starts_with("pass complete"), "{out}");
    }

    /// `status.conversation` of instance `name`.
    pub fn conversation(&self, name: &str) -> serde_json::Value {
        self.object(name)["status"]["conversation"].clone()
    }

    /// Breaks `name`'s session each way of `breakages` in turn and has it
    /// restored: by a pass, whose restore must be of the breakage's tier,
    /// or (`None`) by keeping it and setting it running again. After the
    /// `n`th (from 0) the agent has started `n + 2` times; `after` gets `n`,
    /// the breakage's name and the starts.
    pub fn break_and_restore(
        &self,
        name: &str,
        breakages: &[Breakage<'_>],
        mut after: impl FnMut(usize, &str, Vec<String>),
    ) {
        for (n, (what, commands, tier)) in breakages.iter().enumerate() {
            for args in *commands {
                docker(args);
            }
            match tier {
                Some(tier) => {
                    self.one_pass();
                    assert_eq!(
                        self.object(name)["status"]["restore"]["tier"],
                        *tier,
                        "{what}"
                    );
                }
                None => {
                    self.ok(&["set-phase", name, "kept"]);
                    self.ok(&["set-phase", name, "running"]);
                }
            }
            after(n, what, self.wait_for_starts(name, n + 2));
        }
    }

    /// Waits until the agent's last start in `name`'s unit is past its
    /// grace period, as the entry wrapper's report says (`try RUNG SECOND`,
    /// the second from which that rung can no longer fall back), so that
    /// the next pass says for good how the agent started (defect R13).
    /// Waits on the report, never on a time the test guesses.
    pub fn wait_for_the_start_to_settle(&self, name: &str) {
        let report = self.unit(name).join("state/agent-start");
        let mut settles = None;
        eventually(
            Duration::from_secs(120),
            "the wrapper reports its rung",
            || {
                let text = std::fs::read_to_string(&report).unwrap_or_default();
                settles = text
                    .lines()
                    .filter_map(|line| line.strip_prefix("try "))
                    .next_back()
                    .and_then(|tried| tried.split(' ').nth(1)?.parse::<u64>().ok());
                settles.is_some()
            },
        );
        let settles = std::time::UNIX_EPOCH + Duration::from_secs(settles.unwrap());
        while SystemTime::now() <= settles + Duration::from_secs(1) {
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    pub fn container(&self, name: &str) -> String {
        self.object(name)["status"]["containerName"]
            .as_str()
            .expect("the instance has an identity")
            .to_owned()
    }

    pub fn new() -> Self {
        let temp = |prefix: &str| {
            tempfile::Builder::new()
                .prefix(prefix)
                .tempdir()
                .expect("a temporary directory")
        };
        Self {
            dir: temp("jackin-test-"),
            operator: temp("jackin-test-operator-"),
            also: Default::default(),
            env: Default::default(),
        }
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The operator's home that logins are forwarded from.
    pub fn operator_home(&self) -> &Path {
        self.operator.path()
    }

    /// A `jackin` command bound to this home, not yet run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new(jackin_binary());
        cmd.env("JACKIN_HOME", self.path())
            .env("JACKIN_CREDENTIALS_HOME", self.operator_home())
            .envs(self.env.borrow().iter().map(|(k, v)| (k, v)))
            .args(args);
        cmd
    }

    /// Runs every later command of this home with `key` set to `value`:
    /// what the operator's shell would hold for an engine that needs it
    /// (the `PATH` that finds a test's `ssh`, say). The test's own process
    /// environment is never changed.
    pub fn set_env(&self, key: &str, value: impl Into<std::ffi::OsString>) {
        self.env.borrow_mut().push((key.to_owned(), value.into()));
    }

    pub fn jackin(&self, args: &[&str]) -> Output {
        self.command(args).output().expect("jackin runs")
    }

    /// Runs `jackin ARGS…`, killing it if it has not finished within
    /// `limit`; a hang fails the test instead of stalling the suite.
    pub fn within(&self, limit: Duration, args: &[&str]) -> Output {
        run_within(self.command(args), limit)
    }

    /// Watches `jackin top`'s plain lines (a long-lived look, which reads
    /// each running container's output stream) until `name`'s row ends
    /// with `attention`, for at most `limit`; the lines it printed, in the
    /// error when it did not.
    pub fn wait_in_top(
        &self,
        name: &str,
        attention: &str,
        limit: Duration,
    ) -> Result<(), Vec<String>> {
        use std::io::BufRead;
        let mut child = self
            .command(&["top"])
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("jackin top runs");
        let stdout = child.stdout.take().expect("piped");
        let (tx, lines) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(stdout).lines() {
                if line.map(|line| tx.send(line)).is_err() {
                    return;
                }
            }
        });
        let deadline = std::time::Instant::now() + limit;
        let mut seen = Vec::new();
        let mut found = false;
        while let Some(left) = deadline.checked_duration_since(std::time::Instant::now()) {
            let Ok(line) = lines.recv_timeout(left) else {
                break;
            };
            found = line.starts_with(&format!("{name} ")) && line.ends_with(attention);
            seen.push(line);
            if found {
                break;
            }
        }
        let _ = child.kill();
        let _ = child.wait();
        if found { Ok(()) } else { Err(seen) }
    }

    /// Runs `jackin` and insists on success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        succeeded(args, self.jackin(args))
    }

    /// Runs `jackin` and insists on exit status 1; returns stderr.
    pub fn fails(&self, args: &[&str]) -> String {
        let out = self.jackin(args);
        assert_eq!(
            out.status.code(),
            Some(1),
            "jackin {args:?} should fail with 1; stdout:\n{}",
            String::from_utf8_lossy(&out.stdout)
        );
        String::from_utf8(out.stderr).expect("utf-8 output")
    }

    /// Every file under the home with its modification time and contents.
    pub fn snapshot(&self) -> Snapshot {
        let mut out = BTreeMap::new();
        let mut stack = vec![self.path().to_owned()];
        while let Some(dir) = stack.pop() {
            for entry in std::fs::read_dir(&dir).unwrap() {
                let path = entry.unwrap().path();
                if path.is_dir() {
                    stack.push(path);
                } else {
                    let meta = std::fs::metadata(&path).unwrap();
                    let bytes = std::fs::read(&path).unwrap();
                    out.insert(path, (meta.modified().unwrap(), bytes));
                }
            }
        }
        out
    }

    /// Asserts that no file under the home changed since `before`, naming
    /// the ones that did. Files under `input/` (the tests' own) are ignored,
    /// and so are the run logs: a failed command leaves one by design, and
    /// they are diagnostics, not state (`tests/diagnostics.rs` checks that
    /// a command that changes nothing writes none).
    pub fn assert_unchanged(&self, before: &Snapshot, what: &str) {
        let input = self.path().join("input");
        let runs = self.path().join("data/diagnostics");
        let after = self.snapshot();
        let mut changed: Vec<String> = before
            .keys()
            .chain(after.keys())
            .filter(|p| {
                !p.starts_with(&input) && !p.starts_with(&runs) && before.get(*p) != after.get(*p)
            })
            .map(|p| p.display().to_string())
            .collect();
        changed.dedup();
        assert!(changed.is_empty(), "{what} changed: {changed:#?}");
    }

    /// A file in a scratch directory beside the home.
    pub fn write_input(&self, name: &str, text: &str) -> PathBuf {
        let dir = self.path().join("input");
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

/// The stdout of `jackin ARGS…`, which must have succeeded.
pub fn succeeded(args: &[&str], out: Output) -> String {
    assert!(
        out.status.success(),
        "jackin {args:?} failed ({}):\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8 output")
}

/// Runs `cmd` with its output captured, killing it if it has not finished
/// within `limit` (and then failing the test, naming the command).
pub fn run_within(mut cmd: Command, limit: Duration) -> Output {
    use std::process::Stdio;
    let what = format!("{cmd:?}");
    let child = cmd
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the command starts");
    let pid = child.id();
    let (done, finished) = std::sync::mpsc::channel();
    let waiter = std::thread::spawn(move || {
        let out = child.wait_with_output();
        let _ = done.send(());
        out
    });
    if finished.recv_timeout(limit).is_err() {
        let _ = Command::new("kill")
            .args(["-KILL", &pid.to_string()])
            .status();
        let _ = waiter.join();
        panic!("{what} did not finish within {limit:?}");
    }
    waiter.join().unwrap().expect("the command ran")
}

/// `jackin controller ARGS…` run by a test, its log (`-vv`) kept in the
/// home's `controller.log`; killed when dropped, passed or failed.
pub struct Controller {
    child: std::process::Child,
    log: PathBuf,
}

impl Controller {
    pub fn start(home: &Home, args: &[&str]) -> Self {
        let log = home.path().join("controller.log");
        let file = std::fs::File::create(&log).unwrap();
        let child = home
            .command(&["controller", "-vv"])
            .args(args)
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .expect("the controller starts");
        Self { child, log }
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends SIGTERM and waits up to 20 s; returns the exit code.
    pub fn stop(&mut self) -> Option<i32> {
        let pid = self.child.id().to_string();
        Command::new("kill").args(["-TERM", &pid]).status().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(20);
        while std::time::Instant::now() < deadline {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status.code();
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        None
    }

    /// SIGKILL: no shutdown, as a crash.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// What it has logged so far.
    pub fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    /// The address it serves its metrics at (started with
    /// `--metrics-addr`), once it says so.
    pub fn metrics_addr(&self) -> String {
        let mut addr = String::new();
        eventually(Duration::from_secs(60), "the metrics address", || {
            let log = self.log();
            let found = log
                .split("serving http://")
                .nth(1)
                .and_then(|rest| rest.split("/metrics").next());
            addr = found.unwrap_or_default().to_owned();
            !addr.is_empty()
        });
        addr
    }
}

/// `GET path` from `addr` over HTTP/1.1: the status code and the body.
pub fn http_get(addr: &str, path: &str) -> (u16, String) {
    use std::io::{Read, Write};
    let mut stream = std::net::TcpStream::connect(addr).expect("the server answers");
    stream
        .set_read_timeout(Some(Duration::from_secs(20)))
        .unwrap();
    write!(
        stream,
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").expect("a response");
    let status = head
        .split(' ')
        .nth(1)
        .and_then(|code| code.parse().ok())
        .expect("a status line");
    (status, body.to_owned())
}

impl Controller {
    /// [`eventually`] for up to 60 s, failing with this controller's log.
    pub fn eventually(&self, what: &str, mut check: impl FnMut() -> bool) {
        let limit = Duration::from_secs(60);
        let deadline = std::time::Instant::now() + limit;
        // This deadline passes first: the shared one, twice as far, only
        // polls.
        eventually(2 * limit, what, || {
            check() || {
                assert!(
                    std::time::Instant::now() < deadline,
                    "timed out waiting for {what}; controller log:\n{}",
                    self.log()
                );
                false
            }
        });
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Polls `check` every 200 ms until it holds; fails the test, saying
/// `what`, when `limit` passes first.
pub fn eventually(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + limit;
    while !check() {
        assert!(
            std::time::Instant::now() < deadline,
            "not within {limit:?}: {what}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// An object's condition of type `kind`, if it has one.
pub fn condition<'a>(obj: &'a serde_json::Value, kind: &str) -> Option<&'a serde_json::Value> {
    obj["status"]["conditions"]
        .as_array()?
        .iter()
        .find(|c| c["type"] == kind)
}

/// The repository's `examples/` directory.
pub fn examples_dir() -> PathBuf {
    in_repo("examples")
}

/// A minimal valid instance manifest.
pub fn instance_yaml(name: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata:\n  name: {name}\nspec:\n  \
         role: {{name: tester}}\n  agent: shell\n  image: {}\n",
        busybox_image()
    )
}

/// A workspace with the default policy, for `launch -w NAME` (which
/// refuses a workspace that does not exist).
pub fn applied_workspace(home: &Home, name: &str) {
    let yaml = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec: {{}}\n"
    );
    home.apply(&format!("ws-{name}"), &yaml);
}

/// [`instance_yaml`] with more `spec` lines (each indented two spaces).
pub fn instance_yaml_with(name: &str, spec_lines: &str) -> String {
    instance_yaml(name).replace("  agent: shell\n", &format!("  agent: shell\n{spec_lines}"))
}

/// Makes a character device node at `path` with `/dev/null`'s numbers,
/// as the agent's `mknod PATH c 1 3` does through a bind mount (the tests
/// run as root, as the agent in its container is).
pub fn mknod_dev_null(path: &Path) {
    let made = Command::new("mknod")
        .arg(path)
        .args(["c", "1", "3"])
        .status()
        .expect("mknod runs");
    assert!(made.success(), "mknod {} (needs root)", path.display());
}

/// Whether anyone opened one file, as inotify tells it: an `O_PATH` open
/// (which reads nothing and runs no driver) does not show, a real one does,
/// by jackin or any other process.
pub struct OpenWatch {
    inotify: rustix::fd::OwnedFd,
}

impl OpenWatch {
    /// Watches the file (or device node, or FIFO) at `path`, without
    /// opening it.
    pub fn on(path: &Path) -> Self {
        use rustix::fs::inotify;
        let flags = inotify::CreateFlags::NONBLOCK | inotify::CreateFlags::CLOEXEC;
        let inotify = inotify::init(flags).expect("an inotify instance");
        inotify::add_watch(&inotify, path, inotify::WatchFlags::OPEN)
            .unwrap_or_else(|e| panic!("watching {}: {e}", path.display()));
        Self { inotify }
    }

    /// Whether the file was opened since the watch began (or the last look).
    pub fn opened(&self) -> bool {
        use rustix::fs::inotify::{ReadFlags, Reader};
        let mut buffer = [std::mem::MaybeUninit::uninit(); 4096];
        let mut events = Reader::new(&self.inotify, &mut buffer);
        let mut opened = false;
        loop {
            match events.next() {
                Ok(event) => opened |= event.events().contains(ReadFlags::OPEN),
                Err(rustix::io::Errno::AGAIN) => return opened,
                Err(e) => panic!("reading inotify events: {e}"),
            }
        }
    }
}

/// A busybox sidecar named `name`, as a `spec` line.
pub fn sidecar_line(name: &str) -> String {
    format!(
        "  sidecars: [{{name: {name}, image: {}, command: [sleep, \"3600\"]}}]\n",
        busybox_image()
    )
}

/// The image every engine test runs: a static busybox on an empty base, since
/// the engine here can pull nothing. Kept between tests as a fixture. Its
/// tag and its [`FIXTURE_LABEL`] carry the test run's id (`JACKIN_TEST_RUN`,
/// which `scripts/test` sets), so the test command removes its own fixture
/// at the end and never that of another run sharing the engine.
pub fn busybox_image() -> &'static str {
    static TAG: std::sync::LazyLock<String> =
        std::sync::LazyLock::new(|| format!("jackin-test/busybox:{}", test_run()));
    &TAG
}

/// This test run's id: `JACKIN_TEST_RUN`, else `local`.
pub fn test_run() -> String {
    std::env::var("JACKIN_TEST_RUN")
        .ok()
        .filter(|run| {
            !run.is_empty()
                && run
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
        })
        .unwrap_or_else(|| "local".into())
}

pub const FIXTURE_LABEL: &str = "jackin.dev/test-fixture";

/// Where Debian's `busybox-static` puts its binary.
const BUSYBOX_PATHS: [&str; 2] = ["/bin/busybox", "/usr/bin/busybox"];

/// [`build_busybox`] for tests without a runtime of their own.
pub fn ensure_busybox() -> String {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async {
            let engine = Engine::connect().await.expect("a Docker engine answers");
            build_busybox(&engine).await
        })
}

/// Builds [`busybox_image`] unless the engine has it already.
pub async fn build_busybox(engine: &Engine) -> String {
    if engine.image_id(busybox_image()).await.unwrap().is_some() {
        return busybox_image().to_owned();
    }
    let busybox = BUSYBOX_PATHS
        .iter()
        .find(|p| Path::new(p).exists())
        .expect("busybox is installed (Debian package busybox-static)");
    let dockerfile = "FROM scratch\n\
                      COPY busybox /bin/busybox\n\
                      RUN [\"/bin/busybox\", \"--install\", \"-s\", \"/bin\"]\n\
                      ENV PATH=/bin\n\
                      CMD [\"sleep\", \"3600\"]\n";
    let mut tar = tar::Builder::new(Vec::new());
    let mut add = |name: &str, bytes: &[u8], mode: u32| {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(mode);
        header.set_cksum();
        tar.append_data(&mut header, name, bytes).unwrap();
    };
    add("Dockerfile", dockerfile.as_bytes(), 0o644);
    add("busybox", &std::fs::read(busybox).unwrap(), 0o755);
    let context = tar.into_inner().unwrap();
    let labels = [(FIXTURE_LABEL.to_owned(), test_run())].into();
    engine
        .build_image(context, busybox_image(), &labels, |_| {})
        .await
        .expect("the busybox image builds");
    busybox_image().to_owned()
}

/// Runs `docker ARGS…`, insisting on success; returns trimmed stdout.
pub fn docker(args: &[&str]) -> String {
    let out = Command::new("docker")
        .args(args)
        .output()
        .expect("docker runs");
    assert!(
        out.status.success(),
        "docker {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// Names of the containers and networks labelled with `uid`.
pub fn engine_objects(uid: &str) -> (Vec<String>, Vec<String>) {
    let filter = format!("label=jackin.dev/uid={uid}");
    let split = |s: String| -> Vec<String> { s.lines().map(str::to_owned).collect() };
    (
        split(docker(&[
            "ps",
            "-a",
            "--filter",
            &filter,
            "--format",
            "{{.Names}}",
        ])),
        split(docker(&[
            "network",
            "ls",
            "--filter",
            &filter,
            "--format",
            "{{.Name}}",
        ])),
    )
}

/// A unique, DNS-safe name for this test process and call.
pub fn unique(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// Runs `git -C DIR ARGS…`, insisting on success; returns trimmed stdout.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let mut command = Command::new("git");
    command.arg("-C").arg(dir);
    // A worktree checkout's repository is beside it (see `work_in`).
    if let Some(repo) = jackin_checkouts::worktree::repository_beside(dir) {
        command
            .arg("--git-dir")
            .arg(repo)
            .arg("--work-tree")
            .arg(dir);
    }
    let out = command.args(args).output().unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// A host repository with one commit on `main`, made in `dir/host`.
pub fn host_repo(dir: &Path) -> PathBuf {
    let host = dir.join("host");
    std::fs::create_dir_all(&host).unwrap();
    git(&host, &["init", "--quiet", "--initial-branch=main"]);
    git(&host, &["config", "user.email", "t@jackin.dev"]);
    git(&host, &["config", "user.name", "t"]);
    std::fs::write(host.join("README"), "host\n").unwrap();
    git(&host, &["add", "."]);
    git(&host, &["commit", "--quiet", "-m", "base"]);
    host
}

/// A role repository: a git repository with a Dockerfile that bakes the
/// file `marker` into the image on top of the busybox test image. Images
/// built from it carry its unique role name and are removed on drop.
pub struct RoleRepo {
    dir: tempfile::TempDir,
    pub role: String,
}

impl RoleRepo {
    pub fn new(marker: &str) -> Self {
        let repo = Self {
            dir: tempfile::Builder::new()
                .prefix("jackin-role-")
                .tempdir()
                .unwrap(),
            role: unique("role"),
        };
        repo.git(&["init", "--quiet", "--initial-branch=main"]);
        repo.git(&["config", "user.email", "test@jackin.dev"]);
        repo.git(&["config", "user.name", "jackin test"]);
        std::fs::write(
            repo.path().join("Dockerfile"),
            // The role's own label first: parallel tests never share (and
            // never remove from under each other) a cached build layer.
            format!(
                "FROM {}\nLABEL jackin.test.role={}\nCOPY marker /marker\nCMD [\"sleep\", \"3600\"]\n",
                busybox_image(),
                repo.role
            ),
        )
        .unwrap();
        repo.commit_marker(marker);
        repo
    }

    /// A role that runs `image` as it is (a label aside): the role of an
    /// image made by one of the scripts, which jackin can build again when
    /// the engine loses its image (tier 3).
    pub fn from_image(image: &str) -> Self {
        let repo = Self::new("image");
        std::fs::write(
            repo.path().join("Dockerfile"),
            format!("FROM {image}\nLABEL jackin.test.role={}\n", repo.role),
        )
        .unwrap();
        repo.commit_marker("image");
        repo
    }

    /// A role whose image holds the fake agent CLIs
    /// (`tests/fixtures/fake-agent`, installed as `claude`, `codex`,
    /// `gemini`, `opencode` and `aider`) and works in `/work`.
    pub fn with_fake_agents() -> Self {
        Self::with_fake_agents_and("")
    }

    /// [`RoleRepo::with_fake_agents`], with more Dockerfile lines at the end
    /// (to install another version of a fake, say).
    pub fn with_fake_agents_and(dockerfile_lines: &str) -> Self {
        let repo = Self::new("agents");
        let script = in_repo("tests/fixtures/fake-agent");
        let installed = repo.path().join("fake-agent");
        std::fs::copy(&script, &installed).unwrap();
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o755)).unwrap();
        let links: String = ["claude", "codex", "gemini", "opencode", "aider"]
            .iter()
            .map(|name| format!("RUN [\"/bin/ln\", \"-s\", \"fake-agent\", \"/bin/{name}\"]\n"))
            .collect();
        std::fs::write(
            repo.path().join("Dockerfile"),
            format!(
                "FROM {}\nLABEL jackin.test.role={}\nCOPY fake-agent /bin/fake-agent\n{links}WORKDIR /work\n\
                 {dockerfile_lines}",
                busybox_image(),
                repo.role
            ),
        )
        .unwrap();
        repo.commit_marker("agents");
        repo
    }

    /// A role whose image holds the four agent CLIs jackin forwards logins
    /// to (`claude`, `codex`, `gemini`, `opencode`), each behind the login
    /// gate (`tests/fixtures/fake-login`) that lets it start only as the
    /// real one would: logged in. The stand-ins are in `/opt/agents`; the
    /// role works in `/work`.
    pub fn with_login_agents() -> Self {
        let repo = Self::new("login-agents");
        let fixtures = in_repo("tests/fixtures");
        for name in ["fake-agent", "fake-login"] {
            let installed = repo.path().join(name);
            std::fs::copy(fixtures.join(name), &installed).unwrap();
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&installed, std::fs::Permissions::from_mode(0o755)).unwrap();
        }
        let links = "mkdir -p /opt/agents && mv /fake-agent /opt/agents/ \
                     && cd /opt/agents && ln -s fake-agent claude && ln -s fake-agent codex \
                     && ln -s fake-agent gemini && ln -s fake-agent opencode \
                     && for a in claude codex gemini opencode; do ln -s fake-login /bin/$a; done";
        std::fs::write(
            repo.path().join("Dockerfile"),
            format!(
                "FROM {}\nLABEL jackin.test.role={}\nCOPY fake-agent /\n\
                 COPY fake-login /bin/fake-login\nRUN [\"/bin/sh\", \"-c\", \"{links}\"]\nWORKDIR /work\n",
                busybox_image(),
                repo.role
            ),
        )
        .unwrap();
        repo.commit_marker("login-agents");
        repo
    }

    /// An Instance that builds this role at `main` and runs `agent`, with
    /// more `spec` lines.
    pub fn agent_instance_yaml(&self, name: &str, agent: &str, spec_lines: &str) -> String {
        self.instance_yaml(name).replace(
            "  agent: shell\n",
            &format!("  agent: {agent}\n{spec_lines}"),
        )
    }

    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    pub fn git(&self, args: &[&str]) -> String {
        git(self.path(), args)
    }

    /// Commits `marker` as the file's new contents; returns the commit.
    pub fn commit_marker(&self, marker: &str) -> String {
        std::fs::write(self.path().join("marker"), marker).unwrap();
        self.git(&["add", "."]);
        self.git(&["commit", "--quiet", "-m", marker]);
        self.git(&["rev-parse", "HEAD"])
    }

    /// An Instance that builds this role at `main`.
    pub fn instance_yaml(&self, name: &str) -> String {
        format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata:\n  name: {name}\nspec:\n  \
             role: {{name: {}, source: {{git: {}, ref: main}}}}\n  agent: shell\n",
            self.role,
            self.path().display()
        )
    }
}

impl Drop for RoleRepo {
    /// Removes the images built from this role. A test's home is usually
    /// dropped after its role, so containers of the test may still run them:
    /// those go first, or the images could not.
    fn drop(&mut self) {
        let words = |args: &[&str]| -> Vec<String> {
            Command::new("docker")
                .args(args)
                .output()
                .map(|out| {
                    String::from_utf8_lossy(&out.stdout)
                        .split_whitespace()
                        .map(str::to_owned)
                        .collect()
                })
                .unwrap_or_default()
        };
        let filter = format!("label=jackin.dev/role={}", self.role);
        let images = words(&["images", "-q", "--filter", &filter]);
        for image in &images {
            let users = words(&["ps", "-aq", "--filter", &format!("ancestor={image}")]);
            if !users.is_empty() {
                let _ = Command::new("docker")
                    .args(["rm", "-f"])
                    .args(&users)
                    .output();
            }
        }
        if !images.is_empty() {
            let _ = Command::new("docker")
                .args(["rmi", "-f"])
                .args(&images)
                .output();
        }
    }
}

/// A unique label value per test, and removal of every container carrying
/// it when the test ends, passed or failed.
pub struct EngineCleanup {
    pub run_id: String,
}

/// Label put on every container a test creates directly.
pub const RUN_LABEL: &str = "jackin.dev/test-run";

impl EngineCleanup {
    pub fn new() -> Self {
        let nanos = SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        Self {
            run_id: format!("t{}-{nanos}", std::process::id()),
        }
    }
}

/// A fresh run id, as [`EngineCleanup::new`] makes one.
impl Default for EngineCleanup {
    fn default() -> Self {
        Self::new()
    }
}

impl Drop for EngineCleanup {
    fn drop(&mut self) {
        // Drop cannot await, so ask the docker CLI; by label, never by name.
        let filter = format!("label={RUN_LABEL}={}", self.run_id);
        let listed = Command::new("docker")
            .args(["ps", "-aq", "--filter", &filter])
            .output();
        if let Ok(out) = listed {
            for id in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                let _ = Command::new("docker").args(["rm", "-f", id]).output();
            }
        }
    }
}

/// The image `scripts/aider-image` built (Debian, with real git and the real
/// aider), whose tag `scripts/test` hands over in `JACKIN_AIDER_IMAGE`.
/// Missing, a test fails rather than skip unseen.
pub fn real_agent_image() -> String {
    script_image(
        "JACKIN_AIDER_IMAGE",
        "scripts/aider-image",
        "the real-aider image",
    )
}

/// The image a script built, whose tag is in the variable `var`; `what`
/// names it in the failure that stands for a skip.
pub fn script_image(var: &str, script: &str, what: &str) -> String {
    let Some(tag) = std::env::var(var).ok().filter(|tag| !tag.is_empty()) else {
        panic!(
            "{var} is not set: build {what} first, `export {var}=$({script})` \
             (scripts/test does this)"
        );
    };
    let found = Command::new("docker")
        .args(["image", "inspect", "--format", "{{.Id}}", &tag])
        .output()
        .expect("docker runs");
    assert!(
        found.status.success(),
        "{var}={tag}, but the engine has no such image: run {script}"
    );
    tag
}

/// Every regular file under `dir` that holds `marker` (links not followed).
pub fn files_holding(dir: &Path, marker: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file()
                && std::fs::read(&path)
                    .unwrap()
                    .windows(marker.len())
                    .any(|w| w == marker.as_bytes())
            {
                found.push(path);
            }
        }
    }
    found
}

/// What an operator reads of `name` (describe, the object, its events and
/// the agent's log) never holds `marker`.
pub fn assert_never_shown(home: &Home, name: &str, marker: &str) {
    for args in [
        vec!["describe", name],
        vec!["get", name, "-o", "yaml"],
        vec!["get", name, "-o", "json"],
        vec!["logs", name],
    ] {
        let out = home.ok(&args);
        assert!(
            !out.contains(marker),
            "jackin {args:?} shows the value:\n{out}"
        );
    }
}

/// Runs `sh -c SCRIPT` in `dir` on the host, as the agent's side of a
/// checkout (git with the agent's identity).
pub fn work_in(dir: &Path, script: &str) {
    let mut command = Command::new("sh");
    // A worktree checkout's `.git` names its repository where the container
    // sees it: on the host, git is pointed at it beside the checkout.
    if let Some(repo) = jackin_checkouts::worktree::repository_beside(dir) {
        command.env("GIT_DIR", repo).env("GIT_WORK_TREE", dir);
    }
    let out = command
        .args(["-c", script])
        .current_dir(dir)
        .env("GIT_AUTHOR_NAME", "agent")
        .env("GIT_AUTHOR_EMAIL", "agent@jackin.dev")
        .env("GIT_COMMITTER_NAME", "agent")
        .env("GIT_COMMITTER_EMAIL", "agent@jackin.dev")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{script}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A docker CLI configuration with one context, made current.
pub fn docker_context(name: &str, host: &str) -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let digest = {
        let out = Command::new("sha256sum")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .and_then(|mut child| {
                use std::io::Write;
                child.stdin.take().unwrap().write_all(name.as_bytes())?;
                child.wait_with_output()
            })
            .unwrap();
        String::from_utf8(out.stdout).unwrap()[..64].to_owned()
    };
    let meta = dir.path().join("contexts/meta").join(digest);
    std::fs::create_dir_all(&meta).unwrap();
    std::fs::write(
        meta.join("meta.json"),
        format!(r#"{{"Name":"{name}","Metadata":{{}},"Endpoints":{{"docker":{{"Host":"{host}","SkipTLSVerify":false}}}}}}"#),
    )
    .unwrap();
    std::fs::write(
        dir.path().join("config.json"),
        format!(r#"{{"currentContext":"{name}"}}"#),
    )
    .unwrap();
    dir
}
