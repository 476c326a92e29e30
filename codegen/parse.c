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
#include "kernel.h"

typedef struct parser {
  hkj_doc *doc;
  hku_diags *d;
  int errors;
} parser;

/* ---- Reporting ------------------------------------------------------------ */

static void verr(parser *P, size_t off, const char *field, const char *fmt,
                 va_list ap) __attribute__((format(printf, 4, 0)));
static void verr(parser *P, size_t off, const char *field, const char *fmt,
                 va_list ap) {
  P->errors++;
  int line, col;
  hkj_pos(P->doc, off, &line, &col);
  hku_buf m = HKU_BUF_INIT;
  if (field && *field) hku_buf_printf(&m, "%s: ", field);
  hku_buf_vprintf(&m, fmt, ap);
  hku_diag_add(P->d, HKU_ERROR, P->doc->path, line, col, "%s",
               m.oom ? "out of memory" : hku_buf_str(&m));
  hku_buf_free(&m);
}

/* An error about the value v, named field. */
static void err(parser *P, const hkj_node *v, const char *field,
                const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void err(parser *P, const hkj_node *v, const char *field,
                const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verr(P, v->off, field, fmt, ap);
  va_end(ap);
}

/* An error about the key of member v. */
static void err_key(parser *P, const hkj_node *v, const char *field,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static void err_key(parser *P, const hkj_node *v, const char *field,
                    const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  verr(P, v->key_off, field, fmt, ap);
  va_end(ap);
}

/* "kernels[0].params[1].type" from a prefix and a printf-style suffix, in a
 * rotating set of static buffers (messages are formatted right away). */
static const char *fld(const char *prefix, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static const char *fld(const char *prefix, const char *fmt, ...) {
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
static const char *obj_name(const char *prefix) {
  size_t n = strlen(prefix);
  if (!n) return "kernel";
  return fld("", "%.*s", (int)(n - 1), prefix);
}

/* ---- Small checks ----------------------------------------------------------- */

/* Reports duplicate keys and keys not in allowed (keys starting with '_'
 * are the author's annotations and are ignored). */
static void check_keys_as(parser *P, const hkj_node *obj, const char *prefix,
                          const char *const *allowed, const char *objname);

static void check_keys(parser *P, const hkj_node *obj, const char *prefix,
                       const char *const *allowed) {
  check_keys_as(P, obj, prefix, allowed, obj_name(prefix));
}

/* check_keys, naming the object objname in messages. */
static void check_keys_as(parser *P, const hkj_node *obj, const char *prefix,
                          const char *const *allowed, const char *objname_in) {
  char objname[256]; /* fld()'s buffers rotate: keep a copy */
  snprintf(objname, sizeof objname, "%s", objname_in);
  for (size_t i = 0; i < obj->nkids; i++) {
    const hkj_node *m = obj->kids[i];
    for (size_t j = 0; j < i; j++)
      if (strcmp(obj->kids[j]->key, m->key) == 0) {
        int line, col;
        hkj_pos(P->doc, obj->kids[j]->key_off, &line, &col);
        err_key(P, m, fld(prefix, "%s", m->key),
                "duplicate field (first given at line %d, column %d)", line,
                col);
        break;
      }
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
      err_key(P, m, objname,
              "unknown field \"%s\" (did you mean \"%s\"?)", m->key, best);
    else
      err_key(P, m, objname,
              "unknown field \"%s\"; the fields are %s (and any starting "
              "with '_', which are ignored)",
              m->key, hku_buf_str(&list));
    hku_buf_free(&list);
  }
}

static int is_identifier(const char *s) {
  if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || *s == '_'))
    return 0;
  for (s++; *s; s++)
    if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
          (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

/* v must be a string: reports and returns NULL otherwise. */
static const char *want_string(parser *P, const hkj_node *v,
                               const char *field, const char *expected) {
  if (v->type == HKJ_STRING) return v->str;
  err(P, v, field, "expected %s, got %s", expected, hkj_type_name(v->type));
  return NULL;
}

static const char *const type_list =
    "f32, f64, i8, i16, i32, i64, u8, u16, u32, u64";

/* ---- schema_version ------------------------------------------------------- */

static void check_version(parser *P, const hkj_node *obj, const char *prefix,
                          int required) {
  const hkj_node *v = hkj_get(obj, "schema_version");
  if (!v) {
    if (required)
      err(P, obj, obj_name(prefix),
          "missing required field \"schema_version\" (expected 1)");
    return;
  }
  const char *f = fld(prefix, "schema_version");
  if (v->type != HKJ_NUMBER) {
    err(P, v, f, "expected the number 1, got %s", hkj_type_name(v->type));
    return;
  }
  const char *raw;
  size_t n;
  hkj_raw(P->doc, v, &raw, &n);
  if (n == 1 && raw[0] == '1') return;
  /* no cast of an arbitrary double to an integer: 1e300 is a number too */
  if (v->num > 1 && v->num < 1e9 && v->num == floor(v->num))
    err(P, v, f,
        "unsupported schema_version %.*s: this hk reads version 1 (a newer hk "
        "is needed)",
        (int)n, raw);
  else
    err(P, v, f, "expected the number 1, got %.*s", (int)n, raw);
}

/* ---- Author code fields ------------------------------------------------------ */

/* Collects a body or expression field: a string, or an array of strings
 * (lines, joined with newlines). Returns 0 when absent or valid. */
static int take_src(parser *P, const hkj_node *obj, const char *key,
                    const char *prefix, hkc_src *out) {
  const hkj_node *v = hkj_get(obj, key);
  if (!v) return 0;
  out->field = hku_strdup(fld(prefix, "%s", key));
  if (!out->field) goto oom;
  if (v->type == HKJ_STRING) {
    out->segs = malloc(sizeof *out->segs);
    out->text = hku_strdup(v->str);
    if (!out->segs || !out->text) goto oom;
    out->segs[0] = (hkc_seg){v, 0};
    out->nsegs = 1;
    out->len = v->str_len;
    return 0;
  }
  if (v->type != HKJ_ARRAY) {
    err(P, v, out->field, "expected a string (or an array of strings, one "
                          "per line), got %s",
        hkj_type_name(v->type));
    return -1;
  }
  if (v->nkids == 0) {
    err(P, v, out->field, "is empty: expected C code");
    return -1;
  }
  hku_buf b = HKU_BUF_INIT;
  out->segs = calloc(v->nkids, sizeof *out->segs);
  if (!out->segs) goto oom;
  int bad = 0;
  for (size_t i = 0; i < v->nkids; i++) {
    const hkj_node *line = v->kids[i];
    if (line->type != HKJ_STRING) {
      err(P, line, fld(prefix, "%s[%zu]", key, i),
          "expected a string (one line of code), got %s",
          hkj_type_name(line->type));
      bad = 1;
      continue;
    }
    if (i) hku_buf_putc(&b, '\n');
    out->segs[out->nsegs++] = (hkc_seg){line, b.len};
    hku_buf_putn(&b, line->str, line->str_len);
  }
  if (bad) {
    hku_buf_free(&b);
    return -1;
  }
  out->len = b.len;
  out->text = hku_buf_take(&b);
  if (!out->text) goto oom;
  return 0;
oom:
  P->d->oom = 1;
  return -1;
}

static int blank(const hkc_src *s) {
  for (size_t i = 0; i < s->len; i++)
    if (!strchr(" \t\r\n\v\f", s->text[i])) return 0;
  return 1;
}

static void src_free(hkc_src *s) {
  free(s->text);
  free(s->field);
  free(s->segs);
  memset(s, 0, sizeof *s);
}

/* ---- Parameters --------------------------------------------------------------- */

static const char *const reserved_names[] = {"i", "n", "acc", "a", "b", NULL};

/* Why name cannot be a parameter name, or NULL when it can. */
static const char *bad_param_name(const char *name, unsigned targets,
                                  const hkc_kernel *k) {
  for (const char *const *r = reserved_names; *r; r++)
    if (!strcmp(*r, name))
      return "is reserved: i, n, acc, a and b have a meaning in kernel code";
  if (hkc_is_c_keyword(name)) return "is a C keyword";
  if ((targets & HK_TARGET_CUDA) && hkc_is_cxx_keyword(name))
    return "is a C++ keyword, and the kernel targets cuda (CUDA is C++)";
  if (!strncmp(name, "hk_", 3) || !strncmp(name, "HK_", 3))
    return "is reserved: names beginning with hk_ or HK_ belong to generated "
           "code";
  if (hkc_is_math_name(name))
    return "is a math function or constant that kernel code may use";
  if (hkc_is_type_name(name)) return "is a type name";
  if (name[0] >= 'A' && name[0] <= 'Z' && !name[1])
    for (int h = 0; h < k->nholders; h++)
      if (k->holders[h].letter == name[0])
        return "is the name of a type placeholder";
  return NULL;
}

static void parse_params(parser *P, const hkj_node *obj, const char *prefix,
                         hkc_kernel *k) {
  const hkj_node *ps = hkj_get(obj, "params");
  if (!ps) {
    err(P, obj, obj_name(prefix),
        "missing required field \"params\" (the list of parameters, in "
        "calling order)");
    return;
  }
  if (ps->type != HKJ_ARRAY) {
    err(P, ps, fld(prefix, "params"),
        "expected an array of parameters, got %s", hkj_type_name(ps->type));
    return;
  }
  if (ps->nkids == 0) {
    err(P, ps, fld(prefix, "params"), "is empty: a kernel needs parameters");
    return;
  }
  k->params = calloc(ps->nkids, sizeof *k->params);
  if (!k->params) {
    P->d->oom = 1;
    return;
  }
  static const char *const keys[] = {"name", "type", "role", "len", "doc",
                                     NULL};
  for (size_t i = 0; i < ps->nkids; i++) {
    const hkj_node *po = ps->kids[i];
    hkc_param *p = &k->params[k->nparams++];
    p->node = po;
    p->role = HK_ROLE_IN;
    char pp[64];
    snprintf(pp, sizeof pp, "params[%zu].", i);
    char ppre[320];
    snprintf(ppre, sizeof ppre, "%s%s", prefix, pp);
    if (po->type != HKJ_OBJECT) {
      err(P, po, fld(prefix, "params[%zu]", i),
          "expected an object {\"name\", \"type\", \"role\"}, got %s",
          hkj_type_name(po->type));
      continue;
    }
    check_keys(P, po, ppre, keys);

    /* name */
    const hkj_node *v = hkj_get(po, "name");
    if (!v) {
      err(P, po, fld(prefix, "params[%zu]", i),
          "missing required field \"name\"");
    } else {
      const char *f = fld(ppre, "name");
      const char *s = want_string(P, v, f, "a C identifier");
      if (s) {
        const char *why;
        if (!is_identifier(s))
          err(P, v, f, "\"%s\" is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)",
              s);
        else if (strlen(s) > HKC_NAME_MAX)
          err(P, v, f, "is %zu characters long; at most %d", strlen(s),
              HKC_NAME_MAX);
        else if ((why = bad_param_name(s, k->targets, k)))
          err(P, v, f, "\"%s\" %s; choose another name", s, why);
        else {
          for (int j = 0; j + 1 < k->nparams; j++)
            if (k->params[j].name && !strcmp(k->params[j].name, s)) {
              err(P, v, f, "\"%s\" is already the name of params[%d]", s, j);
              break;
            }
          p->name = hku_strdup(s);
        }
      }
    }

    /* type */
    v = hkj_get(po, "type");
    if (!v) {
      err(P, po, fld(prefix, "params[%zu]", i),
          "missing required field \"type\" (one of %s, or a placeholder)",
          type_list);
    } else {
      const char *f = fld(ppre, "type");
      const char *s = want_string(P, v, f, "a type name");
      if (s) {
        hk_dtype_t t = hk_dtype_from_name(s);
        if (t != HK_DTYPE_INVALID) {
          p->dtype = t;
        } else if (s[0] >= 'A' && s[0] <= 'Z' && !s[1]) {
          int found = 0;
          for (int h = 0; h < k->nholders; h++)
            found |= k->holders[h].letter == s[0];
          if (found)
            p->placeholder = s[0];
          else
            err(P, v, f,
                "placeholder \"%s\" is not declared in \"types\" (e.g. "
                "\"types\": {\"%s\": [\"f32\", \"f64\"]})",
                s, s);
        } else {
          err(P, v, f,
              "unknown type \"%s\"; expected one of %s, or a placeholder "
              "letter declared in \"types\"",
              s, type_list);
        }
      }
    }

    /* role */
    v = hkj_get(po, "role");
    if (!v) {
      err(P, po, fld(prefix, "params[%zu]", i),
          "missing required field \"role\" (in, out, inout or scalar)");
    } else {
      const char *f = fld(ppre, "role");
      const char *s = want_string(P, v, f, "a role");
      if (s) {
        if (!strcmp(s, "in"))
          p->role = HK_ROLE_IN;
        else if (!strcmp(s, "out"))
          p->role = HK_ROLE_OUT;
        else if (!strcmp(s, "inout"))
          p->role = HK_ROLE_INOUT;
        else if (!strcmp(s, "scalar"))
          p->role = HK_ROLE_SCALAR;
        else
          err(P, v, f,
              "unknown role \"%s\"; expected in, out, inout or scalar", s);
      }
    }

    /* doc */
    v = hkj_get(po, "doc");
    if (v) {
      const char *s = want_string(P, v, fld(ppre, "doc"), "a string");
      if (s) p->doc = hku_strdup(s);
    }
    /* len is read here and checked once every parameter is known */
    if (take_src(P, po, "len", ppre, &p->len)) continue;
  }
}

/* The names an expression may use, as a NULL-terminated list: the
 * parameters with the given roles, then extra names, then the placeholder
 * letters. */
static const char **names_for(const hkc_kernel *k, unsigned role_mask,
                              const char *const *extra) {
  size_t cap = (size_t)k->nparams + 8 + 26;
  const char **v = calloc(cap, sizeof *v);
  if (!v) return NULL;
  size_t n = 0;
  for (int i = 0; i < k->nparams; i++)
    if (k->params[i].name && (role_mask & (1u << k->params[i].role)))
      v[n++] = k->params[i].name;
  for (; extra && *extra; extra++) v[n++] = *extra;
  static const char letters[26][2] = {
      "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M",
      "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z"};
  for (int h = 0; h < k->nholders; h++)
    v[n++] = letters[k->holders[h].letter - 'A'];
  return v;
}

/* ---- Kinds -------------------------------------------------------------------- */

#define ROLE_BIT(r) (1u << (r))
#define BUFFERS \
  (ROLE_BIT(HK_ROLE_IN) | ROLE_BIT(HK_ROLE_OUT) | ROLE_BIT(HK_ROLE_INOUT))

static void check_expr(parser *P, hkc_kernel *k, hkc_src *s, unsigned roles,
                       const char *const *extra, const char *what) {
  if (!s->text) return;
  const char **names = names_for(k, roles, extra);
  if (!names) {
    P->d->oom = 1;
    return;
  }
  P->errors += hkc_check_code(P->doc, s, HKC_CODE_EXPR, names, what,
                              k->targets, P->d);
  free(names);
}

static const hkj_node *src_node(const hkc_src *s) { return s->segs[0].node; }

/* Reads the fields of the kernel's kind and refuses those of other kinds. */
static void parse_kind_fields(parser *P, const hkj_node *obj,
                              const char *prefix, hkc_kernel *k) {
  static const char *const all[] = {"body", "map",  "combine", "identity",
                                    "finalize", "cpu", "cuda", NULL};
  const char *const *mine;
  static const char *const ew[] = {"body", NULL};
  static const char *const red[] = {"map", "combine", "identity", "finalize",
                                    NULL};
  static const char *const raw[] = {"cpu", "cuda", "body", NULL};
  mine = k->kind == HK_KIND_ELEMENTWISE ? ew
         : k->kind == HK_KIND_REDUCTION ? red
                                        : raw;
  for (const char *const *f = all; *f; f++) {
    int ok = 0;
    for (const char *const *m = mine; *m; m++) ok |= !strcmp(*m, *f);
    const hkj_node *v = hkj_get(obj, *f);
    if (v && !ok) {
      const char *owner = !strcmp(*f, "body") ? "elementwise and raw"
                          : (!strcmp(*f, "cpu") || !strcmp(*f, "cuda"))
                              ? "raw"
                              : "reduction";
      err_key(P, v, fld(prefix, "%s", *f),
              "this field belongs to %s kernels, and this kernel's kind is %s",
              owner, hk_kind_name(k->kind));
    }
  }
  if (k->kind == HK_KIND_ELEMENTWISE) {
    take_src(P, obj, "body", prefix, &k->body);
    if (!hkj_get(obj, "body"))
      err(P, obj, obj_name(prefix),
          "missing required field \"body\" (C statements run for each "
          "element i)");
    else if (k->body.text && blank(&k->body))
      err(P, src_node(&k->body), k->body.field, "is empty: expected C code");
  } else if (k->kind == HK_KIND_REDUCTION) {
    static const char *const req[] = {"map", "combine", "identity"};
    static const char *const what[] = {
        "the value of element i", "how two partial values a and b combine",
        "the neutral value"};
    hkc_src *dst[] = {&k->map, &k->combine, &k->identity};
    for (int i = 0; i < 3; i++) {
      take_src(P, obj, req[i], prefix, dst[i]);
      if (!hkj_get(obj, req[i]))
        err(P, obj, obj_name(prefix),
            "missing required field \"%s\" (an expression: %s)", req[i],
            what[i]);
    }
    take_src(P, obj, "finalize", prefix, &k->finalize);
  } else {
    take_src(P, obj, "cpu", prefix, &k->cpu);
    if (hkj_get(obj, "body")) {
      if (hkj_get(obj, "cpu"))
        err_key(P, hkj_get(obj, "body"), fld(prefix, "body"),
                "give the C body once: \"body\" is another name for \"cpu\" "
                "in a raw kernel");
      else
        take_src(P, obj, "body", prefix, &k->cpu);
    }
    take_src(P, obj, "cuda", prefix, &k->cuda);
  }
}

/* Raw kernels: targets are the bodies given, and must match an explicit
 * "targets". */
static void settle_raw_targets(parser *P, const hkj_node *obj,
                               const char *prefix, hkc_kernel *k,
                               int explicit_targets) {
  unsigned have = (k->cpu.text ? HK_TARGET_CPU : 0) |
                  (k->cuda.text ? HK_TARGET_CUDA : 0);
  if (!have && !hkj_get(obj, "cpu") && !hkj_get(obj, "cuda") &&
      !hkj_get(obj, "body")) {
    err(P, obj, obj_name(prefix),
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
    err(P, t, fld(prefix, "targets"),
        "lists cpu, but there is no \"cpu\" body");
  if ((k->targets & HK_TARGET_CUDA) && !(have & HK_TARGET_CUDA) &&
      !hkj_get(obj, "cuda"))
    err(P, t, fld(prefix, "targets"),
        "lists cuda, but there is no \"cuda\" body");
  if ((have & HK_TARGET_CPU) && !(k->targets & HK_TARGET_CPU))
    err(P, t, fld(prefix, "targets"),
        "does not list cpu, but a \"cpu\" body is given (list only the "
        "targets that have a body, and give a body for each)");
  if ((have & HK_TARGET_CUDA) && !(k->targets & HK_TARGET_CUDA))
    err(P, t, fld(prefix, "targets"),
        "does not list cuda, but a \"cuda\" body is given (list only the "
        "targets that have a body, and give a body for each)");
}

static void check_roles(parser *P, const hkj_node *obj, const char *prefix,
                        hkc_kernel *k) {
  const hkj_node *ps = hkj_get(obj, "params");
  int outs = 0, writes = 0;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    const hkj_node *po = ps->kids[i];
    const hkj_node *role = po->type == HKJ_OBJECT ? hkj_get(po, "role") : NULL;
    const hkj_node *len = po->type == HKJ_OBJECT ? hkj_get(po, "len") : NULL;
    if (p->role == HK_ROLE_OUT) outs++;
    if (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT) writes++;
    if (k->kind == HK_KIND_REDUCTION && p->role == HK_ROLE_INOUT && role)
      err(P, role, fld(prefix, "params[%d].role", i),
          "a reduction reads in buffers and writes one out; inout is not "
          "allowed");
    if (k->kind == HK_KIND_REDUCTION && p->role == HK_ROLE_OUT && outs == 2 &&
        role)
      err(P, role, fld(prefix, "params[%d].role", i),
          "a reduction has exactly one out parameter (its result); this is "
          "the second");
    if (len && k->kind != HK_KIND_RAW)
      err_key(P, len, fld(prefix, "params[%d].len", i),
              "only a raw kernel's buffers may give a len (%s kernels' "
              "buffers all have n elements)",
              hk_kind_name(k->kind));
    else if (len && p->role == HK_ROLE_SCALAR)
      err_key(P, len, fld(prefix, "params[%d].len", i),
              "a scalar has no length");
  }
  if (k->kind == HK_KIND_REDUCTION && outs == 0)
    err(P, ps, fld(prefix, "params"),
        "a reduction needs exactly one out parameter (its result, of the "
        "accumulator's type); there is none");
  if (k->kind == HK_KIND_ELEMENTWISE && writes == 0)
    err(P, ps, fld(prefix, "params"),
        "an elementwise kernel must write at least one out or inout buffer");
}

/* ---- One kernel ----------------------------------------------------------------- */

static void parse_types(parser *P, const hkj_node *obj, const char *prefix,
                        hkc_kernel *k) {
  const hkj_node *ts = hkj_get(obj, "types");
  if (!ts) return;
  if (ts->type != HKJ_OBJECT) {
    err(P, ts, fld(prefix, "types"),
        "expected an object mapping placeholder letters to lists of types, "
        "e.g. {\"T\": [\"f32\", \"f64\"]}; got %s",
        hkj_type_name(ts->type));
    return;
  }
  for (size_t i = 0; i < ts->nkids; i++) {
    const hkj_node *m = ts->kids[i];
    const char *f = fld(prefix, "types.%s", m->key);
    if (!(m->key[0] >= 'A' && m->key[0] <= 'Z' && !m->key[1])) {
      err_key(P, m, fld(prefix, "types"),
              "\"%s\" is not a placeholder: placeholders are single capital "
              "letters A-Z",
              m->key);
      continue;
    }
    int dup = 0;
    for (int h = 0; h < k->nholders; h++) dup |= k->holders[h].letter == m->key[0];
    if (dup) {
      err_key(P, m, f, "placeholder declared twice");
      continue;
    }
    if (m->type != HKJ_ARRAY || m->nkids == 0) {
      err(P, m, f, "expected a non-empty array of types (%s)", type_list);
      continue;
    }
    hkc_placeholder *h = &k->holders[k->nholders++];
    h->letter = m->key[0];
    for (size_t j = 0; j < m->nkids; j++) {
      const hkj_node *tv = m->kids[j];
      const char *tf = fld(prefix, "types.%s[%zu]", m->key, j);
      const char *s = want_string(P, tv, tf, "a type name");
      if (!s) continue;
      hk_dtype_t t = hk_dtype_from_name(s);
      if (t == HK_DTYPE_INVALID) {
        err(P, tv, tf, "unknown type \"%s\"; expected one of %s", s,
            type_list);
        continue;
      }
      int again = 0;
      for (int q = 0; q < h->ntypes; q++) again |= h->types[q] == t;
      if (again) {
        err(P, tv, tf, "\"%s\" is listed twice", s);
        continue;
      }
      h->types[h->ntypes++] = t;
    }
  }
}

static void parse_targets(parser *P, const hkj_node *obj, const char *prefix,
                          hkc_kernel *k) {
  k->targets = HK_TARGET_CPU | HK_TARGET_CUDA;
  const hkj_node *ts = hkj_get(obj, "targets");
  if (!ts) return;
  const char *f = fld(prefix, "targets");
  if (ts->type != HKJ_ARRAY || ts->nkids == 0) {
    err(P, ts, f, "expected a non-empty array of targets (\"cpu\", \"cuda\")");
    return;
  }
  k->targets = 0;
  for (size_t i = 0; i < ts->nkids; i++) {
    const hkj_node *v = ts->kids[i];
    const char *tf = fld(prefix, "targets[%zu]", i);
    const char *s = want_string(P, v, tf, "\"cpu\" or \"cuda\"");
    if (!s) continue;
    unsigned bit = !strcmp(s, "cpu")    ? HK_TARGET_CPU
                   : !strcmp(s, "cuda") ? HK_TARGET_CUDA
                                        : 0;
    if (!bit)
      err(P, v, tf, "unknown target \"%s\"; expected \"cpu\" or \"cuda\"", s);
    else if (k->targets & bit)
      err(P, v, tf, "\"%s\" is listed twice", s);
    k->targets |= bit;
  }
}

static void make_instances(parser *P, const hkj_node *obj, const char *prefix,
                           hkc_kernel *k) {
  /* Every declared placeholder must be used: otherwise its instances would
   * be the same kernel under several names. */
  const hkj_node *ts = hkj_get(obj, "types");
  for (int h = 0; h < k->nholders; h++) {
    int used = 0;
    for (int i = 0; i < k->nparams; i++)
      used |= k->params[i].placeholder == k->holders[h].letter;
    if (!used) {
      char key[2] = {k->holders[h].letter, 0};
      err_key(P, hkj_get(ts, key), fld(prefix, "types.%s", key),
              "placeholder %s is declared but no parameter uses it", key);
    }
  }
  size_t count = 1;
  for (int h = 0; h < k->nholders; h++) {
    count *= (size_t)k->holders[h].ntypes;
    if (count > 4096) {
      err(P, ts, fld(prefix, "types"),
          "makes more than 4096 instances; split the kernel");
      return;
    }
  }
  if (P->errors) return;
  k->inst = calloc(count, sizeof *k->inst);
  if (!k->inst) {
    P->d->oom = 1;
    return;
  }
  for (size_t c = 0; c < count; c++) {
    hkc_instance *in = &k->inst[k->ninst++];
    in->k = k;
    hku_buf name = HKU_BUF_INIT;
    hku_buf_put(&name, k->name);
    /* the first placeholder varies slowest */
    size_t rest = c, stride = count;
    for (int h = 0; h < k->nholders; h++) {
      stride /= (size_t)k->holders[h].ntypes;
      hk_dtype_t t = k->holders[h].types[rest / stride];
      rest %= stride;
      in->bind[k->holders[h].letter - 'A'] = t;
      hku_buf_printf(&name, "_%s", hk_dtype_name(t));
    }
    in->name = hku_buf_take(&name);
    if (!in->name) {
      P->d->oom = 1;
    } else if (strlen(in->name) > HKC_INSTANCE_NAME_MAX) {
      err(P, hkj_get(obj, "name"), fld(prefix, "name"),
          "the instance name \"%s\" is longer than %d characters",
          in->name, HKC_INSTANCE_NAME_MAX);
      return;
    }
  }
}

static void parse_kernel(parser *P, const hkj_node *obj, const char *prefix,
                         int version_required, hkc_kernel *k) {
  k->node = obj;
  k->prefix = hku_strdup(prefix);
  k->doc = hku_strdup("");
  if (obj->type != HKJ_OBJECT) {
    err(P, obj, obj_name(prefix), "expected a kernel object, got %s",
        hkj_type_name(obj->type));
    return;
  }
  static const char *const keys[] = {
      "schema_version", "name", "doc", "kind", "params", "targets", "types",
      "body", "map", "combine", "identity", "finalize", "cpu", "cuda", NULL};
  check_keys(P, obj, prefix, keys);
  check_version(P, obj, prefix, version_required);
  int start_errors = P->errors;

  /* name */
  const hkj_node *v = hkj_get(obj, "name");
  if (!v) {
    err(P, obj, obj_name(prefix),
        "missing required field \"name\" (a C identifier)");
  } else {
    const char *f = fld(prefix, "name");
    const char *s = want_string(P, v, f, "a C identifier");
    if (s && !is_identifier(s))
      err(P, v, f, "\"%s\" is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)", s);
    else if (s && strlen(s) > HKC_NAME_MAX)
      err(P, v, f, "is %zu characters long; at most %d", strlen(s),
          HKC_NAME_MAX);
    else if (s)
      k->name = hku_strdup(s);
  }

  /* doc */
  v = hkj_get(obj, "doc");
  if (v) {
    const char *f = fld(prefix, "doc");
    const char *s = want_string(P, v, f, "a one-line string");
    if (s && strpbrk(s, "\n\r")) {
      err(P, v, f, "must be one line (it is shown by hk list)");
    } else if (s) {
      free(k->doc);
      k->doc = hku_strdup(s);
    }
  }

  /* kind */
  v = hkj_get(obj, "kind");
  int kind_ok = 0;
  if (!v) {
    err(P, obj, obj_name(prefix),
        "missing required field \"kind\" (\"elementwise\", \"reduction\" or "
        "\"raw\")");
  } else {
    const char *f = fld(prefix, "kind");
    const char *s = want_string(P, v, f, "\"elementwise\", \"reduction\" or "
                                         "\"raw\"");
    if (s) {
      kind_ok = 1;
      if (!strcmp(s, "elementwise"))
        k->kind = HK_KIND_ELEMENTWISE;
      else if (!strcmp(s, "reduction"))
        k->kind = HK_KIND_REDUCTION;
      else if (!strcmp(s, "raw"))
        k->kind = HK_KIND_RAW;
      else {
        kind_ok = 0;
        err(P, v, f,
            "unknown kind \"%s\"; expected \"elementwise\", \"reduction\" or "
            "\"raw\"",
            s);
      }
    }
  }

  parse_types(P, obj, prefix, k);
  int before_targets = P->errors;
  parse_targets(P, obj, prefix, k);
  int targets_ok = P->errors == before_targets;
  if (kind_ok) {
    parse_kind_fields(P, obj, prefix, k);
    /* with a broken "targets", comparing it to the bodies says nothing */
    if (k->kind == HK_KIND_RAW && targets_ok)
      settle_raw_targets(P, obj, prefix, k, hkj_get(obj, "targets") != NULL);
  }
  int before_params = P->errors;
  parse_params(P, obj, prefix, k);
  if (!kind_ok || !k->params) return;
  /* a parameter whose role could not be read would mislead the role rules */
  if (P->errors == before_params) check_roles(P, obj, prefix, k);

  /* Author code, now that every name is known. */
  static const char *const map_extra[] = {"i", "n", NULL};
  static const char *const combine_extra[] = {"a", "b", NULL};
  static const char *const finalize_extra[] = {"acc", "n", NULL};
  const unsigned IN = ROLE_BIT(HK_ROLE_IN), SC = ROLE_BIT(HK_ROLE_SCALAR);
  switch (k->kind) {
    case HK_KIND_ELEMENTWISE:
      if (k->body.text)
        P->errors += hkc_check_code(P->doc, &k->body, HKC_CODE_BODY, NULL,
                                    NULL, k->targets, P->d);
      break;
    case HK_KIND_REDUCTION:
      check_expr(P, k, &k->map, IN | SC, map_extra,
                 "the kernel's in buffers and scalars, i and n");
      check_expr(P, k, &k->combine, 0, combine_extra, "a and b");
      check_expr(P, k, &k->identity, SC, NULL,
                 "the kernel's scalars (or a constant)");
      check_expr(P, k, &k->finalize, SC, finalize_extra,
                 "acc, n and the kernel's scalars");
      break;
    case HK_KIND_RAW:
      if (k->cpu.text && blank(&k->cpu))
        err(P, src_node(&k->cpu), k->cpu.field, "is empty: expected C code");
      else if (k->cpu.text)
        P->errors += hkc_check_code(P->doc, &k->cpu, HKC_CODE_RAW_CPU, NULL,
                                    NULL, k->targets, P->d);
      if (k->cuda.text && blank(&k->cuda))
        err(P, src_node(&k->cuda), k->cuda.field,
            "is empty: expected CUDA C code");
      else if (k->cuda.text)
        P->errors += hkc_check_code(P->doc, &k->cuda, HKC_CODE_RAW_CUDA, NULL,
                                    NULL, k->targets, P->d);
      for (int i = 0; i < k->nparams; i++)
        if (k->params[i].len.text &&
            hkc_check_len(P->doc, &k->params[i].len, k, P->d))
          P->errors++;
      break;
  }
  if (P->errors == start_errors && k->name) make_instances(P, obj, prefix, k);
}

/* ---- Files ---------------------------------------------------------------------- */

static void kernel_free(hkc_kernel *k) {
  free(k->name);
  free(k->doc);
  free(k->prefix);
  for (int i = 0; i < k->nparams; i++) {
    free(k->params[i].name);
    free(k->params[i].doc);
    src_free(&k->params[i].len);
  }
  free(k->params);
  hkc_src *srcs[] = {&k->body,     &k->map, &k->combine, &k->identity,
                     &k->finalize, &k->cpu, &k->cuda};
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++) src_free(srcs[i]);
  for (int i = 0; i < k->ninst; i++) free(k->inst[i].name);
  free(k->inst);
}

void hkc_file_free(hkc_file *f) {
  if (!f) return;
  for (int i = 0; i < f->nkernels; i++) kernel_free(&f->kernels[i]);
  free(f->kernels);
  hkj_free(f->doc);
  free(f->path);
  free(f);
}

/* Instance names must be unique in a file (they are registry names). Each
 * kernel that repeats an earlier name is reported once, at its name. */
static void check_unique(parser *P, hkc_file *f) {
  for (int a = 0; a < f->nkernels; a++) {
    int reported = 0;
    for (int i = 0; i < f->kernels[a].ninst && !reported; i++) {
      const hkc_instance *x = &f->kernels[a].inst[i];
      for (int b = 0; b <= a && !reported; b++)
        for (int j = 0; j < (b == a ? i : f->kernels[b].ninst); j++) {
          const hkc_instance *y = &f->kernels[b].inst[j];
          if (strcmp(x->name, y->name)) continue;
          const hkj_node *nv = hkj_get(f->kernels[a].node, "name");
          const hkj_node *yv = hkj_get(f->kernels[b].node, "name");
          int line, col;
          hkj_pos(P->doc, yv->off, &line, &col);
          err(P, nv, fld(f->kernels[a].prefix, "name"),
              "kernel \"%s\" is defined twice in this file (also by the "
              "kernel named at line %d, column %d)",
              x->name, line, col);
          reported = 1;
          break;
        }
    }
  }
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

int hkc_file_parse(const char *path, const char *text, size_t len,
                   hkc_file **out, hku_diags *d) {
  *out = NULL;
  size_t first_diag = d->n;
  hkj_doc *doc;
  if (hkj_parse(path, text, len, &doc, d))
    return d->oom && !d->nerrors ? HK_ENOMEM : HK_ESCHEMA;
  hkc_file *f = calloc(1, sizeof *f);
  if (!f) {
    hkj_free(doc);
    d->oom = 1;
    return HK_ENOMEM;
  }
  f->doc = doc;
  f->path = hku_strdup(doc->path);
  parser P = {doc, d, 0};
  const hkj_node *root = doc->root;
  if (root->type != HKJ_OBJECT) {
    err(&P, root, NULL,
        "a kernel file holds one kernel object, or {\"schema_version\": 1, "
        "\"kernels\": [...]}; got %s",
        hkj_type_name(root->type));
  } else if (hkj_get(root, "kernels")) {
    static const char *const keys[] = {"schema_version", "kernels", "doc",
                                       NULL};
    check_keys_as(&P, root, "", keys, "file");
    check_version(&P, root, "", 1);
    const hkj_node *fdoc = hkj_get(root, "doc");
    if (fdoc) {
      const char *fs = want_string(&P, fdoc, "doc", "a one-line string");
      if (fs && strpbrk(fs, "\n\r"))
        err(&P, fdoc, "doc", "must be one line");
    }
    const hkj_node *ks = hkj_get(root, "kernels");
    if (ks->type != HKJ_ARRAY || ks->nkids == 0) {
      err(&P, ks, "kernels", "expected a non-empty array of kernel objects");
    } else {
      f->kernels = calloc(ks->nkids, sizeof *f->kernels);
      if (!f->kernels) d->oom = 1;
      for (size_t i = 0; f->kernels && i < ks->nkids; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "kernels[%zu].", i);
        parse_kernel(&P, ks->kids[i], prefix, 0, &f->kernels[f->nkernels++]);
      }
    }
  } else {
    f->kernels = calloc(1, sizeof *f->kernels);
    if (!f->kernels)
      d->oom = 1;
    else
      parse_kernel(&P, root, "", 1, &f->kernels[f->nkernels++]);
  }
  if (!P.errors && !d->oom) check_unique(&P, f);
  sort_by_position(d, first_diag);
  if (P.errors || d->oom || !f->path) {
    int oom = d->oom && !P.errors;
    if (oom) hku_diag_add(d, HKU_ERROR, path, 0, 0, "out of memory");
    hkc_file_free(f);
    return oom ? HK_ENOMEM : HK_ESCHEMA;
  }
  *out = f;
  return HK_OK;
}

int hkc_file_load(const char *path, hkc_file **out, hku_diags *d) {
  *out = NULL;
  char *text;
  size_t len;
  struct stat st;
  /* Kernel files are small; a huge one is a mistake, not a kernel. */
  if (stat(path, &st) == 0 && S_ISREG(st.st_mode) &&
      (uint64_t)st.st_size > HKC_FILE_MAX) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "file too large for a kernel file (%lld bytes; limit 64 MiB)",
                 (long long)st.st_size);
    return HK_ESCHEMA;
  }
  int rc = hku_read_file(path, &text, &len, NULL, d);
  if (rc) return rc;
  rc = hkc_file_parse(path, text, len, out, d);
  free(text);
  return rc;
}

/* ---- Queries --------------------------------------------------------------------- */

hk_dtype_t hkc_param_type(const hkc_instance *in, const hkc_param *p) {
  return p->placeholder ? in->bind[p->placeholder - 'A'] : p->dtype;
}

hk_dtype_t hkc_acc_type(const hkc_instance *in) {
  for (int i = 0; i < in->k->nparams; i++)
    if (in->k->params[i].role == HK_ROLE_OUT)
      return hkc_param_type(in, &in->k->params[i]);
  return HK_DTYPE_INVALID;
}

const char *hkc_ctype(hk_dtype_t t) {
  switch (t) {
    case HK_F32: return "float";
    case HK_F64: return "double";
    case HK_I8: return "int8_t";
    case HK_I16: return "int16_t";
    case HK_I32: return "int32_t";
    case HK_I64: return "int64_t";
    case HK_U8: return "uint8_t";
    case HK_U16: return "uint16_t";
    case HK_U32: return "uint32_t";
    case HK_U64: return "uint64_t";
    default: return "void";
  }
}

int hkc_is_heavy(const hkc_kernel *k) {
  const hkc_src *srcs[] = {&k->body, &k->map, &k->combine, &k->finalize,
                           &k->cpu};
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++)
    if (srcs[i]->text && hkc_code_calls_math(srcs[i])) return 1;
  return 0;
}
