"""Shared contacts in the turn: the vCard read once, stored as a new version of the message.

A shared contact arrives as `[contact]` with its vCard kept by reference (Twilio sends it as a
`text/vcard` attachment). Before its turn is answered the card is fetched from its channel (a
few hundred bytes, one attempt) and read down to name and numbers (`channels.vcard`); the
text `[contact] Ana Souza +55 11 99876-5432` is stored as a version superseding the
placeholder, which a failure keeps.
"""

from __future__ import annotations

import logging
from dataclasses import replace

from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from channels.base import Channel, Media, MediaFetch, SendFailed
from channels.redaction import redact
from channels.twilio_inbound import VCARD_TYPES
from channels.vcard import contact_text
from context import TokenCounter
from gateway.storage.records import MessageRecord
from gateway.storage.repositories import messages
from gateway.turns.message_versions import read_version
from outbound import FetchKind

log = logging.getLogger("relaydesk.contact_cards")


def _cards(message: MessageRecord) -> list[Media]:
    return [
        m
        for m in message.media
        if (m.content_type or "").split(";")[0].strip().lower() in VCARD_TYPES
    ]


def is_contact_card(message: MessageRecord) -> bool:
    """A shared contact's placeholder, with its vCard to read."""
    return message.meta.kind == "contact" and bool(_cards(message))


async def read_contact_card(
    inbound: MessageRecord,
    *,
    sessions: async_sessionmaker[AsyncSession],
    channel: Channel | None,
    counter: TokenCounter,
) -> MessageRecord:
    """The stored version of a shared contact with its card read (the message itself for any
    other message, and for a card that could not be fetched or read)."""
    if not is_contact_card(inbound):
        return inbound
    async with sessions() as session:
        done = await messages.find_by_provider_id(session, inbound.channel, f"contact:{inbound.id}")
    if done is not None:
        return done
    if not isinstance(channel, MediaFetch):
        return inbound
    card = _cards(inbound)[0]
    try:
        data, _ = await channel.fetch_media(Media(card.url, card.content_type), FetchKind.VCARD)
    except SendFailed as exc:
        log.warning("contact card not fetched", extra={"fields": {"error": str(exc)}})
        return inbound
    read = contact_text(data)
    if read is None:
        return inbound
    text = redact(read).text
    async with sessions.begin() as session:
        return await messages.append_message(
            session,
            read_version(
                inbound,
                text,
                counter=counter,
                version_id=f"contact:{inbound.id}",
                meta=replace(inbound.meta, kind="contact_card"),
            ),
        )
