/* run_args.h — hk run's arguments bound to one kernel's parameters.
 *
 * PARAM=VALUE and --out PARAM=FILE are matched to the kernel's parameters,
 * scalars parsed against their type's range, .npy inputs loaded and
 * checked (dtype, C order), n and every buffer's length settled, and the
 * out buffers allocated: after run_call_prepare, c->args is ready for
 * hk_call. As everywhere in the hk command (cli.h), a function that fails
 * prints "hk run: MESSAGE" on stderr and returns the exit status
 * (HK_EXIT_USER or HK_EXIT_INTERNAL); HK_EXIT_OK on success.
 */
#ifndef HK_TOOLS_RUN_ARGS_H
#define HK_TOOLS_RUN_ARGS_H

#include <stddef.h>
#include <stdint.h>

#include "hk.h"
#include "internal.h"
#include "npy.h"

/* One value of any hk type (a scalar argument). */
typedef hku_scalar run_scalar;

/* What the command line says about one parameter. */
typedef struct run_param {
  const hk_param_info_t *info;
  const char *value;    /* PARAM=VALUE, or NULL */
  const char *out_path; /* --out PARAM=FILE, or NULL */
  hk_npy_t npy;         /* in/inout: the file */
  void *owned;          /* out: the buffer hk allocated */
  size_t count;         /* buffers: element count */
  run_scalar s;
  /* out/inout: the shape the output has (hk run writes and prints it),
   * when shaped (the array path; raw and grid kernels) */
  int shaped;
  int ndim;
  size_t shape[HK_MAX_DIMS];
} run_param;

/* The call being prepared. */
typedef struct run_call {
  hk_kernel_t *kh;
  const hk_kernel_info_t *k;
  run_param *ps;  /* one per parameter */
  void **args;    /* hk_call's */
  int64_t *lens;  /* hk_kernel_lens's */
  int first;      /* the first in/inout buffer, -1 when there is none */
  size_t n;       /* the element count, once prepared */
  /* The array path (run_call_prepare_arrays): one descriptor per
   * parameter, for hk_call_arrays; NULL on the flat path. */
  hk_array_t *arr;
  hk_call_opts_t opts;
} run_call;

/* Sets up c for kernel kh (nothing bound yet). On failure (no memory) c
 * still may be given to run_call_free. */
int run_call_init(run_call *c, hk_kernel_t *kh);
/* Frees what c holds (the loaded files, the out buffers); c may be zeroed
 * or half set up. */
void run_call_free(run_call *c);
/* Binds the PARAM=VALUE arguments (assigns) and the --out PARAM=FILE ones
 * (outs) to parameters, and checks that every in, inout and scalar
 * parameter was given (a raw or grid kernel's integer scalars once the
 * files are read, by run_call_prepare, so as to say the value their
 * shapes give: hk_kernel_scalar_from_shapes). */
int run_call_bind(run_call *c, const char *const *assigns, int nassigns,
                  const char *const *outs, int nouts);
/* After run_call_bind: loads the .npy inputs, parses the scalars, settles
 * n (from the first in/inout
 * buffer, or from n_text, --n, when there is none), checks every buffer's
 * element count against n or its len expression, and allocates the out
 * buffers (zeroed); a raw or grid kernel's outputs are shaped as
 * hk_call_out_shape says (a len "M * N" is (M, N)). */
int run_call_prepare(run_call *c, const char *n_text);
/* The array path, for elementwise, reduction and rows kernels with an
 * in/inout buffer: after run_call_bind, loads the inputs as N-D arrays (C
 * or Fortran order; inout files are made C order), reads opts (axes,
 * keepdims) into c->opts, and allocates every out buffer in the shape
 * hk_call_out_shape gives (zeroed). c->arr is then ready for
 * hk_call_arrays. */
int run_call_prepare_arrays(run_call *c, const hk_call_opts_t *opts);
/* --as bf16: read .npy files of dtype <u2 given to bf16 parameters as bf16
 * bits (they are written back as <u2). */
void run_set_as_bf16(int on);
/* Runs the prepared array call. */
int run_call_arrays(run_call *c);
/* Runs the prepared array call on the GPU (--backend cuda): each array's
 * memory is copied to the device (its strides kept), the call runs there
 * with hk_call_arrays, and the out and inout arrays are copied back. */
int run_call_arrays_gpu(run_call *c);
/* After the call: checks the guard zone after each out buffer (see
 * alloc_out in run_args.c). HK_EXIT_OK when none was written to; else
 * says "KERNEL wrote past the end of out buffer Y (N elements)" and
 * returns status (the exit status a crash of this kernel has: hk.c). */
int run_call_check_guards(const run_call *c, int status);
/* hk run's exit status for the library's error code (hk_last_error says
 * what): HK_EINVAL, HK_EUNSUPPORTED and HK_ENOTFOUND are the user's
 * (1), anything else hk's (2). */
int run_lib_error(int code);

/* 1 when a PARAM=VALUE's VALUE is a number (or true/false) that names no
 * file: for an in buffer, a 0-d array holding it. */
int hk_run_is_value(const char *text);

/* Reads the .npy file path into *f (as hk_npy_read), and keeps a copy of
 * what was read for the first run_call_prepare* load of that path:
 * picking an instance by the files' dtypes (cmd_run.c) reads them before
 * the load, and a pipe (x=/dev/stdin) can be read once only. The caller
 * frees *f as usual. */
int run_npy_peek(const char *path, hk_npy_t *f, hku_diags *d);
/* Frees what run_npy_peek kept and no load took. */
void run_npy_forget(void);

#endif /* HK_TOOLS_RUN_ARGS_H */
