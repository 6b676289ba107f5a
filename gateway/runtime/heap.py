"""The C allocator's thresholds for processes that run for weeks.

glibc serves an allocation of 128 KiB or more with its own ``mmap`` and gives it back on
free, but by default it raises that threshold to the size of each such block freed (up to
32 MiB) and the heap's trim threshold to twice it. After one 4 MiB buffer has come and gone (a
large result, a long text being tokenized), the next few-MiB buffer comes from the heap
instead; the heap's top grows for it and, above the raised trim threshold, is never handed
back. Under steady load a background process's resident set then rose in steps of 3–4 MB
while what it held stayed the same. Setting the thresholds explicitly turns that adjustment
off (documented in mallopt(3)): large buffers keep their own mappings and the heap's free top
goes back. On other C libraries (musl, macOS) there is no ``mallopt`` and nothing changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Final

# mallopt(3) parameter numbers (malloc.h) and glibc's initial values of both thresholds.
M_TRIM_THRESHOLD: Final = -1
M_MMAP_THRESHOLD: Final = -3
TRIM_THRESHOLD_BYTES: Final = 128 * 1024
MMAP_THRESHOLD_BYTES: Final = 128 * 1024


def fix_allocator_thresholds() -> bool:
    """Pin glibc's mmap and trim thresholds at their initial values, once, before the process
    (and the children it forks, which inherit them) does its work; whether it applied."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    # mallopt returns 1 on success.
    return bool(
        mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD_BYTES) == 1
        and mallopt(M_TRIM_THRESHOLD, TRIM_THRESHOLD_BYTES) == 1
    )
