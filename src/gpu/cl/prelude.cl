// Shared definitions for every kernel source. Fields are instantiated from field.cl by defining
// FIELD (the type name), FIELD_LIMBS and the constants FIELD_P, FIELD_ONE, FIELD_R2 and FIELD_INV
// before including its text (src/gpu/source.rs does this), the way a C template is instantiated
// with the preprocessor.

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
// FN(add) is FIELD's add: Fr_add, Fq_add, ...
#define FN(name) CAT(FIELD, CAT(_, name))

// Build options chosen per device (src/gpu/program.rs): NVIDIA_PTX selects the inline-PTX field
// multiplication; NOINLINE_MUL and NOINLINE_POINTS keep those functions out of line, which cuts the
// driver's compile time (each kernel then holds one copy of the function instead of dozens).
#ifdef NOINLINE_MUL
#define MUL_FN __attribute__((noinline))
#else
#define MUL_FN
#endif
#ifdef NOINLINE_POINTS
#define POINT_FN __attribute__((noinline))
#else
#define POINT_FN
#endif
#ifdef NOINLINE_FQ2
#define FQ2_FN __attribute__((noinline))
#else
#define FQ2_FN
#endif
#ifdef PTX_PLAIN_ASM
#define PTX_ASM asm volatile
#else
#define PTX_ASM __asm__ volatile
#endif
