//! What goes into the unit's home before a start, in the one writing order
//! (docs/ARCHITECTURE.md): the operator's agent setup, then the logins.

use jackin_api::credentials::AuthForward;
use jackin_api::instance::{CredentialsStatus, Instance};
use jackin_api::names::reason;
use jackin_plan::recipe::runs_agent_program;

use super::context::{Context, Report, recipe_of};
use super::error::ActError;
use crate::credentials;
use crate::operator_config;
use jackin_files::offload::blocking;

/// Copies the operator's own agent setup into the unit's home before it
/// starts (`operatorConfig: sync`), and says what went and what was
/// refused, by name.
pub(super) async fn copy_operator_config(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let host = ctx.credentials_home.clone();
    let notes = operator_config::before_start(ctx.layout, host, container, obj, ctx.agent).await;
    for note in notes {
        progress(Report::Note {
            stage: None,
            reason: note.reason,
            message: &note.message,
        });
    }
    Ok(())
}

/// The status's record of the credential hand-off, made for `mode` if the
/// session has none yet.
pub(super) fn credentials_record(obj: &mut Instance, mode: AuthForward) -> &mut CredentialsStatus {
    let record = obj
        .status
        .get_or_insert_default()
        .credentials
        .get_or_insert_with(|| CredentialsStatus {
            mode,
            ..Default::default()
        });
    record.mode = mode;
    record
}

/// Copies the logins the recipe forwards into the unit's home, before the
/// container starts (nothing of the agent runs then), records what went
/// and what did not, and reports it line by line: the names, never a value.
pub(super) async fn forward_credentials(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let Some(pinned) = recipe_of(obj)
        .credentials
        .clone()
        .filter(jackin_api::credentials::PinnedCredentials::forwards_anything)
    else {
        return Ok(());
    };
    let home = ctx.layout.unit_home_dir(container);
    let host = ctx.credentials_home.clone();
    let mode = pinned.mode;
    let files = blocking(move || {
        credentials::forward_files(&pinned, host.as_deref().map_err(String::as_str), &home)
    })
    .await?;
    // A session that runs another program than its agent's (`sleep`)
    // needs no login of the agent's: one missing is no news (`describe`
    // still lists it).
    let recipe = recipe_of(obj);
    let unneeded = recipe
        .agent
        .as_ref()
        .filter(|a| !runs_agent_program(&recipe.command, &a.spec.launch))
        .map(|a| format!("{}: ", a.name));
    let record = credentials_record(obj, mode);
    record.files = files.files;
    record.files_missing = files.missing;
    for note in credentials::notes(record) {
        let no_news = note.reason == reason::CREDENTIALS_MISSING
            && unneeded
                .as_deref()
                .is_some_and(|own| note.message.starts_with(own));
        if no_news {
            tracing::debug!(container, "{}", note.message);
            continue;
        }
        progress(Report::Note {
            stage: None,
            reason: note.reason,
            message: &note.message,
        });
    }
    Ok(())
}
