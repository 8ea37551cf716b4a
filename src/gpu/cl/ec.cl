// Points of a short Weierstrass curve y^2 = x^3 + b with a = 0, coordinates in FIELD
// (instantiated as G1 over Fq and G2 over Fq2); FIELD must provide zero, one, is_zero, eq, add,
// sub, double, neg, mul and sqr. Projective points are Jacobian (X, Y, Z) for (X / Z^2, Y / Z^3),
// the identity has Z = 0 (results go to the host this way: blst keeps the same coordinates). Affine bases are (x, y) with the identity encoded as x = y = 0, as blst
// does (no affine point of these curves has y = 0). Every function handles the identity in every
// input position, and equal or opposite inputs: a multiexp meets all of these.
// Formulas: Bernstein and Lange, Explicit-Formulas Database, dbl-2009-l, add-2007-bl,
// madd-2007-bl (https://hyperelliptic.org/EFD/g1p/auto-shortw-jacobian-0.html).

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

POINT_FN POINT PT(add_affine)(POINT p, CAT(POINT, _affine) q) {
    if (PT(affine_is_identity)(q)) return p;
    if (PT(is_identity)(p)) {
        POINT r;
        r.x = q.x;
        r.y = q.y;
        r.z = FN(one)();
        return r;
    }
    FIELD z1z1 = FN(sqr)(p.z);
    FIELD u2 = FN(mul)(q.x, z1z1);
    FIELD s2 = FN(mul)(FN(mul)(q.y, p.z), z1z1);
    if (FN(eq)(p.x, u2)) {
        return FN(eq)(p.y, s2) ? PT(double)(p) : PT(identity)();
    }
    FIELD h = FN(sub)(u2, p.x);
    FIELD hh = FN(sqr)(h);
    FIELD i = FN(double)(FN(double)(hh));
    FIELD j = FN(mul)(h, i);
    FIELD r = FN(double)(FN(sub)(s2, p.y));
    FIELD v = FN(mul)(p.x, i);
    POINT o;
    o.x = FN(sub)(FN(sub)(FN(sqr)(r), j), FN(double)(v));
    o.y = FN(sub)(FN(mul)(r, FN(sub)(v, o.x)), FN(double)(FN(mul)(p.y, j)));
    o.z = FN(sub)(FN(sub)(FN(sqr)(FN(add)(p.z, h)), z1z1), hh);
    return o;
}

POINT PT(neg)(POINT p) {
    p.y = FN(neg)(p.y);
    return p;
}
