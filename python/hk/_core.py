"""Contexts and kernels: hk.Context, hk.Kernel, hk.list_kernels."""
from __future__ import annotations

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _hk

PathLike = Union[str, "os.PathLike[str]"]


class Context(_hk.Context):
    """A registry of kernels: the stdlib and user kernels.

    ``plugins`` lists plugin folders (their ``*.json`` and ``*.so`` files are
    loaded); ``None`` takes ``HK_PLUGIN_PATH``, ``[]`` none. Kernel files are
    compiled at once by libtcc (tier ``"jit"``), then by the system compiler
    in the background (tier ``"opt"``, cached on disk). A context may be
    shared by any number of Python threads; calls release the GIL.

    >>> ctx = hk.Context(plugins=["plugins/"])
    >>> saxpy = ctx.kernel("saxpy")
    >>> saxpy(2.0, x, y)          # y = 2 x + y, in place
    """

    def __init__(self, plugins: Optional[Sequence[PathLike]] = None, *,
                 cache_dir: Optional[PathLike] = None, tier: str = "auto",
                 cc: Optional[str] = None, cache: bool = True,
                 allow_unsafe_plugins: bool = False,
                 watch: bool = False) -> None:
        flags = ((0 if cache else _hk.NO_CACHE)
                 | (_hk.ALLOW_UNSAFE_PERMISSIONS if allow_unsafe_plugins
                    else 0)
                 | (_hk.WATCH if watch else 0))
        if plugins is not None:
            plugins = [os.fspath(p) for p in plugins]
        super().__init__(plugins,
                         None if cache_dir is None else os.fspath(cache_dir),
                         tier, cc, flags)

    def kernel(self, name: str) -> "Kernel":
        """The kernel registered as ``name`` (``"saxpy"``: every instance,
        ``saxpy_f32``, ``saxpy_f64``, picked by the arrays' dtypes; or one
        instance by its full name)."""
        return Kernel(self, name)

    def list_kernels(self) -> List[Dict[str, Any]]:
        """Every kernel of this context, as ``hk list --json`` prints it."""
        return self.kernels()

    def __enter__(self) -> "Context":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return "<hk.Context%s>" % (" closed" if self.closed else "")


def _names_in(text: str) -> List[str]:
    """The kernel names a kernel file's text declares."""
    doc = json.loads(text)
    if isinstance(doc, dict) and isinstance(doc.get("kernels"), list):
        return [k["name"] for k in doc["kernels"]]
    return [doc["name"]]


class Kernel(_hk.Kernel):
    """A kernel of a context, called like a NumPy function.

    ``k(*args, out=None, axis=None, keepdims=False, dtype=None)``: the in,
    inout and scalar parameters by position (in the kernel file's order),
    then the out ones, or any by name; ``out=`` names the only out parameter
    (a tuple when there are several). Arrays are used in place, never
    copied: NumPy arrays (any strides), objects with the buffer protocol,
    ``__cuda_array_interface__`` or ``__dlpack__`` (GPU arrays run on the
    GPU). Out arrays not given are allocated (NumPy; on the GPU an
    :class:`hk.Array` of hk's pool). The instance is picked
    from the arrays' dtypes (``saxpy_f32`` for float32). Returns the out
    arrays (one, or a tuple), else the inout ones, else None.
    """

    def __init__(self, context: Context, name: str) -> None:
        super().__init__(context, name)

    @classmethod
    def from_json(cls, text: str, *, name: str = "string",
                  context: Optional[Context] = None
                  ) -> Union["Kernel", Tuple["Kernel", ...]]:
        """The kernel(s) of a kernel file held in ``text`` (``name`` stands
        for the file in messages). Errors raise :class:`hk.KernelError`.
        Loaded into ``context``, or into a context of its own."""
        ctx = context if context is not None else Context(plugins=[])
        ctx.load_string(text, name)
        ks = tuple(cls(ctx, n) for n in _names_in(text))
        return ks[0] if len(ks) == 1 else ks

    @classmethod
    def from_file(cls, path: PathLike, *, context: Optional[Context] = None
                  ) -> Union["Kernel", Tuple["Kernel", ...]]:
        """The kernel(s) of the kernel file at ``path``."""
        ctx = context if context is not None else Context(plugins=[])
        ctx.load_file(os.fspath(path))
        with open(path, encoding="utf-8") as f:
            text = f.read()
        ks = tuple(cls(ctx, n) for n in _names_in(text))
        return ks[0] if len(ks) == 1 else ks

    @property
    def doc(self) -> str:
        """The kernel file's one-line description."""
        return self.instances[0]["doc"]

    @property
    def params(self) -> List[Dict[str, Any]]:
        """The parameters (name, type of the first instance, role)."""
        return self.instances[0]["params"]

    def __repr__(self) -> str:
        try:
            names = ", ".join(i["name"] for i in self.instances)
            return "<hk.Kernel %s: %s, tier %s>" % (self.name, names,
                                                     self.tier)
        except Exception:  # a closed context
            return "<hk.Kernel %s (closed context)>" % self.name


def list_kernels(plugins: Optional[Sequence[PathLike]] = None,
                 allow_unsafe_plugins: bool = False) -> List[Dict[str, Any]]:
    """What ``hk list --json`` prints: every kernel (the stdlib and those
    of ``plugins``, else ``HK_PLUGIN_PATH``) with its kind, targets, origin,
    tier, GPU, note, source, doc and parameters. Waits for tier opt first,
    as ``hk list`` does."""
    with Context(plugins, allow_unsafe_plugins=allow_unsafe_plugins) as ctx:
        ctx.wait()
        try:
            _hk.cuda_init()
        except Exception:
            pass
        return ctx.kernels()
