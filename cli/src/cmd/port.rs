//! `jackin port NAME [PORT]`: where the operator reaches the ports an
//! instance publishes, as its status keeps them (`docker port` for a
//! session): each as `web http://127.0.0.1:40013`, or one port's address
//! alone. Reads the store only: no engine call.

use anyhow::{Result, bail};

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
    let Some(port) = port else {
        for p in &published {
            println!("{} {}", output::terminal_safe(&p.name), url(&p.endpoint()));
        }
        return Ok(());
    };
    match published.iter().find(|p| p.name == port) {
        Some(p) => {
            println!("{}", url(&p.endpoint()));
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

/// The address as a URL a browser takes (the usual case: a dev server).
fn url(endpoint: &str) -> String {
    format!("http://{endpoint}")
}
