//! The recipe's steps: the launch recipe resolved and pinned (the role
//! built or the image looked up, the agent's program found, installed or
//! probed), pinned again for a rollout or the rollout refused, and the image
//! rebuilt at the pinned commit.
//!
//! Pinning resolves, besides the image: the agent's program, looked for on
//! the image's `PATH` by a throwaway probe container (labelled as this
//! home's and no instance's, so a sweep removes one a crash left); the
//! user, the operator's uid and gid (the owner of the unit this process
//! made) unless `hostUser` is false; the working directory; and, for an
//! entry with a `version` rule, the agent's version, probed once per image.
//! What the probes find is kept by image id (`probes`), so a later command
//! does not ask again. An agent the image lacks is installed from its
//! entry's `install` block into a derived image.

use jackin_api::ConditionStatus;
use jackin_api::agent::Strategy;
use jackin_api::instance::{
    Conversation, Instance, Recipe, RoleSource, RolloutNotMade, RolloutRecord,
};
use jackin_api::meta::set_condition;
use jackin_api::names::{condition, label, reason};

use super::context::{AGENT_HOME, Context, Report, recipe_of};
use super::error::{ActError, io};
use crate::build_log::BuildLog;
use crate::image::{self, RecipeError};
use crate::provider;
use crate::session;
use jackin_engine::ImageDefaults;
use jackin_files::fsutil::ensure_private_dir;
use jackin_plan::ladder;
use jackin_plan::recipe;
use jackin_plan::rollout;

/// Records a rollout request as refused, and why; nothing else changes.
pub(super) fn refuse_rollout(
    obj: &mut Instance,
    requested: &str,
    why: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) {
    let refused = RolloutNotMade::Refused(why);
    let message = obj.rollout_not_made(requested, refused, jiff::Timestamp::now());
    progress(Report::Note {
        stage: None,
        reason: reason::ROLLOUT_REFUSED,
        message: &message,
    });
}

pub(super) async fn pin(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let mut pinned = resolve_recipe(ctx, obj, container, progress).await?;
    // Pinned again before a first run: the engine stays the one pinned
    // first, where this instance's objects may already be.
    // A rollout's recipe pinned again (the spec changed once more before
    // its container ran) is still a rollout: the unit's conversation goes on.
    if let Some(earlier) = obj.recipe() {
        pinned.engine = earlier.engine.clone();
        pinned.replaces = earlier.replaces.clone();
        pinned.storage = earlier.storage.clone();
    }
    // So does one that has started before: a session made again from its
    // save (`restore-discarded --session`).
    let conversation = match obj.status.as_ref().and_then(|s| s.conversation.clone()) {
        Some(c) if pinned.replaces.is_some() || c.last_start.is_some() => Some(c),
        _ => new_conversation(obj, &pinned),
    };
    let status = obj.status.get_or_insert_default();
    status.conversation = conversation;
    status.recipe = Some(pinned);
    skipped_rungs(obj, progress);
    Ok(())
}

/// Says, once a recipe is pinned, which ways of starting the agent its
/// installed version lacks (they are left out of every start).
fn skipped_rungs(obj: &Instance, progress: &mut (dyn FnMut(Report<'_>) + Send)) {
    let Some(agent) = obj.recipe().and_then(|r| r.agent.as_ref()) else {
        return;
    };
    let skipped = ladder::skipped_rungs(agent);
    if skipped.is_empty() {
        return;
    }
    let rungs: Vec<String> = skipped
        .iter()
        .map(|(rung, needs)| format!("{rung} (needs {needs})"))
        .collect();
    progress(Report::Event {
        reason: reason::AGENT_RUNGS_SKIPPED,
        message: &format!(
            "{} {} in the image is older than some ways of starting it need; skipped: {}",
            agent.name,
            agent.version.as_deref().unwrap_or_default(),
            rungs.join(", ")
        ),
    });
}

/// A rollout's pin: the recipe from the current spec, and the unit as it
/// is. The conversation goes on when the agent is the same (its id, its
/// history of starts) and the operator did not ask for a new one; the
/// checkouts the new recipe binds otherwise are retired (the rollout was
/// refused if any of them held unfinished work).
pub(super) async fn rollout_pin(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    requested: &str,
    allowed: rollout::Allowed,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let earlier = recipe_of(obj).clone();
    let mut pinned = resolve_recipe(ctx, obj, container, progress).await?;
    if !allowed.moving {
        pinned.engine = earlier.engine.clone();
    }
    // Proven for the engine, not for the recipe: a move proves it anew.
    if pinned.engine == earlier.engine {
        pinned.storage = earlier.storage.clone();
    }
    pinned.replaces = Some(earlier.image_id.clone());
    let same_agent = |c: &Conversation| {
        pinned
            .agent
            .as_ref()
            .is_some_and(|a| a.name == c.agent && a.strategy == c.strategy)
            // The spec's id goes on when the session has had it (renewed
            // since: the conversation under its newest id goes on).
            && (c.strategy != Strategy::Id
                || obj.spec.conversation_id.as_deref().is_none_or(|id| c.has_had(id)))
    };
    let status = obj.status.get_or_insert_default();
    let kept = status
        .conversation
        .take()
        .filter(|c| !allowed.new_conversation && same_agent(c));
    let anew = kept.is_none();
    let conversation = match kept {
        Some(conversation) => Some(conversation),
        None => new_conversation(obj, &pinned),
    };
    let changed = rollout::diff(&earlier, &pinned);
    let mut message = match changed.as_slice() {
        [] => format!("rollout {requested}: pinned again from the unchanged spec"),
        lines => format!("rollout {requested}: {}", lines.join("; ")),
    };
    if anew {
        message.push_str("; the agent's conversation starts anew");
    }
    let mut record = RolloutRecord::handled(obj, requested, jiff::Timestamp::now(), None);
    record.new_conversation = anew;
    let status = obj.status.get_or_insert_default();
    status.conversation = conversation;
    status.recipe = Some(pinned);
    status.rollout = Some(record);
    // Rolled out only once the session runs from it (`edge::record_restore`):
    // the container made from it, on the engine it may move to, can still
    // fail.
    set_condition(
        &mut status.conditions,
        condition::ROLLOUT,
        ConditionStatus::Unknown,
        reason::ROLLING_OUT,
        &message,
        jiff::Timestamp::now(),
    );
    progress(Report::Note {
        stage: None,
        reason: reason::ROLLING_OUT,
        message: &message,
    });
    Ok(())
}

/// A first conversation for a session pinned to `pinned`: the spec's id,
/// else a new one, for an agent that takes ids.
fn new_conversation(obj: &Instance, pinned: &Recipe) -> Option<Conversation> {
    let agent = pinned.agent.as_ref()?;
    let id = (agent.strategy == Strategy::Id).then(|| {
        obj.spec
            .conversation_id
            .clone()
            .unwrap_or_else(|| uuid::Uuid::new_v4().to_string())
    });
    Some(Conversation::first(agent.name.clone(), agent.strategy, id))
}

/// The recipe the spec asks for now, resolved: the role built (or the
/// image looked up), the agent's program found (or installed), its
/// version probed, the command, working directory and user filled in.
async fn resolve_recipe(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<Recipe, ActError> {
    prepare_unit(ctx, container)?;
    if ctx.agent.is_none() {
        return Err(ActError::UnknownAgent(obj.spec.agent.clone()));
    }
    let mut pinned = recipe::wanted(
        obj,
        ctx.workspace,
        ctx.agent,
        container,
        ctx.home.as_deref(),
        &ctx.home_id,
    );
    note_provider(ctx, obj, &pinned, progress)?;
    let defaults = pin_image(ctx, obj, container, &mut pinned, progress).await?;
    note_widening(obj, &pinned, progress);
    ensure_agent(ctx, obj, container, &mut pinned, &defaults, progress).await?;
    fill_launch(ctx, obj, container, &mut pinned, defaults)?;
    Ok(pinned)
}

/// Makes the unit's home and state directories and installs its session
/// entry: the unit is whole from here on.
fn prepare_unit(ctx: &Context<'_>, container: &str) -> Result<(), ActError> {
    for dir in [
        ctx.layout.unit_home_dir(container),
        ctx.layout.unit_state_dir(container),
    ] {
        ensure_private_dir(&dir).map_err(io(&dir))?;
    }
    // The unit is whole from here on: a directory of it missing at a start
    // was deleted, and is reported when it is made again.
    session::install_entry(ctx.layout, container).map_err(io(&ctx.layout.unit_dir(container)))?;
    Ok(())
}

/// The provider: one the agent's entry lacks is refused; the one picked
/// is named, with its key's reference.
fn note_provider(
    ctx: &Context<'_>,
    obj: &Instance,
    pinned: &Recipe,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    recipe::wanted_provider(obj, ctx.workspace, ctx.agent).map_err(RecipeError::from)?;
    if let Some(note) = provider::stage_note(pinned) {
        progress(Report::Note {
            stage: Some("provider"),
            reason: reason::PROVIDER,
            message: &note,
        });
    }
    Ok(())
}

/// What the pinned recipe widens of the container's restrictions, and by
/// whom: said at every pin, since a role at a moving ref may widen more at
/// its next commit (within what the workspace allows).
fn note_widening(obj: &Instance, pinned: &Recipe, progress: &mut (dyn FnMut(Report<'_>) + Send)) {
    let widened = jackin_api::security::widenings(pinned.security.as_ref());
    if widened.is_empty() {
        return;
    }
    let role = &obj.spec.role.name;
    let workspace = obj.spec.workspace.as_deref().unwrap_or("none");
    let message = format!(
        "the container is widened: {} (role {role:?}, workspace {workspace:?})",
        widened.join("; ")
    );
    progress(Report::Note {
        stage: Some("security"),
        reason: reason::WIDENED,
        message: &message,
    });
}

/// Pins the image: the spec's image looked up, or the role built (its
/// commit, base image and config pinned too). Returns what the image runs
/// by default.
async fn pin_image(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    pinned: &mut Recipe,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<ImageDefaults, ActError> {
    Ok(match (&obj.spec.image, &obj.spec.role.source) {
        (Some(image), source) => {
            let found = ctx.engine.image_defaults(image).await?.ok_or_else(|| {
                RecipeError::ImageNotFound {
                    image: image.clone(),
                    buildable: source.is_some(),
                }
            })?;
            pinned.image_id = found.id.clone();
            found
        }
        (None, Some(source)) => {
            let built =
                build_role(ctx, container, &obj.spec.role.name, source, None, progress).await?;
            pinned.image = built.tag;
            pinned.image_id = built.id;
            pinned.role_commit = Some(built.commit);
            pinned.base_image = built.base;
            recipe::pin_role_config(obj, pinned, built.config).map_err(RecipeError::from)?;
            ctx.engine
                .image_defaults(&pinned.image_id)
                .await?
                .ok_or_else(|| RecipeError::ImageNotFound {
                    image: pinned.image_id.clone(),
                    buildable: false,
                })?
        }
        (None, None) => unreachable!("validation requires an image or a role source"),
    })
}

/// The agent's program (the registry's launch argv, or spec.command) must
/// be in the image: without it every start would fail. An agent the image
/// lacks is installed into a derived image, when its entry says how. Then
/// the installed agent's version is probed: the rungs it knows depend on it.
async fn ensure_agent(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    pinned: &mut Recipe,
    defaults: &ImageDefaults,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    if let Some(program) = pinned.command.first().cloned() {
        match check_program(ctx, &pinned.image, &pinned.image_id, &program).await {
            Err(ActError::AgentMissing { .. })
                if pinned
                    .agent
                    .as_ref()
                    .is_some_and(|a| !a.spec.install.is_empty()) =>
            {
                let role_image = pinned.image_id.clone();
                install_agent(
                    ctx,
                    container,
                    &obj.spec.role.name,
                    pinned,
                    &role_image,
                    defaults.user.as_deref(),
                    progress,
                )
                .await?;
                check_program(ctx, &pinned.image, &pinned.image_id, &program).await?;
            }
            checked => checked?,
        }
    }
    if let Some(agent) = pinned.agent.as_mut()
        && let Some(rule) = &agent.spec.version
    {
        agent.version = agent_version(ctx, &pinned.image_id, &rule.probe).await?;
    }
    Ok(())
}

/// The command, working directory and user the container runs with. The
/// wrapper runs the argv itself, so the image's default is pinned too; so
/// is its working directory, which agents that continue "the latest
/// conversation here" key their conversations by.
fn fill_launch(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
    pinned: &mut Recipe,
    defaults: ImageDefaults,
) -> Result<(), ActError> {
    if pinned.command.is_empty() {
        pinned.command = defaults.command;
        if pinned.command.is_empty() {
            return Err(ActError::NoCommand(pinned.image.clone()));
        }
    }
    // The agent starts where its work is: the spec's directory, else the
    // first mount (a checkout, usually), else the image's, else its home.
    pinned.working_dir = recipe::chosen_working_dir(pinned)
        .map(str::to_owned)
        .or(defaults.working_dir.filter(|dir| !dir.is_empty()))
        .or_else(|| Some(AGENT_HOME.to_owned()));
    // The operator's uid and gid: the owner of the unit this process made.
    if recipe::runs_as_host_user(obj, ctx.workspace) {
        use std::os::unix::fs::MetadataExt;
        let unit = ctx.layout.unit_dir(container);
        let meta = std::fs::metadata(&unit).map_err(io(&unit))?;
        pinned.user = Some(format!("{}:{}", meta.uid(), meta.gid()));
    }
    Ok(())
}

/// Looks for `program` in the image, as the image's shell finds commands,
/// in a throwaway container (once per image and program).
async fn check_program(
    ctx: &Context<'_>,
    image: &str,
    image_id: &str,
    program: &str,
) -> Result<(), ActError> {
    let answer = ctx.found.program(image_id, program);
    // A missing program is not remembered: the next launch looks again.
    answer
        .get_or_try_init(|| async {
            if !jackin_files::probes::program_found(ctx.layout, image_id, program) {
                probe_program(ctx, image, image_id, program).await?;
                jackin_files::probes::remember_program(ctx.layout, image_id, program);
            }
            Ok::<_, ActError>(())
        })
        .await?;
    Ok(())
}

/// The agent's version in the image, as `probe` prints it (once per image
/// and probe): `None` when it printed no version or did not run.
async fn agent_version(
    ctx: &Context<'_>,
    image_id: &str,
    probe: &[String],
) -> Result<Option<String>, ActError> {
    let answer = ctx.found.version(image_id, probe);
    let found = answer
        .get_or_try_init(|| async {
            if let Some(version) = jackin_files::probes::version_found(ctx.layout, image_id, probe)
            {
                return Ok(Some(version));
            }
            let ran = ctx
                .engine
                .probe(image_id, probe.to_vec(), probe_labels(ctx))
                .await?;
            let version = match ran.exit_code {
                Some(0) => jackin_api::agent::find_version(&ran.output),
                _ => None,
            };
            if let Some(version) = &version {
                jackin_files::probes::remember_version(ctx.layout, image_id, probe, version);
            }
            Ok::<_, ActError>(version)
        })
        .await?;
    Ok(found.clone())
}

/// A probe container is labelled as this home's and no instance's: a sweep
/// removes one that a crash left behind.
fn probe_labels(ctx: &Context<'_>) -> std::collections::HashMap<String, String> {
    [
        (label::MANAGED.to_owned(), "true".to_owned()),
        (label::HOME.to_owned(), ctx.home_id.clone()),
    ]
    .into()
}

/// Runs `command -v PROGRAM` in a throwaway container of the image.
async fn probe_program(
    ctx: &Context<'_>,
    image: &str,
    image_id: &str,
    program: &str,
) -> Result<(), ActError> {
    let argv = vec![
        "/bin/sh".to_owned(),
        "-c".to_owned(),
        r#"command -v "$1" >/dev/null 2>&1"#.to_owned(),
        "probe".to_owned(),
        program.to_owned(),
    ];
    match ctx
        .engine
        .probe(image_id, argv, probe_labels(ctx))
        .await?
        .exit_code
    {
        Some(0) => Ok(()),
        _ => Err(ActError::AgentMissing {
            program: program.to_owned(),
            image: image.to_owned(),
        }),
    }
}

pub(super) async fn rebuild(
    ctx: &Context<'_>,
    obj: &mut Instance,
    container: &str,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let recipe = recipe_of(obj);
    let (Some(git), Some(commit)) = (&recipe.role_source, &recipe.role_commit) else {
        // An image given by name cannot be rebuilt; the agent installed on
        // it can, while that image is still there.
        if let Some(base) = recipe.derived_from.clone()
            && let Some(defaults) = ctx.engine.image_defaults(&base).await?
        {
            let mut recipe = recipe.clone();
            install_agent(
                ctx,
                container,
                &obj.spec.role.name,
                &mut recipe,
                &base,
                defaults.user.as_deref(),
                progress,
            )
            .await?;
            obj.status.get_or_insert_default().recipe = Some(recipe);
            return Ok(());
        }
        return Err(RecipeError::NothingToRebuild.into());
    };
    let source = RoleSource {
        git: git.clone(),
        git_ref: None,
    };
    let base = recipe.base_image.clone();
    let role = obj.spec.role.name.clone();
    let pinned = Some((commit.as_str(), base.as_deref()));
    let built = build_role(ctx, container, &role, &source, pinned, progress).await?;
    let recipe = obj
        .status
        .as_mut()
        .and_then(|s| s.recipe.as_mut())
        .expect("checked above");
    recipe.image = built.tag;
    recipe.image_id = built.id;
    // The session ran the agent installed on the role image: so it does
    // again, on the role image rebuilt.
    if recipe.derived_from.is_some() {
        let role_image = recipe.image_id.clone();
        let user = ctx
            .engine
            .image_defaults(&role_image)
            .await?
            .and_then(|d| d.user);
        install_agent(
            ctx,
            container,
            &role,
            recipe,
            &role_image,
            user.as_deref(),
            progress,
        )
        .await?;
    }
    Ok(())
}

/// The role's image, built from `source` (at `pinned`, the commit and base
/// image of a rebuild): a failed build's output is kept in the unit
/// (`role-build.log`) and the error says where; a later success removes it.
async fn build_role(
    ctx: &Context<'_>,
    container: &str,
    role: &str,
    source: &RoleSource,
    pinned: Option<(&str, Option<&str>)>,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<image::BuiltImage, ActError> {
    let mut log = BuildLog::new(&ctx.layout.unit_meta_dir(container), "role-build.log");
    let checkout = ctx
        .layout
        .role_checkout_dir(&image::role_checkout_key(&source.git));
    let built = image::build_role(
        ctx.engine,
        &ctx.home_id,
        &checkout,
        role,
        source,
        pinned,
        &mut |line| {
            log.line(line);
            progress(Report::Build(line));
        },
    )
    .await;
    match built {
        Ok(built) => {
            log.succeeded();
            if let Some(why) = &built.unreachable {
                progress(Report::Note {
                    stage: None,
                    reason: reason::ROLE_SOURCE_UNREACHABLE,
                    message: &format!(
                        "the source {} could not be reached; built from the cached checkout \
                         {} at {} ({why})",
                        source.git,
                        checkout.display(),
                        built.commit
                    ),
                });
            }
            Ok(built)
        }
        // Before the build ran (a ref that names nothing, no Dockerfile)
        // there is no output to keep: the error says it all.
        Err(error) => Err(match log.failed() {
            Some(log) => ActError::RoleBuild {
                role: role.to_owned(),
                log,
                source: Box::new(error),
            },
            None => error.into(),
        }),
    }
}

/// The agent's install block on top of `base` (the role image, running as
/// `user`): the recipe then pins the derived image, and the image it was
/// derived from. Shown as the `agent binaries` and `derived image` stages.
/// A failed build's output is kept in the unit (`agent-install.log`) and
/// the error says where; a later success removes it.
async fn install_agent(
    ctx: &Context<'_>,
    container: &str,
    role: &str,
    recipe: &mut Recipe,
    base: &str,
    user: Option<&str>,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let agent = recipe.agent.as_ref().expect("only an agent entry installs");
    let program = recipe.command.first().cloned().unwrap_or_default();
    progress(Report::Note {
        stage: Some("agent binaries"),
        reason: reason::AGENT_INSTALL,
        message: &format!(
            "{program} is not in {}: installing {} from its entry's install block ({})",
            recipe.image,
            agent.name,
            plural_instructions(agent.spec.install.len())
        ),
    });
    let mut log = BuildLog::new(&ctx.layout.unit_meta_dir(container), "agent-install.log");
    let built = image::derive_agent_image(
        ctx.engine,
        &ctx.home_id,
        role,
        &agent.name,
        base,
        user,
        &agent.spec.install,
        &mut |line| {
            log.line(line);
            progress(Report::Build(line));
        },
    )
    .await;
    let derived = match built {
        Ok(derived) => derived,
        Err(error) => {
            return Err(ActError::AgentInstall {
                agent: agent.name.clone(),
                log: log.failed(),
                source: Box::new(error),
            });
        }
    };
    log.succeeded();
    progress(Report::Note {
        stage: Some("derived image"),
        reason: reason::AGENT_INSTALL,
        message: &format!(
            "{} {} ({} with {} installed)",
            if derived.cached { "using" } else { "built" },
            derived.tag,
            recipe.image,
            agent.name
        ),
    });
    recipe.derived_from = Some(base.to_owned());
    recipe.image = derived.tag;
    recipe.image_id = derived.id;
    Ok(())
}

fn plural_instructions(n: usize) -> String {
    match n {
        1 => "1 instruction".to_owned(),
        n => format!("{n} instructions"),
    }
}
