"""The chaos run's verdict, computed from what it recorded (`Recorded`) alone: nothing lost,
nothing stored or answered twice, every message answered, in order, every send recorded.

- lost: an acknowledged MessageSid with neither a stored message nor an inbox row;
- duplicated: a MessageSid stored as more than one message;
- unanswered: a stored message of the load without a reply at Twilio after the settle — a
  turn marked ``batched`` counts as answered when a later turn of its conversation was (the
  gateway answers a paced customer's waiting messages together, in the newest one's reply);
- answered twice: a message one of whose reply parts reached Twilio more than once;
- unrecorded sends: a create at Twilio whose Message SID is in no ``outbound_messages`` row;
- order inversions: per customer, a reply reaching Twilio after the reply to a message the
  gateway stored later (stored order: the ``messages`` row ids, the order the gateway promises
  to answer a conversation in; each reply's first create, its first part);
- pending turns, inbox rows left and set aside after the settle.

How a create is tied to its message is `devtools.bench.chaos_replies`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass

from devtools.bench.chaos_records import Create, Recorded, Snapshot, Turn
from devtools.bench.chaos_replies import ReplyKey, ReplyMap, first_replies

# The checks that must all be 0 after a run, by their name in the report.
MUST_BE_ZERO = (
    "lost",
    "duplicated",
    "unanswered",
    "answered_twice",
    "unrecorded_sends",
    "order_inversions",
    "pending_turns",
)


@dataclass(frozen=True, slots=True)
class Checks:
    offered: int  # distinct messages the load sent
    acknowledged: int  # of them, answered 200 at least once
    never_acknowledged: int  # still without a 200 when the load gave up
    lost: int
    duplicated: int
    unanswered: int
    answered_twice: int
    unrecorded_sends: int
    order_inversions: int
    pending_turns: int
    inbox_left: int
    set_aside: int  # of the inbox rows left, those given up on
    creates: int  # messages Twilio accepted from the gateway
    unmatched_creates: int  # creates naming none of the load's messages

    def failures(self) -> dict[str, int]:
        """The checks of `MUST_BE_ZERO` that are not, with their counts."""
        figures = asdict(self)
        return {name: figures[name] for name in MUST_BE_ZERO if figures[name]}


def check(recorded: Recorded) -> Checks:
    snapshot = recorded.snapshot
    ours = frozenset(message.sid for message in recorded.offered)
    keys = ReplyMap(ours, snapshot).keys(recorded.creates)
    stored = Counter(message.sid for message in snapshot.messages)
    waiting = {row.sid for row in snapshot.inbox}
    acked = [message for message in recorded.offered if message.acked_at is not None]
    per_part = Counter(key for key in keys if key is not None)
    recorded_sends = {send.sid for send in snapshot.outbound}
    return Checks(
        offered=len(recorded.offered),
        acknowledged=len(acked),
        never_acknowledged=len(recorded.offered) - len(acked),
        lost=sum(m.sid not in stored and m.sid not in waiting for m in acked),
        duplicated=sum(count > 1 for count in stored.values()),
        unanswered=unanswered(snapshot, {key.sid for key in keys if key is not None}, ours),
        answered_twice=len({key.sid for key, count in per_part.items() if count > 1}),
        unrecorded_sends=sum(create.sid not in recorded_sends for create in recorded.creates),
        order_inversions=order_inversions(recorded.creates, keys, snapshot),
        pending_turns=sum(turn.status == "pending" for turn in snapshot.turns),
        inbox_left=len(snapshot.inbox),
        set_aside=sum(row.set_aside for row in snapshot.inbox),
        creates=len(recorded.creates),
        unmatched_creates=sum(key is None for key in keys),
    )


def unanswered(snapshot: Snapshot, answered: set[str], ours: frozenset[str]) -> int:
    """Stored messages of ours with no reply at Twilio (see the module docstring)."""
    sid_of = {message.id: message.sid for message in snapshot.messages}
    by_conversation: dict[str, list[Turn]] = defaultdict(list)
    for turn in snapshot.turns:
        by_conversation[turn.conversation_key].append(turn)
    missing = 0
    for turns in by_conversation.values():
        later_answered = False
        for turn in sorted(turns, key=lambda t: t.inbound_message_id, reverse=True):
            sid = sid_of.get(turn.inbound_message_id)
            if sid not in ours:
                continue
            if sid in answered:
                later_answered = True
            elif not (turn.status == "batched" and later_answered):
                missing += 1
    with_turn = {turn.inbound_message_id for turn in snapshot.turns}
    turnless = sum(m.sid in ours and m.id not in with_turn for m in snapshot.messages)
    return missing + turnless


def order_inversions(
    creates: Sequence[Create], keys: Sequence[ReplyKey | None], snapshot: Snapshot
) -> int:
    """Replies (their first part's first create) that reached Twilio after the reply to a later
    stored message of the same customer."""
    stored_order: Mapping[str, int] = _first_ids(snapshot)
    latest: dict[str, int] = {}
    inversions = 0
    for key, create in first_replies(creates, keys).items():
        order = stored_order.get(key.sid)
        if key.part != 0 or order is None:
            continue
        if order < latest.get(create.to, -1):
            inversions += 1
        else:
            latest[create.to] = order
    return inversions


def _first_ids(snapshot: Snapshot) -> dict[str, int]:
    ids: dict[str, int] = {}
    for message in snapshot.messages:
        ids[message.sid] = min(message.id, ids.get(message.sid, message.id))
    return ids
