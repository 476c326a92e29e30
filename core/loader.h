/* loader.h — what the files of the loader (module.c, opt.c, register.c,
 * dl.c) share among themselves; the registry's own calls are in
 * registry.h. Errors follow common/internal.h. */
#ifndef HK_LOADER_H
#define HK_LOADER_H

#include <sys/stat.h>

#include "registry.h"

/* ---- dl.c: loading objects through their fd ---- */

/* Loads the object open at fd, taking fd (kept open while the object is
 * loaded, or closed). HK_OK and *h, or HK_EREFUSED with "cannot load it:
 * ..." about path in d. Thread-safe. */
HK_INTERNAL int hk__dl_open(int fd, const char *path, void **h, hku_diags *d);
/* When the file open at fd is loaded already: one more hold on it in *h,
 * fd closed, 1 (what was loaded was checked when it was; the fd's bytes
 * need no second look). Else 0, fd untouched. */
HK_INTERNAL int hk__dl_hold(int fd, void **h);
/* Drops one hold on h (from hk__dl_open); the last one unloads it and
 * closes its fd. */
HK_INTERNAL void hk__dl_close(void *h);
/* A private copy of the file at path in an anonymous memory file, and its
 * stat: the code is mapped from the copy, so that a plugin rebuilt in
 * place (same inode) cannot change the pages of code that is running.
 * HK_OK and *fd, or HK_EIO / HK_ENOMEM with the reason in d. */
HK_INTERNAL int hk__private_copy(const char *path, struct stat *st, int *fd,
                                 hku_diags *d);

/* ---- module.c: resolving entry points ---- */

/* Resolves an instance's entry points with sym (libtcc or dlsym). */
typedef void *(*hk_resolve_fn)(void *owner, const char *name);
HK_INTERNAL void *hk__resolve_dl(void *owner, const char *name);
/* Fills impls[i] (tier tier) for every CPU instance of m from owner.
 * HK_OK, or HK_ECOMPILE with the missing symbol named in d. */
HK_INTERNAL int hk__resolve_all(hk_module_t *m, hk_resolve_fn sym,
                                void *owner, hk_tier_t tier,
                                hk_impl_t *impls, hku_diags *d);

/* ---- opt.c ---- */

/* Takes tier opt from the disk cache: HK_OK on a hit (m->dl, m->impls set,
 * opt done), HK_ENOTFOUND on a miss or an entry that cannot be used (then
 * logged). */
HK_INTERNAL int hk__opt_from_cache(hk_context_t *ctx, hk_module_t *m);
/* 1 when building m for tier opt failed on an earlier start, for a reason
 * that stays while m's key does (the disk cache remembers it: a compile
 * error in the code, a refused object): then m's opt state is failed, its
 * note says why, and that is logged. Else 0. */
HK_INTERNAL int hk__opt_failed_before(hk_context_t *ctx, hk_module_t *m);

#endif /* HK_LOADER_H */
