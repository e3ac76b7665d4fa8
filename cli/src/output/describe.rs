//! `jackin describe instance`: one instance for a person to read, section
//! by section: who it is, what it runs, what it is given, what is kept of
//! it, and what happened to it lately.

use std::collections::BTreeMap;
use std::fmt::Write;

use jackin_api::Instance;
use jackin_api::credentials::{AuthForward, PinnedCredentials};
use jackin_api::instance::{CredentialsStatus, InstanceStatus, Recipe, SettledBy};
use jackin_checkouts::assess::acknowledgement_digest;
use jackin_controller::events::Event;
use jiff::Timestamp;

use super::conversation;
use super::terminal_filter::{terminal_safe, terminal_safe_lines};
use super::{
    age, agent_settings_lines, created, engine_shown, idle_summary, mount_lines, mounts_evidence,
    or_dash, session_summary, table,
};

/// The events shown, the latest.
const EVENTS_SHOWN: usize = 15;

/// The earlier sessions' endings shown, the latest.
const ENDINGS_SHOWN: usize = 5;

/// The human view of one instance: identity, what is asked, what is seen.
/// `updated`: when its index row last changed, if the row says.
pub fn instance(
    obj: &Instance,
    updated: Option<Timestamp>,
    events: &[Event],
    now: Timestamp,
) -> String {
    let status = obj.status_or_default();
    let mut out = String::new();
    identity(&mut out, obj, &status, updated, now);
    what_runs(&mut out, obj, &status, now);
    what_it_is_given(&mut out, obj, &status);
    what_is_kept(&mut out, obj, &status, now);
    conditions_and_events(&mut out, &status, events, now);
    // Values were escaped where they were written; this catches any other.
    terminal_safe_lines(&out)
}

/// One `Key:` line, its value in the column every key's value starts at.
fn field(out: &mut String, key: &str, value: String) {
    let _ = writeln!(out, "{:<18}{value}", format!("{key}:"));
}

/// Name, ids, when it was made and last changed, labels, the engine, and
/// the phases asked and seen.
fn identity(
    out: &mut String,
    obj: &Instance,
    status: &InstanceStatus,
    updated: Option<Timestamp>,
    now: Timestamp,
) {
    field(out, "Name", obj.metadata.name.clone());
    field(out, "UID", or_dash(obj.metadata.uid.as_ref()));
    field(out, "Container", or_dash(status.container_name.as_ref()));
    field(out, "Created", created(&obj.metadata, now));
    if let Some(at) = updated {
        field(out, "Updated", format!("{at} ({} ago)", age(Some(at), now)));
    }
    field(
        out,
        "Generation",
        format!(
            "{} (observed {})",
            or_dash(obj.metadata.generation),
            or_dash(status.observed_generation)
        ),
    );
    let pairs = |map: &BTreeMap<String, String>| match map.is_empty() {
        true => "-".to_owned(),
        false => terminal_safe(
            &map.iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(", "),
        ),
    };
    field(out, "Labels", pairs(&obj.metadata.labels));
    field(out, "Annotations", pairs(&obj.metadata.annotations));
    field(out, "Engine", engine_shown(obj));
    if !status.ports.is_empty() {
        field(out, "Ports", super::ports_shown(obj));
    }
    field(out, "Desired phase", obj.spec.phase.to_string());
    if let Some(settled) = obj.settlement() {
        field(
            out,
            "Settled",
            format!(
                "{} by {} {} ago (stands until the spec changes or `jackin set-phase {} running`)",
                settled.phase,
                match settled.by {
                    SettledBy::ExitPolicy => "the exit policy",
                    SettledBy::Operator => "the operator",
                    SettledBy::KeepCap => "the keep cap",
                    SettledBy::IdleHooks => "the idle hooks",
                },
                age(Some(settled.at), now),
                obj.metadata.name
            ),
        );
    }
    field(out, "Phase", or_dash(status.phase));
}

/// The workspace, role and agent, the conversation, and what the session
/// starts with: credentials, operator config, image, command, directory.
fn what_runs(out: &mut String, obj: &Instance, status: &InstanceStatus, now: Timestamp) {
    let spec = &obj.spec;
    field(out, "Workspace", or_dash(spec.workspace.as_ref()));
    let role_source = spec
        .role
        .source
        .as_ref()
        .map(|s| format!("{} @ {}", s.git, s.git_ref.as_deref().unwrap_or("HEAD")));
    field(
        out,
        "Role",
        format!(
            "{}{}",
            spec.role.name,
            role_source.map(|s| format!(" ({s})")).unwrap_or_default()
        ),
    );
    field(out, "Agent", spec.agent.clone());
    if let Some(conversation) = &status.conversation {
        field(out, "Conversation", conversation::summary(conversation));
        if let Some(ids) = conversation::ids_line(conversation) {
            field(out, "Conversation ids", ids);
        }
    }
    if let Some(warning) = obj.retention_warning(now) {
        field(out, "Warning", warning);
    }
    if let Some(idle) = &status.idle {
        field(out, "Idle", idle_summary(idle, now));
    }
    let recipe = status.recipe.as_ref();
    if let Some(pinned) = recipe.and_then(|r| r.credentials.as_ref()) {
        field(
            out,
            "Credentials",
            credentials_summary(pinned, status.credentials.as_ref()),
        );
    }
    if let Some(setup) =
        recipe.and_then(|r| crate::operator_setup::summary(r, status.operator_config.as_ref()))
    {
        field(out, "Operator config", terminal_safe_lines(&setup));
    }
    if let Some(image) = &spec.image {
        field(out, "Image", image.clone());
    }
    if let Some(command) = &spec.command {
        field(out, "Command", command.join(" "));
    }
    // Where the agent starts, as pinned (else as asked).
    if let Some(dir) = recipe
        .and_then(|r| r.working_dir.clone())
        .or_else(|| spec.working_dir.clone())
    {
        field(out, "Working dir", dir);
    }
}

/// The agent's settings, the sidecars, the mounts and the environment.
fn what_it_is_given(out: &mut String, obj: &Instance, status: &InstanceStatus) {
    let spec = &obj.spec;
    if !status.agent_settings.is_empty() {
        out.push_str(
            "Agent settings:   (at the last start; a workspace's agentSettings turns one off)\n",
        );
        out.push_str(&agent_settings_lines(&status.agent_settings));
    }
    // The pinned sidecars (a `dind` included), else the spec's.
    let sidecars = match &status.recipe {
        Some(recipe) => &recipe.sidecars,
        None => &spec.sidecars,
    };
    if !sidecars.is_empty() {
        out.push_str("Sidecars:\n");
        for sidecar in sidecars {
            let privileged = if sidecar.privileged {
                ", privileged"
            } else {
                ""
            };
            let container = status
                .container_name
                .as_deref()
                .map(|c| jackin_act::sidecar_name(c, &sidecar.name))
                .unwrap_or_else(|| "-".into());
            let _ = writeln!(
                out,
                "  {} ({}{privileged}) container {container}",
                sidecar.name, sidecar.image
            );
        }
    }
    if !spec.mounts.is_empty() {
        out.push_str("Mounts:\n");
        out.push_str(&mount_lines(&spec.mounts));
    }
    if !spec.env.is_empty() {
        out.push_str("Env:\n");
        for var in &spec.env {
            let source = match (&var.value, &var.value_from) {
                (Some(v), _) => format!("= {v}"),
                (None, Some(from)) => {
                    if let Some(name) = &from.host_env {
                        format!("from host env {name}")
                    } else if let Some(path) = &from.file {
                        format!("from file {path}")
                    } else {
                        format!(
                            "from 1Password {}",
                            from.one_password.as_deref().unwrap_or("")
                        )
                    }
                }
                (None, None) => String::new(),
            };
            let _ = writeln!(out, "  {} {source}", var.name);
        }
    }
}

/// The isolated checkouts with their unfinished work, the pinned recipe,
/// the last restore and how the last session ended.
fn what_is_kept(out: &mut String, obj: &Instance, status: &InstanceStatus, now: Timestamp) {
    if !status.mounts.is_empty() {
        out.push_str("Isolated checkouts:\n");
        out.push_str(&mounts_evidence(&status.mounts));
        if let Some(digest) = acknowledgement_digest(&status.mounts) {
            let _ = writeln!(
                out,
                "  unfinished work: a purge needs the acknowledgement {digest} \
                 (`jackin set-phase {} purged --force`)",
                obj.metadata.name
            );
        }
    }
    if let Some(recipe) = &status.recipe {
        out.push_str("Pinned recipe:\n");
        let _ = writeln!(out, "  image:       {} ({})", recipe.image, recipe.image_id);
        if let Some(commit) = &recipe.role_commit {
            let _ = writeln!(out, "  role commit: {commit}");
        }
        if let Some(base) = &recipe.base_image {
            let _ = writeln!(out, "  base image:  {base}");
        }
        if let Some(storage) = &recipe.storage {
            let _ = writeln!(
                out,
                "  unit:        {} (proven through {} at {})",
                storage.kind.as_str(),
                terminal_safe(&storage.engine),
                storage.proven_at
            );
        }
        out.push_str(&restrictions(recipe));
    }
    if let Some(restore) = &status.restore {
        let _ = writeln!(
            out,
            "{:<18}tier {} at {}",
            "Last restore:", restore.tier, restore.at
        );
    }
    if let Some(session) = &status.session {
        let _ = writeln!(
            out,
            "{:<18}{}",
            "Last session:",
            session_summary(session, status.phase)
        );
        if let Some(at) = session.finished_at {
            let _ = writeln!(out, "{:<18}{at} ({} ago)", "  ended:", age(Some(at), now));
        }
        if let Some(reason) = &session.reason {
            let _ = writeln!(out, "{:<18}{reason}", "  reason:");
        }
    }
    endings(out, &obj.metadata.name, status, now);
}

/// The sessions' endings before the last, newest first: whether the
/// instance keeps ending the same way.
fn endings(out: &mut String, name: &str, status: &InstanceStatus, now: Timestamp) {
    let earlier = status.session_endings.len().saturating_sub(1);
    if earlier == 0 {
        return;
    }
    out.push_str("Earlier sessions:\n");
    let shown = status.session_endings[..earlier]
        .iter()
        .rev()
        .take(ENDINGS_SHOWN);
    for ending in shown {
        let _ = writeln!(
            out,
            "  {} ago  {}",
            age(Some(ending.at), now),
            session_summary(&ending.outcome(), None)
        );
    }
    if earlier > ENDINGS_SHOWN {
        let _ = writeln!(
            out,
            "  … {} more in status.sessionEndings (`jackin get {name} -o yaml`)",
            earlier - ENDINGS_SHOWN,
        );
    }
}

/// The conditions, and the latest events.
fn conditions_and_events(
    out: &mut String,
    status: &InstanceStatus,
    events: &[Event],
    now: Timestamp,
) {
    if !status.conditions.is_empty() {
        let rows: Vec<Vec<String>> = status
            .conditions
            .iter()
            .map(|c| {
                vec![
                    c.type_.clone(),
                    c.status.to_string(),
                    c.reason.clone(),
                    age(Some(c.last_transition_time), now),
                    c.message.clone(),
                ]
            })
            .collect();
        out.push_str("Conditions:\n");
        for line in table(&["TYPE", "STATUS", "REASON", "SINCE", "MESSAGE"], &rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
    if !events.is_empty() {
        let rows: Vec<Vec<String>> = events[events.len().saturating_sub(EVENTS_SHOWN)..]
            .iter()
            .map(|e| vec![age(Some(e.at), now), e.reason.clone(), e.message.clone()])
            .collect();
        out.push_str("Events:\n");
        for line in table(&["AGE", "REASON", "MESSAGE"], &rows).lines() {
            let _ = writeln!(out, "  {line}");
        }
    }
}

/// What the agent's container runs with, then what the role and the
/// workspace widened of jackin's defaults.
fn restrictions(recipe: &Recipe) -> String {
    let profile = jackin_engine::restricted::profile(recipe);
    let mut out = format!("  container:   {}\n", profile.summary());
    let widened = jackin_api::security::widenings(recipe.security.as_ref());
    if !widened.is_empty() {
        let _ = writeln!(out, "  widened:     {}", widened.join("; "));
    }
    out
}

/// The credential hand-off: the mode and the sets, then what the session
/// got and what it did not, a line each (names, never values).
fn credentials_summary(pinned: &PinnedCredentials, record: Option<&CredentialsStatus>) -> String {
    let sets: Vec<&str> = pinned.sets.iter().map(|s| s.name.as_str()).collect();
    let mut out = match (pinned.mode, sets.is_empty()) {
        (AuthForward::None, _) => "authForward none: nothing is forwarded".to_owned(),
        (_, true) => format!("authForward {}: no credential set", pinned.mode),
        (mode, false) => format!("authForward {mode} of {}", sets.join(", ")),
    };
    match record {
        None if pinned.forwards_anything() => out.push_str("; nothing forwarded yet"),
        None => {}
        Some(record) => {
            for line in record.env.iter().chain(&record.files) {
                let _ = write!(out, "\n  {}", terminal_safe(line));
            }
            for line in record.env_missing.iter().chain(&record.files_missing) {
                let _ = write!(out, "\n  missing: {}", terminal_safe(line));
            }
        }
    }
    out
}
