"""The `messages.extra` codec: every `MessageMeta` field survives a round trip, rows written in
the column's long-standing shape decode to the right meta, and unknown keys are handled as
the module says: string values are kept, in order, as the channel's `fields`; any other
unknown value (number, list, object) is dropped; a known key of the wrong type reads as
absent."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from channels.base import Media, SourceLink
from gateway.runtime.clock import utcnow
from gateway.storage.message_meta import (
    CANNED_FALLBACK,
    OPERATOR_AUTHOR,
    MessageMeta,
    TemplateUse,
    decode_meta,
    encode_meta,
)
from gateway.storage.models import Message
from gateway.storage.records import NewMessage, SenderSnapshot
from gateway.storage.repositories import customers, episodes, messages
from gateway.storage.repositories.tables import MESSAGES

EVERY_FIELD = MessageMeta(
    kind="voice",
    canned=CANNED_FALLBACK,
    author=OPERATOR_AUTHOR,
    actor="alice",
    recipient="whatsapp:+5511998765432",
    template=TemplateUse("order_update", (("1", "Ana"), ("2", "4471"))),
    in_reply_to=41,
    reply_to_provider_id="wamid.A1",
    redactions=2,
    call_id="c-9",
    speaker="agent",
    transcript_version=3,
    transcript_sha256="ab" * 32,
    start=1.5,
    end=4.25,
    flags=("probable_hallucination", "no_speech"),
    link_level="inferred",
    operator="bob",
    action="fact.correct",
    message_key="100:7",
    client_message_id="m-1",
    citations=(SourceLink(1, "Trocas", "https://help.example.com/trocas"), SourceLink(2, "Frete")),
    fields=(("MessageSid", "SM1"), ("ProfileName", "Ana")),
)


def test_every_field_survives_a_round_trip() -> None:
    stored = encode_meta(EVERY_FIELD)
    assert stored is not None
    assert decode_meta(stored) == EVERY_FIELD
    assert decode_meta(encode_meta(MessageMeta())) == MessageMeta()
    assert encode_meta(MessageMeta()) is None


def test_the_encoded_object_is_the_column_s_flat_shape() -> None:
    assert encode_meta(
        MessageMeta(
            kind="text",
            template=TemplateUse("hello", (("1", "Ana"),)),
            flags=("no_speech",),
            fields=(("update_id", "5"),),
        ),
        {"sender": "100", "link_level": "verified"},
    ) == {
        "update_id": "5",
        "kind": "text",
        "flags": ["no_speech"],
        "template": {"name": "hello", "variables": {"1": "Ana"}},
        "sender": "100",
        "link_level": "verified",
    }


def test_unknown_keys_strings_kept_others_dropped_wrong_types_absent() -> None:
    meta = decode_meta(
        {
            "b_field": "two",
            "a_field": "one",
            "dia_id": "D1:3",
            "count": 3,
            "nested": {"x": 1},
            "listed": ["x"],
            "canned": True,  # a known key of the wrong type
            "transcript_version": "2",  # a numeric string, read as before
            "in_reply_to": "not a number",
            "template": {"variables": {"1": "Ana"}},  # no name: no template
            "start": "1.5",
        }
    )
    assert meta.fields == (("b_field", "two"), ("a_field", "one"), ("dia_id", "D1:3"))
    assert meta.field("dia_id") == "D1:3" and meta.field("count") is None
    assert meta.canned is None and meta.in_reply_to is None and meta.template is None
    assert meta.start is None
    assert meta.transcript_version == 2


def test_citations_are_stored_as_objects_and_a_malformed_entry_is_skipped() -> None:
    links = (SourceLink(1, "Trocas", "https://help.example.com/trocas"), SourceLink(2, "Frete"))
    assert encode_meta(MessageMeta(citations=links)) == {
        "citations": [
            {"number": 1, "title": "Trocas", "url": "https://help.example.com/trocas"},
            {"number": 2, "title": "Frete", "url": None},
        ]
    }
    stored = [
        {"number": 1, "title": "Trocas", "url": 7},  # a URL of the wrong type: no URL
        {"number": True, "title": "Frete"},
        {"number": "2", "title": "Frete"},
        {"number": 3},
        "Frete",
    ]
    assert decode_meta({"citations": stored}).citations == (SourceLink(1, "Trocas"),)
    assert decode_meta({"citations": "Trocas"}).citations == ()


def test_a_sender_snapshot_s_level_is_not_the_meta_s() -> None:
    """A user message's `link_level` belongs to its sender snapshot; a call turn, which has
    none, keeps its own."""
    with_sender = decode_meta({"sender": "100", "link_level": "verified", "kind": "text"})
    assert with_sender == MessageMeta(kind="text")
    assert decode_meta({"link_level": "inferred"}).link_level == "inferred"


def test_transcript_and_speech_rules() -> None:
    assert MessageMeta().in_transcript(1) and not MessageMeta().in_transcript(2)
    assert MessageMeta(transcript_version=2).in_transcript(2)
    assert MessageMeta(flags=("low_confidence",)).is_speech
    assert not MessageMeta(flags=("no_speech",)).is_speech


async def _episode(session: AsyncSession) -> tuple[str, str]:
    customer = await customers.create_customer(session, display_name="Ana")
    episode = await episodes.open_episode(session, customer_id=customer.id, channel="whatsapp")
    return customer.id, episode.id


async def _insert_raw(
    session: AsyncSession,
    customer_id: str,
    episode_id: str,
    provider_id: str,
    extra: dict[str, Any] | None,
    media: dict[str, Any] | None = None,
) -> int:
    """A row written straight to the table, as the writers before the codec wrote it."""
    row = await session.execute(
        MESSAGES.insert().returning(MESSAGES.c.id),
        {
            "customer_id": customer_id,
            "episode_id": episode_id,
            "channel": "whatsapp",
            "role": "user",
            "text": "oi",
            "provider_message_id": provider_id,
            "token_count": 1,
            "redacted": False,
            "created_at": utcnow(),
            "extra": extra,
            "media": media,
        },
    )
    return int(row.scalar_one())


async def test_rows_in_the_old_shape_decode(session: AsyncSession) -> None:
    customer_id, episode_id = await _episode(session)
    inbound = await _insert_raw(
        session,
        customer_id,
        episode_id,
        "SM-old",
        {
            "MessageSid": "SM-old",
            "NumMedia": "1",
            "kind": "voice",
            "reply_to_provider_id": "SM-before",
            "redactions": 1,
            "sender": "whatsapp:+5511998765432",
            "link_level": "inferred",
            "allowed_scopes": ["public", "contact"],
            "own_facts_only": True,
        },
        {
            "items": [
                {"url": "https://api.twilio.com/m/1", "content_type": "audio/ogg"},
                {"content_type": "image/png"},  # no URL: never sendable, skipped
            ]
        },
    )
    call_turn = await _insert_raw(
        session,
        customer_id,
        episode_id,
        "c-1:v2:0",
        {
            "call_id": "c-1",
            "transcript_version": 2,
            "speaker": "customer",
            "flags": [],
            "start": None,
            "end": 3.0,
            "redactions": 0,
            "transcript_sha256": "ff",
            "link_level": "verified",
        },
    )
    operator = await _insert_raw(
        session,
        customer_id,
        episode_id,
        "operator:1",
        {
            "template": {"name": "order_update", "variables": {"1": "Ana"}},
            "author": "operator",
            "actor": "alice",
            "recipient": "whatsapp:+5511998765432",
        },
    )
    # Named after its inbound message, as replies are: a fixed id would meet a reply another
    # test committed to the database this one shares.
    reply = await _insert_raw(
        session,
        customer_id,
        episode_id,
        f"reply:{inbound}",
        {"in_reply_to": inbound, "canned": "offline"},
    )
    bare = await _insert_raw(session, customer_id, episode_id, "SM-bare", None)

    read = await messages.get_message(session, customer_id, inbound)
    assert read.meta == MessageMeta(
        kind="voice",
        reply_to_provider_id="SM-before",
        redactions=1,
        fields=(("MessageSid", "SM-old"), ("NumMedia", "1")),
    )
    assert read.sender == SenderSnapshot(
        "whatsapp:+5511998765432", "inferred", ("public", "contact"), True
    )
    assert read.media == (Media("https://api.twilio.com/m/1", content_type="audio/ogg"),)
    assert (await messages.get_message(session, customer_id, call_turn)).meta == MessageMeta(
        call_id="c-1",
        transcript_version=2,
        speaker="customer",
        end=3.0,
        redactions=0,
        transcript_sha256="ff",
        link_level="verified",
    )
    assert (await messages.get_message(session, customer_id, operator)).meta == MessageMeta(
        template=TemplateUse("order_update", (("1", "Ana"),)),
        author="operator",
        actor="alice",
        recipient="whatsapp:+5511998765432",
    )
    replied = await messages.get_message(session, customer_id, reply)
    assert replied.meta == MessageMeta(in_reply_to=inbound, canned="offline")
    empty = await messages.get_message(session, customer_id, bare)
    assert (empty.meta, empty.media, empty.sender) == (MessageMeta(), (), None)
    # The SQL reads of the column see the same keys.
    [line] = [
        x
        for x in await messages.window_lines(session, customer_id, episode_id, limit=10)
        if x.id == operator
    ]
    assert line.human_agent == "alice" and not line.canned


async def test_a_written_message_is_stored_in_the_column_s_shape(session: AsyncSession) -> None:
    customer_id, episode_id = await _episode(session)
    sender = SenderSnapshot("whatsapp:+5511998765432", "verified", ("public",), False)
    stored = await messages.append_message(
        session,
        NewMessage(
            customer_id=customer_id,
            episode_id=episode_id,
            channel="whatsapp",
            role="user",
            text="oi",
            token_count=1,
            provider_message_id="SM-new",
            media=(Media("https://cdn.example.org/a.jpg", "image/jpeg", caption="foto"),),
            meta=EVERY_FIELD,
            sender=sender,
        ),
    )
    row = await session.scalar(select(Message).where(Message.id == stored.id))
    assert row is not None
    assert row.media == {
        "items": [
            {
                "url": "https://cdn.example.org/a.jpg",
                "content_type": "image/jpeg",
                "caption": "foto",
            }
        ]
    }
    assert row.extra == {
        "MessageSid": "SM1",
        "ProfileName": "Ana",
        "kind": "voice",
        "canned": "fallback",
        "author": "operator",
        "actor": "alice",
        "recipient": "whatsapp:+5511998765432",
        "reply_to_provider_id": "wamid.A1",
        "call_id": "c-9",
        "speaker": "agent",
        "transcript_sha256": "ab" * 32,
        "link_level": "verified",  # the sender snapshot's
        "operator": "bob",
        "action": "fact.correct",
        "message_key": "100:7",
        "client_message_id": "m-1",
        "in_reply_to": 41,
        "redactions": 2,
        "transcript_version": 3,
        "start": 1.5,
        "end": 4.25,
        "flags": ["probable_hallucination", "no_speech"],
        "template": {"name": "order_update", "variables": {"1": "Ana", "2": "4471"}},
        "citations": [
            {"number": 1, "title": "Trocas", "url": "https://help.example.com/trocas"},
            {"number": 2, "title": "Frete", "url": None},
        ],
        "sender": "whatsapp:+5511998765432",
        "allowed_scopes": ["public"],
        "own_facts_only": False,
    }
    again = await messages.get_message(session, customer_id, stored.id)
    assert again == stored and again.sender == sender
    # The sender's level is the snapshot's, not a second copy in the meta.
    assert again.meta.link_level is None
