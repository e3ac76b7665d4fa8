//! The credential hand-off: the operator's logins, as a recipe's credential
//! sets name them, into a session.
//!
//! Under `sync` the sets' files are copied from the operator's home into
//! the unit's home before every start; under `token` their variables are
//! resolved when the container is created and handed to the engine only
//! (and files that hold no secret are copied as under `sync`).
//!
//! Both ends are read and written with care. The host files are the
//! operator's, but they are read as regular files under a cap (a FIFO there
//! is refused, never waited on). The unit's home is the agent's to write:
//! every directory on the way to a destination must be a real one (a link
//! the agent planted there fails the start), and each file is replaced by a
//! rename, which puts a new file where a link was instead of writing
//! through it. The copy runs before the container starts, while nothing of
//! the agent runs.
//!
//! A login the session renewed itself is not undone: the session's own
//! copy is kept when it differs from the host's and changed after it (a
//! byte-identical copy is left as it is, reported unchanged).
//!
//! Nothing here keeps a value: what it reports (notes, the status) names
//! variables, references and places, and its errors quote no file.

use std::io;
use std::path::{Path, PathBuf};

use jackin_api::credentials::{AuthForward, CredentialFile, CredentialSet, PinnedCredentials};
use jackin_api::instance::EnvVar;
use jackin_api::names::reason;

use crate::secrets;
use jackin_files::fsutil::{self, read_regular, read_untrusted};

/// Overrides where credential files are read from (the operator's home
/// otherwise): for tests, which must never read the operator's real files,
/// and for an operator whose logins live elsewhere.
pub const HOME_ENV: &str = "JACKIN_CREDENTIALS_HOME";

/// The largest credential file jackin reads, on either side. Logins are a
/// few kilobytes; an account file with years of projects in it can reach
/// megabytes.
pub const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Where the credential files are read from: `$JACKIN_CREDENTIALS_HOME`,
/// else the operator's home. Why neither can be used, otherwise.
pub fn host_home() -> Result<PathBuf, String> {
    match std::env::var_os(HOME_ENV) {
        Some(dir) if Path::new(&dir).is_absolute() => Ok(PathBuf::from(dir)),
        Some(dir) => Err(format!(
            "{HOME_ENV}={} is not an absolute path: set it to the directory that holds the \
             logins (as $HOME does), or unset it",
            Path::new(&dir).display()
        )),
        None => std::env::home_dir()
            .ok_or_else(|| format!("the operator's home is not known: set HOME, or {HOME_ENV}")),
    }
}

#[derive(Debug, thiserror::Error)]
pub enum CredentialError {
    /// A destination jackin will not write: a link or a non-directory on
    /// the way, or something that is not a file in the file's place. The
    /// agent may have planted it; following it could write anywhere.
    #[error(
        "{set}: ~/{src} was not forwarded to ~/{dst} in the agent's home: {error}; jackin \
         writes no credential through a link, or over anything but a file"
    )]
    Refused {
        set: String,
        src: String,
        dst: String,
        at: PathBuf,
        #[source]
        error: io::Error,
    },
}

/// What a start of the hand-off has to say, one line each: a kind (the
/// event reason) and the line, which names places and variables, never a
/// value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Note {
    pub reason: &'static str,
    pub message: String,
}

/// What [`forward_files`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FilesOutcome {
    /// The files forwarded (or kept, the session's own being newer), each
    /// `SET: ~/SRC → ~/DST …`.
    pub files: Vec<String>,
    /// What could not be forwarded, each with what to do.
    pub missing: Vec<String>,
}

/// `A or B` of the set's variables.
fn variables(set: &CredentialSet) -> String {
    set.env
        .iter()
        .map(|v| v.name.as_str())
        .collect::<Vec<_>>()
        .join(" or ")
}

/// What the operator does when a file of `set` is missing on the host.
fn file_hint(set: &CredentialSet, mode: AuthForward) -> String {
    let login = set.login.as_deref().unwrap_or("log in on the host");
    match (mode, set.env.is_empty()) {
        (AuthForward::Sync, false) => {
            format!("{login}, or set authForward: token with {}", variables(set))
        }
        _ => login.to_owned(),
    }
}

/// Copies the files of every set that `pinned.mode` forwards from `host`
/// (the operator's home, or why it is not known) into `home` (the unit's
/// home). A file missing or unreadable on the host is reported and the
/// others still go; a destination jackin will not write fails the whole
/// hand-off ([`CredentialError::Refused`]). Blocking I/O: call it off the
/// async runtime.
pub fn forward_files(
    pinned: &PinnedCredentials,
    host: Result<&Path, &str>,
    home: &Path,
) -> Result<FilesOutcome, CredentialError> {
    let mut out = FilesOutcome::default();
    let files = forwarded_files(pinned, &mut out.missing);
    let mut missing = MissingLines::after(std::mem::take(&mut out.missing));
    for (set, file) in files {
        if absent_extra(file, pinned.mode, host) {
            continue;
        }
        match forward_one(set, file, pinned.mode, host, home)? {
            Ok(line) => out.files.push(line),
            Err(unread) => missing.push(set, pinned.mode, unread),
        }
    }
    out.missing = missing.finish();
    Ok(out)
}

/// Why a login file was not forwarded.
enum Unread {
    /// The host has no such file (`~/SRC`, as shown).
    Absent(String),
    /// Another reason, and what to do, as one line.
    Told(String),
}

/// The lines of what was not forwarded, in order: the files of a set the
/// host has none of in one line, with the set's hint once (a start used to
/// report each of claude's two files as its own event, with the same
/// hint), every other reason in its own.
struct MissingLines {
    lines: Vec<String>,
    /// Per set with files absent: the line it takes, the files, the hint.
    absent: Vec<(usize, String, Vec<String>, String)>,
}

impl MissingLines {
    /// After `lines` already told.
    fn after(lines: Vec<String>) -> Self {
        Self {
            lines,
            absent: Vec::new(),
        }
    }

    fn push(&mut self, set: &CredentialSet, mode: AuthForward, unread: Unread) {
        let shown = match unread {
            Unread::Told(line) => return self.lines.push(line),
            Unread::Absent(shown) => shown,
        };
        match self
            .absent
            .iter_mut()
            .find(|(_, name, ..)| *name == set.name)
        {
            Some((_, _, files, _)) => files.push(shown),
            None => {
                self.lines.push(String::new());
                let at = self.lines.len() - 1;
                let hint = file_hint(set, mode);
                self.absent.push((at, set.name.clone(), vec![shown], hint));
            }
        }
    }

    fn finish(mut self) -> Vec<String> {
        for (at, set, files, hint) in self.absent {
            let (last, rest) = files.split_last().expect("a set is listed with a file");
            let files = match rest.is_empty() {
                true => last.clone(),
                false => format!("{} and {last}", rest.join(", ")),
            };
            self.lines[at] = format!("{set}: {files} not found on the host — {hint}");
        }
        self.lines
    }
}

/// What a start would find on `host` of the files `pinned.mode` forwards,
/// read and never written anywhere (`jackin doctor`): each file found,
/// and each missing with what to do, as the start would say it.
pub fn logins_on_host(pinned: &PinnedCredentials, host: Result<&Path, &str>) -> FilesOutcome {
    let mut out = FilesOutcome::default();
    let files = forwarded_files(pinned, &mut out.missing);
    let mut missing = MissingLines::after(std::mem::take(&mut out.missing));
    for (set, file) in files {
        if absent_extra(file, pinned.mode, host) {
            continue;
        }
        match read_login(set, file, pinned.mode, host) {
            Ok(_) => out
                .files
                .push(format!("{}: ~/{} found", set.name, file.src)),
            Err(unread) => missing.push(set, pinned.mode, unread),
        }
    }
    out.missing = missing.finish();
    out
}

/// Whether `file` is a file that holds no login (account metadata), which
/// goes under `token` beside the login variables when the host has it, and
/// the host does not: nothing is missing then, the login being the
/// variable's (claude's `~/.claude.json` of someone who never ran claude on
/// this host).
fn absent_extra(file: &CredentialFile, mode: AuthForward, host: Result<&Path, &str>) -> bool {
    mode == AuthForward::Token
        && !file.secret
        && host.is_ok_and(|host| {
            std::fs::symlink_metadata(host.join(&file.src))
                .is_err_and(|e| e.kind() == io::ErrorKind::NotFound)
        })
}

/// The files of every set that `pinned.mode` forwards; a set that cannot
/// log in under the mode at all is said in `missing`.
fn forwarded_files<'a>(
    pinned: &'a PinnedCredentials,
    missing: &mut Vec<String>,
) -> Vec<(&'a CredentialSet, &'a CredentialFile)> {
    if pinned.mode == AuthForward::None {
        return Vec::new();
    }
    let mut files = Vec::new();
    for set in &pinned.sets {
        match pinned.mode {
            AuthForward::Sync if set.files.is_empty() && !set.env.is_empty() => {
                missing.push(format!(
                    "{}: nothing to copy under authForward: sync (it logs in with {}) — set \
                     authForward: token",
                    set.name,
                    variables(set)
                ));
            }
            AuthForward::Token if set.env.is_empty() && set.files.iter().any(|f| f.secret) => {
                missing.push(format!(
                    "{}: has no token variable, and its login files go only under authForward: \
                     sync — set authForward: sync",
                    set.name
                ));
            }
            _ => {}
        }
        files.extend(
            set.files
                .iter()
                .filter(|f| pinned.mode == AuthForward::Sync || !f.secret)
                .map(|file| (set, file)),
        );
    }
    files
}

/// A login file of `set` read from `host`, with where it is; `Err(why
/// not)`.
fn read_login(
    set: &CredentialSet,
    file: &CredentialFile,
    mode: AuthForward,
    host: Result<&Path, &str>,
) -> Result<(PathBuf, Vec<u8>), Unread> {
    let shown = format!("~/{}", file.src);
    let host =
        host.map_err(|why| Unread::Told(format!("{}: {shown} cannot be read: {why}", set.name)))?;
    let source = host.join(&file.src);
    match read_regular(&source, MAX_FILE_BYTES) {
        Ok(bytes) => Ok((source, bytes)),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Err(Unread::Absent(shown)),
        Err(e) => Err(Unread::Told(format!(
            "{}: {shown} on the host cannot be read: {e} — {}",
            set.name,
            file_hint(set, mode)
        ))),
    }
}

/// One file: `Ok(what was forwarded)`, `Err(why not)`.
fn forward_one(
    set: &CredentialSet,
    file: &CredentialFile,
    mode: AuthForward,
    host: Result<&Path, &str>,
    home: &Path,
) -> Result<Result<String, Unread>, CredentialError> {
    let shown = format!("~/{}", file.src);
    let (source, bytes) = match read_login(set, file, mode, host) {
        Ok(read) => read,
        Err(unread) => return Ok(Err(unread)),
    };
    let refused = |at: PathBuf, error: io::Error| CredentialError::Refused {
        set: set.name.clone(),
        src: file.src.clone(),
        dst: file.dst.clone(),
        at,
        error,
    };
    let relative = Path::new(&file.dst);
    let parent = relative.parent().unwrap_or(Path::new(""));
    let dir =
        fsutil::ensure_real_dir_below(home, parent).map_err(|e| refused(home.join(parent), e))?;
    let target = dir.join(relative.file_name().expect("validated: dst names a file"));
    let arrow = format!("{shown} → ~/{}", file.dst);
    if !file.keys.is_empty() {
        let merged = merge_keys(set, file, &bytes, &target).map_err(|e| refused(target, e))?;
        return Ok(match merged {
            Ok(keys) => Ok(format!("{}: {arrow} (keys {})", set.name, keys.join(", "))),
            Err(why) => Err(Unread::Told(format!(
                "{}: {shown} on the host {why}",
                set.name
            ))),
        });
    }
    // A session's copy that holds the host's bytes is neither newer nor
    // older: it is the host's login, and stays as it is. The copy jackin
    // wrote is always younger than the host's file, so only a copy whose
    // content differs can be the session's own.
    if read_untrusted(&target, MAX_FILE_BYTES).is_ok_and(|own| own == bytes) {
        return Ok(Ok(format!("{}: {arrow} (unchanged)", set.name)));
    }
    // The session's own copy is kept when it differs and is newer than the
    // host's: the agent refreshed its login since (an OAuth refresh token
    // is rotated on use), and the host's older one could log it out.
    let host_modified = std::fs::metadata(&source).and_then(|m| m.modified()).ok();
    let own_modified = std::fs::symlink_metadata(&target)
        .ok()
        .filter(std::fs::Metadata::is_file)
        .and_then(|m| m.modified().ok());
    if let (Some(host), Some(own)) = (host_modified, own_modified)
        && own > host
    {
        return Ok(Ok(format!(
            "{}: ~/{} kept: the session's own is newer than the host's {shown}",
            set.name, file.dst
        )));
    }
    fsutil::replace_below(home, relative, &bytes).map_err(|e| refused(target, e))?;
    Ok(Ok(format!("{}: {arrow}", set.name)))
}

/// Sets `file.keys` of the host's JSON object in the one at `target`;
/// `Ok(Ok(keys set))`, `Ok(Err(why nothing was))`. The session's file is
/// the agent's: read without following a link, and anything that is not a
/// JSON object there is replaced.
fn merge_keys(
    set: &CredentialSet,
    file: &CredentialFile,
    host_bytes: &[u8],
    target: &Path,
) -> io::Result<Result<Vec<String>, String>> {
    let host: serde_json::Map<String, serde_json::Value> = match serde_json::from_slice(host_bytes)
    {
        Ok(map) => map,
        Err(e) => {
            return Ok(Err(format!(
                "is not a JSON object ({}): nothing of it is forwarded",
                jackin_api::redact::json_error(&e)
            )));
        }
    };
    let found: Vec<(String, serde_json::Value)> = file
        .keys
        .iter()
        .filter_map(|k| host.get(k).map(|v| (k.clone(), v.clone())))
        .collect();
    if found.is_empty() {
        return Ok(Err(format!(
            "has none of {} — {}",
            file.keys.join(", "),
            set.login.as_deref().unwrap_or("log in on the host")
        )));
    }
    let keys: Vec<String> = found.iter().map(|(k, _)| k.clone()).collect();
    set_json_keys(target, found)?;
    Ok(Ok(keys))
}

/// Sets `found` (top-level keys and values) in the JSON object at
/// `target`, a file in the unit's home, which is the agent's: it is read
/// without following a link, anything there that is not a JSON object is
/// replaced, and the file is replaced by a rename (mode 0600), never
/// written through.
pub(crate) fn set_json_keys(
    target: &Path,
    found: impl IntoIterator<Item = (String, serde_json::Value)>,
) -> io::Result<()> {
    let mut own: serde_json::Map<String, serde_json::Value> =
        read_untrusted(target, MAX_FILE_BYTES)
            .ok()
            .and_then(|bytes| serde_json::from_slice(&bytes).ok())
            .unwrap_or_default();
    own.extend(found);
    let text = serde_json::to_vec_pretty(&own).expect("a JSON object serializes");
    let dir = target.parent().expect("a file has a directory");
    let name = target.file_name().expect("a file has a name");
    fsutil::replace_below(dir, Path::new(name), &text)?;
    Ok(())
}

/// The variables of `token` mode, resolved now, for the engine only.
/// Deliberately not `Debug`: it holds values.
pub struct EnvOutcome {
    /// `NAME=value`, to hand to the engine and drop.
    pub env: Vec<String>,
    /// What was set, `SET: NAME (from REFERENCE)`.
    pub names: Vec<String>,
    /// Each set that got no variable, with why and what to do.
    pub missing: Vec<String>,
}

/// How a reference reads in a report: `hostEnv NAME`, `file PATH`,
/// `onePassword op://…`.
pub fn reference(var: &EnvVar) -> String {
    let Some(from) = &var.value_from else {
        return "a plain value".into();
    };
    if let Some(name) = &from.host_env {
        format!("hostEnv {name}")
    } else if let Some(path) = &from.file {
        format!("file {path}")
    } else {
        format!(
            "onePassword {}",
            from.one_password.as_deref().unwrap_or_default()
        )
    }
}

/// Resolves the sets' variables under `token`; a variable `spec.env` sets
/// (`set_by_spec`) is the operator's and stays theirs. A set logs in when
/// any one of its variables resolves; one that resolves none is reported,
/// and the session starts without it. Blocking (a file, `op read`): call it
/// off the async runtime.
pub fn resolve_env(pinned: &PinnedCredentials, set_by_spec: &[String]) -> EnvOutcome {
    let mut out = EnvOutcome {
        env: Vec::new(),
        names: Vec::new(),
        missing: Vec::new(),
    };
    if pinned.mode != AuthForward::Token {
        return out;
    }
    let mut given: Vec<String> = Vec::new();
    for set in pinned.sets.iter().filter(|s| !s.env.is_empty()) {
        let mut why = Vec::new();
        let mut found = false;
        for var in &set.env {
            if set_by_spec.contains(&var.name) {
                out.names
                    .push(format!("{}: {} (set by spec.env)", set.name, var.name));
                found = true;
                continue;
            }
            // Two sets may name one variable (ANTHROPIC_API_KEY): once.
            if given.contains(&var.name) {
                found = true;
                continue;
            }
            match secrets::value_of(var) {
                Ok(value) if !value.is_empty() => {
                    out.env.push(format!("{}={value}", var.name));
                    out.names.push(format!(
                        "{}: {} (from {})",
                        set.name,
                        var.name,
                        reference(var)
                    ));
                    given.push(var.name.clone());
                    found = true;
                }
                Ok(_) => why.push(format!("{}: {} is empty", var.name, reference(var))),
                // The error names the variable and the reference, never a
                // value.
                Err(e) => why.push(e.to_string()),
            }
        }
        if found && let Some(step) = &set.login_step {
            out.names.push(format!(
                "{}: {}",
                set.name,
                crate::token_login::describe(step)
            ));
        }
        if !found {
            let sync = match set.files.is_empty() {
                true => String::new(),
                false => format!(
                    ", or set authForward: sync ({})",
                    set.login.as_deref().unwrap_or("log in on the host")
                ),
            };
            out.missing.push(format!(
                "{}: no token ({}) — export {} for jackin{sync}",
                set.name,
                why.join("; "),
                variables(set)
            ));
        }
    }
    out
}

/// The lines a start reports: what reached the session, then what did not.
pub fn notes(status: &jackin_api::instance::CredentialsStatus) -> Vec<Note> {
    let forwarded = status.env.iter().chain(&status.files).map(|line| Note {
        reason: reason::CREDENTIALS_FORWARDED,
        message: line.clone(),
    });
    let missing = status
        .env_missing
        .iter()
        .chain(&status.files_missing)
        .map(|line| Note {
            reason: reason::CREDENTIALS_MISSING,
            message: line.clone(),
        });
    forwarded.chain(missing).collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use jackin_api::credentials::{Credentials, host_env, same_place};
    use std::fs;
    use std::os::unix::fs::PermissionsExt;
    use std::time::{Duration, SystemTime};

    /// Ages a file: when it was last changed.
    fn set_modified(path: &Path, when: SystemTime) {
        let file = fs::File::options().write(true).open(path).unwrap();
        file.set_modified(when).unwrap();
    }

    fn claude() -> CredentialSet {
        jackin_api::agent::builtin()
            .into_iter()
            .find(|a| a.metadata.name == "claude")
            .and_then(|a| a.spec.credentials.map(|c| c.named("claude")))
            .unwrap()
    }

    /// An operator's home with `.claude/` in it, and a unit's home, in one
    /// temporary directory (`dir`).
    pub(crate) struct Homes {
        pub(crate) dir: tempfile::TempDir,
        pub(crate) host: PathBuf,
        pub(crate) unit: PathBuf,
    }

    pub(crate) fn homes() -> Homes {
        let dir = tempfile::tempdir().unwrap();
        let host = dir.path().join("host");
        let unit = dir.path().join("unit");
        fs::create_dir_all(host.join(".claude")).unwrap();
        fs::create_dir_all(&unit).unwrap();
        Homes { host, unit, dir }
    }

    fn pinned(mode: AuthForward, sets: Vec<CredentialSet>) -> PinnedCredentials {
        PinnedCredentials { mode, sets }
    }

    #[test]
    fn sync_copies_the_login_privately_and_only_the_named_keys() {
        let h = homes();
        fs::write(h.host.join(".claude/.credentials.json"), "LOGIN-MARKER").unwrap();
        fs::write(
            h.host.join(".claude.json"),
            r#"{"hasCompletedOnboarding": true, "oauthAccount": {"emailAddress": "a@b"},
                "projects": {"/secret/project": {"history": ["HISTORY-MARKER"]}}}"#,
        )
        .unwrap();
        // The session's own settings in its account file stay.
        fs::create_dir_all(h.unit.join(".claude")).unwrap();
        fs::write(
            h.unit.join(".claude/.claude.json"),
            r#"{"projects": {"/work": {"hasTrustDialogAccepted": true}}}"#,
        )
        .unwrap();
        let out = forward_files(
            &pinned(AuthForward::Sync, vec![claude()]),
            Ok(&h.host),
            &h.unit,
        )
        .unwrap();
        assert_eq!(
            out.files,
            [
                "claude: ~/.claude/.credentials.json → ~/.claude/.credentials.json",
                "claude: ~/.claude.json → ~/.claude/.claude.json (keys hasCompletedOnboarding, \
                 oauthAccount)"
            ]
        );
        assert_eq!(out.missing, Vec::<String>::new());
        let login = h.unit.join(".claude/.credentials.json");
        assert_eq!(fs::read_to_string(&login).unwrap(), "LOGIN-MARKER");
        let mode = fs::metadata(&login).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "readable by the agent's uid only");
        let account: serde_json::Value =
            serde_json::from_slice(&fs::read(h.unit.join(".claude/.claude.json")).unwrap())
                .unwrap();
        assert_eq!(account["hasCompletedOnboarding"], true);
        assert_eq!(account["oauthAccount"]["emailAddress"], "a@b");
        assert_eq!(account["projects"]["/work"]["hasTrustDialogAccepted"], true);
        assert!(
            !account.to_string().contains("HISTORY-MARKER"),
            "the host's other projects stay on the host: {account}"
        );
    }

    #[test]
    fn a_newer_session_login_is_kept_and_a_newer_host_login_replaces_it() {
        let h = homes();
        let host_login = h.host.join(".claude/.credentials.json");
        fs::write(&host_login, "FIRST").unwrap();
        let set = CredentialSet {
            files: vec![same_place(".claude/.credentials.json")],
            ..claude()
        };
        let sync = pinned(AuthForward::Sync, vec![set]);
        forward_files(&sync, Ok(&h.host), &h.unit).unwrap();
        // The agent refreshed its login in the session.
        let own = h.unit.join(".claude/.credentials.json");
        fs::write(&own, "REFRESHED").unwrap();
        let out = forward_files(&sync, Ok(&h.host), &h.unit).unwrap();
        assert_eq!(fs::read_to_string(&own).unwrap(), "REFRESHED");
        assert!(out.files[0].contains("kept"), "{:?}", out.files);
        // The operator logged in again on the host since.
        fs::write(&host_login, "SECOND").unwrap();
        set_modified(&own, SystemTime::now() - Duration::from_secs(60));
        forward_files(&sync, Ok(&h.host), &h.unit).unwrap();
        assert_eq!(fs::read_to_string(&own).unwrap(), "SECOND");
    }

    /// Defect R12: every restore called a byte-identical login "newer",
    /// since the copy jackin writes is always younger than the host's file.
    #[test]
    fn a_session_login_that_is_the_hosts_is_unchanged_not_kept_as_newer() {
        let h = homes();
        let host_login = h.host.join(".claude/.credentials.json");
        fs::write(&host_login, "SAME").unwrap();
        let set = CredentialSet {
            files: vec![same_place(".claude/.credentials.json")],
            ..claude()
        };
        let sync = pinned(AuthForward::Sync, vec![set]);
        forward_files(&sync, Ok(&h.host), &h.unit).unwrap();
        // The copy is younger than the host's file, as every copy is.
        set_modified(&host_login, SystemTime::now() - Duration::from_secs(60));
        let out = forward_files(&sync, Ok(&h.host), &h.unit).unwrap();
        assert_eq!(
            out.files,
            vec![
                "claude: ~/.claude/.credentials.json → ~/.claude/.credentials.json (unchanged)"
                    .to_owned()
            ]
        );
        let own = h.unit.join(".claude/.credentials.json");
        assert_eq!(fs::read_to_string(own).unwrap(), "SAME");
    }

    #[test]
    fn missing_and_unreadable_host_files_are_reported_with_a_hint() {
        let h = homes();
        let out = forward_files(
            &pinned(AuthForward::Sync, vec![claude()]),
            Ok(&h.host),
            &h.unit,
        )
        .unwrap();
        assert_eq!(out.files, Vec::<String>::new());
        // Both of the set's files in one line, its hint once (a start
        // reported each as its own event).
        assert_eq!(
            out.missing,
            [
                "claude: ~/.claude/.credentials.json and ~/.claude.json not found on the host — run \
              `claude` once on the host to log in, or set authForward: token with \
              CLAUDE_CODE_OAUTH_TOKEN or ANTHROPIC_API_KEY"
            ]
        );
        // A FIFO in the login's place is refused at once, never waited on.
        let fifo = h.host.join(".claude/.credentials.json");
        assert!(
            std::process::Command::new("mkfifo")
                .arg(&fifo)
                .status()
                .unwrap()
                .success()
        );
        fs::write(h.host.join(".claude.json"), "not json SECRET-MARKER").unwrap();
        let out = forward_files(
            &pinned(AuthForward::Sync, vec![claude()]),
            Ok(&h.host),
            &h.unit,
        )
        .unwrap();
        assert!(
            out.missing[0].contains("not a regular file"),
            "{:?}",
            out.missing
        );
        assert!(
            out.missing[1].contains("is not a JSON object (line 1, column"),
            "{:?}",
            out.missing
        );
        assert!(!format!("{out:?}").contains("SECRET-MARKER"), "{out:?}");
        // No home to read from: said, not guessed.
        let out = forward_files(
            &pinned(AuthForward::Sync, vec![claude()]),
            Err("JACKIN_CREDENTIALS_HOME=x is not an absolute path"),
            &h.unit,
        )
        .unwrap();
        assert!(
            out.missing[0].contains("is not an absolute path"),
            "{out:?}"
        );
    }

    /// Issue 55: under `token` the login is the variable; account metadata
    /// the host does not have is nothing missing (someone who never ran
    /// claude here), while one it has and cannot read still is.
    #[test]
    fn under_token_absent_account_metadata_is_no_missing_login() {
        let h = homes();
        let token = pinned(AuthForward::Token, vec![claude()]);
        let out = forward_files(&token, Ok(&h.host), &h.unit).unwrap();
        assert_eq!(out.missing, Vec::<String>::new());
        assert_eq!(out.files, Vec::<String>::new());
        assert_eq!(
            logins_on_host(&token, Ok(&h.host)).missing,
            Vec::<String>::new()
        );
        fs::write(h.host.join(".claude.json"), "not json").unwrap();
        let out = forward_files(&token, Ok(&h.host), &h.unit).unwrap();
        assert!(out.missing[0].contains("is not a JSON object"), "{out:?}");
    }

    #[test]
    fn a_planted_link_is_never_written_through() {
        let h = homes();
        fs::write(h.host.join(".claude/.credentials.json"), "LOGIN").unwrap();
        let outside = h.host.parent().unwrap().join("outside");
        fs::create_dir(&outside).unwrap();
        // The agent made its config directory a link to a host directory.
        std::os::unix::fs::symlink(&outside, h.unit.join(".claude")).unwrap();
        let err = forward_files(
            &pinned(AuthForward::Sync, vec![claude()]),
            Ok(&h.host),
            &h.unit,
        )
        .unwrap_err();
        assert!(err.to_string().contains("not a plain directory"), "{err}");
        assert_eq!(fs::read_dir(&outside).unwrap().count(), 0);
        // A link in the file's own place is replaced by the file.
        fs::remove_file(h.unit.join(".claude")).unwrap();
        fs::create_dir(h.unit.join(".claude")).unwrap();
        fs::write(outside.join("target"), "the operator's").unwrap();
        std::os::unix::fs::symlink(
            outside.join("target"),
            h.unit.join(".claude/.credentials.json"),
        )
        .unwrap();
        std::os::unix::fs::symlink(outside.join("target"), h.unit.join(".claude/.claude.json"))
            .unwrap();
        fs::write(h.host.join(".claude.json"), r#"{"userID": "u"}"#).unwrap();
        forward_files(
            &pinned(AuthForward::Sync, vec![claude()]),
            Ok(&h.host),
            &h.unit,
        )
        .unwrap();
        assert_eq!(fs::read(outside.join("target")).unwrap(), b"the operator's");
        for name in [".credentials.json", ".claude.json"] {
            let meta = fs::symlink_metadata(h.unit.join(".claude").join(name)).unwrap();
            assert!(meta.is_file(), "{name}");
        }
    }

    #[test]
    fn token_mode_copies_only_files_without_a_secret() {
        let h = homes();
        fs::write(h.host.join(".claude/.credentials.json"), "LOGIN").unwrap();
        fs::write(
            h.host.join(".claude.json"),
            r#"{"hasCompletedOnboarding": true}"#,
        )
        .unwrap();
        let out = forward_files(
            &pinned(AuthForward::Token, vec![claude()]),
            Ok(&h.host),
            &h.unit,
        )
        .unwrap();
        assert_eq!(out.files.len(), 1, "{out:?}");
        assert!(out.files[0].contains("~/.claude.json"), "{out:?}");
        assert!(!h.unit.join(".claude/.credentials.json").exists());
        let none = forward_files(
            &pinned(AuthForward::None, vec![claude()]),
            Ok(&h.host),
            &h.unit,
        )
        .unwrap();
        assert_eq!(none, FilesOutcome::default());
    }

    #[test]
    fn token_variables_resolve_once_and_report_names_only() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        fs::write(&token, "TOKEN-MARKER\n").unwrap();
        let from_file = EnvVar {
            name: "CLAUDE_CODE_OAUTH_TOKEN".into(),
            value: None,
            value_from: Some(jackin_api::instance::EnvSource {
                file: Some(token.display().to_string()),
                ..Default::default()
            }),
        };
        let mine = Credentials {
            env: vec![from_file, host_env("JACKIN_TEST_SURELY_UNSET_KEY")],
            ..Default::default()
        };
        let other = Credentials {
            env: vec![host_env("JACKIN_TEST_SURELY_UNSET_TOO")],
            files: vec![same_place(".x")],
            login: Some("run x login".into()),
            login_step: None,
        };
        let out = resolve_env(
            &pinned(
                AuthForward::Token,
                vec![mine.named("claude"), other.named("other")],
            ),
            &[],
        );
        assert_eq!(out.env, ["CLAUDE_CODE_OAUTH_TOKEN=TOKEN-MARKER"]);
        assert_eq!(
            out.names,
            [format!(
                "claude: CLAUDE_CODE_OAUTH_TOKEN (from file {})",
                token.display()
            )]
        );
        assert_eq!(
            out.missing,
            [format!(
                "other: no token (JACKIN_TEST_SURELY_UNSET_TOO: host variable \
                 JACKIN_TEST_SURELY_UNSET_TOO is not set in the environment of this jackin \
                 process (pid {})) — export JACKIN_TEST_SURELY_UNSET_TOO for jackin, or set \
                 authForward: sync (run x login)",
                std::process::id()
            )]
        );
        // What spec.env sets is the operator's.
        let out = resolve_env(
            &pinned(AuthForward::Token, vec![other.named("other")]),
            &["JACKIN_TEST_SURELY_UNSET_TOO".to_owned()],
        );
        assert!(out.env.is_empty() && out.missing.is_empty());
        assert_eq!(
            out.names,
            ["other: JACKIN_TEST_SURELY_UNSET_TOO (set by spec.env)"]
        );
        // Only token mode passes variables.
        let out = resolve_env(&pinned(AuthForward::Sync, vec![mine.named("claude")]), &[]);
        assert!(out.env.is_empty() && out.names.is_empty() && out.missing.is_empty());
    }
}
