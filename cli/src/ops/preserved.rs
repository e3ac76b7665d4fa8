//! Screen D, which `launch`, `attach` and `set-phase running` share: the
//! preserved state of a session about to be resumed (its isolated
//! checkouts, assessed now), and the conflicts its resume would fail with,
//! which Screen C shows too.

use anyhow::Result;
use jackin_api::Instance;
use jackin_api::instance::MountStatus;
use jackin_checkouts::assess::has_unfinished_work;
use jackin_checkouts::isolation::{self, IsolationError};
use jackin_controller::Store;
use jackin_controller::reconcile::assess_checkouts;

use crate::output;
use crate::screens::{self, Answer, Kind, Screen};
use crate::terminal::Keyboard;

/// The conflicts a resume of `obj` would fail with, asked now of the
/// resume's own check ([`isolation::resume_conflicts`]) over the mounts its
/// recipe binds, so that Screens C and D offer only what will work.
pub async fn resume_conflicts(store: &Store, obj: &Instance) -> Result<Vec<IsolationError>> {
    let (Some(container), Some(recipe)) = (obj.container_name(), obj.recipe()) else {
        return Ok(Vec::new());
    };
    let layout = store.layout().clone();
    let (container, mounts) = (container.to_owned(), recipe.mounts.clone());
    let conflicts = jackin_files::offload::blocking(move || {
        isolation::resume_conflicts(&layout, &container, &mounts)
    })
    .await?;
    Ok(conflicts)
}

/// Screen D's statement of a diverged host repository: what the resume
/// would do (fail, and leave the checkout as it is), and what works
/// instead. Short lines: the rich screen does not wrap them.
fn conflict_lines(conflicts: &[IsolationError]) -> Vec<String> {
    let mut lines = Vec::new();
    for conflict in conflicts {
        let IsolationError::ResumeConflict {
            dst,
            src,
            base,
            path,
        } = conflict
        else {
            continue;
        };
        let (dst, src, path) = (
            output::terminal_safe(dst),
            output::terminal_safe(src),
            output::terminal_safe(path),
        );
        let short = base.get(..12).unwrap_or(base);
        lines.extend([
            format!("Conflict at {dst}: the host repo diverged since it was preserved."),
            format!("  {src} no longer holds its base commit {short}"),
            "  (made anew, or its history rewritten).".to_owned(),
            format!("Resuming would fail (ResumeConflict) and leave {dst} as it is."),
            "What works instead:".to_owned(),
            "  Esc, then start a new session (this one stays as it is)".to_owned(),
            "  keep the work: copy it out of the checkout,".to_owned(),
            format!("    {path}"),
            format!("  or put commit {short} back into {src}, then resume"),
        ]);
    }
    lines
}

/// Screen D: before a session with isolated checkouts is resumed (by
/// `launch`, `attach` or `set-phase running`), the operator sees what is
/// in them, and passes only with Enter; Esc goes back. A session without
/// isolated checkouts has nothing to verify: it resumes at once. One whose
/// resume would fail (a diverged host repository) is shown with the
/// conflict, and Esc is the only way on.
pub async fn verify_preserved_state(
    store: &Store,
    obj: &Instance,
    keyboard: &mut Keyboard,
) -> Result<Answer> {
    let Some(container) = obj.container_name().map(str::to_owned) else {
        return Ok(Answer::Chose(0));
    };
    let mounts = assess_checkouts(store.layout(), &container).await?;
    if mounts.is_empty() {
        return Ok(Answer::Chose(0));
    }
    let conflicts = resume_conflicts(store, obj).await?;
    let name = &obj.metadata.name;
    let checkouts = output::plural(mounts.len(), "checkout", "checkouts");
    let mut context = vec![
        format!(
            "Restoring instance/{name}: {} ({}) · workspace {}",
            obj.spec.role.name,
            obj.spec.agent,
            obj.spec.workspace.as_deref().unwrap_or("-")
        ),
        match conflicts.is_empty() {
            true => format!("Reusing the preserved {checkouts}:"),
            false => format!("The preserved {checkouts}:"),
        },
        String::new(),
    ];
    // A conflicting checkout's evidence is not shown: git cannot read it
    // without its host's objects (it would say "unknown", or count the
    // agent's branch as unpushed). Its conflict is said instead.
    let conflicting = |m: &&MountStatus| {
        conflicts
            .iter()
            .any(|c| matches!(c, IsolationError::ResumeConflict { dst, .. } if *dst == m.dst))
    };
    let readable: Vec<MountStatus> = mounts.iter().filter(|m| !conflicting(m)).cloned().collect();
    context.extend(
        output::mounts_evidence(&readable)
            .lines()
            .map(str::to_owned),
    );
    if !readable.is_empty() {
        context.push(String::new());
    }
    let kind = if conflicts.is_empty() {
        // What the resume checks of the host: that it still holds each
        // checkout's base, which it then builds on.
        context.push("Host repo still holds each checkout's base — safe to reuse.".to_owned());
        context.push(
            match mounts.iter().any(has_unfinished_work) {
                true => "The session resumes on this work as it is; nothing of it is lost.",
                false => "Nothing unfinished: the session resumes on clean checkouts.",
            }
            .to_owned(),
        );
        Kind::ResumeOrBack
    } else {
        context.extend(conflict_lines(&conflicts));
        Kind::OnlyBack
    };
    let screen = Screen {
        label: format!("resume {name}"),
        context,
        choices: Vec::new(),
        kind,
    };
    screens::choose(&screen, keyboard).await
}
