//! Progress of long steps on stderr. On a terminal, a live line per
//! instance converging (indicatif's `MultiProgress`: a spinner, the step,
//! and the latest build output while it runs), each finished step left
//! above as a line with a check mark (a cross when its reconcile failed);
//! otherwise one plain line per step. Log lines on stderr go above the live
//! lines (`LogWriter`).

use std::collections::{HashMap, HashSet};
use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use indicatif::{MultiProgress, ProgressBar, ProgressStyle};
use jackin_controller::reconcile::{Progress, ProgressSink};

/// The live lines, one per instance.
struct Live {
    multi: MultiProgress,
    lines: Mutex<HashMap<String, Line>>,
}

/// One instance's live line.
struct Line {
    bar: ProgressBar,
    /// The step it shows.
    shown: String,
    /// What that step noted, printed under the step's line once it is done.
    notes: Vec<String>,
}

impl Live {
    /// The line of `name` shows `step` now; the step it showed before is
    /// done, and printed above the live lines.
    fn step(&self, name: &str, step: String) {
        let mut lines = self.lines.lock().expect("progress lock");
        let Line { bar, shown, notes } = lines.entry(name.to_owned()).or_insert_with(|| {
            let bar = self.multi.add(ProgressBar::new_spinner());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {wide_msg}")
                    .expect("a valid template")
                    .tick_strings(&["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏", "✓"]),
            );
            bar.enable_steady_tick(Duration::from_millis(100));
            Line {
                bar,
                shown: String::new(),
                notes: Vec::new(),
            }
        });
        if !shown.is_empty() {
            let _ = self.multi.println(format!("✓ {shown}"));
        }
        for note in notes.drain(..) {
            let _ = self.multi.println(note);
        }
        bar.set_message(step.clone());
        *shown = step;
    }

    /// A line the running step has to say, shown once the step is done.
    fn note(&self, name: &str, line: String) {
        let mut lines = self.lines.lock().expect("progress lock");
        if let Some(live) = lines.get_mut(name) {
            live.notes.push(line);
        }
    }

    /// The latest build output, after the step.
    fn detail(&self, name: &str, detail: &str) {
        let lines = self.lines.lock().expect("progress lock");
        if let Some(Line { bar, shown, .. }) = lines.get(name) {
            bar.set_message(format!("{shown} · {detail}"));
        }
    }

    /// Every last step is over: printed, done or (where `failed` says so)
    /// not, and the live lines gone.
    fn finish(&self, failed: &dyn Fn(&str) -> bool) {
        let mut lines = self.lines.lock().expect("progress lock");
        let mut done: Vec<_> = lines.drain().collect();
        done.sort_by(|a, b| a.0.cmp(&b.0));
        for (name, Line { bar, shown, notes }) in done {
            bar.finish_and_clear();
            if !shown.is_empty() {
                let mark = if failed(&name) { '✗' } else { '✓' };
                let _ = self.multi.println(format!("{mark} {shown}"));
            }
            for note in notes {
                let _ = self.multi.println(note);
            }
        }
    }
}

/// Renders reconcile progress; build a sink with [`Reporter::sink`].
pub struct Reporter {
    live: Option<Arc<Live>>,
    verbose: bool,
    /// The instances that took a step: only their reconciles are worth a
    /// line in the run log.
    stepped: Arc<Mutex<HashSet<String>>>,
}

impl Reporter {
    /// A live display when stderr is a terminal (and `TERM` is not `dumb`).
    pub fn new(verbose: bool) -> Self {
        use std::io::IsTerminal;
        let tty =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        let live = tty.then(|| {
            let multi = MultiProgress::new();
            *SHOWING.lock().expect("never poisoned") = Some(multi.clone());
            Arc::new(Live {
                multi,
                lines: Mutex::default(),
            })
        });
        Self {
            live,
            verbose,
            stepped: Arc::default(),
        }
    }

    /// Whether `name` took a step.
    pub fn stepped(&self, name: &str) -> bool {
        self.stepped.lock().expect("never poisoned").contains(name)
    }

    pub fn sink(&self) -> ProgressSink {
        let live = self.live.clone();
        let verbose = self.verbose;
        let stepped = self.stepped.clone();
        Arc::new(move |name: &str, event: Progress<'_>| {
            let line = |step: &jackin_plan::plan::Step| {
                format!("instance/{name}: [{}] {}", step.stage(), step.describe())
            };
            // What a step noted (credentials forwarded or missing), under
            // its stage: names and hints, never a value.
            let note = |stage: &str, message: &str| {
                format!(
                    "instance/{name}: [{stage}] {}",
                    crate::output::terminal_safe(message)
                )
            };
            if let Progress::Step(step) = &event {
                jackin_controller::run_logs::step(name, step);
                stepped
                    .lock()
                    .expect("never poisoned")
                    .insert(name.to_owned());
            }
            match (&live, event) {
                (Some(live), Progress::Step(step)) => live.step(name, line(step)),
                (Some(live), Progress::Note { stage, message }) => {
                    live.note(name, format!("  {}", note(stage, message)));
                }
                (None, Progress::Note { stage, message }) => {
                    let _ = writeln!(std::io::stderr(), "{}", note(stage, message));
                }
                // Build output is the role's: it must not drive the terminal.
                (Some(live), Progress::Build(text)) => {
                    live.detail(name, &crate::output::terminal_safe(text));
                }
                (None, Progress::Step(step)) => {
                    let _ = writeln!(std::io::stderr(), "{}", line(step));
                }
                (None, Progress::Build(text)) if verbose => {
                    let text = crate::output::terminal_safe(text);
                    let _ = writeln!(std::io::stderr(), "instance/{name}:   | {text}");
                }
                (None, Progress::Build(_)) => {}
            }
        })
    }

    /// Completes the live lines, marking the last step of each instance
    /// for which `failed` holds as not done; call before printing results.
    pub fn finish(&self, failed: impl Fn(&str) -> bool) {
        if let Some(live) = &self.live {
            live.finish(&failed);
            *SHOWING.lock().expect("never poisoned") = None;
        }
    }
}

/// The live lines on the terminal now, if any.
static SHOWING: Mutex<Option<MultiProgress>> = Mutex::new(None);

/// Standard error for log lines (`-v`, and warnings): while live lines
/// show, each write goes above them. Written under them, a log line moved
/// the cursor the display counts on, and the step's line, spinner and all,
/// stayed on the screen once the step was done.
pub struct LogWriter;

impl Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let showing = SHOWING.lock().ok().and_then(|s| s.clone());
        match showing {
            Some(multi) => multi.suspend(|| std::io::stderr().write_all(buf))?,
            None => std::io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}
