// Multiexp: work-item (w, s) sums digit_w(scalar_i) * base_i over slice s of the terms into its
// own 2^(c-1) buckets (signed digits, as in src/multiexp.rs) and reduces them to one point. The
// host adds the results with 2^(c w) weights. Buckets live in global memory, one region per
// work-item.

// Bits [start, start + len) of a 256-bit scalar in 8 little-endian limbs; bits past 255 are 0.
uint PT(scalar_bits)(__global const uint *s, uint start, uint len) {
    uint limb = start / 32;
    uint offset = start % 32;
    if (limb >= 8) return 0;
    ulong v = s[limb];
    if (limb + 1 < 8) v |= ((ulong)s[limb + 1]) << 32;
    return (uint)((v >> offset) & ((1ul << len) - 1));
}

// The signed digit of window w: value_w + top_(w-1) - 2^c top_w (see src/multiexp.rs).
int PT(signed_digit)(__global const uint *s, uint w, uint c) {
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

__kernel void PT(multiexp)(__global const CAT(POINT, _affine) *bases,
                           __global const uint *scalars,
                           __global POINT *buckets,
                           __global POINT *results,
                           uint n, uint c, uint windows, uint slices) {
    uint item = get_global_id(0);
    if (item >= windows * slices) return;
    uint w = item / slices;
    uint s = item % slices;
    uint slice_len = (n + slices - 1) / slices;
    uint start = min(s * slice_len, n);
    uint end = min(start + slice_len, n);
    uint count = 1u << (c - 1);
    __global POINT *mine = buckets + (ulong)item * count;
    for (uint b = 0; b < count; b++) mine[b] = PT(identity)();

    for (uint i = start; i < end; i++) {
        int d = PT(signed_digit)(scalars + 8 * i, w, c);
        if (d == 0) continue;
        CAT(POINT, _affine) base = bases[i];
        if (d < 0) {
            if (!PT(affine_is_identity)(base)) base.y = FN(neg)(base.y);
            d = -d;
        }
        mine[d - 1] = PT(add_affine)(mine[d - 1], base);
    }

    // sum_j (j + 1) bucket_j with two running sums, top down.
    POINT running = PT(identity)();
    POINT sum = PT(identity)();
    for (int b = count - 1; b >= 0; b--) {
        running = PT(add)(running, mine[b]);
        sum = PT(add)(sum, running);
    }
    results[item] = sum;
}
