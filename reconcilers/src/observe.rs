//! What the engine holds, read once per pass.
//!
//! A pass lists containers, networks and images once each, whatever the
//! number of instances, and every instance's view is cut from that one
//! snapshot by its uid label. Ownership is decided by label, never by name.

use std::collections::{BTreeMap, HashSet};

use jackin_api::instance::Recipe;
use jackin_api::names::label;

use crate::engine::models::{ContainerSummary, ContainerSummaryStateEnum, Network, Volume};
use crate::engine::{Engine, EngineError};

/// One container as a reconciler needs to see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerView {
    /// The engine's id: steps act on it, never on a name someone else may
    /// have taken since.
    pub id: String,
    pub name: String,
    pub running: bool,
}

/// Everything of one instance the engine holds.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InstanceView {
    pub container: Option<ContainerView>,
    pub sidecars: BTreeMap<String, ContainerView>,
    /// The id of the instance's network (the oldest, if there are several).
    pub network: Option<String>,
    /// The ids of further networks of the instance: a network create that a
    /// killed process left in flight can land after another process made
    /// one. They make the name ambiguous, so they go.
    pub extra_networks: Vec<String>,
    /// Volumes labelled as the instance's, by name.
    pub volumes: Vec<String>,
    /// Whether the pinned image (by id) is present.
    pub image_present: bool,
    /// The assessment of each isolated checkout (a filesystem observation,
    /// filled in by the caller from the unit's records).
    pub mounts: Vec<jackin_api::instance::MountStatus>,
    /// What was seen of the last session's end (filled in by the caller:
    /// the marker, the engine's state of the stopped container).
    pub session: crate::ending::SessionSeen,
    /// The exit policy in force (filled in by the caller from the
    /// instance's override and its workspace).
    pub exit_policy: jackin_api::workspace::ExitPolicy,
    /// A rollout to handle, decided by the caller from the spec as it
    /// resolves now ([`crate::rollout::pending`]).
    pub rollout: Option<crate::rollout::Rollout>,
}

/// A listed container's name, without the engine's leading `/`.
pub fn container_name(c: &ContainerSummary) -> String {
    c.names
        .as_ref()
        .and_then(|n| n.first())
        .map(|n| n.trim_start_matches('/').to_owned())
        .unwrap_or_default()
}

/// One snapshot of the engine's managed objects.
#[derive(Debug, Clone, Default)]
pub struct Observation {
    containers: Vec<ContainerSummary>,
    networks: Vec<Network>,
    volumes: Vec<Volume>,
    image_ids: HashSet<String>,
    /// Only what [`Observation::for_no_op`] lists: the containers, and the
    /// networks when asked. Never decided on: it only tells that an
    /// instance is as it was left.
    partial: Option<Partial>,
}

/// What a partial observation listed besides the containers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Partial {
    pub networks: bool,
}

impl Observation {
    /// Lists every managed container, network and volume, and every image:
    /// four engine calls.
    pub async fn all(engine: &Engine) -> Result<Self, EngineError> {
        let labels = [(label::MANAGED, "true")];
        let (containers, networks, volumes, images) = futures::try_join!(
            engine.list_containers(&labels),
            engine.list_networks(&labels),
            engine.list_volumes(&labels),
            engine.list_images(),
        )?;
        Ok(Self {
            containers,
            networks,
            volumes,
            image_ids: images.into_iter().map(|i| i.id).collect(),
            partial: None,
        })
    }

    /// What telling converged instances from the rest needs, and no more:
    /// the managed containers (a running container holds its network and
    /// the volumes its sidecars use, which the engine will not remove from
    /// under it), and the networks only when `networks` (instances kept,
    /// which must have none). One engine call, or two.
    pub async fn for_no_op(engine: &Engine, networks: bool) -> Result<Self, EngineError> {
        let labels = [(label::MANAGED, "true")];
        let listed_networks = async {
            match networks {
                true => engine.list_networks(&labels).await,
                false => Ok(Vec::new()),
            }
        };
        let (containers, networks_found) =
            futures::try_join!(engine.list_containers(&labels), listed_networks)?;
        Ok(Self {
            containers,
            networks: networks_found,
            partial: Some(Partial { networks }),
            ..Self::default()
        })
    }

    /// `None` for a full observation; what a partial one listed.
    pub fn partial(&self) -> Option<Partial> {
        self.partial
    }

    /// The same, narrowed to one instance by its uid; of the images, only
    /// whether the engine has `image_id` (the pinned one), when there is
    /// one: three or four engine calls, none of them a list of everything.
    pub async fn of_instance(
        engine: &Engine,
        uid: &str,
        image_id: Option<&str>,
    ) -> Result<Self, EngineError> {
        let labels = [(label::MANAGED, "true"), (label::UID, uid)];
        let image = async {
            match image_id {
                Some(id) => engine.image_id(id).await,
                None => Ok(None),
            }
        };
        let (containers, networks, volumes, image) = futures::try_join!(
            engine.list_containers(&labels),
            engine.list_networks(&labels),
            engine.list_volumes(&labels),
            image,
        )?;
        Ok(Self {
            containers,
            networks,
            volumes,
            image_ids: image.into_iter().collect(),
            partial: None,
        })
    }

    /// The part of the snapshot that belongs to the instance with `uid`.
    pub fn view(&self, uid: &str, recipe: Option<&Recipe>) -> InstanceView {
        let owned = |labels: Option<&std::collections::HashMap<String, String>>| {
            labels.is_some_and(|l| {
                l.get(label::MANAGED).map(String::as_str) == Some("true")
                    && l.get(label::UID).map(String::as_str) == Some(uid)
            })
        };
        let mut view = InstanceView::default();
        for c in &self.containers {
            if !owned(c.labels.as_ref()) {
                continue;
            }
            let container = ContainerView {
                id: c.id.clone().unwrap_or_default(),
                name: container_name(c),
                running: matches!(
                    c.state,
                    Some(
                        ContainerSummaryStateEnum::RUNNING | ContainerSummaryStateEnum::RESTARTING
                    )
                ),
            };
            match c.labels.as_ref().and_then(|l| l.get(label::SIDECAR)) {
                Some(sidecar) => {
                    view.sidecars.insert(sidecar.clone(), container);
                }
                None => view.container = Some(container),
            }
        }
        let mut networks: Vec<&Network> = self
            .networks
            .iter()
            .filter(|n| owned(n.labels.as_ref()))
            .collect();
        networks.sort_by(|a, b| (&a.created, &a.id).cmp(&(&b.created, &b.id)));
        let mut ids = networks.into_iter().filter_map(|n| n.id.clone());
        view.network = ids.next();
        view.extra_networks = ids.collect();
        view.volumes = self
            .volumes
            .iter()
            .filter(|v| owned(Some(&v.labels)))
            .map(|v| v.name.clone())
            .collect();
        view.image_present = recipe.is_some_and(|r| self.image_ids.contains(&r.image_id));
        view
    }
}
