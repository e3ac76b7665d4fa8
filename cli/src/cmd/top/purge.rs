//! The question before a purge (`p`): it names what goes. With clean
//! checkouts (or none) it is asked in the overview and answered with one
//! key (`y`); with unfinished work it is the question `set-phase purged`
//! asks, on the normal screen, after the unfinished work. Either way a
//! cancel changes nothing and is no error.

use anyhow::Result;
use jackin_checkouts::assess::has_unfinished_work;
use jackin_controller::Store;
use jackin_controller::reconcile::assess_checkouts;

use crate::ops::discarded;

/// What `p` leads to.
pub enum PurgeQuestion {
    /// Clean checkouts: these lines, then `y` or a cancel.
    Clean(Vec<String>),
    /// Unfinished work: the purge's own question, after these lines.
    Unfinished(Vec<String>),
}

/// The question before purging `name`, from its checkouts assessed now.
pub async fn question(store: &Store, name: &str) -> Result<PurgeQuestion> {
    let obj = store.get_instance(name)?;
    let mounts = match obj.container_name() {
        Some(container) => assess_checkouts(store.layout(), container).await?,
        None => Vec::new(),
    };
    let unfinished = mounts.iter().any(has_unfinished_work);
    let mut lines = vec![
        format!("Purge instance/{name}?"),
        String::new(),
        "What goes:".to_owned(),
        "  - its container and its unit (home, volumes, session records)".to_owned(),
        format!(
            "  - its agent's conversation: saved under discarded/ for {} (`jackin get \
             discarded`, `jackin restore-discarded`)",
            discarded::retention_of(store)
        ),
    ];
    if mounts.is_empty() {
        lines.push("  - no isolated checkouts".to_owned());
    }
    for mount in &mounts {
        let state = match has_unfinished_work(mount) {
            true => "unfinished work, saved under discarded/ as well",
            false => "clean: nothing unfinished",
        };
        lines.push(crate::output::terminal_safe(&format!(
            "  - its checkout {} ({state})",
            mount.dst
        )));
    }
    Ok(match unfinished {
        false => {
            lines.push(String::new());
            lines.push("y purges it; n or Esc cancels.".to_owned());
            PurgeQuestion::Clean(lines)
        }
        true => PurgeQuestion::Unfinished(lines),
    })
}

/// The footer's word for a purge the operator did not want.
pub fn cancelled(name: &str) -> String {
    format!("purge of {name} cancelled: nothing changed")
}
