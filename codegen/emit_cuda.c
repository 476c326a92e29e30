/* emit_cuda.c — kernel instances to CUDA C (compiled by nvcc or NVRTC).
 *
 * Every instance with the cuda target becomes extern "C" __global__
 * functions, launched with 1-D blocks of HKC_CUDA_BLOCK threads:
 *   elementwise  hk_cuda__NAME(params..., n): a grid-stride loop running the
 *                same body as the C version;
 *   reduction    hk_cuda_part__NAME(ins and scalars..., partials, n): each
 *                block reduces a grid-stride share into partials[block]
 *                through shared memory; then hk_cuda_merge__NAME(partials,
 *                count, out, scalars..., n), one block, combines the partials,
 *                finalizes and stores out[0];
 *   raw          hk_cuda__NAME(params..., n): the author's CUDA body, which
 *                decides itself which elements each thread takes.
 */
#include <stdlib.h>
#include <string.h>

#include "emit.h"

#define HKC_CUDA_BLOCK 256

#define ct hkc_param_ctype
#define is_buffer hkc_is_buffer

static void put_locals(hkc_buf *o, const hkc_instance *in, int ind,
                       int with_outs) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_IN)
      hkc_buf_printf(o, "%*sconst %s %s = hk_p_%s[i];\n", ind, "", ct(in, p),
                     p->name, p->name);
    else if (with_outs && p->role == HK_ROLE_INOUT)
      hkc_buf_printf(o, "%*s%s %s = hk_p_%s[i];\n", ind, "", ct(in, p),
                     p->name, p->name);
    else if (with_outs && p->role == HK_ROLE_OUT)
      hkc_buf_printf(o, "%*s%s %s = 0;\n", ind, "", ct(in, p), p->name);
  }
  for (int i = 0; i < k->nparams; i++)
    if (is_buffer(&k->params[i]) &&
        (with_outs || k->params[i].role == HK_ROLE_IN))
      hkc_buf_printf(o, "%*s(void)%s;\n", ind, "", k->params[i].name);
}

static const char *grid_loop =
    "    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;\n"
    "         i += (size_t)blockDim.x * gridDim.x) {\n";

static void emit_elementwise(hkc_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const hkc_src *srcs[] = {&k->body};
  hkc_buf_printf(o, "extern \"C\" __global__ void hk_cuda__%s(", in->name);
  for (int i = 0; i < k->nparams; i++) {
    hkc_put_param(o, in, &k->params[i], "hk_p_", 1);
    hkc_buf_put(o, ", ");
  }
  hkc_buf_put(o, "size_t n)\n{\n");
  hkc_put_holders(o, in, srcs, 1, 4);
  hkc_buf_put(o, grid_loop);
  put_locals(o, in, 8, 1);
  hkc_buf_put(o, "        do {\n");
  hkc_put_code(o, &k->body, 12);
  hkc_buf_put(o, "        } while (0);\n");
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT)
      hkc_buf_printf(o, "        hk_p_%s[i] = %s;\n", p->name, p->name);
  }
  hkc_buf_put(o, "    }\n}\n\n");
}

static void emit_reduction(hkc_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  const char *acc = hkc_ctype(hkc_acc_type(in));
  const hkc_src *srcs[] = {&k->map, &k->combine, &k->identity, &k->finalize};
  int oi = -1;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_OUT) oi = i;

  hkc_buf_printf(o,
                 "static __device__ __forceinline__ %s hk_combine__%s(const %s a, "
                 "const %s b)\n{\n",
                 acc, nm, acc, acc);
  hkc_put_holders(o, in, srcs + 1, 1, 4);
  hkc_buf_printf(o, "    return (%s)", acc);
  hkc_put_expr(o, &k->combine);
  hkc_buf_put(o, ";\n}\n\n");

  /* part: one partial per block */
  hkc_buf_printf(o, "extern \"C\" __global__ void hk_cuda_part__%s(", nm);
  for (int i = 0; i < k->nparams; i++) {
    if (k->params[i].role == HK_ROLE_OUT) continue;
    hkc_put_param(o, in, &k->params[i], "hk_p_", 1);
    hkc_buf_put(o, ", ");
  }
  hkc_buf_printf(o, "%s *hk_partials, size_t n)\n{\n", acc);
  hkc_put_holders(o, in, srcs, 3, 4);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR)
      hkc_buf_printf(o, "    (void)%s;\n", k->params[i].name);
  hkc_buf_printf(o, "    __shared__ %s hk_s[%d];\n    %s hk_acc = (%s)", acc,
                 HKC_CUDA_BLOCK, acc, acc);
  hkc_put_expr(o, &k->identity);
  hkc_buf_put(o, ";\n");
  hkc_buf_put(o, grid_loop);
  put_locals(o, in, 8, 0);
  hkc_buf_printf(o, "        hk_acc = hk_combine__%s(hk_acc, (%s)", nm, acc);
  hkc_put_expr(o, &k->map);
  hkc_buf_put(o, ");\n    }\n");
  hkc_buf_printf(
      o,
      "    hk_s[threadIdx.x] = hk_acc;\n"
      "    __syncthreads();\n"
      "    for (unsigned hk_w = blockDim.x / 2; hk_w > 0; hk_w >>= 1) {\n"
      "        if (threadIdx.x < hk_w)\n"
      "            hk_s[threadIdx.x] = hk_combine__%s(hk_s[threadIdx.x], "
      "hk_s[threadIdx.x + hk_w]);\n"
      "        __syncthreads();\n"
      "    }\n"
      "    if (threadIdx.x == 0)\n"
      "        hk_partials[blockIdx.x] = hk_s[0];\n}\n\n",
      nm);

  /* merge: one block over the partials, then finalize */
  hkc_buf_printf(o,
                 "extern \"C\" __global__ void hk_cuda_merge__%s(const %s "
                 "*hk_partials, size_t hk_count, %s *hk_p_%s",
                 nm, acc, acc, k->params[oi].name);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) {
      hkc_buf_put(o, ", ");
      hkc_put_param(o, in, &k->params[i], "", 1);
    }
  hkc_buf_put(o, ", size_t n)\n{\n");
  hkc_put_holders(o, in, srcs, 4, 4);
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR)
      hkc_buf_printf(o, "    (void)%s;\n", k->params[i].name);
  hkc_buf_printf(o, "    __shared__ %s hk_s[%d];\n    %s hk_acc = (%s)", acc,
                 HKC_CUDA_BLOCK, acc, acc);
  hkc_put_expr(o, &k->identity);
  hkc_buf_printf(
      o,
      ";\n"
      "    for (size_t hk_k = threadIdx.x; hk_k < hk_count; hk_k += blockDim.x)\n"
      "        hk_acc = hk_combine__%s(hk_acc, hk_partials[hk_k]);\n"
      "    hk_s[threadIdx.x] = hk_acc;\n"
      "    __syncthreads();\n"
      "    for (unsigned hk_w = blockDim.x / 2; hk_w > 0; hk_w >>= 1) {\n"
      "        if (threadIdx.x < hk_w)\n"
      "            hk_s[threadIdx.x] = hk_combine__%s(hk_s[threadIdx.x], "
      "hk_s[threadIdx.x + hk_w]);\n"
      "        __syncthreads();\n"
      "    }\n"
      "    if (threadIdx.x == 0) {\n"
      "        %s acc = hk_s[0];\n"
      "        (void)acc;\n"
      "        hk_p_%s[0] = (%s)",
      nm, nm, acc, k->params[oi].name, acc);
  if (k->finalize.text)
    hkc_put_expr(o, &k->finalize);
  else
    hkc_buf_put(o, "acc");
  hkc_buf_put(o, ";\n    }\n}\n\n");
}

static void emit_raw(hkc_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const hkc_src *srcs[] = {&k->cuda};
  hkc_buf_printf(o, "extern \"C\" __global__ void hk_cuda__%s(", in->name);
  for (int i = 0; i < k->nparams; i++) {
    hkc_put_param(o, in, &k->params[i], "", 0);
    hkc_buf_put(o, ", ");
  }
  hkc_buf_put(o, "size_t n)\n{\n");
  hkc_put_holders(o, in, srcs, 1, 4);
  for (int i = 0; i < k->nparams; i++)
    hkc_buf_printf(o, "    (void)%s;\n", k->params[i].name);
  hkc_buf_put(o, "    (void)n;\n    {\n");
  hkc_put_code(o, &k->cuda, 8);
  hkc_buf_put(o, "    }\n}\n\n");
}

int hkc_emit_cuda(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                  hkc_buf *o) {
  (void)mode; /* the same CUDA serves the stdlib and plugins */
  hkc_buf_put(o, "/* Generated by hk " HK_VERSION_STRING
                 " (CUDA). Do not edit: edit the kernel file and generate "
                 "again.\n * Launch with 1-D blocks of 256 threads. */\n\n");
  hkc_emit_cuda_prelude(o);
  for (int f = 0; f < nfiles; f++)
    for (int i = 0; i < files[f]->nkernels; i++) {
      const hkc_kernel *k = &files[f]->kernels[i];
      if (!(k->targets & HK_TARGET_CUDA)) continue;
      for (int j = 0; j < k->ninst; j++) {
        const hkc_instance *in = &k->inst[j];
        hkc_buf_printf(o, "/* ---- %s: kernel \"%s\" (%s) ---- */\n\n",
                       in->name, k->name, hk_kind_name(k->kind));
        if (k->kind == HK_KIND_ELEMENTWISE)
          emit_elementwise(o, in);
        else if (k->kind == HK_KIND_REDUCTION)
          emit_reduction(o, in);
        else
          emit_raw(o, in);
      }
    }
  return o->oom ? -1 : 0;
}
