//! Scrubbing the values jackin handed a session (its secrets) out of what
//! jackin keeps of the agent's output.
//!
//! The agent may print a key it was given (`echo $ANTHROPIC_API_KEY`): on
//! its own screen that is its business, but what jackin stores of that
//! screen (the controller's published look, an event, a status line) must
//! not hold it: nothing under `$JACKIN_HOME` holds a handed-over value.
//! The values are known only where the container is (the engine's record
//! of its environment); which of its variables are secrets is the pinned
//! recipe's word ([`secret_names`]): those resolved from a reference, never
//! the plain values the spec writes out.

use std::collections::BTreeSet;

use jackin_api::credentials::AuthForward;
use jackin_api::instance::Recipe;

/// What stands in a scrubbed value's place.
pub const REDACTED: &str = "[redacted]";

/// The shortest value scrubbed, and the shortest part of one scrubbed where
/// a line cuts it: shorter strings are ordinary words (and say too little
/// of a key to matter).
pub const MIN_SECRET_BYTES: usize = 8;

/// The variables of a session whose values jackin resolved from a
/// reference and handed to the engine: `spec.env`'s references, the
/// credential sets' variables under `authForward: token`, the provider's
/// key.
pub fn secret_names(recipe: &Recipe) -> BTreeSet<String> {
    let mut names: BTreeSet<String> = recipe
        .env
        .iter()
        .filter(|var| var.value_from.is_some())
        .map(|var| var.name.clone())
        .collect();
    if let Some(credentials) = recipe
        .credentials
        .as_ref()
        .filter(|c| c.mode == AuthForward::Token)
    {
        names.extend(
            credentials
                .sets
                .iter()
                .flat_map(|set| &set.env)
                .map(|var| var.name.clone()),
        );
    }
    if let Some(key) = recipe.provider.as_ref().and_then(|p| p.key.as_ref()) {
        names.insert(key.name.clone());
    }
    names
}

/// The secret values of one container, ready to scrub text with.
/// Deliberately not `Debug`: it holds values.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Redactor {
    /// Longest first, so that a value holding another is scrubbed whole.
    values: Vec<Vec<u8>>,
}

impl Redactor {
    /// The values of `names` in `env` (`NAME=value`, as the engine keeps a
    /// container's environment); values shorter than [`MIN_SECRET_BYTES`]
    /// are left out.
    pub fn from_env(env: &[String], names: &BTreeSet<String>) -> Self {
        let mut values: Vec<Vec<u8>> = env
            .iter()
            .filter_map(|entry| entry.split_once('='))
            .filter(|(name, value)| names.contains(*name) && value.len() >= MIN_SECRET_BYTES)
            .map(|(_, value)| value.as_bytes().to_vec())
            .collect();
        values.sort_by_key(|v| std::cmp::Reverse(v.len()));
        values.dedup();
        Self { values }
    }

    /// Whether it scrubs nothing.
    pub fn is_empty(&self) -> bool {
        self.values.is_empty()
    }

    /// `line` with every value replaced by [`REDACTED`], and so is the part
    /// of one a screen's edge cut: a line that starts with a value's end
    /// or ends with its start (a key wrapped across rows), at least
    /// [`MIN_SECRET_BYTES`] of it.
    pub fn scrub(&self, line: &[u8]) -> Vec<u8> {
        let mut out = line.to_vec();
        for value in &self.values {
            out = replace_all(&out, value);
        }
        for value in &self.values {
            out = scrub_cut_ends(out, value);
        }
        out
    }

    /// [`Redactor::scrub`] of text.
    pub fn scrub_str(&self, line: &str) -> String {
        match self.is_empty() {
            true => line.to_owned(),
            false => String::from_utf8_lossy(&self.scrub(line.as_bytes())).into_owned(),
        }
    }
}

fn replace_all(text: &[u8], value: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.windows(value.len()).position(|w| w == value) {
        out.extend_from_slice(&rest[..at]);
        out.extend_from_slice(REDACTED.as_bytes());
        rest = &rest[at + value.len()..];
    }
    out.extend_from_slice(rest);
    out
}

/// A line that starts with the end of `value` or ends with its start, at
/// least [`MIN_SECRET_BYTES`] long, has that part scrubbed.
fn scrub_cut_ends(mut line: Vec<u8>, value: &[u8]) -> Vec<u8> {
    let end = longest_part(&line, value, |line, n| line.ends_with(&value[..n]));
    if let Some(n) = end {
        line.truncate(line.len() - n);
        line.extend_from_slice(REDACTED.as_bytes());
    }
    let start = longest_part(&line, value, |line, n| {
        line.starts_with(&value[value.len() - n..])
    });
    if let Some(n) = start {
        line.splice(..n, REDACTED.bytes());
    }
    line
}

/// The longest length `n`, at least [`MIN_SECRET_BYTES`] and shorter than
/// `value` (a whole one is scrubbed already), for which `fits(line, n)`.
fn longest_part(line: &[u8], value: &[u8], fits: impl Fn(&[u8], usize) -> bool) -> Option<usize> {
    (MIN_SECRET_BYTES..value.len().min(line.len() + 1))
        .rev()
        .find(|n| fits(line, *n))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn only_the_named_values_long_enough_to_be_secrets_are_scrubbed() {
        let env = [
            "ANTHROPIC_API_KEY=sk-ant-0123456789".to_owned(),
            "HOME=/home/agent".to_owned(),
            "SHORT=abc".to_owned(),
        ];
        let redactor = Redactor::from_env(&env, &names(&["ANTHROPIC_API_KEY", "SHORT"]));
        assert_eq!(
            redactor.scrub_str("key is sk-ant-0123456789, home /home/agent, abc"),
            "key is [redacted], home /home/agent, abc"
        );
        assert_eq!(
            redactor.scrub(b"sk-ant-0123456789sk-ant-0123456789"),
            b"[redacted][redacted]"
        );
        assert!(Redactor::from_env(&env, &names(&[])).is_empty());
    }

    #[test]
    fn a_value_cut_by_the_screens_edge_is_scrubbed_too() {
        let env = ["KEY=sk-ant-0123456789abcdef".to_owned()];
        let redactor = Redactor::from_env(&env, &names(&["KEY"]));
        // The row a wrapped key ends on, and the row it starts on.
        assert_eq!(redactor.scrub(b"456789abcdef done"), b"[redacted] done");
        assert_eq!(redactor.scrub(b"key: sk-ant-0123"), b"key: [redacted]");
        // Less than the least part is an ordinary word.
        assert_eq!(redactor.scrub(b"cdef done"), b"cdef done");
    }

    #[test]
    fn the_secrets_are_the_references_not_the_plain_values() {
        use jackin_api::credentials::{AuthForward, CredentialSet, PinnedCredentials, host_env};
        use jackin_api::instance::EnvVar;
        let plain = EnvVar {
            name: "MODE".into(),
            value: Some("fast".into()),
            value_from: None,
        };
        let recipe = Recipe {
            env: vec![plain, host_env("API_TOKEN")],
            credentials: Some(PinnedCredentials {
                mode: AuthForward::Token,
                sets: vec![CredentialSet {
                    name: "gh".into(),
                    env: vec![host_env("GH_TOKEN")],
                    ..Default::default()
                }],
            }),
            ..Default::default()
        };
        assert_eq!(secret_names(&recipe), names(&["API_TOKEN", "GH_TOKEN"]));
        let synced = Recipe {
            credentials: Some(PinnedCredentials {
                mode: AuthForward::Sync,
                ..recipe.credentials.clone().unwrap()
            }),
            ..recipe
        };
        assert_eq!(secret_names(&synced), names(&["API_TOKEN"]));
    }
}
