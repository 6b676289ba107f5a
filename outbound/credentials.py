"""A provider's credentials and the hosts they may be sent to: the provider's own, nowhere else
(not to a host a URL or a redirect names)."""

from __future__ import annotations

import base64
from dataclasses import dataclass, field

from context.host_patterns import any_host_matches


@dataclass(frozen=True, slots=True)
class HostCredentials:
    """An `Authorization` value and the host patterns (`context.host_patterns`) it goes to."""

    authorization: str = field(repr=False)
    hosts: tuple[str, ...]

    @classmethod
    def basic(cls, username: str, password: str, hosts: tuple[str, ...]) -> HostCredentials:
        token = base64.b64encode(f"{username}:{password}".encode()).decode("ascii")
        return cls(f"Basic {token}", hosts)

    @classmethod
    def bearer(cls, token: str, hosts: tuple[str, ...]) -> HostCredentials:
        return cls(f"Bearer {token}", hosts)

    def headers_for(self, host: str) -> dict[str, str]:
        """The header for a request to `host`: none unless it is one of ours."""
        if any_host_matches(self.hosts, host):
            return {"Authorization": self.authorization}
        return {}
