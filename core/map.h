/* map.h — kernel name -> handle, an open-addressing hash table. */
#ifndef HK_MAP_H
#define HK_MAP_H

#include <stddef.h>

#include "internal.h"

typedef struct hk_map {
  void **slots; /* values; NULL = empty */
  const char *(*key)(const void *value); /* a value's name */
  size_t cap;   /* a power of two */
  size_t count;
} hk_map_t;

/* An empty map whose values' names key() gives. */
HK_INTERNAL void hk__map_init(hk_map_t *m, const char *(*key)(const void *));
HK_INTERNAL void hk__map_free(hk_map_t *m);
/* The value named name, or NULL. */
HK_INTERNAL void *hk__map_get(const hk_map_t *m, const char *name);
/* Inserts value (its name must not be present). HK_OK, or HK_ENOMEM (the map
 * is unchanged). */
HK_INTERNAL int hk__map_put(hk_map_t *m, void *value);
/* Makes room for extra more values, so that that many puts cannot fail.
 * HK_OK, or HK_ENOMEM (the map is unchanged). */
HK_INTERNAL int hk__map_reserve(hk_map_t *m, size_t extra);
/* Removes the value named name, if present; returns it or NULL. */
HK_INTERNAL void *hk__map_del(hk_map_t *m, const char *name);

#endif
