//! A discard can be undone for a while (issue 24, defect L2): every path
//! that deletes an isolated checkout holding unfinished work saves that
//! work first, `jackin get discarded` lists it, `jackin restore-discarded`
//! brings it back, and the sweeps remove it once the retention has passed.
//! Against the real engine and real git repositories.

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::{Home, docker, ensure_busybox, eventually, git, instance_yaml_with, work_in};

/// The operator's repository: one commit on `main`, with `build/` ignored.
struct HostRepo {
    dir: tempfile::TempDir,
}

impl HostRepo {
    fn new() -> Self {
        let repo = Self {
            dir: tempfile::Builder::new()
                .prefix("jackin-discard-")
                .tempdir()
                .unwrap(),
        };
        let host = repo.path();
        std::fs::create_dir(&host).unwrap();
        git(&host, &["init", "--quiet", "--initial-branch=main"]);
        git(&host, &["config", "user.email", "op@jackin.dev"]);
        git(&host, &["config", "user.name", "op"]);
        std::fs::write(host.join("README"), "host\n").unwrap();
        std::fs::write(host.join(".gitignore"), "build/\n").unwrap();
        git(&host, &["add", "."]);
        git(&host, &["commit", "--quiet", "-m", "base"]);
        repo
    }

    fn path(&self) -> PathBuf {
        self.dir.path().join("host")
    }

    /// A path beside the repository for a restored checkout.
    fn beside(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }
}

/// An agent that works until the host creates `state/go`, then exits 0.
const WAIT_THEN_EXIT: &str = "while [ ! -f /jackin/state/go ]; do sleep 0.2; done; exit 0";

/// An instance with a clone of `host` at `/workspace/app`, more `spec`
/// lines, and annotations.
fn instance(name: &str, host: &Path, spec: &str, annotations: &[(&str, &str)]) -> String {
    let mut yaml = instance_yaml_with(
        name,
        &format!(
            "{spec}  mounts: [{{src: {}, dst: /workspace/app, isolation: clone}}]\n",
            host.display()
        ),
    );
    if !annotations.is_empty() {
        let lines: String = annotations
            .iter()
            .map(|(k, v)| format!("    {k}: \"{v}\"\n"))
            .collect();
        yaml = yaml.replace(
            &format!("  name: {name}\n"),
            &format!("  name: {name}\n  annotations:\n{lines}"),
        );
    }
    yaml
}

fn command(script: &str) -> String {
    format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(script).unwrap()
    )
}

fn workspace(home: &Home, name: &str, spec: &str) {
    let yaml = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    );
    let path = home.write_input(&format!("ws-{name}.yaml"), &yaml);
    home.ok(&["apply", path.to_str().unwrap()]);
}

/// The agent's unfinished work in the clone of `name`: a stash and a commit
/// on a new branch `feature` (git on the checkout), then a modified and an
/// untracked file written from inside the container. Returns the commit.
fn leave_work(home: &Home, name: &str) -> String {
    let checkout = home.checkout(name);
    work_in(
        &checkout,
        "echo stashed >> README && git stash push --quiet -m 'an idea' && \
         git checkout --quiet -b feature && echo f > feature.txt && git add feature.txt && \
         git commit --quiet -m 'feature work'",
    );
    docker(&[
        "exec",
        &home.container(name),
        "sh",
        "-c",
        "echo modified >> /workspace/app/README && echo new > /workspace/app/new.txt",
    ]);
    git(&checkout, &["rev-parse", "HEAD"])
}

/// The digest a purge of `name` would need acknowledged, from a dry run.
fn digest_of(home: &Home, name: &str) -> String {
    let dry = home.ok(&["set-phase", name, "purged", "--dry-run"]);
    let (_, rest) = dry
        .split_once("(digest ")
        .unwrap_or_else(|| panic!("no digest in {dry}"));
    rest.split(')').next().unwrap().to_owned()
}

/// `jackin get discarded -o json`: every save.
fn saves(home: &Home) -> Vec<serde_json::Value> {
    let out = home.ok(&["get", "discarded", "-o", "json"]);
    let list: serde_json::Value = serde_json::from_str(&out).expect("get prints JSON");
    list["items"].as_array().cloned().unwrap_or_default()
}

/// Checks that the work [`leave_work`] left in `name` was saved and listed
/// and that `restore-discarded --to` brings every part of it back; returns
/// the save's name.
fn assert_saved_and_restored(home: &Home, host: &HostRepo, name: &str, feature: &str) -> String {
    let all = saves(home);
    let save = all
        .iter()
        .find(|s| s["instance"] == name)
        .unwrap_or_else(|| panic!("no save of {name}: {all:#?}"));
    let save_name = save["name"].as_str().unwrap().to_owned();
    let checkout = save["checkouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["dst"] == "/workspace/app")
        .unwrap_or_else(|| panic!("no /workspace/app in {save:#}"));
    assert_eq!(checkout["dst"], "/workspace/app", "{save:#}");
    assert_eq!(
        checkout["files"]["saved"], 2,
        "README and new.txt: {save:#}"
    );
    assert_eq!(checkout["branches"][0]["name"], "feature", "{save:#}");
    assert_eq!(checkout["branches"][0]["commit"], feature, "{save:#}");
    assert_eq!(
        checkout["stash"].as_array().map(Vec::len),
        Some(1),
        "{save:#}"
    );
    assert!(save["expiresAt"].is_string(), "{save:#}");
    let table = home.ok(&["get", "discarded"]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&save_name) && l.contains(" /workspace/app "))
        .unwrap_or_else(|| panic!("{table}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    // NAME INSTANCE HOLDS SAVED(2 words) FILES BRANCHES STASH SIZE EXPIRES
    assert_eq!(
        &cells[..3],
        [save_name.as_str(), name, "/workspace/app"],
        "{table}"
    );
    assert_eq!(&cells[5..8], ["2", "1", "1"], "{table}");

    let to = host.beside(&format!("restored-{name}"));
    let restore = [
        "restore-discarded",
        &save_name,
        "--mount",
        "/workspace/app",
        "--to",
        to.to_str().unwrap(),
    ];
    let out = home.ok(&restore);
    assert!(out.contains("restored into"), "{out}");
    assert_eq!(git(&to, &["rev-parse", "refs/heads/feature"]), feature);
    assert_eq!(git(&to, &["symbolic-ref", "--short", "HEAD"]), "feature");
    assert_eq!(
        std::fs::read_to_string(to.join("README")).unwrap(),
        "host\nmodified\n"
    );
    assert_eq!(
        std::fs::read_to_string(to.join("new.txt")).unwrap(),
        "new\n"
    );
    let status = git(&to, &["status", "--porcelain"]);
    assert_eq!(status, "M README\n?? new.txt", "{status}");
    let stash = git(&to, &["stash", "list"]);
    assert!(stash.contains("an idea"), "{stash}");
    assert_eq!(git(&to, &["show", "stash@{0}:README"]), "host\nstashed");
    // Never into an existing directory.
    let refused = home.fails(&restore);
    assert!(refused.contains("exists"), "{refused}");
    save_name
}

/// The discard's own report names what it saved.
fn assert_reported(output: &str) {
    assert!(
        output.contains("saved the unfinished work of /workspace/app before discarding it")
            && output.contains("1 branch (feature)")
            && output.contains("1 stash entry")
            && output.contains("restore-discarded"),
        "{output}"
    );
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// L2: `exitPolicy: clean`, the agent exits 0 with unfinished work and
/// nobody attached. The work is saved before the checkout goes, listed,
/// restored as a checkout and as branches of the host repository, and the
/// sweep removes it once the retention has passed.
#[test]
#[expect(
    clippy::too_many_lines,
    reason = "a test scenario told in the order an operator meets it"
)]
fn a_clean_exit_saves_the_discarded_work_and_restores_it() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    // A second repository, as the defect had it: a worktree in which the
    // agent edits a file and writes a new one.
    let other = HostRepo::new();
    workspace(&home, "tidy", "{exitPolicy: clean}");
    let spec = format!("  workspace: tidy\n{}", command(WAIT_THEN_EXIT));
    let yaml = instance("done", &host.path(), &spec, &[]).replace(
        "isolation: clone}]",
        &format!(
            "isolation: clone}}, {{src: {}, dst: /workspace/wt, isolation: worktree}}]",
            other.path().display()
        ),
    );
    home.apply("done", &yaml);
    let checkout = home.checkout("done");
    let feature = leave_work(&home, "done");
    let container = home.container("done");
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "echo edited >> /workspace/wt/README && echo new > /workspace/wt/new.txt",
    ]);
    std::fs::write(
        home.path().join("data").join(&container).join("state/go"),
        "",
    )
    .unwrap();
    eventually(Duration::from_secs(60), "the agent to exit", || {
        docker(&["inspect", "-f", "{{.State.Running}}", &container]) == "false"
    });
    let pass = home.jackin(&["controller", "--once"]);
    assert_reported(&stderr_of(&pass));
    assert!(
        !checkout.exists(),
        "the clean policy discarded the checkout"
    );
    assert!(!home.jackin(&["get", "done"]).status.success());

    let save = assert_saved_and_restored(&home, &host, "done", &feature);
    // The worktree's files, as a checkout.
    let wt = other.beside("restored-wt");
    home.ok(&[
        "restore-discarded",
        &save,
        "--mount",
        "/workspace/wt",
        "--to",
        wt.to_str().unwrap(),
    ]);
    assert_eq!(git(&wt, &["status", "--porcelain"]), "M README\n?? new.txt");
    assert_eq!(
        std::fs::read_to_string(wt.join("README")).unwrap(),
        "host\nedited\n"
    );
    // With two checkouts, --to needs one named.
    let both = home.fails(&["restore-discarded", &save, "--to", "/nonexistent/x"]);
    assert!(both.contains("choose one with --mount"), "{both}");
    // As branches of the host repositories, too: each checkout's under its
    // own name, since the save holds two.
    let out = home.ok(&["restore-discarded", "done"]);
    assert!(
        out.contains(&format!("jackin/restored/{save}/workspace-app-")),
        "{out}"
    );
    let branch = |repo: &Path, leaf: &str| {
        let listed = git(repo, &["for-each-ref", "--format=%(refname:short)"]);
        listed
            .lines()
            .find(|b| b.contains(&format!("jackin/restored/{save}/")) && b.ends_with(leaf))
            .unwrap_or_else(|| panic!("no {leaf} in {listed}"))
            .to_owned()
    };
    let h = host.path();
    assert_eq!(git(&h, &["rev-parse", &branch(&h, "/feature")]), feature);
    let uncommitted = branch(&h, "/uncommitted");
    assert_eq!(git(&h, &["show", &format!("{uncommitted}:new.txt")]), "new");
    let stash = branch(&h, "/stash-0");
    assert_eq!(
        git(&h, &["show", &format!("{stash}:README")]),
        "host\nstashed"
    );
    git(&h, &["fsck", "--no-dangling"]);
    let o = other.path();
    let uncommitted = branch(&o, "/uncommitted");
    assert_eq!(
        git(&o, &["show", &format!("{uncommitted}:README")]),
        "host\nedited"
    );
    let describe = home.jackin(&["describe", "done"]);
    assert!(
        stderr_of(&describe).contains("`jackin get discarded done`"),
        "{}",
        stderr_of(&describe)
    );

    // Kept for the retention the home sets, then swept.
    std::fs::write(home.path().join("config.yaml"), "discardRetention: 1s\n").unwrap();
    std::thread::sleep(Duration::from_millis(2100));
    let dry = home.ok(&["prune", "--dry-run"]);
    assert!(
        dry.contains(&format!("would remove the saved work discarded/{save}")),
        "{dry}"
    );
    assert_eq!(saves(&home).len(), 1, "a dry run removes nothing");
    let pruned = home.ok(&["prune"]);
    assert!(
        pruned.contains(&format!("removed the saved work discarded/{save}")),
        "{pruned}"
    );
    assert!(saves(&home).is_empty());
    assert!(!home.path().join("discarded").join(&save).exists());
}

/// `set-phase NAME purged` once the digest is acknowledged (here by the
/// annotation in the operator's manifest).
#[test]
fn an_acknowledged_set_phase_purged_saves_the_work_first() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let spec = command("sleep 3600");
    home.apply("acked", &instance("acked", &host.path(), &spec, &[]));
    let feature = leave_work(&home, "acked");
    let digest = digest_of(&home, "acked");
    home.apply(
        "acked",
        &instance(
            "acked",
            &host.path(),
            &spec,
            &[("jackin.dev/acknowledge-discard", &digest)],
        ),
    );
    let out = home.jackin(&["set-phase", "acked", "purged"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_reported(&stderr_of(&out));
    let save = assert_saved_and_restored(&home, &host, "acked", &feature);

    // `prune --discarded` removes every save now (its dry run first,
    // which changes nothing), saying what each held.
    let dry = home.ok(&["prune", "--discarded", "--dry-run"]);
    assert!(
        dry.contains(&format!("would remove discarded/{save}: ")),
        "{dry}"
    );
    assert_eq!(saves(&home).len(), 1);
    let out = home.ok(&["prune", "--discarded"]);
    assert!(
        out.contains(&format!("removed discarded/{save}: ")),
        "{out}"
    );
    assert!(saves(&home).is_empty(), "{out}");
}

/// `delete --force`.
#[test]
fn a_forced_delete_saves_the_work_first() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    home.apply(
        "forced",
        &instance("forced", &host.path(), &command("sleep 3600"), &[]),
    );
    let feature = leave_work(&home, "forced");
    let out = home.jackin(&["delete", "forced", "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_reported(&stderr_of(&out));
    let save = assert_saved_and_restored(&home, &host, "forced", &feature);

    // A save need not wait for its expiry: `delete discarded/NAME` removes
    // it (a dry run first, which changes nothing).
    let target = format!("discarded/{save}");
    let dry = home.ok(&["delete", &target, "--dry-run"]);
    assert!(dry.contains("would be deleted (dry run)"), "{dry}");
    assert_eq!(saves(&home).len(), 1);
    let out = home.ok(&["delete", &target]);
    assert!(
        out.contains(&format!("{target} deleted: /workspace/app: ")),
        "{out}"
    );
    assert!(saves(&home).is_empty(), "the save is gone");
    let err = home.fails(&["delete", &target]);
    assert!(err.contains(&save), "{err}");
}

/// `apply --prune` of a source that no longer holds the instance, its
/// work acknowledged in the source's file before.
#[test]
fn a_pruned_instance_saves_the_work_first() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    let source = tempfile::Builder::new()
        .prefix("jackin-policy-")
        .tempdir()
        .unwrap();
    // The source keeps a workspace, so it is never empty.
    std::fs::write(
        source.path().join("ws.yaml"),
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: policy}\nspec: {}\n",
    )
    .unwrap();
    let file = source.path().join("pruned.yaml");
    let spec = command("sleep 3600");
    let source_arg = source.path().to_str().unwrap();
    std::fs::write(&file, instance("pruned", &host.path(), &spec, &[])).unwrap();
    home.ok(&["apply", "--prune", "-f", source_arg]);
    let feature = leave_work(&home, "pruned");
    let digest = digest_of(&home, "pruned");
    std::fs::write(
        &file,
        instance(
            "pruned",
            &host.path(),
            &spec,
            &[("jackin.dev/acknowledge-discard", &digest)],
        ),
    )
    .unwrap();
    home.ok(&["apply", "--prune", "-f", source_arg]);
    std::fs::remove_file(&file).unwrap();
    let out = home.jackin(&["apply", "--prune", "-f", source_arg]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert_reported(&stderr_of(&out));
    assert_saved_and_restored(&home, &host, "pruned", &feature);
}

/// The keep cap purges the least recently running kept session over
/// `keep.max` when its unfinished work was acknowledged: saved first.
#[test]
fn the_keep_cap_saves_the_acknowledged_work_it_discards() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    workspace(&home, "capped", "{keep: {max: 1}}");
    let spec = format!("  workspace: capped\n{}", command("sleep 3600"));
    home.apply("older", &instance("older", &host.path(), &spec, &[]));
    let feature = leave_work(&home, "older");
    let digest = digest_of(&home, "older");
    home.apply(
        "older",
        &instance(
            "older",
            &host.path(),
            &spec,
            &[("jackin.dev/acknowledge-discard", &digest)],
        ),
    );
    home.ok(&["set-phase", "older", "kept"]);
    assert_eq!(home.object("older")["status"]["phase"], "Kept");
    home.apply(
        "newer",
        &instance_yaml_with(
            "newer",
            &format!("  workspace: capped\n{}", command("sleep 3600")),
        ),
    );
    let out = home.jackin(&["set-phase", "newer", "kept"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("purging instance/older"), "{stdout}");
    assert!(stdout.contains("instance/older purged"), "{stdout}");
    assert_reported(&stderr_of(&out));
    assert!(!home.jackin(&["get", "older"]).status.success());
    assert_saved_and_restored(&home, &host, "older", &feature);
}

/// A worktree, with real git in the container (the real-aider image's): a
/// commit on its scratch branch, which lands in the unit's view, and files
/// the agent changed. A worktree makes no branch or stash of its own.
#[test]
fn a_worktrees_discarded_work_is_saved_with_the_agents_commit() {
    let image = support::real_agent_image();
    let home = Home::new();
    let host = HostRepo::new();
    let yaml = support::instance_yaml("tree")
        .replace(&format!("  image: {}\n", support::busybox_image()), "")
        .replace(
            "  agent: shell\n",
            &format!(
                "  agent: shell\n  image: {image}\n  command: [sleep, \"3600\"]\n  mounts: \
                 [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
                host.path().display()
            ),
        );
    home.apply("tree", &yaml);
    let container = home.container("tree");
    let out = std::process::Command::new("docker")
        .args([
            "exec",
            "-w",
            "/workspace/app",
            "-e",
            "HOME=/tmp",
            &container,
            "sh",
            "-c",
        ])
        .arg(
            "git config --global --add safe.directory '*' && git config user.name agent && \
             git config user.email agent@jackin.dev && echo work > agent.txt && \
             git add agent.txt && git commit -q -m 'agent work' && echo modified >> README && \
             echo new > new.txt && git rev-parse HEAD",
        )
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr_of(&out));
    let commit = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let out = home.jackin(&["delete", "tree", "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let all = saves(&home);
    let checkout = &all[0]["checkouts"][0];
    assert_eq!(checkout["isolation"], "worktree", "{all:#?}");
    assert_eq!(checkout["files"]["saved"], 2, "{all:#?}");
    assert_eq!(checkout["head"], commit.as_str(), "{all:#?}");
    let save = all[0]["name"].as_str().unwrap().to_owned();
    let to = host.beside("restored-tree");
    home.ok(&["restore-discarded", &save, "--to", to.to_str().unwrap()]);
    assert_eq!(git(&to, &["rev-parse", "HEAD"]), commit);
    assert_eq!(
        std::fs::read_to_string(to.join("agent.txt")).unwrap(),
        "work\n"
    );
    assert_eq!(git(&to, &["status", "--porcelain"]), "M README\n?? new.txt");

    // The save pins the base it borrows in the host repository; deleting
    // the save before it expires releases the pin.
    let pins = || {
        git(
            &host.path(),
            &["for-each-ref", "--format=%(refname)", "refs/jackin/saved/"],
        )
    };
    assert!(!pins().is_empty(), "the save pins its base");
    home.ok(&["delete", &format!("discarded/{save}")]);
    assert!(saves(&home).is_empty(), "the save is gone");
    assert_eq!(pins(), "", "its pin went with it");
}

/// Issue 55: `restore-discarded NAME --session` brings the saved checkout
/// back where the agent left it: in the new session's own clone, made
/// before its container first starts (files, staged state, branches,
/// stash, `HEAD`), and as branches in the host repository as before; the
/// save is listed as restored.
#[test]
fn restore_session_puts_the_saved_work_in_the_new_sessions_checkout() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    crate::saved_sessions::notes_agent(&home);
    let name = support::unique("resumed");
    let yaml = format!(
        "{}  mounts: [{{src: {}, dst: /workspace/app, isolation: clone}}]\n",
        crate::saved_sessions::notes_instance(&name, None),
        host.path().display()
    );
    home.apply(&format!("{name}.yaml"), &yaml);
    let feature = leave_work(&home, &name);
    let out = home.jackin(&["delete", &name, "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let all = saves(&home);
    assert!(all[0]["session"].is_object(), "{all:#?}");
    let save = all[0]["name"].as_str().unwrap().to_owned();
    let table = home.ok(&["get", "discarded"]);
    assert!(!table.contains("instance/"), "untouched yet: {table}");

    let again = support::unique("again");
    let out = home.ok(&["restore-discarded", &save, "--session", "--name", &again]);
    assert!(out.contains(&format!("instance/{again} created")), "{out}");
    let checkout = home.checkout(&again);
    assert!(checkout.starts_with(home.unit(&again)), "{checkout:?}");
    assert_eq!(git(&checkout, &["rev-parse", "HEAD"]), feature);
    assert_eq!(
        git(&checkout, &["symbolic-ref", "--short", "HEAD"]),
        "feature"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("README")).unwrap(),
        "host\nmodified\n"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("new.txt")).unwrap(),
        "new\n"
    );
    let status = git(&checkout, &["status", "--porcelain"]);
    assert_eq!(status, "M README\n?? new.txt", "{status}");
    let stash = git(&checkout, &["stash", "list"]);
    assert!(stash.contains("an idea"), "{stash}");
    // The agent sees its files where it left them.
    docker(&[
        "exec",
        &home.container(&again),
        "test",
        "-f",
        "/workspace/app/new.txt",
    ]);
    // The branches in the host repository, as without --session.
    let restored = format!("refs/heads/jackin/restored/{save}/feature");
    assert_eq!(git(&host.path(), &["rev-parse", &restored]), feature);
    // Listed as restored, into the new session.
    let table = home.ok(&["get", "discarded"]);
    let row = table
        .lines()
        .find(|l| l.starts_with(&save) && l.contains(" /workspace/app "))
        .unwrap_or_else(|| panic!("{table}"));
    assert!(row.ends_with(&format!("instance/{again}")), "{table}");
    let all = saves(&home);
    let listed = all.iter().find(|s| s["name"] == save.as_str()).unwrap();
    assert_eq!(listed["restored"]["into"], "session", "{listed:#}");
    assert_eq!(listed["restored"]["instance"], again.as_str(), "{listed:#}");
    let out = home.jackin(&["delete", &again, "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
}

/// Issue 55: the same with `isolation: worktree`, as the README's example
/// mounts: the new session's own worktree is made on the saved base (the
/// host's branch moved on between the delete and the restore), with the
/// files, the staged state and the agent's commit on the new unit's
/// branch; the container sees the files, that branch is published into
/// the host (the publication accepts it: it is work on its base), and the
/// host's files and refs hold nothing else of the agent's.
#[test]
fn restore_session_puts_a_worktrees_saved_work_in_the_new_sessions_worktree() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    crate::saved_sessions::notes_agent(&home);
    let name = support::unique("treed");
    let yaml = format!(
        "{}  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
        crate::saved_sessions::notes_instance(&name, None),
        host.path().display()
    );
    home.apply(&format!("{name}.yaml"), &yaml);
    let checkout = home.checkout(&name);
    work_in(
        &checkout,
        "echo f > feature.txt && git add feature.txt && git commit --quiet -m 'agent work' && \
         echo staged > staged.txt && git add staged.txt",
    );
    let commit = git(&checkout, &["rev-parse", "HEAD"]);
    docker(&[
        "exec",
        &home.container(&name),
        "sh",
        "-c",
        "echo modified >> /workspace/app/README && echo new > /workspace/app/new.txt",
    ]);
    let out = home.jackin(&["delete", &name, "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let save = saves(&home)[0]["name"].as_str().unwrap().to_owned();
    // The operator's branch moves on before the restore.
    let repo = host.path();
    std::fs::write(repo.join("later.txt"), "the operator's\n").unwrap();
    git(&repo, &["add", "later.txt"]);
    git(&repo, &["commit", "--quiet", "-m", "later"]);
    let main = git(&repo, &["rev-parse", "main"]);

    let again = support::unique("again");
    let out = home.ok(&["restore-discarded", &save, "--session", "--name", &again]);
    assert!(out.contains("/workspace/app: restored into"), "{out}");
    let checkout = home.checkout(&again);
    assert!(checkout.starts_with(home.unit(&again)), "{checkout:?}");
    let scratch = format!("jackin/scratch/{}", home.container(&again));
    assert_eq!(git(&checkout, &["rev-parse", "HEAD"]), commit);
    assert_eq!(
        git(&checkout, &["symbolic-ref", "--short", "HEAD"]),
        scratch
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("README")).unwrap(),
        "host\nmodified\n"
    );
    let status = git(&checkout, &["status", "--porcelain"]);
    assert_eq!(status, "M README\nA  staged.txt\n?? new.txt", "{status}");
    assert!(
        !checkout.join("later.txt").exists(),
        "not on the saved base"
    );
    // The agent sees its files where it left them.
    for file in ["new.txt", "staged.txt", "feature.txt"] {
        docker(&[
            "exec",
            &home.container(&again),
            "test",
            "-f",
            &format!("/workspace/app/{file}"),
        ]);
    }
    // Its start published the agent's commit as the new unit's branch.
    assert_eq!(git(&repo, &["rev-parse", &scratch]), commit);
    // The host's files are the operator's, and its refs the operator's
    // and jackin's own.
    assert_eq!(git(&repo, &["rev-parse", "HEAD"]), main);
    assert_eq!(git(&repo, &["status", "--porcelain", "--ignored"]), "");
    let refs = git(&repo, &["for-each-ref", "--format=%(refname)"]);
    for name in refs.lines() {
        assert!(
            name == "refs/heads/main"
                || name.starts_with("refs/heads/jackin/")
                || name.starts_with("refs/jackin/"),
            "{refs}"
        );
    }
    let out = home.jackin(&["delete", &again, "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
}

/// A hostile checkout: its `.git` config names a filter and an fsmonitor
/// program, its attributes ask for the filter, and among its untracked
/// files are a FIFO and a link to a file of the operator's. The save runs
/// none of the programs, follows no link (the link is saved as a link,
/// the file's contents are nowhere in the save), waits on no FIFO, and the
/// restore runs nothing either.
#[test]
fn a_hostile_checkout_is_saved_without_running_anything_or_following_a_link() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    home.apply(
        "hostile",
        &instance("hostile", &host.path(), &command("sleep 3600"), &[]),
    );
    let checkout = home.checkout("hostile");
    let canary = host.beside("ran");
    let program = format!("sh -c 'touch {}; cat'", canary.display());
    git(&checkout, &["config", "core.fsmonitor", &program]);
    git(&checkout, &["config", "filter.evil.clean", &program]);
    git(&checkout, &["config", "filter.evil.smudge", &program]);
    std::fs::write(checkout.join(".gitattributes"), "* filter=evil\n").unwrap();
    // The probe works: the operator's own git in the checkout runs it.
    let _ = std::process::Command::new("git")
        .args(["-C", checkout.to_str().unwrap(), "status"])
        .output();
    assert!(canary.exists(), "the probe itself works");
    std::fs::remove_file(&canary).unwrap();
    let secret = host.beside("operator-secret");
    std::fs::write(&secret, "the operator's secret\n").unwrap();
    std::os::unix::fs::symlink(&secret, checkout.join("secret-link")).unwrap();
    let container = home.container("hostile");
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "mkfifo /workspace/app/pipe && mkdir /workspace/app/build && \
         mkfifo /workspace/app/build/pipe && echo out > /workspace/app/build/out.o && \
         echo note > /workspace/app/notes.md",
    ]);

    let out = home.within(Duration::from_secs(300), &["delete", "hostile", "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(
        !canary.exists(),
        "a program the checkout named ran on the host"
    );
    let all = saves(&home);
    let saved = &all[0]["checkouts"][0];
    let skipped = saved["files"]["skippedListed"].to_string();
    assert!(
        skipped.contains("build/pipe: a FIFO, socket or device"),
        "{all:#?}"
    );
    let save = all[0]["name"].as_str().unwrap().to_owned();
    let dir = home.path().join("discarded").join(&save);
    for entry in std::fs::read_dir(&dir).unwrap() {
        let bytes = std::fs::read(entry.unwrap().path()).unwrap();
        assert!(
            !bytes.windows(21).any(|w| w == b"the operator's secret"),
            "the link's target was read into the save"
        );
    }
    let to = host.beside("restored-hostile");
    home.ok(&["restore-discarded", &save, "--to", to.to_str().unwrap()]);
    assert!(
        !canary.exists(),
        "the restore ran a program the checkout named"
    );
    assert_eq!(std::fs::read_link(to.join("secret-link")).unwrap(), secret);
    assert_eq!(
        std::fs::read_to_string(to.join("notes.md")).unwrap(),
        "note\n"
    );
    assert_eq!(
        std::fs::read_to_string(to.join("build/out.o")).unwrap(),
        "out\n"
    );
    assert!(!to.join("pipe").exists() && !to.join("build/pipe").exists());
    assert_eq!(
        std::fs::read_to_string(&secret).unwrap(),
        "the operator's secret\n",
        "nothing was written through the link"
    );
}

/// A save that cannot be made deletes nothing: the step fails with what
/// to do, the checkout and its work stay, and once the cause is gone the
/// same command saves and discards.
#[test]
fn a_discard_whose_work_cannot_be_saved_deletes_nothing() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    home.apply(
        "stuck",
        &instance("stuck", &host.path(), &command("sleep 3600"), &[]),
    );
    let feature = leave_work(&home, "stuck");
    let checkout = home.checkout("stuck");
    // Where saves go is taken by a file: no save can be made there.
    let discarded = home.path().join("discarded");
    std::fs::write(&discarded, "in the way\n").unwrap();
    let stderr = home.fails(&["delete", "stuck", "--force"]);
    assert!(
        stderr.contains("could not be saved before its discard")
            && stderr.contains("nothing was deleted"),
        "{stderr}"
    );
    assert!(
        checkout.join("new.txt").exists(),
        "the checkout was deleted"
    );
    assert_eq!(git(&checkout, &["rev-parse", "feature"]), feature);
    let obj = home.object("stuck");
    assert_eq!(
        support::condition(&obj, "Ready").unwrap()["reason"],
        "DiscardNotSaved",
        "{obj:#}"
    );

    std::fs::remove_file(&discarded).unwrap();
    let out = home.jackin(&["delete", "stuck", "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!checkout.exists());
    assert_saved_and_restored(&home, &host, "stuck", &feature);
}

/// An agent whose state is `.notes/` in its home, run as `sleep` in busybox.
const NOTES_AGENT: &str = "apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: \
                           notes}\nspec:\n  launch: [sleep, '3600']\n  stateEnv: {name: \
                           NOTES_HOME, path: .notes}\n  credentials:\n    files: [{src: \
                           .notes-login.json, dst: .notes/login.json}]\n";

/// What the save of `instance` lists as left out, from its record: of the
/// conversation, and of the checkout at `/workspace/app`.
fn left_out_of(home: &Home, instance: &str) -> (String, String) {
    let saves: Vec<PathBuf> = std::fs::read_dir(home.path().join("discarded"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .unwrap()
                .to_string_lossy()
                .starts_with(&format!("{instance}-"))
        })
        .collect();
    assert_eq!(saves.len(), 1, "{saves:?}");
    let record: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(saves[0].join("record.json")).unwrap())
            .unwrap();
    let checkout = record["checkouts"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["dst"] == "/workspace/app")
        .unwrap_or_else(|| panic!("no /workspace/app in {record:#}"));
    (
        record["session"]["files"]["skippedListed"].to_string(),
        checkout["files"]["skippedListed"].to_string(),
    )
}

/// N1: a path the agent made, in its home and in its checkout, that fits
/// below them (16 directories of 250 `d`s and a long name, made one `cd`
/// at a time: some 4,080 bytes, under the 4,095 a path may have) but not
/// below the save's directory. Both saves skip it and list it, and
/// `delete --force` removes the unit; before, each save failed with `File
/// name too long` and the unit could not be removed.
#[test]
fn n1_a_path_too_long_to_save_is_skipped_and_listed_and_the_purge_finishes() {
    ensure_busybox();
    let home = Home::new();
    let host = HostRepo::new();
    home.apply("agent-notes.yaml", NOTES_AGENT);
    let yaml = instance("deep", &host.path(), "  authForward: none\n", &[])
        .replace("  agent: shell\n", "  agent: notes\n");
    home.apply("deep", &yaml);
    let unit = home.unit("deep");
    let container = home.container("deep");
    let leaf = "l".repeat(60);
    for dir in ["\"$HOME/.notes\"", "/workspace/app"] {
        docker(&[
            "exec",
            &container,
            "sh",
            "-c",
            &format!(
                "mkdir -p {dir} && cd {dir} && d=$(printf '%250s' | tr ' ' d) && \
                 for i in $(seq 16); do mkdir $d && cd $d || exit 1; done && echo deep > {leaf}"
            ),
        ]);
    }
    let deep = format!("{}/{leaf}", vec!["d".repeat(250); 16].join("/"));

    let out = home.within(Duration::from_secs(300), &["delete", "deep", "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    assert!(!unit.exists(), "the unit stayed");
    let (conversation, checkout) = left_out_of(&home, "deep");
    let why = "its path is too long to save";
    assert!(
        conversation.contains(&format!(".notes/{deep}: {why}")),
        "not listed in the conversation's save: {conversation}"
    );
    assert!(
        checkout.contains(&format!("\"{deep}: {why}")),
        "not listed in the checkout's save: {checkout}"
    );
}
