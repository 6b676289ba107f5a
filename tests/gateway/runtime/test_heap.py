"""With glibc's thresholds pinned, a few-MB buffer freed goes back to the system even after a
larger one has come and gone; left to glibc's adjustment, it stays resident for good."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="glibc's mallopt is a Linux matter"
)

# In a fresh interpreter: a 4 MiB buffer allocated and freed (glibc then raises its mmap
# threshold to 4 MiB), then a 3 MiB one, measured while held and after it is freed.
_STEPS = textwrap.dedent(
    """
    import json, os, sys
    from gateway.runtime.heap import fix_allocator_thresholds

    applied = fix_allocator_thresholds() if sys.argv[1] == "pinned" else False
    page = os.sysconf("SC_PAGE_SIZE")

    def resident():
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * page

    larger = b"x" * (4 << 20)
    del larger
    before = resident()
    buffer = b"y" * (3 << 20)
    held = resident() - before
    del buffer
    kept = resident() - before
    print(json.dumps({"applied": applied, "held": held, "kept": kept}))
    """
)
MIB = 1 << 20


def _run(mode: str) -> dict[str, int]:
    done = subprocess.run(
        [sys.executable, "-c", _STEPS, mode], capture_output=True, text=True, timeout=60, check=True
    )
    figures: dict[str, int] = json.loads(done.stdout)
    return figures


def test_a_freed_buffer_leaves_the_process_once_the_thresholds_are_pinned() -> None:
    adjusting = _run("glibc")
    # The problem: after a larger buffer came and went, the next one is never given back.
    assert adjusting["held"] > 2 * MIB and adjusting["kept"] > 2 * MIB
    pinned = _run("pinned")
    assert pinned["applied"]
    assert pinned["held"] > 2 * MIB and pinned["kept"] < MIB // 2
