/* test_npy.c — tests of the .npy reader and writer (tools/npy.c).
 *
 * Round trips for every hk type and many shapes, NumPy's exact bytes, hand-built
 * headers of every version and style, every malformed file we could think of (each
 * one both parsed from memory and read from a file, which must agree), and writes
 * that fail without harming what was there.
 *
 * Two extra modes serve tests/npy_numpy_check.sh, which runs NumPy itself:
 *   test_npy --write-samples DIR   writes one file per hk type and shape into DIR
 *   test_npy --read-samples DIR    checks the files NumPy wrote into DIR
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* mkdtemp, fileno, setrlimit */
#endif

#include "npy.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"

static char tmpdir[64]; /* made by mkdtemp, removed at the end */

/* ---- Helpers ------------------------------------------------------------ */

/* The npy calls, with their error put as one line into err (errlen bytes;
 * NULL: no diags list at all): the words are what the tests check. */
static int t_words(hku_diags *d, int rc, char *err, size_t errlen) {
  if (err && errlen) {
    hku_buf b = HKU_BUF_INIT;
    snprintf(err, errlen, "%s", rc ? hk_npy_error(d, &b) : "");
    hku_buf_free(&b);
  }
  hku_diags_free(d);
  return rc;
}

static int t_read(const char *path, hk_npy_t *out, char *err, size_t errlen) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk_npy_read(path, out, err ? &d : NULL);
  return t_words(&d, rc, err, errlen);
}

static int t_parse(const void *bytes, size_t len, const char *name, hk_npy_t *out,
                   char *err, size_t errlen) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk_npy_parse(bytes, len, name, out, err ? &d : NULL);
  return t_words(&d, rc, err, errlen);
}

static int t_write(const char *path, hk_dtype_t t, int ndim, const size_t *shape,
                   const void *data, char *err, size_t errlen) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk_npy_write(path, t, ndim, shape, data, err ? &d : NULL);
  return t_words(&d, rc, err, errlen);
}

static int t_encode(hk_dtype_t t, int ndim, const size_t *shape, const void *data,
                    void **bytes, size_t *len, char *err, size_t errlen) {
  hku_diags d = HKU_DIAGS_INIT;
  int rc = hk_npy_encode(t, ndim, shape, data, bytes, len, err ? &d : NULL);
  return t_words(&d, rc, err, errlen);
}

static const struct {
  hk_dtype_t t;
  const char *tag;   /* hk's name, used in sample file names */
  const char *descr; /* what np.save writes */
  size_t size;
} types[] = {
    {HK_F32, "f32", "<f4", 4}, {HK_F64, "f64", "<f8", 8}, {HK_I8, "i8", "|i1", 1},
    {HK_I16, "i16", "<i2", 2}, {HK_I32, "i32", "<i4", 4}, {HK_I64, "i64", "<i8", 8},
    {HK_U8, "u8", "|u1", 1},   {HK_U16, "u16", "<u2", 2}, {HK_U32, "u32", "<u4", 4},
    {HK_U64, "u64", "<u8", 8}, {HK_F16, "f16", "<f2", 2}, {HK_BOOL, "bool", "|b1", 1},
};
#define NTYPES (sizeof types / sizeof types[0])

static const struct {
  int ndim;
  size_t dims[16];
  const char *code; /* in sample file names */
} shapes[] = {
    {0, {0}, "scalar"},   {1, {0}, "0"},         {1, {1}, "1"},
    {1, {5}, "5"},        {2, {2, 3}, "2x3"},    {3, {2, 0, 4}, "2x0x4"},
    {4, {3, 1, 2, 2}, "3x1x2x2"},
    /* long enough that np.save's spare spaces for the first axis push the
     * header from 128 to 192 bytes */
    {16, {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1}, "1x1x1x1x1x1x1x1x1x1x1x1x1x1x1x1"},
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static size_t prod(int ndim, const size_t *dims) {
  size_t n = 1;
  for (int k = 0; k < ndim; k++) n *= dims[k];
  return n;
}

/* Element i of the sample data, as NumPy computes it in npy_numpy_check.sh:
 * integers (i*37 + 5) wrapped to the type, floats (i % 1000) * 0.25 - 7. */
static void sample_value(size_t ti, size_t i, void *dst) {
  hk_dtype_t t = types[ti].t;
  if (t == HK_F32) {
    float f = (float)((double)(i % 1000) * 0.25 - 7.0);
    memcpy(dst, &f, 4);
  } else if (t == HK_F64) {
    double d = (double)(i % 1000) * 0.25 - 7.0;
    memcpy(dst, &d, 8);
  } else if (t == HK_F16) {
    /* (i % 1000) * 0.25 - 7: exact in f16, from -7 to 242.75, or 0 */
    int q = (int)(i % 1000) - 28; /* the value in quarters */
    uint16_t h = 0;
    if (q) {
      unsigned m = (unsigned)(q < 0 ? -q : q);
      int e = 0;
      while (m >= 2048) m >>= 1, e++; /* never: |q| < 1024 */
      while (m < 1024) m <<= 1, e--;
      /* value = m * 2^(e - 2) = (m / 1024) * 2^(e + 8), m in [1024, 2048) */
      h = (uint16_t)((q < 0 ? 0x8000u : 0) | (unsigned)(e + 23) << 10 | (m & 1023u));
    }
    memcpy(dst, &h, 2);
  } else if (t == HK_BOOL) {
    uint8_t b = ((uint64_t)i * 37u + 5u) % 3u != 0;
    memcpy(dst, &b, 1);
  } else {
    uint64_t v = (uint64_t)i * 37u + 5u;
    memcpy(dst, &v, types[ti].size); /* the low bytes: little-endian host */
  }
}

static void *sample_data(size_t ti, size_t count) {
  unsigned char *d = malloc(count * types[ti].size + 1);
  for (size_t i = 0; i < count; i++) sample_value(ti, i, d + i * types[ti].size);
  return d;
}

/* Builds a file: preamble of version major.minor, the header h[0..hlen), then
 * dlen bytes of data (0, 1, 2, ...). Returns a malloc'ed buffer, its size in *len. */
static unsigned char *mk(int major, int minor, const char *h, size_t hlen, size_t dlen,
                         size_t *len) {
  size_t pre = major == 1 ? 10 : 12;
  unsigned char *b = malloc(pre + hlen + dlen + 1);
  memcpy(b, "\x93NUMPY", 6);
  b[6] = (unsigned char)major;
  b[7] = (unsigned char)minor;
  for (size_t k = 0; k < pre - 8; k++) b[8 + k] = (unsigned char)(hlen >> (8 * k));
  memcpy(b + pre, h, hlen);
  for (size_t k = 0; k < dlen; k++) b[pre + hlen + k] = (unsigned char)k;
  *len = pre + hlen + dlen;
  return b;
}

/* mk() for a version 1.0 file with a NUL-free header. */
static unsigned char *mk1(const char *h, size_t dlen, size_t *len) {
  return mk(1, 0, h, strlen(h), dlen, len);
}

static void write_file(const char *path, const void *b, size_t len) {
  FILE *f = fopen(path, "wb");
  CHECK(f != NULL);
  if (!f) return;
  CHECK_INT_EQ(fwrite(b, 1, len, f), len);
  CHECK_INT_EQ(fclose(f), 0);
}

static int count_entries(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  for (struct dirent *de; (de = readdir(d));)
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void remove_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) {
    DIR *d = opendir(path);
    if (d) {
      for (struct dirent *de; (de = readdir(d));) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..")) continue;
        char sub[512];
        snprintf(sub, sizeof sub, "%s/%s", path, de->d_name);
        remove_tree(sub);
      }
      closedir(d);
    }
    rmdir(path);
  } else {
    unlink(path);
  }
}

static int is_zeroed(const hk_npy_t *a) {
  hk_npy_t z;
  memset(&z, 0, sizeof z);
  return memcmp(a, &z, sizeof z) == 0;
}

/* Checks that b[0..len) is refused, with a one-line message that starts with the
 * path and contains `word`, both when parsed from memory and when read from a
 * file, with the same message, and that the output is left zeroed. */
#define EXPECT_ERR(b, len, word) expect_err(__LINE__, b, len, word)
static void expect_err(int line, const unsigned char *b, size_t len, const char *word) {
  int before = check_failures;
  char path[128], prefix[160], e1[1024] = "", e2[1024] = "";
  snprintf(path, sizeof path, "%s/bad.npy", tmpdir);
  snprintf(prefix, sizeof prefix, "%s: ", path);
  hk_npy_t a;
  memset(&a, 0x5a, sizeof a);
  CHECK_INT_EQ(t_parse(b, len, path, &a, e1, sizeof e1), HK_EINVAL);
  CHECK(is_zeroed(&a));
  CHECK_MSG(strncmp(e1, prefix, strlen(prefix)) == 0, "\"%s\" does not start with the path", e1);
  CHECK_CONTAINS(e1, word);
  CHECK_MSG(strchr(e1, '\n') == NULL, "\"%s\" is not one line", e1);
  write_file(path, b, len);
  memset(&a, 0x5a, sizeof a);
  CHECK_INT_EQ(t_read(path, &a, e2, sizeof e2), HK_EINVAL);
  CHECK(is_zeroed(&a));
  CHECK_STR_EQ(e2, e1);
  unlink(path);
  if (check_failures != before) fprintf(stderr, "  (in the case at line %d)\n", line);
}

/* As expect_err for a header given as a string, in a version 1.0 file with
 * `dlen` bytes of data. */
#define EXPECT_HDR_ERR(h, dlen, word) expect_hdr_err(__LINE__, h, dlen, word)
static void expect_hdr_err(int line, const char *h, size_t dlen, const char *word) {
  size_t len;
  unsigned char *b = mk1(h, dlen, &len);
  expect_err(line, b, len, word);
  free(b);
}

/* Loads b[0..len) both from memory and from a file, checks that the two agree,
 * and returns the memory one in *a (rc 0), or -1 with a failed check. */
static int load(const unsigned char *b, size_t len, hk_npy_t *a) {
  char path[128], err[1024] = "";
  snprintf(path, sizeof path, "%s/good.npy", tmpdir);
  int rc = t_parse(b, len, "good.npy", a, err, sizeof err);
  CHECK_MSG(rc == 0, "parse: %s", err);
  if (rc) return -1;
  write_file(path, b, len);
  hk_npy_t f;
  rc = t_read(path, &f, err, sizeof err);
  CHECK_MSG(rc == 0, "read: %s", err);
  unlink(path);
  if (rc) return 0;
  size_t n = a->count * a->itemsize;
  CHECK_STR_EQ(f.descr, a->descr);
  CHECK(f.kind == a->kind && f.byteorder == a->byteorder && f.itemsize == a->itemsize);
  CHECK(f.fortran_order == a->fortran_order && f.dtype == a->dtype);
  CHECK(f.ndim == a->ndim && f.count == a->count);
  CHECK(memcmp(f.shape, a->shape, sizeof f.shape) == 0);
  CHECK(f.version_major == a->version_major && f.version_minor == a->version_minor);
  CHECK((f.data == NULL) == (a->data == NULL));
  if (n && f.data && a->data) CHECK(memcmp(f.data, a->data, n) == 0);
  hk_npy_free(&f);
  return 0;
}

#define EXPECT_HDR_OK(h, dlen, a) expect_hdr_ok(__LINE__, h, dlen, a)
static int expect_hdr_ok(int line, const char *h, size_t dlen, hk_npy_t *a) {
  size_t len;
  unsigned char *b = mk1(h, dlen, &len);
  int before = check_failures;
  int rc = load(b, len, a);
  free(b);
  if (check_failures != before) fprintf(stderr, "  (in the case at line %d)\n", line);
  return rc;
}

/* Checks an array read back against what was written. */
static void check_array(const hk_npy_t *a, size_t ti, int ndim, const size_t *dims,
                        const void *data) {
  size_t count = prod(ndim, dims), n = count * types[ti].size;
  CHECK_STR_EQ(a->descr, types[ti].descr);
  CHECK_STR_EQ(a->descr, hk_npy_descr_of(types[ti].t));
  CHECK_INT_EQ(a->dtype, types[ti].t);
  CHECK_INT_EQ(a->itemsize, types[ti].size);
  CHECK_INT_EQ(a->kind, types[ti].descr[1]);
  CHECK_INT_EQ(a->byteorder, types[ti].size == 1 ? '|' : '<');
  CHECK_INT_EQ(a->fortran_order, 0);
  CHECK_INT_EQ(a->ndim, ndim);
  for (int k = 0; k < ndim; k++) CHECK_INT_EQ(a->shape[k], dims[k]);
  CHECK_INT_EQ(a->count, count);
  CHECK_INT_EQ(a->version_major, 1);
  CHECK_INT_EQ(a->version_minor, 0);
  if (n == 0) {
    CHECK(a->data == NULL);
  } else {
    CHECK(a->data != NULL && (uintptr_t)a->data % 64 == 0);
    if (a->data) CHECK(memcmp(a->data, data, n) == 0);
  }
}

/* ---- Round trips -------------------------------------------------------- */

static void test_round_trips(void) {
  char err[1024], path[128];
  snprintf(path, sizeof path, "%s/rt.npy", tmpdir);
  for (size_t ti = 0; ti < NTYPES; ti++) {
    for (size_t si = 0; si < NSHAPES; si++) {
      int before = check_failures;
      int ndim = shapes[si].ndim;
      const size_t *dims = shapes[si].dims;
      size_t count = prod(ndim, dims), n = count * types[ti].size;
      void *data = sample_data(ti, count);
      void *bytes = NULL;
      size_t len = 0;
      CHECK_INT_EQ(t_encode(types[ti].t, ndim, dims, data, &bytes, &len, err, sizeof err), 0);
      const unsigned char *b = bytes;
      size_t hn = len - n;
      CHECK(len > n && hn % 64 == 0 && b[hn - 1] == '\n');
      CHECK(memcmp(b, "\x93NUMPY\x01\x00", 8) == 0 && (size_t)(b[8] | b[9] << 8) == hn - 10);
      hk_npy_t a;
      CHECK_INT_EQ(t_parse(bytes, len, "rt", &a, err, sizeof err), 0);
      check_array(&a, ti, ndim, dims, data);
      hk_npy_free(&a);
      CHECK(is_zeroed(&a));
      hk_npy_free(&a); /* freeing twice, or NULL, is harmless */
      hk_npy_free(NULL);

      CHECK_INT_EQ(t_write(path, types[ti].t, ndim, dims, data, err, sizeof err), 0);
      CHECK_MSG(t_read(path, &a, err, sizeof err) == 0, "%s", err);
      check_array(&a, ti, ndim, dims, data);
      hk_npy_free(&a);
      FILE *f = fopen(path, "rb");
      unsigned char *back = malloc(len + 1);
      CHECK(f && fread(back, 1, len + 1, f) == len && memcmp(back, bytes, len) == 0);
      if (f) fclose(f);
      free(back);
      free(bytes);
      free(data);
      if (check_failures != before)
        fprintf(stderr, "  (round trip of %s, shape %s)\n", types[ti].tag, shapes[si].code);
    }
  }
  unlink(path);
  CHECK_INT_EQ(count_entries(tmpdir), 0); /* no temporary files left behind */
}

static void test_large(void) {
  char err[1024], path[128];
  snprintf(path, sizeof path, "%s/large.npy", tmpdir);
  size_t shape[1] = {((size_t)1 << 20) + 3};
  double *d = malloc(shape[0] * sizeof *d);
  for (size_t i = 0; i < shape[0]; i++) d[i] = (double)i * 0.5 - 3.0;
  CHECK_INT_EQ(t_write(path, HK_F64, 1, shape, d, err, sizeof err), 0);
  hk_npy_t a;
  CHECK_MSG(t_read(path, &a, err, sizeof err) == 0, "%s", err);
  CHECK_INT_EQ(a.count, shape[0]);
  CHECK_INT_EQ(a.dtype, HK_F64);
  CHECK(a.data && (uintptr_t)a.data % 64 == 0 && memcmp(a.data, d, shape[0] * 8) == 0);
  hk_npy_free(&a);
  free(d);
  unlink(path);
}

/* ---- What NumPy writes -------------------------------------------------- */

/* np.save(f, np.arange(3, dtype='<f4')) with NumPy 1.24: 128 bytes of header
 * (60 spaces: 20 to let the first axis grow, 40 to reach 64-byte alignment). */
static const unsigned char numpy_arange3[] =
    "\x93NUMPY\x01\x00v\x00{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }"
    "          " "          " "          " "          " "          " "          "
    "\n"
    "\x00\x00\x00\x00\x00\x00\x80\x3f\x00\x00\x00\x40";

static void test_numpy_bytes(void) {
  char err[256];
  float v[3] = {0, 1, 2};
  size_t shape[1] = {3};
  void *bytes;
  size_t len;
  CHECK_INT_EQ(sizeof numpy_arange3 - 1, 140);
  CHECK_INT_EQ(t_encode(HK_F32, 1, shape, v, &bytes, &len, err, sizeof err), 0);
  CHECK_INT_EQ(len, 140);
  CHECK(len == 140 && memcmp(bytes, numpy_arange3, 140) == 0);
  free(bytes);
  hk_npy_t a;
  CHECK_INT_EQ(t_parse(numpy_arange3, 140, "np.npy", &a, err, sizeof err), 0);
  CHECK(a.dtype == HK_F32 && a.ndim == 1 && a.shape[0] == 3 && a.count == 3);
  CHECK(a.data && memcmp(a.data, v, 12) == 0);
  hk_npy_free(&a);

  /* np.save of a 0-d int64: shape "()", no growth spaces */
  int64_t x = -7;
  CHECK_INT_EQ(t_encode(HK_I64, 0, NULL, &x, &bytes, &len, err, sizeof err), 0);
  static const char h0[] = "{'descr': '<i8', 'fortran_order': False, 'shape': (), }";
  CHECK(len == 136 && memcmp((char *)bytes + 10, h0, sizeof h0 - 1) == 0);
  free(bytes);

  /* np.save of np.zeros((1,)*16, '<i2'): the dict (101 bytes), 20 spare spaces
   * for the first axis and 60 of padding make a 192-byte header, not 128 */
  size_t ones[16];
  int16_t zero = 0;
  for (int k = 0; k < 16; k++) ones[k] = 1;
  static const char h16[] = "{'descr': '<i2', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, "
                            "1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1), }";
  CHECK_INT_EQ(t_encode(HK_I16, 16, ones, &zero, &bytes, &len, err, sizeof err), 0);
  const unsigned char *b = bytes;
  CHECK_INT_EQ(sizeof h16 - 1, 101);
  CHECK_INT_EQ(len, 194);
  CHECK(len == 194 && b[8] == 182 && b[9] == 0 && memcmp(b + 10, h16, 101) == 0);
  int spaces = 0;
  for (size_t k = 111; k < 191 && k < len; k++) spaces += b[k] == ' ';
  CHECK_INT_EQ(spaces, 80);
  CHECK(len == 194 && b[191] == '\n');
  free(bytes);
}

/* ---- Hand-built headers ------------------------------------------------- */

static void test_versions(void) {
  static const char h[] = "{'descr': '<i4', 'fortran_order': False, 'shape': (2, 2), }   \n";
  hk_npy_t a;
  size_t len;
  for (int major = 1; major <= 3; major++) {
    unsigned char *b = mk(major, 0, h, strlen(h), 16, &len);
    if (load(b, len, &a) == 0) {
      CHECK_INT_EQ(a.version_major, major);
      CHECK_INT_EQ(a.version_minor, 0);
      CHECK(a.dtype == HK_I32 && a.ndim == 2 && a.count == 4);
      CHECK(a.data && ((unsigned char *)a.data)[15] == 15);
      hk_npy_free(&a);
    }
    free(b);
  }
  /* 3.0 allows UTF-8; the only place it can be is a field name, so this is a
   * structured dtype, refused as such and not for its encoding. */
  static const char hs[] =
      "{'descr': [('caf\xc3\xa9', '<f4')], 'fortran_order': False, 'shape': (1,), }\n";
  unsigned char *b = mk(3, 0, hs, strlen(hs), 4, &len);
  EXPECT_ERR(b, len, "structured");
  free(b);
  b = mk(1, 0, hs, strlen(hs), 4, &len);
  EXPECT_ERR(b, len, "non-ASCII byte 0xc3");
  free(b);
  b = mk(2, 0, hs, strlen(hs), 4, &len);
  EXPECT_ERR(b, len, "ASCII");
  free(b);
  static const char hu[] =
      "{'descr': [('caf\xe9', '<f4')], 'fortran_order': False, 'shape': (1,), }\n";
  b = mk(3, 0, hu, strlen(hu), 4, &len);
  EXPECT_ERR(b, len, "not valid UTF-8");
  free(b);
  static const char hl[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3L,), }\n";
  b = mk(3, 0, hl, strlen(hl), 12, &len); /* Python 2 longs only in old versions */
  EXPECT_ERR(b, len, "syntax");
  free(b);
}

static void test_header_styles(void) {
  hk_npy_t a;
  if (EXPECT_HDR_OK("  {\"shape\" :( 2 ,3 , ) ,\n\t\"fortran_order\":True,   'descr':\"<u2\"}\t \n",
                    12, &a) == 0) {
    CHECK(a.dtype == HK_U16 && a.fortran_order == 1 && a.ndim == 2);
    CHECK(a.shape[0] == 2 && a.shape[1] == 3 && a.count == 6);
    hk_npy_free(&a);
  }
  /* no trailing comma, no padding, Python 2 long, ((2, 3)) is (2, 3) */
  if (EXPECT_HDR_OK("{'descr':'<f8','fortran_order':False,'shape':(3L,)}\n", 24, &a) == 0) {
    CHECK(a.dtype == HK_F64 && a.ndim == 1 && a.shape[0] == 3);
    hk_npy_free(&a);
  }
  if (EXPECT_HDR_OK("{'descr': '<i2', 'fortran_order': False, 'shape': ((2, 3)), }\n", 12,
                    &a) == 0) {
    CHECK(a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3);
    hk_npy_free(&a);
  }
  /* byte orders NumPy treats as the same type */
  static const struct { const char *descr; hk_dtype_t t; char order; size_t size; } same[] = {
      {"=f4", HK_F32, '<', 4}, {"f4", HK_F32, '<', 4}, {"|f4", HK_F32, '<', 4},
      {"<i1", HK_I8, '|', 1},  {">u1", HK_U8, '|', 1}, {"=u8", HK_U64, '<', 8},
  };
  for (size_t k = 0; k < sizeof same / sizeof same[0]; k++) {
    char h[128];
    snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }\n",
             same[k].descr);
    if (EXPECT_HDR_OK(h, 2 * same[k].size, &a) == 0) {
      CHECK_INT_EQ(a.dtype, same[k].t);
      CHECK_INT_EQ(a.byteorder, same[k].order);
      CHECK_STR_EQ(a.descr, same[k].descr);
      hk_npy_free(&a);
    }
  }
  /* shape (2, -0) is (2, 0); 64 dimensions are fine */
  if (EXPECT_HDR_OK("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -0), }\n", 0, &a) == 0) {
    CHECK(a.ndim == 2 && a.count == 0 && a.data == NULL);
    hk_npy_free(&a);
  }
  char h[512] = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int k = 0; k < HK_NPY_MAXDIM; k++) strcat(h, "1,");
  strcat(h, "), }\n");
  if (EXPECT_HDR_OK(h, 4, &a) == 0) {
    CHECK(a.ndim == HK_NPY_MAXDIM && a.count == 1);
    hk_npy_free(&a);
  }
}

/* Every descr hk does not compute with is still read; describe() names it. */
static void test_other_dtypes(void) {
  static const struct {
    const char *descr;
    char kind, order;
    size_t itemsize;
    const char *words;
  } other[] = {
      {"<f16", 'f', '<', 16, "float128"},     {"<c8", 'c', '<', 8, "complex64"},
      {"<c16", 'c', '<', 16, "complex128"},   {"<c32", 'c', '<', 32, "complex256"},
      {"|S5", 'S', '|', 5, "bytes (|S5)"},    {"<U10", 'U', '<', 40, "str (<U10)"},
      {"|V4", 'V', '|', 4, "void (|V4)"},     {"<M8[ns]", 'M', '<', 8, "datetime64[ns]"},
      {"<m8[s]", 'm', '<', 8, "timedelta64[s]"}, {"<M8", 'M', '<', 8, "datetime64"},
      {">f4", 'f', '>', 4, "big-endian float32"}, {">i4", 'i', '>', 4, "big-endian int32"},
      {">u8", 'u', '>', 8, "big-endian uint64"}, {">f8", 'f', '>', 8, "big-endian float64"},
      {">c8", 'c', '>', 8, "big-endian complex64"}, {"|S0", 'S', '|', 0, "bytes (|S0)"},
  };
  for (size_t k = 0; k < sizeof other / sizeof other[0]; k++) {
    char h[128], desc[64];
    snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (2,), }\n",
             other[k].descr);
    hk_npy_t a;
    if (EXPECT_HDR_OK(h, 2 * other[k].itemsize, &a) != 0) continue;
    CHECK_STR_EQ(a.descr, other[k].descr);
    CHECK_INT_EQ(a.kind, other[k].kind);
    CHECK_INT_EQ(a.byteorder, other[k].order);
    CHECK_INT_EQ(a.itemsize, other[k].itemsize);
    CHECK_INT_EQ(a.dtype, HK_DTYPE_INVALID);
    CHECK_INT_EQ(a.count, 2);
    CHECK((a.data == NULL) == (other[k].itemsize == 0));
    CHECK_STR_EQ(hk_npy_describe(&a, desc, sizeof desc), other[k].words);
    hk_npy_free(&a);
  }
  /* and the hk types */
  static const char *const names[NTYPES] = {"float32", "float64", "int8",   "int16", "int32",
                                            "int64",   "uint8",   "uint16", "uint32", "uint64",
                                            "float16", "bool"};
  for (size_t ti = 0; ti < NTYPES; ti++) {
    hk_npy_t a;
    char desc[64];
    size_t shape[1] = {1};
    void *bytes;
    size_t len;
    uint64_t zero = 0;
    CHECK_INT_EQ(t_encode(types[ti].t, 1, shape, &zero, &bytes, &len, NULL, 0), 0);
    CHECK_INT_EQ(t_parse(bytes, len, "x", &a, NULL, 0), 0);
    CHECK_STR_EQ(hk_npy_describe(&a, desc, sizeof desc), names[ti]);
    hk_npy_free(&a);
    free(bytes);
  }
  hk_npy_t z;
  char desc[64];
  memset(&z, 0, sizeof z);
  CHECK_STR_EQ(hk_npy_describe(&z, desc, sizeof desc), "unknown dtype");
  CHECK_STR_EQ(hk_npy_describe(NULL, desc, sizeof desc), "unknown dtype");
  CHECK_STR_EQ(hk_npy_describe(&z, desc, 4), "unk"); /* cut, never overrun */

  for (size_t ti = 0; ti < NTYPES; ti++)
    CHECK_STR_EQ(hk_npy_descr_of(types[ti].t), types[ti].descr);
  CHECK_STR_EQ(hk_npy_descr_of(HK_BF16), "<u2"); /* NumPy has no bf16 */
  CHECK(hk_npy_descr_of(HK_DTYPE_INVALID) == NULL);
  CHECK(hk_npy_descr_of((hk_dtype_t)HK_DTYPE_COUNT) == NULL);
}

/* ---- Malformed files ---------------------------------------------------- */

static void test_bad_preamble(void) {
  size_t len;
  unsigned char *b;
  EXPECT_ERR((const unsigned char *)"", 0, "empty file");
  EXPECT_ERR((const unsigned char *)"\x93NUMPZ\x01\x00\x00\x00", 10, "bad magic string");
  EXPECT_ERR((const unsigned char *)"hello, world\n", 13, "not a .npy file");
  EXPECT_ERR((const unsigned char *)"PK\x03\x04\x14\x00\x00\x00", 8, ".npz");
  EXPECT_ERR((const unsigned char *)"\x93NUM", 4, "truncated");
  EXPECT_ERR((const unsigned char *)"\x93NUMPY\x01", 7, "truncated");
  EXPECT_ERR((const unsigned char *)"\x93NUMPY\x02\x00\x05\x00\x00", 11, "truncated");

  static const char h[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n";
  b = mk(4, 0, h, strlen(h), 12, &len);
  EXPECT_ERR(b, len, "unsupported .npy format version 4.0");
  free(b);
  b = mk(1, 1, h, strlen(h), 12, &len);
  EXPECT_ERR(b, len, "version 1.1");
  free(b);
  b = mk(0, 0, h, strlen(h), 12, &len);
  EXPECT_ERR(b, len, "version 0.0");
  free(b);

  /* header length past the end of the file, in 1.0 and 2.0 */
  b = mk1(h, 0, &len);
  b[8] = 200;
  EXPECT_ERR(b, len, "header length 200 runs past the end");
  free(b);
  b = mk(2, 0, h, strlen(h), 0, &len);
  b[11] = 0x80;
  EXPECT_ERR(b, len, "runs past the end");
  free(b);
  /* an absurd header length, though the file really is that long */
  size_t big = (16u << 20) + 1;
  char *hb = malloc(big);
  memset(hb, ' ', big);
  memcpy(hb, h, strlen(h) - 1);
  hb[big - 1] = '\n';
  b = mk(2, 0, hb, big, 12, &len);
  EXPECT_ERR(b, len, "absurd");
  free(b);
  free(hb);
}

static void test_bad_header(void) {
  size_t len;
  unsigned char *b;
  /* framing */
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }   ", 12,
                 "not terminated by a newline");
  EXPECT_HDR_ERR("", 0, "not terminated by a newline");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } \xc3\xa9\n", 12,
                 "non-ASCII");
  static const char hz[] = "{'descr': '<f4', 'fortran_order': False,\0'shape': (3,), }\n";
  b = mk(1, 0, hz, sizeof hz - 1, 12, &len);
  EXPECT_ERR(b, len, "NUL byte at byte 50");
  free(b);

  /* syntax */
  EXPECT_HDR_ERR("\n", 0, "expected '{'");
  EXPECT_HDR_ERR("   \n", 0, "syntax error");
  EXPECT_HDR_ERR("'descr': '<f4'\n", 0, "expected '{' to open the header dict, found '''");
  EXPECT_HDR_ERR("{'descr' '<f4', 'fortran_order': False, 'shape': (3,), }\n", 12,
                 "expected ':' after a key");
  EXPECT_HDR_ERR("{'descr': '<f4' 'fortran_order': False, 'shape': (3,), }\n", 12,
                 "expected ',' or '}' after a value, found '''");
  EXPECT_HDR_ERR("{'descr': '<f4}\n", 0, "unterminated string");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,, }\n", 12,
                 "expected a value, found ','");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3 4), }\n", 12,
                 "expected ',' or ')' in a tuple");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': false, 'shape': (3,), }\n", 12,
                 "unexpected name 'false'");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3x,), }\n", 12,
                 "syntax error at byte 62");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (0x3,), }\n", 12,
                 "syntax error");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,)\n", 12,
                 "found the end of the header");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }}\n", 12,
                 "only padding after the closing '}'");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), } x\n", 12,
                 "after the closing");
  EXPECT_HDR_ERR("{,}\n", 0, "expected a quoted key or '}', found ','");
  EXPECT_HDR_ERR("{3: 4}\n", 0, "expected a quoted key");
  EXPECT_HDR_ERR("{'descr': [('x', '<f4'),, ], 'fortran_order': False, 'shape': (3,), }\n", 12,
                 "syntax error");
  EXPECT_HDR_ERR("{'descr': [('x', '<f4'), ('y' '<f4')], 'fortran_order': False, "
                 "'shape': (3,), }\n", 12, "expected ',' or ')' in a tuple");
  EXPECT_HDR_ERR("{'descr': [('x', '<f4')) , 'fortran_order': False, 'shape': (3,), }\n", 12,
                 "expected ',' or ']' in a list, found ')'");
  EXPECT_HDR_ERR("{'descr': {'x': 1 2}, 'fortran_order': False, 'shape': (3,), }\n", 12,
                 "expected ',' or '}' in a dict");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n\x01", 12,
                 "not terminated");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': @, }\n", 12,
                 "expected a value, found '@'");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), \x01}\n", 12,
                 "found byte 0x01");
  char deep[256] = "{'descr': ";
  for (int k = 0; k < 40; k++) strcat(deep, "[");
  for (int k = 0; k < 40; k++) strcat(deep, "]");
  strcat(deep, ", 'fortran_order': False, 'shape': (3,), }\n");
  EXPECT_HDR_ERR(deep, 12, "nested too deeply");

  /* keys */
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, }\n", 12, "no 'shape' key");
  EXPECT_HDR_ERR("{'fortran_order': False, 'shape': (3,), }\n", 12, "no 'descr' key");
  EXPECT_HDR_ERR("{'descr': '<f4', 'shape': (3,), }\n", 12, "no 'fortran_order' key");
  EXPECT_HDR_ERR("{}\n", 0, "no 'descr' key");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'descr': '<f4'}\n",
                 12, "duplicate key 'descr'");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), 'foo': 1}\n", 12,
                 "unknown key 'foo'");
  EXPECT_HDR_ERR("{'Descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", 12,
                 "unknown key 'Descr'");

  /* value types */
  EXPECT_HDR_ERR("{'descr': 3, 'fortran_order': False, 'shape': (3,), }\n", 12,
                 "'descr' must be a string such as '<f4', found an integer");
  EXPECT_HDR_ERR("{'descr': ('<f4',), 'fortran_order': False, 'shape': (3,), }\n", 12,
                 "'descr' must be a string");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': 0, 'shape': (3,), }\n", 12,
                 "'fortran_order' must be True or False, found an integer");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': 'False', 'shape': (3,), }\n", 12,
                 "'fortran_order' must be True or False, found a string");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': None, 'shape': (3,), }\n", 12,
                 "found None");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': [3], }\n", 12,
                 "'shape' must be a tuple of integers such as (2, 3), found a list");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3), }\n", 12,
                 "'shape' must be a tuple of integers such as (2, 3), found an integer");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': {}, }\n", 12,
                 "found a dict");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (3, 'a'), }\n", 12,
                 "found a string at shape[1]");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (2.5,), }\n", 12,
                 "found a float at shape[0]");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': ((3,),), }\n", 12,
                 "found a tuple at shape[0]");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (True,), }\n", 12,
                 "found True/False at shape[0]");
}

static void test_bad_descr(void) {
  static const char *const bad[] = {"<f3",  "<i3",   "<x4",  "<M8[",   "<M8[]", "<M8[ns", "<S",
                                    "",     "<f4 ",  "<<f4", "<b2",    "<c4",   "<m4[s]", "f",
                                    "<U",   "float32", "<f4\\x00", "<S99999999999999999999",
                                    "<O2"};
  for (size_t k = 0; k < sizeof bad / sizeof bad[0]; k++) {
    char h[256];
    snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': (3,), }\n", bad[k]);
    EXPECT_HDR_ERR(h, 12, "unsupported dtype descr");
  }
  /* a descr too long for hk_npy_t.descr, quoted cut short in the message */
  char h[512];
  snprintf(h, sizeof h, "{'descr': '<U%070d', 'fortran_order': False, 'shape': (3,), }\n", 1);
  EXPECT_HDR_ERR(h, 12, "...'");

  EXPECT_HDR_ERR("{'descr': '|O', 'fortran_order': False, 'shape': (3,), }\n", 24, "pickled");
  EXPECT_HDR_ERR("{'descr': '|O8', 'fortran_order': False, 'shape': (), }\n", 8,
                 "object arrays (descr '|O8') are not supported");
  EXPECT_HDR_ERR("{'descr': [('x', '<f4'), ('y', '<i4', (2,))], 'fortran_order': False, "
                 "'shape': (3,), }\n", 36, "structured dtypes are not supported");
  EXPECT_HDR_ERR("{'descr': [], 'fortran_order': False, 'shape': (3,), }\n", 0, "structured");
}

static void test_bad_shape(void) {
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }\n", 0,
                 "shape[0] is negative (-1;");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (2, -3), }\n", 0,
                 "shape[1] is negative");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, "
                 "'shape': (-99999999999999999999999,), }\n", 0, "negative");
  char h[512] = "{'descr': '<f4', 'fortran_order': False, 'shape': (";
  for (int k = 0; k <= HK_NPY_MAXDIM; k++) strcat(h, "1,");
  strcat(h, "), }\n");
  EXPECT_HDR_ERR(h, 4, "shape has 65 dimensions (at most 64");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296), }\n",
                 0, "shape (4294967296, 4294967296) is too large");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, "
                 "'shape': (0, 4294967296, 4294967296), }\n", 0, "too large");
  EXPECT_HDR_ERR("{'descr': '<f8', 'fortran_order': False, 'shape': (2305843009213693952,), }\n",
                 0, "too large for 8-byte items");
  EXPECT_HDR_ERR("{'descr': '|S1000000000000', 'fortran_order': False, 'shape': (100000000,), }\n",
                 0, "too large for 1000000000000-byte items");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, "
                 "'shape': (99999999999999999999999,), }\n", 0, "shape[0] is too large");
  /* a lying shape: nothing is allocated (ASan would abort on 8 TB) */
  EXPECT_HDR_ERR("{'descr': '<f8', 'fortran_order': False, 'shape': (1000000000000,), }\n", 16,
                 "truncated: expected 8000000000000 bytes of data, found 16");
}

static void test_bad_data(void) {
  static const char h[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n";
  EXPECT_HDR_ERR(h, 8, "truncated: expected 12 bytes of data, found 8");
  EXPECT_HDR_ERR(h, 0, "truncated: expected 12 bytes of data, found 0");
  EXPECT_HDR_ERR(h, 16, "4 unexpected bytes after the data");
  EXPECT_HDR_ERR(h, 13, "1 unexpected byte after the data");
  EXPECT_HDR_ERR("{'descr': '<f4', 'fortran_order': False, 'shape': (0,), }\n", 1,
                 "1 unexpected byte");
  EXPECT_HDR_ERR("{'descr': '<i2', 'fortran_order': False, 'shape': (), }\n", 1,
                 "truncated: expected 2 bytes of data, found 1");
}

/* Every truncation of a good file fails cleanly (ASan checks the reads). */
static void test_every_truncation(void) {
  static const size_t shape[2] = {2, 3};
  int32_t v[6] = {1, 2, 3, 4, 5, 6};
  void *bytes;
  size_t len;
  char err[1024];
  CHECK_INT_EQ(t_encode(HK_I32, 2, shape, v, &bytes, &len, err, sizeof err), 0);
  int failed = 0;
  for (size_t cut = 0; cut < len; cut++) {
    unsigned char *b = malloc(cut ? cut : 1); /* exactly cut bytes, so ASan sees overreads */
    memcpy(b, bytes, cut);
    hk_npy_t a;
    if (t_parse(b, cut, "cut.npy", &a, err, sizeof err) != HK_EINVAL || !is_zeroed(&a) ||
        strncmp(err, "cut.npy: ", 9) != 0)
      failed++;
    free(b);
  }
  CHECK_INT_EQ(failed, 0);
  free(bytes);
}

/* ---- Files -------------------------------------------------------------- */

static void test_read_files(void) {
  char path[128], err[1024];
  hk_npy_t a;
  snprintf(path, sizeof path, "%s/missing.npy", tmpdir);
  CHECK_INT_EQ(t_read(path, &a, err, sizeof err), HK_EIO);
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, "cannot open: No such file or directory");
  CHECK(is_zeroed(&a));
  CHECK_INT_EQ(t_read(tmpdir, &a, err, sizeof err), HK_EINVAL);
  CHECK_CONTAINS(err, tmpdir);
  CHECK_CONTAINS(err, "is a directory");
  /* a tiny err buffer is cut, never overrun; NULL is fine */
  CHECK_INT_EQ(t_read(path, &a, err, 5), HK_EIO);
  CHECK_INT_EQ(strlen(err), 4);
  CHECK_INT_EQ(t_read(path, &a, NULL, 0), HK_EIO);

  /* a pipe, through /dev/fd: read whole, then parsed */
  int fds[2];
  if (pipe(fds) == 0) {
    size_t shape[1] = {4};
    uint16_t v[4] = {1, 2, 65535, 7};
    void *bytes;
    size_t len;
    CHECK_INT_EQ(t_encode(HK_U16, 1, shape, v, &bytes, &len, err, sizeof err), 0);
    CHECK_INT_EQ(write(fds[1], bytes, len), (long long)len);
    close(fds[1]);
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    CHECK_MSG(t_read(path, &a, err, sizeof err) == 0, "%s", err);
    CHECK(a.dtype == HK_U16 && a.count == 4 && a.data && memcmp(a.data, v, 8) == 0);
    hk_npy_free(&a);
    close(fds[0]);
    free(bytes);
  }
  if (pipe(fds) == 0) {
    CHECK_INT_EQ(write(fds[1], "not numpy at all\n", 17), 17);
    close(fds[1]);
    snprintf(path, sizeof path, "/dev/fd/%d", fds[0]);
    CHECK_INT_EQ(t_read(path, &a, err, sizeof err), HK_EINVAL);
    CHECK_CONTAINS(err, path);
    CHECK_CONTAINS(err, "bad magic string");
    close(fds[0]);
  }
}

static int path_is_dir(const char *p) {
  struct stat st;
  return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static void test_write_files(void) {
  char path[128], err[1024];
  hk_npy_t a;
  int32_t v3[3] = {1, 2, 3}, v1[1] = {9};
  size_t s3[1] = {3}, s1[1] = {1};

  /* a directory that does not exist: an error, and nothing created */
  snprintf(path, sizeof path, "%s/nope/x.npy", tmpdir);
  CHECK_INT_EQ(t_write(path, HK_I32, 1, s3, v3, err, sizeof err), HK_EIO);
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, "No such file or directory");
  CHECK_INT_EQ(count_entries(tmpdir), 0);

  /* writing over an existing file replaces it, and keeps its permissions */
  snprintf(path, sizeof path, "%s/over.npy", tmpdir);
  CHECK_INT_EQ(t_write(path, HK_I32, 1, s3, v3, err, sizeof err), 0);
  CHECK_INT_EQ(chmod(path, 0640), 0);
  CHECK_INT_EQ(t_write(path, HK_I32, 1, s1, v1, err, sizeof err), 0);
  CHECK_MSG(t_read(path, &a, err, sizeof err) == 0, "%s", err);
  CHECK(a.ndim == 1 && a.shape[0] == 1 && a.data && *(int32_t *)a.data == 9);
  hk_npy_free(&a);
  struct stat st;
  CHECK(stat(path, &st) == 0 && (st.st_mode & 0777) == 0640);
  CHECK_INT_EQ(count_entries(tmpdir), 1);

  /* the target is a directory: refused, the directory intact, nothing left over */
  snprintf(path, sizeof path, "%s/dir.npy", tmpdir);
  CHECK_INT_EQ(mkdir(path, 0755), 0);
  CHECK_INT_EQ(t_write(path, HK_I32, 1, s3, v3, err, sizeof err), HK_EIO);
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, "it is a folder");
  CHECK(path_is_dir(path));
  CHECK_INT_EQ(count_entries(tmpdir), 2);
  rmdir(path);

  /* a write that fails half-way (the file size limit is hit) leaves the
   * existing file as it was and no temporary file behind */
  snprintf(path, sizeof path, "%s/keep.npy", tmpdir);
  CHECK_INT_EQ(t_write(path, HK_I32, 1, s3, v3, err, sizeof err), 0);
  struct rlimit old, lim;
  CHECK_INT_EQ(getrlimit(RLIMIT_FSIZE, &old), 0);
  lim = old;
  lim.rlim_cur = 65536;
  void (*oldsig)(int) = signal(SIGXFSZ, SIG_IGN);
  size_t sbig[1] = {1u << 20};
  float *big = calloc(sbig[0], sizeof *big);
  CHECK_INT_EQ(setrlimit(RLIMIT_FSIZE, &lim), 0);
  int rc = t_write(path, HK_F32, 1, sbig, big, err, sizeof err);
  CHECK_INT_EQ(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, oldsig);
  free(big);
  CHECK_INT_EQ(rc, HK_EIO);
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, "cannot write: File too large");
  CHECK_MSG(t_read(path, &a, err, sizeof err) == 0, "%s", err);
  CHECK(a.dtype == HK_I32 && a.count == 3 && a.data && memcmp(a.data, v3, 12) == 0);
  hk_npy_free(&a);
  CHECK_INT_EQ(count_entries(tmpdir), 2);

  /* bad arguments: refused before anything is created */
  snprintf(path, sizeof path, "%s/args.npy", tmpdir);
  size_t huge[2] = {SIZE_MAX / 2, 3};
  CHECK_INT_EQ(t_write(path, HK_DTYPE_INVALID, 1, s3, v3, err, sizeof err), HK_EINVAL);
  CHECK_CONTAINS(err, path);
  CHECK_CONTAINS(err, "dtype");
  CHECK_INT_EQ(t_write(path, HK_I32, HK_NPY_MAXDIM + 1, s3, v3, err, sizeof err), HK_EINVAL);
  CHECK_CONTAINS(err, "ndim 65 is out of range");
  CHECK_INT_EQ(t_write(path, HK_I32, -1, s3, v3, err, sizeof err), HK_EINVAL);
  CHECK_CONTAINS(err, "ndim -1");
  CHECK_INT_EQ(t_write(path, HK_I32, 1, s3, NULL, err, sizeof err), HK_EINVAL);
  CHECK_CONTAINS(err, "data is NULL");
  CHECK_INT_EQ(t_write(path, HK_I32, 1, NULL, v3, err, sizeof err), HK_EINVAL);
  CHECK_CONTAINS(err, "shape is NULL");
  CHECK_INT_EQ(t_write(path, HK_I32, 2, huge, v3, err, sizeof err), HK_EINVAL);
  CHECK_CONTAINS(err, "too large");
  snprintf(path, sizeof path, "%s/", tmpdir);
  CHECK_INT_EQ(t_write(path, HK_I32, 1, s3, v3, err, sizeof err), HK_EIO);
  CHECK_CONTAINS(err, "it is a folder"); /* the folder itself */
  snprintf(path, sizeof path, "%s/none/", tmpdir);
  CHECK_INT_EQ(t_write(path, HK_I32, 1, s3, v3, err, sizeof err), HK_EIO);
  CHECK_CONTAINS(err, "not a file name");
  CHECK_INT_EQ(t_write("", HK_I32, 1, s3, v3, err, sizeof err), HK_EINVAL);
  CHECK_INT_EQ(count_entries(tmpdir), 2);
  /* no data is needed for an empty array */
  size_t s0[1] = {0};
  snprintf(path, sizeof path, "%s/empty.npy", tmpdir);
  CHECK_INT_EQ(t_write(path, HK_U8, 1, s0, NULL, err, sizeof err), 0);

  void *bytes = (void *)1;
  size_t len = 1;
  CHECK_INT_EQ(t_encode(HK_I32, 2, huge, v3, &bytes, &len, err, sizeof err), HK_EINVAL);
  CHECK(bytes == NULL && len == 0);
  CHECK_CONTAINS(err, "hk_npy_encode: shape is too large");
}

/* ---- Samples for npy_numpy_check.sh ------------------------------------- */

static int write_samples(const char *dir) {
  char path[512], err[1024];
  for (size_t ti = 0; ti < NTYPES; ti++) {
    for (size_t si = 0; si < NSHAPES; si++) {
      size_t count = prod(shapes[si].ndim, shapes[si].dims);
      void *d = sample_data(ti, count);
      snprintf(path, sizeof path, "%s/%s_%s.npy", dir, types[ti].tag, shapes[si].code);
      if (t_write(path, types[ti].t, shapes[si].ndim, shapes[si].dims, d, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        free(d);
        return 1;
      }
      free(d);
    }
  }
  return 0;
}

/* Reads DIR/NAME into *a and checks its dtype, shape, order and version;
 * returns 0, or -1 (after a failed check) when it cannot be read. */
static int read_sample(const char *dir, const char *name, hk_npy_t *a, size_t ti, int ndim,
                       const size_t *dims, int fortran, int major) {
  char path[512], err[1024];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  int rc = t_read(path, a, err, sizeof err);
  CHECK_MSG(rc == 0, "%s", err);
  if (rc) return -1;
  int before = check_failures;
  CHECK_INT_EQ(a->dtype, types[ti].t);
  CHECK_INT_EQ(a->ndim, ndim);
  for (int k = 0; k < ndim; k++) CHECK_INT_EQ(a->shape[k], dims[k]);
  CHECK_INT_EQ(a->fortran_order, fortran);
  CHECK_INT_EQ(a->version_major, major);
  if (check_failures != before) fprintf(stderr, "  (in %s)\n", path);
  return 0;
}

static int read_samples(const char *dir) {
  char name[128];
  hk_npy_t a;
  for (size_t ti = 0; ti < NTYPES; ti++) {
    for (size_t si = 0; si < NSHAPES; si++) {
      snprintf(name, sizeof name, "%s_%s.npy", types[ti].tag, shapes[si].code);
      if (read_sample(dir, name, &a, ti, shapes[si].ndim, shapes[si].dims, 0, 1)) continue;
      size_t count = prod(shapes[si].ndim, shapes[si].dims);
      void *d = sample_data(ti, count);
      CHECK_MSG(count == 0 || (a.data && memcmp(a.data, d, count * types[ti].size) == 0),
                "%s: values differ", name);
      free(d);
      hk_npy_free(&a);
    }
  }
  /* a 1-D array marked fortran_order (its bytes are the same as in C order) */
  size_t s5[1] = {5}, s4[1] = {4}, s22[2] = {2, 2}, s23[2] = {2, 3};
  if (read_sample(dir, "fortran_f32_5.npy", &a, 0, 1, s5, 1, 1) == 0) {
    void *d = sample_data(0, 5);
    CHECK(a.data && memcmp(a.data, d, 20) == 0);
    free(d);
    hk_npy_free(&a);
  }
  /* a 2-D Fortran-order array: element (i, j) is at j*2 + i */
  if (read_sample(dir, "fortran_i32_2x3.npy", &a, 4, 2, s23, 1, 1) == 0) {
    int32_t *d = sample_data(4, 6);
    for (int i = 0; i < 2; i++)
      for (int j = 0; j < 3; j++) CHECK(a.data && ((int32_t *)a.data)[j * 2 + i] == d[i * 3 + j]);
    free(d);
    hk_npy_free(&a);
  }
  if (read_sample(dir, "v2_f64_4.npy", &a, 1, 1, s4, 0, 2) == 0) {
    void *d = sample_data(1, 4);
    CHECK(a.data && memcmp(a.data, d, 32) == 0);
    free(d);
    hk_npy_free(&a);
  }
  if (read_sample(dir, "v3_u16_2x2.npy", &a, 7, 2, s22, 0, 3) == 0) {
    void *d = sample_data(7, 4);
    CHECK(a.data && memcmp(a.data, d, 8) == 0);
    free(d);
    hk_npy_free(&a);
  }
  /* types hk does not compute with are read, and named */
  char path[512], err[1024], desc[64];
  snprintf(path, sizeof path, "%s/be_f32_3.npy", dir);
  CHECK_MSG(t_read(path, &a, err, sizeof err) == 0, "%s", err);
  CHECK(a.dtype == HK_DTYPE_INVALID && a.byteorder == '>' && a.count == 3);
  CHECK_STR_EQ(hk_npy_describe(&a, desc, sizeof desc), "big-endian float32");
  hk_npy_free(&a);
  snprintf(path, sizeof path, "%s/bool_3.npy", dir);
  CHECK_MSG(t_read(path, &a, err, sizeof err) == 0, "%s", err);
  CHECK(a.dtype == HK_BOOL && a.kind == 'b' && a.count == 3);
  CHECK(a.data && memcmp(a.data, "\1\0\1", 3) == 0);
  CHECK_STR_EQ(hk_npy_describe(&a, desc, sizeof desc), "bool");
  hk_npy_free(&a);
  snprintf(path, sizeof path, "%s/object_2.npy", dir);
  CHECK_INT_EQ(t_read(path, &a, err, sizeof err), HK_EINVAL);
  CHECK_CONTAINS(err, "pickled");
  CHECK_DONE();
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "--write-samples") == 0) return write_samples(argv[2]);
  if (argc == 3 && strcmp(argv[1], "--read-samples") == 0) return read_samples(argv[2]);
  if (argc != 1) {
    fprintf(stderr, "usage: test_npy [--write-samples DIR | --read-samples DIR]\n");
    return 2;
  }
  snprintf(tmpdir, sizeof tmpdir, "/tmp/hk_test_npy.XXXXXX");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_round_trips();
  test_large();
  test_numpy_bytes();
  test_versions();
  test_header_styles();
  test_other_dtypes();
  test_bad_preamble();
  test_bad_header();
  test_bad_descr();
  test_bad_shape();
  test_bad_data();
  test_every_truncation();
  test_read_files();
  test_write_files();
  remove_tree(tmpdir);
  CHECK_DONE();
}
