/* parse_params.c — a kernel's parameters, placeholders ("types"), targets
 * and instances (the second half of the validator, parse.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "parse.h"

/* ---- Parameters --------------------------------------------------------------- */

static const char *const reserved_names[] = {"i", "n", "acc", "a", "b", NULL};

/* Why name cannot be a parameter name, or NULL when it can. */
static const char *bad_param_name(const char *name, unsigned targets,
                                  const hkc_kernel *k) {
  for (const char *const *r = reserved_names; *r; r++)
    if (!strcmp(*r, name))
      return "is reserved: i, n, acc, a and b have a meaning in kernel code";
  if (k->kind == HK_KIND_ROWS &&
      (!strcmp(name, "row") || !strcmp(name, "rows")))
    return "is reserved in a rows kernel: row is the row's index in the "
           "body, rows the row count of the typed function";
  return hkc_bad_code_name(name, targets, k);
}

const char *hkc_bad_code_name(const char *name, unsigned targets,
                              const hkc_kernel *k) {
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

/* Reads param p's "name" (po is its object, at params[i]); p->name stays
 * NULL when it is refused. HK_OK or HK_ENOMEM; problems are reported. */
static int param_name(hkc_parser *P, const hkj_node *po, size_t i,
                      const char *prefix, const char *ppre, hkc_kernel *k,
                      hkc_param *p) {
  const hkj_node *v = hkj_get(po, "name");
  if (!v) {
    hkc_err(P, po, hkc_fld(prefix, "params[%zu]", i),
            "missing required field \"name\"");
    return HK_OK;
  }
  const char *f = hkc_fld(ppre, "name");
  const char *s = hkc_want_string(P, v, f, "a C identifier");
  const char *why;
  if (!s) return HK_OK;
  if (!hkc_is_identifier(s)) {
    hkc_err(P, v, f, "\"%s\" is not a C identifier ([A-Za-z_][A-Za-z0-9_]*)",
            s);
  } else if (strlen(s) > HKC_NAME_MAX) {
    hkc_err(P, v, f, "is %zu characters long; at most %d", strlen(s),
            HKC_NAME_MAX);
  } else if ((why = bad_param_name(s, k->targets, k))) {
    hkc_err(P, v, f, "\"%s\" %s; choose another name", s, why);
  } else {
    for (int j = 0; j + 1 < k->nparams; j++)
      if (k->params[j].name && !strcmp(k->params[j].name, s)) {
        hkc_err(P, v, f, "\"%s\" is already the name of params[%d]", s, j);
        break;
      }
    if (!(p->name = hku_strdup(s))) return HK_ENOMEM;
  }
  return HK_OK;
}

/* Reads param p's "type": a type name or a declared placeholder. */
static void param_type(hkc_parser *P, const hkj_node *po, size_t i,
                       const char *prefix, const char *ppre,
                       const hkc_kernel *k, hkc_param *p) {
  const hkj_node *v = hkj_get(po, "type");
  if (!v) {
    hkc_err(P, po, hkc_fld(prefix, "params[%zu]", i),
            "missing required field \"type\" (one of %s, or a placeholder)",
            hkc_type_list);
    return;
  }
  const char *f = hkc_fld(ppre, "type");
  const char *s = hkc_want_string(P, v, f, "a type name");
  if (!s) return;
  hk_dtype_t t = hk_dtype_from_name(s);
  if (t != HK_DTYPE_INVALID) {
    p->dtype = t;
  } else if (s[0] >= 'A' && s[0] <= 'Z' && !s[1]) {
    int found = 0;
    for (int h = 0; h < k->nholders; h++) found |= k->holders[h].letter == s[0];
    if (found)
      p->placeholder = s[0];
    else
      hkc_err(P, v, f,
              "placeholder \"%s\" is not declared in \"types\" (e.g. "
              "\"types\": {\"%s\": [\"f32\", \"f64\"]})",
              s, s);
  } else {
    hkc_err(P, v, f,
            "unknown type \"%s\"; expected one of %s, or a placeholder "
            "letter declared in \"types\"",
            s, hkc_type_list);
  }
}

/* Reads param p's "role". */
static void param_role(hkc_parser *P, const hkj_node *po, size_t i,
                       const char *prefix, const char *ppre, hkc_param *p) {
  static const char *const names[] = {[HK_ROLE_IN] = "in",
                                      [HK_ROLE_OUT] = "out",
                                      [HK_ROLE_INOUT] = "inout",
                                      [HK_ROLE_SCALAR] = "scalar"};
  const hkj_node *v = hkj_get(po, "role");
  if (!v) {
    hkc_err(P, po, hkc_fld(prefix, "params[%zu]", i),
            "missing required field \"role\" (in, out, inout or scalar)");
    return;
  }
  const char *f = hkc_fld(ppre, "role");
  const char *s = hkc_want_string(P, v, f, "a role");
  if (!s) return;
  for (size_t r = 0; r < HK_COUNT(names); r++)
    if (names[r] && !strcmp(s, names[r])) {
      p->role = (hk_role_t)r;
      return;
    }
  hkc_err(P, v, f, "unknown role \"%s\"; expected in, out, inout or scalar", s);
}

/* Reads params[i] (po) into p, marked refused when its name, type or role
 * is (later checks must not trust them). HK_OK or HK_ENOMEM. */
static int parse_param(hkc_parser *P, const hkj_node *po, size_t i,
                       const char *prefix, hkc_kernel *k, hkc_param *p) {
  static const char *const keys[] = {"name", "type", "role",
                                     "len",  "doc",  "row", NULL};
  p->node = po;
  p->role = HK_ROLE_IN;
  char pp[64];
  snprintf(pp, sizeof pp, "params[%zu].", i);
  char ppre[320];
  snprintf(ppre, sizeof ppre, "%s%s", prefix, pp);
  if (po->type != HKJ_OBJECT) {
    hkc_err(P, po, hkc_fld(prefix, "params[%zu]", i),
            "expected an object {\"name\", \"type\", \"role\"}, got %s",
            hkj_type_name(po->type));
    p->refused = 1;
    return HK_OK;
  }
  hkc_check_keys(P, po, ppre, keys);
  int before = P->errors;
  if (param_name(P, po, i, prefix, ppre, k, p) != HK_OK) return HK_ENOMEM;
  param_type(P, po, i, prefix, ppre, k, p);
  param_role(P, po, i, prefix, ppre, p);
  p->refused = P->errors != before;
  hkc_param_row(P, po, ppre, k, p);
  const hkj_node *v = hkj_get(po, "doc");
  if (v) {
    const char *s = hkc_want_string(P, v, hkc_fld(ppre, "doc"), "a string");
    if (s && !(p->doc = hku_strdup(s))) return HK_ENOMEM;
  }
  /* len is read here and checked once every parameter is known */
  int rc = hkc_take_src(P, po, "len", ppre, &p->len);
  return rc == HK_ENOMEM ? rc : HK_OK;
}

int hkc_parse_params(hkc_parser *P, const hkj_node *obj, const char *prefix,
                     hkc_kernel *k) {
  const hkj_node *ps = hkj_get(obj, "params");
  if (!ps) {
    hkc_err(P, obj, hkc_obj_name(prefix),
            "missing required field \"params\" (the list of parameters, in "
            "calling order)");
    return HK_OK;
  }
  if (ps->type != HKJ_ARRAY) {
    hkc_err(P, ps, hkc_fld(prefix, "params"),
            "expected an array of parameters, got %s", hkj_type_name(ps->type));
    return HK_OK;
  }
  if (ps->nkids == 0) {
    hkc_err(P, ps, hkc_fld(prefix, "params"),
            "is empty: a kernel needs parameters");
    return HK_OK;
  }
  k->params = calloc(ps->nkids, sizeof *k->params);
  if (!k->params) return HK_ENOMEM;
  for (size_t i = 0; i < ps->nkids; i++) {
    hkc_param *p = &k->params[k->nparams++];
    int rc = parse_param(P, ps->kids[i], i, prefix, k, p);
    if (rc != HK_OK) return rc;
  }
  return HK_OK;
}

/* t's values are floats in code: f32 and f64, and f16 and bf16 unless
 * held as uint16_t (a raw or grid buffer's storage). */
static int is_float_type(hk_dtype_t t, int bits) {
  return t == HK_F32 || t == HK_F64 ||
         (!bits && (t == HK_F16 || t == HK_BF16));
}

const char **hkc_float_names(const hkc_kernel *k, int storage) {
  const char **v = calloc((size_t)k->nparams + 1, sizeof *v);
  if (!v) return NULL;
  size_t n = 0;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    if (p->refused || !p->name) continue;
    const int bits = storage && p->role != HK_ROLE_SCALAR;
    int all = is_float_type(p->dtype, bits);
    for (int h = 0; h < k->nholders && p->placeholder; h++) {
      const hkc_placeholder *ph = &k->holders[h];
      if (ph->letter != p->placeholder) continue;
      all = ph->ntypes > 0;
      for (int t = 0; t < ph->ntypes; t++)
        all &= is_float_type(ph->types[t], bits);
    }
    if (all) v[n++] = p->name;
  }
  return v;
}

const char **hkc_names_for(const hkc_kernel *k, unsigned role_mask,
                           const char *const *extra) {
  size_t nextra = 0;
  while (extra && extra[nextra]) nextra++;
  size_t cap = (size_t)k->nparams + nextra + (size_t)k->nconsts + 26 + 1;
  const char **v = calloc(cap, sizeof *v);
  if (!v) return NULL;
  size_t n = 0;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    /* a refused parameter was reported: code naming it is not judged by
     * its role, which may be a default */
    if (p->refused && hkc_param_given_name(p))
      v[n++] = hkc_param_given_name(p);
    else if (p->name && (role_mask & HKC_ROLE_BIT(p->role)))
      v[n++] = p->name;
  }
  for (; extra && *extra; extra++) v[n++] = *extra;
  for (int i = 0; i < k->nconsts; i++) v[n++] = k->consts[i].name;
  static const char letters[26][2] = {
      "A", "B", "C", "D", "E", "F", "G", "H", "I", "J", "K", "L", "M",
      "N", "O", "P", "Q", "R", "S", "T", "U", "V", "W", "X", "Y", "Z"};
  for (int h = 0; h < k->nholders; h++)
    v[n++] = letters[k->holders[h].letter - 'A'];
  return v;
}

void hkc_check_roles(hkc_parser *P, const hkj_node *obj, const char *prefix,
                     hkc_kernel *k) {
  const hkj_node *ps = hkj_get(obj, "params");
  int writes = 0;
  for (int i = 0; i < k->nparams; i++) {
    const hkc_param *p = &k->params[i];
    const hkj_node *po = ps->kids[i];
    const hkj_node *role = po->type == HKJ_OBJECT ? hkj_get(po, "role") : NULL;
    const hkj_node *len = po->type == HKJ_OBJECT ? hkj_get(po, "len") : NULL;
    if (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT) writes++;
    /* a struct accumulator's finalize may assign several results */
    if (k->kind == HK_KIND_REDUCTION && writes == 2 && role &&
        (p->role == HK_ROLE_OUT || p->role == HK_ROLE_INOUT) &&
        k->acc_form != HKC_ACC_STRUCT)
      hkc_err(P, role, hkc_fld(prefix, "params[%d].role", i),
              "a reduction has exactly one out or inout parameter (its "
              "result); this is the second (several results need a struct "
              "accumulator, \"acc\": {...}, whose finalize assigns each)");
    if (len && k->kind != HK_KIND_RAW && k->kind != HK_KIND_GRID)
      hkc_err_key(P, len, hkc_fld(prefix, "params[%d].len", i),
                  "only a raw kernel's buffers (and a grid kernel's) may give a len (%s kernels' "
                  "buffers all have n elements)",
                  hk_kind_name(k->kind));
    else if (len && p->role == HK_ROLE_SCALAR)
      hkc_err_key(P, len, hkc_fld(prefix, "params[%d].len", i),
                  "a scalar has no length");
  }
  if (k->kind == HK_KIND_REDUCTION && writes == 0)
    hkc_err(P, ps, hkc_fld(prefix, "params"),
            "a reduction needs exactly one out parameter (its result; or an "
            "inout one to accumulate into; several with a struct "
            "accumulator); there is none");
  hkc_check_rows_params(P, obj, prefix, k);
  if (k->kind == HK_KIND_ELEMENTWISE && writes == 0)
    hkc_err(
        P, ps, hkc_fld(prefix, "params"),
        "an elementwise kernel must write at least one out or inout buffer");
}

/* ---- Placeholders, targets, instances ------------------------------------------- */

void hkc_parse_types(hkc_parser *P, const hkj_node *obj, const char *prefix,
                     hkc_kernel *k) {
  const hkj_node *ts = hkj_get(obj, "types");
  if (!ts) return;
  if (ts->type != HKJ_OBJECT) {
    hkc_err(P, ts, hkc_fld(prefix, "types"),
            "expected an object mapping placeholder letters to lists of types, "
            "e.g. {\"T\": [\"f32\", \"f64\"]}; got %s",
            hkj_type_name(ts->type));
    return;
  }
  for (size_t i = 0; i < ts->nkids; i++) {
    const hkj_node *m = ts->kids[i];
    const char *f = hkc_fld(prefix, "types.%s", m->key);
    if (!(m->key[0] >= 'A' && m->key[0] <= 'Z' && !m->key[1])) {
      hkc_err_key(
          P, m, hkc_fld(prefix, "types"),
          "\"%s\" is not a placeholder: placeholders are single capital "
          "letters A-Z",
          m->key);
      continue;
    }
    int dup = 0;
    for (int h = 0; h < k->nholders; h++)
      dup |= k->holders[h].letter == m->key[0];
    if (dup) {
      hkc_err_key(P, m, f, "placeholder declared twice");
      continue;
    }
    if (m->type != HKJ_ARRAY || m->nkids == 0) {
      hkc_err(P, m, f, "expected a non-empty array of types (%s)",
              hkc_type_list);
      continue;
    }
    hkc_placeholder *h = &k->holders[k->nholders++];
    h->letter = m->key[0];
    for (size_t j = 0; j < m->nkids; j++) {
      const hkj_node *tv = m->kids[j];
      const char *tf = hkc_fld(prefix, "types.%s[%zu]", m->key, j);
      const char *s = hkc_want_string(P, tv, tf, "a type name");
      if (!s) continue;
      hk_dtype_t t = hk_dtype_from_name(s);
      if (t == HK_DTYPE_INVALID) {
        hkc_err(P, tv, tf, "unknown type \"%s\"; expected one of %s", s,
                hkc_type_list);
        continue;
      }
      int again = 0;
      for (int q = 0; q < h->ntypes; q++) again |= h->types[q] == t;
      if (again) {
        hkc_err(P, tv, tf, "\"%s\" is listed twice", s);
        continue;
      }
      h->types[h->ntypes++] = t;
    }
  }
}

void hkc_parse_targets(hkc_parser *P, const hkj_node *obj, const char *prefix,
                       hkc_kernel *k) {
  k->targets = HK_TARGET_CPU | HK_TARGET_CUDA;
  const hkj_node *ts = hkj_get(obj, "targets");
  if (!ts) return;
  const char *f = hkc_fld(prefix, "targets");
  if (ts->type != HKJ_ARRAY || ts->nkids == 0) {
    hkc_err(P, ts, f,
            "expected a non-empty array of targets (\"cpu\", \"cuda\")");
    return;
  }
  k->targets = 0;
  for (size_t i = 0; i < ts->nkids; i++) {
    const hkj_node *v = ts->kids[i];
    const char *tf = hkc_fld(prefix, "targets[%zu]", i);
    const char *s = hkc_want_string(P, v, tf, "\"cpu\" or \"cuda\"");
    if (!s) continue;
    unsigned bit = !strcmp(s, "cpu")    ? HK_TARGET_CPU
                   : !strcmp(s, "cuda") ? HK_TARGET_CUDA
                                        : 0;
    if (!bit)
      hkc_err(P, v, tf, "unknown target \"%s\"; expected \"cpu\" or \"cuda\"",
              s);
    else if (k->targets & bit)
      hkc_err(P, v, tf, "\"%s\" is listed twice", s);
    k->targets |= bit;
  }
}

int hkc_make_instances(hkc_parser *P, const hkj_node *obj, const char *prefix,
                       hkc_kernel *k) {
  /* this kernel's errors: an earlier kernel's must not keep the checks
   * that need instances (the accumulator's size) from this one */
  const int start_errors = P->errors;
  /* Every declared placeholder must be used: otherwise its instances would
   * be the same kernel under several names. */
  const hkj_node *ts = hkj_get(obj, "types");
  for (int h = 0; h < k->nholders; h++) {
    int used = 0;
    for (int i = 0; i < k->nparams; i++)
      used |= k->params[i].placeholder == k->holders[h].letter;
    if (!used) {
      char key[2] = {k->holders[h].letter, 0};
      hkc_err_key(P, hkj_get(ts, key), hkc_fld(prefix, "types.%s", key),
                  "placeholder %s is declared but no parameter uses it", key);
    }
  }
  size_t count = 1;
  for (int h = 0; h < k->nholders; h++) {
    count *= (size_t)k->holders[h].ntypes;
    if (count > 4096) {
      hkc_err(P, ts, hkc_fld(prefix, "types"),
              "makes more than 4096 instances; split the kernel");
      return HK_OK;
    }
  }
  if (P->errors != start_errors) return HK_OK;
  k->inst = calloc(count, sizeof *k->inst);
  if (!k->inst) return HK_ENOMEM;
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
    if (!in->name) return HK_ENOMEM;
    if (strlen(in->name) > HKC_INSTANCE_NAME_MAX) {
      hkc_err(P, hkj_get(obj, "name"), hkc_fld(prefix, "name"),
              "the instance name \"%s\" is longer than %d characters", in->name,
              HKC_INSTANCE_NAME_MAX);
      return HK_OK;
    }
  }
  return HK_OK;
}

/* ---- Queries --------------------------------------------------------------------- */

const char *hkc_param_given_name(const hkc_param *p) {
  if (p->name) return p->name;
  const hkj_node *v =
      p->node && p->node->type == HKJ_OBJECT ? hkj_get(p->node, "name") : NULL;
  return v && v->type == HKJ_STRING ? v->str : NULL;
}

hk_dtype_t hkc_param_type(const hkc_instance *in, const hkc_param *p) {
  return p->placeholder ? in->bind[p->placeholder - 'A'] : p->dtype;
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
    case HK_F16: return "float";
    case HK_BF16: return "float";
    case HK_BOOL: return "hk_bool";
    default: return "void";
  }
}

const char *hkc_stype(hk_dtype_t t) {
  switch (t) {
    case HK_F16: return "uint16_t";
    case HK_BF16: return "uint16_t";
    case HK_BOOL: return "uint8_t";
    default: return hkc_ctype(t);
  }
}

size_t hkc_compute_size(hk_dtype_t t) {
  return t == HK_F16 || t == HK_BF16 ? 4 : hk_dtype_size(t);
}

int hkc_dtype_converts(hk_dtype_t t) {
  return t == HK_F16 || t == HK_BF16 || t == HK_BOOL;
}

const char *hkc_load_pre(hk_dtype_t t) {
  switch (t) {
    case HK_F16: return "hk_f16_to_f32(";
    case HK_BF16: return "hk_bf16_to_f32(";
    case HK_BOOL: return "(hk_bool)(";
    default: return "";
  }
}

const char *hkc_store_pre(hk_dtype_t t) {
  switch (t) {
    case HK_F16: return "hk_f32_to_f16(";
    case HK_BF16: return "hk_f32_to_bf16(";
    case HK_BOOL: return "(uint8_t)(";
    default: return "";
  }
}

const char *hkc_conv_post(hk_dtype_t t) { return hkc_dtype_converts(t) ? ")" : ""; }

/* 1 when the code loops: a grid kernel's index is then much work. */
static int loops(const hkc_src *s) {
  return s->text && (hkc_code_uses(s, "for") || hkc_code_uses(s, "while"));
}

int hkc_is_heavy(const hkc_kernel *k) {
  if (k->kind == HK_KIND_GRID) {
    int l = loops(&k->body);
    for (int i = 0; i < k->nhelpers && !l; i++) l = loops(&k->helpers[i].body);
    return l;
  }
  const hkc_src *srcs[] = {&k->body, &k->map, &k->combine, &k->finalize,
                           &k->cpu};
  for (size_t i = 0; i < sizeof srcs / sizeof *srcs; i++)
    if (srcs[i]->text && hkc_code_calls_math(srcs[i])) return 1;
  for (int i = 0; i < k->nacc_fields; i++) /* a struct accumulator's map */
    if (k->acc_fields[i].map.text &&
        hkc_code_calls_math(&k->acc_fields[i].map))
      return 1;
  return 0;
}
