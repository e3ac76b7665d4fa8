//! The credential hand-off, against the real engine: a logged-in operator's
//! sessions start logged in, under `sync` (the host's login files copied
//! into the unit's home) and under `token` (variables from references); the
//! login's value lands in the unit's home or the engine and nowhere else
//! jackin writes or prints; a purge takes it away; a missing login is said
//! with a hint; and a link the agent plants where a login lands never makes
//! jackin write outside the unit.
//!
//! The agents are stand-ins behind a login gate (`tests/fixtures/fake-login`)
//! that lets each start only as the real CLI would. Every test's operator
//! home is its own (`JACKIN_CREDENTIALS_HOME`): no test reads the logins of
//! whoever runs it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use support::{
    Home, OpenWatch, RoleRepo, assert_never_shown, condition, docker, ensure_busybox, eventually,
    files_holding, mknod_dev_null, unique,
};

/// The four agents a login is forwarded to, each with its login files on
/// the host (holding `marker`), where the secret one lands in the unit's
/// home, what the gate says once it saw it (from the file, from the
/// variable of `token`), and that variable.
struct Agent {
    name: &'static str,
    files: Vec<(&'static str, String)>,
    lands: &'static str,
    via_file: &'static str,
    via_token: &'static str,
    variable: &'static str,
}

fn agents(marker: &str) -> Vec<Agent> {
    vec![
        Agent {
            name: "claude",
            files: vec![
                (
                    ".claude/.credentials.json",
                    format!(
                        r#"{{"claudeAiOauth": {{"accessToken": "{marker}", "refreshToken": "{marker}-r", "expiresAt": 1}}}}"#
                    ),
                ),
                (".claude.json", account_file()),
            ],
            lands: ".claude/.credentials.json",
            via_file: "file .credentials.json",
            via_token: "env CLAUDE_CODE_OAUTH_TOKEN",
            variable: "CLAUDE_CODE_OAUTH_TOKEN",
        },
        Agent {
            name: "codex",
            files: vec![(
                ".codex/auth.json",
                format!(
                    r#"{{"OPENAI_API_KEY": null, "tokens": {{"access_token": "{marker}", "refresh_token": "{marker}-r"}}}}"#
                ),
            )],
            lands: ".codex/auth.json",
            via_file: "file auth.json",
            via_token: "file auth.json",
            variable: "OPENAI_API_KEY",
        },
        Agent {
            name: "gemini",
            files: vec![
                (
                    ".gemini/oauth_creds.json",
                    format!(r#"{{"access_token": "{marker}", "refresh_token": "{marker}-r"}}"#),
                ),
                (
                    ".gemini/settings.json",
                    r#"{"security": {"auth": {"selectedType": "oauth-personal"}}, "mcpServers": {"private": {"command": "PRIVATE-SERVER"}}}"#
                        .to_owned(),
                ),
            ],
            lands: ".gemini/oauth_creds.json",
            via_file: "file oauth_creds.json",
            via_token: "env GEMINI_API_KEY",
            variable: "GEMINI_API_KEY",
        },
        Agent {
            name: "opencode",
            files: vec![(
                ".local/share/opencode/auth.json",
                format!(r#"{{"anthropic": {{"type": "api", "key": "{marker}"}}}}"#),
            )],
            lands: ".local/share/opencode/auth.json",
            via_file: "file auth.json",
            via_token: "env ANTHROPIC_API_KEY",
            variable: "ANTHROPIC_API_KEY",
        },
    ]
}

/// Claude's account file on the host: onboarded, with another project's
/// history, which stays on the host.
fn account_file() -> String {
    r#"{"hasCompletedOnboarding": true, "oauthAccount": {"emailAddress": "op@example.com"}, "projects": {"/elsewhere": {"history": ["PRIVATE-HISTORY"]}}}"#.to_owned()
}

/// Writes `text` at `relative` in the operator's home.
fn write_host(home: &Home, relative: &str, text: &str) {
    let path = home.operator_home().join(relative);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// What the login gate said about each start of `name`.
fn login_log(unit: &Path) -> Vec<String> {
    std::fs::read_to_string(unit.join("home/agent-login.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until the gate has said `line` for `name`.
fn wait_for_login(home: &Home, name: &str, line: &str) {
    let unit = home.unit(name);
    eventually(
        Duration::from_secs(30),
        &format!("{name}: the gate says {line:?}"),
        || login_log(&unit).iter().any(|l| l == line),
    );
}

/// Applies `yaml` as `file` with `env` added to jackin's environment;
/// returns the output, whatever the exit status.
fn apply_with(home: &Home, file: &str, yaml: &str, env: &[(&str, &str)]) -> Output {
    let path = home.write_input(file, yaml);
    let mut cmd = home.command(&["apply", path.to_str().unwrap()]);
    cmd.envs(env.iter().copied());
    cmd.output().expect("jackin runs")
}

/// Waits until the agent of `name` started a conversation: past the login
/// gate and its own first questions.
fn wait_for_conversation(home: &Home, name: &str) {
    eventually(
        Duration::from_secs(30),
        &format!("{name}: a conversation starts"),
        || !home.agent_starts(name).is_empty(),
    );
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A workspace named `name` with `spec`.
fn workspace_yaml(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    )
}

fn pass(home: &Home) -> String {
    String::from_utf8_lossy(&home.jackin(&["controller", "--once"]).stdout).into_owned()
}

#[test]
fn every_agent_starts_logged_in_under_sync_and_the_login_lives_and_dies_with_the_unit() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_login_agents();
    let marker = unique("login-secret");
    let agents = agents(&marker);
    for agent in &agents {
        for (path, text) in &agent.files {
            write_host(&home, path, text);
        }
    }
    // gh, forwarded to every session of the workspace.
    write_host(
        &home,
        ".config/gh/hosts.yml",
        &format!("github.com:\n    oauth_token: {marker}\n    user: op\n"),
    );
    home.apply("ws", &workspace_yaml("desk", "{credentials: [{name: gh}]}"));
    let mut units = Vec::new();
    for agent in &agents {
        let yaml = role.agent_instance_yaml(agent.name, agent.name, "  workspace: desk\n");
        let file = format!("{}.yaml", agent.name);
        let out = apply_with(&home, &file, &yaml, &[]);
        assert!(out.status.success(), "{}", stderr(&out));
        // The launch said what it forwarded, by name.
        assert!(
            stderr(&out).contains(&format!(
                "instance/{0}: [credentials] {0}: ~/{1} → ~/{2}",
                agent.name, agent.files[0].0, agent.lands
            )),
            "{}",
            stderr(&out)
        );
        assert!(
            stderr(&out).contains(&format!(
                "instance/{}: [credentials] gh: ~/.config/gh/hosts.yml → ~/.config/gh/hosts.yml",
                agent.name
            )),
            "{}",
            stderr(&out)
        );
        wait_for_login(
            &home,
            agent.name,
            &format!("{} logged-in {}", agent.name, agent.via_file),
        );
        let unit = home.unit(agent.name);
        let login = unit.join("home").join(agent.lands);
        assert!(std::fs::read_to_string(&login).unwrap().contains(&marker));
        let mode = std::fs::metadata(&login).unwrap().permissions().mode() & 0o777;
        assert_eq!(
            mode, 0o600,
            "{}: readable by the agent's uid only",
            agent.name
        );
        let gh = unit.join("home/.config/gh/hosts.yml");
        assert!(std::fs::read_to_string(gh).unwrap().contains(&marker));
        units.push(unit);
    }
    // Every agent is past its gate and its own questions: its conversation
    // started. Claude is past its onboarding. Its account file holds the
    // forwarded keys and the trust stored in the unit, not the host's other
    // projects; gemini's settings only the auth type.
    for agent in &agents {
        wait_for_conversation(&home, agent.name);
    }
    assert!(home.agent_starts("claude")[0].starts_with("claude minted "));
    let claude = &units[0];
    let account = std::fs::read_to_string(claude.join("home/.claude/.claude.json")).unwrap();
    assert!(
        account.contains("\"hasCompletedOnboarding\": true"),
        "{account}"
    );
    assert!(!account.contains("PRIVATE-HISTORY"), "{account}");
    let settings = std::fs::read_to_string(units[2].join("home/.gemini/settings.json")).unwrap();
    assert!(
        settings.contains("oauth-personal") && !settings.contains("PRIVATE-SERVER"),
        "{settings}"
    );

    // The value is in the units' homes and nowhere else under JACKIN_HOME,
    // and in nothing an operator reads.
    let stray: Vec<PathBuf> = files_holding(home.path(), &marker)
        .into_iter()
        .filter(|p| !units.iter().any(|u| p.starts_with(u.join("home"))))
        .collect();
    assert_eq!(
        stray,
        Vec::<PathBuf>::new(),
        "the login is outside a unit's home"
    );
    for agent in &agents {
        assert_never_shown(&home, agent.name, &marker);
    }
    let described = home.ok(&["describe", "claude"]);
    assert!(
        described.contains("authForward sync of claude, gh")
            && described
                .contains("claude: ~/.claude/.credentials.json → ~/.claude/.credentials.json"),
        "{described}"
    );

    // A purge takes the logins with the unit.
    for agent in &agents {
        home.ok(&["delete", agent.name]);
    }
    for unit in &units {
        assert!(!unit.exists(), "{} is left", unit.display());
    }
    assert_eq!(files_holding(home.path(), &marker), Vec::<PathBuf>::new());
}

#[test]
fn every_agent_starts_logged_in_under_token_and_the_value_reaches_the_engine_only() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_login_agents();
    let marker = unique("token-secret");
    // Account metadata holds no secret: it goes under token too, so claude
    // knows its account and skips its onboarding.
    write_host(&home, ".claude.json", &account_file());
    let env: Vec<(&str, &str)> = [
        "CLAUDE_CODE_OAUTH_TOKEN",
        "OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "ANTHROPIC_API_KEY",
        "GH_TOKEN",
    ]
    .into_iter()
    .map(|name| (name, marker.as_str()))
    .collect();
    home.apply(
        "ws",
        &workspace_yaml("tok", "{authForward: token, credentials: [{name: gh}]}"),
    );
    for agent in agents(&marker) {
        let yaml = role.agent_instance_yaml(agent.name, agent.name, "  workspace: tok\n");
        let file = format!("{}.yaml", agent.name);
        let out = apply_with(&home, &file, &yaml, &env);
        assert!(out.status.success(), "{}", stderr(&out));
        assert!(
            stderr(&out).contains(&format!(
                "instance/{0}: [credentials] {0}: {1} (from hostEnv {1})",
                agent.name, agent.variable
            )),
            "{}",
            stderr(&out)
        );
        // codex logs in by its login step, into a file on the
        // container's tmpfs (defect R3).
        wait_for_login(
            &home,
            agent.name,
            &format!("{} logged-in {}", agent.name, agent.via_token),
        );
        // The agent got the value, from the engine.
        let container = home.container(agent.name);
        let environment = docker(&["exec", &container, "env"]);
        for variable in [agent.variable, "GH_TOKEN"] {
            assert!(
                environment
                    .lines()
                    .any(|line| line == format!("{variable}={marker}")),
                "{}: {variable} is not in the agent's environment",
                agent.name
            );
        }
        // No login file was copied under token; codex's is a link into
        // the container, which holds the file.
        let lands = home.unit(agent.name).join("home").join(agent.lands);
        match std::fs::read_link(&lands) {
            Ok(target) => assert!(
                agent.name == "codex" && target.starts_with("/jackin/login"),
                "{}: {} links to {}",
                agent.name,
                lands.display(),
                target.display()
            ),
            Err(_) => assert!(!lands.exists(), "{}", lands.display()),
        }
        assert_never_shown(&home, agent.name, &marker);
    }
    // Their conversations start.
    for name in ["claude", "codex", "gemini", "opencode"] {
        wait_for_conversation(&home, name);
    }
    assert!(home.agent_starts("claude")[0].starts_with("claude minted "));
    assert_eq!(
        files_holding(home.path(), &marker),
        Vec::<PathBuf>::new(),
        "a token is never written under JACKIN_HOME"
    );
    let described = home.ok(&["describe", "claude"]);
    assert!(
        described.contains("authForward token of claude, gh")
            && described
                .contains("claude: CLAUDE_CODE_OAUTH_TOKEN (from hostEnv CLAUDE_CODE_OAUTH_TOKEN)")
            && described.contains("gh: GH_TOKEN (from hostEnv GH_TOKEN)"),
        "{described}"
    );

    // An instance that says `none` gets nothing, whatever its workspace:
    // claude will not start.
    let none =
        role.agent_instance_yaml("bare", "claude", "  workspace: tok\n  authForward: none\n");
    apply_with(&home, "bare.yaml", &none, &env);
    wait_for_login(&home, "bare", "claude not-logged-in");
    let container = home.container("bare");
    let printed = std::process::Command::new("docker")
        .args(["inspect", "-f", "{{json .Config.Env}}", &container])
        .output()
        .unwrap();
    assert!(
        !String::from_utf8_lossy(&printed.stdout).contains(&marker),
        "authForward none passes no variable"
    );
}

/// Defect R3 (shared/defects/2026-11-27.md): codex 0.147 given
/// OPENAI_API_KEY without an auth.json opens on its sign-in menu, not a
/// conversation, so `authForward: token` did not log it in (and the menu's
/// option 3 shows the key on screen). Its login step logs it in: the key
/// goes to `codex login --with-api-key` on its standard input, the login
/// it writes lives on the container's tmpfs, the agent's environment no
/// longer holds the key, and no file under JACKIN_HOME ever does, after
/// the start, after a keep and after the next start.
#[test]
fn codex_starts_logged_in_under_token() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_login_agents();
    let marker = unique("token-secret");
    home.apply("ws", &workspace_yaml("tok", "{authForward: token}"));
    let yaml = role.agent_instance_yaml("codex", "codex", "  workspace: tok\n");
    let env = [("OPENAI_API_KEY", marker.as_str())];
    let out = apply_with(&home, "codex.yaml", &yaml, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stderr(&out).contains(
            "[credentials] codex: logged in by `codex login --with-api-key` (OPENAI_API_KEY on \
             its standard input, its login ~/.codex/auth.json kept on the container's tmpfs)"
        ),
        "{}",
        stderr(&out)
    );
    wait_for_login(&home, "codex", "codex logged-in file auth.json");
    wait_for_conversation(&home, "codex");
    let container = home.container("codex");
    // The login is on the tmpfs, and the agent's process tree has no key.
    let kept = docker(&["exec", &container, "cat", "/jackin/login/0-codex-auth.json"]);
    assert!(kept.contains(&marker), "the login step wrote no login");
    // The agent's processes are those under the init (pid 1) other than
    // the wrapper's shells, which read the variable (a `docker exec` is
    // under no init). A process's environment in /proc is as it started.
    let agent_env = docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        r#"for p in /proc/[0-9]*; do
             pid=${p#/proc/}; a=$pid
             while [ "$a" != 1 ] && [ "$a" != 0 ]; do
               read -r _ _ _ a _ < /proc/$a/stat || a=0
             done
             read -r _ comm _ < $p/stat || continue
             [ "$a" = 1 ] && [ "$pid" != 1 ] && [ "$comm" != "(sh)" ] &&
               { echo "agent $comm"; tr '\0' '\n' < $p/environ; }
           done
           true"#,
    ]);
    assert!(agent_env.contains("agent "), "no agent process found");
    assert!(
        !agent_env.contains("OPENAI_API_KEY="),
        "the key is in the environment of the agent's processes"
    );
    // With no container (kept), there is no log to read: what jackin
    // shows of the session is its describe.
    let nowhere = |when: &str, container: bool| {
        assert_eq!(
            files_holding(home.path(), &marker),
            Vec::<PathBuf>::new(),
            "{when}: a file under JACKIN_HOME holds the key"
        );
        match container {
            true => assert_never_shown(&home, "codex", &marker),
            false => assert!(!home.ok(&["describe", "codex"]).contains(&marker)),
        }
    };
    nowhere("after the start", true);
    home.ok(&["set-phase", "codex", "kept"]);
    nowhere("after a keep", false);
    // A resume from a shell without the key would start codex logged out:
    // refused, naming the variable, and nothing changes.
    for resume in [&["set-phase", "codex", "running"][..], &["attach", "codex"]] {
        let out = home
            .command(resume)
            .env_remove("OPENAI_API_KEY")
            .output()
            .unwrap();
        let said = stderr(&out);
        assert!(!out.status.success(), "{resume:?}: {said}");
        assert!(
            said.contains("logs in by token") && said.contains("OPENAI_API_KEY"),
            "{resume:?}: {said}"
        );
        assert!(!said.contains(&marker), "{said}");
        assert_eq!(home.object("codex")["status"]["phase"], "Kept");
    }
    let out = home
        .command(&["set-phase", "codex", "running"])
        .env("OPENAI_API_KEY", &marker)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    eventually(
        Duration::from_secs(30),
        "codex logs in again at its next start",
        || {
            login_log(&home.unit("codex"))
                .iter()
                .filter(|l| *l == "codex logged-in file auth.json")
                .count()
                == 2
        },
    );
    nowhere("after the next start", true);
    docker(&["stop", "-t", "2", &home.container("codex")]);
    // The events are in JACKIN_HOME, and `describe` shows them.
    nowhere("after a stop", true);
    made_again_only_with_the_key(&home, &marker);
}

/// A session under `token` made again from its save starts as a resume
/// does (issue 55): not from a shell without the key, and then nothing is
/// made; with it, it logs in.
fn made_again_only_with_the_key(home: &Home, marker: &str) {
    home.ok(&["delete", "codex", "--force"]);
    let restore = |key: Option<&str>| {
        let mut command = home.command(&["restore-discarded", "codex", "--session"]);
        match key {
            Some(key) => command.env("OPENAI_API_KEY", key),
            None => command.env_remove("OPENAI_API_KEY"),
        };
        command.output().unwrap()
    };
    let out = restore(None);
    let said = stderr(&out);
    assert!(!out.status.success(), "{said}");
    assert!(
        said.contains("logs in by token") && said.contains("OPENAI_API_KEY"),
        "{said}"
    );
    assert!(
        !home.jackin(&["get", "codex"]).status.success(),
        "nothing was made"
    );
    let out = restore(Some(marker));
    assert!(out.status.success(), "{}", stderr(&out));
    wait_for_login(home, "codex", "codex logged-in file auth.json");
}

#[test]
fn a_missing_login_is_said_with_a_hint_and_the_agent_does_not_start_logged_in() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_login_agents();
    // Nothing on the host: claude refuses to start.
    let out = apply_with(
        &home,
        "claude.yaml",
        &role.agent_instance_yaml("bare", "claude", ""),
        &[],
    );
    let said = stderr(&out);
    assert!(
        said.contains(
            "instance/bare: [credentials] claude: ~/.claude/.credentials.json and \
             ~/.claude.json not found on the host — run `claude` once on the host to log in, or \
             set authForward: token with CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_API_KEY"
        ),
        "{said}"
    );
    // One line for the set, so one event: each file was one (issue 57).
    assert_eq!(said.matches("not found on the host").count(), 1, "{said}");
    wait_for_login(&home, "bare", "claude not-logged-in");
    let described = home.ok(&["describe", "bare"]);
    assert!(
        described.contains(
            "missing: claude: ~/.claude/.credentials.json and ~/.claude.json not found on the host"
        ) && described.matches("CredentialsMissing").count() == 1,
        "{described}"
    );
    let out = apply_with(
        &home,
        "codex.yaml",
        &role.agent_instance_yaml("codex", "codex", ""),
        &[],
    );
    assert!(
        stderr(&out).contains(
            "instance/codex: [credentials] codex: ~/.codex/auth.json not found on the host — run \
             `codex login` on the host, or set authForward: token with OPENAI_API_KEY"
        ),
        "{}",
        stderr(&out)
    );
    wait_for_login(&home, "codex", "codex not-logged-in");

    // Logged in, but the account file is missing: the launch says so, and
    // claude starts all the same, its first-run onboarding marked done by
    // jackin's `onboarding` setting (issue 55; before it, claude stopped
    // there).
    write_host(
        &home,
        ".claude/.credentials.json",
        r#"{"claudeAiOauth": {"accessToken": "a"}}"#,
    );
    let out = apply_with(
        &home,
        "onboard.yaml",
        &role.agent_instance_yaml("onboard", "claude", ""),
        &[],
    );
    assert!(
        stderr(&out).contains("[credentials] claude: ~/.claude.json not found on the host"),
        "{}",
        stderr(&out)
    );
    wait_for_login(&home, "onboard", "claude logged-in file .credentials.json");
    // A token mode with no variable set says what to export.
    home.apply("ws", &workspace_yaml("tok", "{authForward: token}"));
    let out = apply_with(
        &home,
        "tok.yaml",
        &role.agent_instance_yaml("tok", "gemini", "  workspace: tok\n"),
        &[],
    );
    // The process that looked is named, with its pid.
    for part in [
        "instance/tok: [credentials] gemini: no token (GEMINI_API_KEY: host variable \
         GEMINI_API_KEY is not set in the environment of this `jackin apply` (pid ",
        ")) — export GEMINI_API_KEY for jackin, or set authForward: sync (run `gemini` once on \
         the host and log in with Google)",
    ] {
        assert!(stderr(&out).contains(part), "{part:?} in {}", stderr(&out));
    }
    wait_for_login(&home, "tok", "gemini not-logged-in");
}

/// M2: the agent (root in its container) made its `.claude.json`, where
/// the host's account keys are merged in, a device node. The next start
/// replaces it with the keys, and jackin never opens the node (opening
/// some devices has effects).
#[test]
fn a_device_node_where_keys_are_merged_is_replaced_and_never_opened() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_login_agents();
    write_host(
        &home,
        ".claude/.credentials.json",
        r#"{"claudeAiOauth": {"accessToken": "t"}}"#,
    );
    write_host(&home, ".claude.json", &account_file());
    home.apply("d.yaml", &role.agent_instance_yaml("d", "claude", ""));
    wait_for_login(&home, "d", "claude logged-in file .credentials.json");
    let unit = home.unit("d");
    let account = unit.join("home/.claude/.claude.json");
    assert!(std::fs::symlink_metadata(&account).unwrap().is_file());

    docker(&["stop", "-t", "2", &home.container("d")]);
    std::fs::remove_file(&account).unwrap();
    mknod_dev_null(&account);
    let watch = OpenWatch::on(&account);
    let out = home.jackin(&["controller", "--once"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        !watch.opened(),
        "jackin opened the device node the agent made"
    );
    assert!(std::fs::symlink_metadata(&account).unwrap().is_file());
    let merged: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&account).unwrap()).unwrap();
    assert_eq!(
        merged["oauthAccount"]["emailAddress"], "op@example.com",
        "{merged}"
    );
}

#[test]
fn a_renewed_login_reaches_the_next_start_and_a_planted_link_is_never_written_through() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_login_agents();
    let login = |token: &str| format!(r#"{{"claudeAiOauth": {{"accessToken": "{token}"}}}}"#);
    write_host(&home, ".claude/.credentials.json", &login("first"));
    write_host(&home, ".claude.json", &account_file());
    let yaml = role.agent_instance_yaml("c", "claude", "");
    home.apply("c.yaml", &yaml);
    wait_for_login(&home, "c", "claude logged-in file .credentials.json");
    let unit = home.unit("c");
    let own = unit.join("home/.claude/.credentials.json");
    let container = home.container("c");
    // A restart is over once the agent itself has started (past the gate
    // and its own checks of its config directory): a change to the agent's
    // home made while the start plan is still being walked would otherwise
    // be read by that start, not the next (the suite caught one: the config
    // directory became a link between the gate and the agent's own look).
    let starts = || {
        std::fs::read_to_string(unit.join("home/agent-starts.log"))
            .unwrap_or_default()
            .lines()
            .count()
    };
    let restart = || {
        let seen = starts();
        docker(&["stop", "-t", "2", &container]);
        pass(&home);
        eventually(Duration::from_secs(30), "the agent's next start", || {
            starts() > seen
        });
    };

    // The operator logged in again on the host: the next start has it.
    write_host(&home, ".claude/.credentials.json", &login("second"));
    restart();
    assert!(std::fs::read_to_string(&own).unwrap().contains("second"));
    // Nothing changed on either side: the session's copy is the host's
    // login, not a newer one of its own, though the copy is younger.
    restart();
    let described = home.ok(&["describe", "c"]);
    assert!(
        described.contains(
            "claude: ~/.claude/.credentials.json → ~/.claude/.credentials.json (unchanged)"
        ) && !described.contains("kept: the session's own is newer"),
        "{described}"
    );
    // The agent refreshed its login in the session since: its newer one
    // stays (the host's older one could have been rotated out).
    std::fs::write(&own, login("refreshed-in-session")).unwrap();
    restart();
    assert!(
        std::fs::read_to_string(&own)
            .unwrap()
            .contains("refreshed-in-session")
    );
    assert!(
        home.ok(&["describe", "c"])
            .contains("kept: the session's own is newer than the host's"),
        "{}",
        home.ok(&["describe", "c"])
    );

    // A link where the login lands, to a file of the operator's: replaced
    // by the login, the operator's file untouched.
    let outside = tempfile::tempdir().unwrap();
    let theirs = outside.path().join("theirs");
    std::fs::write(&theirs, "the operator's own file").unwrap();
    std::fs::remove_file(&own).unwrap();
    std::os::unix::fs::symlink(&theirs, &own).unwrap();
    write_host(&home, ".claude/.credentials.json", &login("third"));
    restart();
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        "the operator's own file"
    );
    assert!(std::fs::symlink_metadata(&own).unwrap().is_file());
    assert!(std::fs::read_to_string(&own).unwrap().contains("third"));

    // The agent's config directory made a link to a host directory: the
    // start is refused, and nothing is written there.
    let config = unit.join("home/.claude");
    std::fs::rename(&config, unit.join("home/.claude-was")).unwrap();
    std::os::unix::fs::symlink(outside.path(), &config).unwrap();
    write_host(&home, ".claude/.credentials.json", &login("fourth"));
    docker(&["stop", "-t", "2", &container]);
    let out = home.jackin(&["controller", "--once"]);
    let names: Vec<String> = std::fs::read_dir(outside.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["theirs"], "jackin wrote through the link");
    assert_eq!(
        std::fs::read_to_string(&theirs).unwrap(),
        "the operator's own file"
    );
    let obj = home.object("c");
    let ready = condition(&obj, "Ready").expect("a Ready condition");
    assert_eq!(
        ready["reason"],
        "CredentialsRefused",
        "{ready}\n{}",
        stderr(&out)
    );
    assert!(
        ready["message"]
            .as_str()
            .unwrap()
            .contains("is not a plain directory"),
        "{ready}"
    );
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "false",
        "the session did not start"
    );
}

/// Attack run 5, N8 (shared/defects/2026-12-01.md): an agent that prints
/// the values it was handed (a `spec.env` reference and a token of
/// `authForward: token`) while a controller watches its output: the
/// published look shows them scrubbed, and no file under `JACKIN_HOME`
/// holds either.
#[test]
fn n8_a_handed_over_value_the_agent_prints_is_kept_nowhere_under_the_home() {
    ensure_busybox();
    let home = Home::new();
    let (key, token) = (unique("sk-ant-n8-key"), unique("gho-n8-token"));
    home.apply(
        "ws",
        &workspace_yaml("tok", "{authForward: token, credentials: [{name: gh}]}"),
    );
    let script = "echo \"debug: key is $API_KEY and $GH_TOKEN\"; exec sleep 3600";
    let yaml = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: printer}}\nspec:\n  \
         workspace: tok\n  role: {{name: tester}}\n  agent: shell\n  image: {}\n  \
         env: [{{name: API_KEY, valueFrom: {{hostEnv: N8_API_KEY}}}}]\n  \
         command: [sh, -c, {}]\n",
        support::busybox_image(),
        serde_json::to_string(script).unwrap()
    );
    let env = [("N8_API_KEY", key.as_str()), ("GH_TOKEN", token.as_str())];
    let out = apply_with(&home, "printer.yaml", &yaml, &env);
    assert!(out.status.success(), "{}", stderr(&out));
    // The agent did print them: the engine's log has both.
    eventually(Duration::from_secs(60), "the agent printed", || {
        home.ok(&["logs", "printer"]).contains(&key)
    });

    let controller = support::Controller::start(&home, &["--watch-output"]);
    let looks = home.path().join("looks.json");
    let mut published = String::new();
    eventually(Duration::from_secs(90), "the look is published", || {
        published = std::fs::read_to_string(&looks).unwrap_or_default();
        published.contains("debug: key is")
    });
    drop(controller);
    assert!(
        published.contains("debug: key is [redacted] and [redacted]"),
        "{published}"
    );
    for value in [&key, &token] {
        assert_eq!(
            files_holding(home.path(), value),
            Vec::<PathBuf>::new(),
            "a handed-over value is never kept under JACKIN_HOME"
        );
    }
    home.ok(&["delete", "printer", "--force"]);
}
