"""Reading web chat input that is not the channel's own message body: websocket frames, the
hello's fields and the `after` cursor (the protocol is in `gateway/webchat/routes.py`); and
the attachments and cited documents a message frame carries out (`media_items`,
`citation_items`).

Every malformed input raises `PayloadInvalid`, `json.JSONDecodeError` or `BadRequest`, the
errors the socket answers with an error frame and keeps going.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from channels.base import Media, PayloadInvalid, SourceLink, unstorable
from channels.webchat import visitor_id_of
from gateway.http.errors import BadRequest
from identity import decimal_id

# Who wrote a message, as its frame's `author` says.
CUSTOMER = "customer"
BOT = "bot"
OPERATOR = "operator"


@dataclass(frozen=True, slots=True)
class Author:
    """A message's writer: the visitor, the bot, or an operator (`name`: their account's
    name, the one the widget shows on the reply)."""

    kind: str
    name: str | None = None

    @classmethod
    def of(cls, role: str, operator: str | None) -> Author:
        if role == "user":
            return cls(CUSTOMER)
        return cls(OPERATOR, operator) if operator else cls(BOT)


@dataclass(frozen=True, slots=True)
class Hello:
    visitor_id: str
    identity_token: str | None
    after: int | None


def read_cursor(raw: str | None) -> int | None:
    if raw in (None, "", "null"):
        return None
    cursor = decimal_id(raw)
    if cursor is None:
        raise BadRequest("after must be a message id", code="invalid_cursor")
    return cursor


def read_frame(text: str) -> dict[str, Any]:
    """A text frame as a JSON object."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise
    except (ValueError, RecursionError) as exc:  # a 5000-digit number; "[[[[…" nested deep
        raise PayloadInvalid(f"a frame is not usable JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise PayloadInvalid("a frame must be a JSON object")
    return data


def read_hello(data: dict[str, Any]) -> Hello:
    if data.get("type") != "hello":
        raise PayloadInvalid("the first frame must be a hello")
    visitor = visitor_id_of(data)
    raw_token = data.get("identity_token")
    token = raw_token if isinstance(raw_token, str) and raw_token else None
    check_token(token)
    after = data.get("after")
    return Hello(visitor, token, read_cursor(str(after) if after is not None else None))


def check_token(token: str | None) -> None:
    """A compact JWS is ASCII. Anything else (a lone surrogate from JSON, or the
    surrogate-escaped bytes of a non-UTF-8 header) would break the token check later."""
    if token is not None and not token.isascii():
        raise PayloadInvalid("identity_token is not a token")


def check_storable(text: str) -> None:
    """The message text can be stored (the ids are pattern-checked ASCII already)."""
    why = unstorable(text)
    if why:
        raise PayloadInvalid(f"text {why}")


def media_items(media: Sequence[Media]) -> list[dict[str, str | None]]:
    """A message frame's `media`: each attachment's URL, type, caption and file name (the
    widget shows them as links)."""
    return [
        {
            "url": m.url,
            "content_type": m.content_type,
            "caption": m.caption,
            "filename": m.filename,
        }
        for m in media
    ]


def citation_items(citations: Sequence[SourceLink]) -> list[dict[str, int | str | None]]:
    """A message frame's `citations`: the number of each document its text's `[n]` cite, with
    its title and URL (null for a document without one), which the widget shows as links."""
    return [{"number": link.number, "title": link.title, "url": link.url} for link in citations]
