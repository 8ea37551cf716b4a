//! Hostile length fields: a parameter file whose length field claims 2^32, 2^30 or 2^20 points
//! fails at the end of the bytes present, and reading it never holds much memory. The memory is
//! measured, not assumed: this test binary's global allocator counts the bytes live and their
//! peak (its own binary, so the counting touches no other test), and the one test here checks
//! first that the count sees an allocation of the size a length field would drive.

mod circuits;

use circuits::Squares;
use preemptible_groth16::groth16::{generate_random_parameters, Parameters, ReadError};
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
}
