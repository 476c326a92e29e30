/* hkmath.h — the one implementation of the math functions that kernel code
 * gets on every tier: exp, expm1, log, log1p, tanh, erf, sin, cos, pow,
 * rsqrt, sigmoid and expp1 (e^x + 1), float (name + "f") and double
 * (hk_exp, hk_expf, ...).
 *
 * This text is pasted verbatim into the C prelude (tcc for tier jit, the
 * system cc for tier opt and hk build, the inline stdlib) and the CUDA
 * prelude (codegen/prelude.c, through the generated hkmath_text.c), and
 * #included by the tests and tools/mathcheck.c. One text, compiled with
 * contraction off everywhere (common/abi.h, --fmad=false), gives the same
 * bits on every tier: only +, -, *, /, sqrt and fmaf, all correctly
 * rounded, and integer bit manipulation. The float functions' polynomials
 * and reductions are written as explicit fused multiply-adds (fmaf: one
 * rounding), which are one instruction on x86-64-v3 and up, aarch64 and
 * CUDA, and glibc's fmaf elsewhere (correctly rounded too, so the same
 * bits, but a call: about 10 times slower, and a loop calling it stays
 * scalar; core/symbols.c and hk build compile a copy for FMA CPUs, the
 * stdlib has its x86-64-v3 and v4 variants). The double functions use
 * none (double pow carries y log|x| in double-double with Dekker's exact
 * products).
 *
 * Written to vectorise, even under plain SSE2: no branches (both sides are
 * computed and selected on the bits, hkm_sel), no calls, no float-to-int
 * conversions (the integer of a rounded value is read from the bits of the
 * magic-constant sum that rounded it), no table lookups but two: float sin
 * and cos read 2^E mod 2 pi by the argument's exponent, double sin and cos
 * 192 bits of 2/pi (table reads by index, gathers where the compiler
 * emits them; about 1.5x and 2.7x those functions' time before).
 * Range reduction (Cody and Waite) + polynomials: minimax for the float
 * functions that the stdlib's speed targets need (exp, log, tanh, sigmoid
 * in float arithmetic), exact Taylor/atanh coefficients for double,
 * Chebyshev series for erf's tail.
 * The other float functions compute in double and round once.
 *
 * Accuracy (tools/mathcheck.sh measures it against long double):
 * float <= 2 ulp (every input), double <= 3 ulp (double sin and cos over
 * the whole range since 2026-11-27: Payne and Hanek's reduction from 2^28
 * on, in integer arithmetic).
 *
 * The includer defines: HKM_FN (the functions' qualifiers), HKM_TABLE (a
 * constant table's: static const, and __device__ for CUDA), uint32_t,
 * int32_t, uint64_t, int64_t, hk_f2u/hk_u2f and hk_d2u/hk_u2d (bit casts),
 * sqrt, sqrtf and fmaf (called as (sqrt)(x): the preludes make them
 * macros too). Signed >> is arithmetic on every compiler hk uses.
 */

/* ---- float ------------------------------------------------------------- */

#define HKM_INFF hk_u2f(0x7f800000u)
#define HKM_INF hk_u2d(0x7ff0000000000000ull)

/* c ? a : b on the bits, so that the compiler neither branches nor makes
 * a's or b's computation conditional (which -ftrapping-math, the default,
 * would then keep from vectorising). */
HKM_FN float hkm_self(int32_t c, float a, float b) /* c: 0 or 1 */
{
    const uint32_t m = 0u - (uint32_t)c;
    return hk_u2f((hk_f2u(a) & m) | (hk_f2u(b) & ~m));
}

HKM_FN double hkm_sel(int64_t c, double a, double b) /* c: 0 or 1 */
{
    const uint64_t m = 0u - (uint64_t)c;
    return hk_u2d((hk_d2u(a) & m) | (hk_d2u(b) & ~m));
}

/* The clamps of the float functions' arguments, on the bits: an integer
 * minimum each (vpminsd, vpminud; a compare and a select of floats was
 * two instructions, and a float ?: would make the computations after it
 * conditional), exact for every x but NaN, which may come out as c (the
 * functions return a NaN x itself: hkm_nanxf). exp, expp1, tanh and
 * sigmoid give the bits they gave with the float compares on every one
 * of the 2^32 floats (gcc at x86-64-v3 and -v4, clang at -v4; every 16th
 * at baseline x86-64, every 257th under tcc), in 0.75-0.9 times the time
 * at AVX-512 (bench/README.md, "Softmax's two loops;
 * clamps on the bits").
 *
 * min(x, c) for a constant c > 0: the bits as signed integers, where the
 * floats from -0 down sort below every positive one. */
HKM_FN float hkm_minpf(float x, float c)
{
    const int32_t a = (int32_t)hk_f2u(x), b = (int32_t)hk_f2u(c);
    return hk_u2f((uint32_t)(a < b ? a : b));
}

/* max(x, c) for a constant c < 0: the bits as unsigned integers, where
 * the positive floats sort below the negative ones, and the negative ones
 * by magnitude (their minimum is the float maximum). */
HKM_FN float hkm_maxnf(float x, float c)
{
    const uint32_t a = hk_f2u(x), b = hk_f2u(c);
    return hk_u2f(a < b ? a : b);
}

/* 2^n for n in [-126, 127]. */
HKM_FN float hkm_pow2f(int32_t n)
{
    return hk_u2f((uint32_t)(n + 127) << 23);
}

/* |x| with the sign of s. */
HKM_FN float hkm_copysignf(float x, float s)
{
    return hk_u2f((hk_f2u(x) & 0x7fffffffu) | (hk_f2u(s) & 0x80000000u));
}

/* x = n ln2 + h + n lo: h exact (ln2's first 9 bits times n: the fused
 * multiply-add rounds nothing), lo = 2.12194440e-4 the rest of ln2 (with
 * the sign that adds it). */
HKM_FN float hkm_expf_reduce(float x, int32_t *n, float *nf)
{
    const float t = (fmaf)(x, 1.44269504088896341f, 12582912.0f); /* 1.5 * 2^23 */
    *nf = t - 12582912.0f;
    *n = (int32_t)(hk_f2u(t) - 0x4b400000u);
    return (fmaf)(*nf, -0.693359375f, x);
}

/* (e^r - 1 - r) / r^2 for |r| <= ln2/2 (minimax), by Horner's rule in
 * fused multiply-adds. */
HKM_FN float hkm_expf_poly(float r)
{
    float p = (fmaf)(r, 1.381461043e-03f, 8.368710056e-03f);
    p = (fmaf)(r, p, 4.166838899e-02f);
    p = (fmaf)(r, p, 1.666652113e-01f);
    return (fmaf)(r, p, 4.999999404e-01f);
}

/* e^x = 2^n (1 + q) for x in [-104, 88.8] (NaN gives a NaN q): x = n ln2
 * + r, |r| <= ln2/2, r rounded once (n ln2's first 9 bits exact, the rest
 * by a fused multiply-add), q = e^r - 1 = r + r^2 P(r) (minimax, relative
 * error 4e-9). */
HKM_FN float hkm_expf_q(float x, int32_t *n)
{
    float nf;
    const float h = hkm_expf_reduce(x, n, &nf);
    const float r = (fmaf)(nf, 2.12194440e-4f, h);
    return (fmaf)(r * r, hkm_expf_poly(r), r);
}

/* e^x (every input within 1.014 ulp): 2^n in two factors, each normal,
 * s1 (1 + q) in one fused multiply-add (one operation fewer than 1 + q
 * times s1, and one rounding), then times the second factor, so that a
 * subnormal result rounds once more only. The clamps may make a NaN a
 * number; hk_expf returns the NaN itself (hkm_nanxf), as for every
 * function here. */
HKM_FN float hkm_expf_r(float x)
{
    const float xc = hkm_maxnf(hkm_minpf(x, 88.8f), -104.0f);
    int32_t n;
    const float q = hkm_expf_q(xc, &n);
    const int32_t n1 = n >> 1;
    const float s1 = hkm_pow2f(n1);
    return (fmaf)(s1, q, s1) * hkm_pow2f(n - n1);
}

/* e^x + 1, the denominator of the sigmoid-like functions (x / (1 + e^-x),
 * GELU as x / (1 + e^-2u)), with e^x = s (1 + q), s = 2^n: (e^x + 1) / 2
 * = (h q + h) + 1/2, h = s / 2, e^x / 2 in one fused multiply-add, then
 * the half, doubled (exact; +inf where e^x + 1 overflows, from 88.7228;
 * halved so that 2^n needs no exponent beyond 127). One factor for 2^n:
 * no subnormal e^x changes e^x + 1, so the clamp at -87 leaves 1 exact
 * below it (exp needs two factors). Every input within 1.171 ulp (e^x
 * near 2^24: it and the sum each rounded; h q + (h + 1/2) in one fused
 * multiply-add was 1.54, h + 1/2 rounded there first). */
HKM_FN float hkm_expp1f_r(float x)
{
    const float xc = hkm_maxnf(hkm_minpf(x, 88.8f), -87.0f);
    int32_t n;
    const float q = hkm_expf_q(xc, &n);
    const float h = hkm_pow2f(n - 1);
    return 2.0f * ((fmaf)(h, q, h) + 0.5f);
}

/* log x: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1,
 * log(1 + f) = f - f^2/2 + f^3 P(f) (minimax, relative error 8e-9). */
HKM_FN float hkm_logf_r(float x)
{
    const int32_t sub = x < 1.17549435e-38f;
    const float xs = hkm_self(sub, x * 16777216.0f, x);
    const uint32_t u = hk_f2u(xs) + (0x3f800000u - 0x3f3504f3u);
    const int32_t k = (int32_t)(u >> 23) - 127 - (sub ? 24 : 0);
    const float f = hk_u2f((u & 0x007fffffu) + 0x3f3504f3u) - 1.0f;
    const float kf = (float)k;
    const float z = f * f;
    float p = (fmaf)(f, -7.634429634e-02f, 1.276154965e-01f);
    p = (fmaf)(f, p, -1.316019446e-01f);
    p = (fmaf)(f, p, 1.420176178e-01f);
    p = (fmaf)(f, p, -1.662335694e-01f);
    p = (fmaf)(f, p, 2.000122666e-01f);
    p = (fmaf)(f, p, -2.500082254e-01f);
    p = (fmaf)(f, p, 3.333333135e-01f);
    float y = (fmaf)(f * z, p, kf * -2.12194440e-4f);
    y = y - 0.5f * z;
    float l = (f + y) + kf * 0.693359375f;
    l = hkm_self(x == HKM_INFF, x, l);
    l = hkm_self(x == 0.0f, -HKM_INFF, l);
    l = hkm_self(x < 0.0f, hk_u2f(0x7fc00000u), l);
    return hkm_self(x != x, x, l);
}

/* tanh x: x + x^3 P(x^2) (minimax) below 0.625; above, 1 - 2 / (e^2|x| +
 * 1) = 1 - 2 / ((s + 1) + s q) with e^2|x| = s (1 + q), s = 2^n, one
 * division; with the sign of x. tanh is 1 in float from 9.01. */
HKM_FN float hkm_tanhf_r(float x)
{
    const float a = hkm_copysignf(x, 1.0f);
    const float z = a * a;
    float p = (fmaf)(z, -5.704978481e-03f, 2.063907869e-02f);
    p = (fmaf)(z, p, -5.373971164e-02f);
    p = (fmaf)(z, p, 1.333144158e-01f);
    p = (fmaf)(z, p, -3.333328068e-01f);
    int32_t n;
    const float q = hkm_expf_q(hkm_minpf(a + a, 18.2f), &n);
    const float s = hkm_pow2f(n);
    const float big = 1.0f - 2.0f / (fmaf)(s, q, s + 1.0f);
    return hkm_copysignf(hkm_self(a < 0.625f, (fmaf)(a * z, p, a), big), x);
}

/* 1 / (1 + e^-x) for every x, one division: e^-x = 2^n (1 + q) (x clamped
 * to [-104, 20]: beyond, the result rounds to 0 or 1), and with k = n -
 * floor(n / 2), c = 2^-k, s = 2^(n - k) (each normal), 1 / (1 + e^-x) =
 * c / d, d = s (1 + q) + c = s q + (s + c), one fused multiply-add. d's
 * rounding error (s + c - d exact) and what s + c lost (c - (a - s), a =
 * s + c rounded: exact, as a - s is) corrected to first order: t = 1 / d,
 * t (1 - t dl); times c, a power of two, so that a subnormal result rounds
 * once. Every input within 1.441 ulp (1.497 as e^-|x| / (1 + e^-|x|) with
 * two corrected roundings, 2.36 without correcting d). */
HKM_FN float hkm_sigmoidf_r(float x)
{
    const float xc = hkm_maxnf(hkm_minpf(x, 20.0f), -104.0f);
    int32_t n;
    const float q = hkm_expf_q(-xc, &n);
    const int32_t k = n - (n >> 1);
    const float s = hkm_pow2f(n >> 1);
    const float c = hkm_pow2f(-k);
    const float a = s + c;
    const float lost = c - (a - s);
    const float d = (fmaf)(s, q, a);
    const float dl = (fmaf)(s, q, a - d) + lost;
    const float t = 1.0f / d;
    return (fmaf)(-t * dl, t, t) * c;
}

HKM_FN float hkm_rsqrtf_r(float x)
{
    return 1.0f / (sqrtf)(x);
}

/* ---- double ------------------------------------------------------------ */

/* 2^n for n in [-1022, 1023]. */
HKM_FN double hkm_pow2(int64_t n)
{
    return hk_u2d((uint64_t)(n + 1023) << 52);
}

HKM_FN double hkm_copysign(double x, double s)
{
    return hk_u2d((hk_d2u(x) & 0x7fffffffffffffffull) |
                  (hk_d2u(s) & 0x8000000000000000ull));
}

/* floor(n / 2) for n in [-2048, 2047], without a 64-bit arithmetic shift
 * (SSE2 and AVX2 have none). */
HKM_FN int64_t hkm_half(int64_t n)
{
    return (int64_t)((uint64_t)(n + 2048) >> 1) - 1024;
}

/* x rounded to the nearest integer (ties to even) for |x| < 2^51, and its
 * value as an integer in *n. Beyond (and for NaN) x is taken as +-2^51,
 * so that *n stays small enough for the integer arithmetic callers do on
 * it to never overflow (the callers' results there are replaced or
 * documented as inexact). */
HKM_FN double hkm_rint(double x, int64_t *n)
{
    x = hkm_sel(x < 2251799813685248.0, x, 2251799813685248.0);
    x = hkm_sel(x > -2251799813685248.0, x, -2251799813685248.0);
    const double t = x + 6755399441055744.0; /* 1.5 * 2^52 */
    *n = (int64_t)(hk_d2u(t) - 0x4338000000000000ull);
    return t - 6755399441055744.0;
}

/* v < 2^52 as a double, from the bits (exact; no int64 to double
 * conversion, which SSE2 and AVX2 lack). */
HKM_FN double hkm_u52d(uint64_t v)
{
    return hk_u2d(0x4330000000000000ull | v) - 4503599627370496.0; /* 2^52 */
}

/* e^r - 1 - r for |r| <= ln2/2 (Taylor to r^14: 1e-19 relative). */
HKM_FN double hkm_expm1_tail(double r)
{
    const double p =
        0.5 + r * (0.16666666666666666 +
        r * (0.041666666666666664 + r * (0.008333333333333333 +
        r * (0.001388888888888889 + r * (0.0001984126984126984 +
        r * (2.48015873015873e-05 + r * (2.7557319223985893e-06 +
        r * (2.755731922398589e-07 + r * (2.505210838544172e-08 +
        r * (2.08767569878681e-09 + r * (1.6059043836821613e-10 +
        r * 1.1470745597729725e-11)))))))))));
    return r * r * p;
}

/* x = n ln2 + r + *c, |r| <= ln2/2: ln2 in two parts (n * hi exact), r
 * rounded, *c its rounding error (Fast2Sum). */
HKM_FN double hkm_exp_reduce(double x, int64_t *n, double *c)
{
    const double nd = hkm_rint(x * 1.4426950408889634, n);
    const double h = x - nd * 6.93147180369123816490e-01;
    const double l = nd * -1.90821492927058770002e-10;
    const double r = h + l;
    *c = (h - r) + l;
    return r;
}

HKM_FN double hkm_exp_r(double x)
{
    double xc = hkm_sel(x > 710.0, 710.0, x);
    xc = hkm_sel(xc < -746.0, -746.0, xc);
    int64_t n;
    double c;
    const double r = hkm_exp_reduce(xc, &n, &c);
    const double e = 1.0 + (r + (hkm_expm1_tail(r) + c * (1.0 + r)));
    const int64_t n1 = hkm_half(n);
    const double y = e * hkm_pow2(n1) * hkm_pow2(n - n1);
    return hkm_sel(x != x, x, y);
}

/* e^x - 1 = 2^n (r + (1 - 2^-n) + e^r - 1 - r), the first sum exact
 * (TwoSum), returned as hi + *lo, hi the sum rounded. Not for NaN. */
HKM_FN double hkm_expm1_hl(double x, double *lo)
{
    double xc = hkm_sel(x > 710.0, 710.0, x);
    xc = hkm_sel(xc < -40.0, -40.0, xc);
    int64_t n;
    double cr;
    const double r = hkm_exp_reduce(xc, &n, &cr);
    const int64_t n1 = hkm_half(n);
    const double c = 1.0 - hkm_pow2(-n1) * hkm_pow2(n1 - n);
    const double s = c + r;
    const double bb = s - c;
    const double err = (c - (s - bb)) + (r - bb);
    const double s1 = hkm_pow2(n1), s2 = hkm_pow2(n - n1);
    const double t = err + (hkm_expm1_tail(r) + cr * (1.0 + r));
    const double hi = s + t;
    *lo = ((s - hi) + t) * s1 * s2; /* Fast2Sum: |t| < |s| */
    return hi * s1 * s2;
}

HKM_FN double hkm_expm1_r(double x)
{
    double lo;
    const double hi = hkm_expm1_hl(x, &lo);
    return hkm_sel((x != x) | (x == 0.0), x, hi + lo);
}

/* log x: x = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1, s = f / (2 + f),
 * log(1 + f) = f - f^2/2 + s (f^2/2 + R(s^2)), R from the atanh series
 * (as fdlibm's e_log.c, with exact coefficients to s^20). */
HKM_FN double hkm_log_r(double x)
{
    const int64_t sub = x < 2.2250738585072014e-308;
    const double xs = hkm_sel(sub, x * 18014398509481984.0, x); /* 2^54 */
    const uint64_t u = hk_d2u(xs) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
    /* k as a double, from the bits */
    const double kd = hkm_u52d(u >> 52) - 1023.0 - hkm_sel(sub, 54.0, 0.0);
    const double f =
        hk_u2d((u & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
    const double s = f / (2.0 + f);
    const double z = s * s;
    const double R =
        z * (0.6666666666666666 + z * (0.4 + z * (0.2857142857142857 +
        z * (0.2222222222222222 + z * (0.18181818181818182 +
        z * (0.15384615384615385 + z * (0.13333333333333333 +
        z * (0.11764705882352941 + z * (0.10526315789473684 +
        z * 0.09523809523809523)))))))));
    const double hfsq = 0.5 * f * f;
    double l = kd * 6.93147180369123816490e-01 -
               ((hfsq - (s * (hfsq + R) + kd * 1.90821492927058770002e-10)) - f);
    l = hkm_sel(x == HKM_INF, x, l);
    l = hkm_sel(x == 0.0, -HKM_INF, l);
    l = hkm_sel(x < 0.0, hk_u2d(0x7ff8000000000000ull), l);
    return hkm_sel(x != x, x, l);
}

/* log(1 + x) = log(u) + (x - (u - 1)) / u, u = 1 + x rounded. */
HKM_FN double hkm_log1p_r(double x)
{
    const double u = 1.0 + x;
    const double l = hkm_log_r(u);
    const double y = hkm_sel((u > 0.0) & (u < HKM_INF), l + (x - (u - 1.0)) / u, l);
    return hkm_sel(x == 0.0, x, y);
}

/* n / (d + l) for |l| much smaller than |d|: the quotient and its first
 * order correction. */
HKM_FN double hkm_div2(double n, double d, double l)
{
    const double t = n / d;
    return t - t * l / d;
}

/* tanh x = e / (e + 2), e = e^2|x| - 1 unrounded (hi + lo), e + 2 exact
 * as a sum of two, with the sign of x. */
HKM_FN double hkm_tanh_r(double x)
{
    double a = hkm_copysign(x, 1.0);
    a = hkm_sel(a > 20.0, 20.0, a);
    double lo;
    const double hi = hkm_expm1_hl(a + a, &lo);
    const double d = hi + 2.0;
    const double l = hkm_sel(hi < 2.0, (2.0 - d) + hi, (hi - d) + 2.0) + lo;
    const double t = hi / d;
    const double y = t + (lo - t * l) / d;
    return hkm_sel(x != x, x, hkm_copysign(y, x));
}

/* 1 / (1 + e^-x), as e^x / (1 + e^x) below 0 (e^-|x| <= 1: Fast2Sum). */
HKM_FN double hkm_sigmoid_r(double x)
{
    const double e = hkm_exp_r(-hkm_copysign(x, 1.0));
    const double d = 1.0 + e;
    const double y = hkm_div2(hkm_sel(x >= 0.0, 1.0, e), d, (1.0 - d) + e);
    return hkm_sel(x != x, x, y);
}

/* e^x + 1: exp's result and one rounding more (for double, where the
 * float form's saving does not matter). */
HKM_FN double hkm_expp1_r(double x)
{
    return hkm_exp_r(x) + 1.0;
}

HKM_FN double hkm_rsqrt_r(double x)
{
    return 1.0 / (sqrt)(x);
}

/* erf x: Taylor below 1; 1 - e^-x^2 h(x) from 1 to 6, h = e^x^2 erfc x as
 * a Chebyshev series of degree 22 on [1, 2.5] or [2.5, 6] (the
 * coefficients of both are selected per element, so one loop serves);
 * 1 above. */
HKM_FN double hkm_erf_r(double x)
{
    const double a0 = hkm_copysign(x, 1.0);
    const double a = hkm_sel(a0 > 6.0, 6.0, a0);
    const double z = a * a;
    const double small =
        a * (1.1283791670955126 + z * (-0.37612638903183754 +
        z * (0.11283791670955126 + z * (-0.026866170645131252 +
        z * (0.005223977625442188 + z * (-0.0008548327023450853 +
        z * (0.00012055332981789664 + z * (-1.492565035840625e-05 +
        z * (1.6462114365889248e-06 + z * (-1.6365844691234924e-07 +
        z * (1.4807192815879218e-08 + z * (-1.2290555301717928e-09 +
        z * (9.422759064650411e-11 + z * (-6.7113668551641105e-12 +
        z * (4.4632242632864775e-13 + z * (-2.7835162072109215e-14 +
        z * (1.6342614095367152e-15 + z * (-9.063970842808673e-17 +
        z * 4.763348040515068e-18))))))))))))))))));
    const int64_t lo = a < 2.5;
    const double t = (2.0 * a - hkm_sel(lo, 3.5, 8.5)) / hkm_sel(lo, 1.5, 3.5);
    /* Clenshaw's recurrence, from the last coefficient down */
    double b1 = 0.0, b2 = 0.0, b0;
#define HKM_CL(l, h) \
    b0 = 2.0 * t * b1 - b2 + hkm_sel(lo, l, h); \
    b2 = b1; \
    b1 = b0;
    HKM_CL(2.541098841762901e-19, 2.3920210430461442e-18)
    HKM_CL(-1.7448878713438587e-19, -1.5679426886624354e-17)
    HKM_CL(1.7618285302889447e-19, 1.0687819376807399e-16)
    HKM_CL(-1.2553028278308731e-18, -7.2253308005154789e-16)
    HKM_CL(1.3012967168667816e-17, 4.8309672878537029e-15)
    HKM_CL(-1.4027204419710115e-16, -3.1926285379779099e-14)
    HKM_CL(1.4816783122152156e-15, 2.0845651254957319e-13)
    HKM_CL(-1.5330821159819426e-14, -1.3442073877634761e-12)
    HKM_CL(1.5518966828568983e-13, 8.5569253154288568e-12)
    HKM_CL(-1.5350838445716847e-12, -5.3749377515859031e-11)
    HKM_CL(1.4818660230172501e-11, 3.3298260037295074e-10)
    HKM_CL(-1.3939984729604719e-10, -2.03344730339792e-09)
    HKM_CL(1.2757869239870905e-09, 1.2233728862473532e-08)
    HKM_CL(-1.1338136563697524e-08, -7.2464995523437896e-08)
    HKM_CL(9.7636902854852707e-08, 4.223228134648587e-07)
    HKM_CL(-8.1264497756138597e-07, -2.4198114237545405e-06)
    HKM_CL(6.5179351705618956e-06, 1.3620051895515654e-05)
    HKM_CL(-5.0198560605167969e-05, -7.5237715616933751e-05)
    HKM_CL(0.00036961452680367288, 0.00040747765264847823)
    HKM_CL(-0.002587682261135065, -0.0021611166170954787)
    HKM_CL(0.017104848474406763, 0.011209463278240392)
    HKM_CL(-0.10574990110152695, -0.05677604943259737)
#undef HKM_CL
    const double h = t * b1 - b2 + hkm_sel(lo, 0.30171389024442918, 0.14016047004976134);
    const double big = 1.0 - hkm_exp_r(-z) * h;
    const double y = hkm_sel(a < 1.0, small, big);
    return hkm_sel(x != x, x, hkm_copysign(y, x));
}

/* a = hi + *lo, hi with 26 significant bits (Veltkamp), so that products
 * of two such halves are exact. For |a| < 2^995. */
HKM_FN double hkm_split(double a, double *lo)
{
    const double c = 134217729.0 * a; /* 2^27 + 1 */
    const double h = c - (c - a);
    *lo = a - h;
    return h;
}

/* a * b = p + *lo exactly (Dekker; no FMA needed). */
HKM_FN double hkm_two_prod(double a, double b, double *lo)
{
    double al, bl;
    const double ah = hkm_split(a, &al), bh = hkm_split(b, &bl);
    const double p = a * b;
    *lo = ((ah * bh - p) + ah * bl + al * bh) + al * bl;
    return p;
}

/* a + b = s + *err exactly, for any magnitudes (Knuth). */
HKM_FN double hkm_two_sum(double a, double b, double *err)
{
    const double s = a + b;
    const double bb = s - a;
    *err = (a - (s - bb)) + (b - bb);
    return s;
}

/* sin and cos: x = n pi/2 + r (pi/2 in five parts, the first four of 24
 * bits so that n * part is exact for |n| < 2^29), |r| <= pi/4, then the
 * Taylor series of sin r and cos r (to r^19, r^18) and n's quadrant.
 * Accurate for |x| < 2^28; beyond, the reduction loses bits: hkm_sincos
 * then takes hkm_reduce_pio2_big's (the float functions reduce their
 * argument mod 2 pi first: hkm_sincosf). */
HKM_FN double hkm_reduce_pio2(double x, int64_t *n)
{
    const double nd = hkm_rint(x * 0.6366197723675814, n);
    double r = x - nd * 1.570796251296997;
    r = r - nd * 7.549789415861596e-08;
    r = r - nd * 5.390302529957765e-15;
    r = r - nd * 3.282003415807913e-22;
    return r - nd * 1.2706558760139879e-29;
}

HKM_FN double hkm_sin_poly(double r, double z)
{
    return r + r * z * (-0.16666666666666666 + z * (0.008333333333333333 +
        z * (-0.0001984126984126984 + z * (2.7557319223985893e-06 +
        z * (-2.505210838544172e-08 + z * (1.6059043836821613e-10 +
        z * (-7.647163731819816e-13 + z * (2.8114572543455206e-15 +
        z * -8.22063524662433e-18))))))));
}

HKM_FN double hkm_cos_poly(double z)
{
    return 1.0 - 0.5 * z + z * z * (0.041666666666666664 +
        z * (-0.001388888888888889 + z * (2.48015873015873e-05 +
        z * (-2.755731922398589e-07 + z * (2.08767569878681e-09 +
        z * (-1.1470745597729725e-11 + z * (4.779477332387385e-14 +
        z * -1.5619206968586225e-16)))))));
}

/* sin r (s) or cos r (c) by n's quadrant. */
HKM_FN double hkm_quadrant(double s, double c, int64_t n, int64_t cosine)
{
    const int64_t q = (n + cosine) & 3;
    const double y = hkm_sel(q & 1, c, s);
    return hkm_sel((q >> 1) & 1, -y, y);
}

HKM_FN double hkm_sincos_kernel(double r, int64_t n, int64_t cosine)
{
    const double z = r * r;
    return hkm_quadrant(hkm_sin_poly(r, z), hkm_cos_poly(z), n, cosine);
}

/* 2/pi's bits after 26 zero bits, most significant first, in 32-bit words
 * w_k, entry k holding w_k and w_k+1 (w_k in the high half): the 192 bits
 * from bit e + 24 on are 2^e (2/pi) mod 4 to 2^-190, for the exponents e
 * in [-24, 971] of doubles from 2^28 up (x = M 2^e, M an integer of 53
 * bits). 64-bit entries: 32-bit ones read by a 64-bit index kept gcc from
 * vectorising the loop at all. tools/gen_2opi.py computes them (pi from
 * Machin's formula at 1,500 bits; ctest math_table compares). */
HKM_TABLE uint64_t hkm_2opi_bits[37] = {
    0x00000028be60db93ull, 0xbe60db9391054a7full, 0x91054a7f09d5f47dull,
    0x09d5f47d4d377036ull, 0x4d377036d8a5664full, 0xd8a5664f10e4107full,
    0x10e4107f9458eaf7ull, 0x9458eaf7aef1586dull, 0xaef1586dc91b8e90ull,
    0xc91b8e909374b801ull, 0x9374b801924bba82ull, 0x924bba827464873full,
    0x7464873f877ac72cull, 0x877ac72c4a69cfbaull, 0x4a69cfba208d7d4bull,
    0x208d7d4baed1213aull, 0xaed1213a671c09adull, 0x671c09ad17df904eull,
    0x17df904e64758e60ull, 0x64758e60d4ce7d27ull, 0xd4ce7d272117e2efull,
    0x2117e2ef7e4a0ec7ull, 0x7e4a0ec7fe25fff7ull, 0xfe25fff7816603fbull,
    0x816603fbcbc462d6ull, 0xcbc462d6829b47dbull, 0x829b47db4d9fb3c9ull,
    0x4d9fb3c9f2c26dd3ull, 0xf2c26dd3d18fd9a7ull, 0xd18fd9a797fa8b5dull,
    0x97fa8b5d49eeb1faull, 0x49eeb1faf97c5ecfull, 0xf97c5ecf41ce7de2ull,
    0x41ce7de294a4ba9aull, 0x94a4ba9afed7ec47ull, 0xfed7ec47e3574215ull,
    0xe357421580cc11bfull};

/* x = n pi/2 + (r + *rl), |r| <= pi/4, for finite |x| >= 2^28 (Payne and
 * Hanek's reduction, in integers): x = M 2^e, and M (2^e 2/pi mod 4) mod 4
 * from M's two 32-bit halves times 6 words of 2/pi's bits (32 x 32 -> 64
 * bit products, carries kept): 2 bits of n and the fraction, whose
 * weights go down to 2^-190. No double lies closer than about 2^-61 to a
 * multiple of pi/2, so the fraction (taken to 2^-126) has 64 bits or more
 * even there, where 2/pi cut at 2^-158 left 19 (M times the cut). Rounded
 * to nearest, times pi/2 in double-double (Dekker's products). */
HKM_FN double hkm_reduce_pio2_big(double x, int64_t *n, double *rl)
{
    const uint64_t u = hk_d2u(x);
    int64_t e = (int64_t)((u >> 52) & 0x7ffu) - 1075;
    e = e < -24 ? -24 : e;
    e = e > 971 ? 971 : e;
    const uint64_t m = (u & 0xfffffffffffffull) | 0x10000000000000ull;
    /* 32 x 32 -> 64 bit products (one instruction: SSE2's pmuludq) */
    const uint32_t ml = (uint32_t)m, mh = (uint32_t)(m >> 32);
    const int64_t k = (e + 24) >> 5, sh = 32 - ((e + 24) & 31);
#define HKM_W(t) ((uint32_t)(hkm_2opi_bits[k + t] >> sh))
    const uint32_t w0 = HKM_W(0), w1 = HKM_W(1), w2 = HKM_W(2),
                   w3 = HKM_W(3), w4 = HKM_W(4), w5 = HKM_W(5);
#undef HKM_W
    const uint64_t p0 = (uint64_t)ml * w0, p1 = (uint64_t)ml * w1,
                   p2 = (uint64_t)ml * w2, p3 = (uint64_t)ml * w3,
                   p4 = (uint64_t)ml * w4, p5 = (uint64_t)ml * w5;
    const uint64_t q1 = (uint64_t)mh * w1, q2 = (uint64_t)mh * w2,
                   q3 = (uint64_t)mh * w3, q4 = (uint64_t)mh * w4,
                   q5 = (uint64_t)mh * w5;
    const uint64_t lo32 = 0xffffffffu;
    /* the product's 32-bit limbs 1 to 5 (p_t from limb 5 - t on, q_t from
     * 6 - t; limb 0 is p5's low half, which carries nothing; limb 1 only
     * carries) */
    uint64_t c = (p5 >> 32) + (q5 & lo32) + (p4 & lo32); /* limb 1 */
    c = (c >> 32) + (q5 >> 32) + (p4 >> 32) + (q4 & lo32) + (p3 & lo32);
    const uint64_t a2 = c & lo32;
    c = (c >> 32) + (q4 >> 32) + (p3 >> 32) + (q3 & lo32) + (p2 & lo32);
    const uint64_t a3 = c & lo32;
    c = (c >> 32) + (q3 >> 32) + (p2 >> 32) + (q2 & lo32) + (p1 & lo32);
    const uint64_t a4 = c & lo32;
    c = (c >> 32) + (q2 >> 32) + (p1 >> 32) + (q1 & lo32) + (p0 & lo32);
    const uint64_t a5 = c & lo32;
    const int64_t up = (int64_t)((a5 >> 29) & 1u); /* fraction >= 1/2 */
    const int64_t nq = (int64_t)(a5 >> 30) + up;
    /* the fraction, less 1 where rounded up (exact), as fh + fl: its bits
     * to 2^-52 and from 2^-53 to 2^-94 read as doubles by the 2^52 magic
     * (exact: fewer than 53 bits each), the rest to 2^-126 */
    const uint64_t f1 = ((a5 & 0x3fffffffu) << 22) | (a4 >> 10);
    const uint64_t f2 = ((a4 & 0x3ffu) << 32) | a3;
    const double x1 = hkm_u52d(f1) * 0x1p-52 - hkm_sel(up, 1.0, 0.0);
    const double x2 = hkm_u52d(f2) * 0x1p-94 + hkm_u52d(a2) * 0x1p-126;
    const double fh = x1 + x2; /* |x1| >= |x2| or x1 = 0: Fast2Sum */
    const double fl = x2 - (fh - x1);
    double pl, l;
    /* times pi/2 = 1.5707963267948966 + 6.123233995736766e-17 */
    const double ph = hkm_two_prod(fh, 1.5707963267948966, &pl);
    const double r = hkm_two_sum(
        ph, pl + (fh * 6.123233995736766e-17 + fl * 1.5707963267948966), &l);
    const int64_t neg = x < 0.0;
    *n = neg ? -nq : nq;
    *rl = hkm_sel(neg, -l, l);
    return hkm_sel(neg, -r, r);
}

/* sin x (cosine 0) or cos x (1): below 2^28 Cody and Waite's reduction
 * (hkm_reduce_pio2), from there on Payne and Hanek's; both computed, one
 * taken (no branches). The big one's low part is added to first order:
 * sin(r + l) = sin r + l cos r, cos(r + l) = cos r - l sin r. */
HKM_FN double hkm_sincos(double x, int64_t cosine)
{
    int64_t n, nb;
    double rl;
    const double rs = hkm_reduce_pio2(x, &n);
    const double rb = hkm_reduce_pio2_big(x, &nb, &rl);
    const int64_t big = !(hkm_copysign(x, 1.0) < 268435456.0);
    const double r = hkm_sel(big, rb, rs);
    n = big ? nb : n;
    const double z = r * r;
    const double s = hkm_sin_poly(r, z), c = hkm_cos_poly(z);
    return hkm_quadrant(hkm_sel(big, s + rl * c, s),
                        hkm_sel(big, c - rl * s, c), n, cosine);
}

/* 2^(i + 5) mod 2 pi as the sum of two doubles, the first of 29
 * significant bits (so that a 24-bit integer times it is exact), for i in
 * [0, 100]: 2^5 to 2^105, the exponents of float arguments from 2^28 up;
 * row 101 is zeros. A float x from 2^28 on is M 2^E, M an integer of 24
 * bits, so x = M (2^E mod 2 pi) (mod 2 pi), and M times the first part is
 * below 2^27, which hkm_reduce_pio2 takes (Payne and Hanek's idea, the
 * table indexed by the exponent). From mpmath at 400 bits. */
HKM_TABLE double hkm_pow2_mod_2pi[102][2] = {
    {0.5840734634548426, 6.472250479297185e-10},
    {1.1681469269096851, 1.294450095859437e-09},
    {2.3362938538193703, 2.588900191718874e-09},
    {4.6725877076387405, 5.177800383437748e-09},
    {3.0619901195168495, -1.0633541487704938e-09},
    {6.123980239033699, -2.1267082975409875e-09},
    {5.964775159955025, 6.6793702800435195e-09},
    {5.6463650315999985, -5.510794952482779e-09},
    {5.009544745087624, -8.880302984006308e-11},
    {3.7359041795134544, 3.30460021852154e-09},
    {1.188623059540987, -1.0844641801409954e-09},
    {2.377246119081974, -2.168928360281991e-09},
    {4.754492238163948, -4.337856720563982e-09},
    {3.2257991582155228, 2.257073433997531e-09},
    {0.16841301368549466, 8.011126196516126e-11},
    {0.3368260273709893, 1.6022252393032252e-10},
    {0.6736520547419786, 3.2044504786064504e-10},
    {1.3473041094839573, 6.408900957212901e-10},
    {2.6946082189679146, 1.2817801914425801e-09},
    {5.389216437935829, 2.5635603828851603e-09},
    {4.495247572660446, 1.158746447048159e-09},
    {2.70730984210968, -1.6508814246258441e-09},
    {5.41461968421936, -3.3017628492516882e-09},
    {4.546054050326347, 4.329261176622118e-09},
    {2.808922804892063, -2.760432562401754e-09},
    {5.617845609784126, -5.520865124803508e-09},
    {4.952505901455879, -1.0894337448152166e-10},
    {3.6218264922499657, 3.264319529238623e-09},
    {0.9604676831513643, 6.976195905241273e-10},
    {1.9209353663027287, 1.3952391810482547e-09},
    {3.8418707326054573, 2.7904783620965093e-09},
    {1.4005561619997025, 1.6125824054708565e-09},
    {2.801112323999405, 3.225164810941713e-09},
    {5.60222464799881, 6.450329621883426e-09},
    {4.921264007687569, -5.968876268802966e-09},
    {3.559342697262764, -1.004965662480437e-09},
    {0.8355000857263803, -3.903701959901644e-10},
    {1.6710001714527607, -7.807403919803288e-10},
    {3.3420003429055214, -1.5614807839606576e-09},
    {0.40081537514925003, 3.59244710280351e-10},
    {0.8016307502985001, 7.18489420560702e-10},
    {1.6032615005970001, 1.436978841121404e-09},
    {3.2065230011940002, 2.873957682242808e-09},
    {0.12986070103943348, -8.310410346750312e-11},
    {0.25972140207886696, -1.6620820693500624e-10},
    {0.5194428041577339, -3.324164138700125e-10},
    {1.0388856083154678, -6.64832827740025e-10},
    {2.0777712166309357, -1.32966565548005e-09},
    {4.155542433261871, -2.6593313109601e-09},
    {2.02789955586195, -1.8364563437185329e-09},
    {4.0557991117239, -3.6729126874370657e-09},
    {1.8284129090607166, -1.3832879821055137e-10},
    {3.6568258181214333, -2.7665759642110275e-10},
    {1.030466329306364, -7.963992131024532e-10},
    {2.060932658612728, -1.5927984262049065e-09},
    {4.121865317225456, -3.185596852409813e-09},
    {1.9605453200638294, 8.363028718439548e-10},
    {3.921090640127659, 1.6726057436879096e-09},
    {1.5589959770441055, -6.231628313463424e-10},
    {3.117991954088211, -1.2463256626926847e-09},
    {6.235983908176422, -2.4926513253853695e-09},
    {6.188782498240471, 5.947484224354756e-09},
    {6.094379708170891, -6.9745670638603075e-09},
    {5.905574098229408, -3.0163472525951197e-09},
    {5.527962878346443, 4.900092369935255e-09},
    {4.772740453481674, 5.831810421148348e-09},
    {3.262295611202717, 2.446659266507055e-10},
    {0.24140591593459249, -2.1941345426657595e-10},
    {0.48281183186918497, -4.388269085331519e-10},
    {0.9656236637383699, -8.776538170663038e-10},
    {1.9312473274767399, -1.7553076341326076e-09},
    {3.8624946549534798, -3.510615268265215e-09},
    {1.4418039955198765, 1.862660401331498e-10},
    {2.883607991039753, 3.725320802662996e-10},
    {5.767215982079506, 7.450641605325992e-10},
    {5.2512466609478, -2.478245997656963e-09},
    {4.219308003783226, 5.9762948798115675e-09},
    {2.1554307118058205, 5.336348439771459e-10},
    {4.310861423611641, 1.0672696879542918e-09},
    {2.3385375440120697, -1.8338349428135783e-09},
    {4.677075088024139, -3.6676698856271566e-09},
    {3.0709648579359055, 3.597447103871182e-09},
    {6.141929715871811, 7.194894207742364e-09},
    {6.000674143433571, -4.4797470970850915e-09},
    {5.718162968754768, 1.973292680955312e-09},
    {5.153140634298325, -2.1788956811538196e-11},
    {4.023095965385437, -4.011952232345238e-09},
    {1.763006616383791, -8.164078880268959e-10},
    {3.526013232767582, -1.6328157760537918e-09},
    {0.7688411548733711, 2.1657472609408276e-10},
    {1.5376823097467422, 4.331494521881655e-10},
    {3.0753646194934845, 8.66298904376331e-10},
    {6.150729238986969, 1.732597808752662e-09},
    {6.018273174762726, -5.031787012168375e-10},
    {5.7533610463142395, -4.974731721155837e-09},
    {5.223536774516106, 9.833234328138208e-10},
    {4.163888245820999, -2.00172745309452e-09},
    {2.0445911809802055, -5.21248627987374e-10},
    {4.089182361960411, -1.042497255974748e-09},
    {1.8951794132590294, 1.3972117662521704e-09},
    {3.7903588265180588, 2.7944235325043408e-09},
    {0.0, 0.0}};

/* sin (cosine 0) or cos (1) of a float, in double: below 2^28 as
 * hkm_sincos (the table's row of zeros adds nothing); from 2^28 on, M
 * times the table's first part (exact) is reduced and M times the second
 * added to the remainder (rounded: 2^-56 at most, where the remainder of
 * a float argument is never below 2^-30). */
HKM_FN double hkm_sincosf(float x, int64_t cosine)
{
    const uint32_t u = hk_f2u(x);
    const int64_t be = (int64_t)((u >> 23) & 0xffu);
    const int64_t big = be >= 155;
    int64_t i = be - 155;
    i = i > 100 ? 100 : i;
    i = (i & -big) | (101 & (big - 1)); /* big ? i : 101 */
    const double m = (double)hk_u2f((u & 0x807fffffu) | 0x4b000000u); /* +-M */
    int64_t n;
    const double r = hkm_reduce_pio2(
        hkm_sel(big, m * hkm_pow2_mod_2pi[i][0], (double)x), &n);
    return hkm_sincos_kernel(r + m * hkm_pow2_mod_2pi[i][1], n, cosine);
}

HKM_FN double hkm_sin_r(double x)
{
    const double y = hkm_sincos(x, 0);
    return hkm_sel(x - x != 0.0, x - x, hkm_sel(x == 0.0, x, y));
}

HKM_FN double hkm_cos_r(double x)
{
    const double y = hkm_sincos(x, 1);
    return hkm_sel(x - x != 0.0, x - x, y);
}

/* ---- double pow: log in double-double ------------------------------------ */

/* log a for a finite and > 0, as hi + *lo with a relative error near
 * 2^-68: a = 2^k m, m in [sqrt(1/2), sqrt(2)), f = m - 1 (exact),
 * log m = 2 atanh s, s = f / (2 + f) = 2s + 2s^3/3 + s^5 R(s^2), with s
 * and the s^3 term in double-double and k ln2 in two parts (k ln2_hi
 * exact). */
HKM_FN double hkm_log_hl(double a, double *lo)
{
    const int64_t sub = a < 2.2250738585072014e-308;
    const double as = hkm_sel(sub, a * 18014398509481984.0, a); /* 2^54 */
    const uint64_t u = hk_d2u(as) + (0x3ff0000000000000ull - 0x3fe6a09e667f3bcdull);
    const double kd = hkm_u52d(u >> 52) - 1023.0 - hkm_sel(sub, 54.0, 0.0);
    const double f =
        hk_u2d((u & 0x000fffffffffffffull) + 0x3fe6a09e667f3bcdull) - 1.0;
    /* s = sh + sl: a quotient within 2 ulp (one division, by 2 + f) and
     * its remainder, exact (f - p: Sterbenz), over 2 + f */
    const double dh = 2.0 + f, dl = (2.0 - dh) + f;
    const double inv = 1.0 / dh;
    const double sh = f * inv;
    double pl;
    const double p = hkm_two_prod(sh, dh, &pl);
    const double sl = (((f - p) - pl) - sh * dl) * inv;
    /* z = s^2, c = s^3, t = 2 s^3 / 3, each hi + lo */
    double zl, cl, tl;
    const double zh = hkm_two_prod(sh, sh, &zl);
    zl = zl + 2.0 * sh * sl;
    const double ch = hkm_two_prod(sh, zh, &cl);
    cl = cl + (sh * zl + sl * zh);
    const double th = hkm_two_prod(ch, 0.6666666666666666, &tl);
    tl = tl + (ch * 3.700743415417188e-17 + cl * 0.6666666666666666);
    const double R =
        ch * zh * (0.4 + zh * (0.2857142857142857 + zh * (0.2222222222222222 +
        zh * (0.18181818181818182 + zh * (0.15384615384615385 +
        zh * (0.13333333333333333 + zh * (0.11764705882352941 +
        zh * (0.10526315789473684 + zh * (0.09523809523809523 +
        zh * (0.08695652173913043 + zh * (0.08 + zh * 0.07407407407407407)))))))))));
    /* k ln2 + 2s + t + R, the two large sums exact */
    double e1, e2;
    const double a1 = hkm_two_sum(kd * 6.93147180369123816490e-01, 2.0 * sh, &e1);
    const double a2 = hkm_two_sum(a1, th, &e2);
    const double rest = e1 + e2 + (2.0 * sl + ((R + tl) + kd * 1.9082149292705877e-10));
    const double h = a2 + rest;
    *lo = (a2 - h) + rest; /* Fast2Sum: |rest| < |a2| */
    return h;
}

/* x^y = e^(y log|x|) with y log|x| in double-double (its error is
 * amplified up to 745 times in the result), then C99 Annex F's special
 * cases and the sign. |y| is taken as at most 2^64: beyond, y log|x|
 * overflows exp's range whenever x != 1, as it does at 2^64. */
HKM_FN double hkm_pow_r(double x, double y)
{
    const double ax = hkm_copysign(x, 1.0);
    const double ay = hkm_copysign(y, 1.0);
    double yc = hkm_sel(y > 18446744073709551616.0, 18446744073709551616.0, y);
    yc = hkm_sel(yc < -18446744073709551616.0, -18446744073709551616.0, yc);
    double ll, pl;
    const double lh = hkm_log_hl(ax, &ll);
    const double ph = hkm_two_prod(yc, lh, &pl);
    pl = pl + yc * ll;
    /* e^(ph + pl): hkm_exp_r with pl added to the reduction's error */
    double xc = hkm_sel(ph > 710.0, 710.0, ph);
    xc = hkm_sel(xc < -746.0, -746.0, xc);
    int64_t n;
    double c;
    const double r = hkm_exp_reduce(xc, &n, &c);
    c = c + hkm_sel(xc == ph, pl, 0.0); /* up to 2^-43: times e^r, not 1 + r */
    const double t = hkm_expm1_tail(r);
    const double e = 1.0 + (r + (t + c * (1.0 + (r + t))));
    const int64_t n1 = hkm_half(n);
    double v = e * hkm_pow2(n1) * hkm_pow2(n - n1);
    /* y an integer (every double from 2^52 up is), and odd */
    const int64_t big = ay >= 4503599627371496.0;
    int64_t yi;
    const double h = hkm_rint(hkm_sel(big, 0.0, 0.5 * y), &yi);
    const int64_t is_int = big | (2.0 * h == y) | (2.0 * h - 1.0 == y) |
                           (2.0 * h + 1.0 == y);
    const int64_t odd = ((!big) & (2.0 * h != y) & is_int) |
                        (big & (ay < 9007199254740992.0) &
                         (int64_t)(hk_d2u(y) & 1u));
    v = hkm_sel(ax == 0.0, hkm_sel(y < 0.0, HKM_INF, 0.0), v);
    v = hkm_sel(ax == HKM_INF, hkm_sel(y < 0.0, 0.0, HKM_INF), v);
    v = hkm_sel((int64_t)(hk_d2u(x) >> 63) & odd, -v, v);
    const double qnan = hk_u2d(0x7ff8000000000000ull);
    v = hkm_sel((x < 0.0) & (x > -HKM_INF) & !is_int, qnan, v);
    v = hkm_sel((x != x) | (y != y), qnan, v);
    v = hkm_sel((ax == 1.0) & ((x == 1.0) | (ay == HKM_INF)), 1.0, v);
    return hkm_sel(y == 0.0, 1.0, v);
}

/* ---- float, computed in double and rounded once ------------------------- */

HKM_FN float hkm_expm1f_r(float x) { return (float)hkm_expm1_r((double)x); }
HKM_FN float hkm_log1pf_r(float x) { return (float)hkm_log1p_r((double)x); }
HKM_FN float hkm_erff_r(float x) { return (float)hkm_erf_r((double)x); }
HKM_FN float hkm_sinf_r(float x)
{
    const double xd = (double)x, y = hkm_sincosf(x, 0);
    return (float)hkm_sel(xd - xd != 0.0, xd - xd, hkm_sel(xd == 0.0, xd, y));
}

HKM_FN float hkm_cosf_r(float x)
{
    const double xd = (double)x, y = hkm_sincosf(x, 1);
    return (float)hkm_sel(xd - xd != 0.0, xd - xd, y);
}

/* x^y = e^(y log|x|) in double (float's y log|x| has 11 bits to spare),
 * then C99 Annex F's special cases and the sign. */
HKM_FN float hkm_powf_r(float x, float y)
{
    const double ax = (double)hkm_copysignf(x, 1.0f);
    const double yd = (double)y;
    const double ay = hkm_copysign(yd, 1.0);
    int64_t yi;
    const double h = hkm_rint(hkm_sel(ay >= 16777216.0, 0.0, 0.5 * yd), &yi);
    const int64_t is_int = (ay >= 16777216.0) | (2.0 * h == yd) |
                           (2.0 * h - 1.0 == yd) | (2.0 * h + 1.0 == yd);
    const int64_t odd = (ay < 16777216.0) & (2.0 * h != yd) & is_int;
    double r = hkm_exp_r(yd * hkm_log_r(ax));
    r = hkm_sel((ax == 1.0) & ((x == 1.0f) | (ay == HKM_INF)), 1.0, r);
    r = hkm_sel(y == 0.0f, 1.0, r);
    r = hkm_sel((int64_t)(hk_f2u(x) >> 31) & odd, -r, r);
    r = hkm_sel((x < 0.0f) & (x > -HKM_INFF) & !is_int, hk_u2d(0x7ff8000000000000ull), r);
    return (float)r;
}

/* ---- the functions kernel code calls ------------------------------------ */

/* y, with a NaN made the same on every target: x itself where x is a NaN
 * (its payload kept), else the default quiet NaN (x86 makes a negative one,
 * CUDA 0x7fffffff; a NaN operand's payload would depend on the compiler's
 * operand order). The functions whose NaN comes from a NaN x alone (or
 * from their own constant) need only hkm_nanx(f): cheaper. */
HKM_FN float hkm_nanf(float x, float y)
{
    return hkm_self(y != y, hkm_self(x != x, x, hk_u2f(0x7fc00000u)), y);
}

HKM_FN double hkm_nan(double x, double y)
{
    return hkm_sel(y != y, hkm_sel(x != x, x, hk_u2d(0x7ff8000000000000ull)), y);
}

HKM_FN float hkm_nanxf(float x, float y) { return hkm_self(x != x, x, y); }
HKM_FN double hkm_nanx(double x, double y) { return hkm_sel(x != x, x, y); }

HKM_FN float hk_expf(float x) { return hkm_nanxf(x, hkm_expf_r(x)); }
HKM_FN float hk_logf(float x) { return hkm_nanxf(x, hkm_logf_r(x)); }
HKM_FN float hk_tanhf(float x) { return hkm_nanxf(x, hkm_tanhf_r(x)); }
HKM_FN float hk_sigmoidf(float x) { return hkm_nanxf(x, hkm_sigmoidf_r(x)); }
HKM_FN float hk_expp1f(float x) { return hkm_nanxf(x, hkm_expp1f_r(x)); }
HKM_FN float hk_rsqrtf(float x) { return hkm_nanf(x, hkm_rsqrtf_r(x)); }
HKM_FN double hk_exp(double x) { return hkm_nanx(x, hkm_exp_r(x)); }
HKM_FN double hk_expm1(double x) { return hkm_nanx(x, hkm_expm1_r(x)); }
HKM_FN double hk_log(double x) { return hkm_nanx(x, hkm_log_r(x)); }
HKM_FN double hk_log1p(double x) { return hkm_nanx(x, hkm_log1p_r(x)); }
HKM_FN double hk_tanh(double x) { return hkm_nanx(x, hkm_tanh_r(x)); }
HKM_FN double hk_sigmoid(double x) { return hkm_nanx(x, hkm_sigmoid_r(x)); }
HKM_FN double hk_expp1(double x) { return hkm_nanx(x, hkm_expp1_r(x)); }
HKM_FN double hk_rsqrt(double x) { return hkm_nan(x, hkm_rsqrt_r(x)); }
HKM_FN double hk_erf(double x) { return hkm_nanx(x, hkm_erf_r(x)); }
HKM_FN double hk_sin(double x) { return hkm_nan(x, hkm_sin_r(x)); }
HKM_FN double hk_cos(double x) { return hkm_nan(x, hkm_cos_r(x)); }
HKM_FN double hk_pow(double x, double y) { return hkm_nan(hkm_sel(x != x, x, y), hkm_pow_r(x, y)); }
HKM_FN float hk_expm1f(float x) { return hkm_nanxf(x, hkm_expm1f_r(x)); }
HKM_FN float hk_log1pf(float x) { return hkm_nanf(x, hkm_log1pf_r(x)); }
HKM_FN float hk_erff(float x) { return hkm_nanxf(x, hkm_erff_r(x)); }
HKM_FN float hk_sinf(float x) { return hkm_nanf(x, hkm_sinf_r(x)); }
HKM_FN float hk_cosf(float x) { return hkm_nanf(x, hkm_cosf_r(x)); }
HKM_FN float hk_powf(float x, float y) { return hkm_nanf(hkm_self(x != x, x, y), hkm_powf_r(x, y)); }
