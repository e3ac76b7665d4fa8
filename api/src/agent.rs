//! The `Agent` resource: how jackin starts an agent CLI and resumes its
//! conversation. jackin ships entries for the agents it knows
//! ([`builtin`]); an applied `Agent` of the same name replaces the built-in
//! one, and a new name adds an agent.
//!
//! An entry is data: a launch argv, and argument templates appended to it to
//! start a conversation with an id jackin chose (`mintArgs`), to resume that
//! id (`resumeArgs`), or to continue the latest conversation
//! (`continueArgs`). `{id}` stands for the conversation id inside one argv
//! element; the id never passes through a shell.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::agent_settings::{
    AgentSetting, SettingFormat, SettingMerge, SettingValue, WORKING_DIR_PLACEHOLDER,
};
use crate::credentials::{CredentialFile, Credentials, LoginStep, host_env, same_place};
use crate::meta::{API_VERSION, ObjectMeta};
use crate::operator_config::{self, ConfigEntry};

/// How to run one agent CLI.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Agent {
    pub api_version: String,
    pub kind: String,
    pub metadata: ObjectMeta,
    #[serde(default)]
    pub spec: AgentSpec,
}

impl Agent {
    pub const KIND: &'static str = "Agent";
}

/// The placeholder for the conversation id in argument templates.
pub const ID_PLACEHOLDER: &str = "{id}";

#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AgentSpec {
    /// The argv that starts the agent on a new conversation. Empty: the
    /// image's own command (the `shell` agent).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub launch: Vec<String>,
    /// Appended to the launch argv to start a conversation whose id jackin
    /// chose; one element holds `{id}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub mint_args: Vec<String>,
    /// Appended to the launch argv to resume the conversation `{id}`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resume_args: Vec<String>,
    /// Appended to the launch argv to continue the latest conversation in
    /// the working directory.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub continue_args: Vec<String>,
    /// The variable that relocates the agent's state (its config home, or
    /// its history file), set to a path in the unit's home so that the
    /// conversation survives every restore and goes with a purge.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_env: Option<StateEnv>,
    /// What a conversation id must look like to the agent; an applied
    /// `conversationId` that does not fit is refused.
    #[serde(default, skip_serializing_if = "IdFormat::is_any")]
    pub id_format: IdFormat,
    /// How to ask the installed agent its version, and the least version
    /// each way of starting needs: a way the installed agent lacks is
    /// skipped, not tried.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<VersionRule>,
    /// How long the agent keeps a conversation, and the setting that keeps
    /// it longer: a kept session must not come back to a conversation the
    /// agent deleted meanwhile.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retention: Option<Retention>,
    /// What logs the agent in: host files copied into the unit's home under
    /// `authForward: sync`, variables passed under `token`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credentials: Option<Credentials>,
    /// Keys jackin sets in the agent's own files in the unit before every
    /// start (after the credentials), the rest of each file kept: the
    /// answer to its trust question, its sandbox. Applied from the entry
    /// as the registry has it at each start, never compared as drift; a
    /// workspace turns one off by name (`agentSettings: {trust: false}`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub settings: Vec<AgentSetting>,
    /// The operator's own setup of the agent (its memory file, commands,
    /// settings, MCP servers): host files and directories copied into the
    /// unit's home before every start when the workspace says
    /// `operatorConfig: sync`, before the credentials and jackin's settings.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub operator_config: Vec<ConfigEntry>,
    /// Whether the agent finds its conversations by the working directory
    /// (its store is keyed by it, or its continue takes the latest of the
    /// directory): started in another directory, it finds none of them and
    /// starts anew. A rollout that changes the directory of such an agent
    /// is refused unless the operator agrees to a new conversation
    /// (`jackin rollout --new-conversation`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub conversations_by_directory: bool,
    /// Whether the agent opens on a prompt that waits for input and
    /// reports nothing there (codex's composer): each start then stands
    /// for its `needs-input` report, until the agent reports or prints
    /// well after it (see `jackin_plan::attention`).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub first_prompt_waits: bool,
    /// Dockerfile instructions that install the agent (`RUN npm install -g
    /// …`). When the role image lacks the agent's program, jackin builds a
    /// derived image, the role image with these on top (run as root), once
    /// per role image and block.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub install: Vec<String>,
    /// Other model endpoints the agent can be sent to, each with its key
    /// (see [`crate::provider`]); an instance or workspace picks one.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub providers: Vec<crate::provider::AgentProvider>,
}

/// The Dockerfile instructions an install block may use: what installs a
/// program. Not `FROM` (the base is the role image), `COPY`/`ADD` (the
/// build has no context) or `CMD`/`ENTRYPOINT` (jackin runs the argv).
pub const INSTALL_INSTRUCTIONS: [&str; 6] = ["RUN", "ENV", "ARG", "WORKDIR", "LABEL", "SHELL"];

/// An environment variable pointing into the agent's home.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct StateEnv {
    pub name: String,
    /// Relative to the agent's home (`/home/agent`, the unit's `home/`).
    pub path: String,
    /// What the path is. jackin makes it before every start (a directory,
    /// or a file's directory): some agents refuse to start when the
    /// variable names a directory that does not exist.
    #[serde(default, skip_serializing_if = "StateKind::is_directory")]
    pub kind: StateKind,
    /// Where in the path the conversations are, when the path holds more
    /// (a whole home): relative to the path, what a removal saves of it
    /// (gemini's `.gemini` under `GEMINI_CLI_HOME`). The path itself when
    /// omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversations: Option<String>,
}

impl StateEnv {
    /// What of the agent's home holds its conversations, relative to the
    /// home: the path, or the part of it `conversations` names.
    pub fn conversations_path(&self) -> String {
        let base = self.path.trim_end_matches('/');
        match self.conversations.as_deref() {
            None => base.to_owned(),
            Some(part) if base.is_empty() || base == "." => part.to_owned(),
            Some(part) => format!("{base}/{part}"),
        }
    }
}

/// What a [`StateEnv`] path names.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum StateKind {
    /// A directory (a config home): made itself.
    #[default]
    Directory,
    /// A file (a history file): its directory is made.
    File,
}

impl StateKind {
    pub fn is_directory(&self) -> bool {
        *self == Self::Directory
    }
}

/// How an agent's conversation comes back after a restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Strategy {
    /// jackin chooses the id at the first start and resumes it by id.
    Id,
    /// The agent continues its latest conversation in the working directory.
    Latest,
    /// The agent starts anew each time.
    None,
}

impl Strategy {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Id => "id",
            Self::Latest => "latest",
            Self::None => "none",
        }
    }
}

impl std::fmt::Display for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AgentSpec {
    /// The settings jackin sets before every start, in the order written:
    /// the retention setting (named `retention`), then `settings`.
    pub fn start_settings(&self) -> Vec<AgentSetting> {
        let retention = self.retention.as_ref().and_then(Retention::as_setting);
        retention
            .into_iter()
            .chain(self.settings.iter().cloned())
            .collect()
    }

    /// The best strategy the entry supports.
    pub fn strategy(&self) -> Strategy {
        if !self.mint_args.is_empty() && !self.resume_args.is_empty() {
            Strategy::Id
        } else if !self.continue_args.is_empty() {
            Strategy::Latest
        } else {
            Strategy::None
        }
    }

    /// Every strategy the entry supports, best first.
    pub fn strategies(&self) -> Vec<Strategy> {
        let mut out = Vec::new();
        if !self.mint_args.is_empty() && !self.resume_args.is_empty() {
            out.push(Strategy::Id);
        }
        if !self.continue_args.is_empty() {
            out.push(Strategy::Latest);
        }
        out
    }
}

/// Fills `{id}` in each template element: the id lands inside the element
/// that names it, never split and never quoted.
pub fn fill(template: &[String], id: &str) -> Vec<String> {
    template
        .iter()
        .map(|arg| arg.replace(ID_PLACEHOLDER, id))
        .collect()
}

/// The agents jackin knows, as shipped.
#[expect(
    clippy::too_many_lines,
    reason = "a data table: one entry per built-in agent, read as a list, not a procedure"
)]
pub fn builtin() -> Vec<Agent> {
    let args = |items: &[&str]| items.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
    let state = |name: &str, path: &str| {
        Some(StateEnv {
            name: name.into(),
            path: path.into(),
            kind: StateKind::Directory,
            conversations: None,
        })
    };
    let entry = |name: &str, spec: AgentSpec| Agent {
        api_version: API_VERSION.into(),
        kind: Agent::KIND.into(),
        metadata: ObjectMeta {
            name: name.into(),
            ..Default::default()
        },
        spec,
    };
    let mut agents = vec![
        // Claude Code refuses a --session-id whose transcript exists, and
        // resumes only from the directory it was started in (transcripts
        // live under projects/<cwd>/). With CLAUDE_CONFIG_DIR set, the login
        // sits beside them, in the unit.
        entry(
            "claude",
            AgentSpec {
                launch: args(&["claude"]),
                mint_args: args(&["--session-id", "{id}"]),
                resume_args: args(&["--resume", "{id}"]),
                continue_args: args(&["--continue"]),
                state_env: state("CLAUDE_CONFIG_DIR", ".claude"),
                // jackin resumes claude by id, but `--resume ID` looks for
                // the transcript under projects/<cwd>/ only (as `--continue`
                // does): from another directory the id is unknown.
                conversations_by_directory: true,
                // Its SessionStart hook reports it waits (settings `reports`).
                first_prompt_waits: false,
                // Claude Code's npm package (docs.claude.com/en/docs/claude-code/setup);
                // the role image needs Node.js 18 or later.
                install: args(&["RUN npm install -g @anthropic-ai/claude-code"]),
                // `--session-id` "must be a valid UUID" (Claude Code CLI
                // reference, docs.claude.com/en/docs/claude-code/cli-reference).
                id_format: IdFormat::Uuid,
                // Transcripts older than `cleanupPeriodDays` (default 30) are
                // deleted at startup (Claude Code settings,
                // docs.claude.com/en/docs/claude-code/settings).
                retention: Some(Retention {
                    days: 30,
                    setting: Some(RetentionSetting {
                        file: "settings.json".into(),
                        key: "cleanupPeriodDays".into(),
                        format: RetentionFormat::Days,
                    }),
                }),
                version: None,
                credentials: Some(Credentials {
                    files: vec![
                        // On Linux the login is a plain file in the config
                        // directory (macOS keeps it in the Keychain, where
                        // nothing can be copied: use token there).
                        same_place(".claude/.credentials.json"),
                        // Account metadata. Under CLAUDE_CONFIG_DIR claude
                        // reads `.claude.json` inside that directory, not
                        // in the home; without hasCompletedOnboarding it
                        // runs its first-run onboarding even when logged
                        // in (anthropics/claude-code#4714). Only these keys
                        // go: the rest of the host's file is its other
                        // projects' state.
                        CredentialFile {
                            src: ".claude.json".into(),
                            dst: ".claude/.claude.json".into(),
                            keys: args(&[
                                "hasCompletedOnboarding",
                                "lastOnboardingVersion",
                                "oauthAccount",
                                "userID",
                            ]),
                            secret: false,
                        },
                    ],
                    // A long-lived token from `claude setup-token`, or an
                    // API key.
                    env: vec![
                        host_env("CLAUDE_CODE_OAUTH_TOKEN"),
                        host_env("ANTHROPIC_API_KEY"),
                    ],
                    login: Some("run `claude` once on the host to log in".into()),
                    login_step: None,
                }),
                settings: builtin_settings("claude"),
                operator_config: operator_config::builtin("claude"),
                // Built in from `crate::provider` (`builtin_for`), below.
                providers: Vec::new(),
            },
        ),
        // Codex chooses its own ids: continue the latest under an isolated
        // CODEX_HOME, which must exist before codex starts (it refuses a
        // CODEX_HOME that names no directory: openai/codex
        // codex-rs/utils/home-dir); jackin makes it.
        entry(
            "codex",
            AgentSpec {
                launch: args(&["codex"]),
                continue_args: args(&["resume", "--last"]),
                state_env: state("CODEX_HOME", ".codex"),
                // `resume --last` takes the newest session whose first line
                // names the working directory (codex-rs/core rollout
                // recorder); elsewhere it starts anew.
                conversations_by_directory: true,
                // The login is $CODEX_HOME/auth.json (openai/codex
                // codex-rs/login, auth storage). codex 0.147 does not log
                // in from an OPENAI_API_KEY in its environment: it opens on
                // its sign-in menu, whose API-key choice shows the key
                // (R3). `codex login --with-api-key` reads the key on
                // standard input and writes the API-key login to auth.json,
                // through a link there (checked with 0.147), so the login
                // is kept on the container's tmpfs. The route without a
                // file, a provider with `env_key`, would replace the
                // built-in `openai` provider, which codex does not let a
                // configuration change.
                credentials: Some(Credentials {
                    files: vec![same_place(".codex/auth.json")],
                    env: vec![host_env("OPENAI_API_KEY")],
                    login: Some("run `codex login` on the host".into()),
                    login_step: Some(LoginStep {
                        command: args(&["codex", "login", "--with-api-key"]),
                        stdin: "OPENAI_API_KEY".into(),
                        keeps: Some(".codex/auth.json".into()),
                    }),
                }),
                // The npm package (github.com/openai/codex, "Installing and
                // running Codex CLI").
                install: args(&["RUN npm install -g @openai/codex"]),
                settings: builtin_settings("codex"),
                // It opens on its composer, and reports nothing there.
                first_prompt_waits: true,
                operator_config: operator_config::builtin("codex"),
                ..Default::default()
            },
        ),
        entry(
            "gemini",
            AgentSpec {
                launch: args(&["gemini"]),
                mint_args: args(&["--session-id", "{id}"]),
                resume_args: args(&["--resume", "{id}"]),
                continue_args: args(&["--resume", "latest"]),
                // Its chats are in `.gemini/`: only that of the home is
                // saved when the session goes.
                state_env: Some(StateEnv {
                    conversations: Some(".gemini".into()),
                    ..state("GEMINI_CLI_HOME", ".").expect("a state variable")
                }),
                // Chats live under .gemini/tmp/<hash of the project
                // directory>/chats/ (geminicli.com/docs/cli/session-management):
                // by id or latest, only the directory's own are found.
                conversations_by_directory: true,
                first_prompt_waits: false,
                // The npm package (github.com/google-gemini/gemini-cli,
                // "Quick Install"); Node.js 20 or later.
                install: args(&["RUN npm install -g @google/gemini-cli"]),
                // Session ids are file-name safe words.
                id_format: IdFormat::Word,
                // `--session-id` came in 0.41.0; older versions reject the
                // unknown flag (yargs strict mode), so those rungs are
                // skipped rather than failed at every start.
                version: Some(VersionRule {
                    probe: args(&["gemini", "--version"]),
                    minimum: RungMinimums {
                        mint: Some("0.41.0".into()),
                        resume: Some("0.41.0".into()),
                        r#continue: None,
                    },
                }),
                // Chats older than `general.sessionRetention.maxAge` ("30d"
                // by default) are deleted (Gemini CLI configuration,
                // geminicli.com/docs/reference/configuration); its settings
                // file is `.gemini/settings.json` under GEMINI_CLI_HOME.
                retention: Some(Retention {
                    days: 30,
                    setting: Some(RetentionSetting {
                        file: ".gemini/settings.json".into(),
                        key: "general.sessionRetention.maxAge".into(),
                        format: RetentionFormat::Duration,
                    }),
                }),
                // Under GEMINI_CLI_HOME gemini keeps `.gemini/` there
                // (google-gemini/gemini-cli packages/core/src/utils/paths.ts,
                // homedir()): the Google login in oauth_creds.json, and in
                // settings.json the auth type that selects it, without
                // which it asks how to log in.
                credentials: Some(Credentials {
                    files: vec![
                        same_place(".gemini/oauth_creds.json"),
                        CredentialFile {
                            keys: args(&["security", "selectedAuthType"]),
                            ..same_place(".gemini/settings.json")
                        },
                    ],
                    env: vec![host_env("GEMINI_API_KEY")],
                    login: Some("run `gemini` once on the host and log in with Google".into()),
                    login_step: None,
                }),
                settings: builtin_settings("gemini"),
                operator_config: operator_config::builtin("gemini"),
                // Built in from `crate::provider` (`builtin_for`), below.
                providers: Vec::new(),
            },
        ),
        // Aider keeps no ids, and its history file defaults to the
        // repository root, where a discarded checkout would take it along.
        // jackin sets the file, in the unit's home: wherever aider starts,
        // it reads the same history (`conversationsByDirectory` stays off).
        entry(
            "aider",
            AgentSpec {
                launch: args(&["aider"]),
                continue_args: args(&["--restore-chat-history"]),
                state_env: Some(StateEnv {
                    name: "AIDER_CHAT_HISTORY_FILE".into(),
                    path: ".aider.chat.history.md".into(),
                    kind: StateKind::File,
                    conversations: None,
                }),
                // Aider has no login of its own: its model's API key.
                credentials: Some(Credentials {
                    env: vec![host_env("ANTHROPIC_API_KEY"), host_env("OPENAI_API_KEY")],
                    ..Default::default()
                }),
                // The PyPI package (aider.chat/docs/install.html, "pip");
                // the role image needs Python 3.10 to 3.12 and pip.
                install: args(&["RUN python3 -m pip install --no-cache-dir aider-chat"]),
                ..Default::default()
            },
        ),
        // OpenCode chooses its own ids (`--session <id>` needs one it made).
        entry(
            "opencode",
            AgentSpec {
                launch: args(&["opencode"]),
                continue_args: args(&["--continue"]),
                state_env: state("XDG_DATA_HOME", ".local/share"),
                // `--continue` takes the newest session of the working
                // directory (its sessions belong to a project, the
                // directory's).
                conversations_by_directory: true,
                // Every provider's login in one file under its data
                // directory (sst/opencode packages/opencode/src/auth), or
                // the provider's own API key variable.
                credentials: Some(Credentials {
                    files: vec![same_place(".local/share/opencode/auth.json")],
                    env: vec![host_env("ANTHROPIC_API_KEY"), host_env("OPENAI_API_KEY")],
                    login: Some("run `opencode auth login` on the host".into()),
                    login_step: None,
                }),
                // The npm package (opencode.ai/docs, "Install").
                install: args(&["RUN npm install -g opencode-ai"]),
                operator_config: operator_config::builtin("opencode"),
                ..Default::default()
            },
        ),
        // The image's command, as given: nothing to resume.
        entry("shell", AgentSpec::default()),
        // Amp (ampcode.com/manual) chooses its own thread ids (`T-…`) and
        // keeps its threads on ampcode.com, with the account, not on disk:
        // `amp threads continue` continues the most recent thread
        // (`amp threads continue [threadId]`; the SDK's `continue: true`,
        // ampcode.com/manual/sdk). Nothing there is keyed by the working
        // directory, and no variable relocates its local data: the unit's
        // home is the agent's HOME, so `~/.local/share/amp` (the login,
        // the last thread's id) is the unit's already.
        entry(
            "amp",
            AgentSpec {
                launch: args(&["amp"]),
                continue_args: args(&["threads", "continue"]),
                // `amp login` keeps the login in
                // ~/.local/share/amp/secrets.json; an API key from
                // ampcode.com/settings goes in AMP_API_KEY instead
                // (ampcode.com/manual, "Authentication").
                credentials: Some(Credentials {
                    files: vec![same_place(".local/share/amp/secrets.json")],
                    env: vec![host_env("AMP_API_KEY")],
                    login: Some("run `amp login` on the host".into()),
                    login_step: None,
                }),
                // The npm package (ampcode.com/manual, "You can also
                // install via npm"); the role image needs Node.js.
                install: args(&["RUN npm install -g @sourcegraph/amp"]),
                ..Default::default()
            },
        ),
        // The Kimi Code CLI (moonshotai.github.io/kimi-code, github
        // MoonshotAI/kimi-code). It keeps everything under KIMI_CODE_HOME
        // (`~/.kimi-code`): config, credentials, sessions in
        // `sessions/<workDirKey>/<sessionId>/` (configuration/data-locations).
        // `--continue` takes the most recent session of the working
        // directory from its session listing, and starts a fresh one when
        // there is none; `--session ID` resumes a session kimi made and
        // refuses any other id ("Session … not found": reference/kimi-command,
        // apps/kimi-code/src/tui/kimi-tui.ts). So jackin mints no id for it
        // and continues its latest.
        //
        // Where the legacy Python `kimi-cli` (PyPI, which the tests run)
        // differs, this entry follows the current CLI:
        // - its home is `~/.kimi`, relocated by KIMI_SHARE_DIR, not
        //   KIMI_CODE_HOME (kimi_cli/share.py);
        // - its `--continue` takes the session it recorded as the
        //   directory's last when it exited by itself (kimi_cli/cli,
        //   `_post_run`): after a stopped or removed container there is
        //   none, and it fails ("No previous session found for the working
        //   directory"), so the ladder starts it afresh;
        // - its `--session ID` starts a session under an id it does not
        //   have (`Session.create(work_dir, session_id)`): an entry of its
        //   own can mint and resume by id (tests/kimi.rs applies one).
        entry(
            "kimi",
            AgentSpec {
                launch: args(&["kimi"]),
                continue_args: args(&["--continue"]),
                state_env: state("KIMI_CODE_HOME", ".kimi-code"),
                conversations_by_directory: true,
                credentials: Some(Credentials {
                    // The seed's three: config.toml holds each provider's
                    // `api_key` (configuration/config-files); `kimi login`
                    // keeps its OAuth token in credentials/<name>.json, the
                    // managed provider's being `kimi-code.json`
                    // (configuration/data-locations; the legacy CLI's key
                    // `oauth/kimi-code`); device_id is the identity the
                    // token is used with (`X-Msh-Device-Id`, kimi_cli
                    // auth/oauth.py), which the current layout no longer
                    // lists but the legacy CLI still reads.
                    files: vec![
                        same_place(".kimi-code/config.toml"),
                        same_place(".kimi-code/credentials/kimi-code.json"),
                        CredentialFile {
                            secret: false,
                            ..same_place(".kimi-code/device_id")
                        },
                    ],
                    // The current CLI reads no key from its environment
                    // (configuration/env-vars: "Credential variables such
                    // as KIMI_API_KEY … are not read automatically"): the
                    // key is in config.toml, so nothing goes under token.
                    env: Vec::new(),
                    login: Some("run `kimi login` on the host".into()),
                    login_step: None,
                }),
                // The npm package (guides/getting-started, "npm
                // installation"): the install script would put `kimi` in
                // the home of the user who builds the image, which the
                // agent does not run as. The role image needs Node.js
                // 24.15 or later.
                install: args(&["RUN npm install -g @moonshot-ai/kimi-code"]),
                ..Default::default()
            },
        ),
    ];
    for agent in &mut agents {
        agent.spec.providers = crate::provider::builtin_for(&agent.metadata.name);
    }
    agents
}

/// The settings the built-in entry `agent` sets in its files before every
/// start (see [`AgentSpec::settings`]), each from the vendor's own docs.
fn builtin_settings(agent: &str) -> Vec<AgentSetting> {
    let setting: MakeSetting = |name, file, format, key, value| AgentSetting {
        name: name.into(),
        file: file.into(),
        format,
        key: key.iter().map(|k| (*k).to_owned()).collect(),
        value: SettingValue(value),
        merge: SettingMerge::Set,
    };
    match agent {
        "claude" => claude_settings(setting),
        "codex" => {
            // Both in $CODEX_HOME/config.toml (Codex config basics and
            // reference, developers.openai.com/codex/config-basic):
            // - trust: "Do you trust the contents of this directory?"
            //   opens every new directory (R1); the answer is
            //   `[projects."<dir>"] trust_level = "trusted"`, looked
            //   up for the working directory first.
            // - sandbox: codex's own sandbox needs bubblewrap and user
            //   namespaces the container does not give, so none of its
            //   commands could run (R9). The container is the sandbox:
            //   `sandbox_mode = "danger-full-access"` is the documented
            //   mode for an environment that is isolated already
            //   (developers.openai.com/codex/agent-approvals-security).
            //   Its approval policy stays codex's own.
            vec![
                setting(
                    "trust",
                    "config.toml",
                    SettingFormat::Toml,
                    &["projects", WORKING_DIR_PLACEHOLDER, "trust_level"],
                    "trusted".into(),
                ),
                setting(
                    "sandbox",
                    "config.toml",
                    SettingFormat::Toml,
                    &["sandbox_mode"],
                    "danger-full-access".into(),
                ),
                // codex runs one `notify` program after each turn, with
                // the event's JSON as its last argument (codex config
                // reference, `notify`; 0.147.0 tells agent-turn-complete
                // only): jackin's report program goes first in the argv
                // and runs the operator's own after `--`, if there is one.
                AgentSetting {
                    merge: SettingMerge::Prepend,
                    ..setting(
                        "reports",
                        "config.toml",
                        SettingFormat::Toml,
                        &["notify"],
                        serde_json::json!([
                            "/bin/sh",
                            crate::names::REPORT_PROGRAM,
                            "turn-done",
                            "--"
                        ]),
                    )
                },
            ]
        }
        "gemini" => {
            // Folder trust is off unless the operator turns it on
            // (`security.folderTrust.enabled`); then every new folder
            // asks first, and the answer is kept in
            // `.gemini/trustedFolders.json` as `{"<dir>": "TRUST_FOLDER"}`
            // (Gemini CLI trusted folders,
            // geminicli.com/docs/cli/trusted-folders). Its sandbox is off
            // by default (`tools.sandbox`): nothing to set for it.
            vec![setting(
                "trust",
                ".gemini/trustedFolders.json",
                SettingFormat::Json,
                &[WORKING_DIR_PLACEHOLDER],
                "TRUST_FOLDER".into(),
            )]
        }
        // OpenCode asks no trust question and runs no sandbox of its own
        // (its permissions are per tool, opencode.ai/docs/permissions);
        // aider neither: no settings.
        _ => Vec::new(),
    }
}

/// What an [`AgentSetting`] is made from: name, file, format, key, value.
type MakeSetting = fn(&str, &str, SettingFormat, &[&str], serde_json::Value) -> AgentSetting;

/// claude's built-in settings (see [`builtin_settings`]).
fn claude_settings(setting: MakeSetting) -> Vec<AgentSetting> {
    // The trust question ("Quick safety check: Is this a
    // project you created or one you trust?") comes before the
    // prompt in every new directory, and blocks a restore
    // nobody attached to (R1, R2). The answer is kept per
    // directory in `.claude.json` (under CLAUDE_CONFIG_DIR),
    // `projects[<dir>].hasTrustDialogAccepted` (Claude Code
    // security, docs.claude.com/en/docs/claude-code/security,
    // "Trust verification"). Claude Code runs no sandbox of
    // its own by default: nothing to set for it.
    //
    // Its first-run onboarding (theme, sign-in method, notes)
    // opens every new unit whose `.claude.json` lacks
    // `hasCompletedOnboarding`, logged in or not
    // (anthropics/claude-code#4714), and checks that it reaches
    // Anthropic's servers first: a session sent to another
    // endpoint (a provider, `ANTHROPIC_BASE_URL`) stops there at
    // "Unable to connect to Anthropic services". The providers'
    // own guides for Claude Code set the key by hand; a login
    // still comes from the login forwarded, a key variable
    // (which claude asks about once), or `/login`.
    vec![
        setting(
            "trust",
            ".claude.json",
            SettingFormat::Json,
            &[
                "projects",
                WORKING_DIR_PLACEHOLDER,
                "hasTrustDialogAccepted",
            ],
            true.into(),
        ),
        setting(
            "onboarding",
            ".claude.json",
            SettingFormat::Json,
            &["hasCompletedOnboarding"],
            true.into(),
        ),
    ]
    .into_iter()
    .chain(claude_report_hooks(setting))
    .collect()
}

/// claude's hooks that run jackin's report program, so that attention
/// follows what claude says it does (issue 54): each event's hook list in
/// `settings.json` gets jackin's entry beside the operator's own (Claude
/// Code hooks reference, docs.claude.com/en/docs/claude-code/hooks:
/// SessionStart when a session starts or resumes, UserPromptSubmit when a
/// prompt is sent, Stop when a turn ends, Notification for a permission
/// question, `permission_prompt`, and for a prompt idle for 60 s,
/// `idle_prompt`, SessionEnd when it ends). The command is jackin's own
/// words, never the agent's: the program takes a state word and nothing
/// else. Turned off, all of them, by the setting name `reports`.
fn claude_report_hooks(setting: MakeSetting) -> Vec<AgentSetting> {
    let hook = |matcher: Option<&str>, state: &str| {
        let mut entry = serde_json::json!({"hooks": [{
            "type": "command",
            "command": format!("/bin/sh {} {state}", crate::names::REPORT_PROGRAM),
        }]});
        if let Some(matcher) = matcher {
            entry["matcher"] = matcher.into();
        }
        entry
    };
    let hooks = serde_json::json!({
        "SessionStart": [hook(None, "needs-input")],
        "UserPromptSubmit": [hook(None, "working")],
        "Stop": [hook(None, "turn-done")],
        "Notification": [
            hook(Some("permission_prompt"), "needs-permission"),
            hook(Some("idle_prompt"), "needs-input"),
        ],
        "SessionEnd": [hook(None, "ended")],
    });
    vec![AgentSetting {
        merge: SettingMerge::Append,
        ..setting(
            "reports",
            "settings.json",
            SettingFormat::Json,
            &["hooks"],
            hooks,
        )
    }]
}

/// What a conversation id must look like to an agent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum IdFormat {
    /// Any id jackin accepts (1 to 256 bytes, no control characters).
    #[default]
    Any,
    /// A UUID, such as `0f5c3e0a-6a5b-4c7e-9d1f-2b3a4c5d6e7f`.
    Uuid,
    /// Letters, digits, `-` and `_`.
    Word,
}

impl IdFormat {
    pub fn is_any(&self) -> bool {
        *self == Self::Any
    }

    /// Whether `id` is one the agent takes.
    pub fn fits(self, id: &str) -> bool {
        match self {
            Self::Any => true,
            Self::Uuid => {
                id.len() == 36
                    && id.char_indices().all(|(at, c)| match at {
                        8 | 13 | 18 | 23 => c == '-',
                        _ => c.is_ascii_hexdigit(),
                    })
            }
            Self::Word => {
                !id.is_empty()
                    && id
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_')
            }
        }
    }

    /// What the format asks, for an error message.
    pub fn describe(self) -> &'static str {
        match self {
            Self::Any => "any id",
            Self::Uuid => "a UUID (8-4-4-4-12 hexadecimal digits)",
            Self::Word => "letters, digits, '-' and '_' only",
        }
    }
}

/// How to learn the installed agent's version, and what each rung needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct VersionRule {
    /// The argv that prints the version, run once per image in a throwaway
    /// container; the first `N.N` or `N.N.N` it prints is the version.
    pub probe: Vec<String>,
    /// The least version each rung needs.
    #[serde(default)]
    pub minimum: RungMinimums,
}

/// The least version of the agent each rung needs (`N.N.N`); none: any.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RungMinimums {
    /// For `mintArgs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mint: Option<String>,
    /// For `resumeArgs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resume: Option<String>,
    /// For `continueArgs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub r#continue: Option<String>,
}

/// A version as numbers (`0.41.0` is `[0, 41, 0]`), compared part by part;
/// a missing part is 0. `None` unless `text` is two or three dot-separated
/// numbers.
pub fn parse_version(text: &str) -> Option<Vec<u64>> {
    let parts: Vec<u64> = text
        .split('.')
        .map(|p| p.parse().ok())
        .collect::<Option<_>>()?;
    (2..=3).contains(&parts.len()).then_some(parts)
}

/// The first version (`N.N` or `N.N.N`) in a program's output, such as
/// `gemini --version` prints.
pub fn find_version(output: &str) -> Option<String> {
    output
        .split(|c: char| !(c.is_ascii_digit() || c == '.'))
        .map(|word| word.trim_matches('.'))
        .find(|word| parse_version(word).is_some())
        .map(str::to_owned)
}

/// Whether `installed` is at least `minimum` (both as [`parse_version`]
/// reads them; an unreadable one is not).
pub fn at_least(installed: &str, minimum: &str) -> bool {
    match (parse_version(installed), parse_version(minimum)) {
        (Some(mut have), Some(mut need)) => {
            have.resize(3, 0);
            need.resize(3, 0);
            have >= need
        }
        _ => false,
    }
}

/// How long an agent keeps a conversation on its own.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct Retention {
    /// Days after its last activity that the agent deletes a conversation.
    pub days: u32,
    /// The agent's setting that changes that, which jackin sets in the
    /// unit before every start so that the conversation lasts as long as
    /// the session may be kept. Without one, `describe` and `launch` warn
    /// when a kept session is older than `days`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub setting: Option<RetentionSetting>,
}

/// The name a retention setting goes by among an entry's settings.
pub const RETENTION_SETTING: &str = "retention";

impl Retention {
    /// The retention setting in the general form every setting takes: its
    /// dotted key split at each `.`, its value the days a kept session
    /// needs.
    pub fn as_setting(&self) -> Option<AgentSetting> {
        let setting = self.setting.as_ref()?;
        Some(AgentSetting {
            name: RETENTION_SETTING.into(),
            file: setting.file.clone(),
            format: SettingFormat::Json,
            key: setting.key.split('.').map(str::to_owned).collect(),
            value: SettingValue(setting.format.value(KEPT_RETENTION_DAYS)),
            merge: SettingMerge::Set,
        })
    }
}

/// A value in one of the agent's JSON settings files.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RetentionSetting {
    /// The settings file, relative to the `stateEnv` path.
    pub file: String,
    /// The setting's key, with `.` between nested objects.
    pub key: String,
    /// How the setting spells a number of days.
    pub format: RetentionFormat,
}

/// How a retention setting spells a number of days.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub enum RetentionFormat {
    /// A number: `36500`.
    #[default]
    Days,
    /// A duration string: `"36500d"`.
    Duration,
}

/// How long jackin asks an agent to keep conversations: a kept session has
/// no end date, so about a century.
pub const KEPT_RETENTION_DAYS: u32 = 36_500;

impl RetentionFormat {
    /// The setting's value for `days`.
    pub fn value(self, days: u32) -> serde_json::Value {
        match self {
            Self::Days => serde_json::Value::from(days),
            Self::Duration => serde_json::Value::from(format!("{days}d")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions_are_found_and_compared_part_by_part() {
        assert_eq!(find_version("0.40.1\n").as_deref(), Some("0.40.1"));
        assert_eq!(
            find_version("gemini-cli version v0.41.2 (build 7)").as_deref(),
            Some("0.41.2")
        );
        assert_eq!(find_version("codex-cli 1.2").as_deref(), Some("1.2"));
        assert_eq!(find_version("no version here 7"), None);
        assert!(at_least("0.41.0", "0.41.0"));
        assert!(at_least("0.41", "0.41.0"));
        assert!(at_least("0.100.0", "0.41.0"), "numbers, not text");
        assert!(!at_least("0.40.9", "0.41.0"));
        assert!(!at_least("garbage", "0.41.0"));
    }

    #[test]
    fn id_formats_take_what_the_agents_take() {
        let uuid = "0f5c3e0a-6a5b-4c7e-9d1f-2b3a4c5d6e7f";
        assert!(IdFormat::Uuid.fits(uuid));
        for bad in ["0f5c3e0a6a5b4c7e9d1f2b3a4c5d6e7f", "session-1", ""] {
            assert!(!IdFormat::Uuid.fits(bad), "{bad}");
        }
        assert!(IdFormat::Word.fits("session_1-a"));
        for bad in ["a b", "a/b", "a.b", ""] {
            assert!(!IdFormat::Word.fits(bad), "{bad}");
        }
        assert!(IdFormat::Any.fits("a b/c"));
    }
}
