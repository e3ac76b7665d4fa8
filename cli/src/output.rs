//! Rendering objects for people (tables, describe) and scripts (YAML, JSON).
//! An instance's description is `describe`'s; what is made of text jackin
//! did not write before it reaches a terminal, `terminal_filter`'s.

use std::collections::HashMap;
use std::fmt::Write;

use anyhow::Result;
use jackin_api::credentials::AuthForward;
use jackin_api::instance::{
    IdleStatus, InstancePhase, InstanceStatus, MountStatus, OutcomeSource, SessionOutcome,
};
use jackin_api::meta::{ConditionStatus, find_condition};
use jackin_api::names::{condition, reason};
use jackin_api::security::PinnedSecurity;
use jackin_api::{Agent, DesiredPhase, Instance, Workspace};
use jackin_controller::DryRun;
use jackin_controller::attention::Look;
use jackin_controller::keep_cap::Capped;
use jackin_controller::objects::AgentSource;
use jackin_controller::session::REASON_OOM;
use jackin_controller::source::SourceRecord;
use jiff::Timestamp;
use serde::Serialize;

mod conversation;
pub mod describe;
mod terminal_filter;

pub use terminal_filter::{terminal_safe, terminal_safe_lines};

/// A multi-document YAML stream: re-applying it changes nothing.
pub fn yaml_stream<T: Serialize>(objects: &[T]) -> Result<String> {
    let mut out = String::new();
    for (i, obj) in objects.iter().enumerate() {
        if i > 0 {
            out.push_str("---\n");
        }
        out.push_str(&serde_saphyr::to_string(obj)?);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    Ok(out)
}

/// One object as itself, several as a Kubernetes-style `List`.
pub fn json<T: Serialize>(objects: &[T], single: bool) -> Result<String> {
    let value = if single && objects.len() == 1 {
        serde_json::to_value(&objects[0])?
    } else {
        serde_json::json!({"apiVersion": "v1", "kind": "List", "items": objects})
    };
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// `5s`, `3m`, `2h`, `4d`, as `kubectl` shows ages.
pub fn age(since: Option<Timestamp>, now: Timestamp) -> String {
    let Some(since) = since else {
        return "-".into();
    };
    let secs = (now.as_second() - since.as_second()).max(0);
    match secs {
        s if s < 120 => format!("{s}s"),
        s if s < 2 * 3600 => format!("{}m", s / 60),
        s if s < 2 * 86400 => format!("{}h", s / 3600),
        s => format!("{}d", s / 86400),
    }
}

/// Left-aligned columns separated by three spaces.
pub fn table(header: &[&str], rows: &[Vec<String>]) -> String {
    table_in(&mut Vec::new(), header, rows)
}

/// As [`table`], in `widths`: empty, they are measured from this table
/// and kept; measured before, they are kept as they are, so that the rows
/// of a later table line up under the header of the first (a watch prints
/// the header once, then rows as they change). Only a cell wider than its
/// column then pushes the rest of its own row right.
pub fn table_in(widths: &mut Vec<usize>, header: &[&str], rows: &[Vec<String>]) -> String {
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|row| row.iter().map(|cell| terminal_safe(cell)).collect())
        .collect();
    let rows = &rows;
    if widths.is_empty() {
        widths.extend(header.iter().map(|h| h.len()));
        for row in rows {
            for (w, cell) in widths.iter_mut().zip(row) {
                *w = (*w).max(cell.chars().count());
            }
        }
    }
    let widths: &[usize] = widths;
    let mut out = String::new();
    let mut line = |cells: Vec<&str>| {
        let mut text = String::new();
        for (i, (cell, w)) in cells.iter().zip(widths).enumerate() {
            if i + 1 == cells.len() {
                text.push_str(cell);
            } else {
                let _ = write!(text, "{cell:<w$}   ");
            }
        }
        out.push_str(text.trim_end());
        out.push('\n');
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
    out
}

fn or_dash(value: Option<impl ToString>) -> String {
    value.map_or_else(|| "-".into(), |v| v.to_string())
}

/// The instances, a row each. With `attention` (what a look found, by
/// name), a wide table ends with each one's attention.
pub fn instance_table(
    objects: &[Instance],
    wide: bool,
    now: Timestamp,
    attention: Option<&HashMap<String, Look>>,
) -> String {
    instance_table_in(&mut Vec::new(), objects, wide, now, attention)
}

/// As [`instance_table`], in the column widths of an earlier one (see
/// [`table_in`]).
pub fn instance_table_in(
    widths: &mut Vec<usize>,
    objects: &[Instance],
    wide: bool,
    now: Timestamp,
    attention: Option<&HashMap<String, Look>>,
) -> String {
    let mut header = vec!["NAME", "DESIRED", "PHASE", "RESTORE", "AGE"];
    if wide {
        header.extend([
            "CONTAINER",
            "WORKSPACE",
            "ROLE",
            "AGENT",
            "ENGINE",
            "READY",
            "SESSION",
            "IDLE-CLEANUP",
            "WORK",
            "PORTS",
        ]);
        if attention.is_some() {
            header.push("ATTENTION");
        }
    }
    let rows: Vec<Vec<String>> = objects
        .iter()
        .map(|obj| {
            let status = obj.status_or_default();
            let mut row = vec![
                obj.metadata.name.clone(),
                obj.desired_phase().to_string(),
                phase_shown(&status),
                or_dash(status.restore.as_ref().map(|r| format!("tier {}", r.tier))),
                age(obj.metadata.creation_timestamp, now),
            ];
            if wide {
                let ready = find_condition(&status.conditions, condition::READY);
                row.extend([
                    or_dash(status.container_name.as_ref()),
                    or_dash(obj.spec.workspace.as_ref()),
                    obj.spec.role.name.clone(),
                    obj.spec.agent.clone(),
                    engine_shown(obj),
                    or_dash(ready.map(|c| c.reason.clone())),
                    or_dash(
                        status
                            .session
                            .as_ref()
                            .map(|s| session_summary(s, status.phase)),
                    ),
                    or_dash(
                        status
                            .idle
                            .as_ref()
                            .and_then(|i| i.last_run)
                            .map(|at| format!("{} ago", age(Some(at), now))),
                    ),
                    // Only an instance with isolated checkouts has work
                    // of its own.
                    match status.mounts.is_empty() {
                        true => "-".to_owned(),
                        false => work_summary(obj),
                    },
                    ports_shown(obj),
                ]);
                if let Some(looks) = attention {
                    row.push(or_dash(
                        looks
                            .get(&obj.metadata.name)
                            .and_then(|look| look.attention),
                    ));
                }
            }
            row
        })
        .collect();
    table_in(widths, &header, &rows)
}

/// The PORTS cell: each published port where it is reached,
/// `web=127.0.0.1:40013` (on an engine of another machine, that machine's:
/// see [`jackin_api::ports::PublishedPort::reached`]).
pub fn ports_shown(obj: &Instance) -> String {
    let status = obj.status_or_default();
    if status.ports.is_empty() {
        return "-".to_owned();
    }
    let host = jackin_api::ports::engine_host(obj.recipe().and_then(|r| r.engine.as_deref()));
    status
        .ports
        .iter()
        .map(|p| format!("{}={}", p.name, p.reached(host)))
        .collect::<Vec<_>>()
        .join(",")
}

/// The PHASE cell: the phase, but for a `Running` one whose container is
/// not running now, why it is not ([`not_running`]), as kubectl's STATUS
/// shows a pod's.
pub fn phase_shown(status: &InstanceStatus) -> String {
    match not_running(status) {
        Some(reason) => reason.to_owned(),
        None => or_dash(status.phase),
    }
}

/// Why a `Running` instance's container is not running now (removed or
/// stopped behind jackin's back, or its engine not answering): its `Ready`
/// reason; `None` for any other.
pub fn not_running(status: &InstanceStatus) -> Option<&str> {
    let ready = find_condition(&status.conditions, condition::READY)?;
    let why = [
        reason::CONTAINER_MISSING,
        reason::ENGINE_RESTARTED,
        reason::ENGINE_UNREACHABLE,
        reason::SESSION_ENDED,
    ];
    (status.phase == Some(InstancePhase::Running)
        && ready.status == ConditionStatus::False
        && why.contains(&ready.reason.as_str()))
    .then_some(ready.reason.as_str())
}

/// The engine an instance runs on: the pinned one, else the one its spec
/// names (a workspace's shows once pinned), else `default`.
fn engine_shown(obj: &Instance) -> String {
    let pinned = obj.recipe();
    let engine = match pinned {
        Some(recipe) => recipe.engine.as_deref(),
        None => obj.spec.engine.as_deref(),
    };
    terminal_safe(jackin_controller::engines::display_name(engine))
}

pub fn workspace_table(objects: &[Workspace], now: Timestamp) -> String {
    let rows: Vec<Vec<String>> = objects
        .iter()
        .map(|ws| {
            vec![
                ws.metadata.name.clone(),
                ws.spec.exit_policy.as_str().to_owned(),
                or_dash(ws.spec.keep.max),
                ws.spec.mounts.len().to_string(),
                age(ws.metadata.creation_timestamp, now),
            ]
        })
        .collect();
    table(&["NAME", "EXIT-POLICY", "KEEP-MAX", "MOUNTS", "AGE"], &rows)
}

/// The agents: where each entry comes from, what it launches and how it
/// resumes a conversation.
pub fn agent_table(agents: &[(Agent, AgentSource)]) -> String {
    let rows: Vec<Vec<String>> = agents
        .iter()
        .map(|(agent, source)| {
            let spec = &agent.spec;
            let launch = match spec.launch.is_empty() {
                true => "(the image's command)".to_owned(),
                false => terminal_safe(&spec.launch.join(" ")),
            };
            let resume = spec.strategies();
            vec![
                agent.metadata.name.clone(),
                source.as_str().to_owned(),
                launch,
                match resume.is_empty() {
                    true => "none".to_owned(),
                    false => resume
                        .iter()
                        .map(|s| s.as_str())
                        .collect::<Vec<_>>()
                        .join(", "),
                },
                or_dash(spec.state_env.as_ref().map(|s| s.name.clone())),
            ]
        })
        .collect();
    table(&["NAME", "SOURCE", "LAUNCH", "RESUME", "STATE-ENV"], &rows)
}

/// The sources: what each last applied, and why its last attempt changed
/// nothing, if it did not. The error's first line names the file, line and
/// column; `wide` shows every line of it.
pub fn source_table(records: &[SourceRecord], wide: bool, now: Timestamp) -> String {
    let rows: Vec<Vec<String>> = records
        .iter()
        .map(|r| {
            let error = match &r.error {
                None => "-".to_owned(),
                Some(e) if wide => terminal_safe(&e.replace('\n', " | ")),
                Some(e) => {
                    let first = terminal_safe(e.lines().next().unwrap_or_default());
                    match e.lines().count() {
                        1 => first,
                        n => format!("{first} (+{} more)", n - 1),
                    }
                }
            };
            vec![
                r.id.clone(),
                terminal_safe(
                    &r.paths
                        .iter()
                        .map(|p| p.display().to_string())
                        .collect::<Vec<_>>()
                        .join(","),
                ),
                or_dash(r.revision.as_ref().map(|rev| short_revision(rev))),
                r.applied_at.map_or_else(
                    || "never".to_owned(),
                    |at| format!("{} ago", age(Some(at), now)),
                ),
                r.objects.to_string(),
                error,
            ]
        })
        .collect();
    table(
        &["SOURCE", "PATHS", "REVISION", "APPLIED", "OBJECTS", "ERROR"],
        &rows,
    )
}

/// A commit as people read it: 12 hex digits, and `+dirty` when so.
fn short_revision(revision: &str) -> String {
    let (commit, dirty) = match revision.strip_suffix("+dirty") {
        Some(commit) => (commit, "+dirty"),
        None => (revision, ""),
    };
    format!("{}{dirty}", commit.get(..12).unwrap_or(commit))
}

/// When an object was created, and how long ago.
fn created(meta: &jackin_api::ObjectMeta, now: Timestamp) -> String {
    format!(
        "{} ({} ago)",
        or_dash(meta.creation_timestamp),
        age(meta.creation_timestamp, now)
    )
}

/// A workspace for people: its policy, its mounts, its instances.
pub fn describe_workspace(ws: &Workspace, members: &[Instance], now: Timestamp) -> String {
    let mut out = String::new();
    let mut field = |key: &str, value: String| {
        let _ = writeln!(out, "{:<18}{value}", format!("{key}:"));
    };
    field("Name", ws.metadata.name.clone());
    field("Created", created(&ws.metadata, now));
    field("Generation", or_dash(ws.metadata.generation));
    field(
        "Source",
        or_dash(ws.metadata.labels.get(jackin_api::names::label::SOURCE)),
    );
    field("Exit policy", ws.spec.exit_policy.as_str().to_owned());
    field(
        "Auth forward",
        match ws.spec.auth_forward {
            Some(mode) => mode.to_string(),
            None => format!("{} (the default)", AuthForward::default()),
        },
    );
    if !ws.spec.credentials.is_empty() {
        let sets: Vec<String> = ws
            .spec
            .credentials
            .iter()
            .map(|set| match set.is_reference() {
                true => format!("{} (built in)", set.name),
                false => set.name.clone(),
            })
            .collect();
        field("Credentials", sets.join(", "));
    }
    field(
        "Keep max",
        ws.spec
            .keep
            .max
            .map_or_else(|| "unbounded".to_owned(), |m| m.to_string()),
    );
    if let Some(idle) = &ws.spec.idle {
        let state = if idle.enabled { "on" } else { "off" };
        let role = match idle.role_commands {
            jackin_api::workspace::RoleCommands::Run => "the role's, then ",
            jackin_api::workspace::RoleCommands::Skip => "",
        };
        field(
            "Idle hooks",
            format!(
                "{state}: after {} idle, again every {}, each command at most {}; runs {role}{} \
                 command(s); then {}",
                idle.after,
                idle.every.as_deref().unwrap_or(&idle.after),
                idle.timeout,
                idle.commands.len(),
                idle.then.as_str()
            ),
        );
    }
    let widened = jackin_api::security::widenings(Some(&PinnedSecurity {
        role: None,
        workspace: ws.spec.security.clone(),
    }));
    if !widened.is_empty() {
        field("Security", format!("widens {}", widened.join("; ")));
    }
    let allowance = ws
        .spec
        .security
        .as_ref()
        .and_then(|s| s.allow_role.as_ref());
    if let Some(allowed) = allowance.and_then(|a| a.summary()) {
        field("Roles may widen", allowed);
    }
    for (key, value) in crate::workspace_policy::fields(&ws.spec) {
        field(key, terminal_safe(&value));
    }
    out.push_str(&terminal_safe_lines(&crate::workspace_policy::roles(
        &ws.spec.roles,
    )));
    if !ws.spec.mounts.is_empty() {
        out.push_str("Mounts:\n");
        out.push_str(&mount_lines(&ws.spec.mounts));
    }
    out.push_str("Instances:\n");
    if members.is_empty() {
        out.push_str("  (none)\n");
    } else {
        out.push_str(&instance_table(members, false, now, None));
    }
    out
}

/// An agent entry in detail: where it comes from, how it starts and
/// resumes, what logs it in, the instances that name it, and the entry
/// itself as YAML (what `get agent NAME -o yaml` prints).
pub fn describe_agent(
    agent: &Agent,
    source: AgentSource,
    users: &[Instance],
    now: Timestamp,
) -> Result<String> {
    let spec = &agent.spec;
    let mut out = String::new();
    let mut field = |key: &str, value: String| {
        let _ = writeln!(out, "{:<18}{value}", format!("{key}:"));
    };
    field("Name", agent.metadata.name.clone());
    field("Source", source.as_str().to_owned());
    field(
        "Launch",
        match spec.launch.is_empty() {
            true => "(the image's command)".to_owned(),
            false => terminal_safe(&spec.launch.join(" ")),
        },
    );
    let strategies: Vec<&str> = spec.strategies().iter().map(|s| s.as_str()).collect();
    field(
        "Resume",
        match strategies.is_empty() {
            true => "none: every start is new".to_owned(),
            false => strategies.join(", "),
        },
    );
    field(
        "State env",
        or_dash(
            spec.state_env
                .as_ref()
                .map(|s| format!("{}=~/{}", s.name, terminal_safe(&s.path))),
        ),
    );
    if let Some(credentials) = &spec.credentials {
        let files: Vec<String> = credentials
            .files
            .iter()
            .map(|f| terminal_safe(&format!("~/{}", f.src)))
            .collect();
        let env: Vec<String> = credentials.env.iter().map(|v| v.name.clone()).collect();
        field(
            "Credentials",
            format!(
                "files {}; variables {}",
                or_dash((!files.is_empty()).then(|| files.join(", "))),
                or_dash((!env.is_empty()).then(|| env.join(", ")))
            ),
        );
    }
    out.push_str("Instances:\n");
    if users.is_empty() {
        out.push_str("  (none)\n");
    } else {
        out.push_str(&instance_table(users, false, now, None));
    }
    out.push_str("Entry:\n");
    let mut printable = agent.clone();
    printable.metadata.hide_reserved_names();
    for line in yaml_stream(std::slice::from_ref(&printable))?.lines() {
        let _ = writeln!(out, "  {}", terminal_safe(line));
    }
    Ok(out)
}

/// One line per agent setting of the last start: its name, what became of
/// it, and where (or why not). The file and the reason may name what the
/// agent wrote: shown escaped.
fn agent_settings_lines(applied: &[jackin_api::agent_settings::AppliedSetting]) -> String {
    let mut out = String::new();
    for setting in applied {
        let place = format!("{} {} = {}", setting.file, setting.key, setting.value);
        let why = setting
            .reason
            .as_ref()
            .map(|r| format!(" ({r})"))
            .unwrap_or_default();
        let _ = writeln!(
            out,
            "  {:<10} {:<11} {}",
            terminal_safe(&setting.name),
            setting.outcome.as_str(),
            terminal_safe(&format!("{place}{why}"))
        );
    }
    out
}

/// The idle hooks' timer and history: the stretch, the last run and its
/// result (each command's outcome is an `IdleHook` event).
pub fn idle_summary(idle: &IdleStatus, now: Timestamp) -> String {
    let stretch = match idle.since {
        Some(since) => format!("idle for {}", age(Some(since), now)),
        None => "active".to_owned(),
    };
    let runs = match (idle.last_run, idle.runs) {
        (None, _) | (_, 0) => "; the hooks have not run".to_owned(),
        (Some(at), runs) => format!(
            "; the hooks ran {runs} time(s), last {} ago: {}",
            age(Some(at), now),
            terminal_safe(idle.last_result.as_deref().unwrap_or("-"))
        ),
    };
    format!("{stretch}{runs}")
}

/// The evidence of isolated checkouts, for people: each mount with its
/// uncommitted files and unsafe branches.
pub fn mounts_evidence(mounts: &[MountStatus]) -> String {
    let mut out = String::new();
    for m in mounts {
        let (dst, path) = (terminal_safe(&m.dst), terminal_safe(&m.path));
        let _ = writeln!(out, "  {:<9}{dst}  ({path})", m.isolation.as_str());
        if m.dirty_files.is_empty() && m.unpushed_branches.is_empty() {
            let _ = writeln!(out, "    clean");
        }
        if !m.dirty_files.is_empty() {
            let files = dirty_file_count(m);
            let _ = writeln!(
                out,
                "    uncommitted   {files} {}",
                plural(files, "file", "files")
            );
            for f in &m.dirty_files {
                let _ = writeln!(out, "      {}", terminal_safe(f));
            }
        }
        if !m.unpushed_branches.is_empty() {
            let branches = m.unpushed_branches.len();
            let _ = writeln!(
                out,
                "    unpushed      {branches} {}",
                plural(branches, "branch", "branches")
            );
            for b in &m.unpushed_branches {
                let _ = writeln!(out, "      {}", terminal_safe(b));
            }
        }
        if !m.included.is_empty() {
            let files: Vec<String> = m.included.iter().map(|f| terminal_safe(f)).collect();
            let _ = writeln!(
                out,
                "    included      {} (copied from the source when the checkout was made; \
                 unchanged, they are not unfinished work)",
                files.join(", ")
            );
        }
        for left in &m.not_included {
            let _ = writeln!(out, "    not included  {}", terminal_safe(left));
        }
        if let Some(entry) = &m.left_entry {
            let entry = terminal_safe(entry);
            let _ = writeln!(
                out,
                "    left entry    {entry}: an earlier jackin's worktree entry in the host \
                 repository that no longer names this checkout; delete it by hand \
                 (rm -rf -- {entry})"
            );
        }
    }
    out
}

/// Mounts as `describe` lists them: source, destination, isolation.
fn mount_lines(mounts: &[jackin_api::instance::MountSpec]) -> String {
    let mut out = String::new();
    for m in mounts {
        let ro = if m.readonly { ", read-only" } else { "" };
        let (src, dst) = (terminal_safe(&m.src), terminal_safe(&m.dst));
        let _ = writeln!(out, "  {src} -> {dst} ({}{ro})", m.isolation.as_str());
    }
    out
}

/// "clean", or what unfinished work the checkouts hold, as their
/// assessment in the status (or a newer one put there) says: the WORK
/// column of `top` and `get -o wide`, and screen C.
pub fn work_summary(obj: &Instance) -> String {
    let mounts = obj
        .status
        .as_ref()
        .map(|s| s.mounts.as_slice())
        .unwrap_or_default();
    let unfinished: Vec<_> = mounts
        .iter()
        .filter(|m| jackin_checkouts::assess::has_unfinished_work(m))
        .collect();
    if unfinished.is_empty() {
        return "clean".into();
    }
    let files: usize = unfinished.iter().map(|m| dirty_file_count(m)).sum();
    let branches: usize = unfinished.iter().map(|m| m.unpushed_branches.len()).sum();
    let mut parts = Vec::new();
    if files > 0 {
        parts.push(format!("{files} {} dirty", plural(files, "file", "files")));
    }
    if branches > 0 {
        parts.push(format!(
            "{branches} {} unpushed",
            plural(branches, "branch", "branches")
        ));
    }
    parts.join(" · ")
}

/// How many files a mount's evidence counts, those past the listed ones
/// (`… and N more`) included.
pub fn dirty_file_count(m: &MountStatus) -> usize {
    let more = m
        .dirty_files
        .last()
        .and_then(|l| l.strip_prefix("… and "))
        .and_then(|rest| rest.strip_suffix(" more"))
        .and_then(|n| n.parse::<usize>().ok());
    match more {
        Some(n) => m.dirty_files.len() - 1 + n,
        None => m.dirty_files.len(),
    }
}

/// `kind/NAME` lines, as `kubectl get -o name` prints them.
pub fn name_lines<'a>(kind: &str, names: impl Iterator<Item = &'a String>) -> String {
    names.map(|name| format!("{kind}/{name}\n")).collect()
}

/// A size in words: `512B`, `12KiB`, `40MiB`, `3GiB`.
pub fn bytes_in_words(bytes: u64) -> String {
    match bytes {
        b if b < 1 << 10 => format!("{b}B"),
        b if b < 1 << 20 => format!("{}KiB", b >> 10),
        b if b < 1 << 30 => format!("{}MiB", b >> 20),
        b => format!("{}GiB", b >> 30),
    }
}

/// `word` or its plural, as `count` asks.
pub fn plural(count: usize, one: &'static str, many: &'static str) -> &'static str {
    if count == 1 { one } else { many }
}

/// A dry run, for people: the steps the loop would take and, for a purge
/// that unfinished work blocks, why nothing happens yet (or, with
/// `--force`, what is acknowledged).
pub fn dry_run(
    name: &str,
    phase: DesiredPhase,
    dry: &DryRun,
    capped: &[Capped],
    force: bool,
) -> String {
    let mut out = String::new();
    let unit = match dry.container.as_str() {
        "" => "new",
        container => container,
    };
    let _ = writeln!(out, "instance/{name} ({unit}) to {phase} would (dry run):");
    out.push_str(&dry.plan.render());
    for capped in capped {
        let _ = writeln!(out, "then the keep cap {}", capped.describe(true));
    }
    if let Some(digest) = &dry.blocked {
        let _ = if force {
            writeln!(
                out,
                "  (--force acknowledges the unfinished work in the isolated checkouts, digest \
                 {digest}, and discards it)"
            )
        } else {
            writeln!(
                out,
                "blocked: unfinished work (digest {digest}) in the isolated checkouts: none of \
                 this happens until it is acknowledged\nhint: `jackin describe {name}` shows \
                 it; `--force` acknowledges it"
            )
        };
    }
    out
}

/// `exit 3 (marker)`, `stopped by jackin to keep (SIGTERM, exit 1)`,
/// `unknown`, … How the last session ended, in a few words, with the
/// agent's exit code whenever one was recorded. A session jackin stopped (a
/// keep, a rollout, a restart) says so whatever the agent's exit code: its
/// answer to jackin's SIGTERM is not a failure (codex exits 1: defect R14).
/// One stopped from outside (`docker stop`, the engine shutting down) was
/// not the agent ending it either.
pub fn session_summary(session: &SessionOutcome, phase: Option<InstancePhase>) -> String {
    let signal = session
        .reason
        .as_deref()
        .and_then(|r| r.strip_prefix("signal:"))
        .map(|signal| format!("SIG{signal}"));
    let kept = phase == Some(InstancePhase::Kept);
    let killed = session.reason.as_deref() == Some("killed");
    let code = session
        .exit_code
        .map(|code| format!(", exit {code}"))
        .unwrap_or_default();
    if session.reason.as_deref() == Some(REASON_OOM) {
        return "out of memory".into();
    }
    if session.stopped_by_jackin {
        let how = match (&signal, killed, session.exit_code) {
            (Some(signal), _, _) => format!("{signal}{code}"),
            (None, true, _) => format!("killed{code}"),
            (None, false, Some(exit)) => format!("exit {exit}"),
            (None, false, None) => "no exit code".to_owned(),
        };
        let to_keep = if kept { " to keep" } else { "" };
        return format!("stopped by jackin{to_keep} ({how})");
    }
    match (signal, session.exit_code) {
        (Some(signal), _) if kept => format!("stopped to keep ({signal}{code})"),
        (Some(signal), _) => format!("stopped from outside ({signal}{code})"),
        (None, Some(_)) if kept && killed => format!("stopped to keep (killed{code})"),
        (None, Some(code)) => format!("exit {code} ({})", source_name(session.source)),
        (None, None) => "unknown".into(),
    }
}

fn source_name(source: OutcomeSource) -> &'static str {
    match source {
        OutcomeSource::Marker => "marker",
        OutcomeSource::Engine => "engine",
        OutcomeSource::Unknown => "unknown",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_session_summary_names_the_exit_code_it_has() {
        let ended = |code: Option<i64>, source, reason: &str| SessionOutcome {
            exit_code: code,
            finished_at: None,
            source,
            reason: Some(reason.to_owned()),
            stopped_by_jackin: false,
        };
        let by_jackin = |session: SessionOutcome| SessionOutcome {
            stopped_by_jackin: true,
            ..session
        };
        let kept = Some(InstancePhase::Kept);
        let running = Some(InstancePhase::Running);
        for (session, phase, shown) in [
            (
                ended(Some(0), OutcomeSource::Marker, "exited"),
                kept,
                "exit 0 (marker)",
            ),
            (
                ended(Some(3), OutcomeSource::Marker, "signal:TERM"),
                kept,
                "stopped to keep (SIGTERM, exit 3)",
            ),
            (
                ended(Some(143), OutcomeSource::Marker, "signal:TERM"),
                running,
                "stopped from outside (SIGTERM, exit 143)",
            ),
            // Defect R14: codex exits 1 on jackin's SIGTERM; a wrapper that
            // missed the signal says `exited`. Both are jackin's stop.
            (
                by_jackin(ended(Some(1), OutcomeSource::Marker, "signal:TERM")),
                kept,
                "stopped by jackin to keep (SIGTERM, exit 1)",
            ),
            (
                by_jackin(ended(Some(1), OutcomeSource::Marker, "exited")),
                running,
                "stopped by jackin (exit 1)",
            ),
            (
                by_jackin(ended(Some(137), OutcomeSource::Engine, "killed")),
                kept,
                "stopped by jackin to keep (killed, exit 137)",
            ),
            (
                ended(Some(137), OutcomeSource::Engine, "killed"),
                kept,
                "stopped to keep (killed, exit 137)",
            ),
            (
                ended(Some(137), OutcomeSource::Engine, "killed"),
                running,
                "exit 137 (engine)",
            ),
            (
                ended(Some(137), OutcomeSource::Engine, REASON_OOM),
                running,
                "out of memory",
            ),
            (
                ended(None, OutcomeSource::Unknown, "the container was removed"),
                running,
                "unknown",
            ),
        ] {
            assert_eq!(session_summary(&session, phase), shown, "{session:?}");
        }
    }

    #[test]
    fn ages_read_like_kubectl() {
        let now = Timestamp::from_second(1_000_000).unwrap();
        let ago = |s: i64| Some(Timestamp::from_second(1_000_000 - s).unwrap());
        assert_eq!(age(ago(5), now), "5s");
        assert_eq!(age(ago(600), now), "10m");
        assert_eq!(age(ago(3 * 3600), now), "3h");
        assert_eq!(age(ago(5 * 86400), now), "5d");
        assert_eq!(age(None, now), "-");
    }

    #[test]
    fn tables_align_columns() {
        let text = table(
            &["NAME", "PHASE"],
            &[
                vec!["a".into(), "Running".into()],
                vec!["long-name".into(), "-".into()],
            ],
        );
        assert_eq!(
            text,
            "NAME        PHASE\na           Running\nlong-name   -\n"
        );
    }
}
