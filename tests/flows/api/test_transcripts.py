"""`POST /v1/transcripts` through a real gateway: every vendor fixture, versions, uncertainty
carried into the window, unconfirmed transcript facts, and card numbers that never survive."""

from __future__ import annotations

import json
import logging
import random
import time
from pathlib import Path
from typing import Any

import jwt
import pytest
from sqlalchemy import select

from channels.base import InboundMessage
from channels.transcripts import parse_transcript
from gateway.keys import MEMORY
from gateway.runtime.clock import utcnow
from gateway.storage.models import Episode, Message
from gateway.storage.repositories import tenants
from tests.support.app_settings import AUTH
from tests.support.context_api import post_context
from tests.support.fixtures import FIXTURES
from tests.support.stack import WEBCHAT_SECRET, Stack, running_stack

CALLER = "+5511998765432"


def _fixtures() -> list[tuple[str, str, dict[str, Any]]]:
    found = []
    for folder, fmt in (
        ("aws_transcribe", "aws_transcribe"),
        ("deepgram", "deepgram"),
        ("assemblyai", "assemblyai"),
        ("openai_whisper", "whisper"),
    ):
        for path in sorted((FIXTURES / folder).glob("*.json")):
            data = json.loads(path.read_text())
            if path.name == "openai_docs_transcription_examples.json":
                for name, example in data.items():
                    if isinstance(example, dict) and ("segments" in example or "text" in example):
                        found.append((f"{path.name}:{name}", fmt, example))
            else:
                found.append((path.name, fmt, data))
    return found


def _envelope(call_id: str, fmt: str, transcript: dict[str, Any], **more: object) -> dict:  # type: ignore[type-arg]
    return {
        "call_id": call_id,
        "caller": CALLER,
        "customer_id": None,
        "started_at": "2026-11-02T14:00:00Z",
        "format": fmt,
        "customer_speaker": None,
        "transcript": transcript,
        **more,
    }


def _native(*segments: tuple[str, str, float]) -> dict[str, Any]:
    return {
        "segments": [
            {
                "speaker": speaker,
                "text": text,
                "start": float(index * 5),
                "end": float(index * 5 + 4),
                "confidence": confidence,
                "words": [
                    {
                        "text": word,
                        "confidence": confidence,
                        "start": float(index * 5),
                        "end": float(index * 5 + 1),
                    }
                    for word in text.split()
                ],
            }
            for index, (speaker, text, confidence) in enumerate(segments)
        ]
    }


async def _post(stack: Stack, body: dict) -> dict:  # type: ignore[type-arg]
    response = await stack.client.post("/v1/transcripts", json=body, headers=AUTH)
    assert response.status == 201, await response.text()
    result: dict[str, Any] = await response.json()
    return result


async def _settled(stack: Stack) -> None:
    await stack.app[MEMORY].queue.drained()  # type: ignore[attr-defined]


@pytest.fixture
async def stack(tmp_path: Path):  # type: ignore[no-untyped-def]
    async with running_stack("embedded", tmp_path) as running:
        yield running


async def test_every_fixture_ingests_with_its_speakers_and_confidences(stack: Stack) -> None:
    cases = _fixtures()
    assert len(cases) >= 12
    for index, (name, fmt, transcript) in enumerate(cases):
        expected = parse_transcript(fmt, transcript)
        body = await _post(stack, _envelope(f"call-{index}", fmt, transcript))
        async with stack.sessions()() as session:
            rows = list(
                await session.scalars(
                    select(Message).where(Message.episode_id == body["episode_id"])
                )
            )
        customer = [r for r in rows if r.role == "user"]
        agent = [r for r in rows if r.role == "assistant"]
        spoken = [s for s in expected.segments if s.text.strip()]
        assert len(customer) == sum(1 for s in spoken if s.speaker == "customer"), name
        assert len(agent) == sum(1 for s in spoken if s.speaker == "agent"), name
        assert body["messages"] == len(rows)
        assert body["customer_confidence"] == expected.customer_confidence
        assert all(r.channel == "phone" for r in rows)
        with_confidence = [s for s in spoken if s.confidence is not None]
        assert sum(1 for r in rows if r.transcript_confidence is not None) == len(with_confidence)


async def test_whisper_hallucination_on_silence_is_flagged(stack: Stack) -> None:
    transcript = json.loads(
        (FIXTURES / "openai_whisper" / "wts_medium_empty_audio_hallucination.json").read_text()
    )
    body = await _post(stack, _envelope("silence", "whisper", transcript))
    async with stack.sessions()() as session:
        [row] = list(
            await session.scalars(select(Message).where(Message.episode_id == body["episode_id"]))
        )
    assert "probable_hallucination" in row.extra["flags"]


async def test_a_repost_is_a_new_version_of_one_episode(stack: Stack) -> None:
    first = _native(("agent", "Central, bom dia", 0.95), ("customer", "pedido 4471", 0.5))
    corrected = _native(("agent", "Central, bom dia", 0.95), ("customer", "pedido 4417", 0.9))
    one = await _post(stack, _envelope("call-77", "native", first))
    same = await _post(stack, _envelope("call-77", "native", first))
    two = await _post(stack, _envelope("call-77", "native", corrected))
    assert one["episode_id"] == same["episode_id"] == two["episode_id"]
    assert (one["version"], same["version"], two["version"]) == (1, 1, 2)
    async with stack.sessions()() as session:
        episodes = list(await session.scalars(select(Episode).where(Episode.channel == "phone")))
    assert len(episodes) == 1 and episodes[0].version == 2


async def test_window_shows_the_call_only_as_a_tagged_summary_and_facts_stay_unconfirmed(
    tmp_path: Path,
) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        whatsapp = await stack.client.post(
            "/v1/context",
            json={"channel": "whatsapp", "external_id": CALLER, "message": "oi"},
            headers=AUTH,
        )
        customer_id = (await whatsapp.json())["customer_id"]
        call = _native(
            ("agent", "Central de atendimento, boa tarde", 0.97),
            ("customer", "Meu e-mail é ana.souza@example.org e o pedido é o 4471", 0.62),
            ("agent", "Obrigado, vou verificar", 0.96),
        )
        posted = await _post(stack, _envelope("call-9", "native", call, customer_id=customer_id))
        assert (posted["customer_id"], posted["link_level"]) == (customer_id, "verified")
        await _settled(stack)
        token = jwt.encode(
            {
                "sub": "acct-ana",
                "exp": int(time.time()) + 600,
                "phone_number": CALLER,
                "phone_number_verified": True,
            },
            WEBCHAT_SECRET,
            algorithm="HS256",
        )
        window = await (
            await stack.client.post(
                "/v1/context",
                json={
                    "channel": "webchat",
                    "external_id": "visitor-ana-0001",
                    "identity_token": token,
                    "message": "e o meu pedido?",
                },
                headers=AUTH,
            )
        ).json()
        assert window["customer_id"] == customer_id
        system = window["messages"][0]["content"]
        assert "[phone · transcript · confidence 0.62 · 2026-11-02]" in system
        # The call enters as its (extractive, tagged) summary, never as raw turns.
        turns = "\n".join(m["content"] for m in window["messages"][1:])
        assert "Central de atendimento" not in turns
        assert [m["role"] for m in window["messages"]][-1] == "user"
        assert "ana.souza@example.org" in system and "unconfirmed" in system

        # The same e-mail typed on WhatsApp confirms the fact.
        accepted = await stack.accept.accept(
            InboundMessage(
                channel="whatsapp",
                provider_message_id="SMconfirm",
                sender=f"whatsapp:{CALLER}",
                text="Confirmo: meu e-mail é ana.souza@example.org",
                received_at=utcnow(),
            )
        )
        async with stack.sessions()() as session:
            episode_id = (await session.get(Message, accepted.message_id)).episode_id  # type: ignore[union-attr]
        from gateway.memory.queue import CompactionJob

        await stack.app[MEMORY].handle(CompactionJob(customer_id, episode_id, "closed"))
        profile = await (
            await stack.client.get(f"/v1/operator/customers/{customer_id}", headers=AUTH)
        ).json()
        [email] = [f for f in profile["facts"] if f["key"] == "email"]
        assert email["confirmed"] is True


def _luhn_card(rng: random.Random) -> str:
    digits = [rng.randint(0, 9) for _ in range(15)]
    total = 0
    for index, digit in enumerate(reversed(digits)):
        if index % 2 == 0:
            digit *= 2
            digit -= 9 if digit > 9 else 0
        total += digit
    return "".join(map(str, digits)) + str((10 - total % 10) % 10)


def _spoken(card: str, style: int) -> str:
    words_pt = "zero um dois três quatro cinco seis sete oito nove".split()
    words_en = "zero one two three four five six seven eight nine".split()
    if style == 0:
        return card
    if style == 1:
        return " ".join(card[i : i + 4] for i in range(0, 16, 4))
    if style == 2:
        return " ".join(card)
    words = words_pt if style == 3 else words_en
    return " ".join(words[int(d)] for d in card)


async def test_card_numbers_never_reach_storage_window_or_logs(
    stack: Stack, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    rng = random.Random(2026)
    cards = [_luhn_card(rng) for _ in range(100)]
    for index in range(0, 100, 10):
        segments = [("agent", "Pode informar o cartão?", 0.9)]
        for offset, card in enumerate(cards[index : index + 10]):
            segments.append(("customer", f"o número é {_spoken(card, offset % 5)}", 0.8))
        await _post(stack, _envelope(f"cards-{index}", "native", _native(*segments), caller=CALLER))
    await _settled(stack)
    window = await (
        await stack.client.post(
            "/v1/context",
            json={"channel": "phone", "external_id": CALLER, "message": "qual o número do cartão?"},
            headers=AUTH,
        )
    ).json()
    async with stack.sessions()() as session:
        rows = list(await session.scalars(select(Message)))
    stored = json.dumps([[r.text, r.words, r.extra] for r in rows], ensure_ascii=False).replace(
        " ", ""
    )
    shown = json.dumps(window, ensure_ascii=False).replace(" ", "")
    logs = caplog.text.replace(" ", "")
    for card in cards:
        assert card not in stored
        assert card not in shown
        assert card not in logs
    assert "[cardnumberredacted]" in stored


# A number a family shares; Ana also writes from her own WhatsApp.
ANA = "+5521998765432"
EARLIER_CALL = _native(
    ("agent", "Central, bom dia", 0.97),
    ("customer", "Quero cancelar a assinatura da academia", 0.9),
)
ANAS_CALL = _native(
    ("agent", "Central, boa tarde", 0.97),
    ("customer", "O pedido 4471 ainda não chegou", 0.62),
)


async def _whatsapp_customer(stack: Stack, number: str) -> str:
    body = await post_context(
        stack.client, AUTH, channel="whatsapp", external_id=number, message="oi"
    )
    return str(body["customer_id"])


async def _get(stack: Stack, path: str) -> dict[str, Any]:
    response = await stack.client.get(path, headers=AUTH)
    assert response.status == 200, await response.text()
    result: dict[str, Any] = await response.json()
    return result


async def _identities(stack: Stack, customer_id: str) -> set[str]:
    profile = await _get(stack, f"/v1/operator/customers/{customer_id}")
    return {i["external_id"] for i in profile["identities"]}


async def test_the_customer_the_call_center_names_gets_the_call(stack: Stack) -> None:
    ana = await _whatsapp_customer(stack, ANA)
    earlier = await _post(stack, _envelope("call-earlier", "native", EARLIER_CALL))
    assert earlier["customer_id"] != ana and earlier["link_level"] == "inferred"
    named = await _post(stack, _envelope("call-ana", "native", ANAS_CALL, customer_id=ana))
    assert (named["customer_id"], named["link_level"]) == (ana, "verified")
    async with stack.sessions()() as session:
        episode = await session.get(Episode, named["episode_id"])
    assert episode is not None and episode.customer_id == ana
    await _settled(stack)

    # Ana's later windows, on another channel, carry the call tagged like any call.
    window = await post_context(
        stack.client, AUTH, channel="whatsapp", external_id=ANA, message="e o meu pedido?"
    )
    assert window["customer_id"] == ana
    messages = window["messages"]
    assert isinstance(messages, list)
    system = messages[0]["content"]
    assert "[phone · transcript · confidence 0.62 · 2026-11-02]" in system
    assert "4471" in system
    # The earlier call from the shared number stays with its own customer until an operator says.
    assert "academia" not in json.dumps(window, ensure_ascii=False)
    assert await _identities(stack, ana) == {f"whatsapp:{ANA}", "phone:call:call-ana"}

    [link] = (await _get(stack, "/v1/operator/pending-links"))["pending_links"]
    assert (link["target_customer_id"], link["reason"]) == (ana, "named_by_call_center")
    assert link["identifier"] == {"kind": "phone", "value": CALLER}
    confirmed = await stack.client.post(
        f"/v1/operator/pending-links/{link['id']}/confirm",
        json={"reason": "Ana says the earlier call was hers", "actor": "ana.ops"},
        headers=AUTH,
    )
    assert confirmed.status == 200, await confirmed.text()
    assert await _identities(stack, ana) == {
        f"whatsapp:{ANA}",
        "phone:call:call-ana",
        f"phone:{CALLER}",
    }
    assert await _identities(stack, earlier["customer_id"]) == set()


async def test_a_tenant_may_let_the_call_center_merge_the_caller_ids_customer(
    stack: Stack,
) -> None:
    async with stack.sessions().begin() as session:
        await tenants.save_tenant_settings(
            session, domain="default", settings={"call_center_customer": "merge"}
        )
    ana = await _whatsapp_customer(stack, ANA)
    earlier = await _post(stack, _envelope("call-earlier", "native", EARLIER_CALL))
    named = await _post(stack, _envelope("call-ana", "native", ANAS_CALL, customer_id=ana))
    assert (named["customer_id"], named["link_level"]) == (ana, "verified")
    assert await _identities(stack, ana) == {f"whatsapp:{ANA}", f"phone:{CALLER}"}
    assert await _identities(stack, earlier["customer_id"]) == set()
    assert (await _get(stack, "/v1/operator/pending-links"))["pending_links"] == []
    [merge] = (await _get(stack, f"/v1/operator/audit?subject_id={ana}&action=merge"))["audit"]
    assert merge["actor"] == "call-center"
    async with stack.sessions()() as session:
        calls = list(await session.scalars(select(Episode).where(Episode.channel == "phone")))
    assert {c.customer_id for c in calls} == {ana}


async def test_a_customer_id_that_names_no_customer_is_404(stack: Stack) -> None:
    body = _envelope("call-ghost", "native", ANAS_CALL, customer_id="0" * 32)
    response = await stack.client.post("/v1/transcripts", json=body, headers=AUTH)
    assert response.status == 404
    error = await response.json()
    assert error["error"] == "unknown_customer" and "0" * 32 in error["detail"]
    async with stack.sessions()() as session:
        assert list(await session.scalars(select(Episode))) == []


async def test_a_customer_id_merged_away_names_the_customer_it_became(stack: Stack) -> None:
    ana = await _whatsapp_customer(stack, ANA)
    old = await _whatsapp_customer(stack, "+5531998765432")
    merged = await stack.client.post(
        "/v1/operator/customers/merge",
        json={
            "source_customer_id": old,
            "target_customer_id": ana,
            "reason": "the same person",
            "actor": "ana.ops",
        },
        headers=AUTH,
    )
    assert merged.status == 200, await merged.text()
    named = await _post(stack, _envelope("call-ana", "native", ANAS_CALL, customer_id=old))
    assert (named["customer_id"], named["link_level"]) == (ana, "verified")


async def test_a_repost_that_would_move_a_call_to_another_customer_is_409(stack: Stack) -> None:
    ana = await _whatsapp_customer(stack, ANA)
    await _post(stack, _envelope("call-earlier", "native", EARLIER_CALL))
    await _post(stack, _envelope("call-ana", "native", ANAS_CALL, customer_id=ana))
    # Without the customer id the caller id would take the call back to the earlier customer.
    response = await stack.client.post(
        "/v1/transcripts", json=_envelope("call-ana", "native", EARLIER_CALL), headers=AUTH
    )
    assert response.status == 409
    assert (await response.json())["error"] == "call_on_another_customer"
    async with stack.sessions()() as session:
        episode = await session.scalar(
            select(Episode).where(Episode.external_ref == "call:call-ana")
        )
    assert episode is not None and (episode.customer_id, episode.version) == (ana, 1)
