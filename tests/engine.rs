//! The engine adapter against the real Docker engine.

use jackin_engine::Engine;
use jackin_engine::models::ContainerCreateBody;
use jackin_engine::owner_labels;
use support::{EngineCleanup, RUN_LABEL, build_busybox};

#[tokio::test]
async fn create_inspect_and_remove_a_labelled_container() {
    let engine = Engine::connect().await.expect("a Docker engine answers");
    println!("engine API version {}", engine.api_version());
    let cleanup = EngineCleanup::new();
    let image = build_busybox(&engine).await;
    let name = format!("jk-{}-adapter", cleanup.run_id);

    let mut labels = owner_labels("adapter-test", "uid-1", &cleanup.run_id);
    labels.insert(RUN_LABEL.into(), cleanup.run_id.clone());
    let body = ContainerCreateBody {
        image: Some(image),
        cmd: Some(vec!["sleep".into(), "60".into()]),
        labels: Some(labels),
        ..Default::default()
    };
    let id = engine.create_container(&name, body).await.unwrap();

    let inspected = engine
        .inspect_container(&name)
        .await
        .unwrap()
        .expect("the container exists");
    assert_eq!(inspected.id.as_deref(), Some(id.as_str()));
    let got = inspected.config.unwrap().labels.unwrap();
    assert_eq!(got["jackin.dev/managed"], "true");
    assert_eq!(got["jackin.dev/instance"], "adapter-test");
    assert_eq!(got["jackin.dev/uid"], "uid-1");

    let listed = engine
        .list_containers(&[("jackin.dev/managed", "true"), (RUN_LABEL, &cleanup.run_id)])
        .await
        .unwrap();
    assert_eq!(listed.len(), 1);

    assert!(engine.remove_container(&name).await.unwrap());
    assert!(engine.inspect_container(&name).await.unwrap().is_none());
    // Removing what is gone reports it, without an error.
    assert!(!engine.remove_container(&name).await.unwrap());
}

/// Builds an empty image labelled as a fixture of test run `run`.
fn fixture_of(run: &str) -> String {
    let tag = format!("jackin-test/fixture-probe:{run}");
    build(
        &tag,
        &format!("FROM scratch\nLABEL jackin.dev/test-fixture={run}\n"),
    );
    tag
}

fn build(tag: &str, dockerfile: &str) {
    let context = tempfile::tempdir().unwrap();
    std::fs::write(context.path().join("Dockerfile"), dockerfile).unwrap();
    support::docker(&["build", "-q", "-t", tag, context.path().to_str().unwrap()]);
}

/// Removes the images named, when dropped: whether the test passed or not.
struct Images(Vec<String>);

impl Drop for Images {
    fn drop(&mut self) {
        let _ = std::process::Command::new("docker")
            .args(["rmi", "-f"])
            .args(&self.0)
            .output();
    }
}

#[test]
fn the_test_command_removes_only_its_own_runs_fixtures() {
    let (mine, theirs) = (support::unique("mine"), support::unique("theirs"));
    let (my_image, their_image) = (fixture_of(&mine), fixture_of(&theirs));
    // An image built on this run's fixture inherits its label: it goes too,
    // and before its parent, which cannot go while it is there.
    let child = format!("{my_image}-child");
    build(&child, &format!("FROM {my_image}\nLABEL child=yes\n"));
    let _cleanup = Images(vec![child.clone(), my_image.clone(), their_image.clone()]);
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/remove-fixtures");
    let status = std::process::Command::new(script)
        .arg(&mine)
        .status()
        .unwrap();
    let exists = |tag: &str| {
        std::process::Command::new("docker")
            .args(["image", "inspect", tag])
            .output()
            .unwrap()
            .status
            .success()
    };
    let (mine_left, theirs_left) = (exists(&my_image), exists(&their_image));
    assert!(status.success());
    assert!(!exists(&child), "this run's child image is removed");
    assert!(!mine_left, "this run's fixture is removed");
    assert!(theirs_left, "another run's fixture is left alone");
}
