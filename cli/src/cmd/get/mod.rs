//! `jackin get`: listings and single objects, as tables, YAML or JSON.

mod discarded;

use std::collections::{BTreeSet, HashMap};
use std::io::Write;

use anyhow::{Result, anyhow};
use jackin_api::names;
use jackin_api::selector::Selector;
use jackin_api::{Instance, ObjectMeta};
use jiff::Timestamp;

use crate::args::UsageError;
use crate::args::{Format, GetArgs};
use crate::context::check_name;
use crate::ops::watch::{as_listed, warn_unanswered, watch};
use crate::output;
use crate::select::{self, Kind};
use jackin_controller::attention::{self, Look};
use jackin_controller::listing::{self, Listing};
use jackin_controller::published_looks;
use jackin_controller::{Reconciler, Store};

pub async fn run(store: &Store, args: &GetArgs) -> Result<()> {
    let (kind, name) = target(args)?;
    let selector = args.selector.as_deref().map(select::selector).transpose()?;
    if args.watch {
        if let Some(name) = name {
            // As kubectl: watching a name that is not there is an error.
            store.get_instance(name)?;
        }
        return watch(store, args.output, selector.as_ref(), name, false).await;
    }
    let now = Timestamp::now();
    let table = matches!(args.output, Format::Table | Format::Wide);
    let text = match kind {
        Kind::Instance => match instances(store, name, selector.as_ref(), args.output).await? {
            Some(text) => text,
            None => return Ok(()),
        },
        Kind::Workspace => {
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
                Format::Yaml => output::yaml_stream(&printable(objects, |o| &mut o.metadata))?,
                Format::Json => {
                    output::json(&printable(objects, |o| &mut o.metadata), name.is_some())?
                }
                Format::Name => {
                    output::name_lines("workspace", objects.iter().map(|o| &o.metadata.name))
                }
            }
        }
        Kind::Agent => {
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
                Format::Yaml => output::yaml_stream(&printable(objects, |o| &mut o.metadata))?,
                Format::Json => {
                    output::json(&printable(objects, |o| &mut o.metadata), name.is_some())?
                }
                Format::Name => {
                    output::name_lines("agent", objects.iter().map(|o| &o.metadata.name))
                }
            }
        }
        Kind::Provider => crate::provider_output::text(store, name, args.output)?,
        Kind::Discarded => discarded::text(store, name, args.output)?,
        Kind::Source => {
            let mut records = owning_sources(store)?;
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
                Format::Name => output::name_lines("source", records.iter().map(|r| &r.id)),
            }
        }
    };
    std::io::stdout().write_all(text.as_bytes())?;
    Ok(())
}

/// What `get` lists: the kind and the name asked for, checked, and `-l`
/// and `-w` only where they apply (instances).
fn target(args: &GetArgs) -> Result<(Kind, Option<&str>)> {
    let (kind, name) = match (args.first.as_deref(), args.name.as_deref()) {
        (None, _) => (Kind::Instance, None),
        // `instance/NAME`, as `-o name` prints it.
        (Some(first), None) if first.contains('/') => {
            let (kind, name) = select::split_kind(first)?;
            (kind.unwrap_or(Kind::Instance), Some(name))
        }
        (Some(first), name) => match (Kind::from_word(first), name) {
            (Some(kind), name) => (kind, name),
            (None, None) => (Kind::Instance, Some(first)),
            (None, Some(_)) => {
                return Err(anyhow!(
                    "unknown kind {first:?}: expected instances, workspaces, agents, providers, \
                     sources or discarded"
                ));
            }
        },
    };
    if let Some(name) = name
        && kind != Kind::Discarded
    {
        check_name(name)?;
    }
    if args.watch || args.selector.is_some() {
        match (kind, name) {
            (Kind::Instance, None) => {}
            // One instance watched: `get -w NAME`.
            (Kind::Instance, Some(_)) if args.selector.is_none() => {}
            _ => {
                return Err(UsageError(
                    "-l and -w select and watch instances: `jackin get [instances] -l …`, \
                     `jackin get -w [NAME]`"
                        .into(),
                )
                .into());
            }
        }
    }
    Ok((kind, name))
}

/// `get [instances]`: the table, YAML, JSON or names of the instances
/// named or selected; `None` when a table has none to show (said on
/// standard error).
async fn instances(
    store: &Store,
    name: Option<&str>,
    selector: Option<&Selector>,
    format: Format,
) -> Result<Option<String>> {
    let now = Timestamp::now();
    let table = matches!(format, Format::Table | Format::Wide);
    let reconciler = Reconciler::new(
        store.clone(),
        jackin_controller::engines::Engines::new(None),
    );
    // The engines' listing of all instances begins once the index is
    // read, and their objects are read meanwhile; names need no listing.
    let mut begun = listing::Begun::default();
    let objects = match name {
        Some(name) => vec![store.get_instance(name)?],
        None => {
            let listing = store.list_instances_beginning(|engines| {
                if format != Format::Name {
                    begun = listing::begin(&reconciler, engines);
                }
            })?;
            for unreadable in &listing.unreadable {
                eprintln!(
                    "warning: {}\nhint: `jackin prune` sets the unit aside",
                    output::terminal_safe_lines(&unreadable.to_string())
                );
            }
            listing.instances
        }
    };
    let objects: Vec<_> = match selector {
        Some(selector) => objects
            .into_iter()
            .filter(|o| selector.matches(&o.metadata.labels))
            .collect(),
        None => objects,
    };
    if objects.is_empty() && table {
        eprintln!("No instances found.");
        return Ok(None);
    }
    let (objects, listing) = match format {
        // Names only: nothing the engine holds changes them.
        Format::Name => (objects, Listing::default()),
        // A table shows what the engines list; YAML and JSON are
        // the record, which the loop keeps.
        _ => {
            let (objects, listing) = as_listed(&reconciler, objects, table, begun).await;
            warn_unanswered(&listing, &BTreeSet::new());
            (objects, listing)
        }
    };
    let text = match format {
        Format::Table => output::instance_table(&objects, false, now, None),
        Format::Wide => {
            let looks = wide_looks(&reconciler, &objects, &listing).await;
            output::instance_table(&objects, true, now, Some(&looks))
        }
        Format::Yaml => output::yaml_stream(&printable(objects, |o| &mut o.metadata))?,
        Format::Json => output::json(&printable(objects, |o| &mut o.metadata), name.is_some())?,
        Format::Name => output::name_lines("instance", objects.iter().map(|o| &o.metadata.name)),
    };
    Ok(Some(text))
}

/// Each instance's look for `-o wide`: from the running controller's latest
/// look (`published_looks`) for each instance it covers in the container
/// the engine lists now, with no engine call; the rest one log call each.
async fn wide_looks(
    reconciler: &Reconciler,
    objects: &[Instance],
    listing: &Listing,
) -> HashMap<String, Look> {
    let layout = reconciler.store.layout().clone();
    let now = Timestamp::now();
    let published = jackin_files::offload::blocking({
        let layout = layout.clone();
        move || published_looks::current(&layout, now)
    })
    .await;
    let mut looks = published.map_or_else(HashMap::new, |published| {
        let workspaces = attention::workspaces(reconciler);
        published_looks::looks_of(&published, objects, listing, &layout, &workspaces, now)
    });
    let rest: Vec<Instance> = objects
        .iter()
        .filter(|o| !looks.contains_key(&o.metadata.name))
        .cloned()
        .collect();
    looks.extend(
        attention::look_listed(reconciler, &rest, false, &HashMap::new(), listing, None).await,
    );
    looks
}

/// The sources to list: each that owns an object now, and each whose last
/// attempt failed (its error is the operator's to see). One that owns
/// nothing any more (its objects were deleted, applied by hand, or moved
/// to another source) is no longer a source of anything, and is dropped.
fn owning_sources(store: &Store) -> Result<Vec<jackin_controller::source::SourceRecord>> {
    let mut owners = BTreeSet::new();
    let mut note = |meta: &ObjectMeta| {
        if let Some(id) = meta.labels.get(names::label::SOURCE) {
            owners.insert(id.clone());
        }
    };
    for obj in store.list_instances()?.instances {
        note(&obj.metadata);
    }
    for ws in store.list_workspaces()? {
        note(&ws.metadata);
    }
    for (agent, _) in store.agents()? {
        note(&agent.metadata);
    }
    let mut records = store.source_records()?;
    records.retain(|r| r.error.is_some() || owners.contains(&r.id));
    Ok(records)
}

/// The objects as `-o yaml|json` prints them: without the names jackin
/// keeps for itself, which no applied file may set, so that the output
/// applies back as it is.
fn printable<T>(mut objects: Vec<T>, meta: impl Fn(&mut T) -> &mut ObjectMeta) -> Vec<T> {
    for obj in &mut objects {
        meta(obj).hide_reserved_names();
    }
    objects
}
