//! The lines `describe workspace` shows for what a workspace sets beyond
//! its exit and keep policies: its roles, how a changed spec reaches its
//! sessions, when a quiet agent needs you, whom it notifies, and the
//! defaults it gives its instances. A setting left out says its default.
//! The text is the operator's, as applied; the caller shows it escaped.

use jackin_api::instance::UpdatePolicy;
use jackin_api::workspace::{DEFAULT_NEEDS_YOU_AFTER, WorkspaceRole, WorkspaceSpec};

/// Each (field, value) pair, in the order shown.
pub fn fields(spec: &WorkspaceSpec) -> Vec<(&'static str, String)> {
    let or_default = |value: Option<String>, default: &str| {
        value.unwrap_or_else(|| format!("{default} (the default)"))
    };
    let mut fields = vec![
        (
            "Update policy",
            or_default(
                spec.update_policy.map(|p| format!("{p:?}")),
                &format!("{:?}", UpdatePolicy::default()),
            ),
        ),
        (
            "Needs you after",
            or_default(spec.needs_you_after.clone(), DEFAULT_NEEDS_YOU_AFTER),
        ),
        (
            "Notify",
            match &spec.notify {
                Some(notify) => format!(
                    "{} (at most {} each run, once per {} per instance and event)",
                    notify.command.join(" "),
                    notify.timeout,
                    notify.min_interval
                ),
                None => "off".to_owned(),
            },
        ),
    ];
    let defaults = [
        ("Host user", spec.host_user.map(|yes| yes.to_string())),
        ("Engine", spec.engine.clone()),
        ("Working dir", spec.working_dir.clone()),
        (
            "Dind",
            spec.dind
                .as_ref()
                .map(|dind| serde_json::to_string(dind).unwrap_or_default()),
        ),
        (
            "Save convs.",
            spec.save_conversations.map(|yes| yes.to_string()),
        ),
        (
            "Resume convs.",
            spec.resume_conversations.map(|yes| yes.to_string()),
        ),
    ];
    fields.extend(
        defaults
            .into_iter()
            .filter_map(|(key, value)| Some((key, value?))),
    );
    let off: Vec<&str> = spec
        .agent_settings
        .iter()
        .filter(|(_, on)| !**on)
        .map(|(name, _)| name.as_str())
        .collect();
    if !off.is_empty() {
        fields.push(("Settings off", off.join(", ")));
    }
    fields
}

/// The `Roles:` block: each role and where its image comes from.
pub fn roles(roles: &[WorkspaceRole]) -> String {
    let mut out = String::from("Roles:\n");
    if roles.is_empty() {
        out.push_str("  (none: `launch` starts from --from or an earlier session)\n");
    }
    for role in roles {
        let from = match (&role.image, &role.source) {
            (Some(image), _) => format!("image {image}"),
            (None, Some(source)) => format!(
                "built from {} at {}",
                source.git,
                source.git_ref.as_deref().unwrap_or("HEAD")
            ),
            (None, None) => "-".to_owned(),
        };
        out.push_str(&format!("  {}: {from}\n", role.name));
    }
    out
}
