"""Settings documents in files: read from TOML (stdlib `tomllib`), YAML or JSON, written as
YAML (TOML has no null, which several settings use for "off")."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

import yaml


class SettingsFileError(ValueError):
    """A file that cannot be read as one table of settings."""


def read_document(path: Path) -> dict[str, Any]:
    """The table a `.toml`, `.yaml`/`.yml` or `.json` file holds (`-`: YAML on standard input
    is read by the caller)."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsFileError(f"{path}: {exc.strerror}") from exc
    return parse_document(text, suffix=path.suffix.lower(), name=str(path))


def parse_document(text: str, *, suffix: str, name: str) -> dict[str, Any]:
    try:
        if suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif suffix == ".json":
            data = json.loads(text)
        else:
            data = yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, ValueError, yaml.YAMLError) as exc:
        raise SettingsFileError(f"{name}: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsFileError(f"{name}: the file must hold one table of settings")
    # A round through JSON: dates and times TOML or YAML might read are refused here, not
    # stored as something the settings never take.
    try:
        result: dict[str, Any] = json.loads(json.dumps(data))
    except TypeError as exc:
        raise SettingsFileError(f"{name}: {exc}") from exc
    return result


def dump_document(document: dict[str, Any]) -> str:
    """YAML of the document, keys in their stored order, text as written."""
    if not document:
        return "{}\n"
    return yaml.safe_dump(document, allow_unicode=True, sort_keys=False, width=100)
