//! Objects kept as one YAML file each, under a directory per kind:
//! `workspaces/<name>.yaml` and `agents/<name>.yaml`. They are few, small and
//! written only by `apply`; a directory lock serializes the writers, and
//! every write replaces the file atomically, so readers take no lock.

use std::fs;
use std::io::ErrorKind;

use jackin_api::agent::{self, Agent};
use jackin_api::{Object, ObjectMeta, Workspace, manifest};
use jackin_files::fsutil::{FileLock, read_untrusted, write_atomic};
use jackin_files::layout::cap;
use jackin_plan::recipe::ResolvedAgent;
use jiff::Timestamp;
use serde::Serialize;

use crate::index::IndexRow;
use crate::store::{ApplyOutcome, Store, StoreError, merge};

/// A kind of object kept as a file each.
pub trait FileObject: Clone + Serialize {
    const KIND: &'static str;
    /// The directory under `JACKIN_HOME`, also the plural name.
    const PLURAL: &'static str;
    fn from_object(obj: Object) -> Option<Self>;
    fn metadata(&self) -> &ObjectMeta;
    fn metadata_mut(&mut self) -> &mut ObjectMeta;
    /// Takes the operator-owned parts of `applied` into `self`.
    fn merge_from(&mut self, applied: &Self) -> Result<ApplyOutcome, StoreError>;
    /// The name of the object of this kind an instance's row refers to.
    fn referred_by(row: &IndexRow) -> Option<&str>;
}

/// Implements [`FileObject`] for a kind whose object has `metadata` and
/// `spec` and is read as `Object::$variant`.
macro_rules! file_object {
    ($kind:ty, $variant:ident, $plural:literal, $referred_by:expr) => {
        impl FileObject for $kind {
            const KIND: &'static str = <$kind>::KIND;
            const PLURAL: &'static str = $plural;

            fn from_object(obj: Object) -> Option<Self> {
                match obj {
                    Object::$variant(obj) => Some(*obj),
                    _ => None,
                }
            }

            fn metadata(&self) -> &ObjectMeta {
                &self.metadata
            }

            fn metadata_mut(&mut self) -> &mut ObjectMeta {
                &mut self.metadata
            }

            fn merge_from(&mut self, applied: &Self) -> Result<ApplyOutcome, StoreError> {
                merge(
                    Self::KIND,
                    (&mut self.metadata, &mut self.spec),
                    (&applied.metadata, &applied.spec),
                )
            }

            fn referred_by(row: &IndexRow) -> Option<&str> {
                $referred_by(row)
            }
        }
    };
}

file_object!(Workspace, Workspace, "workspaces", workspace_of);
file_object!(Agent, Agent, "agents", agent_of);

fn workspace_of(row: &IndexRow) -> Option<&str> {
    row.workspace.as_deref()
}

fn agent_of(row: &IndexRow) -> Option<&str> {
    Some(&row.agent)
}

/// Where an agent entry comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentSource {
    Builtin,
    /// An `Agent` object applied to the store (it replaces a built-in entry
    /// of the same name).
    Applied,
}

impl AgentSource {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Builtin => "builtin",
            Self::Applied => "applied",
        }
    }
}

impl Store {
    /// Every stored object of kind `K`, sorted by name.
    pub fn list<K: FileObject>(&self) -> Result<Vec<K>, StoreError> {
        let dir = self.layout().objects_dir(K::PLURAL);
        let entries = match fs::read_dir(&dir) {
            Ok(entries) => entries,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(StoreError::io(&dir, e)),
        };
        let mut names = Vec::new();
        for entry in entries {
            let entry = entry.map_err(|e| StoreError::io(&dir, e))?;
            if let Some(name) = entry
                .file_name()
                .to_str()
                .and_then(|n| n.strip_suffix(".yaml"))
                && jackin_api::validate::dns_label(name).is_ok()
            {
                names.push(name.to_owned());
            }
        }
        names.sort();
        let mut out = Vec::new();
        for name in names {
            if let Some(obj) = self.get::<K>(&name)? {
                out.push(obj);
            }
        }
        Ok(out)
    }

    /// The stored object of kind `K` named `name`.
    pub fn get<K: FileObject>(&self, name: &str) -> Result<Option<K>, StoreError> {
        let path = self.layout().object_of_kind_file(K::PLURAL, name);
        let bytes = match read_untrusted(&path, cap::STORED_OBJECT) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        let unreadable = |message: String| StoreError::Unreadable {
            path: path.clone(),
            message,
        };
        let text =
            String::from_utf8(bytes).map_err(|_| unreadable("it is not UTF-8 text".into()))?;
        let objects =
            manifest::parse_stored(&path.display().to_string(), &text).map_err(|errs| {
                unreadable(
                    errs.iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join("; "),
                )
            })?;
        match objects.into_iter().next().and_then(K::from_object) {
            Some(obj) if obj.metadata().name == name => Ok(Some(obj)),
            _ => Err(unreadable(format!("expected {} {name:?}", K::KIND))),
        }
    }

    /// What applying `applied` would do, writing nothing.
    pub fn plan<K: FileObject>(&self, applied: &K) -> Result<ApplyOutcome, StoreError> {
        match self.get::<K>(&applied.metadata().name)? {
            None => Ok(ApplyOutcome::Created),
            Some(mut stored) => stored.merge_from(applied),
        }
    }

    /// Creates or updates an object from an applied manifest.
    pub fn apply<K: FileObject>(&self, applied: &K) -> Result<ApplyOutcome, StoreError> {
        let lock_path = self.layout().objects_lock_file(K::PLURAL);
        let _lock = FileLock::acquire(&lock_path).map_err(|e| StoreError::io(&lock_path, e))?;
        let (obj, outcome) = match self.get::<K>(&applied.metadata().name)? {
            None => {
                let mut obj = applied.clone();
                let meta = obj.metadata_mut();
                meta.uid = Some(uuid::Uuid::new_v4().to_string());
                meta.generation = Some(1);
                meta.creation_timestamp = Some(Timestamp::now());
                (obj, ApplyOutcome::Created)
            }
            Some(mut stored) => {
                let outcome = stored.merge_from(applied)?;
                (stored, outcome)
            }
        };
        if outcome != ApplyOutcome::Unchanged {
            let path = self
                .layout()
                .object_of_kind_file(K::PLURAL, &obj.metadata().name);
            let mut text = serde_saphyr::to_string(&obj).expect("an object serializes");
            if !text.ends_with('\n') {
                text.push('\n');
            }
            write_atomic(&path, text.as_bytes()).map_err(|e| StoreError::io(&path, e))?;
            self.unsettle_referrers::<K>(&obj.metadata().name)?;
        }
        Ok(outcome)
    }

    /// The instances that use the object `name` of kind `K` are no longer
    /// known to be converged: what it says may change what they should be
    /// (a drift to report, a policy to apply), so the next pass looks at
    /// each instead of trusting its row.
    fn unsettle_referrers<K: FileObject>(&self, name: &str) -> Result<(), StoreError> {
        self.edit_index(|index| index.unsettle(|row| K::referred_by(row) == Some(name)))
    }

    /// Deletes the stored object of kind `K` named `name`; `false` when
    /// there was none.
    pub fn delete<K: FileObject>(&self, name: &str) -> Result<bool, StoreError> {
        let lock_path = self.layout().objects_lock_file(K::PLURAL);
        let _lock = FileLock::acquire(&lock_path).map_err(|e| StoreError::io(&lock_path, e))?;
        let path = self.layout().object_of_kind_file(K::PLURAL, name);
        match fs::remove_file(&path) {
            Ok(()) => {
                self.unsettle_referrers::<K>(name)?;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
            Err(e) => Err(StoreError::io(&path, e)),
        }
    }

    pub fn list_workspaces(&self) -> Result<Vec<Workspace>, StoreError> {
        self.list()
    }

    pub fn get_workspace(&self, name: &str) -> Result<Option<Workspace>, StoreError> {
        self.get(name)
    }

    /// Every agent jackin can run: the built-in entries, each replaced by
    /// an applied `Agent` of the same name, and the applied ones that add
    /// a name. Sorted by name.
    pub fn agents(&self) -> Result<Vec<(Agent, AgentSource)>, StoreError> {
        let applied = self.list::<Agent>()?;
        let mut all: Vec<(Agent, AgentSource)> = agent::builtin()
            .into_iter()
            .filter(|b| !applied.iter().any(|a| a.metadata.name == b.metadata.name))
            .map(|b| (b, AgentSource::Builtin))
            .collect();
        all.extend(applied.into_iter().map(|a| (a, AgentSource::Applied)));
        all.sort_by(|a, b| a.0.metadata.name.cmp(&b.0.metadata.name));
        Ok(all)
    }

    /// The entry for the agent named `name`, applied or built in.
    pub fn resolve_agent(&self, name: &str) -> Result<Option<ResolvedAgent>, StoreError> {
        let found = match self.get::<Agent>(name)? {
            Some(applied) => Some((applied, AgentSource::Applied)),
            None => agent::builtin()
                .into_iter()
                .find(|b| b.metadata.name == name)
                .map(|b| (b, AgentSource::Builtin)),
        };
        Ok(found.map(|(agent, source)| ResolvedAgent {
            name: agent.metadata.name,
            source: source.as_str(),
            spec: agent.spec,
        }))
    }
}
