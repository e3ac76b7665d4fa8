//! The built-in `amp` entry against a stand-in of the Amp CLI
//! (`tests/fixtures/fake-amp`, which cites Amp's docs for each behaviour it
//! imitates; the real CLI is distributed through npm and a download script
//! only, and cannot be installed here). amp chooses its own thread ids, so
//! jackin asks it to continue its most recent thread: at the first start
//! there is none and the ladder falls to a new thread; at every restore
//! after that, whatever the tier, the same thread continues.

mod support;

use std::path::Path;
use std::time::{Duration, Instant};

use support::{Home, RoleRepo, docker, ensure_busybox};

/// The operator's amp login, as `amp login` keeps it; its value must never
/// show in jackin's records.
const SECRETS: &str = "{\"apiKey@https://ampcode.com/\": \"amp-canary-login-never-shown\"}";

/// A role whose image holds the stand-in as `amp`, working in `/work`.
fn amp_role() -> RoleRepo {
    let repo = RoleRepo::new("amp");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../tests/fixtures/fake-amp");
    std::fs::copy(&script, repo.path().join("fake-amp")).unwrap();
    std::fs::write(
        repo.path().join("Dockerfile"),
        format!(
            "FROM {}\nLABEL jackin.test.role={}\nCOPY fake-amp /bin/amp\n\
             RUN [\"/bin/chmod\", \"755\", \"/bin/amp\"]\nWORKDIR /work\n",
            support::busybox_image(),
            repo.role
        ),
    )
    .unwrap();
    repo.commit_marker("amp");
    repo
}

/// Waits until the agent has started `count` times; returns its log.
fn wait_for_starts(home: &Home, name: &str, count: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let log = home.agent_starts(name);
        if log.len() >= count {
            return log;
        }
        assert!(
            Instant::now() < deadline,
            "{name}: {count} start(s) expected, the log has {log:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

fn pass(home: &Home) {
    let out = home.ok(&["controller", "--once"]);
    assert!(out.starts_with("pass complete"), "{out}");
}

/// What breaks a session: its name, the `docker` commands that do it, and
/// the restore tier that repairs it (`None`: kept, then resumed).
type Breakage<'a> = (&'a str, &'a [&'a [&'a str]], Option<u64>);

fn conversation(home: &Home, name: &str) -> serde_json::Value {
    home.object(name)["status"]["conversation"].clone()
}

#[test]
fn amp_continues_its_thread_at_every_tier_of_the_restore_ladder() {
    ensure_busybox();
    let home = Home::new();
    let login = home.operator_home().join(".local/share/amp/secrets.json");
    std::fs::create_dir_all(login.parent().unwrap()).unwrap();
    std::fs::write(&login, SECRETS).unwrap();
    let role = amp_role();
    home.apply("amp.yaml", &role.agent_instance_yaml("amp", "amp", ""));

    // The first start: jackin knows there is nothing to continue yet, and
    // starts a new thread, under an id amp chose.
    let first = wait_for_starts(&home, "amp", 1);
    let id = first[0]
        .strip_prefix("amp new ")
        .unwrap_or_else(|| panic!("a new thread first: {first:?}"))
        .to_owned();
    pass(&home);
    let conv = conversation(&home, "amp");
    assert_eq!(conv["strategy"], "latest", "{conv}");
    assert_eq!(conv["lastStart"], "fresh", "{conv}");

    let container = home.container("amp");
    let image = home.object("amp")["status"]["recipe"]["imageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let breakages: [Breakage; 4] = [
        ("docker stop", &[&["stop", "-t", "2", &container]], Some(1)),
        ("docker rm -f", &[&["rm", "-f", &container]], Some(2)),
        (
            "the image removed",
            &[&["rm", "-f", &container], &["rmi", "-f", &image]],
            Some(3),
        ),
        ("kept, then running", &[], None),
    ];
    for (n, (what, commands, tier)) in breakages.into_iter().enumerate() {
        for args in commands {
            docker(args);
        }
        match tier {
            Some(tier) => {
                pass(&home);
                assert_eq!(
                    home.object("amp")["status"]["restore"]["tier"],
                    tier,
                    "{what}"
                );
            }
            None => {
                home.ok(&["set-phase", "amp", "kept"]);
                home.ok(&["set-phase", "amp", "running"]);
            }
        }
        let log = wait_for_starts(&home, "amp", n + 2);
        assert_eq!(log[n + 1], format!("amp continued {id}"), "{what}: {log:?}");
        home.wait_for_the_start_to_settle("amp");
        pass(&home);
        let conv = conversation(&home, "amp");
        assert_eq!(conv["lastStart"], "continue-requested", "{what}: {conv}");
    }

    // One thread, written by every start; the login reached the agent's
    // home and nowhere in jackin's own records.
    let thread = home
        .unit("amp")
        .join(format!("home/.local/share/amp/threads/{id}"));
    let text = std::fs::read_to_string(&thread).unwrap();
    assert_eq!(text.matches("started ").count(), 5, "{text}");
    assert_eq!(text.matches("started continued").count(), 4, "{text}");
    let forwarded = home.unit("amp").join("home/.local/share/amp/secrets.json");
    assert_eq!(std::fs::read_to_string(forwarded).unwrap(), SECRETS);
    support::assert_never_shown(&home, "amp", "amp-canary-login-never-shown");
}
