"""Step-up codes within limits: outside WhatsApp's 24-hour window a code goes only as the
tenant's verification template; a number gets a few codes an hour at most; a code typed after
its expiry verifies nothing and the customer is told so."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

from sqlalchemy import update

from gateway.runtime.clock import utcnow
from gateway.storage.models import Conversation, IdentityVerification
from gateway.storage.repositories.audit import list_audit
from tests.flows.actions.step_up_support import (
    ANA,
    ana_and_a_visitor,
    code_sent,
    customer_of_ana,
    everything_stored,
)
from tests.support.stack import API_KEY
from tests.support.whatsapp_stack import WhatsAppStack


async def _window_closed(wa: WhatsAppStack) -> None:
    """Ana last wrote on WhatsApp 25 hours ago."""
    async with wa.stack.sessions().begin() as session:
        await session.execute(
            update(Conversation)
            .where(Conversation.channel == "whatsapp")
            .values(last_inbound_at=utcnow() - timedelta(hours=25))
        )


async def _start_outcomes(wa: WhatsAppStack) -> list[str]:
    async with wa.stack.sessions()() as session:
        trail = await list_audit(session, action=None, limit=100)
    return sorted(e.action for e in trail if e.action.startswith("verification."))


async def test_outside_the_window_no_code_goes_without_a_template(tmp_path: Path) -> None:
    async with ana_and_a_visitor(tmp_path) as (wa, _model, _api, visitor):
        await _window_closed(wa)
        before = len(wa.twilio.created)

        await visitor.say(f"meu número é {ANA}")

        assert wa.twilio.created[before:] == []
        assert await _start_outcomes(wa) == ["verification.outside_window"]


async def test_outside_the_window_the_code_goes_as_the_template(tmp_path: Path) -> None:
    tenant = {
        "whatsapp_templates": {"codigo": {"content_sid": "HX" + "c" * 32}},
        "verification": {"template": "codigo"},
    }
    async with ana_and_a_visitor(tmp_path, tenant) as (wa, _model, _api, visitor):
        await _window_closed(wa)
        before = len(wa.twilio.created)

        await visitor.say(f"meu número é {ANA}")

        [sent] = wa.twilio.created[before:]
        assert sent["To"] == f"whatsapp:{ANA}"
        assert sent["ContentSid"] == "HX" + "c" * 32
        code = json.loads(sent["ContentVariables"])["1"]
        assert len(code) == 6 and code.isdigit()
        assert await _start_outcomes(wa) == ["verification.sent"]

        assert await visitor.say(code) != ""
        assert code not in await everything_stored(wa.stack)


async def test_a_number_gets_three_codes_an_hour(tmp_path: Path) -> None:
    async with ana_and_a_visitor(tmp_path) as (wa, _model, _api, visitor):
        before = len(wa.twilio.created)

        for _ in range(4):
            await visitor.say(f"meu número é {ANA}")

        assert len(wa.twilio.created[before:]) == 3
        assert await _start_outcomes(wa) == ["verification.limited"] + ["verification.sent"] * 3


async def test_an_expired_code_verifies_nothing(tmp_path: Path) -> None:
    async with ana_and_a_visitor(tmp_path) as (wa, _model, _api, visitor):
        before = len(wa.twilio.created)
        await visitor.say(f"meu número é {ANA}")
        _, code = code_sent(wa, before)
        async with wa.stack.sessions().begin() as session:
            await session.execute(
                update(IdentityVerification).values(expires_at=utcnow() - timedelta(seconds=1))
            )

        told = await visitor.say(code)

        assert "expirou" in told
        assert (await visitor.identity()).link_level == "anonymous"
        assert code not in await everything_stored(wa.stack)

        # Erasing Ana erases the codes sent to her number, whoever asked for them.
        response = await wa.stack.client.delete(
            f"/v1/operator/customers/{await customer_of_ana(wa)}",
            json={"reason": "data subject request", "actor": "dpo"},
            headers={"Authorization": f"Bearer {API_KEY}"},
        )
        assert response.status == 200, await response.text()
        assert (await response.json())["removed"]["identity_verifications"] == 1
