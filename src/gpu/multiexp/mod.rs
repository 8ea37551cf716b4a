//! G1 and G2 multiexp on one OpenCL device, over any slice of terms, so that a scheduler can hand the
//! device chunks of a larger multiexp (the CPU's [`crate::multiexp::multiexp_chunk`] is the
//! other worker).
//!
//! The terms are sorted into buckets on the device and each bucket is summed by work-items of
//! bounded, equal work (the steps are described at the top of `cl/multiexp.cl`); the window width
//! is chosen per call from the number of terms ([`Plan`]). Bases cross as blst's Montgomery limbs,
//! which are the device's own form; the few result points come back the same way, in Jacobian
//! coordinates, and the host weighs and adds them.

use super::buffer::{
    below, receive_interruptible, settled, wait_interruptible, write_limbs, DeviceMemory,
    PhaseTimer, TrackedBuffer,
};
use super::device::Device;
use super::error::GpuError;
use super::program::{build, BuiltProgram};
use super::source;
use crate::multiexp::{CurveAffine, ScalarRepr};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
use ff::Field;
use group::Group;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

mod finish;
mod fold;
mod pieces;
pub use finish::FINISH_GRACE_ENV;
pub(crate) use finish::{finish_grace, worth_finishing};
use finish::{Pace, SumsClock};
use fold::{fold_levels, long_bucket_capacity, FoldLevel, LongBucket, DIRECT_CROSSINGS};
pub use pieces::{piece_ends, piece_ranges, PieceSums};

/// Limbs of an `Fq` element.
const FQ_LIMBS: usize = 12;

/// A group the multiexp kernels handle: how its affine points cross to and from the device.
pub trait GpuCurve: CurveAffine {
    /// Prefix of the group's kernels (`G1`, `G2`).
    const NAME: &'static str;
    /// 32-bit limbs of one coordinate (12 in `Fq`, 24 in `Fq2`).
    const COORD_LIMBS: usize;
    /// Bucket entries one launch of `msm_segments` sums: about 8 ms on the H200 (2^23 G1 entries
    /// took 4.3 ms and 2^21 G2 entries 3.7 ms there in the seventeenth session, at segments of 64
    /// and 32 entries; 15 ms each in the fifth). The launches of a call are waited for one by one,
    /// probing, so a higher priority waits for at most one of them (or, near the end of a piece,
    /// for what is left of it by an estimate, up to a grace of 10 ms by default, which would be
    /// thrown away otherwise). Longer launches allow longer segments
    /// (`LAUNCH_SEGMENTS` work-items a launch), and a segment of 64 G1 entries summed about 8%
    /// slower than one of 512, with more parts to fold.
    const LAUNCH_ENTRIES: usize;
    /// Work-items one launch of `msm_segments` aims at (segments of 16 to 512 entries): enough
    /// to fill the device, while each added segment costs two more parts to fold. A G2 work-item
    /// holds twice the registers of a G1 one, so fewer fill the device.
    const LAUNCH_SEGMENTS: usize;
    /// Terms of one piece of a call ([`MultiexpKernel::multiexp_in_pieces`]): about 40-50 ms
    /// of device work on the H200, so that a preempted call loses about half that on average,
    /// and large enough that the window stays at 16 bits and a piece's fixed steps (the count's
    /// round trip, the folds and the weighing) are a small part of it.
    const PIECE_TERMS: usize;
    /// Writes the `2 * COORD_LIMBS` 32-bit limbs of `x` then `y` in Montgomery form (R = 2^384,
    /// blst's form and the device's), zeros for the identity, straight into `out` (the staging
    /// memory: no intermediate vector, as this runs for every base of every call).
    fn write_coords(&self, out: &mut [u32]);
    /// The projective point from the device's Jacobian `x`, `y` and `z` in Montgomery form (R =
    /// 2^384, blst's own), each below P (the caller checks); `z = 0` is the identity. A point
    /// off the curve (a faulty device) is an error.
    fn from_jacobian(limbs: &[u32]) -> Result<Self::Curve, GpuError>;
}

/// Reads `FQ_LIMBS` little-endian 32-bit limbs into blst's six 64-bit ones.
fn read_fq(limbs: &[u32], out: &mut blst::blst_fp) {
    for (l, pair) in out.l.iter_mut().zip(limbs.chunks_exact(2)) {
        *l = pair[0] as u64 | (pair[1] as u64) << 32;
    }
}

fn checked<P: Group>(point: P, on_curve: bool) -> Result<P, GpuError> {
    if on_curve {
        Ok(point)
    } else {
        Err(not_on_curve())
    }
}

fn not_on_curve() -> GpuError {
    GpuError::WrongResult("a point that is not on the curve".into())
}

impl GpuCurve for G1Affine {
    const NAME: &'static str = "G1";
    const COORD_LIMBS: usize = FQ_LIMBS;
    const LAUNCH_ENTRIES: usize = 1 << 24;
    const LAUNCH_SEGMENTS: usize = 1 << 17;
    const PIECE_TERMS: usize = 1 << 22;

    fn write_coords(&self, out: &mut [u32]) {
        let raw: &blst::blst_p1_affine = self.as_ref();
        let (x, y) = out.split_at_mut(FQ_LIMBS);
        write_limbs(&raw.x.l, x);
        write_limbs(&raw.y.l, y);
    }

    fn from_jacobian(limbs: &[u32]) -> Result<G1Projective, GpuError> {
        let mut point = G1Projective::identity();
        let raw: &mut blst::blst_p1 = point.as_mut();
        for (i, fp) in [&mut raw.x, &mut raw.y, &mut raw.z].into_iter().enumerate() {
            read_fq(&limbs[i * FQ_LIMBS..(i + 1) * FQ_LIMBS], fp);
        }
        let on_curve = bool::from(point.is_on_curve());
        checked(point, on_curve)
    }
}

impl GpuCurve for G2Affine {
    const NAME: &'static str = "G2";
    const COORD_LIMBS: usize = 2 * FQ_LIMBS;
    const LAUNCH_ENTRIES: usize = 1 << 22;
    const LAUNCH_SEGMENTS: usize = 1 << 16;
    const PIECE_TERMS: usize = 1 << 21;

    fn write_coords(&self, out: &mut [u32]) {
        let raw: &blst::blst_p2_affine = self.as_ref();
        for (fp, part) in raw
            .x
            .fp
            .iter()
            .chain(&raw.y.fp)
            .zip(out.chunks_exact_mut(FQ_LIMBS))
        {
            write_limbs(&fp.l, part);
        }
    }

    fn from_jacobian(limbs: &[u32]) -> Result<G2Projective, GpuError> {
        let mut point = G2Projective::identity();
        let raw: &mut blst::blst_p2 = point.as_mut();
        // Each Fq2 coordinate is c0 then c1, on the device as in blst.
        let fps = [&mut raw.x, &mut raw.y, &mut raw.z]
            .into_iter()
            .flat_map(|c| c.fp.iter_mut());
        for (fp, part) in fps.zip(limbs.chunks_exact(FQ_LIMBS)) {
            read_fq(part, fp);
        }
        let on_curve = bool::from(point.is_on_curve());
        checked(point, on_curve)
    }
}

/// How one multiexp is cut up on the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Plan {
    /// Window width in bits; digits are signed, so a window has `2^(c-1)` buckets.
    pub c: usize,
    /// Windows covering the 256 bits of a scalar.
    pub windows: usize,
    /// Buckets weighed by one work-item of the reduction.
    pub group_len: usize,
    /// Group results added by one work-item before they go to the host.
    pub run: usize,
}

/// Most terms a segment work-item sums.
const MAX_SEGMENT: usize = 512;
/// Work-items the bucket weighing aims at: a weighing work-item's additions are one serial chain
/// (two per bucket of its group, then its group's offset times their total by doubling), so the
/// groups of buckets shrink until about this many work-items share the device: 16 buckets a group
/// with 16-bit windows.
const TARGET_GROUPS: usize = 1 << 15;
/// Most group results one work-item of `msm_sum_runs` adds in a pass.
const SUM_PASS: usize = 16;
/// Work-items per work-group for every multiexp kernel. Left to the driver, the group size must
/// divide the global size, and an awkward count of segments (a prime, say) got groups of one
/// work-item; the kernels bounds-check their index, so the global size is rounded up instead.
const WORK_GROUP: usize = 64;

/// Buckets per block of the device's prefix sums (`SCAN_BLOCK` in `cl/multiexp.cl`).
const SCAN_BLOCK: usize = 64;

/// Work-items of the scan of the blocks' sums (`SCAN_ITEMS` in `cl/multiexp.cl`): one work-group,
/// launched as `WORK_GROUP` items, which must be the same.
const SCAN_ITEMS: usize = 64;
const _: () = assert!(SCAN_ITEMS == WORK_GROUP);

impl Plan {
    /// The plan for `n` terms: the window width that minimises bucket additions (`n` per window)
    /// plus bucket weighing (about three additions per bucket), between 4 and 16 bits.
    pub fn new(n: usize) -> Plan {
        let cost = |c: usize| 256usize.div_ceil(c) * (n + (3 << (c - 1)));
        let c = (4..=16).fold(4, |best, c| if cost(c) < cost(best) { c } else { best });
        let buckets = 1usize << (c - 1);
        let windows = 256usize.div_ceil(c);
        // A power of two between 4 and 32, and no more than the buckets of a window.
        let group_len = (windows * buckets / TARGET_GROUPS)
            .next_power_of_two()
            .clamp(4, 32)
            .min(buckets);
        let groups = buckets / group_len;
        Plan {
            c,
            windows,
            group_len,
            run: (groups / 32).max(1),
        }
    }

    /// Buckets of one window.
    pub fn buckets(&self) -> usize {
        1 << (self.c - 1)
    }

    /// Buckets of all windows.
    pub fn bucket_count(&self) -> usize {
        self.windows * self.buckets()
    }

    /// Reduction work-items: groups of buckets in all windows.
    fn group_count(&self) -> usize {
        self.bucket_count() / self.group_len
    }

    /// Points that come back per window.
    fn outputs_per_window(&self) -> usize {
        self.buckets() / self.group_len / self.run
    }

    /// Segment length for `total` bucket entries summed `per_launch` at a time, aiming at
    /// `items` segments per launch.
    fn segment(total: usize, per_launch: usize, items: usize) -> usize {
        (total.min(per_launch) / items)
            .next_power_of_two()
            .clamp(16, MAX_SEGMENT)
    }
}

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
    /// Launches of `msm_segments` so far (read by tests).
    segment_launches: AtomicUsize,
    /// Pieces of calls summed so far (read by tests).
    pieces_summed: AtomicUsize,
    /// Pieces finished after a request came ([`finish`]), so far.
    pieces_finished_on_request: AtomicUsize,
    /// How long a request waits at most for a piece to be finished, in microseconds (0: never).
    finish_grace_us: AtomicU64,
    /// The last bounded piece's pace for each group and window width, for the next piece's
    /// [`SumsClock`].
    paces: Mutex<HashMap<(&'static str, usize), Pace>>,
    /// This kernel's device buffers.
    memory: DeviceMemory,
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
            segment_launches: AtomicUsize::new(0),
            pieces_summed: AtomicUsize::new(0),
            pieces_finished_on_request: AtomicUsize::new(0),
            finish_grace_us: AtomicU64::new(finish_grace().as_micros() as u64),
            paces: Mutex::new(HashMap::new()),
            memory: DeviceMemory::default(),
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

    /// Bytes of device memory held by multiexps running on this kernel now (0 between calls:
    /// every call frees its buffers before it returns).
    pub fn live_device_bytes(&self) -> u64 {
        self.memory.live()
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
    /// calls took 100-140 ms on the H200, sixth session). Run while a first proof's witness is
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
        // ms against 480 ms of sums on the H200, sixth session). In pieces, as a scheduled call:
        // the next piece's inputs go up while the device sums the current one (2^24 G1 terms
        // in 0.192 s against 0.212 s in one call, twelfth session).
        let ends = piece_ends(bases.len(), G::PIECE_TERMS);
        self.run(bases, scalars, &ends, &|| false, false)
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
        self.run(bases, scalars, &[bases.len()], interrupt, true)
            .into_result()
    }

    /// [`MultiexpKernel::multiexp_interruptible`] over consecutive pieces of the terms, the
    /// pieces ending at `ends` (increasing, the last the number of terms), one after another,
    /// each summed and brought back whole: a call stopped by `interrupt` (or a failure) keeps
    /// the pieces it finished, and only the piece in progress is lost. The next pieces' scalars
    /// and bases go up on the transfer queue while the device sums the current one (at most two
    /// pieces' inputs on the device at once), so a piece costs little more than its share of one
    /// long call.
    pub fn multiexp_in_pieces<G: GpuCurve>(
        &self,
        bases: &[G],
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
    ) -> PieceSums<G::Curve> {
        self.run(bases, scalars, ends, interrupt, true)
    }

    /// The calls above: `bounded` cuts the bucket sums into launches of `LAUNCH_ENTRIES`.
    fn run<G: GpuCurve>(
        &self,
        bases: &[G],
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        bounded: bool,
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
        let result = self.sum_pieces(&built, bases, scalars, ends, interrupt, bounded);
        // After an error, what is enqueued still runs: the device is not handed on busy.
        if result.stopped.is_some() {
            let _ = built.queue.finish();
            let _ = built.transfer_queue.finish();
        }
        result
    }

    /// One piece of `sum_pieces`, of `n` terms (1 to `u32::MAX / 8`): its scalars and bases come
    /// from the upload thread, in that order.
    fn sum_piece<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        n: usize,
        scalars_in: &std::sync::mpsc::Receiver<Result<TrackedBuffer<'_>, GpuError>>,
        bases_in: &std::sync::mpsc::Receiver<Result<TrackedBuffer<'_>, GpuError>>,
        interrupt: &dyn Fn() -> bool,
        bounded: bool,
    ) -> Result<(G::Curve, bool), GpuError> {
        let started = Instant::now();
        let point_limbs = 3 * G::COORD_LIMBS;
        let plan = Plan::new(n);
        // The device sums the bucket counts in 32-bit words; this many entries could not wrap.
        if n as u64 * plan.windows as u64 >= 1 << 32 {
            return Err(GpuError::InvalidInput(format!(
                "{n} terms make too many bucket entries for one launch"
            )));
        }
        let bucket_count = plan.bucket_count();
        let mut phases = PhaseTimer::start();
        let q = built.queue.clone();
        let memory = &self.memory;
        let kernel = |name: &str, items: usize| kernel_builder::<G>(built, name, items);
        phases.mark(&q, "program")?;
        // The sort needs only the scalars; the bases, three quarters of a G1 piece's bytes, are
        // still going up meanwhile, and are waited for before the bucket sums, the first kernel
        // to read them.
        let scalars_buf = receive_interruptible(scalars_in, interrupt)?;
        phases.mark(&q, "scalars")?;
        let sorted = self.sort_on_device::<G>(
            built,
            &scalars_buf,
            n,
            &plan,
            bounded,
            &mut phases,
            interrupt,
        )?;
        drop(scalars_buf);
        // Received even when there is nothing to sum, so that the next piece's inputs come next.
        let bases_buf = receive_interruptible(bases_in, interrupt)?;
        phases.mark(&q, "bases")?;
        let Some(sorted) = sorted else {
            return Ok((G::Curve::identity(), false));
        };
        let (entries, offsets_buf) = (sorted.entries, sorted.offsets_buf);
        let (total, segment) = (sorted.total, sorted.segment);

        // 3. Sum the buckets in segments of equal length, then fold the parts of the buckets that
        //    cross segments.
        let segments = total.div_ceil(segment);
        // The segments' sums in xyzz coordinates (four per point), converted to Jacobian ones
        // (three) after the launches, for the folds and the weighing.
        let xyzz_limbs = 4 * G::COORD_LIMBS;
        let bucket_xyzz = TrackedBuffer::new(&q, bucket_count * xyzz_limbs, None, memory)?;
        let parts_xyzz = TrackedBuffer::new(&q, 2 * segments * xyzz_limbs, None, memory)?;
        // In launches of about `LAUNCH_ENTRIES` entries, each waited for (probing) before the
        // next: a whole 2^20-term G2 call's sums are one long kernel a request would wait out.
        // A request that comes when little of the piece is left lets it finish (`finish`).
        let per_launch = (sorted.launch_entries / segment).max(1);
        let grace = Duration::from_micros(self.finish_grace_us.load(Ordering::Relaxed));
        let pace = self.pace_of(G::NAME, plan.c);
        let clock = std::cell::RefCell::new(SumsClock::new(started, total, pace, grace));
        let ask = || {
            let finishing = clock.borrow().finishing();
            !finishing && interrupt() && !clock.borrow_mut().finish()
        };
        for first in (0..segments).step_by(per_launch) {
            let end = first.saturating_add(per_launch).min(segments);
            interrupted(&q, &ask)?;
            clock
                .borrow_mut()
                .launched((end * segment).min(total) - first * segment);
            self.segment_launches.fetch_add(1, Ordering::Relaxed);
            let done = enqueue(
                &kernel("msm_segments", end - first)
                    .arg(&*bases_buf)
                    .arg(&*entries)
                    .arg(&*offsets_buf)
                    .arg(&*bucket_xyzz)
                    .arg(&*parts_xyzz)
                    .arg(total as u32)
                    .arg(segment as u32)
                    .arg(bucket_count as u32)
                    .arg(first as u32)
                    .arg(end as u32)
                    .build()?,
            )?;
            settled(&q, wait_interruptible(&q, &done, &ask))?;
            clock.borrow_mut().landed();
        }
        let mut clock = clock.into_inner();
        clock.summed();
        drop((bases_buf, entries));
        let bucket_sums = TrackedBuffer::new(&q, bucket_count * point_limbs, None, memory)?;
        let parts = TrackedBuffer::new(&q, 2 * segments * point_limbs, None, memory)?;
        for (from, to, count) in [
            (&bucket_xyzz, &bucket_sums, bucket_count),
            (&parts_xyzz, &parts, 2 * segments),
        ] {
            launch(
                &kernel("msm_from_xyzz", count)
                    .arg(&**from)
                    .arg(&**to)
                    .arg(count as u32)
                    .build()?,
            )?;
        }
        drop((bucket_xyzz, parts_xyzz));
        // From here on nothing is interrupted: the folds and the weighing take a few milliseconds
        // (about 5 at 2^20 G1 terms on the H200), the call is nearly done, and an interrupted
        // call's device work is lost. The worker yields when the call returns.
        launch(
            &kernel("msm_fold_direct", bucket_count)
                .arg(&*parts)
                .arg(&*offsets_buf)
                .arg(&*bucket_sums)
                .arg(bucket_count as u32)
                .arg(segment.trailing_zeros())
                .arg(DIRECT_CROSSINGS as u32)
                .build()?,
        )?;
        drop(offsets_buf);
        let mut input = parts;
        for (level, (ranges, dest)) in sorted.levels.iter().zip(sorted.tables) {
            let jobs = level.dest.len();
            let output = if level.last {
                None
            } else {
                Some(TrackedBuffer::new(&q, jobs * point_limbs, None, memory)?)
            };
            launch(
                &kernel("msm_fold", jobs)
                    .arg(&*input)
                    .arg(&*ranges)
                    .arg(&*dest)
                    .arg(output.as_deref().unwrap_or(&bucket_sums))
                    .arg(jobs as u32)
                    .build()?,
            )?;
            if let Some(output) = output {
                input = output;
            }
        }
        drop(input);
        phases.mark(&q, "buckets")?;

        // 4. Weigh the buckets by their digits, in groups, and add runs of groups.
        let groups = plan.group_count();
        let group_sums = TrackedBuffer::new(&q, groups * point_limbs, None, memory)?;
        launch(
            &kernel("msm_reduce", groups)
                .arg(&*bucket_sums)
                .arg(&*group_sums)
                .arg(plan.c as u32)
                .arg(plan.windows as u32)
                .arg(plan.group_len as u32)
                .build()?,
        )?;
        drop(bucket_sums);
        // Runs of groups are added in passes of at most `SUM_PASS` points per work-item: each
        // work-item's additions are a serial chain, and few long chains leave the device idle.
        let mut summed = group_sums;
        let mut count = groups;
        let mut left = plan.run;
        while left > 1 {
            let run = left.min(SUM_PASS);
            count /= run;
            let out = TrackedBuffer::new(&q, count * point_limbs, None, memory)?;
            launch(
                &kernel("msm_sum_runs", count)
                    .arg(&*summed)
                    .arg(&*out)
                    .arg(count as u32)
                    .arg(run as u32)
                    .build()?,
            )?;
            summed = out;
            left /= run;
        }
        let outputs = plan.windows * plan.outputs_per_window();
        debug_assert_eq!(count, outputs);
        // The sums come back in Jacobian form: blst adds them as they are, and the inversions a
        // conversion to affine needs took one long serial work-item each on the device.
        let mut out = vec![0u32; outputs * point_limbs];
        // Blocking: after every kernel above.
        summed.read(&mut out).queue(&q).enq()?;
        // Every device buffer is freed here, before the host's share of the work.
        drop(summed);
        phases.mark(&q, "weigh")?;

        // blst takes reduced coordinates on trust: a faulty device's x + P would pass the curve
        // check (the products reduce it) and then break the additions.
        let p = source::fq().p;
        if !out.chunks_exact(FQ_LIMBS).all(|limbs| below(limbs, &p)) {
            return Err(GpuError::WrongResult(
                "a coordinate outside the field".into(),
            ));
        }
        let acc = combine_windows::<G>(&out, &plan)?;
        phases.mark(&q, "host sum")?;
        if bounded {
            // Unbounded calls sum in one long launch, a little faster per entry.
            self.remember_pace(G::NAME, plan.c, clock.pace());
        }
        let on_request = clock.finished_on_request();
        if on_request {
            self.pieces_finished_on_request
                .fetch_add(1, Ordering::Relaxed);
            log::debug!(
                "gpu: {} piece of {n} terms finished under a request ({:.2?} into it)",
                G::NAME,
                started.elapsed()
            );
        }
        if let Some(steps) = phases.summary() {
            log::debug!(
                "gpu: {} multiexp piece of {n} terms (c = {}, {total} entries, segments of \
                 {segment}): {steps}",
                G::NAME,
                plan.c,
            );
        }
        Ok((acc, on_request))
    }

    /// The last pace learned for `group`'s pieces of window width `c` on this kernel (none yet:
    /// nothing is finished under a request).
    fn pace_of(&self, group: &'static str, c: usize) -> Pace {
        let paces = self.paces.lock().unwrap_or_else(|p| p.into_inner());
        paces.get(&(group, c)).copied().unwrap_or_default()
    }

    fn remember_pace(&self, group: &'static str, c: usize, pace: Pace) {
        let mut paces = self.paces.lock().unwrap_or_else(|p| p.into_inner());
        paces.insert((group, c), pace);
    }

    /// Steps 1 and 2 of a piece on `queue`, from its `n` scalars on the device: counts the terms
    /// of each bucket (the device turns the counts into offsets and lists the long buckets, whose
    /// folds the host plans) and sorts the terms by bucket. `None` when every digit is zero.
    #[allow(clippy::too_many_arguments)]
    fn sort_on_device<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        scalars_buf: &TrackedBuffer<'_>,
        n: usize,
        plan: &Plan,
        bounded: bool,
        phases: &mut PhaseTimer,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Option<Sorted<'_>>, GpuError> {
        let bucket_count = plan.bucket_count();
        let q = &built.queue;
        let memory = &self.memory;
        let check = || interrupted(q, interrupt);
        let kernel = |name: &str, items: usize| kernel_builder::<G>(built, name, items);

        // Small tables (the fold ranges) cross through the pinned staging memory too: from
        // ordinary memory a 2 MiB table (16-bit windows) took over a millisecond each way.
        let upload_u32 = |data: &[u32]| -> Result<TrackedBuffer, GpuError> {
            let buffer = TrackedBuffer::new(q, data.len(), None, memory)?;
            built.with_staging(|staging| {
                staging.upload(
                    q,
                    &buffer,
                    data.len(),
                    1,
                    &|start, out| out.copy_from_slice(&data[start..start + out.len()]),
                    interrupt,
                )
            })?;
            Ok(buffer)
        };

        // 1. Count the terms of each bucket, and turn the counts into offsets on the device.
        let cursor = TrackedBuffer::new(q, bucket_count, None, memory)?;
        cursor.cmd().fill(0, None).enq()?;
        check()?;
        launch(
            &kernel("msm_count", n)
                .arg(&**scalars_buf)
                .arg(&*cursor)
                .arg(n as u32)
                .arg(plan.c as u32)
                .arg(plan.windows as u32)
                .build()?,
        )?;
        // The offsets are summed on the device; only their total and the few long buckets come
        // back (see `cl/multiexp.cl`).
        let blocks = bucket_count.div_ceil(SCAN_BLOCK);
        let sums = TrackedBuffer::new(q, blocks, None, memory)?;
        let offsets_buf = TrackedBuffer::new(q, bucket_count + 1, None, memory)?;
        launch(
            &kernel("msm_block_sums", blocks)
                .arg(&*cursor)
                .arg(&*sums)
                .arg(bucket_count as u32)
                .build()?,
        )?;
        launch(
            &kernel("msm_scan_sums", SCAN_ITEMS)
                .arg(&*sums)
                .arg(blocks as u32)
                .arg(&*offsets_buf)
                .arg(bucket_count as u32)
                .build()?,
        )?;
        let summed = enqueue(
            &kernel("msm_block_offsets", blocks)
                .arg(&*cursor)
                .arg(&*sums)
                .arg(&*offsets_buf)
                .arg(bucket_count as u32)
                .build()?,
        )?;
        // Waited for while probing (the count and its sums take milliseconds at 2^24); the read
        // after it then finds the queue done.
        settled(q, wait_interruptible(q, &summed, interrupt))?;
        let total = read_u32s(q, &offsets_buf, bucket_count, 1)?[0] as usize;
        if total >= 1 << 31 {
            return Err(GpuError::InvalidInput(format!(
                "{n} terms make too many bucket entries for one launch"
            )));
        }
        if total == 0 {
            return Ok(None);
        }
        drop(sums);
        // The fold passes' tables go up now, while the queue is nearly empty: uploaded after the
        // segments' launch, each would wait for that kernel.
        let launch_entries = match self.launch_entries.load(Ordering::Relaxed) {
            0 if bounded => G::LAUNCH_ENTRIES,
            0 => usize::MAX,
            limit => limit,
        };
        let segment = Plan::segment(total, launch_entries, G::LAUNCH_SEGMENTS);
        let long =
            self.long_buckets::<G>(built, &offsets_buf, bucket_count, total, segment, interrupt)?;
        let levels = fold_levels(&long);
        let tables = levels
            .iter()
            .map(|level| Ok((upload_u32(&level.ranges)?, upload_u32(&level.dest)?)))
            .collect::<Result<Vec<_>, GpuError>>()?;
        phases.mark(q, "count")?;

        // 2. Sort the terms by bucket.
        let entries = TrackedBuffer::new(q, total, None, memory)?;
        check()?;
        let done = enqueue(
            &kernel("msm_scatter", n)
                .arg(&**scalars_buf)
                .arg(&*cursor)
                .arg(&*entries)
                .arg(n as u32)
                .arg(plan.c as u32)
                .arg(plan.windows as u32)
                .build()?,
        )?;
        settled(q, wait_interruptible(q, &done, interrupt))?;
        phases.mark(q, "scatter")?;
        Ok(Some(Sorted {
            entries,
            offsets_buf,
            total,
            segment,
            levels,
            tables,
            launch_entries,
        }))
    }

    /// The buckets of a sorted call that need planned folds ([`LongBucket`]), listed on the
    /// device from its `offsets` and read back in bucket order.
    fn long_buckets<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        offsets: &TrackedBuffer,
        bucket_count: usize,
        total: usize,
        segment: usize,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<LongBucket>, GpuError> {
        let q = &built.queue;
        let capacity = long_bucket_capacity(total, segment);
        let count = TrackedBuffer::new(q, 1, Some(&[0]), &self.memory)?;
        let list = TrackedBuffer::new(q, 3 * capacity, None, &self.memory)?;
        let listed = enqueue(
            &kernel_builder::<G>(built, "msm_long_buckets", bucket_count)
                .arg(&**offsets)
                .arg(bucket_count as u32)
                .arg(segment.trailing_zeros())
                .arg(DIRECT_CROSSINGS as u32)
                .arg(&*count)
                .arg(&*list)
                .arg(capacity as u32)
                .build()?,
        )?;
        settled(q, wait_interruptible(q, &listed, interrupt))?;
        let found = read_u32s(q, &count, 0, 1)?[0] as usize;
        if found > capacity {
            return Err(GpuError::WrongResult(format!(
                "{found} long buckets listed, at most {capacity} possible"
            )));
        }
        if found == 0 {
            return Ok(Vec::new());
        }
        let mut long: Vec<LongBucket> = read_u32s(q, &list, 0, 3 * found)?
            .chunks_exact(3)
            .map(|b| LongBucket {
                bucket: b[0],
                first_part: b[1],
                end_part: b[2],
            })
            .collect();
        long.sort_unstable();
        Ok(long)
    }
}

/// Points back from the device at least this many to a call are checked and added on several
/// threads ([`combine_windows`]); fewer cost less than the threads' start.
const THREADED_HOST_SUM: usize = 128;

/// The call's sum from the device's points (`out`: Jacobian limbs, `plan.outputs_per_window()`
/// for each window from the lowest): each point checked to be on the curve and each window's
/// points added, the windows shared among a few threads, then the windows combined by doubling.
/// On one thread this took 2.5-4.4 ms of each 2^16 proof's G2 piece (640 points) on the H200's
/// host, and about 1 ms of each G1 piece, with the device idle until the next piece or call.
fn combine_windows<G: GpuCurve>(out: &[u32], plan: &Plan) -> Result<G::Curve, GpuError> {
    let point_limbs = 3 * G::COORD_LIMBS;
    let window_limbs = plan.outputs_per_window() * point_limbs;
    let window_sum = |limbs: &[u32]| -> Result<G::Curve, GpuError> {
        let mut sum = G::Curve::identity();
        for point in limbs.chunks_exact(point_limbs) {
            sum += G::from_jacobian(point)?;
        }
        Ok(sum)
    };
    let windows_of = |part: &[u32]| -> Result<Vec<G::Curve>, GpuError> {
        part.chunks_exact(window_limbs).map(window_sum).collect()
    };
    let points = out.len() / point_limbs;
    let threads = crate::multicore::fill_threads().min(plan.windows);
    let sums = if points < THREADED_HOST_SUM || threads < 2 {
        windows_of(out)?
    } else {
        let per_thread = plan.windows.div_ceil(threads) * window_limbs;
        std::thread::scope(|scope| {
            let handles: Vec<_> = out
                .chunks(per_thread)
                .map(|part| {
                    let spawned = std::thread::Builder::new()
                        .name("gpu-host-sum".into())
                        .spawn_scoped(scope, move || windows_of(part));
                    (part, spawned)
                })
                .collect();
            let mut sums = Vec::with_capacity(plan.windows);
            for (part, spawned) in handles {
                // A thread that could not be started: its windows are added here.
                let part_sums = match spawned {
                    Ok(handle) => handle.join().map_err(|_| {
                        GpuError::Ocl("a thread adding the device's points panicked".into())
                    })??,
                    Err(_) => windows_of(part)?,
                };
                sums.extend(part_sums);
            }
            Ok::<_, GpuError>(sums)
        })?
    };
    let mut acc = G::Curve::identity();
    for window in sums.iter().rev() {
        for _ in 0..plan.c {
            acc = acc.double();
        }
        acc += window;
    }
    Ok(acc)
}

/// `len` values of `buffer` from `offset`, read straight into ordinary memory: for a few words
/// (a total, a short list), where the staging memory's two steps would cost more than they save.
/// A blocking read, which does not probe: callers wait for the kernels before it while probing
/// (`wait_interruptible`), so that it finds the queue done.
fn read_u32s(
    queue: &ocl::Queue,
    buffer: &ocl::Buffer<u32>,
    offset: usize,
    len: usize,
) -> Result<Vec<u32>, GpuError> {
    let mut out = vec![0u32; len];
    buffer.read(&mut out).queue(queue).offset(offset).enq()?;
    Ok(out)
}

/// The terms of one call sorted by bucket on the device ([`MultiexpKernel::sort_on_device`]).
struct Sorted<'a> {
    /// The terms' indices (and signs), bucket after bucket.
    entries: TrackedBuffer<'a>,
    /// Where each bucket's entries begin, and one more: their total.
    offsets_buf: TrackedBuffer<'a>,
    /// Bucket entries: the nonzero digits.
    total: usize,
    /// Entries summed by one work-item of `msm_segments`.
    segment: usize,
    /// The fold passes of the long buckets, and their tables on the device.
    levels: Vec<FoldLevel>,
    tables: Vec<(TrackedBuffer<'a>, TrackedBuffer<'a>)>,
    /// Entries per launch of `msm_segments`.
    launch_entries: usize,
}

/// Asked before each launch. When the answer is yes, the kernels already enqueued are let finish
/// (they use the call's buffers) before the buffers are dropped and the device is released.
fn interrupted(queue: &ocl::Queue, interrupt: &dyn Fn() -> bool) -> Result<(), GpuError> {
    if interrupt() {
        let _ = queue.finish();
        Err(GpuError::Interrupted)
    } else {
        Ok(())
    }
}

/// A launch of kernel `name` of the group of `G` over `items` work-items (rounded up to whole
/// work-groups; the kernels bounds-check their index) on `built`'s queue.
fn kernel_builder<'a, G: GpuCurve>(
    built: &'a BuiltProgram,
    name: &str,
    items: usize,
) -> ocl::builders::KernelBuilder<'a> {
    let mut builder = ocl::Kernel::builder();
    builder
        .program(&built.program)
        .name(format!("{}_{name}", G::NAME))
        .queue(built.queue.clone())
        .global_work_size(items.max(1).next_multiple_of(WORK_GROUP))
        .local_work_size(WORK_GROUP);
    builder
}

/// Where one part of a split multiexp ran.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SplitPart {
    /// The stable id of the device the part was given to.
    pub device: String,
    /// Its terms: `start..end` of the whole.
    pub terms: std::ops::Range<usize>,
    /// Whether the device computed it; `false` means it failed (logged) and the CPU did.
    pub on_gpu: bool,
}

/// `sum_i scalars[i] * bases[i]` split across `kernels` (one device each), in contiguous parts
/// proportional to the devices' compute units, run side by side. A part whose device fails is
/// computed on the CPU ([`crate::multiexp::multiexp_chunk`]) and reported as such.
pub fn multiexp_split<G: GpuCurve>(
    kernels: &[&MultiexpKernel],
    bases: &[G],
    scalars: &[ScalarRepr],
) -> Result<(G::Curve, Vec<SplitPart>), GpuError> {
    let n = bases.len();
    if n != scalars.len() {
        return Err(GpuError::InvalidInput(format!(
            "{n} bases but {} scalars",
            scalars.len()
        )));
    }
    if kernels.is_empty() {
        return Err(GpuError::NoDevice(": no kernels to split over".into()));
    }
    let weights: Vec<u64> = kernels
        .iter()
        .map(|k| k.device.compute_units.max(1) as u64)
        .collect();
    let total: u64 = weights.iter().sum();
    let mut bounds = vec![0usize];
    let mut acc = 0u64;
    for w in &weights {
        acc += w;
        bounds.push((n as u128 * acc as u128 / total as u128) as usize);
    }
    let results: Vec<(G::Curve, SplitPart)> = std::thread::scope(|scope| {
        let handles: Vec<_> = kernels
            .iter()
            .zip(bounds.windows(2))
            .map(|(kernel, w)| {
                let range = w[0]..w[1];
                scope.spawn(move || {
                    let on_device = kernel.multiexp(&bases[range.clone()], &scalars[range.clone()]);
                    let (sum, on_gpu) = match on_device {
                        Ok(sum) => (sum, true),
                        Err(e) => {
                            log::warn!(
                                "gpu: {} multiexp part {range:?} failed on {} ({e}); computing it \
                                 on the CPU",
                                G::NAME,
                                kernel.device.name
                            );
                            let sum =
                                crate::multiexp::multiexp_chunk(bases, scalars, range.clone())
                                    .map_err(|e| {
                                        GpuError::InvalidInput(format!(
                                            "{} bases but {} scalars",
                                            e.bases, e.scalars
                                        ))
                                    })?;
                            (sum, false)
                        }
                    };
                    Ok((
                        sum,
                        SplitPart {
                            device: kernel.device.id.clone(),
                            terms: range,
                            on_gpu,
                        },
                    ))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .map_err(|_| GpuError::Ocl("a multiexp thread panicked".into()))?
            })
            .collect::<Result<_, GpuError>>()
    })?;
    let mut sum = G::Curve::identity();
    let mut parts = Vec::with_capacity(results.len());
    for (s, part) in results {
        sum += s;
        parts.push(part);
    }
    Ok((sum, parts))
}

/// Enqueues a kernel built by this module; the event says when it is done.
#[allow(unsafe_code)]
fn enqueue(kernel: &ocl::Kernel) -> Result<ocl::Event, GpuError> {
    let mut done = ocl::Event::empty();
    // SAFETY: the kernels of ec.cl and multiexp.cl bounds-check their work-item index against
    // their count argument (`msm_segments` also against its launch's `end_segment`), and
    // `multiexp` sizes every buffer for those counts with the argument types of the kernels'
    // signatures: two coordinates of 12 limbs per base in G1 (24 in G2), 8 limbs per scalar, one
    // counter per bucket and one offset more, one block sum per `SCAN_BLOCK` buckets (the scan
    // of them is one work-group of `SCAN_ITEMS` = `WORK_GROUP` items, which loops over them and
    // writes the offset after the last bucket), one entry per nonzero digit (the offsets' total,
    // so the scatter's atomic cursors stay inside), a long-bucket list of three words per bucket
    // that `msm_long_buckets` bounds by its `capacity` argument, one Jacobian point per bucket,
    // two per segment (head and tail), one per fold job, group and output; the fold levels'
    // ranges lie inside their input ([`fold_levels`], unit-tested) and their destinations inside
    // their output.
    unsafe { kernel.cmd().enew(&mut done).enq()? };
    Ok(done)
}

/// Enqueues a kernel built by this module, without waiting for it.
fn launch(kernel: &ocl::Kernel) -> Result<(), GpuError> {
    enqueue(kernel).map(drop)
}

#[cfg(test)]
mod tests {
    use super::fold::{long_buckets, offsets_of};
    use super::Plan;

    /// The device's points are checked and combined the same on one thread or several, and a
    /// point off the curve is an error wherever it is.
    #[test]
    fn the_host_combines_the_windows_and_checks_every_point() {
        use super::{combine_windows, write_limbs, GpuError, THREADED_HOST_SUM};
        use blstrs::{G1Affine, G1Projective, Scalar};
        use group::Group;
        // The plan of 2^20 terms (512 points back), and a small one (32 points).
        let small = Plan {
            c: 8,
            windows: 4,
            group_len: 4,
            run: 4,
        };
        for (plan, threaded) in [(Plan::new(1 << 20), true), (small, false)] {
            let per_window = plan.outputs_per_window();
            let count = plan.windows * per_window;
            let points: Vec<G1Projective> = (0..count as u64)
                .map(|i| G1Projective::generator() * Scalar::from(i * i + 7))
                .collect();
            let mut out = Vec::new();
            for p in &points {
                let raw: &blst::blst_p1 = p.as_ref();
                for fp in [&raw.x, &raw.y, &raw.z] {
                    let mut limbs = [0u32; 12];
                    write_limbs(&fp.l, &mut limbs);
                    out.extend(limbs);
                }
            }
            let mut expected = G1Projective::identity();
            for w in (0..plan.windows).rev() {
                for _ in 0..plan.c {
                    expected = expected.double();
                }
                for p in &points[w * per_window..(w + 1) * per_window] {
                    expected += p;
                }
            }
            assert_eq!(combine_windows::<G1Affine>(&out, &plan).unwrap(), expected);
            // The last window's last point, then the first's first, moved off the curve.
            for at in [count - 1, 0] {
                let mut bad = out.clone();
                bad[at * 36 + 12] ^= 1;
                assert!(matches!(
                    combine_windows::<G1Affine>(&bad, &plan),
                    Err(GpuError::WrongResult(_))
                ));
            }
            // Both paths are taken.
            assert_eq!(count >= THREADED_HOST_SUM, threaded, "{count} points");
        }
    }

    #[test]
    fn the_device_lists_the_long_buckets_of_its_host_model() {
        use super::{MultiexpKernel, TrackedBuffer};
        let device = crate::gpu::device::first_for_tests();
        let kernel = MultiexpKernel::new(&device).expect("kernel");
        let built = kernel
            .program(<blstrs::G1Affine as super::GpuCurve>::NAME)
            .expect("build");
        let segment = 16;
        // Long buckets scattered among short and empty ones, none, and every bucket long.
        let mixed: Vec<u32> = (0..3000u32)
            .map(|k| match k % 101 {
                0 => 17 * 16 + k % 50,
                1 => 0,
                _ => k % 29,
            })
            .collect();
        for (counts, want) in [
            (mixed, None),
            (vec![5; 400], Some(0)),
            (vec![300; 64], Some(64)),
        ] {
            let (offsets, total) = offsets_of(&counts);
            let buffer =
                TrackedBuffer::new(&built.queue, offsets.len(), Some(&offsets), &kernel.memory)
                    .expect("offsets");
            let listed = kernel
                .long_buckets::<blstrs::G1Affine>(
                    &built,
                    &buffer,
                    counts.len(),
                    total,
                    segment,
                    &|| false,
                )
                .expect("listed");
            assert_eq!(listed, long_buckets(&offsets, segment));
            if let Some(want) = want {
                assert_eq!(listed.len(), want);
            } else {
                assert!(!listed.is_empty());
            }
        }
    }

    #[test]
    fn device_points_come_back_in_jacobian_form_and_are_checked() {
        use super::{GpuCurve, FQ_LIMBS};
        use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar};
        use group::Group;
        // A point as the device keeps it: blst's Jacobian limbs, split into 32-bit ones.
        fn limbs_of(fps: &[&blst::blst_fp]) -> Vec<u32> {
            let mut out = vec![0u32; fps.len() * FQ_LIMBS];
            for (fp, part) in fps.iter().zip(out.chunks_exact_mut(FQ_LIMBS)) {
                crate::gpu::buffer::write_limbs(&fp.l, part);
            }
            out
        }
        let p = G1Projective::generator() * Scalar::from(12345u64) + G1Projective::generator();
        let raw: &blst::blst_p1 = p.as_ref();
        let mut limbs = limbs_of(&[&raw.x, &raw.y, &raw.z]);
        assert_eq!(G1Affine::from_jacobian(&limbs).unwrap(), p);
        let q = G2Projective::generator() * Scalar::from(777u64);
        let raw: &blst::blst_p2 = q.as_ref();
        let fps: Vec<&blst::blst_fp> = [&raw.x, &raw.y, &raw.z]
            .into_iter()
            .flat_map(|c| c.fp.iter())
            .collect();
        assert_eq!(G2Affine::from_jacobian(&limbs_of(&fps)).unwrap(), q);
        // The identity (z = 0) is accepted; a changed limb is a wrong result.
        let zero = G1Projective::identity();
        let raw: &blst::blst_p1 = zero.as_ref();
        assert!(bool::from(
            G1Affine::from_jacobian(&limbs_of(&[&raw.x, &raw.y, &raw.z]))
                .unwrap()
                .is_identity()
        ));
        limbs[3] ^= 1;
        assert!(matches!(
            G1Affine::from_jacobian(&limbs),
            Err(crate::gpu::GpuError::WrongResult(_))
        ));
        // Coordinates at or above P are caught before (blst would take them on trust).
        let p = crate::gpu::source::fq().p;
        let mut less = p.clone();
        less[0] -= 1;
        let mut more = p.clone();
        more[FQ_LIMBS - 1] += 1;
        assert!(super::below(&less, &p) && !super::below(&p, &p) && !super::below(&more, &p));
    }

    #[test]
    fn plans_widen_the_window_with_the_terms() {
        let c = |log_n: u32| Plan::new(1 << log_n).c;
        assert!(c(0) >= 4 && c(0) <= 6, "{}", c(0));
        assert!((11..=13).contains(&c(15)), "{}", c(15));
        assert_eq!(c(20), 16);
        assert_eq!(c(24), 16);
        for log_n in 0..26 {
            let plan = Plan::new(1 << log_n);
            // The windows cover 256 bits; the reduction's shape divides the buckets evenly.
            assert!(plan.windows * plan.c >= 256 && (plan.windows - 1) * plan.c < 256);
            assert_eq!(plan.buckets() % (plan.group_len * plan.run), 0);
            assert!(plan.group_len <= 32 && plan.group_len.is_power_of_two());
            assert!(plan.outputs_per_window() >= 1);
        }
        // The warm-up launches every kernel: runs of groups are summed.
        assert!(Plan::new(super::WARM_UP_TERMS).run > 1);
        // The passes of `msm_sum_runs` divide exactly (powers of two), and tests/gpu_multiexp.rs
        // sums them in two passes at 2^16 terms.
        for log_n in 0..27 {
            assert!(Plan::new(1 << log_n).run.is_power_of_two());
        }
        assert!(Plan::new(1 << 16).run > super::SUM_PASS);
        assert_eq!(Plan::segment(10, 1 << 23, 1 << 17), 16);
        // Each launch's share fills the device: 2^17 segments of 64 in 2^23 entries.
        assert_eq!(Plan::segment(1 << 28, 1 << 23, 1 << 17), 64);
        assert_eq!(Plan::segment(1 << 28, 1 << 30, 1 << 17), 512);
        assert_eq!(Plan::segment(1 << 28, 1 << 21, 1 << 16), 32);
        // The in-proof calls' launches: segments of 128 G1 and 64 G2 entries.
        use super::GpuCurve;
        use blstrs::{G1Affine, G2Affine};
        let g1 = (G1Affine::LAUNCH_ENTRIES, G1Affine::LAUNCH_SEGMENTS);
        let g2 = (G2Affine::LAUNCH_ENTRIES, G2Affine::LAUNCH_SEGMENTS);
        assert_eq!(Plan::segment(1 << 28, g1.0, g1.1), 128);
        assert_eq!(Plan::segment(1 << 28, g2.0, g2.1), 64);
    }
}
