"""The built-in handoff message speaks the customer's language: an English web chat visitor
asking for a person is told in English only, a Spanish one in Spanish."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import select

from gateway.storage.models import Message
from gateway.turns.answer.canned_texts import HANDOFF_MESSAGES
from tests.support.stack import Stack, running_stack
from tests.support.webchat import signed_visitor


async def _told(stack: Stack, *texts: str) -> str:
    visitor = await signed_visitor(stack.client)
    for number, text in enumerate(texts):
        response = await stack.client.post(
            "/webchat/messages",
            json={"visitor_id": visitor, "text": text, "client_message_id": f"m{number}"},
        )
        assert response.status == 202, await response.text()
        await stack.idle()
    async with stack.sessions()() as session:
        reply = await session.scalar(
            select(Message.text).where(Message.role == "assistant").order_by(Message.id.desc())
        )
    assert reply is not None
    return reply


@pytest.mark.parametrize(
    ("texts", "language"),
    [
        (("I want to talk to a person",), "en"),
        (("Hola, quiero hablar con una persona",), "es"),
        (("Where is my order? It has not arrived", "human"), "en"),
    ],
)
async def test_the_handoff_message_is_in_the_customers_language(
    tmp_path: Path, texts: tuple[str, ...], language: str
) -> None:
    async with running_stack("embedded", tmp_path) as stack:
        told = await _told(stack, *texts)
    assert told == HANDOFF_MESSAGES[language]  # type: ignore[index]
