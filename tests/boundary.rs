//! The repository boundary: a worktree checkout is a repository of the
//! unit's own, and the operator's repository never holds a file the agent
//! wrote. Each attack of `../shared/defects/2026-11-27-b.md` (C1, C3, M1,
//! M3, M4) played by real git in the container (the real-aider image's
//! Debian git), with the operator's git run on the host; then a benign
//! agent's ordinary day beside the operator's maintenance.

use std::path::{Path, PathBuf};
use std::process::Output;

use support::{Home, docker, git, host_repo};

/// One session with a worktree of `host` at `/w/wt`, its agent's git real.
struct Session<'a> {
    home: &'a Home,
    name: String,
    container: String,
}

impl<'a> Session<'a> {
    fn start(home: &'a Home, name: &str, host: &Path) -> Self {
        let image = support::real_agent_image();
        let lines = format!(
            "  image: {image}\n  command: [sleep, \"3600\"]\n  mounts:\n  \
             - {{src: {}, dst: /w/wt, isolation: worktree}}\n",
            host.display()
        );
        let yaml = support::instance_yaml(name)
            .replace(&format!("  image: {}\n", support::busybox_image()), "")
            .replace("  agent: shell\n", &format!("  agent: shell\n{lines}"));
        home.apply(name, &yaml);
        Self {
            home,
            name: name.to_owned(),
            container: home.container(name),
        }
    }

    /// Runs `script` as the agent does, in the checkout, with git set up.
    fn agent(&self, script: &str) -> Output {
        std::process::Command::new("docker")
            .args(["exec", "-w", "/w/wt", "-e", "HOME=/tmp", &self.container])
            .args(["sh", "-c"])
            .arg(format!(
                "git config --global --add safe.directory '*' && \
                 git config --global user.email agent@jackin.dev && \
                 git config --global user.name agent && {script}"
            ))
            .output()
            .unwrap()
    }

    fn agent_ok(&self, script: &str) -> String {
        let out = self.agent(script);
        assert!(
            out.status.success(),
            "{script}: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// Where the agent's git directory is on the host: what an attacker
    /// reads off its mount table.
    fn writable_git_dir_on_host(&self) -> PathBuf {
        let git = self.home.unit(&self.name).join("git");
        let checkout = self.home.checkout(&self.name);
        let name = checkout.file_name().unwrap();
        ["view", "repo"]
            .iter()
            .map(|kind| git.join(kind).join(name))
            .find(|dir| dir.is_dir())
            .expect("the unit has a git directory for the container")
    }
}

/// The operator's everyday git in their repository: every command exits 0,
/// and none runs the program the agent planted (`canary` stays absent).
fn assert_operators_git_clean(host: &Path, canary: &Path, what: &str) {
    // `repair` before `prune`: prune would drop an entry whose `gitdir`
    // names a directory without a `.git`, which repair writes one into.
    for args in [
        &["status"][..],
        &["worktree", "list"],
        &["worktree", "repair"],
        &["branch"],
        &["gc", "--quiet"],
        &["fsck", "--strict"],
        &["worktree", "prune"],
        &["rev-list", "--all", "--count"],
    ] {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(host)
            .args(args)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success()
                && !stderr.contains("error")
                && !stderr.contains("fatal")
                && !stderr.contains("broken"),
            "{what}: git {args:?} in the operator's repository: {stderr}"
        );
    }
    assert!(
        !canary.exists(),
        "{what}: the agent's program ran on the host"
    );
}

/// A fresh home, a host repository, and a canary path for planted programs.
fn setup() -> (Home, tempfile::TempDir, PathBuf, PathBuf) {
    support::ensure_busybox();
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    let host = host_repo(dir.path());
    let canary = dir.path().join("canary");
    (home, dir, host, canary)
}

/// The agent plants a program in the config git reads for its repository,
/// then points its git directory's `commondir` at that config and its
/// `gitdir` at a host directory: with a `git worktree` entry in the host,
/// the operator's `worktree repair` wrote a `.git` there, and `git status`
/// in it ran the agent's program on the host (C1). The operator's git now
/// holds no such entry, repairs nothing and runs nothing.
#[test]
fn c1_the_operators_worktree_repair_plants_nothing_the_agent_chose() {
    let (home, dir, host, canary) = setup();
    let session = Session::start(&home, "c1", &host);
    let target = dir.path().join("any-host-dir");
    std::fs::create_dir(&target).unwrap();
    let writable = session.writable_git_dir_on_host();
    session.agent_ok(&format!(
        "G=$(git rev-parse --absolute-git-dir) && C=$(git rev-parse --git-common-dir) && \
         printf '[core]\\n\\tfsmonitor = \"touch {canary}; false\"\\n' >> \"$C/config\" && \
         echo {writable} > \"$G/commondir\" && echo {target}/.git > \"$G/gitdir\"",
        canary = canary.display(),
        writable = writable.display(),
        target = target.display()
    ));
    assert_operators_git_clean(&host, &canary, "C1");
    assert!(
        !target.join(".git").exists(),
        "the operator's git wrote a .git the agent chose"
    );
    let status = std::process::Command::new("git")
        .arg("-C")
        .arg(&target)
        .arg("status")
        .output()
        .unwrap();
    assert!(!status.status.success(), "{status:?}");
    assert!(!canary.exists(), "C1: the agent's program ran on the host");
    home.ok(&["set-phase", "c1", "kept"]);
    assert_operators_git_clean(&host, &canary, "C1, kept");
}

/// The agent corrupts what git keeps for its checkout (`gitdir`,
/// `commondir`, a truncated index, a `HEAD` naming no object), then the
/// instance is purged: an entry in the host repository was left behind and
/// broke `branch`, `gc`, `fsck` and `worktree` there for good (C3).
#[test]
fn c3_a_purge_leaves_the_operators_repository_as_it_was() {
    let (home, dir, host, canary) = setup();
    let other = dir.path().join("other-repo");
    std::fs::create_dir(&other).unwrap();
    let session = Session::start(&home, "c3", &host);
    let writable = session.writable_git_dir_on_host();
    session.agent_ok(&format!(
        "G=$(git rev-parse --absolute-git-dir) && \
         echo 0123456789012345678901234567890123456789 > \"$G/HEAD\" && \
         head -c 20 /dev/zero > \"$G/index\" && echo {other}/.git > \"$G/gitdir\" && \
         echo {writable} > \"$G/commondir\"",
        other = other.display(),
        writable = writable.display()
    ));
    assert_operators_git_clean(&host, &canary, "C3, running");
    let out = home.jackin(&["delete", "c3", "--force"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_operators_git_clean(&host, &canary, "C3, purged");
    // The unit's pin went with it; a save of its work pins the base again
    // for as long as the save exists.
    let refs = git(&host, &["for-each-ref", "--format=%(refname)"]);
    assert!(
        !refs.contains("refs/jackin/base/"),
        "the pin outlived the unit: {refs}"
    );
}

/// One agent's `HEAD` naming no object made every `rev-list --all` in the
/// host repository fail, so the purge of another, clean session of the same
/// repository failed even with `--force` (M1).
#[test]
fn m1_one_agents_broken_repository_never_blocks_anothers_purge() {
    let (home, _dir, host, canary) = setup();
    let broken = Session::start(&home, "m1-a", &host);
    let _clean = Session::start(&home, "m1-b", &host);
    broken.agent_ok(
        "echo 0123456789012345678901234567890123456789 > \"$(git rev-parse --absolute-git-dir)/HEAD\"",
    );
    let out = home.jackin(&["delete", "m1-b", "--force", "--timeout", "120s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!home.ok(&["get"]).contains("m1-b"), "m1-b was not purged");
    assert_operators_git_clean(&host, &canary, "M1");
    let out = home.jackin(&["delete", "m1-a", "--force", "--timeout", "120s"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An ordinary `git add` and `commit --amend` in the checkout put index and
/// reflog entries in the host repository and blobs elsewhere, so the
/// operator's `git gc` and `fsck` failed (M3). They never do now.
#[test]
fn m3_a_benign_agent_never_breaks_the_operators_gc() {
    let (home, _dir, host, canary) = setup();
    let session = Session::start(&home, "m3", &host);
    session.agent_ok("echo new > f.txt && git add f.txt");
    assert_operators_git_clean(&host, &canary, "M3, staged");
    session
        .agent_ok("git commit -q -m one && echo more >> f.txt && git commit -q -a --amend -m two");
    // A stop publishes.
    home.ok(&["set-phase", "m3", "kept"]);
    assert_operators_git_clean(&host, &canary, "M3, amended and published");
}

/// The operator's `gc --prune=now` and `pack-refs --all` took away the
/// scratch refs bound into the container, and the agent's next commit
/// failed on a read-only file system (M4). The agent keeps committing.
#[test]
fn m4_the_operators_maintenance_never_breaks_the_agent() {
    let (home, _dir, host, canary) = setup();
    let session = Session::start(&home, "m4", &host);
    session.agent_ok("echo a > a.txt && git add a.txt && git commit -q -m a");
    // A stop publishes; the start after it too.
    home.ok(&["set-phase", "m4", "kept"]);
    for args in [
        &["gc", "--prune=now", "--quiet"][..],
        &["pack-refs", "--all"],
    ] {
        git(&host, args);
    }
    home.ok(&["set-phase", "m4", "running"]);
    let tip = session
        .agent_ok("echo b > b.txt && git add b.txt && git commit -q -m b && git rev-parse HEAD");
    home.ok(&["set-phase", "m4", "kept"]);
    let branch = format!("jackin/scratch/{}", session.container);
    assert_eq!(git(&host, &["rev-parse", &branch]), tip);
    assert_operators_git_clean(&host, &canary, "M4");
}

/// A benign agent's day, bounded at 20 rounds: commit, amend, rebase,
/// stash, branch, tag and `gc` in the container; beside it the operator's
/// maintenance. The operator's commands always exit 0, and after each
/// publication the agent's work is the host's scratch branch.
#[test]
fn a_benign_agents_day_beside_the_operators_maintenance() {
    let (home, _dir, host, canary) = setup();
    let session = Session::start(&home, "day", &host);
    let branch = format!("jackin/scratch/{}", session.container);
    for round in 0..20 {
        let tip = session.agent_ok(&format!(
            "echo {round} > r{round}.txt && git add r{round}.txt && git commit -q -m r{round} && \
             echo amended >> r{round}.txt && git commit -q -a --amend -m r{round}-amended && \
             git rebase -q --force-rebase HEAD~1 && \
             echo wip > wip.txt && git stash push -q -u && git stash pop -q && rm wip.txt && \
             git branch -f side-{round} && git tag -f t{round} && \
             if [ $(({round} % 5)) -eq 4 ]; then git gc -q; fi && \
             git checkout -q {branch} && git rev-parse HEAD"
        ));
        let tip = tip.lines().last().unwrap_or_default().to_owned();
        // A stop publishes (a look would not); the next round starts again.
        home.ok(&["set-phase", "day", "kept"]);
        assert_eq!(
            git(&host, &["rev-parse", &branch]),
            tip,
            "round {round}: the agent's work is not the host's scratch branch"
        );
        for args in [
            &["gc", "--prune=now", "--quiet"][..],
            &["pack-refs", "--all"],
            &["fsck", "--strict"],
            &["worktree", "prune"],
        ] {
            git(&host, args);
        }
        assert_operators_git_clean(&host, &canary, &format!("round {round}"));
        home.ok(&["set-phase", "day", "running"]);
    }
    let tags = git(&host, &["tag", "--list"]);
    assert!(tags.is_empty(), "the agent's tags reached the host: {tags}");
}

/// Turns a kept session's worktree back into the layout an earlier jackin
/// (ce8d2f9) made, by hand: a `git worktree` of the host with its entry,
/// the agent's commit in the unit's view of the host's git directory and
/// its ref in the unit, no pin, and a record naming the entry. The
/// checkout keeps an untracked file. Returns the entry.
fn make_earlier_layout(home: &Home, name: &str, host: &Path) -> PathBuf {
    let container = home.container(name);
    let unit = home.unit(name);
    let record_file = unit.join(".jackin/isolation.json");
    let mut records: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&record_file).unwrap()).unwrap();
    let record = &mut records[0];
    let checkout = PathBuf::from(record["path"].as_str().unwrap());
    let slug = checkout.file_name().unwrap().to_str().unwrap().to_owned();
    let git_root = unit.join("git");
    for gone in [
        git_root.join("repo").join(&slug),
        git_root.join("repo").join(format!("{slug}.host-objects")),
        git_root.join("repo").join(format!("{slug}.published")),
    ] {
        let _ = std::fs::remove_dir_all(&gone).or_else(|_| std::fs::remove_file(&gone));
    }
    git(
        host,
        &["update-ref", "-d", &format!("refs/jackin/base/{container}")],
    );
    std::fs::remove_dir_all(&checkout).unwrap();
    let branch = format!("jackin/scratch/{container}");
    git(
        host,
        &[
            "worktree",
            "add",
            "--quiet",
            checkout.to_str().unwrap(),
            &branch,
        ],
    );
    std::fs::write(checkout.join("draft.txt"), "the agent's draft\n").unwrap();
    let entry = PathBuf::from(git(
        &checkout,
        &["rev-parse", "--path-format=absolute", "--git-dir"],
    ));
    let base = git(host, &["rev-parse", &branch]);
    let view = git_root.join("view").join(&slug);
    std::fs::create_dir_all(view.join("objects")).unwrap();
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(host)
        .args(["-c", "user.email=agent@jackin.dev", "-c", "user.name=agent"])
        .args(["commit-tree", "-p", &base, "-m", "agent work"])
        .arg(format!("{base}^{{tree}}"))
        .env("GIT_OBJECT_DIRECTORY", view.join("objects"))
        .env(
            "GIT_ALTERNATE_OBJECT_DIRECTORIES",
            host.join(".git/objects"),
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let commit = String::from_utf8(out.stdout).unwrap().trim().to_owned();
    let refs = git_root.join("refs").join(&slug);
    std::fs::create_dir_all(&refs).unwrap();
    std::fs::write(refs.join(&container), format!("{commit}\n")).unwrap();
    std::fs::write(git_root.join("refs").join(format!("{slug}.seeded")), &base).unwrap();
    let fields = record.as_object_mut().unwrap();
    fields.remove("basePin");
    fields.insert("adminDir".into(), entry.to_str().unwrap().into());
    std::fs::write(&record_file, serde_json::to_vec(&records).unwrap()).unwrap();
    entry
}

/// A unit an earlier jackin made moves to a repository of its own at its
/// next start: its work published first, its entry in the host removed
/// (it named the checkout), the agent's git working in the container with
/// the commit and the untracked file. An entry the agent pointed elsewhere
/// is left, and reported by the start, `describe` and the sweep.
#[test]
fn a_unit_made_by_an_earlier_jackin_moves_to_its_own_repository_at_its_next_start() {
    let (home, dir, host, canary) = setup();
    for name in ["mig", "mig-tampered"] {
        Session::start(&home, name, &host);
        home.ok(&["set-phase", name, "kept"]);
    }
    let entry = make_earlier_layout(&home, "mig", &host);
    let tampered = make_earlier_layout(&home, "mig-tampered", &host);
    // Until it starts, its look sees the agent's ref in the unit and
    // publishes nothing (issue 52).
    let refs = || {
        git(
            &host,
            &["for-each-ref", "--format=%(refname) %(objectname)"],
        )
    };
    let before = refs();
    let described = home.ok(&["describe", "mig"]);
    assert!(described.contains("not yet published"), "{described}");
    assert_eq!(refs(), before, "a look published");
    let elsewhere = dir.path().join("elsewhere/.git");
    std::fs::write(
        tampered.join("gitdir"),
        format!("{}\n", elsewhere.display()),
    )
    .unwrap();
    let swept = home.jackin(&["prune", "--dry-run"]);
    let swept = String::from_utf8_lossy(&swept.stderr);
    assert!(
        swept.contains(entry.to_str().unwrap())
            && swept.contains("moves to a repository of its own"),
        "{swept}"
    );

    home.ok(&["set-phase", "mig", "running"]);
    let started = home.jackin(&["set-phase", "mig-tampered", "running"]);
    assert!(started.status.success(), "{started:?}");
    let said = String::from_utf8_lossy(&started.stderr);
    let delete_it = format!("rm -rf -- {}", tampered.display());
    assert!(said.contains(&delete_it), "the start did not say: {said}");

    let migrated = Session {
        home: &home,
        name: "mig".into(),
        container: home.container("mig"),
    };
    let branch = format!("jackin/scratch/{}", migrated.container);
    assert_eq!(
        git(&host, &["log", "-1", "--format=%s", &branch]),
        "agent work"
    );
    assert!(
        !entry.exists(),
        "the entry that named the checkout is still there"
    );
    let seen = migrated.agent_ok("git log -1 --format=%s && git status --porcelain");
    assert!(
        seen.starts_with("agent work") && seen.contains("?? draft.txt"),
        "{seen}"
    );
    assert!(!home.ok(&["describe", "mig"]).contains("left entry"));

    assert!(tampered.exists(), "an entry naming elsewhere was removed");
    assert!(!elsewhere.exists());
    let described = home.ok(&["describe", "mig-tampered"]);
    assert!(
        described.contains("left entry") && described.contains(&delete_it),
        "{described}"
    );
    let swept = home.jackin(&["prune", "--dry-run"]);
    assert!(String::from_utf8_lossy(&swept.stderr).contains(&delete_it));
    std::fs::remove_dir_all(&tampered).unwrap();
    assert_operators_git_clean(&host, &canary, "after the move");
}

/// Another repository of the operator's, with a commit that holds a secret.
fn private_repo(dir: &Path) -> (PathBuf, String) {
    let private = dir.join("private");
    std::fs::create_dir_all(&private).unwrap();
    git(&private, &["init", "--quiet", "--initial-branch=master"]);
    std::fs::write(private.join("secret.txt"), "the operator's secret\n").unwrap();
    git(&private, &["add", "."]);
    git(
        &private,
        &[
            "-c",
            "user.email=o@jackin.dev",
            "-c",
            "user.name=o",
            "commit",
            "-q",
            "-m",
            "private",
        ],
    );
    let commit = git(&private, &["rev-parse", "HEAD"]);
    (private, commit)
}

/// Whether any repository or bundle under `dir` holds `commit`.
fn holds_commit(dir: &Path, commit: &str) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        let Ok(entries) = std::fs::read_dir(&at) else {
            continue;
        };
        for entry in entries.filter_map(Result::ok) {
            let path = entry.path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "bundle") {
                let bytes = std::fs::read(&path).unwrap_or_default();
                let heads = String::from_utf8_lossy(&bytes);
                let verified = std::process::Command::new("git")
                    .args(["bundle", "list-heads"])
                    .arg(&path)
                    .output()
                    .unwrap();
                if heads.contains(commit)
                    || String::from_utf8_lossy(&verified.stdout).contains(commit)
                {
                    found.push(path);
                }
            }
        }
    }
    found
}

/// The agent names another repository of the host (one it cannot see) in
/// its alternates and links a ref to that repository's branch, then its
/// work is discarded and restored: the save bundled that repository's
/// commit, and the restore put it in the mounted repository (C2). Now the
/// confined git reads only the checkout and its repository: neither the
/// save nor the restore ever holds the commit. In a clone and in a
/// worktree's repository alike.
#[test]
fn c2_another_host_repository_is_never_read_through_a_save() {
    let (home, dir, host, _canary) = setup();
    let (private, secret) = private_repo(dir.path());
    let objects = private.join(".git/objects");
    let branch = private.join(".git/refs/heads/master");
    for (name, isolation) in [("c2-clone", "clone"), ("c2-wt", "worktree")] {
        let image = support::real_agent_image();
        let lines = format!(
            "  image: {image}\n  command: [sleep, \"3600\"]\n  mounts:\n  \
             - {{src: {}, dst: /w/wt, isolation: {isolation}}}\n",
            host.display()
        );
        let yaml = support::instance_yaml(name)
            .replace(&format!("  image: {}\n", support::busybox_image()), "")
            .replace("  agent: shell\n", &format!("  agent: shell\n{lines}"));
        home.apply(name, &yaml);
        let session = Session {
            home: &home,
            name: name.into(),
            container: home.container(name),
        };
        session.agent_ok(&format!(
            "G=$(git rev-parse --absolute-git-dir) && \
             echo {objects} >> \"$G/objects/info/alternates\" && \
             ln -s {branch} \"$G/refs/heads/loot\" && \
             echo {secret} > \"$G/refs/heads/stolen\" && echo wip > wip.txt",
            objects = objects.display(),
            branch = branch.display(),
        ));
        let described = home.ok(&["describe", name]);
        assert!(
            !described.contains("the operator's secret"),
            "{name}: {described}"
        );
        home.ok(&["delete", name, "--force"]);
        let saved = holds_commit(&home.path().join("discarded"), &secret);
        assert!(
            saved.is_empty(),
            "{name}: the save holds the secret: {saved:?}"
        );
        home.ok(&["restore-discarded", name]);
        let to = dir.path().join(format!("{name}-restored"));
        home.ok(&["restore-discarded", name, "--to", to.to_str().unwrap()]);
        for repo in [&host, &to] {
            let has = std::process::Command::new("git")
                .arg("-C")
                .arg(repo)
                .args(["cat-file", "-e", &secret])
                .status()
                .unwrap();
            assert!(
                !has.success(),
                "{name}: {} holds the secret",
                repo.display()
            );
        }
        let restored = git(&host, &["for-each-ref", "--format=%(refname)"]);
        assert!(
            !restored.contains("/loot") && !restored.contains("/stolen"),
            "{name}: {restored}"
        );
    }
}

/// A unit an earlier jackin made whose container is stopped, not gone:
/// that container binds the earlier form's git directory and entry, so it
/// is made anew when the checkouts move, never started as it was.
#[test]
fn a_stopped_container_of_a_moved_unit_is_made_anew() {
    let (home, _dir, host, canary) = setup();
    let session = Session::start(&home, "stopped", &host);
    let before = docker(&["inspect", "-f", "{{.Id}}", &session.container]);
    docker(&["stop", "-t", "1", &session.container]);
    let entry = make_earlier_layout(&home, "stopped", &host);
    let out = home.jackin(&["controller", "--once"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let after = docker(&[
        "inspect",
        "-f",
        "{{.Id}} {{.State.Running}}",
        &session.container,
    ]);
    assert_ne!(
        after.split(' ').next(),
        Some(before.as_str()),
        "the old container was started"
    );
    assert!(after.ends_with("true"), "{after}");
    assert!(
        !entry.exists(),
        "the entry that named the checkout is still there"
    );
    let seen = session.agent_ok("git log -1 --format=%s && git status --porcelain");
    assert!(
        seen.starts_with("agent work") && seen.contains("?? draft.txt"),
        "{seen}"
    );
    assert_operators_git_clean(&host, &canary, "after the move");
}
