/* module.c — loading kernel files, prebuilt plugins and strings into new
 * modules (registry.h): parse, generate, compile or take from the cache,
 * and resolve each instance's entry points; registration is register.c's.
 *
 * A kernel file's path through here:
 *   read -> parse and validate (codegen) -> generate C (build.c) -> cache
 *   key (build.c) -> disk cache hit: dlopen, tier opt at once (opt.c);
 *   else libtcc, tier jit, and the opt tier queued for the background
 *   worker (opt.c), which builds, checks, caches, dlopens and swaps each
 *   handle's implementation.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "abi.h"
#include "build.h"
#include "compiler_cc.h"
#include "dispatch.h"
#include "fsutil.h"
#include "loader.h"
#include "sha256.h"

/* ---- Resolving entry points ------------------------------------------------ */

static void *resolve_jit(void *owner, const char *name) {
  return hk__object_symbol(owner, name);
}

void *hk__resolve_dl(void *owner, const char *name) {
  return dlsym(owner, name);
}

/* A prebuilt plugin's entry point: its x86-64-v3 copy where it has one
 * (hk build, portable: build.c) and the CPU runs it, else the one built
 * for any CPU. */
static void *resolve_prebuilt(void *owner, const char *name) {
#if defined(__x86_64__)
  if (hk__isa_level() >= HK_ISA_V3) {
    char v3[300];
    snprintf(v3, sizeof v3, "%s" HK_ABI_V3_SUFFIX, name);
    void *addr = dlsym(owner, v3);
    if (addr) return addr;
  }
#endif
  return dlsym(owner, name);
}

/* Fills impl for instance in; HK_OK, or HK_ECOMPILE with the missing
 * symbol's name said in d about m. */
static int resolve_impl(const hk_module_t *m, const hkc_instance *in,
                        hk_resolve_fn sym, void *owner, hk_tier_t tier,
                        hk_impl_t *impl, hku_diags *d) {
  const char *const *prefixes;
  const int np = hk__entry_prefixes(in, &prefixes);
  hk_kind_t kind = hkc_instance_kind(in);
  memset(impl, 0, sizeof *impl);
  impl->tier = tier;
  impl->e.kind = kind;
  impl->e.flags = hkc_instance_heavy(in) ? HK_ABI_HEAVY : 0;
  impl->e.acc_size = (uint32_t)hkc_instance_acc_size(in);
  for (int p = 0; p < np; p++) {
    char name[256];
    snprintf(name, sizeof name, "%s%s", prefixes[p], hkc_instance_name(in));
    void *addr = sym(owner, name);
    if (!addr && p >= 3) continue; /* rowred, colred, colpart: optional */
    if (!addr) {
      hku_diag_add(d, HKU_ERROR, m->path, 0, 0,
                   "the compiled code does not define %s (for kernel \"%s\")",
                   name, hkc_instance_name(in));
      return HK_ECOMPILE;
    }
    /* the entry points are functions; the cast is how dlsym works */
    if (p == 0) *(void **)&impl->e.range = addr;
    if (p == 1) *(void **)&impl->e.lens = addr;
    if (p == 2) *(void **)&impl->e.merge = addr;
    if (p == 3) *(void **)&impl->e.rowred = addr;
    if (p == 4) *(void **)&impl->e.colred = addr;
    if (p == 5) *(void **)&impl->e.colpart = addr;
  }
  return HK_OK;
}

int hk__resolve_all(hk_module_t *m, hk_resolve_fn sym, void *owner,
                    hk_tier_t tier, hk_impl_t *impls, hku_diags *d) {
  for (int i = 0; i < m->ninst; i++) {
    if (!(hkc_instance_targets(m->inst[i]) & HK_TARGET_CPU)) continue;
    int rc = resolve_impl(m, m->inst[i], sym, owner, tier, &impls[i], d);
    if (rc) return rc;
  }
  return HK_OK;
}

/* ---- Loading ------------------------------------------------------------------ */

/* Makes the per-instance arrays of m from m->file. HK_OK or HK_ENOMEM. */
static int flatten(hk_module_t *m, hku_diags *d) {
  int n = hkc_file_ninstances(m->file);
  m->ninst = n;
  m->inst = calloc((size_t)n + 1, sizeof *m->inst);
  m->infos = calloc((size_t)n + 1, sizeof *m->infos);
  m->kernels = calloc((size_t)n + 1, sizeof *m->kernels);
  m->impls = calloc((size_t)n + 1, sizeof *m->impls);
  m->opt_impls = calloc((size_t)n + 1, sizeof *m->opt_impls);
  if (!m->inst || !m->infos || !m->kernels || !m->impls || !m->opt_impls) {
    d->oom = 1;
    return HK_ENOMEM;
  }
  const char *origin = m->kind == HK__SRC_SO ? "so" : "json";
  for (int j = 0; j < n; j++) {
    m->inst[j] = hkc_file_instance(m->file, j);
    m->infos[j] = hkc_instance_info_new(m->inst[j], origin, m->path);
    if (!m->infos[j]) {
      d->oom = 1;
      return HK_ENOMEM;
    }
    /* a prebuilt plugin holds CPU code only, whatever its file targets
     * (README: load the kernel file to run it on the GPU) */
    if (m->kind == HK__SRC_SO) m->infos[j]->targets &= HK_TARGET_CPU;
  }
  return HK_OK;
}

/* Compiles the module's generated C with libtcc: tier jit. */
static int compile_jit(hk_module_t *m, hku_diags *d) {
  int rc = hk__build_compile(&hk__compiler_tcc, m->unit, NULL,
                             "compiling failed: ", &m->jit, d);
  if (rc) return rc;
  return hk__resolve_all(m, resolve_jit, &m->jit, HK_TIER_JIT, m->impls, d);
}

/* Tier opt now, without the jit first (forced by the options). */
static int load_opt_now(hk_context_t *ctx, hk_module_t *m, hku_diags *d) {
  int rc = hk__opt_build(ctx, m, hk__cc_jobs());
  if (rc) {
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0, "tier opt failed: %s",
                 m->opt_note ? m->opt_note : "unknown reason");
    return rc == HK_EUNSUPPORTED ? rc : HK_ECOMPILE;
  }
  memcpy(m->impls, m->opt_impls, (size_t)m->ninst * sizeof *m->impls);
  return HK_OK;
}

/* A kernel file's text: parse, generate, then the tier of the options. */
static int load_json(hk_context_t *ctx, hk_module_t *m, const char *text,
                     size_t len, hku_diags *d) {
  if (hkc_file_parse(m->path, text, len, &m->file, d)) return HK_ESCHEMA;
  int rc = flatten(m, d);
  if (rc || !(hkc_file_targets(m->file) & HK_TARGET_CPU)) return rc;
  if ((rc = hk__build_unit(m->file, HKC_LANG_C, 0, &m->unit, d))) return rc;
  hk_tier_t want = ctx->opts.tier;
  /* tier jit never runs the system compiler, not even to name it for the
   * cache key of tier opt, which it does not use */
  if (want != HK_TIER_JIT) {
    hk__need_cc(ctx);
    hk__build_key(m->unit, ctx->cc.identity ? ctx->cc.identity : "",
                  hk__cc_flags(HK_FOR_OPT), ctx->cc.cpu ? ctx->cc.cpu : "",
                  m->key);
    if (hk__opt_from_cache(ctx, m) == HK_OK) return HK_OK;
  }
  if (want == HK_TIER_OPT) return load_opt_now(ctx, m, d);
  if ((rc = compile_jit(m, d))) return rc;
  if (want == HK_TIER_JIT) {
    atomic_store(&m->opt_state, HK__OPT_NONE);
  } else if (hk__opt_failed_before(ctx, m)) {
    /* state and note set: the compiler would fail the same way again */
  } else if (ctx->cc.why_not) {
    atomic_store(&m->opt_state, HK__OPT_FAILED);
    m->opt_note = strdup(ctx->cc.why_not);
  } else {
    atomic_store(&m->opt_state, HK__OPT_QUEUED); /* once registered */
  }
  return HK_OK;
}

/* The plugin's exported ABI version and description, checked. HK_OK and
 * *desc, or HK_EREFUSED (said in d). */
static int so_exports(const hk_module_t *m, const char **desc, hku_diags *d) {
  const uint32_t *abi = dlsym(m->dl, HK_ABI_PLUGIN_VERSION_SYMBOL);
  *desc = dlsym(m->dl, HK_ABI_PLUGIN_DESC_SYMBOL);
  if (!abi || !*desc) {
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0,
                 "not an hk plugin: it does not define %s and %s (make "
                 "plugins with hk build)",
                 HK_ABI_PLUGIN_VERSION_SYMBOL, HK_ABI_PLUGIN_DESC_SYMBOL);
    return HK_EREFUSED;
  }
  if (*abi != HK_ABI_VERSION) {
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0,
                 "built for hk ABI %u, and this hk is ABI %u: build it again "
                 "with this hk (hk build)",
                 *abi, HK_ABI_VERSION);
    return HK_EREFUSED;
  }
  return HK_OK;
}

/* A prebuilt plugin: a private copy, checked, loaded; its embedded
 * description parsed; its entry points resolved (tier so). */
static int load_so(hk_module_t *m, hku_diags *d) {
  int fd;
  int rc = hk__private_copy(m->path, &m->st, &fd, d);
  if (rc) return rc;
  if ((rc = hk__check_object(fd, (size_t)m->st.st_size, m->path, d))) {
    close(fd);
    return rc;
  }
  hku_diags why = HKU_DIAGS_INIT;
  rc = hk__dl_open(fd, m->path, &m->dl, &why);
  if (rc) { /* "cannot load it: ..." is a refusal of the plugin */
    hku_diag_add(d, HKU_ERROR, m->path, 0, 0, "refused: %s",
                 hku_diags_words(&why, "cannot load it"));
    hku_diags_free(&why);
    return rc;
  }
  const char *desc;
  if ((rc = so_exports(m, &desc, d))) return rc;
  hku_buf name = HKU_BUF_INIT;
  hku_buf_printf(&name, "%s(embedded description)", m->path);
  rc = hkc_file_parse(hku_buf_str(&name), desc, strlen(desc), &m->file, d);
  hku_buf_free(&name);
  if (rc) return HK_ESCHEMA;
  if ((rc = flatten(m, d))) return rc;
  rc = hk__resolve_all(m, resolve_prebuilt, m->dl, HK_TIER_SO, m->impls, d);
  if (rc) return HK_EREFUSED;
  hk__sha256(desc, strlen(desc), m->digest);
  return HK_OK;
}

int hk__module_load(hk_context_t *ctx, const char *path, const char *text,
                    size_t len, hk_src_kind kind, hk_module_t **out,
                    hku_diags *d) {
  *out = NULL;
  hk_module_t *m = calloc(1, sizeof *m);
  if (!m || !(m->path = strdup(path))) {
    free(m);
    d->oom = 1;
    return HK_ENOMEM;
  }
  m->ctx = ctx;
  m->kind = kind;
  atomic_init(&m->opt_state, HK__OPT_NONE);
  int rc;
  if (kind == HK__SRC_SO) {
    rc = load_so(m, d);
  } else if (kind == HK__SRC_STRING) {
    hk__sha256(text, len, m->digest);
    rc = load_json(ctx, m, text, len, d);
  } else {
    char *buf;
    rc = hku_read_file(path, &buf, &len, &m->st, d);
    if (rc == HK_OK) {
      hk__sha256(buf, len, m->digest);
      rc = load_json(ctx, m, buf, len, d);
      free(buf);
    }
  }
  if (rc) {
    hk__module_free(m);
    return d->oom ? HK_ENOMEM : rc;
  }
  *out = m;
  return HK_OK;
}

void hk__module_free(hk_module_t *m) {
  if (!m) return;
  hk__cuda_module_free(m);
  if (m->dl) hk__dl_close(m->dl);
  hk__object_free(&m->jit);
  for (int i = 0; i < m->ninst; i++) free(m->infos ? m->infos[i] : NULL);
  free(m->infos);
  free(m->inst);
  free(m->kernels);
  free(m->impls);
  free(m->opt_impls);
  hkc_unit_free(m->unit);
  hkc_file_free(m->file);
  free(m->opt_note);
  free(m->path);
  free(m);
}
