"""Console actions through the real forms and the JSON API: each one audited with the operator
and the reason; a correction supersedes the fact with its history kept and a source."""

from __future__ import annotations

from typing import Any

from aiohttp.test_utils import TestClient

from gateway.storage.repositories import facts, messages
from tests.support.console import AUTH, NUMBER, USERNAME, log_in, seed
from tests.support.stack import Stack


async def _post(client: TestClient, path: str, data: dict[str, str]) -> str:  # type: ignore[type-arg]
    response = await client.post(path, data=data, allow_redirects=False)
    assert response.status == 303, await response.text()
    return response.headers["Location"]


async def _audit(client: TestClient) -> list[dict[str, Any]]:  # type: ignore[type-arg]
    body = await (await client.get("/v1/operator/audit", headers=AUTH)).json()
    entries: list[dict[str, Any]] = body["audit"]
    return entries


async def test_every_form_action_is_audited_with_operator_and_reason(stack: Stack) -> None:
    seeded = await seed(stack)
    client = stack.client
    token = await log_in(client)
    cid = seeded.customer_id
    base = f"/console/customers/{cid}"

    # A reason is required: an empty one changes nothing.
    empty = await client.post(
        f"{base}/links/{seeded.pending_link_id}/confirm",
        data={"csrf_token": token, "reason": "  "},
        allow_redirects=False,
    )
    assert empty.status == 400 and "reason is required" in await empty.text()
    assert await _audit(client) == []

    async with stack.sessions()() as session:
        current = await facts.current_facts(session, cid)
    order = next(f for f in current if f.key == "order_id")
    steps = [
        (f"{base}/links/{seeded.pending_link_id}/confirm", {}, "confirm_link"),
        (f"{base}/facts/{order.id}/retract", {}, "retract_fact"),
        (f"{base}/facts/{seeded.email_fact_id}/pin", {}, "pin_fact"),
        (f"{base}/facts/{seeded.email_fact_id}/unpin", {}, "unpin_fact"),
        (f"{base}/facts/{seeded.email_fact_id}/correct", {"value": "ana@new.example"}, None),
        (f"{base}/rebuild", {}, "rebuild_memory"),
    ]
    expected: list[str] = []
    for index, (path, extra, action) in enumerate(steps):
        reason = f"reason number {index}"
        location = await _post(client, path, {"csrf_token": token, "reason": reason, **extra})
        assert location.startswith(f"/console/customers/{cid}?done=")
        expected.append(action or "correct_fact")
    entries = list(reversed(await _audit(client)))
    # Confirming the link merged the caller's customer in first (same reason, same operator).
    assert [e["action"] for e in entries] == ["merge", *expected]
    assert {e["actor"] for e in entries} == {USERNAME}
    assert [e["reason"] for e in entries[1:]] == [f"reason number {i}" for i in range(6)]
    assert entries[0]["reason"] == "reason number 0"
    rebuild = entries[-1]["details"]
    assert rebuild["episodes"] >= 2

    # The audit page lists them with their reasons.
    page = await (await client.get("/console/audit")).text()
    for index in range(6):
        assert f"reason number {index}" in page

    # The correction is pinned, so the rebuild kept it; the retracted fact stays retracted.
    async with stack.sessions()() as session:
        current = await facts.current_facts(session, cid)
    assert [(f.key, f.value, f.pinned) for f in current] == [("email", "ana@new.example", True)]

    # Split and merge too.
    location = await _post(
        client,
        f"{base}/split",
        {"csrf_token": token, "reason": "not the same caller", "identities": f"phone:{NUMBER}"},
    )
    new_customer = location.split("/console/customers/")[1].split("?")[0]
    assert new_customer != cid
    await _post(
        client,
        f"{base}/merge",
        {
            "csrf_token": token,
            "reason": "same caller after all",
            "source_customer_id": new_customer,
        },
    )
    latest = [(e["action"], e["reason"], e["actor"]) for e in (await _audit(client))[:2]]
    assert latest == [
        ("merge", "same caller after all", USERNAME),
        ("split", "not the same caller", USERNAME),
    ]


async def test_a_correction_supersedes_with_history_and_an_operator_note_source(
    stack: Stack,
) -> None:
    seeded = await seed(stack)
    client = stack.client
    token = await log_in(client)
    cid = seeded.customer_id
    await _post(
        client,
        f"/console/customers/{cid}/facts/{seeded.email_fact_id}/correct",
        {"csrf_token": token, "reason": "customer called to fix it", "value": "ana@new.example"},
    )
    async with stack.sessions()() as session:
        history = await facts.fact_history(session, cid, "email")
        assert [f.value for f in history] == ["ana@old.example", "ana@new.example"]
        old, new = history
        assert old.superseded_by == new.id and not old.is_current
        assert new.is_current and new.confirmed and new.confidence == 1.0
        assert new.scope == old.scope and "operator" in new.tags
        note = await messages.get_message(session, cid, new.source_message_id)
    assert note.channel == "console" and note.role == "operator"
    assert "customer called to fix it" in note.text and "ana@new.example" in note.text
    assert note.meta.operator == USERNAME

    # The profile shows the new value, the old one as history, and links the source note.
    page = await (await client.get(f"/console/customers/{cid}")).text()
    assert "ana@new.example" in page and "<s>ana@old.example</s>" in page
    assert f"/console/customers/{cid}/messages/{note.id}" in page
    source = await client.get(f"/console/customers/{cid}/messages/{note.id}")
    assert source.status == 200 and "customer called to fix it" in await source.text()

    # A superseded fact cannot be corrected again; an unchanged value is refused.
    stale = await client.post(
        f"/console/customers/{cid}/facts/{old.id}/correct",
        data={"csrf_token": token, "reason": "again", "value": "x@y.example"},
        allow_redirects=False,
    )
    assert stale.status == 400


async def test_the_json_api_accepts_the_console_login_with_the_csrf_header(stack: Stack) -> None:
    seeded = await seed(stack)
    client = stack.client
    token = await log_in(client)
    cid = seeded.customer_id
    found = await (
        await client.get("/v1/operator/customers", params={"q": "+55 11 99876-5432"})
    ).json()
    assert cid in [c["id"] for c in found["customers"]]
    corrected = await client.post(
        f"/v1/operator/customers/{cid}/facts/{seeded.email_fact_id}/correct",
        json={"value": "ana@api.example", "reason": "typo", "actor": "spoofed"},
        headers={"X-CSRF-Token": token},
    )
    assert corrected.status == 200, await corrected.text()
    body = await corrected.json()
    assert body["fact"]["value"] == "ana@api.example"
    # With a login, the actor is the operator, whatever the body says.
    assert body["audit"]["actor"] == USERNAME and body["audit"]["reason"] == "typo"
    preview = await client.post(
        f"/v1/operator/customers/{cid}/context-preview",
        json={"identity_id": seeded.whatsapp_identity_id, "message": "qual meu e-mail?"},
        headers={"X-CSRF-Token": token},
    )
    assert preview.status == 200
    window = await preview.json()
    assert "ana@api.example" in window["messages"][0]["content"]
    assert "ana@old.example" not in window["messages"][0]["content"]
    assert {s["name"] for s in window["report"]["slices"]} >= {"facts", "current_episode"}
    # With the API key the body's actor acts.
    pinned = await client.post(
        f"/v1/operator/customers/{cid}/facts/{body['fact']['id']}/pin",
        json={"reason": "keep it", "actor": "crm-sync"},
        headers=AUTH,
    )
    assert (await pinned.json())["audit"]["actor"] == "crm-sync"
    history = await (await client.get(f"/v1/operator/customers/{cid}/facts", headers=AUTH)).json()
    emails = [f for f in history["facts"] if f["key"] == "email"]
    assert [f["value"] for f in emails] == ["ana@old.example", "ana@api.example"]
    assert emails[1]["pinned"] and emails[0]["superseded_by"] == emails[1]["id"]


async def test_the_json_api_refusals_answer_400_with_their_codes(stack: Stack) -> None:
    seeded = await seed(stack)
    client = stack.client
    base = f"/v1/operator/customers/{seeded.customer_id}"
    fact = f"{base}/facts/{seeded.email_fact_id}"

    async def refused(path: str, body: dict[str, str]) -> str:
        response = await client.post(path, json=body, headers=AUTH)
        assert response.status == 400, await response.text()
        answer: dict[str, str] = await response.json()
        assert set(answer) == {"error", "detail"}
        return answer["error"]

    assert await refused(f"{fact}/correct", {"value": "x@y.example", "reason": " "}) == (
        "reason_required"
    )
    assert await refused(f"{fact}/correct", {"value": " ", "reason": "typo"}) == "value_required"
    assert await refused(f"{fact}/correct", {"value": "ana@old.example", "reason": "typo"}) == (
        "value_unchanged"
    )
    assert await refused(f"{base}/rebuild", {"reason": " "}) == "reason_required"
    retracted = await client.post(f"{fact}/retract", json={"reason": "wrong"}, headers=AUTH)
    assert retracted.status == 200
    assert await refused(f"{fact}/retract", {"reason": "again"}) == "fact_not_current"
    assert await refused(f"{fact}/correct", {"value": "z@y.example", "reason": "again"}) == (
        "fact_not_current"
    )
    missing = await client.post(f"{base}/facts/999999/pin", json={"reason": "x"}, headers=AUTH)
    assert missing.status == 404 and (await missing.json())["error"] == "not_found"


async def test_search_finds_by_phone_email_name_and_id(stack: Stack) -> None:
    seeded = await seed(stack)
    client = stack.client
    await log_in(client)
    for query in ("+55 (11) 99876-5432", "5511998765432", seeded.customer_id):
        page = await (await client.get("/console", params={"q": query})).text()
        assert f"/console/customers/{seeded.customer_id}" in page, query
    nothing = await (await client.get("/console", params={"q": "nobody@nowhere"})).text()
    assert "No customer matches." in nothing


async def test_operator_api_is_in_openapi(stack: Stack) -> None:
    spec = await (await stack.client.get("/openapi.json")).json()
    paths = spec["paths"]
    for path in (
        "/v1/operator/customers",
        "/v1/operator/customers/{customer_id}/facts/{fact_id}/correct",
        "/v1/operator/customers/{customer_id}/facts/{fact_id}/retract",
        "/v1/operator/customers/{customer_id}/rebuild",
        "/v1/operator/customers/{customer_id}/context-preview",
    ):
        assert path in paths, path
    assert "CorrectionIn" in spec["components"]["schemas"]
