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

Each offence is a `Finding` with the moment it showed (the acknowledgement of the message
concerned, or the create at Twilio), so the report can say in which phase — under which
fault — each kind arose. How a create is tied to its message is `devtools.bench.chaos_replies`.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterator, Mapping, Sequence
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
class Finding:
    """One offence against a check of `MUST_BE_ZERO`: the load's message concerned ("" when
    none is known), when it showed (None: unknown), and for an unanswered message or pending
    turn the state its turn was left in."""

    check: str
    sid: str
    at: float | None
    detail: str = ""


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


def check(recorded: Recorded, found: Sequence[Finding] | None = None) -> Checks:
    """The checks' counts (``found``: the run's `findings`, when already computed)."""
    if found is None:
        found = findings(recorded)
    counts = Counter(finding.check for finding in found)
    acked = sum(message.acked_at is not None for message in recorded.offered)
    keys = _keys(recorded)
    return Checks(
        offered=len(recorded.offered),
        acknowledged=acked,
        never_acknowledged=len(recorded.offered) - acked,
        **{name: counts[name] for name in MUST_BE_ZERO},
        inbox_left=len(recorded.snapshot.inbox),
        set_aside=sum(row.set_aside for row in recorded.snapshot.inbox),
        creates=len(recorded.creates),
        unmatched_creates=sum(key is None for key in keys),
    )


def findings(recorded: Recorded) -> tuple[Finding, ...]:
    """Every offence of the run, check by check."""
    keys = _keys(recorded)
    return (
        *_lost_and_duplicated(recorded),
        *_unanswered(recorded, keys),
        *_answered_twice(recorded.creates, keys),
        *_unrecorded(recorded, keys),
        *_inversions(recorded, keys),
    )


def _keys(recorded: Recorded) -> tuple[ReplyKey | None, ...]:
    ours = frozenset(message.sid for message in recorded.offered)
    return ReplyMap(ours, recorded.snapshot).keys(recorded.creates)


def _acked_at(recorded: Recorded) -> dict[str, float | None]:
    return {message.sid: message.acked_at for message in recorded.offered}


def _lost_and_duplicated(recorded: Recorded) -> Iterator[Finding]:
    stored = Counter(message.sid for message in recorded.snapshot.messages)
    waiting = {row.sid for row in recorded.snapshot.inbox}
    for message in recorded.offered:
        if (
            message.acked_at is not None
            and message.sid not in stored
            and message.sid not in waiting
        ):
            yield Finding("lost", message.sid, message.acked_at)
    acked_at = _acked_at(recorded)
    for sid, count in stored.items():
        if count > 1:
            yield Finding("duplicated", sid, acked_at.get(sid))


def _unanswered(recorded: Recorded, keys: Sequence[ReplyKey | None]) -> Iterator[Finding]:
    """Stored messages of ours with no reply at Twilio, and the turns still pending."""
    snapshot = recorded.snapshot
    acked_at = _acked_at(recorded)
    answered = {key.sid for key in keys if key is not None}
    sid_of = {message.id: message.sid for message in snapshot.messages}
    for turns in _by_conversation(snapshot).values():
        later_answered = False
        for turn in sorted(turns, key=lambda t: t.inbound_message_id, reverse=True):
            sid = sid_of.get(turn.inbound_message_id, "")
            state = f"turn {turn.status}, delivery {turn.delivery_status}"
            if turn.status == "pending":
                yield Finding("pending_turns", sid, acked_at.get(sid), state)
            if sid not in acked_at:
                continue
            if sid in answered:
                later_answered = True
            elif not (turn.status == "batched" and later_answered):
                yield Finding("unanswered", sid, acked_at[sid], state)
    with_turn = {turn.inbound_message_id for turn in snapshot.turns}
    for message in snapshot.messages:
        if message.sid in acked_at and message.id not in with_turn:
            yield Finding("unanswered", message.sid, acked_at[message.sid], "no turn")


def _by_conversation(snapshot: Snapshot) -> dict[str, list[Turn]]:
    grouped: dict[str, list[Turn]] = defaultdict(list)
    for turn in snapshot.turns:
        grouped[turn.conversation_key].append(turn)
    return grouped


def _answered_twice(
    creates: Sequence[Create], keys: Sequence[ReplyKey | None]
) -> Iterator[Finding]:
    """One finding per message, at the first create that repeated a part of its reply."""
    seen: set[ReplyKey] = set()
    repeated: set[str] = set()
    for create, key in sorted(zip(creates, keys, strict=True), key=lambda pair: pair[0].at):
        if key is None:
            continue
        if key in seen and key.sid not in repeated:
            repeated.add(key.sid)
            yield Finding("answered_twice", key.sid, create.at)
        seen.add(key)


def _unrecorded(recorded: Recorded, keys: Sequence[ReplyKey | None]) -> Iterator[Finding]:
    sent = {send.sid for send in recorded.snapshot.outbound}
    for create, key in zip(recorded.creates, keys, strict=True):
        if create.sid not in sent:
            yield Finding("unrecorded_sends", key.sid if key else "", create.at)


def _inversions(recorded: Recorded, keys: Sequence[ReplyKey | None]) -> Iterator[Finding]:
    """Replies (their first part's first create) that reached Twilio after the reply to a later
    stored message of the same customer."""
    stored_order: Mapping[str, int] = _first_ids(recorded.snapshot)
    latest: dict[str, int] = {}
    for key, create in first_replies(recorded.creates, keys).items():
        order = stored_order.get(key.sid)
        if key.part != 0 or order is None:
            continue
        if order < latest.get(create.to, -1):
            yield Finding("order_inversions", key.sid, create.at)
        else:
            latest[create.to] = order


def _first_ids(snapshot: Snapshot) -> dict[str, int]:
    ids: dict[str, int] = {}
    for message in snapshot.messages:
        ids[message.sid] = min(message.id, ids.get(message.sid, message.id))
    return ids
