//! Lists the OpenCL devices this crate would use and times building its programs on each: once
//! from source (or from the disk cache, if an earlier run left it there) and once more as a new
//! process would, from the disk cache.
//!
//! ```text
//! cargo run --release --features gpu --example gpu_info -- [--cpu] [--only fields,fft,g1,g2]
//! cargo run --release --features gpu --example gpu_info -- --print-source g1
//! ```
//! `--cpu` admits OpenCL CPU devices (PoCL); `--only` picks programs; `--print-source` prints a
//! program's OpenCL source and exits. `PREEMPTIBLE_GROTH16_GPUS` selects devices,
//! `PREEMPTIBLE_GROTH16_CACHE_DIR` moves the program cache and `PREEMPTIBLE_GROTH16_CL_OPTIONS`
//! replaces the compiler options (see the crate's README).

#[cfg(feature = "gpu")]
fn main() {
    use preemptible_groth16::gpu::{device, program, source, Selection};
    use std::time::Instant;

    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args: Vec<String> = std::env::args().skip(1).collect();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1).cloned())
    };
    type SourceOf = fn() -> String;
    let programs: [(&str, SourceOf); 4] = [
        ("fields", source::field_test_source),
        ("fft", source::fft_source),
        ("g1", || source::multiexp_source("G1")),
        ("g2", || source::multiexp_source("G2")),
    ];
    if let Some(name) = value_of("--print-source") {
        match programs.iter().find(|(n, _)| *n == name) {
            Some((_, src)) => print!("{}", src()),
            None => {
                eprintln!("error: no program {name} (fields, fft, g1, g2)");
                std::process::exit(2);
            }
        }
        return;
    }
    let only = value_of("--only").unwrap_or_else(|| "fields,fft,g1,g2".into());
    let chosen: Vec<_> = programs
        .iter()
        .filter(|(n, _)| only.split(',').any(|o| o == *n))
        .collect();

    let mut selection = Selection::from_env();
    selection.include_cpu |= args.iter().any(|a| a == "--cpu");
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
        println!("    compiler options: {:?}", program::device_options(d));
        for (name, src) in &chosen {
            let src = src();
            for round in ["first build", "as a new process"] {
                program::clear_memory_cache();
                let t = Instant::now();
                match program::build(d, &src, "") {
                    Ok(p) => println!(
                        "    {name} program, {round}: {:.3} s ({})",
                        t.elapsed().as_secs_f64(),
                        if p.from_disk_cache {
                            "disk cache"
                        } else {
                            "compiled"
                        }
                    ),
                    Err(e) => println!("    {name} program, {round}: failed: {e}"),
                }
            }
        }
    }
}

#[cfg(not(feature = "gpu"))]
fn main() {
    eprintln!("built without the `gpu` feature: cargo run --features gpu --example gpu_info");
}
