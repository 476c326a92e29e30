#!/usr/bin/env python3
"""doc_examples.py -- the documentation's code examples are compiled and run,
as Rust's doctests are: an example that no longer works fails the suite.

Usage: doc_examples.py SOURCE_DIR HK LIBHK GEN_INCLUDE_DIR CC [SANITIZE]
  HK       the built hk command
  LIBHK    the built shared libhk (examples are linked against it)
  GEN_INCLUDE_DIR  the folder of the generated hk_stdlib.h
  CC, SANITIZE     the compiler and HK_SANITIZE of the build (an
                   instrumented libhk needs an instrumented program)

Documents: README.md, schemas/README.md, plugins/README.md (fenced blocks)
and include/hk.h (the examples in its comments).

What is run, by the block's language:
  ```c     compiled with -std=c11 -Wall -Wextra -Werror against hk.h and the
           built libhk, then run: it must exit 0. A block with main() is a
           program; any other block is a fragment, compiled as the body of
           main() (its #include lines go on top; <hk.h>, <stdio.h> and
           <stdlib.h> are always included). A comment `/* prints TEXT */`
           or `// prints TEXT` on a line says what the program prints: the
           output must be those lines, in order.
  ```json  a whole kernel file (an object with "kind" or "kernels") must
           pass `hk check` silently, and, when a system compiler is there,
           `hk build` (which compiles the generated C: type errors show).
           Anything else must carry a marker.
  ```sh    each line is run by sh in the document's work folder, in document
           order (later blocks use the files earlier ones made), with the
           built hk first on the PATH; each must exit 0. A trailing comment
           `# {...}` or `# prints {...}` is the line's expected output.
  ```console, and ```text blocks whose first line starts with "$ ": a
           transcript. Each "$ COMMAND" is run as above; the lines after it
           are its expected output (stdout and stderr); it must exit 1 when
           that output shows an "error:", else 0.
Other blocks (```text without "$ ", diagrams) are not code.

The document's work folder is a fresh temporary folder holding copies of
plugins/ and schemas/examples/, the relative paths the examples use; the
disk cache (HK_CACHE_DIR) is temporary too and HK_PLUGIN_PATH is unset.

Markers: an HTML comment (invisible on the rendered page) on the line before
the block's opening fence, `<!-- doctest: DIRECTIVE; DIRECTIVE -->`:
  skip (REASON)       not run (an installer, a synopsis, pseudo-code); the
                      reason is required and printed
  json-only (REASON)  ```json that is not a kernel file: it must parse as JSON
  given NAMES         a C fragment uses these, declared before it runs:
                        n    size_t n = 1000
                        x    float x[1000], x[i] = i
                        y    float y[1000], y[i] = 2 i
                        out  float out[1000], zeros
                        ctx  hk_context_t *ctx (no plugin folders),
                             destroyed after the fragment
  then EXPR           a C fragment: EXPR must hold after it ran
  gpu                 a C example for a CUDA device: always compiled, run
                      only where hk_cuda_init() succeeds (else reported as
                      not run, with hk's reason)
include/hk.h: an example is a run of comment lines indented by four spaces
or more (" *     code"), between blank comment lines (" *"); hk.h
examples carry no markers, so each must be a complete fragment or program.

Exits 0 when every example works (some may be reported as skipped), 1 when
one fails, naming it as FILE:LINE.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

DOCS = ["README.md", "schemas/README.md", "plugins/README.md"]
HEADER = "include/hk.h"
TIMEOUT = 60  # seconds for any one command: an example that hangs fails

GIVEN = {
    # name: (declaration, cleanup)
    "n": ("size_t n = 1000;", ""),
    "x": ("float x[1000];\n"
          "for (int doctest_i = 0; doctest_i < 1000; doctest_i++)\n"
          "    x[doctest_i] = (float)doctest_i;", ""),
    "y": ("float y[1000];\n"
          "for (int doctest_i = 0; doctest_i < 1000; doctest_i++)\n"
          "    y[doctest_i] = 2.0f * (float)doctest_i;", ""),
    "out": ("float out[1000] = {0};", ""),
    "ctx": ("hk_context_t *ctx;\n"
            "if (hk_context_create(&ctx, NULL) != HK_OK) {\n"
            "    fprintf(stderr, \"doctest: no context: %s\\n\", hk_last_error());\n"
            "    return 1;\n"
            "}", "hk_context_destroy(ctx);"),
}


class Block:
    def __init__(self, doc, line, lang, text, marker, first=None):
        # line: where the block is reported; first: its first line of code
        self.doc, self.line, self.lang, self.text = doc, line, lang, text
        self.first = first if first is not None else line + 1
        self.skip = self.json_only = None
        self.given, self.then, self.gpu, self.error = [], [], False, None
        # directives are separated by ';' outside parentheses (reasons may
        # hold any text but unbalanced parentheses)
        directives, depth, cur = [], 0, ""
        for ch in marker:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch == ";" and depth == 0:
                directives.append(cur)
                cur = ""
            else:
                cur += ch
        directives.append(cur)
        for d in (s.strip() for s in directives if s.strip()):
            m = re.fullmatch(r"(skip|json-only)\s*\((.+)\)", d)
            if m and m.group(1) == "skip":
                self.skip = m.group(2)
            elif m:
                self.json_only = m.group(2)
            elif d.startswith("given "):
                self.given += d.split()[1:]
            elif d.startswith("then "):
                self.then.append(d[5:].strip())
            elif d == "gpu":
                self.gpu = True
            else:
                self.error = ("unknown doctest directive %r (see "
                              "tests/doc_examples.py)" % d)
        for g in self.given:
            if g not in GIVEN:
                self.error = "'given %s': not one of %s" % (g, " ".join(GIVEN))

    def where(self):
        return "%s:%d" % (self.doc, self.line)


def markdown_blocks(doc, text):
    """Every fenced block, with the marker of the line before its fence."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        m = re.match(r"^\s*```\s*([\w+-]*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, lang = i, m.group(1).lower()
        j = i + 1
        while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
            j += 1
        if j == len(lines):
            raise ValueError("%s:%d: a fence that is never closed" % (doc, start + 1))
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        mm = re.match(r"^\s*<!--\s*doctest:(.*?)-->\s*$", lines[k]) if k >= 0 else None
        blocks.append(Block(doc, start + 1, lang, "\n".join(lines[start + 1:j]) + "\n",
                            mm.group(1) if mm else ""))
        i = j + 1
    return blocks


def header_blocks(doc, text):
    """hk.h's examples: comment lines " *     code" between " *" lines."""
    lines = text.split("\n")
    blocks, i = [], 0
    while i < len(lines):
        if re.match(r"^ \*     ", lines[i]) and i > 0 and lines[i - 1].rstrip() == " *":
            j = i
            while j < len(lines) and re.match(r"^ \*     ", lines[j]):
                j += 1
            if j < len(lines) and lines[j].rstrip() in (" *", " */"):
                code = "\n".join(l[7:] for l in lines[i:j]) + "\n"
                blocks.append(Block(doc, i + 1, "c", code, "", first=i + 1))
            i = j
        else:
            i += 1
    return blocks


class Runner:
    def __init__(self, src, hk, libhk, gen_include, cc, sanitize):
        self.src, self.hk, self.libhk = src, hk, libhk
        self.gen_include, self.cc, self.sanitize = gen_include, cc, sanitize
        self.tmp = tempfile.mkdtemp(prefix="hk-doctest-")
        self.failures, self.passed, self.skipped = 0, 0, []
        bindir = os.path.join(self.tmp, "bin")
        os.mkdir(bindir)
        os.symlink(hk, os.path.join(bindir, "hk"))
        self.env = dict(os.environ)
        self.env.pop("HK_PLUGIN_PATH", None)
        self.env["HK_CACHE_DIR"] = os.path.join(self.tmp, "cache")
        self.env["PATH"] = bindir + os.pathsep + self.env.get("PATH", "")
        self.has_cc = shutil.which(self.env.get("HK_CC", "cc")) is not None
        self.gpu_reason = None  # None: not probed yet; "": a device is there
        self.nc = 0

    def workdir(self, doc):
        """A fresh work folder for one document, with the paths examples use."""
        d = os.path.join(self.tmp, "work-" + re.sub(r"\W", "_", doc))
        os.mkdir(d)
        shutil.copytree(os.path.join(self.src, "plugins"), os.path.join(d, "plugins"))
        shutil.copytree(os.path.join(self.src, "schemas", "examples"),
                        os.path.join(d, "schemas", "examples"))
        # hk refuses plugin files others can write to: a checkout made
        # under umask 002 must not make the examples fail
        for root, dirs, files in os.walk(d):
            for name in dirs + files:
                p = os.path.join(root, name)
                os.chmod(p, os.stat(p).st_mode & ~0o022)
        return d

    def fail(self, b, msg):
        self.failures += 1
        print("FAIL %s (%s): %s" % (b.where(), b.lang, msg.rstrip()))

    def ok(self, b, what):
        self.passed += 1
        print("ok   %s (%s): %s (%.1f s)" % (b.where(), b.lang, what,
                                           time.monotonic() - self.t0))

    def skip(self, b, why):
        self.skipped.append((b, why))
        print("skip %s (%s): %s" % (b.where(), b.lang, why))

    def sh(self, cmd, cwd, merge=False):
        try:
            p = subprocess.run(["sh", "-c", cmd], cwd=cwd, env=self.env,
                               stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT if merge else subprocess.PIPE,
                               timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            return 124, "", "timed out after %d s" % TIMEOUT
        return (p.returncode, p.stdout.decode(errors="replace"),
                "" if merge else p.stderr.decode(errors="replace"))

    # ---- C ------------------------------------------------------------------
    def compile_c(self, code, name, cwd):
        c = os.path.join(cwd, name + ".c")
        exe = os.path.join(cwd, name)
        with open(c, "w") as f:
            f.write(code)
        libdir = os.path.dirname(os.path.abspath(self.libhk))
        cmd = [self.cc, "-std=c11", "-Wall", "-Wextra", "-Werror",
               "-I", os.path.join(self.src, "include"), "-I", self.gen_include]
        if self.sanitize:
            cmd.append("-fsanitize=" + self.sanitize)
        cmd += [c, "-o", exe, os.path.abspath(self.libhk), "-Wl,-rpath," + libdir, "-lm"]
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=TIMEOUT)
        return exe, p.returncode, p.stdout.decode(errors="replace")

    def gpu_probe(self, cwd):
        if self.gpu_reason is None:
            exe, rc, log = self.compile_c(
                "#include <hk.h>\n#include <stdio.h>\n"
                "int main(void) {\n"
                "    if (hk_cuda_init() == HK_OK) return 0;\n"
                "    printf(\"%s\", hk_last_error());\n"
                "    return 1;\n}\n", "gpu_probe", cwd)
            if rc != 0:
                self.gpu_reason = "the GPU probe does not compile: " + log
            else:
                rc, out, _ = self.sh(exe, cwd)
                self.gpu_reason = "" if rc == 0 else (out.strip() or "no CUDA device")
        return self.gpu_reason

    def run_c(self, b, cwd):
        code = b.text
        expected = [m.group(1) if m.group(1) is not None else m.group(2).strip()
                    for m in re.finditer(r"/\*\s*prints\s+(.*?)\s*\*/|//\s*prints\s+(.*)$",
                                         code, re.M)]
        if not re.search(r"\bmain\s*\(", code):
            lines = code.split("\n")
            incs = [l for l in lines if l.lstrip().startswith("#")]
            body = ["" if l.lstrip().startswith("#") else l for l in lines]
            pre = ["#include <hk.h>", "#include <stdio.h>", "#include <stdlib.h>"] + incs
            decl = [GIVEN[g][0] for g in b.given] + ["(void)%s;" % g for g in b.given]
            post = ["if (!(%s)) {\n    fprintf(stderr, \"doctest: 'then %s' does not "
                    "hold\\n\");\n    return 1;\n}" % (e, e.replace('"', '\\"'))
                    for e in b.then]
            post += [GIVEN[g][1] for g in reversed(b.given) if GIVEN[g][1]]
            code = "\n".join(pre) + "\n\nint main(void) {\n" + "\n".join(decl) + \
                "\n{\n#line %d \"%s\"\n" % (b.first, b.doc) + "\n".join(body) + "\n}\n" + "\n".join(post) + \
                "\nreturn 0;\n}\n"
        elif b.given or b.then:
            return self.fail(b, "'given' and 'then' are for fragments, and this block has main()")
        else:
            code = '#line %d "%s"\n' % (b.first, b.doc) + code
        self.nc += 1
        exe, rc, log = self.compile_c(code, "example%d" % self.nc, cwd)
        if rc != 0:
            return self.fail(b, "does not compile:\n" + log + "---- the program:\n" + code)
        if b.gpu:
            reason = self.gpu_probe(cwd)
            if reason:
                return self.skip(b, "compiled; not run: needs a CUDA device (%s)" % reason)
        rc, out, err = self.sh(exe, cwd)
        if rc != 0:
            return self.fail(b, "exits %d:\n%s%s" % (rc, out, err))
        if expected and out.rstrip("\n").split("\n") != expected:
            return self.fail(b, "prints %r, the text says %r" % (out, "\n".join(expected)))
        self.ok(b, "compiled and ran" + (", output as shown" if expected else "")
                + (", then %s" % " && ".join(b.then) if b.then else ""))

    # ---- JSON ---------------------------------------------------------------
    def run_json(self, b, cwd):
        try:
            doc = json.loads(b.text)
        except ValueError as e:
            return self.fail(b, "not JSON: %s" % e)
        if b.json_only:
            return self.ok(b, "valid JSON (%s)" % b.json_only)
        if not (isinstance(doc, dict) and ("kind" in doc or "kernels" in doc)):
            return self.fail(b, "not a kernel file (no \"kind\" or \"kernels\"): mark "
                             "it <!-- doctest: json-only (WHY) --> or skip (WHY)")
        self.nc += 1
        # named after the block, so that hk's PATH:LINE:COL leads back to it
        path = os.path.join(cwd, "%s-block-at-line-%d.json"
                            % (os.path.basename(b.doc), b.line))
        with open(path, "w") as f:
            f.write(b.text)
        rc, out, err = self.sh("hk check '%s'" % path, cwd, merge=True)
        if rc != 0 or out:
            return self.fail(b, "hk check exits %d:\n%s" % (rc, out))
        if not self.has_cc:
            return self.ok(b, "hk check (no system compiler: not built)")
        rc, out, err = self.sh("hk build '%s' -o '%s.so'" % (path, path), cwd, merge=True)
        if rc != 0:
            return self.fail(b, "hk build exits %d:\n%s" % (rc, out))
        self.ok(b, "hk check, hk build")

    # ---- shell --------------------------------------------------------------
    def run_sh(self, b, cwd):
        n = shown = 0
        lines = b.text.split("\n")
        k = 0
        while k < len(lines):
            line, lineno = lines[k], b.line + 1 + k
            while line.endswith("\\") and k + 1 < len(lines):
                k += 1
                line = line[:-1] + lines[k]
            k += 1
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            n += 1
            m = re.search(r"\s#\s*(?:prints\s+)?(\{.*\})\s*$", line)
            rc, out, err = self.sh(line, cwd)
            if rc != 0:
                return self.fail(b, "line %d exits %d: %s\n%s%s" % (lineno, rc, line, out, err))
            shown += 1 if m else 0
            if m and out.rstrip("\n") != m.group(1):
                return self.fail(b, "line %d prints %r, the text says %r: %s"
                                 % (lineno, out.rstrip("\n"), m.group(1), line))
        self.ok(b, "%d command%s ran%s" % (n, "" if n == 1 else "s",
                                           ", %d output%s as shown" % (shown, "" if shown == 1 else "s")
                                           if shown else ""))

    def run_console(self, b, cwd):
        cmds = []
        for line in b.text.rstrip("\n").split("\n"):
            if line.startswith("$ "):
                cmds.append([line[2:], []])
            elif cmds:
                cmds[-1][1].append(line)
            else:
                return self.fail(b, "a transcript must start with '$ COMMAND'")
        for cmd, want in cmds:
            rc, out, _ = self.sh(cmd, cwd, merge=True)
            want_rc = 1 if any("error:" in l for l in want) else 0
            if out.rstrip("\n").split("\n") != ("\n".join(want).rstrip("\n")).split("\n"):
                return self.fail(b, "$ %s\nprints:\n%s\nthe text says:\n%s"
                                 % (cmd, out, "\n".join(want)))
            if rc != want_rc:
                return self.fail(b, "$ %s exits %d, expected %d" % (cmd, rc, want_rc))
        self.ok(b, "%d command%s, output as shown" % (len(cmds), "" if len(cmds) == 1 else "s"))

    def run(self, b, cwd):
        self.t0 = time.monotonic()
        if b.error:
            return self.fail(b, b.error)
        if b.skip:
            return self.skip(b, b.skip)
        lang = b.lang
        if lang == "text" and b.text.startswith("$ "):
            lang = "console"
        if b.json_only and lang != "json":
            return self.fail(b, "json-only is for ```json blocks")
        if lang == "c":
            self.run_c(b, cwd)
        elif lang == "json":
            self.run_json(b, cwd)
        elif lang in ("sh", "shell", "bash"):
            self.run_sh(b, cwd)
        elif lang == "console":
            self.run_console(b, cwd)
        # other blocks (text, diagrams) are not code


def main():
    if len(sys.argv) not in (6, 7):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    src, hk, libhk, gen_include, cc = (os.path.abspath(a) if i < 4 else a
                                       for i, a in enumerate(sys.argv[1:6]))
    r = Runner(src, hk, libhk, gen_include, cc, sys.argv[6] if len(sys.argv) > 6 else "")
    try:
        for doc in DOCS + [HEADER]:
            with open(os.path.join(src, doc), encoding="utf-8") as f:
                text = f.read()
            try:
                blocks = header_blocks(doc, text) if doc == HEADER else markdown_blocks(doc, text)
            except ValueError as e:
                print("FAIL " + str(e))
                r.failures += 1
                continue
            cwd = r.workdir(doc)
            for b in blocks:
                r.run(b, cwd)
    finally:
        shutil.rmtree(r.tmp, ignore_errors=True)
    print("doc examples: %d passed, %d skipped, %d failed"
          % (r.passed, len(r.skipped), r.failures))
    return 1 if r.failures else 0


if __name__ == "__main__":
    sys.exit(main())
