"""`POST /v1/context` from a test client, and a stored WhatsApp message for seeded facts to
come from."""

from __future__ import annotations

from collections.abc import Mapping

from aiohttp.test_utils import TestClient
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.records import ChannelIdentityRecord, MessageRecord, NewMessage
from gateway.storage.repositories import customers, episodes, messages


async def post_context(
    client: TestClient,  # type: ignore[type-arg]
    headers: Mapping[str, str],
    **body: object,
) -> dict[str, object]:
    """The body of a ``200`` answer to ``POST /v1/context`` (anything else fails the test)."""
    response = await client.post("/v1/context", json=body, headers=headers)
    assert response.status == 200, await response.text()
    result: dict[str, object] = await response.json()
    return result


async def whatsapp_user_message(
    session: AsyncSession, customer_id: str, number: str, text: str, tokens: int
) -> tuple[ChannelIdentityRecord, MessageRecord]:
    """The customer's identity ``whatsapp:<number>`` (which must exist) and a user message
    ``text`` stored in a new WhatsApp episode of it."""
    identity = await customers.find_identity(session, "whatsapp", f"whatsapp:{number}")
    assert identity is not None
    episode = await episodes.open_episode(
        session, customer_id=customer_id, channel="whatsapp", identity_id=identity.id
    )
    source = await messages.append_message(
        session,
        NewMessage(customer_id, episode.id, "whatsapp", "user", text, tokens, identity.id),
    )
    return identity, source
