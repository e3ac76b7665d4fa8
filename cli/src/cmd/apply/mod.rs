//! `jackin apply` and `jackin diff`: read every document first, apply (or
//! compare) only if all are valid.

mod spec_change;

use std::collections::{BTreeMap, BTreeSet};
use std::io::Write;
use std::path::PathBuf;

use anyhow::{Result, bail};
use jackin_api::Object;
use jackin_controller::engines::Engines;
use jackin_controller::source::{self, Applied, Input, Invalid, Source, SourceError};
use jackin_controller::{ApplyOutcome, Reconciler, Store};

use crate::args::{ApplyArgs, DiffArgs};
use crate::context::keep_cap_preview;
use crate::inputs::read_inputs;
use jackin_api::suggest::closest;

/// The source that owns what a `--prune` apply writes: its paths. Stdin
/// has no identity to own anything by.
fn source_of(paths: &[PathBuf], prune: bool) -> Result<Option<Source>> {
    if !prune {
        return Ok(None);
    }
    if paths.iter().any(|p| p.as_os_str() == "-") {
        bail!("--prune needs files or directories: stdin cannot own what it applied");
    }
    Ok(Some(Source::of(paths)?))
}

/// Nothing is opened or written before every input has been read and
/// validated, and every object checked against the store.
pub async fn run(
    open_store: impl FnOnce() -> Result<Store>,
    args: &ApplyArgs,
    verbose: bool,
) -> Result<()> {
    let paths: Vec<PathBuf> = args.files.iter().chain(&args.paths).cloned().collect();
    let inputs = read_inputs(&paths)?;
    let source = source_of(&paths, args.prune)?;
    // A plain apply does not read again a document it applied before to an
    // object unchanged since (a no-op re-apply of hundreds). A source's
    // apply prunes and records by what it reads, and a dry run shows it.
    let skip_from = match (&source, args.dry_run) {
        (None, false) => jackin_files::layout::Layout::from_env().ok(),
        _ => None,
    };
    let read = match source::parse_unless_applied(&inputs, skip_from.as_ref()) {
        Ok(read) => read,
        Err(invalid) => {
            let store = crate::context::open_store().ok();
            return Err(every_error(invalid, &inputs, store.as_ref()));
        }
    };
    let has_instances = args.prune
        || !read.unchanged.is_empty()
        || read
            .objects
            .iter()
            .any(|(_, o)| matches!(o, Object::Instance(_)));
    // Converging needs the engine: connect before writing anything, so a
    // command that cannot converge leaves the store as it was. A dry run
    // needs it to show the loop's plan, and says so when it cannot.
    let engine = match (has_instances, args.dry_run, args.wait.no_wait) {
        (true, false, false) => Some(crate::context::connect().await?),
        (true, true, _) => match crate::context::connect().await {
            Ok(engine) => Some(engine),
            Err(e) => {
                eprintln!("note: the loop's plans are not shown: {e:#}");
                None
            }
        },
        _ => None,
    };
    let store = open_store()?;
    let objects = objects_to_apply(&store, read.objects, source.as_ref())?;
    if args.dry_run {
        return dry_run(store, engine, &objects, source.as_ref()).await;
    }
    crate::context::sweep_files_quietly(&store)?;
    let applied = store.apply_read(&objects, source.as_ref(), &read.documents, &read.unchanged);
    let applied = match applied {
        Ok(applied) => applied,
        Err(e) => {
            record_source(&store, source.as_ref(), Err(&e));
            return Err(e.into());
        }
    };
    record_source(&store, source.as_ref(), Ok(&applied));
    report(&applied);
    let unchanged_in: Vec<(&str, &str)> = read
        .unchanged
        .iter()
        .filter_map(|u| Some((u.name.as_str(), u.workspace.as_deref()?)))
        .collect();
    warn_of_missing_workspaces(&store, &objects, &unchanged_in)?;
    let drifted = spec_change::drifted(&store, &applied)?;
    if let Some(engine) = engine {
        let names = applied.instances_to_converge();
        crate::context::converge_and_report(store.clone(), engine, &names, &args.wait, verbose)
            .await?;
    }
    spec_change::report(&store, &drifted)
}

/// The objects as read, for an apply from `source`; for a plain apply,
/// with the label of the source that owns each kept when it was read from
/// that source's files (see [`Store::keep_owners`]).
fn objects_to_apply(
    store: &Store,
    read: Vec<(&Input, Object)>,
    source: Option<&Source>,
) -> Result<Vec<Object>> {
    Ok(match source {
        Some(_) => read.into_iter().map(|(_, obj)| obj).collect(),
        None => store.keep_owners(read)?,
    })
}

/// A warning for each workspace that an applied instance names and that
/// exists nowhere: not in the store, not in this apply. The instance is
/// applied all the same (in GitOps the workspace may come in a later
/// commit) and runs on the defaults until it is; a close name is offered,
/// as the likely typo. `unchanged`: the instances not read again, each
/// with the workspace it names.
fn warn_of_missing_workspaces(
    store: &Store,
    objects: &[Object],
    unchanged: &[(&str, &str)],
) -> Result<()> {
    let mut named: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for obj in objects {
        if let Object::Instance(i) = obj
            && let Some(workspace) = &i.spec.workspace
        {
            named.entry(workspace).or_default().push(obj.name());
        }
    }
    for (name, workspace) in unchanged {
        named.entry(workspace).or_default().push(name);
    }
    let mut known: BTreeSet<String> = objects
        .iter()
        .filter(|o| matches!(o, Object::Workspace(_)))
        .map(|o| o.name().to_owned())
        .collect();
    named.retain(|workspace, _| !known.contains(*workspace));
    if named.is_empty() {
        return Ok(());
    }
    known.extend(
        store
            .list_workspaces()?
            .into_iter()
            .map(|w| w.metadata.name),
    );
    for (workspace, instances) in named {
        if known.contains(workspace) {
            continue;
        }
        let suggestion = closest(workspace, known.iter().map(String::as_str))
            .map_or_else(String::new, |k| format!(" (did you mean `{k}`?)"));
        let instances: Vec<String> = instances.iter().map(|n| format!("instance/{n}")).collect();
        eprintln!(
            "warning: workspace `{workspace}` does not exist{suggestion}: {} the defaults until \
             a Workspace named {workspace} is applied\nhint: `jackin get workspaces` lists them",
            match instances.as_slice() {
                [one] => format!("{one} runs on"),
                many => format!("{} run on", many.join(", ")),
            }
        );
    }
    Ok(())
}

/// Keeps what a source's apply did (or why it did nothing) for `jackin get
/// sources`. A record that cannot be written does not undo the apply.
fn record_source(store: &Store, source: Option<&Source>, result: Result<&Applied, &SourceError>) {
    if let Some(source) = source
        && let Err(e) = store.record_source(source, result)
    {
        eprintln!(
            "warning: the record of source {} was not written: {e}",
            source.id
        );
    }
}

/// The line for each applied object, a note when an apply ends nothing, and
/// what was pruned.
fn report(applied: &Applied) {
    let mut ended = Vec::new();
    for (obj, outcome) in &applied.outcomes {
        match (obj, outcome) {
            (Object::Instance(_), ApplyOutcome::Ended) => ended.push(obj.name()),
            _ => print_outcome(obj, *outcome, ""),
        }
    }
    report_ended(&ended);
    for name in &applied.unchanged {
        println!("instance/{name} {}", ApplyOutcome::Unchanged.as_str());
    }
    for gone in &applied.pruned {
        let what = match gone.kind {
            "Instance" => "pruned (set to Purged)",
            _ => "pruned (deleted)",
        };
        println!("{}/{} {what}", gone.kind.to_lowercase(), gone.name);
    }
    for name in &applied.still_pruning {
        println!("instance/{name} pruned earlier; its purge had not finished and goes on");
    }
}

/// The instances whose ended sessions the same manifests would start
/// again, said once: a re-apply of a directory of many such records is one
/// line, not one each.
fn report_ended(names: &[&str]) {
    /// The most names the line lists; the count says how many more.
    const LISTED: usize = 5;
    let ended = ApplyOutcome::Ended.as_str();
    match names {
        [] => return,
        [name] => println!("instance/{name} {ended}"),
        many => {
            let listed = many[..many.len().min(LISTED)].join(", ");
            let more = match many.len().saturating_sub(LISTED) {
                0 => String::new(),
                rest => format!(" and {rest} more"),
            };
            println!("{} instances {ended}: {listed}{more}", many.len());
        }
    }
    note_ended(names);
}

/// Why the ended sessions of `names` are not started again, and how to.
fn note_ended(names: &[&str]) {
    let (whose, forget) = match names {
        [name] => (
            format!("instance/{name}'s session"),
            format!("`jackin delete {name}`"),
        ),
        _ => (
            "their sessions".to_owned(),
            "`jackin delete NAME`".to_owned(),
        ),
    };
    eprintln!(
        "note: jackin ended {whose} and cleaned up; the same manifest does not start one \
         again\nhint: change the manifest, or {forget} to forget the ended session, then apply"
    );
}

fn print_outcome(obj: &Object, outcome: ApplyOutcome, suffix: &str) {
    println!(
        "{}/{} {}{suffix}",
        obj.kind().to_lowercase(),
        obj.name(),
        outcome.as_str()
    );
    if let (Object::Instance(_), ApplyOutcome::Ended) = (obj, outcome) {
        note_ended(&[obj.name()]);
    }
}

/// What applying would do: each object's outcome and, with the engine, the
/// plan the loop would then carry out for each instance; with `--prune`,
/// what would be pruned. Writes nothing.
async fn dry_run(
    store: Store,
    engines: Option<Engines>,
    objects: &[Object],
    source: Option<&Source>,
) -> Result<()> {
    store.check(objects)?;
    warn_of_missing_workspaces(&store, objects, &[])?;
    let reconciler = engines.map(|engines| Reconciler::new(store.clone(), engines));
    for obj in objects {
        let Object::Instance(applied) = obj else {
            print_outcome(obj, store.plan_object(obj)?, " (dry run)");
            continue;
        };
        let (outcome, would_be) = store.preview_instance(applied)?;
        print_outcome(obj, outcome, " (dry run)");
        if let (Some(reconciler), Some(would_be)) = (&reconciler, would_be) {
            let phase = would_be.desired_phase();
            let dry = reconciler.preview(would_be.clone()).await?;
            let capped = keep_cap_preview(&store, &dry, &would_be)?;
            print!(
                "{}",
                crate::output::dry_run(obj.name(), phase, &dry, &capped, false)
            );
        }
    }
    if let Some(source) = source {
        for name in store.still_pruning(objects, source)? {
            println!("instance/{name} pruned earlier; its purge would go on (dry run)");
        }
        for gone in store.prunable(objects, source)? {
            println!(
                "{}/{} would be pruned (dry run)",
                gone.kind.to_lowercase(),
                gone.name
            );
            if let (Some(reconciler), "Instance") = (&reconciler, gone.kind) {
                let dry = reconciler
                    .dry_run(&gone.name, jackin_api::DesiredPhase::Purged)
                    .await?;
                print!(
                    "{}",
                    crate::output::dry_run(
                        &gone.name,
                        jackin_api::DesiredPhase::Purged,
                        &dry,
                        &[],
                        false
                    )
                );
            }
        }
    }
    Ok(())
}

/// Exit status of `jackin diff`, as `kubectl diff`: 1 when something
/// differs.
pub struct Differs;

impl std::fmt::Display for Differs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the files differ from what is applied")
    }
}

impl std::fmt::Debug for Differs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        std::fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Differs {}

/// `jackin diff`: a unified diff per object of what an apply would change
/// in its labels, annotations and spec, computed by the apply's own merge.
pub fn diff(store: &Store, args: &DiffArgs) -> Result<()> {
    let paths: Vec<PathBuf> = args.files.iter().chain(&args.paths).cloned().collect();
    let inputs = read_inputs(&paths)?;
    let read = match source::parse_each(&inputs) {
        Ok(read) => read,
        Err(invalid) => return Err(every_error(invalid, &inputs, Some(store))),
    };
    let source = source_of(&paths, args.prune)?;
    let objects = objects_to_apply(store, read, source.as_ref())?;
    let mut out = String::new();
    for change in store.diff_objects(&objects, source.as_ref())? {
        if !change.changed() {
            continue;
        }
        let path = format!("{}/{}", change.kind.to_lowercase(), change.name);
        let text = similar::TextDiff::from_lines(&change.before, &change.after)
            .unified_diff()
            .context_radius(3)
            .header(&format!("a/{path}"), &format!("b/{path}"))
            .to_string();
        out.push_str(&crate::output::terminal_safe_lines(&text));
    }
    let differs = !out.is_empty();
    std::io::stdout().write_all(out.as_bytes())?;
    match differs {
        true => Err(Differs.into()),
        false => Ok(()),
    }
}

/// The input's own errors, and what the store would refuse of what could
/// be read of it despite them (see [`Store::refusals_despite_errors`]):
/// every error in one run. A store that cannot be opened leaves the
/// input's own errors to say.
fn every_error(mut invalid: Invalid, inputs: &[Input], store: Option<&Store>) -> anyhow::Error {
    let refusals = store.and_then(|store| store.refusals_despite_errors(inputs).ok());
    invalid.0.extend(refusals.unwrap_or_default());
    invalid.into()
}

/// Invalid input, for `main` to print a line per problem.
pub fn invalid(err: &anyhow::Error) -> Option<&Invalid> {
    err.chain()
        .find_map(|cause| match cause.downcast_ref::<SourceError>() {
            Some(SourceError::Invalid(invalid)) => Some(invalid),
            _ => cause.downcast_ref::<Invalid>(),
        })
}
