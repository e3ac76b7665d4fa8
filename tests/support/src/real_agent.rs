//! The real Claude Code and the real Codex CLI under jackin, each holding a
//! conversation with the scripted model (`tests/fixtures/model-server`),
//! which runs as the session's sidecar named `model` and records every
//! request it gets. A test drives the agent in a terminal as a person
//! would, and proves a restore by what the model is sent next: the earlier
//! messages again.
//!
//! The image is made by `scripts/agent-image` (Debian, the two binaries out
//! of their PyPI wheels, the model server, and codex's provider in
//! `/etc/codex/config.toml`); `scripts/test` hands its tag over in
//! `JACKIN_AGENT_IMAGE`. What each CLI shows and sends was seen with Claude
//! Code 2.1.332 and Codex 0.147.0 (`shared/model-server.md`, and the defects
//! R1–R15 of `shared/defects/2026-11-27.md`).

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use super::terminal::Terminal;
use super::{Home, RoleRepo, docker, eventually, git, host_repo, unique};

/// The image `scripts/agent-image` built. Missing, a test fails rather
/// than skip unseen.
pub fn agent_image() -> String {
    super::script_image(
        "JACKIN_AGENT_IMAGE",
        "scripts/agent-image",
        "the real claude and codex image",
    )
}

/// One of the real CLIs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cli {
    Claude,
    Codex,
    /// aider, from its own image (`scripts/aider-image`); it has no login
    /// of its own, only its model's key (`token`).
    Aider,
    /// The legacy Python kimi-cli, from its own image
    /// (`scripts/kimi-image`); its login is its `config.toml`, the
    /// model's endpoint and key (`sync`).
    Kimi,
}

/// aider's environment for a test, each variable for a reason:
/// - LITELLM_LOCAL_MODEL_COST_MAP: litellm reads the model map it ships
///   instead of fetching it when it is imported.
/// - AIDER_MODEL_METADATA_FILE: aider fetches a model's context window and
///   costs from the web unless a local file names the model
///   (aider/models.py, ModelInfoManager.get_model_from_cached_json_db); the
///   image has one for gpt-4o, which an OpenAI key makes aider choose
///   (aider/onboarding.py), and its weak model gpt-4o-mini.
/// - AIDER_CHECK_UPDATE (--check-update, aider/args.py): asks PyPI for a
///   newer aider at every launch (aider/versioncheck.py).
/// - AIDER_ANALYTICS_DISABLE (--analytics-disable): never asks to collect
///   analytics and never sends any.
/// - AIDER_SHOW_RELEASE_NOTES (--show-release-notes): at the first run of a
///   version aider asks whether to open the release notes and waits
///   (aider/main.py).
/// - COLUMNS: aider prints through rich, which wraps at the terminal's
///   width unless COLUMNS says otherwise (rich/console.py, Console.width); a
///   worktree's long git path would wrap the banner's "Git repo:" line.
pub const AIDER_ENV: &str = "    - {name: LITELLM_LOCAL_MODEL_COST_MAP, value: 'True'}\n    \
     - {name: AIDER_MODEL_METADATA_FILE, value: /opt/aider/offline-model-metadata.json}\n    \
     - {name: AIDER_CHECK_UPDATE, value: 'false'}\n    \
     - {name: AIDER_ANALYTICS_DISABLE, value: 'true'}\n    \
     - {name: AIDER_SHOW_RELEASE_NOTES, value: 'false'}\n    \
     - {name: COLUMNS, value: '400'}\n";

/// How the session logs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Login {
    /// The operator's login files, copied into the unit (`authForward: sync`).
    Sync,
    /// A variable in jackin's environment, handed to the engine
    /// (`authForward: token`).
    Token,
}

impl Cli {
    pub fn name(self) -> &'static str {
        match self {
            Self::Claude => "claude",
            Self::Codex => "codex",
            Self::Aider => "aider",
            Self::Kimi => "kimi",
        }
    }

    /// The image its role is built on.
    fn image(self) -> String {
        match self {
            Self::Claude | Self::Codex => agent_image(),
            Self::Aider => super::real_agent_image(),
            Self::Kimi => super::script_image(
                "JACKIN_KIMI_IMAGE",
                "scripts/kimi-image",
                "the real kimi-cli image",
            ),
        }
    }

    /// The instance's `env` entries. claude reads its endpoint from
    /// `ANTHROPIC_BASE_URL` and, with the two switches, sends nothing else
    /// anywhere (model-server.md). codex ignores such a variable; its
    /// provider is in the image's `/etc/codex/config.toml`.
    fn env_lines(self) -> String {
        match self {
            Self::Aider => format!("{}{AIDER_ENV}", self.env()),
            _ => self.env().to_owned(),
        }
    }

    fn env(self) -> &'static str {
        match self {
            Self::Claude => {
                "    - {name: ANTHROPIC_BASE_URL, value: 'http://model:8080'}\n    \
                 - {name: DISABLE_AUTOUPDATER, value: '1'}\n    \
                 - {name: CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC, value: '1'}\n"
            }
            Self::Codex => "    - {name: RUST_LOG, value: warn}\n",
            // Chat Completions at the sidecar (model-server.md).
            Self::Aider => "    - {name: OPENAI_API_BASE, value: 'http://model:8080/v1'}\n",
            // The legacy CLI's home is KIMI_SHARE_DIR, not the current
            // CLI's KIMI_CODE_HOME, which the built-in entry sets: the
            // same directory, so that the login lands where it reads it.
            // Nothing else goes online: no update check
            // (KIMI_CLI_NO_AUTO_UPDATE), no telemetry.
            Self::Kimi => {
                "    - {name: KIMI_SHARE_DIR, value: /home/agent/.kimi-code}\n    \
                 - {name: KIMI_CLI_NO_AUTO_UPDATE, value: '1'}\n    \
                 - {name: KIMI_DISABLE_TELEMETRY, value: '1'}\n"
            }
        }
    }

    /// The operator's login files for `sync`, relative to their home, each
    /// holding `secret` where the real file holds the login: claude's OAuth
    /// file (sent as `Authorization: Bearer`) and its account metadata
    /// (without which it onboards again: anthropics/claude-code#4714);
    /// codex's API-key login (sent as a bearer token, since its provider
    /// says `requires_openai_auth`).
    fn login_files(self, secret: &str) -> Vec<(&'static str, String)> {
        match self {
            Self::Claude => vec![
                (
                    ".claude/.credentials.json",
                    format!(
                        r#"{{"claudeAiOauth": {{"accessToken": "{secret}", "refreshToken": "{secret}-refresh", "expiresAt": 4102444800000, "scopes": ["user:inference", "user:profile"], "subscriptionType": "max"}}}}"#
                    ),
                ),
                (".claude.json", claude_account()),
            ],
            Self::Codex => vec![(
                ".codex/auth.json",
                format!(r#"{{"auth_mode": "apikey", "OPENAI_API_KEY": "{secret}"}}"#),
            )],
            Self::Aider => panic!("aider has no login files: it takes its model's key (token)"),
            // A provider of type `kimi` (Chat Completions) at the sidecar,
            // with the login as its key, sent as `Authorization: Bearer`.
            Self::Kimi => vec![(
                ".kimi-code/config.toml",
                format!(
                    "default_model = \"scripted\"\ntelemetry = false\n\n\
                     [providers.sidecar]\ntype = \"kimi\"\nbase_url = \"http://model:8080/v1\"\n\
                     api_key = \"{secret}\"\n\n\
                     [models.scripted]\nprovider = \"sidecar\"\nmodel = \"scripted\"\n\
                     max_context_size = 131072\n"
                ),
            )],
        }
    }

    /// The variable `token` hands over.
    fn token_variable(self) -> &'static str {
        match self {
            Self::Claude => "ANTHROPIC_API_KEY",
            Self::Codex | Self::Aider => "OPENAI_API_KEY",
            Self::Kimi => panic!("kimi takes no key from its environment: its config.toml (sync)"),
        }
    }

    /// Whether `screen` shows the CLI waiting at its prompt: claude's and
    /// codex's status lines, aider's prompt alone on its line (all that
    /// prompt_toolkit draws again at a size change), kimi's input box.
    pub fn at_prompt(self, screen: &str) -> bool {
        match self {
            Self::Claude => screen.contains("shift+tab to cycle"),
            Self::Codex => screen.contains("gpt-5.2 default"),
            Self::Aider => screen.lines().any(|line| line.trim_end() == ">"),
            // Its input box's title and the status line's context gauge.
            Self::Kimi => screen.contains("── input ─") && screen.contains("context: "),
        }
    }

    /// The question the CLI opens on in a directory it does not trust yet
    /// (R1), which jackin's trust setting answers beforehand.
    pub fn trust_question(self) -> Option<&'static str> {
        match self {
            Self::Claude => Some("Is this a project you created or one you trust?"),
            Self::Codex => Some("Do you trust the contents of this directory?"),
            Self::Aider | Self::Kimi => None,
        }
    }

    /// The command typed at the prompt to end the session.
    pub fn exit_command(self) -> &'static str {
        match self {
            Self::Claude | Self::Aider | Self::Kimi => "/exit",
            Self::Codex => "/quit",
        }
    }
}

/// Account metadata as claude keeps it beside a login: onboarded, so that
/// claude goes straight to its prompt.
fn claude_account() -> String {
    r#"{"hasCompletedOnboarding": true, "lastOnboardingVersion": "2.1.332", "oauthAccount": {"accountUuid": "11111111-1111-4111-8111-111111111111", "emailAddress": "op@example.com", "organizationUuid": "22222222-2222-4222-8222-222222222222"}, "userID": "jackin-test"}"#.to_owned()
}

/// The SHA-256 of `text`, in hex, as the model server compares logins
/// (so that the login itself is never in the instance's spec).
pub fn sha256_hex(text: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("sha256sum")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("sha256sum runs (coreutils)");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_owned()
}

/// One request the model got, as its record says.
#[derive(Debug, Clone)]
pub struct Request {
    pub seq: u64,
    pub api: String,
    /// The path it was posted to (a provider's base URL and the API's).
    pub path: String,
    /// "match" when it carried the session's login, "other" or "none".
    pub login: String,
    /// Every user and assistant text of the conversation so far.
    pub texts: Vec<String>,
    /// The last user message's text.
    pub last: String,
    /// "text" or "tool".
    pub reply: String,
    /// What the tools the model called printed, as the agent sent it back.
    pub tool_outputs: Vec<String>,
}

impl Request {
    /// Whether the conversation it carries holds `words` anywhere.
    pub fn holds(&self, words: &str) -> bool {
        self.texts.iter().any(|text| text.contains(words))
    }
}

/// A real agent's session under jackin, with everything it needs on the
/// host: a home, the operator's login, a role built on the agent image (so
/// that a removed image can be built again: tier 3) and a repository it
/// works on in an isolated checkout.
pub struct AgentSession {
    pub home: Home,
    pub cli: Cli,
    pub name: String,
    /// The login's value: a canary that must never show outside the unit.
    pub secret: String,
    pub login: Login,
    /// The model server's image.
    image: String,
    /// The operator's repository's commit at the start.
    host_head: String,
    extra_spec: String,
    // Dropped after the home's containers are gone.
    role: RoleRepo,
    scratch: tempfile::TempDir,
}

impl AgentSession {
    /// A session of `cli` logged in by `login`, recorded and converged
    /// (`jackin apply`), not yet attached. `extra_spec` are more `spec`
    /// lines (indented two spaces).
    pub fn start(cli: Cli, login: Login, prefix: &str, extra_spec: &str) -> Self {
        let session = Self::new(cli, login, prefix, extra_spec);
        session.apply("");
        session
    }

    /// [`AgentSession::start`] without the apply: the test applies what
    /// the instance needs first (a workspace), then [`AgentSession::apply`].
    pub fn new(cli: Cli, login: Login, prefix: &str, extra_spec: &str) -> Self {
        let home = Home::new();
        let role = RoleRepo::from_image(&cli.image());
        let scratch = tempfile::tempdir().unwrap();
        let host = host_repo(scratch.path());
        // A project that uses aider ignores aider's files; without it,
        // aider asks whether to add them (aider/main.py, check_gitignore).
        std::fs::write(host.join(".gitignore"), ".aider*\n").unwrap();
        git(&host, &["add", ".gitignore"]);
        git(&host, &["commit", "--quiet", "-m", "ignore aider's files"]);
        let host_head = git(&host, &["rev-parse", "HEAD"]);
        // Longer than the 20 characters claude shows of an API key (R3's
        // neighbour: "ANTHROPIC_API_KEY: sk-ant-...<last 20>").
        let secret = unique(&format!("canary-{}-login-value-never-shown", cli.name()));
        if login == Login::Sync {
            for (relative, text) in cli.login_files(&secret) {
                let path = home.operator_home().join(relative);
                std::fs::create_dir_all(path.parent().unwrap()).unwrap();
                std::fs::write(path, text).unwrap();
            }
        } else if cli == Cli::Claude {
            // Account metadata holds no secret and goes under token too.
            std::fs::write(home.operator_home().join(".claude.json"), claude_account()).unwrap();
        }
        Self {
            name: unique(prefix),
            home,
            cli,
            secret,
            login,
            image: agent_image(),
            host_head,
            extra_spec: extra_spec.to_owned(),
            role,
            scratch,
        }
    }

    /// The operator's repository the session works on.
    pub fn host(&self) -> PathBuf {
        self.scratch.path().join("host")
    }

    /// The instance, with `more_env` entries (indented four spaces).
    pub fn yaml(&self, more_env: &str) -> String {
        let forward = match self.login {
            Login::Sync => "sync",
            Login::Token => "token",
        };
        self.role.agent_instance_yaml(
            &self.name,
            self.cli.name(),
            &format!(
                "  authForward: {forward}\n  \
                 mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n  \
                 sidecars: [{{name: model, image: {}, command: [jackin-model-server, --login-sha256, {}]}}]\n  \
                 env:\n{}{more_env}{}",
                self.host().display(),
                self.image,
                sha256_hex(&self.secret),
                self.cli.env_lines(),
                self.extra_spec,
            ),
        )
    }

    /// `jackin apply` of [`AgentSession::yaml`] with `more_env`.
    pub fn apply(&self, more_env: &str) {
        let path = self
            .home
            .write_input(&format!("{}.yaml", self.name), &self.yaml(more_env));
        let out = self.jackin(&["apply", path.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "apply failed:\n{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// Runs `jackin ARGS…` with the login's variable in its environment
    /// under `token` (a command that starts the agent hands it over).
    pub fn jackin(&self, args: &[&str]) -> Output {
        let mut command = self.home.command(args);
        if self.login == Login::Token {
            command.env(self.cli.token_variable(), &self.secret);
        }
        super::run_within(command, Duration::from_secs(600))
    }

    /// Runs `jackin ARGS…`, insisting on success; returns stdout.
    pub fn ok(&self, args: &[&str]) -> String {
        super::succeeded(args, self.jackin(args))
    }

    /// `jackin attach` in a real terminal (xterm-256color, 120×40).
    pub fn attach(&self) -> Terminal {
        let mut env = "TERM=xterm-256color".to_owned();
        if self.login == Login::Token {
            env.push_str(&format!(" {}={}", self.cli.token_variable(), self.secret));
        }
        Terminal::start_with_env(&self.home, &format!("attach {}", self.name), &env)
    }

    /// Waits until the agent shows its prompt on `term`.
    pub fn wait_at_prompt(&self, term: &Terminal) {
        let cli = self.cli;
        term.wait_until(&format!("{}'s prompt", cli.name()), |screen| {
            cli.at_prompt(screen)
        });
    }

    /// Attaches again to an agent that was started anew (a restore, a
    /// resume, a rollout), up to its prompt.
    pub fn reattach(&self) -> Terminal {
        let term = self.attach();
        self.settle_at_prompt(&term);
        term
    }

    /// Waits, once jackin says it attached (again), for the agent's prompt
    /// as drawn now. What jackin replays of the agent's earlier output may
    /// hold an earlier prompt, drawn before the agent now running read a
    /// key; so the screen is forgotten once attached and the agent made to
    /// draw again (a size change). The words "attached to" must be new on
    /// the screen: a caller forgets the screen before the step that
    /// attaches.
    pub fn settle_at_prompt(&self, term: &Terminal) {
        term.wait_long("Ctrl-P Ctrl-Q detaches");
        std::thread::sleep(Duration::from_secs(1));
        term.forget_screen();
        term.nudge_size();
        self.wait_at_prompt(term);
    }

    /// The first attach of a new session, up to the prompt: no trust
    /// question comes first (jackin's trust setting answered it, R1); under
    /// `token`, claude's question whether to use the key is answered yes.
    pub fn first_attach(&self) -> Terminal {
        let term = self.attach();
        if self.login == Login::Token && self.cli == Cli::Claude {
            term.wait_long("Do you want to use this API key?");
            term.press_until("Up", "❯ Yes");
            term.keys(&["Enter"]);
        }
        self.wait_at_prompt(&term);
        term
    }

    /// Types `words` at the agent's prompt as a person would, and waits
    /// until the model has been asked and its answer is on the screen.
    /// Returns the request that carried them. Words that never reach the
    /// model (typed while a starting agent's terminal was not yet its own)
    /// are typed again, as a person would, once the prompt shows.
    pub fn say(&self, term: &Terminal, words: &str) -> Request {
        for _ in 0..3 {
            term.type_message(words);
            if let Some(request) = self.request_within(words, Duration::from_secs(60)) {
                term.wait_long(&format!("heard \"{words}\""));
                return request;
            }
            term.nudge_size();
            self.wait_at_prompt(term);
        }
        panic!(
            "{words:?} never reached the model; the screen:\n{}",
            term.screen()
        );
    }

    /// The first request whose last user message holds `words`, if one
    /// comes within `limit`.
    fn request_within(&self, words: &str, limit: Duration) -> Option<Request> {
        let deadline = Instant::now() + limit;
        loop {
            let found = self.requests().into_iter().find(|r| r.last.contains(words));
            if found.is_some() || Instant::now() > deadline {
                return found;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
    }

    /// The first request whose last user message holds `words`.
    pub fn wait_for_request(&self, words: &str) -> Request {
        self.request_within(words, PATIENCE)
            .unwrap_or_else(|| panic!("no request to the model held {words:?} within {PATIENCE:?}"))
    }

    /// The model sidecar's container.
    pub fn sidecar(&self) -> String {
        jackin_act::sidecar_name(&self.home.container(&self.name), "model")
    }

    /// Every request the model got so far, in order (its log; a sidecar
    /// made anew starts a new one).
    pub fn requests(&self) -> Vec<Request> {
        let out = Command::new("docker")
            .args(["logs", &self.sidecar()])
            .output()
            .expect("docker runs");
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
            .filter(|record| record.get("seq").is_some())
            .map(|record| Request {
                seq: record["seq"].as_u64().unwrap(),
                api: record["api"].as_str().unwrap_or_default().to_owned(),
                path: record["path"].as_str().unwrap_or_default().to_owned(),
                login: record["login"].as_str().unwrap_or_default().to_owned(),
                texts: strings(&record["texts"]),
                last: record["last"].as_str().unwrap_or_default().to_owned(),
                reply: record["reply"].as_str().unwrap_or_default().to_owned(),
                tool_outputs: strings(&record["tool_outputs"]),
            })
            .collect()
    }

    /// The agent's container.
    pub fn container(&self) -> String {
        self.home.container(&self.name)
    }

    /// The instance's isolated checkout on the host.
    pub fn checkout(&self) -> PathBuf {
        self.home.checkout(&self.name)
    }

    /// The unit's home directory.
    pub fn unit_home(&self) -> PathBuf {
        self.home.unit(&self.name).join("home")
    }

    /// One `jackin controller --once` pass; returns its output.
    pub fn pass(&self) -> String {
        let out = self.ok(&["controller", "--once"]);
        assert!(out.starts_with("pass complete"), "{out}");
        out
    }

    /// The files under `dir` that hold the login's value.
    pub fn files_holding_secret(&self, dir: &Path) -> Vec<PathBuf> {
        super::files_holding(dir, &self.secret)
    }

    /// The operator's repository: at the same commit, with a clean tree.
    pub fn assert_host_untouched(&self) {
        let host = self.host();
        assert_eq!(git(&host, &["status", "--porcelain"]), "");
        assert_eq!(git(&host, &["rev-parse", "HEAD"]), self.host_head);
    }

    /// Waits until the agent's container runs again.
    pub fn wait_running(&self) {
        eventually(
            Duration::from_secs(180),
            "the agent's container runs",
            || {
                let out = Command::new("docker")
                    .args(["inspect", "-f", "{{.State.Running}}", &self.container()])
                    .output()
                    .unwrap();
                String::from_utf8_lossy(&out.stdout).trim() == "true"
            },
        );
    }
}

/// The strings of a JSON list (none when it is not one).
fn strings(list: &serde_json::Value) -> Vec<String> {
    list.as_array()
        .map(|items| {
            items
                .iter()
                .filter_map(|t| t.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default()
}

/// Stops `container` as `docker stop` does, waiting for it.
pub fn stop(container: &str) {
    docker(&["stop", "--time", "10", container]);
}

/// How long a step of a real agent may take on a loaded 2-core machine: a
/// limit that only a hang reaches.
pub const PATIENCE: Duration = Duration::from_secs(180);

impl Terminal {
    /// Waits, within [`PATIENCE`], until `text` is on the screen.
    pub fn wait_long(&self, text: &str) {
        self.wait_until(&format!("{text:?}"), |screen| screen.contains(text));
    }

    /// Waits, within [`PATIENCE`], until the screen is as `shows` wants;
    /// `what` names it in the failure.
    pub fn wait_until(&self, what: &str, shows: impl Fn(&str) -> bool) {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            if shows(&self.screen()) {
                return;
            }
            std::thread::sleep(Duration::from_millis(250));
        }
        panic!("{what} did not appear; the screen:\n{}", self.screen());
    }

    /// Types a message and sends it, as a person does: the words, a look
    /// that they arrived, then Enter. A program that has drawn its prompt
    /// may not read keys yet, and what it missed is typed again (after
    /// Ctrl-U clears what part of it arrived). The Enter goes a moment after
    /// the words: keys that arrive together are read as a paste, whose Enter
    /// is a new line rather than a send (model-server.md).
    pub fn type_message(&self, words: &str) {
        let deadline = Instant::now() + PATIENCE;
        loop {
            let status = self
                .tmux()
                .args(["send-keys", "-l", "-t", &self.window(), words])
                .status()
                .unwrap();
            assert!(status.success());
            if self.shows_within(words, Duration::from_secs(5)) {
                break;
            }
            assert!(
                Instant::now() < deadline,
                "{words:?} never showed as typed; the screen:\n{}",
                self.screen()
            );
            self.keys(&["C-u"]);
        }
        std::thread::sleep(Duration::from_millis(700));
        self.keys(&["Enter"]);
    }

    /// Whether `text` shows on the screen within `limit`.
    fn shows_within(&self, text: &str, limit: Duration) -> bool {
        let deadline = Instant::now() + limit;
        loop {
            if self.screen().contains(text) {
                return true;
            }
            if Instant::now() > deadline {
                return false;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
    }

    /// Presses `key` until `text` shows: a question may be drawn a moment
    /// before the program reads its keys, and what comes before is lost.
    pub fn press_until(&self, key: &str, text: &str) {
        let deadline = Instant::now() + PATIENCE;
        while Instant::now() < deadline {
            self.keys(&[key]);
            for _ in 0..8 {
                std::thread::sleep(Duration::from_millis(250));
                if self.screen().contains(text) {
                    return;
                }
            }
        }
        panic!("{text:?} did not appear; the screen:\n{}", self.screen());
    }

    /// Forgets what the screen shows and held: the terminal is reset and
    /// its history cleared, so that what appears next was drawn after.
    pub fn forget_screen(&self) {
        for args in [
            vec!["send-keys", "-R", "-t", &self.window()],
            vec!["clear-history", "-t", &self.window()],
        ] {
            let status = self.tmux().args(&args).status().unwrap();
            assert!(status.success(), "tmux {args:?}");
        }
    }

    /// Narrows the terminal by a column and widens it back, as a person
    /// dragging the window's edge: a full-screen program draws again.
    pub fn nudge_size(&self) {
        self.resize(119, 40);
        std::thread::sleep(Duration::from_millis(300));
        self.resize(120, 40);
    }

    /// Detaches with Ctrl-P Ctrl-Q and waits for jackin to say so.
    pub fn detach(&self) {
        self.keys(&["C-p", "C-q"]);
        self.wait_long("detached;");
    }
}

/// What interrupts the session between the two messages.
#[derive(Debug, Clone, Copy)]
pub enum Interruption {
    /// `docker stop`, then a controller pass: tier 1.
    Stopped,
    /// `docker rm -f`, then a controller pass: tier 2.
    Removed,
    /// The container and its image removed, then a controller pass: the
    /// role is built again at its pinned commit (tier 3).
    ImageRemoved,
    /// `set-phase kept`, then `attach` resumes it (Screen D).
    KeptThenResumed,
    /// A variable added to the spec, then `jackin rollout`.
    RolledOut,
    /// The agent's own exit, with unfinished work, then "Return to agent".
    ReturnedTo,
}

/// Interrupts the session as `interruption` says, and returns a terminal
/// attached to the agent again, at its prompt (a tier restore checked to
/// be of its tier).
pub fn interrupt(session: &AgentSession, term: Terminal, interruption: Interruption) -> Terminal {
    let name = session.name.as_str();
    let tier_after_a_pass = |tier: u64| {
        session.pass();
        assert_eq!(
            session.home.object(name)["status"]["restore"]["tier"],
            tier,
            "{interruption:?}"
        );
        session.reattach()
    };
    match interruption {
        Interruption::ReturnedTo => {
            // Unfinished work in the checkout, so that the end asks.
            std::fs::write(session.checkout().join("draft.md"), "draft\n").unwrap();
            term.type_message(session.cli.exit_command());
            term.wait_long("Review the above before choosing");
            term.keys(&["Enter"]);
            term.wait_long("▸ Return to agent");
            term.forget_screen();
            term.keys(&["Enter"]);
            session.settle_at_prompt(&term);
            return term;
        }
        _ => term.detach(),
    }
    drop(term);
    match interruption {
        Interruption::Stopped => {
            stop(&session.container());
            tier_after_a_pass(1)
        }
        Interruption::Removed => {
            docker(&["rm", "-f", &session.container()]);
            tier_after_a_pass(2)
        }
        Interruption::ImageRemoved => {
            let recipe = session.home.object(name)["status"]["recipe"].clone();
            docker(&["rm", "-f", &session.container()]);
            docker(&["rmi", "-f", recipe["imageId"].as_str().unwrap()]);
            tier_after_a_pass(3)
        }
        Interruption::KeptThenResumed => {
            session.ok(&["set-phase", name, "kept"]);
            assert_eq!(session.home.object(name)["status"]["phase"], "Kept");
            let term = session.attach();
            term.wait_long("Enter resume · Esc back");
            term.forget_screen();
            term.keys(&["Enter"]);
            session.settle_at_prompt(&term);
            term
        }
        Interruption::RolledOut => {
            session.apply("    - {name: JACKIN_TEST_ROLLOUT, value: two}\n");
            let out = session.ok(&["rollout", name]);
            assert!(out.contains("conversation kept"), "{out}");
            let environment = docker(&["exec", &session.container(), "env"]);
            assert!(
                environment.lines().any(|l| l == "JACKIN_TEST_ROLLOUT=two"),
                "the rollout did not reach the container"
            );
            session.reattach()
        }
        Interruption::ReturnedTo => unreachable!("handled above"),
    }
}
