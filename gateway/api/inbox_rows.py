"""The inbox's rows for the operator API's conversation list: the filters it takes (channel,
tenant, a text searched in the messages) and what each row shows beside the conversation
(the last message's preview, the identity's link level, the tenant)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aiohttp import web
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.http.bodies import query_text
from gateway.storage.records import ConversationRecord
from gateway.storage.repositories import conversation_rows

PREVIEW_LENGTH = 120
_FROM = {"user": "customer", "assistant": "reply"}


@dataclass(frozen=True, slots=True)
class ListFilters:
    channel: str | None = None
    tenant: str | None = None  # encoded, as `TenantRef.encode` writes it
    text: str | None = None

    @classmethod
    def of(cls, request: web.Request) -> ListFilters:
        return cls(
            channel=query_text(request, "channel") or None,
            tenant=query_text(request, "tenant") or None,
            text=(query_text(request, "q") or "").strip() or None,
        )


async def filtered(
    session: AsyncSession, found: Sequence[ConversationRecord], filters: ListFilters
) -> list[ConversationRecord]:
    kept = [
        c
        for c in found
        if (filters.channel is None or c.channel == filters.channel)
        and (filters.tenant is None or c.tenant.encode() == filters.tenant)
    ]
    if filters.text is None:
        return kept
    matching = await conversation_rows.with_text(session, kept, filters.text)
    return [c for c in kept if c.id in matching]


def _preview(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_LENGTH else flat[: PREVIEW_LENGTH - 1] + "…"


async def row_details(
    session: AsyncSession, found: Sequence[ConversationRecord]
) -> dict[str, dict[str, Any]]:
    """Conversation id → the fields its row adds: `preview` (text, from, at), `link_level`,
    `tenant`."""
    last = await conversation_rows.last_messages(session, found)
    levels = await conversation_rows.link_levels(
        session, (c.identity_id for c in found if c.identity_id)
    )
    details: dict[str, dict[str, Any]] = {}
    for c in found:
        message = last.get(c.id)
        details[c.id] = {
            "preview": None
            if message is None
            else {
                "text": _preview(message.text),
                "from": _FROM.get(message.role, message.role),
                "at": message.at.isoformat(),
            },
            "link_level": levels.get(c.identity_id) if c.identity_id else None,
            "tenant": c.tenant.encode(),
        }
    return details
