//! Whether the engine sees this unit. jackin keeps a session's home, state,
//! `bin/` and checkouts on the controller's machine and binds them into the
//! container by their paths, so only an engine that shares the controller's
//! files can run it. An engine elsewhere may have no such paths (the create
//! is refused), or the same paths holding something else: empty, a stale
//! copy, another unit. Nothing tells those apart but a look through the
//! engine itself, so before every start jackin writes the unit's identity
//! (the instance's uid and a fresh nonce) into `bin/`, which the container
//! binds read-only, and reads it back through the engine's archive API from
//! the container about to start. Anything but the bytes just written
//! refuses the start: the session never runs on a copy it would lose.
//!
//! A move to another engine (`rollout --move`) asks the same of the engine
//! it goes to before anything is taken from the one it leaves, through a
//! container made for the look alone ([`check_move_target`]).

use std::collections::HashMap;
use std::path::PathBuf;

use jackin_api::Instance;
use jackin_api::names::label;
use jackin_api::storage::{PinnedStorage, UnitStorage};
use jackin_engine::models::{ContainerCreateBody, HostConfig, Mount, MountType};
use jackin_engine::{Engine, EngineError, restricted};
use jackin_files::fsutil::write_atomic;
use jackin_files::layout::Layout;
use jackin_plan::marker::BIN_DIR;

use crate::context::Context;
use crate::error::{ActError, io};

/// The identity's file in the unit's `bin/`.
const IDENTITY_FILE: &str = "unit.id";
/// The most bytes read back: an identity is under a hundred.
const MAX_IDENTITY_BYTES: u64 = 256;

/// Where the unit's identity is kept on the controller's machine.
pub fn identity_file(layout: &Layout, container: &str) -> PathBuf {
    layout.unit_bin_dir(container).join(IDENTITY_FILE)
}

/// Writes a new identity of the unit of the instance `uid` for this start;
/// returns it, as the engine must show it.
pub fn write(layout: &Layout, container: &str, uid: &str) -> std::io::Result<Vec<u8>> {
    let identity = format!("{uid} {}\n", uuid::Uuid::new_v4()).into_bytes();
    write_atomic(&identity_file(layout, container), &identity)?;
    Ok(identity)
}

/// Reads the identity back through `engine` from the unit's container
/// `container` (created, not yet started), and refuses unless it is
/// `written`. A container that goes meanwhile (a `docker rm -f` under
/// way) proves nothing either way: that is the engine's error, tried
/// again, never a refusal.
pub async fn verify(engine: &Engine, container: &str, written: &[u8]) -> Result<(), ActError> {
    let path = format!("{BIN_DIR}/{IDENTITY_FILE}");
    let why = match engine.read_file(container, &path, MAX_IDENTITY_BYTES).await {
        Ok(Some(seen)) if seen == written => return Ok(()),
        Ok(Some(_)) => format!(
            "its {path} holds another identity than the one jackin just wrote: the engine's \
             machine has a stale copy of the unit, or another unit's"
        ),
        Ok(None) if !standing(engine, container).await? => {
            return Err(ActError::Engine(EngineError::Refused {
                action: format!("read {path} in container {container}"),
                status: 404,
                message: "the container went while it was read".to_owned(),
            }));
        }
        Ok(None) => format!(
            "its {path} is missing, where jackin just wrote it: the engine's machine has the \
             unit's paths but not its files"
        ),
        Err(EngineError::Failed { message, .. }) => format!("its {path} cannot be used: {message}"),
        Err(e) => return Err(e.into()),
    };
    Err(not_on_engine(engine, why))
}

/// Whether `container` is there and not on its way out.
async fn standing(engine: &Engine, container: &str) -> Result<bool, EngineError> {
    let Some(inspected) = engine.inspect_container(container).await? else {
        return Ok(false);
    };
    let status = inspected
        .state
        .and_then(|s| s.status)
        .map(|s| s.to_string());
    Ok(!matches!(status.as_deref(), Some("removing" | "dead")))
}

/// `error`, unless it is the engine refusing a create because a bind's
/// source does not exist on its machine: then the unit is not there.
pub fn create_refused(engine: &Engine, error: EngineError) -> ActError {
    match &error {
        EngineError::Refused {
            status: 400,
            message,
            ..
        } if message.contains("bind source path does not exist") => not_on_engine(
            engine,
            format!("its machine has none of the unit's paths ({message})"),
        ),
        _ => error.into(),
    }
}

/// Proves that the engine of `ctx` sees the unit before the recipe's first
/// container is made, and pins the answer: the agent's container, which
/// binds the unit's home and checkouts, is never made on an engine that
/// does not see them (see [`look`]).
pub async fn prove(ctx: &Context<'_>, obj: &mut Instance, container: &str) -> Result<(), ActError> {
    look(ctx, obj, container).await?;
    if let Some(recipe) = obj.status.as_mut().and_then(|s| s.recipe.as_mut()) {
        recipe.storage = Some(PinnedStorage {
            kind: UnitStorage::HostPaths,
            engine: ctx.engine.endpoint().to_owned(),
            proven_at: jiff::Timestamp::now(),
        });
    }
    Ok(())
}

/// Whether the engine of `ctx` (the one a move goes to) sees the unit,
/// asked before the move takes anything from the engine it leaves.
pub async fn check_move_target(
    ctx: &Context<'_>,
    obj: &Instance,
    container: &str,
) -> Result<(), ActError> {
    look(ctx, obj, container).await
}

/// Whether the engine of `ctx` sees the unit: a container binding only the
/// unit's `bin/` is made there (no network, no capabilities, never
/// started), from an image that engine has (the pinned one when it is
/// there), the identity just written is read back from it, and it is
/// removed again whatever the answer; one an interrupted look left goes
/// first. Labelled as jackin's, without the instance's labels, so that
/// nothing takes it for the session's, and the sweep removes one left
/// behind.
async fn look(ctx: &Context<'_>, obj: &Instance, container: &str) -> Result<(), ActError> {
    let engine = ctx.engine;
    let look = format!("{container}-look");
    engine.remove_container(&look).await?;
    let pinned = obj.status.as_ref().and_then(|s| s.recipe.as_ref());
    let pinned = pinned.map(|r| r.image_id.as_str()).unwrap_or_default();
    let images = engine.list_images().await?;
    let image = images
        .iter()
        .find(|i| i.id == pinned)
        .or_else(|| images.first())
        .map(|i| i.id.clone());
    let Some(image) = image else {
        let why = "it has no image at all to make a container from, to look with".to_owned();
        return Err(not_on_engine(engine, why));
    };
    let uid = obj.metadata.uid.as_deref().unwrap_or_default();
    let identity =
        write(ctx.layout, container, uid).map_err(io(&identity_file(ctx.layout, container)))?;
    let body = ContainerCreateBody {
        image: Some(image),
        entrypoint: Some(vec![jackin_plan::marker::ENTRY_PATH.to_owned()]),
        labels: Some(HashMap::from([
            (label::MANAGED.to_owned(), "true".to_owned()),
            (label::HOME.to_owned(), ctx.home_id.clone()),
        ])),
        network_disabled: Some(true),
        host_config: Some(HostConfig {
            network_mode: Some("none".to_owned()),
            mounts: Some(vec![Mount {
                target: Some(BIN_DIR.to_owned()),
                source: Some(ctx.layout.unit_bin_dir(container).display().to_string()),
                typ: Some(MountType::BIND),
                read_only: Some(true),
                ..Default::default()
            }]),
            ..restricted::probe()
        }),
        ..Default::default()
    };
    let seen = match engine.create_container(&look, body).await {
        Ok(_) => verify(engine, &look, &identity).await,
        Err(e) => Err(create_refused(engine, e)),
    };
    engine.remove_container(&look).await?;
    seen
}

fn not_on_engine(engine: &Engine, why: String) -> ActError {
    ActError::UnitNotOnEngine {
        engine: engine.endpoint().to_owned(),
        why,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_engine::fake::FakeEngine;

    /// A container that is gone when its identity is read (a `docker rm
    /// -f` under way) is the engine's passing error, tried again: never
    /// the refusal that fails the instance for good.
    #[tokio::test]
    async fn a_container_gone_while_read_is_no_refusal() {
        let engine = FakeEngine::default().engine();
        let err = verify(&engine, "jk-gone", b"uid nonce\n")
            .await
            .unwrap_err();
        assert!(matches!(err, ActError::Engine(_)), "{err}");
        assert!(!err.is_permanent(), "{err}");
    }
}
