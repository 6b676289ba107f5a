"""What accepting a message answers, and the keys that order the work after it."""

from __future__ import annotations

from dataclasses import dataclass

from gateway.http.errors import Conflict
from gateway.storage.records import MessageRecord


@dataclass(frozen=True, slots=True)
class Accepted:
    message_id: int
    customer_id: str
    duplicate: bool
    conversation_key: str
    closed_episode_id: str | None = None  # an idle episode this message closed


def conversation_key(customer_id: str, channel: str) -> str:
    """One customer on one channel: its turns are answered one at a time, in order."""
    return f"{customer_id}:{channel}"


def thread_key(channel: str, sender: str) -> str:
    """The chat thread of one sender on one channel: its messages keep their arrival order."""
    return f"{channel}:{sender}"


def already_stored(found: MessageRecord) -> Accepted:
    """A replay: the message stored before answers for it."""
    key = conversation_key(found.customer_id, found.channel)
    return Accepted(found.id, found.customer_id, True, key)


class ThreadBlocked(Exception):
    """Not stored: an earlier message of the same chat thread, stored in the same lot, failed;
    this one waits so the thread keeps its order (the caller retries it later)."""


class MessageErased(Conflict):
    """Not stored: a message with this channel and provider id was erased, and its tombstone
    has not expired. A provider's late retry is acknowledged and dropped (the inbox deletes
    its row); a client posting it again gets 409 `message_erased`."""

    code = "message_erased"
