//! Isolated mounts end to end: real git repositories, the real engine.

use std::path::{Path, PathBuf};

use support::terminal::Terminal;
use support::{
    Home, applied_workspace, condition, docker, ensure_busybox, git, instance_yaml_with, work_in,
};

/// A host repository (cloned from a bare origin) with one pushed commit on
/// `main`, plus an unpushed branch of the operator's own.
struct HostRepo {
    dir: tempfile::TempDir,
}

impl HostRepo {
    fn new() -> Self {
        let repo = Self {
            dir: tempfile::tempdir().unwrap(),
        };
        let origin = repo.dir.path().join("origin.git");
        git(
            repo.dir.path(),
            &[
                "init",
                "--quiet",
                "--bare",
                "--initial-branch=main",
                origin.to_str().unwrap(),
            ],
        );
        git(
            repo.dir.path(),
            &["clone", "--quiet", origin.to_str().unwrap(), "host"],
        );
        let host = repo.path();
        git(&host, &["config", "user.email", "t@jackin.dev"]);
        git(&host, &["config", "user.name", "t"]);
        git(&host, &["checkout", "--quiet", "-b", "main"]);
        std::fs::write(host.join("README"), "host\n").unwrap();
        git(&host, &["add", "."]);
        git(&host, &["commit", "--quiet", "-m", "base"]);
        git(&host, &["push", "--quiet", "-u", "origin", "main"]);
        git(&host, &["branch", "operators-own"]);
        repo
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("host")
    }

    /// Everything of the host repository the agent must never change.
    fn state(&self) -> (String, String, String) {
        let host = self.path();
        (
            git(
                &host,
                &[
                    "for-each-ref",
                    "--format=%(refname) %(objectname)",
                    "refs/heads/",
                ],
            ),
            git(&host, &["status", "--porcelain"]),
            std::fs::read_to_string(host.join("README")).unwrap(),
        )
    }
}

fn instance_with_mount(name: &str, src: &Path, isolation: &str) -> String {
    instance_yaml_with(
        name,
        &format!(
            "  command: [sleep, \"3600\"]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: {isolation}}}]\n",
            src.display()
        ),
    )
}

#[test]
fn a_dirty_worktree_blocks_the_purge_until_acknowledged_then_only_jackins_parts_go() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let before = host.state();
    let config_before = std::fs::read_to_string(host.path().join(".git/config")).unwrap();
    home.apply("wt", &instance_with_mount("wt", &host.path(), "worktree"));
    let container = home.container("wt");
    let checkout = home.checkout("wt");
    assert!(
        checkout.starts_with(
            home.path()
                .join("data")
                .join(&container)
                .join("git/worktree")
        )
    );
    // The agent sees the checkout, and works in it.
    assert_eq!(
        docker(&["exec", &container, "cat", "/workspace/app/README"]),
        "host"
    );
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "echo idea > /workspace/app/notes.md",
    ]);
    // The host's config is the operator's: jackin changes nothing in it
    // (it no longer enables `extensions.worktreeConfig`, which made a file
    // in the agent-writable entry config for the operator's git).
    assert_eq!(
        std::fs::read_to_string(host.path().join(".git/config")).unwrap(),
        config_before
    );

    // Not acknowledged: the purge shows the evidence and deletes nothing.
    let out = home.jackin(&["delete", "wt"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("?? notes.md"), "{stderr}");
    assert!(stderr.contains("the purge is blocked"), "{stderr}");
    let obj = home.object("wt");
    assert_eq!(condition(&obj, "PurgeBlocked").unwrap()["status"], "True");
    assert_eq!(
        obj["status"]["mounts"][0]["dirtyFiles"],
        serde_json::json!(["?? notes.md"])
    );
    assert!(checkout.join("notes.md").exists());
    let describe = home.ok(&["describe", "wt"]);
    assert!(
        describe.contains("uncommitted   1 file") && describe.contains("?? notes.md"),
        "{describe}"
    );

    // Acknowledged, then edited again: the digest no longer matches, the
    // gate closes again.
    home.ok(&["set-phase", "wt", "purged", "--force", "--no-wait"]);
    let acknowledged =
        home.object("wt")["metadata"]["annotations"]["jackin.dev/acknowledge-discard"].clone();
    assert!(acknowledged.is_string());
    std::fs::write(checkout.join("second.md"), "more").unwrap();
    // A blocked purge has not converged: the pass says so.
    let err = home.fails(&["controller", "--once"]);
    assert!(err.contains("the purge is blocked"), "{err}");
    let obj = home.object("wt");
    assert_eq!(condition(&obj, "PurgeBlocked").unwrap()["status"], "True");
    assert!(checkout.join("second.md").exists(), "nothing was deleted");

    // Acknowledged for what is there now: everything of jackin's goes,
    // nothing of the host's.
    let out = home.ok(&["delete", "wt", "--force"]);
    assert!(out.ends_with("instance/wt purged\n"), "{out}");
    assert!(!checkout.exists());
    let worktrees = git(&host.path(), &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
    let branches = git(&host.path(), &["branch", "--list", "jackin/*"]);
    assert_eq!(branches, "", "the scratch branch is deleted");
    assert_eq!(host.state(), before, "the host repository changed");
}

#[test]
fn a_clean_worktree_purges_without_a_question() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let before = host.state();
    home.apply(
        "tidy",
        &instance_with_mount("tidy", &host.path(), "worktree"),
    );
    let checkout = home.checkout("tidy");
    let out = home.ok(&["delete", "tidy"]);
    assert!(out.ends_with("instance/tidy purged\n"), "{out}");
    assert!(!checkout.exists());
    assert_eq!(host.state(), before);
}

#[test]
fn a_clone_whose_base_left_the_host_is_neither_reused_nor_deleted() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    home.apply("cl", &instance_with_mount("cl", &host.path(), "clone"));
    let container = home.container("cl");
    let checkout = home.checkout("cl");
    assert!(checkout.starts_with(home.path().join("data").join(&container).join("git/clone")));
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "echo wip > /workspace/app/wip.txt",
    ]);
    home.ok(&["set-phase", "cl", "kept"]);

    // The host's history is rewritten and the old commits are gone.
    let h = host.path();
    git(&h, &["checkout", "--quiet", "--orphan", "rewritten"]);
    git(&h, &["commit", "--quiet", "-m", "rewritten"]);
    git(&h, &["branch", "-D", "main", "operators-own"]);
    git(&h, &["branch", "-m", "main"]);
    git(&h, &["remote", "remove", "origin"]);
    git(&h, &["reflog", "expire", "--expire=now", "--all"]);
    git(&h, &["gc", "--quiet", "--prune=now"]);

    let stderr = home.fails(&["set-phase", "cl", "running"]);
    assert!(
        stderr.contains("no longer contains the checkout's base commit"),
        "{stderr}"
    );
    let obj = home.object("cl");
    let ready = condition(&obj, "Ready").unwrap();
    assert_eq!(ready["reason"], "ResumeConflict");
    assert!(
        checkout.join("wip.txt").exists(),
        "the checkout was touched"
    );
    assert!(docker(&["ps", "-aq", "--filter", &format!("name=^{container}$")]).is_empty());

    // Discarding it, acknowledged, removes the clone and nothing else.
    let before = host.state();
    let out = home.ok(&["delete", "cl", "--force"]);
    assert!(out.ends_with("instance/cl purged\n"), "{out}");
    assert!(!checkout.exists());
    assert_eq!(host.state(), before);
}

#[test]
fn a_shared_mount_is_never_assessed_or_touched() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    // The host repository is dirty and has unpushed work of its own.
    std::fs::write(host.path().join("scratch.txt"), "mine").unwrap();
    git(&host.path(), &["checkout", "--quiet", "-b", "local-only"]);
    home.apply("sh", &instance_with_mount("sh", &host.path(), "shared"));
    let container = home.container("sh");
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "echo from-agent > /workspace/app/agent.txt",
    ]);
    let obj = home.object("sh");
    assert!(
        obj["status"]["mounts"].is_null(),
        "a shared mount was assessed"
    );
    let before = host.state();
    let out = home.ok(&["delete", "sh"]);
    assert!(out.ends_with("instance/sh purged\n"), "{out}");
    assert_eq!(host.state(), before);
    assert_eq!(
        std::fs::read_to_string(host.path().join("agent.txt")).unwrap(),
        "from-agent\n"
    );
    assert!(host.path().join("scratch.txt").exists());
}

#[test]
fn the_keep_cap_spares_a_kept_instance_with_unfinished_work() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let ws = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: capped}\nspec: {keep: {max: 1}}\n";
    home.apply("ws", ws);
    for name in ["older", "newer"] {
        let yaml = instance_with_mount(name, &host.path(), "worktree")
            .replace("  agent: shell\n", "  agent: shell\n  workspace: capped\n");
        home.apply(name, &yaml);
    }
    std::fs::write(home.checkout("older").join("draft.md"), "unfinished").unwrap();
    home.ok(&["set-phase", "older", "kept"]);
    let out = home.ok(&["set-phase", "newer", "kept"]);
    assert!(
        out.contains("kept instance/older over workspace capped's keep.max"),
        "{out}"
    );
    assert_eq!(home.object("older")["status"]["phase"], "Kept");
    assert!(home.checkout("older").join("draft.md").exists());
}

#[test]
fn a_workspace_mount_is_isolated_too() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let ws = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: shop}}\nspec:\n  \
         mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
        host.path().display()
    );
    home.apply("ws", &ws);
    let yaml = instance_yaml_with("viaws", "  workspace: shop\n  command: [sleep, \"3600\"]\n");
    home.apply("viaws", &yaml);
    let container = home.container("viaws");
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "echo agent > /workspace/app/agent.txt",
    ]);
    assert!(
        !host.path().join("agent.txt").exists(),
        "the agent wrote into the host repository"
    );
    assert!(home.checkout("viaws").join("agent.txt").exists());
}

#[test]
fn a_failed_preparation_leaves_nothing_in_the_host_after_a_purge() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let before = host.state();
    let not_a_repo = tempfile::tempdir().unwrap();
    let yaml = instance_yaml_with(
        "halfway",
        &format!(
            "  command: [sleep, \"3600\"]\n  mounts:\n  - {{src: {}, dst: /workspace/app, isolation: worktree}}\n  \
             - {{src: {}, dst: /workspace/other, isolation: worktree}}\n",
            host.path().display(),
            not_a_repo.path().display()
        ),
    );
    let path = home.write_input("halfway.yaml", &yaml);
    let stderr = home.fails(&["apply", path.to_str().unwrap()]);
    assert!(stderr.contains("is not a git repository"), "{stderr}");
    let out = home.ok(&["delete", "halfway", "--force"]);
    assert!(out.ends_with("instance/halfway purged\n"), "{out}");
    assert_eq!(
        host.state(),
        before,
        "a scratch branch or worktree was left behind"
    );
    let worktrees = git(&host.path(), &["worktree", "list", "--porcelain"]);
    assert_eq!(worktrees.matches("worktree ").count(), 1, "{worktrees}");
}

/// Applies an instance with a worktree of `host` and commits the agent's
/// work in it; returns the unit, the checkout and the commit.
fn worktree_with_a_commit(home: &Home, host: &HostRepo, name: &str) -> (String, PathBuf, String) {
    home.apply(name, &instance_with_mount(name, &host.path(), "worktree"));
    let checkout = home.checkout(name);
    work_in(
        &checkout,
        "echo w > work && git add work && git commit --quiet -m agent-work",
    );
    let commit = git(&checkout, &["rev-parse", "HEAD"]);
    (home.container(name), checkout, commit)
}

/// Asserts that a purge without an acknowledgement is blocked and names
/// `evidence`, and that the status shows it too.
fn assert_purge_blocked(home: &Home, name: &str, evidence: &str) {
    // Refreshes the status; an earlier blocked purge makes the pass fail.
    home.jackin(&["controller", "--once"]);
    let out = home.jackin(&["delete", name]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{name}: {stderr}");
    assert!(stderr.contains("the purge is blocked"), "{name}: {stderr}");
    assert!(
        stderr.contains(evidence),
        "{name}: no {evidence:?} in {stderr}"
    );
    let describe = home.ok(&["describe", name]);
    assert!(describe.contains(evidence), "{describe}");
}

#[test]
fn the_gate_sees_stashes_ignored_files_and_tag_only_commits_in_a_clone() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    for (name, script, evidence) in [
        (
            "stashed",
            "echo edit >> README && git stash --quiet",
            "stash (1 entry)",
        ),
        (
            "ignored",
            "echo notes.txt >> .git/info/exclude && echo idea > notes.txt",
            "!! notes.txt",
        ),
        (
            "tagged",
            "git checkout --quiet --detach && echo t > t && git add t && \
             git commit --quiet -m t && git tag keep-me && git checkout --quiet main",
            "tag keep-me",
        ),
    ] {
        home.apply(name, &instance_with_mount(name, &host.path(), "clone"));
        let checkout = home.checkout(name);
        work_in(&checkout, script);
        assert_purge_blocked(&home, name, evidence);
        // `ask` with nobody attached keeps such a session; it never purges.
        assert!(checkout.exists());
    }
}

#[test]
fn a_missing_worktree_is_made_again_from_its_branch_and_its_commits_kept() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let (container, checkout, commit) = worktree_with_a_commit(&home, &host, "lost");
    home.ok(&["set-phase", "lost", "kept"]);
    std::fs::remove_dir_all(&checkout).unwrap();

    // While the directory is gone, the branch's commits are still evidence.
    assert_purge_blocked(&home, "lost", &format!("jackin/scratch/{container}"));

    home.ok(&["set-phase", "lost", "running"]);
    assert_eq!(git(&checkout, &["rev-parse", "HEAD"]), commit);
    let branch = format!("jackin/scratch/{container}");
    assert_eq!(git(&host.path(), &["rev-parse", &branch]), commit);
    assert_purge_blocked(&home, "lost", &branch);
}

#[test]
fn a_moved_home_keeps_its_scratch_branch_as_the_agents_work() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let (container, _, _) = worktree_with_a_commit(&home, &host, "moved");
    home.ok(&["set-phase", "moved", "kept"]);

    // The operator moves JACKIN_HOME; commands then run against the new one.
    let elsewhere = tempfile::tempdir().unwrap();
    let moved = elsewhere.path().join("home");
    std::fs::rename(home.path(), &moved).unwrap();
    let at_new_home = |args: &[&str]| {
        std::process::Command::new(env!("CARGO_BIN_EXE_jackin"))
            .env("JACKIN_HOME", &moved)
            .args(args)
            .output()
            .unwrap()
    };
    let resumed = at_new_home(&["set-phase", "moved", "running"]);
    let blocked = at_new_home(&["delete", "moved"]);
    // Put the home back first, so that its cleanup finds what it made.
    std::fs::rename(&moved, home.path()).unwrap();
    assert!(
        resumed.status.success(),
        "{}",
        String::from_utf8_lossy(&resumed.stderr)
    );
    let stderr = String::from_utf8_lossy(&blocked.stderr);
    assert_eq!(blocked.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(&format!("jackin/scratch/{container}")),
        "{stderr}"
    );
}

#[test]
fn purging_never_prunes_the_operators_worktrees_nor_deletes_a_branch_with_commits() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    // The operator's own worktree, on a disk that is not mounted right now.
    let theirs = host.dir.path().join("operators-worktree");
    git(
        &host.path(),
        &[
            "worktree",
            "add",
            "--quiet",
            theirs.to_str().unwrap(),
            "operators-own",
        ],
    );
    let unmounted = host.dir.path().join("unmounted");
    std::fs::rename(&theirs, &unmounted).unwrap();

    let (container, checkout, commit) = worktree_with_a_commit(&home, &host, "done");
    let out = home.ok(&["delete", "done", "--force"]);
    assert!(out.ends_with("instance/done purged\n"), "{out}");

    let worktrees = git(&host.path(), &["worktree", "list", "--porcelain"]);
    assert!(
        worktrees.contains(theirs.to_str().unwrap()),
        "the operator's worktree entry was pruned: {worktrees}"
    );
    assert!(
        !worktrees.contains(checkout.to_str().unwrap()),
        "{worktrees}"
    );
    let branch = format!("jackin/scratch/{container}");
    assert_eq!(
        git(&host.path(), &["rev-parse", &branch]),
        commit,
        "a branch with commits was deleted"
    );
}

/// The container sees a repository where the checkout's `.git` says, and
/// may write all of it (config, hooks, objects, refs), as in a clone of its
/// own: it is the unit's. Of the host repository it sees the objects, which
/// it can read and never change; its mount table binds nothing else of the
/// host's `.git`, so no file there is writable from the container.
#[test]
fn a_worktree_is_a_repository_of_its_own_and_nothing_of_the_hosts_git_is_writable() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    home.apply(
        "ingit",
        &instance_with_mount("ingit", &host.path(), "worktree"),
    );
    let container = home.container("ingit");
    let in_container = |script: &str| {
        std::process::Command::new("docker")
            .args(["exec", &container, "sh", "-c", script])
            .output()
            .unwrap()
    };
    let host_git = host.path().join(".git");
    let before = host_git_files(&host_git);
    let check = in_container(
        "set -e; dir=$(sed -n 's/^gitdir: //p' /workspace/app/.git); \
         test -f \"$dir/HEAD\"; test -d \"$dir/objects\"; test -f \"$dir/config\"; echo \"$dir\"",
    );
    assert!(
        check.status.success(),
        "{}",
        String::from_utf8_lossy(&check.stderr)
    );
    let repo = String::from_utf8_lossy(&check.stdout).trim().to_owned();
    let checkout = home.checkout("ingit");
    let on_host = home
        .unit("ingit")
        .join("git/repo")
        .join(checkout.file_name().unwrap());
    assert_eq!(
        Path::new(&repo),
        on_host,
        "the repository is where the host has it"
    );
    // The agent writes its config (as aider does at every start, with a
    // lock file beside it), hooks, objects and refs: in the unit.
    let writes = in_container(&format!(
        "set -e; cd {repo}; echo '[user]' > config.lock; cat config >> config.lock; \
         mv config.lock config; mkdir -p hooks; echo 'touch /tmp/x' > hooks/post-checkout; \
         mkdir -p objects/ab; echo x > objects/ab/probe; echo x > description; \
         mkdir -p refs/heads/side; cp refs/heads/jackin/scratch/* refs/heads/side/"
    ));
    assert!(
        writes.status.success(),
        "{}",
        String::from_utf8_lossy(&writes.stderr)
    );
    assert_eq!(host_git_files(&host_git), before, "the host's .git changed");
    // The host's objects are there to read, and nothing more.
    let alternates = in_container(&format!("cat {repo}/objects/info/alternates"));
    let host_objects = String::from_utf8_lossy(&alternates.stdout)
        .trim()
        .to_owned();
    assert_eq!(host_objects, format!("{repo}.host-objects"));
    let head = git(&host.path(), &["rev-parse", "HEAD"]);
    let object = format!("{host_objects}/{}/{}", &head[..2], &head[2..]);
    assert!(
        in_container(&format!("test -f {object}")).status.success(),
        "{object}"
    );
    for attempt in [
        format!("rm -f {object}"),
        format!("touch {host_objects}/probe"),
    ] {
        let out = in_container(&attempt);
        assert!(!out.status.success(), "the agent could: {attempt}");
    }
    assert_eq!(host_git_files(&host_git), before, "the host's .git changed");

    // From the container's mount table: no writable bind holds a file of
    // the host's `.git`, and the one bind of it is read-only.
    let mounts: serde_json::Value =
        serde_json::from_str(&docker(&["inspect", "-f", "{{json .Mounts}}", &container])).unwrap();
    let mounts = mounts.as_array().unwrap();
    let writable: Vec<PathBuf> = mounts
        .iter()
        .filter(|m| m["RW"] == true)
        .map(|m| PathBuf::from(m["Source"].as_str().unwrap()))
        .collect();
    let exposed = before
        .keys()
        .filter(|file| writable.iter().any(|source| file.starts_with(source)))
        .count();
    assert_eq!(
        exposed, 0,
        "files of the host's .git writable: {writable:?}"
    );
    let of_host: Vec<&serde_json::Value> = mounts
        .iter()
        .filter(|m| Path::new(m["Source"].as_str().unwrap()).starts_with(&host_git))
        .collect();
    assert_eq!(of_host.len(), 1, "{of_host:?}");
    assert_eq!(of_host[0]["RW"], false, "{of_host:?}");
    assert!(
        before.len() > 10,
        "the count saw the host's files: {}",
        before.len()
    );
}

/// Every file under a host repository's `.git`, with its bytes.
fn host_git_files(git_dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut files = std::collections::BTreeMap::new();
    let mut dirs = vec![git_dir.to_owned()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                dirs.push(path);
            } else {
                let bytes = std::fs::read(&path).unwrap_or_default();
                files.insert(path, bytes);
            }
        }
    }
    files
}

#[test]
fn a_dry_run_purge_shows_the_checkout_removal_and_the_block() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    home.apply("dry", &instance_with_mount("dry", &host.path(), "clone"));
    let checkout = home.checkout("dry");
    std::fs::write(checkout.join("draft.md"), "unfinished").unwrap();
    let container = home.container("dry");
    let before = home.snapshot();

    let out = home.ok(&["delete", "dry", "--dry-run"]);
    assert!(
        out.contains(&format!(
            "instance/dry ({container}) to Purged would (dry run):"
        )),
        "{out}"
    );
    for step in [
        "marking the instance Purging",
        "removing the container",
        "removing the isolated checkouts",
        "removing the unit directory, sockets and lock, then the index row",
    ] {
        assert!(
            out.lines()
                .any(|line| line.starts_with(&format!("  - {step}"))),
            "no {step:?} in:\n{out}"
        );
    }
    assert!(out.contains("blocked: unfinished work (digest "), "{out}");
    // The step names the observed container by its id.
    let id = docker(&["inspect", "-f", "{{.Id}}", &container]);
    assert!(
        out.contains(&format!("  - removing the container {}\n", &id[..12])),
        "{out}"
    );
    let forced = home.ok(&["delete", "dry", "--dry-run", "--force"]);
    assert!(forced.contains("--force acknowledges"), "{forced}");
    assert!(!forced.contains("blocked:"), "{forced}");

    home.assert_unchanged(&before, "a dry run");
    assert!(checkout.join("draft.md").exists());
    assert_eq!(home.object("dry")["spec"]["phase"], "Running");
}

/// Real git in the container (the real-aider image's), in both checkout
/// kinds: the ordinary commands an agent runs work, repository config
/// writes included (defect A9), and so do branches, tags, the stash and gc.
/// In a worktree they land in the unit's repository, the commit reaches the
/// host's scratch branch checked, and the host's config and other branches
/// stay the operator's.
#[test]
fn real_git_works_in_both_checkout_kinds_and_the_host_stays_the_operators() {
    let image = support::real_agent_image();
    let home = Home::new();
    let host = HostRepo::new();
    let config_before = std::fs::read(host.path().join(".git/config")).unwrap();
    let mounts = format!(
        "  image: {image}\n  command: [sleep, \"3600\"]\n  mounts:\n  \
         - {{src: {src}, dst: /workspace/wt, isolation: worktree}}\n  \
         - {{src: {src}, dst: /workspace/cl, isolation: clone}}\n",
        src = host.path().display()
    );
    let yaml = support::instance_yaml("real")
        .replace(&format!("  image: {}\n", support::busybox_image()), "")
        .replace("  agent: shell\n", &format!("  agent: shell\n{mounts}"));
    home.apply("real", &yaml);
    let container = home.container("real");
    let git_in = |dir: &str, script: &str| {
        let out = std::process::Command::new("docker")
            .args(["exec", "-w", dir, "-e", "HOME=/tmp", &container, "sh", "-c"])
            .arg(format!(
                "git config --global --add safe.directory '*' && {script}"
            ))
            .output()
            .unwrap();
        (
            out.status.success(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let work = "git config user.name agent && git config user.email agent@jackin.dev && \
                echo work > agent.txt && git add agent.txt && git commit -q -m 'agent work' && \
                git rev-parse HEAD";
    for dir in ["/workspace/wt", "/workspace/cl"] {
        let (ok, out) = git_in(dir, work);
        assert!(ok, "{dir}: {out}");
    }
    let (_, tip) = git_in("/workspace/wt", "git rev-parse HEAD");
    // Both have all of git: branches, tags, the stash, gc.
    for dir in ["/workspace/cl", "/workspace/wt"] {
        let (ok, out) = git_in(
            dir,
            "git branch side && git tag t1 && echo more > more.txt && git stash -u -q && \
             git stash list && git gc --quiet && git stash pop -q && rm more.txt",
        );
        assert!(ok && out.contains("stash@{0}"), "{dir}: {out}");
    }

    // The stop publishes the worktree's commit into the host.
    home.ok(&["set-phase", "real", "kept"]);
    let branch = format!("jackin/scratch/{container}");
    assert_eq!(git(&host.path(), &["rev-parse", &branch]), tip.trim());
    git(&host.path(), &["fsck", "--no-dangling"]);
    assert_eq!(
        std::fs::read(host.path().join(".git/config")).unwrap(),
        config_before,
        "the agent's config reached the host repository"
    );
    assert!(
        git(&host.path(), &["branch", "--list", "side"]).is_empty(),
        "no branch of the agent's reaches the host"
    );
    assert!(
        git(&host.path(), &["tag", "--list", "t1"]).is_empty(),
        "no tag of the agent's reaches the host"
    );
    home.ok(&["delete", "real", "--force"]);
    assert_eq!(git(&host.path(), &["rev-parse", &branch]), tip.trim());
}

/// SA2: Screens C and D ask the resume's own check of the host repository.
/// Unchanged, Screen D says it is safe to reuse. Made anew (the same path,
/// a new `git init` with other history), Screen C lists the session as the
/// conflict it is (it said "1 branch unpushed"), and Screen D states it,
/// says the resume would fail, and offers no Enter to resume (it said
/// "nothing of it is lost", and Enter failed with ResumeConflict): back on
/// Screen C, a new session starts, and the diverged one is left as it was.
#[test]
fn screens_c_and_d_state_a_diverged_host_repository_and_offer_no_resume_that_fails() {
    ensure_busybox();
    let home = Home::new();
    applied_workspace(&home, "desk");
    let scratch = tempfile::tempdir().unwrap();
    let host = support::host_repo(scratch.path());
    let spec = format!(
        "  workspace: desk\n  command: [sh, -c, 'read line; exit 0']\n  mounts: [{{src: {}, dst: \
         /workspace/app, isolation: worktree}}]\n",
        host.display()
    );
    home.apply("kept", &instance_yaml_with("kept", &spec));
    let checkout = home.checkout("kept");
    std::fs::write(checkout.join("wip.txt"), "unsaved\n").unwrap();
    home.ok(&["set-phase", "kept", "kept"]);

    let unchanged = Terminal::start(&home, "attach kept");
    unchanged.wait_for("Press Enter to resume", 1);
    assert!(
        unchanged.screen().contains("safe to reuse"),
        "{}",
        unchanged.screen()
    );
    unchanged.type_line("b");
    unchanged.wait_for("not resumed", 1);

    // The host repository made anew, with a history of its own.
    std::fs::remove_dir_all(&host).unwrap();
    std::fs::create_dir(&host).unwrap();
    git(&host, &["init", "--quiet", "--initial-branch=main"]);
    git(&host, &["config", "user.email", "t@jackin.dev"]);
    git(&host, &["config", "user.name", "t"]);
    std::fs::write(host.join("OTHER"), "another project\n").unwrap();
    git(&host, &["add", "."]);
    git(&host, &["commit", "--quiet", "-m", "anew"]);

    let term = Terminal::start(&home, "launch -w desk -r tester -a shell");
    term.wait_for("Choice [1]:", 1);
    let screen = term.screen();
    assert!(
        screen.contains("2) Resume kept") && screen.contains("conflict: host repo diverged"),
        "{screen}"
    );
    assert!(!screen.contains("unpushed"), "{screen}");
    term.type_line("2");
    term.wait_for("Type b and Enter to go back", 1);
    let screen = term.screen();
    for said in [
        "jackin' · resume kept",
        "Conflict at /workspace/app: the host repo diverged",
        "no longer holds its base commit",
        "Resuming would fail (ResumeConflict)",
        "start a new session",
    ] {
        assert!(screen.contains(said), "{said:?} in:\n{screen}");
    }
    for unsaid in [
        "Press Enter to resume",
        "nothing of it is lost",
        "safe to reuse",
        "unpushed",
    ] {
        assert!(!screen.contains(unsaid), "{unsaid:?} in:\n{screen}");
    }
    // Enter resumes nothing; back on Screen C, a new session starts.
    term.type_line("");
    term.wait_for("resuming would fail: type b to go back", 1);
    term.type_line("b");
    term.wait_for("Choice [1]:", 2);
    term.type_line("1");
    term.wait_for("Ctrl-P Ctrl-Q detaches", 1);
    let obj = home.object("kept");
    assert_eq!(obj["status"]["phase"], "Kept", "{obj}");
    assert!(
        condition(&obj, "Ready").is_none_or(|c| c["reason"] != "ResumeConflict"),
        "{obj}"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("wip.txt")).unwrap(),
        "unsaved\n"
    );
}
