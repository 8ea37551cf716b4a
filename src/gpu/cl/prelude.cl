// Shared definitions for every kernel source. Fields are instantiated from field.cl by defining
// FIELD (the type name), FIELD_LIMBS and the constants FIELD_P, FIELD_ONE, FIELD_R2 and FIELD_INV
// before including its text (src/gpu/source.rs does this), the way a C template is instantiated
// with the preprocessor.

#define CAT2(a, b) a##b
#define CAT(a, b) CAT2(a, b)
// FN(add) is FIELD's add: Fr_add, Fq_add, ...
#define FN(name) CAT(FIELD, CAT(_, name))
