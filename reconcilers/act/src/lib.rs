//! Carrying out one step of a plan. Every plan the loop decides (a
//! reconcile's, the session edge's, the idle watch's recycling) changes the
//! engine and a unit's working files (its home, state, `bin/` and
//! checkouts) here, and so does the sweep's removal of what no instance
//! owns ([`remove_leftover`]); the operator's own answers at the end of a
//! session (a resume or a keep sets the marker aside) and the restore of
//! discarded work change them outside any plan. [`act`] dispatches each
//! step, in one line, to a function of its own, in a module by what it
//! changes: `pin`, `container` (the engine's objects), `checkouts`, `home`
//! (what goes into the unit's home before a start) and `edge` (the session
//! edge and the phase writes). What they share lives below them all, in
//! `context` (the [`Context`], [`Report`], the places inside the container)
//! and `error` ([`ActError`]), so imports run one way.
//! What a step changes in the object is written to its status, which the
//! caller saves after each step; records the state directory shares (the
//! index, ended sessions) change through [`StateOwner`]. Each step is
//! idempotent, so a pass interrupted anywhere is finished by the next one.
//!
//! Around the steps, what they read and write: [`observe`] (one snapshot
//! of the engine for the planner), the unit's session files ([`session`])
//! and the resume ladder's ([`resume`]), the logins and secrets handed to a
//! container ([`credentials`], [`secrets`], [`token_login`], [`provider`]),
//! the agents' own settings files ([`agent_settings`], [`operator_config`]),
//! the images a recipe pins ([`image`]), the agent's output read as a
//! terminal shows it ([`screen`]), and the proof before each start that the
//! engine sees the unit (`unit_identity`). What to do is never decided here: that
//! is `jackin_plan`'s.

use jackin_api::instance::Instance;

use jackin_engine::Engine;
use jackin_plan::ending;
use jackin_plan::plan::{Leftover, Step};
use jackin_plan::rollout;

pub mod agent_settings;
mod build_log;
mod checkouts;
mod container;
mod context;
pub mod credentials;
mod edge;
mod error;
mod home;
pub mod image;
pub mod observe;
pub mod operator_config;
mod pin;
pub mod ports;
pub mod provider;
pub mod resume;
pub mod screen;
pub mod secrets;
pub mod session;
pub mod token_login;
mod unit_identity;

pub use context::{
    AGENT_HOME, Context, DIND_CLIENT_CERTS, ProgramsFound, Report, STATE_DIR, STOP_GRACE_SECS,
    StateOwner, sidecar_name,
};
pub use error::ActError;

/// Removes an engine object that no instance owns (see [`Leftover`]), by
/// its id. Returns whether it was there to remove: `false` when someone
/// else removed it first. The caller has checked that no instance claims it
/// now (for an instance's object, under the index lock).
pub async fn remove_leftover(engine: &Engine, leftover: &Leftover) -> Result<bool, ActError> {
    let id = leftover.id();
    Ok(match leftover {
        Leftover::Container(_) => engine.remove_container(id).await?,
        Leftover::Network(_) => engine.remove_network(id).await?,
        Leftover::Volume(_) => engine.remove_volume(id).await?,
        Leftover::Image(_) => engine.remove_image(id).await?,
    })
}

/// Runs `step` for `obj`, recording in its status what the step changed:
/// one line per step, each carried out by a function of its own (the pin,
/// the container and its support, the checkouts, the unit's home, the
/// session edge). Steps on existing engine objects act on the ids they
/// carry (observed by label, never looked up by name); only an object this
/// plan creates is addressed by the name it was given.
pub async fn act(
    ctx: &Context<'_>,
    step: &Step,
    obj: &mut Instance,
    progress: &mut (dyn FnMut(Report<'_>) + Send),
) -> Result<(), ActError> {
    let container = obj
        .container_name()
        .map(str::to_owned)
        .expect("a stored instance has an identity");
    let unit = container.as_str();
    match step {
        Step::PinRecipe => pin::pin(ctx, obj, unit, progress).await,
        Step::RolloutRecipe {
            requested,
            moving,
            new_conversation,
        } => {
            let allowed = rollout::Allowed {
                moving: *moving,
                new_conversation: *new_conversation,
            };
            pin::rollout_pin(ctx, obj, unit, requested, allowed, progress).await
        }
        Step::CheckMoveTarget { .. } => unit_identity::check_move_target(ctx, obj, unit).await,
        Step::ProveUnitStorage => {
            // The look binds `bin/`: the engine would refuse a missing one.
            container::restore_unit_dirs(ctx.layout, unit, progress)?;
            unit_identity::prove(ctx, obj, unit).await
        }
        Step::RefuseRollout { requested, why } => {
            pin::refuse_rollout(obj, requested, why, progress);
            Ok(())
        }
        Step::RebuildImage => pin::rebuild(ctx, obj, unit, progress).await,
        Step::PrepareMounts => checkouts::prepare(ctx, obj, unit, progress).await,
        Step::PublishCheckouts => checkouts::publish(ctx, unit, progress).await,
        Step::RetireCheckouts => checkouts::retire(ctx, obj, unit, progress).await,
        Step::SaveConversation => checkouts::save_conversation(ctx, obj, unit, progress).await,
        Step::RemoveCheckouts => checkouts::remove(ctx, obj, unit, progress).await,
        Step::CreateNetwork => container::create_network(ctx, obj).await,
        Step::CreateVolume(volume) => container::ensure_volume(ctx, obj, volume).await,
        Step::CreateSidecar(name) => container::create_sidecar(ctx, obj, unit, name).await,
        Step::StartSidecar { name, id } => container::start_sidecar(ctx, unit, name, id).await,
        Step::CreateContainer => container::create(ctx, obj, unit, progress).await,
        Step::CopyOperatorConfig => home::copy_operator_config(ctx, obj, unit, progress).await,
        Step::ForwardCredentials => home::forward_credentials(ctx, obj, unit, progress).await,
        Step::StartContainer { id } => container::start(ctx, obj, unit, id, progress).await,
        Step::StopContainer { id } => container::stop(ctx, obj, id).await,
        Step::RemoveContainer { id } | Step::RemoveSidecar { id, .. } => {
            container::remove(ctx, id).await
        }
        Step::RemoveNetwork { id } | Step::RemoveExtraNetwork(id) => {
            container::remove_network(ctx, id).await
        }
        Step::RemoveVolume(name) => container::remove_volume(ctx, name).await,
        Step::RecordRestore { tier, rollout } => {
            edge::record_restore(obj, *tier, rollout.clone());
            Ok(())
        }
        Step::StampPurging | Step::SetPhase(_) => {
            edge::set_phase(obj, step);
            Ok(())
        }
        // The host ports go first: the status that names them goes next.
        Step::FinishPurge => {
            ports::release_all(ctx.layout, obj)?;
            ctx.state.finish_purge(obj).map_err(ActError::State)
        }
        Step::RecordSession(outcome) => edge::record(ctx, obj, unit, outcome, progress).await,
        Step::NoteMalformedMarker(why) => {
            edge::note_malformed_marker(obj, why, progress);
            Ok(())
        }
        Step::Settle { action, policy } => {
            edge::settle(obj, step, action, *policy, progress);
            Ok(())
        }
        Step::RetireMarker => edge::retire_marker(ctx, unit).await,
        Step::ClearExitQuestion => {
            ending::apply(obj, step, &[], jiff::Timestamp::now());
            Ok(())
        }
        // The caller stops running the plan here: nothing to change.
        Step::LookAgain(_) => Ok(()),
    }
}
