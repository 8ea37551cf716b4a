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

/// Lists the OpenCL devices this crate would use and times building its programs on each.
#[cfg(feature = "gpu")]
#[derive(clap::Parser)]

struct Args {
    /// Admit OpenCL CPU devices (PoCL).
    #[arg(long)]
    cpu: bool,
    /// The programs to build, comma-separated: fields, fft, g1, g2.
    #[arg(long, value_name = "LIST", default_value = "fields,fft,g1,g2")]
    only: String,
    /// Print this program's OpenCL source and exit.
    #[arg(long, value_name = "PROGRAM")]
    print_source: Option<String>,
}

#[cfg(feature = "gpu")]
fn main() {
    use clap::Parser;
    use preemptible_groth16::gpu::{device, program, source, Selection};
    use std::time::Instant;

    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("info")).init();
    let args = Args::parse();
    type SourceOf = fn() -> String;
    let programs: [(&str, SourceOf); 4] = [
        ("fields", source::field_test_source),
        ("fft", source::fft_source),
        ("g1", || source::multiexp_source("G1")),
        ("g2", || source::multiexp_source("G2")),
    ];
    if let Some(name) = &args.print_source {
        match programs.iter().find(|(n, _)| *n == name.as_str()) {
            Some((_, src)) => print!("{}", src()),
            None => {
                eprintln!("error: no program {name} (fields, fft, g1, g2)");
                std::process::exit(2);
            }
        }
        return;
    }
    let chosen: Vec<_> = programs
        .iter()
        .filter(|(n, _)| args.only.split(',').any(|o| o == *n))
        .collect();

    let mut selection = Selection::from_env();
    selection.include_cpu |= args.cpu;
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
        match &d.bellperson_id {
            Some(id) => {
                println!("    bellperson's id: {id} (per-device lock: bellman.gpu.lock.{id})")
            }
            None => println!("    bellperson's id: none (neither a UUID nor a PCI id)"),
        }
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
