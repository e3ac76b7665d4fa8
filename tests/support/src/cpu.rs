//! The CPU time a process and the processes under it used, read from
//! `/proc`: what a test bounds where the work it guards against is work,
//! not waiting (the wall clock would tell as much of a busy machine as of
//! jackin).

use std::collections::HashMap;
use std::process::Command;
use std::sync::LazyLock;
use std::time::Duration;

/// The CPU time (user and system) `pid` and every process under it have
/// used so far: each live one's own, and what the children it has waited
/// for used. Zero for a process that is gone.
pub fn cpu_time(pid: u32) -> Duration {
    let processes = processes();
    let mut ticks = 0;
    let mut under = vec![pid];
    while let Some(pid) = under.pop() {
        if let Some((_, used)) = processes.get(&pid) {
            ticks += used;
        }
        under.extend(
            processes
                .iter()
                .filter(|(_, (parent, _))| *parent == pid)
                .map(|(child, _)| *child),
        );
    }
    Duration::from_secs_f64(ticks as f64 / *TICKS_PER_SECOND)
}

/// The clock ticks the kernel counts CPU time in, per second.
static TICKS_PER_SECOND: LazyLock<f64> = LazyLock::new(|| {
    let out = Command::new("getconf")
        .arg("CLK_TCK")
        .output()
        .expect("getconf runs");
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .expect("getconf CLK_TCK prints a number")
});

/// Every process now: its parent, and the ticks it and its waited-for
/// children used.
fn processes() -> HashMap<u32, (u32, u64)> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return HashMap::new();
    };
    entries
        .filter_map(|entry| {
            let pid: u32 = entry.ok()?.file_name().to_str()?.parse().ok()?;
            // Gone since the listing: nothing to count.
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            // The command's name, in parentheses, may hold spaces.
            let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
            let field = |n: usize| fields.get(n)?.parse::<u64>().ok();
            // From the state on: ppid 1, then utime, stime, cutime and
            // cstime 11 to 14.
            let used = field(11)? + field(12)? + field(13)? + field(14)?;
            Some((pid, (u32::try_from(field(1)?).ok()?, used)))
        })
        .collect()
}
