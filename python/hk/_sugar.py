"""hk.ElementwiseKernel and hk.ReductionKernel: CuPy's signatures, as sugar
that writes a kernel file and loads it (as hk.Kernel.from_json)."""
from __future__ import annotations

import json
import re
from typing import Dict, List, Optional, Sequence

from ._core import Context, Kernel
from ._errors import KernelError

# CuPy's (NumPy's) type names and C's, to hk's
_TYPES = {
    "float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16",
    "float": "f32", "double": "f64", "half": "f16",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "bool", "int": "i32", "long": "i64",
}
_HK = set("f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool".split())


def _arg_error(origin: str, arg: str, given: Optional[str], offset: int,
               message: str) -> KernelError:
    """A :class:`KernelError` at character ``offset`` of the caller's
    argument ``arg`` (its text ``given``; None: no text to show), as
    ``<origin>:LINE:COL: error: ARG: MESSAGE``, then the line with a caret
    under the column."""
    text = given or ""
    r, c = _where(text, min(max(offset, 0), len(text)))
    return KernelError(_arg_lines(origin, arg, text, r, c, message,
                                  given is not None) + "\n")


def _arg_lines(origin: str, arg: str, given: str, r: int, c: int,
               message: str, show: bool = True) -> str:
    """``<origin>:R:C: error: ARG: MESSAGE``, then (show) line R of
    ``given`` and a caret under column C (the line's tabs kept, so that it
    lines up)."""
    head = "<%s>:%d:%d: error: %s: %s" % (origin, r, c, arg, message)
    if not show:
        return head
    lines = given.splitlines()
    src = lines[r - 1] if 0 < r <= len(lines) else ""
    src = src.replace("\0", "\u2400")  # a NUL, shown
    caret = "".join(ch if ch == "\t" else " " for ch in src[:c - 1]) + "^"
    return "%s\n    %s\n    %s" % (head, src, caret)


def _params(text: str, role: str, where: str,
            origin: str) -> List[Dict[str, str]]:
    """``"float32 x, T y, scalar T alpha"`` -> hk params; a bad one is a
    :class:`KernelError` located in ``text`` (the argument ``where``)."""
    out = []
    at = 0
    for piece in text.split(","):
        start, at = at, at + len(piece) + 1
        words = [(m.group(), start + m.start())
                 for m in re.finditer(r"\S+", piece)]
        if not words:
            continue
        r = role
        if words[0][0] == "scalar" and role == "in":
            r, words = "scalar", words[1:]
        if len(words) != 2:
            raise _arg_error(origin, where, text, start + len(piece) -
                             len(piece.lstrip()),
                             "%r: expected 'TYPE NAME' (or 'scalar TYPE "
                             "NAME' among in_params)" % piece.strip())
        (t, t_at), (name, _) = words
        t = _TYPES.get(t, t)
        if t not in _HK and not re.fullmatch(r"[A-Z]", t):
            raise _arg_error(origin, where, text, t_at,
                             "unknown type %r (float32, float64, int32 ..., "
                             "hk's f32 ..., or a placeholder letter)"
                             % words[0][0])
        out.append({"name": name, "type": t, "role": r})
    return out


def _type_name(t: object) -> str:
    """A type as the sugar's strings: "float32", "f32", np.float32,
    np.dtype("float32") -> "float32" (its name as written otherwise)."""
    if isinstance(t, str):
        return t
    try:  # a NumPy type or dtype, without importing NumPy for strings
        import numpy as np
        return np.dtype(t).name  # type: ignore[arg-type]
    except (ImportError, TypeError):
        return str(t)


def _types(params: List[Dict[str, str]],
           types: Optional[Dict[str, Sequence[str]]],
           origin: str) -> Dict[str, List[str]]:
    letters = sorted({p["type"] for p in params
                      if re.fullmatch(r"[A-Z]", p["type"])})
    given = dict(types or {})
    for L in given:
        if L not in letters:
            raise _arg_error(origin, "types", repr(types),
                             max(repr(types).find(repr(L)), 0),
                             "%r is no placeholder of these params (%s)"
                             % (L, ", ".join(letters) or "none"))
    out = {}
    for L in letters:
        ts = given.get(L, ("f32", "f64"))
        if isinstance(ts, str) or not isinstance(ts, Sequence):
            ts = [ts]  # one type: "float32", np.float32
        out[L] = [_TYPES.get(_type_name(t), _type_name(t)) for t in ts]
    return out


def _json_prefix(token: str) -> str:
    """The characters a JSON string token's text up to a point stands for
    (``token`` starts after its opening quote; a cut escape is dropped)."""
    out, i = [], 0
    while i < len(token):
        c = token[i]
        if c != "\\":
            out.append(c)
            i += 1
            continue
        esc = token[i:i + 6] if token[i + 1:i + 2] == "u" else token[i:i + 2]
        if re.fullmatch(r"\\u[dD][89abAB]..", esc) and \
                re.fullmatch(r"\\u[dD][c-fC-F]..", token[i + 6:i + 12]):
            esc = token[i:i + 12]  # a surrogate pair: one character
        try:
            out.append(json.loads('"%s"' % esc))
        except ValueError:
            break
        i += len(esc)
    return "".join(out)


def _where(text: str, offset: int) -> tuple:
    """(line, column), 1-based, of character ``offset`` of ``text``."""
    before = text[:offset]
    return before.count("\n") + 1, offset - (before.rfind("\n") + 1) + 1


def _located(e: KernelError, text: str, origin: str, args: dict,
             shift: dict, params: list) -> KernelError:  # noqa: C901
    """``e``, an error of the kernel file ``text`` that the sugar made,
    located in the caller's own arguments instead: ``args`` maps a field of
    the file (body, map ...) to (the argument's name, its text), ``shift``
    a field to where its value starts in that text (None: the value is not
    the text as given, so no column), ``params`` each parameter's
    argument. Lines of other fields keep the file's position."""
    lines = text.splitlines()
    out = []
    for loc in e.errors:
        field = loc.field
        m = re.match(r"params\[(\d+)\]", field)
        arg = None
        # a field's own part (types.T[0]): located at its argument's start
        key = field if field in args else re.sub(r"[.\[].*", "", field)
        if key in args:
            arg, given = args[key]
            at = shift.get(field) if key == field else None
            if at is not None and 0 < loc.line <= len(lines):
                ln = lines[loc.line - 1]
                start = ln.find('": "')
                if 0 <= start < loc.column - 1:
                    k = len(_json_prefix(ln[start + 4:loc.column - 1]))
                    if isinstance(at, list):  # a rewritten value's map
                        at = at[k] if k < len(at) else (at[-1] + 1 if at else 0)
                    else:
                        at += k
                    r, c = _where(given, min(at, len(given)))
                else:
                    r, c = 1, 1
            else:
                r, c = 1, 1
        elif m and int(m.group(1)) < len(params):
            arg, given = params[int(m.group(1))]
            name = json.loads(text)["params"][int(m.group(1))]["name"]
            hit = re.search(r"\b%s\b" % re.escape(name), given)
            r, c = _where(given, hit.start() if hit else 0)
        if arg is None:
            out.append("%s:%d:%d: error: %s%s%s" % (
                loc.file, loc.line, loc.column, field, ": " if field else "",
                loc.message))
            continue
        out.append(_arg_lines(origin, arg, given, r, c, loc.message))
    err = KernelError("\n".join(out) + "\n", e.code)
    return err


def _load(desc: dict, context: Optional[Context], origin: str,
          args: dict, shift: dict, params: list,
          types: Optional[dict] = None) -> Kernel:
    # a NUL ends a C string: refused here, where the argument is known
    for arg, given in list(args.values()) + params:
        if given and "\0" in given:
            raise _arg_error(origin, arg, given, given.index("\0"),
                             "a NUL character (\\0) is not allowed")
    # the name (a stdlib kernel's: "relu"), the types: the caller's too
    args = dict(args, name=("name", desc["name"]))
    shift = dict(shift, name=0)
    if types:
        args["types"] = ("types", repr(types))
    # one field per line: located errors name a line of their own
    text = json.dumps(desc, indent=1)
    ctx = context if context is not None else Context(plugins=[])
    # a name the sugar made in this context before: the same definition is
    # the same kernel; another one would replace it under the handles
    # made before (hk reloads a source of the same name), so it is refused
    made = getattr(ctx, "_hk_sugar_made", None)
    if made is None:
        made = {}
        try:
            ctx._hk_sugar_made = made  # type: ignore[attr-defined]
        except AttributeError:
            pass
    if desc["name"] in made:
        if made[desc["name"]] == (origin, text):
            return Kernel(ctx, desc["name"])
        raise _arg_error(origin, "name", desc["name"], 0,
                         "%r is already the name of another kernel made in "
                         "this context (%s); give this one another name, or "
                         "a context of its own (context=None)"
                         % (desc["name"], made[desc["name"]][0]))
    # the kernel is looked up by this name: a stdlib instance of that name
    # (add_f32) would be found instead of the instances made here
    # (add_f32_f32 ...); hk itself refuses the stdlib's kernel names (add)
    if any(i["origin"] == "stdlib" and i["name"] == desc["name"]
           for i in ctx.kernels()):
        raise KernelError("<%s>:1:1: error: name: %r is the name of a "
                          "stdlib kernel; choose another name\n"
                          % (origin, desc["name"]))
    try:
        ctx.load_string(text, "%s %s" % (desc["kind"], desc["name"]))
    except KernelError as e:
        raise _located(e, text, origin, args, shift, params) from None
    made[desc["name"]] = (origin, text)
    return Kernel(ctx, desc["name"])


_QUALIFIERS = ("__device__", "__host__", "__forceinline__", "inline",
               "static", "__inline__")


def _skip_space(text: str, i: int) -> int:
    """Past white space and comments from ``i``."""
    while i < len(text):
        if text[i].isspace():
            i += 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = len(text) if j < 0 else j + 1
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            i = len(text) if j < 0 else j + 2
        else:
            break
    return i


def _close_brace(text: str, i: int) -> int:
    """The index of the '}' that closes the '{' at ``i`` (strings, chars
    and comments skipped), or -1."""
    depth = 0
    while i < len(text):
        c = text[i]
        if text.startswith("//", i) or text.startswith("/*", i):
            j = _skip_space(text, i)
            i = j if j > i else i + 1
            continue
        if c in "\"'":
            j = i + 1
            while j < len(text) and text[j] != c:
                j += 2 if text[j] == "\\" else 1
            i = j + 1
            continue
        depth += c == "{"
        depth -= c == "}"
        if depth == 0:
            return i
        i += 1
    return -1


def _preamble(text: str, origin: str, args: dict, shift: dict,
              desc: dict) -> None:
    """CuPy's ``preamble``, as the kernel file's helpers and consts: each
    function definition (``__device__`` and such qualifiers dropped) a
    helper, each ``#define NAME INTEGER`` a const; anything else is a
    located :class:`KernelError`. Errors in them are located in the
    preamble (``args``/``shift`` of ``_load``)."""
    helpers, consts = [], {}
    head = re.compile(r"((?:[A-Za-z_]\w*[\s*]+)+?)([A-Za-z_]\w*)\s*"
                      r"\(([^()]*)\)\s*\{")
    i = _skip_space(text, 0)
    while i < len(text):
        if text.startswith("#", i):
            end = text.find("\n", i)
            end = len(text) if end < 0 else end
            m = re.fullmatch(r"#\s*define\s+([A-Za-z_]\w*)\s+"
                             r"(-?(?:0[xX][0-9a-fA-F]+|\d+))\s*",
                             text[i:end])
            if not m:
                raise _arg_error(origin, "preamble", text, i,
                                 "only '#define NAME INTEGER' (a const) "
                                 "may stand here")
            consts[m.group(1)] = int(m.group(2), 0)
            args["consts." + m.group(1)] = ("preamble", text)
            i = _skip_space(text, end)
            continue
        m = head.match(text, i)
        close = _close_brace(text, m.end() - 1) if m else -1
        if not m or close < 0:
            raise _arg_error(origin, "preamble", text, i,
                             "expected a function definition or '#define "
                             "NAME INTEGER' (CuPy's templates, structs and "
                             "other declarations are not supported here)")
        returns = " ".join(w for w in m.group(1).split()
                           if w not in _QUALIFIERS)
        k = len(helpers)
        helpers.append({"name": m.group(2), "returns": returns or "void",
                        "params": m.group(3).strip(),
                        "body": text[m.end():close]})
        for f, at in (("body", m.end()), ("params", m.start(3)),
                      ("name", m.start(2)), ("returns", m.start(1))):
            args["helpers[%d].%s" % (k, f)] = ("preamble", text)
            shift["helpers[%d].%s" % (k, f)] = at
        i = _skip_space(text, close + 1)
    if helpers:
        desc["helpers"] = helpers
    if consts:
        desc["consts"] = consts
        args["consts"] = ("preamble", text)


def _check_out_reads(params: list, operation: str, origin: str) -> None:
    """An out param (not inout) that the operation uses before it assigns
    it (``y += x``, ``++y``, ``z = y``), as CuPy's refer to the array
    passed in, where hk's start at 0: a located :class:`KernelError`
    (the answer would silently differ from CuPy's)."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/",
                  lambda m: " " * len(m.group()), operation, flags=re.S)
    for p in params:
        if p["role"] != "out":
            continue
        use = re.compile(r"(?<![\w.>])%s\b" % re.escape(p["name"]))
        m = use.search(code)
        if m is None:
            continue
        after = code[m.end():].lstrip()
        before = code[:m.start()].rstrip()
        if (after.startswith("=") and not after.startswith("==")
                and not before.endswith(("++", "--"))):
            # its first use assigns it: unless the value assigned reads
            # it too (``y = y + x``)
            start = code.index("=", m.end()) + 1
            end = code.find(";", start)
            m = use.search(code, start, end if end >= 0 else len(code))
            if m is None:
                continue
        raise _arg_error(origin, "operation", operation, m.start(),
                         "reads out param '%s' before assigning it: here "
                         "an out param starts at 0 (CuPy's is the array "
                         "passed in); to use that array, list '%s' among "
                         "in_params too (inout)" % (p["name"], p["name"]))


def _param_args(ins: list, outs: list, params: list, in_params: str,
                out_params: str) -> list:
    """Each parameter's argument: (its name, its text)."""
    out_names = {p["name"] for p in outs}
    in_names = {p["name"] for p in ins}
    return [("in_params", in_params) if p["name"] in in_names and
            (p["role"] != "out" or p["name"] not in out_names)
            else ("out_params", out_params) for p in params]


def ElementwiseKernel(in_params: str, out_params: str, operation: str,
                      name: str = "kernel", *,
                      types: Optional[Dict[str, Sequence[str]]] = None,
                      preamble: str = "", doc: str = "",
                      context: Optional[Context] = None) -> Kernel:
    """An elementwise kernel, as CuPy's ``ElementwiseKernel``:

    >>> k = hk.ElementwiseKernel("T x, T y", "T z", "z = x * x + y",
    ...                          "squared_sum")
    >>> z = k(x, y)

    ``in_params``/``out_params``: ``"TYPE NAME, ..."`` with NumPy's type
    names (float32 ...), hk's (f32 ...) or a placeholder letter (``T``:
    f32 and f64 unless ``types={"T": [...]}`` says otherwise); write
    ``scalar TYPE NAME`` among the in params for a value passed by value.
    ``preamble``: CuPy's, as function definitions (their ``__device__``
    and ``inline`` dropped: the kernel's helpers, schemas/README.md 6.6)
    and ``#define NAME INTEGER`` lines (its consts); errors in them are
    located in it (``field`` ``"preamble"``).
    An out param also listed as an in param is inout; an out param alone
    starts at 0 in ``operation`` (CuPy's refers to the array passed in),
    so using one before assigning it (``y += x``) is refused: to
    accumulate, make ``y`` inout. ``operation`` is the
    body: C statements over the parameters' elements at index ``i`` (a
    ``size_t``, as ``n``: cast it before mixing it with signed integers).
    Raises :class:`hk.KernelError` for a bad body, located in the
    arguments: ``field`` is ``"operation"`` (or ``"in_params"`` ...),
    ``line`` and ``column`` are in that string, and the message shows its
    line with a caret."""
    origin = "ElementwiseKernel %s" % name
    ins = _params(in_params, "in", "in_params", origin)
    outs = _params(out_params, "out", "out_params", origin)
    if not outs:
        raise _arg_error(origin, "out_params", out_params, 0,
                         "no out param: an elementwise kernel writes at "
                         "least one ('T z'; one also among in_params is "
                         "inout)")
    names = {p["name"] for p in ins}
    params = ins + [p for p in outs if p["name"] not in names]
    for p in params:
        if p["name"] in {o["name"] for o in outs} and p in ins:
            p["role"] = "inout"
    _check_out_reads(params, operation, origin)
    body = operation.strip()
    if body and not body.endswith((";", "}")):
        # CuPy's operations may leave out the last ';' (on a line of its
        # own: the last line may end in a // comment)
        body += "\n;" if "//" in body.splitlines()[-1] else ";"
    desc = {"schema_version": 1, "name": name, "doc": doc,
            "kind": "elementwise", "params": params, "body": body}
    t = _types(params, types, origin)
    if t:
        desc["types"] = t
    lead = len(operation) - len(operation.lstrip())
    args, shift = {"body": ("operation", operation)}, {"body": lead}
    _preamble(preamble, origin, args, shift, desc)
    return _load(desc, context, origin, args, shift,
                 _param_args(ins, outs, params, in_params, out_params),
                 types)


def ReductionKernel(in_params: str, out_params: str, map_expr: str,
                    reduce_expr: str, post_map_expr: str = "",
                    identity: Optional[str] = None,
                    name: str = "reduce_kernel",
                    reduce_type: Optional[str] = None, *,
                    types: Optional[Dict[str, Sequence[str]]] = None,
                    preamble: str = "", doc: str = "",
                    context: Optional[Context] = None) -> Kernel:
    """A reduction kernel, as CuPy's ``ReductionKernel``:

    >>> l2 = hk.ReductionKernel("T x", "T y", "x * x", "a + b",
    ...                         "y = sqrt(a)", "0", "l2norm")
    >>> l2(x, axis=-1)

    ``map_expr``: the value of element ``i``; ``reduce_expr``: how two
    values ``a`` and ``b`` combine (associative); ``identity``: the neutral
    value; ``post_map_expr``: what is stored, CuPy's ``"y = f(a)"`` or an
    hk expression over ``acc`` and ``n`` (default: the reduced value).
    ``reduce_type``: the type values are reduced in (default: the out
    param's), the kernel file's ``acc`` (``reduce_type="float64"`` sums
    float32 in float64, as in CuPy). Errors are located in the arguments,
    as ElementwiseKernel's (``field``: ``"map_expr"``, ``"reduce_expr"``
    ...)."""
    origin = "ReductionKernel %s" % name
    if isinstance(identity, (int, float)) and not isinstance(identity, bool):
        identity = repr(identity)  # CuPy's identity may be a number
    if reduce_type is not None:
        reduce_type = _type_name(reduce_type)
    if identity is None:
        raise _arg_error(origin, "identity", None, 0,
                         "a reduction needs its neutral value ('0' for a "
                         "sum)")
    ins = _params(in_params, "in", "in_params", origin)
    outs = _params(out_params, "out", "out_params", origin)
    if len(outs) != 1:
        comma = re.search(r",\s*", out_params) if len(outs) > 1 else None
        second = comma.end() if comma else 0
        raise _arg_error(origin, "out_params", out_params, second,
                         "a reduction has exactly one out param (%d given)"
                         % len(outs))
    acc = _TYPES.get(reduce_type, reduce_type) if reduce_type else None
    if acc is not None and acc not in _HK and not re.fullmatch(r"[A-Z]", acc):
        raise _arg_error(origin, "reduce_type", reduce_type, 0,
                         "unknown type %r (float32, float64, int64 ..., "
                         "hk's f64 ..., or a placeholder letter)"
                         % reduce_type)
    params = ins + outs
    desc = {"schema_version": 1, "name": name, "doc": doc,
            "kind": "reduction", "params": params, "map": map_expr,
            "combine": reduce_expr, "identity": identity}
    if acc is not None and acc != outs[0]["type"]:
        desc["acc"] = acc
    post = post_map_expr.strip().rstrip(";").strip()
    lead = len(post_map_expr) - len(post_map_expr.lstrip())
    m = re.fullmatch(r"(\w+)\s*=\s*(.*)", post, re.S)
    # where each character of the finalize stands in post_map_expr
    fin: Optional[List[int]] = list(range(lead, lead + len(post)))
    if not (m and m.group(1) == outs[0]["name"]):
        semi = post.find(";")
        a = re.search(r"\ba\b", post)
        if semi >= 0:
            raise _arg_error(origin, "post_map_expr", post_map_expr,
                             lead + semi,
                             "one expression: CuPy's '%s = EXPR' or an "
                             "expression over acc and n (statements, "
                             "temporaries, are not supported)"
                             % outs[0]["name"])
        if a:
            raise _arg_error(origin, "post_map_expr", post_map_expr,
                             lead + a.start(),
                             "'a' is the reduced value in CuPy's form "
                             "'%s = f(a)' only; write that, or an "
                             "expression over acc (the reduced value) and n"
                             % outs[0]["name"])
    if m and m.group(1) == outs[0]["name"]:
        expr, base, post, fin = m.group(2), lead + m.start(2), "", []
        at = 0
        for a in re.finditer(r"\ba\b", expr):
            post += expr[at:a.start()] + "acc"
            fin += list(range(base + at, base + a.start())) + [base + a.start()] * 3
            at = a.end()
        post += expr[at:]
        fin += list(range(base + at, base + len(expr)))
    if post and post != "acc":
        desc["finalize"] = post
    t = _types(params, types, origin)
    if t:
        desc["types"] = t
    args = {"map": ("map_expr", map_expr),
            "combine": ("reduce_expr", reduce_expr),
            "identity": ("identity", identity),
            "finalize": ("post_map_expr", post_map_expr),
            "acc": ("reduce_type", reduce_type or "")}
    shift = {"map": 0, "combine": 0, "identity": 0, "finalize": fin}
    _preamble(preamble, origin, args, shift, desc)
    return _load(desc, context, origin, args, shift,
                 _param_args(ins, outs, params, in_params, out_params),
                 types)
