/* sha256.h — SHA-256 (FIPS 180-4) for disk cache keys and entry digests. */
#ifndef HK_SHA256_H
#define HK_SHA256_H

#include <stddef.h>
#include <stdint.h>

#include "internal.h"

/* A running hash. Plain data: copying it forks the computation. */
typedef struct hk_sha256 {
  uint32_t h[8];   /* the chaining state */
  uint64_t len;    /* bytes hashed so far */
  uint8_t buf[64]; /* the partial block */
  size_t nbuf;     /* bytes in buf, < 64 between calls */
} hk_sha256_t;

HK_INTERNAL void hk__sha256_init(hk_sha256_t *s);
/* Hashes n more bytes (data may be NULL when n == 0). */
HK_INTERNAL void hk__sha256_update(hk_sha256_t *s, const void *data, size_t n);
/* Writes the digest; s must be initialized again before reuse. */
HK_INTERNAL void hk__sha256_final(hk_sha256_t *s, uint8_t out[32]);
/* One-shot: the digest of n bytes at data. */
HK_INTERNAL void hk__sha256(const void *data, size_t n, uint8_t out[32]);
/* For tests: on != 0 uses the SHA extensions where the CPU has them (the
 * default), 0 forces the portable code. Returns 1 when the extensions are
 * now in use. Both give the same digests. */
HK_INTERNAL int hk__sha256_accel(int on);
/* Lowercase hex of n bytes into out, which holds 2n + 1 chars (NUL-ended). */
HK_INTERNAL void hk__hex(const uint8_t *bytes, size_t n, char *out);

#endif /* HK_SHA256_H */
