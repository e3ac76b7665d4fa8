//! Error messages about a file that never repeat what the file holds.
//!
//! A parser's message quotes the value it could not use (`invalid type:
//! string "root:$6$…", expected …`). When the file is not what it should be
//! (a link to someone's secrets, a record overwritten with anything), that
//! quote would print its contents. These messages keep the place (line,
//! column, field) and what was expected, and drop the value.

/// `message`, a serde error's text, with what it quotes of the file left
/// out: `invalid type: string "x", expected u32` becomes `invalid type,
/// expected u32`; `unknown variant `x`, expected one of …` becomes `unknown
/// variant, expected one of …`, and so does an unknown field (a key is the
/// file's text too: a line of `/etc/shadow` reads as one). The place
/// (line, column, and the field path where the caller has one) and what
/// was expected stay. Any other message is kept as it is.
pub fn without_values(message: &str) -> String {
    for what in ["invalid type: ", "invalid value: "] {
        if let Some(at) = message.find(what) {
            let rest = &message[at + what.len()..];
            let expected = rest.rfind(", expected ").map_or("", |i| &rest[i..]);
            return format!(
                "{}{}{expected}",
                &message[..at],
                what.trim_end_matches(": ")
            );
        }
    }
    for what in ["unknown variant `", "unknown field `"] {
        if let Some(at) = message.find(what) {
            let rest = &message[at + what.len()..];
            // What follows the quoted name is serde's, the name the file's.
            let expected = ["`, expected ", "`, there are no "]
                .iter()
                .find_map(|tail| rest.rfind(tail))
                .map_or("", |i| &rest[i + 1..]);
            return format!(
                "{}{}{expected}",
                &message[..at],
                what.trim_end_matches(" `")
            );
        }
    }
    message.to_owned()
}

/// What is wrong with a JSON file jackin reads, and where, without its
/// contents: `line 3, column 7: invalid type, expected a sequence`.
pub fn json_error(err: &serde_json::Error) -> String {
    let message = err.to_string();
    let suffix = format!(" at line {} column {}", err.line(), err.column());
    let message = message.strip_suffix(&suffix).unwrap_or(&message);
    format!(
        "line {}, column {}: {}",
        err.line(),
        err.column(),
        without_values(message)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_left_out_and_the_place_and_expectation_stay() {
        assert_eq!(
            without_values(r#"invalid type: string "root:$6$x", expected struct TypeMeta"#),
            "invalid type, expected struct TypeMeta"
        );
        assert_eq!(
            without_values("field x: invalid value: integer `7`, expected a port"),
            "field x: invalid value, expected a port"
        );
        assert_eq!(
            without_values("unknown variant `Paused`, expected one of `Running`, `Kept`"),
            "unknown variant, expected one of `Running`, `Kept`"
        );
        assert_eq!(
            without_values("unknown field `root:$6$x:19000:`, expected `base` or `size`"),
            "unknown field, expected `base` or `size`"
        );
        assert_eq!(
            without_values("missing field `kind`"),
            "missing field `kind`"
        );
        let err = serde_json::from_str::<Vec<u32>>("[1, \"secret\"]").unwrap_err();
        let text = json_error(&err);
        assert!(!text.contains("secret"), "{text}");
        assert!(text.starts_with("line 1, column "), "{text}");
        let err = serde_json::from_str::<Vec<u32>>("secret").unwrap_err();
        assert!(!json_error(&err).contains("secret"), "{}", json_error(&err));
    }
}
