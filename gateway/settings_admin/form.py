"""The console's settings form, generated from the schema: one field per key, its kind read
from the key's JSON Schema (text, long text, whole number, number, yes/no, a choice, or JSON
for tables and lists), the level's stored value shown in it, and the submitted form read back
into a level's document. Pure: no storage, no HTML.

An empty field means "not set at this level": the next level (or the default) applies.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from gateway.settings_admin.documents import Document, SettingsProblem
from gateway.settings_admin.schema import settings_schema

FieldKind = Literal["text", "longtext", "integer", "number", "boolean", "choice", "json"]
LONG_TEXTS = ("instruction",)


@dataclass(frozen=True, slots=True)
class FormField:
    key: str
    kind: FieldKind
    description: str
    default: str  # the built-in default as the field would show it
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None


def _options(prop: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The non-null alternatives of a key's schema."""
    options = prop.get("anyOf", [prop])
    return [option for option in options if option.get("type") != "null"]


def _kind(key: str, prop: Mapping[str, Any]) -> FieldKind:
    options = _options(prop)
    if len(options) != 1:
        return "json"
    only = options[0]
    if "enum" in only:
        return "choice"
    kind = only.get("type")
    if kind == "string":
        return "longtext" if key in LONG_TEXTS or key.endswith("_message") else "text"
    if kind in ("integer", "number", "boolean"):
        return kind  # type: ignore[no-any-return]
    return "json"


def _bound(prop: Mapping[str, Any], name: str) -> float | None:
    for option in _options(prop):
        if name in option:
            return float(option[name])
    return None


def form_fields() -> tuple[FormField, ...]:
    """Every key of a level, in the schema's order (`channels` is edited on channel levels)."""
    fields = []
    for key, prop in settings_schema()["properties"].items():
        if key == "channels":
            continue
        kind = _kind(key, prop)
        fields.append(
            FormField(
                key=key,
                kind=kind,
                description=str(prop.get("description", "")),
                default=shown(kind, prop.get("default")),
                choices=tuple(str(c) for c in _options(prop)[0].get("enum", ())),
                minimum=_bound(prop, "minimum"),
                maximum=_bound(prop, "maximum"),
            )
        )
    return tuple(fields)


def shown(kind: FieldKind, value: Any) -> str:
    """A value as its field shows it (None: empty)."""
    if value is None:
        return ""
    if kind == "boolean":
        return "true" if value else "false"
    if kind in ("text", "longtext", "choice") and isinstance(value, str):
        return value
    if kind in ("integer", "number") and isinstance(value, int | float):
        return str(value)
    return json.dumps(value, ensure_ascii=False)


def read_form(
    fields: tuple[FormField, ...], submitted: Mapping[str, str]
) -> tuple[Document, tuple[SettingsProblem, ...]]:
    """The level's document the submitted fields make (blank fields left out), and the fields
    that could not be read, by key."""
    document: Document = {}
    problems = []
    for field in fields:
        raw = submitted.get(field.key, "")
        if not raw.strip():
            continue
        try:
            document[field.key] = _parsed(field, raw)
        except ValueError as exc:
            problems.append(SettingsProblem(field.key, str(exc)))
    return document, tuple(problems)


def _parsed(field: FormField, raw: str) -> Any:
    text = raw.strip()
    if field.kind in ("text", "longtext"):
        return raw.replace("\r\n", "\n")
    if field.kind == "choice":
        if text not in field.choices:
            raise ValueError(f"choose one of {', '.join(field.choices)}")
        return text
    if field.kind == "boolean":
        if text not in ("true", "false"):
            raise ValueError("choose true or false")
        return text == "true"
    if field.kind == "integer":
        try:
            return int(text)
        except ValueError:
            raise ValueError("give a whole number") from None
    if field.kind == "number":
        try:
            return float(text)
        except ValueError:
            raise ValueError("give a number") from None
    try:
        return json.loads(text)
    except ValueError as exc:
        raise ValueError(f"not JSON: {exc}") from None
