"""The names a conversation list is drawn from: each channel identity's profile name (kept in
its `evidence` under `PROFILE_NAME_KEY`, as the channel last sent it) and the name facts in
force of each customer. Erasing a customer deletes its identities, and the name with them."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.models import ChannelIdentity, Fact

PROFILE_NAME_KEY = "profile_name"


async def note_profile_names(session: AsyncSession, names: Mapping[str, str]) -> set[str]:
    """Keep each identity's (by id) profile name; an unchanged name writes nothing. Returns
    the ids whose stored name was already the one given (read from committed rows)."""
    if not names:
        return set()
    rows = await session.scalars(select(ChannelIdentity).where(ChannelIdentity.id.in_(names)))
    unchanged: set[str] = set()
    changed = False
    for row in rows:
        name = names[row.id]
        evidence = dict(row.evidence or {})
        if evidence.get(PROFILE_NAME_KEY) == name:
            unchanged.add(row.id)
            continue
        evidence[PROFILE_NAME_KEY] = name
        row.evidence = evidence
        changed = True
    if changed:
        await session.flush()
    return unchanged


async def profile_names(session: AsyncSession, identity_ids: Iterable[str]) -> dict[str, str]:
    """Identity id → the profile name its channel gave (identities without one are left out)."""
    ids = sorted(set(identity_ids))
    if not ids:
        return {}
    rows = await session.execute(
        select(ChannelIdentity.id, ChannelIdentity.evidence).where(ChannelIdentity.id.in_(ids))
    )
    found: dict[str, str] = {}
    for identity_id, evidence in rows:
        name = (evidence or {}).get(PROFILE_NAME_KEY)
        if isinstance(name, str) and name:
            found[identity_id] = name
    return found


async def stated_names(
    session: AsyncSession, customer_ids: Iterable[str], keys: Iterable[str]
) -> dict[str, dict[str, str]]:
    """Customer id → {fact key: value} of its name facts in force, the latest of each key."""
    ids = sorted(set(customer_ids))
    if not ids:
        return {}
    rows = await session.execute(
        select(Fact.customer_id, Fact.key, Fact.value)
        .where(
            Fact.customer_id.in_(ids),
            Fact.key.in_(list(keys)),
            Fact.superseded_by.is_(None),
            Fact.retracted.is_(False),
        )
        .order_by(Fact.id)
    )
    found: dict[str, dict[str, str]] = {}
    for customer_id, key, value in rows:
        found.setdefault(customer_id, {})[key] = value
    return found
