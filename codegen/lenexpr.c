/* lenexpr.c — a raw kernel's "len" expressions, checked for overflow.
 *
 * A buffer's len (say "rows * cols") tells hk how many elements the kernel
 * will touch; callers size and check buffers by it. Evaluated as plain C,
 * rows = cols = 2^32 would wrap to 0 and a too-short buffer would pass. So
 * a len is restricted to integer arithmetic hk can check: integer literals,
 * integer scalar parameters, n, + - * / %, unary minus, parentheses and
 * casts to integer types (checked: the value must fit the type). It
 * is parsed here and emitted as calls of helpers that compute in int64 and
 * report overflow, division by zero or a negative result. The helpers are
 * plain C, so every compiler (tcc too) computes them the same way.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "emit.h"

typedef struct lp {
  const size_t *map; /* one-line text offset -> source text offset */
  const hkj_doc *doc;
  const hkc_src *src;
  const hkc_kernel *k;
  const hkc_instance *in; /* emitting: the instance (concrete types) */
  const char *t;
  size_t n, p;
  hku_buf *out; /* NULL when only checking */
  hku_diags *d;
  int errors;
  int consts_only; /* a compile-time count: literals and consts only */
  int64_t v;       /* the value of what was just parsed (consts_only) */
  int known;       /* ... and whether v is it: literals and consts only
                    * (a divisor known to be 0 is an error in any len) */
} lp;

/* Reports the first problem of the expression at byte off of its
 * one-line text (later ones are only counted). */
static void lerr(lp *L, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void lerr(lp *L, size_t off, const char *fmt, ...) {
  if (L->errors++) return; /* the first problem says enough */
  if (!L->d) return;
  int line, col;
  /* offsets are in the one-line text: map back through the original */
  hkc_src_pos(L->doc, L->src, L->map ? L->map[off] : off, &line, &col);
  va_list ap;
  va_start(ap, fmt);
  hkc_vreport(L->d, L->doc->path, line, col, L->src->field, fmt, ap);
  va_end(ap);
}

#define GRAMMAR                                                           \
  "a len is integer arithmetic: integer literals, the kernel's integer "  \
  "scalars, n, + - * / %, parentheses and casts to integer types"

static const char *const int_type_words[] = {
    "char", "short", "int", "long", "signed", "unsigned", "int8_t",
    "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
    "uint64_t", "size_t", "ptrdiff_t", NULL};

static size_t word_end(const lp *L, size_t p) {
  while (p < L->n && ((L->t[p] >= 'a' && L->t[p] <= 'z') ||
                      (L->t[p] >= 'A' && L->t[p] <= 'Z') ||
                      (L->t[p] >= '0' && L->t[p] <= '9') || L->t[p] == '_'))
    p++;
  return p;
}

static int is_int_type_word(const lp *L, size_t s, size_t e) {
  for (const char *const *w = int_type_words; *w; w++)
    if (strlen(*w) == e - s && !memcmp(*w, L->t + s, e - s)) return 1;
  return 0;
}

/* The values of the integer type named by the words of [s, e) (a cast's
 * parentheses' inside): *lo and *hi, within int64 (the arithmetic's
 * type: an unsigned 64-bit type holds [0, INT64_MAX] here). Plain char is
 * [0, 127], what it holds signed (x86-64) and unsigned (aarch64) alike.
 * Returns NULL, or why the words name no integer type. */
static const char *cast_range(const lp *L, size_t s, size_t e, int64_t *lo,
                              int64_t *hi) {
  static const struct {
    const char *name;
    int64_t lo, hi;
  } named[] = {{"int8_t", INT8_MIN, INT8_MAX},   {"int16_t", INT16_MIN, INT16_MAX},
               {"int32_t", INT32_MIN, INT32_MAX}, {"int64_t", INT64_MIN, INT64_MAX},
               {"uint8_t", 0, UINT8_MAX},         {"uint16_t", 0, UINT16_MAX},
               {"uint32_t", 0, UINT32_MAX},       {"uint64_t", 0, INT64_MAX},
               {"size_t", 0, INT64_MAX},          {"ptrdiff_t", INT64_MIN, INT64_MAX}};
  int words = 0, nsigned = 0, nunsigned = 0, nchar = 0, nshort = 0, nint = 0,
      nlong = 0, typedef_at = -1;
  for (size_t q = s;;) {
    while (q < e && L->t[q] == ' ') q++;
    size_t we = word_end(L, q);
    if (we == q) break;
    size_t len = we - q;
    const char *w = L->t + q;
#define IS(lit) (len == sizeof lit - 1 && !memcmp(w, lit, len))
    if (IS("signed")) nsigned++;
    else if (IS("unsigned")) nunsigned++;
    else if (IS("char")) nchar++;
    else if (IS("short")) nshort++;
    else if (IS("int")) nint++;
    else if (IS("long")) nlong++;
    else
      for (int i = 0; i < (int)(sizeof named / sizeof *named); i++)
        if (strlen(named[i].name) == len && !memcmp(named[i].name, w, len))
          typedef_at = i;
#undef IS
    words++;
    q = we;
  }
  if (typedef_at >= 0) {
    if (words != 1) return "a fixed-width type stands alone";
    *lo = named[typedef_at].lo;
    *hi = named[typedef_at].hi;
    return NULL;
  }
  if (nsigned + nunsigned > 1 || nchar > 1 || nshort > 1 || nint > 1 ||
      nlong > 2 || nchar + nshort + (nlong > 0) > 1 || (nchar && nint))
    return "these words name no C integer type";
  int u = nunsigned > 0;
  if (nchar) {
    *lo = u ? 0 : nsigned ? INT8_MIN : 0;
    *hi = u ? UINT8_MAX : INT8_MAX;
  } else if (nshort) {
    *lo = u ? 0 : INT16_MIN;
    *hi = u ? UINT16_MAX : INT16_MAX;
  } else if (nlong) { /* 64 bits (LP64) */
    *lo = u ? 0 : INT64_MIN;
    *hi = INT64_MAX;
  } else {
    *lo = u ? 0 : INT32_MIN;
    *hi = u ? UINT32_MAX : INT32_MAX;
  }
  return NULL;
}

/* At '(': the end of a cast to an integer type "(unsigned long)", or 0. */
static size_t cast_end(const lp *L, size_t p) {
  size_t q = p + 1;
  int words = 0;
  for (;;) {
    while (q < L->n && L->t[q] == ' ') q++;
    size_t e = word_end(L, q);
    if (e == q) break;
    if (!is_int_type_word(L, q, e)) return 0;
    words++;
    q = e;
  }
  return words && q < L->n && L->t[q] == ')' ? q + 1 : 0;
}

static void skip(lp *L) {
  while (L->p < L->n && strchr(" \t\r\n", L->t[L->p])) L->p++;
}

static void emit(lp *L, const char *s) {
  if (L->out) hku_buf_put(L->out, s);
}

static int expr(lp *L);

static int unary(lp *L);

/* An integer literal at L->p. HK_OK, or HK_ESCHEMA (reported). */
static int primary_number(lp *L) {
  size_t s = L->p;
  while (L->p < L->n && ((L->t[L->p] >= '0' && L->t[L->p] <= '9') ||
                         strchr("xXabcdefABCDEFuUlL", L->t[L->p])))
    L->p++;
  char lit[64];
  size_t len = L->p - s < sizeof lit - 1 ? L->p - s : sizeof lit - 1;
  memcpy(lit, L->t + s, len);
  lit[len] = '\0';
  char *end;
  errno = 0;
  unsigned long long v = strtoull(lit, &end, 0);
  while (*end == 'u' || *end == 'U' || *end == 'l' || *end == 'L') end++;
  if (*end || errno == ERANGE || v > 9223372036854775807ull) {
    lerr(L, s, "'%s' is not an integer literal that fits int64 (%s)", lit,
         GRAMMAR);
    return HK_ESCHEMA;
  }
  if (L->out) hku_buf_printf(L->out, "(int64_t)%lluLL", v);
  L->v = (int64_t)v;
  L->known = 1;
  return HK_OK;
}

/* 1 for the integer types (not f32, f64, f16, bf16 or bool). */
static int is_int_dtype(hk_dtype_t t) {
  return t != HK_F32 && t != HK_F64 && t != HK_F16 && t != HK_BF16 &&
         t != HK_BOOL;
}

/* Scalar parameter p, named at offset s: it must be an integer in every
 * instance. HK_OK, or HK_ESCHEMA (reported). */
static int scalar_operand(lp *L, const hkc_param *p, size_t s) {
  if (p->role != HK_ROLE_SCALAR) {
    lerr(L, s, "'%s' is not one of the kernel's integer scalars and n "
               "(it is a buffer)", p->name);
    return HK_ESCHEMA;
  }
  /* integer scalars only: the placeholder's types, or the type */
  hk_dtype_t bad = HK_DTYPE_INVALID;
  if (p->placeholder) {
    for (int h = 0; h < L->k->nholders; h++)
      if (L->k->holders[h].letter == p->placeholder)
        for (int t = 0; t < L->k->holders[h].ntypes; t++)
          if (!is_int_dtype(L->k->holders[h].types[t]))
            bad = L->k->holders[h].types[t];
  } else if (!is_int_dtype(p->dtype)) {
    bad = p->dtype;
  }
  if (bad != HK_DTYPE_INVALID) {
    lerr(L, s, "'%s' is a %s scalar: %s", p->name,
         bad == HK_BOOL ? "bool" : "floating-point", GRAMMAR);
    return HK_ESCHEMA;
  }
  /* u64 may not fit int64; every other integer type does */
  if (L->out)
    hku_buf_printf(L->out,
                   hkc_param_type(L->in, p) == HK_U64 ? "hk_len_u64(%s, &hk_bad)"
                                                      : "(int64_t)%s",
                   p->name);
  return HK_OK;
}

/* A name at L->p: n or an integer scalar. HK_OK, or HK_ESCHEMA
 * (reported). */
static int primary_name(lp *L) {
  size_t s = L->p;
  L->p = word_end(L, s);
  char name[128];
  size_t len = L->p - s < sizeof name - 1 ? L->p - s : sizeof name - 1;
  memcpy(name, L->t + s, len);
  name[len] = '\0';
  size_t after = L->p;
  L->known = 0; /* n or a scalar: known when called */
  while (after < L->n && L->t[after] == ' ') after++;
  if (after < L->n && L->t[after] == '(') {
    lerr(L, s, "calls '%s', which is not allowed: %s", name, GRAMMAR);
    return HK_ESCHEMA;
  }
  for (int i = 0; i < L->k->nconsts; i++)
    if (L->k->consts[i].name && !strcmp(L->k->consts[i].name, name)) {
      L->v = L->k->consts[i].value;
      L->known = 1;
      if (L->out) hku_buf_printf(L->out, "(int64_t)%lldLL", (long long)L->v);
      return HK_OK;
    }
  if (L->consts_only) {
    lerr(L, s, "'%s' is not one of the kernel's consts: this count is fixed "
               "when the kernel is compiled (integer literals, consts, + - * / "
               "%%, parentheses)", name);
    return HK_ESCHEMA;
  }
  if (!strcmp(name, "n")) {
    emit(L, "hk_len_size(n, &hk_bad)");
    return HK_OK;
  }
  if (!strcmp(name, "float") || !strcmp(name, "double")) {
    lerr(L, s, "a cast to '%s' is not allowed: %s", name, GRAMMAR);
    return HK_ESCHEMA;
  }
  const hkc_param *p = NULL;
  int refused = 0;
  for (int i = 0; i < L->k->nparams; i++) {
    const char *pn = hkc_param_given_name(&L->k->params[i]);
    if (!pn || strcmp(pn, name)) continue;
    refused |= L->k->params[i].refused;
    if (!p) p = &L->k->params[i];
  }
  /* A parameter whose name, type or role was refused has been reported;
   * whether it may appear here cannot be told. Only an invalid file has
   * one, so nothing is ever emitted for it. */
  if (refused) {
    HK_ASSERT(!L->out);
    return HK_OK;
  }
  if (p) return scalar_operand(L, p, s);
  for (int i = 0; i < L->k->nsetup; i++)
    if (L->k->setup[i].name && !strcmp(L->k->setup[i].name, name)) {
      lerr(L, s, "'%s' is a setup value, which the kernel's code computes: "
                 "lengths and extents are known before it runs (integer "
                 "scalars, consts and n)", name);
      return HK_ESCHEMA;
    }
  lerr(L, s, "'%s' is not one of the kernel's integer scalars%s and n", name,
       L->k->nconsts ? ", consts" : "");
  return HK_ESCHEMA;
}

/* An operand: a cast, a parenthesised expression, a literal or a name.
 * HK_OK, or HK_ESCHEMA (reported). */
static int primary(lp *L) {
  skip(L);
  if (L->p >= L->n) {
    lerr(L, L->p ? L->p - 1 : 0, "an operand is missing at the end");
    return HK_ESCHEMA;
  }
  char c = L->t[L->p];
  size_t ce = c == '(' ? cast_end(L, L->p) : 0;
  if (ce) {
    /* A cast converts as in C where the value fits its type, and nowhere
     * else: (uint8_t)n with n = 300 is an error (C's 44 would be a
     * wrapped count, which a too-short buffer could match). */
    size_t at = L->p;
    int64_t lo, hi;
    const char *why = cast_range(L, at + 1, ce - 1, &lo, &hi);
    if (why) {
      lerr(L, at, "(%.*s) is not a cast hk can check: %s (%s)",
           (int)(ce - at - 2), L->t + at + 1, why, GRAMMAR);
      return HK_ESCHEMA;
    }
    int full = lo == INT64_MIN && hi == INT64_MAX;
    L->p = ce;
    if (!full) emit(L, "hk_len_cast(");
    if (unary(L) != HK_OK) return HK_ESCHEMA;
    if (full) return HK_OK;
    if (L->out)
      hku_buf_printf(L->out, ", %lldLL, %lldLL, &hk_bad)",
                     (long long)lo, (long long)hi);
    if (L->known && (L->v < lo || L->v > hi)) {
      lerr(L, at, "(%.*s) of %lld: the value does not fit the type "
                  "(a len's casts must not change it)",
           (int)(ce - at - 2), L->t + at + 1, (long long)L->v);
      return HK_ESCHEMA;
    }
    return HK_OK;
  }
  if (c == '(') {
    L->p++;
    emit(L, "(");
    if (expr(L) != HK_OK) return HK_ESCHEMA;
    skip(L);
    if (L->p >= L->n || L->t[L->p] != ')') {
      lerr(L, L->p < L->n ? L->p : L->n - 1, "')' is missing");
      return HK_ESCHEMA;
    }
    L->p++;
    emit(L, ")");
    return HK_OK;
  }
  if (c >= '0' && c <= '9') return primary_number(L);
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_')
    return primary_name(L);
  if (c == ';' || c == '{' || c == '}')
    lerr(L, L->p, "'%c' cannot appear in an expression", c);
  else
    lerr(L, L->p, "'%c' is not allowed: %s", c, GRAMMAR);
  return HK_ESCHEMA;
}

/* A unary minus or plus, or a primary. HK_OK, or HK_ESCHEMA (reported). */
static int unary(lp *L) {
  skip(L);
  if (L->p < L->n && (L->t[L->p] == '-' || L->t[L->p] == '+') &&
      !(L->p + 1 < L->n && L->t[L->p + 1] == L->t[L->p])) { /* not ++ -- */
    size_t at = L->p;
    int neg = L->t[L->p++] == '-';
    emit(L, neg ? "hk_len_neg(" : "(");
    if (unary(L) != HK_OK) return HK_ESCHEMA;
    emit(L, neg ? ", &hk_bad)" : ")");
    if (neg && L->v == INT64_MIN && L->consts_only) {
      lerr(L, at, "overflows int64");
      return HK_ESCHEMA;
    }
    if (neg && L->v != INT64_MIN) L->v = -L->v;
    return HK_OK;
  }
  return primary(L);
}

/* L->v = lhs op L->v, in checked int64 arithmetic; in a compile-time
 * count an overflow or a division by zero is an error (reported). */
static int fold(lp *L, char op, int64_t lhs, int lhs_known, size_t at) {
  int64_t r = L->v, v = 0;
  int bad = 0;
  if ((op == '/' || op == '%') && L->known && r == 0) {
    /* every call would fail (said at run time only as "negative or too
     * large") */
    lerr(L, at, "divides by zero");
    return HK_ESCHEMA;
  }
  L->known = L->known && lhs_known;
  switch (op) {
    case '+': bad = __builtin_add_overflow(lhs, r, &v); break;
    case '-': bad = __builtin_sub_overflow(lhs, r, &v); break;
    case '*': bad = __builtin_mul_overflow(lhs, r, &v); break;
    default:
      bad = r == 0 || (lhs == INT64_MIN && r == -1);
      if (!bad) v = op == '/' ? lhs / r : lhs % r;
  }
  L->v = v;
  if (!bad || !L->consts_only) return HK_OK;
  lerr(L, at, "%s", op == '/' || op == '%' ? "divides by zero"
                                           : "overflows int64");
  return HK_ESCHEMA;
}

/* A left-associative chain of the operators in ops at one precedence
 * level, emitted as nested calls: a * b / c -> div(mul(a, b), c). The
 * operands are emitted into temporary buffers to wrap them. HK_OK, or
 * HK_ESCHEMA (reported). */
static int chain(lp *L, const char *ops, int (*operand)(lp *)) {
  hku_buf acc = HKU_BUF_INIT, *saved = L->out;
  if (saved) L->out = &acc;
  int rc = operand(L);
  for (;;) {
    skip(L);
    if (rc != HK_OK || L->p >= L->n || !strchr(ops, L->t[L->p])) break;
    if (L->p + 1 < L->n && L->t[L->p + 1] == L->t[L->p] &&
        (L->t[L->p] == '+' || L->t[L->p] == '-')) {
      lerr(L, L->p, "'%c%c' is not allowed: %s", L->t[L->p], L->t[L->p],
           GRAMMAR);
      rc = HK_ESCHEMA;
      break;
    }
    size_t at = L->p;
    char op = L->t[L->p++];
    int64_t lhs = L->v;
    int lhs_known = L->known;
    hku_buf rhs = HKU_BUF_INIT;
    if (saved) L->out = &rhs;
    rc = operand(L);
    if (rc == HK_OK && fold(L, op, lhs, lhs_known, at) != HK_OK)
      rc = HK_ESCHEMA;
    if (saved) {
      const char *fn = op == '+' ? "add" : op == '-' ? "sub"
                       : op == '*' ? "mul" : op == '/' ? "div" : "mod";
      hku_buf wrapped = HKU_BUF_INIT;
      hku_buf_printf(&wrapped, "hk_len_%s(%s, %s, &hk_bad)", fn,
                     hku_buf_str(&acc), hku_buf_str(&rhs));
      hku_buf_free(&acc);
      acc = wrapped;
    }
    hku_buf_free(&rhs);
  }
  if (saved) {
    L->out = saved;
    hku_buf_put(saved, hku_buf_str(&acc));
  }
  hku_buf_free(&acc);
  return rc;
}

static int term(lp *L) { return chain(L, "*/%", unary); }

static int expr(lp *L) { return chain(L, "+-", term); }

/* Parses src; with out, emits the checked C expression (which needs
 * `int hk_bad` in scope). Reports into d (may be NULL). HK_OK,
 * HK_ESCHEMA (invalid), or HK_ENOMEM. */
static int run(const hkj_doc *doc, const hkc_src *src, const hkc_kernel *k,
               const hkc_instance *in, hku_buf *out, hku_diags *d,
               int64_t *value) {
  /* The text with comments blanked out (same offsets), so that positions
   * map straight back to the source. */
  char *text = malloc(src->len + 1);
  size_t *map = malloc((src->len + 1) * sizeof *map);
  if (!text || !map) {
    free(text);
    free(map);
    return HK_ENOMEM;
  }
  size_t n = 0;
  for (size_t i = 0; i < src->len;) {
    const char *t = src->text;
    if (t[i] == '/' && i + 1 < src->len && (t[i + 1] == '/' || t[i + 1] == '*')) {
      int line = t[i + 1] == '/';
      i += 2;
      while (i < src->len && (line ? t[i] != '\n'
                                   : !(t[i] == '*' && i + 1 < src->len &&
                                       t[i + 1] == '/')))
        i++;
      if (!line) i += 2;
      continue;
    }
    map[n] = i;
    text[n++] = (t[i] == '\n' || t[i] == '\t' || t[i] == '\r') ? ' ' : t[i];
    i++;
  }
  map[n] = src->len;
  text[n] = '\0';
  lp L = {map, doc, src, k, in, text, n, 0, out, d, 0, value != NULL, 0, 0};
  size_t first = 0;
  while (first < n && text[first] == ' ') first++;
  int rc;
  if (first == n) {
    lerr(&L, 0, "is empty: an expression is required");
    rc = HK_ESCHEMA;
  } else {
    rc = expr(&L);
    skip(&L);
    if (rc == HK_OK && L.p < L.n) {
      char c = L.t[L.p];
      if (c == ';' || c == '{' || c == '}')
        lerr(&L, L.p, "'%c' cannot appear in an expression", c);
      else
        lerr(&L, L.p, "'%c' is not allowed here: %s", c, GRAMMAR);
      rc = HK_ESCHEMA;
    }
  }
  /* a len or an extent of literals and consts alone that is negative:
   * every call would fail, said then without the value ("is negative,
   * too large, ...") */
  if (rc == HK_OK && !L.errors && !value && !out && L.known && L.v < 0)
    lerr(&L, first, "is %lld whatever the scalars and n: a length or an "
                    "extent cannot be negative",
         (long long)L.v);
  free(text);
  free(map);
  if (value) *value = L.v;
  return rc != HK_OK || L.errors ? HK_ESCHEMA : HK_OK;
}

int hkc_check_len(const hkj_doc *doc, const hkc_src *src, const hkc_kernel *k,
                  hku_diags *d) {
  return run(doc, src, k, NULL, NULL, d, NULL);
}

int hkc_const_len(const hkj_doc *doc, const hkc_src *src, const hkc_kernel *k,
                  int64_t *value, hku_diags *d) {
  return run(doc, src, k, NULL, NULL, d, value);
}

int hkc_emit_len(const hkc_src *src, const hkc_instance *in, hku_buf *out) {
  hkj_doc none = {0};
  return run(&none, src, in->k, in, out, NULL, NULL);
}

/* The helpers, each declared with qual (HK_LEN_QUAL in the text). */
static void put_len_helpers(hku_buf *o, const char *qual) {
  static const char text[] =
      "/* Checked int64 arithmetic for len expressions: *bad is set on\n"
      " * overflow or division by zero (results are then meaningless). */\n"
      "HK_LEN_QUAL int64_t hk_len_add(int64_t a, int64_t "
      "b, int *bad) { if ((b > 0 && a > INT64_MAX - b) || (b < 0 && a < "
      "INT64_MIN - b)) { *bad = 1; return 0; } return a + b; }\n"
      "HK_LEN_QUAL int64_t hk_len_sub(int64_t a, int64_t "
      "b, int *bad) { if ((b < 0 && a > INT64_MAX + b) || (b > 0 && a < "
      "INT64_MIN + b)) { *bad = 1; return 0; } return a - b; }\n"
      "HK_LEN_QUAL int64_t hk_len_mul(int64_t a, int64_t "
      "b, int *bad) { if (a == 0 || b == 0) return 0; if ((a == -1 && b == "
      "INT64_MIN) || (b == -1 && a == INT64_MIN)) { *bad = 1; return 0; } "
      "if (a > 0 ? (b > 0 ? a > INT64_MAX / b : b < INT64_MIN / a) : (b > "
      "0 ? a < INT64_MIN / b : a < INT64_MAX / b)) { *bad = 1; return 0; } "
      "return a * b; }\n"
      "HK_LEN_QUAL int64_t hk_len_div(int64_t a, int64_t "
      "b, int *bad) { if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = "
      "1; return 0; } return a / b; }\n"
      "HK_LEN_QUAL int64_t hk_len_mod(int64_t a, int64_t "
      "b, int *bad) { if (b == 0 || (a == INT64_MIN && b == -1)) { *bad = "
      "1; return 0; } return a % b; }\n"
      "HK_LEN_QUAL int64_t hk_len_cast(int64_t a, int64_t lo, int64_t "
      "hi, int *bad) { if (a < lo || a > hi) { *bad = 1; return 0; } "
      "return a; }\n"
      "HK_LEN_QUAL int64_t hk_len_neg(int64_t a, int "
      "*bad) { if (a == INT64_MIN) { *bad = 1; return 0; } return -a; }\n"
      "HK_LEN_QUAL int64_t hk_len_u64(uint64_t a, int "
      "*bad) { if (a > (uint64_t)INT64_MAX) { *bad = 1; return 0; } return "
      "(int64_t)a; }\n"
      "HK_LEN_QUAL int64_t hk_len_size(size_t a, int "
      "*bad) { if (a > (size_t)INT64_MAX) { *bad = 1; return 0; } return "
      "(int64_t)a; }\n\n";
  static const char mark[] = "HK_LEN_QUAL";
  for (const char *t = text, *q; *t; t = q + sizeof mark - 1) {
    q = strstr(t, mark);
    if (!q) {
      hku_buf_put(o, t);
      break;
    }
    hku_buf_putn(o, t, (size_t)(q - t));
    hku_buf_put(o, qual);
  }
}

void hkc_emit_len_helpers(hku_buf *o) {
  put_len_helpers(o, "HK_MAYBE_UNUSED static inline");
}

void hkc_emit_len_helpers_cuda(hku_buf *o) {
  put_len_helpers(o,
                  "static __device__ __forceinline__ __attribute__((unused))");
}
