//! Label selectors, as `kubectl -l` takes them: requirements separated by
//! commas, all of which must hold.
//!
//! - `key=value` (or `key==value`): the label is there with that value;
//! - `key!=value`: the label is absent or has another value;
//! - `key`: the label is there; `!key`: it is not.

use std::collections::BTreeMap;

#[derive(Debug, Clone, PartialEq, Eq)]
enum Requirement {
    Equals(String, String),
    NotEquals(String, String),
    Exists(String),
    Absent(String),
}

/// A parsed selector; the empty selector selects everything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Selector(Vec<Requirement>);

impl Selector {
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut requirements = Vec::new();
        for part in text.split(',').map(str::trim) {
            if part.is_empty() {
                return Err(format!(
                    "{text:?}: an empty requirement; expected key=value, key!=value, key or !key \
                     separated by commas"
                ));
            }
            let requirement = if let Some((key, value)) = part.split_once("!=") {
                Requirement::NotEquals(key.trim().into(), value.trim().into())
            } else if let Some((key, value)) = part.split_once("==").or(part.split_once('=')) {
                Requirement::Equals(key.trim().into(), value.trim().into())
            } else if let Some(key) = part.strip_prefix('!') {
                Requirement::Absent(key.trim().into())
            } else {
                Requirement::Exists(part.into())
            };
            let (key, value) = match &requirement {
                Requirement::Equals(key, value) | Requirement::NotEquals(key, value) => {
                    (key, Some(value))
                }
                Requirement::Exists(key) | Requirement::Absent(key) => (key, None),
            };
            check_key(key, text)?;
            if let Some(value) = value {
                check_value(value, text)?;
            }
            requirements.push(requirement);
        }
        Ok(Self(requirements))
    }

    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.0.iter().all(|requirement| match requirement {
            Requirement::Equals(key, value) => labels.get(key) == Some(value),
            Requirement::NotEquals(key, value) => labels.get(key) != Some(value),
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::Absent(key) => !labels.contains_key(key),
        })
    }
}

/// A label key: an optional DNS prefix and `/`, then a name of letters,
/// digits, `-`, `_` and `.`, as Kubernetes spells them.
fn check_key(key: &str, text: &str) -> Result<(), String> {
    let name = key.rsplit_once('/').map_or(key, |(_, name)| name);
    let good = |s: &str, extra: &[char]| {
        !s.is_empty()
            && s.len() <= 253
            && s.chars()
                .all(|c| c.is_ascii_alphanumeric() || extra.contains(&c))
    };
    let prefix_ok = key
        .rsplit_once('/')
        .is_none_or(|(prefix, _)| good(prefix, &['-', '.']));
    if good(name, &['-', '_', '.']) && name.len() <= 63 && prefix_ok {
        Ok(())
    } else {
        Err(format!("{text:?}: {key:?} is not a label key"))
    }
}

fn check_value(value: &str, text: &str) -> Result<(), String> {
    let good = value.len() <= 63
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if good {
        Ok(())
    } else {
        Err(format!("{text:?}: {value:?} is not a label value"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn every_requirement_must_hold() {
        let team_a = labels(&[("team", "a"), ("tier", "dev")]);
        let team_b = labels(&[("team", "b")]);
        let select = |text: &str| Selector::parse(text).unwrap();
        assert!(select("team=a").matches(&team_a));
        assert!(select("team==a,tier").matches(&team_a));
        assert!(!select("team=a").matches(&team_b));
        assert!(select("team!=a").matches(&team_b));
        assert!(select("team!=a").matches(&labels(&[])));
        assert!(select("!tier").matches(&team_b));
        assert!(!select("!tier").matches(&team_a));
        assert!(
            select("jackin.dev/source=src-1").matches(&labels(&[("jackin.dev/source", "src-1")]))
        );
    }

    #[test]
    fn bad_selectors_say_what_is_wrong() {
        for bad in ["", "team=a,", "=a", "te am=a", "team=a b", "x/=1", "!"] {
            assert!(Selector::parse(bad).is_err(), "{bad:?}");
        }
        let err = Selector::parse("team=a,,tier").unwrap_err();
        assert!(err.contains("empty requirement"), "{err}");
    }
}
