"""Every channel of the catalog is spoken everywhere the catalog is read: retention covers it
(a per-channel override included) and `POST /v1/context` takes it, with or without the
channel's context prefix, as the same customer."""

from __future__ import annotations

from datetime import timedelta

import pytest
from aiohttp.test_utils import TestClient

from gateway import channel_catalog
from gateway.keys import SESSIONS
from gateway.memory.retention import policies
from gateway.runtime.clock import utcnow
from gateway.storage.repositories import tenants
from tests.gateway.turns.answer.stored_turns import store_pending_turn
from tests.support.app_settings import AUTH
from tests.support.context_api import post_context

SENDERS = {
    "whatsapp": "whatsapp:+5511998765432",
    "whatsapp_cloud": "whatsapp:+5511998765433",
    "telegram": "123456789",
    "webchat": "v-3f1c-visitor",
    "phone": "+5511998765434",
}


def test_the_senders_here_cover_the_catalog() -> None:
    assert set(SENDERS) == set(channel_catalog.NAMES)


async def test_retention_covers_every_catalog_channel(api: TestClient) -> None:  # type: ignore[type-arg]
    now = utcnow()
    async with api.app[SESSIONS].begin() as session:
        await tenants.save_tenant_settings(
            session,
            domain="default",
            settings={"retention_days": 30, "channels": {"whatsapp_cloud": {"retention_days": 7}}},
        )
    # Retention looks at the tenants messages came through: one message of the default tenant.
    await store_pending_turn(api.app[SESSIONS], "oi")
    async with api.app[SESSIONS]() as session:
        found = {p.channel: p.before for p in await policies(session, now)}
    assert list(found) == list(channel_catalog.NAMES)
    assert found["whatsapp_cloud"] == now - timedelta(days=7)
    assert {found[name] for name in found if name != "whatsapp_cloud"} == {now - timedelta(days=30)}


@pytest.mark.parametrize("name", channel_catalog.NAMES)
async def test_context_takes_every_catalog_channel_with_or_without_its_prefix(
    api: TestClient,  # type: ignore[type-arg]
    name: str,
) -> None:
    entry = channel_catalog.entry(name)
    bare = await post_context(api, AUTH, channel=name, external_id=SENDERS[name], message="oi")
    prefixed = await post_context(
        api, AUTH, channel=name, external_id=f"{entry.context_prefix}{SENDERS[name]}", message="oi"
    )
    assert bare["customer_id"] == prefixed["customer_id"]


async def test_both_whatsapp_providers_are_one_customer_in_context(api: TestClient) -> None:  # type: ignore[type-arg]
    number = "whatsapp:+5511998765499"
    twilio = await post_context(api, AUTH, channel="whatsapp", external_id=number, message="oi")
    cloud = await post_context(
        api, AUTH, channel="whatsapp_cloud", external_id=number, message="oi"
    )
    assert twilio["customer_id"] == cloud["customer_id"]
    assert twilio["link_level"] == cloud["link_level"] == "verified"


async def test_a_channel_outside_the_catalog_is_refused(api: TestClient) -> None:  # type: ignore[type-arg]
    response = await api.post(
        "/v1/context",
        json={"channel": "sms", "external_id": "+5511", "message": "oi"},
        headers=AUTH,
    )
    assert response.status == 400
    assert "channel must be one of" in await response.text()
