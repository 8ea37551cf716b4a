//! Field arithmetic on the OpenCL device equals blstrs (feature `gpu`; in CI on PoCL).
#![cfg(feature = "gpu")]

use blstrs::{G1Projective, Scalar};
use ff::Field;
use group::{Curve, Group};
mod gpu_common;

use gpu_common::any_device;
use preemptible_groth16::gpu::{program, source};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;

fn limbs(bytes_le: &[u8]) -> Vec<u32> {
    bytes_le
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect()
}

/// Runs `<field>_test_ops` on `a`, `b` (canonical limbs, `limbs` per value) and returns the six
/// results per pair.
fn run_ops(field: &str, limbs_per: usize, a: &[u32], b: &[u32]) -> Vec<u32> {
    let dev = any_device();
    let built = program::build(&dev, &source::field_test_source(), "").expect("build");
    let n = a.len() / limbs_per;
    let q = &built.queue;
    let buf = |data: &[u32]| {
        ocl::Buffer::<u32>::builder()
            .queue(q.clone())
            .len(data.len())
            .copy_host_slice(data)
            .build()
            .expect("buffer")
    };
    let (ba, bb) = (buf(a), buf(b));
    let out = ocl::Buffer::<u32>::builder()
        .queue(q.clone())
        .len(6 * a.len())
        .build()
        .expect("buffer");
    let kernel = ocl::Kernel::builder()
        .program(&built.program)
        .name(format!("{field}_test_ops"))
        .queue(q.clone())
        .global_work_size(n)
        .arg(&ba)
        .arg(&bb)
        .arg(&out)
        .arg(n as u32)
        .build()
        .expect("kernel");
    // SAFETY: the kernel reads n values from `ba` and `bb` and writes 6 n to `out`, all sized
    // for that above; the arguments match its signature.
    unsafe { kernel.enq().expect("launch") };
    let mut result = vec![0u32; 6 * a.len()];
    out.read(&mut result).enq().expect("read");
    result
}

/// Runs the device's ops on `xs`, `ys` plus the edge pairs (0, 1), (1, -1), (-1, -1), (-1, 0),
/// and compares every result with the host's arithmetic. `to_le` gives canonical bytes.
fn check_field<F: Field>(
    name: &str,
    limbs_per: usize,
    mut xs: Vec<F>,
    mut ys: Vec<F>,
    to_le: impl Fn(&F) -> Vec<u8>,
) {
    let (zero, one) = (F::ZERO, F::ONE);
    xs.extend([zero, one, -one, -one]);
    ys.extend([one, -one, -one, zero]);
    let a: Vec<u32> = xs.iter().flat_map(|x| limbs(&to_le(x))).collect();
    let b: Vec<u32> = ys.iter().flat_map(|y| limbs(&to_le(y))).collect();
    let out = run_ops(name, limbs_per, &a, &b);
    for (i, (x, y)) in xs.iter().zip(&ys).enumerate() {
        let expected = [*x + y, *x - y, *x * y, x.square(), x.double(), -*x];
        for (k, e) in expected.iter().enumerate() {
            let got = &out[(6 * i + k) * limbs_per..(6 * i + k + 1) * limbs_per];
            assert_eq!(got, &limbs(&to_le(e))[..], "{name} op {k} on pair {i}");
        }
    }
}

#[test]
fn fr_ops_equal_blstrs() {
    let rng = &mut ChaCha20Rng::seed_from_u64(31);
    let xs = (0..60).map(|_| Scalar::random(&mut *rng)).collect();
    let ys = (0..60).map(|_| Scalar::random(&mut *rng)).collect();
    check_field("Fr", 8, xs, ys, |v: &Scalar| v.to_bytes_le().to_vec());
}

#[test]
fn fq_ops_equal_blstrs() {
    // blstrs does not export its base field type; values come from point coordinates.
    let rng = &mut ChaCha20Rng::seed_from_u64(32);
    let (mut xs, mut ys) = (Vec::new(), Vec::new());
    for _ in 0..60 {
        let p = G1Projective::random(&mut *rng).to_affine();
        xs.push(p.x());
        ys.push(p.y());
    }
    check_field("Fq", 12, xs, ys, |v| v.to_bytes_le().to_vec());
}
