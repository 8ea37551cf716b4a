//! Bases kept on a device between the multiexp calls of one claim ([`ResidentBases`]): a batch of
//! proofs over one parameter set uploads each query's bases once while it holds the device, not
//! once per proof. A piece whose bases are there is a copy on the device instead of an upload
//! (and, for a mapped file, instead of a read and a decode).
//!
//! Invariants:
//! - A query is known by where its points lie in the host's memory (or in the mapping) and how
//!   many there are ([`QueryKey`]). That is safe only while the points cannot move or change:
//!   the store is emptied whenever its device is released (the scheduler's `LockedKernel` frees
//!   it before the lock goes), and a claim lives inside one batch, which borrows its parameters
//!   for the whole batch.
//! - A range is marked present only once the copy into the resident buffer is enqueued on the
//!   transfer queue, after the piece's upload (and decode) on that same in-order queue; a later
//!   copy out of it is enqueued on that queue too, so it reads what was written.
//! - The store never holds more than the call's budget: a query that does not fit is not kept
//!   (its pieces go up every time, as without a store).

use std::ops::Range;

/// A query's bases, by the address of its first point (in memory, or its encoding in a mapped
/// file), their number, and their group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryKey {
    /// The group's kernel prefix (`G1`, `G2`).
    pub group: &'static str,
    /// Where point 0 of the query lies.
    pub address: usize,
    /// Points in the query.
    pub len: usize,
}

/// What a multiexp call needs to keep its bases on the device: the query its run belongs to,
/// where the run starts in it, and how many bytes of device memory kept bases may take in all.
#[derive(Clone, Copy, Debug)]
pub struct KeepOnDevice {
    /// The whole query.
    pub query: QueryKey,
    /// Index in the query of the call's first base.
    pub offset: usize,
    /// The most bytes the device's kept bases may take (those of other queries included).
    pub budget: u64,
}

/// Disjoint, sorted, merged ranges of a query's points.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PresentRanges(Vec<Range<usize>>);

impl PresentRanges {
    /// Whether every point of `range` is present.
    pub fn contains(&self, range: &Range<usize>) -> bool {
        if range.is_empty() {
            return true;
        }
        // The last range starting at or before `range.start`.
        let i = self.0.partition_point(|r| r.start <= range.start);
        i > 0 && self.0[i - 1].end >= range.end
    }

    /// Marks `range` present, merging it with the ranges it touches.
    pub fn insert(&mut self, range: Range<usize>) {
        if range.is_empty() {
            return;
        }
        let first = self.0.partition_point(|r| r.end < range.start);
        let last = self.0.partition_point(|r| r.start <= range.end);
        let mut merged = range;
        if first < last {
            merged.start = merged.start.min(self.0[first].start);
            merged.end = merged.end.max(self.0[last - 1].end);
        }
        self.0.splice(first..last, std::iter::once(merged));
    }
}

/// One kept query: its device buffer (whatever the engine keeps: an OpenCL buffer, or nothing
/// for a fake device), its size, and the ranges written into it.
#[derive(Debug)]
struct Kept<B> {
    key: QueryKey,
    buffer: B,
    bytes: u64,
    present: PresentRanges,
}

/// The bases a device keeps for the claim that holds it.
#[derive(Debug)]
pub struct ResidentBases<B> {
    kept: Vec<Kept<B>>,
}

impl<B> Default for ResidentBases<B> {
    fn default() -> Self {
        ResidentBases { kept: Vec::new() }
    }
}

impl<B> ResidentBases<B> {
    /// The buffer of `key` if every point of `range` (indices in the query) is in it.
    pub fn holding(&self, key: &QueryKey, range: &Range<usize>) -> Option<&B> {
        self.kept
            .iter()
            .find(|k| k.key == *key && k.present.contains(range))
            .map(|k| &k.buffer)
    }

    /// The buffer kept for `key`, made by `make` (given the bytes it must hold) when there is
    /// none and `bytes` more fit in `budget`; `None` when it does not fit, or `make` failed.
    pub fn buffer_for(
        &mut self,
        key: &QueryKey,
        bytes: u64,
        budget: u64,
        make: impl FnOnce(u64) -> Option<B>,
    ) -> Option<&B> {
        let at = match self.kept.iter().position(|k| k.key == *key) {
            Some(at) => at,
            None => {
                if self.bytes().saturating_add(bytes) > budget {
                    return None;
                }
                let buffer = make(bytes)?;
                self.kept.push(Kept {
                    key: *key,
                    buffer,
                    bytes,
                    present: PresentRanges::default(),
                });
                self.kept.len() - 1
            }
        };
        Some(&self.kept[at].buffer)
    }

    /// Marks `range` of `key` present (its copy into the buffer enqueued).
    pub fn mark_present(&mut self, key: &QueryKey, range: Range<usize>) {
        if let Some(k) = self.kept.iter_mut().find(|k| k.key == *key) {
            k.present.insert(range);
        }
    }

    /// Bytes of device memory the kept buffers take.
    pub fn bytes(&self) -> u64 {
        self.kept.iter().map(|k| k.bytes).sum()
    }

    /// Drops every kept buffer; returns the bytes they took.
    pub fn clear(&mut self) -> u64 {
        let bytes = self.bytes();
        self.kept.clear();
        bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ranges(r: &PresentRanges) -> Vec<Range<usize>> {
        r.0.clone()
    }

    #[test]
    fn present_ranges_merge_and_answer_containment() {
        let mut p = PresentRanges::default();
        assert!(p.contains(&(3..3)));
        assert!(!p.contains(&(0..1)));
        p.insert(10..20);
        p.insert(30..40);
        assert_eq!(ranges(&p), [10..20, 30..40]);
        assert!(p.contains(&(10..20)) && p.contains(&(12..15)) && p.contains(&(30..40)));
        assert!(!p.contains(&(9..12)) && !p.contains(&(15..31)) && !p.contains(&(39..41)));
        // Touching ranges merge; a range covering several swallows them.
        p.insert(20..25);
        assert_eq!(ranges(&p), [10..25, 30..40]);
        p.insert(0..5);
        p.insert(5..10);
        assert_eq!(ranges(&p), [0..25, 30..40]);
        p.insert(24..31);
        assert_eq!(ranges(&p), vec![(0..40)]);
        p.insert(50..60);
        p.insert(45..70);
        assert_eq!(ranges(&p), [0..40, 45..70]);
        assert!(p.contains(&(0..40)) && !p.contains(&(0..41)) && p.contains(&(45..70)));
    }

    #[test]
    fn a_store_keeps_within_its_budget_and_forgets_on_clear() {
        let key = |address| QueryKey {
            group: "G1",
            address,
            len: 100,
        };
        let mut store = ResidentBases::<u32>::default();
        assert!(store.holding(&key(1), &(0..10)).is_none());
        assert_eq!(store.buffer_for(&key(1), 600, 1000, |_| Some(7)), Some(&7));
        // Not yet present: no piece of it can be copied.
        assert!(store.holding(&key(1), &(0..10)).is_none());
        store.mark_present(&key(1), 0..50);
        assert_eq!(store.holding(&key(1), &(10..50)), Some(&7));
        assert!(store.holding(&key(1), &(40..60)).is_none());
        // Another query at another address: over the budget, not kept; a failed make neither.
        assert!(store.buffer_for(&key(2), 600, 1000, |_| Some(8)).is_none());
        assert!(store.buffer_for(&key(2), 400, 1000, |_| None).is_none());
        assert_eq!(store.buffer_for(&key(2), 400, 1000, |_| Some(9)), Some(&9));
        // The same query again: its buffer, whatever the budget says now.
        assert_eq!(store.buffer_for(&key(1), 600, 0, |_| Some(0)), Some(&7));
        assert!(store.holding(&key(2), &(0..10)).is_none());
        assert_eq!(store.bytes(), 1000);
        assert_eq!(store.clear(), 1000);
        assert_eq!(store.bytes(), 0);
        assert!(store.holding(&key(1), &(10..50)).is_none());
    }
}
