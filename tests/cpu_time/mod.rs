//! The CPU time a process has used, for the tests that show a waiting prover sleeps (Linux).

use std::time::Duration;

/// User plus system CPU time of `process` so far (`"self"` or a pid), from
/// `/proc/<process>/stat` (clock ticks of 10 ms).
pub fn cpu_time_of(process: &str) -> Duration {
    let stat = std::fs::read_to_string(format!("/proc/{process}/stat")).unwrap();
    // Fields after the command name (which is in parentheses and may hold spaces).
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
    Duration::from_millis(ticks * 10)
}
