//! An engine reached over ssh (`ssh://USER@HOST:PORT`, in `spec.engine` or
//! a docker context): Debian's `sshd`, run by the test on a free loopback
//! port with a host key and a client key of its own, in front of this
//! machine's engine, so that the engine sees the controller's files and
//! sessions run there. jackin's process uses the system `ssh`, as the
//! docker CLI does; the test gives it its key and known host through an
//! ssh config, by a `PATH` whose `ssh` is the system one with `-F` that
//! config, and its control masters' directory by `TMPDIR`, both for
//! jackin's commands only.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use support::{Home, docker, engine_objects, ensure_busybox, eventually, instance_yaml_with};

/// How long an `sshd` may take to listen, and an `ssh` to be gone once
/// jackin's command ended: bounds on a wait, not timed assertions.
const SETTLE: Duration = Duration::from_secs(20);

/// A port on the loopback nothing listens on (as of now).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free loopback port")
        .port()
}

fn run(program: &str, args: &[&str]) {
    let out = Command::new(program)
        .args(args)
        .output()
        .unwrap_or_else(|e| panic!("{program}: {e} (scripts/ensure-env --tests installs it)"));
    assert!(
        out.status.success(),
        "{program} {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A foreground `sshd` on the loopback, and the `ssh` set-up jackin's
/// commands use to reach it. Dropped: the `sshd` is killed and its
/// directory removed.
struct Sshd {
    dir: tempfile::TempDir,
    child: Child,
    port: u16,
}

impl Sshd {
    fn start() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("jackin-test-sshd-")
            .tempdir()
            .unwrap();
        let at = |name: &str| dir.path().join(name).display().to_string();
        for key in ["host_key", "client_key"] {
            run(
                "ssh-keygen",
                &["-q", "-t", "ed25519", "-N", "", "-f", &at(key)],
            );
        }
        std::fs::copy(at("client_key.pub"), at("authorized_keys")).unwrap();
        let port = free_port();
        let host_key = std::fs::read_to_string(at("host_key.pub")).unwrap();
        std::fs::write(at("known_hosts"), format!("[127.0.0.1]:{port} {host_key}")).unwrap();
        std::fs::write(
            at("sshd_config"),
            format!(
                "ListenAddress 127.0.0.1:{port}\nHostKey {}\nAuthorizedKeysFile {}\n\
                 PermitRootLogin prohibit-password\nUsePAM no\nPidFile {}\nStrictModes no\n",
                at("host_key"),
                at("authorized_keys"),
                at("sshd.pid"),
            ),
        )
        .unwrap();
        std::fs::write(
            at("ssh_config"),
            format!(
                "Host *\n  IdentityFile {}\n  IdentitiesOnly yes\n  UserKnownHostsFile {}\n",
                at("client_key"),
                at("known_hosts"),
            ),
        )
        .unwrap();
        let bin = dir.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(
            bin.join("ssh"),
            format!(
                "#!/bin/sh\nexec /usr/bin/ssh -F {} \"$@\"\n",
                at("ssh_config")
            ),
        )
        .unwrap();
        run("chmod", &["+x", &bin.join("ssh").display().to_string()]);
        std::fs::create_dir(dir.path().join("tmp")).unwrap();
        // Debian's sshd refuses to start without its privilege separation
        // directory, which its service makes at boot.
        std::fs::create_dir_all("/run/sshd").unwrap();
        let child = Command::new("/usr/sbin/sshd")
            .args(["-D", "-e", "-f", &at("sshd_config")])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("sshd runs (scripts/ensure-env --tests installs openssh-server)");
        let sshd = Self { dir, child, port };
        eventually(SETTLE, "sshd listens", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        sshd
    }

    fn address(&self) -> String {
        format!("ssh://root@127.0.0.1:{}", self.port)
    }

    /// Where jackin's `ssh` keeps its control masters (`TMPDIR`).
    fn masters(&self) -> PathBuf {
        self.dir.path().join("tmp")
    }

    /// Makes every command of `home` reach this `sshd` as an operator's
    /// `ssh` set up for it would.
    fn serve(&self, home: &Home) {
        serve(home, self.dir.path());
    }
}

impl Drop for Sshd {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// `PATH` with the test's `ssh` (under `dir/bin`) first, and `TMPDIR` at
/// `dir/tmp`, for `home`'s commands.
fn serve(home: &Home, dir: &Path) {
    let path = std::env::var_os("PATH").unwrap_or_default();
    let mut paths = vec![dir.join("bin")];
    paths.extend(std::env::split_paths(&path));
    home.set_env("PATH", std::env::join_paths(paths).unwrap());
    home.set_env("TMPDIR", dir.join("tmp"));
}

/// Once a command has ended, no `ssh` of it is left (a control master, a
/// `dial-stdio` session) and no control master's directory.
fn assert_no_ssh_left(masters: &Path, after: &str) {
    let needle = masters.display().to_string();
    let running = || -> Vec<String> {
        std::fs::read_dir("/proc")
            .into_iter()
            .flatten()
            .filter_map(|entry| std::fs::read(entry.ok()?.path().join("cmdline")).ok())
            .map(|argv| String::from_utf8_lossy(&argv).replace('\0', " "))
            .filter(|argv| argv.contains(&needle))
            .collect()
    };
    let mut left = running();
    let since = std::time::Instant::now();
    while !left.is_empty() && since.elapsed() < SETTLE {
        std::thread::sleep(Duration::from_millis(100));
        left = running();
    }
    assert!(left.is_empty(), "after {after}, still running: {left:#?}");
    let left: Vec<_> = std::fs::read_dir(masters)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "after {after}, left in TMPDIR: {left:?}");
}

#[test]
fn a_session_runs_is_restored_and_purged_on_an_ssh_engine() {
    ensure_busybox();
    let sshd = Sshd::start();
    let home = Home::new();
    sshd.serve(&home);
    let yaml = instance_yaml_with(
        "remote",
        &format!(
            "  command: [sleep, \"3600\"]\n  engine: {}\n",
            sshd.address()
        ),
    );
    assert_eq!(
        home.apply("r.yaml", &yaml),
        "instance/remote created\ninstance/remote Running\n"
    );
    assert_no_ssh_left(&sshd.masters(), "apply");
    let obj = home.object("remote");
    assert_eq!(obj["status"]["phase"], "Running", "{obj}");
    let uid = obj["metadata"]["uid"].as_str().unwrap().to_owned();
    let container = home.container("remote");
    // On this machine's engine, behind the sshd, with jackin's labels.
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true"
    );
    assert_eq!(
        docker(&[
            "inspect",
            "-f",
            "{{index .Config.Labels \"jackin.dev/home\"}}",
            &container
        ]),
        home.home_id()
    );

    docker(&["rm", "-f", &container]);
    let out = home.apply("r.yaml", &yaml);
    assert!(
        out.ends_with("instance/remote Running (restored, tier 2)\n"),
        "{out}"
    );
    assert_eq!(
        home.object("remote")["status"]["restore"]["tier"].as_i64(),
        Some(2)
    );
    assert_no_ssh_left(&sshd.masters(), "a tier 2 restore");

    let out = home.ok(&["delete", "remote"]);
    assert!(out.ends_with("instance/remote purged\n"), "{out}");
    assert_eq!(engine_objects(&uid), (vec![], vec![]));
    assert_no_ssh_left(&sshd.masters(), "a purge");
}

/// A docker context (the CLI's `currentContext`) that names the ssh
/// engine selects it, as `docker` would.
#[test]
fn a_docker_context_naming_an_ssh_engine_is_used() {
    ensure_busybox();
    let sshd = Sshd::start();
    let home = Home::new();
    sshd.serve(&home);
    let config = support::docker_context("over-ssh", &sshd.address());
    home.set_env("DOCKER_CONFIG", config.path());
    home.set_env("DOCKER_HOST", "");
    let yaml = instance_yaml_with("contextual", "  command: [sleep, \"3600\"]\n");
    assert_eq!(
        home.apply("c.yaml", &yaml),
        "instance/contextual created\ninstance/contextual Running\n"
    );
    let obj = home.object("contextual");
    assert_eq!(obj["status"]["phase"], "Running", "{obj}");
    let container = home.container("contextual");
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true"
    );
    let out = home.ok(&["delete", "contextual"]);
    assert!(out.ends_with("instance/contextual purged\n"), "{out}");
    assert_no_ssh_left(&sshd.masters(), "commands through the context");
}

/// `apply` of an instance on `address`, with `home`'s `ssh`, given up at
/// `--timeout 30s`: its exit code is 1, and the error line(s) returned.
fn apply_unanswered(home: &Home, name: &str, address: &str) -> String {
    let yaml = instance_yaml_with(name, &format!("  engine: {address}\n"));
    let input = home.write_input(&format!("{name}.yaml"), &yaml);
    let out = home.within(
        Duration::from_secs(300),
        &["apply", input.to_str().unwrap(), "--timeout", "30s"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    stderr
        .lines()
        .filter(|line| !line.contains(" WARN "))
        .collect::<Vec<_>>()
        .join("\n")
}

/// An ssh engine where nothing listens, or where something takes the
/// connection and never says a word, fails the command with the engine
/// named and what went wrong, and leaves no `ssh` behind (one still
/// connecting when the command gives up is killed).
#[test]
fn an_ssh_engine_that_refuses_or_never_answers_fails_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("tmp")).unwrap();
    std::fs::create_dir(dir.path().join("bin")).unwrap();
    let home = Home::new();
    serve(&home, dir.path());

    let address = format!("ssh://root@127.0.0.1:{}", free_port());
    let errors = apply_unanswered(&home, "refused", &address);
    assert!(
        errors.contains(&format!(
            "error: instance/refused: cannot reach the Docker engine at {address}"
        )),
        "{errors}"
    );
    assert!(errors.contains("Connection refused"), "{errors}");
    assert!(errors.contains("docker version`"), "the hint: {errors}");
    assert_no_ssh_left(&dir.path().join("tmp"), "a refused connection");

    // Takes connections, holds them, never answers.
    let mute = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!("ssh://root@{}", mute.local_addr().unwrap());
    mute.set_nonblocking(true).unwrap();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let holder = {
        let stop = std::sync::Arc::clone(&stop);
        std::thread::spawn(move || {
            let mut held = Vec::new();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                match mute.accept() {
                    Ok((stream, _)) => held.push(stream),
                    Err(_) => std::thread::sleep(Duration::from_millis(50)),
                }
            }
        })
    };
    let errors = apply_unanswered(&home, "mute", &address);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    holder.join().unwrap();
    assert!(errors.contains(&address), "{errors}");
    assert!(
        errors.contains("has not answered") || errors.contains("timed out"),
        "{errors}"
    );
    assert_no_ssh_left(&dir.path().join("tmp"), "a host that never answers");
}
