//! The engine adapter against the real Docker engine.

mod support;

use jackin_reconcilers::Engine;
use jackin_reconcilers::engine::models::ContainerCreateBody;
use jackin_reconcilers::engine::owner_labels;
use support::{EngineCleanup, RUN_LABEL, busybox_image};

#[tokio::test]
async fn create_inspect_and_remove_a_labelled_container() {
    let engine = Engine::connect().await.expect("a Docker engine answers");
    println!("engine API version {}", engine.api_version());
    let cleanup = EngineCleanup::new();
    let image = busybox_image(&engine).await;
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
