"""What the operator front ends share for a customer's data rights: the export's default
reason and the work an erasure does after its commit (Redis keys, every process's caches)."""

from __future__ import annotations

from aiohttp import web

from gateway.customers.erasure import AfterCommit
from gateway.keys import FORGETTING, REDIS, SETTINGS

DEFAULT_EXPORT_REASON = "data subject access request"


def after_commit(app: web.Application) -> AfterCommit:
    settings = app[SETTINGS]
    return AfterCommit(
        app.get(REDIS),
        app[FORGETTING],
        settings.compaction_stream,
        tombstone_days=settings.erasure_tombstone_days,
    )
