//! An instance described: its record with its isolated checkouts assessed
//! now, its recent events, and the saves of its discarded work. `jackin
//! describe NAME` prints it; `jackin top`'s `d` pages through it.

use std::collections::HashMap;

use anyhow::Result;
use jackin_act::session;
use jackin_api::Instance;
use jackin_api::instance::InstancePhase;
use jackin_api::setup::{SetupOutcome, SetupStatus};
use jackin_controller::attention;
use jackin_controller::reconcile::assess_checkouts;
use jackin_controller::{Reconciler, Store};
use jackin_files::layout::Layout;
use jackin_plan::attention::Source;
use jiff::Timestamp;

use crate::ops::discarded::count_of;
use crate::output;

/// How many of the setup's last lines `describe` shows when it failed.
const SETUP_LINES_SHOWN: usize = 5;

/// The `Setup:` line, and when the setup failed, the end of its output
/// (as jackin kept it; the agent's text, escaped).
fn setup_lines(layout: &Layout, container: &str, setup: &SetupStatus) -> String {
    let code = setup
        .exit_code
        .map_or_else(String::new, |c| format!(" (exit {c})"));
    let mut text = format!("Setup:            {}{code}\n", setup.outcome.as_str());
    if matches!(setup.outcome, SetupOutcome::Failed | SetupOutcome::TimedOut) {
        let log = session::setup_log_file(layout, container);
        let kept = std::fs::read(&log).unwrap_or_default();
        let kept = String::from_utf8_lossy(&kept);
        let lines: Vec<&str> = kept.lines().collect();
        text.push_str(&format!("  its output ends ({}):\n", log.display()));
        for line in &lines[lines.len().saturating_sub(SETUP_LINES_SHOWN)..] {
            text.push_str(&format!("  | {}\n", output::terminal_safe(line)));
        }
    }
    text
}

/// The `Attention:` line of a running instance: what it asks of its
/// operator now, as a one-shot `get -o wide` sees it, and what decided it
/// (the agent's own report, or its screen). An engine that does not answer
/// costs only the line.
async fn attention_line(store: &Store, obj: &Instance) -> Option<String> {
    if obj.phase() != Some(InstancePhase::Running) {
        return None;
    }
    let engines = crate::context::connect().await.ok()?;
    let reconciler = Reconciler::new(store.clone(), engines);
    let objects = std::slice::from_ref(obj);
    let looks = attention::look(&reconciler, objects, false, &HashMap::new(), None).await;
    let look = looks.get(&obj.metadata.name)?;
    let why = match look.source? {
        Source::Report(reported) => format!("the agent's own report: {}", reported.as_str()),
        Source::Screen => "its screen: output, CPU and writes against the threshold".to_owned(),
        Source::Phase => "its phase".to_owned(),
    };
    Some(format!(
        "{:<18}{} (from {why})\n",
        "Attention:", look.attention?
    ))
}

/// What `describe NAME` prints of an instance.
pub async fn instance_text(store: &Store, name: &str) -> Result<String> {
    let mut obj = match store.get_instance(name) {
        Ok(obj) => obj,
        // Gone, but what it discarded is saved: say where it is.
        Err(e) if count_of(store, name) > 0 => anyhow::bail!(
            "{e}; the work its isolated checkouts held when it was discarded is saved: \
             `jackin get discarded {name}` lists it, `jackin restore-discarded {name}` \
             brings it back"
        ),
        Err(e) => return Err(e.into()),
    };
    let container = obj.container_name().map(str::to_owned);
    // The isolated checkouts as they are now (the status holds what the
    // last full reconcile saw; a pass with nothing to do does not look).
    if let Some(container) = &container {
        let mounts = assess_checkouts(store.layout(), container).await?;
        obj.status.get_or_insert_default().mounts = mounts;
    }
    let events = container
        .map(|c| jackin_controller::events::read(store.layout(), &c))
        .unwrap_or_default();
    // When its row last changed: the index keeps it, not the object.
    let updated = store
        .rows()?
        .into_iter()
        .find(|row| row.name == name)
        .and_then(|row| row.updated_at);
    let mut text = output::describe::instance(&obj, updated, &events, Timestamp::now());
    if let Some(line) = attention_line(store, &obj).await {
        text.push_str(&line);
    }
    if let (Some(setup), Some(container)) = (
        obj.status.as_ref().and_then(|s| s.setup.as_ref()),
        obj.container_name(),
    ) {
        text.push_str(&setup_lines(store.layout(), container, setup));
    }
    // Earlier instances of this name whose discarded work is still saved.
    let saves = count_of(store, name);
    if saves > 0 {
        text.push_str(&format!(
            "Discarded:    {saves} {} of earlier sessions named {name} (`jackin get discarded \
             {name}`)\n",
            output::plural(saves, "save", "saves")
        ));
    }
    Ok(text)
}
