//! The diff view (`D`): the unfinished work of an instance's isolated
//! checkouts, read by `jackin_checkouts::work_diff` (the confined git,
//! with no text conversion, external diff or colour), shown in top's own
//! pager. Every line is the agent's text: tabs become spaces and every
//! control or invisible format character is shown escaped
//! (`output::terminal_safe`), as the last line and the log are.

use anyhow::{Context, Result};
use jackin_checkouts::isolation::read_records;
use jackin_checkouts::work_diff::{self, WorkDiff};
use jackin_controller::Store;

use crate::output;

/// The pager's lines for instance `name`'s checkouts.
pub async fn diff_lines(store: &Store, name: &str) -> Result<Vec<String>> {
    let obj = store.get_instance(name)?;
    let Some(container) = obj.container_name().map(str::to_owned) else {
        return Ok(vec![format!(
            "instance/{name} has no unit yet: no checkouts"
        )]);
    };
    let layout = store.layout().clone();
    let diffs = jackin_files::offload::blocking(move || {
        let records = read_records(&layout, &container)?;
        Ok::<_, anyhow::Error>(
            records
                .into_iter()
                .map(|record| {
                    let diff = work_diff::work_diff(&record);
                    (record, diff)
                })
                .collect::<Vec<_>>(),
        )
    })
    .await
    .with_context(|| format!("cannot read instance/{name}'s checkouts"))?;
    if diffs.is_empty() {
        return Ok(vec![format!(
            "instance/{name} has no isolated checkouts: nothing of its work is jackin's to show"
        )]);
    }
    let mut lines = Vec::new();
    for (record, diff) in diffs {
        lines.push(output::terminal_safe(&format!(
            "checkout {} ({} of {}, base {})",
            record.dst,
            record.isolation.as_str(),
            record.src,
            &record.base_commit[..record.base_commit.len().min(12)]
        )));
        match diff {
            Ok(diff) => lines.extend(checkout_lines(&diff)),
            Err(e) => lines.push(agent_text(&format!("  cannot read it: {e}"))),
        }
        lines.push(String::new());
    }
    Ok(lines)
}

/// One checkout's tracked changes, then its untracked files.
fn checkout_lines(diff: &WorkDiff) -> Vec<String> {
    let mut lines = Vec::new();
    match diff.tracked.is_empty() {
        true => lines.push("tracked changes against the base: none".to_owned()),
        false => {
            lines.push("tracked changes against the base:".to_owned());
            lines.extend(diff.tracked.lines().map(agent_text));
        }
    }
    if diff.tracked_cut {
        lines.push(format!(
            "(cut: the changes are longer than {} MiB)",
            work_diff::MAX_DIFF_BYTES >> 20
        ));
    }
    match diff.untracked.is_empty() {
        true => lines.push("untracked files: none".to_owned()),
        false => lines.push(format!("untracked files: {}", diff.untracked.len())),
    }
    for file in &diff.untracked {
        match &file.contents {
            Ok(text) => {
                lines.push(agent_text(&format!(
                    "+++ {} (untracked, {} lines)",
                    file.path,
                    text.lines().count()
                )));
                lines.extend(text.lines().map(|line| agent_text(&format!("+{line}"))));
            }
            Err(why) => lines.push(agent_text(&format!("+++ {} ({why})", file.path))),
        }
    }
    lines
}

/// A line of the agent's text as the pager shows it: tabs as spaces, every
/// control and invisible format character escaped.
fn agent_text(line: &str) -> String {
    output::terminal_safe(&line.replace('\t', "    "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_checkouts::work_diff::Untracked;

    #[test]
    fn the_agents_text_in_a_diff_is_shown_escaped() {
        let diff = WorkDiff {
            tracked: "--- a/x\n+++ b/x\n+\u{1b}]0;owned\u{7}\tnew\u{202e}\n".into(),
            tracked_cut: false,
            untracked: vec![
                Untracked {
                    path: "evil\u{1b}[2Jname".into(),
                    contents: Ok("one\u{9b}6n\n".into()),
                },
                Untracked {
                    path: "fifo".into(),
                    contents: Err("not read: not a regular file".into()),
                },
            ],
        };
        let lines = checkout_lines(&diff);
        for line in &lines {
            assert!(!line.chars().any(char::is_control), "{line:?}");
        }
        assert!(
            lines.contains(&"+\\u{1b}]0;owned\\u{7}    new\\u{202e}".to_owned()),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"+++ evil\\u{1b}[2Jname (untracked, 1 lines)".to_owned()),
            "{lines:#?}"
        );
        assert!(
            lines.contains(&"+++ fifo (not read: not a regular file)".to_owned()),
            "{lines:#?}"
        );
    }
}
