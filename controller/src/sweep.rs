//! Sweeps: repairing what others left behind (a crash, a power-off, `docker
//! rm`, an old version). A sweep is observe → plan → execute like a
//! reconcile: [`plan`] reads the state directory and the engine and returns
//! findings, each naming by id what it acts on and why; [`execute`] carries
//! them out, checking under the right lock that each still holds; a dry run
//! prints the plan and stops. Ownership is decided by label and uid, never by
//! name, and nothing that may hold a conversation is ever deleted; engine
//! objects are swept only when they carry this home's id, since homes may
//! share an engine.
//!
//! - units missing from the index are indexed again; unreadable ones are
//!   moved to `data/.orphaned/`;
//! - a purge interrupted after its object went is finished;
//! - lock files whose unit is gone are removed, once a non-blocking lock
//!   attempt proves nobody holds them;
//! - index rows that claim `Running` without a running container are set to
//!   `Exited` with reason `ContainerMissing`, or `EngineRestarted` when the
//!   engine started after the instance was last seen running;
//! - engine objects with our labels whose uid belongs to no instance are
//!   removed (volumes only when their instance was purged; a volume whose
//!   instance's unit was moved aside is reported and kept);
//! - a workspace's `keep.max` bounds its kept instances per (role, agent);
//! - the saved work of discarded checkouts (`discarded/`) goes once the
//!   home's `discardRetention` has passed;
//! - with `images`, images jackin built that no recipe references are removed.

use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use jackin_api::instance::{Instance, InstancePhase, SettledBy};
use jackin_api::meta::{find_condition, set_condition};
use jackin_api::names::{annotation, condition, label, reason};
use jackin_api::{ConditionStatus, DesiredPhase, validate};
use jackin_reconcilers::assess::acknowledgement_digest;
use jackin_reconcilers::discard;
use jackin_reconcilers::engine::models::ContainerSummaryStateEnum;
use jackin_reconcilers::fsutil::{self, FileLock, ensure_private_dir, remove_if_exists};
use jackin_reconcilers::observe::container_name;
use jackin_reconcilers::{Engine, EngineError, Layout};
use jiff::Timestamp;

use crate::engines::{EngineName, Engines, display_name};
use crate::index::{Index, IndexRow};
use crate::store::{Store, StoreError};
use crate::unit_object::read_object;

/// One thing a sweep found, and what it does about it (or would, in a dry
/// run). Engine objects are named by id; a finding that only reports
/// (`VolumeKept`, `KeepCapSpared`) does nothing when executed.
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
    RowCorrected {
        name: String,
        reason: &'static str,
    },
    EngineObjectRemoved {
        kind: EngineObjectKind,
        id: String,
        name: String,
        instance: String,
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
    /// Over its workspace's `keep.max`: settled as `Purged`.
    KeepCapPurge {
        name: String,
        workspace: String,
    },
    /// Over the cap, but with unfinished work in a mount that nobody
    /// acknowledged: never purged automatically.
    KeepCapSpared {
        name: String,
        workspace: String,
    },
    /// The saved work of a discard, past the home's retention: removed.
    DiscardedRemoved {
        /// The save's name (`discarded/<name>/`).
        name: String,
        saved_at: Timestamp,
        retention: String,
    },
}

/// The kinds of engine object a sweep removes by id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineObjectKind {
    Container,
    Network,
    Volume,
}

impl EngineObjectKind {
    fn as_str(self) -> &'static str {
        match self {
            Self::Container => "container",
            Self::Network => "network",
            Self::Volume => "volume",
        }
    }
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
            | Finding::EngineObjectRemoved { .. }
            | Finding::ImageRemoved { .. }
            | Finding::DiscardedRemoved { .. } => ("removed", "would remove"),
            Finding::RowCorrected { .. } => ("corrected", "would correct"),
            Finding::VolumeKept { .. } => ("kept", "would keep"),
            Finding::KeepCapPurge { .. } => ("purging", "would purge"),
            Finding::KeepCapSpared { .. } => ("kept", "would keep"),
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
            Finding::RowCorrected { name, reason } => {
                format!("{verb} instance/{name}: it claimed Running without a container ({reason})")
            }
            Finding::EngineObjectRemoved {
                kind,
                id,
                name,
                instance,
                engine,
            } => format!(
                "{verb} {} {name} ({}){} of vanished instance/{instance}",
                kind.as_str(),
                short_id(id),
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
            Finding::KeepCapPurge { name, workspace } => format!(
                "{verb} instance/{name}: workspace {workspace} keeps fewer kept sessions (keep.max)"
            ),
            Finding::KeepCapSpared { name, workspace } => format!(
                "{verb} instance/{name} over workspace {workspace}'s keep.max: it has unfinished work"
            ),
            Finding::DiscardedRemoved {
                name,
                saved_at,
                retention,
            } => format!(
                "{verb} the saved work discarded/{name} (saved {saved_at}): past the retention \
                 of {retention} (discardRetention)"
            ),
        }
    }

    /// The instance whose reconcile this finding calls for once executed:
    /// one indexed again, corrected, or settled as purged by the cap.
    pub fn instance_to_reconcile(&self) -> Option<&str> {
        match self {
            Finding::UnitIndexed { name, .. }
            | Finding::RowCorrected { name, .. }
            | Finding::KeepCapPurge { name, .. } => Some(name),
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
    crate::run_logs::sweep(store.layout(), None);
    execute(store, engines, findings).await
}

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
/// and those this process is connected to; one that does not answer is
/// skipped (its objects stay until it does). Reads only.
pub async fn plan(
    store: &Store,
    engines: &Engines,
    images: bool,
) -> Result<Vec<Finding>, SweepError> {
    let mut findings = store
        .blocking(|store| plan_files(store, Depth::Full))
        .await?;
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
            let engine = match engines.get(name.as_deref()).await {
                Ok(connected) => connected.engine,
                Err(e) => {
                    tracing::warn!("not sweeping engine {}: {e}", display_name(name.as_deref()));
                    continue;
                }
            };
            let on = (&name, &engine);
            findings.extend(plan_engine(store, on, home_id, &reindexed, &aside).await?);
            if images {
                findings.extend(plan_images(store, on, home_id).await?);
            }
        }
    }
    findings.extend(store.blocking(plan_keep_caps).await?);
    Ok(findings)
}

/// Carries out a plan, in order. A finding whose situation changed since it
/// was planned (the unit got indexed, someone took the lock, the instance
/// is being reconciled) is skipped; the next sweep looks again. Returns
/// what was done.
pub async fn execute(
    store: &Store,
    engines: &Engines,
    findings: Vec<Finding>,
) -> Result<Vec<Finding>, SweepError> {
    let mut done = Vec::with_capacity(findings.len());
    for finding in findings {
        let carried_out = match &finding {
            // Gone already (someone else removed it): nothing was done.
            Finding::EngineObjectRemoved {
                kind, id, engine, ..
            } => {
                let engine = engines.get(engine.as_deref()).await?.engine;
                match kind {
                    EngineObjectKind::Container => engine.remove_container(id).await?,
                    EngineObjectKind::Network => engine.remove_network(id).await?,
                    EngineObjectKind::Volume => engine.remove_volume(id).await?,
                }
            }
            Finding::ImageRemoved { id, engine, .. } => {
                let engine = engines.get(engine.as_deref()).await?.engine;
                engine.remove_image(id).await?
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
        Finding::UnitIndexed { name, container } => {
            let _index_lock = store.lock_index()?;
            let (mut index, _) = Index::load_or_repair(layout)?;
            let row = read_object(layout, container)
                .ok()
                .flatten()
                .and_then(|obj| IndexRow::of(&obj));
            let Some(row) = row.filter(|row| &row.name == name && !indexed(&index, container))
            else {
                return Ok(false);
            };
            index.upsert(row);
            index.write(layout)?;
            Ok(true)
        }
        Finding::UnitMovedAside { container, to } => {
            let _index_lock = store.lock_index()?;
            let (mut index, _) = Index::load_or_repair(layout)?;
            let unreadable = match read_object(layout, container) {
                Err(StoreError::Unreadable { .. }) => true,
                // A unit with no object is stray only when unindexed: an
                // indexed one is an interrupted purge or a creation.
                Ok(None) => !indexed(&index, container),
                _ => false,
            };
            if !unreadable || !layout.unit_dir(container).exists() {
                return Ok(false);
            }
            let orphaned = layout.orphaned_dir();
            ensure_private_dir(&orphaned).map_err(|e| StoreError::io(&orphaned, e))?;
            fs::rename(layout.unit_dir(container), to)
                .map_err(|e| StoreError::io(&layout.unit_dir(container), e))?;
            tracing::warn!("moved unreadable unit {container} to {}", to.display());
            if index.remove_unit(container) {
                index.write(layout)?;
            }
            Ok(true)
        }
        Finding::PurgeFinished { name, .. } => store.finish_interrupted_purge(name),
        Finding::LockRemoved { path } => {
            let Some(held) = FileLock::try_acquire(path).map_err(|e| StoreError::io(path, e))?
            else {
                return Ok(false);
            };
            let _index_lock = store.lock_index()?;
            let (index, _) = Index::load_or_repair(layout)?;
            let container = lock_owner(path).unwrap_or_default();
            if indexed(&index, container) || layout.unit_dir(container).exists() {
                return Ok(false);
            }
            remove_if_exists(path).map_err(|e| StoreError::io(path, e))?;
            drop(held);
            Ok(true)
        }
        Finding::WriteLeftoverRemoved { path } => {
            let _index_lock = store.lock_index()?;
            if !fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
                return Ok(false);
            }
            remove_if_exists(path).map_err(|e| StoreError::io(path, e))?;
            Ok(true)
        }
        Finding::RowCorrected { name, reason } => {
            let Some(mut guard) = store.try_lock_instance(name)? else {
                return Ok(false);
            };
            let status = guard.obj.status.get_or_insert_default();
            if status.phase != Some(InstancePhase::Running) {
                return Ok(false);
            }
            status.phase = Some(InstancePhase::Exited);
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
        Finding::KeepCapPurge { name, .. } => {
            store.settle(name, DesiredPhase::Purged, SettledBy::KeepCap, None)?;
            Ok(true)
        }
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
        Finding::VolumeKept { .. } | Finding::KeepCapSpared { .. } => Ok(true),
        Finding::EngineObjectRemoved { .. } | Finding::ImageRemoved { .. } => {
            unreachable!("engine findings are executed against the engine")
        }
    }
}

fn indexed(index: &Index, container: &str) -> bool {
    index
        .rows()
        .iter()
        .any(|row| row.container_name == container)
}

/// The unit a sibling lock file `data/<container>.lock` belongs to.
fn lock_owner(path: &Path) -> Option<&str> {
    path.file_name()?.to_str()?.strip_suffix(".lock")
}

/// What the filesystem sweeps would do. Reads only.
pub fn plan_files(store: &Store, depth: Depth) -> Result<Vec<Finding>, StoreError> {
    let layout = store.layout();
    let mut findings = plan_discarded(layout);
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
        if row.phase == Some(InstancePhase::Running) && !running.contains(&row.uid) {
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
            kind: EngineObjectKind::Container,
            id: c.id.clone().unwrap_or_else(|| name.clone()),
            name,
            instance: label(c.labels.as_ref(), label::INSTANCE),
            engine: engine_name.clone(),
        });
    }
    for n in &networks {
        if live.contains(label(n.labels.as_ref(), label::UID).as_str()) {
            continue;
        }
        let name = n.name.clone().unwrap_or_default();
        findings.push(Finding::EngineObjectRemoved {
            kind: EngineObjectKind::Network,
            id: n.id.clone().unwrap_or_else(|| name.clone()),
            name,
            instance: label(n.labels.as_ref(), label::INSTANCE),
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
            kind: EngineObjectKind::Volume,
            id: v.name.clone(),
            name: v.name.clone(),
            instance,
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

/// What bounding the `Kept` instances of each (workspace, role, agent) by
/// the workspace's `keep.max` would do now. Reads only.
pub fn plan_keep_caps(store: &Store) -> Result<Vec<Finding>, StoreError> {
    let workspaces = store.list_workspaces()?;
    if workspaces.iter().all(|ws| ws.spec.keep.max.is_none()) {
        return Ok(Vec::new());
    }
    Ok(keep_caps(
        &workspaces
            .into_iter()
            .filter_map(|ws| Some((ws.metadata.name, ws.spec.keep.max?)))
            .collect(),
        &store.list_instances()?.instances,
    ))
}

/// What the keep cap would do once `obj` is kept: its workspace's kept
/// instances with `obj` among them, as the most recently running. Reads
/// only; for dry runs.
pub fn keep_caps_once_kept(store: &Store, obj: &Instance) -> Result<Vec<Finding>, StoreError> {
    let Some(workspace) = obj.spec.workspace.as_deref() else {
        return Ok(Vec::new());
    };
    let Some(max) = store
        .get_workspace(workspace)?
        .and_then(|ws| ws.spec.keep.max)
    else {
        return Ok(Vec::new());
    };
    let mut kept = obj.clone();
    let status = kept.status.get_or_insert_default();
    status.phase = Some(InstancePhase::Kept);
    set_condition(
        &mut status.conditions,
        condition::READY,
        ConditionStatus::False,
        reason::KEPT,
        "kept",
        Timestamp::now(),
    );
    let mut instances = store.list_instances()?.instances;
    instances.retain(|other| other.metadata.name != obj.metadata.name);
    instances.push(kept);
    let caps = BTreeMap::from([(workspace.to_owned(), max)]);
    Ok(keep_caps(&caps, &instances))
}

/// The keep caps over `instances`, decided: beyond `keep.max` the least
/// recently running are purged, except those whose mounts hold unfinished
/// work nobody acknowledged, which are only reported. Converging the purges is left to the
/// loop.
pub fn keep_caps(caps: &BTreeMap<String, u32>, instances: &[Instance]) -> Vec<Finding> {
    let mut groups: BTreeMap<(&str, &str, &str), Vec<&Instance>> = BTreeMap::new();
    for obj in instances {
        let kept =
            obj.desired_phase() == DesiredPhase::Kept && obj.phase() == Some(InstancePhase::Kept);
        if let (true, Some(ws)) = (kept, obj.spec.workspace.as_deref())
            && caps.contains_key(ws)
        {
            let key = (ws, obj.spec.role.name.as_str(), obj.spec.agent.as_str());
            groups.entry(key).or_default().push(obj);
        }
    }
    let mut findings = Vec::new();
    for ((workspace, _, _), mut kept) in groups {
        let max = caps[workspace] as usize;
        if kept.len() <= max {
            continue;
        }
        // Most recently running first; the tail is over the cap.
        kept.sort_by_key(|obj| std::cmp::Reverse(last_running(obj)));
        for obj in kept.into_iter().skip(max) {
            let name = obj.metadata.name.clone();
            let workspace = workspace.to_owned();
            // Unfinished work the operator acknowledged (its digest in the
            // annotation, as the discard gate reads it) goes: it is saved
            // first, as every discard's is. Work nobody acknowledged stays.
            let unfinished = obj.status.as_ref().is_some_and(|s| {
                acknowledgement_digest(&s.mounts).is_some_and(|digest| {
                    obj.metadata
                        .annotations
                        .get(annotation::ACKNOWLEDGE_DISCARD)
                        != Some(&digest)
                })
            });
            findings.push(match unfinished {
                true => Finding::KeepCapSpared { name, workspace },
                false => Finding::KeepCapPurge { name, workspace },
            });
        }
    }
    findings
}

/// The home's retention of discarded work, and how `config.yaml` wrote it;
/// `None` (nothing is removed) when the file cannot be read.
fn discard_retention(layout: &Layout) -> Option<(std::time::Duration, String)> {
    match jackin_reconcilers::addresses::read_config(layout.root()) {
        Ok(config) => {
            let retention = config.discard_retention();
            let written = config
                .discard_retention
                .unwrap_or_else(|| "7d (the default)".into());
            Some((retention, written))
        }
        Err(e) => {
            tracing::warn!("keeping all saved discarded work: {e}");
            None
        }
    }
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

/// When the instance last stopped running (its `Ready` condition's last
/// transition), else when it was created.
fn last_running(obj: &Instance) -> Option<Timestamp> {
    obj.status
        .as_ref()
        .and_then(|s| find_condition(&s.conditions, condition::READY))
        .map(|c| c.last_transition_time)
        .or(obj.metadata.creation_timestamp)
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A kept instance of workspace `ws` (role `r`, agent `shell`) that was
    /// last running at `second`, with unfinished work in one checkout and,
    /// maybe, its acknowledgement.
    fn kept(name: &str, second: i64, acknowledged: Option<&str>) -> Instance {
        let mut annotations = serde_json::Map::new();
        if let Some(digest) = acknowledged {
            annotations.insert(annotation::ACKNOWLEDGE_DISCARD.into(), digest.into());
        }
        serde_json::from_value(serde_json::json!({
            "apiVersion": "jackin.dev/v1alpha1",
            "kind": "Instance",
            "metadata": {"name": name, "annotations": annotations},
            "spec": {"phase": "Kept", "workspace": "ws", "role": {"name": "r"}, "agent": "shell"},
            "status": {
                "phase": "Kept",
                "conditions": [{
                    "type": "Ready", "status": "False", "reason": "Kept", "message": "kept",
                    "lastTransitionTime": Timestamp::from_second(second).unwrap().to_string(),
                }],
                "mounts": [{
                    "dst": "/w", "isolation": "clone", "path": "/x",
                    "dirtyFiles": ["?? notes.md"], "digest": "0123456789abcdef",
                }],
            },
        }))
        .unwrap()
    }

    /// Over the cap, unfinished work stays unless its digest was
    /// acknowledged: then it goes, as any acknowledged discard (saved
    /// first by the purge).
    #[test]
    fn the_keep_cap_purges_unfinished_work_only_when_acknowledged() {
        let caps = BTreeMap::from([("ws".to_owned(), 1)]);
        let digest = {
            let obj = kept("x", 1, None);
            acknowledgement_digest(&obj.status.unwrap().mounts).unwrap()
        };
        let spared = keep_caps(&caps, &[kept("old", 1, None), kept("new", 2, None)]);
        assert!(
            matches!(spared.as_slice(), [Finding::KeepCapSpared { name, .. }] if name == "old"),
            "{spared:?}"
        );
        let wrong = keep_caps(
            &caps,
            &[kept("old", 1, Some("not-the-digest")), kept("new", 2, None)],
        );
        assert!(
            matches!(wrong.as_slice(), [Finding::KeepCapSpared { .. }]),
            "{wrong:?}"
        );
        let purged = keep_caps(
            &caps,
            &[kept("old", 1, Some(&digest)), kept("new", 2, None)],
        );
        assert!(
            matches!(purged.as_slice(), [Finding::KeepCapPurge { name, .. }] if name == "old"),
            "{purged:?}"
        );
    }
}
