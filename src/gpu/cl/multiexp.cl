// Multiexp by sorting terms into buckets (Pippenger with c-bit signed windows, c up to 22).
// Bucket k = w * B + b (B = 2^(c-1)) of window w holds the terms whose digit in w is +-(b + 1).
// The host drives six steps (src/gpu/multiexp/sort.rs and sums.rs; the folds' planning in fold.rs):
//   count     counts[k] = terms in bucket k (atomics);
//   offsets   offsets = exclusive prefix sums of counts (and their total), cursor = a copy, in
//             three small launches; then the few buckets long enough to need planned folds are
//             listed for the host (msm_long_buckets);
//   scatter   entries[offsets[k]..offsets[k + 1]] = the terms of bucket k (index | sign << 31);
//   segments  the entries cut into equal segments, one work-item each: a bucket that lies inside
//             one segment is summed there; the parts of a bucket that crosses segment borders go
//             to the segment's head (the bucket began before) or tail (it goes on after);
//   fold      each crossing bucket = its first segment's tail + the heads of the segments after:
//             one work-item per bucket (msm_fold_direct, which also gives empty buckets the
//             identity), except the few long ones, added at most FOLD at a time by each
//             work-item in as many passes as the longest needs (msm_fold; the host plans them);
//   reduce    per window, groups of buckets weighed by digit (running sums), then runs of groups
//             added, so that few points go back to the host.
// Every work-item does bounded work whatever the scalars are (equal scalars only add fold passes,
// one per factor of FOLD in their bucket's length), unlike a bucket array per work-item. The idea
// of sorting by bucket before accumulating is the one of the GPU multiexps in the ZPrize 2022
// entries and sppark; this code is our own.

// Bits [start, start + len) of a 256-bit scalar in 8 little-endian limbs; bits past 255 are 0.
uint PT(scalar_bits)(const uint *s, uint start, uint len) {
    uint limb = start / 32;
    uint offset = start % 32;
    if (limb >= 8) return 0;
    ulong v = s[limb];
    if (limb + 1 < 8) v |= ((ulong)s[limb + 1]) << 32;
    return (uint)((v >> offset) & ((1ul << len) - 1));
}

// The signed digit of window w: value_w + top_(w-1) - 2^c top_w (see src/multiexp.rs). Scalars
// are below r < 2^255, so the last window never carries out.
int PT(signed_digit)(const uint *s, uint w, uint c) {
    uint window, borrow;
    if (w == 0) {
        window = PT(scalar_bits)(s, 0, c);
        borrow = 0;
    } else {
        uint x = PT(scalar_bits)(s, c * w - 1, c + 1);
        window = x >> 1;
        borrow = x & 1;
    }
    uint top = window >> (c - 1);
    return (int)window + (int)borrow - (int)(top << c);
}

void PT(load_scalar)(__global const uint *scalars, uint i, uint *s) {
    for (uint l = 0; l < 8; l++) s[l] = scalars[8 * i + l];
}

__kernel void PT(msm_count)(__global const uint *scalars, __global uint *counts,
                            uint n, uint c, uint windows) {
    uint i = get_global_id(0);
    if (i >= n) return;
    uint s[8];
    PT(load_scalar)(scalars, i, s);
    uint buckets = 1u << (c - 1);
    for (uint w = 0; w < windows; w++) {
        int d = PT(signed_digit)(s, w, c);
        if (d != 0) atomic_inc(&counts[w * buckets + abs(d) - 1]);
    }
}

// The offsets in three launches (a downloaded count table, summed on the host and uploaded again,
// takes 2.6-2.9 ms of a 2^20-term call on the H200, with the device idle):
//   msm_block_sums     sums[b] = the counts of block b (SCAN_BLOCK buckets);
//   msm_scan_sums      one work-group turns the sums into exclusive prefix sums and writes the
//                      total after the last offset;
//   msm_block_offsets  offsets[k] = cursor[k] = the block's prefix + the counts before k in it.
// `counts` is `cursor` itself: each work-item reads a count before it overwrites it.
#define SCAN_BLOCK 64

__kernel void PT(msm_block_sums)(__global const uint *counts, __global uint *sums, uint buckets) {
    uint b = get_global_id(0);
    uint start = b * SCAN_BLOCK;
    if (start >= buckets) return;
    uint end = min(start + SCAN_BLOCK, buckets);
    uint sum = 0;
    for (uint k = start; k < end; k++) sum += counts[k];
    sums[b] = sum;
}

// Launched as one work-group of SCAN_ITEMS items (a power of two); each item scans a run of the
// block sums, and the runs' totals are scanned in local memory (Hillis and Steele).
#define SCAN_ITEMS 64

__kernel void PT(msm_scan_sums)(__global uint *sums, uint blocks, __global uint *offsets,
                                uint buckets) {
    __local uint part[SCAN_ITEMS];
    uint lid = get_local_id(0);
    uint per = (blocks + SCAN_ITEMS - 1) / SCAN_ITEMS;
    uint start = min(lid * per, blocks);
    uint end = min(start + per, blocks);
    uint own = 0;
    for (uint k = start; k < end; k++) own += sums[k];
    part[lid] = own;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint d = 1; d < SCAN_ITEMS; d <<= 1) {
        uint before = lid >= d ? part[lid - d] : 0;
        barrier(CLK_LOCAL_MEM_FENCE);
        part[lid] += before;
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint run = part[lid] - own;
    for (uint k = start; k < end; k++) {
        uint count = sums[k];
        sums[k] = run;
        run += count;
    }
    if (lid == SCAN_ITEMS - 1) offsets[buckets] = part[lid];
}

__kernel void PT(msm_block_offsets)(__global uint *cursor, __global const uint *sums,
                                    __global uint *offsets, uint buckets) {
    uint b = get_global_id(0);
    uint start = b * SCAN_BLOCK;
    if (start >= buckets) return;
    uint end = min(start + SCAN_BLOCK, buckets);
    uint run = sums[b];
    for (uint k = start; k < end; k++) {
        uint count = cursor[k];
        offsets[k] = run;
        cursor[k] = run;
        run += count;
    }
}

// The buckets whose entries cross more than `crossings` segment borders (2^shift entries a
// segment): msm_fold_direct leaves them to passes the host plans. Each is listed as (bucket, its
// first part, its end part) in the interleaved heads and tails, at a place taken from `count`;
// `capacity` bounds the list (the host sizes it so that it cannot fill, and checks).
__kernel void PT(msm_long_buckets)(__global const uint *offsets, uint buckets, uint shift,
                                   uint crossings, __global uint *count, __global uint *list,
                                   uint capacity) {
    uint k = get_global_id(0);
    if (k >= buckets) return;
    uint a = offsets[k];
    uint e = offsets[k + 1];
    if (a == e) return;
    uint first = a >> shift;
    uint last = (e - 1) >> shift;
    if (last - first > crossings) {
        uint at = atomic_inc(count);
        if (at < capacity) {
            list[3 * at] = k;
            list[3 * at + 1] = 2 * first + 1;
            list[3 * at + 2] = 2 * last + 1;
        }
    }
}

__kernel void PT(msm_scatter)(__global const uint *scalars, __global uint *cursor,
                              __global uint *entries, uint n, uint c, uint windows) {
    uint i = get_global_id(0);
    if (i >= n) return;
    uint s[8];
    PT(load_scalar)(scalars, i, s);
    uint buckets = 1u << (c - 1);
    for (uint w = 0; w < windows; w++) {
        int d = PT(signed_digit)(s, w, c);
        if (d != 0) {
            uint at = atomic_inc(&cursor[w * buckets + abs(d) - 1]);
            entries[at] = i | (d < 0 ? 0x80000000u : 0u);
        }
    }
}

// Work-item s (of segments first..end, one launch's share) sums entries
// [s * segment, min((s + 1) * segment, total)); its head goes to
// parts[2 s] and its tail to parts[2 s + 1], so that the parts of one crossing bucket (the tail of
// its first segment, then the heads of the segments after, with the identity tails of the segments
// inside it between them) are one range of `parts`.
__kernel void PT(msm_segments)(__global const CAT(POINT, _affine) *bases,
                               __global const uint *entries, __global const uint *offsets,
                               __global CAT(POINT, _xyzz) *bucket_sums,
                               __global CAT(POINT, _xyzz) *parts,
                               uint total, uint segment, uint bucket_count, uint first,
                               uint end_segment) {
    uint seg = first + get_global_id(0);
    if (seg >= end_segment || seg >= (total + segment - 1) / segment) return;
    uint start = seg * segment;
    uint end = min(start + segment, total);
    // The bucket holding entry `start`: offsets[k] <= start < offsets[k + 1].
    uint lo = 0, hi = bucket_count;
    while (hi - lo > 1) {
        uint mid = lo + (hi - lo) / 2;
        if (offsets[mid] <= start) lo = mid; else hi = mid;
    }
    uint k = lo;
    // One loop over the entries, not a loop per bucket: the work-items of a warp then step
    // together through their `segment` entries, where nested loops make the warp wait at each
    // bucket border for its longest run. At a border the sum so far is stored and restarted. The
    // head and tail go to memory when they are known rather than living in registers through
    // the loop: kept there, they make the kernel take all 255 registers (H200), and fewer
    // work-items fit on the device.
    // The running sum is kept in xyzz coordinates (ec.cl) and stored so: converted here, at
    // each border, the work-item's warp would wait for its conversion (seven products) at every
    // border of any of its 32 work-items, which costs what the cheaper addition saves (H200;
    // docs/BENCHMARKS.md). msm_from_xyzz converts them all afterwards, in step.
    bool head_open = offsets[k] < start;
    if (!head_open) parts[2 * seg] = PT(xyzz_identity)();
    uint border = offsets[k + 1];
    CAT(POINT, _xyzz) acc = PT(xyzz_identity)();
    for (uint j = start; j < end; j++) {
        if (j == border) {
            if (head_open) parts[2 * seg] = acc;
            else bucket_sums[k] = acc;
            head_open = false;
            acc = PT(xyzz_identity)();
            do k++; while (offsets[k + 1] <= j);
            border = offsets[k + 1];
        }
        uint e = entries[j];
        CAT(POINT, _affine) base = bases[e & 0x7fffffffu];
        if ((e >> 31) && !PT(affine_is_identity)(base)) base.y = FN(neg)(base.y);
        acc = PT(xyzz_add_affine)(acc, base);
    }
    // The last bucket touched: it began before (the head; then there is no tail), goes on after
    // (the tail), or lies inside.
    bool tail = !head_open && border > end;
    if (head_open) parts[2 * seg] = acc;
    else if (!tail) bucket_sums[k] = acc;
    parts[2 * seg + 1] = tail ? acc : PT(xyzz_identity)();
}

// out[i] = in[i] in Jacobian coordinates, for i < n: msm_segments' sums, for the folds and the
// weighing. Entries msm_segments did not write hold whatever the buffer held; the folds then
// overwrite them (msm_fold_direct gives every bucket that does not lie inside one segment its
// value) and nothing reads them before.
__kernel void PT(msm_from_xyzz)(__global const CAT(POINT, _xyzz) *in, __global POINT *out,
                                uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    out[i] = PT(from_xyzz)(in[i]);
}

// Work-item k finishes bucket k unless msm_segments did (it lay inside one segment) or the bucket
// is long (it crosses more than max_crossings segment borders; msm_fold does those): an empty
// bucket gets the identity, a crossing one the tail of its first segment plus the heads of the
// segments after (the tails of the segments inside it are the identity).
__kernel void PT(msm_fold_direct)(__global const POINT *parts, __global const uint *offsets,
                                  __global POINT *bucket_sums, uint bucket_count, uint shift,
                                  uint max_crossings) {
    uint k = get_global_id(0);
    if (k >= bucket_count) return;
    uint a = offsets[k];
    uint e = offsets[k + 1];
    if (a == e) {
        bucket_sums[k] = PT(identity)();
        return;
    }
    uint first = a >> shift;
    uint last = (e - 1) >> shift;
    if (first == last || last - first > max_crossings) return;
    POINT acc = parts[2 * first + 1];
    for (uint s = first + 1; s <= last; s++) acc = PT(add)(acc, parts[2 * s]);
    bucket_sums[k] = acc;
}

// Job j adds in[ranges[2 j]], ..., in[ranges[2 j + 1] - 1] (the identity for an empty range) and
// writes the sum to out[dest[j]]. The host keeps every range at most FOLD points long, so no
// work-item adds more, however the entries crowd into one bucket.
__kernel void PT(msm_fold)(__global const POINT *in, __global const uint *ranges,
                           __global const uint *dest, __global POINT *out, uint jobs) {
    uint j = get_global_id(0);
    if (j >= jobs) return;
    POINT acc = PT(identity)();
    for (uint i = ranges[2 * j]; i < ranges[2 * j + 1]; i++) acc = PT(add)(acc, in[i]);
    out[dest[j]] = acc;
}

// Work-item (w, g) weighs buckets [g * len, (g + 1) * len) of window w by their digits:
// sum_j (g * len + j + 1) S_j, as running sums (top down) plus (g * len) times their total.
__kernel void PT(msm_reduce)(__global const POINT *bucket_sums, __global POINT *group_sums,
                             uint c, uint windows, uint len) {
    uint item = get_global_id(0);
    uint buckets = 1u << (c - 1);
    uint groups = buckets / len;
    if (item >= windows * groups) return;
    uint w = item / groups;
    uint g = item % groups;
    __global const POINT *mine = bucket_sums + w * buckets + g * len;
    POINT running = PT(identity)();
    POINT sum = PT(identity)();
    for (int j = (int)len - 1; j >= 0; j--) {
        running = PT(add)(running, mine[j]);
        sum = PT(add)(sum, running);
    }
    uint m = g * len;
    POINT scaled = PT(identity)();
    // From the top set bit of m down (none for m = 0): doubling the identity is not free.
    for (int bit = 31 - (int)clz(m); bit >= 0; bit--) {
        scaled = PT(double)(scaled);
        if ((m >> bit) & 1) scaled = PT(add)(scaled, running);
    }
    group_sums[item] = PT(add)(sum, scaled);
}

// out[t] = in[t * run] + ... + in[t * run + run - 1].
__kernel void PT(msm_sum_runs)(__global const POINT *in, __global POINT *out, uint n_out,
                               uint run) {
    uint t = get_global_id(0);
    if (t >= n_out) return;
    POINT acc = PT(identity)();
    for (uint u = 0; u < run; u++) acc = PT(add)(acc, in[t * run + u]);
    out[t] = acc;
}
