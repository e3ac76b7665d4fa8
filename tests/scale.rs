//! Many instances on one engine: jackin's own address pool, parallel
//! converge, and a pool that runs out.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use support::{Home, docker, ensure_busybox, instance_yaml_with};

/// The subnets of the networks a home created, by network name.
fn subnets_of(home: &Home) -> Vec<(String, String)> {
    let filter = format!("label=jackin.dev/home={}", home.home_id());
    let names = docker(&["network", "ls", "-q", "--filter", &filter]);
    names
        .split_whitespace()
        .map(|id| {
            let line = docker(&[
                "network",
                "inspect",
                "-f",
                "{{.Name}} {{range .IPAM.Config}}{{.Subnet}}{{end}}",
                id,
            ]);
            let (name, subnet) = line.split_once(' ').unwrap_or((&line, ""));
            (name.to_owned(), subnet.to_owned())
        })
        .collect()
}

fn many(prefix: &str, count: usize) -> String {
    (0..count)
        .map(|i| instance_yaml_with(&format!("{prefix}{i}"), "  command: [sleep, \"3600\"]\n"))
        .collect::<Vec<_>>()
        .join("---\n")
}

#[test]
fn forty_instances_run_at_once_beyond_the_engines_default_pools() {
    ensure_busybox();
    let home = Home::new();
    // A stock engine's default pools hold 31 bridge networks in all.
    let out = home.apply("fleet", &many("fleet-", 40));
    assert_eq!(out.matches(" Running\n").count(), 40, "{out}");
    let filter = format!("label=jackin.dev/home={}", home.home_id());
    let running = docker(&["ps", "-q", "--filter", &filter]);
    assert_eq!(running.split_whitespace().count(), 40);

    let subnets = subnets_of(&home);
    assert_eq!(subnets.len(), 40, "{subnets:?}");
    let distinct: HashSet<&str> = subnets.iter().map(|(_, s)| s.as_str()).collect();
    assert_eq!(distinct.len(), 40, "every network has a subnet of its own");
    for (name, subnet) in &subnets {
        assert!(
            subnet.starts_with("10.213.") && subnet.ends_with("/28"),
            "{name} is on {subnet}, not a /28 of jackin's default pool"
        );
    }
}

#[test]
fn an_exhausted_pool_fails_at_once_and_says_how_to_widen_it() {
    ensure_busybox();
    let home = Home::new();
    // Two /30 subnets, in a range no other test uses (this process's own,
    // so two runs sharing the engine do not meet either).
    let third = std::process::id() % 250;
    let base = format!("10.214.{third}.0/29");
    std::fs::write(
        home.path().join("config.yaml"),
        format!("addressPool:\n  base: {base}\n  size: 30\n"),
    )
    .unwrap();
    let file = home.write_input("three.yaml", &many("tiny-", 3));
    let started = Instant::now();
    let out = home.within(
        Duration::from_secs(240),
        &["apply", "--timeout", "5m", file.to_str().unwrap()],
    );
    let waited = started.elapsed();
    assert_eq!(out.status.code(), Some(1));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert_eq!(stdout.matches(" Running\n").count(), 2, "{stdout}{stderr}");
    assert_eq!(
        stderr.matches("error: instance/tiny-").count(),
        1,
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("address pool {base}"))
            && stderr.contains("2 of its 2")
            && stderr.contains("config.yaml"),
        "{stderr}"
    );
    // A permanent failure: not retried until the five minutes run out.
    assert!(waited < Duration::from_secs(120), "took {waited:?}");
    let failed: Vec<String> = (0..3)
        .map(|i| format!("tiny-{i}"))
        .filter(|name| home.object(name)["status"]["phase"] == "Failed")
        .collect();
    assert_eq!(failed.len(), 1, "{failed:?}");
    let ready = support::condition(&home.object(&failed[0]), "Ready")
        .unwrap()
        .clone();
    assert_eq!(ready["reason"], "AddressPoolExhausted");

    // Purging one frees its subnet for the failed one.
    let running = (0..3)
        .map(|i| format!("tiny-{i}"))
        .find(|name| *name != failed[0])
        .unwrap();
    docker(&["rm", "-f", &home.container(&running)]);
    home.ok(&["set-phase", &running, "purged"]);
    let out = home.ok(&["set-phase", &failed[0], "running"]);
    assert!(out.contains(" Running"), "{out}");
}

#[test]
fn a_bad_address_pool_stops_apply_before_anything_is_written() {
    let home = Home::new();
    std::fs::write(
        home.path().join("config.yaml"),
        "addressPool:\n  base: 10.214.0.0/16\n  size: 31\n",
    )
    .unwrap();
    let file = home.write_input("one.yaml", &many("bad-pool-", 1));
    let before = home.snapshot();
    let stderr = home.fails(&["apply", file.to_str().unwrap()]);
    assert!(
        stderr.contains("config.yaml") && stderr.contains("addressPool") && stderr.contains("/31"),
        "{stderr}"
    );
    home.assert_unchanged(&before, "an apply refused for a bad address pool");
}
