//! How restricted an agent's container runs.
//!
//! Every agent container jackin makes drops all capabilities and adds back
//! only what the agent needs as jackin runs it, may not gain privileges
//! through a setuid program or file capabilities, may run at most so many
//! processes, and keeps a bounded log. A role (its `jackin.role.yaml`) or a
//! workspace (`spec.security`) may widen each of these:
//!
//! ```yaml
//! security:
//!   capAdd: [NET_ADMIN]          # added to jackin's set
//!   noNewPrivileges: false       # lets sudo and other setuid programs work
//!   pidsLimit: 8192              # processes and threads (4096 when omitted)
//!   logs: {maxSize: 50m, maxFiles: 5}
//!   allowRole:                   # the workspace's only: what a role may widen
//!     capAdd: [SYS_PTRACE]       #   these capabilities, by name
//!     noNewPrivileges: true      #   and these fields
//! ```
//!
//! A role is code from a repository the operator names, often at a moving
//! ref: its widening takes effect only where the workspace allows it (field
//! by field, capabilities by name), and a pin that finds more is refused.
//! The widening is pinned with the recipe, printed at the pin, and shown by
//! `describe`.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// What the agent may run at once (processes and threads) when nothing
/// widens it: far more than any agent with its tools needs, far less than
/// a fork bomb takes to exhaust the host's process table.
pub const DEFAULT_PIDS_LIMIT: i64 = 4096;

/// The least `pidsLimit`: the init, the entry wrapper, the agent and the
/// helpers the wrapper starts (`tee`, `tail`) must fit.
pub const MIN_PIDS_LIMIT: i64 = 32;

/// One log file's largest size (the engine's json-file `max-size`) when
/// nothing widens it.
pub const DEFAULT_LOG_MAX_SIZE: &str = "10m";

/// How many log files the engine keeps (json-file `max-file`) when nothing
/// widens it: with the size above, 50 MiB of the agent's output.
pub const DEFAULT_LOG_MAX_FILES: u32 = 5;

/// The least `logs.maxSize`, in bytes. The overview's log pager reads the
/// last 4 MiB (2,000 lines) and the replay on attach a screenful; the file
/// before the current one must hold them just after a rotation.
pub const MIN_LOG_MAX_SIZE_BYTES: u64 = 4 << 20;

/// The least `logs.maxFiles`: with one file, a rotation empties the log and
/// the replay, the last line and `jackin logs` find nothing.
pub const MIN_LOG_MAX_FILES: u32 = 2;

/// What root in the image keeps: owning and reaching the files of the
/// image's other users (`CHOWN`, `DAC_OVERRIDE`, `FOWNER`) and dropping to
/// one of them (`SETUID`, `SETGID`), as package managers and entrypoints
/// that switch users do. The agent running as the operator gets none: its
/// files are its own.
pub const ROOT_CAPABILITIES: [&str; 5] = ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETUID", "SETGID"];

/// Capabilities the engine gives by default that jackin never adds back
/// unless a role or workspace asks: device nodes (defect M2), raw sockets,
/// `chroot`, the audit log, file capabilities.
pub const NEVER_BY_DEFAULT: [&str; 5] =
    ["MKNOD", "NET_RAW", "SYS_CHROOT", "AUDIT_WRITE", "SETFCAP"];

/// Every Linux capability, named as the engine names them (no `CAP_`).
pub const CAPABILITIES: [&str; 41] = [
    "CHOWN",
    "DAC_OVERRIDE",
    "DAC_READ_SEARCH",
    "FOWNER",
    "FSETID",
    "KILL",
    "SETGID",
    "SETUID",
    "SETPCAP",
    "LINUX_IMMUTABLE",
    "NET_BIND_SERVICE",
    "NET_BROADCAST",
    "NET_ADMIN",
    "NET_RAW",
    "IPC_LOCK",
    "IPC_OWNER",
    "SYS_MODULE",
    "SYS_RAWIO",
    "SYS_CHROOT",
    "SYS_PTRACE",
    "SYS_PACCT",
    "SYS_ADMIN",
    "SYS_BOOT",
    "SYS_NICE",
    "SYS_RESOURCE",
    "SYS_TIME",
    "SYS_TTY_CONFIG",
    "MKNOD",
    "LEASE",
    "AUDIT_WRITE",
    "AUDIT_CONTROL",
    "SETFCAP",
    "MAC_OVERRIDE",
    "MAC_ADMIN",
    "SYSLOG",
    "WAKE_ALARM",
    "BLOCK_SUSPEND",
    "AUDIT_READ",
    "PERFMON",
    "BPF",
    "CHECKPOINT_RESTORE",
];

/// A role's or a workspace's widening of the container's restrictions.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct SecuritySpec {
    /// Capabilities added to jackin's set, named as the engine names them
    /// (`NET_ADMIN`, no `CAP_`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cap_add: Vec<String>,
    /// `false` lets a setuid program (sudo) or a file capability raise
    /// privileges; `true` when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub no_new_privileges: Option<bool>,
    /// The most processes and threads the container may hold (4096 when
    /// omitted, at least 32).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pids_limit: Option<i64>,
    /// How much of the agent's output the engine keeps.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub logs: Option<LogLimits>,
    /// What the roles of the workspace's sessions may widen (a workspace's
    /// block only; a role's may not hold it). Nothing when omitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allow_role: Option<RoleAllowance>,
}

/// What a workspace lets a role's `security` widen: capabilities by name,
/// the other settings by field.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct RoleAllowance {
    /// The capabilities a role may add.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cap_add: Vec<String>,
    /// Whether a role may turn `noNewPrivileges` off.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub no_new_privileges: bool,
    /// Whether a role may set `pidsLimit`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub pids_limit: bool,
    /// Whether a role may set `logs`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub logs: bool,
}

impl RoleAllowance {
    /// What it allows, for `describe workspace`: `capAdd SYS_PTRACE;
    /// pidsLimit`; `None` when it allows nothing.
    pub fn summary(&self) -> Option<String> {
        let mut parts = Vec::new();
        if !self.cap_add.is_empty() {
            parts.push(format!("capAdd {}", self.cap_add.join(", ")));
        }
        for (allowed, field) in [
            (self.no_new_privileges, "noNewPrivileges"),
            (self.pids_limit, "pidsLimit"),
            (self.logs, "logs"),
        ] {
            if allowed {
                parts.push(field.to_owned());
            }
        }
        (!parts.is_empty()).then(|| parts.join("; "))
    }
}

/// What `role` widens that `allowed` does not let it, one item each
/// (`capAdd SYS_ADMIN`, `noNewPrivileges false`); empty when all of it is
/// allowed. `noNewPrivileges: true` is the default and needs no allowance.
pub fn unallowed(role: &SecuritySpec, allowed: Option<&RoleAllowance>) -> Vec<String> {
    let allowed = allowed.cloned().unwrap_or_default();
    let mut out: Vec<String> = role
        .cap_add
        .iter()
        .filter(|name| !allowed.cap_add.contains(name))
        .map(|name| format!("capAdd {name}"))
        .collect();
    if role.no_new_privileges == Some(false) && !allowed.no_new_privileges {
        out.push("noNewPrivileges false".to_owned());
    }
    if let Some(limit) = role.pids_limit.filter(|_| !allowed.pids_limit) {
        out.push(format!("pidsLimit {limit}"));
    }
    if role.logs.is_some() && !allowed.logs {
        out.push("logs".to_owned());
    }
    out
}

/// The `allowRole` block that would allow `unallowed`'s items, as YAML on
/// one line, for the hint of a refused pin.
pub fn allowance_for(role: &SecuritySpec) -> String {
    let mut parts = Vec::new();
    if !role.cap_add.is_empty() {
        parts.push(format!("capAdd: [{}]", role.cap_add.join(", ")));
    }
    if role.no_new_privileges == Some(false) {
        parts.push("noNewPrivileges: true".to_owned());
    }
    if role.pids_limit.is_some() {
        parts.push("pidsLimit: true".to_owned());
    }
    if role.logs.is_some() {
        parts.push("logs: true".to_owned());
    }
    format!("allowRole: {{{}}}", parts.join(", "))
}

impl SecuritySpec {
    /// Whether it widens nothing.
    pub fn is_empty(&self) -> bool {
        self == &Self::default()
    }
}

/// The engine's json-file log of the container: `maxFiles` files of at
/// most `maxSize` each, the oldest dropped first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct LogLimits {
    /// A number and a unit, `k`, `m` or `g` (`10m` when omitted, at least
    /// `4m`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_size: Option<String>,
    /// How many files (5 when omitted, at least 2).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_files: Option<u32>,
}

/// A role's widening and a workspace's, as a recipe pins them. The role's
/// is read at the pinned commit; the workspace's is compared with the
/// current spec (a change is drift, as any other container setting).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct PinnedSecurity {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub role: Option<SecuritySpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workspace: Option<SecuritySpec>,
}

/// What an agent's container runs with: the defaults, widened.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContainerProfile {
    /// Added back after dropping all, sorted.
    pub capabilities: Vec<String>,
    pub no_new_privileges: bool,
    pub pids_limit: i64,
    /// The engine's `max-size`, as written (`10m`).
    pub log_max_size: String,
    pub log_max_files: u32,
}

impl ContainerProfile {
    /// The profile of a container whose agent runs as the operator
    /// (`host_user`) or as the image's user, widened by the role's block
    /// and then the workspace's: capabilities add up, and for each other
    /// setting the workspace's word wins over the role's.
    pub fn new(host_user: bool, pinned: Option<&PinnedSecurity>) -> Self {
        let layers = [
            pinned.and_then(|p| p.role.as_ref()),
            pinned.and_then(|p| p.workspace.as_ref()),
        ];
        let mut capabilities: Vec<String> = match host_user {
            true => Vec::new(),
            false => ROOT_CAPABILITIES.map(str::to_owned).to_vec(),
        };
        capabilities.extend(layers.iter().flatten().flat_map(|s| s.cap_add.clone()));
        capabilities.sort();
        capabilities.dedup();
        let logs = |spec: &SecuritySpec| spec.logs.clone().unwrap_or_default();
        Self {
            capabilities,
            no_new_privileges: last(&layers, |s| s.no_new_privileges).unwrap_or(true),
            pids_limit: last(&layers, |s| s.pids_limit).unwrap_or(DEFAULT_PIDS_LIMIT),
            log_max_size: last(&layers, |s| logs(s).max_size)
                .unwrap_or_else(|| DEFAULT_LOG_MAX_SIZE.to_owned()),
            log_max_files: last(&layers, |s| logs(s).max_files).unwrap_or(DEFAULT_LOG_MAX_FILES),
        }
    }

    /// One line for `describe`: what the container runs with.
    pub fn summary(&self) -> String {
        let capabilities = match self.capabilities.as_slice() {
            [] => "no capabilities".to_owned(),
            names => format!("capabilities {} only", names.join(", ")),
        };
        let privileges = match self.no_new_privileges {
            true => "no-new-privileges",
            false => "new privileges allowed",
        };
        format!(
            "{capabilities}, {privileges}, at most {} processes, log {} × {}",
            self.pids_limit, self.log_max_files, self.log_max_size
        )
    }
}

/// The last layer's word on a setting: the workspace's over the role's.
fn last<T>(
    layers: &[Option<&SecuritySpec>; 2],
    pick: impl Fn(&SecuritySpec) -> Option<T>,
) -> Option<T> {
    layers.iter().rev().flatten().find_map(|spec| pick(spec))
}

/// What a pinned role and workspace widen, one item each with where it
/// comes from (`capAdd NET_ADMIN (role)`); empty when nothing is widened.
pub fn widenings(pinned: Option<&PinnedSecurity>) -> Vec<String> {
    let mut out = Vec::new();
    let sources = pinned
        .map(|p| {
            [
                ("role", p.role.as_ref()),
                ("workspace", p.workspace.as_ref()),
            ]
        })
        .unwrap_or_default();
    for (source, spec) in sources {
        let Some(spec) = spec else { continue };
        if !spec.cap_add.is_empty() {
            out.push(format!("capAdd {} ({source})", spec.cap_add.join(", ")));
        }
        if let Some(allowed) = spec.no_new_privileges {
            out.push(format!("noNewPrivileges {allowed} ({source})"));
        }
        if let Some(limit) = spec.pids_limit {
            out.push(format!("pidsLimit {limit} ({source})"));
        }
        let logs = spec.logs.clone().unwrap_or_default();
        if let Some(size) = logs.max_size {
            out.push(format!("logs.maxSize {size} ({source})"));
        }
        if let Some(files) = logs.max_files {
            out.push(format!("logs.maxFiles {files} ({source})"));
        }
    }
    out
}

/// The bytes a `maxSize` names: a positive number and `k`, `m` or `g`.
pub fn log_size_bytes(text: &str) -> Result<u64, String> {
    let expected = || format!("{text:?}: expected a number and k, m or g (10m, 1g)");
    let (number, unit) = text.split_at(text.len().saturating_sub(1));
    let scale: u64 = match unit {
        "k" => 1 << 10,
        "m" => 1 << 20,
        "g" => 1 << 30,
        _ => return Err(expected()),
    };
    if number.is_empty() || !number.bytes().all(|b| b.is_ascii_digit()) {
        return Err(expected());
    }
    number
        .parse::<u64>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(expected)
}

/// Each of `names` (the list at `field`) that is no capability, as
/// [`problems`] reports it.
fn unknown_capabilities(field: &str, names: &[String]) -> Vec<(String, String)> {
    names
        .iter()
        .enumerate()
        .filter(|(_, name)| !CAPABILITIES.contains(&name.as_str()))
        .map(|(i, name)| {
            (
                format!("{field}[{i}]"),
                format!(
                    "{name:?} is not a capability: name one as the engine does, without CAP_ \
                     (NET_ADMIN, SYS_PTRACE); ALL is refused, name each one needed"
                ),
            )
        })
        .collect()
}

/// The rules a widening breaks: each as a field path below the block
/// (`capAdd[1]`) and what is expected.
pub fn problems(spec: &SecuritySpec) -> Vec<(String, String)> {
    let allowed = spec.allow_role.clone().unwrap_or_default();
    let mut out = unknown_capabilities("capAdd", &spec.cap_add);
    out.extend(unknown_capabilities("allowRole.capAdd", &allowed.cap_add));
    if let Some(limit) = spec.pids_limit
        && limit < MIN_PIDS_LIMIT
    {
        out.push((
            "pidsLimit".to_owned(),
            format!(
                "{limit} is too few: the init, the entry wrapper and the agent need at least \
                 {MIN_PIDS_LIMIT}"
            ),
        ));
    }
    let logs = spec.logs.clone().unwrap_or_default();
    if let Some(size) = &logs.max_size {
        match log_size_bytes(size) {
            Err(message) => out.push(("logs.maxSize".to_owned(), message)),
            Ok(bytes) if bytes < MIN_LOG_MAX_SIZE_BYTES => out.push((
                "logs.maxSize".to_owned(),
                format!(
                    "{size} is too small: the overview's log pager reads the last 4 MiB, so a \
                     file must hold at least 4m"
                ),
            )),
            Ok(_) => {}
        }
    }
    if let Some(files) = logs.max_files
        && files < MIN_LOG_MAX_FILES
    {
        out.push((
            "logs.maxFiles".to_owned(),
            format!(
                "{files} is too few: with one file a rotation empties the log the replay reads; \
                 keep at least {MIN_LOG_MAX_FILES}"
            ),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn widened(role: Option<SecuritySpec>, workspace: Option<SecuritySpec>) -> PinnedSecurity {
        PinnedSecurity { role, workspace }
    }

    #[test]
    fn the_defaults_drop_every_capability_but_roots_own_and_never_the_dangerous_ones() {
        let as_operator = ContainerProfile::new(true, None);
        assert_eq!(as_operator.capabilities, Vec::<String>::new());
        assert!(as_operator.no_new_privileges);
        assert_eq!(as_operator.pids_limit, DEFAULT_PIDS_LIMIT);
        assert_eq!(
            (as_operator.log_max_size.as_str(), as_operator.log_max_files),
            (DEFAULT_LOG_MAX_SIZE, DEFAULT_LOG_MAX_FILES)
        );
        let as_root = ContainerProfile::new(false, None);
        assert_eq!(
            as_root.capabilities,
            ["CHOWN", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID"]
        );
        for name in NEVER_BY_DEFAULT {
            assert!(CAPABILITIES.contains(&name), "{name}");
            assert!(!as_root.capabilities.iter().any(|c| c == name), "{name}");
        }
    }

    #[test]
    fn a_workspace_widens_after_the_role_and_capabilities_add_up() {
        let role = SecuritySpec {
            cap_add: vec!["NET_ADMIN".into(), "CHOWN".into()],
            pids_limit: Some(64),
            logs: Some(LogLimits {
                max_size: Some("8m".into()),
                max_files: None,
            }),
            ..Default::default()
        };
        let workspace = SecuritySpec {
            cap_add: vec!["SYS_PTRACE".into()],
            no_new_privileges: Some(false),
            pids_limit: Some(8192),
            ..Default::default()
        };
        let pinned = widened(Some(role.clone()), Some(workspace));
        let profile = ContainerProfile::new(true, Some(&pinned));
        assert_eq!(profile.capabilities, ["CHOWN", "NET_ADMIN", "SYS_PTRACE"]);
        assert!(!profile.no_new_privileges);
        assert_eq!(profile.pids_limit, 8192);
        assert_eq!(profile.log_max_size, "8m");
        assert_eq!(profile.log_max_files, DEFAULT_LOG_MAX_FILES);
        let role_only = ContainerProfile::new(false, Some(&widened(Some(role), None)));
        assert_eq!(role_only.pids_limit, 64);
        assert!(role_only.no_new_privileges);
        assert_eq!(
            widenings(Some(&pinned)),
            [
                "capAdd NET_ADMIN, CHOWN (role)",
                "pidsLimit 64 (role)",
                "logs.maxSize 8m (role)",
                "capAdd SYS_PTRACE (workspace)",
                "noNewPrivileges false (workspace)",
                "pidsLimit 8192 (workspace)",
            ]
        );
        assert_eq!(widenings(None), Vec::<String>::new());
        assert_eq!(
            profile.summary(),
            "capabilities CHOWN, NET_ADMIN, SYS_PTRACE only, new privileges allowed, at most \
             8192 processes, log 5 × 8m"
        );
    }

    #[test]
    fn a_widening_names_real_capabilities_and_sane_limits() {
        let spec = SecuritySpec {
            cap_add: vec!["NET_ADMIN".into(), "ALL".into(), "CAP_CHOWN".into()],
            pids_limit: Some(4),
            logs: Some(LogLimits {
                max_size: Some("1m".into()),
                max_files: Some(1),
            }),
            ..Default::default()
        };
        let fields: Vec<String> = problems(&spec).into_iter().map(|(f, _)| f).collect();
        assert_eq!(
            fields,
            [
                "capAdd[1]",
                "capAdd[2]",
                "pidsLimit",
                "logs.maxSize",
                "logs.maxFiles"
            ]
        );
        assert_eq!(log_size_bytes("10m"), Ok(10 << 20));
        assert_eq!(log_size_bytes("2g"), Ok(2 << 30));
        for bad in ["", "m", "10", "10M", "-1m", "1.5m", "99999999999999999999g"] {
            assert!(log_size_bytes(bad).is_err(), "{bad:?}");
        }
        assert_eq!(problems(&SecuritySpec::default()), Vec::new());
    }

    #[test]
    fn a_role_widens_only_what_the_workspace_allows_by_name_and_by_field() {
        let role = SecuritySpec {
            cap_add: vec!["SYS_ADMIN".into(), "SYS_PTRACE".into()],
            no_new_privileges: Some(false),
            pids_limit: Some(64),
            logs: Some(LogLimits::default()),
            ..Default::default()
        };
        assert_eq!(
            unallowed(&role, None),
            [
                "capAdd SYS_ADMIN",
                "capAdd SYS_PTRACE",
                "noNewPrivileges false",
                "pidsLimit 64",
                "logs"
            ]
        );
        let some = RoleAllowance {
            cap_add: vec!["SYS_PTRACE".into()],
            pids_limit: true,
            ..Default::default()
        };
        assert_eq!(
            some.summary().as_deref(),
            Some("capAdd SYS_PTRACE; pidsLimit")
        );
        assert_eq!(RoleAllowance::default().summary(), None);
        assert_eq!(
            unallowed(&role, Some(&some)),
            ["capAdd SYS_ADMIN", "noNewPrivileges false", "logs"]
        );
        assert_eq!(
            allowance_for(&role),
            "allowRole: {capAdd: [SYS_ADMIN, SYS_PTRACE], noNewPrivileges: true, pidsLimit: true, \
             logs: true}"
        );
        // Keeping no-new-privileges on is the default: nothing to allow.
        let narrowing = SecuritySpec {
            no_new_privileges: Some(true),
            ..Default::default()
        };
        assert_eq!(unallowed(&narrowing, None), Vec::<String>::new());
        // The allowance widens nothing by itself, and names real capabilities.
        let allowing = SecuritySpec {
            allow_role: Some(RoleAllowance {
                cap_add: vec!["CAP_SYS_ADMIN".into()],
                ..Default::default()
            }),
            ..Default::default()
        };
        assert_eq!(
            ContainerProfile::new(true, None),
            ContainerProfile::new(true, Some(&widened(None, Some(allowing.clone()))))
        );
        let fields: Vec<String> = problems(&allowing).into_iter().map(|(f, _)| f).collect();
        assert_eq!(fields, ["allowRole.capAdd[0]"]);
    }
}
