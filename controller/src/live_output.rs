//! The live output watchers: what a long-lived look (`jackin top`, `get
//! -w`, the controller's notifications and attention gauges) knows of each
//! running container's output, read from the container's own output stream
//! rather than its log, so that output with no newline counts. The engine's
//! log holds an unfinished line back (a TUI agent's prompt, claude's whole
//! screen), and a look at the log alone saw nothing (defect R4).
//!
//! Each watcher keeps one stream per running container: an attach that only
//! reads (no input), opened at the container's first look and kept until
//! its output ends (the container stopped) or it is no longer running at a
//! look (`retain`), or the watcher is dropped. Everything the container
//! writes is drawn on an emulated screen (`jackin_act::screen`) of
//! the size the agent draws at (`session::terminal_size`), whose last line
//! is what the look reports, and its last output is the last time the text
//! the screen shows changed (output that redraws the same text, or only
//! moves or shows the cursor, is no sign of work); a look makes no engine
//! call for a container already watched. Opening costs three calls: the log's last entry (the
//! output and its time from before the stream), the attach, and, with
//! nobody attached, a size nudge (one column less, then back) that makes a
//! full-screen agent draw its screen again, so that the watcher sees what
//! it shows now; that redraw counts as output.

use std::collections::{BTreeSet, HashMap, HashSet};
use std::sync::{Arc, Mutex};

use futures::StreamExt;
use jackin_act::screen::{Run, Screen};
use jackin_act::session;
use jackin_engine::Engine;
use jackin_engine::EngineError;
use jackin_plan::redact::Redactor;
use jiff::Timestamp;

/// What a stream has seen of its container.
struct Seen {
    /// When the container last wrote output (the log's last entry's time
    /// until the stream brings any).
    last_output: Option<Timestamp>,
    /// The log's last entry, shown until the stream draws anything.
    log_line: Vec<u8>,
    screen: Screen,
    /// A digest of the text the screen shows, to tell output that changed
    /// it from output that did not.
    shown: u64,
    drawn: bool,
    /// The stream ended: the container stopped, or the engine let go.
    ended: bool,
    /// The values the container was handed, scrubbed from every last line
    /// this watcher reports (they may be stored: the published look).
    secrets: Redactor,
}

struct Stream {
    seen: Arc<Mutex<Seen>>,
    task: tokio::task::AbortHandle,
}

/// One watcher's streams, by container id.
#[derive(Default)]
pub struct LiveOutputs {
    streams: Mutex<HashMap<String, Stream>>,
    /// Each new stream's screen starts as the log's end draws it
    /// ([`LiveOutputs::seeded`]).
    seeded: bool,
}

/// The log entries a screen is drawn from, by the attach replay and a
/// seeded watcher (a TUI's entry may be a whole frame, or 16 KiB of one
/// with no newline).
pub const REPLAY_ENTRIES: u64 = 2000;

/// The most of the log's end read for a screen: it is drawn from the
/// newest full redraw in it, and an agent that never clears its screen has
/// drawn its last one well within this.
pub const REPLAY_BYTES: usize = 1 << 20;

impl LiveOutputs {
    /// A watcher whose screens start as the container's log draws them
    /// (from its newest full redraw, as the attach replay does), for a
    /// caller that shows the screen (`jackin top`'s preview): a program
    /// that printed before the stream opened and then waits is not a
    /// blank screen. Costs one more engine call per stream opened.
    pub fn seeded() -> Self {
        Self {
            streams: Mutex::default(),
            seeded: true,
        }
    }

    /// When container `id` last wrote output, and its last line as drawn
    /// (untrusted, to be made safe before it is shown). The first look at a
    /// container opens its stream; a stream that ended is opened again.
    /// `size` is the size the agent draws at; `attached` whether an operator
    /// is (then no nudge: their terminal sets the size). `secrets` names
    /// the variables whose values are scrubbed from the last line.
    pub async fn observe(
        &self,
        engine: &Engine,
        id: &str,
        (size, attached): ((u16, u16), bool),
        secrets: &BTreeSet<String>,
    ) -> Result<(Option<Timestamp>, Vec<u8>), EngineError> {
        if let Some(seen) = self.open_stream(id) {
            return Ok(snapshot(&seen));
        }
        let secrets = jackin_act::secrets::handed_over(engine, id, secrets).await?;
        let baseline = engine.last_output(id).await?;
        let mut output = engine.watch_output(id).await?.output;
        let (last_output, log_line) =
            baseline.map_or((None, Vec::new()), |(at, line)| (Some(at), line));
        let mut screen = Screen::new(size);
        if self.seeded {
            let log = log_end(engine, id).await;
            screen.feed(&log[jackin_act::screen::newest_redraw(&log)..]);
        }
        let seen = Arc::new(Mutex::new(Seen {
            last_output,
            log_line,
            shown: screen.digest(),
            screen,
            drawn: false,
            ended: false,
            secrets,
        }));
        let fed = seen.clone();
        let task = tokio::spawn(async move {
            while let Some(Ok(chunk)) = output.next().await {
                let mut seen = fed.lock().expect("a watcher's lock is never poisoned");
                seen.screen.feed(&chunk.into_bytes());
                // Output that leaves the screen as it was (a frame drawn
                // again the same, the cursor shown and hidden) is no sign
                // of work: claude redraws its first screen so while it
                // waits.
                let shown = seen.screen.digest();
                if shown != seen.shown {
                    seen.shown = shown;
                    seen.last_output = Some(Timestamp::now());
                    seen.drawn = true;
                }
            }
            fed.lock()
                .expect("a watcher's lock is never poisoned")
                .ended = true;
        })
        .abort_handle();
        self.streams
            .lock()
            .expect("a watcher's lock is never poisoned")
            .insert(
                id.to_owned(),
                Stream {
                    seen: seen.clone(),
                    task,
                },
            );
        if !attached {
            tokio::spawn(nudge(engine.clone(), id.to_owned(), size));
        }
        Ok(snapshot(&seen))
    }

    /// Closes the streams of containers not in `running`.
    pub fn retain(&self, running: &HashSet<String>) {
        let mut streams = self
            .streams
            .lock()
            .expect("a watcher's lock is never poisoned");
        streams.retain(|id, stream| {
            let keep = running.contains(id);
            if !keep {
                stream.task.abort();
            }
            keep
        });
    }

    /// The screen container `id`'s stream has drawn, as rows of styled
    /// runs (`jackin top`'s preview); `None` when no stream of it is open.
    /// Untrusted text: no control character, but format characters are
    /// left for the caller to escape.
    pub fn styled_rows(&self, id: &str) -> Option<Vec<Vec<Run>>> {
        let seen = self
            .streams
            .lock()
            .expect("a watcher's lock is never poisoned")
            .get(id)?
            .seen
            .clone();
        let seen = seen.lock().expect("a watcher's lock is never poisoned");
        Some(seen.screen.styled_rows())
    }

    /// How many streams are open.
    pub fn open(&self) -> usize {
        self.streams
            .lock()
            .expect("a watcher's lock is never poisoned")
            .len()
    }

    /// The open stream of `id`; one that ended is closed and forgotten.
    fn open_stream(&self, id: &str) -> Option<Arc<Mutex<Seen>>> {
        let mut streams = self
            .streams
            .lock()
            .expect("a watcher's lock is never poisoned");
        let stream = streams.get(id)?;
        if stream
            .seen
            .lock()
            .expect("a watcher's lock is never poisoned")
            .ended
        {
            streams.remove(id);
            return None;
        }
        Some(stream.seen.clone())
    }
}

impl Drop for LiveOutputs {
    fn drop(&mut self) {
        if let Ok(streams) = self.streams.get_mut() {
            for stream in streams.values() {
                stream.task.abort();
            }
        }
    }
}

/// Makes a full-screen agent draw its whole screen again, as a person
/// dragging the window's edge does: a column narrower, then back. A
/// change of rows alone makes claude draw only what changed, which is
/// nothing. A failure costs only the redraw: the stream still sees what the
/// agent draws next.
async fn nudge(engine: Engine, id: String, (columns, rows): (u16, u16)) {
    let (narrower, rows) = session::redraw_nudge((columns, rows));
    let _ = engine.resize(&id, narrower, rows).await;
    tokio::time::sleep(session::REDRAW_NUDGE_GAP).await;
    let _ = engine.resize(&id, columns, rows).await;
}

/// The end of container `id`'s log (its last [`REPLAY_ENTRIES`], at most
/// [`REPLAY_BYTES`] of them); what could be read of it when the engine
/// fails (the screen only starts emptier).
pub async fn log_end(engine: &Engine, id: &str) -> Vec<u8> {
    let request = jackin_engine::LogsRequest {
        tail: Some(REPLAY_ENTRIES),
        ..Default::default()
    };
    let mut logs = engine.logs(id, request);
    let mut recent = Vec::new();
    while let Some(Ok(chunk)) = logs.next().await {
        recent.extend_from_slice(&chunk);
        if recent.len() > 2 * REPLAY_BYTES {
            recent.drain(..recent.len() - REPLAY_BYTES);
        }
    }
    recent
}

fn snapshot(seen: &Mutex<Seen>) -> (Option<Timestamp>, Vec<u8>) {
    let seen = seen.lock().expect("a watcher's lock is never poisoned");
    let line = match seen.drawn {
        true => seen.screen.last_line().into_bytes(),
        false => seen.log_line.clone(),
    };
    (seen.last_output, seen.secrets.scrub(&line))
}
