from __future__ import annotations

from datetime import date, timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncSession

from gateway.storage.repositories import audit, campaigns, tenants
from gateway.tenants import effective_settings


async def test_anchored_messages_only_while_campaign_is_active(session: AsyncSession) -> None:
    today = date(2026, 11, 29)
    live = await campaigns.create_campaign(
        session,
        name="black friday",
        messages=["Contato: Ana, +55 11 9…", "Plano: Premium"],
        expire_at=today,
    )
    assert [m.text for m in live.anchored] == ["Contato: Ana, +55 11 9…", "Plano: Premium"]
    assert len(await campaigns.active_anchored_messages(session, live.id, today)) == 2
    assert (
        await campaigns.active_anchored_messages(session, live.id, today + timedelta(days=1)) == []
    )
    forever = await campaigns.create_campaign(session, name="onboarding", messages=["m"])
    assert len(await campaigns.active_anchored_messages(session, forever.id, today)) == 1
    await campaigns.delete_campaign(session, forever.id)
    assert await campaigns.active_anchored_messages(session, forever.id, today) == []
    assert [c.name for c in await campaigns.list_campaigns(session)] == ["black friday"]


async def test_audit_entries_need_a_reason_and_are_listed_newest_first(
    session: AsyncSession,
) -> None:
    with pytest.raises(ValueError):
        await audit.record_audit(
            session,
            actor="op",
            action="merge",
            reason=" ",
            subject_type="customer",
            subject_id="c1",
        )
    await audit.record_audit(
        session,
        actor="op",
        action="merge",
        reason="same person",
        subject_type="customer",
        subject_id="c1",
        details={"moved": [1, 2]},
    )
    await audit.record_audit(
        session,
        actor="op",
        action="split",
        reason="wrong merge",
        subject_type="customer",
        subject_id="c1",
    )
    entries = await audit.list_audit(session, subject_id="c1")
    assert [e.action for e in entries] == ["split", "merge"]
    assert entries[1].details == {"moved": [1, 2]}


async def test_tenant_lookup_assistant_then_host_then_domain(session: AsyncSession) -> None:
    await tenants.save_tenant_settings(
        session, domain="acme.com", settings={"window": 16000, "threshold_tokens": 4000}
    )
    await tenants.save_tenant_settings(
        session, domain="acme.com", host="chat.acme.com", settings={"threshold_tokens": 3500}
    )
    await tenants.save_tenant_settings(
        session,
        domain="acme.com",
        host="chat.acme.com",
        assistant_id="sales",
        settings={"summary_model": "small-model", "channels": {"phone": {"window": 32000}}},
    )
    layers = await tenants.settings_layers(
        session, domain="acme.com", host="chat.acme.com", assistant_id="sales"
    )
    settings = effective_settings(layers)
    assert (settings.window, settings.threshold_tokens, settings.summary_model) == (
        16000,
        3500,
        "small-model",
    )
    assert effective_settings(layers, channel="phone").window == 32000
    host_only = effective_settings(
        await tenants.settings_layers(session, domain="acme.com", host="chat.acme.com")
    )
    assert (host_only.threshold_tokens, host_only.summary_model) == (3500, None)
    unknown = effective_settings(await tenants.settings_layers(session, domain="other.org"))
    assert unknown.window == 8192
