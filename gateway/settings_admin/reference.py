"""The configuration reference of docs/configuration.md, generated from the settings schema:
one row per key (the keys of nested settings dotted), with its type, default, bounds and what
it does. `python -m gateway.settings_admin.reference docs/configuration.md` rewrites the part
of the file between the markers; a test fails when the committed reference is not current."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from gateway.settings_admin.schema import settings_schema

START = "<!-- settings-reference:start (generated: python -m gateway.settings_admin.reference) -->"
END = "<!-- settings-reference:end -->"
# Nested settings whose keys get rows of their own (the others are one value, documented where
# their feature is).
EXPANDED = ("slices", "rate_limits", "verification")
MAX_DEFAULT_CHARS = 60


def _type(prop: dict[str, Any]) -> str:
    if "anyOf" in prop:
        return " or ".join(_type(option) for option in prop["anyOf"])
    if "$ref" in prop:
        return "table"
    if "enum" in prop:
        return " \\| ".join(f"`{value}`" for value in prop["enum"])
    kind = str(prop.get("type", "any"))
    if kind == "array":
        return f"list of {_type(prop.get('items', {}))}"
    if kind == "object":
        return "table"
    return {"integer": "integer", "number": "number", "boolean": "true/false", "null": "null"}.get(
        kind, kind
    )


def _default(prop: dict[str, Any]) -> str:
    if "default" not in prop:
        return ""
    text = json.dumps(prop["default"], ensure_ascii=False)
    if len(text) > MAX_DEFAULT_CHARS:
        text = text[: MAX_DEFAULT_CHARS - 1] + "…"
    escaped = text.replace("|", "\\|")  # a table cell ends at a bare pipe
    return f"`{escaped}`"


def _bounds(prop: dict[str, Any]) -> str:
    marks = {
        "minimum": "≥ {}",
        "exclusiveMinimum": "> {}",
        "maximum": "≤ {}",
        "minLength": "at least {} characters",
    }
    found = [text.format(prop[key]) for key, text in marks.items() if key in prop]
    for option in prop.get("anyOf", ()):
        found += [text.format(option[key]) for key, text in marks.items() if key in option]
    return ", ".join(found)


def _row(key: str, prop: dict[str, Any], description: str) -> str:
    cells = [f"`{key}`", _type(prop), _default(prop), _bounds(prop), description]
    return "| " + " | ".join(cell.replace("\n", " ") for cell in cells) + " |"


def render_reference() -> str:
    """The generated table, markers included."""
    schema = settings_schema()
    definitions = schema.get("$defs", {})
    lines = [
        START,
        "",
        "| key | type | default | bounds | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key, prop in schema["properties"].items():
        lines.append(_row(key, prop, prop.get("description", "")))
        if key in EXPANDED and "$ref" in prop:
            nested = definitions[prop["$ref"].rsplit("/", 1)[-1]]
            for inner, inner_prop in nested["properties"].items():
                lines.append(_row(f"{key}.{inner}", inner_prop, ""))
    lines += ["", END]
    return "\n".join(lines)


def with_reference(document: str) -> str:
    """`document` with the part between the markers replaced by the current reference."""
    start, end = document.index(START), document.index(END) + len(END)
    return document[:start] + render_reference() + document[end:]


def main(argv: list[str]) -> int:
    path = Path(argv[0])
    path.write_text(with_reference(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
