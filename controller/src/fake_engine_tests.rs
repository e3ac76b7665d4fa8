//! The loop above the engine seam, with no Docker: reconcile and the restore
//! ladder, the session edge and its settlements, sweeps, the controller's
//! watches and backoff, and dry-run parity, against the in-memory engine
//! (`jackin_engine::fake`). The integration tests in `tests/` run the
//! same behaviour against the real engine.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use jackin_api::instance::{InstancePhase, SettledBy, StartKind};
use jackin_api::meta::{ConditionStatus, find_condition, is_condition_true};
use jackin_api::names::{annotation, condition, label, reason};
use jackin_api::workspace::ExitPolicy;
use jackin_api::{DesiredPhase, Instance, Object, manifest};
use jackin_engine::fake::FakeEngine;
use jackin_files::layout::Layout;
use jackin_plan::decide::decide;
use jackin_plan::plan::{Step, Tier};

use crate::engines::Engines;
use crate::metrics::Metrics;
use crate::reconcile::{Outcome, Progress, Reconciler, Snapshot};
use crate::store::{ApplyOutcome, Store, StoreError};
use crate::{run, session, sweep};

const IMAGE: &str = "test/agent:1";

/// A home, a fake engine with the agent image, and a reconciler over both.
struct World {
    _dir: tempfile::TempDir,
    /// The operator's home, where logins are read from: apart from the
    /// jackin home, as a real one is.
    operator: tempfile::TempDir,
    store: Store,
    fake: FakeEngine,
    reconciler: Reconciler,
}

impl World {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let (store, _) = Store::open(Layout::new(dir.path())).unwrap();
        let fake = FakeEngine::default();
        fake.add_image(IMAGE, &["sleep", "3600"]);
        let operator = tempfile::tempdir().unwrap();
        let reconciler = reconciler(&store, Engines::single(fake.engine()), operator.path());
        Self {
            _dir: dir,
            operator,
            store,
            fake,
            reconciler,
        }
    }

    /// Parses a manifest (an instance with `spec_lines` added).
    fn manifest(name: &str, spec_lines: &str) -> Instance {
        let text = format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec:\n  \
             role: {{name: r}}\n  agent: claude\n  image: {IMAGE}\n{spec_lines}"
        );
        match manifest::parse("test.yaml", &text).unwrap().remove(0) {
            Object::Instance(obj) => *obj,
            Object::Workspace(_) | Object::Agent(_) => unreachable!("an instance was written"),
        }
    }

    fn apply(&self, name: &str, spec_lines: &str) -> ApplyOutcome {
        self.store
            .apply_instance(&Self::manifest(name, spec_lines))
            .unwrap()
    }

    fn workspace(&self, name: &str, spec: &str) {
        let text = format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec: {spec}\n"
        );
        let Object::Workspace(ws) = manifest::parse("ws.yaml", &text).unwrap().remove(0) else {
            unreachable!("a workspace was written")
        };
        self.store.apply(ws.as_ref()).unwrap();
    }

    async fn reconcile(&self, name: &str) -> Outcome {
        self.reconciler.reconcile(name, None).await.unwrap()
    }

    /// Applies and converges an instance: it runs.
    async fn launch(&self, name: &str, spec_lines: &str) -> String {
        self.apply(name, spec_lines);
        self.launch_applied(name).await
    }

    /// Converges an instance applied already: it runs.
    async fn launch_applied(&self, name: &str) -> String {
        let outcome = self.reconcile(name).await;
        assert_eq!(
            outcome,
            Outcome::Converged {
                phase: InstancePhase::Running,
                tier: None
            }
        );
        self.container(name)
    }

    fn obj(&self, name: &str) -> Instance {
        self.store.get_instance(name).unwrap()
    }

    fn container(&self, name: &str) -> String {
        self.obj(name).status.unwrap().container_name.unwrap()
    }

    fn status_phase(&self, name: &str) -> Option<InstancePhase> {
        self.obj(name).status.and_then(|s| s.phase)
    }

    fn unit(&self, name: &str) -> std::path::PathBuf {
        self.store.layout().unit_dir(&self.container(name))
    }

    /// What the entry wrapper writes when the agent's process ends.
    fn write_marker(&self, name: &str, reason: &str, code: i64) {
        let state = self.unit(name).join("state");
        std::fs::create_dir_all(&state).unwrap();
        std::fs::write(
            state.join("exit.json"),
            format!(
                r#"{{"exitCode":{code},"startedAt":"2026-11-26T00:00:00Z","finishedAt":"2026-11-26T00:01:00Z","reason":"{reason}"}}"#
            ),
        )
        .unwrap();
    }

    /// The session ends: the wrapper's marker says `reason`, then the
    /// process ends with `code` (the kernel's OOM killer when `oom`).
    fn session_ends(&self, name: &str, reason: &str, code: i64, oom: bool) {
        self.write_marker(name, reason, code);
        self.fake.end(&self.container(name), code, oom);
    }

    /// The agent ended the session itself.
    fn agent_exits(&self, name: &str, code: i64) {
        self.session_ends(name, "exited", code, false);
    }

    fn engine_objects(&self, name: &str) -> (Vec<String>, Vec<String>) {
        let uid = self.obj(name).metadata.uid.unwrap();
        self.fake.objects(&[(label::UID, &uid)])
    }
}

/// A reconciler whose operator's home is `operator`: a test never reads the
/// logins of whoever runs it.
fn reconciler(store: &Store, engines: Engines, operator: &std::path::Path) -> Reconciler {
    let mut reconciler = Reconciler::new(store.clone(), engines);
    reconciler.credentials_home = Ok(operator.to_owned());
    reconciler
}

/// Another home on the same engine, with instance `name` launched in it;
/// returns the home (kept alive by the caller) and its container's name.
/// The sweep's `findings` say it removed the engine object `container`.
fn assert_removed(findings: &[sweep::Finding], container: &str) {
    assert!(
        findings.iter().any(|f| matches!(
            f,
            sweep::Finding::EngineObjectRemoved { name, .. } if name == container
        )),
        "{findings:?}"
    );
}

async fn neighbour(fake: &FakeEngine, name: &str) -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let (store, _) = Store::open(Layout::new(dir.path())).unwrap();
    // An operator's home with nothing in it.
    let reconciler = reconciler(
        &store,
        Engines::single(fake.engine()),
        &dir.path().join("operator-home"),
    );
    store.apply_instance(&World::manifest(name, "")).unwrap();
    reconciler.reconcile(name, None).await.unwrap();
    let container = store
        .get_instance(name)
        .unwrap()
        .status
        .unwrap()
        .container_name
        .unwrap();
    (dir, container)
}

// The restore ladder.

#[tokio::test]
async fn a_launch_pins_the_recipe_and_runs_the_container() {
    let w = World::new();
    let container = w.launch("a", "").await;
    assert_eq!(w.fake.container_running(&container), Some(true));
    let recipe = w.obj("a").status.unwrap().recipe.unwrap();
    assert_eq!(recipe.image, IMAGE);
    assert!(recipe.first_run_at.is_some());
    assert_eq!(w.engine_objects("a").1, [container]);
}

#[tokio::test]
async fn a_running_instance_needs_nothing_and_writes_nothing() {
    let w = World::new();
    w.launch("a", "").await;
    let object = w.store.layout().object_file(&w.container("a"));
    let before = std::fs::read(&object).unwrap();
    let calls = w.reconciler.engines.calls();
    let outcome = w.reconcile("a").await;
    assert_eq!(
        outcome,
        Outcome::Converged {
            phase: InstancePhase::Running,
            tier: None
        }
    );
    assert_eq!(
        w.reconciler.engines.calls() - calls,
        4,
        "one list per object kind"
    );
    assert_eq!(std::fs::read(&object).unwrap(), before);
}

#[tokio::test]
async fn a_killed_container_is_started_again_tier_1() {
    let w = World::new();
    let container = w.launch("a", "").await;
    w.fake.end(&container, 137, false);
    let outcome = w.reconcile("a").await;
    assert_eq!(
        outcome,
        Outcome::Converged {
            phase: InstancePhase::Running,
            tier: Some(Tier::Started)
        }
    );
    let session = w.obj("a").status.unwrap().session.unwrap();
    assert_eq!(
        (session.exit_code, session.reason.as_deref()),
        (Some(137), Some("killed"))
    );
}

#[tokio::test]
async fn a_removed_container_is_created_again_tier_2_and_the_unknown_said() {
    let w = World::new();
    let container = w.launch("a", "").await;
    w.fake.remove_behind_our_back(&container);
    let outcome = w.reconcile("a").await;
    assert_eq!(
        outcome,
        Outcome::Converged {
            phase: InstancePhase::Running,
            tier: Some(Tier::Recreated)
        }
    );
    let status = w.obj("a").status.unwrap();
    let unknown = find_condition(&status.conditions, condition::SESSION_OUTCOME).unwrap();
    assert_eq!(unknown.reason, reason::UNKNOWN);
    assert_eq!(w.fake.container_running(&container), Some(true));
}

#[tokio::test]
async fn a_lost_image_without_a_role_to_rebuild_fails_permanently() {
    let w = World::new();
    let container = w.launch("a", "").await;
    w.fake.remove_behind_our_back(&container);
    w.fake.forget_image(IMAGE);
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(err.is_permanent(), "{err}");
    assert_eq!(w.status_phase("a"), Some(InstancePhase::Failed));
    let ready = find_condition(&w.obj("a").status.unwrap().conditions, condition::READY)
        .unwrap()
        .clone();
    assert_eq!(ready.reason, reason::RECIPE_UNAVAILABLE);
}

/// An engine whose machine has the unit's paths but not its files (empty,
/// a stale copy) never runs the session: the proof before the first create
/// fails at once, for good, naming the reason; no container that binds the
/// unit is made there (the look's goes at once), and the unit on this
/// machine is left as it is. The same engine seeing the files again starts
/// it, and the proof is pinned.
#[tokio::test]
async fn an_engine_that_does_not_see_the_unit_never_starts_the_session() {
    let w = World::new();
    w.apply("a", "");
    w.fake.set_files_elsewhere(true);
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(err.is_permanent(), "{err}");
    assert!(
        err.to_string().contains("does not see this session's unit"),
        "{err}"
    );
    assert_eq!(w.status_phase("a"), Some(InstancePhase::Failed));
    let ready = find_condition(&w.obj("a").status.unwrap().conditions, condition::READY)
        .unwrap()
        .clone();
    assert_eq!(ready.reason, reason::UNIT_NOT_ON_ENGINE);
    let container = w.container("a");
    assert_eq!(w.fake.container_running(&container), None, "none made");
    let look = format!("{container}-look");
    assert_eq!(w.fake.container_running(&look), None, "the look's went");
    assert!(w.unit("a").join("home").is_dir(), "the unit is kept");
    let recipe = w.obj("a").status.unwrap().recipe.unwrap();
    assert_eq!(recipe.storage, None, "nothing proven");

    w.fake.set_files_elsewhere(false);
    w.store.set_phase("a", DesiredPhase::Kept).unwrap();
    w.store.set_phase("a", DesiredPhase::Running).unwrap();
    let outcome = w.reconcile("a").await;
    assert!(matches!(outcome, Outcome::Converged { .. }), "{outcome:?}");
    assert_eq!(w.fake.container_running(&container), Some(true));
    let storage = w.obj("a").status.unwrap().recipe.unwrap().storage;
    let storage = storage.expect("the proof pinned");
    assert_eq!(storage.kind, jackin_api::storage::UnitStorage::HostPaths);
}

#[tokio::test]
async fn a_missing_image_at_launch_fails_at_once() {
    let w = World::new();
    w.store
        .apply_instance(&World::manifest("a", "").clone())
        .unwrap();
    w.fake.forget_image(IMAGE);
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(err.is_permanent(), "{err}");
    let ready = find_condition(&w.obj("a").status.unwrap().conditions, condition::READY)
        .unwrap()
        .clone();
    assert_eq!(ready.reason, reason::IMAGE_NOT_FOUND);
}

#[tokio::test]
async fn a_sidecar_image_the_engine_lacks_is_a_permanent_failure() {
    let w = World::new();
    w.apply("a", "  sidecars: [{name: helper, image: no/such:1}]\n");
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(err.is_permanent(), "{err}");
    assert!(err.to_string().contains("No such image"), "{err}");
}

#[tokio::test]
async fn kept_removes_the_engine_objects_and_keeps_the_unit() {
    let w = World::new();
    w.launch("a", "").await;
    let unit = w.unit("a");
    w.store.set_phase("a", DesiredPhase::Kept).unwrap();
    assert_eq!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Kept,
            tier: None
        }
    );
    assert_eq!(w.engine_objects("a"), (vec![], vec![]));
    assert!(unit.exists());
}

#[tokio::test]
async fn a_purge_leaves_nothing_and_drops_the_row_last() {
    let w = World::new();
    w.launch("a", "").await;
    let uid = w.obj("a").metadata.uid.unwrap();
    let unit = w.unit("a");
    w.store.set_phase("a", DesiredPhase::Purged).unwrap();
    assert_eq!(w.reconcile("a").await, Outcome::Gone);
    assert_eq!(w.fake.objects(&[(label::UID, &uid)]), (vec![], vec![]));
    assert!(!unit.exists());
    assert!(w.store.rows().unwrap().is_empty());
    // Nobody asked for it, so nothing is remembered as ended by jackin.
    let again = World::manifest("a", "");
    assert_eq!(w.store.ended_as(&again).unwrap(), None);
}

#[tokio::test]
async fn reading_an_interrupted_purge_changes_nothing_and_the_loop_finishes_it() {
    let w = World::new();
    w.launch("a", "").await;
    let container = w.container("a");
    let lock = w.store.layout().unit_lock_file(&container);
    w.store.set_phase("a", DesiredPhase::Kept).unwrap();
    w.reconcile("a").await;
    w.store.set_phase("a", DesiredPhase::Purged).unwrap();
    // A purge that died right after removing the unit directory.
    std::fs::remove_dir_all(w.unit("a")).unwrap();
    let before = std::fs::read(w.store.layout().index_file()).unwrap();
    assert!(matches!(
        w.store.get_instance("a"),
        Err(StoreError::InstanceNotFound(_))
    ));
    assert!(w.store.list_instances().unwrap().instances.is_empty());
    assert_eq!(
        std::fs::read(w.store.layout().index_file()).unwrap(),
        before
    );
    assert!(lock.exists(), "a read removed the unit lock");
    assert_eq!(w.reconcile("a").await, Outcome::Gone);
    assert!(w.store.rows().unwrap().is_empty());
    assert!(!lock.exists());
    assert_eq!(w.reconcile("a").await, Outcome::Absent);
}

#[tokio::test]
async fn two_networks_of_one_instance_converge_to_one() {
    let w = World::new();
    let container = w.launch("a", "").await;
    let labels = w
        .obj("a")
        .status
        .unwrap()
        .recipe
        .unwrap()
        .labels
        .into_iter()
        .collect();
    w.fake.add_network(&container, labels);
    w.reconcile("a").await;
    assert_eq!(w.engine_objects("a").1.len(), 1);
}

#[tokio::test]
async fn an_unreachable_engine_is_only_recorded_and_is_not_permanent() {
    let w = World::new();
    w.launch("a", "").await;
    let before = w.obj("a");
    w.fake.set_unreachable(true);
    w.store.set_phase("a", DesiredPhase::Purged).unwrap();
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(!err.is_permanent());
    // Nothing was acted on: the phase is as it was, the objects are there;
    // the instance only says which engine it waits for.
    let after = w.obj("a");
    let status = after.status.clone().unwrap();
    assert_eq!(status.phase, before.status.clone().unwrap().phase);
    let ready = find_condition(&status.conditions, condition::READY).unwrap();
    assert_eq!(ready.reason, reason::ENGINE_UNREACHABLE);
    assert!(
        ready.message.contains("engine default"),
        "{}",
        ready.message
    );
    assert_eq!(w.engine_objects("a").0.len(), 1);
    w.fake.set_unreachable(false);
    assert_eq!(w.reconcile("a").await, Outcome::Gone);
}

// The session edge.

#[tokio::test]
async fn a_clean_exit_under_ask_with_nothing_unfinished_is_purged_and_remembered() {
    let w = World::new();
    w.launch("a", "").await;
    w.agent_exits("a", 0);
    assert_eq!(w.reconcile("a").await, Outcome::Gone);
    let ended = w
        .store
        .ended_as(&World::manifest("a", ""))
        .unwrap()
        .unwrap();
    assert_eq!(ended.by, SettledBy::ExitPolicy);
    // The same manifest does not bring it back; a changed one does.
    assert_eq!(w.apply("a", ""), ApplyOutcome::Ended);
    assert_eq!(
        w.apply("a", "  command: [sleep, \"7\"]\n"),
        ApplyOutcome::Created
    );
}

#[tokio::test]
async fn a_corrupt_record_of_ended_instances_is_kept_aside_not_fatal() {
    let w = World::new();
    let records = w.store.layout().data_dir().join("ended.json");
    std::fs::create_dir_all(records.parent().unwrap()).unwrap();
    std::fs::write(&records, "{ not json").unwrap();
    assert_eq!(w.apply("a", ""), ApplyOutcome::Created);
    let kept: Vec<String> = std::fs::read_dir(w.store.layout().data_dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("ended.json.corrupt-"))
        .collect();
    assert_eq!(kept.len(), 1, "kept aside, not deleted");
    // And a purge jackin decides can still record its instance.
    w.reconcile("a").await;
    w.agent_exits("a", 0);
    assert_eq!(w.reconcile("a").await, Outcome::Gone);
    assert!(
        w.store
            .ended_as(&World::manifest("a", ""))
            .unwrap()
            .is_some()
    );
}

#[tokio::test]
async fn a_non_zero_exit_is_preserved_as_crashed_and_not_restarted() {
    let w = World::new();
    let container = w.launch("a", "").await;
    w.agent_exits("a", 3);
    assert_eq!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Crashed,
            tier: None
        }
    );
    assert_eq!(w.fake.container_running(&container), Some(false));
    assert!(w.obj("a").status.unwrap().settled.is_none());
}

#[tokio::test]
async fn a_stop_signal_is_never_the_agent_ending_its_session() {
    let w = World::new();
    w.launch("a", "").await;
    // The agent traps SIGTERM and exits 0: the wrapper still saw the signal.
    w.session_ends("a", "signal:TERM", 0, false);
    assert_eq!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Running,
            tier: Some(Tier::Started)
        }
    );
}

#[tokio::test]
async fn the_keep_policy_settles_in_status_and_leaves_the_spec_alone() {
    let w = World::new();
    w.workspace("hoard", "{exitPolicy: keep}");
    w.launch("a", "  workspace: hoard\n").await;
    w.agent_exits("a", 0);
    w.reconcile("a").await;
    let obj = w.obj("a");
    assert_eq!(obj.spec.phase, DesiredPhase::Running);
    assert_eq!(obj.metadata.generation, Some(1));
    let settled = obj.status.clone().unwrap().settled.unwrap();
    assert_eq!(
        (settled.phase, settled.by),
        (DesiredPhase::Kept, SettledBy::ExitPolicy)
    );
    assert_eq!(obj.desired_phase(), DesiredPhase::Kept);
    assert_eq!(w.status_phase("a"), Some(InstancePhase::Kept));
}

#[tokio::test]
async fn re_applying_the_unchanged_manifest_after_a_settlement_restarts_nothing() {
    let w = World::new();
    w.workspace("hoard", "{exitPolicy: keep}");
    w.launch("a", "  workspace: hoard\n").await;
    w.agent_exits("a", 0);
    w.reconcile("a").await;
    assert_eq!(
        w.apply("a", "  workspace: hoard\n"),
        ApplyOutcome::Unchanged
    );
    assert_eq!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Kept,
            tier: None
        }
    );
    assert_eq!(w.engine_objects("a").0, Vec::<String>::new());
}

#[tokio::test]
async fn a_resume_after_a_settlement_starts_a_new_session() {
    let w = World::new();
    w.workspace("hoard", "{exitPolicy: keep}");
    w.launch("a", "  workspace: hoard\n").await;
    w.agent_exits("a", 0);
    w.reconcile("a").await;
    // A resume request is later than the settlement, by the clock.
    tokio::time::sleep(Duration::from_millis(5)).await;
    session::resume(&w.store, "a", None).unwrap();
    assert_eq!(w.obj("a").desired_phase(), DesiredPhase::Running);
    let outcome = w.reconcile("a").await;
    assert!(
        matches!(
            outcome,
            Outcome::Converged {
                phase: InstancePhase::Running,
                ..
            }
        ),
        "{outcome:?}"
    );
}

#[tokio::test]
async fn a_changed_spec_supersedes_a_settlement() {
    let w = World::new();
    w.workspace("hoard", "{exitPolicy: keep}");
    w.launch("a", "  workspace: hoard\n").await;
    w.agent_exits("a", 0);
    w.reconcile("a").await;
    assert_eq!(
        w.apply("a", "  workspace: hoard\n  command: [sleep, \"9\"]\n"),
        ApplyOutcome::Configured
    );
    assert_eq!(w.obj("a").desired_phase(), DesiredPhase::Running);
}

#[tokio::test]
async fn an_oom_kill_is_preserved_not_handed_to_the_policy() {
    let w = World::new();
    w.launch("a", "").await;
    w.session_ends("a", "exited", 137, true);
    assert_eq!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Crashed,
            tier: None
        }
    );
    let session = w.obj("a").status.unwrap().session.unwrap();
    assert_eq!(session.reason.as_deref(), Some("oom"));
}

#[tokio::test]
async fn a_malformed_marker_is_reported_and_the_engine_code_used() {
    let w = World::new();
    let container = w.launch("a", "").await;
    let state = w.unit("a").join("state");
    std::fs::write(state.join("exit.json"), "{ not json").unwrap();
    w.fake.end(&container, 137, false);
    w.reconcile("a").await;
    let status = w.obj("a").status.unwrap();
    assert!(is_condition_true(
        &status.conditions,
        condition::MARKER_MALFORMED
    ));
    assert_eq!(status.session.unwrap().exit_code, Some(137));
}

#[tokio::test]
async fn a_marker_means_nothing_while_the_instance_is_meant_to_be_kept() {
    let w = World::new();
    w.launch("a", "").await;
    w.store.set_phase("a", DesiredPhase::Kept).unwrap();
    w.reconcile("a").await;
    // Whatever the file says, jackin stopped it: no exit policy runs.
    w.write_marker("a", "exited", 0);
    assert_eq!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Kept,
            tier: None
        }
    );
    assert!(w.obj("a").status.unwrap().settled.is_none());
}

// Sweeps.

#[tokio::test]
async fn the_engine_sweep_removes_what_a_vanished_instance_left() {
    let w = World::new();
    let container = w.launch("a", "").await;
    // The unit is lost without a purge (a deleted home directory, say).
    std::fs::remove_dir_all(w.unit("a")).unwrap();
    std::fs::remove_file(w.store.layout().index_file()).unwrap();
    let findings = sweep::sweep(&w.store, &w.reconciler.engines, sweep::Options::default())
        .await
        .unwrap();
    assert_removed(&findings, &container);
    assert_eq!(w.fake.container_running(&container), None);
}

#[tokio::test]
async fn the_engine_sweep_leaves_another_homes_objects_alone() {
    let ours = World::new();
    ours.launch("a", "").await;
    let (_theirs, their_container) = neighbour(&ours.fake, "b").await;
    sweep::sweep(
        &ours.store,
        &ours.reconciler.engines,
        sweep::Options::default(),
    )
    .await
    .unwrap();
    assert_eq!(ours.fake.container_running(&their_container), Some(true));
}

/// Two kept sessions of a workspace that keeps one: "a", then "b", the
/// more recently running.
async fn two_kept_over_a_cap_of_one(w: &World) {
    w.workspace("capped", "{keep: {max: 1}}");
    for name in ["a", "b"] {
        w.launch(name, "  workspace: capped\n").await;
        w.store.set_phase(name, DesiredPhase::Kept).unwrap();
        w.reconcile(name).await;
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

#[tokio::test]
async fn the_keep_cap_settles_a_purge_without_touching_the_spec() {
    let w = World::new();
    two_kept_over_a_cap_of_one(&w).await;
    let planned = crate::keep_cap::plan(&w.store).unwrap();
    let enforced = crate::keep_cap::enforce(&w.store).await.unwrap();
    assert_eq!(enforced.capped, planned);
    assert_eq!(enforced.purged, ["a"], "{enforced:?}");
    let obj = w.obj("a");
    assert_eq!(obj.spec.phase, DesiredPhase::Kept);
    assert_eq!(obj.status.unwrap().settled.unwrap().by, SettledBy::KeepCap);
}

/// The cap's decision is checked again under the unit lock: a session
/// resumed after the plan was made is not purged by it.
#[tokio::test]
async fn a_keep_cap_purge_planned_before_a_resume_is_not_carried_out() {
    let w = World::new();
    two_kept_over_a_cap_of_one(&w).await;
    let planned = crate::keep_cap::plan(&w.store).unwrap();
    assert!(
        matches!(planned.as_slice(), [crate::keep_cap::Capped::Purge { name, .. }] if name == "a"),
        "{planned:?}"
    );
    w.store.set_phase("a", DesiredPhase::Running).unwrap();
    let findings = planned.into_iter().map(sweep::Finding::KeepCap).collect();
    let done = sweep::execute(&w.store, &w.reconciler.engines, findings)
        .await
        .unwrap();
    assert!(done.is_empty(), "{done:?}");
    assert_eq!(w.obj("a").status.unwrap().settled, None);
    assert_eq!(w.obj("a").desired_phase(), DesiredPhase::Running);
}

/// Whether someone holds the lock file at `path` now: a non-blocking
/// attempt through another open file fails while it is held, even by this
/// process.
fn held(path: &std::path::Path) -> bool {
    jackin_files::fsutil::FileLock::try_acquire(path)
        .unwrap()
        .is_none()
}

/// What the fake engine was asked to stop or remove, and whether the lock
/// file at `lock` was held at that moment.
fn record_changes(fake: &FakeEngine, lock: std::path::PathBuf) -> Arc<Mutex<Vec<(String, bool)>>> {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    fake.before_change(move |action, _| {
        sink.lock().unwrap().push((action.to_owned(), held(&lock)));
    });
    seen
}

/// The sweep removes a vanished instance's engine objects through `act`,
/// each under the index lock and only while no index row claims its uid: a
/// unit indexed again between the plan and its execution keeps them.
#[tokio::test]
async fn the_sweep_removes_a_vanished_instances_objects_under_the_index_lock() {
    let w = World::new();
    let container = w.launch("a", "").await;
    let layout = w.store.layout().clone();
    let aside = w._dir.path().join("aside");
    // The unit is lost without a purge; the index goes with it.
    std::fs::rename(w.unit("a"), &aside).unwrap();
    std::fs::remove_file(layout.index_file()).unwrap();
    let planned = sweep::plan(&w.store, &w.reconciler.engines, false)
        .await
        .unwrap();
    let removals = |findings: &[sweep::Finding]| {
        findings
            .iter()
            .filter(|f| matches!(f, sweep::Finding::EngineObjectRemoved { .. }))
            .count()
    };
    assert_eq!(
        removals(&planned),
        2,
        "the container and its network: {planned:?}"
    );

    // Found again before the plan runs (restored by hand, indexed by
    // another sweep): its objects stay.
    std::fs::rename(&aside, layout.unit_dir(&container)).unwrap();
    // (The index is missing, so reading it repairs it from the units.)
    w.store.reindex_unit("a", &container).unwrap();
    assert!(w.store.rows().unwrap().iter().any(|row| row.name == "a"));
    let seen = record_changes(&w.fake, layout.index_lock_file());
    let done = sweep::execute(&w.store, &w.reconciler.engines, planned)
        .await
        .unwrap();
    assert_eq!(removals(&done), 0, "{done:?}");
    assert_eq!(w.fake.container_running(&container), Some(true));
    assert!(seen.lock().unwrap().is_empty());

    // Lost for good: they go, each while the sweep holds the index lock.
    std::fs::rename(layout.unit_dir(&container), &aside).unwrap();
    std::fs::remove_file(layout.index_file()).unwrap();
    let done = sweep::sweep(&w.store, &w.reconciler.engines, sweep::Options::default())
        .await
        .unwrap();
    assert_eq!(removals(&done), 2, "{done:?}");
    assert_eq!(w.fake.container_running(&container), None);
    let seen = seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            ("remove-container".to_owned(), true),
            ("remove-network".to_owned(), true)
        ]
    );
}

/// A row the sweep corrects is written under the instance's unit lock: with
/// someone else holding it, the correction waits for the next sweep.
#[tokio::test]
async fn the_sweep_corrects_a_row_only_under_the_unit_lock() {
    let w = World::new();
    let container = w.launch("a", "").await;
    w.fake.remove_behind_our_back(&container);
    let planned = sweep::plan(&w.store, &w.reconciler.engines, false)
        .await
        .unwrap();
    assert!(
        planned
            .iter()
            .any(|f| matches!(f, sweep::Finding::RowCorrected { name, .. } if name == "a")),
        "{planned:?}"
    );
    let someone = w.store.try_lock_instance("a").unwrap().unwrap();
    let done = sweep::execute(&w.store, &w.reconciler.engines, planned.clone())
        .await
        .unwrap();
    assert!(done.is_empty(), "{done:?}");
    assert_eq!(w.status_phase("a"), Some(InstancePhase::Running));
    drop(someone);
    let done = sweep::execute(&w.store, &w.reconciler.engines, planned)
        .await
        .unwrap();
    assert_eq!(done.len(), 1, "{done:?}");
    assert_eq!(w.status_phase("a"), Some(InstancePhase::Exited));
}

/// The idle watch's restart recycles the container through `act`: the
/// graceful stop and the removal both happen under the unit lock, and the
/// session is recorded in between.
#[tokio::test]
async fn the_idle_recycle_stops_and_removes_under_the_unit_lock() {
    let w = World::new();
    let container = w.launch("a", "").await;
    let id = w
        .fake
        .engine()
        .inspect_container(&container)
        .await
        .unwrap()
        .unwrap()
        .id
        .unwrap();
    let seen = record_changes(&w.fake, w.store.layout().unit_lock_file(&container));
    assert!(w.reconciler.recycle("a", &id).await.unwrap());
    assert_eq!(
        seen.lock().unwrap().clone(),
        [
            ("stop-container".to_owned(), true),
            ("remove-container".to_owned(), true)
        ]
    );
    assert!(!held(&w.store.layout().unit_lock_file(&container)));
    assert_eq!(w.fake.container_running(&container), None);
    // The next reconcile makes it again in the same unit.
    assert_eq!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Running,
            tier: Some(Tier::Recreated)
        }
    );
}

#[tokio::test]
async fn a_dry_run_sweep_changes_nothing() {
    let w = World::new();
    let container = w.launch("a", "").await;
    std::fs::remove_dir_all(w.unit("a")).unwrap();
    std::fs::remove_file(w.store.layout().index_file()).unwrap();
    let options = sweep::Options {
        dry_run: true,
        images: false,
    };
    let findings = sweep::sweep(&w.store, &w.reconciler.engines, options)
        .await
        .unwrap();
    assert!(!findings.is_empty());
    assert_eq!(w.fake.container_running(&container), Some(true));
}

/// Every file under `dir`, with its contents, for before/after comparisons.
fn tree(dir: &std::path::Path) -> Vec<(std::path::PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut todo = vec![dir.to_owned()];
    while let Some(dir) = todo.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries {
            let path = entry.unwrap().path();
            if path.is_dir() {
                todo.push(path.clone());
                out.push((path, Vec::new()));
            } else {
                let bytes = std::fs::read(&path).unwrap();
                out.push((path, bytes));
            }
        }
    }
    out.sort();
    out
}

#[tokio::test]
async fn a_sweep_plan_reads_only_and_its_execution_does_exactly_it() {
    let w = World::new();
    // Something for each sweep: a unit the index lost, an unreadable unit,
    // an orphan lock, the temporary file of a write killed half-way (the
    // soak's kill -9 left one), a purge interrupted after its unit went,
    // and the engine objects of an instance whose unit was deleted by hand.
    w.launch("lost", "").await;
    w.launch("gone", "").await;
    w.launch("purging", "").await;
    w.store.set_phase("purging", DesiredPhase::Kept).unwrap();
    w.reconcile("purging").await;
    w.store.set_phase("purging", DesiredPhase::Purged).unwrap();
    std::fs::remove_dir_all(w.unit("purging")).unwrap();
    let gone = w.container("gone");
    std::fs::remove_dir_all(w.unit("gone")).unwrap();
    let data = w.store.layout().data_dir();
    let unreadable = w.store.layout().object_file("jk-deadbeef-x");
    std::fs::create_dir_all(unreadable.parent().unwrap()).unwrap();
    std::fs::write(unreadable, "{not json").unwrap();
    std::fs::write(data.join("jk-0rphan00-y.lock"), "").unwrap();
    std::fs::write(data.join(".tmp-k1lled"), "{\"half\": ").unwrap();
    let lost = w.container("lost");
    let index = std::fs::read_to_string(w.store.layout().index_file()).unwrap();
    let mut rows: serde_json::Value = serde_json::from_str(&index).unwrap();
    rows["instances"]
        .as_array_mut()
        .unwrap()
        .retain(|r| r["name"] != "lost" && r["name"] != "gone");
    std::fs::write(w.store.layout().index_file(), rows.to_string()).unwrap();

    let before = tree(w.store.layout().root());
    let engine_before = w.fake.objects(&[]);
    let plan = sweep::plan(&w.store, &w.reconciler.engines, false)
        .await
        .unwrap();
    assert_eq!(tree(w.store.layout().root()), before, "planning wrote");
    assert_eq!(w.fake.objects(&[]), engine_before, "planning acted");
    let kinds: Vec<String> = plan.iter().map(|f| f.describe(true)).collect();
    for expected in [
        format!("would index unit {lost} (instance/lost)"),
        "would move aside unreadable unit jk-deadbeef-x".to_owned(),
        "would finish the interrupted purge of instance/purging".to_owned(),
        "would remove orphan lock".to_owned(),
        format!(
            "would remove the unfinished write {}",
            data.join(".tmp-k1lled").display()
        ),
        format!("would remove container {gone} ("),
    ] {
        assert!(
            kinds.iter().any(|k| k.starts_with(&expected)),
            "no {expected:?} in {kinds:#?}"
        );
    }

    let done = sweep::execute(&w.store, &w.reconciler.engines, plan.clone())
        .await
        .unwrap();
    assert_eq!(done, plan, "what was done is what was planned");
    assert_eq!(w.obj("lost").metadata.name, "lost");
    assert!(w.store.interrupted_purge("purging").unwrap().is_none());
    assert!(!data.join("jk-deadbeef-x").exists());
    assert!(!data.join("jk-0rphan00-y.lock").exists());
    assert!(!data.join(".tmp-k1lled").exists());
    assert_eq!(w.fake.container_running(&gone), None);
    let again = sweep::plan(&w.store, &w.reconciler.engines, false)
        .await
        .unwrap();
    assert_eq!(again, vec![], "a second sweep finds nothing");
}

// Dry runs are the real decision.

/// Reconciles `name` toward `phase`, recording the steps it takes.
async fn steps_taken(w: &World, name: &str, phase: DesiredPhase) -> Vec<Step> {
    w.store.set_phase(name, phase).unwrap();
    reconcile_recording_steps(w, name).await
}

/// Reconciles `name`, recording the steps it takes.
async fn reconcile_recording_steps(w: &World, name: &str) -> Vec<Step> {
    reconcile_with_steps(w, name).await.1
}

/// The steps of a plan that a reconcile announces as it runs them (not
/// its phase writes and looks again, which only a dry run shows).
fn announced(steps: &[Step]) -> Vec<Step> {
    steps.iter().filter(|s| s.announced()).cloned().collect()
}

/// `steps` as a dry run can know them: how a session that a step of the
/// same reconcile stops ends is read from the stopped container, so the
/// record that follows a stop is left out (a dry run cannot say what the
/// agent will exit with).
fn foreseeable(steps: Vec<Step>) -> Vec<Step> {
    let mut kept: Vec<Step> = Vec::new();
    for step in steps {
        let after_stop = matches!(kept.last(), Some(Step::StopContainer { .. }));
        if after_stop && matches!(step, Step::RecordSession(_)) {
            continue;
        }
        kept.push(step);
    }
    kept
}

/// Reconciles `name`: its outcome, and the steps it took.
async fn reconcile_with_steps(w: &World, name: &str) -> (Outcome, Vec<Step>) {
    let taken = Arc::new(Mutex::new(Vec::new()));
    let mut reconciler = w.reconciler.clone();
    let sink = taken.clone();
    reconciler.progress = Arc::new(move |_, event| {
        if let Progress::Step(step) = event {
            sink.lock().unwrap().push(step.clone());
        }
    });
    let outcome = reconciler.reconcile(name, None).await.unwrap();
    (outcome, taken.lock().unwrap().clone())
}

#[tokio::test]
async fn the_dry_run_of_an_apply_is_what_the_apply_then_does() {
    let w = World::new();
    // A new instance: its first launch.
    let new = World::manifest("a", "");
    let (outcome, would_be) = w.store.preview_instance(&new).unwrap();
    assert_eq!(outcome, ApplyOutcome::Created);
    let planned = w.reconciler.preview(would_be.unwrap()).await.unwrap();
    assert!(w.store.rows().unwrap().is_empty(), "the preview wrote");
    w.apply("a", "");
    assert_eq!(
        announced(&planned.plan.steps),
        reconcile_recording_steps(&w, "a").await
    );
    // A changed spec on a running instance: it is to be kept.
    let changed = World::manifest("a", "  phase: Kept\n");
    let (outcome, would_be) = w.store.preview_instance(&changed).unwrap();
    assert_eq!(outcome, ApplyOutcome::Configured);
    let planned = w.reconciler.preview(would_be.unwrap()).await.unwrap();
    w.store.apply_instance(&changed).unwrap();
    let taken = foreseeable(reconcile_recording_steps(&w, "a").await);
    assert_eq!(announced(&planned.plan.steps), taken);
    assert!(
        taken
            .iter()
            .any(|s| matches!(s, Step::StopContainer { .. })),
        "{taken:?}"
    );
}

/// A rollout's dry run, round by round, is what the rollout then does: the
/// pin, the graceful stop, the replacement; the conversation stays.
#[tokio::test]
async fn the_dry_run_of_a_rollout_is_what_the_rollout_does() {
    let w = World::new();
    w.launch("a", "  env: [{name: MODE, value: one}]\n").await;
    let conversation = w.obj("a").status.unwrap().conversation;
    w.apply("a", "  env: [{name: MODE, value: two}]\n");
    w.reconcile("a").await;
    let mut asked = w.obj("a");
    asked
        .metadata
        .annotations
        .insert(annotation::ROLLOUT.into(), "t1".into());
    let planned: Vec<Step> = w
        .reconciler
        .preview_rollout(asked)
        .await
        .unwrap()
        .into_iter()
        .flat_map(|plan| announced(&plan.steps))
        .collect();
    w.store
        .set_annotation("a", annotation::ROLLOUT, Some("t1"))
        .unwrap();
    let (outcome, taken) = reconcile_with_steps(&w, "a").await;
    assert_eq!(planned, foreseeable(taken.clone()));
    let kinds: Vec<&str> = taken.iter().map(Step::kind).collect();
    assert_eq!(
        kinds,
        [
            "rollout-recipe",
            "stop-container",
            "record-session",
            "remove-container",
            "create-container",
            "forward-credentials",
            "start-container"
        ]
    );
    assert_eq!(
        outcome,
        Outcome::Converged {
            phase: InstancePhase::Running,
            tier: Some(Tier::Recreated)
        }
    );
    let obj = w.obj("a");
    let status = obj.status.unwrap();
    // The same conversation; only its new start's report is awaited anew,
    // with a new id minted for the start's last rung.
    let without_the_start = |c: Option<jackin_api::instance::Conversation>| {
        c.map(|c| jackin_api::instance::Conversation {
            start_settles_at: None,
            next_id: None,
            ..c
        })
    };
    assert_eq!(
        without_the_start(status.conversation),
        without_the_start(conversation)
    );
    assert_eq!(status.recipe.unwrap().env[0].value.as_deref(), Some("two"));
    assert!(!is_condition_true(
        &status.conditions,
        condition::SPEC_DRIFT
    ));
    // Handled: the same request does nothing again.
    assert!(reconcile_recording_steps(&w, "a").await.is_empty());
}

/// The session edge is decided with the rest of the plan: the dry run of
/// an unchanged manifest, after the agent ended its session, is what the
/// loop then does, for a crash (nothing: it stays `Crashed`), an ending
/// the policy keeps and one it cleans up.
#[tokio::test]
async fn the_dry_run_of_an_ended_session_is_what_the_loop_then_does() {
    let w = World::new();
    w.workspace("keeps", "{exitPolicy: keep}");
    w.workspace("cleans", "{exitPolicy: clean}");
    let cases = [
        (
            "crashes",
            "",
            3,
            InstancePhase::Crashed,
            vec!["record-session", "settle"],
        ),
        (
            "kept",
            "  workspace: keeps\n",
            0,
            InstancePhase::Kept,
            vec![
                "record-session",
                "settle",
                "retire-marker",
                "remove-container",
                "remove-network",
            ],
        ),
        (
            "cleaned",
            "  workspace: cleans\n",
            0,
            InstancePhase::Purging,
            vec![
                "record-session",
                "settle",
                "retire-marker",
                "stamp-purging",
                "remove-container",
                "remove-network",
                "save-conversation",
                "finish-purge",
            ],
        ),
    ];
    for (name, lines, code, target, kinds) in cases {
        w.launch(name, lines).await;
        w.agent_exits(name, code);
        let planned = w.reconciler.preview(w.obj(name)).await.unwrap();
        assert_eq!(planned.plan.target, target, "{name}");
        let steps = announced(&planned.plan.steps);
        let shown: Vec<&str> = steps.iter().map(Step::kind).collect();
        assert_eq!(shown, kinds, "{name}");
        assert_eq!(steps, reconcile_recording_steps(&w, name).await, "{name}");
        if target == InstancePhase::Crashed {
            // Recorded: from now on the dry run and the loop do nothing,
            // where a dry run once said "tier 1 starts it".
            let again = w.reconciler.preview(w.obj(name)).await.unwrap();
            assert!(again.plan.steps.is_empty(), "{:?}", again.plan);
            assert_eq!(again.plan.target, InstancePhase::Crashed);
            assert!(reconcile_recording_steps(&w, name).await.is_empty());
            assert_eq!(w.status_phase(name), Some(InstancePhase::Crashed));
        }
    }
}

/// A dry run and a reconcile take the one look at one world: the view
/// the preview planned from is, field for field, the one the reconcile's
/// first round planned from (the engine's objects, the checkouts, the
/// session's end, the exit policy, the rollout), each built by one call of
/// `look`.
#[tokio::test]
async fn the_dry_run_and_the_reconcile_plan_from_the_same_look() {
    let w = World::new();
    w.workspace("keeps", "{exitPolicy: keep}");
    w.launch("a", "  workspace: keeps\n").await;
    w.agent_exits("a", 0);
    w.reconciler.looked.lock().unwrap().clear();
    let before = w.obj("a");
    let planned = w.reconciler.preview(before.clone()).await.unwrap();
    let previewed = w.reconciler.looked.lock().unwrap().clone();
    assert_eq!(previewed.len(), 1, "the preview looks once");
    w.reconcile("a").await;
    let looked = w.reconciler.looked.lock().unwrap().clone();
    let reconciled = &looked[1];
    assert_eq!(&previewed[0], reconciled);
    // The world seen had something to decide on: an ending the policy
    // keeps, planned alike.
    assert!(reconciled.container.as_ref().is_some_and(|c| !c.running));
    assert_eq!(reconciled.exit_policy, ExitPolicy::Keep);
    let decided = decide(&before, reconciled, jiff::Timestamp::now());
    assert_eq!(planned.plan.steps, decided.steps);
    assert!(decided.steps.iter().any(|s| s.kind() == "settle"));
}

#[tokio::test]
async fn the_dry_run_of_keeping_is_what_keeping_does() {
    let w = World::new();
    w.launch("a", "  sidecars: [{name: helper, image: test/agent:1}]\n")
        .await;
    let planned = w.reconciler.dry_run("a", DesiredPhase::Kept).await.unwrap();
    let taken = foreseeable(steps_taken(&w, "a", DesiredPhase::Kept).await);
    assert_eq!(announced(&planned.plan.steps), taken);
    assert!(planned.blocked.is_none());
}

#[tokio::test]
async fn the_dry_run_of_a_purge_is_what_the_purge_does() {
    let w = World::new();
    w.launch("a", "").await;
    let planned = w
        .reconciler
        .dry_run("a", DesiredPhase::Purged)
        .await
        .unwrap();
    let taken = steps_taken(&w, "a", DesiredPhase::Purged).await;
    assert_eq!(announced(&planned.plan.steps), taken);
    assert_eq!(taken.last(), Some(&Step::FinishPurge));
}

#[tokio::test]
async fn the_dry_run_of_a_resume_is_what_the_resume_does() {
    let w = World::new();
    w.launch("a", "").await;
    w.store.set_phase("a", DesiredPhase::Kept).unwrap();
    w.reconcile("a").await;
    let planned = w
        .reconciler
        .dry_run("a", DesiredPhase::Running)
        .await
        .unwrap();
    let taken = steps_taken(&w, "a", DesiredPhase::Running).await;
    assert_eq!(announced(&planned.plan.steps), taken);
    assert!(taken.contains(&Step::CreateContainer));
}

#[tokio::test]
async fn a_pass_over_converged_instances_costs_one_or_two_calls_whatever_their_number() {
    let w = World::new();
    let names: Vec<String> = (0..6).map(|i| format!("n{i}")).collect();
    for name in &names {
        w.launch(name, "").await;
    }
    let pass = async || {
        let before = w.reconciler.engines.calls();
        let rows = w.store.rows().unwrap();
        assert_eq!(rows.len(), names.len());
        let results = w.reconciler.pass(&rows, 3, |_| true, |_| {}).await;
        assert!(results.iter().all(|(_, r)| r.is_ok()), "{results:?}");
        w.reconciler.engines.calls() - before
    };
    // All running: the containers are listed, nothing else.
    assert_eq!(pass().await, 1);
    // One kept: its networks must be gone, so they are listed too.
    w.store.set_phase("n0", DesiredPhase::Kept).unwrap();
    w.reconcile("n0").await;
    assert_eq!(pass().await, 2);
    // A container gone behind jackin's back: that instance is looked at
    // (and restored: the unit's identity read back through the engine,
    // its new terminal sized); the others still cost nothing of their own.
    w.fake.remove_behind_our_back(&w.container("n1"));
    let calls = pass().await;
    assert!((3..=14).contains(&calls), "{calls} calls");
    assert_eq!(pass().await, 2);
}

// The controller's loop.

/// Runs the controller with `reconciler` for `duration`, with a quick store
/// poll and no resync or sweep during the run.
async fn run_with(reconciler: Reconciler, duration: Duration) {
    let options = run::Options {
        store_poll: Duration::from_millis(50),
        resync: Duration::from_secs(3600),
        sweep: Duration::from_secs(3600),
        ..Default::default()
    };
    run::run(
        reconciler,
        options,
        Metrics::new(),
        tokio::time::sleep(duration),
    )
    .await;
}

async fn run_for(w: &World, duration: Duration) {
    run_with(w.reconciler.clone(), duration).await;
}

#[tokio::test]
async fn the_controller_restores_a_killed_container_from_its_event() {
    let w = World::new();
    let container = w.launch("a", "").await;
    let fake = w.fake.clone();
    let killer = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        fake.end(&container, 137, false);
    });
    run_for(&w, Duration::from_secs(2)).await;
    killer.await.unwrap();
    assert_eq!(w.obj("a").status.unwrap().restore.map(|r| r.tier), Some(1));
}

#[tokio::test]
async fn a_failing_instance_backs_off_despite_its_own_status_writes() {
    let w = World::new();
    w.apply(
        "a",
        "  env: [{name: T, valueFrom: {hostEnv: JACKIN_FAKE_TEST_SURELY_UNSET}}]\n",
    );
    let attempts = Arc::new(Mutex::new(0));
    let mut reconciler = w.reconciler.clone();
    let counter = attempts.clone();
    reconciler.progress = Arc::new(move |_, event| {
        if matches!(event, Progress::Step(Step::CreateContainer)) {
            *counter.lock().unwrap() += 1;
        }
    });
    run_with(reconciler, Duration::from_millis(2500)).await;
    // Backing off from 1 s (doubling, jittered) allows at most 2 attempts
    // in 2.5 s; a loop woken by its own status writes (polled every 50 ms)
    // would make dozens.
    let attempts = *attempts.lock().unwrap();
    assert!((1..=2).contains(&attempts), "{attempts} attempts");
    assert_eq!(w.status_phase("a"), Some(InstancePhase::Failed));
}

#[tokio::test]
async fn another_homes_events_wake_nothing_here() {
    let w = World::new();
    w.launch("a", "").await;
    // The other home's instance is named like ours.
    let (_theirs, their_container) = neighbour(&w.fake, "a").await;
    // Our calls, sampled after start-up settled and after the foreign event
    // (and the looks again it would cause) had time to wake us.
    let (fake, engines) = (w.fake.clone(), w.reconciler.engines.clone());
    let probe = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let quiet = engines.calls();
        fake.end(&their_container, 137, false);
        tokio::time::sleep(Duration::from_millis(1500)).await;
        engines.calls() - quiet
    });
    run_for(&w, Duration::from_millis(2000)).await;
    assert_eq!(
        probe.await.unwrap(),
        0,
        "another home's event woke this controller"
    );
}

// Several engines.

/// A world whose instances name the engine `far` besides the default one.
fn two_engines() -> (World, FakeEngine) {
    let mut w = World::new();
    let far = FakeEngine::default();
    far.add_image(IMAGE, &["sleep", "3600"]);
    let (near, far_engine) = (w.fake.engine(), far.engine());
    let engines = Engines::with_connector(Some(near), move |name| {
        let far = far_engine.clone();
        Box::pin(async move {
            match name.as_deref() {
                Some("far") => Ok(far),
                other => panic!("no engine {other:?} in this test"),
            }
        })
    });
    w.reconciler = reconciler(&w.store, engines, w.operator.path());
    (w, far)
}

#[tokio::test]
async fn instances_run_on_the_engine_they_name_and_one_engine_down_holds_up_only_its_own() {
    let (w, far) = two_engines();
    w.launch("here", "").await;
    w.launch("there", "  engine: far\n").await;
    let on = |fake: &FakeEngine, name: &str| {
        let uid = w.obj(name).metadata.uid.unwrap();
        fake.objects(&[(label::UID, &uid)]).0.len()
    };
    assert_eq!((on(&w.fake, "here"), on(&far, "here")), (1, 0));
    assert_eq!((on(&w.fake, "there"), on(&far, "there")), (0, 1));
    let rows = w.store.rows().unwrap();
    let engine_of = |name: &str| rows.iter().find(|r| r.name == name).unwrap().engine.clone();
    assert_eq!(
        (engine_of("here"), engine_of("there")),
        (None, Some("far".into()))
    );

    // The far engine goes away; both containers are removed behind
    // jackin's back. One pass: the near one is restored, the far one waits.
    far.set_unreachable(true);
    let near_container = w.container("here");
    w.fake.remove_behind_our_back(&near_container);
    let results = w.reconciler.pass(&rows, 4, |_| true, |_| {}).await;
    let result = |name: &str| &results.iter().find(|(n, _)| n == name).unwrap().1;
    assert!(
        matches!(
            result("here"),
            Ok(Outcome::Converged {
                tier: Some(Tier::Recreated),
                ..
            })
        ),
        "{:?}",
        result("here")
    );
    assert!(result("there").is_err());
    let status = w.obj("there").status.unwrap();
    let ready = find_condition(&status.conditions, condition::READY).unwrap();
    assert_eq!(ready.reason, reason::ENGINE_UNREACHABLE);
    assert!(ready.message.contains("engine far"), "{}", ready.message);
    assert_eq!(
        status.phase,
        Some(InstancePhase::Running),
        "nothing was acted on"
    );

    // Back again: it converges as it was.
    far.set_unreachable(false);
    assert_eq!(
        w.reconcile("there").await,
        Outcome::Converged {
            phase: InstancePhase::Running,
            tier: None
        }
    );
}

/// N9 (issue 53): a sweep sweeps what it can, and says which engine it
/// could not ask, rather than failing whole or skipping it in silence.
#[tokio::test]
async fn a_sweep_sweeps_every_engine_it_can_ask_and_names_the_one_it_cannot() {
    let (w, far) = two_engines();
    let container = w.launch("here", "").await;
    w.launch("there", "  engine: far\n").await;
    // The near instance is lost without a purge; the far engine is down.
    std::fs::remove_dir_all(w.unit("here")).unwrap();
    std::fs::remove_file(w.store.layout().index_file()).unwrap();
    far.set_unreachable(true);
    let findings = sweep::sweep(&w.store, &w.reconciler.engines, sweep::Options::default())
        .await
        .unwrap();
    assert_removed(&findings, &container);
    assert_eq!(w.fake.container_running(&container), None);
    let not_swept: Vec<&sweep::Finding> = findings
        .iter()
        .filter(|f| matches!(f, sweep::Finding::EngineNotSwept { .. }))
        .collect();
    assert!(
        matches!(
            not_swept[..],
            [sweep::Finding::EngineNotSwept { engine: Some(name), .. }] if name == "far"
        ),
        "{findings:?}"
    );
    let error = sweep::not_swept(&findings).expect("an engine was not swept");
    assert!(
        error
            .to_string()
            .starts_with("engine far could not be asked, so nothing on it was swept: "),
        "{error}"
    );
}

#[tokio::test]
async fn a_running_instance_never_moves_to_another_engine() {
    let (w, far) = two_engines();
    w.launch("a", "").await;
    w.apply("a", "  engine: far\n");
    w.reconcile("a").await;
    let obj = w.obj("a");
    let uid = obj.metadata.uid.clone().unwrap();
    assert_eq!(w.fake.objects(&[(label::UID, &uid)]).0.len(), 1);
    assert!(far.objects(&[(label::UID, &uid)]).0.is_empty());
    let status = obj.status.unwrap();
    let drift = find_condition(&status.conditions, condition::SPEC_DRIFT).unwrap();
    assert!(drift.message.contains("spec.engine"), "{}", drift.message);
    assert_eq!(status.recipe.unwrap().engine, None);
}

// The no-op fast path.

/// What the fast path says of `name` from the index and one snapshot, and
/// what a full reconcile then does: its outcome and the steps it took.
async fn fast_and_full(w: &World, name: &str) -> (Option<Outcome>, Outcome, Vec<Step>) {
    let row = w
        .store
        .rows()
        .unwrap()
        .into_iter()
        .find(|r| r.name == name)
        .unwrap();
    let observation = jackin_act::observe::Observation::all(&w.fake.engine())
        .await
        .unwrap();
    let snapshot = Snapshot {
        engine: None,
        observation: &observation,
    };
    let fast = crate::reconcile::already_converged(w.store.layout(), &row, snapshot);
    // The lean snapshot a pass takes tells the same in every case here.
    let lean = jackin_act::observe::Observation::for_no_op(&w.fake.engine(), true)
        .await
        .unwrap();
    let lean = Snapshot {
        engine: None,
        observation: &lean,
    };
    assert_eq!(
        crate::reconcile::already_converged(w.store.layout(), &row, lean),
        fast,
        "{name}: the lean snapshot disagrees"
    );
    let (full, steps) = reconcile_with_steps(w, name).await;
    (fast, full, steps)
}

/// Defect R13: the wrapper may write its start report before the pass that
/// started the container saves the status, so that the report looks older
/// than the object; it is still a start not taken in. Read while its rung
/// is in its grace period, the fast path looks again once that is over,
/// and the pass then settles `lastStart`.
#[tokio::test]
async fn a_start_report_is_read_by_the_first_pass_after_its_grace_period() {
    let w = World::new();
    w.launch("a", "").await;
    let report = w.unit("a").join("state/agent-start");
    let object = w.store.layout().object_file(&w.container("a"));
    let settles = jiff::Timestamp::now().as_second() + 2;
    std::fs::write(&report, format!("start 1-1\ntry minted {settles}\n")).unwrap();
    let saved = std::fs::metadata(&object).unwrap().modified().unwrap();
    let before = saved - Duration::from_secs(1);
    std::fs::File::options()
        .append(true)
        .open(&report)
        .unwrap()
        .set_modified(before)
        .unwrap();
    let (fast, _, _) = fast_and_full(&w, "a").await;
    assert_eq!(fast, None, "a report older than the object, not read yet");
    let conversation = w.obj("a").status.unwrap().conversation.unwrap();
    assert_eq!(conversation.last_start, Some(StartKind::Minted));
    assert!(conversation.start_settles_at.is_some(), "{conversation:?}");
    assert!(
        fast_and_full(&w, "a").await.0.is_some(),
        "read, not due yet"
    );
    // The rung's grace period ends: the first pass after it reads again.
    while jiff::Timestamp::now().as_second() <= settles {
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(fast_and_full(&w, "a").await.0, None, "due");
    let conversation = w.obj("a").status.unwrap().conversation.unwrap();
    assert_eq!(conversation.last_start, Some(StartKind::Minted));
    assert_eq!(conversation.start_settles_at, None, "settled");
    assert!(fast_and_full(&w, "a").await.0.is_some(), "nothing awaited");
}

#[tokio::test]
async fn the_fast_path_answers_only_when_a_full_reconcile_would_do_nothing() {
    let w = World::new();
    let sidecar = format!("  sidecars: [{{name: helper, image: {IMAGE}}}]\n");

    // Converged and as left: the fast path answers, and rightly.
    w.launch("plain", "").await;
    w.launch("with-sidecar", &sidecar).await;
    w.launch("to-keep", "").await;
    w.store.set_phase("to-keep", DesiredPhase::Kept).unwrap();
    w.reconcile("to-keep").await;
    for name in ["plain", "with-sidecar", "to-keep"] {
        let (fast, full, steps) = fast_and_full(&w, name).await;
        assert_eq!(fast.as_ref(), Some(&full), "{name}");
        assert!(steps.is_empty(), "{name}: {steps:?}");
    }

    // A start report written after the object: the status has a start to
    // take in, so it says "look".
    let state = w.unit("with-sidecar").join("state");
    std::thread::sleep(Duration::from_millis(20));
    std::fs::write(state.join("agent-start"), "rung=minted code=0\n").unwrap();
    assert_eq!(
        fast_and_full(&w, "with-sidecar").await.0,
        None,
        "a new start report"
    );

    // Anything else: it says "look", and the full reconcile has work.
    let says_look = async |name: &str, what: &str| {
        let (fast, _, steps) = fast_and_full(&w, name).await;
        assert_eq!(fast, None, "{what}");
        assert!(
            !steps.is_empty(),
            "{what}: the full reconcile had nothing to do"
        );
    };
    w.fake.end(&w.container("plain"), 137, false);
    says_look("plain", "a stopped container").await;
    let helper = format!("{}-helper", w.container("with-sidecar"));
    w.fake.remove_behind_our_back(&helper);
    says_look("with-sidecar", "a sidecar gone").await;
    let labels = w.obj("to-keep").status.unwrap().recipe.unwrap().labels;
    w.fake
        .add_network(&w.container("to-keep"), labels.into_iter().collect());
    says_look("to-keep", "a network left of a kept one").await;

    // A changed spec: the row is not converged at the new generation.
    w.apply("plain", "  env: [{name: X, value: y}]\n");
    let (fast, _, _) = fast_and_full(&w, "plain").await;
    assert_eq!(fast, None, "a changed spec");

    // A workspace edit unsettles its instances' rows.
    w.workspace("ws", "{exitPolicy: keep}");
    w.launch("in-ws", "  workspace: ws\n").await;
    assert!(fast_and_full(&w, "in-ws").await.0.is_some());
    w.workspace("ws", "{exitPolicy: clean}");
    assert_eq!(fast_and_full(&w, "in-ws").await.0, None, "a workspace edit");
}

/// Reconciles `name`: the lines its steps noted for the operator.
async fn reconcile_with_notes(w: &World, name: &str) -> Vec<String> {
    let noted = Arc::new(Mutex::new(Vec::new()));
    let mut reconciler = w.reconciler.clone();
    let sink = noted.clone();
    reconciler.progress = Arc::new(move |_, event| {
        if let Progress::Note { stage, message } = event {
            sink.lock().unwrap().push(format!("[{stage}] {message}"));
        }
    });
    reconciler.reconcile(name, None).await.unwrap();
    noted.lock().unwrap().clone()
}

/// Every file under `dir` holding `marker`, but those under `except`.
fn files_holding(dir: &std::path::Path, except: &std::path::Path, marker: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut stack = vec![dir.to_owned()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let meta = std::fs::symlink_metadata(&path).unwrap();
            if meta.is_dir() {
                stack.push(path);
            } else if meta.is_file()
                && !path.starts_with(except)
                && String::from_utf8_lossy(&std::fs::read(&path).unwrap()).contains(marker)
            {
                found.push(path.display().to_string());
            }
        }
    }
    found
}

/// Under `sync` the operator's login is copied into the unit's home before
/// the start, said by name in the `credentials` stage and as events; the
/// value is nowhere else in the home, not in the object, not in an event.
#[tokio::test]
async fn a_synced_login_lands_in_the_units_home_only_and_is_reported_by_name() {
    let w = World::new();
    let operator = w.operator.path();
    std::fs::create_dir_all(operator.join(".claude")).unwrap();
    let marker = format!("LOGIN-{}", uuid::Uuid::new_v4().simple());
    std::fs::write(operator.join(".claude/.credentials.json"), &marker).unwrap();
    w.apply("a", "");
    let notes = reconcile_with_notes(&w, "a").await;
    assert_eq!(
        notes,
        [
            "[credentials] claude: ~/.claude/.credentials.json → ~/.claude/.credentials.json",
            "[credentials] claude: ~/.claude.json not found on the host — run `claude` once on \
             the host to log in, or set authForward: token with CLAUDE_CODE_OAUTH_TOKEN or \
             ANTHROPIC_API_KEY"
        ]
    );
    let home = w.unit("a").join("home");
    assert_eq!(
        std::fs::read_to_string(home.join(".claude/.credentials.json")).unwrap(),
        marker
    );
    let data = w.store.layout().root().to_owned();
    assert_eq!(
        files_holding(&data, &home, &marker),
        Vec::<String>::new(),
        "the value is in the unit's home only"
    );
    let events = crate::events::read(w.store.layout(), &w.container("a"));
    let reasons: Vec<&str> = events.iter().map(|e| e.reason.as_str()).collect();
    assert_eq!(
        reasons,
        [reason::CREDENTIALS_FORWARDED, reason::CREDENTIALS_MISSING]
    );
    let record = w.obj("a").status.unwrap().credentials.unwrap();
    assert_eq!(record.files.len(), 1);
    assert_eq!(record.files_missing.len(), 1);
    assert!(
        w.fake
            .env(&w.container("a"))
            .iter()
            .all(|e| !e.contains(&marker)),
        "sync passes no variable"
    );
}

/// Under `token` a set's variable reaches the engine's create request and
/// nothing else: the status names it and its reference.
#[tokio::test]
async fn a_token_reaches_the_engine_only_and_a_missing_one_is_said_with_a_hint() {
    let w = World::new();
    let token = w.operator.path().join("token");
    let marker = format!("TOKEN-{}", uuid::Uuid::new_v4().simple());
    std::fs::write(&token, format!("{marker}\n")).unwrap();
    w.workspace(
        "desk",
        &format!(
            "{{authForward: token, credentials: [{{name: tok, env: [{{name: MY_TOKEN, \
             valueFrom: {{file: {}}}}}]}}]}}",
            token.display()
        ),
    );
    w.apply("a", "  workspace: desk\n");
    let notes = reconcile_with_notes(&w, "a").await;
    assert!(
        notes.contains(&format!(
            "[credentials] tok: MY_TOKEN (from file {})",
            token.display()
        )),
        "{notes:?}"
    );
    // Claude's own variables are not in this test's environment.
    assert!(
        notes.iter().any(|n| n
            .starts_with("[credentials] claude: no token (CLAUDE_CODE_OAUTH_TOKEN: host variable")
            && n.contains("— export CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_API_KEY for jackin")),
        "{notes:?}"
    );
    assert!(
        w.fake
            .env(&w.container("a"))
            .contains(&format!("MY_TOKEN={marker}")),
        "the engine got the value"
    );
    let data = w.store.layout().root().to_owned();
    assert_eq!(
        files_holding(&data, &data.join("no-exception"), &marker),
        Vec::<String>::new(),
        "the value is nowhere under the home"
    );
    // Stopped from outside and started again (tier 1): said again, from
    // the record, since the container keeps the environment it was
    // created with.
    w.session_ends("a", "signal:TERM", 143, false);
    let notes = reconcile_with_notes(&w, "a").await;
    assert_eq!(w.obj("a").status.unwrap().restore.unwrap().tier, 1);
    assert!(
        notes.iter().any(|n| n.contains("tok: MY_TOKEN")),
        "{notes:?}"
    );
}

// Failures that retrying cannot fix (F7) and purges without the engine (F5).

/// The failures counted toward giving up on `name`.
fn attempts(w: &World, name: &str) -> Option<u32> {
    w.obj(name)
        .status
        .and_then(|s| s.failures)
        .map(|f| f.attempts)
}

/// F7: a start the engine keeps refusing with a server error (how Docker
/// reports a user the image does not have) is tried a bounded number of
/// times, then the instance is `Failed` with the cause and nothing more is
/// tried, nor the engine asked, until the operator resumes it.
#[tokio::test]
async fn f7_a_start_the_engine_keeps_refusing_ends_failed_after_bounded_attempts() {
    use jackin_api::instance::MAX_FAILED_ATTEMPTS;
    let w = World::new();
    w.apply("a", "");
    let refusal = "unable to find user agent: no matching entries in passwd file";
    w.fake.refuse_starts(Some((500, refusal)));
    for attempt in 1..MAX_FAILED_ATTEMPTS {
        let err = w.reconciler.reconcile("a", None).await.unwrap_err();
        assert!(!err.is_permanent(), "attempt {attempt}: {err}");
        assert_eq!(attempts(&w, "a"), Some(attempt));
        assert_ne!(w.status_phase("a"), Some(InstancePhase::Failed));
    }
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(
        matches!(err, crate::ReconcileError::GaveUp { now: true, attempts, .. } if attempts == MAX_FAILED_ATTEMPTS),
        "{err}"
    );
    assert!(err.is_permanent());
    assert_eq!(w.status_phase("a"), Some(InstancePhase::Failed));
    let status = w.obj("a").status.unwrap();
    let ready = find_condition(&status.conditions, condition::READY).unwrap();
    assert!(ready.message.contains(refusal), "{}", ready.message);
    assert!(
        ready.message.contains("`jackin set-phase a running`"),
        "{}",
        ready.message
    );

    // Given up on: not tried, and the engine not asked.
    let calls = w.reconciler.engines.calls();
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(
        matches!(err, crate::ReconcileError::GaveUp { now: false, .. }),
        "{err}"
    );
    assert_eq!(w.reconciler.engines.calls(), calls);

    // The operator resumes it, with the cause fixed: it runs.
    w.fake.refuse_starts(None);
    session::resume(&w.store, "a", None).unwrap();
    assert!(matches!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Running,
            ..
        }
    ));
    assert_eq!(attempts(&w, "a"), None, "a success clears the count");
}

/// F7: a refusal the engine calls an invalid request (a program that does
/// not exist in the image: runc refuses) fails at once, and a few of them
/// in a row end the retries; a changed spec tries again.
#[tokio::test]
async fn f7_a_runc_refusal_is_permanent_and_given_up_on_until_the_spec_changes() {
    use jackin_api::instance::MAX_FAILED_ATTEMPTS;
    let w = World::new();
    w.apply("a", "");
    let refusal = "failed to create shim task: OCI runtime create failed: runc create failed: \
                   unable to start container process: exec: \"/nope\": stat /nope: no such file \
                   or directory: unknown";
    w.fake.refuse_starts(Some((400, refusal)));
    for attempt in 1..=MAX_FAILED_ATTEMPTS {
        let err = w.reconciler.reconcile("a", None).await.unwrap_err();
        assert!(err.is_permanent(), "{err}");
        assert_eq!(w.status_phase("a"), Some(InstancePhase::Failed));
        assert_eq!(attempts(&w, "a"), Some(attempt));
    }
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(
        matches!(err, crate::ReconcileError::GaveUp { now: false, .. }),
        "{err}"
    );
    w.fake.refuse_starts(None);
    w.apply("a", "  command: [sleep, \"7\"]\n");
    assert!(matches!(
        w.reconcile("a").await,
        Outcome::Converged {
            phase: InstancePhase::Running,
            ..
        }
    ));
}

/// A rollout whose pin fails (the image is gone) is handled and said
/// failed; the session runs on as pinned, nothing is counted toward giving
/// up, and the same request is not tried again.
#[tokio::test]
async fn a_rollout_whose_pin_fails_leaves_the_session_running_as_pinned() {
    let w = World::new();
    let container = w.launch("a", "").await;
    w.fake.forget_image(IMAGE);
    w.store
        .set_annotation("a", annotation::ROLLOUT, Some("t1"))
        .unwrap();
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(
        matches!(&err, crate::ReconcileError::Step { step, .. } if step.contains("rollout")),
        "{err}"
    );
    let status = w.obj("a").status.unwrap();
    assert_eq!(status.phase, Some(InstancePhase::Running));
    assert_eq!(status.failures, None);
    let refused = status.rollout.unwrap().refused.unwrap_or_default();
    assert!(refused.starts_with("failed: "), "{refused}");
    let rollout = find_condition(&status.conditions, condition::ROLLOUT).unwrap();
    assert_eq!(rollout.reason, reason::ROLLOUT_FAILED);
    assert!(is_condition_true(&status.conditions, condition::READY));
    assert_eq!(w.fake.container_running(&container), Some(true));
    // Handled: the next reconcile takes no step.
    assert!(reconcile_recording_steps(&w, "a").await.is_empty());
}

/// A rollout is `RolledOut` only once the session runs from what it
/// pinned: while its new container cannot start, it says `RollingOut`.
#[tokio::test]
async fn a_rollout_is_rolled_out_only_once_its_container_runs() {
    let w = World::new();
    w.launch("a", "").await;
    w.store
        .set_annotation("a", annotation::ROLLOUT, Some("t1"))
        .unwrap();
    w.fake.refuse_starts(Some((500, "the runtime refuses")));
    w.reconciler.reconcile("a", None).await.unwrap_err();
    let status = w.obj("a").status.unwrap();
    let rollout = find_condition(&status.conditions, condition::ROLLOUT).unwrap();
    assert_eq!(rollout.reason, reason::ROLLING_OUT);
    assert_eq!(rollout.status, ConditionStatus::Unknown);
    w.fake.refuse_starts(None);
    w.reconcile("a").await;
    let status = w.obj("a").status.unwrap();
    let rollout = find_condition(&status.conditions, condition::ROLLOUT).unwrap();
    assert_eq!(rollout.reason, reason::ROLLED_OUT);
    assert!(
        rollout
            .message
            .contains("the session runs from it (tier 2)"),
        "{}",
        rollout.message
    );
    assert_eq!(status.restore.unwrap().rollout.as_deref(), Some("t1"));
}

/// F5: an instance whose engine is a context that does not exist never
/// made anything there: it fails (permanently, F7) and is deleted at once.
#[tokio::test]
async fn f5_an_instance_that_never_made_anything_is_purged_without_its_engine() {
    let w = World::new();
    w.apply("a", "  engine: no-such-context\n");
    let err = w.reconciler.reconcile("a", None).await.unwrap_err();
    assert!(err.is_permanent(), "{err}");
    assert_eq!(w.status_phase("a"), Some(InstancePhase::Failed));
    let unit = w.unit("a");
    w.store.set_phase("a", DesiredPhase::Purged).unwrap();
    match w.reconcile("a").await {
        Outcome::PurgedWithoutEngine {
            engine,
            left_behind,
            why,
        } => {
            assert_eq!(engine, "no-such-context");
            assert!(left_behind.is_empty(), "{left_behind:?}");
            assert!(why.contains("not found"), "{why}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(
        w.store.get_instance("a"),
        Err(StoreError::InstanceNotFound(_))
    ));
    assert!(!unit.exists());
}

/// F5: an instance that made objects on an engine that is then named so
/// that it can never be reached (its context deleted) is purged, and what
/// it made there is listed as left behind; while an engine only fails to
/// answer, the purge waits (see
/// `an_unreachable_engine_is_only_recorded_and_is_not_permanent`).
#[tokio::test]
async fn f5_what_an_instance_made_on_an_engine_gone_for_good_is_listed_as_left_behind() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let mut w = World::new();
    let gone = Arc::new(AtomicBool::new(false));
    let (fake, flag) = (w.fake.clone(), gone.clone());
    let engines = Engines::with_connector(Some(w.fake.engine()), move |name| {
        let (fake, gone) = (fake.clone(), flag.load(Ordering::SeqCst));
        Box::pin(async move {
            match gone {
                false => Ok(fake.engine()),
                true => Err(jackin_engine::EngineError::Endpoint(
                    jackin_engine::endpoint::EndpointError::UnknownContext {
                        name: name.unwrap_or_default(),
                        dir: "(deleted)".into(),
                    },
                )),
            }
        })
    });
    w.reconciler = reconciler(&w.store, engines, w.operator.path());
    let container = w.launch("a", "  engine: remote\n").await;
    let network = w.obj("a").status.unwrap().recipe.unwrap().network;
    gone.store(true, Ordering::SeqCst);
    w.reconciler.engines.forget(&Some("remote".into()));
    w.store.set_phase("a", DesiredPhase::Purged).unwrap();
    let Outcome::PurgedWithoutEngine { left_behind, .. } = w.reconcile("a").await else {
        panic!("purged without the engine");
    };
    assert_eq!(
        left_behind,
        [
            format!("container {container}"),
            format!("network {network}")
        ]
    );
    assert!(w.store.get_instance("a").is_err());
    assert_eq!(
        w.fake.container_running(&container),
        Some(true),
        "left behind, as said"
    );
}

/// F3: an apply with prune killed after it set an instance to `Purged`,
/// before the purge finished: the same apply again converges that instance
/// too, so it finishes the prune rather than leave it `Purging`.
#[tokio::test]
async fn f3_the_same_prune_again_finishes_an_interrupted_one() {
    let w = World::new();
    let dir = tempfile::tempdir().unwrap();
    for name in ["a", "b"] {
        let text = format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec:\n  \
             role: {{name: r}}\n  agent: claude\n  image: {IMAGE}\n"
        );
        std::fs::write(dir.path().join(format!("{name}.yaml")), text).unwrap();
    }
    let source = crate::source::Source::of(&[dir.path().to_owned()]).unwrap();
    let apply = || {
        let inputs = crate::source::read(std::slice::from_ref(&dir.path().to_owned())).unwrap();
        let objects = crate::source::parse(&inputs).unwrap();
        w.store.apply_objects(&objects, Some(&source)).unwrap()
    };
    apply();
    for name in ["a", "b"] {
        w.reconcile(name).await;
    }
    std::fs::remove_file(dir.path().join("b.yaml")).unwrap();
    let first = apply();
    assert_eq!(first.instances_to_converge(), ["a", "b"]);
    // Killed here: set to Purged, its purge never run.
    let second = apply();
    assert!(second.pruned.is_empty(), "already set to Purged");
    assert_eq!(second.still_pruning, ["b"]);
    assert_eq!(second.instances_to_converge(), ["a", "b"]);
    assert_eq!(w.reconcile("b").await, Outcome::Gone);
    assert!(apply().still_pruning.is_empty());
}

/// The trio the new-session tests launch: workspace `w`, role `r`, agent
/// `claude`.
const TRIO: crate::new_session::Trio<'static> = crate::new_session::Trio {
    workspace: "w",
    role: "r",
    agent: "claude",
};

/// Applies `bad` in workspace `w` with a sidecar image the engine lacks,
/// and converges it: it is `Failed`.
async fn failed_session(w: &World) {
    w.apply(
        "bad",
        "  workspace: w\n  command: [false]\n  sidecars: [{name: helper, image: no/such:1}]\n",
    );
    assert!(w.reconciler.reconcile("bad", None).await.is_err());
    assert_eq!(w.status_phase("bad"), Some(InstancePhase::Failed));
}

#[tokio::test]
async fn a_new_session_starts_from_the_workspaces_role_not_a_failed_sessions_spec() {
    use crate::new_session::{Basis, prepare};
    let w = World::new();
    w.workspace("w", &format!("{{roles: [{{name: r, image: {IMAGE}}}]}}"));
    failed_session(&w).await;
    let new = prepare(&w.store, TRIO, None).unwrap();
    assert_eq!(new.basis, Basis::WorkspaceRole);
    let spec = &new.instance.spec;
    assert_eq!(spec.image.as_deref(), Some(IMAGE));
    assert_eq!(spec.command, None, "not the failed session's");
    assert!(spec.sidecars.is_empty(), "not the failed session's");
    assert_eq!(spec.workspace.as_deref(), Some("w"));
    assert_eq!(spec.phase, DesiredPhase::Running);
    assert_eq!(new.instance.metadata.name, "", "the caller names it");
}

#[tokio::test]
async fn without_the_role_in_the_workspace_the_latest_healthy_session_is_copied_never_a_failed_one()
{
    use crate::new_session::{Basis, NewSessionError, prepare};
    let w = World::new();
    w.workspace("w", "{}");
    // A healthy session, written by a source and labelled by the operator.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(
        dir.path().join("good.yaml"),
        format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: good, labels: \
             {{team: blue}}}}\nspec:\n  workspace: w\n  role: {{name: r}}\n  agent: claude\n  \
             image: {IMAGE}\n  command: [sleep, \"7\"]\n  \
             conversationId: 0b7e4a3c-2f7d-4c1e-9a51-7d1f8e0c6b2a\n"
        ),
    )
    .unwrap();
    let source = crate::source::Source::of(&[dir.path().to_owned()]).unwrap();
    let inputs = crate::source::read(&[dir.path().to_owned()]).unwrap();
    let objects = crate::source::parse(&inputs).unwrap();
    w.store.apply_objects(&objects, Some(&source)).unwrap();
    w.reconcile("good").await;
    assert!(w.obj("good").metadata.labels.contains_key(label::SOURCE));
    // A failed one, used more recently.
    failed_session(&w).await;

    let new = prepare(&w.store, TRIO, None).unwrap();
    assert_eq!(new.basis, Basis::Session("good".into()));
    let spec = &new.instance.spec;
    assert_eq!(spec.command, Some(vec!["sleep".into(), "7".into()]));
    assert!(spec.sidecars.is_empty(), "not the failed session's");
    assert_eq!(spec.conversation_id, None, "a conversation of its own");
    assert_eq!(
        new.instance.metadata.labels,
        [("team".to_owned(), "blue".to_owned())].into(),
        "the operator's labels, not the source's ownership"
    );

    // With only the failed one left, nothing to start from: the error says
    // which was passed over (the binary adds how to declare the role).
    w.store.set_phase("good", DesiredPhase::Purged).unwrap();
    let err = prepare(&w.store, TRIO, None).unwrap_err();
    assert!(matches!(err, NewSessionError::NoBasis(_)), "{err}");
    let message = err.to_string();
    assert!(
        message.contains("workspace w names no role \"r\"")
            && message.contains("a failed session's spec is never copied: instance/bad"),
        "{message}"
    );
}

#[tokio::test]
async fn a_chosen_name_must_be_valid_and_free() {
    use crate::new_session::{NewSessionError, check_name, free_name};
    let w = World::new();
    w.apply("r-1", "");
    assert!(matches!(
        check_name(&w.store, "Not_A_Label"),
        Err(NewSessionError::InvalidName { .. })
    ));
    let taken = check_name(&w.store, "r-1").unwrap_err();
    assert!(
        matches!(taken, NewSessionError::NameTaken { .. }),
        "{taken}"
    );
    assert!(taken.to_string().contains("nothing was created"), "{taken}");
    check_name(&w.store, "r-2").unwrap();
    assert_eq!(free_name(&w.store, "r").unwrap(), "r-2");
}

// Re-applying documents applied before (`jackin apply -f` of the same file).

/// An instance's document as a file holds it, `meta` added to its metadata.
fn document(name: &str, meta: &str, spec_lines: &str) -> String {
    format!(
        "---\napiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}{meta}}}\n\
         spec:\n  role: {{name: r}}\n  agent: claude\n  image: {IMAGE}\n{spec_lines}"
    )
}

/// What a plain apply of `text` did: the instances whose documents were
/// not read again, then each read instance's outcome.
type Reapplied = (Vec<String>, Vec<(String, ApplyOutcome)>);

/// Applies `text` as `jackin apply -f` does.
fn apply_text(w: &World, text: &str) -> Result<Reapplied, String> {
    let inputs = [crate::source::Input {
        name: "apply.yaml".into(),
        text: text.into(),
    }];
    let read = crate::source::parse_unless_applied(&inputs, Some(w.store.layout()))
        .map_err(|e| e.to_string())?;
    let objects: Vec<Object> = read.objects.into_iter().map(|(_, obj)| obj).collect();
    let applied = w
        .store
        .apply_read(&objects, None, &read.documents, &read.unchanged)
        .map_err(|e| e.to_string())?;
    let outcomes = applied
        .outcomes
        .into_iter()
        .map(|(obj, outcome)| (obj.name().to_owned(), outcome))
        .collect();
    Ok((applied.unchanged, outcomes))
}

fn skipped(names: &[&str], read: &[(&str, ApplyOutcome)]) -> Reapplied {
    (
        names.iter().map(|n| (*n).to_owned()).collect(),
        read.iter().map(|(n, o)| ((*n).to_owned(), *o)).collect(),
    )
}

#[tokio::test]
async fn a_document_applied_before_is_not_read_again_until_it_changes() {
    use ApplyOutcome::{Configured, Created};
    let w = World::new();
    let file = document("a", "", "") + &document("b", "", "");
    assert_eq!(
        apply_text(&w, &file).unwrap(),
        skipped(&[], &[("a", Created), ("b", Created)])
    );
    // The loop's status writes carry the record over to the new object.
    w.reconcile("a").await;
    w.reconcile("b").await;
    assert_eq!(apply_text(&w, &file).unwrap(), skipped(&["a", "b"], &[]));

    // A changed document is read, checked and applied; the other is not.
    let changed = document("a", "", "") + &document("b", "", "  command: [sleep, '1']\n");
    assert_eq!(
        apply_text(&w, &changed).unwrap(),
        skipped(&["a"], &[("b", Configured)])
    );
    assert_eq!(w.obj("b").spec.command.unwrap(), ["sleep", "1"]);
    assert_eq!(apply_text(&w, &changed).unwrap(), skipped(&["a", "b"], &[]));

    // A changed document's error is placed in the file, the documents
    // before it skipped or not.
    let bad = document("a", "", "") + &document("b", "", "  colour: red\n");
    let err = apply_text(&w, &bad).unwrap_err();
    assert!(err.starts_with("apply.yaml:17:3: "), "{err}");
    assert!(err.contains("colour"), "{err}");
    // The same document twice is refused, though neither is read.
    let twice = document("a", "", "") + &document("a", "", "");
    let err = apply_text(&w, &twice).unwrap_err();
    assert_eq!(err, "instance/a appears more than once in the input");
    assert_eq!(apply_text(&w, &changed).unwrap(), skipped(&["a", "b"], &[]));
}

#[tokio::test]
async fn an_object_changed_since_its_document_was_applied_is_compared_again() {
    use ApplyOutcome::{Configured, Created, Unchanged};
    let w = World::new();
    let doc = document("a", "", "");
    apply_text(&w, &doc).unwrap();
    w.reconcile("a").await;
    assert_eq!(apply_text(&w, &doc).unwrap(), skipped(&["a"], &[]));

    // set-phase: the document is read and its phase applied again.
    w.store.set_phase("a", DesiredPhase::Kept).unwrap();
    assert_eq!(
        apply_text(&w, &doc).unwrap(),
        skipped(&[], &[("a", Configured)])
    );
    assert_eq!(w.obj("a").spec.phase, DesiredPhase::Running);
    assert_eq!(apply_text(&w, &doc).unwrap(), skipped(&["a"], &[]));

    // A rollout asked for by command: read and compared (the file does
    // not set it, so it stands).
    let rollout = Some("2026-11-26T00:00:00Z");
    w.store
        .set_annotation("a", annotation::ROLLOUT, rollout)
        .unwrap();
    assert_eq!(
        apply_text(&w, &doc).unwrap(),
        skipped(&[], &[("a", Unchanged)])
    );

    // A file that sets the annotation itself is always read: a rollout by
    // command since is undone by applying it again.
    let pinned = document("p", ", annotations: {jackin.dev/rollout: one}", "");
    assert_eq!(
        apply_text(&w, &pinned).unwrap(),
        skipped(&[], &[("p", Created)])
    );
    w.store
        .set_annotation("p", annotation::ROLLOUT, Some("two"))
        .unwrap();
    assert_eq!(
        apply_text(&w, &pinned).unwrap(),
        skipped(&[], &[("p", Configured)])
    );
    let annotations = w.obj("p").metadata.annotations;
    assert_eq!(annotations[annotation::ROLLOUT], "one");
}

#[tokio::test]
async fn a_hand_edit_of_the_object_is_never_taken_for_what_was_applied() {
    let w = World::new();
    let doc = document("a", "", "");
    apply_text(&w, &doc).unwrap();
    let container = w.launch_applied("a").await;
    assert_eq!(apply_text(&w, &doc).unwrap(), skipped(&["a"], &[]));
    // A restart writes the object: the record moves with it.
    w.fake.end(&container, 137, false);
    w.reconcile("a").await;
    assert_eq!(apply_text(&w, &doc).unwrap(), skipped(&["a"], &[]));

    // Edited in place, not by jackin.
    let object = w.store.layout().object_file(&container);
    let mut obj: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&object).unwrap()).unwrap();
    obj["metadata"]["labels"] = serde_json::json!({"team": "b"});
    std::fs::write(&object, serde_json::to_vec_pretty(&obj).unwrap()).unwrap();
    assert_eq!(apply_text(&w, &doc).unwrap().0, Vec::<String>::new());
    // Nor does a reconcile that writes the object after the edit take the
    // edit for what was applied.
    w.fake.end(&container, 137, false);
    w.reconcile("a").await;
    assert_eq!(w.obj("a").metadata.labels["team"], "b");
    assert_eq!(apply_text(&w, &doc).unwrap().0, Vec::<String>::new());
}
