"""The Settings page (admins only): one level of tenant settings as a form generated from the
schema (`gateway.settings_admin.form`), and the review of a change (every key before and after,
or the keys that cannot be used) before it is saved."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from gateway.console.html import Child, Html, el
from gateway.console.views_layout import csrf, page, reason_field, table
from gateway.operators.logins import OperatorLogin
from gateway.settings_admin.documents import Document, KeyChange, SettingsProblem
from gateway.settings_admin.form import FormField, shown
from gateway.settings_admin.levels import SettingsLevel
from identity.channels import CHANNEL_NAMES

PATH = "/console/settings"


def _level_inputs(level: SettingsLevel) -> Html:
    values = {
        "domain": level.domain,
        "host": level.host,
        "assistant": level.assistant_id,
        "channel": level.channel,
    }
    return el(
        "span",
        None,
        [
            el("input", {"type": "hidden", "name": name, "value": value or ""})
            for name, value in values.items()
        ],
    )


def _level_picker(level: SettingsLevel) -> Html:
    channel_options = [el("option", {"value": ""}, "(every channel)")] + [
        el("option", {"value": name, "selected": name == level.channel}, name)
        for name in CHANNEL_NAMES
    ]
    return el(
        "form",
        {"method": "get", "action": PATH, "class_": "level"},
        el("label", None, "Domain ", el("input", {"name": "domain", "value": level.domain})),
        el("label", None, "Host ", el("input", {"name": "host", "value": level.host or ""})),
        el(
            "label",
            None,
            "Assistant ",
            el("input", {"name": "assistant", "value": level.assistant_id or ""}),
        ),
        el("label", None, "Channel ", el("select", {"name": "channel"}, channel_options)),
        el("button", {"type": "submit"}, "Open level"),
    )


def _input(field: FormField, value: str) -> Html:
    placeholder = f"default: {field.default}" if field.default else "not set"
    attrs: dict[str, Any] = {"name": field.key, "id": f"setting-{field.key}"}
    if field.kind in ("boolean", "choice"):
        choices = ("true", "false") if field.kind == "boolean" else field.choices
        options = [el("option", {"value": ""}, f"(not set: {field.default or 'none'})")]
        options += [el("option", {"value": c, "selected": c == value}, c) for c in choices]
        return el("select", attrs, options)
    if field.kind in ("integer", "number"):
        attrs.update(
            type="number",
            value=value,
            placeholder=placeholder,
            step="1" if field.kind == "integer" else "any",
            min=field.minimum,
            max=field.maximum,
        )
        return el("input", attrs)
    if field.kind == "text":
        return el("input", {**attrs, "value": value, "placeholder": placeholder})
    rows = 4 if field.kind == "longtext" else 2
    return el("textarea", {**attrs, "rows": rows, "placeholder": placeholder}, value)


def _description(text: str) -> list[Child]:
    """The schema's descriptions mark names with backticks: those parts become `<code>`."""
    parts = text.split("`")
    if len(parts) % 2 == 0:  # an unpaired backtick: the text as written
        return [text]
    return [el("code", None, part) if i % 2 else part for i, part in enumerate(parts) if part]


def _field(field: FormField, value: str, problem: str | None) -> Html:
    return el(
        "div",
        {"class_": "setting", "data_key": field.key},
        el("label", {"for": f"setting-{field.key}"}, el("code", None, field.key)),
        el("p", {"class_": "muted"}, _description(field.description))
        if field.description
        else None,
        _input(field, value),
        el("p", {"class_": "error", "role": "alert"}, problem) if problem else None,
    )


def _problems(problems: Sequence[SettingsProblem]) -> Child:
    if not problems:
        return None
    return el(
        "section",
        {"class_": "error", "role": "alert", "id": "problems"},
        el("p", None, "These keys cannot be used:"),
        el(
            "ul",
            None,
            [el("li", None, el("code", None, p.key), ": ", p.message) for p in problems],
        ),
    )


def settings_page(
    login: OperatorLogin,
    level: SettingsLevel,
    fields: Sequence[FormField],
    stored: Document,
    *,
    submitted: Mapping[str, str] | None = None,
    problems: Sequence[SettingsProblem] = (),
    notice: str | None = None,
) -> Html:
    """The level's form; `submitted` (a refused review) refills the fields as typed."""
    by_key = {problem.key.split(".")[0]: problem.message for problem in problems}
    rendered = [
        _field(
            field,
            submitted.get(field.key, "")
            if submitted is not None
            else shown(field.kind, stored.get(field.key)),
            by_key.get(field.key),
        )
        for field in fields
    ]
    return page(
        "Settings",
        login,
        el("h1", None, "Settings"),
        el(
            "p",
            {"class_": "muted"},
            "A level holds only the keys it sets; an empty field takes the next level's value "
            "(assistant, host, domain, then the default). Changes are reviewed before saving, "
            "audited, and followed from the next message.",
        ),
        _level_picker(level),
        el("h2", None, "Level ", el("code", {"id": "level-path"}, level.path())),
        _problems(problems),
        el(
            "form",
            {"method": "post", "action": f"{PATH}/review", "class_": "settings"},
            csrf(login),
            _level_inputs(level),
            rendered,
            el("button", {"type": "submit"}, "Review changes"),
        ),
        notice=notice,
    )


def _value(change_side: bool, value: Any) -> Html:
    if not change_side:
        return el("em", None, "not set")
    return el("code", None, json.dumps(value, ensure_ascii=False))


def review_page(
    login: OperatorLogin,
    level: SettingsLevel,
    changes: Sequence[KeyChange],
    document: Document,
    base: Document,
) -> Html:
    """The keys a change would touch, before and after, and the form that saves it."""
    if not changes:
        body: Child = el(
            "p",
            {"class_": "notice", "role": "status"},
            "Nothing would change. ",
            el("a", {"href": f"{PATH}?{level_query(level)}"}, "Back to the level"),
        )
    else:
        rows = [
            el(
                "tr",
                {"data_key": change.key},
                el("td", None, el("code", None, change.key)),
                el("td", None, _value(change.existed_before, change.before)),
                el("td", None, _value(change.exists_after, change.after)),
            )
            for change in changes
        ]
        body = el(
            "div",
            None,
            table(["Key", "Now", "After saving"], rows),
            el(
                "form",
                {"method": "post", "action": f"{PATH}/save", "class_": "action"},
                csrf(login),
                _level_inputs(level),
                el("input", {"type": "hidden", "name": "document", "value": _json(document)}),
                el("input", {"type": "hidden", "name": "base", "value": _json(base)}),
                reason_field(),
                el("button", {"type": "submit"}, "Save"),
            ),
            el("p", None, el("a", {"href": f"{PATH}?{level_query(level)}"}, "Cancel")),
        )
    return page(
        "Review settings",
        login,
        el("h1", None, "Review the change"),
        el("p", None, "Level ", el("code", None, level.path())),
        body,
    )


def _json(document: Document) -> str:
    return json.dumps(document, ensure_ascii=False, sort_keys=True)


def level_query(level: SettingsLevel) -> str:
    """The page's query string for the level."""
    pairs = {
        "domain": level.domain,
        "host": level.host or "",
        "assistant": level.assistant_id or "",
        "channel": level.channel or "",
    }
    return urlencode({k: v for k, v in pairs.items() if v})
