"""Finding a customer by what an operator knows of them."""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.repositories import customers, profiles

SEARCH_LIMIT = 50


@dataclass(frozen=True, slots=True)
class SearchHit:
    customer_id: str
    display_name: str | None
    identities: tuple[str, ...]


async def search_customers(session: AsyncSession, query: str) -> list[SearchHit]:
    """Customers (not merged away) whose id, name, identity or identifier matches `query`.

    Phone numbers match on their digits, so "+55 11 99876-5432" finds "whatsapp:+5511998765432".
    """
    rows = await profiles.search_customers(session, query, limit=SEARCH_LIMIT)
    hits: list[SearchHit] = []
    for row in rows:
        owned = await customers.list_identities(session, row.id)
        hits.append(SearchHit(row.id, row.display_name, tuple(i.external_id for i in owned)))
    return hits
