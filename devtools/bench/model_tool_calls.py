"""The bench model's tool calls: when a request is answered with one, and how it is written.

A model offered a read action looks something up before it answers: the first call of a turn
(the action among the request's ``tools``, no ``tool`` result after the last user message and
``tool_choice`` not ``"none"``) is answered with one call of it, whose single argument is the
message's ``[reference]``; the next call, which carries the result, is answered in words. The
call is written as OpenAI does: ``message.tool_calls`` with ``finish_reason: "tool_calls"``, or
streamed as ``delta.tool_calls`` pieces (the name first, then the arguments in two halves).
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "NO_REFERENCE",
    "ToolPlan",
    "failed_result",
    "offered_names",
    "reference_in",
    "tool_call_body",
    "tool_call_deltas",
    "tool_results",
    "wants_call",
]

_REFERENCE = re.compile(r"\[([A-Za-z0-9_.:-]+)\]")
NO_REFERENCE = "unknown"


@dataclass(frozen=True, slots=True)
class ToolPlan:
    """The action the model calls once per turn, and the name of its one string argument."""

    name: str
    argument: str

    def arguments_json(self, last_user_text: str) -> str:
        """The call's arguments: the message's reference (or `NO_REFERENCE`)."""
        return json.dumps({self.argument: reference_in(last_user_text) or NO_REFERENCE})


def reference_in(text: str) -> str | None:
    """The ``[reference]`` a bench message starts with, without its brackets."""
    found = _REFERENCE.search(text)
    return found.group(1) if found else None


def _offered(body: dict[str, Any]) -> set[str]:
    tools = body.get("tools")
    if not isinstance(tools, list):
        return set()
    names = (tool.get("function", {}).get("name") for tool in tools if isinstance(tool, dict))
    return {name for name in names if isinstance(name, str)}


def offered_names(body: dict[str, Any]) -> tuple[str, ...]:
    """The function names a request offers, sorted."""
    return tuple(sorted(_offered(body)))


def tool_results(messages: Sequence[dict[str, Any]]) -> tuple[str, ...]:
    """The ``tool`` results after the last user message: this turn's rounds so far."""
    results: list[str] = []
    for message in reversed(messages):
        role = message.get("role")
        if role == "user":
            break
        if role == "tool":
            results.append(str(message.get("content") or ""))
    return tuple(reversed(results))


def failed_result(result: str) -> bool:
    """Whether a ``tool`` result is the gateway's report of a failed call (``{"error": …}``)."""
    try:
        value = json.loads(result)
    except ValueError:
        return False
    return isinstance(value, dict) and set(value) == {"error"}


def wants_call(plan: ToolPlan | None, body: dict[str, Any], messages: Sequence[Any]) -> bool:
    """Whether this request is answered with a call of ``plan``'s action."""
    return (
        plan is not None
        and plan.name in _offered(body)
        and body.get("tool_choice") != "none"
        and not tool_results(messages)
    )


def _call(call_id: str, plan: ToolPlan, arguments: str) -> dict[str, Any]:
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": plan.name, "arguments": arguments},
    }


def tool_call_body(
    model: str, plan: ToolPlan, arguments: str, usage: dict[str, int]
) -> dict[str, Any]:
    """A whole (non-streamed) answer that calls the action once."""
    return {
        "id": f"chatcmpl-{uuid.uuid4().hex[:12]}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [_call(f"call_{uuid.uuid4().hex[:12]}", plan, arguments)],
                },
                "finish_reason": "tool_calls",
            }
        ],
        "usage": usage,
    }


def tool_call_deltas(plan: ToolPlan, arguments: str) -> list[tuple[dict[str, Any], str | None]]:
    """The streamed deltas of one call and their finish reasons, up to the ``tool_calls``
    finish."""
    half = len(arguments) // 2
    first = {
        "index": 0,
        "id": f"call_{uuid.uuid4().hex[:12]}",
        "type": "function",
        "function": {"name": plan.name, "arguments": arguments[:half]},
    }
    rest = {"index": 0, "function": {"arguments": arguments[half:]}}
    return [
        ({"role": "assistant", "content": None}, None),
        ({"tool_calls": [first]}, None),
        ({"tool_calls": [rest]}, None),
        ({}, "tool_calls"),
    ]
