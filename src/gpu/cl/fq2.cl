// Fq2 = Fq[u] / (u^2 + 1), the field of G2's coordinates, written against Fq's functions with
// the names ec.cl expects of a FIELD.

typedef struct { Fq c0; Fq c1; } Fq2;

Fq2 Fq2_zero() {
    Fq2 r;
    r.c0 = Fq_zero();
    r.c1 = Fq_zero();
    return r;
}

Fq2 Fq2_one() {
    Fq2 r;
    r.c0 = Fq_one();
    r.c1 = Fq_zero();
    return r;
}

bool Fq2_is_zero(Fq2 a) {
    return Fq_is_zero(a.c0) && Fq_is_zero(a.c1);
}

bool Fq2_eq(Fq2 a, Fq2 b) {
    return Fq_eq(a.c0, b.c0) && Fq_eq(a.c1, b.c1);
}

// Either coordinate at or above P (a value that is not canonical).
bool Fq2_gte_p(Fq2 a) {
    return Fq_gte_p(a.c0) || Fq_gte_p(a.c1);
}

Fq2 Fq2_to_mont(Fq2 a) {
    a.c0 = Fq_to_mont(a.c0);
    a.c1 = Fq_to_mont(a.c1);
    return a;
}

Fq2 Fq2_add(Fq2 a, Fq2 b) {
    a.c0 = Fq_add(a.c0, b.c0);
    a.c1 = Fq_add(a.c1, b.c1);
    return a;
}

Fq2 Fq2_sub(Fq2 a, Fq2 b) {
    a.c0 = Fq_sub(a.c0, b.c0);
    a.c1 = Fq_sub(a.c1, b.c1);
    return a;
}

Fq2 Fq2_double(Fq2 a) {
    return Fq2_add(a, a);
}

Fq2 Fq2_neg(Fq2 a) {
    a.c0 = Fq_neg(a.c0);
    a.c1 = Fq_neg(a.c1);
    return a;
}

// Karatsuba: (a0 + a1 u)(b0 + b1 u) = a0 b0 - a1 b1 + ((a0 + a1)(b0 + b1) - a0 b0 - a1 b1) u
FQ2_FN Fq2 Fq2_mul(Fq2 a, Fq2 b) {
    Fq t0 = Fq_mul(a.c0, b.c0);
    Fq t1 = Fq_mul(a.c1, b.c1);
    Fq2 r;
    r.c1 = Fq_sub(Fq_sub(Fq_mul(Fq_add(a.c0, a.c1), Fq_add(b.c0, b.c1)), t0), t1);
    r.c0 = Fq_sub(t0, t1);
    return r;
}

// (a0 + a1 u)^2 = (a0 + a1)(a0 - a1) + 2 a0 a1 u
FQ2_FN Fq2 Fq2_sqr(Fq2 a) {
    Fq2 r;
    r.c1 = Fq_double(Fq_mul(a.c0, a.c1));
    r.c0 = Fq_mul(Fq_add(a.c0, a.c1), Fq_sub(a.c0, a.c1));
    return r;
}
