"""A local server speaking the Telegram Bot API (`POST /bot<token>/<method>`), for tests that
drive python-telegram-bot's real client code.

It records every call with its parameters as sent (PTB posts a form: scalars as text, lists
and objects as JSON text) and answers like Telegram: `getMe`, `sendMessage`, `sendPhoto` and
`sendDocument` (a file by URL), `setWebhook`. A test can queue error answers (a 429 with
`retry_after`, a 403) for the next calls of a method.
"""

from __future__ import annotations

import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

# The methods that answer with the Message they sent (a file sent by URL, or text).
SENT_MESSAGES = frozenset({"sendMessage", "sendPhoto", "sendDocument"})
BOT_USER = {"id": 4242, "is_bot": True, "first_name": "Relaydesk", "username": "relaydesk_bot"}


@dataclass(frozen=True)
class ApiCall:
    token: str
    method: str
    params: dict[str, str]


@dataclass
class FakeBotApi:
    calls: list[ApiCall] = field(default_factory=list)
    _errors: dict[str, deque[tuple[int, dict[str, Any]]]] = field(
        default_factory=lambda: defaultdict(deque)
    )
    _next_message_id: int = 100

    def fail_next(self, method: str, status: int, description: str, **parameters: Any) -> None:
        """The next call of `method` gets this error (`parameters` as Telegram's `parameters`)."""
        body: dict[str, Any] = {"ok": False, "error_code": status, "description": description}
        if parameters:
            body["parameters"] = parameters
        self._errors[method].append((status, body))

    def sent(self, method: str = "sendMessage") -> list[dict[str, str]]:
        return [call.params for call in self.calls if call.method == method]

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/bot{token}/{method}", self._call)
        return app

    async def _call(self, request: web.Request) -> web.Response:
        token, method = request.match_info["token"], request.match_info["method"]
        params = {key: str(value) for key, value in (await request.post()).items()}
        self.calls.append(ApiCall(token, method, params))
        if self._errors[method]:
            status, body = self._errors[method].popleft()
            return web.json_response(body, status=status)
        return web.json_response({"ok": True, "result": self._result(method, params)})

    def _result(self, method: str, params: dict[str, str]) -> Any:
        if method == "getMe":
            return BOT_USER
        if method in SENT_MESSAGES:
            self._next_message_id += 1
            chat_id = int(params["chat_id"])
            sent: dict[str, Any] = {
                "message_id": self._next_message_id,
                "date": int(time.time()),
                "chat": {"id": chat_id, "type": "private" if chat_id > 0 else "group"},
                "from": BOT_USER,
            }
            if method == "sendMessage":
                sent["text"] = params["text"]
            elif "caption" in params:
                sent["caption"] = params["caption"]
            return sent
        return True
