/* test_elfcheck.c — hk__elf_check_imports on shared objects built here with
 * cc (allowed imports, refused ones, weak ones, load-time code, extra
 * libraries, crt objects) and on damaged ones (truncated at every 64 bytes,
 * headers pointing outside, random and mutated bytes), which must give
 * HK_EREFUSED (-1 in the results below) or
 * a consistent answer and never an out-of-bounds read (run under ASan).
 * Also hk's own rule (symbols.c, build.c's hk__check_object): every name it
 * allows exists in libm or libc, and what gcc and clang synthesise from
 * kernel code at tier opt's flags (sincos, sincosf, memset, memmove) is
 * allowed. */
#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build.h"
#include "check.h"
#include "compiler_cc.h"
#include "elfcheck.h"
#include "symbols.h"

static char g_dir[] = "/tmp/hk_elfcheck_XXXXXX";

/* What the allow callbacks saw: every name asked about, space-separated. */
typedef struct seen {
  char names[8192];
  int calls;
} seen_t;

static void note(seen_t *s, const char *sym) {
  size_t used = strlen(s->names);
  snprintf(s->names + used, sizeof s->names - used, " %s ", sym);
  s->calls++;
}

static int saw(const seen_t *s, const char *sym) {
  char pat[256];
  snprintf(pat, sizeof pat, " %s ", sym);
  return strstr(s->names, pat) != NULL;
}

/* The opt tier's rule: math functions and the memcpy family. */
static int allow_math(const char *sym, void *ctx) {
  static const char *const ok[] = {
      "expf",  "exp",   "logf", "log",  "sqrtf", "sqrt",   "tanhf",  "tanh",
      "fmaxf", "fminf", "powf", "sinf", "cosf",  "memcpy", "memset", "memmove"};
  if (ctx) note(ctx, sym);
  for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
    if (strcmp(sym, ok[i]) == 0) return 1;
  return 0;
}

static int allow_all(const char *sym, void *ctx) {
  if (ctx) note(ctx, sym);
  return 1;
}

/* Compiles src into <dir>/<name>.so with cc and flags (then libs); returns
 * the path in out, or 0 when cc failed. */
static int build(const char *name, const char *src, const char *flags,
                 const char *libs, char *out, size_t outlen) {
  char c[512], cmd[2048];
  snprintf(c, sizeof c, "%s/%s.c", g_dir, name);
  snprintf(out, outlen, "%s/%s.so", g_dir, name);
  FILE *f = fopen(c, "w");
  if (!f) return 0;
  fputs(src, f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "cc %s -o %s %s %s 2>%s/%s.log", flags, out, c,
           libs, g_dir, name);
  int rc = system(cmd);
  if (rc != 0) printf("note: could not build %s: %s\n", name, cmd);
  return rc == 0;
}

typedef struct result {
  int r, runs;
  char bad[128], needed[256], err[256];
  seen_t seen;
} result_t;

/* Runs the check on fd with size bytes. */
static void check_fd(int fd, size_t size, hk_elf_allow_fn allow,
                     result_t *res) {
  memset(res, 0, sizeof *res);
  res->runs = -7;
  hku_diags d = HKU_DIAGS_INIT;
  res->r = hk__elf_check_imports(fd, size, allow, &res->seen, res->bad,
                                 sizeof res->bad, &res->runs, res->needed,
                                 sizeof res->needed, "t.so", &d);
  CHECK(res->r != HK_EREFUSED || d.n == 1);
  if (res->r == HK_EREFUSED) res->r = -1; /* the cases below say -1 */
  snprintf(res->err, sizeof res->err, "%s", d.n ? d.v[0].msg : "");
  hku_diags_free(&d);
  /* Whatever the input, the outputs are consistent with the result. */
  CHECK(res->r >= -1 && res->r <= 1);
  CHECK(res->runs >= 0 && res->runs <= 3);
  if (res->r == -1) {
    CHECK(res->err[0] != '\0');
    CHECK(res->bad[0] == '\0' && res->needed[0] == '\0' && res->runs == 0);
  }
  if (res->r == 1) CHECK(res->bad[0] != '\0');
  if (res->r == 0) CHECK(res->bad[0] == '\0');
}

static size_t file_size(int fd) {
  struct stat st;
  return fstat(fd, &st) == 0 ? (size_t)st.st_size : 0;
}

static void check_path(const char *path, hk_elf_allow_fn allow, result_t *res) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  CHECK_MSG(fd >= 0, "open %s", path);
  if (fd < 0) {
    memset(res, 0, sizeof *res);
    res->r = -2;
    return;
  }
  check_fd(fd, file_size(fd), allow, res);
  close(fd);
}

/* A file holding n bytes of p, open for reading and writing. */
static int file_of(const uint8_t *p, size_t n) {
  char path[512];
  snprintf(path, sizeof path, "%s/scratchXXXXXX", g_dir);
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  unlink(path);
  if (n && pwrite(fd, p, n, 0) != (ssize_t)n) {
    close(fd);
    return -1;
  }
  return fd;
}

/* The loader never reads section headers: with them wiped out (as sstrip
 * does) the answer must not change, so the symbol count really comes from
 * the dynamic section's hash tables and relocations. */
static void check_without_shdrs(const char *path, hk_elf_allow_fn allow,
                                const result_t *want) {
  size_t n = 0;
  uint8_t *p = (uint8_t *)check_read_file(path, &n);
  CHECK(p != NULL && n >= sizeof(Elf64_Ehdr));
  if (!p || n < sizeof(Elf64_Ehdr)) {
    free(p);
    return;
  }
  Elf64_Ehdr eh;
  memcpy(&eh, p, sizeof eh);
  eh.e_shoff = 0;
  eh.e_shnum = 0;
  eh.e_shstrndx = 0;
  memcpy(p, &eh, sizeof eh);
  int fd = file_of(p, n);
  result_t res;
  check_fd(fd, n, allow, &res);
  CHECK_MSG(res.r == want->r && strcmp(res.bad, want->bad) == 0 &&
                res.runs == want->runs &&
                strcmp(res.needed, want->needed) == 0 &&
                strcmp(res.seen.names, want->seen.names) == 0,
            "%s without section headers: r %d bad %s seen%s", path, res.r,
            res.bad, res.seen.names);
  close(fd);
  free(p);
}

static const char *const kernel_src =
    "#include <math.h>\n#include <string.h>\n"
    "float k_exp(float x) { return expf(x); }\n"
    "void k_copy(void *d, const void *s, unsigned long n) { memcpy(d, s, n); "
    "}\n"
    "void k_tanh(float *y, const float *x, unsigned long n) {\n"
    "  for (unsigned long i = 0; i < n; i++) y[i] = tanhf(x[i]) + "
    "sqrtf(x[i]);\n}\n";

#define OPT_FLAGS                                                        \
  "-O3 -march=native -fPIC -shared -nostdlib -fwrapv -ffp-contract=off " \
  "-fno-math-errno"
#define PLAIN_FLAGS "-O2 -fPIC -shared -nostdlib"

static char g_ok[512]; /* the allowed object, reused by the damage tests */

static void test_allowed(void) {
  result_t res;
  CHECK(build("ok", kernel_src, OPT_FLAGS, "-lm", g_ok, sizeof g_ok));
  check_path(g_ok, allow_math, &res);
  CHECK_MSG(res.r == 0, "r %d bad %s err %s", res.r, res.bad, res.err);
  CHECK_MSG(saw(&res.seen, "expf") && saw(&res.seen, "memcpy") &&
                saw(&res.seen, "tanhf"),
            "seen:%s", res.seen.names);
  CHECK_INT_EQ(res.runs, 0);
  CHECK_STR_EQ(res.needed, ""); /* libm.so.6 is not reported */
  CHECK_STR_EQ(res.err, "");
  check_without_shdrs(g_ok, allow_math, &res);

  /* The file position is neither used nor moved. */
  int fd = open(g_ok, O_RDONLY | O_CLOEXEC);
  CHECK(fd >= 0);
  if (fd >= 0) {
    CHECK(lseek(fd, 123, SEEK_SET) == 123);
    check_fd(fd, file_size(fd), allow_math, &res);
    CHECK_INT_EQ(res.r, 0);
    CHECK_INT_EQ(lseek(fd, 0, SEEK_CUR), 123);
    /* NULL outputs are allowed. */
    CHECK_INT_EQ(hk__elf_check_imports(fd, file_size(fd), allow_math, NULL,
                                       NULL, 0, NULL, NULL, 0, "t.so", NULL),
                 0);
    /* No allow callback: an error, not a crash. */
    CHECK_INT_EQ(hk__elf_check_imports(fd, file_size(fd), NULL, NULL, NULL, 0,
                                       NULL, NULL, 0, "t.so", NULL),
                 HK_EREFUSED);
    close(fd);
  }
}

static void test_refused(void) {
  char so[512];
  result_t res;
  if (build("sys",
            "#include <stdlib.h>\nint k(void) { return system(\"true\"); }\n",
            PLAIN_FLAGS, "", so, sizeof so)) {
    check_path(so, allow_math, &res);
    CHECK_INT_EQ(res.r, 1);
    CHECK_STR_EQ(res.bad, "system");
    check_without_shdrs(so, allow_math, &res);
    /* A short bad buffer gets a cut, terminated name. */
    int fd = open(so, O_RDONLY | O_CLOEXEC);
    char bad[4] = "xxx";
    CHECK_INT_EQ(
        hk__elf_check_imports(fd, file_size(fd), allow_math, NULL, bad,
                              sizeof bad, NULL, NULL, 0, "t.so", NULL),
        1);
    CHECK_STR_EQ(bad, "sys");
    close(fd);
  } else {
    CHECK(!"cc failed on system()");
  }

  if (build("pf",
            "#include <stdio.h>\n#include <math.h>\n"
            "float k(float x) { printf(\"%f\\n\", x); return expf(x); }\n",
            PLAIN_FLAGS, "-lm", so, sizeof so)) {
    check_path(so, allow_math, &res);
    CHECK_INT_EQ(res.r, 1);
    CHECK_STR_EQ(res.bad, "printf");
    CHECK(saw(&res.seen, "expf")); /* every import is still asked about */
  } else {
    CHECK(!"cc failed on printf()");
  }

  /* Weak imports bind when the symbol exists: they are imports too. */
  if (build("weak",
            "extern int system(const char *) __attribute__((weak));\n"
            "extern void hk_weak_probe(void) __attribute__((weak));\n"
            "int k(void) { if (hk_weak_probe) hk_weak_probe();\n"
            "  return system ? system(\"x\") : 0; }\n",
            PLAIN_FLAGS, "", so, sizeof so)) {
    check_path(so, allow_math, &res);
    CHECK_INT_EQ(res.r, 1);
    CHECK(strcmp(res.bad, "system") == 0 ||
          strcmp(res.bad, "hk_weak_probe") == 0);
    check_path(so, allow_all, &res);
    CHECK_INT_EQ(res.r, 0);
    CHECK_MSG(saw(&res.seen, "system") && saw(&res.seen, "hk_weak_probe"),
              "seen:%s", res.seen.names);
    check_without_shdrs(so, allow_all, &res);
  } else {
    CHECK(!"cc failed on weak symbols");
  }
}

static void test_load_code(void) {
  char so[512];
  result_t res;
  if (build("ctor",
            "static int v;\n__attribute__((constructor)) static void "
            "init(void) { v = 1; }\n"
            "int k(void) { return v; }\n",
            PLAIN_FLAGS, "", so, sizeof so)) {
    check_path(so, allow_math, &res);
    CHECK_INT_EQ(res.r, 0);
    CHECK(res.runs & HK_ELF_RUNS_AT_LOAD);
  } else {
    CHECK(!"cc failed on a constructor");
  }
  if (build("dtor",
            "static int v;\n__attribute__((destructor)) static void fini(void) "
            "{ v = 1; }\n"
            "int k(void) { return v; }\n",
            PLAIN_FLAGS, "", so, sizeof so)) {
    check_path(so, allow_math, &res);
    CHECK_INT_EQ(res.r, 0);
    CHECK_INT_EQ(res.runs, HK_ELF_RUNS_AT_UNLOAD);
  } else {
    CHECK(!"cc failed on a destructor");
  }
  /* An ifunc's resolver runs while the object is being relocated. */
  if (build("ifunc",
            "static int impl(void) { return 1; }\n"
            "static int (*resolve(void))(void) { return impl; }\n"
            "int k(void) __attribute__((ifunc(\"resolve\")));\n"
            "int call(void) { return k(); }\n",
            PLAIN_FLAGS, "", so, sizeof so)) {
    check_path(so, allow_math, &res);
    CHECK_INT_EQ(res.r, 0);
    CHECK_MSG(res.runs & HK_ELF_RUNS_AT_LOAD, "runs %d", res.runs);
  } else {
    printf("note: cc cannot build ifuncs here; that check is skipped\n");
  }

  /* Built the usual way, with the crt files: they import from libc and run
   * code at load (DT_INIT, frame_dummy in DT_INIT_ARRAY). */
  if (build("crt", "int k(int x) { return x + 1; }\n", "-O2 -fPIC -shared", "",
            so, sizeof so)) {
    check_path(so, allow_all, &res);
    CHECK_INT_EQ(res.r, 0);
    CHECK_MSG(saw(&res.seen, "__cxa_finalize"), "seen:%s", res.seen.names);
    CHECK(res.runs & HK_ELF_RUNS_AT_LOAD);
    CHECK_STR_EQ(res.needed, ""); /* only libc.so.6 */
    printf("note: a crt-built object imports:%s\n", res.seen.names);
    check_without_shdrs(so, allow_all, &res);
    check_path(so, allow_math, &res);
    CHECK_INT_EQ(res.r, 1);
    CHECK(res.bad[0] != '\0' && saw(&res.seen, res.bad));
  } else {
    CHECK(!"cc failed on a plain shared object");
  }
}

static void test_needed(void) {
  char dep[512], dep2[512], so[512], flags[1024], libs[2048];
  result_t res;
  if (!build("libdep", "int dep(int x) { return x * 2; }\n",
             PLAIN_FLAGS " -Wl,-soname,libhkdep.so", "", dep, sizeof dep) ||
      !build("libdep2", "int dep2(int x) { return x * 3; }\n",
             PLAIN_FLAGS " -Wl,-soname,libhkdep2.so", "", dep2, sizeof dep2)) {
    CHECK(!"cc failed on libdep");
    return;
  }
  snprintf(flags, sizeof flags, "%s -Wl,--no-as-needed", PLAIN_FLAGS);
  snprintf(libs, sizeof libs, "%s -lm %s", dep, dep2);
  if (!build("user",
             "#include <math.h>\nint dep(int);\nint dep2(int);\n"
             "float k(float x) { return expf(x) + (float)dep(1) + dep2(2); }\n",
             flags, libs, so, sizeof so)) {
    CHECK(!"cc failed on an object with DT_NEEDED");
    return;
  }
  check_path(so, allow_math, &res);
  CHECK_INT_EQ(res.r, 1); /* dep and dep2 are imports too */
  CHECK(strcmp(res.bad, "dep") == 0 || strcmp(res.bad, "dep2") == 0);
  CHECK_STR_EQ(res.needed, "libhkdep.so libhkdep2.so"); /* not libm.so.6 */
  check_without_shdrs(so, allow_math, &res);
  /* A needed buffer too small is cut with dots, never overrun, never left
   * empty (an empty list would read as "needs nothing"). */
  int fd = open(so, O_RDONLY | O_CLOEXEC);
  static const size_t lens[] = {2, 3, 4, 6, 12, 13, 14, 20, 24};
  for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++) {
    char needed[32];
    memset(needed, 'z', sizeof needed);
    hk__elf_check_imports(fd, file_size(fd), allow_math, NULL, NULL, 0, NULL,
                          needed, lens[i], "t.so", NULL);
    size_t len = strnlen(needed, lens[i]);
    CHECK_MSG(len < lens[i] && len > 0, "len %zu: \"%.*s\"", lens[i],
              (int)lens[i], needed);
    CHECK_MSG(needed[len - 1] == '.', "len %zu: \"%s\"", lens[i], needed);
    CHECK(needed[lens[i]] == 'z'); /* nothing written past the buffer */
  }
  char exact[25]; /* just fits */
  hk__elf_check_imports(fd, file_size(fd), allow_math, NULL, NULL, 0, NULL,
                        exact, sizeof exact, "t.so", NULL);
  CHECK_STR_EQ(exact, "libhkdep.so libhkdep2.so");
  close(fd);
}

/* Headers pointing outside the file, wrong classes and kinds. */
static void test_bad_headers(const uint8_t *img, size_t n) {
  result_t res;
  uint8_t *p = malloc(n);
  CHECK(p != NULL);
  if (!p) return;
  struct {
    const char *what, *msg;
    size_t off, len;
    uint64_t val;
  } cases[] = {
      {"e_shoff past end", "section header table past end of file",
       offsetof(Elf64_Ehdr, e_shoff), 8, (uint64_t)n + 100},
      {"e_shoff huge", "section header table past end of file",
       offsetof(Elf64_Ehdr, e_shoff), 8, UINT64_MAX - 10},
      {"e_phoff past end", "program header table past end of file",
       offsetof(Elf64_Ehdr, e_phoff), 8, (uint64_t)n - 8},
      {"e_phoff huge", "program header table past end of file",
       offsetof(Elf64_Ehdr, e_phoff), 8, UINT64_MAX - 3},
      {"e_phnum 0", "program header", offsetof(Elf64_Ehdr, e_phnum), 2, 0},
      {"32-bit", "64-bit", EI_CLASS, 1, ELFCLASS32},
      {"big-endian", "little-endian", EI_DATA, 1, ELFDATA2MSB},
      {"ET_EXEC", "not a shared object", offsetof(Elf64_Ehdr, e_type), 2,
       ET_EXEC},
      {"ET_REL", "not a shared object", offsetof(Elf64_Ehdr, e_type), 2,
       ET_REL},
      {"other machine", "machine", offsetof(Elf64_Ehdr, e_machine), 2, EM_S390},
      {"bad magic", "not an ELF file", 1, 1, 'X'},
      {"phentsize", "program header entry size",
       offsetof(Elf64_Ehdr, e_phentsize), 2, 32},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    memcpy(p, img, n);
    memcpy(p + cases[i].off, &cases[i].val,
           cases[i].len); /* little-endian host */
    int fd = file_of(p, n);
    CHECK(fd >= 0);
    if (fd < 0) break;
    check_fd(fd, n, allow_math, &res);
    CHECK_MSG(res.r == -1, "%s: r %d", cases[i].what, res.r);
    CHECK_MSG(strstr(res.err, cases[i].msg) != NULL, "%s: err \"%s\"",
              cases[i].what, res.err);
    close(fd);
  }
  free(p);

  /* Empty file; size 0; size larger than the file. */
  int fd = file_of(NULL, 0);
  CHECK(fd >= 0);
  check_fd(fd, 0, allow_math, &res);
  CHECK_INT_EQ(res.r, -1);
  CHECK_CONTAINS(res.err, "empty");
  check_fd(fd, 64, allow_math, &res);
  CHECK_INT_EQ(res.r, -1);
  close(fd);
  fd = file_of(img, n);
  check_fd(fd, n + 1, allow_math, &res);
  CHECK_INT_EQ(res.r, -1);
  close(fd);
  /* Not a regular file. */
  fd = open(g_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  check_fd(fd, 64, allow_math, &res);
  CHECK_INT_EQ(res.r, -1);
  close(fd);
}

/* Cut anywhere, the image gives -1 or the full answer; read with the full
 * file but a shorter size, nothing past size may count. */
static void test_truncated(const uint8_t *img, size_t n) {
  result_t full, res;
  int fd = file_of(img, n);
  CHECK(fd >= 0);
  if (fd < 0) return;
  check_fd(fd, n, allow_math, &full);
  CHECK_INT_EQ(full.r, 0);
  int minus = 0, tries = 0;
  for (size_t len = 0; len < n; len += (len < 512 || len > n - 512) ? 1 : 64) {
    check_fd(fd, len, allow_math, &res); /* the file is whole, size is not */
    CHECK_MSG(
        res.r == -1 || (res.r == full.r && strcmp(res.bad, full.bad) == 0),
        "size %zu: r %d", len, res.r);
    minus += res.r == -1;
    tries++;
  }
  CHECK_INT_EQ(minus, tries); /* the section headers sit at the end */
  close(fd);

  /* The file itself cut short, every 64 bytes (and every byte at the start). */
  fd = file_of(img, n);
  for (size_t len = n; len-- > 0;) {
    if (len > 256 && len % 64) continue;
    CHECK(ftruncate(fd, (off_t)len) == 0);
    check_fd(fd, len, allow_math, &res);
    CHECK_MSG(
        res.r == -1 || (res.r == full.r && strcmp(res.bad, full.bad) == 0),
        "file cut at %zu: r %d", len, res.r);
  }
  close(fd);
}

/* Trailing bytes after the image (a cache entry's trailer) are not read. */
static void test_trailing(const uint8_t *img, size_t n) {
  result_t res;
  size_t extra = 4096;
  uint8_t *p = malloc(n + extra);
  CHECK(p != NULL);
  if (!p) return;
  memcpy(p, img, n);
  for (size_t i = 0; i < extra; i++) p[n + i] = (uint8_t)(i * 131 + 7);
  int fd = file_of(p, n + extra);
  check_fd(fd, n, allow_math, &res);
  CHECK_INT_EQ(res.r, 0);
  CHECK_INT_EQ(res.runs, 0);
  close(fd);
  free(p);
}

static uint64_t rng(uint64_t *s) {
  *s ^= *s << 13;
  *s ^= *s >> 7;
  *s ^= *s << 17;
  return *s;
}

/* Random files, and the valid image with random damage aimed at the parts
 * the checker reads (headers, dynamic entries, symbols): no crash, and an
 * answer consistent with itself. */
static void test_fuzz(const uint8_t *img, size_t n) {
  result_t res;
  uint64_t s = 0x9e3779b97f4a7c15u;
  uint8_t *p = malloc(n > 8192 ? n : 8192);
  CHECK(p != NULL);
  if (!p) return;

  for (int it = 0; it < 300; it++) {
    size_t len = (size_t)(rng(&s) % 8192) + 1;
    for (size_t i = 0; i < len; i++) p[i] = (uint8_t)rng(&s);
    if (it % 2 && len >= 64) { /* a plausible header, random beyond it */
      Elf64_Ehdr eh;
      memcpy(&eh, img, sizeof eh);
      eh.e_phoff = rng(&s) % len;
      eh.e_phnum = (uint16_t)(rng(&s) % 16);
      memcpy(p, &eh, sizeof eh);
    }
    int fd = file_of(p, len);
    check_fd(fd, len, allow_math, &res);
    if (it % 2 == 0) CHECK_INT_EQ(res.r, -1);
    close(fd);
  }

  /* Where the dynamic array and the symbol table are, for aimed damage. */
  Elf64_Ehdr eh;
  memcpy(&eh, img, sizeof eh);
  uint64_t dynoff = 0, dynsz = 0, symoff = 0, symsz = 0;
  for (unsigned i = 0; i < eh.e_phnum; i++) {
    Elf64_Phdr ph;
    memcpy(&ph, img + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type == PT_DYNAMIC) dynoff = ph.p_offset, dynsz = ph.p_filesz;
  }
  for (unsigned i = 0; i < eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, img + eh.e_shoff + i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_DYNSYM) symoff = sh.sh_offset, symsz = sh.sh_size;
  }
  CHECK(dynsz >= 16 && symsz >= 24);
  if (dynsz < 16 || symsz < 24) {
    free(p);
    return;
  }

  int counts[3] = {0, 0, 0};
  int fd = file_of(img, n);
  for (int it = 0; it < 4000; it++) {
    memcpy(p, img, n);
    int k = 1 + (int)(rng(&s) % 4);
    for (int m = 0; m < k; m++) {
      uint64_t v = rng(&s), at;
      switch (rng(&s) % 6) {
        case 0: /* any byte */
          p[rng(&s) % n] = (uint8_t)v;
          break;
        case 1: /* a header or program header byte */
          p[rng(&s) % (eh.e_phoff + eh.e_phnum * sizeof(Elf64_Phdr))] =
              (uint8_t)v;
          break;
        case 2: /* a dynamic entry's value: random */
          at = dynoff + (rng(&s) % (dynsz / 16)) * 16 + 8;
          memcpy(p + at, &v, 8);
          break;
        case 3: { /* a dynamic entry's value: nudged a little */
          uint64_t d;
          at = dynoff + (rng(&s) % (dynsz / 16)) * 16 + 8;
          memcpy(&d, p + at, 8);
          d += (v % 4096) - 2048;
          memcpy(p + at, &d, 8);
          break;
        }
        case 4: /* a dynamic entry's tag */
          at = dynoff + (rng(&s) % (dynsz / 16)) * 16;
          v %= 40;
          memcpy(p + at, &v, 8);
          break;
        default: /* a symbol byte (name, shndx, info) */
          p[symoff + rng(&s) % symsz] = (uint8_t)v;
          break;
      }
    }
    CHECK(pwrite(fd, p, n, 0) == (ssize_t)n);
    check_fd(fd, n, allow_math, &res);
    counts[res.r + 1]++;
  }
  close(fd);
  printf("note: mutated objects: %d malformed, %d clean, %d refused\n",
         counts[0], counts[1], counts[2]);
  CHECK(counts[0] > 0 && counts[1] > 0); /* the damage reached both outcomes */
  free(p);
}

/* ---- hk's allow-list --------------------------------------------------------- */

/* What a kernel's generated C looks like to the compiler: the math
 * functions declared (as the prelude does), sin and cos of one argument
 * (merged into sincosf/sincos), and loops that become memset and memmove. */
static const char synth_src[] =
    "#include <stddef.h>\n"
    "float sinf(float); float cosf(float);\n"
    "double sin(double); double cos(double);\n"
    "void f32(const float *x, float *o, size_t n) {\n"
    "  for (size_t i = 0; i < n; i++) o[i] = sinf(x[i]) + cosf(x[i]); }\n"
    "void f64(const double *x, double *o, size_t n) {\n"
    "  for (size_t i = 0; i < n; i++) o[i] = sin(x[i]) * cos(x[i]); }\n"
    "void loops(float *o, size_t n) {\n"
    "  for (size_t i = 0; i < n; i++) o[i] = 0;\n"
    "  for (size_t i = 1; i < n; i++) o[i - 1] = o[i]; }\n";

static int allow_hk(const char *sym, void *ctx) {
  if (ctx) note(ctx, sym);
  return hk__symbol_allowed(sym);
}

static void test_allow_list(void) {
  /* every allowed name is a function of this system's libm or libc */
  void *libm = dlopen("libm.so.6", RTLD_NOW | RTLD_LOCAL);
  void *libc = dlopen("libc.so.6", RTLD_NOW | RTLD_LOCAL);
  CHECK(libm && libc);
  size_t count = 0;
  const char *name;
  for (size_t i = 0; (name = hk__allowed_import(i)); i++, count++) {
    CHECK_MSG(hk__symbol_allowed(name), "%s listed but not allowed", name);
    if (libm && libc)
      CHECK_MSG(dlsym(libm, name) || dlsym(libc, name),
                "%s is allowed but neither libm nor libc has it", name);
  }
  CHECK(count > 100);
  if (libm) dlclose(libm);
  if (libc) dlclose(libc);
  static const char *const yes[] = {"sin", "cosf", "sincos", "sincosf",
                                    "exp10", "exp10f", "memcpy", "memset",
                                    "memmove", "fma", "ldexp", "exp2f"};
  for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
    CHECK_MSG(hk__symbol_allowed(yes[i]), "%s is refused", yes[i]);
  /* not math, a tcc helper (tier jit only), or not reachable at hk's flags
   * (the __*_finite and libmvec names) */
  static const char *const no[] = {
      "",           "printf",       "system",        "dlopen",
      "sinl",       "frexp",        "__floatundisf", "__stack_chk_fail",
      "__exp_finite", "_ZGVdN4v_sin", "_ZGVbN4v_sinf", "__tls_get_addr",
      "sincosl",    "strlen",       "memcmp",        "sin@GLIBC_2.2.5"};
  for (size_t i = 0; i < sizeof no / sizeof *no; i++)
    CHECK_MSG(!hk__symbol_allowed(no[i]), "'%s' is allowed", no[i]);

  /* what gcc and clang make of kernel code at tier opt's flags passes
   * hk__check_object */
  static const char *const ccs[] = {"gcc", "clang"};
  char src[600];
  snprintf(src, sizeof src, "%s/synth.c", g_dir);
  FILE *f = fopen(src, "w");
  CHECK(f != NULL);
  if (!f) return;
  fputs(synth_src, f);
  fclose(f);
  for (size_t c = 0; c < sizeof ccs / sizeof *ccs; c++) {
    char probe[128], so[600], cmd[2400];
    snprintf(probe, sizeof probe, "%s --version >/dev/null 2>&1", ccs[c]);
    if (system(probe) != 0) {
      printf("SKIP: no '%s': its synthesised imports are not checked\n",
             ccs[c]);
      continue;
    }
    snprintf(so, sizeof so, "%s/synth_%s.so", g_dir, ccs[c]);
    snprintf(cmd, sizeof cmd, "%s %s -o %s %s -lm -lc -lgcc", ccs[c],
             hk__cc_flags(HK_FOR_OPT), so, src);
    CHECK_MSG(system(cmd) == 0, "%s failed", cmd);
    result_t res;
    check_path(so, allow_hk, &res);
    CHECK_MSG(res.r == 0, "%s: '%s' refused", ccs[c], res.bad);
    printf("note: %s synthesised the imports:%s\n", ccs[c], res.seen.names);
    if (!saw(&res.seen, "sincos") && !saw(&res.seen, "sincosf"))
      printf("note: %s merged no sin/cos pair into sincos here\n", ccs[c]);
    int fd = open(so, O_RDONLY | O_CLOEXEC);
    hku_diags d = HKU_DIAGS_INIT;
    CHECK_MSG(fd >= 0 && hk__check_object(fd, file_size(fd), so, &d) == HK_OK,
              "%s: %s", ccs[c], d.n ? d.v[0].msg : "cannot open");
    hku_diags_free(&d);
    if (fd >= 0) close(fd);
  }
}

static void cleanup(void) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf %s", g_dir);
  if (system(cmd) != 0) fprintf(stderr, "could not remove %s\n", g_dir);
}

int main(void) {
  if (system("cc --version >/dev/null 2>&1") != 0)
    CHECK_SKIP("no cc command: cannot build shared objects to check");
  if (!mkdtemp(g_dir)) CHECK_SKIP("mkdtemp failed");

  test_allowed();
  test_refused();
  test_load_code();
  test_needed();
  test_allow_list();
  size_t n = 0;
  uint8_t *img = g_ok[0] ? (uint8_t *)check_read_file(g_ok, &n) : NULL;
  CHECK(img != NULL && n > 0);
  if (img && n > 0) {
    test_bad_headers(img, n);
    test_truncated(img, n);
    test_trailing(img, n);
    test_fuzz(img, n);
  }
  free(img);
  cleanup();
  CHECK_DONE();
}
