//! The overview's state between keys: the rows as shown, the selection, the
//! filter, the order, and what fills the screen besides the table.

use std::collections::HashMap;
use std::io::Write;

use jackin_api::Instance;
use jackin_api::instance::InstancePhase;
use jackin_controller::new_session::last_used;
use jackin_plan::attention::Attention;
use jiff::Timestamp;

use super::picture::Picture;
use crate::output;

/// The widest a last line is shown.
const LAST_LINE_WIDTH: usize = 200;

/// The orders rows can be sorted in, `s` going to the next.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sort {
    /// Needs you first, then working, idle, failed, ended, kept.
    Attention,
    Name,
    /// The newest first.
    Age,
    /// The busiest first.
    Cpu,
    /// The most recently used first.
    LastUse,
}

impl Sort {
    pub fn next(self) -> Self {
        match self {
            Self::Attention => Self::Name,
            Self::Name => Self::Age,
            Self::Age => Self::Cpu,
            Self::Cpu => Self::LastUse,
            Self::LastUse => Self::Attention,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Attention => "attention",
            Self::Name => "name",
            Self::Age => "age",
            Self::Cpu => "cpu",
            Self::LastUse => "last use",
        }
    }
}

/// One instance's row, as shown.
pub struct Shown {
    pub name: String,
    pub cells: [String; 10],
    pub attention: Option<Attention>,
    pub phase: Option<InstancePhase>,
    /// `Running`, with no running container to be seen now: the PHASE cell
    /// says why (`EngineUnreachable`, `ContainerMissing`…), as `get` does.
    pub not_running: bool,
    /// Its running container's id, as the last look found it.
    pub container: Option<String>,
    /// Its published ports, as `get -o wide` shows them (`-`: none).
    pub ports: String,
    created: Option<Timestamp>,
    used: Option<Timestamp>,
    cpu: f64,
}

pub const HEADER: [&str; 10] = [
    "NAME",
    "WORKSPACE/ROLE/AGENT",
    "PHASE",
    "ATTENTION",
    "WORK",
    "CPU",
    "MEM",
    "AGE",
    "USED",
    "LAST LINE",
];

/// Which cells hold the phase and the attention (coloured by them).
pub const PHASE_CELL: usize = 2;
/// See [`PHASE_CELL`].
pub const ATTENTION_CELL: usize = 3;

fn shown(obj: &Instance, picture: &Picture, now: Timestamp) -> Shown {
    let name = obj.metadata.name.clone();
    let look = picture.looks.get(&name).cloned().unwrap_or_default();
    // In use while an operator is attached, and until they leave.
    let used = last_used(obj).max(picture.attached.get(&name).copied());
    let status = obj.status_or_default();
    let cells = [
        name.clone(),
        format!(
            "{}/{}/{}",
            obj.spec.workspace.as_deref().unwrap_or("-"),
            obj.spec.role.name,
            obj.spec.agent
        ),
        output::phase_shown(&status),
        look.attention.map_or("-".into(), |a| a.to_string()),
        picture
            .work
            .get(&name)
            .cloned()
            .unwrap_or_else(|| "-".into()),
        look.cpu_share
            .map_or("-".into(), |share| format!("{:.0}%", share * 100.0)),
        look.memory()
            .map_or("-".into(), |bytes| format!("{}M", bytes / (1 << 20))),
        output::age(obj.metadata.creation_timestamp, now),
        output::age(used, now),
        crate::agent_output::last_line(&look.last_line, LAST_LINE_WIDTH),
    ]
    .map(|cell| output::terminal_safe(&cell));
    Shown {
        name,
        cells,
        attention: look.attention,
        phase: obj.phase(),
        not_running: output::not_running(&status).is_some(),
        container: look.container.clone(),
        ports: output::terminal_safe(&output::ports_shown(obj)),
        created: obj.metadata.creation_timestamp,
        used,
        cpu: look.cpu_share.unwrap_or(0.0),
    }
}

/// What fills the screen besides the table.
pub enum View {
    Table,
    Help,
    /// A text to page through (`l`, `d`, `D`), from line `top`.
    Pager {
        title: String,
        lines: Vec<String>,
        top: usize,
    },
    /// The question before a purge of `name` whose checkouts are clean:
    /// `lines` say what goes.
    ConfirmPurge {
        name: String,
        lines: Vec<String>,
    },
}

/// The overview's state between keys.
pub struct Overview {
    pub rows: Vec<Shown>,
    /// The selected instance, by name, so that a new picture keeps it.
    pub selected: Option<String>,
    pub filter: String,
    pub filtering: bool,
    pub sort: Sort,
    pub view: View,
    /// The preview pane (`Tab`) is open below the table.
    pub preview: bool,
    /// A line for the footer: what the last action did, until the next key.
    pub message: String,
    /// Colours are drawn (`NO_COLOR` is not set).
    pub colour: bool,
    /// Each instance's attention in the last picture, to ring on a change
    /// to `needs you`; `None` before the first.
    attention: Option<HashMap<String, Option<Attention>>>,
}

impl Overview {
    pub fn new(colour: bool) -> Self {
        Self {
            rows: Vec::new(),
            selected: None,
            filter: String::new(),
            filtering: false,
            sort: Sort::Attention,
            view: View::Table,
            preview: false,
            message: String::new(),
            colour,
            attention: None,
        }
    }

    pub fn update(&mut self, picture: &Picture, bell: bool) {
        let now = Timestamp::now();
        let needle = self.filter.to_lowercase();
        let mut rows: Vec<Shown> = picture
            .objects
            .iter()
            .map(|obj| shown(obj, picture, now))
            .filter(|row| {
                needle.is_empty()
                    || row.cells[..5]
                        .iter()
                        .any(|cell| cell.to_lowercase().contains(&needle))
            })
            .collect();
        self.sort_rows(&mut rows);
        let now_attention: HashMap<String, Option<Attention>> = picture
            .objects
            .iter()
            .map(|obj| {
                let name = obj.metadata.name.clone();
                let attention = picture.looks.get(&name).and_then(|l| l.attention);
                (name, attention)
            })
            .collect();
        if bell
            && let Some(before) = &self.attention
            && starts_to_need_you(before, &now_attention)
        {
            let mut stdout = std::io::stdout();
            let _ = stdout.write_all(b"\x07");
            let _ = stdout.flush();
        }
        // The first picture with looks is the baseline: what already
        // needs you when the overview opens rings nothing.
        if !picture.looks.is_empty() || !picture.objects.is_empty() {
            self.attention = Some(now_attention);
        }
        if self
            .selected
            .as_ref()
            .is_none_or(|name| !rows.iter().any(|r| &r.name == name))
        {
            self.selected = rows.first().map(|r| r.name.clone());
        }
        self.rows = rows;
    }

    fn sort_rows(&self, rows: &mut [Shown]) {
        match self.sort {
            Sort::Attention => rows.sort_by(|a, b| {
                (a.attention.is_none(), a.attention, &a.name).cmp(&(
                    b.attention.is_none(),
                    b.attention,
                    &b.name,
                ))
            }),
            Sort::Name => rows.sort_by(|a, b| a.name.cmp(&b.name)),
            Sort::Age => rows.sort_by_key(|r| std::cmp::Reverse(r.created)),
            Sort::Cpu => rows.sort_by(|a, b| b.cpu.total_cmp(&a.cpu)),
            Sort::LastUse => rows.sort_by_key(|r| std::cmp::Reverse(r.used)),
        }
    }

    pub fn index(&self) -> Option<usize> {
        let name = self.selected.as_ref()?;
        self.rows.iter().position(|r| &r.name == name)
    }

    /// The selected row.
    pub fn selected_row(&self) -> Option<&Shown> {
        self.index().map(|i| &self.rows[i])
    }

    pub fn move_by(&mut self, by: isize) {
        if self.rows.is_empty() {
            return;
        }
        let at = self.index().unwrap_or(0) as isize + by;
        let at = at.clamp(0, self.rows.len() as isize - 1) as usize;
        self.selected = Some(self.rows[at].name.clone());
    }
}

/// Whether an instance needs you now that did not in the picture before
/// (a new one that needs you at once included): what rings the bell.
fn starts_to_need_you(
    before: &HashMap<String, Option<Attention>>,
    now: &HashMap<String, Option<Attention>>,
) -> bool {
    now.iter().any(|(name, now)| {
        *now == Some(Attention::NeedsYou)
            && before.get(name).copied().flatten() != Some(Attention::NeedsYou)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bell_rings_when_an_instance_starts_to_need_you_and_only_then() {
        let picture = |rows: &[(&str, Option<Attention>)]| -> HashMap<String, Option<Attention>> {
            rows.iter().map(|(n, a)| ((*n).to_owned(), *a)).collect()
        };
        let working = picture(&[("a", Some(Attention::Working)), ("b", None)]);
        let asking = picture(&[("a", Some(Attention::NeedsYou)), ("b", None)]);
        assert!(starts_to_need_you(&working, &asking));
        // Still needing you: no second ring.
        assert!(!starts_to_need_you(&asking, &asking));
        assert!(!starts_to_need_you(&asking, &working));
        // A new instance that needs you at once.
        let more = picture(&[
            ("a", Some(Attention::NeedsYou)),
            ("c", Some(Attention::NeedsYou)),
        ]);
        assert!(starts_to_need_you(&asking, &more));
    }
}
