//! Semantic validation beyond what the types enforce.
//!
//! Every check reports the field path in the same notation the YAML loader
//! uses (`spec.mounts[1].dst`), so an error can be traced back to the line and
//! column it came from. Nothing user-supplied reaches a path or an argv
//! without passing through here first.

use std::collections::HashSet;

use crate::agent::{Agent, ID_PLACEHOLDER};
use crate::env::{EnvVar, MAX_VALUE_BYTES};
use crate::instance::{Instance, Isolation, MountSpec};
use crate::meta::{API_VERSION, ObjectMeta};
use crate::workspace::{IdleThen, RoleCommands, Workspace};

mod engine;

pub use engine::{engine_address, engine_ref};

/// One rule an object breaks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldError {
    /// Field path, e.g. `spec.mounts[1].dst`.
    pub path: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.message)
    }
}

/// The rules an object breaks, gathered as it is checked.
#[derive(Default)]
pub(crate) struct Errors(Vec<FieldError>);

impl Errors {
    pub(crate) fn push(&mut self, path: impl Into<String>, message: impl Into<String>) {
        self.0.push(FieldError {
            path: path.into(),
            message: message.into(),
        });
    }

    pub(crate) fn check(&mut self, path: &str, result: Result<(), String>) {
        if let Err(message) = result {
            self.push(path, message);
        }
    }

    pub(crate) fn into_result(self) -> Result<(), Vec<FieldError>> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(self.0)
        }
    }
}

/// Longest DNS-1123 label, and so the longest object name.
pub const MAX_NAME_LEN: usize = 63;

/// Checks a DNS-1123 label: lower-case alphanumerics and `-`, starting and
/// ending alphanumeric, at most 63 characters.
pub fn dns_label(value: &str) -> Result<(), String> {
    let expected = "expected a DNS-1123 label: lower-case letters, digits and '-', \
                    starting and ending with a letter or digit, at most 63 characters";
    let ok = !value.is_empty()
        && value.len() <= MAX_NAME_LEN
        && value
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !value.starts_with('-')
        && !value.ends_with('-');
    if ok {
        Ok(())
    } else {
        Err(format!("invalid name {value:?}: {expected}"))
    }
}

/// Checks an environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
pub fn env_name(value: &str) -> Result<(), String> {
    let mut bytes = value.bytes();
    let ok = matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid variable name {value:?}: expected letters, digits and '_', not starting with a digit"
        ))
    }
}

/// A value that will be passed to a program as one argv element: must be
/// non-empty, must not look like an option, must not hold control characters.
fn argv_value(value: &str, what: &str) -> Result<(), String> {
    if value.trim().is_empty() {
        Err(format!("{what} must not be empty"))
    } else if value.starts_with('-') {
        Err(format!("{what} {value:?} must not start with '-'"))
    } else if value.chars().any(char::is_control) {
        Err(format!("{what} must not contain control characters"))
    } else {
        Ok(())
    }
}

fn label_key(key: &str) -> Result<(), String> {
    let ok = !key.is_empty()
        && key.len() <= 253
        && key
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'-' | b'_' | b'/'))
        && key.matches('/').count() <= 1;
    if ok {
        Ok(())
    } else {
        Err(format!(
            "invalid key {key:?}: expected an optional DNS prefix and '/', then letters, digits, '.', '-' or '_'"
        ))
    }
}

fn metadata(errors: &mut Errors, meta: &ObjectMeta) {
    errors.check("metadata.name", dns_label(&meta.name));
    for key in meta.labels.keys() {
        errors.check(&format!("metadata.labels.{key}"), label_key(key));
    }
    for key in meta.annotations.keys() {
        errors.check(&format!("metadata.annotations.{key}"), label_key(key));
    }
}

/// What an operator applies, checked beyond what a stored object must be
/// ([`instance`] and the others): the names in its metadata it may not set
/// ([`operator_names`]), and the engine it names (`spec.engine`), an address
/// that no engine can have ([`engine_address`]).
pub fn operator_input(meta: &ObjectMeta, engine: Option<&str>) -> Result<(), Vec<FieldError>> {
    let mut errors = match operator_names(meta) {
        Ok(()) => Errors::default(),
        Err(found) => Errors(found),
    };
    if let Some(engine) = engine.filter(|e| e.contains("://") && engine_ref(e).is_ok()) {
        errors.check("spec.engine", engine_address(engine));
    }
    errors.into_result()
}

/// What an operator's manifest may not set: labels and annotations jackin
/// keeps for itself (see [`crate::names::reserved_label`]), and labels that
/// are not spelled as Kubernetes spells them ([`selector::label_key`],
/// [`selector::label_value`]), which `-l` could never select. Checked on
/// what an operator applies, not on jackin's own stored objects, which carry
/// the labels jackin set: an object stored with a label an older jackin
/// accepted stays readable, and so can still be deleted. A key that is not
/// a valid key at all is reported as such by [`instance`] and the others,
/// not twice.
///
/// [`selector::label_key`]: crate::selector::label_key
/// [`selector::label_value`]: crate::selector::label_value
pub fn operator_names(meta: &ObjectMeta) -> Result<(), Vec<FieldError>> {
    let mut errors = Errors::default();
    for (key, value) in meta.labels.iter().filter(|(key, _)| label_key(key).is_ok()) {
        let at = format!("metadata.labels.{key}");
        let selectable = crate::selector::label_key(key)
            .and_then(|()| crate::selector::label_value(value))
            .map_err(|why| format!("{why}; a label must be one `jackin get -l` can select"));
        if let Err(why) = selectable {
            errors.push(at, why);
        } else if let Some(why) = crate::names::reserved_label(key) {
            errors.push(at, why);
        }
    }
    for key in meta.annotations.keys().filter(|key| label_key(key).is_ok()) {
        if let Some(why) = crate::names::reserved_annotation(key) {
            errors.push(format!("metadata.annotations.{key}"), why);
        }
    }
    errors.into_result()
}

fn api_version(errors: &mut Errors, value: &str) {
    if value != API_VERSION {
        errors.push(
            "apiVersion",
            format!("unsupported apiVersion {value:?}: expected {API_VERSION:?}"),
        );
    }
}

/// Container paths a mount may not cover: jackin's own state and wrapper,
/// the agent's home (the unit's `home/` is bound there), and the kernel's
/// filesystems, which the engine refuses to bind over.
const RESERVED_DESTINATIONS: [&str; 5] = ["/jackin", "/home/agent", "/proc", "/sys", "/dev"];

/// `path` with repeated and trailing slashes folded, so that `//jackin/`
/// and `/jackin` compare equal; `.` and `..` are left for the caller to
/// refuse.
pub fn normalize_path(path: &str) -> String {
    let parts: Vec<&str> = path.split('/').filter(|p| !p.is_empty()).collect();
    format!("/{}", parts.join("/"))
}

/// Mount sources are host paths: absolute, or under the operator's home
/// (`~/…`). A relative path would be resolved against whatever directory a
/// later command happens to run in.
fn mount_source(src: &str) -> Result<(), String> {
    if src.trim().is_empty() {
        Err("must not be empty: expected a host path".into())
    } else if src.chars().any(char::is_control) {
        Err("must not contain control characters".into())
    } else if !(src.starts_with('/') || src == "~" || src.starts_with("~/")) {
        Err(format!(
            "{src:?} is relative: expected an absolute host path, or one under your home (~/…)"
        ))
    } else {
        Ok(())
    }
}

/// Mount destinations are absolute, written in normal form, unique, and
/// stay clear of [`RESERVED_DESTINATIONS`]. Each check runs on the
/// normalized path, so no spelling slips past it.
fn mount_destination(dst: &str) -> Result<String, String> {
    let normalized = normalize_path(dst);
    if !dst.starts_with('/') {
        return Err(format!(
            "{dst:?} is not absolute: expected a path starting with '/'"
        ));
    }
    if dst.chars().any(|c| c.is_control() || c == ':') {
        return Err("must not contain ':' or control characters".into());
    }
    if normalized
        .split('/')
        .any(|part| part == ".." || part == ".")
    {
        return Err(format!(
            "{dst:?} contains '.' or '..': expected a normalized absolute path"
        ));
    }
    if normalized == "/" {
        return Err("cannot mount over '/'".into());
    }
    if let Some(reserved) = RESERVED_DESTINATIONS
        .iter()
        .find(|r| normalized == **r || normalized.starts_with(&format!("{r}/")))
    {
        return Err(format!(
            "{dst:?} is under {reserved}, which is reserved (jackin's state, the agent's home, \
             the kernel's filesystems): choose another destination"
        ));
    }
    if dst != normalized {
        return Err(format!(
            "{dst:?} is not in normal form: write it as {normalized:?}"
        ));
    }
    Ok(normalized)
}

/// A working directory: absolute, in normal form, no control characters.
fn working_dir(dir: &str) -> Result<(), String> {
    if !dir.starts_with('/') {
        return Err(format!(
            "{dir:?} is not absolute: expected a path starting with '/'"
        ));
    }
    if dir.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    let normalized = normalize_path(dir);
    if normalized
        .split('/')
        .any(|part| part == ".." || part == ".")
        || dir != normalized
    {
        return Err(format!(
            "{dir:?} is not in normal form: expected a plain absolute path such as \
             \"/workspace/app\""
        ));
    }
    Ok(())
}

/// A `shared` mount whose source holds an isolated mount's repository (or
/// lies inside its `.git`) would hand the agent that repository again,
/// writable: the first such pair, as `(shared, isolated, why)` indexes into
/// `mounts`. Paths are compared as written, `.` and `..` resolved.
pub fn shared_over_isolated(mounts: &[MountSpec]) -> Option<(usize, usize, String)> {
    let within = |inner: &str, outer: &str| {
        inner == outer || outer.is_empty() || inner.starts_with(&format!("{outer}/"))
    };
    for (i, shared) in mounts.iter().enumerate() {
        if shared.isolation != Isolation::Shared {
            continue;
        }
        let shared_src = lexical(&shared.src);
        for (j, isolated) in mounts.iter().enumerate() {
            if isolated.isolation == Isolation::Shared {
                continue;
            }
            let repo = lexical(&isolated.src);
            let git_dir = format!("{repo}/.git");
            let why = if within(&repo, &shared_src) {
                format!(
                    "{:?} holds the repository {:?}, which is mounted with isolation: {}",
                    shared.src,
                    isolated.src,
                    isolated.isolation.as_str()
                )
            } else if within(&shared_src, &git_dir) {
                format!(
                    "{:?} is inside the .git of {:?}, which is mounted with isolation: {}",
                    shared.src,
                    isolated.src,
                    isolated.isolation.as_str()
                )
            } else {
                continue;
            };
            return Some((i, j, why));
        }
    }
    None
}

/// A path as written, `.` and `..` resolved, without its leading `/`.
fn lexical(path: &str) -> String {
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            part => parts.push(part),
        }
    }
    parts.join("/")
}

/// Two `worktree` mounts of one repository: the first such pair. A unit
/// has one scratch branch and one base pin in each repository, so a
/// repository is isolated as a worktree at most once per instance.
pub fn worktrees_of_one_repository(mounts: &[MountSpec]) -> Option<(usize, usize)> {
    let worktrees: Vec<(usize, String)> = mounts
        .iter()
        .enumerate()
        .filter(|(_, m)| m.isolation == Isolation::Worktree)
        .map(|(i, m)| (i, lexical(&m.src)))
        .collect();
    worktrees.iter().enumerate().find_map(|(at, (i, src))| {
        worktrees[at + 1..]
            .iter()
            .find(|(_, other)| other == src)
            .map(|(j, _)| (*i, *j))
    })
}

fn mounts(errors: &mut Errors, base: &str, mounts: &[MountSpec]) {
    if let Some((first, second)) = worktrees_of_one_repository(mounts) {
        errors.push(
            format!("{base}[{second}].src"),
            format!(
                "{:?} is mounted with isolation: worktree by {base}[{first}] already: a \
                 repository is isolated as a worktree once per instance (one scratch branch); \
                 use clone isolation for the second",
                mounts[second].src
            ),
        );
    }
    if let Some((shared, _, why)) = shared_over_isolated(mounts) {
        errors.push(
            format!("{base}[{shared}].src"),
            format!(
                "{why}: shared, it would let the agent write that repository; share a \
                 directory beside it instead, or isolate this mount too"
            ),
        );
    }
    let mut seen = HashSet::new();
    for (i, mount) in mounts.iter().enumerate() {
        let at = format!("{base}[{i}]");
        errors.check(&format!("{at}.src"), mount_source(&mount.src));
        for (path, message) in crate::include::mount_errors(&at, mount) {
            errors.push(path, message);
        }
        match mount_destination(&mount.dst) {
            Err(message) => errors.push(format!("{at}.dst"), message),
            Ok(normalized) => {
                if !seen.insert(normalized) {
                    errors.push(
                        format!("{at}.dst"),
                        format!(
                            "duplicate mount destination {:?}: each destination may appear once",
                            mount.dst
                        ),
                    );
                }
            }
        }
    }
}

fn env(errors: &mut Errors, base: &str, vars: &[EnvVar]) {
    let mut seen = HashSet::new();
    for (i, var) in vars.iter().enumerate() {
        let at = format!("{base}[{i}]");
        errors.check(&format!("{at}.name"), env_name(&var.name));
        if !seen.insert(var.name.as_str()) {
            errors.push(
                format!("{at}.name"),
                format!("duplicate variable {:?}", var.name),
            );
        }
        if let Some(value) = &var.value {
            errors.check(&format!("{at}.value"), env_value(&var.name, value));
        }
        match (&var.value, &var.value_from) {
            (Some(_), Some(_)) => {
                errors.push(at.clone(), "set either value or valueFrom, not both");
            }
            (None, None) => errors.push(
                at.clone(),
                "expected value (not a secret) or valueFrom (hostEnv, file or onePassword)",
            ),
            _ => {}
        }
        if let Some(source) = &var.value_from {
            let at = format!("{at}.valueFrom");
            let set = [
                source.host_env.is_some(),
                source.file.is_some(),
                source.one_password.is_some(),
            ]
            .iter()
            .filter(|s| **s)
            .count();
            if set != 1 {
                errors.push(
                    at.clone(),
                    "expected exactly one of hostEnv, file, onePassword",
                );
            }
            if let Some(name) = &source.host_env {
                errors.check(&format!("{at}.hostEnv"), env_name(name));
            }
            if let Some(path) = &source.file
                && path.trim().is_empty()
            {
                errors.push(format!("{at}.file"), "must not be empty: expected a path");
            }
            if let Some(reference) = &source.one_password {
                errors.check(&format!("{at}.onePassword"), op_reference(reference));
            }
        }
    }
}

/// A value the kernel can pass to a program: no NUL (it would end the
/// string) and at most [`MAX_VALUE_BYTES`] for `NAME=value` together.
fn env_value(name: &str, value: &str) -> Result<(), String> {
    if value.contains('\0') {
        Err("must not contain a NUL byte, which no environment variable can hold".into())
    } else if name.len() + 1 + value.len() > MAX_VALUE_BYTES {
        Err(format!(
            "is {} bytes long: expected at most {MAX_VALUE_BYTES} bytes for NAME=value \
             (the kernel's limit for one variable)",
            name.len() + 1 + value.len()
        ))
    } else {
        Ok(())
    }
}

/// A path inside a home, written relative to it in normal form
/// (`.claude/.credentials.json`): nothing above the home, no `.` or empty
/// part, no control characters. The home is the operator's (`src`) or the
/// agent's (`dst`).
fn home_relative(path: &str, home: &str) -> Result<(), String> {
    let expected = format!(
        "expected a path relative to {home}, in normal form, such as \".claude/.credentials.json\""
    );
    if path.is_empty() {
        return Err(format!("must not be empty: {expected}"));
    }
    if path.chars().any(char::is_control) {
        return Err("must not contain control characters".into());
    }
    if path.starts_with('/') || path.starts_with('~') {
        return Err(format!("{path:?} is not relative: {expected}"));
    }
    if path
        .split('/')
        .any(|part| part.is_empty() || part == "." || part == "..")
    {
        return Err(format!("{path:?} is not in normal form: {expected}"));
    }
    Ok(())
}

/// The parts of a credential set: files whose places are inside the two
/// homes, each destination once; keys named; variables that are secret
/// references, never plain values.
fn credentials(
    errors: &mut Errors,
    at: &str,
    files: &[crate::credentials::CredentialFile],
    vars: &[EnvVar],
    login: Option<&String>,
    login_step: Option<&crate::credentials::LoginStep>,
) {
    let mut destinations = HashSet::new();
    for (i, file) in files.iter().enumerate() {
        let at = format!("{at}.files[{i}]");
        errors.check(
            &format!("{at}.src"),
            home_relative(&file.src, "the operator's home"),
        );
        errors.check(
            &format!("{at}.dst"),
            home_relative(&file.dst, "the agent's home"),
        );
        if !destinations.insert(file.dst.as_str()) {
            errors.push(
                format!("{at}.dst"),
                format!(
                    "duplicate destination {:?}: each file goes to its own place",
                    file.dst
                ),
            );
        }
        let mut keys = HashSet::new();
        for (k, key) in file.keys.iter().enumerate() {
            if key.is_empty() || key.chars().any(char::is_control) {
                errors.push(
                    format!("{at}.keys[{k}]"),
                    "expected a top-level key of the JSON file, without control characters",
                );
            } else if !keys.insert(key.as_str()) {
                errors.push(format!("{at}.keys[{k}]"), format!("duplicate key {key:?}"));
            }
        }
    }
    env(errors, &format!("{at}.env"), vars);
    for (i, var) in vars.iter().enumerate() {
        if var.value.is_some() {
            errors.push(
                format!("{at}.env[{i}].value"),
                "a credential is a secret: give a reference in valueFrom (hostEnv, file or \
                 onePassword), never the value itself",
            );
        }
    }
    if let Some(login) = login
        && login.chars().any(char::is_control)
    {
        errors.push(format!("{at}.login"), "must not contain control characters");
    }
    for (field, why) in login_step.map(|s| s.problems(vars)).unwrap_or_default() {
        errors.push(format!("{at}.loginStep.{field}"), why);
    }
    if let Some(keeps) = login_step.and_then(|s| s.keeps.as_ref()) {
        errors.check(
            &format!("{at}.loginStep.keeps"),
            home_relative(keeps, "the agent's home"),
        );
    }
}

/// A role repository git may read from: a path or a URL, never one of the
/// transports that run a command (`ext::…`, `fd::…`).
fn git_source(source: &str) -> Result<(), String> {
    argv_value(source, "a repository")?;
    if let Some((transport, _)) = source.split_once("::") {
        return Err(format!(
            "{source:?} uses git's {transport}:: transport, which runs commands: expected a \
             path, or a URL (https://, ssh://, git://, file://)"
        ));
    }
    Ok(())
}

/// `op://vault/item/field` (a section may sit between item and field).
fn op_reference(reference: &str) -> Result<(), String> {
    let expected = "expected a 1Password reference op://vault/item/field";
    let Some(rest) = reference.strip_prefix("op://") else {
        return Err(format!("{reference:?}: {expected}"));
    };
    let parts: Vec<&str> = rest.split('/').collect();
    if (3..=4).contains(&parts.len())
        && parts.iter().all(|p| !p.is_empty())
        && !reference.chars().any(char::is_control)
    {
        Ok(())
    } else {
        Err(format!("{reference:?}: {expected}"))
    }
}

/// Validates an Instance; returns every broken rule, not just the first.
pub fn instance(obj: &Instance) -> Result<(), Vec<FieldError>> {
    let mut errors = Errors::default();
    api_version(&mut errors, &obj.api_version);
    metadata(&mut errors, &obj.metadata);
    let spec = &obj.spec;
    if let Some(ws) = &spec.workspace {
        errors.check("spec.workspace", dns_label(ws));
    }
    errors.check("spec.role.name", dns_label(&spec.role.name));
    errors.check("spec.agent", dns_label(&spec.agent));
    if let Some(provider) = &spec.provider {
        errors.check("spec.provider", dns_label(provider));
    }
    if let Some(source) = &spec.role.source {
        errors.check("spec.role.source.git", git_source(&source.git));
        if let Some(git_ref) = &source.git_ref {
            errors.check("spec.role.source.ref", argv_value(git_ref, "a ref"));
            if git_ref.contains(char::is_whitespace) {
                errors.push("spec.role.source.ref", "a ref must not contain spaces");
            }
        }
    }
    match &spec.image {
        Some(image) => {
            errors.check("spec.image", argv_value(image, "an image reference"));
            if image.contains(char::is_whitespace) {
                errors.push("spec.image", "an image reference must not contain spaces");
            }
        }
        None if spec.role.source.is_none() => errors.push(
            "spec.role.source",
            "expected a role source to build from, or spec.image to run a local image",
        ),
        None => {}
    }
    if let Some(command) = &spec.command {
        if command.first().is_none_or(|c| c.is_empty()) {
            errors.push(
                "spec.command",
                "expected a non-empty argv whose first element names the program",
            );
        }
        plan_args(&mut errors, "spec.command", command);
    }
    if let Some(id) = &spec.conversation_id {
        if id.is_empty() || id.len() > MAX_CONVERSATION_ID {
            errors.push(
                "spec.conversationId",
                format!("expected 1 to {MAX_CONVERSATION_ID} bytes"),
            );
        } else if id.chars().any(char::is_control) {
            errors.push("spec.conversationId", "must not contain control characters");
        }
    }
    if let Some(engine) = &spec.engine {
        errors.check("spec.engine", engine_ref(engine));
    }
    if let Some(dir) = &spec.working_dir {
        errors.check("spec.workingDir", working_dir(dir));
    }
    mounts(&mut errors, "spec.mounts", &spec.mounts);
    env(&mut errors, "spec.env", &spec.env);
    ports(&mut errors, "spec.ports", &spec.ports);
    let mut sidecar_names = HashSet::new();
    for (i, sidecar) in spec.sidecars.iter().enumerate() {
        let at = format!("spec.sidecars[{i}]");
        errors.check(&format!("{at}.name"), dns_label(&sidecar.name));
        if !sidecar_names.insert(sidecar.name.as_str()) {
            errors.push(
                format!("{at}.name"),
                format!("duplicate sidecar {:?}", sidecar.name),
            );
        }
        errors.check(
            &format!("{at}.image"),
            argv_value(&sidecar.image, "an image reference"),
        );
    }
    errors.into_result()
}

/// The longest duration anything takes: a week. Past it a number is far
/// more likely a slip than an intent, and deadlines stay representable.
const MAX_DURATION_SECS: u64 = 7 * 24 * 3600;

/// `90`, `90s`, `5m`, `1h`: at least one second, at most a week.
pub fn duration(text: &str) -> Result<std::time::Duration, String> {
    let expected = "expected e.g. 90s, 5m, 1h or 1h30m (at least 1s, at most 168h)";
    let text = text.trim();
    // A bare number is seconds; anything else is jiff's friendly format
    // (`90s`, `5m`, `1h30m`, `2 hours`).
    let parsed = match text.parse::<u64>() {
        Ok(seconds) => i64::try_from(seconds)
            .map(jiff::SignedDuration::from_secs)
            .map_err(|_| format!("{text:?} is too long: {expected}")),
        Err(_) => text
            .parse::<jiff::SignedDuration>()
            .map_err(|_| format!("{text:?} is not a duration: {expected}")),
    }?;
    if parsed.is_negative() {
        return Err(format!("{text:?} is negative: {expected}"));
    }
    if parsed.is_zero() {
        return Err(format!("{text:?} is zero: {expected}"));
    }
    let duration = std::time::Duration::try_from(parsed)
        .map_err(|_| format!("{text:?} is not a duration: {expected}"))?;
    if duration < std::time::Duration::from_secs(1) {
        return Err(format!("{text:?} is under a second: {expected}"));
    }
    if duration.as_secs() > MAX_DURATION_SECS
        || (duration.as_secs() == MAX_DURATION_SECS && duration.subsec_nanos() > 0)
    {
        return Err(format!("{text:?} is too long: {expected}"));
    }
    Ok(duration)
}

/// A widening of the container's restrictions: real capabilities, limits
/// the session still works within.
pub(crate) fn security(
    errors: &mut Errors,
    at: &str,
    spec: Option<&crate::security::SecuritySpec>,
) {
    for (field, message) in spec.map(crate::security::problems).unwrap_or_default() {
        errors.push(format!("{at}.{field}"), message);
    }
}

/// Idle commands: argv lists whose program is named.
pub(crate) fn idle_commands(errors: &mut Errors, at: &str, commands: &[Vec<String>]) {
    for (i, argv) in commands.iter().enumerate() {
        if argv.first().is_none_or(|p| p.is_empty()) {
            errors.push(
                format!("{at}[{i}]"),
                "expected an argv whose first element names the program",
            );
        }
        plan_args(errors, &format!("{at}[{i}]"), argv);
    }
}

/// The longest conversation id an instance may name.
const MAX_CONVERSATION_ID: usize = 256;

/// Each element of an argv the entry wrapper reads back one line per
/// element: no line breaks or other control characters.
fn plan_args(errors: &mut Errors, at: &str, args: &[String]) {
    for (i, arg) in args.iter().enumerate() {
        if arg.chars().any(char::is_control) {
            errors.push(
                format!("{at}[{i}]"),
                "must not contain control characters (line breaks included)",
            );
        }
    }
}

/// Validates an Agent; returns every broken rule.
pub fn agent(obj: &Agent) -> Result<(), Vec<FieldError>> {
    let mut errors = Errors::default();
    api_version(&mut errors, &obj.api_version);
    metadata(&mut errors, &obj.metadata);
    let spec = &obj.spec;
    launch_templates(&mut errors, spec);
    if let Some(creds) = &spec.credentials {
        credentials(
            &mut errors,
            "spec.credentials",
            &creds.files,
            &creds.env,
            creds.login.as_ref(),
            creds.login_step.as_ref(),
        );
    }
    if let Some(state) = &spec.state_env {
        state_env(&mut errors, state);
    }
    providers(&mut errors, &spec.providers);
    install(&mut errors, &spec.install);
    if let Some(version) = &spec.version {
        version_probe(&mut errors, version);
    }
    if let Some(setting) = spec.retention.as_ref().and_then(|r| r.setting.as_ref()) {
        retention_setting(&mut errors, spec, setting);
    }
    for (field, message) in crate::operator_config::problems(
        &spec.operator_config,
        "spec.operatorConfig",
        home_relative,
    ) {
        errors.push(field, message);
    }
    let retention = (spec.retention.as_ref()).and_then(|r| r.setting.as_ref());
    let taken = retention.map(|_| crate::agent::RETENTION_SETTING);
    for (field, message) in
        crate::agent_settings::problems(&spec.settings, "spec.settings", taken.as_slice())
    {
        errors.push(field, message);
    }
    errors.into_result()
}

/// The argv templates: the launch argv, and the arguments for a minted id,
/// a resume by id and a continue, each with the id placeholder where it
/// belongs, and appending to a launch argv that is there.
fn launch_templates(errors: &mut Errors, spec: &crate::agent::AgentSpec) {
    if spec.launch.first().is_some_and(String::is_empty) {
        errors.push("spec.launch[0]", "expected the program to run");
    }
    let templates = [
        ("spec.launch", &spec.launch, false),
        ("spec.mintArgs", &spec.mint_args, true),
        ("spec.resumeArgs", &spec.resume_args, true),
        ("spec.continueArgs", &spec.continue_args, false),
    ];
    for (at, args, takes_id) in templates {
        plan_args(errors, at, args);
        let ids = args
            .iter()
            .map(|a| a.matches(ID_PLACEHOLDER).count())
            .sum::<usize>();
        match (takes_id, args.is_empty(), ids) {
            (_, true, _) | (true, false, 1) | (false, false, 0) => {}
            (true, false, _) => errors.push(
                at,
                format!("expected {ID_PLACEHOLDER} exactly once, where the id goes"),
            ),
            (false, false, _) => errors.push(at, format!("has no id to put in {ID_PLACEHOLDER}")),
        }
        if !args.is_empty() && at != "spec.launch" && spec.launch.is_empty() {
            errors.push(at, "appends to the launch argv: set spec.launch");
        }
    }
    if spec.mint_args.is_empty() != spec.resume_args.is_empty() {
        errors.push(
            "spec.resumeArgs",
            "mintArgs and resumeArgs go together: an id jackin mints must be resumable",
        );
    }
}

/// Where the agent keeps its state, inside its home.
fn state_env(errors: &mut Errors, state: &crate::agent::StateEnv) {
    errors.check("spec.stateEnv.name", env_name(&state.name));
    let inside = |path: &str| {
        !(path.starts_with('/')
            || path.split('/').any(|part| part == "..")
            || path.chars().any(char::is_control))
    };
    if !inside(&state.path) {
        errors.push(
            "spec.stateEnv.path",
            "expected a path inside the agent's home, relative, without '..'",
        );
    }
    if let Some(part) = &state.conversations
        && (part.is_empty() || !inside(part))
    {
        errors.push(
            "spec.stateEnv.conversations",
            "expected a path inside the stateEnv path, relative, without '..'",
        );
    }
}

/// The install lines: Dockerfile instructions that install.
fn install(errors: &mut Errors, install: &[String]) {
    plan_args(errors, "spec.install", install);
    for (i, line) in install.iter().enumerate() {
        let instruction = line.split_whitespace().next().unwrap_or_default();
        if !crate::agent::INSTALL_INSTRUCTIONS
            .iter()
            .any(|ok| ok.eq_ignore_ascii_case(instruction))
        {
            errors.push(
                format!("spec.install[{i}]"),
                format!(
                    "expected a Dockerfile instruction that installs, one of {}, not {instruction:?}",
                    crate::agent::INSTALL_INSTRUCTIONS.join(", ")
                ),
            );
        }
    }
}

/// The version probe and the least versions each way of starting needs.
fn version_probe(errors: &mut Errors, version: &crate::agent::VersionRule) {
    if version.probe.first().is_none_or(String::is_empty) {
        errors.push(
            "spec.version.probe",
            "expected the argv that prints the version, e.g. [gemini, --version]",
        );
    }
    plan_args(errors, "spec.version.probe", &version.probe);
    let minimum = &version.minimum;
    for (at, value) in [
        ("mint", &minimum.mint),
        ("resume", &minimum.resume),
        ("continue", &minimum.r#continue),
    ] {
        if let Some(value) = value
            && crate::agent::parse_version(value).is_none()
        {
            errors.push(
                format!("spec.version.minimum.{at}"),
                format!("expected a version such as 0.41.0, not {value:?}"),
            );
        }
    }
}

/// The agent's own setting for how long it keeps conversations
/// (`spec.retention.setting`): a file under its state directory, and a key
/// in that file.
fn retention_setting(
    errors: &mut Errors,
    spec: &crate::agent::AgentSpec,
    setting: &crate::agent::RetentionSetting,
) {
    if spec
        .state_env
        .as_ref()
        .is_none_or(|state| state.kind != crate::agent::StateKind::Directory)
    {
        errors.push(
            "spec.retention.setting",
            "names a file under the agent's state directory: set spec.stateEnv to a \
             directory",
        );
    }
    let file = &setting.file;
    if file.is_empty()
        || file.starts_with('/')
        || file.split('/').any(|part| part == ".." || part.is_empty())
        || file.chars().any(char::is_control)
    {
        errors.push(
            "spec.retention.setting.file",
            "expected a file path relative to the stateEnv path, without '..'",
        );
    }
    if setting.key.split('.').any(str::is_empty) || setting.key.chars().any(char::is_control) {
        errors.push(
            "spec.retention.setting.key",
            "expected a key such as general.sessionRetention.maxAge",
        );
    }
}

/// `{at}.name` is a DNS label no earlier entry of the list (`seen`) has.
/// An entry's providers: names and variables as everywhere, the key a
/// reference as `spec.env` takes one, then what [`crate::provider`] asks.
fn providers(errors: &mut Errors, providers: &[crate::provider::AgentProvider]) {
    for (i, provider) in providers.iter().enumerate() {
        let at = format!("spec.providers[{i}]");
        errors.check(&format!("{at}.name"), dns_label(&provider.name));
        env(errors, &format!("{at}.env"), &provider.env);
        env(errors, &format!("{at}.models"), &provider.models);
        let mut key = Errors::default();
        env(&mut key, "key", provider.key.as_slice());
        for e in key.0 {
            errors.push(
                e.path.replacen("key[0]", &format!("{at}.key"), 1),
                e.message,
            );
        }
    }
    for (at, message) in crate::provider::list_problems(providers) {
        errors.push(at, message);
    }
}

fn unique_name<'a>(
    errors: &mut Errors,
    seen: &mut HashSet<&'a str>,
    at: &str,
    name: &'a str,
    what: &str,
) {
    errors.check(&format!("{at}.name"), dns_label(name));
    if !seen.insert(name) {
        errors.push(format!("{at}.name"), format!("duplicate {what} {name:?}"));
    }
}

/// Validates a Workspace; returns every broken rule.
pub fn workspace(obj: &Workspace) -> Result<(), Vec<FieldError>> {
    let mut errors = Errors::default();
    api_version(&mut errors, &obj.api_version);
    metadata(&mut errors, &obj.metadata);
    mounts(&mut errors, "spec.mounts", &obj.spec.mounts);
    ports(&mut errors, "spec.ports", &obj.spec.ports);
    if let Some(setup) = &obj.spec.setup {
        setup_command(&mut errors, setup);
    }
    roles(&mut errors, &obj.spec.roles);
    if let Some(engine) = &obj.spec.engine {
        errors.check("spec.engine", engine_ref(engine));
    }
    if let Some(provider) = &obj.spec.provider {
        errors.check("spec.provider", dns_label(provider));
    }
    if let Some(dir) = &obj.spec.working_dir {
        errors.check("spec.workingDir", working_dir(dir));
    }
    credential_sets(&mut errors, &obj.spec.credentials);
    if let Some(idle) = &obj.spec.idle {
        idle_hooks(&mut errors, idle);
    }
    if let Some(after) = &obj.spec.needs_you_after {
        errors.check("spec.needsYouAfter", duration(after).map(drop));
    }
    security(&mut errors, "spec.security", obj.spec.security.as_ref());
    if let Some(notify) = &obj.spec.notify {
        notify_command(&mut errors, notify);
    }
    errors.into_result()
}

/// The setup: a program to run, and a duration.
fn setup_command(errors: &mut Errors, setup: &crate::setup::SetupSpec) {
    if setup.command.first().is_none_or(String::is_empty) {
        errors.push(
            "spec.setup.command",
            "expected an argv whose first element names the program ([npm, ci])",
        );
    }
    plan_args(errors, "spec.setup.command", &setup.command);
    if let Some(timeout) = &setup.timeout {
        errors.check("spec.setup.timeout", duration(timeout).map(drop));
    }
}

/// Published ports: see [`crate::ports::problems`].
fn ports(errors: &mut Errors, at: &str, ports: &[crate::ports::PortSpec]) {
    for (field, problem) in crate::ports::problems(ports, at) {
        errors.push(field, problem);
    }
}

/// A workspace's roles: unique names, each built from a source or run
/// from an image.
fn roles(errors: &mut Errors, roles: &[crate::workspace::WorkspaceRole]) {
    let mut role_names = HashSet::new();
    for (i, role) in roles.iter().enumerate() {
        let at = format!("spec.roles[{i}]");
        unique_name(errors, &mut role_names, &at, &role.name, "role");
        match (&role.source, &role.image) {
            (Some(source), None) => {
                errors.check(&format!("{at}.source.git"), git_source(&source.git));
            }
            (None, Some(image)) => {
                errors.check(
                    &format!("{at}.image"),
                    argv_value(image, "an image reference"),
                );
            }
            _ => errors.push(
                at,
                "expected either source (a repository to build) or image (a local image)",
            ),
        }
    }
}

/// A workspace's credential sets: unique names, a reference only to a
/// built-in set, and their files and env.
fn credential_sets(errors: &mut Errors, sets: &[crate::credentials::CredentialSet]) {
    let mut set_names = HashSet::new();
    for (i, set) in sets.iter().enumerate() {
        let at = format!("spec.credentials[{i}]");
        unique_name(errors, &mut set_names, &at, &set.name, "credential set");
        if set.is_reference() && set.resolved().is_none() {
            let known: Vec<String> = crate::credentials::builtin_sets()
                .into_iter()
                .map(|s| s.name)
                .collect();
            errors.push(
                at.clone(),
                format!(
                    "no built-in credential set is named {:?} (built in: {}): name one, or give \
                     its files and env",
                    set.name,
                    known.join(", ")
                ),
            );
        }
        credentials(
            errors,
            &at,
            &set.files,
            &set.env,
            set.login.as_ref(),
            set.login_step.as_ref(),
        );
    }
}

/// The idle hooks: their durations, their commands, and something to do.
fn idle_hooks(errors: &mut Errors, idle: &crate::workspace::IdlePolicy) {
    for (field, value) in [
        ("after", Some(&idle.after)),
        ("every", idle.every.as_ref()),
        ("timeout", Some(&idle.timeout)),
    ] {
        if let Some(value) = value {
            errors.check(&format!("spec.idle.{field}"), duration(value).map(drop));
        }
    }
    idle_commands(errors, "spec.idle.commands", &idle.commands);
    if idle.enabled
        && idle.commands.is_empty()
        && idle.role_commands == RoleCommands::Skip
        && idle.then == IdleThen::None
    {
        errors.push(
            "spec.idle",
            "enabled with nothing to do: give commands, keep the role's, or set then",
        );
    }
}

/// The notify command (an absolute path or a name found on PATH) and its
/// durations.
fn notify_command(errors: &mut Errors, notify: &crate::workspace::NotifyPolicy) {
    // Run on the host as it is: a program, never a shell string.
    match notify.command.first().map(String::as_str) {
        None | Some("") => errors.push(
            "spec.notify.command",
            "expected an argv whose first element names the program",
        ),
        // A relative path would be looked up from wherever the
        // controller runs, which may be a directory an agent writes.
        Some(program) if program.contains('/') && !program.starts_with('/') => errors.push(
            "spec.notify.command[0]",
            "expected an absolute path (/usr/local/bin/notify) or a program name found on                  PATH (notify-send), not a relative path",
        ),
        Some(_) => {}
    }
    plan_args(errors, "spec.notify.command", &notify.command);
    for (field, value) in [
        ("timeout", &notify.timeout),
        ("minInterval", &notify.min_interval),
    ] {
        errors.check(&format!("spec.notify.{field}"), duration(value).map(drop));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::env::EnvSource;
    use crate::instance::{InstanceSpec, RoleRef};

    /// Every built-in entry is valid, and an install block, version rule
    /// or retention setting that could not work is refused at its field.
    #[test]
    fn agent_versions_and_retention_settings_are_checked() {
        for entry in crate::agent::builtin() {
            assert_eq!(agent(&entry), Ok(()), "{}", entry.metadata.name);
        }
        let mut gemini = crate::agent::builtin()
            .into_iter()
            .find(|a| a.metadata.name == "gemini")
            .unwrap();
        gemini.spec.install = vec!["FROM evil:latest".into(), "RUN npm i -g x".into()];
        let rule = gemini.spec.version.as_mut().unwrap();
        rule.minimum.mint = Some("new".into());
        rule.probe.clear();
        let setting = gemini
            .spec
            .retention
            .as_mut()
            .unwrap()
            .setting
            .as_mut()
            .unwrap();
        setting.file = "../outside.json".into();
        setting.key = "general..maxAge".into();
        let fields: Vec<String> = agent(&gemini)
            .unwrap_err()
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert_eq!(
            fields,
            [
                "spec.install[0]",
                "spec.version.probe",
                "spec.version.minimum.mint",
                "spec.retention.setting.file",
                "spec.retention.setting.key",
            ]
        );
        gemini.spec.state_env = None;
        gemini.spec.retention.as_mut().unwrap().setting = Some(Default::default());
        assert!(
            agent(&gemini)
                .unwrap_err()
                .iter()
                .any(|e| e.path == "spec.retention.setting")
        );
    }

    /// A workspace named `desk` with an empty spec.
    fn desk() -> Workspace {
        Workspace {
            api_version: API_VERSION.into(),
            kind: "Workspace".into(),
            metadata: ObjectMeta {
                name: "desk".into(),
                ..Default::default()
            },
            spec: Default::default(),
        }
    }

    fn sample() -> Instance {
        Instance {
            api_version: API_VERSION.into(),
            kind: "Instance".into(),
            metadata: ObjectMeta {
                name: "architect-1".into(),
                ..Default::default()
            },
            spec: InstanceSpec {
                role: RoleRef {
                    name: "the-architect".into(),
                    source: None,
                },
                agent: "claude".into(),
                image: Some("jackin/test:1".into()),
                ..Default::default()
            },
            status: None,
        }
    }

    #[test]
    fn a_workspace_notify_is_an_argv_with_durations() {
        use crate::workspace::NotifyPolicy;
        let mut ws = desk();
        ws.spec.needs_you_after = Some("45s".into());
        ws.spec.notify = Some(NotifyPolicy {
            command: vec!["/usr/bin/notify-send".into(), "jackin".into()],
            timeout: "10s".into(),
            min_interval: "1m".into(),
        });
        assert_eq!(workspace(&ws), Ok(()));
        ws.spec.needs_you_after = Some("soon".into());
        ws.spec.notify = Some(NotifyPolicy {
            command: vec![String::new(), "a\nb".into()],
            timeout: "0s".into(),
            min_interval: "1m".into(),
        });
        let paths: Vec<String> = workspace(&ws)
            .unwrap_err()
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert_eq!(
            paths,
            [
                "spec.needsYouAfter",
                "spec.notify.command",
                "spec.notify.command[1]",
                "spec.notify.timeout"
            ]
        );
        // A bare name is looked up on PATH; a relative path is refused.
        for (program, ok) in [
            ("notify-send", true),
            ("./notify.sh", false),
            ("bin/n", false),
        ] {
            ws.spec.needs_you_after = None;
            ws.spec.notify = Some(NotifyPolicy {
                command: vec![program.into()],
                timeout: "10s".into(),
                min_interval: "1m".into(),
            });
            let paths: Vec<String> = workspace(&ws)
                .err()
                .unwrap_or_default()
                .into_iter()
                .map(|e| e.path)
                .collect();
            let refused = paths == ["spec.notify.command[0]"];
            assert_eq!(refused, !ok, "{program}: {paths:?}");
        }
    }

    #[test]
    fn a_workspace_role_names_one_source_or_one_image() {
        use crate::workspace::WorkspaceRole;
        let role = |name: &str, git: Option<&str>, image: Option<&str>| WorkspaceRole {
            name: name.into(),
            source: git.map(|g| crate::instance::RoleSource {
                git: g.into(),
                git_ref: None,
            }),
            image: image.map(Into::into),
        };
        let mut ws = desk();
        ws.spec.roles = vec![
            role("a", Some("/src/a"), None),
            role("b", None, Some("b:1")),
        ];
        assert_eq!(workspace(&ws), Ok(()));
        ws.spec.roles = vec![
            role("a", Some("/src/a"), Some("a:1")),
            role("b", None, None),
            role("b", None, Some("ext::sh")),
        ];
        let paths: Vec<String> = workspace(&ws)
            .unwrap_err()
            .into_iter()
            .map(|e| e.path)
            .collect();
        assert_eq!(
            paths,
            ["spec.roles[0]", "spec.roles[1]", "spec.roles[2].name"]
        );
    }

    #[test]
    fn engines_are_contexts_or_addresses() {
        for good in [
            "unix:///var/run/docker.sock",
            "tcp://10.0.0.5:2376",
            "tcp://build-box.lan:2375",
            "tcp://[::1]:2376",
            "tcp://10.0.0.5:2376/",
            "build-box",
            "default",
        ] {
            assert_eq!(engine_ref(good), Ok(()), "{good}");
            if good.contains("://") {
                assert_eq!(engine_address(good), Ok(()), "{good}");
            }
        }
        for bad in ["http://x", "unix://", "-x", "a b", "ctx\u{1b}[2J", ""] {
            assert!(engine_ref(bad).is_err(), "{bad}");
        }
        let mut obj = sample();
        obj.spec.engine = Some("ssh://me@host".into());
        assert!(paths(&obj).is_empty());
        for good in [
            "ssh://me@host",
            "ssh://root@127.0.0.1:2222",
            "ssh://[::1]:22",
            "ssh://h/",
        ] {
            assert_eq!(engine_address(good), Ok(()), "{good}");
        }
        // What reaches `ssh` as its user, port or destination never passes
        // for an option.
        for (bad, says) in [
            ("ssh://-oProxyCommand=x", "invalid host"),
            ("ssh://-l@host", "invalid user"),
            ("ssh://me@-host", "invalid host"),
            ("ssh://@host", "invalid user"),
            ("ssh://me@host:0", "invalid port"),
            ("ssh://me@host:-p", "invalid port"),
            ("ssh://", "invalid host"),
        ] {
            let err = engine_address(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
    }

    /// F4: an address no engine can have is refused where it is written:
    /// a port out of range, no port, a relative or overlong socket path.
    #[test]
    fn f4_engine_addresses_are_checked_for_port_and_path() {
        for (bad, says) in [
            ("tcp://127.0.0.1:99999", "invalid port"),
            ("tcp://127.0.0.1:0", "invalid port"),
            ("tcp://127.0.0.1:", "invalid port"),
            ("tcp://127.0.0.1:x", "invalid port"),
            ("tcp://127.0.0.1", "no port"),
            ("tcp://:2376", "invalid host"),
            ("tcp://a_b:2376", "invalid host"),
            ("tcp://[zz]:2376", "invalid host"),
            ("unix://relative.sock", "absolute"),
            ("unix://docker.sock", "absolute"),
            (&format!("unix:///{}", "s".repeat(200)), "at most 107"),
        ] {
            let err = engine_address(bad).unwrap_err();
            assert!(err.contains(says), "{bad}: {err}");
        }
        let mut obj = sample();
        obj.spec.engine = Some("tcp://127.0.0.1:99999".into());
        assert_eq!(
            paths(&obj),
            Vec::<String>::new(),
            "a stored object stays readable"
        );
        let errors = operator_input(&obj.metadata, obj.spec.engine.as_deref()).unwrap_err();
        assert_eq!(errors[0].path, "spec.engine");
    }

    fn paths(obj: &Instance) -> Vec<String> {
        instance(obj)
            .err()
            .unwrap_or_default()
            .into_iter()
            .map(|e| e.path)
            .collect()
    }

    #[test]
    fn a_valid_instance_passes() {
        assert_eq!(instance(&sample()), Ok(()));
    }

    #[test]
    fn names_must_be_dns_labels() {
        for bad in ["../x", "X", "-a", "a-", "", "a_b", &"a".repeat(64)] {
            assert!(dns_label(bad).is_err(), "{bad:?} accepted");
        }
        for good in ["a", "architect-1", &"a".repeat(63)] {
            assert!(dns_label(good).is_ok(), "{good:?} rejected");
        }
        let mut obj = sample();
        obj.metadata.name = "../x".into();
        assert_eq!(paths(&obj), ["metadata.name"]);
    }

    #[test]
    fn mount_destinations_are_absolute_normalized_and_unique() {
        let mut obj = sample();
        let mount = |dst: &str| MountSpec {
            src: "/src".into(),
            dst: dst.into(),
            ..Default::default()
        };
        obj.spec.mounts = vec![
            mount("/w/app"),
            mount("relative"),
            mount("/w/../etc"),
            mount("/w/app/"),
            mount("/jackin/state"),
            mount("/"),
        ];
        assert_eq!(
            paths(&obj),
            [
                "spec.mounts[1].dst",
                "spec.mounts[2].dst",
                "spec.mounts[3].dst",
                "spec.mounts[4].dst",
                "spec.mounts[5].dst"
            ]
        );
    }

    /// A shared mount may not hold an isolated mount's repository, nor lie
    /// inside its `.git`, however it is spelled; beside it is fine.
    #[test]
    fn a_shared_mount_over_an_isolated_repository_is_refused() {
        let mount = |src: &str, dst: &str, isolation| MountSpec {
            src: src.into(),
            dst: dst.into(),
            isolation,
            ..Default::default()
        };
        let isolated = mount("/home/me/app", "/w/app", Isolation::Worktree);
        for (src, expected) in [
            ("/home/me", "holds the repository"),
            ("/home/me/app", "holds the repository"),
            ("/home/me/other/../app/", "holds the repository"),
            ("/", "holds the repository"),
            ("/home/me/app/.git/refs", "inside the .git"),
            ("/home/me/app/./.git", "inside the .git"),
        ] {
            let mut obj = sample();
            obj.spec.mounts = vec![isolated.clone(), mount(src, "/w/shared", Isolation::Shared)];
            let errors = instance(&obj).err().unwrap_or_default();
            let error = errors
                .iter()
                .find(|e| e.path == "spec.mounts[1].src")
                .unwrap_or_else(|| panic!("{src}: {errors:?}"));
            assert!(error.message.contains(expected), "{src}: {}", error.message);
        }
        let mut obj = sample();
        obj.spec.mounts = vec![
            isolated.clone(),
            mount("/home/me/./app/", "/w/again", Isolation::Worktree),
            mount("/home/me/app", "/w/clone", Isolation::Clone),
        ];
        assert_eq!(paths(&obj), ["spec.mounts[1].src"]);
        for beside in ["/home/me/app-data", "/home/me/app/src", "/srv"] {
            let mut obj = sample();
            obj.spec.mounts = vec![
                isolated.clone(),
                mount(beside, "/w/shared", Isolation::Shared),
            ];
            assert!(paths(&obj).is_empty(), "{beside}: {:?}", paths(&obj));
        }
    }

    /// Every spelling of a reserved or duplicate destination is caught,
    /// because each check runs on the normalized path.
    #[test]
    fn destinations_are_compared_normalized() {
        for (dst, expected) in [
            ("//jackin", "reserved"),
            ("//jackin/state", "reserved"),
            ("/jackin//bin", "reserved"),
            ("/home/agent", "reserved"),
            ("/home//agent/", "reserved"),
            ("/proc/self", "reserved"),
            ("//w", "normal form"),
            ("/w/./x", "'.' or '..'"),
            ("/w//../jackin", "'.' or '..'"),
            ("//", "over '/'"),
        ] {
            let err = mount_destination(dst).unwrap_err();
            assert!(err.contains(expected), "{dst}: {err}");
        }
        assert_eq!(mount_destination("/home/agentx").unwrap(), "/home/agentx");
        assert_eq!(normalize_path("//a//b/"), "/a/b");
    }

    #[test]
    fn sources_are_host_paths_not_relative_ones() {
        for src in ["-rf", "relative/dir", "./x", "../x", "~other/x", ""] {
            assert!(mount_source(src).is_err(), "{src:?} passed");
        }
        for src in ["/abs", "~", "~/src/app"] {
            assert_eq!(mount_source(src), Ok(()), "{src}");
        }
    }

    #[test]
    fn env_values_hold_no_nul_and_fit_the_kernel() {
        assert!(env_value("A", "a\0b").unwrap_err().contains("NUL"));
        let big = "x".repeat(MAX_VALUE_BYTES);
        assert!(env_value("A", &big).unwrap_err().contains("at most"));
        assert_eq!(env_value("A", "fine"), Ok(()));
    }

    #[test]
    fn git_transports_that_run_commands_are_refused() {
        for source in ["ext::sh -c touch% /tmp/pwned", "fd::3"] {
            assert!(git_source(source).unwrap_err().contains("transport"));
        }
        assert_eq!(git_source("https://example.org/r.git"), Ok(()));
        assert_eq!(git_source("/srv/roles/architect"), Ok(()));
    }

    #[test]
    fn env_references_must_be_well_formed() {
        let mut obj = sample();
        let from = |source: EnvSource| EnvVar {
            name: "TOKEN".into(),
            value: None,
            value_from: Some(source),
        };
        obj.spec.env = vec![
            EnvVar {
                name: "MODE".into(),
                value: Some("dev".into()),
                value_from: None,
            },
            from(EnvSource {
                one_password: Some("op://vault/item".into()),
                ..Default::default()
            }),
            EnvVar {
                name: "1BAD".into(),
                value: None,
                value_from: Some(EnvSource {
                    host_env: Some("GITHUB_TOKEN".into()),
                    file: Some("/x".into()),
                    ..Default::default()
                }),
            },
            EnvVar {
                name: "MODE".into(),
                value: None,
                value_from: None,
            },
        ];
        assert_eq!(
            paths(&obj),
            [
                "spec.env[1].valueFrom.onePassword",
                "spec.env[2].name",
                "spec.env[2].valueFrom",
                "spec.env[3].name",
                "spec.env[3]"
            ]
        );
        assert!(op_reference("op://vault/item/field").is_ok());
        assert!(op_reference("op://vault/item/section/field").is_ok());
    }

    #[test]
    fn a_build_source_or_an_image_is_required() {
        let mut obj = sample();
        obj.spec.image = None;
        assert_eq!(paths(&obj), ["spec.role.source"]);
    }

    #[test]
    fn values_that_reach_an_argv_cannot_look_like_options() {
        let mut obj = sample();
        obj.spec.image = Some("--privileged".into());
        obj.spec.role.source = Some(crate::instance::RoleSource {
            git: "-uhack".into(),
            git_ref: Some("main branch".into()),
        });
        assert_eq!(
            paths(&obj),
            ["spec.role.source.git", "spec.role.source.ref", "spec.image"]
        );
    }

    #[test]
    fn wrong_api_version_is_reported() {
        let mut obj = sample();
        obj.api_version = "v1".into();
        assert_eq!(paths(&obj), ["apiVersion"]);
    }

    #[test]
    fn every_builtin_agent_and_credential_set_is_valid() {
        for agent in crate::agent::builtin() {
            assert_eq!(super::agent(&agent), Ok(()), "{}", agent.metadata.name);
        }
        let mut ws = desk();
        ws.spec.credentials = crate::credentials::builtin_sets();
        assert_eq!(workspace(&ws), Ok(()));
    }

    /// The manifest shape: the mode on a workspace and an instance, sets by
    /// name or given, an agent's files and variables; a mode jackin does
    /// not know, or a misspelt field, is refused with its place.
    #[test]
    fn credentials_read_from_manifests() {
        use crate::credentials::AuthForward;
        let text = "apiVersion: jackin.dev/v1alpha1\nkind: Workspace\nmetadata: {name: desk}\n\
                    spec:\n  authForward: token\n  credentials:\n    - {name: gh}\n    - name: npm\n      \
                    files: [{src: .npmrc, dst: .npmrc}]\n---\n\
                    apiVersion: jackin.dev/v1alpha1\nkind: Instance\nmetadata: {name: a}\n\
                    spec:\n  role: {name: r}\n  agent: claude\n  image: x:1\n  authForward: none\n---\n\
                    apiVersion: jackin.dev/v1alpha1\nkind: Agent\nmetadata: {name: mine}\nspec:\n  \
                    launch: [mine]\n  credentials:\n    files: [{src: .mine/login, dst: .mine/login, secret: false}]\n    \
                    env: [{name: MINE_TOKEN, valueFrom: {file: /run/mine}}]\n    login: run mine login\n";
        let objects = crate::manifest::parse("m.yaml", text).expect("a valid manifest");
        let [
            crate::Object::Workspace(ws),
            crate::Object::Instance(obj),
            crate::Object::Agent(agent),
        ] = objects.as_slice()
        else {
            panic!("three objects: {objects:?}");
        };
        assert_eq!(ws.spec.auth_forward, Some(AuthForward::Token));
        assert!(ws.spec.credentials[0].is_reference());
        assert_eq!(ws.spec.credentials[1].files[0].src, ".npmrc");
        assert_eq!(obj.spec.auth_forward, Some(AuthForward::None));
        let creds = agent.spec.credentials.as_ref().unwrap();
        assert!(!creds.files[0].secret);
        assert_eq!(creds.env[0].name, "MINE_TOKEN");

        let bad_mode = text.replace("authForward: token", "authForward: copy");
        let errors = crate::manifest::parse("m.yaml", &bad_mode).unwrap_err();
        let text_of = |errors: &[crate::ManifestError]| {
            errors
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert!(
            text_of(&errors).contains("m.yaml:5:") && text_of(&errors).contains("sync"),
            "{}",
            text_of(&errors)
        );
        let misspelt = text.replace("authForward: none", "authforward: none");
        let errors = crate::manifest::parse("m.yaml", &misspelt).unwrap_err();
        assert!(
            text_of(&errors).contains("unknown field"),
            "{}",
            text_of(&errors)
        );
    }

    /// Credential places stay inside the two homes, and a credential is
    /// always a reference, never a value written in the manifest.
    #[test]
    fn credentials_stay_in_their_homes_and_are_references() {
        use crate::credentials::{CredentialFile, Credentials, host_env};
        let file = |src: &str, dst: &str| CredentialFile {
            src: src.into(),
            dst: dst.into(),
            keys: Vec::new(),
            secret: true,
        };
        let mut agent = crate::agent::builtin().remove(0);
        agent.spec.credentials = Some(Credentials {
            files: vec![
                file(".claude/.credentials.json", ".claude/.credentials.json"),
                file("/etc/shadow", "../outside"),
                file("~/.x", ".claude//x"),
                file("a/./b", ".claude/.credentials.json"),
                CredentialFile {
                    keys: vec!["k".into(), "k".into(), String::new()],
                    ..file(".claude.json", ".claude/.claude.json")
                },
            ],
            env: vec![
                host_env("CLAUDE_CODE_OAUTH_TOKEN"),
                EnvVar {
                    name: "ANTHROPIC_API_KEY".into(),
                    value: Some("sk-in-the-manifest".into()),
                    value_from: None,
                },
                host_env("CLAUDE_CODE_OAUTH_TOKEN"),
            ],
            login: Some("log in\u{1b}[2J".into()),
            login_step: Some(crate::credentials::LoginStep {
                command: vec!["x".into()],
                stdin: "NOT_A_VARIABLE_OF_THE_SET".into(),
                keeps: Some("../auth.json".into()),
            }),
        });
        let errors = super::agent(&agent).unwrap_err();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.credentials.files[1].src",
                "spec.credentials.files[1].dst",
                "spec.credentials.files[2].src",
                "spec.credentials.files[2].dst",
                "spec.credentials.files[3].src",
                "spec.credentials.files[3].dst",
                "spec.credentials.files[4].keys[1]",
                "spec.credentials.files[4].keys[2]",
                "spec.credentials.env[2].name",
                "spec.credentials.env[1].value",
                "spec.credentials.login",
                "spec.credentials.loginStep.stdin",
                "spec.credentials.loginStep.keeps",
            ]
        );
        let message = |path: &str| {
            errors
                .iter()
                .find(|e| e.path == path)
                .map(|e| e.message.clone())
                .unwrap()
        };
        assert!(
            message("spec.credentials.files[1].src").contains("not relative"),
            "{errors:?}"
        );
        assert!(
            message("spec.credentials.files[3].dst").contains("duplicate destination"),
            "{errors:?}"
        );
        assert!(
            message("spec.credentials.env[1].value").contains("valueFrom"),
            "{errors:?}"
        );
        assert!(
            !errors
                .iter()
                .any(|e| e.message.contains("sk-in-the-manifest")),
            "an error never repeats the value: {errors:?}"
        );
    }

    #[test]
    fn a_workspace_names_builtin_sets_or_gives_its_own() {
        use crate::credentials::{CredentialSet, host_env};
        let mut ws = desk();
        let named = |name: &str| CredentialSet {
            name: name.into(),
            ..Default::default()
        };
        ws.spec.credentials = vec![
            named("gh"),
            CredentialSet {
                env: vec![host_env("NPM_TOKEN")],
                ..named("npm")
            },
        ];
        assert_eq!(workspace(&ws), Ok(()));
        ws.spec.credentials = vec![named("gh"), named("gh"), named("nope"), named("Bad")];
        let errors = workspace(&ws).unwrap_err();
        let paths: Vec<&str> = errors.iter().map(|e| e.path.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.credentials[1].name",
                "spec.credentials[2]",
                "spec.credentials[3].name",
                "spec.credentials[3]",
            ]
        );
        assert!(
            errors[1].message.contains("built in: gh"),
            "{}",
            errors[1].message
        );
    }
}
