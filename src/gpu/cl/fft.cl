// Radix-2 FFT over FIELD (instantiated for Fr) in rounds of up to 2^FFT_MAX_DEG-point
// sub-transforms in local memory. The host runs bit_reverse, then radix_rounds for first = 0,
// deg, 2 deg, ... (each launch does `deg` radix-2 rounds), and pointwise kernels around it for the
// inverse and coset forms. Twiddles and coset powers come from two small tables: x^e =
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

// x^e from the split power tables.
FIELD FN(power_from_tables)(__global const FIELD *lo, __global const FIELD *hi, uint lo_bits,
                            uint e) {
    FIELD x = lo[e & ((1u << lo_bits) - 1)];
    uint h = e >> lo_bits;
    return h == 0 ? x : FN(mul)(x, hi[h]);
}

// Rounds first .. first + deg - 1 of the iterative transform (blocks of 2^(round + 1) values)
// after bit reversal. Those rounds mix, for fixed high and low index bits, only the `deg` bits
// above bit `first`: one work-group of 2^(deg - 1) items loads such a group of 2^deg values
// (stride 2^first) into local memory and runs the rounds there. In global round `first + r` the
// butterfly at position j of its block uses w^(j n / 2^(first + r + 1)).
__kernel void FN(radix_rounds)(__global FIELD *a, __global const FIELD *tw_lo,
                               __global const FIELD *tw_hi, uint lo_bits, uint log_n,
                               uint first, uint deg) {
    __local FIELD u[1 << FFT_MAX_DEG];
    uint lid = get_local_id(0);
    uint group = get_group_id(0);
    uint half_size = 1u << (deg - 1);
    uint stride = 1u << first;
    uint low = group & (stride - 1);
    uint base = ((group >> first) << (first + deg)) + low;
    u[lid] = a[base + lid * stride];
    u[lid + half_size] = a[base + (lid + half_size) * stride];
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint r = 0; r < deg; r++) {
        uint j = lid & ((1u << r) - 1);
        uint i0 = ((lid >> r) << (r + 1)) + j;
        uint i1 = i0 + (1u << r);
        uint e = (j * stride + low) << (log_n - 1 - first - r);
        FIELD t = FN(mul)(FN(power_from_tables)(tw_lo, tw_hi, lo_bits, e), u[i1]);
        FIELD x = u[i0];
        u[i0] = FN(add)(x, t);
        u[i1] = FN(sub)(x, t);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    a[base + lid * stride] = u[lid];
    a[base + (lid + half_size) * stride] = u[lid + half_size];
}

// a[i] *= c[0]
__kernel void FN(scale)(__global FIELD *a, __global const FIELD *c, uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    a[i] = FN(mul)(a[i], c[0]);
}

// a[i] *= g^i, g^i from the split power tables of g.
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
