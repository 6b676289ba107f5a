"""The provider contract: what one model call returns and how it fails.

Exception tree (shallow; each class exists because its caller handles it differently)::

    ValueError
    └── ProviderConfigError   a spec, URL, key or tier list that cannot be used — raised when
                              providers are built from configuration, before any customer waits
    Exception
    └── ProviderError         a call failed for good, after the retries the policy allows; the
                              pipeline answers with ``FALLBACK_MESSAGE``, records
                              ``ProviderError.to_dict()`` and keeps the inbound message

Streaming: ``complete(..., on_text=callback)`` asks the HTTP providers to stream; the callback is
awaited with the whole reply text so far each time more arrives. A retried attempt starts the
text again from empty, so a call may carry a shorter text than the one before it (the caller
replaces what it showed). The returned `Completion` is always the whole, finished reply; a
partial stream is a failure, never a `Completion`.

Vendor JSON is parsed at the edge (the provider modules); past it only these frozen objects
travel.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Final, Literal, Protocol

from context import ChatMessage
from gateway.providers.tool_calls import ToolCall, ToolUse

__all__ = [
    "FALLBACK_MESSAGE",
    "Completion",
    "FailureReason",
    "ModelOutcome",
    "ModelProvider",
    "OnText",
    "ProviderConfigError",
    "ProviderError",
    "Usage",
    "answer_or_fallback",
]

log = logging.getLogger("relaydesk.providers")

FALLBACK_MESSAGE: Final = (
    "Sorry, we cannot answer right now because of a technical problem on our side. "
    "Your message has been received and kept; please try again in a few minutes."
)
"""Default text sent to the customer when the model call fails for good (tenants may override)."""

FailureReason = Literal[
    "timeout",  # no answer within the per-attempt timeout (streamed: no next event within it)
    "connect_error",  # the endpoint could not be reached
    "rate_limited",  # 429 on the last attempt (or a rate-limit error event in its stream)
    "server_error",  # 5xx on the last attempt (or an overload/server error event in its stream)
    "client_error",  # any other 4xx: the request or the key is wrong; never retried
    "invalid_response",  # 2xx whose body is not a usable completion, or an unexpected status
    "transport_error",  # the connection failed mid-exchange
    # a streamed reply broke on the last attempt: the connection dropped mid-body, the stream
    # ended before its end marker, or an event could not be read
    "stream_broken",
]

OnText = Callable[[str], Awaitable[None]]
"""Awaited with the whole reply text so far (not the latest piece) each time more arrives."""


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens of one call as the provider reported them.

    ``prompt_tokens`` is the whole input, cached part included; ``cached_tokens`` is the part
    served from the provider's prompt cache (so ``cached_tokens <= prompt_tokens``).
    """

    prompt_tokens: int
    completion_tokens: int
    cached_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True, slots=True)
class Completion:
    """The model's answer to one window.

    ``model`` is the model that answered (as the provider named it), ``attempts`` how many HTTP
    calls it took (1 without retries), ``finish_reason`` the vendor's stop reason when given
    (``stop``/``length`` for OpenAI, ``end_turn``/``max_tokens`` for Anthropic).
    ``tool_calls``: the actions the model asks to call before it answers (``text`` may then be
    empty, or a few words said beside the calls).
    """

    text: str
    model: str
    provider: str
    usage: Usage
    attempts: int
    finish_reason: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()


class ProviderConfigError(ValueError):
    """A provider spec, base URL, key or tier list that cannot be used; the message says which."""


class ProviderError(Exception):
    """The model call failed for good after ``attempts`` HTTP calls.

    ``reason`` is a `FailureReason`; ``status`` the HTTP status of the last answer (None when
    there was none: timeout, connection failure); ``detail`` a short, single-line description
    (the vendor's error message when it gave one — never the prompt or the key).
    """

    def __init__(
        self,
        *,
        provider: str,
        model: str,
        reason: FailureReason,
        attempts: int,
        status: int | None = None,
        detail: str = "",
    ) -> None:
        self.provider = provider
        self.model = model
        self.reason: FailureReason = reason
        self.attempts = attempts
        self.status = status
        self.detail = detail
        super().__init__(self._message())

    def _message(self) -> str:
        status = f" (HTTP {self.status})" if self.status is not None else ""
        tries = "attempt" if self.attempts == 1 else "attempts"
        detail = f": {self.detail}" if self.detail else ""
        return (
            f"{self.provider}:{self.model} failed, {self.reason}{status} "
            f"after {self.attempts} {tries}{detail}"
        )

    def to_dict(self) -> dict[str, object]:
        """What the pipeline records for the failed turn (JSON-ready)."""
        return {
            "provider": self.provider,
            "model": self.model,
            "reason": self.reason,
            "status": self.status,
            "attempts": self.attempts,
            "detail": self.detail,
        }


class ModelProvider(Protocol):
    """One configured model behind one endpoint.

    ``complete`` sends the window (one system message first, the current user message last)
    and returns the answer, or raises `ProviderError` once retries are exhausted. Instances
    hold no per-call state, so one instance may serve concurrent turns.

    Without ``on_text`` the reply comes in one response. With it the HTTP providers stream and
    await ``on_text(text_so_far)`` as the text grows (the offline provider calls it once with
    its whole text); a callback that raises is logged and not called again for that call,
    which still finishes.

    With ``tools`` the call offers those actions and replays the turn's earlier rounds of calls
    and results after the window; the model may answer with calls (`Completion.tool_calls`)
    instead of text. The offline provider offers none and always answers text.
    """

    @property
    def name(self) -> str:
        """``"offline"``, ``"openai"`` or ``"anthropic"``."""
        ...

    @property
    def model(self) -> str: ...

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        on_text: OnText | None = None,
        tools: ToolUse | None = None,
    ) -> Completion: ...


@dataclass(frozen=True, slots=True)
class ModelOutcome:
    """What a turn sends and records: ``reply`` always holds the text for the customer; exactly
    one of ``completion`` (the model answered) and ``failure`` (the fallback was used) is set."""

    reply: str
    completion: Completion | None = None
    failure: ProviderError | None = None

    @property
    def ok(self) -> bool:
        return self.completion is not None

    @property
    def usage(self) -> Usage | None:
        return None if self.completion is None else self.completion.usage


async def answer_or_fallback(
    provider: ModelProvider,
    messages: Sequence[ChatMessage],
    *,
    max_tokens: int,
    fallback: str = FALLBACK_MESSAGE,
    on_text: OnText | None = None,
) -> ModelOutcome:
    """Call the model (streaming to ``on_text`` when given); after a final `ProviderError`
    answer with ``fallback`` instead.

    Only `ProviderError` is turned into the fallback: any other exception is a bug and
    propagates. The failure is logged here and returned for the caller to store with the turn.
    """
    try:
        completion = await provider.complete(messages, max_tokens=max_tokens, on_text=on_text)
    except ProviderError as error:
        log.warning("model call failed, fallback sent", extra={"fields": error.to_dict()})
        return ModelOutcome(reply=fallback, failure=error)
    return ModelOutcome(reply=completion.text, completion=completion)
