/* parse.c — kernel files to validated kernel descriptions (SPEC §1).
 *
 * The validator keeps going after an error where it can, so that `hk check`
 * shows every problem in a file at once. Each message starts with the field
 * it is about ("params[1].type: ...", "kernels[2].map: ...") and is placed at
 * the offending value; a missing field is placed at its object's '{'.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "parse.h"

/* ---- Reporting ------------------------------------------------------------ */

void hkc_err_at(hkc_parser *P, size_t off, const char *field, const char *fmt,
                ...) {
  int line, col;
  va_list ap;
  P->errors++;
  hkj_pos(P->doc, off, &line, &col);
  va_start(ap, fmt);
  hkc_vreport(P->d, P->doc->path, line, col, field, fmt, ap);
  va_end(ap);
}

/* "kernels[0].params[1].type" from a prefix and a printf-style suffix, in a
 * rotating set of static buffers (messages are formatted right away). */
const char *hkc_fld(const char *prefix, const char *fmt, ...) {
  static _Thread_local char bufs[4][256];
  static _Thread_local int next;
  char *b = bufs[next++ & 3];
  size_t n = (size_t)snprintf(b, 256, "%s", prefix);
  if (n >= 256) n = 255;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(b + n, 256 - n, fmt, ap);
  va_end(ap);
  return b;
}

/* The name of an object itself: "kernels[0]" for the prefix "kernels[0].",
 * "kernel" for the top-level one. */
const char *hkc_obj_name(const char *prefix) {
  size_t n = strlen(prefix);
  if (!n) return "kernel";
  return hkc_fld("", "%.*s", (int)(n - 1), prefix);
}

/* ---- Small checks ----------------------------------------------------------- */

/* Reports duplicate keys and keys not in allowed (keys starting with '_'
 * are the author's annotations and are ignored). */
static void check_keys_as(hkc_parser *P, const hkj_node *obj,
                          const char *prefix, const char *const *allowed,
                          const char *objname);

void hkc_check_keys(hkc_parser *P, const hkj_node *obj, const char *prefix,
                    const char *const *allowed) {
  check_keys_as(P, obj, prefix, allowed, hkc_obj_name(prefix));
}

static int cmp_key_index(const void *pa, const void *pb) {
  const hkj_node *const *a = pa, *const *b = pb;
  int c = strcmp((*a)->key, (*b)->key);
  if (c) return c;
  return ((*a)->key_off > (*b)->key_off) - ((*a)->key_off < (*b)->key_off);
}

/* Each key given again in obj is reported, naming where it was first
 * given. Sorted, so that an object of many keys costs n log n. */
static void report_duplicate_keys(hkc_parser *P, const hkj_node *obj,
                                  const char *prefix) {
  const hkj_node *small[64], **v = small;
  if (obj->nkids < 2) return;
  if (obj->nkids > 64 && !(v = malloc(obj->nkids * sizeof *v))) {
    P->d->oom = 1;
    return;
  }
  memcpy(v, obj->kids, obj->nkids * sizeof *v);
  qsort(v, obj->nkids, sizeof *v, cmp_key_index);
  for (size_t i = 1, first = 0; i < obj->nkids; i++) {
    if (strcmp(v[i]->key, v[first]->key)) {
      first = i;
      continue;
    }
    int line, col;
    hkj_pos(P->doc, v[first]->key_off, &line, &col);
    hkc_err_key(P, v[i], hkc_fld(prefix, "%s", v[i]->key),
                "duplicate field (first given at line %d, column %d)", line,
                col);
  }
  if (v != small) free(v);
}

/* hkc_check_keys, naming the object objname in messages. */
static void check_keys_as(hkc_parser *P, const hkj_node *obj,
                          const char *prefix, const char *const *allowed,
                          const char *objname_in) {
  char objname[256]; /* hkc_fld()'s buffers rotate: keep a copy */
  snprintf(objname, sizeof objname, "%s", objname_in);
  report_duplicate_keys(P, obj, prefix);
  for (size_t i = 0; i < obj->nkids; i++) {
    const hkj_node *m = obj->kids[i];
    if (m->key[0] == '_') continue;
    const char *const *a;
    for (a = allowed; *a; a++)
      if (strcmp(*a, m->key) == 0) break;
    if (*a) continue;
    const char *best = NULL;
    size_t bestd = 3;
    for (a = allowed; *a; a++) {
      size_t dd = hku_edit_distance(*a, m->key);
      if (dd < bestd) bestd = dd, best = *a;
    }
    hku_buf list = HKU_BUF_INIT;
    for (a = allowed; *a; a++)
      hku_buf_printf(&list, "%s%s", a == allowed ? "" : ", ", *a);
    if (best)
      hkc_err_key(P, m, objname, "unknown field \"%s\" (did you mean \"%s\"?)",
                  m->key, best);
    else
      hkc_err_key(P, m, objname,
                  "unknown field \"%s\"; the fields are %s (and any starting "
                  "with '_', which are ignored)",
                  m->key, hku_buf_str(&list));
    hku_buf_free(&list);
  }
}

int hkc_is_identifier(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
    return 0;
  for (s++; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

/* v must be a string: reports and returns NULL otherwise. */
const char *hkc_want_string(hkc_parser *P, const hkj_node *v, const char *field,
                            const char *expected) {
  if (v->type == HKJ_STRING) return v->str;
  hkc_err(P, v, field, "expected %s, got %s", expected, hkj_type_name(v->type));
  return NULL;
}

const char *const hkc_type_list =
    "f32, f64, i8, i16, i32, i64, u8, u16, u32, u64, f16, bf16, bool";

/* ---- schema_version ------------------------------------------------------- */

/* obj's schema_version (at prefix; owner names obj when it is missing:
 * "kernel", "kernels[1]", or "file" for a file of several kernels). */
static void check_version(hkc_parser *P, const hkj_node *obj,
                          const char *prefix, const char *owner,
                          int required) {
  const hkj_node *v = hkj_get(obj, "schema_version");
  if (!v) {
    if (required)
      hkc_err(P, obj, owner,
              "missing required field \"schema_version\" (expected 1)");
    return;
  }
  const char *f = hkc_fld(prefix, "schema_version");
  if (v->type != HKJ_NUMBER) {
    hkc_err(P, v, f, "expected the number 1, got %s", hkj_type_name(v->type));
    return;
  }
  const char *raw;
  size_t n;
  hkj_raw(P->doc, v, &raw, &n);
  if (n == 1 && raw[0] == '1') return;
  /* no cast of an arbitrary double to an integer: 1e300 is a number too */
  if (v->num > 1 && v->num < 1e9 && v->num == floor(v->num))
    hkc_err(
        P, v, f,
        "unsupported schema_version %.*s: this hk reads version 1 (a newer hk "
        "is needed)",
        (int)n, raw);
  else
    hkc_err(P, v, f, "expected the number 1, got %.*s", (int)n, raw);
}

/* ---- Author code fields ------------------------------------------------------ */

int hkc_take_src(hkc_parser *P, const hkj_node *obj, const char *key,
                 const char *prefix, hkc_src *out) {
  const hkj_node *v = hkj_get(obj, key);
  if (!v) return HK_OK;
  out->field = hku_strdup(hkc_fld(prefix, "%s", key));
  if (!out->field) return HK_ENOMEM;
  if (v->type == HKJ_STRING) {
    out->segs = malloc(sizeof *out->segs);
    out->text = hku_strdup(v->str);
    if (!out->segs || !out->text) return HK_ENOMEM;
    out->segs[0] = (hkc_seg){v, 0};
    out->nsegs = 1;
    out->len = v->str_len;
    return HK_OK;
  }
  if (v->type != HKJ_ARRAY) {
    hkc_err(P, v, out->field,
            "expected a string (or an array of strings, one per line), got %s",
            hkj_type_name(v->type));
    return HK_ESCHEMA;
  }
  if (v->nkids == 0) {
    hkc_err(P, v, out->field, "is empty: expected C code");
    return HK_ESCHEMA;
  }
  out->segs = calloc(v->nkids, sizeof *out->segs);
  if (!out->segs) return HK_ENOMEM;
  hku_buf b = HKU_BUF_INIT;
  int rc = HK_OK;
  for (size_t i = 0; i < v->nkids; i++) {
    const hkj_node *line = v->kids[i];
    if (line->type != HKJ_STRING) {
      hkc_err(P, line, hkc_fld(prefix, "%s[%zu]", key, i),
              "expected a string (one line of code), got %s",
              hkj_type_name(line->type));
      rc = HK_ESCHEMA;
      continue;
    }
    if (i) hku_buf_putc(&b, '\n');
    out->segs[out->nsegs++] = (hkc_seg){line, b.len};
    hku_buf_putn(&b, line->str, line->str_len);
  }
  if (rc != HK_OK) {
    hku_buf_free(&b);
    return rc;
  }
  out->len = b.len;
  out->text = hku_buf_take(&b);
  return out->text ? HK_OK : HK_ENOMEM;
}

/* hkc_take_src for a field whose problems are only reported: HK_OK, or
 * HK_ENOMEM. */
static int take_code(hkc_parser *P, const hkj_node *obj, const char *key,
                     const char *prefix, hkc_src *out) {
  int rc = hkc_take_src(P, obj, key, prefix, out);
  return rc == HK_ENOMEM ? rc : HK_OK;
}

static int blank(const hkc_src *s) {
  for (size_t i = 0; i < s->len; i++)
    if (!strchr(" \t\r\n\v\f", s->text[i])) return 0;
  return 1;
}

void hkc_src_free(hkc_src *s) {
  free(s->text);
  free(s->field);
  free(s->segs);
  memset(s, 0, sizeof *s);
}

/* ---- Kinds -------------------------------------------------------------------- */

static const hkj_node *src_node(const hkc_src *s) { return s->segs[0].node; }

/* The result of a check that reported its problems: HK_ESCHEMA counts
 * as one more problem of the file, and becomes HK_OK; HK_ENOMEM stays. */
static int counted(hkc_parser *P, int rc) {
  if (rc == HK_ESCHEMA) P->errors++;
  return rc == HK_ENOMEM ? rc : HK_OK;
}

/* Checks a raw kernel's body src (when given) in the given mode: it may
 * call the kernel's helpers. An empty or blank body is legal: a kernel
 * that does nothing (schemas/README.md, as in the peers' formats). HK_OK
 * or HK_ENOMEM. */
static int check_body(hkc_parser *P, const hkc_kernel *k, const hkc_src *src,
                      hkc_code_mode mode) {
  if (!src->text || blank(src)) return HK_OK;
  const char **calls = hkc_helper_names(k);
  /* raw code sees f16 and bf16 buffers as their uint16_t bits */
  const int storage = mode == HKC_CODE_RAW_CPU || mode == HKC_CODE_RAW_CUDA;
  const char **floats = hkc_float_names(k, storage);
  int rc = HK_ENOMEM;
  if (calls && floats)
    rc = counted(P, hkc_check_code_floats(P->doc, src, mode, NULL, NULL,
                                          k->targets, calls, floats, P->d));
  free(calls);
  free(floats);
  return rc;
}

/* Reports each field of obj that belongs to another kind than k's. */
static void refuse_other_kinds(hkc_parser *P, const hkj_node *obj,
                               const char *prefix, const hkc_kernel *k) {
  static const char *const all[] = {"body", "map",  "combine", "identity",
                                    "finalize", "acc", "cpu", "cuda", NULL};
  static const char *const ew[] = {"body", NULL};
  static const char *const red[] = {"map",      "combine", "identity",
                                    "finalize", "acc",     NULL};
  static const char *const raw[] = {"cpu", "cuda", "body", NULL};
  static const char *const rows[] = {"body", "cuda", NULL};
  const char *const *mine = k->kind == HK_KIND_ELEMENTWISE ? ew
                            : k->kind == HK_KIND_ROWS      ? rows
                            : k->kind == HK_KIND_GRID      ? ew
                            : k->kind == HK_KIND_REDUCTION ? red
                                                           : raw;
  for (const char *const *f = all; *f; f++) {
    int ok = 0;
    for (const char *const *m = mine; *m; m++) ok |= !strcmp(*m, *f);
    const hkj_node *v = hkj_get(obj, *f);
    if (v && !ok) {
      const char *owner = !strcmp(*f, "body") ? "elementwise, rows, grid and raw"
                          : !strcmp(*f, "cuda") ? "raw and rows"
                          : !strcmp(*f, "cpu")  ? "raw"
                                                : "reduction";
      hkc_err_key(P, v, hkc_fld(prefix, "%s", *f),
                  "this field belongs to %s kernels, and this kernel's kind "
                  "is %s",
                  owner, hk_kind_name(k->kind));
    }
  }
}

/* Reads the required, non-blank "body" of an elementwise, rows or grid
 * kernel; `what` says what it is when it is missing. HK_OK or HK_ENOMEM. */
static int take_body(hkc_parser *P, const hkj_node *obj, const char *prefix,
                     hkc_kernel *k, const char *what) {
  if (take_code(P, obj, "body", prefix, &k->body) != HK_OK) return HK_ENOMEM;
  if (!hkj_get(obj, "body"))
    hkc_err(P, obj, hkc_obj_name(prefix), "missing required field \"body\" (%s)",
            what);
  else if (k->body.text && blank(&k->body))
    hkc_err(P, src_node(&k->body), k->body.field, "is empty: expected C code");
  return HK_OK;
}

/* Reads the fields of the kernel's kind and refuses those of other kinds.
 * HK_OK or HK_ENOMEM; problems are reported. */
static int parse_kind_fields(hkc_parser *P, const hkj_node *obj,
                             const char *prefix, hkc_kernel *k) {
  refuse_other_kinds(P, obj, prefix, k);
  if (k->kind == HK_KIND_ELEMENTWISE)
    return take_body(P, obj, prefix, k, "C statements run for each element i");
  if (k->kind == HK_KIND_REDUCTION)
    return hkc_parse_reduction(P, obj, prefix, k);
  if (k->kind == HK_KIND_ROWS) {
    if (take_body(P, obj, prefix, k,
                  "C statements run for each row: buffers are pointers to "
                  "the row, n its length, row its index") != HK_OK)
      return HK_ENOMEM;
    /* optional: the row on the GPU by a block of threads (emit_rows.c) */
    return take_code(P, obj, "cuda", prefix, &k->cuda);
  }
  if (k->kind == HK_KIND_GRID)
    return take_body(P, obj, prefix, k,
                     "C statements run for each index of the grid: buffers "
                     "are pointers, the indices int64_t");
  if (take_code(P, obj, "cpu", prefix, &k->cpu) != HK_OK) return HK_ENOMEM;
  if (hkj_get(obj, "body")) {
    if (hkj_get(obj, "cpu"))
      hkc_err_key(P, hkj_get(obj, "body"), hkc_fld(prefix, "body"),
                  "give the C body once: \"body\" is another name for \"cpu\" "
                  "in a raw kernel");
    else if (take_code(P, obj, "body", prefix, &k->cpu) != HK_OK)
      return HK_ENOMEM;
  }
  return take_code(P, obj, "cuda", prefix, &k->cuda);
}

/* Raw kernels: targets are the bodies given, and must match an explicit
 * "targets". */
static void settle_raw_targets(hkc_parser *P, const hkj_node *obj,
                               const char *prefix, hkc_kernel *k,
                               int explicit_targets) {
  unsigned have =
      (k->cpu.text ? HK_TARGET_CPU : 0) | (k->cuda.text ? HK_TARGET_CUDA : 0);
  if (!have && !hkj_get(obj, "cpu") && !hkj_get(obj, "cuda") &&
      !hkj_get(obj, "body")) {
    hkc_err(
        P, obj, hkc_obj_name(prefix),
        "a raw kernel needs a \"cpu\" body (C), a \"cuda\" body (CUDA C), or "
        "both");
    return;
  }
  if (!explicit_targets) {
    k->targets = have;
    return;
  }
  const hkj_node *t = hkj_get(obj, "targets");
  if ((k->targets & HK_TARGET_CPU) && !(have & HK_TARGET_CPU) &&
      !hkj_get(obj, "cpu") && !hkj_get(obj, "body"))
    hkc_err(P, t, hkc_fld(prefix, "targets"),
            "lists cpu, but there is no \"cpu\" body");
  if ((k->targets & HK_TARGET_CUDA) && !(have & HK_TARGET_CUDA) &&
      !hkj_get(obj, "cuda"))
    hkc_err(P, t, hkc_fld(prefix, "targets"),
            "lists cuda, but there is no \"cuda\" body");
  if ((have & HK_TARGET_CPU) && !(k->targets & HK_TARGET_CPU))
    hkc_err(P, t, hkc_fld(prefix, "targets"),
            "does not list cpu, but a \"cpu\" body is given (list only the "
            "targets that have a body, and give a body for each)");
  if ((have & HK_TARGET_CUDA) && !(k->targets & HK_TARGET_CUDA))
    hkc_err(P, t, hkc_fld(prefix, "targets"),
            "does not list cuda, but a \"cuda\" body is given (list only the "
            "targets that have a body, and give a body for each)");
}

const char *hkc_want_doc(hkc_parser *P, const hkj_node *v, const char *f) {
  const char *s = hkc_want_string(P, v, f, "a one-line string");
  if (s && strpbrk(s, "\n\r")) {
    hkc_err(P, v, f, "must be one line (it is shown by hk list)");
    return NULL;
  }
  return s;
}

/* Reads the kernel's "name" and "doc". HK_OK or HK_ENOMEM. */
static int parse_name_doc(hkc_parser *P, const hkj_node *obj,
                          const char *prefix, hkc_kernel *k) {
  const hkj_node *v = hkj_get(obj, "name");
  if (!v) {
    hkc_err(P, obj, hkc_obj_name(prefix),
            "missing required field \"name\" (a C identifier)");
  } else {
    const char *f = hkc_fld(prefix, "name");
    const char *s = hkc_want_string(P, v, f, "a C identifier");
    if (s && !hkc_is_identifier(s))
      hkc_err(P, v, f, "\"%s\" is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)",
              s);
    else if (s && strlen(s) > HKC_NAME_MAX)
      hkc_err(P, v, f, "is %zu characters long; at most %d", strlen(s),
              HKC_NAME_MAX);
    else if (s && !(k->name = hku_strdup(s)))
      return HK_ENOMEM;
  }
  v = hkj_get(obj, "doc");
  if (v) {
    const char *s = hkc_want_doc(P, v, hkc_fld(prefix, "doc"));
    if (s) {
      free(k->doc);
      if (!(k->doc = hku_strdup(s))) return HK_ENOMEM;
    }
  }
  return HK_OK;
}

/* Reads the kernel's optional "fp": "strict" (the default: the same bits
 * on every tier) or "fast" (contraction and reassociation allowed on the
 * optimising compilers; schemas/README.md). */
static void parse_fp(hkc_parser *P, const hkj_node *obj, const char *prefix,
                     hkc_kernel *k) {
  const hkj_node *v = hkj_get(obj, "fp");
  if (!v) return;
  const char *f = hkc_fld(prefix, "fp");
  const char *s = hkc_want_string(P, v, f, "\"strict\" or \"fast\"");
  if (s && !strcmp(s, "fast"))
    k->fp_fast = 1;
  else if (s && strcmp(s, "strict"))
    hkc_err(P, v, f, "unknown mode \"%s\"; expected \"strict\" or \"fast\"",
            s);
}

/* Reads the kernel's "kind": 1 when it was read, 0 when it is missing or
 * wrong (reported). */
static int parse_kind(hkc_parser *P, const hkj_node *obj, const char *prefix,
                      hkc_kernel *k) {
  static const char *const names[] = {[HK_KIND_ELEMENTWISE] = "elementwise",
                                      [HK_KIND_REDUCTION] = "reduction",
                                      [HK_KIND_RAW] = "raw",
                                      [HK_KIND_ROWS] = "rows",
                                      [HK_KIND_GRID] = "grid"};
  const hkj_node *v = hkj_get(obj, "kind");
  if (!v) {
    hkc_err(P, obj, hkc_obj_name(prefix),
            "missing required field \"kind\" (\"elementwise\", \"reduction\", "
            "\"raw\", \"rows\" or \"grid\")");
    return 0;
  }
  const char *f = hkc_fld(prefix, "kind");
  const char *s =
      hkc_want_string(P, v, f, "\"elementwise\", \"reduction\", \"raw\", \"rows\" or \"grid\"");
  if (!s) return 0;
  for (size_t i = 0; i < HK_COUNT(names); i++)
    if (!strcmp(s, names[i])) {
      k->kind = (hk_kind_t)i;
      return 1;
    }
  hkc_err(P, v, f,
          "unknown kind \"%s\"; expected \"elementwise\", \"reduction\", "
          "\"raw\", \"rows\" or \"grid\"",
          s);
  return 0;
}

/* Checks a raw kernel's bodies and len expressions. HK_OK or HK_ENOMEM. */
static int check_raw_code(hkc_parser *P, hkc_kernel *k) {
  if (check_body(P, k, &k->cpu, HKC_CODE_RAW_CPU) != HK_OK ||
      check_body(P, k, &k->cuda, HKC_CODE_RAW_CUDA) != HK_OK)
    return HK_ENOMEM;
  for (int i = 0; i < k->nparams; i++) {
    if (!k->params[i].len.text) continue;
    if (counted(P, hkc_check_len(P->doc, &k->params[i].len, k, P->d)) != HK_OK)
      return HK_ENOMEM;
  }
  return HK_OK;
}

/* Checks a rows kernel's body and its optional "cuda" body, which only a
 * kernel that targets cuda may give (no other target would run it).
 * HK_OK or HK_ENOMEM. */
static int check_rows_code(hkc_parser *P, hkc_kernel *k) {
  if (check_body(P, k, &k->body, HKC_CODE_ROWS) != HK_OK) return HK_ENOMEM;
  if (!k->cuda.nsegs) return HK_OK;
  if (!(k->targets & HK_TARGET_CUDA)) {
    hkc_err(P, src_node(&k->cuda), k->cuda.field,
            "this kernel's targets do not list cuda, so its \"cuda\" "
                "body would never run: list cuda in targets, or remove the "
                "body");
    return HK_OK;
  }
  if (k->cuda.text && blank(&k->cuda)) {
    hkc_err(P, src_node(&k->cuda), k->cuda.field,
            "is empty: expected CUDA C statements run by each thread of a "
            "row's block");
    return HK_OK;
  }
  return check_body(P, k, &k->cuda, HKC_CODE_ROWS_CUDA);
}

/* Checks the author's code, now that every name is known. HK_OK or
 * HK_ENOMEM; problems are reported. */
static int check_kernel_code(hkc_parser *P, hkc_kernel *k) {
  if (hkc_check_helpers(P, k) != HK_OK) return HK_ENOMEM;
  switch (k->kind) {
    case HK_KIND_ELEMENTWISE:
      if (!k->body.text) return HK_OK;
      return check_body(P, k, &k->body, HKC_CODE_BODY);
    case HK_KIND_REDUCTION: return hkc_check_reduction(P, k);
    case HK_KIND_RAW: return check_raw_code(P, k);
    case HK_KIND_ROWS: return check_rows_code(P, k);
    case HK_KIND_GRID: return hkc_check_grid(P, k);
  }
  return HK_OK;
}

/* Reads and validates one kernel object (at prefix, "" or "kernels[2].")
 * into k, and makes its instances when it is valid. HK_OK or HK_ENOMEM;
 * problems are reported and counted in P->errors. */
static int parse_kernel(hkc_parser *P, const hkj_node *obj, const char *prefix,
                        int version_required, hkc_kernel *k) {
  static const char *const keys[] = {
      "schema_version", "name",     "doc",  "kind", "params",
      "targets",        "types",    "body", "map",  "combine",
      "identity",       "finalize", "acc",  "cpu",  "cuda", "fp",
      /* grid kernels; consts and helpers: every kind (parse_grid.c) */
      "grid", "setup", "scratch", "consts", "helpers", NULL};
  k->node = obj;
  k->prefix = hku_strdup(prefix);
  k->doc = hku_strdup("");
  if (!k->prefix || !k->doc) return HK_ENOMEM;
  if (obj->type != HKJ_OBJECT) {
    hkc_err(P, obj, hkc_obj_name(prefix), "expected a kernel object, got %s",
            hkj_type_name(obj->type));
    return HK_OK;
  }
  hkc_check_keys(P, obj, prefix, keys);
  check_version(P, obj, prefix, hkc_obj_name(prefix), version_required);
  int start_errors = P->errors;
  if (parse_name_doc(P, obj, prefix, k) != HK_OK) return HK_ENOMEM;
  parse_fp(P, obj, prefix, k);
  int kind_ok = parse_kind(P, obj, prefix, k);
  hkc_parse_types(P, obj, prefix, k);
  int before_targets = P->errors;
  hkc_parse_targets(P, obj, prefix, k);
  int targets_ok = P->errors == before_targets;
  if (kind_ok) {
    if (parse_kind_fields(P, obj, prefix, k) != HK_OK) return HK_ENOMEM;
    /* with a broken "targets", comparing it to the bodies says nothing */
    if (k->kind == HK_KIND_RAW && targets_ok)
      settle_raw_targets(P, obj, prefix, k, hkj_get(obj, "targets") != NULL);
  }
  int before_params = P->errors;
  if (hkc_parse_params(P, obj, prefix, k) != HK_OK) return HK_ENOMEM;
  if (kind_ok && hkc_parse_defs(P, obj, prefix, k) != HK_OK) return HK_ENOMEM;
  if (!kind_ok || !k->params) return HK_OK;
  /* a parameter whose role could not be read would mislead the role rules */
  if (P->errors == before_params) hkc_check_roles(P, obj, prefix, k);
  if (check_kernel_code(P, k) != HK_OK) return HK_ENOMEM;
  if (P->errors == start_errors && k->name) {
    if (hkc_make_instances(P, obj, prefix, k) != HK_OK) return HK_ENOMEM;
    hkc_check_acc_size(P, obj, prefix, k);
  }
  return HK_OK;
}

/* ---- Files ---------------------------------------------------------------------- */

static void kernel_free(hkc_kernel *k) {
  free(k->name);
  free(k->doc);
  free(k->prefix);
  for (int i = 0; i < k->nparams; i++) {
    free(k->params[i].name);
    free(k->params[i].doc);
    hkc_src_free(&k->params[i].len);
  }
  free(k->params);
  hkc_src *srcs[] = {&k->body,     &k->map, &k->combine, &k->identity,
                     &k->finalize, &k->cpu, &k->cuda};
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) hkc_src_free(srcs[i]);
  hkc_reduction_free(k);
  hkc_defs_free(k);
  for (int i = 0; i < k->ninst; i++) free(k->inst[i].name);
  free(k->inst);
}

void hkc_file_free(hkc_file *f) {
  if (!f) return;
  for (int i = 0; i < f->nkernels; i++) kernel_free(&f->kernels[i]);
  free(f->kernels);
  free(f->inst);
  hkj_free(f->doc);
  free(f->path);
  free(f);
}

/* An instance by kernel and instance index, ordered by name, then by
 * position in the file. */
typedef struct named_inst {
  const char *name;
  int kernel, inst;
} named_inst;

static int cmp_named_inst(const void *pa, const void *pb) {
  const named_inst *a = pa, *b = pb;
  int c = strcmp(a->name, b->name);
  if (c) return c;
  if (a->kernel != b->kernel) return a->kernel < b->kernel ? -1 : 1;
  return (a->inst > b->inst) - (a->inst < b->inst);
}

/* Instance names must be unique in a file (they are registry names). Each
 * kernel that repeats an earlier name is reported once, at its name, for
 * its first instance (in its own order) whose name came before, naming
 * the first kernel that gave it. Sorted, so that a file of many kernels
 * costs n log n, not n^2. Fills f->inst, every instance in file order. */
static int check_unique(hkc_parser *P, hkc_file *f) {
  int n = 0;
  for (int a = 0; a < f->nkernels; a++) n += f->kernels[a].ninst;
  f->inst = malloc(((size_t)n + 1) * sizeof *f->inst);
  named_inst *v = malloc(((size_t)n + 1) * sizeof *v);
  /* per kernel: its first clashing instance and the earlier kernel */
  int *clash = malloc(((size_t)f->nkernels + 1) * 2 * sizeof *clash);
  if (!f->inst || !v || !clash) {
    free(v);
    free(clash);
    return HK_ENOMEM;
  }
  f->ninst = n;
  int m = 0;
  for (int a = 0; a < f->nkernels; a++) {
    clash[2 * a] = -1;
    for (int i = 0; i < f->kernels[a].ninst; i++) {
      f->inst[m] = &f->kernels[a].inst[i];
      v[m++] = (named_inst){f->kernels[a].inst[i].name, a, i};
    }
  }
  qsort(v, (size_t)n, sizeof *v, cmp_named_inst);
  for (int j = 1; j < n; j++) {
    if (strcmp(v[j].name, v[j - 1].name)) continue;
    int first = j - 1;
    while (first > 0 && !strcmp(v[first - 1].name, v[j].name)) first--;
    int a = v[j].kernel;
    if (clash[2 * a] < 0 || v[j].inst < clash[2 * a]) {
      clash[2 * a] = v[j].inst;
      clash[2 * a + 1] = v[first].kernel;
    }
  }
  for (int a = 0; a < f->nkernels; a++) {
    if (clash[2 * a] < 0) continue;
    const hkj_node *nv = hkj_get(f->kernels[a].node, "name");
    const hkj_node *yv = hkj_get(f->kernels[clash[2 * a + 1]].node, "name");
    int line, col;
    hkj_pos(P->doc, yv->off, &line, &col);
    hkc_err(P, nv, hkc_fld(f->kernels[a].prefix, "name"),
            "kernel \"%s\" is defined twice in this file (also by the "
            "kernel named at line %d, column %d)",
            f->kernels[a].inst[clash[2 * a]].name, line, col);
  }
  free(v);
  free(clash);
  return HK_OK;
}

/* Puts the diagnostics from index first on in file order (stable, so a
 * note stays after its error). */
static void sort_by_position(hku_diags *d, size_t first) {
  for (size_t i = first + 1; i < d->n; i++) {
    hku_diag g = d->v[i];
    if (g.sev == HKU_NOTE) continue;
    size_t j = i;
    while (j > first && d->v[j - 1].sev == HKU_ERROR &&
           (d->v[j - 1].line > g.line ||
            (d->v[j - 1].line == g.line && d->v[j - 1].col > g.col))) {
      d->v[j] = d->v[j - 1];
      j--;
    }
    d->v[j] = g;
  }
}

/* The file-level object {"schema_version": 1, "kernels": [...]}: its own
 * fields, then each kernel. HK_OK or HK_ENOMEM; problems are reported. */
static int parse_kernel_list(hkc_parser *P, const hkj_node *root, hkc_file *f) {
  static const char *const keys[] = {"schema_version", "kernels", "doc", NULL};
  check_keys_as(P, root, "", keys, "file");
  check_version(P, root, "", "file", 1);
  const hkj_node *fdoc = hkj_get(root, "doc");
  if (fdoc) {
    (void)hkc_want_doc(P, fdoc, "doc");
  }
  const hkj_node *ks = hkj_get(root, "kernels");
  if (ks->type != HKJ_ARRAY || ks->nkids == 0) {
    hkc_err(P, ks, "kernels", "expected a non-empty array of kernel objects");
    return HK_OK;
  }
  f->kernels = calloc(ks->nkids, sizeof *f->kernels);
  if (!f->kernels) return HK_ENOMEM;
  for (size_t i = 0; i < ks->nkids; i++) {
    char prefix[32];
    snprintf(prefix, sizeof prefix, "kernels[%zu].", i);
    int rc =
        parse_kernel(P, ks->kids[i], prefix, 0, &f->kernels[f->nkernels++]);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

/* The document's root: one kernel object, or a list of them. HK_OK or
 * HK_ENOMEM; problems are reported. */
static int parse_root(hkc_parser *P, hkc_file *f) {
  const hkj_node *root = P->doc->root;
  if (root->type != HKJ_OBJECT) {
    hkc_err(P, root, NULL,
            "a kernel file holds one kernel object, or {\"schema_version\": "
            "1, \"kernels\": [...]}; got %s",
            hkj_type_name(root->type));
    return HK_OK;
  }
  if (hkj_get(root, "kernels")) return parse_kernel_list(P, root, f);
  f->kernels = calloc(1, sizeof *f->kernels);
  if (!f->kernels) return HK_ENOMEM;
  return parse_kernel(P, root, "", 1, &f->kernels[f->nkernels++]);
}

int hkc_file_parse(const char *path, const char *text, size_t len,
                   hkc_file **out, hku_diags *d) {
  *out = NULL;
  size_t first_diag = d->n;
  hkj_doc *doc;
  int rc = hkj_parse(path, text, len, &doc, d);
  if (rc != HK_OK) return rc;
  hkc_file *f = calloc(1, sizeof *f);
  if (!f) {
    hkj_free(doc);
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "out of memory");
    return HK_ENOMEM;
  }
  f->doc = doc;
  f->path = hku_strdup(doc->path);
  hkc_parser P = {doc, d, 0};
  rc = f->path ? parse_root(&P, f) : HK_ENOMEM;
  if (rc == HK_OK && !P.errors && !d->oom) rc = check_unique(&P, f);
  sort_by_position(d, first_diag);
  if (rc == HK_OK && !P.errors && !d->oom) {
    *out = f;
    return HK_OK;
  }
  /* out of memory wins only where no problem of the file was found */
  if (P.errors)
    rc = HK_ESCHEMA;
  else
    rc = HK_ENOMEM;
  if (rc == HK_ENOMEM) hku_diag_add(d, HKU_ERROR, path, 0, 0, "out of memory");
  hkc_file_free(f);
  return rc;
}

int hkc_file_load(const char *path, hkc_file **out, hku_diags *d) {
  *out = NULL;
  struct stat st;
  /* Kernel files are small; a huge one is a mistake, not a kernel. */
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
      (uint64_t)st.st_size > HKC_FILE_MAX) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "file too large for a kernel file (%lld bytes; limit 64 MiB)",
                 (long long)st.st_size);
    return HK_ESCHEMA;
  }
  char *text;
  size_t len;
  int rc = hku_read_file(path, &text, &len, NULL, d);
  if (rc == HK_OK) {
    rc = hkc_file_parse(path, text, len, out, d);
    free(text);
  }
  return rc;
}
