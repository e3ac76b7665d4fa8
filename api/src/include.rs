//! The patterns of a mount's `include` (and of a repository's
//! `.worktreeinclude`): which untracked files of the operator's checkout a
//! new isolated checkout gets a copy of. A pattern is a path relative to the
//! mount's source whose segments may hold `*` (any run of characters) and
//! `?` (one character), matched within that one segment; nothing else is
//! special. What a pattern may not be is refused when the manifest is
//! applied, so that nothing it names can reach outside the source.

use crate::instance::{Isolation, MountSpec};

/// The most patterns a mount (or a `.worktreeinclude`) gives.
pub const MAX_PATTERNS: usize = 100;
/// The longest pattern, in bytes.
pub const MAX_PATTERN_BYTES: usize = 1024;

/// Why `pattern` is not one jackin can follow, if it is not: empty,
/// absolute, a `.`, `..` or empty segment, a `.git` segment, a trailing
/// `/`, a control character, or a character of another pattern syntax
/// (`[`, `]`, `{`, `}`, `\`, `**`, a leading `!`).
pub fn refusal(pattern: &str) -> Option<String> {
    let expected = "expected a path relative to the mount's source, `*` and `?` matching \
                    within one segment (e.g. .env, config/local.yml, certs/*.pem)";
    let why = if pattern.is_empty() {
        "is empty".to_owned()
    } else if pattern.len() > MAX_PATTERN_BYTES {
        format!("is longer than {MAX_PATTERN_BYTES} bytes")
    } else if pattern.starts_with('/') || pattern.starts_with('~') {
        "is absolute".to_owned()
    } else if pattern.chars().any(char::is_control) {
        "holds a control character".to_owned()
    } else if let Some(c) = pattern.chars().find(|c| "[]{}\\".contains(*c)) {
        format!("holds {c:?}, which jackin does not support")
    } else if pattern.starts_with('!') {
        "starts with '!' (a negation), which jackin does not support".to_owned()
    } else if pattern.contains("**") {
        "holds '**', which jackin does not support".to_owned()
    } else if pattern.ends_with('/') {
        "ends with '/': name the files (dir/*), not the directory".to_owned()
    } else if let Some(part) = pattern
        .split('/')
        .find(|p| p.is_empty() || *p == "." || *p == ".." || p.eq_ignore_ascii_case(".git"))
    {
        format!("has the segment {part:?}, which could lead outside the checkout's files")
    } else {
        return None;
    };
    Some(format!("{pattern:?} {why}: {expected}"))
}

/// Whether the name `name` matches the pattern segment `segment` (`*` any
/// run of characters, `?` one).
pub fn segment_matches(segment: &str, name: &str) -> bool {
    let (pattern, name): (Vec<char>, Vec<char>) =
        (segment.chars().collect(), name.chars().collect());
    // The classic two-pointer wildcard match, backtracking to the last `*`.
    let (mut p, mut n, mut star, mut mark) = (0, 0, None, 0);
    while n < name.len() {
        if p < pattern.len() && (pattern[p] == '?' || pattern[p] == name[n]) {
            p += 1;
            n += 1;
        } else if p < pattern.len() && pattern[p] == '*' {
            star = Some(p);
            mark = n;
            p += 1;
        } else if let Some(s) = star {
            p = s + 1;
            mark += 1;
            n = mark;
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|c| *c == '*')
}

/// The patterns of a `.worktreeinclude` file: one a line, blank lines and
/// `#` comments skipped, a leading `/` (anchoring, as in `.gitignore`)
/// dropped; those jackin cannot follow are returned apart, with why.
pub fn parse_file(text: &str) -> (Vec<String>, Vec<String>) {
    let (mut patterns, mut refused) = (Vec::new(), Vec::new());
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let pattern = line.strip_prefix('/').unwrap_or(line);
        match refusal(pattern) {
            Some(why) => refused.push(why),
            None if patterns.len() >= MAX_PATTERNS => {
                refused.push(format!(
                    "{pattern:?}: past the first {MAX_PATTERNS} patterns"
                ));
            }
            None => patterns.push(pattern.to_owned()),
        }
    }
    (patterns, refused)
}

/// What is wrong with a mount's `include`, as (field path, message): it is
/// only for an isolated mount, and each pattern must be one jackin follows
/// (see [`refusal`]).
pub fn mount_errors(at: &str, mount: &MountSpec) -> Vec<(String, String)> {
    let mut errors = Vec::new();
    if !mount.include.is_empty() && mount.isolation == Isolation::Shared {
        let why = "is for a new isolated checkout: expected isolation: clone or worktree";
        errors.push((format!("{at}.include"), why.to_owned()));
    }
    if mount.include.len() > MAX_PATTERNS {
        let why = format!("expected at most {MAX_PATTERNS} patterns");
        errors.push((format!("{at}.include"), why));
    }
    for (k, pattern) in mount.include.iter().enumerate() {
        if let Some(why) = refusal(pattern) {
            errors.push((format!("{at}.include[{k}]"), why));
        }
    }
    errors
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_relative_paths_with_star_and_question_mark_are_patterns() {
        for good in [".env", "config/local.yml", "certs/*.pem", "a?b/*", "*"] {
            assert_eq!(refusal(good), None, "{good}");
        }
        for bad in [
            "",
            "/etc/passwd",
            "~/x",
            "../x",
            "a/../b",
            "a//b",
            "./a",
            "a/",
            "[ab]",
            "{a,b}",
            "a\\b",
            "**/x",
            "!x",
            ".git/config",
            "sub/.GIT/x",
            "a\nb",
        ] {
            let why = refusal(bad).unwrap_or_else(|| panic!("{bad:?} accepted"));
            assert!(why.contains("expected a path relative"), "{why}");
        }
        assert!(refusal(&"a".repeat(MAX_PATTERN_BYTES + 1)).is_some());
    }

    #[test]
    fn a_segment_matches_with_star_and_question_mark_only() {
        let yes = [
            ("*", ".env"),
            ("*.pem", "a.pem"),
            ("*.pem", ".pem"),
            ("a?c", "abc"),
            ("*a*b", "xxaxxb"),
            ("local.yml", "local.yml"),
            ("*", ""),
        ];
        for (segment, name) in yes {
            assert!(segment_matches(segment, name), "{segment} {name}");
        }
        let no = [
            ("*.pem", "a.pem.bak"),
            ("a?c", "ac"),
            ("local.yml", "local.yaml"),
            ("*a*b", "xxaxxbc"),
        ];
        for (segment, name) in no {
            assert!(!segment_matches(segment, name), "{segment} {name}");
        }
    }

    #[test]
    fn a_worktreeinclude_file_skips_comments_and_drops_a_leading_slash() {
        let (patterns, refused) = parse_file("# secrets\n\n/.env\n  config/*.yml \n../up\n");
        assert_eq!(patterns, [".env", "config/*.yml"]);
        assert_eq!(refused.len(), 1, "{refused:?}");
        assert!(refused[0].contains("\"../up\""), "{refused:?}");
    }

    #[test]
    fn include_is_for_isolated_mounts_and_errors_name_the_field() {
        let mut mount = MountSpec {
            src: "/src".into(),
            dst: "/w".into(),
            include: vec![".env".into(), "../x".into()],
            ..Default::default()
        };
        let errors = mount_errors("spec.mounts[0]", &mount);
        let paths: Vec<&str> = errors.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            ["spec.mounts[0].include", "spec.mounts[0].include[1]"]
        );
        mount.isolation = Isolation::Clone;
        mount.include.pop();
        assert!(mount_errors("spec.mounts[0]", &mount).is_empty());
    }
}
