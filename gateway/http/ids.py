"""Row ids taken from URLs: ASCII digits that fit a 64-bit storage id, or nothing."""

from __future__ import annotations

import re

# Ids are 64-bit integers in storage; a larger number would fail inside the driver.
MAX_STORAGE_ID = 2**63 - 1
_DIGITS = re.compile(r"[0-9]{1,19}")


def storage_id(raw: str) -> int | None:
    # ASCII digits only: int() also takes "٣" or "+3", which are not ids.
    if not _DIGITS.fullmatch(raw):
        return None
    value = int(raw)
    return value if 0 < value <= MAX_STORAGE_ID else None
