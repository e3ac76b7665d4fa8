//! The command line, as clap sees it.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Parser, Subcommand, ValueEnum};
use jackin_api::DesiredPhase;
use jackin_controller::converge;

/// jackin keeps AI coding-agent sessions alive across exits, crashes and
/// `docker rm`, and cleans up completely when a session is over.
#[derive(Debug, Parser)]
#[command(name = "jackin", version, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// How log lines on stderr are written.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,
    /// Also write jackin's detailed traces to this run's log
    /// (data/diagnostics/runs/RUN_ID.jsonl under the home).
    #[arg(long, global = true)]
    pub debug: bool,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or update objects from YAML files or directories.
    Apply(ApplyArgs),
    /// Show what an apply would change, as a unified diff per object; exits
    /// 0 when nothing differs, 1 when something does, 2 on error.
    Diff(DiffArgs),
    /// List objects, or print one.
    Get(GetArgs),
    /// Show an instance, a workspace, an agent or a provider in detail:
    /// `describe NAME`, `describe instance|workspace|agent|provider NAME` or
    /// `describe KIND/NAME`.
    Describe {
        /// An instance's name, `KIND/NAME`, or a kind: instance, workspace or
        /// agent.
        #[arg(value_name = "NAME|KIND")]
        first: String,
        /// The name, after a kind.
        #[arg(value_name = "NAME")]
        name: Option<String>,
    },
    /// Set instances' desired phase and converge to it: `set-phase NAME…
    /// PHASE`, or `set-phase PHASE -l SELECTOR` / `-f FILE`.
    SetPhase {
        /// Instance names, then the phase: running, kept or purged.
        #[arg(value_name = "NAME… PHASE", required = true, num_args = 1..)]
        targets: Vec<String>,
        #[command(flatten)]
        select: SelectArgs,
        /// Print the steps it would take, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// With `purged`: discard unfinished work in isolated checkouts
        /// without asking (it is still shown).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Move sessions onto their current spec, keeping each one's unit
    /// (home, conversation, checkouts, volumes): the recipe is pinned again
    /// (the role rebuilt at its ref, the agent entry and engine resolved
    /// again), then a running agent is stopped gracefully and its container
    /// made anew (tier 2, or 3 for a new image). Like `kubectl rollout
    /// restart`. A kept or ended session moves at its next start.
    Rollout {
        /// Instance names.
        #[arg(value_name = "NAME")]
        names: Vec<String>,
        #[command(flatten)]
        select: SelectArgs,
        /// Print what would change (the recipe's fields, then the steps),
        /// change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Allow a changed `spec.engine`: the session's container, network
        /// and volumes are made anew on the other engine; its home and
        /// checkouts stay on this host.
        #[arg(long = "move")]
        moving: bool,
        /// Allow a changed working directory for an agent that finds its
        /// conversations by it (claude, codex, gemini, opencode): the
        /// agent's conversation starts anew; the old one stays in the
        /// unit's home.
        #[arg(long)]
        new_conversation: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Remove instances and everything they own (desired phase Purged), or
    /// delete a workspace or agent (`delete workspace NAME`); `-f FILE`
    /// deletes what the file holds.
    Delete {
        /// Instance names, or `workspace NAME` or `agent NAME`.
        #[arg(value_name = "NAME|KIND")]
        targets: Vec<String>,
        #[command(flatten)]
        select: SelectArgs,
        /// Print the steps it would take, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Discard unfinished work in isolated checkouts without asking (it
        /// is still shown).
        #[arg(long)]
        force: bool,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Resume a session of (workspace, role, agent) or start a new one, and
    /// attach to it.
    Launch(LaunchArgs),
    /// Converge an instance to running and attach this terminal to its
    /// agent; when the session ends, settle it by the workspace's exit policy.
    Attach {
        /// Instance name.
        name: String,
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Run the convergence loop continuously (or one pass with --once).
    Controller(ControllerArgs),
    /// Repair and remove what crashes and others left behind.
    Prune {
        /// Print what would be done, change nothing.
        #[arg(long)]
        dry_run: bool,
        /// Also remove images jackin built that no instance pins.
        #[arg(long)]
        images: bool,
        /// Also remove every save of discarded work now (`jackin get
        /// discarded` lists them), with the pins they hold in the host
        /// repositories, rather than when each expires.
        #[arg(long)]
        discarded: bool,
        /// Also purge the sessions that ended Crashed or Failed longer ago
        /// than this (`7d`, `12h`), as `set-phase purged` does: unfinished
        /// work in their checkouts is shown and asked about, and saved.
        #[arg(long, value_name = "AGE", value_parser = parse_age)]
        failed_after: Option<Duration>,
        /// With --failed-after: discard unfinished work without asking (it
        /// is still shown, and saved).
        #[arg(long, requires = "failed_after")]
        force: bool,
    },
    /// Bring back the unfinished work jackin saved when it discarded an
    /// instance's isolated checkouts (`jackin get discarded` lists it): as
    /// branches in the host repository under `jackin/restored/NAME/`, or
    /// with `--to DIR` as a new checkout directory. With `--session`, the
    /// removed session itself: a new instance with the saved spec and the
    /// agent's conversation, which its next start resumes.
    RestoreDiscarded {
        /// The save's name, or its instance's name when it has one save.
        name: String,
        /// Make the session again: a new instance with the saved spec, the
        /// agent's saved state in its home and its conversation's record.
        #[arg(long, conflicts_with_all = ["to", "mount"])]
        session: bool,
        /// With --session: the new instance's name (the saved one's when
        /// omitted, if it is free).
        #[arg(long = "name", value_name = "NEW", requires = "session")]
        new_name: Option<String>,
        /// Make a new checkout here (never an existing path): the files,
        /// staged state, branches, stash and HEAD as they were.
        #[arg(long, value_name = "DIR")]
        to: Option<PathBuf>,
        /// Only the checkout of this mount (its destination, as
        /// `/workspace/app`); needed with --to when the save holds several.
        #[arg(long, value_name = "DST")]
        mount: Option<String>,
        /// With --session: how long to wait for the new session to run.
        #[command(flatten)]
        wait: WaitArgs,
    },
    /// Check what sessions need of this machine and this shell: every
    /// engine answers, git can be confined (Landlock), the home has room,
    /// and each instance's logins are here (files under sync, variables
    /// under token); each finding with what to do. Exits 1 when something
    /// stops sessions from starting.
    Doctor {
        /// Output format.
        #[arg(short, long, value_enum, default_value_t = DoctorFormat::Text)]
        output: DoctorFormat,
    },
    /// Print or write the CustomResourceDefinitions of jackin's resources.
    Crds {
        /// Write one file per CRD into this directory instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Every instance on one live screen, with what each asks of you
    /// (attention) and a key for each action; on no terminal, what `get -o
    /// wide -w` prints plus the attention.
    Top(TopArgs),
    /// Print what the agent printed, from its container's log.
    Logs(LogsArgs),
    /// Print where the instance's published ports are reached: each as
    /// `NAME http://ADDRESS:PORT`, or with PORT that port's URL alone.
    Port {
        /// The instance (`NAME` or `instance/NAME`).
        name: String,
        /// One of its ports, by name (`web`).
        port: Option<String>,
    },
    /// Run a command in an instance's container, as the agent's user.
    Exec(ExecArgs),
    /// Author a role repository: check one (`role validate DIR`) or write
    /// a starter one (`role init DIR`).
    Role {
        #[command(subcommand)]
        command: RoleCommand,
    },
    /// Print a shell completion script: the commands and flags, and the
    /// names of instances, workspaces, agents and saved discards as they
    /// are when a word is completed.
    Completions {
        /// The shell the script is for.
        shell: clap_complete::Shell,
    },
    /// What the completion scripts call: the names the next word may be,
    /// after the words typed so far.
    #[command(name = "__complete-names", hide = true)]
    CompleteNames {
        /// The command line after `jackin`, up to the word being completed.
        #[arg(last = true, value_name = "WORDS")]
        words: Vec<String>,
    },
}

/// Instances chosen by their labels or by manifest files.
#[derive(Debug, Args)]
pub struct SelectArgs {
    /// Only instances whose labels match: key=value, key!=value, key or
    /// !key, separated by commas (all must hold).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// The objects a manifest file or directory holds; may be repeated.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<PathBuf>,
}

#[derive(Debug, Args)]
pub struct ExecArgs {
    /// Instance name.
    pub name: String,
    /// Keep standard input open and pass it to the command.
    #[arg(short, long)]
    pub interactive: bool,
    /// Give the command a terminal (needs one here).
    #[arg(short, long)]
    pub tty: bool,
    /// The command and its arguments, after `--`.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

#[derive(Debug, Args)]
pub struct TopArgs {
    /// Do not ring the terminal bell when an instance starts to need you.
    #[arg(long)]
    pub no_bell: bool,
}

#[derive(Debug, Args)]
pub struct LogsArgs {
    /// Instance name.
    pub name: String,
    /// A sidecar's log instead of the agent's (its `spec.sidecars` name).
    #[arg(short = 'c', long = "container", value_name = "SIDECAR")]
    pub container: Option<String>,
    /// Keep printing what the agent writes next, across container
    /// replacements, until the session is kept, purged or ends.
    #[arg(short, long)]
    pub follow: bool,
    /// Only output from this long ago on (e.g. 90s, 5m).
    #[arg(long, value_name = "DURATION", value_parser = parse_duration)]
    pub since: Option<Duration>,
    /// Only the last N lines.
    #[arg(long, value_name = "N")]
    pub tail: Option<u64>,
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// Files or directories (every *.yaml and *.yml file below them, in path
    /// order); `-` reads stdin.
    #[arg(value_name = "PATH", required_unless_present = "files")]
    pub paths: Vec<PathBuf>,
    /// The same as a PATH argument; may be repeated.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// Validate and print what would change, write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// The paths are a source that owns what it applies: objects an earlier
    /// `--prune` apply of the same paths created, and that are gone from
    /// them, are pruned (instances purged, workspaces and agents deleted).
    #[arg(long)]
    pub prune: bool,
    #[command(flatten)]
    pub wait: WaitArgs,
}

#[derive(Debug, Args)]
pub struct DiffArgs {
    /// Files or directories, as for `apply`; `-` reads stdin.
    #[arg(value_name = "PATH", required_unless_present = "files")]
    pub paths: Vec<PathBuf>,
    /// The same as a PATH argument; may be repeated.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// As `apply --prune` would: with the source's label, and what it
    /// would prune shown as removed.
    #[arg(long)]
    pub prune: bool,
}

impl Command {
    /// How the command waits, for those that converge: its `--timeout` is
    /// the command's own deadline (see `deadline`).
    pub fn wait(&self) -> Option<&WaitArgs> {
        match self {
            Self::Apply(args) => Some(&args.wait),
            Self::Launch(args) => Some(&args.wait),
            Self::SetPhase { wait, .. }
            | Self::Rollout { wait, .. }
            | Self::Delete { wait, .. }
            | Self::Attach { wait, .. }
            | Self::RestoreDiscarded {
                session: true,
                wait,
                ..
            } => Some(wait),
            _ => None,
        }
    }
}

/// What `jackin role` does.
#[derive(Debug, Subcommand)]
pub enum RoleCommand {
    /// Check DIR's jackin.role.yaml and the Dockerfile it names as `apply`
    /// checks a document: every error with its file, line and column.
    /// Reads only; exits 1 when there is any.
    Validate {
        /// The role repository's work tree.
        dir: PathBuf,
    },
    /// Write a starter role into DIR (made when missing): a Dockerfile and
    /// a jackin.role.yaml that `role validate` passes. Nothing is
    /// overwritten.
    Init {
        /// Where the role goes.
        dir: PathBuf,
    },
}

/// How a one-shot command waits for the convergence it asked for.
#[derive(Debug, Args)]
pub struct WaitArgs {
    /// Give up waiting after this long (e.g. 90s, 5m, 1h).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub timeout: Duration,
    /// Record the desired state and return; a running controller converges it.
    #[arg(long)]
    pub no_wait: bool,
    /// Instances converged at once.
    #[arg(long, value_name = "N", default_value_t = converge::DEFAULT_CONCURRENCY, value_parser = parse_concurrency)]
    pub concurrency: usize,
}

#[derive(Debug, Args)]
pub struct LaunchArgs {
    /// The workspace the session belongs to: a Workspace applied before
    /// (`jackin get workspaces` lists them), whose policy it runs under.
    #[arg(long, short = 'w', value_name = "WORKSPACE")]
    pub workspace: String,
    /// The role: the name a workspace's `spec.roles` entry or an
    /// instance's `spec.role.name` gives it (`tester`, `architect`).
    #[arg(long, short = 'r', value_name = "ROLE")]
    pub role: String,
    /// The agent that runs in the session: a built-in (claude, codex,
    /// gemini, aider, opencode, amp, kimi, shell) or an Agent applied
    /// before (`jackin get agents` lists them).
    #[arg(long, short = 'a', value_name = "AGENT")]
    pub agent: String,
    /// An Instance manifest a new session starts from, named as the file
    /// names it unless --name is given (default: the workspace's
    /// `spec.roles` entry for the role, else the most recent healthy
    /// session of the same workspace, role and agent).
    #[arg(long, value_name = "FILE")]
    pub from: Option<PathBuf>,
    /// Start a new session with this instance name (a DNS-1123 label that no
    /// instance has), without offering a session to resume.
    #[arg(long, value_name = "NAME")]
    pub name: Option<String>,
    /// Keep this session when it ends, whatever the workspace's policy (this
    /// launch's session only: a later resume follows the policy again).
    #[arg(long, conflicts_with = "clean")]
    pub keep: bool,
    /// Clean this session up when it ends, whatever the workspace's policy
    /// (this launch's session only).
    #[arg(long)]
    pub clean: bool,
    /// A new session does not run the workspace's setup (recorded as
    /// skipped); a resumed one ran it already.
    #[arg(long)]
    pub skip_setup: bool,
    #[command(flatten)]
    pub wait: WaitArgs,
}

#[derive(Debug, Args)]
pub struct ControllerArgs {
    /// Reconciles running at once.
    #[arg(long, value_name = "N", default_value_t = converge::DEFAULT_CONCURRENCY, value_parser = parse_concurrency)]
    pub concurrency: usize,
    /// Look at every instance this often, events or not (e.g. 5m).
    #[arg(long, value_name = "DURATION", default_value = "5m", value_parser = parse_duration)]
    pub resync: Duration,
    /// One pass over every instance from a single engine snapshot, then exit.
    #[arg(long)]
    pub once: bool,
    /// Run the sweeps (what `jackin prune` does) this often (e.g. 10m).
    #[arg(long, value_name = "DURATION", default_value = "10m", value_parser = parse_duration)]
    pub sweep: Duration,
    /// Keep this directory applied, with prune, whenever its files change
    /// (a policy repository's work tree); may be repeated.
    #[arg(long, value_name = "DIR")]
    pub sync: Vec<PathBuf>,
    /// Serve /metrics (Prometheus text), /healthz and /readyz at this
    /// address (HOST:PORT, or a port alone for 127.0.0.1); off unless given.
    #[arg(long, value_name = "ADDR", conflicts_with = "once")]
    pub metrics_addr: Option<String>,
    /// Keep a read-only stream of every running container's output and look
    /// at them every few seconds, publishing each look under the home, so
    /// that `jackin get -o wide` reads it instead of one log call per
    /// running instance (and sees prompts with no newline). Costs memory per
    /// running container (README, Speed); on with --metrics-addr too.
    #[arg(long, conflicts_with = "once")]
    pub watch_output: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// `90`, `90s`, `5m`, `1h`: at least one second, at most a week (the
/// format every duration in jackin uses, flags and files alike).
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    jackin_api::validate::duration(text)
}

/// How long ago something ended: `7d` (days, up to ten years), or a
/// duration as [`parse_duration`] takes it (`90s`, `12h`).
pub fn parse_age(text: &str) -> Result<Duration, String> {
    const MAX_DAYS: u64 = 3650;
    match text.trim().strip_suffix('d').map(str::parse::<u64>) {
        Some(Ok(days @ 1..=MAX_DAYS)) => Ok(Duration::from_secs(days * 86_400)),
        Some(_) => Err(format!(
            "{text:?}: expected a whole number of days from 1 to {MAX_DAYS} (7d), or a duration \
             (90s, 12h)"
        )),
        None => parse_duration(text),
    }
}

/// A count of workers: 1 to 64.
pub fn parse_concurrency(text: &str) -> Result<usize, String> {
    match text.parse::<usize>() {
        Ok(n) if (1..=64).contains(&n) => Ok(n),
        _ => Err(format!("{text:?}: expected a whole number from 1 to 64")),
    }
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// `instances` (default), `workspaces`, `agents`, `providers`, `sources`
    /// or `discarded` (saved work of discarded checkouts), or an instance name.
    #[arg(value_name = "KIND|NAME")]
    pub first: Option<String>,
    /// A name, after a kind.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Only instances whose labels match: key=value, key!=value, key or
    /// !key, separated by commas (all must hold).
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub selector: Option<String>,
    /// Keep watching: print a line whenever an instance's phase or
    /// readiness changes, until interrupted.
    #[arg(short, long)]
    pub watch: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Wide,
    Yaml,
    Json,
    /// `kind/NAME`, one per line.
    Name,
}

/// How `jackin doctor` prints its findings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum DoctorFormat {
    Text,
    Yaml,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PhaseArg {
    Running,
    Kept,
    Purged,
}

impl PhaseArg {
    pub fn parse(word: &str) -> Option<Self> {
        <Self as ValueEnum>::from_str(word, true).ok()
    }

    /// `set-phase NAME… PHASE`: takes the phase off the end of `targets`.
    pub fn take_last(targets: &mut Vec<String>) -> Result<DesiredPhase, UsageError> {
        let word = targets.pop().unwrap_or_default();
        let phase = Self::parse(&word).ok_or_else(|| {
            UsageError(format!(
                "{word:?} is not a phase: expected `set-phase NAME… running|kept|purged`"
            ))
        })?;
        Ok(phase.into())
    }
}

impl From<PhaseArg> for DesiredPhase {
    fn from(p: PhaseArg) -> Self {
        match p {
            PhaseArg::Running => DesiredPhase::Running,
            PhaseArg::Kept => DesiredPhase::Kept,
            PhaseArg::Purged => DesiredPhase::Purged,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every flag and argument of every command says what it is for in
    /// `--help`: an undescribed one is a question the operator has to
    /// answer by reading the source.
    #[test]
    fn every_flag_has_help_text() {
        use clap::CommandFactory;
        fn undescribed(command: &clap::Command, path: &str, found: &mut Vec<String>) {
            for arg in command.get_arguments() {
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    found.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in command.get_subcommands() {
                undescribed(sub, &format!("{path} {}", sub.get_name()), found);
            }
        }
        let mut found = Vec::new();
        undescribed(&Cli::command(), "jackin", &mut found);
        assert!(found.is_empty(), "without help text: {found:?}");
    }

    /// `launch --help` names every built-in agent: one left out is one a
    /// new user does not know to ask for.
    #[test]
    fn launch_help_names_every_built_in_agent() {
        use clap::CommandFactory;
        let cli = Cli::command();
        let launch = cli
            .find_subcommand("launch")
            .expect("jackin has a launch command");
        let agent = launch
            .get_arguments()
            .find(|a| a.get_id() == "agent")
            .expect("launch takes an agent");
        let help = agent
            .get_help()
            .map(ToString::to_string)
            .unwrap_or_default();
        for builtin in jackin_api::agent::builtin() {
            let name = &builtin.metadata.name;
            assert!(help.contains(name.as_str()), "{name} is not in {help:?}");
        }
    }

    #[test]
    fn ages_take_days_and_durations() {
        assert_eq!(parse_age("7d"), Ok(Duration::from_secs(7 * 86_400)));
        assert_eq!(parse_age("1s"), Ok(Duration::from_secs(1)));
        assert_eq!(parse_age("12h"), Ok(Duration::from_secs(12 * 3600)));
        for bad in ["0d", "d", "1.5d", "3651d", "-1d", "0s"] {
            assert!(parse_age(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("90"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("90s"), Ok(Duration::from_secs(90)));
        assert_eq!(parse_duration("5m"), Ok(Duration::from_secs(300)));
        assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("5d").is_err());
        assert!(parse_duration("m").is_err());
        assert!(parse_duration("0s").unwrap_err().contains("zero"));
        assert!(parse_duration("169h").unwrap_err().contains("too long"));
        let overflow = parse_duration("18446744073709551615h").unwrap_err();
        assert!(overflow.contains("18446744073709551615h"), "{overflow}");
        assert!(
            parse_duration("18446744073709551615")
                .unwrap_err()
                .contains("too long")
        );
        // jiff's friendly format, bounded.
        assert_eq!(parse_duration("1h30m"), Ok(Duration::from_secs(5400)));
        assert_eq!(parse_duration("2 hours"), Ok(Duration::from_secs(7200)));
        assert!(parse_duration("-5m").unwrap_err().contains("negative"));
        assert!(
            parse_duration("500ms")
                .unwrap_err()
                .contains("under a second")
        );
        assert!(parse_duration("5 weeks").is_err());
        assert_eq!(
            parse_duration("168h"),
            Ok(Duration::from_secs(7 * 24 * 3600))
        );
        assert!(parse_concurrency("0").is_err());
        assert_eq!(parse_concurrency("8"), Ok(8));
    }
}

/// A command line that does not say what to do (a missing or contradictory
/// argument clap cannot tell): exit status 2, as clap's own usage errors.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}
