#!/usr/bin/env python3
"""py_bench.py — what `import hk` costs per call, against NumPy, in one run.

Rows (ns per call, the best of several repeats; ratios to NumPy):
  add     hk.add(x, y, out=z) against np.add(x, y, out=z), f32, 100 to 1M
  gelu    hk.gelu(x) against NumPy's expression of the same GELU (tanh form)
  binding the same add through ctypes (hk_call_arrays with descriptors
          built per call, and the flat hk_add_f32), the layer not chosen
  gil     hk.add at 100 elements with the GIL released on every call
The Python overhead of hk.add is its time at 100 elements less the kernel's
(100 x the ns per element of the 1M-element call).

Usage: PYTHONPATH=BUILD/python python3 bench/py_bench.py [--quick] [--json F]
Benchmarks never assert: read the ratios (a loaded machine moves them).
"""
import argparse
import ctypes
import json
import os
import sys
import timeit

import numpy as np

import hk
from hk import _hk


def per_call(stmt, env, budget):
    """Best ns per call of stmt over 5 repeats of about budget seconds."""
    return pair(stmt, None, env, budget)[0]


def pair(stmt_a, stmt_b, env, budget):
    """Best ns per call of each, their repeats interleaved (a loaded
    machine then slows both alike)."""
    ta = timeit.Timer(stmt_a, globals=env)
    tb = timeit.Timer(stmt_b, globals=env) if stmt_b else None
    n, el = 1, 0.0
    while el < budget / 5:
        n *= 2
        el = ta.timeit(n)
    best = [float("inf"), float("inf")]
    for _ in range(5):
        best[0] = min(best[0], ta.timeit(n))
        if tb:
            best[1] = min(best[1], tb.timeit(n))
    return best[0] / n * 1e9, best[1] / n * 1e9


def np_gelu(x):
    return 0.5 * x * (1.0 + np.tanh(np.float32(0.7978845608028654)
                                    * (x + np.float32(0.044715) * x * x * x)))


class Arr(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int),
                ("ndim", ctypes.c_int), ("shape", ctypes.c_int64 * 8),
                ("strides", ctypes.c_int64 * 8), ("base", ctypes.c_void_p),
                ("nbytes", ctypes.c_size_t)]


def ctypes_rows(n, budget):
    """hk.add's job through ctypes: descriptors made from the arrays per
    call (what a ctypes layer must do), and the flat stdlib call."""
    lib = ctypes.CDLL(os.path.join(os.path.dirname(_hk.__file__),
                                   "libhk.so.0")
                      if os.path.exists(os.path.join(
                          os.path.dirname(_hk.__file__), "libhk.so.0"))
                      else "libhk.so.0")
    lib.hk_call_arrays.argtypes = [ctypes.c_void_p, ctypes.POINTER(Arr),
                                   ctypes.c_void_p]
    lib.hk_kernel_find.argtypes = [ctypes.c_void_p, ctypes.c_char_p,
                                   ctypes.POINTER(ctypes.c_void_p)]
    lib.hk_context_create.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                                      ctypes.c_void_p]
    lib.hk_add_f32.argtypes = [ctypes.c_void_p] * 3 + [ctypes.c_size_t]
    ctx, k = ctypes.c_void_p(), ctypes.c_void_p()
    lib.hk_context_create(ctypes.byref(ctx), None)
    lib.hk_kernel_find(ctx, b"add_f32", ctypes.byref(k))
    x = np.ones(n, np.float32)
    y = np.ones(n, np.float32)
    z = np.empty(n, np.float32)

    def via_arrays(x, y, z):
        a = (Arr * 3)()
        for i, v in enumerate((x, y, z)):
            a[i].data = v.ctypes.data
            a[i].dtype = 1
            a[i].ndim = v.ndim
            for d in range(v.ndim):
                a[i].shape[d] = v.shape[d]
                a[i].strides[d] = v.strides[d] // v.itemsize
        if lib.hk_call_arrays(k, a, None):
            raise RuntimeError("hk_call_arrays failed")
        return z

    env = dict(via_arrays=via_arrays, lib=lib, x=x, y=y, z=z, n=n,
               xp=x.ctypes.data, yp=y.ctypes.data, zp=z.ctypes.data)
    return (per_call("via_arrays(x, y, z)", env, budget),
            per_call("lib.hk_add_f32(x.ctypes.data, y.ctypes.data, "
                     "z.ctypes.data, n)", env, budget),
            per_call("lib.hk_add_f32(xp, yp, zp, n)", env, budget))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args()
    budget = 0.05 if args.quick else 0.3
    rows = []

    def row(name, n, hk_ns, np_ns, note=""):
        rows.append(dict(op=name, n=n, hk_ns=hk_ns, numpy_ns=np_ns,
                         ratio=hk_ns / np_ns if np_ns else None, note=note))
        print("%-8s %9d %12.0f %12.0f %7s  %s" % (
            name, n, hk_ns, np_ns,
            "%.2f" % (hk_ns / np_ns) if np_ns else "-", note))

    print("%-8s %9s %12s %12s %7s" % ("op", "n", "hk ns", "numpy ns",
                                      "hk/np"))
    sizes = [100, 1000, 10000, 100000, 1000000]
    add_ns = {}
    for n in sizes:
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        env = dict(hk=hk, np=np, x=x, y=x.copy(), z=np.empty_like(x))
        a, b = pair("hk.add(x, y, out=z)", "np.add(x, y, out=z)", env,
                    budget)
        add_ns[n] = a
        row("add", n, a, b, "out=z, f32")
    for n in sizes[1:]:
        x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
        env = dict(hk=hk, np_gelu=np_gelu, x=x)
        row("gelu", n, *pair("hk.gelu(x)", "np_gelu(x)", env, budget),
            note="allocating, f32")
    per_elem = add_ns[1000000] / 1e6
    over = add_ns[100] - 100 * per_elem
    print("hk.add Python overhead at 100 elements: %.0f ns (%.0f ns in all, "
          "kernel ~%.0f ns)" % (over, add_ns[100], 100 * per_elem))
    x = np.ones(100, np.float32)
    env = dict(hk=hk, x=x, y=x.copy(), z=np.empty_like(x))
    env["set_gil_min"] = _hk.set_gil_min
    old = _hk.set_gil_min(0)
    gil, _ = pair("hk.add(x, y, out=z)", None, env, budget)
    _hk.set_gil_min(old)
    nogil, _ = pair("hk.add(x, y, out=z)", None, env, budget)
    row("gil", 100, gil, nogil, "GIL released every call / kept below %d"
        % old)
    arrays, flat, flat_ptr = ctypes_rows(100, budget)
    row("ctypes", 100, arrays, add_ns[100],
        "hk_call_arrays via ctypes, ratio to the C extension")
    row("ctypes", 100, flat, add_ns[100],
        "hk_add_f32(x.ctypes.data, ...) via ctypes")
    row("ctypes", 100, flat_ptr, add_ns[100],
        "hk_add_f32 via ctypes, pointers prepared")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(rows=rows, overhead_ns=over), f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
