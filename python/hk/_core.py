"""Contexts and kernels: hk.Context, hk.Kernel, hk.list_kernels."""
from __future__ import annotations

import os
import warnings
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

from . import _errors, _hk
from ._stdlib import base_name

PathLike = Union[str, "os.PathLike[str]"]
Plugins = Union[PathLike, Sequence[PathLike]]


def _folders(plugins: Plugins) -> List[str]:
    """plugins as a list of folders: one str or os.PathLike is one folder
    (not, as a sequence, one folder per character)."""
    if isinstance(plugins, (str, bytes, os.PathLike)):
        plugins = [plugins]
    return [os.fsdecode(p) for p in plugins]


class Context(_hk.Context):
    """A registry of kernels: the stdlib and user kernels.

    ``plugins`` lists plugin folders (their ``*.json`` and ``*.so`` files are
    loaded), or names one (a str or os.PathLike); ``None`` takes
    ``HK_PLUGIN_PATH``, ``[]`` none. Kernel files are
    compiled at once by libtcc (tier ``"jit"``), then by the system compiler
    in the background (tier ``"opt"``, cached on disk). A context may be
    shared by any number of Python threads; calls release the GIL.

    >>> ctx = hk.Context(plugins=["plugins/"])
    >>> saxpy = ctx.kernel("saxpy")
    >>> saxpy(2.0, x, y)          # y = 2 x + y, in place
    """

    def __init__(self, plugins: Optional[Plugins] = None, *,
                 cache_dir: Optional[PathLike] = None, tier: str = "auto",
                 cc: Optional[str] = None, cache: bool = True,
                 allow_unsafe_plugins: bool = False,
                 watch: bool = False) -> None:
        flags = ((0 if cache else _hk.NO_CACHE)
                 | (_hk.ALLOW_UNSAFE_PERMISSIONS if allow_unsafe_plugins
                    else 0)
                 | (_hk.WATCH if watch else 0))
        if plugins is not None:
            plugins = _folders(plugins)
        super().__init__(plugins,
                         None if cache_dir is None else os.fspath(cache_dir),
                         tier, cc, flags)
        problems = self.problems
        if problems:  # the others loaded: a warning, not an exception
            warnings.warn("hk.Context: plugins that did not load (also in "
                          "Context.problems):\n" + problems.rstrip("\n"),
                          _errors.PluginWarning, stacklevel=2)

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


def _names_from(ctx: Context, source: str) -> List[str]:
    """The names of the kernels libhk loaded from source (a path, or
    ``<name>`` for a string), in name order. Asked of libhk, which parsed
    the file, rather than read again here: libhk takes what Python's json
    may not (a UTF-8 BOM, a prebuilt .so). libhk knows instances
    (``saxpy_f32``, ``saxpy_f64``): those sharing a name less their type
    suffixes are one kernel (``saxpy``); an instance alone keeps its whole
    name (a kernel named ``gelu_bf16``, or of one type: either calls the
    same)."""
    groups: Dict[str, List[str]] = {}
    for info in ctx.kernels():
        if info["origin"] != "stdlib" and info["source"] == source:
            groups.setdefault(base_name(info["name"]), []).append(
                info["name"])
    return sorted(base if len(inst) > 1 else inst[0]
                  for base, inst in groups.items())


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
        try:
            super().__init__(context, name)
        except _errors.NotFoundError as e:
            problems = getattr(context, "problems", "")
            if not problems:
                raise
            # the kernel may be one the failed plugins define
            raise _errors.NotFoundError(
                "%s; plugins of this context that did not load may define "
                "it:\n%s" % (e.message, problems.rstrip("\n")),
                e.code) from None

    @classmethod
    def from_json(cls, text: str, *, name: str = "string",
                  context: Optional[Context] = None
                  ) -> Union["Kernel", Tuple["Kernel", ...]]:
        """The kernel(s) of a kernel file held in ``text`` (``name`` stands
        for the file in messages; several kernels come in name order).
        Errors raise :class:`hk.KernelError`. Loaded into ``context``, or
        into a context of its own."""
        ctx = context if context is not None else Context(plugins=[])
        ctx.load_string(text, name)
        ks = tuple(cls(ctx, n) for n in _names_from(ctx, "<%s>" % name))
        return ks[0] if len(ks) == 1 else ks

    @classmethod
    def from_file(cls, path: PathLike, *, context: Optional[Context] = None
                  ) -> Union["Kernel", Tuple["Kernel", ...]]:
        """The kernel(s) of the kernel file (``.json``) or prebuilt plugin
        (``.so``, made by ``hk build``) at ``path``; several in name
        order."""
        ctx = context if context is not None else Context(plugins=[])
        path = os.fsdecode(path)
        ctx.load_file(path)
        ks = tuple(cls(ctx, n) for n in _names_from(ctx, path))
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


def list_kernels(plugins: Optional[Plugins] = None,
                 allow_unsafe_plugins: bool = False) -> List[Dict[str, Any]]:
    """What ``hk list --json`` prints: every kernel (the stdlib and those
    of ``plugins``, a folder or a list of them, else ``HK_PLUGIN_PATH``) with its kind, targets, origin,
    tier, GPU, note, source, doc and parameters. Waits for tier opt first,
    as ``hk list`` does."""
    with Context(plugins, allow_unsafe_plugins=allow_unsafe_plugins) as ctx:
        ctx.wait()
        try:
            _hk.cuda_init()
        except Exception:
            pass
        return ctx.kernels()
