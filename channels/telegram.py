"""Telegram through the Bot API: secret-token webhooks in, python-telegram-bot's `Bot` out.

`verify` compares `X-Telegram-Bot-Api-Secret-Token` with the secret given to `setWebhook` in
constant time (Telegram signs nothing; that shared secret is the only proof). `parse` is
`channels.telegram_updates.read_update`: a customer's message in a private chat, or nothing
for every other update (acknowledged so that Telegram does not deliver it again, never
stored). `send` goes through `telegram.Bot`, split at Telegram's length limit, waiting out
flood control when Telegram asks for it.
"""

from __future__ import annotations

import asyncio
import hmac
import random
import re
import warnings
from collections.abc import Callable
from datetime import datetime, timedelta

from telegram import Bot, Message
from telegram.error import (
    BadRequest,
    ChatMigrated,
    Conflict,
    Forbidden,
    InvalidToken,
    NetworkError,
    RetryAfter,
    TelegramError,
)
from telegram.warnings import PTBDeprecationWarning

from channels.base import (
    InboundMessage,
    Media,
    OutboundMessage,
    RawRequest,
    SendFailed,
    SendResult,
    SignatureInvalid,
)
from channels.telegram_updates import (
    CONTACT_PLACEHOLDER,
    VOICE_PLACEHOLDER,
    Ignored,
    ignored_update,
    read_update,
    with_old_schema_defaults,
)

__all__ = [
    "ALLOWED_UPDATES",
    "CONTACT_PLACEHOLDER",
    "MAX_TEXT_UNITS",
    "SECRET_HEADER",
    "SECRET_TOKEN",
    "VOICE_PLACEHOLDER",
    "Ignored",
    "TelegramChannel",
    "ignored_update",
    "make_bot",
    "read_update",
    "retry_after_s",
    "split_text",
    "with_old_schema_defaults",
]

SECRET_HEADER = "X-Telegram-Bot-Api-Secret-Token"
DEFAULT_API_BASE = "https://api.telegram.org"
# The update kinds `setWebhook` asks for: the ones `parse` turns into messages.
ALLOWED_UPDATES = ("message", "edited_message", "callback_query")
# setWebhook's secret_token: 1-256 characters, letters, digits, "_" and "-".
SECRET_TOKEN = re.compile(r"^[A-Za-z0-9_-]{1,256}$")
# sendMessage takes at most 4096 characters, counted in UTF-16 code units.
MAX_TEXT_UNITS = 4096


def _units(char: str) -> int:
    return 2 if ord(char) > 0xFFFF else 1


def _fitting(text: str, limit: int) -> int:
    """How many characters of `text` fit in `limit` UTF-16 code units."""
    used = 0
    for index, char in enumerate(text):
        used += _units(char)
        if used > limit:
            return index
    return len(text)


def split_text(text: str, limit: int = MAX_TEXT_UNITS) -> list[str]:
    """Parts of at most `limit` UTF-16 units, cut at a paragraph, line, sentence or word
    boundary in the second half of the part when there is one; blank text has no parts."""
    if limit < 2:
        raise ValueError("limit must hold at least one character of any kind (2 units)")
    parts: list[str] = []
    rest = text.strip()
    while rest:
        fits = _fitting(rest, limit)
        cut = fits
        if fits < len(rest):
            for separator in ("\n\n", "\n", ". ", " "):
                at = rest.rfind(separator, 0, fits)
                if at > fits // 2:
                    cut = at + 1 if separator == ". " else at
                    break
        parts.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return parts


def make_bot(token: str, api_base: str | None = None) -> Bot:
    """A `Bot` on the Bot API at `api_base` (default Telegram's); not yet initialized."""
    base = (api_base or DEFAULT_API_BASE).rstrip("/")
    return Bot(token, base_url=f"{base}/bot", base_file_url=f"{base}/file/bot")


def retry_after_s(exc: RetryAfter) -> float:
    """The wait Telegram asked for, in seconds (PTB is moving it from int to timedelta)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PTBDeprecationWarning)
        value = exc.retry_after
    return value.total_seconds() if isinstance(value, timedelta) else float(value)


class TelegramChannel:
    name = "telegram"

    def __init__(
        self,
        *,
        token: str | None,
        webhook_secret: str | None,
        api_base: str | None,
        clock: Callable[[], datetime],
        attempts: int = 4,
        base_delay_s: float = 0.5,
        max_retry_after_s: float = 30.0,
    ) -> None:
        self._token = token
        self._secret = webhook_secret
        self._api_base = api_base
        self._clock = clock
        self._attempts = attempts
        self._base_delay_s = base_delay_s
        self._max_retry_after_s = max_retry_after_s
        self._bot: Bot | None = None
        self._starting = asyncio.Lock()

    # Inbound

    def verify(self, request: RawRequest) -> None:
        if not self._secret:
            raise SignatureInvalid("TELEGRAM_WEBHOOK_SECRET is not configured", status=403)
        given = request.header(SECRET_HEADER)
        if given is None:
            raise SignatureInvalid(f"missing {SECRET_HEADER}")
        if not hmac.compare_digest(
            given.encode("utf-8", "replace"), self._secret.encode("utf-8", "replace")
        ):
            raise SignatureInvalid(f"{SECRET_HEADER} does not match")

    def parse(self, request: RawRequest) -> tuple[InboundMessage, ...]:
        result = read_update(request.body, self._clock())
        return () if isinstance(result, Ignored) else (result,)

    # Outbound

    def _scrub(self, exc: BaseException) -> str:
        # PTB puts the token into some messages (the URL, an InvalidToken): never store it.
        text = str(exc) or type(exc).__name__
        return text.replace(self._token, "<token>") if self._token else text

    async def _ready(self) -> Bot:
        if self._bot is not None:
            return self._bot
        if not self._token:
            raise SendFailed("TELEGRAM_BOT_TOKEN is not configured", retryable=False)
        async with self._starting:
            if self._bot is None:
                bot = make_bot(self._token, self._api_base)
                try:
                    await bot.initialize()
                except TelegramError as exc:
                    await bot.shutdown()
                    retryable = isinstance(exc, NetworkError | RetryAfter) and not isinstance(
                        exc, BadRequest
                    )
                    reason = "the bot token was rejected" if isinstance(exc, InvalidToken) else ""
                    raise SendFailed(
                        f"Telegram bot not ready: {reason or self._scrub(exc)}",
                        retryable=retryable,
                    ) from exc
                self._bot = bot
        return self._bot

    async def fetch_media(self, media: Media) -> tuple[bytes, str]:
        """Download a file a customer sent (`telegram:file:<file_id>`)."""
        prefix = "telegram:file:"
        if not media.url.startswith(prefix):
            raise SendFailed(f"not a Telegram file: {media.url}", retryable=False)
        bot = await self._ready()
        try:
            file = await bot.get_file(media.url.removeprefix(prefix))
            data = await file.download_as_bytearray()
        except TelegramError as exc:
            raise SendFailed(
                f"Telegram file not fetched: {self._scrub(exc)}", retryable=True
            ) from exc
        return bytes(data), media.content_type or "audio/ogg"

    async def send(self, message: OutboundMessage) -> SendResult:
        """Send the text in order, one `sendMessage` per part; the ids are `chat:message`.

        A part that timed out may still have reached the chat: a retry can repeat it once
        (delivery is at least once, like Telegram's own webhooks).
        """
        try:
            chat_id = int(message.recipient)
        except ValueError as exc:
            raise SendFailed("recipient is not a Telegram chat id", retryable=False) from exc
        parts = split_text(message.text)
        if not parts:
            return SendResult(provider_message_ids=())
        bot = await self._ready()
        ids = []
        for part in parts:
            sent = await self._send_part(bot, chat_id, part)
            ids.append(f"{sent.chat.id}:{sent.message_id}")
        return SendResult(provider_message_ids=tuple(ids))

    async def _send_part(self, bot: Bot, chat_id: int, text: str) -> Message:
        for attempt in range(1, self._attempts + 1):
            try:
                return await bot.send_message(chat_id=chat_id, text=text)
            except RetryAfter as exc:
                wait = retry_after_s(exc)
                if wait > self._max_retry_after_s or attempt == self._attempts:
                    raise SendFailed(
                        f"Telegram flood control: retry in {wait:g} s",
                        retryable=True,
                        retry_after_s=wait,
                    ) from exc
                await asyncio.sleep(wait)
                continue
            except (Forbidden, BadRequest, InvalidToken, ChatMigrated, Conflict) as exc:
                # BadRequest is a NetworkError subclass in PTB: refused, not unreachable.
                raise SendFailed(
                    f"Telegram refused the message: {self._scrub(exc)}", retryable=False
                ) from exc
            except NetworkError as exc:  # TimedOut included
                if attempt == self._attempts:
                    raise SendFailed(
                        f"Telegram unreachable: {self._scrub(exc)}", retryable=True
                    ) from exc
            except TelegramError as exc:
                raise SendFailed(f"Telegram error: {self._scrub(exc)}", retryable=False) from exc
            delay = min(8.0, self._base_delay_s * 2 ** (attempt - 1))
            await asyncio.sleep(random.uniform(0, delay))
        raise SendFailed("unreachable", retryable=True)  # the loop always returns or raises

    async def close(self) -> None:
        bot, self._bot = self._bot, None
        if bot is not None:
            await bot.shutdown()
