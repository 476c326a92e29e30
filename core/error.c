/* error.c — words for hk's status codes. */
#include "hk.h"

HK_API const char *hk_strerror(int code) {
  switch (code) {
    case HK_OK: return "success";
    case HK_EINVAL: return "invalid argument";
    case HK_ENOMEM: return "out of memory";
    case HK_ENOTFOUND: return "not found";
    case HK_ESCHEMA: return "invalid kernel description";
    case HK_EIO: return "input/output error";
    case HK_ECOMPILE: return "kernel compilation failed";
    case HK_EUNSUPPORTED: return "not supported in this build or on this machine";
    case HK_EINTERNAL: return "internal error in hk";
    default: return "unknown error code";
  }
}
