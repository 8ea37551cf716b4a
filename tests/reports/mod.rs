//! Reading the one-line JSON reports that prover processes print (`ProofReport::to_json` with
//! `verified` in front): shared by the process tests, the soak test and the demo example.
#![allow(dead_code)]

/// The number after `"key":` in a JSON line (`None` for `null` or a missing key).
pub fn field(json: &str, key: &str) -> Option<f64> {
    let at = json.find(&format!("\"{key}\":"))? + key.len() + 3;
    let rest = &json[at..];
    let end = rest.find([',', '}']).unwrap_or(rest.len());
    rest[..end].parse().ok()
}

/// The `q`-quantile (nearest rank) of sorted values; NaN for none.
pub fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    sorted[((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len()) - 1]
}

/// The report in a child's standard output: the text after `REPORT ` (libtest may print the
/// test's name on the same line before it).
pub fn report_in(stdout: &str) -> Option<&str> {
    stdout
        .lines()
        .find_map(|l| l.find("REPORT ").map(|at| &l[at + "REPORT ".len()..]))
}
