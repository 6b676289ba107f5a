"""A whole gateway that a WhatsApp customer writes to through signed Twilio webhooks, its replies
received by a local Twilio: for tests that follow a customer's messages end to end."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import select

from gateway.storage.models import Message
from tests.support.signed_twilio import inbound_params, post_signed
from tests.support.stack import Stack, running_stack
from tests.support.twilio_server import FakeTwilio

ACCOUNT = "AC" + "a" * 32
TOKEN = "twilio-auth-token-for-tests"
PUBLIC_URL = "https://relay.example.org"

__all__ = ["ACCOUNT", "PUBLIC_URL", "TOKEN", "WhatsAppStack", "until", "whatsapp_stack"]


@dataclass
class WhatsAppStack:
    stack: Stack
    twilio: FakeTwilio  # `created`: every reply sent, in order
    public_url: str = PUBLIC_URL  # what Twilio signs its webhooks for

    async def post(self, number: str, text: str) -> None:
        """One signed webhook from ``whatsapp:<number>``, acknowledged (not yet answered)."""
        sid = f"SM{uuid.uuid4().hex}"
        params = inbound_params(sid, f"whatsapp:{number}", text, account=ACCOUNT)
        response = await post_signed(
            self.stack.client, params, token=TOKEN, public_url=self.public_url
        )
        assert response.status == 200

    async def say(self, number: str, text: str) -> None:
        """Post ``text`` and wait until it is stored and answered."""
        sent = len(self.twilio.created)
        await self.post(number, text)
        await self.stack.idle()
        assert len(self.twilio.created) == sent + 1  # answered

    async def message_id(self, text: str) -> int:
        """The id of the stored message whose text is ``text``."""
        async with self.stack.sessions()() as session:
            found = await session.scalar(select(Message.id).where(Message.text == text))
        assert found is not None, f"no message {text!r}"
        return int(found)


@asynccontextmanager
async def whatsapp_stack(
    tmp_path: Path, backend: str = "embedded", *, public_url: str = PUBLIC_URL, **settings: object
) -> AsyncIterator[WhatsAppStack]:
    """`running_stack` with the Twilio WhatsApp channel on (``settings`` add to it). An
    ``http://`` ``public_url`` lets a test client keep the console's cookies (an ``https://``
    one makes them secure-only)."""
    twilio = FakeTwilio()
    async with twilio.serving() as api_base:
        async with running_stack(
            backend,
            tmp_path,
            RELAYDESK_PUBLIC_URL=public_url,
            TWILIO_ACCOUNT_SID=ACCOUNT,
            TWILIO_AUTH_TOKEN=TOKEN,
            TWILIO_WHATSAPP_FROM="whatsapp:+14155238886",
            TWILIO_API_BASE=api_base,
            **settings,
        ) as stack:
            yield WhatsAppStack(stack, twilio, public_url)


async def until(condition: Callable[[], bool | Awaitable[bool]], timeout: float = 30.0) -> None:
    """Wait until ``condition`` holds (a TimeoutError after ``timeout`` seconds): a generous
    deadline, not a timing assertion (the parallel test layer shares two cores)."""
    async with asyncio.timeout(timeout):
        while True:
            outcome = condition()
            if outcome if isinstance(outcome, bool) else await outcome:
                return
            await asyncio.sleep(0.02)
