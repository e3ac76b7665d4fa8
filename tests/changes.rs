//! Changes that tell you what they did: an apply of a changed spec says,
//! per session, whether it moved onto the new spec, will move when idle, or
//! waits for `jackin rollout`; the keep cap says once why it purges before
//! it does; re-applies of ended records are one line. Against the real
//! engine, with busybox sessions.

use support::{Home, busybox_image, ensure_busybox};

fn workspace(name: &str, spec: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {{name: {name}}}\nspec: {spec}\n"
    )
}

/// A shell session of `workspace` that sleeps, with `MODE` set to `mode`.
fn session(name: &str, workspace: &str, mode: &str, extra: &str) -> String {
    format!(
        "apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {{name: {name}}}\nspec:\n  \
         workspace: {workspace}\n  role: {{name: tester}}\n  agent: shell\n  image: {}\n  \
         command: [sleep, \"3600\"]\n  env: [{{name: MODE, value: {mode}}}]\n{extra}",
        busybox_image()
    )
}

fn container_env(home: &Home, name: &str) -> String {
    support::docker(&[
        "inspect",
        "-f",
        "{{json .Config.Env}}",
        &home.container(name),
    ])
}

#[test]
fn apply_of_a_changed_spec_says_per_session_which_of_the_three_happened() {
    ensure_busybox();
    let home = Home::new();
    home.apply(
        "ws",
        &format!(
            "{}---\n{}",
            workspace("manual", "{}"),
            workspace("drifting", "{updatePolicy: OnDrift}")
        ),
    );
    let sessions = |mode: &str| {
        [
            session("waits", "manual", mode, ""),
            session("idle", "drifting", mode, ""),
            session("busy", "drifting", mode, ""),
        ]
        .join("---\n")
    };
    home.apply("sessions", &sessions("one"));
    // An operator attached to `busy`: its attached lock is held.
    let sockets = home.path().join("sockets").join(home.container("busy"));
    std::fs::create_dir_all(&sockets).unwrap();
    let attached = std::fs::File::create(sockets.join("attached.lock")).unwrap();
    attached.lock().unwrap();

    let out = home.apply("sessions", &sessions("two"));
    for expected in [
        "instance/waits configured\n",
        "instance/waits stays on its old spec until `jackin rollout waits` (updatePolicy: \
         Manual; changed: env)\n",
        "instance/idle moved onto the new spec (changed: env); its home, conversation and \
         checkouts are kept\n",
        "instance/busy will move onto the new spec when nobody is attached and the agent is \
         idle (updatePolicy: OnDrift; changed: env)\n",
    ] {
        assert!(out.contains(expected), "{expected:?} in:\n{out}");
    }
    // Each says what is true.
    assert!(container_env(&home, "waits").contains("MODE=one"));
    assert!(container_env(&home, "idle").contains("MODE=two"));
    assert!(container_env(&home, "busy").contains("MODE=one"));
    // An unchanged re-apply says nothing of specs.
    let again = home.apply("sessions", &sessions("two"));
    assert!(!again.contains("spec"), "{again}");
    drop(attached);
}

#[test]
fn the_keep_cap_says_once_why_it_purges_and_ended_records_are_one_line() {
    ensure_busybox();
    let home = Home::new();
    home.apply("ws", &workspace("capped", "{keep: {max: 2}}"));
    let kept: Vec<String> = (0..6)
        .map(|i| session(&format!("kept-{i}"), "capped", "one", "  phase: Kept\n"))
        .collect();
    let out = home.apply("kept", &kept.join("---\n"));
    let summary = "workspace capped keeps at most 2 kept session(s) per role and agent \
                   (keep.max: 2): purging 4 kept session(s) over it, the least recently running\n";
    assert_eq!(out.matches(summary).count(), 1, "{out}");
    let said = out.find(summary).unwrap();
    let first_purge = out.find("purging instance/").expect("each purge is named");
    assert!(said < first_purge, "the reason comes first:\n{out}");
    assert_eq!(out.matches("purging instance/").count(), 4, "{out}");

    // The four purged are ended records now: a re-apply says so once.
    let again = home.apply("kept", &kept.join("---\n"));
    assert_eq!(
        again.matches("unchanged (ended and cleaned up)").count(),
        1,
        "{again}"
    );
    assert!(
        again.contains("4 instances unchanged (ended and cleaned up): kept-"),
        "{again}"
    );
}
