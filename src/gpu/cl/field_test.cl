// Test kernels for one field: for canonical inputs a[i], b[i], writes canonical results of
// a + b, a - b, a * b, a^2, 2a and -a to out[6 i ..]. Instantiated per field like field.cl.

__kernel void FN(test_ops)(__global const FIELD *a, __global const FIELD *b, __global FIELD *out,
                           uint n) {
    uint i = get_global_id(0);
    if (i >= n) return;
    FIELD x = FN(to_mont)(a[i]);
    FIELD y = FN(to_mont)(b[i]);
    out[6 * i + 0] = FN(from_mont)(FN(add)(x, y));
    out[6 * i + 1] = FN(from_mont)(FN(sub)(x, y));
    out[6 * i + 2] = FN(from_mont)(FN(mul)(x, y));
    out[6 * i + 3] = FN(from_mont)(FN(sqr)(x));
    out[6 * i + 4] = FN(from_mont)(FN(double)(x));
    out[6 * i + 5] = FN(from_mont)(FN(neg)(x));
}
