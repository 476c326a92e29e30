/* parse.h — what the kernel file validator's two halves share (parse.c:
 * files, kernels, kinds; parse_params.c: parameters, placeholders, targets,
 * instances). Internal to codegen/.
 *
 * Every problem found is reported at once as a located diagnostic and
 * counted in the parser's errors; the validator keeps going where it can.
 */
#ifndef HKC_PARSE_H
#define HKC_PARSE_H

#include "kernel.h"

typedef struct hkc_parser {
  hkj_doc *doc;
  hku_diags *d;
  int errors; /* problems reported so far */
} hkc_parser;

/* ---- Reporting (parse.c) ---- */

/* An error at byte off of the file about field ("params[1].type"; NULL
 * or "" for none): "FIELD: MESSAGE", counted in P->errors. */
void hkc_err_at(hkc_parser *P, size_t off, const char *field, const char *fmt,
                ...) __attribute__((format(printf, 4, 5)));
/* An error about the value v, and one about the key of member v. */
#define hkc_err(P, v, ...) hkc_err_at((P), (v)->off, __VA_ARGS__)
#define hkc_err_key(P, v, ...) hkc_err_at((P), (v)->key_off, __VA_ARGS__)
/* "kernels[0].params[1].type" from a prefix and a printf-style suffix, in a
 * rotating set of four thread-local buffers: use it right away. */
const char *hkc_fld(const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The name of an object itself: "kernels[0]" for the prefix "kernels[0].",
 * "kernel" for the top-level one (in hkc_fld's buffers). */
const char *hkc_obj_name(const char *prefix);
/* Reports duplicate keys and keys not in the NULL-terminated allowed
 * (keys starting with '_' are the author's annotations and are ignored). */
void hkc_check_keys(hkc_parser *P, const hkj_node *obj, const char *prefix,
                    const char *const *allowed);
/* 1 when s is a C identifier. */
int hkc_is_identifier(const char *s);
/* v's text when it is a string; otherwise reports that `expected` was
 * expected and returns NULL. */
/* The file's or a kernel's "doc": the string of v, or NULL after
 * reporting it (field f) when it is not a string or is not one line (hk
 * list shows it; other control characters it shows as '?'). */
const char *hkc_want_doc(hkc_parser *P, const hkj_node *v, const char *f);
const char *hkc_want_string(hkc_parser *P, const hkj_node *v,
                            const char *field, const char *expected);
/* "f32, f64, ..., u64", for messages. */
extern const char *const hkc_type_list;
/* Collects the author-code field key of obj into *out: a string, or an
 * array of strings (lines, joined with newlines). HK_OK when absent or
 * valid; HK_ESCHEMA (reported) or HK_ENOMEM. */
int hkc_take_src(hkc_parser *P, const hkj_node *obj, const char *key,
                 const char *prefix, hkc_src *out);

/* ---- Parameters, placeholders, targets, instances (parse_params.c) ---- */

/* Reads "params" into k->params (k's placeholders and targets already
 * read). HK_OK, or HK_ENOMEM; problems are reported. */
int hkc_parse_params(hkc_parser *P, const hkj_node *obj, const char *prefix,
                     hkc_kernel *k);
/* Checks the roles against k's kind (every parameter read without
 * error). */
void hkc_check_roles(hkc_parser *P, const hkj_node *obj, const char *prefix,
                     hkc_kernel *k);
/* Reads param p's "row" (po is its object, at field prefix ppre): only
 * rows kernels' buffers have one (parse_rows.c). */
void hkc_param_row(hkc_parser *P, const hkj_node *po, const char *ppre,
                   const hkc_kernel *k, hkc_param *p);
/* The rules on a rows kernel's parameters (row modes against roles, a
 * written buffer); nothing for other kinds (parse_rows.c). */
void hkc_check_rows_params(hkc_parser *P, const hkj_node *obj,
                           const char *prefix, const hkc_kernel *k);
/* The names an expression may use, as a malloc'ed NULL-terminated list:
 * the parameters whose roles are in role_mask (HKC_ROLE_BIT) and the
 * refused ones whatever their role (they were reported), then extra, the
 * consts, then the placeholder letters. NULL when out of memory. */
const char **hkc_names_for(const hkc_kernel *k, unsigned role_mask,
                           const char *const *extra);
/* The parameters whose values kernel code sees as floats in every
 * instance (f32, f64, and f16 and bf16, which elementwise, reduction and
 * rows code sees as float copies; with storage, raw and grid code, whose
 * f16 and bf16 buffers are uint16_t storage, their scalars only), as a
 * malloc'ed NULL-terminated list; NULL when out of memory. */
const char **hkc_float_names(const hkc_kernel *k, int storage);
/* Reads "types" (the placeholders) and "targets" into k. */
void hkc_parse_types(hkc_parser *P, const hkj_node *obj, const char *prefix,
                     hkc_kernel *k);
void hkc_parse_targets(hkc_parser *P, const hkj_node *obj,
                       const char *prefix, hkc_kernel *k);
/* Makes k's instances, one per combination of placeholder types (a valid
 * kernel only). HK_OK, or HK_ENOMEM; problems are reported. */
int hkc_make_instances(hkc_parser *P, const hkj_node *obj, const char *prefix,
                       hkc_kernel *k);

/* ---- Reductions (reduce.c) ---- */

/* Reads a reduction's "acc", "map", "combine", "identity" and "finalize"
 * into k (placeholders and targets already read). HK_OK, or HK_ENOMEM;
 * problems are reported. */
int hkc_parse_reduction(hkc_parser *P, const hkj_node *obj, const char *prefix,
                        hkc_kernel *k);
/* Checks a reduction's code, once its parameters are known. HK_OK or
 * HK_ENOMEM; problems are reported. */
int hkc_check_reduction(hkc_parser *P, hkc_kernel *k);
/* Reports a struct accumulator larger than HK_REDUCE_ACC_MAX in any of
 * k's instances (made). */
void hkc_check_acc_size(hkc_parser *P, const hkj_node *obj, const char *prefix,
                        const hkc_kernel *k);
/* Frees what hkc_parse_reduction added to k. */
void hkc_reduction_free(hkc_kernel *k);

/* Reads a type name or a declared placeholder letter from v (at field f)
 * into *t or *ph; 0 when it is not one (reported) (reduce.c). */
int hkc_read_type(hkc_parser *P, const hkj_node *v, const char *f,
                  const hkc_kernel *k, hk_dtype_t *t, char *ph);
/* Frees a code field's text and positions, and zeroes it (parse.c). */
void hkc_src_free(hkc_src *s);

/* ---- Grid kernels, consts and helpers (parse_grid.c) ---- */

/* Reads "consts" and "helpers" (every kind) and, for a grid kernel,
 * "grid", "setup" and "scratch" (refused on other kinds). Parameters
 * already read. HK_OK or HK_ENOMEM; problems are reported. */
int hkc_parse_defs(hkc_parser *P, const hkj_node *obj, const char *prefix,
                   hkc_kernel *k);
/* Checks the helpers' code: signatures, bodies (math functions and other
 * helpers only), no recursion. HK_OK or HK_ENOMEM; problems reported. */
int hkc_check_helpers(hkc_parser *P, const hkc_kernel *k);
/* Checks a grid kernel's extents, setup values, scratch lens (constant,
 * within HKC_SCRATCH_MAX bytes), body and buffer lens. */
int hkc_check_grid(hkc_parser *P, hkc_kernel *k);
/* The kernel's helper names, NULL-terminated (free() the array only);
 * NULL when out of memory. */
const char **hkc_helper_names(const hkc_kernel *k);
/* Frees what hkc_parse_defs added to k. */
void hkc_defs_free(hkc_kernel *k);

/* Why name cannot name something kernel code sees (a parameter, an
 * accumulator field), or NULL: a C (or, for cuda, C++) keyword, an hk_
 * name, a math name, a type name or a placeholder letter (parse_params.c). */
const char *hkc_bad_code_name(const char *name, unsigned targets,
                              const hkc_kernel *k);

#endif /* HKC_PARSE_H */
