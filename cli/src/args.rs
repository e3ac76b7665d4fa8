//! The command line, as clap sees it.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};
use jackin_api::DesiredPhase;

/// jackin keeps AI coding-agent sessions alive across exits, crashes and
/// `docker rm`, and cleans up completely when a session is over.
#[derive(Debug, Parser)]
#[command(name = "jackin", version, propagate_version = true)]
pub struct Cli {
    /// More log output on stderr (-v info, -vv debug, -vvv trace).
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    #[command(subcommand)]
    pub command: Command,
}

#[derive(Debug, Subcommand)]
pub enum Command {
    /// Create or update objects from YAML files or directories.
    Apply(ApplyArgs),
    /// List objects, or print one.
    Get(GetArgs),
    /// Show an instance in detail.
    Describe {
        /// Instance name.
        name: String,
    },
    /// Set an instance's desired phase.
    SetPhase {
        /// Instance name.
        name: String,
        /// The phase to converge to.
        phase: PhaseArg,
        /// Print what would change, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Remove an instance and everything it owns (desired phase Purged).
    Delete {
        /// Instance name.
        name: String,
        /// Print what would change, change nothing.
        #[arg(long)]
        dry_run: bool,
    },
    /// Print or write the CustomResourceDefinitions of jackin's resources.
    Crds {
        /// Write one file per CRD into this directory instead of printing.
        #[arg(long, value_name = "DIR")]
        out: Option<PathBuf>,
    },
    /// Print a shell completion script.
    Completions { shell: clap_complete::Shell },
}

#[derive(Debug, Args)]
pub struct ApplyArgs {
    /// Files or directories (their *.yaml and *.yml files, sorted); `-` reads stdin.
    #[arg(value_name = "PATH")]
    pub paths: Vec<PathBuf>,
    /// The same as a PATH argument; may be repeated.
    #[arg(short = 'f', long = "filename", value_name = "PATH")]
    pub files: Vec<PathBuf>,
    /// Validate and print what would change, write nothing.
    #[arg(long)]
    pub dry_run: bool,
}

#[derive(Debug, Args)]
pub struct GetArgs {
    /// `instances` (default) or `workspaces`, or an instance name.
    #[arg(value_name = "KIND|NAME")]
    pub first: Option<String>,
    /// A name, after a kind.
    #[arg(value_name = "NAME")]
    pub name: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    Table,
    Wide,
    Yaml,
    Json,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PhaseArg {
    Running,
    Kept,
    Purged,
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
