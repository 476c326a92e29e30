/* build.c — the one build path: description -> unit -> compile -> check ->
 * cache key (build.h), and what `hk check` and `hk build` make with it. */
#include "build.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "abi.h"
#include "compiler_cc.h"
#include "elfcheck.h"
#include "fsutil.h"
#include "sha256.h"
#include "symbols.h"

/* ---- Entry points ---------------------------------------------------------- */

int hk__entry_prefixes(const hkc_instance *in,
                       const char *const **prefixes) {
  static const char *const all[] = {HK_ABI_RANGE, HK_ABI_LENS, HK_ABI_MERGE,
                                    HK_ABI_ROWRED, HK_ABI_COLRED,
                                    HK_ABI_COLPART};
  *prefixes = all;
  return hkc_instance_kind(in) == HK_KIND_REDUCTION ? 6 : 2;
}

/* ---- compiler.h's generic calls ------------------------------------------ */

int hk__compile(const hk_compiler_t *c, const hkc_unit *u,
                const hk_compile_opts_t *o, hk_object_t *out, hku_diags *d) {
  static const hk_compile_opts_t defaults;
  memset(out, 0, sizeof *out);
  out->by = c;
  int rc = c->compile(c, u, o ? o : &defaults, out, d);
  if (rc) hk__object_free(out);
  return rc;
}

void hk__object_free(hk_object_t *o) {
  if (o->by && o->by->release) o->by->release(o);
  o->code = NULL;
  o->image = NULL;
  o->size = 0;
}

void hk__object_release_image(hk_object_t *o) {
  free(o->image);
  o->image = NULL;
  o->size = 0;
}

/* ---- Units and compiles ---------------------------------------------------- */

int hk__build_unit(const hkc_file *f, hkc_lang lang, unsigned flags,
                   hkc_unit **out, hku_diags *d) {
  int rc = hkc_unit_emit(f, lang, flags, out);
  if (rc == HK_ENOMEM && d) d->oom = 1;
  return rc;
}

int hk__build_located(const hku_diags *d) {
  return d->n > 0 && d->v[0].line > 0;
}

int hk__build_compile(const hk_compiler_t *c, const hkc_unit *u,
                      const hk_compile_opts_t *o, const char *what,
                      hk_object_t *out, hku_diags *d) {
  hku_diags mine = HKU_DIAGS_INIT;
  int rc = hk__compile(c, u, o, out, &mine);
  if (rc == HK_ECOMPILE && what && mine.n && !hk__build_located(&mine)) {
    hku_diag_add(d, HKU_ERROR, mine.v[0].path, 0, 0, "%s%s", what,
                 mine.v[0].msg);
  } else if (d) {
    hku_diags_move(d, &mine);
  }
  if (mine.oom && d) d->oom = 1;
  hku_diags_free(&mine);
  return rc;
}

/* ---- Checking objects ---------------------------------------------------------- */

static int allow_import(const char *sym, void *ctx) {
  (void)ctx;
  return hk__symbol_allowed(sym);
}

int hk__check_object(int fd, size_t size, const char *path, hku_diags *d) {
  char bad[256] = "", needed[512] = "";
  int runs = 0;
  hku_diags why = HKU_DIAGS_INIT;
  int rc = hk__elf_check_imports(fd, size, allow_import, NULL, bad, sizeof bad,
                                 &runs, needed, sizeof needed, path, &why);
  if (rc < 0) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "refused: not a valid shared object: %s",
                 hku_diags_words(&why, "out of memory"));
    hku_diags_free(&why);
    return HK_EREFUSED;
  }
  if (rc == 1)
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "refused: the object imports '%s'; kernels may use only the "
                 "math functions",
                 bad);
  else if (runs)
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "refused: the object runs code when it is loaded or "
                 "unloaded (constructors); hk refuses that");
  else if (needed[0])
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "refused: the object needs other libraries: %s", needed);
  else
    return HK_OK;
  return HK_EREFUSED;
}

int hk__memfd(const void *p, size_t n, const char *path, const char *what,
              int *fd, hku_diags *d) {
  *fd = memfd_create("hk-object", MFD_CLOEXEC);
  if (*fd < 0 || hku_write_all(*fd, p, n) != HK_OK) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "%s: %s", what, strerror(errno));
    if (*fd >= 0) close(*fd);
    *fd = -1;
    return HK_EIO;
  }
  return HK_OK;
}

int hk__build_image_fd(const hk_object_t *o, const char *path, int *fd,
                       hku_diags *d) {
  HK_ASSERT(o->image);
  int rc = hk__memfd(o->image, o->size, path, "cannot keep the object", fd, d);
  if (rc == HK_OK && (rc = hk__check_object(*fd, o->size, path, d))) {
    close(*fd);
    *fd = -1;
  }
  return rc;
}

/* ---- Cache keys ---------------------------------------------------------------- */

/* A length-prefixed part of a cache key: no ambiguity between parts. */
static void key_part(hk_sha256_t *s, const char *p, size_t n) {
  uint64_t len = n;
  hk__sha256_update(s, &len, sizeof len);
  hk__sha256_update(s, p, n);
}

/* The hash state after the part of the key that all the kernels of a
 * compiler share: the ABI version, the compiler's identity, its flags, the
 * CPU, and the prelude. Hashing it once per process, not once per kernel,
 * halves the cost of a key (the prelude is most of a small kernel's C). */
static pthread_mutex_t key_memo_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
  char *id, *flags, *cpu; /* what the state was made from; NULL: none */
  hk_sha256_t s;
} key_memo; /* under key_memo_lock */

static int same_text(const char *a, const char *b) {
  return a && strcmp(a, b) == 0;
}

/* Remembers s as the state made from id, flags and cpu (forgets all when
 * out of memory). key_memo_lock held. */
static void key_remember(const char *id, const char *flags, const char *cpu,
                         const hk_sha256_t *s) {
  free(key_memo.id);
  free(key_memo.flags);
  free(key_memo.cpu);
  key_memo.id = strdup(id);
  key_memo.flags = strdup(flags);
  key_memo.cpu = strdup(cpu);
  if (!key_memo.id || !key_memo.flags || !key_memo.cpu) {
    free(key_memo.id);
    free(key_memo.flags);
    free(key_memo.cpu);
    key_memo.id = key_memo.flags = key_memo.cpu = NULL;
  }
  key_memo.s = *s;
}

static void key_prefix(const char *id, const char *flags, const char *cpu,
                       hk_sha256_t *s) {
  pthread_mutex_lock(&key_memo_lock);
  if (same_text(key_memo.id, id) && same_text(key_memo.flags, flags) &&
      same_text(key_memo.cpu, cpu)) {
    *s = key_memo.s;
    pthread_mutex_unlock(&key_memo_lock);
    return;
  }
  char abi[64];
  size_t plen;
  const char *prelude = hkc_prelude_text(&plen);
  hk__sha256_init(s);
  snprintf(abi, sizeof abi, "hk abi %u\n", HK_ABI_VERSION);
  hk__sha256_update(s, abi, strlen(abi));
  key_part(s, id, strlen(id));
  key_part(s, flags, strlen(flags));
  key_part(s, cpu, strlen(cpu));
  key_part(s, prelude ? prelude : "", prelude ? plen : 0);
  key_remember(id, flags, cpu, s);
  pthread_mutex_unlock(&key_memo_lock);
}

/* After the shared prefix: where the unit holds the prelude (it always
 * does), the prelude is already hashed, and the text goes in as the text
 * before it and the text after it, under a tag of its own; otherwise
 * whole, under another. Either way the key is a function of every byte of
 * the text, and text that differs gives different input. */
void hk__build_key(const hkc_unit *u, const char *identity, const char *flags,
                   const char *cpu, uint8_t key[32]) {
  hk_sha256_t s;
  key_prefix(identity, flags, cpu, &s);
  const char *extra = hk__cc_unit_flags(u);
  if (*extra) { /* keys of the default flags stay what they were */
    hk__sha256_update(&s, "F", 1);
    key_part(&s, extra, strlen(extra));
  }
  const char *text = hkc_unit_text(u);
  size_t n = hkc_unit_len(u), off, len, plen;
  hkc_unit_prelude(u, &off, &len);
  if (len && hkc_prelude_text(&plen) && plen == len) {
    hk__sha256_update(&s, "S", 1);
    key_part(&s, text, off);
    key_part(&s, text + off + len, n - off - len);
  } else {
    hk__sha256_update(&s, "W", 1);
    key_part(&s, text, n);
  }
  hk__sha256_final(&s, key);
}

/* ---- hk check and hk build ---------------------------------------------------- */

int hk__build_check(const hkc_file *f, hku_diags *d) {
  if (!(hkc_file_targets(f) & HK_TARGET_CPU)) return HK_OK;
  hkc_unit *u;
  int rc = hk__build_unit(f, HKC_LANG_C, 0, &u, d);
  if (rc) return rc;
  hk_object_t o;
  rc = hk__build_compile(&hk__compiler_tcc, u, NULL, "does not compile: ", &o,
                         d);
  if (rc == HK_OK) hk__object_free(&o);
  hkc_unit_free(u);
  return rc;
}

#if defined(__x86_64__)
/* A portable plugin (hk build without --native) is built for baseline
 * x86-64, where hkmath.h's fused multiply-adds are libm calls (the same
 * bits, about 10 times slower: a loop calling them stays scalar) and
 * vectors are 128 bits. So its kernels are compiled twice into the one
 * object: as they are, and a copy for x86-64-v3 (AVX2, FMA) whose entry
 * points end in HK_ABI_V3_SUFFIX, which the loader picks on CPUs that
 * have it (module.c). Strict-mode kernels give the same bits in both
 * (nothing is contracted, every fused multiply-add is one rounding);
 * "fp": "fast" ones may differ in the last bits, as between any two CPUs.
 * Both copies, each in parts when it is big, compile at once on o->jobs
 * processes. When that fails, u alone is built: its errors are located
 * in the kernel file; or, when it compiles, the copy is what failed (a
 * compiler without these targets), and the plugin holds u alone, with a
 * note saying why. */
static int build_portable(const hkc_file *f, const hk_compiler_t *c,
                          const hkc_unit *u, const hk_compile_opts_t *o,
                          hk_object_t *obj, hku_diags *d) {
  const hk_cc_t *cc = c->state;
  hkc_unit *u3;
  int rc = hk__build_unit(f, HKC_LANG_C, 0, &u3, d);
  if (rc) return rc;
  hku_buf pre = HKU_BUF_INIT;
  hku_buf_put(&pre,
              "/* hk build: the x86-64-v3 copy of the kernels (core/build.c) "
              "*/\n"
              "#if defined(__clang__)\n"
              "#pragma clang attribute push (__attribute__((target(\"avx,avx2,"
              "bmi,bmi2,f16c,fma,lzcnt,movbe,popcnt,sse4.2\"))), apply_to = "
              "function)\n"
              "#else\n"
              "#pragma GCC target(\"avx,avx2,bmi,bmi2,f16c,fma,lzcnt,movbe,"
              "popcnt,sse4.2\")\n"
              "#endif\n");
  for (int i = 0; i < hkc_file_ninstances(f); i++) {
    const hkc_instance *in = hkc_file_instance(f, i);
    if (!(hkc_instance_targets(in) & HK_TARGET_CPU)) continue;
    const char *const *prefixes;
    int np = hk__entry_prefixes(in, &prefixes);
    for (int p = 0; p < np; p++)
      hku_buf_printf(&pre, "#define %s%s %s%s" HK_ABI_V3_SUFFIX "\n",
                     prefixes[p], hkc_instance_name(in), prefixes[p],
                     hkc_instance_name(in));
  }
  static const char post[] =
      "#if defined(__clang__)\n#pragma clang attribute pop\n#endif\n";
  int half = o->jobs / 2 > 1 ? o->jobs / 2 : 1;
  int n1 = hk__cc_nparts(u, half), n3 = hk__cc_nparts(u3, half);
  hku_buf *parts = calloc((size_t)(n1 + n3), sizeof *parts);
  if (!parts || pre.oom) {
    rc = HK_ENOMEM;
  } else {
    for (int p = 0; p < n1 + n3; p++) parts[p] = (hku_buf)HKU_BUF_INIT;
    if (hk__cc_split(u, n1, NULL, NULL, parts) ||
        hk__cc_split(u3, n3, hku_buf_str(&pre), post, parts + n1))
      rc = HK_ENOMEM;
  }
  const char *path = hkc_file_path(f);
  hku_buf msgs = HKU_BUF_INIT;
  if (rc == HK_OK)
    rc = hk__cc_build_parts(cc, parts, n1 + n3, hk__cc_unit_flags(u), o,
                            path, obj, &msgs, d);
  if (rc == HK_ECOMPILE && !(o->cancel && atomic_load(o->cancel))) {
    rc = hk__build_compile(c, u, o, "the compiler failed:\n", obj, d);
    if (rc == HK_OK)
      hku_diag_add(d, HKU_NOTE, path, 0, 0,
                   "the x86-64-v3 copy of the kernels did not compile, so "
                   "the plugin holds only the copy for any x86-64 CPU (math "
                   "functions about 10 times slower there):\n%s",
                   msgs.len ? hku_buf_str(&msgs) : "");
  }
  if (rc == HK_ENOMEM) d->oom = 1;
  for (int p = 0; parts && p < n1 + n3; p++) hku_buf_free(&parts[p]);
  free(parts);
  hku_buf_free(&msgs);
  hku_buf_free(&pre);
  hkc_unit_free(u3);
  return rc;
}
#endif

int hk__build_prebuilt(const hkc_file *f, const hk_cc_t *cc,
                       hk_purpose_t purpose, const char *out, hku_diags *d) {
  hkc_unit *u;
  int rc = hk__build_unit(f, HKC_LANG_C, HKC_UNIT_PREBUILT, &u, d);
  if (rc) return rc;
  hk_compiler_t c = hk__compiler_cc(cc);
  hk_compile_opts_t o = {.purpose = purpose, .timeout_s = 600,
                         .jobs = hk__cc_jobs()};
  hk_object_t obj = {.by = &c};
#if defined(__x86_64__)
  if (purpose == HK_FOR_PREBUILT)
    rc = build_portable(f, &c, u, &o, &obj, d);
  else
#endif
    rc = hk__build_compile(&c, u, &o, "the compiler failed:\n", &obj, d);
  if (rc == HK_OK) {
    int fd;
    rc = hk__build_image_fd(&obj, hkc_file_path(f), &fd, d);
    if (rc == HK_OK) {
      close(fd);
      hku_part one = {obj.image, obj.size};
      rc = hku_write_output(out, &one, 1, 0755, d);
    }
    hk__object_free(&obj);
  }
  hkc_unit_free(u);
  return rc;
}
