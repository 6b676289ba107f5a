"""A private PostgreSQL cluster a test may stop and restart without touching the shared server
(`devtools.private_servers.PrivatePostgres`); when the binaries are missing the test is
skipped with the reason (a failure under RELAYDESK_TEST_REQUIRE_SERVICES=1)."""

from __future__ import annotations

from devtools import private_servers
from tests.support.databases import unavailable

__all__ = ["PrivatePostgres"]


class PrivatePostgres(private_servers.PrivatePostgres):
    def __enter__(self) -> PrivatePostgres:
        why = private_servers.postgres_missing()
        if why is not None:
            unavailable("a private PostgreSQL cluster", why)
        super().__enter__()
        return self
