//! Host ports for the recipe's published ports, from the home's pool
//! (`config.yaml`'s `portPool`).
//!
//! A host port is given once and kept in `status.ports`: every container
//! made for the session (a tier 2 or 3 restore, a rollout) publishes the
//! same one, and only the purge frees it. Which ports are given is kept
//! beside the units, one file per host port under `ports/` in the home,
//! made with `create_new`: two instances (or two processes converging
//! them) never get the same one, without a lock. A port some program of
//! this host listens on already is skipped, when the engine runs on this
//! host (where a bind here tells).

use std::io::Write;
use std::net::TcpListener;
use std::path::{Path, PathBuf};

use jackin_api::instance::Instance;
use jackin_api::ports::{PortPool, PortSpec, PublishedPort};
use jackin_engine::addresses::read_config;
use jackin_files::fsutil::{read_regular, remove_if_exists};
use jackin_files::layout::Layout;

use super::context::recipe_of;
use super::error::{ActError, io};

/// The most a ledger file holds: a uid and a port's name.
const LEDGER_CAP: u64 = 512;

/// The directory of the host ports given, one file each.
pub fn ledger_dir(layout: &Layout) -> PathBuf {
    layout.root().join("ports")
}

/// What a ledger file of `uid`'s port `name` holds.
fn owner_line(uid: &str, name: &str) -> String {
    format!("{uid} {name}\n")
}

/// Whether the ledger file at `path` is `owner`'s.
fn owned_by(path: &Path, owner: &str) -> bool {
    read_regular(path, LEDGER_CAP).is_ok_and(|held| held == owner.as_bytes())
}

/// Gives each of the recipe's ports a host port: the one the status keeps
/// when it still publishes what the port asks for, else a free one of the
/// pool. Ports the recipe no longer names are freed. `on_this_host`: the
/// engine publishes on this host, so a port a program here listens on is
/// skipped.
pub fn assign(layout: &Layout, obj: &mut Instance, on_this_host: bool) -> Result<(), ActError> {
    let wanted = recipe_of(obj).ports.clone();
    let uid = obj.metadata.uid.clone().unwrap_or_default();
    let status = obj.status.get_or_insert_default();
    if wanted.is_empty() && status.ports.is_empty() {
        return Ok(());
    }
    let pool = read_config(layout.root())?.port_pool();
    let ledger = ledger_dir(layout);
    std::fs::create_dir_all(&ledger).map_err(io(&ledger))?;
    let mut given = Vec::new();
    for port in &wanted {
        let kept = status
            .ports
            .iter()
            .find(|p| p.serves(port))
            .map(|p| p.host_port)
            .filter(|host_port| claim(&ledger, *host_port, &uid, &port.name).unwrap_or(false));
        let host_port = match kept {
            Some(host_port) => host_port,
            None => free_port(&ledger, &pool, &uid, port, on_this_host)?,
        };
        given.push(PublishedPort {
            name: port.name.clone(),
            port: port.port,
            address: port.address().to_owned(),
            host_port,
        });
    }
    for old in &status.ports {
        if !given.iter().any(|p| p.host_port == old.host_port) {
            release(&ledger, old.host_port, &owner_line(&uid, &old.name))?;
        }
    }
    status.ports = given;
    Ok(())
}

/// Frees every host port given to the instance `uid` (at its purge).
pub fn release_all(layout: &Layout, obj: &Instance) -> Result<(), ActError> {
    let Some(status) = &obj.status else {
        return Ok(());
    };
    let uid = obj.metadata.uid.clone().unwrap_or_default();
    let ledger = ledger_dir(layout);
    for port in &status.ports {
        release(&ledger, port.host_port, &owner_line(&uid, &port.name))?;
    }
    Ok(())
}

/// Removes the ledger file of `host_port` when it is `owner`'s.
fn release(ledger: &Path, host_port: u16, owner: &str) -> Result<(), ActError> {
    let path = ledger.join(host_port.to_string());
    if owned_by(&path, owner) {
        remove_if_exists(&path).map_err(io(&path))?;
    }
    Ok(())
}

/// Records `host_port` as `uid`'s port `name`; whether it is theirs now
/// (made just now, or theirs already).
fn claim(ledger: &Path, host_port: u16, uid: &str, name: &str) -> Result<bool, ActError> {
    let path = ledger.join(host_port.to_string());
    let owner = owner_line(uid, name);
    let made = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(&path);
    match made {
        Ok(mut file) => {
            file.write_all(owner.as_bytes()).map_err(io(&path))?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Ok(owned_by(&path, &owner)),
        Err(e) => Err(io(&path)(e)),
    }
}

/// A host port of the pool nobody has: the search starts at a place
/// derived from the instance and the port's name, so that two processes
/// rarely try the same one first.
fn free_port(
    ledger: &Path,
    pool: &PortPool,
    uid: &str,
    port: &PortSpec,
    on_this_host: bool,
) -> Result<u16, ActError> {
    let start = start_of(uid, &port.name);
    for i in 0..pool.count() {
        let host_port = pool.nth(start.wrapping_add(i));
        if !claim(ledger, host_port, uid, &port.name)? {
            continue;
        }
        if on_this_host && TcpListener::bind((port.address(), host_port)).is_err() {
            // Some program of this host has it: not ours to publish.
            let path = ledger.join(host_port.to_string());
            remove_if_exists(&path).map_err(io(&path))?;
            continue;
        }
        return Ok(host_port);
    }
    Err(ActError::PortsExhausted {
        port: port.name.clone(),
        from: pool.from,
        to: pool.to,
    })
}

/// Where the search for `uid`'s port `name` starts in the pool.
fn start_of(uid: &str, name: &str) -> u32 {
    use std::hash::{Hash, Hasher};
    let mut hasher = std::collections::hash_map::DefaultHasher::new();
    (uid, name).hash(&mut hasher);
    u32::try_from(hasher.finish() % u64::from(u32::MAX)).expect("below u32::MAX")
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::instance::{InstanceStatus, Recipe};

    fn instance(uid: &str, ports: &[(&str, u16)]) -> Instance {
        let mut obj = Instance {
            api_version: jackin_api::API_VERSION.into(),
            kind: Instance::KIND.into(),
            metadata: jackin_api::ObjectMeta {
                name: uid.into(),
                uid: Some(uid.into()),
                ..Default::default()
            },
            spec: Default::default(),
            status: None,
        };
        let recipe = Recipe {
            ports: ports
                .iter()
                .map(|(name, port)| PortSpec {
                    name: (*name).into(),
                    port: *port,
                    address: None,
                })
                .collect(),
            ..Default::default()
        };
        obj.status = Some(InstanceStatus {
            recipe: Some(recipe),
            ..Default::default()
        });
        obj
    }

    fn host_ports(obj: &Instance) -> Vec<u16> {
        obj.status
            .as_ref()
            .unwrap()
            .ports
            .iter()
            .map(|p| p.host_port)
            .collect()
    }

    /// Two instances asking for one container port get host ports of
    /// their own; each keeps its own on the next pass, and a purge frees
    /// it for the next instance.
    #[test]
    fn each_instance_keeps_a_host_port_of_its_own_until_its_purge() {
        let home = tempfile::tempdir().unwrap();
        std::fs::write(
            home.path().join("config.yaml"),
            "portPool: {from: 41000, to: 41001}\n",
        )
        .unwrap();
        let layout = Layout::new(home.path());
        let mut a = instance("uid-a", &[("web", 3000)]);
        let mut b = instance("uid-b", &[("web", 3000)]);
        assign(&layout, &mut a, false).unwrap();
        assign(&layout, &mut b, false).unwrap();
        let (pa, pb) = (host_ports(&a), host_ports(&b));
        assert_ne!(pa, pb);
        assign(&layout, &mut a, false).unwrap();
        assert_eq!(host_ports(&a), pa, "kept");
        // The pool is full: a third is refused, saying which pool.
        let mut c = instance("uid-c", &[("web", 3000)]);
        let err = assign(&layout, &mut c, false).unwrap_err().to_string();
        assert!(err.contains("41000 to 41001"), "{err}");
        release_all(&layout, &a).unwrap();
        assign(&layout, &mut c, false).unwrap();
        assert_eq!(host_ports(&c), pa, "freed by the purge");
        // A port no longer asked for is freed.
        b.status
            .as_mut()
            .unwrap()
            .recipe
            .as_mut()
            .unwrap()
            .ports
            .clear();
        assign(&layout, &mut b, false).unwrap();
        assert!(host_ports(&b).is_empty());
        assert_eq!(std::fs::read_dir(ledger_dir(&layout)).unwrap().count(), 1);
    }

    /// A port a program of this host listens on is skipped.
    #[test]
    fn a_port_in_use_on_this_host_is_skipped() {
        let home = tempfile::tempdir().unwrap();
        let busy = TcpListener::bind(("127.0.0.1", 0)).unwrap();
        let taken = busy.local_addr().unwrap().port();
        std::fs::write(
            home.path().join("config.yaml"),
            format!(
                "portPool: {{from: {taken}, to: {}}}\n",
                taken.saturating_add(40)
            ),
        )
        .unwrap();
        let layout = Layout::new(home.path());
        for uid in ["u1", "u2", "u3"] {
            let mut obj = instance(uid, &[("web", 3000)]);
            assign(&layout, &mut obj, true).unwrap();
            assert_ne!(host_ports(&obj), [taken], "{uid}");
        }
    }
}
