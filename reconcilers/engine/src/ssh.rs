//! An engine reached over ssh (`ssh://[USER@]HOST[:PORT]`), as the docker
//! CLI reaches one: the system `ssh` logs in with the operator's own ssh
//! config, keys and agent (jackin stores no secret), and runs `docker system
//! dial-stdio` on the other side, whose standard input and output carry the
//! engine's API.
//!
//! Why not bollard's own ssh connector: it hands the port to `ssh` inside
//! the host name (so `HOST:PORT` never resolves), adds an unknown host's key
//! to the operator's known hosts by itself, and sets no connect timeout,
//! and an `ssh` still connecting outlives the call that gave up on it.
//! Here: the user and port are `ssh`'s `-l` and `-p`; the host's key must
//! already be known (`StrictHostKeyChecking=yes`); `ssh` gives up
//! connecting within [`CONNECT`], well inside the engine's answer deadline,
//! and is killed if the call is given up first; a master nobody uses ends
//! by itself after [`IDLE`], should jackin die without closing it.
//!
//! One control master per connection (openssh drives it), in a temporary
//! directory (`TMPDIR`) removed with it (`ssh -O exit`) when the connection
//! is dropped, at the latest when the command ends. What runs:
//! `ssh -E DIR/log -S DIR/master -M -f -N -o ControlPersist=30s -o
//! BatchMode=yes -o StrictHostKeyChecking=yes -o ConnectTimeout=20 -o
//! ServerAliveInterval=15 [-p PORT] [-l USER] -- HOST`, then `ssh -S
//! DIR/master -o BatchMode=yes -T none docker system dial-stdio` per
//! connection, and `ssh -S DIR/master -o BatchMode=yes -O exit none` at its
//! end.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bollard::{BollardRequest, Docker};
use hyper_util::client::legacy::Client;
use hyper_util::rt::{TokioExecutor, TokioIo};

use crate::answer;

/// How long `ssh` may take to reach the host (`ConnectTimeout`): well
/// inside [`answer::ANSWER`], so that `ssh` gives up by itself first.
pub const CONNECT: Duration = Duration::from_secs(20);

/// How long a control master with no session left stays (`ControlPersist`):
/// it is closed when its connection is, so this is for a jackin that died.
const IDLE: Duration = Duration::from_secs(30);

/// How often `ssh` asks a silent host whether it is still there
/// (`ServerAliveInterval`; three unanswered, the default count, end it).
const ALIVE_EVERY: Duration = Duration::from_secs(15);

/// Where `ssh` logs in: a user, a host and a port, each checked by
/// [`jackin_api::validate::engine_address`] (none can pass for an option).
#[derive(Debug, Clone, PartialEq, Eq)]
struct Login {
    user: Option<String>,
    host: String,
    port: Option<u16>,
}

impl Login {
    /// `ssh://[USER@]HOST[:PORT]`, already validated.
    fn parse(address: &str) -> Option<Self> {
        let rest = address.strip_prefix("ssh://")?;
        let rest = rest.strip_suffix('/').unwrap_or(rest);
        let (user, rest) = match rest.rsplit_once('@') {
            Some((user, rest)) => (Some(user.to_owned()), rest),
            None => (None, rest),
        };
        let (host, port) = match rest.rsplit_once(':') {
            Some((host, port)) if !host.ends_with(':') && !rest.ends_with(']') => {
                (host, Some(port.parse().ok()?))
            }
            _ => (rest, None),
        };
        // `ssh` takes an IPv6 address bare.
        let host = host.trim_start_matches('[').trim_end_matches(']');
        Some(Self {
            user,
            host: host.to_owned(),
            port,
        })
    }
}

/// The body type of bollard's requests, which it does not name.
trait HasBody {
    type Body;
}

impl<B> HasBody for hyper::Request<B> {
    type Body = B;
}

type Body = <BollardRequest as HasBody>::Body;

/// A client for the engine at `address` (`ssh://…`). Nothing is started
/// until the first request.
pub(crate) fn docker(address: &str) -> Result<Docker, bollard::errors::Error> {
    let login = Login::parse(address).ok_or_else(|| bollard::errors::Error::IOError {
        err: std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            format!("{address:?} is not ssh://[USER@]HOST[:PORT]"),
        ),
    })?;
    let client: Client<Connector, Body> =
        Client::builder(TokioExecutor::new()).build(Connector(Arc::new(login)));
    let transport = move |request: BollardRequest| {
        let answer = client.request(request);
        async move { answer.await.map_err(said) }
    };
    Docker::connect_with_custom_transport(
        transport,
        Some(address),
        answer::ANSWER.as_secs(),
        bollard::API_DEFAULT_VERSION,
    )
}

/// A failure to connect, with every cause in it: hyper's own words
/// ("client error (Connect)") say nothing of what `ssh` said.
fn said(err: hyper_util::client::legacy::Error) -> bollard::errors::Error {
    let mut text = String::from("ssh");
    let mut cause: Option<&dyn std::error::Error> = std::error::Error::source(&err);
    while let Some(err) = cause {
        text.push_str(": ");
        text.push_str(&err.to_string());
        cause = err.source();
    }
    if text == "ssh" {
        text = err.to_string();
    }
    bollard::errors::Error::IOError {
        err: std::io::Error::other(text),
    }
}

/// Opens one connection to the engine: a control master, then `docker
/// system dial-stdio` through it.
#[derive(Clone)]
struct Connector(Arc<Login>);

impl tower_service::Service<hyper::Uri> for Connector {
    type Response = Stream;
    type Error = std::io::Error;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, std::io::Error>> + Send>>;

    fn poll_ready(&mut self, _: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        Poll::Ready(Ok(()))
    }

    /// The address is the connector's own, never the request's.
    fn call(&mut self, _: hyper::Uri) -> Self::Future {
        let login = Arc::clone(&self.0);
        Box::pin(async move {
            let session = Arc::new(openssh::Session::new_process_mux(master(&login).await?));
            let mut child = session
                .arc_command("docker")
                .arg("system")
                .arg("dial-stdio")
                .stdin(openssh::Stdio::piped())
                .stdout(openssh::Stdio::piped())
                .stderr(openssh::Stdio::null())
                .spawn()
                .await
                .map_err(std::io::Error::other)?;
            let (Some(stdin), Some(stdout)) = (child.stdin().take(), child.stdout().take()) else {
                return Err(std::io::Error::other("ssh gave no pipes"));
            };
            Ok(Stream {
                stdin: Some(TokioIo::new(stdin)),
                stdout: TokioIo::new(stdout),
                _child: child,
            })
        })
    }
}

/// Starts a control master logged in as `login` says, in a temporary
/// directory of its own (`master`, its socket; `log`, what `ssh` said),
/// as openssh's own builder does, but killed should the connection be
/// given up before `ssh` has logged in (the engine's deadline, the
/// command's `--timeout`): an `ssh` still connecting is never left behind.
async fn master(login: &Login) -> std::io::Result<tempfile::TempDir> {
    let dir = tempfile::Builder::new()
        .prefix(".ssh-connection")
        .tempdir_in(std::env::temp_dir())?;
    let log = dir.path().join("log");
    // Dropped before `dir`, while the socket is still there.
    let mut unfinished = Unfinished(Some(dir.path().join("master")));
    let mut ssh = tokio::process::Command::new("ssh");
    ssh.kill_on_drop(true)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .arg("-E")
        .arg(&log)
        .arg("-S")
        .arg(dir.path().join("master"))
        .args(["-M", "-f", "-N"])
        .args(["-o", &format!("ControlPersist={}s", IDLE.as_secs())])
        .args(["-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes"])
        .args(["-o", &format!("ConnectTimeout={}", CONNECT.as_secs())])
        .args([
            "-o",
            &format!("ServerAliveInterval={}", ALIVE_EVERY.as_secs()),
        ]);
    if let Some(port) = login.port {
        ssh.args(["-p", &port.to_string()]);
    }
    if let Some(user) = &login.user {
        ssh.args(["-l", user]);
    }
    // Checked: no host can pass for an option (see `Login`); `--` all the
    // same.
    ssh.arg("--").arg(&login.host);
    // `-f`: it returns once logged in, leaving the master running.
    if ssh.status().await?.success() {
        unfinished.0 = None;
        return Ok(dir);
    }
    let said = std::fs::read_to_string(&log).unwrap_or_default();
    let said = said.trim();
    Err(std::io::Error::other(if said.is_empty() {
        "ssh failed and said nothing".to_owned()
    } else {
        said.replace('\n', "; ")
    }))
}

/// A master being started, given up (dropped) before it was handed over:
/// the `ssh` is killed, but it may have forked its master already (`-f`,
/// once logged in; its socket is made before that), so that master is told
/// to exit.
struct Unfinished(Option<std::path::PathBuf>);

impl Drop for Unfinished {
    fn drop(&mut self) {
        let Some(socket) = self.0.take().filter(|socket| socket.exists()) else {
            return;
        };
        let _ = std::process::Command::new("ssh")
            .arg("-S")
            .arg(&socket)
            .args(["-o", "BatchMode=yes", "-O", "exit", "none"])
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .status();
    }
}

/// The engine's API over `docker system dial-stdio`'s standard streams.
/// Dropping it ends the remote command, then the master once no other
/// connection holds it.
struct Stream {
    stdin: Option<TokioIo<openssh::ChildStdin>>,
    stdout: TokioIo<openssh::ChildStdout>,
    _child: openssh::Child<Arc<openssh::Session>>,
}

impl Stream {
    fn stdin(self: Pin<&mut Self>) -> std::io::Result<Pin<&mut TokioIo<openssh::ChildStdin>>> {
        self.get_mut()
            .stdin
            .as_mut()
            .map(Pin::new)
            .ok_or_else(|| std::io::ErrorKind::BrokenPipe.into())
    }
}

impl hyper::rt::Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.get_mut().stdout).poll_read(cx, buf)
    }
}

impl hyper::rt::Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        self.stdin()?.poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        self.stdin()?.poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        std::task::ready!(self.as_mut().stdin()?.poll_shutdown(cx))?;
        // Closing the input is how the remote command learns it is done.
        self.get_mut().stdin = None;
        Poll::Ready(Ok(()))
    }
}

impl hyper_util::client::legacy::connect::Connection for Stream {
    fn connected(&self) -> hyper_util::client::legacy::connect::Connected {
        hyper_util::client::legacy::connect::Connected::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_user_host_and_port_are_taken_apart() {
        let login = |user: Option<&str>, host: &str, port| Login {
            user: user.map(str::to_owned),
            host: host.to_owned(),
            port,
        };
        for (address, expected) in [
            ("ssh://box", login(None, "box", None)),
            ("ssh://me@box", login(Some("me"), "box", None)),
            (
                "ssh://root@127.0.0.1:2222",
                login(Some("root"), "127.0.0.1", Some(2222)),
            ),
            (
                "ssh://me@box.example:22/",
                login(Some("me"), "box.example", Some(22)),
            ),
            ("ssh://[::1]:2200", login(None, "::1", Some(2200))),
            ("ssh://me@[::1]", login(Some("me"), "::1", None)),
        ] {
            assert_eq!(Login::parse(address), Some(expected), "{address}");
        }
        assert_eq!(Login::parse("tcp://box:2375"), None);
    }
}
