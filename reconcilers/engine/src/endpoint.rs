//! Which engine to talk to, chosen the way the docker CLI chooses it:
//! `DOCKER_HOST` first (with TLS when `DOCKER_TLS_VERIFY` is set), then the
//! context named by `DOCKER_CONTEXT`, then the `currentContext` of the CLI's
//! config file, then the default socket.

use std::path::{Path, PathBuf};

use jackin_api::redact::json_error;

use jackin_files::fsutil::read_regular;
use jackin_plan::digest::sha256_hex;

/// The most jackin reads of the docker CLI's `config.json` or a context's
/// `meta.json`. Both are the operator's and may be links (followed, to a
/// regular file only); a config with many registry logins is a few KiB.
const MAX_DOCKER_FILE_BYTES: u64 = 4 << 20;

/// Where the engine is reached when nothing else is configured.
pub const DEFAULT_HOST: &str = "unix:///var/run/docker.sock";

/// The client certificate, key and CA for a TLS connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    pub ca: PathBuf,
    pub cert: PathBuf,
    pub key: PathBuf,
}

impl TlsFiles {
    fn in_dir(dir: &Path) -> Self {
        Self {
            ca: dir.join("ca.pem"),
            cert: dir.join("cert.pem"),
            key: dir.join("key.pem"),
        }
    }
}

/// A resolved engine address.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Endpoint {
    /// `unix://…`, `tcp://…` or `ssh://…`.
    pub host: String,
    pub tls: Option<TlsFiles>,
    /// Where the choice came from, for messages.
    pub source: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum EndpointError {
    #[error(
        "{origin}: unsupported engine address {host:?}: expected unix://PATH, tcp://HOST:PORT \
         or ssh://[USER@]HOST[:PORT]"
    )]
    Unsupported { host: String, origin: String },
    /// An address no engine can have: a port out of range, a relative
    /// socket path (see [`jackin_api::validate::engine_address`]).
    #[error("{origin}: {message}")]
    Invalid { origin: String, message: String },
    /// A unix address whose path is there and is no socket (a device, a
    /// file): nothing listens there, and nothing will.
    #[error("{origin}: {path} is not a socket (it is {what}): no Docker engine listens there")]
    NotASocket {
        path: String,
        what: &'static str,
        origin: String,
    },
    #[error("docker context {name:?} not found (looked in {dir})")]
    UnknownContext { name: String, dir: String },
    #[error("{path}: cannot read the docker context: {message}")]
    BadContext { path: String, message: String },
}

/// The environment and files the choice depends on; a seam for tests.
#[derive(Debug, Clone, Default)]
pub struct Inputs {
    pub docker_host: Option<String>,
    pub tls_verify: Option<String>,
    pub cert_path: Option<PathBuf>,
    pub context: Option<String>,
    /// The docker CLI's configuration directory (`DOCKER_CONFIG`, else `~/.docker`).
    pub config_dir: Option<PathBuf>,
}

impl Inputs {
    pub fn from_env() -> Self {
        let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
        Self {
            docker_host: var("DOCKER_HOST"),
            tls_verify: var("DOCKER_TLS_VERIFY"),
            cert_path: var("DOCKER_CERT_PATH").map(PathBuf::from),
            context: var("DOCKER_CONTEXT"),
            config_dir: var("DOCKER_CONFIG")
                .map(PathBuf::from)
                .or_else(|| std::env::home_dir().map(|h| h.join(".docker"))),
        }
    }
}

/// Chooses the engine endpoint.
pub fn resolve(inputs: &Inputs) -> Result<Endpoint, EndpointError> {
    if let Some(host) = &inputs.docker_host {
        let tls = inputs.tls_verify.as_ref().map(|_| {
            let dir = inputs
                .cert_path
                .clone()
                .or_else(|| inputs.config_dir.clone())
                .unwrap_or_default();
            TlsFiles::in_dir(&dir)
        });
        return checked(host, tls, "DOCKER_HOST");
    }
    let context = match &inputs.context {
        Some(name) => Some((name.clone(), "DOCKER_CONTEXT")),
        None => current_context(inputs.config_dir.as_deref())?
            .map(|n| (n, "the docker CLI's currentContext")),
    };
    match context {
        Some((name, from)) if name != "default" => {
            let dir = inputs.config_dir.clone().unwrap_or_default();
            context_endpoint(&dir, &name, from)
        }
        _ => checked(DEFAULT_HOST, None, "the default socket"),
    }
}

/// The engine an instance names (`spec.engine`): an address as
/// `DOCKER_HOST` takes it, plain (TLS engines are named by a context, which
/// carries their certificates), or a `docker context` name; `None` is the
/// engine the environment selects ([`resolve`]).
pub fn resolve_named(inputs: &Inputs, engine: Option<&str>) -> Result<Endpoint, EndpointError> {
    match engine {
        None => resolve(inputs),
        Some(address) if address.contains("://") => checked(address, None, "spec.engine"),
        Some("default") => checked(DEFAULT_HOST, None, "the default context (spec.engine)"),
        Some(name) => {
            let dir = inputs.config_dir.clone().unwrap_or_default();
            context_endpoint(&dir, name, "spec.engine")
        }
    }
}

fn checked(host: &str, tls: Option<TlsFiles>, source: &str) -> Result<Endpoint, EndpointError> {
    let source = source.to_owned();
    if !["unix://", "tcp://", "ssh://"]
        .iter()
        .any(|scheme| host.starts_with(scheme))
    {
        return Err(EndpointError::Unsupported {
            host: host.to_owned(),
            origin: source,
        });
    }
    if let Err(message) = jackin_api::validate::engine_address(host) {
        return Err(EndpointError::Invalid {
            origin: source,
            message,
        });
    }
    if let Some(path) = host.strip_prefix("unix://") {
        socket_or_absent(path, &source)?;
    }
    Ok(Endpoint {
        host: host.to_owned(),
        tls,
        source,
    })
}

/// A socket's path is a socket, or nothing yet (an engine that has not
/// started). Anything else there (a device such as `/dev/zero`, a file, a
/// directory) is never an engine: asking it again cannot help. The path is
/// the operator's (a link is followed, as connecting would).
fn socket_or_absent(path: &str, origin: &str) -> Result<(), EndpointError> {
    use std::os::unix::fs::FileTypeExt;
    let Ok(meta) = std::fs::metadata(path) else {
        return Ok(());
    };
    let kind = meta.file_type();
    let what = if kind.is_socket() {
        return Ok(());
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_fifo() {
        "a FIFO"
    } else if kind.is_dir() {
        "a directory"
    } else {
        "a regular file"
    };
    Err(EndpointError::NotASocket {
        path: path.to_owned(),
        what,
        origin: origin.to_owned(),
    })
}

fn current_context(config_dir: Option<&Path>) -> Result<Option<String>, EndpointError> {
    let Some(path) = config_dir.map(|d| d.join("config.json")) else {
        return Ok(None);
    };
    let bytes = match read_regular(&path, MAX_DOCKER_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => {
            return Err(EndpointError::BadContext {
                path: path.display().to_string(),
                message: e.to_string(),
            });
        }
    };
    let config: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| EndpointError::BadContext {
            path: path.display().to_string(),
            message: json_error(&e),
        })?;
    Ok(config["currentContext"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_owned))
}

/// Contexts live under `contexts/meta/<sha256 of the name>/meta.json`, their
/// TLS material under `contexts/tls/<same>/docker/`.
fn context_endpoint(config_dir: &Path, name: &str, from: &str) -> Result<Endpoint, EndpointError> {
    let digest = sha256_hex(name.as_bytes(), 32);
    let meta_dir = config_dir.join("contexts/meta").join(&digest);
    let path = meta_dir.join("meta.json");
    let bad = |message: String| EndpointError::BadContext {
        path: path.display().to_string(),
        message,
    };
    let bytes = match read_regular(&path, MAX_DOCKER_FILE_BYTES) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(EndpointError::UnknownContext {
                name: name.to_owned(),
                dir: config_dir.join("contexts/meta").display().to_string(),
            });
        }
        Err(e) => return Err(bad(e.to_string())),
    };
    let meta: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| bad(json_error(&e)))?;
    let docker = &meta["Endpoints"]["docker"];
    let host = docker["Host"]
        .as_str()
        .ok_or_else(|| bad("no Endpoints.docker.Host".into()))?;
    let tls_dir = config_dir.join("contexts/tls").join(&digest).join("docker");
    let tls = tls_dir
        .join("ca.pem")
        .exists()
        .then(|| TlsFiles::in_dir(&tls_dir));
    checked(host, tls, &format!("docker context {name:?} ({from})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn context_dir(name: &str, host: &str, tls: bool) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let digest = sha256_hex(name.as_bytes(), 32);
        let meta = dir.path().join("contexts/meta").join(&digest);
        std::fs::create_dir_all(&meta).unwrap();
        std::fs::write(
            meta.join("meta.json"),
            format!(r#"{{"Name":"{name}","Endpoints":{{"docker":{{"Host":"{host}"}}}}}}"#),
        )
        .unwrap();
        if tls {
            let tls_dir = dir.path().join("contexts/tls").join(&digest).join("docker");
            std::fs::create_dir_all(&tls_dir).unwrap();
            std::fs::write(tls_dir.join("ca.pem"), "").unwrap();
        }
        std::fs::write(
            dir.path().join("config.json"),
            format!(r#"{{"currentContext":"{name}"}}"#),
        )
        .unwrap();
        dir
    }

    #[test]
    fn docker_host_wins_and_tls_follows_tls_verify() {
        let inputs = Inputs {
            docker_host: Some("tcp://10.0.0.1:2376".into()),
            tls_verify: Some("1".into()),
            cert_path: Some("/certs".into()),
            context: Some("other".into()),
            config_dir: None,
        };
        let endpoint = resolve(&inputs).unwrap();
        assert_eq!(endpoint.host, "tcp://10.0.0.1:2376");
        assert_eq!(endpoint.tls, Some(TlsFiles::in_dir(Path::new("/certs"))));
        assert_eq!(endpoint.source, "DOCKER_HOST");
    }

    #[test]
    fn the_current_context_is_read_from_the_cli_config() {
        let dir = context_dir("remote", "tcp://192.0.2.7:2376", true);
        let inputs = Inputs {
            config_dir: Some(dir.path().to_owned()),
            ..Default::default()
        };
        let endpoint = resolve(&inputs).unwrap();
        assert_eq!(endpoint.host, "tcp://192.0.2.7:2376");
        assert!(endpoint.tls.is_some());
        assert!(endpoint.source.contains("\"remote\""));
    }

    /// An ssh engine is reached as the docker CLI reaches it, named by a
    /// context or by `spec.engine` alike.
    #[test]
    fn ssh_engines_are_taken_from_a_context_or_an_address() {
        let dir = context_dir("box", "ssh://me@box", false);
        let inputs = Inputs {
            context: Some("box".into()),
            config_dir: Some(dir.path().to_owned()),
            ..Default::default()
        };
        let endpoint = resolve(&inputs).unwrap();
        assert_eq!(
            (endpoint.host.as_str(), endpoint.tls),
            ("ssh://me@box", None)
        );
        let named = resolve_named(&inputs, Some("ssh://root@127.0.0.1:2222")).unwrap();
        assert_eq!(named.host, "ssh://root@127.0.0.1:2222");
        // A user or host that `ssh` would read as an option never reaches it.
        for bad in ["ssh://-oProxyCommand=x", "ssh://-l@box", "ssh://me@box:0"] {
            assert!(
                matches!(
                    resolve_named(&inputs, Some(bad)),
                    Err(EndpointError::Invalid { .. })
                ),
                "{bad}"
            );
        }
    }

    #[test]
    fn a_named_engine_is_an_address_or_a_context() {
        let dir = context_dir("remote", "tcp://192.0.2.7:2376", true);
        let inputs = Inputs {
            docker_host: Some("unix:///elsewhere.sock".into()),
            config_dir: Some(dir.path().to_owned()),
            ..Default::default()
        };
        let named = |engine| resolve_named(&inputs, engine);
        assert_eq!(named(None).unwrap().host, "unix:///elsewhere.sock");
        let address = named(Some("unix:///tmp/e/docker.sock")).unwrap();
        assert_eq!(
            (address.host.as_str(), address.tls),
            ("unix:///tmp/e/docker.sock", None)
        );
        let context = named(Some("remote")).unwrap();
        assert_eq!(context.host, "tcp://192.0.2.7:2376");
        assert!(context.tls.is_some());
        assert_eq!(named(Some("default")).unwrap().host, DEFAULT_HOST);
        assert!(matches!(
            named(Some("nope")),
            Err(EndpointError::UnknownContext { .. })
        ));
        assert_eq!(named(Some("ssh://me@box")).unwrap().host, "ssh://me@box");
    }

    /// F4: an address no engine can have is refused where jackin reads it,
    /// from `spec.engine`, `DOCKER_HOST` or a context alike, as a fault of
    /// the address rather than of an engine that does not answer.
    #[test]
    fn f4_addresses_no_engine_can_have_are_refused() {
        let none = Inputs::default();
        let named = |engine: &str| resolve_named(&none, Some(engine));
        let err = named("tcp://127.0.0.1:99999").unwrap_err();
        assert!(matches!(err, EndpointError::Invalid { .. }), "{err}");
        assert!(err.to_string().contains("invalid port"), "{err}");
        let err = named("unix:///dev/zero").unwrap_err();
        assert!(matches!(err, EndpointError::NotASocket { .. }), "{err}");
        assert!(
            err.to_string().contains("is not a socket (it is a device)"),
            "{err}"
        );
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("docker.sock");
        std::fs::write(&file, "").unwrap();
        let err = named(&format!("unix://{}", file.display())).unwrap_err();
        assert!(err.to_string().contains("a regular file"), "{err}");
        // Not there yet: an engine that has not started, not a wrong address.
        let absent = format!("unix://{}/later.sock", dir.path().display());
        assert!(named(&absent).is_ok());
        let socket = dir.path().join("real.sock");
        let _listener = std::os::unix::net::UnixListener::bind(&socket).unwrap();
        assert!(named(&format!("unix://{}", socket.display())).is_ok());
        let inputs = Inputs {
            docker_host: Some("tcp://127.0.0.1:99999".into()),
            ..Default::default()
        };
        assert!(matches!(
            resolve(&inputs),
            Err(EndpointError::Invalid { .. })
        ));
        let ctx = context_dir("bad", "unix:///dev/zero", false);
        let inputs = Inputs {
            config_dir: Some(ctx.path().to_owned()),
            ..Default::default()
        };
        assert!(matches!(
            resolve(&inputs),
            Err(EndpointError::NotASocket { .. })
        ));
    }

    #[test]
    fn defaults_and_unknown_contexts() {
        assert_eq!(resolve(&Inputs::default()).unwrap().host, DEFAULT_HOST);
        let dir = tempfile::tempdir().unwrap();
        let inputs = Inputs {
            context: Some("nope".into()),
            config_dir: Some(dir.path().to_owned()),
            ..Default::default()
        };
        assert!(matches!(
            resolve(&inputs),
            Err(EndpointError::UnknownContext { .. })
        ));
        let inputs = Inputs {
            context: Some("default".into()),
            config_dir: Some(dir.path().to_owned()),
            ..Default::default()
        };
        assert_eq!(resolve(&inputs).unwrap().host, DEFAULT_HOST);
    }
}

/// Properties of reading an engine's address (`spec.engine`, `DOCKER_HOST`,
/// a context's `meta.json`): an address that is taken names the engine it
/// was given, and anything else is an error, never a panic.
#[cfg(test)]
mod properties {
    use super::*;
    use proptest::prelude::*;

    /// A configuration directory of one test: no `config.json`, and no
    /// context but those the test writes. (One per test, not per case:
    /// making and removing a directory was most of a case's time.)
    fn no_contexts() -> (tempfile::TempDir, Inputs) {
        let dir = tempfile::tempdir().unwrap();
        let inputs = Inputs {
            config_dir: Some(dir.path().to_owned()),
            ..Default::default()
        };
        (dir, inputs)
    }

    /// A unix address under `dir`, where nothing is yet (an engine not
    /// started): each part of its path any character but `/`, a space or
    /// a control one.
    fn unix_address(dir: &Path) -> impl Strategy<Value = String> + use<> {
        let dir = dir.display().to_string();
        let part =
            "[a-zA-Z0-9._:@%+=,~éß漢-]{1,12}".prop_filter("a step up", |p| p != "." && p != "..");
        proptest::collection::vec(part, 1..5)
            .prop_map(move |parts| format!("unix://{dir}/{}", parts.join("/")))
            .prop_filter("longer than a socket's path", |a| {
                a.len() - "unix://".len() <= 107
            })
    }

    /// A tcp address: a host name, an IPv4 or a bracketed IPv6 address, a
    /// port from 1 to 65535, and maybe the trailing `/` the CLI accepts.
    fn tcp_address() -> impl Strategy<Value = String> {
        let label = "[a-zA-Z0-9]([a-zA-Z0-9-]{0,10}[a-zA-Z0-9])?";
        let host = prop_oneof![
            proptest::collection::vec(label, 1..5).prop_map(|labels| labels.join(".")),
            any::<std::net::Ipv4Addr>().prop_map(|ip| ip.to_string()),
            any::<std::net::Ipv6Addr>().prop_map(|ip| format!("[{ip}]")),
        ];
        (host, 1u32..=65_535, proptest::option::of(Just("/")))
            .prop_map(|(host, port, slash)| format!("tcp://{host}:{port}{}", slash.unwrap_or("")))
    }

    /// An address no engine can have, with the error it must be refused
    /// with: a scheme jackin does not speak, a port out of range or
    /// missing, a host that is none, a relative or too long socket path, a
    /// space or a control character.
    fn unusable_address() -> impl Strategy<Value = (String, &'static str)> {
        let any_rest = "[^\u{0}]{0,20}";
        let other_scheme = ("[a-z][a-z0-9+.-]{0,8}", any_rest)
            .prop_filter("a scheme jackin speaks", |(scheme, _)| {
                !["unix", "tcp", "ssh"].contains(&scheme.as_str())
            })
            .prop_map(|(scheme, rest)| format!("{scheme}://{rest}"));
        let bad_port = prop_oneof![
            Just("0".to_owned()),
            (65_536u32..1_000_000).prop_map(|port| port.to_string()),
            "[+-][0-9]{1,4}|[a-z]{1,5}|",
        ];
        // Empty, a label that starts or ends with `-` or holds a `_`, an
        // empty label, brackets around no IPv6 address.
        let bad_host = "|-[a-z]{1,5}|[a-z]{1,5}-|[a-z]{0,3}_[a-z]{0,3}|[a-z]{1,3}\\.\\.[a-z]{1,3}\
                        |\\[[0-9a-z:]{0,9}\\]"
            .prop_filter("a valid IPv6 address", |host| {
                let v6 = host.trim_start_matches('[').trim_end_matches(']');
                !host.starts_with('[') || v6.parse::<std::net::Ipv6Addr>().is_err()
            });
        let with_a_space_or_control = (
            "(unix:///|tcp://)[a-z]{0,5}",
            "[ \t\n\r\u{0}\u{1b}\u{85}\u{a0}\u{2028}]",
            "[a-z]{0,5}(:2375)?",
        )
            .prop_map(|(start, bad, end)| format!("{start}{bad}{end}"));
        prop_oneof![
            other_scheme.prop_map(|a| (a, "unsupported")),
            "-[a-z]{1,10}".prop_map(|user| (format!("ssh://{user}@box"), "invalid")),
            bad_host
                .clone()
                .prop_map(|host| (format!("ssh://me@{host}"), "invalid")),
            ("[a-z0-9.]{1,20}", bad_port)
                .prop_map(|(host, port)| (format!("tcp://{host}:{port}"), "invalid")),
            "tcp://[a-z0-9.]{0,20}".prop_map(|a| (a, "invalid")),
            bad_host.prop_map(|host| (format!("tcp://{host}:2375"), "invalid")),
            "unix://[a-z.][a-z/.]{0,20}".prop_map(|a| (a, "invalid")),
            (108usize..300).prop_map(|n| (format!("unix:///{}", "s".repeat(n - 1)), "invalid")),
            with_a_space_or_control.prop_map(|a| (a, "invalid")),
        ]
    }

    /// Any text as `spec.engine`, often after a scheme.
    fn engine_text() -> impl Strategy<Value = String> {
        let scheme = [
            "", "unix://", "unix:///", "tcp://", "ssh://", "http://", "://",
        ];
        let rest = prop_oneof![
            any::<String>(),
            "[a-z0-9.:/\\[\\]-]{0,30}",
            Just("default".to_owned()),
        ];
        (proptest::sample::select(scheme.to_vec()), rest)
            .prop_map(|(scheme, rest)| format!("{scheme}{rest}"))
    }

    /// A context's `meta.json`: naming an address an engine can have, any
    /// text as the address, or any bytes.
    fn meta_json() -> impl Strategy<Value = Vec<u8>> {
        let naming = |host: String| {
            serde_json::json!({"Endpoints": {"docker": {"Host": host}}})
                .to_string()
                .into_bytes()
        };
        prop_oneof![
            tcp_address().prop_map(naming),
            any::<String>().prop_map(naming),
            proptest::collection::vec(any::<u8>(), 0..512),
        ]
    }

    fn kind(err: &EndpointError) -> &'static str {
        match err {
            EndpointError::Unsupported { .. } => "unsupported",
            EndpointError::Invalid { .. } => "invalid",
            EndpointError::NotASocket { .. } => "not a socket",
            EndpointError::UnknownContext { .. } => "unknown context",
            EndpointError::BadContext { .. } => "bad context",
        }
    }

    /// A failing case is not saved to a file beside the source: the
    /// shrunk input it prints is made a named example test instead, which
    /// says why it matters (and CI's clean clone would lose the file
    /// anyway).
    fn config() -> ProptestConfig {
        ProptestConfig {
            failure_persistence: None,
            ..ProptestConfig::default()
        }
    }

    /// An address an engine can have is taken as it was written, from
    /// `spec.engine` and from `DOCKER_HOST` (with its TLS files when
    /// `DOCKER_TLS_VERIFY` is set) alike.
    #[test]
    fn an_address_that_is_taken_names_the_engine_given() {
        let (dir, inputs) = no_contexts();
        let address = prop_oneof![unix_address(dir.path()), tcp_address()];
        proptest!(config(), |(address in address, tls in any::<bool>())| {
            let named = resolve_named(&inputs, Some(&address));
            let expected = Endpoint {
                host: address.clone(),
                tls: None,
                source: "spec.engine".into(),
            };
            prop_assert_eq!(named, Ok(expected));
            let from_env = Inputs {
                docker_host: Some(address.clone()),
                tls_verify: tls.then(|| "1".to_owned()),
                cert_path: Some("/certs".into()),
                ..inputs.clone()
            };
            let expected = Endpoint {
                host: address,
                tls: tls.then(|| TlsFiles::in_dir(Path::new("/certs"))),
                source: "DOCKER_HOST".into(),
            };
            prop_assert_eq!(resolve(&from_env), Ok(expected));
        });
    }

    /// An address no engine can have is refused, as a fault of the
    /// address, wherever it was read.
    #[test]
    fn an_address_no_engine_can_have_is_refused() {
        let (_dir, inputs) = no_contexts();
        proptest!(config(), |((address, refused) in unusable_address())| {
            let named = resolve_named(&inputs, Some(&address));
            prop_assert_eq!(named.as_ref().map_err(kind).err(), Some(refused), "{:?}", named);
            let from_env = Inputs {
                docker_host: Some(address),
                ..inputs.clone()
            };
            prop_assert_eq!(resolve(&from_env).map_err(|e| kind(&e)).err(), Some(refused));
        });
    }

    /// Any text as `spec.engine` is refused or taken as given: an address
    /// as it was written, `default` as the default socket; with no context
    /// there, nothing else.
    #[test]
    fn any_engine_is_refused_or_taken_as_given() {
        let (_dir, inputs) = no_contexts();
        proptest!(config(), |(engine in engine_text())| {
            match resolve_named(&inputs, Some(&engine)) {
                Ok(endpoint) if engine.contains("://") => {
                    prop_assert_eq!(&endpoint.host, &engine);
                    prop_assert!(["unix://", "tcp://", "ssh://"].iter().any(|s| engine.starts_with(s)));
                    prop_assert_eq!(jackin_api::validate::engine_address(&engine), Ok(()));
                }
                Ok(endpoint) => {
                    prop_assert_eq!(engine.as_str(), "default");
                    prop_assert_eq!(endpoint.host.as_str(), DEFAULT_HOST);
                }
                Err(err) if !engine.contains("://") => {
                    prop_assert!(matches!(err, EndpointError::UnknownContext { .. }), "{}", err);
                }
                Err(err) => prop_assert!(!err.to_string().is_empty()),
            }
        });
    }

    /// A context, whatever its name, names the engine its `meta.json`
    /// says, when that is an address an engine can have; any other
    /// `meta.json` is refused, and says where it is.
    #[test]
    fn a_context_names_the_engine_its_meta_says() {
        let (dir, inputs) = no_contexts();
        let name = "[a-zA-Z0-9][a-zA-Z0-9_.+-]{0,40}".prop_filter("default", |n| n != "default");
        proptest!(config(), |(name in name, meta in meta_json())| {
            let meta_dir = dir
                .path()
                .join("contexts/meta")
                .join(sha256_hex(name.as_bytes(), 32));
            std::fs::create_dir_all(&meta_dir).unwrap();
            std::fs::write(meta_dir.join("meta.json"), &meta).unwrap();
            let host = serde_json::from_slice::<serde_json::Value>(&meta)
                .ok()
                .and_then(|m| m["Endpoints"]["docker"]["Host"].as_str().map(str::to_owned));
            let named = resolve_named(&inputs, Some(&name));
            let from_env = resolve(&Inputs {
                context: Some(name.clone()),
                ..inputs.clone()
            });
            match (host, &named) {
                (None, Err(EndpointError::BadContext { path, .. })) => {
                    prop_assert!(path.ends_with("meta.json"), "{}", path);
                }
                (None, _) => prop_assert!(false, "a meta.json without a host read as {:?}", named),
                (Some(host), Ok(endpoint)) => {
                    prop_assert_eq!(&endpoint.host, &host);
                    prop_assert_eq!(jackin_api::validate::engine_address(&host), Ok(()));
                }
                (Some(host), Err(err)) => {
                    let usable = jackin_api::validate::engine_address(&host).is_ok();
                    let taken = (host.starts_with("tcp://") || host.starts_with("ssh://")) && usable;
                    prop_assert!(!taken, "{} refused: {}", host, err);
                }
            }
            // Named by `DOCKER_CONTEXT`, the same engine or the same fault.
            let host_or_fault =
                |read: Result<Endpoint, EndpointError>| read.map(|e| e.host).map_err(|e| kind(&e));
            prop_assert_eq!(host_or_fault(named), host_or_fault(from_env));
        });
    }
}
