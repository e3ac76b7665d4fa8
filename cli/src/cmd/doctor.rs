//! `jackin doctor`: what sessions need of this machine and this shell,
//! checked the way a start would check it, each finding with what to do.
//! It reads and asks; it writes nothing (a login file is read to know it is
//! there, never copied).

use std::collections::BTreeMap;
use std::time::Duration;

use anyhow::Result;
use jackin_act::credentials;
use jackin_api::Instance;
use jackin_controller::engines::Engines;
use jackin_controller::{Reconciler, Store};
use jackin_engine::Engine;
use jackin_files::fsutil;
use serde::Serialize;

use crate::args::DoctorFormat;
use crate::context::open_store;
use crate::{hints, output};

/// How long one engine may take to answer before it counts as down.
const ENGINE_ANSWER: Duration = Duration::from_secs(15);

/// The most entries of the home counted for its size: an estimate.
const MAX_COUNTED_ENTRIES: usize = 200_000;

/// Below this, the file system that holds the home is said to be short.
const LOW_FREE_BYTES: u64 = 2 << 30;

/// How a finding stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
enum Level {
    Ok,
    /// A session starts, but not as the operator likely wants (logged out).
    Warn,
    /// Nothing starts until it is fixed.
    Fail,
}

/// One thing checked.
#[derive(Debug, Serialize)]
struct Finding {
    level: Level,
    /// What was checked: `engine unix:///…`, `landlock`, `home`,
    /// `login claude`, `key claude`.
    check: String,
    said: String,
    /// What to do, when something is to be done.
    #[serde(skip_serializing_if = "Option::is_none")]
    todo: Option<String>,
}

/// Some check failed: the findings say which.
#[derive(Debug)]
pub struct Unhealthy(usize);

impl std::fmt::Display for Unhealthy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} check(s) failed: nothing starts until they pass",
            self.0
        )
    }
}

impl std::error::Error for Unhealthy {}

/// `jackin doctor [-o json|yaml]`.
pub async fn run(format: DoctorFormat) -> Result<()> {
    let store = open_store()?;
    let instances = store.list_instances()?.instances;
    let mut findings = engines(&store, &instances).await?;
    findings.push(landlock(&store));
    findings.push(home(&store));
    findings.extend(logins(&store, &instances)?);
    match format {
        DoctorFormat::Text => print!("{}", text(&findings)),
        DoctorFormat::Json => println!("{}", serde_json::to_string_pretty(&findings)?),
        DoctorFormat::Yaml => print!("{}", serde_saphyr::to_string(&findings)?),
    }
    let failed = findings.iter().filter(|f| f.level == Level::Fail).count();
    match failed {
        0 => Ok(()),
        n => Err(Unhealthy(n).into()),
    }
}

/// The findings as lines: the level, what was checked and what was seen,
/// and what to do under it.
fn text(findings: &[Finding]) -> String {
    let mut out = String::new();
    for f in findings {
        let level = match f.level {
            Level::Ok => "ok",
            Level::Warn => "warn",
            Level::Fail => "FAIL",
        };
        let line = format!("{level:<5} {}: {}", f.check, f.said);
        out.push_str(&output::terminal_safe(&line));
        out.push('\n');
        if let Some(todo) = &f.todo {
            out.push_str(&output::terminal_safe(&format!("      → {todo}")));
            out.push('\n');
        }
    }
    out
}

/// Every engine a session may run on: the environment's, and each one a
/// workspace or an instance names. Each must answer.
async fn engines(store: &Store, instances: &[Instance]) -> Result<Vec<Finding>> {
    // Each engine, and who names it.
    let mut named: BTreeMap<Option<String>, Vec<String>> = BTreeMap::from([(None, Vec::new())]);
    for obj in instances {
        let by = format!("instance/{}", obj.metadata.name);
        named.entry(obj.spec.engine.clone()).or_default().push(by);
    }
    for workspace in store.list_workspaces()? {
        let by = format!("workspace/{}", workspace.metadata.name);
        named
            .entry(workspace.spec.engine.clone())
            .or_default()
            .push(by);
    }
    let mut findings = Vec::new();
    for (name, by) in named {
        let shown = name.as_deref().unwrap_or("(the environment's)");
        // The environment's engine has the hints of any connection; one a
        // spec names is fixed where it is named.
        let todo = |e: &jackin_engine::EngineError| match &name {
            None => hints::for_error(e),
            Some(_) => Some(format!(
                "start it, or change the spec.engine that names it ({})",
                by.join(", ")
            )),
        };
        let connected = tokio::time::timeout(ENGINE_ANSWER, Engine::connect_named(name.as_deref()));
        findings.push(match connected.await {
            Ok(Ok(engine)) => Finding {
                level: Level::Ok,
                check: format!("engine {}", engine.endpoint()),
                said: format!("answers (API {})", engine.api_version()),
                todo: None,
            },
            Ok(Err(e)) => Finding {
                level: Level::Fail,
                check: format!("engine {shown}"),
                said: e.to_string(),
                todo: todo(&e),
            },
            Err(_) => Finding {
                level: Level::Fail,
                check: format!("engine {shown}"),
                said: format!("no answer within {}s", ENGINE_ANSWER.as_secs()),
                todo: Some("start it, or fix the address that names it".into()),
            },
        });
    }
    Ok(findings)
}

/// Whether git over an agent's tree can be confined here: without it, no
/// isolated checkout is assessed, published or saved.
fn landlock(store: &Store) -> Finding {
    let root = store.layout().root().display().to_string();
    match jackin_checkouts::git::run_untrusted(&root, &["version"]) {
        Ok(_) => Finding {
            level: Level::Ok,
            check: "landlock".into(),
            said: "git over an agent's checkout runs confined".into(),
            todo: None,
        },
        Err(e) => Finding {
            level: Level::Fail,
            check: "landlock".into(),
            said: e.to_string(),
            todo: Some(
                "run jackin on Linux 5.13 or later with `landlock` in the kernel's lsm= list"
                    .into(),
            ),
        },
    }
}

/// The home's size and the room left beside it.
fn home(store: &Store) -> Finding {
    let root = store.layout().root();
    let (used, cut) = fsutil::bytes_under(root, MAX_COUNTED_ENTRIES);
    let used = format!(
        "{}{} used",
        if cut { "over " } else { "" },
        output::bytes_in_words(used)
    );
    let check = format!("home {}", root.display());
    match fsutil::free_bytes(root) {
        Ok(free) if free < LOW_FREE_BYTES => Finding {
            level: Level::Warn,
            check,
            said: format!("{used}, {} free", output::bytes_in_words(free)),
            todo: Some(
                "make room: `jackin get discarded` lists saves (`jackin delete discarded/NAME`), \
                 `jackin prune --images` removes images no session pins"
                    .into(),
            ),
        },
        Ok(free) => Finding {
            level: Level::Ok,
            check,
            said: format!("{used}, {} free", output::bytes_in_words(free)),
            todo: None,
        },
        Err(e) => Finding {
            level: Level::Warn,
            check,
            said: format!("{used}; the free space cannot be read: {e}"),
            todo: None,
        },
    }
}

/// What each instance's next start would find of its logins: the files on
/// this host under `sync`, the variables in this shell under `token`.
/// Each line once, with the instances it concerns.
fn logins(store: &Store, instances: &[Instance]) -> Result<Vec<Finding>> {
    let reconciler = Reconciler::new(store.clone(), Engines::new(None));
    let host = credentials::host_home();
    let mut seen: Vec<(Level, String, Vec<String>)> = Vec::new();
    for obj in instances {
        let Some(pinned) = reconciler.wanted_recipe(obj)?.and_then(|r| r.credentials) else {
            continue;
        };
        let files = credentials::logins_on_host(&pinned, host.as_deref().map_err(String::as_str));
        let set_by_spec: Vec<String> = obj.spec.env.iter().map(|v| v.name.clone()).collect();
        let keys = credentials::resolve_env(&pinned, &set_by_spec);
        let lines = (files.files.into_iter().map(|l| (Level::Ok, l)))
            .chain(keys.names.into_iter().map(|l| (Level::Ok, l)))
            .chain(files.missing.into_iter().map(|l| (Level::Warn, l)))
            .chain(keys.missing.into_iter().map(|l| (Level::Warn, l)));
        for (level, line) in lines {
            match seen.iter_mut().find(|(_, l, _)| *l == line) {
                Some((_, _, names)) => names.push(obj.metadata.name.clone()),
                None => seen.push((level, line, vec![obj.metadata.name.clone()])),
            }
        }
    }
    Ok(seen
        .into_iter()
        .map(|(level, line, names)| {
            let (set, said) = line.split_once(": ").unwrap_or(("", &line));
            let (said, todo) = match said.split_once(" — ") {
                Some((said, todo)) => (said.to_owned(), Some(todo.to_owned())),
                None => (said.to_owned(), None),
            };
            Finding {
                level,
                check: format!("login {set} ({})", names.join(", ")),
                said,
                todo,
            }
        })
        .collect())
}
