//! The suite's own contract (defect S1): one failing test binary must not
//! hide the rest. A timed assertion once stopped `cargo test` at
//! `tests/idle.rs`, and 157 tests and the quickstart check never ran.

use std::path::Path;

/// `scripts/test`, the README's test command that `.ci/run` calls, runs
/// every test binary even when one fails, and reports all the failures.
#[test]
fn s1_scripts_test_runs_every_test_binary_even_when_one_fails() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../scripts/test");
    let text = std::fs::read_to_string(&script).unwrap();
    let runs: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|line| line.starts_with("cargo test"))
        .collect();
    assert!(
        !runs.is_empty(),
        "{}: no `cargo test` line",
        script.display()
    );
    for line in runs {
        assert!(
            line.split_whitespace().any(|word| word == "--no-fail-fast"),
            "{}: `{line}` stops at the first failing test binary",
            script.display()
        );
    }
}
