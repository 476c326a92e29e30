/* emit_c.c — kernel instances to C (see emit.h and common/abi.h).
 *
 * The shapes the C takes, per kind, chosen for what gcc -O3 does with them:
 *   elementwise  a loop over [begin, end) that loads each buffer element
 *                into a local named after its parameter, runs the body in a
 *                do { } while (0) (so break/continue end the element), and
 *                stores out/inout locals back. HK_IVDEP tells the compiler
 *                iterations are independent, so it vectorizes without
 *                runtime alias checks and in-place calls stay correct.
 *   reduction    a block is reduced into hkc_reduce_lanes() independent
 *                accumulators (vector registers after SLP vectorization),
 *                combined in a fixed tree, then the block's tail in order;
 *                blocks are merged left to right. The order never depends
 *                on the compiler or the thread count. A struct
 *                accumulator (reduce.c) takes the same path, its identity,
 *                map and combine as functions over the struct.
 *   raw          the author's body as the body of a static function.
 *   rows         emit_rows.c: the body as a function of one row.
 * Integer overflow wraps and floating point is not contracted: generated
 * code is built with -fwrapv -ffp-contract=off everywhere (tcc behaves so),
 * so jit, opt and stdlib results agree.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "codegen.h"
#include "emit.h"

int hkc_reduce_lanes(size_t acc_size) { return acc_size >= 8 ? 8 : 16; }

/* rowred takes rows shorter than this many times the lanes in batches
 * (emit_rowbatch): per-row sums, one thread, against the rows one by one
 * (x86-64-v3, AVX2 EPYC): f32 (16 lanes, 8 rows a batch) as fast at 48,
 * 1.1-1.2 times slower from 64; f64 (8 lanes, 4 rows) still 1.2-1.4
 * times faster at 40 and 48, even at 64 */
#define HK_ROWB_LANES(es) ((es) == 8 ? 8 : 3)
/* ... and rows of 2 to this many elements, one run, by shuffles (emit_rowc):
 * per-row sums of 1M floats, one thread (x86-64-v4 EPYC), rows of 2, 3, 4,
 * 5, 6 397, 296, 247, 227, 203 -> 144, 112, 117, 83, 107 us (whole sum:
 * 53); at x86-64-v3 (AVX2, whose two-vector shuffles take several
 * instructions) rows of 7 were 17 % slower for mean, rows of 8 to 11 10-30
 * % slower for sum; doubles (4 rows a vector) rows of 2 234 -> 166 us, but
 * 3 neutral and 4 slower (170 -> 211: 12 shuffles for 16 cheap loads) */
#define HK_ROWC_MAX(es) ((es) == 8 ? 2 : 6)
/* ... and to this many where two-vector shuffles are one instruction
 * (HK_ROWC_WIDE, AVX-512VL): at x86-64-v4 sums over rows of 7 and 8
 * floats 190, 181 -> 131, 152 us, max 267, 257 -> 183, 204, mean 235, 269
 * -> 199, 184; rows of 9 to 11 were faster for sum and max, 3-16 % slower
 * for mean (a division a row as well) */
#define HK_ROWC_WIDE_MAX(es) ((es) == 8 ? 2 : 8)
/* ... which on other CPUs with 32-byte vectors (AVX2) take rows of 4 to 8
 * four-byte elements by an 8 x 8 transpose (put_rowc_t8_case) */
#define HK_ROWC_T8(es, m) ((es) == 4 && (m) >= 4 && (m) <= 8)
/* ... and rows of 9 to this many by two (0: none), on AVX2 only */
#define HK_ROWC_T8_MAX(es) ((es) == 4 ? 15 : 0)
/* ... and argmax/argmin rows shorter than this (emit_argsel.c: one
 * element of each of W rows a step); past it the vector loop over one row
 * at a time is faster (argmax f32, 8 rows a batch: as fast at 224; f64, 4
 * rows: 1.4 times faster at 100, 1.05 times slower at 128) */
#define HK_ROWB_ARGSEL(es) ((es) == 8 ? 112 : 224)

/* ---- Helpers ----------------------------------------------------------------- */

#define ct hkc_param_ctype
#define is_buffer hkc_is_buffer

static const char *dtype_enum(hk_dtype_t t) {
  static const char *const e[HK_DTYPE_COUNT] = {
      "HK_DTYPE_INVALID", "HK_F32", "HK_F64", "HK_I8",  "HK_I16", "HK_I32",
      "HK_I64",           "HK_U8",  "HK_U16", "HK_U32", "HK_U64",
      "HK_F16",           "HK_BF16", "HK_BOOL"};
  return (unsigned)t < HK_DTYPE_COUNT ? e[t] : e[0];
}

/* "" for plugins (the entry points are exported), "static " in the stdlib
 * (its table points at them). */
static const char *link_of(hkc_emit_mode mode) {
  return mode == HKC_EMIT_STDLIB ? "static " : "";
}

/* Every parameter (but a reduction's results with skip_out) from the
 * argument array, with ", " between them. */
static void put_args_call(hku_buf *o, const hkc_instance *in, unsigned skip_out) {
  const hkc_kernel *k = in->k;
  int first = 1;
  for (int i = 0; i < k->nparams; i++) {
    if (skip_out && hkc_is_result(&k->params[i])) continue;
    hku_buf_put(o, first ? "" : ", ");
    hkc_put_arg(o, in, i);
    first = 0;
  }
}

void hkc_emit_typed_proto(const hkc_instance *in, hku_buf *o) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "HK_API void hk_%s(", in->name);
  /* as hkc_put_params, but a scalar keeps its name whatever its type: the
   * typed function passes it on as stored */
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (is_buffer(p))
      hkc_put_param(o, in, p, "", 0);
    else
      hku_buf_printf(o, "%s %s", hkc_param_stype(in, p), p->name);
    hku_buf_put(o, ", ");
  }
  /* rows kernels: the row count, then the row length */
  hku_buf_put(o, in->k->kind == HK_KIND_ROWS ? "size_t rows, size_t n)"
                                              : "size_t n)");
}

/* The typed public function's declaration, then the head of its
 * definition (stdlib). */
static void put_typed_head(hku_buf *o, const hkc_instance *in) {
  hkc_emit_typed_proto(in, o);
  hku_buf_put(o, ";\n");
  hkc_emit_typed_proto(in, o);
}

/* void *const hk_args[N] = {...}: the typed parameters as an argument array. */
static void put_args_array(hku_buf *o, const hkc_instance *in, int ind) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "%*svoid *const hk_args[%d] = {", ind, "", k->nparams);
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hku_buf_printf(o, "%s(void *)%s%s", i ? ", " : "", is_buffer(p) ? "" : "&",
                   p->name);
  }
  hku_buf_put(o, "};\n");
}

/* The typed parameter names, each followed by ", " (with skip_out, all but
 * a reduction's results). */
static void put_names(hku_buf *o, const hkc_kernel *k, int skip_out) {
  for (int i = 0; i < k->nparams; i++)
    if (!skip_out || !hkc_is_result(&k->params[i]))
      hku_buf_printf(o, "%s, ", k->params[i].name);
}

static unsigned flags_of(const hkc_kernel *k) {
  return hkc_is_heavy(k) ? HK_ABI_HEAVY : 0u;
}

/* The head of an instance's range entry point (abi.h, hk_range_fn). */
static void put_range_head(hku_buf *o, const hkc_instance *in,
                           hkc_emit_mode mode) {
  hku_buf_printf(o,
                 "%svoid " HK_ABI_RANGE "%s(void *const *hk_args, size_t n, "
                 "size_t hk_begin, size_t hk_end, void *hk_partial)\n{\n",
                 link_of(mode), in->name);
}

/* ---- elementwise --------------------------------------------------------------- */

/* Elements per block of the staged loop below. */
#define HKC_STAGE 256

/* Staged buffers go through float arrays of HKC_STAGE elements, converted
 * in loops (or block functions) of their own; the body's loop then sees
 * floats. Every f16 buffer is: with F16C the block conversions are a few
 * instructions per 8 elements, where the software conversions inside the
 * body's loop made add_f16 3 times slower than add_f32 at 1M (9 times in
 * cache); x86-64-v3, 1 thread: 1.5 -> 0.3 ns per element; without F16C
 * the split loses nothing (baseline x86-64: 2.9 -> 2.3 ns). A bf16 buffer
 * (a shift to load, a few integer operations to store) is staged only when
 * the code calls a math function, whose loop is long enough that its
 * conversions vectorise better apart. The arithmetic is the same, so are
 * the bits. */
static int staged(const hkc_instance *in, const hkc_param *p) {
  hk_dtype_t t = hkc_param_type(in, p);
  return is_buffer(p) &&
         (t == HK_F16 || (t == HK_BF16 && hkc_is_heavy(in->k)));
}

/* The body of element i, indented by ind: the locals of its buffers (a
 * staged one's from hk_t_NAME[hk_j]), the author's code, the stores. */
static void put_element(hku_buf *o, const hkc_instance *in, int ind) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    const char *cq = p->role == HK_ROLE_IN ? "const " : "";
    if (p->role == HK_ROLE_OUT)
      hku_buf_printf(o, "%*s%s %s = 0;\n", ind, "", ct(in, p), p->name);
    else if (p->role != HK_ROLE_SCALAR && staged(in, p))
      hku_buf_printf(o, "%*s%s%s %s = hk_t_%s[hk_j];\n", ind, "", cq,
                     ct(in, p), p->name, p->name);
    else if (p->role != HK_ROLE_SCALAR)
      hku_buf_printf(o, "%*s%s%s %s = %shk_p_%s[i]%s;\n", ind, "", cq,
                     ct(in, p), p->name, hkc_load_pre(t), p->name,
                     hkc_conv_post(t));
  }
  hkc_put_voids(o, in, HKC_ROLES_BUFFERS, ind);
  hku_buf_printf(o, "%*sdo {\n", ind, "");
  hkc_put_code(o, &k->body, ind + 4);
  hku_buf_printf(o, "%*s} while (0);\n", ind, "");
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (p->role != HK_ROLE_OUT && p->role != HK_ROLE_INOUT) continue;
    if (staged(in, p))
      hku_buf_printf(o, "%*shk_t_%s[hk_j] = %s;\n", ind, "", p->name, p->name);
    else
      hku_buf_printf(o, "%*shk_p_%s[i] = %s%s%s;\n", ind, "", p->name,
                     hkc_store_pre(t), p->name, hkc_conv_post(t));
  }
}

/* A staged block's conversions: the inputs (load) to the float arrays, or
 * the float arrays to the outputs. f16 goes through the prelude's block
 * functions (F16C where the compiler targets it), bf16 through a loop (a
 * shift one way, a few integer operations the other: it vectorises). */
static void put_stage_conversions(hku_buf *o, const hkc_instance *in,
                                  int load) {
  const hkc_kernel *k = in->k;
  int loop = 0;
  for (int pass = 0; pass < 2; pass++)
    for (int i = 0; i < k->nparams; i++) {
      const hkc_param *p = &k->params[i];
      hk_dtype_t t = hkc_param_type(in, p);
      if (!staged(in, p) || p->role == (load ? HK_ROLE_OUT : HK_ROLE_IN) ||
          (pass == 0) != (t == HK_F16))
        continue;
      if (t == HK_F16 && load)
        hku_buf_printf(o, "        hk_f16_to_f32_n(hk_p_%s + hk_b, hk_t_%s, hk_m);\n",
                       p->name, p->name);
      else if (t == HK_F16)
        hku_buf_printf(o, "        hk_f32_to_f16_n(hk_t_%s, hk_p_%s + hk_b, hk_m);\n",
                       p->name, p->name);
      else {
        if (!loop++)
          hku_buf_put(o, "        HK_IVDEP\n"
                         "        for (size_t hk_j = 0; hk_j < hk_m; ++hk_j) {\n");
        if (load)
          hku_buf_printf(o,
                         "            hk_t_%s[hk_j] = %shk_p_%s[hk_b + hk_j]%s;\n",
                         p->name, hkc_load_pre(t), p->name, hkc_conv_post(t));
        else
          hku_buf_printf(o,
                         "            hk_p_%s[hk_b + hk_j] = %shk_t_%s[hk_j]%s;\n",
                         p->name, hkc_store_pre(t), p->name, hkc_conv_post(t));
      }
    }
  if (loop) hku_buf_put(o, "        }\n");
}

/* hk_loop__NAME(params, n, begin, end): the body over [begin, end). */
static void emit_loop_fn(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const hkc_src *srcs[] = {&k->body};
  int nstaged = 0;
  for (int i = 0; i < k->nparams; i++) nstaged += staged(in, &k->params[i]);

  hku_buf_printf(o, "HK_INLINE void hk_loop__%s(", in->name);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_put(o, "size_t n, size_t hk_begin, size_t hk_end)\n{\n");
  hkc_put_holders(o, in, srcs, 1, 4);
  hkc_put_scalar_locals(o, in, 4);
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_SCALAR), 4);
  hku_buf_put(o, "    (void)n;\n");
  if (!nstaged) {
    hku_buf_put(o, "    HK_IVDEP\n");
    hku_buf_put(o, "    for (size_t i = hk_begin; i < hk_end; ++i) {\n");
    put_element(o, in, 8);
    hku_buf_put(o, "    }\n}\n\n");
    return;
  }
  /* staged: each block's 16-bit inputs converted, the body, the outputs
   * converted (an in-place call reads a block before it writes it) */
  hku_buf_printf(o,
                 "    for (size_t hk_b = hk_begin; hk_b < hk_end; hk_b += %d) "
                 "{\n"
                 "        const size_t hk_m = hk_end - hk_b < %d ? hk_end - "
                 "hk_b : %d;\n",
                 HKC_STAGE, HKC_STAGE, HKC_STAGE);
  for (int i = 0; i < k->nparams; i++)
    if (staged(in, &k->params[i]))
      hku_buf_printf(o, "        float hk_t_%s[%d];\n", k->params[i].name,
                     HKC_STAGE);
  put_stage_conversions(o, in, 1);
  hku_buf_put(o, "        HK_IVDEP\n"
                 "        for (size_t hk_j = 0; hk_j < hk_m; ++hk_j) {\n"
                 "            const size_t i = hk_b + hk_j;\n"
                 "            (void)i;\n");
  put_element(o, in, 12);
  hku_buf_put(o, "        }\n");
  put_stage_conversions(o, in, 0);
  hku_buf_put(o, "    }\n}\n\n");
}

/* A unary 16-bit float kernel of the stdlib (an in and an out of one
 * 16-bit float type, nothing else, strict fp) whose body calls a costly
 * math function (exp, tanh, erf, ...; not fabs or sqrt, which cost less
 * than the lookup) and depends on x alone (the body names neither i nor
 * n, and neither it nor a helper anything that could keep state): such a
 * kernel has 65,536 possible inputs, so from HK_LUT_MIN elements on it
 * reads its results from a table of them, which its own loop fills on
 * first use (hk__lut16). The same loop computed every entry, so the bits
 * are those of the computed path. */
static int lut_eligible(const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  if (k->kind != HK_KIND_ELEMENTWISE || k->nparams != 2 || k->fp_fast ||
      k->params[0].role != HK_ROLE_IN || k->params[1].role != HK_ROLE_OUT)
    return 0;
  int costly = hkc_code_calls_costly_math(&k->body);
  for (int h = 0; h < k->nhelpers && !costly; h++)
    costly = hkc_code_calls_costly_math(&k->helpers[h].body);
  if (!costly) return 0;
  hk_dtype_t a = hkc_param_type(in, &k->params[0]),
             b = hkc_param_type(in, &k->params[1]);
  if (a != b || (a != HK_F16 && a != HK_BF16)) return 0;
  static const char *const state[] = {"i",      "n",      "static",
                                      "extern", "volatile", "_Thread_local",
                                      "__thread"};
  for (size_t j = 0; j < sizeof state / sizeof *state; j++) {
    if (hkc_code_uses(&k->body, state[j])) return 0;
    for (int h = 0; h < k->nhelpers; h++)
      if (j >= 2 && hkc_code_uses(&k->helpers[h].body, state[j])) return 0;
  }
  return 1;
}

/* The table loop of a lut_eligible instance: hk_lutloop__NAME, with
 * hk_loop__NAME's parameters. */
static void emit_lut_fn(hku_buf *o, const hkc_instance *in) {
  const char *nm = in->name, *x = in->k->params[0].name,
             *y = in->k->params[1].name;
  hku_buf_printf(o,
                 "static void *hk_lut__%s;\n\n"
                 "static void hk_lutfill__%s(uint16_t *hk_tab, const uint16_t "
                 "*hk_pat, size_t n)\n{\n"
                 "    hk_loop__%s(hk_pat, hk_tab, n, 0, n);\n}\n\n",
                 nm, nm, nm);
  hku_buf_printf(o, "HK_INLINE void hk_lutloop__%s(", nm);
  hkc_put_params(o, in, "hk_p_", 1, 0);
  hku_buf_printf(
      o,
      "size_t n, size_t hk_begin, size_t hk_end)\n{\n"
      "    const uint16_t *hk_tab =\n"
      "        n >= %d ? hk__lut16(&hk_lut__%s, hk_lutfill__%s) : NULL;\n"
      "    if (!hk_tab) {\n"
      "        hk_loop__%s(hk_p_%s, hk_p_%s, n, hk_begin, hk_end);\n"
      "        return;\n    }\n"
      "    for (size_t i = hk_begin; i < hk_end; ++i)\n"
      "        hk_p_%s[i] = hk_tab[hk_p_%s[i]];\n}\n\n",
      HK_LUT_MIN, nm, nm, nm, x, y, y, x);
}

/* Elementwise: the loop function, the range entry point and (stdlib)
 * the typed function, which runs on the thread pool from hk__par_min on. */
static void emit_elementwise(hku_buf *o, const hkc_instance *in,
                             hkc_emit_mode mode) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;

  const int lut = mode == HKC_EMIT_STDLIB && lut_eligible(in);
  const char *loop = lut ? "hk_lutloop__" : "hk_loop__";
  emit_loop_fn(o, in);
  if (lut) emit_lut_fn(o, in);
  put_range_head(o, in, mode);
  hku_buf_printf(o, "    (void)hk_partial;\n    %s%s(", loop, nm);
  put_args_call(o, in, 0);
  hku_buf_put(o, ", n, hk_begin, hk_end);\n}\n\n");

  if (mode == HKC_EMIT_STDLIB) {
    unsigned fl = flags_of(k);
    put_typed_head(o, in);
    hku_buf_printf(o, "\n{\n    if (n >= hk__par_min[%u]) {\n", fl);
    put_args_array(o, in, 8);
    hku_buf_printf(o,
                   "        hk__par_elementwise(" HK_ABI_RANGE
                   "%s, hk_args, n, %uu);\n"
                   "        return;\n    }\n    %s%s(",
                   nm, fl, loop, nm);
    put_names(o, k, 0);
    hku_buf_put(o, "n, 0, n);\n}\n\n");
  }
}

/* ---- reduction --------------------------------------------------------------------- */

/* The locals of element i: "const float x = hk_p_x[i];" for each in. */
static void put_element_locals(hku_buf *o, const hkc_instance *in, int ind,
                               int blocked) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hk_dtype_t t = hkc_param_type(in, p);
    if (p->role == HK_ROLE_IN && blocked && t == HK_F16)
      hku_buf_printf(o, "%*sconst %s %s = hk_t_%s[hk_l];\n", ind, "",
                     ct(in, p), p->name, p->name);
    else if (p->role == HK_ROLE_IN)
      hku_buf_printf(o, "%*sconst %s %s = %shk_p_%s[i]%s;\n", ind, "",
                     ct(in, p), p->name, hkc_load_pre(t), p->name,
                     hkc_conv_post(t));
  }
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_IN), ind);
}

static int is_struct(const hkc_instance *in) {
  return in->k->acc_form == HKC_ACC_STRUCT;
}

/* f32, or a 16-bit float computed in f32 */
static int is_f32_math(hk_dtype_t t) {
  return t == HK_F32 || t == HK_F16 || t == HK_BF16;
}

/* 1 when every accumulator value is an f32 (a struct's fields f32 or
 * f64): then the lane loop is kept a loop (HK_LANE_LOOP, prelude.c), which
 * gcc vectorises where the unrolled lanes stayed scalar: min and max of
 * f32 1.5 times faster, of bf16 2 times (16K elements, AVX-512,
 * alternating runs). One vector of lanes is one chain of compare and
 * select; the unrolled scalar lanes are 16 chains, as fast with 8 lanes of
 * a plain f64 (max of f64 took 1.35 times as long as a loop) and faster
 * with integer lanes (sum of i8 in i64: 4.6 times), so those stay
 * unrolled. Structs of f64 fields gain as a loop over one array per field
 * (emit_part): var_f64 1.34 -> 0.46 ns per element, minmax_f64 0.44-0.53
 * -> 0.35, logsumexp_f64 18.7 -> 3.0. */
static int lanes_as_loop(const hkc_instance *in) {
  if (!is_struct(in)) return is_f32_math(hkc_acc_type(in));
  for (int f = 0; f < in->k->nacc_fields; f++) {
    hk_dtype_t t = hkc_acc_field_type(in, &in->k->acc_fields[f]);
    if (!is_f32_math(t) && t != HK_F64) return 0;
  }
  return 1;
}

/* hk_final__NAME(acc, n, ...): finalizes an accumulator, used by range,
 * merge and the typed function. The simple forms return the result (of the
 * result parameter's type) and take an inout result's current value; a
 * struct's takes a pointer to each result and stores them. The scalars
 * come last. */
static void emit_final(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const hkc_src *srcs[] = {&k->finalize};

  if (is_struct(in)) {
    hku_buf_printf(o, "HK_INLINE void hk_final__%s(const %s acc, size_t n",
                   in->name, acc);
    for (int i = 0; i < k->nparams; i++)
      if (hkc_is_result(&k->params[i]))
        hku_buf_printf(o, ", %s *hk_o_%s", hkc_param_stype(in, &k->params[i]),
                       k->params[i].name);
  } else {
    const hkc_param *r = &k->params[hkc_result_index(k)];
    hku_buf_printf(o, "HK_INLINE %s hk_final__%s(const %s acc, size_t n",
                   ct(in, r), in->name, acc);
    if (r->role == HK_ROLE_INOUT)
      hku_buf_printf(o, ", const %s %s", ct(in, r), r->name);
  }
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) {
      hku_buf_put(o, ", ");
      hkc_put_param(o, in, &k->params[i], "", 1);
    }
  hku_buf_put(o, ")\n{\n");
  hkc_put_holders(o, in, srcs, 1, 4);
  hkc_put_scalar_locals(o, in, 4);
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_SCALAR), 4);
  if (is_struct(in)) {
    hkc_put_result_locals(o, in, "*hk_o_", "", 4);
    hku_buf_put(o, "    (void)acc;\n    (void)n;\n    {\n");
    hkc_put_code(o, &k->finalize, 8);
    hku_buf_put(o, "    }\n");
    hkc_put_result_stores(o, in, "*hk_o_", "", 4);
    hku_buf_put(o, "}\n\n");
    return;
  }
  const hkc_param *r = &k->params[hkc_result_index(k)];
  const char *out = ct(in, r);
  if (r->role == HK_ROLE_INOUT) hku_buf_printf(o, "    (void)%s;\n", r->name);
  hku_buf_put(o, "    (void)n;\n");
  if (k->finalize.text) {
    hku_buf_printf(o, "    return (%s)", out);
    hkc_put_expr(o, &k->finalize);
    hku_buf_put(o, ";\n}\n\n");
  } else if (!strcmp(out, acc)) {
    hku_buf_put(o, "    return acc;\n}\n\n");
  } else {
    hku_buf_printf(o, "    return (%s)acc;\n}\n\n", out);
  }
}

/* The value of element i as an accumulator: "(float)(MAP)", or the struct
 * map function's call. */
static void put_map_value(hku_buf *o, const hkc_instance *in) {
  char cb[HKC_ACC_CTYPE_MAX];
  if (is_struct(in)) {
    hkc_put_map_call(o, in, "", "", "i");
    return;
  }
  hku_buf_printf(o, "(%s)", hkc_acc_ctype(in, cb));
  hkc_put_expr(o, &in->k->map);
}

/* Combines whose lane tree is written in vectors (vec_tree): a sum, and
 * the stdlib's NaN-propagating min and max (a select by a mask). */
enum { VT_NONE, VT_ADD, VT_MIN, VT_MAX };

/* The form of a plain reduction's combine, when its tree can be written in
 * vectors of its accumulator type (32- and 64-bit, whose vector ops are
 * the scalar ops lane by lane: no promotion), else VT_NONE. */
static int vec_tree_form(const hkc_instance *in) {
  if (is_struct(in) || !in->k->combine.text) return VT_NONE;
  switch (hkc_acc_type(in)) {
    case HK_F32: case HK_F64: case HK_I32: case HK_U32: case HK_I64:
    case HK_U64:
      break;
    default:
      return VT_NONE;
  }
  char t[64];
  size_t n = 0;
  for (const char *p = in->k->combine.text; *p; p++) {
    if (*p == ' ' || *p == '\t' || *p == '\n') continue;
    if (n + 1 >= sizeof t) return VT_NONE;
    t[n++] = *p;
  }
  t[n] = '\0';
  if (!strcmp(t, "a+b")) return VT_ADD;
  if (!strcmp(t, "(a<b||a!=a)?a:b")) return VT_MIN;
  if (!strcmp(t, "(a>b||a!=a)?a:b")) return VT_MAX;
  return VT_NONE;
}

/* The lane tree in vectors: at step w, lanes [0, w) combined with lanes
 * [w, 2w) as one vector operation each (the pairs of the scalar tree, in
 * its order), down to w = 2; the last pair by the combine. Over rows of
 * 16 elements a row's scalar tree (15 scalar ops and their shuffles) was
 * most of its time: per-row sums over (65536, 16) 4.2 -> 1.7-2.3 times
 * the whole sum's time, (16384, 64) 1.4-1.8 -> 1.0 (AVX2, a copy of the
 * generated loop). */
static void put_vec_tree(hku_buf *o, const hkc_instance *in, int lanes,
                         int form) {
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const char *mask = hkc_acc_size(in) == 8 ? "int64_t" : "int32_t";
  for (int w = lanes / 2; w >= 2; w /= 2) {
    /* vectors built from the lanes and stored back element by element:
     * memcpy through the lane array took its address, and gcc then kept
     * the lanes on the stack in the loop over the row (per-row sums over
     * (256, 768) 2.1 times slower) */
    hku_buf_printf(o,
                   "    {\n"
                   "        typedef %s hk_vt __attribute__((vector_size(%d * "
                   "sizeof(%s))));\n"
                   "        hk_vt hk_x = {",
                   acc, w, acc);
    for (int l = 0; l < w; l++)
      hku_buf_printf(o, "%shk_lane[%d]", l ? ", " : "", l);
    hku_buf_put(o, "};\n        hk_vt hk_y = {");
    for (int l = 0; l < w; l++)
      hku_buf_printf(o, "%shk_lane[%d]", l ? ", " : "", w + l);
    hku_buf_put(o, "};\n");
    if (form == VT_ADD)
      hku_buf_put(o, "        hk_x = hk_x + hk_y;\n");
    else
      hku_buf_printf(o,
                     "        typedef %s hk_vm __attribute__((vector_size(%d * "
                     "sizeof(%s))));\n"
                     "        const hk_vm hk_m = (hk_x %s hk_y) | (hk_x != hk_x);\n"
                     "        hk_x = (hk_vt)(((hk_vm)hk_x & hk_m) | "
                     "((hk_vm)hk_y & ~hk_m));\n",
                     mask, w, acc, form == VT_MIN ? "<" : ">");
    hku_buf_printf(o,
                   "        for (int hk_l = 0; hk_l < %d; ++hk_l)\n"
                   "            hk_lane[hk_l] = hk_x[hk_l];\n"
                   "    }\n",
                   w);
  }
  hku_buf_printf(o, "    hk_lane[0] = hk_combine__%s(hk_lane[0], hk_lane[1]);\n",
                 in->name);
}

/* hk_part__NAME(ins, scalars, n, begin, end): the block reducer, in
 * hkc_reduce_lanes() lanes combined in a fixed tree, then the tail. */
static void emit_part(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  int lanes = hkc_reduce_lanes(hkc_acc_size(in));
  const hkc_src *srcs[] = {&k->map, &k->combine, &k->identity};

  hku_buf_printf(o, "HK_INLINE %s hk_part__%s(", acc, nm);
  hkc_put_params(o, in, "hk_p_", 1, 1);
  hku_buf_put(o, "size_t n, size_t hk_begin, size_t hk_end)\n{\n");
  const int argsel = hkc_argsel_form(in);
  if (argsel) {
    hku_buf_put(o, "#if HK_VEC_TREE\n");
    hkc_put_argsel_part(o, in, argsel);
  }
  /* a struct's expressions are in its functions */
  hkc_put_holders(o, in, srcs, is_struct(in) ? 0 : 3, 4);
  hkc_put_scalar_locals(o, in, 4);
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_SCALAR), 4);
  hku_buf_printf(o, "    (void)n;\n    %s hk_lane[%d];\n", acc, lanes);
  hku_buf_printf(o, "    for (int hk_l = 0; hk_l < %d; ++hk_l)\n", lanes);
  hku_buf_put(o, "        hk_lane[hk_l] = ");
  hkc_put_identity_call(o, in);
  hku_buf_put(o, ";\n");
  /* A struct of f32 or f64 fields runs its lane loop over one array per
   * field (the same lanes, combined in the same order: the same bits): over the
   * array of structs gcc vectorised with permutes that joined the fields
   * in one register each pass, so that a cheap field (logsumexp's maximum)
   * waited on a costly one (its sum, behind an exp) and the exp's whole
   * latency was carried from pass to pass. */
  const int soa = is_struct(in) && lanes_as_loop(in);
  for (int f = 0; soa && f < k->nacc_fields; f++)
    hku_buf_printf(o, "    %s hk_lane_%s[%d];\n",
                   hkc_ctype(hkc_acc_field_type(in, &k->acc_fields[f])),
                   k->acc_fields[f].name, lanes);
  if (soa) {
    hku_buf_printf(o, "    for (int hk_l = 0; hk_l < %d; ++hk_l) {\n", lanes);
    for (int f = 0; f < k->nacc_fields; f++)
      hku_buf_printf(o, "        hk_lane_%s[hk_l] = hk_lane[hk_l].%s;\n",
                     k->acc_fields[f].name, k->acc_fields[f].name);
    hku_buf_put(o, "    }\n");
  }
  hku_buf_put(o, "    size_t hk_i = hk_begin;\n");
  hku_buf_printf(o, "    for (; hk_end - hk_i >= %d; hk_i += %d) {\n", lanes,
                 lanes);
  /* f16 inputs: a block of lanes converted at once (F16C, see prelude.c);
   * element by element, the software conversion costs 4 times the f32
   * reduction */
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role == HK_ROLE_IN && hkc_param_type(in, p) == HK_F16)
      hku_buf_printf(o,
                     "        float hk_t_%s[%d];\n"
                     "        hk_f16_to_f32_n(hk_p_%s + hk_i, hk_t_%s, %d);\n",
                     p->name, lanes, p->name, p->name, lanes);
  }
  if (lanes_as_loop(in)) hku_buf_put(o, "        HK_LANE_LOOP\n");
  hku_buf_printf(o, "        for (int hk_l = 0; hk_l < %d; ++hk_l) {\n", lanes);
  hku_buf_put(o, "            const size_t i = hk_i + (size_t)hk_l;\n"
                 "            (void)i;\n");
  put_element_locals(o, in, 12, 1);
  if (soa) {
    hku_buf_printf(o, "            %s hk_a;\n", acc);
    for (int f = 0; f < k->nacc_fields; f++)
      hku_buf_printf(o, "            hk_a.%s = hk_lane_%s[hk_l];\n",
                     k->acc_fields[f].name, k->acc_fields[f].name);
    hku_buf_printf(o, "            hk_a = hk_combine__%s(hk_a, ", nm);
    put_map_value(o, in);
    hku_buf_put(o, ");\n");
    for (int f = 0; f < k->nacc_fields; f++)
      hku_buf_printf(o, "            hk_lane_%s[hk_l] = hk_a.%s;\n",
                     k->acc_fields[f].name, k->acc_fields[f].name);
    hku_buf_put(o, "        }\n    }\n");
    hku_buf_printf(o, "    for (int hk_l = 0; hk_l < %d; ++hk_l) {\n", lanes);
    for (int f = 0; f < k->nacc_fields; f++)
      hku_buf_printf(o, "        hk_lane[hk_l].%s = hk_lane_%s[hk_l];\n",
                     k->acc_fields[f].name, k->acc_fields[f].name);
    hku_buf_put(o, "    }\n");
  } else {
    hku_buf_printf(o,
                   "            hk_lane[hk_l] = hk_combine__%s(hk_lane[hk_l], ",
                   nm);
    put_map_value(o, in);
    hku_buf_put(o, ");\n        }\n    }\n");
  }
  const int vt = vec_tree_form(in);
  if (vt) {
    hku_buf_put(o, "#if HK_VEC_TREE\n");
    put_vec_tree(o, in, lanes, vt);
    hku_buf_put(o, "#else\n");
  }
  for (int w = lanes / 2; w >= 1; w /= 2)
    hku_buf_printf(o,
                   "    for (int hk_l = 0; hk_l < %d; ++hk_l)\n"
                   "        hk_lane[hk_l] = hk_combine__%s(hk_lane[hk_l], "
                   "hk_lane[hk_l + %d]);\n",
                   w, nm, w);
  if (vt) hku_buf_put(o, "#endif\n");
  hku_buf_printf(o, "    %s hk_acc = hk_lane[0];\n", acc);
  hku_buf_put(o, "    for (; hk_i < hk_end; ++hk_i) {\n");
  hku_buf_put(o, "        const size_t i = hk_i;\n");
  put_element_locals(o, in, 8, 0);
  hku_buf_printf(o, "        hk_acc = hk_combine__%s(hk_acc, ", nm);
  put_map_value(o, in);
  hku_buf_put(o, ");\n    }\n    return hk_acc;\n");
  if (argsel) hku_buf_put(o, "#endif\n");
  hku_buf_put(o, "}\n\n");
}

/* Finalizes hk_acc into the results taken from the argument array:
 * "*(T *)hk_args[OUT] = hk_final__NAME(hk_acc, n, scalars...);" (or the
 * struct form's call), and the function's end. */
static void put_store_final(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  hk_dtype_t rt = HK_DTYPE_INVALID; /* the struct form converts inside */
  if (is_struct(in)) {
    hku_buf_printf(o, "    hk_final__%s(hk_acc, n", in->name);
    for (int i = 0; i < k->nparams; i++)
      if (hkc_is_result(&k->params[i]))
        hku_buf_printf(o, ", (%s *)hk_args[%d]",
                       hkc_param_stype(in, &k->params[i]), i);
  } else {
    int r = hkc_result_index(k);
    rt = hkc_param_type(in, &k->params[r]);
    hku_buf_printf(o, "    *(%s *)hk_args[%d] = %shk_final__%s(hk_acc, n",
                   hkc_stype(rt), r, hkc_store_pre(rt), in->name);
    if (k->params[r].role == HK_ROLE_INOUT)
      hku_buf_printf(o, ", %s*(const %s *)hk_args[%d]%s", hkc_load_pre(rt),
                     hkc_stype(rt), r, hkc_conv_post(rt));
  }
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) {
      hku_buf_put(o, ", ");
      hkc_put_arg(o, in, i);
    }
  hku_buf_printf(o, ")%s;\n}\n\n", hkc_conv_post(rt));
}

/* The number of parameters the block reducer takes (all but results). */
static int part_nparams(const hkc_kernel *k) {
  int n = 0;
  for (int i = 0; i < k->nparams; i++) n += !hkc_is_result(&k->params[i]);
  return n;
}

/* colred (abi.h): a reduction per position of hk_nc neighbouring ones
 * (column sums), the positions' lanes side by side so that each row of
 * the reduced axis is one elementwise step over a group of columns:
 * hk_cols__NAME keeps L lanes x G columns of accumulators (64 KB: 1024
 * f32 columns, so that a row of a (4096, 768) matrix is read in one pass;
 * groups of 256 or 512 columns read it in pieces, up to 1.5 times slower
 * on one thread),
 * lane l of column c taking rows begin + l, begin + l + L, ..., then the
 * lanes' tree and the tail, as hk_part__NAME does for one run: the same
 * operations in the same order for each column, so the same bits. Gathered
 * a column at a time, the column sums of a (4096, 768) f32 matrix took 20
 * times the whole sum's time (each cache line read 16 times). */
static void emit_colred(hku_buf *o, const hkc_instance *in,
                        hkc_emit_mode mode) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const int L = hkc_reduce_lanes(hkc_acc_size(in));
  size_t G = 65536 / ((size_t)L * hkc_acc_size(in));
  const hkc_src *srcs[] = {&k->map, &k->combine, &k->identity};

  /* one row's step: hk_lane[c] combined with element c of the row, for
   * c < hk_nc; and one lane row merged into another (the tree). Not
   * inlined: each holds the one vectorised loop, compiled once (inlined at
   * their four and four call sites, the stdlib took half as long again to
   * compile). The lanes are restrict, the worker's own array: otherwise
   * each loop is versioned by run-time alias tests (clang's ASan build of
   * the stdlib took 47 s against 38). */
  hku_buf_printf(o, "HK_NOINLINE void hk_colrow__%s(%s *restrict hk_lane, ",
                 nm, acc);
  hkc_put_params(o, in, "hk_q_", 1, 1);
  hku_buf_put(o, "size_t i, size_t n, size_t hk_nc)\n{\n");
  hkc_put_holders(o, in, srcs, is_struct(in) ? 0 : 3, 4);
  hkc_put_scalar_locals(o, in, 4);
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_SCALAR), 4);
  hku_buf_put(o, "    (void)i;\n    (void)n;\n"
                 "    for (size_t hk_c = 0; hk_c < hk_nc; ++hk_c) {\n");
  for (int j = 0; j < k->nparams; j++) {
    const hkc_param *p = &k->params[j];
    if (p->role != HK_ROLE_IN) continue;
    hk_dtype_t t = hkc_param_type(in, p);
    hku_buf_printf(o, "        const %s %s = %shk_q_%s[hk_c]%s;\n", ct(in, p),
                   p->name, hkc_load_pre(t), p->name, hkc_conv_post(t));
  }
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_IN), 8);
  hku_buf_printf(o, "        hk_lane[hk_c] = hk_combine__%s(hk_lane[hk_c], ",
                 nm);
  put_map_value(o, in);
  hku_buf_put(o, ");\n    }\n}\n\n");
  /* four rows' steps, rows i0, i0 + L, i0 + 2L, i0 + 3L, into the same
   * lane row: each accumulator loaded and stored once for four elements
   * (the same combines in the same order as four hk_colrow calls). A lane
   * row was read and written back per element, from L2 once the lanes
   * outgrew L1: column sums of a (4096, 768) f32 matrix 1.6 times the
   * whole sum's time, about 1.0 with this. */
  hku_buf_printf(o,
                 "HK_NOINLINE void hk_colrow4__%s(%s *restrict hk_lane, ", nm,
                 acc);
  for (int r = 0; r < 4; r++)
    for (int j = 0; j < k->nparams; j++) {
      const hkc_param *p = &k->params[j];
      if (p->role == HK_ROLE_IN)
        hku_buf_printf(o, "const %s *hk_q%d_%s, ", hkc_param_stype(in, p), r,
                       p->name);
    }
  for (int j = 0; j < k->nparams; j++) {
    const hkc_param *p = &k->params[j];
    if (p->role == HK_ROLE_SCALAR) {
      hkc_put_param(o, in, p, "", 1);
      hku_buf_put(o, ", ");
    }
  }
  hku_buf_put(o, "size_t hk_i0, size_t n, size_t hk_nc)\n{\n");
  hkc_put_holders(o, in, srcs, is_struct(in) ? 0 : 3, 4);
  hkc_put_scalar_locals(o, in, 4);
  hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_SCALAR), 4);
  hku_buf_printf(o, "    (void)n;\n"
                    "    for (size_t hk_c = 0; hk_c < hk_nc; ++hk_c) {\n"
                    "        %s hk_v = hk_lane[hk_c];\n", acc);
  for (int r = 0; r < 4; r++) {
    hku_buf_printf(o, "        {\n            const size_t i = hk_i0 + %d;\n"
                      "            (void)i;\n", r * L);
    for (int j = 0; j < k->nparams; j++) {
      const hkc_param *p = &k->params[j];
      if (p->role != HK_ROLE_IN) continue;
      hk_dtype_t t = hkc_param_type(in, p);
      hku_buf_printf(o, "            const %s %s = %shk_q%d_%s[hk_c]%s;\n",
                     ct(in, p), p->name, hkc_load_pre(t), r, p->name,
                     hkc_conv_post(t));
    }
    hkc_put_voids(o, in, HKC_ROLE_BIT(HK_ROLE_IN), 12);
    hku_buf_printf(o, "            hk_v = hk_combine__%s(hk_v, ", nm);
    put_map_value(o, in);
    hku_buf_put(o, ");\n        }\n");
  }
  hku_buf_put(o, "        hk_lane[hk_c] = hk_v;\n    }\n}\n\n");
  hku_buf_printf(o,
                 "HK_NOINLINE void hk_colmerge__%s(%s *restrict hk_a, "
                 "const %s *hk_b, size_t hk_nc)\n{\n"
                 "    for (size_t hk_c = 0; hk_c < hk_nc; ++hk_c)\n"
                 "        hk_a[hk_c] = hk_combine__%s(hk_a[hk_c], hk_b[hk_c]);\n"
                 "}\n\n",
                 nm, acc, acc, nm);

  /* the worker: columns [0, hk_nc) (hk_nc <= G) of rows [begin, end),
   * lane l's row at hk_lanes + l * hk_ls. Lanes [hk_l0, hk_l1) from the
   * identity over the rows of whole lane groups (lane l: rows begin + l,
   * begin + l + L, ...), then, with hk_fin, the tree over all L lanes,
   * the rows left and the results in hk_res. colred runs it whole; colpart
   * runs a share of the lanes per thread, then the rest (same steps, same
   * order: the same bits) */
  hku_buf_printf(o, "HK_INLINE void hk_cols__%s(", nm);
  hkc_put_params(o, in, "hk_p_", 1, 1);
  hku_buf_printf(o,
                 "size_t n, size_t hk_begin, size_t hk_end, size_t hk_nc, "
                 "const ptrdiff_t *hk_rs, %s *hk_lanes, size_t hk_ls, "
                 "int hk_l0, int hk_l1, int hk_fin, %s *hk_res)\n{\n"
                 "#define hk_lrow(l) (hk_lanes + (size_t)(l) * hk_ls)\n"
                 "    for (int hk_l = hk_l0; hk_l < hk_l1; ++hk_l)\n"
                 "        for (size_t hk_c = 0; hk_c < hk_nc; ++hk_c)\n"
                 "            hk_lrow(hk_l)[hk_c] = ",
                 acc, acc);
  hkc_put_identity_call(o, in);
  hku_buf_printf(o,
                 ";\n    size_t hk_i = hk_begin;\n"
                 "    if (hk_l0 < hk_l1) {\n"
                 "    for (; hk_end - hk_i >= %d; hk_i += %d)\n"
                 "        for (int hk_l = hk_l0; hk_l < hk_l1; ++hk_l)\n"
                 "            hk_colrow4__%s(hk_lrow(hk_l), ",
                 4 * L, 4 * L, nm);
  for (int r = 0; r < 4; r++)
    for (int j = 0; j < k->nparams; j++) {
      const hkc_param *p = &k->params[j];
      if (p->role == HK_ROLE_IN)
        hku_buf_printf(o,
                       "hk_p_%s + (ptrdiff_t)(hk_i + (size_t)hk_l + %d) * "
                       "hk_rs[%d], ",
                       p->name, r * L, j);
    }
  for (int j = 0; j < k->nparams; j++) {
    const hkc_param *p = &k->params[j];
    if (p->role == HK_ROLE_SCALAR) hku_buf_printf(o, "hk_s_%s, ", p->name);
  }
  hku_buf_put(o, "hk_i + (size_t)hk_l, n, hk_nc);\n");
  hku_buf_printf(o,
                 "    for (; hk_end - hk_i >= %d; hk_i += %d)\n"
                 "        for (int hk_l = hk_l0; hk_l < hk_l1; ++hk_l)\n"
                 "            hk_colrow__%s(hk_lrow(hk_l), ",
                 L, L, nm);
  for (int pass = 0; pass < 2; pass++) {
    const char *row = pass ? "hk_i" : "hk_i + (size_t)hk_l";
    for (int j = 0; j < k->nparams; j++) {
      const hkc_param *p = &k->params[j];
      if (p->role == HK_ROLE_IN)
        hku_buf_printf(o, "hk_p_%s + (ptrdiff_t)(%s) * hk_rs[%d], ", p->name,
                       row, j);
      else if (p->role == HK_ROLE_SCALAR)
        hku_buf_printf(o, "hk_s_%s, ", p->name);
    }
    hku_buf_printf(o, "%s, n, hk_nc);\n", row);
    if (!pass)
      hku_buf_printf(o,
                     "    }\n"
                     "    if (!hk_fin)\n"
                     "        return;\n"
                     "    hk_i = hk_begin + (hk_end - hk_begin) / %d * %d;\n"
                     "    for (int hk_w = %d; hk_w >= 1; hk_w /= 2)\n"
                     "        for (int hk_l = 0; hk_l < hk_w; ++hk_l)\n"
                     "            hk_colmerge__%s(hk_lrow(hk_l), "
                     "hk_lrow(hk_l + hk_w), hk_nc);\n"
                     "    for (; hk_i < hk_end; ++hk_i)\n"
                     "        hk_colrow__%s(hk_lrow(0), ",
                     L, L, L / 2, nm, nm);
  }
  hku_buf_put(o, "    for (size_t hk_c = 0; hk_c < hk_nc; ++hk_c)\n"
                 "        hk_res[hk_c] = hk_lrow(0)[hk_c];\n"
                 "#undef hk_lrow\n}\n\n");

  /* one position's results, from its accumulator */
  hku_buf_printf(o,
                 "HK_INLINE void hk_store__%s(void *const *hk_args, size_t n, "
                 "%s hk_acc)\n{\n    (void)hk_args;\n",
                 nm, acc);
  put_store_final(o, in);

  /* the entries: colred, the whole of each group of G columns at a time
   * in its lanes on the stack; colpart (abi.h), the lanes in the caller's
   * buffer, part p of nparts of them per call (one per thread), then the
   * finish (part == nparts) */
  for (int e = 0; e < 2; e++) {
    if (!e)
      hku_buf_printf(o,
                     "%svoid " HK_ABI_COLRED "%s(void *const *hk_argv, size_t n, "
                     "size_t hk_b0, size_t hk_b1, size_t hk_ncols, "
                     "const ptrdiff_t *hk_steps, void *hk_partials)\n{\n"
                     "    %s hk_lane[%zu];\n"
                     "    const size_t hk_ls = %zu;\n"
                     "    const int hk_l0 = 0, hk_l1 = %d, hk_fin = 1;\n",
                     link_of(mode), nm, acc, (size_t)L * G, G, L);
    else
      hku_buf_printf(o,
                     "%svoid " HK_ABI_COLPART "%s(void *const *hk_argv, size_t n, "
                     "size_t hk_b0, size_t hk_b1, size_t hk_ncols, "
                     "const ptrdiff_t *hk_steps, void *hk_lanes, unsigned hk_part, "
                     "unsigned hk_nparts, void *hk_partials)\n{\n"
                     "    %s *const hk_lane = (%s *)hk_lanes;\n"
                     "    const size_t hk_ls = hk_ncols;\n"
                     "    const int hk_fin = hk_part >= hk_nparts;\n"
                     "    const int hk_l0 = hk_fin ? 0 : (int)(%uu * hk_part / hk_nparts);\n"
                     "    const int hk_l1 = hk_fin ? 0 : (int)(%uu * (hk_part + 1) / hk_nparts);\n",
                     link_of(mode), nm, acc, acc, (unsigned)L, (unsigned)L);
    hku_buf_printf(o,
                   "    ptrdiff_t hk_rs[%d];\n"
                   "    void *hk_col[%d];\n"
                   "    %s hk_res[%zu];\n",
                   k->nparams, k->nparams, acc, G);
    for (int j = 0; j < k->nparams; j++) {
      const hkc_param *p = &k->params[j];
      if (p->role == HK_ROLE_IN)
        hku_buf_printf(o, "    hk_rs[%d] = hk_steps[%d] / (ptrdiff_t)sizeof(%s);\n",
                       j, j, hkc_param_stype(in, p));
      else
        hku_buf_printf(o, "    hk_rs[%d] = 0;\n", j);
    }
    hku_buf_printf(o,
                   "    for (size_t hk_c0 = 0; hk_c0 < hk_ncols; hk_c0 += %zu) {\n"
                   "        const size_t hk_nc = hk_ncols - hk_c0 < %zu ? hk_ncols - hk_c0 : %zu;\n"
                   "        hk_cols__%s(",
                   G, G, G, nm);
    int first = 1;
    for (int j = 0; j < k->nparams; j++) {
      const hkc_param *p = &k->params[j];
      if (hkc_is_result(p)) continue;
      hku_buf_put(o, first ? "" : ", ");
      first = 0;
      if (p->role == HK_ROLE_IN)
        hku_buf_printf(o, "(const %s *)hk_argv[%d] + hk_c0",
                       hkc_param_stype(in, p), j);
      else
        hku_buf_printf(o, "*(const %s *)hk_argv[%d]", hkc_param_stype(in, p), j);
    }
    hku_buf_printf(o,
                   "%sn, hk_b0, hk_b1, hk_nc, hk_rs, hk_lane%s, hk_ls, hk_l0, "
                   "hk_l1, hk_fin, hk_res);\n"
                   "%s"
                   "        for (size_t hk_c = 0; hk_c < hk_nc; ++hk_c) {\n"
                   "            if (hk_partials) {\n"
                   "                ((%s *)hk_partials)[hk_c0 + hk_c] = hk_res[hk_c];\n"
                   "                continue;\n"
                   "            }\n"
                   "            for (int hk_k = 0; hk_k < %d; ++hk_k)\n"
                   "                hk_col[hk_k] = (char *)hk_argv[hk_k] + "
                   "(ptrdiff_t)(hk_c0 + hk_c) * hk_steps[hk_k];\n",
                   part_nparams(k) ? ", " : "", e ? " + hk_c0" : "",
                   e ? "        if (!hk_fin)\n            continue;\n" : "", acc,
                   k->nparams);
    for (int j = 0; j < k->nparams; j++)
      if (!hkc_is_result(&k->params[j]))
        hku_buf_printf(o, "            hk_col[%d] = hk_argv[%d];\n", j, j);
    hku_buf_printf(o,
                   "            hk_store__%s(hk_col, n, hk_res[hk_c]);\n"
                   "        }\n    }\n}\n\n",
                   nm);
  }
}

/* ---- short rows in batches (rowred) ----------------------------------------- */

/* The in parameters (a mask) whose rows a batch reads, when rows can be
 * reduced a batch at a time in vectors of the accumulator's type: a
 * combine of the vector tree's forms, a map of in parameters of that type
 * joined by +, - and * (with parentheses: "x", "x * x", "x * y"; the
 * same operation on a vector as on each of its elements), no scalars (the
 * identity is then a constant); else 0. */
static uint64_t rowb_ins(const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  if (!vec_tree_form(in) || !k->map.text || !k->identity.text ||
      k->nparams > 64)
    return 0;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR) return 0;
  uint64_t used = 0;
  for (const char *t = k->map.text; *t;) {
    if (strchr(" \t\n\r+-*()", *t)) {
      t++;
      continue;
    }
    if (!(isalpha((unsigned char)*t) || *t == '_')) return 0;
    const char *e = t;
    while (isalnum((unsigned char)*e) || *e == '_') e++;
    int p = -1;
    for (int i = 0; i < k->nparams && p < 0; i++)
      if (k->params[i].role == HK_ROLE_IN &&
          strlen(k->params[i].name) == (size_t)(e - t) &&
          !strncmp(k->params[i].name, t, (size_t)(e - t)))
        p = i;
    if (p < 0 || hkc_param_type(in, &k->params[p]) != hkc_acc_type(in))
      return 0;
    used |= (uint64_t)1 << p;
    t = e;
  }
  return used;
}

/* The source of element j of stage w's first operand (second: + w) in the
 * pair of vectors (P, Q) of W elements, g to a 16-byte block: the lower w
 * lanes of each 2w-lane segment (a row's), P's segments before Q's; whole
 * blocks when a segment spans some (one block move), else within each
 * block (one in-lane shuffle: shufps, unpcklpd). */
static int rowb_src(int W, int g, int w, int j) {
  if (w >= g) return (j / w) * 2 * w + j % w;
  const int b = j / g, t = j % g, s = t / w, half = g / (2 * w);
  return s < half ? b * g + s * 2 * w + t % w
                  : W + b * g + (s - half) * 2 * w + t % w;
}

/* The batch's tree for vectors of W elements (the rows of a batch): each
 * row's lanes (hk_a[slot][vector]) combined vector by vector while a step
 * pairs whole vectors, then rows pairwise by shuffles, until one vector
 * holds the W rows' results; the slots are fed so that the rows come out
 * in order (the emitter follows every element's row through the
 * shuffles). */
/* The batch's map at vector v of slot s, chunk hk_i (or at 0, for the
 * first): each in parameter it reads as a vector named as the parameter,
 * then the map as written. */
static void put_rowb_map(hku_buf *o, const hkc_instance *in, uint64_t ins,
                         int W, const char *at, int ind) {
  const hkc_kernel *k = in->k;
  for (int i = 0; i < k->nparams; i++)
    if (ins >> i & 1)
      hku_buf_printf(o,
                     "%*sconst hk_vt__%s %s = *(const hk_vu__%s *)(hk_q_%s"
                     "[hk_feed[hk_s]] + %shk_v * %d);\n",
                     ind, "", in->name, k->params[i].name, in->name,
                     k->params[i].name, at, W);
}

static void put_rowb_tree(hku_buf *o, const hkc_instance *in, uint64_t ins,
                          int W) {
  const char *nm = in->name;
  const int g = 16 / (int)hkc_acc_size(in);
  const int L = hkc_reduce_lanes(hkc_acc_size(in));
  int row[8][8], nrow[8][8], nv = W;
  for (int s = 0; s < W; s++)
    for (int j = 0; j < W; j++) row[s][j] = s;
  for (int w = W / 2; w >= 1; w /= 2) {
    for (int i = 0; i < nv / 2; i++)
      for (int j = 0; j < W; j++) {
        int src = rowb_src(W, g, w, j);
        nrow[i][j] = src < W ? row[2 * i][src] : row[2 * i + 1][src - W];
      }
    nv /= 2;
    memcpy(row, nrow, sizeof row);
  }
  /* slot row[0][j] ends at position j: it reads row j */
  int feed[8];
  for (int j = 0; j < W; j++) feed[row[0][j]] = j;
  hku_buf_put(o, "        static const unsigned char hk_feed[] = {");
  for (int s = 0; s < W; s++) hku_buf_printf(o, "%s%d", s ? ", " : "", feed[s]);
  /* the first chunk combined with the identity, then the others */
  hku_buf_printf(o,
                 "};\n"
                 "        hk_vt__%s hk_a[%d][%d];\n"
                 "        for (int hk_s = 0; hk_s < %d; ++hk_s)\n"
                 "            for (int hk_v = 0; hk_v < %d; ++hk_v) {\n"
                 "                hk_a[hk_s][hk_v] = hk_id;\n"
                 "                if (!hk_i0)\n"
                 "                    continue;\n",
                 nm, W, L / W, W, L / W);
  put_rowb_map(o, in, ins, W, "", 16);
  hku_buf_printf(o, "                hk_a[hk_s][hk_v] = hk_vcomb__%s(hk_id, ", nm);
  hkc_put_expr(o, &in->k->map);
  hku_buf_printf(o,
                 ");\n"
                 "            }\n"
                 "        for (size_t hk_i = %d; hk_i < hk_i0; hk_i += %d)\n"
                 "            for (int hk_s = 0; hk_s < %d; ++hk_s)\n"
                 "                for (int hk_v = 0; hk_v < %d; ++hk_v) {\n",
                 L, L, W, L / W);
  put_rowb_map(o, in, ins, W, "hk_i + ", 20);
  hku_buf_printf(o, "                    hk_a[hk_s][hk_v] = hk_vcomb__%s(hk_a[hk_s][hk_v], ",
                 nm);
  hkc_put_expr(o, &in->k->map);
  hku_buf_put(o, ");\n                }\n");
  /* a row's lanes l and l + w, while w spans whole vectors */
  for (int w = L / 2; w >= W; w /= 2)
    hku_buf_printf(o,
                   "        for (int hk_s = 0; hk_s < %d; ++hk_s)\n"
                   "            for (int hk_v = 0; hk_v < %d; ++hk_v)\n"
                   "                hk_a[hk_s][hk_v] = hk_vcomb__%s(hk_a[hk_s][hk_v], "
                   "hk_a[hk_s][hk_v + %d]);\n",
                   W, w / W, nm, w / W);
  /* rows pairwise */
  nv = W;
  for (int w = W / 2; w >= 1; w /= 2, nv /= 2) {
    hku_buf_printf(o, "        for (int hk_s = 0; hk_s < %d; ++hk_s)\n"
                      "            hk_a[hk_s][0] = hk_vcomb__%s(\n"
                      "                HK_SHUF(hk_vm__%s, hk_a[2 * hk_s][0], "
                      "hk_a[2 * hk_s + 1][0]",
                   nv / 2, nm, nm);
    for (int j = 0; j < W; j++) hku_buf_printf(o, ", %d", rowb_src(W, g, w, j));
    hku_buf_printf(o, "),\n                HK_SHUF(hk_vm__%s, hk_a[2 * hk_s][0], "
                      "hk_a[2 * hk_s + 1][0]",
                   nm);
    for (int j = 0; j < W; j++)
      hku_buf_printf(o, ", %d", rowb_src(W, g, w, j) + w);
    hku_buf_put(o, "));\n");
  }
}

/* Whether finalize can run on a vector of W results (hk_vfinal__NAME) with
 * the same bits as hk_final__NAME on each: a float accumulator, the
 * result an out parameter of its type, and the text arithmetic on acc
 * alone: acc, n cast to the accumulator's type ("(T)n", "(float)n"),
 * decimal literals, + - * / and parentheses. Each operation is then the
 * scalar one lane by lane (a scalar operand is converted to the vector's
 * element type, as the scalar expression converts it), but a literal
 * wider than the accumulator (0.5 with float: the scalar form computes in
 * double), which is refused, as is anything else (calls, scalars,
 * conditionals). mean over short rows stores its W results as one
 * vector (put_rowb_fin) where it divided and stored each, and divides
 * them as one vector in the batches (emit_rowbatch). */
static int vec_finalize(const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const hk_dtype_t at = hkc_acc_type(in);
  const int r = hkc_result_index(k);
  if (!k->finalize.text || is_struct(in) || at != HK_F32 ||
      r < 0 || k->params[r].role != HK_ROLE_OUT ||
      hkc_param_type(in, &k->params[r]) != at)
    return 0;
  char *e = hkc_expr_oneline(&k->finalize);
  if (!e) return 0;
  int ok = 1, cast = 0; /* cast: the last token closed a cast */
  for (const char *t = e; *t && ok;) {
    const char *u = t;
    if (*t == ' ') {
      t++;
      continue;
    }
    if (isalpha((unsigned char)*t) || *t == '_') {
      while (isalnum((unsigned char)*u) || *u == '_') u++;
      const size_t len = (size_t)(u - t);
      ok = cast ? len == 1 && *t == 'n' : len == 3 && !strncmp(t, "acc", 3);
      cast = 0;
    } else if (isdigit((unsigned char)*t) || *t == '.') {
      int frac = 0;
      while (isdigit((unsigned char)*u) || *u == '.' || *u == 'e' || *u == 'E' ||
             ((*u == '+' || *u == '-') && (u[-1] == 'e' || u[-1] == 'E'))) {
        frac |= *u == '.' || *u == 'e' || *u == 'E';
        u++;
      }
      /* an f suffix on a fraction, or an integer of at most 6 digits
       * (exact as a float) */
      const int f = *u == 'f' || *u == 'F';
      if (f) u++;
      ok = !cast && !isalnum((unsigned char)*u) && *u != '_' &&
           (frac ? f : u - t <= 6);
      cast = 0;
    } else if (*t == '(') {
      /* "(TYPE)": a placeholder bound to the accumulator's type, or its C
       * name; then n must follow */
      const char *v = t + 1;
      while (*v == ' ') v++;
      const char *w = v;
      while (isalnum((unsigned char)*w) || *w == '_') w++;
      const char *x = w;
      while (*x == ' ') x++;
      const size_t len = (size_t)(w - v);
      const char *cn = hkc_ctype(at);
      const int holder = len == 1 && *v >= 'A' && *v <= 'Z' &&
                         in->bind[*v - 'A'] == at;
      if (len && *x == ')' &&
          (holder || (strlen(cn) == len && !strncmp(v, cn, len)))) {
        ok = !cast;
        cast = 1;
        u = x + 1;
      } else {
        ok = !cast;
        u = t + 1;
      }
    } else if (strchr(")+-*/", *t)) {
      ok = !cast;
      u = t + 1;
    } else {
      ok = 0;
    }
    t = u;
  }
  free(e);
  return ok && !cast;
}

/* hk_vfinal__NAME(acc, n): finalize over a vector of results (vec_finalize
 * said it may). */
static void emit_vfinal(hku_buf *o, const hkc_instance *in) {
  const hkc_src *srcs[] = {&in->k->finalize};
  hku_buf_printf(o,
                 "HK_INLINE hk_vt__%s hk_vfinal__%s(const hk_vt__%s acc, "
                 "size_t n)\n{\n",
                 in->name, in->name, in->name);
  hkc_put_holders(o, in, srcs, 1, 4);
  hku_buf_put(o, "    (void)n;\n    return ");
  hkc_put_expr(o, &in->k->finalize);
  hku_buf_put(o, ";\n}\n\n");
}

/* hk_rowfin__NAME(args, n, acc): a row's results from its accumulator,
 * as hk_reduce1__NAME stores them. */
static void put_rowfin(hku_buf *o, const hkc_instance *in) {
  char cb[HKC_ACC_CTYPE_MAX];
  hku_buf_printf(o,
                 "HK_INLINE void hk_rowfin__%s(void *const *hk_args, size_t n, "
                 "%s hk_acc)\n{\n",
                 in->name, hkc_acc_ctype(in, cb));
  put_store_final(o, in);
}

/* Stores the W rows' results of a batch (hk_res, from row hk_r on), each
 * by hk_rowfin__NAME, at indentation ind; W 0 for the function's hk_W.
 * vec: where the results are stored as computed and lie one after the
 * other, store them as the one vector that holds them (hk_rowc only: in
 * hk_rowb's loop the test cost rows of 8, 16 and 20 floats 13-32 % more
 * time, the registers again). */
static void put_rowb_fin(hku_buf *o, const hkc_instance *in, int W, int ind,
                         int vec) {
  char w[16] = "hk_W";
  if (W) snprintf(w, sizeof w, "%d", W);
  const hkc_kernel *k = in->k;
  const int r = hkc_result_index(k);
  /* 4-byte, no finalize, an out result of the accumulator's type, one
   * after the other: the W results are the vector, stored whole (eight
   * extracts and stores and their pointers took 40 % of a batch over rows
   * of 2 floats; doubles' four stores were 3-4 % faster than the vector) */
  if (vec && hkc_acc_size(in) == 4 && (!k->finalize.text || vec_finalize(in)) &&
      r >= 0 && k->params[r].role == HK_ROLE_OUT &&
      hkc_param_type(in, &k->params[r]) == hkc_acc_type(in)) {
    char cb[HKC_ACC_CTYPE_MAX];
    const char *acc = hkc_acc_ctype(in, cb);
    char res[160] = "hk_res";
    if (k->finalize.text)
      snprintf(res, sizeof res, "hk_vfinal__%s(hk_res, n)", in->name);
    hku_buf_printf(o,
                   "%*sif (hk_steps[%d] == (ptrdiff_t)sizeof(%s))\n"
                   "%*s    *(hk_vu__%s *)((char *)hk_args[%d] + (ptrdiff_t)hk_r * "
                   "(ptrdiff_t)sizeof(%s)) = %s;\n"
                   "%*selse\n",
                   ind, "", r, acc, ind, "", in->name, r, acc, res, ind, "");
  }
  hku_buf_printf(o,
                 "%*sfor (int hk_k = 0; hk_k < %s; ++hk_k) {\n"
                 "%*s    for (int hk_j = 0; hk_j < %d; ++hk_j)\n"
                 "%*s        hk_row[hk_j] = (char *)hk_args[hk_j] + "
                 "(ptrdiff_t)(hk_r + (size_t)hk_k) * hk_steps[hk_j];\n"
                 "%*s    hk_rowfin__%s(hk_row, n, hk_res[hk_k]);\n"
                 "%*s}\n",
                 ind, "", w, ind, "", in->k->nparams, ind, "", ind, "",
                 in->name, ind, "");
}

/* The end of a step of hk_rowc__NAME's cases: the W rows' elements
 * hk_d_P[0..m) of each read parameter P combined in the scalar order
 * after the lanes' tree (hk_t), the results stored, the step closed. */
static void put_rowc_comb(hku_buf *o, const hkc_instance *in, uint64_t ins,
                          int W, int m) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  hku_buf_printf(o,
                 "            hk_vt__%s hk_res = hk_t;\n"
                 "            for (int hk_c = 0; hk_c < %d; ++hk_c) {\n",
                 nm, m);
  for (int i = 0; i < k->nparams; i++)
    if (ins >> i & 1)
      hku_buf_printf(o, "                const hk_vt__%s %s = hk_d_%s[hk_c];\n",
                     nm, k->params[i].name, k->params[i].name);
  hku_buf_printf(o, "                hk_res = hk_vcomb__%s(hk_res, ", nm);
  hkc_put_expr(o, &k->map);
  hku_buf_put(o, ");\n            }\n");
  put_rowb_fin(o, in, W, 12, 1);
  hku_buf_put(o, "        }\n");
}

/* One case of hk_rowc__NAME: rows of m elements, W rows (m vectors of
 * each read parameter, from one contiguous run) a step; element c of the
 * W rows gathered from the m vectors by a chain of two-vector shuffles
 * (one per further vector it draws on: m = 2, 3, 4, 5, 6 take 2, 6, 12,
 * 20 and 30 a step of 8 rows, for the 8m element loads and inserts of the
 * gathers). */
static void put_rowc_case(hku_buf *o, const hkc_instance *in, uint64_t ins,
                          int W, int m) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  hku_buf_printf(o,
                 "        for (; hk_r1 - hk_r >= %d; hk_r += %d) {\n"
                 "            hk_vt__%s hk_s;\n",
                 W, W, nm);
  for (int i = 0; i < k->nparams; i++) {
    if (!(ins >> i & 1)) continue;
    const char *p = k->params[i].name;
    hku_buf_printf(o,
                   "            const %s *hk_b_%s = (const %s *)((const char *)"
                   "hk_args[%d] + (ptrdiff_t)hk_r * hk_steps[%d]);\n"
                   "            hk_vt__%s hk_v_%s[%d], hk_d_%s[%d];\n"
                   "            for (int hk_j = 0; hk_j < %d; ++hk_j)\n"
                   "                hk_v_%s[hk_j] = *(const hk_vu__%s *)(hk_b_%s + "
                   "hk_j * %d);\n",
                   acc, p, acc, i, i, nm, p, m, p, m, m, p, nm, p, W);
    for (int c = 0; c < m; c++) {
      /* lane l of element c's vector is the run's element l * m + c, lane
       * (l * m + c) % W of vector (l * m + c) / W. The first shuffle takes
       * vectors first and first + 1 (or first alone), each later one the
       * chain so far and the next vector. */
      const int first = c / W, last = ((W - 1) * m + c) / W;
      for (int v = first + (last > first); v <= last; v++) {
        const int chain = v > first + 1;
        hku_buf_printf(o, "            hk_s = HK_SHUF(hk_vm__%s, ", nm);
        if (chain) hku_buf_put(o, "hk_s, ");
        else hku_buf_printf(o, "hk_v_%s[%d], ", p, first);
        hku_buf_printf(o, "hk_v_%s[%d]", p, v);
        for (int l = 0; l < W; l++) {
          const int e = l * m + c, src = e / W, at = e % W;
          /* vector v's lane, else the chain's lane l, or first's (a lane
           * a later vector fills: any) */
          const int idx = src == v ? W + at : chain ? l : src == first ? at : 0;
          hku_buf_printf(o, ", %d", idx);
        }
        hku_buf_put(o, ");\n");
      }
      hku_buf_printf(o, "            hk_d_%s[%d] = hk_s;\n", p, c);
    }
  }
  put_rowc_comb(o, in, ins, W, m);
}

/* The 24 shuffles of an 8 x 8 transpose of parameter p's vectors
 * hk_v_P[0..7] (unpack, shuffle, 128-bit permute; gcc makes each one
 * instruction on AVX2), lane l of column c into hk_d_P[c + at] for the
 * columns c in [c0, 8). */
static void put_t8(hku_buf *o, const char *nm, const char *p, int c0,
                   int at) {
  static const char *const lo = "0, 8, 1, 9, 4, 12, 5, 13",
                           *hi = "2, 10, 3, 11, 6, 14, 7, 15",
                           *lo2 = "0, 1, 8, 9, 4, 5, 12, 13",
                           *hi2 = "2, 3, 10, 11, 6, 7, 14, 15",
                           *lo4 = "0, 1, 2, 3, 8, 9, 10, 11",
                           *hi4 = "4, 5, 6, 7, 12, 13, 14, 15";
  for (int j = 0; j < 8; j += 2)
    hku_buf_printf(o,
                   "            hk_t_%s[%d] = HK_SHUF(hk_vm__%s, hk_v_%s[%d], "
                   "hk_v_%s[%d], %s);\n"
                   "            hk_t_%s[%d] = HK_SHUF(hk_vm__%s, hk_v_%s[%d], "
                   "hk_v_%s[%d], %s);\n",
                   p, j, nm, p, j, p, j + 1, lo, p, j + 1, nm, p, j, p, j + 1,
                   hi);
  /* u0..u3 from t0..t3, u4..u7 from t4..t7 */
  for (int h = 0; h < 8; h += 4)
    for (int j = 0; j < 2; j++)
      hku_buf_printf(o,
                     "            hk_u_%s[%d] = HK_SHUF(hk_vm__%s, hk_t_%s[%d], "
                     "hk_t_%s[%d], %s);\n"
                     "            hk_u_%s[%d] = HK_SHUF(hk_vm__%s, hk_t_%s[%d], "
                     "hk_t_%s[%d], %s);\n",
                     p, h + 2 * j, nm, p, h + j, p, h + j + 2, lo2, p,
                     h + 2 * j + 1, nm, p, h + j, p, h + j + 2, hi2);
  for (int c = c0; c < 8; c++)
    hku_buf_printf(o,
                   "            hk_d_%s[%d] = HK_SHUF(hk_vm__%s, hk_u_%s[%d], "
                   "hk_u_%s[%d], %s);\n",
                   p, c + at, nm, p, c % 4, p, c % 4 + 4, c < 4 ? lo4 : hi4);
}

/* One case of hk_rowc__NAME for rows of m = 4 to 15 four-byte elements at
 * HK_VB 32 (for 4 to 8 without AVX-512VL, whose two-vector shuffles make
 * put_rowc_case's chains one instruction each; on AVX2 they take several):
 * the 8 rows of a step loaded as 8 vectors and transposed by an 8 x 8
 * transpose (put_t8), element c of the 8 rows in vector c. Rows of m <= 8:
 * each row's vector holds its m elements first and then the next row's
 * (within the run, as m >= 4), but the last row's, loaded 8 - m elements
 * early so as to end the run, and rotated. Rows of 9 to 15: a second
 * transpose of each row's last 8 elements gives elements 8 to m - 1. Per-row
 * sums of 1M floats, one thread (AVX2 EPYC): rows of 4, 6, 7, 8 232, 340,
 * 240, 232 us -> 131, 127, 116, 105 (the whole sum 77; rows of 8 by
 * gathers, in a test of its own, 178 and by this 98). */
static void put_rowc_t8_case(hku_buf *o, const hkc_instance *in, uint64_t ins,
                             int m) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  hku_buf_put(o, "        for (; hk_r1 - hk_r >= 8; hk_r += 8) {\n");
  for (int i = 0; i < k->nparams; i++) {
    if (!(ins >> i & 1)) continue;
    const char *p = k->params[i].name;
    hku_buf_printf(o,
                   "            const %s *hk_b_%s = (const %s *)((const char *)"
                   "hk_args[%d] + (ptrdiff_t)hk_r * hk_steps[%d]);\n"
                   "            hk_vt__%s hk_v_%s[8], hk_d_%s[%d], hk_t_%s[8], "
                   "hk_u_%s[8];\n"
                   "            for (int hk_j = 0; hk_j < %d; ++hk_j)\n"
                   "                hk_v_%s[hk_j] = *(const hk_vu__%s *)(hk_b_%s + "
                   "hk_j * %d);\n",
                   acc, p, acc, i, i, nm, p, p, m > 8 ? m : 8, p, p,
                   m >= 8 ? 8 : 7, p, nm, p, m);
    if (m < 8) { /* the last row: its m elements end the run */
      hku_buf_printf(o,
                     "            hk_v_%s[7] = *(const hk_vu__%s *)(hk_b_%s + %d);\n"
                     "            hk_v_%s[7] = HK_SHUF(hk_vm__%s, hk_v_%s[7], "
                     "hk_v_%s[7]",
                     p, nm, p, 8 * m - 8, p, nm, p, p);
      for (int l = 0; l < 8; l++) hku_buf_printf(o, ", %d", (l + 8 - m) % 8);
      hku_buf_put(o, ");\n");
    }
    put_t8(o, nm, p, 0, 0);
    if (m > 8) { /* elements m - 8 to m - 1: those from 8 on are new */
      hku_buf_printf(o,
                     "            for (int hk_j = 0; hk_j < 8; ++hk_j)\n"
                     "                hk_v_%s[hk_j] = *(const hk_vu__%s *)(hk_b_%s + "
                     "hk_j * %d + %d);\n",
                     p, nm, p, m, m - 8);
      put_t8(o, nm, p, 16 - m, m - 8);
    }
  }
  put_rowc_comb(o, in, ins, 8, m);
}

/* The head of a batch function (hk_rowc__NAME, hk_rowb__NAME: linkage,
 * name, rowred's arguments and first row): the identity's holders, hk_W
 * (the rows of a batch: an HK_VB-byte vector's elements), hk_e (the
 * identity) and hk_id (a vector of it). */
static void put_rowb_head(hku_buf *o, const hkc_instance *in,
                          const char *linkage, const char *fn) {
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const hkc_src *ids[] = {&in->k->identity};
  hku_buf_printf(o,
                 "%s size_t %s__%s(void *const *hk_args, size_t n, "
                 "size_t hk_r, size_t hk_r1, const ptrdiff_t *hk_steps)\n{\n",
                 linkage, fn, in->name);
  hkc_put_holders(o, in, ids, 1, 4);
  hku_buf_printf(o, "    enum { hk_W = (int)(HK_VB / sizeof(%s)) };\n"
                    "    const %s hk_e = ", acc, acc);
  hkc_put_identity_call(o, in);
  hku_buf_printf(o,
                 ";\n"
                 "    hk_vt__%s hk_id;\n"
                 "    for (int hk_l = 0; hk_l < hk_W; ++hk_l)\n"
                 "        hk_id[hk_l] = hk_e;\n",
                 in->name);
}

/* hk_rowc__NAME: rows of 2 to HK_ROWC_MAX elements, each read parameter's
 * rows one contiguous run (the batches' gathers, an element of a row a
 * load, made per-row sums over rows of 2 to 6 floats 3.8 to 7.5 times the
 * whole sum's time): W rows from m whole vectors, their
 * elements apart by shuffles (put_rowc_case), combined in the scalar
 * order after the lanes' tree, which over rows shorter than the lanes
 * combines identities only (comb(e, e) at each of its log2(lanes)
 * levels, as the batch computes it). A function of its own (registers);
 * returns the first row it left. */
static void emit_rowc(hku_buf *o, const hkc_instance *in, uint64_t ins) {
  const char *nm = in->name;
  const size_t es = hkc_acc_size(in);
  const int L = hkc_reduce_lanes(es);
  put_rowb_head(o, in, "HK_NOINLINE", "hk_rowc");
  hku_buf_printf(o,
                 "    hk_vt__%s hk_t = hk_id;\n"
                 "    for (int hk_l = 1; hk_l < %d; hk_l *= 2)\n"
                 "        hk_t = hk_vcomb__%s(hk_t, hk_t);\n"
                 "    void *hk_row[%d];\n"
                 "    switch (n) {\n",
                 nm, L, nm, in->k->nparams);
  for (int m = 2; m <= HK_ROWC_MAX(es); m++) {
    hku_buf_printf(o, "    case %d:\n#if HK_VB == 32\n", m);
    if (HK_ROWC_T8(es, m)) {
      hku_buf_put(o, "#if HK_ROWC_WIDE\n");
      put_rowc_case(o, in, ins, (int)(32 / es), m);
      hku_buf_put(o, "#else\n");
      put_rowc_t8_case(o, in, ins, m);
      hku_buf_put(o, "#endif\n");
    } else {
      put_rowc_case(o, in, ins, (int)(32 / es), m);
    }
    hku_buf_put(o, "#else\n");
    put_rowc_case(o, in, ins, (int)(16 / es), m);
    hku_buf_put(o, "#endif\n        break;\n");
  }
  /* AVX-512VL's (HK_VB is then 32); rows of 7 and 8 four-byte elements
   * by an 8 x 8 transpose on other CPUs with 32-byte vectors */
  for (int m = HK_ROWC_MAX(es) + 1; m <= HK_ROWC_WIDE_MAX(es); m++) {
    if (HK_ROWC_T8(es, m)) {
      hku_buf_printf(o, "#if HK_VB == 32\n    case %d:\n#if HK_ROWC_WIDE\n",
                     m);
      put_rowc_case(o, in, ins, (int)(32 / es), m);
      hku_buf_put(o, "#else\n");
      put_rowc_t8_case(o, in, ins, m);
      hku_buf_put(o, "#endif\n        break;\n#endif\n");
      continue;
    }
    hku_buf_printf(o, "#if HK_ROWC_WIDE\n    case %d:\n", m);
    put_rowc_case(o, in, ins, (int)(32 / es), m);
    hku_buf_put(o, "        break;\n#endif\n");
  }
  /* rows of 9 to 15 four-byte elements: two transposes a step, where
   * measured (AVX2; on a Zen 4 with AVX-512VL the gathers' inserts from
   * memory are cheap, and transposed tails were slower there) */
  for (int m = HK_ROWC_WIDE_MAX(es) + 1; m <= HK_ROWC_T8_MAX(es); m++) {
    hku_buf_printf(o, "#if HK_VB == 32 && !HK_ROWC_WIDE\n    case %d:\n", m);
    put_rowc_t8_case(o, in, ins, m);
    hku_buf_put(o, "        break;\n#endif\n");
  }
  hku_buf_put(o, "    }\n    return hk_r;\n}\n\n");
}

/* hk_rowb__NAME (rowred's rows shorter than HK_ROWB_LANES lanes' worth, W
 * rows at a time, W the elements of an HK_VB-byte vector): the rows'
 * lanes as vectors, their trees as above, the tails as W rows' elements
 * gathered into a vector, each combine the scalar one lane by lane, in
 * the scalar order: the same bits as a row on its own. Per-row sums over
 * rows of 16 floats spent most of their time on each row's tree (its
 * shuffles within one vector) and loop; over rows of 20 on the tail, four
 * dependent scalar adds. Returns the first row it left. */
static void emit_rowbatch(hku_buf *o, const hkc_instance *in, uint64_t ins) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);
  const size_t es = hkc_acc_size(in);
  const int L = hkc_reduce_lanes(es);
  const int form = vec_tree_form(in);
  hku_buf_printf(o,
                 "#if HK_VEC_TREE\n"
                 "typedef %s hk_vt__%s __attribute__((vector_size(HK_VB)));\n"
                 "typedef %s hk_vu__%s __attribute__((vector_size(HK_VB), "
                 "aligned(sizeof(%s)), may_alias));\n"
                 "typedef %s hk_vm__%s __attribute__((vector_size(HK_VB)));\n\n"
                 "HK_INLINE hk_vt__%s hk_vcomb__%s(hk_vt__%s a, hk_vt__%s b)\n{\n",
                 acc, nm, acc, nm, acc, es == 8 ? "int64_t" : "int32_t", nm, nm,
                 nm, nm, nm);
  if (form == VT_ADD)
    hku_buf_put(o, "    return a + b;\n}\n\n");
  else
    hku_buf_printf(o,
                   "    const hk_vm__%s m = (a %s b) | (a != a);\n"
                   "    return (hk_vt__%s)(((hk_vm__%s)a & m) | ((hk_vm__%s)b & ~m));\n"
                   "}\n\n",
                   nm, form == VT_MIN ? "<" : ">", nm, nm, nm);
  put_rowfin(o, in);
  if (vec_finalize(in)) emit_vfinal(o, in);
  emit_rowc(o, in, ins);
  put_rowb_head(o, in, "HK_INLINE", "hk_rowb");
  hku_buf_printf(o,
                 "    const size_t hk_i0 = n - n %% %d;\n"
                 "    void *hk_row[%d];\n",
                 L, k->nparams);
  /* rows of 2 to HK_ROWC_MAX (HK_ROWC_WIDE_MAX) elements in one run:
   * hk_rowc */
  if (HK_ROWC_T8_MAX(es))
    hku_buf_printf(o,
                   "    if (n >= 2 && n <= (HK_VB == 32 ? (HK_ROWC_WIDE ? %d : "
                   "%d) : %d)",
                   HK_ROWC_WIDE_MAX(es), HK_ROWC_T8_MAX(es), HK_ROWC_MAX(es));
  else
    hku_buf_printf(o, "    if (n >= 2 && n <= (HK_ROWC_WIDE ? %d : %d)",
                   HK_ROWC_WIDE_MAX(es), HK_ROWC_MAX(es));
  for (int i = 0; i < k->nparams; i++)
    if (ins >> i & 1)
      hku_buf_printf(o, " && hk_steps[%d] == (ptrdiff_t)(n * sizeof(%s))", i, acc);
  hku_buf_printf(o,
                 ")\n"
                 "        hk_r = hk_rowc__%s(hk_args, n, hk_r, hk_r1, hk_steps);\n"
                 "    for (; hk_r1 - hk_r >= (size_t)hk_W; hk_r += hk_W) {\n",
                 nm);
  /* each read parameter's rows */
  for (int i = 0; i < k->nparams; i++)
    if (ins >> i & 1)
      hku_buf_printf(o,
                     "        const %s *hk_q_%s[hk_W];\n"
                     "        for (int hk_k = 0; hk_k < hk_W; ++hk_k)\n"
                     "            hk_q_%s[hk_k] = (const %s *)((const char *)"
                     "hk_args[%d] + (ptrdiff_t)(hk_r + hk_k) * hk_steps[%d]);\n",
                     acc, k->params[i].name, k->params[i].name, acc, i, i);
  hku_buf_put(o, "#if HK_VB == 32\n");
  put_rowb_tree(o, in, ins, (int)(32 / es));
  hku_buf_put(o, "#else\n");
  put_rowb_tree(o, in, ins, (int)(16 / es));
  hku_buf_printf(o,
                 "#endif\n"
                 "        hk_vt__%s hk_res = hk_a[0][0];\n"
                 "        for (size_t hk_i = hk_i0; hk_i < n; ++hk_i) {\n",
                 nm);
  for (int i = 0; i < k->nparams; i++)
    if (ins >> i & 1)
      hku_buf_printf(o,
                     "            hk_vt__%s %s;\n"
                     "            for (int hk_k = 0; hk_k < hk_W; ++hk_k)\n"
                     "                %s[hk_k] = hk_q_%s[hk_k][hk_i];\n",
                     nm, k->params[i].name, k->params[i].name, k->params[i].name);
  hku_buf_printf(o, "            hk_res = hk_vcomb__%s(hk_res, ", nm);
  hkc_put_expr(o, &k->map);
  hku_buf_put(o, ");\n        }\n");
  if (vec_finalize(in)) {
    /* the W finalizes as one vector operation, then a store per row (a
     * vector store behind a test cost the batches' loop: put_rowb_fin);
     * means over rows of 8 to 40 floats took 1.1-1.3x the sums' time */
    const int r = hkc_result_index(k);
    hku_buf_printf(o,
                   "        (void)hk_row;\n"
                   "        hk_res = hk_vfinal__%s(hk_res, n);\n"
                   "        for (int hk_k = 0; hk_k < hk_W; ++hk_k)\n"
                   "            *(%s *)((char *)hk_args[%d] + (ptrdiff_t)(hk_r + "
                   "(size_t)hk_k) * hk_steps[%d]) = hk_res[hk_k];\n",
                   nm, acc, r, r);
  } else {
    put_rowb_fin(o, in, 0, 8, 0);
  }
  hku_buf_put(o,
              "    }\n"
              "    return hk_r;\n"
              "}\n"
              "#endif\n\n");
}

/* The entry points: range (a whole reduction, or one block's partial),
 * merge (partials left to right, then finalize) and rowred (a reduction
 * per row, abi.h). range's code is hk_reduce1__NAME, inline in both range
 * and rowred's loop over rows: there the rows' pointers stay in registers
 * and each row costs its own elements and tree, not a call (per-row sums
 * of 16 floats took 17.7 times the whole sum's time called one by one, 4.4
 * times in one loop; rows of 64 3.0 and 1.8 times, of 768 1.09 and 1.02:
 * x86-64-v3, one thread, both in one process). */
static void emit_reduce_entries(hku_buf *o, const hkc_instance *in,
                                hkc_emit_mode mode) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  const char *acc = hkc_acc_ctype(in, cb);

  hku_buf_printf(o,
                 "HK_INLINE void hk_reduce1__%s(void *const *hk_args, size_t n, "
                 "size_t hk_begin, size_t hk_end, void *hk_partial)\n{\n",
                 nm);
  hku_buf_printf(o, "    %s hk_acc = hk_part__%s(", acc, nm);
  put_args_call(o, in, 1);
  hku_buf_printf(o, "%sn, hk_begin, hk_end);\n", part_nparams(k) ? ", " : "");
  hku_buf_printf(o,
                 "    if (hk_partial) {\n        *(%s *)hk_partial = hk_acc;\n"
                 "        return;\n    }\n",
                 acc);
  put_store_final(o, in);

  put_range_head(o, in, mode);
  hku_buf_printf(o,
                 "    hk_reduce1__%s(hk_args, n, hk_begin, hk_end, hk_partial);\n"
                 "}\n\n",
                 nm);

  /* short rows a batch at a time: plain combines (emit_rowbatch), argmax
   * and argmin (emit_argsel.c) */
  const uint64_t bx = rowb_ins(in);
  const int sel = hkc_argsel_form(in);
  const size_t es = hkc_acc_size(in);
  int rowb_max = 0;
  if (bx) {
    emit_rowbatch(o, in, bx);
    rowb_max = HK_ROWB_LANES(es) * hkc_reduce_lanes(es);
  } else if (sel) {
    /* the value's type; 8- and 16-bit ones keep a row at a time */
    const size_t vs =
        hk_dtype_size(hkc_acc_field_type(in, &in->k->acc_fields[0]));
    if (vs >= 4) {
      hku_buf_put(o, "#if HK_VEC_TREE\n");
      put_rowfin(o, in);
      hku_buf_put(o, "#endif\n");
      hkc_put_argsel_rowb(o, in, sel);
      rowb_max = HK_ROWB_ARGSEL(vs);
    }
  }
  hku_buf_printf(o,
                 "%svoid " HK_ABI_ROWRED "%s(void *const *hk_args, size_t n, "
                 "size_t hk_r0, size_t hk_r1, const ptrdiff_t *hk_steps)\n{\n",
                 link_of(mode), nm);
  if (rowb_max)
    hku_buf_printf(o,
                   "#if HK_VEC_TREE\n"
                   "    if (n < %d)\n"
                   "        hk_r0 = hk_rowb__%s(hk_args, n, hk_r0, hk_r1, hk_steps);\n"
                   "#endif\n",
                   rowb_max, nm);
  hku_buf_printf(o,
                 "    void *hk_row[%d];\n"
                 "    for (size_t hk_r = hk_r0; hk_r < hk_r1; ++hk_r) {\n"
                 "        for (int hk_k = 0; hk_k < %d; ++hk_k)\n"
                 "            hk_row[hk_k] = (char *)hk_args[hk_k] + "
                 "(ptrdiff_t)hk_r * hk_steps[hk_k];\n"
                 "        hk_reduce1__%s(hk_row, n, 0, n, (void *)0);\n"
                 "    }\n}\n\n",
                 k->nparams, k->nparams, nm);

  emit_colred(o, in, mode);

  hku_buf_printf(o,
                 "%svoid " HK_ABI_MERGE "%s(void *const *hk_args, size_t n, "
                 "const void *hk_partials, size_t hk_count)\n{\n",
                 link_of(mode), nm);
  hku_buf_printf(o,
                 "    const %s *hk_v = (const %s *)hk_partials;\n"
                 "    %s hk_acc = hk_v[0];\n"
                 "    for (size_t hk_k = 1; hk_k < hk_count; ++hk_k)\n"
                 "        hk_acc = hk_combine__%s(hk_acc, hk_v[hk_k]);\n",
                 acc, acc, acc, nm);
  put_store_final(o, in);
}

/* The typed stdlib function hk_NAME of a reduction. */
static void emit_reduce_typed(hku_buf *o, const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  char cb[HKC_ACC_CTYPE_MAX];
  put_typed_head(o, in);
  hku_buf_put(o, "\n{\n    if (n > HK_REDUCE_BLOCK) {\n");
  put_args_array(o, in, 8);
  hku_buf_printf(o,
                 "        hk__par_reduce(" HK_ABI_RANGE "%s, " HK_ABI_MERGE
                 "%s, sizeof(%s), hk_args, n, %uu);\n        return;\n    }\n",
                 nm, nm, hkc_acc_ctype(in, cb), flags_of(k));
  hk_dtype_t rt = HK_DTYPE_INVALID; /* the struct form converts inside */
  if (is_struct(in)) {
    hku_buf_printf(o, "    hk_final__%s(hk_part__%s(", nm, nm);
    put_names(o, k, 1);
    hku_buf_put(o, "n, 0, n), n");
    for (int i = 0; i < k->nparams; i++)
      if (hkc_is_result(&k->params[i]))
        hku_buf_printf(o, ", %s", k->params[i].name);
  } else {
    const hkc_param *r = &k->params[hkc_result_index(k)];
    rt = hkc_param_type(in, r);
    hku_buf_printf(o, "    *%s = %shk_final__%s(hk_part__%s(", r->name,
                   hkc_store_pre(rt), nm, nm);
    put_names(o, k, 1);
    hku_buf_put(o, "n, 0, n), n");
    if (r->role == HK_ROLE_INOUT)
      hku_buf_printf(o, ", %s*%s%s", hkc_load_pre(rt), r->name,
                     hkc_conv_post(rt));
  }
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].role == HK_ROLE_SCALAR)
      hku_buf_printf(o, ", %s", k->params[i].name);
  hku_buf_printf(o, ")%s;\n}\n\n", hkc_conv_post(rt));
}

/* Reduction: (a struct accumulator's type, identity and map), combine,
 * final, the block reducer, range and merge, and (stdlib) the typed
 * function. */
static void emit_reduction(hku_buf *o, const hkc_instance *in,
                           hkc_emit_mode mode) {
  if (is_struct(in)) {
    hkc_put_acc_struct(o, in);
    hkc_put_identity_fn(o, in, "HK_INLINE ");
    hkc_put_map_fn(o, in, "HK_INLINE ");
  }
  /* combine as a function: used by the lanes, the tail and merge */
  hkc_put_combine_fn(o, in, "HK_INLINE ");
  emit_final(o, in);
  emit_part(o, in);
  emit_reduce_entries(o, in, mode);
  if (mode == HKC_EMIT_STDLIB) emit_reduce_typed(o, in);
}

/* ---- raw --------------------------------------------------------------------------- */

/* Raw: the author's function, the range entry point that calls it once,
 * and (stdlib) the typed function. */
static void emit_raw(hku_buf *o, const hkc_instance *in, hkc_emit_mode mode) {
  const char *nm = in->name;

  hkc_put_raw_function(o, in, "static void hk_raw__", &in->k->cpu);
  put_range_head(o, in, mode);
  hku_buf_printf(o,
                 "    (void)hk_begin;\n    (void)hk_end;\n    (void)hk_partial;\n"
                 "    hk_raw__%s(",
                 nm);
  put_args_call(o, in, 0);
  hku_buf_put(o, ", n);\n}\n\n");

  if (mode == HKC_EMIT_STDLIB) {
    put_typed_head(o, in);
    hku_buf_printf(o, "\n{\n    hk_raw__%s(", nm);
    put_names(o, in->k, 0);
    hku_buf_put(o, "n);\n}\n\n");
  }
}

/* ---- lens (every kind) ----------------------------------------------------------------- */

/* hk_lens__NAME: each parameter's element count, checked (abi.h). */
static void emit_lens(hku_buf *o, const hkc_instance *in, hkc_emit_mode mode) {
  const hkc_kernel *k = in->k;
  hku_buf_printf(o,
                 "%sint " HK_ABI_LENS "%s(void *const *hk_args, size_t n, "
                 "int64_t *hk_lens)\n{\n",
                 link_of(mode), in->name);
  int any_len = 0;
  for (int i = 0; i < k->nparams; i++) any_len |= k->params[i].len.text != NULL;
  if (any_len) {
    hku_buf_put(o, "    int hk_bad = 0;\n");
    for (int i = 0; i < k->nparams; i++)
      if (!is_buffer(&k->params[i])) {
        hku_buf_printf(o, "    const %s %s = ",
                       hkc_param_stype(in, &k->params[i]), k->params[i].name);
        hkc_put_arg(o, in, i);
        hku_buf_printf(o, ";\n    (void)%s;\n", k->params[i].name);
      }
  } else {
    hku_buf_put(o, "    (void)hk_args;\n");
  }
  hku_buf_put(o, "    (void)n;\n");
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    hku_buf_printf(o, "    hk_lens[%d] = ", i);
    if (!is_buffer(p))
      hku_buf_put(o, "-1;\n");
    else if (k->kind == HK_KIND_REDUCTION && hkc_is_result(p))
      hku_buf_put(o, "1;\n");
    else if (k->kind == HK_KIND_ROWS && p->row == HK_ROW_ONE)
      hku_buf_put(o, "1;\n"); /* one row's lens: one element */
    else if (p->len.text) {
      /* checked: overflow, division by zero or a negative count fail */
      int rc = hkc_emit_len(&p->len, in, o);
      HK_ASSERT(rc != HK_ESCHEMA); /* validated files hold valid lens */
      if (rc != HK_OK) o->oom = 1; /* out of memory: the unit fails whole */
      hku_buf_printf(o,
                     ";\n    if (hk_bad || hk_lens[%d] < 0)\n        return "
                     "-1;\n",
                     i);
    } else
      hku_buf_put(o, "(int64_t)n;\n");
  }
  hku_buf_put(o, "    return 0;\n}\n\n");
}

/* ---- Files ------------------------------------------------------------------------------ */

/* hk_params__NAME[]: an instance's parameter descriptions (stdlib). */
static void put_param_table(hku_buf *o, const hkc_file *f,
                            const hkc_instance *in, void *arg) {
  (void)f, (void)arg;
  const hkc_kernel *k = in->k;
  hku_buf_printf(o, "static const hk_param_info_t hk_params__%s[] = {\n",
                 in->name);
  for (int p = 0; p < k->nparams; p++) {
    const hkc_param *pp = &k->params[p];
    hku_buf_printf(o, "    {\"%s\", %s, HK_ROLE_%s, ", pp->name,
                   dtype_enum(hkc_param_type(in, pp)),
                   pp->role == HK_ROLE_IN      ? "IN"
                   : pp->role == HK_ROLE_OUT   ? "OUT"
                   : pp->role == HK_ROLE_INOUT ? "INOUT"
                                               : "SCALAR");
    if (pp->len.text) {
      char *e = hkc_expr_oneline(&pp->len);
      if (e)
        hkc_emit_c_string(o, e);
      else
        o->oom = 1;
      free(e);
    } else {
      hku_buf_put(o, "NULL");
    }
    hku_buf_put(o, ", ");
    hkc_emit_c_string(o, pp->doc ? pp->doc : "");
    hku_buf_printf(o, ", HK_ROW_%s},\n",
                   pp->row == HK_ROW_ONE      ? "ONE"
                   : pp->row == HK_ROW_SHARED ? "SHARED"
                                              : "FULL");
  }
  hku_buf_put(o, "};\n");
}

/* An instance's hk_stdlib_entry_t (abi.h); counts it in *(size_t *)arg. */
static void put_table_entry(hku_buf *o, const hkc_file *f,
                            const hkc_instance *in, void *arg) {
  const hkc_kernel *k = in->k;
  const char *nm = in->name;
  hku_buf_printf(o, "    {{\"%s\", ", nm);
  hkc_emit_c_string(o, k->doc);
  hku_buf_printf(o, ", HK_KIND_%s, %uu, %d, hk_params__%s, \"stdlib\", ",
                 k->kind == HK_KIND_ELEMENTWISE ? "ELEMENTWISE"
                 : k->kind == HK_KIND_REDUCTION ? "REDUCTION"
                 : k->kind == HK_KIND_ROWS      ? "ROWS"
                 : k->kind == HK_KIND_GRID      ? "GRID"
                                                : "RAW",
                 hkc_instance_targets(in), k->nparams, nm);
  hkc_emit_c_string(o, f->path);
  hku_buf_printf(o, ", %d},\n     " HK_ABI_RANGE "%s, ", hkc_kernel_uses_n(k),
                 nm);
  if (k->kind == HK_KIND_REDUCTION)
    hku_buf_printf(o, HK_ABI_MERGE "%s, ", nm);
  else
    hku_buf_put(o, "NULL, ");
  hku_buf_printf(o, HK_ABI_LENS "%s, ", nm);
  if (k->kind == HK_KIND_REDUCTION)
    hku_buf_printf(o, HK_ABI_ROWRED "%s, " HK_ABI_COLRED "%s, " HK_ABI_COLPART "%s, ",
                   nm, nm, nm);
  else
    hku_buf_put(o, "NULL, NULL, NULL, ");
  hku_buf_printf(o, "%zu, %uu, (void (*)(void))hk_%s},\n", hkc_acc_size(in),
                 flags_of(k), nm);
  (*(size_t *)arg)++;
}

/* The stdlib registry: hk__stdlib[] and hk__stdlib_count (abi.h). */
static void emit_table(hku_buf *o, hkc_file *const *files, int nfiles) {
  size_t count = 0;
  hkc_each_instance(files, nfiles, HK_TARGET_CPU, put_param_table, o, NULL);
  hku_buf_put(o, "\nconst hk_stdlib_entry_t hk__stdlib[] = {\n");
  hkc_each_instance(files, nfiles, HK_TARGET_CPU, put_table_entry, o, &count);
  hku_buf_printf(o, "};\n\nconst size_t hk__stdlib_count = %zu;\n", count);
}

static const hkc_emitter c_emitter = {HK_TARGET_CPU,  1,
                                      emit_elementwise, emit_reduction,
                                      emit_raw,       emit_lens,
                                      hkc_emit_rows_c, hkc_emit_grid_c};

int hkc_emit_c_mapped(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                      hku_buf *o, hkc_linemap *map) {
  return hkc_emit_c_unit(files, nfiles, mode, o, map, NULL, NULL);
}

int hkc_emit_c(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
               hku_buf *o) {
  return hkc_emit_c_unit(files, nfiles, mode, o, NULL, NULL, NULL);
}

int hkc_emit_c_unit(hkc_file *const *files, int nfiles, hkc_emit_mode mode,
                    hku_buf *o, hkc_linemap *map, size_t prelude[2],
                    size_t *marks) {
  if (map) hkc_linemap_start(o, map);
  hku_buf_put(o, "/* Generated by hk " HK_VERSION_STRING " from ");
  for (int f = 0; f < nfiles; f++) {
    hku_buf_put(o, f ? ", " : "");
    hkc_put_comment_text(o, files[f]->path);
  }
  hku_buf_put(o,
              ".\n * Do not edit: edit the kernel file and generate again. */\n\n");
  size_t at = o->len;
  hkc_emit_prelude(mode, o);
  if (prelude) {
    prelude[0] = at;
    prelude[1] = o->len - at;
  }
  hkc_emit_instances(files, nfiles, mode, &c_emitter, o, marks);
  if (mode == HKC_EMIT_STDLIB) {
    hku_buf_put(o, "/* ---- the stdlib registry table ---- */\n\n");
    emit_table(o, files, nfiles);
  }
  o->map = NULL;
  return o->oom ? HK_ENOMEM : HK_OK;
}

/* A kernel's comment before its first instance, each instance's
 * prototype, and a blank line after its last. */
static void put_header_proto(hku_buf *o, const hkc_file *f,
                             const hkc_instance *in, void *arg) {
  (void)f, (void)arg;
  const hkc_kernel *k = in->k;
  if (in == &k->inst[0]) {
    hku_buf_printf(o, "/* %s (%s): ", k->name, hk_kind_name(k->kind));
    hkc_put_comment_text(o, k->doc);
    hku_buf_put(o, " */\n");
  }
  hkc_emit_typed_proto(in, o);
  hku_buf_put(o, ";\n");
  if (in == &k->inst[k->ninst - 1]) hku_buf_put(o, "\n");
}

int hkc_emit_stdlib_header(hkc_file *const *files, int nfiles, hku_buf *o) {
  hku_buf_put(o,
              "/* hk_stdlib.h — the typed stdlib functions of libhk.\n"
              " * Generated by hk " HK_VERSION_STRING
              " from the kernel files in stdlib_kernels/; do not edit.\n"
              " * Include <hk.h>, which includes this header. Each function\n"
              " * takes its kernel's parameters in order (buffers as pointers,\n"
              " * scalars by value), then the element count n; a rows\n"
              " * kernel's takes the row count, then the row length n. */\n"
              "#ifndef HK_STDLIB_H\n#define HK_STDLIB_H\n\n"
              "#include \"hk.h\"\n\n"
              "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n");
  hkc_each_instance(files, nfiles, HK_TARGET_CPU, put_header_proto, o, NULL);
  hku_buf_put(o, "#ifdef __cplusplus\n}\n#endif\n\n#endif /* HK_STDLIB_H */\n");
  return o->oom ? HK_ENOMEM : HK_OK;
}
