//! The agent's container runs restricted, against the real engine: every
//! capability dropped but what the agent's user needs, no new privileges, a
//! process limit and a bounded log; a role or a workspace widens them, and
//! `describe` says so.

use std::time::Duration;

use support::{Home, RoleRepo, docker, ensure_busybox, eventually, instance_yaml_with};

/// The container's `HostConfig`, as the engine reports it.
fn host_config(container: &str) -> serde_json::Value {
    serde_json::from_str(&docker(&[
        "inspect",
        "-f",
        "{{json .HostConfig}}",
        container,
    ]))
    .expect("inspect prints JSON")
}

/// The capabilities a `HostConfig` adds back (the engine reports none as
/// `null`).
fn added(config: &serde_json::Value) -> Vec<String> {
    let mut names: Vec<String> = config["CapAdd"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|c| Some(c.as_str()?.to_owned()))
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// `command: [sh, -c, SCRIPT]` as a spec line.
fn command_line(script: &str) -> String {
    format!(
        "  command: [sh, -c, {}]\n",
        serde_json::to_string(script).unwrap()
    )
}

/// Waits for the agent to write `file` in its `state/` and returns it.
fn state_file(home: &Home, name: &str, file: &str) -> String {
    let path = home.unit(name).join("state").join(file);
    eventually(
        Duration::from_secs(300),
        &format!("the agent's {file}"),
        || std::fs::read_to_string(&path).is_ok_and(|text| text.ends_with('\n')),
    );
    std::fs::read_to_string(&path).unwrap()
}

/// A role whose `jackin.role.yaml` holds `settings`.
fn role_with_settings(settings: &str) -> RoleRepo {
    let role = RoleRepo::new("restricted");
    std::fs::write(role.path().join("jackin.role.yaml"), settings).unwrap();
    role.commit_marker("with settings");
    role
}

/// Defect M2: an agent kept CAP_MKNOD and made a device node where jackin
/// reads its marker. Now neither root in the image (`hostUser: false`) nor
/// the operator's uid (the default) may; `docker inspect` shows the profile.
#[test]
fn a_sessions_container_runs_restricted_and_an_agents_mknod_fails() {
    ensure_busybox();
    let home = Home::new();
    // The agent tries the defect's device node, then waits.
    let script = "mknod /jackin/state/exit.json c 1 3 2>/jackin/state/mknod.err; \
                  echo $? > /jackin/state/mknod.rc; exec sleep 3600";
    let cases = [
        ("as-operator", "", Vec::<&str>::new()),
        (
            "as-image-root",
            "  hostUser: false\n",
            vec![
                "CAP_CHOWN",
                "CAP_DAC_OVERRIDE",
                "CAP_FOWNER",
                "CAP_SETGID",
                "CAP_SETUID",
            ],
        ),
    ];
    for (name, user_line, capabilities) in cases {
        let spec = format!("{user_line}{}", command_line(script));
        home.apply(name, &instance_yaml_with(name, &spec));
        let rc = state_file(&home, name, "mknod.rc");
        let err = std::fs::read_to_string(home.unit(name).join("state/mknod.err")).unwrap();
        assert_ne!(rc.trim(), "0", "{name}: mknod succeeded");
        assert!(err.contains("Operation not permitted"), "{name}: {err}");
        let marker = home.unit(name).join("state/exit.json");
        assert!(
            std::fs::symlink_metadata(&marker).is_err(),
            "{name}: the agent left {} behind",
            marker.display()
        );
        let config = host_config(&home.container(name));
        assert_eq!(config["CapDrop"], serde_json::json!(["ALL"]), "{name}");
        let added: Vec<String> = added(&config)
            .into_iter()
            .map(|c| format!("CAP_{}", c.trim_start_matches("CAP_")))
            .collect();
        assert_eq!(added, capabilities, "{name}");
        assert_eq!(
            config["SecurityOpt"],
            serde_json::json!(["no-new-privileges:true"]),
            "{name}"
        );
        assert_eq!(config["PidsLimit"], 4096, "{name}");
        assert_eq!(config["LogConfig"]["Type"], "json-file", "{name}");
        assert_eq!(
            config["LogConfig"]["Config"],
            serde_json::json!({"max-size": "10m", "max-file": "5"}),
            "{name}"
        );

        let describe = home.ok(&["describe", name]);
        assert!(describe.contains("no-new-privileges, at most 4096 processes, log 5 × 10m"));
        assert!(!describe.contains("widened:"), "{describe}");
        home.ok(&["set-phase", name, "purged"]);
    }
}

/// A role's widening is refused where the workspace does not allow it, with
/// a message naming both and the allowance that would do; allowed, the
/// role gets it and so does the workspace's own widening, `apply` says so,
/// the agent uses it, and `describe` shows where each came from.
#[test]
fn a_role_widens_a_capability_only_where_the_workspace_allows_it_and_apply_says_so() {
    ensure_busybox();
    let home = Home::new();
    let role = role_with_settings("security:\n  capAdd: [NET_ADMIN]\n");
    let workspace = |allow: &str| {
        format!(
            "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: ws}}\nspec:\n  \
             security: {{capAdd: [SYS_PTRACE], pidsLimit: 2048{allow}}}\n"
        )
    };
    home.apply("ws", &workspace(""));
    // Changing the loopback's MTU needs CAP_NET_ADMIN.
    let script = "ip link set lo mtu 1300 2>/jackin/state/ip.err; echo $? > /jackin/state/ip.rc; \
                  exec sleep 3600";
    let spec = format!(
        "  workspace: ws\n  hostUser: false\n{}",
        command_line(script)
    );
    let refused = home.write_input(
        "refused.yaml",
        &role.agent_instance_yaml("refused", "shell", &spec),
    );
    let error = home.fails(&["apply", refused.to_str().unwrap()]);
    assert!(
        error.contains("role \"role-")
            && error.contains(
                "widens the container with capAdd NET_ADMIN, which workspace \"ws\" does not allow"
            )
            && error.contains(
                "add `allowRole: {capAdd: [NET_ADMIN]}` to the workspace's spec.security"
            ),
        "{error}"
    );
    assert_eq!(docker_ps_count(&home, "refused"), 0, "nothing started");
    home.ok(&["delete", "refused", "--force"]);

    home.apply("ws", &workspace(", allowRole: {capAdd: [NET_ADMIN]}"));
    let yaml = home.write_input(
        "widened.yaml",
        &role.agent_instance_yaml("widened", "shell", &spec),
    );
    let applied = home.jackin(&["apply", yaml.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&applied.stderr);
    assert!(applied.status.success(), "{said}");
    assert!(
        said.contains(
            "[security] the container is widened: capAdd NET_ADMIN (role); capAdd SYS_PTRACE \
             (workspace); pidsLimit 2048 (workspace) (role \"role-"
        ) && said.contains("workspace \"ws\")"),
        "{said}"
    );

    let config = host_config(&home.container("widened"));
    let added = added(&config);
    for name in ["NET_ADMIN", "SYS_PTRACE", "CHOWN", "SETUID"] {
        assert!(
            added.iter().any(|c| c.trim_start_matches("CAP_") == name),
            "{name} in {added:?}"
        );
    }
    assert!(!added.iter().any(|c| c.ends_with("MKNOD")), "{added:?}");
    assert_eq!(config["PidsLimit"], 2048);
    let rc = state_file(&home, "widened", "ip.rc");
    let err = std::fs::read_to_string(home.unit("widened").join("state/ip.err")).unwrap();
    assert_eq!(rc.trim(), "0", "the agent could not use NET_ADMIN: {err}");

    let describe = home.ok(&["describe", "widened"]);
    assert!(
        describe.contains(
            "widened:     capAdd NET_ADMIN (role); capAdd SYS_PTRACE (workspace); \
             pidsLimit 2048 (workspace)"
        ),
        "{describe}"
    );
    let workspace = home.ok(&["describe", "workspace", "ws"]);
    assert!(
        workspace.contains("widens capAdd SYS_PTRACE (workspace); pidsLimit 2048 (workspace)")
            && workspace.contains("capAdd NET_ADMIN"),
        "{workspace}"
    );
    home.ok(&["set-phase", "widened", "purged"]);
}

/// How many containers of instance `name` the engine has, running or not.
fn docker_ps_count(home: &Home, name: &str) -> usize {
    let home_label = format!("label=jackin.dev/home={}", home.home_id());
    let instance_label = format!("label=jackin.dev/instance={name}");
    let listed = docker(&[
        "ps",
        "-aq",
        "--filter",
        &home_label,
        "--filter",
        &instance_label,
    ]);
    listed.lines().count()
}

/// A fork bomb, bounded (200 forks at most, each a sleep the purge ends),
/// stops at the process limit the role set low, and the engine goes on.
#[test]
fn a_fork_bomb_stops_at_the_roles_process_limit() {
    ensure_busybox();
    let home = Home::new();
    let role = role_with_settings("security:\n  pidsLimit: 64\n");
    home.apply(
        "ws",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: ws}\nspec:\n  \
         security: {allowRole: {pidsLimit: true}}\n",
    );
    // Each `sleep &` is one more process; past the limit the fork fails.
    // What the container's pid namespace then holds is counted.
    // A failed fork ends the shell that tried it, so the loop runs in a
    // subshell; the count uses no fork (a glob and builtins only).
    let script = "(i=0; while [ $i -lt 200 ]; do sleep 600 & i=$((i + 1)); done) 2>/dev/null; \
                  n=0; for p in /proc/[0-9]*; do n=$((n + 1)); done; \
                  echo $n > /jackin/state/count; exec sleep 3600";
    let spec = format!("  workspace: ws\n{}", command_line(script));
    home.apply("bomb", &role.agent_instance_yaml("bomb", "shell", &spec));
    assert_eq!(host_config(&home.container("bomb"))["PidsLimit"], 64);
    let count: u32 = state_file(&home, "bomb", "count").trim().parse().unwrap();
    assert!(
        (32..=64).contains(&count),
        "{count} processes: the limit should have stopped the loop at 64"
    );
    // The engine still answers and the session still ends as asked.
    docker(&["version", "--format", "{{.Server.Version}}"]);
    let describe = home.ok(&["describe", "bomb"]);
    assert!(describe.contains("pidsLimit 64 (role)"), "{describe}");
    assert!(describe.contains("at most 64 processes"), "{describe}");
    home.ok(&["set-phase", "bomb", "purged"]);
    assert!(home.uids().is_empty());
}

/// The log is bounded, and the end of it is still found after rotations:
/// `jackin logs --tail` (what the replay and the overview's last line ask
/// the engine for) shows the agent's last line.
#[test]
fn a_rotated_log_still_ends_with_the_agents_last_line() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "ws",
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: ws}\nspec:\n  \
         security: {logs: {maxSize: 4m, maxFiles: 2}}\n",
    );
    // About 12 MiB of numbered lines, then the last one, then quiet.
    let script = "i=0; while [ $i -lt 200000 ]; do \
                  echo \"line $i of the agent's output, long enough to fill the log\"; \
                  i=$((i + 1)); done; echo LAST-LINE; echo done > /jackin/state/printed; \
                  exec sleep 3600";
    let spec = format!("  workspace: ws\n{}", command_line(script));
    home.apply("chatty", &instance_yaml_with("chatty", &spec));
    let config = host_config(&home.container("chatty"));
    assert_eq!(
        config["LogConfig"]["Config"],
        serde_json::json!({"max-size": "4m", "max-file": "2"})
    );
    state_file(&home, "chatty", "printed");
    // The engine copies the output into its log on its own time: the
    // agent's marker can come before the log has the last line.
    eventually(
        Duration::from_secs(60),
        "the log ends with LAST-LINE",
        || home.ok(&["logs", "chatty", "--tail", "1"]).trim() == "LAST-LINE",
    );
    let whole = home.ok(&["logs", "chatty"]);
    assert!(whole.trim_end().ends_with("LAST-LINE"));
    // The first lines were rotated away: the engine kept at most two files.
    assert!(!whole.contains("line 0 of"), "the log was not rotated");
    assert!(whole.len() < 9 << 20, "{} bytes kept", whole.len());
    home.ok(&["set-phase", "chatty", "purged"]);
    assert!(home.uids().is_empty());
}
