/* test_sha256.c — SHA-256 against the FIPS 180-4 / NIST vectors, incremental
 * updates against one-shot, the SHA-extension code against the portable code,
 * and against sha256sum when it is installed. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "sha256.h"

static void hex_of(const void *data, size_t n, char out[65]) {
  uint8_t d[32];
  hk__sha256(data, n, d);
  hk__hex(d, 32, out);
}

static void test_vectors(void) {
  static const struct {
    const char *msg, *hex;
  } v[] = {
      {"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
      {"abc",
       "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
      {"abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
       "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"},
      {"abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmno"
       "p"
       "jklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
       "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1"},
  };
  char got[65];
  for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
    hex_of(v[i].msg, strlen(v[i].msg), got);
    CHECK_STR_EQ(got, v[i].hex);
  }
  hex_of(NULL, 0, got); /* NULL with n == 0 is allowed */
  CHECK_STR_EQ(got, v[0].hex);

  /* One million 'a': one-shot, and in uneven pieces through update. */
  size_t n = 1000000;
  char *a = malloc(n);
  CHECK(a != NULL);
  if (!a) return;
  memset(a, 'a', n);
  const char *million =
      "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0";
  hex_of(a, n, got);
  CHECK_STR_EQ(got, million);
  hk_sha256_t s;
  hk__sha256_init(&s);
  for (size_t off = 0, step = 1; off < n;
       off += step, step = step * 3 % 1000 + 1)
    hk__sha256_update(&s, a + off, off + step <= n ? step : n - off);
  uint8_t d[32];
  hk__sha256_final(&s, d);
  hk__hex(d, 32, got);
  CHECK_STR_EQ(got, million);
  free(a);
}

/* Splitting a message anywhere (including across and onto the 55/56/64 byte
 * padding boundaries) gives the one-shot digest. */
static void test_incremental(void) {
  uint8_t msg[200], whole[32], part[32];
  for (size_t i = 0; i < sizeof msg; i++) msg[i] = (uint8_t)(i * 7 + 3);
  for (size_t len = 0; len <= sizeof msg; len += (len < 130 ? 1 : 7)) {
    hk__sha256(msg, len, whole);
    for (size_t cut = 0; cut <= len; cut++) {
      hk_sha256_t s;
      hk__sha256_init(&s);
      hk__sha256_update(&s, msg, cut);
      hk__sha256_update(&s, NULL, 0);
      hk__sha256_update(&s, msg + cut, len - cut);
      hk__sha256_final(&s, part);
      CHECK_MSG(memcmp(whole, part, 32) == 0, "len %zu split at %zu", len, cut);
    }
  }
  /* Byte by byte, all 200 bytes. */
  hk_sha256_t s;
  hk__sha256_init(&s);
  for (size_t i = 0; i < sizeof msg; i++) hk__sha256_update(&s, msg + i, 1);
  hk__sha256_final(&s, part);
  hk__sha256(msg, sizeof msg, whole);
  CHECK(memcmp(whole, part, 32) == 0);
  /* A one-bit change changes the digest (the test can fail). */
  msg[100] ^= 1;
  hk__sha256(msg, sizeof msg, part);
  CHECK(memcmp(whole, part, 32) != 0);
}

static void test_hex(void) {
  const uint8_t b[] = {0x00, 0x01, 0x7f, 0x80, 0xab, 0xff};
  char out[13];
  memset(out, 'x', sizeof out);
  hk__hex(b, sizeof b, out);
  CHECK_STR_EQ(out, "00017f80abff");
  hk__hex(b, 0, out);
  CHECK_STR_EQ(out, "");
}

/* Random buffers, compared with the system's sha256sum (skipped without it). */
static void test_sha256sum(void) {
  if (system("sha256sum --version >/dev/null 2>&1") != 0) {
    printf("note: no sha256sum command; comparison skipped\n");
    return;
  }
  char dir[] = "/tmp/hk_sha256_XXXXXX";
  if (!mkdtemp(dir)) {
    CHECK(!"mkdtemp");
    return;
  }
  static const size_t sizes[] = {0,  1,   3,   55,  56,  57,   63,   64,
                                 65, 119, 120, 127, 128, 1000, 4097, 100003};
  unsigned seed = 12345;
  uint8_t *buf = malloc(100003);
  CHECK(buf != NULL);
  for (size_t k = 0; buf && k < sizeof sizes / sizeof sizes[0]; k++) {
    for (size_t i = 0; i < sizes[k]; i++) {
      seed = seed * 1103515245u + 12345u;
      buf[i] = (uint8_t)(seed >> 16);
    }
    char path[64], cmd[160], want[65] = "", got[65];
    snprintf(path, sizeof path, "%s/buf", dir);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) break;
    CHECK_INT_EQ(fwrite(buf, 1, sizes[k], f), sizes[k]);
    fclose(f);
    snprintf(cmd, sizeof cmd, "sha256sum %s", path);
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) break;
    CHECK(fscanf(p, "%64s", want) == 1);
    pclose(p);
    hex_of(buf, sizes[k], got);
    CHECK_MSG(strcmp(got, want) == 0, "size %zu: %s != sha256sum %s", sizes[k],
              got, want);
    unlink(path);
  }
  free(buf);
  rmdir(dir);
}

/* The digest of n bytes at p in pieces of step bytes, with the code chosen by
 * accel (see hk__sha256_accel). */
static void digest_with(int accel, const uint8_t *p, size_t n, size_t step,
                        uint8_t out[32]) {
  hk__sha256_accel(accel);
  hk_sha256_t s;
  hk__sha256_init(&s);
  for (size_t off = 0; off < n; off += step)
    hk__sha256_update(&s, p + off, n - off < step ? n - off : step);
  hk__sha256_final(&s, out);
}

/* The SHA-extension code (where the CPU has it) and the portable code give
 * the same digests: every length from 0 to 300 at every alignment mod 16,
 * in one piece and in pieces, and a few MB of random data. */
static void test_accel_matches_portable(void) {
  int accel = hk__sha256_accel(1);
  printf("note: SHA extensions %s\n",
         accel ? "in use: compared with the portable code"
               : "not available: the portable code only");
  size_t big = 5u << 20;
  uint8_t *buf = malloc(big + 64);
  CHECK(buf != NULL);
  if (!buf) return;
  unsigned seed = 2024;
  for (size_t i = 0; i < big + 64; i++) {
    seed = seed * 1103515245u + 12345u;
    buf[i] = (uint8_t)(seed >> 16);
  }
  uint8_t a[32], b[32];
  for (size_t len = 0; len <= 300; len++)
    for (size_t align = 0; align < 16; align++) {
      digest_with(1, buf + align, len, len ? len : 1, a);
      digest_with(0, buf + align, len, len ? len : 1, b);
      CHECK_MSG(memcmp(a, b, 32) == 0, "len %zu at +%zu", len, align);
      digest_with(1, buf + align, len, 1 + len % 67, b);
      CHECK_MSG(memcmp(a, b, 32) == 0, "len %zu at +%zu in pieces", len,
                align);
    }
  static const size_t sizes[] = {1u << 20, (3u << 20) + 17, 5u << 20};
  for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
    digest_with(1, buf + k, sizes[k], sizes[k], a);
    digest_with(0, buf + k, sizes[k], sizes[k], b);
    CHECK_MSG(memcmp(a, b, 32) == 0, "size %zu", sizes[k]);
    digest_with(1, buf + k, sizes[k], 4099, b);
    CHECK_MSG(memcmp(a, b, 32) == 0, "size %zu in pieces", sizes[k]);
  }
  /* A state copied midway (as cache keys do) forks the computation with
   * either code. */
  for (int mode = 0; mode < 2; mode++) {
    hk__sha256_accel(mode);
    hk_sha256_t s, t;
    hk__sha256_init(&s);
    hk__sha256_update(&s, buf, 1000);
    t = s;
    hk__sha256_update(&t, buf + 1000, 333);
    hk__sha256_final(&t, a);
    hk__sha256(buf, 1333, b);
    CHECK_MSG(memcmp(a, b, 32) == 0, "forked state, accel %d", mode);
  }
  hk__sha256_accel(1);
  free(buf);
}

int main(void) {
  /* The vectors and the incremental test with each code in turn. */
  for (int accel = 1; accel >= 0; accel--) {
    if (accel && !hk__sha256_accel(1)) continue; /* no SHA extensions */
    hk__sha256_accel(accel);
    test_vectors();
    test_incremental();
  }
  hk__sha256_accel(1);
  test_accel_matches_portable();
  test_hex();
  test_sha256sum();
  CHECK_DONE();
}
