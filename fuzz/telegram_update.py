"""Telegram webhook bodies through `read_update` and `ignored_update`: a message, an
`Ignored`, `PayloadInvalid`, or a crash.

    .venv/bin/python fuzz/telegram_update.py -runs=100000
"""

from __future__ import annotations

import json
from datetime import UTC, datetime

import atheris
from seeds import TELEGRAM
from structured import document, keys_of, run  # first: puts the repository on sys.path

with atheris.instrument_imports(include=["channels"]):
    import channels.telegram_updates as updates
    from channels.base import InboundMessage, PayloadInvalid


NOW = datetime(2026, 11, 29, tzinfo=UTC)
KEYS = keys_of(updates) + [
    "update_id", "message", "edited_message", "callback_query", "message_id", "from", "chat",
    "id", "is_bot", "first_name", "type", "private", "date", "text", "caption", "voice",
    "file_id", "file_unique_id", "duration", "contact", "phone_number", "user_id", "photo",
    "width", "height", "location", "latitude", "longitude", "data", "document", "sticker",
]  # fmt: skip


def body_of(fdp: atheris.FuzzedDataProvider) -> bytes:
    if fdp.ConsumeIntInRange(0, 3) == 0:
        return fdp.ConsumeBytes(fdp.remaining_bytes())
    return json.dumps(document(fdp, TELEGRAM, KEYS)).encode()


def test(data: bytes) -> None:
    body = body_of(atheris.FuzzedDataProvider(data))
    try:
        result = updates.read_update(body, NOW)
    except PayloadInvalid:
        result = None
    if isinstance(result, InboundMessage):
        assert result.channel == "telegram" and result.sender
    updates.ignored_update(body)


if __name__ == "__main__":
    run(test)
