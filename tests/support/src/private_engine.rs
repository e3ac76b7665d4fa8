//! A Docker engine of a test's own ([`PrivateEngine`]): a second dockerd on
//! this host, started by `scripts/private-engine`, with the engine's stock
//! settings (its stock address pools, among others), that a test may kill,
//! restart and fill as it likes without touching the host's engine.
//!
//! Each engine has its own directory (socket, data root, log), default
//! bridge and containerd, so tests running side by side never share one.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Duration;

use jackin_engine::Engine;

use super::{build_busybox, run_within};

/// The script that starts, kills and stops private engines (this crate is
/// `tests/support`).
const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../../scripts/private-engine");

/// How long one `scripts/private-engine` command may take: a start waits up
/// to 30 s for the engine, a stop of a killed engine restarts it first.
const SCRIPT_LIMIT: Duration = Duration::from_secs(180);

/// A throwaway Docker engine of its own (`scripts/private-engine`), torn
/// down on drop: its containers, networks, images, bridges, mounts and
/// directory go with it.
pub struct PrivateEngine {
    /// The engine's directory, a short path under `/tmp` (unix socket paths
    /// are limited to 107 bytes).
    dir: PathBuf,
    /// `unix://DIR/docker.sock`.
    url: String,
}

impl PrivateEngine {
    /// Starts an engine in a fresh directory and waits until it answers;
    /// panics with the script's output if it does not.
    pub fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("jpe-")
            .tempdir_in("/tmp")
            .expect("a temporary directory")
            .keep();
        let out = run_within(script("start", &dir), SCRIPT_LIMIT);
        if !out.status.success() {
            // The script undoes a failed first start; this removes the rest.
            let _ = script("stop", &dir).output();
            panic!(
                "scripts/private-engine start {} failed ({}):\n{}",
                dir.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let url = String::from_utf8_lossy(&out.stdout).trim().to_owned();
        assert!(
            url.starts_with("unix://"),
            "scripts/private-engine start printed {url:?}, not the engine's URL"
        );
        Self { dir, url }
    }

    /// The engine's URL, `unix://DIR/docker.sock`: what `DOCKER_HOST` must
    /// be for a command to talk to it.
    pub fn url(&self) -> &str {
        &self.url
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
    /// refuses connections at once. Its containerd dies with it; its
    /// containers keep running until [`restart`](Self::restart) (which
    /// stops them, as a restarting engine does) or drop.
    pub fn kill(&self) {
        self.run_script("kill");
    }

    /// Starts the engine again on the same directory (after
    /// [`kill`](Self::kill)) and waits until it answers. It stops the
    /// containers the dead engine left running, SIGKILL after their stop
    /// timeout (10 s for a PID 1 without an init), and keeps them, stopped.
    pub fn restart(&self) {
        let url = self.run_script("start");
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

    /// Runs `scripts/private-engine CMD DIR`, insisting on success; returns
    /// stdout.
    fn run_script(&self, cmd: &str) -> String {
        let out = run_within(script(cmd, &self.dir), SCRIPT_LIMIT);
        assert!(
            out.status.success(),
            "scripts/private-engine {cmd} {} failed ({}):\n{}",
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
