"""What a build returns: the chat messages and the budget report.

``BudgetReport.to_dict`` is the ``report`` object of ``POST /v1/context``; its keys are a public
contract (extend, don't rename).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from context.knowledge_refs import KnowledgeRef

__all__ = [
    "BudgetReport",
    "ChatMessage",
    "DroppedItem",
    "SliceReport",
    "Window",
]

ChatRole = Literal["system", "user", "assistant"]
JsonObject = dict[str, object]


@dataclass(frozen=True, slots=True)
class ChatMessage:
    """One message of an OpenAI-style chat list."""

    role: ChatRole
    content: str

    def to_dict(self) -> dict[str, str]:
        return {"role": self.role, "content": self.content}


@dataclass(frozen=True, slots=True)
class SliceReport:
    """Accounting of one slice.

    ``received``: surplus ceded by the slice before it (first pass). ``granted``: tokens taken in
    the second pass from what the last slice left over. ``ceded``: surplus this slice passed on
    after the first pass (for the last slice: what it offered back). Always
    ``used <= budget + received + granted``.
    """

    name: str
    budget: int
    used: int
    received: int = 0
    granted: int = 0
    ceded: int = 0

    def to_dict(self) -> JsonObject:
        return {
            "name": self.name,
            "budget": self.budget,
            "used": self.used,
            "received": self.received,
            "granted": self.granted,
            "ceded": self.ceded,
        }


@dataclass(frozen=True, slots=True)
class DroppedItem:
    """Something left out of, or cut in, the window, and why.

    Kinds and reasons: ``fact``/``irrelevant_over_budget`` (ranked below what fit),
    ``fact``/``over_budget`` (a pinned fact or rule that did not fit), ``knowledge``/
    ``over_budget`` (a relevant chunk that did not fit), ``summary``/``over_budget``,
    ``episode_summary``/``over_budget``, ``state``/``over_budget`` (an extra field),
    ``turn``/``compressed_middle``, ``turn_range``/``compressed_middle`` (id ``"first..last"``
    when many middle turns were dropped), ``message``/``truncated`` (kept, but cut with a marker).
    """

    kind: str
    id: str
    reason: str

    def to_dict(self) -> JsonObject:
        return {"kind": self.kind, "id": self.id, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class BudgetReport:
    """Budget accounting of one build.

    ``estimated_tokens`` is the count of the rendered window (per-message overhead and reply
    primer included; stored counts for unmodified turns) and never exceeds ``input_budget``.
    Slice ``used`` figures are the additive estimates the selection worked with.
    ``full_history_tokens`` is what sending the whole raw history would cost with the same fixed
    part (instruction, anchored messages, the state's core) that this window carries;
    ``savings`` is ``1 - estimated / full_history_tokens``, never below 0 (0 when everything
    fits: the window then holds the whole history, and perhaps facts and summaries besides).
    ``prefix_sha256`` hashes the system message: equal hashes mean a provider prompt cache can
    reuse the prefix.
    """

    window: int
    output_reserve: int
    protocol_margin: int
    input_budget: int
    estimated_tokens: int
    full_history_tokens: int
    savings: float
    slices: tuple[SliceReport, ...]
    dropped: tuple[DroppedItem, ...]
    prefix_sha256: str

    def slice(self, name: str) -> SliceReport:
        """The report of the slice called ``name``."""
        for item in self.slices:
            if item.name == name:
                return item
        raise KeyError(name)

    def to_dict(self) -> JsonObject:
        """The JSON object of the ``report`` field of ``POST /v1/context``."""
        return {
            "window": self.window,
            "output_reserve": self.output_reserve,
            "protocol_margin": self.protocol_margin,
            "input_budget": self.input_budget,
            "estimated_tokens": self.estimated_tokens,
            "full_history_tokens": self.full_history_tokens,
            "savings": self.savings,
            "slices": [item.to_dict() for item in self.slices],
            "dropped": [item.to_dict() for item in self.dropped],
            "prefix_sha256": self.prefix_sha256,
        }


@dataclass(frozen=True, slots=True)
class Window:
    """The messages to send (one system message, episode turns, the current message last) and
    the report of how they were chosen. ``knowledge``: the numbered knowledge lines the system
    message holds (``[k1]`` …) and the documents they stand for, for the reply's citations."""

    messages: tuple[ChatMessage, ...]
    report: BudgetReport
    knowledge: tuple[KnowledgeRef, ...] = ()

    def messages_as_dicts(self) -> list[dict[str, str]]:
        """The ``messages`` field of ``POST /v1/context``."""
        return [message.to_dict() for message in self.messages]
