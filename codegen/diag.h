/* diag.h — located diagnostics: "PATH:LINE:COL: error: MESSAGE". */
#ifndef HKC_DIAG_H
#define HKC_DIAG_H

#include <stddef.h>

#include "buf.h"

typedef enum hkc_severity { HKC_ERROR, HKC_NOTE } hkc_severity;

typedef struct hkc_diag {
  hkc_severity sev;
  char *path; /* the kernel file */
  int line;   /* 1-based; 0 when the message is about the whole file */
  int col;    /* 1-based, in characters (UTF-8 code points) */
  char *msg;
} hkc_diag;

/* A list of diagnostics, in the order they were found. After
 * HKC_DIAGS_MAX errors, further ones are counted but not kept. */
typedef struct hkc_diags {
  hkc_diag *v;
  size_t n;
  size_t cap;
  size_t nerrors; /* errors reported, kept or not */
  int oom;
} hkc_diags;

#define HKC_DIAGS_INIT {NULL, 0, 0, 0, 0}
#define HKC_DIAGS_MAX 100

void hkc_diags_free(hkc_diags *d);
void hkc_diag_add(hkc_diags *d, hkc_severity sev, const char *path, int line,
                  int col, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
/* Appends every diagnostic as one line each, "PATH:LINE:COL: error: MSG\n"
 * (or "PATH: error: MSG\n" without a position). */
void hkc_diags_format(const hkc_diags *d, hkc_buf *out);
/* Appends the first error only, without a trailing newline. */
void hkc_diags_first(const hkc_diags *d, hkc_buf *out);
/* Moves every diagnostic of src to the end of dst; src ends empty. */
void hkc_diags_move(hkc_diags *dst, hkc_diags *src);

#endif
