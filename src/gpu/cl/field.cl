// Montgomery arithmetic in a prime field with FIELD_LIMBS 32-bit limbs, least significant first.
// Values are kept below P; `mul` is the CIOS method (Koc, Acar, Kaliski: "Analyzing and comparing
// Montgomery multiplication algorithms", 1996): one interleaved pass of multiplication and
// reduction per limb of `b`. This is the portable path: every product goes through 64-bit
// arithmetic, which any OpenCL device has.

typedef struct { uint v[FIELD_LIMBS]; } FIELD;

__constant uint FN(P)[FIELD_LIMBS] = FIELD_P;
__constant uint FN(ONE)[FIELD_LIMBS] = FIELD_ONE;
__constant uint FN(R2)[FIELD_LIMBS] = FIELD_R2;

FIELD FN(zero)() {
    FIELD r;
    for (int i = 0; i < FIELD_LIMBS; i++) r.v[i] = 0;
    return r;
}

FIELD FN(one)() {
    FIELD r;
    for (int i = 0; i < FIELD_LIMBS; i++) r.v[i] = FN(ONE)[i];
    return r;
}

bool FN(eq)(FIELD a, FIELD b) {
    for (int i = 0; i < FIELD_LIMBS; i++)
        if (a.v[i] != b.v[i]) return false;
    return true;
}

bool FN(is_zero)(FIELD a) {
    for (int i = 0; i < FIELD_LIMBS; i++)
        if (a.v[i] != 0) return false;
    return true;
}

// a >= P, as integers
bool FN(gte_p)(FIELD a) {
    for (int i = FIELD_LIMBS - 1; i >= 0; i--) {
        if (a.v[i] > FN(P)[i]) return true;
        if (a.v[i] < FN(P)[i]) return false;
    }
    return true;
}

// a - P, ignoring the final borrow (callers know a >= P, possibly with a carry out of the top)
FIELD FN(sub_p)(FIELD a) {
    uint borrow = 0;
    for (int i = 0; i < FIELD_LIMBS; i++) {
        ulong d = (ulong)a.v[i] - FN(P)[i] - borrow;
        a.v[i] = (uint)d;
        borrow = (uint)(d >> 63);
    }
    return a;
}

#ifdef NVIDIA_PTX
// t - P when t >= P, for t < 2P: a borrow chain, and the borrow's mask picks t or t - P without
// a branch.
FIELD FN(reduce_once)(FIELD t) {
    FIELD d;
    PTX_ASM("sub.cc.u32 %0, %1, %2;" : "=r"(d.v[0]) : "r"(t.v[0]), "r"(FN(P)[0]));
    #pragma unroll
    for (int i = 1; i < FIELD_LIMBS; i++)
        PTX_ASM("subc.cc.u32 %0, %1, %2;" : "=r"(d.v[i]) : "r"(t.v[i]), "r"(FN(P)[i]));
    uint borrow;
    PTX_ASM("subc.u32 %0, 0, 0;" : "=r"(borrow));
    #pragma unroll
    for (int i = 0; i < FIELD_LIMBS; i++) d.v[i] = (t.v[i] & borrow) | (d.v[i] & ~borrow);
    return d;
}

// Addition and subtraction as PTX carry chains (the portable versions below emulate each carry
// with 64-bit arithmetic and compare with P limb by limb, branching): a + b, then
// `reduce_once`. Inputs are below P, so a + b < 2P < 2^(32 FIELD_LIMBS) and one subtraction
// suffices. Separate asm statements pass the carry flag, as in `mul`.
FIELD FN(add)(FIELD a, FIELD b) {
    FIELD s;
    PTX_ASM("add.cc.u32 %0, %1, %2;" : "=r"(s.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
    #pragma unroll
    for (int i = 1; i < FIELD_LIMBS; i++)
        PTX_ASM("addc.cc.u32 %0, %1, %2;" : "=r"(s.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
    return FN(reduce_once)(s);
}

// a - b, plus P when that borrows (the mask of the borrow selects P's limbs).
FIELD FN(sub)(FIELD a, FIELD b) {
    FIELD d;
    PTX_ASM("sub.cc.u32 %0, %1, %2;" : "=r"(d.v[0]) : "r"(a.v[0]), "r"(b.v[0]));
    #pragma unroll
    for (int i = 1; i < FIELD_LIMBS; i++)
        PTX_ASM("subc.cc.u32 %0, %1, %2;" : "=r"(d.v[i]) : "r"(a.v[i]), "r"(b.v[i]));
    uint borrow;
    PTX_ASM("subc.u32 %0, 0, 0;" : "=r"(borrow));
    PTX_ASM("add.cc.u32 %0, %0, %1;" : "+r"(d.v[0]) : "r"(FN(P)[0] & borrow));
    #pragma unroll
    for (int i = 1; i < FIELD_LIMBS; i++)
        PTX_ASM("addc.cc.u32 %0, %0, %1;" : "+r"(d.v[i]) : "r"(FN(P)[i] & borrow));
    return d;
}
#else
FIELD FN(add)(FIELD a, FIELD b) {
    uint carry = 0;
    for (int i = 0; i < FIELD_LIMBS; i++) {
        ulong s = (ulong)a.v[i] + b.v[i] + carry;
        a.v[i] = (uint)s;
        carry = (uint)(s >> 32);
    }
    if (carry || FN(gte_p)(a)) a = FN(sub_p)(a);
    return a;
}

FIELD FN(sub)(FIELD a, FIELD b) {
    uint borrow = 0;
    for (int i = 0; i < FIELD_LIMBS; i++) {
        ulong d = (ulong)a.v[i] - b.v[i] - borrow;
        a.v[i] = (uint)d;
        borrow = (uint)(d >> 63);
    }
    if (borrow) {
        uint carry = 0;
        for (int i = 0; i < FIELD_LIMBS; i++) {
            ulong s = (ulong)a.v[i] + FN(P)[i] + carry;
            a.v[i] = (uint)s;
            carry = (uint)(s >> 32);
        }
    }
    return a;
}

#endif

FIELD FN(double)(FIELD a) {
    return FN(add)(a, a);
}

FIELD FN(neg)(FIELD a) {
    return FN(is_zero)(a) ? a : FN(sub)(FN(zero)(), a);
}

#ifdef NVIDIA_PTX
// The NVIDIA fast path: the CIOS steps of the portable `mul` below with PTX multiply-add carry
// chains, so a 32x32-bit product with its carry costs two integer multiply-adds instead of 64-bit
// emulation, and with the partial sum kept in two halves, T = E + 2^32 O: the
// products a_j b_i of even j go into E (limbs j, j + 1) and those of odd j into O (limbs j - 1,
// j), so each half takes its products in one carry chain with no overlap, and the two chains are
// independent, which gives the GPU two instructions to issue at a time instead of one: 26.8
// against 17.1 G products/s on an H200 for one chain of lows then highs per half-step, which is
// latency-bound (`compare gpu-arith`; docs/BENCHMARKS.md). (This split is the one of sppark's
// mont_t; the derivation and bounds here are ours.) After the reduction E's low limb is 0,
// and T / 2^32 = O + E / 2^32 becomes the next step's halves without a shift: E' = O + E_1
// (its carry goes to position 1, which is O' limb 0) and O' = E_2.. .
// Bounds: T < 2P at each step's start (the CIOS bound); the step's total T + a b_i + m P <
// 2P + 2^33 P < 2^(32 FIELD_LIMBS + 32) as P < 2^(32 FIELD_LIMBS - 1) for both fields, so E has
// FIELD_LIMBS + 1 limbs and O (at most total / 2^32) FIELD_LIMBS, and as every chain only adds,
// no chain carries out of its half. Separate asm statements pass the carry flag between them, as
// CUDA libraries rely on; the loops are unrolled, so no compiler-made instruction lands inside a
// chain. `scripts/check-mul-chains.py` models these chains instruction by instruction (both
// fields, random and extreme inputs, every dropped carry checked to be zero) against a b / R mod P.
#if FIELD_LIMBS % 2
#error "the even/odd product needs an even number of limbs"
#endif
// `inline` (C99's meaning: no out-of-line copy is emitted) so that the halves, private arrays
// passed by pointer, stay in registers; the programs are always built optimized, where it is
// inlined (NVIDIA's compiler and clang's nvptx target both do).
inline void FN(mul_reduce_step)(uint *e, uint *o) {
    uint m = e[0] * FIELD_INV;
    PTX_ASM("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(e[0]) : "r"(m), "r"(FN(P)[0]));
    PTX_ASM("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(e[1]) : "r"(m), "r"(FN(P)[0]));
    #pragma unroll
    for (int j = 2; j < FIELD_LIMBS; j += 2) {
        PTX_ASM("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(e[j]) : "r"(m), "r"(FN(P)[j]));
        PTX_ASM("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(e[j + 1]) : "r"(m), "r"(FN(P)[j]));
    }
    PTX_ASM("addc.u32 %0, %0, 0;" : "+r"(e[FIELD_LIMBS]));
    PTX_ASM("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(o[0]) : "r"(m), "r"(FN(P)[1]));
    PTX_ASM("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(o[1]) : "r"(m), "r"(FN(P)[1]));
    #pragma unroll
    for (int j = 2; j < FIELD_LIMBS - 2; j += 2) {
        PTX_ASM("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(o[j]) : "r"(m), "r"(FN(P)[j + 1]));
        PTX_ASM("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(o[j + 1]) : "r"(m), "r"(FN(P)[j + 1]));
    }
    PTX_ASM("madc.lo.cc.u32 %0, %1, %2, %0;"
            : "+r"(o[FIELD_LIMBS - 2]) : "r"(m), "r"(FN(P)[FIELD_LIMBS - 1]));
    PTX_ASM("madc.hi.u32 %0, %1, %2, %0;"
            : "+r"(o[FIELD_LIMBS - 1]) : "r"(m), "r"(FN(P)[FIELD_LIMBS - 1]));
}

MUL_FN FIELD FN(mul)(FIELD a, FIELD b) {
    uint e[FIELD_LIMBS + 1], o[FIELD_LIMBS];
    uint ne[FIELD_LIMBS + 1], no[FIELD_LIMBS];
    uint b0 = b.v[0];
    #pragma unroll
    for (int j = 0; j < FIELD_LIMBS; j += 2) {
        PTX_ASM("mul.lo.u32 %0, %1, %2;" : "=r"(e[j]) : "r"(a.v[j]), "r"(b0));
        PTX_ASM("mul.hi.u32 %0, %1, %2;" : "=r"(e[j + 1]) : "r"(a.v[j]), "r"(b0));
        PTX_ASM("mul.lo.u32 %0, %1, %2;" : "=r"(o[j]) : "r"(a.v[j + 1]), "r"(b0));
        PTX_ASM("mul.hi.u32 %0, %1, %2;" : "=r"(o[j + 1]) : "r"(a.v[j + 1]), "r"(b0));
    }
    e[FIELD_LIMBS] = 0;
    FN(mul_reduce_step)(e, o);
    #pragma unroll
    for (int i = 1; i < FIELD_LIMBS; i++) {
        uint bi = b.v[i];
        // O' = E_2.. + the odd products, with the carry of E'_0 = O_0 + E_1 at its bottom.
        PTX_ASM("add.cc.u32 %0, %1, %2;" : "=r"(ne[0]) : "r"(o[0]), "r"(e[1]));
        #pragma unroll
        for (int j = 0; j < FIELD_LIMBS - 2; j += 2) {
            PTX_ASM("madc.lo.cc.u32 %0, %1, %2, %3;" : "=r"(no[j]) : "r"(a.v[j + 1]), "r"(bi), "r"(e[j + 2]));
            PTX_ASM("madc.hi.cc.u32 %0, %1, %2, %3;" : "=r"(no[j + 1]) : "r"(a.v[j + 1]), "r"(bi), "r"(e[j + 3]));
        }
        PTX_ASM("madc.lo.cc.u32 %0, %1, %2, %3;"
                : "=r"(no[FIELD_LIMBS - 2]) : "r"(a.v[FIELD_LIMBS - 1]), "r"(bi), "r"(e[FIELD_LIMBS]));
        PTX_ASM("madc.hi.u32 %0, %1, %2, %3;"
                : "=r"(no[FIELD_LIMBS - 1]) : "r"(a.v[FIELD_LIMBS - 1]), "r"(bi), "r"(0u));
        // E' = O (with E_1 in its low limb) + the even products.
        #pragma unroll
        for (int j = 1; j < FIELD_LIMBS; j++) ne[j] = o[j];
        PTX_ASM("mad.lo.cc.u32 %0, %1, %2, %0;" : "+r"(ne[0]) : "r"(a.v[0]), "r"(bi));
        PTX_ASM("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(ne[1]) : "r"(a.v[0]), "r"(bi));
        #pragma unroll
        for (int j = 2; j < FIELD_LIMBS; j += 2) {
            PTX_ASM("madc.lo.cc.u32 %0, %1, %2, %0;" : "+r"(ne[j]) : "r"(a.v[j]), "r"(bi));
            PTX_ASM("madc.hi.cc.u32 %0, %1, %2, %0;" : "+r"(ne[j + 1]) : "r"(a.v[j]), "r"(bi));
        }
        PTX_ASM("addc.u32 %0, 0, 0;" : "=r"(ne[FIELD_LIMBS]));
        FN(mul_reduce_step)(ne, no);
        #pragma unroll
        for (int j = 0; j <= FIELD_LIMBS; j++) e[j] = ne[j];
        #pragma unroll
        for (int j = 0; j < FIELD_LIMBS; j++) o[j] = no[j];
    }
    // T = O + E / 2^32 < 2P.
    FIELD r;
    PTX_ASM("add.cc.u32 %0, %1, %2;" : "=r"(r.v[0]) : "r"(o[0]), "r"(e[1]));
    #pragma unroll
    for (int j = 1; j < FIELD_LIMBS - 1; j++)
        PTX_ASM("addc.cc.u32 %0, %1, %2;" : "=r"(r.v[j]) : "r"(o[j]), "r"(e[j + 1]));
    PTX_ASM("addc.u32 %0, %1, %2;" : "=r"(r.v[FIELD_LIMBS - 1]) : "r"(o[FIELD_LIMBS - 1]), "r"(e[FIELD_LIMBS]));
    return FN(reduce_once)(r);
}
#else
// a * b / 2^(32 * FIELD_LIMBS) mod P. Each step's 64-bit sums cannot overflow:
// (2^32 - 1)^2 + 2 (2^32 - 1) = 2^64 - 1.
MUL_FN FIELD FN(mul)(FIELD a, FIELD b) {
    uint t[FIELD_LIMBS + 2];
    for (int i = 0; i < FIELD_LIMBS + 2; i++) t[i] = 0;
    for (int i = 0; i < FIELD_LIMBS; i++) {
        ulong carry = 0;
        for (int j = 0; j < FIELD_LIMBS; j++) {
            ulong s = (ulong)a.v[j] * b.v[i] + t[j] + carry;
            t[j] = (uint)s;
            carry = s >> 32;
        }
        ulong s = (ulong)t[FIELD_LIMBS] + carry;
        t[FIELD_LIMBS] = (uint)s;
        t[FIELD_LIMBS + 1] = (uint)(s >> 32);

        // m makes t + m * P divisible by 2^32; the division is the shift by one limb.
        uint m = t[0] * FIELD_INV;
        s = (ulong)m * FN(P)[0] + t[0];
        carry = s >> 32;
        for (int j = 1; j < FIELD_LIMBS; j++) {
            s = (ulong)m * FN(P)[j] + t[j] + carry;
            t[j - 1] = (uint)s;
            carry = s >> 32;
        }
        s = (ulong)t[FIELD_LIMBS] + carry;
        t[FIELD_LIMBS - 1] = (uint)s;
        t[FIELD_LIMBS] = t[FIELD_LIMBS + 1] + (uint)(s >> 32);
    }
    FIELD r;
    for (int i = 0; i < FIELD_LIMBS; i++) r.v[i] = t[i];
    if (t[FIELD_LIMBS] || FN(gte_p)(r)) r = FN(sub_p)(r);
    return r;
}
#endif

FIELD FN(sqr)(FIELD a) {
    return FN(mul)(a, a);
}

// Canonical integer to Montgomery form: a * R^2 / R.
FIELD FN(to_mont)(FIELD a) {
    FIELD r2;
    for (int i = 0; i < FIELD_LIMBS; i++) r2.v[i] = FN(R2)[i];
    return FN(mul)(a, r2);
}

// Montgomery form to canonical integer: a * 1 / R.
FIELD FN(from_mont)(FIELD a) {
    FIELD one = FN(zero)();
    one.v[0] = 1;
    return FN(mul)(a, one);
}
