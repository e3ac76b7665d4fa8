//! A real terminal for the tests that drive jackin's screens: a tmux
//! session running one `jackin` command.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use super::{Home, jackin_binary, unique};

/// A tmux session running one command, on a tmux server of its own
/// (`tmux -S <socket>`), killed on drop, its socket removed (the server
/// leaves it). Sharing the default server raced: a server exits when its
/// last session ends, and a test starting its terminal in that moment was
/// told "server exited unexpectedly".
pub struct Terminal {
    name: String,
    socket: PathBuf,
}

impl Terminal {
    /// A plain terminal (`TERM=dumb`): the screens degrade to text.
    pub fn start(home: &Home, args: &str) -> Self {
        Self::start_as(home, args, "dumb")
    }

    pub fn start_as(home: &Home, args: &str, term: &str) -> Self {
        Self::start_with_env(home, args, &format!("TERM={term}"))
    }

    /// A terminal whose `jackin` runs with the extra `env` (`A=1 B=2`).
    pub fn start_with_env(home: &Home, args: &str, env: &str) -> Self {
        let name = unique("jackin-tmux");
        let socket = std::env::temp_dir().join(format!("{name}.sock"));
        let command = format!(
            "env JACKIN_HOME={} JACKIN_CREDENTIALS_HOME={} {env} {} {args}; sleep 600",
            home.path().display(),
            home.operator_home().display(),
            jackin_binary().display()
        );
        let status = tmux_on(&socket)
            .args([
                "new-session",
                "-d",
                "-s",
                &name,
                "-x",
                "120",
                "-y",
                "40",
                &command,
            ])
            .status()
            .expect("tmux runs (Debian package tmux)");
        assert!(status.success());
        Self { name, socket }
    }

    /// The process id of the pane's shell, which runs the command: the
    /// command's CPU time is counted under it ([`crate::cpu::cpu_time`]).
    pub fn pid(&self) -> u32 {
        self.pane("#{pane_pid}")
            .parse()
            .expect("tmux names the pane's process")
    }

    /// What tmux says of the command's pane in `format` (`#{cursor_flag}`:
    /// see tmux's FORMATS).
    pub fn pane(&self, format: &str) -> String {
        let out = self
            .tmux()
            .args(["display-message", "-p", "-t", &self.window()])
            .arg(format)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    /// A `tmux` command addressed to this terminal's own server.
    pub(crate) fn tmux(&self) -> Command {
        tmux_on(&self.socket)
    }

    /// The window that runs the command (a test may open another).
    pub fn window(&self) -> String {
        format!("{}:0", self.name)
    }

    /// Clears the bell flag of the command's window, so that
    /// [`Terminal::rang`] says whether it rang since: tmux clears it when
    /// the window is selected from another (an operator switching back).
    pub fn forget_bell(&self) {
        let aside = format!("{}:1", self.name);
        for args in [
            vec!["new-window", "-d", "-t", &aside, "sleep 600"],
            vec!["select-window", "-t", &aside],
            vec!["select-window", "-t", &self.window()],
            vec!["kill-window", "-t", &aside],
        ] {
            let status = self.tmux().args(&args).status().unwrap();
            assert!(status.success(), "tmux {args:?}");
        }
    }

    /// Whether the command rang the terminal bell (tmux flags it with no
    /// client attached).
    pub fn rang(&self) -> bool {
        self.pane("#{window_bell_flag}") == "1"
    }

    pub fn screen(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-S", "-200", "-t", &self.window()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// The screen with its colours and styles, as tmux keeps them (SGR
    /// sequences of its own making).
    pub fn screen_with_styles(&self) -> String {
        let out = self
            .tmux()
            .args(["capture-pane", "-p", "-e", "-t", &self.window()])
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }

    /// Waits until `text` appears `count` times on the screen.
    pub fn wait_for(&self, text: &str, count: usize) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            if self.screen().matches(text).count() >= count {
                return;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        panic!(
            "{text:?} did not appear {count} time(s); the screen:\n{}",
            self.screen()
        );
    }

    /// Types `line` until `text` appears: what is typed before the command
    /// has the terminal (a moment, or longer on a loaded machine) may be
    /// dropped when it takes the terminal raw.
    pub fn type_until(&self, line: &str, text: &str) {
        let deadline = Instant::now() + Duration::from_secs(60);
        while Instant::now() < deadline {
            self.type_line(line);
            for _ in 0..10 {
                if self.screen().contains(text) {
                    return;
                }
                std::thread::sleep(Duration::from_millis(200));
            }
        }
        panic!("{text:?} did not appear; the screen:\n{}", self.screen());
    }

    /// Sends tmux key names (`Down`, `Enter`, …).
    pub fn keys(&self, keys: &[&str]) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.window()])
            .args(keys)
            .status()
            .unwrap();
        assert!(status.success());
    }

    /// Plain Screen A (the unfinished work at a session's end): read, then
    /// passed with Enter; `count` such screens shown so far.
    pub fn pass_screen_a(&self, count: usize) {
        self.wait_for("Press Enter to continue", count);
        let screen = self.screen();
        assert!(
            screen.contains("This session has unfinished work in 1 isolated mount."),
            "{screen}"
        );
        self.keys(&["Enter"]);
    }

    /// Plain Screen D (a preserved session about to be resumed): passed
    /// with Enter.
    pub fn pass_screen_d(&self, count: usize) {
        self.wait_for(
            "Press Enter to resume, or type b and Enter to go back",
            count,
        );
        self.keys(&["Enter"]);
    }

    /// Resizes the terminal, as an operator dragging its window would.
    pub fn resize(&self, columns: u16, rows: u16) {
        let status = self
            .tmux()
            .args(["resize-window", "-t", &self.window()])
            .args(["-x", &columns.to_string(), "-y", &rows.to_string()])
            .status()
            .unwrap();
        assert!(status.success());
    }

    pub fn type_line(&self, line: &str) {
        let status = self
            .tmux()
            .args(["send-keys", "-t", &self.window(), line, "Enter"])
            .status()
            .unwrap();
        assert!(status.success());
    }
}

impl Drop for Terminal {
    fn drop(&mut self) {
        let _ = self.tmux().arg("kill-server").status();
        let _ = std::fs::remove_file(&self.socket);
    }
}

/// `tmux` on the server of `socket`.
fn tmux_on(socket: &Path) -> Command {
    let mut command = Command::new("tmux");
    command.arg("-S").arg(socket);
    command
}
