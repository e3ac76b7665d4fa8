//! `jackin launch`: for a (workspace, role, agent), resume a previous session
//! or start a new one, then attach to it.

use std::path::Path;

use anyhow::{Context, Result, anyhow, bail};
use jackin_api::agent::Strategy;
use jackin_api::manifest;
use jackin_api::names::annotation;
use jackin_api::{DesiredPhase, Instance, Object};
use jackin_controller::Store;
use jackin_controller::engines::Engines;
use jackin_reconcilers::assess::has_unfinished_work;
use jiff::Timestamp;

use crate::args::LaunchArgs;
use crate::cmd::attach::{self, Keyboard};
use crate::output;
use crate::screens::{self, Screen};

/// The instances of (workspace, role, agent) that can be resumed, most
/// recent first: kept ones, clean or not, and ended or running ones.
fn restorable(store: &Store, args: &LaunchArgs) -> Result<Vec<Instance>> {
    let mut found: Vec<Instance> = store
        .list_instances()?
        .instances
        .into_iter()
        .filter(|obj| {
            obj.spec.workspace.as_deref() == Some(args.workspace.as_str())
                && obj.spec.role.name == args.role
                && obj.spec.agent == args.agent
                && obj.desired_phase() != DesiredPhase::Purged
        })
        .collect();
    found.sort_by_key(|obj| std::cmp::Reverse(obj.metadata.creation_timestamp));
    Ok(found)
}

/// "clean", or what unfinished work the checkouts hold.
fn summary(obj: &Instance) -> String {
    let mounts = obj
        .status
        .as_ref()
        .map(|s| s.mounts.as_slice())
        .unwrap_or_default();
    let unfinished: Vec<_> = mounts.iter().filter(|m| has_unfinished_work(m)).collect();
    if unfinished.is_empty() {
        return "clean".into();
    }
    let files: usize = unfinished.iter().map(|m| m.dirty_files.len()).sum();
    let branches: usize = unfinished.iter().map(|m| m.unpushed_branches.len()).sum();
    format!("{files} files uncommitted, {branches} branches unpushed")
}

/// Whether resuming the session brings its agent's conversation back.
fn conversation(obj: &Instance) -> &'static str {
    let strategy = obj
        .status
        .as_ref()
        .and_then(|s| s.conversation.as_ref())
        .map(|c| c.strategy);
    match strategy {
        Some(Strategy::Id | Strategy::Latest) => "resumes its conversation",
        Some(Strategy::None) | None => "starts a new conversation",
    }
}

/// Screen C: "Start new session" first, then each session to resume.
async fn choose(
    args: &LaunchArgs,
    found: &[Instance],
    keyboard: &mut Keyboard,
) -> Result<Option<usize>> {
    let now = Timestamp::now();
    let mut choices = vec![(
        "Start new session".to_owned(),
        "a fresh instance".to_owned(),
    )];
    for obj in found {
        let phase = obj
            .status
            .as_ref()
            .and_then(|s| s.phase)
            .map_or("-".into(), |p| p.to_string());
        choices.push((
            format!("Resume {}", obj.metadata.name),
            format!(
                "{} ago · {phase} · {} · {}",
                output::age(obj.metadata.creation_timestamp, now),
                summary(obj),
                conversation(obj)
            ),
        ));
    }
    let screen = Screen {
        label: "launch",
        context: vec![format!(
            "{} ({}) · workspace {}",
            args.role, args.agent, args.workspace
        )],
        choices,
        confirm_only: false,
    };
    match screens::choose(&screen, keyboard).await? {
        None => bail!("no choice was made"),
        Some(0) => Ok(None),
        Some(n) => Ok(Some(n - 1)),
    }
}

/// Screen D: before a preserved checkout with unfinished work is reused,
/// the operator sees what is in it.
async fn review_before_reuse(obj: &Instance, keyboard: &mut Keyboard) -> Result<()> {
    let mounts = obj
        .status
        .as_ref()
        .map(|s| s.mounts.clone())
        .unwrap_or_default();
    if !mounts.iter().any(has_unfinished_work) {
        return Ok(());
    }
    let mut context = vec![
        format!(
            "Resuming {}: its isolated checkouts hold unfinished work:",
            obj.metadata.name
        ),
        String::new(),
    ];
    context.extend(output::mounts_evidence(&mounts).lines().map(str::to_owned));
    context.push(String::new());
    context.push("The session resumes on these checkouts as they are.".to_owned());
    let screen = Screen {
        label: "resume",
        context,
        choices: vec![("Continue".into(), "resume on these checkouts".into())],
        confirm_only: true,
    };
    match screens::choose(&screen, keyboard).await? {
        Some(_) => Ok(()),
        None => bail!("resume aborted"),
    }
}

/// A launch names a workspace that exists: a typo would otherwise start a
/// session under no policy at all.
fn check_workspace(store: &Store, name: &str) -> Result<()> {
    if store.get_workspace(name)?.is_some() {
        return Ok(());
    }
    let known: Vec<String> = store
        .list_workspaces()?
        .into_iter()
        .map(|w| w.metadata.name)
        .collect();
    let closest = known
        .iter()
        .map(|k| (edit_distance(name, k), k))
        .filter(|(distance, k)| *distance <= k.len().max(name.len()) / 3 + 1)
        .min();
    match closest {
        Some((_, suggestion)) => bail!(
            "workspace {name:?} not found; did you mean {suggestion:?}?\nhint: `jackin get \
             workspaces` lists them"
        ),
        None => bail!(
            "workspace {name:?} not found\nhint: apply a Workspace named {name} first (`jackin get \
             workspaces` lists them)"
        ),
    }
}

/// The number of single-character edits between `a` and `b`.
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut diagonal = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let above = row[j + 1];
            row[j + 1] = (above + 1)
                .min(row[j] + 1)
                .min(diagonal + usize::from(ca != *cb));
            diagonal = above;
        }
    }
    row[b.len()]
}

/// The spec a new session starts from: the template file, else the most
/// recent session of the same (workspace, role, agent).
fn template(args: &LaunchArgs, found: &[Instance]) -> Result<Instance> {
    if let Some(path) = &args.from {
        return read_template(path);
    }
    found.first().cloned().ok_or_else(|| {
        anyhow!(
            "no session of {} ({}) in workspace {} to start from\nhint: pass --from FILE with an Instance manifest",
            args.role,
            args.agent,
            args.workspace
        )
    })
}

/// Several problems as one error, a line each.
fn one_error<E: std::fmt::Display>(errors: &[E]) -> anyhow::Error {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    anyhow!("{}", lines.join("\n"))
}

fn read_template(path: &Path) -> Result<Instance> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let objects =
        manifest::parse(&path.display().to_string(), &text).map_err(|errs| one_error(&errs))?;
    match objects.into_iter().next() {
        Some(Object::Instance(obj)) => Ok(*obj),
        _ => bail!("{}: expected an Instance", path.display()),
    }
}

/// The exit policy `--keep` / `--clean` ask for.
fn policy_override(args: &LaunchArgs) -> Option<&'static str> {
    match (args.keep, args.clean) {
        (true, _) => Some("keep"),
        (_, true) => Some("clean"),
        _ => None,
    }
}

/// Creates the new session's instance as `<role>-<n>` with the smallest
/// free `n`. Another launch may take that name between looking and
/// creating: then the next free one is tried, never the other's instance.
fn create_with_a_free_name(store: &Store, mut obj: Instance, role: &str) -> Result<String> {
    const ATTEMPTS: usize = 16;
    for _ in 0..ATTEMPTS {
        let name = new_name(store, role)?;
        obj.metadata.name = name.clone();
        jackin_api::validate::instance(&obj).map_err(|errs| one_error(&errs))?;
        crate::pause_here_if_asked("launch-create");
        if store.create_new_instance(&obj)? {
            eprintln!("instance/{name} created");
            return Ok(name);
        }
    }
    bail!("could not find a free name for a new {role} session after {ATTEMPTS} tries")
}

/// `<role>-<n>` with the smallest free `n`.
fn new_name(store: &Store, role: &str) -> Result<String> {
    let taken: Vec<String> = store.rows()?.into_iter().map(|r| r.name).collect();
    let base: String = role.chars().take(56).collect();
    (1..)
        .map(|n| format!("{base}-{n}"))
        .find(|name| !taken.contains(name))
        .ok_or_else(|| anyhow!("no free name"))
}

pub async fn run(store: Store, engines: Engines, args: &LaunchArgs) -> Result<()> {
    check_workspace(&store, &args.workspace)?;
    let found = restorable(&store, args)?;
    let mut keyboard = Keyboard::start();
    let choice = match found.is_empty() {
        true => None,
        false => choose(args, &found, &mut keyboard).await?,
    };
    let name = match choice {
        Some(i) => {
            review_before_reuse(&found[i], &mut keyboard).await?;
            found[i].metadata.name.clone()
        }
        None => {
            let mut obj = template(args, &found)?;
            obj.metadata = jackin_api::ObjectMeta {
                labels: obj.metadata.labels,
                ..Default::default()
            };
            obj.status = None;
            // The override is part of the instance from its first moment,
            // so a loop that starts it first already knows it.
            if let Some(policy) = policy_override(args) {
                obj.metadata
                    .annotations
                    .insert(annotation::EXIT_POLICY.to_owned(), policy.to_owned());
            }
            obj.spec.phase = DesiredPhase::Running;
            obj.spec.workspace = Some(args.workspace.clone());
            obj.spec.role.name = args.role.clone();
            obj.spec.agent = args.agent.clone();
            create_with_a_free_name(&store, obj, &args.role)?
        }
    };
    if let Some(policy) = policy_override(args) {
        store.set_annotation(&name, annotation::EXIT_POLICY, Some(policy))?;
    }
    attach::run(store, engines, &name, &args.wait, &mut keyboard).await
}
