/* map.c — kernel name -> handle: open addressing, linear probing, and
 * backward-shift deletion (no tombstones, so lookups stay short after many
 * reloads). Not thread-safe: the registry guards it with its rwlock. */
#include "map.h"

#include "hk.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull; /* FNV-1a */
  for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
  return h ^ (h >> 29);
}

void hk__map_init(hk_map_t *m, const char *(*key)(const void *)) {
  memset(m, 0, sizeof *m);
  m->key = key;
}

void hk__map_free(hk_map_t *m) {
  free(m->slots);
  m->slots = NULL;
  m->cap = m->count = 0;
}

void *hk__map_get(const hk_map_t *m, const char *name) {
  if (!m->cap) return NULL;
  for (size_t i = hash(name) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
    void *v = m->slots[i];
    if (!v) return NULL;
    if (!strcmp(m->key(v), name)) return v;
  }
}

static void place(void **slots, size_t cap, const char *(*key)(const void *),
                  void *v) {
  size_t i = hash(key(v)) & (cap - 1);
  while (slots[i]) i = (i + 1) & (cap - 1);
  slots[i] = v;
}

int hk__map_reserve(hk_map_t *m, size_t extra) {
  size_t cap = m->cap ? m->cap : 128;
  while ((m->count + extra) * 10 > cap * 7) cap *= 2; /* load under 70% */
  if (cap == m->cap) return HK_OK;
  void **slots = calloc(cap, sizeof *slots);
  if (!slots) return HK_ENOMEM;
  for (size_t i = 0; i < m->cap; i++)
    if (m->slots[i]) place(slots, cap, m->key, m->slots[i]);
  free(m->slots);
  m->slots = slots;
  m->cap = cap;
  return HK_OK;
}

int hk__map_put(hk_map_t *m, void *value) {
  if (hk__map_reserve(m, 1)) return HK_ENOMEM;
  HK_ASSERT(!hk__map_get(m, m->key(value)));
  place(m->slots, m->cap, m->key, value);
  m->count++;
  return HK_OK;
}

void *hk__map_del(hk_map_t *m, const char *name) {
  if (!m->cap) return NULL;
  size_t mask = m->cap - 1, i = hash(name) & mask;
  for (;; i = (i + 1) & mask) {
    if (!m->slots[i]) return NULL;
    if (!strcmp(m->key(m->slots[i]), name)) break;
  }
  void *gone = m->slots[i];
  m->slots[i] = NULL;
  m->count--;
  /* Shift later members of the probe run back into the hole. */
  for (size_t j = (i + 1) & mask; m->slots[j]; j = (j + 1) & mask) {
    size_t home = hash(m->key(m->slots[j])) & mask;
    /* slots[j] may move to i when i lies cyclically in [home, j) */
    int movable = (j > i) ? (home <= i || home > j) : (home <= i && home > j);
    if (movable) {
      m->slots[i] = m->slots[j];
      m->slots[j] = NULL;
      i = j;
    }
  }
  return gone;
}
