//! The unique identity of an instance: its container and unit-directory name.

use crate::validate::MAX_NAME_LEN;

/// `jk-<id>-<workspace>-<role>`, or `jk-<id>-<role>` without a workspace.
///
/// Every part is an already-validated DNS label, and `id` is lower-case
/// alphanumeric, so the result is a DNS label too; the workspace and role are
/// shortened when needed to keep it within 63 characters. Uniqueness comes
/// from `id`; the names are only there for people reading `docker ps`.
pub fn container_name(id: &str, workspace: Option<&str>, role: &str) -> String {
    let mut name = format!("jk-{id}");
    let budget = MAX_NAME_LEN - name.len();
    let parts: Vec<&str> = workspace.into_iter().chain([role]).collect();
    // Each part costs its length plus one separator.
    let share = budget / parts.len() - 1;
    for part in parts {
        let part = part[..part.len().min(share)].trim_end_matches('-');
        if !part.is_empty() {
            name.push('-');
            name.push_str(part);
        }
    }
    name
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::validate::dns_label;

    #[test]
    fn short_parts_are_kept_whole() {
        assert_eq!(
            container_name("7f3k2a", Some("jackin"), "the-architect"),
            "jk-7f3k2a-jackin-the-architect"
        );
        assert_eq!(container_name("7f3k2a", None, "coder"), "jk-7f3k2a-coder");
    }

    #[test]
    fn long_parts_are_shortened_to_a_valid_label() {
        let long = format!("a{}", "-b".repeat(31));
        let name = container_name("7f3k2a", Some(&long), &long);
        assert!(name.len() <= 63, "{name}");
        assert_eq!(dns_label(&name), Ok(()));
        assert!(name.starts_with("jk-7f3k2a-a-b"));
    }
}
