"""A local server speaking Twilio's Messages API (the part `messages.create` uses)."""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from aiohttp import web


@dataclass
class FakeTwilio:
    """Records every create; `fail_next` lists HTTP statuses to answer first (e.g. [429])."""

    created: list[dict[str, str]] = field(default_factory=list)
    attempts: int = 0
    fail_next: list[int] = field(default_factory=list)

    def app(self) -> web.Application:
        app = web.Application()
        app.router.add_post("/2010-04-01/Accounts/{sid}/Messages.json", self._create)
        return app

    async def _create(self, request: web.Request) -> web.Response:
        self.attempts += 1
        form = {
            key: value for key, value in (await request.post()).items() if isinstance(value, str)
        }
        if self.fail_next:
            status = self.fail_next.pop(0)
            return web.json_response(
                {"code": 20429, "message": "Too Many Requests", "status": status}, status=status
            )
        self.created.append(form)
        sid = "SM" + uuid.uuid4().hex
        return web.json_response(
            {
                "sid": sid,
                "account_sid": request.match_info["sid"],
                "to": form.get("To"),
                "from": form.get("From"),
                "body": form.get("Body"),
                "status": "queued",
                "num_segments": "1",
                "direction": "outbound-api",
                "api_version": "2010-04-01",
                "uri": f"/2010-04-01/Accounts/{request.match_info['sid']}/Messages/{sid}.json",
            },
            status=201,
        )
