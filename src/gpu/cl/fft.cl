// Radix-2 FFT over FIELD (instantiated for Fr) in rounds of up to 2^FFT_MAX_DEG-point
// sub-transforms in local memory. The host runs bit_reverse (or bit_reverse_tiles), then
// radix_rounds for first = 0, deg, 2 deg, ... (each launch does `deg` radix-2 rounds), and
// pointwise kernels around it for the inverse and coset forms. Twiddles and coset powers come from two small tables: x^e =
// lo[e mod 2^lo_bits] * hi[e >> lo_bits], one multiplication instead of a table of n / 2 values.

#define FFT_MAX_DEG 8

uint FN(bit_reversed)(uint x, uint bits) {
    uint r = 0;
    for (uint k = 0; k < bits; k++) {
        r = (r << 1) | (x & 1);
        x >>= 1;
    }
    return r;
}

__kernel void FN(bit_reverse)(__global FIELD *a, uint log_n) {
    uint i = get_global_id(0);
    if (i >= (1u << log_n)) return;
    uint j = FN(bit_reversed)(i, log_n);
    if (i < j) {
        FIELD t = a[i];
        a[i] = a[j];
        a[j] = t;
    }
}

// The same permutation by tiles, for log_n >= 2 BR_BITS: write an index as (h, m, l), with h and l
// of BR_BITS bits and m the bits between; its reversal is (rev l, rev m, rev h). So the tile of
// all (h, m, l) for one m goes, transposed, to the tile of rev m: work-group m (for m <= rev m)
// reads both tiles, a row of 2^BR_BITS neighbouring values at a time, and writes each where the
// other was. One value per work-item and tile (2^(2 BR_BITS) items). The plain kernel above
// moves each value alone between scattered addresses: 1.96 ms for 2^24 values on the H200.
#define BR_BITS 4
#define BR_SIDE (1u << BR_BITS)
// Rows padded by one value, so that the transposed reads (a column of a tile) do not all fall
// in the same banks; a warp's read still meets two-way conflicts.
#define BR_ROW (BR_SIDE + 1)
#define BR_TILE (BR_SIDE * BR_ROW)

// Launched in slices of work-groups (`group_offset`: the slice's first), so that a higher
// priority waits for one slice, not for a whole pass over the values.
__kernel void FN(bit_reverse_tiles)(__global FIELD *a, uint log_n, uint group_offset) {
    // Limb k of entry e of tile s at word (2 k + s) BR_TILE + e.
    __local uint t[FIELD_LIMBS * 2 * BR_TILE];
    uint m = get_group_id(0) + group_offset;
    uint rm = FN(bit_reversed)(m, log_n - 2 * BR_BITS);
    if (m > rm) return;
    uint lid = get_local_id(0);
    uint h = lid >> BR_BITS;
    uint l = lid & (BR_SIDE - 1);
    uint high = log_n - BR_BITS;
    uint tiles[2] = {m, rm};
    for (uint s = 0; s < 2; s++) {
        FIELD x = a[(h << high) | (tiles[s] << BR_BITS) | l];
        for (int k = 0; k < FIELD_LIMBS; k++) t[(2 * k + s) * BR_TILE + h * BR_ROW + l] = x.v[k];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // Position (h, rev m, l) takes (rev l, m, rev h) of tile m, and the same the other way.
    uint from = FN(bit_reversed)(l, BR_BITS) * BR_ROW + FN(bit_reversed)(h, BR_BITS);
    for (uint s = 0; s < 2; s++) {
        FIELD x;
        for (int k = 0; k < FIELD_LIMBS; k++) x.v[k] = t[(2 * k + s) * BR_TILE + from];
        a[(h << high) | (tiles[1 - s] << BR_BITS) | l] = x;
    }
}

// x^e from the split power tables.
FIELD FN(power_from_tables)(__global const FIELD *lo, __global const FIELD *hi, uint lo_bits,
                            uint e) {
    FIELD x = lo[e & ((1u << lo_bits) - 1)];
    uint h = e >> lo_bits;
    return h == 0 ? x : FN(mul)(x, hi[h]);
}

// Values in local memory lie limb by limb: limb k of value i at word k 2^FFT_MAX_DEG + i, so
// that work-items reading neighbouring values read neighbouring banks. (Whole values one after
// another make each 16-byte access of a warp conflict with others: the rounds take 1.6x as long
// on the H200, 2^24 values in 14.3 ms against 11.4 ms.)
FIELD FN(local_get)(__local const uint *s, uint i) {
    FIELD x;
    for (int k = 0; k < FIELD_LIMBS; k++) x.v[k] = s[(k << FFT_MAX_DEG) + i];
    return x;
}

void FN(local_set)(__local uint *s, uint i, FIELD x) {
    for (int k = 0; k < FIELD_LIMBS; k++) s[(k << FFT_MAX_DEG) + i] = x.v[k];
}

// Rounds first .. first + deg - 1 of the iterative transform (blocks of 2^(round + 1) values)
// after bit reversal. Those rounds mix, for fixed high and low index bits, only the `deg` bits
// above bit `first`: one work-group of 2^(deg - 1) items loads such a group of 2^deg values
// (stride 2^first) into local memory and runs the rounds there. In global round `first + r` the
// butterfly at position j of its block uses w^(j n / 2^(first + r + 1)), that is
// w^((j 2^first + low) 2^(log_n - 1 - first - r)) for the group's low bits `low`. Launched in
// slices of work-groups, as the bit reversal (`group_offset`: the slice's first).
__kernel void FN(radix_rounds)(__global FIELD *a, __global const FIELD *tw_lo,
                               __global const FIELD *tw_hi, uint lo_bits, uint log_n,
                               uint first, uint deg, uint group_offset) {
    __local uint u[FIELD_LIMBS << FFT_MAX_DEG];
    uint lid = get_local_id(0);
    uint group = get_group_id(0) + group_offset;
    uint half_size = 1u << (deg - 1);
    uint stride = 1u << first;
    uint low = group & (stride - 1);
    uint base = ((group >> first) << (first + deg)) + low;
    uint shift = log_n - 1 - first;
    // The group's 2^deg - 1 twiddles, made before the rounds, two per work-item, so that their
    // table reads are all in flight at once instead of one per round on each item's critical path,
    // and each is made once, not by every butterfly that uses it: w[2^r + j] is round r's at
    // position j (w[0] is unused). On the H200 this makes 2^24 values take 11.4 ms instead of 14.3.
    __local uint w[FIELD_LIMBS << FFT_MAX_DEG];
    for (uint k = lid; k < 2 * half_size; k += half_size) {
        if (k == 0) continue;
        uint r = 31 - clz(k);
        uint j = k - (1u << r);
        FN(local_set)(w, k, FN(power_from_tables)(tw_lo, tw_hi, lo_bits,
                                                  (j * stride + low) << (shift - r)));
    }
    FN(local_set)(u, lid, a[base + lid * stride]);
    FN(local_set)(u, lid + half_size, a[base + (lid + half_size) * stride]);
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint r = 0; r < deg; r++) {
        uint j = lid & ((1u << r) - 1);
        uint i0 = ((lid >> r) << (r + 1)) + j;
        uint i1 = i0 + (1u << r);
        FIELD t = FN(mul)(FN(local_get)(w, (1u << r) + j), FN(local_get)(u, i1));
        FIELD x = FN(local_get)(u, i0);
        FN(local_set)(u, i0, FN(add)(x, t));
        FN(local_set)(u, i1, FN(sub)(x, t));
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    a[base + lid * stride] = FN(local_get)(u, lid);
    a[base + (lid + half_size) * stride] = FN(local_get)(u, lid + half_size);
}

// a[i] *= c[0]
__kernel void FN(scale)(__global FIELD *a, __global const FIELD *c, uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    a[i] = FN(mul)(a[i], c[0]);
}

// a[i] *= c g^i, from the split power tables of g (c in the low table: a scaling folded into the
// shift to or from a coset).
__kernel void FN(distribute_powers)(__global FIELD *a, __global const FIELD *lo,
                                    __global const FIELD *hi, uint lo_bits, uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    a[i] = FN(mul)(a[i], FN(power_from_tables)(lo, hi, lo_bits, i));
}

// a[i] = (a[i] b[i] - c[i]) * z[0]: the quotient's numerator over the coset, divided by Z there.
__kernel void FN(mul_sub_scale)(__global FIELD *a, __global const FIELD *b,
                                __global const FIELD *c, __global const FIELD *z, uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    a[i] = FN(mul)(FN(sub)(FN(mul)(a[i], b[i]), c[i]), z[0]);
}
