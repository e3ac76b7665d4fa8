//! GitOps: a directory of policy files, applied with prune, compared with
//! `diff`, and kept in step by `controller --sync`. Against the real engine
//! and real git repositories.

use std::path::{Path, PathBuf};
use std::time::Duration;

use support::{
    Controller, Home, busybox_image, condition, engine_objects, ensure_busybox, eventually, git,
};

/// A policy repository: a git work tree of workspace and instance files.
struct PolicyRepo {
    dir: tempfile::TempDir,
}

impl PolicyRepo {
    fn new() -> Self {
        let repo = Self {
            dir: tempfile::Builder::new()
                .prefix("jackin-policy-")
                .tempdir()
                .unwrap(),
        };
        git(repo.path(), &["init", "--quiet", "--initial-branch=main"]);
        git(repo.path(), &["config", "user.email", "ops@jackin.dev"]);
        git(repo.path(), &["config", "user.name", "ops"]);
        repo
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn arg(&self) -> &str {
        self.path().to_str().unwrap()
    }

    /// Writes `rel` and commits it.
    fn commit_file(&self, rel: &str, text: &str) -> String {
        let path = self.path().join(rel);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        git(self.path(), &["add", "--all"]);
        git(self.path(), &["commit", "--quiet", "-m", rel]);
        git(self.path(), &["rev-parse", "HEAD"])
    }

    /// Removes `rel` and commits that.
    fn remove_file(&self, rel: &str) -> String {
        git(self.path(), &["rm", "--quiet", rel]);
        git(
            self.path(),
            &["commit", "--quiet", "-m", &format!("remove {rel}")],
        );
        git(self.path(), &["rev-parse", "HEAD"])
    }
}

fn workspace(policy: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: team}}\nspec: {{exitPolicy: {policy}}}\n"
    )
}

/// An instance of workspace `team` running the busybox image, with more
/// `spec` lines.
fn instance(name: &str, spec_lines: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec:\n  \
         workspace: team\n  role: {{name: tester}}\n  agent: shell\n  image: {}\n{spec_lines}",
        busybox_image()
    )
}

/// A session that ends by itself (exit 0) once the host drops
/// `state/go` into its unit.
const ENDS_ON_CUE: &str =
    "  command: [sh, -c, 'while [ ! -f /jackin/state/go ]; do sleep 0.2; done; exit 0']\n";

fn uid(home: &Home, name: &str) -> String {
    home.object(name)["metadata"]["uid"]
        .as_str()
        .unwrap()
        .to_owned()
}

fn phase(home: &Home, name: &str) -> Option<String> {
    let out = home.jackin(&["get", name, "-o", "json"]);
    if !out.status.success() {
        return None;
    }
    let obj: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    obj["status"]["phase"].as_str().map(str::to_owned)
}

/// Asserts that nothing of a purged instance is left: no object, no unit,
/// no engine object.
fn assert_gone(home: &Home, name: &str, uid: &str, unit: &Path) {
    assert!(
        !home.jackin(&["get", name]).status.success(),
        "{name} is still there"
    );
    assert!(!unit.exists(), "{name}'s unit is still there");
    assert_eq!(
        engine_objects(uid),
        (vec![], vec![]),
        "{name}'s engine objects"
    );
}

#[test]
fn prune_purges_what_the_repository_dropped_and_leaves_the_rest_alone() {
    ensure_busybox();
    let home = Home::new();
    let repo = PolicyRepo::new();
    repo.commit_file("workspaces/team.yaml", &workspace("keep"));
    repo.commit_file("instances/ender.yaml", &instance("ender", ENDS_ON_CUE));
    repo.commit_file("instances/stay.yaml", &instance("stay", ""));
    let first = home.ok(&["apply", "--prune", "-f", repo.arg()]);
    assert!(first.contains("instance/ender created"), "{first}");
    // Applied by hand: no source owns it.
    home.apply("manual", &instance("manual", ""));

    // 1. A session ends by itself: the exit policy keeps it.
    let ender_unit = home.path().join("data").join(home.container("ender"));
    std::fs::write(ender_unit.join("state/go"), "").unwrap();
    eventually(Duration::from_secs(30), "ender is kept", || {
        home.ok(&["controller", "--once"]);
        phase(&home, "ender").as_deref() == Some("Kept")
    });

    // 2. Re-applying changes and restarts nothing.
    let stay = (uid(&home, "stay"), home.container("stay"));
    let started = support::docker(&["inspect", "-f", "{{.State.StartedAt}}", &stay.1]);
    let again = home.ok(&["apply", "--prune", "-f", repo.arg()]);
    for line in [
        "instance/ender unchanged",
        "instance/stay unchanged",
        "workspace/team unchanged",
    ] {
        assert!(again.contains(line), "{again}");
    }
    assert!(!again.contains("pruned"), "{again}");
    assert_eq!(phase(&home, "ender").as_deref(), Some("Kept"));
    assert_eq!(
        support::docker(&["inspect", "-f", "{{.State.StartedAt}}", &stay.1]),
        started,
        "a re-apply restarted a session"
    );

    // 3. The repository drops an instance: it is purged, nothing left.
    let stay_unit = home.path().join("data").join(&stay.1);
    repo.remove_file("instances/stay.yaml");
    let pruned = home.ok(&["apply", "--prune", "-f", repo.arg()]);
    assert!(
        pruned.contains("instance/stay pruned (set to Purged)"),
        "{pruned}"
    );
    assert!(pruned.contains("instance/stay purged"), "{pruned}");
    assert_gone(&home, "stay", &stay.0, &stay_unit);
    // What no source owns, and what the source still holds, stay.
    assert_eq!(phase(&home, "manual").as_deref(), Some("Running"));
    assert_eq!(phase(&home, "ender").as_deref(), Some("Kept"));

    // The source remembers what it applied.
    let sources: serde_json::Value =
        serde_json::from_str(&home.ok(&["get", "sources", "-o", "json"])).unwrap();
    let record = &sources["items"][0];
    assert_eq!(record["objects"], 2, "{sources}");
    assert_eq!(
        record["revision"],
        git(repo.path(), &["rev-parse", "HEAD"]).as_str()
    );
}

#[test]
fn prune_of_an_instance_with_unfinished_work_is_blocked_and_removes_nothing() {
    ensure_busybox();
    let home = Home::new();
    let repo = PolicyRepo::new();
    let host = tempfile::tempdir().unwrap();
    git(host.path(), &["init", "--quiet", "--initial-branch=main"]);
    git(host.path(), &["config", "user.email", "t@jackin.dev"]);
    git(host.path(), &["config", "user.name", "t"]);
    std::fs::write(host.path().join("README"), "host\n").unwrap();
    git(host.path(), &["add", "."]);
    git(host.path(), &["commit", "--quiet", "-m", "base"]);
    repo.commit_file("workspaces/team.yaml", &workspace("keep"));
    let mount = format!(
        "  mounts: [{{src: {}, dst: /workspace/app, isolation: clone}}]\n",
        host.path().display()
    );
    repo.commit_file("instances/busy.yaml", &instance("busy", &mount));
    home.ok(&["apply", "--prune", "-f", repo.arg()]);
    let checkout = PathBuf::from(
        home.object("busy")["status"]["mounts"][0]["path"]
            .as_str()
            .unwrap(),
    );
    std::fs::write(checkout.join("draft.md"), "unfinished\n").unwrap();
    let container = home.container("busy");

    repo.remove_file("instances/busy.yaml");
    let out = home.jackin(&["apply", "--prune", "-f", repo.arg()]);
    assert!(!out.status.success());
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stdout.contains("instance/busy pruned (set to Purged)"),
        "{stdout}"
    );
    assert!(
        stderr.contains("the purge is blocked") && stderr.contains("unfinished work"),
        "{stderr}"
    );
    // Nothing was removed: the checkout, its work, the unit, the container.
    assert_eq!(
        std::fs::read_to_string(checkout.join("draft.md")).unwrap(),
        "unfinished\n"
    );
    assert!(home.path().join("data").join(&container).exists());
    assert_eq!(
        support::docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true"
    );
    let obj = home.object("busy");
    let blocked = condition(&obj, "PurgeBlocked").expect("the block is recorded");
    assert_eq!(blocked["status"], "True");
}

#[test]
fn diff_exits_0_when_nothing_differs_and_1_with_the_change() {
    let home = Home::new();
    let repo = PolicyRepo::new();
    repo.commit_file("workspaces/team.yaml", &workspace("keep"));
    // Never applied: everything is new.
    let out = home.jackin(&["diff", "--prune", "-f", repo.arg()]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stdout).contains("+++ b/workspace/team"));
    home.ok(&["apply", "--prune", "-f", repo.arg()]);

    let before = home.snapshot();
    let out = home.jackin(&["diff", "--prune", "-f", repo.arg()]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    assert!(out.stdout.is_empty());

    repo.commit_file("workspaces/team.yaml", &workspace("clean"));
    let out = home.jackin(&["diff", "--prune", "-f", repo.arg()]);
    assert_eq!(out.status.code(), Some(1));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("-  exitPolicy: keep\n+  exitPolicy: clean\n"),
        "{text}"
    );
    home.assert_unchanged(&before, "diff");

    // What the diff showed is what the apply does.
    let applied = home.ok(&["apply", "--prune", "-f", repo.arg()]);
    assert_eq!(applied, "workspace/team configured\n");
    let out = home.jackin(&["diff", "--prune", "-f", repo.arg()]);
    assert_eq!(out.status.code(), Some(0));

    // An error is 2, not 1.
    repo.commit_file(
        "workspaces/bad.yaml",
        "kind: Workspace\nmetadata: {name: ../x}\n",
    );
    let out = home.jackin(&["diff", "-f", repo.arg()]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn the_controller_keeps_the_machine_in_step_with_the_repository() {
    ensure_busybox();
    let home = Home::new();
    let repo = PolicyRepo::new();
    repo.commit_file("workspaces/team.yaml", &workspace("keep"));
    let _controller = Controller::start(&home, &["--sync", repo.arg()]);
    let record = || -> serde_json::Value {
        let out = home.jackin(&["get", "sources", "-o", "json"]);
        serde_json::from_slice::<serde_json::Value>(&out.stdout).unwrap_or_default()["items"][0]
            .clone()
    };

    // A new instance file launches it.
    let head = repo.commit_file("instances/one.yaml", &instance("one", ""));
    eventually(Duration::from_secs(30), "one runs", || {
        phase(&home, "one").as_deref() == Some("Running")
    });
    eventually(Duration::from_secs(30), "the revision follows HEAD", || {
        record()["revision"] == head.as_str()
    });

    // A broken file changes nothing, and says where it is broken.
    let broken = "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {name: two}\nspec:\n  role: {name: r}\n  agent: shell\n  image: x\n  phase: Paused\n";
    let bad_head = repo.commit_file("instances/two.yaml", broken);
    eventually(Duration::from_secs(30), "the error is recorded", || {
        !record()["error"].is_null()
    });
    let error = record()["error"].as_str().unwrap().to_owned();
    assert!(
        error.contains("instances/two.yaml:8:10: field `spec.phase`"),
        "{error}"
    );
    assert_eq!(
        record()["revision"],
        head.as_str(),
        "the last good revision"
    );
    assert_ne!(head, bad_head);
    assert_eq!(phase(&home, "one").as_deref(), Some("Running"));
    assert!(!home.jackin(&["get", "two"]).status.success());
    let table = home.ok(&["get", "sources"]);
    assert!(table.contains("two.yaml:8:10"), "{table}");

    // Fixed, then one removed: it is purged.
    let one = (
        uid(&home, "one"),
        home.path().join("data").join(home.container("one")),
    );
    repo.commit_file("instances/two.yaml", &instance("two", ""));
    eventually(Duration::from_secs(30), "two runs", || {
        phase(&home, "two").as_deref() == Some("Running")
    });
    let head = repo.remove_file("instances/one.yaml");
    eventually(Duration::from_secs(30), "one is purged", || {
        phase(&home, "one").is_none() && !one.1.exists()
    });
    assert_gone(&home, "one", &one.0, &one.1);
    eventually(Duration::from_secs(30), "the revision follows HEAD", || {
        record()["revision"] == head.as_str() && record()["error"].is_null()
    });
}

#[test]
fn deleting_a_workspace_leaves_its_instances_on_the_defaults_and_says_so() {
    ensure_busybox();
    let home = Home::new();
    home.apply("ws", &workspace("keep"));
    home.apply("member", &instance("member", ""));
    let described = home.ok(&["describe", "workspace", "team"]);
    assert!(described.contains("Exit policy:      keep"), "{described}");
    assert!(described.contains("member"), "{described}");
    let out = home.ok(&["delete", "workspace", "team"]);
    assert!(out.contains("fall back to the defaults"), "{out}");
    home.ok(&["controller", "--once"]);
    let obj = home.object("member");
    let missing = condition(&obj, "WorkspaceMissing").expect("a condition says so");
    assert_eq!(missing["status"], "True");
    assert_eq!(obj["status"]["phase"], "Running");
    assert!(
        !home
            .jackin(&["describe", "workspace", "team"])
            .status
            .success()
    );
}

#[test]
fn get_sources_drops_a_source_that_owns_nothing_any_more() {
    let home = Home::new();
    let repo = PolicyRepo::new();
    repo.commit_file("workspaces/team.yaml", &workspace("keep"));
    home.ok(&["apply", "--prune", "-f", repo.arg()]);
    let listed = home.ok(&["get", "sources", "-o", "name"]);
    assert_eq!(listed.lines().count(), 1, "{listed}");
    let id = listed.trim().strip_prefix("source/").unwrap().to_owned();

    // A source whose last attempt failed is shown with its error, owning
    // nothing or not.
    let broken = PolicyRepo::new();
    broken.commit_file(
        "workspaces/bad.yaml",
        "kind: Workspace\nmetadata: {name: bad}\n",
    );
    home.ok(&["controller", "--once", "--sync", broken.arg()]);
    assert_eq!(
        home.ok(&["get", "sources", "-o", "name"]).lines().count(),
        2,
        "the failed source is listed"
    );

    // Its only object deleted, the first source owns nothing: it goes.
    home.ok(&["delete", "workspace", "team"]);
    let listed = home.ok(&["get", "sources", "-o", "name"]);
    assert!(!listed.contains(&id), "{listed}");
    assert_eq!(listed.lines().count(), 1, "the failed one stays: {listed}");
    let err = home.fails(&["get", "sources", &id]);
    assert!(err.contains("not found"), "{err}");
}

/// The id of the only source `home` knows.
fn source_id(home: &Home) -> String {
    let sources: serde_json::Value =
        serde_json::from_str(&home.ok(&["get", "sources", "-o", "json"])).unwrap();
    sources["items"][0]["id"].as_str().unwrap().to_owned()
}

/// The instances `source` owns, as `get -o name` prints them.
fn owned_by(home: &Home, source: &str) -> String {
    home.ok(&[
        "get",
        "-l",
        &format!("jackin.dev/source={source}"),
        "-o",
        "name",
    ])
}

/// `set-phase NAME kept` on an instance a synced source owns stands when
/// a commit changes another file of the source; a change to the
/// instance's own file is the operator's intent again and takes over.
#[test]
fn a_hand_change_stands_until_its_own_file_changes() {
    ensure_busybox();
    let home = Home::new();
    let repo = PolicyRepo::new();
    repo.commit_file("workspaces/team.yaml", &workspace("keep"));
    repo.commit_file("instances/one.yaml", &instance("one", ""));
    let sync_until = |name: &str, wanted: &str| {
        eventually(
            Duration::from_secs(60),
            &format!("{name} is {wanted}"),
            || {
                home.jackin(&["controller", "--once", "--sync", repo.arg()]);
                phase(&home, name).as_deref() == Some(wanted)
            },
        );
    };
    sync_until("one", "Running");
    home.ok(&["set-phase", "one", "kept"]);
    assert_eq!(phase(&home, "one").as_deref(), Some("Kept"));

    // Commits to the other files: each is applied, `one` is left alone.
    repo.commit_file("instances/two.yaml", &instance("two", ""));
    sync_until("two", "Running");
    repo.commit_file("workspaces/team.yaml", &workspace("clean"));
    let synced = home.ok(&["controller", "--once", "--sync", repo.arg()]);
    assert!(synced.contains("synced"), "{synced}");
    let described = home.ok(&["describe", "workspace", "team"]);
    assert!(described.contains("Exit policy:      clean"), "{described}");
    assert_eq!(phase(&home, "one").as_deref(), Some("Kept"));
    assert_eq!(home.object("one")["spec"]["phase"], "Kept");

    // Its own file changes: the file's intent (Running) takes over.
    repo.commit_file(
        "instances/one.yaml",
        &instance("one", "  env: [{name: MODE, value: dev}]\n"),
    );
    sync_until("one", "Running");
    assert_eq!(home.object("one")["spec"]["env"][0]["value"], "dev");
}

/// A plain `apply` (no `--prune`) of a source's files keeps the source's
/// label on what it owns: a later `apply --prune` of the source still
/// prunes what its files drop.
#[test]
fn a_plain_apply_of_a_sources_files_keeps_them_the_sources() {
    let home = Home::new();
    let repo = PolicyRepo::new();
    repo.commit_file("workspaces/team.yaml", &workspace("keep"));
    repo.commit_file("instances/one.yaml", &instance("one", ""));
    home.ok(&["apply", "--prune", "--no-wait", "-f", repo.arg()]);
    let source = source_id(&home);
    assert_eq!(owned_by(&home, &source), "instance/one\n");
    let workspace_file = home.path().join("workspaces/team.yaml");
    let label = format!("jackin.dev/source: {source}");
    let stored = std::fs::read_to_string(&workspace_file).unwrap();
    assert!(stored.contains(&label), "{stored}");

    // The same files by hand: nothing changes, the label included.
    let before = home.snapshot();
    let again = home.ok(&["apply", "--no-wait", "-f", repo.arg()]);
    assert_eq!(
        again, "instance/one unchanged\nworkspace/team unchanged\n",
        "{again}"
    );
    home.assert_unchanged(&before, "a plain apply of the source's files");
    let diff = home.jackin(&["diff", "-f", repo.arg()]);
    assert_eq!(
        diff.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&diff.stdout)
    );
    // Changed files by hand: applied, and still the source's.
    repo.commit_file(
        "instances/one.yaml",
        &instance("one", "").replace("{name: one}", "{name: one, labels: {team: a}}"),
    );
    repo.commit_file("workspaces/team.yaml", &workspace("clean"));
    let changed = home.ok(&["apply", "--no-wait", "-f", repo.arg()]);
    assert_eq!(
        changed,
        "instance/one configured\nworkspace/team configured\n"
    );
    assert_eq!(owned_by(&home, &source), "instance/one\n");
    let stored = std::fs::read_to_string(&workspace_file).unwrap();
    assert!(
        stored.contains(&label) && stored.contains("clean"),
        "{stored}"
    );

    // The source still prunes what its files drop.
    repo.remove_file("instances/one.yaml");
    let pruned = home.ok(&["apply", "--prune", "--no-wait", "-f", repo.arg()]);
    assert!(
        pruned.contains("instance/one pruned (set to Purged)"),
        "{pruned}"
    );
}

/// An instance naming a workspace that exists nowhere is applied (the
/// workspace may come in a later commit) with a warning that names the
/// close match; one the store or the same apply holds is not warned of.
#[test]
fn a_workspace_that_exists_nowhere_is_warned_of_with_the_close_match() {
    ensure_busybox();
    let home = Home::new();
    home.apply("ws", &workspace("keep"));
    let typo = home.write_input("typo.yaml", &instance("typo", "").replace("team", "taem"));
    let typo = typo.to_str().unwrap();
    let warning = "warning: workspace `taem` does not exist (did you mean `team`?): \
                   instance/typo runs on the defaults until a Workspace named taem is applied";
    let before = home.snapshot();
    let out = home.jackin(&["apply", "--dry-run", "--no-wait", "-f", typo]);
    assert!(out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(warning),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    home.assert_unchanged(&before, "apply --dry-run");
    let out = home.jackin(&["apply", "--no-wait", "-f", typo]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stderr}");
    assert!(stderr.contains(warning), "{stderr}");
    assert_eq!(home.object("typo")["spec"]["workspace"], "taem");

    // Known in the store, or applied together: no warning.
    let good = home.write_input("good.yaml", &instance("good", ""));
    let later = format!(
        "{}---\n{}",
        instance("later", "").replace("team", "later"),
        workspace("keep").replace("name: team", "name: later")
    );
    let later = home.write_input("later.yaml", &later);
    for file in [good, later] {
        let out = home.jackin(&["apply", "--no-wait", "-f", file.to_str().unwrap()]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{stderr}");
        assert!(!stderr.contains("warning"), "{stderr}");
    }
}
