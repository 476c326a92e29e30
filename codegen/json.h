/* json.h — JSON documents whose every value knows where it is in the file.
 *
 * cJSON parses; it does not record positions. hkj_parse() lets cJSON check
 * the syntax and build the tree, then walks the text alongside that tree and
 * gives every value (and every object key) its byte offset. Offsets turn into
 * LINE:COL with hkj_pos(); an offset inside a string's decoded text (say, a
 * character of a kernel body) turns into a file offset with
 * hkj_str_offset().
 */
#ifndef HKC_JSON_H
#define HKC_JSON_H

#include <stddef.h>

#include "diag.h"

typedef enum hkj_type {
  HKJ_NULL,
  HKJ_FALSE,
  HKJ_TRUE,
  HKJ_NUMBER,
  HKJ_STRING,
  HKJ_ARRAY,
  HKJ_OBJECT
} hkj_type;

typedef struct hkj_node {
  hkj_type type;
  char *key;       /* member name when the parent is an object, else NULL */
  size_t key_off;  /* offset of the key's opening quote */
  size_t off;      /* offset of the value's first byte */
  size_t end;      /* offset one past the value's last byte */
  char *str;       /* strings: the decoded text (UTF-8) */
  size_t str_len;  /* strings: its length in bytes */
  double num;      /* numbers */
  struct hkj_node **kids; /* array elements or object members, in order */
  size_t nkids;
} hkj_node;

typedef struct hkj_doc {
  char *path;
  char *text; /* the file's bytes, NUL-terminated */
  size_t len;
  size_t *line_starts; /* offset of each line's first byte */
  size_t nlines;
  hkj_node *root;
} hkj_doc;

/* Parses text (len bytes, need not be NUL-terminated) read from path.
 * HK_OK and *out; HK_ESCHEMA with one located error added to d (invalid
 * UTF-8, a NUL byte, or the JSON syntax error and where it is); or
 * HK_ENOMEM ("out of memory" in d). */
int hkj_parse(const char *path, const char *text, size_t len, hkj_doc **out,
              hku_diags *d);
void hkj_free(hkj_doc *doc);

/* The 1-based line and column (in characters) of a byte offset. */
void hkj_pos(const hkj_doc *doc, size_t off, int *line, int *col);
/* The file offset of byte `decoded` of a string node's decoded text
 * (decoded == str_len gives the closing quote). */
size_t hkj_str_offset(const hkj_doc *doc, const hkj_node *s, size_t decoded);
/* The raw source text of a value, e.g. "1" or "1.0" for numbers. */
void hkj_raw(const hkj_doc *doc, const hkj_node *v, const char **p, size_t *n);

/* The first member of obj named key, or NULL. */
hkj_node *hkj_get(const hkj_node *obj, const char *key);
const char *hkj_type_name(hkj_type t);

#endif
