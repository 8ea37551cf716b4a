//! The GPU FFT and its variants equal the CPU's at sizes 2^1 to 2^14 (feature `gpu`; in CI on
//! PoCL).
#![cfg(feature = "gpu")]

use blstrs::Scalar;
use ff::{Field, PrimeField};
use preemptible_groth16::domain::EvaluationDomain;
mod gpu_common;

use preemptible_groth16::gpu::{FftKernel, GpuError};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::sync::atomic::{AtomicUsize, Ordering};

fn kernel() -> FftKernel {
    FftKernel::new(&gpu_common::any_device()).expect("build the FFT program")
}

#[test]
fn gpu_transforms_equal_cpu() {
    let k = kernel();
    for launch_values in [0, 1 << 9] {
        // The default (one launch per pass at these sizes), then launches of 512 values: the
        // passes over larger transforms go in slices of work-groups.
        k.limit_launch_values(launch_values);
        transforms_equal_cpu(&k);
    }
}

fn transforms_equal_cpu(k: &FftKernel) {
    let rng = &mut ChaCha20Rng::seed_from_u64(41);
    let g = Scalar::MULTIPLICATIVE_GENERATOR;
    let g_inv = g.invert().unwrap();
    for log_n in 1..=14u32 {
        let n = 1usize << log_n;
        let values: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
        let domain = EvaluationDomain::from_coeffs(values.clone()).unwrap();
        let omega = domain.omega();
        let omega_inv = omega.invert().unwrap();
        let n_inv = Scalar::from(n as u64).invert().unwrap();

        let mut cpu = domain.clone();
        cpu.fft();
        let mut gpu = values.clone();
        k.fft(&mut gpu, omega).unwrap();
        assert_eq!(gpu, cpu.as_ref(), "fft 2^{log_n}");

        let mut cpu = domain.clone();
        cpu.ifft();
        let mut gpu = values.clone();
        k.ifft(&mut gpu, omega_inv, n_inv).unwrap();
        assert_eq!(gpu, cpu.as_ref(), "ifft 2^{log_n}");

        let mut cpu = domain.clone();
        cpu.coset_fft();
        let mut gpu = values.clone();
        k.coset_fft(&mut gpu, omega, g).unwrap();
        assert_eq!(gpu, cpu.as_ref(), "coset fft 2^{log_n}");

        let mut cpu = domain.clone();
        cpu.icoset_fft();
        let mut gpu = values.clone();
        k.icoset_fft(&mut gpu, omega_inv, n_inv, g_inv).unwrap();
        assert_eq!(gpu, cpu.as_ref(), "icoset fft 2^{log_n}");
        // And back: the round trip is the identity on the device too.
        k.coset_fft(&mut gpu, omega, g).unwrap();
        assert_eq!(gpu, values, "coset round trip 2^{log_n}");
    }
}

#[test]
fn bad_sizes_are_errors_not_panics() {
    let k = kernel();
    let mut three = vec![Scalar::ONE; 3];
    assert!(k.fft(&mut three, Scalar::ONE).is_err());
    let mut one = vec![Scalar::from(5u64)];
    k.ifft(&mut one, Scalar::ONE, Scalar::from(2u64)).unwrap();
    assert_eq!(one[0], Scalar::from(10u64));
    let mut empty: Vec<Scalar> = Vec::new();
    k.fft(&mut empty, Scalar::ONE).unwrap();
}

/// The prover's quotient on the CPU, step by step as `groth16::prover` does it.
fn cpu_quotient(a: &[Scalar], b: &[Scalar], c: &[Scalar]) -> Vec<Scalar> {
    let mut d: Vec<EvaluationDomain> = [a, b, c]
        .iter()
        .map(|v| {
            let mut d = EvaluationDomain::from_coeffs(v.to_vec()).unwrap();
            d.ifft();
            d.coset_fft();
            d
        })
        .collect();
    let c = d.pop().unwrap();
    let b = d.pop().unwrap();
    let mut a = d.pop().unwrap();
    a.mul_assign(&b);
    a.sub_assign(&c);
    a.divide_by_z_on_coset();
    a.icoset_fft();
    let mut h = a.into_coeffs();
    h.truncate(h.len() - 1);
    h
}

#[test]
fn gpu_quotient_equals_cpu() {
    let k = kernel();
    let rng = &mut ChaCha20Rng::seed_from_u64(43);
    // Lengths that are and are not powers of two, below and above one 256-value local group.
    for len in [1usize, 2, 3, 37, 256, 257, 1000, 4096] {
        let mut random =
            |len: usize| -> Vec<Scalar> { (0..len).map(|_| Scalar::random(&mut *rng)).collect() };
        let (a, b, c) = (random(len), random(len), random(len));
        let h = k.quotient(&a, &b, &c).unwrap();
        assert_eq!(h, cpu_quotient(&a, &b, &c), "quotient of {len} values");
    }
}

/// The prover's form: the coefficients as the multiexp's canonical integers, made on the device
/// by the last scaling (a Montgomery factor folded in), equal the CPU's converted on the host.
#[test]
fn gpu_quotient_as_canonical_scalars_equals_cpu() {
    use preemptible_groth16::domain::QuotientSteps;
    use preemptible_groth16::multiexp::{scalar_reprs, ScalarRepr};
    let k = kernel();
    let rng = &mut ChaCha20Rng::seed_from_u64(46);
    let mut random =
        |len: usize| -> Vec<Scalar> { (0..len).map(|_| Scalar::random(&mut *rng)).collect() };
    for len in [1usize, 3, 257, 3000] {
        let (a, b, c) = (random(len), random(len), random(len));
        let want = scalar_reprs(&cpu_quotient(&a, &b, &c));
        let h: Vec<ScalarRepr> = k.quotient_as(&a, &b, &c, &|| false).unwrap();
        assert_eq!(h, want, "quotient of {len} values");
        let mut steps = QuotientSteps::new(a.clone(), b.clone(), c.clone());
        let h: Vec<ScalarRepr> = k.quotient_steps_as(&mut steps, &|| false).unwrap();
        assert_eq!(h, want, "stepped quotient of {len} values");
        // The prover's put-off quotient: interrupted after some steps, then resumed from them.
        for at in [5usize, 20, 40] {
            let mut steps = QuotientSteps::new(a.clone(), b.clone(), c.clone());
            let seen = AtomicUsize::new(0);
            let first: Result<Vec<ScalarRepr>, _> =
                k.quotient_steps_as(&mut steps, &|| seen.fetch_add(1, Ordering::Relaxed) >= at);
            if let Ok(h) = first {
                assert_eq!(h, want, "{len} values, asked at probe {at}");
                continue;
            }
            let h: Vec<ScalarRepr> = k.quotient_steps_as(&mut steps, &|| false).unwrap();
            assert_eq!(h, want, "{len} values resumed after probe {at}");
        }
    }
}

#[test]
fn an_interrupted_quotient_stops_and_frees_its_device_memory() {
    let k = kernel();
    let rng = &mut ChaCha20Rng::seed_from_u64(44);
    let mut random =
        |len: usize| -> Vec<Scalar> { (0..len).map(|_| Scalar::random(&mut *rng)).collect() };
    let (a, b, c) = (random(4096), random(4096), random(4096));
    // Probes of an uninterrupted run: at least one per kernel launch and per download slot (the
    // inputs' uploads, on a thread of their own, are probed only while waited for).
    let probes = AtomicUsize::new(0);
    let h = k
        .quotient_interruptible(&a, &b, &c, &|| {
            probes.fetch_add(1, Ordering::Relaxed);
            false
        })
        .unwrap();
    assert_eq!(h, cpu_quotient(&a, &b, &c));
    let total = probes.load(Ordering::Relaxed);
    eprintln!("{total} probes");
    // Every launch, upload slot and download slot probes, whatever the timing: at this size 8
    // for the four tables' uploads, 8 per input (a check and seven launches: two transforms of
    // three and the shift to the coset), 4 around the pointwise step (the constant's upload, two
    // checks, the launch), 4 for the way back and 1 for the download: 41 at least. The waits add
    // more when a kernel is slow. Asked at any of the first 41, it stops, with no device memory
    // left.
    const AT_LEAST: usize = 41;
    assert!(total >= AT_LEAST, "{total} probes");
    for at in (0..AT_LEAST).step_by(3) {
        let seen = AtomicUsize::new(0);
        let result =
            k.quotient_interruptible(&a, &b, &c, &|| seen.fetch_add(1, Ordering::Relaxed) >= at);
        assert!(
            matches!(result, Err(GpuError::Interrupted)),
            "asked at probe {at} of {total}: {result:?}"
        );
        assert_eq!(k.live_device_bytes(), 0, "asked at probe {at}");
    }
}

#[test]
fn a_quotient_in_steps_keeps_what_it_finished_and_resumes_to_the_cpu_result() {
    use preemptible_groth16::domain::QuotientSteps;
    let k = kernel();
    let rng = &mut ChaCha20Rng::seed_from_u64(45);
    let mut random =
        |len: usize| -> Vec<Scalar> { (0..len).map(|_| Scalar::random(&mut *rng)).collect() };
    let (a, b, c) = (random(3000), random(3000), random(3000));
    let want = cpu_quotient(&a, &b, &c);
    // Uninterrupted, from nothing done: the CPU's result, with every input kept on the coset.
    let mut steps = QuotientSteps::new(a.clone(), b.clone(), c.clone());
    let probes = AtomicUsize::new(0);
    let h = k
        .quotient_steps(&mut steps, &|| {
            probes.fetch_add(1, Ordering::Relaxed);
            false
        })
        .unwrap();
    assert_eq!(h, want);
    assert_eq!(steps.steps_done(), 3);
    // From all three inputs on the coset (the last step only).
    assert_eq!(k.quotient_steps(&mut steps, &|| false).unwrap(), want);
    // Interrupted at every few probes: what finished stays, no device memory is left, and the
    // next try (on the device, or on the CPU) finishes with the same result.
    let total = probes.load(Ordering::Relaxed);
    let mut partial = 0;
    for at in (0..total).step_by(4) {
        let mut steps = QuotientSteps::new(a.clone(), b.clone(), c.clone());
        let seen = AtomicUsize::new(0);
        let result = k.quotient_steps(&mut steps, &|| seen.fetch_add(1, Ordering::Relaxed) >= at);
        assert_eq!(k.live_device_bytes(), 0, "asked at probe {at}");
        match result {
            // Waits probe as they go, so a run may have fewer probes than the first: asked
            // near the end, it may finish.
            Ok(h) => {
                assert!(h == want && steps.steps_done() == 3, "asked at probe {at}");
                continue;
            }
            Err(GpuError::Interrupted) => {}
            Err(e) => panic!("asked at probe {at} of {total}: {e}"),
        }
        let done = steps.steps_done();
        if (1..3).contains(&done) {
            partial += 1;
        }
        if at % 8 == 0 {
            assert_eq!(
                k.quotient_steps(&mut steps, &|| false).unwrap(),
                want,
                "at {at}"
            );
        } else {
            assert_eq!(steps.finish_on_cpu().unwrap(), want, "at {at}, on the CPU");
        }
    }
    assert!(
        partial > 0,
        "no interruption kept a finished step ({total} probes)"
    );
}
