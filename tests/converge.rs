//! The convergence loop against the real engine and real git repositories:
//! launch, every rung of the restore ladder, keep, purge, the pinned
//! recipe, secrets by reference, crash safety and engine failures.

use std::io::{BufRead, BufReader};
use std::process::Stdio;

use support::{
    Home, RoleRepo, condition, docker, engine_objects, ensure_busybox, instance_yaml,
    instance_yaml_with, sidecar_line,
};

fn restore_tier(home: &Home, name: &str) -> Option<i64> {
    home.object(name)["status"]["restore"]["tier"].as_i64()
}

#[test]
fn launch_then_tier_1_after_stop_and_tier_2_after_rm() {
    ensure_busybox();
    let home = Home::new();
    let yaml = instance_yaml_with("alpha", "  command: [sleep, \"3600\"]\n");
    assert_eq!(
        home.apply("a.yaml", &yaml),
        "instance/alpha created\ninstance/alpha Running\n"
    );
    let obj = home.object("alpha");
    assert_eq!(obj["status"]["phase"], "Running");
    assert_eq!(obj["status"]["observedGeneration"], 1);
    let container = home.container("alpha");
    let uid = obj["metadata"]["uid"].as_str().unwrap().to_owned();
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true"
    );
    let image_id = obj["status"]["recipe"]["imageId"]
        .as_str()
        .unwrap()
        .to_owned();

    // Tier 0: running, nothing to do, nothing written.
    let before = home.snapshot();
    assert_eq!(
        home.apply("a.yaml", &yaml),
        "instance/alpha unchanged\ninstance/alpha Running\n"
    );
    home.assert_unchanged(&before, "a converged re-apply");

    // Tier 1: the same container, started again.
    let id = docker(&["inspect", "-f", "{{.Id}}", &container]);
    docker(&["stop", "-t", "1", &container]);
    assert!(
        home.apply("a.yaml", &yaml)
            .ends_with("instance/alpha Running (restored, tier 1)\n")
    );
    assert_eq!(restore_tier(&home, "alpha"), Some(1));
    assert_eq!(docker(&["inspect", "-f", "{{.Id}}", &container]), id);
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true"
    );

    // Tier 2: a new container from the pinned image.
    docker(&["rm", "-f", &container]);
    assert!(
        home.apply("a.yaml", &yaml)
            .ends_with("instance/alpha Running (restored, tier 2)\n")
    );
    assert_eq!(restore_tier(&home, "alpha"), Some(2));
    assert_ne!(docker(&["inspect", "-f", "{{.Id}}", &container]), id);
    assert_eq!(
        docker(&["inspect", "-f", "{{.Image}}", &container]),
        image_id
    );
    let (containers, networks) = engine_objects(&uid);
    assert_eq!((containers.len(), networks.len()), (1, 1));
}

#[test]
fn tier_3_rebuilds_the_pinned_commit_not_the_new_head() {
    ensure_busybox();
    let home = Home::new();
    let repo = RoleRepo::new("pinned-v1");
    let yaml = repo.instance_yaml("builder");
    let first = home.apply("b.yaml", &yaml);
    assert!(first.ends_with("instance/builder Running\n"), "{first}");
    let container = home.container("builder");
    assert_eq!(docker(&["exec", &container, "cat", "/marker"]), "pinned-v1");
    let recipe = home.object("builder")["status"]["recipe"].clone();
    let pinned_commit = recipe["roleCommit"].as_str().unwrap().to_owned();
    assert_eq!(pinned_commit, repo.git(&["rev-parse", "HEAD"]));
    assert!(
        recipe["baseImage"]
            .as_str()
            .unwrap()
            .starts_with(&format!("{}@sha256:", support::busybox_image()))
    );

    // The role moves on; the container and its image go away.
    let head = repo.commit_marker("new-head-v2");
    assert_ne!(head, pinned_commit);
    docker(&["rm", "-f", &container]);
    docker(&["rmi", "-f", recipe["imageId"].as_str().unwrap()]);

    let out = home.apply("b.yaml", &yaml);
    assert!(
        out.ends_with("instance/builder Running (restored, tier 3)\n"),
        "{out}"
    );
    assert_eq!(docker(&["exec", &container, "cat", "/marker"]), "pinned-v1");
    let after = home.object("builder")["status"]["recipe"].clone();
    assert_eq!(after["roleCommit"], pinned_commit.as_str());
    assert_eq!(after["baseImage"], recipe["baseImage"]);
    assert_eq!(restore_tier(&home, "builder"), Some(3));
}

/// A pinned commit gone from the source is rebuilt from the `roles/`
/// cache's checkout; gone from both, the instance fails, and nothing of it
/// is deleted.
#[test]
fn a_vanished_pinned_commit_fails_without_deleting_anything() {
    ensure_busybox();
    let home = Home::new();
    let repo = RoleRepo::new("doomed");
    let yaml = repo.instance_yaml("lost");
    home.apply("l.yaml", &yaml);
    let container = home.container("lost");
    let recipe = home.object("lost")["status"]["recipe"].clone();
    let pinned = recipe["roleCommit"].clone();

    // Rewrite history so the pinned commit no longer exists anywhere.
    repo.git(&["checkout", "--quiet", "--orphan", "rewritten"]);
    repo.commit_marker("rewritten");
    repo.git(&["branch", "-D", "main"]);
    repo.git(&["branch", "-m", "main"]);
    repo.git(&["reflog", "expire", "--expire=now", "--all"]);
    repo.git(&["gc", "--quiet", "--prune=now"]);
    docker(&["rm", "-f", &container]);
    docker(&["rmi", "-f", recipe["imageId"].as_str().unwrap()]);

    // The role's checkout in the roles/ cache still holds the commit: the
    // session comes back as it was, built from it.
    let path = home.write_input("l.yaml", &yaml);
    home.ok(&["apply", path.to_str().unwrap()]);
    let recipe = home.object("lost")["status"]["recipe"].clone();
    assert_eq!(recipe["roleCommit"], pinned);

    // Gone from the cache too: nothing to rebuild from.
    std::fs::remove_dir_all(home.path().join("roles")).unwrap();
    docker(&["rm", "-f", &container]);
    docker(&["rmi", "-f", recipe["imageId"].as_str().unwrap()]);
    let stderr = home.fails(&["apply", path.to_str().unwrap()]);
    assert!(stderr.contains("can no longer be found"), "{stderr}");
    let obj = home.object("lost");
    assert_eq!(obj["status"]["phase"], "Failed");
    let ready = &obj["status"]["conditions"][0];
    assert_eq!(
        (ready["type"].as_str(), ready["reason"].as_str()),
        (Some("Ready"), Some("RecipeUnavailable"))
    );
    assert_eq!(obj["status"]["recipe"], recipe, "the recipe is kept");
    assert!(
        home.path()
            .join("data")
            .join(&container)
            .join(".jackin/instance.json")
            .exists()
    );
}

#[test]
fn kept_keeps_the_unit_and_running_again_restores_it() {
    ensure_busybox();
    let home = Home::new();
    home.apply("k.yaml", &instance_yaml("keeper"));
    let container = home.container("keeper");
    let uid = home.object("keeper")["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    // Something the agent wrote in its home, which is bind-mounted.
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "echo remembered > $HOME/notes",
    ]);

    let out = home.ok(&["set-phase", "keeper", "kept"]);
    assert!(out.ends_with("instance/keeper Kept\n"), "{out}");
    assert_eq!(engine_objects(&uid), (vec![], vec![]));
    let unit = home.path().join("data").join(&container);
    assert!(unit.join("home/notes").exists());
    assert!(
        home.path()
            .join("data")
            .join(format!("{container}.lock"))
            .exists()
    );
    assert_eq!(home.object("keeper")["status"]["phase"], "Kept");

    let out = home.ok(&["set-phase", "keeper", "running"]);
    assert!(
        out.ends_with("instance/keeper Running (restored, tier 2)\n"),
        "{out}"
    );
    assert_eq!(
        docker(&["exec", &container, "sh", "-c", "cat $HOME/notes"]),
        "remembered"
    );
}

#[test]
fn purge_leaves_nothing_of_the_instance() {
    ensure_busybox();
    let home = Home::new();
    let yaml = instance_yaml_with("goner", &sidecar_line("helper"));
    home.apply("g.yaml", &yaml);
    let container = home.container("goner");
    let uid = home.object("goner")["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let (containers, networks) = engine_objects(&uid);
    assert_eq!((containers.len(), networks.len()), (2, 1), "{containers:?}");
    std::fs::create_dir_all(home.path().join("sockets").join(&container)).unwrap();

    let out = home.ok(&["delete", "goner"]);
    assert!(out.ends_with("instance/goner purged\n"), "{out}");
    assert_eq!(engine_objects(&uid), (vec![], vec![]));
    let data = home.path().join("data");
    assert!(!data.join(&container).exists());
    assert!(!data.join(format!("{container}.lock")).exists());
    assert!(!home.path().join("sockets").join(&container).exists());
    assert_eq!(home.ok(&["get"]), "", "no instance is listed");
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("instances.json")).unwrap()).unwrap();
    assert_eq!(index["instances"], serde_json::json!([]));
}

#[test]
fn secrets_reach_the_container_and_nothing_else() {
    ensure_busybox();
    let home = Home::new();
    let env_canary = "canary-env-7Qz1";
    let file_canary = "canary-file-9Xw4";
    let secret_file = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(secret_file.path(), format!("{file_canary}\n")).unwrap();
    let yaml = instance_yaml_with(
        "secretive",
        &format!(
            "  env:\n  - {{name: FROM_ENV, valueFrom: {{hostEnv: JACKIN_TEST_CANARY}}}}\n  \
             - {{name: FROM_FILE, valueFrom: {{file: {}}}}}\n",
            secret_file.path().display()
        ),
    );
    let path = home.write_input("s.yaml", &yaml);
    let out = home
        .command(&["-vvv", "apply", path.to_str().unwrap()])
        .env("JACKIN_TEST_CANARY", env_canary)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let container = home.container("secretive");
    let env = docker(&["inspect", "-f", "{{json .Config.Env}}", &container]);
    assert!(env.contains(&format!("FROM_ENV={env_canary}")), "{env}");
    assert!(env.contains(&format!("FROM_FILE={file_canary}")), "{env}");

    let logs = [out.stdout, out.stderr].concat();
    let json = home.ok(&["get", "secretive", "-o", "json"]);
    let describe = home.ok(&["describe", "secretive"]);
    for canary in [env_canary, file_canary] {
        assert!(
            !String::from_utf8_lossy(&logs).contains(canary),
            "{canary} in the logs"
        );
        assert!(!json.contains(canary), "{canary} in get -o json");
        assert!(!describe.contains(canary), "{canary} in describe");
        for (file, (_, bytes)) in home.snapshot() {
            assert!(
                !String::from_utf8_lossy(&bytes).contains(canary),
                "{canary} in {}",
                file.display()
            );
        }
    }
    // The references themselves are recorded.
    assert!(json.contains("JACKIN_TEST_CANARY"));
}

#[test]
fn spec_drift_is_reported_and_the_pinned_session_kept() {
    ensure_busybox();
    let home = Home::new();
    let yaml = instance_yaml_with("drifter", "  command: [sleep, \"3600\"]\n");
    home.apply("d.yaml", &yaml);
    let container = home.container("drifter");
    let id = docker(&["inspect", "-f", "{{.Id}}", &container]);
    let changed = yaml.replace("\"3600\"", "\"7200\"");
    let out = home.apply("d.yaml", &changed);
    assert!(out.starts_with("instance/drifter configured\n"), "{out}");
    let obj = home.object("drifter");
    let drift = condition(&obj, "SpecDrift").expect("a SpecDrift condition");
    assert!(
        drift["message"].as_str().unwrap().contains("spec.command"),
        "{drift}"
    );
    assert_eq!(
        obj["status"]["recipe"]["command"],
        serde_json::json!(["sleep", "3600"])
    );
    assert_eq!(
        docker(&["inspect", "-f", "{{.Id}}", &container]),
        id,
        "not rebuilt"
    );
    // Going back to the pinned spec clears the condition.
    home.apply("d.yaml", &yaml);
    let obj = home.object("drifter");
    assert!(
        !obj["status"]["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == "SpecDrift")
    );
}

#[test]
fn an_engine_that_does_not_answer_changes_nothing() {
    ensure_busybox();
    let home = Home::new();
    home.apply("u.yaml", &instance_yaml("steady"));
    let before = home.snapshot();
    let out = home
        .command(&["set-phase", "steady", "kept"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot reach the Docker engine at unix:///nonexistent/docker.sock"),
        "{stderr}"
    );
    assert!(stderr.contains("hint:"), "{stderr}");
    home.assert_unchanged(&before, "set-phase against a dead engine");
    let out = home
        .command(&["delete", "steady", "--force"])
        .env("DOCKER_HOST", "unix:///nonexistent/docker.sock")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    home.assert_unchanged(&before, "delete --force against a dead engine");
    assert_eq!(home.object("steady")["spec"]["phase"], "Running");
}

/// Kills a one-shot converge with SIGKILL as each of its steps begins, then
/// runs it again: it always ends converged, with exactly one of everything.
#[test]
fn killed_at_any_step_the_next_run_converges_without_leaks() {
    ensure_busybox();
    let home = Home::new();
    let yaml = instance_yaml_with(
        "crashy",
        &format!("  command: [sleep, \"3600\"]\n{}", sidecar_line("side")),
    );
    let path = home.write_input("c.yaml", &yaml);
    let path = path.to_str().unwrap();
    // Launch steps: pin, network, sidecar create, sidecar start, create, start.
    for kill_at in 1..=6 {
        run_and_kill_at_step(&home, &["apply", path], kill_at);
        let out = home.ok(&["apply", path]);
        assert!(
            out.contains("instance/crashy Running"),
            "kill at {kill_at}: {out}"
        );
        let uid = home.object("crashy")["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        let (containers, networks) = engine_objects(&uid);
        assert_eq!(
            (containers.len(), networks.len()),
            (2, 1),
            "kill at {kill_at}: {containers:?}"
        );
        let units = std::fs::read_dir(home.path().join("data"))
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .file_name()
                    .to_string_lossy()
                    .starts_with("jk-")
            })
            .filter(|e| e.as_ref().unwrap().path().is_dir())
            .count();
        assert_eq!(units, 1, "kill at {kill_at}: a stray unit");
        // Purge, killed at each of its steps too, then finished.
        run_and_kill_at_step(&home, &["delete", "crashy"], kill_at);
        let out = home.jackin(&["delete", "crashy"]);
        let text = String::from_utf8_lossy(&out.stdout);
        let gone =
            text.contains("purged") || String::from_utf8_lossy(&out.stderr).contains("not found");
        assert!(
            gone,
            "kill at {kill_at}: {text} {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(engine_objects(&uid), (vec![], vec![]), "kill at {kill_at}");
        let leftovers: Vec<_> = std::fs::read_dir(home.path().join("data"))
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.starts_with("jk-"))
            .collect();
        assert!(leftovers.is_empty(), "kill at {kill_at}: {leftovers:?}");
    }
    // Purge steps: stamp, container, sidecar, network, unit, sockets, lock,
    // row. The first six were hit above; the last two here.
    for kill_at in 7..=8 {
        home.ok(&["apply", path]);
        let uid = home.object("crashy")["metadata"]["uid"]
            .as_str()
            .unwrap()
            .to_owned();
        run_and_kill_at_step(&home, &["delete", "crashy"], kill_at);
        let out = home.jackin(&["delete", "crashy"]);
        assert!(matches!(out.status.code(), Some(0 | 1)));
        assert_eq!(
            engine_objects(&uid),
            (vec![], vec![]),
            "purge kill at {kill_at}"
        );
        assert!(
            !std::fs::read_dir(home.path().join("data"))
                .unwrap()
                .any(|e| e.unwrap().file_name().to_string_lossy().starts_with("jk-")),
            "purge kill at {kill_at}"
        );
        assert_eq!(home.ok(&["get"]), "", "purge kill at {kill_at}");
    }
}

/// Runs `jackin ARGS` and SIGKILLs it as its `step`-th step line appears
/// (or lets it finish if it has fewer steps).
fn run_and_kill_at_step(home: &Home, args: &[&str], step: usize) {
    let mut child = home
        .command(args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut seen = 0;
    for line in BufReader::new(stderr).lines() {
        let line = line.unwrap();
        if line.starts_with("instance/") {
            seen += 1;
            if seen == step {
                child.kill().unwrap();
                break;
            }
        }
    }
    let _ = child.wait();
}

#[test]
fn the_docker_context_selects_the_engine_ssh_too() {
    ensure_busybox();
    let home = Home::new();
    let path = home.write_input("x.yaml", &instance_yaml("contextual"));
    let local = support::docker_context("local-socket", "unix:///var/run/docker.sock");
    let out = home
        .command(&["apply", path.to_str().unwrap()])
        .env_remove("DOCKER_HOST")
        .env("DOCKER_CONFIG", local.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // An ssh context is taken too; a host that cannot be reached fails
    // the command, naming the engine, and changes nothing.
    let remote = support::docker_context("over-ssh", "ssh://someone@example.invalid");
    let before = home.snapshot();
    let out = home
        .command(&["set-phase", "contextual", "kept"])
        .env_remove("DOCKER_HOST")
        .env("DOCKER_CONFIG", remote.path())
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("cannot reach the Docker engine at ssh://someone@example.invalid"),
        "{stderr}"
    );
    assert!(
        stderr.contains("`ssh someone@example.invalid docker version`"),
        "{stderr}"
    );
    home.assert_unchanged(&before, "set-phase with an unreachable ssh context");
}

/// Applies `yaml` with a generous `--timeout`, insisting that it fails
/// within seconds (a permanent failure), and returns stderr.
fn fails_at_once(home: &Home, name: &str, yaml: &str) -> String {
    let path = home.write_input(&format!("{name}.yaml"), yaml);
    let out = home.within(
        std::time::Duration::from_secs(60),
        &["apply", path.to_str().unwrap(), "--timeout", "5m"],
    );
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
    let obj = home.object(name);
    assert_eq!(obj["status"]["phase"], "Failed", "{name}: {obj}");
    stderr
}

#[test]
fn what_can_never_work_fails_at_once_with_the_real_cause() {
    ensure_busybox();
    let home = Home::new();

    let yaml = instance_yaml("ghost-image").replace(
        &format!("image: {}", support::busybox_image()),
        "image: jackin-test/no-such-image:never",
    );
    let err = fails_at_once(&home, "ghost-image", &yaml);
    assert!(err.contains("no-such-image"), "{err}");

    let yaml = instance_yaml_with(
        "ghost-sidecar",
        "  sidecars: [{name: helper, image: jackin-test/no-such-image:never}]\n",
    );
    let err = fails_at_once(&home, "ghost-sidecar", &yaml);
    assert!(err.contains("No such image"), "{err}");

    let yaml = "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {name: ghost-role}\nspec:\n  \
                role: {name: r, source: {git: /nonexistent/jackin/role, ref: main}}\n  agent: shell\n";
    let err = fails_at_once(&home, "ghost-role", yaml);
    assert!(err.contains("/nonexistent/jackin/role"), "{err}");

    // A role whose Dockerfile fails to build: a build failure, not a dead
    // engine.
    let repo = RoleRepo::new("broken");
    std::fs::write(
        repo.path().join("Dockerfile"),
        format!("FROM {}\nRUN exit 7\n", support::busybox_image()),
    )
    .unwrap();
    repo.git(&["commit", "--quiet", "-am", "break the build"]);
    let err = fails_at_once(&home, "broken-build", &repo.instance_yaml("broken-build"));
    assert!(err.contains("image build failed"), "{err}");
    assert!(!err.contains("cannot reach"), "{err}");
    assert!(!err.contains("start dockerd"), "{err}");
    let obj = home.object("broken-build");
    assert_eq!(condition(&obj, "Ready").unwrap()["reason"], "BuildFailed");
}

#[test]
fn a_corrected_spec_is_taken_up_until_a_container_has_run() {
    ensure_busybox();
    let home = Home::new();
    let secrets = tempfile::tempdir().unwrap();
    let good = secrets.path().join("token");
    std::fs::write(&good, "right-value\n").unwrap();
    let spec = |file: &std::path::Path, src: &std::path::Path| {
        instance_yaml_with(
            "typo",
            &format!(
                "  env: [{{name: TOKEN, valueFrom: {{file: {}}}}}]\n  mounts: [{{src: {}, dst: /data}}]\n",
                file.display(),
                src.display()
            ),
        )
    };
    // A typo in the secret file's path: the first launch fails.
    let path = home.write_input(
        "typo.yaml",
        &spec(&secrets.path().join("tokn"), secrets.path()),
    );
    home.fails(&["apply", path.to_str().unwrap()]);
    assert_eq!(home.object("typo")["status"]["phase"], "Failed");

    // Fixed: the next apply launches with the corrected values.
    let path = home.write_input("typo.yaml", &spec(&good, secrets.path()));
    let out = home.ok(&["apply", path.to_str().unwrap()]);
    assert!(out.contains("instance/typo Running"), "{out}");
    let container = home.container("typo");
    assert_eq!(
        docker(&["exec", &container, "sh", "-c", "echo $TOKEN"]),
        "right-value"
    );
    let recipe = &home.object("typo")["status"]["recipe"];
    assert!(recipe["firstRunAt"].is_string(), "{recipe}");

    // Once it has run, the recipe is the session's: a later change drifts.
    let elsewhere = tempfile::tempdir().unwrap();
    let path = home.write_input("typo.yaml", &spec(&good, elsewhere.path()));
    home.ok(&["apply", path.to_str().unwrap()]);
    let obj = home.object("typo");
    assert_eq!(condition(&obj, "SpecDrift").unwrap()["status"], "True");
    assert_eq!(
        obj["status"]["recipe"]["mounts"][0]["src"],
        secrets.path().display().to_string()
    );
}

#[test]
fn a_sidecar_answers_to_its_spec_name() {
    ensure_busybox();
    let home = Home::new();
    // The helper answers on a TCP port. (Not ping: the agent's container
    // has no NET_RAW.)
    let helper = format!(
        "  sidecars: [{{name: helper, image: {}, command: [nc, -ll, -p, \"7000\", -e, echo, \
         helper-answers]}}]\n",
        support::busybox_image()
    );
    home.apply("withhelper", &instance_yaml_with("withhelper", &helper));
    let container = home.container("withhelper");
    // The helper may still be starting: a few tries.
    let ask = "for i in $(seq 50); do nc -w 5 helper 7000 && exit 0; sleep 0.2; done; exit 1";
    let out = std::process::Command::new("docker")
        .args(["exec", &container, "sh", "-c", ask])
        .output()
        .unwrap();
    assert!(
        out.status.success() && String::from_utf8_lossy(&out.stdout).contains("helper-answers"),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
