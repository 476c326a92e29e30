/* registry_fixture.h — what the registry's tests share (test_registry.c,
 * test_loader.c, test_opt.c, test_plugins.c, test_calls.c): a private temp
 * tree, file and process helpers, contexts, and the ops that compare a
 * kernel with the typed stdlib bit for bit (tests/registry_fixture.c).
 *
 * A test's main calls fixture_setup first (after handling its child-process
 * modes), runs its parts with PART, then fixture_teardown and CHECK_DONE.
 * Everything is written under a fresh mkdtemp folder (mode 0700) with its
 * own cache folders; the user's cache is never touched, and HK_CC,
 * HK_PLUGIN_PATH and HK_CACHE_DIR are ignored. Parts that need the system
 * compiler `cc` are skipped with a note when it is missing.
 *   HK_TEST_VERBOSE=1  prints the messages the checks look at;
 *   HK_TEST_KEEP=1     keeps the temp folder.
 */
#ifndef HK_TEST_REGISTRY_FIXTURE_H
#define HK_TEST_REGISTRY_FIXTURE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "check.h"
#include "hk.h"

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* The sizes every op is checked at, and the largest. */
extern const size_t sizes[6];
#define NMAX ((size_t)(1u << 20) + 5)

extern char g_root[64];    /* the test's temp folder */
extern char g_src[4096];   /* the source tree */
extern char g_hk[4096];    /* the hk command */
extern char g_self[4096];  /* this program (for its child processes) */
extern int g_have_cc;      /* the system compiler `cc` is there */
extern int g_verbose;      /* HK_TEST_VERBOSE: print the messages checked */

/* The inputs (NMAX random elements each; gpos32 in [0.5, 4)) and two
 * output buffers of NMAX 8-byte elements. */
extern float *gx32, *gy32, *gpos32;
extern void *g_ref, *g_got;

/* ---- Setup ------------------------------------------------------------ */

/* Makes the test's world: the environment made hermetic, the paths found,
 * the temp folder /tmp/hk_NAME_XXXXXX made, the inputs filled. Returns NULL,
 * or why the test cannot run (for CHECK_SKIP). */
const char *fixture_setup(const char *name);
/* Fills the inputs and allocates the output buffers (fixture_setup does
 * it; child processes call it alone): 0, or -1 without memory for the
 * output buffers (the inputs' allocation exits 2). */
int fixture_data(void);
/* Frees the inputs and output buffers. */
void fixture_data_free(void);
/* Prints the parts' times, frees everything and removes the temp folder
 * (unless HK_TEST_KEEP=1). */
void fixture_teardown(void);
/* Records how long part label took (PART does it). */
void fixture_timed(const char *label, double seconds);

/* Runs call as the part named label, timed. */
#define PART(label, call)                      \
  do {                                         \
    double part_t0_ = now_s();                 \
    call;                                      \
    fixture_timed(label, now_s() - part_t0_);  \
  } while (0)

/* ---- Small helpers ----------------------------------------------------- */

/* Prints a message the test checks, when asked to (HK_TEST_VERBOSE=1). */
void show(const char *what, const char *msg);
/* root/rel in one of 16 rotating buffers: for immediate use as an argument
 * (main thread only); PATH() keeps a path. */
const char *P(const char *rel);
/* A path under the root, in a buffer of the caller's. */
#define PATH(var, rel) \
  char var[4200];      \
  snprintf(var, sizeof var, "%s/%s", g_root, rel)
double now_s(void);
void sleep_ms(int ms);
/* Writes text to path as editors do: a temp name, then renamed over it. */
void write_text(const char *path, const char *text);
/* tests/plugin_fixtures/NAME, copied to path. */
void copy_fixture(const char *name, const char *to);
/* Starts argv[0] (searched in PATH) with stdout and stderr to log (or
 * /dev/null); barrier_fd >= 0 becomes the child's fd 3. Returns the pid, or
 * -1. */
pid_t spawn(char *const argv[], const char *log, int barrier_fd);
/* The exit status of pid (-1 when it did not exit normally). */
int wait_exit(pid_t pid);
/* Runs argv to its end, its output to log; its exit status. */
int run_logged(char *const argv[], const char *log);
/* Prints the file log on stderr. */
void print_log(const char *log);
/* cc -shared -fPIC -nostdlib SRC -o OUT [define]; 0 on success. */
int cc_shared(const char *src, const char *out, const char *define);

/* ---- Contexts ----------------------------------------------------------- */

/* A context whose plugin folders are {dir} (dir NULL: none); NULL (and a
 * failed check) when it cannot be made. */
hk_context_t *mkctx(hk_tier_t tier, const char *dir, const char *cache,
                    unsigned flags, const char *cc);
/* mkctx with the log going to check.h's log. */
hk_context_t *mkctx_logged(hk_tier_t tier, const char *dir,
                           const char *cache);
/* A context of plugin folder dir made with all of these (a failed check
 * when it cannot be made; cache and cc may be NULL). */
hk_context_t *mkctx_with(hk_tier_t tier, const char *dir, const char *cache,
                         unsigned flags, const char *cc, hk_log_fn log);
/* The kernel name (a failed check when there is none). */
hk_kernel_t *find(hk_context_t *ctx, const char *name);
/* Is there a kernel name? */
int found(hk_context_t *ctx, const char *name);
/* k's note (a static buffer). */
const char *note_of(const hk_kernel_t *k);

/* ---- The ops ------------------------------------------------------------ */

enum {
  OP_ADD, OP_MUL, OP_EXP, OP_TANH, OP_RELU, OP_AXPY, OP_SCALE, OP_SUM,
  OP_MAX, OP_DOT, OP_MEAN, OP_FILL, OP_ARANGE, OP_SOFTMAX
};

/* The next number of a xorshift generator. */
uint64_t rnd(uint64_t *s);
/* k (a kernel computing op on type t) against the typed stdlib function at
 * every size: bit for bit. Returns the number of sizes that differ. */
int check_op(const char *what, const hk_kernel_t *k, int op,
             hk_dtype_t t, const size_t *ns, size_t count);

/* ---- Kernel files --------------------------------------------------------- */

/* The 1-based line and column of needle in text. */
void pos_of(const char *text, const char *needle, int *line, int *col);
/* Expects msg to hold "PATH:LINE:COL: error: " + what. */
void check_at(const char *msg, const char *path, int line, int col,
              const char *what);
/* An f32 x -> out elementwise kernel file: printf format of NAME, BODY. */
#define GOOD_JSON_FMT \
    "{\"schema_version\": 1, \"name\": \"%s\", \"kind\": \"elementwise\",\n" \
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},\n" \
    "            {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],\n" \
    " \"body\": \"%s\"}\n"
/* Writes GOOD_JSON_FMT with name and body to path. */
void write_kernel(const char *path, const char *name, const char *body);
/* Calls name (an f32 x -> out kernel) at n = 1000 and checks out = f * x. */
int runs_times(hk_context_t *ctx, const char *name, float f);

#endif /* HK_TEST_REGISTRY_FIXTURE_H */
