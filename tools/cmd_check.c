/* cmd_check.c — hk check: validate kernel files, report every problem. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "build.h"
#include "cli.h"
#include "codegen.h"
#include "compiler.h"
#include "cuda.h"
#include "fsutil.h"

static const char *const help =
    "usage: hk check [--cuda [--arch ARCH]] FILE|DIR ...\n\n"
    "Validates kernel files against the kernel format (schemas/README.md),\n"
    "and compiles their C in memory (libtcc) so that a C error in a body is\n"
    "found too, located in the kernel file.\n"
    "A DIR stands for every *.json file directly in it. Prints nothing and\n"
    "exits 0 when every file is valid; otherwise prints each problem as\n"
    "PATH:LINE:COL: error: FIELD: MESSAGE and exits 1. A kernel name defined\n"
    "by two of the files is an error too, as it is in a plugin folder.\n"
    "  --cuda       also compile the CUDA code of the kernels that target\n"
    "               cuda, with NVRTC (the CUDA toolkit; no GPU needed), so\n"
    "               that what CUDA C++ alone refuses (an implicit void *\n"
    "               conversion, a C++ keyword in a cuda body) is found now,\n"
    "               not at the first GPU call; located as the other errors\n"
    "  --arch ARCH  the architecture compiled for with --cuda: compute_80\n"
    "               (the default: PTX, NVRTC's front end and optimizer,\n"
    "               what finds errors in code), or sm_90 ... (machine code\n"
    "               too, as a GPU call compiles it: slower)\n"
    "Exit status: 0, 1 a problem in a file, 2 another failure (--cuda\n"
    "without NVRTC).\n";

enum { OPT_CUDA, OPT_ARCH };
static const hk_cli_opt options[] = {
    [OPT_CUDA] = {"cuda", 0, NULL, 0},
    [OPT_ARCH] = {"arch", 0, "an architecture (compute_80, sm_90)",
                  HK_CLI_ONCE},
};

/* f's CUDA compiled by NVRTC for arch; its errors, located, into d. */
static void check_cuda(const hk_nvrtc_api_t *nv, const hkc_file *f,
                       const char *arch, hku_diags *d) {
  int any = 0;
  for (int i = 0; i < hkc_file_ninstances(f) && !any; i++)
    any = (hkc_instance_targets(hkc_file_instance(f, i)) & HK_TARGET_CUDA) != 0;
  if (!any) return;
  hkc_unit *u = NULL;
  if (hkc_unit_emit(f, HKC_LANG_CUDA, 0, &u)) {
    d->oom = 1;
    return;
  }
  hk_compiler_t c = hk__compiler_nvrtc(nv);
  hk_compile_opts_t o = {.arch = arch};
  hk_object_t cubin;
  if (hk__build_compile(&c, u, &o, NULL, &cubin, d) == HK_OK)
    hk__object_free(&cubin);
  hkc_unit_free(u);
}

/* 0 when this NVRTC refuses arch as an option (a real name it does not
 * compile for: CUDA 13 has no sm_70), else 1 (a compile of nothing). */
static int arch_supported(const hk_nvrtc_api_t *nv, const char *arch) {
  enum { NVRTC_ERROR_INVALID_OPTION = 5 }; /* nvrtc.h's */
  nvrtcProgram prog = NULL;
  if (nv->nvrtcCreateProgram(&prog, "extern \"C\" __global__ void p() {}",
                             "probe.cu", 0, NULL, NULL))
    return 1; /* the files' compiles will say what is wrong */
  char opt[96];
  snprintf(opt, sizeof opt, "--gpu-architecture=%s", arch);
  const char *opts[] = {opt};
  nvrtcResult r = nv->nvrtcCompileProgram(prog, 1, opts);
  nv->nvrtcDestroyProgram(&prog);
  return r != NVRTC_ERROR_INVALID_OPTION;
}

/* 1 when s names a GPU architecture as NVRTC takes it: sm_NN, sm_NNa,
 * compute_NN (virtual: PTX only). */
static int arch_ok(const char *s) {
  size_t i = !strncmp(s, "sm_", 3) ? 3 : !strncmp(s, "compute_", 8) ? 8 : 0;
  size_t at = i;
  if (!i || !(s[i] >= '1' && s[i] <= '9')) return 0;
  while (s[i] >= '0' && s[i] <= '9') i++;
  if (s[i] == 'a' || s[i] == 'f') i++;
  return s[i] == '\0' && i - at >= 2;
}

/* An instance of files[file], by name. */
typedef struct named {
  const char *name;
  int file, inst;
} named;

static int cmp_named(const void *pa, const void *pb) {
  const named *a = pa, *b = pb;
  int c = strcmp(a->name, b->name);
  if (c) return c;
  if (a->file != b->file) return a->file < b->file ? -1 : 1;
  return (a->inst > b->inst) - (a->inst < b->inst);
}

/* A clash: instance (file, inst) repeats (ofile, oinst), ofile < file. */
typedef struct clash {
  int file, inst, ofile, oinst;
} clash;

static int cmp_clash(const void *pa, const void *pb) {
  const clash *a = pa, *b = pb;
  if (a->file != b->file) return a->file < b->file ? -1 : 1;
  if (a->inst != b->inst) return a->inst < b->inst ? -1 : 1;
  if (a->ofile != b->ofile) return a->ofile < b->ofile ? -1 : 1;
  return (a->oinst > b->oinst) - (a->oinst < b->oinst);
}

/* A registered name defined twice among the files is reported at each
 * later definition, naming each earlier one (in file order). The names
 * are sorted, so that many files of many kernels cost n log n. */
static int check_across(hkc_file **files, int n, hku_diags *d) {
  size_t total = 0, nclash = 0, cap = 0;
  for (int a = 0; a < n; a++) total += (size_t)hkc_file_ninstances(files[a]);
  named *v = malloc((total + 1) * sizeof *v);
  clash *c = NULL;
  if (!v) return HK_ENOMEM;
  size_t m = 0;
  for (int a = 0; a < n; a++)
    for (int i = 0; i < hkc_file_ninstances(files[a]); i++)
      v[m++] = (named){hkc_instance_name(hkc_file_instance(files[a], i)), a, i};
  qsort(v, total, sizeof *v, cmp_named);
  for (size_t j = 0; j < total; j++)
    for (size_t k = j; k-- > 0 && !strcmp(v[k].name, v[j].name);) {
      if (v[k].file == v[j].file) continue; /* the file's own check */
      if (nclash == cap) {
        cap = cap ? 2 * cap : 16;
        clash *g = realloc(c, cap * sizeof *c);
        if (!g) {
          free(v);
          free(c);
          return HK_ENOMEM;
        }
        c = g;
      }
      c[nclash++] = (clash){v[j].file, v[j].inst, v[k].file, v[k].inst};
    }
  free(v);
  if (nclash) qsort(c, nclash, sizeof *c, cmp_clash);
  for (size_t j = 0; j < nclash; j++) {
    const hkc_instance *x = hkc_file_instance(files[c[j].file], c[j].inst);
    const hkc_instance *y = hkc_file_instance(files[c[j].ofile], c[j].oinst);
    int l1, c1, l2, c2;
    hkc_instance_name_pos(files[c[j].file], x, &l1, &c1);
    hkc_instance_name_pos(files[c[j].ofile], y, &l2, &c2);
    hku_diag_add(d, HKU_ERROR, hkc_file_path(files[c[j].file]), l1, c1,
                 "%sname: kernel \"%s\" is also defined in %s:%d:%d",
                 hkc_instance_field_prefix(x), hkc_instance_name(x),
                 hkc_file_path(files[c[j].ofile]), l2, c2);
  }
  free(c);
  return HK_OK;
}

static const char *const kernel_files[] = {".json", NULL};

/* 1 when path is a regular file that begins as an ELF object does. */
static int is_elf(const char *path) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return 0;
  struct stat st;
  unsigned char m[4] = {0};
  int elf = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) &&
            read(fd, m, 4) == 4 && !memcmp(m, "\177ELF", 4);
  close(fd);
  return elf;
}

/* A file's identity, to check each file once however it is named. */
typedef struct file_id {
  dev_t dev;
  ino_t ino;
} file_id;

int hk_cmd_check(int argc, char **argv) {
  /* the files and folders, in the order given */
  const char **args = calloc((size_t)argc + 1, sizeof *args);
  int nargs = 0;
  if (!args) return hk_cli_internal("check", "out of memory");
  hk_cli_parser p;
  int cuda = 0;
  const char *arch = NULL;
  hk_cli_parser_init(&p, "check", help, options,
                     sizeof options / sizeof *options, argc, argv);
  for (int c; (c = hk_cli_next(&p)) != HK_CLI_END;) {
    if (c == HK_CLI_EXIT) {
      free(args);
      return p.status;
    }
    if (c == OPT_CUDA)
      cuda = 1;
    else if (c == OPT_ARCH)
      arch = p.value;
    else
      args[nargs++] = p.value;
  }
  if (!nargs) {
    free(args);
    return hk_cli_usage("check", "no kernel file or folder given");
  }
  if (arch && !cuda) {
    free(args);
    return hk_cli_usage("check", "--arch is for --cuda");
  }
  if (arch && !arch_ok(arch)) {
    free(args);
    return hk_cli_usage("check", "--arch %s: expected compute_ or sm_ and the "
                                 "compute capability's digits (compute_80, "
                                 "sm_90a)",
                        arch);
  }
  const hk_nvrtc_api_t *nv = NULL;
  if (cuda) {
    int version;
    hku_diags why = HKU_DIAGS_INIT;
    if (hk__nvrtc_load(&nv, &version, &why)) {
      fprintf(stderr, "hk check: --cuda: %s\n", hk__cuda_why(&why));
      hku_diags_free(&why);
      free(args);
      return HK_EXIT_INTERNAL;
    }
    hku_diags_free(&why);
    if (arch && !arch_supported(nv, arch)) {
      free(args);
      return hk_cli_usage("check", "--arch %s: NVRTC %d.%d does not compile "
                                   "for it",
                          arch, version / 1000, version % 1000 / 10);
    }
  }
  hku_diags d = HKU_DIAGS_INIT;
  int cap = 16, nfiles = 0;
  hkc_file **files = malloc((size_t)cap * sizeof *files);
  file_id *ids = malloc((size_t)cap * sizeof *ids);
  int rc = HK_EXIT_OK;
  if (!files || !ids) {
    free(files);
    free(ids);
    free(args);
    return hk_cli_internal("check", "out of memory");
  }
  for (int i = 0; i < nargs; i++) {
    char **paths = NULL;
    int n = 1;
    if (hk_cli_is_dir(args[i])) {
      n = hku_list_dir(args[i], kernel_files, &paths);
      if (n < 0) {
        hku_diag_add(&d, HKU_ERROR, args[i], 0, 0, "cannot read folder: %s",
                     strerror(errno));
        continue;
      }
    }
    for (int j = 0; j < n; j++) {
      const char *path = paths ? paths[j] : args[i];
      /* a file named twice (a.json ./a.json, or in a folder given too) is
       * checked once: it does not clash with itself */
      struct stat st = {0};
      int seen = 0;
      if (stat(path, &st) == 0)
        for (int q = 0; q < nfiles && !seen; q++)
          seen = ids[q].dev == st.st_dev && ids[q].ino == st.st_ino;
      if (seen) continue;
      if (is_elf(path)) { /* not "a NUL byte" */
        hku_diag_add(&d, HKU_ERROR, path, 0, 0,
                     "an object file (a prebuilt plugin?): hk check checks "
                     "kernel files (.json); hk list --plugins DIR shows what "
                     "a prebuilt plugin holds");
        continue;
      }
      hkc_file *f;
      if (hkc_file_load(path, &f, &d) != 0) continue;
      size_t before = d.nerrors;
      (void)hk__build_check(f, &d); /* its problems are in d */
      hk_cli_check_stdlib_names(f, &d);
      if (nv && d.nerrors == before) check_cuda(nv, f, arch ? arch : "compute_80", &d);
      if (nfiles == cap) {
        cap *= 2;
        hkc_file **nf = realloc(files, (size_t)cap * sizeof *files);
        file_id *ni = nf ? realloc(ids, (size_t)cap * sizeof *ids) : NULL;
        if (nf) files = nf;
        if (!ni) {
          hkc_file_free(f);
          d.oom = 1;
          break;
        }
        ids = ni;
      }
      ids[nfiles] = (file_id){st.st_dev, st.st_ino};
      files[nfiles++] = f;
    }
    hku_free_list(paths, paths ? n : 0);
  }
  if (check_across(files, nfiles, &d) != HK_OK) d.oom = 1;
  if (d.nerrors || d.oom) {
    hku_buf out = HKU_BUF_INIT;
    hku_diags_format(&d, &out);
    fputs(hku_buf_str(&out), stderr);
    hku_buf_free(&out);
    rc = d.nerrors ? HK_EXIT_USER : HK_EXIT_INTERNAL;
  }
  for (int i = 0; i < nfiles; i++) hkc_file_free(files[i]);
  free(files);
  free(ids);
  free(args);
  hku_diags_free(&d);
  return rc;
}
