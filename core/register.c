/* register.c — a loaded module's kernels into the context's name map:
 * registration (replacing a previous version), and unloading. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "loader.h"

static int same_signature(const hk_kernel_info_t *a, const hk_kernel_info_t *b) {
  if (a->kind != b->kind || a->nparams != b->nparams) return 0;
  for (int i = 0; i < a->nparams; i++) {
    const hk_param_info_t *p = &a->params[i], *q = &b->params[i];
    /* a rows buffer's step per row too: "one" to "full" changes how
     * many elements a call reads and writes */
    if (p->dtype != q->dtype || p->role != q->role || p->row != q->row ||
        strcmp(p->name, q->name))
      return 0;
    if ((p->len == NULL) != (q->len == NULL) ||
        (p->len && strcmp(p->len, q->len)))
      return 0;
  }
  return 1;
}

static const hk_impl_t *impl_of(const hk_module_t *m, int i) {
  if (!(hkc_instance_targets(m->inst[i]) & HK_TARGET_CPU)) return NULL;
  if (atomic_load(&m->opt_state) == HK__OPT_DONE && m->opt_impls[i].e.range)
    return &m->opt_impls[i];
  return &m->impls[i];
}

/* Reports instance i of mod whose name is taken by h (the stdlib's or
 * another module's kernel). */
static void name_taken(const hk_module_t *mod, int i, const hk_kernel_t *h,
                       hku_diags *d) {
  const hkc_instance *in = mod->inst[i];
  const char *path = hkc_file_path(mod->file), *name = hkc_instance_name(in);
  int line, col;
  hkc_instance_name_pos(mod->file, in, &line, &col);
  if (!h->mod) {
    hku_diag_add(d, HKU_ERROR, path, line, col,
                 "%sname: \"%s\" is a stdlib kernel; a user kernel cannot "
                 "take its name",
                 hkc_instance_field_prefix(in), name);
    return;
  }
  char other[4400] = "";
  for (int j = 0; j < h->mod->ninst; j++) {
    const hkc_instance *o = h->mod->inst[j];
    if (strcmp(hkc_instance_name(o), name)) continue;
    int l, c;
    hkc_instance_name_pos(h->mod->file, o, &l, &c);
    snprintf(other, sizeof other, "%s:%d:%d", hkc_file_path(h->mod->file), l,
             c);
  }
  hku_diag_add(d, HKU_ERROR, path, line, col,
               "%sname: kernel \"%s\" is already defined in %s; this file "
               "was not loaded",
               hkc_instance_field_prefix(in), name, other);
}

/* The number of mod's names that belong to others than old (said in d).
 * map_lock held. */
static int conflicts(hk_context_t *ctx, const hk_module_t *mod,
                     const hk_module_t *old, hku_diags *d) {
  int n = 0;
  for (int i = 0; i < mod->ninst; i++) {
    hk_kernel_t *h = hk__map_get(&ctx->names, hkc_instance_name(mod->inst[i]));
    if (!h || (old && h->mod == old)) continue;
    name_taken(mod, i, h, d);
    n++;
  }
  return n;
}

/* Every allocation registration needs, first, so that nothing is half
 * registered: *fresh[i] a new handle for each instance that does not reuse
 * old's, and room in the map. HK_OK or HK_ENOMEM. map_lock held. */
static int prepare(hk_context_t *ctx, const hk_module_t *mod,
                   const hk_module_t *old, hk_kernel_t ***fresh) {
  hk_kernel_t **v = calloc((size_t)mod->ninst + 1, sizeof *v);
  int ok = v != NULL;
  for (int i = 0; ok && i < mod->ninst; i++) {
    hk_kernel_t *h = hk__map_get(&ctx->names, hkc_instance_name(mod->inst[i]));
    if (old && h && h->mod == old &&
        same_signature(atomic_load(&h->info), mod->infos[i]))
      continue; /* reused */
    ok = (v[i] = calloc(1, sizeof **v)) != NULL;
  }
  /* puts must not fail later: room for every new handle now */
  if (ok) ok = hk__map_reserve(&ctx->names, (size_t)mod->ninst) == 0;
  if (!ok) {
    for (int i = 0; v && i < mod->ninst; i++) free(v[i]);
    free(v);
    return HK_ENOMEM;
  }
  *fresh = v;
  return HK_OK;
}

/* Points instance i's handle at mod's code: the old handle (same name,
 * same parameters) when h is NULL, else the new handle h, which replaces
 * (and makes stale) a handle of that name. map_lock held. */
static void bind(hk_context_t *ctx, hk_module_t *mod, int i, hk_kernel_t *h) {
  const hk_impl_t *impl = impl_of(mod, i);
  const char *name = hkc_instance_name(mod->inst[i]);
  if (!h) { /* same name, same parameters: the handle switches code */
    h = hk__map_get(&ctx->names, name);
    atomic_store(&h->info, mod->infos[i]);
    h->mod = mod;
    atomic_store(&h->state, impl ? HK__LIVE : HK__NO_CPU);
    atomic_store_explicit(&h->impl, impl, memory_order_release);
    atomic_store_explicit(&h->cuda, NULL, memory_order_release);
  } else {
    hk_kernel_t *stale = hk__map_del(&ctx->names, name);
    if (stale) { /* its parameters changed: old callers must look again */
      atomic_store(&stale->state, HK__STALE);
      atomic_store_explicit(&stale->impl, NULL, memory_order_release);
    }
    h->ctx = ctx;
    h->mod = mod;
    atomic_init(&h->info, mod->infos[i]);
    atomic_init(&h->state, impl ? HK__LIVE : HK__NO_CPU);
    atomic_init(&h->impl, impl);
    atomic_init(&h->cuda, NULL);
    h->next_all = ctx->all;
    ctx->all = h;
    hk__map_put(&ctx->names, h); /* cannot fail: the map has room */
  }
  mod->kernels[i] = h;
}

/* Unregisters old's kernels that its successor does not define any more.
 * map_lock held. */
static void drop_missing(hk_context_t *ctx, hk_module_t *old) {
  for (int i = 0; i < old->ninst; i++) {
    hk_kernel_t *h = old->kernels[i];
    /* a stale handle's name already belongs to its successor */
    if (!h || h->mod != old || atomic_load(&h->state) == HK__STALE) continue;
    hk__map_del(&ctx->names, hkc_instance_name(old->inst[i]));
    atomic_store(&h->state, HK__REMOVED);
    atomic_store_explicit(&h->impl, NULL, memory_order_release);
  }
}

/* Moves mod from ctx->modules to ctx->retired. load_lock held. */
static void retire(hk_context_t *ctx, hk_module_t *mod) {
  HK_ASSERT(hk__load_held(ctx));
  hk_module_t **pp = &ctx->modules;
  while (*pp && *pp != mod) pp = &(*pp)->next;
  if (*pp) *pp = mod->next;
  mod->live = 0;
  mod->next = ctx->retired;
  ctx->retired = mod;
}

int hk__module_register(hk_context_t *ctx, hk_module_t *mod, hk_module_t *old,
                        hku_diags *d) {
  HK_ASSERT(hk__load_held(ctx));
  hk_kernel_t **fresh = NULL;
  pthread_rwlock_wrlock(&ctx->map_lock);
  int rc = conflicts(ctx, mod, old, d) ? HK_ESCHEMA
                                       : prepare(ctx, mod, old, &fresh);
  if (rc) {
    pthread_rwlock_unlock(&ctx->map_lock);
    if (rc == HK_ENOMEM) d->oom = 1;
    return rc;
  }
  for (int i = 0; i < mod->ninst; i++) bind(ctx, mod, i, fresh[i]);
  free(fresh);
  if (old) drop_missing(ctx, old);
  pthread_rwlock_unlock(&ctx->map_lock);
  if (old) retire(ctx, old);
  mod->live = 1;
  mod->next = ctx->modules;
  ctx->modules = mod;
  if (atomic_load(&mod->opt_state) == HK__OPT_QUEUED) hk__opt_enqueue(ctx, mod);
  return HK_OK;
}

void hk__module_unload(hk_context_t *ctx, hk_module_t *mod) {
  HK_ASSERT(hk__load_held(ctx));
  pthread_rwlock_wrlock(&ctx->map_lock);
  for (int i = 0; i < mod->ninst; i++) {
    hk_kernel_t *h = mod->kernels[i];
    if (!h || h->mod != mod) continue;
    hk__map_del(&ctx->names, hkc_instance_name(mod->inst[i]));
    atomic_store(&h->state, HK__REMOVED);
    atomic_store_explicit(&h->impl, NULL, memory_order_release);
  }
  pthread_rwlock_unlock(&ctx->map_lock);
  retire(ctx, mod);
}
