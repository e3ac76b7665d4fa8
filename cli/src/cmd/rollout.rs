//! `jackin rollout NAME…`: move sessions onto their current spec, keeping
//! each one's unit (home, conversation, checkouts, volumes). Restores
//! replay the pinned recipe; this pins it again, on purpose.

use std::fmt::Write as _;

use anyhow::{Result, bail};
use jackin_api::names::annotation;
use jackin_api::{DesiredPhase, Instance};
use jackin_controller::Reconciler;
use jackin_controller::reconcile::assess_checkouts;
use jackin_plan::rollout::{self, Allowed};
use jiff::Timestamp;

use crate::args::WaitArgs;
use crate::context::{connect, converge_and_report, open_store_to_change};
use crate::select::Targets;

pub async fn run(
    targets: &Targets<'_>,
    dry_run: bool,
    allowed: Allowed,
    wait: &WaitArgs,
    verbose: bool,
) -> Result<()> {
    let store = open_store_to_change()?;
    let current = targets.existing(&store)?;
    if current.is_empty() {
        return Ok(());
    }
    // The request is checked (and a dry run decided) against the engine:
    // connect before writing anything.
    let engines = connect().await?;
    let reconciler = Reconciler::new(store.clone(), engines.clone());
    let requested = Timestamp::now().to_string();
    let mut refused = Vec::new();
    let mut asked = Vec::new();
    for obj in &current {
        let name = &obj.metadata.name;
        let pinned = obj.recipe();
        let (Some(pinned), Some(wanted)) = (pinned, reconciler.wanted_recipe(obj)?) else {
            println!(
                "instance/{name} has no pinned recipe yet: its first launch pins the current spec"
            );
            continue;
        };
        let container = obj.container_name().map(str::to_owned).unwrap_or_default();
        let mounts = assess_checkouts(store.layout(), &container).await?;
        if let Some(why) = rollout::refusal(pinned, &wanted, &mounts, allowed) {
            eprintln!("error: instance/{name} cannot be rolled out: {why}");
            refused.push(name.clone());
            continue;
        }
        if dry_run {
            let mut stamped = obj.clone();
            stamp(&mut stamped, &requested, allowed);
            let plans = reconciler.preview_rollout(stamped).await?;
            print!("{}", render(name, &rollout::diff(pinned, &wanted), &plans));
            if obj.desired_phase() != DesiredPhase::Running {
                println!(
                    "(it is {}: the new spec would be pinned at its next start)",
                    obj.desired_phase()
                );
            }
            continue;
        }
        // What it allows is stamped first: a controller that sees the
        // request sees whether it may move, or start a new conversation.
        for key in allowances(allowed) {
            store.set_annotation(name, key, Some(&requested))?;
        }
        store.set_annotation(name, annotation::ROLLOUT, Some(&requested))?;
        // A rollout is the operator trying again: failures counted toward
        // giving up no longer count, as after a resume.
        if obj.failures().is_some() {
            store.request_resume(name)?;
        }
        match obj.desired_phase() {
            DesiredPhase::Running => {
                println!("instance/{name} rollout requested ({requested})");
            }
            phase => println!(
                "instance/{name} rollout requested ({requested}); it is {phase}: the new spec is \
                 pinned at its next start (`jackin set-phase {name} running`)"
            ),
        }
        asked.push(name.clone());
    }
    if !dry_run {
        converge_and_report(store.clone(), engines, &asked, wait, verbose).await?;
        if !wait.no_wait {
            for name in &asked {
                report(&store.get_instance(name)?, &requested, &mut refused);
            }
        }
    }
    match refused.as_slice() {
        [] => Ok(()),
        names => bail!(
            "not rolled out: {}; each runs on as pinned",
            names
                .iter()
                .map(|n| format!("instance/{n}"))
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}

/// The annotations that say what the request allows, each stamped with the
/// request's time.
fn allowances(allowed: Allowed) -> impl Iterator<Item = &'static str> {
    [
        (allowed.moving, annotation::ROLLOUT_MOVE),
        (
            allowed.new_conversation,
            annotation::ROLLOUT_NEW_CONVERSATION,
        ),
    ]
    .into_iter()
    .filter_map(|(asked, key)| asked.then_some(key))
}

/// The request as `rollout` stamps it.
fn stamp(obj: &mut Instance, requested: &str, allowed: Allowed) {
    let annotations = &mut obj.metadata.annotations;
    annotations.insert(annotation::ROLLOUT.to_owned(), requested.to_owned());
    for key in allowances(allowed) {
        annotations.insert(key.to_owned(), requested.to_owned());
    }
}

/// How the loop handled the request, said once it converged.
fn report(obj: &Instance, requested: &str, refused: &mut Vec<String>) {
    let name = &obj.metadata.name;
    let status = obj.status.as_ref();
    let handled = status
        .and_then(|s| s.rollout.as_ref())
        .filter(|r| r.requested == requested);
    let Some(record) = handled else {
        return;
    };
    match &record.refused {
        Some(why) => {
            eprintln!("error: instance/{name} was not rolled out: {why}");
            refused.push(name.clone());
        }
        None => {
            let tier = status
                .and_then(|s| s.restore.as_ref())
                .filter(|r| r.at >= record.at)
                .map(|r| format!(", tier {}", r.tier))
                .unwrap_or_default();
            let kept = match record.new_conversation {
                false => "its unit and conversation kept",
                true => {
                    "its unit kept; the agent's conversation starts anew (the old one stays in \
                     the unit's home)"
                }
            };
            println!("instance/{name} rolled out{tier}: {kept}");
        }
    }
}

/// A dry run: what changes, then the plan of each round.
fn render(name: &str, changes: &[String], plans: &[jackin_plan::plan::Plan]) -> String {
    let mut out = format!("instance/{name} rollout would (dry run):\n");
    match changes {
        [] => out.push_str("  change nothing in the spec (the recipe is pinned again as it is)\n"),
        lines => {
            for line in lines {
                let _ = writeln!(out, "  change {}", crate::output::terminal_safe(line));
            }
        }
    }
    for (round, plan) in plans.iter().enumerate() {
        let lead = if round == 0 { "then" } else { "and then" };
        let _ = write!(out, "{lead} {}", plan.render());
    }
    out
}
