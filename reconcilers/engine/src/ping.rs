//! The API version an engine speaks, learnt as the Docker CLI learns it:
//! from the `Api-Version` header of its answer to `HEAD /_ping`.
//!
//! Why not bollard's `negotiate_version` alone: it asks `GET /version`,
//! for which the engine runs `runc --version` and `docker-init --version`
//! and asks containerd for its version, every time (8 to 15 ms here,
//! against well under one for the ping). Every jackin command connects
//! once per engine, so that was the largest single wait of a `get`.
//!
//! Only a plain Unix socket is pinged this way; any other endpoint (TCP,
//! TLS), and an engine whose ping carries no usable version, is asked the
//! bollard way. The version agreed on is the lower of the engine's and
//! bollard's own, as `negotiate_version` agrees it.

use std::path::Path;

use bollard::ClientVersion;
use http_body_util::Empty;
use hyper::body::Bytes;
use hyper_util::rt::TokioIo;

/// The longest header value taken as a version: `1.41` is four bytes.
const MAX_VERSION_BYTES: usize = 16;

/// The version `socket`'s engine names in its ping answer; `None` when the
/// socket cannot be reached or the answer names none (the caller then asks
/// the bollard way, which says what went wrong). The caller bounds the
/// wait.
pub(super) async fn api_version(socket: &Path) -> Option<ClientVersion> {
    let stream = tokio::net::UnixStream::connect(socket).await.ok()?;
    let (mut sender, connection) =
        hyper::client::conn::http1::handshake::<_, Empty<Bytes>>(TokioIo::new(stream))
            .await
            .ok()?;
    let request = hyper::Request::head("/_ping")
        .header(hyper::header::HOST, "docker")
        .body(Empty::new())
        .ok()?;
    // The connection is driven only until the answer's headers are in (it
    // is closed when dropped here); one that ends first may still have
    // handed the answer over.
    let mut connection = std::pin::pin!(connection);
    let mut answer = std::pin::pin!(sender.send_request(request));
    let answer = tokio::select! {
        biased;
        answer = &mut answer => answer,
        _ = &mut connection => answer.await,
    }
    .ok()?;
    if !answer.status().is_success() {
        return None;
    }
    let version = answer.headers().get("api-version")?.as_bytes();
    parse(version).map(|engine| lower(engine, bollard::API_DEFAULT_VERSION))
}

/// `MAJOR.MINOR`, digits only.
fn parse(text: &[u8]) -> Option<ClientVersion> {
    if text.len() > MAX_VERSION_BYTES {
        return None;
    }
    let (major, minor) = std::str::from_utf8(text).ok()?.split_once('.')?;
    let number = |part: &str| {
        (!part.is_empty() && part.bytes().all(|b| b.is_ascii_digit()))
            .then(|| part.parse().ok())
            .flatten()
    };
    Some(ClientVersion {
        major_version: number(major)?,
        minor_version: number(minor)?,
    })
}

fn lower(engine: ClientVersion, ours: &ClientVersion) -> ClientVersion {
    if engine < *ours { engine } else { *ours }
}

#[cfg(test)]
mod tests {
    use std::sync::{Arc, Mutex};

    use super::*;
    use crate::endpoint::Endpoint;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    /// An engine on a Unix socket that answers each request with what
    /// `answer` gives for its request line, and keeps those lines.
    struct Scripted {
        _dir: tempfile::TempDir,
        socket: std::path::PathBuf,
        asked: Arc<Mutex<Vec<String>>>,
    }

    fn engine(answer: fn(&str) -> String) -> Scripted {
        let dir = tempfile::tempdir().unwrap();
        let socket = dir.path().join("docker.sock");
        let listener = tokio::net::UnixListener::bind(&socket).unwrap();
        let asked = Arc::new(Mutex::new(Vec::new()));
        let kept = Arc::clone(&asked);
        tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = vec![0; 4096];
                let read = stream.read(&mut request).await.unwrap_or(0);
                let text = String::from_utf8_lossy(&request[..read]).into_owned();
                let line = text.lines().next().unwrap_or_default().to_owned();
                let _ = stream.write_all(answer(&line).as_bytes()).await;
                kept.lock().unwrap().push(line);
            }
        });
        Scripted {
            _dir: dir,
            socket,
            asked,
        }
    }

    /// An engine's ping answer naming API 1.41.
    fn ping_1_41(_: &str) -> String {
        "HTTP/1.1 200 OK\r\nApi-Version: 1.41\r\nContent-Length: 2\r\n\r\n".into()
    }

    async fn pinged(answer: fn(&str) -> String) -> (Option<ClientVersion>, Vec<String>) {
        let engine = engine(answer);
        let version = api_version(&engine.socket).await;
        let asked = engine.asked.lock().unwrap().clone();
        (version, asked)
    }

    #[tokio::test]
    async fn the_engine_s_version_is_taken_from_its_ping_when_lower_than_ours() {
        let (version, asked) = pinged(ping_1_41).await;
        assert_eq!(asked, ["HEAD /_ping HTTP/1.1"]);
        let version = version.expect("a version");
        assert_eq!((version.major_version, version.minor_version), (1, 41));

        let (version, _) =
            pinged(|_| "HTTP/1.1 200 OK\r\nApi-Version: 1.99\r\nContent-Length: 2\r\n\r\n".into())
                .await;
        assert_eq!(
            version.expect("a version"),
            *bollard::API_DEFAULT_VERSION,
            "never above what bollard speaks"
        );
    }

    #[tokio::test]
    async fn a_ping_without_a_usable_version_is_no_answer() {
        let answers: [fn(&str) -> String; 6] = [
            |_| "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n".into(),
            |_| {
                "HTTP/1.1 200 OK\r\nApi-Version: 1.41\u{1b}]0;x\r\nContent-Length: 2\r\n\r\n".into()
            },
            |_| "HTTP/1.1 200 OK\r\nApi-Version: 1.-4\r\nContent-Length: 2\r\n\r\n".into(),
            |_| "HTTP/1.1 200 OK\r\nApi-Version: 99999999999999999999.1\r\n\r\n".into(),
            |_| "HTTP/1.1 500 Internal Server Error\r\nApi-Version: 1.41\r\n\r\n".into(),
            |_| "not http at all\r\n\r\n".into(),
        ];
        for (i, answer) in answers.into_iter().enumerate() {
            let (version, _) = pinged(answer).await;
            assert_eq!(version, None, "answer {i}");
        }
    }

    #[tokio::test]
    async fn no_socket_is_no_answer() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(api_version(&dir.path().join("none.sock")).await, None);
    }

    /// The connection pings first, and asks `/version` only when the ping
    /// names no version.
    #[tokio::test]
    async fn a_connection_asks_version_only_when_the_ping_names_none() {
        const VERSION_BODY: &str = r#"{"ApiVersion":"1.40","Version":"19.03"}"#;
        let connect = |engine: &Scripted| {
            let endpoint = Endpoint {
                host: format!("unix://{}", engine.socket.display()),
                tls: None,
                source: "test".into(),
            };
            async move { super::super::docker::DockerCalls::connect(&endpoint).await }
        };
        let pinging = engine(ping_1_41);
        let calls = connect(&pinging).await.unwrap();
        assert_eq!(
            calls.client_version(),
            ClientVersion {
                major_version: 1,
                minor_version: 41
            }
        );
        assert_eq!(*pinging.asked.lock().unwrap(), ["HEAD /_ping HTTP/1.1"]);

        let silent = engine(|line| match line.starts_with("HEAD /_ping") {
            true => "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n".into(),
            false => format!(
                "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{VERSION_BODY}",
                VERSION_BODY.len()
            ),
        });
        let calls = connect(&silent).await.unwrap();
        assert_eq!(
            calls.client_version(),
            ClientVersion {
                major_version: 1,
                minor_version: 40
            }
        );
        let asked = silent.asked.lock().unwrap().clone();
        assert_eq!(asked.len(), 2, "{asked:?}");
        assert_eq!(asked[0], "HEAD /_ping HTTP/1.1");
        assert!(asked[1].starts_with("GET /version HTTP/1.1"), "{asked:?}");
    }
}
