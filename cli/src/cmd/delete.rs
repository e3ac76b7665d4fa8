//! `jackin delete NAME`: a purge, as `set-phase NAME purged`; for a name
//! jackin ended and cleaned up (only its record is left), forgetting that.
//! `jackin delete workspace|agent NAME` deletes a policy object, and
//! `jackin delete discarded/NAME` a save of discarded work before it
//! expires.

use std::io::IsTerminal;

use anyhow::{Result, bail};
use jackin_api::agent::builtin;
use jackin_api::{Agent, DesiredPhase, Workspace};
use jackin_checkouts::discard;
use jackin_controller::StoreError;

use crate::args::UsageError;
use crate::args::{SelectArgs, WaitArgs};
use crate::context::{check_name, open_store, open_store_to_change};
use crate::ops::discarded;
use crate::ops::set_phases::{PhaseChange, set_phases};
use crate::select::Targets;
use crate::terminal::Keyboard;

/// `delete workspace|agent NAME`, or instances by name, `-l` or `-f`.
pub async fn dispatch(
    targets: &[String],
    select: &SelectArgs,
    dry_run: bool,
    force: bool,
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    let saves: Option<Vec<&str>> = targets
        .iter()
        .map(|t| t.strip_prefix("discarded/"))
        .collect();
    match targets {
        [kind, name] if kind == "discarded" => discarded(&[name.as_str()], dry_run),
        [_, ..] if let Some(saves) = &saves => discarded(saves, dry_run),
        [kind, name] if matches!(kind.as_str(), "workspace" | "ws") => workspace(name, dry_run),
        [kind, name] if matches!(kind.as_str(), "agent" | "ag") => agent(name, dry_run),
        [kind, ..] if matches!(kind.as_str(), "workspace" | "ws" | "agent" | "ag") => {
            Err(UsageError(format!(
                "`delete {kind}` takes one name: delete {kind} NAME"
            ))
            .into())
        }
        names => run(&Targets::new(names, select), dry_run, force, wait, verbose).await,
    }
}

async fn run(
    targets: &Targets<'_>,
    dry_run: bool,
    force: bool,
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    let store = open_store()?;
    let selected = targets.resolve(&store)?;
    if selected.is_empty() {
        eprintln!("No instances found.");
        return Ok(());
    }
    // No instance, only the record of one jackin ended: deleting it is
    // forgetting that, so the same manifest starts anew. Every other name
    // must be an instance before anything is written.
    let mut current = Vec::new();
    let mut forget = Vec::new();
    for name in &selected.instances {
        // A purge killed after its object went: finishing it is the delete.
        if !dry_run && store.finish_interrupted_purge(name)? {
            println!("instance/{name} purged (an interrupted purge, finished)");
            continue;
        }
        match store.get_instance(name) {
            Ok(obj) => current.push(obj),
            Err(StoreError::InstanceNotFound(_)) if store.has_ended(name)? => {
                forget.push(name.clone());
            }
            // What a file holds may be gone already: deleting it again is
            // done. A name given on the command line must exist.
            Err(StoreError::InstanceNotFound(_)) if !targets.named(name) => {
                eprintln!("instance/{name}: not found, nothing to delete");
            }
            Err(e) => return Err(e.into()),
        }
    }
    for name in &forget {
        if dry_run {
            println!("instance/{name}: would forget its ended session (dry run)");
        } else if store.forget_ended(name)? {
            println!("instance/{name}: forgot its ended session; applying it starts a new one");
        }
    }
    if !current.is_empty() {
        let store = open_store_to_change()?;
        let mut keyboard = std::io::stdin().is_terminal().then(Keyboard::start);
        set_phases(PhaseChange {
            store,
            instances: &current,
            phase: DesiredPhase::Purged,
            dry_run,
            force,
            wait,
            verbose,
            keyboard: keyboard.as_mut(),
        })
        .await?;
    }
    // What a file holds besides instances goes after them, so its
    // instances fall back to nothing they still use.
    for name in &selected.workspaces {
        match store.get_workspace(name)? {
            Some(_) => workspace(name, dry_run)?,
            None => eprintln!("workspace/{name}: not found, nothing to delete"),
        }
    }
    for name in &selected.agents {
        match store.get::<Agent>(name)? {
            Some(_) => agent(name, dry_run)?,
            None => eprintln!("agent/{name}: not applied, nothing to delete"),
        }
    }
    Ok(())
}

/// `jackin delete discarded/NAME…` (or `discarded NAME`): saves of
/// discarded work removed now rather than when they expire, with the pins
/// they hold in the host repositories. A save is named as `get discarded`
/// names it, or by its instance when that has one.
fn discarded(names: &[&str], dry_run: bool) -> Result<()> {
    let store = if dry_run {
        open_store()?
    } else {
        open_store_to_change()?
    };
    let layout = store.layout();
    let mut found = Vec::with_capacity(names.len());
    for name in names {
        found.push(discard::find(layout, name)?);
    }
    for save in found {
        let what = discarded::saved_what(&save);
        if dry_run {
            println!("discarded/{} would be deleted (dry run): {what}", save.name);
            continue;
        }
        discard::remove(layout, &save.name)?;
        println!("discarded/{} deleted: {what}", save.name);
    }
    Ok(())
}

/// `jackin delete workspace NAME`: its instances stay, and fall back to
/// the defaults (a condition on each says so).
fn workspace(name: &str, dry_run: bool) -> Result<()> {
    check_name(name)?;
    let store = open_store()?;
    let members: Vec<String> = store
        .list_instances()?
        .instances
        .into_iter()
        .filter(|obj| obj.spec.workspace.as_deref() == Some(name))
        .map(|obj| obj.metadata.name)
        .collect();
    if store.get_workspace(name)?.is_none() {
        bail!("workspace {name:?} not found\nhint: `jackin get workspaces` lists them");
    }
    let fallback = match members.len() {
        0 => String::new(),
        n => format!(
            "; its {n} instance(s) ({}) fall back to the defaults: exit policy ask, no keep cap, \
             no workspace mounts",
            members.join(", ")
        ),
    };
    if dry_run {
        println!("workspace/{name} would be deleted (dry run){fallback}");
        return Ok(());
    }
    store.delete::<Workspace>(name)?;
    println!("workspace/{name} deleted{fallback}");
    Ok(())
}

/// `jackin delete agent NAME`: an applied entry goes (a built-in entry of
/// the same name applies again); sessions keep the entry they pinned.
fn agent(name: &str, dry_run: bool) -> Result<()> {
    check_name(name)?;
    let store = open_store()?;
    if store.get::<Agent>(name)?.is_none() {
        match builtin().iter().any(|b| b.metadata.name == name) {
            true => bail!(
                "agent {name:?} is built in and cannot be deleted\nhint: apply an Agent named \
                 {name} to change it"
            ),
            false => bail!("agent {name:?} not found\nhint: `jackin get agents` lists them"),
        }
    }
    let after = match builtin().iter().any(|b| b.metadata.name == name) {
        true => "; the built-in entry applies again",
        false => "",
    };
    let verb = if dry_run {
        "would be deleted (dry run)"
    } else {
        "deleted"
    };
    if !dry_run {
        store.delete::<Agent>(name)?;
    }
    println!("agent/{name} {verb}{after}; running sessions keep the entry they were launched with");
    Ok(())
}
