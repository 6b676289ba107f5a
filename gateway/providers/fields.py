"""Reading vendor JSON by path: a value or None, a token count or 0, never a KeyError."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["field_at", "tokens_at"]


def field_at(node: object, *path: str | int) -> object:
    """The value at ``path`` (keys of objects, indexes of arrays); None where it is absent."""
    for step in path:
        if isinstance(step, str) and isinstance(node, Mapping):
            node = node.get(step)
        elif isinstance(step, int) and isinstance(node, list) and -len(node) <= step < len(node):
            node = node[step]
        else:
            return None
    return node


def tokens_at(node: object, *path: str | int) -> int | None:
    """A token count at ``path``; None when absent, null or not a non-negative integer."""
    value = field_at(node, *path)
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value
