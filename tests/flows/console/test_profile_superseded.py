"""The console profile after a customer corrected her Pix key on WhatsApp: the current key is the
fact, the old one is its history, marked superseded, each linked to the message it came from —
with or without a summary model also reading each message (the same fact found twice is one
fact)."""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.operators.accounts import create_operator
from gateway.storage.models import Fact
from gateway.storage.repositories import tenants
from tests.support.console import PASSWORD, USERNAME, log_in
from tests.support.openai_server import Call, FakeOpenAI, model_settings
from tests.support.whatsapp_stack import WhatsAppStack, whatsapp_stack

NUMBER = "+5511998765432"
FIRST = "Meu pedido é o 4471-XB e minha chave Pix é ana.souza@example.com"
CORRECTION = "Corrigindo: minha chave Pix na verdade é ana.pix@example.com, a outra não vale mais."
_ROW = re.compile(r'<tr data-fact-key="pix_key"[^>]*>(.*?)</tr>', re.DOTALL)
_SOURCE = re.compile(r"valid source id: (\d+)")


def _summary_model(call: Call) -> str | None:
    """A summary model that reads the Pix keys the way the offline extractors do."""
    if call.model != "summary-mini":
        return None
    source = _SOURCE.search(call.last_user_text)
    assert source is not None
    keys = {FIRST: "ana.souza@example.com", CORRECTION: "ana.pix@example.com"}
    said = next((key for text, key in keys.items() if text in call.last_user_text), None)
    facts = [] if said is None else [{"key": "pix_key", "value": said, "scope": "payment"}]
    return json.dumps({"facts": [{**f, "source_message_id": int(source.group(1))} for f in facts]})


@asynccontextmanager
async def _gateway(
    tmp_path: Path, with_model: bool
) -> AsyncIterator[tuple[WhatsAppStack, FakeOpenAI]]:
    fake = FakeOpenAI(reply_for=_summary_model)
    async with AsyncExitStack() as exits:
        settings = (
            model_settings(await exits.enter_async_context(fake.serving())) if with_model else {}
        )
        gateway = await exits.enter_async_context(
            whatsapp_stack(tmp_path, public_url="http://relay.example.org", **settings)
        )
        async with gateway.stack.sessions().begin() as session:
            await create_operator(session, USERNAME, PASSWORD)
            if with_model:
                await tenants.save_tenant_settings(
                    session,
                    domain=tenants.DEFAULT_DOMAIN,
                    settings={"summary_model": "openai:summary-mini"},
                )
        yield gateway, fake


@pytest.mark.parametrize("with_model", [False, True], ids=["offline", "summary model"])
async def test_the_profile_shows_the_old_pix_key_as_superseded(
    tmp_path: Path, with_model: bool
) -> None:
    async with _gateway(tmp_path, with_model) as (gateway, fake):
        await gateway.say(NUMBER, FIRST)
        await gateway.say(NUMBER, CORRECTION)
        first_id = await gateway.message_id(FIRST)
        correction_id = await gateway.message_id(CORRECTION)
        if with_model:  # both messages were read by the model too
            assert sum(c.model == "summary-mini" for c in fake.calls) == 2
        async with gateway.stack.sessions()() as session:
            pix = list(
                await session.scalars(select(Fact).where(Fact.key == "pix_key").order_by(Fact.id))
            )
        # One row per value, however many extractors found it.
        assert [(f.value, f.source_message_id) for f in pix] == [
            ("ana.souza@example.com", first_id),
            ("ana.pix@example.com", correction_id),
        ]
        assert pix[0].superseded_by == pix[1].id and pix[1].superseded_by is None
        customer_id = pix[0].customer_id

        client = gateway.stack.client
        await log_in(client)
        response = await client.get(f"/console/customers/{customer_id}")
        assert response.status == 200
        page = await response.text()
        [row] = _ROW.findall(page)  # only the current key has a row of its own
        assert '<td class="value">ana.pix@example.com</td>' in row
        assert f"whatsapp message #{correction_id}" in row
        history = re.search(r'<ul class="history">(.*?)</ul>', row, re.DOTALL)
        assert history is not None
        assert re.fullmatch(
            rf'<li><s>ana\.souza@example\.com</s> <a href="/console/customers/{customer_id}'
            rf'/messages/{first_id}">#{first_id}</a> superseded</li>',
            history.group(1),
        ), history.group(1)
        assert '<td class="value">ana.souza@example.com</td>' not in page

        # The old key's source is one click away.
        source = await client.get(f"/console/customers/{customer_id}/messages/{first_id}")
        assert source.status == 200 and "ana.souza@example.com" in await source.text()
