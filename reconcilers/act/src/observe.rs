//! What the engine holds, read once per pass.
//!
//! A pass lists containers, networks and images once each, whatever the
//! number of instances, and every instance's view is cut from that one
//! snapshot by its uid label. Ownership is decided by label, never by name.

use std::collections::{HashMap, HashSet};
use std::sync::OnceLock;

use jackin_api::instance::Recipe;
use jackin_api::names::label;

use jackin_engine::models::{ContainerSummary, ContainerSummaryStateEnum, Network, Volume};
use jackin_engine::{Engine, EngineError};
use jackin_plan::view::{ContainerView, InstanceView};

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
    /// Which objects each instance owns, made at the first view: a view
    /// then costs what its instance owns, not the whole snapshot (a pass
    /// over 500 instances would otherwise look through 500 x 500).
    owners: OnceLock<Owners>,
}

/// The positions in a snapshot of the managed objects, by the uid of the
/// instance whose label they carry.
#[derive(Debug, Clone, Default)]
struct Owners {
    containers: HashMap<String, Vec<usize>>,
    networks: HashMap<String, Vec<usize>>,
    volumes: HashMap<String, Vec<usize>>,
}

impl Owners {
    fn of(observation: &Observation) -> Self {
        fn by_uid<'a>(
            labels: impl Iterator<Item = Option<&'a HashMap<String, String>>>,
        ) -> HashMap<String, Vec<usize>> {
            let mut owned: HashMap<String, Vec<usize>> = HashMap::new();
            for (i, labels) in labels.enumerate() {
                let Some(labels) = labels else { continue };
                if labels.get(label::MANAGED).map(String::as_str) != Some("true") {
                    continue;
                }
                if let Some(uid) = labels.get(label::UID) {
                    owned.entry(uid.clone()).or_default().push(i);
                }
            }
            owned
        }
        Self {
            containers: by_uid(observation.containers.iter().map(|c| c.labels.as_ref())),
            networks: by_uid(observation.networks.iter().map(|n| n.labels.as_ref())),
            volumes: by_uid(observation.volumes.iter().map(|v| Some(&v.labels))),
        }
    }
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
            owners: OnceLock::new(),
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
            owners: OnceLock::new(),
        })
    }

    /// The part of the snapshot that belongs to the instance with `uid`.
    pub fn view(&self, uid: &str, recipe: Option<&Recipe>) -> InstanceView {
        let owners = self.owners.get_or_init(|| Owners::of(self));
        let owned = |by_uid: &HashMap<String, Vec<usize>>| -> Vec<usize> {
            by_uid.get(uid).cloned().unwrap_or_default()
        };
        let mut view = InstanceView::default();
        for c in owned(&owners.containers)
            .into_iter()
            .map(|i| &self.containers[i])
        {
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
        let mut networks: Vec<&Network> = owned(&owners.networks)
            .into_iter()
            .map(|i| &self.networks[i])
            .collect();
        networks.sort_by(|a, b| (&a.created, &a.id).cmp(&(&b.created, &b.id)));
        let mut ids = networks.into_iter().filter_map(|n| n.id.clone());
        view.network = ids.next();
        view.extra_networks = ids.collect();
        view.volumes = owned(&owners.volumes)
            .into_iter()
            .map(|i| self.volumes[i].name.clone())
            .collect();
        view.image_present = recipe.is_some_and(|r| self.image_ids.contains(&r.image_id));
        view
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    /// A view holds what its instance owns and nothing of the others',
    /// however many views of one snapshot are taken.
    #[test]
    fn a_view_holds_its_own_objects_only() {
        let owned = |uid: &str| labels(&[(label::MANAGED, "true"), (label::UID, uid)]);
        let container = |id: &str, mut labels: HashMap<String, String>, sidecar: Option<&str>| {
            if let Some(s) = sidecar {
                labels.insert(label::SIDECAR.to_owned(), s.to_owned());
            }
            ContainerSummary {
                id: Some(id.to_owned()),
                names: Some(vec![format!("/{id}")]),
                labels: Some(labels),
                state: Some(ContainerSummaryStateEnum::RUNNING),
                ..ContainerSummary::default()
            }
        };
        let network = |id: &str, created: &str, labels: HashMap<String, String>| Network {
            id: Some(id.to_owned()),
            created: Some(created.to_owned()),
            labels: Some(labels),
            ..Network::default()
        };
        let observation = Observation {
            containers: vec![
                container("a", owned("u1"), None),
                container("b", owned("u2"), None),
                container("a-dind", owned("u1"), Some("dind")),
                // Not managed: no one's, whatever its uid says.
                container("c", labels(&[(label::UID, "u1")]), None),
            ],
            networks: vec![
                network("n2", "2", owned("u1")),
                network("n1", "1", owned("u1")),
                network("m", "1", owned("u2")),
            ],
            volumes: vec![Volume {
                name: "certs".into(),
                labels: owned("u1"),
                ..Volume::default()
            }],
            ..Observation::default()
        };
        for _ in 0..2 {
            let one = observation.view("u1", None);
            assert_eq!(one.container.as_ref().map(|c| c.id.as_str()), Some("a"));
            assert_eq!(one.sidecars.keys().collect::<Vec<_>>(), ["dind"]);
            assert_eq!(one.network.as_deref(), Some("n1"));
            assert_eq!(one.extra_networks, ["n2"]);
            assert_eq!(one.volumes, ["certs"]);
            let two = observation.view("u2", None);
            assert_eq!(two.container.map(|c| c.id), Some("b".to_owned()));
            assert_eq!(two.network.as_deref(), Some("m"));
            assert!(two.volumes.is_empty() && two.sidecars.is_empty());
            let none = observation.view("u3", None);
            assert!(none.container.is_none() && none.network.is_none());
        }
    }
}
