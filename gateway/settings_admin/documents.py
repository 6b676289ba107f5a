"""A level's stored settings as a document: dotted keys set and unset, a patch merged in, the
keys a change touched, and the check that the level still gives valid settings.

Pure: no storage. A level holds only the keys it overrides; a tenant level's document may
carry `channels` (one block per channel, applied after every level), a channel level's document
is that block.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from gateway.settings_admin.levels import SettingsLevel
from gateway.tenants import TenantConfigError, TenantSettings, effective_settings

Document = dict[str, Any]


@dataclass(frozen=True, slots=True)
class SettingsProblem:
    """One key of a level that cannot be used, and why."""

    key: str  # dotted path inside the level's document ("rate_limits.model_calls_per_customer")
    message: str


class SettingsInvalid(ValueError):
    """A level's document that would give unusable settings; `problems` name the keys."""

    def __init__(self, problems: Sequence[SettingsProblem]) -> None:
        self.problems = tuple(problems)
        super().__init__(
            "invalid settings — " + "; ".join(f"{p.key}: {p.message}" for p in self.problems)
        )


def parse_value(raw: str) -> Any:
    """A value typed on the command line: JSON when it reads as JSON (numbers, true, null,
    lists, objects), else the text itself."""
    try:
        return json.loads(raw)
    except ValueError:
        return raw


def _key_parts(key: str) -> list[str]:
    parts = key.split(".")
    if not key or any(not part for part in parts):
        raise SettingsInvalid([SettingsProblem(key or "(empty)", "not a dotted key")])
    return parts


def with_key(document: Mapping[str, Any], key: str, value: Any) -> Document:
    """A copy of `document` with the dotted `key` set (tables on the way created)."""
    parts = _key_parts(key)
    result = copy_document(document)
    table = result
    for index, part in enumerate(parts[:-1]):
        inner = table.get(part)
        if inner is None:
            inner = table[part] = {}
        elif not isinstance(inner, dict):
            where = ".".join(parts[: index + 1])
            raise SettingsInvalid([SettingsProblem(where, "holds a value, not a table of keys")])
        table = inner
    table[parts[-1]] = value
    return result


def without_key(document: Mapping[str, Any], key: str) -> tuple[Document, bool]:
    """A copy of `document` without the dotted `key` (emptied tables dropped), and whether the
    key was there."""
    parts = _key_parts(key)
    result = copy_document(document)
    tables = [result]
    for part in parts[:-1]:
        inner = tables[-1].get(part)
        if not isinstance(inner, dict):
            return result, False
        tables.append(inner)
    if parts[-1] not in tables[-1]:
        return result, False
    del tables[-1][parts[-1]]
    for depth in range(len(tables) - 1, 0, -1):
        if not tables[depth]:
            del tables[depth - 1][parts[depth - 1]]
    return result, True


def patched(document: Mapping[str, Any], patch: Mapping[str, Any]) -> Document:
    """`patch` merged into `document`: tables merged key by key, any other value replaced
    (a null is kept as a value: several settings read null as "off")."""
    result = copy_document(document)
    for key, value in patch.items():
        current = result.get(key)
        if isinstance(value, Mapping) and isinstance(current, Mapping):
            result[key] = patched(current, value)
        else:
            result[key] = copy_document(value) if isinstance(value, Mapping) else value
    return result


def copy_document(document: Mapping[str, Any]) -> Document:
    return json.loads(json.dumps(document))  # type: ignore[no-any-return]


def flat(document: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Every leaf of the document under its dotted key (a list is one leaf)."""
    leaves: dict[str, Any] = {}
    for key, value in document.items():
        dotted = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            leaves.update(flat(value, f"{dotted}."))
        else:
            leaves[dotted] = value
    return leaves


@dataclass(frozen=True, slots=True)
class KeyChange:
    key: str
    before: Any  # None with `existed_before` False: the key was not set at this level
    after: Any
    existed_before: bool
    exists_after: bool


def changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[KeyChange, ...]:
    """The dotted keys whose value differs between the two documents, sorted."""
    old, new = flat(before), flat(after)
    return tuple(
        KeyChange(key, old.get(key), new.get(key), key in old, key in new)
        for key in sorted(old.keys() | new.keys())
        if key not in old or key not in new or old[key] != new[key]
    )


def row_document(
    level: SettingsLevel, document: Mapping[str, Any], stored_row: Mapping[str, Any]
) -> Document:
    """The whole row a level's document makes: itself, or the row with its channel block."""
    if level.channel is None:
        return copy_document(document)
    row = copy_document(stored_row)
    channels = row.get("channels")
    if not isinstance(channels, dict):
        channels = row["channels"] = {}
    if document:
        channels[level.channel] = copy_document(document)
    else:
        channels.pop(level.channel, None)
        if not channels:
            row.pop("channels")
    return row


def level_document(level: SettingsLevel, stored_row: Mapping[str, Any]) -> Document:
    """What a level holds of its stored row: the row, or its block for the channel."""
    if level.channel is None:
        return copy_document(stored_row)
    channels = stored_row.get("channels")
    block = channels.get(level.channel) if isinstance(channels, Mapping) else None
    return copy_document(block) if isinstance(block, Mapping) else {}


def check_row(
    level: SettingsLevel, row: Mapping[str, Any], ancestors: Sequence[Mapping[str, Any]]
) -> TenantSettings:
    """Refuse a row that gives unusable settings for its tenant (with `ancestors`, the less
    specific stored levels, most specific first), alone or on any of its channels; the
    problems name keys of `level`'s document. The tenant's effective settings otherwise."""
    channels = row.get("channels", {})
    if not isinstance(channels, Mapping) or not all(
        isinstance(block, Mapping) for block in channels.values()
    ):
        raise SettingsInvalid([SettingsProblem("channels", "give one table of keys per channel")])
    layers = [row, *ancestors]
    base_prefix = "" if level.channel is None else "(the level's row) "
    settings = _validated(layers, None, base_prefix)
    for channel in channels:
        if level.channel is not None and channel != level.channel:
            continue
        prefix = "" if level.channel is not None else f"channels.{channel}."
        _validated(layers, str(channel), prefix)
    return settings


RowKey = tuple[str | None, str | None]  # (host, assistant) of a stored level of one domain


def lookup_layers(
    rows: Mapping[RowKey, Mapping[str, Any]], host: str | None, assistant: str | None
) -> list[Mapping[str, Any]]:
    """The stored levels a tenant's lookup reads, most specific first (as
    `gateway.storage.repositories.tenants.settings_layers` reads them from storage)."""
    candidates: list[Mapping[str, Any] | None] = []
    if assistant is not None:
        candidates.append(rows.get((host, assistant)) or rows.get((None, assistant)))
    if host is not None:
        candidates.append(rows.get((host, None)))
    candidates.append(rows.get((None, None)))
    return [layer for layer in candidates if layer is not None]


def check_descendants(level: SettingsLevel, rows: Mapping[RowKey, Mapping[str, Any]]) -> None:
    """Refuse a change of `level` (already in `rows`, every stored level of its domain) that
    leaves a more specific stored level with unusable settings: a domain's change checked
    under each host and assistant level, a host's under each of its assistants."""
    problems: list[SettingsProblem] = []
    for host, assistant in rows:
        if (host, assistant) == (level.host, level.assistant_id):
            continue
        if level.assistant_id is not None or (level.host is not None and host != level.host):
            continue
        below = SettingsLevel(level.domain, host, assistant)
        layers = lookup_layers(rows, host, assistant)
        names: list[str | None] = [None]
        for layer in layers:  # every level's channel blocks apply to this tenant
            channels = layer.get("channels")
            if isinstance(channels, Mapping):
                names += [str(name) for name in channels if name not in names]
        for channel in names:
            try:
                _validated(layers, channel, "")
            except SettingsInvalid as exc:
                where = below.path() + (f"/channel/{channel}" if channel else "")
                problems += [
                    SettingsProblem(p.key, f"{p.message} (at {where}, which this level is under)")
                    for p in exc.problems
                ]
                break
    if problems:
        raise SettingsInvalid(problems)


def _validated(
    layers: Sequence[Mapping[str, Any]], channel: str | None, prefix: str
) -> TenantSettings:
    try:
        return effective_settings(layers, channel=channel)
    except TenantConfigError as exc:
        cause = exc.__cause__
        if not isinstance(cause, ValidationError):
            problem = SettingsProblem(prefix.rstrip(".") or "settings", str(exc))
            raise SettingsInvalid([problem]) from exc
        raise SettingsInvalid(
            [
                SettingsProblem(
                    prefix + ".".join(str(part) for part in error["loc"])
                    if error["loc"]
                    else (prefix.rstrip(".") or "settings"),
                    error["msg"],
                )
                for error in cause.errors()
            ]
        ) from exc
