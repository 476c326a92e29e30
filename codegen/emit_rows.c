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
 */
#include "abi.h"
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
  hkc_put_params(o, in, "", 1, 0);
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
    else if (off)
      hku_buf_printf(o, "hk_p_%s + %s, ", p->name, off);
    else
      hku_buf_printf(o, "hk_p_%s, ", p->name);
  }
  hku_buf_put(o, coop ? "n, hk_r, threadIdx.x, blockDim.x);\n" : "n, hk_r);\n");
}

/* ---- C ----------------------------------------------------------------------- */

/* hk_rows__NAME(buffers as hk_p_NAME, scalars, n, begin, end): the rows
 * [begin, end). */
static void put_rows_fn(hku_buf *o, const hkc_instance *in) {
  hku_buf_printf(o, "HK_INLINE void hk_rows__%s(", in->name);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_put(o, "size_t n, size_t hk_begin, size_t hk_end)\n{\n");
  hku_buf_put(o, "    for (size_t hk_r = hk_begin; hk_r < hk_end; ++hk_r)\n");
  put_row_call(o, in, 8, 0);
  hku_buf_put(o, "}\n\n");
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
  hku_buf_printf(o, "    (void)hk_partial;\n    hk_rows__%s(", nm);
  for (int i = 0; i < k->nparams; i++) {
    hkc_put_arg(o, in, i);
    hku_buf_put(o, ", ");
  }
  hku_buf_put(o, "n, hk_begin, hk_end);\n}\n\n");

  if (mode != HKC_EMIT_STDLIB) return;
  /* the typed function: inline when small, else whole rows per task */
  hkc_emit_typed_proto(in, o);
  hku_buf_put(o, ";\n");
  hkc_emit_typed_proto(in, o);
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
                 "};\n        hk__par_rows(" HK_ABI_RANGE
                 "%s, hk_args, rows, n, %uu);\n"
                 "        return;\n    }\n    hk_rows__%s(",
                 nm, fl, nm);
  for (int i = 0; i < k->nparams; i++)
    hku_buf_printf(o, "%s, ", k->params[i].name);
  hku_buf_put(o, "n, 0, rows);\n}\n\n");
}

/* ---- CUDA -------------------------------------------------------------------- */

void hkc_emit_rows_cuda(hku_buf *o, const hkc_instance *in,
                        hkc_emit_mode mode) {
  (void)mode; /* the same CUDA serves the stdlib and plugins */
  put_body_fn(o, in, "static __device__ __forceinline__ ", 0);
  hku_buf_printf(o, "extern \"C\" __global__ void " HK_ABI_CUDA_KERNEL "%s(",
                 in->name);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_put(o,
              "size_t n, size_t hk_rows)\n{\n"
              "    const size_t hk_stride = (size_t)blockDim.x * gridDim.x;\n"
              "    for (size_t hk_r = (size_t)blockIdx.x * blockDim.x + "
              "threadIdx.x; hk_r < hk_rows;\n"
              "         hk_r += hk_stride)\n");
  put_row_call(o, in, 8, 0);
  hku_buf_put(o, "}\n\n");
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
  hku_buf_put(o,
              "size_t n, size_t hk_rows)\n{\n"
              "    for (size_t hk_r = blockIdx.x; hk_r < hk_rows; hk_r += "
              "gridDim.x) {\n");
  put_row_call(o, in, 8, 1);
  hku_buf_put(o,
              "        __syncthreads(); /* the row's shared memory is free "
              "again */\n"
              "    }\n}\n\n");
}
