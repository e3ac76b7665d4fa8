use super::*;
use jackin_api::agent::{RetentionFormat, RetentionSetting};
use jackin_api::agent_settings::{SettingMerge, SettingValue};

fn setting(file: &str, format: SettingFormat, key: &[&str], value: Value) -> AgentSetting {
    AgentSetting {
        name: "trust".into(),
        file: file.into(),
        format,
        key: key.iter().map(|k| (*k).to_owned()).collect(),
        value: SettingValue(value),
        merge: SettingMerge::Set,
    }
}

/// The built-in entry `agent`'s setting `name`, as jackin ships it.
fn builtin(agent: &str, name: &str) -> AgentSetting {
    jackin_api::agent::builtin()
        .into_iter()
        .find(|a| a.metadata.name == agent)
        .and_then(|a| a.spec.settings.into_iter().find(|s| s.name == name))
        .expect("a built-in setting")
}

fn target<'a>(home: &'a Path, state: &'a str) -> Target<'a> {
    Target {
        home,
        state,
        working_dir: Some("/work/my.app"),
    }
}

fn read(home: &Path, file: &str) -> String {
    std::fs::read_to_string(home.join(file)).unwrap()
}

/// Retention is one case of the general form: its dotted key reaches the
/// same nested place, the rest of the file kept.
#[test]
fn a_json_key_is_set_and_the_rest_of_the_file_kept() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(
        home.path().join(".claude/settings.json"),
        r#"{"permissions": {"allow": ["Bash"]}, "cleanupPeriodDays": 30}"#,
    )
    .unwrap();
    let retention = jackin_api::agent::Retention {
        days: 30,
        setting: Some(RetentionSetting {
            file: "settings.json".into(),
            key: "cleanupPeriodDays".into(),
            format: RetentionFormat::Days,
        }),
    }
    .as_setting()
    .unwrap();
    let at = target(home.path(), ".claude");
    assert_eq!(apply(&at, &retention), Ok(true));
    let written: Value = serde_json::from_str(&read(home.path(), ".claude/settings.json")).unwrap();
    assert_eq!(written["cleanupPeriodDays"], 36_500);
    assert_eq!(written["permissions"]["allow"][0], "Bash");
    assert_eq!(
        apply(&at, &retention),
        Ok(false),
        "already so: not rewritten"
    );

    let trust = builtin("claude", "trust");
    assert_eq!(apply(&at, &trust), Ok(true));
    let written: Value = serde_json::from_str(&read(home.path(), ".claude/.claude.json")).unwrap();
    assert_eq!(
        written["projects"]["/work/my.app"]["hasTrustDialogAccepted"], true,
        "the directory is one key, dots and slashes and all"
    );
}

/// Issue 55: claude's onboarding is marked done beside the account keys a
/// login forwarded, which stay as they were; without a forwarded file the
/// key is the file's only one.
#[test]
fn claudes_onboarding_is_marked_done_and_the_forwarded_account_kept() {
    let onboarding = builtin("claude", "onboarding");
    let home = tempfile::tempdir().unwrap();
    let at = target(home.path(), ".claude");
    assert_eq!(apply(&at, &onboarding), Ok(true));
    let written: Value = serde_json::from_str(&read(home.path(), ".claude/.claude.json")).unwrap();
    assert_eq!(written, serde_json::json!({"hasCompletedOnboarding": true}));

    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    std::fs::write(
        home.path().join(".claude/.claude.json"),
        r#"{"oauthAccount": {"emailAddress": "op@example.com"}, "userID": "u"}"#,
    )
    .unwrap();
    let at = target(home.path(), ".claude");
    assert_eq!(apply(&at, &onboarding), Ok(true));
    let written: Value = serde_json::from_str(&read(home.path(), ".claude/.claude.json")).unwrap();
    assert_eq!(written["hasCompletedOnboarding"], true);
    assert_eq!(written["oauthAccount"]["emailAddress"], "op@example.com");
    assert_eq!(written["userID"], "u");
}

/// codex's config.toml keeps its comments and order; the trust lands in a
/// `[projects."<dir>"]` table as codex writes it, and a value already set
/// keeps its line's comment.
#[test]
fn a_toml_key_is_set_with_comments_and_order_kept() {
    let home = tempfile::tempdir().unwrap();
    let own =
        "# the operator's model\nmodel = \"gpt-5.2\"\n\n[tui]\n# quiet\nnotifications = false\n";
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    std::fs::write(home.path().join(".codex/config.toml"), own).unwrap();
    let at = target(home.path(), ".codex");
    let trust = builtin("codex", "trust");
    let sandbox = builtin("codex", "sandbox");
    assert_eq!(apply(&at, &trust), Ok(true));
    assert_eq!(apply(&at, &sandbox), Ok(true));
    let text = read(home.path(), ".codex/config.toml");
    // A top-level key goes before the first table, as TOML needs; the
    // rest is the file as it was.
    let top = "model = \"gpt-5.2\"\nsandbox_mode = \"danger-full-access\"\n";
    assert!(text.contains(top), "{text}");
    let without = text.replace("sandbox_mode = \"danger-full-access\"\n", "");
    assert!(without.starts_with(own), "{text}");
    assert!(
        text.contains("[projects.\"/work/my.app\"]\ntrust_level = \"trusted\"\n"),
        "{text}"
    );
    assert!(
        !text.contains("[projects]\n"),
        "no empty parent table: {text}"
    );
    assert_eq!(apply(&at, &trust), Ok(false));
    assert_eq!(apply(&at, &sandbox), Ok(false));

    // The agent (or the operator) changed it back: set again, the comment
    // beside the value kept, and a literal string is the same value.
    let changed = text.replace(
        "trust_level = \"trusted\"",
        "trust_level = \"untrusted\" # asked",
    );
    std::fs::write(home.path().join(".codex/config.toml"), &changed).unwrap();
    assert_eq!(apply(&at, &trust), Ok(true));
    let text = read(home.path(), ".codex/config.toml");
    assert!(text.contains("trust_level = \"trusted\" # asked"), "{text}");
    std::fs::write(
        home.path().join(".codex/config.toml"),
        text.replace("\"trusted\" # asked", "'trusted'"),
    )
    .unwrap();
    assert_eq!(apply(&at, &trust), Ok(false));

    // Inside an inline table, the new table is inline too.
    std::fs::write(home.path().join(".codex/config.toml"), "projects = {}\n").unwrap();
    assert_eq!(apply(&at, &trust), Ok(true));
    let parsed: toml_edit::DocumentMut = read(home.path(), ".codex/config.toml").parse().unwrap();
    assert_eq!(
        parsed["projects"]["/work/my.app"]["trust_level"].as_str(),
        Some("trusted")
    );
}

/// The file is the agent's: what jackin cannot read as its format, or
/// where the key's place is no table, is left exactly as it is, and a link
/// on the way is never followed.
#[test]
fn what_cannot_be_read_is_left_alone() {
    let home = tempfile::tempdir().unwrap();
    let elsewhere = tempfile::tempdir().unwrap();
    let at = target(home.path(), ".codex");
    let trust = builtin("codex", "trust");
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    let file = home.path().join(".codex/config.toml");
    for unreadable in ["[projects\nnot toml", "projects = 3\n"] {
        std::fs::write(&file, unreadable).unwrap();
        let why = apply(&at, &trust).unwrap_err();
        assert!(why.contains("trust was left alone"), "{why}");
        assert_eq!(std::fs::read_to_string(&file).unwrap(), unreadable);
    }
    let json = setting(
        ".claude.json",
        SettingFormat::Json,
        &["a", "b"],
        true.into(),
    );
    std::fs::write(home.path().join(".codex/.claude.json"), "{ not json").unwrap();
    assert!(apply(&at, &json).unwrap_err().contains("is not JSON"));

    std::fs::remove_file(&file).unwrap();
    std::os::unix::fs::symlink(elsewhere.path().join("x.toml"), &file).unwrap();
    assert!(apply(&at, &trust).is_err());
    assert!(!elsewhere.path().join("x.toml").exists());

    std::fs::remove_dir_all(home.path().join(".codex")).unwrap();
    std::os::unix::fs::symlink(elsewhere.path(), home.path().join(".codex")).unwrap();
    assert!(apply(&at, &trust).is_err());
    assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
}

/// What `describe` is told: each setting set, turned off, or left alone
/// with why; a key that names an unknown working directory is not set.
#[test]
fn every_setting_is_accounted_for() {
    let home = tempfile::tempdir().unwrap();
    let mut sandbox = setting(
        "config.toml",
        SettingFormat::Toml,
        &["sandbox_mode"],
        "x".into(),
    );
    sandbox.name = "sandbox".into();
    let trust = builtin("codex", "trust");
    let settings = [trust, sandbox];
    let at = target(home.path(), ".codex");
    let applied = apply_all(&at, &settings, |name| name == "trust");
    let outcomes: Vec<_> = applied
        .iter()
        .map(|a| (a.name.as_str(), a.outcome))
        .collect();
    assert_eq!(
        outcomes,
        [
            ("trust", SettingOutcome::Off),
            ("sandbox", SettingOutcome::Set)
        ]
    );
    assert_eq!(applied[0].key, r#"projects."/work/my.app".trust_level"#);
    assert_eq!(applied[1].file, ".codex/config.toml");
    assert_eq!(applied[1].value, "\"x\"");
    assert!(!read(home.path(), ".codex/config.toml").contains("projects"));

    let unknown = Target {
        working_dir: None,
        ..at
    };
    let applied = apply_all(&unknown, &settings, |_| false);
    assert_eq!(applied[0].outcome, SettingOutcome::LeftAlone);
    assert!(
        applied[0]
            .reason
            .as_deref()
            .unwrap()
            .contains("working directory is not known"),
        "{applied:?}"
    );
}

/// Issue 54: claude's report hooks go beside the operator's own hooks of
/// the same event, once however often a start sets them; a `hooks` that is
/// not lists is left alone with the reason.
#[test]
fn report_hooks_are_added_beside_the_operators_own_once() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".claude")).unwrap();
    let own = serde_json::json!({"hooks": [{"type": "command", "command": "notify-send done"}]});
    std::fs::write(
        home.path().join(".claude/settings.json"),
        serde_json::json!({"hooks": {"Stop": [own], "PreToolUse": []}, "model": "x"}).to_string(),
    )
    .unwrap();
    let reports = builtin("claude", "reports");
    let at = target(home.path(), ".claude");
    assert_eq!(apply(&at, &reports), Ok(true));
    let written: Value = serde_json::from_str(&read(home.path(), ".claude/settings.json")).unwrap();
    let stop = written["hooks"]["Stop"].as_array().unwrap();
    assert_eq!(stop.len(), 2, "{written}");
    assert_eq!(stop[0], own);
    assert_eq!(
        stop[1]["hooks"][0]["command"],
        "/bin/sh /jackin/bin/report turn-done"
    );
    let notification = written["hooks"]["Notification"].as_array().unwrap();
    let matchers: Vec<&Value> = notification.iter().map(|h| &h["matcher"]).collect();
    assert_eq!(matchers, ["permission_prompt", "idle_prompt"]);
    assert_eq!(written["hooks"]["PreToolUse"], serde_json::json!([]));
    assert_eq!(written["model"], "x");
    assert_eq!(apply(&at, &reports), Ok(false), "once: nothing added again");

    std::fs::write(
        home.path().join(".claude/settings.json"),
        r#"{"hooks": {"Stop": "not a list"}}"#,
    )
    .unwrap();
    let refused = apply(&at, &reports).unwrap_err();
    assert!(refused.contains("does not hold lists"), "{refused}");
    assert_eq!(
        read(home.path(), ".claude/settings.json"),
        r#"{"hooks": {"Stop": "not a list"}}"#
    );
}

/// Issue 54: codex's one `notify` program becomes jackin's report program,
/// which runs the operator's own after `--`: put before it once, set where
/// there is none, and a `notify` that is not a list is left alone.
#[test]
fn the_report_program_goes_before_the_operators_notify_once() {
    let home = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(home.path().join(".codex")).unwrap();
    let config = home.path().join(".codex/config.toml");
    std::fs::write(
        &config,
        "# mine\nnotify = [\"notify-send\", \"done\"] # ping me\n",
    )
    .unwrap();
    let reports = builtin("codex", "reports");
    let at = target(home.path(), ".codex");
    assert_eq!(apply(&at, &reports), Ok(true));
    let written = read(home.path(), ".codex/config.toml");
    assert!(
        written.contains(
            "notify = [\"/bin/sh\", \"/jackin/bin/report\", \"turn-done\", \"--\", \"notify-send\", \
             \"done\"] # ping me"
        ),
        "{written}"
    );
    assert!(written.starts_with("# mine\n"), "{written}");
    assert_eq!(apply(&at, &reports), Ok(false), "once");
    std::fs::write(&config, "model = \"m\"\n").unwrap();
    assert_eq!(apply(&at, &reports), Ok(true));
    let written = read(home.path(), ".codex/config.toml");
    assert!(
        written.contains("notify = [\"/bin/sh\", \"/jackin/bin/report\", \"turn-done\", \"--\"]"),
        "{written}"
    );
    std::fs::write(&config, "notify = \"mine\"\n").unwrap();
    let refused = apply(&at, &reports).unwrap_err();
    assert!(refused.contains("is not a list"), "{refused}");
    assert_eq!(
        read(home.path(), ".codex/config.toml"),
        "notify = \"mine\"\n"
    );
}
