//! Agents as data: every restore resumes the agent's own conversation.
//! Against the real engine, with fake agent CLIs (`tests/fixtures/fake-agent`)
//! that keep transcripts and refuse what the real ones refuse.

use std::time::Duration;

use support::terminal::Terminal;
use support::{Home, RoleRepo, condition, docker, ensure_busybox};

/// claude's trust setting as the built-in entry has it, for an applied
/// entry of claude's (`spec` lines).
const CLAUDE_TRUST: &str = "  settings:\n  - name: trust\n    file: .claude.json\n    \
                            key: [projects, '{workingDir}', hasTrustDialogAccepted]\n    value: true\n";

/// Whether `name`'s container runs, as the engine says.
fn agent_runs(home: &Home, name: &str) -> bool {
    docker(&["inspect", "-f", "{{.State.Running}}", &home.container(name)]) == "true"
}

#[test]
fn the_same_conversation_continues_across_every_tier() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let yaml = role.agent_instance_yaml("conv", "claude", "");
    home.apply("c.yaml", &yaml);
    let id = home.conversation("conv")["id"]
        .as_str()
        .expect("a minted id")
        .to_owned();
    assert_eq!(
        home.wait_for_starts("conv", 1),
        [format!("claude minted {id}")]
    );
    let container = home.container("conv");
    let image = home.object("conv")["status"]["recipe"]["imageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let breakages: [support::Breakage; 5] = [
        ("docker stop", &[&["stop", "-t", "2", &container]], Some(1)),
        ("docker kill", &[&["kill", &container]], Some(1)),
        ("docker rm -f", &[&["rm", "-f", &container]], Some(2)),
        (
            "the image removed",
            &[&["rm", "-f", &container], &["rmi", "-f", &image]],
            Some(3),
        ),
        ("kept, then running", &[], None),
    ];
    home.break_and_restore("conv", &breakages, |n, what, log| {
        assert_eq!(
            log[n + 1],
            format!("claude resumed {id}"),
            "{what}: {log:?}"
        );
    });
    home.one_pass();
    let conv = home.conversation("conv");
    assert_eq!(conv["id"], id.as_str());
    assert_eq!(conv["strategy"], "id");
    assert_eq!(conv["lastStart"], "resumed-by-id");
    assert_eq!(conv.get("fallbacks"), None, "no start fell back: {conv}");
    // One transcript, in the unit's home, written by every start.
    let transcript = home
        .unit("conv")
        .join(format!("home/.claude/projects/-work/{id}.jsonl"));
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(text.matches("started ").count(), 6, "{text}");
    let described = home.ok(&["describe", "conv"]);
    assert!(
        described.contains(&format!("resumed by id {id}; last started resumed-by-id")),
        "{described}"
    );
}

/// Defect A3: a first conversation that left no transcript (nothing was
/// said yet) is minted again under the same id, not given up for "the
/// latest" at every later start.
#[test]
fn an_id_whose_first_conversation_left_nothing_is_minted_again() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let yaml = role.agent_instance_yaml("again", "claude", "");
    home.apply("c.yaml", &yaml);
    let id = home.conversation("again")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    home.wait_for_starts("again", 1);
    let projects = home.unit("again").join("home/.claude/projects/-work");
    std::fs::remove_file(projects.join(format!("{id}.jsonl"))).unwrap();
    docker(&["stop", "-t", "2", &home.container("again")]);
    home.one_pass();
    let log = home.wait_for_starts("again", 2);
    assert_eq!(log[1], format!("claude minted {id}"), "{log:?}");
    home.one_pass();
    let conv = home.conversation("again");
    assert_eq!(conv["lastStart"], "minted", "{conv}");
    assert_eq!(conv["id"], id.as_str());
    assert_eq!(conv["fallbacks"], 1, "the resume by id fell back: {conv}");
    // The event names the rung and carries claude's own words, from its
    // standard output (defect R10).
    let events = home.ok(&["describe", "again"]);
    assert!(
        events.contains("AgentFallback")
            && events.contains(&format!(
                "starting the agent resumed-by-id exited 1 at once: \
                 No conversation found with session ID: {id}"
            )),
        "{events}"
    );
}

/// An agent asked to continue when there is nothing to continue: claude
/// refuses, and the start falls back to a fresh one, with an event holding
/// the agent's own words, from its standard output (defect R10); codex starts
/// anew and succeeds, and the status says only what jackin knows: a
/// continuation was requested (defect A5).
#[test]
fn a_continue_with_nothing_to_continue_is_told_as_it_is() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let agent = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {{name: claude-latest}}\n\
         spec:\n  launch: [claude]\n  continueArgs: [--continue]\n  \
         stateEnv: {{name: CLAUDE_CONFIG_DIR, path: .claude}}\n{CLAUDE_TRUST}"
    );
    home.apply("agent.yaml", &agent);
    let yaml = role.agent_instance_yaml("latest", "claude-latest", "");
    home.apply("c.yaml", &yaml);
    let first = home.wait_for_starts("latest", 1);
    let id = first[0]
        .strip_prefix("claude new ")
        .expect("a new conversation");
    let container = home.container("latest");
    docker(&["stop", "-t", "2", &container]);
    home.one_pass();
    assert_eq!(
        home.wait_for_starts("latest", 2)[1],
        format!("claude continued {id}")
    );
    home.one_pass();
    assert_eq!(
        home.conversation("latest")["lastStart"],
        "continue-requested"
    );

    // Nothing to continue: claude says so, and the agent still runs.
    let projects = home.unit("latest").join("home/.claude/projects/-work");
    for entry in std::fs::read_dir(&projects).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    docker(&["stop", "-t", "2", &container]);
    home.one_pass();
    assert!(home.wait_for_starts("latest", 3)[2].starts_with("claude new "));
    home.one_pass();
    let conv = home.conversation("latest");
    assert_eq!(conv["lastStart"], "fresh", "{conv}");
    assert_eq!(conv["fallbacks"], 1, "{conv}");
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true"
    );
    let described = home.ok(&["describe", "latest"]);
    assert!(
        described.contains("AgentFallback")
            && described.contains(
                "starting the agent continue-requested exited 1 at once: \
                 No conversation found to continue"
            ),
        "{described}"
    );

    // codex with nothing to continue starts anew and succeeds: the status
    // claims no continuation, and describe says who decides.
    let yaml = role.agent_instance_yaml("cx", "codex", "");
    home.apply("x.yaml", &yaml);
    home.wait_for_starts("cx", 1);
    let sessions = home.unit("cx").join("home/.codex/sessions");
    std::fs::remove_dir_all(&sessions).unwrap();
    docker(&["stop", "-t", "2", &home.container("cx")]);
    home.one_pass();
    assert!(home.wait_for_starts("cx", 2)[1].starts_with("codex new "));
    home.one_pass();
    let conv = home.conversation("cx");
    assert_eq!(conv["lastStart"], "continue-requested", "{conv}");
    assert_eq!(conv.get("fallbacks"), None, "{conv}");
    let described = home.ok(&["describe", "cx"]);
    assert!(
        described.contains(
            "last started continue-requested (asked to continue its latest \
                            conversation here; whether there was one is the agent's to say)"
        ),
        "{described}"
    );
}

#[test]
fn agents_without_ids_continue_their_latest_conversation() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    for agent in ["codex", "opencode", "aider"] {
        let yaml = role.agent_instance_yaml(agent, agent, "");
        home.apply(&format!("{agent}.yaml"), &yaml);
        let first = home.wait_for_starts(agent, 1);
        assert!(first[0].starts_with(&format!("{agent} new ")), "{first:?}");
        let id = first[0].rsplit(' ').next().unwrap().to_owned();
        docker(&["stop", "-t", "2", &home.container(agent)]);
        home.one_pass();
        let log = home.wait_for_starts(agent, 2);
        assert_eq!(log[1], format!("{agent} continued {id}"));
        let conv = home.conversation(agent);
        assert_eq!(conv["strategy"], "latest");
        assert_eq!(conv.get("id"), None);
    }
    // Their state is in the unit's home, where the entries point it: one
    // codex rollout, in codex's own layout (sessions/YYYY/MM/DD/).
    let sessions = home.unit("codex").join("home/.codex/sessions");
    let rollouts = std::process::Command::new("find")
        .arg(&sessions)
        .args(["-name", "rollout-*.jsonl"])
        .output()
        .unwrap();
    let rollouts = String::from_utf8(rollouts.stdout).unwrap();
    assert_eq!(rollouts.lines().count(), 1, "{rollouts}");
    let relative = rollouts
        .trim()
        .strip_prefix(sessions.to_str().unwrap())
        .unwrap();
    assert_eq!(
        relative.split('/').count(),
        5,
        "/YYYY/MM/DD/rollout: {relative}"
    );
    assert!(
        home.unit("opencode")
            .join("home/.local/share/opencode/sessions/-work")
            .is_dir()
    );
    assert!(
        home.unit("aider")
            .join("home/.aider.chat.history.md")
            .is_file()
    );
}

#[test]
fn an_applied_agent_overrides_the_builtin_and_a_command_still_wins() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let yaml = role.agent_instance_yaml("before", "claude", "");
    home.apply("before.yaml", &yaml);
    home.wait_for_starts("before", 1);

    // Claude's state elsewhere, and no continuing; its trust is the
    // entry's own setting, set where it now keeps its state.
    let agent = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {{name: claude}}\nspec:\n  \
         launch: [claude]\n  mintArgs: [--session-id, '{{id}}']\n  resumeArgs: [--resume, '{{id}}']\n  \
         stateEnv: {{name: CLAUDE_CONFIG_DIR, path: claude-state}}\n{CLAUDE_TRUST}"
    );
    let agent = agent.as_str();
    assert_eq!(home.apply("agent.yaml", agent), "agent/claude created\n");
    let listed = home.ok(&["get", "agents"]);
    let claude = listed.lines().find(|l| l.starts_with("claude ")).unwrap();
    assert!(
        claude.contains("applied") && claude.contains(" id "),
        "{listed}"
    );

    let yaml = role.agent_instance_yaml("after", "claude", "");
    home.apply("after.yaml", &yaml);
    home.wait_for_starts("after", 1);
    let id = home.conversation("after")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        home.unit("after")
            .join(format!("home/claude-state/projects/-work/{id}.jsonl"))
            .is_file()
    );
    // The session pinned before the change keeps its entry, and says so.
    home.one_pass();
    let before = home.object("before");
    let drift = condition(&before, "SpecDrift").expect("drift is reported");
    assert!(
        drift["message"].as_str().unwrap().contains("agent"),
        "{drift}"
    );

    // A command wins over the registry's launch argv; it is resumed only
    // when it runs the agent's own program.
    let own = role.agent_instance_yaml("own", "claude", "  command: [/bin/claude]\n");
    home.apply("own.yaml", &own);
    assert!(home.wait_for_starts("own", 1)[0].starts_with("claude minted "));
    let other = role.agent_instance_yaml(
        "other",
        "claude",
        "  command: [sh, -c, 'echo as-given >> $HOME/agent-starts.log; exec sleep 3600']\n",
    );
    home.apply("other.yaml", &other);
    assert_eq!(home.wait_for_starts("other", 1), ["as-given"]);
    assert_eq!(home.conversation("other")["strategy"], "none");
    // And `resume: false` opts out.
    let fresh = role.agent_instance_yaml("fresh", "claude", "  resume: false\n");
    home.apply("fresh.yaml", &fresh);
    assert!(home.wait_for_starts("fresh", 1)[0].starts_with("claude new "));
    docker(&["stop", "-t", "2", &home.container("fresh")]);
    home.one_pass();
    assert!(home.wait_for_starts("fresh", 2)[1].starts_with("claude new "));
}

/// A workspace's `resumeConversations: false` starts every agent of its
/// sessions anew at every start, whatever the instance says (issue 57,
/// AR-14: the seed's master switch); a session outside it still resumes.
#[test]
fn a_workspace_can_turn_conversation_resume_off() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    home.apply(
        "quiet.yaml",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: quiet}\n\
         spec: {resumeConversations: false}\n",
    );
    let yaml = role.agent_instance_yaml("anew", "claude", "  workspace: quiet\n  resume: true\n");
    home.apply("anew.yaml", &yaml);
    assert!(home.wait_for_starts("anew", 1)[0].starts_with("claude new "));
    assert_eq!(home.conversation("anew")["strategy"], "none");
    docker(&["stop", "-t", "2", &home.container("anew")]);
    home.one_pass();
    assert!(home.wait_for_starts("anew", 2)[1].starts_with("claude new "));
    let resumed = role.agent_instance_yaml("resumed", "claude", "");
    home.apply("resumed.yaml", &resumed);
    assert!(home.wait_for_starts("resumed", 1)[0].starts_with("claude minted "));
}

#[test]
fn an_id_with_shell_metacharacters_reaches_the_agent_as_one_argument() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    // Without a state directory claude keeps its trust in the home, where
    // the entry's setting sets it.
    let agent = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {{name: quoted}}\nspec:\n  \
         launch: [claude]\n  mintArgs: [--session-id, '{{id}}']\n  resumeArgs: [--resume, '{{id}}']\n\
         {CLAUDE_TRUST}"
    );
    home.apply("agent.yaml", &agent);
    // No '/': the fake keeps transcripts as files named by the id.
    let id = "a b;$(touch pwned)'\"`x` *";
    let yaml_id = format!("'{}'", id.replace('\'', "''"));
    let yaml = role.agent_instance_yaml("q", "quoted", &format!("  conversationId: {yaml_id}\n"));
    home.apply("q.yaml", &yaml);
    home.wait_for_starts("q", 1);
    let argv = std::fs::read_to_string(home.unit("q").join("home/agent-argv.log")).unwrap();
    assert_eq!(argv, format!("argv\n--session-id\n{id}\nend\n"));
    let container = home.container("q");
    let probe = std::process::Command::new("docker")
        .args(["exec", &container, "test", "-e", "/work/pwned"])
        .status()
        .unwrap();
    assert!(!probe.success(), "a shell evaluated the id");
    // Resumed by the same id, still one argument.
    docker(&["stop", "-t", "2", &container]);
    home.one_pass();
    assert_eq!(
        home.wait_for_starts("q", 2)[1],
        format!("claude resumed {id}")
    );
}

#[test]
fn an_instance_of_an_unknown_agent_is_refused_and_nothing_is_written() {
    let home = Home::new();
    let yaml = support::instance_yaml("typo").replace("agent: shell", "agent: cluade");
    let input = home.write_input("typo.yaml", &yaml);
    let before = home.snapshot();
    let err = home.fails(&["apply", input.to_str().unwrap()]);
    assert!(
        err.contains("instance/typo: no agent is named \"cluade\"; did you mean \"claude\"?"),
        "{err}"
    );
    home.assert_unchanged(&before, "a refused apply");
    // The same input with the agent defined beside it is accepted.
    let agent =
        "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: cluade}\nspec: {}\n---\n";
    let input = home.write_input("both.yaml", &format!("{agent}{yaml}"));
    let out = home.ok(&["apply", "--no-wait", input.to_str().unwrap()]);
    assert_eq!(out, "agent/cluade created\ninstance/typo created\n");
}

#[test]
fn an_instance_picking_a_provider_its_agent_lacks_is_refused_and_nothing_is_written() {
    let home = Home::new();
    let yaml = support::instance_yaml_with("picky", "  provider: nope\n")
        .replace("agent: shell", "agent: claude");
    let input = home.write_input("picky.yaml", &yaml);
    let before = home.snapshot();
    let err = home.fails(&["apply", input.to_str().unwrap()]);
    assert!(
        err.contains(
            "instance/picky: spec.provider: agent \"claude\" has no provider \"nope\": its \
             entry has anthropic, zai, minimax, kimi"
        ),
        "{err}"
    );
    home.assert_unchanged(&before, "a refused apply");
    let input = home.write_input(
        "picky.yaml",
        &yaml.replace("provider: nope", "provider: zai"),
    );
    let out = home.ok(&["apply", "--no-wait", input.to_str().unwrap()]);
    assert_eq!(out, "instance/picky created\n");
}

#[test]
fn minting_an_id_the_agent_already_has_falls_back_to_resuming_it() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let id = "0f0e0d0c-aaaa-4bbb-8ccc-000000000001";
    home.record(
        "adopt.yaml",
        &role.agent_instance_yaml("adopt", "claude", &format!("  conversationId: {id}\n")),
    );
    // The conversation exists before the first start (adopted from
    // elsewhere): claude refuses to mint it again, and it is resumed.
    let projects = home.unit("adopt").join("home/.claude/projects/-work");
    std::fs::create_dir_all(&projects).unwrap();
    std::fs::write(projects.join(format!("{id}.jsonl")), "started earlier\n").unwrap();
    home.one_pass();
    assert_eq!(
        home.wait_for_starts("adopt", 1),
        [format!("claude resumed {id}")]
    );
    home.one_pass();
    let conv = home.conversation("adopt");
    assert_eq!(conv["lastStart"], "resumed-by-id", "{conv}");
    assert_eq!(conv["fallbacks"], 1, "{conv}");
    let described = home.ok(&["describe", "adopt"]);
    assert!(
        described.contains(&format!("Error: Session ID {id} is already in use.")),
        "{described}"
    );
}

/// codex starts (its CODEX_HOME made by jackin, defect A1) and comes back
/// to its own conversation at every tier: restarted, recreated from the
/// pinned image, and rebuilt.
#[test]
fn codex_resumes_its_conversation_at_every_tier() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let yaml = role.agent_instance_yaml("cx", "codex", "");
    home.apply("x.yaml", &yaml);
    let first = home.wait_for_starts("cx", 1);
    let id = first[0].strip_prefix("codex new ").expect("a new session");
    let container = home.container("cx");
    let image = home.object("cx")["status"]["recipe"]["imageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let breakages: [(&str, &[&[&str]], u64); 3] = [
        ("docker stop", &[&["stop", "-t", "2", &container]], 1),
        ("docker rm -f", &[&["rm", "-f", &container]], 2),
        (
            "the image removed",
            &[&["rm", "-f", &container], &["rmi", "-f", &image]],
            3,
        ),
    ];
    for (n, (what, commands, tier)) in breakages.into_iter().enumerate() {
        for args in commands {
            docker(args);
        }
        home.one_pass();
        assert_eq!(
            home.object("cx")["status"]["restore"]["tier"],
            tier,
            "{what}"
        );
        let log = home.wait_for_starts("cx", n + 2);
        assert_eq!(
            log[n + 1],
            format!("codex continued {id}"),
            "{what}: {log:?}"
        );
    }
}

/// Defect A2: gemini before 0.41 has no `--session-id`. The version is
/// probed once with the image, the id rungs are skipped with an event that
/// says so, and `--session-id` never reaches the agent; gemini 0.41 mints
/// and resumes by id.
#[test]
fn gemini_older_than_its_id_flags_skips_those_ways_with_an_event() {
    ensure_busybox();
    let home = Home::new();
    let old = RoleRepo::with_fake_agents_and(
        "RUN [\"/bin/sh\", \"-c\", \"mkdir -p /etc && echo 0.40.1 > /etc/gemini-version\"]\n",
    );
    home.apply("g.yaml", &old.agent_instance_yaml("old", "gemini", ""));
    let first = home.wait_for_starts("old", 1);
    assert!(first[0].starts_with("gemini new "), "{first:?}");
    let argv = std::fs::read_to_string(home.unit("old").join("home/agent-argv.log")).unwrap();
    assert!(!argv.contains("--session-id"), "{argv}");
    let recipe = &home.object("old")["status"]["recipe"];
    assert_eq!(recipe["agent"]["version"], "0.40.1", "{recipe}");
    let described = home.ok(&["describe", "old"]);
    assert!(
        described.contains("AgentRungsSkipped")
            && described.contains("minted (needs 0.41.0), resumed-by-id (needs 0.41.0)"),
        "{described}"
    );

    let new = RoleRepo::with_fake_agents();
    home.apply("n.yaml", &new.agent_instance_yaml("new", "gemini", ""));
    let id = home.conversation("new")["id"].as_str().unwrap().to_owned();
    assert_eq!(
        home.wait_for_starts("new", 1),
        [format!("gemini minted {id}")]
    );
    docker(&["rm", "-f", &home.container("new")]);
    home.one_pass();
    assert_eq!(
        home.wait_for_starts("new", 2)[1],
        format!("gemini resumed {id}")
    );
    assert!(!home.ok(&["describe", "new"]).contains("AgentRungsSkipped"));
}

/// Defect A4: an applied conversation id the agent would refuse at its first
/// start is refused at apply, and nothing is written.
#[test]
fn a_conversation_id_the_agent_would_refuse_is_refused_at_apply() {
    let home = Home::new();
    let yaml = |id: &str| {
        support::instance_yaml("ided").replace(
            "agent: shell",
            &format!("agent: claude\n  conversationId: {id}"),
        )
    };
    let input = home.write_input("bad.yaml", &yaml("session-1"));
    let before = home.snapshot();
    let err = home.fails(&["apply", input.to_str().unwrap()]);
    assert!(
        err.contains("instance/ided: spec.conversationId: claude takes a UUID")
            && err.contains("\"session-1\""),
        "{err}"
    );
    home.assert_unchanged(&before, "a refused apply");
    // A UUID passes (a dry run: this test has no image to start).
    let good = home.write_input("good.yaml", &yaml("0f5c3e0a-6a5b-4c7e-9d1f-2b3a4c5d6e7f"));
    home.ok(&["apply", "--dry-run", good.to_str().unwrap()]);
}

/// Defect A6: claude and gemini delete conversations after 30 days; jackin
/// raises their own setting in the unit, and keeps the rest of the file.
/// An agent with no such setting gets a warning once a kept session is
/// older than it keeps conversations.
#[test]
fn conversations_outlive_the_agents_own_retention() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let yaml = role.agent_instance_yaml("cl", "claude", "");
    home.apply("c.yaml", &yaml);
    home.apply("g.yaml", &role.agent_instance_yaml("gm", "gemini", ""));
    home.wait_for_starts("cl", 1);
    home.wait_for_starts("gm", 1);
    let settings = |name: &str, file: &str| -> serde_json::Value {
        serde_json::from_slice(&std::fs::read(home.unit(name).join("home").join(file)).unwrap())
            .unwrap()
    };
    assert_eq!(
        settings("cl", ".claude/settings.json")["cleanupPeriodDays"],
        36_500
    );
    assert_eq!(
        settings("gm", ".gemini/settings.json")["general"]["sessionRetention"]["maxAge"],
        "36500d"
    );
    // The operator's (or the agent's) other settings stay.
    let file = home.unit("cl").join("home/.claude/settings.json");
    std::fs::write(&file, r#"{"model": "opus", "cleanupPeriodDays": 7}"#).unwrap();
    docker(&["stop", "-t", "2", &home.container("cl")]);
    home.one_pass();
    home.wait_for_starts("cl", 2);
    assert_eq!(
        settings("cl", ".claude/settings.json")["cleanupPeriodDays"],
        36_500
    );
    assert_eq!(settings("cl", ".claude/settings.json")["model"], "opus");

    // No setting to raise: a warning, once the kept session is older.
    let agent = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: brief}\nspec:\n  \
                 launch: [codex]\n  continueArgs: [resume, --last]\n  \
                 stateEnv: {name: CODEX_HOME, path: .codex}\n  retention: {days: 0}\n  settings:\n  \
                 - {name: trust, file: config.toml, format: toml, key: [projects, '{workingDir}', trust_level], \
                 value: trusted}\n";
    home.apply("agent.yaml", agent);
    let yaml = role.agent_instance_yaml("br", "brief", "");
    home.apply("b.yaml", &yaml);
    home.wait_for_starts("br", 1);
    assert!(!home.ok(&["describe", "br"]).contains("Warning"));
    home.ok(&["set-phase", "br", "kept"]);
    let described = home.ok(&["describe", "br"]);
    assert!(
        described.lines().any(|line| line.starts_with("Warning:")
            && line.contains("brief deletes a conversation 0 days after its last activity")),
        "{described}"
    );
}

/// Issue 23, agent binaries: an agent whose program the role image lacks is
/// installed from its entry's install block into a derived image (no
/// registry is reachable here, so the block writes a stand-in). The image is
/// pinned, reused for the same role image and block, made again at tier 3,
/// and a failing block keeps its build output and says where.
#[test]
fn an_agent_missing_from_the_role_image_gets_a_derived_image() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("bare");
    let agent = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: standin}\nspec:\n  \
                 launch: [standin]\n  install:\n  \
                 - >-\n    RUN printf '#!/bin/sh\\necho standin started >> $HOME/agent-starts.log\\nexec sleep 3600\\n'\n    \
                 > /bin/standin && chmod 755 /bin/standin\n";
    home.apply("agent.yaml", agent);
    let apply = |name: &str| {
        let input = home.write_input(
            &format!("{name}.yaml"),
            &role.agent_instance_yaml(name, "standin", ""),
        );
        let out = home.jackin(&["apply", input.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
        assert!(out.status.success(), "{stderr}");
        stderr
    };
    let first = apply("one");
    assert!(
        first.contains("instance/one: [agent binaries] standin is not in jackin/"),
        "{first}"
    );
    assert!(
        first.contains(&format!(
            "instance/one: [derived image] built jackin/{}-standin:",
            role.role
        )),
        "{first}"
    );
    assert_eq!(home.wait_for_starts("one", 1), ["standin started"]);
    let recipe = home.object("one")["status"]["recipe"].clone();
    let derived = recipe["image"].as_str().unwrap().to_owned();
    let role_image = recipe["derivedFrom"]
        .as_str()
        .expect("derivedFrom")
        .to_owned();
    assert!(
        derived.starts_with(&format!("jackin/{}-standin:", role.role)),
        "{recipe}"
    );
    assert_ne!(recipe["imageId"].as_str().unwrap(), role_image);

    // The same role image and block: the derived image is the same one.
    let second = apply("two");
    assert!(
        second.contains(&format!("instance/two: [derived image] using {derived}")),
        "{second}"
    );
    assert_eq!(
        home.object("two")["status"]["recipe"]["imageId"],
        recipe["imageId"]
    );
    home.ok(&["delete", "two", "--force"]);

    // Tier 3: the derived image is gone; the role image is rebuilt at its
    // commit and the agent installed on it again.
    docker(&["rm", "-f", &home.container("one")]);
    docker(&["rmi", "-f", &derived]);
    home.one_pass();
    assert_eq!(home.object("one")["status"]["restore"]["tier"], 3);
    assert_eq!(home.wait_for_starts("one", 2)[1], "standin started");
    assert_eq!(
        home.object("one")["status"]["recipe"]["image"],
        derived.as_str()
    );

    // A block that fails: the launch fails, saying where its output is.
    let broken = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: broken}\nspec:\n  \
                  launch: [broken]\n  install: ['RUN echo installing broken; exit 3']\n";
    home.apply("broken.yaml", broken);
    let input = home.write_input("b.yaml", &role.agent_instance_yaml("b", "broken", ""));
    let out = home.jackin(&["apply", input.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "installing the agent broken into a derived image failed (its build output is kept in"
        ),
        "{stderr}"
    );
    let log = home.unit("b").join(".jackin/agent-install.log");
    assert!(
        std::fs::read_to_string(&log)
            .unwrap()
            .contains("installing broken"),
        "{}",
        log.display()
    );
    let failed = home.object("b");
    assert_eq!(
        condition(&failed, "Ready").unwrap()["reason"],
        "AgentInstallFailed",
        "{failed}"
    );
}

/// A workspace whose sessions ended by their agent are kept, and whose
/// quiet agents need their operator after 3 s.
fn desk(home: &Home) {
    home.apply(
        "desk",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\nspec:\n  \
         exitPolicy: keep\n  needsYouAfter: 3s\n",
    );
}

/// With the trust setting turned off by the workspace (`agentSettings:
/// {trust: false}`), claude and codex open on their trust question again
/// (defect R1's, as before jackin set it). Answered "yes" on the
/// terminal, the conversation starts and the agent's own answer is kept in
/// the unit, where the next start finds it: jackin writes nothing over it.
/// codex draws its question once the attach gives its terminal a size.
#[test]
fn with_trust_turned_off_the_question_comes_back_and_its_answer_is_kept() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    home.apply(
        "wary",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: wary}\nspec:\n  \
         agentSettings: {trust: false}\n",
    );
    for (agent, question, again) in [
        ("claude", "Quick safety check", "resumed"),
        (
            "codex",
            "Do you trust the contents of this directory?",
            "continued",
        ),
    ] {
        home.record(
            agent,
            &role.agent_instance_yaml(agent, agent, "  workspace: wary\n"),
        );
        let term = Terminal::start(&home, &format!("attach {agent}"));
        term.wait_for(question, 1);
        assert_eq!(home.agent_starts(agent), Vec::<String>::new(), "{agent}");
        term.type_line("1");
        let first = home.wait_for_starts(agent, 1);
        let id = first[0].rsplit(' ').next().unwrap().to_owned();
        drop(term);
        docker(&["stop", "-t", "2", &home.container(agent)]);
        home.one_pass();
        let log = home.wait_for_starts(agent, 2);
        assert_eq!(log[1], format!("{agent} {again} {id}"), "{agent}: {log:?}");
        let described = home.ok(&["describe", agent]);
        let line = described
            .lines()
            .find(|l| l.trim_start().starts_with("trust "))
            .unwrap_or_else(|| panic!("describe lists no trust setting:\n{described}"));
        assert!(line.contains(" off "), "{line}");
    }
    // codex's sandbox is not turned off: it is still set.
    assert!(
        home.ok(&["describe", "codex"])
            .contains("sandbox_mode = \"danger-full-access\"")
    );
    let file = |name: &str, path: &str| {
        std::fs::read_to_string(home.unit(name).join("home").join(path)).unwrap()
    };
    let account: serde_json::Value =
        serde_json::from_str(&file("claude", ".claude/.claude.json")).unwrap();
    assert_eq!(
        account["projects"]["/work"]["hasTrustDialogAccepted"], true,
        "{account}"
    );
    let config = file("codex", ".codex/config.toml");
    assert!(
        config.contains("[projects.\"/work\"]\ntrust_level = \"trusted\"\n"),
        "{config}"
    );
}

/// Defect R8: claude's /exit before any message leaves a stub transcript,
/// after which neither a resume nor a mint of that id starts: each rung
/// fails at once (the resume with its words on standard output, R10). The
/// last rung then starts a new conversation under a new id jackin minted
/// before the start and records, newest first, never a claude whose id
/// jackin does not know (a plain one, or one asked to continue its
/// latest); the next start resumes the new id.
#[test]
fn an_exit_before_any_message_starts_anew_under_a_new_recorded_id() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    desk(&home);
    let yaml = role.agent_instance_yaml("stub", "claude", "  workspace: desk\n");
    home.record("stub.yaml", &yaml);
    let term = Terminal::start(&home, "attach stub");
    term.wait_for("claude: minted conversation", 1);
    let id = home.conversation("stub")["id"].as_str().unwrap().to_owned();
    term.type_line("/exit");
    support::eventually(Duration::from_secs(60), "the session is kept", || {
        home.one_pass();
        home.object("stub")["status"]["phase"] == "Kept"
    });
    drop(term);
    let transcript = home
        .unit("stub")
        .join(format!("home/.claude/projects/-work/{id}.jsonl"));
    let stub = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(stub.lines().count(), 3, "{stub}");

    home.ok(&["set-phase", "stub", "running"]);
    let log = home.wait_for_starts("stub", 2);
    let new_id = log[1]
        .strip_prefix("claude minted ")
        .unwrap_or_else(|| panic!("a new conversation under a minted id: {log:?}"))
        .to_owned();
    assert_ne!(new_id, id);
    home.wait_for_the_start_to_settle("stub");
    home.one_pass();
    let conv = home.conversation("stub");
    assert_eq!(conv["lastStart"], "minted-anew", "{conv}");
    assert_eq!(conv["id"], new_id.as_str(), "{conv}");
    assert_eq!(conv["ids"], serde_json::json!([new_id, id]), "{conv}");
    let described = home.ok(&["describe", "stub"]);
    for said in [
        "starting the agent resumed-by-id exited 1 at once".to_owned(),
        format!(
            "starting the agent minted exited 1 at once: Error: Session ID {id} is already in use."
        ),
        format!("ConversationRenewed   the agent could neither resume conversation {id}"),
        format!("Conversation ids: {new_id}, {id} (newest first)"),
    ] {
        assert!(described.contains(&said), "{said:?} in:\n{described}");
    }
    assert!(
        !described.contains("starting the agent continue-requested"),
        "an agent that takes ids is not asked to continue its latest: {described}"
    );

    // The next start resumes the new id.
    docker(&["stop", "-t", "2", &home.container("stub")]);
    home.one_pass();
    assert_eq!(
        home.wait_for_starts("stub", 3)[2],
        format!("claude resumed {new_id}")
    );
    home.wait_for_the_start_to_settle("stub");
    home.one_pass();
    let conv = home.conversation("stub");
    assert_eq!(conv["lastStart"], "resumed-by-id", "{conv}");
    assert_eq!(conv["ids"], serde_json::json!([new_id, id]), "{conv}");
}

/// claude started as `name`, then its transcript removed and its container
/// stopped: the next start's resume by id fails at once with claude's "No
/// conversation found with session ID" on standard output, and the mint
/// of the same id runs. Returns the home, the role repository (which must
/// live as long as the test: a restore may build from it again) and the id.
fn a_resume_by_id_claude_refuses(name: &str) -> (Home, RoleRepo, String) {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let yaml = role.agent_instance_yaml(name, "claude", "");
    home.apply("w.yaml", &yaml);
    let id = home.conversation(name)["id"].as_str().unwrap().to_owned();
    home.wait_for_starts(name, 1);
    let projects = home.unit(name).join("home/.claude/projects/-work");
    std::fs::remove_file(projects.join(format!("{id}.jsonl"))).unwrap();
    docker(&["stop", "-t", "2", &home.container(name)]);
    home.one_pass();
    assert_eq!(
        home.wait_for_starts(name, 2)[1],
        format!("claude minted {id}"),
        "the next rung runs"
    );
    (home, role, id)
}

/// Defect R10: claude says why a resume failed on standard output, and the
/// fallback event carries it as it carries what other agents say on
/// standard error: the last line of the rung's window in the engine's log.
#[test]
fn claudes_words_on_standard_output_reach_the_fallback_event() {
    let (home, _role, id) = a_resume_by_id_claude_refuses("words");
    home.one_pass();
    let events = home.ok(&["describe", "words"]);
    assert!(
        events.contains(&format!(
            "starting the agent resumed-by-id exited 1 at once: No conversation found with session ID: {id}"
        )),
        "{events}"
    );
}

/// How `name`'s start went, read by the pass that follows its grace
/// period: `lastStart`, then the last fallback's rung, exit code and how
/// it is told (`status.conversation.lastFallback`).
fn settled_start(home: &Home, name: &str) -> [String; 4] {
    home.wait_for_the_start_to_settle(name);
    home.one_pass();
    let conv = home.conversation(name);
    let fallback = &conv["lastFallback"];
    [
        &conv["lastStart"],
        &fallback["rung"],
        &fallback["exitCode"],
        &fallback["ended"],
    ]
    .map(|value| match value {
        serde_json::Value::String(text) => text.clone(),
        other => other.to_string(),
    })
}

/// Defect SA4: a rung that ends within its grace period with an error that
/// names the conversation (claude: "No conversation found with session ID
/// …") is told as refused, in the event and in `status.conversation`; the
/// ladder moves on and the agent runs.
#[test]
fn sa4_a_refused_id_is_told_as_refused_and_the_agent_still_runs() {
    let (home, _role, id) = a_resume_by_id_claude_refuses("refused");
    assert_eq!(
        settled_start(&home, "refused"),
        ["minted", "resumed-by-id", "1", "refused"]
    );
    let events = home.ok(&["describe", "refused"]);
    assert!(
        events.contains(&format!(
            "starting the agent resumed-by-id exited 1 at once: No conversation found with \
             session ID: {id} (refused: the agent named the conversation)"
        )),
        "{events}"
    );
    assert!(agent_runs(&home, "refused"), "the agent runs");
}

/// Defect SA4: a rung that crashes at once with an error that says nothing
/// of the conversation is told as crashed, not as a refused one; the
/// ladder still moves on and the agent runs.
#[test]
fn sa4_a_crash_within_the_grace_period_is_told_as_crashed_and_the_agent_still_runs() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    // Its continue dies at once with another message; a plain start runs.
    let agent = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: crashy}\n\
                 spec:\n  launch: [sh, -c, 'if [ \"$1\" = --continue ]; then echo \"fatal: \
                 illegal instruction at 0x4f2a\" >&2; exit 132; fi; echo started >> \
                 $HOME/agent-starts.log; exec sleep 3600', crashy]\n  continueArgs: [--continue]\n";
    home.apply("agent.yaml", agent);
    let yaml = role.agent_instance_yaml("crashy", "crashy", "");
    home.apply("c.yaml", &yaml);
    home.wait_for_starts("crashy", 1);
    docker(&["stop", "-t", "2", &home.container("crashy")]);
    home.one_pass();
    assert_eq!(
        home.wait_for_starts("crashy", 2),
        ["started", "started"],
        "the next rung runs"
    );
    assert_eq!(
        settled_start(&home, "crashy"),
        ["fresh", "continue-requested", "132", "crashed"]
    );
    let events = home.ok(&["describe", "crashy"]);
    assert!(
        events.contains(
            "starting the agent continue-requested exited 132 at once: fatal: illegal \
             instruction at 0x4f2a (crashed: not a refusal of the conversation)"
        ),
        "{events}"
    );
    assert!(agent_runs(&home, "crashy"), "the agent runs");
}

/// Waits until `name`'s row in `jackin top`'s plain lines ends with
/// `attention`: a long-lived look, which reads the container's output
/// stream, so that a prompt with no newline counts (defect R4).
fn wait_for_attention(home: &Home, name: &str, attention: &str) {
    if let Err(seen) = home.wait_in_top(name, attention, Duration::from_secs(60)) {
        panic!("{name} never showed {attention:?}:\n{}", seen.join("\n"));
    }
}

/// An agent that started its conversation and waits for its first message,
/// with nobody attached, needs its operator (defect R4 is codex's).
fn waits_for_its_first_message_and_needs_you(agent: &str) {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    desk(&home);
    let yaml = role.agent_instance_yaml(agent, agent, "  workspace: desk\n");
    home.apply("a.yaml", &yaml);
    home.wait_for_starts(agent, 1);
    wait_for_attention(&home, agent, "needs you");
}

#[test]
fn an_unattended_claude_waiting_for_its_first_message_needs_you() {
    waits_for_its_first_message_and_needs_you("claude");
}

/// Defect R4: codex draws nothing on the 0x0 terminal of a container
/// nobody attached to, and its prompt ends with no newline, so its log
/// stays empty: the terminal is sized at every start, and a long-lived look
/// reads the output stream, unfinished line and all.
#[test]
fn an_unattended_codex_waiting_for_its_first_message_needs_you() {
    waits_for_its_first_message_and_needs_you("codex");
}

/// Defect R2: a session nobody attached to yet met claude's trust
/// question at every start, so its restore waited there (and, answered,
/// ended Crashed). With the built-in trust setting, restored, it continues
/// without a question.
#[test]
fn a_restore_of_a_session_nobody_attached_to_starts_without_a_question() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    home.apply("c.yaml", &role.agent_instance_yaml("lone", "claude", ""));
    home.wait_for_starts("lone", 1);
    docker(&["rm", "-f", &home.container("lone")]);
    home.one_pass();
    assert_eq!(home.object("lone")["status"]["restore"]["tier"], 2);
    let log = home.wait_for_starts("lone", 2);
    assert!(log[1].starts_with("claude "), "{log:?}");
    home.one_pass();
    assert_eq!(home.object("lone")["status"]["phase"], "Running");
}

/// A unit pinned before agents had settings (its pinned claude entry has
/// none, and nothing in its files answers the trust question) gets them
/// at its next start from the entry jackin ships now: claude starts
/// without a question (R1), and the session shows no `SpecDrift` for it.
#[test]
fn a_session_pinned_before_settings_existed_gets_them_at_its_next_start_without_drift() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    home.apply("c.yaml", &role.agent_instance_yaml("old", "claude", ""));
    home.wait_for_starts("old", 1);
    docker(&["stop", "-t", "2", &home.container("old")]);
    // What an earlier jackin left: no settings in the pinned entry, no
    // trust in claude's file.
    let unit = home.unit("old");
    let object = unit.join(".jackin/instance.json");
    let mut obj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&object).unwrap()).unwrap();
    let pinned = &mut obj["status"]["recipe"]["agent"]["spec"];
    assert!(pinned["settings"].is_array(), "{pinned}");
    pinned.as_object_mut().unwrap().remove("settings");
    std::fs::write(&object, serde_json::to_vec_pretty(&obj).unwrap()).unwrap();
    let account = unit.join("home/.claude/.claude.json");
    let mut trusts: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&account).unwrap()).unwrap();
    trusts.as_object_mut().unwrap().remove("projects");
    std::fs::write(&account, serde_json::to_vec(&trusts).unwrap()).unwrap();

    home.one_pass();
    let log = home.wait_for_starts("old", 2);
    assert!(log[1].starts_with("claude "), "{log:?}");
    home.one_pass();
    let obj = home.object("old");
    assert_eq!(condition(&obj, "SpecDrift"), None, "{obj}");
    assert!(
        obj["status"]["recipe"]["agent"]["spec"]
            .get("settings")
            .is_none(),
        "the pinned entry stays as pinned"
    );
}
