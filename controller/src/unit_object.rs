//! The one file of a unit that says what the instance is (its object),
//! read and written, and the error every piece of the state store speaks.
//! At the bottom of the state layer: the store, its index and its records
//! build on it, and it on nothing of theirs.

use std::io::ErrorKind;
use std::path::{Path, PathBuf};

use jackin_api::Instance;
use jackin_api::redact::json_error;
use jackin_files::fsutil::{read_untrusted, write_atomic};
use jackin_files::layout::Layout;
use jackin_files::layout::cap;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("{path}: {source}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path}: cannot read the stored object: {message}")]
    Unreadable { path: PathBuf, message: String },
    #[error("instance {0:?} not found")]
    InstanceNotFound(String),
    #[error("{kind}/{name}: metadata.uid {given:?} does not match the stored object's {stored:?}")]
    UidMismatch {
        kind: &'static str,
        name: String,
        given: String,
        stored: String,
    },
    #[error("instance {0:?} was removed while it was being updated; apply again")]
    Vanished(String),
}

impl StoreError {
    pub fn io(path: &Path, source: std::io::Error) -> Self {
        Self::Io {
            path: path.to_owned(),
            source,
        }
    }
}

/// Reads a unit's object; `Ok(None)` when the unit has none.
pub(crate) fn read_object(
    layout: &Layout,
    container: &str,
) -> Result<Option<Instance>, StoreError> {
    let path = layout.object_file(container);
    let bytes = match read_untrusted(&path, cap::OBJECT) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(StoreError::io(&path, e)),
    };
    let obj: Instance = serde_json::from_slice(&bytes).map_err(|e| StoreError::Unreadable {
        path: path.clone(),
        message: json_error(&e),
    })?;
    // The directory name is the identity; an object that disagrees (or whose
    // name is unsafe) is not trusted.
    let status_container = obj.container_name();
    if status_container != Some(container) || jackin_api::validate::instance(&obj).is_err() {
        return Err(StoreError::Unreadable {
            path,
            message: "the object does not validate or names another unit".into(),
        });
    }
    Ok(Some(obj))
}

pub(crate) fn write_object(
    layout: &Layout,
    container: &str,
    obj: &Instance,
) -> Result<(), StoreError> {
    let path = layout.object_file(container);
    let mut bytes = serde_json::to_vec_pretty(obj).expect("an instance serializes");
    bytes.push(b'\n');
    write_atomic(&path, &bytes).map_err(|e| StoreError::io(&path, e))
}
