//! The real aider, installed from PyPI, run by jackin (issue 23): it starts
//! in an isolated checkout of a real repository, survives its own git setup
//! there, and a tier 2 restore brings its conversation back.
//!
//! The image is made by `scripts/aider-image` (a Debian root file system
//! with aider in a virtual environment; the engine can pull nothing), whose
//! tag `scripts/test` hands over in `JACKIN_AIDER_IMAGE`. aider talks to no
//! model here and makes no outbound connection: the instance's environment
//! turns off everything it would fetch at startup, and nothing is ever sent
//! to it as a message.

use std::path::Path;
use std::time::{Duration, Instant};

use support::real_agent::AIDER_ENV;
use support::{Home, docker, git};

/// Files the host repository tracks; aider's banner counts them.
const TRACKED: [(&str, &str); 4] = [
    ("README.md", "# calc\n"),
    ("src/calc.py", "def add(a, b):\n    return a + b\n"),
    ("src/main.py", "from calc import add\n\nprint(add(1, 2))\n"),
    // A project that uses aider ignores aider's files; without it, aider
    // asks whether to add them (aider/main.py, check_gitignore) and waits
    // for an answer nobody gives.
    (".gitignore", ".aider*\n"),
];

/// A real repository on the host, as an operator's is: its identity is not
/// in the repository's own config (it is in the operator's `~/.gitconfig`,
/// which the agent's container does not see), so aider's git setup writes
/// one into the config of the checkout it runs in (aider/main.py,
/// setup_git: `repo.config_writer()`).
struct HostRepo {
    dir: tempfile::TempDir,
}

impl HostRepo {
    fn new() -> Self {
        let dir = tempfile::Builder::new()
            .prefix("jackin-aider-repo-")
            .tempdir()
            .unwrap();
        let path = dir.path();
        git(path, &["init", "--quiet", "--initial-branch=main"]);
        for (name, text) in TRACKED {
            let file = path.join(name);
            std::fs::create_dir_all(file.parent().unwrap()).unwrap();
            std::fs::write(file, text).unwrap();
        }
        git(path, &["add", "."]);
        git(
            path,
            &[
                "-c",
                "user.name=operator",
                "-c",
                "user.email=operator@jackin.dev",
                "commit",
                "--quiet",
                "-m",
                "calc",
            ],
        );
        Self { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn config(&self) -> String {
        std::fs::read_to_string(self.path().join(".git/config")).unwrap()
    }
}

/// An Instance running the built-in `aider` entry on the aider image, in an
/// isolated checkout of `repo` (its only mount, so the agent starts there).
fn aider_instance(name: &str, image: &str, repo: &Path, isolation: &str) -> String {
    // OPENAI_API_KEY: with a key in the environment aider chooses its
    // model itself (gpt-4o; aider/onboarding.py,
    // try_to_select_default_model) instead of offering an OpenRouter login,
    // which goes online. The key is a dummy: no message is sent. The others
    // are support::real_agent::AIDER_ENV's.
    // No flag is needed for the terminal: jackin gives the agent's
    // container one (aider's prompt_toolkit input needs it), and aider only
    // warns that nobody answers its cursor position requests while no one
    // is attached.
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata:\n  name: {name}\nspec:\n  \
         role: {{name: aider}}\n  agent: aider\n  image: {image}\n  \
         mounts: [{{src: {}, dst: /workspace/calc, isolation: {isolation}}}]\n  env:\n    \
         - {{name: OPENAI_API_KEY, value: sk-dummy}}\n{AIDER_ENV}",
        repo.display()
    )
}

/// Text as a terminal would show it, near enough to search: escape
/// sequences (CSI, OSC and two-byte ones) and carriage returns removed.
fn plain(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut chars = raw.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\u{1b}' => match chars.next() {
                // CSI: parameters and intermediates, then one final byte.
                Some('[') => {
                    for c in chars.by_ref() {
                        if ('@'..='~').contains(&c) {
                            break;
                        }
                    }
                }
                // OSC: up to BEL or ESC \.
                Some(']') => {
                    while let Some(c) = chars.next() {
                        if c == '\u{7}' || (c == '\u{1b}' && chars.next_if_eq(&'\\').is_some()) {
                            break;
                        }
                    }
                }
                _ => {}
            },
            '\r' => {}
            c => out.push(c),
        }
    }
    out
}

/// What aider did at one start.
enum Start {
    /// It printed its banner and waits at its prompt.
    Ready(String),
    /// It stopped before that (a traceback, or its container stopped).
    Failed(String),
}

/// Waits for aider's start in the instance's current container: until it
/// prints its banner and prompt, or fails. Python's startup on a loaded
/// machine is slow, so the limit is generous; only order and content are
/// asserted, never how long it took.
fn wait_for_start(home: &Home, name: &str) -> Start {
    let container = home.container(name);
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let text = plain(&home.ok(&["logs", name]));
        // The banner's last fixed line is the repository map's; the prompt
        // (`>`, alone on its line once its input area is stripped) follows.
        let ready = text.find("Repo-map:").is_some_and(|at| {
            text[at..]
                .lines()
                .skip(1)
                .any(|line| line.trim_end() == ">")
        });
        if ready {
            return Start::Ready(text);
        }
        let running = docker(&["inspect", "-f", "{{.State.Running}}", &container]) == "true";
        if text.contains("Traceback (most recent call last)") || !running {
            // Whatever else it printed on the way out.
            std::thread::sleep(Duration::from_secs(2));
            return Start::Failed(plain(&home.ok(&["logs", name])));
        }
        assert!(
            Instant::now() < deadline,
            "{name}: aider printed no banner and prompt within 300 s:\n{text}"
        );
        std::thread::sleep(Duration::from_secs(1));
    }
}

/// What no start of aider may print: a crash, a failed write, or an offer
/// to make a repository (it did not find the checkout's).
const NEVER: [&str; 4] = [
    "Traceback (most recent call last)",
    "Read-only file system",
    "No git repo found",
    "Unable to write",
];

fn assert_started(name: &str, start: Start) -> String {
    let text = match start {
        Start::Ready(text) => text,
        Start::Failed(text) => panic!("{name}: aider did not start:\n{text}"),
    };
    for never in NEVER {
        assert!(!text.contains(never), "{name}: {never:?}:\n{text}");
    }
    text
}

/// One line of aider's banner, by its start.
fn banner_line<'a>(text: &'a str, start: &str) -> &'a str {
    text.lines()
        .find(|line| line.starts_with(start))
        .unwrap_or_else(|| panic!("no {start:?} line in:\n{text}"))
}

/// A conversation as aider writes its chat history: `####` before each line
/// the user typed (aider/io.py, InputOutput.user_input), the model's reply
/// as plain lines after it (InputOutput.ai_output), `>` before aider's own
/// output and `#` before a session's header, both of which a restore skips
/// (aider/utils.py, split_chat_history_markdown). A history holding an
/// exchange is what `--restore-chat-history` restores, saying "Restored
/// previous conversation history." (aider/coders/base_coder.py).
const SEEDED_EXCHANGE: &str = "\n# aider chat started at 2025-01-01 09:00:00\n\n\
     > Aider v0.86.2  \n\n\
     #### What does calc.py do?  \n\n\
     It defines `add(a, b)`, which returns the sum of its two arguments.\n\n";

/// The whole life of one aider session in a checkout of kind `isolation`.
fn aider_session(isolation: &str) {
    let image = support::real_agent_image();
    let home = Home::new();
    let repo = HostRepo::new();
    let config_before = repo.config();
    let name = format!("aider-{isolation}");
    home.apply(
        &name,
        &aider_instance(&name, &image, repo.path(), isolation),
    );
    let container = home.container(&name);
    let checkout = home.checkout(&name);

    // The first start: a fresh conversation, in the checkout.
    let first = assert_started(&name, wait_for_start(&home, &name));
    // Shown when a later check fails (the harness keeps a passing test's
    // output to itself).
    eprintln!("{name}, first start:\n{first}");
    assert!(first.contains("Aider v"), "{first}");
    let repo_line = banner_line(&first, "Git repo: ");
    assert!(
        repo_line.ends_with(&format!(" with {} files", TRACKED.len())),
        "{name}: aider does not see the checkout's files: {repo_line:?}\n{first}"
    );
    if isolation == "clone" {
        let expected = format!("Git repo: .git with {} files", TRACKED.len());
        assert_eq!(repo_line, expected, "{first}");
    }
    assert!(
        !first.contains("Restored previous conversation history"),
        "{name}: the first start had nothing to restore:\n{first}"
    );
    // aider found no identity and wrote one into the checkout's git config,
    // the write that fails when that config is the host repository's,
    // bound read-only (defect A9, a worktree's). It took: the agent's git
    // has it now.
    assert!(
        first.contains("Update git name with: git config user.name \"Your Name\""),
        "{name}: aider did not set up the checkout's identity:\n{first}"
    );
    assert_eq!(
        docker(&[
            "exec",
            &container,
            "git",
            "-C",
            "/workspace/calc",
            "config",
            "--get",
            "user.name"
        ]),
        "Your Name"
    );
    // ... and never the host repository's.
    assert_eq!(
        repo.config(),
        config_before,
        "{name}: the host's git config"
    );
    assert_eq!(
        docker(&["inspect", "-f", "{{.State.Running}}", &container]),
        "true",
        "{name}: aider waits at its prompt"
    );

    // The history is where the built-in entry puts it, in the unit's home
    // (AIDER_CHAT_HISTORY_FILE), not in the checkout a discard would take.
    let history = home.unit(&name).join("home/.aider.chat.history.md");
    let written = std::fs::read_to_string(&history)
        .unwrap_or_else(|e| panic!("{name}: {}: {e}", history.display()));
    assert!(written.contains("# aider chat started at"), "{written}");
    assert!(!checkout.join(".aider.chat.history.md").exists());
    // Nothing went online: the update check and the model lookup each
    // leave a file in ~/.aider/caches (aider/versioncheck.py,
    // VERSION_CHECK_FNAME; aider/models.py, ModelInfoManager.cache_file),
    // and analytics are off for good.
    let dot_aider = home.unit(&name).join("home/.aider");
    assert!(
        !dot_aider.join("caches").exists(),
        "{name}: aider checked for updates or looked a model up online"
    );
    let analytics: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dot_aider.join("analytics.json")).unwrap()).unwrap();
    assert_eq!(analytics["permanently_disable"], true, "{analytics}");

    // Tier 2: the container is gone. The history now holds an exchange; the
    // new container's aider continues it.
    docker(&["rm", "-f", &container]);
    std::fs::write(&history, format!("{written}{SEEDED_EXCHANGE}")).unwrap();
    let out = home.ok(&["controller", "--once"]);
    assert!(out.starts_with("pass complete"), "{out}");
    assert_eq!(
        home.object(&name)["status"]["restore"]["tier"],
        2,
        "{name}: a removed container is a tier 2 restore"
    );
    let second = assert_started(&name, wait_for_start(&home, &name));
    eprintln!("{name}, after the tier 2 restore:\n{second}");
    assert!(
        second.contains("Restored previous conversation history."),
        "{name}: the restored aider did not continue its conversation:\n{second}"
    );
    assert_eq!(
        banner_line(&second, "Git repo: "),
        repo_line,
        "{name}: the same checkout"
    );
    // The pass that follows the rung's grace period says how the agent
    // started, whatever the load (defect R13: it once took a later pass).
    home.wait_for_the_start_to_settle(&name);
    home.ok(&["controller", "--once"]);
    let conversation = &home.object(&name)["status"]["conversation"];
    assert_eq!(
        conversation["lastStart"], "continue-requested",
        "{conversation}"
    );
    assert_eq!(conversation.get("fallbacks"), None, "{conversation}");
    assert_eq!(
        repo.config(),
        config_before,
        "{name}: the host's git config"
    );
}

#[test]
fn aider_starts_in_a_clone_checkout_and_a_tier_2_restore_continues_its_conversation() {
    aider_session("clone");
}

#[test]
fn aider_starts_in_a_worktree_checkout_and_a_tier_2_restore_continues_its_conversation() {
    aider_session("worktree");
}
