/* elfcheck.c — reads a shared object's dynamic section the way the dynamic
 * loader will, and reports its imports, its load-time code and the libraries
 * it pulls in, without loading it.
 *
 * The whole image (`size` bytes) is read into one buffer and every access
 * goes through range checks on that buffer, so no byte pattern can make the
 * reader step outside it. Structures are copied out with memcpy (the file
 * gives no alignment guarantee). Addresses in the dynamic section are
 * virtual addresses; they are turned into file offsets through the PT_LOAD
 * segments, as the loader maps them, and anything that is not backed by file
 * bytes counts as malformed (no hk object keeps tables in .bss).
 */
#include "elfcheck.h"

#include <elf.h>
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* The machine and IRELATIVE relocation type of the objects this build can
 * load; EM_NONE where the checker does not know the host (it then refuses
 * everything). The structures are read in host byte order, so a big-endian
 * host is unknown too. */
#if __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#define HK_ELF_MACHINE EM_NONE
#elif defined(__x86_64__)
#define HK_ELF_MACHINE EM_X86_64
#define HK_R_IRELATIVE R_X86_64_IRELATIVE
#elif defined(__aarch64__)
#define HK_ELF_MACHINE EM_AARCH64
#define HK_R_IRELATIVE R_AARCH64_IRELATIVE
#elif defined(__riscv) && __riscv_xlen == 64
#define HK_ELF_MACHINE EM_RISCV
#define HK_R_IRELATIVE 58 /* R_RISCV_IRELATIVE */
#elif defined(__powerpc64__)
#define HK_ELF_MACHINE EM_PPC64
#define HK_R_IRELATIVE R_PPC64_IRELATIVE
#else
#define HK_ELF_MACHINE EM_NONE
#endif
#ifndef HK_R_IRELATIVE
#define HK_R_IRELATIVE 0xffffffffu /* matches no relocation */
#endif

#ifndef DT_AUDIT
#define DT_AUDIT 0x6ffffefc
#endif
#ifndef DT_DEPAUDIT
#define DT_DEPAUDIT 0x6ffffefb
#endif

/* The image being checked. */
typedef struct elf {
  const uint8_t *p; /* size bytes */
  size_t size;
  Elf64_Ehdr eh;
  const char *path; /* for messages */
  hku_diags *d;
} elf_t;

/* The dynamic tags that matter here; for a tag given twice the last one
 * wins, as in glibc (l_info[tag] is overwritten). */
typedef struct dyn {
  int has[64];      /* by tag, for tags < 64 */
  uint64_t val[64]; /* by tag, for tags < 64 */
  int has_gnu_hash;
  uint64_t gnu_hash;
} dyn_t;

/* Says what is wrong with the object in e->d; returns HK_EREFUSED. */
__attribute__((format(printf, 2, 3))) static int fail(elf_t *e, const char *fmt,
                                                      ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  hku_diag_add(e->d, HKU_ERROR, e->path, 0, 0, "%s", msg);
  return HK_EREFUSED;
}

/* 1 when [off, off + len) lies inside the image (no overflow). */
static int in_file(const elf_t *e, uint64_t off, uint64_t len) {
  return off <= e->size && len <= e->size - off;
}

static Elf64_Phdr phdr(const elf_t *e, unsigned i) {
  Elf64_Phdr ph;
  memcpy(&ph, e->p + e->eh.e_phoff + (uint64_t)i * sizeof ph, sizeof ph);
  return ph;
}

/* The file offset of the virtual range [addr, addr + len), which must lie
 * inside the file-backed part of one PT_LOAD segment; 1 on success. The
 * segments were checked to lie inside the file, so the result does too. */
static int vmap(const elf_t *e, uint64_t addr, uint64_t len, uint64_t *off) {
  for (unsigned i = 0; i < e->eh.e_phnum; i++) {
    Elf64_Phdr ph = phdr(e, i);
    if (ph.p_type != PT_LOAD || addr < ph.p_vaddr) continue;
    uint64_t d = addr - ph.p_vaddr;
    if (d > ph.p_filesz || len > ph.p_filesz - d) continue;
    *off = ph.p_offset + d;
    return 1;
  }
  return 0;
}

/* How many bytes from addr on are file-backed in its PT_LOAD segment. */
static uint64_t vavail(const elf_t *e, uint64_t addr, uint64_t *off) {
  for (unsigned i = 0; i < e->eh.e_phnum; i++) {
    Elf64_Phdr ph = phdr(e, i);
    if (ph.p_type != PT_LOAD || addr < ph.p_vaddr) continue;
    uint64_t d = addr - ph.p_vaddr;
    if (d >= ph.p_filesz) continue;
    *off = ph.p_offset + d;
    return ph.p_filesz - d;
  }
  return 0;
}

static uint32_t rd32(const elf_t *e, uint64_t off) {
  uint32_t v;
  memcpy(&v, e->p + off, 4);
  return v;
}

/* Checks the ELF header and the program and section header tables' bounds. */
static int check_headers(elf_t *e) {
  const uint8_t *id = e->p;
  if (e->size == 0) return fail(e, "empty file");
  if (e->size < SELFMAG || memcmp(id, ELFMAG, SELFMAG) != 0)
    return fail(e, "not an ELF file");
  if (e->size < EI_NIDENT)
    return fail(e, "truncated ELF header (%zu bytes)", e->size);
  if (id[EI_CLASS] != ELFCLASS64)
    return fail(e, "not a 64-bit ELF file (EI_CLASS %u at offset %d)",
                id[EI_CLASS], EI_CLASS);
  if (id[EI_DATA] != ELFDATA2LSB)
    return fail(e, "not a little-endian ELF file (EI_DATA %u at offset %d)",
                id[EI_DATA], EI_DATA);
  if (id[EI_VERSION] != EV_CURRENT)
    return fail(e, "unknown ELF version %u at offset %d", id[EI_VERSION],
                EI_VERSION);
  if (e->size < sizeof e->eh)
    return fail(e, "truncated ELF header (%zu of %zu bytes)", e->size,
                sizeof e->eh);
  memcpy(&e->eh, e->p, sizeof e->eh);
  if (e->eh.e_type != ET_DYN)
    return fail(e, "not a shared object (e_type %u)", (unsigned)e->eh.e_type);
  if (HK_ELF_MACHINE == EM_NONE)
    return fail(e, "cannot check ELF objects on this host architecture");
  if (e->eh.e_machine != HK_ELF_MACHINE)
    return fail(e,
                "built for another machine (e_machine %u, this host needs %u)",
                (unsigned)e->eh.e_machine, (unsigned)HK_ELF_MACHINE);
  if (e->eh.e_phnum == 0 || e->eh.e_phnum == PN_XNUM)
    return fail(e, "no usable program header table (e_phnum %u)",
                (unsigned)e->eh.e_phnum);
  if (e->eh.e_phentsize != sizeof(Elf64_Phdr))
    return fail(e, "program header entry size %u, expected %zu",
                (unsigned)e->eh.e_phentsize, sizeof(Elf64_Phdr));
  if (!in_file(e, e->eh.e_phoff, (uint64_t)e->eh.e_phnum * sizeof(Elf64_Phdr)))
    return fail(
        e,
        "program header table past end of file (offset 0x%llx, %u entries, "
        "file %zu bytes)",
        (unsigned long long)e->eh.e_phoff, (unsigned)e->eh.e_phnum, e->size);
  /* The loader never reads section headers, but a table that points outside
   * the file means the file is truncated or damaged. */
  if (e->eh.e_shoff != 0) {
    uint64_t n = e->eh.e_shnum ? e->eh.e_shnum : 1; /* 0: count in entry 0 */
    if (e->eh.e_shentsize != sizeof(Elf64_Shdr))
      return fail(e, "section header entry size %u, expected %zu",
                  (unsigned)e->eh.e_shentsize, sizeof(Elf64_Shdr));
    if (!in_file(e, e->eh.e_shoff, n * sizeof(Elf64_Shdr)))
      return fail(e,
                  "section header table past end of file (offset 0x%llx, %llu "
                  "entries, file %zu bytes)",
                  (unsigned long long)e->eh.e_shoff, (unsigned long long)n,
                  e->size);
  }
  return 0;
}

/* Checks the PT_LOAD segments (inside the file, in address order, not
 * overlapping, so an address has one meaning) and finds PT_DYNAMIC. */
static int check_segments(elf_t *e, Elf64_Phdr *dynph) {
  int ndyn = 0;
  uint64_t end = 0;
  int nload = 0;
  for (unsigned i = 0; i < e->eh.e_phnum; i++) {
    Elf64_Phdr ph = phdr(e, i);
    if (ph.p_type == PT_DYNAMIC) {
      *dynph = ph;
      ndyn++;
    }
    if (ph.p_type != PT_LOAD) continue;
    if (!in_file(e, ph.p_offset, ph.p_filesz))
      return fail(e,
                  "PT_LOAD segment %u past end of file (offset 0x%llx, 0x%llx "
                  "bytes, file %zu bytes)",
                  i, (unsigned long long)ph.p_offset,
                  (unsigned long long)ph.p_filesz, e->size);
    if (ph.p_filesz > ph.p_memsz || ph.p_memsz > UINT64_MAX - ph.p_vaddr)
      return fail(e, "PT_LOAD segment %u has bad sizes", i);
    if (nload && ph.p_vaddr < end)
      return fail(
          e, "PT_LOAD segment %u overlaps or precedes the one before it", i);
    end = ph.p_vaddr + ph.p_memsz;
    nload++;
  }
  if (nload == 0) return fail(e, "no PT_LOAD segment");
  if (ndyn == 0) return fail(e, "no PT_DYNAMIC segment: not a dynamic object");
  if (ndyn > 1) return fail(e, "%d PT_DYNAMIC segments", ndyn);
  return 0;
}

/* Reads the dynamic array (at PT_DYNAMIC's address, as the loader does) up
 * to DT_NULL; *dynoff and *ndyn give where it is for a second pass. */
static int read_dynamic(elf_t *e, const Elf64_Phdr *dynph, dyn_t *d,
                        uint64_t *dynoff, uint64_t *ndyn) {
  uint64_t avail = vavail(e, dynph->p_vaddr, dynoff);
  uint64_t max = avail / sizeof(Elf64_Dyn);
  if (max == 0)
    return fail(e, "dynamic section (address 0x%llx) not in the file",
                (unsigned long long)dynph->p_vaddr);
  memset(d, 0, sizeof *d);
  for (uint64_t k = 0; k < max; k++) {
    Elf64_Dyn dy;
    memcpy(&dy, e->p + *dynoff + k * sizeof dy, sizeof dy);
    if (dy.d_tag == DT_NULL) {
      *ndyn = k;
      return 0;
    }
    if (dy.d_tag >= 0 && dy.d_tag < 64) {
      d->has[dy.d_tag] = 1;
      d->val[dy.d_tag] = dy.d_un.d_val;
    } else if (dy.d_tag == DT_GNU_HASH) {
      d->has_gnu_hash = 1;
      d->gnu_hash = dy.d_un.d_ptr;
    }
  }
  return fail(
      e, "dynamic section at address 0x%llx has no DT_NULL within the file",
      (unsigned long long)dynph->p_vaddr);
}

/* The name at index idx of the string table [stroff, stroff + strsz), which
 * must end inside the table; NULL if it does not. */
static const char *str_at(const elf_t *e, uint64_t stroff, uint64_t strsz,
                          uint64_t idx) {
  if (idx >= strsz) return NULL;
  const char *s = (const char *)e->p + stroff + idx;
  return memchr(s, '\0', strsz - idx) ? s : NULL;
}

/* The symbol count DT_HASH gives (its nchain), checking the whole table. */
static int count_sysv_hash(elf_t *e, uint64_t addr, uint64_t *count) {
  uint64_t off;
  if (!vmap(e, addr, 8, &off))
    return fail(e, "DT_HASH table (0x%llx) not in the file",
                (unsigned long long)addr);
  uint64_t nbucket = rd32(e, off), nchain = rd32(e, off + 4);
  if (nbucket == 0) return fail(e, "DT_HASH table has no buckets");
  if (!vmap(e, addr, 8 + 4 * (nbucket + nchain), &off))
    return fail(e, "DT_HASH table (%llu buckets, %llu chains) past end of file",
                (unsigned long long)nbucket, (unsigned long long)nchain);
  *count = nchain;
  return 0;
}

/* The symbol count DT_GNU_HASH implies: symbols below symoffset are not
 * hashed (the undefined ones live there); past it, the chain of the highest
 * bucket ends at the last symbol (its entry has bit 0 set). */
static int count_gnu_hash(elf_t *e, uint64_t addr, uint64_t *count) {
  uint64_t off;
  if (!vmap(e, addr, 16, &off))
    return fail(e, "DT_GNU_HASH table (0x%llx) not in the file",
                (unsigned long long)addr);
  uint64_t nbuckets = rd32(e, off), symoffset = rd32(e, off + 4);
  uint64_t bloom = rd32(e, off + 8);
  /* The loader divides by nbuckets and masks with bloom - 1. */
  if (nbuckets == 0 || bloom == 0)
    return fail(e, "DT_GNU_HASH table has no buckets or no bloom filter");
  uint64_t buckets, chains;
  if (__builtin_add_overflow(addr, 16 + 8 * bloom, &buckets) ||
      __builtin_add_overflow(buckets, 4 * nbuckets, &chains) ||
      !vmap(e, buckets, 4 * nbuckets, &off))
    return fail(e, "DT_GNU_HASH buckets (%llu) past end of file",
                (unsigned long long)nbuckets);
  uint64_t maxb = 0;
  for (uint64_t b = 0; b < nbuckets; b++) {
    uint64_t v = rd32(e, off + 4 * b);
    if (v > maxb) maxb = v;
  }
  if (maxb == 0) {
    *count = symoffset;
    return 0;
  }
  if (maxb < symoffset)
    return fail(e, "DT_GNU_HASH bucket %llu below symoffset %llu",
                (unsigned long long)maxb, (unsigned long long)symoffset);
  /* Each step maps one more entry, so the walk ends at the file's end. */
  for (uint64_t i = maxb;; i++) {
    uint64_t coff, at;
    if (__builtin_add_overflow(chains, 4 * (i - symoffset), &at) ||
        !vmap(e, at, 4, &coff))
      return fail(e, "DT_GNU_HASH chain runs past end of file (symbol %llu)",
                  (unsigned long long)i);
    if (rd32(e, coff) & 1) {
      *count = i + 1;
      return 0;
    }
  }
}

/* Scans one relocation table: the highest symbol index it uses, and whether
 * it has an IRELATIVE relocation (a resolver that runs at load). */
static int scan_relocs(elf_t *e, const char *what, uint64_t addr, uint64_t sz,
                       uint64_t ent, uint64_t *maxsym, int *irel) {
  uint64_t off;
  if (sz == 0) return 0;
  if (sz % ent)
    return fail(e, "%s size %llu is not a multiple of %llu", what,
                (unsigned long long)sz, (unsigned long long)ent);
  if (!vmap(e, addr, sz, &off))
    return fail(e, "%s table (0x%llx, %llu bytes) not in the file", what,
                (unsigned long long)addr, (unsigned long long)sz);
  for (uint64_t k = 0; k < sz / ent; k++) {
    uint64_t info; /* r_info follows r_offset in Rel and Rela alike */
    memcpy(&info, e->p + off + k * ent + 8, 8);
    if (ELF64_R_SYM(info) > *maxsym) *maxsym = ELF64_R_SYM(info);
    if (ELF64_R_TYPE(info) == HK_R_IRELATIVE) *irel = 1;
  }
  return 0;
}

/* The symbol count of a SHT_DYNSYM section at file offset symoff, or 0. The
 * loader never uses it; it only widens the check when it says more. */
static uint64_t count_dynsym_section(const elf_t *e, uint64_t symoff) {
  if (e->eh.e_shoff == 0) return 0;
  for (unsigned i = 0; i < e->eh.e_shnum; i++) {
    Elf64_Shdr sh;
    memcpy(&sh, e->p + e->eh.e_shoff + (uint64_t)i * sizeof sh, sizeof sh);
    if (sh.sh_type == SHT_DYNSYM && sh.sh_offset == symoff &&
        sh.sh_entsize == sizeof(Elf64_Sym) &&
        in_file(e, sh.sh_offset, sh.sh_size))
      return sh.sh_size / sizeof(Elf64_Sym);
  }
  return 0;
}

/* Appends " name" (no leading space first) to needed; once a name does not
 * fit, the list ends with "..." (as many dots as fit) and takes no more, so
 * a list that was cut is never mistaken for an empty one. */
static void add_needed(char *needed, size_t len, const char *name) {
  if (!needed || len == 0) return;
  size_t used = strlen(needed);
  if (used >= 3 && strcmp(needed + used - 3, "...") == 0) return; /* cut */
  size_t want = (used ? 1 : 0) + strlen(name);
  if (used + want < len) {
    snprintf(needed + used, len - used, "%s%s", used ? " " : "", name);
    return;
  }
  size_t dots = len - 1 < 3 ? len - 1 : 3;
  if (used + dots >= len) used = len - 1 - dots;
  memset(needed + used, '.', dots);
  needed[used + dots] = '\0';
}

/* What check_image learns about an object, step by step. */
typedef struct image {
  dyn_t d;
  uint64_t dynoff, ndyn;   /* the dynamic array */
  uint64_t stroff, strsz;  /* the string table, when DT_STRTAB */
  uint64_t count, symoff;  /* the symbols in reach, and where they are */
  int run;                 /* HK_ELF_RUNS_* */
} image_t;

/* Code that runs by itself. glibc calls DT_INIT whenever it is present,
 * and walks an init array of DT_INIT_ARRAYSZ bytes (a missing size is read
 * as garbage, so it counts). */
static int runs_by_itself(const dyn_t *d) {
  int run = 0;
  if (d->has[DT_INIT]) run |= HK_ELF_RUNS_AT_LOAD;
  if (d->has[DT_INIT_ARRAY] &&
      (!d->has[DT_INIT_ARRAYSZ] || d->val[DT_INIT_ARRAYSZ]))
    run |= HK_ELF_RUNS_AT_LOAD;
  if (d->has[DT_PREINIT_ARRAY] &&
      (!d->has[DT_PREINIT_ARRAYSZ] || d->val[DT_PREINIT_ARRAYSZ]))
    run |= HK_ELF_RUNS_AT_LOAD;
  if (d->has[DT_FINI]) run |= HK_ELF_RUNS_AT_UNLOAD;
  if (d->has[DT_FINI_ARRAY] &&
      (!d->has[DT_FINI_ARRAYSZ] || d->val[DT_FINI_ARRAYSZ]))
    run |= HK_ELF_RUNS_AT_UNLOAD;
  return run;
}

/* The string table: every name must end inside it. 0 or -1. */
static int string_table(elf_t *e, image_t *im) {
  const dyn_t *d = &im->d;
  if (!d->has[DT_STRTAB]) return 0;
  if (!d->has[DT_STRSZ]) return fail(e, "DT_STRTAB without DT_STRSZ");
  im->strsz = d->val[DT_STRSZ];
  if (!vmap(e, d->val[DT_STRTAB], im->strsz, &im->stroff))
    return fail(e, "string table (0x%llx, %llu bytes) not in the file",
                (unsigned long long)d->val[DT_STRTAB],
                (unsigned long long)im->strsz);
  return 0;
}

/* Scans the relocation tables (DT_RELA, DT_REL, DT_JMPREL) for the
 * highest symbol index they use (*maxsym) and IRELATIVE ones (*irel). 0
 * or -1. */
static int scan_all_relocs(elf_t *e, const dyn_t *d, uint64_t *maxsym,
                           int *irel) {
  if (d->has[DT_RELAENT] && d->val[DT_RELAENT] != sizeof(Elf64_Rela))
    return fail(e, "DT_RELAENT %llu, expected %zu",
                (unsigned long long)d->val[DT_RELAENT], sizeof(Elf64_Rela));
  if (d->has[DT_RELENT] && d->val[DT_RELENT] != sizeof(Elf64_Rel))
    return fail(e, "DT_RELENT %llu, expected %zu",
                (unsigned long long)d->val[DT_RELENT], sizeof(Elf64_Rel));
  if (d->has[DT_RELA] && scan_relocs(e, "DT_RELA", d->val[DT_RELA],
                                     d->has[DT_RELASZ] ? d->val[DT_RELASZ] : 0,
                                     sizeof(Elf64_Rela), maxsym, irel))
    return HK_EREFUSED;
  if (d->has[DT_REL] && scan_relocs(e, "DT_REL", d->val[DT_REL],
                                    d->has[DT_RELSZ] ? d->val[DT_RELSZ] : 0,
                                    sizeof(Elf64_Rel), maxsym, irel))
    return HK_EREFUSED;
  if (!d->has[DT_JMPREL]) return 0;
  uint64_t kind = d->has[DT_PLTREL] ? d->val[DT_PLTREL] : DT_RELA;
  if (kind != DT_RELA && kind != DT_REL)
    return fail(e, "DT_PLTREL %llu is neither DT_RELA nor DT_REL",
                (unsigned long long)kind);
  return scan_relocs(e, "DT_JMPREL", d->val[DT_JMPREL],
                     d->has[DT_PLTRELSZ] ? d->val[DT_PLTRELSZ] : 0,
                     kind == DT_RELA ? sizeof(Elf64_Rela) : sizeof(Elf64_Rel),
                     maxsym, irel);
}

/* How far the symbol table reaches: whatever the loader could index
 * (hash tables, relocations, the section), and where it is. 0 or -1. */
static int symbol_table(elf_t *e, image_t *im) {
  const dyn_t *d = &im->d;
  uint64_t count = 0, n = 0, maxsym = 0;
  int irel = 0;
  if (d->has[DT_HASH]) {
    if (count_sysv_hash(e, d->val[DT_HASH], &n)) return HK_EREFUSED;
    if (n > count) count = n;
  }
  if (d->has_gnu_hash) {
    if (count_gnu_hash(e, d->gnu_hash, &n)) return HK_EREFUSED;
    if (n > count) count = n;
  }
  if (scan_all_relocs(e, d, &maxsym, &irel)) return HK_EREFUSED;
  if (irel) im->run |= HK_ELF_RUNS_AT_LOAD;
  if (maxsym && maxsym + 1 > count) count = maxsym + 1;
  if (d->has[DT_SYMTAB]) {
    if (d->has[DT_SYMENT] && d->val[DT_SYMENT] != sizeof(Elf64_Sym))
      return fail(e, "DT_SYMENT %llu, expected %zu",
                  (unsigned long long)d->val[DT_SYMENT], sizeof(Elf64_Sym));
    if (!vmap(e, d->val[DT_SYMTAB], 0, &im->symoff))
      return fail(e, "dynamic symbol table (0x%llx) not in the file",
                  (unsigned long long)d->val[DT_SYMTAB]);
    n = count_dynsym_section(e, im->symoff);
    if (n > count) count = n;
    if (count > e->size / sizeof(Elf64_Sym) ||
        !vmap(e, d->val[DT_SYMTAB], count * sizeof(Elf64_Sym), &im->symoff))
      return fail(
          e, "dynamic symbol table (%llu symbols at 0x%llx) past end of file",
          (unsigned long long)count, (unsigned long long)d->val[DT_SYMTAB]);
  } else if (count > 1) {
    return fail(e, "symbols are used (%llu) but there is no DT_SYMTAB",
                (unsigned long long)count);
  }
  im->count = count;
  return 0;
}

/* Every symbol in reach: names valid, undefined ones asked about. Index 0
 * is the null symbol, never looked up. 0, 1 (a refused import, the first
 * one in bad) or -1. */
static int check_symbols(elf_t *e, image_t *im, hk_elf_allow_fn allow,
                         void *ctx, char *bad, size_t badlen) {
  int result = 0;
  for (uint64_t i = 1; i < im->count; i++) {
    Elf64_Sym s;
    memcpy(&s, e->p + im->symoff + i * sizeof s, sizeof s);
    const char *name = "";
    if (s.st_name) {
      if (!im->d.has[DT_STRTAB])
        return fail(e, "symbol %llu has a name but there is no DT_STRTAB",
                    (unsigned long long)i);
      name = str_at(e, im->stroff, im->strsz, s.st_name);
      if (!name)
        return fail(e, "symbol %llu: name offset %u outside the string table",
                    (unsigned long long)i, (unsigned)s.st_name);
    }
    if (s.st_shndx != SHN_UNDEF) {
      if (ELF64_ST_TYPE(s.st_info) == STT_GNU_IFUNC)
        im->run |= HK_ELF_RUNS_AT_LOAD;
      continue;
    }
    if (!name[0] || allow(name, ctx)) continue;
    if (result == 0) {
      result = 1;
      if (bad && badlen) snprintf(bad, badlen, "%s", name);
    }
  }
  return result;
}

/* Libraries the object pulls in, from a second pass over the dynamic
 * array, into needed. 0 or -1. */
static int list_needed(elf_t *e, const image_t *im, char *needed,
                       size_t neededlen) {
  for (uint64_t k = 0; k < im->ndyn; k++) {
    Elf64_Dyn dy;
    memcpy(&dy, e->p + im->dynoff + k * sizeof dy, sizeof dy);
    if (dy.d_tag != DT_NEEDED && dy.d_tag != DT_FILTER &&
        dy.d_tag != DT_AUXILIARY && dy.d_tag != DT_AUDIT &&
        dy.d_tag != DT_DEPAUDIT)
      continue;
    if (!im->d.has[DT_STRTAB])
      return fail(
          e, "dynamic entry %llu names a library but there is no DT_STRTAB",
          (unsigned long long)k);
    const char *name = str_at(e, im->stroff, im->strsz, dy.d_un.d_val);
    if (!name)
      return fail(
          e, "dynamic entry %llu: name offset %llu outside the string table",
          (unsigned long long)k, (unsigned long long)dy.d_un.d_val);
    if (dy.d_tag == DT_NEEDED &&
        (!strcmp(name, "libc.so.6") || !strcmp(name, "libm.so.6")))
      continue;
    add_needed(needed, neededlen, name);
  }
  return 0;
}

/* The whole check of the image in e (hk__elf_check_imports' contract). */
static int check_image(elf_t *e, hk_elf_allow_fn allow, void *ctx, char *bad,
                       size_t badlen, int *runs, char *needed,
                       size_t neededlen) {
  Elf64_Phdr dynph = {0};
  image_t im;
  memset(&im, 0, sizeof im);
  if (check_headers(e) || check_segments(e, &dynph) ||
      read_dynamic(e, &dynph, &im.d, &im.dynoff, &im.ndyn))
    return HK_EREFUSED;
  im.run = runs_by_itself(&im.d);
  if (string_table(e, &im) || symbol_table(e, &im)) return HK_EREFUSED;
  int result = check_symbols(e, &im, allow, ctx, bad, badlen);
  if (result < 0 || list_needed(e, &im, needed, neededlen)) return HK_EREFUSED;
  if (runs) *runs = im.run;
  return result;
}

/* Reads the first size bytes of the regular file at fd into *p
 * (malloc'ed). HK_OK, or HK_EREFUSED said through e. */
static int read_image(elf_t *e, int fd, size_t size, uint8_t **p) {
  struct stat st;
  if (fstat(fd, &st) != 0)
    return fail(e, "cannot stat the file: %s", strerror(errno));
  if (!S_ISREG(st.st_mode)) return fail(e, "not a regular file");
  if (size == 0) return fail(e, "empty file");
  if ((uint64_t)st.st_size < size)
    return fail(e,
                "file holds %lld bytes, fewer than the %zu of the ELF image",
                (long long)st.st_size, size);
  *p = malloc(size);
  if (!*p) return fail(e, "out of memory reading %zu bytes", size);
  for (size_t got = 0; got < size;) {
    ssize_t r = pread(fd, *p + got, size - got, (off_t)got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) {
      free(*p);
      *p = NULL;
      return r < 0 ? fail(e, "read error at offset %zu: %s", got,
                          strerror(errno))
                   : fail(e,
                          "file ends at %zu bytes, before the %zu of the ELF "
                          "image",
                          got, size);
    }
    got += (size_t)r;
  }
  return 0;
}

HK_INTERNAL int hk__elf_check_imports(int fd, size_t size,
                                      hk_elf_allow_fn allow, void *ctx,
                                      char *bad, size_t badlen, int *runs_code,
                                      char *needed, size_t neededlen,
                                      const char *path, hku_diags *d) {
  elf_t e = {.p = NULL, .size = size, .path = path, .d = d};
  if (bad && badlen) bad[0] = '\0';
  if (needed && neededlen) needed[0] = '\0';
  if (runs_code) *runs_code = 0;
  uint8_t *p = NULL;
  int r = !allow ? fail(&e, "no allow callback") : read_image(&e, fd, size, &p);
  if (r == 0) {
    e.p = p;
    r = check_image(&e, allow, ctx, bad, badlen, runs_code, needed,
                    neededlen);
    free(p);
  }
  if (r < 0) {
    /* A malformed object reports nothing but the error. */
    if (bad && badlen) bad[0] = '\0';
    if (needed && neededlen) needed[0] = '\0';
    if (runs_code) *runs_code = 0;
    return HK_EREFUSED;
  }
  return r;
}
