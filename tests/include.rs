//! Files beyond git (issue 56, item 1): a workspace mount's `include`
//! brings the operator's untracked files into each new isolated checkout,
//! regular files of the source only, what was left out listed; one the
//! agent left as it was is no unfinished work, one it changed is, and a
//! delete saves it. Nothing comes back into the operator's repository.
//! Against the real engine and real git repositories.

use std::path::{Path, PathBuf};

use support::{Home, docker, ensure_busybox, git, instance_yaml_with};

/// The operator's repository: `.env` ignored and present, `secrets/` with
/// a file, a link out of the repository and a 2 GiB sparse file.
fn host_repo(dir: &Path) -> PathBuf {
    let host = dir.join("host");
    std::fs::create_dir(&host).unwrap();
    git(&host, &["init", "--quiet", "--initial-branch=main"]);
    git(&host, &["config", "user.email", "op@jackin.dev"]);
    git(&host, &["config", "user.name", "op"]);
    std::fs::write(host.join("README"), "host\n").unwrap();
    std::fs::write(host.join(".gitignore"), ".env\n").unwrap();
    git(&host, &["add", "."]);
    git(&host, &["commit", "--quiet", "-m", "base"]);
    std::fs::write(host.join(".env"), "TOKEN=operator\n").unwrap();
    std::fs::create_dir(host.join("secrets")).unwrap();
    std::fs::write(host.join("secrets/a"), "a\n").unwrap();
    std::fs::write(dir.join("outside"), "OUTSIDE-THE-SOURCE\n").unwrap();
    std::os::unix::fs::symlink(dir.join("outside"), host.join("secrets/link")).unwrap();
    let big = std::fs::File::create(host.join("secrets/big")).unwrap();
    big.set_len(2 << 30).unwrap();
    host
}

/// The names in `dir` and below, `.git` left out, with each file's size.
fn tree_of(dir: &Path) -> Vec<(PathBuf, u64)> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() && path.file_name().is_some_and(|n| n != ".git") {
                stack.push(path.clone());
            }
            found.push((path, meta.len()));
        }
    }
    found.sort();
    found
}

/// A scratch directory for the host repository (busybox's image built).
fn scratch() -> tempfile::TempDir {
    ensure_busybox();
    tempfile::Builder::new()
        .prefix("jackin-include-")
        .tempdir()
        .unwrap()
}

fn stderr_of(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn included_files_reach_a_new_checkout_and_count_as_work_only_once_changed() {
    let (home, dir) = (Home::new(), scratch());
    let host = host_repo(dir.path());
    let host_before = tree_of(&host);
    let ws = format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: incl}}\nspec:\n  \
         mounts: [{{src: {}, dst: /workspace/app, isolation: worktree, include: [.env, \
         \"secrets/*\"]}}]\n",
        host.display()
    );
    home.apply("ws-incl", &ws);
    let spec = "  workspace: incl\n  command: [sleep, \"3600\"]\n";
    let yaml = home.write_input("inc.yaml", &instance_yaml_with("inc", spec));
    let out = home.jackin(&["apply", yaml.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let told = stderr_of(&out);
    assert!(
        told.contains("2 untracked files copied into the new checkout")
            && told.contains("secrets/big: larger than 16 MiB")
            && told.contains("secrets/link: a symbolic link, never followed"),
        "{told}"
    );

    // The checkout has them; the link and the sparse file stayed out.
    let checkout = home.checkout("inc");
    let read = |path: &str| std::fs::read_to_string(checkout.join(path)).unwrap();
    assert_eq!(read(".env"), "TOKEN=operator\n");
    assert_eq!(read("secrets/a"), "a\n");
    for absent in ["secrets/link", "secrets/big"] {
        assert!(
            std::fs::symlink_metadata(checkout.join(absent)).is_err(),
            "{absent}"
        );
    }
    let mount = home.object("inc")["status"]["mounts"][0].clone();
    assert_eq!(mount["included"], serde_json::json!([".env", "secrets/a"]));
    let left = mount["notIncluded"].to_string();
    assert!(
        left.contains("secrets/big") && left.contains("secrets/link"),
        "{left}"
    );
    let describe = home.ok(&["describe", "inc"]);
    assert!(
        describe.contains("not included  secrets/big: larger than 16 MiB"),
        "{describe}"
    );

    // As copied, they are no unfinished work: nothing blocks a delete.
    assert!(mount["dirtyFiles"].is_null(), "{mount:#}");
    let dry = home.ok(&["delete", "inc", "--dry-run"]);
    assert!(!dry.contains("blocked: unfinished work"), "{dry}");

    // The agent edits `.env`: that is work, and the delete saves it.
    let container = home.container("inc");
    docker(&[
        "exec",
        &container,
        "sh",
        "-c",
        "echo AGENT-EDIT >> /workspace/app/.env",
    ]);
    let dry = home.ok(&["delete", "inc", "--dry-run"]);
    assert!(dry.contains("blocked: unfinished work"), "{dry}");
    let describe = home.ok(&["describe", "inc"]);
    assert!(describe.contains("!! .env"), "{describe}");
    assert!(
        describe.contains("uncommitted   1 file\n"),
        "only .env: {describe}"
    );
    let blocked = home.jackin(&["delete", "inc"]);
    assert!(
        !blocked.status.success(),
        "no terminal, unacknowledged work"
    );
    let out = home.jackin(&["delete", "inc", "--force"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let saves: serde_json::Value =
        serde_json::from_str(&home.ok(&["get", "discarded", "-o", "json"])).unwrap();
    let files = &saves["items"][0]["checkouts"][0]["files"];
    assert_eq!(files["listed"], serde_json::json!([".env"]), "{saves:#}");

    // The operator's repository got nothing back.
    assert_eq!(
        std::fs::read_to_string(host.join(".env")).unwrap(),
        "TOKEN=operator\n"
    );
    assert_eq!(tree_of(&host), host_before);
}

/// A session whose included files the agent never touched is deleted
/// without a question or a save, on a run with no terminal.
#[test]
fn an_untouched_included_file_does_not_block_a_delete() {
    let (home, dir) = (Home::new(), scratch());
    let host = host_repo(dir.path());
    let spec = format!(
        "  command: [sleep, \"3600\"]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: \
         clone, include: [.env]}}]\n",
        host.display()
    );
    home.apply("calm", &instance_yaml_with("calm", &spec));
    assert!(home.checkout("calm").join(".env").is_file());
    let out = home.jackin(&["delete", "calm"]);
    assert!(out.status.success(), "{}", stderr_of(&out));
    let saves = home.ok(&["get", "discarded", "-o", "json"]);
    assert!(!saves.contains("calm"), "{saves}");
}
