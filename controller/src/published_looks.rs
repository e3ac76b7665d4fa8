//! The controller's latest look at its instances, published under the home
//! for one-shot readers (`get -o wide`): what each running container last
//! showed and when, as the controller's live watchers saw it.
//!
//! Why: a one-shot look has no stream of its own, so it reads each running
//! container's log, one engine call each. At 500 that is 500 calls, and
//! the engine's time for them is what makes `get -o wide` several times
//! slower than `docker ps` (the bench's figures are in the README). A
//! running controller already watches every running container's output
//! stream (opened once, kept, no call per look); publishing what it saw
//! lets a one-shot reader make one listing call instead.
//!
//! What is trusted and what is not: the file is the controller's and lives
//! in the home, which no agent's container mounts. A reader takes it only
//! while the controller that publishes it lives (it holds `looks.lock` for
//! its whole life: see [`Publisher`]) and only when it is recent (a few of
//! the controller's own look intervals), and takes an entry only for the
//! container the engine lists now under that instance.
//! An instance with no such entry (its container started since the look)
//! is looked at the one-shot way. The last lines are agent output, as
//! untrusted as the log they replace: shown only through the terminal
//! filters, like every other look's.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

use jackin_api::instance::Instance;
use jackin_api::workspace::WorkspaceSpec;
use jackin_files::fsutil::FileLock;
use jackin_files::layout::Layout;
use jackin_plan::attention::{self, Observed};
use jiff::Timestamp;
use serde::{Deserialize, Serialize};

use crate::attention::Look;
use crate::listing::{Listing, Seen};

/// The file's name under the home.
const FILE: &str = "looks.json";

/// The lock the publishing controller holds while it lives, under the home.
const LOCK: &str = "looks.lock";

/// The largest file a reader reads: 500 instances with a screen-wide last
/// line each are about 150 KiB.
const MAX_BYTES: u64 = 16 << 20;

/// How many of its own look intervals old the file may be and still be
/// taken, and the least age always allowed (a look over many instances
/// takes a while on a loaded machine).
const INTERVALS_FRESH: u32 = 3;
const ALWAYS_FRESH: Duration = Duration::from_secs(10);

/// One look of the controller's, as written.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PublishedLooks {
    /// When the look ended.
    pub at: Timestamp,
    /// The controller's interval between looks, in milliseconds.
    pub every_ms: u64,
    /// Each running instance's container output, by instance name.
    pub instances: BTreeMap<String, Published>,
}

/// What the controller saw of one running instance's container.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    /// The container the look watched: an entry counts only for it.
    pub container: String,
    /// When its output last changed what its screen shows.
    pub last_output: Option<Timestamp>,
    /// Its last line, as the screen showed it (lossy UTF-8).
    pub last_line: String,
    /// Its CPU, writes or traffic moved between the controller's last two
    /// samples (only when the controller samples them).
    pub moved: bool,
}

fn path(layout: &Layout) -> PathBuf {
    layout.root().join(FILE)
}

/// What to publish of `looks`: the running instances' (those with a
/// container).
pub fn from_looks(looks: &HashMap<String, Look>, every: Duration, at: Timestamp) -> PublishedLooks {
    let instances = looks
        .iter()
        .filter_map(|(name, look)| {
            let container = look.container.clone()?;
            Some((
                name.clone(),
                Published {
                    container,
                    last_output: look.last_output,
                    last_line: String::from_utf8_lossy(&look.last_line).into_owned(),
                    moved: look.moved,
                },
            ))
        })
        .collect();
    PublishedLooks {
        at,
        every_ms: u64::try_from(every.as_millis()).unwrap_or(u64::MAX),
        instances,
    }
}

/// The publishing controller's hold on `looks.lock`, for as long as it
/// lives: released when dropped, or by the kernel however the process
/// ends, so that a look left by a controller that is gone is not read.
/// Readers only ask whether it is held ([`FileLock::is_held`]), which
/// turns nobody away; the one controller of the home waits for a reader's
/// moment with it instead.
#[derive(Debug)]
pub struct Publisher {
    _lock: FileLock,
}

impl Publisher {
    /// Takes `looks.lock`. Blocking I/O.
    pub fn take(layout: &Layout) -> std::io::Result<Self> {
        FileLock::acquire(&layout.root().join(LOCK)).map(|lock| Self { _lock: lock })
    }
}

/// Writes `published` for readers, replacing the last (atomically: a
/// reader sees the old file or the new, never a torn one). Blocking I/O.
pub fn publish(layout: &Layout, published: &PublishedLooks) -> std::io::Result<()> {
    let text = serde_json::to_vec(published).map_err(std::io::Error::other)?;
    jackin_files::fsutil::write_atomic(&path(layout), &text)
}

/// The controller's latest look, when the controller that published it
/// still runs ([`Publisher`]) and the look is recent at `now`; `None`
/// otherwise (no controller, an old or unreadable file: the reader looks
/// the one-shot way). Blocking I/O.
pub fn current(layout: &Layout, now: Timestamp) -> Option<PublishedLooks> {
    let lock = layout.root().join(LOCK);
    if !FileLock::is_held(&lock)
        .map_err(|e| tracing::debug!("{}: {e}", lock.display()))
        .unwrap_or(false)
    {
        return None;
    }
    let published = read(&path(layout))?;
    let age = now.duration_since(published.at);
    let every = Duration::from_millis(published.every_ms);
    let fresh = (every * INTERVALS_FRESH).max(ALWAYS_FRESH);
    // A look from the future (a clock set back) is not trusted either.
    let recent = age.as_secs_f64() >= -1.0 && age.as_secs_f64() <= fresh.as_secs_f64();
    recent.then_some(published)
}

fn read(path: &Path) -> Option<PublishedLooks> {
    let bytes = jackin_files::fsutil::read_untrusted(path, MAX_BYTES)
        .map_err(|e| tracing::debug!("{}: {e}", path.display()))
        .ok()?;
    serde_json::from_slice(&bytes)
        .map_err(|e| tracing::debug!("{}: {e}", path.display()))
        .ok()
}

/// The looks `published` answers among `objects`: each instance the
/// listing shows running in the very container the controller watched,
/// its attention decided now (attached now or not, with its workspace's
/// threshold) from what the controller saw.
pub fn looks_of(
    published: &PublishedLooks,
    objects: &[Instance],
    listing: &Listing,
    layout: &Layout,
    workspaces: &HashMap<String, WorkspaceSpec>,
    now: Timestamp,
) -> HashMap<String, Look> {
    let mut looks = HashMap::new();
    for obj in objects {
        let Some(Seen::Running { id, .. }) = listing.seen(obj) else {
            continue;
        };
        let Some(seen) = published.instances.get(&obj.metadata.name) else {
            continue;
        };
        if seen.container != id {
            continue;
        }
        let unit = obj
            .status
            .as_ref()
            .and_then(|s| s.container_name.as_deref())
            .unwrap_or_default();
        let attached = !unit.is_empty() && jackin_act::session::attached(layout, unit);
        let observed = Observed {
            phase: obj.phase(),
            attached,
            last_output: seen.last_output,
            moved: seen.moved,
            report: (!unit.is_empty())
                .then(|| jackin_act::session::agent_report(layout, unit))
                .flatten(),
        };
        let workspace = obj
            .spec
            .workspace
            .as_deref()
            .and_then(|w| workspaces.get(w));
        let threshold = attention::needs_you_after(workspace);
        let decided = attention::decide_with_source(&observed, now, threshold);
        let look = Look {
            attention: decided.map(|(attention, _)| attention),
            source: decided.map(|(_, source)| source),
            last_output: seen.last_output,
            last_line: seen.last_line.clone().into_bytes(),
            container: Some(seen.container.clone()),
            moved: seen.moved,
            ..Look::default()
        };
        looks.insert(obj.metadata.name.clone(), look);
    }
    looks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn looks() -> HashMap<String, Look> {
        let running = Look {
            last_output: Some("2026-11-27T10:00:00Z".parse().unwrap()),
            last_line: b"Shall I go on? ".to_vec(),
            container: Some("c0ffee".to_owned()),
            ..Look::default()
        };
        HashMap::from([
            ("running".to_owned(), running),
            ("kept".to_owned(), Look::default()),
        ])
    }

    #[test]
    fn only_running_instances_are_published_and_a_fresh_look_is_read_back_under_a_controller() {
        let home = tempfile::tempdir().unwrap();
        let layout = Layout::new(home.path());
        let at: Timestamp = "2026-11-27T10:00:05Z".parse().unwrap();
        let published = from_looks(&looks(), Duration::from_secs(2), at);
        assert_eq!(
            published.instances.keys().collect::<Vec<_>>(),
            ["running"],
            "an instance with no container has nothing to publish"
        );
        assert_eq!(published.instances["running"].last_line, "Shall I go on? ");
        publish(&layout, &published).unwrap();

        let soon = at + Duration::from_secs(3);
        assert_eq!(
            current(&layout, soon),
            None,
            "no controller runs on the home"
        );
        let _controller = crate::single::ControllerLock::take(&layout).unwrap();
        assert_eq!(
            current(&layout, soon),
            None,
            "a controller that does not publish vouches for no look"
        );
        let publisher = Publisher::take(&layout).unwrap();
        assert_eq!(current(&layout, soon), Some(published.clone()));
        let late = at + Duration::from_secs(11);
        assert_eq!(current(&layout, late), None, "older than 3 looks and 10 s");
        let before = at - Duration::from_secs(5);
        assert_eq!(current(&layout, before), None, "a look from the future");
        drop(publisher);
        // A child forked by a parallel test may hold a copy of the lock's
        // descriptor until it execs (it is close-on-exec): allow a moment.
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        while current(&layout, soon).is_some() {
            assert!(
                std::time::Instant::now() < deadline,
                "a look outlived the controller that published it"
            );
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    #[test]
    fn an_unreadable_look_is_no_look() {
        let home = tempfile::tempdir().unwrap();
        let layout = Layout::new(home.path());
        let _controller = Publisher::take(&layout).unwrap();
        std::fs::write(path(&layout), b"{not json").unwrap();
        assert_eq!(current(&layout, Timestamp::now()), None);
        std::fs::remove_file(path(&layout)).unwrap();
        std::os::unix::fs::symlink("/etc/passwd", path(&layout)).unwrap();
        assert_eq!(
            current(&layout, Timestamp::now()),
            None,
            "a link is not followed"
        );
    }
}
