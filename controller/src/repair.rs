//! Repairs of the state directory that the file sweep decides (see
//! `sweep.rs`), as [`Store`] methods: every change of the index goes
//! through the store. Each takes the index lock and checks there that the
//! situation it was planned for still holds; when it does not, it does
//! nothing and says so (`false`), and the next sweep looks again.

use std::fs;
use std::path::Path;

use jackin_checkouts::gitdir;
use jackin_files::fsutil::{FileLock, ensure_private_dir, remove_if_exists};

use crate::index::{Index, IndexRow};
use crate::store::{Store, StoreError};
use crate::unit_object::read_object;

impl Store {
    /// Indexes again the unit `container`, whose object reads as instance
    /// `name` and which the index does not know.
    pub fn reindex_unit(&self, name: &str, container: &str) -> Result<bool, StoreError> {
        let layout = self.layout();
        let _index_lock = self.lock_index()?;
        let (mut index, _) = Index::load_or_repair(layout)?;
        let row = read_object(layout, container)
            .ok()
            .flatten()
            .and_then(|obj| IndexRow::of(&obj));
        let Some(row) = row.filter(|row| row.name == name && !indexed(&index, container)) else {
            return Ok(false);
        };
        index.upsert(row);
        index.write(layout)?;
        Ok(true)
    }

    /// Moves the unreadable or object-less unit `container`, which no row
    /// claims, to `to` whole (nothing in it is deleted: it may hold a
    /// conversation), and drops a row that names it.
    pub fn move_unit_aside(&self, container: &str, to: &Path) -> Result<bool, StoreError> {
        let layout = self.layout();
        let _index_lock = self.lock_index()?;
        let (mut index, _) = Index::load_or_repair(layout)?;
        let unreadable = match read_object(layout, container) {
            Err(StoreError::Unreadable { .. }) => true,
            // A unit with no object is stray only when unindexed: an
            // indexed one is an interrupted purge or a creation.
            Ok(None) => !indexed(&index, container),
            _ => false,
        };
        let unit = layout.unit_dir(container);
        if !unreadable || !unit.exists() {
            return Ok(false);
        }
        let orphaned = layout.orphaned_dir();
        ensure_private_dir(&orphaned).map_err(|e| StoreError::io(&orphaned, e))?;
        fs::rename(&unit, to).map_err(|e| StoreError::io(&unit, e))?;
        tracing::warn!("moved unreadable unit {container} to {}", to.display());
        if index.remove_unit(container) {
            index.write(layout)?;
        }
        Ok(true)
    }

    /// Removes the lock file `path` of a unit that no longer exists, once a
    /// non-blocking lock attempt proves nobody holds it.
    pub fn remove_orphan_lock(&self, path: &Path) -> Result<bool, StoreError> {
        let layout = self.layout();
        let Some(held) = FileLock::try_acquire(path).map_err(|e| StoreError::io(path, e))? else {
            return Ok(false);
        };
        let _index_lock = self.lock_index()?;
        let (index, _) = Index::load_or_repair(layout)?;
        let container = lock_owner(path).unwrap_or_default();
        if indexed(&index, container) || layout.unit_dir(container).exists() {
            return Ok(false);
        }
        remove_if_exists(path).map_err(|e| StoreError::io(path, e))?;
        drop(held);
        Ok(true)
    }

    /// Removes the temporary file of an atomic write to `data/` whose
    /// writer died: every such writer holds the index lock, so one found
    /// under it is nobody's.
    pub fn remove_write_leftover(&self, path: &Path) -> Result<bool, StoreError> {
        let _index_lock = self.lock_index()?;
        if !fs::symlink_metadata(path).is_ok_and(|m| m.is_file()) {
            return Ok(false);
        }
        remove_if_exists(path).map_err(|e| StoreError::io(path, e))?;
        Ok(true)
    }

    /// Removes the quarantine `path` a killed publication left in the unit
    /// of instance `name`, under the unit lock (not waited for: a unit
    /// being reconciled or removed is looked at by the next sweep), and
    /// only once no publication runs beside it
    /// ([`gitdir::remove_quarantine_leftover`]).
    pub fn remove_quarantine(&self, name: &str, path: &Path) -> Result<bool, StoreError> {
        let Some(guard) = self.try_lock_instance(name)? else {
            return Ok(false);
        };
        if !path.starts_with(self.layout().unit_dir(&guard.container)) {
            return Ok(false);
        }
        gitdir::remove_quarantine_leftover(path).map_err(|e| StoreError::io(path, e))
    }

    /// The index lock, taken only if no index row claims the instance uid
    /// `uid`: held while an engine object of that (vanished) instance is
    /// removed, so that a unit indexed again meanwhile keeps its objects.
    /// `None` when a row claims it.
    pub fn lock_unclaimed(&self, uid: &str) -> Result<Option<FileLock>, StoreError> {
        let lock = self.lock_index()?;
        let (index, _) = Index::load_or_repair(self.layout())?;
        let claimed = index.rows().iter().any(|row| row.uid == uid);
        Ok((!claimed).then_some(lock))
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
