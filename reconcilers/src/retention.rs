//! An agent's own retention setting, raised in the unit before every start:
//! claude and gemini delete conversations 30 days after their last
//! activity, and a session may be kept far longer than that. The setting
//! lives in a JSON settings file in the agent's state directory, in the
//! unit's home, which the agent (and the operator through it) may also
//! write; jackin sets one key and leaves the rest of the file as it is.

use std::path::Path;

use jackin_api::agent::{KEPT_RETENTION_DAYS, RetentionSetting};
use serde_json::{Map, Value};

use crate::fsutil::{self, read_untrusted};

/// The largest settings file jackin reads to change one key.
const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// Sets `setting` to [`KEPT_RETENTION_DAYS`] in the settings file under
/// `state`, a directory relative to the unit's `home`. Returns whether the
/// file changed. A file jackin cannot read as a JSON object (not JSON, a
/// link, a FIFO, too large) is left as it is, and the error says why: the
/// agent then keeps its own default.
pub fn keep_conversations(
    home: &Path,
    state: &str,
    setting: &RetentionSetting,
) -> Result<bool, String> {
    let relative = Path::new(state.trim_matches('/')).join(&setting.file);
    let path = home.join(&relative);
    let shown = relative.display();
    // Made (or found) without following any link the agent left on the
    // way, before anything below it is read.
    if let Some(parent) = relative.parent() {
        fsutil::ensure_real_dir_below(home, parent).map_err(|e| format!("{shown}: {e}"))?;
    }
    let mut settings = match read_untrusted(&path, MAX_SETTINGS_BYTES) {
        Ok(bytes) => serde_json::from_slice::<Value>(&bytes)
            .map_err(|e| format!("{shown} is not JSON ({e}); its retention was left alone"))?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Value::Object(Map::new()),
        Err(e) => return Err(format!("{shown}: {e}; its retention was left alone")),
    };
    let wanted = setting.format.value(KEPT_RETENTION_DAYS);
    let mut at = &mut settings;
    let keys: Vec<&str> = setting.key.split('.').collect();
    let (last, parents) = keys.split_last().expect("a key has a part");
    for key in parents {
        let Value::Object(map) = at else {
            return Err(format!(
                "{shown}: {} is not an object; its retention was left alone",
                setting.key
            ));
        };
        at = map
            .entry((*key).to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let Value::Object(map) = at else {
        return Err(format!(
            "{shown}: {} is not in an object; its retention was left alone",
            setting.key
        ));
    };
    if map.get(*last) == Some(&wanted) {
        return Ok(false);
    }
    map.insert((*last).to_owned(), wanted);
    let mut bytes = serde_json::to_vec_pretty(&settings).expect("JSON serializes");
    bytes.push(b'\n');
    fsutil::replace_below(home, &relative, &bytes).map_err(|e| format!("{shown}: {e}"))?;
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::agent::RetentionFormat;

    fn setting(file: &str, key: &str, format: RetentionFormat) -> RetentionSetting {
        RetentionSetting {
            file: file.into(),
            key: key.into(),
            format,
        }
    }

    #[test]
    fn the_key_is_set_and_the_rest_of_the_file_kept() {
        let home = tempfile::tempdir().unwrap();
        let claude = setting("settings.json", "cleanupPeriodDays", RetentionFormat::Days);
        std::fs::create_dir_all(home.path().join(".claude")).unwrap();
        std::fs::write(
            home.path().join(".claude/settings.json"),
            r#"{"permissions": {"allow": ["Bash"]}, "cleanupPeriodDays": 30}"#,
        )
        .unwrap();
        assert_eq!(
            keep_conversations(home.path(), ".claude", &claude),
            Ok(true)
        );
        let written: Value = serde_json::from_slice(
            &std::fs::read(home.path().join(".claude/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(written["cleanupPeriodDays"], 36_500);
        assert_eq!(written["permissions"]["allow"][0], "Bash");
        assert_eq!(
            keep_conversations(home.path(), ".claude", &claude),
            Ok(false)
        );

        let gemini = setting(
            ".gemini/settings.json",
            "general.sessionRetention.maxAge",
            RetentionFormat::Duration,
        );
        assert_eq!(keep_conversations(home.path(), ".", &gemini), Ok(true));
        let written: Value = serde_json::from_slice(
            &std::fs::read(home.path().join(".gemini/settings.json")).unwrap(),
        )
        .unwrap();
        assert_eq!(written["general"]["sessionRetention"]["maxAge"], "36500d");
    }

    /// The file is the agent's: what jackin cannot read as a JSON object is
    /// left alone, and a link on the way is never followed.
    #[test]
    fn what_cannot_be_read_is_left_alone() {
        let home = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        let claude = setting("settings.json", "cleanupPeriodDays", RetentionFormat::Days);
        std::fs::create_dir_all(home.path().join(".claude")).unwrap();
        let file = home.path().join(".claude/settings.json");
        std::fs::write(&file, "{ not json").unwrap();
        assert!(keep_conversations(home.path(), ".claude", &claude).is_err());
        assert_eq!(std::fs::read_to_string(&file).unwrap(), "{ not json");

        std::fs::remove_file(&file).unwrap();
        std::os::unix::fs::symlink(elsewhere.path().join("x.json"), &file).unwrap();
        assert!(keep_conversations(home.path(), ".claude", &claude).is_err());
        assert!(!elsewhere.path().join("x.json").exists());

        std::fs::remove_dir_all(home.path().join(".claude")).unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), home.path().join(".claude")).unwrap();
        assert!(keep_conversations(home.path(), ".claude", &claude).is_err());
        assert_eq!(std::fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
