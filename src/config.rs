//! Every setting this crate takes from the environment, read in one place ([`Config::from_env`])
//! into one struct; the constants below name each variable and say what it sets (README's
//! "Configuration" table lists them too). A setting is read when the
//! work it shapes begins: the thread pools at their first use, the devices and their programs
//! at the first proof that wants a GPU, the lock directory and `BELLMAN_NO_GPU` at each proof's
//! claim (so that a service can change them between proofs). The device start and each claim
//! read a `Config` once and pass it down; a device's kernels read theirs (the finish grace, the
//! compiler options, the program cache's directory) when they are made, once per device.

use std::collections::HashSet;
use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

/// Worker threads (default: all logical CPUs).
pub const THREADS_ENV: &str = "PREEMPTIBLE_GROTH16_THREADS";
/// Threads that fill the pinned staging memory of a transfer to a device (`gpu` feature).
pub const FILL_THREADS_ENV: &str = "PREEMPTIBLE_GROTH16_FILL_THREADS";
/// OpenCL devices to use: ids or name fragments, comma-separated (`gpu` feature).
pub const DEVICES_ENV: &str = "PREEMPTIBLE_GROTH16_GPUS";
/// `1` admits OpenCL CPU devices such as PoCL (`gpu` feature).
pub const CPU_ENV: &str = "PREEMPTIBLE_GROTH16_OPENCL_CPU";
/// Where compiled programs are cached (`gpu` feature).
pub const CACHE_DIR_ENV: &str = "PREEMPTIBLE_GROTH16_CACHE_DIR";
/// Replaces the OpenCL compiler options chosen per device (`gpu` feature; for experiments).
pub const OPTIONS_ENV: &str = "PREEMPTIBLE_GROTH16_CL_OPTIONS";
/// Replaces the default grace (10 ms), in milliseconds, for which a request lets a nearly
/// finished multiexp piece finish (0: never; `gpu` feature, for experiments).
pub const FINISH_GRACE_ENV: &str = "PREEMPTIBLE_GROTH16_FINISH_GRACE_MS";
/// How long, in milliseconds, a prover that yielded its devices to a higher priority waits for
/// one before its CPU takes a multiexp's chunks (default 150; `0`: at once; `gpu` feature). The
/// CPU's work beside a short higher-priority proof slows that proof, and the chunks it takes
/// then are mostly given up when the device comes back.
pub const CPU_WAIT_ENV: &str = "PREEMPTIBLE_GROTH16_CPU_WAIT_MS";
/// On the CPU path, how many windows a mapped query is decoded and proved in (default 8; each
/// window 48 to 384 MiB whatever this says; for experiments: fewer windows are fewer multiexps
/// and more host memory). The GPU path decodes on the device and has no windows.
pub const MAPPED_WINDOWS_ENV: &str = "PREEMPTIBLE_GROTH16_MAPPED_WINDOWS";
/// The directory of the lock files (`gpu` feature; default: the temp directory).
pub const LOCK_DIR_ENV: &str = "PREEMPTIBLE_GROTH16_LOCK_DIR";
/// `N` or `N:ns-per-term`: N fake devices instead of the OpenCL ones (`gpu` feature; tests and
/// demos).
pub const FAKE_GPUS_ENV: &str = "PREEMPTIBLE_GROTH16_FAKE_GPUS";
/// The fake devices' ids as bellperson would name them, comma-separated in device order (`gpu`
/// feature; tests): the names of their per-device bellperson lock files. A fake device without one
/// here is named by its own id (`fake-<i>`).
pub const FAKE_GPU_IDS_ENV: &str = "PREEMPTIBLE_GROTH16_FAKE_GPU_IDS";
/// bellperson's switch, honoured too: set to anything but `0`, proofs run on the CPU.
pub const BELLMAN_NO_GPU_ENV: &str = "BELLMAN_NO_GPU";
/// bellperson's per-device locks: a positive number makes bellperson lock each device through a
/// file of its own; unset or not a number, through its single file (`0`: no lock at all). Our
/// provers share both files whatever this says (`gpu` feature: the bellperson provers may run
/// with another environment); it only decides whether a device without an id is warned about.
pub const BELLPERSON_GPUS_PER_LOCK_ENV: &str = "BELLPERSON_GPUS_PER_LOCK";

/// The settings from the environment. A malformed value is warned about (once per variable)
/// and left out, so the default applies.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Config {
    /// [`THREADS_ENV`].
    pub threads: Option<usize>,
    /// [`FILL_THREADS_ENV`].
    pub fill_threads: Option<usize>,
    /// [`DEVICES_ENV`] (empty: every device).
    pub devices: Vec<String>,
    /// [`CPU_ENV`].
    pub opencl_cpu: bool,
    /// [`CACHE_DIR_ENV`], else `$XDG_CACHE_HOME` (absolute only) or `$HOME/.cache`, each with
    /// `preemptible-groth16` below it; `None` when none is set.
    pub cache_dir: Option<PathBuf>,
    /// [`OPTIONS_ENV`].
    pub cl_options: Option<String>,
    /// [`FINISH_GRACE_ENV`].
    pub finish_grace: Option<Duration>,
    /// [`CPU_WAIT_ENV`].
    pub cpu_wait: Option<Duration>,
    /// [`MAPPED_WINDOWS_ENV`].
    pub mapped_windows: Option<usize>,
    /// [`LOCK_DIR_ENV`], else the temp directory.
    pub lock_dir: PathBuf,
    /// [`FAKE_GPUS_ENV`]: how many fake devices, and their nanoseconds per multiexp term if
    /// given.
    pub fake_gpus: Option<(usize, Option<u64>)>,
    /// [`FAKE_GPU_IDS_ENV`] (empty: every fake device named by its own id).
    pub fake_gpu_ids: Vec<String>,
    /// [`BELLMAN_NO_GPU_ENV`].
    pub bellman_no_gpu: bool,
    /// [`BELLPERSON_GPUS_PER_LOCK_ENV`] as bellperson reads it: `Some(n)` for a positive `n`
    /// (bellperson locks devices through per-device files), `None` when it is unset or not a
    /// number (bellperson's single file) and when it is `0` (bellperson takes no lock).
    pub bellperson_gpus_per_lock: Option<usize>,
}

impl Config {
    /// Reads every setting now.
    pub fn from_env() -> Config {
        let text = |name: &str| std::env::var(name).ok();
        let path = |name: &str| {
            std::env::var_os(name)
                .filter(|v| !v.is_empty())
                .map(PathBuf::from)
        };
        // The XDG spec says to ignore a relative XDG_CACHE_HOME.
        let cache_dir = path(CACHE_DIR_ENV).or_else(|| {
            path("XDG_CACHE_HOME")
                .filter(|base| base.is_absolute())
                .or_else(|| path("HOME").map(|home| home.join(".cache")))
                .map(|base| base.join("preemptible-groth16"))
        });
        Config {
            threads: positive(THREADS_ENV),
            fill_threads: positive(FILL_THREADS_ENV),
            devices: list(DEVICES_ENV),
            opencl_cpu: text(CPU_ENV).is_some_and(|v| v.trim() == "1"),
            cache_dir,
            cl_options: text(OPTIONS_ENV),
            finish_grace: milliseconds(FINISH_GRACE_ENV),
            cpu_wait: milliseconds(CPU_WAIT_ENV),
            mapped_windows: positive(MAPPED_WINDOWS_ENV),
            lock_dir: std::env::var_os(LOCK_DIR_ENV)
                .map(PathBuf::from)
                .unwrap_or_else(std::env::temp_dir),
            fake_gpus: text(FAKE_GPUS_ENV).and_then(|spec| fake_gpus(&spec)),
            fake_gpu_ids: list(FAKE_GPU_IDS_ENV),
            bellman_no_gpu: text(BELLMAN_NO_GPU_ENV).is_some_and(|v| v != "0"),
            bellperson_gpus_per_lock: text(BELLPERSON_GPUS_PER_LOCK_ENV)
                .and_then(|v| gpus_per_lock(&v)),
        }
    }
}

/// The milliseconds `name` says, if it is set to a number (warned about otherwise).
fn milliseconds(name: &'static str) -> Option<Duration> {
    let ms = std::env::var(name).ok()?;
    match ms.trim().parse::<u64>() {
        Ok(ms) => Some(Duration::from_millis(ms)),
        Err(_) => {
            malformed(name, &ms, "a number of milliseconds");
            None
        }
    }
}

/// The comma-separated values of `name`, trimmed, empty ones left out.
fn list(name: &str) -> Vec<String> {
    std::env::var(name)
        .map(|v| {
            v.split(',')
                .map(|s| s.trim().to_string())
                .filter(|s| !s.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// [`BELLPERSON_GPUS_PER_LOCK_ENV`] parsed as bellperson 0.27 parses it (`str::parse::<usize>`,
/// untrimmed): a positive number, else `None`. A value that is not a number is warned about, as
/// bellperson does, and bellperson then falls back to its single file as we do.
fn gpus_per_lock(v: &str) -> Option<usize> {
    match v.parse::<usize>() {
        Ok(n) => (n > 0).then_some(n),
        Err(_) => {
            malformed(BELLPERSON_GPUS_PER_LOCK_ENV, v, "a number of GPUs");
            None
        }
    }
}

/// `N` or `N:ns-per-term` ([`FAKE_GPUS_ENV`]); a malformed count is warned about and left out, a
/// malformed speed is warned about and the default speed kept.
fn fake_gpus(spec: &str) -> Option<(usize, Option<u64>)> {
    let mut parts = spec.split(':');
    let count = parts.next().and_then(|c| c.trim().parse().ok());
    let ns = parts.next().map(|n| n.trim().parse().ok());
    if count.is_none() || ns == Some(None) {
        malformed(FAKE_GPUS_ENV, spec, "N or N:ns-per-term");
    }
    count.map(|count| (count, ns.flatten()))
}

/// The positive integer in `name`; anything else is warned about and left out.
fn positive(name: &'static str) -> Option<usize> {
    let v = std::env::var(name).ok()?;
    match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => Some(n),
        _ => {
            malformed(name, &v, "a positive integer");
            None
        }
    }
}

/// Warns, once per variable, that its value `v` is not `expected`.
fn malformed(name: &'static str, v: &str, expected: &str) {
    static WARNED: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut warned = WARNED.lock().unwrap_or_else(|e| e.into_inner());
    if warned.get_or_insert_with(HashSet::new).insert(name) {
        log::warn!("ignoring {name}={v:?}: expected {expected}");
    }
}

#[cfg(test)]
mod tests {
    use super::{fake_gpus, gpus_per_lock, milliseconds};
    use std::time::Duration;

    #[test]
    fn milliseconds_are_read_and_a_malformed_value_is_left_out() {
        // Variables of this test's own: the others' are read by tests running beside it.
        std::env::set_var("PREEMPTIBLE_GROTH16_TEST_MS_A", " 250");
        std::env::set_var("PREEMPTIBLE_GROTH16_TEST_MS_B", "soon");
        assert_eq!(
            milliseconds("PREEMPTIBLE_GROTH16_TEST_MS_A"),
            Some(Duration::from_millis(250))
        );
        assert_eq!(milliseconds("PREEMPTIBLE_GROTH16_TEST_MS_B"), None);
        assert_eq!(milliseconds("PREEMPTIBLE_GROTH16_TEST_MS_UNSET"), None);
    }

    #[test]
    fn gpus_per_lock_as_bellperson_reads_it() {
        assert_eq!(gpus_per_lock("2"), Some(2));
        assert_eq!(gpus_per_lock("0"), None);
        assert_eq!(gpus_per_lock(" 2"), None, "bellperson does not trim");
        assert_eq!(gpus_per_lock("all"), None);
    }

    #[test]
    fn fake_gpu_specs() {
        assert_eq!(fake_gpus("2"), Some((2, None)));
        assert_eq!(fake_gpus(" 2 : 4000 "), Some((2, Some(4000))));
        assert_eq!(fake_gpus("2:fast"), Some((2, None)));
        assert_eq!(fake_gpus("two:4000"), None);
        assert_eq!(fake_gpus(""), None);
    }
}
