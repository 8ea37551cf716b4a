//! Criterion benchmarks of the building blocks and of whole proofs, at sizes that run in minutes
//! on a small machine. For the comparison with the peer, see `scripts/bench-vs-peer.sh`.

#[path = "../tests/circuits/mod.rs"]
mod circuits;

use blstrs::{G1Projective, G2Projective, Scalar};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use ff::Field;
use group::{prime::PrimeCurveAffine, Curve, Group};
use preemptible_groth16::domain::EvaluationDomain;
use preemptible_groth16::groth16::{create_random_proof, generate_random_parameters};
use preemptible_groth16::multiexp::{multiexp, scalar_reprs};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;

fn random_bases<G: PrimeCurveAffine>(n: usize, rng: &mut ChaCha8Rng) -> Vec<G>
where
    G::Curve: Curve<AffineRepr = G>,
{
    let g = G::Curve::generator();
    let mut p = G::Curve::random(&mut *rng);
    (0..n)
        .map(|_| {
            p += g;
            p.to_affine()
        })
        .collect()
}

fn bench_multiexp(c: &mut Criterion) {
    let rng = &mut ChaCha8Rng::seed_from_u64(1);
    let mut group = c.benchmark_group("multiexp");
    group.sample_size(10);
    for k in [12, 14, 16] {
        let n = 1 << k;
        let scalars = scalar_reprs(
            &(0..n)
                .map(|_| Scalar::random(&mut *rng))
                .collect::<Vec<_>>(),
        );
        let g1 = random_bases::<blstrs::G1Affine>(n, rng);
        group.bench_with_input(BenchmarkId::new("g1", k), &k, |b, _| {
            b.iter(|| multiexp(&g1, &scalars).map(|p: G1Projective| p.is_identity()))
        });
        let g2 = random_bases::<blstrs::G2Affine>(n, rng);
        group.bench_with_input(BenchmarkId::new("g2", k), &k, |b, _| {
            b.iter(|| multiexp(&g2, &scalars).map(|p: G2Projective| p.is_identity()))
        });
    }
    group.finish();
}

fn bench_fft(c: &mut Criterion) {
    let rng = &mut ChaCha8Rng::seed_from_u64(2);
    let mut group = c.benchmark_group("fft");
    group.sample_size(10);
    for k in [12, 16, 18] {
        let coeffs: Vec<Scalar> = (0..1 << k).map(|_| Scalar::random(&mut *rng)).collect();
        let mut d = EvaluationDomain::from_coeffs(coeffs).expect("domain");
        group.bench_with_input(BenchmarkId::new("fft", k), &k, |b, _| b.iter(|| d.fft()));
        group.bench_with_input(BenchmarkId::new("coset_fft", k), &k, |b, _| {
            b.iter(|| d.coset_fft())
        });
    }
    group.finish();
}

fn bench_prove(c: &mut Criterion) {
    let rng = &mut ChaCha8Rng::seed_from_u64(3);
    let mut group = c.benchmark_group("prove");
    group.sample_size(10);
    for k in [10, 14] {
        let circuit = circuits::Squares::log2(k);
        let params = generate_random_parameters(circuit, rng).expect("setup");
        group.bench_with_input(BenchmarkId::new("squares", k), &k, |b, _| {
            b.iter(|| create_random_proof(circuit, &params, &mut *rng).expect("prove"))
        });
    }
    group.finish();
}

criterion_group!(benches, bench_multiexp, bench_fft, bench_prove);
criterion_main!(benches);
