/* json.c — positioned JSON documents on top of cJSON (see json.h). */
#include "json.h"

#include <cJSON.h>
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

static int build_kids(walker *w, const cJSON *c, hkj_node *n, int is_obj) {
  size_t count = 0;
  for (const cJSON *k = c->child; k; k = k->next) count++;
  if (count) {
    n->kids = calloc(count, sizeof *n->kids);
    if (!n->kids) return -1;
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
    if (!kid) return -1;
    n->kids[n->nkids++] = kid;
    if (is_obj) {
      kid->key_off = key_off;
      kid->key = strdup(k->string ? k->string : "");
      if (!kid->key) return -1;
    }
    skip_ws(w);
    if (w->p < w->len && w->t[w->p] == ',') w->p++;
  }
  skip_ws(w);
  w->p++; /* '}' or ']' */
  return 0;
}

static hkj_node *build(walker *w, const cJSON *c) {
  hkj_node *n = calloc(1, sizeof *n);
  if (!n) return NULL;
  skip_ws(w);
  n->off = w->p;
  int ok = 0;
  if (cJSON_IsObject(c)) {
    n->type = HKJ_OBJECT;
    ok = build_kids(w, c, n, 1) == 0;
  } else if (cJSON_IsArray(c)) {
    n->type = HKJ_ARRAY;
    ok = build_kids(w, c, n, 0) == 0;
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

/* ---- Syntax errors ------------------------------------------------------ */

/* Words for what is wrong at offset p, where cJSON gave up. */
static void syntax_message(const hkj_doc *doc, size_t p, hkc_buf *m) {
  const char *t = doc->text;
  size_t q = p;
  while (q < doc->len && (unsigned char)t[q] <= 32) q++;
  if (q >= doc->len) {
    hkc_buf_put(m,
                "invalid JSON: unexpected end of file (an object, array or "
                "string is not closed)");
    return;
  }
  char c = t[q];
  size_t back = q;
  while (back > 0 && (unsigned char)t[back - 1] <= 32) back--;
  if ((c == '}' || c == ']') && back > 0 && t[back - 1] == ',') {
    hkc_buf_printf(m, "invalid JSON: trailing comma before '%c'", c);
  } else if (c == '\'') {
    hkc_buf_put(m, "invalid JSON: strings must use double quotes");
  } else if (c == '/' && q + 1 < doc->len &&
             (t[q + 1] == '/' || t[q + 1] == '*')) {
    hkc_buf_put(m, "invalid JSON: comments are not allowed (use a \"doc\" "
                   "field or a key starting with '_')");
  } else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_') {
    size_t e = q;
    while (e < doc->len && e - q < 40 &&
           ((t[e] >= 'a' && t[e] <= 'z') || (t[e] >= 'A' && t[e] <= 'Z') ||
            (t[e] >= '0' && t[e] <= '9') || t[e] == '_'))
      e++;
    hkc_buf_printf(m,
                   "invalid JSON: unexpected '%.*s' (strings need double "
                   "quotes; the literals are true, false and null)",
                   (int)(e - q), t + q);
  } else if (c == '"' && back > 0 && strchr("\"0123456789el]}", t[back - 1])) {
    hkc_buf_put(m, "invalid JSON: missing ',' before this value");
  } else if ((unsigned char)c >= 32 && (unsigned char)c < 127) {
    hkc_buf_printf(m, "invalid JSON: unexpected '%c'", c);
  } else {
    hkc_buf_printf(m, "invalid JSON: unexpected byte 0x%02x",
                   (unsigned char)c);
  }
}

/* Where cJSON stops is sometimes inside the token it could not read (a bad
 * escape, a control character in a string): the error is reported there. */
static size_t syntax_offset(const hkj_doc *doc, const char *end) {
  if (!end || end < doc->text) return 0;
  size_t p = (size_t)(end - doc->text);
  return p > doc->len ? doc->len : p;
}

/* ---- Entry points -------------------------------------------------------- */

static int index_lines(hkj_doc *doc) {
  size_t count = 1;
  for (size_t i = 0; i < doc->len; i++)
    if (doc->text[i] == '\n') count++;
  doc->line_starts = malloc(count * sizeof *doc->line_starts);
  if (!doc->line_starts) return -1;
  doc->line_starts[0] = 0;
  doc->nlines = 1;
  for (size_t i = 0; i < doc->len; i++)
    if (doc->text[i] == '\n') doc->line_starts[doc->nlines++] = i + 1;
  return 0;
}

static void at(hkc_diags *d, const hkj_doc *doc, size_t off, const char *msg) {
  int line, col;
  hkj_pos(doc, off, &line, &col);
  hkc_diag_add(d, HKC_ERROR, doc->path, line, col, "%s", msg);
}

int hkj_parse(const char *path, const char *text, size_t len, hkj_doc **out,
              hkc_diags *d) {
  *out = NULL;
  hkj_doc *doc = calloc(1, sizeof *doc);
  if (!doc) goto oom;
  doc->path = strdup(path ? path : "<input>");
  doc->text = malloc(len + 1);
  if (!doc->path || !doc->text) goto oom;
  memcpy(doc->text, text, len);
  doc->text[len] = '\0';
  doc->len = len;
  if (index_lines(doc)) goto oom;

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

  const char *end = NULL;
  pthread_mutex_lock(&cjson_lock);
  cJSON *c = cJSON_ParseWithLengthOpts(doc->text + start, len - start, &end, 0);
  pthread_mutex_unlock(&cjson_lock);
  if (!c) {
    hkc_buf m = HKC_BUF_INIT;
    size_t off = syntax_offset(doc, end);
    syntax_message(doc, off, &m);
    at(d, doc, off, m.oom ? "invalid JSON" : hkc_buf_str(&m));
    hkc_buf_free(&m);
    goto fail;
  }
  /* cJSON accepts and ignores text after the first value; JSON does not. */
  walker w = {doc->text, len, start, 0};
  doc->root = build(&w, c);
  cJSON_Delete(c);
  if (!doc->root) goto oom;
  skip_ws(&w);
  if (w.p < len) {
    at(d, doc, w.p,
       "invalid JSON: unexpected text after the end of the top-level value");
    goto fail;
  }
  size_t nul_at;
  if (find_nul_escape(doc, doc->root, &nul_at)) {
    at(d, doc, nul_at, "\\u0000 is not allowed in a string");
    goto fail;
  }
  *out = doc;
  return 0;
oom:
  hkc_diag_add(d, HKC_ERROR, path, 0, 0, "out of memory");
fail:
  hkj_free(doc);
  return -1;
}

int hkj_load(const char *path, hkj_doc **out, hkc_diags *d) {
  *out = NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    hkc_diag_add(d, HKC_ERROR, path, 0, 0, "cannot read: %s", strerror(errno));
    return -1;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    hkc_diag_add(d, HKC_ERROR, path, 0, 0, "cannot read: not a regular file");
    fclose(f);
    return -1;
  }
  /* Kernel files are small; a huge one is a mistake, not a kernel. */
  if (st.st_size > 64 * 1024 * 1024) {
    hkc_diag_add(d, HKC_ERROR, path, 0, 0,
                 "file too large for a kernel file (%lld bytes; limit 64 MiB)",
                 (long long)st.st_size);
    fclose(f);
    return -1;
  }
  size_t len = (size_t)st.st_size;
  char *buf = malloc(len + 1);
  if (!buf) {
    fclose(f);
    hkc_diag_add(d, HKC_ERROR, path, 0, 0, "out of memory");
    return -1;
  }
  size_t got = fread(buf, 1, len, f);
  int err = ferror(f);
  fclose(f);
  if (err || got != len) {
    free(buf);
    hkc_diag_add(d, HKC_ERROR, path, 0, 0, "cannot read: I/O error");
    return -1;
  }
  int rc = hkj_parse(path, buf, len, out, d);
  free(buf);
  return rc;
}
