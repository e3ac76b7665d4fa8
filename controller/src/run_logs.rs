//! Run logs: each command that acts (`launch`, `attach`, `apply`,
//! `rollout`, the controller) leaves breadcrumbs of what it did in
//! `data/diagnostics/runs/<run id>.jsonl`, one JSON object a line, so that
//! the run handle printed with an error leads to what happened.
//!
//! A breadcrumb is a `tracing` event with the target [`TARGET`]; the
//! command's subscriber writes those (and with `--debug`, jackin's own
//! traces) to the file. Breadcrumbs carry names, step kinds and reasons,
//! never a message that could quote a value: an env value or a secret
//! never reaches a run log.
//!
//! The sweeps keep the newest `runLogs.keep` and none older than
//! `runLogs.retention` (`config.yaml`).

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::SystemTime;

use jackin_files::layout::Layout;
use jackin_plan::plan::Step;

use crate::failure::ReconcileError;
use crate::metrics::error_reason;
use crate::reconcile::Outcome;

/// The target of breadcrumb events.
pub const TARGET: &str = "jackin::run";

/// A new run id: the time in UTC to the millisecond, then six random hex
/// digits; ids sort as their runs started.
pub fn mint() -> String {
    let random = uuid::Uuid::new_v4().simple().to_string();
    let now = jiff::Timestamp::now();
    format!(
        "{}{:03}Z-{}",
        now.strftime("%Y%m%dT%H%M%S"),
        now.subsec_millisecond(),
        &random[..6]
    )
}

/// `name` starts `step`.
pub fn step(name: &str, step: &Step) {
    tracing::info!(
        target: TARGET,
        instance = name,
        step = step.kind(),
        stage = step.stage(),
        "step"
    );
}

/// A reconcile of `name` ended so: its outcome, or the step that failed
/// and the reason its condition gives (not the error's text, which may
/// quote what it read). One that took no step (`stepped`) and did not fail
/// did nothing, and one of an instance given up on was not tried: neither
/// is worth a line (a no-op command writes no run log).
pub fn reconciled(name: &str, result: &Result<Outcome, ReconcileError>, stepped: bool) {
    match result {
        Ok(_) if !stepped => {}
        Err(ReconcileError::GaveUp { now: false, .. }) => {}
        Ok(outcome) => {
            let outcome = match outcome {
                Outcome::Converged { phase, .. } => phase.as_str(),
                Outcome::Gone | Outcome::PurgedWithoutEngine { .. } => "purged",
                Outcome::Absent => "absent",
                Outcome::Blocked { .. } => "blocked",
            };
            tracing::info!(target: TARGET, instance = name, outcome, "reconciled");
        }
        Err(e) => {
            let step = match e {
                ReconcileError::Step { step, .. } => step.as_str(),
                _ => "",
            };
            tracing::warn!(
                target: TARGET,
                instance = name,
                failed_step = step,
                reason = error_reason(e),
                "failed"
            );
        }
    }
}

/// This process's own run log, once [`claim`]ed: never removed by a sweep
/// this process runs (a controller's, written to as long as it runs, may
/// be older than the retention while it is quiet).
static OWN: OnceLock<PathBuf> = OnceLock::new();

/// Says that this process writes the run log at `path`.
pub fn claim(path: PathBuf) {
    let _ = OWN.set(path);
}

/// Removes the run logs past the home's bounds, except this process's own
/// (see [`claim`]); returns how many went. A home whose settings cannot be
/// read keeps them all.
pub fn sweep(layout: &Layout) -> usize {
    let current = OWN.get().map(PathBuf::as_path);
    let bounds = match jackin_engine::addresses::read_config(layout.root()) {
        Ok(config) => config.run_logs,
        Err(e) => {
            tracing::warn!("keeping every run log: {e}");
            return 0;
        }
    };
    let Ok(entries) = std::fs::read_dir(layout.run_logs_dir()) else {
        return 0;
    };
    let mut logs: Vec<(PathBuf, SystemTime)> = entries
        .filter_map(Result::ok)
        .filter(|entry| entry.file_name().to_string_lossy().ends_with(".jsonl"))
        .filter_map(|entry| {
            let meta = std::fs::symlink_metadata(entry.path()).ok()?;
            meta.is_file()
                .then_some((entry.path(), meta.modified().ok()?))
        })
        .collect();
    // The most recently written first: a controller's log, written to as
    // long as it runs, stays among the kept however many runs began since.
    logs.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| b.0.cmp(&a.0)));
    let (keep, retention) = (bounds.keep(), bounds.retention());
    let now = SystemTime::now();
    let mut removed = 0;
    for (i, (path, modified)) in logs.iter().enumerate() {
        let stale = now
            .duration_since(*modified)
            .is_ok_and(|age| age > retention);
        if (i >= keep || stale)
            && Some(path.as_path()) != current
            && std::fs::remove_file(path).is_ok()
        {
            removed += 1;
        }
    }
    if removed > 0 {
        tracing::debug!(removed, "run logs past the home's bounds removed");
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn run_ids_sort_as_they_were_minted() {
        let first = mint();
        std::thread::sleep(std::time::Duration::from_millis(2));
        let second = mint();
        assert!(first < second, "{first} {second}");
        assert!(
            first.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'),
            "{first}"
        );
    }

    #[test]
    fn the_sweep_keeps_the_newest_and_none_too_old() {
        let home = tempfile::tempdir().unwrap();
        let layout = Layout::new(home.path());
        std::fs::write(
            home.path().join("config.yaml"),
            "runLogs: {keep: 2, retention: 1h}\n",
        )
        .unwrap();
        std::fs::create_dir_all(layout.run_logs_dir()).unwrap();
        let ids = [
            "20260101T000000000Z-a",
            "20260102T000000000Z-b",
            "20260103T000000000Z-c",
            "20260104T000000000Z-d",
            "20260105T000000000Z-e",
        ];
        for (i, id) in ids.iter().enumerate() {
            let file = std::fs::File::create(layout.run_log(id)).unwrap();
            let age = std::time::Duration::from_secs(60 * (10 - i as u64));
            file.set_modified(SystemTime::now() - age).unwrap();
        }
        // The newest, but old: past the retention.
        let old = std::fs::File::options()
            .write(true)
            .open(layout.run_log(ids[4]))
            .unwrap();
        old.set_modified(SystemTime::now() - std::time::Duration::from_secs(7200))
            .unwrap();
        // The oldest, but this process's own.
        // (The one test here that claims: a process claims once.)
        claim(layout.run_log(ids[0]));
        assert_eq!(sweep(&layout), 2);
        let left: Vec<bool> = ids.iter().map(|id| layout.run_log(id).exists()).collect();
        assert_eq!(left, [true, false, true, true, false]);
    }
}
