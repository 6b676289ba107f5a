"""Model providers over the one shared ``httpx.AsyncClient``.

``make_provider(spec, http=…, base_url=…, api_key=…)`` gives a `ModelProvider` for
``offline``, ``openai:<model>`` (any OpenAI-compatible chat-completions endpoint) or
``anthropic:<model>`` (Messages API, system prefix marked for prompt caching). ``complete``
returns a `Completion` with the usage to store for the turn, or raises `ProviderError` after
the retries of its `RetryPolicy`; the caller then answers with ``FALLBACK_MESSAGE`` (or the
tenant's own text), records ``ProviderError.to_dict()`` and keeps the inbound message —
``answer_or_fallback`` does the first part and returns a `ModelOutcome` to store. Passing
``on_text=`` (an `OnText`: awaited with the reply text so far) to either streams the reply.
``choose_tier`` picks a tenant's model by the size of the assembled window. ``tools=`` (a
`ToolUse`) offers actions and replays the turn's earlier calls; the model's own calls come
back in `Completion.tool_calls`.
"""

from __future__ import annotations

from gateway.providers.anthropic import ANTHROPIC_BASE_URL, ANTHROPIC_VERSION, AnthropicProvider
from gateway.providers.base import (
    FALLBACK_MESSAGE,
    Completion,
    FailureReason,
    ModelOutcome,
    ModelProvider,
    OnText,
    ProviderConfigError,
    ProviderError,
    Usage,
    answer_or_fallback,
)
from gateway.providers.factory import OFFLINE_SPEC, ProviderSpec, make_provider, parse_spec
from gateway.providers.offline import OFFLINE_NOTICE, OfflineProvider
from gateway.providers.openai_compat import OPENAI_BASE_URL, OpenAICompatProvider
from gateway.providers.retry import DEFAULT_RETRY, RetryPolicy
from gateway.providers.tiers import ModelTier, choose_tier, model_for_window, parse_tiers
from gateway.providers.tool_calls import ToolCall, ToolDefinition, ToolResult, ToolRound, ToolUse

__all__ = [
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_VERSION",
    "DEFAULT_RETRY",
    "FALLBACK_MESSAGE",
    "OFFLINE_NOTICE",
    "OFFLINE_SPEC",
    "OPENAI_BASE_URL",
    "AnthropicProvider",
    "Completion",
    "FailureReason",
    "ModelOutcome",
    "ModelProvider",
    "ModelTier",
    "OfflineProvider",
    "OnText",
    "OpenAICompatProvider",
    "ProviderConfigError",
    "ProviderError",
    "ProviderSpec",
    "RetryPolicy",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "ToolRound",
    "ToolUse",
    "Usage",
    "answer_or_fallback",
    "choose_tier",
    "make_provider",
    "model_for_window",
    "parse_spec",
    "parse_tiers",
]
