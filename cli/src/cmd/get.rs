//! `jackin get`: listings and single objects, as tables, YAML or JSON.

use std::io::Write;

use anyhow::{Result, anyhow};
use jackin_controller::Store;
use jiff::Timestamp;

use crate::args::{Format, GetArgs};
use crate::{check_name, output};

pub fn run(store: &Store, args: &GetArgs) -> Result<()> {
    enum Kind {
        Instances,
        Workspaces,
        Agents,
        Sources,
    }
    let (kind, name) = match (args.first.as_deref(), args.name.as_deref()) {
        (None, _) => (Kind::Instances, None),
        (Some("instances" | "instance" | "inst"), name) => (Kind::Instances, name),
        (Some("workspaces" | "workspace" | "ws"), name) => (Kind::Workspaces, name),
        (Some("agents" | "agent" | "ag"), name) => (Kind::Agents, name),
        (Some("sources" | "source"), name) => (Kind::Sources, name),
        (Some(name), None) => (Kind::Instances, Some(name)),
        (Some(kind), Some(_)) => {
            return Err(anyhow!(
                "unknown kind {kind:?}: expected instances, workspaces, agents or sources"
            ));
        }
    };
    if let Some(name) = name {
        check_name(name)?;
    }
    let now = Timestamp::now();
    let table = matches!(args.output, Format::Table | Format::Wide);
    let text = match kind {
        Kind::Instances => {
            let objects = match name {
                Some(name) => vec![store.get_instance(name)?],
                None => {
                    let listing = store.list_instances()?;
                    for unreadable in &listing.unreadable {
                        eprintln!(
                            "warning: {}\nhint: `jackin prune` sets the unit aside",
                            output::terminal_safe_lines(&unreadable.to_string())
                        );
                    }
                    listing.instances
                }
            };
            if objects.is_empty() && table {
                eprintln!("No instances found.");
                return Ok(());
            }
            match args.output {
                Format::Table => output::instance_table(&objects, false, now),
                Format::Wide => output::instance_table(&objects, true, now),
                Format::Yaml => output::yaml_stream(&objects)?,
                Format::Json => output::json(&objects, name.is_some())?,
            }
        }
        Kind::Workspaces => {
            let objects = match name {
                Some(name) => vec![
                    store
                        .get_workspace(name)?
                        .ok_or_else(|| anyhow!("workspace {name:?} not found"))?,
                ],
                None => store.list_workspaces()?,
            };
            if objects.is_empty() && table {
                eprintln!("No workspaces found.");
                return Ok(());
            }
            match args.output {
                Format::Table | Format::Wide => output::workspace_table(&objects, now),
                Format::Yaml => output::yaml_stream(&objects)?,
                Format::Json => output::json(&objects, name.is_some())?,
            }
        }
        Kind::Agents => {
            let mut agents = store.agents()?;
            if let Some(name) = name {
                agents.retain(|(agent, _)| agent.metadata.name == name);
                if agents.is_empty() {
                    return Err(anyhow!(
                        "agent {name:?} not found\nhint: `jackin get agents` lists them"
                    ));
                }
            }
            let objects: Vec<_> = agents.iter().map(|(agent, _)| agent.clone()).collect();
            match args.output {
                Format::Table | Format::Wide => output::agent_table(&agents),
                Format::Yaml => output::yaml_stream(&objects)?,
                Format::Json => output::json(&objects, name.is_some())?,
            }
        }
        Kind::Sources => {
            let mut records = store.source_records()?;
            if let Some(id) = name {
                records.retain(|r| r.id == id);
                if records.is_empty() {
                    return Err(anyhow!(
                        "source {id:?} not found\nhint: `jackin get sources` lists them"
                    ));
                }
            }
            if records.is_empty() && table {
                eprintln!(
                    "No sources found: `jackin apply --prune` and `controller --sync` make them."
                );
                return Ok(());
            }
            match args.output {
                Format::Table => output::source_table(&records, false, now),
                Format::Wide => output::source_table(&records, true, now),
                Format::Yaml => output::yaml_stream(&records)?,
                Format::Json => output::json(&records, name.is_some())?,
            }
        }
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}
