//! Instances that jackin itself settled as purged (the exit policy, the
//! operator's "clean up" answer at the end of a session, the keep cap), and
//! the manifest they were applied with. Re-applying that same manifest does
//! not bring the instance back: the operator's file did not change, so
//! neither does the outcome. A changed manifest, or `jackin delete NAME`
//! (which forgets the record), starts a new one.
//!
//! `data/ended.json`, written atomically under the index lock and bounded to
//! the newest 256 records. It holds names, manifests (references, never
//! secret values) and times.

use jackin_api::Instance;
use jackin_api::instance::SettledBy;
use jackin_api::redact::json_error;
use jackin_files::fsutil::read_untrusted;
use jackin_files::layout::cap;
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::store::{Store, StoreError};

/// How many records are kept; older ones are dropped.
const KEEP: usize = 256;

/// One instance jackin ended and cleaned up.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Ended {
    pub name: String,
    /// What of the manifest the operator owns: spec, labels, annotations
    /// (jackin's own `jackin.dev/…` annotations left out).
    pub manifest: serde_json::Value,
    pub by: SettledBy,
    pub at: Timestamp,
}

#[derive(Debug, Default, Serialize, Deserialize)]
struct EndedFile {
    #[serde(default)]
    instances: Vec<Ended>,
}

impl Store {
    fn ended_file(&self) -> std::path::PathBuf {
        self.layout().data_dir().join("ended.json")
    }

    /// The records. A file that cannot be read is kept aside as
    /// `ended.json.corrupt-<time>` and the records start anew, as the index
    /// does: a broken record must not stop every apply and purge.
    fn read_ended(&self) -> Result<EndedFile, StoreError> {
        let path = self.ended_file();
        // A FIFO, a link or a file past the cap is not a record jackin
        // wrote: an error naming it, not one to move aside.
        let bytes = match read_untrusted(&path, cap::ENDED) {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(EndedFile::default()),
            Err(e) => return Err(StoreError::io(&path, e)),
        };
        match serde_json::from_slice(&bytes) {
            Ok(file) => Ok(file),
            Err(reason) => {
                let reason = json_error(&reason);
                let stamp = Timestamp::now().strftime("%Y%m%dT%H%M%S%.fZ").to_string();
                let kept = path.with_file_name(format!("ended.json.corrupt-{stamp}"));
                match std::fs::rename(&path, &kept) {
                    // Another process kept it aside first.
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
                    result => result.map_err(|e| StoreError::io(&path, e))?,
                }
                tracing::warn!(
                    "records of ended instances unreadable ({reason}); kept as {}",
                    kept.display()
                );
                Ok(EndedFile::default())
            }
        }
    }

    fn write_ended(&self, file: &EndedFile) -> Result<(), StoreError> {
        let path = self.ended_file();
        let mut bytes = serde_json::to_vec_pretty(file).expect("records serialize");
        bytes.push(b'\n');
        jackin_files::fsutil::write_atomic(&path, &bytes).map_err(|e| StoreError::io(&path, e))
    }

    /// Records that jackin settled `obj` as purged, before its row goes.
    pub fn remember_ended(&self, obj: &Instance, by: SettledBy) -> Result<(), StoreError> {
        let _lock = self.lock_index()?;
        let mut file = self.read_ended()?;
        file.instances.retain(|e| e.name != obj.metadata.name);
        file.instances.push(Ended {
            name: obj.metadata.name.clone(),
            manifest: obj.operator_manifest(),
            by,
            at: Timestamp::now(),
        });
        let excess = file.instances.len().saturating_sub(KEEP);
        file.instances.drain(..excess);
        self.write_ended(&file)
    }

    /// The record of an instance jackin ended with exactly this manifest.
    pub fn ended_as(&self, applied: &Instance) -> Result<Option<Ended>, StoreError> {
        let manifest = applied.operator_manifest();
        Ok(self
            .read_ended()?
            .instances
            .into_iter()
            .find(|e| e.name == applied.metadata.name && e.manifest == manifest))
    }

    /// Whether there is a record of an ended instance named `name`.
    pub fn has_ended(&self, name: &str) -> Result<bool, StoreError> {
        Ok(self.read_ended()?.instances.iter().any(|e| e.name == name))
    }

    /// Forgets the record of `name`; returns whether there was one.
    pub fn forget_ended(&self, name: &str) -> Result<bool, StoreError> {
        let _lock = self.lock_index()?;
        let mut file = self.read_ended()?;
        let before = file.instances.len();
        file.instances.retain(|e| e.name != name);
        if file.instances.len() == before {
            return Ok(false);
        }
        self.write_ended(&file)?;
        Ok(true)
    }
}
