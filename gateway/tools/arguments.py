"""The model's arguments to an action, checked against the action's JSON Schema.

What goes to a business API is never the model's text as it came: arguments the schema does not
declare are dropped (the identity an action acts for is the gateway's to say, so a
``customer_id`` the model adds goes nowhere), and arguments that fail the schema are answered to
the model as an error, with no request made.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

__all__ = ["ArgumentsInvalid", "CheckedArguments", "checked_arguments", "schema_problem"]

# How much of a failed check the model is told (enough to correct itself).
_MAX_PROBLEM_CHARS = 300


class ArgumentsInvalid(ValueError):
    """The arguments are not JSON, not an object, or fail the action's schema."""


@dataclass(frozen=True, slots=True)
class CheckedArguments:
    """The arguments to send, as the JSON text of an object, and the names dropped."""

    json_text: str
    dropped: tuple[str, ...]

    def as_object(self) -> dict[str, Any]:
        loaded: dict[str, Any] = json.loads(self.json_text)
        return loaded


def schema_problem(schema: Mapping[str, Any]) -> str | None:
    """Why ``schema`` cannot describe an action's arguments, or None when it can: it must be a
    valid JSON Schema (2020-12) of an object."""
    if schema.get("type") != "object":
        return 'the parameters schema must have "type": "object"'
    properties = schema.get("properties", {})
    if not isinstance(properties, Mapping):
        return 'the parameters schema\'s "properties" must be an object'
    try:
        Draft202012Validator.check_schema(dict(schema))
    except SchemaError as exc:
        return f"the parameters schema is invalid: {exc.message}"
    return None


def checked_arguments(schema: Mapping[str, Any], raw: str | Mapping[str, Any]) -> CheckedArguments:
    """The model's ``raw`` arguments (JSON text, or an object already decoded) with the
    undeclared ones dropped, once they satisfy ``schema``; `ArgumentsInvalid` otherwise."""
    arguments = _decoded(raw)
    declared = schema.get("properties", {})
    dropped = tuple(sorted(name for name in arguments if name not in declared))
    kept = {name: value for name, value in arguments.items() if name in declared}
    errors = sorted(
        Draft202012Validator(dict(schema)).iter_errors(kept), key=lambda error: list(error.path)
    )
    if errors:
        first = errors[0]
        where = "/".join(str(part) for part in first.absolute_path) or "arguments"
        raise ArgumentsInvalid(f"{where}: {first.message}"[:_MAX_PROBLEM_CHARS])
    text = json.dumps(kept, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return CheckedArguments(json_text=text, dropped=dropped)


def _decoded(raw: str | Mapping[str, Any]) -> dict[str, Any]:
    if isinstance(raw, Mapping):
        return dict(raw)
    text = raw.strip() or "{}"  # a call with no arguments may come as an empty string
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ArgumentsInvalid(f"the arguments are not JSON: {exc.msg}") from None
    if not isinstance(value, dict):
        raise ArgumentsInvalid("the arguments must be a JSON object")
    return value
