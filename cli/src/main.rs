//! The `jackin` binary.

mod apply;
mod args;
mod output;

use std::io::Write;
use std::process::ExitCode;

use anyhow::{Context, Result, anyhow};
use clap::{CommandFactory, Parser};
use jackin_api::{DesiredPhase, validate};
use jackin_controller::{ApplyOutcome, IndexRepair, Store};
use jackin_reconcilers::Layout;
use jiff::Timestamp;

use crate::args::{Cli, Command, Format, GetArgs};

fn main() -> ExitCode {
    let cli = Cli::parse();
    init_logging(cli.verbose);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            if let Some(invalid) = err.downcast_ref::<apply::InvalidInput>() {
                for line in &invalid.0 {
                    eprintln!("error: {line}");
                }
            } else {
                eprintln!("error: {err:#}");
            }
            ExitCode::FAILURE
        }
    }
}

fn init_logging(verbose: u8) {
    let level = match verbose {
        0 => tracing::Level::WARN,
        1 => tracing::Level::INFO,
        2 => tracing::Level::DEBUG,
        _ => tracing::Level::TRACE,
    };
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .with_target(false)
        .init();
}

fn open_store() -> Result<Store> {
    let layout = Layout::from_env()
        .ok_or_else(|| anyhow!("cannot find a home directory; set JACKIN_HOME"))?;
    let (store, repair) = Store::open(layout)?;
    match repair {
        Some(IndexRepair::Rebuilt { units }) => {
            eprintln!("note: the instance index was missing; rebuilt it from {units} unit(s)")
        }
        Some(IndexRepair::Corrupt { kept_as, units }) => eprintln!(
            "note: the instance index was unreadable; kept it as {kept_as} and rebuilt it from {units} unit(s)"
        ),
        None => {}
    }
    Ok(store)
}

fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Apply(args) => apply::run(open_store, &args),
        Command::Get(args) => get(&open_store()?, &args),
        Command::Describe { name } => {
            check_name(&name)?;
            let obj = open_store()?.get_instance(&name)?;
            print!("{}", output::describe(&obj, Timestamp::now()));
            Ok(())
        }
        Command::SetPhase {
            name,
            phase,
            dry_run,
        } => set_phase(&name, phase.into(), dry_run),
        Command::Delete { name, dry_run } => set_phase(&name, DesiredPhase::Purged, dry_run),
        Command::Crds { out } => crds(out.as_deref()),
        Command::Completions { shell } => {
            clap_complete::generate(shell, &mut Cli::command(), "jackin", &mut std::io::stdout());
            Ok(())
        }
    }
}

fn check_name(name: &str) -> Result<()> {
    validate::dns_label(name).map_err(|message| anyhow!("{message}"))
}

fn set_phase(name: &str, phase: DesiredPhase, dry_run: bool) -> Result<()> {
    check_name(name)?;
    let store = open_store()?;
    let current = store.get_instance(name)?;
    let outcome = if dry_run {
        if current.spec.phase == phase {
            ApplyOutcome::Unchanged
        } else {
            ApplyOutcome::Configured
        }
    } else {
        store.set_phase(name, phase)?
    };
    let suffix = if dry_run { " (dry run)" } else { "" };
    println!(
        "instance/{name} {} (desired phase {phase}, was {}){suffix}",
        outcome.as_str(),
        current.spec.phase
    );
    Ok(())
}

fn get(store: &Store, args: &GetArgs) -> Result<()> {
    enum Kind {
        Instances,
        Workspaces,
    }
    let (kind, name) = match (args.first.as_deref(), args.name.as_deref()) {
        (None, _) => (Kind::Instances, None),
        (Some("instances" | "instance" | "inst"), name) => (Kind::Instances, name),
        (Some("workspaces" | "workspace" | "ws"), name) => (Kind::Workspaces, name),
        (Some(name), None) => (Kind::Instances, Some(name)),
        (Some(kind), Some(_)) => {
            return Err(anyhow!(
                "unknown kind {kind:?}: expected instances or workspaces"
            ));
        }
    };
    if let Some(name) = name {
        check_name(name)?;
    }
    let now = Timestamp::now();
    let text = match kind {
        Kind::Instances => {
            let objects = match name {
                Some(name) => vec![store.get_instance(name)?],
                None => store.list_instances()?,
            };
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
            match args.output {
                Format::Table | Format::Wide => output::workspace_table(&objects, now),
                Format::Yaml => output::yaml_stream(&objects)?,
                Format::Json => output::json(&objects, name.is_some())?,
            }
        }
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

fn crds(out: Option<&std::path::Path>) -> Result<()> {
    let mut stdout = String::new();
    for (file, crd) in jackin_api::crd::all() {
        let text = render_crd(&crd)?;
        match out {
            Some(dir) => {
                std::fs::create_dir_all(dir)
                    .with_context(|| format!("creating {}", dir.display()))?;
                let path = dir.join(file);
                std::fs::write(&path, text.as_bytes())
                    .with_context(|| format!("writing {}", path.display()))?;
                println!("wrote {}", path.display());
            }
            None => {
                if !stdout.is_empty() {
                    stdout.push_str("---\n");
                }
                stdout.push_str(&text);
            }
        }
    }
    print!("{stdout}");
    Ok(())
}

/// The committed form of a CRD; `crds_match_the_types` compares against it.
pub fn render_crd(crd: &serde_json::Value) -> Result<String> {
    Ok(format!(
        "# Generated from the Rust types by `jackin crds --out crds`; do not edit.\n{}",
        output::yaml_stream(std::slice::from_ref(crd))?
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The committed CRDs must be exactly what the types generate.
    #[test]
    fn crds_match_the_types() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../crds");
        for (file, crd) in jackin_api::crd::all() {
            let committed = std::fs::read_to_string(dir.join(file))
                .unwrap_or_else(|e| panic!("crds/{file}: {e}; run `jackin crds --out crds`"));
            assert!(
                committed == render_crd(&crd).unwrap(),
                "crds/{file} is stale: run `cargo run -p jackin-cli -- crds --out crds`"
            );
        }
    }

    #[test]
    fn the_cli_definition_is_consistent() {
        Cli::command().debug_assert();
    }
}
