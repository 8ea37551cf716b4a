//! G1 and G2 multiexp on one OpenCL device, over any slice of terms, so that a scheduler can hand the
//! device chunks of a larger multiexp (the CPU's [`crate::multiexp::multiexp_chunk`] is the
//! other worker).
//!
//! The terms are sorted into buckets on the device and each bucket is summed by work-items of
//! bounded, equal work (the steps are described at the top of `cl/multiexp.cl`); the window width
//! is chosen per call from the number of terms ([`Plan`]). Bases cross as blst's Montgomery limbs,
//! which are the device's own form; the few result points come back the same way, in Jacobian
//! coordinates, and the host weighs and adds them.
//!
//! One concern a file: how points cross (`curve.rs`) and how a call is cut up (`plan.rs`); a call
//! in pieces (`pieces.rs`); one piece's sums (`sums.rs`) after its sort (`sort.rs`), with the
//! folds of its long buckets (`fold.rs`), the rule for finishing it on request (`finish.rs`) and
//! the host's share (`host_sum.rs`); how kernels are launched (`launch.rs`); the bases a device
//! keeps between the calls of a batch (`resident.rs`); and a call split across devices
//! (`split.rs`).

use super::buffer::DeviceMemory;
use super::device::Device;
use super::error::GpuError;
use super::program::{build, BuiltProgram};
use super::source;
use crate::bases::Bases;
use crate::config::Config;
use crate::multiexp::ScalarRepr;
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

mod curve;
mod finish;
mod fold;
mod host_sum;
mod launch;
mod pieces;
mod plan;
mod resident;
mod sort;
mod split;
mod sums;
pub use curve::{AnyBases, AnySums, GpuCurve};
use finish::Pace;
pub use finish::FINISH_GRACE_ENV;
pub(crate) use finish::{finish_grace, worth_finishing};
pub use pieces::{piece_ends, piece_ranges, PieceSums};
pub use plan::Plan;
pub(crate) use resident::ResidentBases;
pub use resident::{KeepOnDevice, QueryKey};
pub use split::{multiexp_split, SplitPart};

/// Terms of the warm-up multiexp ([`MultiexpKernel::warm_up`]): a 9-bit window, whose weighing
/// sums runs of groups, and with every term equal, buckets long enough to be folded in passes, so
/// that every kernel a call can use is launched.
const WARM_UP_TERMS: usize = 4096;

/// The multiexp kernels for one device; each group's program is built at its first use (and then
/// comes from the caches).
#[derive(Debug)]
pub struct MultiexpKernel {
    device: Device,
    /// Test hook: fail every multiexp as a lost device would.
    fail: AtomicBool,
    /// Test hook: fail the upload of the bases (on the transfer queue's thread).
    fail_bases_upload: AtomicBool,
    /// Test hook: bucket entries per `msm_segments` launch (0: the group's `LAUNCH_ENTRIES`).
    launch_entries: AtomicUsize,
    /// Measurement hook: the window width of every later piece (0: the plan's choice).
    window_bits: AtomicUsize,
    /// Launches of `msm_segments` so far (read by tests).
    segment_launches: AtomicUsize,
    /// Pieces of calls summed so far (read by tests).
    pieces_summed: AtomicUsize,
    /// Pieces finished after a request came ([`finish`]), so far.
    pieces_finished_on_request: AtomicUsize,
    /// How long a request waits at most for a piece to be finished, in microseconds (0: never).
    finish_grace_us: AtomicU64,
    /// The last bounded piece's pace for each group and window width, for the next piece's
    /// [`SumsClock`](finish::SumsClock).
    paces: Mutex<HashMap<(&'static str, usize), Pace>>,
    /// This kernel's device buffers.
    memory: DeviceMemory,
    /// Bases kept on the device between calls, for the claim that holds it (empty otherwise).
    resident: Mutex<ResidentBases<ocl::Buffer<u32>>>,
}

impl MultiexpKernel {
    /// The multiexp kernels for `device`: builds (or takes from the caches) the G1 and G2
    /// programs, side by side, so that a device that cannot build them fails here and the first
    /// multiexp does not wait for a compiler.
    pub fn new(device: &Device) -> Result<Self, GpuError> {
        let kernel = MultiexpKernel {
            device: device.clone(),
            fail: AtomicBool::new(false),
            fail_bases_upload: AtomicBool::new(false),
            launch_entries: AtomicUsize::new(0),
            window_bits: AtomicUsize::new(0),
            segment_launches: AtomicUsize::new(0),
            pieces_summed: AtomicUsize::new(0),
            pieces_finished_on_request: AtomicUsize::new(0),
            finish_grace_us: AtomicU64::new(finish_grace(&Config::from_env()).as_micros() as u64),
            paces: Mutex::new(HashMap::new()),
            memory: DeviceMemory::default(),
            resident: Mutex::new(ResidentBases::default()),
        };
        std::thread::scope(|scope| {
            let g2 = scope.spawn(|| kernel.program("G2"));
            kernel.program("G1")?;
            g2.join()
                .map_err(|_| GpuError::Ocl("the G2 build thread panicked".into()))?
        })?;
        Ok(kernel)
    }

    /// Device memory a multiexp of `n` terms in the group of `G` needs at its peak, about: the
    /// bases, scalars and bucket entries, the bucket sums and the segments' two parts each, in
    /// xyzz and then in Jacobian coordinates (seven coordinates a point, counted together).
    pub fn device_bytes<G: GpuCurve>(n: usize) -> u64 {
        let plan = Plan::new(n);
        let point = 4 * 7 * G::COORD_LIMBS as u64;
        let entries = n * plan.windows;
        // Fewer entries (zero digits) can halve the segment length: twice the segments, at most.
        let segment = Plan::segment(entries, G::LAUNCH_ENTRIES, G::LAUNCH_SEGMENTS);
        let segments = 2 * entries.div_ceil(segment) as u64;
        let n = n as u64;
        n * (4 * 2 * G::COORD_LIMBS as u64 + 32 + 4 * plan.windows as u64)
            + plan.bucket_count() as u64 * (point + 8)
            + segments * 2 * point
    }

    /// Device memory of the inputs of `n` terms (bases and scalars): what the next piece of a
    /// call in pieces holds beside the one being summed.
    pub fn input_bytes<G: GpuCurve>(n: usize) -> u64 {
        n as u64 * (4 * 2 * G::COORD_LIMBS as u64 + 32)
    }

    /// Bytes of device memory held by multiexps running on this kernel now, and by the bases it
    /// keeps (0 between calls that keep none: every call frees its buffers before it returns).
    pub fn live_device_bytes(&self) -> u64 {
        self.memory.live()
    }

    /// Frees the bases kept on the device ([`MultiexpKernel::multiexp_keeping_bases`]): done
    /// before the device is released, and whenever the bases' owner may let them go. Returns
    /// the bytes they took.
    pub fn free_kept_bases(&self) -> u64 {
        let bytes = self
            .resident
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .clear();
        self.memory.sub(bytes);
        bytes
    }

    /// The most device memory this kernel's multiexps held at once since the last call.
    pub fn take_peak_device_bytes(&self) -> u64 {
        self.memory.take_peak()
    }

    /// The device these kernels run on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Makes every later multiexp on this kernel fail with a device error (or stop failing), to
    /// test the callers' CPU fallback.
    #[doc(hidden)]
    pub fn inject_failures(&self, on: bool) {
        self.fail.store(on, Ordering::Relaxed);
    }

    /// Makes the upload of the bases of every later multiexp on this kernel fail as a lost
    /// device would (or stop failing), while the scalars and their sort go on the other queue:
    /// to test that the call ends with that error, not as an interruption, and frees everything.
    #[doc(hidden)]
    pub fn inject_bases_upload_failures(&self, on: bool) {
        self.fail_bases_upload.store(on, Ordering::Relaxed);
    }

    /// Sums at most `entries` bucket entries per launch (0: the default), so that a test on a
    /// small multiexp crosses many launches.
    #[doc(hidden)]
    pub fn limit_launch_entries(&self, entries: usize) {
        self.launch_entries.store(entries, Ordering::Relaxed);
    }

    /// Sums every later piece with `c`-bit windows (`None`: the width [`Plan::new`] chooses from
    /// the piece's terms), for benchmarks that compare widths. A width outside
    /// [`Plan::WIDTHS`] is refused; device memory is budgeted for the plan's own width, so this is
    /// for calls made on the kernel directly, not through the scheduler.
    #[doc(hidden)]
    pub fn set_window_bits(&self, c: Option<usize>) -> Result<(), GpuError> {
        if let Some(c) = c.filter(|c| !Plan::WIDTHS.contains(c)) {
            return Err(GpuError::InvalidInput(format!(
                "a {c}-bit window is outside {:?}",
                Plan::WIDTHS
            )));
        }
        self.window_bits.store(c.unwrap_or(0), Ordering::Relaxed);
        Ok(())
    }

    /// Launches of the bucket sums since the last call (for tests of the launch limit).
    #[doc(hidden)]
    pub fn take_segment_launches(&self) -> usize {
        self.segment_launches.swap(0, Ordering::Relaxed)
    }

    /// Pieces of calls this kernel has summed since it was made (for tests that stop a call in
    /// pieces after its first).
    #[doc(hidden)]
    pub fn pieces_summed(&self) -> usize {
        self.pieces_summed.load(Ordering::Relaxed)
    }

    /// Pieces finished after a request came, because little of them was left, since this kernel
    /// was made (for tests).
    #[doc(hidden)]
    pub fn pieces_finished_on_request(&self) -> usize {
        self.pieces_finished_on_request.load(Ordering::Relaxed)
    }

    /// Launches of the bucket sums since the last [`MultiexpKernel::take_segment_launches`],
    /// leaving the count as it is (for tests that stop a call at a given launch).
    #[doc(hidden)]
    pub fn segment_launches(&self) -> usize {
        self.segment_launches.load(Ordering::Relaxed)
    }

    /// How long a request may wait for a piece whose sums are under way to be finished rather
    /// than thrown away (zero: never finished; the default is 10 ms): tests that count where a
    /// call stops set zero, or an hour to see a piece finished.
    #[doc(hidden)]
    pub fn set_finish_grace(&self, grace: Duration) {
        let us = u64::try_from(grace.as_micros()).unwrap_or(u64::MAX);
        self.finish_grace_us.store(us, Ordering::Relaxed);
    }

    fn program(&self, group: &str) -> Result<Arc<BuiltProgram>, GpuError> {
        build(&self.device, &source::multiexp_source(group), "")
    }

    /// `sum_i scalars[i] * bases[i]` in G1.
    pub fn multiexp_g1(
        &self,
        bases: &[G1Affine],
        scalars: &[ScalarRepr],
    ) -> Result<G1Projective, GpuError> {
        self.multiexp(bases, scalars)
    }

    /// One small multiexp in each group, checked: the driver loads a kernel at its first launch
    /// and the first transfer maps the pinned staging memory (a new process's first G1 and G2
    /// calls take 100-140 ms on the H200; docs/BENCHMARKS.md). Run while a first proof's witness is
    /// synthesized, that is off the proof's path. It runs outside the lock protocol, as creating
    /// the context does: a few MiB of device memory for a few milliseconds.
    pub fn warm_up(&self) -> Result<(), GpuError> {
        fn group<G: GpuCurve>(kernel: &MultiexpKernel) -> Result<(), GpuError> {
            let s = Scalar::from(0x9e37_79b9_7f4a_7c15u64).square();
            let bases = vec![G::generator(); WARM_UP_TERMS];
            let scalars = vec![ScalarRepr::from(&s); WARM_UP_TERMS];
            let got = kernel.multiexp(&bases, &scalars)?;
            if got == G::generator() * (s * Scalar::from(WARM_UP_TERMS as u64)) {
                Ok(())
            } else {
                Err(GpuError::WrongResult(format!(
                    "the {} warm-up multiexp differs from the CPU's",
                    G::NAME
                )))
            }
        }
        group::<G1Affine>(self)?;
        group::<G2Affine>(self)
    }

    /// `sum_i scalars[i] * bases[i]` in G2.
    pub fn multiexp_g2(
        &self,
        bases: &[G2Affine],
        scalars: &[ScalarRepr],
    ) -> Result<G2Projective, GpuError> {
        self.multiexp(bases, scalars)
    }

    /// `sum_i scalars[i] * bases[i]` in the group of `G`.
    pub fn multiexp<G: GpuCurve>(
        &self,
        bases: &[G],
        scalars: &[ScalarRepr],
    ) -> Result<G::Curve, GpuError> {
        // Nothing to interrupt: each piece's bucket sums go in one launch, with segments as long
        // as fill the device (at 2^24 G1 terms in one call, segments of 512 rather than 64: 430
        // ms against 480 ms of sums). In pieces, as a scheduled call: the next piece's inputs go
        // up while the device sums the current one (2^24 G1 terms in 0.192 s against 0.212 s in
        // one call). Both on the H200 (docs/BENCHMARKS.md).
        let ends = piece_ends(bases.len(), G::PIECE_TERMS);
        self.run(Bases::from(bases), scalars, &ends, &|| false, false, None)
            .into_result()
    }

    /// [`MultiexpKernel::multiexp`] that asks `interrupt` before each kernel launch and about
    /// every millisecond while it waits for a transfer, the count and its sums, or a launch of
    /// the bucket sums; when it
    /// says yes, lets the kernels already enqueued finish, frees its buffers and returns
    /// [`GpuError::Interrupted`]. The last steps (folds and weighing, a few milliseconds) are not
    /// interrupted: their call is nearly done, and its work would be lost. Nor, for the same
    /// reason, is a piece whose sums are so far along that what is left of it is, by an estimate,
    /// at most the grace (10 ms by default) and less than what it has done (see `finish.rs`).
    pub fn multiexp_interruptible<G: GpuCurve>(
        &self,
        bases: &[G],
        scalars: &[ScalarRepr],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<G::Curve, GpuError> {
        self.run(
            Bases::from(bases),
            scalars,
            &[bases.len()],
            interrupt,
            true,
            None,
        )
        .into_result()
    }

    /// [`MultiexpKernel::multiexp_interruptible`] over consecutive pieces of the terms, the
    /// pieces ending at `ends` (increasing, the last the number of terms), one after another,
    /// each summed and brought back whole: a call stopped by `interrupt` (or a failure) keeps
    /// the pieces it finished, and only the piece in progress is lost. The next pieces' scalars
    /// and bases go up on the transfer queue while the device sums the current one (at most two
    /// pieces' inputs on the device at once), so a piece costs little more than its share of one
    /// long call. Bases mapped from a parameter file go up as their encodings and are decoded
    /// on the device; one that is not a point on the curve stops the call with
    /// [`GpuError::InvalidBases`].
    pub fn multiexp_in_pieces<'b, G: GpuCurve>(
        &self,
        bases: impl Into<Bases<'b, G>>,
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
    ) -> PieceSums<G::Curve> {
        self.run(bases.into(), scalars, ends, interrupt, true, None)
    }

    /// [`MultiexpKernel::multiexp_in_pieces`] over the bases from `keep.offset` on of the query
    /// `keep.query`, keeping each piece's bases on the device once they are there (within
    /// `keep.budget` bytes for all queries), so that a later call over the same bases copies
    /// them on the device instead of uploading (and decoding) them again. The caller guarantees
    /// that the query's points stay where they are, unchanged, until it calls
    /// [`MultiexpKernel::free_kept_bases`]; `bases_uploaded` in the result counts only the bases
    /// that went up from the host.
    pub fn multiexp_keeping_bases<'b, G: GpuCurve>(
        &self,
        bases: impl Into<Bases<'b, G>>,
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        keep: KeepOnDevice,
    ) -> PieceSums<G::Curve> {
        let bases = bases.into();
        if keep.query.group != G::NAME || keep.offset + bases.len() > keep.query.len {
            return PieceSums::refused(GpuError::InvalidInput(format!(
                "{} {} bases from {} are not in a {} query of {}",
                bases.len(),
                G::NAME,
                keep.offset,
                keep.query.group,
                keep.query.len
            )));
        }
        self.run(bases, scalars, ends, interrupt, true, Some(keep))
    }

    /// The calls above: `bounded` cuts the bucket sums into launches of `LAUNCH_ENTRIES`.
    fn run<G: GpuCurve>(
        &self,
        bases: Bases<'_, G>,
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        bounded: bool,
        keep: Option<KeepOnDevice>,
    ) -> PieceSums<G::Curve> {
        let stopped = PieceSums::refused;
        let n = bases.len();
        if n != scalars.len() {
            return stopped(GpuError::InvalidInput(format!(
                "{n} bases but {} scalars",
                scalars.len()
            )));
        }
        if self.fail.load(Ordering::Relaxed) {
            return stopped(GpuError::Ocl(format!(
                "injected failure on {}",
                self.device.name
            )));
        }
        if n == 0 {
            return PieceSums::nothing();
        }
        if piece_ranges(ends).any(|r| r.is_empty() || r.len() > u32::MAX as usize / 8) {
            return stopped(GpuError::InvalidInput(format!(
                "pieces ending at {ends:?} do not cut {n} terms into launches"
            )));
        }
        if ends.last() != Some(&n) {
            return stopped(GpuError::InvalidInput(format!(
                "pieces ending at {ends:?} do not cover {n} terms"
            )));
        }
        let built = match self.program(G::NAME) {
            Ok(built) => built,
            Err(e) => return stopped(e),
        };
        let result = self.sum_pieces(&built, bases, scalars, ends, interrupt, bounded, keep);
        // After an error, what is enqueued still runs: the device is not handed on busy.
        if result.stopped.is_some() {
            let _ = built.queue.finish();
            let _ = built.transfer_queue.finish();
        }
        result
    }
}
