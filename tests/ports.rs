//! Ports of their own (issue 56): each session's container publishes the
//! ports its spec (or workspace) names on host ports of its own from the
//! home's pool, kept across restores and keeps, freed at the purge.

use std::time::Duration;

use support::{Home, docker, ensure_busybox, eventually, http_get, instance_yaml_with};

/// An instance of the workspace `ws` whose "agent" serves, on port 3000, a
/// page that names it (busybox's `httpd`).
fn web_instance(name: &str) -> String {
    let serve = format!(
        "mkdir -p /tmp/www && echo served-by-{name} > /tmp/www/index.html && \
         exec httpd -f -p 3000 -h /tmp/www"
    );
    instance_yaml_with(
        name,
        &format!(
            "  workspace: ws\n  command: [sh, -c, {}]\n",
            serde_json::to_string(&serve).unwrap()
        ),
    )
}

/// The host port instance `name` was given for `web`.
fn web_port(home: &Home, name: &str) -> u16 {
    let ports = home.object(name)["status"]["ports"].clone();
    assert_eq!(ports[0]["name"], "web", "{ports}");
    assert_eq!(ports[0]["port"], 3000, "{ports}");
    assert_eq!(ports[0]["address"], "127.0.0.1", "{ports}");
    u16::try_from(ports[0]["hostPort"].as_u64().expect("a host port")).unwrap()
}

/// Waits until the page on `host_port` names `name`.
fn serves(host_port: u16, name: &str) {
    let addr = format!("127.0.0.1:{host_port}");
    eventually(
        Duration::from_secs(60),
        &format!("{name}'s page on {addr}"),
        || {
            std::net::TcpStream::connect(&addr).is_ok()
                && http_get(&addr, "/")
                    .1
                    .contains(&format!("served-by-{name}"))
        },
    );
}

/// Two instances asking for port 3000 (their workspace's `web`) get host
/// ports of their own, each answering with its own page; `jackin port`,
/// `get -o wide` and `describe` say where. A container removed behind
/// jackin's back comes back on the same host port, as does a kept and
/// resumed session; the purge frees the port.
#[test]
fn two_sessions_serve_port_3000_on_host_ports_of_their_own() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "ws",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: ws}\nspec:\n  \
         ports: [{name: web, port: 3000}]\n",
    );
    home.apply("a", &web_instance("a"));
    home.apply("b", &web_instance("b"));
    let (pa, pb) = (web_port(&home, "a"), web_port(&home, "b"));
    assert_ne!(pa, pb, "one host port each");
    serves(pa, "a");
    serves(pb, "b");
    assert_eq!(
        home.ok(&["port", "a", "web"]).trim(),
        format!("http://127.0.0.1:{pa}")
    );
    assert_eq!(
        home.ok(&["port", "b"]).trim(),
        format!("web http://127.0.0.1:{pb}")
    );
    let wide = home.ok(&["get", "-o", "wide"]);
    assert!(wide.contains(&format!("web=127.0.0.1:{pa}")), "{wide}");
    let described = home.ok(&["describe", "a"]);
    assert!(
        described.contains(&format!("Ports:            web=127.0.0.1:{pa}")),
        "{described}"
    );

    // A restore (tier 2) publishes the same host port.
    let old = home.container("a");
    docker(&["rm", "-f", &old]);
    home.one_pass();
    assert_eq!(home.object("a")["status"]["restore"]["tier"], 2);
    assert_eq!(web_port(&home, "a"), pa);
    serves(pa, "a");
    // So does a keep and a resume.
    home.ok(&["set-phase", "a", "kept"]);
    home.ok(&["set-phase", "a", "running"]);
    assert_eq!(web_port(&home, "a"), pa);
    serves(pa, "a");

    // The purge frees it: its ledger entry goes, b's stays.
    let ledger = home.path().join("ports");
    assert!(ledger.join(pa.to_string()).exists());
    home.ok(&["delete", "a", "--force"]);
    assert!(!ledger.join(pa.to_string()).exists(), "freed at the purge");
    assert!(ledger.join(pb.to_string()).exists());
    let gone = home.fails(&["port", "a"]);
    assert!(
        gone.contains("not found") || gone.contains("no instance"),
        "{gone}"
    );
}

/// A port asked twice, or an address that is not one, is refused at
/// apply with the field and what was expected; nothing is written.
#[test]
fn bad_ports_are_refused_at_apply_naming_the_field() {
    let home = Home::new();
    let yaml = instance_yaml_with(
        "bad",
        "  ports: [{name: web, port: 3000}, {name: web, port: 3001, address: localhost}]\n",
    );
    let path = home.write_input("bad.yaml", &yaml);
    let said = home.fails(&["apply", path.to_str().unwrap()]);
    assert!(said.contains("spec.ports[1].name"), "{said}");
    assert!(said.contains("comes twice"), "{said}");
    assert!(said.contains("spec.ports[1].address"), "{said}");
    assert!(said.contains("expected an IP address"), "{said}");
    assert!(
        !home.jackin(&["get", "bad"]).status.success(),
        "nothing written"
    );
}
