"""hk's exceptions: every hk status code becomes one of these.

Errors in kernel files come as :class:`KernelError`, which carries the
located lines hk prints (``PATH:LINE:COL: error: FIELD: MESSAGE``) parsed
into ``file``, ``line``, ``column``, ``field`` and ``message`` (of the first
problem; ``errors`` holds them all).
"""
from __future__ import annotations

import re
from typing import List, NamedTuple, Optional


class Error(Exception):
    """Base of hk's exceptions. ``code`` is hk's status name
    (``"HK_EINVAL"``, ...), ``message`` hk's words."""

    def __init__(self, message: str, code: str = "HK_EINTERNAL"):
        super().__init__(message)
        self.message = message
        self.code = code


class ArgumentError(Error, ValueError):
    """A bad argument (HK_EINVAL): a dtype no instance takes, shapes that
    do not broadcast, a bad axis, an out array of the wrong shape or
    overlapping another; the message names the parameter."""


class ContextClosedError(Error, ValueError):
    """A call on a kernel (or a context) after ``Context.close()``."""


class NotFoundError(Error, LookupError):
    """No such kernel, file or parameter (HK_ENOTFOUND)."""


class PluginWarning(UserWarning):
    """Plugin folders or files that a :class:`hk.Context` could not load
    (the others are loaded): each problem as hk prints it, the same text
    as ``Context.problems``."""


class UnsupportedError(Error, RuntimeError):
    """Not available in this build or on this machine (HK_EUNSUPPORTED),
    e.g. a GPU array where hk finds no CUDA device."""


class DeviceError(Error, RuntimeError):
    """The GPU failed a launch, a copy or an allocation (HK_EDEVICE)."""


class Location(NamedTuple):
    """One located problem of a kernel file."""

    file: str
    line: int
    column: int
    field: str
    message: str


_LOCATED = re.compile(r"^(?P<file>.*?):(?P<line>\d+):(?P<col>\d+): error: "
                      r"(?P<rest>.*)$")


def parse_locations(text: str) -> List[Location]:
    """The ``PATH:LINE:COL: error: FIELD: MESSAGE`` lines of hk's message."""
    out = []
    for ln in text.splitlines():
        m = _LOCATED.match(ln)
        if not m:
            continue
        rest = m.group("rest")
        field, sep, msg = rest.partition(": ")
        if not sep:
            field, msg = "", rest
        out.append(Location(m.group("file"), int(m.group("line")),
                            int(m.group("col")), field, msg))
    return out


class KernelError(Error, ValueError):
    """A kernel file with errors (HK_ESCHEMA, HK_ECOMPILE): ``file``,
    ``line``, ``column``, ``field`` and ``message`` locate the first
    problem, ``errors`` lists every one (:class:`Location`)."""

    def __init__(self, message: str, code: str = "HK_ESCHEMA"):
        super().__init__(message, code)
        self.errors = parse_locations(message)
        first: Optional[Location] = self.errors[0] if self.errors else None
        self.file = first.file if first else None
        self.line = first.line if first else None
        self.column = first.column if first else None
        self.field = first.field if first else None
        self.message = first.message if first else message


class FileError(Error, OSError):
    """A file that could not be read or written, or may not be trusted
    (HK_EIO: unsafe permissions)."""


class RefusedError(Error):
    """A compiled object (a prebuilt plugin, a cache entry) was refused."""


_BY_NAME = {
    "HK_EINVAL": ArgumentError,
    "HK_ENOTFOUND": NotFoundError,
    "HK_ESCHEMA": KernelError,
    "HK_ECOMPILE": KernelError,
    "HK_EUNSUPPORTED": UnsupportedError,
    "HK_EDEVICE": DeviceError,
    "HK_EIO": FileError,
    "HK_EREFUSED": RefusedError,
    "closed": ContextClosedError,
}


def make(code: int, name: str, message: str) -> BaseException:
    """The exception for hk status ``code`` (called by the C layer)."""
    if name == "HK_ENOMEM":
        return MemoryError(message)
    cls = _BY_NAME.get(name, Error)
    if cls is KernelError and not parse_locations(message):
        cls = Error
    return cls(message, name)
