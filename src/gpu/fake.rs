//! A stand-in GPU for tests of the scheduler and the lock protocol: it computes on the CPU at a
//! speed the test sets, counts "device bytes" like a real kernel, and checks for interruption
//! every millisecond as a real kernel does between launches. `PREEMPTIBLE_GROTH16_FAKE_GPUS=N`
//! (or `N:ns-per-term`) replaces the OpenCL devices with `N` of these, in threads and child
//! processes alike, so the preemption tests are fast, deterministic and need no OpenCL device.

use super::buffer::DeviceMemory;
use super::engine::Engine;
use super::error::GpuError;
use super::multiexp::{
    finish_grace, piece_ranges, worth_finishing, AnyBases, AnySums, KeepOnDevice, PieceSums,
    ResidentBases,
};
use crate::bases::{encoded_size, Bases};
use crate::domain::{to_coset, QuotientInput, QuotientSteps};
use crate::multiexp::{multiexp_serial, scalar_reprs, CurveAffine, ScalarRepr};
use blstrs::Scalar;
use group::{Group, UncompressedEncoding};
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant};

use crate::config::Config;
pub use crate::config::{FAKE_GPUS_ENV, FAKE_GPU_IDS_ENV};

/// Default speed: 2 microseconds per multiexp term (a chunk of 2^14 terms takes about 33 ms).
const DEFAULT_NS_PER_TERM: u64 = 2_000;

/// Pretend time of a quotient per value, in nanoseconds; 0 means a tenth of a multiexp's per term.
static QUOTIENT_NS_PER_VALUE: AtomicU64 = AtomicU64::new(0);

/// Sets the fake devices' quotient time per value (0: the default, a tenth of a multiexp's per
/// term), so that a test can make a quotient long enough to be interrupted.
#[doc(hidden)]
pub fn set_quotient_ns_per_value(ns: u64) {
    QUOTIENT_NS_PER_VALUE.store(ns, Ordering::Relaxed);
}

/// The threads that compute the fake devices' results.
fn fake_pool() -> &'static rayon::ThreadPool {
    static POOL: OnceLock<rayon::ThreadPool> = OnceLock::new();
    POOL.get_or_init(|| {
        rayon::ThreadPoolBuilder::new()
            .thread_name(|i| format!("fake-gpu-{i}"))
            .build()
            .unwrap_or_else(|_| {
                rayon::ThreadPoolBuilder::new()
                    .num_threads(1)
                    .build()
                    .expect("a one-thread pool")
            })
    })
}

/// One fake device.
#[derive(Debug)]
pub struct FakeDevice {
    /// Its id, `fake-<i>`.
    pub id: String,
    /// The id bellperson would name it by, the name of its per-device bellperson lock file:
    /// [`FAKE_GPU_IDS_ENV`]'s entry for it, else its own id.
    pub bellperson_id: String,
    ns_per_term: u64,
    memory: DeviceMemory,
    /// How long a request may wait for a multiexp piece nearly done, as on a real device
    /// (`multiexp/finish.rs`).
    grace: Duration,
    /// The ranges of queries kept "on the device" (as a real one keeps their bases), their
    /// pretend bytes counted in `memory`.
    kept: Mutex<ResidentBases<()>>,
}

/// The fake devices `PREEMPTIBLE_GROTH16_FAKE_GPUS` asks for (none if it is unset or malformed).
pub fn from_env() -> Vec<FakeDevice> {
    from_config(&Config::from_env())
}

/// The fake devices `config` asks for ([`FAKE_GPUS_ENV`], [`FAKE_GPU_IDS_ENV`]).
pub(crate) fn from_config(config: &Config) -> Vec<FakeDevice> {
    let Some((count, ns_per_term)) = config.fake_gpus else {
        return Vec::new();
    };
    (0..count)
        .map(|i| FakeDevice {
            id: format!("fake-{i}"),
            bellperson_id: config
                .fake_gpu_ids
                .get(i)
                .cloned()
                .unwrap_or_else(|| format!("fake-{i}")),
            ns_per_term: ns_per_term.unwrap_or(DEFAULT_NS_PER_TERM),
            memory: DeviceMemory::default(),
            grace: finish_grace(config),
            kept: Mutex::new(ResidentBases::default()),
        })
        .collect()
}

impl FakeDevice {
    /// Bytes "allocated" by calls running now.
    pub fn live_device_bytes(&self) -> u64 {
        self.memory.live()
    }

    /// The most pretend bytes held at once since the last call.
    pub fn take_peak_device_bytes(&self) -> u64 {
        self.memory.take_peak()
    }

    /// Pretend device memory of a multiexp of `n` terms.
    pub(crate) fn multiexp_bytes(n: usize) -> u64 {
        128 * n as u64
    }

    /// Holds `bytes` of pretend device memory for `n` terms' worth of time, checking `interrupt`
    /// every millisecond.
    fn occupy(&self, n: usize, bytes: u64, interrupt: &dyn Fn() -> bool) -> Result<(), GpuError> {
        self.memory.add(bytes);
        let result = self.pretend(n, Instant::now(), interrupt, Duration::ZERO);
        self.memory.sub(bytes);
        result.map(|_| ())
    }

    /// `n` terms' worth of pretend device time from now, checking `interrupt` every millisecond.
    /// As a real multiexp piece does, lets a request wait for the rest when little is left and
    /// less than was done since `started` (`grace`, `multiexp/finish.rs`); says whether it did.
    fn pretend(
        &self,
        n: usize,
        started: Instant,
        interrupt: &dyn Fn() -> bool,
        grace: Duration,
    ) -> Result<bool, GpuError> {
        let end = Instant::now() + Duration::from_nanos(self.ns_per_term * n as u64);
        let mut finishing = false;
        loop {
            if !finishing && interrupt() {
                let now = Instant::now();
                if worth_finishing(now - started, end.saturating_duration_since(now), grace) {
                    finishing = true;
                } else {
                    return Err(GpuError::Interrupted);
                }
            }
            let now = Instant::now();
            if now >= end {
                return Ok(finishing);
            }
            std::thread::sleep((end - now).min(Duration::from_millis(1)));
        }
    }

    /// One piece's multiexp: its result first, then the pretend device time, during which a
    /// request that comes when little is left, and less than was done, lets the piece finish
    /// (its `grace`, as a real device's piece, `multiexp/finish.rs`); says whether one did. The
    /// result comes first so that a piece finishing on request holds the device for the rest of
    /// its pretend time only (at most the grace), as a real one does: computed after, its
    /// computation, which a loaded machine stretches to hundreds of milliseconds, would hold the
    /// device without a look at the requests.
    fn multiexp_piece<G: CurveAffine>(
        &self,
        bases: &[G],
        scalars: &[ScalarRepr],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(G::Curve, bool), GpuError> {
        let bytes = Self::multiexp_bytes(bases.len());
        self.memory.add(bytes);
        let started = Instant::now();
        let result = Self::piece_sum(bases, scalars, interrupt).and_then(|sum| {
            let on_request = self.pretend(bases.len(), started, interrupt, self.grace)?;
            Ok((sum, on_request))
        });
        self.memory.sub(bytes);
        result
    }

    /// A piece's sum, in small pieces on a pool of the fake devices' own (the crate's pool may be
    /// busy with the CPU's share, and a device does not queue behind it), each batch of them
    /// checking for interruption first, so that a request is seen within a few milliseconds
    /// here too, as a real kernel sees it between launches.
    fn piece_sum<G: CurveAffine>(
        bases: &[G],
        scalars: &[ScalarRepr],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<G::Curve, GpuError> {
        let pieces: Vec<(&[G], &[ScalarRepr])> =
            bases.chunks(1 << 10).zip(scalars.chunks(1 << 10)).collect();
        let pool = fake_pool();
        let mut sum = G::Curve::identity();
        for batch in pieces.chunks(pool.current_num_threads().max(1)) {
            if interrupt() {
                return Err(GpuError::Interrupted);
            }
            sum += pool.install(|| {
                batch
                    .par_iter()
                    .map(|(b, s)| multiexp_serial(b, s))
                    .try_reduce(G::Curve::identity, |a, b| Ok(a + b))
                    .map_err(|e| {
                        GpuError::InvalidInput(format!(
                            "{} bases but {} scalars",
                            e.bases, e.scalars
                        ))
                    })
            })?;
        }
        Ok(sum)
    }

    /// A multiexp over consecutive pieces ending at `ends`, one after another, as
    /// the OpenCL kernel's [`super::multiexp::MultiexpKernel::multiexp_in_pieces`]: a call
    /// stopped early keeps the pieces it finished, and a piece nearly done when a request comes
    /// is finished first.
    /// Bases mapped from a parameter file are decoded here, piece by piece, as a device decodes
    /// them: a point that is not on the curve stops the call with [`GpuError::InvalidBases`].
    /// With `keep`, pieces are "kept" as a real device keeps their bases (their pretend bytes
    /// counted), and a piece kept already is not counted as uploaded.
    pub fn multiexp_in_pieces<G: CurveAffine + UncompressedEncoding>(
        &self,
        bases: Bases<'_, G>,
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        keep: Option<KeepOnDevice>,
    ) -> PieceSums<G::Curve> {
        let mut out = PieceSums::nothing();
        for range in piece_ranges(ends) {
            let at = keep.map(|k| (k, k.offset + range.start..k.offset + range.end));
            let s = scalars
                .get(range.clone())
                .filter(|_| range.end <= bases.len());
            let Some(s) = s else {
                out.stopped = Some(GpuError::InvalidInput(format!(
                    "pieces ending at {ends:?} do not cut {} terms",
                    bases.len()
                )));
                return out;
            };
            let b = match bases.range(range).points() {
                Ok(points) => points,
                Err(message) => {
                    out.stopped = Some(GpuError::InvalidBases(message));
                    return out;
                }
            };
            // A device uploads a piece's bases before its sums, unless it keeps them.
            if !at.as_ref().is_some_and(|(k, at)| self.keeps(k, at)) {
                out.bases_uploaded += (b.len() * encoded_size::<G>()) as u64;
                if let Some((k, at)) = at {
                    self.keep::<G>(&k, at);
                }
            }
            match self.multiexp_piece(&b, s, interrupt) {
                Ok((sum, on_request)) => {
                    out.sum += sum;
                    out.done += 1;
                    out.finished_at = Some(Instant::now());
                    out.finished_on_request += usize::from(on_request);
                }
                Err(e) => {
                    out.stopped = Some(e);
                    return out;
                }
            }
        }
        out
    }

    /// Whether the points `at` of `keep`'s query are kept.
    fn keeps(&self, keep: &KeepOnDevice, at: &std::ops::Range<usize>) -> bool {
        let kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        kept.holding(&keep.query, at).is_some()
    }

    /// Keeps the points `at` of `keep`'s query, within its budget.
    fn keep<G: UncompressedEncoding>(&self, keep: &KeepOnDevice, at: std::ops::Range<usize>) {
        let mut kept = self.kept.lock().unwrap_or_else(|e| e.into_inner());
        let bytes = (keep.query.len * encoded_size::<G>()) as u64;
        let made = kept.buffer_for(&keep.query, bytes, keep.budget, |bytes| {
            self.memory.add(bytes);
            Some(())
        });
        if made.is_some() {
            kept.mark_present(&keep.query, at);
        }
    }

    /// Forgets the kept points; returns their pretend bytes.
    pub fn free_kept_bases(&self) -> u64 {
        let bytes = self.kept.lock().unwrap_or_else(|e| e.into_inner()).clear();
        self.memory.sub(bytes);
        bytes
    }

    /// The pretend time of a quotient of `values` values, in multiexp terms.
    fn quotient_terms(&self, values: usize) -> usize {
        match QUOTIENT_NS_PER_VALUE.load(Ordering::Relaxed) {
            0 => values / 10,
            ns => (values as u64 * ns / self.ns_per_term.max(1)) as usize,
        }
    }

    /// The prover's quotient, computed on the CPU after the pretend device time (a tenth of a
    /// multiexp's per term, FFTs being short, unless [`set_quotient_ns_per_value`] says otherwise).
    pub fn quotient(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<Scalar>, GpuError> {
        self.occupy(self.quotient_terms(a.len()), 96 * a.len() as u64, interrupt)?;
        let (a, b, c) = (a.to_vec(), b.to_vec(), c.to_vec());
        computed_interruptibly(move || crate::domain::quotient(a, b, c), interrupt)?
            .map_err(|e| GpuError::InvalidInput(e.to_string()))
    }

    /// [`FakeDevice::quotient`] in steps, as the OpenCL one: each input moved to the coset takes
    /// a quarter of the pretend time and is kept in `steps`; the rest takes the last quarter.
    pub fn quotient_steps(
        &self,
        steps: &mut QuotientSteps,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<Scalar>, GpuError> {
        let n = steps.n;
        let quarter = self.quotient_terms(steps.values()) / 4;
        let invalid = |e: crate::SynthesisError| GpuError::InvalidInput(e.to_string());
        for input in steps.inputs.iter_mut() {
            if let QuotientInput::OnDomain(values) = input {
                self.occupy(quarter, 32 * n as u64, interrupt)?;
                let values = values.clone();
                let on_coset = computed_interruptibly(move || to_coset(values, n), interrupt)?
                    .map_err(invalid)?;
                *input = QuotientInput::OnCoset(on_coset);
                steps.last_step_at = Some(Instant::now());
            }
        }
        self.occupy(quarter, 96 * n as u64, interrupt)?;
        let steps = steps.clone();
        computed_interruptibly(move || steps.finish_on_cpu(), interrupt)?.map_err(invalid)
    }
}

/// Runs `compute` (the CPU's stand-in for a device's kernels) on a thread of its own while
/// asking `interrupt` every millisecond, as a real device's kernels are waited for while
/// probing, so that a fake quotient cannot hold a high prover up for longer than a real one
/// would (one kernel): computed in line, its FFTs of 2^16 values take 180 ms on a 2-core Xeon
/// under the tests' other threads. An interrupted computation runs on to its end on its thread
/// and its result is dropped.
fn computed_interruptibly<T: Send + 'static>(
    compute: impl FnOnce() -> T + Send + 'static,
    interrupt: &dyn Fn() -> bool,
) -> Result<T, GpuError> {
    // A request already seen starts nothing: interrupted computations run on to their end.
    if interrupt() {
        return Err(GpuError::Interrupted);
    }
    let (sender, result) = std::sync::mpsc::sync_channel(1);
    let spawned = std::thread::Builder::new()
        .name("fake-gpu-kernels".into())
        .spawn(move || {
            let _ = sender.send(compute());
        });
    if let Err(e) = spawned {
        return Err(GpuError::Ocl(format!(
            "cannot start a fake device's thread: {e}"
        )));
    }
    loop {
        if interrupt() {
            return Err(GpuError::Interrupted);
        }
        match result.recv_timeout(Duration::from_millis(1)) {
            Ok(value) => return Ok(value),
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                return Err(GpuError::Ocl("a fake device's thread panicked".into()))
            }
        }
    }
}

/// A fake device behind the trait the scheduler sees devices through.
impl Engine for FakeDevice {
    /// Each chunk is a piece.
    fn piece_terms(&self, _group_piece_terms: usize) -> usize {
        1
    }

    /// The whole run, as the tests of the scheduler's smaller runs after an allocation failure
    /// expect: they limit a fake device's memory per call.
    fn multiexp_bytes(&self, _kernel_bytes: u64, run_terms: usize) -> u64 {
        FakeDevice::multiexp_bytes(run_terms)
    }

    fn multiexp(
        &self,
        bases: AnyBases<'_>,
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        keep: Option<KeepOnDevice>,
    ) -> AnySums {
        match bases {
            AnyBases::G1(b) => {
                AnySums::G1(self.multiexp_in_pieces(b, scalars, ends, interrupt, keep))
            }
            AnyBases::G2(b) => {
                AnySums::G2(self.multiexp_in_pieces(b, scalars, ends, interrupt, keep))
            }
        }
    }

    fn free_kept_bases(&self) -> u64 {
        FakeDevice::free_kept_bases(self)
    }

    /// Without limit: the tests' memory limits apply per call (`test_hooks`).
    fn memory_bytes(&self) -> u64 {
        u64::MAX
    }

    fn quotient(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<ScalarRepr>, GpuError> {
        FakeDevice::quotient(self, a, b, c, interrupt).map(|h| scalar_reprs(&h))
    }

    fn quotient_steps(
        &self,
        steps: &mut QuotientSteps,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<ScalarRepr>, GpuError> {
        FakeDevice::quotient_steps(self, steps, interrupt).map(|h| scalar_reprs(&h))
    }

    fn has_fft(&self) -> bool {
        true
    }

    fn live_device_bytes(&self) -> u64 {
        FakeDevice::live_device_bytes(self)
    }

    fn take_peak_device_bytes(&self) -> u64 {
        FakeDevice::take_peak_device_bytes(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::multiexp::{multiexp, scalar_reprs};
    use blstrs::G1Affine;
    use group::Curve;

    /// A fake device of `ns_per_term` and the given grace.
    fn device_at(grace: Duration, ns_per_term: u64) -> FakeDevice {
        FakeDevice {
            id: "fake-test".into(),
            bellperson_id: "fake-test".into(),
            ns_per_term,
            memory: DeviceMemory::default(),
            grace,
            kept: Mutex::new(ResidentBases::default()),
        }
    }

    #[test]
    fn fake_devices_carry_the_bellperson_ids_they_are_given() {
        let config = Config {
            fake_gpus: Some((3, None)),
            fake_gpu_ids: vec![
                "46abccd6-022e-b783-572d-833f7104d05f".into(),
                "e3:00".into(),
            ],
            ..Config::default()
        };
        let ids: Vec<_> = from_config(&config)
            .into_iter()
            .map(|f| f.bellperson_id)
            .collect();
        assert_eq!(
            ids,
            ["46abccd6-022e-b783-572d-833f7104d05f", "e3:00", "fake-2"]
        );
    }

    #[test]
    fn a_piece_nearly_done_when_a_request_comes_is_finished_as_on_a_real_device() {
        let bases: Vec<G1Affine> = (1..=200u64)
            .map(|i| (blstrs::G1Projective::generator() * Scalar::from(i)).to_affine())
            .collect();
        let scalars = scalar_reprs(&(0..200u64).map(Scalar::from).collect::<Vec<_>>());
        let first = multiexp(&bases[..100], &scalars[..100]).unwrap();
        // Two pieces of 300 ms each (3 ms a term, so that a loaded machine's late looks at the
        // request stay well inside each case's margin); the request comes 240 ms into the first
        // (60 ms left).
        let ms = Duration::from_millis;
        for (grace, kept) in [(Duration::ZERO, 0), (ms(90), 1)] {
            let fake = device_at(grace, 3_000_000);
            let start = Instant::now();
            let asked = || start.elapsed() >= ms(240);
            let part =
                fake.multiexp_in_pieces(Bases::from(&bases), &scalars, &[100, 200], &asked, None);
            assert!(
                matches!(part.stopped, Some(GpuError::Interrupted)),
                "{grace:?}"
            );
            assert_eq!(
                (part.done, part.finished_on_request),
                (kept, kept),
                "{grace:?}"
            );
            if kept == 1 {
                assert_eq!(part.sum, first);
                assert!(start.elapsed() >= ms(300));
            }
            assert_eq!(fake.live_device_bytes(), 0);
        }
        // A request 60 ms in (240 ms left, more than is done until 150 ms in) stops the piece
        // whatever the grace.
        let fake = device_at(Duration::from_secs(3600), 3_000_000);
        let start = Instant::now();
        let asked = || start.elapsed() >= ms(60);
        let part =
            fake.multiexp_in_pieces(Bases::from(&bases), &scalars, &[100, 200], &asked, None);
        assert_eq!((part.done, part.finished_on_request), (0, 0));
    }
}
