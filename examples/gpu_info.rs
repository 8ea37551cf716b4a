//! Lists the OpenCL devices this crate would use and times building its kernels on each: once
//! from source (or from the disk cache, if an earlier run left it there) and once more as a new
//! process would, from the disk cache.
//!
//! ```text
//! cargo run --release --features gpu --example gpu_info -- [--cpu]
//! ```
//! `--cpu` admits OpenCL CPU devices (PoCL). `PREEMPTIBLE_GROTH16_GPUS` selects devices and
//! `PREEMPTIBLE_GROTH16_CACHE_DIR` moves the program cache (see the crate's README).

#[cfg(feature = "gpu")]
fn main() {
    use preemptible_groth16::gpu::{device, program, source, Selection};
    use std::time::Instant;

    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let mut selection = Selection::from_env();
    selection.include_cpu |= std::env::args().any(|a| a == "--cpu");
    let devices = match device::list(&selection) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(1);
        }
    };
    if devices.is_empty() {
        println!("no OpenCL device (try --cpu for CPU devices such as PoCL)");
        return;
    }
    println!("program cache: {}", program::cache_dir().display());
    let src = source::field_test_source();
    for d in &devices {
        println!(
            "{}  {}  ({}, driver {}, {} compute units, {:.1} GiB{})",
            d.id,
            d.name,
            d.vendor,
            d.driver,
            d.compute_units,
            d.memory as f64 / (1u64 << 30) as f64,
            if d.is_cpu { ", CPU" } else { "" }
        );
        for round in ["first build", "as a new process"] {
            program::clear_memory_cache();
            let t = Instant::now();
            match program::build(d, &src, "") {
                Ok(p) => println!(
                    "    {round}: {:.3} s ({})",
                    t.elapsed().as_secs_f64(),
                    if p.from_disk_cache {
                        "disk cache"
                    } else {
                        "compiled"
                    }
                ),
                Err(e) => println!("    {round}: failed: {e}"),
            }
        }
    }
}

#[cfg(not(feature = "gpu"))]
fn main() {
    eprintln!("built without the `gpu` feature: cargo run --features gpu --example gpu_info");
}
