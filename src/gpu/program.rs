//! Building OpenCL programs, with caches in memory and on disk.
//!
//! Compiling the big-integer kernels takes the driver seconds to minutes (bellperson's take about
//! three minutes at first use on an H200), so a built program is kept twice: in memory for the
//! life of the process, keyed by device and source, and on disk as the driver's program binary,
//! keyed by a hash of the source, the build options, the device and the driver version. A cache
//! file that cannot be read or loaded is ignored and rebuilt; failing to write one is a warning.
//!
//! The cache directory is `PREEMPTIBLE_GROTH16_CACHE_DIR`, else `$XDG_CACHE_HOME` or
//! `$HOME/.cache` with `preemptible-groth16/` appended, used only when it is the process's own and
//! private ([`cache_dir`]; the checks are in `program/disk.rs`), else programs are cached in
//! memory only.

mod disk;

pub use disk::{cache_dir, CacheDir, CacheError, CACHE_DIR_ENV, MAX_BINARY};

use super::device::Device;
use super::error::GpuError;
use super::staging::Staging;
use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// Stack of the thread that runs the OpenCL compiler.
const BUILD_STACK: usize = 256 << 20;

pub use crate::config::OPTIONS_ENV;

/// The compiler options a device's programs are built with: on NVIDIA the inline-PTX
/// multiplication, kept out of line (with the Fq2 functions), the point formulas inlined. On an
/// H200 the out-of-line multiplication makes the first G1 build 3.9 s instead of 54.5 s (portable,
/// all inlined) and the kernel faster; inlining the point formulas into the sorted multiexp's
/// kernels makes them 7-9% faster again (G1 2^22 0.117 s against 0.129 s, G2 2^20 0.102 s
/// against 0.110 s) for a longer first build (18 s against 8 s for both groups, then cached;
/// docs/BENCHMARKS.md has the variants). Other devices get the portable sources as they are.
pub fn device_options(device: &Device) -> String {
    if let Some(options) = crate::config::Config::from_env().cl_options {
        return options;
    }
    if device.is_nvidia() {
        "-D NVIDIA_PTX -D NOINLINE_MUL -D NOINLINE_FQ2".into()
    } else {
        String::new()
    }
}

/// A program built for one device, with the context and queues to run it. The context, the
/// queues and their staging memory belong to the device and are shared by all its programs
/// (`DeviceContext`): the handles here are the same objects.
#[derive(Debug)]
pub struct BuiltProgram {
    /// The OpenCL context of the device.
    pub context: ocl::Context,
    /// The device's in-order queue.
    pub queue: ocl::Queue,
    /// A second in-order queue, for uploads that go on the bus while `queue` runs kernels (the
    /// multiexp's bases during its count and sort, the quotient's inputs during the transforms
    /// of the earlier ones). A host that waits for a transfer's event before it enqueues the
    /// kernel that reads the data orders the two queues.
    pub transfer_queue: ocl::Queue,
    /// The program.
    pub program: ocl::Program,
    /// Whether it came from the disk cache.
    pub from_disk_cache: bool,
    /// What it shares with the device's other programs.
    shared: Arc<DeviceContext>,
}

/// What the programs of one device share, made at the first build for it and kept for the
/// process: the OpenCL context, the two queues, and the pinned staging memory of each (64 MiB,
/// made at its first transfer). One per device rather than per program: a context and two
/// stagings per program would hold three contexts and 384 MiB of pinned memory for the three
/// programs (FFT, G1, G2), and raise a 2^20 proof's peak host memory to 2.6x the parameter file
/// (H200). Within a proof the programs of a device run one after another (one worker per held device,
/// the quotient and the multiexps in turn); the warm-up runs the FFT and the multiexp side by
/// side, and tests may share a device between threads: the staging then serves one caller at a
/// time and the in-order queues keep each caller's commands in order. A driver error that
/// poisons the context (a faulted kernel, on NVIDIA) reaches all three programs, as it would the
/// device anyway.
#[derive(Debug)]
struct DeviceContext {
    context: ocl::Context,
    queue: ocl::Queue,
    transfer_queue: ocl::Queue,
    staging: Mutex<Option<Staging>>,
    transfer_staging: Mutex<Option<Staging>>,
}

impl DeviceContext {
    fn new(device: &Device) -> Result<Self, GpuError> {
        let context = ocl::Context::builder()
            .platform(device.platform)
            .devices(device.device)
            .build()?;
        Ok(DeviceContext {
            queue: ocl::Queue::new(&context, device.device, None)?,
            transfer_queue: ocl::Queue::new(&context, device.device, None)?,
            context,
            staging: Mutex::new(None),
            transfer_staging: Mutex::new(None),
        })
    }
}

/// The shared context of `device` ([`DeviceContext`]), made at the first call. Keyed by the
/// platform's and the device's handles, not the stable id alone: one GPU offered by two
/// platforms has one id and needs a context on each. Made outside the cache's lock, so that
/// the devices of a host make theirs side by side; of two threads racing for one device's, the
/// first to finish is kept.
fn device_context(device: &Device) -> Result<Arc<DeviceContext>, GpuError> {
    use ocl::core::ClDeviceIdPtr;
    type Contexts = Mutex<HashMap<String, Arc<DeviceContext>>>;
    static CONTEXTS: OnceLock<Contexts> = OnceLock::new();
    let lock = || {
        CONTEXTS
            .get_or_init(|| Mutex::new(HashMap::new()))
            .lock()
            .map_err(|_| GpuError::Ocl("device context cache lock poisoned".into()))
    };
    let key = format!(
        "{}/{:?}/{:?}",
        device.id,
        device.platform.as_ptr(),
        device.device.as_ptr()
    );
    if let Some(shared) = lock()?.get(&key) {
        return Ok(shared.clone());
    }
    let shared = Arc::new(DeviceContext::new(device)?);
    Ok(lock()?.entry(key).or_insert(shared).clone())
}

impl BuiltProgram {
    fn new(shared: Arc<DeviceContext>, program: ocl::Program, from_disk_cache: bool) -> Self {
        BuiltProgram {
            context: shared.context.clone(),
            queue: shared.queue.clone(),
            transfer_queue: shared.transfer_queue.clone(),
            program,
            from_disk_cache,
            shared,
        }
    }

    /// Runs `f` with the device's staging memory for `queue`, one caller at a time.
    pub(crate) fn with_staging<R>(
        &self,
        f: impl FnOnce(&mut Staging) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        staged(&self.shared.staging, &self.queue, f)
    }

    /// Runs `f` with the staging memory for `transfer_queue`, one caller at a time.
    pub(crate) fn with_transfer_staging<R>(
        &self,
        f: impl FnOnce(&mut Staging) -> Result<R, GpuError>,
    ) -> Result<R, GpuError> {
        staged(&self.shared.transfer_staging, &self.transfer_queue, f)
    }
}

fn staged<R>(
    slot: &Mutex<Option<Staging>>,
    queue: &ocl::Queue,
    f: impl FnOnce(&mut Staging) -> Result<R, GpuError>,
) -> Result<R, GpuError> {
    let mut guard = slot.lock().unwrap_or_else(|p| p.into_inner());
    let staging = match guard.take() {
        Some(staging) => staging,
        None => Staging::new(queue)?,
    };
    f(guard.insert(staging))
}

type MemoryCache = Mutex<HashMap<String, Arc<BuiltProgram>>>;

fn memory_cache() -> &'static MemoryCache {
    static CACHE: OnceLock<MemoryCache> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(HashMap::new()))
}

/// 128-bit FNV-1a (two 64-bit lanes with different offsets): a stable key across Rust versions,
/// which `std`'s hasher does not promise. Not a security boundary: the cache is the user's own.
fn key_of(parts: &[&str]) -> String {
    let mut lanes = [0xcbf2_9ce4_8422_2325u64, 0x6c62_272e_07bb_0142u64];
    for part in parts {
        for byte in part.bytes().chain(std::iter::once(0xff)) {
            for lane in &mut lanes {
                *lane ^= byte as u64;
                *lane = lane.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
    }
    format!("{:016x}{:016x}", lanes[0], lanes[1])
}

/// Drops the in-memory builds, as a new process would start (the devices' contexts stay); the
/// next [`build`] of the same source loads the binary from the disk cache.
pub fn clear_memory_cache() {
    if let Ok(mut cache) = memory_cache().lock() {
        cache.clear();
    }
}

/// Builds `source` for `device` with compiler `options` (after the [`device_options`]), or
/// returns the cached build.
pub fn build(device: &Device, source: &str, options: &str) -> Result<Arc<BuiltProgram>, GpuError> {
    let options = format!("{} {options}", device_options(device));
    let options = options.trim();
    let platform_version = device.platform.version().unwrap_or_default();
    let key = key_of(&[
        source,
        options,
        &device.name,
        &device.vendor,
        &device.driver,
        &platform_version,
    ]);
    let memory_key = format!("{}/{key}", device.id);
    let lock = || {
        memory_cache()
            .lock()
            .map_err(|_| GpuError::Ocl("program cache lock poisoned".into()))
    };
    if let Some(built) = lock()?.get(&memory_key) {
        return Ok(built.clone());
    }
    // Built without holding the lock: a compile takes seconds, and other threads may want other
    // programs meanwhile. Two threads racing for the same program both build it; the first to
    // finish is kept.
    let built = Arc::new(build_uncached(device, source, options, &key)?);
    Ok(lock()?.entry(memory_key).or_insert(built).clone())
}

fn build_uncached(
    device: &Device,
    source: &str,
    options: &str,
    key: &str,
) -> Result<BuiltProgram, GpuError> {
    let start = Instant::now();
    let shared = device_context(device)?;
    let name = format!("{key}.bin");
    let dir = disk::usable_dir();
    if let Some(dir) = &dir {
        if let Some(program) = load_cached(device, &shared.context, options, dir, &name) {
            log::info!(
                "gpu: program for {} loaded from {} in {:.2?}",
                device.name,
                dir.join(&name).display(),
                start.elapsed()
            );
            return Ok(BuiltProgram::new(shared, program, true));
        }
    }
    let program = compile(device, &shared.context, source, options)?;
    log::info!(
        "gpu: program for {} compiled in {:.2?}",
        device.name,
        start.elapsed()
    );
    if let Some(dir) = &dir {
        if let Err(e) = store(&program, dir, &name) {
            log::warn!("gpu: could not cache the program in {}: {e}", dir.display());
        }
    }
    Ok(BuiltProgram::new(shared, program, false))
}

/// The program from the cached binary `name` in `dir`, or `None` (with a warning when a file is
/// there but untrusted or unusable) to build from source.
fn load_cached(
    device: &Device,
    context: &ocl::Context,
    options: &str,
    dir: &Path,
    name: &str,
) -> Option<ocl::Program> {
    let path = dir.join(name);
    let binary = match disk::load(dir, name) {
        Ok(binary) => binary?,
        Err(e) => {
            log::warn!("gpu: ignoring cached program: {e}");
            return None;
        }
    };
    let bins: [&[u8]; 1] = [&binary];
    ocl::Program::builder()
        .binaries(&bins)
        .devices(device.device)
        .cmplr_opt(options)
        .build(context)
        .map_err(|e| {
            log::warn!(
                "gpu: ignoring unusable cached program {}: {e}",
                path.display()
            )
        })
        .ok()
}

/// Compiles `source` for `device`. Drivers compile on the calling thread and can need more stack
/// than a caller's thread has (NVIDIA's compiler overflowed a 2 MiB test thread on the multiexp
/// program), so the build runs on a thread of its own with a large stack.
fn compile(
    device: &Device,
    context: &ocl::Context,
    source: &str,
    options: &str,
) -> Result<ocl::Program, GpuError> {
    let program = std::thread::scope(|scope| {
        std::thread::Builder::new()
            .name("opencl-build".into())
            .stack_size(BUILD_STACK)
            .spawn_scoped(scope, || {
                ocl::Program::builder()
                    .src(source)
                    .devices(device.device)
                    .cmplr_opt(options)
                    .build(context)
                    .map_err(|e| e.to_string())
            })
            .map_err(|e| format!("cannot start the build thread: {e}"))?
            .join()
            .map_err(|_| "the OpenCL compiler crashed its thread".to_string())?
    })
    .map_err(|log| GpuError::BuildFailed {
        device: device.name.clone(),
        log,
    })?;
    // The compiler's messages (with `-cl-nv-verbose`, NVIDIA's registers and spills per kernel).
    if log::log_enabled!(log::Level::Debug) {
        if let Ok(ocl::enums::ProgramBuildInfoResult::BuildLog(text)) =
            program.build_info(device.device, ocl::enums::ProgramBuildInfo::BuildLog)
        {
            if !text.trim().is_empty() {
                log::debug!("gpu: build log for {}:\n{}", device.name, text.trim());
            }
        }
    }
    Ok(program)
}

/// Caches the program's binary as `name` in `dir` (written, synced and renamed: `disk::store`).
fn store(program: &ocl::Program, dir: &Path, name: &str) -> Result<(), CacheError> {
    let no_binary = |why: &str| CacheError::NoBinary(why.into());
    let binaries = match program.info(ocl::enums::ProgramInfo::Binaries) {
        Ok(ocl::enums::ProgramInfoResult::Binaries(b)) => b,
        Ok(_) => return Err(no_binary("an answer other than binaries")),
        Err(e) => return Err(no_binary(&e.to_string())),
    };
    match binaries.into_iter().next() {
        Some(binary) if !binary.is_empty() => disk::store(dir, name, &binary),
        Some(_) => Err(no_binary("an empty binary")),
        None => Err(no_binary("none for the device")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_depend_on_every_part() {
        let k = key_of(&["a", "b"]);
        assert_eq!(k, key_of(&["a", "b"]));
        assert_ne!(k, key_of(&["ab", ""]));
        assert_ne!(k, key_of(&["a", "c"]));
        assert_eq!(k.len(), 32);
    }
}
