"""A write the tenant leaves to an operator (`approval: "operator"`): the customer is told it
went to the team and their "SIM" sends nothing; an operator approves it on the conversation's
console page (sent once, with the held row's id as Idempotency-Key and the customer's
assertion, even when two approve at once) or rejects it, and the customer is told the outcome;
the turn's trace and the customer's profile show the calls."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

import jwt
import pytest
from aiohttp import ClientSession, CookieJar
from sqlalchemy import select, update

from gateway.operators import approvals
from gateway.runtime.clock import utcnow
from gateway.storage.models import ActionConfirmation, TurnRow
from gateway.storage.repositories.audit import list_audit
from tests.flows.actions.approvals_support import ASK, CHANGE, SECOND_OPERATOR, Talk, talking
from tests.flows.actions.support import IDENTITY_KEY
from tests.support.console import PASSWORD, USERNAME, csrf_of, log_in
from tests.support.stack import Stack

REASON = "the customer called to confirm"


@asynccontextmanager
async def logged_in(stack: Stack, username: str) -> AsyncIterator[tuple[ClientSession, str]]:
    """Another browser: a session of its own logged in as ``username``; with its CSRF token."""
    async with ClientSession(cookie_jar=CookieJar(unsafe=True)) as browser:
        form = await browser.get(stack.client.make_url("/console/login"))
        response = await browser.post(
            stack.client.make_url("/console/login"),
            data={
                "csrf_token": csrf_of(await form.text()),
                "username": username,
                "password": PASSWORD,
            },
            allow_redirects=False,
        )
        assert response.status == 303
        home = await browser.get(stack.client.make_url("/console"))
        yield browser, csrf_of(await home.text())


async def _asked(talk: Talk) -> tuple[str, str]:
    """The customer asks for the write; the conversation's id and the held row's id."""
    await talk.say(ASK)
    [(held_id, status)] = await talk.held()
    assert status == "approval"
    conversation_id, _ = await talk.conversation()
    return conversation_id, held_id


async def test_the_customer_is_told_it_went_to_the_team_and_their_yes_sends_nothing(
    tmp_path: Path,
) -> None:
    async with talking(tmp_path) as talk:
        told = await talk.say(ASK)

        assert talk.api.seen == []
        assert "aprovação da nossa equipe" in told and CHANGE in told
        assert "key: ana@example.org" in told and "SIM" not in told
        [(_, status)] = await talk.held()
        assert status == "approval"

        await talk.say("SIM")

        assert talk.api.seen == []  # the customer's yes is not the operator's approval
        [(_, status)] = await talk.held()
        assert status == "approval"


async def test_an_operator_approves_it_once_and_the_customer_is_told(tmp_path: Path) -> None:
    async with talking(tmp_path) as talk:
        conversation_id, held_id = await _asked(talk)
        client = talk.stack.client
        token = await log_in(client)
        page_path = f"/console/conversations/{conversation_id}"

        # Listed as waiting on the conversations page, shown with masked values on its own.
        home = await (await client.get("/console")).text()
        assert f'href="{page_path}"' in home and "change_pix_key" in home
        page = await (await client.get(page_path)).text()
        assert f'data-held-id="{held_id}"' in page and "waiting for an operator" in page
        assert "***@example.org" in page and "ana@example.org" not in page
        assert f"{page_path}/actions/{held_id}/approve" in page
        assert f"{page_path}/actions/{held_id}/reject" in page

        # Without the form's CSRF token nothing is sent.
        forged = await client.post(
            f"{page_path}/actions/{held_id}/approve", data={"reason": REASON}
        )
        assert forged.status == 403 and talk.api.seen == []

        approved = await client.post(
            f"{page_path}/actions/{held_id}/approve",
            data={"csrf_token": token, "reason": REASON},
            allow_redirects=False,
        )

        assert approved.status == 303, await approved.text()
        assert approved.headers["Location"].startswith(f"{page_path}?done=")
        [(headers, body)] = talk.api.seen
        assert body == {"key": "ana@example.org"}  # the undeclared argument stays dropped
        assert headers["Idempotency-Key"] == held_id
        claims = jwt.decode(
            headers["X-Relaydesk-Identity"],
            IDENTITY_KEY,
            algorithms=["HS256"],
            options={"verify_aud": False},
        )
        async with talk.stack.sessions()() as session:
            held = await session.get(ActionConfirmation, held_id)
            assert held is not None
        assert claims["sub"] == held.customer_id and held.status == "approved"

        after = await (await client.get(approved.headers["Location"])).text()
        assert "action approved and sent: ok; the customer was told" in after
        assert (
            "approved and sent" in after and f"{page_path}/actions/{held_id}/approve" not in after
        )
        assert "change_pix_key" not in await (await client.get("/console")).text()

        # The customer reads the outcome in the widget's thread, as the team's message.
        await talk.stack.deliver.flush((await talk.conversation())[1])
        thread = await talk.thread()
        assert thread[-1].startswith("Nossa equipe aprovou e concluímos: " + CHANGE)
        async with talk.stack.sessions()() as session:
            told = await session.scalar(select(TurnRow).where(TurnRow.status == "operator"))
        assert told is not None and told.delivery_status == "sent"

        # Audited with the operator and the reason; approving again sends nothing.
        async with talk.stack.sessions()() as session:
            [entry] = await list_audit(session, action="action.approved")
        assert entry.actor == USERNAME and entry.reason == REASON
        assert entry.details["status"] == "ok" and entry.details["http_status"] == 200
        assert entry.details["arguments"] == '{"key":"***@example.org"}'
        assert entry.details["held_id"] == held_id
        again = await client.post(
            f"{page_path}/actions/{held_id}/approve",
            data={"csrf_token": token, "reason": REASON},
        )
        assert again.status == 409 and "approved" in await again.text()
        assert len(talk.api.seen) == 1


@pytest.mark.parametrize("backend", ["embedded", "production"])
async def test_two_operators_approving_at_once_send_it_once(
    tmp_path: Path, backend: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Both approvals have read the write as waiting before either decides: only the
    # compare-and-set on its status stands between them.
    both_read = asyncio.Barrier(2)
    prepare = approvals._prepare

    async def read_together(*args: Any) -> Any:
        prepared = await prepare(*args)
        async with asyncio.timeout(5):
            await both_read.wait()
        return prepared

    monkeypatch.setattr(approvals, "_prepare", read_together)
    async with talking(tmp_path, backend) as talk:
        conversation_id, held_id = await _asked(talk)
        path = f"/console/conversations/{conversation_id}/actions/{held_id}/approve"
        async with (
            logged_in(talk.stack, USERNAME) as (first, first_token),
            logged_in(talk.stack, SECOND_OPERATOR) as (second, second_token),
        ):
            answers = await asyncio.gather(
                *(
                    browser.post(
                        talk.stack.client.make_url(path),
                        data={"csrf_token": token, "reason": REASON},
                        allow_redirects=False,
                    )
                    for browser, token in ((first, first_token), (second, second_token))
                )
            )
            statuses = sorted(answer.status for answer in answers)

        assert statuses == [303, 409]
        assert len(talk.api.seen) == 1
        assert await talk.held() == [(held_id, "approved")]
        async with talk.stack.sessions()() as session:
            decisions = await list_audit(session, action="action.approved")
        assert len(decisions) == 1 and decisions[0].actor in {USERNAME, SECOND_OPERATOR}
        await talk.stack.deliver.flush((await talk.conversation())[1])
        told = [text for text in await talk.thread() if text.startswith("Nossa equipe")]
        assert len(told) == 1


async def test_a_rejected_write_is_not_sent_and_the_customer_is_told(tmp_path: Path) -> None:
    async with talking(tmp_path) as talk:
        conversation_id, held_id = await _asked(talk)
        client = talk.stack.client
        token = await log_in(client)
        page_path = f"/console/conversations/{conversation_id}"

        blank = await client.post(
            f"{page_path}/actions/{held_id}/reject", data={"csrf_token": token, "reason": " "}
        )
        assert blank.status == 400 and await talk.held() == [(held_id, "approval")]

        rejected = await client.post(
            f"{page_path}/actions/{held_id}/reject",
            data={"csrf_token": token, "reason": "the key belongs to someone else"},
        )

        assert rejected.status == 200  # the conversation's page, after the redirect
        page = await rejected.text()
        assert "action rejected; the customer was told" in page
        assert 'data-state="rejected"' in page and "/approve" not in page
        assert talk.api.seen == [] and await talk.held() == [(held_id, "rejected")]
        await talk.stack.deliver.flush((await talk.conversation())[1])
        assert (await talk.thread())[-1].startswith("Nossa equipe não aprovou: " + CHANGE)
        async with talk.stack.sessions()() as session:
            [entry] = await list_audit(session, action="action.rejected")
        assert entry.actor == USERNAME and entry.details["status"] == "rejected"


async def test_an_expired_write_is_shown_expired_and_cannot_be_approved(tmp_path: Path) -> None:
    async with talking(tmp_path) as talk:
        conversation_id, held_id = await _asked(talk)
        async with talk.stack.sessions().begin() as session:
            await session.execute(
                update(ActionConfirmation).values(expires_at=utcnow() - timedelta(seconds=1))
            )
        client = talk.stack.client
        token = await log_in(client)
        page_path = f"/console/conversations/{conversation_id}"

        page = await (await client.get(page_path)).text()
        assert 'data-state="expired"' in page and "/approve" not in page
        assert "change_pix_key" not in await (await client.get("/console")).text()

        late = await client.post(
            f"{page_path}/actions/{held_id}/approve",
            data={"csrf_token": token, "reason": REASON},
        )

        assert "the action had expired: nothing was sent" in await late.text()
        assert talk.api.seen == [] and await talk.held() == [(held_id, "expired")]


async def test_the_turn_trace_and_the_profile_show_the_calls(tmp_path: Path) -> None:
    async with talking(tmp_path) as talk:
        conversation_id, held_id = await _asked(talk)
        client = talk.stack.client
        token = await log_in(client)
        await client.post(
            f"/console/conversations/{conversation_id}/actions/{held_id}/approve",
            data={"csrf_token": token, "reason": REASON},
        )
        async with talk.stack.sessions()() as session:
            held = await session.get(ActionConfirmation, held_id)
            assert held is not None
        base = f"/console/customers/{held.customer_id}"

        # The turn of the customer's message lists the call the model made.
        trace = await (await client.get(f"{base}/messages/{talk.message_ids[0]}")).text()
        assert f'data-turn-id="{held.turn_id}"' in trace
        row = re.search(r'<tr data-tool="change_pix_key"[^>]*>(.*?)</tr>', trace)
        assert row is not None
        assert "awaiting_confirmation" in row.group(1) and "note" in row.group(1)

        # The profile lists the customer's calls and decisions, newest first.
        profile = await (await client.get(base)).text()
        start = profile.index('id="action-calls"')
        section = profile[start : profile.index("</section>", start)]
        events = re.findall(r'data-event="([^"]+)"', section)
        assert events == ["approved", "awaiting_confirmation"]
        assert "approved · ok" in section and USERNAME in section
        assert "***@example.org" in section and "ana@example.org" not in section
        assert "webchat" in section and "anonymous" in section
