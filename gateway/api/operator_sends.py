"""What the endpoints that send as an operator share: the HTTP answers for a send that cannot
be made, the attachments vetted before anything is stored, and the conversation id path
parameter of their documentation."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from channels.base import Media
from gateway.api.operator_bodies import AttachmentIn
from gateway.http.errors import Conflict, NotFound, Unprocessable
from gateway.turns.handoff import ConversationNotFound
from gateway.turns.operator_messages import NoRecipient, NotHeld
from outbound import FetchFailed, FetchRefused, SafeFetcher


@contextmanager
def operator_send_answers() -> Iterator[None]:
    """404 for a conversation that does not exist, 409 for one the actor does not hold or whose
    customer never wrote (nowhere to send)."""
    try:
        yield
    except ConversationNotFound as exc:
        raise NotFound("no such conversation") from exc
    except NotHeld as exc:
        raise Conflict(str(exc), code="not_held") from exc
    except NoRecipient as exc:
        raise Conflict(str(exc), code="no_recipient") from exc


async def vetted_media(fetcher: SafeFetcher, attachments: Sequence[AttachmentIn]) -> list[Media]:
    """The attachments as media, or 422 `attachment_refused` naming the first whose URL no
    fetch may reach (an internal address: a channel that downloads it before sending would
    fetch it from inside). A host that does not resolve now is left to the send."""
    for index, attachment in enumerate(attachments):
        try:
            await fetcher.vet(str(attachment.url))
        except FetchRefused as exc:
            raise Unprocessable(f"media[{index}]: {exc}", code="attachment_refused") from exc
        except FetchFailed:
            continue
    return [attachment.media() for attachment in attachments]


def conversation_path() -> list[dict[str, Any]]:
    return [
        {"name": "conversation_id", "in": "path", "required": True, "schema": {"type": "string"}}
    ]
