//! Names under `jackin.dev/` are jackin's: an operator's manifest that sets
//! one jackin keeps for itself is refused with its place, whichever command
//! reads it, and nothing is written. `get -o yaml` never prints such a name,
//! so its output applies back; an object applied by hand is never pruned.

use std::path::Path;

use support::{Home, busybox_image, ensure_busybox, instance_yaml, instance_yaml_with};

/// An instance whose metadata holds `meta_lines` (each indented two spaces)
/// after its name.
fn instance_with_meta(name: &str, meta_lines: &str) -> String {
    instance_yaml(name).replace(
        &format!("  name: {name}\n"),
        &format!("  name: {name}\n{meta_lines}"),
    )
}

fn workspace_with_meta(name: &str, meta_lines: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata:\n  name: {name}\n{meta_lines}spec: {{exitPolicy: keep}}\n"
    )
}

fn agent_with_meta(name: &str, meta_lines: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata:\n  name: {name}\n{meta_lines}spec:\n  launch: [sh]\n"
    )
}

/// Asserts that `err` has a line `error: FILE:LINE:COL: field `FIELD`: …`
/// saying the name is reserved.
fn assert_refused_at(err: &str, file: &Path, line: usize, field: &str) {
    let start = format!("error: {}:{line}:", file.display());
    let found = err.lines().any(|l| {
        l.starts_with(&start) && l.contains(&format!("field `{field}`")) && l.contains("reserved")
    });
    assert!(found, "no refusal of {field} at line {line} in:\n{err}");
}

/// Nothing of the home's state was written: no unit, no index, no stored
/// workspace or agent.
fn assert_nothing_written(home: &Home) {
    for dir in ["data", "workspaces", "agents"] {
        assert!(
            !home.path().join(dir).exists(),
            "{dir}/ was written for refused input"
        );
    }
}

#[test]
fn a_manifest_setting_the_source_label_is_refused_with_its_place_by_every_command_that_reads_it() {
    let home = Home::new();
    let text = instance_with_meta(
        "owned",
        "  labels:\n    team: a\n    jackin.dev/source: src-000000000000\n",
    );
    let dir = home.path().join("input/policy");
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("owned.yaml");
    std::fs::write(&file, &text).unwrap();
    let path = file.to_str().unwrap();
    let dir_arg = dir.to_str().unwrap();
    // The label sits on line 7, its key at column 5.
    for args in [
        vec!["apply", "--no-wait", "-f", path],
        vec!["apply", "--prune", "--no-wait", "-f", dir_arg],
        vec!["apply", "--dry-run", "-f", path],
        vec!["set-phase", "-f", path, "kept", "--no-wait"],
        vec!["delete", "-f", path, "--no-wait"],
    ] {
        let err = home.fails(&args);
        assert_refused_at(&err, &file, 7, "metadata.labels.jackin.dev/source");
        assert!(
            err.contains("jackin sets it"),
            "{args:?} does not say who sets it:\n{err}"
        );
        assert_nothing_written(&home);
    }
    let out = home.jackin(&["diff", "-f", path]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "diff refuses with its error status"
    );
    assert_refused_at(
        &String::from_utf8_lossy(&out.stderr),
        &file,
        7,
        "metadata.labels.jackin.dev/source",
    );
    // The controller's sync applies nothing and says why.
    let out = home.jackin(&["controller", "--once", "--sync", dir_arg]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains(&format!("{}:7:", file.display())) && err.contains("reserved"),
        "{err}"
    );
    assert!(!home.path().join("data").exists(), "the sync wrote a unit");
    assert!(!home.jackin(&["get", "owned"]).status.success());
}

#[test]
fn other_reserved_labels_and_annotations_are_refused_for_every_kind_and_the_operators_annotations_apply()
 {
    let home = Home::new();
    let cases = [
        (
            "instance.yaml",
            instance_with_meta("inst", "  labels:\n    jackin.dev/managed: \"true\"\n"),
            "metadata.labels.jackin.dev/managed",
        ),
        (
            "workspace.yaml",
            workspace_with_meta("ws", "  annotations:\n    jackin.dev/owner: me\n"),
            "metadata.annotations.jackin.dev/owner",
        ),
        (
            "agent.yaml",
            agent_with_meta("ag", "  labels:\n    sub.jackin.dev/tier: gold\n"),
            "metadata.labels.sub.jackin.dev/tier",
        ),
    ];
    for (file, text, field) in cases {
        let path = home.write_input(file, &text);
        let err = home.fails(&["apply", "--no-wait", "-f", path.to_str().unwrap()]);
        assert_refused_at(&err, &path, 6, field);
        assert_nothing_written(&home);
    }

    // The annotations an operator (or a command for one) sets still apply.
    let text = instance_with_meta(
        "allowed",
        "  labels:\n    example.com/team: a\n  annotations:\n    \
         jackin.dev/exit-policy: keep\n    jackin.dev/resume: \"2026-11-26T10:00:00Z\"\n    \
         jackin.dev/acknowledge-discard: none\n    notjackin.dev/free: yes\n",
    );
    let out = home.record("allowed", &text);
    assert_eq!(out, "instance/allowed created\n");
    let obj = home.object("allowed");
    assert_eq!(
        obj["metadata"]["annotations"]["jackin.dev/exit-policy"],
        "keep"
    );
    assert_eq!(obj["metadata"]["labels"]["example.com/team"], "a");
}

/// A policy directory: `files` written under a fresh temporary directory.
fn policy_dir(files: &[(&str, String)]) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("jackin-policy-")
        .tempdir()
        .unwrap();
    for (name, text) in files {
        let path = dir.path().join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    dir
}

#[test]
fn get_output_of_a_source_applied_object_applies_back() {
    let home = Home::new();
    let ws = workspace_with_meta("team", "  labels:\n    tier: gold\n");
    let agent = agent_with_meta("helper", "");
    let dir = policy_dir(&[("ws.yaml", ws), ("agent.yaml", agent)]);
    let out = home.ok(&["apply", "--prune", "-f", dir.path().to_str().unwrap()]);
    assert!(out.contains("workspace/team created"), "{out}");

    // jackin still knows which source applied it, and shows it.
    let sources: serde_json::Value =
        serde_json::from_str(&home.ok(&["get", "sources", "-o", "json"])).unwrap();
    let id = sources["items"][0]["id"].as_str().unwrap().to_owned();
    let described = home.ok(&["describe", "workspace", "team"]);
    assert!(described.contains(&id), "{described}");

    for (kind, name) in [("workspaces", "team"), ("agents", "helper")] {
        for format in ["yaml", "json"] {
            let printed = home.ok(&["get", kind, name, "-o", format]);
            assert!(
                !printed.contains("jackin.dev/source"),
                "get -o {format} prints jackin's own label:\n{printed}"
            );
            let file = home.write_input(&format!("{name}.{format}"), &printed);
            home.ok(&["apply", "--no-wait", "-f", file.to_str().unwrap()]);
        }
    }
    let printed = home.ok(&["get", "workspaces", "team", "-o", "yaml"]);
    assert!(printed.contains("tier: gold"), "{printed}");
}

#[test]
fn get_output_of_a_source_applied_instance_applies_back_and_its_source_still_selects_it() {
    let home = Home::new();
    let dir = policy_dir(&[("one.yaml", instance_yaml("one"))]);
    home.ok(&[
        "apply",
        "--prune",
        "--no-wait",
        "-f",
        dir.path().to_str().unwrap(),
    ]);
    let sources: serde_json::Value =
        serde_json::from_str(&home.ok(&["get", "sources", "-o", "json"])).unwrap();
    let id = sources["items"][0]["id"].as_str().unwrap().to_owned();
    let owned_by_source = || {
        let selector = format!("jackin.dev/source={id}");
        home.ok(&["get", "-l", &selector, "-o", "name"])
    };
    assert_eq!(owned_by_source(), "instance/one\n");

    let printed = home.ok(&["get", "one", "-o", "yaml"]);
    assert!(!printed.contains("jackin.dev/source"), "{printed}");
    let file = home.write_input("one-back.yaml", &printed);
    home.ok(&["apply", "--no-wait", "-f", file.to_str().unwrap()]);
    // Applied by hand, it is no longer the source's.
    assert_eq!(owned_by_source(), "");
}

fn phase(home: &Home, name: &str) -> serde_json::Value {
    home.object(name)["status"]["phase"].clone()
}

#[test]
fn an_object_applied_by_hand_survives_a_prune_of_the_source_that_first_applied_it() {
    ensure_busybox();
    let home = Home::new();
    let g1 = instance_yaml_with("g1", "  workspace: g1ws\n");
    assert!(g1.contains(busybox_image()));
    let dir = policy_dir(&[
        ("instances/g1.yaml", g1),
        ("workspaces/g1ws.yaml", workspace_with_meta("g1ws", "")),
        ("workspaces/anchor.yaml", workspace_with_meta("anchor", "")),
    ]);
    let src = dir.path().to_str().unwrap();
    let out = home.ok(&["apply", "--prune", "-f", src, "--timeout", "60s"]);
    assert!(out.contains("instance/g1 created"), "{out}");
    assert_eq!(phase(&home, "g1"), "Running");
    let unit = home.path().join("data").join(home.container("g1"));
    assert!(unit.join("home").is_dir(), "g1 has a home");

    // The operator takes both over by hand, from what `get` printed.
    let yaml = home.ok(&["get", "g1", "-o", "yaml"]);
    let file = home.write_input("g1.yaml", &yaml);
    home.ok(&["apply", "-f", file.to_str().unwrap(), "--timeout", "60s"]);
    let yaml = home.ok(&["get", "workspaces", "g1ws", "-o", "yaml"]);
    let file = home.write_input("g1ws.yaml", &yaml);
    home.ok(&["apply", "--no-wait", "-f", file.to_str().unwrap()]);

    // The source drops them: they are no longer its to prune.
    std::fs::remove_file(dir.path().join("instances/g1.yaml")).unwrap();
    std::fs::remove_file(dir.path().join("workspaces/g1ws.yaml")).unwrap();
    let out = home.ok(&["apply", "--prune", "-f", src, "--timeout", "60s"]);
    assert!(!out.contains("pruned"), "{out}");
    assert_eq!(phase(&home, "g1"), "Running");
    assert!(unit.join("home").is_dir(), "g1's home is gone");
    home.ok(&["get", "workspaces", "g1ws"]);
    // A controller pass leaves them alone too.
    home.ok(&["controller", "--once", "--sync", src]);
    assert_eq!(phase(&home, "g1"), "Running");
    assert!(unit.join("home").is_dir());
    home.ok(&["get", "workspaces", "g1ws"]);
}
