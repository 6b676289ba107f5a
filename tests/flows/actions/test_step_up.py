"""Step-up verification off the web widget: an anonymous web chat visitor claims Ana's number,
the code goes to Ana's WhatsApp only, and typing it back verifies the visitor and joins it to
Ana; the code appears nowhere in storage, a window or a model request. Three wrong codes lock
it; a number nobody verified gets no code."""

from __future__ import annotations

import json
from pathlib import Path

import jwt
from sqlalchemy import select

from gateway.operators.accounts import create_operator
from gateway.storage.models import Message, OutboundEvent
from gateway.storage.repositories.audit import list_audit
from tests.flows.actions.step_up_support import (
    ANA,
    NOBODY,
    ana_and_a_visitor,
    code_sent,
    customer_of_ana,
    everything_stored,
)
from tests.flows.actions.support import IDENTITY_KEY
from tests.support.console import PASSWORD, USERNAME, log_in


async def test_a_code_to_anas_whatsapp_verifies_the_visitor_and_joins_it_to_ana(
    tmp_path: Path,
) -> None:
    events = {
        "RELAYDESK_EVENTS_URL": "http://127.0.0.1:9/events",
        "RELAYDESK_EVENTS_SECRET": "an-events-secret-of-some-length",
    }
    async with ana_and_a_visitor(tmp_path, **events) as (wa, model, api, visitor):
        ana = await customer_of_ana(wa)
        before = len(wa.twilio.created)

        asked = await visitor.say(f"meu número é {ANA}, quero ver o pedido 4471")

        offered = model.calls[-2].tool_names
        assert "order_status" not in offered and "start_verification" in offered
        recipient, code = code_sent(wa, before)
        assert recipient == f"whatsapp:{ANA}"  # Ana's WhatsApp, the only place it went
        assert code not in asked
        assert api.seen == []

        done = await visitor.say(f"o código é {code}")

        assert done == 'resultado: {"order": "4471", "status": "a caminho"}'
        [headers] = api.seen
        claims = jwt.decode(
            headers["X-Relaydesk-Identity"],
            IDENTITY_KEY,
            algorithms=["HS256"],
            audience="order_status",
        )
        assert claims["sub"] == ana and claims["link_level"] == "verified"
        assert claims["channel"] == "webchat"
        identity = await visitor.identity()
        assert identity.customer_id == ana and identity.link_level == "verified"
        assert identity.evidence["step_up"] == "otp:whatsapp"

        await visitor.say("obrigada")  # the visitor id keeps speaking at verified level

        assert "order_status" in model.calls[-1].tool_names
        assert "start_verification" not in model.calls[-1].tool_names

        # The code is nowhere: not stored, not in any window or model request.
        assert code not in await everything_stored(wa.stack)
        assert all(code not in json.dumps(call.messages) for call in model.calls)
        async with wa.stack.sessions()() as session:
            texts = list(await session.scalars(select(Message.text)))
            trail = await list_audit(session, action=None, limit=50)
        assert "o código é [verification code: verified]" in texts
        verified = [entry for entry in trail if entry.action == "identity.verified"]
        assert [entry.details["evidence"] for entry in verified] == ["otp:whatsapp"]
        sent = [entry for entry in trail if entry.action == "verification.sent"]
        assert [entry.details["sent_through"] for entry in sent] == ["whatsapp"]
        async with wa.stack.sessions()() as session:
            [announced] = list(
                await session.scalars(
                    select(OutboundEvent.payload).where(OutboundEvent.kind == "identity.verified")
                )
            )
        assert announced["customer_id"] == ana and announced["evidence"] == "otp:whatsapp"
        # Ana's profile in the console lists the code sent to her number and its use.
        async with wa.stack.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
        await log_in(wa.stack.client)
        profile = await (await wa.stack.client.get(f"/console/customers/{ana}")).text()
        start = profile.index('id="action-calls"')
        calls = profile[start : profile.index("</section>", start)]
        assert "verification.sent" in calls and "identity.verified" in calls
        assert "otp:whatsapp" in calls and code not in profile
        scraped = await (await wa.stack.client.get("/metrics")).text()
        assert 'relaydesk_verifications_total{outcome="sent",stage="start"} 1.0' in scraped
        assert 'relaydesk_verifications_total{outcome="verified",stage="attempt"} 1.0' in scraped


async def test_three_wrong_codes_lock_it(tmp_path: Path) -> None:
    async with ana_and_a_visitor(tmp_path) as (wa, _model, api, visitor):
        before = len(wa.twilio.created)
        await visitor.say(f"meu número é {ANA}")
        _, code = code_sent(wa, before)
        wrong = f"{(int(code) + 1) % 1_000_000:06d}"

        told = [await visitor.say(wrong) for _ in range(3)]
        after = await visitor.say(code)

        assert told[0] == told[1] != told[2]
        assert "incorreto" in told[0] and "esgotadas" in told[2]
        assert "esgotadas" in after  # the right code, too late
        identity = await visitor.identity()
        assert identity.link_level == "anonymous"
        assert identity.customer_id != await customer_of_ana(wa)
        assert api.seen == []
        stored = await everything_stored(wa.stack)
        assert code not in stored and wrong not in stored


async def test_a_number_nobody_verified_gets_no_code(tmp_path: Path) -> None:
    async with ana_and_a_visitor(tmp_path) as (wa, model, _api, visitor):
        before = len(wa.twilio.created)

        await visitor.say(f"meu número é {NOBODY}")

        assert wa.twilio.created[before:] == []
        [result] = [
            message["content"]
            for call in model.calls
            for message in call.messages
            if message["role"] == "tool"
        ]
        # Told as if it might have gone: a conversation cannot probe who is a customer.
        assert "If +5511912345678 belongs to a customer verified with us" in result
        async with wa.stack.sessions()() as session:
            trail = await list_audit(session, action=None, limit=50)
        assert [e.action for e in trail if e.action.startswith("verification.")] == [
            "verification.not_sent"
        ]
