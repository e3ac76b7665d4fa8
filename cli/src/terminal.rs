//! The operator's terminal: the keyboard read by one thread for the whole
//! command, raw mode while attached, the resizes to follow, and the
//! alternate screen of a rich decision screen.

use std::io::Read;

use anyhow::Result;
use tokio::sync::mpsc;

/// The operator's keystrokes, read by one thread for the whole command, so
/// that nothing typed after a session ends is lost to a stale reader.
pub struct Keyboard {
    chunks: mpsc::UnboundedReceiver<Vec<u8>>,
    pending: Vec<u8>,
    /// The input reached its end: the terminal closed (a hangup) or
    /// Ctrl-D on an empty line. Nothing more will be typed.
    ended: bool,
    /// The operator pressed Ctrl-C at the last question asked.
    interrupted: bool,
}

impl Keyboard {
    pub fn start() -> Self {
        let (tx, chunks) = mpsc::unbounded_channel();
        std::thread::spawn(move || {
            let mut stdin = std::io::stdin();
            let mut buf = [0u8; 1024];
            loop {
                match stdin.read(&mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(n) => {
                        if tx.send(buf[..n].to_vec()).is_err() {
                            break;
                        }
                    }
                }
            }
        });
        Self {
            chunks,
            pending: Vec::new(),
            ended: false,
            interrupted: false,
        }
    }

    /// Whether the last [`Keyboard::line`] ended in Ctrl-C: the operator
    /// cancelled the question, which is not an answer.
    pub fn interrupted(&self) -> bool {
        self.interrupted
    }

    /// Whether the input has ended, so that nobody can answer a question
    /// any more: a screen's `Abort` then means the operator left, not that
    /// they chose to abort.
    pub fn input_ended(&self) -> bool {
        self.ended
    }

    /// The next chunk from the reader thread, noting the end of input.
    async fn receive(&mut self) -> Option<Vec<u8>> {
        let chunk = self.chunks.recv().await;
        self.ended |= chunk.is_none();
        chunk
    }

    /// What was typed next, as raw bytes; `None` at end of input.
    pub async fn chunk(&mut self) -> Option<Vec<u8>> {
        if !self.pending.is_empty() {
            return Some(std::mem::take(&mut self.pending));
        }
        self.receive().await
    }

    /// The next line typed (without its end), or `None` at end of input or
    /// at Ctrl-C ([`Keyboard::interrupted`] says which).
    pub async fn line(&mut self) -> Option<String> {
        let _turn = crate::deadline::operators_turn();
        let mut interrupts = interrupts::watch();
        self.interrupted = false;
        loop {
            if let Some(end) = self.pending.iter().position(|b| *b == b'\n' || *b == b'\r') {
                // "\r\n" ends one line, not two.
                let take =
                    if self.pending[end] == b'\r' && self.pending.get(end + 1) == Some(&b'\n') {
                        end + 1
                    } else {
                        end
                    };
                let line: Vec<u8> = self.pending.drain(..=take).collect();
                return Some(String::from_utf8_lossy(&line[..end]).trim().to_owned());
            }
            tokio::select! {
                chunk = self.receive() => self.pending.extend(chunk?),
                () = interrupts::next(&mut interrupts) => {
                    // What was typed before the Ctrl-C is no answer, and
                    // what jackin prints next starts on a line of its own.
                    self.pending.clear();
                    self.interrupted = true;
                    eprintln!();
                    return None;
                }
            }
        }
    }
}

/// Ctrl-C at a question. A terminal in its usual (cooked) mode turns Ctrl-C
/// into `SIGINT`, which would end jackin mid-sentence; while a question
/// waits, the signal cancels the question instead. The handler, once
/// installed, stays for the rest of the run (tokio's are never removed), so
/// outside a question it does what the default would: the run ends, with
/// the status of an interrupt.
mod interrupts {
    use std::sync::OnceLock;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use tokio::sync::watch;

    /// Each `SIGINT` taken, counted; `None` where no handler could be made.
    static COUNT: OnceLock<Option<watch::Receiver<u64>>> = OnceLock::new();
    /// Questions waiting for an answer now.
    static ASKING: AtomicUsize = AtomicUsize::new(0);

    /// A question waiting: while it lives, `SIGINT` is its to take.
    pub struct Asking(Option<watch::Receiver<u64>>);

    impl Drop for Asking {
        fn drop(&mut self) {
            ASKING.fetch_sub(1, Ordering::SeqCst);
        }
    }

    pub fn watch() -> Asking {
        let count = COUNT.get_or_init(install).clone();
        ASKING.fetch_add(1, Ordering::SeqCst);
        Asking(count.map(|mut rx| {
            rx.mark_unchanged();
            rx
        }))
    }

    /// Resolves at the next `SIGINT` (never without a handler).
    pub async fn next(asking: &mut Asking) {
        let taken = match &mut asking.0 {
            Some(rx) => rx.changed().await.is_ok(),
            None => false,
        };
        if !taken {
            std::future::pending::<()>().await;
        }
    }

    fn install() -> Option<watch::Receiver<u64>> {
        use tokio::signal::unix::{SignalKind, signal};
        let mut signals = signal(SignalKind::interrupt()).ok()?;
        let (tx, rx) = watch::channel(0u64);
        tokio::spawn(async move {
            while signals.recv().await.is_some() {
                if ASKING.load(Ordering::SeqCst) == 0 {
                    // 128 + SIGINT, as the default handler's end reads.
                    std::process::exit(130);
                }
                tx.send_modify(|n| *n += 1);
            }
        });
        Some(rx)
    }
}

/// Raw terminal mode for the length of an attachment.
pub struct RawMode;

impl RawMode {
    pub fn enable() -> Option<Self> {
        crossterm::terminal::enable_raw_mode().ok().map(|()| Self)
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// The operator's terminal being resized (`SIGWINCH`), while attached. With
/// no terminal there is nothing to follow and it never fires.
pub struct Resizes(Option<tokio::signal::unix::Signal>);

impl Resizes {
    pub fn watch(tty: bool) -> Self {
        let signal =
            || tokio::signal::unix::signal(tokio::signal::unix::SignalKind::window_change());
        Self(if tty { signal().ok() } else { None })
    }

    /// Waits for the next resize and returns the new size (columns, rows).
    pub async fn next(&mut self) -> (u16, u16) {
        loop {
            let Some(signal) = &mut self.0 else {
                return std::future::pending().await;
            };
            if signal.recv().await.is_none() {
                self.0 = None;
            } else if let Ok(size) = crossterm::terminal::size() {
                return size;
            }
        }
    }
}

/// The raw mode and alternate screen of a rich screen, undone on drop.
pub struct Surface;

impl Surface {
    pub fn enter() -> Result<Self> {
        crossterm::terminal::enable_raw_mode()?;
        // From here on, dropping the guard undoes whatever was done.
        let surface = Self;
        crossterm::execute!(std::io::stdout(), crossterm::terminal::EnterAlternateScreen)?;
        Ok(surface)
    }
}

impl Drop for Surface {
    fn drop(&mut self) {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::terminal::LeaveAlternateScreen);
        let _ = crossterm::terminal::disable_raw_mode();
    }
}

/// What an agent's output may leave the operator's terminal in that a shell
/// prompt, or a screen of jackin's, must not inherit: the alternate screen
/// (followed from the output, because leaving one that was never entered
/// moves the cursor on some terminals), and modes that are always safe to
/// turn back (attributes, insert mode, a hidden cursor, mouse and paste
/// reporting, application keys, a scroll region).
#[derive(Debug, Default)]
pub struct AgentModes {
    alternate: bool,
}

/// The sequences that enter (`h`) or leave (`l`) the alternate screen.
const ALTERNATE: [&[u8]; 3] = [b"\x1b[?1049", b"\x1b[?1047", b"\x1b[?47"];

/// Turned back whatever the agent did: attributes, insert mode, the
/// cursor shown, autowrap, normal cursor keys and keypad, no mouse, focus
/// or bracketed-paste reporting, the whole screen to scroll (the cursor
/// kept where it is).
const SAFE_RESET: &[u8] = b"\x1b[0m\x1b[4l\x1b[?25h\x1b[?7h\x1b[?1l\x1b>\x1b[?1000l\x1b[?1002l\
\x1b[?1003l\x1b[?1006l\x1b[?1015l\x1b[?1004l\x1b[?2004l\x1b7\x1b[r\x1b8";

impl AgentModes {
    /// Follows what the agent wrote. A sequence split across two writes is
    /// missed: then at worst the alternate screen is left as it was.
    pub fn saw(&mut self, output: &[u8]) {
        let last = |on: u8| {
            ALTERNATE
                .iter()
                .filter_map(|start| {
                    let sequence = [*start, &[on]].concat();
                    output
                        .windows(sequence.len())
                        .rposition(|w| w == sequence.as_slice())
                })
                .max()
        };
        match (last(b'h'), last(b'l')) {
            (Some(entered), left) if left.is_none_or(|left| left < entered) => {
                self.alternate = true;
            }
            (_, Some(_)) => self.alternate = false,
            _ => {}
        }
    }

    /// The bytes that give the terminal back as a shell expects it, on a
    /// fresh line with nothing of the agent's below it.
    pub fn restore(&self) -> Vec<u8> {
        let mut out = Vec::new();
        if self.alternate {
            out.extend_from_slice(b"\x1b[?1049l");
        }
        out.extend_from_slice(SAFE_RESET);
        out.extend_from_slice(b"\r\n\x1b[J");
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_alternate_screen_is_left_only_when_the_agent_is_in_it() {
        let mut modes = AgentModes::default();
        assert!(!modes.restore().starts_with(b"\x1b[?1049l"));
        modes.saw(b"hello \x1b[?1049h\x1b[2J drawn");
        assert!(modes.restore().starts_with(b"\x1b[?1049l"));
        modes.saw(b"more");
        assert!(
            modes.alternate,
            "output without the sequence changes nothing"
        );
        modes.saw(b"\x1b[?1049h x \x1b[?1049l back");
        assert!(!modes.alternate);
        modes.saw(b"\x1b[?47l then \x1b[?1047h");
        assert!(modes.alternate);
        let restored = modes.restore();
        assert!(restored.ends_with(b"\r\n\x1b[J"));
        assert!(
            restored.windows(6).any(|w| w == b"\x1b[?25h"),
            "cursor shown"
        );
    }
}
