"""Customer export and erasure through the operator API and the console: credentials, unknown
records and missing reasons refused; merged customers followed; the console's export link and
its confirmed, CSRF-protected erasure; the `relaydesk customer` commands."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from sqlalchemy import func, select

from gateway.cli import main
from gateway.keys import SESSIONS
from gateway.storage.models import AuditEntry, Message, PendingLink, TurnRow
from tests.support.console import AUTH, log_in, seed
from tests.support.context_api import post_context
from tests.support.stack import Stack
from tests.support.webchat import signed_visitor

WRONG = {"Authorization": "Bearer not-the-key"}
DECISION = {"reason": "data subject request", "actor": "dpo"}


async def test_a_wrong_api_key_is_refused_and_changes_nothing(stack: Stack) -> None:
    seeded = await seed(stack)
    cid = seeded.customer_id
    client = stack.client
    calls = [
        client.get(f"/v1/operator/customers/{cid}/export", headers=WRONG),
        client.delete(f"/v1/operator/customers/{cid}", json=DECISION, headers=WRONG),
        client.delete("/v1/operator/messages/1", json=DECISION, headers=WRONG),
        client.delete("/v1/operator/episodes/abc", json=DECISION, headers=WRONG),
        client.delete(f"/v1/operator/customers/{cid}", json=DECISION),
    ]
    for call in calls:
        response = await call
        assert response.status == 401
        assert (await response.json())["error"] == "unauthorized"
    profile = await client.get(f"/v1/operator/customers/{cid}", headers=AUTH)
    assert profile.status == 200


async def test_unknown_records_are_404_and_a_missing_reason_is_400(stack: Stack) -> None:
    seeded = await seed(stack)
    client = stack.client
    unknown = [
        client.get("/v1/operator/customers/nobody/export", headers=AUTH),
        client.delete("/v1/operator/customers/nobody", json=DECISION, headers=AUTH),
        client.delete("/v1/operator/messages/999999", json=DECISION, headers=AUTH),
        client.delete("/v1/operator/messages/not-a-number", json=DECISION, headers=AUTH),
        client.delete("/v1/operator/episodes/nothing", json=DECISION, headers=AUTH),
    ]
    for call in unknown:
        assert (await call).status == 404
    url = f"/v1/operator/customers/{seeded.customer_id}"
    for body in ({"actor": "dpo"}, {"reason": "", "actor": "dpo"}, {"reason": "   "}):
        response = await client.delete(url, json=body, headers=AUTH)
        assert response.status == 400, body
    assert (await client.get(url, headers=AUTH)).status == 200


async def test_export_and_erasure_follow_a_merge(stack: Stack) -> None:
    client = stack.client
    first = await post_context(
        client, AUTH, channel="whatsapp", external_id="+5511911112222", message="oi"
    )
    second = await post_context(
        client, AUTH, channel="whatsapp", external_id="+5511933334444", message="oi"
    )
    absorbed, survivor = str(first["customer_id"]), str(second["customer_id"])
    merged = await client.post(
        "/v1/operator/customers/merge",
        json={"source_customer_id": absorbed, "target_customer_id": survivor, **DECISION},
        headers=AUTH,
    )
    assert merged.status == 200
    exported = await client.get(f"/v1/operator/customers/{absorbed}/export", headers=AUTH)
    document = await exported.json()
    assert (document["customer_id"], document["requested_id"]) == (survivor, absorbed)
    assert [c["id"] for c in document["customers"]] == [survivor, absorbed]
    assert {i["external_id"] for i in document["identities"]} == {
        "whatsapp:+5511911112222",
        "whatsapp:+5511933334444",
    }
    assert any(a["action"] == "merge" for a in document["operator_actions"])

    erased = await client.delete(f"/v1/operator/customers/{absorbed}", json=DECISION, headers=AUTH)
    assert erased.status == 200
    assert sorted((await erased.json())["customer_ids"]) == sorted([survivor, absorbed])
    for gone in (survivor, absorbed):
        response = await client.get(f"/v1/operator/customers/{gone}", headers=AUTH)
        assert response.status == 404
    async with stack.app[SESSIONS]() as session:
        actions = list(await session.scalars(select(AuditEntry.action)))
    assert "customer.exported" in actions and "customer.erased" in actions


async def test_erasing_a_message_through_the_api(stack: Stack) -> None:
    seeded = await seed(stack)
    async with stack.app[SESSIONS]() as session:
        message_id = await session.scalar(
            select(Message.id).where(
                Message.customer_id == seeded.customer_id, Message.text.like("%ana@old%")
            )
        )
    assert message_id is not None
    pinned = await stack.client.post(
        f"/v1/operator/customers/{seeded.customer_id}/facts/{seeded.email_fact_id}/pin",
        json=DECISION,
        headers=AUTH,
    )
    assert pinned.status == 200  # its audit row names the value
    response = await stack.client.delete(
        f"/v1/operator/messages/{message_id}", json=DECISION, headers=AUTH
    )
    assert response.status == 200, await response.text()
    body = await response.json()
    assert body["removed"]["messages"] == 1 and body["removed"]["facts"] >= 1
    assert body["audit"]["action"] == "message.erased"
    facts = await stack.client.get(
        f"/v1/operator/customers/{seeded.customer_id}/facts", headers=AUTH
    )
    assert "ana@old.example" not in await facts.text()
    audit = await stack.client.get(
        f"/v1/operator/audit?subject_id={seeded.customer_id}", headers=AUTH
    )
    entries = (await audit.json())["audit"]
    assert {"pin_fact", "message.erased"} <= {e["action"] for e in entries}
    assert "ana@old.example" not in json.dumps(entries)
    again = await stack.client.delete(
        f"/v1/operator/messages/{message_id}", json=DECISION, headers=AUTH
    )
    assert again.status == 404


async def test_erasing_a_message_takes_its_turn_and_reply_along(stack: Stack) -> None:
    visitor = await signed_visitor(stack.client)
    posted = await stack.client.post(
        "/webchat/messages",
        json={"visitor_id": visitor, "text": "meu pedido PED-9090", "client_message_id": "m1"},
    )
    assert posted.status == 202
    await stack.idle()
    async with stack.app[SESSIONS]() as session:
        inbound, reply = (
            await session.execute(select(TurnRow.inbound_message_id, TurnRow.reply_message_id))
        ).one()
    assert reply is not None
    response = await stack.client.delete(
        f"/v1/operator/messages/{inbound}", json=DECISION, headers=AUTH
    )
    assert response.status == 200
    assert (await response.json())["removed"]["turns"] == 1
    async with stack.app[SESSIONS]() as session:
        left = set(await session.scalars(select(Message.id)))
        turns = await session.scalar(select(func.count()).select_from(TurnRow))
    assert inbound not in left and reply not in left and turns == 0


async def test_the_console_exports_and_erases_with_confirmation_and_csrf(stack: Stack) -> None:
    seeded = await seed(stack)
    cid = seeded.customer_id
    client = stack.client
    csrf = await log_in(client)
    page = await (await client.get(f"/console/customers/{cid}")).text()
    assert f'href="/console/customers/{cid}/export"' in page
    assert f'action="/console/customers/{cid}/erase"' in page

    exported = await client.get(f"/console/customers/{cid}/export")
    assert exported.status == 200
    assert "attachment" in exported.headers["Content-Disposition"]
    document = json.loads(await exported.text())
    assert "ana@old.example" in json.dumps(document["facts"])

    url = f"/console/customers/{cid}/erase"
    no_csrf = await client.post(url, data={"reason": "pedido", "confirm": cid})
    unconfirmed = await client.post(
        url, data={"csrf_token": csrf, "reason": "pedido", "confirm": "yes"}
    )
    assert (no_csrf.status, unconfirmed.status) == (403, 400)
    assert (await client.get(f"/v1/operator/customers/{cid}", headers=AUTH)).status == 200

    erased = await client.post(
        url,
        data={"csrf_token": csrf, "reason": "pedido do titular", "confirm": cid},
        allow_redirects=False,
    )
    assert erased.status == 303
    assert erased.headers["Location"] == f"/console/audit?subject={cid}"
    assert (await client.get(f"/v1/operator/customers/{cid}", headers=AUTH)).status == 404
    async with stack.app[SESSIONS]() as session:
        links = list(await session.scalars(select(PendingLink.id)))
        tombstone = await session.scalar(
            select(AuditEntry).where(AuditEntry.action == "customer.erased")
        )
    assert links == []  # the pending link pointed at the erased customer
    assert tombstone is not None and tombstone.actor == "ana.ops"
    # The caller the pending link came from is somebody else, and stays.
    caller = await client.get(f"/v1/operator/customers/{seeded.caller_customer_id}", headers=AUTH)
    assert caller.status == 200


async def test_the_console_erases_one_message(stack: Stack) -> None:
    seeded = await seed(stack)
    cid = seeded.customer_id
    async with stack.app[SESSIONS]() as session:
        message_id = await session.scalar(
            select(Message.id).where(Message.customer_id == cid, Message.text.like("%ana@old%"))
        )
    client = stack.client
    csrf = await log_in(client)
    page = await (await client.get(f"/console/customers/{cid}/messages/{message_id}")).text()
    url = f"/console/customers/{cid}/messages/{message_id}/erase"
    assert f'action="{url}"' in page
    other = await client.post(
        f"/console/customers/{seeded.caller_customer_id}/messages/{message_id}/erase",
        data={"csrf_token": csrf, "reason": "engano"},
    )
    assert other.status == 404  # not that customer's message: nothing erased
    erased = await client.post(
        url, data={"csrf_token": csrf, "reason": "engano"}, allow_redirects=False
    )
    assert erased.status == 303
    assert erased.headers["Location"].startswith(f"/console/customers/{cid}?done=")
    gone = await client.get(f"/console/customers/{cid}/messages/{message_id}")
    assert gone.status == 404


async def test_the_customer_commands_export_and_erase(
    stack: Stack,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    seeded = await seed(stack)
    monkeypatch.setenv("RELAYDESK_DATABASE_URL", f"sqlite+aiosqlite:///{tmp_path / 'stack.db'}")
    monkeypatch.delenv("RELAYDESK_REDIS_URL", raising=False)
    code = await asyncio.to_thread(main, ["customer", "export", seeded.customer_id])
    printed = json.loads(capsys.readouterr().out)
    assert code == 0 and printed["customer_id"] == seeded.customer_id
    assert "ana@old.example" in json.dumps(printed["facts"])
    code = await asyncio.to_thread(
        main,
        ["customer", "erase", seeded.customer_id, "--reason", "pedido", "--actor", "dpo"],
    )
    erased = json.loads(capsys.readouterr().out)
    assert code == 0 and erased["erased"] == [seeded.customer_id]
    assert erased["removed"]["messages"] >= 1
    response = await stack.client.get(f"/v1/operator/customers/{seeded.customer_id}", headers=AUTH)
    assert response.status == 404
    code = await asyncio.to_thread(main, ["customer", "export", seeded.customer_id])
    assert code == 1
