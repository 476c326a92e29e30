/* npy.h — read and write NumPy .npy files (format versions 1.0, 2.0, 3.0). */
#ifndef HK_TOOLS_NPY_H
#define HK_TOOLS_NPY_H

#include <stddef.h>

#include "buf.h"
#include "diag.h"
#include "fsutil.h" /* hku_pending */
#include "hk.h" /* hk_dtype_t */

#define HK_NPY_MAXDIM 64

/* One array as stored in a .npy file. The reader fills every field from the
 * file; interpreting the bytes is the caller's job, except for `dtype`. */
typedef struct hk_npy {
  char descr[64];    /* the dtype descr as written in the file, e.g. "<f4", "|b1", "<U10" */
  char kind;         /* numpy kind char: 'f' 'i' 'u' 'b' 'c' 'S' 'U' 'V' 'M' 'm' 'O'; 0 if structured */
  char byteorder;    /* '<', '>' or '|' (a '=' in a file is treated as '<' on this little-endian host) */
  size_t itemsize;   /* bytes per element */
  int fortran_order; /* as in the header */
  int ndim;
  size_t shape[HK_NPY_MAXDIM];
  size_t count;      /* product of shape (1 for shape ()) */
  hk_dtype_t dtype;  /* the hk type when descr is one of the hk types in little-endian
                        (or '|' for 1-byte) form, else HK_DTYPE_INVALID: "<f2" is
                        HK_F16, "|b1" HK_BOOL; "<u2" is HK_U16 (NumPy has no bf16:
                        callers take it as HK_BF16 when asked) */
  void *data;        /* count*itemsize bytes, 64-byte aligned, owned; NULL when count*itemsize == 0 */
  int version_major, version_minor;
} hk_npy_t;

/* Errors follow hk's internal convention (common/internal.h): a function that
 * fails returns a negative HK_E* code (HK_EINVAL: the file breaks the format or
 * an argument is bad; HK_EIO: it cannot be opened, read or written; HK_ENOMEM)
 * and adds one error to d (which may be NULL), about the file's name (its path,
 * the name given to hk_npy_parse, or "hk_npy_encode"). hk_npy_error puts it as
 * one line, "NAME: what was wrong (what was expected)", e.g.
 * "a.npy: not a .npy file (bad magic string ...)". */

/* Reads a whole .npy file. Returns HK_OK and fills *out (free with hk_npy_free),
 * or fails (see above) and leaves *out freed/zeroed. Regular files are checked
 * against their size before anything is allocated; pipes (e.g. /dev/fd/N) are
 * read whole and then parsed. */
int hk_npy_read(const char *path, hk_npy_t *out, hku_diags *d);
/* Same, from a memory buffer; `name` is used in messages in place of the path. */
int hk_npy_parse(const void *bytes, size_t len, const char *name, hk_npy_t *out,
                 hku_diags *d);
/* Frees a's data and zeroes *a; a may be NULL or already freed. */
void hk_npy_free(hk_npy_t *a);

/* Writes data (count = product of shape elements of type t, C order, little-endian)
 * as a version 1.0 .npy (2.0 if the header would not fit 1.0), byte for byte as
 * NumPy's np.save writes it. The file is written to a temporary file in the same
 * directory and renamed over PATH, so a failure never leaves a half-written PATH and
 * never destroys an existing one. Returns HK_OK, or fails (see above). */
int hk_npy_write(const char *path, hk_dtype_t t, int ndim, const size_t *shape,
                 const void *data, hku_diags *d);
/* The same in two steps (fsutil.h, hku_output_prepare): the bytes written
 * beside PATH into *p, for hku_output_commit or hku_output_abort, so that
 * several outputs are written all or none. PATH may be a symbolic link
 * (the file it names is replaced) or a device or FIFO (written in place
 * at once: /dev/stdout). */
int hk_npy_write_prepare(const char *path, hk_dtype_t t, int ndim,
                         const size_t *shape, const void *data, hku_pending *p,
                         hku_diags *d);
/* Encodes into a malloc'ed buffer (*bytes, *len) instead of a file. Returns HK_OK,
 * or fails (see above) with *bytes = NULL, *len = 0. */
int hk_npy_encode(hk_dtype_t t, int ndim, const size_t *shape, const void *data,
                  void **bytes, size_t *len, hku_diags *d);
/* Appends d's first error to out as "NAME: message" (nothing when d holds no
 * error; "out of memory" when the list itself ran out); returns out's text. */
const char *hk_npy_error(const hku_diags *d, hku_buf *out);

/* The numpy descr for an hk type ("<f4", "|i1", "<f2", "|b1"; "<u2" for bf16,
 * written as its uint16 bits); NULL for anything else. */
const char *hk_npy_descr_of(hk_dtype_t t);
/* A readable description of any descr for messages, written into buf and returned:
 * "<f4" -> "float32", ">f4" -> "big-endian float32", "|b1" -> "bool",
 * "<c8" -> "complex64", "<U10" -> "str (<U10)", "<M8[ns]" -> "datetime64[ns]". */
const char *hk_npy_describe(const hk_npy_t *a, char *buf, size_t buflen);

#endif /* HK_TOOLS_NPY_H */
