//! Launching a (workspace, role, agent) (`jackin launch`, and `jackin
//! top`'s `n`): resume a previous session (Screen C, then Screen D) or
//! start a new one, then attach to it.
//!
//! Launch shows screen C (resume a session of the trio, or start a new one,
//! each with how long ago it was last used), then attaches. A new session's
//! name is `--name`, the template's (either checked, valid and free, before
//! anything is shown or created), or the smallest free `ROLE-N`; the command
//! prints it, then creates the instance under the index lock only if the name
//! is still free: a chosen name taken meanwhile is refused, a minted one moves
//! on to the next. Screen D guards every resume made on a terminal (the one
//! chosen on screen C, `attach` of a kept or ended instance, `set-phase
//! running`) and passes only with Enter. Screens C and D ask
//! `isolation::resume_conflicts`, the check the resume itself makes before it
//! reuses a checkout, so a diverged host repository is shown as the conflict
//! the resume would fail with, never as unpushed work.

use std::path::Path;

use anyhow::{Result, anyhow, bail};
use jackin_api::agent::Strategy;
use jackin_api::names::annotation;
use jackin_api::suggest::closest;
use jackin_api::workspace::ExitPolicy;
use jackin_api::{Instance, Object};
use jackin_checkouts::isolation::IsolationError;
use jackin_controller::Store;
use jackin_controller::engines::Engines;
use jackin_controller::new_session::{self, NewSession, NewSessionError, Trio, last_used};
use jackin_controller::reconcile::assess_checkouts;
use jackin_controller::source;
use jiff::Timestamp;

use crate::args::LaunchArgs;
use crate::context::Cancelled;
use crate::ops::attach;
use crate::ops::preserved::{resume_conflicts, verify_preserved_state};
use crate::output;
use crate::screens::{self, Answer, Kind, Screen};
use crate::terminal::Keyboard;

/// A session Screen C offers: the instance, its isolated checkouts
/// assessed now, and the conflicts its resume would fail with.
struct Resumable {
    obj: Instance,
    conflicts: Vec<IsolationError>,
}

/// The instances of (workspace, role, agent) that can be resumed, the most
/// recently used first: kept ones, clean or not, and ended or running ones,
/// with their isolated checkouts assessed now.
async fn restorable(store: &Store, args: &LaunchArgs) -> Result<Vec<Resumable>> {
    let mut found = Vec::new();
    for mut obj in store.list_instances()?.instances {
        if !trio(args).holds(&obj) {
            continue;
        }
        if let Some(container) = obj.container_name().map(str::to_owned) {
            let mounts = assess_checkouts(store.layout(), &container).await?;
            obj.status.get_or_insert_default().mounts = mounts;
        }
        let conflicts = resume_conflicts(store, &obj).await?;
        found.push(Resumable { obj, conflicts });
    }
    found.sort_by_key(|r| std::cmp::Reverse(last_used(&r.obj)));
    Ok(found)
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

/// Screen C: "Start new session" first, with the name the new instance
/// will have, then each session to resume, with how long ago it was last
/// used.
async fn choose(
    args: &LaunchArgs,
    found: &[Resumable],
    new_name: &str,
    keyboard: &mut Keyboard,
) -> Result<Option<usize>> {
    let now = Timestamp::now();
    let mut choices = vec![(
        "Start new session".to_owned(),
        format!("a fresh instance, {new_name}"),
    )];
    for Resumable { obj, conflicts } in found {
        let phase = obj.phase().map_or("-".into(), |p| p.to_string());
        // A diverged host repository is the conflict it is, not the
        // agent's branches "unpushed" to a repository they never left.
        let state = match conflicts.is_empty() {
            true => output::work_summary(obj),
            false => "conflict: host repo diverged, resuming would fail".to_owned(),
        };
        choices.push((
            format!("Resume {}", obj.metadata.name),
            format!(
                "{} ago · {phase} · {state} · {}",
                output::age(last_used(obj), now),
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
        Answer::Abort => Err(Cancelled("nothing was launched".into()).into()),
        Answer::Back => bail!("no choice was made: nothing was launched"),
        Answer::Chose(0) => Ok(None),
        Answer::Chose(n) => Ok(Some(n - 1)),
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

/// The exit policy `--keep` / `--clean` ask for, for this launch's session.
fn policy_override(args: &LaunchArgs) -> Option<ExitPolicy> {
    match (args.keep, args.clean) {
        (true, _) => Some(ExitPolicy::Keep),
        (_, true) => Some(ExitPolicy::Clean),
        _ => None,
    }
}

/// The (workspace, role, agent) the launch is for.
fn trio(args: &LaunchArgs) -> Trio<'_> {
    Trio {
        workspace: &args.workspace,
        role: &args.role,
        agent: &args.agent,
    }
}

/// The name the new session will have: the chosen one, else `<role>-<n>`
/// with the smallest free `n` as it stands now.
fn name_to_be(store: &Store, chosen: Option<&str>, role: &str) -> Result<String> {
    match chosen {
        Some(name) => Ok(name.to_owned()),
        None => Ok(new_session::free_name(store, role)?),
    }
}

/// Creates the new session's instance, its name shown before it exists. A
/// chosen name (`--name`, or the template's) is that name or nothing.
/// Otherwise it is `<role>-<n>` with the smallest free `n`; another launch
/// may take that name between looking and creating: then the next free one
/// is tried, never the other's instance.
fn create(
    store: &Store,
    session: NewSession,
    chosen: Option<&str>,
    trio: Trio<'_>,
) -> Result<String> {
    const ATTEMPTS: usize = 16;
    let mut obj = session.instance;
    for _ in 0..ATTEMPTS {
        let name = name_to_be(store, chosen, trio.role)?;
        obj.metadata.name = name.clone();
        jackin_api::validate::instance(&obj).map_err(|errs| one_error(&errs))?;
        eprintln!(
            "new session instance/{name}: {trio}, from {}",
            session.basis
        );
        crate::context::pause_here_if_asked("launch-create");
        if store.create_new_instance(&obj)? {
            eprintln!("instance/{name} created");
            return Ok(name);
        }
        if chosen.is_some() {
            return Err(NewSessionError::NameTaken { name }.into());
        }
        eprintln!(
            "instance/{name} was created meanwhile by someone else; naming the new session anew"
        );
    }
    bail!(
        "could not find a free name for a new {} session after {ATTEMPTS} tries\nhint: name it \
         with --name NAME",
        trio.role
    )
}

/// Launches (workspace, role, agent) as `args` say, reading the operator's
/// answers from `keyboard` (`jackin top` passes its own).
pub async fn run(
    store: Store,
    engines: Engines,
    args: &LaunchArgs,
    keyboard: &mut Keyboard,
) -> Result<()> {
    check_workspace(&store, &args.workspace)?;
    let template = args.from.as_deref().map(read_template).transpose()?;
    // The name the operator chose, checked before anything is shown or
    // created: --name, else the template's own.
    let chosen = args
        .name
        .clone()
        .or_else(|| template.as_ref().map(|t| t.metadata.name.clone()))
        .filter(|name| !name.is_empty());
    if let Some(name) = &chosen {
        new_session::check_name(&store, name)?;
    }
    // --name asks for a new session: there is nothing to choose.
    let found = match args.name {
        Some(_) => Vec::new(),
        None => restorable(&store, args).await?,
    };
    // Screen C, and Screen D for a session chosen to resume; Esc on D goes
    // back to C.
    let choice = loop {
        if found.is_empty() {
            break None;
        }
        let new_name = name_to_be(&store, chosen.as_deref(), &args.role)?;
        let Some(i) = choose(args, &found, &new_name, keyboard).await? else {
            break None;
        };
        let chosen = &found[i].obj;
        match verify_preserved_state(&store, chosen, keyboard).await? {
            Answer::Chose(_) => {
                if let Some(warning) = chosen.retention_warning(Timestamp::now()) {
                    eprintln!("warning: instance/{}: {warning}", chosen.metadata.name);
                }
                break Some(i);
            }
            Answer::Back => continue,
            Answer::Abort => {
                let unchanged = format!("instance/{} is unchanged", chosen.metadata.name);
                return Err(Cancelled(unchanged).into());
            }
        }
    };
    let name = match choice {
        Some(i) => found[i].obj.metadata.name.clone(),
        None => {
            let mut session = new_session::prepare(&store, trio(args), template)?;
            // The override is part of the instance from its first moment,
            // so a loop that starts it first already knows it.
            if let Some(policy) = policy_override(args) {
                session.instance.metadata.annotations.insert(
                    annotation::LAUNCH_EXIT_POLICY.to_owned(),
                    policy.for_launch_at(Timestamp::now()),
                );
            }
            if args.skip_setup {
                let annotations = &mut session.instance.metadata.annotations;
                annotations.insert(annotation::SKIP_SETUP.to_owned(), "true".to_owned());
            }
            create(&store, session, chosen.as_deref(), trio(args))?
        }
    };
    // For this launch's session only: the resume records it (see
    // `session::resume`).
    let policy = policy_override(args);
    Box::pin(attach::run(
        store, engines, &name, &args.wait, keyboard, true, policy,
    ))
    .await
}
