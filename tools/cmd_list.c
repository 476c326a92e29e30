/* cmd_list.c — hk list: every kernel hk knows, stdlib and plugin folders. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "buf.h"
#include "cli.h"

static const char *const help =
    "usage: hk list [--plugins DIR]... [--json] [--allow-unsafe-plugins]\n\n"
    "Lists every kernel: its name, kind, targets, origin (stdlib, json or\n"
    "so), the tier its calls run on now (inline, jit, opt, so), its\n"
    "GPU column (yes: runs on the GPU here; no: targets cuda, but no CUDA\n"
    "device or GPU code is there; -: no cuda target), its parameters\n"
    "(name:type:role; a rows kernel's buffers of one element a row or\n"
    "shared by the rows add :one or :shared) and description; notes (why\n"
    "a kernel is not on tier\n"
    "opt, why there is no GPU) follow the table. Plugin folders are those given with\n"
    "--plugins, else those in HK_PLUGIN_PATH (colon-separated). Plugin\n"
    "kernels are compiled to list them (tier opt comes from the disk cache\n"
    "when it is there). A plugin file that fails is reported on stderr, the\n"
    "others are listed, and the exit status is 1.\n"
    "  --json   one JSON array, an object per kernel\n";

typedef struct listing {
  hk_kernel_t **v;
  int n, cap;
} listing;

static int collect(hk_kernel_t *k, void *user) {
  listing *l = user;
  if (l->n == l->cap) {
    int cap = l->cap ? l->cap * 2 : 128;
    hk_kernel_t **v = realloc(l->v, (size_t)cap * sizeof *v);
    if (!v) return -1;
    l->v = v;
    l->cap = cap;
  }
  l->v[l->n++] = k;
  return 0;
}

static void targets_str(unsigned t, char *buf, size_t n) {
  snprintf(buf, n, "%s%s%s", (t & HK_TARGET_CPU) ? "cpu" : "",
           (t & HK_TARGET_CPU) && (t & HK_TARGET_CUDA) ? "," : "",
           (t & HK_TARGET_CUDA) ? "cuda" : "");
}

/* name:type:role each; a rows kernel's "one" and "shared" buffers add
 * their row mode (name:type:role:one), which a call's shapes follow. */
static void params_str(const hk_kernel_info_t *k, hku_buf *b) {
  for (int i = 0; i < k->nparams; i++) {
    const hk_param_info_t *p = &k->params[i];
    hku_buf_printf(b, "%s%s:%s:%s%s", i ? " " : "", p->name,
                   hk_dtype_name(p->dtype), hk_role_name(p->role),
                   k->kind != HK_KIND_ROWS || p->role == HK_ROLE_SCALAR ? ""
                   : p->row == HK_ROW_ONE                               ? ":one"
                   : p->row == HK_ROW_SHARED ? ":shared"
                                             : "");
  }
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

/* doc as the table shows it: control characters (an escape sequence, a
 * bell, a tab that would break the columns; C1's in UTF-8 too) as '?'. */
static const char *doc_text(const char *doc, hku_buf *b) {
  b->len = 0;
  hku_buf_put(b, "");
  for (const unsigned char *p = (const unsigned char *)doc; *p; p++) {
    if (*p == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) {
      hku_buf_put(b, "?");
      p++;
    } else if (*p < 0x20 || *p == 0x7f) {
      hku_buf_put(b, "?");
    } else {
      hku_buf_putc(b, (char)*p);
    }
  }
  return hku_buf_str(b);
}

/* The GPU column: "yes" when the kernel can run on the GPU here, "no" when
 * it targets cuda but cannot (no device, or no GPU code), "-" otherwise. */
static const char *gpu_str(const hk_kernel_t *k) {
  if (!(hk_kernel_info(k)->targets & HK_TARGET_CUDA)) return "-";
  return (hk_kernel_backends(k) & HK_TARGET_CUDA) ? "yes" : "no";
}

/* Why GPU entries are missing ("" when CUDA is there). */
static void gpu_note(hku_buf *notes) {
  if (hk_cuda_init() != HK_OK)
    hku_buf_printf(notes, "note: GPU column: %s\n", hk_last_error());
}

static void print_json(const listing *l) {
  printf("[");
  for (int i = 0; i < l->n; i++) {
    const hk_kernel_info_t *k = hk_kernel_info(l->v[i]);
    char note[2048];
    hk_kernel_note(l->v[i], note, sizeof note);
    char t[16];
    targets_str(k->targets, t, sizeof t);
    printf("%s\n  {\"name\": ", i ? "," : "");
    print_json_string(k->name);
    printf(", \"kind\": \"%s\", \"targets\": [", hk_kind_name(k->kind));
    if (k->targets & HK_TARGET_CPU)
      printf("\"cpu\"%s", (k->targets & HK_TARGET_CUDA) ? ", " : "");
    if (k->targets & HK_TARGET_CUDA) printf("\"cuda\"");
    printf("], \"origin\": \"%s\", \"tier\": \"%s\", \"gpu\": %s, "
           "\"note\": ",
           k->origin, hk_tier_name(hk_kernel_tier(l->v[i])),
           !strcmp(gpu_str(l->v[i]), "yes") ? "true" : "false");
    print_json_string(note);
    printf(", \"source\": ");
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
      if (k->kind == HK_KIND_ROWS && k->params[p].role != HK_ROLE_SCALAR) {
        static const char *const rows[] = {"full", "one", "shared"};
        printf(", \"row\": \"%s\"", rows[k->params[p].row]);
      }
      if (k->params[p].doc && *k->params[p].doc) {
        printf(", \"doc\": ");
        print_json_string(k->params[p].doc);
      }
      printf("}");
    }
    printf("]}");
  }
  printf("\n]\n");
}

static void print_table(const listing *l) {
  int wn = 4, wk = 4, wt = 8, wp = 6;
  hku_buf p = HKU_BUF_INIT;
  for (int i = 0; i < l->n; i++) {
    const hk_kernel_info_t *k = hk_kernel_info(l->v[i]);
    int n = (int)strlen(k->name);
    if (n > wn) wn = n;
    n = (int)strlen(hk_kind_name(k->kind));
    if (n > wk) wk = n;
    params_str(k, &p);
    if ((int)p.len > wp) wp = (int)p.len;
    hku_buf_free(&p);
  }
  if (wp > 48) wp = 48;
  printf("%-*s  %-*s  %-*s  %-6s  %-6s  %-3s  %-*s  %s\n", wn, "NAME", wk,
         "KIND", wt, "TARGETS", "ORIGIN", "TIER", "GPU", wp, "PARAMS", "DOC");
  int gpu_missing = 0;
  hku_buf notes = HKU_BUF_INIT, d = HKU_BUF_INIT;
  for (int i = 0; i < l->n; i++) {
    const hk_kernel_info_t *k = hk_kernel_info(l->v[i]);
    char t[16], note[2048];
    targets_str(k->targets, t, sizeof t);
    params_str(k, &p);
    const char *gpu = gpu_str(l->v[i]);
    gpu_missing |= !strcmp(gpu, "no");
    printf("%-*s  %-*s  %-*s  %-6s  %-6s  %-3s  %-*s  %s\n", wn, k->name, wk,
           hk_kind_name(k->kind), wt, t, k->origin,
           hk_tier_name(hk_kernel_tier(l->v[i])), gpu, wp, hku_buf_str(&p),
           doc_text(k->doc, &d));
    hku_buf_free(&p);
    if (*hk_kernel_note(l->v[i], note, sizeof note))
      hku_buf_printf(&notes, "note: %s: %s\n", k->name, note);
  }
  if (gpu_missing) gpu_note(&notes);
  fputs(hku_buf_str(&notes), stdout);
  hku_buf_free(&notes);
  hku_buf_free(&d);
}

enum { OPT_PLUGINS, OPT_JSON, OPT_UNSAFE };
static const hk_cli_opt options[] = {
    [OPT_PLUGINS] = {"plugins", 0, "a folder", HK_CLI_REPEAT},
    [OPT_JSON] = {"json", 0, NULL, 0},
    [OPT_UNSAFE] = {"allow-unsafe-plugins", 0, NULL, 0},
};

int hk_cmd_list(int argc, char **argv) {
  int json = 0, nplug = 0, unsafe = 0;
  const char **plug = calloc((size_t)argc + 1, sizeof *plug);
  if (!plug) return hk_cli_internal("list", "out of memory");
  hk_cli_parser p;
  hk_cli_parser_init(&p, "list", help, options,
                     sizeof options / sizeof *options, argc, argv);
  for (int c; (c = hk_cli_next(&p)) != HK_CLI_END;) {
    if (c == OPT_JSON) {
      json = 1;
    } else if (c == OPT_UNSAFE) {
      unsafe = 1;
    } else if (c == OPT_PLUGINS) {
      plug[nplug++] = p.value;
    } else {
      free(plug);
      if (c == HK_CLI_EXIT) return p.status;
      return hk_cli_usage("list", "unexpected argument '%s'", p.value);
    }
  }
  hk_options_t opts = {0};
  if (nplug) opts.plugin_dirs = plug;
  opts.flags = unsafe ? HK_ALLOW_UNSAFE_PERMISSIONS : 0;
  hk_context_t *ctx;
  if (hk_context_create(&ctx, &opts) != HK_OK) {
    free(plug);
    return hk_cli_internal("list", "%s", hk_last_error());
  }
  /* tier opt's builds end before listing: the notes then say why a kernel
   * stays on tier jit (rather than "compiling in the background", every
   * time, for a kernel opt refuses) */
  hk_context_wait(ctx);
  listing l = {0};
  int rc = HK_EXIT_OK;
  if (hk_kernel_foreach(ctx, collect, &l)) {
    rc = hk_cli_internal("list", "out of memory");
  } else {
    if (json)
      print_json(&l);
    else
      print_table(&l);
    if (*hk_context_problems(ctx)) {
      fputs(hk_context_problems(ctx), stderr);
      rc = HK_EXIT_USER;
    }
  }
  free(l.v);
  hk_context_destroy(ctx);
  free(plug);
  return rc;
}
