//! `jackin apply`: read every document first, apply only if all are valid.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use jackin_api::Object;
use jackin_api::manifest::{self, ManifestError};
use jackin_controller::{ApplyOutcome, Reconciler, Store, StoreError};
use jackin_reconcilers::Engine;

use crate::args::ApplyArgs;

/// A set of problems already worded for the operator; printed as is.
#[derive(Debug)]
pub struct InvalidInput(pub Vec<String>);

impl std::fmt::Display for InvalidInput {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0.join("\n"))
    }
}

impl std::error::Error for InvalidInput {}

/// Nothing is opened or written before every input has been read and
/// validated.
pub async fn run(
    open_store: impl FnOnce() -> Result<Store>,
    args: &ApplyArgs,
    verbose: bool,
) -> Result<()> {
    let paths: Vec<&PathBuf> = args.files.iter().chain(&args.paths).collect();
    if paths.is_empty() {
        bail!("no files given\nhint: jackin apply -f FILE_OR_DIR (`-` reads stdin)");
    }
    let objects = load(&paths)?;
    let has_instances = objects.iter().any(|o| matches!(o, Object::Instance(_)));
    // Converging needs the engine: connect before writing anything, so a
    // command that cannot converge leaves the store as it was. A dry run
    // needs it to show the loop's plan, and says so when it cannot.
    let engine = match (has_instances, args.dry_run, args.wait.no_wait) {
        (true, false, false) => Some(crate::connect().await?),
        (true, true, _) => match crate::connect().await {
            Ok(engine) => Some(engine),
            Err(e) => {
                eprintln!("note: the loop's plans are not shown: {e:#}");
                None
            }
        },
        _ => None,
    };
    let store = open_store()?;
    // Every object is checked against the store (a uid that does not match
    // the stored object's, …) before any is written: one bad document
    // stores nothing at all.
    let mut refusals: Vec<String> = objects
        .iter()
        .filter_map(|obj| plan(&store, obj).err())
        .map(|e| e.to_string())
        .collect();
    refusals.extend(unknown_agents(&store, &objects)?);
    if !refusals.is_empty() {
        return Err(InvalidInput(refusals).into());
    }
    if !args.dry_run {
        crate::sweep_files_quietly(&store)?;
    }
    if args.dry_run {
        return dry_run(store, engine, &objects).await;
    }
    let mut names = Vec::new();
    for obj in &objects {
        let outcome = match obj {
            Object::Instance(i) => store.apply_instance(i)?,
            Object::Workspace(w) => store.apply(w.as_ref())?,
            Object::Agent(a) => store.apply(a.as_ref())?,
        };
        report(obj, outcome, "");
        if let (Object::Instance(_), false) = (obj, outcome == ApplyOutcome::Ended) {
            names.push(obj.name().to_owned());
        }
    }
    let Some(engine) = engine else {
        return Ok(());
    };
    crate::converge_and_report(store, engine, &names, &args.wait, verbose).await
}

/// The line for one applied object, and a note when the apply ends nothing.
fn report(obj: &Object, outcome: ApplyOutcome, suffix: &str) {
    println!(
        "{}/{} {}{suffix}",
        obj.kind().to_lowercase(),
        obj.name(),
        outcome.as_str()
    );
    if let (Object::Instance(_), ApplyOutcome::Ended) = (obj, outcome) {
        eprintln!(
            "note: jackin ended instance/{name}'s session and cleaned it up; the same manifest \
             does not start it again\nhint: change the manifest, or `jackin delete {name}` to \
             forget the ended session, then apply",
            name = obj.name()
        );
    }
}

/// What applying would do: each object's outcome and, with the engine, the
/// plan the loop would then carry out for each instance. Writes nothing.
async fn dry_run(store: Store, engine: Option<Engine>, objects: &[Object]) -> Result<()> {
    let reconciler = engine.map(|engine| Reconciler::new(store.clone(), engine));
    for obj in objects {
        let Object::Instance(applied) = obj else {
            report(obj, plan(&store, obj)?, " (dry run)");
            continue;
        };
        let (outcome, would_be) = store.preview_instance(applied)?;
        report(obj, outcome, " (dry run)");
        if let (Some(reconciler), Some(would_be)) = (&reconciler, would_be) {
            let phase = would_be.desired_phase();
            let dry = reconciler.preview(would_be).await?;
            print!("{}", crate::output::dry_run(obj.name(), phase, &dry, false));
        }
    }
    Ok(())
}

/// Instances that name an agent neither the store nor this input defines:
/// they could never start.
fn unknown_agents(store: &Store, objects: &[Object]) -> Result<Vec<String>> {
    let mut refusals = Vec::new();
    for obj in objects {
        let Object::Instance(instance) = obj else {
            continue;
        };
        let agent = &instance.spec.agent;
        let in_input = objects
            .iter()
            .any(|o| matches!(o, Object::Agent(a) if &a.metadata.name == agent));
        if !in_input && store.resolve_agent(agent)?.is_none() {
            refusals.push(format!(
                "instance/{}: no agent is named {agent:?} (`jackin get agents` lists them; \
                 apply an Agent to add one)",
                instance.metadata.name
            ));
        }
    }
    Ok(refusals)
}

/// What applying `obj` would do, writing nothing.
fn plan(store: &Store, obj: &Object) -> Result<ApplyOutcome, StoreError> {
    match obj {
        Object::Instance(i) => store.plan_instance(i),
        Object::Workspace(w) => store.plan(w.as_ref()),
        Object::Agent(a) => store.plan(a.as_ref()),
    }
}

/// Reads and validates every document of every path. Any error anywhere
/// fails the whole load, reporting all errors at once.
fn load(paths: &[&PathBuf]) -> Result<Vec<Object>> {
    let mut files = Vec::new();
    for path in paths {
        expand(path, &mut files)?;
    }
    let mut objects = Vec::new();
    let mut errors: Vec<ManifestError> = Vec::new();
    for file in &files {
        let (source, text) = if file.as_os_str() == "-" {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .context("reading stdin")?;
            ("<stdin>".to_owned(), text)
        } else {
            let text = std::fs::read_to_string(file)
                .with_context(|| format!("reading {}", file.display()))?;
            (file.display().to_string(), text)
        };
        match manifest::parse(&source, &text) {
            Ok(mut objs) => objects.append(&mut objs),
            Err(mut errs) => errors.append(&mut errs),
        }
    }
    let mut messages: Vec<String> = errors.iter().map(ToString::to_string).collect();
    let mut seen = HashSet::new();
    for obj in &objects {
        if !seen.insert((obj.kind(), obj.name())) {
            messages.push(format!(
                "{}/{} appears more than once in the input",
                obj.kind().to_lowercase(),
                obj.name()
            ));
        }
    }
    if !messages.is_empty() {
        return Err(InvalidInput(messages).into());
    }
    if objects.is_empty() {
        bail!("no objects found in the given files");
    }
    Ok(objects)
}

/// A directory contributes its `*.yaml` and `*.yml` files, sorted by name.
fn expand(path: &Path, out: &mut Vec<PathBuf>) -> Result<()> {
    if path.as_os_str() == "-" || !path.is_dir() {
        out.push(path.to_owned());
        return Ok(());
    }
    let mut found = Vec::new();
    for entry in std::fs::read_dir(path).with_context(|| format!("reading {}", path.display()))? {
        let entry = entry.with_context(|| format!("reading {}", path.display()))?;
        let file = entry.path();
        let is_yaml = file
            .extension()
            .is_some_and(|ext| ext == "yaml" || ext == "yml");
        if is_yaml && file.is_file() {
            found.push(file);
        }
    }
    if found.is_empty() {
        bail!(
            "{}: no *.yaml or *.yml files in this directory",
            path.display()
        );
    }
    found.sort();
    out.append(&mut found);
    Ok(())
}
