//! The discard's save and restore, end to end against real git: each kind
//! of unfinished work saved, its checkout removed, and the work brought
//! back into a new directory and into the host repository.

use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use jackin_api::instance::{Isolation, MountSpec};
use jiff::Timestamp;

use super::*;
use crate::git;
use crate::isolation::{self, IsolationRecord};
use jackin_files::layout::Layout;

fn git(dir: &Path, args: &[&str]) -> String {
    let prefix = crate::worktree::testing::git_argv(dir);
    let mut argv: Vec<&str> = prefix.iter().map(String::as_str).collect();
    argv.extend(["-c", "user.email=t@jackin.dev", "-c", "user.name=t"]);
    argv.extend_from_slice(args);
    String::from_utf8(git::run(&argv).unwrap())
        .unwrap()
        .trim()
        .to_owned()
}

/// A host repository with one commit on `main`, and a unit in a
/// scratch home with a checkout of it.
struct Fixture {
    dir: tempfile::TempDir,
    layout: Layout,
    host: PathBuf,
    record: IsolationRecord,
}

const UNIT: &str = "jk-abc123-t";

impl Fixture {
    fn new(isolation: Isolation) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("host");
        git::run(&[
            "init",
            "--quiet",
            "--initial-branch=main",
            host.to_str().unwrap(),
        ])
        .unwrap();
        std::fs::write(host.join("a.txt"), "one\n").unwrap();
        std::fs::write(host.join(".gitignore"), "build/\n").unwrap();
        git(&host, &["add", "."]);
        git(&host, &["commit", "--quiet", "-m", "base"]);
        let layout = Layout::new(dir.path().join("home"));
        let mount = mount_of(&host, isolation);
        isolation::prepare(&layout, UNIT, std::slice::from_ref(&mount)).unwrap();
        let record = isolation::read_records(&layout, UNIT).unwrap().remove(0);
        Self {
            dir,
            layout,
            host,
            record,
        }
    }

    fn checkout(&self) -> PathBuf {
        PathBuf::from(&self.record.path)
    }

    /// The mount of the host repository a new unit's spec would have.
    fn mount(&self, isolation: Isolation) -> MountSpec {
        mount_of(&self.host, isolation)
    }
}

/// A unit's checkout `c` of the save `inst`, the agent's own once it
/// wrote in it: a second restore into the unit is refused, and the file it
/// wrote stays as it is.
fn never_restored_over(layout: &Layout, unit: &str, mounts: &[MountSpec], c: &Path) {
    std::fs::write(c.join("new.txt"), "the agent's\n").unwrap();
    let err = restore_into_unit(layout, "inst", unit, mounts).unwrap_err();
    assert!(err.to_string().contains("never"), "{err}");
    assert_eq!(
        std::fs::read_to_string(c.join("new.txt")).unwrap(),
        "the agent's\n"
    );
}

/// The host repository `host` mounted at `/workspace/app` as `isolation`.
fn mount_of(host: &Path, isolation: Isolation) -> MountSpec {
    MountSpec {
        src: host.to_str().unwrap().to_owned(),
        dst: "/workspace/app".into(),
        readonly: false,
        isolation,
        include: Vec::new(),
    }
}

/// A clone where the agent left every kind of unfinished work: saved,
/// listed, removed with the checkout, and brought back whole.
/// An index the agent wrote with entries git refuses (`../escape.txt`,
/// `.git/hooks/pre-commit`): the save leaves those out and lists them,
/// and the rest (the good commit, the other staged file) comes back,
/// into the host and into a directory of its own (L3).
#[test]
fn l3_a_save_with_a_refused_index_entry_saves_the_rest() {
    let f = Fixture::new(Isolation::Clone);
    let c = f.checkout();
    std::fs::write(c.join("good.txt"), "good\n").unwrap();
    git(&c, &["add", "good.txt"]);
    git(&c, &["commit", "--quiet", "-m", "good work"]);
    let good = git(&c, &["rev-parse", "HEAD"]);
    std::fs::create_dir_all(c.join("aa")).unwrap();
    std::fs::create_dir_all(c.join(".gix/hooks")).unwrap();
    std::fs::create_dir_all(c.join(".gABCit")).unwrap();
    std::fs::write(c.join(".gABCit/config"), "[core]\n").unwrap();
    std::fs::write(c.join("aa/escape.txt"), "escape\n").unwrap();
    std::fs::write(c.join(".gix/hooks/pre-commit"), "touch /tmp/x\n").unwrap();
    std::fs::write(c.join("staged.txt"), "staged\n").unwrap();
    git(
        &c,
        &[
            "add",
            "aa/escape.txt",
            ".gix/hooks/pre-commit",
            ".gABCit/config",
            "staged.txt",
        ],
    );
    // The same index with two paths no git would write, its checksum
    // made again.
    let index = c.join(".git/index");
    let mut bytes = std::fs::read(&index).unwrap();
    for (from, to) in [
        (&b"aa/escape.txt"[..], &b"../escape.txt"[..]),
        (b".gix/", b".git/"),
        (b".gABCit/", ".g\u{200c}it/".as_bytes()),
    ] {
        let at = bytes.windows(from.len()).position(|w| w == from).unwrap();
        bytes[at..at + from.len()].copy_from_slice(to);
    }
    let body = bytes.len() - 20;
    let scratch = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(scratch.path(), &bytes[..body]).unwrap();
    let sum = std::process::Command::new("sha1sum")
        .arg(scratch.path())
        .output()
        .unwrap();
    let sum = String::from_utf8(sum.stdout).unwrap();
    let sum: Vec<u8> = (0..40)
        .step_by(2)
        .map(|i| u8::from_str_radix(&sum[i..i + 2], 16).unwrap())
        .collect();
    bytes[body..].copy_from_slice(&sum);
    std::fs::write(&index, &bytes).unwrap();
    std::fs::remove_dir_all(c.join("aa")).unwrap();
    std::fs::remove_dir_all(c.join(".gix")).unwrap();
    std::fs::remove_dir_all(c.join(".gABCit")).unwrap();

    let saved = save_before_discard(&f.layout, UNIT, "l3").unwrap();
    let checkout = &saved.checkouts[0];
    assert!(checkout.index.is_some(), "{checkout:?}");
    isolation::remove_all(&f.layout, UNIT).unwrap();

    let to = f.dir.path().join("l3-restored");
    restore(&f.layout, "l3", Some(&to), None).unwrap();
    assert_eq!(git(&to, &["rev-parse", "HEAD"]), good);
    assert_eq!(
        std::fs::read_to_string(to.join("staged.txt")).unwrap(),
        "staged\n"
    );
    let staged = git(&to, &["diff", "--cached", "--name-only"]);
    assert_eq!(staged, "staged.txt");
    assert!(!f.dir.path().join("escape.txt").exists());
    restore(&f.layout, "l3", None, None).unwrap();
    let restored = git(
        &f.host,
        &[
            "for-each-ref",
            "--format=%(refname)",
            "refs/heads/jackin/restored/",
        ],
    );
    assert!(!restored.is_empty(), "nothing restored into the host");
    let skipped = checkout.files.skipped_listed.join("\n");
    for path in [
        "../escape.txt",
        ".git/hooks/pre-commit",
        ".g\u{200c}it/config",
    ] {
        assert!(skipped.contains(path), "{path} not listed: {skipped}");
    }
}

#[test]
fn a_clones_work_is_saved_and_comes_back_whole() {
    let f = Fixture::new(Isolation::Clone);
    let feature = leave_every_kind_of_work(&f.checkout());
    let saved = save_before_discard(&f.layout, UNIT, "inst").unwrap();
    assert_every_kind_was_saved(&f, &saved, &feature);
    isolation::remove_all(&f.layout, UNIT).unwrap();
    assert!(!f.checkout().exists());
    assert_restored_into_a_directory(&f, &feature);
    assert_restored_into_the_host(&f, &feature);
    assert_expires_after_the_retention(&f);
}

/// A stash, a commit on a new branch, then files left as they are:
/// modified, staged, untracked, ignored, a link. Returns the branch's
/// commit.
fn leave_every_kind_of_work(c: &Path) -> String {
    // A stash, a commit on a new branch, then files left as they are.
    std::fs::write(c.join("a.txt"), "stashed\n").unwrap();
    git(c, &["stash", "push", "--quiet", "-m", "an idea"]);
    git(c, &["checkout", "--quiet", "-b", "feature"]);
    std::fs::write(c.join("feature.txt"), "feature\n").unwrap();
    git(c, &["add", "feature.txt"]);
    git(c, &["commit", "--quiet", "-m", "feature work"]);
    let feature = git(c, &["rev-parse", "HEAD"]);
    std::fs::write(c.join("a.txt"), "modified\n").unwrap();
    std::fs::write(c.join("staged.txt"), "staged\n").unwrap();
    git(c, &["add", "staged.txt"]);
    std::fs::write(c.join("new.txt"), "untracked\n").unwrap();
    std::fs::create_dir_all(c.join("build")).unwrap();
    std::fs::write(c.join("build/out.bin"), [0u8, 1, 2, 255]).unwrap();
    std::os::unix::fs::symlink("/etc/hostname", c.join("link")).unwrap();
    feature
}

fn assert_every_kind_was_saved(f: &Fixture, saved: &Saved, feature: &str) {
    assert_eq!(saved.save, "inst-abc123");
    let checkout = &saved.checkouts[0];
    assert_eq!(checkout.head_branch.as_deref(), Some("feature"));
    assert_eq!(
        checkout.branches,
        vec![SavedRef {
            name: "feature".into(),
            commit: feature.to_owned()
        }]
    );
    assert_eq!(checkout.stash.len(), 1);
    assert_eq!(checkout.files.saved, 5, "{checkout:?}");
    let summary = checkout.summary();
    assert!(
        summary.contains("5 files")
            && summary.contains("1 branch (feature)")
            && summary.contains("1 stash entry"),
        "{summary}"
    );
    assert!(checkout.bundle.is_some());
    let (saves, problems) = list(&f.layout);
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(saves.len(), 1);
}

/// A checkout directory again, never written into an existing one.
fn assert_restored_into_a_directory(f: &Fixture, feature: &str) {
    let to = f.dir.path().join("restored");
    let lines = restore(&f.layout, "inst", Some(&to), None).unwrap();
    assert!(lines[0].contains("restored into"), "{lines:?}");
    assert_eq!(git(&to, &["rev-parse", "HEAD"]), feature);
    assert_eq!(git(&to, &["symbolic-ref", "HEAD"]), "refs/heads/feature");
    assert_eq!(
        std::fs::read_to_string(to.join("a.txt")).unwrap(),
        "modified\n"
    );
    assert_eq!(
        std::fs::read_to_string(to.join("new.txt")).unwrap(),
        "untracked\n"
    );
    assert_eq!(
        std::fs::read(to.join("build/out.bin")).unwrap(),
        [0u8, 1, 2, 255]
    );
    assert_eq!(
        std::fs::read_link(to.join("link")).unwrap(),
        Path::new("/etc/hostname")
    );
    let status = git(&to, &["status", "--porcelain", "--ignored"]);
    assert!(status.contains("M a.txt"), "{status}");
    assert!(status.contains("A  staged.txt"), "{status}");
    assert!(status.contains("?? new.txt"), "{status}");
    assert!(status.contains("!! build/"), "{status}");
    let stash = git(&to, &["stash", "list"]);
    assert!(stash.contains("an idea"), "{stash}");
    assert_eq!(git(&to, &["show", "stash@{0}:a.txt"]), "stashed");
    // Never into an existing directory.
    let err = restore(&f.layout, "inst", Some(&to), None).unwrap_err();
    assert!(err.to_string().contains("exists"), "{err}");
}

/// Branches in the host repository, made once.
fn assert_restored_into_the_host(f: &Fixture, feature: &str) {
    let lines = restore(&f.layout, "inst-abc123", None, None).unwrap();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("jackin/restored/inst-abc123/feature")),
        "{lines:?}"
    );
    let host = &f.host;
    assert_eq!(
        git(host, &["rev-parse", "jackin/restored/inst-abc123/feature"]),
        feature
    );
    assert_eq!(
        git(
            host,
            &["show", "jackin/restored/inst-abc123/uncommitted:new.txt"]
        ),
        "untracked"
    );
    assert_eq!(
        git(host, &["show", "jackin/restored/inst-abc123/stash-0:a.txt"]),
        "stashed"
    );
    git::run(&["-C", host.to_str().unwrap(), "fsck", "--no-dangling"]).unwrap();
    let again = restore(&f.layout, "inst-abc123", None, None).unwrap_err();
    assert!(
        again.to_string().contains("restored there already"),
        "{again}"
    );
}

/// Past the retention, the sweep's view of it, and its removal.
fn assert_expires_after_the_retention(f: &Fixture) {
    let later = Timestamp::now() + jiff::SignedDuration::from_hours(24 * 8);
    let gone = expired(
        &f.layout,
        jackin_api::home::DEFAULT_DISCARD_RETENTION,
        later,
    );
    assert_eq!(gone.len(), 1);
    assert!(
        expired(
            &f.layout,
            jackin_api::home::DEFAULT_DISCARD_RETENTION,
            Timestamp::now()
        )
        .is_empty()
    );
    assert!(remove(&f.layout, &gone[0].0).unwrap());
    assert!(list(&f.layout).0.is_empty());
}

/// A worktree's repository with the agent's commit (in its own objects
/// only), and its files: saved, with a pin of the base the bundle needs
/// for as long as the save exists, and restored.
#[test]
fn a_worktrees_work_is_saved_with_the_commits_only_its_repository_holds() {
    let f = Fixture::new(Isolation::Worktree);
    let c = f.checkout();
    // The agent's commit (on a detached HEAD) lands in its repository's
    // objects only.
    let repo = f.record.git_place();
    let base = f.record.base_commit.clone();
    let host = f.host.to_str().unwrap();
    let commit = isolation::tests::agent_commit(host, &repo, &base, "agent");
    std::fs::write(Path::new(&repo).join("HEAD"), format!("{commit}\n")).unwrap();
    assert!(git::run(&["-C", host, "cat-file", "-e", &commit]).is_err());
    std::fs::write(c.join("a.txt"), "changed in the worktree\n").unwrap();
    std::fs::write(c.join("notes.md"), "idea\n").unwrap();

    let saved = save_before_discard(&f.layout, UNIT, "wt").unwrap();
    let checkout = &saved.checkouts[0];
    assert_eq!(checkout.files.saved, 2, "{checkout:?}");
    assert_eq!(checkout.head.as_deref(), Some(commit.as_str()));
    assert_eq!(checkout.head_branch, None);
    assert!(
        checkout.summary().contains("HEAD detached at"),
        "{checkout:?}"
    );
    let pin = checkout
        .base_pin
        .clone()
        .expect("the bundle's base is pinned");
    isolation::remove_all(&f.layout, UNIT).unwrap();
    assert_eq!(
        git(&f.host, &["rev-parse", &pin]),
        base,
        "the save's pin stays"
    );
    let to = f.dir.path().join("wt-restored");
    restore(&f.layout, "wt", Some(&to), None).unwrap();
    assert_eq!(git(&to, &["rev-parse", "HEAD"]), commit);
    assert_eq!(
        std::fs::read_to_string(to.join("notes.md")).unwrap(),
        "idea\n"
    );
    let status = git(&to, &["status", "--porcelain"]);
    assert!(
        status.starts_with("M a.txt") && status.contains("?? notes.md"),
        "{status}"
    );
    assert!(remove(&f.layout, &saved.save).unwrap());
    assert!(
        git::run(&["-C", host, "rev-parse", "--verify", "-q", &pin]).is_err(),
        "the pin went with the save"
    );
}

/// A checkout whose `.git` would run programs, with a FIFO and a link
/// to a host file among its untracked files: the save runs nothing,
/// follows nothing, waits on nothing, and says what it left.
#[test]
fn a_hostile_checkout_is_saved_without_running_or_following_anything() {
    let f = Fixture::new(Isolation::Clone);
    let c = f.checkout();
    let proof = f.dir.path().join("ran");
    let touch = format!("sh -c 'touch {}; cat'", proof.display());
    git(&c, &["config", "core.fsmonitor", &touch]);
    git(&c, &["config", "filter.evil.clean", &touch]);
    git(&c, &["config", "filter.evil.smudge", &touch]);
    std::fs::write(c.join(".gitattributes"), "* filter=evil\n").unwrap();
    std::fs::create_dir_all(c.join(".git/hooks")).unwrap();
    std::fs::write(
        c.join(".git/hooks/post-checkout"),
        format!("#!/bin/sh\ntouch {}\n", proof.display()),
    )
    .unwrap();
    std::fs::set_permissions(
        c.join(".git/hooks/post-checkout"),
        std::fs::Permissions::from_mode(0o755),
    )
    .unwrap();
    let secret = f.dir.path().join("operator-secret");
    std::fs::write(&secret, "the operator's\n").unwrap();
    std::os::unix::fs::symlink(&secret, c.join("secret-link")).unwrap();
    std::fs::create_dir(c.join("dir")).unwrap();
    std::os::unix::fs::symlink(f.dir.path(), c.join("linked-dir")).unwrap();
    std::fs::create_dir(c.join("build")).unwrap();
    std::fs::write(c.join("build/out.o"), "built\n").unwrap();
    for fifo in ["pipe", "build/pipe"] {
        let made = std::process::Command::new("mkfifo")
            .arg(c.join(fifo))
            .status()
            .unwrap();
        assert!(made.success());
    }
    std::fs::write(c.join("dir/kept.txt"), "kept\n").unwrap();
    std::fs::write(c.join(std::ffi::OsStr::from_bytes(b"bad\xffname")), "x\n").unwrap();

    let saved = save_before_discard(&f.layout, UNIT, "evil").unwrap();
    let checkout = &saved.checkouts[0];
    assert_eq!(checkout.files.deleted, 0, "{checkout:?}");
    assert!(
        checkout
            .files
            .skipped_listed
            .iter()
            .any(|s| s.ends_with("a name that is not UTF-8")),
        "{checkout:?}"
    );
    assert!(!proof.exists(), "the checkout's config ran a program");
    // git status passes over a FIFO; one in an ignored directory,
    // which jackin walks itself, is named as not saved.
    assert!(
        checkout
            .files
            .skipped_listed
            .contains(&"build/pipe: a FIFO, socket or device".to_owned()),
        "{checkout:?}"
    );
    let to = f.dir.path().join("evil-restored");
    restore(&f.layout, "evil", Some(&to), None).unwrap();
    assert!(!proof.exists(), "the restore ran a program");
    assert_eq!(std::fs::read_link(to.join("secret-link")).unwrap(), secret);
    assert_eq!(
        std::fs::read_link(to.join("linked-dir")).unwrap(),
        f.dir.path()
    );
    assert_eq!(
        std::fs::read_to_string(to.join("dir/kept.txt")).unwrap(),
        "kept\n"
    );
    assert_eq!(
        std::fs::read_to_string(to.join(".gitattributes")).unwrap(),
        "* filter=evil\n"
    );
    // Nothing of the link's target was read into the save.
    let bundle =
        std::fs::read(save_dir(&f.layout, &saved.save).join(checkout.bundle.as_ref().unwrap()))
            .unwrap();
    assert!(!bundle.windows(14).any(|w| w == b"the operator's"));
    assert!(!to.join("pipe").exists() && !to.join("build/pipe").exists());
}

/// A clone whose `.git` the agent replaced with a file pointing
/// elsewhere: git cannot be trusted to say what changed, so every file
/// is saved as it is, without history, and the record says why.
#[test]
fn a_checkout_git_cannot_read_is_saved_whole_without_history() {
    let f = Fixture::new(Isolation::Clone);
    let c = f.checkout();
    std::fs::remove_dir_all(c.join(".git")).unwrap();
    std::fs::write(
        c.join(".git"),
        format!("gitdir: {}\n", f.host.join(".git").display()),
    )
    .unwrap();
    std::fs::write(c.join("notes.md"), "idea\n").unwrap();
    let saved = save_before_discard(&f.layout, UNIT, "lost").unwrap();
    let checkout = &saved.checkouts[0];
    assert_eq!(checkout.head, None);
    assert!(
        checkout.files.skipped_listed[0].starts_with(".git: git cannot read the checkout"),
        "{checkout:?}"
    );
    // a.txt, .gitignore and notes.md; the `.git` file is not one of them.
    assert_eq!(checkout.files.saved, 3, "{checkout:?}");
    isolation::remove_all(&f.layout, UNIT).unwrap();
    let lines = restore(&f.layout, "lost", None, None).unwrap();
    assert!(lines.iter().any(|l| l.contains("uncommitted")), "{lines:?}");
    assert_eq!(
        git(
            &f.host,
            &["show", "jackin/restored/lost-abc123/uncommitted:notes.md"]
        ),
        "idea"
    );
}

/// A session made again: the clone's work comes back in the new unit's
/// own checkout, made just then; a unit that has a checkout there already
/// is refused and its files stay as they are. A restore marks the save.
#[test]
fn a_clones_work_comes_back_in_a_new_units_checkout_never_over_one() {
    let f = Fixture::new(Isolation::Clone);
    let feature = leave_every_kind_of_work(&f.checkout());
    save_before_discard(&f.layout, UNIT, "inst").unwrap();
    isolation::remove_all(&f.layout, UNIT).unwrap();
    let mount = f.mount(Isolation::Clone);
    let unit = "jk-def456-again";
    let mounts = std::slice::from_ref(&mount);
    let lines = restore_into_unit(&f.layout, "inst", unit, mounts).unwrap();
    assert!(lines[0].contains("restored into"), "{lines:?}");
    let record = isolation::read_records(&f.layout, unit).unwrap().remove(0);
    let c = PathBuf::from(&record.path);
    assert_eq!(git(&c, &["rev-parse", "HEAD"]), feature);
    assert_eq!(git(&c, &["symbolic-ref", "HEAD"]), "refs/heads/feature");
    let status = git(&c, &["status", "--porcelain", "--ignored"]);
    assert!(status.contains("M a.txt"), "{status}");
    assert!(status.contains("A  staged.txt"), "{status}");
    assert!(status.contains("?? new.txt"), "{status}");
    assert!(git(&c, &["stash", "list"]).contains("an idea"));
    never_restored_over(&f.layout, unit, mounts, &c);
    // Listed as restored once brought back.
    assert!(find(&f.layout, "inst").unwrap().restored.is_none());
    let into = RestoredInto::Session {
        instance: "again".into(),
    };
    mark_restored(&f.layout, "inst-abc123", into.clone()).unwrap();
    let save = find(&f.layout, "inst").unwrap();
    assert_eq!(save.restored.map(|r| r.into), Some(into));
}

/// A session made again with a worktree: the saved work comes back in the
/// new unit's own worktree, made on the saved base although the host's
/// branch moved on since, with the agent's commits on the new unit's
/// scratch branch (which then publishes), and its objects in the unit's
/// repository only. A unit that has a checkout there already is refused.
#[test]
fn a_worktrees_work_comes_back_in_a_new_units_worktree_on_its_base() {
    let f = Fixture::new(Isolation::Worktree);
    let c = f.checkout();
    let base = f.record.base_commit.clone();
    std::fs::write(c.join("a.txt"), "stashed\n").unwrap();
    git(&c, &["stash", "push", "--quiet", "-m", "an idea"]);
    std::fs::write(c.join("feature.txt"), "feature\n").unwrap();
    git(&c, &["add", "feature.txt"]);
    git(&c, &["commit", "--quiet", "-m", "the agent's work"]);
    let commit = git(&c, &["rev-parse", "HEAD"]);
    git(&c, &["tag", "v1"]);
    std::fs::write(c.join("a.txt"), "modified\n").unwrap();
    std::fs::write(c.join("staged.txt"), "staged\n").unwrap();
    git(&c, &["add", "staged.txt"]);
    std::fs::write(c.join("new.txt"), "untracked\n").unwrap();
    // As a removal does: published first, then saved and removed.
    isolation::publish(&f.record).unwrap();
    let saved = save_before_discard(&f.layout, UNIT, "inst").unwrap();
    let work = saved.checkouts[0]
        .work
        .clone()
        .expect("the files were saved");
    isolation::remove_all(&f.layout, UNIT).unwrap();
    // The operator's branch moves on meanwhile.
    std::fs::write(f.host.join("later.txt"), "the operator's\n").unwrap();
    git(&f.host, &["add", "later.txt"]);
    git(&f.host, &["commit", "--quiet", "-m", "later"]);

    let mount = f.mount(Isolation::Worktree);
    let unit = "jk-def456-again";
    let mounts = std::slice::from_ref(&mount);
    let lines = restore_into_unit(&f.layout, "inst", unit, mounts).unwrap();
    assert!(
        lines[0].starts_with("/workspace/app: restored into"),
        "{lines:?}"
    );
    let record = isolation::read_records(&f.layout, unit).unwrap().remove(0);
    assert_eq!(record.base_commit, base, "made on the saved base");
    let c = PathBuf::from(&record.path);
    assert_eq!(git(&c, &["rev-parse", "HEAD"]), commit);
    let scratch = format!("refs/heads/jackin/scratch/{unit}");
    assert_eq!(git(&c, &["symbolic-ref", "HEAD"]), scratch);
    let status = git(&c, &["status", "--porcelain"]);
    assert_eq!(status, "M a.txt\nA  staged.txt\n?? new.txt", "{status}");
    assert!(!c.join("later.txt").exists(), "the host's later commit");
    assert!(git(&c, &["stash", "list"]).contains("an idea"));
    assert_eq!(git(&c, &["rev-parse", "v1"]), commit);
    // The saved objects are the unit's; the host has none of them.
    let host = f.host.to_str().unwrap();
    assert!(git::run(&["-C", host, "cat-file", "-e", &work]).is_err());
    assert_eq!(git(&f.host, &["status", "--porcelain"]), "");
    // Published as any worktree's branch: work on its base.
    isolation::publish(&record).unwrap();
    assert_eq!(git(&f.host, &["rev-parse", &scratch]), commit);

    never_restored_over(&f.layout, unit, mounts, &c);
}
