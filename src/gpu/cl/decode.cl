// Bases that went up as their encodings in a parameter file (a mapped file: src/bases.rs), made
// into the affine Montgomery points the multiexp reads, in place, one work-item a point, with the
// checks blst's deserialization makes of an uncompressed encoding (blst_p1_deserialize and
// blst_p2_deserialize, which blstrs's from_uncompressed_unchecked calls): a coordinate at or
// above P, a point off the curve y^2 = x^3 + b, and x = 0 are refused; the subgroup is not
// checked (a file opened `checked` had every point's checked when it was opened).
//
// The host uploads the encodings' bytes as they are in the file. Each coordinate of the encoding
// is 48 big-endian bytes, G2's c1 before c0; a work-item reads its point's words (the device is
// little-endian, as every GPU and CPU device is), swaps each word's bytes and reverses their
// order into little-endian 32-bit limbs in the device's order (c0 before c1). The encoding's
// three flag bits, the top bits of its first byte, are then bits 29 to 31 of the top limb of x
// (of x.c1 in G2): 0 for a point, the infinity bit alone (with every other bit 0) for the
// identity; anything else (compressed, sorted) is refused here, where blst would also take a
// compressed point in the first half. A refused point's index goes to `first_bad` (the least of
// them, by atomic_min; the host sets it to 0xffffffff) and the point becomes the identity
// (x = y = 0), so the kernels after it read a valid point either way.

// b of the curve in Montgomery form: 4 in G1, 4(1 + u) on G2's twist.
FIELD PT(curve_b)() {
#ifdef CURVE_OVER_FQ2
    Fq four = Fq_double(Fq_double(Fq_one()));
    Fq2 b;
    b.c0 = four;
    b.c1 = four;
    return b;
#else
    return FN(double)(FN(double)(FN(one)()));
#endif
}

// The encoding's Fq element (48 bytes each) that holds the device's Fq element k of a point.
#ifdef CURVE_OVER_FQ2
#define ENCODED_FQ(k) ((k) ^ 1u)
#else
#define ENCODED_FQ(k) (k)
#endif

uint PT(byte_swap)(uint w) {
    return (w >> 24) | ((w >> 8) & 0xff00u) | ((w << 8) & 0xff0000u) | (w << 24);
}

__kernel void PT(msm_decode_bases)(__global CAT(POINT, _affine) *bases, uint n,
                                   __global uint *first_bad) {
    uint i = get_global_id(0);
    if (i >= n) return;
    const uint words = sizeof(FIELD) / sizeof(uint);
    // The whole point is read before it is written back, in place.
    __global const uint *raw = (__global const uint *)&bases[i];
    CAT(POINT, _affine) p;
    uint *limbs = (uint *)&p;
    for (uint k = 0; k < 2 * words / 12; k++) {
        uint from = 12 * ENCODED_FQ(k);
        for (uint j = 0; j < 12; j++) limbs[12 * k + j] = PT(byte_swap)(raw[from + 11 - j]);
    }
    uint *x = (uint *)&p.x;
    uint flags = x[words - 1] >> 29;
    x[words - 1] &= 0x1fffffffu;
    bool ok;
    if (flags == 2) {
        ok = FN(is_zero)(p.x) && FN(is_zero)(p.y);
    } else if (flags == 0) {
        ok = !FN(gte_p)(p.x) && !FN(gte_p)(p.y) && !FN(is_zero)(p.x);
        p.x = FN(to_mont)(p.x);
        p.y = FN(to_mont)(p.y);
        FIELD rhs = FN(add)(FN(mul)(FN(sqr)(p.x), p.x), PT(curve_b)());
        ok = ok && FN(eq)(FN(sqr)(p.y), rhs);
    } else {
        ok = false;
    }
    if (!ok) {
        atomic_min(first_bad, i);
        p.x = FN(zero)();
        p.y = FN(zero)();
    }
    bases[i] = p;
}

#undef ENCODED_FQ
