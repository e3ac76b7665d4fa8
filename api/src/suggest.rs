//! "Did you mean": the known name closest to a mistyped one, for every
//! error that names something unknown (a field, a value of a field with
//! fixed values, a workspace, role or agent).

/// The name of `known` closest to `name`, when one is close enough to be a
/// likely typo.
pub fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (edit_distance(name, k), k))
        .filter(|(distance, k)| *distance <= k.len().max(name.len()) / 3 + 1)
        .min()
        .map(|(_, k)| k)
}

/// A reader's message about an unknown field or value (``unknown field
/// `agnet`, expected one of phase, agent``), with the closest expected
/// name added (``; did you mean `agent`?``); any other message as it is.
pub fn unknown_name_explained(message: String) -> String {
    let Some(suggestion) = suggestion_for(&message) else {
        return message;
    };
    format!("{message}; did you mean `{suggestion}`?")
}

fn suggestion_for(message: &str) -> Option<&str> {
    let rest = message
        .strip_prefix("unknown field `")
        .or_else(|| message.strip_prefix("unknown variant `"))?;
    let (unknown, rest) = rest.split_once('`')?;
    let expected = rest.split_once("expected one of ")?.1;
    let names = expected.split(", ").map(|name| name.trim_matches('`'));
    closest(unknown, names)
}

/// The number of single-character edits between `a` and `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_field_or_value_names_the_closest_expected_one() {
        let field = "unknown field `agnet`, expected one of phase, workspace, role, agent";
        assert_eq!(
            unknown_name_explained(field.into()),
            format!("{field}; did you mean `agent`?")
        );
        let value = "unknown variant `tokn`, expected one of `sync`, `token`, `none`";
        assert!(unknown_name_explained(value.into()).ends_with("; did you mean `token`?"));
        // Nothing close, or nothing unknown: the message as it is.
        let far = "unknown field `zzzzzzzz`, expected one of phase, role";
        assert_eq!(unknown_name_explained(far.into()), far);
        let other = "missing field `kind`";
        assert_eq!(unknown_name_explained(other.into()), other);
    }

    #[test]
    fn only_a_likely_typo_is_close() {
        let known = ["claude", "codex", "aider"];
        assert_eq!(closest("codx", known.into_iter()), Some("codex"));
        assert_eq!(closest("claud", known.into_iter()), Some("claude"));
        assert_eq!(closest("gemini", known.into_iter()), None);
    }
}
