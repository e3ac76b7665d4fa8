//! The agent's settings, set in the unit before every start: the keys an
//! `Agent` entry lists (`settings`, and its retention setting), each in one
//! of the agent's own files in its state directory, the rest of the file
//! left as it is. The files are the agent's, in the unit's home, which the
//! agent (and the operator through it) also writes: they are read without
//! following a link and within a size, and replaced by a rename below real
//! directories (`fsutil`). A file jackin cannot read as its format is left
//! as it is, never half understood and written.
//!
//! They are written last of everything that writes these files before a
//! start (docs/ARCHITECTURE.md, "One writing order"): the agent's own file,
//! then the credential keys forwarded into it, then these; the agent's own
//! later writes survive, but for the keys set here.

use std::path::Path;

use jackin_api::agent::StateKind;
use jackin_api::agent_settings::{
    AgentSetting, AppliedSetting, SettingFormat, SettingMerge, SettingOutcome,
};
use jackin_api::instance::Instance;
use jackin_api::redact::json_error;
use jackin_api::workspace::WorkspaceSpec;
use serde_json::{Map, Value};

use jackin_files::fsutil::{self, read_untrusted};
use jackin_files::layout::Layout;
use jackin_files::offload::blocking;
use jackin_plan::recipe::ResolvedAgent;

/// The largest settings file jackin reads to change one key.
const MAX_SETTINGS_BYTES: u64 = 1 << 20;

/// Applies the agent's settings in the unit of `obj` before a start, and
/// records what became of each in its status (for `describe`). The
/// settings are the registry's entry's as it is now (`registry`), else the
/// pinned entry's: a jackin that ships a new setting gives it to sessions
/// pinned before it. They go in the pinned state directory, the one the
/// container gets; not where the operator pointed it (`env`), which is
/// theirs. Returns why each setting left alone was, for an event.
pub async fn before_start(
    layout: &Layout,
    container: &str,
    obj: &mut Instance,
    registry: Option<&ResolvedAgent>,
    workspace: Option<&WorkspaceSpec>,
) -> Vec<String> {
    let Some(recipe) = obj.recipe() else {
        return Vec::new();
    };
    let Some(pinned) = recipe.agent.as_ref() else {
        return Vec::new();
    };
    let spec = registry
        .filter(|entry| entry.name == pinned.name)
        .map_or(&pinned.spec, |entry| &entry.spec);
    let state = match &pinned.spec.state_env {
        Some(state) if recipe.env.iter().any(|v| v.name == state.name) => return Vec::new(),
        Some(state) if state.kind == StateKind::Directory => state.path.clone(),
        _ => ".".to_owned(),
    };
    let settings = spec.start_settings();
    let working_dir = recipe.working_dir.clone();
    let off: Vec<String> = settings
        .iter()
        .filter(|s| workspace.is_some_and(|w| w.turns_off(&s.name)))
        .map(|s| s.name.clone())
        .collect();
    let home = layout.unit_home_dir(container);
    let applied = blocking(move || {
        let target = Target {
            home: &home,
            state: &state,
            working_dir: working_dir.as_deref(),
        };
        apply_all(&target, &settings, |name| off.iter().any(|o| o == name))
    })
    .await;
    let left_alone = applied
        .iter()
        .filter(|a| a.outcome == SettingOutcome::LeftAlone)
        .filter_map(|a| a.reason.clone())
        .collect();
    obj.status.get_or_insert_default().agent_settings = applied;
    left_alone
}

/// Where a start's settings go: the unit's `home`, the agent's state
/// directory relative to it, and the pinned working directory the keys
/// may name.
pub struct Target<'a> {
    pub home: &'a Path,
    pub state: &'a str,
    pub working_dir: Option<&'a str>,
}

/// Applies each of `settings` that `off` does not name, in order, and says
/// what became of each: set, off, or left alone (and why).
pub fn apply_all(
    target: &Target<'_>,
    settings: &[AgentSetting],
    off: impl Fn(&str) -> bool,
) -> Vec<AppliedSetting> {
    settings
        .iter()
        .map(|setting| {
            let file = Path::new(target.state.trim_matches('/'))
                .join(&setting.file)
                .display()
                .to_string();
            let key = setting.resolved_key(target.working_dir);
            let shown = key.as_deref().map_or_else(
                || AgentSetting::shown_key(&setting.key),
                AgentSetting::shown_key,
            );
            let (outcome, reason) = if off(&setting.name) {
                let why = "turned off by the workspace (agentSettings)";
                (SettingOutcome::Off, Some(why.to_owned()))
            } else {
                match apply(target, setting) {
                    Ok(_) => (SettingOutcome::Set, None),
                    Err(why) => (SettingOutcome::LeftAlone, Some(why)),
                }
            };
            AppliedSetting {
                name: setting.name.clone(),
                file: file.trim_start_matches("./").to_owned(),
                key: shown,
                value: setting.value.0.to_string(),
                outcome,
                reason,
            }
        })
        .collect()
}

/// Sets one setting in its file under `target`. Returns whether the file
/// changed. A file jackin cannot read as its format (not JSON or TOML, a
/// link, a FIFO, too large), or where the key's place is not a table, is
/// left as it is, and the error says why: the agent then keeps its own.
pub fn apply(target: &Target<'_>, setting: &AgentSetting) -> Result<bool, String> {
    let relative = Path::new(target.state.trim_matches('/')).join(&setting.file);
    let path = target.home.join(&relative);
    let shown = relative.display();
    let left = |why: String| format!("{shown}: {why}; {} was left alone", setting.name);
    let key = setting
        .resolved_key(target.working_dir)
        .ok_or_else(|| left("the session's working directory is not known".to_owned()))?;
    // Made (or found) without following any link the agent left on the
    // way, before anything below it is read.
    if let Some(parent) = relative.parent() {
        fsutil::ensure_real_dir_below(target.home, parent).map_err(|e| left(e.to_string()))?;
    }
    let existing = match read_untrusted(&path, MAX_SETTINGS_BYTES) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(left(e.to_string())),
    };
    let value = &setting.value.0;
    let written = match setting.format {
        SettingFormat::Json => set_json(existing.as_deref(), &key, value, setting.merge),
        SettingFormat::Toml => set_toml(existing.as_deref(), &key, value, setting.merge),
    }
    .map_err(left)?;
    let Some(bytes) = written else {
        return Ok(false);
    };
    fsutil::replace_below(target.home, &relative, &bytes).map_err(|e| left(e.to_string()))?;
    Ok(true)
}

/// The JSON file `existing` (none: an empty object) with `key` set to
/// `value` (or, to `append`, the list there with each item of `value` it
/// lacks added); `None` when it says so already.
fn set_json(
    existing: Option<&[u8]>,
    key: &[String],
    value: &Value,
    merge: SettingMerge,
) -> Result<Option<Vec<u8>>, String> {
    let mut document = match existing {
        Some(bytes) => serde_json::from_slice::<Value>(bytes)
            .map_err(|e| format!("is not JSON ({})", json_error(&e)))?,
        None => Value::Object(Map::new()),
    };
    let (last, parents) = key.split_last().expect("a key has a part");
    let mut at = &mut document;
    for (depth, part) in parents.iter().enumerate() {
        let Value::Object(map) = at else {
            return Err(format!(
                "{} is not an object",
                AgentSetting::shown_key(&key[..depth])
            ));
        };
        at = map
            .entry(part.clone())
            .or_insert_with(|| Value::Object(Map::new()));
    }
    let Value::Object(map) = at else {
        return Err(format!(
            "{} is not an object",
            AgentSetting::shown_key(parents)
        ));
    };
    let Some(value) = merged(merge, map.get(last), value, key)? else {
        return Ok(None);
    };
    map.insert(last.clone(), value);
    let mut bytes = serde_json::to_vec_pretty(&document).expect("JSON serializes");
    bytes.push(b'\n');
    Ok(Some(bytes))
}

/// What `merge` makes of `value` over `found`, what the key holds now:
/// `None` when that is what it holds already.
fn merged(
    merge: SettingMerge,
    found: Option<&Value>,
    value: &Value,
    key: &[String],
) -> Result<Option<Value>, String> {
    let shown = || AgentSetting::shown_key(key);
    let new = match (merge, found) {
        (SettingMerge::Set, _) | (_, None) => value.clone(),
        (SettingMerge::Append, Some(found)) => appended(found, value).ok_or_else(|| {
            format!(
                "{} does not hold lists where the setting adds to them",
                shown()
            )
        })?,
        (SettingMerge::Prepend, Some(found)) => prepended(found, value)
            .ok_or_else(|| format!("{} is not a list to put the setting's before", shown()))?,
    };
    Ok((found != Some(&new)).then_some(new))
}

/// The list `value` followed by the list `found`, unless `found` begins
/// with it already (then `found` as it is). `None` when either is no list.
fn prepended(found: &Value, value: &Value) -> Option<Value> {
    let (Value::Array(found), Value::Array(first)) = (found, value) else {
        return None;
    };
    if found.starts_with(first) {
        return Some(Value::Array(found.clone()));
    }
    Some(Value::Array(first.iter().chain(found).cloned().collect()))
}

/// `found` with what `added` holds added: each item of a list that the list
/// found lacks, and in a map, so for each of its keys (a key found
/// nowhere takes the value whole). `None` where the two differ in kind.
fn appended(found: &Value, added: &Value) -> Option<Value> {
    match (found, added) {
        (Value::Array(found), Value::Array(added)) => {
            let mut list = found.clone();
            list.extend(added.iter().filter(|item| !found.contains(item)).cloned());
            Some(Value::Array(list))
        }
        (Value::Object(found), Value::Object(added)) => {
            let mut map = found.clone();
            for (key, value) in added {
                let merged = match found.get(key) {
                    Some(there) => appended(there, value)?,
                    None => value.clone(),
                };
                map.insert(key.clone(), merged);
            }
            Some(Value::Object(map))
        }
        _ => None,
    }
}

/// The TOML file `existing` (none: an empty document) with `key` set to
/// `value`, its comments, order and formatting kept; `None` when it says
/// so already. Missing tables are added as `[a."b"]` headers (inside an
/// inline table, as inline tables).
fn set_toml(
    existing: Option<&[u8]>,
    key: &[String],
    value: &Value,
    merge: SettingMerge,
) -> Result<Option<Vec<u8>>, String> {
    let text = std::str::from_utf8(existing.unwrap_or_default())
        .map_err(|_| "is not UTF-8 text, so not TOML".to_owned())?;
    let mut document: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e: toml_edit::TomlError| format!("is not TOML ({})", e.message()))?;
    let (last, parents) = key.split_last().expect("a key has a part");
    let mut at: &mut dyn toml_edit::TableLike = document.as_table_mut();
    let mut inline = false;
    for (depth, part) in parents.iter().enumerate() {
        let item = at.entry(part).or_insert_with(|| match inline {
            true => toml_edit::Item::Value(toml_edit::InlineTable::new().into()),
            false => {
                let mut table = toml_edit::Table::new();
                // Only the innermost table gets a header of its own.
                table.set_implicit(true);
                toml_edit::Item::Table(table)
            }
        });
        inline = inline || item.is_inline_table();
        at = item
            .as_table_like_mut()
            .ok_or_else(|| format!("{} is not a table", AgentSetting::shown_key(&key[..=depth])))?;
    }
    match at.get_mut(last) {
        Some(toml_edit::Item::Value(current)) => {
            // A value TOML has and JSON has not (a date) is replaced by a
            // set, and is no list to merge with.
            let found = json_of(current);
            let Some(new) = (match (merge, found) {
                (SettingMerge::Set, None) => Some(value.clone()),
                (_, found) => merged(merge, found.as_ref(), value, key)?,
            }) else {
                return Ok(None);
            };
            // The line's own comment stays beside the new value.
            let decor = current.decor().clone();
            *current = toml_value(&new)?;
            *current.decor_mut() = decor;
        }
        Some(_) => {
            return Err(format!(
                "{} is a table, not a value",
                AgentSetting::shown_key(key)
            ));
        }
        None => {
            at.insert(last, toml_edit::Item::Value(toml_value(value)?));
        }
    }
    Ok(Some(document.to_string().into_bytes()))
}

/// A TOML value as JSON; `None` for a date, which no setting sets.
fn json_of(value: &toml_edit::Value) -> Option<Value> {
    Some(match value {
        toml_edit::Value::String(s) => Value::from(s.value().as_str()),
        toml_edit::Value::Integer(i) => Value::from(*i.value()),
        toml_edit::Value::Float(f) => Value::from(*f.value()),
        toml_edit::Value::Boolean(b) => Value::from(*b.value()),
        toml_edit::Value::Datetime(_) => return None,
        toml_edit::Value::Array(items) => {
            Value::Array(items.iter().map(json_of).collect::<Option<_>>()?)
        }
        toml_edit::Value::InlineTable(table) => Value::Object(
            table
                .iter()
                .map(|(k, v)| Some((k.to_owned(), json_of(v)?)))
                .collect::<Option<_>>()?,
        ),
    })
}

/// A setting's JSON value as TOML: a map becomes an inline table.
fn toml_value(value: &Value) -> Result<toml_edit::Value, String> {
    Ok(match value {
        Value::Null => return Err("TOML has no null".to_owned()),
        Value::Bool(b) => (*b).into(),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => i.into(),
            (None, Some(f)) => f.into(),
            (None, None) => return Err(format!("{n} is no TOML number")),
        },
        Value::String(s) => s.as_str().into(),
        Value::Array(items) => {
            let items: Result<Vec<_>, _> = items.iter().map(toml_value).collect();
            toml_edit::Value::Array(items?.into_iter().collect())
        }
        Value::Object(map) => {
            let mut table = toml_edit::InlineTable::new();
            for (k, v) in map {
                table.insert(k, toml_value(v)?);
            }
            toml_edit::Value::InlineTable(table)
        }
    })
}

#[cfg(test)]
#[path = "agent_settings_tests.rs"]
mod tests;
