//! Who holds each GPU and who wants it, from the lock files (the status view).
//!
//! ```text
//! cargo run --release --features gpu --example gpu_status -- [--watch SECONDS]
//! ```
//! Lists every OpenCL device this crate would use (or the fake devices of
//! `PREEMPTIBLE_GROTH16_FAKE_GPUS`) with its holder (pid, priority, since when) and the provers
//! waiting for it (their priority, and on Linux their pids), from the lock directory
//! (`PREEMPTIBLE_GROTH16_LOCK_DIR`, else the temp directory). `--watch` repeats every half second for that long.

/// Who holds each GPU and who wants it, from the lock files.
#[cfg(feature = "gpu")]
#[derive(clap::Parser)]

struct Args {
    /// Repeat every half second for this long.
    #[arg(long, value_name = "SECONDS", default_value_t = 0.0)]
    watch: f64,
}

#[cfg(feature = "gpu")]
fn main() {
    use preemptible_groth16::gpu::device::{self, Selection};
    use preemptible_groth16::gpu::{fake, locks};
    use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

    let watch = <Args as clap::Parser>::parse().watch;
    let fakes = fake::from_env();
    let ids: Vec<String> = if fakes.is_empty() {
        match device::list(&Selection::from_env()) {
            Ok(d) => d.into_iter().map(|d| d.id).collect(),
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
    } else {
        fakes.into_iter().map(|f| f.id).collect()
    };
    if ids.is_empty() {
        println!("no OpenCL GPU (PREEMPTIBLE_GROTH16_OPENCL_CPU=1 admits CPU devices)");
        return;
    }
    let dir = locks::lock_dir();
    let start = Instant::now();
    loop {
        let now_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis());
        match locks::status(&dir, &ids) {
            Ok(status) => {
                println!("lock directory {}", dir.display());
                for d in status {
                    let holder = match (&d.unusable, d.held, &d.holder) {
                        (Some(why), _, _) => format!("lock file unusable ({why})"),
                        (None, true, Some(h)) => format!(
                            "held by pid {} at {} priority for {:.1} s{}",
                            h.pid,
                            h.priority,
                            now_ms.saturating_sub(h.since_unix_ms) as f64 / 1e3,
                            if h.verified {
                                ""
                            } else {
                                " (as its text says; the lock table does not confirm it)"
                            }
                        ),
                        (None, true, None) => "held (by whom, its text does not say)".to_string(),
                        (None, false, _) => "free".to_string(),
                    };
                    // A holder keeps its own level's flag raised: only the levels above it
                    // wait (`DeviceStatus::waiting`).
                    let waiting: Vec<String> = d
                        .waiting
                        .iter()
                        .map(|w| {
                            let pids: Vec<String> = w.pids.iter().map(u32::to_string).collect();
                            if pids.is_empty() {
                                w.priority.name().to_string()
                            } else {
                                format!("{} (pid {})", w.priority.name(), pids.join(", "))
                            }
                        })
                        .collect();
                    println!(
                        "  {:<24} {holder}; waiting: {}",
                        d.device,
                        if waiting.is_empty() {
                            "-".to_string()
                        } else {
                            waiting.join(", ")
                        }
                    );
                }
            }
            Err(e) => {
                eprintln!("error: {e}");
                std::process::exit(1);
            }
        }
        if start.elapsed().as_secs_f64() >= watch {
            break;
        }
        std::thread::sleep(Duration::from_millis(500));
    }
}

#[cfg(not(feature = "gpu"))]
fn main() {
    eprintln!("built without the `gpu` feature: cargo run --features gpu --example gpu_status");
}
