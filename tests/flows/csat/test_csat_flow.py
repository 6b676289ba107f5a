"""The satisfaction question through a real gateway: signed WhatsApp webhooks in, the real
twilio client out to a local Twilio, the model a local OpenAI-compatible server.

Asked once after an operator hands the conversation back inside WhatsApp's 24-hour window;
the customer's digit stored with "a person took part", counted, thanked without the model;
a second hand-back in the same episode asks nothing; a closed window or the setting off asks
nothing."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from gateway.csat.asking import Asker
from gateway.csat.idle import IdleSurveys
from gateway.keys import COUNTER, DELIVER, EVENTS, SESSIONS
from gateway.runtime.clock import utcnow
from gateway.runtime.tasks import TaskOwner
from gateway.storage.models import Conversation
from gateway.storage.models_csat import CsatSurvey
from gateway.tenants import TenantSettings
from tests.support.app_settings import AUTH
from tests.support.openai_server import FakeOpenAI, model_settings
from tests.support.whatsapp_stack import WhatsAppStack, until, whatsapp_stack

NUMBER = "+5511998765432"
BASE = "/v1/operator/conversations"
DEFAULTS = TenantSettings()


@asynccontextmanager
async def _gateway(tmp_path: Path, model: FakeOpenAI) -> AsyncIterator[WhatsAppStack]:
    async with model.serving() as base_url:
        async with whatsapp_stack(tmp_path, "embedded", **model_settings(base_url)) as gateway:
            yield gateway


async def _send(gateway: WhatsAppStack, method: str, path: str, **body: Any) -> Any:
    response = await gateway.stack.client.request(method, path, json=body, headers=AUTH)
    assert response.status < 300, await response.text()
    return await response.json()


async def _switch_on(gateway: WhatsAppStack) -> None:
    await _send(
        gateway,
        "PATCH",
        "/v1/settings/domain/default",
        settings={"csat_enabled": True},
        reason="ask customers",
    )


async def _hold_and_hand_back(gateway: WhatsAppStack) -> str:
    held = await _send(
        gateway,
        "POST",
        f"{BASE}/handoff",
        channel="whatsapp",
        external_id=NUMBER,
        reason="a delayed order",
        actor="alice",
    )
    back = await _send(
        gateway, "POST", f"{BASE}/{held['id']}/handback", actor="alice", reason="solved"
    )
    assert back["owner"] == "bot"
    return str(held["id"])


async def _surveys(gateway: WhatsAppStack) -> list[CsatSurvey]:
    async with gateway.stack.sessions()() as session:
        return list(await session.scalars(select(CsatSurvey).order_by(CsatSurvey.id)))


async def _answers(gateway: WhatsAppStack) -> dict[tuple[str, str], float]:
    text = await (await gateway.stack.client.get("/metrics")).text()
    found = re.findall(
        r'^relaydesk_csat_answers_total\{person="(\w+)",score="(\d)"\} (\S+)$', text, re.M
    )
    return {(person, score): float(value) for person, score, value in found}


async def test_asked_once_after_a_hand_back_answered_stored_and_counted(tmp_path: Path) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, model) as gateway:
        await _switch_on(gateway)
        await gateway.say(NUMBER, "Olá, meu pedido atrasou")
        sent = len(gateway.twilio.created)
        conversation_id = await _hold_and_hand_back(gateway)
        await until(lambda: len(gateway.twilio.created) == sent + 1)
        asked = gateway.twilio.created[-1]
        assert asked["Body"] == DEFAULTS.csat_question
        assert asked["To"] == f"whatsapp:{NUMBER}"
        [survey] = await _surveys(gateway)
        assert (survey.conversation_id, survey.trigger, survey.person_took_part) == (
            conversation_id,
            "handed_back",
            True,
        )
        assert survey.score is None

        # The digit is the answer: stored, counted, thanked, and no model call.
        calls = len(model.calls)
        await gateway.say(NUMBER, "5")
        assert gateway.twilio.created[-1]["Body"] == DEFAULTS.csat_thanks
        assert len(model.calls) == calls
        [survey] = await _surveys(gateway)
        assert survey.score == 5 and survey.answered_at is not None
        assert await _answers(gateway) == {("yes", "5"): 1.0}

        # Another hand-back in the same episode asks nothing; the next message goes to the bot.
        sent = len(gateway.twilio.created)
        await _hold_and_hand_back(gateway)
        await gateway.stack.idle()
        assert len(gateway.twilio.created) == sent
        assert len(await _surveys(gateway)) == 1
        await gateway.say(NUMBER, "4")
        assert len(model.calls) == calls + 1  # no survey waits: the bot answers a digit too


async def test_anything_but_a_score_closes_the_survey_and_goes_to_the_bot(
    tmp_path: Path,
) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, model) as gateway:
        await _switch_on(gateway)
        await gateway.say(NUMBER, "Olá")
        sent = len(gateway.twilio.created)
        await _hold_and_hand_back(gateway)
        await until(lambda: len(gateway.twilio.created) == sent + 1)
        calls = len(model.calls)
        await gateway.say(NUMBER, "Foi ótimo, obrigado")
        assert len(model.calls) == calls + 1
        [survey] = await _surveys(gateway)
        assert survey.score is None and survey.closed_at is not None
        assert await _answers(gateway) == {}


async def test_not_asked_when_the_window_is_closed(tmp_path: Path) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, model) as gateway:
        await _switch_on(gateway)
        await gateway.say(NUMBER, "Olá")
        async with gateway.stack.sessions().begin() as session:
            await session.execute(
                update(Conversation).values(last_inbound_at=utcnow() - timedelta(hours=25))
            )
        sent = len(gateway.twilio.created)
        await _hold_and_hand_back(gateway)
        await gateway.stack.idle()
        assert len(gateway.twilio.created) == sent
        assert await _surveys(gateway) == []


async def test_the_setting_off_asks_nothing(tmp_path: Path) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, model) as gateway:
        await gateway.say(NUMBER, "Olá")
        sent = len(gateway.twilio.created)
        await _hold_and_hand_back(gateway)
        await gateway.stack.idle()
        assert len(gateway.twilio.created) == sent
        assert await _surveys(gateway) == []


async def test_twilio_sends_the_tenants_content_template_when_it_has_one(
    tmp_path: Path,
) -> None:
    content_sid = "HX" + "5" * 32
    model = FakeOpenAI()
    async with _gateway(tmp_path, model) as gateway:
        await _send(
            gateway,
            "PATCH",
            "/v1/settings/domain/default",
            settings={
                "csat_enabled": True,
                "csat_template": "csat",
                "whatsapp_templates": {"csat": {"content_sid": content_sid}},
            },
            reason="ask with buttons",
        )
        await gateway.say(NUMBER, "Olá")
        sent = len(gateway.twilio.created)
        await _hold_and_hand_back(gateway)
        await until(lambda: len(gateway.twilio.created) == sent + 1)
        assert gateway.twilio.created[-1]["ContentSid"] == content_sid
        # A quick reply's title comes back as the message's text.
        await gateway.say(NUMBER, "4")
        assert gateway.twilio.created[-1]["Body"] == DEFAULTS.csat_thanks
        [survey] = await _surveys(gateway)
        assert survey.score == 4


def _idle_surveys(gateway: WhatsAppStack, after: timedelta) -> IdleSurveys:
    """The gateway's idle sweep, its clock `after` from now (the sweep is run by hand)."""
    app = gateway.stack.app
    asker = Asker(app[SESSIONS], app[COUNTER], app[EVENTS], app[DELIVER])
    later = utcnow() + after
    return IdleSurveys(asker, owner=TaskOwner(), clock=lambda: later)


async def test_asked_once_after_an_idle_close_without_a_person(tmp_path: Path) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, model) as gateway:
        await _switch_on(gateway)
        await gateway.say(NUMBER, "Olá, meu pedido atrasou")
        sent = len(gateway.twilio.created)
        # Not idle yet (the tenant's episode_idle_minutes is 30).
        assert await _idle_surveys(gateway, timedelta(minutes=10)).sweep() == 0
        assert await _idle_surveys(gateway, timedelta(minutes=31)).sweep() == 1
        await until(lambda: len(gateway.twilio.created) == sent + 1)
        assert gateway.twilio.created[-1]["Body"] == DEFAULTS.csat_question
        [survey] = await _surveys(gateway)
        assert (survey.trigger, survey.person_took_part) == ("idle_close", False)
        # Once per episode: the next sweep, idle again, asks nothing.
        assert await _idle_surveys(gateway, timedelta(minutes=70)).sweep() == 0
        await gateway.say(NUMBER, "3")
        assert gateway.twilio.created[-1]["Body"] == DEFAULTS.csat_thanks
        assert await _answers(gateway) == {("no", "3"): 1.0}


async def test_not_asked_after_an_idle_close_outside_the_window(tmp_path: Path) -> None:
    model = FakeOpenAI()
    async with _gateway(tmp_path, model) as gateway:
        await _switch_on(gateway)
        await gateway.say(NUMBER, "Olá")
        async with gateway.stack.sessions().begin() as session:
            await session.execute(
                update(Conversation).values(last_inbound_at=utcnow() - timedelta(hours=25))
            )
        sent = len(gateway.twilio.created)
        assert await _idle_surveys(gateway, timedelta(minutes=31)).sweep() == 0
        await gateway.stack.idle()
        assert len(gateway.twilio.created) == sent
        assert await _surveys(gateway) == []
