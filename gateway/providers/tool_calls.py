"""Tool calling, vendor-neutral: the actions a call offers, the calls a model asks for, and the
rounds of calls and results that came before in the same turn.

Each vendor module renders these its own way (OpenAI's ``tools`` / ``tool_calls`` / ``tool``
messages, Anthropic's ``tools`` / ``tool_use`` / ``tool_result`` blocks) and reads the model's
calls back into `ToolCall`s; streamed calls arrive in pieces that `CallPieces` puts together.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CallPieces",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "ToolRound",
    "ToolUse",
]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """An action offered to the model: its name, what it does, its arguments' JSON Schema."""

    name: str
    description: str
    parameters_json: str

    @property
    def parameters(self) -> dict[str, Any]:
        schema: dict[str, Any] = json.loads(self.parameters_json)
        return schema


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call the model asked for: the vendor's id for it, the action, the arguments as the
    model wrote them (JSON text, unchecked)."""

    id: str
    name: str
    arguments_json: str

    def arguments_object(self) -> dict[str, Any]:
        """The arguments as an object, or an empty one when the model's text is not one (the
        checks before any call refuse such arguments; this is only for echoing them back)."""
        try:
            value = json.loads(self.arguments_json or "{}")
        except json.JSONDecodeError:
            return {}
        return value if isinstance(value, dict) else {}


@dataclass(frozen=True, slots=True)
class ToolResult:
    """What the gateway answers to one call: the result as text, or why it failed."""

    call_id: str
    content: str
    failed: bool = False


@dataclass(frozen=True, slots=True)
class ToolRound:
    """One round of a turn: the model's text beside its calls, then a result for each call."""

    calls: tuple[ToolCall, ...]
    results: tuple[ToolResult, ...]
    text: str = ""

    def __post_init__(self) -> None:
        if {call.id for call in self.calls} != {result.call_id for result in self.results}:
            raise ValueError("each call of a round needs exactly one result")


@dataclass(frozen=True, slots=True)
class ToolUse:
    """The actions offered to one model call, and the rounds of the turn so far. ``final``:
    the turn's last round, the model must answer in words (the actions stay listed, as the
    vendors want for the calls already in the history, but none may be called)."""

    definitions: tuple[ToolDefinition, ...] = ()
    rounds: tuple[ToolRound, ...] = ()
    final: bool = False


@dataclass(slots=True)
class _Pieces:
    id: str = ""
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class CallPieces:
    """The calls of one streamed reply, put together from their pieces by position."""

    def __init__(self) -> None:
        self._calls: dict[int, _Pieces] = {}

    def start(self, index: int, call_id: str | None = None, name: str | None = None) -> None:
        pieces = self._calls.setdefault(index, _Pieces())
        if call_id:
            pieces.id = call_id
        if name and not pieces.name:
            pieces.name = name

    def add_arguments(self, index: int, fragment: str) -> None:
        self._calls.setdefault(index, _Pieces()).arguments.append(fragment)

    def calls(self) -> tuple[ToolCall, ...]:
        """The calls in order; a call without a name is not one (a vendor's stray piece)."""
        return tuple(
            ToolCall(
                id=pieces.id or f"call_{index}",
                name=pieces.name,
                arguments_json="".join(pieces.arguments),
            )
            for index, pieces in sorted(self._calls.items())
            if pieces.name
        )
