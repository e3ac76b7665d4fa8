//! The operator's own agent setup in the session, opt-in (issue 41): under
//! a workspace's `operatorConfig: sync`, the real claude gets the host's
//! `CLAUDE.md` (its first request carries it), offers the host's custom
//! command in its `/` menu, and runs the host's MCP server inside the
//! container; under `none` (the default) none of it goes. The real codex
//! takes the host's `config.toml` model provider, by which it reaches the
//! model server. A link on the host is refused, and a link or FIFO the
//! agent left in a copy's place is never written through.
//!
//! The operator's home is a temporary directory (`JACKIN_CREDENTIALS_HOME`,
//! see `support::Home`), never the real one.

use std::os::unix::fs::{PermissionsExt, symlink};
use std::path::Path;

use support::real_agent::{AgentSession, Cli, Login};

/// The word the host's `CLAUDE.md` holds.
const MEMORY_CANARY: &str = "jackin-operator-memory-canary";

/// The description of the host's custom command, which only claude's `/`
/// menu shows.
const COMMAND_DESCRIPTION: &str = "Greets as the operator set it up";

/// A stdio MCP server (JSON-RPC, a message a line) with one tool, which
/// writes the host name it runs on into its home before it answers: the
/// file shows it ran in the container, whose home is the unit's.
const MCP_PROBE: &str = r#"
import json, os, socket, sys
with open(os.path.join(os.environ.get("HOME", "/home/agent"), "mcp-probe-ran"), "w") as f:
    f.write(socket.gethostname())
for line in sys.stdin:
    try:
        message = json.loads(line)
    except ValueError:
        continue
    if not isinstance(message, dict) or "id" not in message:
        continue
    method = message.get("method")
    if method == "initialize":
        version = (message.get("params") or {}).get("protocolVersion", "2024-11-05")
        result = {"protocolVersion": version, "capabilities": {"tools": {}},
                  "serverInfo": {"name": "jackin-probe", "version": "1.0.0"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "where", "description": "says where it runs",
                             "inputSchema": {"type": "object", "properties": {}}}]}
    elif method == "ping":
        result = {}
    else:
        reply = {"jsonrpc": "2.0", "id": message["id"],
                 "error": {"code": -32601, "message": "not here"}}
        sys.stdout.write(json.dumps(reply) + "\n")
        sys.stdout.flush()
        continue
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
    sys.stdout.flush()
"#;

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

/// The operator's claude setup on the host: a memory, a command, an MCP
/// server in `.claude.json` beside the account keys already there, and an
/// agents directory that is a link out of `~/.claude` (refused).
fn claude_setup(session: &AgentSession, outside: &Path) {
    let host = session.home.operator_home();
    write(
        &host.join(".claude/CLAUDE.md"),
        &format!("Always remember the word {MEMORY_CANARY}.\n"),
    );
    write(
        &host.join(".claude/commands/jackin-greet.md"),
        &format!("---\ndescription: {COMMAND_DESCRIPTION}\n---\nSay hello.\n"),
    );
    let account = host.join(".claude.json");
    let mut json: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&account).unwrap()).unwrap();
    json["mcpServers"] = serde_json::json!({
        "jackin-probe": {"type": "stdio", "command": "python3", "args": ["-c", MCP_PROBE.trim()]}
    });
    write(&account, &json.to_string());
    write(&outside.join("leak.md"), "---\ndescription: leaked\n---\n");
    symlink(outside, host.join(".claude/agents")).unwrap();
}

/// A session of `cli` in a workspace `setup` whose `operatorConfig` is
/// `mode`, after `prepare` put the operator's setup on the host.
fn session_with(cli: Cli, mode: &str, prepare: impl FnOnce(&AgentSession)) -> AgentSession {
    let session = AgentSession::new(cli, Login::Sync, "setup", "  workspace: setup\n");
    prepare(&session);
    session.home.apply(
        "setup",
        &format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: setup}}\nspec:\n  \
             operatorConfig: {mode}\n"
        ),
    );
    session.apply("");
    session
}

#[test]
fn claude_takes_the_operators_memory_command_and_mcp_server_under_sync() {
    let outside = tempfile::tempdir().unwrap();
    let session = session_with(Cli::Claude, "sync", |s| claude_setup(s, outside.path()));
    let term = session.first_attach();
    let request = session.say(&term, "hello-with-my-setup");
    assert!(
        request.holds(MEMORY_CANARY),
        "the host's CLAUDE.md did not reach the model: {request:?}"
    );

    // The host's command, in the `/` menu.
    term.keys(&["-l", "/jackin-gr"]);
    term.wait_long(COMMAND_DESCRIPTION);
    term.keys(&["C-u"]);
    term.keys(&["Escape"]);
    // The host's MCP server, listed and connected, ran in the container.
    session.wait_at_prompt(&term);
    term.type_message("/mcp");
    // Listed as up (✔) with its one tool: claude started it and asked it.
    term.wait_long("✔ jackin-probe");
    term.wait_long("1 tool");
    term.keys(&["Escape"]);
    let ran = std::fs::read_to_string(session.unit_home().join("mcp-probe-ran"))
        .expect("the MCP server wrote into the unit's home");
    let hostname = support::docker(&[
        "inspect",
        "-f",
        "{{.Config.Hostname}}",
        &session.container(),
    ]);
    assert_eq!(ran.trim(), hostname.trim(), "it ran in the container");
    assert!(!session.home.operator_home().join("mcp-probe-ran").exists());
    term.detach();

    // Copies, private; the link out of ~/.claude refused, nothing of it copied.
    let unit = session.unit_home();
    for copied in [".claude/CLAUDE.md", ".claude/commands/jackin-greet.md"] {
        let mode = std::fs::metadata(unit.join(copied))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{copied}");
    }
    assert!(!unit.join(".claude/agents").exists());
    let described = session.ok(&["describe", &session.name]);
    assert!(
        described.contains("~/.claude/CLAUDE.md → ~/.claude/CLAUDE.md")
            && described.contains("~/.claude.json → ~/.claude/.claude.json (keys mcpServers)")
            && described.contains("refused: ~/.claude/agents was not copied"),
        "{described}"
    );
    assert!(
        !described.contains(MEMORY_CANARY),
        "contents shown:\n{described}"
    );
}

#[test]
fn claude_gets_none_of_the_operators_setup_under_none() {
    let outside = tempfile::tempdir().unwrap();
    let session = session_with(Cli::Claude, "none", |s| claude_setup(s, outside.path()));
    let term = session.first_attach();
    let request = session.say(&term, "hello-without-my-setup");
    assert_eq!(request.login, "match", "{request:?}");
    assert!(!request.holds(MEMORY_CANARY), "{request:?}");
    term.detach();
    let unit = session.unit_home();
    assert!(!unit.join(".claude/CLAUDE.md").exists());
    assert!(!unit.join(".claude/commands").exists());
    assert!(!unit.join("mcp-probe-ran").exists(), "no MCP server ran");
}

/// The host's `config.toml` picks a model provider of its own, the model
/// server under a path of its own: codex posts there. (codex 0.147 takes
/// no `profile` key in config.toml any more: a profile is a file of its
/// own, chosen by `--profile`.) After a keep, a link
/// and a FIFO the agent left in the copies' places are refused and left
/// as they are, and nothing is written through the link.
#[test]
fn codex_takes_the_operators_provider_and_refuses_what_the_agent_planted() {
    let session = session_with(Cli::Codex, "sync", |s| {
        let host = s.home.operator_home();
        write(
            &host.join(".codex/config.toml"),
            "# the operator's\nmodel_provider = \"operator-provider\"\n\n\
             [model_providers.operator-provider]\n\
             name = \"the operator's provider\"\nbase_url = \"http://model:8080/v1/operator-profile\"\n\
             wire_api = \"responses\"\nrequires_openai_auth = true\n",
        );
        write(&host.join(".codex/AGENTS.md"), "Work carefully.\n");
    });
    let term = session.first_attach();
    let request = session.say(&term, "hello-from-my-provider");
    assert_eq!(
        request.path, "/v1/operator-profile/responses",
        "{request:?}"
    );
    assert_eq!(request.login, "match", "{request:?}");
    term.detach();
    drop(term);
    let config = std::fs::read_to_string(session.unit_home().join(".codex/config.toml")).unwrap();
    assert!(
        config.contains("# the operator's") && config.contains("sandbox_mode"),
        "the operator's config under jackin's settings:\n{config}"
    );

    session.ok(&["set-phase", &session.name, "kept"]);
    let outside = tempfile::tempdir().unwrap();
    let target = outside.path().join("target");
    std::fs::write(&target, "the operator's own file").unwrap();
    let unit = session.unit_home();
    std::fs::remove_file(unit.join(".codex/AGENTS.md")).unwrap();
    symlink(&target, unit.join(".codex/AGENTS.md")).unwrap();
    std::fs::remove_file(unit.join(".codex/config.toml")).unwrap();
    let made = std::process::Command::new("mkfifo")
        .arg(unit.join(".codex/config.toml"))
        .status()
        .unwrap();
    assert!(made.success());
    session.ok(&["set-phase", &session.name, "running"]);
    let described = session.ok(&["describe", &session.name]);
    assert!(
        described.contains("~/.codex/AGENTS.md in the agent's home is a symbolic link")
            && described.contains("~/.codex/config.toml in the agent's home is a FIFO"),
        "{described}"
    );
    assert_eq!(
        std::fs::read_to_string(&target).unwrap(),
        "the operator's own file"
    );
    assert!(
        std::fs::symlink_metadata(unit.join(".codex/AGENTS.md"))
            .unwrap()
            .file_type()
            .is_symlink()
    );
}
