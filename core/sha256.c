/* sha256.c — SHA-256 written from FIPS 180-4 (sections 4.1.2, 5.1.1, 6.2):
 * portable C, no tables beyond the round constants, byte order explicit so
 * the digest does not depend on the host's endianness. */
#include "sha256.h"

#include <stdatomic.h>
#include <string.h>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#define HK_SHA_NI 1
#include <cpuid.h>
#include <immintrin.h>
#endif

/* FIPS 180-4 §4.2.2: the first 32 bits of the fractional parts of the cube
 * roots of the first 64 primes. */
static _Alignas(16) const uint32_t K[64] = {
    0x428a2f98u, 0x71374491u, 0xb5c0fbcfu, 0xe9b5dba5u, 0x3956c25bu,
    0x59f111f1u, 0x923f82a4u, 0xab1c5ed5u, 0xd807aa98u, 0x12835b01u,
    0x243185beu, 0x550c7dc3u, 0x72be5d74u, 0x80deb1feu, 0x9bdc06a7u,
    0xc19bf174u, 0xe49b69c1u, 0xefbe4786u, 0x0fc19dc6u, 0x240ca1ccu,
    0x2de92c6fu, 0x4a7484aau, 0x5cb0a9dcu, 0x76f988dau, 0x983e5152u,
    0xa831c66du, 0xb00327c8u, 0xbf597fc7u, 0xc6e00bf3u, 0xd5a79147u,
    0x06ca6351u, 0x14292967u, 0x27b70a85u, 0x2e1b2138u, 0x4d2c6dfcu,
    0x53380d13u, 0x650a7354u, 0x766a0abbu, 0x81c2c92eu, 0x92722c85u,
    0xa2bfe8a1u, 0xa81a664bu, 0xc24b8b70u, 0xc76c51a3u, 0xd192e819u,
    0xd6990624u, 0xf40e3585u, 0x106aa070u, 0x19a4c116u, 0x1e376c08u,
    0x2748774cu, 0x34b0bcb5u, 0x391c0cb3u, 0x4ed8aa4au, 0x5b9cca4fu,
    0x682e6ff3u, 0x748f82eeu, 0x78a5636fu, 0x84c87814u, 0x8cc70208u,
    0x90befffau, 0xa4506cebu, 0xbef9a3f7u, 0xc67178f2u};

static uint32_t rotr(uint32_t x, unsigned r) {
  return (x >> r) | (x << (32u - r));
}

/* §6.2.2: folds one 64-byte block into the state (the portable code). */
static void compress1(uint32_t h[8], const uint8_t *p) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++)
    w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
           (uint32_t)p[4 * t + 2] << 8 | (uint32_t)p[4 * t + 3];
  for (int t = 16; t < 64; t++) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
  uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; t++) {
    uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + S1 + ch + K[t] + w[t];
    uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t maj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + maj;
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a;
  h[1] += b;
  h[2] += c;
  h[3] += d;
  h[4] += e;
  h[5] += f;
  h[6] += g;
  h[7] += hh;
}

static void compress_portable(uint32_t h[8], const uint8_t *p, size_t nblocks) {
  for (; nblocks; nblocks--, p += 64) compress1(h, p);
}

#ifdef HK_SHA_NI
/* The same with the SHA extensions (Intel's SHA-NI, also on AMD since Zen):
 * sha256rnds2 does two rounds on the state held as ABEF and CDGH halves,
 * sha256msg1 / sha256msg2 extend the message schedule four words at a time
 * (W[t-16] + s0(W[t-15]), then + W[t-7] + s1(W[t-2])). */
__attribute__((target("sha,sse4.1"))) static void
compress_shani(uint32_t h[8], const uint8_t *p, size_t nblocks) {
  /* Big-endian words: reverse the bytes of each 32-bit lane. */
  const __m128i bswap =
      _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
  __m128i tmp = _mm_loadu_si128((const __m128i *)(const void *)&h[0]);
  __m128i st1 = _mm_loadu_si128((const __m128i *)(const void *)&h[4]);
  tmp = _mm_shuffle_epi32(tmp, 0xB1);          /* CDAB */
  st1 = _mm_shuffle_epi32(st1, 0x1B);          /* EFGH */
  __m128i st0 = _mm_alignr_epi8(tmp, st1, 8);  /* ABEF */
  st1 = _mm_blend_epi16(st1, tmp, 0xF0);       /* CDGH */
  for (; nblocks; nblocks--, p += 64) {
    const __m128i abef = st0, cdgh = st1;
    __m128i w[4]; /* W[4i .. 4i+3] of the last four groups, w[i & 3] */
    for (int i = 0; i < 16; i++) {
      __m128i m;
      if (i < 4) {
        m = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
        m = _mm_shuffle_epi8(m, bswap);
      } else {
        m = _mm_sha256msg1_epu32(w[i & 3], w[(i + 1) & 3]);
        m = _mm_add_epi32(m, _mm_alignr_epi8(w[(i + 3) & 3], w[(i + 2) & 3], 4));
        m = _mm_sha256msg2_epu32(m, w[(i + 3) & 3]);
      }
      w[i & 3] = m;
      m = _mm_add_epi32(
          m, _mm_load_si128((const __m128i *)(const void *)&K[4 * i]));
      st1 = _mm_sha256rnds2_epu32(st1, st0, m);
      m = _mm_shuffle_epi32(m, 0x0E); /* the upper two words */
      st0 = _mm_sha256rnds2_epu32(st0, st1, m);
    }
    st0 = _mm_add_epi32(st0, abef);
    st1 = _mm_add_epi32(st1, cdgh);
  }
  tmp = _mm_shuffle_epi32(st0, 0x1B);    /* FEBA */
  st1 = _mm_shuffle_epi32(st1, 0xB1);    /* DCHG */
  st0 = _mm_blend_epi16(tmp, st1, 0xF0); /* DCBA */
  st1 = _mm_alignr_epi8(st1, tmp, 8);    /* HGFE */
  _mm_storeu_si128((__m128i *)(void *)&h[0], st0);
  _mm_storeu_si128((__m128i *)(void *)&h[4], st1);
}

/* CPUID directly: clang 14's __builtin_cpu_supports does not know "sha".
 * The SSE registers need no OS check on x86-64. */
static int cpu_has_sha(void) {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return 0;
  int ssse3 = (c >> 9) & 1, sse41 = (c >> 19) & 1;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
  return ssse3 && sse41 && ((b >> 29) & 1); /* leaf 7: EBX bit 29, SHA */
}
#else
static int cpu_has_sha(void) { return 0; }
#endif

/* 0: not chosen yet; 1: portable; 2: SHA extensions. Threads that race on
 * the first choice compute and store the same value. */
static atomic_int impl;

static int choose(int accel) {
  int v = accel && cpu_has_sha() ? 2 : 1;
  atomic_store_explicit(&impl, v, memory_order_relaxed);
  return v;
}

HK_INTERNAL int hk__sha256_accel(int on) { return choose(on) == 2; }

static void compress(uint32_t h[8], const uint8_t *p, size_t nblocks) {
  int v = atomic_load_explicit(&impl, memory_order_relaxed);
  if (v == 0) v = choose(1);
#ifdef HK_SHA_NI
  if (v == 2) {
    compress_shani(h, p, nblocks);
    return;
  }
#endif
  compress_portable(h, p, nblocks);
}

HK_INTERNAL void hk__sha256_init(hk_sha256_t *s) {
  /* §5.3.3: the fractional parts of the square roots of the first 8 primes. */
  static const uint32_t H0[8] = {0x6a09e667u, 0xbb67ae85u, 0x3c6ef372u,
                                 0xa54ff53au, 0x510e527fu, 0x9b05688cu,
                                 0x1f83d9abu, 0x5be0cd19u};
  memcpy(s->h, H0, sizeof H0);
  s->len = 0;
  s->nbuf = 0;
}

HK_INTERNAL void hk__sha256_update(hk_sha256_t *s, const void *data, size_t n) {
  const uint8_t *p = data;
  if (n == 0) return; /* data may be NULL then: memcpy must not see it */
  s->len += n;
  if (s->nbuf) { /* top up the partial block first */
    size_t take = 64 - s->nbuf < n ? 64 - s->nbuf : n;
    memcpy(s->buf + s->nbuf, p, take);
    s->nbuf += take;
    p += take;
    n -= take;
    if (s->nbuf < 64) return;
    compress(s->h, s->buf, 1);
    s->nbuf = 0;
  }
  if (n >= 64) { /* whole blocks in place */
    compress(s->h, p, n / 64);
    p += n / 64 * 64;
    n %= 64;
  }
  if (n) memcpy(s->buf, p, n);
  s->nbuf = n;
}

HK_INTERNAL void hk__sha256_final(hk_sha256_t *s, uint8_t out[32]) {
  /* §5.1.1: a 1 bit, zeros up to 56 mod 64, then the length in bits (big
   * endian, 64 bits). */
  uint64_t bits = s->len * 8u;
  uint8_t pad[72] = {0x80};
  size_t npad = (s->nbuf < 56 ? 56 : 120) - s->nbuf;
  for (int i = 0; i < 8; i++)
    pad[npad + (size_t)i] = (uint8_t)(bits >> (56 - 8 * i));
  hk__sha256_update(s, pad, npad + 8);
  for (int i = 0; i < 8; i++) {
    out[4 * i] = (uint8_t)(s->h[i] >> 24);
    out[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
    out[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
    out[4 * i + 3] = (uint8_t)s->h[i];
  }
}

HK_INTERNAL void hk__sha256(const void *data, size_t n, uint8_t out[32]) {
  hk_sha256_t s;
  hk__sha256_init(&s);
  hk__sha256_update(&s, data, n);
  hk__sha256_final(&s, out);
}

HK_INTERNAL void hk__hex(const uint8_t *bytes, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[bytes[i] >> 4];
    out[2 * i + 1] = digits[bytes[i] & 15];
  }
  out[2 * n] = '\0';
}
