//! A Docker engine of a test's own ([`PrivateEngine`]): a second dockerd on
//! this host, started by `scripts/private-engine`, with the engine's stock
//! settings (its stock address pools, among others), that a test may kill,
//! restart and fill as it likes without touching the host's engine.
//!
//! Each engine has its own directory (socket, data root, log), default
//! bridge and containerd, so tests running side by side never share one.
//!
//! A shared engine ([`PrivateEngine::start`]) shares this host's files and
//! network. An isolated one ([`PrivateEngine::start_isolated`]) stands for
//! an engine on another machine: it runs in mount and network namespaces of
//! its own, where `/tmp`, `/home`, `/root`, `/work` and `/run` are empty (it
//! sees none of a test's `JACKIN_HOME` or repositories), and is reached at
//! `tcp://127.0.0.1:PORT`; [`PrivateEngine::inside`] runs a command on its
//! side.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use jackin_engine::Engine;

use super::{build_busybox, run_within};

/// The script that starts, kills and stops private engines (this crate is
/// `tests/support`).
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/private-engine");

/// Where isolated engines keep their directories: outside every path their
/// namespace masks (see `scripts/private-engine`), on the root filesystem.
const ISOLATED_ROOT: &str = "/var/lib/jackin-private-engines";

/// How long one `scripts/private-engine` command may take: a start waits up
/// to 30 s for the engine, a stop of a killed engine restarts it first.
const SCRIPT_LIMIT: Duration = Duration::from_secs(180);

/// A throwaway Docker engine of its own (`scripts/private-engine`), torn
/// down on drop: its containers, networks, images, bridges, mounts,
/// directory and (isolated) namespaces and forwarder go with it.
pub struct PrivateEngine {
    /// The engine's directory, a short path (unix socket paths are limited
    /// to 107 bytes): under `/tmp`, or [`ISOLATED_ROOT`] for an isolated
    /// engine.
    dir: PathBuf,
    /// `unix://DIR/docker.sock`, or `tcp://127.0.0.1:PORT` for an isolated
    /// engine.
    url: String,
    /// An isolated engine's network namespace (`ip netns`).
    netns: Option<String>,
}

impl PrivateEngine {
    /// Starts an engine sharing this host's files and network, in a fresh
    /// directory, and waits until it answers; panics with the script's
    /// output if it does not.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("jpe-")
            .tempdir_in("/tmp")
            .expect("a temporary directory")
            .keep();
        Self::start_in(dir, &[], "unix://")
    }

    /// Starts an engine in namespaces of its own (a stand-in for an engine
    /// on another machine: it sees none of this host's `/tmp`, `/home`,
    /// `/root`, `/work` or `/run`, and none of its network) and waits until
    /// it answers at `tcp://127.0.0.1:PORT`; panics with the script's output
    /// if it does not. Needs root (namespaces, and its directory under
    /// `/var/lib/jackin-private-engines`) and socat (`scripts/ensure-env
    /// --tests`).
    pub fn start_isolated() -> Self {
        std::fs::create_dir_all(ISOLATED_ROOT).unwrap_or_else(|e| {
            panic!("cannot make {ISOLATED_ROOT} ({e}): isolated engines need root")
        });
        let dir = tempfile::Builder::new()
            .prefix("jpe-")
            .tempdir_in(ISOLATED_ROOT)
            .expect("a directory for the engine")
            .keep();
        Self::start_in(dir, &["--isolated"], "tcp://127.0.0.1:")
    }

    /// Runs `scripts/private-engine start OPTIONS DIR`; the URL it prints
    /// must start with `scheme`.
    fn start_in(dir: PathBuf, options: &[&str], scheme: &str) -> Self {
        let mut start = Command::new(SCRIPT);
        start.arg("start").args(options).arg(&dir);
        let out = run_within(start, SCRIPT_LIMIT);
        if !out.status.success() {
            // The script undoes a failed first start; this removes the rest.
            let _ = script("stop", &dir).output();
            panic!(
                "scripts/private-engine start {options:?} {} failed ({}):\n{}",
                dir.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        let netns = std::fs::read_to_string(dir.join("netns"))
            .ok()
            .map(|name| name.trim().to_owned());
        let engine = Self { dir, url, netns };
        assert!(
            engine.url.starts_with(scheme),
            "scripts/private-engine start printed {:?}, not the engine's URL",
            engine.url
        );
        engine
    }

    /// The engine's URL, `unix://DIR/docker.sock` or (isolated)
    /// `tcp://127.0.0.1:PORT`: what `DOCKER_HOST` or `spec.engine` must be
    /// for a command to talk to it.
    pub fn url(&self) -> &str {
        &self.url
    }

    /// The engine's directory (its state, socket and logs), gone after drop.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// An isolated engine's network namespace (as `ip netns list` names
    /// it); `None` for a shared engine.
    pub fn netns(&self) -> Option<&str> {
        self.netns.as_deref()
    }

    /// Runs `args` on an isolated engine's side, in its mount and network
    /// namespaces (`scripts/private-engine inside`), insisting on success;
    /// returns trimmed stdout. What it writes under a masked path (`/tmp`,
    /// `/home`…) only the engine and its containers see: for instance the
    /// same path layout as the controller's, empty (a stale copy).
    pub fn inside(&self, args: &[&str]) -> String {
        self.run_script("inside", args).trim().to_owned()
    }

    /// A `docker` command bound to this engine, not yet run.
    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = Command::new("docker");
        cmd.env_remove("DOCKER_CONTEXT")
            .env_remove("DOCKER_TLS_VERIFY")
            .env_remove("DOCKER_CERT_PATH")
            .args(["-H", &self.url])
            .args(args);
        cmd
    }

    /// Runs `docker -H URL ARGS…`, insisting on success; returns trimmed
    /// stdout.
    pub fn docker(&self, args: &[&str]) -> String {
        let out = self.command(args).output().expect("docker runs");
        assert!(
            out.status.success(),
            "docker -H {} {args:?}: {}",
            self.url,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// SIGKILLs the engine's dockerd, as if it died mid-run: its socket then
    /// refuses connections at once (an isolated engine's port accepts and
    /// closes them at once). Its containerd dies with it; its
    /// containers keep running until [`restart`](Self::restart) (which
    /// stops them, as a restarting engine does) or drop.
    pub fn kill(&self) {
        self.run_script("kill", &[]);
    }

    /// Starts the engine again on the same directory (after
    /// [`kill`](Self::kill)) and waits until it answers. It stops the
    /// containers the dead engine left running, SIGKILL after their stop
    /// timeout (10 s for a PID 1 without an init), and keeps them, stopped.
    pub fn restart(&self) {
        let url = self.run_script("start", &[]);
        assert_eq!(url.trim(), self.url, "the engine came back elsewhere");
    }

    /// Builds [`super::busybox_image`] in this engine unless it has it
    /// already (see [`super::build_busybox`]); returns its tag.
    pub fn ensure_busybox(&self) -> String {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async {
                let engine = Engine::connect_named(Some(self.url()))
                    .await
                    .expect("the private engine answers");
                build_busybox(&engine).await
            })
    }

    /// Runs `scripts/private-engine CMD DIR ARGS…`, insisting on success;
    /// returns stdout.
    fn run_script(&self, cmd: &str, args: &[&str]) -> String {
        let mut command = script(cmd, &self.dir);
        command.args(args);
        let out = run_within(command, SCRIPT_LIMIT);
        assert!(
            out.status.success(),
            "scripts/private-engine {cmd} {} {args:?} failed ({}):\n{}",
            self.dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for PrivateEngine {
    /// Tears the engine down (`scripts/private-engine stop`), however the
    /// test ended; a failure is a warning, never a panic.
    fn drop(&mut self) {
        match script("stop", &self.dir).output() {
            Ok(Output { status, stderr, .. }) if !status.success() => eprintln!(
                "warning: scripts/private-engine stop {} failed ({status}):\n{}",
                self.dir.display(),
                String::from_utf8_lossy(&stderr)
            ),
            Ok(_) => {}
            Err(e) => eprintln!(
                "warning: cannot run scripts/private-engine stop {}: {e}",
                self.dir.display()
            ),
        }
    }
}

/// `scripts/private-engine CMD DIR`, not yet run.
fn script(cmd: &str, dir: &Path) -> Command {
    let mut command = Command::new(SCRIPT);
    command.arg(cmd).arg(dir);
    command
}
