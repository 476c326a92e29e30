/* npy.c — the NumPy .npy format, whole (one concern, so one file of ~1000 lines):
 * reads any .npy file without trusting it, and writes them as np.save does.
 *
 * A .npy file (numpy/lib/format.py) is the magic "\x93NUMPY", two version bytes,
 * the header length (uint16 LE in 1.0, uint32 LE in 2.0 and 3.0), the header, and
 * the raw data. The header is a Python dict literal,
 *     {'descr': '<f4', 'fortran_order': False, 'shape': (3,), }
 * padded with spaces and a final '\n' so that the data starts at a multiple of 64.
 *
 * Reading trusts nothing in the file. The header goes through a small tokenizer and
 * recursive-descent parser for the Python literals that can appear in it (nesting
 * bounded, so a hostile header cannot exhaust the stack); every size is checked for
 * overflow; and no memory is allocated for the data until the header's claims have
 * been checked against the number of bytes really present, so a lying header costs
 * nothing. Every failure is one line, "NAME: what was wrong (what was expected)",
 * with any text quoted from the file made printable and cut short.
 *
 * Writing produces the very bytes NumPy's np.save (1.24) produces: the same key order,
 * the same spare spaces for growing the first axis, the same padding.
 */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* fileno, fchmod, posix_memalign, O_CLOEXEC */
#endif

#include "npy.h"

#include "diag.h"
#include "fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "npy.c assumes a little-endian host: data is read and written as it lies in memory"
#endif

#define NPY_MAGIC "\x93NUMPY"
#define NPY_MAGIC_LEN 6
#define NPY_ALIGN 64               /* NumPy's ARRAY_ALIGN; also our data alignment */
#define NPY_MAX_HEADER (16u << 20) /* a real header is < 2 KiB; refuse absurd ones unread */
#define NPY_MAX_DEPTH 32           /* bound on the header parser's recursion */
#define NPY_GROWTH_DIGITS 21       /* NumPy's GROWTH_AXIS_MAX_DIGITS */
#define NPY_QUOTE_CAP 200          /* room for npy_quote's output */
#define NPY_SHAPE_CAP (HK_NPY_MAXDIM * 22 + 4) /* "(" + 64 x "N, " + ",)" */
#define NPY_HEADER_CAP 2048        /* preamble + header np.save writes for 64 dims */

#ifdef __GNUC__
#define NPY_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define NPY_PRINTF(f, a)
#endif

/* ---- The hk types ----------------------------------------------------------- */

static const struct {
  hk_dtype_t t;
  char kind;
  size_t size;
  const char *descr; /* as np.save writes it */
} npy_hk_types[] = {
    {HK_F32, 'f', 4, "<f4"}, {HK_F64, 'f', 8, "<f8"}, {HK_I8, 'i', 1, "|i1"},
    {HK_I16, 'i', 2, "<i2"}, {HK_I32, 'i', 4, "<i4"}, {HK_I64, 'i', 8, "<i8"},
    {HK_U8, 'u', 1, "|u1"},  {HK_U16, 'u', 2, "<u2"}, {HK_U32, 'u', 4, "<u4"},
    {HK_U64, 'u', 8, "<u8"},  {HK_F16, 'f', 2, "<f2"}, {HK_BOOL, 'b', 1, "|b1"},
    /* NumPy has no bfloat16: bf16 is written as uint16 bits, and "<u2" reads
     * as u16 (the entry above matches first; the caller may take it as
     * bf16) */
    {HK_BF16, 'u', 2, "<u2"},
};
#define NPY_NTYPES (sizeof npy_hk_types / sizeof npy_hk_types[0])

const char *hk_npy_descr_of(hk_dtype_t t) {
  for (size_t k = 0; k < NPY_NTYPES; k++)
    if (npy_hk_types[k].t == t) return npy_hk_types[k].descr;
  return NULL;
}

/* Element size of an hk type, 0 if t is not one. */
static size_t npy_hk_size(hk_dtype_t t) {
  for (size_t k = 0; k < NPY_NTYPES; k++)
    if (npy_hk_types[k].t == t) return npy_hk_types[k].size;
  return 0;
}

/* ---- Messages ----------------------------------------------------------- */

/* Where a failure is reported: the file's name and the caller's list. */
typedef struct npy_err {
  const char *name;
  hku_diags *d; /* may be NULL */
} npy_err_t;

/* Adds the error NAME: <message> to e's list and returns code. */
static int npy_vfail(const npy_err_t *e, int code, const char *fmt, va_list ap)
    NPY_PRINTF(3, 0);
static int npy_vfail(const npy_err_t *e, int code, const char *fmt, va_list ap) {
  char msg[2048];
  vsnprintf(msg, sizeof msg, fmt, ap);
  hku_diag_add(e->d, HKU_ERROR, e->name, 0, 0, "%s", msg);
  return code;
}

/* A file that breaks the format, or a bad argument: HK_EINVAL. */
static int npy_fail(const npy_err_t *e, const char *fmt, ...) NPY_PRINTF(2, 3);
static int npy_fail(const npy_err_t *e, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = npy_vfail(e, HK_EINVAL, fmt, ap);
  va_end(ap);
  return rc;
}

/* Any other failure, with its code: HK_EIO (a file that cannot be opened or
 * read), HK_ENOMEM (no memory for what the file needs). */
static int npy_fail_code(const npy_err_t *e, int code, const char *fmt, ...)
    NPY_PRINTF(3, 4);
static int npy_fail_code(const npy_err_t *e, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int rc = npy_vfail(e, code, fmt, ap);
  va_end(ap);
  return rc;
}

/* Renders n bytes of file text printable for a one-line message: printable ASCII
 * as is, anything else as \xNN, cut with "..." past 40 bytes. buf holds
 * NPY_QUOTE_CAP bytes; returns buf. */
static const char *npy_quote(const char *s, size_t n, char *buf) {
  size_t lim = n > 40 ? 40 : n, o = 0;
  for (size_t k = 0; k < lim; k++) {
    unsigned char c = (unsigned char)s[k];
    if (c >= 0x20 && c < 0x7f)
      buf[o++] = (char)c;
    else
      o += (size_t)snprintf(buf + o, NPY_QUOTE_CAP - o, "\\x%02x", c);
  }
  if (n > lim) {
    memcpy(buf + o, "...", 3);
    o += 3;
  }
  buf[o] = '\0';
  return buf;
}

/* Formats a shape as Python prints a tuple: "()", "(3,)", "(2, 3)". buf holds
 * NPY_SHAPE_CAP bytes (ndim <= HK_NPY_MAXDIM). Returns the length. */
static size_t npy_format_shape(int ndim, const size_t *shape, char *buf) {
  size_t o = 0;
  buf[o++] = '(';
  for (int k = 0; k < ndim; k++)
    o += (size_t)snprintf(buf + o, NPY_SHAPE_CAP - o, k ? ", %zu" : "%zu", shape[k]);
  if (ndim == 1) buf[o++] = ',';
  buf[o++] = ')';
  buf[o] = '\0';
  return o;
}

const char *hk_npy_describe(const hk_npy_t *a, char *buf, size_t buflen) {
  if (!buf || !buflen) return "";
  if (!a || !a->descr[0]) {
    snprintf(buf, buflen, "unknown dtype");
    return buf;
  }
  const char *be = a->byteorder == '>' ? "big-endian " : "";
  size_t bits = a->itemsize * 8;
  const char *unit = strchr(a->descr, '[');
  switch (a->kind) {
  case 'b': snprintf(buf, buflen, "bool"); break;
  case 'i': snprintf(buf, buflen, "%sint%zu", be, bits); break;
  case 'u': snprintf(buf, buflen, "%suint%zu", be, bits); break;
  case 'f': snprintf(buf, buflen, "%sfloat%zu", be, bits); break;
  case 'c': snprintf(buf, buflen, "%scomplex%zu", be, bits); break;
  case 'S': snprintf(buf, buflen, "bytes (%s)", a->descr); break;
  case 'U': snprintf(buf, buflen, "str (%s)", a->descr); break;
  case 'V': snprintf(buf, buflen, "void (%s)", a->descr); break;
  case 'M': snprintf(buf, buflen, "%sdatetime64%s", be, unit ? unit : ""); break;
  case 'm': snprintf(buf, buflen, "%stimedelta64%s", be, unit ? unit : ""); break;
  case 'O': snprintf(buf, buflen, "object"); break;
  case 0: snprintf(buf, buflen, "structured dtype"); break;
  default: snprintf(buf, buflen, "dtype %s", a->descr); break;
  }
  return buf;
}

/* ---- Preamble ----------------------------------------------------------- */

typedef struct npy_prefix {
  int major, minor;
  size_t header_off; /* where the header starts: 10 (1.0) or 12 (2.0, 3.0) */
  size_t header_len;
} npy_prefix_t;

/* Checks the preamble: magic, version and header length. b holds the first `have`
 * bytes of a file of `total` bytes, with have >= min(total, 12). On success the
 * header is known to lie wholly inside the file and to be of a sane size. */
static int npy_parse_prefix(const unsigned char *b, size_t have, size_t total, npy_prefix_t *p,
                            const npy_err_t *e) {
  char q[NPY_QUOTE_CAP];
  if (total == 0)
    return npy_fail(e, "empty file (expected a .npy file, which starts with \"\\x93NUMPY\")");
  size_t m = have < NPY_MAGIC_LEN ? have : NPY_MAGIC_LEN;
  if (memcmp(b, NPY_MAGIC, m) != 0) {
    if (have >= 4 && memcmp(b, "PK\x03\x04", 4) == 0)
      return npy_fail(e, "not a .npy file (it is a zip archive, perhaps a .npz: extract "
                         "its .npy members first)");
    return npy_fail(e, "not a .npy file (bad magic string \"%s\", expected \"\\x93NUMPY\")",
                    npy_quote((const char *)b, m, q));
  }
  if (total < NPY_MAGIC_LEN + 2)
    return npy_fail(e, "truncated: the file is only %zu bytes, too short for a .npy preamble",
                    total);
  p->major = b[6];
  p->minor = b[7];
  if (p->minor != 0 || p->major < 1 || p->major > 3)
    return npy_fail(e, "unsupported .npy format version %d.%d (expected 1.0, 2.0 or 3.0)",
                    p->major, p->minor);
  size_t lensize = p->major == 1 ? 2 : 4;
  p->header_off = NPY_MAGIC_LEN + 2 + lensize;
  if (total < p->header_off)
    return npy_fail(e, "truncated: the file is only %zu bytes, too short for the %zu-byte "
                       "version %d.0 preamble", total, p->header_off, p->major);
  size_t hlen = 0;
  for (size_t k = 0; k < lensize; k++) hlen |= (size_t)b[8 + k] << (8 * k);
  p->header_len = hlen;
  if (hlen > total - p->header_off)
    return npy_fail(e, "header length %zu runs past the end of the file (only %zu bytes "
                       "follow the preamble)", hlen, total - p->header_off);
  if (hlen > NPY_MAX_HEADER)
    return npy_fail(e, "header length %zu is absurd (expected a few hundred bytes; at most "
                       "%u accepted)", hlen, NPY_MAX_HEADER);
  return 0;
}

/* ---- Header parser ------------------------------------------------------ */

/* The header is parsed as the Python literal it is: strings ('...' or "..."),
 * integers, True/False/None, tuples, lists and dicts. Floats are recognized only
 * to report them as the wrong type. Values are not built; a value records its
 * type and just enough to check the three keys we use. */

enum { NPY_V_STR, NPY_V_INT, NPY_V_FLOAT, NPY_V_BOOL, NPY_V_NONE, NPY_V_TUPLE, NPY_V_LIST,
       NPY_V_DICT };
static const char *const npy_vtype_names[] = {"a string", "an integer", "a float",
                                              "True/False", "None", "a tuple", "a list",
                                              "a dict"};

typedef struct npy_val {
  int type;         /* NPY_V_* */
  size_t at;        /* header offset of the value's first character */
  const char *str;  /* NPY_V_STR: the text between the quotes, escapes left as they are */
  size_t len;
  int escaped;      /* NPY_V_STR: it has a backslash */
  int negative;     /* NPY_V_INT: sign */
  int toobig;       /* NPY_V_INT: magnitude past SIZE_MAX */
  size_t mag;       /* NPY_V_INT: magnitude */
  int truth;        /* NPY_V_BOOL */
  size_t count;     /* NPY_V_TUPLE, NPY_V_LIST, NPY_V_DICT: number of elements */
} npy_val_t;

typedef struct npy_parser {
  const char *s; /* the header text, not NUL-terminated */
  size_t n, i;   /* its length, and the cursor */
  size_t base;   /* file offset of s[0], so that messages point into the file */
  int py2_longs; /* accept Python 2's "3L", as NumPy does for 1.0 and 2.0 files */
  const npy_err_t *e;
} npy_parser_t;

static int npy_isdigit(char c) { return c >= '0' && c <= '9'; }
static int npy_isalpha(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}
static int npy_isalnum(char c) { return npy_isalpha(c) || npy_isdigit(c); }

static int npy_at(const npy_parser_t *p, char c) { return p->i < p->n && p->s[p->i] == c; }

static void npy_ws(npy_parser_t *p) {
  while (p->i < p->n) {
    char c = p->s[p->i];
    if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f' && c != '\v') break;
    p->i++;
  }
}

/* Reports "expected X, found <what is at header offset at>". */
static int npy_syntax(const npy_parser_t *p, size_t at, const char *expected) {
  char found[24];
  if (at >= p->n) {
    snprintf(found, sizeof found, "the end of the header");
  } else {
    unsigned char c = (unsigned char)p->s[at];
    if (c > 0x20 && c < 0x7f)
      snprintf(found, sizeof found, "'%c'", c);
    else
      snprintf(found, sizeof found, "byte 0x%02x", c);
  }
  return npy_fail(p->e, "header syntax error at byte %zu: expected %s, found %s", p->base + at,
                  expected, found);
}

static int npy_value(npy_parser_t *p, int depth, npy_val_t *v, npy_val_t *items, size_t maxitems);

/* A quoted string; the cursor is on the opening quote. */
static int npy_string(npy_parser_t *p, npy_val_t *v) {
  char q = p->s[p->i];
  size_t start = ++p->i;
  v->type = NPY_V_STR;
  while (p->i < p->n) {
    char c = p->s[p->i];
    if (c == q) {
      v->str = p->s + start;
      v->len = p->i - start;
      p->i++;
      return 0;
    }
    if (c == '\n') break; /* Python's one-line strings cannot hold a raw newline */
    if (c == '\\') {
      v->escaped = 1;
      if (p->i + 1 < p->n) p->i++; /* whatever follows is part of the string */
    }
    p->i++;
  }
  return npy_fail(p->e, "header syntax error at byte %zu: unterminated string (expected a "
                        "closing %c on the same line)", p->base + v->at, q);
}

/* An integer (or a float, for the message); the cursor is on a digit or sign. */
static int npy_number(npy_parser_t *p, npy_val_t *v) {
  const char *s = p->s;
  v->type = NPY_V_INT;
  if (s[p->i] == '+' || s[p->i] == '-') {
    v->negative = s[p->i] == '-';
    p->i++;
    npy_ws(p); /* Python allows "- 3" */
  }
  if (p->i >= p->n || !npy_isdigit(s[p->i])) return npy_syntax(p, p->i, "a digit");
  for (; p->i < p->n && npy_isdigit(s[p->i]); p->i++) {
    size_t d = (size_t)(s[p->i] - '0');
    if (v->toobig || v->mag > (SIZE_MAX - d) / 10)
      v->toobig = 1;
    else
      v->mag = v->mag * 10 + d;
  }
  if (p->i < p->n && (s[p->i] == '.' || s[p->i] == 'e' || s[p->i] == 'E')) {
    v->type = NPY_V_FLOAT;
    while (p->i < p->n) {
      char c = s[p->i];
      if (npy_isdigit(c) || c == '.' || c == 'e' || c == 'E' ||
          ((c == '+' || c == '-') && (s[p->i - 1] == 'e' || s[p->i - 1] == 'E')))
        p->i++;
      else
        break;
    }
  } else if (p->py2_longs && p->i < p->n && (s[p->i] == 'L' || s[p->i] == 'l')) {
    p->i++;
  }
  if (p->i < p->n && (npy_isalnum(s[p->i]) || s[p->i] == '.'))
    return npy_syntax(p, p->i, "a decimal number");
  return 0;
}

/* True, False or None; the cursor is on a letter. */
static int npy_name(npy_parser_t *p, npy_val_t *v) {
  char q[NPY_QUOTE_CAP];
  size_t start = p->i;
  while (p->i < p->n && npy_isalnum(p->s[p->i])) p->i++;
  size_t len = p->i - start;
  const char *w = p->s + start;
  if (len == 4 && memcmp(w, "True", 4) == 0) {
    v->type = NPY_V_BOOL;
    v->truth = 1;
  } else if (len == 5 && memcmp(w, "False", 5) == 0) {
    v->type = NPY_V_BOOL;
  } else if (len == 4 && memcmp(w, "None", 4) == 0) {
    v->type = NPY_V_NONE;
  } else {
    return npy_fail(p->e, "header syntax error at byte %zu: unexpected name '%s' (expected a "
                          "string, a number, True, False, None, a tuple or a list)",
                    p->base + start, npy_quote(w, len, q));
  }
  return 0;
}

/* The rest of a tuple or list whose opening bracket (and maybe some elements and
 * their commas) has been read: elements separated by commas, an optional trailing
 * comma, then `close`. Elements go to items[v->count] while there is room. */
static int npy_elements(npy_parser_t *p, int depth, npy_val_t *v, char close, npy_val_t *items,
                        size_t maxitems) {
  const char *expected = close == ')' ? "',' or ')' in a tuple" : "',' or ']' in a list";
  for (;;) {
    npy_ws(p);
    if (npy_at(p, close)) break;
    npy_val_t scratch;
    npy_val_t *dst = items && v->count < maxitems ? &items[v->count] : &scratch;
    int rc = npy_value(p, depth + 1, dst, NULL, 0);
    if (rc) return rc;
    v->count++;
    npy_ws(p);
    if (npy_at(p, ',')) {
      p->i++;
      continue;
    }
    if (!npy_at(p, close)) return npy_syntax(p, p->i, expected);
    break;
  }
  p->i++;
  return 0;
}

/* A tuple, or a parenthesized value; the cursor is on '('. */
static int npy_tuple(npy_parser_t *p, int depth, npy_val_t *v, npy_val_t *items,
                     size_t maxitems) {
  size_t at = v->at;
  p->i++;
  npy_ws(p);
  v->type = NPY_V_TUPLE;
  if (npy_at(p, ')')) {
    p->i++;
    return 0;
  }
  /* The first element gets `items` too: if this turns out to be "(x)", which is
   * just x, then x's own elements belong there. If it is a tuple after all, our
   * elements overwrite x's from index 0, and only v->count of them are read. */
  npy_val_t first;
  int rc = npy_value(p, depth + 1, &first, items, maxitems);
  if (rc) return rc;
  npy_ws(p);
  if (npy_at(p, ')')) {
    p->i++;
    *v = first;
    v->at = at;
    return 0;
  }
  if (!npy_at(p, ',')) return npy_syntax(p, p->i, "',' or ')' in a tuple");
  p->i++;
  if (items && maxitems) items[0] = first;
  v->count = 1;
  return npy_elements(p, depth, v, ')', items, maxitems);
}

/* A dict inside a value (never valid where we look, but parsed so that the error
 * is about the type, not the syntax); the cursor is on '{'. */
static int npy_dict(npy_parser_t *p, int depth, npy_val_t *v) {
  v->type = NPY_V_DICT;
  p->i++;
  for (;;) {
    npy_ws(p);
    if (npy_at(p, '}')) break;
    npy_val_t key, val;
    int rc = npy_value(p, depth + 1, &key, NULL, 0);
    if (rc) return rc;
    npy_ws(p);
    if (!npy_at(p, ':')) return npy_syntax(p, p->i, "':' after a dict key");
    p->i++;
    if ((rc = npy_value(p, depth + 1, &val, NULL, 0))) return rc;
    v->count++;
    npy_ws(p);
    if (npy_at(p, ',')) {
      p->i++;
      continue;
    }
    if (!npy_at(p, '}')) return npy_syntax(p, p->i, "',' or '}' in a dict");
    break;
  }
  p->i++;
  return 0;
}

/* Any value, after optional whitespace. If it is a tuple, its first maxitems
 * elements are stored in items (which may be NULL). */
static int npy_value(npy_parser_t *p, int depth, npy_val_t *v, npy_val_t *items,
                     size_t maxitems) {
  memset(v, 0, sizeof *v);
  npy_ws(p);
  v->at = p->i;
  if (depth > NPY_MAX_DEPTH)
    return npy_fail(p->e, "header is nested too deeply at byte %zu (more than %d levels)",
                    p->base + p->i, NPY_MAX_DEPTH);
  if (p->i >= p->n) return npy_syntax(p, p->i, "a value");
  char c = p->s[p->i];
  if (c == '\'' || c == '"') return npy_string(p, v);
  if (npy_isdigit(c) || c == '-' || c == '+') return npy_number(p, v);
  if (c == '(') return npy_tuple(p, depth, v, items, maxitems);
  if (c == '[') {
    p->i++;
    v->type = NPY_V_LIST;
    return npy_elements(p, depth, v, ']', NULL, 0);
  }
  if (c == '{') return npy_dict(p, depth, v);
  if (npy_isalpha(c)) return npy_name(p, v);
  return npy_syntax(p, p->i, "a value");
}

enum { NPY_KEY_DESCR, NPY_KEY_FORTRAN, NPY_KEY_SHAPE, NPY_NKEYS };
static const char *const npy_keys[NPY_NKEYS] = {"descr", "fortran_order", "shape"};

/* Parses the header dict: each of the three keys exactly once, nothing else, and
 * only whitespace after the closing brace. Fills vals[NPY_KEY_*], and dims with
 * the first HK_NPY_MAXDIM + 1 elements of the shape. */
static int npy_header_dict(npy_parser_t *p, npy_val_t *vals, npy_val_t *dims) {
  char q[NPY_QUOTE_CAP];
  int have[NPY_NKEYS] = {0, 0, 0};
  npy_ws(p);
  if (!npy_at(p, '{')) return npy_syntax(p, p->i, "'{' to open the header dict");
  p->i++;
  for (;;) {
    npy_ws(p);
    if (npy_at(p, '}')) break;
    if (!npy_at(p, '\'') && !npy_at(p, '"')) return npy_syntax(p, p->i, "a quoted key or '}'");
    npy_val_t key;
    int rc = npy_value(p, 1, &key, NULL, 0);
    if (rc) return rc;
    int k = -1;
    for (int j = 0; j < NPY_NKEYS; j++)
      if (!key.escaped && key.len == strlen(npy_keys[j]) &&
          memcmp(key.str, npy_keys[j], key.len) == 0)
        k = j;
    if (k < 0)
      return npy_fail(p->e, "header has an unknown key '%s' (expected only 'descr', "
                            "'fortran_order' and 'shape')", npy_quote(key.str, key.len, q));
    if (have[k]) return npy_fail(p->e, "header has a duplicate key '%s'", npy_keys[k]);
    have[k] = 1;
    npy_ws(p);
    if (!npy_at(p, ':')) return npy_syntax(p, p->i, "':' after a key");
    p->i++;
    int is_shape = k == NPY_KEY_SHAPE;
    rc = npy_value(p, 1, &vals[k], is_shape ? dims : NULL, is_shape ? HK_NPY_MAXDIM + 1 : 0);
    if (rc) return rc;
    npy_ws(p);
    if (npy_at(p, ',')) {
      p->i++;
      continue;
    }
    if (!npy_at(p, '}')) return npy_syntax(p, p->i, "',' or '}' after a value");
    break;
  }
  p->i++;
  npy_ws(p);
  if (p->i < p->n) return npy_syntax(p, p->i, "only padding after the closing '}'");
  for (int k = 0; k < NPY_NKEYS; k++)
    if (!have[k])
      return npy_fail(p->e, "header has no '%s' key (expected 'descr', 'fortran_order' and "
                            "'shape')", npy_keys[k]);
  return 0;
}

/* ---- Header values ------------------------------------------------------ */

/* Interprets a simple descr string d (NUL-terminated, < 64 bytes): an optional byte
 * order, a kind and a size, and a unit for datetimes. Fills descr, kind, byteorder,
 * itemsize and dtype of *a, or fails. */
static int npy_descr(const char *d, hk_npy_t *a, const npy_err_t *e) {
  char q[NPY_QUOTE_CAP];
  const char *s = d, *why = NULL;
  char order = '=';
  if (*s == '<' || *s == '>' || *s == '|' || *s == '=') order = *s++;
  char kind = *s;
  size_t size = 0;
  int sized = 0;
  if (!kind || !strchr("biufcSUVMmO", kind)) {
    why = "unknown type character";
  } else {
    s++;
    for (; npy_isdigit(*s); s++, sized = 1) {
      if (size > (SIZE_MAX / 4 - 9) / 10) { /* so that size * 10 + 9, and 'U' * 4, fit */
        why = "item size too large";
        break;
      }
      size = size * 10 + (size_t)(*s - '0');
    }
    if (!why && (kind == 'M' || kind == 'm') && *s == '[') {
      const char *u = ++s;
      while (npy_isalnum(*s)) s++;
      if (*s != ']' || s == u) why = "malformed datetime unit, should be like [ns]";
      else s++;
    }
    if (!why && *s) why = "unexpected text after the type";
  }
  if (!why && !sized && kind != 'O') why = "the item size is missing";
  if (!why) {
    switch (kind) {
    case 'b': if (size != 1) why = "bool is 1 byte"; break;
    case 'i': case 'u':
      if (size != 1 && size != 2 && size != 4 && size != 8) why = "integer sizes are 1, 2, 4 or 8";
      break;
    case 'f':
      if (size != 2 && size != 4 && size != 8 && size != 12 && size != 16)
        why = "float sizes are 2, 4, 8, 12 or 16";
      break;
    case 'c':
      if (size != 8 && size != 16 && size != 24 && size != 32)
        why = "complex sizes are 8, 16, 24 or 32";
      break;
    case 'M': case 'm': if (size != 8) why = "datetimes are 8 bytes"; break;
    case 'O': if (sized && size != 4 && size != 8) why = "object pointers are 4 or 8 bytes"; break;
    default: break;
    }
  }
  if (why)
    return npy_fail(e, "unsupported dtype descr '%s' (%s; expected a NumPy type string such as "
                       "'<f4', '|u1' or '<U10')", npy_quote(d, strlen(d), q), why);
  if (kind == 'O')
    return npy_fail(e, "object arrays (descr '%s') are not supported: their data is pickled "
                       "Python objects, which only Python can read", d);

  /* NumPy ignores the byte order where it cannot matter, and '=' or none means
   * native, i.e. little-endian here; normalize so that '<i1' and '>i1' are both
   * int8 and '=f4' is float32. */
  int orderless = kind == 'b' || kind == 'S' || kind == 'V' ||
                  ((kind == 'i' || kind == 'u') && size == 1);
  if (orderless)
    order = '|';
  else if (order != '>')
    order = '<';

  snprintf(a->descr, sizeof a->descr, "%s", d);
  a->kind = kind;
  a->byteorder = order;
  a->itemsize = kind == 'U' ? size * 4 : size;
  a->dtype = HK_DTYPE_INVALID;
  if (order != '>')
    for (size_t k = 0; k < NPY_NTYPES; k++)
      if (npy_hk_types[k].kind == kind && npy_hk_types[k].size == size &&
          a->dtype == HK_DTYPE_INVALID)
        a->dtype = npy_hk_types[k].t;
  return 0;
}

/* Checks the 'descr' value and interprets it. */
static int npy_descr_value(const npy_val_t *v, hk_npy_t *a, const npy_err_t *e) {
  char q[NPY_QUOTE_CAP], d[sizeof a->descr];
  if (v->type == NPY_V_LIST)
    return npy_fail(e, "structured dtypes are not supported (the descr is a list of fields; "
                       "expected a simple type such as '<f4')");
  if (v->type != NPY_V_STR)
    return npy_fail(e, "'descr' must be a string such as '<f4', found %s",
                    npy_vtype_names[v->type]);
  if (v->escaped || v->len >= sizeof d)
    return npy_fail(e, "unsupported dtype descr '%s' (%s; expected a NumPy type string such "
                       "as '<f4', '|u1' or '<U10')", npy_quote(v->str, v->len, q),
                    v->escaped ? "backslash escapes are not supported" : "too long");
  memcpy(d, v->str, v->len);
  d[v->len] = '\0';
  return npy_descr(d, a, e);
}

/* Checks the 'shape' value (its elements in dims) and fills ndim, shape and count,
 * making sure that count * itemsize does not overflow. */
static int npy_shape_value(const npy_val_t *v, const npy_val_t *dims, hk_npy_t *a,
                           const npy_err_t *e) {
  char sh[NPY_SHAPE_CAP];
  if (v->type != NPY_V_TUPLE)
    return npy_fail(e, "'shape' must be a tuple of integers such as (2, 3), found %s",
                    npy_vtype_names[v->type]);
  if (v->count > HK_NPY_MAXDIM)
    return npy_fail(e, "shape has %zu dimensions (at most %d are supported)", v->count,
                    HK_NPY_MAXDIM);
  for (size_t k = 0; k < v->count; k++) {
    const npy_val_t *d = &dims[k];
    if (d->type != NPY_V_INT)
      return npy_fail(e, "'shape' must be a tuple of integers, found %s at shape[%zu]",
                      npy_vtype_names[d->type], k);
    if (d->negative && (d->mag || d->toobig)) {
      if (d->toobig) return npy_fail(e, "shape[%zu] is negative (dimensions must be >= 0)", k);
      return npy_fail(e, "shape[%zu] is negative (-%zu; dimensions must be >= 0)", k, d->mag);
    }
    if (d->toobig)
      return npy_fail(e, "shape[%zu] is too large (more than %zu)", k, (size_t)SIZE_MAX);
    a->shape[k] = d->mag;
  }
  a->ndim = (int)v->count;
  /* Like NumPy, check the product of the non-zero dimensions, so that an empty
   * array cannot hide an absurd shape. */
  size_t prod = 1;
  int empty = 0;
  for (int k = 0; k < a->ndim; k++) {
    if (a->shape[k] == 0) {
      empty = 1;
    } else if (prod > SIZE_MAX / a->shape[k]) {
      npy_format_shape(a->ndim, a->shape, sh);
      return npy_fail(e, "shape %s is too large (its element count overflows size_t)", sh);
    } else {
      prod *= a->shape[k];
    }
  }
  if (a->itemsize && prod > SIZE_MAX / a->itemsize) {
    npy_format_shape(a->ndim, a->shape, sh);
    return npy_fail(e, "shape %s is too large for %zu-byte items (the byte count overflows "
                       "size_t)", sh, a->itemsize);
  }
  a->count = empty ? 0 : prod;
  return 0;
}

/* Returns the offset of the first byte of s[0..n) that is not valid UTF-8, or n.
 * Strict, as Python's decoder: no overlong forms, surrogates or code points past
 * U+10FFFF. */
static size_t npy_utf8_check(const unsigned char *s, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = s[i];
    size_t len;
    unsigned char lo = 0x80, hi = 0xbf; /* bounds of the second byte */
    if (c < 0x80) {
      i++;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      len = 2;
    } else if (c >= 0xe0 && c <= 0xef) {
      len = 3;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      len = 4;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return i;
    }
    if (n - i < len || s[i + 1] < lo || s[i + 1] > hi) return i;
    for (size_t k = 2; k < len; k++)
      if (s[i + k] < 0x80 || s[i + k] > 0xbf) return i;
    i += len;
  }
  return n;
}

/* Parses and checks the header text h[0..n), at file offset base, of a version
 * `major` file, and fills everything in *a but the data. */
static int npy_parse_header(const char *h, size_t n, size_t base, int major, hk_npy_t *a,
                            const npy_err_t *e) {
  if (n == 0 || h[n - 1] != '\n')
    return npy_fail(e, "header is not terminated by a newline (a .npy header is padded "
                       "with spaces and ends in '\\n')");
  for (size_t k = 0; k < n; k++) {
    unsigned char c = (unsigned char)h[k];
    if (c == 0) return npy_fail(e, "header has a NUL byte at byte %zu", base + k);
    if (c >= 0x80 && major < 3)
      return npy_fail(e, "header has a non-ASCII byte 0x%02x at byte %zu (a version %d.0 "
                         "header must be ASCII; only 3.0 allows UTF-8)", c, base + k, major);
  }
  if (major == 3) {
    size_t bad = npy_utf8_check((const unsigned char *)h, n);
    if (bad < n)
      return npy_fail(e, "header is not valid UTF-8 (byte 0x%02x at byte %zu)",
                      (unsigned char)h[bad], base + bad);
  }
  npy_parser_t p = {h, n, 0, base, major < 3, e};
  npy_val_t vals[NPY_NKEYS], dims[HK_NPY_MAXDIM + 1];
  int rc = npy_header_dict(&p, vals, dims);
  if (!rc) rc = npy_descr_value(&vals[NPY_KEY_DESCR], a, e);
  if (rc) return rc;
  if (vals[NPY_KEY_FORTRAN].type != NPY_V_BOOL)
    return npy_fail(e, "'fortran_order' must be True or False, found %s",
                    npy_vtype_names[vals[NPY_KEY_FORTRAN].type]);
  a->fortran_order = vals[NPY_KEY_FORTRAN].truth;
  return npy_shape_value(&vals[NPY_KEY_SHAPE], dims, a, e);
}

/* ---- Reading ------------------------------------------------------------ */

/* Checks that exactly the array's bytes remain after the header: `avail` do. */
static int npy_check_data_len(const hk_npy_t *a, size_t avail, const npy_err_t *e) {
  char what[128], sh[NPY_SHAPE_CAP];
  size_t need = a->count * a->itemsize;
  if (avail == need) return 0;
  hk_npy_describe(a, what, sizeof what);
  npy_format_shape(a->ndim, a->shape, sh);
  if (avail < need)
    return npy_fail(e, "truncated: expected %zu bytes of data, found %zu (shape %s of %s)",
                    need, avail, sh, what);
  return npy_fail(e, "%zu unexpected byte%s after the data (expected exactly %zu bytes: "
                     "shape %s of %s)", avail - need, avail - need == 1 ? "" : "s", need, sh,
                  what);
}

/* Allocates a->data for count * itemsize bytes (already checked not to overflow),
 * 64-byte aligned, with the tail of the last 64-byte block zeroed so that vector
 * code may read whole blocks. Leaves it NULL for 0 bytes. */
static int npy_alloc_data(hk_npy_t *a, const npy_err_t *e) {
  size_t n = a->count * a->itemsize;
  a->data = NULL;
  if (n == 0) return 0;
  if (n > SIZE_MAX - NPY_ALIGN)
    return npy_fail_code(e, HK_ENOMEM, "out of memory (the data is %zu bytes)", n);
  size_t rounded = (n + NPY_ALIGN - 1) / NPY_ALIGN * NPY_ALIGN;
  void *p = NULL;
  if (posix_memalign(&p, NPY_ALIGN, rounded) != 0)
    return npy_fail_code(e, HK_ENOMEM, "out of memory (the data needs %zu bytes)", n);
  memset((char *)p + n, 0, rounded - n);
  a->data = p;
  return 0;
}

/* Parses a whole file held in memory. On failure *a is left zeroed. */
static int npy_parse_mem(const unsigned char *b, size_t len, hk_npy_t *a, const npy_err_t *e) {
  npy_prefix_t pre = {0};
  memset(a, 0, sizeof *a);
  int rc = npy_parse_prefix(b, len, len, &pre, e);
  if (rc) return rc;
  a->version_major = pre.major;
  a->version_minor = pre.minor;
  size_t off = pre.header_off + pre.header_len;
  rc = npy_parse_header((const char *)b + pre.header_off, pre.header_len, pre.header_off,
                        pre.major, a, e);
  if (!rc) rc = npy_check_data_len(a, len - off, e);
  if (!rc) rc = npy_alloc_data(a, e);
  if (rc) {
    memset(a, 0, sizeof *a);
    return rc;
  }
  if (a->data) memcpy(a->data, b + off, a->count * a->itemsize);
  return 0;
}

int hk_npy_parse(const void *bytes, size_t len, const char *name, hk_npy_t *out,
                 hku_diags *d) {
  npy_err_t e = {name ? name : "<memory>", d};
  if (!out) return npy_fail(&e, "no output array given");
  memset(out, 0, sizeof *out);
  if (!bytes && len) return npy_fail(&e, "no bytes given (NULL buffer of length %zu)", len);
  return npy_parse_mem(bytes, len, out, &e);
}

/* Reads a regular file of `total` bytes (as fstat said) whose stream is at its
 * start: the preamble, then the header, then, once the header's size claims have
 * been checked against `total`, the data in one fread straight into place. */
static int npy_read_regular(FILE *f, size_t total, hk_npy_t *a, const npy_err_t *e) {
  unsigned char head[12];
  size_t want = total < sizeof head ? total : sizeof head;
  size_t have = fread(head, 1, want, f);
  if (have < want) {
    if (ferror(f)) return npy_fail_code(e, HK_EIO, "read error: %s", strerror(errno));
    total = have; /* it shrank since fstat */
  }
  npy_prefix_t pre = {0};
  int rc = npy_parse_prefix(head, have, total, &pre, e);
  if (rc) return rc;
  a->version_major = pre.major;
  a->version_minor = pre.minor;

  char *h = malloc(pre.header_len ? pre.header_len : 1);
  if (!h)
    return npy_fail_code(e, HK_ENOMEM, "out of memory (the header is %zu bytes)",
                         pre.header_len);
  if (fseek(f, (long)pre.header_off, SEEK_SET) != 0 ||
      fread(h, 1, pre.header_len, f) != pre.header_len) {
    int rd = ferror(f);
    free(h);
    return rd ? npy_fail_code(e, HK_EIO, "read error: %s", strerror(errno))
              : npy_fail(e, "truncated: the file ended inside the header");
  }
  rc = npy_parse_header(h, pre.header_len, pre.header_off, pre.major, a, e);
  free(h);
  size_t off = pre.header_off + pre.header_len;
  if (!rc) rc = npy_check_data_len(a, total - off, e);
  if (!rc) rc = npy_alloc_data(a, e);
  if (rc) return rc;

  size_t need = a->count * a->itemsize;
  if (need) {
    size_t got = fread(a->data, 1, need, f);
    if (got != need) {
      if (ferror(f)) return npy_fail_code(e, HK_EIO, "read error: %s", strerror(errno));
      return npy_fail(e, "truncated: expected %zu bytes of data, found %zu", need, got);
    }
  }
  return 0;
}

/* Reads a stream of unknown size (a pipe, a character device) whole, stopping
 * early if it does not start like a .npy file, then parses it in memory. */
static int npy_read_stream(FILE *f, hk_npy_t *a, const npy_err_t *e) {
  size_t cap = 1u << 16, len = 0;
  unsigned char *buf = malloc(cap);
  if (!buf) return npy_fail_code(e, HK_ENOMEM, "out of memory");
  for (;;) {
    if (len == cap) {
      unsigned char *nb = cap <= SIZE_MAX / 2 ? realloc(buf, cap * 2) : NULL;
      if (!nb) {
        free(buf);
        return npy_fail_code(e, HK_ENOMEM, "out of memory after reading %zu bytes", len);
      }
      buf = nb;
      cap *= 2;
    }
    size_t room = cap - len, got = fread(buf + len, 1, room, f);
    len += got;
    if (got < room) { /* end of file, or an error */
      if (ferror(f)) {
        int er = errno;
        free(buf);
        return npy_fail_code(e, HK_EIO, "read error: %s", strerror(er));
      }
      break;
    }
    if (len >= NPY_MAGIC_LEN && memcmp(buf, NPY_MAGIC, NPY_MAGIC_LEN) != 0) break;
  }
  int rc = npy_parse_mem(buf, len, a, e);
  free(buf);
  return rc;
}

int hk_npy_read(const char *path, hk_npy_t *out, hku_diags *d) {
  npy_err_t e = {path ? path : "(null)", d};
  if (!out) return npy_fail(&e, "no output array given");
  memset(out, 0, sizeof *out);
  if (!path) return npy_fail(&e, "no file name given");
  FILE *f = fopen(path, "rb");
  if (!f) return npy_fail_code(&e, HK_EIO, "cannot open: %s", strerror(errno));
  struct stat st;
  int rc;
  if (fstat(fileno(f), &st) != 0)
    rc = npy_fail_code(&e, HK_EIO, "cannot stat: %s", strerror(errno));
  else if (S_ISDIR(st.st_mode))
    rc = npy_fail(&e, "is a directory (expected a .npy file)");
  else if (!S_ISREG(st.st_mode))
    rc = npy_read_stream(f, out, &e);
  else if ((uintmax_t)st.st_size > SIZE_MAX)
    rc = npy_fail(&e, "file too large for this machine");
  else
    rc = npy_read_regular(f, (size_t)st.st_size, out, &e);
  fclose(f);
  if (rc) hk_npy_free(out);
  return rc;
}

void hk_npy_free(hk_npy_t *a) {
  if (!a) return;
  free(a->data);
  memset(a, 0, sizeof *a);
}

/* ---- Writing ------------------------------------------------------------ */

/* Checks the arguments of a write and computes the data's byte count. */
static int npy_check_args(hk_dtype_t t, int ndim, const size_t *shape, const void *data,
                          size_t *nbytes, const npy_err_t *e) {
  size_t size = npy_hk_size(t);
  if (!size) return npy_fail(e, "cannot write dtype %d (expected one of the hk types)", (int)t);
  if (ndim < 0 || ndim > HK_NPY_MAXDIM)
    return npy_fail(e, "ndim %d is out of range (expected 0 to %d)", ndim, HK_NPY_MAXDIM);
  if (ndim > 0 && !shape) return npy_fail(e, "shape is NULL for ndim %d", ndim);
  size_t prod = 1;
  int empty = 0;
  for (int k = 0; k < ndim; k++) {
    if (shape[k] == 0)
      empty = 1;
    else if (prod > SIZE_MAX / shape[k])
      return npy_fail(e, "shape is too large (its element count overflows size_t)");
    else
      prod *= shape[k];
  }
  if (prod > SIZE_MAX / size)
    return npy_fail(e, "shape is too large (the byte count overflows size_t)");
  *nbytes = empty ? 0 : prod * size;
  if (*nbytes && !data) return npy_fail(e, "data is NULL for %zu bytes", *nbytes);
  return 0;
}

/* Builds the preamble and header np.save writes for this array into buf
 * (NPY_HEADER_CAP bytes): the dict with keys sorted, spare spaces so that the
 * first axis can grow to 21 digits in place, then spaces and '\n' up to a
 * multiple of 64. Returns its length. Arguments were checked. */
static size_t npy_build_header(hk_dtype_t t, int ndim, const size_t *shape, unsigned char *buf) {
  char dict[NPY_HEADER_CAP], sh[NPY_SHAPE_CAP];
  npy_format_shape(ndim, shape, sh);
  size_t len = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, "
                                "'shape': %s, }", hk_npy_descr_of(t), sh);
  if (ndim > 0) {
    char d0[24];
    int w = snprintf(d0, sizeof d0, "%zu", shape[0]);
    for (int k = w; k < NPY_GROWTH_DIGITS; k++) dict[len++] = ' ';
  }
  size_t hlen = len + 1; /* with the final '\n' */
  size_t pre = 10, pad = NPY_ALIGN - (pre + hlen) % NPY_ALIGN;
  if (hlen + pad > 0xffff) { /* as NumPy; cannot happen within 64 dimensions */
    pre = 12;
    pad = NPY_ALIGN - (pre + hlen) % NPY_ALIGN;
  }
  size_t field = hlen + pad;
  memcpy(buf, NPY_MAGIC, NPY_MAGIC_LEN);
  buf[6] = pre == 10 ? 1 : 2;
  buf[7] = 0;
  for (size_t k = 0; k < pre - 8; k++) buf[8 + k] = (unsigned char)(field >> (8 * k));
  memcpy(buf + pre, dict, len);
  memset(buf + pre + len, ' ', pad);
  buf[pre + len + pad] = '\n';
  return pre + field;
}

int hk_npy_encode(hk_dtype_t t, int ndim, const size_t *shape, const void *data, void **bytes,
                  size_t *len, hku_diags *d) {
  npy_err_t e = {"hk_npy_encode", d};
  if (!bytes || !len) return npy_fail(&e, "no output buffer given");
  *bytes = NULL;
  *len = 0;
  size_t nbytes;
  int rc = npy_check_args(t, ndim, shape, data, &nbytes, &e);
  if (rc) return rc;
  unsigned char hdr[NPY_HEADER_CAP];
  size_t hn = npy_build_header(t, ndim, shape, hdr);
  if (nbytes > SIZE_MAX - hn) return npy_fail_code(&e, HK_ENOMEM, "out of memory");
  unsigned char *b = malloc(hn + nbytes);
  if (!b) return npy_fail_code(&e, HK_ENOMEM, "out of memory (%zu bytes)", hn + nbytes);
  memcpy(b, hdr, hn);
  if (nbytes) memcpy(b + hn, data, nbytes);
  *bytes = b;
  *len = hn + nbytes;
  return 0;
}

int hk_npy_write(const char *path, hk_dtype_t t, int ndim, const size_t *shape,
                 const void *data, hku_diags *d) {
  hku_pending p;
  int rc = hk_npy_write_prepare(path, t, ndim, shape, data, &p, d);
  if (rc) return rc;
  hku_diags wd = HKU_DIAGS_INIT;
  rc = hku_output_commit(&p, &wd);
  if (rc && wd.n) hku_diags_move(d, &wd);
  hku_diags_free(&wd);
  return rc;
}

int hk_npy_write_prepare(const char *path, hk_dtype_t t, int ndim,
                         const size_t *shape, const void *data,
                         hku_pending *out, hku_diags *d) {
  npy_err_t e = {path ? path : "(null)", d};
  out->tmp = out->path = NULL;
  if (!path || !*path) return npy_fail(&e, "no file name given");
  size_t nbytes;
  int rc = npy_check_args(t, ndim, shape, data, &nbytes, &e);
  if (rc) return rc;
  unsigned char hdr[NPY_HEADER_CAP];
  size_t hn = npy_build_header(t, ndim, shape, hdr);

  /* No fsync before the rename: the promise is about this process failing,
   * not about power loss, and syncing hundreds of MB per output costs more
   * than it buys. */
  hku_part parts[2] = {{hdr, hn}, {data, nbytes}};
  hku_diags wd = HKU_DIAGS_INIT;
  rc = hku_output_prepare(path, parts, 2, HKU_KEEP_MODE, out, &wd);
  if (rc && wd.n) /* "cannot write: WHY (nothing was changed)", about path */
    hku_diags_move(d, &wd);
  else if (rc)
    rc = npy_fail_code(&e, HK_ENOMEM, "cannot write: out of memory");
  hku_diags_free(&wd);
  return rc;
}

const char *hk_npy_error(const hku_diags *d, hku_buf *out) {
  for (size_t i = 0; d && i < d->n; i++)
    if (d->v[i].sev == HKU_ERROR) {
      hku_buf_printf(out, "%s: %s", d->v[i].path ? d->v[i].path : "", d->v[i].msg);
      return hku_buf_str(out);
    }
  if (d && d->oom) hku_buf_put(out, "out of memory");
  return hku_buf_str(out);
}
