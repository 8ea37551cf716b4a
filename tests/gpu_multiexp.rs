//! The GPU G1 and G2 multiexps equal the CPU's (feature `gpu`; in CI on PoCL): random sizes, identity
//! bases, zero scalars, r - 1, skewed scalars (buckets larger than a segment), and chunks whose
//! boundaries do not divide n.
#![cfg(feature = "gpu")]

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
#[path = "circuits/mod.rs"]
mod circuits;
mod gpu_common;

use preemptible_groth16::gpu::{multiexp_split, GpuError, MultiexpKernel};
use preemptible_groth16::multiexp::{multiexp, scalar_reprs};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn kernel() -> MultiexpKernel {
    MultiexpKernel::new(&gpu_common::any_device()).expect("build the multiexp program")
}

fn inputs<G>(n: usize, seed: u64) -> (Vec<G::AffineRepr>, Vec<Scalar>)
where
    G: Curve + Group<Scalar = Scalar>,
    G::AffineRepr: Default + Copy + std::ops::Neg<Output = G::AffineRepr>,
{
    let rng = &mut ChaCha20Rng::seed_from_u64(seed);
    let mut bases: Vec<G::AffineRepr> = (0..n).map(|_| G::random(&mut *rng).to_affine()).collect();
    let mut scalars: Vec<Scalar> = (0..n).map(|_| Scalar::random(&mut *rng)).collect();
    for (i, s) in [Scalar::ZERO, Scalar::ONE, -Scalar::ONE]
        .into_iter()
        .enumerate()
    {
        if i < n {
            scalars[i] = s;
        }
    }
    for i in (3..n).step_by(5) {
        bases[i] = G::AffineRepr::default();
    }
    // A repeated base with the same scalar: equal points meet in one bucket (a doubling).
    if n > 12 {
        bases[11] = bases[10];
        scalars[11] = scalars[10];
        // And its negation: opposite points cancel.
        bases[12] = -bases[10];
        scalars[12] = scalars[10];
    }
    (bases, scalars)
}

#[test]
fn gpu_g1_multiexp_equals_cpu() {
    let k = kernel();
    for (n, seed) in [(0, 1), (1, 2), (2, 3), (13, 4), (100, 5), (1031, 6)] {
        let (bases, scalars) = inputs::<G1Projective>(n, seed);
        let reprs = scalar_reprs(&scalars);
        let cpu = multiexp::<G1Affine>(&bases, &reprs).unwrap();
        let gpu = k.multiexp_g1(&bases, &reprs).unwrap();
        assert_eq!(gpu, cpu, "n = {n}");
    }
}

/// Widths past those `Plan::new` chooses (a benchmark sets them to compare): 17 bits, whose last
/// window is short, and 20 (13 windows of 2^19 buckets). A width outside the kernels' range is
/// refused, not run.
#[test]
fn wider_windows_set_by_hand_equal_cpu() {
    let k = kernel();
    let (bases, scalars) = inputs::<G1Projective>(300, 21);
    let reprs = scalar_reprs(&scalars);
    let cpu = multiexp::<G1Affine>(&bases, &reprs).unwrap();
    k.take_peak_device_bytes();
    for c in [17, 20] {
        k.set_window_bits(Some(c)).unwrap();
        assert_eq!(k.multiexp_g1(&bases, &reprs).unwrap(), cpu, "c = {c}");
    }
    // The width was used: 13 windows of 2^19 buckets, each bucket's sum four coordinates of
    // twelve 32-bit limbs (hundreds of bytes for 300 terms at the plan's own width).
    let buckets_xyzz = (13u64 << 19) * 4 * 12 * 4;
    assert!(k.take_peak_device_bytes() >= buckets_xyzz);
    assert!(matches!(
        k.set_window_bits(Some(23)),
        Err(GpuError::InvalidInput(_))
    ));
    k.set_window_bits(None).unwrap();
    assert_eq!(k.multiexp_g1(&bases, &reprs).unwrap(), cpu);
    assert!(k.take_peak_device_bytes() < buckets_xyzz / 100);
}

#[test]
fn a_multiexp_whose_group_sums_take_two_passes_equals_cpu() {
    // From 2^16 terms (13-bit windows, 1024 groups of buckets a window) the runs of group sums
    // are added in two passes of `msm_sum_runs`.
    let k = kernel();
    let n = 1 << 16;
    let (bases, scalars) = inputs::<G1Projective>(n, 41);
    let reprs = scalar_reprs(&scalars);
    let cpu = multiexp::<G1Affine>(&bases, &reprs).unwrap();
    assert_eq!(k.multiexp_g1(&bases, &reprs).unwrap(), cpu);
}

#[test]
fn gpu_multiexp_with_skewed_scalars_equals_cpu() {
    // Buckets far larger than a segment, folded in several passes (half the scalars are 1, a
    // quarter share one value), all scalars zero (no bucket entries at all), and all scalars
    // equal.
    let k = kernel();
    let n = 20_000;
    let (bases, mut scalars) = inputs::<G1Projective>(n, 21);
    let shared = scalars[100];
    for (i, s) in scalars.iter_mut().enumerate() {
        match i % 4 {
            0 | 1 => *s = Scalar::ONE,
            2 => *s = shared,
            _ => {}
        }
    }
    let zeros = vec![Scalar::ZERO; n];
    let equal = vec![shared; n];
    for (what, scalars) in [("skewed", &scalars), ("zero", &zeros), ("equal", &equal)] {
        let reprs = scalar_reprs(scalars);
        let cpu = multiexp::<G1Affine>(&bases, &reprs).unwrap();
        let gpu = k.multiexp_g1(&bases, &reprs).unwrap();
        assert_eq!(gpu, cpu, "{what} scalars");
    }
}

#[test]
fn a_multiexp_in_many_launches_equals_cpu_and_stops_between_them() {
    // 3000 terms make about 96 000 bucket entries (8-bit windows): one launch of the bucket sums
    // by default, two dozen at 4096 entries per launch, each waited for while probing.
    let k = kernel();
    let (bases, scalars) = inputs::<G1Projective>(3000, 31);
    let reprs = scalar_reprs(&scalars);
    let cpu = multiexp::<G1Affine>(&bases, &reprs).unwrap();
    k.take_segment_launches();
    assert_eq!(k.multiexp_g1(&bases, &reprs).unwrap(), cpu);
    assert_eq!(k.take_segment_launches(), 1);
    k.limit_launch_entries(4096);
    // Every request stops the call, however little of it is left.
    k.set_finish_grace(std::time::Duration::ZERO);
    let probes = std::cell::Cell::new(0usize);
    let whole = k.multiexp_interruptible::<G1Affine>(&bases, &reprs, &|| {
        probes.set(probes.get() + 1);
        false
    });
    assert_eq!(whole.unwrap(), cpu);
    let launches = k.take_segment_launches();
    assert!((16..=32).contains(&launches), "{launches} launches");
    let total = probes.get();
    assert!(total > launches, "{total} probes for {launches} launches");
    // Interrupted at probes spread over the whole call: it stops, and holds no device memory.
    let mut stopped = 0;
    for stop_at in (1..=total).step_by((total / 10).max(1)) {
        let asked = std::cell::Cell::new(0usize);
        let result = k.multiexp_interruptible::<G1Affine>(&bases, &reprs, &|| {
            asked.set(asked.get() + 1);
            asked.get() >= stop_at
        });
        match result {
            Err(GpuError::Interrupted) => stopped += 1,
            // The waits' own probes come with time, so a run may ask fewer times than the first
            // did; the probes before each launch always come.
            Ok(sum) => assert!(asked.get() < stop_at && stop_at > launches && sum == cpu),
            Err(e) => panic!("probe {stop_at}: {e}"),
        }
        assert_eq!(k.live_device_bytes(), 0, "probe {stop_at}");
    }
    assert!(stopped >= 5, "only {stopped} of the runs were interrupted");
    k.limit_launch_entries(0);
}

#[test]
fn a_multiexp_in_pieces_equals_cpu_and_keeps_its_finished_pieces_when_stopped() {
    let k = kernel();
    let (bases, scalars) = inputs::<G1Projective>(3000, 51);
    let reprs = scalar_reprs(&scalars);
    // Pieces of different sizes (one of a single term), so their plans differ.
    let ends = [700, 701, 1900, 3000];
    let first_pieces = |done: usize| match done {
        0 => G1Projective::identity(),
        d => multiexp::<G1Affine>(&bases[..ends[d - 1]], &reprs[..ends[d - 1]]).unwrap(),
    };
    let whole = k.multiexp_in_pieces::<G1Affine>(&bases, &reprs, &ends, &|| false);
    assert!(whole.stopped.is_none(), "{:?}", whole.stopped);
    assert_eq!(whole.done, 4);
    assert_eq!(whole.sum, first_pieces(4));
    // Stopped once its first piece is summed: that piece is kept and the others are not begun.
    let before = k.pieces_summed();
    let first =
        k.multiexp_in_pieces::<G1Affine>(&bases, &reprs, &ends, &|| k.pieces_summed() > before);
    assert!(
        matches!(first.stopped, Some(GpuError::Interrupted)),
        "{:?}",
        first.stopped
    );
    assert_eq!(first.done, 1);
    assert_eq!(first.sum, first_pieces(1));
    assert_eq!(k.live_device_bytes(), 0);
    // Stopped at probes spread over the call: what it kept is always its first pieces' sum.
    let probes = std::cell::Cell::new(0usize);
    let _ = k.multiexp_in_pieces::<G1Affine>(&bases, &reprs, &ends, &|| {
        probes.set(probes.get() + 1);
        false
    });
    let total = probes.get();
    let mut kept = std::collections::BTreeSet::new();
    for stop_at in 1..=total {
        let asked = std::cell::Cell::new(0usize);
        let part = k.multiexp_in_pieces::<G1Affine>(&bases, &reprs, &ends, &|| {
            asked.set(asked.get() + 1);
            asked.get() >= stop_at
        });
        assert_eq!(part.sum, first_pieces(part.done), "probe {stop_at}");
        assert_eq!(part.stopped.is_none(), part.done == 4, "probe {stop_at}");
        assert_eq!(k.live_device_bytes(), 0, "probe {stop_at}");
        kept.insert(part.done);
    }
    assert!(kept.len() >= 4, "kept {kept:?} pieces over {total} probes");
    // Ends that do not cut the terms into pieces are refused before anything runs.
    for bad in [&[0, 3000][..], &[1000, 900, 3000], &[1000, 2000], &[]] {
        let refused = k.multiexp_in_pieces::<G1Affine>(&bases, &reprs, bad, &|| false);
        assert!(
            matches!(refused.stopped, Some(GpuError::InvalidInput(_))),
            "{bad:?}: {:?}",
            refused.stopped
        );
        assert_eq!(refused.done, 0);
    }
    // G2, in two pieces.
    let (bases, scalars) = inputs::<G2Projective>(600, 52);
    let reprs = scalar_reprs(&scalars);
    let cpu = multiexp::<G2Affine>(&bases, &reprs).unwrap();
    let g2 = k.multiexp_in_pieces::<G2Affine>(&bases, &reprs, &[250, 600], &|| false);
    assert_eq!((g2.done, g2.sum), (2, cpu));
}

#[test]
fn a_piece_nearly_done_when_a_request_comes_is_finished_not_thrown_away() {
    use std::time::Duration;
    let k = kernel();
    let (bases, scalars) = inputs::<G1Projective>(6000, 61);
    let reprs = scalar_reprs(&scalars);
    let ends = [3000, 6000];
    let first_piece = multiexp::<G1Affine>(&bases[..3000], &reprs[..3000]).unwrap();
    // Many launches a piece, so that the last ones are a small part of it.
    k.limit_launch_entries(2048);
    // Uncontested calls set the pace of the launches and of a piece's last steps (twice: a
    // first use may compile kernels in those steps); the launches of the first piece alone are
    // counted.
    for _ in 0..2 {
        let alone =
            k.multiexp_in_pieces::<G1Affine>(&bases[..3000], &reprs[..3000], &[3000], &|| false);
        assert_eq!((alone.done, alone.sum), (1, first_piece));
    }
    let launches = k.take_segment_launches() / 2;
    assert!(launches >= 16, "{launches} launches");
    // (grace, the launch during which the request comes, pieces kept): with no grace the piece
    // is thrown away; with one, a request near the end lets the piece finish, kept, and the
    // call stops before the next; a request early in the piece, when more is left than was
    // done, stops it however long the grace.
    let hour = Duration::from_secs(3600);
    for (grace, asked_at, kept) in [
        (Duration::ZERO, launches - 1, 0),
        (hour, launches - 1, 1),
        (hour, 1, 0),
    ] {
        k.set_finish_grace(grace);
        let finished = k.pieces_finished_on_request();
        k.take_segment_launches();
        let part = k.multiexp_in_pieces::<G1Affine>(&bases, &reprs, &ends, &|| {
            k.segment_launches() >= asked_at
        });
        let case = format!("grace {grace:?}, asked at launch {asked_at} of {launches}");
        assert!(
            matches!(part.stopped, Some(GpuError::Interrupted)),
            "{case}: {:?}",
            part.stopped
        );
        assert_eq!(part.done, kept, "{case}");
        assert_eq!(part.finished_on_request, kept, "{case}");
        assert_eq!(k.pieces_finished_on_request() - finished, kept, "{case}");
        if kept == 1 {
            assert_eq!(part.sum, first_piece);
            assert_eq!(k.take_segment_launches(), launches);
        }
        assert_eq!(k.live_device_bytes(), 0, "{case}");
    }
    // A request withdrawn after it let a piece finish (its prover was killed, say): the call
    // goes on and does every piece, the later ones' inputs uploaded as usual.
    k.set_finish_grace(hour);
    k.take_segment_launches();
    let three = [3000, 4500, 6000];
    let all = k.multiexp_in_pieces::<G1Affine>(&bases, &reprs, &three, &|| {
        k.segment_launches() == launches - 1
    });
    assert!(all.stopped.is_none(), "{:?}", all.stopped);
    assert_eq!((all.done, all.finished_on_request), (3, 1));
    assert_eq!(all.sum, multiexp::<G1Affine>(&bases, &reprs).unwrap());
    k.set_finish_grace(Duration::from_millis(10));
    k.limit_launch_entries(0);
}

#[test]
fn a_failed_upload_of_the_bases_is_a_device_error_and_frees_everything() {
    let k = kernel();
    let (bases, scalars) = inputs::<G1Projective>(3000, 43);
    let reprs = scalar_reprs(&scalars);
    k.inject_bases_upload_failures(true);
    let result = k.multiexp_interruptible::<G1Affine>(&bases, &reprs, &|| false);
    // The call reports the device error (which sends the work to the CPU and marks the device
    // failed), not an interruption (which would hand the device to a higher priority and come
    // back to it).
    match result {
        Err(GpuError::Ocl(message)) => assert!(message.contains("bases"), "{message}"),
        other => panic!("expected the upload's error, got {other:?}"),
    }
    assert_eq!(k.live_device_bytes(), 0);
    // So it does when a higher priority asks while the scalars are sorted, the failed upload
    // beside them, in a call of two pieces. The request comes once the call holds device memory
    // (its scalars), when its first piece's uploads have begun: a request before any upload is
    // an interruption and nothing else.
    for stop_at in 1..=4 {
        let asked = std::cell::Cell::new(0usize);
        let part = k.multiexp_in_pieces::<G1Affine>(&bases, &reprs, &[1500, 3000], &|| {
            if k.live_device_bytes() > 0 {
                asked.set(asked.get() + 1);
            }
            asked.get() >= stop_at
        });
        match &part.stopped {
            Some(GpuError::Ocl(message)) => assert!(message.contains("bases"), "{message}"),
            other => panic!("probe {stop_at}: expected the upload's error, got {other:?}"),
        }
        assert_eq!(part.done, 0);
        assert_eq!(k.live_device_bytes(), 0);
    }
    k.inject_bases_upload_failures(false);
    let cpu = multiexp::<G1Affine>(&bases, &reprs).unwrap();
    assert_eq!(k.multiexp_g1(&bases, &reprs).unwrap(), cpu);
}

#[test]
fn gpu_chunks_sum_to_the_whole() {
    let k = kernel();
    let (bases, scalars) = inputs::<G1Projective>(700, 9);
    let reprs = scalar_reprs(&scalars);
    let whole = multiexp(&bases, &reprs).unwrap();
    let mut sum = G1Projective::identity();
    // Chunks of 301 (not a divisor of 700), alternating between the GPU and the CPU.
    for (i, start) in (0..700).step_by(301).enumerate() {
        let end = (start + 301).min(700);
        sum += if i % 2 == 0 {
            k.multiexp_g1(&bases[start..end], &reprs[start..end])
                .unwrap()
        } else {
            multiexp(&bases[start..end], &reprs[start..end]).unwrap()
        };
    }
    assert_eq!(sum, whole);
    assert!(k.multiexp_g1(&bases[..3], &reprs[..2]).is_err());
}

#[test]
fn gpu_g2_multiexp_equals_cpu() {
    let k = kernel();
    for (n, seed) in [(0, 11), (1, 12), (13, 13), (150, 14)] {
        let (bases, scalars) = inputs::<G2Projective>(n, seed);
        let reprs = scalar_reprs(&scalars);
        let cpu = multiexp::<G2Affine>(&bases, &reprs).unwrap();
        let gpu = k.multiexp_g2(&bases, &reprs).unwrap();
        assert_eq!(gpu, cpu, "n = {n}");
    }
}

#[test]
fn split_across_devices_equals_cpu_and_survives_a_failed_device() {
    // Two kernels on one device stand for two devices: the split, the threads and the sum are
    // the same code.
    let (a, b) = (kernel(), kernel());
    let (bases, scalars) = inputs::<G1Projective>(1001, 21);
    let reprs = scalar_reprs(&scalars);
    let whole = multiexp(&bases, &reprs).unwrap();

    let (sum, parts) = multiexp_split(&[&a, &b], &bases, &reprs).unwrap();
    assert_eq!(sum, whole);
    assert_eq!(parts.len(), 2);
    assert_eq!(parts[0].terms.start, 0);
    assert_eq!(
        parts[0].terms.end, parts[1].terms.start,
        "parts are contiguous"
    );
    assert_eq!(parts[1].terms.end, 1001, "parts cover every term");
    assert!(
        parts[0].terms.len() > 400 && parts[1].terms.len() > 400,
        "equal devices, equal parts"
    );
    assert!(parts.iter().all(|p| p.on_gpu));

    b.inject_failures(true);
    let (sum, parts) = multiexp_split(&[&a, &b], &bases, &reprs).unwrap();
    assert_eq!(sum, whole, "the failed part was computed on the CPU");
    assert_eq!(
        parts.iter().map(|p| p.on_gpu).collect::<Vec<_>>(),
        [true, false]
    );

    let (g2_bases, g2_scalars) = inputs::<G2Projective>(77, 22);
    let g2_reprs = scalar_reprs(&g2_scalars);
    let (sum, _) = multiexp_split(&[&a, &b], &g2_bases, &g2_reprs).unwrap();
    assert_eq!(sum, multiexp(&g2_bases, &g2_reprs).unwrap());
    assert!(multiexp_split::<G1Affine>(&[], &bases, &reprs).is_err());
    assert!(multiexp_split(&[&a], &bases[..3], &reprs[..2]).is_err());
}

/// Bases mapped from a parameter file go up as their encodings and are decoded on the device
/// (`cl/decode.cl`): the sums equal the CPU's over the points blst decodes, in G1 and G2, and a
/// point blst refuses is refused on the device too, the error naming it; the identity's encoding
/// is the identity.
#[test]
fn mapped_bases_are_decoded_on_the_device_as_blst_decodes_them() {
    use group::UncompressedEncoding;
    use preemptible_groth16::groth16::{
        generate_random_parameters, MappedParameters, ParameterSource,
    };
    let k = kernel();
    let params = generate_random_parameters(
        circuits::Squares::log2(9),
        &mut ChaCha20Rng::seed_from_u64(21),
    )
    .unwrap();
    let mut file = Vec::new();
    params.write(&mut file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    // The file with `point`'s encoding (found in it: each point is there once) replaced by `with`.
    let mapped_with = |point: &[u8], with: &[u8]| {
        let mut bytes = file.clone();
        let at = bytes
            .windows(point.len())
            .position(|w| w == point)
            .expect("the point's encoding is in the file");
        bytes[at..at + with.len()].copy_from_slice(with);
        let path = dir.path().join("params");
        std::fs::write(&path, &bytes).unwrap();
        MappedParameters::open(&path, false).unwrap()
    };
    // The device's answer over the mapped H (G1) or B (G2) query, pieces of 100 terms, and the
    // CPU's over blst's decoding of the same bytes (`None` where blst refuses a point).
    fn check<G>(
        k: &MultiexpKernel,
        mapped: preemptible_groth16::groth16::Bases<'_, G>,
        decoded: Option<Vec<G>>,
        bad: usize,
        name: &str,
        case: &str,
    ) where
        G: preemptible_groth16::gpu::GpuCurve,
    {
        let n = mapped.len();
        let scalars: Vec<Scalar> = (0..n as u64).map(|i| Scalar::from(i * i + 7)).collect();
        let reprs = scalar_reprs(&scalars);
        let ends: Vec<usize> = (1..=n.div_ceil(100)).map(|i| (i * 100).min(n)).collect();
        let sums = k.multiexp_in_pieces(mapped, &reprs, &ends, &|| false);
        let uploaded = sums.bases_uploaded;
        match (decoded, sums.into_result()) {
            (Some(points), Ok(sum)) => {
                assert_eq!(sum, multiexp(&points, &reprs).unwrap(), "{case}");
                // Each encoding went up once, as many bytes as the point.
                let size = std::mem::size_of::<G>() as u64;
                assert_eq!(uploaded, n as u64 * size, "{case}");
            }
            (None, Err(GpuError::InvalidBases(message))) => {
                assert!(
                    message.contains(&format!("{name}[{bad}]")),
                    "{case}: {message}"
                )
            }
            (decoded, gpu) => panic!(
                "{case}: blst decodes: {}, the device: {gpu:?}",
                decoded.is_some()
            ),
        }
    }
    // blst's decoding of every point of the mapped query.
    fn decode_all<G: UncompressedEncoding + Clone>(
        query: &[G],
        i: usize,
        with: &[u8],
    ) -> Option<Vec<G>> {
        let mut points = query.to_vec();
        let mut repr = G::Uncompressed::default();
        repr.as_mut().copy_from_slice(with);
        points[i] = Option::from(G::from_uncompressed_unchecked(&repr))?;
        Some(points)
    }
    let p = hex_to_be48(preemptible_groth16::gpu::source::FQ_MODULUS);

    let h = params.h().as_slice().unwrap().to_vec();
    let b = params.b_g2().as_slice().unwrap().to_vec();
    let (i, j) = (h.len() / 2 + 3, b.len() / 3 + 1);
    let (h_i, b_j) = (h[i].to_uncompressed(), b[j].to_uncompressed());
    let (h_i, b_j): (&[u8], &[u8]) = (h_i.as_ref(), b_j.as_ref());

    // Cases: (name, G1 encoding, G2 encoding).
    let mut cases: Vec<(&str, Vec<u8>, Vec<u8>)> = vec![
        ("unchanged", h_i.to_vec(), b_j.to_vec()),
        ("the identity", infinity(96), infinity(192)),
    ];
    let flip_last = |e: &[u8]| {
        let mut e = e.to_vec();
        *e.last_mut().unwrap() ^= 1;
        e
    };
    cases.push(("y changed: off the curve", flip_last(h_i), flip_last(b_j)));
    let with_x = |e: &[u8], x: &[u8]| {
        let mut e = e.to_vec();
        e[..48].copy_from_slice(x);
        e
    };
    cases.push(("x = P", with_x(h_i, &p), with_x(b_j, &p)));
    let flags = |e: &[u8], f: u8| {
        let mut e = e.to_vec();
        e[0] |= f;
        e
    };
    cases.push(("sort flag", flags(h_i, 0x20), flags(b_j, 0x20)));
    cases.push((
        "infinity flag on a point",
        flags(h_i, 0x40),
        flags(b_j, 0x40),
    ));
    let mut not_zero = infinity(96);
    not_zero[70] = 1;
    let mut not_zero2 = infinity(192);
    not_zero2[150] = 1;
    cases.push(("infinity with a bit set", not_zero, not_zero2));
    // (0, 2) lies on y^2 = x^3 + 4, outside the group; blst refuses x = 0.
    let mut zero_two = vec![0u8; 96];
    zero_two[95] = 2;
    cases.push(("x = 0, y = 2", zero_two, flip_last(b_j)));

    for (case, g1, g2) in &cases {
        let mapped = mapped_with(h_i, g1);
        check(&k, mapped.h(), decode_all(&h, i, g1), i, "h", case);
        let mapped = mapped_with(b_j, g2);
        check(&k, mapped.b_g2(), decode_all(&b, j, g2), j, "b_g2", case);
    }
    // A compressed encoding is refused on the device (blst would read a point from its first
    // half).
    let compressed = flags(h_i, 0x80);
    let mapped = mapped_with(h_i, &compressed);
    check(&k, mapped.h(), None, i, "h", "compressed flag");

    // The file cut short under the mapping, at h[i]: the device's uploads read the file rather
    // than the mapping, so the call fails naming the points it could not read (no SIGBUS).
    let mapped = mapped_with(h_i, h_i);
    let at = file.windows(96).position(|w| w == h_i).unwrap();
    std::fs::OpenOptions::new()
        .write(true)
        .open(dir.path().join("params"))
        .unwrap()
        .set_len(at as u64)
        .unwrap();
    let n = h.len();
    let reprs = scalar_reprs(&vec![Scalar::ONE; n]);
    let sums = k.multiexp_in_pieces(mapped.h(), &reprs, &[n / 2, n], &|| false);
    match sums.stopped {
        Some(GpuError::InvalidBases(message)) => {
            assert!(message.contains("could not be read"), "{message}");
            assert!(message.contains("h["), "{message}");
        }
        other => panic!("a cut file: {other:?}"),
    }
}

/// The identity's uncompressed encoding: the infinity flag, every other bit 0.
fn infinity(len: usize) -> Vec<u8> {
    let mut e = vec![0u8; len];
    e[0] = 0x40;
    e
}

/// A 381-bit hex number as 48 big-endian bytes.
fn hex_to_be48(hex: &str) -> Vec<u8> {
    let hex = format!("{hex:0>96}");
    (0..48)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

/// Bases kept on the device for a query are copied there by later calls, not uploaded again, and
/// the sums stay the CPU's: in memory (G1) and from a mapped file (G2, decoded on the device
/// once), for the whole query and for a run inside it; nothing is kept over the budget; freed,
/// they take no device memory and go up again.
#[test]
fn bases_kept_on_the_device_are_copied_not_uploaded() {
    use preemptible_groth16::gpu::{KeepOnDevice, QueryKey};
    use preemptible_groth16::groth16::{
        generate_random_parameters, MappedParameters, ParameterSource,
    };
    fn twice<G: preemptible_groth16::gpu::GpuCurve>(
        k: &MultiexpKernel,
        query: preemptible_groth16::groth16::Bases<'_, G>,
        points: &[G],
        address: usize,
    ) {
        let n = query.len();
        let scalars: Vec<Scalar> = (0..n as u64).map(|i| Scalar::from(3 * i + 1)).collect();
        let reprs = scalar_reprs(&scalars);
        let key = QueryKey {
            group: G::NAME,
            address,
            len: n,
        };
        let keep = |offset, budget| KeepOnDevice {
            query: key,
            offset,
            budget,
        };
        let size = std::mem::size_of::<G>() as u64;
        let ends: Vec<usize> = (1..=n.div_ceil(100)).map(|i| (i * 100).min(n)).collect();
        let want = multiexp(points, &reprs).unwrap();
        let call =
            |budget| k.multiexp_keeping_bases(query, &reprs, &ends, &|| false, keep(0, budget));
        // Over the budget: nothing kept, every call uploads.
        for _ in 0..2 {
            let sums = call(size * n as u64 - 1);
            assert_eq!(sums.bases_uploaded, n as u64 * size, "{}", G::NAME);
            assert_eq!(sums.into_result().unwrap(), want, "{}", G::NAME);
            assert_eq!(k.live_device_bytes(), 0, "{}: nothing kept", G::NAME);
        }
        // Kept: the first call uploads, the next copies.
        let first = call(u64::MAX);
        assert_eq!(first.bases_uploaded, n as u64 * size, "{}", G::NAME);
        assert_eq!(first.into_result().unwrap(), want, "{}", G::NAME);
        assert!(k.live_device_bytes() >= n as u64 * 2 * G::COORD_LIMBS as u64 * 4);
        let again = call(u64::MAX);
        assert_eq!(
            again.bases_uploaded,
            0,
            "{}: kept bases uploaded again",
            G::NAME
        );
        assert_eq!(again.into_result().unwrap(), want, "{}", G::NAME);
        // A run inside the query, its pieces not at the first call's boundaries.
        let (start, end) = (n / 3, n - 7);
        let run = k.multiexp_keeping_bases(
            query.range(start..end),
            &reprs[start..end],
            &[(end - start) / 2, end - start],
            &|| false,
            keep(start, u64::MAX),
        );
        assert_eq!(run.bases_uploaded, 0, "{}", G::NAME);
        assert_eq!(
            run.into_result().unwrap(),
            multiexp(&points[start..end], &reprs[start..end]).unwrap(),
            "{}",
            G::NAME
        );
        // Freed: no device memory left, and the bases go up again.
        k.free_kept_bases();
        assert_eq!(k.live_device_bytes(), 0, "{}", G::NAME);
        let after = call(u64::MAX);
        assert_eq!(after.bases_uploaded, n as u64 * size, "{}", G::NAME);
        assert_eq!(after.into_result().unwrap(), want, "{}", G::NAME);
        k.free_kept_bases();
        // A run that is not inside the query it names is refused.
        let outside = k.multiexp_keeping_bases(query, &reprs, &ends, &|| false, keep(1, u64::MAX));
        assert!(matches!(outside.stopped, Some(GpuError::InvalidInput(_))));
    }
    let k = kernel();
    let params = generate_random_parameters(
        circuits::Squares::log2(9),
        &mut ChaCha20Rng::seed_from_u64(22),
    )
    .unwrap();
    let l = params.l().as_slice().unwrap().to_vec();
    twice::<G1Affine>(&k, (&l).into(), &l, l.as_ptr() as usize);
    let mut file = Vec::new();
    params.write(&mut file).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("params");
    std::fs::write(&path, &file).unwrap();
    let mapped = MappedParameters::open(&path, false).unwrap();
    let b = params.b_g2().as_slice().unwrap().to_vec();
    // Any address names the query here; the scheduler uses where its points lie.
    twice::<G2Affine>(&k, mapped.b_g2(), &b, 0x1000);
}
