//! Proofs made through the GPU path verify, and so do proofs whose GPU work fails and falls back
//! to the CPU (feature `gpu`; in CI on PoCL). Assertions come from the prover's report.
#![cfg(feature = "test-hooks")]

#[path = "circuits/mod.rs"]
mod circuits;

use blstrs::Scalar;
use circuits::Squares;
use preemptible_groth16::gpu::backend::device_ids;
use preemptible_groth16::gpu::backend::{devices, MIN_GPU_FFT, MIN_GPU_TERMS};
use preemptible_groth16::gpu::device::CPU_ENV;
use preemptible_groth16::gpu::locks;
use preemptible_groth16::gpu::locks::LOCK_DIR_ENV;
use preemptible_groth16::gpu::test_hooks::inject_failures;
use preemptible_groth16::groth16::Priority;
use preemptible_groth16::groth16::{
    create_random_proof_with_options, generate_random_parameters, prepare_verifying_key,
    verify_proof, ProveOptions,
};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// The tests share the process's devices, lock directory and failure switch: one at a time.
static SERIAL: Mutex<()> = Mutex::new(());

/// A test's turn: its lock directory (removed when dropped, also when the test fails), then the
/// serializing guard.
struct Turn {
    _dir: tempfile::TempDir,
    _serial: MutexGuard<'static, ()>,
}

/// Admits PoCL before the backend picks its devices (read once, at first use), and keeps this
/// binary's locks to itself.
fn setup() -> Turn {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    std::env::set_var(CPU_ENV, "1");
    let dir = tempfile::Builder::new()
        .prefix("pg16-gpu-prover-")
        .tempdir()
        .unwrap();
    std::env::set_var(LOCK_DIR_ENV, dir.path());
    assert!(!devices().is_empty(), "no usable OpenCL device");
    Turn {
        _dir: dir,
        _serial: serial,
    }
}

#[test]
fn gpu_proofs_verify_and_gpu_failures_fall_back_to_the_cpu() {
    let _g = setup();

    let rng = &mut ChaCha20Rng::seed_from_u64(51);
    // 2^11 + 3 constraints (squares, output, inputs): a domain of 2^12, so the multiexps pass
    // MIN_GPU_TERMS and the quotient MIN_GPU_FFT.
    let c = Squares { n: 1 << 11 };
    assert!(c.n as usize >= MIN_GPU_TERMS);
    assert!((c.n as usize + 2).next_power_of_two() >= MIN_GPU_FFT);
    let params = generate_random_parameters(c, rng).unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let input: Scalar = c.output();
    let options = ProveOptions::default().chunk_terms(1 << 10);

    let (proof, report) = create_random_proof_with_options(c, &params, rng, &options).unwrap();
    assert!(verify_proof(&pvk, &proof, &[input]).unwrap());
    assert!(report.fft_on_gpu, "{report:?}");
    assert!(report.gpu_chunks_total() > 0, "{report:?}");
    assert_eq!(
        report.gpu_chunks_total() + report.cpu_chunks,
        report.total_chunks
    );
    assert_eq!((report.preemptions, report.gpu_failures), (0, 0));
    assert_eq!(report.live_device_bytes_at_release, 0);
    // The quotient alone holds its three vectors of 2^12 values of 32 bytes on the device.
    assert!(
        report.peak_device_bytes >= (3 * 32) << 12,
        "device memory reported: {report:?}"
    );

    let cpu_only = options.clone().use_gpu(false);
    let (proof, report) = create_random_proof_with_options(c, &params, rng, &cpu_only).unwrap();
    assert!(verify_proof(&pvk, &proof, &[input]).unwrap());
    assert_eq!(report.gpu_chunks_total(), 0);
    assert!(!report.fft_on_gpu);
    assert_eq!(report.peak_device_bytes, 0);
    assert_eq!(report.cpu_chunks, report.total_chunks);

    inject_failures(true);
    let result = create_random_proof_with_options(c, &params, rng, &options);
    inject_failures(false);
    let (proof, report) = result.unwrap();
    assert!(verify_proof(&pvk, &proof, &[input]).unwrap());
    assert!(report.gpu_failures >= 1, "{report:?}");
    assert!(!report.fft_on_gpu);
    assert_eq!(report.gpu_chunks_total(), 0);
    assert_eq!(
        report.cpu_chunks, report.total_chunks,
        "every chunk on the CPU"
    );
}

/// Preemption on the real OpenCL path: a high-priority prover takes the device from a low one
/// within a chunk; the low one frees its buffers, goes on on the CPU, and both proofs verify.
#[test]
fn a_high_prover_preempts_a_low_one_on_the_opencl_device() {
    let _g = setup();
    let device = device_ids()[0].clone();
    let rng = &mut ChaCha20Rng::seed_from_u64(52);
    let long = Squares::log2(13);
    let short = Squares { n: 1 << 11 };
    let long_params = generate_random_parameters(long, rng).unwrap();
    let short_params = generate_random_parameters(short, rng).unwrap();
    let options = |priority| {
        ProveOptions::default()
            .priority(priority)
            .chunk_terms(1 << 10)
            .devices(Some(vec![device.clone()]))
    };
    std::thread::scope(|s| {
        let low = s.spawn(|| {
            let mut rng = ChaCha20Rng::seed_from_u64(53);
            create_random_proof_with_options(long, &long_params, &mut rng, &options(Priority::Low))
                .unwrap()
        });
        let dir = locks::lock_dir();
        let start = Instant::now();
        while locks::status(&dir, std::slice::from_ref(&device)).unwrap()[0]
            .holder
            .as_ref()
            .map(|h| h.priority)
            != Some(Priority::Low)
        {
            assert!(
                start.elapsed() < Duration::from_secs(120),
                "the low prover never held it"
            );
            std::thread::sleep(Duration::from_millis(2));
        }
        let mut rng = ChaCha20Rng::seed_from_u64(54);
        let (high_proof, high) = create_random_proof_with_options(
            short,
            &short_params,
            &mut rng,
            &options(Priority::High),
        )
        .unwrap();
        let (low_proof, low) = low.join().unwrap();
        assert!(verify_proof(
            &prepare_verifying_key(&short_params.vk),
            &high_proof,
            &[short.output()]
        )
        .unwrap());
        assert!(verify_proof(
            &prepare_verifying_key(&long_params.vk),
            &low_proof,
            &[long.output()]
        )
        .unwrap());
        assert!(high.handover.is_some(), "{high:?}");
        assert!(high.gpu_chunks_total() > 0, "{high:?}");
        assert!(low.preemptions >= 1, "{low:?}");
        assert_eq!(low.live_device_bytes_at_release, 0, "{low:?}");
        assert_eq!(low.gpu_chunks_total() + low.cpu_chunks, low.total_chunks);
    });
}
