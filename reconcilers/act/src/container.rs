//! The engine's objects of an instance: its network and volumes, its
//! sidecars, and the agent's container (created from the pinned recipe,
//! started with its start plan and settings written, stopped, removed).
//!
//! Two steps prepare the unit before their one engine call. Both first make
//! again any of the unit's bound directories someone deleted (a
//! `UnitDirectoryMade` note each). Creating the agent's container installs
//! the entry wrapper in the unit's `bin/`, makes the Docker daemon's
//! certificates volume when `dind` needs it, collects the binds of the
//! isolated checkouts, and resolves the spec's secrets and the logins'
//! variables into the request, kept nowhere. Starting it sets the last
//! run's marker aside, writes the start plan and the agent's settings,
//! then sizes the new terminal to the size the operator last attached
//! with. A stop is noted in the status before it is asked for, so that the
//! session that ends after it is told as jackin's stop.

use std::path::Path;

use jackin_api::agent::{StateKind, Strategy};
use jackin_api::instance::Instance;
use jackin_api::names::{annotation, label, reason};
use jackin_api::ports::PublishedPort;

use super::context::{
    AGENT_HOME, Context, DIND_CLIENT_CERTS, Report, STATE_DIR, STOP_GRACE_SECS, recipe_of,
    sidecar_name,
};
use super::error::{ActError, io};
use super::home;
use crate::credentials;
use crate::provider;
use crate::resume;
use crate::secrets;
use crate::session;
use crate::token_login;
use crate::unit_identity;
use jackin_checkouts::isolation;
use jackin_engine::EngineError;
use jackin_engine::models::{
    ContainerCreateBody, EndpointSettings, HostConfig, Mount, MountType, NetworkingConfig,
    PortBinding, PortMap,
};
use jackin_engine::restricted;
use jackin_files::fsutil;
use jackin_files::layout::Layout;
use jackin_files::offload::blocking;
use jackin_plan::ladder;
use jackin_plan::marker;
use jackin_plan::recipe;

/// Creates the instance's network, on a subnet of its own.
pub(super) async fn create_network(ctx: &Context<'_>, obj: &Instance) -> Result<(), ActError> {
    let labels = recipe_of(obj).labels.clone().into_iter().collect();
    let network = &recipe_of(obj).network;
    let subnet = ctx
        .addresses
        .create_network(ctx.engine, ctx.layout.root(), network, labels)
        .await?;
    tracing::debug!(network, %subnet, "network created");
    Ok(())
}

/// Creates one of the pinned sidecars, on the instance's network.
pub(super) async fn create_sidecar(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    name: &str,
) -> Result<(), ActError> {
    let recipe = recipe_of(obj);
    let sidecar = recipe
        .sidecars
        .iter()
        .find(|s| s.name == name)
        .expect("decide only names pinned sidecars");
    let mut labels: std::collections::HashMap<String, String> =
        recipe.labels.clone().into_iter().collect();
    labels.insert(label::SIDECAR.into(), name.to_owned());
    // The agent reaches a sidecar by its spec name (`dind`), an alias on
    // the instance's own network, so names never clash across instances.
    let endpoint = EndpointSettings {
        aliases: Some(vec![name.to_owned()]),
        ..Default::default()
    };
    // The Docker daemon writes its client certificates where the agent
    // reads them.
    let (mounts, env) = match (&recipe.dind, name) {
        (Some(dind), recipe::DIND) => (
            Some(vec![volume_mount(
                &dind.certs_volume,
                DIND_CLIENT_CERTS,
                false,
            )]),
            Some(vec!["DOCKER_TLS_CERTDIR=/certs".to_owned()]),
        ),
        _ => (None, None),
    };
    let body = ContainerCreateBody {
        image: Some(sidecar.image.clone()),
        cmd: sidecar.command.clone(),
        labels: Some(labels),
        env,
        host_config: Some(HostConfig {
            privileged: Some(sidecar.privileged),
            network_mode: Some(recipe.network.clone()),
            mounts,
            ..restricted::sidecar(recipe)
        }),
        networking_config: Some(NetworkingConfig {
            endpoints_config: Some([(recipe.network.clone(), endpoint)].into()),
        }),
        ..Default::default()
    };
    ctx.engine
        .create_container(&sidecar_name(container, name), body)
        .await?;
    Ok(())
}

/// Starts a sidecar: the one observed, by its id, or the one this plan
/// created, by its name.
pub(super) async fn start_sidecar(
    ctx: &Context<'_>,
    container: &str,
    name: &str,
    id: &Option<String>,
) -> Result<(), ActError> {
    let target = id.clone().unwrap_or_else(|| sidecar_name(container, name));
    ctx.engine.start_container(&target).await?;
    Ok(())
}

/// Creates the agent's container from the pinned recipe, the unit's
/// directories it binds made again first where someone deleted them.
pub(super) async fn create(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    restore_unit_dirs(ctx.layout, container, progress)?;
    create_and_record(ctx, obj, container).await
}

/// Starts the agent's container: the one observed, by its id, or the
/// unit's, by its name. Its start plan and settings are written first (the
/// last run's marker set aside: this run writes its own); its terminal is
/// sized at once; the recipe is the session's from now on.
pub(super) async fn start(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    id: &Option<String>,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let engine = ctx.engine;
    restore_unit_dirs(ctx.layout, container, progress)?;
    session::retire_marker(ctx.layout, container).map_err(io(&ctx.layout.unit_dir(container)))?;
    write_start_plan(ctx.layout, container, obj).await?;
    apply_agent_settings(ctx, obj, container, progress).await;
    let uid = obj.metadata.uid.clone().unwrap_or_default();
    let identity = unit_identity::write(ctx.layout, container, &uid)
        .map_err(io(&unit_identity::identity_file(ctx.layout, container)))?;
    // The container about to start shows it: the one observed, or (made
    // anew since, see below) the unit's by its name.
    let observed = id.as_deref().unwrap_or(container);
    match unit_identity::verify(engine, observed, &identity).await {
        Err(ActError::Engine(EngineError::Refused { status: 404, .. })) if id.is_some() => {
            unit_identity::verify(engine, container, &identity).await?;
        }
        verified => verified?,
    }
    let started = match engine
        .start_container(id.as_deref().unwrap_or(container))
        .await
    {
        // The container observed was made anew since (see
        // `PrepareMounts`): the unit's container, by its name.
        Err(EngineError::Refused { status: 404, .. }) if id.is_some() => {
            engine.start_container(container).await?;
            container
        }
        started => {
            started?;
            id.as_deref().unwrap_or(container)
        }
    };
    // The terminal exists before anyone attaches, at the size the operator
    // last used, so that a full-screen agent draws at once (and its prompt
    // reaches the log the overview reads). An agent that already ended has
    // no terminal to size: no matter.
    let (columns, rows) = session::terminal_size(ctx.layout, container);
    if let Err(e) = engine.resize(started, columns, rows).await {
        tracing::debug!(container, "the new terminal keeps its size: {e}");
    }
    if let Some(recipe) = obj.status.as_mut().and_then(|s| s.recipe.as_mut()) {
        recipe.first_run_at.get_or_insert_with(jiff::Timestamp::now);
    }
    Ok(())
}

/// Stops the agent's container gracefully, noted first: however the agent
/// answers SIGTERM, the session that ends after it is jackin's stop (defect
/// R14). Its checkouts' branches reach the host repository at the session's
/// end (`Step::PublishCheckouts`).
pub(super) async fn stop(ctx: &Context<'_>, obj: &mut Instance, id: &str) -> Result<(), ActError> {
    obj.status.get_or_insert_default().stop_requested_at = Some(jiff::Timestamp::now());
    ctx.engine.stop_container(id, STOP_GRACE_SECS).await?;
    Ok(())
}

/// Removes a container (the agent's or a sidecar), by its id.
pub(super) async fn remove(ctx: &Context<'_>, id: &str) -> Result<(), ActError> {
    ctx.engine.remove_container(id).await?;
    Ok(())
}

/// Removes a network of the instance, by its id.
pub(super) async fn remove_network(ctx: &Context<'_>, id: &str) -> Result<(), ActError> {
    ctx.engine.remove_network(id).await?;
    Ok(())
}

/// Removes a volume of the instance, by its name.
pub(super) async fn remove_volume(ctx: &Context<'_>, name: &str) -> Result<(), ActError> {
    ctx.engine.remove_volume(name).await?;
    Ok(())
}

/// Makes one of the instance's named volumes, labelled as its own; a
/// volume of that name that is not the instance's is refused, never used.
pub(super) async fn ensure_volume(
    ctx: &Context<'_>,
    obj: &Instance,
    volume: &str,
) -> Result<(), ActError> {
    let recipe = recipe_of(obj);
    let labels: std::collections::HashMap<String, String> =
        recipe.labels.clone().into_iter().collect();
    let found = ctx.engine.create_volume(volume, labels.clone()).await?;
    if found.get(label::UID) != labels.get(label::UID) {
        return Err(ActError::ForeignVolume(volume.to_owned()));
    }
    Ok(())
}

/// A mount of one of the instance's named volumes.
fn volume_mount(volume: &str, target: &str, read_only: bool) -> Mount {
    Mount {
        target: Some(target.to_owned()),
        source: Some(volume.to_owned()),
        typ: Some(MountType::VOLUME),
        read_only: Some(read_only),
        ..Default::default()
    }
}

/// Writes the plan the entry wrapper walks at this start, from the latest
/// report of how the agent last started.
async fn write_start_plan(
    layout: &Layout,
    container: &str,
    obj: &mut Instance,
) -> Result<(), ActError> {
    let (reading, unit) = (layout.clone(), container.to_owned());
    let report = blocking(move || Ok::<_, ActError>(resume::read_report(&reading, &unit))).await?;
    let status = obj.status.get_or_insert_default();
    let now = jiff::Timestamp::now();
    // A new session starts: a stop asked of an earlier one is not its.
    status.stop_requested_at = None;
    if let (Some(conversation), Some(report)) = (status.conversation.as_mut(), &report)
        && conversation.strategy != Strategy::None
    {
        ladder::fold_report(conversation, report, now);
    }
    if let Some(conversation) = status.conversation.as_mut() {
        ladder::mint_next_id(conversation, || uuid::Uuid::new_v4().to_string());
    }
    let rungs = ladder::ladder(
        status
            .recipe
            .as_ref()
            .expect("a started instance has its recipe"),
        status.conversation.as_ref(),
    );
    if let Some(conversation) = status.conversation.as_mut() {
        ladder::note_start(conversation, &rungs, now);
    }
    let (writing, unit) = (layout.clone(), container.to_owned());
    // Only the agent's own program opens on its prompt.
    let waits = status.recipe.as_ref().is_some_and(|r| {
        r.agent.as_ref().is_some_and(|a| {
            a.spec.first_prompt_waits && recipe::runs_agent_program(&r.command, &a.spec.launch)
        })
    });
    let credentials = status.recipe.as_ref().and_then(|r| r.credentials.clone());
    let setup = status.recipe.as_ref().and_then(|r| r.setup.clone());
    let skip_setup = obj
        .metadata
        .annotations
        .contains_key(annotation::SKIP_SETUP);
    blocking(move || {
        // The wrapper runs the workspace's setup once, before the agent.
        session::write_setup(&writing, &unit, setup.as_ref(), skip_setup)
            .map_err(io(&session::setup_file(&writing, &unit)))?;
        // The last start's report, taken in above, goes: a report found
        // from now on is this start's.
        resume::forget_report(&writing, &unit)
            .map_err(io(&resume::report_file(&writing, &unit)))?;
        // The wrapper runs the token login steps before the plan's rungs.
        token_login::write_before_start(&writing, &unit, credentials.as_ref(), AGENT_HOME)
            .map_err(io(&token_login::login_file(&writing, &unit)))?;
        resume::write_plan(&writing, &unit, &rungs, waits)
            .map_err(io(&resume::plan_file(&writing, &unit)))
    })
    .await?;
    Ok(())
}

/// Sets the agent's settings in the unit, last of what writes the agent's
/// files before it starts; a file left alone is a note (and an event).
async fn apply_agent_settings(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) {
    let left_alone =
        crate::agent_settings::before_start(ctx.layout, container, obj, ctx.agent, ctx.workspace)
            .await;
    for why in left_alone {
        progress(Report::Note {
            stage: None,
            reason: reason::AGENT_SETTING_LEFT_ALONE,
            message: &why,
        });
    }
}

/// Makes again the unit's directories the container binds that someone
/// deleted, each with a note (an event): the engine would refuse the bind.
pub(super) fn restore_unit_dirs(
    layout: &Layout,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let made =
        session::restore_unit_dirs(layout, container).map_err(io(&layout.unit_dir(container)))?;
    for dir in made {
        progress(Report::Note {
            stage: None,
            reason: reason::UNIT_DIRECTORY_MADE,
            message: &format!(
                "the unit's {dir}/ was missing: made again, empty (what it held is lost)"
            ),
        });
    }
    Ok(())
}

/// Creates the agent's container and records what its credential
/// variables gave it.
pub(super) async fn create_and_record(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
) -> Result<(), ActError> {
    // The host ports first: the container publishes the ones kept.
    let on_this_host = ctx.engine.endpoint().starts_with("unix://");
    crate::ports::assign(ctx.layout, obj, on_this_host)?;
    let (env, env_missing) = create_container(ctx, obj, container).await?;
    let mode = recipe_of(obj).credentials.as_ref().map(|c| c.mode);
    if let Some(mode) = mode {
        let record = home::credentials_record(obj, mode);
        record.env = env;
        record.env_missing = env_missing;
    }
    Ok(())
}

/// Each published port on the host address and port it was given.
fn port_bindings(published: &[PublishedPort]) -> Option<PortMap> {
    (!published.is_empty()).then(|| {
        published
            .iter()
            .map(|p| {
                let binding = PortBinding {
                    host_ip: Some(p.address.clone()),
                    host_port: Some(p.host_port.to_string()),
                };
                (format!("{}/tcp", p.port), Some(vec![binding]))
            })
            .collect()
    })
}

/// What the agent's container binds: the unit's home, state and `bin/`,
/// the Docker daemon's client certificates, the workspace's mounts (an
/// isolated one from its recorded checkout) and what a worktree's git
/// needs beside it.
async fn agent_mounts(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
) -> Result<Vec<Mount>, ActError> {
    let recipe = recipe_of(obj);
    let unit = ctx.layout.unit_dir(container);
    let bind = |src: String, dst: &str, read_only: bool| Mount {
        target: Some(dst.to_owned()),
        source: Some(src),
        typ: Some(MountType::BIND),
        read_only: Some(read_only),
        ..Default::default()
    };
    let entry = session::install_entry(ctx.layout, container).map_err(io(&unit))?;
    // The wrapper's directory, not the file alone: the start plan beside it
    // is replaced before each start, and a bind of one file would keep
    // showing the replaced one.
    let bin = entry.parent().expect("the entry has a directory");
    let mut mounts = vec![
        bind(
            ctx.layout.unit_home_dir(container).display().to_string(),
            AGENT_HOME,
            false,
        ),
        bind(
            ctx.layout.unit_state_dir(container).display().to_string(),
            STATE_DIR,
            false,
        ),
        bind(bin.display().to_string(), marker::BIN_DIR, true),
    ];
    if let Some(dind) = &recipe.dind {
        // Made here too: the engine would make a missing one itself,
        // unlabelled, and then it would be nobody's.
        ensure_volume(ctx, obj, &dind.certs_volume).await?;
        mounts.push(volume_mount(&dind.certs_volume, DIND_CLIENT_CERTS, true));
    }
    let bound = isolation::bind_sources(ctx.layout, container, &recipe.mounts)?;
    mounts.extend(
        bound
            .iter()
            .map(|m| bind(m.src.clone(), &m.dst, m.readonly)),
    );
    let (layout, unit_name) = (ctx.layout.clone(), container.to_owned());
    let git = blocking(move || isolation::git_binds(&layout, &unit_name)).await?;
    mounts.extend(
        git.into_iter()
            .map(|g| bind(g.source, &g.target, g.read_only)),
    );
    Ok(mounts)
}

/// The agent's environment, in one list: the spec's variables (secrets
/// resolved now, kept nowhere), the logins' variables (`token`), then
/// what jackin sets where the spec does not (its home, its state, its
/// Docker daemon, its terminal, who it is). Returns with it the names the
/// credential variables set, and why a set got none.
async fn agent_env(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
) -> Result<(Vec<String>, Vec<String>, Vec<String>), ActError> {
    let recipe = recipe_of(obj);
    // Resolved here, handed to the engine, kept nowhere. Reading files and
    // running `op` block: off the runtime.
    let vars = recipe.env.clone();
    let mut env = blocking(move || secrets::resolve(&vars)).await?;
    // The provider's variables and key, likewise.
    let picked = recipe.provider.clone();
    let spec_names: Vec<String> = recipe.env.iter().map(|v| v.name.clone()).collect();
    env.extend(blocking(move || provider::container_env(picked.as_deref(), &spec_names)).await?);
    // The logins' variables (`token`), likewise resolved here and kept
    // nowhere; one the spec sets is the operator's.
    let (mut credential_names, mut credential_missing) = (Vec::new(), Vec::new());
    if let Some(pinned) = recipe.credentials.clone() {
        let set_by_spec: Vec<String> = recipe.env.iter().map(|v| v.name.clone()).collect();
        let resolved = blocking(move || credentials::resolve_env(&pinned, &set_by_spec)).await;
        env.extend(resolved.env);
        credential_names = resolved.names;
        credential_missing = resolved.missing;
    }
    if !recipe.env.iter().any(|v| v.name == "HOME") {
        env.push(format!("HOME={AGENT_HOME}"));
    }
    // The agent's state goes in the unit's home, unless the operator put it
    // elsewhere.
    if let Some(state) = recipe
        .agent
        .as_ref()
        .and_then(|a| a.spec.state_env.as_ref())
        && !recipe.env.iter().any(|v| v.name == state.name)
    {
        let relative = state.path.trim_matches('/');
        let path = match relative {
            "" | "." => AGENT_HOME.to_owned(),
            path => format!("{AGENT_HOME}/{path}"),
        };
        // The agent's own home is agent-writable: made without following
        // any link in it. A directory it names exists before it starts.
        let made = match state.kind {
            StateKind::Directory => Path::new(relative),
            StateKind::File => Path::new(relative).parent().unwrap_or(Path::new("")),
        };
        let home = ctx.layout.unit_home_dir(container);
        // A recipe pinned before entries said their kind says nothing: a
        // file already there (an aider history) is taken as it is.
        let existing_file = std::fs::symlink_metadata(home.join(made)).is_ok_and(|m| m.is_file());
        if !existing_file {
            fsutil::ensure_real_dir_below(&home, made).map_err(io(&home.join(made)))?;
        }
        env.push(format!("{}={path}", state.name));
    }
    // The agent's Docker daemon, unless the operator points it elsewhere.
    if recipe.dind.is_some() {
        for (name, value) in [
            ("DOCKER_HOST", format!("tcp://{}:2376", recipe::DIND)),
            ("DOCKER_TLS_VERIFY", "1".to_owned()),
            ("DOCKER_CERT_PATH", DIND_CLIENT_CERTS.to_owned()),
            // Where a port that a container run through the daemon
            // publishes is reached: the daemon's host, not localhost.
            ("JACKIN_DIND_HOSTNAME", recipe::DIND.to_owned()),
        ] {
            if !recipe.env.iter().any(|v| v.name == name) {
                env.push(format!("{name}={value}"));
            }
        }
    }
    // A terminal the agent can draw on, unless the recipe says otherwise.
    for (name, value) in [("TERM", "xterm-256color"), ("COLORTERM", "truecolor")] {
        if !recipe.env.iter().any(|v| v.name == name) {
            env.push(format!("{name}={value}"));
        }
    }
    env.extend([
        format!("JACKIN_INSTANCE={}", obj.metadata.name),
        format!("JACKIN_AGENT={}", obj.spec.agent),
        format!(
            "JACKIN_WORKSPACE={}",
            obj.spec.workspace.as_deref().unwrap_or_default()
        ),
        format!("JACKIN_CONTAINER={container}"),
        // The init forwards signals to the whole process group, so a stop
        // reaches the agent under the wrapper.
        "TINI_KILL_PROCESS_GROUP=1".to_owned(),
    ]);
    Ok((env, credential_names, credential_missing))
}

/// Creates the agent's container. Returns what the credential variables
/// gave it (`token`): the names set, and why a set got none.
async fn create_container(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
) -> Result<(Vec<String>, Vec<String>), ActError> {
    let recipe = recipe_of(obj);
    let mounts = agent_mounts(ctx, obj, container).await?;
    let (env, credential_names, credential_missing) = agent_env(ctx, obj, container).await?;
    let published = obj
        .status
        .as_ref()
        .map(|s| s.ports.as_slice())
        .unwrap_or_default();
    let body = ContainerCreateBody {
        exposed_ports: (!published.is_empty()).then(|| {
            published
                .iter()
                .map(|p| format!("{}/tcp", p.port))
                .collect()
        }),
        image: Some(recipe.image_id.clone()),
        entrypoint: Some(vec!["/bin/sh".into(), marker::ENTRY_PATH.into()]),
        cmd: Some(recipe.command.clone()),
        env: Some(env),
        labels: Some(recipe.labels.clone().into_iter().collect()),
        hostname: Some(container.to_owned()),
        user: recipe.user.clone(),
        working_dir: recipe.working_dir.clone(),
        tty: Some(true),
        open_stdin: Some(true),
        host_config: Some(HostConfig {
            // An init process forwards signals to the agent and reaps the
            // processes it leaves behind.
            init: Some(true),
            network_mode: Some(recipe.network.clone()),
            mounts: Some(mounts),
            // Where a token login step keeps its login: not in the unit.
            tmpfs: token_login::tmpfs(recipe.credentials.as_ref()),
            port_bindings: port_bindings(published),
            ..restricted::agent(recipe)
        }),
        ..Default::default()
    };
    ctx.engine
        .create_container(container, body)
        .await
        .map_err(|e| unit_identity::create_refused(ctx.engine, e))?;
    Ok((credential_names, credential_missing))
}
