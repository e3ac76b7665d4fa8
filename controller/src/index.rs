//! The instance index, `data/instances.json`: one row per instance so that
//! listing never has to open every unit. It is a cache of the units' own
//! objects and can always be rebuilt from them; a corrupt index is moved
//! aside (never silently emptied) and rebuilt.
//!
//! A row also carries what a no-op is decided from, so that its cost does
//! not grow with the number of instances: a digest of the operator-owned
//! parts (an apply of the same changes nothing), whether the last
//! reconcile left the instance converged at its generation, and the
//! sidecars and volumes its recipe expects (for
//! `reconcile::already_converged`); and the document an apply last wrote
//! the object from, with the object file's stamp ([`AppliedDocument`]):
//! while the stamp stands, applying the same bytes again does not even
//! read them. The units do not hold those records, so a rebuilt index has
//! none. The index's revision moves with every change the operator makes
//! to an instance, so the controller's store watch reads nothing while the
//! index stands still.

use std::fs;
use std::io::ErrorKind;

use jackin_api::meta::find_condition;
use jackin_api::names::{condition, reason};
use jackin_api::redact::json_error;
use jackin_api::{DesiredPhase, Instance, InstancePhase};
use jackin_files::fsutil::{read_untrusted, write_atomic};
use jackin_files::layout::Layout;
use jackin_files::layout::cap;
use jackin_plan::digest::sha256_hex;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::unit_object::StoreError;

/// Version 2 added what a no-op pass decides from (the fingerprint, the
/// converged flag, the expected sidecars and volumes). A version 1 index is
/// read as is: its rows lack those, so their instances are looked at in
/// full once, which writes the rows anew.
const INDEX_VERSION: u32 = 2;

/// What the index knows of one instance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct IndexRow {
    pub name: String,
    pub uid: String,
    pub container_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<String>,
    pub role: String,
    pub agent: String,
    pub desired: DesiredPhase,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<InstancePhase>,
    /// The engine it runs on, as `spec.engine` names it; absent for the
    /// default one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub engine: Option<String>,
    /// A digest of what the operator owns (spec, labels, annotations but
    /// jackin's): an apply of the same is a no-op, told without opening
    /// the object.
    #[serde(default)]
    pub fingerprint: String,
    /// Whether the last reconcile left it converged at its current
    /// generation, running or kept, and ready as such: then a pass whose
    /// engine snapshot shows it as it was left has nothing to do for it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub converged: bool,
    /// The sidecars and volumes its pinned recipe has, which such a
    /// snapshot must show while it runs.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sidecars: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub volumes: Vec<String>,
    /// The agent's start report as its status last took it in
    /// ([`Conversation::report_modified`]); a report changed since is a
    /// start to look at.
    ///
    /// [`Conversation::report_modified`]: jackin_api::instance::Conversation::report_modified
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub report_modified: Option<String>,
    /// When the agent's start is past its grace period, while the status
    /// awaits it ([`Conversation::start_settles_at`]): the first pass after
    /// it looks, and the loop comes back to it then.
    ///
    /// [`Conversation::start_settles_at`]: jackin_api::instance::Conversation::start_settles_at
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_settles_at: Option<Timestamp>,
    /// The document an apply last wrote the object from, while the object
    /// file is as that apply (or a reconcile since, which changes only the
    /// status) left it: see [`AppliedDocument`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub applied: Option<AppliedDocument>,
    /// When what the row says of the instance last changed (see
    /// `IndexRow::described`), set by [`Index::upsert`]. Absent from a
    /// row an older jackin wrote, until its next change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_at: Option<Timestamp>,
}

/// A document an apply wrote an object from, and the object file as it was
/// left: while the file is unchanged (its [`file_stamp`]), applying the
/// same document again changes nothing, and an apply that finds the same
/// bytes skips reading, checking and comparing them.
///
/// The stamp is of the file, not of what the row says of the object: a
/// `set-phase`, an annotation or a hand edit of the unit's object all write
/// the file, so each ends the record's standing, whether or not it changes
/// the row's [`IndexRow::fingerprint`] (which leaves jackin's annotations
/// out, and which a hand edit does not update). jackin's own status writes
/// under the unit lock carry the record over to the new stamp.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AppliedDocument {
    /// [`document_key`] of the document as applied.
    pub key: String,
    /// [`file_stamp`] of the object file when the record was last known
    /// to stand.
    pub object: String,
}

/// The digest of a manifest document's text, as the file has it.
pub fn document_digest(text: &str) -> String {
    sha256_hex(text.as_bytes(), 16)
}

/// The key of a document (its [`document_digest`]) applied with the source
/// label `source` (none for a plain apply): the same bytes applied by a
/// source make another object, one that carries its label.
pub fn document_key(digest: &str, source: Option<&str>) -> String {
    let bytes = format!("{}\0{digest}", source.unwrap_or_default());
    sha256_hex(bytes.as_bytes(), 16)
}

/// What moves with every write of a file: its device and inode (a write
/// by rename, as jackin's and most editors' are, makes a new one), size,
/// and change time (which no program can set back). `None` when there is
/// no file.
pub fn file_stamp(path: &std::path::Path) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let m = fs::symlink_metadata(path).ok()?;
    Some(format!(
        "{}:{}:{}:{}.{}:{}.{}",
        m.dev(),
        m.ino(),
        m.size(),
        m.ctime(),
        m.ctime_nsec(),
        m.mtime(),
        m.mtime_nsec()
    ))
}

impl IndexRow {
    /// The row describing `obj`; `None` when it has no identity yet.
    pub fn of(obj: &Instance) -> Option<Self> {
        let status = obj.status.as_ref()?;
        Some(Self {
            name: obj.metadata.name.clone(),
            uid: obj.metadata.uid.clone()?,
            container_name: status.container_name.clone()?,
            workspace: obj.spec.workspace.clone(),
            role: obj.spec.role.name.clone(),
            agent: obj.spec.agent.clone(),
            desired: obj.desired_phase(),
            phase: status.phase,
            // Where its objects are once pinned; until then where the spec
            // asks (a workspace's engine shows once the recipe is pinned).
            engine: match &status.recipe {
                Some(recipe) => recipe.engine.clone(),
                None => obj.spec.engine.clone(),
            },
            fingerprint: fingerprint(obj),
            converged: converged(obj),
            report_modified: status
                .conversation
                .as_ref()
                .and_then(|c| c.report_modified.clone()),
            start_settles_at: status
                .conversation
                .as_ref()
                .and_then(|c| c.start_settles_at),
            sidecars: status
                .recipe
                .iter()
                .flat_map(|r| &r.sidecars)
                .map(|s| s.name.clone())
                .collect(),
            volumes: status
                .recipe
                .iter()
                .filter_map(|r| r.dind.as_ref())
                .map(|d| d.certs_volume.clone())
                .collect(),
            applied: None,
            updated_at: None,
        })
    }

    /// What the row says of the instance: its identity, what it runs, the
    /// phases asked and seen, the operator's parts (the fingerprint) and
    /// the pinned recipe's objects. Not the loop's bookkeeping (the
    /// converged flag, the start report, the applied document), which
    /// moves without the instance changing: its change does not move
    /// [`IndexRow::updated_at`].
    fn described(&self) -> Self {
        Self {
            converged: false,
            report_modified: None,
            start_settles_at: None,
            applied: None,
            updated_at: None,
            ..self.clone()
        }
    }
}

/// The digest of what an apply compares: the spec, the labels and the
/// annotations that are not jackin's own (`jackin.dev/…`, which an apply
/// leaves alone unless the file sets them).
pub fn fingerprint(obj: &Instance) -> String {
    let owned = serde_json::to_vec(&obj.operator_manifest()).expect("an instance serializes");
    sha256_hex(&owned, 16)
}

/// Whether `obj` was left converged, and ready as such, at its current
/// generation: running as wanted, or kept as wanted.
fn converged(obj: &Instance) -> bool {
    let Some(status) = &obj.status else {
        return false;
    };
    let ready = find_condition(&status.conditions, condition::READY).map(|c| c.reason.as_str());
    // A rollout asked for and not handled yet, or an `OnDrift` rollout
    // that waits, is looked at again at every pass.
    let rollout_waits = find_condition(&status.conditions, condition::SPEC_DRIFT)
        .is_some_and(|c| c.reason == reason::ROLLOUT_WAITING)
        || jackin_plan::rollout::operator_request(obj).is_some();
    !rollout_waits
        && status.observed_generation == obj.metadata.generation
        && matches!(
            (obj.desired_phase(), status.phase, ready),
            (
                DesiredPhase::Running,
                Some(InstancePhase::Running),
                Some(reason::RUNNING)
            ) | (
                DesiredPhase::Kept,
                Some(InstancePhase::Kept),
                Some(reason::KEPT)
            )
        )
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Index {
    version: u32,
    /// Moves with every change the operator makes to an instance (even one
    /// its row does not show, an annotation), so that a watch learns of
    /// changes from the index file alone.
    #[serde(default)]
    revision: u64,
    /// Sorted by name.
    instances: Vec<IndexRow>,
}

/// How the index was found when it was loaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IndexRepair {
    /// It was missing and has been rebuilt from `units` units.
    Rebuilt { units: usize },
    /// It could not be read; it was kept as `kept_as` and rebuilt.
    Corrupt { kept_as: String, units: usize },
}

impl Default for Index {
    fn default() -> Self {
        Self {
            version: INDEX_VERSION,
            revision: 0,
            instances: Vec::new(),
        }
    }
}

impl Index {
    pub fn rows(&self) -> &[IndexRow] {
        &self.instances
    }

    pub fn find(&self, name: &str) -> Option<&IndexRow> {
        self.instances
            .binary_search_by(|r| r.name.as_str().cmp(name))
            .ok()
            .map(|i| &self.instances[i])
    }

    /// Inserts or replaces the row for `row.name`; returns whether it
    /// changed. Its `updated_at` moves to now when what it says of the
    /// instance changed, or it is new (unless it comes with one); else it
    /// stays.
    pub fn upsert(&mut self, mut row: IndexRow) -> bool {
        match self
            .instances
            .binary_search_by(|r| r.name.as_str().cmp(&row.name))
        {
            Ok(i) => {
                let old = &self.instances[i];
                row.updated_at = match old.described() == row.described() {
                    true => old.updated_at,
                    false => Some(Timestamp::now()),
                };
                if *old == row {
                    return false;
                }
                self.instances[i] = row;
                true
            }
            Err(i) => {
                row.updated_at.get_or_insert_with(Timestamp::now);
                self.instances.insert(i, row);
                true
            }
        }
    }

    /// Removes the row whose unit is `container`; returns whether there was one.
    pub fn remove_unit(&mut self, container: &str) -> bool {
        let before = self.instances.len();
        self.instances.retain(|r| r.container_name != container);
        self.instances.len() != before
    }

    /// As [`Index::upsert`], but a row that differs from the one there in
    /// its [`IndexRow::applied`] alone is not written: returns `false`, and
    /// the record there goes out of date (its stamp no longer the file's),
    /// which only costs the next apply of the document a full reading.
    pub fn upsert_unless_only_applied(&mut self, row: IndexRow) -> bool {
        let same_but_applied = self.find(&row.name).is_some_and(|old| {
            old.applied != row.applied
                && IndexRow {
                    applied: old.applied.clone(),
                    updated_at: old.updated_at,
                    ..row.clone()
                } == *old
        });
        !same_but_applied && self.upsert(row)
    }

    /// Records that the operator changed an instance.
    pub fn bump_revision(&mut self) {
        self.revision += 1;
    }

    /// Marks the rows `which` selects as not known to be converged; returns
    /// whether any was.
    pub fn unsettle(&mut self, which: impl Fn(&IndexRow) -> bool) -> bool {
        let mut changed = false;
        for row in self
            .instances
            .iter_mut()
            .filter(|r| r.converged && which(r))
        {
            row.converged = false;
            changed = true;
        }
        changed
    }

    /// Removes the row for `name`; returns whether there was one.
    pub fn remove(&mut self, name: &str) -> bool {
        match self
            .instances
            .binary_search_by(|r| r.name.as_str().cmp(name))
        {
            Ok(i) => {
                self.instances.remove(i);
                true
            }
            Err(_) => false,
        }
    }

    /// Reads the index. `Ok(None)` when it does not exist; `Err(text)` with
    /// the parse error when it exists but cannot be read as an index.
    pub fn read(layout: &Layout) -> Result<Result<Option<Index>, String>, StoreError> {
        let path = layout.index_file();
        // A FIFO, a link or a file past the cap is not an index jackin
        // wrote: an error naming it, not a repair that would move it aside.
        let bytes = match read_untrusted(&path, cap::INDEX) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Ok(None)),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        Ok(match serde_json::from_slice::<Index>(&bytes) {
            Ok(index) if (1..=INDEX_VERSION).contains(&index.version) && index.is_sorted() => {
                Ok(Some(index))
            }
            Ok(index) => Err(format!(
                "version {} or row order not understood",
                index.version
            )),
            Err(e) => Err(json_error(&e)),
        })
    }

    fn is_sorted(&self) -> bool {
        self.instances.windows(2).all(|w| w[0].name < w[1].name)
    }

    /// Writes the index, as the current version.
    pub fn write(&self, layout: &Layout) -> Result<(), StoreError> {
        /// The index as written: rows read from an older version are
        /// written as this one's.
        #[derive(Serialize)]
        struct Written<'a> {
            version: u32,
            revision: u64,
            instances: &'a [IndexRow],
        }
        let path = layout.index_file();
        let written = Written {
            version: INDEX_VERSION,
            revision: self.revision,
            instances: &self.instances,
        };
        let mut bytes = serde_json::to_vec_pretty(&written).expect("the index serializes");
        bytes.push(b'\n');
        write_atomic(&path, &bytes).map_err(|e| StoreError::io(&path, e))
    }

    /// Builds an index from the units on disk. Units whose object cannot be
    /// read are left out and left alone: they may hold a conversation.
    pub fn rebuild(layout: &Layout) -> Result<(Index, usize), StoreError> {
        let data = layout.data_dir();
        let entries = match fs::read_dir(&data) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok((Index::default(), 0)),
            Err(e) => return Err(StoreError::io(&data, e)),
        };
        let mut index = Index::default();
        let mut units = 0;
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&data, e))?;
            let Some(container) = entry.file_name().to_str().map(str::to_owned) else {
                continue;
            };
            if !entry.path().is_dir() || container.starts_with('.') {
                continue;
            }
            match crate::unit_object::read_object(layout, &container) {
                Ok(Some(obj)) => {
                    if let Some(mut row) = IndexRow::of(&obj) {
                        // The object's last write is the closest to when
                        // the lost row last changed.
                        row.updated_at = fs::metadata(layout.object_file(&container))
                            .and_then(|m| m.modified())
                            .ok()
                            .and_then(|at| Timestamp::try_from(at).ok());
                        index.upsert(row);
                        units += 1;
                    }
                }
                Ok(None) => {}
                Err(e) => tracing::warn!("left unit {container} out of the index: {e}"),
            }
        }
        Ok((index, units))
    }

    /// Loads the index, rebuilding it when it is missing or corrupt. The
    /// caller holds the index lock.
    pub fn load_or_repair(layout: &Layout) -> Result<(Index, Option<IndexRepair>), StoreError> {
        match Self::read(layout)? {
            Ok(Some(index)) => Ok((index, None)),
            Ok(None) => {
                let (index, units) = Self::rebuild(layout)?;
                // With no units there is nothing to record, and no news.
                if units == 0 {
                    return Ok((index, None));
                }
                index.write(layout)?;
                Ok((index, Some(IndexRepair::Rebuilt { units })))
            }
            Err(reason) => {
                let stamp = Timestamp::now().strftime("%Y%m%dT%H%M%S%.fZ").to_string();
                let kept = layout.corrupt_index_file(&stamp);
                fs::rename(layout.index_file(), &kept)
                    .map_err(|e| StoreError::io(&layout.index_file(), e))?;
                tracing::warn!("index unreadable ({reason}); kept as {}", kept.display());
                let (index, units) = Self::rebuild(layout)?;
                index.write(layout)?;
                Ok((
                    index,
                    Some(IndexRepair::Corrupt {
                        kept_as: kept.display().to_string(),
                        units,
                    }),
                ))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(name: &str, phase: InstancePhase) -> IndexRow {
        IndexRow {
            name: name.into(),
            uid: format!("uid-{name}"),
            container_name: format!("jk-{name}"),
            workspace: None,
            role: "r".into(),
            agent: "claude".into(),
            desired: DesiredPhase::Running,
            phase: Some(phase),
            engine: None,
            fingerprint: "f".into(),
            converged: false,
            sidecars: Vec::new(),
            volumes: Vec::new(),
            report_modified: None,
            start_settles_at: None,
            applied: None,
            updated_at: None,
        }
    }

    /// SK-S1: a change to one row moves its `updatedAt` and leaves the
    /// other's; the same row again, or a change of the loop's bookkeeping
    /// alone, keeps it.
    #[test]
    fn a_change_moves_only_its_rows_updated_at() {
        let before = Timestamp::from_second(1_700_000_000).unwrap();
        let mut index = Index::default();
        for name in ["a", "b"] {
            let mut new = row(name, InstancePhase::Running);
            new.updated_at = Some(before);
            assert!(index.upsert(new));
        }
        let at = |index: &Index, name: &str| index.find(name).unwrap().updated_at;
        assert_eq!(
            at(&index, "a"),
            Some(before),
            "a new row keeps the time it came with"
        );

        assert!(!index.upsert(row("a", InstancePhase::Running)), "unchanged");
        let mut bookkeeping = row("a", InstancePhase::Running);
        bookkeeping.converged = true;
        assert!(index.upsert(bookkeeping), "the row is written");
        assert_eq!(at(&index, "a"), Some(before), "bookkeeping is no change");

        assert!(index.upsert(row("a", InstancePhase::Kept)));
        let moved = at(&index, "a").expect("a changed row has the time");
        assert!(moved > before);
        assert_eq!(
            at(&index, "b"),
            Some(before),
            "the other row keeps its time"
        );

        let mut fresh = Index::default();
        fresh.upsert(row("c", InstancePhase::Pending));
        assert!(
            at(&fresh, "c").is_some(),
            "a new row without a time gets one"
        );
    }

    /// An index written before rows had `updatedAt` still loads, its rows
    /// without one; the next change of a row gives it one.
    #[test]
    fn an_index_without_updated_at_loads() {
        let dir = tempfile::tempdir().unwrap();
        let layout = Layout::new(dir.path());
        let old = serde_json::json!({
            "version": 2,
            "revision": 7,
            "instances": [{
                "name": "a", "uid": "u", "containerName": "jk-a", "role": "r",
                "agent": "claude", "desired": "Running", "phase": "Running",
                "fingerprint": "f"
            }]
        });
        fs::create_dir_all(layout.index_file().parent().unwrap()).unwrap();
        fs::write(layout.index_file(), old.to_string()).unwrap();
        let mut index = Index::read(&layout).unwrap().unwrap().unwrap();
        assert_eq!(index.find("a").unwrap().updated_at, None);

        assert!(index.upsert(row("a", InstancePhase::Kept)));
        index.write(&layout).unwrap();
        let again = Index::read(&layout).unwrap().unwrap().unwrap();
        assert!(again.find("a").unwrap().updated_at.is_some());
    }
}
