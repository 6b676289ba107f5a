"""docker/compose.yaml read as `docker compose` reads it, without a Docker engine: the YAML,
then its `${VAR}`, `${VAR:-default}` and `${VAR:?message}` interpolated from a given
environment (the shell's and docker/.env's, in compose), `$$` an escaped `$`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

DOCKER = Path(__file__).resolve().parents[2] / "docker"
_VARIABLE = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:\?|:-)([^}]*))?\}")


class MissingVariable(Exception):
    """A `${VAR:?message}` with VAR unset or empty: compose refuses to start."""


def interpolate(text: str, env: Mapping[str, str]) -> str:
    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name, operator, argument = match.group(1), match.group(2), match.group(3)
        value = env.get(name, "")
        if operator == ":?" and not value:
            raise MissingVariable(f"required variable {name} is missing a value: {argument}")
        if operator == ":-" and not value:
            return argument
        return value

    return _VARIABLE.sub(replace, text)


def interpolated(value: Any, env: Mapping[str, str]) -> Any:
    """`value` (a loaded YAML tree) with every string interpolated."""
    if isinstance(value, str):
        return interpolate(value, env)
    if isinstance(value, list):
        return [interpolated(item, env) for item in value]
    if isinstance(value, dict):
        return {key: interpolated(item, env) for key, item in value.items()}
    return value


def load_compose(env: Mapping[str, str]) -> dict[str, Any]:
    """docker/compose.yaml as compose would run it with `env`."""
    tree: dict[str, Any] = interpolated(yaml.safe_load((DOCKER / "compose.yaml").read_text()), env)
    return tree


def env_file_values(text: str) -> dict[str, str]:
    """The variables an env file sets (comments and blank lines skipped)."""
    values = {}
    for line in text.splitlines():
        if line.strip() and not line.lstrip().startswith("#"):
            name, _, value = line.partition("=")
            values[name.strip()] = value
    return values
