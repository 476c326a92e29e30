/* lex.c — lexical checks on the C that kernel authors write.
 *
 * Bodies and expressions are pasted into generated C, so anything that could
 * escape that place is refused before any compiler sees it: preprocessor
 * lines (also spelled %: or ??=), line continuations that could splice a
 * comment into generated code, unterminated comments and literals,
 * unbalanced brackets, asm, extern, and names reserved for generated code.
 * Calls are limited to the math functions of mathfns.h, so a body cannot
 * reach the C library even before the linker would refuse it. Each problem
 * is reported at its position in the kernel file.
 */
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "kernel.h"
#include "mathfns.h"

/* ---- Name tables -------------------------------------------------------- */

/* What a call of name (len chars) that kernel code may not make is
 * written as here: CUDA's and C++'s min and max, C's abs; NULL for
 * others. */
static const char *call_hint(const char *name, size_t len) {
  static const char *const near[][2] = {
      {"min", "fmin (fminf), or a < b ? a : b for integers"},
      {"max", "fmax (fmaxf), or a > b ? a : b for integers"},
      {"abs", "fabs (fabsf), or x < 0 ? -x : x for integers"},
      {"labs", "x < 0 ? -x : x"},
      {"llabs", "x < 0 ? -x : x"}};
  for (size_t q = 0; q < sizeof near / sizeof near[0]; q++)
    if (strlen(near[q][0]) == len && !memcmp(near[q][0], name, len))
      return near[q][1];
  return NULL;
}

static const char *const c_keywords[] = {
    "auto", "break", "case", "char", "const", "continue", "default", "do",
    "double", "else", "enum", "extern", "float", "for", "goto", "if",
    "inline", "int", "long", "register", "restrict", "return", "short",
    "signed", "sizeof", "static", "struct", "switch", "typedef", "union",
    "unsigned", "void", "volatile", "while", "_Alignas", "_Alignof",
    "_Atomic", "_Bool", "_Complex", "_Generic", "_Imaginary", "_Noreturn",
    "_Static_assert", "_Thread_local", "asm", "__asm", "__asm__", "typeof",
    "__typeof__", "__attribute__", "__extension__", "__inline", "__restrict",
    "__thread", NULL};

static const char *const cxx_keywords[] = {
    "alignas", "alignof", "and", "and_eq", "bitand", "bitor", "bool",
    "catch", "char16_t", "char32_t", "class", "compl", "const_cast",
    "constexpr", "decltype", "delete", "dynamic_cast", "explicit", "export",
    "false", "friend", "mutable", "namespace", "new", "noexcept", "not",
    "not_eq", "nullptr", "operator", "or", "or_eq", "private", "protected",
    "public", "reinterpret_cast", "static_assert", "static_cast", "template",
    "this", "thread_local", "throw", "true", "try", "typeid", "typename",
    "using", "virtual", "wchar_t", "xor", "xor_eq", NULL};

/* Keywords that may appear in an expression (casts, sizeof, _Generic). */
static const char *const expr_keywords[] = {
    "char", "const", "double", "float", "int", "long", "short", "signed",
    "sizeof", "unsigned", "void", "volatile", "_Alignof", "_Bool",
    "_Generic", "default", NULL};

#define NAME(n) #n,
#define NAME2(n, sig) #n,
static const char *const math_functions[] = {HKC_MATH_FUNCTIONS(NAME2) NULL};
static const char *const math_macros[] = {HKC_MATH_MACROS(NAME) NULL};
static const char *const math_constants[] = {HKC_MATH_CONSTANTS(NAME) NULL};
static const char *const type_names[] = {HKC_TYPE_NAMES(NAME) NULL};
static const char *const conv_functions[] = {HKC_CONV_FUNCTIONS(NAME) NULL};
#undef NAME
#undef NAME2

/* What a rows kernel's "cuda" body may name besides its parameters: its
 * lane and the row's lanes (emit_rows.c), and the helpers of the CUDA
 * prelude (prelude.c, put_cuda_row_helpers), which it may call. */
static const char *const rows_cuda_names[] = {
    "hk_lane",    "hk_lanes",   "hk_row_sync", "hk_row_sum",   "hk_row_max",
    "hk_row_min", "hk_row_bcast", "hk_row_tree16", NULL};

static int in_list(const char *const *list, const char *s, size_t n) {
  for (; *list; list++)
    if (strlen(*list) == n && memcmp(*list, s, n) == 0) return 1;
  return 0;
}

/* name is a math function: a listed name, or a listed name + "f". */
static int is_math_fn(const char *s, size_t n) {
  if (in_list(math_functions, s, n) || in_list(math_macros, s, n)) return 1;
  return n > 1 && s[n - 1] == 'f' && in_list(math_functions, s, n - 1);
}

int hkc_is_math_function(const char *name) {
  return is_math_fn(name, strlen(name));
}

int hkc_is_math_name(const char *name) {
  size_t n = strlen(name);
  return is_math_fn(name, n) || in_list(math_constants, name, n);
}

int hkc_is_c_keyword(const char *name) {
  return in_list(c_keywords, name, strlen(name));
}

int hkc_is_cxx_keyword(const char *name) {
  return in_list(cxx_keywords, name, strlen(name));
}

int hkc_is_type_name(const char *name) {
  return in_list(type_names, name, strlen(name));
}

/* ---- Positions and reports ------------------------------------------------ */

void hkc_vreport(hku_diags *d, const char *path, int line, int col,
                 const char *field, const char *fmt, va_list ap) {
  hku_buf m = HKU_BUF_INIT;
  if (field && *field) hku_buf_printf(&m, "%s: ", field);
  hku_buf_vprintf(&m, fmt, ap);
  hku_diag_add(d, HKU_ERROR, path, line, col, "%s",
               m.oom ? "out of memory" : hku_buf_str(&m));
  hku_buf_free(&m);
}

void hkc_src_pos(const hkj_doc *doc, const hkc_src *s, size_t off, int *line,
                 int *col) {
  if (!s->nsegs) {
    *line = *col = 0;
    return;
  }
  size_t k = 0;
  while (k + 1 < s->nsegs && s->segs[k + 1].start <= off) k++;
  const hkj_node *node = s->segs[k].node;
  size_t local = off - s->segs[k].start;
  if (local > node->str_len) local = node->str_len; /* the joining newline */
  hkj_pos(doc, hkj_str_offset(doc, node, local), line, col);
}

/* ---- Tokens ---------------------------------------------------------------- */

typedef enum { TK_IDENT, TK_NUMBER, TK_LITERAL, TK_PUNCT } tk_kind;

typedef struct token {
  tk_kind kind;
  size_t off, len;
} token;

typedef struct checker {
  const hkj_doc *doc;
  const hkc_src *src;
  hku_diags *d;
  int errors;
  token *toks;
  size_t ntoks, cap;
  int cuda_shared; /* the code is compiled as CUDA C++ too */
  /* For each ')' token, the index of the '(' it closes (parentheses only,
   * as if no other bracket were there); SIZE_MAX when none does. */
  size_t *open_of;
  /* Functions the code may call besides the math ones: the kernel's
   * helpers (NULL-terminated), or NULL. */
  const char *const *callables;
  /* Parameters whose values this code sees as floats (hkc_float_names),
   * or NULL: the f16 and bf16 conversions may not take or make them. */
  const char *const *floats;
} checker;

/* Stop reporting after this many problems in one piece of code. */
#define MAX_ERRORS_PER_SOURCE 8

/* Reports a problem at byte off of the checked code (only the first
 * MAX_ERRORS_PER_SOURCE are kept; all are counted). */
static void err(checker *c, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static void err(checker *c, size_t off, const char *fmt, ...) {
  c->errors++;
  if (c->errors > MAX_ERRORS_PER_SOURCE) return;
  int line, col;
  hkc_src_pos(c->doc, c->src, off, &line, &col);
  va_list ap;
  va_start(ap, fmt);
  hkc_vreport(c->d, c->doc->path, line, col, c->src->field, fmt, ap);
  va_end(ap);
}

/* Appends a token. HK_OK or HK_ENOMEM. */
static int push(checker *c, tk_kind kind, size_t off, size_t len) {
  if (c->ntoks == c->cap) {
    size_t cap = c->cap ? c->cap * 2 : 64;
    token *t = realloc(c->toks, cap * sizeof *t);
    if (!t) return HK_ENOMEM;
    c->toks = t;
    c->cap = cap;
  }
  c->toks[c->ntoks++] = (token){kind, off, len};
  return HK_OK;
}

static int is_ident_start(char ch) {
  return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || ch == '_';
}

static int is_ident_char(char ch) {
  return is_ident_start(ch) || (ch >= '0' && ch <= '9');
}

/* Punctuators, longest first within each starting character. */
static const char *const puncts[] = {
    "<<=", ">>=", "...", "->", "++", "--", "<<", ">>", "<=", ">=", "==",
    "!=", "&&", "||", "*=", "/=", "%=", "+=", "-=", "&=", "^=", "|=", "[",
    "]", "(", ")", "{", "}", ".", "&", "*", "+", "-", "~", "!", "/", "%",
    "<", ">", "^", "|", "?", ":", ";", "=", ",", NULL};

/* The string or character literal at *p (with its prefix L, u, U or
 * u8), pushed as one token; *p moves past it. HK_OK, HK_ESCHEMA (never
 * closed, reported), or HK_ENOMEM. */
static int literal(checker *c, size_t *at) {
  const char *t = c->src->text;
  size_t n = c->src->len, p = *at, start = p;
  while (t[p] != '"' && t[p] != '\'') p++;
  char q = t[p++];
  while (p < n && t[p] != q && t[p] != '\n') {
    if (t[p] == '\\') {
      if (p + 1 < n && t[p + 1] == '\n') break; /* reported by the caller */
      /* a universal character name: tcc stores "\u00e9" as one Latin-1
       * byte, gcc as two UTF-8 bytes (the character itself is the same
       * bytes on every tier) */
      if (p + 1 < n && (t[p + 1] == 'u' || t[p + 1] == 'U'))
        err(c, p, "'\\%c' (a universal character name) is not allowed in a "
                  "literal: the tiers encode it differently; write the "
                  "character itself (UTF-8)",
            t[p + 1]);
      p++;
    }
    p++;
  }
  if (p >= n || t[p] != q) {
    err(c, start, "this %s literal is never closed",
        q == '"' ? "string" : "character");
    return HK_ESCHEMA;
  }
  *at = ++p;
  return push(c, TK_LITERAL, start, p - start);
}

/* Splits the text into tokens, reporting what may not appear at all.
 * HK_OK when the token list is usable for further checks; HK_ESCHEMA when
 * it is not (a literal or comment never closed, reported); HK_ENOMEM. */
static int tokenize(checker *c) {
  const char *t = c->src->text;
  size_t n = c->src->len, p = 0;
  /* Trigraphs are replaced before anything else in C, even in literals. */
  for (size_t i = 0; i + 2 < n; i++)
    if (t[i] == '?' && t[i + 1] == '?' && strchr("=(/)'<!>-", t[i + 2]))
      err(c, i, "trigraph '??%c' is not allowed", t[i + 2]);
  while (p < n) {
    char ch = t[p];
    if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r' || ch == '\v' ||
        ch == '\f') {
      p++;
    } else if (ch == '\\') {
      if (p + 1 < n && (t[p + 1] == '\n' || t[p + 1] == '\r'))
        err(c, p, "%s",
            "a backslash at the end of a line (line continuation) is not "
            "allowed");
      else
        err(c, p, "%s", "stray '\\' outside a string or character literal");
      p++;
    } else if (ch == '/' && p + 1 < n && t[p + 1] == '/') {
      while (p < n && t[p] != '\n') {
        if (t[p] == '\\' && p + 1 < n && t[p + 1] == '\n')
          err(c, p, "%s",
              "a backslash at the end of a comment line would continue the "
              "comment onto the next line");
        p++;
      }
    } else if (ch == '/' && p + 1 < n && t[p + 1] == '*') {
      const char *e = NULL;
      for (size_t q = p + 2; q + 1 < n && !e; q++)
        if (t[q] == '*' && t[q + 1] == '/') e = t + q;
      if (!e) {
        err(c, p, "%s", "this comment is never closed ('*/' is missing)");
        return HK_ESCHEMA;
      }
      p = (size_t)(e - t) + 2;
    } else if (ch == '"' || ch == '\'' ||
               ((ch == 'L' || ch == 'u' || ch == 'U') && p + 1 < n &&
                (t[p + 1] == '"' || t[p + 1] == '\'')) ||
               (ch == 'u' && p + 2 < n && t[p + 1] == '8' && t[p + 2] == '"')) {
      int rc = literal(c, &p);
      if (rc != HK_OK) return rc;
    } else if (is_ident_start(ch)) {
      size_t start = p;
      while (p < n && is_ident_char(t[p])) p++;
      if (push(c, TK_IDENT, start, p - start) != HK_OK) return HK_ENOMEM;
    } else if ((ch >= '0' && ch <= '9') ||
               (ch == '.' && p + 1 < n && t[p + 1] >= '0' && t[p + 1] <= '9')) {
      size_t start = p;
      while (p < n) {
        if ((t[p] == 'e' || t[p] == 'E' || t[p] == 'p' || t[p] == 'P') &&
            p + 1 < n && (t[p + 1] == '+' || t[p + 1] == '-'))
          p += 2;
        else if (is_ident_char(t[p]) || t[p] == '.')
          p++;
        else
          break;
      }
      if (push(c, TK_NUMBER, start, p - start) != HK_OK) return HK_ENOMEM;
    } else if (ch == '#' || (ch == '%' && p + 1 < n && t[p + 1] == ':')) {
      size_t q = p + (ch == '#' ? 1 : 2);
      while (q < n && (t[q] == ' ' || t[q] == '\t')) q++;
      if (n - q >= 7 && memcmp(t + q, "include", 7) == 0)
        err(c, p, "%s",
            "#include is not allowed: the math functions are already "
            "declared, and nothing else may be used");
      else
        err(c, p, "%s",
            "preprocessor lines (#define, #if, #pragma, ...) are not "
            "allowed");
      while (p < n && t[p] != '\n') p++; /* skip the rest of the line */
    } else if ((ch == '<' && p + 1 < n && (t[p + 1] == ':' || t[p + 1] == '%')) ||
               (ch == ':' && p + 1 < n && t[p + 1] == '>') ||
               (ch == '%' && p + 1 < n && t[p + 1] == '>')) {
      err(c, p, "%s", "digraphs (<: :> <% %> %:) are not allowed");
      p += 2;
    } else {
      const char *const *pp;
      for (pp = puncts; *pp; pp++) {
        size_t l = strlen(*pp);
        if (n - p >= l && memcmp(t + p, *pp, l) == 0) break;
      }
      if (!*pp) {
        if ((unsigned char)ch >= 0x80)
          err(c, p, "%s",
              "a non-ASCII character outside a string or comment");
        else
          err(c, p, "unexpected character '%c'", ch);
        p++;
        /* skip the rest of a multi-byte character */
        while (p < n && ((unsigned char)t[p] & 0xC0) == 0x80) p++;
        continue;
      }
      size_t l = strlen(*pp);
      if (push(c, TK_PUNCT, p, l) != HK_OK) return HK_ENOMEM;
      p += l;
    }
  }
  return HK_OK;
}

static int tok_is(const checker *c, const token *k, const char *s) {
  size_t l = strlen(s);
  return k->len == l && memcmp(c->src->text + k->off, s, l) == 0;
}

/* 1 when the declaration at token i ("static") is a static const table:
 * const follows, and every '*' before the declarator's end (=, [, ;, a
 * comma) is itself const ("static const float *const p" is constant;
 * "static const float *p" is a pointer the code may change, state that
 * outlives an element or a row). */
static int static_const_table(const checker *c, size_t i) {
  if (i + 1 >= c->ntoks || !tok_is(c, &c->toks[i + 1], "const")) return 0;
  for (size_t j = i + 2; j < c->ntoks; j++) {
    const token *t = &c->toks[j];
    if (tok_is(c, t, "=") || tok_is(c, t, "[") || tok_is(c, t, ";") ||
        tok_is(c, t, ","))
      return 1;
    if (tok_is(c, t, "*") &&
        !(j + 1 < c->ntoks && tok_is(c, &c->toks[j + 1], "const")))
      return 0;
  }
  return 1;
}

/* Reports brackets that do not pair up. HK_OK or HK_ENOMEM. */
static int check_balance(checker *c) {
  size_t *stack = malloc((c->ntoks + 1) * sizeof *stack);
  size_t depth = 0;
  if (!stack) return HK_ENOMEM;
  const char *t = c->src->text;
  for (size_t i = 0; i < c->ntoks; i++) {
    const token *k = &c->toks[i];
    if (k->kind != TK_PUNCT || k->len != 1) continue;
    char ch = t[k->off];
    if (ch == '(' || ch == '[' || ch == '{') {
      stack[depth++] = k->off;
    } else if (ch == ')' || ch == ']' || ch == '}') {
      char want = ch == ')' ? '(' : ch == ']' ? '[' : '{';
      if (depth == 0) {
        err(c, k->off, "'%c' has no matching opening bracket", ch);
        break;
      }
      size_t open = stack[--depth];
      if (t[open] != want) {
        err(c, k->off, "'%c' closes the '%c' opened before it", ch, t[open]);
        break;
      }
    }
  }
  if (depth)
    err(c, stack[depth - 1], "'%c' is never closed", t[stack[depth - 1]]);
  free(stack);
  return HK_OK;
}

/* Fills c->open_of. HK_OK or HK_ENOMEM. */
static int match_parens(checker *c) {
  c->open_of = malloc((c->ntoks + 1) * sizeof *c->open_of);
  size_t *stack = malloc((c->ntoks + 1) * sizeof *stack);
  if (!c->open_of || !stack) {
    free(stack);
    return HK_ENOMEM;
  }
  size_t depth = 0;
  for (size_t i = 0; i < c->ntoks; i++) {
    c->open_of[i] = SIZE_MAX;
    if (tok_is(c, &c->toks[i], "("))
      stack[depth++] = i;
    else if (tok_is(c, &c->toks[i], ")") && depth)
      c->open_of[i] = stack[--depth];
  }
  free(stack);
  return HK_OK;
}

/* Words a cast's type name may hold. */
static const char *const type_words[] = {
    "char", "const", "double", "float", "int", "long", "short", "signed",
    "unsigned", "void", "volatile", "_Bool", "restrict", NULL};

/* Functions of hk's own that code may call besides the math ones (the
 * preludes define them): where(c, a, b), a branch-free c ? a : b. Not
 * reserved as names, so that files naming a parameter "where" keep
 * loading. */
static const char *const builtin_functions[] = {"where", NULL};

/* 1 when code may call the function named by s (n bytes): a math function,
 * a builtin or one of the kernel's helpers. */
static int is_callable(const checker *c, const char *s, size_t n) {
  return is_math_fn(s, n) || in_list(builtin_functions, s, n) ||
         (c->callables && in_list(c->callables, s, n));
}

/* Token i is a '(' that follows ')' or ']': unless the parenthesised group
 * before it is a cast's type name, or a math function's name, the code
 * calls something through an expression, e.g. (system)("ls") or (*f)(x).
 * Such calls could reach any function, so they are refused. */
static void check_indirect_call(checker *c, size_t i) {
  const token *prev = &c->toks[i - 1];
  if (tok_is(c, prev, "]")) {
    err(c, prev->off, "%s",
        "calls through an array element, which is not allowed");
    return;
  }
  if (!tok_is(c, prev, ")")) return;
  /* The '(' that opens the group before token i (found once for all in
   * match_parens: scanning back from every call was quadratic). */
  size_t j = c->open_of[i - 1];
  if (j == SIZE_MAX) return; /* unbalanced: reported elsewhere */
  int is_type = j + 1 < i - 1;
  for (size_t q = j + 1; q < i - 1 && is_type; q++) {
    const token *t = &c->toks[q];
    const char *ts = c->src->text + t->off;
    is_type = (t->kind == TK_IDENT &&
               (in_list(type_words, ts, t->len) ||
                in_list(type_names, ts, t->len) ||
                (t->len == 1 && ts[0] >= 'A' && ts[0] <= 'Z'))) ||
              tok_is(c, t, "*");
  }
  if (is_type) return;
  if (j + 2 == i - 1 && c->toks[j + 1].kind == TK_IDENT &&
      is_callable(c, c->src->text + c->toks[j + 1].off, c->toks[j + 1].len))
    return;
  if (j + 2 == i - 1 && c->toks[j + 1].kind == TK_IDENT) {
    const token *t = &c->toks[j + 1];
    const char *ts = c->src->text + t->off;
    const char *hint = call_hint(ts, t->len);
    err(c, t->off,
        "calls '%.*s', which is not allowed: kernel code may call only the "
        "C99 <math.h> functions (see schemas/README.md)%s%s",
        (int)t->len, ts, hint ? "; here: " : "", hint ? hint : "");
    return;
  }
  err(c, c->toks[j].off, "%s",
      "calls a function through an expression, which is not allowed");
}

static const char *const statement_keywords[] = {
    "if", "else", "for", "while", "do", "switch", "case", "return", "goto",
    "break", "continue", "typedef", "static", "register", "auto", NULL};

/* Checks each token against the rules of the mode. */
/* The token before index i that opens the bracket closed at i (a ']'),
 * or SIZE_MAX. */
static size_t open_bracket(const checker *c, size_t i) {
  size_t depth = 0;
  for (size_t j = i + 1; j-- > 0;) {
    if (tok_is(c, &c->toks[j], "]")) depth++;
    else if (tok_is(c, &c->toks[j], "[") && --depth == 0) return j;
  }
  return SIZE_MAX;
}

/* A call of the conversion at token i (followed by '('): hk_f16_to_f32 or
 * hk_bf16_to_f32 of a parameter the code sees as a float, or the bits that
 * hk_f32_to_f16 or hk_f32_to_bf16 make stored straight into one. C would
 * convert the float to or from uint16_t silently. */
static void check_conversion(checker *c, size_t i, const char *name) {
  const char *t = c->src->text;
  const token *toks = c->toks;
  if (strstr(name, "_to_f32")) {
    const token *a = i + 2 < c->ntoks ? &toks[i + 2] : NULL;
    if (!a || a->kind != TK_IDENT || !in_list(c->floats, t + a->off, a->len) ||
        (i + 3 < c->ntoks && (tok_is(c, &toks[i + 3], "(") ||
                              tok_is(c, &toks[i + 3], ".") ||
                              tok_is(c, &toks[i + 3], "->"))))
      return;
    err(c, a->off,
        "%s takes f16 or bf16 bits (a uint16_t), but '%.*s' holds floats "
        "here: f32 and f64 values, f16 and bf16 scalars, and in "
        "elementwise, reduction and rows code every f16 and bf16 value are "
        "floats already (schemas/README.md, section 4.1); use '%.*s' as it "
        "is",
        name, (int)a->len, t + a->off, (int)a->len, t + a->off);
    return;
  }
  static const char *const assign[] = {"=", "+=", "-=", "*=", "/=", NULL};
  int is_assign = 0;
  for (const char *const *a = assign; i >= 2 && *a; a++)
    is_assign |= tok_is(c, &toks[i - 1], *a);
  if (!is_assign) return;
  size_t j = i - 2;
  if (tok_is(c, &toks[j], "]")) {
    j = open_bracket(c, j);
    if (j == SIZE_MAX || j == 0) return;
    j--;
  }
  const token *p = &toks[j];
  if (p->kind != TK_IDENT || !in_list(c->floats, t + p->off, p->len)) return;
  /* a member of that name (s.y, s->y) is not the parameter */
  if (j > 0 && (tok_is(c, &toks[j - 1], ".") || tok_is(c, &toks[j - 1], "->")))
    return;
  err(c, toks[i].off,
      "stores the bits %s returns (a uint16_t) in '%.*s', which holds a "
      "float here: assign the float itself; hk rounds what an f16 or bf16 "
      "parameter stores (schemas/README.md, section 4.1)",
      name, (int)p->len, t + p->off);
}

static void check_tokens(checker *c, hkc_code_mode mode,
                         const char *const *idents, const char *what) {
  const char *t = c->src->text;
  for (size_t i = 0; i < c->ntoks; i++) {
    const token *k = &c->toks[i];
    const char *s = t + k->off;
    if (k->kind == TK_PUNCT) {
      if (mode == HKC_CODE_EXPR && (tok_is(c, k, ";") || tok_is(c, k, "{") ||
                                    tok_is(c, k, "}")))
        err(c, k->off, "'%c' cannot appear in an expression", s[0]);
      if (mode != HKC_CODE_RAW_CUDA && tok_is(c, k, "(") && i > 0)
        check_indirect_call(c, i);
      continue;
    }
    if (k->kind != TK_IDENT) continue;
    char name[128];
    size_t l = k->len < sizeof name - 1 ? k->len : sizeof name - 1;
    memcpy(name, s, l);
    name[l] = '\0';
    const token *prev = i ? &c->toks[i - 1] : NULL;
    const token *next = i + 1 < c->ntoks ? &c->toks[i + 1] : NULL;
    int is_member = prev && (tok_is(c, prev, ".") || tok_is(c, prev, "->"));
    if (is_member) {
      if (mode != HKC_CODE_RAW_CUDA && next && tok_is(c, next, "("))
        err(c, k->off, "calls '%s' through a member, which is not allowed",
            name);
      continue;
    }

    if (!strcmp(name, "asm") || !strcmp(name, "__asm") ||
        !strcmp(name, "__asm__")) {
      err(c, k->off, "%s", "asm is not allowed");
      continue;
    }
    if (!strcmp(name, "extern")) {
      err(c, k->off, "%s",
          "extern is not allowed: a body can use only its parameters and the "
          "math functions");
      continue;
    }
    if (!strcmp(name, "__attribute__") || !strcmp(name, "__attribute")) {
      err(c, k->off, "%s",
          "__attribute__ is not allowed: attributes can run code the body "
          "does not call (constructor, cleanup, ifunc)");
      continue;
    }
    if (!strcmp(name, "goto") && next && tok_is(c, next, "*")) {
      err(c, k->off, "%s",
          "a computed goto ('goto *') is not allowed: it can jump to any "
          "address");
      continue;
    }
    int is_conv = in_list(conv_functions, s, k->len) ||
                  (mode == HKC_CODE_ROWS_CUDA &&
                   in_list(rows_cuda_names, s, k->len));
    if (c->floats && next && tok_is(c, next, "(") &&
        in_list(conv_functions, s, k->len))
      check_conversion(c, i, name);
    if (!is_conv && (!strncmp(name, "hk_", 3) || !strncmp(name, "HK_", 3))) {
      err(c, k->off, "'%s' is reserved: names beginning with hk_ or HK_ "
                     "belong to generated code", name);
      continue;
    }
    if (c->cuda_shared && in_list(cxx_keywords, s, k->len) &&
        !in_list(c_keywords, s, k->len)) {
      err(c, k->off, "'%s' is a C++ keyword, and this code is compiled as "
                     "CUDA C++ too (the kernel targets cuda)", name);
      continue;
    }
    if (mode == HKC_CODE_EXPR && in_list(statement_keywords, s, k->len)) {
      err(c, k->off, "'%s' cannot appear in an expression", name);
      continue;
    }
    if (mode == HKC_CODE_BODY) {
      if (!strcmp(name, "return") || !strcmp(name, "goto")) {
        err(c, k->off,
            "'%s' is not allowed in an elementwise body, which runs once per "
            "element (use 'break' to end this element early)",
            name);
        continue;
      }
      /* a static const table cannot carry state from one element to
       * another (as in rows bodies and helpers) */
      if ((!strcmp(name, "static") && !static_const_table(c, i)) ||
          !strcmp(name, "_Thread_local") || !strcmp(name, "__thread")) {
        err(c, k->off,
            "'%s' variables are not allowed in an elementwise body: elements "
            "run in any order, on any thread (a static const table is "
            "allowed)",
            name);
        continue;
      }
    }
    if ((mode == HKC_CODE_ROWS || mode == HKC_CODE_ROWS_CUDA) &&
        ((!strcmp(name, "static") && !static_const_table(c, i)) ||
         !strcmp(name, "_Thread_local") || !strcmp(name, "__thread"))) {
      /* rows and index-space bodies and the helpers: rows and indices run
       * on any thread, in any order, so a variable that outlives one
       * would make results depend on the thread count (a static const
       * table cannot) */
      err(c, k->off,
          "'%s' variables are not allowed here: this code runs for many "
          "rows or indices at once, on any thread (keep state in locals or "
          "scratch arrays)",
          name);
      continue;
    }
    if (mode == HKC_CODE_STMTS) {
      if (!strcmp(name, "return") || !strcmp(name, "goto")) {
        err(c, k->off,
            "'%s' is not allowed here: these statements update variables "
            "(a from b in combine, the result parameters in finalize)",
            name);
        continue;
      }
      if (!strcmp(name, "static") || !strcmp(name, "_Thread_local") ||
          !strcmp(name, "__thread")) {
        err(c, k->off,
            "'%s' variables are not allowed in a reduction's code: it runs "
            "in any order, on any thread",
            name);
        continue;
      }
    }
    /* A name code may call stands only in a call: f(...), or (f)(...).
     * Declared as a variable (a function pointer through a typedef or
     * __typeof__), it would shadow the function and call whatever
     * address it holds; its address taken (&f) could be passed on. */
    /* where() is a function-like macro: where(...) is never a call of a
     * variable, so where is a name as any other (a parameter may be
     * called so), but for (where)(...), which would call the variable */
    const int paren_call = prev && next && tok_is(c, prev, "(") &&
                           tok_is(c, next, ")") && i + 2 < c->ntoks &&
                           tok_is(c, &c->toks[i + 2], "(");
    const int only_macro = in_list(builtin_functions, s, k->len) &&
                           !is_math_fn(s, k->len) &&
                           !(c->callables && in_list(c->callables, s, k->len));
    if (mode != HKC_CODE_RAW_CUDA && only_macro && paren_call) {
      err(c, k->off,
          "'(%s)(...)' would call a variable named %s, not hk's %s(); "
          "write %s(...)",
          name, name, name, name);
      continue;
    }
    if (mode != HKC_CODE_RAW_CUDA && !only_macro &&
        is_callable(c, s, k->len) && !(next && tok_is(c, next, "(")) &&
        !paren_call) {
      err(c, k->off,
          "'%s' is a function code may call, and may stand only in a call "
          "('%s(...)'): declared or used as a value it could stand for any "
          "code",
          name, name);
      continue;
    }
    int is_kw = in_list(c_keywords, s, k->len);
    if (mode != HKC_CODE_RAW_CUDA && !is_kw && next &&
        tok_is(c, next, "(") && !is_callable(c, s, k->len) && !is_conv) {
      const char *hint = call_hint(s, k->len);
      err(c, k->off,
          "calls '%s', which is not allowed: kernel code may call only the "
          "C99 <math.h> functions%s (see schemas/README.md)%s%s",
          name,
          c->callables && c->callables[0] ? " and the kernel's helpers" : "",
          hint ? "; here: " : "", hint ? hint : "");
      continue;
    }
    if (mode == HKC_CODE_EXPR && idents) {
      int ok = (is_kw && in_list(expr_keywords, s, k->len)) ||
               is_callable(c, s, k->len) || in_list(math_constants, s, k->len) ||
               in_list(type_names, s, k->len) || in_list(idents, s, k->len) ||
               is_conv;
      if (!ok) err(c, k->off, "'%s' is not one of %s", name, what);
    }
  }
}

int hkc_check_code(const hkj_doc *doc, const hkc_src *src, hkc_code_mode mode,
                   const char *const *idents, const char *what,
                   unsigned targets, hku_diags *d) {
  return hkc_check_code_calls(doc, src, mode, idents, what, targets, NULL, d);
}

int hkc_check_code_calls(const hkj_doc *doc, const hkc_src *src,
                         hkc_code_mode mode, const char *const *idents,
                         const char *what, unsigned targets,
                         const char *const *callables, hku_diags *d) {
  return hkc_check_code_floats(doc, src, mode, idents, what, targets,
                               callables, NULL, d);
}

int hkc_check_code_floats(const hkj_doc *doc, const hkc_src *src,
                          hkc_code_mode mode, const char *const *idents,
                          const char *what, unsigned targets,
                          const char *const *callables,
                          const char *const *floats, hku_diags *d) {
  checker c = {doc, src, d, 0, NULL, 0, 0, 0, NULL, callables, floats};
  c.cuda_shared = (targets & HK_TARGET_CUDA) &&
                  (mode == HKC_CODE_BODY || mode == HKC_CODE_EXPR ||
                   mode == HKC_CODE_STMTS ||
                   mode == HKC_CODE_ROWS || mode == HKC_CODE_ROWS_CUDA);
  int rc = tokenize(&c);
  if (rc == HK_OK) rc = check_balance(&c);
  if (rc == HK_OK) rc = match_parens(&c);
  if (rc == HK_OK) {
    if (mode == HKC_CODE_EXPR && c.ntoks == 0)
      err(&c, 0, "%s", "is empty: an expression is required");
    check_tokens(&c, mode, idents, what);
  }
  free(c.toks);
  free(c.open_of);
  if (rc == HK_ENOMEM) return rc;
  return c.errors ? HK_ESCHEMA : HK_OK;
}

/* ---- Helpers for the emitters --------------------------------------------- */

char *hkc_expr_oneline(const hkc_src *src) {
  const char *t = src->text;
  size_t n = src->len;
  char *o = malloc(n + 1);
  if (!o) return NULL;
  size_t j = 0;
  for (size_t p = 0; p < n;) {
    if (t[p] == '"' || t[p] == '\'') {
      char q = t[p];
      o[j++] = t[p++];
      while (p < n && t[p] != q) {
        if (t[p] == '\\' && p + 1 < n) o[j++] = t[p++];
        o[j++] = t[p++];
      }
      if (p < n) o[j++] = t[p++];
    } else if (t[p] == '/' && p + 1 < n && t[p + 1] == '/') {
      while (p < n && t[p] != '\n') p++;
      o[j++] = ' ';
    } else if (t[p] == '/' && p + 1 < n && t[p + 1] == '*') {
      p += 2;
      while (p + 1 < n && !(t[p] == '*' && t[p + 1] == '/')) p++;
      p += 2;
      o[j++] = ' ';
    } else if (t[p] == '\n' || t[p] == '\r' || t[p] == '\t') {
      o[j++] = ' ';
      p++;
    } else {
      o[j++] = t[p++];
    }
  }
  /* trim */
  size_t a = 0;
  while (a < j && o[a] == ' ') a++;
  while (j > a && o[j - 1] == ' ') j--;
  memmove(o, o + a, j - a);
  o[j - a] = '\0';
  return o;
}

/* Tokenizes already-checked code without reporting; returns the token count
 * (0 on any failure) and the tokens in *out (free them). */
static size_t quiet_tokens(const hkc_src *src, token **out) {
  *out = NULL;
  if (!src->text) return 0;
  hku_diags quiet = HKU_DIAGS_INIT;
  hkj_doc none = {0};
  hkc_src nopos = *src; /* no positions: nothing is reported */
  nopos.nsegs = 0;
  checker c = {&none, &nopos, &quiet, 0, NULL, 0, 0, 0, NULL, NULL, NULL};
  size_t n = 0;
  if (tokenize(&c) == 0) {
    *out = c.toks;
    n = c.ntoks;
  } else {
    free(c.toks);
  }
  hku_diags_free(&quiet);
  return n;
}

size_t hkc_code_int_counters(const hkc_src *src, size_t **offs) {
  *offs = NULL;
  token *t;
  size_t n = quiet_tokens(src, &t), count = 0;
  const char *x = src->text;
#define IS(i, s) \
  ((i) < n && t[i].len == strlen(s) && memcmp(x + t[i].off, s, t[i].len) == 0)
  for (size_t i = 0; i + 4 < n; i++) {
    /* for ( int NAME = ... ; with no ',', '*' or '[' before the ';' at
     * the depth of the parenthesis: one plain int declared */
    if (!IS(i, "for") || !IS(i + 1, "(") || !IS(i + 2, "int") ||
        t[i + 3].kind != TK_IDENT || !IS(i + 4, "="))
      continue;
    int depth = 0, plain = 1;
    size_t j = i + 5;
    for (; j < n && plain; j++) {
      if (IS(j, "(") || IS(j, "[") || IS(j, "{")) depth++;
      else if (IS(j, ")") || IS(j, "]") || IS(j, "}")) depth--;
      else if (depth == 0 && IS(j, ";")) break;
      else if (depth == 0 && (IS(j, ",") || IS(j, "*") || IS(j, "[")))
        plain = 0;
      if (depth < 0) plain = 0;
    }
    if (!plain || j >= n) continue;
    size_t *grown = realloc(*offs, (count + 1) * sizeof *grown);
    if (!grown) {
      free(*offs);
      *offs = NULL;
      free(t);
      return (size_t)-1;
    }
    *offs = grown;
    (*offs)[count++] = t[i + 2].off;
  }
#undef IS
  free(t);
  return count;
}

long hkc_code_find(const hkc_src *src, const char *id) {
  token *t;
  size_t n = quiet_tokens(src, &t), l = strlen(id);
  long at = -1;
  for (size_t i = 0; i < n && at < 0; i++)
    if (t[i].kind == TK_IDENT && t[i].len == l &&
        memcmp(src->text + t[i].off, id, l) == 0)
      at = (long)t[i].off;
  free(t);
  return at;
}

int hkc_code_uses(const hkc_src *src, const char *id) {
  return hkc_code_find(src, id) >= 0;
}

int hkc_code_calls_math(const hkc_src *src) {
  token *t;
  size_t n = quiet_tokens(src, &t);
  int found = 0;
  for (size_t i = 0; i + 1 < n && !found; i++)
    found = t[i].kind == TK_IDENT && is_math_fn(src->text + t[i].off, t[i].len) &&
            t[i + 1].kind == TK_PUNCT && t[i + 1].len == 1 &&
            src->text[t[i + 1].off] == '(';
  free(t);
  return found;
}

/* Math functions that cost a few instructions (no polynomial, no libm
 * loop): what a table lookup would not beat. */
static const char *const cheap_math[] = {
    "fabs",  "sqrt",   "ceil",     "floor",   "nearbyint", "rint",
    "lrint", "llrint", "round",    "lround",  "llround",   "trunc",
    "copysign", "fdim", "fmax",    "fmin",    "fma",       "ldexp",
    "scalbn", "scalbln", "ilogb",  "logb",    "nextafter", NULL};

int hkc_code_calls_costly_math(const hkc_src *src) {
  token *t;
  size_t n = quiet_tokens(src, &t);
  int found = 0;
  for (size_t i = 0; i + 1 < n && !found; i++) {
    const char *s = src->text + t[i].off;
    size_t l = t[i].len;
    if (t[i].kind != TK_IDENT || t[i + 1].kind != TK_PUNCT ||
        t[i + 1].len != 1 || src->text[t[i + 1].off] != '(')
      continue;
    if (!in_list(math_functions, s, l)) { /* or its float spelling */
      if (l < 2 || s[l - 1] != 'f' || !in_list(math_functions, s, l - 1))
        continue;
      l--;
    }
    found = !in_list(cheap_math, s, l);
  }
  free(t);
  return found;
}

long hkc_code_find_call(const hkc_src *src, const char *name) {
  token *t;
  size_t n = quiet_tokens(src, &t), l = strlen(name);
  long at = -1;
  for (size_t i = 0; i + 1 < n && at < 0; i++)
    if (t[i].kind == TK_IDENT && t[i].len == l &&
        memcmp(src->text + t[i].off, name, l) == 0 &&
        t[i + 1].kind == TK_PUNCT && t[i + 1].len == 1 &&
        src->text[t[i + 1].off] == '(' &&
        !(i > 0 && t[i - 1].kind == TK_PUNCT &&
          (src->text[t[i - 1].off] == '.' ||
           (t[i - 1].len == 2 && src->text[t[i - 1].off] == '-'))))
      at = (long)t[i].off;
  free(t);
  return at;
}
