"""The two builders the context benchmark compares against, at the same input budget.

* LangChain's ``trim_messages`` (langchain-core, ``strategy="last"``) over the customer's whole
  history converted to LangChain messages, with a token counter on the same tiktoken encoding —
  the way a LangChain application keeps a prompt under budget. langchain-core is an optional
  dependency (``pip install 'relaydesk[bench]'``) imported only here, only when used.
* A naive builder that re-tokenizes every message of the history on each call and keeps the
  newest messages that fit.

Both get the history already in memory (no storage reads), which favours them.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

import tiktoken

from context import REPLY_PRIMER, TiktokenCounter

if TYPE_CHECKING:
    from langchain_core.messages import BaseMessage

INSTALL_HINT = "pip install 'relaydesk[bench]'  (or: pip install 'langchain-core>=0.3')"

Role = Literal["user", "assistant"]
# LangChain message types and the chat roles the recipe counts for them.
_ROLES = {"human": "user", "ai": "assistant", "system": "system"}


class BaselineUnavailable(RuntimeError):
    """langchain-core is not installed; the message says how to install it."""


def langchain_version() -> str:
    """The installed langchain-core version, or `BaselineUnavailable`."""
    try:
        import langchain_core.messages  # noqa: F401
    except ImportError as exc:
        raise BaselineUnavailable(
            f"the trim_messages baseline needs langchain-core: {INSTALL_HINT}"
        ) from exc
    return importlib.metadata.version("langchain-core")


@dataclass(frozen=True, slots=True)
class Trimmed:
    """What a baseline kept: messages (system and current message included) and their tokens."""

    messages: int
    tokens: int


class TrimMessagesBaseline:
    """``trim_messages([system, *history, current], strategy="last", include_system=True,
    start_on="human")`` with a tiktoken counter. The LangChain messages are built once per
    history (not timed); each call trims them."""

    def __init__(
        self,
        encoding: tiktoken.Encoding,
        instruction: str,
        history: Sequence[tuple[Role, str]],
        current_message: str,
        max_tokens: int,
    ) -> None:
        langchain_version()
        from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

        self._max_tokens = max_tokens
        self._encoding = encoding
        self._messages: list[BaseMessage] = [SystemMessage(content=instruction)]
        self._messages.extend(
            HumanMessage(content=text) if role == "user" else AIMessage(content=text)
            for role, text in history
        )
        self._messages.append(HumanMessage(content=current_message))

    def token_counter(self, messages: list[BaseMessage]) -> int:
        """LangChain's documented tiktoken counter ("How to trim messages") on our encoding:
        3 tokens per message plus its role and content (and name), 3 for the reply primer —
        the same totals our builder charges."""
        encode = self._encoding.encode
        total = 3
        for message in messages:
            role = _ROLES.get(message.type)
            if role is None:
                raise ValueError(f"unsupported message type {message.type!r}")
            content = message.content
            text = content if isinstance(content, str) else str(content)
            total += 3 + len(encode(role)) + len(encode(text))
            if message.name:
                total += 1 + len(encode(message.name))
        return total

    def __call__(self) -> list[BaseMessage]:
        """One trim over the whole history (the timed part)."""
        from langchain_core.messages import trim_messages

        counter: Callable[[list[BaseMessage]], int] = self.token_counter
        return trim_messages(
            self._messages,
            max_tokens=self._max_tokens,
            strategy="last",
            token_counter=counter,
            include_system=True,
            start_on="human",
        )

    def window(self, kept: list[BaseMessage]) -> Trimmed:
        """What a trim kept, counted (outside the timed part)."""
        return Trimmed(len(kept), self.token_counter(kept))


class NaiveBuilder:
    """Re-tokenize the instruction, the whole history and the current message on every call,
    then keep the newest history messages that fit the budget."""

    def __init__(
        self,
        counter: TiktokenCounter,
        instruction: str,
        history: Sequence[tuple[Role, str]],
        current_message: str,
        max_tokens: int,
    ) -> None:
        self._counter = counter
        self._instruction = instruction
        self._history = list(history)
        self._current = current_message
        self._max_tokens = max_tokens

    def __call__(self) -> Trimmed:
        count_message = self._counter.count_message
        fixed = (
            count_message("system", self._instruction)
            + count_message("user", self._current)
            + REPLY_PRIMER
        )
        costs = [count_message(role, text) for role, text in self._history]
        room = self._max_tokens - fixed
        kept = 0
        for cost in reversed(costs):
            if cost > room:
                break
            room -= cost
            kept += 1
        return Trimmed(kept + 2, self._max_tokens - room)
