//! A multiexp call in pieces ([`MultiexpKernel::multiexp_in_pieces`]): a thread uploads each
//! piece's scalars and bases while the device sums the one before, and the call keeps the
//! pieces it finished when it is stopped, so a preempted call loses only the piece in progress.

use super::launch::{kernel_builder, launch, read_u32s};
use super::resident::KeepOnDevice;
use super::{GpuCurve, MultiexpKernel};
use crate::bases::Bases;
use crate::gpu::buffer::{wait_interruptible, write_limbs, TrackedBuffer};
use crate::gpu::error::GpuError;
use crate::gpu::program::BuiltProgram;
use crate::gpu::staging::Staging;
use crate::multiexp::ScalarRepr;
use group::Group;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

/// What a call over pieces computed ([`MultiexpKernel::multiexp_in_pieces`]).
#[derive(Debug)]
pub struct PieceSums<C> {
    /// The sum of the terms of the first `done` pieces.
    pub sum: C,
    /// Pieces finished, counted from the first.
    pub done: usize,
    /// What stopped the call before its last piece (`None`: every piece is in `sum`).
    pub stopped: Option<GpuError>,
    /// When the last of the `done` pieces was finished (`None` while none is): a stopped call's
    /// device work after it was thrown away.
    pub finished_at: Option<Instant>,
    /// Pieces finished after a higher priority had asked for the device, as little of them was
    /// left (see `finish.rs`); pieces, also where `done` counts chunks.
    pub finished_on_request: usize,
    /// Bytes of bases that went up to the device in the call (pieces not summed included).
    pub bases_uploaded: u64,
}

impl<C: Group> PieceSums<C> {
    /// Nothing computed yet, nothing stopped.
    pub fn nothing() -> Self {
        PieceSums {
            sum: C::identity(),
            done: 0,
            stopped: None,
            finished_at: None,
            finished_on_request: 0,
            bases_uploaded: 0,
        }
    }

    /// A call refused or failed before its first piece.
    pub fn refused(e: GpuError) -> Self {
        PieceSums {
            stopped: Some(e),
            ..Self::nothing()
        }
    }

    /// The whole sum, or the error that stopped the call (finished pieces then count for
    /// nothing).
    pub fn into_result(self) -> Result<C, GpuError> {
        match self.stopped {
            None => Ok(self.sum),
            Some(e) => Err(e),
        }
    }
}

/// `words` as their bytes, for a file read straight into the staging memory.
#[allow(unsafe_code)]
fn as_bytes(words: &mut [u32]) -> &mut [u8] {
    // SAFETY: the byte view covers exactly the memory of `words`, which it borrows mutably for
    // its whole life; `u8` has no alignment to keep, and every byte pattern is a valid `u32`.
    unsafe { std::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), words.len() * 4) }
}

/// A piece's bases on the device, and whether they went up from the host (rather than being
/// copied from the bases the device keeps).
type PieceBases<'k> = (TrackedBuffer<'k>, bool);

/// Adds the bytes of bases that went up from the host to `total`; the buffer alone stays.
fn count_upload<'k>(
    up: Result<PieceBases<'k>, GpuError>,
    total: &AtomicU64,
) -> Result<TrackedBuffer<'k>, GpuError> {
    up.map(|(buffer, uploaded)| {
        if uploaded {
            total.fetch_add(4 * buffer.len() as u64, Ordering::Relaxed);
        }
        buffer
    })
}

/// The lock of the kept bases, also after a thread panicked holding it (the store is then at
/// worst missing a range, which only costs an upload).
fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// The ranges of the pieces that end at `ends` (the first from 0). An end not past the one
/// before makes an empty range.
pub fn piece_ranges(ends: &[usize]) -> impl Iterator<Item = std::ops::Range<usize>> + '_ {
    std::iter::once(0)
        .chain(ends.iter().copied())
        .zip(ends.iter().copied())
        .map(|(start, end)| start..end)
}

/// Ends of the pieces of `n` terms, at most `piece` terms each and as equal as may be (a
/// remainder of a few terms would be a piece of its own otherwise).
pub fn piece_ends(n: usize, piece: usize) -> Vec<usize> {
    let count = n.div_ceil(piece.max(1));
    (1..=count).map(|i| n * i / count).collect()
}

impl MultiexpKernel {
    /// The device's part of `run`: a thread uploads each piece's scalars, then its bases, on the
    /// transfer queue, at most two pieces ahead of the sums (a piece's inputs are freed when it
    /// is summed, which lets the thread start the one after the next), while this thread sorts
    /// and sums each piece as its inputs arrive. With `keep`, the bases are kept on the device
    /// for later calls over the same query ([`super::resident`]).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn sum_pieces<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        bases: Bases<'_, G>,
        scalars: &[ScalarRepr],
        ends: &[usize],
        interrupt: &dyn Fn() -> bool,
        bounded: bool,
        keep: Option<KeepOnDevice>,
    ) -> PieceSums<G::Curve> {
        let ranges: Vec<std::ops::Range<usize>> = piece_ranges(ends).collect();
        let mut out = PieceSums::nothing();
        // `stop` ends the uploads early (the call failed, was interrupted, or is done).
        let stop = AtomicBool::new(false);
        let (credit, credits) = std::sync::mpsc::channel::<()>();
        let (scalars_sent, scalars_in) = std::sync::mpsc::channel();
        let (bases_sent, bases_in) = std::sync::mpsc::channel();
        let bases_uploaded = AtomicU64::new(0);
        std::thread::scope(|scope| {
            let uploader = std::thread::Builder::new()
                .name("gpu-upload".into())
                .spawn_scoped(scope, || {
                    self.upload_pieces(
                        built,
                        bases,
                        scalars,
                        &ranges,
                        keep,
                        credits,
                        scalars_sent,
                        bases_sent,
                        &stop,
                        &bases_uploaded,
                    )
                });
            let uploader = match uploader {
                Ok(uploader) => uploader,
                Err(e) => {
                    out.stopped = Some(GpuError::Ocl(format!(
                        "cannot start the upload thread: {e}"
                    )));
                    return;
                }
            };
            // Two pieces may go up at once: the first, and the next while it is summed.
            let _ = credit.send(());
            let _ = credit.send(());
            for range in &ranges {
                let piece = self.sum_piece::<G>(
                    built,
                    range.len(),
                    &scalars_in,
                    &bases_in,
                    interrupt,
                    bounded,
                );
                match piece {
                    Ok((sum, on_request)) => {
                        out.sum += sum;
                        out.done += 1;
                        out.finished_on_request += usize::from(on_request);
                        out.finished_at = Some(Instant::now());
                        self.pieces_summed.fetch_add(1, Ordering::Relaxed);
                        // Even after a piece finished on request: the call usually stops at
                        // the next piece, but not if the request went away meanwhile (its
                        // prover was killed), and a credit missing then would leave the rest
                        // of the call one upload behind its sums.
                        let _ = credit.send(());
                    }
                    Err(e) => {
                        out.stopped = Some(e);
                        break;
                    }
                }
            }
            stop.store(true, Ordering::Relaxed);
            drop(credit);
            // Inputs that arrived for pieces not summed are dropped (freed) here, before the
            // call returns and the device may be released; the thread drops the rest itself.
            drop((scalars_in, bases_in));
            // A device error of the uploads is what stopped the call, even when this thread saw
            // an interruption first (the sort goes on while the bases go up): reported as an
            // interruption, the device would be handed on instead of being marked failed.
            let upload_error = uploader.join().unwrap_or_else(|_| {
                Some(GpuError::Ocl(
                    "the thread uploading the terms panicked".into(),
                ))
            });
            if let Some(e) = upload_error {
                if matches!(out.stopped, Some(GpuError::Interrupted)) {
                    out.stopped = Some(e);
                }
            }
        });
        out.bases_uploaded = bases_uploaded.into_inner();
        out
    }

    /// The upload thread of `sum_pieces`: for each piece, after a credit, its scalars and its
    /// bases, each sent to the summing thread as it arrives (or the error that stopped it). The
    /// first piece's scalars go up on the main queue, which is idle then, beside its bases on
    /// the transfer queue (one after the other, a 2^22-term G1 call takes 2-7% longer); later
    /// pieces' inputs go up one after the other on the transfer queue, as the main queue is
    /// busy summing. Returns the first device error of an upload (not an interruption), which
    /// the call reports rather than an interruption the summing thread may have seen first.
    #[allow(clippy::too_many_arguments)]
    fn upload_pieces<'k, G: GpuCurve>(
        &'k self,
        built: &BuiltProgram,
        bases: Bases<'_, G>,
        scalars: &[ScalarRepr],
        ranges: &[std::ops::Range<usize>],
        keep: Option<KeepOnDevice>,
        credits: std::sync::mpsc::Receiver<()>,
        scalars_sent: std::sync::mpsc::Sender<Result<TrackedBuffer<'k>, GpuError>>,
        bases_sent: std::sync::mpsc::Sender<Result<TrackedBuffer<'k>, GpuError>>,
        stop: &AtomicBool,
        bases_uploaded: &AtomicU64,
    ) -> Option<GpuError> {
        let stopped = || stop.load(Ordering::Relaxed);
        // The device error of an upload, if any (an interruption is not one).
        let device_error = |up: &Result<TrackedBuffer<'k>, GpuError>| match up {
            Err(e) if !matches!(e, GpuError::Interrupted) => Some(e.clone()),
            _ => None,
        };
        for (i, range) in ranges.iter().enumerate() {
            if credits.recv().is_err() || stopped() {
                return None;
            }
            let (piece_scalars, piece_bases) =
                (&scalars[range.clone()], bases.range(range.clone()));
            // Where the piece lies in its query, for the bases the device keeps.
            let kept = keep.map(|k| (k, k.offset + range.start..k.offset + range.end));
            let (scalars_error, bases_up) = if i == 0 {
                std::thread::scope(|scope| {
                    let on_main = std::thread::Builder::new()
                        .name("gpu-upload-scalars".into())
                        .spawn_scoped(scope, || {
                            let up = self.upload_scalars(built, false, piece_scalars, &stopped);
                            let error = device_error(&up);
                            let failed = up.is_err();
                            // Ended early (failed, or nobody to take it): no bases needed.
                            let ended = scalars_sent.send(up).is_err() || failed;
                            (ended, error)
                        });
                    let bases_up = count_upload(
                        self.upload_bases(built, piece_bases, kept, &stopped),
                        bases_uploaded,
                    );
                    let scalars_end = match on_main {
                        Ok(handle) => handle.join().unwrap_or_else(|_| {
                            (
                                true,
                                Some(GpuError::Ocl("the scalars' upload thread panicked".into())),
                            )
                        }),
                        Err(e) => {
                            let error = GpuError::Ocl(format!(
                                "cannot start the scalars' upload thread: {e}"
                            ));
                            let _ = scalars_sent.send(Err(error.clone()));
                            (true, Some(error))
                        }
                    };
                    (scalars_end, bases_up)
                })
            } else {
                let up = self.upload_scalars(built, true, piece_scalars, &stopped);
                let error = device_error(&up);
                let failed = up.is_err();
                if scalars_sent.send(up).is_err() || failed {
                    return error;
                }
                let bases_up = count_upload(
                    self.upload_bases(built, piece_bases, kept, &stopped),
                    bases_uploaded,
                );
                ((false, None), bases_up)
            };
            let (scalars_ended, scalars_error) = scalars_error;
            let error = scalars_error.or_else(|| device_error(&bases_up));
            let failed = bases_up.is_err();
            if bases_sent.send(bases_up).is_err() || failed || scalars_ended {
                return error;
            }
        }
        None
    }

    /// `scalars` in a new device buffer, through the staging memory of the transfer queue or
    /// of the main queue. The limbs are written straight into the pinned memory, by the
    /// staging's own threads, not a rayon pool: the CPU's share of the same multiexp keeps the
    /// pools busy, and the device would wait behind it.
    fn upload_scalars(
        &self,
        built: &BuiltProgram,
        on_transfer_queue: bool,
        scalars: &[ScalarRepr],
        stopped: &dyn Fn() -> bool,
    ) -> Result<TrackedBuffer<'_>, GpuError> {
        let n = scalars.len();
        let buffer = TrackedBuffer::new(&built.queue, n * 8, None, &self.memory)?;
        let up = |staging: &mut Staging, queue: &ocl::Queue| {
            staging.upload(
                queue,
                &buffer,
                n * 8,
                8,
                &|start, out| {
                    for (slot, s) in out.chunks_exact_mut(8).zip(&scalars[start / 8..]) {
                        write_limbs(s.limbs(), slot);
                    }
                },
                stopped,
            )
        };
        if on_transfer_queue {
            built.with_transfer_staging(|staging| up(staging, &built.transfer_queue))?;
        } else {
            built.with_staging(|staging| up(staging, &built.queue))?;
        }
        Ok(buffer)
    }

    /// `bases` in a new device buffer, through the transfer queue's staging memory. Bases mapped
    /// from a parameter file go up as their encodings (as many bytes as the points) and are
    /// decoded on the device ([`MultiexpKernel::decode_on_device`]): the host reads them from the
    /// file straight into the staging memory (not through the mapping: no page faults), one copy
    /// made by the kernel, and the device puts their bytes in order. With `kept` (the call's
    /// [`KeepOnDevice`] and the piece's range in its query), bases the device keeps are copied
    /// there instead, and bases that went up are kept for later calls where the budget allows.
    /// The flag says whether the bases went up from the host.
    fn upload_bases<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        bases: Bases<'_, G>,
        kept: Option<(KeepOnDevice, std::ops::Range<usize>)>,
        stopped: &dyn Fn() -> bool,
    ) -> Result<PieceBases<'_>, GpuError> {
        let affine_limbs = 2 * G::COORD_LIMBS;
        let n = bases.len();
        let buffer = TrackedBuffer::new(&built.queue, n * affine_limbs, None, &self.memory)?;
        if self.fail_bases_upload.load(Ordering::Relaxed) {
            return Err(GpuError::Ocl(
                "injected failure of the bases' upload".into(),
            ));
        }
        if let Some((keep, at)) = &kept {
            if self.copy_kept(built, &buffer, keep, at, affine_limbs, stopped)? {
                return Ok((buffer, false));
            }
        }
        // Points in memory, or else a mapped file's encodings.
        let points = bases.as_slice();
        // The first read error of the fill threads; the upload then fails naming the points.
        let read_error: std::sync::Mutex<Option<std::io::Error>> = std::sync::Mutex::new(None);
        built.with_transfer_staging(|staging| {
            staging.upload(
                &built.transfer_queue,
                &buffer,
                n * affine_limbs,
                affine_limbs,
                &|start, out| {
                    let first = start / affine_limbs;
                    if let Some(points) = points {
                        for (slot, b) in out.chunks_exact_mut(affine_limbs).zip(&points[first..]) {
                            b.write_coords(slot);
                        }
                    } else {
                        let count = out.len() / affine_limbs;
                        if let Err(e) = bases.read_encodings(first..first + count, as_bytes(out)) {
                            let mut first_error =
                                read_error.lock().unwrap_or_else(|e| e.into_inner());
                            first_error.get_or_insert(e);
                        }
                    }
                },
                stopped,
            )
        })?;
        if let Some(e) = read_error.into_inner().unwrap_or_else(|e| e.into_inner()) {
            return Err(GpuError::InvalidBases(e.to_string()));
        }
        if points.is_none() {
            self.decode_on_device(built, &buffer, bases)?;
        }
        if let Some((keep, at)) = kept {
            self.keep_piece(built, &buffer, &keep, at, affine_limbs);
        }
        Ok((buffer, true))
    }

    /// Copies the bases of `at` (indices in `keep`'s query) into `to` from the bases this device
    /// keeps, if it keeps all of them; says whether it did.
    fn copy_kept(
        &self,
        built: &BuiltProgram,
        to: &TrackedBuffer<'_>,
        keep: &KeepOnDevice,
        at: &std::ops::Range<usize>,
        affine_limbs: usize,
        stopped: &dyn Fn() -> bool,
    ) -> Result<bool, GpuError> {
        let mut copied = ocl::Event::empty();
        {
            let store = lock(&self.resident);
            let Some(kept) = store.holding(&keep.query, at) else {
                return Ok(false);
            };
            kept.copy(&**to, Some(0), Some(at.len() * affine_limbs))
                .offset(at.start * affine_limbs)
                .queue(&built.transfer_queue)
                .enew(&mut copied)
                .enq()?;
        }
        wait_interruptible(&built.transfer_queue, &copied, stopped)?;
        Ok(true)
    }

    /// Keeps the bases of a piece just uploaded (in `piece`, indices `at` of `keep`'s query) on
    /// the device: copied into the query's buffer, made at the query's first piece if the
    /// budget allows. Enqueued on the transfer queue after the upload; a failure only costs
    /// later calls an upload, so it is logged and the call goes on.
    fn keep_piece(
        &self,
        built: &BuiltProgram,
        piece: &TrackedBuffer<'_>,
        keep: &KeepOnDevice,
        at: std::ops::Range<usize>,
        affine_limbs: usize,
    ) {
        let bytes = 4 * (keep.query.len * affine_limbs) as u64;
        let mut store = lock(&self.resident);
        let made = store.buffer_for(&keep.query, bytes, keep.budget, |bytes| {
            let made = ocl::Buffer::<u32>::builder()
                .queue(built.transfer_queue.clone())
                .len((bytes / 4) as usize)
                .build();
            match made {
                Ok(buffer) => {
                    self.memory.add(bytes);
                    log::debug!(
                        "gpu: keeping a {} query of {} points on {} ({bytes} bytes)",
                        keep.query.group,
                        keep.query.len,
                        self.device.name
                    );
                    Some(buffer)
                }
                Err(e) => {
                    log::debug!("gpu: bases not kept on {}: {e}", self.device.name);
                    None
                }
            }
        });
        let Some(kept) = made else {
            return;
        };
        let copied = piece
            .copy(
                kept,
                Some(at.start * affine_limbs),
                Some(at.len() * affine_limbs),
            )
            .queue(&built.transfer_queue)
            .enq();
        match copied {
            Ok(()) => store.mark_present(&keep.query, at),
            Err(e) => log::debug!("gpu: bases not kept on {}: {e}", self.device.name),
        }
    }

    /// Makes the encodings of `bases` in `buffer` points (`cl/decode.cl`), on the transfer queue
    /// after their upload; a point that is not valid is an error naming it
    /// ([`GpuError::InvalidBases`]).
    fn decode_on_device<G: GpuCurve>(
        &self,
        built: &BuiltProgram,
        buffer: &TrackedBuffer<'_>,
        bases: Bases<'_, G>,
    ) -> Result<(), GpuError> {
        let n = bases.len();
        let first_bad =
            TrackedBuffer::new(&built.transfer_queue, 1, Some(&[u32::MAX]), &self.memory)?;
        launch(
            &kernel_builder::<G>(built, "msm_decode_bases", n)
                .queue(built.transfer_queue.clone())
                .arg(&**buffer)
                .arg(n as u32)
                .arg(&*first_bad)
                .build()?,
        )?;
        match read_u32s(&built.transfer_queue, &first_bad, 0, 1)?.first() {
            Some(&bad) if bad != u32::MAX => Err(GpuError::InvalidBases(
                bases.invalid_point_message(bad as usize),
            )),
            _ => Ok(()),
        }
    }
}
