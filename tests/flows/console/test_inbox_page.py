"""Set-aside inbox rows reach the operator: the console lists them with their error, a retry
(audited, with a reason) puts one back in line and it is stored; `/metrics` reports the inbox."""

from __future__ import annotations

import re
import uuid
from datetime import timedelta
from pathlib import Path

import pytest
from aiohttp.test_utils import TestClient
from sqlalchemy import select

from channels.base import InboundMessage
from gateway.inbox.codec import to_payload
from gateway.operators.accounts import create_operator
from gateway.runtime.clock import utcnow
from gateway.storage.models import InboxMessage, Message
from gateway.storage.repositories import audit, inbox
from gateway.tenant_ref import DEFAULT_TENANT
from tests.support.console import log_in
from tests.support.stack import Stack, running_stack

BACKENDS = ["embedded", "production"]
USERNAME = "ana.ops"
PASSWORD = "correct horse battery"


def _row(sid: str, sender: str, text: str, *, received_ago_s: float = 0.0) -> dict[str, object]:
    received = utcnow() - timedelta(seconds=received_ago_s)
    message = InboundMessage(
        channel="whatsapp", provider_message_id=sid, sender=sender, text=text, received_at=received
    )
    return inbox.inbox_row(
        channel="whatsapp",
        provider_message_id=sid,
        thread_key=f"whatsapp:{sender}",
        tenant=DEFAULT_TENANT,
        payload=to_payload(message),
        received_at=received,
    )


async def _set_aside(stack: Stack, sid: str, text: str) -> int:
    """A good message set aside as if its storing had failed five times during an outage."""
    sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
    async with stack.sessions().begin() as session:
        await inbox.add(session, [_row(sid, sender, text)])
        item_id = int(
            await session.scalar(
                select(InboxMessage.id).where(InboxMessage.provider_message_id == sid)
            )
            or 0
        )
        await inbox.bury(session, item_id, error="OperationalError: lost connection", now=utcnow())
    return item_id


async def _metric(client: TestClient, name: str) -> float:  # type: ignore[type-arg]
    text = await (await client.get("/metrics")).text()
    found = re.search(rf"^{name} (\S+)$", text, re.MULTILINE)
    assert found is not None, f"{name} missing from /metrics"
    return float(found.group(1))


async def _state(stack: Stack, sid: str) -> tuple[bool, bool]:
    """(still set aside, stored as a message)."""
    async with stack.sessions()() as session:
        row = await session.scalar(
            select(InboxMessage).where(InboxMessage.provider_message_id == sid)
        )
        stored = await session.scalar(select(Message.id).where(Message.provider_message_id == sid))
    return (row is not None and row.dead_at is not None, stored is not None)


@pytest.mark.parametrize("backend", BACKENDS)
async def test_a_set_aside_message_is_shown_and_a_retry_stores_it(
    backend: str, tmp_path: Path
) -> None:
    async with running_stack(backend, tmp_path) as stack:
        async with stack.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        client = stack.client
        sid = "SM" + uuid.uuid4().hex
        item_id = await _set_aside(stack, sid, "meu pedido 4471 não chegou")
        assert await _metric(client, "relaydesk_inbox_set_aside") == 1.0
        token = await log_in(client)

        page = await (await client.get("/console/inbox")).text()
        assert "meu pedido 4471 não chegou" in page and "OperationalError" in page
        assert f"/console/inbox/{item_id}/retry" in page
        assert await _state(stack, sid) == (True, False)

        refused = [
            ({"csrf_token": token, "reason": " "}, 400),  # a reason is required
            ({"csrf_token": "forged", "reason": "database is back"}, 403),
        ]
        for data, status in refused:
            response = await client.post(
                f"/console/inbox/{item_id}/retry", data=data, allow_redirects=False
            )
            assert response.status == status
            assert await _state(stack, sid) == (True, False)  # nothing changed
        missing = await client.post(
            "/console/inbox/999999/retry",
            data={"csrf_token": token, "reason": "database is back"},
            allow_redirects=False,
        )
        assert missing.status == 404

        done = await client.post(
            f"/console/inbox/{item_id}/retry",
            data={"csrf_token": token, "reason": "database is back"},
            allow_redirects=False,
        )
        assert done.status == 303 and done.headers["Location"].startswith("/console/inbox?done=")
        await stack.stored()
        assert await _state(stack, sid) == (False, True)
        async with stack.sessions()() as session:
            entries = await audit.list_audit(session, action="retry_inbox_message")
        assert [(e.actor, e.reason, e.subject_id) for e in entries] == [
            (USERNAME, "database is back", str(item_id))
        ]
        assert entries[0].details["provider_message_id"] == sid
        assert await _metric(client, "relaydesk_inbox_set_aside") == 0.0
        page = await (await client.get("/console/inbox")).text()
        assert "No message is set aside." in page


@pytest.mark.parametrize("backend", BACKENDS)
async def test_metrics_report_how_long_the_oldest_message_waits(
    backend: str, tmp_path: Path
) -> None:
    async with running_stack(backend, tmp_path) as stack:
        client = stack.client
        assert await _metric(client, "relaydesk_inbox_waiting") == 0.0
        assert await _metric(client, "relaydesk_inbox_oldest_waiting_seconds") == 0.0
        sender = f"whatsapp:+55119{uuid.uuid4().int % 10**8:08d}"
        rows = [
            _row("SM-old-" + uuid.uuid4().hex, sender, "primeira", received_ago_s=120),
            _row("SM-new-" + uuid.uuid4().hex, sender, "segunda", received_ago_s=5),
        ]
        for row in rows:  # held by a claim of a stopped process: they wait out its lease
            row["claimed_until"] = utcnow() + timedelta(hours=1)
        async with stack.sessions().begin() as session:
            await inbox.add(session, rows)
        assert await _metric(client, "relaydesk_inbox_waiting") == 2.0
        oldest = await _metric(client, "relaydesk_inbox_oldest_waiting_seconds")
        assert 120.0 <= oldest < 600.0
        assert await _metric(client, "relaydesk_inbox_set_aside") == 0.0
