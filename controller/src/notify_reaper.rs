//! The notify command's reaper: a small process between the controller and
//! the operator's notify program that ends the program, and everything it
//! started, at its timeout, `setsid` children and orphans included.
//!
//! A process group does not hold them: a child that calls `setsid` leaves
//! it, and one whose parent ended is handed to init. So the controller
//! runs `jackin` itself again (`/proc/self/exe`, whatever has replaced the
//! file since) with [`REAPER_ARG`]; that process marks itself a child
//! subreaper (`PR_SET_CHILD_SUBREAPER`, no privilege needed), so that every
//! orphan below it becomes its child instead of init's, runs the program,
//! and reaps whatever ends. At the timeout it kills every process below
//! it, found in `/proc` by their parents, until none is left. It is a
//! process of its own, so the controller's other children (git, the
//! engine's) are never its business; no systemd, root or cgroup is needed.
//!
//! It prints one line on its standard output, what happened, which the
//! controller records as the run's outcome.

use std::collections::{HashMap, HashSet};
use std::ffi::OsString;
use std::process::{Command, ExitCode, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use rustix::process::{Pid, Signal, WaitOptions, WaitStatus};

/// The first argument that makes `jackin` the reaper; never typed by hand.
pub const REAPER_ARG: &str = "__jackin-notify-reaper";

/// How long the reaper keeps killing what is left before it gives up (a
/// process stuck in the kernel cannot be killed at once).
const KILLING_TIME: Duration = Duration::from_secs(5);

/// `jackin`'s own argv when it is to be the reaper: runs it and returns its
/// exit code. `None`: it is not.
pub fn reaper_if_asked() -> Option<ExitCode> {
    let mut argv = std::env::args_os().skip(1);
    if argv.next()? != REAPER_ARG {
        return None;
    }
    let line = match parse(argv.collect()) {
        Ok((timeout, program, args)) => reap(timeout, &program, &args),
        Err(why) => why,
    };
    println!("{line}");
    Some(ExitCode::SUCCESS)
}

/// The reaper's arguments after [`REAPER_ARG`], as [`command`] writes them.
fn parse(argv: Vec<OsString>) -> Result<(Duration, OsString, Vec<OsString>), String> {
    let mut argv = argv.into_iter();
    let timeout = argv
        .next()
        .and_then(|millis| millis.to_str()?.parse::<u64>().ok())
        .map(Duration::from_millis)
        .ok_or("could not be run: the reaper was given no timeout")?;
    let program = argv
        .next()
        .ok_or("could not be run: the reaper was given no program")?;
    Ok((timeout, program, argv.collect()))
}

/// The reaper's command line for `program` and `args` under `timeout`.
pub fn command(timeout: Duration, program: &str, args: &[String]) -> tokio::process::Command {
    let mut command = tokio::process::Command::new("/proc/self/exe");
    command
        .arg(REAPER_ARG)
        .arg(timeout.as_millis().to_string())
        .arg(program)
        .args(args);
    command
}

/// Runs `program` under `timeout` and returns what happened.
fn reap(timeout: Duration, program: &OsString, args: &[OsString]) -> String {
    if let Err(e) = rustix::process::set_child_subreaper(Some(rustix::process::getpid())) {
        return format!("could not be run: cannot become a child subreaper: {e}");
    }
    let child = Command::new(program)
        .args(args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn();
    let child = match child {
        Ok(child) => child,
        Err(e) => return format!("could not run: {e}"),
    };
    // Not waited for through `child`: every child, the program's orphans
    // too, is reaped by one waiter, which hangs up when none is left.
    let program_pid = Pid::from_child(&child);
    let ended = reap_every_child();
    let deadline = Instant::now() + timeout;
    let mut program_ended = None;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match ended.recv_timeout(left) {
            Ok((pid, status)) if pid == program_pid => program_ended = Some(status),
            Ok(_) => {}
            // Nothing below the reaper is left.
            Err(mpsc::RecvTimeoutError::Disconnected) => {
                return program_ended.map_or("ended".to_owned(), |s| said(&s));
            }
            Err(mpsc::RecvTimeoutError::Timeout) => break,
        }
    }
    let (killed, all) = kill_every_descendant(&ended);
    let secs = timeout.as_secs();
    let outcome = match program_ended {
        None => format!("did not end within {secs}s and was killed"),
        Some(status) => format!(
            "{}, and what it left running was killed at its timeout ({secs}s)",
            said(&status)
        ),
    };
    let others = killed.saturating_sub(usize::from(program_ended.is_none()));
    let outcome = match others {
        0 => outcome,
        n => format!("{outcome}, with {n} other process(es) it started"),
    };
    match all {
        true => outcome,
        false => format!("{outcome}; some would not end and were left to init"),
    }
}

/// A waiter that reaps every child of this process and sends each end,
/// until there is no child left: then the channel hangs up.
fn reap_every_child() -> mpsc::Receiver<(Pid, WaitStatus)> {
    let (sender, ended) = mpsc::channel();
    std::thread::spawn(move || {
        loop {
            match rustix::process::wait(WaitOptions::empty()) {
                Ok(Some((pid, status))) => {
                    // The receiver gone is the reaper ending: reap on.
                    let _ = sender.send((pid, status));
                }
                Err(rustix::io::Errno::INTR) => {}
                // ECHILD: none is left.
                Ok(None) | Err(_) => return,
            }
        }
    });
    ended
}

/// Kills every process below this one, again as long as new ones appear
/// (one may fork while the others are killed), until the waiter says none
/// is left or [`KILLING_TIME`] passes. Returns how many were killed, and
/// whether every one ended.
fn kill_every_descendant(ended: &mpsc::Receiver<(Pid, WaitStatus)>) -> (usize, bool) {
    let me = rustix::process::getpid();
    let mut killed = HashSet::new();
    let give_up = Instant::now() + KILLING_TIME;
    while Instant::now() < give_up {
        for pid in descendants(me.as_raw_nonzero().get()) {
            if let Some(pid) = Pid::from_raw(pid)
                && rustix::process::kill_process(pid, Signal::KILL).is_ok()
            {
                killed.insert(pid);
            }
        }
        // Reaped as they end: the waiter hangs up once none is left.
        loop {
            match ended.recv_timeout(Duration::from_millis(100)) {
                Ok(_) => {}
                Err(mpsc::RecvTimeoutError::Disconnected) => return (killed.len(), true),
                Err(mpsc::RecvTimeoutError::Timeout) => break,
            }
        }
    }
    (killed.len(), false)
}

/// The live processes below `root`, by the parents `/proc` gives (a zombie
/// is dead already: its parent, or the reaper, reaps it).
fn descendants(root: i32) -> Vec<i32> {
    let mut children: HashMap<i32, Vec<i32>> = HashMap::new();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    for entry in entries.flatten() {
        let Some(pid) = entry.file_name().to_str().and_then(|s| s.parse().ok()) else {
            continue;
        };
        // Gone since the listing: it has nothing to kill.
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        if let Some((state, parent)) = state_and_parent(&stat)
            && state != "Z"
        {
            children.entry(parent).or_default().push(pid);
        }
    }
    let mut found = Vec::new();
    let mut next = vec![root];
    while let Some(parent) = next.pop() {
        for &child in children.get(&parent).into_iter().flatten() {
            found.push(child);
            next.push(child);
        }
    }
    found
}

/// The state and the parent of a `/proc/PID/stat` line: the fields after
/// the command name, which is in parentheses and may hold anything (the
/// last `)` ends it).
fn state_and_parent(stat: &str) -> Option<(&str, i32)> {
    let rest = &stat[stat.rfind(')')? + 1..];
    let mut fields = rest.split_whitespace();
    let state = fields.next()?;
    let parent = fields.next()?.parse().ok()?;
    Some((state, parent))
}

/// How the program ended, as the controller has always said it.
fn said(status: &WaitStatus) -> String {
    match (status.exit_status(), status.terminating_signal()) {
        (Some(0), _) => "exited 0".to_owned(),
        (Some(code), _) => format!("ended: exit status: {code}"),
        (None, Some(signal)) => format!("ended: killed by signal {signal}"),
        (None, None) => "ended".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stat_line_names_its_state_and_parent_whatever_the_command_name() {
        let stat = "4242 (sh) ) S x) S 17 4242 4242 0 -1 4194560";
        assert_eq!(state_and_parent(stat), Some(("S", 17)));
        assert_eq!(state_and_parent("1 (init) S 0 1 1"), Some(("S", 0)));
        assert_eq!(state_and_parent("garbage"), None);
    }

    #[test]
    fn the_reaper_reads_back_what_the_controller_writes() {
        let (timeout, program, args) = parse(
            ["1500", "/usr/bin/notify", "a", "b"]
                .map(OsString::from)
                .to_vec(),
        )
        .unwrap();
        assert_eq!(timeout, Duration::from_millis(1500));
        assert_eq!(program, "/usr/bin/notify");
        assert_eq!(args, ["a", "b"]);
        assert!(parse(vec![OsString::from("soon")]).is_err());
    }
}
