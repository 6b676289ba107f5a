"""A tiny HTML builder that escapes by default.

Every `str` handed to `el` (as a child or an attribute value) is escaped; only `Html` values,
which this module produces, pass through unchanged. Templates are therefore plain Python calls
and there is no way to put unescaped customer text on a page by forgetting a filter.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping
from typing import TypeAlias

_VOID = frozenset({"br", "hr", "img", "input", "link", "meta"})


class Html(str):
    """Markup that is already safe (built by `el`, `join` or `raw`)."""

    __slots__ = ()


Child: TypeAlias = "Html | str | int | float | None | Iterable[Child]"
AttrValue: TypeAlias = str | int | float | bool | None


def escape(value: object) -> Html:
    if isinstance(value, Html):
        return value
    return Html(html.escape(str(value), quote=True))


def _children(items: Iterable[Child]) -> Iterable[Html]:
    for item in items:
        if item is None:
            continue
        if isinstance(item, str | int | float):
            yield escape(item)
        else:
            yield from _children(item)


def join(*items: Child) -> Html:
    return Html("".join(_children(items)))


def _attrs(attrs: Mapping[str, AttrValue]) -> str:
    parts: list[str] = []
    for name, value in attrs.items():
        if value is None or value is False:
            continue
        key = name.rstrip("_").replace("_", "-")
        parts.append(f" {key}" if value is True else f' {key}="{escape(value)}"')
    return "".join(parts)


def el(tag: str, attrs: Mapping[str, AttrValue] | None = None, *children: Child) -> Html:
    """`<tag attrs>children</tag>`; attribute `class_` renders as `class`, `data_x` as `data-x`."""
    opening = f"<{tag}{_attrs(attrs or {})}>"
    if tag in _VOID:
        return Html(opening)
    return Html(f"{opening}{join(*children)}</{tag}>")


FAVICON = "/console/static/favicon.svg"


def document(title: str, body: Child) -> Html:
    head = el(
        "head",
        None,
        el("meta", {"charset": "utf-8"}),
        el("meta", {"name": "viewport", "content": "width=device-width, initial-scale=1"}),
        el("title", None, title),
        el("link", {"rel": "stylesheet", "href": "/console/static/console.css"}),
        el("link", {"rel": "icon", "type": "image/svg+xml", "href": FAVICON}),
    )
    return Html(f"<!doctype html>{el('html', {'lang': 'en'}, head, el('body', None, body))}")
