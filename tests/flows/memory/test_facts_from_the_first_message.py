"""Facts from the first message: a WhatsApp message with an order id and a Pix key gives both
facts, sourced to it, before the next turn — on any of the customer's verified channels; the
correction supersedes the old key at once. Signed Twilio webhooks through the real app, the
window read through `POST /v1/context`, no compaction needed; once compaction has summarized
the episode, its summary reaches the web chat without the old key, while the episode itself
keeps both keys side by side."""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import jwt
from aiohttp.test_utils import TestServer
from sqlalchemy import select

from gateway.keys import COUNTER
from gateway.memory.queue import CompactionJob, InProcessQueue
from gateway.memory.rebuild import rebuild_customer
from gateway.memory.worker import MemoryWorker
from gateway.storage.models import Fact, Message
from gateway.storage.repositories import facts, summaries
from tests.support.context_api import post_context
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.stack import API_KEY, WEBCHAT_SECRET, Stack, running_stack
from tests.support.twilio_server import FakeTwilio
from tests.support.whatsapp_stack import whatsapp_stack

ACCOUNT = "AC" + "a" * 32
TOKEN = "twilio-auth-token-for-tests"
PUBLIC_URL = "https://relay.example.org"
NUMBER = "+5511998765432"
FIRST = "Meu pedido é o 4471-XB e minha chave Pix é ana.souza@example.com"
CORRECTION = "Corrigindo: minha chave Pix na verdade é ana.pix@example.com, a outra não vale mais."


async def _say(stack: Stack, twilio: FakeTwilio, text: str) -> None:
    sent = len(twilio.created)
    params = inbound_params(f"SM{uuid.uuid4().hex}", f"whatsapp:{NUMBER}", text, account=ACCOUNT)
    response = await post_signed(stack.client, params, token=TOKEN, public_url=PUBLIC_URL)
    assert response.status == 200
    await stack.stored()
    await stack.idle()
    assert len(twilio.created) == sent + 1  # answered


async def _facts(stack: Stack) -> list[Fact]:
    async with stack.sessions()() as session:
        return list((await session.scalars(select(Fact).order_by(Fact.id))).all())


async def _message_id(stack: Stack, text: str) -> int:
    async with stack.sessions()() as session:
        found = await session.scalar(select(Message.id).where(Message.text == text))
    assert found is not None
    return int(found)


async def test_the_first_message_gives_facts_and_a_correction_supersedes_at_once(
    tmp_path: Path,
) -> None:
    twilio = FakeTwilio()
    server = TestServer(twilio.app())
    await server.start_server()
    try:
        async with running_stack(
            "embedded",
            tmp_path,
            RELAYDESK_PUBLIC_URL=PUBLIC_URL,
            TWILIO_ACCOUNT_SID=ACCOUNT,
            TWILIO_AUTH_TOKEN=TOKEN,
            TWILIO_WHATSAPP_FROM="whatsapp:+14155238886",
            TWILIO_API_BASE=str(server.make_url("")).rstrip("/"),
        ) as stack:
            await _say(stack, twilio, FIRST)
            first_id = await _message_id(stack, FIRST)
            stored = {(f.key, f.value, f.source_message_id) for f in await _facts(stack)}
            assert ("order_id", "4471-XB", first_id) in stored
            assert ("pix_key", "ana.souza@example.com", first_id) in stored

            await _say(stack, twilio, CORRECTION)
            correction_id = await _message_id(stack, CORRECTION)
            pix = [f for f in await _facts(stack) if f.key == "pix_key"]
            assert [(f.value, f.superseded_by is None) for f in pix] == [
                ("ana.souza@example.com", False),
                ("ana.pix@example.com", True),
            ]
            assert pix[1].source_message_id == correction_id

            # Her web chat, with a token that proves the phone: the facts slice holds the
            # order and the current key, with their source channel.
            await _assert_web_chat_sees_only_the_current_key(stack)

            # A rebuild from the raw history (summaries and facts anew) keeps it so.
            worker = MemoryWorker(stack.sessions(), stack.app[COUNTER], InProcessQueue())
            customer_id = pix[1].customer_id
            await rebuild_customer(stack.sessions(), worker, customer_id)
            async with stack.sessions()() as session:
                kept = await facts.current_facts(session, customer_id)
            assert {(f.key, f.value) for f in kept} >= {
                ("order_id", "4471-XB"),
                ("pix_key", "ana.pix@example.com"),
            }
            await _assert_web_chat_sees_only_the_current_key(stack)
    finally:
        await server.close()


async def _web_chat_context(stack: Stack, message: str) -> dict[str, object]:
    """The window of her web chat, with a token that proves the phone."""
    token = jwt.encode(
        {
            "sub": "acct-ana",
            "exp": int(time.time()) + 600,
            "phone_number": NUMBER,
            "phone_number_verified": True,
        },
        WEBCHAT_SECRET,
        algorithm="HS256",
    )
    body = await post_context(
        stack.client,
        {"Authorization": f"Bearer {API_KEY}"},
        channel="webchat",
        external_id="visitor-ana-1",
        message=message,
        identity_token=token,
    )
    assert body["link_level"] == "verified"
    return body


async def _assert_web_chat_sees_only_the_current_key(stack: Stack) -> None:
    """Her web chat: the facts slice holds the order and the current key; nothing from the
    WhatsApp episode carries the old one."""
    body = await _web_chat_context(
        stack, "Qual chave Pix vocês têm para o reembolso do pedido 4471-XB?"
    )
    facts_slice = next(
        s
        for s in body["report"]["slices"]
        if s["name"] == "facts"  # type: ignore[index]
    )
    assert facts_slice["used"] > 0
    system = body["messages"][0]["content"]  # type: ignore[index]
    assert "4471-XB" in system and "ana.pix@example.com" in system
    # Recalled lines and summary sentences of the WhatsApp episode that carry the old key are
    # left out (the recall of "pedido" still brings that episode's other lines).
    assert "ana.souza@example.com" not in system


async def test_the_episodes_summary_reaches_the_web_chat_without_the_old_key(
    tmp_path: Path,
) -> None:
    async with whatsapp_stack(tmp_path) as gateway:
        stack = gateway.stack
        await gateway.say(NUMBER, FIRST)
        await gateway.say(NUMBER, CORRECTION)
        first_id = await _message_id(stack, FIRST)
        correction_id = await _message_id(stack, CORRECTION)

        # Answering in the WhatsApp episode itself: her turns whole, both keys side by side
        # (the correction is there, next to the value it corrects).
        own = await post_context(
            stack.client,
            {"Authorization": f"Bearer {API_KEY}"},
            channel="whatsapp",
            external_id=NUMBER,
            message="Vocês anotaram a chave certa?",
        )
        turns = [m["content"] for m in own["messages"]]  # type: ignore[attr-defined]
        assert FIRST in turns and CORRECTION in turns

        # Compaction writes the episode's summary, as it does when the episode closes.
        [pix] = [f for f in await _facts(stack) if f.key == "pix_key" and f.superseded_by is None]
        customer_id, episode_id = pix.customer_id, pix.source_episode_id
        worker = MemoryWorker(stack.sessions(), stack.app[COUNTER], InProcessQueue())
        outcome = await worker.handle(CompactionJob(customer_id, episode_id, "closed"))
        assert outcome.compacted > 0
        async with stack.sessions()() as session:
            summary = await summaries.episode_summary(session, customer_id, episode_id)
        assert summary is not None
        sources = {int(s["source_message_id"]): str(s["text"]) for s in summary.sentences}
        assert {first_id, correction_id} <= set(sources)
        # A summary masks e-mail-shaped keys before the stale filter ever reads it.
        assert "chave Pix é [email]" in sources[first_id]

        # A web chat message recall finds nothing for: the episode enters by its summary.
        body = await _web_chat_context(stack, "Bom dia!")
        system = str(body["messages"][0]["content"])  # type: ignore[index]
        assert sources[correction_id] in system and sources[first_id] in system
        assert "ana.souza@example.com" not in system
        assert "ana.pix@example.com" in system  # the current key, as a fact

        # And one it finds the episode's lines for: recalled, the old key still left out.
        body = await _web_chat_context(stack, "Qual é a minha chave Pix do pedido 4471-XB?")
        system = str(body["messages"][0]["content"])  # type: ignore[index]
        assert "chave Pix" in system.split("Earlier episodes", 1)[1]
        assert "ana.souza@example.com" not in system


async def test_a_corrected_pix_key_typed_as_bare_digits_stays_out_of_the_web_chat(
    tmp_path: Path,
) -> None:
    old = "Meu pedido é o 4471-XB e minha chave Pix é 11987654321"
    async with whatsapp_stack(tmp_path) as gateway:
        stack = gateway.stack
        await gateway.say(NUMBER, old)
        await gateway.say(NUMBER, CORRECTION)
        pix = [
            (f.value, f.superseded_by is None) for f in await _facts(stack) if f.key == "pix_key"
        ]
        assert pix == [("+5511987654321", False), ("ana.pix@example.com", True)]
        body = await _web_chat_context(stack, "Qual é a minha chave Pix do pedido 4471-XB?")
        system = str(body["messages"][0]["content"])  # type: ignore[index]
        assert "ana.pix@example.com" in system
    # Neither the recalled line nor a summary sentence brings the old key back in its typed form.
    assert "11987654321" not in system
