//! How `describe` shows the operator's own agent setup
//! (`operatorConfig`): whether it goes, and what the last start copied and
//! refused, by place, never by content.

use std::fmt::Write as _;

use jackin_api::instance::{OperatorConfigStatus, Recipe};
use jackin_api::operator_config::OperatorConfigMode;

/// The `Operator config` field of `describe`, one line a place; none for a
/// session pinned without it (`none`, the default). The lines name files
/// the agent may have named: the caller makes them terminal-safe.
pub fn summary(recipe: &Recipe, record: Option<&OperatorConfigStatus>) -> Option<String> {
    if recipe.operator_config != Some(OperatorConfigMode::Sync) {
        return None;
    }
    let mut out =
        "operatorConfig sync: copied from the operator's home before every start".to_owned();
    match record {
        None => out.push_str("; nothing copied yet"),
        Some(record) if record.copied.is_empty() && record.refused.is_empty() => {
            out.push_str("; the host holds none of the agent's setup");
        }
        Some(record) => {
            for line in &record.copied {
                let _ = write!(out, "\n  {line}");
            }
            for line in &record.refused {
                let _ = write!(out, "\n  refused: {line}");
            }
        }
    }
    Some(out)
}
