// Radix-2 FFT over FIELD (instantiated for Fr), one kernel launch per round, data in global
// memory. The host runs: [distribute_powers] -> bit_reverse -> fft_round for half_len = 1, 2, 4,
// -> [scale] -> [distribute_powers], which gives the FFT, the inverse and the coset forms.

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

// Butterfly idx of the round with blocks of 2 * half_len (`half` is an OpenCL type name):
// (u, v) <- (u + w v, u - w v), w the twiddle w^(j * stride) for position j in the block.
__kernel void FN(fft_round)(__global FIELD *a, __global const FIELD *twiddles, uint half_len,
                            uint stride, uint count) {
    uint idx = get_global_id(0);
    if (idx >= count) return;
    uint j = idx % half_len;
    uint i0 = (idx / half_len) * 2 * half_len + j;
    uint i1 = i0 + half_len;
    FIELD t = FN(mul)(twiddles[j * stride], a[i1]);
    FIELD u = a[i0];
    a[i0] = FN(add)(u, t);
    a[i1] = FN(sub)(u, t);
}

// a[i] *= c[0]
__kernel void FN(scale)(__global FIELD *a, __global const FIELD *c, uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    a[i] = FN(mul)(a[i], c[0]);
}

// a[i] *= g[0]^i, the power by square-and-multiply over the bits of i.
__kernel void FN(distribute_powers)(__global FIELD *a, __global const FIELD *g, uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    FIELD power = FN(one)();
    FIELD base = g[0];
    for (uint e = i; e != 0; e >>= 1) {
        if (e & 1) power = FN(mul)(power, base);
        base = FN(sqr)(base);
    }
    a[i] = FN(mul)(a[i], power);
}
