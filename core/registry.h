/* registry.h — contexts, kernel handles and loaded modules (internal).
 *
 * The objects and their lifetimes:
 *   hk_context   the registry: a name map of handles (under an rwlock), the
 *                modules loaded, the opt-tier worker and the watcher.
 *   hk_kernel    a handle: an atomic pointer to the implementation calls
 *                run (NULL when the kernel cannot run), and its description.
 *                Handles are never freed before the context.
 *   hk_module    one loaded source: a kernel file, a prebuilt plugin or a
 *                string. It owns the compiled code (libtcc state, dlopen
 *                handles) and the implementations of its instances. A
 *                module replaced by a reload or unloaded is retired, not
 *                freed: a call may still be running its code.
 *   hk_impl      what a call runs: the entry points and the tier. Immutable
 *                once a handle points to it.
 * Locks: ctx->load_lock serializes every change (loads, reloads, the opt
 * worker publishing); ctx->map_lock guards the name map (readers: find,
 * foreach); calls take none.
 */
#ifndef HK_REGISTRY_H
#define HK_REGISTRY_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/stat.h>

#include "buf.h"
#include "cache.h"
#include "codegen.h"
#include "compiler.h"
#include "compiler_cc.h"
#include "cuda.h"
#include "diag.h"
#include "dispatch.h"
#include "hk.h"
#include "map.h"

typedef struct hk_impl {
  hk_entry_t e;
  hk_tier_t tier;
} hk_impl_t;

enum { HK__LIVE, HK__REMOVED, HK__STALE, HK__NO_CPU };

struct hk_module;

struct hk_kernel {
  _Atomic(const hk_impl_t *) impl; /* NULL: not runnable (see state) */
  _Atomic(const hk_kernel_info_t *) info;
  _Atomic int state;               /* HK__LIVE ... */
  hk_context_t *ctx;
  struct hk_module *mod; /* NULL for the stdlib; under load_lock */
  hk_impl_t stdlib_impl; /* the stdlib's own (inline) */
  /* The GPU entry, made on the first GPU call (cuda/call.c); reset when a
   * reload gives the handle new code. */
  _Atomic(const hk_cuda_entry_t *) cuda;
  hk_cuda_entry_t stdlib_cuda; /* the stdlib's, from libhk's fatbin */
  struct hk_kernel *next_all;
};

typedef enum { HK__SRC_JSON, HK__SRC_SO, HK__SRC_STRING } hk_src_kind;

typedef enum {
  HK__OPT_NONE,     /* not wanted (tier jit, prebuilt, no cpu code) */
  HK__OPT_QUEUED,   /* waiting for the worker */
  HK__OPT_RUNNING,  /* the compiler is running */
  HK__OPT_DONE,     /* the instances run on tier opt */
  HK__OPT_FAILED    /* see opt_note */
} hk_opt_state;

typedef struct hk_module {
  hk_context_t *ctx;
  char *path;        /* the file, or the string's name */
  hk_src_kind kind;
  int from_dir;      /* found by scanning a plugin folder */
  struct stat st;    /* the file at load time: reload compares it */
  uint8_t digest[32];/* SHA-256 of the file's bytes */
  hkc_file *file;    /* the description (a .so's is embedded in it) */
  int ninst;
  const hkc_instance **inst;   /* every instance, in file order */
  hk_kernel_info_t **infos;    /* one per instance */
  hk_kernel_t **kernels;       /* their handles once registered */
  hkc_unit *unit;              /* generated C (json, string) */
  uint8_t key[32];             /* disk cache key of unit */
  hk_object_t jit;             /* tier jit code (libtcc) */
  void *dl;                    /* tier opt or prebuilt code (hk__dl_open:
                                  one fd per loaded file) */
  hk_impl_t *impls;            /* per instance: the code loaded at load */
  hk_impl_t *opt_impls;        /* per instance, once opt is ready */
  _Atomic int opt_state;       /* hk_opt_state */
  char *opt_note;              /* why opt failed (under load_lock) */
  struct hk_cuda_module *cuda; /* GPU code (NVRTC), made on first use
                                  under load_lock; kept until freed */
  char *cuda_note;             /* why there is none (not retried) */
  int cuda_rc;                 /* ... and its status code */
  int live;                    /* registered; 0 once retired */
  struct hk_module *next;      /* in ctx->modules or ctx->retired */
  struct hk_module *next_job;  /* in the opt queue */
} hk_module_t;

struct hk_context {
  pthread_mutex_t load_lock; /* recursive: hk__load_lock() */
  _Atomic(pthread_t) load_owner; /* valid while load_depth > 0 */
  _Atomic int load_depth;    /* times the owner holds it */
  pthread_rwlock_t map_lock;
  hk_map_t names;            /* name -> hk_kernel_t */
  hk_kernel_t *all;          /* every handle ever made */
  hk_module_t *modules;      /* live modules */
  hk_module_t *retired;      /* replaced or unloaded: code kept alive */
  char **dirs;               /* plugin folders, for reload and watch */
  int ndirs;
  hk_options_t opts;         /* copied; strings owned */
  char *cache_dir_opt, *cc_opt;
  hk_cache_t *cache;         /* NULL: no disk cache */
  char *cache_note;          /* why there is no cache, when asked for one */
  hk_cc_t cc;                /* the system compiler: hk__need_cc() */
  int cc_probed;
  char *problems;            /* from folder loads, for hk_context_problems */
  /* the opt-tier worker */
  pthread_mutex_t opt_lock;
  pthread_cond_t opt_cond;   /* a job was queued, or stop */
  pthread_cond_t opt_idle;   /* the queue emptied */
  hk_module_t *opt_head, *opt_tail;
  int opt_busy;              /* a job is being compiled */
  int opt_started;
  pthread_t opt_thread;
  _Atomic int stopping;
  /* the watcher (watch.c) */
  struct hk_watch *watch;
  /* set by hk_watch(ctx, 0) before it waits for the load lock, which a
   * reload of the watcher holds: a compile that reload runs (forced tier
   * opt) is cancelled; cleared when a watch starts */
  _Atomic int watch_cancel;
};

/* ---- context.c ---- */
/* The kernel registered as name, or NULL (no error recorded: the miss of
 * hk_kernel_find, which scans for instances to name, is for users). */
HK_INTERNAL hk_kernel_t *hk__kernel_lookup(hk_context_t *ctx,
                                           const char *name);
/* Records msg as this thread's last error and returns code. */
HK_INTERNAL int hk__fail(int code, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
HK_INTERNAL void hk__log(hk_context_t *ctx, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ctx->load_lock, with its owner recorded so that "load_lock held" can be
 * asserted (context.c). */
HK_INTERNAL void hk__load_lock(hk_context_t *ctx);
HK_INTERNAL void hk__load_unlock(hk_context_t *ctx);
/* 1 when this thread holds ctx->load_lock (taken by hk__load_lock). */
HK_INTERNAL int hk__load_held(hk_context_t *ctx);

/* ---- module.c ---- */
/* Loads a file (.json or .so) or a string into a new module *out: parses,
 * checks, compiles (or takes tier opt from the disk cache), but registers
 * nothing. HK_OK, or HK_EIO, HK_ESCHEMA, HK_ECOMPILE, HK_EUNSUPPORTED,
 * HK_EREFUSED (a prebuilt plugin refused), HK_ENOMEM; problems in d. */
HK_INTERNAL int hk__module_load(hk_context_t *ctx, const char *path,
                                const char *text, size_t len,
                                hk_src_kind kind, hk_module_t **out,
                                hku_diags *d);
/* Frees a module that was never registered, or at context destruction. */
HK_INTERNAL void hk__module_free(hk_module_t *mod);

/* ---- register.c ---- */
/* Registers mod's kernels, replacing old (a module of the same source, or
 * NULL): handles of unchanged signature switch to the new code, others go
 * stale; old's names not in mod are unregistered. Refuses (and registers
 * nothing) when a name belongs to the stdlib or to another module. Called
 * with load_lock held. HK_OK, HK_ESCHEMA (a name taken) or HK_ENOMEM;
 * problems in d. */
HK_INTERNAL int hk__module_register(hk_context_t *ctx, hk_module_t *mod,
                                    hk_module_t *old, hku_diags *d);
/* Unregisters mod's kernels and retires it (load_lock held). */
HK_INTERNAL void hk__module_unload(hk_context_t *ctx, hk_module_t *mod);

/* ---- opt.c ---- */
/* Queues mod for the opt tier (load_lock held). */
HK_INTERNAL void hk__opt_enqueue(hk_context_t *ctx, hk_module_t *mod);
/* Compiles mod for tier opt now, on this thread (a big file in parts, on
 * up to jobs compiler processes at once). HK_OK, or the failure
 * (HK_EUNSUPPORTED: no system compiler; HK_ECOMPILE, HK_EREFUSED, HK_EIO,
 * HK_ENOMEM) with the reason in mod->opt_note. Publishes the result when
 * mod is live. */
HK_INTERNAL int hk__opt_build(hk_context_t *ctx, hk_module_t *mod, int jobs);
/* 1 on a thread of tier opt (where the log callback may run). */
HK_INTERNAL int hk__opt_on_worker(void);
/* Probes the system compiler the first time it is needed (a kernel file
 * is loaded): contexts that only use the stdlib never run it. load_lock
 * held. */
HK_INTERNAL void hk__need_cc(hk_context_t *ctx);
/* Stops the worker thread (cancelling a running compile). */
HK_INTERNAL void hk__opt_stop(hk_context_t *ctx);

/* ---- perms.c ---- */
/* Checks that path (a plugin file or folder) is not writable by others nor
 * owned by another user (root is trusted). HK_OK, HK_EREFUSED, or HK_EIO
 * (it cannot be read), with the reason in d. */
HK_INTERNAL int hk__check_perms(hk_context_t *ctx, const char *path,
                                hku_diags *d);

/* ---- context.c: calls ---- */
/* hk_call on the CPU (no check of where the buffers are). */
HK_INTERNAL int hk__call_cpu(const hk_kernel_t *k, size_t n, void *const *args);
/* Runs rows kernel k on rows rows of n elements each (args as for
 * hk_call; each buffer holds rows * n elements, rows for a "one" buffer, n
 * for a "shared" one), whole rows per thread-pool task. HK_OK, HK_EINVAL
 * (k is not a rows kernel), or hk__call_failure's codes. */
HK_INTERNAL int hk__call_rows_cpu(const hk_kernel_t *k, size_t rows, size_t n,
                                  void *const *args);
/* ---- arrays_rows.c ---- */
/* The most parameters an array call takes (arrays.c's ARR_MAX_ARGS). */
#define HK__ARRAYS_MAX_ARGS 64
/* hk_call_arrays on rows kernel k (its arrays already checked one by one
 * against their parameters, as arrays.c's setup does): the last axis is
 * the row (hk.h). HK_OK, HK_EINVAL (shapes, overlaps, axes given),
 * HK_ENOMEM, or the rows call's errors. */
HK_INTERNAL int hk__arrays_rows(const hk_kernel_t *k, const hk_array_t *a,
                                const hk_call_opts_t *opts);
/* 1 when every element of array a has its own address (arrays.c: a
 * sufficient test, axes sorted by stride), so that it may be written. */
HK_INTERNAL int hk__array_distinct(const hk_array_t *a);
/* 1 when a is C-contiguous (a stride where the length is 1 means
 * nothing; an empty array is any layout's). */
HK_INTERNAL int hk__array_contiguous(const hk_array_t *a);
/* 1 when two arrays, neither empty, may share a byte (arrays.c: exact but
 * for a bound on the search, past which it says 1). */
HK_INTERNAL int hk__arrays_may_share(const hk_array_t *a,
                                     const hk_array_t *b);
/* hk_call_out_shape for rows kernel k's written parameter param (the
 * rows along opts' axis, or the last). */
HK_INTERNAL int hk__arrays_rows_shape(const hk_kernel_t *k,
                                      const hk_array_t *a,
                                      const hk_call_opts_t *opts, int param,
                                      int *ndim, int64_t *shape);
/* rc, with the thread's last error prefixed by k's name when rc is an
 * error (context.c). */
HK_INTERNAL int hk__named(const hk_kernel_t *k, int rc);
/* Why k has no CPU implementation (unloaded, stale, no cpu target). */
HK_INTERNAL int hk__call_failure(const hk_kernel_t *k);

/* ---- cuda/call.c, cuda/module.c, cuda/launch.c ---- */
/* hk_call once the CUDA backend has started: by where the buffers are. */
HK_INTERNAL int hk__call_auto(const hk_kernel_t *k, size_t n,
                              void *const *args);
/* Runs rows kernel k on the GPU over rows rows of n elements each (args:
 * device buffers, as hk__call_rows_cpu), one GPU thread per row, on stream
 * s; s NULL: the default stream, and waits for the kernel. HK_OK, HK_EINVAL
 * (not a rows kernel, or a buffer in host memory), or the GPU call's
 * errors (HK_EUNSUPPORTED, HK_EDEVICE ...). */
HK_INTERNAL int hk__call_rows_cuda(const hk_kernel_t *k, hk_stream_t *s,
                                   size_t rows, size_t n, void *const *args);
/* How hk__call_reduce_rows_cuda runs the rows: chosen by their shape
 * (what calls use), or, for tests, a warp per row, or blocks per row and a
 * merge. The two differ by rounding (their trees differ); each depends on
 * the shape only. */
#define HK_ROWS_BY_SHAPE 0
#define HK_ROWS_BY_WARP 1
#define HK_ROWS_BY_BLOCKS 2
/* Runs reduction k on the GPU over rows rows of m contiguous elements each
 * (args: device buffers; each in buffer holds rows * m elements, row after
 * row; each result buffer rows elements, one per row), on the default
 * stream, as how says (HK_ROWS_*), and waits for it. HK_OK, HK_EINVAL (not
 * a reduction, or a buffer in host memory), HK_ENOMEM, HK_EUNSUPPORTED
 * (HK_ROWS_BY_WARP, and k's GPU code has no warp-per-row kernel), or the
 * GPU call's errors. */
HK_INTERNAL int hk__call_reduce_rows_cuda(const hk_kernel_t *k, size_t rows,
                                          size_t m, void *const *args,
                                          int how);
/* What hk__call_nd_cuda returns when k's GPU code has no N-D entry (made
 * before it existed, or more buffers than HK_ABI_CUDA_ND_BUFS) or the call
 * is beyond it (n >= 2^63): nothing ran and no error is set. Positive, so
 * never an HK_E* code. */
#define HK__ND_NONE 1
/* hk__call_nd_cuda's flags: 64-bit index math even where 32 bits do (the
 * path of n >= 2^31 or offsets beyond an int, for tests of it). */
#define HK__ND_WIDE 1u
/* Runs elementwise kernel k on the GPU over the n elements of shape
 * (nd axes, 1 to HK_MAX_DIMS, innermost last), C order, through its N-D
 * entry (common/abi.h): st[i] holds parameter i's strides along those axes
 * in elements (any sign; 0 where it is broadcast), NULL for scalars, and
 * args[i] the element at index 0 (device memory) or the scalar's value.
 * On the default stream, waiting for it. HK_OK; HK__ND_NONE; HK_EINVAL
 * (not elementwise, a buffer in host memory), or the GPU call's errors.
 * Written arrays must not overlap other arrays but an in array with the
 * same strides (in place), as check_overlaps in arrays.c ensures: each
 * element is read, then written, by one thread. */
HK_INTERNAL int hk__call_nd_cuda(const hk_kernel_t *k, int nd,
                                 const int64_t *shape,
                                 const int64_t *const *st, size_t n,
                                 void *const *args, unsigned flags);
/* Copies n elements of es bytes (1, 2, 4, 8) on the GPU, on the default
 * stream, without waiting: scatter 0, element i of dst (contiguous) from
 * the element of src at index i of shape[0..nd) (C order), offset by
 * st[] (in elements, any sign); scatter 1, the other way. n must be the
 * product of shape[]. The view is collapsed first (length-1 axes dropped,
 * axes that continue each other merged); a transpose goes through
 * shared-memory tiles (launch.c). HK_OK, or HK_EUNSUPPORTED when the
 * stdlib has no GPU code (the copy kernels are in it), HK_EDEVICE when the
 * launch failed. */
HK_INTERNAL int hk__cuda_copy_strided(void *dst, const void *src, size_t es,
                                      int nd, const int64_t *shape,
                                      const int64_t *st, int scatter,
                                      size_t n);
/* 1 when hk__cuda_copy_strided moves the view of es-byte elements (nd
 * axes of shape, strides st in elements) through its shared-memory tiles
 * (a batch of transposes), else 0. */
HK_INTERNAL int hk__cuda_copy_tiled(size_t es, int nd, const int64_t *shape,
                                    const int64_t *st);
/* 1 when elementwise k's GPU code has an N-D entry (hk__call_nd_cuda), 0
 * when not, or the error of making its GPU entry (negative, the last error
 * set). The backend must be ready on this thread. */
HK_INTERNAL int hk__cuda_has_nd(const hk_kernel_t *k);
/* Waits for the default stream: HK_OK, or HK_EDEVICE naming what. */
HK_INTERNAL int hk__cuda_sync_default(const char *what);
/* Frees a module's GPU code (hk__module_free). */
HK_INTERNAL void hk__cuda_module_free(hk_module_t *m);
/* Makes m->cuda: the module's GPU code. ctx->load_lock held. HK_OK, or an
 * error (also remembered in m->cuda_note, so that it is not retried). */
HK_INTERNAL int hk__module_cuda(hk_context_t *ctx, hk_module_t *m);

/* ---- watch.c ---- */
HK_INTERNAL int hk__watch_start(hk_context_t *ctx, int rescan);
HK_INTERNAL void hk__watch_stop(hk_context_t *ctx);
/* On the watcher thread, the flag that its stop sets (a compile there
 * checks it, not only ctx->stopping); NULL on any other thread. */
HK_INTERNAL const _Atomic int *hk__watch_cancel_flag(void);

#endif
