//! What the agent controls, or a careless manifest names, cannot hang,
//! exhaust or fool jackin: markers and secret files that are FIFOs, links
//! or huge; file names full of terminal escapes; mount paths spelled to
//! slip past the checks; output that costs minutes to draw.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use support::terminal::Terminal;
use support::{
    Controller, Home, OpenWatch, condition, docker, ensure_busybox, instance_yaml_with,
    mknod_dev_null,
};

/// Long enough for a real run on a busy machine, short enough to catch a
/// hang well before the suite's own limits.
const LIMIT: Duration = Duration::from_secs(30);

fn state_dir(home: &Home, name: &str) -> PathBuf {
    home.path()
        .join("data")
        .join(home.container(name))
        .join("state")
}

fn mkfifo(path: &Path) {
    let made = Command::new("mkfifo").arg(path).status().unwrap();
    assert!(made.success(), "mkfifo {}", path.display());
}

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn a_fifo_as_the_marker_does_not_hang_a_purge() {
    ensure_busybox();
    let home = Home::new();
    home.apply("piped", &instance_yaml_with("piped", ""));
    let container = home.container("piped");
    docker(&["kill", "-s", "KILL", &container]);
    mkfifo(&state_dir(&home, "piped").join("exit.json"));
    let out = home.within(LIMIT, &["delete", "piped", "--force", "--timeout", "10s"]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(!home.jackin(&["get", "piped"]).status.success(), "purged");
}

#[test]
fn a_link_to_dev_zero_as_the_marker_is_malformed_not_read() {
    ensure_busybox();
    let home = Home::new();
    home.apply("linked", &instance_yaml_with("linked", ""));
    let container = home.container("linked");
    docker(&["kill", "-s", "KILL", &container]);
    std::os::unix::fs::symlink("/dev/zero", state_dir(&home, "linked").join("exit.json")).unwrap();
    let out = home.within(LIMIT, &["controller", "--once"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let obj = home.object("linked");
    let malformed = condition(&obj, "MarkerMalformed").expect("the marker is reported");
    assert!(
        malformed["message"]
            .as_str()
            .unwrap()
            .contains("symbolic link"),
        "{malformed}"
    );
    // The engine's exit state stands in: a SIGKILL, restored.
    assert_eq!(obj["status"]["session"]["exitCode"], 137);
    assert_eq!(obj["status"]["phase"], "Running");
}

/// M2: the agent (root in its container) made the marker a device node.
/// Keeping the session reads the marker: the node is reported as not a
/// regular file, the engine's exit state stands in, and the node is never
/// opened (opening some devices has effects: a watchdog arms).
#[test]
fn a_device_node_as_the_marker_is_malformed_and_never_opened() {
    ensure_busybox();
    let home = Home::new();
    home.apply("noded", &instance_yaml_with("noded", ""));
    let container = home.container("noded");
    docker(&["kill", "-s", "KILL", &container]);
    let marker = state_dir(&home, "noded").join("exit.json");
    mknod_dev_null(&marker);
    let watch = OpenWatch::on(&marker);
    let out = home.within(LIMIT, &["set-phase", "noded", "kept"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let obj = home.object("noded");
    let malformed = condition(&obj, "MarkerMalformed").expect("the marker is reported");
    assert!(
        malformed["message"]
            .as_str()
            .unwrap()
            .contains("not a regular file"),
        "{malformed}"
    );
    assert_eq!(obj["status"]["session"]["exitCode"], 137);
    assert_eq!(obj["status"]["session"]["source"], "engine");
    assert_eq!(obj["status"]["phase"], "Kept");
    assert!(
        !watch.opened(),
        "jackin opened the device node the agent made"
    );
}

#[test]
fn a_fifo_as_a_secret_file_fails_apply_at_once() {
    ensure_busybox();
    let home = Home::new();
    let fifo = home.path().join("token.fifo");
    mkfifo(&fifo);
    let spec = format!(
        "  env: [{{name: TOKEN, valueFrom: {{file: {}}}}}]\n",
        fifo.display()
    );
    let path = home.write_input("fifo.yaml", &instance_yaml_with("fifo", &spec));
    let out = home.within(
        LIMIT,
        &["apply", path.to_str().unwrap(), "--timeout", "20s"],
    );
    assert_eq!(out.status.code(), Some(1), "{}", stderr(&out));
    assert!(
        stderr(&out).contains("not a regular file"),
        "{}",
        stderr(&out)
    );
    let obj = home.object("fifo");
    assert_eq!(obj["status"]["phase"], "Failed");
    assert_eq!(
        condition(&obj, "Ready").unwrap()["reason"],
        "SecretUnavailable"
    );
}

#[test]
fn mount_paths_spelled_to_slip_past_the_checks_are_refused() {
    let home = Home::new();
    let spec = "  mounts:\n    \
                - {src: /tmp, dst: //jackin}\n    \
                - {src: /tmp, dst: //jackin/state}\n    \
                - {src: /tmp, dst: /home/agent}\n    \
                - {src: /tmp, dst: /w}\n    \
                - {src: /tmp, dst: //w}\n    \
                - {src: relative/dir, dst: /r}\n    \
                - {src: -rf, dst: /o}\n";
    let path = home.write_input("sly.yaml", &instance_yaml_with("sly", spec));
    let err = home.fails(&["apply", path.to_str().unwrap()]);
    let file = path.display().to_string();
    for (line, field, expected) in [
        (9, "spec.mounts[0].dst", "reserved"),
        (10, "spec.mounts[1].dst", "reserved"),
        (11, "spec.mounts[2].dst", "reserved"),
        (13, "spec.mounts[4].dst", "normal form"),
        (14, "spec.mounts[5].src", "relative"),
        (15, "spec.mounts[6].src", "relative"),
    ] {
        let found = err.lines().any(|l| {
            l.starts_with(&format!("error: {file}:{line}:"))
                && l.contains(field)
                && l.contains(expected)
        });
        assert!(found, "no {field} ({expected}) at line {line} in:\n{err}");
    }
    assert!(
        !home.path().join("data").exists(),
        "nothing was written for invalid input"
    );
}

#[test]
fn file_names_full_of_escapes_reach_the_terminal_escaped() {
    ensure_busybox();
    let home = Home::new();
    let repo = support::RoleRepo::new("host");
    let spec = format!(
        "  mounts: [{{src: {}, dst: /workspace/app, isolation: clone}}]\n",
        repo.path().display()
    );
    home.apply("sly", &instance_yaml_with("sly", &spec));
    let checkout = home.object("sly")["status"]["mounts"][0]["path"]
        .as_str()
        .unwrap()
        .to_owned();
    // A name that, printed raw, erases its line and the one above it.
    let name = "draft\r\u{1b}[2K\u{1b}[1A\u{1b}[2Kall clean";
    std::fs::write(Path::new(&checkout).join(name), "work").unwrap();
    home.ok(&["controller", "--once"]);
    let describe = home.ok(&["describe", "sly"]);
    assert!(
        !describe.contains('\u{1b}') && !describe.contains('\r'),
        "{describe:?}"
    );
    assert!(describe.contains("draft\\r\\u{1b}[2K"), "{describe}");
    // The purge prompt's evidence, without a terminal: refused, escaped.
    let out = home.jackin(&["delete", "sly"]);
    assert_eq!(out.status.code(), Some(1));
    let err = stderr(&out);
    assert!(!err.contains('\u{1b}') && !err.contains('\r'), "{err:?}");
    assert!(err.contains("draft\\r"), "{err}");
}

// ---------------------------------------------------------------------------
// A hostile checkout: every place git takes a program from, planted in the
// agent's tree, never runs that program on the host, whatever jackin does
// with the instance; and unfinished work (inside submodules too) is still
// seen. One case per execution vector; each plants a canary command.
// ---------------------------------------------------------------------------

/// A host repository with one commit, and an upstream for submodules.
struct Repos {
    dir: tempfile::TempDir,
}

impl Repos {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        for name in ["host", "sub-upstream", "inner-upstream"] {
            let repo = dir.path().join(name);
            support::git(
                dir.path(),
                &["init", "--quiet", "--initial-branch=main", name],
            );
            std::fs::write(repo.join("f"), "f\n").unwrap();
            commit_all(&repo, name);
        }
        // The submodule upstream has a nested submodule of its own.
        let sub = dir.path().join("sub-upstream");
        add_submodule(&sub, &dir.path().join("inner-upstream"), "inner");
        commit_all(&sub, "inner");
        Self { dir }
    }

    fn host(&self) -> PathBuf {
        self.dir.path().join("host")
    }

    fn upstream(&self) -> PathBuf {
        self.dir.path().join("sub-upstream")
    }

    /// Where canaries land: each one's existence means its program ran.
    fn canary(&self, name: &str) -> PathBuf {
        self.dir.path().join(format!("canary-{name}"))
    }
}

/// git with an identity and the file transport allowed (the test's own
/// git, unconfined: it runs before anything hostile is planted).
fn test_git(repo: &Path, args: &[&str]) -> String {
    let mut argv = vec![
        "-c",
        "user.email=t@jackin.dev",
        "-c",
        "user.name=t",
        "-c",
        "protocol.file.allow=always",
    ];
    argv.extend_from_slice(args);
    support::git(repo, &argv)
}

fn commit_all(repo: &Path, message: &str) {
    test_git(repo, &["add", "-A"]);
    test_git(repo, &["commit", "--quiet", "-m", message]);
}

fn add_submodule(repo: &Path, upstream: &Path, at: &str) {
    test_git(
        repo,
        &[
            "submodule",
            "--quiet",
            "add",
            upstream.to_str().unwrap(),
            at,
        ],
    );
}

/// A shell command that leaves `canary` behind and passes its input on (a
/// filter must). Quoted for a git config value.
fn canary_command(canary: &Path) -> String {
    format!("sh -c \"touch {}; cat\"", canary.display())
}

/// Rewrites `file` with the same contents after the index's time stamp, so
/// that `status` must read it again (through any filter) to compare.
fn make_stat_dirty(file: &Path) {
    let contents = std::fs::read(file).unwrap();
    std::thread::sleep(Duration::from_millis(1100));
    std::fs::write(file, contents).unwrap();
}

/// The execution vectors of the corpus.
#[derive(Clone, Copy, Debug)]
enum Vector {
    /// The checkout's own config: `core.fsmonitor`, a filter named by
    /// `.gitattributes`, and the settings status never needs (textconv, a
    /// merge driver, the pager, `core.sshCommand`, `gpg.program` with
    /// signatures shown, `diff.external`, a hooks directory).
    TopLevel,
    /// A long-running filter (`filter.<d>.process`) named in
    /// `.git/info/attributes`.
    InfoAttributes,
    /// A submodule whose own config defines the filter its attributes name.
    Submodule,
    /// The same one level deeper.
    NestedSubmodule,
    /// `include.path` to a file in the checkout that defines the filter.
    Include,
    /// `includeIf "gitdir:/"` to the same.
    IncludeIf,
    /// A worktree's `config.worktree` in its (agent-writable) entry, in a
    /// host repository whose operator enabled `extensions.worktreeConfig`.
    WorktreeConfig,
}

impl Vector {
    fn isolation(self) -> &'static str {
        match self {
            Self::WorktreeConfig => "worktree",
            _ => "clone",
        }
    }

    /// The file a filter has to read for `status` to compare it.
    fn filtered_file(self, checkout: &Path) -> PathBuf {
        match self {
            Self::Submodule => checkout.join("sub/f"),
            Self::NestedSubmodule => checkout.join("sub/inner/f"),
            _ => checkout.join("f"),
        }
    }

    /// The unfinished work the gate must still see.
    fn unfinished(self) -> &'static str {
        match self {
            // Added by the agent (`A`), with changes inside it (`M`).
            Self::Submodule | Self::NestedSubmodule => "AM sub",
            _ => "?? wip.txt",
        }
    }

    /// Plants the vector in the agent's checkout, every program it names
    /// leaving `canary` behind. Planting twice replaces the first.
    fn plant(self, repos: &Repos, checkout: &Path, canary: &Path) {
        let run = canary_command(canary);
        let config = |repo: &Path, args: &[&str]| {
            let mut argv = vec!["config"];
            argv.extend_from_slice(args);
            support::git(repo, &argv);
        };
        match self {
            Self::TopLevel => {
                std::fs::write(
                    checkout.join(".gitattributes"),
                    "* filter=top diff=top merge=top\n",
                )
                .unwrap();
                config(checkout, &["core.fsmonitor", &run]);
                config(checkout, &["filter.top.clean", &run]);
                config(checkout, &["filter.top.smudge", &run]);
                config(checkout, &["diff.top.textconv", &run]);
                config(checkout, &["merge.top.driver", &run]);
                config(checkout, &["core.pager", &run]);
                config(checkout, &["core.sshCommand", &run]);
                config(checkout, &["gpg.program", &run]);
                config(checkout, &["log.showSignature", "true"]);
                config(checkout, &["diff.external", &run]);
                let hooks = checkout.join(".git/evil-hooks");
                std::fs::create_dir_all(&hooks).unwrap();
                for hook in [
                    "post-index-change",
                    "pre-commit",
                    "post-checkout",
                    "reference-transaction",
                ] {
                    let path = hooks.join(hook);
                    std::fs::write(&path, format!("#!/bin/sh\ntouch {}\n", canary.display()))
                        .unwrap();
                    std::fs::set_permissions(
                        &path,
                        std::os::unix::fs::PermissionsExt::from_mode(0o755),
                    )
                    .unwrap();
                }
                config(checkout, &["core.hooksPath", hooks.to_str().unwrap()]);
            }
            Self::InfoAttributes => {
                std::fs::write(checkout.join(".git/info/attributes"), "* filter=inf\n").unwrap();
                config(checkout, &["filter.inf.process", &run]);
            }
            Self::Submodule | Self::NestedSubmodule => {
                if !checkout.join("sub/.git").exists() {
                    add_submodule(checkout, &repos.upstream(), "sub");
                    test_git(
                        &checkout.join("sub"),
                        &["submodule", "--quiet", "update", "--init"],
                    );
                }
                let deep = if matches!(self, Self::Submodule) {
                    checkout.join("sub")
                } else {
                    checkout.join("sub/inner")
                };
                std::fs::write(deep.join(".gitattributes"), "* filter=subevil\n").unwrap();
                config(&deep, &["filter.subevil.clean", &run]);
            }
            Self::Include | Self::IncludeIf => {
                let included = checkout.join(".git/evil.inc");
                let file = included.to_str().unwrap();
                config(checkout, &["--file", file, "filter.inc.clean", &run]);
                config(checkout, &["--file", file, "core.fsmonitor", &run]);
                std::fs::write(checkout.join(".gitattributes"), "* filter=inc\n").unwrap();
                let key = if matches!(self, Self::Include) {
                    "include.path"
                } else {
                    "includeIf.gitdir:/.path"
                };
                config(checkout, &[key, file]);
            }
            Self::WorktreeConfig => {
                let own = support::git(
                    checkout,
                    &["rev-parse", "--path-format=absolute", "--git-dir"],
                );
                let file = Path::new(&own).join("config.worktree");
                let file = file.to_str().unwrap();
                // The agent's repository is its own: it turns the extension
                // on itself.
                config(checkout, &["extensions.worktreeConfig", "true"]);
                config(checkout, &["--file", file, "core.fsmonitor", &run]);
                config(checkout, &["--file", file, "filter.wt.clean", &run]);
                std::fs::write(checkout.join(".gitattributes"), "* filter=wt\n").unwrap();
            }
        }
    }
}

/// Plants `vector` in a fresh instance's checkout; shows (with the test's
/// own, unconfined git) that the planted program does run on a plain
/// `git status`; then drives jackin through describe, keep, resume, a
/// controller pass, prune and a forced purge, and checks after each that
/// the program never ran and that the unfinished work was seen.
fn hostile_checkout(vector: Vector) {
    ensure_busybox();
    let home = Home::new();
    let repos = Repos::new();
    if matches!(vector, Vector::WorktreeConfig) {
        support::git(
            &repos.host(),
            &["config", "extensions.worktreeConfig", "true"],
        );
    }
    let name = "hostile";
    let spec = format!(
        "  command: [sleep, \"3600\"]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: {}}}]\n",
        repos.host().display(),
        vector.isolation()
    );
    home.apply(name, &instance_yaml_with(name, &spec));
    let checkout = home.checkout(name);
    std::fs::write(checkout.join("wip.txt"), "the agent's unfinished work\n").unwrap();

    // The probe: planted with its own canary, a plain status runs it.
    let probe = repos.canary("probe");
    vector.plant(&repos, &checkout, &probe);
    make_stat_dirty(&vector.filtered_file(&checkout));
    let mut plain = Command::new("git");
    plain.args(["--no-optional-locks", "-C"]).arg(&checkout);
    // A worktree's repository is beside its checkout (its `.git` names it
    // where the container sees it).
    if let Some(repo) = jackin_checkouts::worktree::repository_beside(&checkout) {
        plain
            .arg("--git-dir")
            .arg(repo)
            .arg("--work-tree")
            .arg(&checkout);
    }
    let _ = plain.args(["status", "--porcelain"]).output().unwrap();
    assert!(
        probe.exists(),
        "{vector:?}: the vector does not run a program at all"
    );

    let canary = repos.canary("jackin");
    vector.plant(&repos, &checkout, &canary);
    make_stat_dirty(&vector.filtered_file(&checkout));

    let described = home.within(LIMIT, &["describe", name]);
    assert!(described.status.success(), "{}", stderr(&described));
    let shown = String::from_utf8_lossy(&described.stdout);
    assert!(
        shown.contains(vector.unfinished()),
        "{vector:?}: describe does not show the unfinished work {:?}:\n{shown}",
        vector.unfinished()
    );
    let steps: [&[&str]; 5] = [
        &["set-phase", name, "kept"],
        &["set-phase", name, "running"],
        &["controller", "--once"],
        &["prune"],
        &["set-phase", name, "purged", "--force"],
    ];
    assert!(
        !canary.exists(),
        "{vector:?}: describe ran the agent's program"
    );
    for step in steps {
        let out = home.within(LIMIT, step);
        assert!(
            out.status.success(),
            "{vector:?}: jackin {step:?}: {}",
            stderr(&out)
        );
        assert!(
            !canary.exists(),
            "{vector:?}: jackin {step:?} ran the agent's program"
        );
    }
    assert!(!home.jackin(&["get", name]).status.success(), "purged");
}

#[test]
fn hostile_checkout_top_level_config_runs_nothing_on_the_host() {
    hostile_checkout(Vector::TopLevel);
}

#[test]
fn hostile_checkout_info_attributes_process_filter_runs_nothing_on_the_host() {
    hostile_checkout(Vector::InfoAttributes);
}

/// H3.
#[test]
fn hostile_checkout_submodule_filter_runs_nothing_on_the_host() {
    hostile_checkout(Vector::Submodule);
}

#[test]
fn hostile_checkout_nested_submodule_filter_runs_nothing_on_the_host() {
    hostile_checkout(Vector::NestedSubmodule);
}

#[test]
fn hostile_checkout_include_runs_nothing_on_the_host() {
    hostile_checkout(Vector::Include);
}

#[test]
fn hostile_checkout_include_if_runs_nothing_on_the_host() {
    hostile_checkout(Vector::IncludeIf);
}

#[test]
fn hostile_checkout_worktree_config_runs_nothing_on_the_host() {
    hostile_checkout(Vector::WorktreeConfig);
}

// ---------------------------------------------------------------------------
// A worktree's `.git` file redirected by the agent at an operator's worktree
// entry (of the same repository, H1, or of another one, H2): jackin binds,
// repairs and removes only its own recorded entry, so neither admin
// directory is bound into a container or changed, and the operator's
// worktree lists stay as they were.
// ---------------------------------------------------------------------------

/// Every file under `dir` with its contents.
fn tree_contents(dir: &Path) -> std::collections::BTreeMap<PathBuf, Vec<u8>> {
    let mut out = std::collections::BTreeMap::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(at) = stack.pop() {
        for entry in std::fs::read_dir(&at).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
            } else {
                out.insert(path.clone(), std::fs::read(&path).unwrap());
            }
        }
    }
    out
}

/// `git worktree list --porcelain` of `repo`, less the entry of `except`.
fn worktrees_except(repo: &Path, except: &Path) -> String {
    support::git(repo, &["worktree", "list", "--porcelain"])
        .split("\n\n")
        .filter(|entry| !entry.contains(except.to_str().unwrap()))
        .collect::<Vec<_>>()
        .join("\n\n")
}

/// Which repository the agent points its `.git` at.
#[derive(Clone, Copy, Debug)]
enum Redirect {
    /// An operator's worktree of the host repository itself (H1).
    SameRepository,
    /// An operator's worktree of another repository (H2).
    OtherRepository,
    /// The checkout's `.git` stays; its own entry's `commondir` (which the
    /// agent can write) names the other repository's git directory.
    CommonDir,
}

#[expect(
    clippy::too_many_lines,
    reason = "a test scenario told in the order an operator meets it"
)]
fn redirected_dot_git(redirect: Redirect) {
    ensure_busybox();
    let home = Home::new();
    let repos = Repos::new();
    let host = repos.host();
    // The operator's own worktrees: one of the host repository, one of
    // another repository of theirs.
    let victim = repos.dir.path().join("victim");
    support::git(
        repos.dir.path(),
        &["clone", "--quiet", host.to_str().unwrap(), "victim"],
    );
    let host_wt = repos.dir.path().join("host-op");
    let victim_wt = repos.dir.path().join("victim-op");
    test_git(
        &host,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "op",
            host_wt.to_str().unwrap(),
        ],
    );
    test_git(
        &victim,
        &[
            "worktree",
            "add",
            "--quiet",
            "-b",
            "op",
            victim_wt.to_str().unwrap(),
        ],
    );
    let admin_of = |repo: &Path, wt: &Path| {
        PathBuf::from(support::git(
            wt,
            &["rev-parse", "--path-format=absolute", "--git-dir"],
        ))
        .strip_prefix(repo)
        .map(|rel| repo.join(rel))
        .unwrap()
    };
    let host_admin = admin_of(&host, &host_wt);
    let victim_admin = admin_of(&victim, &victim_wt);
    let target = match redirect {
        Redirect::SameRepository => &host_admin,
        Redirect::OtherRepository | Redirect::CommonDir => &victim_admin,
    };

    let name = "redirected";
    let spec = format!(
        "  command: [sleep, \"3600\"]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
        host.display()
    );
    home.apply(name, &instance_yaml_with(name, &spec));
    let container = home.container(name);
    let checkout = home.checkout(name);
    let before = (
        tree_contents(&host_admin),
        tree_contents(&victim_admin),
        worktrees_except(&host, &checkout),
        worktrees_except(&victim, &checkout),
    );
    let unchanged = |when: &str| {
        let now = (
            tree_contents(&host_admin),
            tree_contents(&victim_admin),
            worktrees_except(&host, &checkout),
            worktrees_except(&victim, &checkout),
        );
        assert!(
            now.0 == before.0,
            "{redirect:?}: {when}: the host repository's operator entry changed"
        );
        assert!(
            now.1 == before.1,
            "{redirect:?}: {when}: the other repository's operator entry changed"
        );
        assert_eq!(
            now.2, before.2,
            "{redirect:?}: {when}: the host's worktree list changed"
        );
        assert_eq!(
            now.3, before.3,
            "{redirect:?}: {when}: the other worktree list changed"
        );
    };

    // The agent, inside its container, points its checkout elsewhere: its
    // `.git`, or its own repository's `commondir`.
    let rewrite = match redirect {
        Redirect::CommonDir => format!(
            "echo '{}' > \"$(sed 's/^gitdir: //' /workspace/app/.git)/commondir\"",
            victim.join(".git").display()
        ),
        _ => format!("echo 'gitdir: {}' > /workspace/app/.git", target.display()),
    };
    docker(&["exec", &container, "sh", "-c", &rewrite]);
    home.ok(&["set-phase", name, "kept"]);
    unchanged("after the stop");
    match redirect {
        // jackin never reads the checkout's `.git`: it names the unit's
        // repository again at the next start.
        Redirect::SameRepository | Redirect::OtherRepository => {
            home.ok(&["set-phase", name, "running"]);
            let dot_git = std::fs::read_to_string(checkout.join(".git")).unwrap();
            let repo = home
                .unit(name)
                .join("git/repo")
                .join(checkout.file_name().unwrap());
            assert_eq!(dot_git, format!("gitdir: {}\n", repo.display()));
        }
        // A repository that names another as its own is not started, nor
        // read by jackin's git.
        Redirect::CommonDir => {
            let err = home.fails(&["set-phase", name, "running"]);
            assert!(err.contains("names another repository"), "{err}");
            assert_eq!(
                condition(&home.object(name), "Ready").unwrap()["reason"],
                "ResumeConflict"
            );
        }
    }
    // Nothing of either operator entry is bound into any container made.
    let containers = docker(&["ps", "-aq", "--filter", &format!("name=^{container}$")]);
    for id in containers.split_whitespace() {
        let mounts = docker(&["inspect", "--format", "{{json .Mounts}}", id]);
        for admin in [&host_admin, &victim_admin] {
            assert!(
                !mounts.contains(admin.to_str().unwrap()),
                "{redirect:?}: {mounts}"
            );
        }
    }
    unchanged("after the resume");

    // The purge removes jackin's checkout, repository and refs only.
    home.ok(&["set-phase", name, "purged", "--force"]);
    assert!(!home.jackin(&["get", name]).status.success(), "purged");
    assert!(!checkout.exists(), "{redirect:?}: the checkout stays");
    unchanged("after the purge");
    // The unit's pin went with it (a save of its work pins the base anew).
    let refs = support::git(
        &host,
        &["for-each-ref", "--format=%(refname)", "refs/jackin/base/"],
    );
    assert!(refs.is_empty(), "{redirect:?}: {refs}");
}

/// H1.
#[test]
fn a_dot_git_redirected_at_an_operator_worktree_of_the_same_repository_binds_and_changes_nothing() {
    redirected_dot_git(Redirect::SameRepository);
}

/// H2.
#[test]
fn a_dot_git_redirected_at_an_operator_worktree_of_another_repository_binds_and_changes_nothing() {
    redirected_dot_git(Redirect::OtherRepository);
}

/// The agent's own entry repointed at another repository's git directory.
#[test]
fn a_worktree_entry_whose_commondir_the_agent_rewrote_binds_and_changes_nothing() {
    redirected_dot_git(Redirect::CommonDir);
}

/// A worktree whose directory went missing is made again from its scratch
/// branch: the agent's commits, with attributes the agent wrote naming a
/// filter driver (here one the operator configured). The files come back,
/// and no driver, and no hook of the host repository, runs.
#[test]
fn a_worktree_made_again_from_the_agents_branch_runs_no_driver_the_branch_names() {
    ensure_busybox();
    let home = Home::new();
    let repos = Repos::new();
    let host = repos.host();
    let canary = repos.canary("smudge");
    support::git(
        &host,
        &["config", "filter.opf.smudge", &canary_command(&canary)],
    );
    support::git(&host, &["config", "filter.opf.clean", "cat"]);
    let hook = host.join(".git/hooks/post-checkout");
    std::fs::write(
        &hook,
        format!("#!/bin/sh\ntouch {}\n", repos.canary("hook").display()),
    )
    .unwrap();
    std::fs::set_permissions(&hook, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let name = "remade";
    let spec = format!(
        "  command: [sleep, \"3600\"]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
        host.display()
    );
    home.apply(name, &instance_yaml_with(name, &spec));
    // The unit's repository is its own: no hook of the host repository
    // runs, not even on the operator's own tree.
    assert!(!repos.canary("hook").exists(), "the host's hook ran");
    let checkout = home.checkout(name);
    // The agent's commit: attributes naming the driver, and its work.
    std::fs::write(checkout.join(".gitattributes"), "* filter=opf\n").unwrap();
    std::fs::write(checkout.join("work.txt"), "the agent's work\n").unwrap();
    commit_all(&checkout, "agent");
    home.ok(&["set-phase", name, "kept"]);
    std::fs::remove_dir_all(&checkout).unwrap();

    home.ok(&["set-phase", name, "running"]);
    assert_eq!(
        std::fs::read_to_string(checkout.join("work.txt")).unwrap(),
        "the agent's work\n",
        "the agent's work came back"
    );
    assert!(
        !canary.exists(),
        "the filter the agent's attributes name ran on the host"
    );
    assert!(
        !repos.canary("hook").exists(),
        "the host's hook ran over the agent's tree"
    );
    home.ok(&["set-phase", name, "purged", "--force"]);
}

/// Two instances on one repository: each container sees only its own
/// repository (no ref of the host, no other unit's), and its commit reaches
/// the host's scratch branch only through jackin, checked.
#[test]
fn a_units_repository_is_its_own_and_reaches_the_host_only_checked() {
    ensure_busybox();
    let home = Home::new();
    let repos = Repos::new();
    let host = repos.host();
    let spec = format!(
        "  command: [sleep, \"3600\"]\n  mounts: [{{src: {}, dst: /workspace/app, isolation: worktree}}]\n",
        host.display()
    );
    for name in ["wa", "wb"] {
        home.apply(name, &instance_yaml_with(name, &spec));
    }
    let (a, b) = (home.container("wa"), home.container("wb"));
    // Its repository holds its own branch only; the host's refs are not
    // there to see.
    let repo = docker(&["exec", &a, "sed", "s/^gitdir: //", "/workspace/app/.git"]);
    let seen = docker(&[
        "exec",
        &a,
        "ls",
        &format!("{repo}/refs/heads/jackin/scratch"),
    ]);
    assert_eq!(seen.split_whitespace().collect::<Vec<_>>(), [a.as_str()]);
    let host_refs = host.join(".git/refs");
    let listed = docker(&[
        "exec",
        &a,
        "sh",
        "-c",
        &format!("ls {} 2>&1; true", host_refs.display()),
    ]);
    assert!(listed.contains("No such file"), "{listed}");

    // The agent's commit: its object in its repository, its ref there too
    // (written on the host, as git in the container writes them).
    let base = support::git(&host, &["rev-parse", "HEAD"]);
    let ours = format!("refs/heads/jackin/scratch/{a}");
    let unit_repo = home
        .unit("wa")
        .join("git/repo")
        .join(home.checkout("wa").file_name().unwrap());
    let commit = test_git(
        &unit_repo,
        &[
            "commit-tree",
            "-p",
            &base,
            "-m",
            "agent",
            &format!("{base}^{{tree}}"),
        ],
    );
    test_git(&unit_repo, &["update-ref", &ours, &commit]);
    assert_eq!(
        support::git(&host, &["rev-parse", &ours]),
        base,
        "not before jackin"
    );
    assert!(
        Command::new("git")
            .arg("-C")
            .arg(&host)
            .args(["cat-file", "-e", &commit])
            .status()
            .is_ok_and(|s| !s.success()),
        "the agent's object is in the host before jackin published it"
    );
    let described = home.ok(&["describe", "wa"]);
    assert!(
        described.contains("1 commits since the base"),
        "{described}"
    );
    // A look publishes nothing; the stop does.
    assert_eq!(support::git(&host, &["rev-parse", &ours]), base);
    home.ok(&["set-phase", "wa", "kept"]);
    assert_eq!(support::git(&host, &["rev-parse", &ours]), commit);
    let theirs = format!("refs/heads/jackin/scratch/{b}");
    assert_eq!(support::git(&host, &["rev-parse", &theirs]), base);
    for name in ["wa", "wb"] {
        home.ok(&["set-phase", name, "purged", "--force"]);
    }
}

/// The most CPU one process of jackin may spend on a megabyte of the
/// agent's output. Generous: the debug build draws it in a few seconds,
/// where each look cost minutes before the count of a repeat was clipped
/// (N2).
const CPU_BOUND: Duration = Duration::from_secs(20);

/// Waits until `done`, failing as soon as `pid` and the processes under it
/// have used more than [`CPU_BOUND`] of CPU; returns what they used.
fn done_within_cpu(what: &str, pid: u32, mut done: impl FnMut() -> bool) -> Duration {
    // Only a hang that burns no CPU meets this.
    let hung = std::time::Instant::now() + Duration::from_secs(600);
    loop {
        let used = support::cpu::cpu_time(pid);
        assert!(used <= CPU_BOUND, "{what}: {used:?} of CPU, and not done");
        if done() {
            let used = support::cpu::cpu_time(pid);
            assert!(used <= CPU_BOUND, "{what}: {used:?} of CPU");
            eprintln!("{what}: {used:?} of CPU");
            return used;
        }
        assert!(std::time::Instant::now() < hung, "{what}: hung");
        std::thread::sleep(Duration::from_millis(250));
    }
}

/// Whether the row of instance `name` on `top`'s screen shows `text`.
fn top_row_shows(screen: &str, name: &str, text: &str) -> bool {
    screen.lines().any(|line| {
        line.trim_start_matches(['▸', ' '])
            .starts_with(&format!("{name} "))
            && line.contains(text)
    })
}

/// Issue 53, N2: a megabyte of `ESC [ 65535 b` (repeat the last character
/// 65,535 times) in the agent's output costs seconds of CPU, not minutes,
/// wherever jackin draws it: `logs --tail 5` on a terminal, the replay of
/// an attach, `top`'s first frame (which draws the log's end), and the
/// watchers of the live output, `top`'s and a controller's with
/// `--watch-output` (the agent writes a second megabyte once they watch).
/// What is bounded is the CPU time of each of jackin's processes.
#[test]
fn n2_a_megabyte_of_repeats_costs_seconds_of_cpu_at_most() {
    ensure_busybox();
    let home = Home::new();
    let megabyte = r#"printf x; yes "$(printf '\033[65535b')" | head -n 120000 | tr -d '\n'"#;
    let agent = format!(
        "{megabyte}; echo; echo first-done; until [ -e \"$HOME/go\" ]; do sleep 0.2; done; \
         {megabyte}; echo; echo second-done; exec sleep 3600"
    );
    let spec = format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(&agent).unwrap()
    );
    home.apply("repeater", &instance_yaml_with("repeater", &spec));
    let written = |marker: &str| {
        home.ok(&["logs", "repeater", "--tail", "1"])
            .contains(marker)
    };
    support::eventually(Duration::from_secs(60), "the first megabyte", || {
        written("first-done")
    });

    let logs = Terminal::start(&home, "logs repeater --tail 5; echo logs-returned-$?");
    done_within_cpu("logs --tail 5 on a terminal", logs.pid(), || {
        logs.screen().contains("logs-returned-0")
    });
    assert!(logs.screen().contains("first-done"), "{}", logs.screen());

    let attach = Terminal::start(&home, "attach repeater; echo attach-returned-$?");
    done_within_cpu("the replay of attach", attach.pid(), || {
        attach.screen().contains("first-done")
    });
    attach.keys(&["C-p", "C-q"]);
    attach.wait_for("attach-returned-0", 1);

    let top = Terminal::start_as(&home, "top", "xterm");
    // Wide enough for the LAST LINE column.
    top.resize(200, 40);
    done_within_cpu("top's first frame", top.pid(), || {
        top_row_shows(&top.screen(), "repeater", "first-done")
    });

    let controller = Controller::start(&home, &["--watch-output"]);
    // Its first look opens its watch of the output, and is published.
    support::eventually(Duration::from_secs(120), "the controller's look", || {
        std::fs::read_to_string(home.path().join("looks.json"))
            .is_ok_and(|looks| looks.contains("\"repeater\""))
    });
    std::fs::write(home.unit("repeater").join("home/go"), "").unwrap();
    done_within_cpu("top watching the output", top.pid(), || {
        top_row_shows(&top.screen(), "repeater", "second-done")
    });
    // The controller shows nothing of the screens it draws: the work is
    // done once the second megabyte is written and its CPU stops rising.
    support::eventually(Duration::from_secs(60), "the second megabyte", || {
        written("second-done")
    });
    let mut samples: Vec<Duration> = Vec::new();
    done_within_cpu("the watching controller", controller.pid(), || {
        samples.push(support::cpu::cpu_time(controller.pid()));
        // 2 s of samples, 250 ms apart, less than 0.1 s apart in CPU.
        samples.len() > 8
            && samples[samples.len() - 1] - samples[samples.len() - 9] < Duration::from_millis(100)
    });
}
