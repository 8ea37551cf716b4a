//! The transform's steps on values already on the device: the power tables, the bit reversal and
//! radix rounds, the scalings and shifts to and from a coset.

use super::{DeviceValues, FftKernel, PowerTable, REVERSAL_TILE_BITS};
use crate::gpu::buffer::PhaseTimer;
use crate::gpu::error::GpuError;
use blstrs::Scalar;
use ff::Field;

impl FftKernel {
    /// `c x^e` for `e < 2^bits` as split tables on the device (the factor `c` in the low table).
    pub(super) fn power_table(
        &self,
        x: Scalar,
        c: Scalar,
        bits: u32,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<PowerTable<'_>, GpuError> {
        let lo_bits = bits.div_ceil(2);
        let powers = |first: Scalar, base: Scalar, count: usize| {
            let mut v = Vec::with_capacity(count);
            let mut p = first;
            for _ in 0..count {
                v.push(p);
                p *= base;
            }
            v
        };
        let lo = powers(c, x, 1 << lo_bits);
        let hi = powers(
            Scalar::ONE,
            x.pow_vartime([1u64 << lo_bits]),
            1 << (bits - lo_bits),
        );
        Ok(PowerTable {
            lo: self.upload(&lo, lo.len(), interrupt)?,
            hi: self.upload(&hi, hi.len(), interrupt)?,
            lo_bits,
            bits,
        })
    }

    /// The twiddles `omega^e`, `e < n / 2`, of a transform of `n = 2^log_n` values.
    pub(super) fn twiddles(
        &self,
        omega: Scalar,
        log_n: u32,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<PowerTable<'_>, GpuError> {
        self.power_table(omega, Scalar::ONE, log_n.saturating_sub(1), interrupt)
    }

    /// The transform in place with the `twiddles` of its domain, without scaling.
    pub(super) fn transform(
        &self,
        data: &DeviceValues,
        log_n: u32,
        twiddles: &PowerTable,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        let mut untimed = PhaseTimer::off();
        self.transform_timed(data, log_n, twiddles, interrupt, &mut untimed)
    }

    /// [`FftKernel::transform`] marking each launch in `phases`.
    pub(super) fn transform_timed(
        &self,
        data: &DeviceValues,
        log_n: u32,
        twiddles: &PowerTable,
        interrupt: &dyn Fn() -> bool,
        phases: &mut PhaseTimer,
    ) -> Result<(), GpuError> {
        if log_n == 0 {
            return Ok(());
        }
        if twiddles.bits + 1 < log_n {
            return Err(GpuError::InvalidInput(format!(
                "twiddles of 2^{} values for a transform of 2^{log_n}",
                twiddles.bits + 1
            )));
        }
        let n = 1usize << log_n;
        let launch_values = self
            .launch_values
            .load(std::sync::atomic::Ordering::Relaxed);
        if self.tiled_reversal && log_n >= 2 * REVERSAL_TILE_BITS {
            let tile = 1 << (2 * REVERSAL_TILE_BITS);
            for (offset, groups) in slices(n / tile, launch_values / tile) {
                let kernel = self
                    .kernel("Fr_bit_reverse_tiles", groups * tile, Some(tile))?
                    .arg(&**data)
                    .arg(log_n)
                    .arg(offset)
                    .build()?;
                self.launch(&kernel, interrupt)?;
            }
        } else {
            let kernel = self
                .kernel("Fr_bit_reverse", n, None)?
                .arg(&**data)
                .arg(log_n)
                .build()?;
            self.launch(&kernel, interrupt)?;
        }
        phases.mark(&self.program.queue, "bit reversal")?;
        // The rounds spread evenly over the fewest launches: each launch's work-groups hold
        // 2^(deg - 1) work-items, and filled greedily (8, 8, 8, 1 at 2^25) the last launch ran
        // in groups of one work-item.
        let launches = log_n.div_ceil(self.max_deg);
        let mut first = 0;
        for launch in 0..launches {
            let deg = (log_n - first).div_ceil(launches - launch);
            let items = 1usize << (deg - 1);
            for (offset, groups) in slices(n >> deg, launch_values >> deg) {
                let kernel = self
                    .kernel("Fr_radix_rounds", groups * items, Some(items))?
                    .arg(&**data)
                    .arg(&*twiddles.lo)
                    .arg(&*twiddles.hi)
                    .arg(twiddles.lo_bits)
                    .arg(log_n)
                    .arg(first)
                    .arg(deg)
                    .arg(offset)
                    .build()?;
                self.launch(&kernel, interrupt)?;
            }
            phases.mark(&self.program.queue, "rounds")?;
            first += deg;
        }
        Ok(())
    }

    pub(super) fn scale(
        &self,
        data: &DeviceValues,
        n: usize,
        c: Scalar,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        let constant = self.upload(&[c], 1, interrupt)?;
        let kernel = self
            .kernel("Fr_scale", n, None)?
            .arg(&**data)
            .arg(&*constant)
            .arg(n as u32)
            .build()?;
        self.launch(&kernel, interrupt)
    }

    /// `a[i] *= table[i]`, for a table of `c g^i`: a shift to (or from) the coset `g * domain`
    /// with a scaling folded in.
    pub(super) fn distribute_powers(
        &self,
        data: &DeviceValues,
        log_n: u32,
        table: &PowerTable,
        interrupt: &dyn Fn() -> bool,
    ) -> Result<(), GpuError> {
        if table.bits < log_n {
            return Err(GpuError::InvalidInput(format!(
                "powers of 2^{} values for 2^{log_n}",
                table.bits
            )));
        }
        let n = 1usize << log_n;
        let kernel = self
            .kernel("Fr_distribute_powers", n, None)?
            .arg(&**data)
            .arg(&*table.lo)
            .arg(&*table.hi)
            .arg(table.lo_bits)
            .arg(n as u32)
            .build()?;
        self.launch(&kernel, interrupt)
    }
}

/// `groups` work-groups in launches of at most `per_launch` (at least one): each launch's first
/// group (the kernel's `group_offset`) and its number of groups.
fn slices(groups: usize, per_launch: usize) -> impl Iterator<Item = (u32, usize)> {
    let per_launch = per_launch.max(1);
    (0..groups)
        .step_by(per_launch)
        .map(move |first| (first as u32, per_launch.min(groups - first)))
}

#[cfg(test)]
mod tests {
    use super::slices;

    #[test]
    fn slices_cover_the_groups_once_in_order() {
        assert_eq!(slices(10, 4).collect::<Vec<_>>(), [(0, 4), (4, 4), (8, 2)]);
        assert_eq!(slices(8, 8).collect::<Vec<_>>(), [(0, 8)]);
        assert_eq!(slices(3, 0).collect::<Vec<_>>(), [(0, 1), (1, 1), (2, 1)]);
        assert_eq!(slices(0, 4).count(), 0);
    }
}
