//! The on-disk program cache (feature `gpu`): its own test binary, because it points the cache
//! directory of the whole process elsewhere.
#![cfg(feature = "gpu")]

mod gpu_common;

use preemptible_groth16::gpu::{program, source};

#[test]
fn programs_come_from_the_disk_cache_the_second_time() {
    let dir = std::env::temp_dir().join(format!("pg16-cache-test-{}", std::process::id()));
    std::env::set_var(program::CACHE_DIR_ENV, &dir);
    let dev = gpu_common::any_device();
    // A source no other test builds, so the in-memory cache cannot answer.
    let src = format!(
        "{}\n__kernel void cache_probe_{}(__global uint *x) {{ x[0] = 1; }}\n",
        source::field_test_source(),
        std::process::id()
    );
    let first = program::build(&dev, &src, "").expect("build");
    assert!(!first.from_disk_cache);
    let files: Vec<_> = std::fs::read_dir(&dir).expect("cache dir").collect();
    assert_eq!(files.len(), 1, "one cached binary");
    // Without the in-memory copy (as in a new process) the build loads the cached binary.
    program::clear_memory_cache();
    let again = program::build(&dev, &src, "").expect("load");
    assert!(
        again.from_disk_cache,
        "second build came from the disk cache"
    );
    // A corrupt cached binary (overwritten, or cut short) is ignored with a warning and the
    // program built from source again, which replaces the file.
    let cached = files[0].as_ref().unwrap().path();
    for corrupt in [&b"not a program binary"[..], &[][..]] {
        std::fs::write(&cached, corrupt).unwrap();
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
    let _ = std::fs::remove_dir_all(&dir);
}
