//! Engines as a spec names them: a `docker context` name, or an address as
//! `DOCKER_HOST` takes it (`unix://`, `tcp://`, `ssh://`).

/// An engine as `spec.engine` names it: a `docker context` name, or an
/// address as `DOCKER_HOST` takes it. What an operator applies is checked
/// further ([`engine_address`], through [`super::operator_input`]); a stored
/// object only this far, so that one an older jackin accepted stays
/// readable, and so can be deleted.
pub fn engine_ref(value: &str) -> Result<(), String> {
    if let Some((scheme, rest)) = value.split_once("://") {
        if !matches!(scheme, "unix" | "tcp" | "ssh") {
            return Err(format!(
                "{value:?}: expected unix:///PATH, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT], \
                 or a docker context name"
            ));
        }
        if rest.is_empty()
            || rest.len() > 512
            || rest.chars().any(|c| c.is_control() || c.is_whitespace())
        {
            return Err(format!("{value:?}: expected an address after {scheme}://"));
        }
        return Ok(());
    }
    let context_name = !value.is_empty()
        && value.len() <= 128
        && value.starts_with(|c: char| c.is_ascii_alphanumeric())
        && value
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '.' | '+' | '-'));
    if context_name {
        Ok(())
    } else {
        Err(format!(
            "{value:?}: expected a docker context name (letters, digits, _ . + -) or an address \
             (unix:///var/run/docker.sock, tcp://host:2376)"
        ))
    }
}

/// The longest path a unix socket address holds (`sun_path`, less its NUL).
const MAX_SOCKET_PATH: usize = 107;

/// An engine's address, as `DOCKER_HOST` (and a docker context) gives it:
/// `unix://PATH`, an absolute path a socket can have; `tcp://HOST:PORT`,
/// a host name, an IPv4 address or a bracketed IPv6 one, and a port from 1
/// to 65535; or `ssh://[USER@]HOST[:PORT]`, the same host and port and a
/// plain user name. Anything else can never be connected to, so it is refused
/// where it is written rather than retried.
pub fn engine_address(value: &str) -> Result<(), String> {
    let expected = "expected unix:///PATH, tcp://HOST:PORT or ssh://[USER@]HOST[:PORT], or a \
                    docker context name";
    let Some((scheme, rest)) = value.split_once("://") else {
        return Err(format!("{value:?}: {expected}"));
    };
    if value.len() > 512 || value.chars().any(|c| c.is_control() || c.is_whitespace()) {
        return Err(format!(
            "{value:?}: an engine address has no spaces or control characters and is at most \
             512 characters"
        ));
    }
    match scheme {
        "unix" => {
            if !rest.starts_with('/') {
                return Err(format!(
                    "{value:?}: the socket's path must be absolute: unix:///PATH (three slashes)"
                ));
            }
            if rest.len() > MAX_SOCKET_PATH {
                return Err(format!(
                    "{value:?}: a unix socket's path is at most {MAX_SOCKET_PATH} bytes"
                ));
            }
            Ok(())
        }
        "tcp" => host_and_port(value, rest, true),
        "ssh" => ssh_address(value, rest),
        _ => Err(format!("{value:?}: {expected}")),
    }
}

/// `ssh://[USER@]HOST[:PORT]`'s part after the scheme: what reaches `ssh`
/// as its `-l`, `-p` and destination, so none may pass for an option.
fn ssh_address(value: &str, rest: &str) -> Result<(), String> {
    let (user, rest) = rest
        .rsplit_once('@')
        .map_or((None, rest), |(user, rest)| (Some(user), rest));
    let user_char = |b: u8| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-');
    let bad_user = |u: &&str| u.is_empty() || u.len() > 64 || u.starts_with('-');
    if let Some(user) = user.filter(|u| bad_user(u) || !u.bytes().all(user_char)) {
        return Err(format!(
            "{value:?}: invalid user {user:?}: letters, digits, . _ - (not first)"
        ));
    }
    host_and_port(value, rest, false)
}

/// `HOST[:PORT]`, maybe with the trailing `/` the CLI accepts: a host name,
/// an IPv4 address or a bracketed IPv6 one, and a port from 1 to 65535.
fn host_and_port(value: &str, rest: &str, port_required: bool) -> Result<(), String> {
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    let (host, port) = match rest.rsplit_once(':') {
        Some((host, port)) if !rest.ends_with(']') => (host, Some(port)),
        _ if port_required => {
            return Err(format!(
                "{value:?}: no port: expected tcp://HOST:PORT (2376 for TLS, 2375 without)"
            ));
        }
        _ => (rest, None),
    };
    let port_ok = |p: &&str| p.bytes().all(|b| b.is_ascii_digit()) && p.len() <= 5;
    if let Some(port) =
        port.filter(|p| !port_ok(p) || !p.parse::<u32>().is_ok_and(|p| (1..=65_535).contains(&p)))
    {
        return Err(format!(
            "{value:?}: invalid port {port:?}: expected a number from 1 to 65535"
        ));
    }
    let label = |part: &str| {
        !part.is_empty()
            && !part.starts_with('-')
            && !part.ends_with('-')
            && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
    };
    let host_ok = match host.strip_prefix('[').and_then(|h| h.strip_suffix(']')) {
        Some(v6) => v6.parse::<std::net::Ipv6Addr>().is_ok(),
        None => !host.is_empty() && host.len() <= 253 && host.split('.').all(label),
    };
    if host_ok {
        Ok(())
    } else {
        Err(format!(
            "{value:?}: invalid host {host:?}: expected a host name, an IPv4 address or a \
             bracketed IPv6 one ([::1])"
        ))
    }
}
