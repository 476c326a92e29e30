/* json.c — positioned JSON documents on top of cJSON (see json.h). */
#include "json.h"
#include "hk.h"

#include <cJSON.h>
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* cJSON records its last error in a global; parses are serialized so that
 * concurrent loads stay race-free (they are rare and short). */
static pthread_mutex_t cjson_lock = PTHREAD_MUTEX_INITIALIZER;

const char *hkj_type_name(hkj_type t) {
  switch (t) {
    case HKJ_NULL: return "null";
    case HKJ_FALSE:
    case HKJ_TRUE: return "a boolean";
    case HKJ_NUMBER: return "a number";
    case HKJ_STRING: return "a string";
    case HKJ_ARRAY: return "an array";
    case HKJ_OBJECT: return "an object";
  }
  return "?";
}

/* Frees n and everything below it. */
static void node_free(hkj_node *n) {
  if (!n) return;
  for (size_t i = 0; i < n->nkids; i++) node_free(n->kids[i]);
  free(n->kids);
  free(n->key);
  free(n->str);
  free(n);
}

void hkj_free(hkj_doc *doc) {
  if (!doc) return;
  node_free(doc->root);
  free(doc->line_starts);
  free(doc->text);
  free(doc->path);
  free(doc);
}

void hkj_pos(const hkj_doc *doc, size_t off, int *line, int *col) {
  if (off > doc->len) off = doc->len;
  size_t lo = 0, hi = doc->nlines; /* last line start <= off */
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    if (doc->line_starts[mid] <= off)
      lo = mid;
    else
      hi = mid;
  }
  int c = 1;
  for (size_t i = doc->line_starts[lo]; i < off; i++)
    if (((unsigned char)doc->text[i] & 0xC0) != 0x80) c++;
  *line = (int)lo + 1;
  *col = c;
}

void hkj_raw(const hkj_doc *doc, const hkj_node *v, const char **p,
             size_t *n) {
  *p = doc->text + v->off;
  *n = v->end - v->off;
}

hkj_node *hkj_get(const hkj_node *obj, const char *key) {
  if (!obj || obj->type != HKJ_OBJECT) return NULL;
  for (size_t i = 0; i < obj->nkids; i++)
    if (strcmp(obj->kids[i]->key, key) == 0) return obj->kids[i];
  return NULL;
}

/* ---- Text checks before parsing ---------------------------------------- */

/* Offset of the first byte that is not part of well-formed UTF-8 (no
 * overlongs, no surrogates, at most U+10FFFF), or len if all are. */
static size_t utf8_invalid_at(const unsigned char *s, size_t len) {
  size_t i = 0;
  while (i < len) {
    unsigned c = s[i];
    size_t k;
    uint32_t cp, min;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xE0) == 0xC0) {
      k = 1, cp = c & 0x1F, min = 0x80;
    } else if ((c & 0xF0) == 0xE0) {
      k = 2, cp = c & 0x0F, min = 0x800;
    } else if ((c & 0xF8) == 0xF0) {
      k = 3, cp = c & 0x07, min = 0x10000;
    } else {
      return i;
    }
    if (len - i <= k) return i;
    for (size_t j = 1; j <= k; j++) {
      if ((s[i + j] & 0xC0) != 0x80) return i;
      cp = (cp << 6) | (s[i + j] & 0x3F);
    }
    if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return i;
    i += k + 1;
  }
  return len;
}

/* ---- The walk: cJSON's tree and the text, side by side ----------------- */

typedef struct walker {
  const char *t;
  size_t len;
  size_t p;
  int failed;
} walker;

/* cJSON treats every byte <= 32 as whitespace; so must we. */
static void skip_ws(walker *w) {
  while (w->p < w->len && (unsigned char)w->t[w->p] <= 32) w->p++;
}

/* Steps over a string literal starting at its quote. */
static void skip_string(walker *w) {
  w->p++; /* opening quote */
  while (w->p < w->len && w->t[w->p] != '"') {
    if (w->t[w->p] == '\\') w->p++;
    w->p++;
  }
  w->p++; /* closing quote */
}

static hkj_node *build(walker *w, const cJSON *c);

/* Builds the members or elements of container c into n. HK_OK or
 * HK_ENOMEM. */
static int build_kids(walker *w, const cJSON *c, hkj_node *n, int is_obj) {
  size_t count = 0;
  for (const cJSON *k = c->child; k; k = k->next) count++;
  if (count) {
    n->kids = calloc(count, sizeof *n->kids);
    if (!n->kids) return HK_ENOMEM;
  }
  w->p++; /* '{' or '[' */
  for (const cJSON *k = c->child; k; k = k->next) {
    skip_ws(w);
    size_t key_off = w->p;
    if (is_obj) {
      skip_string(w);
      skip_ws(w);
      w->p++; /* ':' */
    }
    hkj_node *kid = build(w, k);
    if (!kid) return HK_ENOMEM;
    n->kids[n->nkids++] = kid;
    if (is_obj) {
      kid->key_off = key_off;
      kid->key = strdup(k->string ? k->string : "");
      if (!kid->key) return HK_ENOMEM;
    }
    skip_ws(w);
    if (w->p < w->len && w->t[w->p] == ',') w->p++;
  }
  skip_ws(w);
  w->p++; /* '}' or ']' */
  return HK_OK;
}

/* The node of cJSON value c, whose text starts at or after w->p (which
 * moves past it). NULL when out of memory. */
static hkj_node *build(walker *w, const cJSON *c) {
  hkj_node *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  skip_ws(w);
  n->off = w->p;
  int ok = 0;
  if (cJSON_IsObject(c)) {
    n->type = HKJ_OBJECT;
    ok = build_kids(w, c, n, 1) == HK_OK;
  } else if (cJSON_IsArray(c)) {
    n->type = HKJ_ARRAY;
    ok = build_kids(w, c, n, 0) == HK_OK;
  } else if (cJSON_IsString(c)) {
    n->type = HKJ_STRING;
    skip_string(w);
    n->str = strdup(c->valuestring ? c->valuestring : "");
    ok = n->str != NULL;
    if (ok) n->str_len = strlen(n->str);
  } else {
    if (cJSON_IsNumber(c)) {
      n->type = HKJ_NUMBER;
      n->num = c->valuedouble;
    } else if (cJSON_IsTrue(c)) {
      n->type = HKJ_TRUE;
    } else if (cJSON_IsFalse(c)) {
      n->type = HKJ_FALSE;
    } else {
      n->type = HKJ_NULL;
    }
    while (w->p < w->len && !strchr(",]}", w->t[w->p]) &&
           (unsigned char)w->t[w->p] > 32)
      w->p++;
    ok = 1;
  }
  n->end = w->p;
  if (!ok || w->p > w->len) {
    node_free(n);
    return NULL;
  }
  return n;
}

/* ---- String offsets ----------------------------------------------------- */

static int hexval(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

static unsigned hex4(const char *p) {
  unsigned v = 0;
  for (int i = 0; i < 4; i++) v = (v << 4) | (unsigned)hexval(p[i]);
  return v;
}

/* Decodes one escape or byte at raw offset p of a string literal: sets *raw
 * to the raw bytes it spans and returns how many decoded bytes it makes. */
static size_t step(const char *t, size_t p, size_t *raw) {
  if (t[p] != '\\') {
    *raw = 1;
    return 1;
  }
  if (t[p + 1] != 'u') {
    *raw = 2;
    return 1;
  }
  unsigned cp = hex4(t + p + 2);
  if (cp >= 0xD800 && cp <= 0xDBFF && t[p + 6] == '\\' && t[p + 7] == 'u') {
    *raw = 12;
    return 4;
  }
  *raw = 6;
  return cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3;
}

size_t hkj_str_offset(const hkj_doc *doc, const hkj_node *s, size_t decoded) {
  size_t p = s->off + 1, done = 0;
  while (p < s->end - 1 && done < decoded) {
    size_t raw;
    size_t made = step(doc->text, p, &raw);
    if (done + made > decoded) break; /* inside a multi-byte character */
    done += made;
    p += raw;
  }
  return p;
}

/* Finds a \u0000 escape in any string of the tree: cJSON would cut the
 * string there without a word, so it is refused instead. */
static const hkj_node *find_nul_escape(const hkj_doc *doc, const hkj_node *n,
                                       size_t *at) {
  if (n->type == HKJ_STRING) {
    for (size_t p = n->off + 1; p + 5 < n->end; p++) {
      if (doc->text[p] != '\\') continue;
      if (memcmp(doc->text + p, "\\u0000", 6) == 0) {
        *at = p;
        return n;
      }
      p++; /* skip the escaped character */
    }
    return NULL;
  }
  for (size_t i = 0; i < n->nkids; i++) {
    const hkj_node *r = find_nul_escape(doc, n->kids[i], at);
    if (r) return r;
    if (n->type == HKJ_OBJECT) {
      /* keys can hold escapes too */
      const hkj_node *k = n->kids[i];
      for (size_t p = k->key_off + 1; p + 5 < k->off; p++) {
        if (doc->text[p] == '"') break;
        if (doc->text[p] != '\\') continue;
        if (memcmp(doc->text + p, "\\u0000", 6) == 0) {
          *at = p;
          return k;
        }
        p++;
      }
    }
  }
  return NULL;
}

/* ---- Syntax: a strict RFC 8259 scanner ------------------------------------ */

/* cJSON builds the tree, but its error offsets are approximate and it lets
 * raw control characters through in strings. This scanner runs first and is
 * the authority on syntax: it finds the first error, exactly where it is,
 * and says what was expected there. */
typedef struct syntax {
  const hkj_doc *doc; /* t is its text */
  const char *t;
  size_t len, p;
  int depth;
  hku_diags *d;
} syntax;

/* Reports msg at byte off of the document (defined below). */
static void at(hku_diags *d, const hkj_doc *doc, size_t off, const char *msg);

/* Reports the syntax error at byte off; returns HK_ESCHEMA. */
static int fail(syntax *s, size_t off, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(syntax *s, size_t off, const char *fmt, ...) {
  hku_buf m = HKU_BUF_INIT;
  va_list ap;
  va_start(ap, fmt);
  hku_buf_put(&m, "invalid JSON: ");
  hku_buf_vprintf(&m, fmt, ap);
  va_end(ap);
  at(s->d, s->doc, off, m.oom ? "out of memory" : hku_buf_str(&m));
  hku_buf_free(&m);
  return HK_ESCHEMA;
}

static void ws(syntax *s) {
  while (s->p < s->len && (s->t[s->p] == ' ' || s->t[s->p] == '\t' ||
                           s->t[s->p] == '\n' || s->t[s->p] == '\r'))
    s->p++;
}

static int is_word(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
         (c >= '0' && c <= '9') || c == '_';
}

/* What is wrong with the byte at s->p where `expected` was wanted. */
static int unexpected(syntax *s, const char *expected) {
  size_t p = s->p;
  if (p >= s->len)
    return fail(s, p, "unexpected end of file (an object, array or string "
                      "is not closed)");
  char c = s->t[p];
  size_t back = p;
  while (back > 0 && strchr(" \t\r\n", s->t[back - 1])) back--;
  if ((c == '}' || c == ']') && back > 0 && s->t[back - 1] == ',')
    return fail(s, p, "trailing comma before '%c'", c);
  if (c == '\'') return fail(s, p, "strings must use double quotes");
  if (c == '/' && p + 1 < s->len && (s->t[p + 1] == '/' || s->t[p + 1] == '*'))
    return fail(s, p, "comments are not allowed (use a \"doc\" field or a key "
                      "starting with '_')");
  if (is_word(c)) {
    size_t e = p;
    while (e < s->len && e - p < 40 && is_word(s->t[e])) e++;
    return fail(s, p,
                "unexpected '%.*s' (strings need double quotes; the literals "
                "are true, false and null)",
                (int)(e - p), s->t + p);
  }
  if ((unsigned char)c < 32)
    return fail(s, p, "unexpected control character 0x%02x; expected %s",
                (unsigned char)c, expected);
  if ((unsigned char)c < 127)
    return fail(s, p, "unexpected '%c'; expected %s", c, expected);
  return fail(s, p, "unexpected character; expected %s", expected);
}

static int hex4_ok(const char *t, size_t len, size_t p) {
  if (p + 4 > len) return 0;
  for (int i = 0; i < 4; i++)
    if (!isxdigit((unsigned char)t[p + i])) return 0;
  return 1;
}

/* Scans a string at s->p; HK_OK, or HK_ESCHEMA (reported). */
static int scan_string(syntax *s) {
  size_t open = s->p++;
  while (s->p < s->len) {
    unsigned char c = (unsigned char)s->t[s->p];
    if (c == '"') {
      s->p++;
      return HK_OK;
    }
    if (c < 32)
      return fail(s, s->p,
                  "control character 0x%02x inside a string (write it as an "
                  "escape: \\n, \\t, \\u00%02x)",
                  c, c);
    if (c != '\\') {
      s->p++;
      continue;
    }
    size_t esc = s->p++;
    if (s->p >= s->len) break;
    char e = s->t[s->p];
    if (strchr("\"\\/bfnrt", e)) {
      s->p++;
      continue;
    }
    if (e != 'u') return fail(s, esc, "invalid escape in a string");
    if (!hex4_ok(s->t, s->len, s->p + 1))
      return fail(s, esc, "\\u must be followed by four hexadecimal digits");
    unsigned cp = (unsigned)strtoul((char[5]){s->t[s->p + 1], s->t[s->p + 2],
                                              s->t[s->p + 3], s->t[s->p + 4], 0},
                                    NULL, 16);
    s->p += 5;
    if (cp >= 0xDC00 && cp <= 0xDFFF)
      return fail(s, esc, "a low surrogate \\u escape without a high one");
    if (cp >= 0xD800 && cp <= 0xDBFF) {
      if (s->p + 1 < s->len && s->t[s->p] == '\\' && s->t[s->p + 1] == 'u' &&
          hex4_ok(s->t, s->len, s->p + 2)) {
        unsigned lo = (unsigned)strtoul(
            (char[5]){s->t[s->p + 2], s->t[s->p + 3], s->t[s->p + 4],
                      s->t[s->p + 5], 0},
            NULL, 16);
        if (lo >= 0xDC00 && lo <= 0xDFFF) {
          s->p += 6;
          continue;
        }
      }
      return fail(s, esc, "a high surrogate \\u escape without a low one");
    }
  }
  int line = 1, col = 1;
  for (size_t i = 0; i < open; i++) {
    if (s->t[i] == '\n') line++, col = 1;
    else if (((unsigned char)s->t[i] & 0xC0) != 0x80) col++;
  }
  return fail(s, s->len,
              "unexpected end of file: the string that starts at line %d, "
              "column %d is not closed",
              line, col);
}

/* Scans a number at s->p; HK_OK, or HK_ESCHEMA (reported). */
static int scan_number(syntax *s) {
  size_t start = s->p;
  const char *t = s->t;
  if (t[s->p] == '-') s->p++;
  if (s->p >= s->len || !isdigit((unsigned char)t[s->p]))
    return fail(s, start, "invalid number");
  if (t[s->p] == '0') {
    s->p++;
    if (s->p < s->len && isdigit((unsigned char)t[s->p]))
      return fail(s, start, "invalid number (no leading zeros in JSON)");
  } else {
    while (s->p < s->len && isdigit((unsigned char)t[s->p])) s->p++;
  }
  if (s->p < s->len && t[s->p] == '.') {
    s->p++;
    if (s->p >= s->len || !isdigit((unsigned char)t[s->p]))
      return fail(s, start, "invalid number (a digit must follow '.')");
    while (s->p < s->len && isdigit((unsigned char)t[s->p])) s->p++;
  }
  if (s->p < s->len && (t[s->p] == 'e' || t[s->p] == 'E')) {
    s->p++;
    if (s->p < s->len && (t[s->p] == '+' || t[s->p] == '-')) s->p++;
    if (s->p >= s->len || !isdigit((unsigned char)t[s->p]))
      return fail(s, start, "invalid number (a digit must follow the exponent)");
    while (s->p < s->len && isdigit((unsigned char)t[s->p])) s->p++;
  }
  if (s->p < s->len && (is_word(t[s->p]) || t[s->p] == '.'))
    return fail(s, start, "invalid number");
  return HK_OK;
}

static int scan_value(syntax *s);

/* Steps over an opening '{' or '[': 1 when close follows at once (an
 * empty container, stepped over too), else 0. */
static int open_container(syntax *s, char close) {
  s->p++;
  ws(s);
  if (s->p < s->len && s->t[s->p] == close) {
    s->p++;
    return 1;
  }
  return 0;
}

/* After a member (close '}') or an element (close ']'): HK_OK with *more
 * 1 after a ',', 0 after the close; else HK_ESCHEMA (reported). */
static int scan_after_item(syntax *s, char close, int *more) {
  ws(s);
  if (s->p < s->len && (s->t[s->p] == ',' || s->t[s->p] == close)) {
    *more = s->t[s->p++] == ',';
    return HK_OK;
  }
  int obj = close == '}';
  if (s->p < s->len && strchr(obj ? "\"" : "\"[{-0123456789tfn", s->t[s->p]))
    return fail(s, s->p, "missing ',' before this %s",
                obj ? "member" : "value");
  return unexpected(s, obj ? "',' or '}'" : "',' or ']'");
}

/* Scans an object at s->p; HK_OK, or HK_ESCHEMA (reported). */
static int scan_object(syntax *s) {
  if (open_container(s, '}')) return HK_OK;
  for (int more = 1; more;) {
    ws(s);
    if (s->p >= s->len || s->t[s->p] != '"')
      return unexpected(s, "a member name in double quotes");
    if (scan_string(s) != HK_OK) return HK_ESCHEMA;
    ws(s);
    if (s->p >= s->len || s->t[s->p] != ':') return unexpected(s, "':'");
    s->p++;
    if (scan_value(s) != HK_OK || scan_after_item(s, '}', &more) != HK_OK)
      return HK_ESCHEMA;
  }
  return HK_OK;
}

/* Scans an array at s->p; HK_OK, or HK_ESCHEMA (reported). */
static int scan_array(syntax *s) {
  if (open_container(s, ']')) return HK_OK;
  for (int more = 1; more;)
    if (scan_value(s) != HK_OK || scan_after_item(s, ']', &more) != HK_OK)
      return HK_ESCHEMA;
  return HK_OK;
}

/* Scans any value at s->p (after white space); HK_OK, or HK_ESCHEMA (reported). */
static int scan_value(syntax *s) {
  ws(s);
  if (s->p >= s->len) return unexpected(s, "a value");
  char c = s->t[s->p];
  if (c == '{' || c == '[') {
    if (++s->depth > 500) return fail(s, s->p, "nested more than 500 deep");
    int rc = c == '{' ? scan_object(s) : scan_array(s);
    s->depth--;
    return rc;
  }
  if (c == '"') return scan_string(s);
  if (c == '-' || isdigit((unsigned char)c)) return scan_number(s);
  static const char *const lits[] = {"true", "false", "null"};
  for (int i = 0; i < 3; i++) {
    size_t n = strlen(lits[i]);
    if (s->len - s->p >= n && !memcmp(s->t + s->p, lits[i], n) &&
        (s->p + n == s->len || !is_word(s->t[s->p + n]))) {
      s->p += n;
      return HK_OK;
    }
  }
  return unexpected(s, "a value");
}

/* HK_OK when the document's text from byte start on is one JSON value;
 * else HK_ESCHEMA, the first error reported into d. */
static int check_syntax(const hkj_doc *doc, size_t start, hku_diags *d) {
  syntax s = {doc, doc->text, doc->len, start, 0, d};
  int rc = scan_value(&s);
  if (rc == HK_OK) {
    ws(&s);
    if (s.p < s.len)
      rc = fail(&s, s.p, "unexpected text after the end of the top-level "
                         "value");
  }
  return rc;
}

/* ---- Entry points -------------------------------------------------------- */

/* Fills doc->line_starts. HK_OK or HK_ENOMEM. */
static int index_lines(hkj_doc *doc) {
  size_t count = 1;
  for (size_t i = 0; i < doc->len; i++)
    if (doc->text[i] == '\n') count++;
  doc->line_starts = malloc(count * sizeof *doc->line_starts);
  if (!doc->line_starts) return HK_ENOMEM;
  doc->line_starts[0] = 0;
  doc->nlines = 1;
  for (size_t i = 0; i < doc->len; i++)
    if (doc->text[i] == '\n') doc->line_starts[doc->nlines++] = i + 1;
  return HK_OK;
}

static void at(hku_diags *d, const hkj_doc *doc, size_t off, const char *msg) {
  int line, col;
  hkj_pos(doc, off, &line, &col);
  hku_diag_add(d, HKU_ERROR, doc->path, line, col, "%s", msg);
}

int hkj_parse(const char *path, const char *text, size_t len, hkj_doc **out,
              hku_diags *d) {
  *out = NULL;
  hkj_doc *doc = calloc(1, sizeof *doc);
  if (!doc) goto oom;
  doc->path = strdup(path ? path : "<input>");
  doc->text = malloc(len + 1);
  if (!doc->path || !doc->text) goto oom;
  memcpy(doc->text, text, len);
  doc->text[len] = '\0';
  doc->len = len;
  if (index_lines(doc) != HK_OK) goto oom;

  const char *nul = memchr(doc->text, '\0', len);
  if (nul) {
    at(d, doc, (size_t)(nul - doc->text),
       "a NUL byte: a kernel file must be UTF-8 text");
    goto fail;
  }
  size_t bad = utf8_invalid_at((const unsigned char *)doc->text, len);
  if (bad < len) {
    at(d, doc, bad, "invalid UTF-8: a kernel file must be UTF-8 text");
    goto fail;
  }
  size_t start = 0;
  if (len >= 3 && memcmp(doc->text, "\xEF\xBB\xBF", 3) == 0) start = 3;

  if (check_syntax(doc, start, d) != HK_OK) goto fail;
  const char *end = NULL;
  pthread_mutex_lock(&cjson_lock);
  cJSON *c = cJSON_ParseWithLengthOpts(doc->text + start, len - start, &end, 0);
  pthread_mutex_unlock(&cjson_lock);
  if (!c) { /* valid JSON that cJSON cannot take: too deep, out of memory */
    at(d, doc, end && end >= doc->text ? (size_t)(end - doc->text) : 0,
       "cannot parse this JSON (nested too deeply, or out of memory)");
    goto fail;
  }
  walker w = {doc->text, len, start, 0};
  doc->root = build(&w, c);
  cJSON_Delete(c);
  if (!doc->root) goto oom;
  size_t nul_at;
  if (find_nul_escape(doc, doc->root, &nul_at)) {
    at(d, doc, nul_at, "\\u0000 is not allowed in a string");
    goto fail;
  }
  *out = doc;
  return HK_OK;
oom:
  hku_diag_add(d, HKU_ERROR, path, 0, 0, "out of memory");
  hkj_free(doc);
  return HK_ENOMEM;
fail:
  hkj_free(doc);
  return HK_ESCHEMA;
}
