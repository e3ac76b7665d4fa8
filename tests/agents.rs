//! Agents as data: every restore resumes the agent's own conversation.
//! Against the real engine, with fake agent CLIs (`tests/fixtures/fake-agent`)
//! that keep transcripts and refuse what the real ones refuse.

mod support;

use std::path::PathBuf;
use std::time::{Duration, Instant};

use support::{Home, RoleRepo, condition, docker, ensure_busybox};

/// The unit's directory on the host.
fn unit(home: &Home, name: &str) -> PathBuf {
    home.path().join("data").join(home.container(name))
}

/// The agent's starts, as the fake CLI logged them: `<agent> <how> <id>`.
fn starts(home: &Home, name: &str) -> Vec<String> {
    std::fs::read_to_string(unit(home, name).join("home/agent-starts.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_owned)
        .collect()
}

/// Waits until the agent has started `count` times; returns the log.
fn wait_for_starts(home: &Home, name: &str, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let log = starts(home, name);
        if log.len() >= count {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {count} start(s) expected, the log has {log:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// One controller pass: repairs what the test broke, and folds the agent's
/// report of its last start into the status.
fn pass(home: &Home) {
    let out = home.ok(&["controller", "--once"]);
    assert!(out.starts_with("pass complete"), "{out}");
}

fn conversation(home: &Home, name: &str) -> serde_json::Value {
    home.object(name)["status"]["conversation"].clone()
}

/// What breaks a session: its name, the `docker` commands that do it, and
/// the restore tier that repairs it (`None`: kept, then resumed).
type Breakage<'a> = (&'a str, &'a [&'a [&'a str]], Option<u64>);

#[test]
fn the_same_conversation_continues_across_every_tier() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    home.apply("c.yaml", &role.agent_instance_yaml("conv", "claude", ""));
    let id = conversation(&home, "conv")["id"]
        .as_str()
        .expect("a minted id")
        .to_owned();
    assert_eq!(
        wait_for_starts(&home, "conv", 1),
        [format!("claude minted {id}")]
    );
    let container = home.container("conv");
    let image = home.object("conv")["status"]["recipe"]["imageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let breakages: [Breakage; 5] = [
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
    for (n, (what, commands, tier)) in breakages.into_iter().enumerate() {
        for args in commands {
            docker(args);
        }
        match tier {
            Some(tier) => {
                pass(&home);
                assert_eq!(
                    home.object("conv")["status"]["restore"]["tier"],
                    tier,
                    "{what}"
                );
            }
            None => {
                home.ok(&["set-phase", "conv", "kept"]);
                home.ok(&["set-phase", "conv", "running"]);
            }
        }
        let log = wait_for_starts(&home, "conv", n + 2);
        assert_eq!(
            log[n + 1],
            format!("claude resumed {id}"),
            "{what}: {log:?}"
        );
    }
    pass(&home);
    let conv = conversation(&home, "conv");
    assert_eq!(conv["id"], id.as_str());
    assert_eq!(conv["strategy"], "id");
    assert_eq!(conv["lastStart"], "resumed-by-id");
    assert_eq!(conv.get("fallbacks"), None, "no start fell back: {conv}");
    // One transcript, in the unit's home, written by every start.
    let transcript = unit(&home, "conv").join(format!("home/.claude/projects/-work/{id}.jsonl"));
    let text = std::fs::read_to_string(&transcript).unwrap();
    assert_eq!(text.matches("started ").count(), 6, "{text}");
    let described = home.ok(&["describe", "conv"]);
    assert!(
        described.contains(&format!("resumed by id {id}; last started resumed-by-id")),
        "{described}"
    );
}

#[test]
fn a_lost_transcript_falls_back_to_the_latest_then_to_a_fresh_start() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    home.apply("c.yaml", &role.agent_instance_yaml("lost", "claude", ""));
    let id = conversation(&home, "lost")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    wait_for_starts(&home, "lost", 1);
    let projects = unit(&home, "lost").join("home/.claude/projects/-work");
    let container = home.container("lost");

    // The id's transcript is gone, another one is there: continue it.
    std::fs::remove_file(projects.join(format!("{id}.jsonl"))).unwrap();
    std::fs::write(projects.join("other.jsonl"), "started elsewhere\n").unwrap();
    docker(&["stop", "-t", "2", &container]);
    pass(&home);
    let log = wait_for_starts(&home, "lost", 2);
    assert_eq!(log[1], "claude continued other");
    pass(&home);
    let conv = conversation(&home, "lost");
    assert_eq!(conv["lastStart"], "continued-latest", "{conv}");
    assert_eq!(conv["fallbacks"], 1, "{conv}");
    let events = home.ok(&["describe", "lost"]);
    assert!(
        events.contains("AgentFallback")
            && events.contains(&format!("No conversation found with session ID: {id}")),
        "{events}"
    );

    // No transcript at all: a fresh start, and the agent runs.
    for entry in std::fs::read_dir(&projects).unwrap() {
        std::fs::remove_file(entry.unwrap().path()).unwrap();
    }
    docker(&["stop", "-t", "2", &container]);
    pass(&home);
    let log = wait_for_starts(&home, "lost", 3);
    assert!(log[2].starts_with("claude new "), "{log:?}");
    pass(&home);
    let conv = conversation(&home, "lost");
    assert_eq!(conv["lastStart"], "fresh", "{conv}");
    assert_eq!(conv["fallbacks"], 3, "{conv}");
    assert_eq!(conv["id"], id.as_str(), "the minted id stays the session's");
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true"
    );
    let described = home.ok(&["describe", "lost"]);
    assert!(
        described.contains("No conversation found to continue"),
        "{described}"
    );
}

#[test]
fn agents_without_ids_continue_their_latest_conversation() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    for agent in ["codex", "aider"] {
        home.apply(
            &format!("{agent}.yaml"),
            &role.agent_instance_yaml(agent, agent, ""),
        );
        let first = wait_for_starts(&home, agent, 1);
        assert!(first[0].starts_with(&format!("{agent} new ")), "{first:?}");
        let id = first[0].rsplit(' ').next().unwrap().to_owned();
        docker(&["stop", "-t", "2", &home.container(agent)]);
        pass(&home);
        let log = wait_for_starts(&home, agent, 2);
        assert_eq!(log[1], format!("{agent} continued {id}"));
        let conv = conversation(&home, agent);
        assert_eq!(conv["strategy"], "latest");
        assert_eq!(conv.get("id"), None);
    }
    // Their state is in the unit's home, where the entries point it.
    let codex = unit(&home, "codex").join("home/.codex/sessions/-work");
    assert_eq!(std::fs::read_dir(codex).unwrap().count(), 1);
    assert!(
        unit(&home, "aider")
            .join("home/.aider.chat.history.md")
            .is_file()
    );
}

#[test]
fn an_applied_agent_overrides_the_builtin_and_a_command_still_wins() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    home.apply(
        "before.yaml",
        &role.agent_instance_yaml("before", "claude", ""),
    );
    wait_for_starts(&home, "before", 1);

    // Claude's state elsewhere, and no continuing.
    let agent = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: claude}\nspec:\n  \
                 launch: [claude]\n  mintArgs: [--session-id, '{id}']\n  resumeArgs: [--resume, '{id}']\n  \
                 stateEnv: {name: CLAUDE_CONFIG_DIR, path: claude-state}\n";
    assert_eq!(home.apply("agent.yaml", agent), "agent/claude created\n");
    let listed = home.ok(&["get", "agents"]);
    let claude = listed.lines().find(|l| l.starts_with("claude ")).unwrap();
    assert!(
        claude.contains("applied") && claude.contains(" id "),
        "{listed}"
    );

    home.apply(
        "after.yaml",
        &role.agent_instance_yaml("after", "claude", ""),
    );
    wait_for_starts(&home, "after", 1);
    let id = conversation(&home, "after")["id"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        unit(&home, "after")
            .join(format!("home/claude-state/projects/-work/{id}.jsonl"))
            .is_file()
    );
    // The session pinned before the change keeps its entry, and says so.
    pass(&home);
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
    assert!(wait_for_starts(&home, "own", 1)[0].starts_with("claude minted "));
    let other = role.agent_instance_yaml(
        "other",
        "claude",
        "  command: [sh, -c, 'echo as-given >> $HOME/agent-starts.log; exec sleep 3600']\n",
    );
    home.apply("other.yaml", &other);
    assert_eq!(wait_for_starts(&home, "other", 1), ["as-given"]);
    assert_eq!(conversation(&home, "other")["strategy"], "none");
    // And `resume: false` opts out.
    let fresh = role.agent_instance_yaml("fresh", "claude", "  resume: false\n");
    home.apply("fresh.yaml", &fresh);
    assert!(wait_for_starts(&home, "fresh", 1)[0].starts_with("claude new "));
    docker(&["stop", "-t", "2", &home.container("fresh")]);
    pass(&home);
    assert!(wait_for_starts(&home, "fresh", 2)[1].starts_with("claude new "));
}

#[test]
fn an_id_with_shell_metacharacters_reaches_the_agent_as_one_argument() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let agent = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: quoted}\nspec:\n  \
                 launch: [claude]\n  mintArgs: [--session-id, '{id}']\n  resumeArgs: [--resume, '{id}']\n";
    home.apply("agent.yaml", agent);
    // No '/': the fake keeps transcripts as files named by the id.
    let id = "a b;$(touch pwned)'\"`x` *";
    let yaml_id = format!("'{}'", id.replace('\'', "''"));
    home.apply(
        "q.yaml",
        &role.agent_instance_yaml("q", "quoted", &format!("  conversationId: {yaml_id}\n")),
    );
    wait_for_starts(&home, "q", 1);
    let argv = std::fs::read_to_string(unit(&home, "q").join("home/agent-argv.log")).unwrap();
    assert_eq!(argv, format!("argv\n--session-id\n{id}\nend\n"));
    let container = home.container("q");
    let probe = std::process::Command::new("docker")
        .args(["exec", &container, "test", "-e", "/work/pwned"])
        .status()
        .unwrap();
    assert!(!probe.success(), "a shell evaluated the id");
    // Resumed by the same id, still one argument.
    docker(&["stop", "-t", "2", &container]);
    pass(&home);
    assert_eq!(
        wait_for_starts(&home, "q", 2)[1],
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
        err.contains("instance/typo: no agent is named \"cluade\""),
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
    let projects = unit(&home, "adopt").join("home/.claude/projects/-work");
    std::fs::create_dir_all(&projects).unwrap();
    std::fs::write(projects.join(format!("{id}.jsonl")), "started earlier\n").unwrap();
    pass(&home);
    assert_eq!(
        wait_for_starts(&home, "adopt", 1),
        [format!("claude resumed {id}")]
    );
    pass(&home);
    let conv = conversation(&home, "adopt");
    assert_eq!(conv["lastStart"], "resumed-by-id", "{conv}");
    assert_eq!(conv["fallbacks"], 1, "{conv}");
    let described = home.ok(&["describe", "adopt"]);
    assert!(
        described.contains(&format!("Error: Session ID {id} is already in use.")),
        "{described}"
    );
}
