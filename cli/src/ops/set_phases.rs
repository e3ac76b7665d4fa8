//! Setting the desired phase of instances and converging them: what
//! `set-phase`, `delete`, `prune --failed-after` and `jackin top`'s keys
//! do alike. A resume shows Screen D first on a terminal; a purge shows the
//! unfinished work it would discard and asks, or takes `--force` as the
//! answer.

use anyhow::Result;
use jackin_api::names::annotation;
use jackin_api::{DesiredPhase, Instance};
use jackin_checkouts::assess::acknowledgement_digest;
use jackin_controller::engines::Engines;
use jackin_controller::reconcile::{assess_checkouts, made_on_engine};
use jackin_controller::{Reconciler, Store};

use crate::args::WaitArgs;
use crate::context::{
    Cancelled, connect, converge_and_report, keep_cap_preview, sweep_files_quietly,
};
use crate::ops::attach::resumes;
use crate::ops::logins;
use crate::ops::preserved::verify_preserved_state;
use crate::output;
use crate::screens::Answer;
use crate::terminal::Keyboard;

/// A change of the desired phase of some instances, and how to make it.
pub struct PhaseChange<'a> {
    /// Opened to change.
    pub store: Store,
    /// The instances to change, each read now (they exist).
    pub instances: &'a [Instance],
    pub phase: DesiredPhase,
    /// Show the loop's decision for each, and change nothing.
    pub dry_run: bool,
    /// A purge discards unfinished work without asking (it is shown and
    /// acknowledged).
    pub force: bool,
    /// How long to wait for the convergence, and whether to.
    pub wait: &'a WaitArgs,
    /// `-v`: the convergence's progress shown step by step.
    pub verbose: bool,
    /// When there is an operator to ask: it answers Screen D before a
    /// resume and the question before a purge discards unfinished work.
    pub keyboard: Option<&'a mut Keyboard>,
}

/// Sets the desired phase of each of the change's instances, then
/// converges them together.
pub async fn set_phases(change: PhaseChange<'_>) -> Result<()> {
    let PhaseChange {
        store,
        instances: current,
        phase,
        dry_run,
        force,
        wait,
        verbose,
        mut keyboard,
    } = change;
    // Converging needs the engine: connect before writing anything, so a
    // command that cannot converge leaves the store as it was. A purge may
    // need none (see `engines_for_purge`).
    let engines = match (wait.no_wait && !dry_run, phase) {
        (true, _) => None,
        (false, DesiredPhase::Purged) if !dry_run => Some(engines_for_purge(current).await?),
        (false, _) => Some(connect().await?),
    };
    if dry_run {
        let reconciler = Reconciler::new(store, engines.expect("connected for a dry run"));
        for obj in current {
            let name = &obj.metadata.name;
            let dry = reconciler.dry_run(name, phase).await?;
            let capped = keep_cap_preview(&reconciler.store, &dry, obj)?;
            print!("{}", output::dry_run(name, phase, &dry, &capped, force));
        }
        return Ok(());
    }
    // Before anything is written: a resume that would start an agent
    // logged out is refused.
    if phase == DesiredPhase::Running {
        for obj in current.iter().filter(|obj| resumes(obj)) {
            logins::check_token_keys(obj)?;
        }
    }
    sweep_files_quietly(&store)?;
    if phase == DesiredPhase::Purged {
        for obj in current {
            acknowledge_discard(&store, obj, force, keyboard.as_deref_mut()).await?;
        }
    }
    // Esc on Screen D leaves that one as it is.
    let mut names = Vec::with_capacity(current.len());
    for obj in current {
        let name = &obj.metadata.name;
        if let Some(keyboard) = keyboard.as_deref_mut()
            && phase == DesiredPhase::Running
            && resumes(obj)
        {
            match verify_preserved_state(&store, obj, keyboard).await? {
                Answer::Chose(_) => {}
                Answer::Back => {
                    eprintln!("instance/{name} not resumed: it is unchanged");
                    continue;
                }
                Answer::Abort => {
                    return Err(Cancelled(format!("instance/{name} is unchanged")).into());
                }
            }
        }
        let outcome = match phase {
            DesiredPhase::Running => jackin_controller::session::resume(&store, name, None)?,
            _ => store.set_phase(name, phase)?,
        };
        println!(
            "instance/{name} {} (desired phase {phase}, was {})",
            outcome.as_str(),
            obj.desired_phase()
        );
        names.push(name.clone());
    }
    match engines {
        Some(engines) => converge_and_report(store, engines, &names, wait, verbose).await,
        None => Ok(()),
    }
}

/// The engines a purge of `current` converges with: the default one
/// connected first, as for any command that converges, so that an engine
/// that does not answer leaves the store as it was. Unless the purge can do
/// without it: when no instance ever made anything on an engine, or the
/// default engine is named so that it can never be reached, the instances
/// are purged without it (the loop connects each one's engine when its
/// purge needs it, and says what is left behind there).
async fn engines_for_purge(current: &[Instance]) -> Result<Engines> {
    let connecting = async { Ok(jackin_engine::Engine::connect().await) };
    match crate::deadline::bounded(connecting).await? {
        Ok(engine) => Ok(Engines::new(Some(engine))),
        Err(e) if e.is_permanent() || !current.iter().any(made_on_engine) => {
            eprintln!("note: {e}; purging without it");
            Ok(Engines::new(None))
        }
        Err(e) => Err(e.into()),
    }
}

/// The operator declined a purge that would discard unfinished work:
/// nothing changed. An answer, not a failure: `jackin top` says it was
/// cancelled.
#[derive(Debug)]
pub struct NotPurged(pub String);

impl std::fmt::Display for NotPurged {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not purged: instance/{} is unchanged", self.0)
    }
}

impl std::error::Error for NotPurged {}

/// Shows the unfinished work a purge would discard and, when the operator
/// agrees (`--force`, or yes at the prompt on a terminal), acknowledges it by
/// its digest. Without agreement the purge stays blocked.
async fn acknowledge_discard(
    store: &Store,
    obj: &Instance,
    force: bool,
    keyboard: Option<&mut Keyboard>,
) -> Result<()> {
    let container = obj.container_name().map(str::to_owned).unwrap_or_default();
    let mounts = assess_checkouts(store.layout(), &container).await?;
    let Some(digest) = acknowledgement_digest(&mounts) else {
        return Ok(());
    };
    let name = &obj.metadata.name;
    eprintln!("instance/{name} has unfinished work in its isolated checkouts:");
    eprint!("{}", output::mounts_evidence(&mounts));
    if force {
        store.set_annotation(name, annotation::ACKNOWLEDGE_DISCARD, Some(&digest))?;
        eprintln!("acknowledged (digest {digest})");
        return Ok(());
    }
    let Some(keyboard) = keyboard else {
        // Nobody to ask: the purge is recorded and stays blocked until
        // acknowledged, which the caller reports.
        return Ok(());
    };
    eprint!(
        "Discard this work and purge? It is saved first and kept for {} (`jackin get \
         discarded`, `jackin restore-discarded {name}`). [y/N] ",
        crate::ops::discarded::retention_of(store)
    );
    let answer = keyboard.line().await;
    if keyboard.interrupted() {
        return Err(Cancelled(format!("instance/{name} is unchanged")).into());
    }
    if !matches!(answer.unwrap_or_default().trim(), "y" | "Y" | "yes") {
        // The operator said no: nothing changes, not even the desired phase.
        return Err(NotPurged(name.clone()).into());
    }
    store.set_annotation(name, annotation::ACKNOWLEDGE_DISCARD, Some(&digest))?;
    eprintln!("acknowledged (digest {digest})");
    Ok(())
}
