//! The devices the prover may use, built once per process: for each selected OpenCL device its
//! multiexp and FFT kernels, or the fake devices of [`super::fake`] when
//! `PREEMPTIBLE_GROTH16_FAKE_GPUS` asks for them. Which prover uses which device when is the
//! scheduler's business ([`super::scheduler`]), under the lock protocol ([`super::locks`]).

use super::device::{self, Selection};
use super::engine::{Engine, OpenClEngine};
use super::error::GpuError;
use super::fake;
use super::fft::FftKernel;
use super::multiexp::{piece_ranges, GpuCurve, KeepOnDevice, MultiexpKernel, PieceSums};
use super::test_hooks;
use crate::bases::Bases;
use crate::config::Config;
use crate::domain::QuotientSteps;
use crate::multiexp::ScalarRepr;
use blstrs::{G1Affine, G2Affine, Scalar};
use std::sync::OnceLock;

/// Multiexps smaller than this stay on the CPU.
pub const MIN_GPU_TERMS: usize = 1 << 10;
/// Quotients over smaller domains stay on the CPU.
pub const MIN_GPU_FFT: usize = 1 << 12;

static DEVICES: OnceLock<Vec<GpuDevice>> = OnceLock::new();
/// One device the prover may use.
#[derive(Debug)]
pub struct GpuDevice {
    /// The stable id, also the name of its lock files.
    pub id: String,
    /// The id bellperson 0.27 names it by, the name of its per-device bellperson lock file
    /// ([`super::locks::bellperson`]); `None` where the device tells neither a UUID nor a PCI id.
    pub bellperson_id: Option<String>,
    /// A name for logs.
    pub name: String,
    engine: Box<dyn Engine>,
}

impl GpuDevice {
    /// A multiexp on this device over a run of chunks ending at `chunk_ends` (increasing, the
    /// last `bases.len()`); `interrupt` is asked between kernel launches. The device computes
    /// the run in pieces of whole chunks ([`GpuCurve::PIECE_TERMS`] terms or more each; a fake
    /// device takes each chunk as a piece), so a call stopped early keeps the chunks of its
    /// finished pieces: `done` in the result counts chunks. With `keep`, the device keeps the
    /// bases for later calls over the same query and copies those it kept already rather than
    /// uploading them ([`GpuDevice::free_kept_bases`] lets them go).
    pub(crate) fn multiexp<G: GpuCurve>(
        &self,
        bases: Bases<'_, G>,
        scalars: &[ScalarRepr],
        chunk_ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        keep: Option<KeepOnDevice>,
    ) -> PieceSums<G::Curve> {
        let refused = PieceSums::refused;
        if let Err(e) = test_hooks::injected().and_then(|()| test_hooks::failing_after()) {
            return refused(e);
        }
        let piece_terms = self.engine.piece_terms(G::PIECE_TERMS);
        let chunks_of = pieces_of_chunks(chunk_ends, piece_terms);
        let ends: Vec<usize> = chunks_of.iter().map(|&c| chunk_ends[c - 1]).collect();
        let largest = piece_ranges(&ends).map(|r| r.len()).max().unwrap_or(0);
        // A piece's work, and the next piece's inputs beside it when there is one.
        let kernel_bytes = MultiexpKernel::device_bytes::<G>(largest)
            + if ends.len() > 1 {
                MultiexpKernel::input_bytes::<G>(largest)
            } else {
                0
            };
        // What the device holds already (bases kept for a batch) counts against an injected
        // limit too.
        let bytes =
            self.engine.multiexp_bytes(kernel_bytes, bases.len()) + self.engine.live_device_bytes();
        if let Err(e) = test_hooks::fits(bytes) {
            return refused(e);
        }
        let pieces =
            G::from_any(
                self.engine
                    .multiexp(G::any_bases(bases), scalars, &ends, interrupt, keep),
            );
        PieceSums {
            sum: pieces.sum,
            done: match pieces.done {
                0 => 0,
                done => chunks_of[done - 1],
            },
            stopped: pieces.stopped,
            finished_at: pieces.finished_at,
            finished_on_request: pieces.finished_on_request,
            bases_uploaded: pieces.bases_uploaded,
        }
    }

    /// Frees the bases this device keeps (before its lock is released); returns the bytes they
    /// took.
    pub(crate) fn free_kept_bases(&self) -> u64 {
        self.engine.free_kept_bases()
    }

    /// Device memory that bases kept for a batch may take: what is left of nine tenths of the
    /// device's memory (a tenth for the driver and other contexts) once `reserve` (the batch's
    /// quotient) or the largest multiexp call's working set, the larger, is set aside; those
    /// run beside the kept bases, one at a time.
    pub(crate) fn kept_bases_budget(&self, reserve: u64) -> u64 {
        fn call<G: GpuCurve>() -> u64 {
            MultiexpKernel::device_bytes::<G>(G::PIECE_TERMS)
                + MultiexpKernel::input_bytes::<G>(G::PIECE_TERMS)
        }
        let working = call::<G1Affine>().max(call::<G2Affine>()).max(reserve);
        (self.engine.memory_bytes() / 10 * 9).saturating_sub(working)
    }

    /// The prover's quotient on this device, its coefficients as the H multiexp reads them;
    /// `interrupt` is asked around every kernel and download slot, and while an upload is waited
    /// for ([`FftKernel::quotient_as`]).
    pub(crate) fn quotient(
        &self,
        a: &[Scalar],
        b: &[Scalar],
        c: &[Scalar],
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<ScalarRepr>, GpuError> {
        self.quotient_allowed(a.len().max(b.len()).max(c.len()))?;
        self.engine.quotient(a, b, c, interrupt)
    }

    /// The prover's quotient on this device from the steps done in `steps`, keeping each step
    /// it finishes there ([`FftKernel::quotient_steps_as`]).
    pub(crate) fn quotient_steps(
        &self,
        steps: &mut QuotientSteps,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<Vec<ScalarRepr>, GpuError> {
        self.quotient_allowed(steps.n)?;
        self.engine.quotient_steps(steps, interrupt)
    }

    /// Whether the injected failures and memory limit (three vectors of the domain's size,
    /// beside what the device holds already) allow a quotient of `values` values
    /// ([`test_hooks`]).
    fn quotient_allowed(&self, values: usize) -> Result<(), GpuError> {
        test_hooks::injected()?;
        test_hooks::fits(
            3 * 32 * values.max(1).next_power_of_two() as u64 + self.engine.live_device_bytes(),
        )
    }

    /// Whether this device can run the quotient (its FFT program built).
    pub(crate) fn has_fft(&self) -> bool {
        self.engine.has_fft()
    }

    /// Bytes of device memory the kernels hold now.
    pub fn live_device_bytes(&self) -> u64 {
        self.engine.live_device_bytes()
    }

    /// The most device memory the kernels held at once since the last call (the FFT's and the
    /// multiexp's at their own peaks: a claim runs one at a time on a device).
    pub fn take_peak_device_bytes(&self) -> u64 {
        self.engine.take_peak_device_bytes()
    }
}

/// The devices of this process (built at the first call; those whose programs do not build are
/// left out, with a warning). A long-running service calls this once at start, so that its first
/// proof does not pay for device discovery, program loading and context creation.
pub fn devices() -> &'static [GpuDevice] {
    DEVICES.get_or_init(|| {
        let config = Config::from_env();
        let fakes = fake::from_config(&config);
        if !fakes.is_empty() {
            log::info!(
                "gpu: {} fake devices ({})",
                fakes.len(),
                fake::FAKE_GPUS_ENV
            );
            return fakes
                .into_iter()
                .map(|f| GpuDevice {
                    id: f.id.clone(),
                    bellperson_id: Some(f.bellperson_id.clone()),
                    name: f.id.clone(),
                    engine: Box::new(f),
                })
                .collect();
        }
        let found = match device::list(&Selection::from_config(&config)) {
            Ok(d) => d,
            Err(e) => {
                log::info!("gpu: no device ({e}); proving on the CPU");
                Vec::new()
            }
        };
        // The programs compile side by side: the first proof waits for the slowest, not the sum.
        std::thread::scope(|scope| {
            let handles: Vec<_> = found
                .iter()
                .map(|dev| {
                    let fft = scope.spawn(move || {
                        let kernel = FftKernel::new(dev)?;
                        warmed(kernel.warm_up(), dev, "FFT")?;
                        Ok(kernel)
                    });
                    let msm = scope.spawn(move || {
                        let kernel = MultiexpKernel::new(dev)?;
                        warmed(kernel.warm_up(), dev, "multiexp")?;
                        Ok(kernel)
                    });
                    (dev, fft, msm)
                })
                .collect();
            let mut devices = Vec::new();
            for (dev, fft, msm) in handles {
                let fft = match join(fft) {
                    Ok(k) => Some(k),
                    Err(e) => {
                        log::warn!("gpu: {} unusable for FFTs ({e})", dev.name);
                        None
                    }
                };
                match join(msm) {
                    Ok(multiexp) => {
                        log::info!("gpu: using {} ({})", dev.name, dev.id);
                        devices.push(GpuDevice {
                            id: dev.id.clone(),
                            bellperson_id: dev.bellperson_id.clone(),
                            name: dev.name.clone(),
                            engine: Box::new(OpenClEngine {
                                name: dev.name.clone(),
                                multiexp,
                                fft,
                            }),
                        });
                    }
                    Err(e) => log::warn!("gpu: {} unusable ({e})", dev.name),
                }
            }
            devices
        })
    })
}

/// Starts [`devices`] on a thread of its own unless it has run: the prover calls this before
/// witness synthesis, so that a process's first proof finds its devices, contexts and programs
/// (about 0.36 s from the disk cache on the H200) ready instead of waiting for them afterwards.
/// Whoever needs the devices first still waits for that one initialisation.
pub fn ready_in_background() {
    if DEVICES.get().is_some() {
        return;
    }
    let spawned = std::thread::Builder::new()
        .name("gpu-ready".into())
        .spawn(|| {
            devices();
        });
    if let Err(e) = spawned {
        log::debug!("gpu: devices not readied in the background ({e})");
    }
}

/// The ids of the devices of this process, for [`super::locks::status`].
pub fn device_ids() -> Vec<String> {
    devices().iter().map(|d| d.id.clone()).collect()
}

/// The outcome of a kernel's warm-up: a wrong result makes the device unusable; any other
/// failure (its memory taken by another process, say) only costs the first call the warm-up's
/// time, so it is logged and the device kept.
fn warmed(result: Result<(), GpuError>, dev: &device::Device, what: &str) -> Result<(), GpuError> {
    match result {
        Err(e @ GpuError::WrongResult(_)) => Err(e),
        Err(e) => {
            log::warn!("gpu: {} {what} warm-up failed ({e}); kept", dev.name);
            Ok(())
        }
        Ok(()) => Ok(()),
    }
}

fn join<T>(handle: std::thread::ScopedJoinHandle<'_, Result<T, GpuError>>) -> Result<T, GpuError> {
    handle
        .join()
        .map_err(|_| GpuError::Ocl("a kernel build thread panicked".into()))?
}

/// How a run of chunks ending at `chunk_ends` is cut into pieces of about `piece_terms` terms:
/// for each piece, the number of chunks up to and including it. Pieces end at chunk ends (a
/// stopped call keeps whole chunks), are as equal as the chunks allow (a last piece of one
/// chunk would pay a whole piece's fixed steps), and are one chunk each when chunks are larger
/// than `piece_terms`.
fn pieces_of_chunks(chunk_ends: &[usize], piece_terms: usize) -> Vec<usize> {
    let Some(&total) = chunk_ends.last() else {
        return Vec::new();
    };
    let count = total
        .div_ceil(piece_terms.max(1))
        .clamp(1, chunk_ends.len());
    let mut cuts = Vec::with_capacity(count);
    for i in 1..=count {
        let target = (total as u128 * i as u128 / count as u128) as usize;
        let after = cuts.last().copied().unwrap_or(0);
        // The first chunk end at or past the target, after the previous cut.
        let at = after + chunk_ends[after..].partition_point(|&end| end < target);
        let at = (at + 1).min(chunk_ends.len());
        if at > after {
            cuts.push(at);
        }
    }
    if cuts.last() != Some(&chunk_ends.len()) {
        cuts.push(chunk_ends.len());
    }
    cuts
}

#[cfg(test)]
mod tests {
    use super::pieces_of_chunks;

    /// The piece ends for chunks of `chunk` terms up to `n`.
    fn cut(n: usize, chunk: usize, piece: usize) -> Vec<usize> {
        let ends: Vec<usize> = (1..=n.div_ceil(chunk))
            .map(|i| (i * chunk).min(n))
            .collect();
        pieces_of_chunks(&ends, piece)
            .iter()
            .map(|&c| ends[c - 1])
            .collect()
    }

    #[test]
    fn pieces_are_whole_chunks_and_about_equal() {
        // 199 chunks of 2^15 in pieces of 2^22 (128 chunks): two pieces of 100 and 99 chunks,
        // not 128 and 71.
        assert_eq!(cut(199 << 15, 1 << 15, 1 << 22), [100 << 15, 199 << 15]);
        // 129 chunks: not 128 and a piece of one chunk.
        assert_eq!(cut(129 << 15, 1 << 15, 1 << 22), [65 << 15, 129 << 15]);
        // A run smaller than a piece is one piece; chunks larger than a piece are one each.
        assert_eq!(cut(1000, 300, 4096), [1000]);
        assert_eq!(cut(1000, 300, 1), [300, 600, 900, 1000]);
        assert!(pieces_of_chunks(&[], 10).is_empty());
        // Everywhere: increasing, covering the run, each piece within one chunk of the target.
        for (n, chunk, piece) in [(12345, 100, 1000), (1 << 20, 1 << 15, 1 << 18), (77, 7, 20)] {
            let ends = cut(n, chunk, piece);
            assert_eq!(ends.last(), Some(&n));
            let mut start = 0;
            for &end in &ends {
                assert!(
                    end > start && end - start <= piece + chunk,
                    "{n} {chunk} {piece}: {ends:?}"
                );
                start = end;
            }
        }
    }
}
