"""The facts a tool declares in its result: ``facts: {<JSON pointer>: <fact key>}`` in its
settings, each pointer read from the result's JSON (RFC 6901). A pointer that finds nothing,
or finds a list or an object, gives no fact; the tag `source_tag` marks where a fact came from,
and the window shows it."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Final

__all__ = ["SOURCE_PREFIX", "declared_facts", "source_tag"]

SOURCE_PREFIX: Final = "source:"
MAX_VALUE_CHARS: Final = 500


def source_tag(tool: str) -> str:
    return f"{SOURCE_PREFIX}tool:{tool}"


def declared_facts(
    result_text: str, pointers: Iterable[tuple[str, str]]
) -> tuple[tuple[str, str], ...]:
    """(key, value) of every declared fact the result holds, in the settings' order."""
    try:
        document = json.loads(result_text)
    except json.JSONDecodeError:
        return ()
    found: list[tuple[str, str]] = []
    for pointer, key in pointers:
        value = _at(document, pointer)
        if isinstance(value, bool):
            found.append((key, json.dumps(value)))
        elif isinstance(value, str | int | float) and str(value).strip():
            found.append((key, str(value)[:MAX_VALUE_CHARS]))
    return tuple(found)


_MISSING: Final = object()


def _at(document: object, pointer: str) -> object:
    if pointer == "":
        return document
    node = document
    for raw in pointer[1:].split("/"):
        token = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list) and token.isdigit() and int(token) < len(node):
            node = node[int(token)]
        else:
            return _MISSING
    return node
