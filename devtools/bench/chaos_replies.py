"""Which inbound message each create at the local Twilio API answers, for the chaos checks.

A create is mapped to (inbound MessageSid, part) by the first of these that names one of the
run's messages:

1. its ``Body``: every message of the load starts with ``[<its MessageSid>]``, and the reply
   quotes it — the offline model quotes the customer's message, the local slow model the
   ``[reference]`` at its start. This reads only what Twilio received, independent of the
   gateway's ids and bookkeeping, so a reply sent twice is seen twice even when the gateway
   recorded only one of the sends (or none).
2. its ``StatusCallback`` URL: the gateway names the reply it sends there
   (``?reply=<turn>.<reply>.<part>``, `channels.base.SendReference`); the turn leads to its
   inbound message (a fallback message after a model failure quotes nothing).
3. its Message SID in ``outbound_messages``, which links it to the turn.

The part of the reply comes from the callback's reference (else the recorded send, else 0): a
long reply is several creates, one per part, and only a part sent twice is a reply answered
twice.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

from channels.base import SendReference
from channels.twilio_whatsapp import REFERENCE_PARAM
from devtools.bench.chaos_records import Create, Snapshot

_QUOTED_SID = re.compile(r"\[(SM[A-Za-z0-9]+)\]")


@dataclass(frozen=True, slots=True)
class ReplyKey:
    """The inbound message a create answers, and which part of the reply it is."""

    sid: str
    part: int


def tag(sid: str) -> str:
    """How a message of the load starts, so its reply can quote it."""
    return f"[{sid}]"


def _callback_reference(callback: str) -> tuple[SendReference, int] | None:
    named = parse_qs(urlsplit(callback).query).get(REFERENCE_PARAM, [])
    return SendReference.read(named[0]) if len(named) == 1 else None


class ReplyMap:
    """Maps creates to `ReplyKey`s against one run's messages and rows."""

    def __init__(self, ours: frozenset[str], snapshot: Snapshot) -> None:
        self._ours = ours
        sid_of_message = {m.id: m.sid for m in snapshot.messages}
        self._sid_of_turn: Mapping[int, str] = {
            t.id: sid_of_message[t.inbound_message_id]
            for t in snapshot.turns
            if t.inbound_message_id in sid_of_message
        }
        self._sent = {o.sid: o for o in snapshot.outbound}

    def key(self, create: Create) -> ReplyKey | None:
        """The message and part `create` answers, or None when nothing names one of ours."""
        reference = _callback_reference(create.callback)
        recorded = self._sent.get(create.sid)
        part = reference[1] if reference else recorded.part if recorded else 0
        quoted = _QUOTED_SID.search(create.body)
        if quoted is not None and quoted.group(1) in self._ours:
            return ReplyKey(quoted.group(1), part)
        turn_id = reference[0].turn_id if reference else recorded.turn_id if recorded else None
        sid = self._sid_of_turn.get(turn_id) if turn_id is not None else None
        return ReplyKey(sid, part) if sid in self._ours and sid is not None else None

    def keys(self, creates: Sequence[Create]) -> tuple[ReplyKey | None, ...]:
        return tuple(self.key(create) for create in creates)


def first_replies(
    creates: Sequence[Create], keys: Sequence[ReplyKey | None]
) -> dict[ReplyKey, Create]:
    """The first create of each reply part (a part sent again later is left out)."""
    first: dict[ReplyKey, Create] = {}
    for create, key in sorted(zip(creates, keys, strict=True), key=lambda pair: pair[0].at):
        if key is not None and key not in first:
            first[key] = create
    return first
