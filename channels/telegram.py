"""Telegram through the Bot API: secret-token webhooks in, python-telegram-bot's `Bot` out.

`verify` compares `X-Telegram-Bot-Api-Secret-Token` with the secret given to `setWebhook` in
constant time (Telegram signs nothing; that shared secret is the only proof). `parse` is
`channels.telegram_updates.read_update`: a customer's message in a private chat, or, for
every other update, its kind and why it is ignored (acknowledged so that Telegram does not
deliver it again, never stored). `send` goes through `telegram.Bot`, split at Telegram's
length limit (`channels.splitting`), then each attachment by its URL (`sendPhoto`,
`sendDocument`), waiting out flood control when Telegram asks for it; `typing` is the chat's
"typing…" action; `fetch_media` downloads a file the customer sent (`MediaFetch`).
"""

from __future__ import annotations

import asyncio
import hmac
import mimetypes
import random
import re
import warnings
from collections.abc import Awaitable, Callable
from datetime import datetime, timedelta
from functools import partial
from urllib.parse import urlsplit

from telegram import Bot, InlineKeyboardButton, InlineKeyboardMarkup, Message
from telegram.constants import ChatAction
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
    Choice,
    Media,
    OutboundMessage,
    Parsed,
    RawRequest,
    SendFailed,
    SendResult,
    SignatureInvalid,
)
from channels.base import (
    Ignored as IgnoredItem,
)
from channels.splitting import split_message, utf16_units
from channels.telegram_updates import (
    CONTACT_PLACEHOLDER,
    VOICE_PLACEHOLDER,
    Ignored,
    ignored_update,
    read_update,
    with_old_schema_defaults,
)
from outbound import FetchKind

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
# A file's caption holds at most 1024 characters.
MAX_CAPTION_CHARS = 1024
# What `sendPhoto` takes; any other file goes as a document.
PHOTO_TYPES = frozenset({"image/jpeg", "image/png", "image/webp"})
# A chat action shows for 5 s at most (less when a message arrives): renewed before that.
TYPING_REPEAT_S = 4.0


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
    typing_repeat_s = TYPING_REPEAT_S

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
            raise SignatureInvalid(
                "TELEGRAM_WEBHOOK_SECRET is not configured", reason="channel_not_configured"
            )
        given = request.header(SECRET_HEADER)
        if given is None:
            raise SignatureInvalid(f"missing {SECRET_HEADER}", reason="bad_secret")
        if not hmac.compare_digest(
            given.encode("utf-8", "replace"), self._secret.encode("utf-8", "replace")
        ):
            raise SignatureInvalid(f"{SECRET_HEADER} does not match", reason="bad_secret")

    def parse(self, request: RawRequest) -> Parsed:
        result = read_update(request.body, self._clock())
        if isinstance(result, Ignored):
            return Parsed(ignored=(IgnoredItem(result.update_type, result.reason),))
        return Parsed(messages=(result,))

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

    async def fetch_media(self, media: Media, kind: FetchKind) -> tuple[bytes, str]:
        """Download a file a customer sent (`telegram:file:<file_id>`), from the Bot API's own
        file host; a file larger than `kind` allows is not downloaded."""
        prefix = "telegram:file:"
        if not media.url.startswith(prefix):
            raise SendFailed(f"not a Telegram file: {media.url}", retryable=False)
        bot = await self._ready()
        try:
            file = await bot.get_file(media.url.removeprefix(prefix))
            if file.file_size is not None and file.file_size > kind.max_bytes:
                raise SendFailed(
                    f"Telegram file of {file.file_size} bytes, more than {kind.max_bytes}",
                    retryable=False,
                )
            data = await file.download_as_bytearray()
        except TelegramError as exc:
            raise SendFailed(
                f"Telegram file not fetched: {self._scrub(exc)}", retryable=True
            ) from exc
        return bytes(data), media.content_type or "audio/ogg"

    async def send(self, message: OutboundMessage) -> SendResult:
        """Send the text in order, one `sendMessage` per part, then one `sendPhoto` or
        `sendDocument` per attachment; the ids are `chat:message`.

        A part that timed out may still have reached the chat: a retry can repeat it once
        (delivery is at least once, like Telegram's own webhooks).
        """
        chat_id = _chat_id(message.recipient)
        parts = split_message(message.text, MAX_TEXT_UNITS, utf16_units)
        if not parts and not message.media:
            return SendResult(provider_message_ids=())
        bot = await self._ready()
        ids = []
        keyboard = _inline_keyboard(message.choices)
        for index, part in enumerate(parts):
            # The buttons go with the last part, under the question they answer.
            markup = keyboard if index == len(parts) - 1 else None
            sent = await self._retrying(
                partial(bot.send_message, chat_id=chat_id, text=part, reply_markup=markup)
            )
            ids.append(f"{sent.chat.id}:{sent.message_id}")
        for item in message.media:
            sent = await self._retrying(_attachment_send(bot, chat_id, item))
            ids.append(f"{sent.chat.id}:{sent.message_id}")
        return SendResult(provider_message_ids=tuple(ids))

    async def typing(self, recipient: str, reply_to: str | None) -> None:
        """The chat's "typing…" action (`sendChatAction`), one attempt; `reply_to` is not
        needed: the action belongs to the chat."""
        chat_id = _chat_id(recipient)
        bot = await self._ready()
        try:
            await bot.send_chat_action(chat_id=chat_id, action=ChatAction.TYPING)
        except TelegramError as exc:
            raise self._failed(exc, "the typing action") from exc

    async def _retrying(self, call: Callable[[], Awaitable[Message]]) -> Message:
        for attempt in range(1, self._attempts + 1):
            try:
                return await call()
            except RetryAfter as exc:
                wait = retry_after_s(exc)
                if wait > self._max_retry_after_s or attempt == self._attempts:
                    raise self._failed(exc, "the message") from exc
                await asyncio.sleep(wait)
                continue
            except TelegramError as exc:
                failed = self._failed(exc, "the message")
                if not failed.retryable or attempt == self._attempts:
                    raise failed from exc
            delay = min(8.0, self._base_delay_s * 2 ** (attempt - 1))
            await asyncio.sleep(random.uniform(0, delay))
        raise SendFailed("unreachable", retryable=True)  # the loop always returns or raises

    def _failed(self, exc: TelegramError, what: str) -> SendFailed:
        """What a Bot API error means for the caller: flood control and an unreachable API
        are retryable, a refusal is not."""
        if isinstance(exc, RetryAfter):
            wait = retry_after_s(exc)
            return SendFailed(
                f"Telegram flood control: retry in {wait:g} s", retryable=True, retry_after_s=wait
            )
        if isinstance(exc, Forbidden | BadRequest | InvalidToken | ChatMigrated | Conflict):
            # BadRequest is a NetworkError subclass in PTB: refused, not unreachable.
            return SendFailed(f"Telegram refused {what}: {self._scrub(exc)}", retryable=False)
        if isinstance(exc, NetworkError):  # TimedOut included
            return SendFailed(f"Telegram unreachable: {self._scrub(exc)}", retryable=True)
        return SendFailed(f"Telegram error: {self._scrub(exc)}", retryable=False)

    async def close(self) -> None:
        bot, self._bot = self._bot, None
        if bot is not None:
            await bot.shutdown()


def _attachment_send(bot: Bot, chat_id: int, media: Media) -> Callable[[], Awaitable[Message]]:
    """The Bot API call sending `media` by its URL (Telegram fetches it): a photo for a
    JPEG, PNG or WebP image, a document for anything else."""
    content_type = media.content_type or mimetypes.guess_type(urlsplit(media.url).path)[0] or ""
    caption = media.caption[:MAX_CAPTION_CHARS] if media.caption else None
    if content_type.split(";")[0].strip().lower() in PHOTO_TYPES:
        return partial(bot.send_photo, chat_id=chat_id, photo=media.url, caption=caption)
    return partial(bot.send_document, chat_id=chat_id, document=media.url, caption=caption)


def _inline_keyboard(choices: tuple[Choice, ...]) -> InlineKeyboardMarkup | None:
    """One row of buttons whose callback data is each choice's payload (None without)."""
    if not choices:
        return None
    return InlineKeyboardMarkup(
        [[InlineKeyboardButton(choice.title, callback_data=choice.payload) for choice in choices]]
    )


def _chat_id(recipient: str) -> int:
    try:
        return int(recipient)
    except ValueError as exc:
        raise SendFailed("recipient is not a Telegram chat id", retryable=False) from exc
