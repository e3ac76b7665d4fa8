//! Credentials: what logs an agent (or a tool such as `gh`) in, and how a
//! session gets the operator's login from the host.
//!
//! A credential set is data, like the rest of an agent entry: the host files
//! that hold a login and where they go in the unit's home, and the
//! environment variables a token can be passed in instead (secret
//! references, as `spec.env` takes them). The mode, `authForward`, picks
//! which of the two reaches a session:
//!
//! - `sync` (the default): the files are copied from the operator's home
//!   into the unit's home at every start;
//! - `token`: the variables are resolved when the container is created and
//!   handed to the engine, kept nowhere (files marked `secret: false`,
//!   account metadata, are copied too);
//! - `none`: nothing is forwarded.
//!
//! A CLI that will not take a token from its environment (codex 0.147 opens
//! on its sign-in menu) names a login step: a command run in the container
//! before the agent, under `token`, with the token on its standard input.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::env::{EnvSource, EnvVar};

/// How an operator's login reaches a session.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AuthForward {
    /// The credential files are copied from the operator's home into the
    /// unit's home at every start: a logged-in operator's sessions start
    /// logged in, with nothing to set up.
    #[default]
    Sync,
    /// The credential variables are passed from their references; only
    /// files that hold no secret are copied.
    Token,
    /// Nothing is forwarded: the agent logs in by itself, or not at all.
    None,
}

impl AuthForward {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Sync => "sync",
            Self::Token => "token",
            Self::None => "none",
        }
    }
}

impl std::fmt::Display for AuthForward {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What logs an agent in (`Agent.spec.credentials`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Credentials {
    /// Host files that hold the login, and where they go in the unit's home.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<CredentialFile>,
    /// Variables that carry a token instead (`token` mode), each a secret
    /// reference (`valueFrom`); any one of them that resolves logs the
    /// agent in.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    /// How the operator logs in on the host, said when a file is missing
    /// (e.g. "run `claude` once on the host to log in").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<String>,
    /// Under `token`, the command that logs the agent in with one of the
    /// variables, run in the container before every start of the agent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_step: Option<LoginStep>,
}

impl Credentials {
    /// The set as a session forwards it, under `name`.
    pub fn named(&self, name: &str) -> CredentialSet {
        CredentialSet {
            name: name.to_owned(),
            files: self.files.clone(),
            env: self.env.clone(),
            login: self.login.clone(),
            login_step: self.login_step.clone(),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.files.is_empty() && self.env.is_empty()
    }
}

/// One host file of a login.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialFile {
    /// Where the file is, relative to the operator's home on the host
    /// (`.claude/.credentials.json`).
    pub src: String,
    /// Where it goes, relative to the agent's home (the unit's `home/`):
    /// where the agent looks for it, inside the directory its `stateEnv`
    /// relocates (`.claude/.credentials.json` under
    /// `CLAUDE_CONFIG_DIR=~/.claude`).
    pub dst: String,
    /// Only these top-level keys of the host file (a JSON object) are
    /// forwarded, set in the JSON object already at `dst`: the session
    /// keeps its own settings there, and the rest of the host's file (other
    /// projects' history) stays on the host.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub keys: Vec<String>,
    /// `false` for a file that holds no secret (account metadata): it is
    /// forwarded under `token` as well, so that the agent knows the account
    /// its token belongs to.
    #[serde(default = "yes", skip_serializing_if = "is_yes")]
    pub secret: bool,
}

/// A command that logs a CLI in with a token, inside the container, before
/// the agent starts (`codex login --with-api-key`). It runs at every start
/// of the container under `authForward: token` when its variable is set;
/// the token goes in on its standard input, never in its argv, and what it
/// prints is discarded. The variable is then taken out of the agent's
/// environment.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LoginStep {
    /// The argv, run as the agent, never through a shell.
    pub command: Vec<String>,
    /// The variable, one of the set's `env`, whose value the command reads
    /// on its standard input.
    pub stdin: String,
    /// The file the command keeps the login in, relative to the agent's
    /// home (`.codex/auth.json`): it is made a link to a file on a tmpfs of
    /// the container, made again at every start and gone at its stop, so
    /// that the token stays off the unit's home, which is on the host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub keeps: Option<String>,
}

impl LoginStep {
    /// What is wrong with the command and the variable, each as the field
    /// (under `loginStep`) and what is expected there; `variables` are the
    /// set's `env`. Where it keeps the login is checked as a place in the
    /// agent's home, as credential files are (`validate`).
    pub fn problems(&self, variables: &[EnvVar]) -> Vec<(String, String)> {
        let mut found = Vec::new();
        match self.command.first() {
            None => found.push((
                "command".to_owned(),
                "must not be empty: expected the argv of the login, such as [codex, login, \
                 --with-api-key]"
                    .to_owned(),
            )),
            Some(program) if program.trim().is_empty() => found.push((
                "command[0]".to_owned(),
                "expected the program that logs in".to_owned(),
            )),
            Some(_) => {}
        }
        for (i, arg) in self.command.iter().enumerate() {
            if arg.chars().any(char::is_control) {
                found.push((
                    format!("command[{i}]"),
                    "must not contain control characters".to_owned(),
                ));
            }
        }
        if !variables.iter().any(|v| v.name == self.stdin) {
            let names: Vec<&str> = variables.iter().map(|v| v.name.as_str()).collect();
            found.push((
                "stdin".to_owned(),
                format!(
                    "{:?} is none of the set's variables: expected one of env ({})",
                    self.stdin,
                    match names.is_empty() {
                        true => "none given".to_owned(),
                        false => names.join(", "),
                    }
                ),
            ));
        }
        found
    }
}

fn yes() -> bool {
    true
}

#[allow(
    clippy::trivially_copy_pass_by_ref,
    reason = "serde passes fields by reference"
)]
fn is_yes(value: &bool) -> bool {
    *value
}

/// A named credential set, forwarded to every session of a workspace
/// whatever its agent (`Workspace.spec.credentials`). An entry with a name
/// alone is the built-in set of that name (`gh`).
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct CredentialSet {
    pub name: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub files: Vec<CredentialFile>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub env: Vec<EnvVar>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_step: Option<LoginStep>,
}

impl CredentialSet {
    /// Whether the entry only names a built-in set.
    pub fn is_reference(&self) -> bool {
        self.files.is_empty()
            && self.env.is_empty()
            && self.login.is_none()
            && self.login_step.is_none()
    }

    /// The set itself: the built-in one an entry names, or the entry.
    pub fn resolved(&self) -> Option<CredentialSet> {
        match self.is_reference() {
            true => builtin_sets().into_iter().find(|s| s.name == self.name),
            false => Some(self.clone()),
        }
    }
}

/// The credential hand-off a session was launched with, pinned in its
/// recipe: the mode, and every set (the agent's own, named after it, then
/// the workspace's, built-in ones resolved).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinnedCredentials {
    pub mode: AuthForward,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sets: Vec<CredentialSet>,
}

impl PinnedCredentials {
    /// Whether a start has anything to hand over.
    pub fn forwards_anything(&self) -> bool {
        self.mode != AuthForward::None && !self.sets.is_empty()
    }
}

/// A variable fed from the host variable of the same name.
pub fn host_env(name: &str) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvSource {
            host_env: Some(name.to_owned()),
            ..Default::default()
        }),
    }
}

/// A file at the same place in both homes.
pub fn same_place(path: &str) -> CredentialFile {
    CredentialFile {
        src: path.to_owned(),
        dst: path.to_owned(),
        keys: Vec::new(),
        secret: true,
    }
}

/// The credential sets jackin ships, which a workspace names to forward.
///
/// `gh`: the GitHub CLI keeps its login in `~/.config/gh/hosts.yml` (in
/// `$XDG_CONFIG_HOME/gh`, `GH_CONFIG_DIR` aside) and takes a token from
/// `GH_TOKEN` before anything else (cli/cli `internal/config`, `gh help
/// environment`). A login kept in the system keyring (gh's default since
/// 2.40) is not in `hosts.yml`: forward `GH_TOKEN` then.
pub fn builtin_sets() -> Vec<CredentialSet> {
    vec![CredentialSet {
        name: "gh".into(),
        files: vec![same_place(".config/gh/hosts.yml")],
        env: vec![host_env("GH_TOKEN")],
        login: Some(
            "run `gh auth login --insecure-storage` on the host (a login kept in the system \
             keyring is not in hosts.yml)"
                .into(),
        ),
        login_step: None,
    }]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_and_default_as_documented() {
        assert_eq!(AuthForward::default(), AuthForward::Sync);
        for (text, mode) in [
            ("sync", AuthForward::Sync),
            ("token", AuthForward::Token),
            ("none", AuthForward::None),
        ] {
            let read: AuthForward = serde_json::from_str(&format!("\"{text}\"")).unwrap();
            assert_eq!(read, mode);
            assert_eq!(mode.as_str(), text);
        }
        assert!(serde_json::from_str::<AuthForward>("\"Sync\"").is_err());
    }

    #[test]
    fn a_file_is_secret_unless_it_says_otherwise_and_unknown_fields_are_refused() {
        let file: CredentialFile =
            serde_json::from_str(r#"{"src": ".a", "dst": ".b/.a"}"#).unwrap();
        assert!(file.secret);
        assert_eq!(
            serde_json::to_string(&file).unwrap(),
            r#"{"src":".a","dst":".b/.a"}"#
        );
        let metadata: CredentialFile =
            serde_json::from_str(r#"{"src": ".a", "dst": ".a", "secret": false, "keys": ["k"]}"#)
                .unwrap();
        assert!(!metadata.secret);
        assert_eq!(metadata.keys, ["k"]);
        let err = serde_json::from_str::<CredentialFile>(r#"{"src": ".a", "dst": ".a", "x": 1}"#)
            .unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
        let err = serde_json::from_str::<Credentials>(r#"{"file": []}"#).unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    #[test]
    fn a_login_step_names_a_variable_of_its_set_and_keeps_its_file_in_the_home() {
        let codex = crate::agent::builtin()
            .into_iter()
            .find(|a| a.metadata.name == "codex")
            .and_then(|a| a.spec.credentials)
            .expect("codex logs in");
        let step = codex.login_step.clone().expect("codex has a login step");
        assert_eq!(step.problems(&codex.env), Vec::<(String, String)>::new());
        let bad = LoginStep {
            command: vec!["codex".into(), "login\n--x".into()],
            stdin: "CODEX_KEY".into(),
            keeps: Some("../outside/auth.json".into()),
        };
        let fields: Vec<String> = bad.problems(&codex.env).into_iter().map(|p| p.0).collect();
        assert_eq!(fields, ["command[1]", "stdin"]);
        let said = bad.problems(&codex.env)[1].1.clone();
        assert!(
            said.contains("expected one of env (OPENAI_API_KEY)"),
            "{said}"
        );
        let empty = LoginStep::default().problems(&[]);
        assert_eq!(empty[0].0, "command");
        assert!(empty[1].1.contains("none given"), "{empty:?}");
        let read: Credentials = serde_json::from_str(
            r#"{"env": [], "loginStep": {"command": ["x"], "stdin": "K", "keeps": ".x/login"}}"#,
        )
        .unwrap();
        assert_eq!(read.login_step.unwrap().keeps.as_deref(), Some(".x/login"));
        let err =
            serde_json::from_str::<LoginStep>(r#"{"command": ["x"], "stdin": "K", "argv": 1}"#)
                .unwrap_err();
        assert!(err.to_string().contains("unknown field"), "{err}");
    }

    #[test]
    fn a_name_alone_is_the_builtin_set() {
        let gh = CredentialSet {
            name: "gh".into(),
            ..Default::default()
        };
        assert!(gh.is_reference());
        let resolved = gh.resolved().expect("gh is built in");
        assert_eq!(resolved.files[0].src, ".config/gh/hosts.yml");
        assert_eq!(resolved.env[0].name, "GH_TOKEN");
        let unknown = CredentialSet {
            name: "npm".into(),
            ..Default::default()
        };
        assert_eq!(unknown.resolved(), None);
        let own = CredentialSet {
            name: "gh".into(),
            env: vec![host_env("MY_GH")],
            ..Default::default()
        };
        assert_eq!(own.resolved(), Some(own.clone()), "a set of its own wins");
    }

    #[test]
    fn nothing_is_forwarded_under_none_or_without_sets() {
        let sets = builtin_sets();
        for (mode, sets, expected) in [
            (AuthForward::Sync, sets.clone(), true),
            (AuthForward::Token, sets.clone(), true),
            (AuthForward::None, sets, false),
            (AuthForward::Sync, Vec::new(), false),
        ] {
            assert_eq!(
                PinnedCredentials { mode, sets }.forwards_anything(),
                expected,
                "{mode}"
            );
        }
    }
}
