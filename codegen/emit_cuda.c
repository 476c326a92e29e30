/* emit_cuda.c — kernel instances to CUDA C (compiled by nvcc or NVRTC).
 *
 * Every instance with the cuda target becomes extern "C" __global__
 * functions, launched with 1-D blocks of HK_ABI_CUDA_BLOCK threads (abi.h):
 *   elementwise  hk_cuda__NAME(params..., n): grid-stride loops running the
 *                same body as the C version (hk_body__NAME), with 128-bit
 *                vector loads and stores when the buffers are aligned;
 *                and hk_cuda_nd__NAME(params..., g, n): the same body over
 *                strided and broadcast arrays, each buffer reached through
 *                the strides in g (emit_nd below, abi.h);
 *   reduction    hk_cuda_part__NAME(ins and scalars..., partials, n): each
 *                block reduces a grid-stride share into partials[block]
 *                through shared memory; then hk_cuda_merge__NAME(partials,
 *                count, out, scalars..., n), one block, combines the partials,
 *                finalizes and stores out[0]. Axis reductions run rows of n
 *                contiguous elements: long rows (and short ones when they
 *                are few) as row blockIdx.y in the part kernel, one merge
 *                block per row storing out[row]; short rows by
 *                hk_cuda_wrow__NAME(params..., n, rows), one launch, a warp
 *                per row (grid-stride), which finalizes and stores out[row]
 *                itself (core/cuda/launch.c chooses);
 *   raw          hk_cuda__NAME(params..., n): the author's CUDA body, which
 *                decides itself which elements each thread takes;
 *   rows         hk_cuda__NAME(params..., n, rows): emit_rows.c, one thread
 *                per row; with a "cuda" body also hk_cuda_crow__NAME (same
 *                parameters), a block per row, which the launcher prefers.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "emit.h"

#define ct hkc_param_ctype
#define is_buffer hkc_is_buffer

/* The elements per vector step of an elementwise instance (abi.h). */
static int vec_lanes(const hkc_instance *in) {
  size_t widest = 1;
  for (int i = 0; i < in->k->nparams; i++) {
    const hkc_param *p = &in->k->params[i];
    size_t sz = hk_dtype_size(hkc_param_type(in, p));
    if (is_buffer(p) && sz > widest) widest = sz;
  }
  return (int)hk_abi_cuda_lanes(widest);
}

/* hk_body__NAME: the body once, in a device function that every element
 * goes through, so that it appears once in the source (and in compile
 * errors). */
static void emit_body_fn(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const hkc_src *srcs[] = {&k->body};

  hku_buf_printf(o, "static __device__ __forceinline__ void hk_body__%s(",
                 in->name);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_IN || p->role == HK_ROLE_SCALAR)
      hku_buf_printf(o, "const %s %s, ", ct(in, p), p->name);
    else
      hku_buf_printf(o, "%s &%s, ", ct(in, p), p->name);
  }
  hku_buf_put(o, "const size_t i, const size_t n)\n{\n");
  hkc_put_holders(o, in, srcs, 1, 4);
  hkc_put_voids(o, in, HKC_ROLES_ALL, 4);
  hku_buf_put(o, "    (void)i;\n    (void)n;\n    do {\n");
  hkc_put_code(o, &k->body, 8);
  hku_buf_put(o, "    } while (0);\n}\n\n");
}

/* How the kernel names one element of buffer NAME: PRE NAME POST, as
 * "hk_p_" "x" "[i]" or "hk_v_" "x" ".v[hk_l]". */
typedef struct elem_ref {
  const char *pre, *post;
} elem_ref;

/* The locals of one element for out and inout buffers, indented by ind:
 * "float y = 0;", "float z = hk_p_z[i];". */
static void put_write_locals(hku_buf *o, const hkc_instance *in, int ind,
                             elem_ref e) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (p->role == HK_ROLE_OUT)
      hku_buf_printf(o, "%*s%s %s = 0;\n", ind, "", ct(in, p), p->name);
    else if (p->role == HK_ROLE_INOUT)
      hku_buf_printf(o, "%*s%s %s = %s%s%s%s%s;\n", ind, "", ct(in, p),
                     p->name, hkc_load_pre(t), e.pre, p->name, e.post,
                     hkc_conv_post(t));
  }
}

/* "hk_body__NAME(args..., AT, n);" with each in buffer's element. */
static void put_call(hku_buf *o, const hkc_instance *in, int ind, elem_ref e,
                     const char *at) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "%*shk_body__%s(", ind, "", in->name);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (p->role == HK_ROLE_IN)
      hku_buf_printf(o, "%s%s%s%s%s, ", hkc_load_pre(t), e.pre, p->name,
                     e.post, hkc_conv_post(t));
    else
      hku_buf_printf(o, "%s, ", p->name);
  }
  hku_buf_printf(o, "%s, n);\n", at);
}

/* put_call, then the stores of the written buffers' elements. */
static void put_body_call(hku_buf *o, const hkc_instance *in, int ind,
                          elem_ref e, const char *at) {
  const hkc_kernel *k = in->k;
  put_call(o, in, ind, e, at);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT)
      hku_buf_printf(o, "%*s%s%s%s = %s%s%s;\n", ind, "", e.pre, p->name,
                     e.post, hkc_store_pre(t), p->name, hkc_conv_post(t));
  }
}

/* The vector part of the kernel: when every buffer is aligned to its
 * vector, L elements at a time with 128-bit loads and stores, as a
 * grid-stride loop; hk_done counts the elements it took. */
static void emit_vector_part(hku_buf *o, const hkc_instance *in, int L) {
  const hkc_kernel *k = in->k;
  hku_buf_put(o, "    if (1");
  for (int i = 0; i < k->nparams; i++)
    if (is_buffer(&k->params[i]))
      hku_buf_printf(o, " && hk_aligned<%s, %d>(hk_p_%s)",
                     hkc_param_stype(in, &k->params[i]), L, k->params[i].name);
  hku_buf_printf(o,
                 ") {\n"
                 "        const size_t hk_nv = n / %d;\n"
                 "        for (size_t hk_v = hk_tid; hk_v < hk_nv; hk_v += "
                 "hk_stride) {\n",
                 L);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_SCALAR) continue;
    const char *st = hkc_param_stype(in, p);
    if (p->role == HK_ROLE_OUT)
      hku_buf_printf(o, "            hk_vec<%s, %d> hk_v_%s;\n", st, L,
                     p->name);
    else
      hku_buf_printf(o,
                     "            %shk_vec<%s, %d> hk_v_%s = ((const hk_vec<%s, "
                     "%d> *)hk_p_%s)[hk_v];\n",
                     p->role == HK_ROLE_IN ? "const " : "", st, L, p->name, st,
                     L, p->name);
  }
  hku_buf_printf(o,
                 "#pragma unroll\n"
                 "            for (int hk_l = 0; hk_l < %d; ++hk_l) {\n",
                 L);
  const elem_ref lane = {"hk_v_", ".v[hk_l]"};
  char at[32];
  snprintf(at, sizeof at, "hk_v * %d + hk_l", L);
  put_write_locals(o, in, 16, lane);
  put_body_call(o, in, 16, lane, at);
  hku_buf_put(o, "            }\n");
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT)
      hku_buf_printf(o,
                     "            ((hk_vec<%s, %d> *)hk_p_%s)[hk_v] = hk_v_%s;\n",
                     hkc_param_stype(in, p), L, p->name, p->name);
  }
  hku_buf_printf(o,
                 "        }\n"
                 "        hk_done = hk_nv * %d;\n"
                 "    }\n",
                 L);
}

/* The buffer parameters of an instance. */
static int nbuffers(const hkc_instance *in) {
  int nb = 0;
  for (int i = 0; i < in->k->nparams; i++) nb += is_buffer(&in->k->params[i]);
  return nb;
}

/* The kernel's arguments, passed on: "hk_p_x, alpha, ". */
static void put_args(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hku_buf_printf(o, "%s%s, ", is_buffer(p) ? "hk_p_" : hkc_scalar_pre(in, p),
                   p->name);
  }
}

/* The N-D entry, hk_cuda_nd__NAME(params..., const hk_nd<NB> hk_g, n): the
 * flat kernel's parameters, then the iteration (abi.h: hk_abi_cuda_nd_t,
 * filled by core/cuda/launch.c), and the element count.
 *
 * Why this shape. Consecutive threads take consecutive flat indices of the
 * C order, as in the flat kernel, so the innermost axis is walked by
 * consecutive threads: coalesced wherever a buffer's inner stride is 0 or
 * 1, whatever the shape (a short inner axis idles no thread, as a thread
 * per column of a 2-D launch would). A thread finds its element's offsets
 * by dividing the flat index by the axis lengths, innermost first, each
 * division a multiply-high, an add and a shift by constants the host
 * computed (hk_abi_cuda_divider): no hardware division, 64-bit or other,
 * per element. The host has collapsed the shape (core/arrays.c), so most
 * calls have 2 axes ((R, C) + (C,), x.T, a slice; a 1-D one gets a
 * leading 1): one division. Two loops, by what the host found:
 *   2 axes, n and every offset within 32 bits: 32-bit math, U elements a
 *     thread a step (hk_abi_cuda_nd_unroll);
 *   anything else (more axes, n >= 2^31, offsets beyond an int): 64-bit
 *     math, the axes beyond g.h.nd skipped, 1 element.
 * A thread's elements lie blockDim.x apart, so each of its accesses is
 * coalesced across the warp, and all their loads are issued before the
 * first body runs: the memory-level parallelism the flat kernel has from
 * its 128-bit loads. (Each element of a loop's unroll is a copy of the
 * body, and the rarer loop takes one: with U in three loops, nvcc took
 * 5.4x as long over the stdlib as without N-D entries; with U, 2 and 1,
 * 2.4x.) Loads
 * before stores also make an out array that is an in array (the one
 * overlap check_overlaps allows) safe: every element is read and written
 * by one thread, at one flat index. The body gets the same values through
 * the same conversions as in the flat kernel, and the flat kernel's i and
 * n: the results are the flat kernel's bit for bit. */
static void emit_nd(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  const int nb = nbuffers(in);
  const int U = (int)hk_abi_cuda_nd_unroll(nb);

  hku_buf_printf(o,
                 "/* hk_cuda_nd__%s's loop: ND axes (2; or 8: hk_g.h.nd of "
                 "them), index type I, offset type O, U elements a thread a "
                 "step */\n"
                 "template <int ND, typename I, typename O, int U>\n"
                 "static __device__ __forceinline__ void hk_nd_run__%s(",
                 nm, nm);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_printf(o, "const hk_nd<%d> &hk_g, const size_t n)\n{\n", nb);
  hkc_put_scalar_locals(o, in, 4);
  hku_buf_printf(
      o,
      "    const I hk_n = (I)n;\n"
      "    const I hk_step = (I)gridDim.x * (blockDim.x * U);\n"
      "    for (I hk_t = (I)blockIdx.x * (blockDim.x * U) + threadIdx.x; "
      "hk_t < hk_n; hk_t += hk_step) {\n"
      "        O hk_o[U][%d];\n",
      nb);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_IN || p->role == HK_ROLE_INOUT)
      hku_buf_printf(o, "        %s hk_e_%s[U];\n", hkc_param_stype(in, p),
                     p->name);
  }
  /* the loads of every element first */
  hku_buf_put(o,
              "#pragma unroll\n"
              "        for (int hk_u = 0; hk_u < U; hk_u++) {\n"
              "            const I i = hk_t + (I)hk_u * blockDim.x;\n"
              "            if (i < hk_n) {\n"
              "                hk_nd_offsets<ND>(hk_g, i, hk_o[hk_u]);\n");
  for (int i = 0, b = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (!is_buffer(p)) continue;
    if (p->role == HK_ROLE_IN || p->role == HK_ROLE_INOUT)
      hku_buf_printf(o,
                     "                hk_e_%s[hk_u] = hk_p_%s[hk_o[hk_u][%d]];\n",
                     p->name, p->name, b);
    b++;
  }
  /* then the bodies and stores */
  hku_buf_put(o,
              "            }\n"
              "        }\n"
              "#pragma unroll\n"
              "        for (int hk_u = 0; hk_u < U; hk_u++) {\n"
              "            const I i = hk_t + (I)hk_u * blockDim.x;\n"
              "            if (i < hk_n) {\n");
  const elem_ref held = {"hk_e_", "[hk_u]"};
  put_write_locals(o, in, 16, held);
  put_call(o, in, 16, held, "(size_t)i");
  for (int i = 0, b = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (!is_buffer(p)) continue;
    if (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT)
      hku_buf_printf(o, "                hk_p_%s[hk_o[hk_u][%d]] = %s%s%s;\n",
                     p->name, b, hkc_store_pre(t), p->name, hkc_conv_post(t));
    b++;
  }
  hku_buf_put(o,
              "            }\n"
              "        }\n"
              "    }\n"
              "}\n\n");

  hku_buf_printf(o, "extern \"C\" __global__ void " HK_ABI_CUDA_ND "%s(", nm);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_printf(o, "const hk_nd<%d> hk_g, size_t n)\n{\n", nb);
  /* the loop of two axes, 32-bit, the common case, takes U elements a
   * step; every other call (more axes, 64 bits) one: each element of a
   * step is another copy of the body to compile */
  const struct {
    const char *when, *targs;
    int unroll;
  } paths[] = {{"if (!hk_g.h.wide && hk_g.h.nd == 2)", "2, unsigned, int", U},
               {"else", "8, unsigned long long, long long", 1}};
  for (int w = 0; w < 2; w++) {
    hku_buf_printf(o, "    %s\n        hk_nd_run__%s<%s, %d>(", paths[w].when,
                   nm, paths[w].targs, paths[w].unroll);
    put_args(o, in);
    hku_buf_put(o, "hk_g, n);\n");
  }
  hku_buf_put(o, "}\n\n");
}

/* Elementwise: the body function, then the kernel: the vector part, then
 * the rest (or everything, when a buffer is not aligned) one element per
 * thread, both as grid-stride loops; then, in the stdlib, the N-D entry
 * (emit_nd), for instances with 1 to HK_ABI_CUDA_ND_BUFS buffers. */
static void emit_elementwise(hku_buf *o, const hkc_instance *in,
                             hkc_emit_mode mode) {
  emit_body_fn(o, in);
  hku_buf_printf(o, "extern \"C\" __global__ void " HK_ABI_CUDA_KERNEL "%s(",
                 in->name);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_put(o, "size_t n)\n{\n");
  hku_buf_put(o,
              "    const size_t hk_tid = (size_t)blockIdx.x * blockDim.x + "
              "threadIdx.x;\n"
              "    const size_t hk_stride = (size_t)blockDim.x * gridDim.x;\n"
              "    size_t hk_done = 0;\n");
  hkc_put_scalar_locals(o, in, 4);
  emit_vector_part(o, in, vec_lanes(in));
  /* the rest, one element per thread */
  hku_buf_put(o,
              "    for (size_t i = hk_done + hk_tid; i < n; i += hk_stride) {\n");
  const elem_ref elem = {"hk_p_", "[i]"};
  put_write_locals(o, in, 8, elem);
  put_body_call(o, in, 8, elem, "i");
  hku_buf_put(o, "    }\n}\n\n");
  /* The N-D entry in the stdlib only (nvcc, at build time), and there
   * for bodies that call no math function: it compiles the body five more
   * times. In a plugin's code NVRTC would do so at its first GPU call (a
   * cold hk_kernel_prepare on an H200 went from 50-75 to 151 ms); in the
   * stdlib, the math bodies' copies took nvcc 18 -> 45 s and libhk's GPU
   * code 3.4 -> 8.5 MB, for calls that are compute-bound on the GPU (an
   * extra pass through the copies costs them least). Those calls, and a
   * plugin's, take the copies (core/arrays.c). */
  const int nb = nbuffers(in);
  if (mode == HKC_EMIT_STDLIB && !hkc_is_heavy(in->k) && nb >= 1 &&
      nb <= HK_ABI_CUDA_ND_BUFS)
    emit_nd(o, in);
}

/* The tree over the block's hk_s[] (shared memory, one slot a thread),
 * which leaves the block's combination in hk_s[0]. */
static void put_block_tree(hku_buf *o, const char *nm) {
  hku_buf_printf(
      o,
      "    hk_s[threadIdx.x] = hk_acc;\n"
      "    __syncthreads();\n"
      "    for (unsigned hk_w = blockDim.x / 2; hk_w > 0; hk_w >>= 1) {\n"
      "        if (threadIdx.x < hk_w)\n"
      "            hk_s[threadIdx.x] = hk_combine__%s(hk_s[threadIdx.x], "
      "hk_s[threadIdx.x + hk_w]);\n"
      "        __syncthreads();\n"
      "    }\n",
      nm);
}

/* "hk_map__NAME(hk_p_x[BASE + AT], alpha, AT, n)": the map at element AT
 * of the row that starts at element BASE. */
static void put_row_map_call(hku_buf *o, const hkc_instance *in,
                             const char *base, const char *at) {
  char post[64];
  snprintf(post, sizeof post, "[%s + %s]", base, at);
  hkc_put_map_call(o, in, "hk_p_", post, at);
}

/* The map at element AT of the row at hk_r0. */
static void put_map_call(hku_buf *o, const hkc_instance *in, const char *at) {
  put_row_map_call(o, in, "hk_r0", at);
}

/* hk_cuda_part__NAME: one partial per block. Each thread keeps four
 * accumulators over a grid-stride share, four independent loads in
 * flight. Rows (axis reductions): blockIdx.y is the row, of n elements
 * from hk_r0; its partials follow the previous row's (a flat call has one
 * row). */
static void emit_part_kernel(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const hkc_src *srcs[] = {&k->identity};

  hku_buf_printf(o, "extern \"C\" __global__ void " HK_ABI_CUDA_PART "%s(", nm);
  hkc_put_params(o, in, "hk_p_", 1, 1);
  hku_buf_printf(o, "%s *hk_partials, size_t n)\n{\n", acc);
  hkc_put_holders(o, in, srcs, 1, 4);
  hkc_put_scalar_locals(o, in, 4);
  hku_buf_printf(o, "    __shared__ %s hk_s[%d];\n    const %s hk_id = ", acc,
                 HK_ABI_CUDA_BLOCK, acc);
  hkc_put_identity_call(o, in);
  hku_buf_printf(o,
                 ";\n"
                 "    %s hk_a0 = hk_id, hk_a1 = hk_id, hk_a2 = hk_id, hk_a3 = "
                 "hk_id;\n"
                 "    const size_t hk_stride = (size_t)blockDim.x * gridDim.x;\n"
                 "    size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;\n"
                 "    const size_t hk_r0 = (size_t)blockIdx.y * n;\n"
                 "    for (; i + 3 * hk_stride < n; i += 4 * hk_stride) {\n",
                 acc);
  for (int u = 0; u < 4; u++) {
    char at[32];
    snprintf(at, sizeof at, "i + %d * hk_stride", u);
    hku_buf_printf(o, "        const %s hk_v%d = ", acc, u);
    put_map_call(o, in, at);
    hku_buf_put(o, ";\n");
  }
  for (int u = 0; u < 4; u++)
    hku_buf_printf(o, "        hk_a%d = hk_combine__%s(hk_a%d, hk_v%d);\n", u,
                   nm, u, u);
  hku_buf_printf(o, "    }\n    for (; i < n; i += hk_stride)\n"
                    "        hk_a0 = hk_combine__%s(hk_a0, ",
                 nm);
  put_map_call(o, in, "i");
  hku_buf_printf(o,
                 ");\n"
                 "    const %s hk_acc = hk_combine__%s(hk_combine__%s(hk_a0, "
                 "hk_a1), hk_combine__%s(hk_a2, hk_a3));\n",
                 acc, nm, nm, nm);
  put_block_tree(o, nm);
  hku_buf_put(o, "    if (threadIdx.x == 0)\n"
                 "        hk_partials[(size_t)blockIdx.y * gridDim.x + blockIdx.x] = "
                 "hk_s[0];\n}\n\n");
}

/* Where a row's finalize runs: the thread that runs it (a condition on
 * the thread), the row's combined accumulator, the row's index (its
 * element in each result parameter), and the indent of the code. */
typedef struct row_final {
  const char *who, *acc, *row;
  int ind;
} row_final;

/* The finalize of one row: thread f.who finalizes f.acc and stores the
 * result into element f.row of each result parameter (an inout one read
 * first). */
static void put_merge_final(hku_buf *o, const hkc_instance *in,
                            const char *acc, row_final f) {
  const hkc_kernel *k = in->k;
  const int i1 = f.ind + 4, i2 = f.ind + 8;
  char at[64];
  snprintf(at, sizeof at, "[%s]", f.row);
  if (k->acc_form == HKC_ACC_STRUCT) {
    hku_buf_printf(o,
                   "%*sif (%s) {\n"
                   "%*sconst %s acc = %s;\n"
                   "%*s(void)acc;\n",
                   f.ind, "", f.who, i1, "", acc, f.acc, i1, "");
    hkc_put_result_locals(o, in, "hk_p_", at, i1);
    hku_buf_printf(o, "%*s{\n", i1, "");
    hkc_put_code(o, &k->finalize, i2);
    hku_buf_printf(o, "%*s}\n", i1, "");
    hkc_put_result_stores(o, in, "hk_p_", at, i1);
    hku_buf_printf(o, "%*s}\n", f.ind, "");
    return;
  }
  const hkc_param *r = &k->params[hkc_result_index(k)];
  hk_dtype_t rt = hkc_param_type(in, r);
  hku_buf_printf(o,
                 "%*sif (%s) {\n"
                 "%*s%s acc = %s;\n"
                 "%*s(void)acc;\n",
                 f.ind, "", f.who, i1, "", acc, f.acc, i1, "");
  if (r->role == HK_ROLE_INOUT)
    hku_buf_printf(o,
                   "%*sconst %s %s = %shk_p_%s%s%s;\n"
                   "%*s(void)%s;\n",
                   i1, "", ct(in, r), r->name, hkc_load_pre(rt), r->name, at,
                   hkc_conv_post(rt), i1, "", r->name);
  hku_buf_printf(o, "%*shk_p_%s%s = %s(%s)", i1, "", r->name, at,
                 hkc_store_pre(rt), ct(in, r));
  if (k->finalize.text)
    hkc_put_expr(o, &k->finalize);
  else
    hku_buf_put(o, "acc");
  hku_buf_printf(o, "%s;\n%*s}\n", hkc_conv_post(rt), f.ind, "");
}

/* hk_cuda_merge__NAME: one block per row over the row's hk_count
 * partials, then finalize into the row's element of each result: its
 * parameters are the partials, their count (per row), each result
 * parameter (out or inout) in order, the scalars, n. */
static void emit_merge_kernel(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const hkc_src *srcs[] = {&k->map, &k->combine, &k->identity, &k->finalize};
  HK_ASSERT(hkc_result_index(k) >= 0);

  hku_buf_printf(o,
                 "extern \"C\" __global__ void " HK_ABI_CUDA_MERGE
                 "%s(const %s *hk_partials, size_t hk_count",
                 nm, acc);
  for (int i = 0; i < k->nparams; i++)
    if (hkc_is_result(&k->params[i]))
      hku_buf_printf(o, ", %s *hk_p_%s", hkc_param_stype(in, &k->params[i]),
                     k->params[i].name);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) {
      hku_buf_put(o, ", ");
      hkc_put_param(o, in, &k->params[i], "", 1);
    }
  hku_buf_put(o, ", size_t n)\n{\n");
  hkc_put_holders(o, in, srcs, 4, 4);
  hkc_put_scalar_locals(o, in, 4);
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_SCALAR), 4);
  hku_buf_printf(o, "    __shared__ %s hk_s[%d];\n    %s hk_acc = ", acc,
                 HK_ABI_CUDA_BLOCK, acc);
  hkc_put_identity_call(o, in);
  hku_buf_printf(
      o,
      ";\n"
      "    hk_partials += (size_t)blockIdx.x * hk_count;\n"
      "    for (size_t hk_k = threadIdx.x; hk_k < hk_count; hk_k += blockDim.x)\n"
      "        hk_acc = hk_combine__%s(hk_acc, hk_partials[hk_k]);\n",
      nm);
  put_block_tree(o, nm);
  put_merge_final(o, in, acc,
                  (row_final){"threadIdx.x == 0", "hk_s[0]", "blockIdx.x", 4});
  hku_buf_put(o, "}\n\n");
}

/* The loads of one step of a warp row (emit_rows_warp_kernel): row
 * accumulators P0..P3 (P "hk_a" or "hk_b") from the row at BASE, the map of
 * elements hk_i + 32 u, each into its accumulator; ind spaces. */
static void put_wrow_step(hku_buf *o, const hkc_instance *in, const char *P,
                          const char *base, int ind) {
  const int W = HK_ABI_CUDA_WARP;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  for (int u = 0; u < 4; u++) {
    char at[32];
    snprintf(at, sizeof at, "hk_i + %d", u * W);
    hku_buf_printf(o, "%*sconst %s %s_v%d = ", ind, "", acc, P, u);
    put_row_map_call(o, in, base, at);
    hku_buf_put(o, ";\n");
  }
  for (int u = 0; u < 4; u++)
    hku_buf_printf(o, "%*s%s%d = hk_combine__%s(%s%d, %s_v%d);\n", ind, "", P,
                   u, in->name, P, u, P, u);
}

/* The rest of a warp row, at most three elements a lane, into the same
 * accumulators: also independent loads, the only ones of rows up to 96
 * elements. */
static void put_wrow_rest(hku_buf *o, const hkc_instance *in, const char *P,
                          const char *base, int ind) {
  const int W = HK_ABI_CUDA_WARP;
  for (int u = 0; u < 3; u++) {
    char at[32];
    snprintf(at, sizeof at, "hk_i + %d", u * W);
    hku_buf_printf(o, "%*sif (%s < n)\n%*s%s%d = hk_combine__%s(%s%d, ", ind,
                   "", at, ind + 4, "", P, u, in->name, P, u);
    put_row_map_call(o, in, base, at);
    hku_buf_put(o, ");\n");
  }
}

/* 1 when a warp row's lane values combine by shuffles: a scalar
 * accumulator of a type __shfl_down_sync takes (else through the warp's
 * slots of shared memory). */
static int wrow_shuffles(const hkc_instance *in) {
  if (in->k->acc_form == HKC_ACC_STRUCT) return 0;
  switch (hkc_acc_type(in)) {
    case HK_F32: case HK_F64: case HK_I32: case HK_U32: case HK_I64:
    case HK_U64:
      return 1;
    default:
      return 0;
  }
}

/* A warp row's four accumulators P0..P3 combined in a fixed order, the 32
 * lanes' values by a tree, and lane 0's finalize into element ROW of each
 * result. The tree: at step w = 16, 8, 4, 2, 1 lane l < w combines its
 * value with lane l + w's, in shared memory (the warp's slots), or, for
 * scalar accumulators, by __shfl_down_sync, which gives lane 0 the same
 * value (lanes >= w combine values no lane below w reads later) without
 * the slots' stores, loads and __syncwarp of each step. */
static void put_wrow_finish(hku_buf *o, const hkc_instance *in, const char *P,
                            const char *row, int ind) {
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  if (wrow_shuffles(in)) {
    char t[32];
    snprintf(t, sizeof t, "%s_t", P);
    hku_buf_printf(o,
                   "%*s%s %s = hk_combine__%s(hk_combine__%s(%s0, %s1), "
                   "hk_combine__%s(%s2, %s3));\n"
                   "%*sfor (unsigned hk_w = %d; hk_w > 0; hk_w >>= 1)\n"
                   "%*s%s = hk_combine__%s(%s, __shfl_down_sync("
                   "0xffffffffu, %s, hk_w));\n",
                   ind, "", acc, t, nm, nm, P, P, nm, P, P, ind, "",
                   HK_ABI_CUDA_WARP / 2, ind + 4, "", t, nm, t, t);
    put_merge_final(o, in, acc, (row_final){"hk_lane == 0", t, row, ind});
    return;
  }
  hku_buf_printf(o,
                 "%*shk_s[threadIdx.x] = hk_combine__%s(hk_combine__%s(%s0, "
                 "%s1), hk_combine__%s(%s2, %s3));\n"
                 "%*s__syncwarp();\n"
                 "%*sfor (unsigned hk_w = %d; hk_w > 0; hk_w >>= 1) {\n"
                 "%*sif (hk_lane < hk_w)\n"
                 "%*shk_s[threadIdx.x] = hk_combine__%s(hk_s[threadIdx.x], "
                 "hk_s[threadIdx.x + hk_w]);\n"
                 "%*s__syncwarp();\n"
                 "%*s}\n",
                 ind, "", nm, nm, P, P, nm, P, P, ind, "", ind, "",
                 HK_ABI_CUDA_WARP / 2, ind + 4, "", ind + 8, "", nm, ind + 4,
                 "", ind, "");
  /* lane 0's slot is the warp's first; the next row's stores into the
   * slots come after the last step's __syncwarp, so no lane overwrites a
   * slot the tree still reads, and lane 0 reads its own slot only */
  put_merge_final(o, in, acc, (row_final){"hk_lane == 0", "hk_s[threadIdx.x]", row, ind});
}

/* One step of a warp row loop (emit_rows_warp_kernel): the rows hk_row
 * and, when two, hk_row1, their loads all issued before either tree. */
static void put_wrow_rows(hku_buf *o, const hkc_instance *in, int two) {
  const int W = HK_ABI_CUDA_WARP;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  hku_buf_printf(o,
                 "        const size_t hk_r0 = hk_row * n;\n"
                 "        %s hk_a0 = hk_id, hk_a1 = hk_id, hk_a2 = hk_id, "
                 "hk_a3 = hk_id;\n",
                 acc);
  if (two)
    hku_buf_printf(o,
                   "        const size_t hk_r1 = hk_row1 * n;\n"
                   "        %s hk_b0 = hk_id, hk_b1 = hk_id, hk_b2 = hk_id, "
                   "hk_b3 = hk_id;\n",
                   acc);
  hku_buf_printf(o,
                 "        size_t hk_i = hk_lane;\n"
                 "        for (; hk_i + %d < n; hk_i += %d) {\n",
                 3 * W, 4 * W);
  put_wrow_step(o, in, "hk_a", "hk_r0", 12);
  if (two) put_wrow_step(o, in, "hk_b", "hk_r1", 12);
  hku_buf_put(o, "        }\n");
  put_wrow_rest(o, in, "hk_a", "hk_r0", 8);
  if (two) put_wrow_rest(o, in, "hk_b", "hk_r1", 8);
  put_wrow_finish(o, in, "hk_a", "hk_row", 8);
  if (two) put_wrow_finish(o, in, "hk_b", "hk_row1", 8);
}

/* hk_cuda_wrow__NAME: an axis reduction of short rows, a warp per row:
 * its parameters are the instance's, in order, then n (the rows' length)
 * and hk_rows. Warps take rows grid-stride, two at a time while a warp
 * has two (the row and the one a stride on, whose loads are issued before
 * either row's tree: rows of 64 elements are two loads a lane, too few in
 * flight to keep the memory busy; on an H200, sums over rows of 64 went
 * from 1.42 to 1.33 times the whole-array sum), then its last row alone.
 * Tried on an H200: reading a lone row twice, to keep one straight-line
 * step, took rows of 1024 0.93 -> 1.08x; four rows a step, then the last
 * ones alone, took rows of 64 1.11 -> 1.14-1.18x and rows of 1024 0.89 ->
 * 0.96-0.99x. Lane l combines the map of elements l, l + 32, l + 64, ...
 * of a row into four accumulators in turn (element l + 32 t into
 * accumulator t % 4: four loads in flight), then the four in a fixed
 * order; the warp's 32 lane values are combined by a tree
 * (put_wrow_finish: shuffles, or the warp's slots of shared memory for a
 * struct accumulator), and lane 0 finalizes into the row's results. What
 * a row's result is depends on n only, never on which warp takes it, nor
 * with which other row. */
static void emit_rows_warp_kernel(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const hkc_src *srcs[] = {&k->identity, &k->finalize};
  const int W = HK_ABI_CUDA_WARP;
  HK_ASSERT(hkc_result_index(k) >= 0);

  hku_buf_printf(o, "extern \"C\" __global__ void " HK_ABI_CUDA_ROWS_WARP "%s(",
                 nm);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_put(o, "size_t n, size_t hk_rows)\n{\n");
  hkc_put_holders(o, in, srcs, 2, 4);
  hkc_put_scalar_locals(o, in, 4);
  if (!wrow_shuffles(in))
    hku_buf_printf(o,
                   "    /* warp w's slots: hk_s[%d w] on, one a lane */\n"
                   "    __shared__ %s hk_s[%d];\n",
                   W, acc, HK_ABI_CUDA_BLOCK);
  hku_buf_printf(o, "    const %s hk_id = ", acc);
  hkc_put_identity_call(o, in);
  hku_buf_printf(
      o,
      ";\n"
      "    const unsigned hk_lane = threadIdx.x %% %d;\n"
      "    const size_t hk_wstride = (size_t)gridDim.x * (blockDim.x / %d);\n"
      "    size_t hk_row = ((size_t)blockIdx.x * blockDim.x + threadIdx.x) / "
      "%d;\n"
      "    /* two rows a step while the warp has two (the same for the warp) */\n"
      "    for (; hk_row + hk_wstride < hk_rows; hk_row += 2 * hk_wstride) {\n"
      "        const size_t hk_row1 = hk_row + hk_wstride;\n",
      W, W, W);
  put_wrow_rows(o, in, 1);
  hku_buf_put(o, "    }\n    /* its last row, alone */\n    if (hk_row < hk_rows) {\n");
  put_wrow_rows(o, in, 0);
  hku_buf_put(o, "    }\n}\n\n");
}

/* Reduction: (a struct accumulator's type and identity), combine, map,
 * then the part and merge kernels, and the warp-per-row kernel. */
static void emit_reduction(hku_buf *o, const hkc_instance *in,
                           hkc_emit_mode mode) {
  (void)mode;
  static const char *const dev = "static __device__ __forceinline__ ";
  if (in->k->acc_form == HKC_ACC_STRUCT) {
    hkc_put_acc_struct(o, in);
    hkc_put_identity_fn(o, in, dev);
  }
  hkc_put_combine_fn(o, in, dev);
  hkc_put_map_fn(o, in, dev);
  emit_part_kernel(o, in);
  emit_merge_kernel(o, in);
  emit_rows_warp_kernel(o, in);
}

/* Raw: the author's CUDA body as the __global__ function. */
static void emit_raw(hku_buf *o, const hkc_instance *in, hkc_emit_mode mode) {
  (void)mode;
  hkc_put_raw_function(o, in, "extern \"C\" __global__ void " HK_ABI_CUDA_KERNEL,
                       &in->k->cuda);
}

static const hkc_emitter cuda_emitter = {HK_TARGET_CUDA,   0,
                                         emit_elementwise, emit_reduction,
                                         emit_raw,         NULL,
                                         hkc_emit_rows_cuda,
                                         hkc_emit_grid_cuda};

int hkc_emit_cuda_mapped(hkc_file *const *files, int nfiles,
                         hkc_emit_mode mode, hku_buf *o, hkc_linemap *map) {
  hkc_linemap_start(o, map);
  int rc = hkc_emit_cuda(files, nfiles, mode, o);
  o->map = NULL;
  return rc;
}

#define HKC_STR_(x) #x
#define HKC_STR(x) HKC_STR_(x)
/* The stdlib's strided copies, for arrays on the GPU (core/arrays.c and
 * core/arrays_rows.c, through hk__cuda_copy_strided in core/cuda/launch.c):
 * element i of a contiguous run and the element of a strided view at index
 * i of its shape (C order), offset by the strides (in elements, any sign);
 * scatter: run to view, else view to run. The launcher collapses the view
 * first (length-1 axes dropped, axes that continue each other merged), so
 * most views come as one to three axes. Three kernels per element size
 * (1, 2, 4, 8 bytes), of which the launcher takes the first that applies:
 *   hk_cuda_copyt_N   a batch of 2-D transposes (the view's unit stride is
 *                     on its next-to-last axis, not its last): tiles through
 *                     shared memory, so that reads and writes are both
 *                     coalesced; one thread per element would read (or
 *                     write) the view a whole stride apart from lane to lane;
 *   hk_cuda_copy32_N  any view of at most INT32_MAX elements, one thread per
 *                     element: its axis indices by 32-bit multiply-high and
 *                     shift with the host's magic numbers (as PyTorch's
 *                     IntDivider), a few instructions an axis, where a
 *                     32-bit division is about twenty and a 64-bit one about
 *                     a hundred (in a copy that is otherwise two memory
 *                     accesses);
 *   hk_cuda_copy_N    any view: 64-bit division (more than 2^31 elements).
 * The first two are optional to the launcher (without them: copy_N). The
 * struct's layout is hk_cuda_strided_t's (core/cuda/backend.h). */
static const char copy_kernels[] =
    "/* ---- strided copies (arrays on the GPU) ---- */\n"
    "/* A view of nd axes (C order): shape, strides in elements (any sign), and\n"
    " * for views of at most INT32_MAX elements each axis's divider:\n"
    " * i / shape[d] == (__umulhi(i, magic[d]) + i) >> shift[d] there. */\n"
    "struct hk_cuda_strided {\n"
    "    long long nd;\n"
    "    long long shape[" HKC_STR(HK_MAX_DIMS) "];\n"
    "    long long st[" HKC_STR(HK_MAX_DIMS) "];\n"
    "    unsigned int magic[" HKC_STR(HK_MAX_DIMS) "];\n"
    "    unsigned int shift[" HKC_STR(HK_MAX_DIMS) "];\n"
    "};\n"
    "#define HK_CUDA_MAX_DIMS " HKC_STR(HK_MAX_DIMS) "\n"
    "#define HK_CUDA_TILE " HKC_STR(HK_ABI_CUDA_TILE) "\n"
    "#define HK_CUDA_TILE_ROWS " HKC_STR(HK_ABI_CUDA_TILE_ROWS) "\n"
    "\n"
    "/* An axis index's quotient, by D::q(r, g, d) == r / g.shape[d]: for any\n"
    " * n, 64-bit division; for n <= INT32_MAX, the magic numbers (a\n"
    " * multiply-high, an add and a shift). */\n"
    "struct hk_cuda_div64 {\n"
    "    static __device__ __forceinline__ size_t\n"
    "    q(size_t r, const hk_cuda_strided &g, int d)\n"
    "    {\n"
    "        return r / (size_t)g.shape[d];\n"
    "    }\n"
    "};\n"
    "struct hk_cuda_div32 {\n"
    "    static __device__ __forceinline__ unsigned int\n"
    "    q(unsigned int r, const hk_cuda_strided &g, int d)\n"
    "    {\n"
    "        return (__umulhi(r, g.magic[d]) + r) >> g.shift[d];\n"
    "    }\n"
    "};\n"
    "\n"
    "/* Element i of the run and the view's element at index i (scatter: run to\n"
    " * view), one thread per element, indices of type I (size_t with\n"
    " * hk_cuda_div64, unsigned int with hk_cuda_div32): each axis's index by\n"
    " * division but the outermost's (what is left of i). */\n"
    "template <typename I, typename D, typename T>\n"
    "static __device__ __forceinline__ void\n"
    "hk_cuda_copy(const T *src, T *dst, const hk_cuda_strided g,\n"
    "             const int scatter, const I n)\n"
    "{\n"
    "    const I step = (I)blockDim.x * gridDim.x;\n"
    "    for (I i = (I)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += step) {\n"
    "        long long off = 0;\n"
    "        I r = i;\n"
    "#pragma unroll\n"
    "        for (int d = HK_CUDA_MAX_DIMS - 1; d > 0; d--)\n"
    "            if (d < g.nd) {\n"
    "                const I q = D::q(r, g, d);\n"
    "                off += (long long)(r - q * (I)g.shape[d]) * g.st[d];\n"
    "                r = q;\n"
    "            }\n"
    "        off += (long long)r * g.st[0];\n"
    "        if (scatter)\n"
    "            dst[off] = src[i];\n"
    "        else\n"
    "            dst[i] = src[off];\n"
    "    }\n"
    "}\n"
    "\n"
    "/* B transposes at once: the run is (B, R, C) in C order, the view's\n"
    " * element (b, r, c) is at b * sb + r * sr + c * sc, with the view's unit\n"
    " * stride along r (|sr| == 1) and the run's along c. A block moves a tile\n"
    " * of HK_CUDA_TILE x HK_CUDA_TILE elements through shared memory: it reads\n"
    " * the tile with threadIdx.x along its source's unit stride (gather: the\n"
    " * view's r; scatter: the run's c) into tile[k][x], and writes it with\n"
    " * threadIdx.x along its destination's from tile[x][k], so that a warp's\n"
    " * accesses to global memory are one run on both sides; the padding column\n"
    " * puts a tile's column on as many banks as its row. Grid: x over tiles of\n"
    " * c, y over tiles of r, z over b, each looping where the grid is shorter. */\n"
    "template <typename T> static __device__ __forceinline__ void\n"
    "hk_cuda_copyt(const T *src, T *dst, const long long B, const long long R,\n"
    "              const long long C, const long long sb, const long long sr,\n"
    "              const long long sc, const int scatter)\n"
    "{\n"
    "    __shared__ T tile[HK_CUDA_TILE][HK_CUDA_TILE + 1];\n"
    "    const int tx = threadIdx.x, ty = threadIdx.y;\n"
    "    const long long side = HK_CUDA_TILE;\n"
    "    /* strides along the lanes (x) and rows (k) of a tile: source's and\n"
    "     * destination's */\n"
    "    const long long sx = scatter ? 1 : sr, sk = scatter ? C : sc;\n"
    "    const long long dx = scatter ? sr : 1, dk = scatter ? sc : C;\n"
    "    for (long long b = blockIdx.z; b < B; b += gridDim.z)\n"
    "        for (long long r0 = blockIdx.y * side; r0 < R;\n"
    "             r0 += gridDim.y * side)\n"
    "            for (long long c0 = blockIdx.x * side; c0 < C;\n"
    "                 c0 += gridDim.x * side) {\n"
    "                /* element (b, r0, c0) in the view and in the run */\n"
    "                const long long v0 = b * sb + r0 * sr + c0 * sc;\n"
    "                const long long u0 = (b * R + r0) * C + c0;\n"
    "                const long long s0 = scatter ? u0 : v0;\n"
    "                const long long d0 = scatter ? v0 : u0;\n"
    "                /* the tile's extent along the source's lanes and rows */\n"
    "                const long long nx = scatter ? C - c0 : R - r0;\n"
    "                const long long nk = scatter ? R - r0 : C - c0;\n"
    "                if (tx < nx) {\n"
    "#pragma unroll\n"
    "                    for (int j = 0; j < HK_CUDA_TILE;\n"
    "                         j += HK_CUDA_TILE_ROWS) {\n"
    "                        const int k = ty + j;\n"
    "                        if (k < nk)\n"
    "                            tile[k][tx] = src[s0 + tx * sx + k * sk];\n"
    "                    }\n"
    "                }\n"
    "                __syncthreads();\n"
    "                if (tx < nk) {\n"
    "#pragma unroll\n"
    "                    for (int j = 0; j < HK_CUDA_TILE;\n"
    "                         j += HK_CUDA_TILE_ROWS) {\n"
    "                        const int k = ty + j;\n"
    "                        if (k < nx)\n"
    "                            dst[d0 + tx * dx + k * dk] = tile[tx][k];\n"
    "                    }\n"
    "                }\n"
    "                __syncthreads(); /* before the tile is filled again */\n"
    "            }\n"
    "}\n"
    "\n"
    "/* The kernels of elements of N bytes, moved as T. The tiled one asks\n"
    " * for as many blocks as fill an SM's 2048 threads: its four loads a\n"
    " * thread in flight are what keep memory busy, and 32 registers do. */\n"
    "#define HK_CUDA_COPIES(N, T) \\\n"
    "extern \"C\" __global__ void hk_cuda_copy_##N(const T *src, T *dst, \\\n"
    "        hk_cuda_strided g, int scatter, size_t n) \\\n"
    "{ \\\n"
    "    hk_cuda_copy<size_t, hk_cuda_div64, T>(src, dst, g, scatter, n); \\\n"
    "} \\\n"
    "extern \"C\" __global__ void hk_cuda_copy32_##N(const T *src, T *dst, \\\n"
    "        hk_cuda_strided g, int scatter, unsigned int n) \\\n"
    "{ \\\n"
    "    hk_cuda_copy<unsigned int, hk_cuda_div32, T>(src, dst, g, scatter, n); \\\n"
    "} \\\n"
    "extern \"C\" __global__ void \\\n"
    "__launch_bounds__(HK_CUDA_TILE * HK_CUDA_TILE_ROWS, \\\n"
    "                  2048 / (HK_CUDA_TILE * HK_CUDA_TILE_ROWS)) \\\n"
    "hk_cuda_copyt_##N(const T *src, T *dst, long long B, long long R, \\\n"
    "        long long C, long long sb, long long sr, long long sc, \\\n"
    "        int scatter) \\\n"
    "{ \\\n"
    "    hk_cuda_copyt<T>(src, dst, B, R, C, sb, sr, sc, scatter); \\\n"
    "}\n"
    "HK_CUDA_COPIES(1, unsigned char)\n"
    "HK_CUDA_COPIES(2, unsigned short)\n"
    "HK_CUDA_COPIES(4, unsigned int)\n"
    "HK_CUDA_COPIES(8, unsigned long long)\n"
    "#undef HK_CUDA_COPIES\n"
    "\n";

/* What the N-D entries of elementwise instances share (emit_nd): their
 * iteration, laid out as common/abi.h's hk_abi_cuda_nd_t, the division by
 * an axis length (abi.h: hk_abi_cuda_divider) and the offsets of a flat
 * index. Everything is inlined into each entry, the struct read where the
 * kernel parameter lies. */
static const char nd_helpers[] =
    "/* ---- N-D elementwise entries (hk_cuda_nd__*: common/abi.h) ---- */\n"
    "struct hk_nd_head {\n"
    "    int nd, wide;\n"
    "    unsigned long long len[" HKC_STR(HK_MAX_DIMS) "];\n"
    "    unsigned long long mul[" HKC_STR(HK_MAX_DIMS) "];\n"
    "    unsigned int shift[" HKC_STR(HK_MAX_DIMS) "];\n"
    "};\n"
    "static_assert(sizeof(hk_nd_head) == " HKC_STR(HK_ABI_CUDA_ND_HEAD)
    ", \"the head of hk_abi_cuda_nd_t\");\n"
    "template <int NB> struct hk_nd {\n"
    "    hk_nd_head h;\n"
    "    long long st[NB][" HKC_STR(HK_MAX_DIMS) "]; /* per buffer, in elements */\n"
    "};\n"
    "/* x / d for x < 2^31 (2^63), by d's multiplier m and shift s */\n"
    "static __device__ __forceinline__ __attribute__((unused)) unsigned\n"
    "hk_nd_div(unsigned x, "
    "unsigned long long m, unsigned s)\n"
    "{\n"
    "    return (__umulhi(x, (unsigned)m) + x) >> s;\n"
    "}\n"
    "static __device__ __forceinline__ __attribute__((unused)) unsigned long "
    "long\nhk_nd_div(unsigned long long x, unsigned long long m, unsigned s)\n"
    "{\n"
    "    return (__umul64hi(x, m) + x) >> s;\n"
    "}\n"
    "/* off[b]: the offset of flat index i in buffer b, its index along each\n"
    " * axis (innermost first; ND == 2: two axes, else g.h.nd) times the\n"
    " * buffer's stride there */\n"
    "template <int ND, typename I, typename O, int NB>\n"
    "static __device__ __forceinline__ void hk_nd_offsets(const hk_nd<NB> &g, "
    "I i, O (&off)[NB])\n"
    "{\n"
    "#pragma unroll\n"
    "    for (int b = 0; b < NB; b++) off[b] = 0;\n"
    "#pragma unroll\n"
    "    for (int d = ND - 1; d > 0; d--) {\n"
    "        if (ND == 2 || d < g.h.nd) {\n"
    "            const I q = hk_nd_div(i, g.h.mul[d], g.h.shift[d]);\n"
    "            const O x = (O)(i - q * (I)g.h.len[d]);\n"
    "#pragma unroll\n"
    "            for (int b = 0; b < NB; b++) off[b] += x * (O)g.st[b][d];\n"
    "            i = q;\n"
    "        }\n"
    "    }\n"
    "#pragma unroll\n"
    "    for (int b = 0; b < NB; b++) off[b] += (O)i * (O)g.st[b][0];\n"
    "}\n\n";

/* 1 when a kernel of the files with the cuda target is of kind kind. */
static int any_kind(hkc_file *const *files, int nfiles, hk_kind_t kind) {
  for (int f = 0; f < nfiles; f++)
    for (int i = 0; i < files[f]->nkernels; i++)
      if (files[f]->kernels[i].kind == kind &&
          (files[f]->kernels[i].targets & HK_TARGET_CUDA))
        return 1;
  return 0;
}

int hkc_emit_cuda(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                  hku_buf *o) {
  hku_buf_printf(o,
                 "/* Generated by hk " HK_VERSION_STRING
                 " (CUDA). Do not edit: edit the kernel file and generate "
                 "again.\n * Launch with 1-D blocks of %d threads. */\n\n",
                 HK_ABI_CUDA_BLOCK);
  hkc_emit_cuda_prelude(o);
  /* grid extents are checked len arithmetic */
  if (any_kind(files, nfiles, HK_KIND_GRID)) hkc_emit_len_helpers_cuda(o);
  if (mode == HKC_EMIT_STDLIB) { /* N-D entries: the stdlib's only */
    if (any_kind(files, nfiles, HK_KIND_ELEMENTWISE))
      hku_buf_put(o, nd_helpers);
    hku_buf_put(o, copy_kernels);
  }
  hkc_emit_instances(files, nfiles, mode, &cuda_emitter, o, NULL);
  return o->oom ? HK_ENOMEM : HK_OK;
}
