/* test_parse.c — the kernel-file parser and validator (codegen/parse.c,
 * codegen/json.c) and the checks on author code (codegen/lex.c).
 *
 * Most of it is tables: a kernel file's text, how many errors it must give,
 * where the first one is (LINE:COL, columns in characters) and words its
 * message must contain. A position is written by hand, or as "the start of
 * the nth occurrence of this text" for long files; where both are given they
 * must agree, which keeps the helper that turns offsets into LINE:COL honest.
 * Then: valid files (the stdlib's own and some written here) with the
 * structure they parse into, instance naming, several errors in one file,
 * the diagnostic format, and hkj_pos / hkj_str_offset on their own.
 *
 * Texts use real newlines so that positions mean something. Inside them a
 * JSON escape is written with a doubled backslash: "\\n" is the two
 * characters \n in the file, a newline only in the decoded string. C11
 * (not gnu11) replaces trigraphs even in string literals, so the texts
 * write them with a backslash between the question marks.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "kernel.h"

static const char *const PATH = "t.json";

/* ---- Helpers ------------------------------------------------------------- */

/* LINE:COL (1-based; columns count UTF-8 code points) of byte off of text. */
static void text_pos(const char *text, size_t off, int *line, int *col) {
  int l = 1, c = 1;
  for (size_t i = 0; i < off; i++) {
    if (text[i] == '\n') {
      l++;
      c = 1;
    } else if (((unsigned char)text[i] & 0xC0) != 0x80) {
      c++;
    }
  }
  *line = l;
  *col = c;
}

/* The position of the start of the nth (1-based) occurrence of at in text;
 * 0 when there are fewer. */
static int marker_pos(const char *text, const char *at, int nth, int *line,
                      int *col) {
  const char *p = text;
  for (int k = 0; k < (nth ? nth : 1); k++) {
    p = strstr(k ? p + 1 : p, at);
    if (!p) return 0;
  }
  text_pos(text, (size_t)(p - text), line, col);
  return 1;
}

static size_t count_errors(const hku_diags *d) {
  size_t n = 0;
  for (size_t i = 0; i < d->n; i++) n += d->v[i].sev == HKU_ERROR;
  return n;
}

static const hku_diag *first_error(const hku_diags *d) {
  for (size_t i = 0; i < d->n; i++)
    if (d->v[i].sev == HKU_ERROR) return &d->v[i];
  return NULL;
}

/* Prints what was reported, to make a failing check readable. */
static void dump(const char *what, const char *text, const hku_diags *d) {
  hku_buf b = HKU_BUF_INIT;
  hku_diags_format(d, &b);
  fprintf(stderr, "  case: %s\n  ---- file ----\n%s\n  ---- got ----\n%s",
          what, text, b.len ? hku_buf_str(&b) : "(no diagnostics)\n");
  hku_buf_free(&b);
}

/* Parses text as PATH; the result and the diagnostics are the caller's. */
static int parse_n(const char *text, size_t len, hkc_file **f,
                   hku_diags *d) {
  return hkc_file_parse(PATH, text, len, f, d);
}

static int parse(const char *text, hkc_file **f, hku_diags *d) {
  return parse_n(text, strlen(text), f, d);
}

/* ---- The tables ------------------------------------------------------------ */

typedef struct pcase {
  const char *what;
  const char *text;
  int nerr;        /* errors in all; -1: one or more */
  const char *at;  /* the first error is at the nth occurrence of at ... */
  int nth;         /* (0 means 1) */
  int line, col;   /* ... and/or here (0, 0: not written by hand) */
  const char *has1, *has2; /* its message contains these (NULL: skip) */
} pcase;

static int ncases_run;

static void run_case(const pcase *c) {
  ncases_run++;
  hkc_file *f = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  int rc = parse(c->text, &f, &d);
  int before = check_failures;

  int want_line = c->line, want_col = c->col;
  if (c->at) {
    int ml, mc;
    int found = marker_pos(c->text, c->at, c->nth, &ml, &mc);
    CHECK_MSG(found, "%s: marker \"%s\" #%d not in the text", c->what, c->at,
              c->nth ? c->nth : 1);
    if (found && c->line) {
      /* the hand-computed position and the helper must agree */
      CHECK_MSG(ml == c->line && mc == c->col,
                "%s: marker gives %d:%d, hand-computed %d:%d", c->what, ml,
                mc, c->line, c->col);
    }
    if (found) want_line = ml, want_col = mc;
  }

  if (c->nerr == 0) {
    CHECK_MSG(rc == 0 && f != NULL, "%s: expected to parse", c->what);
    CHECK_MSG(d.n == 0, "%s: expected no diagnostics, got %zu", c->what, d.n);
  } else {
    CHECK_MSG(rc == HK_ESCHEMA && f == NULL, "%s: expected to fail", c->what);
    size_t n = count_errors(&d);
    if (c->nerr > 0)
      CHECK_MSG(n == (size_t)c->nerr, "%s: expected %d errors, got %zu",
                c->what, c->nerr, n);
    else
      CHECK_MSG(n >= 1, "%s: expected an error", c->what);
    CHECK_MSG(d.nerrors == n, "%s: nerrors %zu, kept %zu", c->what,
              d.nerrors, n);
    const hku_diag *g = first_error(&d);
    if (g) {
      CHECK_MSG(g->line == want_line && g->col == want_col,
                "%s: first error at %d:%d, expected %d:%d", c->what, g->line,
                g->col, want_line, want_col);
      CHECK_MSG(strcmp(g->path, PATH) == 0, "%s: path %s", c->what, g->path);
      if (c->has1)
        CHECK_MSG(strstr(g->msg, c->has1) != NULL,
                  "%s: message \"%s\" lacks \"%s\"", c->what, g->msg, c->has1);
      if (c->has2)
        CHECK_MSG(strstr(g->msg, c->has2) != NULL,
                  "%s: message \"%s\" lacks \"%s\"", c->what, g->msg, c->has2);
    }
  }
  if (check_failures != before) dump(c->what, c->text, &d);
  hkc_file_free(f);
  hku_diags_free(&d);
}

static void run_cases(const pcase *cs, size_t n, const char *area) {
  int before = check_failures;
  for (size_t i = 0; i < n; i++) run_case(&cs[i]);
  printf("%-22s %3zu cases%s\n", area, n,
         check_failures != before ? "  (some FAILED)" : "");
}

#define RUN(table) run_cases(table, sizeof table / sizeof *table, #table)

/* The pieces that many texts share. */
#define SV "\"schema_version\": 1"
#define PX "{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\"}"
#define PY "{\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\"}"
#define PS "{\"name\": \"s\", \"type\": \"f32\", \"role\": \"scalar\"}"
#define PO "{\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\"}"
#define PM "{\"name\": \"m\", \"type\": \"i64\", \"role\": \"scalar\"}"
#define HEAD "{" SV ", \"name\": \"k\", \"kind\": \"elementwise\",\n"
#define KBODY "  \"params\": [" PX ", " PY "],\n  \"body\": \"y = x;\"\n"

/* An elementwise kernel whose body (JSON text) is on line 3; the body's
 * first character is at column 12. */
#define EW(body)                                                      \
  HEAD "  \"params\": [" PX ", " PY "],\n"                            \
       "  \"body\": " body "}\n"

/* A reduction over x (in), s (scalar), out (out): map on line 3 (first
 * character at column 11), combine on line 4 (15), identity on line 5 (16),
 * then `more` (",\n  \"finalize\": ..." puts finalize's at 6:16). */
#define RED(map, combine, identity, more)                              \
  "{" SV ", \"name\": \"r\", \"kind\": \"reduction\",\n"               \
  "  \"params\": [" PX ", " PS ", " PO "],\n"                         \
  "  \"map\": " map ",\n"                                              \
  "  \"combine\": " combine ",\n"                                      \
  "  \"identity\": " identity more "\n}\n"

/* A raw kernel over x (in), y (out), m (scalar); `more` from line 3 on. */
#define RAW(more)                                                      \
  "{" SV ", \"name\": \"w\", \"kind\": \"raw\",\n"                     \
  "  \"params\": [" PX ", " PY ", " PM "],\n" more "}\n"

/* A raw kernel whose y param has the given len (JSON text), at 3:56. */
#define RAWL(len)                                                      \
  "{" SV ", \"name\": \"w\", \"kind\": \"raw\",\n"                     \
  "  \"params\": [" PX ",\n"                                           \
  "    {\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\", \"len\": " \
  len "},\n    " PM "],\n  \"cpu\": \"y[0] = x[0];\"\n}\n"

/* 63 and 64 characters. */
#define N63 "k123456789k123456789k123456789k123456789k123456789k123456789abc"
#define N64 N63 "d"

/* ---- JSON -------------------------------------------------------------------- */

static const pcase json_cases[] = {
    {"empty file", "", 1, NULL, 0, 1, 1, "invalid JSON", "end of file"},
    {"only whitespace", "\n  \n", 1, NULL, 0, 3, 1, "end of file", NULL},
    {"invalid UTF-8 (a stray 0xff)",
     "{\n  \"doc\": \"caf\xc3\xa9 \xff\"\n}", 1, "\xff", 0, 2, 16,
     "invalid UTF-8", NULL},
    {"invalid UTF-8 (overlong)", "{\"doc\": \"\xc0\xaf\"}", 1, "\xc0", 0, 1,
     10, "invalid UTF-8", NULL},
    {"invalid UTF-8 (a surrogate)", "{\"doc\": \"\xed\xa0\x80\"}", 1, NULL, 0,
     1, 10, "invalid UTF-8", NULL},
    {"invalid UTF-8 (above U+10FFFF)", "{\"doc\": \"\xf4\x90\x80\x80\"}", 1,
     NULL, 0, 1, 10, "invalid UTF-8", NULL},
    {"invalid UTF-8 (cut at the end)", "{}\xc3", 1, NULL, 0, 1, 3,
     "invalid UTF-8", NULL},
    {"invalid UTF-8 (a lone continuation byte)", "{\"d\xc3\xa9\": \"\x80\"}",
     1, NULL, 0, 1, 9, "invalid UTF-8", NULL},
    {"BOM, then a syntax error on line 2", "\xEF\xBB\xBF{\n  \"a\" 1\n}", 1,
     NULL, 0, 2, 7, "invalid JSON", NULL},
    {"missing comma between members", "{\n  \"a\": 1\n  \"b\": 2\n}", 1, NULL,
     0, 3, 3, "invalid JSON", "missing ','"},
    {"missing comma after a string", "{\"a\": \"x\" \"b\": 2}", 1, NULL, 0, 1,
     11, "missing ','", NULL},
    {"trailing comma in an object", "{\n  \"a\": 1,\n}", 1, NULL, 0, 3, 1,
     "trailing comma before '}'", NULL},
    {"trailing comma in an object, file ending in a newline",
     "{\n  \"a\": 1,\n}\n", 1, NULL, 0, 3, 1, "trailing comma before '}'",
     NULL},
    {"comma right after '{'", "{,}", 1, NULL, 0, 1, 2, "unexpected ','",
     NULL},
    {"missing ':'", "{\"a\" 1}", 1, NULL, 0, 1, 6, "invalid JSON", NULL},
    {"trailing comma in an array", "{\"a\": [1, 2, ]}", 1, NULL, 0, 1, 14,
     "trailing comma before ']'", NULL},
    {"single-quoted key", "{'a': 1}", 1, NULL, 0, 1, 2, "double quotes",
     NULL},
    {"single-quoted value", "{\"a\": 'x'}", 1, NULL, 0, 1, 7,
     "double quotes", NULL},
    {"line comment", "{\n  // note\n  \"a\": 1\n}", 1, NULL, 0, 2, 3,
     "comments are not allowed", NULL},
    {"block comment", "/* note */ {}", 1, NULL, 0, 1, 1,
     "comments are not allowed", NULL},
    {"unquoted key", "{\n  name: 1\n}", 1, NULL, 0, 2, 3,
     "unexpected 'name'", NULL},
    {"bare word value", "{\"a\": yes}", 1, NULL, 0, 1, 7, "unexpected 'yes'",
     NULL},
    {"unterminated object", "{\"a\": 1", 1, NULL, 0, 1, 8, "end of file",
     NULL},
    {"unterminated array", "{\"a\": [1, 2", 1, NULL, 0, 1, 12,
     "end of file", NULL},
    {"unterminated string", "{\"a\": \"abc", 1, NULL, 0, 1, 11,
     "end of file", "not closed"},
    {"text after the top-level value", "{}\n{}", 1, NULL, 0, 2, 1,
     "after the end of the top-level value", NULL},
    {"a word after the top-level value", "{} x", 1, NULL, 0, 1, 4,
     "after the end", NULL},
    {"\\u0000 in a string", "{\"doc\": \"a\\u0000b\"}", 1, NULL, 0, 1, 11,
     "\\u0000 is not allowed", NULL},
    {"\\u0000 in a key", "{\"a\\u0000\": 1}", 1, NULL, 0, 1, 4,
     "\\u0000 is not allowed", NULL},
    {"root is an array", "[1, 2]", 1, NULL, 0, 1, 1, "got an array",
     "\"kernels\""},
    {"root is a string", "\n\n  \"x\"", 1, NULL, 0, 3, 3, "got a string",
     NULL},
    {"root is a number", "42", 1, NULL, 0, 1, 1, "got a number", NULL},
    {"root is null", "null", 1, NULL, 0, 1, 1, "got null", NULL},
    /* RFC 8259: control characters in strings must be escaped. */
    {"raw tab in a string",
     "{" SV ", \"name\": \"k\", \"doc\": \"a\tb\", \"kind\": "
     "\"elementwise\",\n" KBODY "}",
     1, "\t", 0, 1, 45, "invalid JSON", NULL},
    {"raw newline in a string", EW("\"y = x;\ny = y;\""), 1, NULL, 0, 3, 18,
     "invalid JSON", NULL},
    {"unknown escape", "{\"doc\": \"a\\qb\"}", 1, NULL, 0, 1, 11,
     "invalid JSON", NULL},
};

/* ---- Top level -------------------------------------------------------------- */

#define K_OK                                                           \
  "{\"name\": \"k\", \"kind\": \"elementwise\", \"params\": [" PX ", " PY \
  "], \"body\": \"y = x;\"}"
#define K_OK2                                                          \
  "{\"name\": \"k2\", \"kind\": \"elementwise\", \"params\": [" PX ", " PY \
  "], \"body\": \"y = x;\"}"
#define VERSIONED(v)                                                   \
  "{\"schema_version\": " v ", \"name\": \"k\", \"kind\": \"elementwise\",\n" KBODY "}"

static const pcase top_cases[] = {
    {"schema_version missing",
     "{\n  \"name\": \"k\", \"kind\": \"elementwise\",\n" KBODY "}", 1, NULL,
     0, 1, 1, "kernel: missing required field \"schema_version\"", "expected 1"},
    {"schema_version 2", VERSIONED("2"), 1, "2,", 0, 1, 20,
     "schema_version: unsupported schema_version 2", "newer"},
    {"schema_version \"1\"", VERSIONED("\"1\""), 1, NULL, 0, 1, 20,
     "schema_version: expected the number 1, got a string", NULL},
    {"schema_version 1.0", VERSIONED("1.0"), 1, NULL, 0, 1, 20,
     "schema_version: expected the number 1, got 1.0", NULL},
    {"schema_version 0", VERSIONED("0"), 1, NULL, 0, 1, 20,
     "expected the number 1, got 0", NULL},
    {"schema_version -1", VERSIONED("-1"), 1, NULL, 0, 1, 20,
     "expected the number 1, got -1", NULL},
    {"schema_version true", VERSIONED("true"), 1, NULL, 0, 1, 20,
     "expected the number 1, got a boolean", NULL},
    {"schema_version null", VERSIONED("null"), 1, NULL, 0, 1, 20,
     "got null", NULL},
    {"schema_version 2.0", VERSIONED("2.0"), 1, NULL, 0, 1, 20,
     "schema_version", NULL},
    {"kernels without schema_version", "{\"kernels\": [\n  " K_OK "\n]}", 1,
     NULL, 0, 1, 1, "file: missing required field \"schema_version\"", NULL},
    {"kernels with schema_version 2",
     "{\"schema_version\": 2,\n  \"kernels\": [" K_OK "]}", 1, NULL, 0, 1,
     20, "schema_version: unsupported schema_version 2", NULL},
    {"inner schema_version 2",
     "{" SV ", \"kernels\": [\n  {\"schema_version\": 2, \"name\": \"k\", "
     "\"kind\": \"elementwise\", \"params\": [" PX ", " PY
     "], \"body\": \"y = x;\"}]}",
     1, NULL, 0, 2, 22, "kernels[0].schema_version: unsupported", NULL},
    {"inner schema_version \"1\"",
     "{" SV ", \"kernels\": [" K_OK ",\n  {\"schema_version\": \"1\", "
     "\"name\": \"k3\", \"kind\": \"elementwise\", \"params\": [" PX ", " PY
     "], \"body\": \"y = x;\"}]}",
     1, NULL, 0, 2, 22, "kernels[1].schema_version: expected the number 1",
     NULL},
    {"kernels empty", "{" SV ",\n  \"kernels\": []}", 1, NULL, 0, 2, 14,
     "kernels: expected a non-empty array of kernel objects", NULL},
    {"kernels an object", "{" SV ",\n  \"kernels\": {}}", 1, NULL, 0, 2, 14,
     "kernels: expected a non-empty array", NULL},
    {"kernels a string", "{" SV ",\n  \"kernels\": \"k\"}", 1, NULL, 0, 2,
     14, "kernels: expected a non-empty array", NULL},
    {"kernels holding a number",
     "{" SV ",\n  \"kernels\": [" K_OK ",\n    7]}", 1, NULL, 0, 3, 5,
     "kernels[1]: expected a kernel object, got a number", NULL},
    {"kernels holding an array", "{" SV ",\n  \"kernels\": [[]]}", 1, NULL,
     0, 2, 15, "kernels[0]: expected a kernel object, got an array", NULL},
    {"unknown top-level field next to kernels",
     "{" SV ",\n  \"kernels\": [" K_OK "],\n  \"extra\": 1}", 1, NULL, 0, 3,
     3, "unknown field \"extra\"", "schema_version, kernels, doc"},
    {"a kernel field next to kernels",
     "{" SV ",\n  \"kernels\": [" K_OK "],\n  \"name\": \"k\"}", 1, NULL, 0,
     3, 3, "unknown field \"name\"", NULL},
    {"top-level doc not a string",
     "{" SV ", \"doc\": 5,\n  \"kernels\": [" K_OK "]}", 1, NULL, 0, 1, 30,
     "doc: expected", "got a number"},
    {"duplicate key at the top",
     "{" SV ",\n  \"name\": \"a\",\n  \"name\": \"b\", \"kind\": "
     "\"elementwise\",\n" KBODY "}",
     1, NULL, 0, 3, 3, "name: duplicate field",
     "first given at line 2, column 3"},
    {"duplicate schema_version",
     "{\"schema_version\": 1, \"schema_version\": 1, \"name\": \"k\", "
     "\"kind\": \"elementwise\",\n" KBODY "}",
     1, NULL, 0, 1, 23, "schema_version: duplicate field",
     "line 1, column 2"},
    {"duplicate kernels",
     "{" SV ",\n  \"kernels\": [" K_OK "],\n  \"kernels\": [" K_OK2 "]}", 1,
     NULL, 0, 3, 3, "kernels: duplicate field", "line 2, column 3"},
    {"duplicate key spelled with an escape",
     "{" SV ", \"name\": \"k\",\n  \"n\\u0061me\": \"k\", \"kind\": "
     "\"elementwise\",\n" KBODY "}",
     1, NULL, 0, 2, 3, "name: duplicate field", "line 1, column 23"},
    {"duplicate '_' key", "{" SV ", \"_a\": 1,\n  \"_a\": 2, \"name\": \"k\", "
                          "\"kind\": \"elementwise\",\n" KBODY "}",
     1, NULL, 0, 2, 3, "_a: duplicate field", NULL},
};

/* Numbers too large for any integer type must be refused without undefined
 * behaviour. Run last: under -fsanitize=undefined a conversion of 1e300 to
 * an integer aborts the program, and the other results should come first. */
static const pcase huge_cases[] = {
    {"schema_version 1e300", VERSIONED("1e300"), 1, NULL, 0, 1, 20,
     "schema_version", NULL},
    {"schema_version -1e300", VERSIONED("-1e300"), 1, NULL, 0, 1, 20,
     "schema_version", NULL},
};

/* ---- Kernel fields ------------------------------------------------------------ */

/* name value at 1:31 */
#define NAMED(n)                                                       \
  "{" SV ", \"name\": " n ", \"kind\": \"elementwise\",\n" KBODY "}"
/* kind value at 1:44 */
#define KINDED(k) "{" SV ", \"name\": \"k\", \"kind\": " k ",\n" KBODY "}"
/* targets value at 2:14 */
#define TGT(t) HEAD "  \"targets\": " t ",\n" KBODY "}"
/* types value at 2:12; x's type is given */
#define TYP(t, xtype)                                                  \
  HEAD "  \"types\": " t ",\n  \"params\": [{\"name\": \"x\", \"type\": " \
  xtype ", \"role\": \"in\"}, " PY "],\n  \"body\": \"y = x;\"\n}"

static const pcase kernel_cases[] = {
    {"name missing", "{" SV ",\n  \"kind\": \"elementwise\",\n" KBODY "}", 1,
     NULL, 0, 1, 1, "kernel: missing required field \"name\"", NULL},
    {"name a number", NAMED("42"), 1, "42", 0, 1, 31,
     "name: expected a C identifier, got a number", NULL},
    {"name starting with a digit", NAMED("\"1abc\""), 1, NULL, 0, 1, 31,
     "name: \"1abc\" is not a C identifier", NULL},
    {"name with a dash", NAMED("\"a-b\""), 1, NULL, 0, 1, 31,
     "\"a-b\" is not a C identifier", NULL},
    {"name empty", NAMED("\"\""), 1, NULL, 0, 1, 31,
     "is not a C identifier", NULL},
    {"name with a space", NAMED("\"a b\""), 1, NULL, 0, 1, 31,
     "is not a C identifier", NULL},
    {"name non-ASCII", NAMED("\"caf\xc3\xa9\""), 1, NULL, 0, 1, 31,
     "is not a C identifier", NULL},
    {"name of 64 characters", NAMED("\"" N64 "\""), 1, NULL, 0, 1, 31,
     "name: is 64 characters long; at most 63", NULL},
    {"doc a number",
     "{" SV ", \"name\": \"k\", \"doc\": 5, \"kind\": \"elementwise\",\n" KBODY
     "}",
     1, NULL, 0, 1, 43, "doc: expected a one-line string, got a number",
     NULL},
    {"doc of two lines",
     "{" SV ", \"name\": \"k\",\n  \"doc\": \"one\\ntwo\", \"kind\": "
     "\"elementwise\",\n" KBODY "}",
     1, NULL, 0, 2, 10, "doc: must be one line", NULL},
    {"doc with a CR",
     "{" SV ", \"name\": \"k\",\n  \"doc\": \"one\\r\", \"kind\": "
     "\"elementwise\",\n" KBODY "}",
     1, NULL, 0, 2, 10, "doc: must be one line", NULL},
    {"kind missing", "{" SV ", \"name\": \"k\",\n" KBODY "}", 1, NULL, 0, 1,
     1, "missing required field \"kind\"", "\"elementwise\", \"reduction\""},
    {"kind unknown", KINDED("\"map\""), 1, NULL, 0, 1, 44,
     "kind: unknown kind \"map\"", "\"raw\""},
    {"kind in capitals", KINDED("\"Elementwise\""), 1, NULL, 0, 1, 44,
     "unknown kind \"Elementwise\"", NULL},
    {"kind a number", KINDED("1"), 1, NULL, 0, 1, 44,
     "kind: expected \"elementwise\", \"reduction\", \"raw\", \"rows\" or \"grid\", got a number",
     NULL},
    {"params missing", HEAD "  \"body\": \"y = x;\"\n}", 1, NULL, 0, 1, 1,
     "missing required field \"params\"", NULL},
    {"params an object", HEAD "  \"params\": {},\n  \"body\": \"y = x;\"\n}",
     1, "{}", 0, 2, 13, "params: expected an array of parameters, got an "
                        "object",
     NULL},
    {"params empty", HEAD "  \"params\": [],\n  \"body\": \"y = x;\"\n}", 1,
     NULL, 0, 2, 13, "params: is empty", NULL},
    {"params element a number",
     HEAD "  \"params\": [1, " PY "],\n  \"body\": \"y = 1;\"\n}", 1, NULL, 0,
     2, 14, "params[0]: expected an object", "got a number"},
    {"params element a string",
     HEAD "  \"params\": [" PY ", \"x\"],\n  \"body\": \"y = 1;\"\n}", 1,
     "\"x\"]", 0, 0, 0, "params[1]: expected an object", "got a string"},
    {"targets a string", TGT("\"cpu\""), 1, NULL, 0, 2, 14,
     "targets: expected a non-empty array", NULL},
    {"targets empty", TGT("[]"), 1, NULL, 0, 2, 14,
     "targets: expected a non-empty array", NULL},
    {"targets unknown", TGT("[\"cpu\", \"gpu\"]"), 1, "\"gpu\"", 0, 2, 22,
     "targets[1]: unknown target \"gpu\"", NULL},
    {"targets duplicate", TGT("[\"cuda\", \"cuda\"]"), 1, "\"cuda\"", 2, 2,
     23, "targets[1]: \"cuda\" is listed twice", NULL},
    {"targets element a number", TGT("[1]"), 1, NULL, 0, 2, 15,
     "targets[0]: expected \"cpu\" or \"cuda\", got a number", NULL},
    {"types an array", TYP("[\"f32\"]", "\"f32\""), 1, NULL, 0, 2, 12,
     "types: expected an object", NULL},
    {"types key in lower case", TYP("{\"t\": [\"f32\"]}", "\"f32\""), 1,
     "\"t\"", 0, 2, 13, "types: \"t\" is not a placeholder", NULL},
    {"types key of two letters", TYP("{\"TT\": [\"f32\"]}", "\"f32\""), 1,
     NULL, 0, 2, 13, "\"TT\" is not a placeholder", NULL},
    {"types key a digit", TYP("{\"1\": [\"f32\"]}", "\"f32\""), 1, NULL, 0,
     2, 13, "\"1\" is not a placeholder", NULL},
    {"types type listed twice", TYP("{\"T\": [\"f32\", \"f32\"]}", "\"T\""),
     1, "\"f32\"", 2, 2, 26, "types.T[1]: \"f32\" is listed twice", NULL},
    {"types unknown type", TYP("{\"T\": [\"f128\"]}", "\"T\""), 1, "\"f128\"",
     0, 2, 19, "types.T[0]: unknown type \"f128\"", NULL},
    {"types type not a string", TYP("{\"T\": [32]}", "\"T\""), 1, "32", 0, 2,
     19, "types.T[0]: expected a type name, got a number", NULL},
    {"types empty list", TYP("{\"T\": []}", "\"f32\""), 1, "[]", 0, 2, 18,
     "types.T: expected a non-empty array of types", NULL},
    {"types list a string", TYP("{\"T\": \"f32\"}", "\"f32\""), 1, NULL, 0,
     2, 18, "types.T: expected a non-empty array", NULL},
    {"types placeholder declared twice",
     TYP("{\"T\": [\"f32\"], \"T\": [\"f64\"]}", "\"T\""), 1, "\"T\"", 2, 2,
     27, "types.T: placeholder declared twice", NULL},
    {"types placeholder not used",
     TYP("{\"T\": [\"f32\"], \"U\": [\"f64\"]}", "\"T\""), 1, "\"U\"", 0, 2,
     27, "types.U: placeholder U is declared but no parameter uses it",
     NULL},
    {"unknown field (did you mean)", HEAD "  \"tragets\": [\"cpu\"],\n" KBODY
                                     "}",
     1, NULL, 0, 2, 3, "kernel: unknown field \"tragets\"",
     "(did you mean \"targets\"?)"},
    {"unknown field (did you mean name)",
     "{" SV ", \"name\": \"k\", \"kind\": \"elementwise\", \"nmae\": 1,\n" KBODY
     "}",
     1, "\"nmae\"", 0, 0, 0, "unknown field \"nmae\"",
     "did you mean \"name\"?"},
    {"unknown field (list)", HEAD "  \"colour\": 1,\n" KBODY "}", 1, NULL, 0,
     2, 3, "unknown field \"colour\"",
     "the fields are schema_version, name, doc, kind, params"},
    {"unknown field in a kernel of a list",
     "{" SV ", \"kernels\": [" K_OK ",\n  {\"name\": \"k2\", \"kind\": "
     "\"elementwise\", \"params\": [" PX ", " PY
     "], \"body\": \"y = x;\", \"bodi\": 1}]}",
     1, "\"bodi\"", 0, 0, 0, "kernels[1]: unknown field \"bodi\"",
     "did you mean \"body\"?"},
    {"map on an elementwise kernel", HEAD "  \"map\": \"x\",\n" KBODY "}", 1,
     NULL, 0, 2, 3, "map: this field belongs to reduction kernels",
     "this kernel's kind is elementwise"},
    {"cpu on an elementwise kernel",
     HEAD "  \"cpu\": \"y[0] = x[0];\",\n" KBODY "}", 1, NULL, 0, 2, 3,
     "cpu: this field belongs to raw kernels", NULL},
    {"body on a reduction",
     RED("\"x\"", "\"a + b\"", "\"0\"", ",\n  \"body\": \"out = x;\""), 1,
     NULL, 0, 6, 3, "body: this field belongs to elementwise, rows, grid and raw kernels",
     "this kernel's kind is reduction"},
    {"finalize on a raw kernel",
     RAW("  \"cpu\": \"y[0] = x[0];\",\n  \"finalize\": \"acc\"\n"), 1, NULL, 0,
     4, 3, "finalize: this field belongs to reduction kernels",
     "this kernel's kind is raw"},
    {"combine on an elementwise kernel in a list",
     "{" SV ", \"kernels\": [\n  {\"name\": \"k\", \"kind\": \"elementwise\", "
     "\"params\": [" PX ", " PY "], \"body\": \"y = x;\",\n   \"combine\": "
     "\"a + b\"}]}",
     1, NULL, 0, 3, 4, "kernels[0].combine: this field belongs to reduction",
     NULL},
};

/* ---- Parameter fields --------------------------------------------------------- */

/* p is params[0], starting at 2:14 */
#define PARAMS(p) HEAD "  \"params\": [" p ", " PY "],\n  \"body\": \"y = 1;\"\n}"
/* params[0].name's value at 2:23 */
#define PNAME(n) PARAMS("{\"name\": " n ", \"type\": \"f32\", \"role\": \"in\"}")
/* params[0].type's value at 2:36 */
#define PTYPE(t) PARAMS("{\"name\": \"x\", \"type\": " t ", \"role\": \"in\"}")
/* params[0].role's value at 2:51 */
#define PROLE(r) PARAMS("{\"name\": \"x\", \"type\": \"f32\", \"role\": " r "}")
/* A raw kernel with an extra params[2], on line 3 from column 5. */
#define RAWP(p, more)                                                  \
  "{" SV ", \"name\": \"w\", \"kind\": \"raw\",\n"                     \
  "  \"params\": [" PX ", " PY ",\n    " p "],\n" more "}\n"

static const pcase param_cases[] = {
    {"param name missing", PARAMS("{\"type\": \"f32\", \"role\": \"in\"}"), 1,
     NULL, 0, 2, 14, "params[0]: missing required field \"name\"", NULL},
    {"param name a number", PNAME("5"), 1, NULL, 0, 2, 23,
     "params[0].name: expected a C identifier, got a number", NULL},
    {"param name not an identifier", PNAME("\"2x\""), 1, NULL, 0, 2, 23,
     "params[0].name: \"2x\" is not a C identifier", NULL},
    {"param name i", PNAME("\"i\""), 1, NULL, 0, 2, 23,
     "params[0].name: \"i\" is reserved", NULL},
    {"param name n", PNAME("\"n\""), 1, NULL, 0, 2, 23, "\"n\" is reserved",
     NULL},
    {"param name acc", PNAME("\"acc\""), 1, NULL, 0, 2, 23,
     "\"acc\" is reserved", NULL},
    {"param name a", PNAME("\"a\""), 1, NULL, 0, 2, 23, "\"a\" is reserved",
     NULL},
    {"param name b", PNAME("\"b\""), 1, NULL, 0, 2, 23, "\"b\" is reserved",
     NULL},
    {"param name int", PNAME("\"int\""), 1, NULL, 0, 2, 23,
     "\"int\" is a C keyword", NULL},
    {"param name for", PNAME("\"for\""), 1, NULL, 0, 2, 23,
     "\"for\" is a C keyword", NULL},
    {"param name _Bool", PNAME("\"_Bool\""), 1, NULL, 0, 2, 23,
     "is a C keyword", NULL},
    {"param name restrict", PNAME("\"restrict\""), 1, NULL, 0, 2, 23,
     "is a C keyword", NULL},
    {"param name class (targets both by default)", PNAME("\"class\""), 1,
     NULL, 0, 2, 23, "\"class\" is a C++ keyword", "cuda"},
    {"param name new with targets [cuda]",
     HEAD "  \"targets\": [\"cuda\"],\n  \"params\": [{\"name\": \"new\", "
          "\"type\": \"f32\", \"role\": \"in\"}, " PY
          "],\n  \"body\": \"y = new;\"\n}",
     2, "\"new\"", 0, 3, 23, "\"new\" is a C++ keyword", NULL},
    {"param name hk_x", PNAME("\"hk_x\""), 1, NULL, 0, 2, 23,
     "\"hk_x\" is reserved", "hk_"},
    {"param name exp", PNAME("\"exp\""), 1, NULL, 0, 2, 23,
     "\"exp\" is a math function", NULL},
    {"param name expf", PNAME("\"expf\""), 1, NULL, 0, 2, 23,
     "is a math function", NULL},
    {"param name isnan", PNAME("\"isnan\""), 1, NULL, 0, 2, 23,
     "is a math function", NULL},
    {"param name M_PI", PNAME("\"M_PI\""), 1, NULL, 0, 2, 23,
     "is a math function or constant", NULL},
    {"param name INFINITY", PNAME("\"INFINITY\""), 1, NULL, 0, 2, 23,
     "is a math function or constant", NULL},
    {"param name size_t", PNAME("\"size_t\""), 1, NULL, 0, 2, 23,
     "\"size_t\" is a type name", NULL},
    {"param name int32_t", PNAME("\"int32_t\""), 1, NULL, 0, 2, 23,
     "is a type name", NULL},
    {"param name a placeholder letter",
     HEAD "  \"types\": {\"T\": [\"f32\"]},\n  \"params\": [{\"name\": \"T\", "
          "\"type\": \"T\", \"role\": \"in\"}, " PY
          "],\n  \"body\": \"y = 1;\"\n}",
     1, NULL, 0, 3, 23, "params[0].name: \"T\" is the name of a type "
                        "placeholder",
     NULL},
    {"param name duplicate",
     HEAD "  \"params\": [" PX ",\n             {\"name\": \"x\", \"type\": "
          "\"f32\", \"role\": \"out\"}],\n  \"body\": \"x = 1;\"\n}",
     1, NULL, 0, 3, 23, "params[1].name: \"x\" is already the name of "
                        "params[0]",
     NULL},
    {"param name of 64 characters", PNAME("\"" N64 "\""), 1, NULL, 0, 2, 23,
     "params[0].name: is 64 characters long; at most 63", NULL},
    {"param type missing", PARAMS("{\"name\": \"x\", \"role\": \"in\"}"), 1,
     NULL, 0, 2, 14, "params[0]: missing required field \"type\"", NULL},
    {"param type unknown", PTYPE("\"float\""), 1, NULL, 0, 2, 36,
     "params[0].type: unknown type \"float\"", "f32, f64"},
    {"param type in capitals", PTYPE("\"F32\""), 1, NULL, 0, 2, 36,
     "unknown type \"F32\"", NULL},
    {"param type undeclared placeholder", PTYPE("\"T\""), 1, NULL, 0, 2, 36,
     "params[0].type: placeholder \"T\" is not declared in \"types\"", NULL},
    {"param type a number", PTYPE("32"), 1, NULL, 0, 2, 36,
     "params[0].type: expected a type name, got a number", NULL},
    {"param role missing", PARAMS("{\"name\": \"x\", \"type\": \"f32\"}"), 1,
     NULL, 0, 2, 14, "params[0]: missing required field \"role\"", NULL},
    {"param role unknown", PROLE("\"output\""), 1, NULL, 0, 2, 51,
     "params[0].role: unknown role \"output\"", "in, out, inout or scalar"},
    {"param role a boolean", PROLE("true"), 1, NULL, 0, 2, 51,
     "params[0].role: expected a role, got a boolean", NULL},
    {"param doc a number",
     PARAMS("{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\", \"doc\": 3}"),
     1, "3}", 0, 2, 64, "params[0].doc: expected a string, got a number",
     NULL},
    {"param unknown field (did you mean)",
     PARAMS("{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\", \"dtype\": "
            "\"f32\"}"),
     1, "\"dtype\"", 0, 2, 57, "params[0]: unknown field \"dtype\"",
     "did you mean \"type\"?"},
    {"param unknown field (list)",
     PARAMS("{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\", \"shape\": "
            "[2]}"),
     1, "\"shape\"", 0, 0, 0, "params[0]: unknown field \"shape\"",
     "name, type, role, len, doc"},
    {"param len on an elementwise kernel",
     PARAMS("{\"name\": \"x\", \"type\": \"f32\", \"role\": \"in\", \"len\": "
            "\"n\"}"),
     1, "\"len\"", 0, 2, 57, "params[0].len: only a raw kernel's buffers",
     "elementwise"},
    {"param len on a reduction",
     "{" SV ", \"name\": \"r\", \"kind\": \"reduction\",\n  \"params\": [" PX
     ", {\"name\": \"out\", \"type\": \"f32\", \"role\": \"out\", \"len\": "
     "\"1\"}],\n  \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\"\n}",
     1, "\"len\"", 0, 0, 0, "params[1].len: only a raw kernel's buffers",
     "reduction"},
    {"param len on a scalar",
     RAWP("{\"name\": \"m\", \"type\": \"i64\", \"role\": \"scalar\", \"len\": "
          "\"m\"}",
          "  \"cpu\": \"y[0] = x[0];\"\n"),
     1, "\"len\"", 0, 3, 52, "params[2].len: a scalar has no length", NULL},
    {"param len naming an unknown identifier", RAWL("\"m * q\""), 1, NULL, 0,
     3, 61,
     "params[1].len: 'q' is not one of the kernel's integer scalars and n",
     NULL},
    /* a len is checked integer arithmetic (lenexpr.c) */
    {"param len with a float scalar",
     "{" SV ", \"name\": \"w\", \"kind\": \"raw\",\n  \"params\": [" PX
     ",\n    {\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\", \"len\": "
     "\"s * 2\"},\n    " PS "],\n  \"cpu\": \"y[0] = x[0];\"\n}\n",
     1, NULL, 0, 3, 57, "params[1].len: 's' is a floating-point scalar", NULL},
    {"param len with ++", RAWL("\"m++\""), 1, NULL, 0, 3, 58,
     "params[1].len: '++' is not allowed", NULL},
    {"param len with a bitwise operator", RAWL("\"m & 3\""), 1, NULL, 0, 3, 59,
     "params[1].len: '&' is not allowed here: a len is integer arithmetic",
     NULL},
    {"param len with a cast to float", RAWL("\"(float)m\""), 1, NULL, 0, 3, 58,
     "params[1].len: a cast to 'float' is not allowed", NULL},
    /* a cast must not change the value: checked when it is known */
    {"param len with a cast that changes a literal", RAWL("\"(uint8_t)300\""),
     1, NULL, 0, 3, 57,
     "params[1].len: (uint8_t) of 300: the value does not fit the type", NULL},
    {"param len with a cast to no integer type",
     RAWL("\"(unsigned signed)m\""), 1, NULL, 0, 3, 57,
     "params[1].len: (unsigned signed) is not a cast hk can check: these "
     "words name no C integer type", NULL},
    {"param len with a fixed-width type and a word",
     RAWL("\"(long int32_t)m\""), 1, NULL, 0, 3, 57,
     "a fixed-width type stands alone", NULL},
    {"param len naming a buffer", RAWL("\"2 * x\""), 1, NULL, 0, 3, 61,
     "params[1].len: 'x' is not one of", NULL},
    {"param len naming i", RAWL("\"i + 1\""), 1, NULL, 0, 3, 57,
     "'i' is not one of", NULL},
    {"param len calling a function", RAWL("\"strlen(m)\""), 1, NULL, 0, 3, 57,
     "params[1].len: calls 'strlen'", NULL},
    {"param len with ';'", RAWL("\"m; m\""), 1, NULL, 0, 3, 58,
     "params[1].len: ';' cannot appear in an expression", NULL},
    {"param len blank", RAWL("\" \""), 1, NULL, 0, 3, 57,
     "params[1].len: is empty", NULL},
    {"param len a number", RAWL("5"), 1, NULL, 0, 3, 56,
     "params[1].len: expected a string", NULL},
};

/* ---- Refused parameters ------------------------------------------------------ */

/* A parameter whose name, type or role is refused stays in the kernel, its
 * name NULL or its type and role defaults: the checks that run after the
 * parameters (len, expressions) must neither crash on it nor judge it, and
 * report only the refusal (once crashed: a NULL name read by the len
 * checker when the refused parameter came before the scalar a len names). */

/* A raw kernel over p0 (line 2, from column 14) and p1 (line 3, from
 * column 5). */
#define RAW2(p0, p1)                                                   \
  "{" SV ", \"name\": \"w\", \"kind\": \"raw\",\n"                     \
  "  \"params\": [" p0 ",\n    " p1 "],\n  \"cpu\": \"(void)0;\"\n}\n"
/* A buffer named nm (JSON text) whose len names N, then the scalar N. */
#define LEN_N(nm)                                                      \
  RAW2("{\"name\": " nm ", \"type\": \"f32\", \"role\": \"inout\", "   \
       "\"len\": \"N\"}",                                               \
       "{\"name\": \"N\", \"type\": \"i64\", \"role\": \"scalar\"}")
/* A buffer x whose len names N, then N given as p (JSON text). */
#define N_AS(p)                                                        \
  RAW2("{\"name\": \"x\", \"type\": \"f32\", \"role\": \"inout\", "    \
       "\"len\": \"N\"}",                                               \
       p)

static const pcase refused_cases[] = {
    {"refused name a before the len's scalar", LEN_N("\"a\""), 1, NULL, 0, 2,
     23, "params[0].name: \"a\" is reserved", NULL},
    {"refused name i before the len's scalar", LEN_N("\"i\""), 1, NULL, 0, 2,
     23, "params[0].name: \"i\" is reserved", NULL},
    {"C keyword before the len's scalar", LEN_N("\"int\""), 1, NULL, 0, 2, 23,
     "params[0].name: \"int\" is a C keyword", NULL},
    {"hk_ name before the len's scalar", LEN_N("\"hk_x\""), 1, NULL, 0, 2, 23,
     "params[0].name: \"hk_x\" is reserved", "hk_"},
    {"non-identifier before the len's scalar", LEN_N("\"2x\""), 1, NULL, 0, 2,
     23, "params[0].name: \"2x\" is not a C identifier", NULL},
    {"empty name before the len's scalar", LEN_N("\"\""), 1, NULL, 0, 2, 23,
     "params[0].name: \"\" is not a C identifier", NULL},
    {"math name before the len's scalar", LEN_N("\"exp\""), 1, NULL, 0, 2, 23,
     "\"exp\" is a math function", NULL},
    {"type name before the len's scalar", LEN_N("\"size_t\""), 1, NULL, 0, 2,
     23, "\"size_t\" is a type name", NULL},
    {"name of 64 characters before the len's scalar", LEN_N("\"" N64 "\""), 1,
     NULL, 0, 2, 23, "is 64 characters long", NULL},
    {"name a number before the len's scalar", LEN_N("5"), 1, NULL, 0, 2, 23,
     "params[0].name: expected a C identifier, got a number", NULL},
    {"name missing before the len's scalar",
     RAW2("{\"type\": \"f32\", \"role\": \"inout\", \"len\": \"N\"}",
          "{\"name\": \"N\", \"type\": \"i64\", \"role\": \"scalar\"}"),
     1, NULL, 0, 2, 14, "params[0]: missing required field \"name\"", NULL},
    {"param not an object before the len's scalar",
     RAW2("7, {\"name\": \"x\", \"type\": \"f32\", \"role\": \"inout\", "
          "\"len\": \"N\"}",
          "{\"name\": \"N\", \"type\": \"i64\", \"role\": \"scalar\"}"),
     1, NULL, 0, 2, 14, "params[0]: expected an object", NULL},
    /* the len names a parameter with a refused field: only that is said */
    {"len naming a scalar of unknown type",
     N_AS("{\"name\": \"N\", \"type\": \"int64\", \"role\": \"scalar\"}"), 1,
     "\"int64\"", 0, 0, 0, "params[1].type: unknown type \"int64\"", NULL},
    {"len naming a scalar of undeclared placeholder type",
     N_AS("{\"name\": \"N\", \"type\": \"T\", \"role\": \"scalar\"}"), 1,
     "\"T\"", 0, 0, 0, "params[1].type: placeholder \"T\" is not declared",
     NULL},
    {"len naming a scalar without type",
     N_AS("{\"name\": \"N\", \"role\": \"scalar\"}"), 1, NULL, 0, 3, 5,
     "params[1]: missing required field \"type\"", NULL},
    {"len naming a scalar of unknown role",
     N_AS("{\"name\": \"N\", \"type\": \"i64\", \"role\": \"scaler\"}"), 1,
     "\"scaler\"", 0, 0, 0, "params[1].role: unknown role \"scaler\"", NULL},
    {"len naming a scalar without role",
     N_AS("{\"name\": \"N\", \"type\": \"i64\"}"), 1, NULL, 0, 3, 5,
     "params[1]: missing required field \"role\"", NULL},
    {"len naming a refused name (a C keyword)",
     RAW2("{\"name\": \"x\", \"type\": \"f32\", \"role\": \"inout\", "
          "\"len\": \"int * 2\"}",
          "{\"name\": \"int\", \"type\": \"i64\", \"role\": \"scalar\"}"),
     1, "\"int\"", 0, 0, 0, "params[1].name: \"int\" is a C keyword", NULL},
    {"len naming a refused name (reserved a)",
     RAW2("{\"name\": \"x\", \"type\": \"f32\", \"role\": \"inout\", "
          "\"len\": \"a * 2\"}",
          "{\"name\": \"a\", \"type\": \"i64\", \"role\": \"scalar\"}"),
     1, "\"a\"", 0, 0, 0, "params[1].name: \"a\" is reserved", NULL},
    {"len naming a duplicate name",
     RAW2("{\"name\": \"N\", \"type\": \"f32\", \"role\": \"inout\", "
          "\"len\": \"N\"}",
          "{\"name\": \"N\", \"type\": \"i64\", \"role\": \"scalar\"}"),
     1, "\"N\"", 3, 0, 0, "params[1].name: \"N\" is already the name of "
                          "params[0]",
     NULL},
    {"len naming the buffer that gives it",
     RAW2("{\"name\": \"N\", \"type\": \"i64\", \"role\": \"inout\", "
          "\"len\": \"N\"}",
          "{\"name\": \"m\", \"type\": \"i64\", \"role\": \"scalar\"}"),
     1, "N\"}", 0, 0, 0, "params[0].len: 'N' is not one of the kernel's "
                         "integer scalars and n (it is a buffer)",
     NULL},
    /* the rest of a len is still checked */
    {"refused name, and a len naming an unknown identifier",
     RAW2("{\"name\": \"a\", \"type\": \"f32\", \"role\": \"inout\", "
          "\"len\": \"N + q\"}",
          "{\"name\": \"N\", \"type\": \"i64\", \"role\": \"scalar\"}"),
     2, NULL, 0, 2, 23, "params[0].name: \"a\" is reserved", NULL},
    /* expressions do not judge a refused parameter by its default role */
    {"reduction over a scalar of unknown role and a refused name",
     "{" SV ", \"name\": \"r\", \"kind\": \"reduction\",\n"
     "  \"params\": [" PX ",\n    {\"name\": \"s\", \"type\": "
     "\"f32\", \"role\": \"scaler\"},\n    {\"name\": \"a\", \"type\": \"f32\", "
     "\"role\": \"scalar\"}, " PO "],\n  \"map\": \"x[i] * s * a\", "
     "\"combine\": \"a + b\", \"identity\": \"s\"\n}\n",
     2, "\"scaler\"", 0, 0, 0, "params[1].role: unknown role \"scaler\"", NULL},
};

/* ---- Kinds ---------------------------------------------------------------------- */

#define REDHEAD "{" SV ", \"name\": \"r\", \"kind\": \"reduction\",\n"

static const pcase kind_cases[] = {
    /* elementwise */
    {"elementwise without body", HEAD "  \"params\": [" PX ", " PY "]\n}", 1,
     NULL, 0, 1, 1, "kernel: missing required field \"body\"", NULL},
    {"elementwise writing nothing",
     HEAD "  \"params\": [" PX ", " PS "],\n  \"body\": \"(void)x;\"\n}", 1,
     NULL, 0, 2, 13,
     "params: an elementwise kernel must write at least one out or inout",
     NULL},
    {"elementwise body empty", EW("\"\""), 1, NULL, 0, 3, 11,
     "body: is empty", NULL},
    {"elementwise body blank", EW("\" \\n\\t \""), 1, NULL, 0, 3, 11,
     "body: is empty", NULL},
    {"elementwise body an empty array", EW("[]"), 1, NULL, 0, 3, 11,
     "body: is empty", NULL},
    {"elementwise body a number", EW("5"), 1, NULL, 0, 3, 11,
     "body: expected a string (or an array of strings", "got a number"},
    {"elementwise body line a number", EW("[\"y = x;\", 5]"), 1, "5]", 0, 3,
     22, "body[1]: expected a string (one line of code), got a number",
     NULL},
    /* reduction */
    {"reduction without out",
     REDHEAD "  \"params\": [" PX ", " PS "],\n  \"map\": \"x\", \"combine\": "
             "\"a + b\", \"identity\": \"0\"\n}",
     1, NULL, 0, 2, 13, "params: a reduction needs exactly one out parameter",
     NULL},
    {"reduction with two outs",
     REDHEAD "  \"params\": [" PX ", " PO ",\n    {\"name\": \"o2\", "
             "\"type\": \"f32\", \"role\": \"out\"}],\n  \"map\": \"x\", "
             "\"combine\": \"a + b\", \"identity\": \"0\"\n}",
     1, "\"out\"", 3, 3, 43, "params[2].role: a reduction has exactly one out",
     "second"},
    {"reduction with an inout",
     REDHEAD "  \"params\": [" PX ", {\"name\": \"z\", \"type\": \"f32\", "
             "\"role\": \"inout\"}, " PO "],\n  \"map\": \"x\", \"combine\": "
             "\"a + b\", \"identity\": \"0\"\n}",
     1, "\"out\"", 2, 0, 0, "params[2].role: a reduction has exactly one out "
     "or inout parameter", "struct accumulator"},
    {"reduction without map",
     REDHEAD "  \"params\": [" PX ", " PO "],\n  \"combine\": \"a + b\", "
             "\"identity\": \"0\"\n}",
     1, NULL, 0, 1, 1, "missing required field \"map\"", NULL},
    {"reduction without combine",
     REDHEAD "  \"params\": [" PX ", " PO "],\n  \"map\": \"x\", "
             "\"identity\": \"0\"\n}",
     1, NULL, 0, 1, 1, "missing required field \"combine\"", NULL},
    {"reduction without identity",
     REDHEAD "  \"params\": [" PX ", " PO "],\n  \"map\": \"x\", "
             "\"combine\": \"a + b\"\n}",
     1, NULL, 0, 1, 1, "missing required field \"identity\"", NULL},
    {"reduction without map, combine, identity",
     REDHEAD "  \"params\": [" PX ", " PO "]\n}", 3, NULL, 0, 1, 1,
     "missing required field", NULL},
    {"reduction map naming out", RED("\"x + out\"", "\"a + b\"", "\"0\"", ""),
     1, NULL, 0, 3, 15,
     "map: 'out' is not one of the kernel's in buffers and scalars, i and n",
     NULL},
    {"reduction map naming acc", RED("\"acc\"", "\"a + b\"", "\"0\"", ""), 1,
     NULL, 0, 3, 11, "map: 'acc' is not one of", NULL},
    {"reduction map naming a", RED("\"x * a\"", "\"a + b\"", "\"0\"", ""), 1,
     NULL, 0, 3, 15, "map: 'a' is not one of", NULL},
    {"reduction combine naming x", RED("\"x\"", "\"a + x\"", "\"0\"", ""), 1,
     NULL, 0, 4, 19, "combine: 'x' is not one of a and b", NULL},
    {"reduction combine naming i", RED("\"x\"", "\"a + b * i\"", "\"0\"", ""),
     1, NULL, 0, 4, 23, "combine: 'i' is not one of a and b", NULL},
    {"reduction combine naming a scalar",
     RED("\"x\"", "\"a + b + s\"", "\"0\"", ""), 1, NULL, 0, 4, 23,
     "combine: 's' is not one of a and b", NULL},
    {"reduction identity naming a", RED("\"x\"", "\"a + b\"", "\"a\"", ""), 1,
     NULL, 0, 5, 16,
     "identity: 'a' is not one of the kernel's scalars (or a constant)",
     NULL},
    {"reduction identity naming x", RED("\"x\"", "\"a + b\"", "\"-x\"", ""),
     1, NULL, 0, 5, 17, "identity: 'x' is not one of", NULL},
    {"reduction identity naming n", RED("\"x\"", "\"a + b\"", "\"n\"", ""), 1,
     NULL, 0, 5, 16, "identity: 'n' is not one of", NULL},
    {"reduction finalize naming x",
     RED("\"x\"", "\"a + b\"", "\"0\"", ",\n  \"finalize\": \"acc + x\""), 1,
     NULL, 0, 6, 22,
     "finalize: 'x' is not one of acc, n and the kernel's scalars", NULL},
    {"reduction finalize naming i",
     RED("\"x\"", "\"a + b\"", "\"0\"", ",\n  \"finalize\": \"acc * i\""), 1,
     NULL, 0, 6, 22, "finalize: 'i' is not one of", NULL},
    {"reduction finalize naming out",
     RED("\"x\"", "\"a + b\"", "\"0\"", ",\n  \"finalize\": \"out\""), 1, NULL,
     0, 6, 16, "finalize: 'out' is not one of", NULL},
    {"reduction map with ';'", RED("\"x;\"", "\"a + b\"", "\"0\"", ""), 1,
     NULL, 0, 3, 12, "map: ';' cannot appear in an expression", NULL},
    {"reduction map with braces", RED("\"{x}\"", "\"a + b\"", "\"0\"", ""), 2,
     NULL, 0, 3, 11, "map: '{' cannot appear in an expression", NULL},
    {"reduction map with return",
     RED("\"return x\"", "\"a + b\"", "\"0\"", ""), 1, NULL, 0, 3, 11,
     "map: 'return' cannot appear in an expression", NULL},
    {"reduction combine with if",
     RED("\"x\"", "\"if (a) b\"", "\"0\"", ""), 1, NULL, 0, 4, 15,
     "combine: 'if' cannot appear in an expression", NULL},
    {"reduction combine calling max",
     RED("\"x\"", "\"max(a, b)\"", "\"0\"", ""), 1, NULL, 0, 4, 15,
     "combine: calls 'max'", "here: fmax (fmaxf), or a > b ? a : b"},
    {"reduction map naming hk_", RED("\"hk_x\"", "\"a + b\"", "\"0\"", ""), 1,
     NULL, 0, 3, 11, "map: 'hk_x' is reserved", NULL},
    {"reduction map blank", RED("\"  \"", "\"a + b\"", "\"0\"", ""), 1, NULL,
     0, 3, 11, "map: is empty: an expression is required", NULL},
    {"reduction map a number", RED("1.5", "\"a + b\"", "\"0\"", ""), 1, NULL,
     0, 3, 10, "map: expected a string", NULL},
    {"reduction map unbalanced", RED("\"(x\"", "\"a + b\"", "\"0\"", ""), 1,
     NULL, 0, 3, 11, "map: '(' is never closed", NULL},
    {"reduction map as lines, error on line 2",
     RED("[\"x *\",\n          \"  out\"]", "\"a + b\"", "\"0\"", ""), 1,
     NULL, 0, 4, 14, "map: 'out' is not one of", NULL},
    /* raw */
    {"raw without a body",
     "{" SV ", \"name\": \"w\", \"kind\": \"raw\",\n  \"params\": [" PX
     ", " PY "]\n}\n",
     1, NULL, 0, 1, 1,
     "a raw kernel needs a \"cpu\" body", NULL},
    {"raw with body and cpu",
     RAW("  \"body\": \"y[0] = x[0];\",\n  \"cpu\": \"y[0] = x[0];\"\n"), 1,
     NULL, 0, 3, 3, "body: give the C body once", "another name for \"cpu\""},
    {"raw targets cuda without a cuda body",
     RAW("  \"targets\": [\"cpu\", \"cuda\"],\n  \"cpu\": \"y[0] = x[0];\"\n"),
     1, NULL, 0, 3, 14, "targets: lists cuda, but there is no \"cuda\" body",
     NULL},
    {"raw targets cpu without a cpu body",
     RAW("  \"targets\": [\"cpu\", \"cuda\"],\n  \"cuda\": \"y[0] = x[0];\"\n"),
     1, NULL, 0, 3, 14, "targets: lists cpu, but there is no \"cpu\" body",
     NULL},
    {"raw cuda body not in targets",
     RAW("  \"targets\": [\"cpu\"],\n  \"cpu\": \"y[0] = x[0];\",\n"
         "  \"cuda\": \"y[0] = x[0];\"\n"),
     1, NULL, 0, 3, 14, "targets: does not list cuda", NULL},
    {"raw cpu body not in targets",
     RAW("  \"targets\": [\"cuda\"],\n  \"body\": \"y[0] = x[0];\",\n"
         "  \"cuda\": \"y[0] = x[0];\"\n"),
     1, NULL, 0, 3, 14, "targets: does not list cpu", NULL},
    {"raw cpu a number", RAW("  \"cpu\": 1\n"), 1, NULL, 0, 3, 10,
     "cpu: expected a string", NULL},
    /* an empty raw body is legal (valid_cases), an empty array is not */
    {"raw cpu an empty array", RAW("  \"cpu\": []\n"), 1, NULL, 0, 3, 10,
     "cpu: is empty: expected C code", NULL},
    {"raw cpu empty, targets listing cuda",
     RAW("  \"targets\": [\"cpu\", \"cuda\"],\n  \"cpu\": \"\"\n"), 1, NULL, 0,
     3, 14, "targets: lists cuda, but there is no \"cuda\" body", NULL},
    {"raw cuda empty, cpu body not in targets",
     RAW("  \"targets\": [\"cuda\"],\n  \"cpu\": \"y[0] = x[0];\",\n"
         "  \"cuda\": \"\"\n"),
     1, NULL, 0, 3, 14, "targets: does not list cpu", NULL},
    {"raw cpu empty, but a len is wrong",
     RAWP("{\"name\": \"z\", \"type\": \"f32\", \"role\": \"out\", \"len\": "
          "\"q\"}",
          "  \"cpu\": \"\"\n"),
     1, "q\"}", 0, 0, 0, "params[2].len: 'q' is not one of", NULL},
    {"raw cpu calling printf",
     RAW("  \"cpu\": \"printf(\\\"hi\\\"); y[0] = x[0];\"\n"), 1, NULL, 0, 3,
     11, "cpu: calls 'printf'", NULL},
    {"raw cpu with #include",
     RAW("  \"cpu\": \"#include <stdio.h>\\ny[0] = x[0];\"\n"), 1, NULL, 0, 3,
     11, "cpu: #include is not allowed", NULL},
    {"raw cuda with #include",
     RAW("  \"cuda\": \"#include <cstdio>\\ny[0] = x[0];\"\n"), 1, NULL, 0, 3,
     12, "cuda: #include is not allowed", NULL},
    {"raw cuda with asm", RAW("  \"cuda\": \"asm(\\\"trap;\\\");\"\n"), 1,
     NULL, 0, 3, 12, "cuda: asm is not allowed", NULL},
    {"raw body (alias of cpu) calling system",
     RAW("  \"body\": \"system(\\\"ls\\\");\"\n"), 1, NULL, 0, 3, 12,
     "body: calls 'system'", NULL},
    {"raw cpu naming hk_", RAW("  \"cpu\": \"hk_run(y);\"\n"), 1, NULL, 0, 3,
     11, "cpu: 'hk_run' is reserved", NULL},
    {"raw C++ keyword param with a cuda body",
     RAWP("{\"name\": \"new\", \"type\": \"i64\", \"role\": \"scalar\"}",
          "  \"cuda\": \"y[0] = x[0];\"\n"),
     1, "\"new\"", 0, 3, 14, "params[2].name: \"new\" is a C++ keyword", NULL},
};

/* ---- Bodies (lex.c) --------------------------------------------------------------- */

static const pcase body_cases[] = {
    {"#include", EW("\"#include <stdio.h>\\ny = x;\""), 1, NULL, 0, 3, 12,
     "body: #include is not allowed", NULL},
    {"#  include after a line", EW("\"y = x;\\n  #  include <x>\""), 1, NULL,
     0, 3, 22, "#include is not allowed", NULL},
    {"#define", EW("\"#define Z 1\\ny = x;\""), 1, NULL, 0, 3, 12,
     "body: preprocessor lines", NULL},
    {"#pragma on line 2", EW("\"y = x;\\n#pragma omp simd\""), 1, NULL, 0, 3,
     20, "preprocessor lines", NULL},
    {"%: directive", EW("\"%:define Z 1\\ny = x;\""), 1, NULL, 0, 3, 12,
     "preprocessor lines", NULL},
    {"%:include", EW("\"%:include <stdio.h>\\ny = x;\""), 1, NULL, 0, 3, 12,
     "#include is not allowed", NULL},
    {"<% %> digraphs", EW("\"<% y = x; %>\""), 2, NULL, 0, 3, 12,
     "body: digraphs", NULL},
    {"<: :> digraphs", EW("\"y = x <: 0 :>;\""), 2, NULL, 0, 3, 18,
     "digraphs", NULL},
    {"?\?= trigraph", EW("\"?\?=define Z\\ny = x;\""), 1, NULL, 0, 3, 12,
     "trigraph '?\?='", NULL},
    {"?\?/ trigraph in a comment", EW("\"y = x; // ok ?\?/\""), 1, "?\?/", 0,
     3, 25, "trigraph '?\?/'", NULL},
    {"line continuation", EW("\"y = x \\\\\\n+ 1;\""), 1, NULL, 0, 3, 18,
     "line continuation", NULL},
    {"continuation of a // comment", EW("\"y = x; // note \\\\\\n\""), 1,
     NULL, 0, 3, 27, "backslash at the end of a comment line", NULL},
    {"stray backslash", EW("\"y = x \\\\ 1;\""), 1, NULL, 0, 3, 18,
     "stray '\\'", NULL},
    {"unterminated comment", EW("\"y = x; /* oops\""), 1, NULL, 0, 3, 19,
     "body: this comment is never closed", NULL},
    {"unterminated string literal", EW("\"y = \\\"abc;\""), 1, NULL, 0, 3, 16,
     "string literal is never closed", NULL},
    {"string literal cut by a newline", EW("\"y = \\\"abc\\n\\\";\""), -1,
     NULL, 0, 3, 16, "string literal is never closed", NULL},
    {"unterminated character literal", EW("\"y = 'a;\""), 1, NULL, 0, 3, 16,
     "character literal is never closed", NULL},
    {"'(' never closed", EW("\"y = (x;\""), 1, NULL, 0, 3, 16,
     "body: '(' is never closed", NULL},
    {"'[' never closed", EW("\"y = x[0;\""), 1, NULL, 0, 3, 17,
     "'[' is never closed", NULL},
    {"'{' never closed", EW("\"{ y = x;\""), 1, NULL, 0, 3, 12,
     "'{' is never closed", NULL},
    {"')' without '('", EW("\"y = x);\""), 1, NULL, 0, 3, 17,
     "')' has no matching opening bracket", NULL},
    {"']' without '['", EW("\"y = x];\""), 1, NULL, 0, 3, 17,
     "']' has no matching opening bracket", NULL},
    {"'}' without '{'", EW("\"y = x; }\""), 1, NULL, 0, 3, 19,
     "'}' has no matching opening bracket", NULL},
    {"']' closing '('", EW("\"y = (x];\""), 1, NULL, 0, 3, 18,
     "']' closes the '(' opened before it", NULL},
    {"')' closing '{'", EW("\"{ y = x; )\""), 1, NULL, 0, 3, 21,
     "')' closes the '{' opened before it", NULL},
    {"asm", EW("\"asm(\\\"nop\\\"); y = x;\""), 1, NULL, 0, 3, 12,
     "body: asm is not allowed", NULL},
    {"__asm__", EW("\"y = x; __asm__ volatile(\\\"\\\");\""), 1, NULL, 0, 3,
     19, "asm is not allowed", NULL},
    {"__asm", EW("\"__asm(\\\"\\\"); y = x;\""), 1, NULL, 0, 3, 12,
     "asm is not allowed", NULL},
    {"extern", EW("\"extern int z; y = x;\""), 1, NULL, 0, 3, 12,
     "body: extern is not allowed", NULL},
    /* the sandbox: what could run code the body does not call */
    {"__attribute__ (cleanup runs a function)",
     EW("\"y = x; float t __attribute__((cleanup(expf))) = 0;\""), -1,
     "__attribute__", 0, 0, 0, "body: __attribute__ is not allowed", NULL},
    {"__attribute (constructor)",
     RAW("  \"cpu\": \"__attribute((constructor)) y[0] = x[0];\"\n"), 1,
     "__attribute", 0, 0, 0, "cpu: __attribute__ is not allowed", NULL},
    {"computed goto",
     RAW("  \"cpu\": \"void *p = (void *)y; goto *p;\"\n"), 1, "goto", 0,
     0, 0, "cpu: a computed goto ('goto *') is not allowed", NULL},
    {"a __builtin_ call",
     RAW("  \"cpu\": \"float *p = __builtin_alloca(16); y[0] = p[0];\"\n"), 1,
     "__builtin_alloca", 0, 0, 0, "calls '__builtin_alloca'", NULL},
    {"an integer cast to a function pointer, called",
     RAW("  \"cpu\": \"((void (*)(void))0x4010)(); y[0] = x[0];\"\n"), -1,
     NULL, 0, 3, 11, "calls a function through an expression", NULL},
    {"a math function's address, called",
     RAW("  \"cpu\": \"float (*e)(float) = expf; y[0] = e(x[0]);\"\n"), -1,
     NULL, 0, 3, 17, "calls", "not allowed"},
    /* a name code may call stands only in a call: a variable of that
     * name (a function pointer, through a typedef or __typeof__) would
     * shadow the function and call any address */
    {"a function pointer named as a math function, through a typedef",
     EW("\"typedef float (*F)(float); F fabsf = (F)0; y = fabsf(x);\""), 1,
     "fabsf", 1, 0, 0, "body: 'fabsf' is a function code may call, and may "
     "stand only in a call", NULL},
    {"a math function's address through __typeof__",
     RAW("  \"cpu\": \"__typeof__(&fabs) g = 0; y[0] = x[0];\"\n"), 1,
     "fabs", 0, 0, 0, "cpu: 'fabs' is a function code may call", NULL},
    {"(where)(...), which would call a variable named where",
     EW("\"y = (where)(x > 0, x, 0);\""), 1, "where", 0, 0, 0,
     "'(where)(...)' would call a variable named where", NULL},
    {"a helper's name as a variable",
     "{" SV ", \"name\": \"hv\", \"kind\": \"elementwise\",\n"
     "  \"params\": [" PX ", " PY "],\n"
     "  \"helpers\": [{\"name\": \"twice\", \"returns\": \"float\", "
     "\"params\": \"float v\", \"body\": \"return v * 2;\"}],\n"
     "  \"body\": \"typedef float (*F)(float); F f = twice; y = x;\"\n}\n",
     -1, "twice;", 0, 0, 0, "'twice' is a function code may call", NULL},
    /* tcc and gcc encode a universal character name differently */
    {"a universal character name in a literal",
     EW("\"const char *s = \\\"\\\\u00e9\\\"; (void)s; y = x;\""), 1,
     "\\\\u00e9", 0, 0, 0, "'\\u' (a universal character name) is not "
     "allowed in a literal", NULL},
    {"calling system", EW("\"system(\\\"ls\\\"); y = x;\""), 1, NULL, 0, 3,
     12, "body: calls 'system'", "<math.h>"},
    {"calling printf", EW("\"y = x; printf(\\\"%f\\\", x);\""), 1, NULL, 0,
     3, 19, "calls 'printf'", NULL},
    {"calling malloc", EW("\"float *p = malloc(4); y = x;\""), 1, NULL, 0, 3,
     23, "calls 'malloc'", NULL},
    {"calling with a space before '('", EW("\"y = abort ();\""), 1, NULL, 0,
     3, 16, "calls 'abort'", NULL},
    {"calling _Pragma", EW("\"_Pragma(\\\"once\\\") y = x;\""), 1, NULL, 0,
     3, 12, "_Pragma", NULL},
    /* a parenthesized name is still a call: (f)(x) calls f */
    {"calling a parenthesized name",
     EW("\"y = x; (system)(\\\"ls\\\");\""), -1, NULL, 0, 3, 20,
     "'system'", NULL},
    {"calling a parameter", EW("\"y = x(1);\""), 1, NULL, 0, 3, 16,
     "calls 'x'", NULL},
    {"return in an elementwise body",
     EW("\"if (x < 0) return;\\ny = x;\""), 1, NULL, 0, 3, 23,
     "body: 'return' is not allowed in an elementwise body", NULL},
    {"goto in an elementwise body", EW("\"goto end;\\nend: y = x;\""), 1, NULL,
     0, 3, 12, "'goto' is not allowed", NULL},
    {"static in an elementwise body", EW("\"static float t = 0; y = x;\""), 1,
     NULL, 0, 3, 12, "'static' variables are not allowed", NULL},
    {"a static const table in an elementwise body",
     EW("\"static const float t[2] = {1, 2}; y = x * t[1];\""), 0, NULL, 0, 0,
     0, NULL, NULL},
    {"a static pointer to const in an elementwise body (state)",
     EW("\"static const float *p = 0; y = p ? *p : x;\""), 1, NULL, 0, 3, 12,
     "'static' variables are not allowed", NULL},
    {"a static const pointer to const in an elementwise body",
     EW("\"static const float *const p = 0; y = p ? *p : x;\""), 0, NULL, 0,
     0, 0, NULL, NULL},
    {"_Thread_local in an elementwise body",
     EW("\"_Thread_local float t; y = x;\""), 1, NULL, 0, 3, 12,
     "'_Thread_local' variables are not allowed", NULL},
    {"a name beginning with hk_", EW("\"y = x + hk_secret;\""), 1, NULL, 0, 3,
     20, "body: 'hk_secret' is reserved", NULL},
    {"non-ASCII in code", EW("\"y = x * \xcf\x80;\""), 1, NULL, 0, 3, 20,
     "body: a non-ASCII character", NULL},
    {"non-ASCII in code, by escape", EW("\"y = \\u00e9;\""), 1, NULL, 0, 3, 16,
     "non-ASCII", NULL},
    {"'$'", EW("\"y = x$;\""), 1, NULL, 0, 3, 17,
     "body: unexpected character '$'", NULL},
    {"'@'", EW("\"y = @x;\""), 1, NULL, 0, 3, 16, "unexpected character '@'",
     NULL},
    {"'`'", EW("\"y = `x;\""), 1, NULL, 0, 3, 16, "unexpected character '`'",
     NULL},
};

/* ---- Positions through escapes and lines ---------------------------------------- */

#define EW_LINES(l1, l2, l3)                                           \
  HEAD "  \"params\": [" PX ", " PY "],\n"                            \
       "  \"body\": [\n"                                               \
       "    \"" l1 "\",\n"                                             \
       "    \"" l2 "\",\n"                                             \
       "    \"" l3 "\"\n"                                              \
       "  ]\n}\n"

static const pcase escape_cases[] = {
    /* \n \t \" \\ and \u00e9 (one character in the decoded text, six in
     * the file) before the call */
    {"escapes before the error",
     EW("\"/* \\n\\t\\\"\\\\\\u00e9 */ y = foo(x);\""), 1, "foo", 0, 3, 37,
     "body: calls 'foo'", NULL},
    {"UTF-8 before the error (one column each)",
     EW("\"/* \xc3\xa9\xf0\x9f\x98\x80 */ y = foo(x);\""), 1, "foo", 0, 3, 25,
     "calls 'foo'", NULL},
    {"a surrogate-pair escape before the error",
     EW("\"/* \\uD83D\\uDE00 */ y = foo(x);\""), 1, "foo", 0, 3, 35,
     "calls 'foo'", NULL},
    {"a string literal with escapes before the error",
     EW("\"const char *s = \\\"a\\\\\\\"b\\\"; y = foo(x);\""), 1, "foo", 0,
     3, 44, "calls 'foo'", NULL},
    {"error on the 3rd line of an array body",
     EW_LINES("float t = x;", "t = t * 2.0f;", "y = bar(t);"), 1, "bar", 0, 6,
     10, "body: calls 'bar'", NULL},
    {"escapes on the 3rd line of an array body",
     EW_LINES("float t = x;", "t = t * 2.0f;", "/* \\t\\u00e9 */ y = bar(t);"),
     1, "bar", 0, 6, 25, "calls 'bar'", NULL},
    {"'(' on line 1 of an array body never closed",
     EW_LINES("y = (x +", "1;", "y = y;"), 1, NULL, 0, 4, 10,
     "'(' is never closed", NULL},
    {"')' on line 2 of an array body",
     EW_LINES("y = x;", "y = y);", "y = y;"), 1, NULL, 0, 5, 11,
     "')' has no matching", NULL},
    {"backslash ending line 1 of an array body",
     EW_LINES("y = x \\\\", "+ 1;", "y = y;"), 1, NULL, 0, 4, 12,
     "line continuation", NULL},
    {"#include on line 2 of an array body",
     EW_LINES("y = x;", "  #include <stdio.h>", "y = y;"), 1, NULL, 0, 5, 8,
     "#include", NULL},
    {"an error after a tab in the file",
     HEAD "  \"params\": [" PX ", " PY "],\n\t\"body\": \"y = $;\"}", 1, "$",
     0, 3, 15, "unexpected character '$'", NULL},
    {"CRLF line ends",
     "{" SV ", \"name\": \"k\", \"kind\": \"elementwise\",\r\n  \"params\": "
     "[" PX ", " PY "],\r\n  \"body\": \"y = $;\"}\r\n",
     1, "$", 0, 3, 16, "unexpected character '$'", NULL},
};

/* ---- Valid files --------------------------------------------------------------- */

static const pcase valid_cases[] = {
    {"elementwise, the smallest", EW("\"y = x;\""), 0, NULL, 0, 0, 0, NULL,
     NULL},
    {"math calls and constants",
     EW("\"y = expf(x) + exp(x) + fmax(x, 1.0f) + (isnan(x) ? 0 : 1) + "
        "sqrtf(fabsf(x)) + (float)M_PI + FLT_EPSILON * INFINITY + "
        "fmaf(x, x, x) + (float)signbit(x) + isinf(x) + tanhf(x);\""),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"casts", EW("\"y = (float)(x) + (float)x * (float)(int)x + "
                 "(float)sizeof(x) + (float)(int32_t)(x) + (float)(size_t)i + "
                 "(float)n;\""),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"statements, loops and break",
     EW("\"float t = 0;\\nfor (int j = 0; j < 3; j++) {\\n  if (x > j) "
        "break;\\n  t += x;\\n}\\nwhile (t > 100) t /= 2;\\ndo { t -= 1; } "
        "while (t > 50);\\nswitch ((int)t) { case 1: t = 2; break; default: "
        "break; }\\ny = t;\""),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"strings and comments may hold anything",
     EW("\"const char *s = \\\"\xc3\xa9 # $ @ ` \\\\\\\" asm printf()\\\"; "
        "(void)s;\\nchar c = '\\\"'; (void)c; /* \xc3\xa9 #include $ system() "
        "*/ // @ %: <% \\ny = x;\""),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"a parenthesized math function, called",
     EW("\"y = (sqrtf)(fabsf(x)) + (expf)(x);\""), 0, NULL, 0, 0, 0, NULL,
     NULL},
    {"member access is not a call or a name",
     EW("\"struct { float v; } q; q.v = x; y = q.v;\""), 0, NULL, 0, 0, 0,
     NULL, NULL},
    {"placeholder casts",
     HEAD "  \"types\": {\"T\": [\"f32\", \"f64\"]},\n  \"params\": "
          "[{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"}, {\"name\": "
          "\"y\", \"type\": \"T\", \"role\": \"out\"}],\n  \"body\": \"y = "
          "(T)1 / ((T)1 + exp(-x));\"\n}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"name of 63 characters", NAMED("\"" N63 "\""), 0, NULL, 0, 0, 0, NULL,
     NULL},
    {"name a single capital", NAMED("\"K\""), 0, NULL, 0, 0, 0, NULL, NULL},
    {"param named with a capital that is no placeholder",
     PARAMS("{\"name\": \"X\", \"type\": \"f32\", \"role\": \"in\"}"), 0,
     NULL, 0, 0, 0, NULL, NULL},
    {"C++ keyword param with targets [cpu]",
     HEAD "  \"targets\": [\"cpu\"],\n  \"params\": [{\"name\": \"class\", "
          "\"type\": \"f32\", \"role\": \"in\"}, " PY
          "],\n  \"body\": \"y = class;\"\n}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"C++ keyword param in a raw cpu kernel",
     RAWP("{\"name\": \"new\", \"type\": \"i64\", \"role\": \"scalar\"}",
          "  \"cpu\": \"y[0] = x[0] * (float)new;\"\n"),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"inout only", HEAD "  \"params\": [{\"name\": \"y\", \"type\": \"f64\", "
                        "\"role\": \"inout\"}],\n  \"body\": \"y = y * 2;\"\n}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"every type",
     HEAD "  \"params\": [{\"name\": \"p1\", \"type\": \"f32\", \"role\": "
          "\"in\"}, {\"name\": \"p2\", \"type\": \"f64\", \"role\": \"in\"},\n"
          "  {\"name\": \"p3\", \"type\": \"i8\", \"role\": \"in\"}, "
          "{\"name\": \"p4\", \"type\": \"i16\", \"role\": \"in\"},\n"
          "  {\"name\": \"p5\", \"type\": \"i32\", \"role\": \"scalar\"}, "
          "{\"name\": \"p6\", \"type\": \"i64\", \"role\": \"scalar\"},\n"
          "  {\"name\": \"p7\", \"type\": \"u8\", \"role\": \"in\"}, "
          "{\"name\": \"p8\", \"type\": \"u16\", \"role\": \"in\"},\n"
          "  {\"name\": \"p9\", \"type\": \"u32\", \"role\": \"inout\"}, "
          "{\"name\": \"p10\", \"type\": \"u64\", \"role\": \"out\"}],\n"
          "  \"body\": \"p10 = p7 + p8 + p9; p9 = 0; (void)p1; (void)p2; "
          "(void)p3; (void)p4; (void)p5; (void)p6;\"\n}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"keys starting with '_' are ignored",
     "{\"_comment\": [\"anything\", {\"x\": 1}], " SV ", \"_a\": null,\n"
     "  \"kernels\": [{\"_why\": 1, \"name\": \"k\", \"kind\": "
     "\"elementwise\",\n  \"params\": [{\"name\": \"x\", \"type\": \"f32\", "
     "\"role\": \"in\", \"_unit\": \"m\"}, " PY "], \"body\": \"y = x;\"}]}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"kernels with inner schema_version 1",
     "{" SV ", \"doc\": \"two\", \"kernels\": [\n  {" SV ", \"name\": \"k\", "
     "\"kind\": \"elementwise\", \"params\": [" PX ", " PY
     "], \"body\": \"y = x;\"},\n  " K_OK2 "]}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"schema_version last",
     "{\"name\": \"k\", \"kind\": \"elementwise\",\n" KBODY ", " SV "}", 0,
     NULL, 0, 0, 0, NULL, NULL},
    {"BOM", "\xEF\xBB\xBF" EW("\"y = x;\""), 0, NULL, 0, 0, 0, NULL, NULL},
    {"CRLF",
     "{" SV ",\r\n  \"name\": \"k\",\r\n  \"kind\": \"elementwise\",\r\n"
     "  \"params\": [" PX ", " PY "],\r\n  \"body\": [\"y = x;\",\r\n    "
     "\"y = y;\"]\r\n}\r\n",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"doc with UTF-8 and escapes",
     "{" SV ", \"name\": \"k\", \"doc\": \"caf\xc3\xa9 \xf0\x9f\x98\x80 "
     "\\u00e9 \\\"q\\\" \\t\", \"kind\": \"elementwise\",\n" KBODY "}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"an escaped backslash before u0000 is no NUL",
     "{" SV ", \"name\": \"k\", \"doc\": \"a\\\\u0000\", \"kind\": "
     "\"elementwise\",\n" KBODY "}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"targets [cuda, cpu]", TGT("[\"cuda\", \"cpu\"]"), 0, NULL, 0, 0, 0, NULL,
     NULL},
    {"reduction, every field",
     RED("\"x * s + (float)i / (float)n\"", "\"fmaxf(a, b)\"", "\"-INFINITY\"",
         ",\n  \"finalize\": \"acc / (float)n + s\""),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"reduction, identity from a scalar and constants",
     RED("\"x\"", "\"(a < b || a != a) ? a : b\"", "\"s + FLT_MAX + (float)sizeof(float)\"", ""),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"reduction with a placeholder",
     REDHEAD "  \"types\": {\"T\": [\"f32\", \"i64\"]},\n  \"params\": "
             "[{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"}, "
             "{\"name\": \"out\", \"type\": \"T\", \"role\": \"out\"}],\n"
             "  \"map\": \"(T)(x * x)\", \"combine\": \"(T)(a + b)\", "
             "\"identity\": \"(T)0\", \"finalize\": \"acc / (T)n\"\n}",
     0, NULL, 0, 0, 0, NULL, NULL},
    {"raw cpu with return and loops",
     RAW("  \"cpu\": [\"for (size_t j = 0; j < n; j++) {\", \"  if (x[j] < 0) "
         "return;\", \"  y[j] = x[j] * (float)m;\", \"}\"]\n"),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"raw cuda with __syncthreads and atomics",
     RAW("  \"cuda\": \"__shared__ float t[32]; t[threadIdx.x % 32] = x[0]; "
         "__syncthreads(); if (threadIdx.x == 0) atomicAdd(y, t[0]); "
         "__threadfence();\"\n"),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"raw with len expressions",
     RAWL("\"(size_t)m * n + 1\""), 0, NULL, 0, 0, 0, NULL, NULL},
    {"raw with len: % / - and a comment",
     RAWL("\"(n % 4 + m / 2 - -1) /* rounded */\""), 0, NULL, 0, 0, 0, NULL,
     NULL},
    {"raw with body alias", RAW("  \"body\": \"y[0] = x[0];\"\n"), 0, NULL, 0,
     0, 0, NULL, NULL},
    {"raw, explicit targets matching",
     RAW("  \"targets\": [\"cpu\", \"cuda\"],\n  \"cpu\": \"y[0] = x[0];\",\n"
         "  \"cuda\": \"y[0] = x[0];\"\n"),
     0, NULL, 0, 0, 0, NULL, NULL},
    /* a raw body may be empty: a kernel that does nothing (once refused,
     * "cpu: is empty", against schemas/README.md) */
    {"raw cpu empty", RAW("  \"cpu\": \"\"\n"), 0, NULL, 0, 0, 0, NULL, NULL},
    {"raw cpu blank", RAW("  \"cpu\": \" \\n\\t \"\n"), 0, NULL, 0, 0, 0, NULL,
     NULL},
    {"raw cpu blank lines", RAW("  \"cpu\": [\"\", \"  \"]\n"), 0, NULL, 0, 0,
     0, NULL, NULL},
    {"raw cpu only a comment", RAW("  \"cpu\": \"/* nothing to do */\"\n"), 0,
     NULL, 0, 0, 0, NULL, NULL},
    {"raw body alias empty", RAW("  \"body\": \"\"\n"), 0, NULL, 0, 0, 0, NULL,
     NULL},
    {"raw cuda empty", RAW("  \"cuda\": \"\"\n"), 0, NULL, 0, 0, 0, NULL, NULL},
    {"raw cpu and cuda empty, explicit targets",
     RAW("  \"targets\": [\"cpu\", \"cuda\"],\n  \"cpu\": \"\",\n"
         "  \"cuda\": \" \"\n"),
     0, NULL, 0, 0, 0, NULL, NULL},
    {"raw cpu empty with len expressions",
     "{" SV ", \"name\": \"w\", \"kind\": \"raw\",\n  \"params\": [" PX
     ",\n    {\"name\": \"y\", \"type\": \"f32\", \"role\": \"out\", \"len\": "
     "\"m * 2\"},\n    " PM "],\n  \"cpu\": \"\"\n}\n",
     0, NULL, 0, 0, 0, NULL, NULL},
};

/* ---- Structure of valid files --------------------------------------------------- */

static int nparsed;

static hkc_file *must_parse(const char *what, const char *text) {
  nparsed++;
  hkc_file *f = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  int rc = parse(text, &f, &d);
  CHECK_MSG(rc == 0 && f && d.n == 0, "%s: expected to parse", what);
  if (rc != 0 || d.n) dump(what, text, &d);
  hku_diags_free(&d);
  return rc == 0 ? f : NULL;
}

static void check_param(const hkc_param *p, const char *name, hk_dtype_t t,
                        char holder, hk_role_t role) {
  CHECK_STR_EQ(p->name, name);
  CHECK_INT_EQ(p->dtype, t);
  CHECK_INT_EQ(p->placeholder, holder);
  CHECK_INT_EQ(p->role, role);
}

static void test_structure(void) {
  /* SPEC §1's example, as written there */
  const char *saxpy =
      "{\n"
      "  \"schema_version\": 1,\n"
      "  \"name\": \"saxpy\",\n"
      "  \"doc\": \"y = alpha * x + y\",\n"
      "  \"kind\": \"elementwise\",\n"
      "  \"params\": [\n"
      "    {\"name\": \"alpha\", \"type\": \"f32\", \"role\": \"scalar\"},\n"
      "    {\"name\": \"x\",     \"type\": \"f32\", \"role\": \"in\"},\n"
      "    {\"name\": \"y\",     \"type\": \"f32\", \"role\": \"inout\"}\n"
      "  ],\n"
      "  \"body\": \"y = alpha * x + y;\",\n"
      "  \"targets\": [\"cpu\", \"cuda\"]\n"
      "}\n";
  hkc_file *f = must_parse("saxpy", saxpy);
  if (f) {
    CHECK_INT_EQ(f->nkernels, 1);
    CHECK_STR_EQ(f->path, PATH);
    const hkc_kernel *k = &f->kernels[0];
    CHECK_STR_EQ(k->name, "saxpy");
    CHECK_STR_EQ(k->doc, "y = alpha * x + y");
    CHECK_INT_EQ(k->kind, HK_KIND_ELEMENTWISE);
    CHECK_INT_EQ(k->targets, HK_TARGET_CPU | HK_TARGET_CUDA);
    CHECK_INT_EQ(k->nparams, 3);
    if (k->nparams == 3) {
      check_param(&k->params[0], "alpha", HK_F32, 0, HK_ROLE_SCALAR);
      check_param(&k->params[1], "x", HK_F32, 0, HK_ROLE_IN);
      check_param(&k->params[2], "y", HK_F32, 0, HK_ROLE_INOUT);
      CHECK(k->params[0].len.text == NULL);
    }
    CHECK_INT_EQ(k->nholders, 0);
    CHECK_STR_EQ(k->body.text, "y = alpha * x + y;");
    CHECK_INT_EQ(k->body.len, strlen("y = alpha * x + y;"));
    CHECK_STR_EQ(k->body.field, "body");
    CHECK(k->map.text == NULL && k->cpu.text == NULL && k->cuda.text == NULL);
    CHECK_STR_EQ(k->prefix, "");
    CHECK_INT_EQ(k->ninst, 1);
    if (k->ninst == 1) {
      CHECK_STR_EQ(k->inst[0].name, "saxpy");
      CHECK(k->inst[0].k == k);
      CHECK_INT_EQ(hkc_param_type(&k->inst[0], &k->params[0]), HK_F32);
    }
  }
  hkc_file_free(f);

  /* defaults: no doc, no targets */
  f = must_parse("defaults", EW("\"y = x;\""));
  if (f) {
    CHECK_STR_EQ(f->kernels[0].doc, "");
    CHECK_INT_EQ(f->kernels[0].targets, HK_TARGET_CPU | HK_TARGET_CUDA);
  }
  hkc_file_free(f);
  f = must_parse("targets [cuda]", TGT("[\"cuda\"]"));
  if (f) CHECK_INT_EQ(f->kernels[0].targets, HK_TARGET_CUDA);
  hkc_file_free(f);
  f = must_parse("targets [cpu]", TGT("[\"cpu\"]"));
  if (f) CHECK_INT_EQ(f->kernels[0].targets, HK_TARGET_CPU);
  hkc_file_free(f);

  /* a body given as lines is joined with '\n'; escapes are decoded */
  f = must_parse("lines", EW_LINES("float t = x;", "t = t * 2.0f;",
                                   "y = t; /* \\u00e9\\t */"));
  if (f) {
    const hkc_src *b = &f->kernels[0].body;
    const char *want = "float t = x;\nt = t * 2.0f;\ny = t; /* \xc3\xa9\t */";
    CHECK_STR_EQ(b->text, want);
    CHECK_INT_EQ(b->len, strlen(want));
    CHECK_INT_EQ(b->nsegs, 3);
    if (b->nsegs == 3) {
      CHECK_INT_EQ(b->segs[0].start, 0);
      CHECK_INT_EQ(b->segs[1].start, 13);
      CHECK_INT_EQ(b->segs[2].start, 27);
    }
  }
  hkc_file_free(f);

  /* a reduction's expressions */
  f = must_parse("reduction",
                 RED("\"x * s\"", "\"a + b\"", "\"0\"",
                     ",\n  \"finalize\": \"acc / (float)n\""));
  if (f) {
    const hkc_kernel *k = &f->kernels[0];
    CHECK_INT_EQ(k->kind, HK_KIND_REDUCTION);
    CHECK_STR_EQ(k->map.text, "x * s");
    CHECK_STR_EQ(k->map.field, "map");
    CHECK_STR_EQ(k->combine.text, "a + b");
    CHECK_STR_EQ(k->identity.text, "0");
    CHECK_STR_EQ(k->finalize.text, "acc / (float)n");
    CHECK(k->body.text == NULL);
    CHECK_INT_EQ(k->targets, HK_TARGET_CPU | HK_TARGET_CUDA);
    CHECK_INT_EQ(k->nparams, 3);
    if (k->nparams == 3) check_param(&k->params[2], "out", HK_F32, 0,
                                     HK_ROLE_OUT);
    if (k->ninst == 1) CHECK_INT_EQ(hkc_acc_type(&k->inst[0]), HK_F32);
  }
  hkc_file_free(f);
  f = must_parse("reduction without finalize",
                 RED("\"x\"", "\"a + b\"", "\"0\"", ""));
  if (f) CHECK(f->kernels[0].finalize.text == NULL);
  hkc_file_free(f);

  /* raw: the targets are the bodies given */
  f = must_parse("raw cpu", RAWL("\"m * n\""));
  if (f) {
    const hkc_kernel *k = &f->kernels[0];
    CHECK_INT_EQ(k->kind, HK_KIND_RAW);
    CHECK_INT_EQ(k->targets, HK_TARGET_CPU);
    CHECK_STR_EQ(k->cpu.text, "y[0] = x[0];");
    CHECK_STR_EQ(k->cpu.field, "cpu");
    CHECK(k->cuda.text == NULL);
    CHECK_INT_EQ(k->nparams, 3);
    if (k->nparams == 3) {
      CHECK_STR_EQ(k->params[1].len.text, "m * n");
      CHECK_STR_EQ(k->params[1].len.field, "params[1].len");
      CHECK(k->params[0].len.text == NULL);
      check_param(&k->params[2], "m", HK_I64, 0, HK_ROLE_SCALAR);
    }
  }
  hkc_file_free(f);
  f = must_parse("raw cuda", RAW("  \"cuda\": \"y[0] = x[0];\"\n"));
  if (f) {
    CHECK_INT_EQ(f->kernels[0].targets, HK_TARGET_CUDA);
    CHECK_STR_EQ(f->kernels[0].cuda.text, "y[0] = x[0];");
    CHECK(f->kernels[0].cpu.text == NULL);
  }
  hkc_file_free(f);
  f = must_parse("raw both", RAW("  \"cpu\": \"y[0] = 1;\",\n"
                                 "  \"cuda\": \"y[0] = 2;\"\n"));
  if (f) {
    CHECK_INT_EQ(f->kernels[0].targets, HK_TARGET_CPU | HK_TARGET_CUDA);
    CHECK_STR_EQ(f->kernels[0].cpu.text, "y[0] = 1;");
    CHECK_STR_EQ(f->kernels[0].cuda.text, "y[0] = 2;");
  }
  hkc_file_free(f);
  /* an empty raw body is kept as it is: the emitters put nothing in the
   * function */
  f = must_parse("raw cpu empty", RAW("  \"cpu\": \"\"\n"));
  if (f) {
    CHECK_INT_EQ(f->kernels[0].targets, HK_TARGET_CPU);
    CHECK_STR_EQ(f->kernels[0].cpu.text, "");
    CHECK_INT_EQ(f->kernels[0].cpu.len, 0);
    CHECK(f->kernels[0].cuda.text == NULL);
    CHECK_INT_EQ(f->kernels[0].ninst, 1);
  }
  hkc_file_free(f);
  f = must_parse("raw cuda blank", RAW("  \"cuda\": [\" \", \"\"]\n"));
  if (f) {
    CHECK_INT_EQ(f->kernels[0].targets, HK_TARGET_CUDA);
    CHECK_STR_EQ(f->kernels[0].cuda.text, " \n");
    CHECK(f->kernels[0].cpu.text == NULL);
  }
  hkc_file_free(f);
  f = must_parse("raw body alias", RAW("  \"body\": \"y[0] = 3;\"\n"));
  if (f) {
    CHECK_INT_EQ(f->kernels[0].targets, HK_TARGET_CPU);
    CHECK_STR_EQ(f->kernels[0].cpu.text, "y[0] = 3;");
    CHECK_STR_EQ(f->kernels[0].cpu.field, "body");
    CHECK(f->kernels[0].body.text == NULL);
  }
  hkc_file_free(f);

  /* several kernels, one of each kind */
  const char *multi =
      "{" SV ", \"doc\": \"three\", \"kernels\": [\n"
      "  " K_OK ",\n"
      "  {\"name\": \"r\", \"kind\": \"reduction\", \"doc\": \"sum\",\n"
      "   \"params\": [" PX ", " PO "],\n"
      "   \"map\": \"x\", \"combine\": \"a + b\", \"identity\": \"0\"},\n"
      "  {\"name\": \"w\", \"kind\": \"raw\", \"params\": [" PX ", " PY "],\n"
      "   \"cpu\": [\"for (size_t j = 0; j < n; j++)\", \"  y[j] = x[j];\"]}\n"
      "]}\n";
  f = must_parse("multi", multi);
  if (f) {
    CHECK_INT_EQ(f->nkernels, 3);
    if (f->nkernels == 3) {
      CHECK_STR_EQ(f->kernels[0].name, "k");
      CHECK_INT_EQ(f->kernels[0].kind, HK_KIND_ELEMENTWISE);
      CHECK_STR_EQ(f->kernels[0].prefix, "kernels[0].");
      CHECK_STR_EQ(f->kernels[0].body.field, "kernels[0].body");
      CHECK_STR_EQ(f->kernels[1].name, "r");
      CHECK_STR_EQ(f->kernels[1].doc, "sum");
      CHECK_INT_EQ(f->kernels[1].kind, HK_KIND_REDUCTION);
      CHECK_STR_EQ(f->kernels[1].map.field, "kernels[1].map");
      CHECK_STR_EQ(f->kernels[2].name, "w");
      CHECK_INT_EQ(f->kernels[2].kind, HK_KIND_RAW);
      CHECK_INT_EQ(f->kernels[2].targets, HK_TARGET_CPU);
      CHECK_STR_EQ(f->kernels[2].cpu.text,
                   "for (size_t j = 0; j < n; j++)\n  y[j] = x[j];");
    }
  }
  hkc_file_free(f);
  printf("%-22s %3d files\n", "structure", nparsed);
}

/* ---- Instances ------------------------------------------------------------------ */

static void test_instances(void) {
  hkc_file *f = must_parse(
      "T",
      HEAD "  \"types\": {\"T\": [\"f32\", \"f64\"]},\n  \"params\": [{\"name\": "
           "\"x\", \"type\": \"T\", \"role\": \"in\"}, {\"name\": \"y\", "
           "\"type\": \"T\", \"role\": \"out\"}, " PM "],\n  \"body\": "
           "\"y = x;\"\n}");
  if (f) {
    const hkc_kernel *k = &f->kernels[0];
    CHECK_INT_EQ(k->nholders, 1);
    CHECK_INT_EQ(k->holders[0].letter, 'T');
    CHECK_INT_EQ(k->holders[0].ntypes, 2);
    check_param(&k->params[0], "x", HK_DTYPE_INVALID, 'T', HK_ROLE_IN);
    CHECK_INT_EQ(k->ninst, 2);
    if (k->ninst == 2) {
      CHECK_STR_EQ(k->inst[0].name, "k_f32");
      CHECK_STR_EQ(k->inst[1].name, "k_f64");
      CHECK_INT_EQ(k->inst[0].bind['T' - 'A'], HK_F32);
      CHECK_INT_EQ(k->inst[1].bind['T' - 'A'], HK_F64);
      CHECK_INT_EQ(hkc_param_type(&k->inst[1], &k->params[0]), HK_F64);
      CHECK_INT_EQ(hkc_param_type(&k->inst[1], &k->params[2]), HK_I64);
    }
  }
  hkc_file_free(f);

  /* two placeholders: the first declared varies slowest */
  const char *two =
      "{" SV ", \"name\": \"add\", \"kind\": \"elementwise\",\n"
      "  \"types\": {\"T\": [\"f32\", \"f64\"], \"U\": [\"i32\", \"i64\", "
      "\"u8\"]},\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
      "             {\"name\": \"z\", \"type\": \"U\", \"role\": \"in\"},\n"
      "             {\"name\": \"y\", \"type\": \"T\", \"role\": \"out\"}],\n"
      "  \"body\": \"y = x + (T)z;\"\n}";
  f = must_parse("T, U", two);
  if (f) {
    const hkc_kernel *k = &f->kernels[0];
    static const char *const names[] = {"add_f32_i32", "add_f32_i64",
                                        "add_f32_u8",  "add_f64_i32",
                                        "add_f64_i64", "add_f64_u8"};
    static const hk_dtype_t t[] = {HK_F32, HK_F32, HK_F32,
                                   HK_F64, HK_F64, HK_F64};
    static const hk_dtype_t u[] = {HK_I32, HK_I64, HK_U8,
                                   HK_I32, HK_I64, HK_U8};
    CHECK_INT_EQ(k->ninst, 6);
    for (int i = 0; i < k->ninst && i < 6; i++) {
      CHECK_STR_EQ(k->inst[i].name, names[i]);
      CHECK_INT_EQ(k->inst[i].bind['T' - 'A'], t[i]);
      CHECK_INT_EQ(k->inst[i].bind['U' - 'A'], u[i]);
      CHECK_INT_EQ(hkc_param_type(&k->inst[i], &k->params[1]), u[i]);
    }
  }
  hkc_file_free(f);

  /* declaration order, not alphabetical order */
  const char *rev =
      "{" SV ", \"name\": \"cvt\", \"kind\": \"elementwise\",\n"
      "  \"types\": {\"U\": [\"i32\", \"i64\"], \"T\": [\"f32\", \"f64\"]},\n"
      "  \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"},\n"
      "             {\"name\": \"y\", \"type\": \"U\", \"role\": \"out\"}],\n"
      "  \"body\": \"y = (U)x;\"\n}";
  f = must_parse("U, T", rev);
  if (f) {
    const hkc_kernel *k = &f->kernels[0];
    static const char *const names[] = {"cvt_i32_f32", "cvt_i32_f64",
                                        "cvt_i64_f32", "cvt_i64_f64"};
    CHECK_INT_EQ(k->ninst, 4);
    for (int i = 0; i < k->ninst && i < 4; i++)
      CHECK_STR_EQ(k->inst[i].name, names[i]);
    CHECK_INT_EQ(k->holders[0].letter, 'U');
    CHECK_INT_EQ(k->holders[1].letter, 'T');
  }
  hkc_file_free(f);

  /* instance names must be unique in a file */
  static const pcase dups[] = {
      {"instance add_f32 twice",
       "{" SV ", \"kernels\": [\n"
       "  {\"name\": \"add\", \"kind\": \"elementwise\", \"types\": {\"T\": "
       "[\"f32\", \"f64\"]},\n"
       "   \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"}, "
       "{\"name\": \"y\", \"type\": \"T\", \"role\": \"out\"}], \"body\": "
       "\"y = x;\"},\n"
       "  {\"name\": \"add_f32\", \"kind\": \"elementwise\",\n"
       "   \"params\": [" PX ", " PY "], \"body\": \"y = x;\"}]}",
       1, "\"add_f32\"", 0, 4, 12,
       "kernels[1].name: kernel \"add_f32\" is defined twice in this file",
       "line 2, column 12"},
      {"instance add_f32 twice, plain name first",
       "{" SV ", \"kernels\": [\n"
       "  {\"name\": \"add_f32\", \"kind\": \"elementwise\",\n"
       "   \"params\": [" PX ", " PY "], \"body\": \"y = x;\"},\n"
       "  {\"name\": \"add\", \"kind\": \"elementwise\", \"types\": {\"T\": "
       "[\"f32\", \"f64\"]},\n"
       "   \"params\": [{\"name\": \"x\", \"type\": \"T\", \"role\": \"in\"}, "
       "{\"name\": \"y\", \"type\": \"T\", \"role\": \"out\"}], \"body\": "
       "\"y = x;\"}]}",
       1, "\"add\"", 0, 4, 12, "kernels[1].name: kernel \"add_f32\" is defined "
                               "twice",
       "line 2, column 12"},
      {"the same name twice",
       "{" SV ", \"kernels\": [" K_OK ",\n  " K_OK "]}", 1, "\"k\"", 2, 2, 12,
       "kernels[1].name: kernel \"k\" is defined twice", "line 1, column "},
      {"two names twice each: both reported",
       "{" SV ", \"kernels\": [" K_OK ",\n  " K_OK2 ",\n  " K_OK ",\n  " K_OK2
       "]}",
       2, "\"k\"", 2, 3, 12, "kernel \"k\" is defined twice", NULL},
  };
  RUN(dups);
}

/* ---- The stdlib's files ------------------------------------------------------------ */

/* HK_SOURCE_DIR (ctest sets it), else the tree this file is in, else "..". */
static const char *source_dir(void) {
  static char dir[1024];
  const char *s = getenv("HK_SOURCE_DIR");
  if (s && *s) return s;
  const char *slash = strrchr(__FILE__, '/');
  if (__FILE__[0] == '/' && slash && (size_t)(slash - __FILE__) < sizeof dir) {
    snprintf(dir, sizeof dir, "%.*s/..", (int)(slash - __FILE__), __FILE__);
    DIR *dp = opendir(dir);
    if (dp) {
      closedir(dp);
      return dir;
    }
  }
  return "..";
}

static int has_instance(const hkc_file *f, const char *name) {
  for (int i = 0; i < f->nkernels; i++)
    for (int j = 0; j < f->kernels[i].ninst; j++)
      if (!strcmp(f->kernels[i].inst[j].name, name)) return 1;
  return 0;
}

static void test_stdlib_files(void) {
  char dir[2048];
  int w = snprintf(dir, sizeof dir, "%s/stdlib_kernels", source_dir());
  CHECK(w > 0 && (size_t)w < sizeof dir);
  DIR *dp = opendir(dir);
  CHECK_MSG(dp != NULL, "cannot open %s (set HK_SOURCE_DIR)", dir);
  if (!dp) return;
  int files = 0, kernels = 0, instances = 0;
  int seen_add = 0, seen_sum = 0, seen_softmax = 0;
  struct dirent *e;
  while ((e = readdir(dp))) {
    size_t l = strlen(e->d_name);
    if (l < 6 || strcmp(e->d_name + l - 5, ".json")) continue;
    char path[4096];
    w = snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
    CHECK(w > 0 && (size_t)w < sizeof path);
    hkc_file *f = NULL;
    hku_diags d = HKU_DIAGS_INIT;
    int rc = hkc_file_load(path, &f, &d);
    CHECK_MSG(rc == 0 && d.n == 0, "%s does not parse cleanly", path);
    if (rc || d.n) dump(path, "(on disk)", &d);
    if (f) {
      files++;
      CHECK_STR_EQ(f->path, path);
      CHECK_MSG(f->nkernels > 0, "%s: no kernels", path);
      kernels += f->nkernels;
      for (int i = 0; i < f->nkernels; i++) {
        CHECK_MSG(f->kernels[i].ninst > 0, "%s: %s has no instances", path,
                  f->kernels[i].name);
        instances += f->kernels[i].ninst;
        CHECK(f->kernels[i].targets != 0);
      }
      seen_add |= has_instance(f, "add_f32") && has_instance(f, "add_i64");
      seen_sum |= has_instance(f, "sum_f64");
      seen_softmax |= has_instance(f, "softmax_f32");
    }
    hkc_file_free(f);
    hku_diags_free(&d);
  }
  closedir(dp);
  CHECK_MSG(files >= 6, "only %d stdlib files", files);
  CHECK(seen_add && seen_sum && seen_softmax);
  printf("%-22s %3d files, %d kernels, %d instances\n", "stdlib_kernels",
         files, kernels, instances);
}

/* ---- Several errors in one file ------------------------------------------------------ */

typedef struct at_msg {
  int line, col;
  const char *has;
} at_msg;

static void expect_all(const char *what, const char *text, const at_msg *want,
                       size_t nwant) {
  hkc_file *f = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  int rc = parse(text, &f, &d);
  int before = check_failures;
  CHECK_MSG(rc == HK_ESCHEMA && f == NULL, "%s: expected to fail", what);
  CHECK_MSG(d.n == nwant, "%s: %zu diagnostics, expected %zu", what, d.n,
            nwant);
  for (size_t i = 0; i < d.n && i < nwant; i++) {
    CHECK_MSG(d.v[i].sev == HKU_ERROR, "%s: #%zu not an error", what, i);
    CHECK_MSG(d.v[i].line == want[i].line && d.v[i].col == want[i].col,
              "%s: #%zu at %d:%d, expected %d:%d", what, i, d.v[i].line,
              d.v[i].col, want[i].line, want[i].col);
    CHECK_MSG(strstr(d.v[i].msg, want[i].has) != NULL,
              "%s: #%zu \"%s\" lacks \"%s\"", what, i, d.v[i].msg,
              want[i].has);
  }
  /* in file order */
  for (size_t i = 1; i < d.n; i++)
    CHECK_MSG(d.v[i - 1].line < d.v[i].line ||
                  (d.v[i - 1].line == d.v[i].line &&
                   d.v[i - 1].col <= d.v[i].col),
              "%s: #%zu before #%zu", what, i, i - 1);
  if (check_failures != before) dump(what, text, &d);
  hkc_file_free(f);
  hku_diags_free(&d);
}

static void test_many_errors(void) {
  /* Found in another order than they appear (the body's kind-specific
   * checks, the params, the keys); reported in file order. */
  const char *one =
      "{" SV ", \"name\": \"k-1\",\n"                                  /* 1 */
      "  \"kind\": \"elementwise\",\n"                                 /* 2 */
      "  \"body\": \"y = printf(x);\",\n"                              /* 3 */
      "  \"params\": [{\"name\": \"x\", \"type\": \"f128\", \"role\": "
      "\"in\"},\n"                                                     /* 4 */
      "             {\"name\": \"y\", \"type\": \"f32\", \"role\": "
      "\"outt\"},\n"                                                   /* 5 */
      "             {\"name\": \"int\", \"type\": \"f32\", \"role\": "
      "\"inout\"}],\n"                                                 /* 6 */
      "  \"targets\": [\"cpu\", \"tpu\"],\n"                           /* 7 */
      "  \"bogus\": 1\n"                                               /* 8 */
      "}\n";
  static const at_msg want1[] = {
      {1, 31, "name: \"k-1\" is not a C identifier"},
      {3, 16, "body: calls 'printf'"},
      {4, 36, "params[0].type: unknown type \"f128\""},
      {5, 51, "params[1].role: unknown role \"outt\""},
      {6, 23, "params[2].name: \"int\" is a C keyword"},
      {7, 22, "targets[1]: unknown target \"tpu\""},
      {8, 3, "unknown field \"bogus\""},
  };
  expect_all("seven errors in one kernel", one, want1,
             sizeof want1 / sizeof *want1);

  /* across kernels of a list */
  const char *two =
      "{" SV ", \"kernels\": [\n"                                      /* 1 */
      "  {\"name\": \"k\", \"kind\": \"elementwise\", \"params\": [" PX
      ", " PY "],\n"                                                   /* 2 */
      "   \"body\": \"y = x$;\"},\n"                                   /* 3 */
      "  {\"name\": \"r\", \"kind\": \"reduction\", \"params\": [" PX
      ", " PO "],\n"                                                   /* 4 */
      "   \"map\": \"x;\", \"combine\": \"a + q\", \"identity\": \"0\"},\n" /* 5 */
      "  {\"name\": \"w\", \"kind\": \"raw\", \"params\": [" PX ", " PY
      "]}\n"                                                           /* 6 */
      "]}\n";
  static const at_msg want2[] = {
      {3, 18, "kernels[0].body: unexpected character '$'"},
      {5, 13, "kernels[1].map: ';' cannot appear in an expression"},
      {5, 33, "kernels[1].combine: 'q' is not one of a and b"},
      {6, 3, "kernels[2]: a raw kernel needs a \"cpu\" body"},
  };
  expect_all("errors in three kernels", two, want2,
             sizeof want2 / sizeof *want2);

  /* several problems in one body, each at its own place */
  static const at_msg want3[] = {
      {3, 12, "body: calls 'system'"},
      {3, 35, "body: unexpected character '@'"},
      {3, 39, "body: 'hk_z' is reserved"},
  };
  expect_all("three errors in one body",
             EW("\"system(\\\"x\\\"); y = x + @ + hk_z;\""), want3,
             sizeof want3 / sizeof *want3);

  /* More than HKU_DIAGS_MAX: the rest are counted, and the format says so. */
  hku_buf t = HKU_BUF_INIT;
  hku_buf_put(&t, HEAD "  \"params\": [\n");
  for (int i = 0; i < 120; i++)
    hku_buf_printf(&t, "    {\"name\": \"p%d\", \"type\": \"f32\", \"role\": "
                       "\"bad\"},\n", i);
  hku_buf_put(&t, "    " PY "],\n  \"body\": \"y = 1;\"\n}\n");
  hkc_file *f = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  CHECK_INT_EQ(parse(hku_buf_str(&t), &f, &d), HK_ESCHEMA);
  CHECK_INT_EQ(d.nerrors, 120);
  CHECK_INT_EQ(d.n, HKU_DIAGS_MAX);
  if (d.n) {
    CHECK_INT_EQ(d.v[0].line, 3);
    CHECK_INT_EQ(d.v[d.n - 1].line, 3 + HKU_DIAGS_MAX - 1);
  }
  hku_buf out = HKU_BUF_INIT;
  hku_diags_format(&d, &out);
  CHECK_CONTAINS(hku_buf_str(&out), "t.json: note: 20 more errors not shown\n");
  hku_buf_free(&out);
  hku_diags_free(&d);
  hku_buf_free(&t);
  printf("%-22s %3d files\n", "many errors", 4);
}

/* ---- The diagnostic format ------------------------------------------------------------ */

static void test_format(void) {
  hkc_file *f = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  /* one error: one line */
  parse(NAMED("\"a b\""), &f, &d);
  hku_buf b = HKU_BUF_INIT;
  hku_diags_format(&d, &b);
  CHECK_STR_EQ(hku_buf_str(&b),
               "t.json:1:31: error: name: \"a b\" is not a C identifier "
               "([A-Za-z_][A-Za-z0-9_]*)\n");
  hku_buf_free(&b);
  hku_diags_first(&d, &b);
  CHECK_STR_EQ(hku_buf_str(&b),
               "t.json:1:31: error: name: \"a b\" is not a C identifier "
               "([A-Za-z_][A-Za-z0-9_]*)");
  hku_buf_free(&b);
  hku_diags_free(&d);

  /* two errors: two lines, each PATH:LINE:COL: error: MSG */
  const char *text = "{" SV ", \"name\": \"k\", \"kind\": \"elementwise\",\n"
                     "  \"targets\": [\"cpu\", \"gpu\"],\n"
                     "  \"params\": [" PX ", " PY "],\n"
                     "  \"body\": \"y = x$;\"\n}";
  CHECK_INT_EQ(hkc_file_parse("dir/my kernel.json", text, strlen(text), &f,
                              &d),
               HK_ESCHEMA);
  hku_diags_format(&d, &b);
  const char *s = hku_buf_str(&b);
  CHECK_MSG(strncmp(s, "dir/my kernel.json:2:22: error: targets[1]: ", 44) == 0,
            "%s", s);
  const char *nl = strchr(s, '\n');
  CHECK(nl != NULL);
  if (nl)
    CHECK_MSG(strncmp(nl + 1,
                      "dir/my kernel.json:4:17: error: body: unexpected "
                      "character '$'\n",
                      63) == 0 &&
                  nl[64] == '\0',
              "%s", s);
  /* and the format is exactly the fields */
  hku_buf exp = HKU_BUF_INIT;
  for (size_t i = 0; i < d.n; i++)
    hku_buf_printf(&exp, "%s:%d:%d: error: %s\n", d.v[i].path, d.v[i].line,
                   d.v[i].col, d.v[i].msg);
  CHECK_STR_EQ(s, hku_buf_str(&exp));
  hku_buf_free(&exp);
  hku_buf_free(&b);
  hku_diags_free(&d);

  /* no position: PATH: error: MSG */
  CHECK_INT_EQ(hkc_file_load("/nonexistent/k.json", &f, &d), HK_EIO);
  CHECK(f == NULL);
  hku_diags_format(&d, &b);
  CHECK_MSG(strncmp(hku_buf_str(&b), "/nonexistent/k.json: error: cannot read: ",
                    41) == 0,
            "%s", hku_buf_str(&b));
  hku_buf_free(&b);
  hku_diags_free(&d);
  CHECK_INT_EQ(hkc_file_load("/", &f, &d), HK_EIO);
  hku_diags_format(&d, &b);
  CHECK_STR_EQ(hku_buf_str(&b), "/: error: cannot read: not a regular file\n");
  hku_buf_free(&b);
  hku_diags_free(&d);

  /* the file's path is kept as given, also for JSON errors */
  CHECK_INT_EQ(hkc_file_parse("a/b.json", "{} x", 4, &f, &d), HK_ESCHEMA);
  hku_diags_format(&d, &b);
  CHECK_MSG(strncmp(hku_buf_str(&b), "a/b.json:1:4: error: invalid JSON", 33) ==
                0,
            "%s", hku_buf_str(&b));
  hku_buf_free(&b);
  hku_diags_free(&d);
  printf("%-22s ok\n", "format");
}

/* ---- Bytes that need an explicit length ------------------------------------------------ */

static void test_nul_byte(void) {
  static const char text[] = "{\n  \"doc\": \"a\0b\"\n}";
  hkc_file *f = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  CHECK_INT_EQ(parse_n(text, sizeof text - 1, &f, &d), HK_ESCHEMA);
  CHECK_INT_EQ(d.n, 1);
  if (d.n) {
    CHECK_INT_EQ(d.v[0].line, 2);
    CHECK_INT_EQ(d.v[0].col, 12);
    CHECK_CONTAINS(d.v[0].msg, "NUL byte");
  }
  hku_diags_free(&d);
  /* text need not be NUL-terminated: only len bytes are read */
  const char *full = EW("\"y = x;\"") "garbage";
  CHECK_INT_EQ(parse_n(full, strlen(full) - 7, &f, &d), 0);
  CHECK_INT_EQ(d.n, 0);
  hkc_file_free(f);
  hku_diags_free(&d);
}

/* ---- hkj_pos and hkj_str_offset ---------------------------------------------------------- */

static void test_positions(void) {
  /* the test's own helper, by hand */
  int l, c;
  text_pos("ab\ncd", 4, &l, &c);
  CHECK(l == 2 && c == 2);
  text_pos("\xc3\xa9x", 2, &l, &c); /* é is one column */
  CHECK(l == 1 && c == 2);
  text_pos("a\n\n\xf0\x9f\x98\x80\xc3\xa9z", 9, &l, &c);
  CHECK(l == 3 && c == 3);
  CHECK(marker_pos("x y x", "x", 2, &l, &c) && l == 1 && c == 5);
  CHECK(!marker_pos("x y x", "x", 3, &l, &c));

  /* line 1: {"k": "a\tb\u00e9c\"d\\e",      line 2:  "é": "ü😀x",
   * line 3:  "s": "\uD83D\uDE00!"} */
  const char *text =
      "{\"k\": \"a\\tb\\u00e9c\\\"d\\\\e\",\n"
      " \"\xc3\xa9\": \"\xc3\xbc\xf0\x9f\x98\x80x\",\n"
      " \"s\": \"\\uD83D\\uDE00!\"}";
  hkj_doc *doc = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  CHECK_INT_EQ(hkj_parse("p.json", text, strlen(text), &doc, &d), 0);
  CHECK_INT_EQ(d.n, 0);
  if (!doc) return;
  CHECK_INT_EQ(doc->nlines, 3);
  const hkj_node *root = doc->root;
  CHECK_INT_EQ(root->type, HKJ_OBJECT);
  CHECK_INT_EQ(root->nkids, 3);
  if (root->nkids != 3) goto out;
  const hkj_node *k = root->kids[0], *e = root->kids[1], *s = root->kids[2];

  /* node offsets */
  CHECK_INT_EQ(root->off, 0);
  CHECK_INT_EQ(root->end, strlen(text));
  CHECK_STR_EQ(k->key, "k");
  CHECK_INT_EQ(k->key_off, 1);
  CHECK_INT_EQ(k->off, 6);
  CHECK_INT_EQ(k->end, 25);
  CHECK_INT_EQ(k->str_len, 10);
  CHECK(memcmp(k->str, "a\tb\xc3\xa9" "c\"d\\e", 10) == 0);
  CHECK_STR_EQ(e->key, "\xc3\xa9");
  CHECK_INT_EQ(e->key_off, 28);
  CHECK_INT_EQ(e->off, 34);
  CHECK_INT_EQ(e->str_len, 7);
  CHECK_INT_EQ(s->off, 51);
  CHECK_INT_EQ(s->str_len, 5);
  CHECK(hkj_get(root, "s") == s && hkj_get(root, "z") == NULL);
  CHECK(hkj_get(k, "k") == NULL); /* not an object */

  /* hkj_pos: lines start at the byte after '\n'; columns count characters */
  static const struct {
    size_t off;
    int line, col;
  } pos[] = {
      {0, 1, 1},   {6, 1, 7},   {25, 1, 26}, {26, 1, 27}, {27, 2, 1},
      {28, 2, 2},  {29, 2, 3},  {31, 2, 4},  {34, 2, 7},  {35, 2, 8},
      {37, 2, 9},  {41, 2, 10}, {42, 2, 11}, {44, 2, 13}, {45, 3, 1},
      {50, 3, 6},
  };
  for (size_t i = 0; i < sizeof pos / sizeof *pos; i++) {
    hkj_pos(doc, pos[i].off, &l, &c);
    CHECK_MSG(l == pos[i].line && c == pos[i].col,
              "hkj_pos(%zu) = %d:%d, expected %d:%d", pos[i].off, l, c,
              pos[i].line, pos[i].col);
    /* and the test's helper agrees */
    int hl, hc;
    text_pos(text, pos[i].off, &hl, &hc);
    CHECK(hl == pos[i].line && hc == pos[i].col);
  }
  /* the end of the text, and past it (clamped) */
  size_t len = strlen(text);
  int el, ec;
  hkj_pos(doc, len, &el, &ec);
  CHECK(el == 3 && ec == 23);
  hkj_pos(doc, len + 100, &l, &c);
  CHECK(l == el && c == ec);

  /* hkj_str_offset: decoded byte -> file offset */
  static const struct {
    size_t decoded, off;
  } so[] = {
      {0, 7},  /* a */
      {1, 8},  /* \t: its backslash */
      {2, 10}, /* b */
      {3, 11}, /* é from \u00e9 */
      {4, 11}, /* its second byte: still the escape */
      {5, 17}, /* c */
      {6, 18}, /* \" */
      {7, 20}, /* d */
      {8, 21}, /* \\ */
      {9, 23}, /* e */
      {10, 24}, /* the closing quote */
  };
  for (size_t i = 0; i < sizeof so / sizeof *so; i++)
    CHECK_MSG(hkj_str_offset(doc, k, so[i].decoded) == so[i].off,
              "hkj_str_offset(k, %zu) = %zu, expected %zu", so[i].decoded,
              hkj_str_offset(doc, k, so[i].decoded), so[i].off);
  /* raw UTF-8 in a string: byte for byte */
  CHECK_INT_EQ(hkj_str_offset(doc, e, 0), 35);
  CHECK_INT_EQ(hkj_str_offset(doc, e, 2), 37);
  CHECK_INT_EQ(hkj_str_offset(doc, e, 6), 41);
  CHECK_INT_EQ(hkj_str_offset(doc, e, 7), 42);
  /* a surrogate pair: 12 characters in the file, 4 bytes decoded */
  CHECK_INT_EQ(hkj_str_offset(doc, s, 0), 52);
  CHECK_INT_EQ(hkj_str_offset(doc, s, 2), 52);
  CHECK_INT_EQ(hkj_str_offset(doc, s, 4), 64);
  CHECK_INT_EQ(hkj_str_offset(doc, s, 5), 65);

  /* numbers keep their text */
  hkj_free(doc);
  doc = NULL;
  CHECK_INT_EQ(hkj_parse("n.json", "{\"v\": 1.50e1 , \"w\": -0}", 23, &doc, &d),
               0);
  if (doc) {
    const char *p;
    size_t n;
    hkj_raw(doc, doc->root->kids[0], &p, &n);
    CHECK(n == 6 && memcmp(p, "1.50e1", 6) == 0);
    CHECK(doc->root->kids[0]->num == 15.0);
    hkj_raw(doc, doc->root->kids[1], &p, &n);
    CHECK(n == 2 && memcmp(p, "-0", 2) == 0);
  }
out:
  hkj_free(doc);
  hku_diags_free(&d);
  printf("%-22s ok\n", "hkj_pos/str_offset");
}

/* The return codes of common/internal.h: HK_ESCHEMA for what is wrong with
 * a file (JSON syntax, a bad field, a bad len), HK_OK otherwise, and the
 * words in the diags list. */
static void test_codes(void) {
  hkj_doc *doc = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  CHECK_INT_EQ(hkj_parse("j.json", "{\"a\": [1, 2,]}", 14, &doc, &d),
               HK_ESCHEMA);
  CHECK(doc == NULL);
  CHECK_INT_EQ(count_errors(&d), 1);
  hku_diags_free(&d);
  CHECK_INT_EQ(hkj_parse("j.json", "{\"a\": [1, 2]}", 13, &doc, &d), HK_OK);
  CHECK(doc != NULL);
  hkj_free(doc);
  hku_diags_free(&d);

  const char *raw =
      "{\"schema_version\": 1, \"name\": \"r\", \"kind\": \"raw\",\n"
      " \"params\": [{\"name\": \"x\", \"type\": \"f32\", \"role\": "
      "\"inout\", \"len\": \"n +\"}],\n"
      " \"cpu\": \"x[0] = 1;\"}";
  hkc_file *f = NULL;
  CHECK_INT_EQ(hkc_file_parse(PATH, raw, strlen(raw), &f, &d), HK_ESCHEMA);
  CHECK(f == NULL);
  CHECK_INT_EQ(count_errors(&d), 1);
  hku_diags_free(&d);
  printf("%-22s ok\n", "return codes");
}

/* A body of many nested call groups, "((x)(x))(x)...": each '(' after a
 * group used to scan back to the group's opening parenthesis, quadratic in
 * the body's length (found by fuzz_body: a 15 KB body took seconds under
 * ASan). The refusal must stay the same, and come at once. */
static void test_deep_call_groups(void) {
  enum { GROUPS = 40000 };
  hku_buf body = HKU_BUF_INIT;
  for (int i = 0; i < GROUPS; i++) hku_buf_putc(&body, '(');
  hku_buf_put(&body, "x");
  for (int i = 0; i < GROUPS; i++) hku_buf_put(&body, ")(x)");
  hku_buf text = HKU_BUF_INIT;
  hku_buf_printf(&text, "%s", EW("\"y = "));
  /* EW ends with the body's closing text: put the groups before it */
  const char *t = hku_buf_str(&text);
  const char *end = strstr(t, "y = ") + 4;
  hku_buf full = HKU_BUF_INIT;
  hku_buf_putn(&full, t, (size_t)(end - t));
  hku_buf_put(&full, hku_buf_str(&body));
  hku_buf_put(&full, ";\"}\n");
  hkc_file *f = NULL;
  hku_diags d = HKU_DIAGS_INIT;
  CHECK_INT_EQ(parse(hku_buf_str(&full), &f, &d), HK_ESCHEMA);
  CHECK(f == NULL);
  CHECK(d.nerrors >= 1);
  if (d.n) CHECK_CONTAINS(d.v[0].msg, "through an expression");
  hku_diags_free(&d);
  hku_buf_free(&full);
  hku_buf_free(&text);
  hku_buf_free(&body);
  printf("%-22s ok\n", "deep call groups");
}

/* Which for loops' int counters the emitter widens to 64 bits: a plain
 * `for (int NAME = ...;` only. */
static void test_int_counters(void) {
  static const struct {
    const char *code;
    int count;
  } cases[] = {
      {"for (int i = 0; i < n; i++) y[i] = x[i];", 1},
      {"for(int i=0;;) break;", 1},
      {"for (int i = f(a, b); i < n; i++) {}", 1},
      {"for (int i = 0; i < n; i++) for (int j = i; j < n; j++) s += 1;", 2},
      {"for (int i = 0, j = 1; i < n; i++) {}", 0},
      {"for (int *p = a; p < a + n; p++) {}", 0},
      {"for (int i[2] = {0, 0}; i[0] < n; i[0]++) {}", 0},
      {"for (unsigned int i = 0; i < n; i++) {}", 0},
      {"for (int64_t i = 0; i < n; i++) {}", 0},
      {"for (i = 0; i < n; i++) {}", 0},
      {"int i = 0; for (; i < n; i++) {}", 0},
      {"for (int i = a[1], j; i < n; i++) {}", 0},
  };
  for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
    hkc_src s = {(char *)cases[c].code, strlen(cases[c].code), "body", NULL,
                 0};
    size_t *offs = NULL, n = hkc_code_int_counters(&s, &offs);
    CHECK_MSG(n == (size_t)cases[c].count, "'%s': %zu counters, expected %d",
              cases[c].code, n, cases[c].count);
    for (size_t i = 0; i < n && n != (size_t)-1; i++)
      CHECK_MSG(!strncmp(cases[c].code + offs[i], "int ", 4),
                "'%s': offset %zu is not an int", cases[c].code, offs[i]);
    free(offs);
  }
}

int main(void) {
  setvbuf(stdout, NULL, _IOLBF, 0); /* keep the summary if a sanitizer aborts */
  RUN(json_cases);
  RUN(top_cases);
  RUN(kernel_cases);
  RUN(param_cases);
  RUN(refused_cases);
  RUN(kind_cases);
  RUN(body_cases);
  RUN(escape_cases);
  RUN(valid_cases);
  test_nul_byte();
  test_structure();
  test_instances();
  test_stdlib_files();
  test_many_errors();
  test_format();
  test_positions();
  test_codes();
  test_deep_call_groups();
  test_int_counters();
  RUN(huge_cases);
  printf("%d table cases\n", ncases_run);
  CHECK_DONE();
}
