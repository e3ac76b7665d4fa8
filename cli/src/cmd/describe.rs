//! `jackin describe NAME` (`instance NAME`, `instance/NAME`): an instance
//! in detail, with its recent events; `jackin describe workspace NAME`: a
//! workspace policy and its instances; `jackin describe agent NAME`: an
//! agent entry and the instances that name it; `jackin describe provider
//! NAME`: a provider, each agent's entry for it, and who picks it.

use anyhow::{Result, anyhow};
use jiff::Timestamp;

use crate::args::UsageError;
use crate::context::{check_name, open_store};
use crate::ops::describe::instance_text;
use crate::output;
use crate::select::{Kind, split_kind};

/// `describe NAME`, `describe KIND NAME` or `describe KIND/NAME`.
pub async fn run(first: &str, second: Option<&str>) -> Result<()> {
    let (kind, name) = match (split_kind(first)?, second) {
        ((Some(kind), name), None) => (kind, name),
        ((None, word), Some(name)) => match Kind::from_word(word) {
            Some(kind) => (kind, name),
            None => {
                return Err(UsageError(format!(
                    "cannot describe a {word:?}: expected NAME, or instance, workspace, agent or \
                     provider NAME"
                ))
                .into());
            }
        },
        ((None, name), None) => (Kind::Instance, name),
        ((Some(_), _), Some(_)) => {
            return Err(UsageError(format!(
                "{first:?} names an object already: `jackin describe {first}`"
            ))
            .into());
        }
    };
    check_name(name)?;
    match kind {
        Kind::Instance => instance(name).await,
        Kind::Workspace => workspace(name),
        Kind::Agent => agent(name),
        Kind::Provider => {
            print!("{}", crate::provider_output::describe(&open_store()?, name)?);
            Ok(())
        }
        Kind::Source | Kind::Discarded => Err(UsageError(format!(
            "describe shows instances, workspaces, agents and providers; for a {0}: `jackin get {0} {name}`",
            kind.word()
        ))
        .into()),
    }
}

async fn instance(name: &str) -> Result<()> {
    print!("{}", instance_text(&open_store()?, name).await?);
    Ok(())
}

fn workspace(name: &str) -> Result<()> {
    let store = open_store()?;
    let ws = store.get_workspace(name)?.ok_or_else(|| {
        anyhow::anyhow!("workspace {name:?} not found\nhint: `jackin get workspaces` lists them")
    })?;
    let members: Vec<_> = store
        .list_instances()?
        .instances
        .into_iter()
        .filter(|obj| obj.spec.workspace.as_deref() == Some(name))
        .collect();
    print!(
        "{}",
        output::describe_workspace(&ws, &members, Timestamp::now())
    );
    Ok(())
}

fn agent(name: &str) -> Result<()> {
    let store = open_store()?;
    let (agent, source) = store
        .agents()?
        .into_iter()
        .find(|(agent, _)| agent.metadata.name == name)
        .ok_or_else(|| anyhow!("agent {name:?} not found\nhint: `jackin get agents` lists them"))?;
    let users: Vec<_> = store
        .list_instances()?
        .instances
        .into_iter()
        .filter(|obj| obj.spec.agent == name)
        .collect();
    print!(
        "{}",
        output::describe_agent(&agent, source, &users, Timestamp::now())?
    );
    Ok(())
}
