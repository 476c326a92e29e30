/* emit_rows.c — rows kernel instances to C and CUDA C (emit.h, abi.h).
 *
 * A rows kernel's body runs once per row. Each buffer parameter's name is a
 * pointer to the row's part of it: base + r * n ("full"), base + r ("one")
 * or base ("shared"); n is the row length and row the row's index.
 *
 * C: the body becomes hk_body__NAME(row pointers, scalars, n, row), a static
 * inline function the compiler optimises as a whole (its loops vectorise as
 * in a hand-written function); hk_rows__NAME(buffers, scalars, n, begin,
 * end) runs it for rows [begin, end). The range entry point (abi.h) is
 * hk_rows__NAME over its argument array; the typed stdlib function
 * hk_NAME(params..., rows, n) runs it inline for small calls and through
 * hk__par_rows (whole rows per task) for large ones, so both paths give the
 * same bits for any thread count.
 * f16 and bf16 buffers are staged: the body sees float copies of its row
 * (hk_t_NAME), in scratch memory the core hands the range entry point as
 * its partial (abi.h: rows, 4 bytes an element for each such buffer,
 * hkc_acc_size); an in or inout row is converted before the body, an out
 * row zeroed, and an out or inout row rounded back after it, once.
 * CUDA: the same body as a __device__ function, and hk_cuda__NAME(params...,
 * n, rows): one thread per row, a grid-stride loop over the rows. A kernel
 * with a "cuda" body also gets its cooperative entry hk_cuda_crow__NAME
 * (same parameters): a thread block per row, the blocks grid-stride over
 * the rows, the body as hk_cbody__NAME(row pointers, scalars, n, row,
 * hk_lane, hk_lanes) run by every thread of the block (hk_lane is
 * threadIdx.x, hk_lanes blockDim.x, which the launcher sets to
 * hk_abi_rows_lanes(n)); the block's barrier ends each row, so a body may
 * reuse its __shared__ memory from row to row. The launcher takes the
 * cooperative entry where the code has one (core/cuda/launch.c).
 * Staged instances' CUDA entries take one more argument, float
 * *hk_scratch: nstaged * max(n, 1) floats for each thread (hk_cuda__) or
 * block (hk_cuda_crow__) of the launch, which hold its row's copies as
 * the CPU's scratch does; a block loads a row's copies together, then a
 * barrier, the body, a barrier, the stores. The same copies and body give
 * the CPU's bits.
 */
#include <stdio.h>

#include "abi.h"
#include "codegen.h"
#include "emit.h"

#define ct hkc_param_ctype
#define is_buffer hkc_is_buffer

/* The offset expression of parameter p's row hk_r: "hk_r * n", "hk_r",
 * or NULL for a shared buffer. */
static const char *row_offset(const hkc_param *p) {
  switch (p->row) {
    case HK_ROW_ONE: return "hk_r";
    case HK_ROW_SHARED: return NULL;
    case HK_ROW_FULL: break;
  }
  return "hk_r * n";
}

/* The body as a function of one row: QUAL void hk_body__NAME(const T *x,
 * T *y, const T eps, const size_t n, const size_t row); with coop, the
 * "cuda" body as QUAL void hk_cbody__NAME(..., const size_t row, const
 * unsigned hk_lane, const unsigned hk_lanes). */
static void put_body_fn(hku_buf *o, const hkc_instance *in, const char *qual,
                        int coop) {
  const hkc_kernel *k = in->k;
  const hkc_src *code = coop ? &k->cuda : &k->body;
  const hkc_src *srcs[] = {code};
  hku_buf_printf(o, "%svoid hk_%sbody__%s(", qual, coop ? "c" : "", in->name);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (hkc_rows_staged(in, p))
      hku_buf_printf(o, "%sfloat *%s, ", p->role == HK_ROLE_IN ? "const " : "",
                     p->name);
    else {
      hkc_put_param(o, in, p, "", 1);
      hku_buf_put(o, ", ");
    }
  }
  hku_buf_printf(o, "const size_t n, const size_t row%s)\n{\n",
                 coop ? ", const unsigned hk_lane, const unsigned hk_lanes"
                      : "");
  hkc_put_scalar_locals(o, in, 4);
  hkc_put_holders(o, in, srcs, 1, 4);
  hkc_put_voids(o, in, HKC_ROLES_ALL, 4);
  hku_buf_put(o, "    (void)n;\n    (void)row;\n");
  if (coop) hku_buf_put(o, "    (void)hk_lane;\n    (void)hk_lanes;\n");
  hku_buf_put(o, "    {\n");
  hkc_put_code(o, code, 8);
  hku_buf_put(o, "    }\n}\n\n");
}

/* "hk_body__NAME(hk_p_x + hk_r * n, ..., eps, n, hk_r);" indented by ind:
 * one row's call, buffers named PREFIX + name, scalars by name; with coop,
 * hk_cbody__NAME's, the lane and lanes last. */
static void put_row_call(hku_buf *o, const hkc_instance *in, int ind,
                         int coop) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "%*shk_%sbody__%s(", ind, "", coop ? "c" : "", in->name);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    const char *off = row_offset(p);
    if (!is_buffer(p)) /* passed on as stored */
      hku_buf_printf(o, "%s%s, ", hkc_scalar_pre(in, p), p->name);
    else if (hkc_rows_staged(in, p))
      hku_buf_printf(o, "hk_t_%s, ", p->name);
    else if (off)
      hku_buf_printf(o, "hk_p_%s + %s, ", p->name, off);
    else
      hku_buf_printf(o, "hk_p_%s, ", p->name);
  }
  hku_buf_put(o, coop ? "n, hk_r, threadIdx.x, blockDim.x);\n" : "n, hk_r);\n");
}

/* ---- C ----------------------------------------------------------------------- */

/* The element count of staged buffer p's row: "1" or "n". */
static const char *row_len(const hkc_param *p) {
  return p->row == HK_ROW_ONE ? "1" : "n";
}

/* A loop over a staged row's elements hk_j: C's, a CUDA thread's, or a
 * CUDA block's, its threads blockDim.x apart; f16_n: f16 rows by the C
 * prelude's block conversions (hk_f16_to_f32_n ...) instead. */
typedef struct row_loop {
  const char *from, *step;
  int f16_n;
} row_loop;
static const row_loop LOOP_C = {"0", "++hk_j", 1};
static const row_loop LOOP_THREAD = {"0", "++hk_j", 0};
static const row_loop LOOP_BLOCK = {"threadIdx.x", "hk_j += blockDim.x", 0};

/* "for (size_t hk_j = ...; hk_j < LEN; ...)" over staged buffer p's row,
 * indented by ind. */
static void put_loop(hku_buf *o, const row_loop *loop, const hkc_param *p,
                     int ind) {
  hku_buf_printf(o, "%*sfor (size_t hk_j = %s; hk_j < %s; %s)", ind, "",
                 loop->from, row_len(p), loop->step);
}

/* hk_t_NAME = staged buffer p's row (row hk_r, or the shared one),
 * widened, by loop. */
static void put_row_load(hku_buf *o, const hkc_instance *in,
                         const hkc_param *p, const row_loop *loop, int ind) {
  hk_dtype_t t = hkc_param_type(in, p);
  const char *off = row_offset(p);
  char src[160];
  snprintf(src, sizeof src, "hk_p_%s%s%s", p->name, off ? " + " : "",
           off ? off : "");
  if (t == HK_F16 && loop->f16_n) {
    hku_buf_printf(o, "%*shk_f16_to_f32_n(%s, hk_t_%s, %s);\n", ind, "", src,
                   p->name, row_len(p));
    return;
  }
  put_loop(o, loop, p, ind);
  hku_buf_printf(o, "\n%*s    hk_t_%s[hk_j] = %s(%s)[hk_j]%s;\n", ind, "",
                 p->name, hkc_load_pre(t), src, hkc_conv_post(t));
}

/* An out row's float copy = 0, as an elementwise out starts. */
static void put_row_zero(hku_buf *o, const hkc_param *p, const row_loop *loop,
                         int ind) {
  put_loop(o, loop, p, ind);
  hku_buf_printf(o, " hk_t_%s[hk_j] = 0;\n", p->name);
}

/* Row hk_r of staged buffer p = its float copy, rounded to nearest even,
 * by loop as put_row_load's. */
static void put_row_store(hku_buf *o, const hkc_instance *in,
                          const hkc_param *p, const row_loop *loop, int ind) {
  hk_dtype_t t = hkc_param_type(in, p);
  const char *off = row_offset(p);
  if (t == HK_F16 && loop->f16_n) {
    hku_buf_printf(o, "%*shk_f32_to_f16_n(hk_t_%s, hk_p_%s + %s, %s);\n", ind,
                   "", p->name, p->name, off, row_len(p));
    return;
  }
  put_loop(o, loop, p, ind);
  hku_buf_printf(o, "\n%*s    (hk_p_%s + %s)[hk_j] = %shk_t_%s[hk_j]%s;\n",
                 ind, "", p->name, off, hkc_store_pre(t), p->name,
                 hkc_conv_post(t));
}

/* The staged buffers' float copies of a row as hk_t_NAME, max(n, 1)
 * floats apart from hk_scratch on (unit NULL), or from hk_scratch +
 * unit * nstaged * max(n, 1) on (a GPU thread's or block's own). */
static void put_staged_ptrs(hku_buf *o, const hkc_instance *in,
                            const char *unit) {
  const hkc_kernel *k = in->k;
  const int nstaged = hkc_rows_nstaged(in);
  hku_buf_put(o, "    const size_t hk_w = n ? n : 1;\n");
  for (int i = 0, at = 0; i < k->nparams; i++) {
    if (!hkc_rows_staged(in, &k->params[i])) continue;
    if (unit)
      hku_buf_printf(o,
                     "    float *const hk_t_%s = hk_scratch + (%s * %d + %d) "
                     "* hk_w;\n",
                     k->params[i].name, unit, nstaged, at++);
    else
      hku_buf_printf(o, "    float *const hk_t_%s = hk_scratch + %d * hk_w;\n",
                     k->params[i].name, at++);
  }
}

/* The shared staged buffers' copies, loaded once (the same for every
 * row). */
static void put_shared_loads(hku_buf *o, const hkc_instance *in,
                             const row_loop *loop, int ind) {
  for (int i = 0; i < in->k->nparams; i++) {
    const hkc_param *p = &in->k->params[i];
    if (hkc_rows_staged(in, p) && p->row == HK_ROW_SHARED)
      put_row_load(o, in, p, loop, ind);
  }
}

/* Before row hk_r's body: its in and inout copies loaded, its out copies
 * zeroed (shared buffers excepted: put_shared_loads). */
static void put_row_loads(hku_buf *o, const hkc_instance *in,
                          const row_loop *loop, int ind) {
  for (int i = 0; i < in->k->nparams; i++) {
    const hkc_param *p = &in->k->params[i];
    if (!hkc_rows_staged(in, p) || p->row == HK_ROW_SHARED) continue;
    if (p->role == HK_ROLE_OUT)
      put_row_zero(o, p, loop, ind);
    else
      put_row_load(o, in, p, loop, ind);
  }
}

/* After row hk_r's body: its out and inout copies stored. */
static void put_row_stores(hku_buf *o, const hkc_instance *in,
                           const row_loop *loop, int ind) {
  for (int i = 0; i < in->k->nparams; i++) {
    const hkc_param *p = &in->k->params[i];
    if (hkc_rows_staged(in, p) && p->role != HK_ROLE_IN)
      put_row_store(o, in, p, loop, ind);
  }
}

/* hk_rows__NAME(buffers as hk_p_NAME, scalars, n, begin, end): the rows
 * [begin, end). */
static void put_rows_fn(hku_buf *o, const hkc_instance *in) {
  const int staged = hkc_rows_nstaged(in);
  hku_buf_printf(o, "HK_INLINE void hk_rows__%s(", in->name);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_printf(o, "size_t n, size_t hk_begin, size_t hk_end%s)\n{\n",
                 staged ? ", float *hk_scratch" : "");
  if (!staged) {
    hku_buf_put(o, "    for (size_t hk_r = hk_begin; hk_r < hk_end; ++hk_r)\n");
    put_row_call(o, in, 8, 0);
    hku_buf_put(o, "}\n\n");
    return;
  }
  /* each staged buffer's float copy of a row */
  put_staged_ptrs(o, in, NULL);
  put_shared_loads(o, in, &LOOP_C, 4);
  hku_buf_put(o, "    for (size_t hk_r = hk_begin; hk_r < hk_end; ++hk_r) {\n");
  put_row_loads(o, in, &LOOP_C, 8);
  put_row_call(o, in, 8, 0);
  put_row_stores(o, in, &LOOP_C, 8);
  hku_buf_put(o, "    }\n}\n\n");
}

void hkc_emit_rows_c(hku_buf *o, const hkc_instance *in, hkc_emit_mode mode) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  unsigned fl = hkc_is_heavy(k) ? HK_ABI_HEAVY : 0u;

  put_body_fn(o, in, "HK_INLINE ", 0);
  put_rows_fn(o, in);

  /* range(args, n, begin, end, partial): rows [begin, end) (abi.h) */
  hku_buf_printf(o,
                 "%svoid " HK_ABI_RANGE "%s(void *const *hk_args, size_t n, "
                 "size_t hk_begin, size_t hk_end, void *hk_partial)\n{\n",
                 mode == HKC_EMIT_STDLIB ? "static " : "", nm);
  const int staged = hkc_rows_nstaged(in);
  hku_buf_printf(o, "    (void)hk_partial;\n    hk_rows__%s(", nm);
  for (int i = 0; i < k->nparams; i++) {
    hkc_put_arg(o, in, i);
    hku_buf_put(o, ", ");
  }
  hku_buf_printf(o, "n, hk_begin, hk_end%s);\n}\n\n",
                 staged ? ", (float *)hk_partial" : "");

  if (mode != HKC_EMIT_STDLIB) return;
  /* the typed function: inline when small, else whole rows per task */
  hkc_emit_typed_proto(in, o);
  hku_buf_put(o, ";\n");
  hkc_emit_typed_proto(in, o);
  /* staged: always through hk__par_rows, which holds each thread's
   * scratch (and the whole call inline when it is small) */
  if (staged)
    hku_buf_printf(o, "\n{\n    {\n        void *const hk_args[%d] = {",
                   k->nparams);
  else
    hku_buf_printf(o,
                   "\n{\n    if (rows > 1 && rows * n >= hk__par_min[%u]) {\n"
                   "        void *const hk_args[%d] = {",
                   fl, k->nparams);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hku_buf_printf(o, "%s(void *)%s%s", i ? ", " : "", is_buffer(p) ? "" : "&",
                   p->name);
  }
  hku_buf_printf(o,
                 "};\n        (void)hk__par_rows(" HK_ABI_RANGE
                 "%s, hk_args, rows, n, %uu, %zuu, \"hk_%s\");\n"
                 "        return;\n    }\n",
                 nm, fl, hkc_acc_size(in), nm);
  if (staged) {
    hku_buf_put(o, "}\n\n");
    return;
  }
  hku_buf_printf(o, "    hk_rows__%s(", nm);
  for (int i = 0; i < k->nparams; i++)
    hku_buf_printf(o, "%s, ", k->params[i].name);
  hku_buf_put(o, "n, 0, rows);\n}\n\n");
}

/* ---- CUDA -------------------------------------------------------------------- */

void hkc_emit_rows_cuda(hku_buf *o, const hkc_instance *in,
                        hkc_emit_mode mode) {
  (void)mode; /* the same CUDA serves the stdlib and plugins */
  const int staged = hkc_rows_nstaged(in);
  const char *scratch = staged ? ", float *hk_scratch" : "";
  put_body_fn(o, in, "static __device__ __forceinline__ ", 0);
  hku_buf_printf(o, "extern \"C\" __global__ void " HK_ABI_CUDA_KERNEL "%s(",
                 in->name);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_printf(o,
                 "size_t n, size_t hk_rows%s)\n{\n"
                 "    const size_t hk_stride = (size_t)blockDim.x * "
                 "gridDim.x;\n"
                 "    const size_t hk_g = (size_t)blockIdx.x * blockDim.x + "
                 "threadIdx.x;\n",
                 scratch);
  if (!staged) {
    hku_buf_put(o,
                "    for (size_t hk_r = hk_g; hk_r < hk_rows; hk_r += "
                "hk_stride)\n");
    put_row_call(o, in, 8, 0);
    hku_buf_put(o, "}\n\n");
  } else { /* the thread's own copies: as the C rows function's (a
            * thread without a row has none: the launch sizes them by the
            * rows) */
    hku_buf_put(o, "    if (hk_g >= hk_rows) return;\n");
    put_staged_ptrs(o, in, "hk_g");
    put_shared_loads(o, in, &LOOP_THREAD, 4);
    hku_buf_put(o,
                "    for (size_t hk_r = hk_g; hk_r < hk_rows; hk_r += "
                "hk_stride) {\n");
    put_row_loads(o, in, &LOOP_THREAD, 8);
    put_row_call(o, in, 8, 0);
    put_row_stores(o, in, &LOOP_THREAD, 8);
    hku_buf_put(o, "    }\n}\n\n");
  }
  if (!in->k->cuda.text) return;

  /* the cooperative entry: a block a row. __launch_bounds__ keeps the
   * registers within what HK_ABI_ROWS_LANES_MAX threads may have, which
   * the launch of long rows asks for. */
  put_body_fn(o, in, "static __device__ __forceinline__ ", 1);
  hku_buf_printf(o,
                 "extern \"C\" __global__ void __launch_bounds__(%d) "
                 HK_ABI_CUDA_ROWS_COOP "%s(",
                 HK_ABI_ROWS_LANES_MAX, in->name);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_printf(o, "size_t n, size_t hk_rows%s)\n{\n", scratch);
  if (staged) {
    /* the block's own copies, which its threads load and store together,
     * a barrier between those and the body */
    put_staged_ptrs(o, in, "(size_t)blockIdx.x");
    put_shared_loads(o, in, &LOOP_BLOCK, 4);
  }
  hku_buf_put(o,
              "    for (size_t hk_r = blockIdx.x; hk_r < hk_rows; hk_r += "
              "gridDim.x) {\n");
  if (staged) {
    put_row_loads(o, in, &LOOP_BLOCK, 8);
    hku_buf_put(o, "        __syncthreads();\n");
  }
  put_row_call(o, in, 8, 1);
  if (staged) {
    hku_buf_put(o, "        __syncthreads();\n");
    put_row_stores(o, in, &LOOP_BLOCK, 8);
  }
  hku_buf_put(o,
              "        __syncthreads(); /* the row's shared memory is free "
              "again */\n"
              "    }\n}\n\n");
}
