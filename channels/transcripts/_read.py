"""Typed reads of vendor JSON: every wrong shape becomes `PayloadInvalid` naming the field.

Vendors differ in how they spell numbers (Amazon Transcribe writes `"4.87"`, the others
write `4.87`), so `number` accepts numeric strings; booleans are never numbers.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from channels.base import PayloadInvalid

_T = TypeVar("_T")


def first(raw: Mapping[str, Any], *keys: str) -> object:
    """The value of the first of ``keys`` that is present and not null (None when none is):
    vendors renamed fields between versions and send either spelling."""
    for key in keys:
        value = raw.get(key)
        if value is not None:
            return value
    return None


def mapping(value: object, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise PayloadInvalid(f"{where} must be an object, got {_kind(value)}")
    return value


def array(value: object, where: str) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise PayloadInvalid(f"{where} must be an array, got {_kind(value)}")
    return value


def optional_array(value: object, where: str) -> Sequence[Any]:
    """An array, with a missing or null field read as empty."""
    return () if value is None else array(value, where)


def each(value: object, where: str, read: Callable[[object, str], _T]) -> tuple[_T, ...]:
    """An optional array read item by item with ``read``, item ``j`` named ``where[j]``."""
    return tuple(read(item, f"{where}[{j}]") for j, item in enumerate(optional_array(value, where)))


def text(value: object, where: str) -> str:
    if not isinstance(value, str):
        raise PayloadInvalid(f"{where} must be a string, got {_kind(value)}")
    return value


def optional_text(value: object, where: str) -> str | None:
    return None if value is None else text(value, where)


def number(value: object, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise PayloadInvalid(f"{where} must be a number, got {_kind(value)}")
    try:
        result = float(value)
    except ValueError as exc:
        raise PayloadInvalid(f"{where} must be a number, got {value!r:.40}") from exc
    if not math.isfinite(result):
        raise PayloadInvalid(f"{where} must be a finite number, got {value!r:.40}")
    return result


def optional_number(value: object, where: str) -> float | None:
    return None if value is None else number(value, where)


def confidence(value: object, where: str) -> float | None:
    """A probability in [0, 1], or None when the field is missing or null."""
    if value is None:
        return None
    result = number(value, where)
    if not 0.0 <= result <= 1.0:
        raise PayloadInvalid(f"{where} must be between 0 and 1, got {result}")
    return result


def seconds_from_ms(value: object, where: str) -> float | None:
    ms = optional_number(value, where)
    return None if ms is None else ms / 1000.0


def label(value: object, where: str) -> str | None:
    """A speaker or channel label as a string (Deepgram numbers them, AssemblyAI letters)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise PayloadInvalid(f"{where} must be a string or an integer, got {_kind(value)}")
    return str(value)


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, list | tuple):
        return "an array"
    return type(value).__name__


def ordered(start: float | None, end: float | None) -> tuple[float | None, float | None]:
    """Vendor times made sane: a backwards end reads as zero-length (Whisper emits
    `49.0 → 48.0`), a negative time as 0."""
    if start is not None:
        start = max(0.0, start)
    if end is not None:
        end = max(0.0, end)
    if start is not None and end is not None and end < start:
        end = start
    return start, end


def times(
    raw: Mapping[str, Any],
    where: str,
    read: Callable[[object, str], float | None] = optional_number,
) -> tuple[float | None, float | None]:
    """The ``start`` and ``end`` fields of ``raw`` in seconds (``read`` turns a vendor's value
    into seconds, `seconds_from_ms` for milliseconds), made `ordered`."""
    return ordered(read(raw.get("start"), f"{where}.start"), read(raw.get("end"), f"{where}.end"))
