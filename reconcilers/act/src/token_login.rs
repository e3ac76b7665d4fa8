//! Token logins: the login steps of a session's credential sets
//! ([`LoginStep`]), run by the entry wrapper in the container before every
//! start of the agent, under `authForward: token`.
//!
//! Before every start jackin writes the steps into the unit (`bin/login`,
//! mounted read-only at `/jackin/bin/login`), or removes the file when
//! there are none. Each step is lines the wrapper reads with `read -r` and
//! never evaluates: `step VAR` (the variable whose value goes to the
//! command's standard input), optionally `keep PATH` and `into PATH` (the
//! file the command keeps the login in, and where on the tmpfs that file
//! really is), then one `arg VALUE` per argv element. The wrapper makes
//! `keep` a link to `into`, runs the command with the value on its standard
//! input and its output discarded, and takes the variable out of the
//! agent's environment.
//!
//! The tmpfs, [`LOGIN_DIR`], is the container's own: the engine mounts it
//! empty at every start and drops it at the stop, and nothing of it is on
//! the host's disk. The link left in the unit's home points into the
//! container, and like anything in the unit it is never followed by
//! jackin on the host (the unit is read without following links).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use jackin_api::credentials::{AuthForward, LoginStep, PinnedCredentials};

use jackin_files::fsutil::{remove_if_exists, write_atomic};
use jackin_files::layout::Layout;

/// The tmpfs in the container that holds the logins the steps keep.
pub const LOGIN_DIR: &str = "/jackin/login";

/// The tmpfs's mount options: small, nothing on it runs, and writable by
/// whoever the agent runs as (the sticky bit keeps one user's file from
/// another's removal; the CLIs write their logins mode 0600).
const LOGIN_DIR_OPTIONS: &str = "rw,noexec,nosuid,nodev,size=1m,mode=1777";

/// The steps file in the unit (mounted at `/jackin/bin/login`).
pub fn login_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_bin_dir(container).join("login")
}

/// The sets' login steps a start runs, by set name: under `token` only.
fn steps(pinned: Option<&PinnedCredentials>) -> Vec<(&str, &LoginStep)> {
    pinned
        .filter(|p| p.mode == AuthForward::Token)
        .map(|p| {
            p.sets
                .iter()
                .filter_map(|set| set.login_step.as_ref().map(|s| (set.name.as_str(), s)))
                .collect()
        })
        .unwrap_or_default()
}

/// The tmpfs the container needs, if a step keeps a login in a file.
pub fn tmpfs(pinned: Option<&PinnedCredentials>) -> Option<HashMap<String, String>> {
    steps(pinned)
        .iter()
        .any(|(_, step)| step.keeps.is_some())
        .then(|| HashMap::from([(LOGIN_DIR.to_owned(), LOGIN_DIR_OPTIONS.to_owned())]))
}

/// The steps as the wrapper reads them; `agent_home` is where the agent's
/// home is in the container. Validation keeps line breaks out of every
/// value, so each line is one value.
pub fn render(pinned: Option<&PinnedCredentials>, agent_home: &str) -> Option<String> {
    let steps = steps(pinned);
    if steps.is_empty() {
        return None;
    }
    let mut out = "# written by jackin before each start; read by the entry wrapper\n".to_owned();
    for (i, (set, step)) in steps.iter().enumerate() {
        out.push_str(&format!("step {}\n", step.stdin));
        if let Some(keeps) = &step.keeps {
            let name = Path::new(keeps)
                .file_name()
                .map(|n| n.to_string_lossy().into_owned())
                .unwrap_or_default();
            out.push_str(&format!("keep {agent_home}/{keeps}\n"));
            // One file per step: two sets may keep files of one name.
            out.push_str(&format!("into {LOGIN_DIR}/{i}-{set}-{name}\n"));
        }
        for arg in &step.command {
            debug_assert!(!arg.contains('\n'), "validation keeps line breaks out");
            out.push_str(&format!("arg {arg}\n"));
        }
    }
    Some(out)
}

/// Writes this start's steps into the unit, or removes the last start's
/// when there are none.
pub fn write_before_start(
    layout: &Layout,
    container: &str,
    pinned: Option<&PinnedCredentials>,
    agent_home: &str,
) -> std::io::Result<()> {
    let path = login_file(layout, container);
    match render(pinned, agent_home) {
        Some(text) => write_atomic(&path, text.as_bytes()),
        None => remove_if_exists(&path),
    }
}

/// What a set's login step does, for the start's report: the command and
/// the variable, never its value.
pub fn describe(step: &LoginStep) -> String {
    let kept = match &step.keeps {
        Some(keeps) => format!(", its login ~/{keeps} kept on the container's tmpfs"),
        None => String::new(),
    };
    format!(
        "logged in by `{}` ({} on its standard input{kept})",
        step.command.join(" "),
        step.stdin
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::credentials::{CredentialSet, host_env};

    fn codex() -> CredentialSet {
        jackin_api::agent::builtin()
            .into_iter()
            .find(|a| a.metadata.name == "codex")
            .and_then(|a| a.spec.credentials.map(|c| c.named("codex")))
            .unwrap()
    }

    fn pinned(mode: AuthForward, sets: Vec<CredentialSet>) -> PinnedCredentials {
        PinnedCredentials { mode, sets }
    }

    #[test]
    fn codex_under_token_logs_in_on_a_tmpfs_and_under_other_modes_not_at_all() {
        let token = pinned(AuthForward::Token, vec![codex()]);
        assert_eq!(
            render(Some(&token), "/home/agent").unwrap(),
            "# written by jackin before each start; read by the entry wrapper\n\
             step OPENAI_API_KEY\n\
             keep /home/agent/.codex/auth.json\n\
             into /jackin/login/0-codex-auth.json\n\
             arg codex\narg login\narg --with-api-key\n"
        );
        assert_eq!(
            tmpfs(Some(&token)).unwrap()[LOGIN_DIR],
            "rw,noexec,nosuid,nodev,size=1m,mode=1777"
        );
        for mode in [AuthForward::Sync, AuthForward::None] {
            let other = pinned(mode, vec![codex()]);
            assert_eq!(render(Some(&other), "/home/agent"), None, "{mode}");
            assert_eq!(tmpfs(Some(&other)), None, "{mode}");
        }
        assert_eq!(render(None, "/home/agent"), None);
    }

    #[test]
    fn a_step_that_keeps_no_file_needs_no_tmpfs() {
        let set = CredentialSet {
            name: "tool".into(),
            env: vec![host_env("TOOL_TOKEN")],
            login_step: Some(LoginStep {
                command: vec!["tool".into(), "auth".into(), "--stdin".into()],
                stdin: "TOOL_TOKEN".into(),
                keeps: None,
            }),
            ..Default::default()
        };
        let token = pinned(AuthForward::Token, vec![set.clone()]);
        assert_eq!(tmpfs(Some(&token)), None);
        let text = render(Some(&token), "/home/agent").unwrap();
        assert!(!text.contains("keep ") && text.contains("step TOOL_TOKEN\narg tool\n"));
        assert_eq!(
            describe(set.login_step.as_ref().unwrap()),
            "logged in by `tool auth --stdin` (TOOL_TOKEN on its standard input)"
        );
    }

    #[test]
    fn the_file_is_written_under_token_and_removed_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path().to_path_buf());
        std::fs::create_dir_all(layout.unit_bin_dir("c")).unwrap();
        let token = pinned(AuthForward::Token, vec![codex()]);
        write_before_start(&layout, "c", Some(&token), "/home/agent").unwrap();
        let written = std::fs::read_to_string(login_file(&layout, "c")).unwrap();
        assert!(written.contains("step OPENAI_API_KEY"), "{written}");
        let sync = pinned(AuthForward::Sync, vec![codex()]);
        write_before_start(&layout, "c", Some(&sync), "/home/agent").unwrap();
        assert!(!login_file(&layout, "c").exists());
        // Nothing to remove is no error.
        write_before_start(&layout, "c", None, "/home/agent").unwrap();
    }
}
