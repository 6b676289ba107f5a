"""Typing signals while a reply is being written.

The channel's signal is sent at once and again every `typing_repeat_s` (Telegram's shows for
about 5 s, Twilio's for 25 s) until the reply is sent. It runs in a task of its own: a signal
never delays the model call or the reply, and a failed one is logged and not tried again (the
customer only misses the indicator).
"""

from __future__ import annotations

import asyncio
import logging

from channels.base import Channel, SendFailed, TypingSignals

log = logging.getLogger("relaydesk.typing")


class Typing:
    """The typing signal of one reply: `start` it before the model is called, `stop` it when
    the reply has been sent (or will not be)."""

    def __init__(self, adapter: Channel | None, recipient: str, reply_to: str | None) -> None:
        self._signals = adapter if isinstance(adapter, TypingSignals) else None
        self._recipient = recipient
        self._reply_to = reply_to
        self._task: asyncio.Task[None] | None = None
        self.sent = 0

    def start(self) -> None:
        if self._signals is not None and self._task is None:
            self._task = asyncio.create_task(self._keep_typing(self._signals), name="typing")

    def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            self._task = None

    async def _keep_typing(self, signals: TypingSignals) -> None:
        while True:
            try:
                await signals.typing(self._recipient, self._reply_to)
            except (SendFailed, OSError, TimeoutError) as exc:
                log.warning(
                    "typing signal failed",
                    extra={"fields": {"channel": getattr(signals, "name", "?"), "error": str(exc)}},
                )
                return
            self.sent += 1
            await asyncio.sleep(signals.typing_repeat_s)
