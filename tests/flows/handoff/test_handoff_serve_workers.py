"""Human handoff through a real `relaydesk serve --workers 2 --background 2` on PostgreSQL and
Redis: signed WhatsApp webhooks and the operator API over HTTP to its port, its replies sent
by the real twilio client to a local Twilio, the offline model.

Every step may land on another process (two gateways acknowledge and answer the API, two
background processes store and answer), so what one process decides — the conversation is
held, the operator's message is to be sent, it was handed back — has to hold for all of them."""

from __future__ import annotations

import asyncio
import subprocess
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncSession, async_sessionmaker, create_async_engine
from sqlalchemy.pool import NullPool

from devtools.bench.harness import serving
from devtools.twilio_webhook import BOT, WHATSAPP_PATH, inbound_text, signed_form
from gateway.storage.models import Message, TurnRow
from tests.support.databases import (
    REDIS_URL,
    create_database,
    drop_database,
    require_postgres_and_redis,
)
from tests.support.processes import COMMAND, clean_env, free_port
from tests.support.twilio_server import FakeTwilio

# Serial: `relaydesk serve --workers 2 --background 2`: four processes.
pytestmark = pytest.mark.serial

ACCOUNT = "AC" + "b" * 32
TOKEN = "twilio-auth-token-for-tests"
API_KEY = "serve-handoff-api-key"
AUTH = {"Authorization": f"Bearer {API_KEY}"}
NUMBER = "+5511987654321"
BASE = "/v1/operator/conversations"
DEADLINE_S = 20.0
OPERATOR_TEXT = "Oi, aqui é a Alice"


@dataclass
class Server:
    """The running server's root URL (also the public URL its webhooks are signed for), an
    HTTP client, the local Twilio and sessions on the server's database."""

    root: str
    http: aiohttp.ClientSession
    twilio: FakeTwilio
    sessions: async_sessionmaker[AsyncSession]

    async def webhook(self, text: str) -> None:
        """One signed webhook from the customer, acknowledged (not yet answered)."""
        params = inbound_text(
            f"SM{uuid.uuid4().hex}", f"whatsapp:{NUMBER}", text, account=ACCOUNT, profile_name="Ana"
        )
        headers, body = signed_form(self.root + WHATSAPP_PATH, params, TOKEN)
        async with self.http.post(self.root + WHATSAPP_PATH, data=body, headers=headers) as got:
            assert got.status == 200, await got.text()

    async def api(self, path: str, **body: Any) -> tuple[int, Any]:
        """POST ``body`` (or GET without one) to the operator API; its status and JSON."""
        url = self.root + path
        call = (
            self.http.post(url, json=body, headers=AUTH)
            if body
            else self.http.get(url, headers=AUTH)
        )
        async with call as response:
            return response.status, await response.json()

    async def turn_of(self, text: str) -> TurnRow | None:
        """The turn of the customer's stored message ``text``, once it is stored."""
        async with self.sessions() as session:
            return await session.scalar(
                select(TurnRow)
                .join(Message, Message.id == TurnRow.inbound_message_id)
                .where(Message.text == text, Message.role == "user")
            )

    async def settled_turn(self, text: str) -> TurnRow:
        """The turn of ``text`` once it is no longer pending."""
        settled: list[TurnRow] = []

        async def done() -> bool:
            turn = await self.turn_of(text)
            if turn is not None and turn.status != "pending":
                settled.append(turn)
            return bool(settled)

        await until(done)
        return settled[0]

    async def sent(self, count: int) -> dict[str, str]:
        """Wait until the local Twilio accepted ``count`` messages in all; the last one."""
        await until(lambda: len(self.twilio.created) >= count)
        assert len(self.twilio.created) == count, self.twilio.created
        return self.twilio.created[-1]


async def until(condition: Callable[[], bool | Awaitable[bool]]) -> None:
    """Wait until ``condition`` holds (a TimeoutError after `DEADLINE_S`)."""
    async with asyncio.timeout(DEADLINE_S):
        while True:
            outcome = condition()
            if outcome if isinstance(outcome, bool) else await outcome:
                return
            await asyncio.sleep(0.05)


@asynccontextmanager
async def running_server(tmp_path: Path) -> AsyncIterator[Server]:
    """Migrate a fresh PostgreSQL database and serve it with two gateway and two background
    processes; everything is stopped, dropped and closed on leaving, a failure included."""
    await require_postgres_and_redis()
    twilio = FakeTwilio()
    async with twilio.serving() as twilio_api:
        url = await create_database()
        engine = create_async_engine(url, poolclass=NullPool)
        try:
            port = free_port()
            root = f"http://127.0.0.1:{port}"
            env = clean_env(
                RELAYDESK_DATABASE_URL=url,
                RELAYDESK_REDIS_URL=REDIS_URL,
                RELAYDESK_PUBLIC_URL=root,
                RELAYDESK_API_KEY=API_KEY,
                RELAYDESK_MODEL="offline",
                RELAYDESK_RUN_COMPACTION="false",
                RELAYDESK_LOG_LEVEL="WARNING",
                TWILIO_ACCOUNT_SID=ACCOUNT,
                TWILIO_AUTH_TOKEN=TOKEN,
                TWILIO_WHATSAPP_FROM=BOT,
                TWILIO_API_BASE=twilio_api,
            )
            migrated = await asyncio.to_thread(
                subprocess.run,
                [*COMMAND, "migrate"],
                env=env,
                cwd=tmp_path,
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert migrated.returncode == 0, migrated.stderr
            serve = [*COMMAND, "serve", "--workers", "2", "--background", "2", "--port", str(port)]
            async with serving([serve], env, tmp_path, "serve.log", port, "/healthz"):
                async with aiohttp.ClientSession(
                    timeout=aiohttp.ClientTimeout(total=DEADLINE_S)
                ) as http:
                    try:
                        yield Server(root, http, twilio, async_sessionmaker(engine))
                    except BaseException:
                        # What the processes said, beside the failure (pytest shows stdout).
                        print((tmp_path / "serve.log").read_text()[-4000:])
                        raise
        finally:
            await engine.dispose()
            await drop_database(url)


async def test_an_operator_holds_writes_and_hands_back_through_serve_workers(
    tmp_path: Path,
) -> None:
    async with running_server(tmp_path) as server:
        await server.webhook("Olá, meu pedido atrasou")
        first = await server.sent(1)  # the bot answered
        assert first["To"] == f"whatsapp:{NUMBER}"
        assert (await server.settled_turn("Olá, meu pedido atrasou")).status == "done"

        status, held = await server.api(
            f"{BASE}/handoff",
            channel="whatsapp",
            external_id=NUMBER,
            reason="a delayed order",
            actor="alice",
        )
        assert status == 200, held
        assert (held["owner"], held["held_by"]) == ("human", "alice")
        conversation = held["id"]

        # Held: the message is stored, its turn is a person's, and nothing is sent.
        await server.webhook("Alguém aí?")
        turn = await server.settled_turn("Alguém aí?")
        assert (turn.status, turn.reply_message_id) == ("human", None)
        assert len(server.twilio.created) == 1
        status, detail = await server.api(f"{BASE}/{conversation}")
        assert status == 200
        assert ("user", "customer", "Alguém aí?") in [
            (m["role"], m["author"], m["text"]) for m in detail["messages"]
        ]

        # The operator's message reaches the customer through Twilio.
        status, written = await server.api(
            f"{BASE}/{conversation}/messages", text=OPERATOR_TEXT, actor="alice"
        )
        assert status == 202, written
        out = await server.sent(2)
        assert (out["Body"], out["To"]) == (OPERATOR_TEXT, f"whatsapp:{NUMBER}")

        status, back = await server.api(
            f"{BASE}/{conversation}/handback", actor="alice", reason="done"
        )
        assert status == 200, back
        assert (back["owner"], back["held_by"]) == ("bot", None)

        # The bot answers again, and its window shows the operator's words as a person's.
        await server.webhook("Obrigado!")
        await server.sent(3)
        assert (await server.settled_turn("Obrigado!")).status == "done"
        async with server.http.post(
            server.root + "/v1/context",
            json={"channel": "whatsapp", "external_id": NUMBER, "message": "Mais uma coisa"},
            headers=AUTH,
        ) as response:
            assert response.status == 200, await response.text()
            window = (await response.json())["messages"]
        tagged = [m for m in window if "[human agent alice]" in m["content"]]
        assert tagged and tagged[0]["role"] == "assistant", window
        assert tagged[0]["content"] == f"[human agent alice]\n{OPERATOR_TEXT}"
