//! A soak test of many provers as separate processes with random priorities, some killed with
//! SIGKILL at random moments, on fake devices. Every finished proof must verify; afterwards no
//! device may stay locked or wanted, and the lock directory must hold exactly the files of the
//! protocol (it does not grow). The run ends with a summary.
//!
//! CI runs the short version (`PG16_SOAK_SECONDS`, default 12 s); `scripts/soak.sh` runs it for
//! longer. Children are this test binary re-executed (`soak_child`, an ignored test run with
//! `--ignored --exact`). A child that exits without a verified proof, or dies of a signal the
//! parent did not send, is a failure.
#![cfg(all(feature = "gpu", feature = "serde", unix))]

#[path = "circuits/mod.rs"]
mod circuits;
#[path = "reports/mod.rs"]
mod reports;

use circuits::Squares;
use preemptible_groth16::gpu::fake::FAKE_GPUS_ENV;
use preemptible_groth16::gpu::locks::{self, LOCK_DIR_ENV};
use preemptible_groth16::groth16::{
    generate_random_parameters, Parameters, Priority, ProveOptions,
};
use rand::{thread_rng, Rng};
use reports::{field, prove_and_print, quantile, report_in};
use std::fs::File;
use std::io::{BufReader, BufWriter};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "PG16_SOAK_CHILD";
/// The signal the parent kills children with (`Child::kill`); the same number on every Unix.
const SIGKILL: i32 = 9;
const SECONDS_ENV: &str = "PG16_SOAK_SECONDS";
const PROVERS_ENV: &str = "PG16_SOAK_PROVERS";
const FAKES: &str = "2:3000";
const DEVICES: [&str; 2] = ["fake-0", "fake-1"];
/// Circuit sizes the provers pick from.
const SIZES: [u32; 3] = [11, 12, 13];

fn params_path(dir: &std::path::Path, k: u32) -> PathBuf {
    dir.join(format!("squares-{k}.params"))
}

/// The child's side: `PG16_SOAK_CHILD=priority:k:params-dir` proves once and prints `REPORT ...`.
/// Not a test of its own: ignored, and run only by the parent.
#[test]
#[ignore = "child process entry point: soak_many_provers_with_kills runs it"]
fn soak_child() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        panic!("{CHILD_ENV} is not set: this runs only as a child of soak_many_provers_with_kills");
    };
    let mut parts = spec.splitn(3, ':');
    let priority: Priority = parts.next().unwrap().parse().unwrap();
    let k: u32 = parts.next().unwrap().parse().unwrap();
    let dir = PathBuf::from(parts.next().unwrap());
    let params = Parameters::read(
        BufReader::new(File::open(params_path(&dir, k)).unwrap()),
        false,
    )
    .unwrap();
    let circuit = Squares::log2(k);
    let options = ProveOptions::default()
        .priority(priority)
        .chunk_terms(1 << 10);
    prove_and_print(circuit, &params, &options);
}

struct Running {
    child: Child,
    kill_at: Option<Instant>,
    /// Whether the parent sent it SIGKILL.
    killed: bool,
}

/// Why a finished child counts as a failure, if it does: it must have exited with 0 after a
/// verified proof, or died of the SIGKILL the parent sent.
fn failure(status: std::process::ExitStatus, report: Option<&str>, killed: bool) -> Option<String> {
    if let Some(report) = report {
        if !report.contains("\"verified\":true") {
            return Some(format!("not verified: {report}"));
        }
    }
    match (status.code(), status.signal()) {
        (Some(0), _) if report.is_some() => None,
        (_, Some(SIGKILL)) if killed => None,
        (_, Some(signal)) => Some(format!("killed by signal {signal}, not sent by the test")),
        (code, None) => Some(format!("exit {code:?} with report {report:?}")),
    }
}

/// The check on a finished child can fail: a signal the parent did not send, a failed exit, a
/// missing or unverified report (wait statuses as the kernel gives them: `code << 8` or the signal).
#[test]
fn children_that_die_unasked_are_failures() {
    use std::process::ExitStatus;
    let (ok, bad) = ("{\"verified\":true}", "{\"verified\":false}");
    let exit = |code: i32| ExitStatus::from_raw(code << 8);
    let signal = ExitStatus::from_raw;
    assert_eq!(failure(exit(0), Some(ok), false), None);
    assert_eq!(failure(signal(SIGKILL), None, true), None);
    assert_eq!(failure(signal(SIGKILL), Some(ok), true), None);
    for (status, report, killed) in [
        (signal(SIGKILL), None, false),
        (signal(11), None, true),
        (signal(6), Some(ok), false),
        (exit(101), None, true),
        (exit(0), None, false),
        (exit(0), Some(bad), false),
    ] {
        assert!(
            failure(status, report, killed).is_some(),
            "{status:?}, report {report:?}, killed {killed}"
        );
    }
}

#[test]
fn soak_many_provers_with_kills() {
    let seconds: u64 = std::env::var(SECONDS_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(12);
    let provers: usize = std::env::var(PROVERS_ENV)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(4);
    // Removed when dropped, also when the test fails.
    let root_dir = tempfile::Builder::new()
        .prefix("pg16-soak-")
        .tempdir()
        .unwrap();
    let root = root_dir.path();
    let lock_dir = root.join("locks");
    std::fs::create_dir_all(&lock_dir).unwrap();
    let rng = &mut thread_rng();
    for k in SIZES {
        let params = generate_random_parameters(Squares::log2(k), rng).unwrap();
        params
            .write(BufWriter::new(File::create(params_path(root, k)).unwrap()))
            .unwrap();
    }

    let spawn = |rng: &mut rand::rngs::ThreadRng| {
        let priority = Priority::ALL[rng.gen_range(0..3)];
        let k = SIZES[rng.gen_range(0..SIZES.len())];
        let child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--ignored",
                "--exact",
                "soak_child",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("{priority}:{k}:{}", root.display()))
            .env(FAKE_GPUS_ENV, FAKES)
            .env(LOCK_DIR_ENV, &lock_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // About one prover in three is killed at a random moment of its life.
        let kill_at = rng
            .gen_bool(0.3)
            .then(|| Instant::now() + Duration::from_millis(rng.gen_range(20..800)));
        Running {
            child,
            kill_at,
            killed: false,
        }
    };

    let deadline = Instant::now() + Duration::from_secs(seconds);
    let mut running: Vec<Running> = (0..provers).map(|_| spawn(rng)).collect();
    let (mut proofs, mut kills, mut failed) = (0usize, 0usize, Vec::new());
    let (mut preemptions, mut returns) = (0.0, 0.0);
    let mut handovers = Vec::new();
    while !running.is_empty() {
        let mut i = 0;
        while i < running.len() {
            let r = &mut running[i];
            if r.kill_at.is_some_and(|t| Instant::now() >= t) {
                if r.child.try_wait().unwrap().is_none() {
                    r.child.kill().unwrap();
                    r.killed = true;
                    kills += 1;
                }
                r.kill_at = None;
            }
            if r.child.try_wait().unwrap().is_some() {
                let done = running.swap_remove(i);
                let out = done.child.wait_with_output().unwrap();
                let text = String::from_utf8_lossy(&out.stdout);
                let report = report_in(&text);
                if let Some(report) = report {
                    proofs += 1;
                    preemptions += field(report, "preemptions").unwrap_or(0.0);
                    returns += field(report, "returns_to_gpu").unwrap_or(0.0);
                    handovers.extend(field(report, "handover_ms"));
                }
                failed.extend(failure(out.status, report, done.killed));
                if Instant::now() < deadline {
                    running.push(spawn(rng));
                }
            } else {
                i += 1;
            }
        }
        std::thread::sleep(Duration::from_millis(5));
    }

    handovers.sort_by(f64::total_cmp);
    println!(
        "soak: {seconds} s, {provers} provers at a time: {proofs} proofs verified, {kills} killed, \
         {preemptions} preemptions, {returns} returns to the GPU, hand-over p50 {:.1} ms p99 \
         {:.1} ms ({} samples)",
        quantile(&handovers, 0.5),
        quantile(&handovers, 0.99),
        handovers.len()
    );
    assert!(failed.is_empty(), "failed provers: {failed:?}");
    assert!(proofs > 0, "no proof finished");

    // Nothing stays locked or wanted after the last prover is gone, killed ones included.
    let ids: Vec<String> = DEVICES.iter().map(|d| d.to_string()).collect();
    for d in locks::status(&lock_dir, &ids).unwrap() {
        assert_eq!(d.holder, None, "{} still held", d.device);
        assert!(
            d.wanted_at.is_empty(),
            "{} still wanted: {:?}",
            d.device,
            d.wanted_at
        );
    }
    // The directory holds the protocol's files and nothing else: a lock and three flags per device.
    let mut files: Vec<String> = std::fs::read_dir(&lock_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    files.sort();
    assert!(
        files.len() <= 4 * DEVICES.len(),
        "the lock directory grew: {files:?}"
    );
}
