/* perms.c — who may choose the code hk loads: the permission check of
 * plugin files and folders. */
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "registry.h"

int hk__check_perms(hk_context_t *ctx, const char *path, hku_diags *d) {
  if (ctx->opts.flags & HK_ALLOW_UNSAFE_PERMISSIONS) return HK_OK;
  struct stat st;
  if (stat(path, &st) != 0) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0, "cannot read: %s", strerror(errno));
    return HK_EIO;
  }
  /* Whoever can write a plugin chooses the code this process runs. */
  if (st.st_mode & (S_IWGRP | S_IWOTH)) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "refused: %s others can write to (mode %03o); run chmod "
                 "go-w on it, or allow unsafe permissions (hk's "
                 "--allow-unsafe-plugins; the flag HK_ALLOW_UNSAFE_PERMISSIONS "
                 "of hk_options_t; Python's allow_unsafe_plugins=True)",
                 S_ISDIR(st.st_mode) ? "a folder" : "a file",
                 (unsigned)(st.st_mode & 0777));
    return HK_EREFUSED;
  }
  if (st.st_uid != geteuid() && st.st_uid != 0) {
    hku_diag_add(d, HKU_ERROR, path, 0, 0,
                 "refused: owned by another user (uid %u); allow unsafe "
                 "permissions to load it anyway",
                 (unsigned)st.st_uid);
    return HK_EREFUSED;
  }
  return HK_OK;
}
