/* emit_grid.c — grid kernel instances to C and CUDA C (emit.h, abi.h).
 *
 * A grid kernel's body runs once per index of a 1- to 3-D index space
 * whose extents are len-style expressions over the scalars. Buffers are
 * pointers to the whole buffer (as in raw kernels), the indices int64_t.
 *
 * The body becomes hk_body__NAME(params, setup values, n, indices...), a
 * function of one index (so `return` ends the index, and the author's
 * locals and zeroed scratch arrays are the index's own); C compilers
 * inline it into the loop. hk_extents__NAME(args, n, e) computes the
 * extents in checked int64 arithmetic and returns the index count (-1 when
 * an extent is negative or a product overflows).
 * C: hk_grid__NAME(params, n, begin, end, extents) evaluates the setup
 * values once, then runs the flattened indices [begin, end) in C order,
 * stepping the indices with carries (no division per index). The range
 * entry point (abi.h) runs [begin, end), or with a partial pointer stores
 * the index count and the extents there: hk__par_grid asks for them, then
 * cuts [0, count) into tasks.
 * CUDA: hk_cuda__NAME(params..., n): each thread evaluates the extents and
 * the setup values, then takes a grid-stride share of the flattened
 * indices, with 32-bit index arithmetic below 2^31 indices; a grid kernel
 * without loops also gets hk_cuda_na__NAME, the same with restrict
 * pointers and an unrolled loop, for calls without aliasing.
 */
#include "abi.h"
#include "emit.h"

#define is_buffer hkc_is_buffer

static const char *local_ctype(const hkc_instance *in, const hkc_local *l) {
  return hkc_ctype(l->placeholder ? in->bind[l->placeholder - 'A'] : l->dtype);
}

/* The body as a function of one index. */
static void put_body_fn(hku_buf *o, const hkc_instance *in, const char *qual) {
  const hkc_kernel *k = in->k;
  const hkc_src *srcs[] = {&k->body};
  hku_buf_printf(o, "%svoid hk_body__%s(", qual, in->name);
  hkc_put_params(o, in, "", 1, 0);
  for (int i = 0; i < k->nsetup; i++)
    hku_buf_printf(o, "const %s %s, ", local_ctype(in, &k->setup[i]),
                   k->setup[i].name);
  hku_buf_put(o, "const size_t n");
  for (int d = 0; d < k->grid_rank; d++)
    hku_buf_printf(o, ", const int64_t %s", k->grid[d].name);
  hku_buf_put(o, ")\n{\n");
  hkc_put_scalar_locals(o, in, 4);
  hkc_put_holders(o, in, srcs, 1, 4);
  hkc_put_voids(o, in, HKC_ROLES_ALL, 4);
  hku_buf_put(o, "    (void)n;\n");
  for (int i = 0; i < k->nsetup; i++)
    hku_buf_printf(o, "    (void)%s;\n", k->setup[i].name);
  for (int d = 0; d < k->grid_rank; d++)
    hku_buf_printf(o, "    (void)%s;\n", k->grid[d].name);
  for (int i = 0; i < k->nscratch; i++)
    hku_buf_printf(o, "    %s %s[%lld] = {0};\n",
                   local_ctype(in, &k->scratch[i]), k->scratch[i].name,
                   (long long)k->scratch[i].count);
  hku_buf_put(o, "    {\n");
  hkc_put_code(o, &k->body, 8);
  hku_buf_put(o, "    }\n}\n\n");
}

/* The extents and the index count into hk_e[0..2] (1 past the rank) and
 * hk_count, with `int hk_bad` and the scalars (as stored, by name) in
 * scope; on a bad extent, `fail` (a statement). */
static void put_extents(hku_buf *o, const hkc_instance *in, const char *fail) {
  const hkc_kernel *k = in->k;
  hku_buf_put(o, "    int64_t hk_e[3] = {1, 1, 1};\n    int hk_any = 0;\n");
  /* every extent, then the check: the message (core/par.c) shows them all */
  for (int d = 0; d < k->grid_rank; d++) {
    hku_buf_printf(o, "    hk_e[%d] = ", d);
    int rc = hkc_emit_len(&k->grid[d].ext, in, o);
    HK_ASSERT(rc != HK_ESCHEMA); /* validated files hold valid extents */
    if (rc != HK_OK) o->oom = 1;
    /* an extent its expression could not compute (overflow, division by
     * zero) is INT64_MIN to the message, not hk_len's 0 */
    hku_buf_printf(o,
                   ";\n    if (hk_bad)\n"
                   "        hk_e[%d] = -9223372036854775807LL - 1;\n"
                   "    hk_any |= hk_e[%d] < 0;\n    hk_bad = 0;\n",
                   d, d);
  }
  hku_buf_printf(o, "    if (hk_any)\n        %s\n", fail);
  hku_buf_printf(o,
                 "    const int64_t hk_count = hk_len_mul(hk_len_mul(hk_e[0], "
                 "hk_e[1], &hk_bad), hk_e[2], &hk_bad);\n"
                 "    if (hk_bad)\n        %s\n",
                 fail);
}

/* "const TYPE NAME = (TYPE)(EXPR);" for each setup value. */
static void put_setup(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const hkc_src *srcs[64];
  int ns = 0;
  for (int i = 0; i < k->nsetup && ns < 64; i++) srcs[ns++] = &k->setup[i].value;
  hkc_put_holders(o, in, srcs, ns, 4);
  for (int i = 0; i < k->nsetup; i++) {
    const char *t = local_ctype(in, &k->setup[i]);
    hku_buf_printf(o, "    const %s %s = (%s)", t, k->setup[i].name, t);
    hkc_put_expr(o, &k->setup[i].value);
    hku_buf_printf(o, ";\n    (void)%s;\n", k->setup[i].name);
  }
}

/* "hk_body__NAME(x, hk_s_alpha, ..., setup..., n, I0, I1, I2);" */
static void put_body_call(hku_buf *o, const hkc_instance *in, int ind,
                          const char *const idx[3]) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "%*shk_body__%s(", ind, "", in->name);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hku_buf_printf(o, "%s%s, ", hkc_scalar_pre(in, p), p->name);
  }
  for (int i = 0; i < k->nsetup; i++)
    hku_buf_printf(o, "%s, ", k->setup[i].name);
  hku_buf_put(o, "n");
  for (int d = 0; d < k->grid_rank; d++) hku_buf_printf(o, ", %s", idx[d]);
  hku_buf_put(o, ");\n");
}

/* The scalars as stored, by name, from the argument array. */
static void put_scalars_from_args(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (is_buffer(p)) continue;
    hku_buf_printf(o, "    const %s %s = *(const %s *)hk_args[%d];\n    (void)%s;\n",
                   hkc_param_stype(in, p), p->name, hkc_param_stype(in, p), i,
                   p->name);
  }
}

/* ---- C ----------------------------------------------------------------------- */

static void put_extents_fn(hku_buf *o, const hkc_instance *in) {
  hku_buf_printf(o,
                 "static int64_t hk_extents__%s(void *const *hk_args, size_t n, "
                 "int64_t *hk_ext)\n{\n    int hk_bad = 0;\n    (void)hk_args;\n"
                 "    (void)n;\n",
                 in->name);
  put_scalars_from_args(o, in);
  /* on a bad extent, the extents for the message (core/par.c) */
  put_extents(o, in,
              "{\n            hk_ext[0] = hk_e[0];\n            hk_ext[1] = "
              "hk_e[1];\n            hk_ext[2] = hk_e[2];\n            return "
              "-1;\n        }");
  hku_buf_put(o,
              "    hk_ext[0] = hk_e[0];\n    hk_ext[1] = hk_e[1];\n"
              "    hk_ext[2] = hk_e[2];\n    return hk_count;\n}\n\n");
}

/* hk_grid__NAME(params, n, begin, end, extents): the setup values, then the
 * flattened indices [begin, end) in C order. */
static void put_grid_fn(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  static const char *const flat[3] = {"hk_g", NULL, NULL};
  hku_buf_printf(o, "HK_INLINE void hk_grid__%s(", in->name);
  hkc_put_params(o, in, "", 1, 0);
  hku_buf_put(o,
              "size_t n, int64_t hk_begin, int64_t hk_end, const int64_t "
              "*hk_e)\n{\n");
  hkc_put_scalar_locals(o, in, 4);
  put_setup(o, in);
  hkc_put_voids(o, in, HKC_ROLES_ALL, 4);
  hku_buf_put(o, "    (void)hk_e;\n");
  if (k->grid_rank == 1) {
    hku_buf_put(o, "    for (int64_t hk_g = hk_begin; hk_g < hk_end; ++hk_g)\n");
    put_body_call(o, in, 8, flat);
    hku_buf_put(o, "}\n\n");
    return;
  }
  /* the first index by division; then runs of the last index, each a
   * plain loop that the compiler can vectorise (one carry a run, not an
   * element: a loopless 2-D body took 3-6 times the 1-D form's time), the
   * indices in the same order as ever */
  static const char *const idx2[3] = {"hk_i0", "hk_j", NULL};
  static const char *const idx3[3] = {"hk_i0", "hk_i1", "hk_j"};
  const int last = k->grid_rank - 1;
  if (k->grid_rank == 2)
    hku_buf_put(o,
                "    int64_t hk_i0 = hk_begin / hk_e[1], hk_i1 = hk_begin % "
                "hk_e[1];\n");
  else
    hku_buf_put(o,
                "    int64_t hk_i0 = hk_begin / (hk_e[1] * hk_e[2]);\n"
                "    int64_t hk_i1 = hk_begin / hk_e[2] % hk_e[1];\n"
                "    int64_t hk_i2 = hk_begin % hk_e[2];\n");
  hku_buf_printf(o,
                 "    for (int64_t hk_g = hk_begin; hk_g < hk_end;) {\n"
                 "        const int64_t hk_stop = hk_e[%d] - hk_i%d < hk_end - "
                 "hk_g ? hk_e[%d] : hk_i%d + (hk_end - hk_g);\n"
                 "        for (int64_t hk_j = hk_i%d; hk_j < hk_stop; ++hk_j)\n",
                 last, last, last, last, last);
  put_body_call(o, in, 12, k->grid_rank == 2 ? idx2 : idx3);
  hku_buf_printf(o, "        hk_g += hk_stop - hk_i%d;\n        hk_i%d = 0;\n",
                 last, last);
  if (k->grid_rank == 2)
    hku_buf_put(o, "        ++hk_i0;\n    }\n}\n\n");
  else
    hku_buf_put(o, "        if (++hk_i1 == hk_e[1]) {\n            hk_i1 = 0;\n"
                   "            ++hk_i0;\n        }\n    }\n}\n\n");
}

void hkc_emit_grid_c(hku_buf *o, const hkc_instance *in, hkc_emit_mode mode) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  put_body_fn(o, in, "HK_INLINE ");
  put_extents_fn(o, in);
  put_grid_fn(o, in);
  /* range(args, n, begin, end, partial) (abi.h) */
  hku_buf_printf(o,
                 "%svoid " HK_ABI_RANGE "%s(void *const *hk_args, size_t n, "
                 "size_t hk_begin, size_t hk_end, void *hk_partial)\n{\n"
                 "    int64_t hk_e[4];\n"
                 "    if (hk_partial) {\n"
                 "        int64_t *hk_x = (int64_t *)hk_partial;\n"
                 "        hk_x[0] = hk_extents__%s(hk_args, n, hk_x + 1);\n"
                 "        return;\n    }\n"
                 "    if (hk_extents__%s(hk_args, n, hk_e) < 0)\n"
                 "        return;\n    hk_grid__%s(",
                 mode == HKC_EMIT_STDLIB ? "static " : "", nm, nm, nm, nm);
  for (int i = 0; i < k->nparams; i++) {
    hkc_put_arg(o, in, i);
    hku_buf_put(o, ", ");
  }
  hku_buf_put(o, "n, (int64_t)hk_begin, (int64_t)hk_end, hk_e);\n}\n\n");
  if (mode != HKC_EMIT_STDLIB) return;
  /* the typed function: the thread pool over every index */
  hkc_emit_typed_proto(in, o);
  hku_buf_put(o, ";\n");
  hkc_emit_typed_proto(in, o);
  hku_buf_printf(o, "\n{\n    void *const hk_args[%d] = {", k->nparams);
  for (int i = 0; i < k->nparams; i++)
    hku_buf_printf(o, "%s(void *)%s%s", i ? ", " : "",
                   is_buffer(&k->params[i]) ? "" : "&", k->params[i].name);
  hku_buf_printf(o,
                 "};\n    (void)hk__par_grid(" HK_ABI_RANGE
                 "%s, hk_args, n, %uu);\n}\n\n",
                 nm, hkc_is_heavy(k) ? HK_ABI_HEAVY : 0u);
}

/* ---- CUDA -------------------------------------------------------------------- */

/* The kernel NAME (HK_ABI_CUDA_KERNEL) over the body function, or with
 * noalias its variant HK_ABI_CUDA_NOALIAS: restrict pointers and the
 * index loop unrolled, so that the next indices' loads are issued before
 * this one's stores (a 1-D grid add on an H200: 84% of the elementwise
 * add's bandwidth, 96% so; unrolling alone did nothing), for calls whose
 * written buffers overlap no other buffer (call.c decides). The indices
 * come from the flat one in 32 bits below 2^31 indices: a 64-bit division
 * is a long instruction sequence on the GPU, a 32-bit one a few (the test
 * is the same for every thread). */
static void put_cuda_kernel(hku_buf *o, const hkc_instance *in, int noalias) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "extern \"C\" __global__ void %s%s(",
                 noalias ? HK_ABI_CUDA_NOALIAS : HK_ABI_CUDA_KERNEL, in->name);
  hkc_put_params(o, in, noalias ? "__restrict__ " : "", 1, 0);
  hku_buf_put(o, "size_t n)\n{\n    int hk_bad = 0;\n");
  hkc_put_scalar_locals(o, in, 4); /* the extents read them */
  put_extents(o, in, "return;");
  put_setup(o, in);
  hkc_put_voids(o, in, HKC_ROLES_ALL, 4);
  hku_buf_printf(o,
                 "    const int64_t hk_stride = (int64_t)blockDim.x * "
                 "gridDim.x;\n"
                 "    const int hk_small = hk_count < 0x80000000LL;\n"
                 "    (void)hk_small;\n%s"
                 "    for (int64_t hk_g = (int64_t)blockIdx.x * blockDim.x + "
                 "threadIdx.x; hk_g < hk_count;\n"
                 "         hk_g += hk_stride) {\n",
                 noalias ? "#pragma unroll 4\n" : "");
  static const char *const idx1[3] = {"hk_g", NULL, NULL};
  static const char *const idxn[3] = {"hk_i0", "hk_i1", "hk_i2"};
  if (k->grid_rank == 2)
    hku_buf_put(o,
                "        const int64_t hk_i0 = hk_small ? (int64_t)((uint32_t)"
                "hk_g / (uint32_t)hk_e[1]) : hk_g / hk_e[1];\n"
                "        const int64_t hk_i1 = hk_g - hk_i0 * hk_e[1];\n");
  else if (k->grid_rank == 3)
    hku_buf_put(o,
                "        const int64_t hk_q = hk_small ? (int64_t)((uint32_t)"
                "hk_g / (uint32_t)hk_e[2]) : hk_g / hk_e[2];\n"
                "        const int64_t hk_i2 = hk_g - hk_q * hk_e[2];\n"
                "        const int64_t hk_i0 = hk_small ? (int64_t)((uint32_t)"
                "hk_q / (uint32_t)hk_e[1]) : hk_q / hk_e[1];\n"
                "        const int64_t hk_i1 = hk_q - hk_i0 * hk_e[1];\n");
  put_body_call(o, in, 8, k->grid_rank == 1 ? idx1 : idxn);
  hku_buf_put(o, "    }\n}\n\n");
}

void hkc_emit_grid_cuda(hku_buf *o, const hkc_instance *in,
                        hkc_emit_mode mode) {
  (void)mode; /* the same CUDA serves the stdlib and plugins */
  put_body_fn(o, in, "static __device__ __forceinline__ ");
  put_cuda_kernel(o, in, 0);
  if (!hkc_is_heavy(in->k)) /* memory-bound, and small to compile twice */
    put_cuda_kernel(o, in, 1);
}
