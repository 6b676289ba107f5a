"""Where the recorded third-party payloads live: `tests/fixtures/`, one folder per vendor, each
with a SOURCE.md naming where its files came from and under which licence."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
