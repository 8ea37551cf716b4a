//! Many provers as threads of one process on two fake devices (the real scheduler and lock
//! files): random priorities, some limited to one device, some holding a priority guard across
//! proofs. Every proof verifies and counts each chunk once; afterwards no device is held or
//! wanted and the lock directory holds only the protocol's files. This is the test that
//! `scripts/tsan.sh` runs under ThreadSanitizer.
#![cfg(feature = "gpu")]

#[path = "circuits/mod.rs"]
mod circuits;

use circuits::Squares;
use preemptible_groth16::gpu::backend::device_ids;
use preemptible_groth16::gpu::fake::FAKE_GPUS_ENV;
use preemptible_groth16::gpu::locks::{self, LOCK_DIR_ENV};
use preemptible_groth16::gpu::PriorityGuard;
use preemptible_groth16::groth16::{
    create_random_proof_with_options, generate_random_parameters, prepare_verifying_key,
    verify_proof, Parameters, Priority, ProofReport, ProveOptions,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha20Rng;

/// Provers (threads) and proofs each; `PG16_STRESS_THREADS` / `PG16_STRESS_PROOFS` override.
fn sizes() -> (usize, usize) {
    let var = |name: &str, default: usize| {
        std::env::var(name)
            .ok()
            .and_then(|v| v.parse().ok())
            .unwrap_or(default)
    };
    (var("PG16_STRESS_THREADS", 10), var("PG16_STRESS_PROOFS", 3))
}

#[test]
fn many_provers_at_random_priorities_share_two_devices() {
    let _ = env_logger::builder().is_test(true).try_init();
    std::env::set_var(FAKE_GPUS_ENV, "2:1000");
    let temp = tempfile::Builder::new()
        .prefix("pg16-stress-")
        .tempdir()
        .unwrap();
    let dir = temp.path();
    std::env::set_var(LOCK_DIR_ENV, dir);

    let rng = &mut ChaCha20Rng::seed_from_u64(99);
    let long = Squares::log2(13);
    let short = Squares::log2(10);
    let long_params = generate_random_parameters(long, rng).unwrap();
    let short_params = generate_random_parameters(short, rng).unwrap();
    let devices = device_ids();
    assert_eq!(devices.len(), 2, "two fake devices");

    let (threads, proofs) = sizes();
    let reports: Vec<ProofReport> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (long_params, short_params, devices) = (&long_params, &short_params, &devices);
                scope.spawn(move || {
                    let rng = &mut ChaCha20Rng::seed_from_u64(1000 + t as u64);
                    // Low provers start at once with the long circuit; the others come a little
                    // later with the short one, so there is something to preempt.
                    let priority = [Priority::Low, Priority::Normal, Priority::High][t % 3];
                    if priority != Priority::Low {
                        std::thread::sleep(std::time::Duration::from_millis(rng.gen_range(5..60)));
                    }
                    let (circuit, params): (Squares, &Parameters) = if priority == Priority::Low {
                        (long, long_params)
                    } else {
                        (short, short_params)
                    };
                    let only = (t % 4 == 3).then(|| vec![devices[t % 2].clone()]);
                    let guard = (t % 5 == 4).then(|| PriorityGuard::acquire(priority).unwrap());
                    let mut mine = Vec::new();
                    for _ in 0..proofs {
                        let options = ProveOptions::default()
                            .priority(priority)
                            .chunk_terms(1 << 10)
                            .devices(only.clone());
                        let (proof, report) =
                            create_random_proof_with_options(circuit, params, rng, &options)
                                .unwrap();
                        let pvk = prepare_verifying_key(&params.vk);
                        assert!(verify_proof(&pvk, &proof, &[circuit.output()]).unwrap());
                        assert_eq!(
                            report.gpu_chunks_total() + report.cpu_chunks,
                            report.total_chunks,
                            "{report:?}"
                        );
                        mine.push(report);
                    }
                    drop(guard);
                    mine
                })
            })
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().expect("a prover thread panicked"))
            .collect()
    });

    assert_eq!(reports.len(), threads * proofs);
    let preemptions: u64 = reports.iter().map(|r| r.preemptions).sum();
    let gpu_chunks: u64 = reports.iter().map(|r| r.gpu_chunks_total()).sum();
    assert!(gpu_chunks > 0, "the devices were used");
    assert!(
        preemptions > 0,
        "higher provers took devices from lower ones"
    );
    for s in locks::status(dir, &devices).unwrap() {
        assert!(s.holder.is_none(), "{} still held: {s:?}", s.device);
        assert!(s.wanted_at.is_empty(), "{} still wanted: {s:?}", s.device);
    }
    let files = std::fs::read_dir(dir).unwrap().count();
    assert!(
        files <= devices.len() * 4,
        "{files} files in the lock directory"
    );
}
