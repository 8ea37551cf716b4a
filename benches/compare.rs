//! Side-by-side measurements against the peer (`../shared/peers/bellperson-bench`): the same
//! commands and circuit, so `scripts/bench-vs-peer.sh` can run both in one go.
//!
//! ```text
//! cargo bench --bench compare -- prove K REPS    # setup once, then best of REPS proofs, 2^K
//! cargo bench --bench compare -- msm K REPS      # G1 multiexp of 2^K terms, best of REPS
//! cargo bench --bench compare -- msm-g2 K REPS   # G2 multiexp
//! cargo bench --bench compare -- fft K REPS      # FFT of 2^K scalars
//! cargo bench --bench compare -- batch K N REPS  # setup once, then best of REPS batches of N
//!                                                 # proofs of 2^K (`create_proof_batch_with_options`;
//!                                                 # a fifth word `no-keep`: bases not kept on
//!                                                 # devices; `both`: kept, then not, same setup)
//! cargo bench --bench compare -- compat K REPS  # the same circuit through bellpepper-core 0.4
//!                                                 # and 0.2 (`compat::bellperson`), alternately
//! cargo bench --features gpu --bench compare -- gpu-fft K REPS   # the same on the first GPU,
//!                                                 # host conversion and transfers included
//! cargo bench --features gpu --bench compare -- gpu-msm K REPS   # G1 multiexp on the first GPU
//! cargo bench --features gpu --bench compare -- gpu-msm-g2 K REPS   # G2 multiexp on the first GPU
//! cargo bench --features gpu --bench compare -- gpu-arith K ITERS   # field and point operations
//!                                                 # per second on the first GPU (2^K work-items)
//! ```
//! With the `gpu` feature, `prove` uses the GPU path of the prover (the selected devices).
//! Each prints one line `ours <what> 2^K: <seconds> s`.

#[path = "../tests/circuits/mod.rs"]
mod circuits;

use blstrs::{G1Projective, G2Projective, Scalar};
use circuits::Squares;
use ff::Field;
use group::Curve;
use preemptible_groth16::domain::EvaluationDomain;
use preemptible_groth16::groth16::{
    create_proof_batch_with_options, create_random_proof, generate_random_parameters,
    prepare_verifying_key, verify_proof, verify_proofs_batch, CircuitShape, Parameters,
    PreparedParameters, ProveOptions,
};
use preemptible_groth16::multiexp::{multiexp, scalar_reprs};
use preemptible_groth16::Circuit;
use rand::thread_rng;
use std::time::Instant;

fn best_of<F: FnMut()>(reps: usize, mut f: F) -> f64 {
    (0..reps.max(1))
        .map(|_| {
            let t = Instant::now();
            f();
            t.elapsed().as_secs_f64()
        })
        .fold(f64::MAX, f64::min)
}

/// `n` affine bases: consecutive multiples of a random point, as the peer builds them, made in
/// parallel runs and normalized in batches (one inversion per run).
fn bases<G>(n: usize) -> Vec<G::AffineRepr>
where
    G: Curve<Scalar = Scalar>,
    G::AffineRepr: Copy + Send,
{
    let g = G::generator();
    let start = Scalar::random(thread_rng());
    let threads = std::thread::available_parallelism().map_or(1, |t| t.get());
    let run = n.div_ceil(threads).max(1);
    let mut out = vec![G::identity().to_affine(); n];
    std::thread::scope(|scope| {
        for (i, part) in out.chunks_mut(run).enumerate() {
            scope.spawn(move || {
                let mut p = g * (start + Scalar::from((i * run) as u64));
                let projective: Vec<G> = (0..part.len())
                    .map(|_| {
                        let q = p;
                        p += g;
                        q
                    })
                    .collect();
                G::batch_normalize(&projective, part);
            });
        }
    });
    out
}

/// Times a multiexp of `2^k` random terms in the group `G`.
fn msm<G>(name: &str, k: u32, reps: usize)
where
    G: Curve<Scalar = Scalar>,
    G::AffineRepr: preemptible_groth16::multiexp::CurveAffine,
{
    let n = 1usize << k;
    let b = bases::<G>(n);
    let s: Vec<Scalar> = (0..n).map(|_| Scalar::random(thread_rng())).collect();
    let best = best_of(reps, || {
        std::hint::black_box(multiexp(&b, &scalar_reprs(&s)).expect("msm"));
    });
    println!("ours {name} 2^{k}: {best:.4} s");
}

/// The first device the environment selects (GPUs only, unless `PREEMPTIBLE_GROTH16_OPENCL_CPU=1`).
#[cfg(feature = "gpu")]
fn first_gpu() -> Option<preemptible_groth16::gpu::Device> {
    use preemptible_groth16::gpu::{device, Selection};
    let found = device::list(&Selection::from_env())
        .ok()
        .and_then(|d| d.into_iter().next());
    if found.is_none() {
        eprintln!("no OpenCL GPU");
    }
    found
}

/// Times the GPU FFT end to end (Montgomery conversion, upload, kernels, download) and on the
/// device alone, on the first OpenCL device; checks it against the CPU once.
#[cfg(feature = "gpu")]
fn gpu_fft(k: u32, reps: usize) {
    use preemptible_groth16::gpu::FftKernel;
    let Some(dev) = first_gpu() else { return };
    let t = Instant::now();
    let kernel = FftKernel::new(&dev).expect("build");
    println!("ours gpu-fft build: {:.3} s", t.elapsed().as_secs_f64());
    let n = 1usize << k;
    let coeffs: Vec<Scalar> = (0..n).map(|_| Scalar::random(thread_rng())).collect();
    let mut cpu = EvaluationDomain::from_coeffs(coeffs.clone()).expect("domain");
    let omega = cpu.omega();
    cpu.fft();
    let mut gpu = coeffs.clone();
    kernel.fft(&mut gpu, omega).expect("gpu fft");
    assert_eq!(gpu, cpu.as_ref(), "GPU FFT differs from the CPU");
    // The input is copied before each timed call, not inside it (the copy of 2^24 values was
    // timed with the transform until the eleventh session).
    let mut best = f64::MAX;
    for _ in 0..reps.max(1) {
        let mut v = coeffs.clone();
        let t = Instant::now();
        kernel.fft(&mut v, omega).expect("gpu fft");
        best = best.min(t.elapsed().as_secs_f64());
    }
    let on_device = kernel.time_on_device(k, reps).expect("gpu fft");
    println!("ours gpu-fft-device 2^{k}: {on_device:.5} s ({})", dev.name);
    println!("ours gpu-fft 2^{k}: {best:.4} s ({})", dev.name);
}

/// Times a multiexp end to end on the first OpenCL device; checked against the CPU once (up to
/// 2^`check_up_to` terms: the CPU takes long beyond).
#[cfg(feature = "gpu")]
fn gpu_msm<G>(name: &str, k: u32, reps: usize, check_up_to: u32)
where
    G: Curve<Scalar = Scalar>,
    G::AffineRepr: preemptible_groth16::gpu::GpuCurve<Curve = G>,
{
    use preemptible_groth16::gpu::{piece_ends, GpuCurve, KeepOnDevice, MultiexpKernel, QueryKey};
    let Some(dev) = first_gpu() else { return };
    let t = Instant::now();
    let kernel = MultiexpKernel::new(&dev).expect("build");
    println!("ours {name} build: {:.3} s", t.elapsed().as_secs_f64());
    let n = 1usize << k;
    let b = bases::<G>(n);
    let s = scalar_reprs(
        &(0..n)
            .map(|_| Scalar::random(thread_rng()))
            .collect::<Vec<_>>(),
    );
    let gpu = kernel.multiexp(&b, &s).expect("gpu");
    if k <= check_up_to {
        assert_eq!(gpu, multiexp(&b, &s).expect("cpu"), "GPU differs from CPU");
    }
    let best = best_of(reps, || {
        std::hint::black_box(kernel.multiexp(&b, &s).expect("gpu"));
    });
    println!("ours {name} 2^{k}: {best:.4} s ({})", dev.name);
    // The same call over bases a batch keeps on the device: the first call uploads and keeps
    // them, the timed ones copy them on the device instead of uploading them.
    let keep = KeepOnDevice {
        query: QueryKey {
            group: <G::AffineRepr as GpuCurve>::NAME,
            address: b.as_ptr() as usize,
            len: n,
        },
        offset: 0,
        budget: u64::MAX,
    };
    let ends = piece_ends(n, <G::AffineRepr as GpuCurve>::PIECE_TERMS);
    let kept = || {
        let sums = kernel.multiexp_keeping_bases(b.as_slice(), &s, &ends, &|| false, keep);
        let uploaded = sums.bases_uploaded;
        (sums.into_result().expect("gpu"), uploaded)
    };
    assert_eq!(kept().0, gpu, "kept bases: a different sum");
    let mut uploaded = 0;
    let best = best_of(reps, || {
        uploaded += std::hint::black_box(kept()).1;
    });
    println!(
        "ours {name} 2^{k}, bases kept on the device: {best:.4} s ({uploaded} bytes uploaded by the timed calls)"
    );
    kernel.free_kept_bases();
}

/// Times a G1 multiexp of 2^k terms over bases kept on the device (the device's own work: no
/// upload) at each window width of `widths` (0: the plan's own) and in pieces of 2^22 terms (as
/// every call is cut) and in one piece; each sum is checked against the plan's own.
#[cfg(feature = "gpu")]
fn gpu_msm_widths(k: u32, reps: usize, widths: &[usize]) {
    use blstrs::G1Affine;
    use preemptible_groth16::gpu::{piece_ends, GpuCurve, KeepOnDevice, MultiexpKernel, QueryKey};
    let Some(dev) = first_gpu() else { return };
    let kernel = MultiexpKernel::new(&dev).expect("build");
    let n = 1usize << k;
    let b = bases::<G1Projective>(n);
    let s = scalar_reprs(
        &(0..n)
            .map(|_| Scalar::random(thread_rng()))
            .collect::<Vec<_>>(),
    );
    let keep = KeepOnDevice {
        query: QueryKey {
            group: G1Affine::NAME,
            address: b.as_ptr() as usize,
            len: n,
        },
        offset: 0,
        budget: u64::MAX,
    };
    let expected = kernel.multiexp(&b, &s).expect("gpu");
    let mut pieces = vec![G1Affine::PIECE_TERMS.min(n), n];
    pieces.dedup();
    for piece in pieces {
        let ends = piece_ends(n, piece);
        for &c in widths {
            kernel
                .set_window_bits((c != 0).then_some(c))
                .expect("window width");
            let call = || {
                kernel
                    .multiexp_keeping_bases(b.as_slice(), &s, &ends, &|| false, keep)
                    .into_result()
                    .expect("gpu")
            };
            assert_eq!(call(), expected, "c = {c}: a different sum");
            let best = best_of(reps, || {
                std::hint::black_box(call());
            });
            let c = if c == 0 {
                "plan's".to_string()
            } else {
                c.to_string()
            };
            println!(
                "ours gpu-msm-widths 2^{k}, pieces of 2^{}, c = {c}, bases kept: {best:.4} s \
                 (peak device memory {} MiB)",
                piece.trailing_zeros(),
                kernel.take_peak_device_bytes() >> 20
            );
        }
    }
    kernel.set_window_bits(None).expect("window width");
    kernel.free_kept_bases();
}

/// Times the arithmetic throughput kernels (`src/gpu/cl/throughput.cl`) on the first OpenCL
/// device: 2^k work-items each running `iters` dependent operations; prints operations per second
/// and the time 2^28 of them would take (the mixed additions of a 2^24-term G1 multiexp with
/// 16-bit windows).
#[cfg(feature = "gpu")]
fn gpu_arith(k: u32, iters: u32) {
    use preemptible_groth16::gpu::{program, source};
    let Some(dev) = first_gpu() else { return };
    let items = 1usize << k;
    for group in ["G1", "G2"] {
        let t = Instant::now();
        let built = program::build(&dev, &source::throughput_source(group), "").expect("build");
        println!(
            "ours gpu-arith {group} build: {:.3} s ({})",
            t.elapsed().as_secs_f64(),
            program::device_options(&dev)
        );
        let coord = if group == "G1" { 12 } else { 24 };
        // 64 affine "points" of arbitrary coordinates below P (the top limb kept small).
        let mut table = vec![0u32; 64 * 2 * coord];
        let mut x = 0x9e37_79b9u32;
        for (i, limb) in table.iter_mut().enumerate() {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            *limb = if i % 12 == 11 { x & 0x0fff_ffff } else { x };
        }
        let q = &built.queue;
        let table_buf = ocl::Buffer::<u32>::builder()
            .queue(q.clone())
            .len(table.len())
            .copy_host_slice(&table)
            .build()
            .expect("table");
        let out = ocl::Buffer::<u32>::builder()
            .queue(q.clone())
            .len(items * 3 * coord)
            .build()
            .expect("out");
        for op in ["mul", "sqr", "add_affine_xyzz", "add"] {
            let mut builder = ocl::Kernel::builder();
            builder
                .program(&built.program)
                .name(format!("{group}_{op}_loop"))
                .queue(q.clone())
                .global_work_size(items)
                .local_work_size(64);
            if op.starts_with("add") {
                builder.arg(&table_buf);
            }
            let kernel = builder.arg(&out).arg(iters).build().expect("kernel");
            let best = best_of(3, || {
                unsafe { kernel.enq().expect("launch") };
                q.finish().expect("finish");
            });
            let rate = items as f64 * iters as f64 / best;
            println!(
                "ours gpu-arith {group} {op}: {:.3} G/s, 2^28 in {:.1} ms ({:.4} s for 2^{k} x {iters})",
                rate / 1e9,
                (1u64 << 28) as f64 / rate * 1e3,
                best
            );
        }
    }
}

/// Times a batch of `count` proofs of the squares circuit at 2^k through
/// `create_proof_batch_with_options` (the GPU when the feature is on), best of `reps`; prints the
/// batch's time and, from its reports, the synthesis and the time after it, so the overlap of the
/// two can be judged, and the bases that went up to the devices (`keep`: kept on them between
/// proofs, [`ProveOptions::keep_bases_on_device`]), with `ahead` as
/// [`ProveOptions::witnesses_ahead`] (`0`: each synthesis after the proof before, so that the
/// batch's time less its synthesis is its proofs' work) and, with `shaped`, from parameters that
/// carry the circuit's shape, recorded before the clock starts. Every batch is verified.
fn batch(k: u32, count: usize, reps: usize, keeps: &[bool], ahead: Option<usize>, shaped: bool) {
    let c = Squares::log2(k);
    let t = Instant::now();
    let params = generate_random_parameters(c, &mut thread_rng()).expect("setup");
    println!("ours setup 2^{k}: {:.3} s", t.elapsed().as_secs_f64());
    // With `shaped`, the circuit's shape is recorded before the batch (a service records it once
    // per circuit), so that every witness, the first too, is made from it.
    let prepared = shaped.then(|| {
        let t = Instant::now();
        let recorded = CircuitShape::record(c).expect("record");
        println!(
            "ours shape 2^{k}: recorded in {:.3} s",
            t.elapsed().as_secs_f64()
        );
        PreparedParameters::new(&params, recorded)
    });
    // The process's devices, contexts and programs readied before the clock starts, as in a
    // service after its first proof: otherwise a batch whose first witness is quick (`shaped`)
    // waits for them (a few tenths of a second) and a slower one hides them behind its synthesis.
    #[cfg(feature = "gpu")]
    {
        let t = Instant::now();
        let devices = preemptible_groth16::gpu::backend::device_ids().len();
        println!(
            "ours gpu devices readied: {devices} in {:.3} s",
            t.elapsed().as_secs_f64()
        );
    }
    for &keep in keeps {
        batch_on(k, count, reps, keep, ahead, &params, prepared.as_ref());
    }
}

/// One of [`batch`]'s runs on parameters already made.
fn batch_on(
    k: u32,
    count: usize,
    reps: usize,
    keep: bool,
    ahead: Option<usize>,
    params: &Parameters,
    prepared: Option<&PreparedParameters<&Parameters>>,
) {
    let c = Squares::log2(k);
    let pvk = prepare_verifying_key(&params.vk);
    let input = [c.output::<Scalar>()];
    let options = ProveOptions::default()
        .keep_bases_on_device(keep)
        .witnesses_ahead(ahead);
    // The fastest run's time and its reports.
    let mut best: Option<(f64, Vec<preemptible_groth16::groth16::ProofReport>)> = None;
    let mut most_resident = 0u64;
    for _ in 0..reps.max(1) {
        let rs = |_| Scalar::random(thread_rng());
        let (r, s) = ((0..count).map(rs).collect(), (0..count).map(rs).collect());
        let before = reset_peak_resident();
        let t = Instant::now();
        let out = match prepared {
            Some(prepared) => {
                create_proof_batch_with_options(vec![c; count], prepared, r, s, &options)
            }
            None => create_proof_batch_with_options(vec![c; count], params, r, s, &options),
        }
        .expect("prove");
        let total = t.elapsed().as_secs_f64();
        let peak = peak_resident();
        let proofs: Vec<_> = out.iter().map(|(p, _)| p).collect();
        let inputs = vec![input.to_vec(); count];
        assert!(verify_proofs_batch(&pvk, &mut thread_rng(), &proofs, &inputs).expect("verify"));
        if best.as_ref().is_none_or(|(fastest, _)| total < *fastest) {
            best = Some((total, out.into_iter().map(|(_, r)| r).collect()));
        }
        if let (Some(peak), Some(before)) = (peak, before) {
            most_resident = most_resident.max(peak.saturating_sub(before));
        }
    }
    let Some((total, reports)) = best else { return };
    // Each report's synthesis is its own circuit's, made beside the proofs before it, and its
    // `total` runs from the batch's start: when it was done.
    let seconds = |d: std::time::Duration| format!("{:.3}", d.as_secs_f64());
    let synthesis: f64 = reports.iter().map(|r| r.synthesis.as_secs_f64()).sum();
    let uploaded: Vec<u64> = reports.iter().map(|r| r.bases_uploaded_bytes).collect();
    let mb = |bytes: u64| bytes as f64 / 1e6;
    println!(
        "ours batch 2^{k} x {count}: {total:.3} s (the witnesses' synthesis {synthesis:.3} s in \
         all, beside the proofs; {} of {count} from {}); bases uploaded {:.0} MB in all, {:.0} MB \
         by the first proof ({}); witnesses ahead: {}",
        reports.iter().filter(|r| r.shape_used).count(),
        if prepared.is_some() {
            "the shape recorded before"
        } else {
            "a shape recorded in the batch"
        },
        mb(uploaded.iter().sum()),
        mb(uploaded.first().copied().unwrap_or(0)),
        if keep {
            "kept on the devices"
        } else {
            "not kept"
        },
        ahead.map_or("default".to_string(), |a| a.to_string()),
    );
    let done: Vec<String> = reports.iter().map(|r| seconds(r.total)).collect();
    println!("  proofs done at (s): {}", done.join(" "));
    let syntheses: Vec<String> = reports.iter().map(|r| seconds(r.synthesis)).collect();
    println!("  each witness's synthesis (s): {}", syntheses.join(" "));
    // The parameters' points in memory, and one witness: its assignment and the evaluations of
    // A, B and C, 32 bytes a value each.
    let points = |g1: usize, g2: usize| (g1 * 96 + g2 * 192) as u64;
    let in_memory = points(
        params.h.len() + params.l.len() + params.a.len() + params.b_g1.len(),
        params.b_g2.len(),
    );
    let witness = 32 * (params.l.len() + 3 * params.h.len()) as u64;
    println!(
        "  resident memory a batch added at its peak: {:.0} MiB (the parameters' points, \
         resident before it, {:.0} MiB; one witness about {:.0} MiB; 0: not measured)",
        most_resident as f64 / (1 << 20) as f64,
        in_memory as f64 / (1 << 20) as f64,
        witness as f64 / (1 << 20) as f64,
    );
}

/// Resets the process's peak resident memory (`VmHWM`; Linux: `5` to `/proc/self/clear_refs`) to
/// its resident memory now, which it returns, so that [`peak_resident`] measures what came after.
fn reset_peak_resident() -> Option<u64> {
    std::fs::write("/proc/self/clear_refs", "5").ok()?;
    status_bytes("VmRSS:")
}

/// The process's peak resident memory in bytes (`VmHWM` in `/proc/self/status`), where known.
fn peak_resident() -> Option<u64> {
    status_bytes("VmHWM:")
}

/// A line of `/proc/self/status` in kB, as bytes.
fn status_bytes(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// Proves the squares circuit at 2^k written against bellpepper-core 0.4 (the top-level API) and
/// against 0.2 (through `compat::bellperson`), alternately, `reps` times each on the same
/// parameters; prints the best synthesis and the best whole proof of each, which should match.
fn compat(k: u32, reps: usize) {
    use preemptible_groth16::compat::bellperson::groth16 as bp;
    let c = Squares::log2(k);
    let params = generate_random_parameters(c, &mut thread_rng()).expect("setup");
    let old_params: bp::Parameters<blstrs::Bls12> = params.clone().into();
    let pvk = prepare_verifying_key(&params.vk);
    let input = [c.output::<Scalar>()];
    let options = ProveOptions::default();
    let mut best = [(f64::MAX, f64::MAX); 2];
    let mut keep = |i: usize, total: f64, synthesis: f64| {
        best[i] = (best[i].0.min(synthesis), best[i].1.min(total));
    };
    for _ in 0..reps.max(1) {
        let rs = || vec![Scalar::random(thread_rng())];
        let t = Instant::now();
        let (proof, report) =
            create_proof_batch_with_options(vec![c], &params, rs(), rs(), &options)
                .expect("prove")
                .remove(0);
        keep(0, t.elapsed().as_secs_f64(), report.synthesis.as_secs_f64());
        assert!(verify_proof(&pvk, &proof, &input).expect("verify"));
        let t = Instant::now();
        let circuit = vec![circuits::SquaresV02(c)];
        let (proof, report) =
            bp::create_proof_batch_with_options(circuit, &old_params, rs(), rs(), &options)
                .expect("prove")
                .remove(0);
        keep(1, t.elapsed().as_secs_f64(), report.synthesis.as_secs_f64());
        assert!(verify_proof(&pvk, &proof.into(), &input).expect("verify"));
    }
    for (name, (synthesis, total)) in ["0.4 (top level)", "0.2 (compat)"].iter().zip(best) {
        println!(
            "ours compat 2^{k} circuit {name}: synthesis {synthesis:.4} s, proof {total:.4} s"
        );
    }
}

/// Synthesis of `circuit` in full against synthesis from its recorded shape (witness, then the
/// evaluations), the best of `reps` proofs each, alternately; every proof verified.
fn shape<C: Circuit<Scalar> + Clone + Send>(
    name: &str,
    circuit: C,
    blank: C,
    inputs: &[Scalar],
    reps: usize,
) {
    let params = generate_random_parameters(blank.clone(), &mut thread_rng()).expect("setup");
    let pvk = prepare_verifying_key(&params.vk);
    let t = Instant::now();
    let recorded = CircuitShape::record(blank).expect("record");
    let record_s = t.elapsed().as_secs_f64();
    println!(
        "ours shape {name}: recorded in {record_s:.4} s, {} constraints, {} terms, {} bytes ({:.1} bytes a term)",
        recorded.num_constraints(),
        recorded.num_terms(),
        recorded.memory_bytes(),
        recorded.memory_bytes() as f64 / recorded.num_terms().max(1) as f64
    );
    let prepared = PreparedParameters::new(&params, recorded);
    let options = ProveOptions::default().reuse_shape_in_batch(false);
    let (mut full, mut witness, mut evaluation, mut shaped) =
        (f64::MAX, f64::MAX, f64::MAX, f64::MAX);
    let (mut full_proof, mut shaped_proof) = (f64::MAX, f64::MAX);
    for _ in 0..reps.max(1) {
        let rs = || vec![Scalar::random(thread_rng())];
        let t = Instant::now();
        let (proof, report) =
            create_proof_batch_with_options(vec![circuit.clone()], &params, rs(), rs(), &options)
                .expect("prove")
                .remove(0);
        full_proof = full_proof.min(t.elapsed().as_secs_f64());
        full = full.min(report.synthesis.as_secs_f64());
        assert!(verify_proof(&pvk, &proof, inputs).expect("verify"));
        let t = Instant::now();
        let (proof, report) =
            create_proof_batch_with_options(vec![circuit.clone()], &prepared, rs(), rs(), &options)
                .expect("prove")
                .remove(0);
        shaped_proof = shaped_proof.min(t.elapsed().as_secs_f64());
        assert!(report.shape_used);
        shaped = shaped.min(report.synthesis.as_secs_f64());
        witness = witness.min(report.witness.as_secs_f64());
        evaluation = evaluation.min(report.evaluation.as_secs_f64());
        assert!(verify_proof(&pvk, &proof, inputs).expect("verify"));
    }
    println!(
        "ours shape {name}: full synthesis {full:.4} s (proof {full_proof:.3} s); from the shape {shaped:.4} s \
         (witness {witness:.4} s, evaluations {evaluation:.4} s; proof {shaped_proof:.3} s): {:.1}x",
        full / shaped
    );
}

fn main() {
    // RUST_LOG=preemptible_groth16=debug shows the GPU multiexp's phase times.
    env_logger::Builder::from_env(env_logger::Env::default().default_filter_or("warn")).init();
    let args: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| a != "--bench")
        .collect();
    let usage = "usage: compare prove|compat|shape|msm|msm-g2|fft K REPS | compare shape-sha256 BLOCKS REPS \
                 | compare batch K N REPS [no-keep|both] [ahead=W] [shaped]";
    let (Some(cmd), Some(k), reps) = (args.first(), args.get(1), args.get(2)) else {
        eprintln!("{usage}");
        return;
    };
    let Ok(k) = k.parse::<u32>() else {
        eprintln!("{usage}");
        return;
    };
    let reps: usize = reps.and_then(|r| r.parse().ok()).unwrap_or(3);
    let n = 1usize << k;
    let rng = &mut thread_rng();
    match cmd.as_str() {
        "prove" => {
            let c = Squares::log2(k);
            let t = Instant::now();
            let params = generate_random_parameters(c, rng).expect("setup");
            println!("ours setup 2^{k}: {:.3} s", t.elapsed().as_secs_f64());
            let pvk = prepare_verifying_key(&params.vk);
            let input = c.output::<Scalar>();
            let best = best_of(reps, || {
                let proof = create_random_proof(c, &params, &mut thread_rng()).expect("prove");
                assert!(verify_proof(&pvk, &proof, &[input]).expect("verify"));
            });
            println!("ours prove 2^{k}: {best:.3} s");
        }
        "batch" => {
            let count = args.get(2).and_then(|c| c.parse().ok()).unwrap_or(10);
            let reps = args.get(3).and_then(|r| r.parse().ok()).unwrap_or(1);
            let extra = args.get(4..).unwrap_or_default();
            let word = |w: &str| extra.iter().any(|a| a == w);
            let keeps: &[bool] = match (word("no-keep"), word("both")) {
                (_, true) => &[true, false],
                (true, false) => &[false],
                _ => &[true],
            };
            let ahead = extra
                .iter()
                .find_map(|a| a.strip_prefix("ahead=")?.parse().ok());
            batch(k, count, reps, keeps, ahead, word("shaped"));
        }
        "compat" => compat(k, reps),
        "shape" => {
            let c = Squares::log2(k);
            shape(
                &format!("squares 2^{k}"),
                c,
                c,
                &[c.output::<Scalar>()],
                reps,
            );
        }
        "shape-sha256" => {
            // K blocks of 64 bytes.
            let len = 64 * k as usize;
            let preimage: Vec<u8> = (0..len).map(|i| i as u8).collect();
            let digest = {
                use sha2::Digest;
                sha2::Sha256::digest(&preimage)
            };
            let inputs = circuits::Sha256Preimage::public_inputs::<Scalar>(&digest);
            let circuit = circuits::Sha256Preimage {
                len,
                preimage: Some(preimage),
            };
            let blank = circuits::Sha256Preimage {
                len,
                preimage: None,
            };
            shape(
                &format!("sha256 of {len} bytes"),
                circuit,
                blank,
                &inputs,
                reps,
            );
        }
        "msm" => msm::<G1Projective>("msm", k, reps),
        "msm-g2" => msm::<G2Projective>("msm-g2", k, reps),
        "fft" => {
            let coeffs: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
            let mut d = EvaluationDomain::from_coeffs(coeffs).expect("domain");
            let best = best_of(reps, || d.fft());
            println!("ours fft 2^{k}: {best:.4} s");
        }
        #[cfg(feature = "gpu")]
        "gpu-fft" => gpu_fft(k, reps),
        #[cfg(feature = "gpu")]
        "gpu-msm" => gpu_msm::<G1Projective>("gpu-msm", k, reps, 24),
        #[cfg(feature = "gpu")]
        "gpu-msm-g2" => gpu_msm::<G2Projective>("gpu-msm-g2", k, reps, 20),
        #[cfg(feature = "gpu")]
        "gpu-msm-widths" => {
            let widths: Vec<usize> = args[3..].iter().filter_map(|c| c.parse().ok()).collect();
            let widths = if widths.is_empty() {
                vec![0, 16, 18, 20]
            } else {
                widths
            };
            gpu_msm_widths(k, reps, &widths)
        }
        #[cfg(feature = "gpu")]
        "gpu-arith" => gpu_arith(k, reps as u32),
        _ => eprintln!("{usage}"),
    }
}
