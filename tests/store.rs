//! The state store and the CLI contract, through the real `jackin` binary.

use std::path::Path;

use jackin_api::{Object, manifest};
use support::{Home, examples_dir, instance_yaml};

fn parse(text: &str) -> Vec<Object> {
    manifest::parse("<output>", text).expect("jackin's own output parses")
}

#[test]
fn apply_examples_then_get_round_trips_and_reapply_writes_nothing() {
    let home = Home::new();
    let examples = examples_dir();
    let examples = examples.to_str().unwrap();

    let first = home.ok(&["apply", "--no-wait", examples]);
    assert_eq!(
        first,
        "agent/claude-opus created\ninstance/architect-1 created\nworkspace/jackin created\n"
    );

    let before = home.snapshot();
    let second = home.ok(&["apply", "--no-wait", "-f", examples]);
    assert_eq!(
        second,
        "agent/claude-opus unchanged\ninstance/architect-1 unchanged\nworkspace/jackin unchanged\n"
    );
    home.assert_unchanged(&before, "an unchanged apply");

    // What get prints is what was applied, plus what jackin owns.
    let yaml = home.ok(&["get", "-o", "yaml"]);
    let printed = parse(&yaml);
    let Object::Instance(printed) = &printed[0] else {
        panic!("expected an instance")
    };
    let applied = parse(
        &std::fs::read_to_string(Path::new(examples).join("instances/architect-1.yaml")).unwrap(),
    );
    let Object::Instance(applied) = &applied[0] else {
        panic!("expected an instance")
    };
    assert_eq!(printed.spec, applied.spec);
    assert_eq!(printed.metadata.labels, applied.metadata.labels);
    assert_eq!(printed.metadata.generation, Some(1));
    assert!(printed.metadata.uid.is_some());

    // Feeding the output back changes nothing either.
    let again = home.write_input("roundtrip.yaml", &yaml);
    let before = home.snapshot();
    assert_eq!(
        home.ok(&["apply", "--no-wait", again.to_str().unwrap()]),
        "instance/architect-1 unchanged\n"
    );
    home.assert_unchanged(&before, "re-applying get's output");

    let ws = home.ok(&["get", "workspaces", "jackin", "-o", "yaml"]);
    let Object::Workspace(ws) = &parse(&ws)[0] else {
        panic!("expected a workspace")
    };
    assert_eq!(ws.spec.keep.max, Some(3));
}

/// `examples/` works after the quickstart as its README says: it validates
/// (a dry run writes nothing), the images its instances run are the one
/// `scripts/example-image` builds, and each host variable they pass through
/// is named in its README (an apply without one fails `SecretUnavailable`).
#[test]
fn the_examples_validate_and_their_readme_says_how_to_run_them() {
    let home = Home::new();
    let examples = examples_dir();
    let before = home.snapshot();
    let out = home.ok(&["apply", "--dry-run", "-f", examples.to_str().unwrap()]);
    for line in [
        "agent/claude-opus created (dry run)",
        "instance/architect-1 created (dry run)",
        "workspace/jackin created (dry run)",
    ] {
        assert!(out.contains(line), "{line:?} in:\n{out}");
    }
    home.assert_unchanged(&before, "apply --dry-run of examples/");

    let script = std::fs::read_to_string(examples.join("../scripts/example-image")).unwrap();
    let built = script
        .lines()
        .find_map(|line| line.strip_prefix("tag="))
        .expect("scripts/example-image names its tag");
    let readme = std::fs::read_to_string(examples.join("README.md")).unwrap();
    assert!(readme.contains("scripts/example-image"), "{readme}");
    let mut instances = 0;
    for entry in std::fs::read_dir(examples.join("instances")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        for obj in manifest::parse(&path.display().to_string(), &text).unwrap() {
            let Object::Instance(obj) = obj else { continue };
            instances += 1;
            assert_eq!(obj.spec.image.as_deref(), Some(built), "{}", path.display());
            for var in obj
                .spec
                .env
                .iter()
                .filter_map(|v| v.value_from.as_ref()?.host_env.as_ref())
            {
                assert!(
                    readme.contains(var.as_str()),
                    "examples/README.md names {var}"
                );
            }
        }
    }
    assert!(instances > 0, "examples/ holds an instance");
}

#[test]
fn get_json_prints_the_whole_object() {
    let home = Home::new();
    let input = home.write_input("a.yaml", &instance_yaml("alpha"));
    home.ok(&["apply", "--no-wait", input.to_str().unwrap()]);
    let json: serde_json::Value =
        serde_json::from_str(&home.ok(&["get", "alpha", "-o", "json"])).unwrap();
    assert_eq!(json["apiVersion"], "jackin.dev/v1alpha1");
    assert_eq!(json["kind"], "Instance");
    assert_eq!(json["metadata"]["name"], "alpha");
    assert_eq!(json["spec"]["phase"], "Running");
    assert_eq!(json["status"]["phase"], "Pending");
    let container = json["status"]["containerName"].as_str().unwrap();
    assert!(
        container.starts_with("jk-") && container.ends_with("-tester"),
        "{container}"
    );

    let list: serde_json::Value =
        serde_json::from_str(&home.ok(&["get", "instances", "-o", "json"])).unwrap();
    assert_eq!(list["kind"], "List");
    assert_eq!(list["items"][0]["metadata"]["name"], "alpha");
}

#[test]
fn generation_moves_with_the_spec_only() {
    let home = Home::new();
    let input = home.write_input("a.yaml", &instance_yaml("alpha"));
    home.ok(&["apply", "--no-wait", input.to_str().unwrap()]);
    let generation = |home: &Home| {
        let json: serde_json::Value =
            serde_json::from_str(&home.ok(&["get", "alpha", "-o", "json"])).unwrap();
        json["metadata"]["generation"].as_i64().unwrap()
    };
    assert_eq!(generation(&home), 1);

    // A label is metadata: configured, same generation.
    let labelled =
        instance_yaml("alpha").replace("  name: alpha\n", "  name: alpha\n  labels: {a: b}\n");
    let input = home.write_input("a.yaml", &labelled);
    assert_eq!(
        home.ok(&["apply", "--no-wait", input.to_str().unwrap()]),
        "instance/alpha configured\n"
    );
    assert_eq!(generation(&home), 1);

    let out = home.ok(&["set-phase", "alpha", "kept", "--no-wait"]);
    assert!(out.starts_with("instance/alpha configured"), "{out}");
    assert_eq!(generation(&home), 2);
    let out = home.ok(&["set-phase", "alpha", "kept", "--no-wait"]);
    assert!(out.starts_with("instance/alpha unchanged"), "{out}");
    assert_eq!(generation(&home), 2);
}

/// Each bad input exits 1, names file:line:column and the field, and leaves
/// the home exactly as it was.
#[test]
fn bad_input_is_located_and_writes_nothing() {
    let home = Home::new();
    let good = home.write_input("good.yaml", &instance_yaml("alpha"));
    home.ok(&["apply", "--no-wait", good.to_str().unwrap()]);

    let base = instance_yaml("beta");
    let cases: Vec<(&str, String, &str)> = vec![
        (
            "broken.yaml",
            "kind: Instance\nspec: [unclosed\n".into(),
            "broken.yaml:2:7:",
        ),
        (
            "unknown-field.yaml",
            base.replace("  agent: shell\n", "  agent: shell\n  agnet: codex\n"),
            "unknown-field.yaml:8:3: field `spec.agnet`: unknown field `agnet`",
        ),
        (
            "bad-name.yaml",
            base.replace("name: beta", "name: ../x"),
            "bad-name.yaml:4:9: field `metadata.name`: invalid name \"../x\"",
        ),
        (
            "dup-mounts.yaml",
            format!("{base}  mounts:\n  - {{src: /a, dst: /w}}\n  - {{src: /b, dst: /w}}\n"),
            "dup-mounts.yaml:11:20: field `spec.mounts[1].dst`: duplicate mount destination",
        ),
        (
            "bad-phase.yaml",
            base.replace("  agent: shell\n", "  agent: shell\n  phase: Paused\n"),
            "bad-phase.yaml:8:10: field `spec.phase`: unknown variant `Paused`",
        ),
    ];
    for (file, text, expected) in cases {
        let path = home.write_input(file, &text);
        let before = home.snapshot();
        // A good file beside the bad one is not applied either.
        let stderr = home.fails(&[
            "apply",
            "--no-wait",
            good.to_str().unwrap(),
            path.to_str().unwrap(),
        ]);
        assert!(
            stderr.contains(expected),
            "{file}: expected {expected:?} in:\n{stderr}"
        );
        home.assert_unchanged(&before, file);
    }
    // A fresh home is not even created by bad input.
    let fresh = Home::new();
    let bad = home.write_input("bad.yaml", &base.replace("name: beta", "name: ../x"));
    fresh.fails(&["apply", "--no-wait", bad.to_str().unwrap()]);
    assert!(fresh.snapshot().is_empty(), "{:?}", fresh.snapshot().keys());
}

/// Four typos in two documents (an unknown field, a bad enum value and an
/// agent that is nowhere in one, a bad name in the other) are all reported
/// by one run of each command that reads manifests, each at its place (a
/// misspelled name with the one it was likely meant to be), whatever the
/// stage that finds it, and nothing is written.
#[test]
fn every_typo_of_a_manifest_is_reported_in_one_run() {
    let home = Home::new();
    let good = home.write_input("good.yaml", &instance_yaml("alpha"));
    home.ok(&["apply", "--no-wait", good.to_str().unwrap()]);
    let typos = instance_yaml("beta").replace(
        "  agent: shell\n",
        "  agent: shel\n  agnet: codex\n  phase: Paused\n",
    );
    let text = format!("{typos}---\n{}", instance_yaml("../gamma"));
    let file = home.write_input("typos.yaml", &text);
    let file = file.to_str().unwrap();
    let expected = [
        "typos.yaml:8:3: field `spec.agnet`: unknown field `agnet`",
        "typos.yaml:9:10: field `spec.phase`: unknown variant `Paused`",
        "typos.yaml:15:9: field `metadata.name`: invalid name \"../gamma\"",
        // The closest expected name, for a typo.
        "sidecars, ports; did you mean `agent`?",
        // What only the store can say, in the same run.
        "instance/beta: no agent is named \"shel\"; did you mean \"shell\"?",
    ];
    let before = home.snapshot();
    for args in [
        &["apply", "--no-wait", "-f", file][..],
        &["apply", "--dry-run", "-f", file],
        &["apply", "--prune", "-f", file],
        &["diff", "-f", file],
    ] {
        let out = home.jackin(args);
        assert!(!out.status.success(), "{args:?} succeeded");
        let stderr = String::from_utf8_lossy(&out.stderr);
        for error in expected {
            assert!(
                stderr.contains(error),
                "{args:?}: no {error:?} in:\n{stderr}"
            );
        }
        home.assert_unchanged(&before, &format!("{args:?}"));
    }
}

#[test]
fn dry_run_writes_nothing() {
    let home = Home::new();
    let input = home.write_input("a.yaml", &instance_yaml("alpha"));
    let before = home.snapshot();
    // The outcome, then the plan the loop would carry out.
    let out = home.ok(&["apply", "--no-wait", "--dry-run", input.to_str().unwrap()]);
    assert!(
        out.starts_with(
            "instance/alpha created (dry run)\n\
             instance/alpha (new) to Running would (dry run):\n\
             to Running: Running as the spec asks; a first launch: the recipe is pinned\n\
             \x20 - setting the phase to Launching\n\
             \x20 - pinning the launch recipe\n"
        ),
        "{out}"
    );
    home.assert_unchanged(&before, "apply --dry-run");
    home.ok(&["apply", "--no-wait", input.to_str().unwrap()]);
    let before = home.snapshot();
    let out = home.ok(&["delete", "alpha", "--dry-run"]);
    assert!(out.contains("(dry run)"), "{out}");
    home.assert_unchanged(&before, "delete --dry-run");
}

#[test]
fn eight_concurrent_applies_leave_eight_rows() {
    let home = Home::new();
    let children: Vec<_> = (0..8)
        .map(|i| {
            let path = home.write_input(&format!("i{i}.yaml"), &instance_yaml(&format!("par-{i}")));
            home.command(&["apply", "--no-wait", path.to_str().unwrap()])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for child in children {
        let out = child.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(home.path().join("data/instances.json")).unwrap())
            .unwrap();
    let names: Vec<&str> = index["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| row["name"].as_str().unwrap())
        .collect();
    let expected: Vec<String> = (0..8).map(|i| format!("par-{i}")).collect();
    assert_eq!(names, expected);
}

fn applied_home(names: &[&str]) -> Home {
    let home = Home::new();
    for name in names {
        let path = home.write_input(&format!("{name}.yaml"), &instance_yaml(name));
        home.ok(&["apply", "--no-wait", path.to_str().unwrap()]);
    }
    home
}

fn listed_names(home: &Home) -> Vec<String> {
    let list: serde_json::Value = serde_json::from_str(&home.ok(&["get", "-o", "json"])).unwrap();
    list["items"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn a_deleted_index_is_rebuilt_from_the_units() {
    let home = applied_home(&["alpha", "beta"]);
    let index = home.path().join("data/instances.json");
    let original = std::fs::read(&index).unwrap();
    std::fs::remove_file(&index).unwrap();

    let out = home.jackin(&["get", "-o", "json"]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("rebuilt it from 2 unit(s)"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(listed_names(&home), ["alpha", "beta"]);
    // Rebuilt as it was, but for the records of the documents applied,
    // which only the apply knew: without them the next apply reads every
    // document once.
    // When each row last changed is taken from its object's last write.
    let mut expected: serde_json::Value = serde_json::from_slice(&original).unwrap();
    for row in expected["instances"].as_array_mut().unwrap() {
        assert!(row.as_object_mut().unwrap().remove("applied").is_some());
        assert!(row.as_object_mut().unwrap().remove("updatedAt").is_some());
    }
    let mut rebuilt: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&index).unwrap()).unwrap();
    for row in rebuilt["instances"].as_array_mut().unwrap() {
        assert!(row.as_object_mut().unwrap().remove("updatedAt").is_some());
    }
    assert_eq!(rebuilt, expected);
}

/// Each row's `updatedAt` in the index file, by name.
fn updated_at(home: &Home) -> std::collections::BTreeMap<String, serde_json::Value> {
    let index = std::fs::read(home.path().join("data/instances.json")).unwrap();
    let index: serde_json::Value = serde_json::from_slice(&index).unwrap();
    index["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["name"].as_str().unwrap().to_owned(),
                row["updatedAt"].clone(),
            )
        })
        .collect()
}

/// SK-S1: an index row says when it last changed. A change to one
/// instance moves its row's `updatedAt` (and `describe` shows it), the
/// other's stays; an index written before rows had one still loads, and
/// the rows gain one at their next change.
#[test]
fn a_change_moves_its_rows_updated_at_and_an_older_index_loads() {
    let home = applied_home(&["one", "two"]);
    let before = updated_at(&home);
    assert!(before.values().all(|at| at.is_string()), "{before:?}");

    let changed = instance_yaml("one").replace("metadata:\n", "metadata:\n  labels: {team: a}\n");
    home.record("one", &changed);
    let after = updated_at(&home);
    assert_ne!(after["one"], before["one"]);
    assert_eq!(after["two"], before["two"]);
    let at = after["one"].as_str().unwrap();
    let describe = home.ok(&["describe", "one"]);
    assert!(
        describe.contains(&format!("Updated:          {at} (")),
        "{describe}"
    );

    // As an older jackin wrote it: no `updatedAt` in any row.
    let path = home.path().join("data/instances.json");
    let mut index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    for row in index["instances"].as_array_mut().unwrap() {
        row.as_object_mut().unwrap().remove("updatedAt");
    }
    std::fs::write(&path, serde_json::to_vec_pretty(&index).unwrap()).unwrap();
    assert_eq!(listed_names(&home), ["one", "two"]);
    assert!(!home.ok(&["describe", "two"]).contains("Updated:"));
    home.record(
        "two",
        &instance_yaml("two").replace("metadata:\n", "metadata:\n  labels: {team: b}\n"),
    );
    let again = updated_at(&home);
    assert!(again["two"].is_string(), "{again:?}");
    assert!(again["one"].is_null(), "{again:?}");
}

#[test]
fn a_corrupt_index_is_kept_aside_and_rebuilt() {
    let home = applied_home(&["alpha", "beta"]);
    let data = home.path().join("data");
    std::fs::write(data.join("instances.json"), b"{\"version\": 1, \"instan").unwrap();

    let out = home.jackin(&["get"]);
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("unreadable"));
    assert_eq!(listed_names(&home), ["alpha", "beta"]);

    let kept: Vec<_> = std::fs::read_dir(&data)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.starts_with("instances.json.corrupt-"))
        .collect();
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(
        std::fs::read(data.join(&kept[0])).unwrap(),
        b"{\"version\": 1, \"instan"
    );
}

#[test]
fn usage_errors_exit_2_and_unknown_names_exit_1() {
    let home = Home::new();
    assert_eq!(
        home.jackin(&["set-phase", "x", "paused"]).status.code(),
        Some(2)
    );
    assert_eq!(home.jackin(&["frobnicate"]).status.code(), Some(2));
    let stderr = home.fails(&["describe", "nobody"]);
    assert!(stderr.contains("instance \"nobody\" not found"), "{stderr}");
    let stderr = home.fails(&["describe", "../etc"]);
    assert!(stderr.contains("invalid name"), "{stderr}");
}

#[test]
fn completions_are_generated() {
    let home = Home::new();
    let script = home.ok(&["completions", "bash"]);
    for word in [
        "set-phase",
        "exec",
        "logs",
        "--selector",
        "--watch",
        "--filename",
        "--concurrency",
        "--interactive",
        "--tty",
        "--follow",
        "--tail",
    ] {
        assert!(script.contains(word), "{word} is not completed");
    }
}

#[test]
fn absurd_durations_are_usage_errors_that_change_nothing() {
    let home = Home::new();
    home.record("steady", &instance_yaml("steady"));
    let before = home.snapshot();
    for args in [
        &[
            "set-phase",
            "steady",
            "kept",
            "--timeout",
            "18446744073709551615",
        ][..],
        &["set-phase", "steady", "kept", "--timeout", "0s"],
        &["controller", "--resync", "0s"],
        &["controller", "--sweep", "100000h"],
        &["controller", "--concurrency", "0"],
    ] {
        let out = home.jackin(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert!(stderr.contains("expected"), "{args:?}: {stderr}");
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
    }
    home.assert_unchanged(&before, "the home");
    assert_eq!(home.object("steady")["spec"]["phase"], "Running");
}

#[test]
fn a_stream_of_800000_empty_documents_is_read_in_one_pass() {
    let home = Home::new();
    let path = home.write_input("empty.yaml", &"---\n".repeat(800_000));
    // The bound catches a quadratic split (it took 44 s to minutes, against
    // a fraction of a second now); it is not a speed figure, which the
    // benchmark script reports. `api::manifest` proves linearity without a
    // clock.
    let out = home.within(
        std::time::Duration::from_secs(10),
        &["apply", path.to_str().unwrap()],
    );
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("no objects found"), "{stderr}");
}

#[test]
fn a_store_refusal_in_a_later_document_stores_nothing() {
    let home = Home::new();
    home.record("first", &instance_yaml("first"));
    let uid = home.object("first")["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned();
    let before = home.snapshot();
    // A new instance, then the stored one with a uid that is not its own.
    let stream = format!(
        "{}---\n{}",
        instance_yaml("second"),
        instance_yaml("first").replace(
            "  name: first\n",
            &format!("  name: first\n  uid: not-{uid}\n")
        )
    );
    let path = home.write_input("mixed.yaml", &stream);
    let stderr = home.fails(&["apply", "--no-wait", path.to_str().unwrap()]);
    assert!(
        stderr.contains("does not match the stored object"),
        "{stderr}"
    );
    home.assert_unchanged(&before, "the home");
    assert!(!home.jackin(&["get", "second"]).status.success());
}

#[test]
fn a_reader_that_stops_early_is_a_clean_exit() {
    let home = Home::new();
    // More output than a pipe holds, so jackin is still writing when the
    // reader goes away.
    let stream: String = (0..600)
        .map(|i| format!("{}---\n", instance_yaml(&format!("many-{i}"))))
        .collect();
    home.record("many", &stream);
    for format in ["yaml", "json", "wide"] {
        let mut child = home
            .command(&["get", "-o", format])
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let mut first = [0u8; 16];
        std::io::Read::read_exact(child.stdout.as_mut().unwrap(), &mut first).unwrap();
        drop(child.stdout.take()); // `| head -c 16`
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "-o {format}: {} {stderr}", out.status);
        assert!(stderr.is_empty(), "-o {format}: {stderr}");
    }
}
