/* codegen.h — what the rest of hk uses of the code generator.
 *
 * core/ and tools/ include this header, never kernel.h, emit.h or json.h:
 * kernel files go in, and out come validated descriptions of their
 * instances (opaque, read through the accessors below) and units of
 * generated source, which remember where the author's code landed so that
 * a compiler's errors can be reported in the kernel file. Everything about
 * the format itself stays behind this line.
 *
 * Errors follow common/internal.h: HK_OK or a negative HK_E* code, the
 * words in a hku_diags list.
 */
#ifndef HKC_CODEGEN_H
#define HKC_CODEGEN_H

#include <stddef.h>

#include "buf.h"
#include "diag.h"
#include "hk.h"

typedef struct hkc_file hkc_file;         /* a parsed, validated kernel file */
typedef struct hkc_instance hkc_instance; /* one concrete kernel of a file */
typedef struct hkc_unit hkc_unit;         /* generated source of one file */

/* ---- Kernel files ---- */

/* Parses and validates a kernel file held in memory (path names it in
 * messages). HK_OK and *out, or HK_ESCHEMA (every problem found, located,
 * in d) / HK_ENOMEM. */
int hkc_file_parse(const char *path, const char *text, size_t len,
                   hkc_file **out, hku_diags *d);
/* The same, reading the file (HK_EIO when it cannot be read). */
int hkc_file_load(const char *path, hkc_file **out, hku_diags *d);
void hkc_file_free(hkc_file *f);
/* The path the file was parsed under, and its text as read. */
const char *hkc_file_path(const hkc_file *f);
const char *hkc_file_text(const hkc_file *f);
/* Its instances, in file order (kernels in order, each kernel's
 * instances in the order of its placeholders' types). */
int hkc_file_ninstances(const hkc_file *f);
const hkc_instance *hkc_file_instance(const hkc_file *f, int i);
/* The union of the targets (HK_TARGET_*) of the file's kernels. */
unsigned hkc_file_targets(const hkc_file *f);

/* ---- Instances ---- */

/* Its registered name: "add_f32", or the kernel's name without
 * placeholders. */
const char *hkc_instance_name(const hkc_instance *in);
/* 1 when name is the registered name of an instance of the kernel named
 * base: base, then "_TYPE" per placeholder ("add_f32" of "add",
 * "cast_f32_f16" of "cast"). */
int hkc_is_instance_of(const char *name, const char *base);
hk_kind_t hkc_instance_kind(const hkc_instance *in);
unsigned hkc_instance_targets(const hkc_instance *in);
/* 1 when its code calls a math function (abi.h, HK_ABI_HEAVY). */
int hkc_instance_heavy(const hkc_instance *in);
/* 1 when its kernel asks for "fp": "fast". */
int hkc_instance_fp_fast(const hkc_instance *in);
/* Reductions: the accumulator's size in bytes; else 0. */
size_t hkc_instance_acc_size(const hkc_instance *in);
/* Where its kernel's "name" field is in file f, for messages about it,
 * and the field prefix of its kernel ("" or "kernels[2]."). */
void hkc_instance_name_pos(const hkc_file *f, const hkc_instance *in,
                           int *line, int *col);
const char *hkc_instance_field_prefix(const hkc_instance *in);
/* The public description of an instance, in one malloc'ed block that does
 * not point into the file (free() it). NULL when out of memory. */
hk_kernel_info_t *hkc_instance_info_new(const hkc_instance *in,
                                        const char *origin,
                                        const char *source);

/* 1 when every kernel of f with target (HK_TARGET_CPU or _CUDA) asks for
 * "fp": "fast" (and there is one): its unit for that target may then be
 * compiled with contraction and reassociation, and without -fwrapv; a
 * file that mixes modes is compiled strict, which "fast" allows. */
int hkc_file_fp_fast(const hkc_file *f, unsigned target);

/* ---- Generated source ---- */

typedef enum hkc_lang { HKC_LANG_C, HKC_LANG_CUDA } hkc_lang;

/* With HKC_UNIT_PREBUILT, C for `hk build`: the unit also defines the
 * symbols a prebuilt plugin carries (abi.h: its ABI version and its kernel
 * file's text). */
#define HKC_UNIT_PREBUILT 1u

/* Generates the plugin source of every instance of f with the target of
 * lang (a self-contained translation unit: see emit.h). HK_OK and *out, or
 * HK_ENOMEM. f must outlive the unit. */
int hkc_unit_emit(const hkc_file *f, hkc_lang lang, unsigned flags,
                  hkc_unit **out);
void hkc_unit_free(hkc_unit *u);
/* The kernel file the unit was generated from. */
const hkc_file *hkc_unit_file(const hkc_unit *u);
/* The source text (NUL-terminated) and its length. */
const char *hkc_unit_text(const hkc_unit *u);
size_t hkc_unit_len(const hkc_unit *u);
/* Where the shared prelude (hkc_prelude_text) is in the text: at *off,
 * *len bytes (*len 0 when the unit has none). Cache keys hash the prelude
 * once per process, not once per kernel. */
void hkc_unit_prelude(const hkc_unit *u, size_t *off, size_t *len);
/* C units: how many instances the unit holds code for (those with the
 * cpu target, in file order), and where the i-th one's code is: at *off,
 * *len bytes, after the prelude; the code of the last ends where the
 * instances end. Each instance's code stands alone: the text before the
 * first with any run of them (and, in a prebuilt plugin's unit, the text
 * after the last) is a translation unit for those instances alone. 0 for
 * CUDA units. */
int hkc_unit_ninstances(const hkc_unit *u);
void hkc_unit_instance_code(const hkc_unit *u, int i, size_t *off,
                            size_t *len);
/* The prelude every C plugin unit holds; made once, never freed. NULL
 * when out of memory. */
const char *hkc_prelude_text(size_t *len);
/* Reports the errors in a compiler's output about the unit's source as
 * diagnostics located in the kernel file (PATH:LINE:COL, the field);
 * compiler names the compiler ("tcc", "cc", "nvrtc"). Returns the number
 * of errors reported; 0 when none could be located (the caller then shows
 * the output as it is). */
int hkc_unit_report(const hkc_unit *u, const char *output,
                    const char *compiler, hku_diags *d);

#endif /* HKC_CODEGEN_H */
