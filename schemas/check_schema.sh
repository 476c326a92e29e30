#!/bin/sh
# check_schema.sh — keeps schemas/ honest: the JSON Schema, the examples and
# the manual against the kernel files and the validator they describe.
#
# Usage: check_schema.sh SOURCE_DIR [HK]
#
# With SOURCE_DIR alone it checks, using Python's jsonschema (Debian package
# python3-jsonschema, run by /usr/bin/python3):
#   - schemas/kernel.schema.json is a valid draft-07 schema;
#   - every stdlib_kernels/*.json and schemas/examples/*.json (but bad_*) is
#     accepted by it;
#   - every schemas/examples/bad_*.json is rejected by it (a file that is not
#     JSON counts as rejected), except those marked "_schema_accepts": true,
#     whose errors only hk check can see: those must be accepted;
#   - the name lists in the schema (keywords, math names, type names, element
#     types) equal those in codegen/ and common/ (lex.c, common/mathfns.h, types.c), and the
#     README lists every math function, macro and constant.
# Given HK, the path of a built hk command, it also checks that:
#   - `hk check` accepts every good example, silently;
#   - every bad_*.json has a block in schemas/README.md that starts with
#     "$ hk check schemas/examples/bad_NAME.json", and `hk check` run from
#     SOURCE_DIR prints exactly the rest of that block and exits 1;
#   - every ```json block of the README that holds a whole kernel file (an
#     object with "kind" or "kernels") passes `hk check` and the schema.
# Exits 0 when everything matches, 1 otherwise, 77 (skipped) when
# python3-jsonschema is not installed.
set -eu

if [ $# -lt 1 ] || [ $# -gt 2 ] || [ ! -d "$1" ]; then
    echo "usage: check_schema.sh SOURCE_DIR [HK]" >&2
    exit 2
fi
if ! /usr/bin/python3 -c 'import jsonschema' 2>/dev/null; then
    echo "SKIPPED: python3-jsonschema not installed"
    exit 77
fi

exec /usr/bin/python3 - "$@" <<'PYEOF'
import glob, json, os, re, subprocess, sys, tempfile
import jsonschema

src = os.path.abspath(sys.argv[1])
hk = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
failures = 0

def fail(msg):
    global failures
    failures += 1
    print("FAIL: " + msg)

def rel(p):
    return os.path.relpath(p, src)

def load_json(path):
    """The parsed file, or None when it is not JSON (a BOM is allowed, as in hk)."""
    try:
        with open(path, encoding="utf-8-sig") as f:
            return json.load(f)
    except ValueError:
        return None

schema_path = os.path.join(src, "schemas", "kernel.schema.json")
schema = load_json(schema_path)
if schema is None:
    print("FAIL: schemas/kernel.schema.json is not JSON")
    sys.exit(1)
try:
    jsonschema.Draft7Validator.check_schema(schema)
except jsonschema.exceptions.SchemaError as e:
    print("FAIL: schemas/kernel.schema.json is not a valid draft-07 schema: %s" % e.message)
    sys.exit(1)
validator = jsonschema.Draft7Validator(schema)

def schema_errors(doc):
    return sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))

def where(e):
    return "/".join(str(p) for p in e.absolute_path) or "(top)"

# ---- Files the schema must accept, and bad ones it must reject -------------
examples = sorted(glob.glob(os.path.join(src, "schemas", "examples", "*.json")))
good = sorted(glob.glob(os.path.join(src, "stdlib_kernels", "*.json")))
good += [p for p in examples if not os.path.basename(p).startswith("bad_")]
bad = [p for p in examples if os.path.basename(p).startswith("bad_")]

for p in good:
    doc = load_json(p)
    if doc is None:
        fail("%s: not valid JSON" % rel(p))
        continue
    errs = schema_errors(doc)
    for e in errs[:5]:
        fail("%s: rejected by the schema at %s: %s" % (rel(p), where(e), e.message))

for p in bad:
    doc = load_json(p)
    if doc is None:
        continue  # not JSON: every JSON tool rejects it
    errs = schema_errors(doc)
    if isinstance(doc, dict) and doc.get("_schema_accepts") is True:
        for e in errs[:5]:
            fail("%s is marked \"_schema_accepts\" but the schema rejects it at %s: %s"
                 % (rel(p), where(e), e.message))
    elif not errs:
        fail("%s: the schema accepts it (mark it \"_schema_accepts\": true if only "
             "hk check can see what is wrong)" % rel(p))

# ---- The schema's name lists against the validator's sources ---------------
def read(path):
    with open(os.path.join(src, path), encoding="utf-8") as f:
        return f.read()

def c_block(text, name):
    """The #define NAME(X) ... macro body, up to the first blank line."""
    start = text.index("#define " + name)
    end = text.find("\n\n", start)
    return text[start:end if end >= 0 else len(text)]

def c_array(text, name):
    start = text.index(name)
    return re.findall(r'"([^"]*)"', text[start:text.index("};", start)])

mathfns, lex = read("common/mathfns.h"), read("codegen/lex.c")
fns = re.findall(r"X\((\w+),\s*\w+\)", c_block(mathfns, "HKC_MATH_FUNCTIONS"))
expected = {
    "reserved names": {"i", "n", "acc", "a", "b"},
    "C keywords": set(c_array(lex, "c_keywords[]")),
    "C++ keywords": set(c_array(lex, "cxx_keywords[]")),
    "math names": set(fns) | {f + "f" for f in fns}
                  | set(re.findall(r"X\((\w+)\)", c_block(mathfns, "HKC_MATH_MACROS")))
                  | set(re.findall(r"X\((\w+)\)", c_block(mathfns, "HKC_MATH_CONSTANTS"))),
    "type names": set(re.findall(r"X\((\w+)\)", c_block(mathfns, "HKC_TYPE_NAMES"))),
}
dtypes = set(re.findall(r'\{"(\w+)", \d+\}', read("codegen/types.c"))) - {"invalid"}

def walk(v):
    yield v
    if isinstance(v, dict):
        for x in v.values():
            yield from walk(x)
    elif isinstance(v, list):
        for x in v:
            yield from walk(x)

refused = [frozenset(v["not"]["enum"]) for v in walk(schema)
           if isinstance(v, dict) and isinstance(v.get("not"), dict) and "enum" in v["not"]]
for what, names in expected.items():
    if not names:
        fail("found no %s in codegen/ (has the source moved?)" % what)
    elif frozenset(names) not in refused:
        near = max(refused, key=lambda s: len(s & names), default=frozenset())
        fail("the schema's %s differ from codegen/: missing %s, extra %s"
             % (what, sorted(names - near) or "none", sorted(near - names) or "none"))
readme = read("schemas/README.md")
for name in sorted(expected["math names"] - {f + "f" for f in fns}):
    if not re.search(r"\b%s\b" % name, readme):
        fail("schemas/README.md does not list %s, which common/mathfns.h allows" % name)
schema_dtypes = set(schema["definitions"]["dtype"]["enum"])
if schema_dtypes != dtypes:
    fail("the schema's element types %s differ from codegen/types.c %s"
         % (sorted(schema_dtypes), sorted(dtypes)))

# ---- hk check on the examples and the README ------------------------------
def hk_check(path):
    r = subprocess.run([hk, "check", path], cwd=src, stdout=subprocess.PIPE,
                       stderr=subprocess.STDOUT, universal_newlines=True)
    return r.returncode, r.stdout

if hk is None:
    print("note: no HK given: hk check on the examples and the README skipped")
else:
    for p in good:
        if p in examples:
            rc, out = hk_check(rel(p))
            if rc != 0 or out:
                fail("hk check %s: exit %d, expected 0 and no output:\n%s" % (rel(p), rc, out))

    # (language, text, line) of each fenced block
    blocks = [(m.group(1), m.group(2), readme.count("\n", 0, m.start()) + 1)
              for m in re.finditer(r"^```([a-z]*)\n(.*?)^```", readme, re.M | re.S)]
    shown = {}
    for lang, body, line in blocks:
        lines = body.splitlines()
        m = re.match(r"\$ hk check (schemas/examples/bad_\w+\.json)$", lines[0]) if lines else None
        if m:
            shown[m.group(1)] = "\n".join(lines[1:]) + "\n"
    for p in bad:
        r = rel(p)
        rc, out = hk_check(r)
        if r not in shown:
            fail("schemas/README.md shows no '$ hk check %s' block" % r)
        elif rc != 1 or out != shown[r]:
            fail("hk check %s: exit %d, and the output differs from the README's block:\n"
                 "--- README\n%s--- hk check\n%s" % (r, rc, shown[r], out))
    for r in sorted(set(shown) - {rel(p) for p in bad}):
        fail("schemas/README.md shows '$ hk check %s', which does not exist" % r)

    readme_files = 0
    with tempfile.TemporaryDirectory() as tmp:
        for lang, body, line in blocks:
            if lang != "json":
                continue
            try:
                doc = json.loads(body)
            except ValueError:
                continue  # a fragment, not a kernel file
            if not (isinstance(doc, dict) and ("kind" in doc or "kernels" in doc)):
                continue
            path = os.path.join(tmp, "README.md_line_%d.json" % line)
            with open(path, "w", encoding="utf-8") as f:
                f.write(body)
            rc, out = hk_check(path)
            readme_files += 1
            if rc != 0 or out:
                fail("the json block at schemas/README.md line %d fails hk check:\n%s" % (line, out))
            for e in schema_errors(doc)[:3]:
                fail("the json block at schemas/README.md line %d is rejected by the schema at %s: %s"
                     % (line, where(e), e.message))

checked = "%d good and %d bad files" % (len(good), len(bad))
if failures:
    print("check_schema: %d problem(s) (%s)" % (failures, checked))
    sys.exit(1)
if hk:
    checked += ", %d kernel files of the README; hk check agrees" % readme_files
print("check_schema: ok (%s)" % checked)
PYEOF
