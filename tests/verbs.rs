//! The operator's verbs as kubectl and docker compose users expect them:
//! `exec`, label selectors, several names, `-f FILE`, `-o name`, `get -w`,
//! usage errors, and what `describe` and `get -o wide` show.

use std::io::{BufRead, BufReader, Write};
use std::process::Stdio;
use std::time::Duration;

use support::{Home, docker, ensure_busybox, eventually, instance_yaml_with};

const SLEEP: &str = "  command: [sleep, \"3600\"]\n";

/// An instance running `sleep`, with `labels` (`{team: a}`).
fn labelled(name: &str, labels: &str) -> String {
    instance_yaml_with(name, SLEEP).replace(
        &format!("  name: {name}\n"),
        &format!("  name: {name}\n  labels: {labels}\n"),
    )
}

/// The lines a running command prints (on its standard output or error),
/// gathered as they come.
pub(crate) fn collect_lines(
    out: impl std::io::Read + Send + 'static,
) -> std::sync::Arc<std::sync::Mutex<Vec<String>>> {
    let lines = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = lines.clone();
    std::thread::spawn(move || {
        for line in BufReader::new(out).lines().map_while(Result::ok) {
            sink.lock().unwrap().push(line);
        }
    });
    lines
}

fn stdout(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn exec_runs_in_the_agents_container_as_its_user_and_passes_the_exit_status_on() {
    ensure_busybox();
    let home = Home::new();
    home.apply("e", &instance_yaml_with("e", SLEEP));
    let out = home.jackin(&[
        "exec",
        "e",
        "--",
        "sh",
        "-c",
        "id -u; id -g; pwd; echo oops >&2; exit 3",
    ]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let recipe = &home.object("e")["status"]["recipe"];
    let (uid, gid) = recipe["user"].as_str().unwrap().split_once(':').unwrap();
    let lines: Vec<String> = stdout(&out).lines().map(str::to_owned).collect();
    assert_eq!(lines, [uid, gid, recipe["workingDir"].as_str().unwrap()]);
    assert_eq!(stderr(&out), "oops\n", "its standard error stays apart");

    // -i: standard input reaches the command, and its end too.
    let mut child = home
        .command(&["exec", "-i", "e", "--", "sh", "-c", "tr a-z A-Z"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(b"hello\n").unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success());
    assert_eq!(stdout(&out), "HELLO\n");

    // No running container: it says so, and how to start one.
    home.ok(&["set-phase", "e", "kept"]);
    let err = home.fails(&["exec", "e", "--", "true"]);
    assert!(
        err.contains("no running container") && err.contains("set-phase e running"),
        "{err}"
    );
    // -t needs a terminal.
    let err = home.fails(&["exec", "-t", "e", "--", "true"]);
    assert!(err.contains("-t needs a terminal"), "{err}");
}

#[test]
fn selectors_names_and_files_choose_what_set_phase_delete_and_get_act_on() {
    ensure_busybox();
    let home = Home::new();
    let file = home.write_input(
        "team.yaml",
        &[
            labelled("a1", "{team: a}"),
            labelled("a2", "{team: a, tier: dev}"),
            labelled("b1", "{team: b}"),
        ]
        .join("---\n"),
    );
    home.ok(&["apply", "-f", file.to_str().unwrap()]);
    assert_eq!(
        home.ok(&["get", "-l", "team=a", "-o", "name"]),
        "instance/a1\ninstance/a2\n"
    );
    assert_eq!(
        home.ok(&["get", "-l", "team!=a", "-o", "name"]),
        "instance/b1\n"
    );
    assert_eq!(
        home.ok(&["get", "-l", "team=a,!tier", "-o", "name"]),
        "instance/a1\n"
    );
    assert_eq!(home.ok(&["get", "-l", "team=c", "-o", "name"]), "");
    let table = home.ok(&["get", "-l", "tier=dev"]);
    assert!(table.contains("a2") && !table.contains("a1"), "{table}");

    // Several names, then a selector: each is set and converged.
    let out = home.ok(&["set-phase", "a1", "b1", "kept"]);
    assert!(
        out.contains("instance/a1 Kept") && out.contains("instance/b1 Kept"),
        "{out}"
    );
    assert_eq!(home.object("a2")["status"]["phase"], "Running");
    let out = home.ok(&["set-phase", "running", "-l", "team=a"]);
    assert!(
        out.contains("instance/a1 Running") && out.contains("instance/a2 Running"),
        "{out}"
    );
    assert_eq!(home.object("b1")["status"]["phase"], "Kept");

    // An unknown name among several: nothing is written.
    let before = home.object("a1")["metadata"]["generation"].clone();
    let err = home.fails(&["set-phase", "a1", "nobody", "kept"]);
    assert!(err.contains("nobody"), "{err}");
    assert_eq!(home.object("a1")["spec"]["phase"], "Running");
    assert_eq!(home.object("a1")["metadata"]["generation"], before);

    // delete -l, then delete -f for what the file still holds.
    for c in [home.container("a1"), home.container("a2")] {
        docker(&["rm", "-f", &c]);
    }
    let out = home.ok(&["delete", "-l", "team=a"]);
    assert!(
        out.contains("instance/a1 purged") && out.contains("instance/a2 purged"),
        "{out}"
    );
    assert_eq!(home.ok(&["get", "-o", "name"]), "instance/b1\n");
    let out = home.ok(&["delete", "-f", file.to_str().unwrap()]);
    assert!(out.contains("instance/b1 purged"), "{out}");
    assert_eq!(home.ok(&["get", "-o", "name"]), "");
    let none = home.jackin(&["delete", "-l", "team=a"]);
    assert!(none.status.success());
    assert!(
        stderr(&none).contains("No instances found"),
        "{}",
        stderr(&none)
    );
}

/// Where each column of a table's line starts (after three spaces).
fn column_starts(line: &str) -> Vec<usize> {
    let bytes = line.as_bytes();
    let mut starts = vec![0];
    starts.extend((3..bytes.len()).filter(|&i| bytes[i] != b' ' && bytes[i - 3..i] == *b"   "));
    starts
}

#[test]
fn get_w_prints_a_line_when_a_phase_changes() {
    ensure_busybox();
    let home = Home::new();
    home.apply("w", &instance_yaml_with("w", SLEEP));
    let mut watch = home
        .command(&["get", "-w"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = collect_lines(watch.stdout.take().unwrap());
    let has = |needle: &str| {
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("w ") && l.contains(needle))
    };
    eventually(Duration::from_secs(20), "the first listing", || {
        has("Running")
    });
    home.ok(&["set-phase", "w", "kept"]);
    eventually(Duration::from_secs(20), "a line for Kept", || has("Kept"));
    // A shell agent forwards no logins: its starts report none missing.
    home.ok(&["set-phase", "w", "running"]);
    let described = home.ok(&["describe", "w"]);
    assert!(!described.contains("CredentialsMissing"), "{described}");
    home.ok(&["delete", "w"]);
    eventually(Duration::from_secs(20), "a line for the deletion", || {
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with("w") && l.contains("deleted"))
    });
    let _ = watch.kill();
    let _ = watch.wait();
    let printed = lines.lock().unwrap().clone();
    // Each row's columns start where the header's do, though `Kept` is
    // narrower than the `Running` the header was measured with.
    let header = printed.iter().find(|l| l.starts_with("NAME")).unwrap();
    let kept = printed
        .iter()
        .find(|l| l.starts_with("w ") && l.contains("Kept"))
        .unwrap();
    assert_eq!(
        column_starts(kept),
        column_starts(header),
        "{header}\n{kept}"
    );
    assert_eq!(
        printed.iter().filter(|l| l.starts_with("NAME")).count(),
        1,
        "one header: {printed:?}"
    );
}

#[test]
fn usage_errors_exit_2_and_say_what_was_expected() {
    let home = Home::new();
    for (args, expected) in [
        (&["apply"][..], "required"),
        (&["set-phase", "x", "sideways"][..], "is not a phase"),
        (&["get", "-l", "team=a b"][..], "not a label value"),
        (&["delete"][..], "name the instances"),
        (&["exec", "x"][..], "required"),
        (&["get", "workspaces", "-w"][..], "-l and -w"),
    ] {
        let out = home.jackin(args);
        assert_eq!(
            out.status.code(),
            Some(2),
            "jackin {args:?}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(expected),
            "jackin {args:?}: {}",
            stderr(&out)
        );
    }
    assert!(!home.path().join("data").exists(), "nothing was written");
}

#[test]
fn describe_and_get_wide_say_where_and_what_an_instance_is() {
    ensure_busybox();
    let home = Home::new();
    let sidecar = format!(
        "{SLEEP}  sidecars: [{{name: helper, image: {}, command: [sleep, \"3600\"]}}]\n",
        support::busybox_image()
    );
    home.apply("d", &labelled("d", "{team: a}").replace(SLEEP, &sidecar));
    let described = home.ok(&["describe", "d"]);
    for expected in [
        "Labels:           team=a",
        "Engine:           default",
        "Sidecars:",
        "helper (",
    ] {
        assert!(
            described.contains(expected),
            "{expected:?} in:\n{described}"
        );
    }
    let container = home.container("d");
    assert!(
        described.contains(&format!("container {container}-helper")),
        "{described}"
    );
    // A kept session was stopped by jackin, which is not a failure.
    home.ok(&["set-phase", "d", "kept"]);
    let wide = home.ok(&["get", "-o", "wide"]);
    assert!(
        wide.contains("stopped by jackin to keep (SIGTERM, exit 143)"),
        "{wide}"
    );
    assert!(!wide.contains("exit 143 (marker)"), "{wide}");
    assert!(wide.contains("ENGINE"), "{wide}");
}

#[test]
fn the_controller_says_it_is_alive_and_what_it_does_without_v() {
    ensure_busybox();
    let home = Home::new();
    let log = home.path().join("quiet-controller.log");
    let mut controller = home
        .command(&["controller"])
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let said = |needle: &str| {
        std::fs::read_to_string(&log)
            .unwrap_or_default()
            .contains(needle)
    };
    eventually(Duration::from_secs(20), "the line at start", || {
        said("jackin controller: watching 0 instance(s)")
    });
    home.record("quiet", &instance_yaml_with("quiet", SLEEP));
    eventually(Duration::from_secs(60), "a line per action", || {
        said("instance/quiet: starting the container")
    });
    let _ = controller.kill();
    let _ = controller.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(!text.contains("INFO") && !text.contains("DEBUG"), "{text}");
}

#[test]
fn a_listing_printed_as_json_applies_back_unchanged() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "two",
        &[labelled("j1", "{team: a}"), labelled("j2", "{team: b}")].join("---\n"),
    );
    let listing = home.ok(&["get", "-o", "json"]);
    assert!(listing.contains("\"kind\": \"List\""), "{listing}");
    let mut apply = home
        .command(&["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    apply
        .stdin
        .take()
        .unwrap()
        .write_all(listing.as_bytes())
        .unwrap();
    let out = apply.wait_with_output().unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    assert_eq!(
        stdout(&out),
        "instance/j1 unchanged\ninstance/j2 unchanged\ninstance/j1 Running\ninstance/j2 Running\n"
    );
}

/// L7: stdin is capped as a manifest file is: a stream longer than the cap
/// is refused once the cap is passed, and the rest is never read.
#[test]
fn apply_from_stdin_is_capped_like_a_file() {
    let home = Home::new();
    let mut apply = home
        .command(&["apply", "-f", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Four times the cap, a MiB a write: a reader that stops at the cap
    // leaves the rest unwritten (the pipe breaks).
    const MIB: usize = 1 << 20;
    let mut input = apply.stdin.take().unwrap();
    let chunk = vec![b'a'; MIB];
    let written = (0..64)
        .take_while(|_| input.write_all(&chunk).is_ok())
        .count();
    drop(input);
    let out = apply.wait_with_output().unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("<stdin>: it is larger than 16777216 bytes"),
        "{err}"
    );
    assert!(written < 64, "jackin read all {written} MiB of stdin");
}

#[test]
fn logs_follow_keeps_printing_and_set_phase_takes_a_file() {
    ensure_busybox();
    let home = Home::new();
    let spec = "  command: [sh, -c, 'echo one; sleep 2; echo two; exec sleep 3600']\n";
    let file = home.write_input("f.yaml", &instance_yaml_with("follow", spec));
    home.ok(&["apply", "-f", file.to_str().unwrap()]);
    let mut logs = home
        .command(&["logs", "-f", "follow"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let lines = collect_lines(logs.stdout.take().unwrap());
    // "two" comes two seconds after the command started following.
    eventually(Duration::from_secs(20), "the line printed later", || {
        lines.lock().unwrap().iter().any(|l| l.trim() == "two")
    });
    let _ = logs.kill();
    let _ = logs.wait();

    // set-phase -f: the instances a manifest holds.
    let out = home.ok(&["set-phase", "kept", "-f", file.to_str().unwrap()]);
    assert!(out.contains("instance/follow Kept"), "{out}");

    // get workspaces NAME and get agents NAME print one.
    let ws = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\nspec: {}\n";
    home.apply("ws", ws);
    assert_eq!(
        home.ok(&["get", "workspaces", "desk", "-o", "name"]),
        "workspace/desk\n"
    );
    assert_eq!(
        home.ok(&["get", "agents", "shell", "-o", "name"]),
        "agent/shell\n"
    );
}

#[test]
fn every_verb_that_takes_a_name_takes_the_kind_slash_name_get_prints() {
    ensure_busybox();
    let home = Home::new();
    let sidecar = format!(
        "{SLEEP}  sidecars: [{{name: helper, image: {}, command: [sh, -c, 'echo helper says hi; \
         exec sleep 3600']}}]\n",
        support::busybox_image()
    );
    home.apply("k", &instance_yaml_with("k", &sidecar));
    let ws = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\nspec: {}\n";
    home.apply("ws", ws);
    let printed = home.ok(&["get", "-o", "name"]);
    assert_eq!(printed, "instance/k\n");
    let k = printed.trim();

    // get and describe, by every spelling.
    assert_eq!(home.ok(&["get", k, "-o", "name"]), "instance/k\n");
    assert_eq!(
        home.ok(&["get", "instances/k", "-o", "name"]),
        "instance/k\n"
    );
    for args in [
        &["describe", k][..],
        &["describe", "instances/k"][..],
        &["describe", "instance", "k"][..],
    ] {
        let described = home.ok(args);
        assert!(
            described.contains("Name:") && described.contains(" k\n"),
            "{args:?}: {described}"
        );
    }
    for args in [
        &["describe", "workspace", "desk"][..],
        &["describe", "workspace/desk"][..],
    ] {
        let described = home.ok(args);
        assert!(described.contains("Exit policy:"), "{args:?}: {described}");
    }
    for args in [
        &["describe", "agent", "shell"][..],
        &["describe", "agent/shell"][..],
    ] {
        let described = home.ok(args);
        assert!(
            described.contains("Source:           builtin") && described.contains("k "),
            "{args:?}: the entry and the instance that names it:\n{described}"
        );
    }
    let err = home.fails(&["describe", "agent", "nobody"]);
    assert!(err.contains("agent \"nobody\" not found"), "{err}");

    // The verbs that act on an instance.
    let out = home.jackin(&["exec", k, "--", "echo", "in k"]);
    assert_eq!(stdout(&out), "in k\n", "{}", stderr(&out));
    let out = home.jackin(&["logs", k, "-c", "helper"]);
    assert_eq!(stdout(&out), "helper says hi\n", "{}", stderr(&out));
    let out = home.ok(&["set-phase", k, "kept"]);
    assert!(out.contains("instance/k Kept"), "{out}");
    let out = home.ok(&["set-phase", "instances/k", "running"]);
    assert!(out.contains("instance/k Running"), "{out}");
    let out = home.jackin(&["logs", k]);
    assert!(out.status.success(), "{}", stderr(&out));
    // attach gets past the name: this test has no terminal to attach.
    let attach = home.within(Duration::from_secs(60), &["attach", k]);
    assert!(
        !stderr(&attach).contains("invalid name") && !stderr(&attach).contains("not found"),
        "{}",
        stderr(&attach)
    );

    // Another kind where an instance is meant is a usage error.
    let wrong = home.jackin(&["set-phase", "workspace/desk", "kept"]);
    assert_eq!(wrong.status.code(), Some(2), "{}", stderr(&wrong));
    assert!(
        stderr(&wrong).contains("is a workspace"),
        "{}",
        stderr(&wrong)
    );

    let out = home.ok(&["delete", k]);
    assert!(out.contains("instance/k purged"), "{out}");
    assert_eq!(home.ok(&["get", "-o", "name"]), "");
}

#[test]
fn get_w_name_watches_that_instance_alone() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "two",
        &[
            instance_yaml_with("w1", SLEEP),
            instance_yaml_with("w2", SLEEP),
        ]
        .join("---\n"),
    );
    let err = home.fails(&["get", "-w", "nobody"]);
    assert!(err.contains("nobody"), "{err}");
    let mut watch = home
        .command(&["get", "-w", "instance/w1"])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let lines = collect_lines(watch.stdout.take().unwrap());
    let has = |prefix: &str, needle: &str| {
        lines
            .lock()
            .unwrap()
            .iter()
            .any(|l| l.starts_with(prefix) && l.contains(needle))
    };
    eventually(Duration::from_secs(20), "the first listing", || {
        has("w1 ", "Running")
    });
    // w2 changes first; once w1's change shows, a line for w2 would have too.
    home.ok(&["set-phase", "w2", "kept"]);
    home.ok(&["set-phase", "w1", "kept"]);
    eventually(Duration::from_secs(20), "a line for w1 kept", || {
        has("w1 ", "Kept")
    });
    let _ = watch.kill();
    let _ = watch.wait();
    let printed = lines.lock().unwrap().clone();
    assert!(
        printed.iter().all(|l| !l.starts_with("w2")),
        "only w1 is watched: {printed:?}"
    );
}

#[test]
fn logs_follow_goes_on_across_a_docker_rm_and_the_tier_2_restore() {
    ensure_busybox();
    let home = Home::new();
    // Each container prints a line of its own once it starts.
    let spec = "  command: [sh, -c, 'echo \"start $(cat /proc/sys/kernel/random/uuid)\"; exec sleep 3600']\n";
    home.apply("ff", &instance_yaml_with("ff", spec));
    let mut logs = home
        .command(&["logs", "-f", "ff"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = collect_lines(logs.stdout.take().unwrap());
    let err = collect_lines(logs.stderr.take().unwrap());
    let starts = || -> Vec<String> {
        out.lock()
            .unwrap()
            .iter()
            .filter(|l| l.starts_with("start "))
            .cloned()
            .collect()
    };
    let said = |needle: &str| err.lock().unwrap().iter().any(|l| l.contains(needle));
    eventually(
        Duration::from_secs(20),
        "the first container's line",
        || starts().len() == 1,
    );
    let first = home.container("ff");
    let first_id = docker(&["inspect", "-f", "{{.Id}}", &first]);
    docker(&["rm", "-f", &first]);
    eventually(Duration::from_secs(20), "a note that it waits", || {
        said("the container went away; waiting")
    });
    let restored = home.ok(&["set-phase", "ff", "running"]);
    assert!(restored.contains("tier 2"), "{restored}");
    let second_id = docker(&["inspect", "-f", "{{.Id}}", &home.container("ff")]);
    assert_ne!(first_id, second_id, "the restore made a new container");
    eventually(Duration::from_secs(30), "the new container's line", || {
        starts().len() == 2
    });
    let printed = starts();
    assert_ne!(
        printed[0], printed[1],
        "two containers printed: {printed:?}"
    );
    assert!(
        said("the container was replaced") && said("following the new one"),
        "{:?}",
        err.lock().unwrap()
    );
    assert!(logs.try_wait().unwrap().is_none(), "it still follows");

    // Kept: nothing more will come, and it says why.
    home.ok(&["set-phase", "ff", "kept"]);
    let mut status = None;
    eventually(Duration::from_secs(30), "logs -f ends", || {
        status = logs.try_wait().unwrap();
        status.is_some()
    });
    assert!(status.unwrap().success());
    eventually(Duration::from_secs(5), "the reason on stderr", || {
        said("instance/ff was kept: no more output to follow")
    });
}

#[test]
fn logs_c_names_a_sidecar_the_instance_has() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "side",
        &instance_yaml_with(
            "side",
            &format!("{SLEEP}{}", support::sidecar_line("helper")),
        ),
    );
    let err = home.fails(&["logs", "side", "-c", "nope"]);
    assert!(
        err.contains("instance/side has no sidecar \"nope\"; its sidecars: helper"),
        "{err}"
    );
}

#[test]
fn a_relative_jackin_home_is_refused_before_anything_is_written() {
    let scratch = tempfile::tempdir().unwrap();
    let inputs = tempfile::tempdir().unwrap();
    let ws = inputs.path().join("ws.yaml");
    std::fs::write(
        &ws,
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\nspec: {}\n",
    )
    .unwrap();
    let apply = ["apply", "-f", ws.to_str().unwrap()];
    for args in [&["get"][..], &apply[..], &["controller", "--once"][..]] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_jackin"))
            .args(args)
            .env("JACKIN_HOME", "relative/home")
            .current_dir(scratch.path())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        assert_eq!(
            out.status.code(),
            Some(1),
            "jackin {args:?}: {}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains("JACKIN_HOME=relative/home is not an absolute path"),
            "jackin {args:?}: {}",
            stderr(&out)
        );
        assert_eq!(
            std::fs::read_dir(scratch.path()).unwrap().count(),
            0,
            "jackin {args:?} wrote nothing"
        );
    }
}

#[test]
fn logs_follow_ends_when_the_session_ends_and_says_why() {
    ensure_busybox();
    let home = Home::new();
    // A session that ends by itself (exit 0) once the host drops
    // `state/go` into its unit.
    let spec = "  command: [sh, -c, 'echo working; while [ ! -f /jackin/state/go ]; do sleep 0.2; \
                done; echo done; exit 0']\n";
    home.apply("ender", &instance_yaml_with("ender", spec));
    let mut logs = home
        .command(&["logs", "-f", "ender"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let out = collect_lines(logs.stdout.take().unwrap());
    let err = collect_lines(logs.stderr.take().unwrap());
    eventually(Duration::from_secs(20), "the first line", || {
        out.lock().unwrap().iter().any(|l| l == "working")
    });
    let unit = home.path().join("data").join(home.container("ender"));
    std::fs::write(unit.join("state/go"), "").unwrap();
    // The loop records the end (and settles it by the exit policy).
    let mut status = None;
    eventually(Duration::from_secs(60), "logs -f ends", || {
        home.ok(&["controller", "--once"]);
        status = logs.try_wait().unwrap();
        status.is_some()
    });
    assert!(status.unwrap().success());
    eventually(
        Duration::from_secs(5),
        "its last line and the reason",
        || {
            out.lock().unwrap().iter().any(|l| l == "done")
                && err
                    .lock()
                    .unwrap()
                    .iter()
                    .any(|l| l.ends_with("no more output to follow"))
        },
    );
}

#[test]
fn describe_workspace_shows_everything_it_sets() {
    let home = Home::new();
    home.record(
        "desk",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\nspec:\n  \
         needsYouAfter: 2m\n  updatePolicy: OnDrift\n  notify: {command: [notify-send, jackin]}\n  \
         roles:\n  - {name: tester, image: \"busybox:1\"}\n  - {name: architect, source: {git: \
         /srv/roles.git, ref: main}}\n  agentSettings: {trust: false}\n",
    );
    let described = home.ok(&["describe", "workspace", "desk"]);
    for expected in [
        "Update policy:    OnDrift\n",
        "Needs you after:  2m\n",
        "Notify:           notify-send jackin (at most 10s each run, once per 60s per instance \
         and event)\n",
        "Settings off:     trust\n",
        "Roles:\n  tester: image busybox:1\n  architect: built from /srv/roles.git at main\n",
    ] {
        assert!(
            described.contains(expected),
            "{expected:?} in:\n{described}"
        );
    }
    // What a workspace leaves out says its default.
    home.record(
        "bare",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: bare}\nspec: {}\n",
    );
    let bare = home.ok(&["describe", "workspace", "bare"]);
    for expected in [
        "Update policy:    Manual (the default)\n",
        "Needs you after:  30s (the default)\n",
        "Notify:           off\n",
    ] {
        assert!(bare.contains(expected), "{expected:?} in:\n{bare}");
    }
}
