/* error.c — words and names for hk's status codes, from HK_ERRNO_MAP. */
#include "hk.h"

HK_API const char *hk_strerror(int code) {
  switch (code) {
    case HK_OK: return "success";
#define HK__XX(name, value, words) \
  case HK_##name: return words;
    HK_ERRNO_MAP(HK__XX)
#undef HK__XX
    default: return "unknown error code";
  }
}

HK_API const char *hk_err_name(int code) {
  switch (code) {
    case HK_OK: return "HK_OK";
#define HK__XX(name, value, words) \
  case HK_##name: return "HK_" #name;
    HK_ERRNO_MAP(HK__XX)
#undef HK__XX
    default: return "HK_E?";
  }
}
