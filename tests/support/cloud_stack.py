"""A whole gateway with the WhatsApp Cloud API channel on, its Graph API a local server, and
customer messages posted to it as Meta signs them (`X-Hub-Signature-256`)."""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from tests.support.fixtures import FIXTURES
from tests.support.graph_server import ACCESS_TOKEN, PHONE_NUMBER_ID, LocalGraph
from tests.support.stack import Stack, running_stack

PATH = "/webhooks/whatsapp/cloud"
SECRET = "app-secret-for-tests"
WA_ID = "5511999990000"
_TEXT: dict[str, Any] = json.loads((FIXTURES / "whatsapp_cloud/pywa_message.json").read_text())[
    "text"
]


@asynccontextmanager
async def cloud_stack(
    tmp_path: Path, backend: str = "embedded", **settings: object
) -> AsyncIterator[tuple[Stack, LocalGraph]]:
    graph = LocalGraph()
    async with (
        graph.serving() as base,
        running_stack(
            backend,
            tmp_path,
            WHATSAPP_CLOUD_API_BASE=base,
            WHATSAPP_CLOUD_VERIFY_TOKEN="verify-token-for-tests",
            WHATSAPP_CLOUD_APP_SECRET=SECRET,
            WHATSAPP_CLOUD_ACCESS_TOKEN=ACCESS_TOKEN,
            WHATSAPP_CLOUD_PHONE_NUMBER_ID=PHONE_NUMBER_ID,
            **settings,
        ) as stack,
    ):
        yield stack, graph


def cloud_text(text: str, *, wa_id: str = WA_ID) -> dict[str, Any]:
    """A recorded text notification to our business number, from `wa_id`, a new wamid."""
    body = json.loads(json.dumps(_TEXT))
    value = body["entry"][0]["changes"][0]["value"]
    value["metadata"]["phone_number_id"] = PHONE_NUMBER_ID
    for contact in value.get("contacts", []):
        contact["wa_id"] = wa_id
    for item in value.get("messages", []):
        item.update({"from": wa_id, "id": f"wamid.{uuid.uuid4().hex}", "text": {"body": text}})
    return body


async def post_cloud(stack: Stack, body: dict[str, Any]) -> int:
    """Post `body` signed with the app secret; the status answered."""
    raw = json.dumps(body).encode()
    signature = "sha256=" + hmac.new(SECRET.encode(), raw, hashlib.sha256).hexdigest()
    response = await stack.client.post(
        PATH,
        data=raw,
        headers={"Content-Type": "application/json", "X-Hub-Signature-256": signature},
    )
    await response.read()
    return response.status
