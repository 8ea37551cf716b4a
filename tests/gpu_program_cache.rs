//! The on-disk program cache (feature `gpu`): its own test binary, because it points the cache
//! directory of the whole process elsewhere. The tests take turns ([`point_cache_at`]) since the
//! variable is the process's. They run as root (CI and the test command), so "another user's"
//! directory and files are chowned to `nobody`.
#![cfg(feature = "gpu")]

mod gpu_common;

use preemptible_groth16::gpu::{program, source, Device};
use std::os::unix::fs::{DirBuilderExt, MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};
use tempfile::TempDir;

/// `nobody`, the other user of these tests.
const OTHER_UID: u32 = 65534;

/// Held while a test has the process's cache directory variable set.
static ENV: Mutex<()> = Mutex::new(());

/// Points the cache at `dir` (`None`: unset) for as long as the guard lives.
fn point_cache_at(dir: Option<&Path>) -> MutexGuard<'static, ()> {
    let guard = ENV.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    match dir {
        Some(dir) => std::env::set_var(program::CACHE_DIR_ENV, dir),
        None => std::env::remove_var(program::CACHE_DIR_ENV),
    }
    program::clear_memory_cache();
    guard
}

/// A private temporary directory (mode 0700), removed with all it holds on drop.
fn temp_dir(tag: &str) -> TempDir {
    tempfile::Builder::new()
        .prefix(&format!("pg16-cache-{tag}-"))
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .expect("temp dir")
}

/// A private directory `name` in `base`.
fn private_dir(base: &TempDir, name: &str) -> PathBuf {
    let dir = base.path().join(name);
    std::fs::DirBuilder::new()
        .mode(0o700)
        .create(&dir)
        .expect("dir");
    dir
}

/// A small program of its own per tag, so that no other test's build answers for it.
fn probe_source(tag: &str) -> String {
    format!("__kernel void probe_{tag}(__global uint *x) {{ x[0] = 7; }}\n")
}

/// Builds the probe (never from the memory cache) and checks that its kernel runs.
fn build_probe(dev: &Device, tag: &str) -> std::sync::Arc<program::BuiltProgram> {
    program::clear_memory_cache();
    let built = program::build(dev, &probe_source(tag), "").expect("build");
    let out = ocl::Buffer::<u32>::builder()
        .queue(built.queue.clone())
        .len(1)
        .build()
        .expect("buffer");
    let kernel = ocl::Kernel::builder()
        .program(&built.program)
        .name(format!("probe_{tag}"))
        .queue(built.queue.clone())
        .global_work_size(1)
        .arg(&out)
        .build()
        .expect("kernel");
    // SAFETY: the kernel writes one value to `out`, which holds one.
    unsafe { kernel.enq().expect("launch") };
    let mut got = [0u32];
    out.read(&mut got[..]).enq().expect("read");
    assert_eq!(got[0], 7, "the probe kernel ran");
    built
}

/// The names in `dir`, sorted.
fn names_in(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read dir")
        .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

/// Builds the probe with the cache in the private `dir`: compiled and cached there, then loaded
/// from there. Returns the cached file's name and contents.
fn cache_probe(dev: &Device, tag: &str, dir: &Path) -> (String, Vec<u8>) {
    let _env = point_cache_at(Some(dir));
    assert!(!build_probe(dev, tag).from_disk_cache);
    let names = names_in(dir);
    assert_eq!(names.len(), 1, "one cached binary in the private dir");
    assert!(
        build_probe(dev, tag).from_disk_cache,
        "loaded the second time"
    );
    let binary = std::fs::read(dir.join(&names[0])).expect("read binary");
    (names[0].clone(), binary)
}

/// With the cache pointed at `cache` (the directory `dir` itself, or a link to it), a program
/// binary planted in `dir` as `name`, first a corrupt one, then `valid`, is not loaded: the probe
/// is compiled and works, and `dir` is left as it was (nothing written, the planted file intact).
fn assert_not_used(dev: &Device, tag: &str, cache: &Path, dir: &Path, name: &str, valid: &[u8]) {
    for planted in [&b"not a program binary"[..], valid] {
        std::fs::write(dir.join(name), planted).expect("plant");
        let _env = point_cache_at(Some(cache));
        let built = build_probe(dev, tag);
        assert!(!built.from_disk_cache, "the planted binary was not loaded");
        assert_eq!(names_in(dir), [name], "nothing written beside it");
        assert_eq!(std::fs::read(dir.join(name)).expect("read"), planted);
    }
}

/// A temporary directory whose `private/` caches the probe, with the cached file's name and
/// contents (a binary the device would load).
fn planted_setup(dev: &Device, tag: &str) -> (TempDir, String, Vec<u8>) {
    let base = temp_dir(tag);
    let (name, binary) = cache_probe(dev, tag, &private_dir(&base, "private"));
    (base, name, binary)
}

/// The test device, found while no test changes the environment.
fn device() -> Device {
    let _env = ENV.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
    gpu_common::any_device()
}

#[test]
fn programs_come_from_the_disk_cache_the_second_time() {
    let base = temp_dir("second-time");
    // Missing: made by the first store, private.
    let dir = base.path().join("made").join("cache");
    let _env = point_cache_at(Some(&dir));
    let dev = gpu_common::any_device();
    // A source no other test builds, so the in-memory cache cannot answer.
    let src = format!(
        "{}\n__kernel void cache_probe_{}(__global uint *x) {{ x[0] = 1; }}\n",
        source::field_test_source(),
        std::process::id()
    );
    let first = program::build(&dev, &src, "").expect("build");
    assert!(!first.from_disk_cache);
    let mode = |p: &Path| std::fs::symlink_metadata(p).expect("stat").mode() & 0o777;
    assert_eq!(mode(&dir), 0o700, "the cache dir is made private");
    let files: Vec<_> = std::fs::read_dir(&dir).expect("cache dir").collect();
    assert_eq!(files.len(), 1, "one cached binary");
    let cached = files[0].as_ref().expect("entry").path();
    assert_eq!(mode(&cached), 0o600, "the binary is private");
    // Without the in-memory copy (as in a new process) the build loads the cached binary.
    program::clear_memory_cache();
    let again = program::build(&dev, &src, "").expect("load");
    assert!(
        again.from_disk_cache,
        "second build came from the disk cache"
    );
    // A corrupt cached binary (overwritten, or cut short) is ignored with a warning and the
    // program built from source again, which replaces the file.
    for corrupt in [&b"not a program binary"[..], &[][..]] {
        std::fs::write(&cached, corrupt).expect("corrupt");
        program::clear_memory_cache();
        let rebuilt = program::build(&dev, &src, "").expect("built from source again");
        assert!(!rebuilt.from_disk_cache);
        program::clear_memory_cache();
        let reloaded = program::build(&dev, &src, "").expect("load");
        assert!(reloaded.from_disk_cache, "the rebuilt binary was cached");
    }
    // A different option string is another key: built from source again, then cached too.
    let other = program::build(&dev, &src, "-cl-mad-enable").expect("build");
    assert!(!other.from_disk_cache);
    // The programs of one device share its context and queues (and so their staging memory).
    for p in [&again, &other] {
        assert_eq!(p.context.as_ptr(), first.context.as_ptr(), "one context");
        assert_eq!(p.queue.as_ptr(), first.queue.as_ptr(), "one queue");
        assert_eq!(p.transfer_queue.as_ptr(), first.transfer_queue.as_ptr());
    }
    assert_ne!(first.queue.as_ptr(), first.transfer_queue.as_ptr());
}

#[test]
fn a_cache_dir_others_can_write_is_not_used() {
    let dev = device();
    let (base, name, valid) = planted_setup(&dev, "world_writable");
    let dir = private_dir(&base, "shared");
    std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o777)).expect("chmod");
    assert_not_used(&dev, "world_writable", &dir, &dir, &name, &valid);
    let _env = point_cache_at(Some(&dir));
    assert!(matches!(
        program::cache_dir(),
        program::CacheDir::MemoryOnly(program::CacheError::Writable { .. })
    ));
}

#[test]
fn a_cache_dir_of_another_user_is_not_used() {
    let dev = device();
    let (base, name, valid) = planted_setup(&dev, "other_user");
    let dir = private_dir(&base, "theirs");
    std::os::unix::fs::chown(&dir, Some(OTHER_UID), Some(OTHER_UID)).expect("chown");
    assert_not_used(&dev, "other_user", &dir, &dir, &name, &valid);
}

#[test]
fn a_cache_dir_that_is_a_symlink_is_not_followed() {
    let dev = device();
    let (base, name, valid) = planted_setup(&dev, "symlink");
    // The target is private and ours: only the link makes it unusable.
    let target = private_dir(&base, "target");
    let link = base.path().join("link");
    std::os::unix::fs::symlink(&target, &link).expect("symlink");
    assert_not_used(&dev, "symlink", &link, &target, &name, &valid);
}

#[test]
fn cached_files_that_are_links_large_or_not_ours_are_not_loaded() {
    let dev = device();
    let (base, name, good) = planted_setup(&dev, "files");
    let dir = base.path().join("private");
    let path = dir.join(&name);
    // A link to a valid binary elsewhere: not followed, and the link's target is left alone.
    let elsewhere = base.path().join("elsewhere.bin");
    std::fs::write(&elsewhere, &good).expect("write");
    let plants: [(&str, &dyn Fn()); 4] = [
        ("a symlink", &|| {
            std::os::unix::fs::symlink(&elsewhere, &path).expect("link")
        }),
        ("another user's", &|| {
            std::fs::write(&path, &good).expect("write");
            std::os::unix::fs::chown(&path, Some(OTHER_UID), None).expect("chown");
        }),
        ("group-writable", &|| {
            std::fs::write(&path, &good).expect("write");
            let mode = std::fs::Permissions::from_mode(0o620);
            std::fs::set_permissions(&path, mode).expect("chmod");
        }),
        ("larger than MAX_BINARY", &|| {
            let file = std::fs::File::create(&path).expect("create");
            file.set_len(program::MAX_BINARY + 1).expect("sparse");
        }),
    ];
    let _env = point_cache_at(Some(&dir));
    for (what, plant) in plants {
        std::fs::remove_file(&path).expect("remove");
        plant();
        assert!(!build_probe(&dev, "files").from_disk_cache, "{what} loaded");
        // Rebuilt and cached anew, as a regular file of ours.
        assert!(
            build_probe(&dev, "files").from_disk_cache,
            "{what} replaced"
        );
    }
    assert_eq!(
        std::fs::read(&elsewhere).expect("read"),
        good,
        "link target"
    );
}

#[test]
fn without_any_cache_dir_programs_stay_in_memory() {
    let dev = device();
    let (_base, name, _) = planted_setup(&dev, "nowhere");
    let _env = point_cache_at(None);
    let saved: Vec<_> = ["HOME", "XDG_CACHE_HOME"]
        .map(|v| (v, std::env::var_os(v)))
        .into();
    for (var, _) in &saved {
        std::env::remove_var(var);
    }
    let cache_dir = program::cache_dir();
    let built = build_probe(&dev, "nowhere");
    for (var, value) in saved {
        if let Some(value) = value {
            std::env::set_var(var, value);
        }
    }
    assert!(matches!(
        cache_dir,
        program::CacheDir::MemoryOnly(program::CacheError::NoDirectory)
    ));
    assert!(!built.from_disk_cache);
    // No shared temp-dir fallback any more.
    let old_fallback = std::env::temp_dir().join("preemptible-groth16-cache");
    assert!(!old_fallback.join(&name).exists());
}
