"""What a stored message says about itself beyond its text: `MessageMeta`, and its codec.

The `messages.extra` JSON column keeps one flat object per message (`{"kind": "voice",
"canned": "fallback", "author": "operator", ...}` plus the channel's own fields and the
sender snapshot); the repositories decode it into a `MessageMeta` on read and encode it back
on write, so nothing past storage reads the column by key. The shape on disk is the one rows
have always had: old rows decode as they are, no migration.

Decoding keeps every key this module knows with a value of the expected type (a wrong type
is read as absent), and keeps the other keys with a string value, in order, as the channel's
`fields`; any other unknown key (a number, a list, an object) is dropped, since no channel
writes one and nothing reads one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement

from channels.base import SourceLink
from gateway.runtime.trace_context import TRACEPARENT, TRACESTATE, TraceCarrier

# A reply the gateway wrote itself rather than a model (`MessageMeta.canned` names which):
# shown in its conversation, but never summarized, mined for facts or recalled in other
# episodes.
CANNED_OFFLINE = "offline"  # the offline model's notice
CANNED_FALLBACK = "fallback"  # the message sent when the model failed
CANNED_HANDOFF = "handoff"  # the customer is told a person will answer
CANNED_CONFIRMATION = "confirmation"  # the customer is asked to confirm an action
CANNED_VERIFICATION = "verification"  # the customer is told what a typed code came to
CANNED_CSAT = "csat"  # the customer is thanked for answering the satisfaction question
CANNED_CSAT_QUESTION = "csat_question"  # the satisfaction question, sent with its buttons
# A message an operator wrote (`MessageMeta.author`, with `actor` naming who).
OPERATOR_AUTHOR = "operator"
# Segments of a call flagged as probably not speech (hallucinations on silence).
NOT_SPEECH = frozenset({"probable_hallucination", "no_speech"})

# Keys of the column that SQL reads directly (window lines, recall, unsummarized tokens).
CANNED_KEY = "canned"
AUTHOR_KEY = "author"
ACTOR_KEY = "actor"
SPEAKER_KEY = "speaker"

# The sender snapshot's keys, kept in the same object (see `SenderSnapshot`).
SENDER_KEYS = ("sender", "link_level", "allowed_scopes", "own_facts_only")


@dataclass(frozen=True, slots=True)
class TemplateUse:
    """The approved WhatsApp template a message goes as, with its filled variables."""

    name: str
    variables: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True, slots=True)
class MessageMeta:
    """A stored message's metadata; every field optional, absent ones are not stored."""

    # What the channel said it is (`channels.base.MessageKind`), or the version it became
    # ("voice_transcript", "contact_card").
    kind: str | None = None
    canned: str | None = None  # the gateway's own notice: `CANNED_*`
    author: str | None = None  # `OPERATOR_AUTHOR` for an operator's message
    actor: str | None = None  # the operator who wrote it
    recipient: str | None = None  # where an operator's message goes (it has no sender)
    template: TemplateUse | None = None  # the template an operator's message goes as
    in_reply_to: int | None = None  # a reply's inbound message id
    reply_to_provider_id: str | None = None  # the provider id of the message it answers
    redactions: int | None = None  # card numbers and codes removed before storing
    # What a step-up code typed in the message came to (`identity.step_up.Attempt`); the
    # code itself is taken out of the text before storing.
    verification: str | None = None
    # A phone call's turn (`gateway.turns.calls`).
    call_id: str | None = None
    speaker: str | None = None
    transcript_version: int | None = None
    transcript_sha256: str | None = None
    start: float | None = None
    end: float | None = None
    flags: tuple[str, ...] = ()  # a transcript's flags for the segment or voice note
    link_level: str | None = None  # a call turn's evidence level (it has no sender snapshot)
    # A console note: the operator who wrote it and the action it records.
    operator: str | None = None
    action: str | None = None
    # Channel ids read back: Telegram's "<chat_id>:<message_id>" an edit names, and the id
    # the web chat client gave the message (echoed in its frames).
    message_key: str | None = None
    client_message_id: str | None = None
    # The span the message was stored under, when tracing is on (`runtime/trace_context.py`):
    # its turn continues the trace. Kept as the `traceparent` and `tracestate` keys.
    trace: TraceCarrier | None = None
    # The documents a reply's `[n]` cite, kept for the web chat to show (its history too):
    # `[{"number", "title", "url"}]` under the `citations` key.
    citations: tuple[SourceLink, ...] = ()
    # The channel's other fields (`InboundMessage.extra`), as given.
    fields: tuple[tuple[str, str], ...] = ()

    def field(self, name: str) -> str | None:
        """One of the channel's other fields (None when absent)."""
        return next((value for key, value in self.fields if key == name), None)

    def in_transcript(self, episode_version: int) -> bool:
        """Whether a call's turn belongs to the episode's current transcript version (a
        message that is no call turn always does)."""
        return (self.transcript_version or 1) == episode_version

    @property
    def is_speech(self) -> bool:
        """False for segments flagged as probably not speech."""
        return NOT_SPEECH.isdisjoint(self.flags)


def operator_of(meta: MessageMeta) -> str | None:
    """The operator who wrote a stored message (None for the bot's and the customer's)."""
    return meta.actor if meta.author == OPERATOR_AUTHOR else None


_TEXT = (
    "kind",
    "canned",
    "author",
    "actor",
    "recipient",
    "reply_to_provider_id",
    "call_id",
    "speaker",
    "transcript_sha256",
    "link_level",
    "operator",
    "action",
    "message_key",
    "client_message_id",
    "verification",
)
_INT = ("in_reply_to", "redactions", "transcript_version")
_FLOAT = ("start", "end")
_KNOWN = frozenset(
    (
        *_TEXT,
        *_INT,
        *_FLOAT,
        "flags",
        "template",
        "citations",
        TRACEPARENT,
        TRACESTATE,
        *SENDER_KEYS,
    )
)


def encode_meta(
    meta: MessageMeta, sender: Mapping[str, Any] | None = None
) -> dict[str, Any] | None:
    """The `messages.extra` object of `meta` and the sender snapshot's keys (None when both
    are empty). The known keys win over a channel field of the same name, as they always
    have."""
    stored: dict[str, Any] = dict(meta.fields)
    for name in (*_TEXT, *_INT, *_FLOAT):
        value = getattr(meta, name)
        if value is not None:
            stored[name] = value
    if meta.flags:
        stored["flags"] = list(meta.flags)
    if meta.template is not None:
        stored["template"] = {
            "name": meta.template.name,
            "variables": dict(meta.template.variables),
        }
    if meta.citations:
        stored["citations"] = [
            {"number": link.number, "title": link.title, "url": link.url} for link in meta.citations
        ]
    if meta.trace is not None:
        stored.update(meta.trace.headers())
    if sender:
        stored.update(sender)
    return stored or None


def decode_meta(stored: Mapping[str, Any] | None) -> MessageMeta:
    """The `MessageMeta` of a `messages.extra` object (see the module's note on unknown
    keys); a row's sender snapshot is read by the repository, not here."""
    if not stored:
        return MessageMeta()
    values: dict[str, Any] = {}
    for name in _TEXT:
        text = stored.get(name)
        if isinstance(text, str):
            values[name] = text
    for name in _INT:
        values[name] = _int(stored.get(name))
    for name in _FLOAT:
        number = stored.get(name)
        if isinstance(number, int | float) and not isinstance(number, bool):
            values[name] = float(number)
    flags = stored.get("flags")
    if isinstance(flags, list | tuple):
        values["flags"] = tuple(str(flag) for flag in flags)
    values["template"] = _template(stored.get("template"))
    values["citations"] = _citations(stored.get("citations"))
    values["trace"] = TraceCarrier.from_headers(stored)
    if "sender" in stored:
        values.pop("link_level", None)  # the sender snapshot's, read with it
    values["fields"] = tuple(
        (key, value)
        for key, value in stored.items()
        if key not in _KNOWN and isinstance(key, str) and isinstance(value, str)
    )
    return MessageMeta(**values)


def _int(value: object) -> int | None:
    """An integer as stored; a numeric string too, as the readers before the codec took it."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return None
    return None


def _template(stored: object) -> TemplateUse | None:
    if not isinstance(stored, Mapping) or not isinstance(stored.get("name"), str):
        return None
    variables = stored.get("variables")
    pairs = (
        tuple((str(key), str(value)) for key, value in variables.items())
        if isinstance(variables, Mapping)
        else ()
    )
    return TemplateUse(str(stored["name"]), pairs)


def _citations(stored: object) -> tuple[SourceLink, ...]:
    """The stored citations; an entry without a whole number and a title is skipped."""
    if not isinstance(stored, list | tuple):
        return ()
    links: list[SourceLink] = []
    for entry in stored:
        if not isinstance(entry, Mapping):
            continue
        number, title, url = entry.get("number"), entry.get("title"), entry.get("url")
        if isinstance(number, bool) or not isinstance(number, int) or not isinstance(title, str):
            continue
        links.append(SourceLink(number, title, url if isinstance(url, str) else None))
    return tuple(links)


def meta_text(column: Any, key: str) -> ColumnElement[str]:
    """SQL for one text key of an `extra` column (NULL when absent), for the reads that filter
    or pick a key without loading the row (`column`: the table's or the ORM class's)."""
    text: ColumnElement[str] = column[key].as_string()
    return text
