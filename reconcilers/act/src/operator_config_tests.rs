use super::*;
use credentials::tests::Homes;
use std::fs;
use std::os::unix::fs::{PermissionsExt, symlink};

/// The credentials' homes, with a commands directory on the host.
fn homes() -> Homes {
    let homes = credentials::tests::homes();
    fs::create_dir_all(homes.host.join(".claude/commands")).unwrap();
    homes
}

fn claude() -> Vec<ConfigEntry> {
    jackin_api::operator_config::builtin("claude")
}

fn mkfifo(path: &Path) {
    let made = std::process::Command::new("mkfifo").arg(path).status();
    assert!(made.unwrap().success());
}

fn mode(path: &Path) -> u32 {
    fs::metadata(path).unwrap().permissions().mode() & 0o777
}

/// Every entry claude lists goes where claude looks in the unit, 0600;
/// `.claude.json` gives only its MCP servers; the settings merge over the
/// session's own; what the host lacks is skipped in silence.
#[test]
fn the_setup_is_copied_where_the_agent_looks_and_private() {
    let h = homes();
    fs::write(h.host.join(".claude/CLAUDE.md"), "MEMORY-CANARY").unwrap();
    fs::write(h.host.join(".claude/commands/hi.md"), "say hi").unwrap();
    fs::create_dir(h.host.join(".claude/commands/team")).unwrap();
    fs::write(h.host.join(".claude/commands/team/review.md"), "review").unwrap();
    fs::write(
        h.host.join(".claude/settings.json"),
        r#"{"model": "opus", "env": {"TOKEN": "SECRET-MARKER"}}"#,
    )
    .unwrap();
    fs::write(
        h.host.join(".claude.json"),
        r#"{"mcpServers": {"probe": {"command": "python3"}}, "projects": {"/elsewhere": {}}}"#,
    )
    .unwrap();
    fs::create_dir_all(h.unit.join(".claude")).unwrap();
    fs::write(
        h.unit.join(".claude/settings.json"),
        r#"{"cleanupPeriodDays": 36500, "model": "sonnet"}"#,
    )
    .unwrap();

    let status = copy_all(&claude(), Ok(&h.host), &h.unit);
    assert_eq!(status.refused, Vec::<String>::new());
    assert_eq!(
        status.copied,
        [
            "~/.claude/CLAUDE.md → ~/.claude/CLAUDE.md",
            "~/.claude/commands → ~/.claude/commands/ (2 files)",
            "~/.claude/settings.json → ~/.claude/settings.json (keys env, model)",
            "~/.claude.json → ~/.claude/.claude.json (keys mcpServers)",
        ]
    );
    let unit = |p: &str| h.unit.join(p);
    assert_eq!(
        fs::read_to_string(unit(".claude/CLAUDE.md")).unwrap(),
        "MEMORY-CANARY"
    );
    assert_eq!(
        fs::read_to_string(unit(".claude/commands/team/review.md")).unwrap(),
        "review"
    );
    let settings: serde_json::Value =
        serde_json::from_slice(&fs::read(unit(".claude/settings.json")).unwrap()).unwrap();
    assert_eq!(
        settings["model"], "opus",
        "the operator's over the session's"
    );
    assert_eq!(
        settings["cleanupPeriodDays"], 36500,
        "the session's own kept"
    );
    let account: serde_json::Value =
        serde_json::from_slice(&fs::read(unit(".claude/.claude.json")).unwrap()).unwrap();
    assert!(account.get("mcpServers").is_some() && account.get("projects").is_none());
    for path in [
        ".claude/CLAUDE.md",
        ".claude/commands/hi.md",
        ".claude/settings.json",
    ] {
        assert_eq!(mode(&unit(path)), 0o600, "{path}");
    }
    assert!(!format!("{status:?}").contains("SECRET-MARKER"));
    // Nothing of the host was written.
    assert_eq!(
        fs::read_to_string(h.host.join(".claude/CLAUDE.md")).unwrap(),
        "MEMORY-CANARY"
    );
}

/// codex's config.toml: the operator's items over the session's, whose
/// other items and comments stay.
#[test]
fn a_toml_config_merges_over_the_sessions_own() {
    let h = homes();
    fs::create_dir_all(h.host.join(".codex")).unwrap();
    fs::write(
        h.host.join(".codex/config.toml"),
        "model_provider = \"mine\"\n[model_providers.mine]\nname = \"o-model\"\n",
    )
    .unwrap();
    fs::create_dir_all(h.unit.join(".codex")).unwrap();
    fs::write(
        h.unit.join(".codex/config.toml"),
        "# the session's\nsandbox_mode = \"danger-full-access\"\nmodel_provider = \"old\"\n",
    )
    .unwrap();
    let entries = jackin_api::operator_config::builtin("codex");
    let status = copy_all(&entries, Ok(&h.host), &h.unit);
    assert_eq!(
        status.copied,
        ["~/.codex/config.toml → ~/.codex/config.toml (merged)"]
    );
    let text = fs::read_to_string(h.unit.join(".codex/config.toml")).unwrap();
    let doc: toml_edit::DocumentMut = text.parse().unwrap();
    assert_eq!(doc["model_provider"].as_str(), Some("mine"));
    assert_eq!(
        doc["model_providers"]["mine"]["name"].as_str(),
        Some("o-model")
    );
    assert_eq!(doc["sandbox_mode"].as_str(), Some("danger-full-access"));
    assert!(text.contains("# the session's"), "{text}");
    // A host file that is not TOML is refused by position, never quoted.
    fs::write(h.host.join(".codex/config.toml"), "SECRET-MARKER = = 1\n").unwrap();
    let status = copy_all(&entries, Ok(&h.host), &h.unit);
    assert!(status.refused[0].contains("is not TOML"), "{status:?}");
    assert!(!format!("{status:?}").contains("SECRET-MARKER"));
}

/// A link on the host is refused, whether it leads out of the directory or
/// stands on the way; a FIFO there is refused unopened. Nothing of them is
/// written, and the rest still goes.
#[test]
fn links_and_fifos_on_the_host_are_refused() {
    let h = homes();
    let outside = h.dir.path().join("outside");
    fs::write(&outside, "OUTSIDE-MARKER").unwrap();
    symlink(&outside, h.host.join(".claude/CLAUDE.md")).unwrap();
    symlink(&outside, h.host.join(".claude/commands/leak.md")).unwrap();
    fs::write(h.host.join(".claude/commands/ok.md"), "fine").unwrap();
    mkfifo(&h.host.join(".claude/settings.json"));
    let status = copy_all(&claude(), Ok(&h.host), &h.unit);
    assert_eq!(
        status.copied,
        ["~/.claude/commands → ~/.claude/commands/ (1 file)"]
    );
    assert_eq!(status.refused.len(), 3, "{status:?}");
    assert!(
        status.refused[0].starts_with("~/.claude/CLAUDE.md was not copied: it is a symbolic link")
    );
    assert!(status.refused[1].starts_with("~/.claude/commands/leak.md was not copied"));
    assert!(
        status.refused[2].contains("not a regular file"),
        "{status:?}"
    );
    assert!(!h.unit.join(".claude/CLAUDE.md").exists());
    assert!(!h.unit.join(".claude/commands/leak.md").exists());
    assert!(h.unit.join(".claude/commands/ok.md").exists());

    // The agent's directory itself a link: everything in it is refused.
    let other = homes();
    fs::remove_dir_all(other.host.join(".claude")).unwrap();
    symlink(h.host.join(".claude"), other.host.join(".claude")).unwrap();
    let status = copy_all(&claude(), Ok(&other.host), &other.unit);
    assert!(status.copied.is_empty(), "{status:?}");
    assert!(
        status.refused.iter().all(|r| r.contains("symbolic link")),
        "{status:?}"
    );
}

/// In the unit's home, a link or FIFO in a file's place, or a link on the
/// way, is refused: nothing is written through it or over it.
#[test]
fn links_and_fifos_at_the_destination_are_refused_and_left_as_they_are() {
    let h = homes();
    fs::write(h.host.join(".claude/CLAUDE.md"), "MEMORY").unwrap();
    fs::write(h.host.join(".claude/commands/hi.md"), "hi").unwrap();
    fs::write(h.host.join(".claude/settings.json"), "{}").unwrap();
    let outside = h.dir.path().join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("target"), "the operator's").unwrap();
    fs::create_dir_all(h.unit.join(".claude")).unwrap();
    symlink(outside.join("target"), h.unit.join(".claude/CLAUDE.md")).unwrap();
    symlink(&outside, h.unit.join(".claude/commands")).unwrap();
    mkfifo(&h.unit.join(".claude/settings.json"));
    let status = copy_all(&claude(), Ok(&h.host), &h.unit);
    assert!(status.copied.is_empty(), "{status:?}");
    assert_eq!(status.refused.len(), 3, "{status:?}");
    assert!(status.refused[0].contains("is a symbolic link and was left as it is"));
    assert!(
        status.refused[1].contains("not a plain directory"),
        "{status:?}"
    );
    assert!(status.refused[2].contains("FIFO"), "{status:?}");
    assert_eq!(fs::read(outside.join("target")).unwrap(), b"the operator's");
    assert_eq!(
        fs::read_dir(&outside).unwrap().count(),
        1,
        "nothing made through the link"
    );
    let kept = fs::symlink_metadata(h.unit.join(".claude/CLAUDE.md")).unwrap();
    assert!(kept.file_type().is_symlink(), "left as it was");
}

#[test]
fn no_operator_home_is_said_not_guessed() {
    let h = homes();
    let status = copy_all(&claude(), Err("HOME is not set"), &h.unit);
    assert_eq!(
        status.refused,
        ["the operator's home cannot be read: HOME is not set"]
    );
    assert!(status.copied.is_empty());
}
