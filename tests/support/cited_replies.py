"""A tenant's knowledge documents added through the API, and a model that cites them by the
numbers its window gave them (`[k1]`), as a real model told to cite does."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from aiohttp.test_utils import TestClient

from tests.support.app_settings import AUTH
from tests.support.openai_server import Call, FakeOpenAI


async def add_public_document(
    client: TestClient,  # type: ignore[type-arg]
    title: str,
    content: str,
    url: str | None = None,
) -> dict[str, Any]:
    """A document anyone may be told (an anonymous web chat visitor included)."""
    body: dict[str, object] = {
        "content": content,
        "format": "text",
        "title": title,
        "audience": "public",
    }
    if url is not None:
        body["url"] = url
    response = await client.post("/v1/knowledge/documents", json=body, headers=AUTH)
    assert response.status == 201, await response.text()
    added: dict[str, Any] = await response.json()
    return added


def knowledge_number(call: Call, title: str) -> int | None:
    """The number the window's knowledge line of the document titled `title` carries."""
    system = "\n".join(m["content"] for m in call.messages if m["role"] == "system")
    found = re.search(rf"\[k(\d+)\] {re.escape(title)} ", system)
    return int(found.group(1)) if found else None


def citing_model(sentences: Sequence[tuple[str, str]]) -> FakeOpenAI:
    """A model answering with each sentence followed by the marker of the document titled
    beside it (`(sentence, title)`) that its window carried; a call whose window carried none
    of them (a memory call) gets the usual answer."""

    def reply(call: Call) -> str | None:
        cited = [
            f"{sentence} [k{number}]."
            for sentence, title in sentences
            if (number := knowledge_number(call, title)) is not None
        ]
        return " ".join(cited) or None

    return FakeOpenAI(reply_for=reply)
