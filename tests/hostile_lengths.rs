//! Hostile length fields: a parameter file whose length field claims 2^32, 2^30 or 2^20 points
//! fails at the end of the bytes present, and reading it never holds much memory; nor does a
//! circuit shape file whose counts claim 2^31 variables, read and then refused by a proof. The
//! memory is measured, not assumed: this test binary's global allocator counts the bytes live and
//! their peak (its own binary, so the counting touches no other test), and the one test here
//! checks first that the count sees an allocation of the size a length field would drive.

mod circuits;

use circuits::Squares;
use ff::Field;
use preemptible_groth16::groth16::{
    create_proof, generate_random_parameters, CircuitShape, Parameters, PreparedParameters,
    ReadError,
};
use preemptible_groth16::{Scalar, SynthesisError};
use rand::SeedableRng;
use rand_chacha::ChaCha20Rng;
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// The most a read of a small file with a hostile length may hold at once. The reader works in
/// blocks of at most `READ_BLOCK` points (1.5 MiB of G1, 3 MiB of G2 points) that grow with the
/// bytes present, so a few MiB at most; a buffer sized from the smallest claim here (2^20 G1
/// points, 96 MiB) is twelve times this bound.
const PEAK_BOUND: usize = 8 << 20;

/// The claimed lengths: `u32::MAX` (the largest a field can say), 2^30 and 2^20 points.
const CLAIMS: [u32; 3] = [u32::MAX, 1 << 30, 1 << 20];

/// `System`, counting the bytes live and the peak since the last [`Peak::start`].
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

fn grew(bytes: usize) {
    let live = LIVE.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(live, Ordering::Relaxed);
}

fn shrank(bytes: usize) {
    LIVE.fetch_sub(bytes, Ordering::Relaxed);
}

// SAFETY: every call is passed to `System` unchanged, with the same layouts and pointers; the
// counting only touches atomics and never allocates.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            grew(new_size);
            shrank(layout.size());
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// Measures the peak of bytes live above those live at its start.
struct Peak {
    base: usize,
}

impl Peak {
    fn start() -> Peak {
        let base = LIVE.load(Ordering::Relaxed);
        PEAK.store(base, Ordering::Relaxed);
        Peak { base }
    }

    fn bytes(&self) -> usize {
        PEAK.load(Ordering::Relaxed).saturating_sub(self.base)
    }
}

/// Offsets of the length fields of a parameter file (after the verifying key's fixed points,
/// then each query's), with the size of one point there.
fn length_fields(params: &Parameters) -> Vec<(usize, usize)> {
    let mut at = 96 * 3 + 192 * 3;
    let mut fields = Vec::new();
    for (len, size) in [
        (params.vk.ic.len(), 96),
        (params.h.len(), 96),
        (params.l.len(), 96),
        (params.a.len(), 96),
        (params.b_g1.len(), 96),
        (params.b_g2.len(), 192),
    ] {
        fields.push((at, size));
        at += 4 + len * size;
    }
    fields
}

/// One test, so that nothing else in this binary allocates while it measures.
#[test]
fn hostile_length_fields_fail_without_huge_allocation() {
    let rng = &mut ChaCha20Rng::seed_from_u64(11);
    let params = generate_random_parameters(Squares { n: 5 }, rng).unwrap();
    let mut bytes = Vec::new();
    params.write(&mut bytes).unwrap();

    // The measurement can fail: a buffer sized from the smallest claim goes over the bound.
    let peak = Peak::start();
    let sized_from_claim: Vec<u8> = Vec::with_capacity(CLAIMS[2] as usize * 96);
    std::hint::black_box(&sized_from_claim);
    drop(sized_from_claim);
    assert!(
        peak.bytes() >= 8 * PEAK_BOUND,
        "the counting allocator missed a {} MiB buffer (saw {} bytes)",
        (CLAIMS[2] as usize * 96) >> 20,
        peak.bytes()
    );

    let mut worst = 0;
    for (offset, size) in length_fields(&params) {
        for claimed in CLAIMS {
            assert!(claimed as usize * size >= 8 * PEAK_BOUND);
            let mut bad = bytes.clone();
            bad[offset..offset + 4].copy_from_slice(&claimed.to_be_bytes());
            for checked in [false, true] {
                let peak = Peak::start();
                let err = Parameters::read(&bad[..], checked).unwrap_err();
                let held = peak.bytes();
                assert!(
                    matches!(
                        err,
                        ReadError::Truncated { .. }
                            | ReadError::InvalidPoint { .. }
                            | ReadError::NonCanonicalPoint { .. }
                            | ReadError::Malformed(_)
                    ),
                    "offset {offset}, {claimed} points: {err:?}"
                );
                assert!(
                    held < PEAK_BOUND,
                    "offset {offset}, {claimed} points claimed: {held} bytes held at the peak"
                );
                worst = worst.max(held);
            }
        }
    }
    eprintln!(
        "hostile lengths: at most {worst} bytes held at once reading a {}-byte file (bound {PEAK_BOUND})",
        bytes.len()
    );

    // A circuit shape file whose counts claim 2^31 inputs and 2^31 - 1 auxiliary variables and
    // whose matrices are empty: read as a shape (counts are checked against parameters when a
    // proof uses it), holding no memory sized by those counts; against the parameters of another
    // size it is an error before any witness is made.
    let mut shape = b"PG16SHP1".to_vec();
    shape.extend_from_slice(&(1u64 << 31).to_be_bytes());
    shape.extend_from_slice(&((1u64 << 31) - 1).to_be_bytes());
    shape.extend_from_slice(&0u32.to_be_bytes());
    for _ in 0..3 {
        shape.extend_from_slice(&[0u8; 16]);
    }
    let peak = Peak::start();
    let read = CircuitShape::read(&shape[..]).unwrap();
    assert_eq!(
        (read.num_inputs(), read.num_aux()),
        (1 << 31, (1 << 31) - 1)
    );
    let prepared = PreparedParameters::new(&params, read);
    let err = create_proof(Squares { n: 5 }, &prepared, Scalar::ONE, Scalar::ONE).unwrap_err();
    assert!(
        matches!(err, SynthesisError::IncompatibleLengthVector(ref m) if m.contains("shape")),
        "{err}"
    );
    let held = peak.bytes();
    assert!(
        held < PEAK_BOUND,
        "a hostile shape file: {held} bytes held at the peak"
    );
}
