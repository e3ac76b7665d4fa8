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
        }
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

    /// The next line typed (without its end), or `None` at end of input.
    pub async fn line(&mut self) -> Option<String> {
        let _turn = crate::deadline::operators_turn();
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
            let chunk = self.receive().await?;
            self.pending.extend(chunk);
        }
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
