"""Reading and changing one level of stored tenant settings: every change validated against
the levels it sits on, written with its audit entry in one transaction, then announced so the
next message everywhere follows it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from redis.asyncio import Redis
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker

from gateway.settings_admin.announcements import announce_settings_change
from gateway.settings_admin.documents import (
    Document,
    KeyChange,
    changes,
    check_descendants,
    check_row,
    level_document,
    row_document,
)
from gateway.settings_admin.levels import SettingsLevel
from gateway.storage.records import AuditRecord
from gateway.storage.repositories.audit import record_audit
from gateway.storage.repositories.tenants import (
    save_tenant_settings,
    settings_for,
    settings_layers,
    stored_level,
    stored_levels,
)
from gateway.tenants import TenantSettings

AUDIT_ACTION = "settings_changed"
AUDIT_SUBJECT = "settings"

Edit = Callable[[Document], Document]


@dataclass(frozen=True, slots=True)
class SettingsChange:
    """What a change did: the level's document before and after, the keys it touched (none:
    nothing was written) and its audit entry."""

    level: SettingsLevel
    before: Document
    after: Document
    changed: tuple[KeyChange, ...]
    audit: AuditRecord | None


async def read_level(session: AsyncSession, level: SettingsLevel) -> Document:
    """The keys stored at the level (empty when nothing is)."""
    stored = await _stored_row(session, level)
    return level_document(level, stored)


async def effective_for(session: AsyncSession, level: SettingsLevel) -> TenantSettings:
    """The settings a message of the level's tenant (and channel) follows."""
    return await settings_for(session, level.tenant, channel=level.channel)


async def _stored_row(session: AsyncSession, level: SettingsLevel) -> Document:
    row = await stored_level(
        session, domain=level.domain, host=level.host, assistant_id=level.assistant_id
    )
    return row or {}


async def _ancestors(session: AsyncSession, level: SettingsLevel) -> list[Document]:
    """The stored levels below the row in the lookup, most specific first."""
    if level.assistant_id is not None:
        return await settings_layers(session, domain=level.domain, host=level.host)
    if level.host is not None:
        return await settings_layers(session, domain=level.domain)
    return []


async def check_level(
    session: AsyncSession, level: SettingsLevel, document: Document
) -> TenantSettings:
    """The tenant's settings with `document` at the level; `SettingsInvalid` naming the keys
    when they would not be usable. Nothing is written."""
    stored = await _stored_row(session, level)
    row = row_document(level, document, stored)
    settings = check_row(level, row, await _ancestors(session, level))
    await _check_descendants(session, level, row)
    return settings


async def _check_descendants(session: AsyncSession, level: SettingsLevel, row: Document) -> None:
    if level.assistant_id is not None:
        return  # nothing is stored below an assistant's level
    rows = await stored_levels(session, domain=level.domain)
    rows[(level.host, level.assistant_id)] = row
    check_descendants(level, rows)


async def change_level(
    sessions: async_sessionmaker[AsyncSession],
    redis: Redis | None,
    level: SettingsLevel,
    edit: Edit,
    *,
    actor: str,
    reason: str,
) -> SettingsChange:
    """Apply `edit` to the level's document, refuse it (`SettingsInvalid`) when the result is
    not usable, else store it with an audit entry of the keys changed (before and after), and
    announce it once committed. An edit that changes nothing writes nothing."""
    async with sessions.begin() as session:
        stored = await _stored_row(session, level)
        before = level_document(level, stored)
        after = edit(before)
        row = row_document(level, after, stored)
        check_row(level, row, await _ancestors(session, level))
        await _check_descendants(session, level, row)
        changed = changes(before, after)
        if not changed:
            return SettingsChange(level, before, after, (), None)
        await save_tenant_settings(
            session,
            domain=level.domain,
            host=level.host,
            assistant_id=level.assistant_id,
            settings=row,
        )
        entry = await record_audit(
            session,
            actor=actor,
            action=AUDIT_ACTION,
            reason=reason,
            subject_type=AUDIT_SUBJECT,
            subject_id=level.path(),
            details=audit_details(changed),
        )
    await announce_settings_change(redis, level.path())
    return SettingsChange(level, before, after, changed, entry)


def audit_details(changed: tuple[KeyChange, ...]) -> dict[str, Any]:
    """The keys changed with their values before and after (a key not set on one side is
    absent from that side)."""
    return {
        "changed": [change.key for change in changed],
        "before": {c.key: c.before for c in changed if c.existed_before},
        "after": {c.key: c.after for c in changed if c.exists_after},
    }
