"""Twilio's Messages API on a local server: the part the twilio SDK's ``messages.create`` uses,
and Messaging v2's Typing Indicators (``messaging.v2.typing_indicator.create``), so a gateway
whose ``TWILIO_API_BASE`` points here sends its WhatsApp replies and typing indicators over HTTP
with the real SDK, as in production. The benchmarks and the tests use this one implementation.

With ``auth_token`` set it also calls back as Twilio does: each accepted create that named a
``StatusCallback`` URL gets a signed ``sent`` status posted to that URL (query included, which
Twilio signs too), so a gateway's status callbacks run for real."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from aiohttp import web
from twilio.request_validator import RequestValidator

from devtools.loopback import serving_on_loopback

MESSAGES_PATH = "/2010-04-01/Accounts/{sid}/Messages.json"
TYPING_PATH = "/v2/Indicators/Typing.json"

# Called with the time (`time.perf_counter`) the create arrived and its form fields.
OnCreated = Callable[[float, Mapping[str, str]], None]


def created_message(account: str, form: Mapping[str, Any], sid: str | None = None) -> web.Response:
    """201 with the Message resource Twilio returns for ``POST …/Messages.json``."""
    sid = sid or "SM" + uuid.uuid4().hex
    return web.json_response(
        {
            "sid": sid,
            "account_sid": account,
            "to": form.get("To"),
            "from": form.get("From"),
            "body": form.get("Body"),
            "status": "queued",
            "num_segments": "1",
            "direction": "outbound-api",
            "api_version": "2010-04-01",
            "uri": f"/2010-04-01/Accounts/{account}/Messages/{sid}.json",
        },
        status=201,
    )


@dataclass
class LocalTwilio:
    """``created`` holds the form fields of every accepted create, in order, and ``sids`` the
    Message SID each was given, in the same order; ``attempts``
    counts every create request, refused ones included; ``fail_next`` lists HTTP statuses to
    answer first, one per request (e.g. ``[429, 503]``), or (status, Twilio error code) pairs
    (``(400, 63016)``: outside WhatsApp's 24-hour window); ``on_created`` is told of each
    accepted create, with the time it arrived (before its body was read).

    ``typing`` holds the form fields (``channel``, ``messageId``) of every typing indicator
    request, refused ones included, in order; ``fail_typing_next`` lists HTTP statuses to
    answer the next ones with.

    ``auth_token``: call back as Twilio does (see the module docstring); ``callbacks`` holds
    (URL, HTTP status, or None when unreachable) of each callback made."""

    created: list[dict[str, str]] = field(default_factory=list)
    sids: list[str] = field(default_factory=list)
    attempts: int = 0
    fail_next: list[int | tuple[int, int]] = field(default_factory=list)
    on_created: OnCreated | None = None
    typing: list[dict[str, str]] = field(default_factory=list)
    fail_typing_next: list[int] = field(default_factory=list)
    auth_token: str | None = None
    callbacks: list[tuple[str, int | None]] = field(default_factory=list)
    _calling: set[asyncio.Task[None]] = field(default_factory=set)
    _http: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        """The Messages API, the typing indicator, and ``GET /`` answering 200 (a health
        check)."""
        app = web.Application()
        app.router.add_post(MESSAGES_PATH, self._create)
        app.router.add_post(TYPING_PATH, self._typing)
        app.router.add_get("/", _alive)
        return app

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[str]:
        """`app` on a free loopback port; yields the API base URL (for ``TWILIO_API_BASE``)."""
        try:
            async with serving_on_loopback(self.app()) as root:
                yield root
        finally:
            await self.close()

    async def close(self) -> None:
        """Wait for the callbacks under way, then let their connections go."""
        if self._calling:
            await asyncio.gather(*self._calling, return_exceptions=True)
        if self._http is not None:
            await self._http.close()
            self._http = None

    async def _create(self, request: web.Request) -> web.Response:
        arrived = time.perf_counter()  # a reply's latency ends when it reaches Twilio
        self.attempts += 1
        form = {
            key: value for key, value in (await request.post()).items() if isinstance(value, str)
        }
        if self.fail_next:
            failure = self.fail_next.pop(0)
            status, code = failure if isinstance(failure, tuple) else (failure, 20429)
            return web.json_response(
                {"code": code, "message": _REFUSALS.get(code, "Refused"), "status": status},
                status=status,
            )
        sid = "SM" + uuid.uuid4().hex
        self.created.append(form)
        self.sids.append(sid)
        if self.on_created is not None:
            self.on_created(arrived, form)
        callback = form.get("StatusCallback")
        if self.auth_token and callback:
            account = request.match_info["sid"]
            task = asyncio.create_task(self._call_back(callback, sid, account, form))
            self._calling.add(task)
            task.add_done_callback(self._calling.discard)
        return created_message(request.match_info["sid"], form, sid)

    async def _call_back(self, url: str, sid: str, account: str, form: Mapping[str, str]) -> None:
        """Twilio's status callback: the message's "sent", signed over the URL and fields."""
        assert self.auth_token is not None
        params = {
            "MessageSid": sid,
            "SmsSid": sid,
            "MessageStatus": "sent",
            "SmsStatus": "sent",
            "AccountSid": account,
            "To": form.get("To", ""),
            "From": form.get("From", ""),
            "ApiVersion": "2010-04-01",
        }
        signature = RequestValidator(self.auth_token).compute_signature(url, params)
        if self._http is None:
            self._http = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        try:
            async with self._http.post(
                url, data=params, headers={"X-Twilio-Signature": signature}
            ) as answer:
                self.callbacks.append((url, answer.status))
        except (aiohttp.ClientError, TimeoutError):
            self.callbacks.append((url, None))

    async def _typing(self, request: web.Request) -> web.Response:
        form = {
            key: value for key, value in (await request.post()).items() if isinstance(value, str)
        }
        self.typing.append(form)
        if self.fail_typing_next:
            status = self.fail_typing_next.pop(0)
            return web.json_response(
                {"code": 20001, "message": "Typing indicator refused", "status": status},
                status=status,
            )
        if form.get("channel") != "whatsapp" or not form.get("messageId"):
            return web.json_response(
                {"code": 21211, "message": "channel and messageId are required", "status": 400},
                status=400,
            )
        return web.json_response({"success": True})


_REFUSALS = {
    20429: "Too Many Requests",
    63016: "Failed to send freeform message because you are outside the allowed window.",
}


async def _alive(request: web.Request) -> web.Response:
    return web.Response(text="ok")
