//! The built-in `amp` entry against a stand-in of the Amp CLI
//! (`tests/fixtures/fake-amp`, which cites Amp's docs for each behaviour it
//! imitates; the real CLI is distributed through npm and a download script
//! only, and cannot be installed here). amp chooses its own thread ids, so
//! jackin asks it to continue its most recent thread: at the first start
//! there is none and the ladder falls to a new thread; at every restore
//! after that, whatever the tier, the same thread continues.

use std::path::Path;

use support::{Home, RoleRepo, ensure_busybox};

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
    let first = home.wait_for_starts("amp", 1);
    let id = first[0]
        .strip_prefix("amp new ")
        .unwrap_or_else(|| panic!("a new thread first: {first:?}"))
        .to_owned();
    home.one_pass();
    let conv = home.conversation("amp");
    assert_eq!(conv["strategy"], "latest", "{conv}");
    assert_eq!(conv["lastStart"], "fresh", "{conv}");

    let container = home.container("amp");
    let image = home.object("amp")["status"]["recipe"]["imageId"]
        .as_str()
        .unwrap()
        .to_owned();
    let breakages: [support::Breakage; 4] = [
        ("docker stop", &[&["stop", "-t", "2", &container]], Some(1)),
        ("docker rm -f", &[&["rm", "-f", &container]], Some(2)),
        (
            "the image removed",
            &[&["rm", "-f", &container], &["rmi", "-f", &image]],
            Some(3),
        ),
        ("kept, then running", &[], None),
    ];
    home.break_and_restore("amp", &breakages, |n, what, log| {
        assert_eq!(log[n + 1], format!("amp continued {id}"), "{what}: {log:?}");
        home.wait_for_the_start_to_settle("amp");
        home.one_pass();
        let conv = home.conversation("amp");
        assert_eq!(conv["lastStart"], "continue-requested", "{what}: {conv}");
    });

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
