"""Stand-ins for the model (a `ModelProvider`): one that answers a fixed text, one that fails."""

from __future__ import annotations

from collections.abc import Sequence

from context import ChatMessage
from gateway.providers.base import Completion, OnText, ProviderError, Usage
from gateway.providers.offline import OfflineProvider
from gateway.providers.pool import ProviderPool
from gateway.providers.tool_calls import ToolUse


class ScriptedModel:
    """Answers `text` to every window, or fails for good when `text` is None."""

    name = "scripted"
    model = "scripted-1"

    def __init__(self, text: str | None) -> None:
        self.text = text
        self.windows: list[Sequence[ChatMessage]] = []

    async def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        max_tokens: int,
        on_text: OnText | None = None,
        tools: ToolUse | None = None,
    ) -> Completion:
        self.windows.append(messages)
        if self.text is None:
            raise ProviderError(
                provider=self.name, model=self.model, reason="server_error", attempts=3, status=503
            )
        return Completion(
            text=self.text,
            model="scripted-1-2026",
            provider=self.name,
            usage=Usage(prompt_tokens=120, completion_tokens=7, cached_tokens=100),
            attempts=2,
        )


def pool_of(model: ScriptedModel | OfflineProvider) -> ProviderPool:
    return ProviderPool(model, lambda spec: model)
