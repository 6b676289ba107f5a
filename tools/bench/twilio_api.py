"""The Twilio Messages API answer the benchmarks' local Twilio gives to a send."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from aiohttp import web


def created_message(account: str, form: Mapping[str, Any]) -> web.Response:
    """201 with the Message resource Twilio returns for `POST …/Messages.json`."""
    sid = "SM" + uuid.uuid4().hex
    return web.json_response(
        {
            "sid": sid,
            "account_sid": account,
            "to": form.get("To"),
            "from": form.get("From"),
            "body": form.get("Body"),
            "status": "queued",
            "num_segments": "1",
            "direction": "outbound-api",
            "api_version": "2010-04-01",
            "uri": f"/2010-04-01/Accounts/{account}/Messages/{sid}.json",
        },
        status=201,
    )
