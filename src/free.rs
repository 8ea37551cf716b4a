//! Freeing large vectors off the prover's path, without stalling the rest of the process.
//!
//! Dropping a vector of hundreds of MiB hands its pages back to the system: tens of milliseconds
//! for the 512 MiB vectors of a 2^24 quotient (H200 host), so the prover drops
//! them on a thread of its own ([`free_in_background`]). That alone is not enough on Linux: the
//! `munmap` of a large allocation keeps the process's address space locked while it frees the
//! pages, and every thread that starts a thread (or maps memory) meanwhile waits. Freeing a 2 GiB
//! vector held a thread start in another thread for 125 ms (4 GiB: 313 ms; 2-core development
//! machine, Linux 6.18), and on the H200 host a 2^24 low prover went 115 ms without a probe of
//! its device while its H multiexp's worker waited to start behind the free of the quotient's
//! vectors: a higher priority's request would have waited as long (docs/BENCHMARKS.md).
//!
//! So, with the `gpu` feature on Linux, a large vector's pages are first handed back in pieces
//! of [`PIECE`] with `madvise(MADV_DONTNEED)`, which leaves the address space unlocked between
//! pieces, and the emptied allocation is then freed quickly: in the measurement above a thread
//! start then waited at most 0.4 ms (2 GiB) and 1.6 ms (4 GiB).

/// Buffers at least this large are handed back in pieces first.
#[cfg(all(feature = "gpu", target_os = "linux"))]
const LARGE: usize = 32 << 20;

/// The bytes handed back by one `madvise`.
#[cfg(all(feature = "gpu", target_os = "linux"))]
const PIECE: usize = 16 << 20;

/// A value owning large buffers of plain data, which it can hand back to the system before it
/// is dropped ([`free_in_background`]).
pub(crate) trait LargeBuffers: Send + 'static {
    /// Hands the memory of the value's large buffers back to the system and empties them; the
    /// value is dropped next.
    fn release(&mut self);
}

impl<T: Copy + Send + 'static> LargeBuffers for Vec<T> {
    fn release(&mut self) {
        // Nothing reads the values again (and, being `Copy`, no destructor does either).
        self.clear();
        #[cfg(all(feature = "gpu", target_os = "linux"))]
        release_pages(
            self.as_mut_ptr().cast(),
            self.capacity() * std::mem::size_of::<T>(),
        );
    }
}

impl<A: LargeBuffers, B: LargeBuffers> LargeBuffers for (A, B) {
    fn release(&mut self) {
        self.0.release();
        self.1.release();
    }
}

impl<A: LargeBuffers, B: LargeBuffers, C: LargeBuffers> LargeBuffers for (A, B, C) {
    fn release(&mut self) {
        self.0.release();
        self.1.release();
        self.2.release();
    }
}

/// Drops `value` on a thread of its own, its large buffers handed back in pieces first (see the
/// module's notes). If no thread can be started, the value is dropped here.
pub(crate) fn free_in_background<T: LargeBuffers>(value: T) {
    // On failure `spawn` drops the closure, and the value with it, on this thread.
    let _ = std::thread::Builder::new()
        .name("free".into())
        .spawn(move || {
            let mut value = value;
            value.release();
            drop(value);
        });
}

/// Hands back the whole pages of `bytes` bytes from `start`, a buffer this process owns and whose
/// contents nobody reads again, in pieces of [`PIECE`]. Smaller buffers are left to `free`.
#[cfg(all(feature = "gpu", target_os = "linux"))]
#[allow(unsafe_code)]
fn release_pages(start: *mut u8, bytes: usize) {
    if bytes < LARGE {
        return;
    }
    // SAFETY: `sysconf` only reads a constant of the system.
    let page = match unsafe { libc::sysconf(libc::_SC_PAGESIZE) } {
        // A piece must be whole pages, or `madvise` would round it past `end`.
        p if p > 0 && PIECE % p as usize == 0 => p as usize,
        _ => return,
    };
    let first = (start as usize).div_ceil(page) * page;
    let end = (start as usize + bytes) / page * page;
    let mut at = first;
    while at < end {
        let len = PIECE.min(end - at);
        // SAFETY: `at..at + len` is whole pages inside the caller's own allocation (rounded inwards,
        // so the allocator's bookkeeping around it is untouched), of private anonymous memory
        // whose values are not read again: `MADV_DONTNEED` drops the pages, and a later access
        // (the allocator writing its own fields when the buffer is freed) finds fresh zeroed
        // pages, not freed memory. A refusal leaves the pages to `free`.
        if unsafe { libc::madvise(at as *mut libc::c_void, len, libc::MADV_DONTNEED) } != 0 {
            return;
        }
        at += len;
    }
}

#[cfg(all(test, feature = "gpu", target_os = "linux"))]
mod tests {
    use super::{free_in_background, LargeBuffers};

    /// The pages inside a released vector's allocation are handed back (no longer resident, as
    /// `mincore` says), and the emptied allocation still serves as an ordinary one.
    #[test]
    #[allow(unsafe_code)]
    fn a_released_vector_hands_its_pages_back() {
        let resident_pages = |v: &Vec<u64>| -> usize {
            let page = 4096;
            let start = (v.as_ptr() as usize).div_ceil(page) * page;
            let end = (v.as_ptr() as usize + v.capacity() * 8) / page * page;
            let mut flags = vec![0u8; (end - start) / page];
            // SAFETY: `mincore` reads the residency of whole pages of this vector's own
            // allocation into `flags`, one byte per page.
            let ok = unsafe {
                libc::mincore(start as *mut libc::c_void, end - start, flags.as_mut_ptr())
            };
            assert_eq!(ok, 0, "mincore failed");
            flags.iter().filter(|f| **f & 1 == 1).count()
        };
        let mut big = vec![7u64; 48 << 17]; // 48 MiB, every page written
        let before = resident_pages(&big);
        assert!(before > 10_000, "{before} pages resident before");
        big.release();
        assert_eq!(resident_pages(&big), 0);
        // The emptied allocation is reused like any other.
        big.extend(std::iter::repeat_n(3u64, 1 << 20));
        assert!(big.iter().all(|&x| x == 3));
        free_in_background((big, vec![1u32; 1000]));
    }

    /// The point of the pieces: a thread started while a large vector is freed does not wait for
    /// the whole free (with a plain drop it waited about as long as the free took). Tried up to
    /// three times: on a loaded machine (the other tests of this binary run beside it) a thread
    /// start can wait for a core longer than the free takes (122 ms against a 63 ms free on the
    /// 2-core development machine once), while a start held by the free waits every time.
    #[test]
    fn a_large_free_does_not_hold_up_thread_starts() {
        use std::time::{Duration, Instant};
        let mut tries = Vec::new();
        for _ in 0..3 {
            let values = vec![1u64; 64 << 20]; // 512 MiB, every page written
            let freeing = std::thread::spawn(move || {
                let began = Instant::now();
                let mut values = values;
                values.release();
                drop(values);
                began.elapsed()
            });
            let mut worst = Duration::ZERO;
            while !freeing.is_finished() {
                let began = Instant::now();
                std::thread::spawn(|| {}).join().unwrap();
                worst = worst.max(began.elapsed());
            }
            let took = freeing.join().unwrap();
            // Too quick a free says nothing either way.
            if took < Duration::from_millis(10) || worst < took / 2 {
                return;
            }
            tries.push((worst, took));
        }
        panic!("a thread start waited most of the free each time (worst wait, free): {tries:?}");
    }
}
