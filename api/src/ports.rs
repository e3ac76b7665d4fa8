//! Ports of the agent's container published on the host: what a spec asks
//! for (`ports: [{name: web, port: 3000}]`), the host port each was given,
//! and the home's pool they come from (`config.yaml`'s `portPool`).
//!
//! Every session's dev server wants port 3000, and two containers cannot
//! both publish it on one host port. So an operator names the container's
//! port, and jackin gives it a host port of the instance's own from the
//! pool: chosen once, kept in the status for every restore, keep and
//! rollout, and freed at the purge.

use std::net::IpAddr;

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Where a port is published when its spec names no address: this host's
/// loopback, reachable from here (or through an SSH tunnel), not from the
/// network.
pub const DEFAULT_ADDRESS: &str = "127.0.0.1";

/// A port of the agent's container, published on the host.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PortSpec {
    /// The port's name (`web`): how `jackin port` and `get -o wide` name
    /// it; an instance's entry replaces its workspace's of the same name.
    pub name: String,
    /// The TCP port the agent's program listens on in the container.
    pub port: u16,
    /// The host address the engine publishes it on; `127.0.0.1` when
    /// omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub address: Option<String>,
}

impl PortSpec {
    /// The host address it is published on.
    pub fn address(&self) -> &str {
        self.address.as_deref().unwrap_or(DEFAULT_ADDRESS)
    }
}

/// A port as published: the host port jackin gave it, kept across every
/// restore of the session.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PublishedPort {
    pub name: String,
    /// The port in the container.
    pub port: u16,
    /// The host address it is published on.
    pub address: String,
    /// The host port it was given from the home's pool.
    pub host_port: u16,
}

impl PublishedPort {
    /// Where the operator reaches it: `127.0.0.1:40013` (an IPv6 address in
    /// brackets).
    pub fn endpoint(&self) -> String {
        match self.address.parse::<IpAddr>() {
            Ok(IpAddr::V6(v6)) => format!("[{v6}]:{}", self.host_port),
            _ => format!("{}:{}", self.address, self.host_port),
        }
    }

    /// Where the operator reaches it when the engine runs on `engine_host`
    /// (another machine, see [`engine_host`]): on every address there,
    /// `HOST:40013`; on one of its own (its loopback), `127.0.0.1:40013@HOST`,
    /// reached from here through an SSH tunnel. On this machine, as
    /// [`PublishedPort::endpoint`].
    pub fn reached(&self, engine_host: Option<&str>) -> String {
        let everywhere = self
            .address
            .parse::<IpAddr>()
            .is_ok_and(|a| a.is_unspecified());
        match engine_host {
            None => self.endpoint(),
            Some(host) if everywhere => format!("{host}:{}", self.host_port),
            Some(host) => format!("{}@{host}", self.endpoint()),
        }
    }

    /// Whether it still publishes what `spec` asks for, so that its host
    /// port is kept.
    pub fn serves(&self, spec: &PortSpec) -> bool {
        self.name == spec.name && self.port == spec.port && self.address == spec.address()
    }
}

/// The machine an engine named by its address runs on, when that is not
/// this one: `tcp://HOST:PORT` and `ssh://[USER@]HOST[:PORT]` give `HOST`;
/// a socket, a loopback address or a docker context name (not resolved
/// here) give none.
pub fn engine_host(engine: Option<&str>) -> Option<&str> {
    let engine = engine?;
    let rest = engine
        .strip_prefix("tcp://")
        .or_else(|| engine.strip_prefix("ssh://"))?;
    let rest = rest.rsplit_once('@').map_or(rest, |(_, r)| r);
    let rest = rest.trim_end_matches('/');
    let host = match rest.strip_prefix('[') {
        Some(v6) => &rest[..v6.find(']')? + 2],
        None => rest.split(':').next()?,
    };
    let here = matches!(host, "" | "localhost" | "127.0.0.1" | "[::1]");
    (!here).then_some(host)
}

/// The host ports published ports are given from (`config.yaml`'s
/// `portPool`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PortPool {
    /// The first host port of the pool.
    pub from: u16,
    /// The last host port of the pool (included).
    pub to: u16,
}

impl Default for PortPool {
    fn default() -> Self {
        Self {
            from: 40000,
            to: 40999,
        }
    }
}

impl PortPool {
    /// Checks the pool: unprivileged ports, `from` not past `to`.
    pub fn check(&self) -> Result<(), String> {
        if self.from < 1024 {
            return Err(format!(
                "portPool.from {} is a privileged port: expected 1024 to 65535",
                self.from
            ));
        }
        if self.to < self.from {
            return Err(format!(
                "portPool.to {} is below portPool.from {}: expected a range such as \
                 {{from: 40000, to: 40999}}",
                self.to, self.from
            ));
        }
        Ok(())
    }

    /// How many host ports it holds.
    pub fn count(&self) -> u32 {
        u32::from(self.to) - u32::from(self.from) + 1
    }

    /// The `i`th host port, `i` taken modulo [`PortPool::count`].
    pub fn nth(&self, i: u32) -> u16 {
        let offset = u16::try_from(i % self.count()).expect("a pool is within u16");
        self.from + offset
    }
}

/// The ports of a workspace and its instance, as one list: the
/// workspace's first, an instance's entry replacing the workspace's of the
/// same name.
pub fn merged(workspace: &[PortSpec], instance: &[PortSpec]) -> Vec<PortSpec> {
    let mut ports: Vec<PortSpec> = Vec::new();
    for port in workspace.iter().chain(instance) {
        match ports.iter_mut().find(|p| p.name == port.name) {
            Some(existing) => *existing = port.clone(),
            None => ports.push(port.clone()),
        }
    }
    ports
}

/// What is wrong with `ports` (at `at`, such as `spec.ports`), each as
/// the field and what was expected: a name that is not a short word or
/// comes twice, port 0, an address that is not an IP address, one
/// container port published twice on one address.
pub fn problems(ports: &[PortSpec], at: &str) -> Vec<(String, String)> {
    let mut problems = Vec::new();
    for (i, port) in ports.iter().enumerate() {
        let here = format!("{at}[{i}]");
        let word = !port.name.is_empty()
            && port.name.len() <= 32
            && port
                .name
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
        if !word {
            problems.push((
                format!("{here}.name"),
                format!(
                    "{:?}: expected 1 to 32 lowercase letters, digits or '-' (such as web)",
                    port.name
                ),
            ));
        }
        if ports[..i].iter().any(|p| p.name == port.name) {
            problems.push((
                format!("{here}.name"),
                format!(
                    "{:?} comes twice: each port needs a name of its own",
                    port.name
                ),
            ));
        }
        if port.port == 0 {
            problems.push((format!("{here}.port"), "0: expected 1 to 65535".into()));
        }
        if let Some(address) = &port.address
            && address.parse::<IpAddr>().is_err()
        {
            problems.push((
                format!("{here}.address"),
                format!("{address:?}: expected an IP address, such as 127.0.0.1 or 0.0.0.0"),
            ));
        }
        if ports[..i]
            .iter()
            .any(|p| p.port == port.port && p.address() == port.address())
        {
            problems.push((
                here.clone(),
                format!(
                    "port {} on {} is published twice",
                    port.port,
                    port.address()
                ),
            ));
        }
    }
    problems
}

#[cfg(test)]
mod tests {
    use super::*;

    fn port(name: &str, port: u16, address: Option<&str>) -> PortSpec {
        PortSpec {
            name: name.into(),
            port,
            address: address.map(str::to_owned),
        }
    }

    #[test]
    fn an_instance_port_replaces_its_workspaces_of_the_same_name() {
        let workspace = [port("web", 3000, None), port("db", 5432, None)];
        let instance = [port("web", 8080, Some("0.0.0.0")), port("api", 4000, None)];
        let merged = merged(&workspace, &instance);
        assert_eq!(
            merged,
            [
                port("web", 8080, Some("0.0.0.0")),
                port("db", 5432, None),
                port("api", 4000, None)
            ]
        );
    }

    #[test]
    fn bad_ports_are_each_named() {
        let ports = [
            port("Web", 3000, None),
            port("web", 0, Some("localhost")),
            port("web", 3000, Some("127.0.0.1")),
        ];
        let problems = problems(&ports, "spec.ports");
        let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "spec.ports[0].name",
                "spec.ports[1].port",
                "spec.ports[1].address",
                "spec.ports[2].name",
                "spec.ports[2]"
            ],
            "{problems:#?}"
        );
        assert!(problems[0].1.starts_with("\"Web\": expected"));
        assert!(problems[3].1.contains("comes twice"));
        assert!(
            problems[4]
                .1
                .contains("port 3000 on 127.0.0.1 is published twice")
        );
        let fine = [port("web", 3000, None), port("web-2", 3000, Some("::1"))];
        assert!(super::problems(&fine, "spec.ports").is_empty());
    }

    #[test]
    fn the_pool_is_checked_and_wraps() {
        assert!(PortPool { from: 80, to: 90 }.check().is_err());
        assert!(
            PortPool {
                from: 5000,
                to: 4000
            }
            .check()
            .is_err()
        );
        let pool = PortPool::default();
        assert_eq!(pool.check(), Ok(()));
        assert_eq!(pool.count(), 1000);
        assert_eq!(pool.nth(0), 40000);
        assert_eq!(pool.nth(1001), 40001);
    }

    #[test]
    fn a_remote_engines_port_is_reached_on_its_machine() {
        assert_eq!(engine_host(Some("tcp://build-box:2376")), Some("build-box"));
        assert_eq!(engine_host(Some("ssh://me@10.0.0.5:22")), Some("10.0.0.5"));
        assert_eq!(
            engine_host(Some("tcp://[fd00::5]:2376/")),
            Some("[fd00::5]")
        );
        assert_eq!(engine_host(Some("tcp://127.0.0.1:2375")), None);
        assert_eq!(engine_host(Some("unix:///run/docker.sock")), None);
        assert_eq!(engine_host(Some("build-box")), None);
        assert_eq!(engine_host(None), None);
        let port = |address: &str| PublishedPort {
            name: "web".into(),
            port: 3000,
            address: address.into(),
            host_port: 40013,
        };
        assert_eq!(port("0.0.0.0").reached(Some("box")), "box:40013");
        assert_eq!(
            port("127.0.0.1").reached(Some("box")),
            "127.0.0.1:40013@box"
        );
        assert_eq!(port("127.0.0.1").reached(None), "127.0.0.1:40013");
    }

    #[test]
    fn an_endpoint_brackets_an_ipv6_address() {
        let published = |address: &str| PublishedPort {
            name: "web".into(),
            port: 3000,
            address: address.into(),
            host_port: 40013,
        };
        assert_eq!(published("127.0.0.1").endpoint(), "127.0.0.1:40013");
        assert_eq!(published("::1").endpoint(), "[::1]:40013");
    }
}
