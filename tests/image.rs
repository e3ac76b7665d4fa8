//! The agent's image and its Docker: the agent must be in the image, the
//! agent runs as the operator, a Docker daemon sidecar wired by `spec.dind`,
//! sidecars reachable by their names, and the standard environment.

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use support::{
    Home, RoleRepo, busybox_image, docker, ensure_busybox, eventually, git, instance_yaml_with,
    remove_by_uid, unique,
};

/// Runs `sh -c SCRIPT` in the instance's container; stdout, and success.
fn in_container(home: &Home, name: &str, script: &str) -> (String, bool) {
    let out = Command::new("docker")
        .args(["exec", &home.container(name), "sh", "-c", script])
        .output()
        .unwrap();
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        out.status.success(),
    )
}

/// A role image without the agent: an entry with no install block fails at
/// once naming the program; the built-in claude's block needs npm, which
/// the image lacks, so its derived image fails, with the build's output
/// kept. Both are permanent: no retry until the timeout.
#[test]
fn a_role_image_without_the_agent_fails_at_once_naming_it() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("no-agent");
    home.apply(
        "agent.yaml",
        "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: absent}\nspec:\n  \
         launch: [absent]\n",
    );
    for (name, agent, says) in [
        (
            "missing",
            "absent",
            &[
                "has no `absent` (the agent's command) on its PATH",
                "must install it",
            ][..],
        ),
        (
            "uninstallable",
            "claude",
            &[
                "installing the agent claude into a derived image failed",
                "agent-install.log",
            ][..],
        ),
    ] {
        let yaml = role
            .instance_yaml(name)
            .replace("agent: shell", &format!("agent: {agent}"));
        let input = home.write_input(&format!("{name}.yaml"), &yaml);
        let started = Instant::now();
        let err = home.fails(&["apply", "--timeout", "5m", input.to_str().unwrap()]);
        assert!(says.iter().all(|s| err.contains(s)), "{err}");
        // A permanent failure, not a retry until the timeout.
        assert!(started.elapsed() < Duration::from_secs(240), "{name}");
        let obj = home.object(name);
        assert_eq!(obj["status"]["phase"], "Failed", "{name}");
    }
    // The probes left nothing behind: this home's (the tests beside it in
    // this binary make probes of their own meanwhile).
    let probes = docker(&[
        "ps",
        "-aq",
        "--filter",
        "name=jackin-probe-",
        "--filter",
        &format!("label=jackin.dev/home={}", home.home_id()),
    ]);
    assert_eq!(probes, "");
}

/// A role whose Dockerfile fails: the build's output is kept in the unit,
/// the error names the file, and the build that succeeds once the
/// Dockerfile is fixed removes it. Defect SA6: a failing role Dockerfile
/// left no build log anywhere.
#[test]
fn a_failing_role_build_keeps_its_log_in_the_unit() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("failing-build");
    let dockerfile = role.path().join("Dockerfile");
    let good = std::fs::read_to_string(&dockerfile).unwrap();
    std::fs::write(
        &dockerfile,
        format!("{good}RUN [\"/bin/sh\", \"-c\", \"echo ROLE-STEP-OUTPUT; exit 7\"]\n"),
    )
    .unwrap();
    role.commit_marker("breaks");
    let input = home.write_input("b.yaml", &role.instance_yaml("b"));
    let err = home.fails(&["apply", "--timeout", "5m", input.to_str().unwrap()]);
    let log = home.unit("b").join(".jackin/role-build.log");
    assert!(
        err.contains(&format!("its build output is kept in {}", log.display())),
        "{err}"
    );
    let kept = std::fs::read_to_string(&log).unwrap();
    assert!(kept.contains("ROLE-STEP-OUTPUT"), "{kept}");
    assert_eq!(home.object("b")["status"]["phase"], "Failed");

    std::fs::write(&dockerfile, good).unwrap();
    role.commit_marker("fixed");
    home.ok(&["set-phase", "b", "running", "--timeout", "5m"]);
    assert!(
        !log.exists(),
        "the failure's log outlived the build that succeeded"
    );
}

#[test]
fn every_agent_gets_the_standard_environment_and_reaches_sidecars_by_name() {
    ensure_busybox();
    let home = Home::new();
    let spec = format!(
        "  workspace: desk\n  sidecars: [{{name: helper, image: {}, command: [sleep, \"3600\"]}}]\n",
        busybox_image()
    );
    home.apply(
        "ws",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\n",
    );
    home.apply("env", &instance_yaml_with("env", &spec));
    let (env, _) = in_container(&home, "env", "env");
    for line in [
        "TERM=xterm-256color",
        "COLORTERM=truecolor",
        "JACKIN_INSTANCE=env",
        "JACKIN_AGENT=shell",
        "JACKIN_WORKSPACE=desk",
    ] {
        assert!(env.lines().any(|l| l == line), "no {line} in:\n{env}");
    }
    let (answer, found) = in_container(&home, "env", "nslookup helper");
    assert!(found, "helper does not resolve:\n{answer}");
}

/// A stand-in for `docker:dind` (the engine here refuses privileged
/// containers): it writes client certificates where dockerd would, and
/// waits.
struct StandInDaemon {
    tag: String,
}

impl StandInDaemon {
    fn build() -> Self {
        let tag = format!("jackin-test/dind:{}", unique("standin"));
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("dockerd"),
            "#!/bin/sh\nmkdir -p \"$DOCKER_TLS_CERTDIR/client\"\nfor f in ca cert key; do \
             echo \"stand-in $f\" > \"$DOCKER_TLS_CERTDIR/client/$f.pem\"; done\nexec sleep 3600\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("Dockerfile"),
            format!(
                "FROM {}\nCOPY dockerd /bin/dockerd\nRUN [\"/bin/chmod\", \"755\", \"/bin/dockerd\"]\nCMD [\"/bin/dockerd\"]\n",
                busybox_image()
            ),
        )
        .unwrap();
        let out = Command::new("docker")
            .args(["build", "-q", "-t", &tag])
            .arg(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        Self { tag }
    }
}

impl Drop for StandInDaemon {
    fn drop(&mut self) {
        let _ = Command::new("docker")
            .args(["rmi", "-f", &self.tag])
            .output();
    }
}

#[test]
fn dind_is_wired_kept_across_tiers_and_purged_with_the_instance() {
    ensure_busybox();
    let daemon = StandInDaemon::build();
    let home = Home::new();
    let role = RoleRepo::new("dind");
    let yaml = role.instance_yaml("docker").replace(
        "  agent: shell\n",
        &format!(
            "  agent: shell\n  dind: {{image: {}, privileged: false}}\n",
            daemon.tag
        ),
    );
    home.apply("docker", &yaml);
    let container = home.container("docker");
    let sidecar = format!("{container}-dind");
    let volume = format!("{container}-dind-certs");
    let (env, _) = in_container(&home, "docker", "env");
    for line in [
        "DOCKER_HOST=tcp://dind:2376",
        "DOCKER_TLS_VERIFY=1",
        "DOCKER_CERT_PATH=/certs/client",
        "JACKIN_DIND_HOSTNAME=dind",
    ] {
        assert!(env.lines().any(|l| l == line), "no {line} in:\n{env}");
    }
    let (answer, found) = in_container(&home, "docker", "nslookup dind");
    assert!(found, "dind does not resolve:\n{answer}");
    eventually(
        Duration::from_secs(30),
        "the client certificates reach the agent",
        || in_container(&home, "docker", "cat /certs/client/cert.pem").0 == "stand-in cert\n",
    );
    // Read-only for the agent.
    assert!(!in_container(&home, "docker", "touch /certs/client/x").1);
    assert_eq!(
        docker(&[
            "volume",
            "inspect",
            "-f",
            "{{index .Labels \"jackin.dev/instance\"}}",
            &volume
        ]),
        "docker"
    );

    // Tier 1, 2 and 3: the daemon comes back with the agent.
    let image = home.object("docker")["status"]["recipe"]["imageId"]
        .as_str()
        .unwrap()
        .to_owned();
    for (what, commands) in [
        (
            "tier 1",
            vec![
                vec!["stop", "-t", "1", sidecar.as_str()],
                vec!["stop", "-t", "1", container.as_str()],
            ],
        ),
        (
            "tier 2",
            vec![vec!["rm", "-f", sidecar.as_str(), container.as_str()]],
        ),
        (
            "tier 3",
            vec![
                vec!["rm", "-f", sidecar.as_str(), container.as_str()],
                vec!["rmi", "-f", image.as_str()],
            ],
        ),
    ] {
        for args in &commands {
            docker(args);
        }
        let pass = home.ok(&["controller", "--once"]);
        assert!(pass.starts_with("pass complete"), "{what}: {pass}");
        assert_eq!(
            docker(&["inspect", "-f", "{{.State.Running}}", &sidecar]),
            "true",
            "{what}"
        );
        assert!(in_container(&home, "docker", "nslookup dind").1, "{what}");
    }

    // Kept frees the certificates volume (it holds nothing of the
    // session); a resume makes it again, and the daemon's new
    // certificates reach the agent; a purge removes it.
    let volumes = || docker(&["volume", "ls", "-q", "--filter", &format!("name={volume}")]);
    home.ok(&["set-phase", "docker", "kept"]);
    assert_eq!(volumes(), "");
    home.ok(&["set-phase", "docker", "running"]);
    assert_eq!(volumes(), volume);
    eventually(
        Duration::from_secs(30),
        "the client certificates reach the resumed agent",
        || in_container(&home, "docker", "cat /certs/client/cert.pem").0 == "stand-in cert\n",
    );
    home.ok(&["delete", "docker"]);
    assert_eq!(
        docker(&["volume", "ls", "-q", "--filter", &format!("name={volume}")]),
        ""
    );
}

/// The user the ownership test runs jackin as: this one when it is not
/// root, else `jackin-tester` (made by `scripts/ensure-env --tests`, in the docker
/// group).
fn operator() -> (Option<&'static str>, u32) {
    let me = std::fs::metadata("/proc/self")
        .map(|m| m.uid())
        .unwrap_or(0);
    if me != 0 {
        return (None, me);
    }
    let out = Command::new("id")
        .args(["-u", "jackin-tester"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "no user jackin-tester: `scripts/ensure-env --tests` (which scripts/test runs) makes it"
    );
    let uid = String::from_utf8_lossy(&out.stdout).trim().parse().unwrap();
    (Some("jackin-tester"), uid)
}

/// `jackin ARGS` as the operator, with `home` as `JACKIN_HOME`.
fn as_operator(user: Option<&str>, home: &Path, args: &[&str]) -> std::process::Output {
    let jackin = env!("CARGO_BIN_EXE_jackin");
    let mut cmd = match user {
        Some(user) => {
            let mut cmd = Command::new("runuser");
            cmd.args(["-u", user, "--", jackin]);
            cmd
        }
        None => Command::new(jackin),
    };
    cmd.env("JACKIN_HOME", home).env("HOME", home).args(args);
    cmd.output().unwrap()
}

/// Removes the engine objects of the instances a test home still holds,
/// even when the test fails.
struct Cleanup(PathBuf);

impl Drop for Cleanup {
    fn drop(&mut self) {
        let index = std::fs::read_to_string(self.0.join("data/instances.json")).unwrap_or_default();
        let index: serde_json::Value = serde_json::from_str(&index).unwrap_or_default();
        let uids: Vec<String> = index["instances"]
            .as_array()
            .map(|rows| {
                rows.iter()
                    .filter_map(|r| r["uid"].as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        remove_by_uid(&uids);
    }
}

#[test]
fn what_the_agent_writes_belongs_to_the_operator_who_cleans_up_without_root() {
    ensure_busybox();
    let (user, uid) = operator();
    let scratch = tempfile::tempdir().unwrap();
    let root = scratch.path();
    let chown = |path: &Path| {
        if user.is_some() {
            let status = Command::new("chown")
                .args(["-R", "jackin-tester:jackin-tester"])
                .arg(path)
                .status()
                .unwrap();
            assert!(status.success());
        }
    };
    let home = root.join("home");
    let shared = root.join("shared");
    let repo = root.join("repo");
    for dir in [&home, &shared, &repo] {
        std::fs::create_dir_all(dir).unwrap();
    }
    git(&repo, &["init", "--quiet", "--initial-branch=main"]);
    git(&repo, &["config", "user.email", "t@jackin.dev"]);
    git(&repo, &["config", "user.name", "t"]);
    std::fs::write(repo.join("README"), "host\n").unwrap();
    git(&repo, &["add", "."]);
    git(&repo, &["commit", "--quiet", "-m", "base"]);
    chown(root);
    let _cleanup = Cleanup(home.clone());

    let script = "echo x > /shared/made; echo y > /workspace/app/made; echo z > $HOME/made; \
                  exec sleep 3600";
    let yaml = instance_yaml_with(
        "owned",
        &format!(
            "  command: [sh, -c, {}]\n  mounts:\n    - {{src: {}, dst: /shared}}\n    - {{src: {}, dst: /workspace/app, isolation: worktree}}\n",
            serde_json::to_string(script).unwrap(),
            shared.display(),
            repo.display()
        ),
    );
    let input = root.join("owned.yaml");
    std::fs::write(&input, yaml).unwrap();
    chown(&input);
    let out = as_operator(user, &home, &["apply", input.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let obj: serde_json::Value =
        serde_json::from_slice(&as_operator(user, &home, &["get", "owned", "-o", "json"]).stdout)
            .unwrap();
    let container = obj["status"]["containerName"].as_str().unwrap().to_owned();
    let checkout = PathBuf::from(obj["status"]["mounts"][0]["path"].as_str().unwrap());
    let unit_home = home.join("data").join(&container).join("home");
    let made = [
        shared.join("made"),
        checkout.join("made"),
        unit_home.join("made"),
    ];
    eventually(Duration::from_secs(30), "the agent wrote its files", || {
        made.iter().all(|f| f.exists())
    });
    for file in &made {
        assert_eq!(
            std::fs::metadata(file).unwrap().uid(),
            uid,
            "{} is not the operator's",
            file.display()
        );
    }
    // The operator removes it all, root not needed.
    let out = as_operator(user, &home, &["delete", "owned", "--force"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!home.join("data").join(&container).exists());
    assert!(!checkout.exists());
}

/// The agent starts where its work is (A8): the first mount by default,
/// `spec.workingDir` when given, its home when it has neither; the same
/// after a tier 2 restore, and for `jackin exec`. A relative directory is
/// refused with its place in the file.
#[test]
fn the_agent_starts_in_its_workspace_at_every_tier() {
    ensure_busybox();
    let home = Home::new();
    let shared = tempfile::tempdir().unwrap();
    let command = "  command: [sh, -c, 'pwd > $HOME/started-in; exec sleep 3600']\n";
    let mount = format!(
        "  mounts: [{{src: {}, dst: /workspace/app}}]\n",
        shared.path().display()
    );
    let cases = [
        ("in-mount", format!("{command}{mount}"), "/workspace/app"),
        (
            "in-spec",
            format!("{command}{mount}  workingDir: /tmp\n"),
            "/tmp",
        ),
        ("in-home", command.to_owned(), "/home/agent"),
    ];
    let started_in = |name: &str| {
        let file = home
            .path()
            .join("data")
            .join(home.container(name))
            .join("home/started-in");
        std::fs::read_to_string(file)
            .unwrap_or_default()
            .trim()
            .to_owned()
    };
    for (name, spec, expected) in &cases {
        home.apply(name, &instance_yaml_with(name, spec));
        eventually(Duration::from_secs(30), "the first start", || {
            !started_in(name).is_empty()
        });
        assert_eq!(&started_in(name), expected, "{name}");
        assert_eq!(
            home.ok(&["exec", name, "--", "pwd"]).trim(),
            *expected,
            "{name}: exec"
        );
    }
    // Tier 2: the container is made again from the recipe, in the same place.
    let (name, _, expected) = &cases[0];
    let container = home.container(name);
    std::fs::remove_file(
        home.path()
            .join("data")
            .join(&container)
            .join("home/started-in"),
    )
    .unwrap();
    docker(&["rm", "-f", &container]);
    home.ok(&["controller", "--once"]);
    eventually(Duration::from_secs(30), "the restored start", || {
        !started_in(name).is_empty()
    });
    assert_eq!(&started_in(name), expected);
    assert_eq!(home.object(name)["status"]["restore"]["tier"], 2);

    let path = home.write_input(
        "relative.yaml",
        &instance_yaml_with(
            "relative",
            &format!("{command}  workingDir: workspace/app\n"),
        ),
    );
    let err = home.fails(&["apply", path.to_str().unwrap()]);
    assert!(
        err.contains(&format!("{}:9:15:", path.display())) && err.contains("spec.workingDir"),
        "{err}"
    );
}
