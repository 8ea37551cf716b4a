//! The CPU's share of a multiexp split with devices: which chunks the CPU takes while devices
//! run, the chunk computed on a thread of its own while the prover tries for devices, and when a
//! device that came back takes the chunk over.

use crate::bases::Bases;
use crate::gpu::multiexp::GpuCurve;
use crate::multicore::{self, Pool};
use crate::multiexp::{multiexp_on_until, ScalarRepr};
use crate::priority::Priority;
use group::Group;
use std::collections::VecDeque;
use std::ops::Range;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// The CPU takes a chunk only while more than this many per running device worker are queued.
pub(super) const CPU_SHARE_GUARD: usize = 2;

/// How often a prover computing a CPU chunk of a multiexp tries for the devices it lacks.
pub(super) const RETURN_STEP: Duration = Duration::from_millis(2);

/// A queue the running devices finish within this is theirs alone while the CPU's speed is
/// unknown ([`cpu_takes`]).
pub(super) const DEVICES_ALONE: Duration = Duration::from_millis(50);

/// Whether the CPU takes the chunk at the back of `q` while `running` device workers take from
/// the front. With no worker, always. With both speeds measured (`rates`: device, CPU), only when
/// the devices would still be busy with the rest of the queue when the CPU is done with that
/// chunk: a GPU many times faster than the CPU otherwise waits at the end for the CPU's chunk,
/// and the proof is slower for the help. Before that, while more than [`CPU_SHARE_GUARD`] chunks
/// per worker are queued, which lets the CPU measure itself, unless the devices' measured speed
/// says they finish the whole queue within [`DEVICES_ALONE`]. A CPU chunk taken there would be
/// given up when the devices are done, so the CPU's speed would never be measured and the next
/// proof's CPU would take a chunk again: without this exception, in each 2^16 high-priority proof
/// on the H200 a G2 chunk of the B query goes to the CPU and is given up 33-53 ms later, and its
/// host threads beside the device's upload make that query 36-64 ms long where the device alone
/// takes about 19 ms (docs/BENCHMARKS.md).
pub(super) fn cpu_takes(
    q: &VecDeque<Range<usize>>,
    running: usize,
    (device, cpu): (Option<f64>, Option<f64>),
) -> bool {
    if running == 0 {
        return true;
    }
    let device = device.filter(|d| *d > 0.0);
    match (q.back(), device, cpu) {
        (Some(back), Some(device), Some(cpu)) if cpu > 0.0 => {
            let rest = q.iter().map(|r| r.len()).sum::<usize>() - back.len();
            let devices_busy = rest as f64 / (device * running as f64);
            back.len() as f64 / cpu < devices_busy
        }
        _ => {
            let queued = q.iter().map(|r| r.len()).sum::<usize>();
            let devices_soon = device.is_some_and(|device| {
                (queued as f64 / (device * running as f64)) < DEVICES_ALONE.as_secs_f64()
            });
            q.len() > CPU_SHARE_GUARD * running && !devices_soon
        }
    }
}

/// Whether the CPU gives up its chunk of `terms` after `elapsed`: when the `held` devices would
/// finish it and the `queued` terms before the CPU finishes it alone (`rates`: device, CPU, in
/// terms per second; while the CPU's rate is unknown, when the queue is empty). The GPU is
/// many times faster than the CPU, so a device that comes back while the CPU's chunk has most of
/// its way to go would otherwise wait idle at the multiexp's end (or the proof waits for the
/// chunk): the chunk's finished tasks are lost, not the proof's time.
pub(super) fn give_up_cpu_chunk(
    queued: usize,
    terms: usize,
    elapsed: Duration,
    held: usize,
    (device, cpu): (Option<f64>, Option<f64>),
) -> bool {
    let Some(device) = device.filter(|d| *d > 0.0) else {
        return false;
    };
    if held == 0 {
        return false;
    }
    let devices_need = (queued + terms) as f64 / (device * held as f64);
    match cpu.filter(|c| *c > 0.0) {
        Some(cpu) => devices_need < terms as f64 / cpu - elapsed.as_secs_f64(),
        // Unmeasured, the CPU could take the chunk back at once (`cpu_takes`' guard): given
        // up only when the devices have nothing else to do.
        None => queued == 0,
    }
}

/// One chunk on the CPU, computed on a thread of its own while this thread calls `between` every
/// [`RETURN_STEP`] with the time so far; once `between` says to give the chunk up, `give_up` is
/// called at once (the caller puts the chunk back in the queue, where a device takes it), the
/// chunk's tasks not yet begun are skipped, those running stop within
/// [`crate::multiexp::STOP_EVERY`] terms, and the result is `None`, even if the chunk finished
/// meanwhile (it is the device's now). The chunk goes back before its thread has stopped: the
/// thread runs on the lowest priority's pool, under the idle scheduling policy, and on a busy
/// host it may take a while to see the request. With no thread to be had, the chunk is computed
/// here. Mapped bases are decoded first, on the same pool; a point that is not on the curve is
/// the error, its message naming it.
pub(super) fn cpu_chunk<G: GpuCurve>(
    bases: Bases<'_, G>,
    scalars: &[ScalarRepr],
    range: Range<usize>,
    pool: Pool,
    mut between: impl FnMut(Duration) -> bool,
    give_up: impl FnOnce(),
) -> Result<Option<G::Curve>, String> {
    let started = Instant::now();
    let stop = AtomicBool::new(false);
    std::thread::scope(|inner| {
        let (done, result) = std::sync::mpsc::channel();
        let (stop_ref, range_ref) = (&stop, range.clone());
        let cpu = std::thread::Builder::new()
            .name("groth16-cpu-chunk".into())
            .spawn_scoped(inner, move || {
                let slowed =
                    Instant::now() + crate::gpu::test_hooks::cpu_chunk_delay(range_ref.len(), pool);
                while Instant::now() < slowed {
                    if stop_ref.load(Ordering::Relaxed) {
                        let _ = done.send(Ok(None));
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
                let points =
                    match multicore::install_on(pool, || bases.range(range_ref.clone()).points()) {
                        Ok(points) => points,
                        Err(message) => {
                            let _ = done.send(Err(message));
                            return;
                        }
                    };
                let part = multiexp_on_until(pool, &points, &scalars[range_ref], stop_ref);
                let _ = done.send(Ok(part.unwrap_or_else(|_| Some(G::Curve::identity()))));
            });
        let Ok(cpu) = cpu else {
            return cpu_part(bases, scalars, range, pool).map(Some);
        };
        let mut give_up = Some(give_up);
        loop {
            match result.recv_timeout(RETURN_STEP) {
                // Given up, the chunk is a device's: so is what its bases hold.
                Ok(part) => return if give_up.is_some() { part } else { Ok(None) },
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                    if give_up.is_some() && between(started.elapsed()) {
                        stop.store(true, Ordering::Relaxed);
                        if let Some(put_back) = give_up.take() {
                            put_back();
                        }
                    }
                }
                // The chunk's thread panicked: so does this one.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => match cpu.join() {
                    Err(panic) => std::panic::resume_unwind(panic),
                    Ok(()) => unreachable!("a chunk's thread ended unsent"),
                },
            }
        }
    })
}

/// One chunk on the CPU, on `pool` (mapped bases decoded there first: a point that is not on
/// the curve is the error); the lengths were checked by the caller.
pub(super) fn cpu_part<G: GpuCurve>(
    bases: Bases<'_, G>,
    scalars: &[ScalarRepr],
    range: Range<usize>,
    pool: Pool,
) -> Result<G::Curve, String> {
    let never = AtomicBool::new(false);
    let points = multicore::install_on(pool, || bases.range(range.clone()).points())?;
    Ok(multiexp_on_until(pool, &points, &scalars[range], &never)
        .ok()
        .flatten()
        .unwrap_or_else(G::Curve::identity))
}

/// The pool of a CPU chunk of a prover at `priority`: the lowest level's on lower-priority
/// threads, so that a higher prover's host work goes first; otherwise, with devices running
/// beside it, the smaller pool that leaves their host threads free.
pub(crate) fn cpu_pool(priority: Priority, beside_devices: bool) -> Pool {
    if priority == Priority::ALL[0] {
        Pool::Background
    } else if beside_devices {
        Pool::BesideDevices
    } else {
        Pool::Main
    }
}

#[cfg(test)]
mod tests {
    use super::{cpu_chunk, cpu_part, cpu_pool, cpu_takes, give_up_cpu_chunk};
    use crate::bases::Bases;
    use crate::multicore::Pool;
    use crate::multiexp::scalar_reprs;
    use crate::priority::Priority;
    use blstrs::{G1Affine, G1Projective, Scalar};
    use ff::Field;
    use group::Group;
    use std::collections::VecDeque;
    use std::ops::Range;
    use std::time::Duration;

    #[test]
    fn a_cpu_chunk_given_up_goes_back_at_once_and_returns_nothing() {
        // Enough terms that the chunk outlasts the first look (2 ms) on any machine.
        let n = 1 << 16;
        let bases = vec![G1Affine::from(G1Projective::generator()); n];
        let mut rng = rand::thread_rng();
        let scalars = scalar_reprs(&(0..n).map(|_| Scalar::random(&mut rng)).collect::<Vec<_>>());
        let given_back = std::cell::Cell::new(0);
        let part = cpu_chunk(
            Bases::from(&bases),
            &scalars,
            0..n,
            Pool::Main,
            |_| true,
            || given_back.set(given_back.get() + 1),
        );
        assert_eq!(part, Ok(None), "a chunk given up has no result");
        assert_eq!(given_back.get(), 1, "put back once, when given up");
        // Not given up: the sum, and nothing put back.
        let part = cpu_chunk(
            Bases::from(&bases[..64]),
            &scalars[..64],
            0..64,
            Pool::Main,
            |_| false,
            || given_back.set(given_back.get() + 1),
        );
        let whole = cpu_part(Bases::from(&bases), &scalars, 0..64, Pool::Main);
        assert_eq!(part, whole.map(Some));
        assert_eq!(given_back.get(), 1);
    }

    #[test]
    fn the_cpu_takes_a_chunk_only_when_it_ends_before_the_devices() {
        let q: VecDeque<Range<usize>> = (0..10).map(|i| i * 100..(i + 1) * 100).collect();
        // No device worker: the CPU takes everything.
        assert!(cpu_takes(&q, 0, (Some(1e9), Some(1.0))));
        // Unmeasured: more than two chunks per worker.
        assert!(cpu_takes(&q, 4, (None, None)));
        assert!(!cpu_takes(&q, 5, (None, Some(1e3))));
        // The CPU unmeasured, and the device would finish the 1000 terms in 10 ms: the queue is
        // the device's; in 100 ms, the CPU takes a chunk (and so measures itself).
        assert!(!cpu_takes(&q, 1, (Some(1e5), None)));
        assert!(cpu_takes(&q, 1, (Some(1e4), None)));
        // The whole queue counts, the CPU's chunk included: 1000 terms at 19000/s is 53 ms (the
        // other 900 alone would be 47).
        assert!(cpu_takes(&q, 1, (Some(1.9e4), None)));
        // Two workers at 15000/s finish it in 33 ms; one in 67 ms.
        assert!(!cpu_takes(&q, 2, (Some(1.5e4), None)));
        assert!(cpu_takes(&q, 1, (Some(1.5e4), None)));
        // One device at 1000 terms/s has 0.9 s of work besides the last chunk.
        assert!(cpu_takes(&q, 1, (Some(1000.0), Some(200.0)))); // CPU: 0.5 s
        assert!(!cpu_takes(&q, 1, (Some(1000.0), Some(100.0)))); // CPU: 1 s
        assert!(!cpu_takes(&q, 2, (Some(1000.0), Some(200.0)))); // devices: 0.45 s
    }

    #[test]
    fn a_cpu_chunk_is_given_up_only_for_devices_that_finish_it_sooner() {
        let ms = Duration::from_millis;
        // No device held, or none measured: the CPU goes on.
        assert!(!give_up_cpu_chunk(
            0,
            1000,
            ms(0),
            0,
            (Some(1e6), Some(1e3))
        ));
        assert!(!give_up_cpu_chunk(0, 1000, ms(0), 1, (None, Some(1e3))));
        // CPU at 1000 terms/s: 1 s for the chunk. A device at 10^4 terms/s needs 0.1 s for it
        // alone, 0.6 s with 5000 queued terms, 1.1 s with 10^4.
        assert!(give_up_cpu_chunk(
            0,
            1000,
            ms(100),
            1,
            (Some(1e4), Some(1e3))
        ));
        assert!(give_up_cpu_chunk(
            5000,
            1000,
            ms(100),
            1,
            (Some(1e4), Some(1e3))
        ));
        assert!(!give_up_cpu_chunk(
            10_000,
            1000,
            ms(100),
            1,
            (Some(1e4), Some(1e3))
        ));
        // ... two such devices need 0.55 s; nearly done, the CPU keeps its chunk.
        assert!(give_up_cpu_chunk(
            10_000,
            1000,
            ms(100),
            2,
            (Some(1e4), Some(1e3))
        ));
        assert!(!give_up_cpu_chunk(
            0,
            1000,
            ms(950),
            1,
            (Some(1e4), Some(1e3))
        ));
        // The CPU unmeasured: given up only when the devices have nothing else to do.
        assert!(give_up_cpu_chunk(0, 1000, ms(10), 1, (Some(1e4), None)));
        assert!(!give_up_cpu_chunk(1, 1000, ms(10), 1, (Some(1e4), None)));
    }

    #[test]
    fn the_lowest_level_computes_in_the_background_and_others_leave_devices_threads() {
        for beside in [false, true] {
            assert_eq!(cpu_pool(Priority::Low, beside), Pool::Background);
        }
        assert_eq!(cpu_pool(Priority::Normal, true), Pool::BesideDevices);
        assert_eq!(cpu_pool(Priority::High, true), Pool::BesideDevices);
        assert_eq!(cpu_pool(Priority::Normal, false), Pool::Main);
        assert_eq!(cpu_pool(Priority::High, false), Pool::Main);
    }
}
