// Arithmetic throughput kernels for the benchmarks (benches/compare.rs `gpu-arith`): every
// work-item runs `iters` dependent operations on values of its own and writes the last one (so
// the compiler keeps the work), and the loop touches no memory but a small table of points that
// stays in the cache. The time per operation over a full device is the rate the multiexp's bucket
// sums could reach at best with this arithmetic. Instantiated like multiexp.cl (FIELD, POINT).

__kernel void PT(mul_loop)(__global FIELD *out, uint iters) {
    uint i = get_global_id(0);
    FIELD x = FN(one)();
    FIELD y = FN(one)();
    // Distinct inputs per work-item; the low limb's change keeps them below P.
    ((uint *)&x)[0] ^= i;
    ((uint *)&y)[0] ^= i * 2654435761u;
    for (uint k = 0; k < iters; k++) x = FN(mul)(x, y);
    out[i] = x;
}

__kernel void PT(sqr_loop)(__global FIELD *out, uint iters) {
    uint i = get_global_id(0);
    FIELD x = FN(one)();
    ((uint *)&x)[0] ^= i;
    for (uint k = 0; k < iters; k++) x = FN(sqr)(x);
    out[i] = x;
}

// acc += table[(i + k) % 64] for k < iters: the bucket sum's mixed addition, in xyzz coordinates
// as msm_segments sums (stored as a Jacobian point at the end). The table holds arbitrary
// coordinates (not curve points): the formulas do not check, and the timing is the same.
__kernel void PT(add_affine_xyzz_loop)(__global const CAT(POINT, _affine) *table,
                                       __global POINT *out, uint iters) {
    uint i = get_global_id(0);
    CAT(POINT, _xyzz) acc = PT(xyzz_identity)();
    for (uint k = 0; k < iters; k++) acc = PT(xyzz_add_affine)(acc, table[(i + k) & 63]);
    out[i] = PT(from_xyzz)(acc);
}

// acc += table[...] as Jacobian points: the fold and weighing steps' addition.
__kernel void PT(add_loop)(__global const CAT(POINT, _affine) *table, __global POINT *out,
                           uint iters) {
    uint i = get_global_id(0);
    POINT acc = PT(identity)();
    POINT q;
    q.z = FN(one)();
    for (uint k = 0; k < iters; k++) {
        q.x = table[(i + k) & 63].x;
        q.y = table[(i + k) & 63].y;
        q.z = FN(add)(q.z, q.z);
        acc = PT(add)(acc, q);
    }
    out[i] = acc;
}
