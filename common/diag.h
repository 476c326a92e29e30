/* diag.h — located diagnostics: "PATH:LINE:COL: error: MESSAGE". */
#ifndef HKU_DIAG_H
#define HKU_DIAG_H

#include <stddef.h>

#include "buf.h"

typedef enum hku_severity { HKU_ERROR, HKU_NOTE } hku_severity;

typedef struct hku_diag {
  hku_severity sev;
  char *path; /* the kernel file */
  int line;   /* 1-based; 0 when the message is about the whole file */
  int col;    /* 1-based, in characters (UTF-8 code points) */
  char *msg;
} hku_diag;

/* A list of diagnostics, in the order they were found. After
 * HKU_DIAGS_MAX errors, further ones are counted but not kept. */
typedef struct hku_diags {
  hku_diag *v;
  size_t n;
  size_t cap;
  size_t nerrors; /* errors reported, kept or not */
  int oom;
  int dup; /* the last error repeated one before: its notes are dropped */
} hku_diags;

#define HKU_DIAGS_INIT {NULL, 0, 0, 0, 0, 0}
#define HKU_DIAGS_MAX 100

void hku_diags_free(hku_diags *d);
/* Adds one diagnostic to d; a NULL d is allowed and keeps nothing. */
void hku_diag_add(hku_diags *d, hku_severity sev, const char *path, int line,
                  int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Appends every diagnostic as one line each, "PATH:LINE:COL: error: MSG\n"
 * (or "PATH: error: MSG\n" without a position). */
void hku_diags_format(const hku_diags *d, hku_buf *out);
/* Appends the first error only, without a trailing newline. */
void hku_diags_first(const hku_diags *d, hku_buf *out);
/* The words of d's first error, without its position (the first
 * diagnostic when none is an error); "out of memory" when d is empty
 * because an allocation failed, else fallback. Never NULL when fallback
 * is not. */
const char *hku_diags_words(const hku_diags *d, const char *fallback);
/* Moves every diagnostic of src to the end of dst; src ends empty. */
void hku_diags_move(hku_diags *dst, hku_diags *src);

#endif
