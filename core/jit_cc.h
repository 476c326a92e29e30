/* jit_cc.h — tier opt: the system C compiler builds a shared object. */
#ifndef HK_JIT_CC_H
#define HK_JIT_CC_H

#include <stdatomic.h>
#include <stdint.h>
#include <sys/types.h>

#include "buf.h"
#include "internal.h"

typedef struct hk_cc {
  char **argv;     /* the compiler command: $HK_CC (words), else "cc" */
  char *path;      /* the resolved executable, or NULL */
  char *identity;  /* its --version output: part of every cache key */
  char *cpu;       /* this CPU's model and feature flags (-march=native) */
  char *why_not;   /* when the compiler cannot be used: why, else NULL */
} hk_cc_t;

/* What a build is for: tier opt (-march=native), or a prebuilt plugin
 * (hk build: portable unless native is asked for). */
typedef enum { HK_CC_OPT, HK_CC_PREBUILT, HK_CC_PREBUILT_NATIVE } hk_cc_kind;

/* Finds the compiler named by spec (NULL: $HK_CC, else "cc"; words split on
 * blanks, e.g. "ccache gcc") without running it when its identity is
 * already recorded in state_dir (keyed by the executable's path, inode,
 * size and modification time); otherwise runs `CC --version` once and
 * records it there (state_dir may be NULL: then always run). Never fails:
 * an unusable compiler is described in why_not. */
HK_INTERNAL void hk__cc_probe(const char *spec, const char *state_dir,
                              hk_cc_t *cc);
HK_INTERNAL void hk__cc_free(hk_cc_t *cc);

/* The flags of a build kind, one string (part of the cache key). */
HK_INTERNAL const char *hk__cc_flags(hk_cc_kind kind);

/* Compiles the C file src into the shared object out with the flags of
 * kind, linked with no C library but libm (and libc's memcpy family).
 * The compiler's messages are appended to msgs. Gives up after timeout_s
 * seconds, or soon after *cancel becomes non-zero (cancel may be NULL).
 * Returns 0, or -1 (compile failed, timed out, cancelled, or could not
 * run). Thread-safe; the compiler runs as a child process with no shell. */
HK_INTERNAL int hk__cc_build(const hk_cc_t *cc, hk_cc_kind kind,
                             const char *src, const char *out, hku_buf *msgs,
                             int timeout_s, const _Atomic int *cancel);

#endif
