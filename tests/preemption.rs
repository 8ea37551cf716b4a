//! Preemption between provers as threads of one process, on fake devices
//! (`PREEMPTIBLE_GROTH16_FAKE_GPUS`: the real scheduler and lock files, with a device of known
//! speed), asserted from the provers' reports. Every proof verifies. The tests share the process's
//! lock directory, so they run one at a time (a mutex), each with a fresh directory.
#![cfg(feature = "test-hooks")]

#[path = "circuits/mod.rs"]
mod circuits;
#[cfg(target_os = "linux")]
#[path = "cpu_time/mod.rs"]
mod cpu_time;

use blstrs::Scalar;
use circuits::Squares;
#[cfg(target_os = "linux")]
use cpu_time::cpu_time_of;
use preemptible_groth16::gpu::backend::device_ids;
use preemptible_groth16::gpu::fake::{set_quotient_ns_per_value, FAKE_GPUS_ENV};
use preemptible_groth16::gpu::locks::{self, LOCK_DIR_ENV};
use preemptible_groth16::gpu::test_hooks::{limit_device_memory, set_cpu_chunk_ns_per_term};
use preemptible_groth16::gpu::{gpu_is_available, PriorityGuard};
use preemptible_groth16::groth16::{
    create_proof_batch_with_options, create_random_proof_with_options, generate_random_parameters,
    prepare_verifying_key, verify_proof, ParameterSource, Parameters, Priority, ProofReport,
    ProveOptions,
};
use rand::{thread_rng, SeedableRng};
use rand_chacha::ChaCha20Rng;
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

/// Terms per chunk; at 4 us per term a fake chunk takes about 16 ms.
const CHUNK: usize = 1 << 12;

static SERIAL: Mutex<()> = Mutex::new(());

/// A test's turn: its lock directory, removed when this is dropped (also when the test fails),
/// then the serializing guard.
struct Turn {
    _dir: tempfile::TempDir,
    _serial: MutexGuard<'static, ()>,
}

/// Serializes the tests, points the lock directory at a fresh folder, and sets up two fake
/// devices (read once per process, at the first proof).
fn setup(name: &str) -> Turn {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let _ = env_logger::builder().is_test(true).try_init();
    std::env::set_var(FAKE_GPUS_ENV, "2:4000");
    let dir = tempfile::Builder::new()
        .prefix(&format!("pg16-preempt-{name}-"))
        .tempdir()
        .unwrap();
    std::env::set_var(LOCK_DIR_ENV, dir.path());
    Turn {
        _dir: dir,
        _serial: serial,
    }
}

struct Setup {
    circuit: Squares,
    params: Parameters,
}

/// Parameters for the long (2^15 constraints) and short (2^12) circuits, made once.
fn long_and_short() -> &'static (Setup, Setup) {
    static SETUPS: OnceLock<(Setup, Setup)> = OnceLock::new();
    SETUPS.get_or_init(|| {
        let rng = &mut ChaCha20Rng::seed_from_u64(7);
        let make = |k: u32, rng: &mut ChaCha20Rng| {
            let circuit = Squares::log2(k);
            Setup {
                circuit,
                params: generate_random_parameters(circuit, rng).unwrap(),
            }
        };
        (make(15, rng), make(12, rng))
    })
}

fn options(priority: Priority, device: Option<&str>) -> ProveOptions {
    ProveOptions::with_priority(priority)
        .chunk_terms(CHUNK)
        .devices(device.map(|d| vec![d.to_string()]))
}

/// Proves and verifies; returns the report.
fn prove(setup: &Setup, options: &ProveOptions) -> ProofReport {
    let (proof, report) =
        create_random_proof_with_options(setup.circuit, &setup.params, &mut thread_rng(), options)
            .unwrap();
    let pvk = prepare_verifying_key(&setup.params.vk);
    let input: Scalar = setup.circuit.output();
    assert!(
        verify_proof(&pvk, &proof, &[input]).unwrap(),
        "proof verifies"
    );
    assert_eq!(
        report.gpu_chunks_total() + report.cpu_chunks,
        report.total_chunks,
        "every chunk computed exactly once: {report:?}"
    );
    // 3. A prover off the device tries for one at every chunk boundary.
    assert!(
        report.cpu_chunks_without_retry <= 1,
        "CPU chunks in a row with no try for a device: {report:?}"
    );
    if report.gpu_chunks_total() > 0 {
        // A fake multiexp holds 128 bytes per term.
        assert!(
            report.peak_device_bytes > 0,
            "device memory reported: {report:?}"
        );
    }
    report
}

/// Waits until a prover at `priority` holds `device`.
fn wait_for_holder(device: &str, priority: Priority) {
    let dir = locks::lock_dir();
    let start = Instant::now();
    loop {
        let s = locks::status(&dir, &[device.to_string()]).unwrap();
        if s[0].holder.as_ref().map(|h| h.priority) == Some(priority) {
            return;
        }
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "no {priority} holder of {device}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

/// A low prover of `long` on fake-0 and, 50 ms after it holds the device, a high one of `short`;
/// their reports.
/// Makes the fake devices' quotients take `ns` per value until the guard is dropped.
fn slow_fake_quotients(ns: u64) -> impl Drop {
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            set_quotient_ns_per_value(0);
        }
    }
    set_quotient_ns_per_value(ns);
    Restore
}

/// Lifts the fake devices' memory limit when dropped (also when the test fails), so that the
/// tests after it run without one.
fn memory_limit_lifted_at_the_end() -> impl Drop {
    struct Unlimit;
    impl Drop for Unlimit {
        fn drop(&mut self) {
            limit_device_memory(None);
        }
    }
    Unlimit
}

/// Whether a preempted low prover took multiexp chunks on the CPU: finished there, or given up to
/// its device when it came back. Its CPU threads run at the idle scheduling policy, so on a busy
/// machine (a build beside the tests) every chunk it started can still be in progress when the
/// device returns; a prover that never went on on the CPU has neither.
fn went_on_on_the_cpu(low: &ProofReport) -> bool {
    low.cpu_chunks + low.cpu_chunks_given_up > 0
}

fn low_then_high(long: &Setup, short: &Setup) -> (ProofReport, ProofReport) {
    std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Low);
        std::thread::sleep(Duration::from_millis(50));
        let high = prove(short, &options(Priority::High, Some("fake-0")));
        (low.join().unwrap(), high)
    })
}

#[test]
fn a_high_prover_takes_the_device_within_a_chunk_and_the_low_one_returns() {
    let _g = setup("handover");
    let (long, short) = long_and_short();
    assert_eq!(device_ids(), ["fake-0", "fake-1"]);
    let (low, high) = low_then_high(long, short);
    // 1. The high prover got the device within about one chunk of the holder (16 ms).
    let handover = high.handover.expect("the high prover asked a lower holder");
    assert!(handover < Duration::from_millis(500), "{high:?}");
    assert!(high.gpu_chunks_total() > 0 && high.fft_on_gpu, "{high:?}");
    assert_eq!(high.preemptions, 0);
    // ... and the low one freed all its device memory before releasing it.
    assert!(low.preemptions >= 1, "{low:?}");
    assert_eq!(low.live_device_bytes_at_release, 0, "{low:?}");
    assert!(low.yield_latency.unwrap() < Duration::from_millis(500));
    // 2. The low prover went on without recomputing (checked in `prove`), on the CPU too.
    assert!(went_on_on_the_cpu(&low), "{low:?}");
    // 3. When the device was free again it came back to it.
    assert!(low.returns_to_gpu >= 1, "{low:?}");
}

#[test]
fn a_prover_preempted_in_its_last_call_of_a_multiexp_returns_at_the_next_chunk() {
    let _g = setup("retry");
    let (_, short) = long_and_short();
    // Small chunks, so that a device's call (which grows towards 160 ms of work, and what a
    // device learns is kept for the process) holds every chunk left of a multiexp: a preemption
    // then puts them all back, and the prover's own loop must take them one at a time and try
    // for the device between them (`cpu_chunks_without_retry`, checked in `prove`), not compute
    // them all on the CPU after the high prover has gone. Requests at moments spread over the
    // whole low proof (its multiexps take about 1.5 s with these fakes on two cores), since
    // which call a request meets depends on timing: without the loop's fix, this failed in 2 of
    // 6 runs with six requests in the first 220 ms, hence the many.
    let low_options = options(Priority::Low, Some("fake-0")).chunk_terms(1 << 10);
    let alone = prove(short, &low_options);
    assert!(alone.gpu_chunks_total() > 0, "{alone:?}");
    let mut preempted = 0;
    for delay_ms in (20..1500).step_by(80) {
        let low = std::thread::scope(|s| {
            let low = s.spawn(|| prove(short, &low_options));
            wait_for_holder("fake-0", Priority::Low);
            std::thread::sleep(Duration::from_millis(delay_ms));
            prove(short, &options(Priority::High, Some("fake-0")));
            low.join().unwrap()
        });
        preempted += low.preemptions;
    }
    assert!(
        preempted >= 3,
        "the low prover was preempted {preempted} times"
    );
}

#[test]
fn a_preempted_call_keeps_the_chunks_it_had_finished() {
    let _g = setup("kept");
    let (long, short) = long_and_short();
    // Chunks of 4 ms: a call of the low prover's (grown towards 160 ms) holds dozens of them,
    // and a device computes a call in pieces (a fake one: a chunk each), so a request in the
    // middle of a call leaves the chunks before it in the sum; `prove` checks that every chunk
    // still counts exactly once.
    let low_options = options(Priority::Low, Some("fake-0")).chunk_terms(1 << 10);
    let (mut preempted, mut kept, mut lost) = (0, 0, Duration::ZERO);
    for delay_ms in [60, 140, 220] {
        let low = std::thread::scope(|s| {
            let low = s.spawn(|| prove(long, &low_options));
            wait_for_holder("fake-0", Priority::Low);
            std::thread::sleep(Duration::from_millis(delay_ms));
            prove(short, &options(Priority::High, Some("fake-0")));
            low.join().unwrap()
        });
        assert!(low.kept_chunks <= low.gpu_chunks_total(), "{low:?}");
        // What a stopped call threw away is device time within the proof.
        assert!(low.device_work_lost < low.total, "{low:?}");
        preempted += low.preemptions;
        kept += low.kept_chunks;
        lost += low.device_work_lost;
    }
    assert!(
        preempted >= 2,
        "the low prover was preempted {preempted} times"
    );
    assert!(
        kept > 0,
        "no preempted call kept a chunk in {preempted} preemptions"
    );
    // A call stopped in the middle of a piece (a fake one: a chunk of 4 ms) lost that piece's
    // work so far.
    assert!(
        lost > Duration::ZERO,
        "no device work lost in {preempted} preemptions"
    );
}

#[test]
fn a_prover_back_on_its_device_gives_up_the_cpu_chunk_in_progress() {
    let _g = setup("give-up");
    let (long, short) = long_and_short();
    // The low prover's CPU chunks 100x slower than the fake device's (400 us a term against 4:
    // at least 1.6 s a chunk, as a GPU is many times faster than its host's CPU; the high
    // prover's are not slowed). The low prover, preempted, starts a CPU chunk; the high proof
    // (about 0.6 s with these fakes on two cores) ends long before that chunk, and the low
    // prover, back on the device, gives the chunk up to it instead of waiting for it (the
    // device would otherwise stand idle, or the proof wait, for most of the chunk).
    struct Restore;
    impl Drop for Restore {
        fn drop(&mut self) {
            set_cpu_chunk_ns_per_term(0);
        }
    }
    set_cpu_chunk_ns_per_term(400_000);
    let _restore = Restore;
    let (mut returned, mut given_up) = (0, 0);
    for delay_ms in [50, 150, 250] {
        let low = std::thread::scope(|s| {
            let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
            wait_for_holder("fake-0", Priority::Low);
            std::thread::sleep(Duration::from_millis(delay_ms));
            prove(short, &options(Priority::High, Some("fake-0")));
            low.join().unwrap()
        });
        // Checked in `prove`: every chunk counted once, where it was finished.
        returned += low.returns_to_gpu;
        given_up += low.cpu_chunks_given_up;
    }
    assert!(returned >= 1, "the low prover never came back");
    assert!(
        given_up >= 1,
        "no CPU chunk given up in {returned} returns to the device"
    );
}

#[test]
fn a_quotient_interrupted_on_the_device_is_put_off_and_done_there_later() {
    let _g = setup("deferred");
    let (long, short) = long_and_short();
    // Quotients of 20 us per value: the low prover's 2^15 values take about 650 ms, so the high
    // prover asks while the low one is inside its quotient.
    let _slow = slow_fake_quotients(20_000);
    let (low, high) = low_then_high(long, short);
    assert!(high.fft_on_gpu && high.handover.is_some(), "{high:?}");
    assert!(!high.quotient_deferred, "{high:?}");
    // The low prover lost the device inside its quotient and did not hand the quotient to
    // the CPU: it did its other multiexps first (partly on the CPU) ...
    assert!(low.preemptions >= 1 && low.quotient_deferred, "{low:?}");
    assert!(went_on_on_the_cpu(&low), "{low:?}");
    // ... and by then the device was free again and computed it, in steps kept on the host
    // (all four of them there).
    assert!(low.returns_to_gpu >= 1 && low.fft_on_gpu, "{low:?}");
    assert_eq!(low.quotient_steps_on_gpu, 4, "{low:?}");
    assert_eq!(high.quotient_steps_on_gpu, 0, "{high:?}");
    // Its first try went whole (2^15 values, under `stepped_quotient_from`): the device time
    // it had spent in it (most of the 50 ms before the request) was lost.
    assert_eq!(low.quotient_first_try_steps, 0, "{low:?}");
    assert!(low.device_work_lost >= Duration::from_millis(10), "{low:?}");
}

/// A put-off quotient that finds every device wanted by a higher priority waits for one (up to
/// its limit, then the CPU computes it), and the report counts that wait.
#[test]
fn a_put_off_quotient_counts_its_wait_for_a_device() {
    let _g = setup("quotient-wait");
    let (long, _) = long_and_short();
    let _slow = slow_fake_quotients(20_000);
    let low = std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Low);
        std::thread::sleep(Duration::from_millis(50));
        // High flags on every device for the rest of the low proof: it yields inside its
        // quotient and cannot take a device again.
        let guard = PriorityGuard::acquire(Priority::High).unwrap();
        let low = low.join().unwrap();
        drop(guard);
        low
    });
    assert!(low.preemptions >= 1 && low.quotient_deferred, "{low:?}");
    assert_eq!(low.returns_to_gpu, 0, "{low:?}");
    // 2^15 values at 0.5 us each: the put-off quotient waited about 16 ms for a device.
    assert!(low.wait >= Duration::from_millis(12), "{low:?}");
}

#[test]
fn a_low_quotient_in_steps_from_its_first_try_keeps_them_when_interrupted() {
    let _g = setup("stepped");
    let (long, short) = long_and_short();
    // A quotient of about 1.3 s on the fake device (40 us per value), in four steps of about
    // 330 ms here from the first try; the high prover asks about 650 ms in, inside the second
    // step, with a wide margin on either side (the first step is done at about 330 ms, the
    // whole quotient at about 1.3 s).
    let _slow = slow_fake_quotients(40_000);
    let stepped = options(Priority::Low, Some("fake-0")).stepped_quotient_from(0);
    let (low, high) = std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &stepped));
        wait_for_holder("fake-0", Priority::Low);
        std::thread::sleep(Duration::from_millis(650));
        let high = prove(short, &options(Priority::High, Some("fake-0")));
        (low.join().unwrap(), high)
    });
    assert!(high.fft_on_gpu && high.handover.is_some(), "{high:?}");
    // The steps finished before the request were kept, and the put-off quotient went on from
    // them: no step was done twice, and all four were done on the device.
    assert!(low.quotient_deferred, "{low:?}");
    assert!((1..=3).contains(&low.quotient_first_try_steps), "{low:?}");
    assert_eq!(low.quotient_steps_on_gpu, 4, "{low:?}");
    assert!(!high.quotient_deferred, "{high:?}");
    // Only the step in progress was lost: the time since the first step ended (about 320 ms),
    // not the try's 650 ms.
    assert!(
        low.device_work_lost > Duration::ZERO && low.device_work_lost < Duration::from_millis(550),
        "{low:?}"
    );
}

#[test]
fn equal_priorities_do_not_preempt_each_other() {
    let _g = setup("equal");
    let (long, short) = long_and_short();
    std::thread::scope(|s| {
        let first = s.spawn(|| prove(long, &options(Priority::Normal, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Normal);
        let second = prove(short, &options(Priority::Normal, Some("fake-0")));
        let first = first.join().unwrap();
        assert_eq!(first.preemptions, 0, "{first:?}");
        assert_eq!(second.handover, None, "{second:?}");
        assert_eq!(second.wait, Duration::ZERO, "no waiting for an equal");
    });
}

#[test]
fn three_levels_each_higher_one_takes_over() {
    let _g = setup("three");
    let (long, short) = long_and_short();
    std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Low);
        let normal = s.spawn(|| prove(long, &options(Priority::Normal, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Normal);
        // The seed's case: C (high) takes over from B (normal); B goes on on the CPU beside A.
        let high = prove(short, &options(Priority::High, Some("fake-0")));
        let normal = normal.join().unwrap();
        let low = low.join().unwrap();
        assert!(
            high.handover.is_some() && high.gpu_chunks_total() > 0,
            "{high:?}"
        );
        assert!(
            normal.handover.is_some(),
            "normal took the device from low: {normal:?}"
        );
        assert!(
            normal.preemptions >= 1,
            "high took it from normal: {normal:?}"
        );
        assert!(low.preemptions >= 1, "{low:?}");
    });
}

#[test]
fn a_high_prover_takes_a_free_device_before_preempting() {
    let _g = setup("free-first");
    let (long, short) = long_and_short();
    std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Low);
        // Both devices are candidates; fake-1 is free.
        let high = prove(short, &options(Priority::High, None));
        let low = low.join().unwrap();
        assert_eq!(high.handover, None, "{high:?}");
        assert!(
            high.gpu_chunks.iter().any(|(d, c)| d == "fake-1" && *c > 0),
            "{high:?}"
        );
        assert_eq!(low.preemptions, 0, "{low:?}");
    });
}

/// A batch's proofs, one after another, never yield to each other, at any level. At the lowest two
/// levels a holder keeps its own level's flag raised and has higher flags to probe, so a probe
/// that counted its own level (the seed's third review question) would make it yield to itself
/// here; at the highest there is nothing above to probe.
#[test]
fn a_batch_never_preempts_itself() {
    let _g = setup("batch");
    let (_, short) = long_and_short();
    for priority in [Priority::Low, Priority::Normal, Priority::High] {
        let circuits = vec![short.circuit; 3];
        let r = vec![Scalar::from(3u64); 3];
        let s = vec![Scalar::from(5u64); 3];
        let proofs = create_proof_batch_with_options(
            circuits,
            &short.params,
            r,
            s,
            &options(priority, None),
        )
        .unwrap();
        let pvk = prepare_verifying_key(&short.params.vk);
        for (proof, report) in proofs {
            assert!(verify_proof(&pvk, &proof, &[short.circuit.output()]).unwrap());
            assert_eq!(
                (report.preemptions, report.handover),
                (0, None),
                "{priority}: {report:?}"
            );
            assert!(report.gpu_chunks_total() > 0, "{priority}: {report:?}");
        }
    }
}

#[test]
fn an_unusable_lock_directory_means_a_cpu_run() {
    let _g = setup("unusable");
    let (_, short) = long_and_short();
    // A path below a regular file cannot be a directory.
    let file = locks::lock_dir().join("not-a-dir");
    std::fs::write(&file, b"").unwrap();
    std::env::set_var(LOCK_DIR_ENV, file.join("locks"));
    let report = prove(short, &options(Priority::High, None));
    assert_eq!(report.gpu_chunks_total(), 0, "{report:?}");
    assert!(!report.fft_on_gpu);
}

/// A device with too little memory for the work: what fits runs there, the rest (here the
/// quotient) on the CPU, without failing the device; when not even one chunk fits, the CPU does
/// everything. The report counts each out-of-memory; both proofs verify and every chunk is
/// computed exactly once (`prove`). (Cutting a run of several chunks after running out of memory
/// is `scheduler::batch::next_batch`'s unit test: the fake devices' speed here keeps runs at one
/// chunk.)
/// The lock directory deleted under a running low prover: the holder notices at its next probe
/// (its lock file is no longer the one at the path) and gives the device up; a high prover
/// started after that makes the directory again and takes the device; both proofs verify and
/// nothing stays locked.
#[test]
fn a_deleted_lock_directory_loses_no_proof() {
    let _g = setup("deleted");
    let (long, short) = long_and_short();
    let dir = locks::lock_dir();
    std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Low);
        std::fs::remove_dir_all(&dir).unwrap();
        let high = prove(short, &options(Priority::High, Some("fake-0")));
        let low = low.join().unwrap();
        assert!(high.gpu_chunks_total() > 0, "{high:?}");
        assert!(
            low.preemptions >= 1,
            "the low prover gave the device up: {low:?}"
        );
    });
    let status = locks::status(&dir, &["fake-0".to_string()]).unwrap();
    assert!(
        status[0].holder.is_none() && status[0].wanted_at.is_empty(),
        "{status:?}"
    );
}

/// A device that fails after some of a proof's work (its fourth call): what it finished counts,
/// the failed run and the rest go to the CPU, and the report says so.
#[test]
fn a_device_failing_in_the_middle_of_a_proof_loses_no_work() {
    let _g = setup("midfail");
    let (long, _) = long_and_short();
    let device = device_ids()[0].clone();
    preemptible_groth16::gpu::test_hooks::inject_failures_after(Some(3));
    let report = prove(long, &options(Priority::Normal, Some(&device)));
    preemptible_groth16::gpu::test_hooks::inject_failures_after(None);
    assert_eq!(report.gpu_failures, 1, "{report:?}");
    assert!(report.gpu_chunks_total() >= 3, "{report:?}");
    assert!(report.cpu_chunks > 0, "{report:?}");
    assert_eq!(report.live_device_bytes_at_release, 0, "{report:?}");
}

#[test]
fn a_device_out_of_memory_leaves_what_does_not_fit_to_the_cpu() {
    let _g = setup("oom");
    let _unlimit = memory_limit_lifted_at_the_end();
    let (long, _) = long_and_short();
    // The fake device needs 128 bytes per multiexp term: room for one and a half chunks, not for
    // the quotient's three vectors of 2^15 values.
    limit_device_memory(Some(128 * 3 * CHUNK as u64 / 2));
    let report = prove(long, &options(Priority::Normal, None));
    assert!(report.gpu_chunks_total() > 0, "{report:?}");
    assert_eq!(report.gpu_failures, 0, "{report:?}");
    assert!(!report.fft_on_gpu, "{report:?}");
    assert!(report.out_of_memory >= 1, "{report:?}");

    // Room for less than one chunk: the CPU does everything.
    limit_device_memory(Some(1000));
    let report = prove(long, &options(Priority::Normal, None));
    assert_eq!(report.gpu_chunks_total(), 0, "{report:?}");
    assert!(report.gpu_failures >= 1, "{report:?}");
    assert!(report.out_of_memory >= 2, "{report:?}");
}

/// Fills `dir` with empty files until the file system refuses one; returns them.
#[cfg(target_os = "linux")]
fn fill(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for i in 0.. {
        let f = dir.join(format!("filler-{i}"));
        match std::fs::File::create(&f) {
            Ok(_) => files.push(f),
            Err(e) => {
                assert_eq!(e.raw_os_error(), Some(28), "expected ENOSPC, got {e}");
                break;
            }
        }
        assert!(i < 10_000, "the file system never filled up");
    }
    files
}

/// A lock directory on a file system that is full: a prover that cannot create its files proves
/// on the CPU; one that holds its device when the file system fills keeps proving beside a higher
/// one, every proof verifies and nothing stays locked. Needs to mount a tmpfs (root, as in CI):
/// ignored by default, run by `scripts/test.sh` when it runs as root; run by hand it fails where
/// it cannot mount.
#[cfg(target_os = "linux")]
#[test]
#[ignore = "needs root to mount a tmpfs; run with --ignored as root (scripts/test.sh does)"]
fn a_full_lock_directory_loses_no_proof() {
    // Holds the lock directory: removed when dropped, after the unmount, also when an assertion
    // fails.
    let _g = setup("full");
    let (long, short) = long_and_short();
    let dir = locks::lock_dir();
    let mount = std::process::Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=1m,nr_inodes=48", "tmpfs"])
        .arg(&dir)
        .status();
    assert!(
        matches!(mount, Ok(ref s) if s.success()),
        "cannot mount a small tmpfs on {} ({mount:?}): this test needs root",
        dir.display()
    );
    struct Unmount(std::path::PathBuf);
    impl Drop for Unmount {
        fn drop(&mut self) {
            let _ = std::process::Command::new("umount").arg(&self.0).status();
        }
    }
    let _unmount = Unmount(dir.clone());

    // Full before anyone starts: no lock file can be made.
    let fillers = fill(&dir);
    let report = prove(short, &options(Priority::High, None));
    assert_eq!(report.gpu_chunks_total(), 0, "{report:?}");
    for f in &fillers {
        std::fs::remove_file(f).unwrap();
    }

    // Fills up while a low prover holds the devices.
    let devices = device_ids();
    std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &options(Priority::Low, None)));
        let t0 = Instant::now();
        while locks::status(&dir, &devices)
            .unwrap()
            .iter()
            .all(|d| d.holder.is_none())
        {
            assert!(
                t0.elapsed() < Duration::from_secs(60),
                "the low prover never took a device"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        let fillers = fill(&dir);
        let high = prove(short, &options(Priority::High, None));
        let low = low.join().unwrap();
        for f in &fillers {
            std::fs::remove_file(f).unwrap();
        }
        // Both proofs verified (`prove`). Whether the high one got a device depends on whether
        // the low one freed an inode (its own flag file) while the high one asked: either is fine.
        assert!(low.gpu_chunks_total() > 0, "{low:?}");
        assert_eq!(high.priority, Priority::High);
    });
    for d in locks::status(&dir, &devices).unwrap() {
        assert!(d.holder.is_none() && d.wanted_at.is_empty(), "{d:?}");
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_waiting_prover_sleeps() {
    let _g = setup("sleeps");
    let (_, short) = long_and_short();
    let dir = locks::lock_dir();
    // A low holder that never yields: the high prover waits for it (at most 10 s).
    let lock = locks::GpuLock::try_acquire(&dir, "fake-0", Priority::Low)
        .unwrap()
        .unwrap();
    std::thread::scope(|s| {
        let high = s.spawn(|| prove(short, &options(Priority::High, Some("fake-0"))));
        std::thread::sleep(Duration::from_millis(300));
        let (cpu, wall) = (cpu_time_of("self"), Instant::now());
        std::thread::sleep(Duration::from_millis(1500));
        let used = cpu_time_of("self") - cpu;
        let window = wall.elapsed();
        eprintln!("waiting prover: {used:?} of CPU in {window:?}");
        drop(lock);
        let high = high.join().unwrap();
        assert!(
            used.as_secs_f64() < 0.05 * window.as_secs_f64(),
            "the waiting prover used {used:?} of CPU in {window:?}"
        );
        assert!(high.wait > Duration::from_secs(1), "{high:?}");
        assert!(
            high.handover.is_some() && high.gpu_chunks_total() > 0,
            "{high:?}"
        );
    });
}

#[test]
fn a_priority_guard_keeps_lower_provers_off_across_proofs() {
    let _g = setup("guard");
    let (_, short) = long_and_short();
    assert!(gpu_is_available().unwrap());
    let guard = PriorityGuard::acquire(Priority::High).unwrap();
    // Lower priorities do not take a device while the guard lives...
    let low = prove(short, &options(Priority::Normal, None));
    assert_eq!(low.gpu_chunks_total(), 0, "{low:?}");
    assert!(!low.fft_on_gpu);
    // ... the guard's own level is not held back by it, proof after proof ...
    for _ in 0..2 {
        let high = prove(short, &options(Priority::High, None));
        assert!(high.gpu_chunks_total() > 0 && high.fft_on_gpu, "{high:?}");
        assert_eq!(high.preemptions, 0);
    }
    drop(guard);
    // ... and after it, lower ones use the devices again.
    let low = prove(short, &options(Priority::Normal, None));
    assert!(low.gpu_chunks_total() > 0, "{low:?}");
    assert!(gpu_is_available().unwrap());
}

/// A lower prover that tries for a device while a higher priority asks for it (here a guard's
/// flag) does not take it even for the moment its own probe would take to find the request: a
/// high prover trying then would find the device busy. Sampled from the lock file's text alone
/// (a status view's flag probes could hide a raised flag from the low prover's probe).
#[test]
fn a_lower_prover_does_not_take_a_device_a_higher_one_asks_for() {
    let _g = setup("no-take-when-asked");
    let (long, _) = long_and_short();
    let dir = locks::lock_dir();
    let low_holds =
        || locks::holder_text(&dir, "fake-0").is_some_and(|h| h.priority == Priority::Low);
    let (low, seen) = std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Low);
        let guard = PriorityGuard::acquire(Priority::High).unwrap();
        let released = Instant::now();
        while low_holds() {
            assert!(
                released.elapsed() < Duration::from_secs(5),
                "the low prover never yielded"
            );
            std::thread::sleep(Duration::from_micros(50));
        }
        // The low prover goes on on the CPU and tries for the device between its chunks.
        let mut seen = 0;
        let watching = Instant::now();
        while watching.elapsed() < Duration::from_millis(400) {
            seen += usize::from(low_holds());
            std::thread::sleep(Duration::from_micros(50));
        }
        drop(guard);
        (low.join().unwrap(), seen)
    });
    assert!(low.preemptions >= 1 && low.returns_to_gpu >= 1, "{low:?}");
    assert_eq!(
        seen, 0,
        "the low prover held the device while asked for: {low:?}"
    );
}

/// A circuit whose witness takes `delay` before its squares: a deadline-bound proof whose
/// synthesis is long enough for a hand-over to fit in it. `synthesized` is when it ended.
#[derive(Clone, Copy)]
struct SlowWitness<'a> {
    squares: Squares,
    delay: Duration,
    synthesized: &'a Mutex<Option<Instant>>,
}

impl preemptible_groth16::Circuit<Scalar> for SlowWitness<'_> {
    fn synthesize<CS: preemptible_groth16::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), preemptible_groth16::SynthesisError> {
        std::thread::sleep(self.delay);
        self.squares.synthesize(cs)?;
        *self.synthesized.lock().unwrap() = Some(Instant::now());
        Ok(())
    }
}

/// When the low prover holding `device` (it holds it when this is called) first lets it go,
/// sampled every 0.5 ms until `stop`.
fn low_released(device: &str, stop: &std::sync::atomic::AtomicBool) -> Option<Instant> {
    let dir = locks::lock_dir();
    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
        let s = locks::status(&dir, &[device.to_string()]).unwrap();
        if s[0].holder.as_ref().map(|h| h.priority) != Some(Priority::Low) {
            return Some(Instant::now());
        }
        std::thread::sleep(Duration::from_micros(500));
    }
    None
}

/// A high prover that takes a `PriorityGuard` before its synthesis (the README's recipe for a
/// deadline-bound proof) has the device handed over during its synthesis: the low prover lets
/// it go before the synthesis ends, and the high one finds it free, with no hand-over to wait
/// for (the low prover does not try for a device the guard's flag asks for). Without the guard
/// the low prover lets it go only after the high one asks, once its synthesis is done, and the
/// high one waits for that.
#[test]
fn a_guard_taken_before_synthesis_has_the_device_handed_over_during_it() {
    let _g = setup("guard-synthesis");
    let (long, short) = long_and_short();
    let pvk = prepare_verifying_key(&short.params.vk);
    let run = |guarded: bool| -> (ProofReport, ProofReport, Instant, Instant) {
        let synthesized = Mutex::new(None);
        let slow = SlowWitness {
            squares: short.circuit,
            delay: Duration::from_millis(300),
            synthesized: &synthesized,
        };
        let stop = std::sync::atomic::AtomicBool::new(false);
        let (low, high, released) = std::thread::scope(|s| {
            let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
            wait_for_holder("fake-0", Priority::Low);
            let released = s.spawn(|| low_released("fake-0", &stop));
            let guard = guarded.then(|| PriorityGuard::acquire(Priority::High).unwrap());
            let (proof, high) = create_random_proof_with_options(
                slow,
                &short.params,
                &mut thread_rng(),
                &options(Priority::High, Some("fake-0")),
            )
            .unwrap();
            drop(guard);
            stop.store(true, std::sync::atomic::Ordering::Relaxed);
            assert!(verify_proof(&pvk, &proof, &[short.circuit.output()]).unwrap());
            (low.join().unwrap(), high, released.join().unwrap())
        });
        let released = released.expect("the low prover let the device go");
        let synthesized = synthesized.lock().unwrap().expect("synthesized");
        (low, high, released, synthesized)
    };
    let (low, high, released, synthesized) = run(true);
    assert!(low.preemptions >= 1, "{low:?}");
    assert!(
        released < synthesized && high.handover.is_none(),
        "with the guard the low prover yields during the synthesis: {high:?}"
    );
    assert!(high.fft_on_gpu && high.gpu_chunks_total() > 0, "{high:?}");
    let (low, high, released, synthesized) = run(false);
    assert!(low.preemptions >= 1, "{low:?}");
    assert!(
        released > synthesized && high.handover.is_some(),
        "without the guard the high prover asks after its synthesis: {high:?}"
    );
}

/// A circuit whose synthesis makes another proof first (a proof started from inside another
/// proof's thread).
struct Nested<'a> {
    inner: &'a Setup,
    inner_options: ProveOptions,
    outer: Squares,
    inner_report: &'a Mutex<Option<ProofReport>>,
}

impl preemptible_groth16::Circuit<Scalar> for Nested<'_> {
    fn synthesize<CS: preemptible_groth16::ConstraintSystem<Scalar>>(
        self,
        cs: &mut CS,
    ) -> Result<(), preemptible_groth16::SynthesisError> {
        if self.inner_report.lock().unwrap().is_none() {
            let report = prove(self.inner, &self.inner_options);
            *self.inner_report.lock().unwrap() = Some(report);
        }
        self.outer.synthesize(cs)
    }
}

#[test]
fn a_proof_inside_another_proofs_thread_does_not_deadlock() {
    let _g = setup("nested");
    let (long, short) = long_and_short();
    let inner_report = Mutex::new(None);
    std::thread::scope(|s| {
        let low = s.spawn(|| prove(long, &options(Priority::Low, Some("fake-0"))));
        wait_for_holder("fake-0", Priority::Low);
        let circuit = Nested {
            inner: short,
            inner_options: options(Priority::High, Some("fake-0")),
            outer: short.circuit,
            inner_report: &inner_report,
        };
        let (proof, outer) = create_random_proof_with_options(
            circuit,
            &short.params,
            &mut thread_rng(),
            &options(Priority::Normal, Some("fake-0")),
        )
        .unwrap();
        let pvk = prepare_verifying_key(&short.params.vk);
        assert!(verify_proof(&pvk, &proof, &[short.circuit.output()]).unwrap());
        let inner = inner_report
            .lock()
            .unwrap()
            .take()
            .expect("the inner proof ran");
        assert!(
            inner.handover.is_some(),
            "the inner high proof took the device: {inner:?}"
        );
        assert_eq!(
            outer.gpu_chunks_total() + outer.cpu_chunks,
            outer.total_chunks
        );
        let low = low.join().unwrap();
        assert!(low.preemptions >= 1, "{low:?}");
    });
}

/// Behaviour 1 with chunks long enough that the test's own scheduling noise is small beside one:
/// a high prover asking for the device while a low one is in the middle of its work gets it in
/// less than one chunk of the holder's (which probes within its chunks, as a real kernel does
/// between launches), and the holder's own report says so too.
#[test]
fn a_high_prover_waits_less_than_one_chunk_of_the_holder() {
    let _g = setup("one-chunk");
    let (long, short) = long_and_short();
    // 2^15 terms at 4 us: a chunk takes about 131 ms of fake device time (a 65 ms chunk failed
    // once in 15 runs beside two busy loops on the 2-core development machine).
    let chunk_terms = 1 << 15;
    let chunk = Duration::from_micros(4 * chunk_terms as u64);
    let low_options = options(Priority::Low, Some("fake-0")).chunk_terms(chunk_terms);
    for delay_ms in [30, 90] {
        let (low, high) = std::thread::scope(|s| {
            let low = s.spawn(|| prove(long, &low_options));
            wait_for_holder("fake-0", Priority::Low);
            std::thread::sleep(Duration::from_millis(delay_ms));
            let high = prove(short, &options(Priority::High, Some("fake-0")));
            (low.join().unwrap(), high)
        });
        let handover = high.handover.expect("the high prover asked a lower holder");
        assert!(
            handover < chunk,
            "hand-over {handover:?} of a {chunk:?} chunk: {high:?}"
        );
        assert!(low.preemptions >= 1, "{low:?}");
        let released = low.yield_latency.expect("the low prover yielded");
        assert!(
            released < chunk,
            "released {released:?} after the request: {low:?}"
        );
        assert_eq!(low.live_device_bytes_at_release, 0, "{low:?}");
    }
}

/// The seed's third review question with the guard: a prover at the guard's own level, which
/// keeps that level's flag raised on every device, is not held back by it (at the highest level
/// there would be nothing above to probe, so the test runs one below it), and a lower one is.
#[test]
fn a_guard_does_not_hold_back_its_own_level() {
    let _g = setup("guard-normal");
    let (_, short) = long_and_short();
    let guard = PriorityGuard::acquire(Priority::Normal).unwrap();
    for _ in 0..2 {
        let normal = prove(short, &options(Priority::Normal, None));
        assert!(
            normal.gpu_chunks_total() > 0 && normal.fft_on_gpu,
            "{normal:?}"
        );
        assert_eq!(normal.preemptions, 0, "{normal:?}");
    }
    let low = prove(short, &options(Priority::Low, None));
    assert_eq!(low.gpu_chunks_total(), 0, "{low:?}");
    drop(guard);
}

/// `gpu_is_available` says no while every device is held, yes when one is free, and counts a
/// device whose lock file cannot be used (a directory, a symlink, a FIFO) as not free, without an
/// error for the others.
#[test]
fn gpu_is_available_answers_from_the_locks() {
    let _g = setup("available");
    let _ = long_and_short();
    let dir = locks::lock_dir();
    assert!(gpu_is_available().unwrap());
    let held: Vec<_> = device_ids()
        .iter()
        .map(|d| {
            locks::GpuLock::try_acquire(&dir, d, Priority::Low)
                .unwrap()
                .unwrap()
        })
        .collect();
    assert!(!gpu_is_available().unwrap());
    drop(held);
    assert!(gpu_is_available().unwrap());
    // A lock file that is a directory cannot be used; the other device decides.
    let lock_file = dir.join("pg16-fake-0.lock");
    std::fs::remove_file(&lock_file).unwrap();
    std::fs::create_dir(&lock_file).unwrap();
    assert!(gpu_is_available().unwrap(), "fake-1 is free");
    let others: Vec<_> = device_ids()
        .iter()
        .filter(|d| d.as_str() != "fake-0")
        .map(|d| {
            locks::GpuLock::try_acquire(&dir, d, Priority::Low)
                .unwrap()
                .unwrap()
        })
        .collect();
    assert!(
        !gpu_is_available().unwrap(),
        "fake-0 unusable, the rest held"
    );
    drop(others);
}

/// Lock files that cannot be opened (here directories in their place; for another user's files
/// the open fails the same way): a warning and a proof on the CPU, which verifies.
#[test]
fn lock_files_that_cannot_be_opened_mean_a_cpu_run() {
    let _g = setup("unopenable");
    let (_, short) = long_and_short();
    let dir = locks::lock_dir();
    for d in device_ids() {
        std::fs::create_dir(dir.join(format!("pg16-{d}.lock"))).unwrap();
    }
    let report = prove(short, &options(Priority::High, None));
    assert_eq!(report.gpu_chunks_total(), 0, "{report:?}");
    assert!(!report.fft_on_gpu, "{report:?}");
}

/// Parameters whose `L` query, when first read, makes another proof on the same thread: a proof
/// started while this thread's proof holds a claim (the only way user code runs inside a proof
/// after synthesis).
struct ProvingParams<'a> {
    params: &'a Parameters,
    /// Reads of the `L` query so far: the first two (the assignment's capacity before synthesis,
    /// the checks after it) come before the proof's claim, the third is the L multiexp's.
    l_reads: std::sync::atomic::AtomicUsize,
    inner: &'a Setup,
    inner_options: ProveOptions,
    inner_report: &'a Mutex<Option<ProofReport>>,
}

impl ParameterSource for ProvingParams<'_> {
    fn vk(&self) -> &preemptible_groth16::groth16::VerifyingKey {
        &self.params.vk
    }
    fn h(&self) -> preemptible_groth16::groth16::Bases<'_, blstrs::G1Affine> {
        self.params.h()
    }
    fn l(&self) -> preemptible_groth16::groth16::Bases<'_, blstrs::G1Affine> {
        let reads = self
            .l_reads
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut report = self.inner_report.lock().unwrap();
        if reads == 2 && report.is_none() {
            *report = Some(prove(self.inner, &self.inner_options));
        }
        self.params.l()
    }
    fn a(&self) -> preemptible_groth16::groth16::Bases<'_, blstrs::G1Affine> {
        self.params.a()
    }
    fn b_g1(&self) -> preemptible_groth16::groth16::Bases<'_, blstrs::G1Affine> {
        self.params.b_g1()
    }
    fn b_g2(&self) -> preemptible_groth16::groth16::Bases<'_, blstrs::G2Affine> {
        self.params.b_g2()
    }
}

/// Behaviour 5: a high proof started on the thread of a normal proof that holds the device does
/// not wait for that device (the outer proof, blocked on the inner one, could not give it up):
/// it starts at once, and the outer proof's watcher hands the device over.
#[test]
fn a_proof_started_while_its_thread_holds_a_claim_does_not_wait_for_it() {
    let _g = setup("claim-on-thread");
    let (_, short) = long_and_short();
    let inner_report = Mutex::new(None);
    let params = ProvingParams {
        params: &short.params,
        l_reads: Default::default(),
        inner: short,
        inner_options: options(Priority::High, Some("fake-0")),
        inner_report: &inner_report,
    };
    let (proof, outer) = create_random_proof_with_options(
        short.circuit,
        &params,
        &mut thread_rng(),
        &options(Priority::Normal, Some("fake-0")),
    )
    .unwrap();
    let pvk = prepare_verifying_key(&short.params.vk);
    assert!(verify_proof(&pvk, &proof, &[short.circuit.output()]).unwrap());
    let inner = inner_report
        .lock()
        .unwrap()
        .take()
        .expect("the inner proof ran");
    // Waiting for the outer claim's device would have lasted the whole start wait (10 s).
    assert_eq!(inner.wait, Duration::ZERO, "{inner:?}");
    assert_eq!(
        outer.gpu_chunks_total() + outer.cpu_chunks,
        outer.total_chunks
    );
    // The outer proof held the device when the inner one asked, and gave it up.
    assert!(outer.preemptions >= 1, "{outer:?}");
}

/// Equal levels share without preempting: a normal prover that finds the device held by another
/// normal one (a service proving back to back) computes on the CPU and takes the device at a
/// chunk boundary when it is free between the service's proofs, rather than never.
#[test]
fn an_equal_prover_gets_the_device_between_a_services_proofs() {
    let _g = setup("equal-turns");
    let (long, short) = long_and_short();
    let done = std::sync::atomic::AtomicBool::new(false);
    let (service, other) = std::thread::scope(|s| {
        let service = s.spawn(|| {
            let mut reports = Vec::new();
            while !done.load(std::sync::atomic::Ordering::Relaxed) {
                reports.push(prove(short, &options(Priority::Normal, Some("fake-0"))));
            }
            reports
        });
        wait_for_holder("fake-0", Priority::Normal);
        let other = prove(long, &options(Priority::Normal, Some("fake-0")));
        done.store(true, std::sync::atomic::Ordering::Relaxed);
        (service.join().unwrap(), other)
    });
    assert!(service.len() >= 2, "{} service proofs", service.len());
    for r in service.iter().chain([&other]) {
        assert_eq!(r.preemptions, 0, "{r:?}");
    }
    assert!(other.gpu_chunks_total() > 0, "{other:?}");
    eprintln!(
        "equal turns: {} service proofs; the other prover's chunks: {} on the device, {} on the CPU",
        service.len(),
        other.gpu_chunks_total(),
        other.cpu_chunks
    );
}

/// Bytes of all the query points of `params`, as they go up to a device (a fake one counts 96
/// bytes a G1 point, 192 a G2 one).
fn query_bytes(params: &Parameters) -> u64 {
    let g1 = params.h().len() + params.l().len() + params.a().len() + params.b_g1().len();
    (96 * g1 + 192 * params.b_g2().len()) as u64
}

/// The bases uploaded by a batch of `count` short proofs on fake-0, with bases kept on the
/// device or not; every proof verifies.
fn batch_uploads(setup: &Setup, count: usize, keep: bool) -> Vec<ProofReport> {
    let options = options(Priority::Normal, Some("fake-0")).keep_bases_on_device(keep);
    let proofs = create_proof_batch_with_options(
        vec![setup.circuit; count],
        &setup.params,
        vec![Scalar::from(3u64); count],
        vec![Scalar::from(5u64); count],
        &options,
    )
    .unwrap();
    let pvk = prepare_verifying_key(&setup.params.vk);
    proofs
        .into_iter()
        .map(|(proof, report)| {
            assert!(verify_proof(&pvk, &proof, &[setup.circuit.output()]).unwrap());
            report
        })
        .collect()
}

#[test]
fn a_batch_uploads_its_bases_once_and_frees_them_at_its_end() {
    let _g = setup("kept-bases");
    let (_, short) = long_and_short();
    let total = query_bytes(&short.params);
    let kept = batch_uploads(short, 4, true);
    let uploaded: Vec<u64> = kept.iter().map(|r| r.bases_uploaded_bytes).collect();
    // Nothing preempted the batch: each base went up at most once in all.
    assert!(uploaded[0] > 0, "{kept:?}");
    assert!(
        uploaded.iter().sum::<u64>() <= total,
        "{uploaded:?} uploaded for {total} bytes of bases"
    );
    for report in &kept {
        assert_eq!(report.preemptions, 0, "{report:?}");
        assert!(report.gpu_chunks_total() > 0, "{report:?}");
    }
    // Freed at the batch's end, before the device went back.
    let last = kept.last().unwrap();
    assert_eq!(last.live_device_bytes_at_release, 0, "{last:?}");
    for device in preemptible_groth16::gpu::backend::devices() {
        assert_eq!(device.live_device_bytes(), 0, "{}", device.id);
    }
    // Without keeping them, each proof uploads what its device computes.
    let each: u64 = batch_uploads(short, 4, false)
        .iter()
        .map(|r| r.bases_uploaded_bytes)
        .sum();
    assert!(
        2 * uploaded.iter().sum::<u64>() < each,
        "kept {uploaded:?}, not kept {each} in all"
    );
}

#[test]
fn a_batch_preempted_frees_the_bases_it_kept_before_it_yields() {
    let _g = setup("kept-bases-preempted");
    let (long, short) = long_and_short();
    std::thread::scope(|s| {
        let low = s.spawn(|| {
            let options = options(Priority::Low, Some("fake-0"));
            create_proof_batch_with_options(
                vec![long.circuit; 2],
                &long.params,
                vec![Scalar::from(3u64); 2],
                vec![Scalar::from(5u64); 2],
                &options,
            )
            .unwrap()
        });
        wait_for_holder("fake-0", Priority::Low);
        std::thread::sleep(Duration::from_millis(50));
        let high = prove(short, &options(Priority::High, Some("fake-0")));
        assert!(high.gpu_chunks_total() > 0, "{high:?}");
        let low = low.join().unwrap();
        let pvk = prepare_verifying_key(&long.params.vk);
        let preemptions: u64 = low.iter().map(|(_, r)| r.preemptions).sum();
        assert!(preemptions > 0, "{low:?}");
        for (proof, report) in &low {
            assert!(verify_proof(&pvk, proof, &[long.circuit.output()]).unwrap());
            // The yield freed the kept bases with the rest: nothing left on the device.
            assert_eq!(report.live_device_bytes_at_release, 0, "{report:?}");
        }
    });
}

#[test]
fn a_device_out_of_memory_with_bases_kept_frees_them_and_keeps_proving() {
    let _g = setup("kept-bases-oom");
    let _unlimit = memory_limit_lifted_at_the_end();
    let (_, short) = long_and_short();
    // Room for any one call of the short circuit (128 bytes a term, the H query's 2^13 at most;
    // the quotient's three vectors), not for that beside all its kept bases.
    let total = query_bytes(&short.params);
    let limit = 3 * 128 * (1 << 13) / 2;
    assert!(limit < total, "{limit} {total}");
    limit_device_memory(Some(limit));
    let reports = batch_uploads(short, 3, true);
    let out_of_memory: u64 = reports.iter().map(|r| r.out_of_memory).sum();
    assert!(out_of_memory >= 1, "{reports:?}");
    for report in &reports {
        assert_eq!(report.gpu_failures, 0, "{report:?}");
        assert!(report.gpu_chunks_total() > 0, "{report:?}");
    }
    // Keeping stopped: the later proofs upload their bases again.
    assert!(reports[2].bases_uploaded_bytes > 0, "{reports:?}");
    for device in preemptible_groth16::gpu::backend::devices() {
        assert_eq!(device.live_device_bytes(), 0, "{}", device.id);
    }
}
