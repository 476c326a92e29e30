/* compiler_cc.h — the system C compiler (tier opt and `hk build`): how it
 * is found and identified, and its adapter of compiler.h. */
#ifndef HK_COMPILER_CC_H
#define HK_COMPILER_CC_H

#include "compiler.h"
#include "internal.h"

typedef struct hk_cc {
  char **argv;     /* the compiler command: $HK_CC (words), else "cc" */
  char *path;      /* the resolved executable, or NULL */
  char *identity;  /* its --version output: part of every cache key */
  char *cpu;       /* this CPU's model and feature flags (-march=native) */
  char *why_not;   /* when the compiler cannot be used: why, else NULL */
  char *workdir;   /* where build folders go: the state folder, $TMPDIR or
                      /tmp */
} hk_cc_t;

/* Finds the compiler named by spec (NULL: $HK_CC, else "cc"; words split on
 * blanks, e.g. "ccache gcc") without running it when its identity is
 * already recorded in state_dir (keyed by the executable's path, inode,
 * size and modification time); otherwise runs `CC --version` once and
 * records it there (state_dir may be NULL: then always run). Never fails:
 * an unusable compiler is described in why_not. */
HK_INTERNAL void hk__cc_probe(const char *spec, const char *state_dir,
                              hk_cc_t *cc);
HK_INTERNAL void hk__cc_free(hk_cc_t *cc);

/* The flags of a purpose, one string (part of the cache key). */
HK_INTERNAL const char *hk__cc_flags(hk_purpose_t purpose);

/* The compiler.h adapter of cc, which must outlive it: compile writes the
 * unit into a private folder under cc->workdir, runs the compiler there
 * (a child process, no shell; the flags of o->purpose, linked with no C
 * library but libm and libc's memcpy family; o->timeout_s, 300 s when 0;
 * o->cancel) and returns the shared object's bytes as the image, not yet
 * checked (elfcheck.h). */
HK_INTERNAL hk_compiler_t hk__compiler_cc(const hk_cc_t *cc);

/* The flags u's kernels add to those of every build ("" or more, each
 * with a blank before it; a static string): those of "fp": "fast"
 * (contraction and no -fwrapv; reassociation too unless the unit calls a
 * math function that reassociation would break). Part of the cache key
 * (build.c); the units of one batch have the same. */
HK_INTERNAL const char *hk__cc_unit_flags(const hkc_unit *u);

/* Compiles the C text (len bytes) as compile does (the flags of
 * o->purpose, then extra (hk__cc_unit_flags), its deadline and cancel)
 * into out's image, not yet checked.
 * HK_OK; HK_ECOMPILE with the compiler's raw output in msgs (or "no object
 * was built" in d); HK_EUNSUPPORTED, HK_EIO, HK_ENOMEM with the reason
 * about path in d. What batches of units (build_batch.c) are built by. */
HK_INTERNAL int hk__cc_build_text(const hk_cc_t *cc, const char *text,
                                  size_t len, const char *extra,
                                  const hk_compile_opts_t *o,
                                  const char *path, hk_object_t *out,
                                  hku_buf *msgs, hku_diags *d);
/* As hk__cc_build_text, with ntext C files linked into one object, each
 * compiled by a process of its own, o->jobs of them at once: the parts of
 * a big unit (hk__cc_split), hk build's x86-64-v3 copy of a portable
 * plugin's kernels (build.c). msgs holds the output of each compile that
 * failed, in order. */
HK_INTERNAL int hk__cc_build_texts(const hk_cc_t *cc, size_t ntext,
                                   const char *const *texts,
                                   const size_t *lens, const char *extra,
                                   const hk_compile_opts_t *o,
                                   const char *path, hk_object_t *out,
                                   hku_buf *msgs, hku_diags *d);

/* The most compiler processes one build runs at once. */
#define HK_MAX_JOBS 256

/* How many compiler processes tier opt and hk build may run at once:
 * HK_JOBS when it is a whole number in 1..HK_MAX_JOBS, else one per CPU
 * (hk__cpu_count, capped). */
HK_INTERNAL int hk__cc_jobs(void);

/* Into how many parts hk__cc_split cuts u's text for jobs processes: one
 * per HK_CC_PART_MIN instances (the compiler's start and the prelude cost
 * about as much as one elementwise instance, a tenth of a reduction), at
 * most HK_CC_PARTS_PER_JOB per process (parts of unequal cost even out
 * when each process takes the next part as it finishes); 1 when jobs < 2. */
#define HK_CC_PART_MIN 4
#define HK_CC_PARTS_PER_JOB 4
HK_INTERNAL int hk__cc_nparts(const hkc_unit *u, int jobs);

/* Cuts u's text into n parts (1 <= n <= hkc_unit_ninstances(u)) of about
 * equal weight (compiler_cc.c: an instance weighs one, plus one per 64 KB
 * of its code), each a translation unit of its own: pre, the text before the
 * first instance (the prelude), a run of instances, the text after the
 * last one (the first part only), and post (pre and post may be NULL).
 * Compiled and linked together (hk__cc_build_texts) they define what u
 * does. parts[0..n) are appended to. 0, or -1 when out of memory. */
HK_INTERNAL int hk__cc_split(const hkc_unit *u, int n, const char *pre,
                             const char *post, hku_buf *parts);

/* hk__cc_build_texts of the n texts in parts (HK_ENOMEM when one of them
 * ran out of memory as it was made). */
HK_INTERNAL int hk__cc_build_parts(const hk_cc_t *cc, hku_buf *parts, int n,
                                   const char *extra,
                                   const hk_compile_opts_t *o,
                                   const char *path, hk_object_t *out,
                                   hku_buf *msgs, hku_diags *d);

/* Stops every compile of this process, for good: kills the process group
 * of each compiler running now (SIGKILL), and makes every later one fail
 * at once ("interrupted"); their callers then clean up as after any
 * failed compile. Async-signal-safe: the hk command calls it from its
 * SIGINT, SIGTERM and SIGHUP handler (the compilers lead process groups
 * of their own, so the terminal's signal does not reach them). Returns
 * the number of groups killed. */
HK_INTERNAL int hk__cc_interrupt(void);

#endif /* HK_COMPILER_CC_H */
