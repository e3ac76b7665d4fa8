//! Which objects a command acts on: named, selected by labels (`-l`), or
//! listed in manifest files (`-f`), as kubectl selects them.

use std::path::PathBuf;

use anyhow::{Result, anyhow};
use jackin_api::Object;
use jackin_api::selector::Selector;
use jackin_controller::{Store, source};

use crate::args::UsageError;
use crate::context::check_name;
use crate::inputs::read_inputs;

/// How a command names its targets.
#[derive(Debug, Default)]
pub struct Targets<'a> {
    pub names: &'a [String],
    pub selector: Option<&'a str>,
    pub files: &'a [PathBuf],
}

impl<'a> Targets<'a> {
    /// The names given on the command line and the `-l`/`-f` that select.
    pub fn new(names: &'a [String], select: &'a crate::args::SelectArgs) -> Self {
        Self {
            names,
            selector: select.selector.as_deref(),
            files: &select.files,
        }
    }
}

/// What the targets come to, in the order given, each once.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Selected {
    pub instances: Vec<String>,
    /// Workspaces and agents listed in the files (for `delete -f`).
    pub workspaces: Vec<String>,
    pub agents: Vec<String>,
}

impl Selected {
    pub fn is_empty(&self) -> bool {
        self.instances.is_empty() && self.workspaces.is_empty() && self.agents.is_empty()
    }
}

/// The kinds of object a name on the command line may be qualified with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Instance,
    Workspace,
    Agent,
    Provider,
    Source,
    Discarded,
}

impl Kind {
    /// The kind a word names, as kubectl spells kinds: singular, plural or
    /// short (`instance`, `instances`, `inst`).
    pub fn from_word(word: &str) -> Option<Self> {
        Some(match word {
            "instances" | "instance" | "inst" => Self::Instance,
            "workspaces" | "workspace" | "ws" => Self::Workspace,
            "agents" | "agent" | "ag" => Self::Agent,
            "providers" | "provider" => Self::Provider,
            "sources" | "source" => Self::Source,
            "discarded" => Self::Discarded,
            _ => return None,
        })
    }

    /// The word `get -o name` prints before the slash.
    pub fn word(self) -> &'static str {
        match self {
            Self::Instance => "instance",
            Self::Workspace => "workspace",
            Self::Agent => "agent",
            Self::Provider => "provider",
            Self::Source => "source",
            Self::Discarded => "discarded",
        }
    }
}

/// `NAME`, or `KIND/NAME` as `get -o name` prints it: the kind when one is
/// given, and the name (unchecked). No name holds a slash, so one that has
/// a slash must start with a kind.
pub fn split_kind(arg: &str) -> Result<(Option<Kind>, &str)> {
    let Some((word, name)) = arg.split_once('/') else {
        return Ok((None, arg));
    };
    match Kind::from_word(word) {
        Some(kind) => Ok((Some(kind), name)),
        // A name that is not one, as check_name reports it.
        None => Err(anyhow!(
            "invalid name {arg:?}: {word:?} is not a kind: expected NAME or KIND/NAME, with KIND \
             instance, workspace, agent, provider, source or discarded"
        )),
    }
}

/// An instance's name as every verb that acts on instances takes it: `NAME`,
/// or `instance/NAME` (`instances/NAME`) as `get -o name` prints it;
/// checked.
pub fn instance_name(arg: &str) -> Result<&str> {
    match split_kind(arg)? {
        (None | Some(Kind::Instance), name) => {
            check_name(name)?;
            Ok(name)
        }
        (Some(kind), _) => Err(UsageError(format!(
            "{arg:?} is a {}, and this command acts on instances: give NAME or instance/NAME",
            kind.word()
        ))
        .into()),
    }
}

/// Parses a `-l` selector; a bad one is a usage error.
pub fn selector(text: &str) -> Result<Selector> {
    Selector::parse(text).map_err(|e| UsageError(format!("-l {e}")).into())
}

impl Targets<'_> {
    /// Whether the instance `name` was named on the command line (not only
    /// selected by labels or listed in a file).
    pub fn named(&self, name: &str) -> bool {
        self.names
            .iter()
            .any(|arg| instance_name(arg).is_ok_and(|n| n == name))
    }

    /// Resolves the targets. Giving none at all is a usage error; a
    /// selector that matches nothing selects nothing.
    /// The instances named or selected, each read now: every one must
    /// exist before a command writes anything. Empty (said on stderr) when
    /// the selection matches none.
    pub fn existing(&self, store: &Store) -> Result<Vec<jackin_api::Instance>> {
        let names = self.resolve(store)?.instances;
        if names.is_empty() {
            eprintln!("No instances found.");
        }
        Ok(names
            .iter()
            .map(|name| store.get_instance(name))
            .collect::<Result<_, _>>()?)
    }

    pub fn resolve(&self, store: &Store) -> Result<Selected> {
        if self.names.is_empty() && self.selector.is_none() && self.files.is_empty() {
            return Err(
                UsageError("name the instances: NAME…, -l SELECTOR or -f FILE".into()).into(),
            );
        }
        let mut selected = Selected::default();
        let add = |list: &mut Vec<String>, name: String| {
            if !list.contains(&name) {
                list.push(name);
            }
        };
        for name in self.names {
            add(&mut selected.instances, instance_name(name)?.to_owned());
        }
        if let Some(text) = self.selector {
            let selector = selector(text)?;
            for obj in store.list_instances()?.instances {
                if selector.matches(&obj.metadata.labels) {
                    add(&mut selected.instances, obj.metadata.name);
                }
            }
        }
        if !self.files.is_empty() {
            let inputs = read_inputs(self.files)?;
            for obj in source::parse(&inputs)? {
                let name = obj.name().to_owned();
                match obj {
                    Object::Instance(_) => add(&mut selected.instances, name),
                    Object::Workspace(_) => add(&mut selected.workspaces, name),
                    Object::Agent(_) => add(&mut selected.agents, name),
                }
            }
        }
        Ok(selected)
    }
}
