//! Which objects a command acts on: named, selected by labels (`-l`), or
//! listed in manifest files (`-f`), as kubectl selects them.

use std::path::PathBuf;

use anyhow::Result;
use jackin_api::Object;
use jackin_api::selector::Selector;
use jackin_controller::{Store, source};

use crate::cmd::apply::read_inputs;
use crate::{UsageError, check_name};

/// How a command names its targets.
#[derive(Debug, Default)]
pub struct Targets<'a> {
    pub names: &'a [String],
    pub selector: Option<&'a str>,
    pub files: &'a [PathBuf],
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

/// Parses a `-l` selector; a bad one is a usage error.
pub fn selector(text: &str) -> Result<Selector> {
    Selector::parse(text).map_err(|e| UsageError(format!("-l {e}")).into())
}

impl Targets<'_> {
    /// Resolves the targets. Giving none at all is a usage error; a
    /// selector that matches nothing selects nothing.
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
            check_name(name)?;
            add(&mut selected.instances, name.clone());
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
