// Points of a short Weierstrass curve y^2 = x^3 + b with a = 0, coordinates in FIELD
// (instantiated as G1 over Fq and G2 over Fq2); FIELD must provide zero, one, is_zero, eq, add,
// sub, double, neg, mul and sqr. Projective points are Jacobian (X, Y, Z) for (X / Z^2, Y / Z^3),
// the identity has Z = 0 (results go to the host this way: blst keeps the same coordinates). Affine bases are (x, y) with the identity encoded as x = y = 0, as blst
// does (no affine point of these curves has y = 0). Every function handles the identity in every
// input position, and equal or opposite inputs: a multiexp meets all of these.
// Formulas: Bernstein and Lange, Explicit-Formulas Database, dbl-2009-l and add-2007-bl
// (https://hyperelliptic.org/EFD/g1p/auto-shortw-jacobian-0.html).
// The bucket sums accumulate in extended Jacobian coordinates (X, Y, ZZ, ZZZ) for
// (X / ZZ, Y / ZZZ) with ZZ^3 = ZZZ^2 (the EFD's "xyzz", madd-2008-s and mdbl-2008-s-1,
// https://hyperelliptic.org/EFD/g1p/auto-shortw-xyzz.html): a mixed addition costs 8M + 2S
// there against 7M + 4S and twice the additions in Jacobian coordinates (madd-2007-bl): bucket
// sums in Jacobian coordinates make 2.20 G1 additions per nanosecond on the H200, against 2.45
// in xyzz (docs/BENCHMARKS.md); sppark and the ZPrize multiexps keep their buckets in this form
// too.

#define PT(name) CAT(POINT, CAT(_, name))

typedef struct { FIELD x; FIELD y; FIELD z; } POINT;
typedef struct { FIELD x; FIELD y; } CAT(POINT, _affine);

POINT PT(identity)() {
    POINT r;
    r.x = FN(one)();
    r.y = FN(one)();
    r.z = FN(zero)();
    return r;
}

bool PT(is_identity)(POINT p) {
    return FN(is_zero)(p.z);
}

bool PT(affine_is_identity)(CAT(POINT, _affine) p) {
    return FN(is_zero)(p.x) && FN(is_zero)(p.y);
}

POINT_FN POINT PT(double)(POINT p) {
    if (PT(is_identity)(p)) return p;
    FIELD a = FN(sqr)(p.x);
    FIELD b = FN(sqr)(p.y);
    FIELD c = FN(sqr)(b);
    FIELD d = FN(double)(FN(sub)(FN(sub)(FN(sqr)(FN(add)(p.x, b)), a), c));
    FIELD e = FN(add)(FN(double)(a), a);
    FIELD f = FN(sqr)(e);
    POINT r;
    r.x = FN(sub)(f, FN(double)(d));
    FIELD c8 = FN(double)(FN(double)(FN(double)(c)));
    r.y = FN(sub)(FN(mul)(e, FN(sub)(d, r.x)), c8);
    r.z = FN(double)(FN(mul)(p.y, p.z));
    return r;
}

POINT_FN POINT PT(add)(POINT p, POINT q) {
    if (PT(is_identity)(p)) return q;
    if (PT(is_identity)(q)) return p;
    FIELD z1z1 = FN(sqr)(p.z);
    FIELD z2z2 = FN(sqr)(q.z);
    FIELD u1 = FN(mul)(p.x, z2z2);
    FIELD u2 = FN(mul)(q.x, z1z1);
    FIELD s1 = FN(mul)(FN(mul)(p.y, q.z), z2z2);
    FIELD s2 = FN(mul)(FN(mul)(q.y, p.z), z1z1);
    if (FN(eq)(u1, u2)) {
        return FN(eq)(s1, s2) ? PT(double)(p) : PT(identity)();
    }
    FIELD h = FN(sub)(u2, u1);
    FIELD i = FN(sqr)(FN(double)(h));
    FIELD j = FN(mul)(h, i);
    FIELD r = FN(double)(FN(sub)(s2, s1));
    FIELD v = FN(mul)(u1, i);
    POINT o;
    o.x = FN(sub)(FN(sub)(FN(sqr)(r), j), FN(double)(v));
    o.y = FN(sub)(FN(mul)(r, FN(sub)(v, o.x)), FN(double)(FN(mul)(s1, j)));
    o.z = FN(mul)(FN(sub)(FN(sub)(FN(sqr)(FN(add)(p.z, q.z)), z1z1), z2z2), h);
    return o;
}

POINT PT(neg)(POINT p) {
    p.y = FN(neg)(p.y);
    return p;
}

typedef struct { FIELD x; FIELD y; FIELD zz; FIELD zzz; } CAT(POINT, _xyzz);

CAT(POINT, _xyzz) PT(xyzz_identity)() {
    CAT(POINT, _xyzz) r;
    r.x = FN(one)();
    r.y = FN(one)();
    r.zz = FN(zero)();
    r.zzz = FN(zero)();
    return r;
}

// 2 q for an affine q other than the identity (mdbl-2008-s-1 with a = 0). No affine point of
// these curves has y = 0, so the result is never the identity.
CAT(POINT, _xyzz) PT(xyzz_double_affine)(CAT(POINT, _affine) q) {
    FIELD u = FN(double)(q.y);
    FIELD v = FN(sqr)(u);
    FIELD w = FN(mul)(u, v);
    FIELD s = FN(mul)(q.x, v);
    FIELD xx = FN(sqr)(q.x);
    FIELD m = FN(add)(FN(double)(xx), xx);
    CAT(POINT, _xyzz) r;
    r.x = FN(sub)(FN(sqr)(m), FN(double)(s));
    r.y = FN(sub)(FN(mul)(m, FN(sub)(s, r.x)), FN(mul)(w, q.y));
    r.zz = v;
    r.zzz = w;
    return r;
}

// p + q for an affine q (madd-2008-s), any inputs: the identity in either place, p = q, p = -q.
POINT_FN CAT(POINT, _xyzz) PT(xyzz_add_affine)(CAT(POINT, _xyzz) p, CAT(POINT, _affine) q) {
    if (PT(affine_is_identity)(q)) return p;
    if (FN(is_zero)(p.zz)) {
        p.x = q.x;
        p.y = q.y;
        p.zz = FN(one)();
        p.zzz = FN(one)();
        return p;
    }
    FIELD u2 = FN(mul)(q.x, p.zz);
    FIELD s2 = FN(mul)(q.y, p.zzz);
    FIELD pp_ = FN(sub)(u2, p.x);
    FIELD r = FN(sub)(s2, p.y);
    if (FN(is_zero)(pp_)) {
        return FN(is_zero)(r) ? PT(xyzz_double_affine)(q) : PT(xyzz_identity)();
    }
    FIELD pp = FN(sqr)(pp_);
    FIELD ppp = FN(mul)(pp_, pp);
    FIELD qq = FN(mul)(p.x, pp);
    CAT(POINT, _xyzz) o;
    o.x = FN(sub)(FN(sub)(FN(sqr)(r), ppp), FN(double)(qq));
    o.y = FN(sub)(FN(mul)(r, FN(sub)(qq, o.x)), FN(mul)(p.y, ppp));
    o.zz = FN(mul)(p.zz, pp);
    o.zzz = FN(mul)(p.zzz, ppp);
    return o;
}

// The same point in Jacobian coordinates, without an inversion: Z = ZZ * ZZZ, X = X * ZZ * ZZZ^2,
// Y = Y * ZZZ^4 (then X / Z^2 = X / ZZ and Y / Z^3 = Y * ZZZ / ZZ^3 = Y / ZZZ, as ZZ^3 = ZZZ^2).
POINT PT(from_xyzz)(CAT(POINT, _xyzz) p) {
    if (FN(is_zero)(p.zz)) return PT(identity)();
    FIELD zzz2 = FN(sqr)(p.zzz);
    POINT r;
    r.x = FN(mul)(FN(mul)(p.x, zzz2), p.zz);
    r.y = FN(mul)(p.y, FN(sqr)(zzz2));
    r.z = FN(mul)(p.zz, p.zzz);
    return r;
}
