//! The engine settings of the restricted profile (`jackin_api::security`)
//! for each container jackin makes: the agent's, its sidecars, a probe.
//!
//! - **The agent's container** drops every capability and adds back only
//!   what the agent needs as jackin runs it (none as the operator; root's
//!   file and user handling as the image's user), runs with
//!   `no-new-privileges`, a process limit and a bounded log, each as the
//!   role and workspace widen it. The agent is untrusted: this is what it
//!   runs under.
//! - **A sidecar** is the operator's own service (a database, a Docker
//!   daemon that must be privileged), whose image decides what it needs:
//!   its capabilities stay the engine's. It gets the session's process
//!   limit and log bounds, so that neither a runaway service nor the agent
//!   driving one (a fork bomb in `dind`) reaches the engine's host.
//! - **A probe** runs one program of the image to read its path or version,
//!   without network or mounts: it needs no capability at all.
//!
//! Each is a pure function of the recipe (whether the agent runs as the
//! operator, and the pinned widenings of the role and the workspace),
//! applied whenever a container is created: a recipe pinned before the
//! profile existed gets the defaults at its next tier-2 or tier-3 restore
//! or rollout, while a container only started again (tier 1) keeps the
//! settings it was made with. Only the workspace's widening is compared
//! for drift; the role's moves with its commit.

use std::collections::HashMap;

use jackin_api::instance::Recipe;
use jackin_api::security::ContainerProfile;

use bollard::models::{HostConfig, HostConfigLogConfig};

/// The profile a recipe's agent container runs with. The agent runs as the
/// operator exactly when the recipe pins a user (`hostUser`); otherwise it
/// runs as the image's user, root in most images.
pub fn profile(recipe: &Recipe) -> ContainerProfile {
    ContainerProfile::new(recipe.user.is_some(), recipe.security.as_ref())
}

/// The agent's container: the recipe's profile.
pub fn agent(recipe: &Recipe) -> HostConfig {
    host_config(&profile(recipe))
}

/// A sidecar: the engine's capabilities, the session's process limit and
/// log bounds.
pub fn sidecar(recipe: &Recipe) -> HostConfig {
    let profile = profile(recipe);
    HostConfig {
        pids_limit: Some(profile.pids_limit),
        log_config: Some(log_config(&profile)),
        ..Default::default()
    }
}

/// A probe: no capability, whoever the image's user is, and the defaults
/// for the rest.
pub fn probe() -> HostConfig {
    host_config(&ContainerProfile::new(true, None))
}

fn host_config(profile: &ContainerProfile) -> HostConfig {
    HostConfig {
        cap_drop: Some(vec!["ALL".to_owned()]),
        cap_add: Some(profile.capabilities.clone()),
        security_opt: profile
            .no_new_privileges
            .then(|| vec!["no-new-privileges:true".to_owned()]),
        pids_limit: Some(profile.pids_limit),
        log_config: Some(log_config(profile)),
        ..Default::default()
    }
}

/// The engine's json-file log, bounded. `jackin logs`, the replay on
/// attach and the overview read it through the engine, which reads the
/// rotated files too.
fn log_config(profile: &ContainerProfile) -> HostConfigLogConfig {
    HostConfigLogConfig {
        typ: Some("json-file".to_owned()),
        config: Some(HashMap::from([
            ("max-size".to_owned(), profile.log_max_size.clone()),
            ("max-file".to_owned(), profile.log_max_files.to_string()),
        ])),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use jackin_api::security::{PinnedSecurity, SecuritySpec};

    #[test]
    fn the_agent_drops_everything_and_gets_back_what_its_user_needs() {
        let as_operator = Recipe {
            user: Some("1000:1000".into()),
            ..Default::default()
        };
        let config = agent(&as_operator);
        assert_eq!(config.cap_drop, Some(vec!["ALL".to_owned()]));
        assert_eq!(config.cap_add, Some(Vec::new()));
        assert_eq!(
            config.security_opt,
            Some(vec!["no-new-privileges:true".to_owned()])
        );
        assert_eq!(config.pids_limit, Some(4096));
        let log = config.log_config.unwrap();
        assert_eq!(log.typ.as_deref(), Some("json-file"));
        let options = log.config.unwrap();
        assert_eq!(options["max-size"], "10m");
        assert_eq!(options["max-file"], "5");
        let as_image_user = agent(&Recipe::default());
        assert_eq!(
            as_image_user.cap_add.unwrap(),
            ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID"]
        );
    }

    #[test]
    fn a_widening_reaches_the_agent_and_a_sidecars_limits_only() {
        let recipe = Recipe {
            user: Some("1000:1000".into()),
            security: Some(PinnedSecurity {
                role: Some(SecuritySpec {
                    cap_add: vec!["NET_ADMIN".into()],
                    no_new_privileges: Some(false),
                    pids_limit: Some(64),
                    ..Default::default()
                }),
                workspace: None,
            }),
            ..Default::default()
        };
        let config = agent(&recipe);
        assert_eq!(config.cap_add, Some(vec!["NET_ADMIN".to_owned()]));
        assert_eq!(config.security_opt, None);
        assert_eq!(config.pids_limit, Some(64));
        let sidecar = sidecar(&recipe);
        assert_eq!((sidecar.cap_drop, sidecar.cap_add), (None, None));
        assert_eq!(sidecar.pids_limit, Some(64));
        assert!(sidecar.log_config.is_some());
        assert_eq!(probe().cap_add, Some(Vec::new()));
    }
}
