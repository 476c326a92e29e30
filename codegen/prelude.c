/* prelude.c — the text every generated C translation unit starts with.
 *
 * Generated kernels are compiled with no C library: by libtcc in memory, by
 * cc into a shared object whose undefined symbols are checked, or into libhk.
 * So the prelude declares what bodies may use itself: the fixed-width types,
 * the math functions of mathfns.h (double and float), type-generic macros
 * over them (exp on a float calls expf, as in <tgmath.h> and CUDA C++), the
 * classification macros, and the constants. The same text works under tcc,
 * gcc and clang.
 */
#include <pthread.h>
#include <string.h>

#include "emit.h"
#include "mathfns.h"

/* The fixed-width integer types and size_t, without system headers. */
static void put_types(hku_buf *o) {
  hku_buf_put(o,
              "typedef __SIZE_TYPE__ size_t;\n"
              "typedef __PTRDIFF_TYPE__ ptrdiff_t;\n"
              "typedef signed char int8_t;\n"
              "typedef short int16_t;\n"
              "typedef int int32_t;\n"
              "typedef unsigned char uint8_t;\n"
              "typedef unsigned short uint16_t;\n"
              "typedef unsigned int uint32_t;\n"
              "#ifdef __INT64_TYPE__\n"
              "typedef __INT64_TYPE__ int64_t;\n"
              "typedef __UINT64_TYPE__ uint64_t;\n"
              "#else\n"
              "typedef long int64_t;\n"
              "typedef unsigned long uint64_t;\n"
              "#endif\n"
              "typedef char hk_check_int64_size[sizeof(int64_t) == 8 ? 1 : "
              "-1];\n"
              "typedef char hk_check_int32_size[sizeof(int32_t) == 4 ? 1 : "
              "-1];\n\n");
}

static const char *sig_ret(const char *sig, int f) {
  if (sig[0] == 'I') return "int";
  if (sig[0] == 'L' && sig[1] == 'L') return "long long";
  if (sig[0] == 'L') return "long";
  return f ? "float" : "double";
}

/* The declarations of math function name, double and float, of signature
 * sig (mathfns.h). */
static void put_decl(hku_buf *o, const char *name, const char *sig) {
  for (int f = 0; f < 2; f++) {
    const char *t = f ? "float" : "double";
    const char *args = sig + (sig[1] == 'L' ? 3 : 2); /* after "X_" */
    hku_buf_printf(o, "%s %s%s(", sig_ret(sig, f), name, f ? "f" : "");
    for (const char *a = args; *a; a++) {
      const char *at = *a == 'D' ? t : *a == 'I' ? "int" : "long";
      hku_buf_printf(o, "%s%s", a == args ? "" : ", ", at);
    }
    hku_buf_put(o, ");\n");
  }
}

/* Is name one of common/hkmath.h's functions (mathfns.h)? */
static int is_hkmath(const char *name) {
#define HKM_NAME(n) #n,
  static const char *const names[] = {HKC_MATH_HKMATH(HKM_NAME) NULL};
#undef HKM_NAME
  for (const char *const *n = names; *n; n++)
    if (!strcmp(*n, name)) return 1;
  return 0;
}

/* The macros that send name and namef to hkmath.h's hk_name and hk_namef
 * (one or two arguments). */
static void put_hkmath_generic(hku_buf *o, const char *name, int two) {
  const char *a = two ? "x, y" : "x";
  hku_buf_printf(o,
                 "#define %s(%s) _Generic(%s, float: hk_%sf, default: "
                 "hk_%s)(%s)\n#define %sf(%s) hk_%sf(%s)\n",
                 name, a, two ? "(x) + (y)" : "+(x)", name, name, a, name, a,
                 name, a);
}

/* A type-generic macro over the double and float versions of name. */
static void put_generic(hku_buf *o, const char *name, const char *sig) {
  const char *args = sig + (sig[1] == 'L' ? 3 : 2);
  size_t nd = 0;
  for (const char *a = args; *a; a++) nd += *a == 'D';
  if (is_hkmath(name)) {
    put_hkmath_generic(o, name, nd == 2);
    return;
  }
  /* The controlling expression is an rvalue (+x, x + y) so that a const
   * float selects the float function under every compiler. */
  if (nd == 1 && args[1] == '\0')
    hku_buf_printf(o,
                   "#define %s(x) _Generic(+(x), float: %sf, default: %s)(x)\n",
                   name, name, name);
  else if (nd == 1)
    hku_buf_printf(
        o, "#define %s(x, e) _Generic(+(x), float: %sf, default: %s)(x, e)\n",
        name, name, name);
  else if (nd == 2)
    hku_buf_printf(o,
                   "#define %s(x, y) _Generic((x) + (y), float: %sf, default: "
                   "%s)(x, y)\n",
                   name, name, name);
  else
    hku_buf_printf(o,
                   "#define %s(x, y, z) _Generic((x) + (y) + (z), float: %sf, "
                   "default: %s)(x, y, z)\n",
                   name, name, name);
}

/* Every math function, its macro, and the classification macros. */
static void put_math(hku_buf *o) {
  hku_buf_put(o, "/* The C99 math functions kernel code may call. */\n");
#define DECL(name, sig) put_decl(o, #name, #sig);
  HKC_MATH_LIBM(DECL)
#undef DECL
  hku_buf_put(o, "\n/* Type generic, as in <tgmath.h> and CUDA C++. */\n");
#define GEN(name, sig) put_generic(o, #name, #sig);
  HKC_MATH_FUNCTIONS(GEN)
#undef GEN
  hku_buf_put(
      o,
      "\n/* Classification, the same under every compiler. */\n"
      "#define HK_MAYBE_UNUSED __attribute__((unused))\n"
      "HK_MAYBE_UNUSED static inline int hk_isnanf(float x) { return x != x; }\n"
      "HK_MAYBE_UNUSED static inline int hk_isnan(double x) { return x != x; }\n"
      "HK_MAYBE_UNUSED static inline int hk_isinff(float x) { return x == x && x - x != x - x; "
      "}\n"
      "HK_MAYBE_UNUSED static inline int hk_isinf(double x) { return x == x && x - x != x - x; "
      "}\n"
      "HK_MAYBE_UNUSED static inline int hk_isfinitef(float x) { return x - x == x - x; }\n"
      "HK_MAYBE_UNUSED static inline int hk_isfinite(double x) { return x - x == x - x; }\n"
      "HK_MAYBE_UNUSED static inline int hk_isnormalf(float x) { float m = fabsf(x); "
      "return m >= 1.17549435082228750797e-38F && m <= "
      "3.40282346638528859812e+38F; }\n"
      "HK_MAYBE_UNUSED static inline int hk_isnormal(double x) { double m = fabs(x); "
      "return m >= 2.22507385850720138309e-308 && m <= "
      "1.79769313486231570815e+308; }\n"
      "HK_MAYBE_UNUSED static inline int hk_signbitf(float x) { union { float f; uint32_t u; "
      "} v; v.f = x; return (int)(v.u >> 31); }\n"
      "HK_MAYBE_UNUSED static inline int hk_signbit(double x) { union { double f; uint64_t u; "
      "} v; v.f = x; return (int)(v.u >> 63); }\n"
      "#define isnan(x) _Generic(+(x), float: hk_isnanf, default: "
      "hk_isnan)(x)\n"
      "#define isinf(x) _Generic(+(x), float: hk_isinff, default: "
      "hk_isinf)(x)\n"
      "#define isfinite(x) _Generic(+(x), float: hk_isfinitef, default: "
      "hk_isfinite)(x)\n"
      "#define isnormal(x) _Generic(+(x), float: hk_isnormalf, default: "
      "hk_isnormal)(x)\n"
      "#define signbit(x) _Generic(+(x), float: hk_signbitf, default: "
      "hk_signbit)(x)\n\n");
  /* where(c, a, b): c ? a : b of the type of a + b, chosen on the bits, so
   * that neither side becomes conditional code: gcc does not if-convert an
   * if or ?: whose sides call math functions (-ftrapping-math), which
   * keeps such a loop scalar (logsumexp's combine); this one vectorises
   * there. A plain ?: (c ? x : y) does not need it, and where gcc leaves
   * the code scalar anyway it costs more than a ?: (schemas/README.md). */
  hku_buf_put(
      o,
      "/* where(c, a, b): c ? a : b without a branch. */\n"
      "HK_MAYBE_UNUSED static inline float hk_wheref(int c, float a, float "
      "b) { union { float f; uint32_t u; } x, y; uint32_t m = 0u - "
      "(uint32_t)c; x.f = a; y.f = b; x.u = (x.u & m) | (y.u & ~m); return "
      "x.f; }\n"
      "HK_MAYBE_UNUSED static inline double hk_where(int c, double a, double "
      "b) { union { double f; uint64_t u; } x, y; uint64_t m = 0u - "
      "(uint64_t)c; x.f = a; y.f = b; x.u = (x.u & m) | (y.u & ~m); return "
      "x.f; }\n"
      "HK_MAYBE_UNUSED static inline int64_t hk_wherei(int c, int64_t a, "
      "int64_t b) { int64_t m = -(int64_t)c; return (a & m) | (b & ~m); }\n"
      "#define where(c, a, b) ((__typeof__((a) + (b)))_Generic((a) + (b), "
      "float: hk_wheref, double: hk_where, default: hk_wherei)((c) != 0, "
      "(a), (b)))\n\n");
}

/* The math constants (M_PI, INFINITY, ...). */
static void put_constants(hku_buf *o) {
  hku_buf_put(
      o,
      "/* Constants. */\n"
      "#if defined(__GNUC__) && !defined(__TINYC__)\n"
      "#define INFINITY (__builtin_inff())\n"
      "#define NAN (__builtin_nanf(\"\"))\n"
      "#define HUGE_VAL (__builtin_huge_val())\n"
      "#else\n"
      "#define INFINITY (1.0f / 0.0f)\n"
      "#define NAN (0.0f / 0.0f)\n"
      "#define HUGE_VAL (1.0 / 0.0)\n"
      "#endif\n"
      "#define HUGE_VALF INFINITY\n"
      "#define M_E 2.7182818284590452354\n"
      "#define M_LOG2E 1.4426950408889634074\n"
      "#define M_LOG10E 0.43429448190325182765\n"
      "#define M_LN2 0.69314718055994530942\n"
      "#define M_LN10 2.30258509299404568402\n"
      "#define M_PI 3.14159265358979323846\n"
      "#define M_PI_2 1.57079632679489661923\n"
      "#define M_PI_4 0.78539816339744830962\n"
      "#define M_1_PI 0.31830988618379067154\n"
      "#define M_2_PI 0.63661977236758134308\n"
      "#define M_2_SQRTPI 1.12837916709551257390\n"
      "#define M_SQRT2 1.41421356237309504880\n"
      "#define M_SQRT1_2 0.70710678118654752440\n"
      "#define FLT_MAX 3.40282346638528859812e+38F\n"
      "#define FLT_MIN 1.17549435082228750797e-38F\n"
      "#define FLT_EPSILON 1.1920928955078125e-07F\n"
      "#define DBL_MAX 1.79769313486231570815e+308\n"
      "#define DBL_MIN 2.22507385850720138309e-308\n"
      "#define DBL_EPSILON 2.22044604925031308085e-16\n");
}

/* On CUDA the f16 conversions of every value but a NaN are the GPU's own
 * instructions, which round as the code below does (cvt.rn: nearest even;
 * inf beyond the range; subnormals both ways, no flushing without .ftz):
 * the same bits, in one instruction instead of some twenty (GELU in f16
 * ran 1.39x the time of f32 on an H200 with the code alone). NaNs keep
 * the code below, which keeps their payload. HK_NO_PTX leaves the
 * instructions out: tests/rows_emulate.cc runs this code as host C++. */
static const char cuda_f16_to_f32[] =
    "#ifndef HK_NO_PTX\n"
    "    if ((h & 0x7fffu) <= 0x7c00u) {\n"
    "        float f;\n"
    "        asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(h));\n"
    "        return f;\n"
    "    }\n"
    "#endif\n";
static const char cuda_f32_to_f16[] =
    "#ifndef HK_NO_PTX\n"
    "    if ((hk_f2u(f) & 0x7fffffffu) <= 0x7f800000u) {\n"
    "        unsigned short h;\n"
    "        asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f));\n"
    "        return (uint16_t)h;\n"
    "    }\n"
    "#endif\n";

/* The conversions between the stored and the computed forms of f16 and
 * bf16 (kernel.h), one text for C (tcc, gcc, clang) and CUDA: branch-free
 * integer and float bit manipulation (after Fabian Giesen's
 * float_to_half_fast3_rtne), so that compilers vectorise loops over them,
 * needing HK_CONV (the functions' qualifiers), hk_f2u and hk_u2f (a float's
 * bits and back) from the prelude around it.
 *   f16 -> f32: exact; a NaN keeps its sign and payload (as NumPy does).
 *   f32 -> f16: rounded to nearest, ties to even; overflow gives inf;
 *     subnormals both ways; a NaN stays a NaN with its sign and the top 10
 *     bits of its payload (set to 1 when those are all 0), as NumPy does:
 *     every f16 converts to f32 and back to itself.
 *   bf16 <-> f32: the upper 16 bits, rounded to nearest even; a NaN as for
 *     f16 (top 7 payload bits).
 * The subnormal path of f32 -> f16 adds 0.5f in float: correct under
 * round to nearest (every target's default), with or without flushing of
 * subnormals. cuda: the f16 ones take the GPU's instructions first (above). */
static void put_conversions(hku_buf *o, int cuda) {
  hku_buf_put(
      o,
      "HK_CONV float hk_f16_to_f32(const uint16_t h)\n"
      "{\n"
  );
  if (cuda)
    hku_buf_put(o, cuda_f16_to_f32);
  hku_buf_put(
      o,
      "    const uint32_t s = (uint32_t)(h & 0x8000u) << 16;\n"
      "    const uint32_t em = (uint32_t)h & 0x7fffu;\n"
      "    const uint32_t e = em & 0x7c00u;\n"
      "    const uint32_t is_inf = 0u - (uint32_t)(e == 0x7c00u);\n"
      "    const uint32_t is_sub = 0u - (uint32_t)(e == 0u);\n"
      "    /* normal: the exponent rebiased; inf and NaN: all ones */\n"
      "    const uint32_t norm = (em << 13) + 0x38000000u + (is_inf & 0x38000000u);\n"
      "    /* zero and subnormal: exactly em * 2^-24 */\n"
      "    const uint32_t den = hk_f2u((float)(int32_t)em * 5.9604644775390625e-8f);\n"
      "    return hk_u2f(s | (norm & ~is_sub) | (den & is_sub));\n"
      "}\n"
      "HK_CONV uint16_t hk_f32_to_f16(const float f)\n"
      "{\n"
  );
  if (cuda)
    hku_buf_put(o, cuda_f32_to_f16);
  hku_buf_put(
      o,
      "    const uint32_t x = hk_f2u(f);\n"
      "    const uint32_t s = (x >> 16) & 0x8000u;\n"
      "    const uint32_t a = x & 0x7fffffffu;\n"
      "    const uint32_t is_nan = 0u - (uint32_t)(a > 0x7f800000u);\n"
      "    const uint32_t is_big = 0u - (uint32_t)(a >= 0x47800000u);\n"
      "    const uint32_t is_sub = 0u - (uint32_t)(a < 0x38800000u);\n"
      "    /* normal: rebiased, rounded to nearest even at bit 13 (a carry\n"
      "     * into the exponent is right, up to inf) */\n"
      "    const uint32_t norm = (a + 0xc8000fffu + ((a >> 13) & 1u)) >> 13;\n"
      "    /* below 2^-14: the float addition rounds to nearest even */\n"
      "    const uint32_t den = hk_f2u(hk_u2f(a) + 0.5f) - 0x3f000000u;\n"
      "    const uint32_t pay = (a >> 13) & 0x3ffu;\n"
      "    const uint32_t m_nan = 0x7c00u | pay | (uint32_t)(pay == 0u);\n"
      "    uint32_t r = (norm & ~is_sub) | (den & is_sub);\n"
      "    r = (r & ~is_big) | (0x7c00u & is_big);\n"
      "    r = (r & ~is_nan) | (m_nan & is_nan);\n"
      "    return (uint16_t)(r | s);\n"
      "}\n"
      "HK_CONV float hk_bf16_to_f32(const uint16_t h)\n"
      "{\n"
      "    return hk_u2f((uint32_t)h << 16);\n"
      "}\n"
      "HK_CONV uint16_t hk_f32_to_bf16(const float f)\n"
      "{\n"
      "    const uint32_t x = hk_f2u(f);\n"
      "    const uint32_t is_nan = 0u - (uint32_t)((x & 0x7fffffffu) > 0x7f800000u);\n"
      "    const uint32_t r = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;\n"
      "    const uint32_t t = x >> 16;\n"
      "    const uint32_t m_nan = t | (uint32_t)((t & 0x7fu) == 0u);\n"
      "    return (uint16_t)((r & ~is_nan) | (m_nan & is_nan));\n"
      "}\n\n");
}

/* The f16 conversions of a block of m elements, for emit_c.c: the staged
 * loops of elementwise kernels, the lane blocks of reductions. With
 * F16C (x86-64-v3 and up: the stdlib's v3/v4 variants, tier opt on such a
 * CPU), 8 at a time by vcvtph2ps / vcvtps2ph (16 at a time with AVX-512:
 * the v4 variants, tier opt there), which round as
 * hk_f16_to_f32 / hk_f32_to_f16 do (nearest even; subnormals both ways)
 * but quiet a signalling NaN, which the software keeps (as NumPy does):
 * in a block that holds a NaN (one test per 8 or 16 elements) those lanes are
 * put back, so the bits are the same on every tier
 * (test_types checks every f16 pattern and 4 million f32 values on tier
 * opt against tier jit's software). gcc 12 does not vectorise _Float16
 * conversions without AVX512-FP16, hence the builtins (gcc and clang have
 * them). Elsewhere, and for the block's tail, the one-element functions. */
static void put_c_block_conversions(hku_buf *o) {
  hku_buf_put(
      o,
      "#if defined(__F16C__) && defined(__AVX__) && defined(__GNUC__) && \\\n"
      "    !defined(__TINYC__)\n"
      "typedef float hk_v8sf __attribute__((vector_size(32)));\n"
      "typedef int32_t hk_v8si __attribute__((vector_size(32)));\n"
      "typedef float hk_v8sf_u __attribute__((vector_size(32), aligned(4), may_alias));\n"
      "/* any lane of a comparison's mask set */\n"
      "#define HK_ANY8(mask) __builtin_ia32_movmskps256((hk_v8sf)(mask))\n"
      "typedef short hk_v8hi __attribute__((vector_size(16)));\n"
      "typedef short hk_v8hi_u __attribute__((vector_size(16), aligned(2), may_alias));\n"
      "#if defined(__AVX512F__) && defined(__AVX2__)\n"
      "/* 16 at a time, so that a 64-byte load of the block (the stdlib's v4\n"
      " * loops, a reduction's 16 lanes) reads what one store wrote: one that\n"
      " * spans two 32-byte stores waits for them to reach the cache instead\n"
      " * of being forwarded (the f16 sum took 3.8 times the f32 one) */\n"
      "#define HK_CONV16 1\n"
      "typedef float hk_v16sf __attribute__((vector_size(64)));\n"
      "typedef float hk_v16sf_u __attribute__((vector_size(64), aligned(4), may_alias));\n"
      "typedef int32_t hk_v16si __attribute__((vector_size(64)));\n"
      "typedef short hk_v16hi __attribute__((vector_size(32)));\n"
      "typedef short hk_v16hi_u __attribute__((vector_size(32), aligned(2), may_alias));\n"
      "typedef char hk_v32qi __attribute__((vector_size(32)));\n"
      "/* any lane of a 16-bit comparison's mask set */\n"
      "#define HK_ANY16(mask) __builtin_ia32_pmovmskb256((hk_v32qi)(mask))\n"
      "#endif\n"
      "HK_CONV void hk_f16_to_f32_n(const uint16_t *s, float *d, size_t m)\n"
      "{\n"
      "    size_t j = 0;\n"
      "#if defined(HK_CONV16)\n"
      "    for (; j + 16 <= m; j += 16) {\n"
      "        const hk_v16hi h = *(const hk_v16hi_u *)(s + j);\n"
      "        hk_v16sf f = __builtin_ia32_vcvtph2ps512_mask(h, (hk_v16sf){0}, (unsigned short)0xffff, 4);\n"
      "        const hk_v16hi w = h & 0x7fff;\n"
      "        if (__builtin_expect(HK_ANY16(w > 0x7c00), 0)) {\n"
      "            /* as below */\n"
      "            const hk_v16si wi = __builtin_convertvector(w, hk_v16si);\n"
      "            const hk_v16si snan = (wi > 0x7c00) & ((wi & 0x200) == 0);\n"
      "            f = (hk_v16sf)((hk_v16si)f & ~(snan & 0x400000));\n"
      "        }\n"
      "        *(hk_v16sf_u *)(d + j) = f;\n"
      "    }\n"
      "#endif\n"
      "    for (; j + 8 <= m; j += 8) {\n"
      "        const hk_v8hi h = *(const hk_v8hi_u *)(s + j);\n"
      "        hk_v8sf f = __builtin_ia32_vcvtph2ps256(h);\n"
      "        if (__builtin_expect(HK_ANY8(f != f), 0)) {\n"
      "            /* a signalling NaN: its quiet bit (22) cleared again */\n"
      "            const hk_v8si w = __builtin_convertvector(h, hk_v8si) & 0x7fff;\n"
      "            const hk_v8si snan = (w > 0x7c00) & ((w & 0x200) == 0);\n"
      "            f = (hk_v8sf)((hk_v8si)f & ~(snan & 0x400000));\n"
      "        }\n"
      "        *(hk_v8sf_u *)(d + j) = f;\n"
      "    }\n"
      "    for (; j < m; ++j) d[j] = hk_f16_to_f32(s[j]);\n"
      "}\n"
      "HK_CONV void hk_f32_to_f16_n(const float *s, uint16_t *d, size_t m)\n"
      "{\n"
      "    size_t j = 0;\n"
      "#if defined(HK_CONV16)\n"
      "    for (; j + 16 <= m; j += 16) {\n"
      "        const hk_v16sf f = *(const hk_v16sf_u *)(s + j);\n"
      "        hk_v16hi r = __builtin_ia32_vcvtps2ph512_mask(f, 0, (hk_v16hi){0}, (unsigned short)0xffff);\n"
      "        const hk_v16si x = (hk_v16si)f, a = x & 0x7fffffff;\n"
      "        const hk_v16hi nan = __builtin_convertvector(a > 0x7f800000, hk_v16hi);\n"
      "        if (__builtin_expect(HK_ANY16(nan), 0)) {\n"
      "            /* as below */\n"
      "            const hk_v16si pay = (a >> 13) & 0x3ff;\n"
      "            const hk_v16si fix = ((x >> 16) & 0x8000) | 0x7c00 | pay | ((pay == 0) & 1);\n"
      "            r = (r & ~nan) | (__builtin_convertvector(fix, hk_v16hi) & nan);\n"
      "        }\n"
      "        *(hk_v16hi_u *)(d + j) = r;\n"
      "    }\n"
      "#endif\n"
      "    for (; j + 8 <= m; j += 8) {\n"
      "        const hk_v8sf f = *(const hk_v8sf_u *)(s + j);\n"
      "        hk_v8hi r = __builtin_ia32_vcvtps2ph256(f, 0); /* nearest even */\n"
      "        const hk_v8si nan = f != f;\n"
      "        if (__builtin_expect(HK_ANY8(nan), 0)) {\n"
      "            /* NaN lanes as hk_f32_to_f16 makes them: the sign, the\n"
      "             * top 10 payload bits (1 when those are 0), not quietened */\n"
      "            const hk_v8si x = (hk_v8si)f, a = x & 0x7fffffff;\n"
      "            const hk_v8si pay = (a >> 13) & 0x3ff;\n"
      "            const hk_v8si fix = nan & (((x >> 16) & 0x8000) | 0x7c00 | pay | ((pay == 0) & 1));\n"
      "            r = (r & ~__builtin_convertvector(nan, hk_v8hi)) |\n"
      "                __builtin_convertvector(fix, hk_v8hi);\n"
      "        }\n"
      "        *(hk_v8hi_u *)(d + j) = r;\n"
      "    }\n"
      "    for (; j < m; ++j) d[j] = hk_f32_to_f16(s[j]);\n"
      "}\n"
      "#else\n"
      "HK_CONV void hk_f16_to_f32_n(const uint16_t *s, float *d, size_t m)\n"
      "{\n"
      "    for (size_t j = 0; j < m; ++j) d[j] = hk_f16_to_f32(s[j]);\n"
      "}\n"
      "HK_CONV void hk_f32_to_f16_n(const float *s, uint16_t *d, size_t m)\n"
      "{\n"
      "    for (size_t j = 0; j < m; ++j) d[j] = hk_f32_to_f16(s[j]);\n"
      "}\n"
      "#endif\n\n");
}

/* The C side of the conversions: hk_bool, the bit casts, then the shared
 * text. */
static void put_c_conversions(hku_buf *o) {
  hku_buf_put(
      o,
      "\n/* bool as kernel code sees it; stored as uint8_t 0/1 */\n"
      "typedef _Bool hk_bool;\n"
      "/* a for loop's int counter, widened (emit_common.c: hkc_put_code) */\n"
      "typedef int64_t hk_;\n"
      "/* f16 and bf16, stored as uint16_t, computed as float */\n"
      "#define HK_CONV HK_MAYBE_UNUSED static inline\n"
      "HK_CONV uint32_t hk_f2u(const float f) { union { float f; uint32_t u; } "
      "v; v.f = f; return v.u; }\n"
      "HK_CONV float hk_u2f(const uint32_t u) { union { float f; uint32_t u; } "
      "v; v.u = u; return v.f; }\n");
  put_conversions(o, 0);
  put_c_block_conversions(o);
}

/* The math of common/hkmath.h (the text generated from it), after what it
 * needs besides hk_f2u and hk_u2f. tcc, which compiles every function it
 * sees and inlines none, gets declarations instead: the JIT's symbol table
 * (core/symbols.c) holds the same text compiled into libhk (contraction
 * off: the same bits), which spares every tier-jit unit 0.8 ms. */
extern const char hkc_math_text[];
static void put_c_math(hku_buf *o) {
  hku_buf_put(o,
              "\n/* ---- common/hkmath.h ---- */\n"
              "#if defined(__TINYC__)\n");
#define HKM_DECL(n)                                                       \
  hku_buf_printf(o, strcmp(#n, "pow")                                      \
                        ? "double hk_%s(double);\nfloat hk_%sf(float);\n"   \
                        : "double hk_%s(double, double);\n"                \
                          "float hk_%sf(float, float);\n",                 \
                 #n, #n);
  HKC_MATH_HKMATH(HKM_DECL)
#undef HKM_DECL
  hku_buf_put(
      o,
      "#else\n"
      "HK_CONV uint64_t hk_d2u(const double f) { union { double f; uint64_t "
      "u; } v; v.f = f; return v.u; }\n"
      "HK_CONV double hk_u2d(const uint64_t u) { union { double f; uint64_t "
      "u; } v; v.u = u; return v.f; }\n"
      "/* inlined, so that loops calling them vectorise */\n"
      "#define HKM_FN HK_MAYBE_UNUSED static inline "
      "__attribute__((always_inline))\n"
      "#define HKM_TABLE HK_MAYBE_UNUSED static const\n");
  hku_buf_put(o, hkc_math_text);
  hku_buf_put(o, "#endif /* common/hkmath.h */\n");
}

/* The integer limits (INT32_MAX, ...), without system headers. */
static void put_limits(hku_buf *o) {
  hku_buf_put(o,
              "#define INT8_MIN (-128)\n"
              "#define INT8_MAX 127\n"
              "#define INT16_MIN (-32767 - 1)\n"
              "#define INT16_MAX 32767\n"
              "#define INT32_MIN (-2147483647 - 1)\n"
              "#define INT32_MAX 2147483647\n"
              "#define INT64_MAX ((int64_t)0x7fffffffffffffffLL)\n"
              "#define INT64_MIN (-INT64_MAX - 1)\n"
              "#define UINT8_MAX 255\n"
              "#define UINT16_MAX 65535\n"
              "#define UINT32_MAX 4294967295U\n"
              "#define UINT64_MAX ((uint64_t)0xffffffffffffffffULL)\n"
              "#define SIZE_MAX ((size_t)-1)\n");
}

/* HK_IVDEP and HK_INLINE for the compiler at hand. */
static void put_pragmas(hku_buf *o) {
  hku_buf_put(
      o,
      "\n/* Elementwise loops have no dependence between iterations; saying so\n"
      " * lets the compiler vectorize without assuming the buffers are\n"
      " * disjoint, which keeps in-place calls (out == in) correct. */\n"
      "#if defined(__clang__)\n"
      "/* A loop that calls a libm function cannot vectorize; that is fine. */\n"
      "#pragma clang diagnostic ignored \"-Wpass-failed\"\n"
      "#define HK_IVDEP _Pragma(\"clang loop vectorize(assume_safety)\")\n"
      "#elif defined(__GNUC__) && !defined(__TINYC__)\n"
      "#define HK_IVDEP _Pragma(\"GCC ivdep\")\n"
      "#else\n"
      "#define HK_IVDEP\n"
      "#endif\n"
      "/* Functions holding author code. tcc compiles an inline function only\n"
      " * when it is first used, replaying its tokens with line numbers one\n"
      " * too low, which would misplace compile errors; it inlines nothing\n"
      " * anyway. */\n"
      "#if defined(__TINYC__)\n"
      "#define HK_INLINE static\n"
      "#else\n"
      "#define HK_INLINE static inline\n"
      "#endif\n"
      "/* Loops compiled once, whatever calls them (emit_c.c: colred). */\n"
      "#if defined(__GNUC__) && !defined(__TINYC__)\n"
      "#define HK_NOINLINE static __attribute__((noinline))\n"
      "#else\n"
      "#define HK_NOINLINE static\n"
      "#endif\n"
      "/* A reduction's loop over its lanes, kept a loop: gcc unrolls it whole\n"
      " * and then vectorises the lanes only when the combine is a plain\n"
      " * reduction (a + b); a select, as in max's, stayed scalar. As a loop\n"
      " * it is vectorised as an elementwise loop (the lanes are independent)\n"
      " * and its vector stays in a register. */\n"
      "#if defined(__GNUC__) && !defined(__clang__) && !defined(__TINYC__)\n"
      "#define HK_LANE_LOOP _Pragma(\"GCC unroll 1\")\n"
      "#else\n"
      "#define HK_LANE_LOOP\n"
      "#endif\n"
      "/* A reduction's tree over its lanes in vectors (GCC's vector\n"
      " * extensions, which clang has too; emit_c.c): the same pairs combined,\n"
      " * so the same bits as the scalar tree tcc runs. */\n"
      "#if defined(__GNUC__) && !defined(__TINYC__)\n"
      "#define HK_VEC_TREE 1\n"
      "#else\n"
      "#define HK_VEC_TREE 0\n"
      "#endif\n"
      "/* The bytes of a hand-written vector (emit_argsel.c): AVX's 32 on\n"
      " * AVX-512 too, whatever HK_VECTOR_WIDTH says (four such vectors\n"
      " * already read faster than NumPy's argmax). */\n"
      "#if defined(__AVX__)\n"
      "#define HK_VB 32\n"
      "#else\n"
      "#define HK_VB 16\n"
      "#endif\n"
      "/* Any two-vector shuffle of such vectors in one instruction\n"
      " * (AVX-512VL's vpermt2ps): rowred takes rows of up to 8 floats in one\n"
      " * run apart by shuffles, not 6 (emit_c.c, hk_rowc). */\n"
      "#if defined(__AVX512VL__)\n"
      "#define HK_ROWC_WIDE 1\n"
      "#else\n"
      "#define HK_ROWC_WIDE 0\n"
      "#endif\n"
      "/* Two vectors' elements, picked by constant indices (emit_c.c:\n"
      " * rowred's batches); M is the mask's vector type, for gcc. */\n"
      "#if defined(__clang__)\n"
      "#define HK_SHUF(M, a, b, ...) __builtin_shufflevector(a, b, __VA_ARGS__)\n"
      "#elif defined(__GNUC__) && !defined(__TINYC__)\n"
      "#define HK_SHUF(M, a, b, ...) __builtin_shuffle(a, b, (M){__VA_ARGS__})\n"
      "#endif\n\n");
}

/* Formats the prelude of mode (the cache below keeps one copy). */
static void emit_prelude(hkc_emit_mode mode, hku_buf *o) {
  hku_buf_put(o, "/* ---- hk prelude ---- */\n");
  if (mode == HKC_EMIT_STDLIB) {
    hku_buf_put(o,
                "#include <stddef.h>\n"
                "#include <stdint.h>\n\n"
                "#include \"abi.h\"\n"
                "#include \"hk.h\"\n\n");
  } else {
    put_types(o);
  }
  put_math(o);
  put_constants(o);
  if (mode == HKC_EMIT_PLUGIN) put_limits(o);
  put_c_conversions(o);
  put_c_math(o);
  put_pragmas(o);
  hkc_emit_len_helpers(o);
}

/* The prelude depends on the mode only, and formatting it (hundreds of
 * printf calls) costs more than the rest of a small kernel's source: each
 * mode's text is made once per process and copied after that. Kept for the
 * life of the process (NULL if that allocation failed: then emitted each
 * time). */
static struct {
  pthread_once_t once;
  char *text;
  size_t len;
} preludes[2] = {{PTHREAD_ONCE_INIT, NULL, 0}, {PTHREAD_ONCE_INIT, NULL, 0}};

static void make_prelude(hkc_emit_mode mode) {
  hku_buf b = HKU_BUF_INIT;
  emit_prelude(mode, &b);
  size_t len = b.len;
  char *text = hku_buf_take(&b); /* NULL when out of memory */
  preludes[mode == HKC_EMIT_STDLIB].len = text ? len : 0;
  preludes[mode == HKC_EMIT_STDLIB].text = text;
}
static void make_plugin_prelude(void) { make_prelude(HKC_EMIT_PLUGIN); }
static void make_stdlib_prelude(void) { make_prelude(HKC_EMIT_STDLIB); }

const char *hkc_prelude_get(hkc_emit_mode mode, size_t *len) {
  int i = mode == HKC_EMIT_STDLIB;
  pthread_once(&preludes[i].once,
               i ? make_stdlib_prelude : make_plugin_prelude);
  *len = preludes[i].len;
  return preludes[i].text;
}

void hkc_emit_prelude(hkc_emit_mode mode, hku_buf *o) {
  size_t len;
  const char *text = hkc_prelude_get(mode, &len);
  if (text)
    hku_buf_putn(o, text, len);
  else
    emit_prelude(mode, o);
}

/* common/hkmath.h for CUDA, and the overloads that give exp(x) on a float
 * hk_expf, on anything else hk_exp (as the C prelude's _Generic does:
 * integers compute in double). */
static void put_cuda_math(hku_buf *o) {
  hku_buf_put(
      o,
      "\n/* ---- common/hkmath.h ---- */\n"
      "HK_CONV uint64_t hk_d2u(const double f) { return "
      "(uint64_t)__double_as_longlong(f); }\n"
      "HK_CONV double hk_u2d(const uint64_t u) { return "
      "__longlong_as_double((long long)u); }\n"
      "#define HKM_FN HK_CONV\n"
      "#define HKM_TABLE static __device__ const __attribute__((unused))\n");
  hku_buf_put(o, hkc_math_text);
  hku_buf_put(o, "/* the type of +(x) (or x + y) picks the function */\n");
#define HKM_CUDA(n)                                                          \
  hku_buf_printf(                                                            \
      o,                                                                     \
      "template <typename T> struct hk_%s_t {\n"                             \
      "    template <typename... A> static __device__ __forceinline__ "      \
      "double f(A... a) { return hk_%s((double)a...); }\n"                   \
      "};\n"                                                                 \
      "template <> struct hk_%s_t<float> {\n"                                \
      "    template <typename... A> static __device__ __forceinline__ "      \
      "float f(A... a) { return hk_%sf((float)a...); }\n"                    \
      "};\n",                                                                \
      #n, #n, #n, #n);
  HKC_MATH_HKMATH(HKM_CUDA)
#undef HKM_CUDA
  hku_buf_put(o, "#define pow(x, y) hk_pow_t<decltype((x) + (y))>::f(x, y)\n"
                 "#define powf(x, y) hk_powf(x, y)\n");
#define HKM_MACRO(n)                                                         \
  if (strcmp(#n, "pow"))                                                     \
    hku_buf_printf(o,                                                        \
                   "#define %s(x) hk_%s_t<decltype(+(x))>::f(x)\n"           \
                   "#define %sf(x) hk_%sf(x)\n",                             \
                   #n, #n, #n, #n);
  HKC_MATH_HKMATH(HKM_MACRO)
#undef HKM_MACRO
  hku_buf_put(o,
              "/* where(c, a, b): c ? a : b, of the type of a + b */\n"
              "template <typename A, typename B> static __device__ "
              "__forceinline__ auto where(bool c, A a, B b) -> decltype(a + "
              "b) { return c ? (decltype(a + b))a : (decltype(a + b))b; }\n");
}

/* The helpers of a rows kernel's "cuda" body (emit_rows.c): its row's
 * group is the thread block, hk_lanes = blockDim.x threads (a power of two,
 * 32 to 1024: abi.h, hk_abi_rows_lanes). Each is collective: every lane
 * calls it, the same calls in the same order, and gets the same value.
 * Their orders are fixed by hk_lanes alone: a warp combines by xor
 * shuffles (16, 8, 4, 2, 1) and then takes lane 0's value, the warps'
 * values are combined in warp order. hk_row_max and hk_row_min give NaN
 * when a lane holds NaN (as the stdlib's CPU bodies' scans do). Templates:
 * nothing is compiled into code that does not call them, and their
 * __shared__ slots exist only in kernels that do. For the 32- and 64-bit
 * integer and the float types (what __shfl_sync takes). */
static void put_cuda_row_helpers(hku_buf *o) {
  hku_buf_put(
      o,
      "/* ---- rows kernels' cooperative helpers ---- */\n"
      "static __device__ __forceinline__ __attribute__((unused)) void\n"
      "hk_row_sync(void)\n"
      "{\n"
      "    __syncthreads();\n"
      "}\n"
      "struct hk_row_add {\n"
      "    template <typename T> static __device__ __forceinline__ T f(T a, T b) "
      "{ return a + b; }\n"
      "};\n"
      "struct hk_row_maxop {\n"
      "    template <typename T> static __device__ __forceinline__ T f(T a, T b) "
      "{ return (b > a || b != b) ? b : a; }\n"
      "};\n"
      "struct hk_row_minop {\n"
      "    template <typename T> static __device__ __forceinline__ T f(T a, T b) "
      "{ return (b < a || b != b) ? b : a; }\n"
      "};\n"
      "/* v of lane `lane`, in every lane */\n"
      "template <typename T> static __device__ __forceinline__ T\n"
      "hk_row_bcast(T v, unsigned lane)\n"
      "{\n"
      "    if (blockDim.x == 32)\n"
      "        return __shfl_sync(0xffffffffu, v, (int)lane);\n"
      "    __shared__ T hk_b;\n"
      "    if (threadIdx.x == lane)\n"
      "        hk_b = v;\n"
      "    __syncthreads();\n"
      "    v = hk_b;\n"
      "    __syncthreads(); /* read by all before a later call writes it */\n"
      "    return v;\n"
      "}\n"
      "template <typename Op, typename T> static __device__ __forceinline__ T\n"
      "hk_row_reduce(T v)\n"
      "{\n"
      "    for (int o = 16; o >= 1; o /= 2)\n"
      "        v = Op::f(v, (T)__shfl_xor_sync(0xffffffffu, v, o));\n"
      "    /* lane 0's: a max of +0 and -0, or of two NaNs, may differ by "
      "lane */\n"
      "    v = __shfl_sync(0xffffffffu, v, 0);\n"
      "    if (blockDim.x == 32)\n"
      "        return v;\n"
      "    __shared__ T hk_w[32];\n"
      "    if ((threadIdx.x & 31u) == 0)\n"
      "        hk_w[threadIdx.x >> 5] = v;\n"
      "    __syncthreads();\n"
      "    v = hk_w[0];\n"
      "    for (unsigned w = 1; w < blockDim.x >> 5; ++w)\n"
      "        v = Op::f(v, hk_w[w]);\n"
      "    __syncthreads(); /* read by all before a later call writes it */\n"
      "    return v;\n"
      "}\n"
      "template <typename T> static __device__ __forceinline__ T hk_row_sum(T v)\n"
      "{\n"
      "    return hk_row_reduce<hk_row_add>(v);\n"
      "}\n"
      "template <typename T> static __device__ __forceinline__ T hk_row_max(T v)\n"
      "{\n"
      "    return hk_row_reduce<hk_row_maxop>(v);\n"
      "}\n"
      "template <typename T> static __device__ __forceinline__ T hk_row_min(T v)\n"
      "{\n"
      "    return hk_row_reduce<hk_row_minop>(v);\n"
      "}\n"
      "/* The CPU bodies' 16-lane tree: v of lanes 0..15 as sv[0..15], then\n"
      " * for w = 8, 4, 2, 1: sv[j] += sv[j + w] (j < w); sv[0], in every "
      "lane. */\n"
      "template <typename T> static __device__ __forceinline__ T\n"
      "hk_row_tree16(T v)\n"
      "{\n"
      "    for (int w = 8; w >= 1; w /= 2)\n"
      "        v += (T)__shfl_xor_sync(0xffffffffu, v, w);\n"
      "    return hk_row_bcast(v, 0);\n"
      "}\n");
}

void hkc_emit_cuda_prelude(hku_buf *o) {
  hku_buf_put(
      o,
      "/* ---- hk CUDA prelude ---- */\n"
      "#if defined(__CUDACC_RTC__)\n"
      "typedef decltype(sizeof(0)) size_t; /* as NVRTC's own, if any */\n"
      "typedef decltype((char *)0 - (char *)0) ptrdiff_t;\n"
      "typedef signed char int8_t;\n"
      "typedef short int16_t;\n"
      "typedef int int32_t;\n"
      "typedef long long int64_t;\n"
      "typedef unsigned char uint8_t;\n"
      "typedef unsigned short uint16_t;\n"
      "typedef unsigned int uint32_t;\n"
      "typedef unsigned long long uint64_t;\n"
      "#else\n"
      "#include <stddef.h>\n"
      "#include <stdint.h>\n"
      "#endif\n"
      "/* L elements of T in one aligned 128-bit (or narrower) access */\n"
      "template <typename T, int L> struct alignas(L * sizeof(T)) hk_vec {\n"
      "    T v[L];\n"
      "};\n"
      "template <typename T, int L> static __device__ __forceinline__ bool\n"
      "hk_aligned(const T *p)\n"
      "{\n"
      "    return ((size_t)p & (sizeof(hk_vec<T, L>) - 1)) == 0;\n"
      "}\n"
      "#ifndef INFINITY\n"
      "#define INFINITY __int_as_float(0x7f800000)\n"
      "#endif\n"
      "#ifndef NAN\n"
      "#define NAN __int_as_float(0x7fffffff)\n"
      "#endif\n"
      "#ifndef HUGE_VAL\n"
      "#define HUGE_VAL __longlong_as_double(0x7ff0000000000000LL)\n"
      "#endif\n"
      "#ifndef HUGE_VALF\n"
      "#define HUGE_VALF INFINITY\n"
      "#endif\n"
      "/* bool as kernel code sees it; stored as uint8_t 0/1 */\n"
      "typedef bool hk_bool;\n"
      "/* a for loop's int counter, widened (emit_common.c: hkc_put_code) */\n"
      "typedef int64_t hk_;\n"
      "/* f16 and bf16, stored as uint16_t, computed as float */\n"
      "#define HK_CONV static __device__ __forceinline__ __attribute__((unused))\n"
      "HK_CONV uint32_t hk_f2u(const float f) { return __float_as_uint(f); }\n"
      "HK_CONV float hk_u2f(const uint32_t u) { return __uint_as_float(u); }\n");
  put_conversions(o, 1);
  put_cuda_math(o);
  /* The M_, FLT_, DBL_ and integer limit constants, where the headers
   * seen by this compiler did not define them. */
  hku_buf tmp = HKU_BUF_INIT;
  put_constants(&tmp);
  put_limits(&tmp);
  const char *t = hku_buf_str(&tmp);
  const char *line = t;
  int in_cond = 0;
  while (*line) {
    const char *nl = line;
    while (*nl && *nl != '\n') nl++;
    size_t len = (size_t)(nl - line);
    if (len > 3 && line[0] == '#' && line[1] == 'i' && line[2] == 'f') in_cond = 1;
    if (!in_cond && len > 8 && !memcmp(line, "#define ", 8)) {
      const char *name = line + 8, *e = name;
      while (*e && *e != ' ' && *e != '(') e++;
      if ((size_t)(e - name) != 8 || memcmp(name, "INFINITY", 8)) {
        hku_buf_printf(o, "#ifndef %.*s\n%.*s\n#endif\n", (int)(e - name),
                       name, (int)len, line);
      }
    }
    if (len >= 6 && !memcmp(line, "#endif", 6)) in_cond = 0;
    line = *nl ? nl + 1 : nl;
  }
  hku_buf_free(&tmp);
  put_cuda_row_helpers(o);
  hku_buf_put(o, "\n");
}
