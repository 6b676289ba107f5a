"""Each atheris harness in fuzz/ runs a bounded, seeded campaign in a subprocess and finds no
crash: every parser meets coverage-guided input with a result or its documented error.

Skipped where atheris is not installed (it ships wheels for Linux x86_64 only).
"""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

from channels.transcripts import FORMATS

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
# Enough for every harness to get past its seeds into the parsers' branches (a few seconds
# each); the seed makes a run repeatable.
RUNS = 10_000

KNOWN: dict[str, str] = {}  # harness name → why it is expected to crash (none now)

HARNESSES = [
    ["twilio_form.py"],
    ["telegram_update.py"],
    ["webchat_frames.py"],
    ["identity_token.py"],
    *(["transcripts.py", name] for name in FORMATS),
]


def _param(argv: list[str]) -> object:
    name = Path(argv[0]).stem
    marks = [pytest.mark.xfail(strict=True, reason=KNOWN[name])] if name in KNOWN else []
    return pytest.param(argv, id=" ".join([name, *argv[1:]]), marks=marks)


@pytest.mark.skipif(
    importlib.util.find_spec("atheris") is None,
    reason="atheris is not installed (wheels exist for Linux x86_64 and CPython 3.11-3.13 only)",
)
@pytest.mark.parametrize("argv", [_param(argv) for argv in HARNESSES])
def test_harness_finds_no_crash(argv: list[str], tmp_path: Path) -> None:
    done = subprocess.run(
        [
            sys.executable,
            str(FUZZ / argv[0]),
            *argv[1:],
            f"-runs={RUNS}",
            "-seed=1",
            "-max_len=2048",
            "-len_control=0",
            f"-artifact_prefix={tmp_path}/",
        ],
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"Done {RUNS} runs" in done.stderr
    assert not list(tmp_path.glob("crash-*"))
