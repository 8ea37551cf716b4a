//! The host's share of a piece: the device's few points checked (each coordinate in the field,
//! each point on the curve), each window's points added, the windows shared among a few threads,
//! and the windows combined.

use super::curve::{GpuCurve, FQ_LIMBS};
use super::plan::Plan;
use crate::gpu::buffer::below;
use crate::gpu::error::GpuError;
use crate::gpu::source;
use group::Group;

/// The piece's sum from the device's points (`out`, as for [`combine_windows`]), each
/// coordinate first checked to be below P.
pub(super) fn host_sum<G: GpuCurve>(out: &[u32], plan: &Plan) -> Result<G::Curve, GpuError> {
    // blst takes reduced coordinates on trust: a faulty device's x + P would pass the curve
    // check (the products reduce it) and then break the additions.
    let p = source::fq().p;
    if !out.chunks_exact(FQ_LIMBS).all(|limbs| below(limbs, &p)) {
        return Err(GpuError::WrongResult(
            "a coordinate outside the field".into(),
        ));
    }
    combine_windows::<G>(out, plan)
}

/// Points back from the device at least this many to a call are checked and added on several
/// threads ([`combine_windows`]); fewer cost less than the threads' start.
const THREADED_HOST_SUM: usize = 128;

/// The call's sum from the device's points (`out`: Jacobian limbs, `plan.outputs_per_window()`
/// for each window from the lowest): each point checked to be on the curve and each window's
/// points added, the windows shared among a few threads, then the windows combined by doubling.
/// On one thread this takes 2.5-4.4 ms of each 2^16 proof's G2 piece (640 points) on the H200's
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

#[cfg(test)]
mod tests {
    use super::Plan;

    /// The device's points are checked and combined the same on one thread or several, and a
    /// point off the curve is an error wherever it is.
    #[test]
    fn the_host_combines_the_windows_and_checks_every_point() {
        use super::{combine_windows, GpuError, THREADED_HOST_SUM};
        use crate::gpu::buffer::write_limbs;
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
}
