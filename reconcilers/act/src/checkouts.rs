//! The isolated checkouts' steps: made or verified before a container binds
//! them, retired after a rollout, removed (their unfinished work saved
//! first) and the conversation saved before a purge.

use jackin_api::instance::Instance;
use jackin_api::names::reason;
use jackin_api::workspace::WorkspaceSpec;

use super::container;
use super::context::{Context, Report, recipe_of};
use super::error::ActError;
use jackin_checkouts::discard;
use jackin_checkouts::isolation;
use jackin_files::offload::blocking;

/// Makes or verifies the isolated checkouts the container binds. A stopped
/// container of the unit that binds the earlier form of a checkout moved
/// since is made anew.
pub(super) async fn prepare(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let mounts = recipe_of(obj).mounts.clone();
    let (layout, unit) = (ctx.layout.clone(), container.to_owned());
    // What was prepared is told now, and not kept across the awaits below.
    let moved = {
        let prepared = blocking(move || isolation::prepare(&layout, &unit, &mounts)).await?;
        for (dst, included) in &prepared.included {
            if let Some(line) = included.summary(dst) {
                progress(Report::Note {
                    stage: None,
                    reason: reason::FILES_INCLUDED,
                    message: &line,
                });
            }
        }
        prepared.moved
    };
    if moved && ctx.engine.inspect_container(container).await?.is_some() {
        // A stopped container of the unit binds the earlier form's
        // git directory and entry, which are gone: it is made anew
        // (tier 2 in all but name), never started as it was.
        progress(Report::Note {
            stage: None,
            reason: reason::CHECKOUTS_MOVED,
            message: "the unit's worktree checkouts moved to repositories of their own: \
                      its container, which bound their earlier form, is made anew",
        });
        ctx.engine.remove_container(container).await?;
        container::create_and_record(ctx, obj, container).await?;
    }
    Ok(())
}

/// While no session runs (its end, before a start, before the checkouts
/// go), nothing writes the unit's worktree repositories: their branches
/// reach the host repositories as they are (`Step::PublishCheckouts`). A
/// publication that cannot be made (the operator moved the branch, the
/// agent's branch names what is not its own) stops nothing: it is an
/// event, and the work stays in the unit.
pub(super) async fn publish(
    ctx: &Context<'_>,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let (layout, unit) = (ctx.layout.clone(), container.to_owned());
    let refused = blocking(move || {
        let records = isolation::read_records(&layout, &unit)?;
        Ok::<_, ActError>(
            records
                .iter()
                .filter(|r| r.scratch_branch.is_some())
                .filter_map(|record| isolation::publish(record).err())
                .map(|e| e.to_string())
                .collect::<Vec<_>>(),
        )
    })
    .await?;
    for why in refused {
        tracing::warn!(container, "{why}");
        progress(Report::Note {
            stage: None,
            reason: reason::PUBLICATION_REFUSED,
            message: &why,
        });
    }
    Ok(())
}

/// After a rollout, once the container that bound them is gone (nothing
/// writes them now): retires the checkouts the new recipe binds otherwise.
/// What they hold unfinished is saved first, as for any discard, though a
/// rollout refuses to retire unfinished work.
pub(super) async fn retire(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let mounts = recipe_of(obj).mounts.clone();
    let layout = ctx.layout.clone();
    let instance = obj.metadata.name.clone();
    let unit = container.to_owned();
    let (saved, retired) = blocking(move || {
        let stale = |record: &isolation::IsolationRecord| {
            !mounts.iter().any(|m| {
                m.dst == record.dst && m.src == record.src && m.isolation == record.isolation
            })
        };
        let retired: Vec<String> = isolation::read_records(&layout, &unit)?
            .iter()
            .filter(|record| stale(record))
            .map(|record| record.dst.clone())
            .collect();
        let saved = discard::save_where(&layout, &unit, &instance, stale)
            .map_err(|e| ActError::Discard(Box::new(e)))?;
        isolation::remove_where(&layout, &unit, stale)?;
        Ok::<_, ActError>((saved, retired))
    })
    .await?;
    for dst in &retired {
        let message = match saved.checkouts.iter().find(|c| &c.dst == dst) {
            Some(checkout) => format!(
                "retired the isolated checkout of {dst}, which the new spec binds \
                 otherwise; its unfinished work was saved first: {}; `jackin \
                 restore-discarded {}` brings it back",
                checkout.summary(),
                saved.save
            ),
            None => format!(
                "retired the clean isolated checkout of {dst}, which the new spec binds \
                 otherwise"
            ),
        };
        progress(Report::Note {
            stage: None,
            reason: reason::ROLLED_OUT,
            message: &message,
        });
    }
    Ok(())
}

/// Saves the agent's conversation under `discarded/`, unless the
/// workspace said no: it stays recoverable.
pub(super) async fn save_conversation(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    if !ctx.workspace.is_none_or(WorkspaceSpec::saves_conversations) {
        return Ok(());
    }
    let (layout, snapshot) = (ctx.layout.clone(), obj.clone());
    let unit = container.to_owned();
    let told = blocking(move || discard::save_session(&layout, &unit, &snapshot)).await?;
    if let Some(message) = told {
        progress(Report::Note {
            stage: None,
            reason: reason::CONVERSATION_SAVED,
            message: &message,
        });
    }
    Ok(())
}

/// Removes the isolated checkouts. Every discard comes here: the
/// unfinished work is saved first, and nothing is deleted unless the save
/// succeeded.
pub(super) async fn remove(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let layout = ctx.layout.clone();
    let name = obj.metadata.name.clone();
    let instance = name.clone();
    let unit = container.to_owned();
    let (saved, kept) = blocking(move || {
        let saved = discard::save_before_discard(&layout, &unit, &instance)?;
        let kept = isolation::remove_all(&layout, &unit)?;
        Ok::<_, ActError>((saved, kept))
    })
    .await?;
    for checkout in &saved.checkouts {
        let message = format!(
            "saved the unfinished work of {} before discarding it: {}; `jackin \
             restore-discarded {}` brings it back",
            checkout.dst,
            checkout.summary(),
            saved.save
        );
        progress(Report::Note {
            stage: None,
            reason: reason::DISCARD_SAVED,
            message: &message,
        });
    }
    for branch in kept {
        tracing::warn!(
            instance = name,
            "kept the scratch branch {branch}: it holds commits no other ref has; \
             delete it with `git branch -D` once you no longer need them"
        );
    }
    Ok(())
}
