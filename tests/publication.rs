//! Publication of a worktree's branch into the operator's repository
//! (issue 52): only at a start, a stop and before a removal, never because
//! someone looked; and what a publication brings over is the unit's own
//! work, checked, whatever a crash or the agent left.

use crate::top::wait_row;
use std::path::{Path, PathBuf};
use support::terminal::Terminal;
use support::{Home, ensure_busybox, git, host_repo, instance_yaml_with, work_in};

/// An instance running `sleep` with a worktree of `host` at `/workspace/app`.
fn worktree_instance(name: &str, host: &Path) -> String {
    instance_yaml_with(
        name,
        &format!(
            "  command: [sleep, \"3600\"]\n  mounts: [{{src: {}, dst: /workspace/app, \
             isolation: worktree}}]\n",
            host.display()
        ),
    )
}

/// Everything of the host repository a publication would change: every
/// ref with its value, and the count and size of its objects.
fn host_state(host: &Path) -> String {
    format!(
        "{}\n{}",
        git(host, &["for-each-ref", "--format=%(refname) %(objectname)"]),
        git(host, &["count-objects", "-v"])
    )
}

/// A started worktree instance whose agent committed once: the home, the
/// host repository's directory (kept alive by the returned guard), the
/// unit's container name and the agent's commit.
struct Committed {
    home: Home,
    _dir: tempfile::TempDir,
    host: PathBuf,
    container: String,
    commit: String,
}

impl Committed {
    fn start(name: &str) -> Self {
        ensure_busybox();
        let home = Home::new();
        let dir = tempfile::tempdir().unwrap();
        let host = host_repo(dir.path());
        home.apply(name, &worktree_instance(name, &host));
        let checkout = home.checkout(name);
        work_in(
            &checkout,
            "echo w > work && git add work && git commit --quiet -m agent-work",
        );
        let commit = git(&checkout, &["rev-parse", "HEAD"]);
        let container = home.container(name);
        Self {
            home,
            _dir: dir,
            host,
            container,
            commit,
        }
    }

    fn scratch(&self) -> String {
        format!("refs/heads/jackin/scratch/{}", self.container)
    }
}

/// Issue 52: a look never writes. A dry run, `describe`, `get -o wide` and
/// `top` over a few of its assessments leave the host repository as it was
/// (every ref, every object), while they do see the agent's commit in the
/// unit's own repository. The stop then publishes it.
#[test]
fn looking_at_a_worktree_never_writes_into_the_host_repository() {
    let c = Committed::start("looked");
    let before = host_state(&c.host);
    let manifest = c
        .home
        .write_input("looked.yaml", &worktree_instance("looked", &c.host));
    c.home
        .ok(&["apply", "--dry-run", manifest.to_str().unwrap()]);
    let described = c.home.ok(&["describe", "looked"]);
    assert!(
        described.contains("1 commits since the base"),
        "the assessment did not see the agent's commit: {described}"
    );
    c.home.ok(&["get", "-o", "wide"]);
    assert_eq!(host_state(&c.host), before, "a look wrote into the host");

    let term = Terminal::start_as(&c.home, "top", "xterm");
    term.resize(200, 40);
    wait_row(&term, "looked", "1 branch unpushed");
    // A file made now shows only in a later assessment: top assessed twice.
    std::fs::write(c.home.checkout("looked").join("later"), "later\n").unwrap();
    wait_row(&term, "looked", "1 file dirty");
    drop(term);
    assert_eq!(host_state(&c.host), before, "top wrote into the host");

    c.home.ok(&["set-phase", "looked", "kept"]);
    assert_eq!(git(&c.host, &["rev-parse", &c.scratch()]), c.commit);
    c.home.ok(&["delete", "looked", "--force"]);
}

/// N3: a publication cut short between the host's `update-ref` and its
/// record left a unit that could not start, with a hint that blamed the
/// agent. The state such a crash leaves, twice: made by hand (the host's
/// branch at the agent's commit, nothing recorded), then by a crash at
/// that point of a stop's publication, after which the agent commits
/// again. Each time `describe` shows no conflict, the next start works and
/// publishes the agent's latest.
#[test]
fn a_publication_cut_short_after_the_host_ref_moved_never_blocks_the_next_start() {
    let c = Committed::start("cut");
    let (home, host, scratch) = (&c.home, &c.host, c.scratch());
    let checkout = home.checkout("cut");
    let no_conflict = |what: &str, said: &str| {
        assert!(
            !said.contains("moved in the host repository") && !said.contains("rewrote"),
            "{what}: {said}"
        );
    };
    // By hand: the agent's objects fetched, the branch moved, unrecorded.
    let repo = jackin_checkouts::worktree::repository_beside(&checkout).unwrap();
    git(host, &["fetch", "-q", repo.to_str().unwrap(), &scratch]);
    git(host, &["update-ref", &scratch, &c.commit]);
    no_conflict("describe", &home.ok(&["describe", "cut"]));
    home.ok(&["set-phase", "cut", "kept"]);
    let started = home.jackin(&["set-phase", "cut", "running"]);
    no_conflict("start", &String::from_utf8_lossy(&started.stderr));
    assert!(started.status.success(), "{started:?}");

    // A crash at that point of the stop's publication.
    work_in(
        &checkout,
        "echo crash > crash && git add crash && git commit -q -m crash",
    );
    let crashed = git(&checkout, &["rev-parse", "HEAD"]);
    let out = home
        .command(&["set-phase", "cut", "kept"])
        .env("JACKIN_CRASH_AFTER", "publish:host-ref-moved")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(86), "{out:?}");
    assert_eq!(git(host, &["rev-parse", &scratch]), crashed);
    work_in(
        &checkout,
        "echo later > later && git add later && git commit -q -m later",
    );
    let later = git(&checkout, &["rev-parse", "HEAD"]);
    no_conflict("describe", &home.ok(&["describe", "cut"]));
    let started = home.jackin(&["set-phase", "cut", "running"]);
    no_conflict("start", &String::from_utf8_lossy(&started.stderr));
    assert!(started.status.success(), "{started:?}");
    assert_eq!(git(host, &["rev-parse", &scratch]), later);

    // A move of the operator's is theirs: it stands. The start's
    // publication, refused, stops nothing: the session starts, its work
    // stays in the unit, and the refusal says how to let jackin publish
    // again, blaming no one in the container. Once the operator deletes
    // the ref, the next stop publishes the agent's latest.
    let main = git(host, &["rev-parse", "main"]);
    git(host, &["update-ref", &scratch, &main]);
    work_in(
        &checkout,
        "echo mine > mine && git add mine && git commit -q -m mine",
    );
    let mine = git(&checkout, &["rev-parse", "HEAD"]);
    home.ok(&["set-phase", "cut", "kept"]);
    let started = home.jackin(&["set-phase", "cut", "running"]);
    let said = String::from_utf8_lossy(&started.stderr);
    assert!(started.status.success(), "{said}");
    assert!(
        said.contains(&format!("update-ref -d {scratch}")) && !said.contains("rewrote"),
        "{said}"
    );
    assert_eq!(git(host, &["rev-parse", &scratch]), main);
    assert_eq!(home.object("cut")["status"]["phase"], "Running");
    git(host, &["update-ref", "-d", &scratch]);
    home.ok(&["set-phase", "cut", "kept"]);
    assert_eq!(git(host, &["rev-parse", &scratch]), mine);
    home.ok(&["delete", "cut", "--force"]);
}

/// N7: a commit of the operator's that no ref holds (a reset left it for
/// `gc`) is readable among the host's objects; the agent sets its branch to
/// it. Neither the stop nor the purge publishes it: the host's branch
/// stays, no ref of the host holds it, and the stop says why.
#[test]
fn an_operators_dropped_commit_is_never_published_as_the_agents_branch() {
    let c = Committed::start("dropped");
    let (home, host, scratch) = (&c.home, &c.host, c.scratch());
    work_in(
        host,
        "echo OPERATOR-DROPPED-SECRET > dropped.txt && git add dropped.txt && \
         git commit -q -m dropped && git reset -q --hard HEAD~1",
    );
    let dropped = git(host, &["rev-parse", "HEAD@{1}"]);
    let before = git(host, &["rev-parse", &scratch]);
    work_in(
        &home.checkout("dropped"),
        &format!("git update-ref {scratch} {dropped}"),
    );
    let stopped = home.jackin(&["set-phase", "dropped", "kept"]);
    let said = String::from_utf8_lossy(&stopped.stderr);
    assert!(stopped.status.success(), "{said}");
    assert!(said.contains("only the agent's own commits"), "{said}");
    let holders = || git(host, &["for-each-ref", "--contains", &dropped]);
    assert_eq!(git(host, &["rev-parse", &scratch]), before);
    assert_eq!(
        holders(),
        "",
        "a host ref holds the operator's dropped commit"
    );
    home.ok(&["delete", "dropped", "--force"]);
    assert_eq!(
        holders(),
        "",
        "the purge published the operator's dropped commit"
    );
}
