//! Roles as a library: the `roles/` cache under `JACKIN_HOME` holds one
//! checkout per role source, cloned once, fetched when the ref moves,
//! refused when someone changed it, and built from when the source cannot
//! be reached.

use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;
use std::process::Command;

use support::{Home, RoleRepo, ensure_busybox};

/// The one checkout in the home's `roles/` cache.
fn the_checkout(home: &Home) -> PathBuf {
    let dirs: Vec<PathBuf> = std::fs::read_dir(home.path().join("roles"))
        .expect("the roles/ cache")
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_dir())
        .collect();
    assert_eq!(dirs.len(), 1, "{dirs:?}");
    dirs.into_iter().next().unwrap()
}

fn role_commit(home: &Home, name: &str) -> String {
    home.object(name)["status"]["recipe"]["roleCommit"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// A second build of the source reuses its checkout (the same directory,
/// never cloned again) and fetches the ref that moved meanwhile; the work
/// tree is left at the commit built.
#[test]
fn the_cache_is_cloned_once_and_follows_the_ref() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("first");
    home.apply("a", &role.instance_yaml("a"));
    let checkout = the_checkout(&home);
    let inode = std::fs::metadata(&checkout).unwrap().ino();
    let moved = role.commit_marker("second");
    home.apply("b", &role.instance_yaml("b"));
    assert_eq!(role_commit(&home, "b"), moved);
    assert_eq!(the_checkout(&home), checkout);
    assert_eq!(
        std::fs::metadata(&checkout).unwrap().ino(),
        inode,
        "the checkout was cloned again"
    );
    assert_eq!(
        std::fs::read_to_string(checkout.join("marker")).unwrap(),
        "second"
    );
}

/// A checkout someone edited is refused, naming it and what to do; the
/// edit is left as it was.
#[test]
fn a_changed_checkout_is_refused() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("edited");
    home.apply("a", &role.instance_yaml("a"));
    let checkout = the_checkout(&home);
    std::fs::write(checkout.join("marker"), "edited by hand").unwrap();
    let input = home.write_input("b.yaml", &role.instance_yaml("b"));
    let err = home.fails(&["apply", "--timeout", "2m", input.to_str().unwrap()]);
    assert!(
        err.contains(&format!(
            "the role's cached checkout {} has changes jackin did not make",
            checkout.display()
        )),
        "{err}"
    );
    assert!(err.contains("git -C"), "{err}");
    assert_eq!(
        std::fs::read_to_string(checkout.join("marker")).unwrap(),
        "edited by hand"
    );
}

/// The source gone: the role is built from the cached checkout at the
/// commit it last had, and the event says so.
#[test]
fn a_source_that_cannot_be_reached_is_built_from_the_cache() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("gone");
    home.apply("a", &role.instance_yaml("a"));
    let commit = role_commit(&home, "a");
    std::fs::remove_dir_all(role.path().join(".git")).unwrap();
    home.apply("b", &role.instance_yaml("b"));
    assert_eq!(role_commit(&home, "b"), commit);
    let events = std::fs::read_to_string(home.unit("b").join(".jackin/events.jsonl")).unwrap();
    assert!(
        events.contains("RoleSourceUnreachable")
            && events.contains(&format!(
                "could not be reached; built from the cached checkout {} at {commit}",
                the_checkout(&home).display()
            )),
        "{events}"
    );
}

/// The manifest names the Dockerfile's path: the role builds from it, with
/// the repository's root as the context, and none at the root.
#[test]
fn the_manifest_names_the_dockerfile() {
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("elsewhere");
    std::fs::create_dir(role.path().join("docker")).unwrap();
    role.git(&["mv", "Dockerfile", "docker/Dockerfile"]);
    std::fs::write(
        role.path().join("jackin.role.yaml"),
        "dockerfile: docker/Dockerfile\n",
    )
    .unwrap();
    role.commit_marker("moved");
    home.apply("a", &role.instance_yaml("a"));
    let out = Command::new("docker")
        .args(["exec", &home.container("a"), "cat", "/marker"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "moved");
}

/// `role validate` reports every fault of the manifest and the Dockerfile
/// with its file, line and column, and exits 1.
#[test]
fn validate_places_each_error() {
    let home = Home::new();
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("jackin.role.yaml"),
        "agents:\n  - Claude\nenvv: []\n",
    )
    .unwrap();
    std::fs::write(dir.path().join("Dockerfile"), "FROM busybox\nFRM x\n").unwrap();
    let err = home.fails(&["role", "validate", dir.path().to_str().unwrap()]);
    let manifest = dir.path().join("jackin.role.yaml");
    assert!(
        err.contains(&format!(
            "{}:2:5: field `agents[0]`: invalid name",
            manifest.display()
        )),
        "{err}"
    );
    assert!(
        err.contains(&format!(
            "{}:3:1: field `envv`: unknown field",
            manifest.display()
        )),
        "{err}"
    );
    std::fs::write(&manifest, "dockerfile: Dockerfile\n").unwrap();
    let err = home.fails(&["role", "validate", dir.path().to_str().unwrap()]);
    assert!(
        err.contains(&format!(
            "{}:2:1: unknown instruction \"FRM\"",
            dir.path().join("Dockerfile").display()
        )),
        "{err}"
    );
}

/// `role init` writes a starter role that `role validate` passes, and
/// overwrites nothing the second time.
#[test]
fn init_writes_a_role_that_validates() {
    let home = Home::new();
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("starter");
    let dir = dir.to_str().unwrap();
    home.ok(&["role", "init", dir]);
    let out = home.ok(&["role", "validate", dir]);
    assert!(out.contains("valid"), "{out}");
    let manifest = std::fs::read_to_string(parent.path().join("starter/jackin.role.yaml")).unwrap();
    let err = home.fails(&["role", "init", dir]);
    assert!(err.contains("exists"), "{err}");
    assert_eq!(
        std::fs::read_to_string(parent.path().join("starter/jackin.role.yaml")).unwrap(),
        manifest
    );
}

/// The operator's own git hooks (a global `core.hooksPath`) never run at a
/// build's checkout of a role: the cache's checkout is jackin's.
#[test]
fn the_operators_hooks_do_not_run_at_a_roles_checkout() {
    use std::os::unix::fs::PermissionsExt;
    ensure_busybox();
    let home = Home::new();
    let role = RoleRepo::new("hooks");
    let hooks = tempfile::tempdir().unwrap();
    let ran = hooks.path().join("ran");
    let hook = hooks.path().join("post-checkout");
    std::fs::write(&hook, format!("#!/bin/sh\ntouch '{}'\n", ran.display())).unwrap();
    std::fs::set_permissions(&hook, std::fs::Permissions::from_mode(0o755)).unwrap();
    let config = hooks.path().join("gitconfig");
    std::fs::write(
        &config,
        format!("[core]\n\thooksPath = {}\n", hooks.path().display()),
    )
    .unwrap();
    home.set_env("GIT_CONFIG_GLOBAL", config.as_os_str());
    home.apply("a", &role.instance_yaml("a"));
    role.commit_marker("second");
    home.apply("b", &role.instance_yaml("b"));
    assert!(!ran.exists(), "the operator's post-checkout hook ran");
}
