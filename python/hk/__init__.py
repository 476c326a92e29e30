"""hk: kernels for NumPy arrays (and GPU arrays), over libhk.

- The stdlib as functions: ``hk.add(x, y, out=z)``, ``hk.gelu(x)``,
  ``hk.sum(x, axis=-1)``, ``hk.softmax(x, axis=-1)`` ... on NumPy arrays,
  in place (zero-copy), the instance picked from the dtypes.
- User kernels: ``ctx = hk.Context(plugins=["plugins/"])``,
  ``k = ctx.kernel("saxpy")``, ``k(2.0, x, y)``; ``hk.Kernel.from_json``,
  ``hk.Kernel.from_file``; ``hk.ElementwiseKernel`` and
  ``hk.ReductionKernel`` (CuPy's signatures) build kernel files for you.
- Errors are exceptions: ``hk.KernelError`` (file, line, column, field,
  message) for kernel files, ``ValueError``/``TypeError`` naming the
  parameter for bad arguments; never a crash.
- GPU arrays (``__cuda_array_interface__``, ``__dlpack__``) run on the GPU,
  in place; host arrays on the CPU; mixing them is a ``ValueError``.
- Calls release the GIL (from ``4096`` elements: below that a call is
  shorter than the release); a context is shared safely by threads.
"""
from __future__ import annotations

from typing import Any, Sequence

from . import _errors, _hk
from ._core import Context, Kernel, list_kernels
from ._errors import (ArgumentError, ContextClosedError, DeviceError, Error,
                      PluginWarning,
                      FileError, KernelError, Location, NotFoundError,
                      RefusedError, UnsupportedError)
from ._sugar import ElementwiseKernel, ReductionKernel
from ._stdlib import make_functions as _make_functions

_hk._set_error_factory(_errors.make)

#: NumPy's dtype for bf16 arrays: uint16 bit patterns, tagged (metadata
#: ``{"hk": "bf16"}``) so that hk takes them as bf16. A plain ``uint16``
#: array is u16. ``bits.view(hk.bfloat16)`` tags bits made elsewhere; hk's
#: bf16 results come tagged. (ml_dtypes' ``bfloat16`` arrays work too.)
bfloat16 = _hk.bfloat16


def _check_environment() -> None:
    """Warns about the environment variables libhk reads whose values it
    ignores (the library never prints; the hk command refuses them)."""
    import os
    import re
    import warnings

    counts = (("HK_THREADS", "every CPU shares large calls"),
              ("HK_JOBS", "one compiler process per CPU"))
    for name, instead in counts:
        value = os.environ.get(name, "")
        if value and not (re.fullmatch(r"[0-9]+", value)
                          and 1 <= int(value) <= 256):
            warnings.warn(f"{name}={value!r} is not a whole number from 1 "
                          f"to 256: hk ignores it ({instead})",
                          RuntimeWarning, stacklevel=3)
    value = os.environ.get("HK_PAR_MIN", "")
    if value and not re.fullmatch(r"[0-9]+(,[0-9]+)?", value):
        warnings.warn(f"HK_PAR_MIN={value!r} is not N or CHEAP,HEAVY "
                      "(whole numbers of elements): hk ignores it",
                      RuntimeWarning, stacklevel=3)


_check_environment()

__version__ = _hk.version

#: The context the stdlib functions (hk.add ...) run in: the stdlib only.
stdlib_context = Context(plugins=[])
globals().update(_make_functions(stdlib_context))


#: An array in hk's memory (:func:`empty`) or borrowed (:func:`from_dlpack`).
Array = _hk.Array


def empty(shape: Sequence[int], dtype: Any = "f32",
          device: str = "cpu") -> Array:
    """An uninitialised :class:`Array` of ``shape`` and ``dtype`` (``"f32"``,
    ``np.float32`` ...) in host memory, or with ``device="cuda"`` in GPU
    memory from hk's pool (``hk.UnsupportedError`` without a GPU). Kernels
    take it in place; ``copy_from(a)`` and ``numpy()`` copy in and out;
    ``np.from_dlpack``, ``torch.from_dlpack``, ``cupy.from_dlpack`` view it
    without a copy (it exports ``__dlpack__``, and
    ``__cuda_array_interface__`` or ``__array_interface__``)."""
    return _hk.empty(tuple(shape), dtype, device)


def from_dlpack(obj: Any) -> Array:
    """``obj``'s memory as an :class:`Array`, borrowed (no copy): any object
    with ``__dlpack__`` (PyTorch, CuPy, JAX, NumPy) or
    ``__cuda_array_interface__``. hk waits for nothing the producer queued
    on its own CUDA stream: synchronise it first."""
    return _hk.from_dlpack(obj)


def to_dlpack(array: Array) -> Any:
    """A DLPack capsule of an hk :class:`Array` (for ``from_dlpack`` of
    libraries that still take capsules); the array stays alive as long as
    the consumer holds it."""
    return array.__dlpack__()


def set_threads(n: int) -> None:
    """Threads sharing a large call (1: the caller only; 0: every CPU)."""
    _hk.set_threads(n)


def get_threads() -> int:
    """Threads sharing a large call."""
    return _hk.get_threads()


def stop_compilers() -> int:
    """Kills the compilers hk runs (tier opt's, in process groups of their
    own, which a terminal's Ctrl-C does not reach) and makes later compiles
    fail at once, for good: for a SIGTERM handler before the program ends
    (``signal.signal(signal.SIGTERM, lambda *a: (hk.stop_compilers(),
    sys.exit(143)))``). Returns the number killed (hk_stop_compilers)."""
    return _hk.stop_compilers()


def cuda_available() -> bool:
    """Whether hk finds a CUDA device (starts the CUDA backend)."""
    try:
        _hk.cuda_init()
        return True
    except UnsupportedError:
        return False
