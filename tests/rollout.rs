//! Rollouts: a session moved onto its changed spec keeps everything of its
//! unit. Against the real engine, real git repositories and the fake agent
//! CLIs (`tests/fixtures/fake-agent`).

use std::path::Path;
use std::time::Duration;

use support::{
    Controller, Home, RoleRepo, busybox_image, condition, docker, ensure_busybox, eventually, git,
};

/// The argv of the agent's last start, as the fake CLI logged it.
fn last_argv(home: &Home, name: &str) -> Vec<String> {
    let log = std::fs::read_to_string(home.unit(name).join("home/agent-argv.log")).unwrap();
    let last = log.rsplit("argv\n").next().unwrap_or_default();
    last.lines()
        .take_while(|line| *line != "end")
        .map(str::to_owned)
        .collect()
}

fn container_id(home: &Home, name: &str) -> String {
    docker(&["inspect", "-f", "{{.Id}}", &home.container(name)])
}

/// The spec lines of the session of the first test: the agent works in
/// `/work` whatever the mounts (claude keys its conversations by it).
fn session_lines(host: &Path, mode: &str, extra: &str) -> String {
    format!(
        "  workingDir: /work\n  env: [{{name: MODE, value: {mode}}}]\n  mounts:\n  - {{src: {}, \
         dst: /workspace/app, isolation: worktree}}\n{extra}",
        host.display()
    )
}

#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a test scenario told in the order an operator meets it"
)]
fn a_rollout_moves_a_running_session_onto_the_new_spec_and_keeps_it() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let shared = scratch.path().join("shared");
    std::fs::create_dir_all(&shared).unwrap();
    std::fs::write(shared.join("notes"), "shared\n").unwrap();
    let v1 = role.agent_instance_yaml("roll", "claude", &session_lines(&host, "one", ""));
    home.apply("roll.yaml", &v1);
    eventually(Duration::from_secs(60), "the agent started", || {
        home.agent_starts("roll").len() == 1
    });
    let obj = home.object("roll");
    let id = obj["status"]["conversation"]["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let image = obj["status"]["recipe"]["imageId"].clone();
    let before = container_id(&home, "roll");
    // What the session holds: a file in the agent's home, unfinished work
    // in its isolated checkout.
    std::fs::write(home.unit("roll").join("home/keep.txt"), "mine\n").unwrap();
    let checkout = home.checkout("roll");
    std::fs::write(checkout.join("draft.txt"), "half done\n").unwrap();
    let status_before = git(&checkout, &["status", "--porcelain"]);
    assert!(status_before.contains("draft.txt"), "{status_before}");

    // A new command, variable and mount.
    let extra = "  command: [claude, --model, sonnet]\n";
    let v2 = role
        .agent_instance_yaml("roll", "claude", &session_lines(&host, "two", extra))
        .replace(
            "isolation: worktree}\n",
            &format!(
                "isolation: worktree}}\n  - {{src: {}, dst: /shared, readonly: true}}\n",
                shared.display()
            ),
        );
    let out = home.apply("roll.yaml", &v2);
    assert!(out.starts_with("instance/roll configured\n"), "{out}");
    let drift = condition(&home.object("roll"), "SpecDrift")
        .expect("drift")
        .clone();
    let message = drift["message"].as_str().unwrap();
    assert!(
        message.contains("spec.command") && message.contains("`jackin rollout roll`"),
        "{message}"
    );

    // The dry run says what changes and what happens, and does nothing.
    let snapshot = home.snapshot();
    let dry = home.ok(&["rollout", "roll", "--dry-run"]);
    for expected in [
        "instance/roll rollout would (dry run):",
        "change command: [\"claude\"] -> [\"claude\",\"--model\",\"sonnet\"]",
        "change mounts:",
        "change env:",
        "pinning the recipe again from the current spec (rollout)",
        "stopping the container",
        "removing the container",
        "creating the container",
    ] {
        assert!(dry.contains(expected), "{expected:?} in:\n{dry}");
    }
    home.assert_unchanged(&snapshot, "rollout --dry-run");
    assert_eq!(container_id(&home, "roll"), before);

    let out = home.ok(&["rollout", "roll"]);
    assert!(
        out.contains("instance/roll rolled out, tier 2: its unit and conversation kept"),
        "{out}"
    );

    // The container runs the new spec.
    assert_ne!(container_id(&home, "roll"), before);
    let container = home.container("roll");
    let env = docker(&["inspect", "-f", "{{json .Config.Env}}", &container]);
    assert!(env.contains("\"MODE=two\""), "{env}");
    let mounts = docker(&["inspect", "-f", "{{json .Mounts}}", &container]);
    assert!(mounts.contains("\"Destination\":\"/shared\""), "{mounts}");
    assert_eq!(
        docker(&["exec", &container, "cat", "/shared/notes"]),
        "shared"
    );
    // The agent resumed its conversation, under the new command.
    eventually(Duration::from_secs(60), "the agent started again", || {
        home.agent_starts("roll").len() == 2
    });
    assert_eq!(home.agent_starts("roll")[1], format!("claude resumed {id}"));
    assert_eq!(
        last_argv(&home, "roll"),
        ["--model", "sonnet", "--resume", id.as_str()]
    );
    let obj = home.object("roll");
    assert!(obj["status"]["restore"]["rollout"].is_string(), "{obj}");
    let logs = home.jackin(&["logs", "roll"]);
    let notice = String::from_utf8_lossy(&logs.stderr);
    assert!(
        notice.contains("made anew by a rollout (tier 2)"),
        "{notice}"
    );
    assert_eq!(obj["status"]["conversation"]["id"], id.as_str());
    assert_eq!(obj["status"]["recipe"]["imageId"], image, "the same image");
    assert_eq!(obj["status"]["restore"]["tier"], 2);
    // The unit is the same: home, checkout and its unfinished work.
    assert_eq!(
        std::fs::read_to_string(home.unit("roll").join("home/keep.txt")).unwrap(),
        "mine\n"
    );
    assert_eq!(home.checkout("roll"), checkout);
    assert_eq!(
        std::fs::read_to_string(checkout.join("draft.txt")).unwrap(),
        "half done\n"
    );
    assert_eq!(git(&checkout, &["status", "--porcelain"]), status_before);
    assert!(condition(&obj, "SpecDrift").is_none(), "{obj}");
    let rollout = condition(&obj, "Rollout").expect("the rollout is said");
    assert_eq!(rollout["reason"], "RolledOut", "{rollout}");
    let described = home.ok(&["describe", "roll"]);
    assert!(!described.contains("SpecDrift"), "{described}");

    // Re-applying the file changes nothing more, and the next restore
    // replays the new recipe.
    let out = home.apply("roll.yaml", &v2);
    assert!(out.starts_with("instance/roll unchanged\n"), "{out}");
    docker(&["rm", "-f", &container]);
    let out = home.ok(&["controller", "--once"]);
    assert!(out.starts_with("pass complete"), "{out}");
    let env = docker(&["inspect", "-f", "{{json .Config.Env}}", &container]);
    assert!(env.contains("\"MODE=two\""), "{env}");
}

/// R11: codex's `resume --last` finds its sessions by working directory,
/// so a rollout that moves it to another directory would leave its
/// conversation behind (and used to say "conversation kept"). It is
/// refused, with what to pass; with `--new-conversation` it goes on, says
/// the conversation starts anew, and codex starts a new one there, which
/// the next restore continues.
#[test]
fn a_rollout_that_moves_codex_to_another_directory_needs_a_new_conversation() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::with_fake_agents();
    let at =
        |dir: &str| role.agent_instance_yaml("moved", "codex", &format!("  workingDir: {dir}\n"));
    home.apply("moved.yaml", &at("/work"));
    eventually(Duration::from_secs(60), "codex started", || {
        home.agent_starts("moved").len() == 1
    });
    let first = home.agent_starts("moved")[0].clone();
    assert!(first.starts_with("codex new "), "{first}");
    let before = container_id(&home, "moved");

    home.apply("moved.yaml", &at("/tmp"));
    let snapshot = home.snapshot();
    let err = home.fails(&["rollout", "moved"]);
    assert!(
        err.contains("instance/moved cannot be rolled out")
            && err.contains("/work to /tmp")
            && err.contains("codex finds its conversations by directory")
            && err.contains("--new-conversation"),
        "{err}"
    );
    home.assert_unchanged(&snapshot, "a rollout refused for its conversation");
    assert_eq!(container_id(&home, "moved"), before);
    assert_eq!(home.agent_starts("moved").len(), 1);

    let out = home.ok(&["rollout", "moved", "--new-conversation"]);
    assert!(
        out.contains("instance/moved rolled out")
            && out.contains("the agent's conversation starts anew")
            && !out.contains("conversation kept"),
        "{out}"
    );
    assert_ne!(container_id(&home, "moved"), before);
    eventually(Duration::from_secs(60), "codex started again", || {
        home.agent_starts("moved").len() == 2
    });
    let second = home.agent_starts("moved")[1].clone();
    assert!(
        second.starts_with("codex new ") && second != first,
        "{second}"
    );
    assert!(
        last_argv(&home, "moved").is_empty(),
        "a fresh start, no resume"
    );
    let rollout = home.object("moved")["status"]["rollout"].clone();
    assert_eq!(rollout["newConversation"], true, "{rollout}");

    // The new conversation is the one kept from then on.
    docker(&["rm", "-f", &home.container("moved")]);
    let out = home.ok(&["controller", "--once"]);
    assert!(out.starts_with("pass complete"), "{out}");
    eventually(Duration::from_secs(60), "codex restored", || {
        home.agent_starts("moved").len() == 3
    });
    let id = second.trim_start_matches("codex new ");
    assert_eq!(
        home.agent_starts("moved")[2],
        format!("codex continued {id}")
    );
}

#[test]
fn a_role_commit_that_changes_the_image_is_rolled_out_at_tier_3() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("first");
    home.apply("r.yaml", &role.instance_yaml("rebuilt"));
    let container = home.container("rebuilt");
    assert_eq!(docker(&["exec", &container, "cat", "/marker"]), "first");
    let pinned = home.object("rebuilt")["status"]["recipe"].clone();
    // A new commit on the ref: no field of the spec changed, so a restore
    // would replay the old image; a rollout builds the new one.
    let commit = role.commit_marker("second");
    let dry = home.ok(&["rollout", "rebuilt", "--dry-run"]);
    assert!(dry.contains("built again from"), "{dry}");
    let out = home.ok(&["rollout", "rebuilt"]);
    assert!(out.contains("instance/rebuilt rolled out, tier 3"), "{out}");
    assert_eq!(docker(&["exec", &container, "cat", "/marker"]), "second");
    let recipe = home.object("rebuilt")["status"]["recipe"].clone();
    assert_eq!(recipe["roleCommit"], commit.as_str());
    assert_ne!(recipe["imageId"], pinned["imageId"]);
    assert_eq!(recipe["replaces"], pinned["imageId"]);
    assert_eq!(home.object("rebuilt")["status"]["restore"]["tier"], 3);
}

#[test]
fn what_cannot_change_in_place_is_refused_and_a_clean_checkout_is_made_anew() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let yaml = |isolation: &str, engine: &str| {
        format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: fixed}}\nspec:\n  \
             role: {{name: tester}}\n  agent: shell\n  image: {}\n  command: [sleep, \"3600\"]\n  \
             mounts: [{{src: {}, dst: /workspace/app, isolation: {isolation}}}]\n{engine}",
            busybox_image(),
            host.display()
        )
    };
    home.apply("f.yaml", &yaml("worktree", ""));
    let checkout = home.checkout("fixed");
    std::fs::write(checkout.join("wip.txt"), "unsaved\n").unwrap();
    let id = container_id(&home, "fixed");

    // Another isolation mode for a checkout that holds work.
    home.apply("f.yaml", &yaml("clone", ""));
    let snapshot = home.snapshot();
    let err = home.fails(&["rollout", "fixed"]);
    assert!(
        err.contains("cannot be rolled out")
            && err.contains("/workspace/app holds unfinished work (1 changed files)")
            && err.contains("switch it from worktree to clone"),
        "{err}"
    );
    home.assert_unchanged(&snapshot, "a refused rollout");
    assert_eq!(container_id(&home, "fixed"), id);

    // Once the work is finished elsewhere, the clean worktree is retired
    // and a clone made in its place.
    std::fs::remove_file(checkout.join("wip.txt")).unwrap();
    let out = home.ok(&["rollout", "fixed"]);
    assert!(out.contains("instance/fixed rolled out"), "{out}");
    let mounts = &home.object("fixed")["status"]["mounts"];
    assert_eq!(mounts[0]["isolation"], "clone", "{mounts}");
    assert!(!checkout.exists(), "the worktree is gone");
    let worktrees = git(&host, &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    let clone = home.checkout("fixed");
    std::fs::write(clone.join("wip.txt"), "unsaved\n").unwrap();
    let id = container_id(&home, "fixed");

    // Another engine: only with --move.
    home.apply(
        "f.yaml",
        &yaml("clone", "  engine: unix:///nonexistent/docker.sock\n"),
    );
    let snapshot = home.snapshot();
    let err = home.fails(&["rollout", "fixed"]);
    assert!(
        err.contains("spec.engine changed") && err.contains("--move"),
        "{err}"
    );
    home.assert_unchanged(&snapshot, "a rollout to another engine without --move");
    assert_eq!(container_id(&home, "fixed"), id);
    assert_eq!(
        std::fs::read_to_string(clone.join("wip.txt")).unwrap(),
        "unsaved\n"
    );
}

/// The rollout refusals recorded in `name`'s events.
fn refusals(home: &Home, name: &str) -> usize {
    let events = home.unit(name).join(".jackin/events.jsonl");
    std::fs::read_to_string(events)
        .unwrap_or_default()
        .lines()
        .filter(|line| line.contains("\"RolloutRefused\""))
        .count()
}

/// L2: under `OnDrift`, after a rollout asked by hand, a change that must
/// be refused (the worktree holds work) is refused once, and neither the
/// drift nor the operator's earlier request is handled again: the apply
/// converges, and a later pass refuses nothing more.
#[test]
fn an_on_drift_refusal_after_a_rollout_by_hand_is_made_once() {
    ensure_busybox();
    let home = Home::new();
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let yaml = |isolation: &str| {
        format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: drifty}}\nspec:\n  \
             role: {{name: tester}}\n  agent: shell\n  image: {}\n  command: [sleep, \"3600\"]\n  \
             updatePolicy: OnDrift\n  mounts: [{{src: {}, dst: /workspace/app, isolation: \
             {isolation}}}]\n",
            busybox_image(),
            host.display()
        )
    };
    home.apply("d.yaml", &yaml("worktree"));
    let out = home.ok(&["rollout", "drifty"]);
    assert!(out.contains("instance/drifty rolled out"), "{out}");
    std::fs::write(home.checkout("drifty").join("wip.txt"), "unsaved\n").unwrap();
    let id = container_id(&home, "drifty");

    home.apply("d.yaml", &yaml("clone"));
    let rollout = home.object("drifty")["status"]["rollout"].clone();
    assert!(
        rollout["requested"]
            .as_str()
            .is_some_and(|r| r.starts_with("drift-")),
        "{rollout}"
    );
    assert!(
        rollout["refused"]
            .as_str()
            .is_some_and(|why| why.contains("holds unfinished work")),
        "{rollout}"
    );
    assert_eq!(refusals(&home, "drifty"), 1);
    // Another pass over it: nothing new is asked, nothing is handled.
    home.apply("d.yaml", &yaml("clone"));
    assert_eq!(refusals(&home, "drifty"), 1);
    assert_eq!(home.object("drifty")["status"]["rollout"], rollout);
    assert_eq!(container_id(&home, "drifty"), id);
}

/// A policy repository: a git work tree that `controller --sync` follows.
struct PolicyRepo {
    dir: tempfile::TempDir,
}

impl PolicyRepo {
    fn new() -> Self {
        let repo = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        git(repo.path(), &["init", "--quiet", "--initial-branch=main"]);
        git(repo.path(), &["config", "user.email", "t@jackin.dev"]);
        git(repo.path(), &["config", "user.name", "t"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn commit_file(&self, rel: &str, text: &str) {
        let file = self.path().join(rel);
        std::fs::create_dir_all(file.parent().unwrap()).unwrap();
        std::fs::write(&file, text).unwrap();
        git(self.path(), &["add", "."]);
        git(self.path(), &["commit", "--quiet", "-m", rel]);
    }
}

fn quiet_instance(name: &str, mode: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec:\n  \
         workspace: fleet\n  role: {{name: tester}}\n  agent: shell\n  image: {}\n  command: \
         [sleep, \"3600\"]\n  env: [{{name: MODE, value: {mode}}}]\n",
        busybox_image()
    )
}

fn mode_of(home: &Home, name: &str) -> String {
    docker(&[
        "inspect",
        "-f",
        "{{json .Config.Env}}",
        &home.container(name),
    ])
}

#[test]
fn on_drift_rolls_out_an_idle_unattached_session_and_waits_for_an_attached_one() {
    ensure_busybox();
    let home = Home::new();
    let repo = PolicyRepo::new();
    repo.commit_file(
        "workspaces/fleet.yaml",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: fleet}\nspec:\n  \
         updatePolicy: OnDrift\n",
    );
    repo.commit_file("instances/idle.yaml", &quiet_instance("idle", "one"));
    repo.commit_file("instances/watched.yaml", &quiet_instance("watched", "one"));
    let sync = repo.path().to_str().unwrap().to_owned();
    let controller = Controller::start(&home, &["--sync", &sync, "--resync", "2s"]);
    let running = |name: &str| {
        home.jackin(&["get", name, "-o", "json"]).status.success()
            && home.object(name)["status"]["phase"] == "Running"
    };
    eventually(Duration::from_secs(90), "both run", || {
        running("idle") && running("watched")
    });
    let idle_before = container_id(&home, "idle");
    let watched_before = container_id(&home, "watched");
    // An operator attached to `watched`: its attached lock is held.
    let sockets = home.path().join("sockets").join(home.container("watched"));
    std::fs::create_dir_all(&sockets).unwrap();
    let attached = std::fs::File::create(sockets.join("attached.lock")).unwrap();
    attached.lock().unwrap();

    repo.commit_file("instances/idle.yaml", &quiet_instance("idle", "two"));
    repo.commit_file("instances/watched.yaml", &quiet_instance("watched", "two"));
    eventually(Duration::from_secs(120), "idle is rolled out", || {
        running("idle") && mode_of(&home, "idle").contains("MODE=two")
    });
    assert_ne!(container_id(&home, "idle"), idle_before);
    let obj = home.object("idle");
    assert!(
        obj["status"]["rollout"]["requested"]
            .as_str()
            .is_some_and(|r| r.starts_with("drift-")),
        "{obj}"
    );
    assert!(condition(&obj, "SpecDrift").is_none(), "{obj}");
    // The attached one waits, and says so.
    eventually(Duration::from_secs(60), "watched says it waits", || {
        condition(&home.object("watched"), "SpecDrift")
            .is_some_and(|c| c["reason"] == "RolloutWaiting")
    });
    assert_eq!(container_id(&home, "watched"), watched_before);
    assert!(mode_of(&home, "watched").contains("MODE=one"));

    // Detached: it rolls out at a following pass.
    drop(attached);
    eventually(Duration::from_secs(120), "watched is rolled out", || {
        running("watched") && mode_of(&home, "watched").contains("MODE=two")
    });
    assert_ne!(container_id(&home, "watched"), watched_before);
    drop(controller);
}
