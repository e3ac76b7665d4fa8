//! Shell completion: clap's generated script for the commands and flags,
//! and, added to it, the names of what exists (instances, workspaces, roles,
//! agents, saved discards), which a generated script cannot know.
//!
//! The names come from the home at the moment of completion: each shell's
//! addition asks `jackin __complete-names -- WORDS…` (the words typed so
//! far), which decides what the next word names and prints those names as
//! `jackin get KIND -o name` lists them, without the `KIND/`. Deciding it
//! here, once, rather than in each of the three shells' languages, keeps
//! the three alike and testable as Rust; clap_complete's dynamic
//! completion would do the same but is behind an unstable feature whose
//! API may change in any release.

use std::io::Write;

use anyhow::Result;
use clap::CommandFactory;
use clap_complete::Shell;
use jackin_controller::Store;

use crate::args::Cli;

/// What the word being completed names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Names {
    Instances,
    Workspaces,
    Agents,
    /// The roles: the workspaces' `spec.roles` and the instances'
    /// `spec.role.name`.
    Roles,
    Providers,
    Discarded,
}

/// Prints the completion script for `shell`: clap's, then the names.
pub fn print_script(shell: Shell) -> Result<()> {
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), "jackin", &mut script);
    script.extend_from_slice(addition(shell).as_bytes());
    // Written whole: a reader that goes away is an error to report, not a
    // panic inside the generator.
    std::io::stdout().write_all(&script)?;
    Ok(())
}

/// What each shell adds to clap's script: a second source of candidates,
/// the names `jackin __complete-names` prints for the words so far.
fn addition(shell: Shell) -> &'static str {
    match shell {
        Shell::Bash => include_str!("completion/names.bash"),
        Shell::Zsh => include_str!("completion/names.zsh"),
        Shell::Fish => include_str!("completion/names.fish"),
        _ => "",
    }
}

/// `jackin __complete-names -- WORDS…`: the names the next word may be,
/// one per line; nothing when it names nothing jackin keeps. Never fails
/// loudly: a completion that cannot read the home completes nothing.
pub fn print_names(words: &[String]) -> Result<()> {
    let Some(names) = names_after(words) else {
        return Ok(());
    };
    let Ok(store) = crate::context::open_store() else {
        return Ok(());
    };
    let mut out = String::new();
    for name in list(&store, names).unwrap_or_default() {
        out.push_str(&name);
        out.push('\n');
    }
    std::io::stdout().write_all(out.as_bytes())?;
    Ok(())
}

fn list(store: &Store, names: Names) -> Result<Vec<String>> {
    Ok(match names {
        Names::Instances => store
            .list_instances()?
            .instances
            .into_iter()
            .map(|o| o.metadata.name)
            .collect(),
        Names::Workspaces => store
            .list_workspaces()?
            .into_iter()
            .map(|o| o.metadata.name)
            .collect(),
        Names::Agents => store
            .agents()?
            .into_iter()
            .map(|(agent, _)| agent.metadata.name)
            .collect(),
        Names::Roles => roles(store)?,
        Names::Providers => crate::provider_output::names(store)?,
        Names::Discarded => jackin_checkouts::discard::list(store.layout())
            .0
            .into_iter()
            .map(|save| save.name)
            .collect(),
    })
}

/// The role names `launch -r` takes: each workspace's `spec.roles` and
/// each instance's `spec.role.name`, once each, in order.
fn roles(store: &Store) -> Result<Vec<String>> {
    let mut roles = std::collections::BTreeSet::new();
    for ws in store.list_workspaces()? {
        roles.extend(ws.spec.roles.into_iter().map(|role| role.name));
    }
    for obj in store.list_instances()?.instances {
        roles.insert(obj.spec.role.name);
    }
    Ok(roles.into_iter().collect())
}

/// What the word after `words` (the command line after `jackin`, up to
/// the word being completed) names, if anything jackin keeps.
pub fn names_after(words: &[String]) -> Option<Names> {
    let command = Cli::command();
    let (verb, rest) = split_verb(&command, words)?;
    let sub = command.find_subcommand(verb)?;
    if let Some(flag) = rest.last().filter(|w| w.starts_with('-')) {
        if let Some(names) = flag_names(verb, flag) {
            return Some(names);
        }
        // The value of another flag: nothing jackin keeps.
        if takes_value(sub, flag) {
            return None;
        }
    }
    let positionals = positionals(sub, rest);
    positional_names(verb, &positionals)
}

/// The subcommand and the words after it, past the global flags.
fn split_verb<'a>(command: &clap::Command, words: &'a [String]) -> Option<(&'a str, &'a [String])> {
    let mut i = 0;
    while let Some(word) = words.get(i) {
        if !word.starts_with('-') {
            return Some((word.as_str(), &words[i + 1..]));
        }
        i += if takes_value(command, word) { 2 } else { 1 };
    }
    None
}

/// Whether `flag` (`-w`, `--workspace`, `--timeout=5m` takes none more)
/// is one of `command`'s flags that take a value in the next word.
fn takes_value(command: &clap::Command, flag: &str) -> bool {
    if flag.contains('=') {
        return false;
    }
    command.get_arguments().any(|arg| {
        let named = match flag.strip_prefix("--") {
            Some(long) => arg.get_long() == Some(long),
            None => flag.len() == 2 && arg.get_short() == flag.chars().nth(1),
        };
        named && arg.get_action().takes_values()
    })
}

/// The positional words among `rest`, flags and their values left out;
/// nothing after `--` counts (the command `exec` runs).
fn positionals<'a>(sub: &clap::Command, rest: &'a [String]) -> Vec<&'a str> {
    let mut words = Vec::new();
    let mut i = 0;
    while let Some(word) = rest.get(i) {
        if word == "--" {
            return vec!["--"];
        }
        if word.starts_with('-') {
            i += if takes_value(sub, word) { 2 } else { 1 };
            continue;
        }
        words.push(word.as_str());
        i += 1;
    }
    words
}

/// The flags whose value is a name jackin keeps.
fn flag_names(verb: &str, flag: &str) -> Option<Names> {
    match (verb, flag) {
        ("launch", "-w" | "--workspace") => Some(Names::Workspaces),
        ("launch", "-r" | "--role") => Some(Names::Roles),
        ("launch", "-a" | "--agent") => Some(Names::Agents),
        _ => None,
    }
}

/// What the next positional word of `verb` names, after `before`.
fn positional_names(verb: &str, before: &[&str]) -> Option<Names> {
    let kind = |word: &str| match word {
        "instance" | "instances" => Some(Names::Instances),
        "workspace" | "workspaces" => Some(Names::Workspaces),
        "agent" | "agents" => Some(Names::Agents),
        "provider" | "providers" => Some(Names::Providers),
        "discarded" => Some(Names::Discarded),
        _ => None,
    };
    match (verb, before) {
        ("attach" | "logs" | "exec" | "port", []) => Some(Names::Instances),
        // Any number of names (set-phase's last word is the phase).
        ("set-phase" | "rollout", _) => Some(Names::Instances),
        ("restore-discarded", []) => Some(Names::Discarded),
        ("describe" | "get", []) => Some(Names::Instances),
        ("describe" | "get", [first]) => kind(first),
        ("delete", []) => Some(Names::Instances),
        ("delete", [first, ..]) => match kind(first) {
            Some(Names::Workspaces) => Some(Names::Workspaces),
            Some(Names::Agents) => Some(Names::Agents),
            _ => Some(Names::Instances),
        },
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn after(line: &str) -> Option<Names> {
        let words: Vec<String> = line.split_whitespace().map(str::to_owned).collect();
        names_after(&words)
    }

    #[test]
    fn each_place_of_a_name_is_told_apart() {
        assert_eq!(after("attach"), Some(Names::Instances));
        assert_eq!(after("-v --log-format json attach"), Some(Names::Instances));
        assert_eq!(after("attach one"), None);
        assert_eq!(after("attach --timeout"), None);
        assert_eq!(after("launch -w"), Some(Names::Workspaces));
        assert_eq!(after("launch -r x --agent"), Some(Names::Agents));
        assert_eq!(after("launch -r"), Some(Names::Roles));
        assert_eq!(after("launch --role x -a y"), None);
        assert_eq!(after("describe workspace"), Some(Names::Workspaces));
        assert_eq!(after("describe agent"), Some(Names::Agents));
        assert_eq!(after("describe provider"), Some(Names::Providers));
        assert_eq!(after("get providers"), Some(Names::Providers));
        assert_eq!(after("get discarded"), Some(Names::Discarded));
        assert_eq!(after("restore-discarded"), Some(Names::Discarded));
        assert_eq!(after("delete workspace"), Some(Names::Workspaces));
        assert_eq!(after("delete a b"), Some(Names::Instances));
        assert_eq!(after("set-phase a b"), Some(Names::Instances));
        assert_eq!(after("exec one --"), None);
        assert_eq!(after("apply"), None);
        assert_eq!(after(""), None);
    }
}
