"""The caller's ``on_text`` as the providers call it.

Showing the text as it grows is a courtesy to the customer; the answer itself matters more. So
a callback that raises is logged once and not called again for that model call, which goes on
to finish and return its `Completion`.
"""

from __future__ import annotations

import logging

from gateway.providers.base import OnText

__all__ = ["TextListener"]

log = logging.getLogger("relaydesk.providers")


class TextListener:
    """Forwards the text so far to ``on_text`` (nothing when it is None) until it raises once."""

    def __init__(self, on_text: OnText | None, *, provider: str, model: str) -> None:
        self._on_text = on_text
        self._provider = provider
        self._model = model

    async def __call__(self, text: str) -> None:
        on_text = self._on_text
        if on_text is None:
            return
        try:
            await on_text(text)
        except Exception:
            self._on_text = None
            log.warning(
                "on_text callback failed; not called again for this model call",
                exc_info=True,
                extra={"fields": {"provider": self._provider, "model": self._model}},
            )
