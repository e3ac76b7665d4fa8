//! Before a one-shot command starts a kept or ended session again: under
//! `authForward: token` its logins come from the environment of whoever
//! starts it, so a resume from a shell without them would start the agent
//! logged out, silently. Such a resume is refused, naming what is missing
//! and what the session's last start had, before anything changes.

use anyhow::{Result, bail};
use jackin_act::credentials;
use jackin_api::Instance;
use jackin_api::credentials::{AuthForward, PinnedCredentials};
use jackin_api::instance::Recipe;
use jackin_plan::recipe::runs_agent_program;

/// Refuses to resume `obj` from here when a token its start needs is not
/// in this process's environment. Sessions under `sync` or `none`, and a
/// command that is not the agent's own program (it needs no login of the
/// agent's), pass.
pub fn check_token_keys(obj: &Instance) -> Result<()> {
    match obj.recipe() {
        Some(recipe) => check_token_keys_of(obj, recipe),
        None => Ok(()),
    }
}

/// As [`check_token_keys`], for a session about to start from `recipe`
/// (one not pinned yet: a session made again from a save).
pub fn check_token_keys_of(obj: &Instance, recipe: &Recipe) -> Result<()> {
    let Some(pinned) = &recipe.credentials else {
        return Ok(());
    };
    if pinned.mode != AuthForward::Token {
        return Ok(());
    }
    let not_needed = recipe
        .agent
        .as_ref()
        .filter(|a| !runs_agent_program(&recipe.command, &a.spec.launch))
        .map(|a| a.name.as_str());
    let needed = PinnedCredentials {
        sets: pinned
            .sets
            .iter()
            .filter(|set| Some(set.name.as_str()) != not_needed)
            .cloned()
            .collect(),
        ..pinned.clone()
    };
    let set_by_spec: Vec<String> = obj.spec.env.iter().map(|v| v.name.clone()).collect();
    let missing = credentials::resolve_env(&needed, &set_by_spec).missing;
    if missing.is_empty() {
        return Ok(());
    }
    let had = obj
        .status
        .as_ref()
        .and_then(|s| s.credentials.as_ref())
        .map(|c| c.env.join(", "))
        .filter(|had| !had.is_empty())
        .map_or_else(String::new, |had| format!(" (its last start had {had})"));
    bail!(
        "instance/{} logs in by token (authForward: token), from the environment of whoever \
         starts it, and this one lacks it: {}{had}; nothing was started, so that its agent does \
         not start logged out\nhint: resume it from a shell that has the variable, as the one \
         it was launched from had; or set authForward: sync",
        obj.metadata.name,
        missing.join("; ")
    )
}
