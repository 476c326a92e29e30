/* cmd_list.c — hk list: every kernel hk knows, stdlib and plugin folders. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "abi.h"
#include "cli.h"
#include "kernel.h"

static const char *const help =
    "usage: hk list [--plugins DIR]... [--json]\n\n"
    "Lists every kernel: its name, kind, targets, origin (stdlib, json or\n"
    "so), parameters (name:type:role) and description. Plugin folders are\n"
    "those given with --plugins, else those in HK_PLUGIN_PATH (colon-\n"
    "separated). A plugin file that fails is reported on stderr, the others\n"
    "are listed, and the exit status is 1.\n"
    "  --json   one JSON array, an object per kernel\n";

typedef struct listing {
  const hk_kernel_info_t **v;
  int n, cap;
  hk_kernel_info_t **owned; /* infos built from plugin files */
  int nowned;
} listing;

static int add(listing *l, const hk_kernel_info_t *info) {
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 64;
    const hk_kernel_info_t **v = realloc(l->v, (size_t)cap * sizeof *v);
    hk_kernel_info_t **o = realloc(l->owned, (size_t)cap * sizeof *o);
    if (v) l->v = v;
    if (o) l->owned = o;
    if (!v || !o) return -1;
    l->cap = cap;
  }
  l->v[l->n++] = info;
  return 0;
}

static const hk_kernel_info_t *find(const listing *l, const char *name) {
  for (int i = 0; i < l->n; i++)
    if (!strcmp(l->v[i]->name, name)) return l->v[i];
  return NULL;
}

/* Adds the kernels of one plugin kernel file; problems go to d. */
static void add_file(listing *l, const char *path, hkc_diags *d) {
  hkc_file *f;
  if (hkc_file_load(path, &f, d) != 0) return;
  for (int i = 0; i < f->nkernels; i++)
    for (int j = 0; j < f->kernels[i].ninst; j++) {
      const hkc_instance *in = &f->kernels[i].inst[j];
      const hk_kernel_info_t *other = find(l, in->name);
      if (other) {
        int line, col;
        hkj_pos(f->doc, hkj_get(f->kernels[i].node, "name")->off, &line, &col);
        hkc_diag_add(d, HKC_ERROR, path, line, col,
                     "%sname: kernel \"%s\" is already defined by %s (%s); "
                     "this one is not listed",
                     f->kernels[i].prefix, in->name, other->source,
                     other->origin);
        continue;
      }
      hk_kernel_info_t *info = hkc_instance_info_new(in, "json", path);
      if (!info || add(l, info)) {
        free(info);
        d->oom = 1;
        continue;
      }
      l->owned[l->nowned++] = info;
    }
  hkc_file_free(f);
}

static void add_folder(listing *l, const char *dir, hkc_diags *d) {
  char **paths;
  int n = hk_cli_list_dir(dir, 1, &paths);
  if (n < 0) {
    hkc_diag_add(d, HKC_ERROR, dir, 0, 0, "cannot read plugin folder: %s",
                 strerror(errno));
    return;
  }
  for (int i = 0; i < n; i++) {
    size_t len = strlen(paths[i]);
    if (len > 3 && !strcmp(paths[i] + len - 3, ".so"))
      hkc_diag_add(d, HKC_NOTE, paths[i], 0, 0,
                   "prebuilt plugins (.so) are not supported by this hk yet; "
                   "skipped");
    else
      add_file(l, paths[i], d);
  }
  hk_cli_free_list(paths, n);
}

static void targets_str(unsigned t, char *buf, size_t n) {
  snprintf(buf, n, "%s%s%s", (t & HK_TARGET_CPU) ? "cpu" : "",
           (t & HK_TARGET_CPU) && (t & HK_TARGET_CUDA) ? "," : "",
           (t & HK_TARGET_CUDA) ? "cuda" : "");
}

static void params_str(const hk_kernel_info_t *k, hkc_buf *b) {
  for (int i = 0; i < k->nparams; i++)
    hkc_buf_printf(b, "%s%s:%s:%s", i ? " " : "", k->params[i].name,
                   hk_dtype_name(k->params[i].dtype),
                   hk_role_name(k->params[i].role));
}

static void print_json_string(const char *s) {
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\')
      printf("\\%c", *p);
    else if (*p < 32)
      printf("\\u%04x", *p);
    else
      putchar(*p);
  }
  putchar('"');
}

static void print_json(const listing *l) {
  printf("[");
  for (int i = 0; i < l->n; i++) {
    const hk_kernel_info_t *k = l->v[i];
    char t[16];
    targets_str(k->targets, t, sizeof t);
    printf("%s\n  {\"name\": ", i ? "," : "");
    print_json_string(k->name);
    printf(", \"kind\": \"%s\", \"targets\": [", hk_kind_name(k->kind));
    if (k->targets & HK_TARGET_CPU)
      printf("\"cpu\"%s", (k->targets & HK_TARGET_CUDA) ? ", " : "");
    if (k->targets & HK_TARGET_CUDA) printf("\"cuda\"");
    printf("], \"origin\": \"%s\", \"source\": ", k->origin);
    print_json_string(k->source);
    printf(", \"doc\": ");
    print_json_string(k->doc);
    printf(", \"params\": [");
    for (int p = 0; p < k->nparams; p++) {
      printf("%s{\"name\": \"%s\", \"type\": \"%s\", \"role\": \"%s\"",
             p ? ", " : "", k->params[p].name,
             hk_dtype_name(k->params[p].dtype),
             hk_role_name(k->params[p].role));
      if (k->params[p].len) {
        printf(", \"len\": ");
        print_json_string(k->params[p].len);
      }
      printf("}");
    }
    printf("]}");
  }
  printf("\n]\n");
}

static void print_table(const listing *l) {
  int wn = 4, wk = 4, wt = 8, wp = 6;
  hkc_buf p = HKC_BUF_INIT;
  for (int i = 0; i < l->n; i++) {
    int n = (int)strlen(l->v[i]->name);
    if (n > wn) wn = n;
    n = (int)strlen(hk_kind_name(l->v[i]->kind));
    if (n > wk) wk = n;
    params_str(l->v[i], &p);
    if ((int)p.len > wp) wp = (int)p.len;
    hkc_buf_free(&p);
  }
  if (wp > 48) wp = 48;
  printf("%-*s  %-*s  %-*s  %-6s  %-*s  %s\n", wn, "NAME", wk, "KIND", wt,
         "TARGETS", "ORIGIN", wp, "PARAMS", "DOC");
  for (int i = 0; i < l->n; i++) {
    const hk_kernel_info_t *k = l->v[i];
    char t[16];
    targets_str(k->targets, t, sizeof t);
    params_str(k, &p);
    printf("%-*s  %-*s  %-*s  %-6s  %-*s  %s\n", wn, k->name, wk,
           hk_kind_name(k->kind), wt, t, k->origin, wp, hkc_buf_str(&p),
           k->doc);
    hkc_buf_free(&p);
  }
}

int hk_cmd_list(int argc, char **argv) {
  int json = 0, nplug = 0;
  const char **plug = calloc((size_t)argc, sizeof *plug);
  if (!plug) return hk_cli_internal("list", "out of memory");
  for (int i = 1; i < argc; i++) {
    if (hk_cli_is_help(argv[i])) {
      fputs(help, stdout);
      free(plug);
      return HK_EXIT_OK;
    } else if (!strcmp(argv[i], "--json")) {
      json = 1;
    } else if (!strcmp(argv[i], "--plugins")) {
      if (i + 1 >= argc) {
        free(plug);
        return hk_cli_usage("list", "--plugins needs a folder");
      }
      plug[nplug++] = argv[++i];
    } else {
      free(plug);
      return hk_cli_usage("list", "unexpected argument '%s'", argv[i]);
    }
  }
  listing l = {0};
  hkc_diags d = HKC_DIAGS_INIT;
  for (size_t i = 0; i < hk__stdlib_count; i++)
    if (add(&l, &hk__stdlib[i].info)) d.oom = 1;
  char *env = NULL;
  if (nplug) {
    for (int i = 0; i < nplug; i++) add_folder(&l, plug[i], &d);
  } else if (getenv("HK_PLUGIN_PATH") && *getenv("HK_PLUGIN_PATH")) {
    env = strdup(getenv("HK_PLUGIN_PATH"));
    for (char *s = env, *tok; env && (tok = strsep(&s, ":"));)
      if (*tok) add_folder(&l, tok, &d);
  }
  if (json)
    print_json(&l);
  else
    print_table(&l);
  int rc = d.nerrors ? HK_EXIT_USER : d.oom ? HK_EXIT_INTERNAL : HK_EXIT_OK;
  if (d.n || d.oom) {
    hkc_buf msg = HKC_BUF_INIT;
    hkc_diags_format(&d, &msg);
    fputs(hkc_buf_str(&msg), stderr);
    hkc_buf_free(&msg);
  }
  for (int i = 0; i < l.nowned; i++) free(l.owned[i]);
  free(l.owned);
  free(l.v);
  free(env);
  free(plug);
  hkc_diags_free(&d);
  return rc;
}
