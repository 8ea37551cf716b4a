//! Lock directories that another local user prepared: each attack of the lock-file security
//! issue, made by a second uid (`nobody`, through `Command::uid`) in a sticky, world-writable
//! directory like the temp directory, against provers that run as root in child processes (this
//! binary re-executes itself: `child_prover`) on a fake device. Each test asserts that the planted
//! target is unchanged, the proof verifies, and the proof's time and peak memory stay within
//! bounds.
//!
//! The tests act as a second user, so they need root (CI runs as root). As another user they fail
//! with a message saying so, unless `PG16_SKIP_ROOT_TESTS=1` says to skip them.
#![cfg(all(feature = "gpu", feature = "serde", target_os = "linux"))]

#[path = "circuits/mod.rs"]
mod circuits;
#[path = "reports/mod.rs"]
mod reports;

use circuits::Squares;
use preemptible_groth16::gpu::fake::FAKE_GPUS_ENV;
use preemptible_groth16::gpu::locks::{self, LOCK_DIR_ENV};
use preemptible_groth16::gpu::PriorityGuard;
use preemptible_groth16::groth16::{generate_random_parameters, Priority, ProveOptions};
use rand::thread_rng;
use reports::{field, prove_and_print, report_in};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

const CHILD_ENV: &str = "PG16_LOCK_CHILD";
/// The uid and gid the attacker runs as.
const NOBODY: u32 = 65534;
/// The fake device's files in the lock directory.
const LOCK: &str = "pg16-fake-0.lock";
const FLAGS: [&str; 3] = [
    "pg16-fake-0.want-0.flag",
    "pg16-fake-0.want-1.flag",
    "pg16-fake-0.want-2.flag",
];
/// Constraints of the child's proof (2^K): seconds on the fake device and on the CPU.
const K: u32 = 12;
/// The most a hostile directory may add to a proof's time (its report's `total_ms`: the child's
/// start and parameter generation, which a loaded machine stretches, are not in it); the start
/// wait for a verified lower holder (10 s) is longer, so a prover that believed a lying holder
/// fails this.
const SLOWER_BY_AT_MOST: Duration = Duration::from_secs(5);
/// The most a hostile directory may add to a prover's peak memory (the bound).
const MORE_MEMORY_AT_MOST_KB: u64 = 100 * 1024;

/// The child's side: `PG16_LOCK_CHILD=priority` proves once and prints its report and its peak
/// resident memory (`VmHWM`).
#[test]
#[ignore = "child process entry point, run by the tests below"]
fn child_prover() {
    let Ok(priority) = std::env::var(CHILD_ENV) else {
        panic!("run only as a child of this file's tests");
    };
    let _ = env_logger::builder().is_test(false).try_init();
    let priority: Priority = priority.parse().expect("priority");
    let circuit = Squares::log2(K);
    let params = generate_random_parameters(circuit, &mut thread_rng()).unwrap();
    let options = ProveOptions::default()
        .priority(priority)
        .chunk_terms(1 << 9);
    prove_and_print(circuit, &params, &options);
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let peak = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .unwrap();
    println!("PEAK_KB {peak}");
}

static SERIAL: Mutex<()> = Mutex::new(());

/// A sticky, world-writable lock directory (mode 1777, like /tmp) inside a root-owned parent
/// that holds the attacker's targets; both removed when this is dropped (the attacker's
/// processes, flock holders, are killed by their own guards first), before the next test's turn.
struct Hostile {
    parent: tempfile::TempDir,
    dir: PathBuf,
    _serial: MutexGuard<'static, ()>,
}

/// Whether this process runs as root (the owner of `/proc/self` is the effective uid).
fn is_root() -> bool {
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

/// The test's directories, or `None` (with a note) when the tests may skip without root.
fn hostile(name: &str) -> Option<Hostile> {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    if !is_root() {
        if std::env::var_os("PG16_SKIP_ROOT_TESTS").is_some() {
            eprintln!("skipped: needs root to act as a second user");
            return None;
        }
        panic!("needs root to act as a second user (PG16_SKIP_ROOT_TESTS=1 skips it)");
    }
    let parent = tempfile::Builder::new()
        .prefix(&format!("pg16-hostile-{name}-"))
        .tempdir()
        .unwrap();
    let dir = parent.path().join("shared");
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::set_permissions(parent.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    Some(Hostile {
        parent,
        dir,
        _serial: serial,
    })
}

/// A process of the attacker's, killed when dropped.
struct Attacker(Child);

impl Drop for Attacker {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Hostile {
    /// Runs `script` in the lock directory as `nobody` and waits for it to succeed.
    fn prepare(&self, script: &str) {
        let out = self.as_nobody(script).wait_with_output().unwrap();
        assert!(out.status.success(), "{script}: {out:?}");
    }

    /// Starts `script` in the lock directory as `nobody`, a `flock` holder of `file` (there
    /// already) that holds until killed, and waits until /proc/locks lists an exclusive lock on
    /// that file (`flock` prints nothing; another process's lock elsewhere does not count).
    fn hold(&self, file: &str, script: &str) -> Attacker {
        let a = Attacker(self.as_nobody(script));
        self.wait_for_flock(file, "WRITE");
        a
    }

    /// Waits (at most 5 s) until `file` exists in the directory and /proc/locks lists a flock of
    /// `kind` on its inode (`WRITE`: exclusive, `READ`: shared): someone holds it so.
    fn wait_for_flock(&self, file: &str, kind: &str) {
        let start = Instant::now();
        loop {
            let held = std::fs::metadata(self.dir.join(file)).is_ok_and(|m| {
                let inode = format!(":{}", m.ino());
                let locks = std::fs::read_to_string("/proc/locks").unwrap_or_default();
                locks.lines().any(|l| {
                    l.contains("FLOCK")
                        && l.contains(kind)
                        && !l.contains("->")
                        && l.split_whitespace().any(|f| f.ends_with(&inode))
                })
            });
            assert!(
                start.elapsed() < Duration::from_secs(5),
                "{file} never locked"
            );
            if held {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    fn as_nobody(&self, script: &str) -> Child {
        Command::new("sh")
            .args(["-c", script])
            .current_dir(&self.dir)
            .uid(NOBODY)
            .gid(NOBODY)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap()
    }

    /// A file the attacker cannot read or write but can point a symlink at: root's, mode 0600.
    fn target(&self) -> PathBuf {
        let t = self.parent.path().join("secret");
        std::fs::write(&t, b"precious\n").unwrap();
        std::fs::set_permissions(&t, std::fs::Permissions::from_mode(0o600)).unwrap();
        t
    }

    /// A prover in a child process at `priority` in this directory, as root or as `nobody`.
    fn prove(&self, priority: Priority, uid: Option<u32>) -> Run {
        prove_in(&self.dir, priority, uid)
    }
}

/// What a child prover did.
struct Run {
    report: String,
    peak_kb: u64,
    wall: Duration,
    stderr: String,
}

impl Run {
    fn gpu_chunks(&self) -> f64 {
        let total = field(&self.report, "total_chunks").unwrap_or(0.0);
        total - field(&self.report, "cpu_chunks").unwrap_or(0.0)
    }
}

/// Proves in a child with `dir` as its lock directory; fails the test if the child is not done
/// within 60 s (a hang) or its proof does not verify.
fn prove_in(dir: &Path, priority: Priority, uid: Option<u32>) -> Run {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--ignored", "--exact", "child_prover", "--nocapture"])
        .env(CHILD_ENV, priority.to_string())
        .env(FAKE_GPUS_ENV, "1:4000")
        .env(LOCK_DIR_ENV, dir)
        .env("RUST_LOG", "preemptible_groth16=warn")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if let Some(uid) = uid {
        c.uid(uid).gid(uid).env("HOME", "/nonexistent");
    }
    let start = Instant::now();
    let mut child = c.spawn().unwrap();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(60) {
            let _ = child.kill();
            panic!("the prover hung in {}", dir.display());
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let wall = start.elapsed();
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).to_string();
    let stderr = String::from_utf8_lossy(&out.stderr).to_string();
    let report = report_in(&stdout)
        .unwrap_or_else(|| panic!("no report: {stdout}\n{stderr}"))
        .to_string();
    assert!(report.contains("\"verified\":true"), "{report}");
    let peak_kb = stdout
        .lines()
        .find_map(|l| l.split("PEAK_KB ").nth(1))
        .and_then(|v| v.trim().parse().ok())
        .unwrap();
    Run {
        report,
        peak_kb,
        wall,
        stderr,
    }
}

/// A clean run of the same prover in a fresh directory of its own, for the bounds.
fn clean_run(priority: Priority) -> Run {
    let dir = tempfile::Builder::new()
        .prefix("pg16-clean-")
        .tempdir()
        .unwrap();
    prove_in(dir.path(), priority, None)
}

fn assert_within_bounds(run: &Run, clean: &Run) {
    let proof_ms = |r: &Run| field(&r.report, "total_ms").expect("total_ms in the report");
    assert!(
        proof_ms(run) < proof_ms(clean) + SLOWER_BY_AT_MOST.as_secs_f64() * 1e3,
        "proof {} ms against {} ms clean (wall {:?} against {:?})",
        proof_ms(run),
        proof_ms(clean),
        run.wall,
        clean.wall
    );
    assert!(
        run.peak_kb < clean.peak_kb + MORE_MEMORY_AT_MOST_KB,
        "peak {} kB against {} kB clean",
        run.peak_kb,
        clean.peak_kb
    );
}

fn assert_unchanged(target: &Path) {
    assert_eq!(std::fs::read(target).unwrap(), b"precious\n");
    let meta = std::fs::metadata(target).unwrap();
    assert_eq!(meta.permissions().mode() & 0o7777, 0o600);
    assert_eq!(meta.uid(), 0);
}

#[test]
fn symlinks_planted_for_the_lock_and_flag_files_are_not_followed() {
    let Some(h) = hostile("symlinks") else { return };
    let target = h.target();
    let clean = clean_run(Priority::High);
    for name in std::iter::once(LOCK).chain(FLAGS) {
        h.prepare(&format!("ln -s ../secret {name}"));
    }
    for priority in [Priority::High, Priority::Low] {
        let run = h.prove(priority, None);
        assert_eq!(run.gpu_chunks(), 0.0, "the device's files are unusable");
        assert_within_bounds(&run, &clean);
        assert!(run.stderr.contains("symbolic link"), "{}", run.stderr);
    }
    assert_unchanged(&target);
    // The status view says why, and gpu_is_available-style readers see no free device.
    let s = locks::status(&h.dir, &["fake-0".to_string()]).unwrap();
    assert!(s[0].unusable.as_deref().unwrap().contains("symbolic link"));
}

#[test]
fn a_hard_link_to_another_file_is_not_used() {
    let Some(h) = hostile("hardlink") else { return };
    // protected_hardlinks stops nobody linking root's file; a file of nobody's own, linked
    // twice, is the attack left (writes to one name reach the other).
    h.prepare(&format!("echo keep > mine; chmod 666 mine; ln mine {LOCK}"));
    let run = h.prove(Priority::High, None);
    assert_eq!(run.gpu_chunks(), 0.0);
    assert_eq!(std::fs::read(h.dir.join("mine")).unwrap(), b"keep\n");
}

#[test]
fn a_huge_lock_file_held_by_another_user_costs_no_memory() {
    let Some(h) = hostile("huge") else { return };
    let clean = clean_run(Priority::High);
    h.prepare(&format!(
        "echo 1 0 0 > {LOCK}; truncate -s 2G {LOCK}; chmod 666 {LOCK}"
    ));
    let _holder = h.hold(LOCK, &format!("exec flock -o -x {LOCK} sleep 600"));
    let run = h.prove(Priority::High, None);
    assert_within_bounds(&run, &clean);
    assert_eq!(run.gpu_chunks(), 0.0, "the device is held");
    assert!(
        field(&run.report, "wait_ms").unwrap() < 1000.0,
        "{}",
        run.report
    );
}

#[test]
fn holder_text_that_lies_does_not_hold_a_high_prover_up() {
    let Some(h) = hostile("liar") else { return };
    let clean = clean_run(Priority::High);
    // Holds the device and claims it is pid 1 at Low, which a High prover would wait for.
    h.prepare(&format!("touch {LOCK}; chmod 666 {LOCK}"));
    let _holder = h.hold(
        LOCK,
        &format!(
            "exec flock -o -x {LOCK} sh -c 'echo 1 0 $(date +%s)000 > {LOCK}; exec sleep 600'"
        ),
    );
    // The text goes in after the lock is taken, which is all `hold` waits for.
    let start = Instant::now();
    let holder = loop {
        match locks::holder_text(&h.dir, "fake-0") {
            Some(holder) => break holder,
            None if start.elapsed() < Duration::from_secs(5) => {
                std::thread::sleep(Duration::from_millis(10))
            }
            None => panic!("the lie never read as a holder"),
        }
    };
    assert_eq!((holder.pid, holder.verified), (1, false));
    let run = h.prove(Priority::High, None);
    assert_within_bounds(&run, &clean);
    assert!(
        field(&run.report, "wait_ms").unwrap() < 1000.0,
        "{}",
        run.report
    );
}

#[test]
fn flags_held_exclusively_by_another_user_do_not_hang_a_prover() {
    let Some(h) = hostile("held-flags") else {
        return;
    };
    let clean = clean_run(Priority::High);
    let mut holders = Vec::new();
    for flag in FLAGS {
        h.prepare(&format!("touch {flag}; chmod 666 {flag}"));
        holders.push(h.hold(flag, &format!("exec flock -o -x {flag} sleep 600")));
    }
    for priority in [Priority::High, Priority::Normal, Priority::Low] {
        let run = h.prove(priority, None);
        assert_within_bounds(&run, &clean);
    }
}

#[test]
fn fifos_do_not_hang_a_prover_or_the_status_view() {
    let Some(h) = hostile("fifos") else { return };
    let clean = clean_run(Priority::High);
    for name in std::iter::once(LOCK).chain(FLAGS) {
        h.prepare(&format!("mkfifo -m 666 {name}"));
    }
    let run = h.prove(Priority::High, None);
    assert_within_bounds(&run, &clean);
    assert_eq!(run.gpu_chunks(), 0.0);
    let (done, got) = std::sync::mpsc::channel();
    let dir = h.dir.clone();
    std::thread::spawn(move || {
        let _ = done.send(locks::status(&dir, &["fake-0".to_string()]));
    });
    let s = got
        .recv_timeout(Duration::from_secs(5))
        .expect("the status view hung on a FIFO")
        .unwrap();
    assert!(s[0].unusable.as_deref().unwrap().contains("regular"));
}

/// Sets `fs.protected_regular` (systemd's default is 1) for the test where the system allows it,
/// and puts the old value back.
struct ProtectedRegular(Option<String>);

impl ProtectedRegular {
    const PATH: &'static str = "/proc/sys/fs/protected_regular";
    fn on() -> ProtectedRegular {
        let old = std::fs::read_to_string(Self::PATH).ok();
        if std::fs::write(Self::PATH, "1").is_err() {
            eprintln!("note: cannot set fs.protected_regular here; testing with the system's");
            return ProtectedRegular(None);
        }
        ProtectedRegular(old)
    }
}

impl Drop for ProtectedRegular {
    fn drop(&mut self) {
        if let Some(old) = &self.0 {
            let _ = std::fs::write(Self::PATH, old.trim());
        }
    }
}

#[test]
fn two_users_share_a_device_in_a_sticky_directory() {
    let Some(first) = hostile("share-a") else {
        return;
    };
    let _protected = ProtectedRegular::on();
    // nobody's prover creates the files; root's then opens them (an O_CREAT open of another
    // user's file in a sticky directory fails under protected_regular, even for root).
    let theirs = first.prove(Priority::Low, Some(NOBODY));
    assert!(theirs.gpu_chunks() > 0.0, "{}", theirs.report);
    let meta = std::fs::metadata(first.dir.join(LOCK)).unwrap();
    assert_eq!(
        (meta.uid(), meta.permissions().mode() & 0o777),
        (NOBODY, 0o666)
    );
    let ours = first.prove(Priority::Low, None);
    assert!(
        ours.gpu_chunks() > 0.0,
        "root did not get the device: {}",
        ours.report
    );
    drop(first);
    // And the other way round: root's files, nobody's prover.
    let Some(second) = hostile("share-b") else {
        return;
    };
    let ours = second.prove(Priority::Low, None);
    assert!(ours.gpu_chunks() > 0.0);
    let theirs = second.prove(Priority::Low, Some(NOBODY));
    assert!(
        theirs.gpu_chunks() > 0.0,
        "nobody did not get the device: {}",
        theirs.report
    );
}

#[test]
fn a_flag_deleted_by_a_temp_cleaner_is_raised_again() {
    let Some(h) = hostile("cleaner") else { return };
    std::env::set_var(FAKE_GPUS_ENV, "1:4000");
    std::env::set_var(LOCK_DIR_ENV, &h.dir);
    let guard = PriorityGuard::acquire(Priority::High).unwrap();
    // An age-based cleaner deletes the guard's flag file; within a second the guard raises it
    // again, so a low prover started after that still sees the claim and leaves the device.
    std::fs::remove_file(h.dir.join(FLAGS[2])).unwrap();
    // The guard's flag is a shared flock.
    h.wait_for_flock(FLAGS[2], "READ");
    let run = h.prove(Priority::Low, None);
    assert_eq!(run.gpu_chunks(), 0.0, "{}", run.report);
    drop(guard);
    let run = h.prove(Priority::Low, None);
    assert!(run.gpu_chunks() > 0.0, "{}", run.report);
}

#[test]
fn a_world_writable_directory_without_the_sticky_bit_is_warned_about() {
    let Some(h) = hostile("not-sticky") else {
        return;
    };
    std::fs::set_permissions(&h.dir, std::fs::Permissions::from_mode(0o777)).unwrap();
    let run = h.prove(Priority::Normal, None);
    assert!(run.stderr.contains("not sticky"), "{}", run.stderr);
    std::fs::set_permissions(&h.dir, std::fs::Permissions::from_mode(0o1777)).unwrap();
    let run = h.prove(Priority::Normal, None);
    assert!(!run.stderr.contains("not sticky"), "{}", run.stderr);
}
