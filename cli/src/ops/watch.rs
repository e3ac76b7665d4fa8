//! `get -w`: the listing of instances, then a line each time one appears,
//! goes, or changes what it shows, until interrupted. `jackin get -w` and
//! `jackin top` on no terminal (with attention) watch this way.
//!
//! What every view of instances shows (`get`, each look of `get -w` and of
//! `top`) is [`as_listed`]: the records, marked where their engines list
//! something else now (a container gone or stopped, an engine that does
//! not answer), so that no view claims `Running` for what it cannot see.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::io::Write;

use anyhow::Result;
use jackin_api::Instance;
use jackin_api::meta::{ConditionStatus, find_condition, set_condition};
use jackin_api::names::{condition, reason};
use jackin_api::selector::Selector;
use jackin_controller::attention::{self, Look};
use jackin_controller::engines::{EngineName, display_name};
use jackin_controller::listing::{self, Listing};
use jackin_controller::{Reconciler, Store};
use jiff::Timestamp;

use crate::args::Format;
use crate::output;

/// How often `get -w` looks.
const WATCH_EVERY: std::time::Duration = std::time::Duration::from_secs(1);

/// How often, in looks, a watch with attention reads the counters too.
const STATS_EVERY_LOOKS: u32 = 5;

/// What a watch shows of an instance: its phase (as its PHASE cell shows
/// it), its readiness (`status/reason`) and its attention; a row is printed
/// when it changes.
type Shown = (String, String, String);

/// What each of `objects` shows now, and those whose showing differs from
/// `seen` (new ones included).
fn changes(
    seen: &BTreeMap<String, Shown>,
    objects: Vec<Instance>,
    looks: &HashMap<String, Look>,
) -> (BTreeMap<String, Shown>, Vec<Instance>) {
    let mut current = BTreeMap::new();
    let mut changed = Vec::new();
    for obj in objects {
        let status = obj.status_or_default();
        let ready = find_condition(&status.conditions, condition::READY)
            .map(|c| format!("{}/{}", c.status, c.reason))
            .unwrap_or_default();
        let state = (
            output::phase_shown(&status),
            ready,
            looks
                .get(&obj.metadata.name)
                .and_then(|l| l.attention)
                .map(|a| a.to_string())
                .unwrap_or_default(),
        );
        if seen.get(&obj.metadata.name) != Some(&state) {
            changed.push(obj.clone());
        }
        current.insert(obj.metadata.name.clone(), state);
    }
    (current, changed)
}

/// `objects` as their engines list them now, and the listing: where an
/// engine shows something other than the record (the container removed or
/// stopped behind jackin's back, the engine not answering), the printed
/// copy's `Ready` condition says so when `mark` (a table), with the reason
/// the loop's next look will record; the record itself is the loop's to
/// change, and YAML or JSON print it as it is. `begun` holds the listings
/// already under way. Whoever prints warns of the engines that did not
/// answer ([`warn_unanswered`]); `top`'s screen shows them in its rows.
pub async fn as_listed(
    reconciler: &Reconciler,
    objects: Vec<Instance>,
    mark: bool,
    begun: listing::Begun,
) -> (Vec<Instance>, Listing) {
    let workspaces = attention::workspaces(reconciler);
    let listed: Vec<&Instance> = objects.iter().collect();
    let listing = listing::list_begun(reconciler, &listed, &workspaces, begun).await;
    let now = Timestamp::now();
    let objects = objects
        .into_iter()
        .map(|mut obj| {
            let recorded = |reason: &str| {
                obj.status.as_ref().is_some_and(|s| {
                    find_condition(&s.conditions, condition::READY)
                        .is_some_and(|c| c.status == ConditionStatus::False && c.reason == reason)
                })
            };
            // What the loop recorded already says more (its engine's error).
            let shown = listing
                .disagreement(&obj)
                .filter(|(r, _)| mark && !recorded(r));
            if let Some((reason, seen)) = shown {
                let status = obj.status.get_or_insert_default();
                set_condition(
                    &mut status.conditions,
                    condition::READY,
                    ConditionStatus::False,
                    reason,
                    &format!("{seen} (listed now; the loop records it next)"),
                    now,
                );
            }
            obj
        })
        .collect();
    (objects, listing)
}

/// Warns on standard error of each engine that did not answer `listing`,
/// but those in `warned` (a watch warns of an engine once while it stays
/// silent); returns the engines that did not answer.
pub fn warn_unanswered(listing: &Listing, warned: &BTreeSet<EngineName>) -> BTreeSet<EngineName> {
    let mut unanswered = BTreeSet::new();
    for (engine, why) in listing.unanswered() {
        let name = engine.map(str::to_owned);
        if !warned.contains(&name) {
            eprintln!(
                "warning: engine {}: {}; what is shown of its instances is what was last \
                 recorded (a table marks them {})",
                output::terminal_safe(display_name(engine)),
                output::terminal_safe(why),
                reason::ENGINE_UNREACHABLE,
            );
        }
        unanswered.insert(name);
    }
    unanswered
}

/// `get -w`: the listing, then a line each time an instance appears, goes,
/// or changes its phase or readiness as [`as_listed`] shows them (its
/// engine ceasing to answer, or answering again), until interrupted; with
/// `only`, that instance alone. With `attention` (`jackin top` on no
/// terminal), a wide listing ends with each one's attention, and a change
/// of it is a line too.
pub async fn watch(
    store: &Store,
    format: Format,
    selector: Option<&Selector>,
    only: Option<&str>,
    attention: bool,
) -> Result<()> {
    let wide = format == Format::Wide;
    let mut seen: BTreeMap<String, Shown> = BTreeMap::new();
    let mut first = true;
    let mut stdout = std::io::stdout();
    let reconciler = Reconciler::new(
        store.clone(),
        jackin_controller::engines::Engines::new(None),
    );
    let mut looks = HashMap::new();
    // A watch lives on: each running container's output is read from its
    // stream, so that an unfinished line counts.
    let live = jackin_controller::live_output::LiveOutputs::default();
    let mut round = 0u32;
    // The first table's column widths, kept: each later row lines up
    // under the header printed once.
    let mut widths = Vec::new();
    // The engines that did not answer the last look, each warned of once.
    let mut unanswered = BTreeSet::new();
    loop {
        let now = Timestamp::now();
        let objects: Vec<Instance> = store
            .list_instances()?
            .instances
            .into_iter()
            .filter(|o| selector.is_none_or(|s| s.matches(&o.metadata.labels)))
            .filter(|o| only.is_none_or(|name| o.metadata.name == name))
            .collect();
        let running = objects
            .iter()
            .filter(|o| o.phase() == Some(jackin_api::instance::InstancePhase::Running))
            .count();
        // As `get` shows them: names only need no listing.
        let (objects, listing) = match format {
            Format::Name if !attention => (objects, Listing::default()),
            _ => as_listed(&reconciler, objects, true, listing::Begun::default()).await,
        };
        unanswered = warn_unanswered(&listing, &unanswered);
        if attention {
            let stats = round.is_multiple_of(STATS_EVERY_LOOKS);
            looks =
                attention::look_listed(&reconciler, &objects, stats, &looks, &listing, Some(&live))
                    .await;
            round = round.wrapping_add(1);
        }
        let (current, changed) = changes(&seen, objects, &looks);
        let mut text = String::new();
        if format == Format::Name {
            text = output::name_lines("instance", changed.iter().map(|o| &o.metadata.name));
        } else if first || !changed.is_empty() {
            let table = output::instance_table_in(
                &mut widths,
                &changed,
                wide,
                now,
                attention.then_some(&looks),
            );
            // The header once; each change is a row of the same columns.
            let rows = if first {
                table.as_str()
            } else {
                table.split_once('\n').map_or("", |(_, rows)| rows)
            };
            text.push_str(rows);
        }
        for gone in seen.keys().filter(|name| !current.contains_key(*name)) {
            let _ = writeln!(text, "{gone}\tdeleted");
        }
        stdout.write_all(text.as_bytes())?;
        stdout.flush()?;
        seen = current;
        first = false;
        // With attention, each look calls the engine for every running
        // instance: as often as a live view may.
        tokio::time::sleep(match attention {
            true => attention::look_every(running),
            false => WATCH_EVERY,
        })
        .await;
    }
}
