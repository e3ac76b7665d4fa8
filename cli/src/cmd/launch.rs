//! `jackin launch`: for a (workspace, role, agent), resume a previous session
//! or start a new one, then attach to it.

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use jackin_api::agent::Strategy;
use jackin_api::names::annotation;
use jackin_api::{DesiredPhase, Instance, Object};
use jackin_controller::Store;
use jackin_controller::engines::Engines;
use jackin_controller::reconcile::assess_checkouts;
use jackin_controller::source;
use jackin_reconcilers::assess::has_unfinished_work;
use jiff::Timestamp;

use crate::args::LaunchArgs;
use crate::cmd::attach::{self, Keyboard};
use crate::output;
use crate::screens::{self, Answer, Kind, Screen};

/// The instances of (workspace, role, agent) that can be resumed, the most
/// recently used first: kept ones, clean or not, and ended or running ones,
/// with their isolated checkouts assessed now.
async fn restorable(store: &Store, args: &LaunchArgs) -> Result<Vec<Instance>> {
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
    for obj in &mut found {
        if let Some(container) = obj.status.as_ref().and_then(|s| s.container_name.clone()) {
            let mounts = assess_checkouts(store.layout(), &container).await?;
            obj.status.get_or_insert_default().mounts = mounts;
        }
    }
    found.sort_by_key(|obj| std::cmp::Reverse(last_used(obj)));
    Ok(found)
}

/// When a session was last in use: when its last session ended, it was
/// settled or restored, else when it was created.
fn last_used(obj: &Instance) -> Option<Timestamp> {
    let status = obj.status.as_ref();
    [
        status
            .and_then(|s| s.session.as_ref())
            .and_then(|s| s.finished_at),
        status.and_then(|s| s.settled.as_ref()).map(|s| s.at),
        status.and_then(|s| s.restore.as_ref()).map(|r| r.at),
        obj.metadata.creation_timestamp,
    ]
    .into_iter()
    .flatten()
    .max()
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
    let files: usize = unfinished.iter().map(|m| output::dirty_file_count(m)).sum();
    let branches: usize = unfinished.iter().map(|m| m.unpushed_branches.len()).sum();
    let mut parts = Vec::new();
    if files > 0 {
        parts.push(format!(
            "{files} {} dirty",
            output::plural(files, "file", "files")
        ));
    }
    if branches > 0 {
        parts.push(format!(
            "{branches} {} unpushed",
            output::plural(branches, "branch", "branches")
        ));
    }
    parts.join(" · ")
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

/// Screen C: "Start new session" first, then each session to resume, with
/// how long ago it was last used.
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
                output::age(last_used(obj), now),
                summary(obj),
                conversation(obj)
            ),
        ));
    }
    let screen = Screen {
        label: "resume or start new".into(),
        context: vec![format!(
            "{} ({}) · workspace {}",
            args.role, args.agent, args.workspace
        )],
        choices,
        kind: Kind::Choose { filter: true },
    };
    match screens::choose(&screen, keyboard).await? {
        Answer::Abort | Answer::Back => bail!("no choice was made"),
        Answer::Chose(0) => Ok(None),
        Answer::Chose(n) => Ok(Some(n - 1)),
    }
}

/// Screen D: before a session with isolated checkouts is resumed (by
/// `launch`, `attach` or `set-phase running`), the operator sees what is
/// in them, and passes only with Enter; Esc goes back. A session without
/// isolated checkouts has nothing to verify: it resumes at once.
pub async fn verify_preserved_state(
    store: &Store,
    obj: &Instance,
    keyboard: &mut Keyboard,
) -> Result<Answer> {
    let Some(container) = obj.status.as_ref().and_then(|s| s.container_name.clone()) else {
        return Ok(Answer::Chose(0));
    };
    let mounts = assess_checkouts(store.layout(), &container).await?;
    if mounts.is_empty() {
        return Ok(Answer::Chose(0));
    }
    let name = &obj.metadata.name;
    let mut context = vec![
        format!(
            "Restoring instance/{name}: {} ({}) · workspace {}",
            obj.spec.role.name,
            obj.spec.agent,
            obj.spec.workspace.as_deref().unwrap_or("-")
        ),
        format!(
            "Reusing the preserved {}:",
            output::plural(mounts.len(), "checkout", "checkouts")
        ),
        String::new(),
    ];
    context.extend(output::mounts_evidence(&mounts).lines().map(str::to_owned));
    context.push(String::new());
    context.push(
        match mounts.iter().any(has_unfinished_work) {
            true => "The session resumes on this work as it is; nothing of it is lost.",
            false => "Nothing unfinished: the session resumes on clean checkouts.",
        }
        .to_owned(),
    );
    let screen = Screen {
        label: format!("resume {name}"),
        context,
        choices: Vec::new(),
        kind: Kind::ResumeOrBack,
    };
    screens::choose(&screen, keyboard).await
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
    match closest(name, known.iter().map(String::as_str)) {
        Some(suggestion) => bail!(
            "workspace {name:?} not found; did you mean {suggestion:?}?\nhint: `jackin get \
             workspaces` lists them"
        ),
        None => bail!(
            "workspace {name:?} not found\nhint: apply a Workspace named {name} first (`jackin get \
             workspaces` lists them)"
        ),
    }
}

/// The name of `known` closest to `name`, when one is close enough to be a
/// likely typo.
pub(crate) fn closest<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    known
        .map(|k| (edit_distance(name, k), k))
        .filter(|(distance, k)| *distance <= k.len().max(name.len()) / 3 + 1)
        .min()
        .map(|(_, k)| k)
}

/// ` (did you mean "X"?)` when one of `known` is close to `name`.
fn did_you_mean<'a>(name: &str, known: impl Iterator<Item = &'a str>) -> String {
    closest(name, known).map_or_else(String::new, |k| format!("; did you mean {k:?}?"))
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
/// recently used session of the same (workspace, role, agent), else the
/// workspace's defaults.
fn template(store: &Store, args: &LaunchArgs, found: &[Instance]) -> Result<Instance> {
    if let Some(path) = &args.from {
        return read_template(path);
    }
    match found.first() {
        Some(latest) => Ok(latest.clone()),
        None => first_of_its_kind(store, args),
    }
}

/// The first session of a (workspace, role, agent): the role as the
/// workspace names it, the agent from the registry. Everything else
/// (mounts, the exit policy, the engine, a Docker daemon) is the
/// workspace's, taken in when the recipe is pinned.
fn first_of_its_kind(store: &Store, args: &LaunchArgs) -> Result<Instance> {
    let workspace = store
        .get_workspace(&args.workspace)?
        .ok_or_else(|| anyhow!("workspace {:?} not found", args.workspace))?;
    let roles = &workspace.spec.roles;
    let Some(role) = roles.iter().find(|r| r.name == args.role) else {
        let known: Vec<&str> = roles.iter().map(|r| r.name.as_str()).collect();
        bail!(
            "workspace {} names no role {:?}{} (it names {})\nhint: add it to the workspace's \
             spec.roles ({{name, source: {{git: URL}}}} or {{name, image: IMAGE}}), or pass --from \
             FILE with an Instance manifest",
            args.workspace,
            args.role,
            did_you_mean(&args.role, known.iter().copied()),
            match known.is_empty() {
                true => "none".to_owned(),
                false => known.join(", "),
            }
        );
    };
    if store.resolve_agent(&args.agent)?.is_none() {
        let agents = store.agents()?;
        let known = agents.iter().map(|(a, _)| a.metadata.name.as_str());
        bail!(
            "no agent is named {:?}{}\nhint: `jackin get agents` lists them",
            args.agent,
            did_you_mean(&args.agent, known)
        );
    }
    Ok(Instance {
        api_version: jackin_api::API_VERSION.into(),
        kind: Instance::KIND.into(),
        metadata: jackin_api::ObjectMeta::default(),
        spec: jackin_api::InstanceSpec {
            workspace: Some(args.workspace.clone()),
            role: jackin_api::instance::RoleRef {
                name: role.name.clone(),
                source: role.source.clone(),
            },
            image: role.image.clone(),
            agent: args.agent.clone(),
            ..Default::default()
        },
        status: None,
    })
}

/// Several problems as one error, a line each.
fn one_error<E: std::fmt::Display>(errors: &[E]) -> anyhow::Error {
    let lines: Vec<String> = errors.iter().map(ToString::to_string).collect();
    anyhow!("{}", lines.join("\n"))
}

/// Reads the template as `apply` reads a file: a regular file within the
/// manifest cap, the names jackin keeps for itself refused.
fn read_template(path: &Path) -> Result<Instance> {
    let inputs = source::read(&[path.to_owned()])?;
    match source::parse(&inputs)?.into_iter().next() {
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
    let found = restorable(&store, args).await?;
    let mut keyboard = Keyboard::start();
    // Screen C, and Screen D for a session chosen to resume; Esc on D goes
    // back to C.
    let choice = loop {
        if found.is_empty() {
            break None;
        }
        let Some(i) = choose(args, &found, &mut keyboard).await? else {
            break None;
        };
        match verify_preserved_state(&store, &found[i], &mut keyboard).await? {
            Answer::Chose(_) => {
                if let Some(warning) = found[i].retention_warning(Timestamp::now()) {
                    eprintln!("warning: instance/{}: {warning}", found[i].metadata.name);
                }
                break Some(i);
            }
            Answer::Back => continue,
            Answer::Abort => bail!(
                "resume aborted: instance/{} is unchanged",
                found[i].metadata.name
            ),
        }
    };
    let name = match choice {
        Some(i) => found[i].metadata.name.clone(),
        None => {
            let mut obj = template(&store, args, &found)?;
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
    attach::run(store, engines, &name, &args.wait, &mut keyboard, true).await
}
