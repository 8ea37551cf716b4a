//! Preemption between provers in separate processes: this test binary re-executes itself as a
//! child prover (`child_prover`, an ignored test that the parent runs with `--ignored --exact`
//! and `PG16_CHILD` set) on fake devices and a lock directory shared with the parent, removed
//! when the test ends. The child prints its report as one JSON line;
//! the parent asserts on it, and kills children with SIGKILL to show that a dead holder or a dead
//! requester leaves nothing locked.
#![cfg(all(feature = "gpu", feature = "serde", unix))]

#[path = "circuits/mod.rs"]
mod circuits;
#[cfg(target_os = "linux")]
#[path = "cpu_time/mod.rs"]
mod cpu_time;
#[path = "reports/mod.rs"]
mod reports;

use circuits::Squares;
#[cfg(target_os = "linux")]
use cpu_time::cpu_time_of;
use preemptible_groth16::config::{BELLPERSON_GPUS_PER_LOCK_ENV, CPU_WAIT_ENV};
use preemptible_groth16::gpu::device::{self, Selection, CPU_ENV};
use preemptible_groth16::gpu::fake::{FAKE_GPUS_ENV, FAKE_GPU_IDS_ENV};
use preemptible_groth16::gpu::locks::{
    self, GpuLock, HigherPriorityProbe, PriorityFlag, LOCK_DIR_ENV,
};
use preemptible_groth16::groth16::{generate_random_parameters, Priority, ProveOptions};
use rand::thread_rng;
use reports::{field, prove_and_print, report_in};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "PG16_CHILD";
/// Set for a child that proves on the OpenCL device (PoCL in CI) instead of the fake one.
const CHILD_OPENCL_ENV: &str = "PG16_CHILD_OPENCL";
const FAKES: &str = "1:4000";
/// Set for a child that may use only these devices (comma-separated ids).
const CHILD_DEVICES_ENV: &str = "PG16_CHILD_DEVICES";

/// The child's side: `PG16_CHILD=priority:log2-constraints` proves once on `fake-0` and prints
/// `REPORT {"verified":..., ...}`. Not a test of its own: ignored, and run only by the parents.
#[test]
#[ignore = "child process entry point: the process tests run it"]
fn child_prover() {
    let Ok(spec) = std::env::var(CHILD_ENV) else {
        panic!("{CHILD_ENV} is not set: this runs only as a child of the process tests");
    };
    let (priority, k) = spec.split_once(':').expect("priority:k");
    let priority: Priority = priority.parse().expect("priority");
    let circuit = Squares::log2(k.parse().expect("k"));
    let params = generate_random_parameters(circuit, &mut thread_rng()).unwrap();
    let chunk_terms = if std::env::var_os(CHILD_OPENCL_ENV).is_some() {
        1 << 10
    } else {
        1 << 12
    };
    let devices = std::env::var(CHILD_DEVICES_ENV)
        .ok()
        .map(|d| d.split(',').map(str::to_string).collect());
    let options = ProveOptions::default()
        .priority(priority)
        .chunk_terms(chunk_terms)
        .devices(devices);
    println!("READY");
    prove_and_print(circuit, &params, &options);
}

static SERIAL: Mutex<()> = Mutex::new(());

/// A test's hold on the process: the tests run one at a time, each with a fresh lock directory,
/// removed when this is dropped (also when the test fails).
struct Setup {
    _dir: tempfile::TempDir,
    _serial: MutexGuard<'static, ()>,
}

fn setup(name: &str) -> Setup {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var(FAKE_GPUS_ENV, FAKES);
    let dir = tempfile::Builder::new()
        .prefix(&format!("pg16-procs-{name}-"))
        .tempdir()
        .unwrap();
    std::env::set_var(LOCK_DIR_ENV, dir.path());
    Setup {
        _dir: dir,
        _serial: serial,
    }
}

fn spawn_child(priority: Priority, k: u32) -> Child {
    spawn_child_with(priority, k, &[])
}

/// A child on fake devices with more environment (`FAKE_GPUS_ENV` there overrides [`FAKES`]).
fn spawn_child_with(priority: Priority, k: u32, env: &[(&str, &str)]) -> Child {
    let mut c = child_command(priority, k);
    c.env(FAKE_GPUS_ENV, FAKES);
    for (key, value) in env {
        c.env(key, value);
    }
    c.spawn().expect("re-execute the test binary")
}

/// A child on the OpenCL device (PoCL admitted) instead of the fake one.
fn spawn_opencl_child(priority: Priority, k: u32) -> Child {
    child_command(priority, k)
        .env_remove(FAKE_GPUS_ENV)
        .env(CPU_ENV, "1")
        .env(CHILD_OPENCL_ENV, "1")
        .spawn()
        .expect("re-execute the test binary")
}

fn child_command(priority: Priority, k: u32) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--ignored",
        "--exact",
        "child_prover",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(CHILD_ENV, format!("{priority}:{k}"))
    .env(LOCK_DIR_ENV, locks::lock_dir())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    c
}

/// The child's report line, after it exits.
fn report_of(child: Child) -> String {
    let out = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    report_in(&text)
        .unwrap_or_else(|| panic!("no report from the child: {text}"))
        .to_string()
}

fn wait_until(what: &str, mut f: impl FnMut() -> bool) {
    let start = Instant::now();
    while !f() {
        assert!(
            start.elapsed() < Duration::from_secs(120),
            "timed out: {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

fn holder_pid() -> Option<u32> {
    holder_pid_of("fake-0")
}

fn holder_pid_of(device: &str) -> Option<u32> {
    let dir = locks::lock_dir();
    locks::status(&dir, &[device.to_string()]).unwrap()[0]
        .holder
        .as_ref()
        .map(|h| h.pid)
}

#[test]
fn a_high_process_preempts_a_low_process() {
    let _g = setup("preempt");
    let low = spawn_child(Priority::Low, 15);
    let low_pid = low.id();
    wait_until("the low child holds fake-0", || {
        holder_pid() == Some(low_pid)
    });
    let high = spawn_child(Priority::High, 12);
    let high = report_of(high);
    let low = report_of(low);
    assert!(high.contains("\"verified\":true"), "{high}");
    assert!(low.contains("\"verified\":true"), "{low}");
    assert!(field(&high, "handover_ms").is_some(), "{high}");
    assert!(field(&high, "gpu_chunks").unwrap() > 0.0, "{high}");
    assert!(field(&low, "preemptions").unwrap() >= 1.0, "{low}");
    assert_eq!(
        field(&low, "live_device_bytes_at_release"),
        Some(0.0),
        "{low}"
    );
    assert_eq!(
        field(&low, "gpu_chunks").unwrap() + field(&low, "cpu_chunks").unwrap(),
        field(&low, "total_chunks").unwrap(),
        "{low}"
    );
}

/// `PREEMPTIBLE_GROTH16_CPU_WAIT_MS`: a preempted low prover told to wait long for its device
/// computes no multiexp chunk on the CPU while the high one holds it, and finishes on the device
/// when it comes back; the same low prover told not to wait (`0`) computes chunks on the CPU then.
#[test]
fn a_preempted_prover_told_to_wait_for_its_device_leaves_the_cpu_alone() {
    let _g = setup("cpu-wait");
    for wait in [true, false] {
        let env: &[(&str, &str)] = if wait {
            &[(CPU_WAIT_ENV, "600000")]
        } else {
            &[(CPU_WAIT_ENV, "0")]
        };
        let low = spawn_child_with(Priority::Low, 15, env);
        let low_pid = low.id();
        wait_until("the low child holds fake-0", || {
            holder_pid() == Some(low_pid)
        });
        // The high proof holds the device long enough for the CPU to take chunks.
        let high = report_of(spawn_child(Priority::High, 14));
        let low = report_of(low);
        assert!(high.contains("\"verified\":true"), "{high}");
        assert!(low.contains("\"verified\":true"), "{low}");
        assert!(field(&low, "preemptions").unwrap() >= 1.0, "{low}");
        assert!(field(&low, "returns_to_gpu").unwrap() >= 1.0, "{low}");
        // CPU chunks computed while the prover held no device (the share beside a running
        // device is not counted here).
        let cpu_alone = field(&low, "cpu_chunks_without_retry").unwrap();
        if wait {
            assert_eq!(cpu_alone, 0.0, "waiting: {low}");
        } else {
            assert!(cpu_alone > 0.0, "not waiting: {low}");
        }
    }
}

#[test]
fn killing_the_holder_frees_the_device_at_once() {
    let _g = setup("kill-holder");
    let mut low = spawn_child(Priority::Low, 15);
    let low_pid = low.id();
    wait_until("the low child holds fake-0", || {
        holder_pid() == Some(low_pid)
    });
    low.kill().unwrap(); // SIGKILL
    low.wait().unwrap();
    // The kernel released the dead process's flock: the device is free now. `try_acquire`
    // never waits, so its taking the lock is the whole check (its time would only measure the
    // machine's load).
    let lock = GpuLock::try_acquire(&locks::lock_dir(), "fake-0", Priority::Normal).unwrap();
    assert!(lock.is_some(), "the device is free after the holder died");
    assert_eq!(holder_pid(), Some(std::process::id()));
}

#[test]
fn killing_a_requester_clears_its_flag() {
    let _g = setup("kill-requester");
    let dir = locks::lock_dir();
    // The parent holds the device at low priority and does not yield.
    let _lock = GpuLock::try_acquire(&dir, "fake-0", Priority::Low)
        .unwrap()
        .unwrap();
    let probe = HigherPriorityProbe::open(&dir, "fake-0", Priority::Low).unwrap();
    let mut high = spawn_child(Priority::High, 12);
    wait_until("the high child asks for fake-0", || {
        probe.anyone_waiting().unwrap()
    });
    high.kill().unwrap();
    high.wait().unwrap();
    assert!(
        !probe.anyone_waiting().unwrap(),
        "the dead requester's flag is gone; the holder keeps the device"
    );
    assert_eq!(holder_pid(), Some(std::process::id()));
}

/// The same across processes on the OpenCL device (PoCL in CI): the children build and load the
/// real kernels.
#[test]
fn a_high_process_preempts_a_low_process_on_the_opencl_device() {
    let _g = setup("opencl");
    let mut selection = Selection::from_env();
    selection.include_cpu = true;
    let device = device::list(&selection)
        .unwrap()
        .into_iter()
        .next()
        .expect("an OpenCL device")
        .id;
    let low = spawn_opencl_child(Priority::Low, 13);
    let low_pid = low.id();
    wait_until("the low child holds the device", || {
        holder_pid_of(&device) == Some(low_pid)
    });
    let high = report_of(spawn_opencl_child(Priority::High, 11));
    let low = report_of(low);
    assert!(high.contains("\"verified\":true"), "{high}");
    assert!(low.contains("\"verified\":true"), "{low}");
    assert!(field(&high, "handover_ms").is_some(), "{high}");
    assert!(field(&low, "preemptions").unwrap() >= 1.0, "{low}");
    assert_eq!(
        field(&low, "live_device_bytes_at_release"),
        Some(0.0),
        "{low}"
    );
}

/// Behaviour 7, the next holder a prover: whenever the holder is killed (just after it took the
/// device, or later in its proof), a prover started next gets the device without waiting.
#[test]
fn killing_the_holder_at_any_moment_lets_the_next_prover_in_at_once() {
    let _g = setup("kill-holder-prover");
    for delay_ms in [0, 40, 150] {
        let mut low = spawn_child(Priority::Low, 15);
        let low_pid = low.id();
        wait_until("the low child holds fake-0", || {
            holder_pid() == Some(low_pid)
        });
        std::thread::sleep(Duration::from_millis(delay_ms));
        low.kill().unwrap(); // SIGKILL
        low.wait().unwrap();
        let next = report_of(spawn_child(Priority::Normal, 12));
        assert!(next.contains("\"verified\":true"), "{next}");
        assert_eq!(field(&next, "wait_ms"), Some(0.0), "{delay_ms} ms: {next}");
        assert!(
            field(&next, "handover_ms").is_none(),
            "{delay_ms} ms: {next}"
        );
        assert!(
            field(&next, "gpu_chunks").unwrap() > 0.0,
            "{delay_ms} ms: {next}"
        );
        assert_eq!(holder_pid(), None, "nothing left locked");
    }
}

/// Behaviour 7, the requester killed after it took the device from a lower prover: the device
/// is free again at once and the preempted prover (a process) returns to it and finishes.
#[test]
fn killing_a_requester_that_took_the_device_gives_it_back_to_the_preempted_prover() {
    let _g = setup("kill-taker");
    let low = spawn_child(Priority::Low, 15);
    let low_pid = low.id();
    wait_until("the low child holds fake-0", || {
        holder_pid() == Some(low_pid)
    });
    let mut high = spawn_child(Priority::High, 13);
    let high_pid = high.id();
    wait_until("the high child took fake-0", || {
        holder_pid() == Some(high_pid)
    });
    high.kill().unwrap();
    high.wait().unwrap();
    let low = report_of(low);
    assert!(low.contains("\"verified\":true"), "{low}");
    assert!(field(&low, "preemptions").unwrap() >= 1.0, "{low}");
    assert!(field(&low, "returns_to_gpu").unwrap() >= 1.0, "{low}");
    assert_eq!(
        field(&low, "gpu_chunks").unwrap() + field(&low, "cpu_chunks").unwrap(),
        field(&low, "total_chunks").unwrap(),
        "{low}"
    );
    assert_eq!(holder_pid(), None, "nothing left locked");
}

/// Behaviour 4 across processes, the seed's case: a normal prover takes the device from a low
/// one, a high one takes it from the normal one, and both lower ones finish (on the CPU beside
/// each other, and back on the device when it is free). Every proof verifies.
#[test]
fn three_processes_at_three_levels_each_higher_one_takes_over() {
    let _g = setup("three-levels");
    let low = spawn_child(Priority::Low, 15);
    let low_pid = low.id();
    wait_until("the low child holds fake-0", || {
        holder_pid() == Some(low_pid)
    });
    let normal = spawn_child(Priority::Normal, 15);
    let normal_pid = normal.id();
    wait_until("the normal child took fake-0", || {
        holder_pid() == Some(normal_pid)
    });
    let high = report_of(spawn_child(Priority::High, 12));
    let (normal, low) = (report_of(normal), report_of(low));
    for r in [&high, &normal, &low] {
        assert!(r.contains("\"verified\":true"), "{r}");
        assert_eq!(
            field(r, "gpu_chunks").unwrap() + field(r, "cpu_chunks").unwrap(),
            field(r, "total_chunks").unwrap(),
            "{r}"
        );
    }
    assert!(field(&high, "handover_ms").is_some(), "{high}");
    assert_eq!(field(&high, "preemptions"), Some(0.0), "{high}");
    assert!(field(&normal, "handover_ms").is_some(), "{normal}");
    assert!(field(&normal, "preemptions").unwrap() >= 1.0, "{normal}");
    assert!(field(&low, "preemptions").unwrap() >= 1.0, "{low}");
    // On the CPU too: chunks finished there, or given up to the device when it came back (the
    // low prover's CPU threads run at the idle scheduling policy, so beside the normal prover's
    // CPU work on a small machine its chunks may all be in progress when the device returns).
    let cpu_taken =
        field(&low, "cpu_chunks").unwrap() + field(&low, "cpu_chunks_given_up").unwrap();
    assert!(cpu_taken > 0.0, "{low}");
}

/// Behaviour 5 across processes: a prover is not held back by its own level's flag raised by
/// another process (a priority guard there, or an equal prover), nor by its own.
#[test]
fn a_process_does_not_yield_to_its_own_level() {
    let _g = setup("own-level");
    let _guard = PriorityFlag::raise(&locks::lock_dir(), "fake-0", Priority::Normal).unwrap();
    let normal = report_of(spawn_child(Priority::Normal, 13));
    assert!(normal.contains("\"verified\":true"), "{normal}");
    assert!(field(&normal, "gpu_chunks").unwrap() > 0.0, "{normal}");
    assert_eq!(field(&normal, "preemptions"), Some(0.0), "{normal}");
}

/// Behaviour 6 across processes: a high prover process waiting for a device that a low holder
/// does not give up sleeps (under 5% of a core), then takes the device when it is released.
#[cfg(target_os = "linux")]
#[test]
fn a_waiting_process_sleeps() {
    let _g = setup("sleeping-process");
    let dir = locks::lock_dir();
    let lock = GpuLock::try_acquire(&dir, "fake-0", Priority::Low)
        .unwrap()
        .unwrap();
    let probe = HigherPriorityProbe::open(&dir, "fake-0", Priority::Low).unwrap();
    let high = spawn_child(Priority::High, 12);
    let pid = high.id();
    wait_until("the high child asks for fake-0", || {
        probe.anyone_waiting().unwrap()
    });
    let (cpu, wall) = (cpu_time_of(&pid.to_string()), Instant::now());
    std::thread::sleep(Duration::from_millis(1500));
    let used = cpu_time_of(&pid.to_string()) - cpu;
    let window = wall.elapsed();
    drop(lock);
    let high = report_of(high);
    assert!(
        used.as_secs_f64() < 0.05 * window.as_secs_f64(),
        "the waiting process used {used:?} of CPU in {window:?}"
    );
    assert!(high.contains("\"verified\":true"), "{high}");
    assert!(field(&high, "wait_ms").unwrap() > 1000.0, "{high}");
    assert!(field(&high, "gpu_chunks").unwrap() > 0.0, "{high}");
}

/// Behaviour 8 across processes: a lock directory that cannot be made (a path below a regular
/// file) means a CPU proof, which verifies.
#[test]
fn a_process_with_an_unusable_lock_directory_proves_on_the_cpu() {
    let _g = setup("unusable-dir");
    let file = locks::lock_dir().join("not-a-dir");
    std::fs::write(&file, b"").unwrap();
    let bad = file.join("locks");
    let child = spawn_child_with(Priority::High, 12, &[(LOCK_DIR_ENV, bad.to_str().unwrap())]);
    let report = report_of(child);
    assert!(report.contains("\"verified\":true"), "{report}");
    assert_eq!(field(&report, "gpu_chunks"), Some(0.0), "{report}");
}

/// Behaviour 9 across processes: with two devices and a low process on one, a high process takes
/// the free one and preempts nobody; each device has its own lock.
#[test]
fn a_high_process_takes_a_free_device_before_preempting() {
    let _g = setup("two-devices");
    let two = [(FAKE_GPUS_ENV, "2:4000")];
    let low = spawn_child_with(Priority::Low, 15, &[two[0], (CHILD_DEVICES_ENV, "fake-0")]);
    let low_pid = low.id();
    wait_until("the low child holds fake-0", || {
        holder_pid() == Some(low_pid)
    });
    let high = report_of(spawn_child_with(Priority::High, 12, &two));
    // The low child still held fake-0 when the high one was done: the high one met it there.
    assert_eq!(holder_pid(), Some(low_pid), "the low child ended first");
    let low = report_of(low);
    assert!(high.contains("\"verified\":true"), "{high}");
    assert!(low.contains("\"verified\":true"), "{low}");
    assert!(field(&high, "handover_ms").is_none(), "{high}");
    assert!(high.contains("\"fake-1\":"), "{high}");
    assert_eq!(field(&low, "preemptions"), Some(0.0), "{low}");
}

/// A process holding bellperson's files as bellperson 0.27 does (`flock` from util-linux), in the
/// test's lock directory, which the children see as their temp directory (`TMPDIR`): bellperson
/// keeps its locks in the temp directory. Killed when dropped.
struct Bellperson(Child);

impl Bellperson {
    fn run(script: &str) -> Bellperson {
        let child = Command::new("sh")
            .args(["-c", script])
            .current_dir(locks::lock_dir())
            .spawn()
            .unwrap();
        Bellperson(child)
    }
}

impl Drop for Bellperson {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Whether someone holds bellperson's file `name` exclusively (a shared try fails).
fn held_exclusively(name: &str) -> bool {
    !Command::new("flock")
        .args(["-n", "-s", name, "true"])
        .current_dir(locks::lock_dir())
        .status()
        .unwrap()
        .success()
}

fn bellperson_env() -> [(&'static str, String); 1] {
    [("TMPDIR", locks::lock_dir().display().to_string())]
}

fn spawn_beside_bellperson(priority: Priority, k: u32, extra: &[(&str, &str)]) -> Child {
    let env = bellperson_env();
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(extra);
    spawn_child_with(priority, k, &all)
}

#[test]
fn a_bellperson_prover_on_the_gpu_keeps_ours_off_it() {
    let _g = setup("bp-holds");
    let holder = Bellperson::run("exec flock -o -x bellman.gpu.lock sleep 600");
    wait_until("bellperson holds its GPU lock", || {
        held_exclusively("bellman.gpu.lock")
    });
    let low = report_of(spawn_beside_bellperson(Priority::Low, 12, &[]));
    assert!(low.contains("\"verified\":true"), "{low}");
    assert_eq!(field(&low, "gpu_chunks"), Some(0.0), "{low}");
    drop(holder);
    let low = report_of(spawn_beside_bellperson(Priority::Low, 12, &[]));
    assert!(field(&low, "gpu_chunks").unwrap() > 0.0, "{low}");
}

#[test]
fn a_bellperson_high_prover_preempts_ours_and_ours_keeps_bellperson_waiting() {
    let _g = setup("bp-high");
    let low = spawn_beside_bellperson(Priority::Low, 15, &[]);
    let low_pid = low.id();
    wait_until("the low child holds fake-0", || {
        holder_pid() == Some(low_pid)
    });
    // Our holder shares bellperson's GPU lock: bellperson's exclusive lock would wait.
    let free_for_bellperson = Command::new("flock")
        .args(["-n", "-x", "bellman.gpu.lock", "true"])
        .current_dir(locks::lock_dir())
        .status()
        .unwrap()
        .success();
    assert!(
        !free_for_bellperson,
        "bellperson could take the GPU beside ours"
    );
    // bellperson's high prover takes its priority lock for its whole proof.
    let _high = Bellperson::run("exec flock -o -x bellman.priority.lock sleep 600");
    let low = report_of(low);
    assert!(low.contains("\"verified\":true"), "{low}");
    assert!(field(&low, "preemptions").unwrap() >= 1.0, "{low}");
}

#[test]
fn our_high_prover_takes_the_gpu_from_a_bellperson_prover() {
    let _g = setup("bp-normal");
    // A bellperson normal prover: holds the GPU lock until a priority lock is taken (its kernels
    // abort then), and gives it up.
    let mut normal = Bellperson::run(
        "exec flock -o -x bellman.gpu.lock sh -c \
         'while flock -n -s bellman.priority.lock true; do sleep 0.01; done'",
    );
    wait_until("bellperson holds its GPU lock", || {
        held_exclusively("bellman.gpu.lock")
    });
    let high = report_of(spawn_beside_bellperson(Priority::High, 12, &[]));
    assert!(high.contains("\"verified\":true"), "{high}");
    assert!(field(&high, "gpu_chunks").unwrap() > 0.0, "{high}");
    assert!(field(&high, "handover_ms").is_some(), "{high}");
    assert!(
        normal.0.try_wait().unwrap().is_some(),
        "the bellperson prover did not give the GPU up"
    );
    // Once our High proof is done, bellperson's priority lock is free again.
    assert!(!held_exclusively("bellman.priority.lock"));
}

/// bellperson's ids for the fake devices in the per-device tests: a UUID for `fake-0`, a PCI id
/// for `fake-1`, as rust-gpu-tools names real devices.
const BELLPERSON_IDS: [&str; 2] = ["46abccd6-022e-b783-572d-833f7104d05f", "e3:00"];

/// A child beside bellperson with per-device locks
/// (`BELLPERSON_GPUS_PER_LOCK=1`), on `fakes` fake devices named [`BELLPERSON_IDS`], and `extra`.
fn spawn_beside_per_device_bellperson(
    priority: Priority,
    k: u32,
    fakes: &str,
    extra: &[(&str, &str)],
) -> Child {
    let ids = BELLPERSON_IDS.join(",");
    let mut env = vec![
        (BELLPERSON_GPUS_PER_LOCK_ENV, "1"),
        (FAKE_GPU_IDS_ENV, ids.as_str()),
        (FAKE_GPUS_ENV, fakes),
    ];
    env.extend_from_slice(extra);
    spawn_beside_bellperson(priority, k, &env)
}

/// bellperson's lock file of the device it names `id`.
fn device_file(id: &str) -> String {
    format!("bellman.gpu.lock.{id}")
}

/// Whether bellperson's try-lock would get the file `name` now (`flock -n -x`, as fs2's
/// `try_lock_exclusive`).
fn free_for_bellperson(name: &str) -> bool {
    Command::new("flock")
        .args(["-n", "-x", name, "true"])
        .current_dir(locks::lock_dir())
        .status()
        .unwrap()
        .success()
}

#[test]
fn a_bellperson_prover_on_a_device_keeps_ours_off_that_device_with_per_device_locks() {
    let _g = setup("bp-per-device-holds");
    let fake_0 = device_file(BELLPERSON_IDS[0]);
    let holder = Bellperson::run(&format!("exec flock -o -x {fake_0} sleep 600"));
    wait_until("bellperson holds fake-0's lock", || {
        held_exclusively(&fake_0)
    });
    // Only on fake-0: the CPU does it all.
    let only = [(CHILD_DEVICES_ENV, "fake-0")];
    let low = report_of(spawn_beside_per_device_bellperson(
        Priority::Low,
        12,
        "2:4000",
        &only,
    ));
    assert!(low.contains("\"verified\":true"), "{low}");
    assert_eq!(field(&low, "gpu_chunks"), Some(0.0), "{low}");
    // Both devices: fake-1 only.
    let low = report_of(spawn_beside_per_device_bellperson(
        Priority::Low,
        12,
        "2:4000",
        &[],
    ));
    assert!(low.contains("\"verified\":true"), "{low}");
    assert!(low.contains("\"fake-1\":"), "{low}");
    assert!(!low.contains("\"fake-0\":"), "{low}");
    // Without the variable in our prover's environment too: the bellperson provers' setting is
    // what counts, and they may run with another environment.
    let without = report_of(spawn_beside_bellperson(
        Priority::Low,
        12,
        &[(FAKE_GPU_IDS_ENV, BELLPERSON_IDS[0]), only[0]],
    ));
    assert!(without.contains("\"verified\":true"), "{without}");
    assert_eq!(field(&without, "gpu_chunks"), Some(0.0), "{without}");
    drop(holder);
    let low = report_of(spawn_beside_per_device_bellperson(
        Priority::Low,
        12,
        "2:4000",
        &only,
    ));
    assert!(field(&low, "gpu_chunks").unwrap() > 0.0, "{low}");
}

#[test]
fn our_holder_keeps_bellpersons_per_device_try_lock_off_and_a_bellperson_high_prover_preempts_it() {
    let _g = setup("bp-per-device-high");
    let (fake_0, fake_1) = (
        device_file(BELLPERSON_IDS[0]),
        device_file(BELLPERSON_IDS[1]),
    );
    let only = [(CHILD_DEVICES_ENV, "fake-0")];
    let low = spawn_beside_per_device_bellperson(Priority::Low, 15, "2:4000", &only);
    let low_pid = low.id();
    wait_until("the low child holds fake-0", || {
        holder_pid() == Some(low_pid)
    });
    // Our holder shares fake-0's file: bellperson's try-lock skips fake-0, not fake-1.
    assert!(
        !free_for_bellperson(&fake_0),
        "bellperson could take fake-0 beside ours"
    );
    assert!(free_for_bellperson(&fake_1));
    // bellperson's high prover takes its priority lock for its whole proof: ours yields the
    // device, and its file with it.
    let _high = Bellperson::run("exec flock -o -x bellman.priority.lock sleep 600");
    wait_until("the low child yields fake-0's bellperson file", || {
        free_for_bellperson(&fake_0)
    });
    let low = report_of(low);
    assert!(low.contains("\"verified\":true"), "{low}");
    assert!(field(&low, "preemptions").unwrap() >= 1.0, "{low}");
}

#[test]
fn our_high_prover_takes_a_device_from_a_bellperson_prover_with_per_device_locks() {
    let _g = setup("bp-per-device-normal");
    let fake_0 = device_file(BELLPERSON_IDS[0]);
    // A bellperson normal prover on fake-0 alone: holds its file until a priority lock is taken.
    let mut normal = Bellperson::run(&format!(
        "exec flock -o -x {fake_0} sh -c \
         'while flock -n -s bellman.priority.lock true; do sleep 0.01; done'"
    ));
    wait_until("bellperson holds fake-0's lock", || {
        held_exclusively(&fake_0)
    });
    let high = report_of(spawn_beside_per_device_bellperson(
        Priority::High,
        12,
        "1:4000",
        &[],
    ));
    assert!(high.contains("\"verified\":true"), "{high}");
    assert!(field(&high, "gpu_chunks").unwrap() > 0.0, "{high}");
    assert!(field(&high, "handover_ms").is_some(), "{high}");
    assert!(
        normal.0.try_wait().unwrap().is_some(),
        "the bellperson prover did not give the device up"
    );
    assert!(!held_exclusively("bellman.priority.lock"));
}

#[test]
fn bellman_no_gpu_keeps_ours_on_the_cpu() {
    let _g = setup("bp-no-gpu");
    let off = report_of(spawn_beside_bellperson(
        Priority::Normal,
        12,
        &[("BELLMAN_NO_GPU", "1")],
    ));
    assert!(off.contains("\"verified\":true"), "{off}");
    assert_eq!(field(&off, "gpu_chunks"), Some(0.0), "{off}");
    let on = report_of(spawn_beside_bellperson(
        Priority::Normal,
        12,
        &[("BELLMAN_NO_GPU", "0")],
    ));
    assert!(field(&on, "gpu_chunks").unwrap() > 0.0, "{on}");
}
