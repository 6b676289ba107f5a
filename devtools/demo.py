"""`relaydesk demo`: a short multichannel story through the real HTTP endpoints, offline.

It starts the gateway in this process on the embedded defaults (an SQLite file, in-process
queue, offline model), then: a web chat visit with a signed identity token, a signed Twilio
WhatsApp webhook from the same person, and finally prints the unified profile and the window
Relaydesk would send the model, with its budget report (the window's cost beside the whole
history's, both numbers), and where to look next: the widget, the console and its first account.
"""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import httpx
import jwt
from aiohttp import web

from devtools.bench.harness import free_port
from devtools.twilio_webhook import WHATSAPP_PATH, inbound_text, signed_form
from gateway.app import create_app
from gateway.config import Settings
from gateway.http.access_log import ACCESS_LOGGER
from gateway.keys import MEMORY, SCHEDULER, SESSIONS
from gateway.memory.queue import CompactionJob
from gateway.storage.repositories import episodes

PHONE = "+5511998765432"
API_KEY = "demo-api-key"
WEBCHAT_SECRET = "demo-webchat-secret-0123456789abcdef-0123"
TWILIO_TOKEN = "demo-twilio-auth-token"


@dataclass(frozen=True, slots=True)
class DemoResult:
    profile: dict[str, Any]
    context: dict[str, Any]


def _identity_token(sub: str) -> str:
    claims = {
        "sub": sub,
        "exp": int(time.time()) + 3600,
        "phone_number": PHONE,
        "phone_number_verified": True,
        "name": "Ana Souza",
    }
    return jwt.encode(claims, WEBCHAT_SECRET, algorithm="HS256")


def _signed_whatsapp(base_url: str, text: str) -> tuple[str, dict[str, str], bytes]:
    url = f"{base_url}{WHATSAPP_PATH}"
    sid = "SM" + uuid.uuid4().hex
    params = inbound_text(sid, PHONE, text, account="AC" + "0" * 32, profile_name="Ana")
    return (url, *signed_form(url, params, TWILIO_TOKEN))


async def run_demo(workdir: Path, out: TextIO) -> DemoResult:
    workdir.mkdir(parents=True, exist_ok=True)
    database = workdir / "relaydesk-demo.db"
    database.unlink(missing_ok=True)
    runner: web.AppRunner | None = None
    try:
        site_port = free_port()
        base_url = f"http://127.0.0.1:{site_port}"
        settings = Settings(
            RELAYDESK_DATABASE_URL=f"sqlite+aiosqlite:///{database}",
            RELAYDESK_API_KEY=API_KEY,
            RELAYDESK_WEBCHAT_SECRET=WEBCHAT_SECRET,
            RELAYDESK_PUBLIC_URL=base_url,
            TWILIO_AUTH_TOKEN=TWILIO_TOKEN,
        )
        app = create_app(settings)
        runner = web.AppRunner(app, access_log=None)
        await runner.setup()
        await web.TCPSite(runner, "127.0.0.1", site_port).start()
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as http:
            return await _story(http, app, base_url, out)
    finally:
        if runner is not None:
            await runner.cleanup()


async def _story(
    http: httpx.AsyncClient, app: web.Application, base_url: str, out: TextIO
) -> DemoResult:
    auth = {"Authorization": f"Bearer {API_KEY}"}
    say = _printer(out)
    say("1. Web chat: Ana opens the widget on the store's site, logged in (identity token).")
    visitor = (await http.post("/webchat/visitors")).json()["visitor_id"]
    posted = await http.post(
        "/webchat/messages",
        json={
            "visitor_id": visitor,
            "client_message_id": "w1",
            "text": "Olá! Meu pedido PED-4471 ainda não chegou. Meu e-mail é ana@example.org",
        },
        headers={"Authorization": f"Bearer {_identity_token('acct-ana')}"},
    )
    posted.raise_for_status()
    await app[SCHEDULER].idle()
    thread = (
        await http.get(
            "/webchat/messages",
            params={"visitor_id": visitor},
            headers={"Authorization": f"Bearer {_identity_token('acct-ana')}"},
        )
    ).json()
    for message in thread["messages"]:
        say(f"   {message['role']:>9}: {message['text']}")

    say("2. WhatsApp: the same person writes from her phone (signed Twilio webhook).")
    url, headers, body = _signed_whatsapp(base_url, "Oi, é a Ana de novo. Alguma novidade?")
    webhook = await http.post(url, content=body, headers=headers)
    say(f"   webhook answered {webhook.status_code} (stored before the reply is generated)")
    webhook.raise_for_status()
    await app[SCHEDULER].idle()

    customer_id = await _customer_of(http, auth)

    say("3. Phone: the call-center pipeline posts a finished call (noisy transcript).")
    call = await http.post(
        "/v1/transcripts",
        json={
            "call_id": "demo-call-1",
            "caller": PHONE,
            "customer_id": customer_id,
            "started_at": "2026-11-02T14:00:00Z",
            "format": "native",
            "customer_speaker": None,
            "transcript": {
                "segments": [
                    _segment("agent", "Central de atendimento, boa tarde.", 0.97, 0),
                    _segment("customer", "Oi, o pedido 4471 ainda não chegou.", 0.62, 4),
                    _segment("agent", "Vou verificar a entrega para você.", 0.95, 9),
                ]
            },
        },
        headers=auth,
    )
    call.raise_for_status()
    stored = call.json()
    say(
        f"   transcript stored: {stored['messages']} turns, link {stored['link_level']}, "
        f"customer confidence {stored['customer_confidence']:.2f}"
    )
    # The web chat visit is over: its episode gets its final summary in the background.
    async with app[SESSIONS]() as session:
        visits = [
            e for e in await episodes.list_episodes(session, customer_id) if e.channel == "webchat"
        ]
    for visit in visits:
        await app[MEMORY].handle(CompactionJob(customer_id, visit.id, "closed"))
    await app[MEMORY].queue.drained()  # type: ignore[attr-defined]

    context = (
        await http.post(
            "/v1/context",
            json={
                "channel": "whatsapp",
                "external_id": PHONE,
                "message": "E o meu pedido PED-4471?",
            },
            headers=auth,
        )
    ).json()
    profile = (await http.get(f"/v1/operator/customers/{customer_id}", headers=auth)).json()

    say("4. One customer across channels:")
    say(f"   customer {customer_id}")
    for identity in profile["identities"]:
        say(
            f"   - {identity['external_id']:<28} {identity['link_level']:<9} "
            f"{identity['evidence'].get('description', '')}"
        )
    say("5. The window Relaydesk would send the model for a new WhatsApp message:")
    for message in context["messages"]:
        say(f"   [{message['role']}]")
        for line in message["content"].splitlines():
            say(f"     {line}")
    report = context["report"]
    say("6. Budget report:")
    say(
        f"   window {report['window']} = input {report['input_budget']} "
        f"+ reserve {report['output_reserve']} + margin {report['protocol_margin']}"
    )
    for item in report["slices"]:
        say(f"   {item['name']:<16} budget {item['budget']:>5}  used {item['used']:>5}")
    for line in window_against_history(report):
        say(f"   {line}")
    say(
        "   report as JSON: "
        + json.dumps(
            {
                "estimated_tokens": report["estimated_tokens"],
                "full_history_tokens": report["full_history_tokens"],
                "savings": round(report["savings"], 2),
                "dropped": report["dropped"],
                "prefix_sha256": report["prefix_sha256"][:16] + "…",
            },
            ensure_ascii=False,
        )
    )
    for line in NEXT_STEPS:
        say(line)
    return DemoResult(profile=profile, context=context)


NEXT_STEPS = (
    "7. Where to look next (the demo's own server has stopped):",
    "   make run                               the gateway on http://127.0.0.1:8080",
    "   http://127.0.0.1:8080/chat             the web chat widget: write as a customer",
    "   relaydesk operator add NAME --admin    the first operator account (asks for a password)",
    "   http://127.0.0.1:8080/console          the operator console: sign in with that account",
    "   docs/index.md                          the guides: connecting WhatsApp, Telegram, calls",
)


def window_against_history(report: dict[str, Any]) -> tuple[str, ...]:
    """The window's cost beside the whole history's, both with the same instruction and
    state, said plainly: on a short history the window (which adds the facts and the tagged
    summaries) can cost more than sending everything, and then nothing is saved."""
    window = int(report["estimated_tokens"])
    history = int(report["full_history_tokens"])
    budget = int(report["input_budget"])
    both = f"window {window} tokens, whole history {history} tokens (same instruction and state)"
    if window < history:
        return (both, f"saved: {1 - window / history:.0%} of the whole history's tokens")
    return (
        both,
        "nothing saved: a history this short fits whole, and the window adds the facts and",
        "the tagged summaries of other episodes. The window never grows past its input budget",
        f"({budget} tokens), while the whole history grows with every message.",
    )


def _segment(speaker: str, text: str, confidence: float, start: float) -> dict[str, Any]:
    words = text.split()
    return {
        "speaker": speaker,
        "text": text,
        "start": start,
        "end": start + len(words) * 0.4,
        "confidence": confidence,
        "words": [
            {
                "text": word,
                # The order number was hard to hear on the line.
                "confidence": 0.41 if word.strip(".,").isdigit() else max(confidence, 0.9),
                "start": start + i * 0.4,
                "end": start + (i + 1) * 0.4,
            }
            for i, word in enumerate(words)
        ],
    }


async def _customer_of(http: httpx.AsyncClient, auth: dict[str, str]) -> str:
    found = await http.post(
        "/v1/context",
        json={"channel": "whatsapp", "external_id": PHONE, "message": "oi"},
        headers=auth,
    )
    found.raise_for_status()
    return str(found.json()["customer_id"])


def _printer(out: TextIO) -> Any:
    def say(line: str) -> None:
        print(line, file=out, flush=True)

    return say


def main(workdir: Path, out: TextIO) -> int:
    # The story's own lines say what each request did; an access line per request would bury them.
    logging.getLogger(ACCESS_LOGGER).setLevel(logging.WARNING)
    asyncio.run(run_demo(workdir, out))
    return 0
