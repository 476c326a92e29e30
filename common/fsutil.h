/* fsutil.h — files and folders: whole reads and writes, atomic replacement,
 * folder listings, and the small string helpers that go with paths.
 *
 * Every function follows common/internal.h: HK_OK or a negative HK_E*
 * code; with a hku_diags list, the message names the path; without one,
 * errno says why.
 */
#ifndef HK_FSUTIL_H
#define HK_FSUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

#include "diag.h"
#include "internal.h"

/* Does s end with suffix (and is longer than it)? */
HK_INTERNAL int hku_ends_with(const char *s, const char *suffix);

/* The Levenshtein distance between a and b, for "did you mean" hints;
 * strings longer than 63 bytes count as far from everything. */
HK_INTERNAL size_t hku_edit_distance(const char *a, const char *b);

/* Writes exactly n bytes to fd (EINTR retried, large writes chunked).
 * HK_OK, or HK_EIO with errno set. */
HK_INTERNAL int hku_write_all(int fd, const void *p, size_t n);

/* Reads exactly n bytes of fd at offset off (EINTR retried). HK_OK, or
 * HK_EIO with errno set (EIO on an early end of file). */
HK_INTERNAL int hku_pread_all(int fd, void *p, size_t n, uint64_t off);

/* Reads the whole regular file path into a malloc'ed, NUL-terminated
 * buffer (*out; *len its length without the NUL) and, if st is not NULL,
 * its stat at the time of reading. HK_OK, or HK_EIO ("cannot read: ...",
 * "not a regular file", the file changed while read) / HK_ENOMEM with a
 * message about path in d. */
HK_INTERNAL int hku_read_file(const char *path, char **out, size_t *len,
                              struct stat *st, hku_diags *d);

/* Replaces path with the n bytes of data, atomically: a reader sees the
 * old file or the new one whole, never a part. The bytes go to a new file
 * next to path (".NAME.tmp-XXXXXXXX", created O_EXCL), which is renamed
 * over path; nothing is left behind on failure and the old file stays.
 * The new file gets mode (e.g. 0644, 0755) less the umask, or with
 * HKU_KEEP_MODE the old file's permissions (0666 less the umask when there
 * is none). HK_OK, or HK_EIO / HK_ENOMEM
 * with "cannot write: ..." about path in d. */
#define HKU_KEEP_MODE (~0u)
HK_INTERNAL int hku_write_file_atomic(const char *path, const void *data,
                                      size_t n, unsigned mode, hku_diags *d);

/* The same with the bytes given in nparts pieces, written in order. */
typedef struct hku_part {
  const void *p;
  size_t n;
} hku_part;
HK_INTERNAL int hku_write_parts_atomic(const char *path, const hku_part *parts,
                                       int nparts, unsigned mode,
                                       hku_diags *d);

/* An output file the user named (hk gen -o, hk build -o, hk run --out):
 * written as hku_write_parts_atomic writes path, but a symbolic link is
 * followed (the file it names is replaced, the link stays), and a device,
 * FIFO or socket (/dev/stdout, a pipe) is written in place, not replaced
 * by a regular file; a folder is refused, and so is a file the caller
 * may not write (access W_OK), as a shell's `> FILE` refuses it, though
 * the folder would let it be replaced. In two steps, so that several
 * outputs are all written or none: hku_output_prepare writes the bytes
 * into a new file beside the target (a device: writes them, done), then
 * hku_output_commit renames it over the target, or hku_output_abort
 * removes it. The parts need not outlive prepare. Errors as above, about
 * path. hku_write_output does both steps. */
typedef struct hku_pending {
  char *tmp;  /* the new file, NULL once renamed or for a device */
  char *path; /* the target, links followed */
} hku_pending;
HK_INTERNAL int hku_output_prepare(const char *path, const hku_part *parts,
                                   int nparts, unsigned mode, hku_pending *p,
                                   hku_diags *d);
HK_INTERNAL int hku_output_commit(hku_pending *p, hku_diags *d);
HK_INTERNAL void hku_output_abort(hku_pending *p);
HK_INTERNAL int hku_write_output(const char *path, const hku_part *parts,
                                 int nparts, unsigned mode, hku_diags *d);

/* The same for a copy of the file src (read whole, then written). */
HK_INTERNAL int hku_copy_file_atomic(const char *src, const char *path,
                                     unsigned mode, hku_diags *d);

/* The paths ("DIR/NAME") of the entries of dir whose names end with one of
 * the NULL-terminated suffixes (hidden names skipped; not recursive),
 * sorted by name, into *out (free with hku_free_list). Returns the count
 * (>= 0), or a negative HK_E* code with errno set (HK_EIO: unreadable;
 * HK_ENOMEM), *out then NULL. */
HK_INTERNAL int hku_list_dir(const char *dir, const char *const *suffixes,
                             char ***out);
HK_INTERNAL void hku_free_list(char **v, int n);
/* Removes the folder name (relative to dirfd, or AT_FDCWD) and the files
 * in it, not following a symbolic link to it: a compiler's build folder,
 * which holds files only. What cannot be removed stays. */
HK_INTERNAL void hku_remove_flat_dir(int dirfd, const char *name);

/* The file path names after following symbolic links (malloc'ed; up to 40
 * of them, as the kernel allows), whether or not it exists: the file an
 * output to path replaces or creates. NULL with errno set (ELOOP, ENOMEM,
 * a readlink error). */
HK_INTERNAL char *hku_follow_links(const char *path);

#endif /* HK_FSUTIL_H */
