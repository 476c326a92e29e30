/* fake_plugin.c — a hand-made prebuilt plugin for test_registry: the
 * exports hk build writes (hk_plugin_abi_version, hk_plugin_description)
 * and the entry points of one elementwise kernel, t_twice (out = 2 x).
 * Compiled with cc -shared -fPIC -nostdlib, and -D to break it:
 *   -DABI=N       claim ABI N (the loader must refuse N != its own)
 *   -DNO_DESC     leave out hk_plugin_description ("not an hk plugin")
 *   -DCALL_PUTS   import puts (a forbidden import)
 *   -DCTOR        run a constructor at load (refused)
 * and -DFACTOR=3.0f to compute out = 3 x instead (a new version).
 * -DOLD_REDUCTION makes it a reduction instead, t_rsum (out = the sum of
 * x, in order), with range, merge and lens but no rowred: a plugin built
 * before that entry point existed (abi.h), which must still load and
 * reduce over axes (the core calls range per row). */
#ifndef ABI
#define ABI 1
#endif
#ifndef FACTOR
#define FACTOR 2.0f
#endif

const unsigned hk_plugin_abi_version = ABI;
#ifdef OLD_REDUCTION
const char hk_plugin_description[] =
    "{\"schema_version\": 1, \"name\": \"t_rsum\", \"kind\": \"reduction\","
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
    " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
    " \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\"}";

void hk_range__t_rsum(void *const *args, unsigned long n, unsigned long begin,
                      unsigned long end, void *partial);
void hk_merge__t_rsum(void *const *args, unsigned long n, const void *partials,
                      unsigned long count);
int hk_lens__t_rsum(void *const *args, unsigned long n, long long *lens);

void hk_range__t_rsum(void *const *args, unsigned long n, unsigned long begin,
                      unsigned long end, void *partial) {
  const float *x = args[0];
  float acc = 0;
  (void)n;
  for (unsigned long i = begin; i < end; i++) acc = acc + x[i];
  *(float *)(partial ? partial : args[1]) = acc;
}

void hk_merge__t_rsum(void *const *args, unsigned long n, const void *partials,
                      unsigned long count) {
  const float *p = partials;
  float acc = 0;
  (void)n;
  for (unsigned long i = 0; i < count; i++) acc = acc + p[i];
  *(float *)args[1] = acc;
}

int hk_lens__t_rsum(void *const *args, unsigned long n, long long *lens) {
  (void)args;
  lens[0] = (long long)n;
  lens[1] = 1;
  return 0;
}
#else
#ifndef NO_DESC
const char hk_plugin_description[] =
    "{\"schema_version\": 1, \"name\": \"t_twice\", \"kind\": \"elementwise\","
    " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"},"
    " {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}],"
    " \"body\": \"out = x * 2.0f;\"}";
#endif

#ifdef CALL_PUTS
int puts(const char *s);
#endif

#ifdef CTOR
static volatile int loaded;
__attribute__((constructor)) static void at_load(void) { loaded = 1; }
#endif

void hk_range__t_twice(void *const *args, unsigned long n,
                       unsigned long begin, unsigned long end, void *partial);
int hk_lens__t_twice(void *const *args, unsigned long n, long long *lens);

void hk_range__t_twice(void *const *args, unsigned long n,
                       unsigned long begin, unsigned long end, void *partial) {
  const float *x = args[0];
  float *out = args[1];
  (void)n;
  (void)partial;
#ifdef CALL_PUTS
  puts("a plugin must not print");
#endif
  for (unsigned long i = begin; i < end; i++) out[i] = x[i] * FACTOR;
}

int hk_lens__t_twice(void *const *args, unsigned long n, long long *lens) {
  (void)args;
  lens[0] = (long long)n;
  lens[1] = (long long)n;
  return 0;
}
#endif /* OLD_REDUCTION */
