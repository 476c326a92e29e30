"""The stdlib's kernels as functions: hk.add, hk.gelu, hk.sum, hk.softmax...

One function per stdlib kernel name (every instance: ``add`` covers
``add_f32``, ``add_f64`` ...), made at import from the library's own
descriptions: a builtin function (C, vectorcall) over a kernel of a context
holding the stdlib only, with a docstring and signature built from the
kernel file.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Dict, List

from . import _hk

_DTYPES = ("f32 f64 f16 bf16 i8 i16 i32 i64 u8 u16 u32 u64 bool").split()
_SUFFIX = re.compile(r"(_(%s))+$" % "|".join(_DTYPES))


def base_name(name: str) -> str:
    """``add_f32`` -> ``add``; ``cast_f32_f16`` -> ``cast``."""
    return _SUFFIX.sub("", name)


def _signature(name: str, kind: str, params: List[Dict[str, Any]]) -> str:
    ins = [p["name"] for p in params if p["role"] != "out"]
    outs = [p["name"] for p in params if p["role"] == "out"]
    parts = ins + ["%s=None" % o for o in outs]
    kw = []
    if outs and "out" not in outs:
        kw.append("out=None")
    if kind == "reduction":
        kw += ["axis=None", "keepdims=False"]
    elif kind == "rows":
        kw.append("axis=-1")
    if outs:
        kw.append("dtype=None")
    if kw:
        parts += ["*"] + kw
    return "%s(%s)" % (name, ", ".join(parts))


_KIND_NOTES = {
    "elementwise": "Elementwise: the inputs broadcast together (NumPy's "
                   "rules); out has the broadcast shape.",
    "reduction": "Reduction over axis (None: every axis; an int or a tuple), "
                 "keepdims as NumPy's; out has the kept shape. A whole "
                 "reduction returns a NumPy scalar.",
    "rows": "Runs over rows: axis (an int, default -1, the last) is the "
            "row, every other axis a row of its own (axis=None is refused: "
            "reshape to one row for the whole array).",
    "raw": "A raw kernel: every buffer contiguous.",
}


def _doc(name: str, infos: List[Dict[str, Any]]) -> str:
    first = infos[0]
    roles = ", ".join("%s (%s%s)" % (p["name"], p["role"],
                                     ": " + p["doc"] if p.get("doc") else "")
                      for p in first["params"])
    inst = "\n".join("    %s(%s)" % (i["name"], ", ".join(
        "%s: %s" % (p["name"], p["type"]) for p in i["params"]))
        for i in infos)
    return ("%s\n--\n\n%s\n\nParameters, in calling order: %s.\n%s\n\n"
            "Arrays are used in place (zero-copy): NumPy arrays of any "
            "strides, or GPU arrays (__cuda_array_interface__, __dlpack__). "
            "Out arrays not given are allocated; the instance is picked from "
            "the arrays' dtypes (no conversion: dtype= picks the out type "
            "where the inputs do not tell it). Returns the out array(s).\n\n"
            "Instances:\n%s\n" % (_signature(name, first["kind"],
                                             first["params"]),
                                  first["doc"], roles,
                                  _KIND_NOTES.get(first["kind"], ""), inst))


def make_functions(ctx: _hk.Context) -> Dict[str, Callable[..., Any]]:
    """A function for every stdlib kernel name of ctx, by name."""
    groups: Dict[str, List[Dict[str, Any]]] = {}
    for info in ctx.kernels():
        if info["origin"] == "stdlib":
            groups.setdefault(base_name(info["name"]), []).append(info)
    out = {}
    for name, infos in sorted(groups.items()):
        k = _hk.Kernel(ctx, name)
        out[name] = _hk.make_function(k, name, _doc(name, infos))
    return out
