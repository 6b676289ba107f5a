"""JSON bodies read with a bound on nesting, for every door that takes JSON from outside.

`json.loads` refuses nesting past the interpreter's recursion limit with `RecursionError`
(a 50,000-deep array is 100 kB); what it accepts can still be deep enough to exhaust the
stack of whatever walks it next (`copy.deepcopy`, pydantic, a recursive check). So a body
is decoded, then measured without recursion: no door takes more than `MAX_DEPTH` levels,
and every failure is a `PayloadInvalid` (a 400), never a 500.
"""

from __future__ import annotations

import json
from typing import Any, Final

from channels.base import PayloadInvalid

__all__ = ["MAX_DEPTH", "load_json"]

# Provider payloads nest about ten levels (Telegram's reply inside a message inside an update
# is the deepest); nothing any route takes comes near this.
MAX_DEPTH: Final = 64


def load_json(body: bytes | str, *, max_depth: int = MAX_DEPTH) -> Any:
    """``body`` decoded (an empty body is ``None``); `PayloadInvalid` when it is not UTF-8 or
    not JSON, has an integer too long to convert, or nests arrays and objects more than
    ``max_depth`` levels deep."""
    try:
        data = json.loads(body or b"null")
    # ValueError: bad UTF-8, bad JSON, an integer longer than Python converts (4300 digits).
    except (ValueError, RecursionError) as exc:
        reason = "nested too deeply" if isinstance(exc, RecursionError) else str(exc)
        raise PayloadInvalid(f"body is not JSON: {reason}") from exc
    if _deeper_than(data, max_depth):
        raise PayloadInvalid(f"body is nested more than {max_depth} levels deep")
    return data


def _deeper_than(value: object, limit: int) -> bool:
    """Whether arrays and objects in ``value`` nest more than ``limit`` levels (no recursion)."""
    pending: list[tuple[object, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        children: Any
        if isinstance(item, dict):
            children = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        pending.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
