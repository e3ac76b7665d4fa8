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

/// A label key as Kubernetes spells it: an optional prefix, a DNS
/// subdomain (lower-case letters, digits, `-` and `.`, at most 253
/// characters) and `/`, then a name of at most 63 letters, digits, `-`, `_`
/// and `.` that starts and ends with a letter or digit. Applying checks the
/// same, so every label an object carries can be selected.
pub fn label_key(key: &str) -> Result<(), String> {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    if let Some(prefix) = prefix
        && !dns_subdomain(prefix)
    {
        return Err(format!(
            "{key:?} is not a label key: its prefix {prefix:?} must be a DNS subdomain \
             (lower-case letters, digits, '-' and '.', at most 253 characters)"
        ));
    }
    if name.is_empty() || !label_name(name) {
        return Err(format!(
            "{key:?} is not a label key: expected an optional DNS prefix and '/', then at most \
             63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
        ));
    }
    Ok(())
}

/// A label value as Kubernetes spells it: empty, or at most 63 letters,
/// digits, `-`, `_` and `.`, starting and ending with a letter or digit.
pub fn label_value(value: &str) -> Result<(), String> {
    if value.is_empty() || label_name(value) {
        Ok(())
    } else {
        Err(format!(
            "{value:?} is not a label value: expected at most 63 letters, digits, '-', '_' or \
             '.', starting and ending with a letter or digit (or nothing)"
        ))
    }
}

/// `[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?`, at most 63 characters.
fn label_name(name: &str) -> bool {
    let bytes = name.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 63
        && bytes[0].is_ascii_alphanumeric()
        && bytes[bytes.len() - 1].is_ascii_alphanumeric()
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

/// A DNS-1123 subdomain: dot-separated labels of lower-case letters, digits
/// and `-`, each starting and ending with a letter or digit; at most 253
/// characters.
fn dns_subdomain(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= 253
        && text.split('.').all(|part| {
            let bytes = part.as_bytes();
            !bytes.is_empty()
                && bytes[0].is_ascii_alphanumeric()
                && bytes[bytes.len() - 1].is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || *b == b'-')
        })
}

fn check_key(key: &str, text: &str) -> Result<(), String> {
    label_key(key).map_err(|why| format!("{text:?}: {why}"))
}

fn check_value(value: &str, text: &str) -> Result<(), String> {
    label_value(value).map_err(|why| format!("{text:?}: {why}"))
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

    /// F6: the label syntax is Kubernetes', the same for applying and
    /// selecting.
    #[test]
    fn f6_labels_follow_kubernetes_syntax() {
        for good in [
            "a",
            "app.kubernetes.io/name",
            "jackin.dev/source",
            "Team_1.x",
            &"k".repeat(63),
            &format!("{}/n", "d".repeat(253)),
        ] {
            assert_eq!(label_key(good), Ok(()), "{good}");
        }
        for bad in [
            "",
            "-a",
            "a-",
            "a b",
            "x/",
            "/x",
            "Upper.Case/x",
            "a/b/c",
            "d..e/x",
            &"k".repeat(64),
            "\u{1b}[31m",
        ] {
            assert!(label_key(bad).is_err(), "{bad:?}");
        }
        for good in ["", "a", "v1.2_3-x", &"v".repeat(63)] {
            assert_eq!(label_value(good), Ok(()), "{good}");
        }
        for bad in ["\u{1b}[31m", "-a", "a.", "a b", "ü", &"v".repeat(64)] {
            let err = label_value(bad).unwrap_err();
            assert!(
                !err.contains('\u{1b}'),
                "the escape is shown escaped: {err}"
            );
        }
        assert!(Selector::parse("team=\u{1b}[31m").is_err());
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
