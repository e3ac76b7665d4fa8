//! The files jackin reads, in its home and in policy sources, are regular
//! files under a size cap. A FIFO, a link to a device, a link out of place
//! or a file past the cap is refused with an error that names it, at once
//! (never a hang past `--timeout`), and never with what the file holds.

use std::path::{Path, PathBuf};
use std::process::Output;
use std::time::Duration;

use support::{Home, instance_yaml, instance_yaml_with};

/// Far more than any of these commands needs; a hang fails the test.
const LIMIT: Duration = Duration::from_secs(60);

/// Past every cap jackin sets on a file it reads (the largest is 64 MiB).
/// Written sparse, so it costs no disk.
const OVERSIZED: u64 = 80 << 20;

/// Text that must never reach an error message.
const MARKER: &str = "MARKER-7c1d-not-for-your-eyes";

/// The ways a file can be what jackin must not read.
#[derive(Debug, Clone, Copy)]
enum Bad {
    /// A FIFO nobody writes to: reading it waits forever.
    Fifo,
    /// A link to `/dev/zero`: reading it never ends.
    DevZero,
    /// A regular file past every cap, the marker at its start.
    Oversized,
    /// A link to a file elsewhere holding the marker, shaped like a line of
    /// `/etc/shadow`.
    LinkOut,
}

const ALL: [Bad; 4] = [Bad::Fifo, Bad::DevZero, Bad::Oversized, Bad::LinkOut];

/// Replaces `path` with a file that is `bad`; `elsewhere` holds link targets.
fn make(path: &Path, bad: Bad, elsewhere: &Path) {
    let _ = std::fs::remove_file(path);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    match bad {
        Bad::Fifo => {
            let made = std::process::Command::new("mkfifo").arg(path).status();
            assert!(made.unwrap().success(), "mkfifo {}", path.display());
        }
        Bad::DevZero => std::os::unix::fs::symlink("/dev/zero", path).unwrap(),
        Bad::Oversized => {
            std::fs::write(path, format!("{MARKER}\n")).unwrap();
            let file = std::fs::OpenOptions::new().write(true).open(path).unwrap();
            file.set_len(OVERSIZED).unwrap();
        }
        Bad::LinkOut => {
            let target = elsewhere.join(format!(
                "secret-{}",
                path.file_name().unwrap().to_string_lossy()
            ));
            std::fs::write(&target, format!("root:{MARKER}:19000:0:99999:7:::\n")).unwrap();
            std::os::unix::fs::symlink(&target, path).unwrap();
        }
    }
}

/// Asserts that the command failed, naming `path`, without the marker.
fn assert_refused(out: &Output, path: &Path, what: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{what} succeeded:\n{stdout}\n{err}");
    assert!(
        err.contains(&path.display().to_string()),
        "{what}: the error does not name {}:\n{err}",
        path.display()
    );
    assert!(
        !err.contains(MARKER) && !stdout.contains(MARKER),
        "{what}: the file's contents were printed:\n{err}"
    );
}

/// Runs `jackin ARGS…` and asserts it was refused for `path` ([`assert_refused`]).
fn refuses(home: &Home, args: &[&str], path: &Path, what: String) {
    assert_refused(&home.within(LIMIT, args), path, &what);
}

/// Asserts only that the command finished and printed no contents: for a
/// command that does not read the file at all.
fn assert_quiet(out: &Output, what: &str) {
    let all = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !all.contains(MARKER),
        "{what}: the contents were printed:\n{all}"
    );
}

/// A home holding instance `one` (recorded, not run), and a manifest of
/// a new instance `two` to apply.
fn home_with_one() -> (Home, PathBuf) {
    let home = Home::new();
    home.record("one", &instance_yaml("one"));
    let two = home.write_input("two.yaml", &instance_yaml("two"));
    (home, two)
}

/// Puts a file's first contents back when dropped (declared after the home,
/// it drops first): the home's own cleanup reads the unit's object, and a
/// FIFO left there by a failed test would hang it.
struct Restore {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl Restore {
    fn new(path: &Path) -> Self {
        Self {
            path: path.to_owned(),
            bytes: std::fs::read(path).unwrap(),
        }
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
        let _ = std::fs::write(&self.path, &self.bytes);
    }
}

fn assert_not_applied(home: &Home, name: &str) {
    let out = home.jackin(&["get", name]);
    assert!(!out.status.success(), "{name} was applied");
}

fn apply_args(file: &Path) -> Vec<&str> {
    vec!["apply", "--timeout", "15s", "-f", file.to_str().unwrap()]
}

#[test]
fn a_home_config_that_is_no_regular_file_or_too_large_is_refused_by_name_without_its_contents() {
    let (home, two) = home_with_one();
    let elsewhere = tempfile::tempdir().unwrap();
    let config = home.path().join("config.yaml");
    for bad in ALL {
        make(&config, bad, elsewhere.path());
        refuses(
            &home,
            &apply_args(&two),
            &config,
            format!("apply with config.yaml {bad:?}"),
        );
        refuses(
            &home,
            &["controller", "--once"],
            &config,
            format!("controller with config.yaml {bad:?}"),
        );
        assert_quiet(&home.within(LIMIT, &["get"]), "get");
    }
    assert_not_applied(&home, "two");
}

#[test]
fn an_index_that_is_no_regular_file_or_too_large_is_refused_by_name_without_its_contents() {
    let (home, two) = home_with_one();
    let elsewhere = tempfile::tempdir().unwrap();
    let index = home.path().join("data/instances.json");
    for bad in ALL {
        make(&index, bad, elsewhere.path());
        refuses(
            &home,
            &["get"],
            &index,
            format!("get with the index {bad:?}"),
        );
        refuses(
            &home,
            &["get", "one", "-o", "yaml"],
            &index,
            format!("get one with the index {bad:?}"),
        );
        refuses(
            &home,
            &apply_args(&two),
            &index,
            format!("apply with the index {bad:?}"),
        );
    }
}

#[test]
fn an_ended_record_that_is_no_regular_file_or_too_large_is_refused_by_name_without_its_contents() {
    let (home, two) = home_with_one();
    let elsewhere = tempfile::tempdir().unwrap();
    let ended = home.path().join("data/ended.json");
    for bad in ALL {
        make(&ended, bad, elsewhere.path());
        refuses(
            &home,
            &apply_args(&two),
            &ended,
            format!("apply with ended.json {bad:?}"),
        );
        assert_quiet(&home.within(LIMIT, &["get"]), "get");
    }
    assert_not_applied(&home, "two");
}

#[test]
fn a_units_object_that_is_no_regular_file_or_too_large_is_refused_by_name_without_its_contents() {
    let (home, _) = home_with_one();
    let elsewhere = tempfile::tempdir().unwrap();
    let unit = home.path().join("data").join(home.container("one"));
    let object = unit.join(".jackin/instance.json");
    let _restore = Restore::new(&object);
    // The same instance, changed: the apply must read the stored object.
    let changed = home.write_input(
        "one-changed.yaml",
        &instance_yaml_with("one", "  env: [{name: MODE, value: dev}]\n"),
    );
    for bad in ALL {
        make(&object, bad, elsewhere.path());
        refuses(
            &home,
            &["get", "one"],
            &object,
            format!("get one with its object {bad:?}"),
        );
        refuses(
            &home,
            &apply_args(&changed),
            &object,
            format!("apply with the object {bad:?}"),
        );
        // A listing names the unit it cannot read, and goes on.
        let out = home.within(LIMIT, &["get"]);
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(&object.display().to_string()),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_quiet(&out, "get");
    }
}

#[test]
fn an_event_log_that_is_no_regular_file_is_passed_over_without_its_contents() {
    let (home, _) = home_with_one();
    let elsewhere = tempfile::tempdir().unwrap();
    let unit = home.path().join("data").join(home.container("one"));
    let events = unit.join(".jackin/events.jsonl");
    for bad in ALL {
        make(&events, bad, elsewhere.path());
        let out = home.within(LIMIT, &["describe", "one"]);
        assert!(
            out.status.success(),
            "describe with the event log {bad:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_quiet(&out, "describe");
    }
}

/// A policy directory with one good file and `x.yaml` made `bad`.
fn policy_with(bad: Bad, elsewhere: &Path) -> tempfile::TempDir {
    let dir = tempfile::Builder::new()
        .prefix("jackin-policy-")
        .tempdir()
        .unwrap();
    std::fs::write(
        dir.path().join("team.yaml"),
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: team}\nspec: {}\n",
    )
    .unwrap();
    let x = dir.path().join("x.yaml");
    make(&x, bad, elsewhere);
    if let Bad::LinkOut = bad {
        // Outside, a manifest that would apply if it were followed.
        let target = std::fs::read_link(&x).unwrap();
        std::fs::write(
            target,
            format!(
                "# {MARKER}\napiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: leaked}}\nspec: {{}}\n"
            ),
        )
        .unwrap();
    }
    dir
}

#[test]
fn a_policy_file_that_links_out_of_its_directory_or_is_no_regular_file_is_refused_by_name() {
    let home = Home::new();
    let elsewhere = tempfile::tempdir().unwrap();
    for bad in ALL {
        let dir = policy_with(bad, elsewhere.path());
        let x = dir.path().join("x.yaml");
        let src = dir.path().to_str().unwrap();
        refuses(
            &home,
            &["apply", "--prune", "--no-wait", "-f", src],
            &x,
            format!("apply with x.yaml {bad:?}"),
        );
        assert!(
            !home.path().join("workspaces").exists(),
            "apply wrote with x.yaml {bad:?}"
        );
        let out = home.within(LIMIT, &["diff", "-f", src]);
        assert_eq!(out.status.code(), Some(2), "diff with x.yaml {bad:?}");
        assert_refused(&out, &x, &format!("diff with x.yaml {bad:?}"));
        let out = home.within(LIMIT, &["controller", "--once", "--sync", src]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(&x.display().to_string()), "{err}");
        assert_quiet(&out, "controller --sync");
        assert!(
            !home
                .jackin(&["get", "workspaces", "leaked"])
                .status
                .success()
        );
    }

    // A link that stays inside the directory is followed.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("team.txt"),
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: team}\nspec: {}\n",
    )
    .unwrap();
    std::os::unix::fs::symlink("team.txt", dir.path().join("team.yaml")).unwrap();
    let out = home.ok(&["apply", "--no-wait", "-f", dir.path().to_str().unwrap()]);
    assert_eq!(out, "workspace/team created\n");
}
