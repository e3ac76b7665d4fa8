//! A provider (issue 40): the real claude sent by an Agent entry's
//! provider to the scripted model, with the provider's key, while the
//! operator's own Anthropic login stays on the host.
//!
//! The model is the session's sidecar (`tests/fixtures/model-server`,
//! driven as in `tests/real_agents.rs`); it is started with the SHA-256 of
//! the provider's key, so each request it records says whether it carried
//! that key ("match"), another login ("other") or none.

use std::path::PathBuf;

use support::real_agent::{AgentSession, Cli, Login, sha256_hex};
use support::{assert_never_shown, condition, files_holding, unique};

/// The provider's entry, added to the built-in claude entry as an operator
/// does (`jackin get agent claude -o json`, edited, applied): its endpoint
/// is the model sidecar, its key a file outside `JACKIN_HOME`.
fn claude_with_the_sidecar_provider(session: &AgentSession, key_file: &str) -> String {
    let mut entry: serde_json::Value =
        serde_json::from_str(&session.ok(&["get", "agent", "claude", "-o", "json"])).unwrap();
    entry["spec"]["providers"]
        .as_array_mut()
        .expect("the built-in claude has providers")
        .push(serde_json::json!({
            "name": "sidecar",
            "key": {"name": "ANTHROPIC_AUTH_TOKEN", "valueFrom": {"file": key_file}},
            "env": [{"name": "ANTHROPIC_BASE_URL", "value": "http://model:8080"}],
            "models": [{"name": "ANTHROPIC_MODEL", "value": "sidecar-model"}],
        }));
    serde_json::to_string_pretty(&entry).unwrap()
}

/// claude starts with no login question, the model gets every request with
/// the provider's key and never the operator's login (which is not even
/// forwarded into the unit), and neither canary is in jackin's records:
/// no file under `JACKIN_HOME`, nor describe, the object, its events, the
/// logs.
#[test]
fn claude_is_sent_to_a_provider_with_its_key_and_never_the_operators_login() {
    // The operator's login files hold `session.secret`: the login canary.
    let session = AgentSession::new(
        Cli::Claude,
        Login::Sync,
        "provider",
        "  provider: sidecar\n",
    );
    let key = unique("canary-provider-key-never-shown");
    let key_file = session.home.operator_home().join("provider.key");
    std::fs::write(&key_file, format!("{key}\n")).unwrap();
    let entry = claude_with_the_sidecar_provider(&session, key_file.to_str().unwrap());
    let agent_file = session.home.write_input("claude.json", &entry);
    session.ok(&["apply", agent_file.to_str().unwrap()]);

    // The instance: the provider, not spec.env, says where claude goes,
    // and the model knows the provider's key.
    let yaml = session
        .yaml("")
        .replace(
            "    - {name: ANTHROPIC_BASE_URL, value: 'http://model:8080'}\n",
            "",
        )
        .replace(&sha256_hex(&session.secret), &sha256_hex(&key));
    assert!(!yaml.contains("ANTHROPIC_BASE_URL"), "{yaml}");
    let file = session.home.write_input("instance.yaml", &yaml);
    let out = session.jackin(&["apply", file.to_str().unwrap()]);
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "apply failed:\n{said}");
    let stage = format!(
        "[provider] sidecar: claude is sent to the provider with its key (file {}) in \
         ANTHROPIC_AUTH_TOKEN; claude's own login is not forwarded",
        key_file.display()
    );
    assert!(said.contains(&stage), "no provider stage:\n{said}");

    let term = session.first_attach();
    let screen = term.screen();
    assert!(
        !screen.contains("Select login method") && !screen.contains("API key"),
        "a login question:\n{screen}"
    );
    let request = session.say(&term, "hello-by-provider");
    assert_eq!(
        request.login, "match",
        "not the provider's key: {request:?}"
    );
    term.detach();
    let logins: Vec<String> = session.requests().into_iter().map(|r| r.login).collect();
    assert!(!logins.is_empty());
    assert!(
        logins.iter().all(|login| login == "match"),
        "a request without the provider's key: {logins:?}"
    );

    for (what, canary) in [
        ("operator's login", &session.secret),
        ("provider's key", &key),
    ] {
        assert_eq!(
            files_holding(session.home.path(), canary),
            Vec::<PathBuf>::new(),
            "the {what} in a file under JACKIN_HOME"
        );
        assert_never_shown(&session.home, &session.name, canary);
        let model_log = session.ok(&["logs", &session.name, "-c", "model"]);
        assert!(
            !model_log.contains(canary.as_str()),
            "the {what} in the model's log"
        );
        for args in [
            vec!["describe", "provider", "sidecar"],
            vec!["get", "providers", "-o", "yaml"],
        ] {
            assert!(
                !session.ok(&args).contains(canary.as_str()),
                "jackin {args:?} shows the {what}"
            );
        }
    }
    let described = session.ok(&["describe", "provider", "sidecar"]);
    assert!(
        described.contains(&format!(
            "file {} as ANTHROPIC_AUTH_TOKEN",
            key_file.display()
        )) && described.contains(&session.name),
        "{described}"
    );

    // Another pick is drift, until a rollout: the session keeps its
    // provider meanwhile.
    let other = yaml.replace("  provider: sidecar\n", "  provider: anthropic\n");
    assert_ne!(other, yaml);
    let file = session.home.write_input("instance.yaml", &other);
    session.ok(&["apply", file.to_str().unwrap()]);
    let obj = session.home.object(&session.name);
    let drift = condition(&obj, "SpecDrift").expect("a SpecDrift condition");
    assert!(
        drift["message"].as_str().unwrap().contains("provider"),
        "{drift}"
    );
    assert_eq!(
        obj["status"]["recipe"]["provider"]["name"], "sidecar",
        "{obj}"
    );
}
