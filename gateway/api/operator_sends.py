"""What the endpoints that send as an operator share: the HTTP answers for a send that cannot
be made, and the conversation id path parameter of their documentation."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from gateway.http.errors import Conflict, NotFound
from gateway.turns.handoff import ConversationNotFound
from gateway.turns.operator_messages import NoRecipient, NotHeld


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


def conversation_path() -> list[dict[str, Any]]:
    return [
        {"name": "conversation_id", "in": "path", "required": True, "schema": {"type": "string"}}
    ]
