//! The state store: instance objects in their units, the index beside them,
//! workspace policies and agent entries as a file each (`objects.rs`).
//!
//! Lock order, always: a unit's sibling lock, then the index lock. Creating an
//! instance holds the index lock alone while it checks the name is free,
//! mints the identity and writes the unit (creating, not taking, the new
//! unit's lock file), so two processes can never create the same name twice. Every write is atomic; nothing is written when
//! nothing changed.
//!
//! Apply compares before it writes: it takes only the operator-owned parts
//! of an object (spec, labels, annotations; jackin's own `jackin.dev/`
//! annotations stay unless the file sets them), keeps jackin's metadata
//! and the status, and moves the generation only with the spec. Reads take
//! no lock: every write replaces its file whole (a temporary file, fsync,
//! rename, fsync of the directory), so a reader sees the old file or the
//! new one.

use jackin_api::identity::container_name;
use jackin_api::instance::SettledBy;
use jackin_api::meta::set_condition;
use jackin_api::names::{annotation, condition, reason};
use jackin_api::{
    ConditionStatus, DesiredPhase, Instance, InstancePhase, InstanceStatus, ObjectMeta,
};
use jackin_files::fsutil::{FileLock, ensure_private_dir, remove_if_exists};
use jackin_files::layout::Layout;
use jiff::Timestamp;

use crate::index::{AppliedDocument, Index, IndexRepair, IndexRow, file_stamp};
pub use crate::unit_object::StoreError;
use crate::unit_object::{read_object, write_object};

/// What applying an object did (or, in a dry run, would do).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ApplyOutcome {
    Created,
    Configured,
    Unchanged,
    /// Nothing is created: jackin ended and cleaned up this instance (see
    /// [`crate::ended`]) and the manifest is the same as then.
    Ended,
}

impl ApplyOutcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Configured => "configured",
            Self::Unchanged => "unchanged",
            Self::Ended => "unchanged (ended and cleaned up)",
        }
    }
}

/// An instance held under its unit lock, for a reconcile.
#[derive(Debug)]
pub struct InstanceGuard {
    _lock: FileLock,
    layout: Layout,
    pub container: String,
    pub obj: Instance,
    saved: Instance,
    /// The key of the row's [`IndexRow::applied`] record when it stood as
    /// the object was read under the lock: the writes of this guard, which
    /// change the status alone, carry it over.
    applied: Option<String>,
    /// The object file's stamp as this guard last read or wrote it.
    stamp: Option<String>,
}

impl InstanceGuard {
    /// Writes the object and its index row if they changed since the last
    /// save; a pass that changed nothing writes nothing.
    pub fn save(&mut self) -> Result<(), StoreError> {
        if self.obj == self.saved {
            return Ok(());
        }
        // A change to what the operator owns is no longer what the
        // applied document made.
        if self.obj.metadata != self.saved.metadata || self.obj.spec != self.saved.spec {
            self.applied = None;
        }
        write_object(&self.layout, &self.container, &self.obj)?;
        self.stamp = file_stamp(&self.layout.object_file(&self.container));
        // A row that changed only in the record's stamp is not written
        // for it at every step: `refresh_row` writes it once at the end.
        self.store()
            .index_upsert(&self.obj, self.applied_record(), true)?;
        self.saved = self.obj.clone();
        Ok(())
    }

    /// Writes the index row anew if it no longer describes the object (it
    /// was marked unsettled, or written by an older version, or the record
    /// of the applied document is to move to the file's new stamp), even
    /// when the object itself did not change.
    pub fn refresh_row(&self) -> Result<(), StoreError> {
        self.store()
            .index_upsert(&self.obj, self.applied_record(), false)
    }

    fn store(&self) -> Store {
        Store {
            layout: self.layout.clone(),
        }
    }

    /// The record of the applied document, at the file's stamp now.
    fn applied_record(&self) -> Option<AppliedDocument> {
        Some(AppliedDocument {
            key: self.applied.clone()?,
            object: self.stamp.clone()?,
        })
    }
}

impl jackin_act::StateOwner for Store {
    fn finish_purge(&self, obj: &Instance) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
        Store::finish_purge(self, obj).map_err(Into::into)
    }
}

/// The store rooted at one `JACKIN_HOME`.
#[derive(Debug, Clone)]
pub struct Store {
    layout: Layout,
}

impl Store {
    /// Opens the store and repairs a missing or corrupt index on the way, so
    /// that every command starts from a sound index. Returns what was repaired.
    pub fn open(layout: Layout) -> Result<(Self, Option<IndexRepair>), StoreError> {
        let store = Self { layout };
        let (_, repair) = store.load_index()?;
        Ok((store, repair))
    }

    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Runs store work that may wait for a file lock off the async runtime,
    /// so that it never stalls the reconciles running beside it.
    pub async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Store) -> T + Send + 'static,
    ) -> T {
        let store = self.clone();
        jackin_files::offload::blocking(move || work(&store)).await
    }

    pub(crate) fn lock_index(&self) -> Result<FileLock, StoreError> {
        let path = self.layout.index_lock_file();
        FileLock::acquire(&path).map_err(|e| StoreError::io(&path, e))
    }

    fn lock_unit(&self, container: &str) -> Result<FileLock, StoreError> {
        let path = self.layout.unit_lock_file(container);
        FileLock::acquire(&path).map_err(|e| StoreError::io(&path, e))
    }

    pub(crate) fn index(&self) -> Result<Index, StoreError> {
        Ok(self.load_index()?.0)
    }

    /// The index, repaired first when it is missing or corrupt. A sound
    /// index needs no lock (writers replace it atomically), and a home with
    /// no data yet (run logs are not data) has nothing to read or repair:
    /// neither case writes.
    fn load_index(&self) -> Result<(Index, Option<IndexRepair>), StoreError> {
        if let Ok(Some(index)) = Index::read(&self.layout)? {
            return Ok((index, None));
        }
        if !self.layout.holds_data() {
            return Ok((Index::default(), None));
        }
        let _lock = self.lock_index()?;
        Index::load_or_repair(&self.layout)
    }

    /// Changes the index under its lock; `change` returns whether it
    /// changed anything, and only then is the index written.
    pub(crate) fn edit_index(
        &self,
        change: impl FnOnce(&mut Index) -> bool,
    ) -> Result<(), StoreError> {
        let _lock = self.lock_index()?;
        let (mut index, _) = Index::load_or_repair(&self.layout)?;
        if change(&mut index) {
            index.write(&self.layout)?;
        }
        Ok(())
    }

    /// Updates the index row of `obj`, with `applied` as its record of the
    /// applied document, or else the record the row has (out of date once
    /// the object file was written: see [`AppliedDocument`]). `lazily`:
    /// not when only the record changed.
    fn index_upsert(
        &self,
        obj: &Instance,
        applied: Option<AppliedDocument>,
        lazily: bool,
    ) -> Result<(), StoreError> {
        let Some(mut row) = IndexRow::of(obj) else {
            return Ok(());
        };
        self.edit_index(|index| {
            row.applied = applied.or_else(|| index.find(&row.name)?.applied.clone());
            match lazily {
                true => index.upsert_unless_only_applied(row),
                false => index.upsert(row),
            }
        })
    }

    /// The index rows, sorted by name.
    pub fn rows(&self) -> Result<Vec<IndexRow>, StoreError> {
        Ok(self.index()?.rows().to_vec())
    }

    /// Takes an instance's unit lock (waiting for it) and reads the object.
    pub fn lock_instance(&self, name: &str) -> Result<Option<Box<InstanceGuard>>, StoreError> {
        let Some(row) = self.live_row(name)? else {
            return Ok(None);
        };
        let lock = self.lock_unit(&row.container_name)?;
        // The purge this lock waited for may have removed the instance.
        let Some((obj, stamp, applied)) = self.read_locked(&row)? else {
            drop(lock);
            return self.lock_instance(name);
        };
        Ok(Some(Box::new(InstanceGuard {
            _lock: lock,
            layout: self.layout.clone(),
            container: row.container_name,
            saved: obj.clone(),
            obj,
            applied,
            stamp,
        })))
    }

    /// Reads the object of `row` under its unit lock, with the file's stamp
    /// and the key of the row's record of the applied document when that
    /// record stands: the file is as the record has it, before the reading
    /// and after it.
    #[allow(clippy::type_complexity)]
    fn read_locked(
        &self,
        row: &IndexRow,
    ) -> Result<Option<(Instance, Option<String>, Option<String>)>, StoreError> {
        let path = self.layout.object_file(&row.container_name);
        let before = file_stamp(&path);
        let Some(obj) = read_object(&self.layout, &row.container_name)? else {
            return Ok(None);
        };
        let stamp = file_stamp(&path);
        let applied = row
            .applied
            .as_ref()
            .filter(|record| before == stamp && stamp.as_ref() == Some(&record.object))
            .map(|record| record.key.clone());
        Ok(Some((obj, stamp, applied)))
    }

    /// Like [`Store::lock_instance`], but `None` at once when someone else
    /// holds the unit lock (or the instance is gone).
    pub fn try_lock_instance(&self, name: &str) -> Result<Option<InstanceGuard>, StoreError> {
        let Some(row) = self.live_row(name)? else {
            return Ok(None);
        };
        let path = self.layout.unit_lock_file(&row.container_name);
        let Some(lock) = FileLock::try_acquire(&path).map_err(|e| StoreError::io(&path, e))? else {
            return Ok(None);
        };
        Ok(self
            .read_locked(&row)?
            .map(|(obj, stamp, applied)| InstanceGuard {
                _lock: lock,
                layout: self.layout.clone(),
                container: row.container_name,
                saved: obj.clone(),
                obj,
                applied,
                stamp,
            }))
    }

    /// The index row of `name`, if its instance still exists. A row whose
    /// object is gone is what a purge interrupted at its last step leaves
    /// behind: it reads as absent here, and the loop, the sweep or the next
    /// creation of the name finishes that purge
    /// ([`Store::finish_interrupted_purge`]). Reading changes nothing.
    fn live_row(&self, name: &str) -> Result<Option<IndexRow>, StoreError> {
        let Some(row) = self.index()?.find(name).cloned() else {
            return Ok(None);
        };
        let container = &row.container_name;
        if self.layout.object_file(container).exists() {
            return Ok(Some(row));
        }
        if row.desired != DesiredPhase::Purged && self.layout.unit_dir(container).exists() {
            return Err(StoreError::Unreadable {
                path: self.layout.object_file(container),
                message: "the unit has no object".into(),
            });
        }
        Ok(None)
    }

    /// The index row of a purge interrupted after its object went: the row
    /// is there, the object is not.
    pub fn interrupted_purge(&self, name: &str) -> Result<Option<IndexRow>, StoreError> {
        let Some(row) = self.index()?.find(name).cloned() else {
            return Ok(None);
        };
        Ok(self.purge_interrupted(&row).then_some(row))
    }

    /// Whether `row` is left of a purge interrupted after its object went.
    pub(crate) fn purge_interrupted(&self, row: &IndexRow) -> bool {
        let object_gone = !self.layout.object_file(&row.container_name).exists();
        object_gone
            && (row.desired == DesiredPhase::Purged
                || !self.layout.unit_dir(&row.container_name).exists())
    }

    /// Finishes a purge interrupted after its object went, under the unit
    /// lock; returns whether there was one to finish.
    pub fn finish_interrupted_purge(&self, name: &str) -> Result<bool, StoreError> {
        let Some(row) = self.interrupted_purge(name)? else {
            return Ok(false);
        };
        let lock = self.lock_unit(&row.container_name)?;
        // The lock may have waited for whoever finished it meanwhile.
        if self.interrupted_purge(name)?.as_ref() != Some(&row) {
            return Ok(false);
        }
        self.remove_unit_files(&row.container_name)?;
        drop(lock);
        self.drop_row(name)?;
        tracing::info!(instance = name, "finished an interrupted purge");
        Ok(true)
    }

    /// The purge tail: the unit directory, the sockets directory and the
    /// unit lock go, then the index row. The caller holds the unit lock. A
    /// purge jackin settled on (the exit policy, the keep cap), rather than
    /// one the spec asks for, is remembered first, so that re-applying the
    /// unchanged manifest does not bring the session back.
    pub fn finish_purge(&self, obj: &Instance) -> Result<(), StoreError> {
        let name = &obj.metadata.name;
        let container = obj
            .container_name()
            .ok_or_else(|| StoreError::Vanished(name.clone()))?;
        if let Some(settled) = obj.settlement()
            && obj.spec.phase != DesiredPhase::Purged
        {
            self.remember_ended(obj, settled.by)?;
        }
        self.remove_unit_files(container)?;
        self.drop_row(name)?;
        jackin_files::fault::crash_point("finish-purge:index-row");
        Ok(())
    }

    /// Removes a unit's files, the unit directory first: an interruption
    /// leaves a row without an object, which reads as an interrupted purge.
    fn remove_unit_files(&self, container: &str) -> Result<(), StoreError> {
        for (path, point) in [
            (self.layout.unit_dir(container), "finish-purge:unit-dir"),
            (
                self.layout.sockets_dir(container),
                "finish-purge:sockets-dir",
            ),
            (
                self.layout.unit_lock_file(container),
                "finish-purge:unit-lock",
            ),
        ] {
            remove_if_exists(&path).map_err(|e| StoreError::io(&path, e))?;
            jackin_files::fault::crash_point(point);
        }
        Ok(())
    }

    /// Removes an instance's index row: the last step of a purge.
    pub fn drop_row(&self, name: &str) -> Result<(), StoreError> {
        self.edit_index(|index| index.remove(name))
    }

    /// Every instance, sorted by name. A unit whose object cannot be read
    /// does not hide the others: it is reported in the listing (and set
    /// aside by the file sweep, `jackin prune`).
    pub fn list_instances(&self) -> Result<Listing, StoreError> {
        self.list_instances_beginning(|_| {})
    }

    /// [`Store::list_instances`], first handing `begin` the engines the
    /// index names (`None` for the default), each once, before any object
    /// is read: what a listing of the engines can begin on meanwhile, from
    /// the same reading of the index. An instance whose recipe is not
    /// pinned yet may run elsewhere (its workspace's engine), so these are
    /// where to begin, not the answer.
    pub fn list_instances_beginning(
        &self,
        begin: impl FnOnce(Vec<Option<String>>),
    ) -> Result<Listing, StoreError> {
        let index = self.index()?;
        let mut engines: Vec<Option<String>> =
            index.rows().iter().map(|row| row.engine.clone()).collect();
        engines.sort();
        engines.dedup();
        begin(engines);
        let mut listing = Listing {
            instances: Vec::with_capacity(index.rows().len()),
            unreadable: Vec::new(),
        };
        for row in index.rows() {
            match read_object(&self.layout, &row.container_name) {
                Ok(Some(obj)) => listing.instances.push(obj),
                Ok(None) => {}
                Err(e @ StoreError::Unreadable { .. }) => listing.unreadable.push(e),
                Err(e) => return Err(e),
            }
        }
        Ok(listing)
    }

    pub fn get_instance(&self, name: &str) -> Result<Instance, StoreError> {
        let not_found = || StoreError::InstanceNotFound(name.to_owned());
        let row = self.live_row(name)?.ok_or_else(not_found)?;
        read_object(&self.layout, &row.container_name)?.ok_or_else(not_found)
    }

    /// Reports what applying `applied` would do, writing nothing.
    pub fn plan_instance(&self, applied: &Instance) -> Result<ApplyOutcome, StoreError> {
        Ok(self.preview_instance(applied)?.0)
    }

    /// What applying `applied` would do, and the object as it would be left
    /// (a new one without identity or status; none when the apply would
    /// not create it). Writes nothing.
    pub fn preview_instance(
        &self,
        applied: &Instance,
    ) -> Result<(ApplyOutcome, Option<Instance>), StoreError> {
        let Some(row) = self.live_row(&applied.metadata.name)? else {
            if self.ended_as(applied)?.is_some() {
                return Ok((ApplyOutcome::Ended, None));
            }
            let mut new = applied.clone();
            new.metadata.uid = None;
            new.metadata.generation = Some(1);
            new.status = None;
            return Ok((ApplyOutcome::Created, Some(new)));
        };
        let mut stored = read_object(&self.layout, &row.container_name)?
            .ok_or_else(|| StoreError::Vanished(applied.metadata.name.clone()))?;
        let outcome = merge_instance(&mut stored, applied)?;
        Ok((outcome, Some(stored)))
    }

    /// Whether applying `applied` would change nothing, told from its index
    /// row without opening its object: the same operator-owned parts (see
    /// [`crate::index::fingerprint`]), and no annotation of jackin's own in
    /// the file, whose merge the row cannot tell. `false` means "look".
    pub(crate) fn unchanged_by_row(&self, index: &Index, applied: &Instance) -> bool {
        let Some(row) = index.find(&applied.metadata.name) else {
            return false;
        };
        !row.fingerprint.is_empty()
            && applied
                .metadata
                .uid
                .as_ref()
                .is_none_or(|uid| *uid == row.uid)
            && !applied
                .metadata
                .annotations
                .keys()
                .any(|key| key.starts_with("jackin.dev/"))
            && crate::index::fingerprint(applied) == row.fingerprint
            && self.layout.object_file(&row.container_name).exists()
    }

    /// Creates or updates an instance from an applied manifest. The status
    /// and jackin-owned metadata of `applied` are ignored.
    pub fn apply_instance(&self, applied: &Instance) -> Result<ApplyOutcome, StoreError> {
        self.apply_instance_from(applied, None)
    }

    /// As [`Store::apply_instance`], for `applied` read from the document
    /// whose [`crate::index::document_key`] is `document`: what the apply
    /// writes is recorded as made from it, for the next apply of the same
    /// bytes to skip (see [`AppliedDocument`]).
    pub fn apply_instance_from(
        &self,
        applied: &Instance,
        document: Option<&str>,
    ) -> Result<ApplyOutcome, StoreError> {
        let name = &applied.metadata.name;
        if self.live_row(name)?.is_none() && self.ended_as(applied)?.is_some() {
            return Ok(ApplyOutcome::Ended);
        }
        match self.create_unless_taken(applied, document, |_, _| Ok(()))? {
            None => Ok(ApplyOutcome::Created),
            Some(container) => self.update_instance_from(name, &container, document, |stored| {
                merge_instance(stored, applied)
            }),
        }
    }

    /// Creates an instance only if its name is free: `false` when another
    /// instance has it (which is left as it is). For a new session whose
    /// name was picked as free a moment ago: two racing launches never
    /// share one instance.
    pub fn create_new_instance(&self, obj: &Instance) -> Result<bool, StoreError> {
        Ok(self
            .create_unless_taken(obj, None, |_, _| Ok(()))?
            .is_none())
    }

    /// Creates an instance only if its name is free, as
    /// [`Store::create_new_instance`], and runs `made` on it (the object,
    /// and its unit's container name) before the index names it: a session
    /// made again from a save gets its conversation's record and its files
    /// before the loop can start it. If `made` fails, nothing stays.
    pub fn create_instance_with(
        &self,
        obj: &Instance,
        made: impl FnOnce(&mut Instance, &str) -> Result<(), StoreError>,
    ) -> Result<bool, StoreError> {
        Ok(self.create_unless_taken(obj, None, made)?.is_none())
    }

    /// Creates the instance under the index lock unless its name is taken;
    /// returns the unit of the instance that has the name, if one does.
    fn create_unless_taken(
        &self,
        applied: &Instance,
        document: Option<&str>,
        made: impl FnOnce(&mut Instance, &str) -> Result<(), StoreError>,
    ) -> Result<Option<String>, StoreError> {
        let name = &applied.metadata.name;
        // A purge of this name interrupted at its end is finished first:
        // its row would otherwise hide the free name.
        self.finish_interrupted_purge(name)?;
        let _index_lock = self.lock_index()?;
        let (mut index, _) = Index::load_or_repair(&self.layout)?;
        if let Some(row) = index.find(name) {
            return Ok(Some(row.container_name.clone()));
        }
        let mut obj = self.create_instance(applied)?;
        let container = obj.container_name().unwrap_or_default().to_owned();
        if let Err(e) =
            made(&mut obj, &container).and_then(|()| write_object(&self.layout, &container, &obj))
        {
            self.remove_unit_files(&container)?;
            return Err(e);
        }
        let mut row = IndexRow::of(&obj).expect("a new instance has an identity");
        row.applied = applied_record(&self.layout, &row.container_name, document);
        index.upsert(row);
        index.write(&self.layout)?;
        Ok(None)
    }

    /// Sets the desired phase of an existing instance.
    pub fn set_phase(&self, name: &str, phase: DesiredPhase) -> Result<ApplyOutcome, StoreError> {
        let container = self
            .live_row(name)?
            .map(|row| row.container_name)
            .ok_or_else(|| StoreError::InstanceNotFound(name.to_owned()))?;
        self.update_instance(name, &container, |stored| {
            if stored.spec.phase == phase {
                return Ok(ApplyOutcome::Unchanged);
            }
            stored.spec.phase = phase;
            bump_generation(&mut stored.metadata);
            Ok(ApplyOutcome::Configured)
        })
    }

    /// Records how an ended session is settled (a status write: the
    /// operator's spec stays as it is). See [`Instance::desired_phase`].
    pub fn settle(
        &self,
        name: &str,
        phase: DesiredPhase,
        by: SettledBy,
        acknowledged: Option<String>,
    ) -> Result<(), StoreError> {
        let container = self
            .live_row(name)?
            .map(|row| row.container_name)
            .ok_or_else(|| StoreError::InstanceNotFound(name.to_owned()))?;
        self.update_instance(name, &container, |stored| {
            stored.settle(phase, by, acknowledged, Timestamp::now());
            Ok(ApplyOutcome::Configured)
        })?;
        Ok(())
    }

    /// Settles as [`Store::settle`] does, but only when `still` holds for
    /// the instance as read under its unit lock: a decision made from an
    /// earlier read (the keep cap's) is carried out only if it still
    /// stands. Returns whether it settled; an instance gone meanwhile is
    /// not settled.
    pub fn settle_if(
        &self,
        name: &str,
        still: impl FnOnce(&Instance) -> bool,
        phase: DesiredPhase,
        by: SettledBy,
    ) -> Result<bool, StoreError> {
        let Some(container) = self.live_row(name)?.map(|row| row.container_name) else {
            return Ok(false);
        };
        let outcome = self.update_instance(name, &container, |stored| {
            if !still(stored) {
                return Ok(ApplyOutcome::Unchanged);
            }
            stored.settle(phase, by, None, Timestamp::now());
            Ok(ApplyOutcome::Configured)
        });
        match outcome {
            Ok(outcome) => Ok(outcome != ApplyOutcome::Unchanged),
            Err(StoreError::Vanished(_)) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// The operator asks to resume the instance: a settlement older than
    /// now no longer stands (annotation `jackin.dev/resume`, like `kubectl
    /// rollout restart`).
    pub fn request_resume(&self, name: &str) -> Result<ApplyOutcome, StoreError> {
        let now = Timestamp::now().to_string();
        self.set_annotation(name, annotation::RESUME, Some(&now))
    }

    /// Sets (or, with `None`, removes) an annotation; no generation bump.
    pub fn set_annotation(
        &self,
        name: &str,
        key: &str,
        value: Option<&str>,
    ) -> Result<ApplyOutcome, StoreError> {
        let container = self
            .live_row(name)?
            .map(|row| row.container_name)
            .ok_or_else(|| StoreError::InstanceNotFound(name.to_owned()))?;
        self.update_instance(name, &container, |stored| {
            let annotations = &mut stored.metadata.annotations;
            let before = annotations.get(key).cloned();
            match value {
                Some(value) => annotations.insert(key.to_owned(), value.to_owned()),
                None => annotations.remove(key),
            };
            Ok(if annotations.get(key) == before.as_ref() {
                ApplyOutcome::Unchanged
            } else {
                ApplyOutcome::Configured
            })
        })
    }

    /// Mints the identity, writes the unit. The caller holds the index lock.
    fn create_instance(&self, applied: &Instance) -> Result<Instance, StoreError> {
        let uid = uuid::Uuid::new_v4();
        let id = &uid.simple().to_string()[..8];
        let container = container_name(
            id,
            applied.spec.workspace.as_deref(),
            &applied.spec.role.name,
        );
        let now = Timestamp::now();
        let mut obj = applied.clone();
        obj.metadata.uid = Some(uid.to_string());
        obj.metadata.generation = Some(1);
        obj.metadata.creation_timestamp = Some(now);
        let mut status = InstanceStatus {
            phase: Some(InstancePhase::Pending),
            container_name: Some(container.clone()),
            ..Default::default()
        };
        set_condition(
            &mut status.conditions,
            condition::READY,
            ConditionStatus::False,
            reason::PENDING,
            "waiting for the convergence loop",
            now,
        );
        obj.status = Some(status);
        // The sibling lock file belongs to the unit from its first moment.
        // It is only created here, not taken: the index lock is held, and
        // the order is always unit lock first; nobody else knows the new
        // identity yet.
        let lock_path = self.layout.unit_lock_file(&container);
        FileLock::create(&lock_path).map_err(|e| StoreError::io(&lock_path, e))?;
        let unit = self.layout.unit_dir(&container);
        ensure_private_dir(&unit).map_err(|e| StoreError::io(&unit, e))?;
        write_object(&self.layout, &container, &obj)?;
        Ok(obj)
    }

    /// Read-modify-write of one instance under its unit lock. `change`
    /// returns the outcome; nothing is written when it is `Unchanged`. A
    /// change leaves the row's record of an applied document out of date
    /// (see [`AppliedDocument`]).
    fn update_instance(
        &self,
        name: &str,
        container: &str,
        change: impl FnOnce(&mut Instance) -> Result<ApplyOutcome, StoreError>,
    ) -> Result<ApplyOutcome, StoreError> {
        self.update_instance_from(name, container, None, change)
    }

    /// As [`Store::update_instance`]; `document`: the change applies that
    /// document (see [`Store::apply_instance_from`]), which the row then
    /// records.
    fn update_instance_from(
        &self,
        name: &str,
        container: &str,
        document: Option<&str>,
        change: impl FnOnce(&mut Instance) -> Result<ApplyOutcome, StoreError>,
    ) -> Result<ApplyOutcome, StoreError> {
        let _unit_lock = self.lock_unit(container)?;
        let mut obj = read_object(&self.layout, container)?
            .ok_or_else(|| StoreError::Vanished(name.to_owned()))?;
        let outcome = change(&mut obj)?;
        if outcome != ApplyOutcome::Unchanged {
            write_object(&self.layout, container, &obj)?;
            // Always written: a watch learns of the change from the index.
            let row = IndexRow::of(&obj);
            let applied = applied_record(&self.layout, container, document);
            self.edit_index(|index| {
                if let Some(mut row) = row {
                    row.applied = applied.or_else(|| index.find(name)?.applied.clone());
                    index.upsert(row);
                }
                index.bump_revision();
                true
            })?;
        }
        Ok(outcome)
    }
}

/// The record that the object of `container`, as just written, was made
/// from `document`.
fn applied_record(
    layout: &Layout,
    container: &str,
    document: Option<&str>,
) -> Option<AppliedDocument> {
    Some(AppliedDocument {
        key: document?.to_owned(),
        object: file_stamp(&layout.object_file(container))?,
    })
}

fn bump_generation(meta: &mut ObjectMeta) {
    meta.generation = Some(meta.generation.unwrap_or(0) + 1);
}

/// The instances of a home, and the units whose object could not be read.
#[derive(Debug)]
pub struct Listing {
    pub instances: Vec<Instance>,
    /// One [`StoreError::Unreadable`] per unit that did not read.
    pub unreadable: Vec<StoreError>,
}

/// Takes the operator-owned parts of an applied object (spec, labels,
/// annotations) into the stored one; jackin-owned metadata and status stay.
/// The generation moves only when the spec changed.
pub(crate) fn merge<S: PartialEq + Clone>(
    kind: &'static str,
    stored: (&mut ObjectMeta, &mut S),
    applied: (&ObjectMeta, &S),
) -> Result<ApplyOutcome, StoreError> {
    let (stored_meta, stored_spec) = stored;
    let (applied_meta, applied_spec) = applied;
    if let (Some(given), Some(uid)) = (&applied_meta.uid, &stored_meta.uid)
        && given != uid
    {
        return Err(StoreError::UidMismatch {
            kind,
            name: stored_meta.name.clone(),
            given: given.clone(),
            stored: uid.clone(),
        });
    }
    // Annotations of jackin's own (`jackin.dev/…`, set by commands: an
    // acknowledgement, an exit-policy override, a resume request) stay
    // unless the file sets them; the rest are the file's.
    let mut annotations = applied_meta.annotations.clone();
    for (key, value) in &stored_meta.annotations {
        if key.starts_with("jackin.dev/") && !annotations.contains_key(key) {
            annotations.insert(key.clone(), value.clone());
        }
    }
    let spec_changed = stored_spec != applied_spec;
    let meta_changed =
        stored_meta.labels != applied_meta.labels || stored_meta.annotations != annotations;
    if !spec_changed && !meta_changed {
        return Ok(ApplyOutcome::Unchanged);
    }
    *stored_spec = applied_spec.clone();
    stored_meta.labels = applied_meta.labels.clone();
    stored_meta.annotations = annotations;
    if spec_changed {
        bump_generation(stored_meta);
    }
    Ok(ApplyOutcome::Configured)
}

fn merge_instance(stored: &mut Instance, applied: &Instance) -> Result<ApplyOutcome, StoreError> {
    merge(
        Instance::KIND,
        (&mut stored.metadata, &mut stored.spec),
        (&applied.metadata, &applied.spec),
    )
}
