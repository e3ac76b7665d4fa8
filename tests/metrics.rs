//! `jackin controller --metrics-addr` against the real engine: `/metrics`
//! is Prometheus text whose instance gauges agree with `jackin get`, a
//! reconcile error counts under its reason, and `/readyz` says not ready
//! while an engine in use does not answer.

use std::collections::{BTreeMap, BTreeSet};

use support::{Controller, Home, ensure_busybox, instance_yaml_with};

/// Starts a controller serving its metrics on a port of the system's
/// choosing; returns it and the address it serves.
fn start(home: &Home) -> (Controller, String) {
    let controller = Controller::start(home, &["--metrics-addr", "127.0.0.1:0"]);
    let addr = controller.metrics_addr();
    (controller, addr)
}

fn get(addr: &str, path: &str) -> (u16, String) {
    support::http_get(addr, path)
}

/// One sample: the metric's name, its labels, its value.
type Sample = (String, BTreeMap<String, String>, f64);

/// Parses the Prometheus text format (0.0.4) strictly: every line is a
/// `# HELP` or `# TYPE` comment or a sample, every sample belongs to a
/// family declared with `# TYPE` before it (a histogram's by its
/// `_bucket`, `_sum` and `_count`), and every value is a number.
fn parse(text: &str) -> Vec<Sample> {
    let mut typed: BTreeMap<String, String> = BTreeMap::new();
    let mut samples = Vec::new();
    for line in text.lines() {
        if line.is_empty() {
            continue;
        }
        if let Some(comment) = line.strip_prefix("# ") {
            let parts: Vec<&str> = comment.splitn(3, ' ').collect();
            match parts.as_slice() {
                ["TYPE", name, kind] => {
                    assert!(
                        ["counter", "gauge", "histogram", "summary", "untyped"].contains(kind),
                        "unknown type: {line}"
                    );
                    assert!(
                        typed
                            .insert((*name).to_owned(), (*kind).to_owned())
                            .is_none(),
                        "{name} typed twice"
                    );
                }
                ["HELP", _, _] => {}
                _ => panic!("not a HELP or TYPE line: {line}"),
            }
            continue;
        }
        let (series, value) = line.rsplit_once(' ').expect("a sample has a value");
        let value: f64 = match value {
            "+Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            value => value
                .parse()
                .unwrap_or_else(|_| panic!("not a number: {line}")),
        };
        let (name, labels) = match series.split_once('{') {
            Some((name, rest)) => {
                let inner = rest.strip_suffix('}').expect("labels close");
                let mut labels = BTreeMap::new();
                for pair in inner.split("\",").filter(|p| !p.is_empty()) {
                    let (key, value) = pair.split_once("=\"").expect("key=\"value\"");
                    labels.insert(key.to_owned(), value.trim_end_matches('"').to_owned());
                }
                (name.to_owned(), labels)
            }
            None => (series.to_owned(), BTreeMap::new()),
        };
        assert!(
            name.chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == ':'),
            "bad name: {line}"
        );
        let family = ["_bucket", "_sum", "_count"]
            .iter()
            .filter_map(|suffix| name.strip_suffix(suffix))
            .find(|base| typed.get(*base).is_some_and(|kind| kind == "histogram"))
            .unwrap_or(&name);
        assert!(typed.contains_key(family), "{name} has no # TYPE: {line}");
        samples.push((name, labels, value));
    }
    samples
}

/// The value of `name` with `label=value`, if there is such a sample.
fn value(samples: &[Sample], name: &str, label: (&str, &str)) -> Option<f64> {
    samples
        .iter()
        .find(|(n, labels, _)| {
            n == name && labels.get(label.0).map(String::as_str) == Some(label.1)
        })
        .map(|(_, _, v)| *v)
}

/// The phases `jackin get` shows, counted.
fn phases_of_get(home: &Home) -> BTreeMap<String, f64> {
    let list: serde_json::Value =
        serde_json::from_str(&home.ok(&["get", "instances", "-o", "json"])).unwrap();
    let mut counts = BTreeMap::new();
    for item in list["items"].as_array().unwrap() {
        let phase = item["status"]["phase"].as_str().unwrap_or("Pending");
        *counts.entry(phase.to_owned()).or_default() += 1.0;
    }
    counts
}

fn sleeper(name: &str, extra: &str) -> String {
    instance_yaml_with(name, &format!("  command: [sleep, \"3600\"]\n{extra}"))
}

#[test]
fn metrics_are_prometheus_text_that_agrees_with_get_and_counts_errors() {
    ensure_busybox();
    let home = Home::new();
    home.apply("one", &sleeper("one", ""));
    home.apply("two", &sleeper("two", ""));
    home.ok(&["set-phase", "two", "kept"]);
    let (controller, addr) = start(&home);

    controller.eventually("ready after the first pass", || {
        get(&addr, "/readyz").0 == 200
    });
    assert_eq!(get(&addr, "/healthz").0, 200);
    let (status, text) = get(&addr, "/metrics");
    assert_eq!(status, 200);
    let samples = parse(&text);
    for family in [
        "jackin_instances",
        "jackin_queue_depth",
        "jackin_first_pass_done",
        "jackin_pass_duration_seconds_count",
    ] {
        assert!(
            samples.iter().any(|(n, _, _)| n == family),
            "{family}:\n{text}"
        );
    }
    assert_eq!(
        value(&samples, "jackin_engine_up", ("engine", "default")),
        Some(1.0),
        "{text}"
    );
    // The controller's gauges say what `get` says, phase by phase.
    controller.eventually("the phase gauges to agree with get", || {
        let samples = parse(&get(&addr, "/metrics").1);
        let gauges: BTreeMap<String, f64> = samples
            .iter()
            .filter(|(n, _, v)| n == "jackin_instances" && *v > 0.0)
            .map(|(_, labels, v)| (labels["phase"].clone(), *v))
            .collect();
        let shown = phases_of_get(&home);
        assert_eq!(shown.values().sum::<f64>(), 2.0);
        // Attention as `jackin top` decides it: the kept one, and the
        // running one, which never printed and asks nothing: idle.
        let attention = |a| value(&samples, "jackin_instances_by_attention", ("attention", a));
        gauges == shown && attention("kept") == Some(1.0) && attention("idle") == Some(1.0)
    });
    let reason = ("reason", "SecretUnavailable");
    assert_eq!(
        value(&samples, "jackin_reconcile_errors_total", reason),
        None,
        "{text}"
    );

    // An instance whose secret is not there fails its reconcile: counted.
    let spec = "  env: [{name: TOKEN, valueFrom: {hostEnv: JACKIN_TEST_SURELY_UNSET}}]\n";
    home.record("failing", &sleeper("failing", spec));
    controller.eventually("the reconcile error to be counted", || {
        let samples = parse(&get(&addr, "/metrics").1);
        value(&samples, "jackin_reconcile_errors_total", reason).is_some_and(|v| v >= 1.0)
            && value(&samples, "jackin_reconciles_total", ("result", "failed"))
                .is_some_and(|v| v >= 1.0)
    });
    let samples = parse(&get(&addr, "/metrics").1);
    let steps: BTreeSet<&str> = samples
        .iter()
        .filter(|(n, _, _)| n == "jackin_step_duration_seconds_count")
        .map(|(_, labels, _)| labels["step"].as_str())
        .collect();
    assert!(steps.contains("create-container"), "{steps:?}");
    assert_eq!(get(&addr, "/nothing").0, 404);
}

#[test]
fn not_ready_while_an_engine_in_use_does_not_answer() {
    ensure_busybox();
    let home = Home::new();
    let nowhere = format!("unix://{}/no-engine.sock", home.path().display());
    home.apply("here", &sleeper("here", ""));
    home.record(
        "there",
        &sleeper("there", &format!("  engine: {nowhere}\n")),
    );
    let (controller, addr) = start(&home);

    controller.eventually("the engine that does not answer to be seen", || {
        let samples = parse(&get(&addr, "/metrics").1);
        value(&samples, "jackin_engine_up", ("engine", &nowhere)) == Some(0.0)
            && samples
                .iter()
                .any(|(n, _, v)| n == "jackin_first_pass_done" && *v == 1.0)
    });
    let (status, why) = get(&addr, "/readyz");
    assert_eq!(status, 503, "{why}");
    assert!(why.contains(&nowhere), "{why}");
    // Alive all the same.
    assert_eq!(get(&addr, "/healthz").0, 200);

    // Once no instance uses it, the controller is ready.
    home.ok(&["delete", "there", "--timeout", "60s"]);
    controller.eventually("ready without the engine", || {
        get(&addr, "/readyz").0 == 200
    });
}

#[test]
fn a_synced_directory_shows_the_revision_it_applied() {
    let home = Home::new();
    let policy = tempfile::tempdir().unwrap();
    let repo = support::host_repo(policy.path());
    let workspace = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata:\n  \
                     name: synced\nspec: {}\n";
    std::fs::write(repo.join("synced.yaml"), workspace).unwrap();
    support::git(&repo, &["add", "."]);
    support::git(&repo, &["commit", "--quiet", "-m", "a workspace"]);
    let head = support::git(&repo, &["rev-parse", "HEAD"]);
    let controller = Controller::start(
        &home,
        &[
            "--metrics-addr",
            "127.0.0.1:0",
            "--sync",
            repo.to_str().unwrap(),
        ],
    );
    let addr = controller.metrics_addr();
    let source = repo.display().to_string();
    controller.eventually("the source's revision", || {
        let samples = parse(&get(&addr, "/metrics").1);
        samples.iter().any(|(n, labels, v)| {
            n == "jackin_source_info"
                && labels.get("source") == Some(&source)
                && labels.get("revision") == Some(&head)
                && *v == 1.0
        })
    });
    // A run log has the sync, by revision.
    let runs = home.path().join("data/diagnostics/runs");
    let logs: Vec<String> = std::fs::read_dir(&runs)
        .unwrap()
        .map(|e| std::fs::read_to_string(e.unwrap().path()).unwrap())
        .collect();
    assert!(
        logs.iter()
            .any(|log| log.contains("\"synced\"") && log.contains(&head)),
        "{logs:?}"
    );
}
