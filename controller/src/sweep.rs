//! Sweeps: repairing what others left behind (a crash, a power-off, `docker
//! rm`, an old version). Each finding is reported; with `dry_run` nothing is
//! changed. Ownership is decided by label and uid, never by name, and nothing
//! that may hold a conversation is ever deleted; engine objects are swept
//! only when they carry this home's id, since homes may share an engine: an unreadable unit is moved
//! aside.
//!
//! - units missing from the index are indexed again; unreadable ones are
//!   moved to `data/.orphaned/`;
//! - lock files whose unit is gone are removed, once a non-blocking lock
//!   attempt proves nobody holds them;
//! - index rows that claim `Running` without a running container are set to
//!   `Exited` with reason `ContainerMissing`, or `EngineRestarted` when the
//!   engine started after the instance was last seen running;
//! - engine objects with our labels whose uid belongs to no instance are
//!   removed (volumes only when their instance was purged; a volume whose
//!   instance's unit was moved aside is reported and kept);
//! - a workspace's `keep.max` bounds its kept instances per (role, agent);
//! - with `images`, images jackin built that no recipe references are removed.

use std::collections::HashSet;
use std::fs;
use std::path::{Path, PathBuf};

use jackin_api::instance::{Instance, InstancePhase, SettledBy};
use jackin_api::meta::{find_condition, set_condition};
use jackin_api::names::{condition, label, reason};
use jackin_api::{ConditionStatus, DesiredPhase, validate};
use jackin_reconcilers::engine::models::ContainerSummaryStateEnum;
use jackin_reconcilers::fsutil::{FileLock, ensure_private_dir, remove_if_exists};
use jackin_reconcilers::observe::container_name;
use jackin_reconcilers::{Engine, EngineError};
use jiff::Timestamp;

use crate::index::{Index, IndexRow};
use crate::store::{Store, StoreError, read_object};

/// One thing a sweep found, and did (or would do).
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
    LockRemoved {
        path: PathBuf,
    },
    RowCorrected {
        name: String,
        reason: &'static str,
    },
    EngineObjectRemoved {
        kind: &'static str,
        name: String,
        instance: String,
    },
    VolumeKept {
        name: String,
        instance: String,
    },
    ImageRemoved {
        reference: String,
    },
    /// Over its workspace's `keep.max`: its desired phase is now `Purged`.
    KeepCapPurge {
        name: String,
        workspace: String,
    },
    /// Over the cap, but with unfinished work in a mount: never purged
    /// automatically.
    KeepCapSpared {
        name: String,
        workspace: String,
    },
}

impl Finding {
    /// The line `jackin prune` prints; `dry_run` words it as a proposal.
    pub fn describe(&self, dry_run: bool) -> String {
        let (done, todo) = match self {
            Finding::UnitIndexed { .. } => ("indexed", "would index"),
            Finding::UnitMovedAside { .. } => ("moved aside", "would move aside"),
            Finding::LockRemoved { .. }
            | Finding::EngineObjectRemoved { .. }
            | Finding::ImageRemoved { .. } => ("removed", "would remove"),
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
            Finding::LockRemoved { path } => format!("{verb} orphan lock {}", path.display()),
            Finding::RowCorrected { name, reason } => {
                format!("{verb} instance/{name}: it claimed Running without a container ({reason})")
            }
            Finding::EngineObjectRemoved {
                kind,
                name,
                instance,
            } => format!("{verb} {kind} {name} of vanished instance/{instance}"),
            Finding::VolumeKept { name, instance } => format!(
                "{verb} volume {name} of instance/{instance}: its unit was moved aside, \
                 remove it by hand once you have checked it"
            ),
            Finding::ImageRemoved { reference } => {
                format!("{verb} image {reference}, built by jackin and pinned by no instance")
            }
            Finding::KeepCapPurge { name, workspace } => format!(
                "{verb} instance/{name}: workspace {workspace} keeps fewer kept sessions (keep.max)"
            ),
            Finding::KeepCapSpared { name, workspace } => format!(
                "{verb} instance/{name} over workspace {workspace}'s keep.max: it has unfinished work"
            ),
        }
    }
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

/// The filesystem sweeps: cheap, local, no engine. Runs under the index
/// lock, which instance creation also holds, so a unit being created is never
/// mistaken for a stray one.
pub fn sweep_files(store: &Store, dry_run: bool) -> Result<Vec<Finding>, StoreError> {
    let layout = store.layout();
    let data = layout.data_dir();
    let entries = match fs::read_dir(&data) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(StoreError::io(&data, e)),
    };
    let _index_lock = store.lock_index()?;
    let (mut index, _) = Index::load_or_repair(layout)?;
    let indexed: HashSet<String> = index
        .rows()
        .iter()
        .map(|row| row.container_name.clone())
        .collect();
    let mut reindexed = false;
    let mut findings = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|e| StoreError::io(&data, e))?;
        let path = entry.path();
        let Some(file_name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if file_name.starts_with('.') {
            continue;
        }
        if path.is_dir() {
            if !indexed.contains(&file_name) {
                let (finding, row) = stray_unit(store, &file_name, dry_run)?;
                if let Some(row) = row {
                    reindexed |= index.upsert(row);
                }
                findings.push(finding);
            } else if let Err(StoreError::Unreadable { .. }) = read_object(layout, &file_name) {
                // Indexed, but its object is broken: set it aside whole (it
                // may hold a conversation) so the rest of the home works.
                findings.push(move_aside(layout, &file_name, dry_run)?);
                if !dry_run {
                    index.remove_unit(&file_name);
                    reindexed = true;
                }
            }
        } else if let Some(container) = file_name.strip_suffix(".lock")
            && file_name != "instances.json.lock"
            && !indexed.contains(container)
            && !layout.unit_dir(container).exists()
        {
            findings.extend(orphan_lock(&path, dry_run)?);
        }
    }
    if reindexed && !dry_run {
        index.write(layout)?;
    }
    Ok(findings)
}

/// A unit the index does not know: to be indexed again when its object
/// reads (the caller updates the index), otherwise moved aside (it may hold
/// a conversation).
fn stray_unit(
    store: &Store,
    container: &str,
    dry_run: bool,
) -> Result<(Finding, Option<IndexRow>), StoreError> {
    let layout = store.layout();
    if validate::dns_label(container).is_ok()
        && let Ok(Some(obj)) = read_object(layout, container)
        && let Some(row) = IndexRow::of(&obj)
    {
        let finding = Finding::UnitIndexed {
            name: obj.metadata.name,
            container: container.to_owned(),
        };
        return Ok((finding, Some(row)));
    }
    Ok((move_aside(layout, container, dry_run)?, None))
}

/// Moves a unit whose object cannot be read to `orphaned/`, whole.
fn move_aside(
    layout: &jackin_reconcilers::Layout,
    container: &str,
    dry_run: bool,
) -> Result<Finding, StoreError> {
    let stamp = Timestamp::now().strftime("%Y%m%dT%H%M%SZ").to_string();
    let to = layout.orphaned_dir().join(format!("{container}-{stamp}"));
    if !dry_run {
        let orphaned = layout.orphaned_dir();
        ensure_private_dir(&orphaned).map_err(|e| StoreError::io(&orphaned, e))?;
        fs::rename(layout.unit_dir(container), &to)
            .map_err(|e| StoreError::io(&layout.unit_dir(container), e))?;
        tracing::warn!("moved unreadable unit {container} to {}", to.display());
    }
    Ok(Finding::UnitMovedAside {
        container: container.to_owned(),
        to,
    })
}

/// Removes a lock file nobody holds.
fn orphan_lock(path: &Path, dry_run: bool) -> Result<Option<Finding>, StoreError> {
    let Some(held) = FileLock::try_acquire(path).map_err(|e| StoreError::io(path, e))? else {
        return Ok(None);
    };
    if !dry_run {
        remove_if_exists(path).map_err(|e| StoreError::io(path, e))?;
    }
    drop(held);
    Ok(Some(Finding::LockRemoved {
        path: path.to_owned(),
    }))
}

/// Every sweep: the filesystem first (so re-indexed units count as alive),
/// then the engine, from one listing of each kind.
pub async fn sweep(
    store: &Store,
    engine: &Engine,
    options: Options,
) -> Result<Vec<Finding>, SweepError> {
    let mut findings = blocking(store, move |s| sweep_files(s, options.dry_run)).await?;
    let home_file = store.layout().home_id_file();
    // A home that never created an engine object has none to sweep; and
    // objects of other homes on the same engine are never ours to touch.
    let Some(home_id) = store
        .layout()
        .home_id()
        .map_err(|e| StoreError::io(&home_file, e))?
    else {
        findings.extend(blocking(store, move |s| enforce_keep_caps(s, options.dry_run)).await?);
        return Ok(findings);
    };
    let managed = [(label::MANAGED, "true"), (label::HOME, home_id.as_str())];
    let (containers, networks, volumes) = futures::try_join!(
        engine.list_containers(&managed),
        engine.list_networks(&managed),
        engine.list_volumes(&managed),
    )?;
    let rows = store.rows()?;
    let live: HashSet<&str> = rows.iter().map(|r| r.uid.as_str()).collect();
    let label = |labels: Option<&std::collections::HashMap<String, String>>, key: &str| {
        labels.and_then(|l| l.get(key)).cloned().unwrap_or_default()
    };

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
    for row in &rows {
        let claims_running = matches!(row.phase, Some(InstancePhase::Running));
        if claims_running
            && !running.contains(&row.uid)
            && let Some(finding) = correct_row(store, row, options.dry_run)?
        {
            findings.push(finding);
        }
    }

    // Engine objects of instances that no longer exist.
    for c in &containers {
        let uid = label(c.labels.as_ref(), label::UID);
        if live.contains(uid.as_str()) {
            continue;
        }
        let name = container_name(c);
        if !options.dry_run {
            engine
                .remove_container(c.id.as_deref().unwrap_or(&name))
                .await?;
        }
        findings.push(Finding::EngineObjectRemoved {
            kind: "container",
            name,
            instance: label(c.labels.as_ref(), label::INSTANCE),
        });
    }
    for n in &networks {
        let uid = label(n.labels.as_ref(), label::UID);
        if live.contains(uid.as_str()) {
            continue;
        }
        let name = n.name.clone().unwrap_or_default();
        if !options.dry_run {
            engine
                .remove_network(n.id.as_deref().unwrap_or(&name))
                .await?;
        }
        findings.push(Finding::EngineObjectRemoved {
            kind: "network",
            name,
            instance: label(n.labels.as_ref(), label::INSTANCE),
        });
    }
    let moved_aside = moved_aside_ids(store.layout().orphaned_dir().as_path());
    for v in &volumes {
        let uid = v.labels.get(label::UID).cloned().unwrap_or_default();
        if live.contains(uid.as_str()) {
            continue;
        }
        let instance = v.labels.get(label::INSTANCE).cloned().unwrap_or_default();
        let short_id = uid.get(..8).unwrap_or(&uid).to_owned();
        if moved_aside.contains(&short_id) {
            findings.push(Finding::VolumeKept {
                name: v.name.clone(),
                instance,
            });
            continue;
        }
        if !options.dry_run {
            engine.remove_volume(&v.name).await?;
        }
        findings.push(Finding::EngineObjectRemoved {
            kind: "volume",
            name: v.name.clone(),
            instance,
        });
    }

    findings.extend(blocking(store, move |s| enforce_keep_caps(s, options.dry_run)).await?);
    if options.images {
        findings.extend(sweep_images(store, engine, &home_id, options.dry_run).await?);
    }
    Ok(findings)
}

/// Bounds the `Kept` instances of each (workspace, role, agent) by the
/// workspace's `keep.max`: the least recently running beyond it are set to
/// `Purged`, except those whose mounts hold unfinished work, which are only
/// reported. Converging the purges is left to the caller's loop.
pub fn enforce_keep_caps(store: &Store, dry_run: bool) -> Result<Vec<Finding>, StoreError> {
    use std::collections::BTreeMap;
    let caps: BTreeMap<String, u32> = store
        .list_workspaces()?
        .into_iter()
        .filter_map(|ws| Some((ws.metadata.name, ws.spec.keep.max?)))
        .collect();
    if caps.is_empty() {
        return Ok(Vec::new());
    }
    let mut groups: BTreeMap<(String, String, String), Vec<Instance>> = BTreeMap::new();
    for obj in store.list_instances()?.instances {
        let kept = obj.desired_phase() == DesiredPhase::Kept
            && obj.status.as_ref().and_then(|s| s.phase) == Some(InstancePhase::Kept);
        if let (true, Some(ws)) = (kept, obj.spec.workspace.clone())
            && caps.contains_key(&ws)
        {
            let key = (ws, obj.spec.role.name.clone(), obj.spec.agent.clone());
            groups.entry(key).or_default().push(obj);
        }
    }
    let mut findings = Vec::new();
    for ((workspace, _, _), mut kept) in groups {
        let max = caps[&workspace] as usize;
        if kept.len() <= max {
            continue;
        }
        // Most recently running first; the tail is over the cap.
        kept.sort_by_key(|obj| std::cmp::Reverse(last_running(obj)));
        for obj in kept.into_iter().skip(max) {
            let name = obj.metadata.name.clone();
            let unfinished = obj.status.as_ref().is_some_and(|s| {
                s.mounts
                    .iter()
                    .any(|m| !m.dirty_files.is_empty() || !m.unpushed_branches.is_empty())
            });
            let workspace = workspace.clone();
            if unfinished {
                findings.push(Finding::KeepCapSpared { name, workspace });
                continue;
            }
            if !dry_run {
                store.settle(&name, DesiredPhase::Purged, SettledBy::KeepCap, None)?;
            }
            findings.push(Finding::KeepCapPurge { name, workspace });
        }
    }
    Ok(findings)
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

/// Runs store work that may wait for a file lock off the async runtime, so a
/// sweep can never stall the reconciles running beside it.
async fn blocking<T: Send + 'static>(
    store: &Store,
    work: impl FnOnce(&Store) -> Result<T, StoreError> + Send + 'static,
) -> Result<T, StoreError> {
    let store = store.clone();
    tokio::task::spawn_blocking(move || work(&store))
        .await
        .expect("store work does not panic")
}

/// The `<id>` of every `jk-<id>-…` unit moved aside; the id is the start of
/// the instance's uid, which is how its engine objects are recognized.
fn moved_aside_ids(dir: &Path) -> HashSet<String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return HashSet::new();
    };
    entries
        .filter_map(|e| {
            let name = e.ok()?.file_name().into_string().ok()?;
            Some(name.strip_prefix("jk-")?.split('-').next()?.to_owned())
        })
        .collect()
}

/// Sets a row that claims `Running` to its true status, under the unit lock.
/// A unit someone holds is being reconciled right now, and is left to that.
fn correct_row(
    store: &Store,
    row: &IndexRow,
    dry_run: bool,
) -> Result<Option<Finding>, StoreError> {
    let Some(mut guard) = store.try_lock_instance(&row.name)? else {
        return Ok(None);
    };
    let status = guard.obj.status.get_or_insert_default();
    let last_seen_running = find_condition(&status.conditions, condition::READY)
        .filter(|c| c.status == ConditionStatus::True)
        .map(|c| c.last_transition_time);
    let reason = match (engine_started_at(), last_seen_running) {
        (Some(started), Some(seen)) if started > seen => reason::ENGINE_RESTARTED,
        _ => reason::CONTAINER_MISSING,
    };
    if !dry_run {
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
    }
    Ok(Some(Finding::RowCorrected {
        name: row.name.clone(),
        reason,
    }))
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
async fn sweep_images(
    store: &Store,
    engine: &Engine,
    home_id: &str,
    dry_run: bool,
) -> Result<Vec<Finding>, SweepError> {
    let listing = store.list_instances()?;
    if let Some(unreadable) = listing.unreadable.first() {
        // Which image it pins is unknown: removing none is the safe answer.
        tracing::warn!("not removing images while a unit is unreadable: {unreadable}");
        return Ok(Vec::new());
    }
    let pinned: HashSet<String> = listing
        .instances
        .into_iter()
        .filter_map(|obj| obj.status?.recipe.map(|r| r.image_id))
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
        if !dry_run {
            engine.remove_image(&image.id).await?;
        }
        findings.push(Finding::ImageRemoved { reference });
    }
    Ok(findings)
}
