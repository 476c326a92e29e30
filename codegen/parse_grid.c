/* parse_grid.c — the grid kind's fields ("grid", "setup", "scratch") and
 * the definitions every kind may carry ("consts", "helpers"): reading,
 * names, and the checks on their code (parse.h; schemas/README.md §6.5,
 * §6.6).
 *
 * Every name these fields declare becomes a name in generated code (a
 * const and a helper are macros there, emit_scope.c), so each must be a
 * C identifier that collides with nothing else the kernel's code sees:
 * parameters, other declarations, keywords, math and type names.
 * Helpers may call the math functions and each other, never recursively:
 * the call graph is walked here, so a cycle is a located error and not a
 * stack overflow on some thread.
 */
#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "parse.h"

/* ---- Names ------------------------------------------------------------------- */

/* 1 when name is already declared by k (a parameter, an index, a setup
 * value, a scratch array, a const or a helper). */
static int name_taken(const hkc_kernel *k, const char *name) {
  for (int i = 0; i < k->nparams; i++) {
    const char *pn = hkc_param_given_name(&k->params[i]);
    if (pn && !strcmp(pn, name)) return 1;
  }
  for (int i = 0; i < k->grid_rank; i++)
    if (k->grid[i].name && !strcmp(k->grid[i].name, name)) return 1;
  for (int i = 0; i < k->nsetup; i++)
    if (k->setup[i].name && !strcmp(k->setup[i].name, name)) return 1;
  for (int i = 0; i < k->nscratch; i++)
    if (k->scratch[i].name && !strcmp(k->scratch[i].name, name)) return 1;
  for (int i = 0; i < k->nconsts; i++)
    if (k->consts[i].name && !strcmp(k->consts[i].name, name)) return 1;
  for (int i = 0; i < k->nhelpers; i++)
    if (k->helpers[i].name && !strcmp(k->helpers[i].name, name)) return 1;
  for (int i = 0; i < k->nacc_fields; i++) /* a helper macro would rename */
    if (k->acc_fields[i].name && !strcmp(k->acc_fields[i].name, name))
      return 1;
  return 0;
}

/* Why name cannot be declared by one of these fields, or NULL. An index
 * of a grid kernel may be i, a or b (they mean nothing there). */
static const char *bad_decl_name(const char *name, const hkc_kernel *k,
                                 int is_index) {
  static const char *const reserved[] = {"i",   "n",    "acc", "a",
                                         "b",   "row",  "rows", NULL};
  if (!hkc_is_identifier(name))
    return "is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)";
  if (strlen(name) > HKC_NAME_MAX) return "is too long (at most 63 characters)";
  if (is_index && !strcmp(name, "n"))
    return "is reserved: n is the element count in kernel code (an index "
           "may be called i, a, b, acc, row or rows, which mean nothing in "
           "a grid)";
  for (const char *const *r = reserved; *r && !is_index; r++)
    if (!strcmp(*r, name))
      return "is reserved: i, n, acc, a, b, row and rows have a meaning in "
             "kernel code";
  const char *why = hkc_bad_code_name(name, k->targets, k);
  if (why) return why;
  /* a parameter may still be called "where" (schema 1 files did), but
   * these fields are newer: a helper "where" would also #undef the
   * prelude's where() for the kernels after it in the file */
  if (!strcmp(name, "where"))
    return "is hk's where(c, a, b), which kernel code may call";
  if (name_taken(k, name))
    return "is already the name of a parameter or of another declaration "
           "of this kernel";
  return NULL;
}

/* Reads the string name at v (field f) into *out when it may be declared;
 * reports it otherwise. HK_OK or HK_ENOMEM. */
static int take_name(hkc_parser *P, const hkj_node *v, const char *f,
                     const char *name, const hkc_kernel *k, int is_index,
                     char **out) {
  const char *why = bad_decl_name(name, k, is_index);
  if (why) { /* at the key when the name is one ("grid", "consts") */
    hkc_err_at(P, v->key && !strcmp(v->key, name) ? v->key_off : v->off, f,
               "\"%s\" %s; choose another name", name, why);
    return HK_OK;
  }
  *out = hku_strdup(name);
  return *out ? HK_OK : HK_ENOMEM;
}

/* v when it is an array (of at least one element), else NULL (reported). */
static const hkj_node *want_array(hkc_parser *P, const hkj_node *v,
                                  const char *f, const char *what) {
  if (v->type == HKJ_ARRAY && v->nkids) return v;
  hkc_err(P, v, f, "expected a non-empty array of %s, got %s", what,
          v->type == HKJ_ARRAY ? "an empty array" : hkj_type_name(v->type));
  return NULL;
}

/* ---- consts ------------------------------------------------------------------ */

/* A const name: capitals, digits and '_', at least two characters (one
 * capital is a placeholder letter): it is a macro in generated code. */
static int const_shaped(const char *s) {
  if (!(s[0] >= 'A' && s[0] <= 'Z') || !s[1]) return 0;
  for (; *s; s++)
    if (!((*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '_'))
      return 0;
  return 1;
}

static int parse_consts(hkc_parser *P, const hkj_node *v, const char *prefix,
                        hkc_kernel *k) {
  if (v->type != HKJ_OBJECT) {
    hkc_err(P, v, hkc_fld(prefix, "consts"),
            "expected an object of integer constants ({\"TILE\": 64}), got %s",
            hkj_type_name(v->type));
    return HK_OK;
  }
  k->consts = calloc(v->nkids ? v->nkids : 1, sizeof *k->consts);
  if (!k->consts) return HK_ENOMEM;
  for (size_t i = 0; i < v->nkids; i++) {
    const hkj_node *c = v->kids[i];
    const char *f = hkc_fld(prefix, "consts.%s", c->key);
    hkc_const *d = &k->consts[k->nconsts];
    if (!const_shaped(c->key) || !strcmp(c->key, "NULL")) {
      hkc_err_key(P, c, f,
                  "\"%s\" is not a const name: capitals, digits and '_', at "
                  "least two characters (TILE, BLOCK_2)",
                  c->key);
      continue;
    }
    size_t n = c->end - c->off;
    const char *raw = P->doc->text + c->off;
    if (c->type != HKJ_NUMBER || memchr(raw, '.', n) || memchr(raw, 'e', n) ||
        memchr(raw, 'E', n) || c->num < -2147483648.0 ||
        c->num > 2147483647.0) {
      hkc_err(P, c, f, "expected an integer from -2147483648 to 2147483647, "
                       "written without '.' or exponent");
      continue;
    }
    if (take_name(P, c, f, c->key, k, 0, &d->name) != HK_OK) return HK_ENOMEM;
    if (!d->name) continue;
    d->value = (int64_t)c->num;
    d->node = c;
    k->nconsts++;
  }
  return HK_OK;
}

/* ---- helpers ------------------------------------------------------------------- */

static int parse_helper(hkc_parser *P, const hkj_node *h, size_t i,
                        const char *prefix, hkc_kernel *k) {
  static const char *const keys[] = {"name", "returns", "params", "body",
                                     "doc", NULL};
  char hpre[300];
  snprintf(hpre, sizeof hpre, "%shelpers[%zu].", prefix, i);
  const char *f = hkc_fld(prefix, "helpers[%zu]", i);
  if (h->type != HKJ_OBJECT) {
    hkc_err(P, h, f, "expected a helper object ({\"name\", \"returns\", "
                     "\"params\", \"body\"}), got %s", hkj_type_name(h->type));
    return HK_OK;
  }
  hkc_check_keys(P, h, hpre, keys);
  hkc_helper *d = &k->helpers[k->nhelpers++];
  d->node = h;
  const hkj_node *nv = hkj_get(h, "name");
  if (!nv)
    hkc_err(P, h, f, "missing required field \"name\" (a C identifier)");
  else if (hkc_want_string(P, nv, hkc_fld(hpre, "name"), "a C identifier") &&
           take_name(P, nv, hkc_fld(hpre, "name"), nv->str, k, 0, &d->name) !=
               HK_OK)
    return HK_ENOMEM;
  if (!hkj_get(h, "body"))
    hkc_err(P, h, f, "missing required field \"body\" (the function's C "
                     "statements)");
  if (hkc_take_src(P, h, "returns", hpre, &d->returns) == HK_ENOMEM ||
      hkc_take_src(P, h, "params", hpre, &d->params) == HK_ENOMEM ||
      hkc_take_src(P, h, "body", hpre, &d->body) == HK_ENOMEM)
    return HK_ENOMEM;
  return HK_OK;
}

static int parse_helpers(hkc_parser *P, const hkj_node *v, const char *prefix,
                         hkc_kernel *k) {
  if (!want_array(P, v, hkc_fld(prefix, "helpers"), "helper objects"))
    return HK_OK;
  k->helpers = calloc(v->nkids, sizeof *k->helpers);
  if (!k->helpers) return HK_ENOMEM;
  for (size_t i = 0; i < v->nkids; i++)
    if (parse_helper(P, v->kids[i], i, prefix, k) != HK_OK) return HK_ENOMEM;
  return HK_OK;
}

/* ---- grid, setup, scratch ----------------------------------------------------- */

static int parse_grid_dims(hkc_parser *P, const hkj_node *v,
                           const char *prefix, hkc_kernel *k) {
  const char *f = hkc_fld(prefix, "grid");
  if (v->type != HKJ_OBJECT || v->nkids < 1 ||
      v->nkids > HKC_GRID_MAX_RANK) {
    if (v->type == HKJ_OBJECT)
      hkc_err(P, v, f,
              "has %zu indices; an index space has 1, 2 or 3 ({\"b\": \"B\", "
              "\"t\": \"T\"}: one index per member, outermost first)",
              v->nkids);
    else
      hkc_err(P, v, f,
              "expected an object of 1 to 3 indices and their extents "
              "({\"b\": \"B\", \"t\": \"T\"}), got %s",
              hkj_type_name(v->type));
    return HK_OK;
  }
  char gpre[300];
  snprintf(gpre, sizeof gpre, "%sgrid.", prefix);
  for (size_t i = 0; i < v->nkids; i++) {
    const hkj_node *e = v->kids[i];
    hkc_grid_dim *d = &k->grid[k->grid_rank++];
    d->node = e;
    if (take_name(P, e, hkc_fld(gpre, "%s", e->key), e->key, k, 1,
                  &d->name) != HK_OK)
      return HK_ENOMEM;
    if (e->type == HKJ_STRING && !e->str_len) {
      hkc_err(P, e, hkc_fld(gpre, "%s", e->key),
              "is empty: expected the extent, integer arithmetic over the "
              "kernel's integer scalars, consts and n");
      continue;
    }
    if (hkc_take_src(P, v, e->key, gpre, &d->ext) == HK_ENOMEM)
      return HK_ENOMEM;
  }
  return HK_OK;
}

/* Reads "setup" (is_setup) or "scratch": objects of name, type and value
 * (setup) or len (scratch). */
static int parse_locals(hkc_parser *P, const hkj_node *v, const char *prefix,
                        hkc_kernel *k, int is_setup) {
  static const char *const setup_keys[] = {"name", "type", "value", "doc",
                                           NULL};
  static const char *const scratch_keys[] = {"name", "type", "len", "doc",
                                             NULL};
  const char *field = is_setup ? "setup" : "scratch";
  const char *vkey = is_setup ? "value" : "len";
  if (!want_array(P, v, hkc_fld(prefix, "%s", field),
                  is_setup ? "{\"name\", \"type\", \"value\"} objects"
                           : "{\"name\", \"type\", \"len\"} objects"))
    return HK_OK;
  hkc_local *arr = calloc(v->nkids, sizeof *arr);
  if (!arr) return HK_ENOMEM;
  if (is_setup)
    k->setup = arr;
  else
    k->scratch = arr;
  int *count = is_setup ? &k->nsetup : &k->nscratch;
  for (size_t i = 0; i < v->nkids; i++) {
    const hkj_node *o = v->kids[i];
    char lpre[300];
    snprintf(lpre, sizeof lpre, "%s%s[%zu].", prefix, field, i);
    const char *f = hkc_fld(prefix, "%s[%zu]", field, i);
    if (o->type != HKJ_OBJECT) {
      hkc_err(P, o, f, "expected an object, got %s", hkj_type_name(o->type));
      continue;
    }
    hkc_check_keys(P, o, lpre, is_setup ? setup_keys : scratch_keys);
    hkc_local *d = &arr[(*count)++];
    d->node = o;
    const hkj_node *nv = hkj_get(o, "name"), *tv = hkj_get(o, "type");
    if (!nv || !tv || !hkj_get(o, vkey)) {
      hkc_err(P, o, f, "missing required field \"%s\"",
              !nv ? "name" : !tv ? "type" : vkey);
      continue;
    }
    if (hkc_want_string(P, nv, hkc_fld(lpre, "name"), "a C identifier") &&
        take_name(P, nv, hkc_fld(lpre, "name"), nv->str, k, 0, &d->name) !=
            HK_OK)
      return HK_ENOMEM;
    hkc_read_type(P, tv, hkc_fld(lpre, "type"), k, &d->dtype,
                  &d->placeholder);
    if (hkc_take_src(P, o, vkey, lpre, &d->value) == HK_ENOMEM)
      return HK_ENOMEM;
  }
  return HK_OK;
}

/* ---- Reading ------------------------------------------------------------------ */

int hkc_parse_defs(hkc_parser *P, const hkj_node *obj, const char *prefix,
                   hkc_kernel *k) {
  static const char *const grid_only[] = {"grid", "setup", "scratch", NULL};
  const hkj_node *v;
  if ((v = hkj_get(obj, "consts")) && parse_consts(P, v, prefix, k) != HK_OK)
    return HK_ENOMEM;
  if ((v = hkj_get(obj, "helpers")) && parse_helpers(P, v, prefix, k) != HK_OK)
    return HK_ENOMEM;
  if (k->kind != HK_KIND_GRID) {
    for (const char *const *g = grid_only; *g; g++)
      if ((v = hkj_get(obj, *g)))
        hkc_err_key(P, v, hkc_fld(prefix, "%s", *g),
                    "this field belongs to grid kernels, and this kernel's "
                    "kind is %s",
                    hk_kind_name(k->kind));
    return HK_OK;
  }
  if (!(v = hkj_get(obj, "grid")))
    hkc_err(P, obj, hkc_obj_name(prefix),
            "missing required field \"grid\" (the index space: {\"b\": \"B\", "
            "\"t\": \"T\"}, 1 to 3 indices and their extents)");
  else if (parse_grid_dims(P, v, prefix, k) != HK_OK)
    return HK_ENOMEM;
  if ((v = hkj_get(obj, "setup")) && parse_locals(P, v, prefix, k, 1) != HK_OK)
    return HK_ENOMEM;
  if ((v = hkj_get(obj, "scratch")) &&
      parse_locals(P, v, prefix, k, 0) != HK_OK)
    return HK_ENOMEM;
  return HK_OK;
}

/* ---- Checking code ------------------------------------------------------------- */

/* The result of a check that reported its problems (as parse.c's). */
static int counted(hkc_parser *P, int rc) {
  if (rc == HK_ESCHEMA) P->errors++;
  return rc == HK_ENOMEM ? rc : HK_OK;
}

const char **hkc_helper_names(const hkc_kernel *k) {
  const char **v = calloc((size_t)k->nhelpers + 1, sizeof *v);
  if (!v) return NULL;
  int n = 0;
  for (int i = 0; i < k->nhelpers; i++)
    if (k->helpers[i].name) v[n++] = k->helpers[i].name;
  return v;
}

/* An error at byte off of code s, counted. */
static void src_err(hkc_parser *P, const hkc_src *s, size_t off,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void src_err(hkc_parser *P, const hkc_src *s, size_t off,
                    const char *fmt, ...) {
  int line, col;
  hkc_src_pos(P->doc, s, off, &line, &col);
  P->errors++;
  va_list ap;
  va_start(ap, fmt);
  hkc_vreport(P->d, P->doc->path, line, col, s->field, fmt, ap);
  va_end(ap);
}

/* 1 when the identifier t[0..n) is a type word (a C type keyword or
 * qualifier, a <stdint.h> or <stddef.h> type, a placeholder letter of
 * k). */
static int is_type_word(const hkc_kernel *k, const char *t, size_t n) {
  static const char *const words[] = {
      "void",     "char",     "short",     "int",      "long",     "float",
      "double",   "signed",   "unsigned",  "const",    "volatile", "restrict",
      "_Bool",    "bool",     "int8_t",    "int16_t",  "int32_t",  "int64_t",
      "uint8_t",  "uint16_t", "uint32_t",  "uint64_t", "size_t",   "ptrdiff_t",
      "__restrict", "__restrict__", NULL};
  for (const char *const *w = words; *w; w++)
    if (strlen(*w) == n && !memcmp(*w, t, n)) return 1;
  for (int h = 0; h < k->nholders && n == 1; h++)
    if (k->holders[h].letter == *t) return 1;
  return 0;
}

/* Reports a parameter of a helper's params without a name ("float",
 * "const T *"): the compiler's words for it named the helper's
 * "returns". 1 when one was reported. */
static int unnamed_param(hkc_parser *P, const hkc_kernel *k,
                         const hkc_src *s) {
  const char *t = s->text;
  size_t start = 0, len = strlen(t);
  if (!strcmp(t, "void")) return 0; /* (void): none */
  for (size_t i = 0; i <= len; i++) {
    if (i < len && t[i] != ',') continue;
    /* the piece [start, i): its last identifier, before any [...] */
    size_t e = i;
    while (e > start && (t[e - 1] == ' ' || t[e - 1] == '\t' ||
                         t[e - 1] == '\n'))
      e--;
    if (e > start && t[e - 1] == ']') { /* an array's brackets */
      while (e > start && t[e - 1] != '[') e--;
      if (e > start) e--;
      while (e > start && (t[e - 1] == ' ' || t[e - 1] == '\t')) e--;
    }
    size_t b = e;
    while (b > start && (isalnum((unsigned char)t[b - 1]) || t[b - 1] == '_'))
      b--;
    int named = b < e && !isdigit((unsigned char)t[b]) &&
                !is_type_word(k, t + b, e - b);
    if (!named && (e > start || len)) {
      size_t at = start;
      while (at < i && (t[at] == ' ' || t[at] == '\t' || t[at] == '\n')) at++;
      src_err(P, s, at < len ? at : (len ? len - 1 : 0),
              "a parameter has no name: each is a type and a name "
              "(\"float v\", \"const T *x\")");
      return 1;
    }
    start = i + 1;
  }
  return 0;
}

/* A helper's "returns" or "params": a C type or parameter list, which
 * only type words, names, '*', ',', '[', ']' and numbers may make. */
static int check_signature(hkc_parser *P, const hkc_kernel *k,
                           const hkc_src *s, int is_params) {
  if (!s->text) return HK_OK;
  const char *bad = is_params ? strpbrk(s->text, "(){};=\"'#/\\")
                              : strpbrk(s->text, "(){};=\"'#/\\,[]");
  if (bad) {
    src_err(P, s, (size_t)(bad - s->text),
               "'%c' is not allowed in a helper's %s: %s", *bad,
               is_params ? "params" : "returns",
               is_params ? "a C parameter list (\"const float *x, int64_t k\")"
                         : "a C type (\"float\", \"T\", \"void\")");
    return HK_OK;
  }
  if (is_params && unnamed_param(P, k, s)) return HK_OK;
  return counted(P, hkc_check_code(P->doc, s, HKC_CODE_ROWS, NULL, NULL,
                                   k->targets, P->d));
}

/* 1 when a helper's "returns" is void (spaces aside). */
static int returns_void(const char *t) {
  while (*t == ' ' || *t == '\t' || *t == '\n') t++;
  if (strncmp(t, "void", 4) != 0) return 0;
  for (t += 4; *t == ' ' || *t == '\t' || *t == '\n'; t++) {
  }
  return *t == '\0';
}

/* Reports a recursion: helper h calls helper `to`, from which h can be
 * reached again. seen marks the helpers visited in this walk. */
static int reaches(const hkc_kernel *k, int from, int target, char *seen) {
  if (seen[from]) return 0;
  seen[from] = 1;
  for (int j = 0; j < k->nhelpers; j++) {
    if (!k->helpers[j].name || !k->helpers[from].body.text) continue;
    if (hkc_code_find_call(&k->helpers[from].body, k->helpers[j].name) < 0)
      continue;
    if (j == target || reaches(k, j, target, seen)) return 1;
  }
  return 0;
}

static void check_recursion(hkc_parser *P, const hkc_kernel *k) {
  char seen[256];
  for (int h = 0; h < k->nhelpers && h < 256; h++) {
    const hkc_helper *d = &k->helpers[h];
    if (!d->name || !d->body.text) continue;
    for (int j = 0; j < k->nhelpers && j < 256; j++) {
      if (!k->helpers[j].name) continue;
      long at = hkc_code_find_call(&d->body, k->helpers[j].name);
      if (at < 0) continue;
      memset(seen, 0, sizeof seen);
      if (j != h && !reaches(k, j, h, seen)) continue;
      if (j == h)
        src_err(P, &d->body, (size_t)at,
                "helper '%s' calls itself: recursion is not allowed (kernel "
                "code runs on GPU threads and pool threads with small stacks)",
                d->name);
      else
        src_err(P, &d->body, (size_t)at,
                "helper '%s' calls '%s', which calls '%s' again: recursion "
                "is not allowed",
                d->name, k->helpers[j].name, d->name);
      break; /* one report per helper */
    }
  }
}

int hkc_check_helpers(hkc_parser *P, const hkc_kernel *k) {
  if (!k->nhelpers) return HK_OK;
  const char **calls = hkc_helper_names(k);
  if (!calls) return HK_ENOMEM;
  int rc = HK_OK;
  for (int i = 0; i < k->nhelpers && rc == HK_OK; i++) {
    const hkc_helper *d = &k->helpers[i];
    rc = check_signature(P, k, &d->returns, 0);
    if (rc == HK_OK) rc = check_signature(P, k, &d->params, 1);
    if (rc == HK_OK && d->body.text)
      rc = counted(P, hkc_check_code_calls(P->doc, &d->body, HKC_CODE_ROWS,
                                           NULL, NULL, k->targets, calls,
                                           P->d));
    if (rc == HK_OK && d->body.text && d->returns.text &&
        !returns_void(d->returns.text) && !hkc_code_uses(&d->body, "return"))
      src_err(P, &d->body, 0,
              "helper '%s' returns %s but its body has no return statement "
              "(what a call gives would be undefined; a helper that gives "
              "nothing returns \"void\")",
              d->name ? d->name : "?", d->returns.text);
  }
  free(calls);
  if (rc == HK_OK) check_recursion(P, k);
  return rc;
}

/* The names a setup value i may use: the scalars, the earlier setup
 * values, the consts, the placeholders; and n. */
static int check_setup(hkc_parser *P, const hkc_kernel *k, int i,
                       const char *const *calls) {
  const char **extra = calloc((size_t)i + 2, sizeof *extra);
  if (!extra) return HK_ENOMEM;
  int n = 0;
  extra[n++] = "n";
  for (int j = 0; j < i; j++)
    if (k->setup[j].name) extra[n++] = k->setup[j].name;
  const char **names = hkc_names_for(k, HKC_ROLE_BIT(HK_ROLE_SCALAR), extra);
  free(extra);
  if (!names) return HK_ENOMEM;
  int rc = counted(
      P, hkc_check_code_calls(P->doc, &k->setup[i].value, HKC_CODE_EXPR, names,
                              "the kernel's scalars, consts, earlier setup "
                              "values and n",
                              k->targets, calls, P->d));
  free(names);
  return rc;
}

int hkc_check_grid(hkc_parser *P, hkc_kernel *k) {
  for (int i = 0; i < k->grid_rank; i++)
    if (k->grid[i].ext.text &&
        counted(P, hkc_check_len(P->doc, &k->grid[i].ext, k, P->d)) != HK_OK)
      return HK_ENOMEM;
  const char **calls = hkc_helper_names(k);
  if (!calls) return HK_ENOMEM;
  int rc = HK_OK;
  for (int i = 0; i < k->nsetup && rc == HK_OK; i++)
    if (k->setup[i].value.text) rc = check_setup(P, k, i, calls);
  int64_t bytes = 0;
  for (int i = 0; i < k->nscratch && rc == HK_OK; i++) {
    hkc_local *s = &k->scratch[i];
    if (!s->value.text) continue;
    int r = hkc_const_len(P->doc, &s->value, k, &s->count, P->d);
    if (r == HK_ENOMEM) rc = r;
    if (r != HK_OK) {
      rc = counted(P, r);
      continue;
    }
    size_t el = s->placeholder ? 8 : hkc_compute_size(s->dtype);
    if (s->count < 1 || s->count > HKC_SCRATCH_MAX ||
        (bytes += s->count * (int64_t)el) > HKC_SCRATCH_MAX) {
      const hkj_node *lv = hkj_get(s->node, "len");
      hkc_err(P, lv, s->value.field,
              s->count < 1 ? "is %lld: a scratch array has at least 1 element"
                           : "makes the scratch arrays too large (%lld "
                             "elements; at most 16384 bytes in all, counting "
                             "a placeholder's elements as 8 bytes)",
              (long long)s->count);
    }
  }
  /* a grid body sees f16 and bf16 buffers as their uint16_t bits */
  const char **floats = rc == HK_OK ? hkc_float_names(k, 1) : NULL;
  if (rc == HK_OK && !floats) rc = HK_ENOMEM;
  if (rc == HK_OK && k->body.text)
    rc = counted(P, hkc_check_code_floats(P->doc, &k->body, HKC_CODE_ROWS,
                                          NULL, NULL, k->targets, calls,
                                          floats, P->d));
  free(floats);
  free(calls);
  for (int i = 0; i < k->nparams && rc == HK_OK; i++)
    if (k->params[i].len.text)
      rc = counted(P, hkc_check_len(P->doc, &k->params[i].len, k, P->d));
  return rc;
}

void hkc_defs_free(hkc_kernel *k) {
  for (int i = 0; i < k->grid_rank; i++) {
    free(k->grid[i].name);
    hkc_src_free(&k->grid[i].ext);
  }
  hkc_local *arrs[2] = {k->setup, k->scratch};
  int ns[2] = {k->nsetup, k->nscratch};
  for (int a = 0; a < 2; a++) {
    for (int i = 0; i < ns[a]; i++) {
      free(arrs[a][i].name);
      hkc_src_free(&arrs[a][i].value);
    }
    free(arrs[a]);
  }
  for (int i = 0; i < k->nconsts; i++) free(k->consts[i].name);
  free(k->consts);
  for (int i = 0; i < k->nhelpers; i++) {
    free(k->helpers[i].name);
    hkc_src_free(&k->helpers[i].returns);
    hkc_src_free(&k->helpers[i].params);
    hkc_src_free(&k->helpers[i].body);
  }
  free(k->helpers);
}
