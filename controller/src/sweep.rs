//! Sweeps: repairing what others left behind (a crash, a power-off, `docker
//! rm`, an old version). A sweep is observe → plan → execute like a
//! reconcile: [`plan`] reads the state directory and the engine and returns
//! findings, each naming by id what it acts on and why; [`execute`] carries
//! them out, checking under the right lock that each still holds; a dry run
//! prints the plan and stops. The sweep writes nothing by its own hand: the
//! state directory changes through [`Store`] methods (`repair.rs`) and the
//! instance guards they hand out (a row correction, which `decide` rules on:
//! [`decide::corrected_phase`]), engine objects go through `act`
//! ([`jackin_act::remove_leftover`]), and the keep cap settles
//! through [`keep_cap`]. Ownership is decided by label and uid, never by
//! name, and nothing that may hold a conversation is ever deleted; engine
//! objects are swept only when they carry this home's id, since homes may
//! share an engine.
//!
//! - units missing from the index are indexed again; unreadable ones are
//!   moved to `data/.orphaned/`;
//! - a purge interrupted after its object went is finished;
//! - lock files whose unit is gone are removed, once a non-blocking lock
//!   attempt proves nobody holds them;
//! - the quarantines (`.import-*`) killed publications left in a unit are
//!   removed under the unit lock, once the lock every publication holds
//!   beside them proves none runs there;
//! - index rows that claim `Running` without a running container are set to
//!   `Exited` with reason `ContainerMissing`, or `EngineRestarted` when the
//!   engine started after the instance was last seen running;
//! - engine objects with our labels whose uid belongs to no instance are
//!   removed (volumes only when their instance was purged; a volume whose
//!   instance's unit was moved aside is reported and kept);
//! - a workspace's `keep.max` bounds its kept instances per (role, agent);
//! - the saved work of discarded checkouts (`discarded/`) goes once the
//!   home's `discardRetention` has passed, and collected artifacts
//!   (`artifacts/`) once its `artifactRetention` has;
//! - with `images`, images jackin built that no recipe references are removed.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use jackin_act::ActError;
use jackin_act::observe::container_name;
use jackin_act::session::{self, Collection};
use jackin_api::ConditionStatus;
use jackin_api::home::HomeConfig;
use jackin_api::meta::{find_condition, set_condition};
use jackin_api::names::{condition, label, reason};
use jackin_api::validate;
use jackin_checkouts::{discard, gitdir};
use jackin_engine::Engine;
use jackin_engine::EngineError;
use jackin_engine::models::ContainerSummaryStateEnum;
use jackin_files::fsutil::{self, FileLock};
use jackin_files::layout::Layout;
use jackin_plan::decide;
use jackin_plan::plan::Leftover;
use jiff::Timestamp;

use crate::engines::{EngineName, Engines, display_name};
use crate::index::{Index, IndexRow};
use crate::keep_cap::{self, Capped};
use crate::store::{Store, StoreError};
use crate::unit_object::read_object;

/// One thing a sweep found, and what it does about it (or would, in a dry
/// run). Engine objects are named by id; a finding that only reports
/// (`VolumeKept`, a keep cap's `Spared`) does nothing when executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Finding {
    UnitIndexed {
        name: String,
        container: String,
    },
    UnitMovedAside {
        container: String,
        to: PathBuf,
    },
    /// A purge that stopped after its object went: the row, the sockets
    /// directory or the lock are left.
    PurgeFinished {
        name: String,
        container: String,
    },
    LockRemoved {
        path: PathBuf,
    },
    /// The temporary file of an atomic write to `data/` whose writer died
    /// (a `kill -9` mid-write): every such writer holds the index lock, so
    /// one found under it is nobody's.
    WriteLeftoverRemoved {
        path: PathBuf,
    },
    /// The quarantine of a publication that was killed (a copy of the
    /// agent's objects, up to gigabytes), in instance `name`'s unit.
    QuarantineRemoved {
        name: String,
        path: PathBuf,
    },
    RowCorrected {
        name: String,
        reason: &'static str,
    },
    EngineObjectRemoved {
        object: Leftover,
        name: String,
        instance: String,
        /// The vanished instance's uid, by which it is recognized.
        uid: String,
        /// The engine it is on.
        engine: EngineName,
    },
    VolumeKept {
        name: String,
        instance: String,
    },
    ImageRemoved {
        id: String,
        reference: String,
        engine: EngineName,
    },
    /// What a workspace's `keep.max` decided (see [`keep_cap`]).
    KeepCap(Capped),
    /// An engine the sweep could not ask (it did not answer, or answered
    /// with an error): nothing on it is swept, and the next sweep asks
    /// again. `jackin prune` fails with it, once it has swept the rest.
    EngineNotSwept {
        engine: EngineName,
        /// What the engine did not answer, or answered.
        why: String,
    },
    /// The saved work of a discard, past the home's retention: removed.
    DiscardedRemoved {
        /// The save's name (`discarded/<name>/`).
        name: String,
        saved_at: Timestamp,
        retention: String,
    },
    /// A session's collected artifacts, past the home's retention: removed.
    ArtifactsRemoved {
        collection: Collection,
        retention: String,
    },
}

impl Finding {
    /// The line `jackin prune` prints; `dry_run` words it as a proposal.
    pub fn describe(&self, dry_run: bool) -> String {
        let (done, todo) = match self {
            Finding::UnitIndexed { .. } => ("indexed", "would index"),
            Finding::UnitMovedAside { .. } => ("moved aside", "would move aside"),
            Finding::PurgeFinished { .. } => ("finished", "would finish"),
            Finding::LockRemoved { .. }
            | Finding::WriteLeftoverRemoved { .. }
            | Finding::QuarantineRemoved { .. }
            | Finding::EngineObjectRemoved { .. }
            | Finding::ImageRemoved { .. }
            | Finding::DiscardedRemoved { .. }
            | Finding::ArtifactsRemoved { .. } => ("removed", "would remove"),
            Finding::RowCorrected { .. } => ("corrected", "would correct"),
            Finding::VolumeKept { .. } => ("kept", "would keep"),
            Finding::KeepCap(capped) => return capped.describe(dry_run),
            Finding::EngineNotSwept { engine, why } => {
                return format!(
                    "not swept: engine {}, which could not be asked: {why}",
                    display_name(engine.as_deref())
                );
            }
        };
        let verb = if dry_run { todo } else { done };
        match self {
            Finding::UnitIndexed { name, container } => {
                format!("{verb} unit {container} (instance/{name}), missing from the index")
            }
            Finding::UnitMovedAside { container, to } => format!(
                "{verb} unreadable unit {container} to {} (nothing in it was deleted)",
                to.display()
            ),
            Finding::PurgeFinished { name, container } => format!(
                "{verb} the interrupted purge of instance/{name} ({container}): its row, \
                 sockets and lock"
            ),
            Finding::LockRemoved { path } => format!("{verb} orphan lock {}", path.display()),
            Finding::WriteLeftoverRemoved { path } => {
                format!("{verb} the unfinished write {}", path.display())
            }
            Finding::QuarantineRemoved { name, path } => format!(
                "{verb} {}, left by an interrupted publication of instance/{name}",
                path.display()
            ),
            Finding::RowCorrected { name, reason } => {
                format!("{verb} instance/{name}: it claimed Running without a container ({reason})")
            }
            Finding::EngineObjectRemoved {
                object,
                name,
                instance,
                engine,
                ..
            } => format!(
                "{verb} {} {name} ({}){} of vanished instance/{instance}",
                object.kind(),
                short_id(object.id()),
                on_engine(engine)
            ),
            Finding::VolumeKept { name, instance } => format!(
                "{verb} volume {name} of instance/{instance}: its unit was moved aside, \
                 remove it by hand once you have checked it"
            ),
            Finding::ImageRemoved {
                id,
                reference,
                engine,
            } => format!(
                "{verb} image {reference} ({}){}, built by jackin and pinned by no instance",
                short_id(id),
                on_engine(engine)
            ),
            Finding::KeepCap(_) | Finding::EngineNotSwept { .. } => {
                unreachable!("described above")
            }
            Finding::DiscardedRemoved {
                name,
                saved_at,
                retention,
            } => format!(
                "{verb} the saved work discarded/{name} (saved {saved_at}): past the retention \
                 of {retention} (discardRetention)"
            ),
            Finding::ArtifactsRemoved {
                collection,
                retention,
            } => format!(
                "{verb} the artifacts artifacts/{}/{} (collected {}): past the retention of \
                 {retention} (artifactRetention)",
                collection.instance, collection.name, collection.collected_at
            ),
        }
    }

    /// The instance whose reconcile this finding calls for once executed:
    /// one indexed again, corrected, or settled as purged by the cap.
    pub fn instance_to_reconcile(&self) -> Option<&str> {
        match self {
            Finding::UnitIndexed { name, .. }
            | Finding::RowCorrected { name, .. }
            | Finding::KeepCap(Capped::Purge { name, .. }) => Some(name),
            _ => None,
        }
    }
}

/// ` on engine NAME`, for an engine other than the default.
fn on_engine(engine: &EngineName) -> String {
    match engine {
        Some(name) => format!(" on engine {name}"),
        None => String::new(),
    }
}

/// An engine id as people read it: `sha256:` dropped, 12 characters.
fn short_id(id: &str) -> &str {
    let id = id.strip_prefix("sha256:").unwrap_or(id);
    id.get(..12).unwrap_or(id)
}

#[derive(Debug, thiserror::Error)]
pub enum SweepError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Engine(#[from] EngineError),
    #[error(transparent)]
    Act(#[from] ActError),
    /// The engines a sweep could not ask, each with why ([`not_swept`]).
    #[error("{}", engines_not_swept(.0))]
    NotSwept(Vec<(String, String)>),
}

fn engines_not_swept(engines: &[(String, String)]) -> String {
    let each: Vec<String> = engines
        .iter()
        .map(|(engine, why)| {
            format!("engine {engine} could not be asked, so nothing on it was swept: {why}")
        })
        .collect();
    each.join("; ")
}

/// The error a sweep's findings amount to when it could not ask an engine
/// (`Finding::EngineNotSwept`): an engine that cannot be asked is an
/// error to the operator who asked for the sweep, as it is to any command.
pub fn not_swept(findings: &[Finding]) -> Option<SweepError> {
    let engines: Vec<(String, String)> = findings
        .iter()
        .filter_map(|finding| match finding {
            Finding::EngineNotSwept { engine, why } => {
                Some((display_name(engine.as_deref()).to_owned(), why.clone()))
            }
            _ => None,
        })
        .collect();
    (!engines.is_empty()).then_some(SweepError::NotSwept(engines))
}

#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    pub dry_run: bool,
    /// Also remove images jackin built that no recipe references.
    pub images: bool,
}

/// Every sweep: planned, then executed unless `options.dry_run`. Returns
/// the plan in a dry run, otherwise what was done.
pub async fn sweep(
    store: &Store,
    engines: &Engines,
    options: Options,
) -> Result<Vec<Finding>, SweepError> {
    let findings = plan(store, engines, options.images).await?;
    if options.dry_run {
        return Ok(findings);
    }
    crate::run_logs::sweep(store.layout());
    execute(store, engines, findings).await
}

/// How long the engine gets to remove one object of a vanished instance,
/// while the sweep holds the index lock.
const LEFTOVER_REMOVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// How far the filesystem sweep looks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Depth {
    /// Every indexed unit's object is read too, and one that no longer
    /// parses is set aside.
    Full,
    /// Only what the index and the directory listing tell (a unit the index
    /// does not know is still read): as cheap for 500 instances as for 5,
    /// for the sweep before each command. An object broken by hand is
    /// found by the full sweeps, or by the first command that reads it.
    Quick,
}

/// The filesystem sweeps, planned and executed: cheap, local, no engine.
/// Returns what was done.
pub fn sweep_files(store: &Store) -> Result<Vec<Finding>, StoreError> {
    let findings = plan_files(store, Depth::Quick)?;
    let mut done = Vec::with_capacity(findings.len());
    for finding in findings {
        if execute_on_disk(store, &finding)? {
            done.push(finding);
        }
    }
    Ok(done)
}

/// What every sweep would do now, in order: the filesystem first (so units
/// indexed again count as alive), then each engine from one listing of each
/// kind, then the keep caps. The engines swept are those instances run on
/// and those this process is connected to; one that cannot be asked is
/// skipped, said in a finding (its objects stay until it answers). Reads
/// only.
pub async fn plan(
    store: &Store,
    engines: &Engines,
    images: bool,
) -> Result<Vec<Finding>, SweepError> {
    let mut findings = store
        .blocking(|store| plan_files(store, Depth::Full))
        .await?;
    // Not the sweep's to remove (the agent wrote them): said, with the way.
    let layout = store.layout().clone();
    let left = jackin_files::offload::blocking(move || {
        jackin_checkouts::legacy_worktree::left_entries(&layout)
    })
    .await;
    for line in left {
        tracing::warn!("{line}");
    }
    let home_file = store.layout().home_id_file();
    // A home that never created an engine object has none to sweep; and
    // objects of other homes on the same engine are never ours to touch.
    let home_id = store
        .layout()
        .home_id()
        .map_err(|e| StoreError::io(&home_file, e))?;
    if let Some(home_id) = &home_id {
        // Units about to be indexed again are alive: their objects stay.
        let reindexed: HashSet<String> = findings
            .iter()
            .filter_map(|f| match f {
                Finding::UnitIndexed { container, .. } => read_object(store.layout(), container)
                    .ok()
                    .flatten()
                    .and_then(|obj| obj.metadata.uid),
                _ => None,
            })
            .collect();
        // Units about to be moved aside count as moved aside: their
        // volumes may hold what the conversation needs.
        let mut aside: HashSet<String> = moved_aside_ids(&store.layout().orphaned_dir());
        aside.extend(findings.iter().filter_map(|f| match f {
            Finding::UnitMovedAside { container, .. } => unit_id(container),
            _ => None,
        }));
        let mut names: BTreeSet<EngineName> = engines.names().into_iter().collect();
        names.extend(store.rows()?.into_iter().map(|r| r.engine));
        for name in names {
            let planned = async {
                let engine = engines.get(name.as_deref()).await?.engine;
                let on = (&name, &engine);
                let mut found = plan_engine(store, on, home_id, &reindexed, &aside).await?;
                if images {
                    found.extend(plan_images(store, on, home_id).await?);
                }
                Ok(found)
            };
            match planned.await {
                Ok(found) => findings.extend(found),
                Err(SweepError::Engine(e)) => findings.push(Finding::EngineNotSwept {
                    engine: name,
                    why: e.to_string(),
                }),
                Err(e) => return Err(e),
            }
        }
    }
    let capped = store.blocking(keep_cap::plan).await?;
    findings.extend(capped.into_iter().map(Finding::KeepCap));
    Ok(findings)
}

/// Carries out a plan, in order. A finding whose situation changed since it
/// was planned (the unit got indexed, someone took the lock, the instance
/// is being reconciled) is skipped; the next sweep looks again. Changes to
/// the state directory are [`Store`] methods, each checking under its lock
/// that the finding still holds; engine objects are removed by `act`, an
/// instance's only while no index row claims its uid (under the index
/// lock); a keep-cap purge settles under the unit lock. Returns what was
/// done.
pub async fn execute(
    store: &Store,
    engines: &Engines,
    findings: Vec<Finding>,
) -> Result<Vec<Finding>, SweepError> {
    let mut done = Vec::with_capacity(findings.len());
    for finding in findings {
        let carried_out = match &finding {
            Finding::EngineObjectRemoved {
                object,
                uid,
                engine,
                ..
            } => {
                let engine = engines.get(engine.as_deref()).await?.engine;
                let owned = uid.clone();
                match store.blocking(move |s| s.lock_unclaimed(&owned)).await? {
                    // Every writer of the index waits while this lock is
                    // held: a slow engine gets a bounded time, then the
                    // next sweep looks again.
                    Some(_index_lock) => {
                        let removal = jackin_act::remove_leftover(&engine, object);
                        match tokio::time::timeout(LEFTOVER_REMOVAL, removal).await {
                            // Gone already (someone else removed it):
                            // nothing was done.
                            Ok(removed) => removed?,
                            Err(_) => {
                                tracing::warn!(
                                    "sweep: the engine did not remove {} {} within {}s; the \
                                     next sweep tries again",
                                    object.kind(),
                                    object.id(),
                                    LEFTOVER_REMOVAL.as_secs()
                                );
                                false
                            }
                        }
                    }
                    None => false,
                }
            }
            Finding::ImageRemoved { id, engine, .. } => {
                let engine = engines.get(engine.as_deref()).await?.engine;
                jackin_act::remove_leftover(&engine, &Leftover::Image(id.clone())).await?
            }
            _ => {
                let on_disk = finding.clone();
                store
                    .blocking(move |s| execute_on_disk(s, &on_disk))
                    .await?
            }
        };
        if carried_out {
            done.push(finding);
        }
    }
    Ok(done)
}

/// Carries out a finding in the state directory; `false` when its situation
/// changed since it was planned and it was skipped.
fn execute_on_disk(store: &Store, finding: &Finding) -> Result<bool, StoreError> {
    let layout = store.layout();
    match finding {
        Finding::UnitIndexed { name, container } => store.reindex_unit(name, container),
        Finding::UnitMovedAside { container, to } => store.move_unit_aside(container, to),
        Finding::PurgeFinished { name, .. } => store.finish_interrupted_purge(name),
        Finding::LockRemoved { path } => store.remove_orphan_lock(path),
        Finding::WriteLeftoverRemoved { path } => store.remove_write_leftover(path),
        Finding::QuarantineRemoved { name, path } => store.remove_quarantine(name, path),
        Finding::RowCorrected { name, reason } => {
            let Some(mut guard) = store.try_lock_instance(name)? else {
                return Ok(false);
            };
            let status = guard.obj.status.get_or_insert_default();
            // As planned: no container of it ran then.
            let Some(corrected) = decide::corrected_phase(status.phase, false) else {
                return Ok(false);
            };
            status.phase = Some(corrected);
            set_condition(
                &mut status.conditions,
                condition::READY,
                ConditionStatus::False,
                reason,
                "the container is gone; the unit is intact and the next reconcile restores it",
                Timestamp::now(),
            );
            guard.save()?;
            Ok(true)
        }
        Finding::KeepCap(capped) => keep_cap::carry_out(store, capped),
        Finding::DiscardedRemoved { name, .. } => {
            // Still past the retention as the home says now.
            let still = discard_retention(layout).is_some_and(|(retention, _)| {
                discard::expired(layout, retention, Timestamp::now())
                    .iter()
                    .any(|(expired, _)| expired == name)
            });
            if !still {
                return Ok(false);
            }
            discard::remove(layout, name).map_err(|e| match e {
                discard::DiscardError::Io { path, source } => StoreError::io(&path, source),
                other => StoreError::io(
                    &layout.discarded_dir().join(name),
                    std::io::Error::other(other.to_string()),
                ),
            })
        }
        Finding::ArtifactsRemoved { collection, .. } => {
            // Still past the retention as the home says now.
            let still = artifact_retention(layout).is_some_and(|(retention, _)| {
                session::expired_artifacts(layout, retention, Timestamp::now()).contains(collection)
            });
            if !still {
                return Ok(false);
            }
            let dir = layout
                .artifacts_dir(&collection.instance)
                .join(&collection.name);
            session::remove_artifacts(layout, collection).map_err(|e| StoreError::io(&dir, e))
        }
        Finding::VolumeKept { .. } | Finding::EngineNotSwept { .. } => Ok(true),
        Finding::EngineObjectRemoved { .. } | Finding::ImageRemoved { .. } => {
            unreachable!("engine findings are executed against the engine")
        }
    }
}

/// What the filesystem sweeps would do. Reads only.
pub fn plan_files(store: &Store, depth: Depth) -> Result<Vec<Finding>, StoreError> {
    let layout = store.layout();
    let mut findings = plan_discarded(layout);
    findings.extend(plan_artifacts(layout));
    let data = layout.data_dir();
    let entries = match fs::read_dir(&data) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(findings),
        Err(e) => return Err(StoreError::io(&data, e)),
    };
    let index = Index::read(layout)?.ok().flatten().unwrap_or_default();
    let units: HashSet<&str> = index
        .rows()
        .iter()
        .map(|r| r.container_name.as_str())
        .collect();
    let indexed = |container: &str| units.contains(container);
    for row in index.rows() {
        if store.purge_interrupted(row) {
            findings.push(Finding::PurgeFinished {
                name: row.name.clone(),
                container: row.container_name.clone(),
            });
        } else if depth == Depth::Full {
            let unit = layout.unit_dir(&row.container_name);
            findings.extend(gitdir::quarantine_leftovers(&unit).into_iter().map(|path| {
                Finding::QuarantineRemoved {
                    name: row.name.clone(),
                    path,
                }
            }));
        }
    }
    let mut entries: Vec<_> = entries
        .collect::<Result<_, _>>()
        .map_err(|e| StoreError::io(&data, e))?;
    entries.sort_by_key(fs::DirEntry::file_name);
    for entry in entries {
        let path = entry.path();
        let Some(file_name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if file_name.starts_with(fsutil::TEMPORARY_PREFIX)
            && fs::symlink_metadata(&path).is_ok_and(|m| m.is_file())
        {
            findings.push(Finding::WriteLeftoverRemoved { path });
            continue;
        }
        // The run logs are no unit.
        if file_name.starts_with('.') || path == layout.diagnostics_dir() {
            continue;
        }
        if path.is_dir() {
            if !indexed(&file_name) {
                findings.push(stray_unit(store, &file_name));
            } else if depth == Depth::Full
                && let Err(StoreError::Unreadable { .. }) = read_object(layout, &file_name)
            {
                // Indexed, but its object is broken: set it aside whole (it
                // may hold a conversation) so the rest of the home works.
                findings.push(aside(layout, &file_name));
            }
        } else if let Some(container) = file_name.strip_suffix(".lock")
            && file_name != "instances.json.lock"
            && !indexed(container)
            && !layout.unit_dir(container).exists()
            // Held means in use: not an orphan.
            && FileLock::try_acquire(&path)
                .map_err(|e| StoreError::io(&path, e))?
                .is_some()
        {
            findings.push(Finding::LockRemoved { path });
        }
    }
    Ok(findings)
}

/// A unit the index does not know: to be indexed again when its object
/// reads, otherwise moved aside (it may hold a conversation).
fn stray_unit(store: &Store, container: &str) -> Finding {
    let layout = store.layout();
    if validate::dns_label(container).is_ok()
        && let Ok(Some(obj)) = read_object(layout, container)
        && IndexRow::of(&obj).is_some()
    {
        return Finding::UnitIndexed {
            name: obj.metadata.name,
            container: container.to_owned(),
        };
    }
    aside(layout, container)
}

/// Where an unreadable unit goes: `orphaned/<container>-<stamp>`, whole.
fn aside(layout: &Layout, container: &str) -> Finding {
    let stamp = Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    Finding::UnitMovedAside {
        container: container.to_owned(),
        to: layout.orphaned_dir().join(format!("{container}-{stamp}")),
    }
}

/// What the engine sweeps would do, from one listing of each kind.
async fn plan_engine(
    store: &Store,
    (engine_name, engine): (&EngineName, &Engine),
    home_id: &str,
    reindexed: &HashSet<String>,
    moved_aside: &HashSet<String>,
) -> Result<Vec<Finding>, SweepError> {
    let managed = [(label::MANAGED, "true"), (label::HOME, home_id)];
    let (containers, networks, volumes) = futures::try_join!(
        engine.list_containers(&managed),
        engine.list_networks(&managed),
        engine.list_volumes(&managed),
    )?;
    let rows = store.rows()?;
    let live: HashSet<&str> = rows
        .iter()
        .map(|r| r.uid.as_str())
        .chain(reindexed.iter().map(String::as_str))
        .collect();
    let label = |labels: Option<&HashMap<String, String>>, key: &str| {
        labels.and_then(|l| l.get(key)).cloned().unwrap_or_default()
    };
    let mut findings = Vec::new();

    // Rows that claim a running container the engine does not have.
    let running: HashSet<String> = containers
        .iter()
        .filter(|c| {
            c.labels
                .as_ref()
                .is_some_and(|l| !l.contains_key(label::SIDECAR))
        })
        .filter(|c| c.state == Some(ContainerSummaryStateEnum::RUNNING))
        .map(|c| label(c.labels.as_ref(), label::UID))
        .collect();
    // Only rows of this engine: another engine's instances are not here.
    for row in rows.iter().filter(|r| &r.engine == engine_name) {
        if decide::corrected_phase(row.phase, running.contains(&row.uid)).is_some() {
            findings.push(Finding::RowCorrected {
                name: row.name.clone(),
                reason: why_missing(store, &row.name)?,
            });
        }
    }

    // Engine objects of instances that no longer exist.
    for c in &containers {
        if live.contains(label(c.labels.as_ref(), label::UID).as_str()) {
            continue;
        }
        let name = container_name(c);
        findings.push(Finding::EngineObjectRemoved {
            object: Leftover::Container(c.id.clone().unwrap_or_else(|| name.clone())),
            name,
            instance: label(c.labels.as_ref(), label::INSTANCE),
            uid: label(c.labels.as_ref(), label::UID),
            engine: engine_name.clone(),
        });
    }
    for n in &networks {
        if live.contains(label(n.labels.as_ref(), label::UID).as_str()) {
            continue;
        }
        let name = n.name.clone().unwrap_or_default();
        findings.push(Finding::EngineObjectRemoved {
            object: Leftover::Network(n.id.clone().unwrap_or_else(|| name.clone())),
            name,
            instance: label(n.labels.as_ref(), label::INSTANCE),
            uid: label(n.labels.as_ref(), label::UID),
            engine: engine_name.clone(),
        });
    }
    for v in &volumes {
        let uid = v.labels.get(label::UID).cloned().unwrap_or_default();
        if live.contains(uid.as_str()) {
            continue;
        }
        let instance = v.labels.get(label::INSTANCE).cloned().unwrap_or_default();
        let short_uid = uid.get(..8).unwrap_or(&uid);
        if moved_aside.contains(short_uid) {
            findings.push(Finding::VolumeKept {
                name: v.name.clone(),
                instance,
            });
            continue;
        }
        // A volume's name is its id.
        findings.push(Finding::EngineObjectRemoved {
            object: Leftover::Volume(v.name.clone()),
            name: v.name.clone(),
            instance,
            uid,
            engine: engine_name.clone(),
        });
    }
    Ok(findings)
}

/// Why an instance's running container is missing: the engine restarted
/// since it was last seen running, or the container is simply gone.
fn why_missing(store: &Store, name: &str) -> Result<&'static str, StoreError> {
    let last_seen_running = match store.get_instance(name) {
        Ok(obj) => obj
            .status
            .as_ref()
            .and_then(|s| find_condition(&s.conditions, condition::READY))
            .filter(|c| c.status == ConditionStatus::True)
            .map(|c| c.last_transition_time),
        Err(StoreError::InstanceNotFound(_)) => None,
        Err(e) => return Err(e),
    };
    Ok(match (engine_started_at(), last_seen_running) {
        (Some(started), Some(seen)) if started > seen => reason::ENGINE_RESTARTED,
        _ => reason::CONTAINER_MISSING,
    })
}

/// A retention the home sets, read by `of` from `config.yaml` with how the
/// file wrote it (`None`: the default); `None` (nothing is removed) when
/// the file cannot be read, and all of `what` is kept.
fn home_retention(
    layout: &Layout,
    what: &str,
    of: fn(&HomeConfig) -> (std::time::Duration, Option<String>),
) -> Option<(std::time::Duration, String)> {
    match jackin_engine::addresses::read_config(layout.root()) {
        Ok(config) => {
            let (retention, written) = of(&config);
            Some((
                retention,
                written.unwrap_or_else(|| "7d (the default)".into()),
            ))
        }
        Err(e) => {
            tracing::warn!("keeping all {what}: {e}");
            None
        }
    }
}

/// The home's retention of discarded work (`discardRetention`).
fn discard_retention(layout: &Layout) -> Option<(std::time::Duration, String)> {
    home_retention(layout, "saved discarded work", |config| {
        (config.discard_retention(), config.discard_retention.clone())
    })
}

/// The home's retention of collected artifacts (`artifactRetention`).
fn artifact_retention(layout: &Layout) -> Option<(std::time::Duration, String)> {
    home_retention(layout, "collected artifacts", |config| {
        (
            config.artifact_retention(),
            config.artifact_retention.clone(),
        )
    })
}

/// Collected artifacts past the home's retention.
fn plan_artifacts(layout: &Layout) -> Vec<Finding> {
    let Some((retention, written)) = artifact_retention(layout) else {
        return Vec::new();
    };
    session::expired_artifacts(layout, retention, Timestamp::now())
        .into_iter()
        .map(|collection| Finding::ArtifactsRemoved {
            collection,
            retention: written.clone(),
        })
        .collect()
}

/// Saved discarded work past the home's retention.
fn plan_discarded(layout: &Layout) -> Vec<Finding> {
    let Some((retention, written)) = discard_retention(layout) else {
        return Vec::new();
    };
    discard::expired(layout, retention, Timestamp::now())
        .into_iter()
        .map(|(name, saved_at)| Finding::DiscardedRemoved {
            name,
            saved_at,
            retention: written.clone(),
        })
        .collect()
}

/// The `<id>` of every `jk-<id>-…` unit moved aside; the id is the start of
/// the instance's uid, which is how its engine objects are recognized.
fn moved_aside_ids(dir: &Path) -> HashSet<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return HashSet::new();
    };
    entries
        .filter_map(|e| unit_id(&e.ok()?.file_name().into_string().ok()?))
        .collect()
}

/// The `<id>` of a `jk-<id>-…` unit name.
fn unit_id(unit: &str) -> Option<String> {
    Some(unit.strip_prefix("jk-")?.split('-').next()?.to_owned())
}

/// When the local engine process started: the creation time of its `/proc`
/// entry. `None` for a remote engine or when it cannot be told.
fn engine_started_at() -> Option<Timestamp> {
    let pid = fs::read_to_string("/var/run/docker.pid").ok()?;
    let modified = fs::metadata(format!("/proc/{}", pid.trim()))
        .ok()?
        .modified()
        .ok()?;
    Timestamp::try_from(modified).ok()
}

/// Images labelled as built by jackin whose id no instance's recipe pins.
async fn plan_images(
    store: &Store,
    (engine_name, engine): (&EngineName, &Engine),
    home_id: &str,
) -> Result<Vec<Finding>, SweepError> {
    let listing = store.list_instances()?;
    if let Some(unreadable) = listing.unreadable.first() {
        // Which image it pins is unknown: removing none is the safe answer.
        tracing::warn!("not removing images while a unit is unreadable: {unreadable}");
        return Ok(Vec::new());
    }
    // A derived image's role image is its parent: pinned with it.
    let pinned: HashSet<String> = listing
        .instances
        .into_iter()
        .filter_map(|obj| obj.status?.recipe)
        .flat_map(|r| std::iter::once(r.image_id).chain(r.derived_from))
        .collect();
    let mut findings = Vec::new();
    for image in engine.list_images().await? {
        let ours = image.labels.get(label::MANAGED).map(String::as_str) == Some("true")
            && image.labels.get(label::HOME).map(String::as_str) == Some(home_id)
            && image.labels.contains_key(label::ROLE);
        if !ours || pinned.contains(&image.id) {
            continue;
        }
        let reference = image
            .repo_tags
            .first()
            .cloned()
            .unwrap_or_else(|| image.id.clone());
        findings.push(Finding::ImageRemoved {
            id: image.id.clone(),
            reference,
            engine: engine_name.clone(),
        });
    }
    Ok(findings)
}
