//! Progress of long steps on stderr: on a terminal, one live line per step
//! (a spinner and the latest build output while it runs, a check mark when
//! it is done); otherwise one plain line per step.

use std::io::Write;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use jackin_controller::reconcile::{Progress, ProgressSink};

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

#[derive(Default)]
struct Live {
    /// `instance/NAME: step` of the line being drawn.
    line: Option<String>,
    /// The latest build output, shown after the step.
    detail: String,
    frame: usize,
    done: bool,
}

impl Live {
    fn draw(&self, out: &mut impl Write) {
        let Some(line) = &self.line else { return };
        let width = crossterm::terminal::size().map_or(80, |(w, _)| w as usize);
        let mut text = format!("{} {line}", FRAMES[self.frame % FRAMES.len()]);
        if !self.detail.is_empty() {
            text.push_str(" · ");
            text.push_str(&self.detail);
        }
        let text: String = text.chars().take(width.saturating_sub(1)).collect();
        let _ = write!(out, "\r\x1b[2K{text}");
        let _ = out.flush();
    }

    fn finish(&mut self, out: &mut impl Write) {
        if let Some(line) = self.line.take() {
            let _ = writeln!(out, "\r\x1b[2K✓ {line}");
        }
        self.detail.clear();
    }
}

/// Renders reconcile progress; build a sink with [`Reporter::sink`].
pub struct Reporter {
    live: Option<Arc<Mutex<Live>>>,
    verbose: bool,
}

impl Reporter {
    /// A live display when stderr is a terminal (and `TERM` is not `dumb`).
    pub fn new(verbose: bool) -> Self {
        use std::io::IsTerminal;
        let tty =
            std::io::stderr().is_terminal() && std::env::var("TERM").map_or(true, |t| t != "dumb");
        let live = tty.then(|| {
            let live = Arc::new(Mutex::new(Live::default()));
            let ticker = live.clone();
            std::thread::spawn(move || {
                loop {
                    std::thread::sleep(Duration::from_millis(100));
                    let mut live = ticker.lock().expect("progress lock");
                    if live.done {
                        break;
                    }
                    live.frame += 1;
                    live.draw(&mut std::io::stderr());
                }
            });
            live
        });
        Self { live, verbose }
    }

    pub fn sink(&self) -> ProgressSink {
        let live = self.live.clone();
        let verbose = self.verbose;
        Arc::new(move |name: &str, event: Progress<'_>| {
            let mut err = std::io::stderr();
            match (&live, event) {
                (Some(live), Progress::Step(step)) => {
                    let mut live = live.lock().expect("progress lock");
                    live.finish(&mut err);
                    live.line = Some(format!(
                        "instance/{name}: [{}] {}",
                        step.stage(),
                        step.describe()
                    ));
                    live.draw(&mut err);
                }
                // Build output is the role's: it must not drive the terminal.
                (Some(live), Progress::Build(line)) => {
                    let mut live = live.lock().expect("progress lock");
                    live.detail = crate::output::terminal_safe(line);
                    live.draw(&mut err);
                }
                (None, Progress::Step(step)) => {
                    let _ = writeln!(
                        err,
                        "instance/{name}: [{}] {}",
                        step.stage(),
                        step.describe()
                    );
                }
                (None, Progress::Build(line)) if verbose => {
                    let line = crate::output::terminal_safe(line);
                    let _ = writeln!(err, "instance/{name}:   | {line}");
                }
                (None, Progress::Build(_)) => {}
            }
        })
    }

    /// Completes the live line; call before printing results.
    pub fn finish(&self) {
        if let Some(live) = &self.live {
            let mut live = live.lock().expect("progress lock");
            live.finish(&mut std::io::stderr());
            live.done = true;
        }
    }
}
