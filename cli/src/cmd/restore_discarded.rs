//! `jackin restore-discarded NAME`: the unfinished work jackin saved before
//! it discarded isolated checkouts brought back as branches in the host
//! repositories, or with `--session` the removed session made again (see
//! `jackin_checkouts::discard`).

use std::path::Path;

use anyhow::Result;
use jackin_api::instance::Conversation;
use jackin_api::{DesiredPhase, Instance, ObjectMeta};
use jackin_checkouts::discard;
use jackin_checkouts::saved_session;
use jackin_controller::engines::Engines;
use jackin_controller::{Reconciler, Store, StoreError};

use crate::args::{UsageError, WaitArgs};
use crate::output;
use crate::select::{Kind, split_kind};

/// `jackin restore-discarded NAME [--to DIR] [--mount DST]`: NAME is a
/// save's name (`discarded/NAME`, as `get discarded -o name` prints it) or
/// its instance's (`instance/NAME`).
pub fn restore(store: &Store, arg: &str, to: Option<&Path>, mount: Option<&str>) -> Result<()> {
    let name = save_name_of(arg)?;
    let to = to.map(std::path::absolute).transpose()?;
    let lines = discard::restore(store.layout(), name, to.as_deref(), mount)?;
    for line in lines {
        println!("{}", output::terminal_safe(&line));
    }
    Ok(())
}

/// `jackin restore-discarded NAME --session [--name NEW]`: the removed
/// session made again, as a new instance (named NEW, else as it was) with
/// the saved spec, its agent's saved state in the new unit's home and its
/// conversation's record, so that its first start resumes the
/// conversation. Saved checkout work comes back into the new unit's own
/// checkouts (a clone or worktree the spec mounts at the same place, made
/// before its container first starts; a worktree on the saved base) and as
/// branches in the host repositories, as without `--session`; the save is
/// marked restored. The new session then runs,
/// as after `apply` (unless `--no-wait`: a running controller starts it).
pub async fn restore_session(
    store: Store,
    arg: &str,
    new_name: Option<&str>,
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    let name = save_name_of(arg)?;
    // Converging needs the engine: connected before anything is written.
    let engines = match wait.no_wait {
        true => None,
        false => Some(crate::context::connect().await?),
    };
    let name = make_session_again(&store, name, new_name, engines.is_some())?;
    if let Some(engines) = engines {
        let names = [name.clone()];
        crate::context::converge_and_report(store, engines, &names, wait, verbose).await?;
    }
    println!("`jackin attach {name}` attaches to it");
    Ok(())
}

/// The instance of the save `name` made again (named `new_name`, else as
/// it was), with its conversation; returns its name. `starts_here`: this
/// command starts it, so a login it takes by token must be in this
/// command's environment, or nothing is made.
fn make_session_again(
    store: &Store,
    name: &str,
    new_name: Option<&str>,
    starts_here: bool,
) -> Result<String> {
    let layout = store.layout();
    let save = discard::find(layout, name)?;
    let Some(session) = save.session.clone() else {
        anyhow::bail!(
            "{} saved no session, only checkout work (saved before conversations were, or its \
             workspace has saveConversations: false)\nhint: `jackin restore-discarded {0}` \
             brings the work back",
            save.name
        );
    };
    let name = new_name.unwrap_or(&save.instance);
    crate::context::check_name(name)?;
    let mut spec = session.spec.clone();
    spec.phase = DesiredPhase::Running;
    let obj = Instance {
        api_version: jackin_api::API_VERSION.into(),
        kind: Instance::KIND.into(),
        metadata: ObjectMeta {
            name: name.to_owned(),
            ..Default::default()
        },
        spec,
        status: None,
    };
    if starts_here {
        check_logins(store, &obj)?;
    }
    // The record of starts goes on; what was read of the old unit's start
    // report does not apply to the new unit's.
    let conversation = session.conversation.clone().map(|c| Conversation {
        report_modified: None,
        start_settles_at: None,
        ..c
    });
    let dir = discard::save_dir(layout, &save.name);
    let mut restored = 0;
    let mut checkouts = Vec::new();
    let created = store.create_instance_with(&obj, |obj, container| {
        obj.status.get_or_insert_default().conversation = conversation;
        let home = layout.unit_home_dir(container);
        restored =
            saved_session::restore_into(&dir, &home).map_err(|e| StoreError::io(&home, e))?;
        // The saved checkouts' work in the new unit's own checkouts, made
        // now: no container binds them yet.
        checkouts = discard::restore_into_unit(layout, &save.name, container, &obj.spec.mounts)
            .map_err(|e| StoreError::io(&dir, std::io::Error::other(e.to_string())))?;
        Ok(())
    })?;
    if !created {
        anyhow::bail!("instance/{name} exists\nhint: name the session made again with --name NEW");
    }
    let what = session.path.as_deref().unwrap_or("no state path");
    println!(
        "instance/{name} created from {}: {what} ({restored} files and links) and its \
         conversation's record; its first start resumes the conversation",
        save.name
    );
    let mut lines = checkouts;
    if !save.checkouts.is_empty() {
        lines.extend(discard::restore(layout, &save.name, None, None)?);
    }
    let into = discard::RestoredInto::Session {
        instance: name.to_owned(),
    };
    if let Err(e) = discard::mark_restored(layout, &save.name, into) {
        lines.push(format!("warning: the save was not marked restored: {e}"));
    }
    for line in lines {
        println!("{}", output::terminal_safe(&line));
    }
    Ok(name.to_owned())
}

/// Refuses to make `obj` again when the start this command makes would
/// find a token login missing from its environment (see
/// [`crate::ops::logins`]), before anything is written.
fn check_logins(store: &Store, obj: &Instance) -> Result<()> {
    let reconciler = Reconciler::new(store.clone(), Engines::new(None));
    // The recipe as it would be pinned: the container's name only names
    // its network, nothing its logins depend on.
    let mut probe = obj.clone();
    probe.status.get_or_insert_default().container_name = Some(obj.metadata.name.clone());
    match reconciler.wanted_recipe(&probe)? {
        Some(recipe) => crate::ops::logins::check_token_keys_of(obj, &recipe),
        None => Ok(()),
    }
}

/// The save's (or instance's) name in `arg`: `discarded/NAME`,
/// `instance/NAME` or `NAME`.
fn save_name_of(arg: &str) -> Result<&str> {
    match split_kind(arg)? {
        (None | Some(Kind::Discarded | Kind::Instance), name) => Ok(name),
        (Some(kind), _) => Err(UsageError(format!(
            "{arg:?} is a {}: restore-discarded takes a save's or an instance's name",
            kind.word()
        ))
        .into()),
    }
}
