//! `jackin port NAME [PORT]`: where the operator reaches the ports an
//! instance publishes, as its status keeps them (`docker port` for a
//! session): each as `web http://127.0.0.1:40013`, or one port's address
//! alone; on an engine of another machine, that machine's address, or for
//! its loopback the tunnel that reaches it. Reads the store only: no
//! engine call.

use anyhow::{Result, bail};

use jackin_api::ports::{PublishedPort, engine_host};

use crate::context::open_store;
use crate::output;
use crate::select::instance_name;

pub fn run(name: &str, port: Option<&str>) -> Result<()> {
    let name = instance_name(name)?;
    let obj = open_store()?.get_instance(name)?;
    let published = obj.status_or_default().ports.clone();
    let asked = obj.recipe().map(|r| r.ports.as_slice()).unwrap_or_default();
    if published.is_empty() {
        let why = match asked.is_empty() && obj.spec.ports.is_empty() {
            true => "publishes no port (spec.ports, or its workspace's)",
            false => "has no host port yet: its container is made with them",
        };
        bail!("instance/{name} {why}");
    }
    let host = engine_host(obj.recipe().and_then(|r| r.engine.as_deref()));
    let Some(port) = port else {
        for p in &published {
            println!("{} {}", output::terminal_safe(&p.name), url(p, host));
        }
        return Ok(());
    };
    match published.iter().find(|p| p.name == port) {
        Some(p) => {
            println!("{}", url(p, host));
            Ok(())
        }
        None => {
            let names: Vec<&str> = published.iter().map(|p| p.name.as_str()).collect();
            bail!(
                "instance/{name} publishes no port named {:?}: its ports are {}",
                output::terminal_safe(port),
                names.join(", ")
            )
        }
    }
}

/// Where a browser reaches `port` (the usual case: a dev server): on the
/// engine's machine `host` when it publishes there on every address; for
/// its loopback there, through the tunnel the note names.
fn url(port: &PublishedPort, host: Option<&str>) -> String {
    let reached = port.reached(host);
    match reached.split_once('@') {
        Some((here, host)) => output::terminal_safe(&format!(
            "http://{here} (on {host}: `ssh -L {hp}:{here} {host}` reaches it from here)",
            hp = port.host_port
        )),
        None => output::terminal_safe(&format!("http://{reached}")),
    }
}
