/* cache.h — the disk cache of compiled kernels: shared objects stored under
 * a key, verified by a content digest before anything is loaded. */
#ifndef HK_CACHE_H
#define HK_CACHE_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "diag.h"
#include "hk.h"
#include "internal.h"

/* An entry for key K is the file <dir>/<hex(K)>.so:
 *   [ELF bytes][meta bytes: text, no NUL][keys: nkeys x 32 bytes]
 *   ["HKCACHE2"][u64 LE elf_size][u64 LE meta_size][u64 LE nkeys]
 *   [SHA-256 of every byte before the digest]
 * ELF loaders ignore bytes past the image, so the file is dlopen'ed as is.
 * The keys the file was written for are part of what the digest covers,
 * and an entry is valid only under one of them: a whole, valid entry of
 * other code renamed or linked over K's name is refused like a damaged one.
 * Entries are written to a temp file and renamed into place, so a reader
 * sees a whole entry or none; an entry is never modified once published. */
#define HK_CACHE_MAGIC "HKCACHE2"
#define HK_CACHE_TRAILER 64 /* magic 8 + sizes 24 + digest 32 */
/* Most keys one entry may be written for (a batch is at most 64 files). */
#define HK_CACHE_MAX_KEYS 4096
/* Temp files and build folders older than this (seconds; a compile is
 * stopped after 300) are a killed process's: the first put of each open
 * cache removes them. */
#define HK_CACHE_TEMP_AGE 3600

typedef struct hk_cache hk_cache_t;

/* Opens the cache directory, creating it (mode 0700, parents as needed).
 * dir: NULL (or "") for the default: $HK_CACHE_DIR, else
 * $XDG_CACHE_HOME/hk (an absolute XDG_CACHE_HOME only, as the XDG spec
 * says), else $HOME/.cache/hk, else <home from getpwuid>/.cache/hk.
 * Refuses a directory that is writable by group or others, or owned by a
 * user other than us and root, unless allow_unsafe: whoever can write there
 * chooses the code hk loads. All later operations go through a descriptor
 * of the directory opened here, not its path.
 * HK_OK with *out set, or HK_EIO (cannot be made or opened), HK_EREFUSED
 * (unsafe), HK_ENOMEM, with the reason in d. */
HK_INTERNAL int hk__cache_open(const char *dir, int allow_unsafe,
                               hk_cache_t **out, hku_diags *d);
/* The directory hk__cache_open(NULL, ...) would open, without creating
 * it: HK_OK and *out (malloc'ed), or HK_EIO / HK_ENOMEM said in d. */
HK_INTERNAL int hk__cache_default_dir(char **out, hku_diags *d);
/* Closes c (NULL is fine); entries stay on disk. */
HK_INTERNAL void hk__cache_close(hk_cache_t *c);
/* The directory's path as resolved by hk__cache_open. */
HK_INTERNAL const char *hk__cache_dir(const hk_cache_t *c);

enum { HK_CACHE_HIT = 0, HK_CACHE_MISS = 1, HK_CACHE_CORRUPT = 2 };

/* Looks key up. On a valid entry (*status HK_CACHE_HIT): returns an fd open
 * O_RDONLY | O_CLOEXEC on it (the caller dlopens "/proc/self/fd/N"), with
 * *elf_size the ELF image's size and, if meta != NULL, *meta the meta text
 * (malloc'ed, NUL-terminated). The whole file's digest is verified through
 * that same fd first, so what was verified is what will be loaded.
 * Keep the fd open until the object is dlclose'd: glibc finds an object
 * already loaded by its path name before it opens anything, so a later
 * dlopen("/proc/self/fd/N") of another file that got the same fd number
 * would silently return the first object.
 * Returns -1 with *status HK_CACHE_MISS when there is no entry (or it could
 * not be opened or read for a passing reason such as too many open files or
 * no memory), and with
 * HK_CACHE_CORRUPT when the entry is damaged (bad trailer, wrong digest,
 * truncated, inconsistent sizes, NUL in meta), was written for other keys
 * than key, is not a regular file, is a
 * symlink (never followed), or is unreadable: then it is removed, if the
 * name still refers to the file that was checked (a writer may have renamed
 * a fresh entry over it meanwhile). Thread-safe. */
HK_INTERNAL int hk__cache_get(hk_cache_t *c, const uint8_t key[32],
                              size_t *elf_size, char **meta, int *status);

/* Stores the size bytes at elf (a shared object or a cubin, not empty) as
 * the entry for key, with meta (NULL for none): writes [elf][meta][trailer]
 * to a new temp file in the cache directory (mode 0600, named
 * .hk-<pid>-<random hex>.tmp), fsyncs it and renames it over
 * <hex(key)>.so. The first put of an open cache also removes what killed
 * processes left there, older than HK_CACHE_TEMP_AGE: temp files, the
 * system compiler's build folders (.hk-build-XXXXXX) and half-written
 * compiler identities (.cc-*.id.tmp-*). Concurrent writers of one key are fine: the last rename
 * wins and both entries are whole. HK_OK, or HK_EINVAL (empty) / HK_EIO
 * with the reason in d (the temp file is removed). Thread-safe. */
HK_INTERNAL int hk__cache_put(hk_cache_t *c, const uint8_t key[32],
                              const void *elf, size_t size, const char *meta,
                              hku_diags *d);

/* The same object stored once under several keys (nkeys >= 1): one file,
 * written and synced once, published under each key's name by a hard link
 * (a copy where links are not supported), so that every entry is the same
 * file: verified and loaded once (dl.c knows objects by file identity),
 * whichever key finds it. A batch of kernels compiled together is stored
 * so, under each kernel file's key. HK_OK, or as hk__cache_put. */
HK_INTERNAL int hk__cache_put_keys(hk_cache_t *c, const uint8_t (*keys)[32],
                                   int nkeys, const void *elf, size_t size,
                                   const char *meta, hku_diags *d);

/* The entry of key opened as hk__cache_get does, but NOT verified: only for
 * asking whether the file is one already loaded (dl.c: hk__dl_hold), whose
 * bytes were verified when it was. Its keys are read, though: a file that
 * was not written for key is not key's entry however valid it is. An fd
 * (regular file) or -1. */
HK_INTERNAL int hk__cache_peek(hk_cache_t *c, const uint8_t key[32]);

/* A failure to remember: tier opt could not be built for key (the system
 * compiler rejected the code, or the object was refused), which will not
 * change until the key does (the key holds the source, the compiler's
 * identity, flags and CPU). Stored as <hex(key)>.fail: "HKFAIL1\n" and
 * the note (text, at most HK_CACHE_FAIL_MAX bytes kept), written to a
 * temp file and renamed into place. HK_OK, or HK_EIO said in d. */
#define HK_CACHE_FAIL_MAX 16384
HK_INTERNAL int hk__cache_put_failure(hk_cache_t *c, const uint8_t key[32],
                                      const char *note, hku_diags *d);
/* The remembered failure of key: HK_OK and *note (malloc'ed), or
 * HK_ENOTFOUND (none, or a file that is not one: then it is removed),
 * HK_ENOMEM. */
HK_INTERNAL int hk__cache_get_failure(hk_cache_t *c, const uint8_t key[32],
                                      char **note);

/* Called for each entry by hk__cache_list: path "<dir>/<64 hex>.so", its
 * size and mtime, its meta (NULL when the entry is corrupt) and valid (1
 * when the entry verified, for the key its name says, else 0). meta is only valid during the call. */
typedef void (*hk_cache_list_fn)(void *ctx, const char *path, size_t size,
                                 time_t mtime, const char *meta, int valid);
/* Calls fn for each entry file (<64 lowercase hex>.so) in the directory,
 * verifying each; changes nothing. Returns the number of entries, or HK_EIO
 * when the directory cannot be read. */
HK_INTERNAL int hk__cache_list(hk_cache_t *c, hk_cache_list_fn fn, void *ctx);

/* Removes every entry, every remembered failure, the compilers'
 * identities, and the temp files and compiler build folders older than
 * HK_CACHE_TEMP_AGE (younger ones may belong to a writer or a compile
 * still running, in this process or another); nothing else in the
 * directory is touched. Returns the number of files and build folders
 * removed, or HK_EIO when the directory cannot be read; *kept counts the
 * names that could not be removed (a folder of an entry's name, a
 * directory the caller may not write), an error in why (may be NULL)
 * naming the first. */
HK_INTERNAL int hk__cache_clear(hk_cache_t *c, int *kept, hku_diags *why);

#endif /* HK_CACHE_H */
