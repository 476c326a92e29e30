/* reduce.c — a reduction's accumulator and code (the validator's part for
 * kind "reduction", parse.h; the questions emitters ask, kernel.h).
 *
 * Three forms of accumulator (schemas/README.md, "kind reduction"):
 *   no "acc"         the result parameter's type; identity, map and combine
 *                    are expressions in it; finalize an expression;
 *   "acc": "i64"     another type (or a placeholder): the same expressions
 *                    in that type, finalize's value converted on store;
 *   "acc": {...}     a struct: identity and map give each field an
 *                    expression; combine is statements updating a from b;
 *                    finalize is statements assigning the result parameters
 *                    by name. Only this form may have several results.
 * The simple forms have one result parameter, out or inout; an inout's
 * current element 0 is readable in finalize (accumulating into a buffer).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "parse.h"

/* ---- Queries ---------------------------------------------------------------- */

int hkc_is_result(const hkc_param *p) {
  return p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT;
}

int hkc_result_index(const hkc_kernel *k) {
  for (int i = 0; i < k->nparams; i++)
    if (hkc_is_result(&k->params[i])) return i;
  return -1;
}

hk_dtype_t hkc_acc_type(const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  if (k->acc_form == HKC_ACC_STRUCT) return HK_DTYPE_INVALID;
  if (k->acc_form == HKC_ACC_TYPE)
    return k->acc_placeholder ? in->bind[k->acc_placeholder - 'A']
                              : k->acc_dtype;
  int r = hkc_result_index(k);
  return r < 0 ? HK_DTYPE_INVALID : hkc_param_type(in, &k->params[r]);
}

hk_dtype_t hkc_acc_field_type(const hkc_instance *in, const hkc_acc_field *f) {
  return f->placeholder ? in->bind[f->placeholder - 'A'] : f->dtype;
}

size_t hkc_acc_size(const hkc_instance *in) {
  const hkc_kernel *k = in->k;
  /* a rows kernel: the bytes of scratch a row's element needs (abi.h) */
  if (k->kind == HK_KIND_ROWS) return (size_t)hkc_rows_nstaged(in) * sizeof(float);
  if (k->kind != HK_KIND_REDUCTION) return 0;
  /* sizes of what code sees: a float for f16 and bf16 */
  if (k->acc_form != HKC_ACC_STRUCT) return hkc_compute_size(hkc_acc_type(in));
  size_t off = 0, align = 1;
  for (int i = 0; i < k->nacc_fields; i++) {
    size_t sz = hkc_compute_size(hkc_acc_field_type(in, &k->acc_fields[i]));
    if (!sz) sz = 1;
    off = (off + sz - 1) / sz * sz;
    off += sz;
    if (sz > align) align = sz;
  }
  return (off + align - 1) / align * align;
}

/* ---- Reading ------------------------------------------------------------------- */

/* Reads a type name or a declared placeholder letter from v (at field f)
 * into *t or *ph; 0 when it is not one (reported). */
int hkc_read_type(hkc_parser *P, const hkj_node *v, const char *f,
                  const hkc_kernel *k, hk_dtype_t *t, char *ph) {
  const char *s = hkc_want_string(P, v, f, "a type name");
  if (!s) return 0;
  *t = hk_dtype_from_name(s);
  if (*t != HK_DTYPE_INVALID) return 1;
  if (s[0] >= 'A' && s[0] <= 'Z' && !s[1]) {
    for (int h = 0; h < k->nholders; h++)
      if (k->holders[h].letter == s[0]) {
        *ph = s[0];
        return 1;
      }
    hkc_err(P, v, f,
            "placeholder \"%s\" is not declared in \"types\" (e.g. "
            "\"types\": {\"%s\": [\"f32\", \"f64\"]})",
            s, s);
    return 0;
  }
  hkc_err(P, v, f,
          "unknown type \"%s\"; expected one of %s, or a placeholder letter "
          "declared in \"types\"",
          s, hkc_type_list);
  return 0;
}

/* Why name cannot name an accumulator field, or NULL when it can. */
static const char *bad_field_name(const char *name, const hkc_kernel *k) {
  if (!hkc_is_identifier(name))
    return "is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)";
  if (strlen(name) > HKC_NAME_MAX) return "is too long (at most 63 characters)";
  return hkc_bad_code_name(name, k->targets, k);
}

/* Reads "acc" (v): a type, or an object of fields. HK_OK or HK_ENOMEM;
 * problems are reported. */
static int parse_acc(hkc_parser *P, const hkj_node *v, const char *prefix,
                     hkc_kernel *k) {
  const char *f = hkc_fld(prefix, "acc");
  if (v->type == HKJ_STRING) {
    k->acc_form = HKC_ACC_TYPE;
    hkc_read_type(P, v, f, k, &k->acc_dtype, &k->acc_placeholder);
    return HK_OK;
  }
  if (v->type != HKJ_OBJECT) {
    hkc_err(P, v, f,
            "expected a type (%s, or a placeholder) or an object of named "
            "fields ({\"v\": \"T\", \"idx\": \"i64\"}), got %s",
            hkc_type_list, hkj_type_name(v->type));
    return HK_OK;
  }
  k->acc_form = HKC_ACC_STRUCT;
  if (v->nkids == 0) {
    hkc_err(P, v, f,
            "is empty: a struct accumulator needs at least one field "
            "({\"FIELD\": \"TYPE\", ...})");
    return HK_OK;
  }
  k->acc_fields = calloc(v->nkids, sizeof *k->acc_fields);
  if (!k->acc_fields) return HK_ENOMEM;
  for (size_t i = 0; i < v->nkids; i++) {
    const hkj_node *m = v->kids[i];
    const char *ff = hkc_fld(prefix, "acc.%s", m->key);
    int dup = 0;
    for (size_t j = 0; j < i && !dup; j++)
      if (!strcmp(v->kids[j]->key, m->key)) {
        int line, col;
        hkj_pos(P->doc, v->kids[j]->key_off, &line, &col);
        hkc_err_key(P, m, ff,
                    "duplicate field (first given at line %d, column %d)",
                    line, col);
        dup = 1;
      }
    if (dup) continue;
    const char *why = bad_field_name(m->key, k);
    if (why) hkc_err_key(P, m, ff, "\"%s\" %s; choose another name", m->key, why);
    hkc_acc_field *af = &k->acc_fields[k->nacc_fields++];
    af->node = m;
    if (!(af->name = hku_strdup(m->key))) return HK_ENOMEM;
    hkc_read_type(P, m, ff, k, &af->dtype, &af->placeholder);
  }
  return HK_OK;
}

/* The field of k's struct accumulator named name, or NULL. */
static hkc_acc_field *find_field(hkc_kernel *k, const char *name) {
  for (int i = 0; i < k->nacc_fields; i++)
    if (!strcmp(k->acc_fields[i].name, name)) return &k->acc_fields[i];
  return NULL;
}

/* Reads key ("identity" or "map") of a struct reduction: an object giving
 * each accumulator field an expression. HK_OK or HK_ENOMEM. */
static int take_per_field(hkc_parser *P, const hkj_node *obj,
                          const char *prefix, const char *key, hkc_kernel *k) {
  const hkj_node *v = hkj_get(obj, key);
  char f[320]; /* hkc_fld()'s buffers rotate: keep a copy */
  snprintf(f, sizeof f, "%s%s", prefix, key);
  int map = !strcmp(key, "map");
  if (v->type != HKJ_OBJECT) {
    hkc_err(P, v, f,
            "expected an object giving each accumulator field %s ({\"%s\": "
            "\"...\", ...}), as \"acc\" is a struct; got %s",
            map ? "its value at element i" : "its neutral value",
            k->nacc_fields ? k->acc_fields[0].name : "FIELD",
            hkj_type_name(v->type));
    return HK_OK;
  }
  char sub[320];
  snprintf(sub, sizeof sub, "%s%s.", prefix, key);
  for (size_t i = 0; i < v->nkids; i++) {
    const hkj_node *m = v->kids[i];
    int dup = 0;
    for (size_t j = 0; j < i; j++) dup |= !strcmp(v->kids[j]->key, m->key);
    if (dup) {
      hkc_err_key(P, m, hkc_fld(sub, "%s", m->key), "duplicate field");
      continue;
    }
    if (m->key[0] == '_') continue; /* an annotation, as everywhere */
    hkc_acc_field *af = find_field(k, m->key);
    if (!af) {
      hku_buf list = HKU_BUF_INIT;
      for (int a = 0; a < k->nacc_fields; a++)
        hku_buf_printf(&list, "%s%s", a ? ", " : "", k->acc_fields[a].name);
      hkc_err_key(P, m, f,
                  "unknown field \"%s\": the accumulator's fields (\"acc\") "
                  "are %s",
                  m->key, hku_buf_str(&list));
      hku_buf_free(&list);
      continue;
    }
    hkc_src *dst = map ? &af->map : &af->identity;
    int rc = hkc_take_src(P, v, m->key, sub, dst);
    if (rc == HK_ENOMEM) return rc;
  }
  for (int a = 0; a < k->nacc_fields; a++)
    if (!hkj_get(v, k->acc_fields[a].name))
      hkc_err(P, v, f, "missing field \"%s\" (an expression: %s)",
              k->acc_fields[a].name,
              map ? "its value at element i" : "its neutral value");
  return HK_OK;
}

/* hkc_take_src for a field whose problems are only reported. */
static int take_code(hkc_parser *P, const hkj_node *obj, const char *key,
                     const char *prefix, hkc_src *out) {
  int rc = hkc_take_src(P, obj, key, prefix, out);
  return rc == HK_ENOMEM ? rc : HK_OK;
}

int hkc_parse_reduction(hkc_parser *P, const hkj_node *obj, const char *prefix,
                        hkc_kernel *k) {
  static const char *const req[] = {"map", "combine", "identity"};
  const hkj_node *acc = hkj_get(obj, "acc");
  if (acc && parse_acc(P, acc, prefix, k) != HK_OK) return HK_ENOMEM;
  int st = k->acc_form == HKC_ACC_STRUCT;
  const char *what[] = {
      st ? "an object: each accumulator field's value at element i"
         : "an expression: the value of element i",
      st ? "C statements that update a from b"
         : "an expression: how two partial values a and b combine",
      st ? "an object: each accumulator field's neutral value"
         : "an expression: the neutral value"};
  hkc_src *dst[] = {&k->map, &k->combine, &k->identity};
  for (int i = 0; i < 3; i++) {
    const hkj_node *v = hkj_get(obj, req[i]);
    if (!v) {
      hkc_err(P, obj, hkc_obj_name(prefix), "missing required field \"%s\" (%s)",
              req[i], what[i]);
      continue;
    }
    if (st && i != 1) {
      if (take_per_field(P, obj, prefix, req[i], k) != HK_OK) return HK_ENOMEM;
    } else if (v->type == HKJ_OBJECT) {
      hkc_err(P, v, hkc_fld(prefix, "%s", req[i]),
              "is an object, which is for a struct accumulator (\"acc\": "
              "{\"FIELD\": \"TYPE\", ...}); expected %s",
              what[i]);
    } else if (take_code(P, obj, req[i], prefix, dst[i]) != HK_OK) {
      return HK_ENOMEM;
    }
  }
  if (st && !hkj_get(obj, "finalize"))
    hkc_err(P, obj, hkc_obj_name(prefix),
            "missing required field \"finalize\" (with a struct accumulator: "
            "C statements that assign the out parameters by name, e.g. "
            "\"out = acc.%s;\")",
            k->nacc_fields ? k->acc_fields[0].name : "FIELD");
  return take_code(P, obj, "finalize", prefix, &k->finalize);
}

/* ---- Checking the code ----------------------------------------------------------- */

/* The result of a check that reported its problems: HK_ESCHEMA counts as
 * one more problem of the file, and becomes HK_OK; HK_ENOMEM stays. */
static int counted(hkc_parser *P, int rc) {
  if (rc == HK_ESCHEMA) P->errors++;
  return rc == HK_ENOMEM ? rc : HK_OK;
}

/* Checks expression s (when given) against the names it may use. */
static int check_expr(hkc_parser *P, hkc_kernel *k, hkc_src *s, unsigned roles,
                      const char *const *extra, const char *what) {
  if (!s->text) return HK_OK;
  const char **names = hkc_names_for(k, roles, extra);
  const char **calls = hkc_helper_names(k);
  const char **floats = hkc_float_names(k, 0);
  int rc = HK_ENOMEM;
  if (names && calls && floats) /* the kernel's helpers may be called too */
    rc = hkc_check_code_floats(P->doc, s, HKC_CODE_EXPR, names, what,
                               k->targets, calls, floats, P->d);
  free(names);
  free(calls);
  free(floats);
  return counted(P, rc);
}

/* 1 when the code has a ';' outside comments, strings and characters: it
 * is statements rather than an expression. */
static int has_semicolon(const hkc_src *s) {
  char *e = hkc_expr_oneline(s); /* comments gone */
  if (!e) return 1;              /* out of memory: judged later */
  int in = 0, found = 0;
  for (const char *c = e; *c && !found; c++) {
    if (in) {
      if (*c == '\\' && c[1]) c++;
      else if (*c == in) in = 0;
    } else if (*c == '"' || *c == '\'') {
      in = *c;
    } else {
      found = *c == ';';
    }
  }
  free(e);
  return found;
}

/* Checks a struct reduction's statements s (combine or finalize), which
 * must be statements. HK_OK or HK_ENOMEM. */
static int check_stmts(hkc_parser *P, const hkc_kernel *k, const hkc_src *s,
                       const char *example) {
  if (!s->text) return HK_OK;
  if (!has_semicolon(s)) {
    hkc_err(P, s->segs[0].node, s->field,
            "with a struct accumulator this is C statements, each ending in "
            "';' (e.g. \"%s\"); got an expression",
            example);
    return HK_OK;
  }
  const char **calls = hkc_helper_names(k);
  const char **floats = hkc_float_names(k, 0);
  int rc = HK_ENOMEM;
  if (calls && floats)
    rc = hkc_check_code_floats(P->doc, s, HKC_CODE_STMTS, NULL, NULL,
                               k->targets, calls, floats, P->d);
  free(calls);
  free(floats);
  return counted(P, rc);
}

/* The struct form: each field's identity and map, combine and finalize as
 * statements, and every out parameter assigned by finalize. */
static int check_struct_code(hkc_parser *P, hkc_kernel *k) {
  static const char *const map_extra[] = {"i", "n", NULL};
  const unsigned IN = HKC_ROLE_BIT(HK_ROLE_IN);
  const unsigned SC = HKC_ROLE_BIT(HK_ROLE_SCALAR);
  for (int i = 0; i < k->nacc_fields; i++) {
    hkc_acc_field *f = &k->acc_fields[i];
    if (check_expr(P, k, &f->identity, SC, NULL,
                   "the kernel's scalars (or a constant)") ||
        check_expr(P, k, &f->map, IN | SC, map_extra,
                   "the kernel's in buffers and scalars, i and n"))
      return HK_ENOMEM;
  }
  char ex[200];
  const char *f0 = k->nacc_fields ? k->acc_fields[0].name : "v";
  snprintf(ex, sizeof ex, "a.%.60s = a.%.60s + b.%.60s;", f0, f0, f0);
  if (check_stmts(P, k, &k->combine, ex) != HK_OK) return HK_ENOMEM;
  int r = hkc_result_index(k);
  snprintf(ex, sizeof ex, "%.60s = acc.%.60s;",
           r >= 0 && k->params[r].name ? k->params[r].name : "out", f0);
  int before = P->errors;
  if (check_stmts(P, k, &k->finalize, ex) != HK_OK) return HK_ENOMEM;
  if (!k->finalize.text || P->errors != before) return HK_OK;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->role != HK_ROLE_OUT || !p->name || p->refused) continue;
    if (!hkc_code_uses(&k->finalize, p->name))
      hkc_err(P, k->finalize.segs[0].node, k->finalize.field,
              "does not assign out parameter \"%s\" (finalize gives each out "
              "parameter its value by name, e.g. \"%s = acc.%s;\")",
              p->name, p->name, f0);
  }
  return HK_OK;
}

int hkc_check_reduction(hkc_parser *P, hkc_kernel *k) {
  static const char *const map_extra[] = {"i", "n", NULL};
  static const char *const combine_extra[] = {"a", "b", NULL};
  static const char *const finalize_extra[] = {"acc", "n", NULL};
  const unsigned IN = HKC_ROLE_BIT(HK_ROLE_IN);
  const unsigned SC = HKC_ROLE_BIT(HK_ROLE_SCALAR);
  const unsigned IO = HKC_ROLE_BIT(HK_ROLE_INOUT);
  if (k->acc_form == HKC_ACC_STRUCT) return check_struct_code(P, k);
  int r = hkc_result_index(k);
  int inout = r >= 0 && k->params[r].role == HK_ROLE_INOUT;
  if (check_expr(P, k, &k->map, IN | SC, map_extra,
                 "the kernel's in buffers and scalars, i and n") ||
      check_expr(P, k, &k->combine, 0, combine_extra, "a and b") ||
      check_expr(P, k, &k->identity, SC, NULL,
                 "the kernel's scalars (or a constant)") ||
      check_expr(P, k, &k->finalize, SC | IO, finalize_extra,
                 inout ? "acc, n, the kernel's scalars and its inout "
                         "parameter (its current element 0)"
                       : "acc, n and the kernel's scalars"))
    return HK_ENOMEM;
  return HK_OK;
}

void hkc_check_acc_size(hkc_parser *P, const hkj_node *obj, const char *prefix,
                        const hkc_kernel *k) {
  if (k->kind != HK_KIND_REDUCTION || k->acc_form != HKC_ACC_STRUCT) return;
  for (int i = 0; i < k->ninst; i++) {
    size_t sz = hkc_acc_size(&k->inst[i]);
    if (sz <= HK_REDUCE_ACC_MAX) continue;
    hkc_err(P, hkj_get(obj, "acc"), hkc_fld(prefix, "acc"),
            "the accumulator takes %zu bytes%s%s; at most %u (fewer or "
            "smaller fields)",
            sz, k->ninst > 1 ? " in instance " : "",
            k->ninst > 1 ? k->inst[i].name : "", HK_REDUCE_ACC_MAX);
    return;
  }
}

void hkc_reduction_free(hkc_kernel *k) {
  for (int i = 0; i < k->nacc_fields; i++) {
    hkc_acc_field *f = &k->acc_fields[i];
    free(f->name);
    hkc_src *s[] = {&f->identity, &f->map};
    for (int j = 0; j < 2; j++) {
      free(s[j]->text);
      free(s[j]->field);
      free(s[j]->segs);
    }
  }
  free(k->acc_fields);
  k->acc_fields = NULL;
  k->nacc_fields = 0;
}
